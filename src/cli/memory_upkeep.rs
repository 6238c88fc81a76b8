//! The store's upkeep commands of `lkjagent memory` (the tagged-memory design's
//! `memory_cleanup_expired`, `memory_add_tags`/`memory_remove_tags`, `memory_delete_entry`,
//! `memory_link_entries`/`memory_get_related_entries`): `cleanup`, `retag`, `delete`,
//! `archive`, `unarchive`, `restore`, `link`, `related`; and the cold store's part of `show`
//! and `search --cold`.
//!
//! Each change takes the data directory's lock first (refused while the agent runs, as
//! `import` is), opens the store as its writer (which repairs a torn tail and rolls back a
//! clean-up cut short, as a run would), and writes one batch with one sync. `--dry-run` and
//! `related` open nothing for writing: their files stay byte-identical.

use super::args::Args;
use super::util::{lock_data_dir, open_store_read_only, say, write_all, StoreRead, Time};
use crate::error::{Code, Result};
use crate::memory::key::{normalize, normalize_optional, Key};
use crate::memory::query::Results;
use crate::memory::store::cleanup::{Filter, Restored};
use crate::memory::store::cold;
use crate::memory::store::{Cleanup, Store, LOG_NAME};
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

/// Runs one of this file's subcommands; `None` when `sub` is not one of them.
pub fn exec(sub: &str, args: Args, data: &Path, out: &mut dyn Write) -> Option<Result<i32>> {
    Some(match sub {
        "cleanup" => cleanup(args, data, out),
        "retag" => retag(args, data, out),
        "delete" => delete(args, data, out),
        "archive" => archive(args, data, out, true),
        "unarchive" => archive(args, data, out, false),
        "restore" => restore(args, data, out),
        "link" => link(args, data, out),
        "related" => related(args, data, out),
        _ => return None,
    })
}

/// The writer's store, under the lock the caller holds.
fn open_writer(data: &Path) -> Result<Store> {
    if !data.join(LOG_NAME).exists() {
        bail!(NotFound, "no store yet in {} (the agent creates store.log)", data.display());
    }
    Store::open_with_capacity(data, super::util::store_capacity(data))
}

fn key_arg(args: &mut Args, command: &str) -> Result<Key> {
    match args.positional() {
        Some(k) => normalize(&k).map_err(|e| e.with_code(Code::Usage).context(format_args!("KEY"))),
        None => bail!(Usage, "'lkjagent memory {}' needs a KEY; see 'lkjagent memory --help'", command),
    }
}

fn cleanup(mut args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    let now = crate::clock::now_unix();
    let older = args.value("--older-than")?;
    let max_hits = args.value("--max-hits")?;
    let delete = args.flag("--delete");
    let dry = args.flag("--dry-run");
    args.finish("memory cleanup")?;
    let mut filter = Filter::default();
    if let Some(age) = older {
        filter.accessed_before = Some(parse_time(&age, now).map_err(|e| e.context(format_args!("--older-than")))?);
    }
    if let Some(n) = max_hits {
        filter.max_hits =
            Some(crate::bytes::parse_u64(&n).ok_or_else(|| err!(Usage, "--max-hits '{}' is not a number", n))?);
    }
    if filter == Filter::default() {
        bail!(
            Usage,
            "'lkjagent memory cleanup' needs --older-than AGE or --max-hits N (or both): it never takes everything"
        );
    }
    let (mode, to) = if delete { (Cleanup::Delete, "deleted") } else { (Cleanup::Cold, "moved to the cold store") };
    if dry {
        // Read-only: nothing is written, truncated or moved.
        let mut store = match open_store_read_only(data)? {
            StoreRead::Open(s) => s,
            StoreRead::Absent => {
                say(out, format_args!("no store yet in {}; nothing to clean up", data.display()))?;
                return Ok(super::EXIT_OK);
            }
            StoreRead::NotOpened { why, .. } => bail!(Io, "{}: not read: {}", data.join(LOG_NAME).display(), why),
        };
        let mut ids = Vec::new();
        let matched = store.cleanup_preview(&filter, &mut ids);
        for &id in &ids {
            let Some(info) = store.info(id) else { continue };
            say(out, format_args!("{}  hits {}  last used {}", info.key, info.hits, Time(info.accessed)))?;
        }
        if matched > ids.len() {
            say(out, format_args!("... and {} more", matched - ids.len()))?;
        }
        say(out, format_args!("dry run: {} entries would be {}; nothing was changed", matched, to))?;
        return Ok(super::EXIT_OK);
    }
    let _lock = lock_data_dir(data)?;
    let mut store = open_writer(data)?;
    let n = store.cleanup_where(&filter, mode)?;
    store.close_with_indexes()?;
    say(out, format_args!("{} entries {}", n, to))?;
    Ok(super::EXIT_OK)
}

