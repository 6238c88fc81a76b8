//! Helpers shared by the store's file and crash tests: a seeded RNG, temp directories, a full
//! snapshot of a store's index (every entry's metadata and value, links, a set of queries and the
//! statistics) with a readable first difference, and the two sides of a crash test's child
//! process: this test binary run again, which says `ready`, then `W <n>` before each write and
//! `A <n>` once it returned, and the parent that kills it at a random moment and reads what it
//! acknowledged. Include it with `#[path = "support/store.rs"] mod store_support;`.
// Each store test crate that includes it uses only part of it: the rest would warn there.
#![allow(dead_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use lkjagent::memory::key::{normalize, Key};
use lkjagent::memory::log;
use lkjagent::memory::query::{Archived, Query, Results, Sort};
use lkjagent::memory::store::cleanup::{Policy, Use};
use lkjagent::memory::store::{cold, Store};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, StdoutLock, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

/// xorshift64*: small, seeded, the same on every machine.
#[path = "rng.rs"]
mod rng;
#[allow(unused_imports)] // not every including test draws numbers
pub use rng::RngStar as Rng;

pub use super::temp::TempDir;

/// Copies the regular files of `from` into a fresh `to` (the store's directory is flat).
pub fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Every file of a flat directory with its bytes, sorted by name.
pub fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect();
    out.sort();
    out
}

pub fn key(text: &str) -> Key {
    normalize(text).unwrap()
}

/// One entry as the index and the log give it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub id: u32,
    pub key: String,
    /// The value, or the error code reading it gave.
    pub value: Result<String, String>,
    pub version: u32,
    pub created: u64,
    pub accessed: u64,
    pub hits: u64,
    pub archived: bool,
    /// Ids linked to this one, sorted.
    pub related: Vec<u32>,
}

/// Everything a reader can observe of a store, except how it was opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snap {
    pub entries: Vec<Entry>,
    /// (ids in result order, matched) per query of [`queries`].
    pub queries: Vec<(Vec<u32>, usize)>,
    /// The statistics that describe the contents (not `from_checkpoint`, `replayed_bytes`).
    pub stats: Vec<(&'static str, u64)>,
}

/// The queries a snapshot runs: every order, AND/OR/NOT, the archived filter and ranges.
pub fn queries(tags: &[&str]) -> Vec<Query> {
    let t = |i: usize| normalize(tags[i % tags.len()]).ok();
    let two = |i: usize, j: usize| normalize(&format!("{},{}", tags[i % tags.len()], tags[j % tags.len()])).ok();
    let mut qs = vec![
        Query::default(),
        Query { sort: Sort::Oldest, ..Query::default() },
        Query { sort: Sort::MostAccessed, archived: Archived::Include, ..Query::default() },
        Query { archived: Archived::Only, ..Query::default() },
        Query { max_results: 16, ..Query::default() },
    ];
    if !tags.is_empty() {
        qs.extend([
            Query { required: t(0), ..Query::default() },
            Query { required: t(1), max_results: 5, ..Query::default() },
            Query { required: two(0, 1), archived: Archived::Include, ..Query::default() },
            Query { optional: two(2, 3), sort: Sort::Relevance, ..Query::default() },
            Query { required: t(2), excluded: t(3), sort: Sort::Oldest, ..Query::default() },
            Query { optional: two(0, 4), excluded: t(1), archived: Archived::Include, ..Query::default() },
            Query { required: t(4), hits: (1, u64::MAX), ..Query::default() },
            Query { created: (0, 1_700_000_100), archived: Archived::Include, ..Query::default() },
        ]);
    }
    qs
}

