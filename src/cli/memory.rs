//! `lkjagent memory <sub>`: look into and manage what the agent knows — the working memory of
//! `memory.json` and the tagged store (`store.log`).
//!
//! Reading subcommands (`list`, `show`, `query`, `search`, `stats`, `export`) change nothing in
//! the data directory: `memory.json` is decoded with the agent's own side-effect-free
//! `memory::file::decode_bytes` ([`read_memory`]), not loaded with `memory::file::load`, which
//! moves an unusable file aside and migrates era-B storage; and the
//! store is opened only when opening it writes nothing ([`open_store_read_only`]: the log
//! exists, starts with its header, ends with a whole record, and no compaction is under way).
//!
//! Writing subcommands (`import`, `compact`) take the data directory's lock ([`lock_data_dir`])
//! first, so that two writers never append to the same log with two different indexes. The
//! agent loop must hold the same lock while it runs for this to protect a running agent.
//!
//! `status` and `check` read `memory.json` through [`read_memory`] too; the other shared
//! helpers (opening the store read-only, the lock, output) are in `cli::util`.

use super::args::Args;
use super::util::{
    display_name, lock_data_dir, open_store_read_only, open_store_view, read_limited, say, write_all, write_error,
    StoreRead, Time,
};
// `send` takes these through here; they live in `util`.
use crate::error::{Code, Result};
use crate::json::{Document, Writer};
use crate::limits::{
    EXCHANGE_FILE_MAX_BYTES, MEMORY_FILE_MAX_BYTES, MEMORY_FILE_MAX_NODES, MEMORY_FILE_REPORT_MAX,
    STORE_QUERY_MAX_RESULTS, STORE_VALUE_MAX_BYTES,
};
use crate::memory::era_b::{self, Import, IoText};
use crate::memory::file::{self as memfile, MemoryFile, MEMORY_FILE};
use crate::memory::key::{normalize, normalize_optional, Key};
use crate::memory::query::EntryId;
use crate::memory::query::{Archived, Query, Results, Sort};
use crate::memory::store::recall::Ranked;
use crate::memory::store::vectors::By;
use crate::memory::store::{EntryInfo, Store, LOG_NAME};
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

const HELP: &str = "\
lkjagent memory: look into and manage the agent's memory

usage: lkjagent [--data DIR] memory <subcommand> [options]