fn retag(mut args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    let key = key_arg(&mut args, "retag")?;
    let add = args.value("--add")?;
    let remove = args.value("--remove")?;
    args.finish("memory retag")?;
    let tags = |v: Option<String>, name: &str| -> Result<Option<Key>> {
        match v {
            None => Ok(None),
            Some(v) => normalize_optional(&v).map_err(|e| e.with_code(Code::Usage).context(format_args!("{}", name))),
        }
    };
    let (add, remove) = (tags(add, "--add")?, tags(remove, "--remove")?);
    if add.is_none() && remove.is_none() {
        bail!(Usage, "'lkjagent memory retag KEY' needs --add a,b or --remove c (or both)");
    }
    let mut new_key = key;
    if let Some(a) = &add {
        new_key = new_key.union(a)?;
    }
    if let Some(r) = &remove {
        new_key = new_key.difference(r)?;
    }
    let _lock = lock_data_dir(data)?;
    let mut store = open_writer(data)?;
    let got = store.retag(&key, &new_key, crate::clock::now_unix())?;
    store.close_with_indexes()?;
    say(out, format_args!("{} -> {}", key, got))?;
    Ok(super::EXIT_OK)
}

fn delete(mut args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    let key = key_arg(&mut args, "delete")?;
    let yes = args.flag("--yes");
    args.finish("memory delete")?;
    if !yes {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            bail!(Usage, "'lkjagent memory delete {}' deletes for good: add --yes to confirm", key);
        }
        let _ = write!(std::io::stderr(), "delete \"{}\" from the store for good? [y/N] ", key);
        let mut line = String::new();
        stdin.lock().read_line(&mut line).map_err(|e| err!(Io, "reading the answer failed: {}", e))?;
        if !matches!(line.trim(), "y" | "Y" | "yes") {
            say(out, format_args!("not deleted"))?;
            return Ok(super::EXIT_OK);
        }
    }
    let _lock = lock_data_dir(data)?;
    let mut store = open_writer(data)?;
    let gone = store.delete(&key)?;
    store.close_with_indexes()?;
    match (gone.live, gone.cold) {
        (Some(_), 0) => say(out, format_args!("deleted {}", key))?,
        (Some(_), n) => say(out, format_args!("deleted {} (and {} older copies in the cold store)", key, n))?,
        (None, _) => say(out, format_args!("deleted {} from the cold store", key))?,
    }
    Ok(super::EXIT_OK)
}

fn archive(mut args: Args, data: &Path, out: &mut dyn Write, on: bool) -> Result<i32> {
    let command = if on { "archive" } else { "unarchive" };
    let key = key_arg(&mut args, command)?;
    args.finish(if on { "memory archive" } else { "memory unarchive" })?;
    let _lock = lock_data_dir(data)?;
    let mut store = open_writer(data)?;
    store.set_archived(&key, on, crate::clock::now_unix())?;
    store.close_with_indexes()?;
    say(out, format_args!("{} {}", if on { "archived" } else { "unarchived" }, key))?;
    Ok(super::EXIT_OK)
}

fn restore(mut args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    let key = key_arg(&mut args, "restore")?;
    args.finish("memory restore")?;
    let _lock = lock_data_dir(data)?;
    let mut store = open_writer(data)?;
    let restored = store.restore(&key)?;
    store.close_with_indexes()?;
    match restored {
        Restored::Back(_) => say(out, format_args!("restored {} from the cold store", key))?,
        Restored::LiveAlready { dropped } => say(
            out,
            format_args!(
                "{} is in the live store already, with a newer value than the cold store held; {} older cold {} dropped",
                key,
                dropped,
                if dropped == 1 { "copy" } else { "copies" }
            ),
        )?,
    }
    Ok(super::EXIT_OK)
}

