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
//! Writing subcommands (`import`, `compact`) take the data directory's lock ([`super::util::lock_data_dir`])
//! first, so that two writers never append to the same log with two different indexes. The
//! agent loop must hold the same lock while it runs for this to protect a running agent.
//!
//! `status` and `check` read `memory.json` through [`read_memory`] too; the other shared
//! helpers (opening the store read-only, the lock, output) are in `cli::util`.
//!
//! The subcommands by group, a file each: this one (dispatch, `list`, `show`, `query`,
//! `stats`), `memory_options` (the options and output they share), `memory_search` (`search`),
//! `memory_exchange` (`export`, `import`, `compact`), `memory_upkeep` (`cleanup`, `retag`,
//! `delete`, `archive`, `unarchive`, `restore`, `link`, `related`), `memory_embed` (`embed`),
//! and `memory_file` (reading `memory.json` without changing it).

use super::args::Args;
use super::util::{open_store_read_only, open_store_view, say, write_all, write_error, StoreRead, Time};
use crate::error::Result;
use crate::json::Writer;
use crate::memory::key::normalize;
use crate::memory::query::{Query, Results, Sort};
use crate::memory::store::{Store, LOG_NAME};
use std::io::{self, Read, Write};
use std::path::Path;

pub use super::memory_file::{read_memory, MemoryRead, MemoryView};
use super::memory_options::{archived_option, infos_of, limit_option, print_hits, store_for_reading, tags_option};

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
                            nearest entries by meaning (standard scores added, the words only
                            lifting an entry; the score is the fused one); --by words or
                            --by meaning takes one ranking alone. --cold: the cold store
                            instead, entries holding every word (not ranked)
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
  compact                   rewrite store.log with only live records, store.cold with only current ones
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
        "search" => super::memory_search::search(args, data, out),
        "stats" => stats(args, data, out),
        "export" => super::memory_exchange::export(args, data, out),
        "import" => super::memory_exchange::import(args, data, input, out),
        "compact" => super::memory_exchange::compact(args, data, out),
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
    // The checkpoint read in place (the log's tail laid over it, if any): the entry's record
    // alone is read.
    let mut in_place = None;
    if let Some(mut view) = super::util::open_store_view(data) {
        let mut text = String::new();
        match view.value_of(&key, &mut text) {
            Ok(found) => {
                view.say_warning();
                in_place = Some((found, text))
            }
            Err(e) => e.context(format_args!("{}: opening the store whole instead", data.display())).print_warning(),
        }
    }
    match in_place {
        Some((true, text)) => {
            write_all(out, &text)?;
            write_all(out, "\n")?;
            return Ok(super::EXIT_OK);
        }
        Some((false, _)) => {}
        None => {
            if let Some(done) = show_from_store(data, &key, out)? {
                return Ok(done);
            }
        }
    }
    if super::memory_upkeep::show_cold(data, &key, out)? {
        return Ok(super::EXIT_OK);
    }
    bail!(NotFound, "no entry \"{}\" in working memory, the store or the cold store", key)
}

