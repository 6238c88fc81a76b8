#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! The store's posting lists against a brute-force scan: random sequences of changes (creates,
//! overwrites, deletes, archiving, retags, accesses, compactions, reopenings with and without
//! the checkpoint), then random queries, compared by key with a plain model whose order is its
//! own: "newest" is the order in which the model created each entry (a delete and a new save
//! is a new entry), never a clock.

#[path = "support/store_model.rs"]
mod store_model;
#[path = "support/temp.rs"]
mod temp;
use lkjagent::memory::key::Key;
use lkjagent::memory::query::{Results, Sort};
use lkjagent::memory::store::Store;
use proptest::prelude::*;
use std::collections::BTreeMap;
use store_model::{key_of, query_spec, QuerySpec, Tags, ALPHABET};
use temp::temp_dir;

/// How many of [`ALPHABET`]'s letters this test's keys use.
const LETTERS: usize = 7;

#[derive(Clone, Debug)]
enum Op {
    Put(Tags, u64),
    Delete(Tags),
    Archive(Tags, bool),
    AddTag(Tags, usize),
    RemoveTag(Tags, usize),
    Touch(Tags),
    Compact,
    Reopen { drop_checkpoint: bool },
}

fn tags() -> impl Strategy<Value = Tags> {
    prop::collection::btree_set(0..LETTERS, 1..4)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (tags(), 0u64..30).prop_map(|(t, c)| Op::Put(t, c)),
        2 => tags().prop_map(Op::Delete),
        1 => (tags(), any::<bool>()).prop_map(|(t, a)| Op::Archive(t, a)),
        1 => (tags(), 0..LETTERS).prop_map(|(t, x)| Op::AddTag(t, x)),
        1 => (tags(), 0..LETTERS).prop_map(|(t, x)| Op::RemoveTag(t, x)),
        2 => tags().prop_map(Op::Touch),
        1 => Just(Op::Compact),
        1 => any::<bool>().prop_map(|d| Op::Reopen { drop_checkpoint: d }),
    ]
}

#[derive(Clone, Debug)]
struct Entry {
    seq: u64,
    created: u64,
    hits: u64,
    archived: bool,
}

fn q() -> impl Strategy<Value = QuerySpec> {
    query_spec(
        LETTERS,
        prop_oneof![Just((0u64, u64::MAX)), (0u64..30, 0u64..35)],
        prop_oneof![Just((0u64, u64::MAX)), (0u64..3, 0u64..5)],
        1..10,
    )
}

/// The brute-force answer, as keys, best first, and the number of matches.
fn naive(model: &BTreeMap<Tags, Entry>, q: &QuerySpec) -> (Vec<String>, usize) {
    let mut hits: Vec<(&Tags, &Entry, u32)> =
        model.iter().filter_map(|(t, e)| Some((t, e, q.relevance(t, e.created, e.hits, e.archived)?))).collect();
    // Newer = later created by the model (higher seq).
    hits.sort_by(|a, b| match q.sort() {
        Sort::Newest => b.1.seq.cmp(&a.1.seq),
        Sort::Oldest => a.1.seq.cmp(&b.1.seq),
        Sort::MostAccessed => b.1.hits.cmp(&a.1.hits).then(b.1.seq.cmp(&a.1.seq)),
        Sort::Relevance => b.2.cmp(&a.2).then(b.1.seq.cmp(&a.1.seq)),
    });
    let matched = hits.len();
    (hits.into_iter().take(q.max).map(|(t, _, _)| key_of(t).as_str().to_string()).collect(), matched)
}