subcommands:
  list                      working-memory entries: key, bytes, last update, hits
  show KEY                  the text of KEY (working memory first, then the store, then
                            the cold store)
  query [--tags a,b] [--any c,d] [--not e] [--sort newest|oldest|hits|relevance]
        [--limit N] [--archived include|only] [--created-after T] [--created-before T]
        [--min-hits N] [--max-hits N]
                            store entries carrying all of --tags, at least one of --any and
                            none of --not, created between --created-after and
                            --created-before, loaded from --min-hits to --max-hits times;
                            one line each: key, version, created, hits
                            (default: newest first, at most 50, archived entries left out;
                            newest is the order the store created them in, not the clock).
                            T is a date (2026-01-31, 2026-01-31T08:00:00Z) or an age (7d, 12h)
  search TEXT [--limit N] [--archived include|only] [--json] [--substring] [--cold]
        [--by words|meaning|both]
                            store entries ranked by the words of TEXT (BM25 over each entry's
                            tags and value, in the order SQLite FTS5's bm25() gives for
                            'w1 OR w2 ...'): key, score, version, created, hits; best first,
                            at most 50 unless --limit. --json: an array of
                            {\"key\": ..., \"score\": ...}. --substring: the old scan instead,
                            entries whose value contains TEXT (ASCII case-insensitive), most
                            recently written first (score null in --json). With
                            memory.embeddings configured, the word ranking is fused with the
                            nearest entries by meaning (reciprocal rank, k = 60; the score is
                            the fused one); --by words or --by meaning takes one ranking alone. --cold: the cold store instead, entries
                            holding every word (not ranked)
  embed [--limit N]         embed now the store entries without a current vector (the agent
                            does a few per cycle), then rewrite store.vec without dead records
  stats [--json]            the store's statistics
  export [FILE|-]           working memory and store as one era-B JSON document
                            ({state, iteration, working_memory, storage, archived,
                            store_meta, links, cold}: every live entry with its times,
                            the links, the cold store's entries); stdout by default
  import FILE|-             merge an era-B document: working_memory entries into memory.json,
                            storage entries into the store (with their store_meta times),
                            archives the keys listed under archived, makes the links and
                            puts the cold entries into the cold store; state and
                            iteration stay as they are. Checked
                            whole before anything is written, then written as one batch with
                            one sync
  compact                   rewrite store.log with only live records
  cleanup [--older-than AGE] [--max-hits N] [--delete] [--dry-run]
                            move the entries last used before AGE (30d, 12h, a date) and/or
                            used at most N times to the cold store (store.cold), least used
                            first, in batches that are each all or nothing; --delete deletes
                            them instead; --dry-run lists them and changes nothing
  retag KEY [--add a,b] [--remove c]
                            change an entry's tags
  delete KEY [--yes]        delete an entry for good (asks on a terminal unless --yes)
  archive KEY, unarchive KEY
                            set or clear the archived flag (kept in the store, left out of
                            default results)
  restore KEY               bring an entry back from the cold store into the store
  link KEY KEY              mark two entries as related
  related KEY               the keys of the entries related to KEY

The cold store (store.cold) holds what clean-ups took out of the store (memory.cleanup in
config.json, or 'memory cleanup'): show, search --cold, export and restore find it there.

Keys are tag sets: 'b, A' and 'a,b' are the same key. list, show, query, search, stats and
export change nothing (related and cleanup --dry-run neither). import, compact, cleanup,
retag, delete, archive, unarchive, restore and link refuse to run while the agent (or another
of them) holds the data directory's lock. import checks the whole document before it writes
anything; importing the same document twice changes nothing the second time.

options:
  --help, -h    this help

exit codes: 0 success, 1 runtime failure (missing key, unreadable file), 2 usage error
";

/// Runs `lkjagent memory` on the process's stdin and stdout.
pub fn run(args: Args, data: &Path) -> Result<i32> {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let code = exec(args, data, &mut stdin.lock(), &mut out)?;
    out.flush().map_err(write_error)?;
    Ok(code)
}

/// Runs `lkjagent memory` with the given input (for `import -`) and output.
pub fn exec(mut args: Args, data: &Path, input: &mut dyn Read, out: &mut dyn Write) -> Result<i32> {
    let sub = args.positional();
    if args.help() || sub.as_deref() == Some("help") {
        write_all(out, HELP)?;
        return Ok(super::EXIT_OK);
    }
    let Some(sub) = sub else {
        bail!(Usage, "'lkjagent memory' needs a subcommand (list, show, query, search, stats, export, import, compact, embed, cleanup, retag, delete, archive, unarchive, restore, link, related); see 'lkjagent memory --help'");
    };
    match sub.as_str() {
        "list" => list(args, data, out),
        "show" => show(args, data, out),
        "query" => query(args, data, out),
        "search" => search(args, data, out),
        "stats" => stats(args, data, out),
        "export" => export(args, data, out),
        "import" => import(args, data, input, out),
        "compact" => compact(args, data, out),
        "embed" => super::memory_embed::embed(args, data, out),
        other => match super::memory_upkeep::exec(other, args, data, out) {
            Some(res) => res,
            None => bail!(Usage, "unknown subcommand 'memory {}'; see 'lkjagent memory --help'", other),
        },
    }
}

// -------------------------------------------------------------------------------------------
// Subcommands
// -------------------------------------------------------------------------------------------

fn list(args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    args.finish("memory list")?;
    let view = match read_memory(data)? {
        MemoryRead::Missing => {
            say(out, format_args!("no memory.json in {}: working memory is empty", data.display()))?;
            return Ok(super::EXIT_OK);
        }
        MemoryRead::Found(v) => v,
    };
    if let Some(p) = view.problems.first() {
        bail!(JsonInvalid, "{} is unusable: {}", view.path.display(), p);
    }
    let wm = &view.file.working;
    let overflow = view.overflow();
    if wm.is_empty() && overflow.is_empty() {
        say(out, format_args!("working memory is empty"))?;
        return Ok(super::EXIT_OK);
    }
    let mut width = wm.iter().map(|(k, _, _)| k.as_str().len()).max().unwrap_or(3).max(3);
    overflow.for_each(|k, _| {
        width = width.max(k.as_str().len());
        Ok(())
    })?;
    say(out, format_args!("{:<width$}  {:>7}  {:<20}  {:>5}", "KEY", "BYTES", "UPDATED", "HITS"))?;
    for (k, text, m) in wm.iter() {
        say(out, format_args!("{:<width$}  {:>7}  {:<20}  {:>5}", k.as_str(), text.len(), Time(m.updated), m.hits))?;
    }
    overflow.for_each(|k, text| {
        say(
            out,
            format_args!("{:<width$}  {:>7}  (does not fit; the agent moves it to the store)", k.as_str(), text.len()),
        )
    })?;
    say(out, format_args!("{} entries, {} of {} bytes", wm.len(), wm.text_bytes(), wm.text_capacity()))?;
    Ok(super::EXIT_OK)
}

fn show(mut args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    let key = args.positional();
    args.finish("memory show")?;
    let Some(key) = key else { bail!(Usage, "'lkjagent memory show' needs a KEY; see 'lkjagent memory --help'") };
    let key = normalize(&key)?;
    if let MemoryRead::Found(view) = read_memory(data)? {
        if let Some(p) = view.problems.first() {
            err!(JsonInvalid, "{} is unusable ({}); looking in the store only", view.path.display(), p).print_warning();
        } else if let Some(text) = view.file.working.get(&key) {
            write_all(out, text)?;
            write_all(out, "\n")?;
            return Ok(super::EXIT_OK);
        } else {
            let mut found = false;
            view.overflow().for_each(|k, text| {
                if *k != key || found {
                    return Ok(());
                }
                found = true;
                write_all(out, text)?;
                write_all(out, "\n")
            })?;
            if found {
                return Ok(super::EXIT_OK);
            }
        }
    }
    match open_store_read_only(data)? {
        StoreRead::Open(mut store) => {
            if let Some(id) = store.find(&key) {
                let text = store.value(id)?;
                write_all(out, text)?;
                write_all(out, "\n")?;
                return Ok(super::EXIT_OK);
            }
        }
        StoreRead::NotOpened { why, .. } => {
            bail!(NotFound, "\"{}\" is not in working memory, and the store was not read: {}", key, why)
        }
        StoreRead::Absent => {}
    }
    if super::memory_upkeep::show_cold(data, &key, out)? {
        return Ok(super::EXIT_OK);
    }
    bail!(NotFound, "no entry \"{}\" in working memory, the store or the cold store", key)
}

fn query(mut args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    let mut q = Query {
        required: tags_option(&mut args, "--tags")?,
        optional: tags_option(&mut args, "--any")?,
        excluded: tags_option(&mut args, "--not")?,
        ..Query::default()
    };
    if let Some(s) = args.value("--sort")? {
        q.sort = match s.as_str() {
            "newest" => Sort::Newest,
            "oldest" => Sort::Oldest,
            "hits" => Sort::MostAccessed,
            "relevance" => Sort::Relevance,
            other => bail!(Usage, "--sort '{}' is not one of newest, oldest, hits, relevance", other),
        };
    }
    q.max_results = limit_option(&mut args)?;
    q.archived = archived_option(&mut args)?;
    let now = crate::clock::now_unix();
    let time = |args: &mut Args, name: &str| -> Result<Option<u64>> {
        match args.value(name)? {
            None => Ok(None),
            Some(v) => {
                super::memory_upkeep::parse_time(&v, now).map(Some).map_err(|e| e.context(format_args!("{}", name)))
            }
        }
    };
    if let Some(t) = time(&mut args, "--created-after")? {
        q.created.0 = t;
    }
    if let Some(t) = time(&mut args, "--created-before")? {
        q.created.1 = t;
    }
    let count = |args: &mut Args, name: &str| -> Result<Option<u64>> {
        match args.value(name)? {
            None => Ok(None),
            Some(v) => v.parse::<u64>().map(Some).map_err(|_| err!(Usage, "{} '{}' is not a number", name, v)),
        }
    };
    if let Some(n) = count(&mut args, "--min-hits")? {
        q.hits.0 = n;
    }
    if let Some(n) = count(&mut args, "--max-hits")? {
        q.hits.1 = n;
    }
    args.finish("memory query")?;
    let mut results = Results::with_capacity(q.max_results);
    // The checkpoint read in place when it covers the log; else (or when it turns out
    // damaged) the store opened whole. The same answer either way.
    if let Some(mut view) = open_store_view(data) {
        let infos = view.query(&q, &mut results).and_then(|_| {
            results.ids().map(|id| view.info(id)).filter_map(Result::transpose).collect::<Result<Vec<_>>>()
        });
        match infos {
            Ok(infos) => {
                print_hits(&infos, &results, out)?;
                return Ok(super::EXIT_OK);
            }
            Err(e) => e.context(format_args!("{}: opening the store whole instead", data.display())).print_warning(),
        }
    }
    let Some(store) = store_for_reading(data, out)? else { return Ok(super::EXIT_OK) };
    store.query(&q, &mut results);
    print_hits(&infos_of(&store, results.ids()), &results, out)?;
    Ok(super::EXIT_OK)
}

/// The metadata of entries `ids` (the live ones).
fn infos_of(store: &Store, ids: impl Iterator<Item = EntryId>) -> Vec<EntryInfo> {
    ids.filter_map(|id| store.info(id)).collect()
}

fn search(mut args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    let limit = limit_option(&mut args)?;
    let archived = archived_option(&mut args)?;
    let json = args.flag("--json");
    let substring = args.flag("--substring");
    let by = super::memory_embed::by_option(&mut args)?;
    let cold = args.flag("--cold");
    let text = args.positional();
    args.finish("memory search")?;
    let Some(text) = text.filter(|t| !t.is_empty()) else {
        bail!(Usage, "'lkjagent memory search' needs the TEXT to look for; see 'lkjagent memory --help'")
    };
    if cold {
        if json || substring {
            bail!(Usage, "--cold takes neither --json nor --substring");
        }
        let live = match open_store_read_only(data)? {
            StoreRead::Open(s) => Some(s),
            _ => None,
        };
        super::memory_upkeep::search_cold(data, live.as_deref(), &text, limit, out)?;
        return Ok(super::EXIT_OK);
    }
    // Ranked by words alone (no memory.embeddings, or --by words): store.fts and the
    // checkpoint read in place when both cover the log.
    let words_only = !substring
        && by != By::Meaning
        && (by == By::Words || super::memory_embed::load(data).is_ok_and(|s| s.is_none()));
    if words_only {
        if let Some(mut view) = open_store_view(data) {
            let mut ranked = Ranked::new();
            let found = view.rank(&text, limit, archived, &mut ranked).and_then(|done| match done {
                false => Ok(None),
                true => ranked
                    .hits()
                    .iter()
                    .map(|h| view.info(h.id).map(|i| i.map(|i| (i, h.score))))
                    .filter_map(Result::transpose)
                    .collect::<Result<Vec<_>>>()
                    .map(Some),
            });
            match found {
                Ok(Some(hits)) => {
                    print_ranked(&hits, json, out)?;
                    return Ok(super::EXIT_OK);
                }
                Ok(None) => {}
                Err(e) if e.code() == Code::CapacityExceeded => return Err(e),
                Err(e) => {
                    e.context(format_args!("{}: opening the store whole instead", data.display())).print_warning()
                }
            }
        }
    }
    let store = match json {
        // JSON output is the array alone: no store is an empty one.
        true => match open_store_read_only(data)? {
            StoreRead::Open(s) => Some(s),
            StoreRead::Absent => None,
            StoreRead::NotOpened { why, .. } => bail!(Io, "{}: not read: {}", data.join(LOG_NAME).display(), why),
        },
        false => store_for_reading(data, out)?,
    };
    let Some(mut store) = store else {
        if json {
            write_all(out, "[]\n")?;
        }
        return Ok(super::EXIT_OK);
    };
    if substring {
        let mut results = Results::with_capacity(limit);
        store.search_text(&text, archived, limit, &mut results)?;
        if json {
            let hits = results.ids().filter_map(|id| store.key(id)).map(|k| (k, None));
            return print_json_hits(hits, out).map(|_| super::EXIT_OK);
        }
        print_hits(&infos_of(&store, results.ids()), &results, out)?;
        if results.truncated() {
            say(out, format_args!("(the search stopped at its byte budget, limits::STORE_SEARCH_MAX_BYTES)"))?;
        }
        return Ok(super::EXIT_OK);
    }
    let mut ranked = Ranked::new();
    let mut meaning = super::memory_embed::for_search(data, &store, by)?;
    store.rank_by(meaning.as_mut(), by, &text, limit, archived, None, &mut ranked)?;
    let hits: Vec<(EntryInfo, f64)> =
        ranked.hits().iter().filter_map(|h| store.info(h.id).map(|i| (i, h.score))).collect();
    print_ranked(&hits, json, out)?;
    Ok(super::EXIT_OK)
}

/// The ranked hits of `memory search`, best first: a line each, or the JSON array.
fn print_ranked(hits: &[(EntryInfo, f64)], json: bool, out: &mut dyn Write) -> Result<()> {
    if json {
        return print_json_hits(hits.iter().map(|(i, score)| (i.key, Some(*score))), out);
    }
    if hits.is_empty() {
        say(out, format_args!("no entries match"))?;
    }
    for (info, score) in hits {
        say(
            out,
            format_args!(
                "{}  score {}  v{}  created {}  hits {}{}",
                info.key,
                Score(*score),
                info.version,
                Time(info.created),
                info.hits,
                if info.archived { "  archived" } else { "" }
            ),
        )?;
    }
    Ok(())
}

/// A BM25 score for people: four decimals, or three significant digits when smaller than
/// 0.01 (a query of words in half the entries or more scores around 1e-6).
struct Score(f64);

impl core::fmt::Display for Score {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.0.abs() >= 0.01 || self.0 == 0.0 {
            write!(f, "{:.4}", self.0)
        } else {
            write!(f, "{:.3e}", self.0)
        }
    }
}

/// `[{"key": ..., "score": ...}, ...]` for `memory search --json`.
fn print_json_hits(hits: impl Iterator<Item = (Key, Option<f64>)>, out: &mut dyn Write) -> Result<()> {
    let mut text = String::new();
    {
        let mut w = Writer::pretty(&mut text);
        w.begin_array()?;
        for (key, score) in hits {
            w.begin_object()?;
            w.key("key")?;
            w.string(key.as_str())?;
            w.key("score")?;
            match score {
                Some(x) => w.f64(x)?,
                None => w.null()?,
            }
            w.end_object()?;
        }
        w.end_array()?;
        w.finish()?;
    }
    text.push('\n');
    write_all(out, &text)
}

fn stats(mut args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    let json = args.flag("--json");
    args.finish("memory stats")?;
    let store = match open_store_read_only(data)? {
        StoreRead::Open(s) => s,
        StoreRead::Absent if json => {
            write_all(out, "{\n  \"entries\": 0,\n  \"log_bytes\": 0\n}\n")?;
            return Ok(super::EXIT_OK);
        }
        StoreRead::Absent => {
            say(out, format_args!("no store yet in {} (the agent creates store.log)", data.display()))?;
            return Ok(super::EXIT_OK);
        }
        StoreRead::NotOpened { why, .. } => bail!(Io, "{}: not read: {}", data.join(LOG_NAME).display(), why),
    };
    let st = store.stats();
    let most = st.most_accessed.and_then(|id| store.key(id));
    if json {
        let mut text = String::new();
        {
            let mut w = Writer::pretty(&mut text);
            w.begin_object()?;
            for (k, v) in [
                ("entries", st.entries as u64),
                ("archived", st.archived as u64),
                ("capacity", st.capacity as u64),
                ("tags", st.tags as u64),
                ("max_tags", st.max_tags as u64),
                ("links", st.links as u64),
                ("log_bytes", st.log_bytes),
                ("live_bytes", st.live_bytes),
                ("garbage_bytes", st.garbage_bytes),
                ("oldest_created", st.oldest_created),
                ("newest_created", st.newest_created),
                ("total_hits", st.total_hits),
                ("corrupt_records", st.corrupt_records),
                ("replayed_bytes", st.replayed_bytes),
                ("ram_bytes", st.ram_bytes as u64),
                ("cold_entries", cold_current(data, &store)?.current),
            ] {
                w.key(k)?;
                w.u64(v)?;
            }
            w.key("most_accessed")?;
            match &most {
                Some(k) => w.string(k.as_str())?,
                None => w.null()?,
            }
            w.end_object()?;
            w.finish()?;
        }
        text.push('\n');
        write_all(out, &text)?;
        return Ok(super::EXIT_OK);
    }
    say(out, format_args!("entries          {} ({} archived) of {}", st.entries, st.archived, st.capacity))?;
    let cold = cold_current(data, &store)?;
    say(out, format_args!("cold store       {} entries, {} bytes", cold.current, cold.bytes))?;
    say(out, format_args!("tags             {} of {}", st.tags, st.max_tags))?;
    say(out, format_args!("links            {}", st.links))?;
    say(
        out,
        format_args!(
            "log              {} bytes ({} live, {} garbage{})",
            st.log_bytes,
            st.live_bytes,
            st.garbage_bytes,
            if store.needs_compaction() { "; compaction due" } else { "" }
        ),
    )?;
    if st.entries > 0 {
        say(out, format_args!("created          {} .. {}", Time(st.oldest_created), Time(st.newest_created)))?;
    }
    say(out, format_args!("hits             {} in all", st.total_hits))?;
    if let Some(k) = &most {
        say(out, format_args!("most accessed    {}", k))?;
    }
    say(out, format_args!("damaged records  {}", st.corrupt_records))?;
    say(
        out,
        format_args!(
            "opened           {}, {} bytes of log read",
            if st.from_checkpoint { "from the checkpoint" } else { "from the whole log" },
            st.replayed_bytes
        ),
    )?;
    say(out, format_args!("index RAM        {} bytes reserved", st.ram_bytes))?;
    Ok(super::EXIT_OK)
}

/// The cold store's current entries counted (each key once; none the live store holds).
fn cold_current(data: &Path, store: &Store) -> Result<crate::memory::store::cold::ColdStats> {
    crate::memory::store::cold::scan_current(data, &|k| store.find(k).is_some(), &mut |_| Ok(true))
}

fn export(mut args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    let target = args.positional().unwrap_or_else(|| "-".to_string());
    args.finish("memory export")?;
    let view = match read_memory(data)? {
        MemoryRead::Missing => None,
        MemoryRead::Found(v) => match v.problems.first() {
            Some(p) => bail!(JsonInvalid, "{} is unusable ({}); fix it or move it aside first", v.path.display(), p),
            None => Some(v),
        },
    };
    let fresh = MemoryFile::new();
    let file = view.as_ref().map_or(&fresh, |v| &v.file);
    let overflow = view.as_ref().map_or(memfile::Overflow::none(), |v| v.overflow());
    let mut store = match open_store_read_only(data)? {
        StoreRead::Open(s) => Some(s),
        StoreRead::Absent => None,
        StoreRead::NotOpened { why, .. } => bail!(Io, "{}: not read: {}", data.join(LOG_NAME).display(), why),
    };
    // Working-memory entries that do not fit the working set go into `storage`, where the
    // agent puts them (unless the store already holds their key).
    if target == "-" {
        let mut text = IoText::new(&mut *out);
        let res = era_b::export(store.as_deref_mut(), Some(file), overflow, &mut text);
        return text.finish().and(res).map(|_| super::EXIT_OK);
    }
    // A file: written beside its final name, synced, then renamed over it, so an interrupted
    // export never leaves half a document under the name.
    let path = PathBuf::from(&target);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("export.json");
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = dir.join(format!(".{}.tmp-{}", name, std::process::id()));
    let res = (|| -> Result<era_b::ExportReport> {
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| err!(Io, "cannot create {}: {}", tmp.display(), e))?;
        let mut text = IoText::new(io::BufWriter::new(&f));
        let res = era_b::export(store.as_deref_mut(), Some(file), overflow, &mut text);
        let report = text.finish().map_err(|e| e.context(format_args!("{}", tmp.display()))).and(res)?;
        f.sync_all().map_err(|e| err!(Io, "cannot sync {}: {}", tmp.display(), e))?;
        fs::rename(&tmp, &path)
            .map_err(|e| err!(Io, "cannot rename {} to {}: {}", tmp.display(), path.display(), e))?;
        Ok(report)
    })();
    if res.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    let report = res?;
    let _ = writeln!(
        io::stderr(),
        "exported {} working-memory entries and {} store entries to {}",
        report.working,
        report.entries,
        path.display()
    );
    Ok(super::EXIT_OK)
}