/// Reads everything out of `store` (values included).
pub fn snapshot(store: &mut Store, tags: &[&str]) -> Snap {
    let ids: Vec<u32> = store.ids().collect();
    let mut entries = Vec::with_capacity(ids.len());
    let mut rel = Results::new();
    for &id in &ids {
        let info = store.info(id).expect("a live id has its info");
        store.related(id, &mut rel);
        let mut related: Vec<u32> = rel.ids().collect();
        related.sort_unstable();
        let value = store.value(id).map(|v| v.to_string()).map_err(|e| format!("{:?}", e.code()));
        entries.push(Entry {
            id,
            key: info.key.to_string(),
            value,
            version: info.version,
            created: info.created,
            accessed: info.accessed,
            hits: info.hits,
            archived: info.archived,
            related,
        });
    }
    let mut out = Vec::new();
    let mut r = Results::new();
    for q in queries(tags) {
        store.query(&q, &mut r);
        out.push((r.ids().collect(), r.matched()));
    }
    let st = store.stats();
    let stats = vec![
        ("entries", st.entries as u64),
        ("archived", st.archived as u64),
        ("capacity", st.capacity as u64),
        ("tags", st.tags as u64),
        ("links", st.links as u64),
        ("log_bytes", st.log_bytes),
        ("live_bytes", st.live_bytes),
        ("garbage_bytes", st.garbage_bytes),
        ("oldest_created", st.oldest_created),
        ("newest_created", st.newest_created),
        ("most_accessed", st.most_accessed.map_or(u64::MAX, u64::from)),
        ("total_hits", st.total_hits),
        ("corrupt_records", st.corrupt_records),
        ("unfinished_tail_bytes", st.unfinished_tail_bytes),
        ("len", store.len() as u64),
    ];
    Snap { entries, queries: out, stats }
}

/// The first difference between two snapshots, said plainly; `None` when they are the same.
pub fn diff(got: &Snap, want: &Snap) -> Option<String> {
    if got.entries.len() != want.entries.len() {
        let gi: Vec<u32> = got.entries.iter().map(|e| e.id).collect();
        let wi: Vec<u32> = want.entries.iter().map(|e| e.id).collect();
        let only_got: Vec<_> = gi.iter().filter(|i| !wi.contains(i)).take(8).collect();
        let only_want: Vec<_> = wi.iter().filter(|i| !gi.contains(i)).take(8).collect();
        return Some(format!(
            "{} entries, want {} (ids only here {:?}, only in the full replay {:?})",
            gi.len(),
            wi.len(),
            only_got,
            only_want
        ));
    }
    for (g, w) in got.entries.iter().zip(&want.entries) {
        if g != w {
            return Some(format!("entry differs:\n  got  {:?}\n  want {:?}", g, w));
        }
    }
    for (i, (g, w)) in got.queries.iter().zip(&want.queries).enumerate() {
        if g != w {
            return Some(format!("query {} differs: got {:?}, want {:?}", i, g, w));
        }
    }
    for (g, w) in got.stats.iter().zip(&want.stats) {
        if g != w {
            return Some(format!("stats.{} is {}, want {}", g.0, g.1, w.1));
        }
    }
    None
}

/// Panics with `what` and the first difference unless the snapshots are equal.
pub fn assert_same(what: &str, got: &Snap, want: &Snap) {
    if let Some(d) = diff(got, want) {
        panic!("{}: the index differs from a full replay of the log: {}", what, d);
    }
}

/// Spawns this test binary again to run the ignored test `name` alone, with `env` set, stdout
/// piped (the child's lines) and stderr piped or dropped.
pub fn spawn_child(name: &str, env: &[(&str, String)], stderr: bool) -> Child {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", name, "--nocapture", "--ignored", "--test-threads=1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(if stderr { Stdio::piped() } else { Stdio::null() });
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// Reads the child's stdout up to and including the line `ready`; the lines before it are
/// returned. Panics if the child ends first.
pub fn wait_ready(out: &mut BufReader<ChildStdout>) -> Vec<String> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        let n = out.read_line(&mut line).unwrap();
        assert!(n > 0, "the child ended before it was ready; it said:\n{}", lines.join("\n"));
        if line.trim_end() == "ready" {
            return lines;
        }
        lines.push(line.trim_end().to_string());
    }
}

/// The rest of the child's stdout.
pub fn read_rest(mut out: BufReader<ChildStdout>) -> String {
    let mut s = String::new();
    out.read_to_string(&mut s).unwrap();
    s
}

