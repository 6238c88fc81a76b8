#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! A version 1 store log, written by hand (ids were reused slots then, not creation order):
//! a read-only open reads it and writes nothing; the writer's open rewrites it as version 2
//! with ids in creation order (by creation time, then by where each entry was created in the
//! log), every value, version, time, count, flag and link kept, and a checkpoint of the new log.

#[path = "support/store.rs"]
mod store_support;
#[path = "support/temp.rs"]
mod temp;

use lkjagent::memory::hash::crc32;
use lkjagent::memory::log::{self, Record};
use lkjagent::memory::query::{Archived, Query, Results, Sort};
use lkjagent::memory::store::{Store, LOG_NAME};
use std::fs;
use std::path::Path;
use store_support::{files, key, snapshot, Entry, TempDir};

/// One framed record: the CRC-32 of the JSON in 8 lower-case hex digits, a space, the JSON, a
/// newline (`memory::log`).
fn line(json: &str) -> String {
    format!("{:08x} {}\n", crc32(json.as_bytes()), json)
}

#[allow(clippy::too_many_arguments)]
fn put(
    id: u32,
    ver: u32,
    created: u64,
    accessed: u64,
    hits: u64,
    archived: bool,
    tags: &[&str],
    value: &str,
) -> String {
    let tags: Vec<String> = tags.iter().map(|t| format!("\"{}\"", t)).collect();
    line(&format!(
        "{{\"op\":\"put\",\"id\":{},\"ver\":{},\"created\":{},\"accessed\":{},\"hits\":{},\"archived\":{},\"tags\":[{}],\"value\":\"{}\"}}",
        id,
        ver,
        created,
        accessed,
        hits,
        archived,
        tags.join(","),
        value
    ))
}