fn import(mut args: Args, data: &Path, input: &mut dyn Read, out: &mut dyn Write) -> Result<i32> {
    let source = args.positional();
    args.finish("memory import")?;
    let Some(source) = source else {
        bail!(Usage, "'lkjagent memory import' needs a FILE (or '-' for stdin); see 'lkjagent memory --help'")
    };
    // Check everything before writing anything (before even taking the lock).
    let doc = read_limited(&source, input, EXCHANGE_FILE_MAX_BYTES)
        .and_then(|bytes| Import::check(&bytes))
        .map_err(|e| e.context(format_args!("{}", display_name(&source))))?;

    let _lock = lock_data_dir(data)?;
    // The agent's own start-up path: it repairs a torn store tail and migrates era-B storage,
    // as a run would. An unusable memory.json is not moved aside here: the user decides.
    if let MemoryRead::Found(v) = read_memory(data)? {
        if let Some(p) = v.problems.first() {
            bail!(JsonInvalid, "{} is unusable ({}); fix it or move it aside first", v.path.display(), p);
        }
    }
    let now = crate::clock::now_unix();
    let mut store = Store::open_with_capacity(data, super::util::store_capacity(data))?;
    let (mut memory, _) = memfile::load(data, &mut store, now)?;
    // Store first (each put is durable on return), memory.json last (one atomic rename): a
    // crash in between leaves some entries imported, and importing again completes the job.
    let r = doc.apply(&mut store, &mut memory, now)?;
    if r.working.added + r.working.replaced > 0 {
        memfile::save(data, &memory)?;
    }
    store.close()?;
    let (wm, st) = (r.working, r.stored);
    let mut line = format!(
        "working memory: {} added, {} replaced, {} unchanged; store: {} added, {} replaced, {} unchanged",
        wm.added, wm.replaced, wm.unchanged, st.added, st.replaced, st.unchanged
    );
    // The additions of this program's exports, said when the document has them.
    if r.cold.added + r.cold.unchanged > 0 {
        line.push_str(&format!("; cold store: {} added, {} there already", r.cold.added, r.cold.unchanged));
    }
    if r.links > 0 {
        line.push_str(&format!("; {} links made", r.links));
    }
    say(out, format_args!("{}", line))?;
    Ok(super::EXIT_OK)
}

