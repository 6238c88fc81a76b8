//! The reference side of the store's query property tests (`store_props.rs`,
//! `store_index_props.rs`): tags as small sets of letters, random query specs, and the filter a
//! query applies, written out plainly (every condition on its own, no index) so that the store's
//! answers can be checked against it. How the matches are ordered is each test's own: one
//! orders by the store's clock, the other by the order its model created the entries.
//!
//! Include with `#[path = "support/store_model.rs"] mod store_model;`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use lkjagent::memory::key::Key;
use lkjagent::memory::query::{relevance_ppm, Archived, Query, Sort};
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::ops::Range;

/// The tag letters: few, so that random keys overlap.
pub const ALPHABET: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];

/// A key as the indices of its letters in [`ALPHABET`].
pub type Tags = BTreeSet<usize>;

pub fn key_of(tags: &Tags) -> Key {
    Key::from_tags(tags.iter().map(|&i| ALPHABET[i])).unwrap()
}

/// No key for no tags (a query part left out).
pub fn opt_key(tags: &Tags) -> Option<Key> {
    if tags.is_empty() {
        None
    } else {
        Some(key_of(tags))
    }
}

/// A random query: which tags it requires, allows and excludes, its ranges, its archived
/// filter and order (as indices into [`ARCHIVED`] and [`SORTS`]) and how many results it keeps.
#[derive(Clone, Debug)]
pub struct QuerySpec {
    pub required: Tags,
    pub optional: Tags,
    pub excluded: Tags,
    pub created: (u64, u64),
    pub hits: (u64, u64),
    pub archived: u8,
    pub sort: u8,
    pub max: usize,
}

pub const ARCHIVED: [Archived; 3] = [Archived::Exclude, Archived::Include, Archived::Only];
pub const SORTS: [Sort; 4] = [Sort::Newest, Sort::Oldest, Sort::MostAccessed, Sort::Relevance];

/// Query specs over the first `letters` letters of [`ALPHABET`], with these ranges and at most
/// `max` results.
pub fn query_spec(
    letters: usize,
    created: impl Strategy<Value = (u64, u64)>,
    hits: impl Strategy<Value = (u64, u64)>,
    max: Range<usize>,
) -> impl Strategy<Value = QuerySpec> {
    (
        prop::collection::btree_set(0..letters, 0..3),
        prop::collection::btree_set(0..letters, 0..3),
        prop::collection::btree_set(0..letters, 0..2),
        created,
        hits,
        0u8..3,
        0u8..4,
        max,
    )
        .prop_map(|(required, optional, excluded, created, hits, archived, sort, max)| QuerySpec {
            required,
            optional,
            excluded,
            created,
            hits,
            archived,
            sort,
            max,
        })
}

impl QuerySpec {
    pub fn sort(&self) -> Sort {
        SORTS[self.sort as usize]
    }

    pub fn archived(&self) -> Archived {
        ARCHIVED[self.archived as usize]
    }

    /// The store's query for this spec.
    pub fn query(&self) -> Query {
        Query {
            required: opt_key(&self.required),
            optional: opt_key(&self.optional),
            excluded: opt_key(&self.excluded),
            created: self.created,
            hits: self.hits,
            archived: self.archived(),
            sort: self.sort(),
            max_results: self.max,
        }
    }

    /// Whether an entry with these tags, creation time, access count and archived flag
    /// matches, and if so its relevance (parts per million).
    pub fn relevance(&self, tags: &Tags, created: u64, hits: u64, archived: bool) -> Option<u32> {
        let admitted = match self.archived() {
            Archived::Exclude => !archived,
            Archived::Include => true,
            Archived::Only => archived,
        };
        let matches = self.required.iter().all(|x| tags.contains(x))
            && (self.optional.is_empty() || self.optional.iter().any(|x| tags.contains(x)))
            && !self.excluded.iter().any(|x| tags.contains(x))
            && admitted
            && created >= self.created.0
            && created <= self.created.1
            && hits >= self.hits.0
            && hits <= self.hits.1;
        let query_set: Tags = self.required.union(&self.optional).copied().collect();
        matches.then(|| relevance_ppm(tags.intersection(&query_set).count(), tags.len(), query_set.len()))
    }
}