fn link(mut args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    let a = key_arg(&mut args, "link")?;
    let b = key_arg(&mut args, "link")?;
    args.finish("memory link")?;
    let _lock = lock_data_dir(data)?;
    let mut store = open_writer(data)?;
    let find = |s: &Store, k: &Key| s.find(k).ok_or_else(|| err!(NotFound, "no store entry \"{}\"", k));
    let (ia, ib) = (find(&store, &a)?, find(&store, &b)?);
    store.link(ia, ib)?;
    store.close_with_indexes()?;
    say(out, format_args!("linked {} and {}", a, b))?;
    Ok(super::EXIT_OK)
}

fn related(mut args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    let key = key_arg(&mut args, "related")?;
    args.finish("memory related")?;
    let store = match open_store_read_only(data)? {
        StoreRead::Open(s) => s,
        StoreRead::Absent => bail!(NotFound, "no store yet in {}", data.display()),
        StoreRead::NotOpened { why, .. } => bail!(Io, "{}: not read: {}", data.join(LOG_NAME).display(), why),
    };
    let Some(id) = store.find(&key) else { bail!(NotFound, "no store entry \"{}\"", key) };
    let mut results = Results::with_capacity(crate::limits::STORE_QUERY_MAX_RESULTS);
    store.related(id, &mut results);
    if results.is_empty() {
        say(out, format_args!("no entries are related to {}", key))?;
    }
    for other in results.ids() {
        if let Some(k) = store.key(other) {
            say(out, format_args!("{}", k))?;
        }
    }
    Ok(super::EXIT_OK)
}

/// `memory show`'s last place: the newest copy of `key` in the cold store. Writes its value
/// and returns true when there is one.
pub fn show_cold(data: &Path, key: &Key, out: &mut dyn Write) -> Result<bool> {
    let Some((_, v)) = cold::newest(data, key)? else { return Ok(false) };
    write_all(out, &v)?;
    write_all(out, "\n")?;
    Ok(true)
}

/// A time for `--older-than`, `--created-after` and `--created-before`: a relative age
/// (`30d`, `12h`, `45m`, `90s`, `2w`: that long before `now`), a date (`2026-01-31`, midnight
/// UTC) or a date and time (`2026-01-31T08:00:00Z`), or Unix seconds (`@1767225600`).
pub fn parse_time(text: &str, now: u64) -> Result<u64> {
    let t = text.trim();
    if let Some(secs) = t.strip_prefix('@') {
        return crate::bytes::parse_u64(secs).ok_or_else(|| err!(Usage, "'{}' is not @ and Unix seconds", t));
    }
    let digits = t.get(..t.len().saturating_sub(1)).unwrap_or("");
    let age = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) || t.len() == 1;
    if let Some(unit) = t.chars().last().filter(|c| age && c.is_ascii_alphabetic()) {
        let scale = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3_600,
            'd' => 86_400,
            'w' => 7 * 86_400,
            _ => bail!(Usage, "'{}': an age ends in s, m, h, d or w (e.g. 30d)", t),
        };
        let n = t
            .get(..t.len().saturating_sub(1))
            .and_then(crate::bytes::parse_u64)
            .ok_or_else(|| err!(Usage, "'{}' is not an age such as 30d", t))?;
        return Ok(now.saturating_sub(n.saturating_mul(scale)));
    }
    crate::clock::parse_utc(t).ok_or_else(|| {
        err!(Usage, "'{}' is neither an age (30d, 12h) nor a date (2026-01-31 or 2026-01-31T08:00:00Z)", t)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn times_parse_as_ages_dates_and_seconds() {
        assert_eq!(parse_time("7d", 1_000_000).unwrap(), 1_000_000 - 7 * 86_400);
        assert_eq!(parse_time("12h", 100_000).unwrap(), 100_000 - 12 * 3_600);
        assert_eq!(parse_time("2026-01-01", 0).unwrap(), 1_767_225_600);
        assert_eq!(parse_time("2026-01-01T08:00:00Z", 0).unwrap(), 1_767_225_600 + 8 * 3_600);
        assert_eq!(parse_time("@42", 0).unwrap(), 42);
        assert_eq!(parse_time("1970-01-01", 0).unwrap(), 0);
        assert_eq!(crate::clock::Utc::from_unix(parse_time("2024-02-29", 0).unwrap()).day, 29);
        for bad in ["7x", "d", "2026-13-01", "yesterday", "2026-01-01T25:00"] {
            assert_eq!(parse_time(bad, 0).unwrap_err().code(), Code::Usage, "{bad}");
        }
    }
}