fn compact(args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    args.finish("memory compact")?;
    let _lock = lock_data_dir(data)?;
    if !data.join(LOG_NAME).exists() {
        say(out, format_args!("no store yet in {}; nothing to compact", data.display()))?;
        return Ok(super::EXIT_OK);
    }
    let mut store = Store::open_with_capacity(data, super::util::store_capacity(data))?;
    let (before, after) = store.compact()?;
    say(out, format_args!("store.log: {} bytes -> {} bytes ({} entries)", before, after, store.len()))?;
    Ok(super::EXIT_OK)
}

// -------------------------------------------------------------------------------------------
// Options and output of the store subcommands
// -------------------------------------------------------------------------------------------

fn tags_option(args: &mut Args, name: &str) -> Result<Option<Key>> {
    match args.value(name)? {
        None => Ok(None),
        Some(v) => normalize_optional(&v).map_err(|e| e.with_code(Code::Usage).context(format_args!("{}", name))),
    }
}

fn limit_option(args: &mut Args) -> Result<usize> {
    match args.value("--limit")? {
        None => Ok(50),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=STORE_QUERY_MAX_RESULTS).contains(&n) => Ok(n),
            _ => bail!(Usage, "--limit '{}' is not a number from 1 to {}", v, STORE_QUERY_MAX_RESULTS),
        },
    }
}