fn check_queries(store: &Store, model: &BTreeMap<Tags, Entry>, queries: &[QuerySpec]) -> Result<(), TestCaseError> {
    let mut results = Results::with_capacity(16);
    prop_assert_eq!(store.len(), model.len());
    for q in queries {
        let sort = q.sort();
        let query = q.query();
        store.query(&query, &mut results);
        let got: Vec<String> = results.ids().map(|id| store.key(id).unwrap().as_str().to_string()).collect();
        let (want, matched) = naive(model, q);
        prop_assert_eq!(&got, &want, "query {:?}", q);
        if results.truncated() {
            // Newest or oldest first stops when the results are full: the count is a lower
            // bound (more may match).
            prop_assert!(matches!(sort, Sort::Newest | Sort::Oldest), "query {:?}", q);
            prop_assert!(results.matched() >= got.len() && results.matched() <= matched, "matched, query {:?}", q);
        } else {
            prop_assert_eq!(results.matched(), matched, "matched, query {:?}", q);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn posting_lists_agree_with_a_brute_force_scan(
        ops in prop::collection::vec(op(), 1..80),
        queries in prop::collection::vec(q(), 1..10),
    ) {
        let dir = temp_dir("lists");
        let mut store = Store::open_with_capacity(&dir, 64).unwrap();
        let mut model: BTreeMap<Tags, Entry> = BTreeMap::new();
        let mut seq = 0u64;
        for op in &ops {
            match op {
                Op::Put(t, created) => {
                    store.put(&key_of(t), "v", *created).unwrap();
                    if !model.contains_key(t) {
                        seq += 1;
                        model.insert(t.clone(), Entry { seq, created: *created, hits: 0, archived: false });
                    }
                }
                Op::Delete(t) => {
                    let r = store.delete(&key_of(t));
                    prop_assert_eq!(r.is_ok(), model.remove(t).is_some());
                }
                Op::Archive(t, a) => {
                    let r = store.set_archived(&key_of(t), *a, 50);
                    match model.get_mut(t) {
                        Some(e) => {
                            prop_assert!(r.is_ok());
                            e.archived = *a;
                        }
                        None => prop_assert!(r.is_err()),
                    }
                }
                Op::AddTag(t, x) | Op::RemoveTag(t, x) => {
                    let mut new = t.clone();
                    let add = matches!(op, Op::AddTag(..));
                    if add { new.insert(*x); } else { new.remove(x); }
                    let extra = Key::from_tags([ALPHABET[*x]]).unwrap();
                    let r = if add {
                        store.add_tags(&key_of(t), &extra, 60)
                    } else {
                        store.remove_tags(&key_of(t), &extra, 60)
                    };
                    let possible = model.contains_key(t) && !new.is_empty() && (new == *t || !model.contains_key(&new));
                    prop_assert_eq!(r.is_ok(), possible, "{:?} -> {:?}: {:?}", t, new, r);
                    if possible && new != *t {
                        let e = model.remove(t).unwrap();
                        model.insert(new, e);
                    }
                }
                Op::Touch(t) => {
                    if let Some(id) = store.find(&key_of(t)) {
                        store.touch(id, 70);
                        model.get_mut(t).unwrap().hits += 1;
                    } else {
                        prop_assert!(!model.contains_key(t));
                    }
                }
                Op::Compact => {
                    store.compact().unwrap();
                }
                Op::Reopen { drop_checkpoint } => {
                    store.close().unwrap();
                    if *drop_checkpoint {
                        let _ = std::fs::remove_file(dir.join("store.ckpt"));
                    }
                    store = Store::open_with_capacity(&dir, 64).unwrap();
                    prop_assert_eq!(store.stats().from_checkpoint, !*drop_checkpoint);
                }
            }
        }
        check_queries(&store, &model, &queries)?;
        // The same answers from the checkpoint and from a full replay of the log.
        store.close().unwrap();
        let from_checkpoint = Store::open_with_capacity(&dir, 64).unwrap();
        prop_assert!(from_checkpoint.stats().from_checkpoint);
        check_queries(&from_checkpoint, &model, &queries)?;
        drop(from_checkpoint);
        std::fs::remove_file(dir.join("store.ckpt")).unwrap();
        let replayed = Store::open_with_capacity(&dir, 64).unwrap();
        prop_assert!(!replayed.stats().from_checkpoint);
        check_queries(&replayed, &model, &queries)?;
        drop(replayed);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