/// The child's side: ends the harness's line (`test <name> ... ` has no newline under
/// `--nocapture`), says `ready` (the parent's clock starts there) and returns stdout, locked.
pub fn child_ready() -> StdoutLock<'static> {
    let mut out = std::io::stdout().lock();
    writeln!(out).unwrap();
    say(&mut out, "ready");
    out
}

/// The child's side: one line, flushed, so that it reaches the parent before the next write
/// begins (a kill loses nothing already said).
pub fn say(out: &mut impl Write, line: &str) {
    writeln!(out, "{}", line).unwrap();
    out.flush().unwrap();
}

/// The child's side: `W <n>`, then `write`, then `A <n>` once it returned.
pub fn acknowledged<T>(out: &mut impl Write, n: u64, write: impl FnOnce() -> T) -> T {
    say(out, &format!("W {}", n));
    let done = write();
    say(out, &format!("A {}", n));
    done
}

/// The parent's side: runs the ignored test `name` as a child with `env` (stderr dropped),
/// waits for its `ready`, kills it with SIGKILL `after` that, and returns what it said after
/// `ready`.
pub fn kill_after_ready(name: &str, env: &[(&str, String)], after: Duration) -> String {
    let mut child = spawn_child(name, env, false);
    let mut out = BufReader::new(child.stdout.take().unwrap());
    wait_ready(&mut out);
    std::thread::sleep(after);
    child.kill().unwrap();
    let rest = read_rest(out);
    child.wait().unwrap();
    rest
}

/// The parent's side, from a killed child's lines: raises `acked` past every `A <n>`, and
/// returns the write in flight (the last `W <n>`) unless it was acknowledged.
pub fn acks(rest: &str, acked: &mut u64) -> Option<u64> {
    let mut pending = None;
    for line in rest.lines() {
        if let Some(n) = line.strip_prefix("A ") {
            *acked = (*acked).max(n.parse::<u64>().unwrap() + 1);
        } else if let Some(n) = line.strip_prefix("W ") {
            pending = Some(n.parse::<u64>().unwrap());
        }
    }
    pending.filter(|&p| p >= *acked)
}

/// The child's side of the tests that save until killed: the store in `$dir_var` (capacity
/// `cap`, the capacity policy's clean-up on) and the number of its first save, `$start_var`;
/// `None` when the test runs on its own, without them.
pub fn open_saving_child(dir_var: &str, start_var: &str, cap: usize) -> Option<(Store, u64)> {
    let dir = std::env::var_os(dir_var)?;
    let start: u64 = std::env::var(start_var).unwrap().parse().unwrap();
    let mut store = Store::open_with_capacity(Path::new(&dir), cap).unwrap();
    store.set_policy(Some(Policy::default()));
    Some((store, start))
}

/// The child's side: save number `n` as the agent saves (its use noted, the cycle's upkeep
/// run), between `W <n>` and `A <n>`.
pub fn save_acknowledged(store: &mut Store, out: &mut impl Write, n: u64, key: &Key, value: &str) {
    acknowledged(out, n, || {
        store.put(key, value, 1_700_000_000 + n).unwrap();
        store.note_use(key, Use::Saved);
        store.flush_access().unwrap();
    });
}

/// Every current entry, live or cold (a cold one only where its key is not live, its newest
/// copy): key -> value. A key seen twice fails.
pub fn current(dir: &Path, cap: usize) -> BTreeMap<String, String> {
    let mut all = BTreeMap::new();
    let mut s = Store::open_read_only_with_capacity(dir, cap).unwrap();
    for id in 0..s.id_limit() {
        let Some(k) = s.key(id) else { continue };
        let v = s.value(id).unwrap().to_string();
        assert!(all.insert(k.as_str().to_string(), v).is_none(), "{} is live twice", k);
    }
    cold::scan_current(dir, &|k| s.find(k).is_some(), &mut |e| {
        let mut v = String::new();
        log::decode_str(e.value_escaped, &mut v)?;
        assert!(all.insert(e.key.as_str().to_string(), v).is_none(), "{} is current twice", e.key);
        Ok(true)
    })
    .unwrap();
    all
}