fn archived_option(args: &mut Args) -> Result<Archived> {
    match args.value("--archived")?.as_deref() {
        None => Ok(Archived::Exclude),
        Some("include") => Ok(Archived::Include),
        Some("only") => Ok(Archived::Only),
        Some(other) => bail!(Usage, "--archived '{}' is not one of include, only", other),
    }
}

/// The store for a reading subcommand; `None` (after saying so) when there is none yet.
fn store_for_reading(data: &Path, out: &mut dyn Write) -> Result<Option<Box<Store>>> {
    match open_store_read_only(data)? {
        StoreRead::Open(s) => Ok(Some(s)),
        StoreRead::Absent => {
            say(out, format_args!("no store yet in {}", data.display()))?;
            Ok(None)
        }
        StoreRead::NotOpened { why, .. } => bail!(Io, "{}: not read: {}", data.join(LOG_NAME).display(), why),
    }
}

/// The hits of a query (their metadata in `infos`, in result order) and how many more match.
fn print_hits(infos: &[EntryInfo], results: &Results, out: &mut dyn Write) -> Result<()> {
    if results.is_empty() {
        say(out, format_args!("no entries match"))?;
        return Ok(());
    }
    for info in infos {
        say(
            out,
            format_args!(
                "{}  v{}  created {}  hits {}{}",
                info.key,
                info.version,
                Time(info.created),
                info.hits,
                if info.archived { "  archived" } else { "" }
            ),
        )?;
    }
    if results.matched() > results.len() {
        say(out, format_args!("... {} more (raise --limit)", results.matched() - results.len()))?;
    } else if results.truncated() {
        say(out, format_args!("... more may match (raise --limit)"))?;
    }
    Ok(())
}

