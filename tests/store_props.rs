#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Property tests of the tagged store against naive reference implementations:
//!
//! - query results equal those of a brute-force filter-and-sort over a plain list of entries,
//!   on random stores (random tags from a small alphabet, so they overlap; random creation
//!   times, access counts and archive flags) and random queries;
//! - what is stored comes back exactly after the store is closed and reopened (non-ASCII text,
//!   empty values, quotes, newlines, control characters, keys of several tags).

#[path = "support/store_model.rs"]
mod store_model;
#[path = "support/temp.rs"]
mod temp;
use lkjagent::memory::key::{normalize, Key};
use lkjagent::memory::query::{Hit, Results};
use lkjagent::memory::store::Store;
use proptest::prelude::*;
use store_model::{key_of, query_spec, QuerySpec, Tags, ALPHABET};
use temp::temp_dir;

#[derive(Clone, Debug)]
struct Spec {
    tags: Tags,
    created: u64,
    hits: u8,
    archived: bool,
}

fn spec() -> impl Strategy<Value = Spec> {
    (prop::collection::btree_set(0..ALPHABET.len(), 1..5), 0u64..20, 0u8..4, prop::bool::weighted(0.2))
        .prop_map(|(tags, created, hits, archived)| Spec { tags, created, hits, archived })
}

fn qspec() -> impl Strategy<Value = QuerySpec> {
    query_spec(ALPHABET.len(), (0u64..20, 0u64..25), (0u64..3, 0u64..5), 1..12)
}

/// The reference: filter every entry, sort everything with the documented total order, cut.
fn naive(entries: &[(u32, Spec)], q: &QuerySpec) -> Vec<u32> {
    let mut hits: Vec<Hit> = entries
        .iter()
        .filter_map(|(id, e)| {
            let relevance_ppm = q.relevance(&e.tags, e.created, u64::from(e.hits), e.archived)?;
            Some(Hit { id: *id, relevance_ppm, created: e.created, hits: u64::from(e.hits) })
        })
        .collect();
    hits.sort_by(|a, b| a.order(b, q.sort()));
    hits.truncate(q.max);
    hits.into_iter().map(|h| h.id).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn query_matches_reference(specs in prop::collection::vec(spec(), 0..40), queries in prop::collection::vec(qspec(), 1..12)) {
        let dir = temp_dir("query");
        let mut store = Store::open_with_capacity(&dir, 64).unwrap();
        // Later specs with the same tags overwrite earlier ones, as in the store.
        let mut model: Vec<(u32, Spec)> = Vec::new();
        for s in &specs {
            let key = key_of(&s.tags);
            let put = store.put(&key, "v", s.created).unwrap();
            let mut s = s.clone();
            let touches = s.hits;
            if let Some(pos) = model.iter().position(|(id, _)| *id == put.id) {
                // Storing again keeps the creation time and the access count.
                let old = model.remove(pos).1;
                s.created = old.created;
                s.hits = s.hits.saturating_add(old.hits);
            }
            for _ in 0..touches {
                store.touch(put.id, 100);
            }
            let was_archived = store.info(put.id).unwrap().archived;
            if s.archived != was_archived {
                store.set_archived(&key, s.archived, 100).unwrap();
            }
            model.push((put.id, s));
        }
        // The store reopened from disk must answer the same (touches flushed first).
        store.flush_access().unwrap();
        let reopened = Store::open_with_capacity(&dir, 64).unwrap();
        let mut results = Results::with_capacity(16);
        for q in &queries {
            let query = q.query();
            let want = naive(&model, q);
            for s in [&store, &reopened] {
                s.query(&query, &mut results);
                let got: Vec<u32> = results.ids().collect();
                prop_assert_eq!(&got, &want, "query {:?}", q);
            }
        }
        drop(store);
        drop(reopened);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stored_text_comes_back_exactly(
        items in prop::collection::vec(
            (prop::collection::vec("[a-zA-Z0-9 é日.\\[\\]\"\\\\_-]{1,12}", 1..4),
             prop_oneof![Just(String::new()), "\\PC{0,40}", "[\"\\\\\n\r\t\u{0}\u{1f}é→😀 ]{0,20}"]),
            1..20)
    ) {
        let dir = temp_dir("exact");
        let mut store = Store::open_with_capacity(&dir, 64).unwrap();
        let mut model: Vec<(Key, String)> = Vec::new();
        for (tags, value) in &items {
            let Ok(key) = normalize(&tags.join(",")) else { continue };
            store.put(&key, value, 1).unwrap();
            model.retain(|(k, _)| *k != key);
            model.push((key, value.clone()));
        }
        drop(store);
        let mut store = Store::open_with_capacity(&dir, 64).unwrap();
        prop_assert_eq!(store.len(), model.len());
        for (key, value) in &model {
            let got = store.load(key, 2).unwrap().map(str::to_string);
            prop_assert_eq!(got.as_deref(), Some(value.as_str()));
        }
        // Compaction keeps every byte too.
        store.compact().unwrap();
        for (key, value) in &model {
            let id = store.find(key).unwrap();
            prop_assert_eq!(store.value(id).unwrap(), value.as_str());
        }
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
