//! Store queries: what to match ([`Query`]) and where the answers go ([`Results`]).
//!
//! A query filters on tags (all `required`, at least one `optional` if any are given, none of
//! `excluded`), creation time and access count ranges (inclusive), and the archived flag, then
//! keeps the best `max_results` in the chosen [`Sort`] order. Orders are total (ties fall back
//! to the entry id), so a query's answer is fully determined by the store's contents: the
//! property tests compare it with a naive reference implementation.
//!
//! "Newest" is creation order, not the clock: the store numbers entries in the order it
//! creates them ([`EntryId`]) and keeps that order across restarts and compaction, so entries
//! saved in the same second, or after the clock stepped back, still come out newest first.
//!
//! Relevance is the Jaccard similarity of the entry's tag set and the query's `required` and
//! `optional` tags together: |shared| / |either|, in parts per million. It favours entries that
//! carry many of the asked tags and few others, and needs no corpus statistics.
//!
//! [`Results`] is reserved once by the caller and reused across queries: a query allocates
//! nothing.

use crate::limits::STORE_QUERY_MAX_RESULTS;
use crate::memory::key::Key;
use core::cmp::Ordering;

/// An entry's id: its creation sequence number. The store hands ids out in increasing order as
/// it creates entries and renumbers them densely, in the same order, when it compacts; a higher
/// id is a newer entry. Ids live in RAM and in the store's log only, never in files a user
/// edits.
pub type EntryId = u32;

/// Result order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Sort {
    /// Newest first (creation order, see the module documentation).
    #[default]
    Newest,
    /// Oldest first.
    Oldest,
    /// Most accessed first.
    MostAccessed,
    /// Highest relevance first, then newest.
    Relevance,
}

/// Which entries the archived flag lets through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Archived {
    /// Only entries that are not archived (the default).
    #[default]
    Exclude,
    /// Both.
    Include,
    /// Only archived entries.
    Only,
}

impl Archived {
    /// Whether an entry with this flag passes.
    pub fn admits(self, archived: bool) -> bool {
        match self {
            Archived::Exclude => !archived,
            Archived::Include => true,
            Archived::Only => archived,
        }
    }
}

/// A query. `Query::default()` matches every non-archived entry, newest first, up to
/// [`STORE_QUERY_MAX_RESULTS`].
#[derive(Clone, Copy, Debug)]
pub struct Query {
    /// Tags an entry must all carry (AND).
    pub required: Option<Key>,
    /// Tags of which an entry must carry at least one, when given (OR).
    pub optional: Option<Key>,
    /// Tags an entry must not carry (NOT).
    pub excluded: Option<Key>,
    /// Inclusive range of `created`.
    pub created: (u64, u64),
    /// Inclusive range of the access count.
    pub hits: (u64, u64),
    /// Archived filter.
    pub archived: Archived,
    /// Order.
    pub sort: Sort,
    /// Most results kept (capped at [`STORE_QUERY_MAX_RESULTS`] and the results' capacity).
    pub max_results: usize,
}

impl Default for Query {
    fn default() -> Self {
        Query {
            required: None,
            optional: None,
            excluded: None,
            created: (0, u64::MAX),
            hits: (0, u64::MAX),
            archived: Archived::Exclude,
            sort: Sort::Newest,
            max_results: STORE_QUERY_MAX_RESULTS,
        }
    }
}

/// One answer: an entry, and what it was ranked by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Hit {
    /// The entry.
    pub id: EntryId,
    /// Relevance in parts per million (0 when the query has no required or optional tags).
    pub relevance_ppm: u32,
    /// The entry's `created`.
    pub created: u64,
    /// The entry's access count.
    pub hits: u64,
}

impl Hit {
    /// `Less` when `self` comes before `other` in `sort` order.
    pub fn order(&self, other: &Hit, sort: Sort) -> Ordering {
        let primary = match sort {
            Sort::Newest => other.id.cmp(&self.id),
            Sort::Oldest => self.id.cmp(&other.id),
            Sort::MostAccessed => other.hits.cmp(&self.hits).then_with(|| other.id.cmp(&self.id)),
            Sort::Relevance => other.relevance_ppm.cmp(&self.relevance_ppm).then_with(|| other.id.cmp(&self.id)),
        };
        primary.then_with(|| self.id.cmp(&other.id))
    }
}

/// A reusable, fixed-capacity result list.
pub struct Results {
    hits: Vec<Hit>,
    cap: usize,
    matched: usize,
    truncated: bool,
}

impl Default for Results {
    fn default() -> Self {
        Results::new()
    }
}