// -------------------------------------------------------------------------------------------
// Reading memory.json without changing it
// -------------------------------------------------------------------------------------------

/// `memory.json` as read by [`read_memory`].
pub struct MemoryView {
    /// The file that was read (`memory.json`, or `memory.json.prev` when the first is missing).
    pub path: PathBuf,
    /// What could be read (a fresh memory where the file could not be).
    pub file: MemoryFile,
    /// Why the agent cannot use the file as it is (it moves a malformed file aside at its next
    /// start; it refuses one with an entry that fits neither working memory nor the store).
    pub problems: Vec<String>,
    /// Things the agent handles on its own: entries it leaves out, era-B storage it migrates,
    /// working-memory entries it moves to the store because they do not fit.
    pub notes: Vec<String>,
    /// The parsed file, from which [`MemoryView::overflow`] reads the `working_memory` entries
    /// that do not fit the working set (an era-B file that grew without bound; the agent
    /// stores them in the store at its next start): they are never collected.
    doc: Document,
    /// Their positions (see `memory::file::DecodeReport::overflow`).
    overflow_at: Vec<u32>,
}

impl MemoryView {
    /// A view of a file that was not decoded (`problems` say why).
    fn unread(path: PathBuf, why: String) -> MemoryView {
        MemoryView {
            path,
            file: MemoryFile::new(),
            problems: vec![why],
            notes: Vec::new(),
            doc: Document::with_capacity(0, 0),
            overflow_at: Vec::new(),
        }
    }