/// A version 1 log: slot 0 used, freed and used again by a newer entry; a gap in the ids; an
/// entry older than all the others in a high slot; two entries created in the same second.
fn v1_log() -> String {
    [
        line(r#"{"op":"header","format":"lkjagent-store","version":1}"#),
        put(0, 1, 100, 100, 0, false, &["alpha"], "first alpha, deleted later"),
        put(1, 1, 200, 200, 0, false, &["beta"], "beta v1"),
        put(2, 1, 300, 300, 0, false, &["delta"], "delta: same second as gamma, written before it"),
        line(r#"{"op":"del","id":0}"#),
        line(r#"{"op":"touch","id":1,"accessed":250,"hits":3}"#),
        put(0, 1, 300, 300, 0, false, &["gamma", "reused"], "gamma reuses slot 0"),
        line(r#"{"op":"link","a":0,"b":1}"#),
        line(r#"{"op":"link","a":1,"b":2}"#),
        put(1, 2, 200, 260, 3, false, &["beta"], "beta v2 \\\"quoted\\\" \\u00e9"),
        put(5, 4, 50, 70, 9, true, &["epsilon", "old"], "the oldest entry, archived, in slot 5"),
    ]
    .concat()
}

/// (key, value, version, created, accessed, hits, archived) in creation order.
fn expected() -> Vec<(&'static str, &'static str, u32, u64, u64, u64, bool)> {
    vec![
        ("epsilon,old", "the oldest entry, archived, in slot 5", 4, 50, 70, 9, true),
        ("beta", "beta v2 \"quoted\" é", 2, 200, 260, 3, false),
        ("delta", "delta: same second as gamma, written before it", 1, 300, 300, 0, false),
        ("gamma,reused", "gamma reuses slot 0", 1, 300, 300, 0, false),
    ]
}

fn fields(e: &Entry) -> (String, String, u32, u64, u64, u64, bool) {
    (e.key.clone(), e.value.clone().unwrap(), e.version, e.created, e.accessed, e.hits, e.archived)
}

fn want_fields() -> Vec<(String, String, u32, u64, u64, u64, bool)> {
    expected().into_iter().map(|(k, v, ver, c, a, h, ar)| (k.into(), v.into(), ver, c, a, h, ar)).collect()
}

fn header(dir: &Path) -> (u64, u64) {
    let bytes = fs::read(dir.join(LOG_NAME)).unwrap();
    let nl = bytes.iter().position(|&b| b == b'\n').unwrap();
    match log::decode(&bytes[..nl]).unwrap() {
        Record::Header { version, store } => (version, store),
        r => panic!("first record is {:?}", r),
    }
}

fn newest_first(store: &Store) -> Vec<String> {
    let mut r = Results::new();
    store.query(&Query { sort: Sort::Newest, archived: Archived::Include, ..Query::default() }, &mut r);
    r.ids().map(|id| store.key(id).unwrap().to_string()).collect()
}

#[test]
fn version_1_log_is_read_read_only_and_upgraded_by_the_writer() {
    let t = TempDir::new("store-v1");
    let dir = t.path();
    fs::write(dir.join(LOG_NAME), v1_log()).unwrap();
    assert_eq!(header(dir).0, 1);

    // Read-only: every entry and value, the v1 slot ids as they are, nothing written.
    let before = files(dir);
    let mut s = Store::open_read_only_with_capacity(dir, 64).unwrap();
    let snap = snapshot(&mut s, &[]);
    let mut got: Vec<_> = snap.entries.iter().map(fields).collect();
    got.sort_by_key(|f| f.0.clone());
    let mut want = want_fields();
    want.sort_by_key(|f| f.0.clone());
    assert_eq!(got, want, "a read-only open of a version 1 log");
    assert_eq!(s.ids().collect::<Vec<_>>(), [0, 1, 2, 5], "read-only: the log's own (slot) ids");
    assert!(s.linked(0, 1) && s.linked(1, 2) && !s.linked(0, 2));
    assert!(!s.stats().from_checkpoint);
    assert!(s.put(&key("x"), "y", 1).is_err(), "a read-only store refuses writes");
    drop(s);
    assert!(files(dir) == before, "a read-only open of a version 1 log changed the directory");

    // A checkpoint file beside a version 1 log (say, another store's) is not used.
    let other = TempDir::new("store-v1-other");
    let mut o = Store::open_with_capacity(other.path(), 64).unwrap();
    o.put(&key("beta"), "foreign", 1).unwrap();
    o.close().unwrap();
    fs::copy(other.path().join("store.ckpt"), dir.join("store.ckpt")).unwrap();
    let before = files(dir);
    let mut s = Store::open_read_only_with_capacity(dir, 64).unwrap();
    assert!(!s.stats().from_checkpoint);
    let mut got: Vec<_> = snapshot(&mut s, &[]).entries.iter().map(fields).collect();
    got.sort_by_key(|f| f.0.clone());
    assert_eq!(got, want, "a stray checkpoint changes nothing");
    drop(s);
    assert!(files(dir) == before);

    // The writer: rewritten as version 2, ids in creation order, everything kept.
    let mut s = Store::open_with_capacity(dir, 64).unwrap();
    let (version, store_id) = header(dir);
    assert_eq!(version, 2, "the writer's open rewrites the log as version 2");
    assert_ne!(store_id, 0, "a version 2 log has a store id");
    assert_eq!(s.ids().collect::<Vec<_>>(), [0, 1, 2, 3], "dense ids");
    let snap = snapshot(&mut s, &[]);
    assert_eq!(snap.entries.iter().map(fields).collect::<Vec<_>>(), want_fields(), "creation order, all kept");
    // Links follow their entries to the new ids: gamma(3)-beta(1), beta(1)-delta(2).
    assert!(s.linked(3, 1) && s.linked(1, 2) && !s.linked(3, 2) && s.stats().links == 2);
    assert_eq!(newest_first(&s), ["gamma,reused", "delta", "beta", "epsilon,old"]);
    assert_eq!(s.load(&key("reused,gamma"), 400).unwrap(), Some("gamma reuses slot 0"));
    let text = fs::read_to_string(dir.join(LOG_NAME)).unwrap();
    assert!(!text.contains("alpha"), "the deleted entry is gone from the rewritten log");
    assert!(!text.contains("\"version\":1"), "{}", text);
    assert!(!dir.join(".store.log.compact").exists());
    // A new entry is the newest.
    s.put(&key("zeta"), "after the upgrade", 350).unwrap();
    assert_eq!(newest_first(&s)[0], "zeta");
    s.close().unwrap();

    // The next open reads version 2 from its checkpoint and rewrites nothing.
    let log_before = fs::read(dir.join(LOG_NAME)).unwrap();
    let mut s = Store::open_with_capacity(dir, 64).unwrap();
    assert!(s.stats().from_checkpoint);
    assert_eq!(newest_first(&s), ["zeta", "gamma,reused", "delta", "beta", "epsilon,old"]);
    assert_eq!(s.info(1).unwrap().hits, 3);
    assert_eq!(s.value(1).unwrap(), "beta v2 \"quoted\" é");
    drop(s);
    assert_eq!(fs::read(dir.join(LOG_NAME)).unwrap(), log_before);
    assert_eq!(header(dir), (2, store_id));
}

#[test]
fn version_1_log_with_a_torn_tail() {
    let t = TempDir::new("store-v1-torn");
    let dir = t.path();
    let full = v1_log();
    let torn = put(7, 1, 900, 900, 0, false, &["torn"], "never finished");
    let text = format!("{}{}", full, &torn[..torn.len() / 2]);
    fs::write(dir.join(LOG_NAME), &text).unwrap();

    let before = files(dir);
    let s = Store::open_read_only_with_capacity(dir, 64).unwrap();
    assert_eq!(s.len(), 4);
    assert_eq!(s.stats().unfinished_tail_bytes, (torn.len() / 2) as u64);
    drop(s);
    assert!(files(dir) == before, "read-only: the unfinished tail is left alone");

    let mut s = Store::open_with_capacity(dir, 64).unwrap();
    assert_eq!(header(dir).0, 2);
    let snap = snapshot(&mut s, &[]);
    assert_eq!(snap.entries.iter().map(fields).collect::<Vec<_>>(), want_fields());
    assert!(s.find(&key("torn")).is_none());
    assert_eq!(s.stats().corrupt_records, 0);
}
