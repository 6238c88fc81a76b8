#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Property test of the working set against a plain `Vec` model: after any sequence of adds,
//! overwrites, removes and touches, the entries (order, text, metadata), the text budget and
//! the least-recently-used choice are what the model says; refused adds change nothing.

use lkjagent::memory::key::{normalize, Key};
use lkjagent::memory::working::{WorkingMeta, WorkingSet};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Add(u8, String),
    Remove(u8),
    Touch(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..12, "\\PC{0,12}").prop_map(|(k, t)| Op::Add(k, t)),
        1 => (0u8..12).prop_map(Op::Remove),
        1 => (0u8..12).prop_map(Op::Touch),
    ]
}

fn key(k: u8) -> Key {
    normalize(&format!("Key {}, shared", k)).unwrap()
}

const MAX_ENTRIES: usize = 8;
const MAX_TEXT: usize = 40;

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn working_set_matches_model(ops in prop::collection::vec(op(), 0..60)) {
        let mut w = WorkingSet::with_capacity(MAX_ENTRIES, MAX_TEXT);
        let mut model: Vec<(Key, String, WorkingMeta)> = Vec::new();
        for (now, op) in ops.iter().enumerate() {
            let now = now as u64;
            match op {
                Op::Add(k, t) => {
                    let k = key(*k);
                    let pos = model.iter().position(|(mk, _, _)| *mk == k);
                    let used: usize = model.iter().map(|(_, t, _)| t.len()).sum();
                    let old = pos.map_or(0, |i| model[i].1.len());
                    let fits = used - old + t.len() <= MAX_TEXT && (pos.is_some() || model.len() < MAX_ENTRIES);
                    let res = w.add(&k, t, now);
                    prop_assert_eq!(res.is_ok(), fits);
                    if fits {
                        match pos {
                            Some(i) => {
                                model[i].1 = t.clone();
                                model[i].2.updated = now;
                            }
                            None => model.push((k, t.clone(), WorkingMeta { created: now, updated: now, hits: 0 })),
                        }
                    }
                }
                Op::Remove(k) => {
                    let k = key(*k);
                    let pos = model.iter().position(|(mk, _, _)| *mk == k);
                    prop_assert_eq!(w.remove(&k), pos.is_some());
                    if let Some(i) = pos {
                        model.remove(i);
                    }
                }
                Op::Touch(k) => {
                    let k = key(*k);
                    let pos = model.iter().position(|(mk, _, _)| *mk == k);
                    prop_assert_eq!(w.touch(&k, now), pos.is_some());
                    if let Some(i) = pos {
                        model[i].2.hits += 1;
                        model[i].2.updated = now;
                    }
                }
            }
            let got: Vec<_> = w.iter().map(|(k, t, m)| (*k, t.to_string(), m)).collect();
            prop_assert_eq!(&got, &model);
            prop_assert_eq!(w.text_bytes(), model.iter().map(|(_, t, _)| t.len()).sum::<usize>());
            let lru = model.iter().enumerate().min_by_key(|(i, (_, _, m))| (m.updated, m.hits, *i)).map(|(_, (k, _, _))| *k);
            prop_assert_eq!(w.lru(|_| false), lru);
        }
    }
}