    /// The `working_memory` entries that do not fit the working set, read from the file.
    pub fn overflow(&self) -> memfile::Overflow<'_> {
        memfile::Overflow::new(&self.doc, &self.overflow_at)
    }
}

/// What [`read_memory`] found.
pub enum MemoryRead {
    /// Neither `memory.json` nor `memory.json.prev` exists: the agent starts fresh.
    Missing,
    /// A file was read (see its problems).
    Found(Box<MemoryView>),
}

/// Reads `memory.json` (or, when it is missing, `memory.json.prev`, which the agent would
/// use) and checks its shape with the agent's own decoder ([`memfile::decode_bytes`]),
/// collecting every problem; never writes. An I/O error other than "not found" is returned.
pub fn read_memory(data: &Path) -> Result<MemoryRead> {
    let main = data.join(MEMORY_FILE);
    let prev = crate::memory::atomic::prev_path(data, MEMORY_FILE);
    for path in [main, prev] {
        if crate::memory::nofollow::is_link(&path) {
            // The agent refuses it (it would cut the link when it saves); not read here either.
            let why = crate::memory::nofollow::link_refused(&path).message().to_string();
            return Ok(MemoryRead::Found(Box::new(MemoryView::unread(path, why))));
        }
        let view = match memfile::read_bounded(&path) {
            Ok(None) => continue,
            Ok(Some(bytes)) => view_of(path, &bytes, super::util::store_capacity(data)),
            Err(e) if e.code() == Code::CapacityExceeded => {
                let why = format!("larger than {} bytes (limits::MEMORY_FILE_MAX_BYTES)", MEMORY_FILE_MAX_BYTES);
                MemoryView::unread(path, why)
            }
            Err(e) => return Err(e),
        };
        return Ok(MemoryRead::Found(Box::new(view)));
    }
    Ok(MemoryRead::Missing)
}

