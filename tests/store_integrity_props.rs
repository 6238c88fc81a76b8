//! Issue 41's property test: random sequences of save, save of a cold key, overwrite, delete,
//! retag, clean-up, restore, archive, link, compaction and reopen against a plain model of
//! what the user did (a map from key to its one current value, live or cold). After every
//! step the store agrees with the model: each key's value and tier, the archived flags, the
//! links; and at the end an export imported into an empty directory gives the same entries,
//! cold tier, links and times (its own export is the same text).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "support/temp.rs"]
mod temp;

use lkjagent::error::Code;
use lkjagent::memory::era_b;
use lkjagent::memory::file::{MemoryFile, Overflow};
use lkjagent::memory::key::{normalize, Key};
use lkjagent::memory::store::cleanup::{Filter, Restored};
use lkjagent::memory::store::{cold, Cleanup, Store};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const KEYS: [&str; 6] = ["k,a", "k,b", "k,c", "d", "e,f", "g"];

fn key(i: usize) -> Key {
    normalize(KEYS[i % KEYS.len()]).unwrap()
}

#[derive(Clone, Debug)]
enum Op {
    Save(usize, u8),
    Delete(usize),
    Retag(usize, usize),
    CleanupAll,
    Restore(usize),
    Archive(usize, bool),
    Link(usize, usize),
    Compact,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    let i = 0..KEYS.len();
    prop_oneof![
        4 => (i.clone(), any::<u8>()).prop_map(|(k, v)| Op::Save(k, v % 4)),
        1 => i.clone().prop_map(Op::Delete),
        1 => (i.clone(), i.clone()).prop_map(|(a, b)| Op::Retag(a, b)),
        1 => Just(Op::CleanupAll),
        1 => i.clone().prop_map(Op::Restore),
        1 => (i.clone(), any::<bool>()).prop_map(|(k, on)| Op::Archive(k, on)),
        1 => (i.clone(), i).prop_map(|(a, b)| Op::Link(a, b)),
        1 => Just(Op::Compact),
        1 => Just(Op::Reopen),
    ]
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    value: String,
    cold: bool,
    archived: bool,
}

/// What the user did: each key's one current value, whether older copies of it may wait in
/// the cold store (for `restore` of a live key), the links between live keys, and the links
/// that went to the cold store with their ends (each comes back when one of its ends is
/// restored while the other is live).
#[derive(Default)]
struct Model {
    entries: BTreeMap<String, Entry>,
    cold_copies: BTreeSet<String>,
    links: BTreeSet<(String, String)>,
    cold_links: BTreeSet<(String, String)>,
}

impl Model {
    fn live(&self, k: &Key) -> bool {
        self.entries.get(k.as_str()).is_some_and(|e| !e.cold)
    }

    fn unlink(&mut self, k: &str) {
        self.links.retain(|(a, b)| a != k && b != k);
        self.cold_links.retain(|(a, b)| a != k && b != k);
    }
}