impl Results {
    /// Room for [`STORE_QUERY_MAX_RESULTS`] results, reserved now.
    pub fn new() -> Results {
        Results::with_capacity(STORE_QUERY_MAX_RESULTS)
    }

    /// Room for `cap` results (at most [`STORE_QUERY_MAX_RESULTS`]).
    pub fn with_capacity(cap: usize) -> Results {
        let cap = cap.clamp(1, STORE_QUERY_MAX_RESULTS);
        Results { hits: Vec::with_capacity(cap), cap, matched: 0, truncated: false }
    }

    /// Empties the list, keeping its reservation.
    pub fn clear(&mut self) {
        self.hits.clear();
        self.matched = 0;
        self.truncated = false;
    }

    /// The results, best first.
    pub fn hits(&self) -> &[Hit] {
        &self.hits
    }

    /// The result ids, best first.
    pub fn ids(&self) -> impl Iterator<Item = EntryId> + '_ {
        self.hits.iter().map(|h| h.id)
    }

    /// Number of results kept.
    pub fn len(&self) -> usize {
        self.hits.len()
    }

    /// Whether nothing matched.
    pub fn is_empty(&self) -> bool {
        self.hits.is_empty()
    }

    /// How many entries matched in all (kept or not).
    pub fn matched(&self) -> usize {
        self.matched
    }

    /// Whether a text search stopped before reading the whole store: its results were full
    /// (more may match) or it reached its byte budget (`STORE_SEARCH_MAX_BYTES`).
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    pub(crate) fn set_truncated(&mut self) {
        self.truncated = true;
    }

    /// Sets the count of matches when the store knows it without offering each one.
    pub(crate) fn set_matched(&mut self, n: usize) {
        self.matched = n;
    }

    /// The effective limit for `max`.
    pub(crate) fn limit(&self, max: usize) -> usize {
        max.min(self.cap)
    }

    /// Appends in arrival order (text search, related entries); returns false when full.
    pub(crate) fn push(&mut self, hit: Hit, limit: usize) -> bool {
        self.matched += 1;
        if self.hits.len() >= limit.min(self.cap) {
            return false;
        }
        self.hits.push(hit);
        true
    }

    /// Offers a match to a top-`limit` list kept in `sort` order (binary insertion).
    pub(crate) fn offer(&mut self, hit: Hit, sort: Sort, limit: usize) {
        self.matched += 1;
        let limit = limit.min(self.cap);
        if limit == 0 {
            return;
        }
        if self.hits.len() >= limit {
            match self.hits.last() {
                Some(last) if hit.order(last, sort) == Ordering::Less => {
                    self.hits.pop();
                }
                _ => return,
            }
        }
        let at = self.hits.partition_point(|h| h.order(&hit, sort) == Ordering::Less);
        if at <= self.hits.len() {
            self.hits.insert(at, hit);
        }
    }
}

/// Jaccard similarity in parts per million of an entry's `n_entry` tags sharing `shared` with
/// `n_query` query tags.
pub fn relevance_ppm(shared: usize, n_entry: usize, n_query: usize) -> u32 {
    let union = n_entry + n_query - shared;
    if union == 0 || n_query == 0 {
        return 0;
    }
    (shared as u64 * 1_000_000 / union as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(id: u32, hits: u64) -> Hit {
        Hit { id, hits, ..Hit::default() }
    }

    #[test]
    fn top_k_keeps_best_in_order() {
        let mut r = Results::with_capacity(8);
        for (id, h) in [(0, 5), (1, 9), (2, 1), (3, 9), (4, 7)] {
            r.offer(hit(id, h), Sort::MostAccessed, 3);
        }
        // Ties on hits: the newer (higher id) first.
        assert_eq!(r.ids().collect::<Vec<_>>(), [3, 1, 4]);
        assert_eq!(r.matched(), 5);
        r.clear();
        for (id, h) in [(0, 5), (1, 9), (2, 1)] {
            r.offer(hit(id, h), Sort::Oldest, 10);
        }
        assert_eq!(r.ids().collect::<Vec<_>>(), [0, 1, 2]);
        r.clear();
        for (id, h) in [(2, 5), (0, 9), (1, 1)] {
            r.offer(hit(id, h), Sort::Newest, 2);
        }
        assert_eq!(r.ids().collect::<Vec<_>>(), [2, 1], "newest is creation order, not a clock");
    }

    #[test]
    fn relevance_is_jaccard() {
        assert_eq!(relevance_ppm(2, 2, 2), 1_000_000);
        assert_eq!(relevance_ppm(1, 2, 2), 333_333);
        assert_eq!(relevance_ppm(0, 3, 0), 0);
    }
}