/// Decodes the file's bytes and says what the agent would make of them, in a bounded number
/// of lines (`limits::MEMORY_FILE_REPORT_MAX`). `store_capacity` is `memory.store_capacity`.
fn view_of(path: PathBuf, bytes: &[u8], store_capacity: usize) -> MemoryView {
    // Sized by the input rather than at the agent's MEMORY_FILE_MAX_* (one read, one file).
    let mut doc = Document::with_capacity((bytes.len() / 2 + 64).min(MEMORY_FILE_MAX_NODES), bytes.len() + 64);
    let (file, report) = memfile::decode_bytes(&mut doc, bytes, 0);
    let mut problems: Vec<String> = report.problems.iter().map(|e| e.message().to_string()).collect();
    let mut notes: Vec<String> = report.left_out.iter().map(|e| e.message().to_string()).collect();
    if report.left_out_count > report.left_out.len() {
        notes.push(format!(
            "{} working_memory entries are left out in all (keys that do not normalise)",
            report.left_out_count
        ));
    }
    let overflow = memfile::Overflow::new(&doc, &report.overflow);
    let (mut too_big, mut first) = (0usize, None);
    let _ = overflow.for_each(|key, text| {
        if text.len() > STORE_VALUE_MAX_BYTES {
            too_big += 1;
            if too_big <= MEMORY_FILE_REPORT_MAX {
                problems.push(format!(
                    "working_memory \"{}\" ({} bytes) fits neither the working set nor the store \
                     (limits::STORE_VALUE_MAX_BYTES); shorten it",
                    key,
                    text.len()
                ));
            }
        } else if first.is_none() {
            first = Some(key.to_string());
        }
        Ok(())
    });
    if too_big > MEMORY_FILE_REPORT_MAX {
        problems.push(format!("{} working_memory entries in all are too big for the store", too_big));
    }
    let fitting = overflow.len() - too_big;
    if fitting > store_capacity {
        problems.push(format!(
            "{} working_memory entries do not fit the working set, more than the store holds \
             (memory.store_capacity {}); the agent refuses the file",
            fitting, store_capacity
        ));
    } else if fitting == 1 {
        notes.push(format!(
            "working_memory \"{}\" does not fit the working set; the agent moves it to the store at its next start",
            first.unwrap_or_default()
        ));
    } else if fitting > 1 {
        notes.push(format!(
            "{} working_memory entries, from \"{}\" on, do not fit the working set; the agent moves them to the \
             store at its next start",
            fitting,
            first.unwrap_or_default()
        ));
    }
    if report.storage > 0 {
        notes.push(format!(
            "{} era-B \"storage\" entries, moved into the store at the agent's next start",
            report.storage
        ));
    }
    let overflow_at = report.overflow;
    MemoryView { path, file, problems, notes, doc, overflow_at }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_view_collects_every_problem() {
        let v = view_of(
            PathBuf::from("memory.json"),
            br#"{"state":3,"iteration":-1,"working_memory":{"ok":"x"," , ":"gone"},"agent":[],"storage":{"a":"b"}}"#,
            16,
        );
        let p = v.problems.join("\n");
        assert!(p.contains("\"state\" is not a string"), "{p}");
        assert!(p.contains("\"iteration\""), "{p}");
        assert!(p.contains("\"agent\" is not an object"), "{p}");
        assert_eq!(v.problems.len(), 3);
        assert_eq!(v.notes.len(), 2, "{:?}", v.notes);
        assert_eq!(v.file.working.len(), 1);
    }
}