fn pair(a: &Key, b: &Key) -> (String, String) {
    let (a, b) = (a.as_str().to_string(), b.as_str().to_string());
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// The store as the model sees it: every current entry, live or cold, and the links.
fn observe(s: &mut Store) -> (BTreeMap<String, Entry>, BTreeSet<(String, String)>) {
    let mut seen = BTreeMap::new();
    for id in 0..s.id_limit() {
        let Some(info) = s.info(id) else { continue };
        let value = s.value(id).unwrap().to_string();
        seen.insert(info.key.as_str().to_string(), Entry { value, cold: false, archived: info.archived });
    }
    cold::scan_current(s.dir(), &|k| s.find(k).is_some(), &mut |e| {
        let mut value = String::new();
        lkjagent::memory::log::decode_str(e.value_escaped, &mut value)?;
        let old = seen.insert(e.key.as_str().to_string(), Entry { value, cold: true, archived: e.head.archived });
        assert!(old.is_none(), "{} shown twice", e.key);
        Ok(true)
    })
    .unwrap();
    let links = s.link_pairs().iter().map(|&(a, b)| pair(&s.key(a).unwrap(), &s.key(b).unwrap())).collect();
    (seen, links)
}

fn apply(s: &mut Store, m: &mut Model, op: &Op, now: u64) {
    match *op {
        Op::Save(i, v) => {
            let k = key(i);
            let value = format!("value {} of {}", v, k);
            s.put(&k, &value, now).unwrap();
            let archived = m.live(&k) && m.entries[k.as_str()].archived;
            if !m.live(&k) && m.entries.contains_key(k.as_str()) {
                // A save of a cold key: the live value supersedes the cold one.
                m.cold_copies.insert(k.as_str().to_string());
            }
            m.entries.insert(k.as_str().to_string(), Entry { value, cold: false, archived });
        }
        Op::Delete(i) => {
            let k = key(i);
            match s.delete(&k) {
                Ok(_) => {
                    assert!(m.entries.remove(k.as_str()).is_some(), "deleted {} the model lacks", k);
                    m.cold_copies.remove(k.as_str());
                    m.unlink(k.as_str());
                }
                Err(e) => {
                    assert_eq!(e.code(), Code::NotFound, "{}", e.message());
                    assert!(!m.entries.contains_key(k.as_str()), "{}: {}", k, e.message());
                }
            }
        }
        Op::Retag(i, j) => {
            let (a, b) = (key(i), key(j));
            let res = s.retag(&a, &b, now);
            let expect_ok = m.live(&a) && (a == b || !m.entries.contains_key(b.as_str()));
            match res {
                Ok(_) => {
                    assert!(expect_ok, "retag {} -> {} succeeded", a, b);
                    if a != b {
                        let e = m.entries.remove(a.as_str()).unwrap();
                        m.entries.insert(b.as_str().to_string(), e);
                        m.cold_copies.remove(a.as_str());
                        let links: Vec<_> = m.links.iter().cloned().collect();
                        m.links = links
                            .into_iter()
                            .map(|(x, y)| {
                                let r = |t: String| if t == a.as_str() { b.as_str().to_string() } else { t };
                                let (x, y) = (r(x), r(y));
                                if x <= y {
                                    (x, y)
                                } else {
                                    (y, x)
                                }
                            })
                            .collect();
                    }
                }
                Err(e) => assert!(!expect_ok, "retag {} -> {}: {}", a, b, e.message()),
            }
        }
        Op::CleanupAll => {
            let n =
                s.cleanup_where(&Filter { accessed_before: Some(u64::MAX), max_hits: None }, Cleanup::Cold).unwrap();
            let live: Vec<String> = m.entries.iter().filter(|(_, e)| !e.cold).map(|(k, _)| k.clone()).collect();
            assert_eq!(n, live.len());
            for k in live {
                m.entries.get_mut(&k).unwrap().cold = true;
                m.cold_copies.insert(k.clone());
            }
            // Every live entry went: its links wait in the cold store.
            let moved = std::mem::take(&mut m.links);
            m.cold_links.extend(moved);
        }
        Op::Restore(i) => {
            let k = key(i);
            let res = s.restore(&k);
            match m.entries.get_mut(k.as_str()) {
                Some(e) if e.cold => {
                    assert!(matches!(res, Ok(Restored::Back(_))), "{:?}", res.map_err(|e| e.message().to_string()));
                    e.cold = false;
                    m.cold_copies.remove(k.as_str());
                    // Its links to live entries come back; those to cold ones wait.
                    let back: Vec<_> = m
                        .cold_links
                        .iter()
                        .filter(|(a, b)| {
                            let other = if a == k.as_str() {
                                b
                            } else if b == k.as_str() {
                                a
                            } else {
                                return false;
                            };
                            m.live(&normalize(other).unwrap())
                        })
                        .cloned()
                        .collect();
                    for l in back {
                        m.cold_links.remove(&l);
                        m.links.insert(l);
                    }
                }
                Some(_) if m.cold_copies.contains(k.as_str()) => {
                    assert!(res.is_ok(), "{:?}", res.map_err(|e| e.message().to_string()));
                    m.cold_copies.remove(k.as_str());
                }
                _ => assert_eq!(res.map_err(|e| e.code()).err(), Some(Code::NotFound)),
            }
        }
        Op::Archive(i, on) => {
            let k = key(i);
            let res = s.set_archived(&k, on, now);
            match m.entries.get_mut(k.as_str()) {
                Some(e) if !e.cold => {
                    res.unwrap();
                    e.archived = on;
                }
                _ => assert_eq!(res.map_err(|e| e.code()).err(), Some(Code::NotFound)),
            }
        }
        Op::Link(i, j) => {
            let (a, b) = (key(i), key(j));
            if a != b && m.live(&a) && m.live(&b) {
                let (ia, ib) = (s.find(&a).unwrap(), s.find(&b).unwrap());
                s.link(ia, ib).unwrap();
                m.links.insert(pair(&a, &b));
            }
        }
        Op::Compact => {
            s.compact().unwrap();
        }
        Op::Reopen => {}
    }
}

fn agree(s: &mut Store, m: &Model, step: &str) {
    let (seen, links) = observe(s);
    assert_eq!(seen, m.entries, "after {}", step);
    assert_eq!(links, m.links, "links after {}", step);
}

fn export_text(s: &mut Store) -> String {
    let mut out = String::new();
    era_b::export(Some(s), Some(&MemoryFile::new()), Overflow::none(), &mut out).unwrap();
    out
}

fn run(dir: &Path, ops: &[Op]) {
    let a = dir.join("a");
    std::fs::create_dir_all(&a).unwrap();
    let mut s = Store::open_with_capacity(&a, 64).unwrap();
    let mut m = Model::default();
    for (n, op) in ops.iter().enumerate() {
        let now = 1_000 + n as u64;
        if matches!(op, Op::Reopen) {
            s.close().unwrap();
            s = Store::open_with_capacity(&a, 64).unwrap();
        } else {
            apply(&mut s, &mut m, op, now);
        }
        agree(&mut s, &m, &format!("step {} {:?}", n, op));
    }
    // Export, then import into an empty directory: the same entries, cold tier, links, times.
    let text = export_text(&mut s);
    let b = dir.join("b");
    std::fs::create_dir_all(&b).unwrap();
    let mut t = Store::open_with_capacity(&b, 64).unwrap();
    era_b::import(text.as_bytes(), &mut t, &mut MemoryFile::new(), 99_999).unwrap();
    agree(&mut t, &m, "the import");
    assert_eq!(export_text(&mut t), text, "the import's own export");
    t.close().unwrap();
    let mut t = Store::open_with_capacity(&b, 64).unwrap();
    agree(&mut t, &m, "the import, reopened");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_store_agrees_with_what_the_user_did(ops in proptest::collection::vec(op(), 1..40)) {
        let d = temp::TempDir::new("integrity-props");
        run(d.path(), &ops);
    }
}