/// `memory show` from the store opened read-only: `Some` once answered.
fn show_from_store(data: &Path, key: &crate::memory::key::Key, out: &mut dyn Write) -> Result<Option<i32>> {
    match open_store_read_only(data)? {
        StoreRead::Open(mut store) => {
            if let Some(id) = store.find(key) {
                let text = store.value(id)?;
                write_all(out, text)?;
                write_all(out, "\n")?;
                return Ok(Some(super::EXIT_OK));
            }
        }
        StoreRead::NotOpened { why, .. } => {
            bail!(NotFound, "\"{}\" is not in working memory, and the store was not read: {}", key, why)
        }
        StoreRead::Absent => {}
    }
    Ok(None)
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
            Some(v) => {
                crate::bytes::parse_u64(&v).map(Some).ok_or_else(|| err!(Usage, "{} '{}' is not a number", name, v))
            }
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
    // The checkpoint read in place (the log's tail laid over it, if any); else (or when it
    // turns out damaged) the store opened whole. The same answer either way.
    if let Some(mut view) = open_store_view(data) {
        let infos = view.query(&q, &mut results).and_then(|_| {
            results.ids().map(|id| view.info(id)).filter_map(Result::transpose).collect::<Result<Vec<_>>>()
        });
        match infos {
            Ok(infos) => {
                view.say_warning();
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

fn stats(mut args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    let json = args.flag("--json");
    args.finish("memory stats")?;
    // The checkpoint read in place (the log's tail laid over it, if any): its header, tag
    // directory and three columns, not the whole store.
    if let Some(view) = super::util::open_store_view(data) {
        match stats_in_place(data, view) {
            Ok(Some((st, most, cold))) => return print_stats(&st, most.as_ref(), &cold, (json, true), out),
            Ok(None) => {}
            Err(e) => e.context(format_args!("{}: opening the store whole instead", data.display())).print_warning(),
        }
    }
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
    let cold = cold_current(data, &store)?;
    print_stats(&st, most.as_ref(), &cold, (json, false), out)
}

/// What `memory stats` prints: the statistics, the most accessed entry's key, the cold
/// store's current entries.
type StatsParts = (crate::memory::store::Stats, Option<crate::memory::key::Key>, crate::memory::store::cold::ColdStats);

/// `memory stats` from the checkpoint read in place: the statistics, the most accessed
/// entry's key, the cold store's current entries (keys the live store holds left out);
/// `None` when the view leaves them to the store opened whole.
fn stats_in_place(data: &Path, mut view: crate::memory::store::view::tail::InPlace) -> Result<Option<StatsParts>> {
    let Some(st) = view.stats()? else { return Ok(None) };
    let most = match st.most_accessed {
        Some(id) => view.key(id)?,
        None => None,
    };
    // From store.cold.keys when it is usable and the live store has no more keys than it.
    let from_keys = crate::memory::store::cold::keys::current(
        data,
        Some(&mut |cold_keys| {
            if view.len() as u64 > cold_keys.max(STATS_LIVE_KEYS_ANYWAY) {
                return Ok(None);
            }
            let mut hashes = Vec::new();
            view.live_key_hashes(&mut hashes)?;
            Ok(Some(hashes))
        }),
    )?;
    if let Some(cold) = from_keys {
        view.say_warning();
        return Ok(Some((st, most, cold)));
    }
    let view = core::cell::RefCell::new(view);
    let fault = core::cell::RefCell::new(None);
    let live = |k: &crate::memory::key::Key| match view.borrow_mut().find(k) {
        Ok(found) => found.is_some(),
        Err(e) => {
            fault.borrow_mut().get_or_insert(e);
            false
        }
    };
    let cold = crate::memory::store::cold::scan_current(data, &live, &mut |_| Ok(true))?;
    if let Some(e) = fault.into_inner() {
        return Err(e);
    }
    view.into_inner().say_warning();
    Ok(Some((st, most, cold)))
}

/// Prints `memory stats` (`json`; `in_place`: read from the checkpoint in place).
fn print_stats(
    st: &crate::memory::store::Stats,
    most: Option<&crate::memory::key::Key>,
    cold: &crate::memory::store::cold::ColdStats,
    (json, in_place): (bool, bool),
    out: &mut dyn Write,
) -> Result<i32> {
    if json {
        let mut text = String::new();
        {
            let mut w = Writer::pretty(&mut text as &mut dyn core::fmt::Write);
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
                ("cold_entries", cold.current),
            ] {
                w.key(k)?;
                w.u64(v)?;
            }
            w.key("most_accessed")?;
            match most {
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
            if st.compaction_due() { "; compaction due" } else { "" }
        ),
    )?;
    if st.entries > 0 {
        say(out, format_args!("created          {} .. {}", Time(st.oldest_created), Time(st.newest_created)))?;
    }
    say(out, format_args!("hits             {} in all", st.total_hits))?;
    if let Some(k) = most {
        say(out, format_args!("most accessed    {}", k))?;
    }
    say(out, format_args!("damaged records  {}", st.corrupt_records))?;
    say(
        out,
        format_args!(
            "opened           {}, {} bytes of log read",
            match (in_place, st.from_checkpoint) {
                (true, _) => "the checkpoint read in place",
                (false, true) => "from the checkpoint",
                (false, false) => "from the whole log",
            },
            st.replayed_bytes
        ),
    )?;
    say(out, format_args!("index RAM        {} bytes reserved", st.ram_bytes))?;
    Ok(super::EXIT_OK)
}

/// Live keys `memory stats` reads from the checkpoint in place to count the cold store from
/// `store.cold.keys` whatever the number of cold keys (beyond it, only when they are no more
/// than the cold keys; else it scans `store.cold`, a lookup per cold key).
const STATS_LIVE_KEYS_ANYWAY: u64 = 65_536;

/// The cold store's current entries counted (each key once; none the live store holds):
/// from `store.cold.keys` when it is usable, else by a scan of `store.cold`.
fn cold_current(data: &Path, store: &Store) -> Result<crate::memory::store::cold::ColdStats> {
    let from_keys = crate::memory::store::cold::keys::current(
        data,
        Some(&mut |_| {
            let hashes =
                store.ids().filter_map(|id| store.key(id)).map(|k| crate::memory::hash::fnv1a64(k.as_str().as_bytes()));
            Ok(Some(hashes.collect()))
        }),
    )?;
    match from_keys {
        Some(st) => Ok(st),
        None => crate::memory::store::cold::scan_current(data, &|k| store.find(k).is_some(), &mut |_| Ok(true)),
    }
}
