//! The text index, a room of the store: what each live entry's tags and value say, word by
//! word, so that a query ranks the entries by BM25 in SQLite FTS5's order. It keeps `store.fts`
//! (the base: `file` its format, `disk` its reading in place, `merge` its writing) and a
//! bounded delta in RAM (`fulltext`); words are FTS5's (`tokenize`) and ranking is `rank`'s. Crash-safe as every file here: a new `store.fts` is a temp
//! file, synced, renamed over the old, the directory synced; it is a cache of the log, checked
//! against it on open and rebuilt from it when it does not match.
//!
//! Recall by words: the full-text index ([`self::fulltext`]) kept current with the store, and
//! ranked queries over it, ordered as SQLite FTS5's `bm25()` orders an OR query.
//!
//! # Ranking
//!
//! A query is words ([`self::tokenize`]); an entry matches when it holds any of them (FTS5's
//! `a OR b OR c`). Its score is FTS5's BM25 with k1 = 1.2 and b = 0.75 (`fts5_aux.c`):
//!
//! ```text
//! score = Σ over query words q:  IDF(q) · f(q,D) · (k1 + 1) / (f(q,D) + k1 · (1 − b + b · |D| / avgdl))
//! IDF(q) = ln((N − n(q) + 0.5) / (n(q) + 0.5)), and 1e-6 where that is ≤ 0 (words in half the
//!          entries or more)
//! ```
//!
//! with N the entries indexed, n(q) those holding q, f(q,D) the occurrences of q in the
//! entry's text, |D| its words and avgdl the mean over all entries. FTS5's `bm25()` returns
//! the negated sum (lower is better); here the score is the sum itself (higher is better), so
//! `score == -bm25()`. A word given twice in a query counts twice, as two FTS5 phrases do.
//! Equal scores come in entry id order. Archived entries are indexed (they count in N and
//! avgdl) and left out of results unless asked for.
//!
//! Retrieval is exact top-k with MaxScore pruning and block-max bounds ([`self::rank`]):
//! query words in order of their highest possible contribution (their largest block impact
//! in `store.fts`, `IDF · (k1 + 1)` where the delta holds them); once the k-th best score
//! passes the sum of the smallest ones, documents holding only those words cannot enter the
//! results, so their postings are no longer walked, only probed for the documents the other
//! words bring, passing unread the blocks that end before them. Where the bounds of the
//! blocks holding a candidate sum below the k-th score, that candidate and every document up
//! to the first end of those blocks are skipped, the walks jumping past them unread: a
//! query of very common words (IDF 1e-6) decodes only the blocks where a document can still
//! enter.
//!
//! # Two segments: the base on disk, the delta in RAM
//!
//! The index is two segments. The *base* is `store.fts` ([`self::file`]), searched
//! where it lies ([`self::disk`]): a query reads the dictionary pages and postings
//! of its words by positioned reads through bounded buffers; RAM holds 12 bytes per base
//! document (entry and length, the entry's document) and nothing per word. The *delta*
//! ([`self::fulltext`]) holds, in tables of fixed size (`TEXT_DELTA_*` in `limits.rs`,
//! reserved once, whatever the store's capacity), the documents of entries created or changed
//! since the base was written; a base document no longer current (its entry overwritten,
//! retagged, archived or unarchived, deleted) is marked dead, and its words are counted out
//! in the delta (`base_dead`: once per document, read from its record, still in the log). So
//! the statistics are exactly the live set's: N and the total length are the base's minus
//! its dead documents plus the delta's, and a word's `df` is the base's minus its dead plus
//! the delta's. A query walks each word's base postings, then its delta postings with their
//! document numbers moved past the base's ([`self::rank::Chain`]): documents still come in
//! increasing order, so MaxScore runs as it would over one index. Scores are computed from
//! the same integers as before, so results are the same bit for bit.
//!
//! Why this shape: a read-only command already searched the file in place, at about the
//! speed of the index in RAM; the writer's changes between two checkpoints are few (a
//! checkpoint comes every `STORE_CHECKPOINT_EVERY_BYTES` of log), so a delta of fixed size
//! holds them, and the same code serves the writer, a read-only store whose file is behind
//! the log, and the rebuild.
//!
//! # The cold tier: one ranking over both
//!
//! A query also runs over the cold tier's text index (`Segment`, `cold::recall`), a segment
//! of the same kind: each word's document count, N and the total length are the sums of both,
//! so that every score is the one FTS5 gives over the union; the live segment's walks run
//! first, then the cold one's with the same weights into the same top-k (its pruning starts
//! from the live results' threshold). Cold hits carry [`rank::SEGMENT_HIT`] in their ids.
//!
//! # Upkeep and merges
//!
//! The index is opened on first use (a store that is never searched never builds it; `upkeep`
//! opens it and keeps it current): the
//! base is `store.fts` when it names this log (the writer checks every byte of it once, at
//! open; a read-only store checks each part as it reads it); base documents whose entry's
//! record is not the one indexed, and live entries the base lacks, are brought into the
//! delta. After that every change of an entry reads its new and old `put` records and moves
//! its words (create, overwrite, retag, archive, delete).
//!
//! The delta is merged into a new `store.fts` at each checkpoint and at close, and earlier
//! when the next change might not fit one of its tables (the documented fallback of a full
//! delta: an *early merge*, never an error). The checkpoint the agent's cycle takes when due
//! only starts the merge: it runs in steps of `TEXT_MERGE_STEP_MILLIS`, one per cycle's upkeep,
//! beside the changes and queries of the cycles between (see `merge::job`), so that no cycle
//! stops for all of it (2.3-2.6 s at 1,048,576 entries). The merge streams: the base's current documents
//! then the delta's, renumbered densely in that order; the words of both in byte order, each
//! with its base postings (renumbered, dead documents dropped; copied byte for byte when the
//! base has no dead document) then its delta postings; the dictionary written to a file of
//! its own as it goes and copied in after the body. Every buffer is bounded
//! (`TEXT_MERGE_BUFFER_BYTES`); every part of the old file read is checked by its CRC. The new
//! file is a temp file created exclusively, synced, renamed over the old one, the directory
//! synced; a crash at any point leaves the old file or the new one, each a valid base for the
//! log (an open compares each base document with the entry's record). A read-only store never
//! writes in the data directory: should its delta fill, it merges into a private directory
//! under the system temp dir, removed when it is dropped.
//!
//! Without a usable file (none, damaged, another log's: with a warning unless simply missing)
//! the index is built from the log the same way: every live entry into the delta, merged
//! into a new file whenever the delta is full (the base then has no dead document, so each
//! merge copies the base's postings and appends the delta's). A file found damaged while
//! searching or merging is set aside and the index rebuilt from the log. A compaction
//! (every id and offset changes) rebuilds it; a reload closes it. The log stays the only
//! truth.

pub mod disk;
pub mod file;
pub mod fulltext;
pub(in crate::memory::store) mod merge;
pub mod rank;
pub mod tokenize;
pub(in crate::memory::store) mod upkeep;

use self::disk::{DiskIndex, DiskWalk};
use self::fulltext::{FullText, NONE};
use self::rank::{max_score, Chain, Collection, Docs, QueryWord, QueryWords, RamWalk};
pub use self::rank::{RankHit, Ranked};
use self::tokenize::{Token, Tokens};
use super::{EntryId, Store};
use crate::error::Result;
use crate::limits::{RANK_MAX_RESULTS, RANK_MAX_TERMS, STORE_RECORD_MAX_BYTES, STORE_VALUE_MAX_BYTES};
use crate::memory::key::Key;
use crate::memory::log;
use crate::memory::query::Archived;
use std::path::PathBuf;

/// The state of the store's full-text index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not built (nothing reserved yet, or closed by a reload).
    Closed,
    /// Current with the store.
    Ready,
    /// Behind the store: rebuilt before the next query.
    Stale,
}

/// The full-text index and its scratch buffers, owned by the store.
pub struct Recall {
    /// The delta: what changed since the base was written.
    pub(in crate::memory::store) index: FullText,
    /// The base: `store.fts`, searched in place.
    pub(in crate::memory::store) base: DiskIndex,
    state: State,
    /// Whether the last open found the index's file usable (else it was rebuilt from the log).
    from_file: bool,
    /// Whether the last read of the index's file found it taken of another log state.
    pub(in crate::memory::store) file_stale: bool,
    /// The file was found damaged: the next open rebuilds from the log without it.
    ignore_file: bool,
    rec: Vec<u8>,
    val: String,
    /// Log length the last `store.fts` written or read covers (0: none).
    pub(in crate::memory::store) written: u64,
    /// The merge's scratch (reserved with the tables).
    pub(in crate::memory::store) scratch: self::merge::WriteScratch,
    /// A read-only store's own directory for the files its merges write (never the data
    /// directory); removed when the store is dropped.
    private: Option<PathBuf>,
    /// Merges since the index was opened.
    merges: u64,
    /// The most postings one step of a merge in steps walked (see [`RecallStats`]).
    pub(in crate::memory::store) step_postings_most: u64,
    /// The documents were given a compaction's new ids: the next merge writes their records'
    /// places from the new log, not the old file's.
    pub(in crate::memory::store) relabeled: bool,
    /// A merge under way, run in steps beside the cycle (`None` once its file is written,
    /// to be opened at the next step), and the log length it covers.
    pub(in crate::memory::store) job: Option<(Option<self::merge::Job>, u64)>,
    /// The catch-up after a merge in steps opened its new file, run in steps too (`upkeep`).
    pub(in crate::memory::store) catching_up: Option<upkeep::CatchUp>,
    /// The file a merge in steps replaced, still open: closed by the catch-up's first step,
    /// not in the step that opens the new file (the last close of a file renamed over frees
    /// its pages, work that grows with the file).
    pub(in crate::memory::store) retired: Option<std::fs::File>,
}

impl Recall {
    /// A closed index: nothing reserved.
    pub fn new() -> Recall {
        Recall {
            index: FullText::unreserved(),
            base: DiskIndex::empty(),
            state: State::Closed,
            from_file: false,
            file_stale: false,
            ignore_file: false,
            rec: Vec::new(),
            val: String::new(),
            written: 0,
            scratch: self::merge::WriteScratch::default(),
            private: None,
            merges: 0,
            step_postings_most: 0,
            relabeled: false,
            job: None,
            catching_up: None,
            retired: None,
        }
    }

    /// Bytes of RAM the index reserves (0 until it is first used).
    pub fn ram_bytes(&self) -> usize {
        self.base.ram_bytes()
            + if self.index.is_reserved() {
                self.index.ram_bytes() + STORE_RECORD_MAX_BYTES + STORE_VALUE_MAX_BYTES + self.scratch.ram_bytes()
            } else {
                0
            }
    }
}

impl Drop for Recall {
    fn drop(&mut self) {
        self.drop_job();
        if let Some(dir) = self.private.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

impl Recall {
    /// Drops a merge under way (the delta is about to be emptied, or the ids and the log to
    /// change under it), its temp files removed.
    fn drop_job(&mut self) {
        if let Some((Some(job), _)) = self.job.take() {
            job.remove_temps();
        }
    }
}

impl Default for Recall {
    fn default() -> Self {
        Recall::new()
    }
}

/// Statistics of the full-text index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecallStats {
    /// Whether the index is built and current.
    pub ready: bool,
    /// Entries indexed.
    pub documents: u64,
    /// Words in them.
    pub tokens: u64,
    /// Distinct words in the dictionary.
    pub terms: usize,
    /// Document numbers used (live and dead; a rebuild drops the dead).
    pub doc_numbers: usize,
    /// Posting blocks used.
    pub blocks: usize,
    /// RAM reserved, bytes.
    pub ram_bytes: usize,
    /// Whether the index was opened from `store.fts` (else rebuilt from the log).
    pub from_file: bool,
    /// Whether queries read a `store.fts` in place (the base).
    pub in_place: bool,
    /// Documents in the delta (live and dead).
    pub delta_docs: usize,
    /// Merges of the delta into a new `store.fts` since the index was opened.
    pub merges: u64,
    /// The most postings one step of a merge run in steps walked (each counted, then each
    /// written) since the index was opened: what bounds a step's work inside a word (a
    /// merge finished at once, without a deadline, is not a step).
    pub step_postings_most: u64,
}

/// What a ranked query asks.
#[derive(Clone, Copy)]
pub(in crate::memory::store) struct Ask<'a> {
    pub(in crate::memory::store) query: &'a str,
    pub(in crate::memory::store) limit: usize,
    pub(in crate::memory::store) archived: Archived,
    pub(in crate::memory::store) tags: Option<&'a Key>,
    /// Keep the rarest `RANK_MAX_TERMS` words of a longer text (else that is an error).
    pub(in crate::memory::store) rarest: bool,
    /// Rank the cold store's entries too.
    pub(in crate::memory::store) cold: bool,
}

/// The documents of the base, then the delta's (numbered from `shift` on).
struct BothDocs<'a> {
    base: self::disk::BaseDocs<'a>,
    delta: &'a FullText,
    shift: u32,
}

impl Docs for BothDocs<'_> {
    fn tokens(&mut self, d: u32) -> Result<Option<u32>> {
        match d.checked_sub(self.shift) {
            None => self.base.tokens(d),
            Some(d) => Ok(self.delta.doc(d).filter(|x| x.entry != NONE).map(|x| x.tokens)),
        }
    }

    fn entry(&mut self, d: u32) -> Result<Option<EntryId>> {
        match d.checked_sub(self.shift) {
            None => self.base.entry(d),
            Some(d) => Ok(self.delta.doc(d).filter(|x| x.entry != NONE).map(|x| x.entry)),
        }
    }
}

/// Calls `f` with each word of an entry's text: its tags, then its value (JSON-escaped as
/// records hold it; decoded through `val`).
pub(in crate::memory::store) fn words_of<'t>(
    tags: impl Iterator<Item = &'t str>,
    value_escaped: &str,
    val: &mut String,
    mut f: impl FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    words_of_dyn(&mut { tags }, value_escaped, val, &mut f)
}

/// `words_of`, compiled once (it was inlined at its seven callers, about 440 B each; a call
/// per word costs nothing beside the tokenizing and the index's insert it feeds).
#[inline(never)]
fn words_of_dyn<'t>(
    tags: &mut dyn Iterator<Item = &'t str>,
    value_escaped: &str,
    val: &mut String,
    f: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    val.clear();
    log::decode_str(value_escaped, val)?;
    let mut tok = Token::default();
    for tag in tags {
        let mut words = Tokens::new(tag);
        while words.next_into(&mut tok) {
            f(tok.as_bytes())?;
        }
    }
    let mut words = Tokens::new(val);
    while words.next_into(&mut tok) {
        f(tok.as_bytes())?;
    }
    Ok(())
}

/// A word as one segment (a base and its delta) knows it: its postings in both, and its
/// live documents there; `None` when neither has it.
pub(in crate::memory::store) fn lookup(base: &mut DiskIndex, ix: &FullText, w: &[u8]) -> Result<Option<QueryWord>> {
    let b = base.find(w)?;
    let t = ix.find(w);
    if b.is_none() && t.is_none() {
        return Ok(None);
    }
    let term = t.and_then(|t| ix.term(t));
    let base_df = b.map_or(0, |x| x.base_df);
    let df = base_df.saturating_sub(term.map_or(0, |x| x.base_dead)).saturating_add(term.map_or(0, |x| x.df));
    Ok(Some(QueryWord {
        at: b.map_or(u64::from(t.unwrap_or(0)) | 1 << 63, |x| x.at),
        term: t,
        df,
        ..b.unwrap_or_default()
    }))
}

/// Another segment a ranked query runs over besides the live one (the cold tier's text index,
/// `cold::recall`): the same words, looked up and walked there, scored with the statistics of
/// the union, into the same results. Its hits carry [`rank::SEGMENT_HIT`] in their ids.
pub(in crate::memory::store) trait Segment {
    /// Whether it is built and current (else the query leaves it out).
    fn is_ready(&self) -> bool;
    /// Its live documents and their tokens.
    fn totals(&self) -> (u64, u64);
    /// The fewest tokens of a document of its base, when that is read in place.
    fn min_len(&self) -> Option<u32>;
    /// A word as it knows it (see [`lookup`]).
    fn lookup(&mut self, w: &[u8]) -> Result<Option<QueryWord>>;
    /// Ranks its documents for `q` (the query's words with its postings and the union's
    /// counts) over `coll` (the union), admitting what `live` (a document whose key the live
    /// store holds is not current) and the filter (archived, tags) let through, into `out`,
    /// which may hold the live segment's best already.
    fn rank(
        &mut self,
        q: &QueryWords,
        coll: &Collection,
        admit: (&mut dyn Live, Archived, Option<&Key>),
        limit: usize,
        out: &mut Ranked,
    ) -> Result<()>;
}

/// The live store as a ranked query over two segments asks it: which of its entries pass the
/// query's filter, and whether it holds a key (a cold copy of a key it holds is not current).
/// The store in RAM answers it ([`Store`]), and so does its checkpoint read in place
/// (`StoreView`), so that both rank with the same code.
pub(in crate::memory::store) trait Live {
    /// Whether live entry `id` passes the query's filter.
    fn admits(&self, id: EntryId) -> bool;
    /// Whether the live store holds an entry whose key is `key`.
    fn holds(&mut self, key: &Key) -> Result<bool>;
}

/// [`Live`] for the store in RAM, with a query's filter.
struct StoreLive<'a> {
    store: &'a Store,
    archived: Archived,
    required: Option<&'a (super::slots::TagSet, usize)>,
}

impl Live for StoreLive<'_> {
    fn admits(&self, id: EntryId) -> bool {
        self.store.admits(id, self.archived, self.required)
    }

    fn holds(&mut self, key: &Key) -> Result<bool> {
        Ok(self.store.find(key).is_some())
    }
}

/// A word of a query over two segments, as `mine` (this segment's lookup) and `other` (the
/// other's) know it: this segment's postings, and the live documents of both. A word only
/// the other has gets no postings here and a place that is its own (its hash), so that both
/// segments' queries keep the same words in the same order.
pub(in crate::memory::store) fn joined(
    mine: Option<QueryWord>,
    other: Option<QueryWord>,
    w: &[u8],
) -> Option<QueryWord> {
    match (mine, other) {
        (None, None) => None,
        (Some(m), o) => Some(QueryWord { df: m.df.saturating_add(o.map_or(0, |x| x.df)), ..m }),
        (None, Some(o)) => {
            Some(QueryWord { at: crate::memory::hash::fnv1a64(w) | 3 << 62, df: o.df, mean: 1, ..QueryWord::default() })
        }
    }
}

impl Store {
    /// The entries most relevant to `query`, best first, at most `limit` (and at most
    /// [`RANK_MAX_RESULTS`]), archived entries left out: BM25 over the words of each entry's
    /// tags and value, ordered as SQLite FTS5's `bm25()` orders `w1 OR w2 OR ...` (see the
    /// module documentation), live and cold entries together (a cold hit:
    /// [`RankHit::is_cold`], read with [`Store::hit_info`] and [`Store::value`]). A query with no words, or whose words no entry holds, gives
    /// no hits. More than [`RANK_MAX_TERMS`] distinct words is `CAPACITY_EXCEEDED`.
    ///
    /// The first call builds the index (reading every live entry once); after that a query
    /// allocates nothing.
    pub fn rank(&mut self, query: &str, limit: usize, out: &mut Ranked) -> Result<()> {
        self.rank_where(query, limit, Archived::Exclude, None, out)
    }

    /// [`Store::rank`] with a filter: `archived` says which entries pass, and with `tags`
    /// only entries carrying all of those tags.
    pub fn rank_where(
        &mut self,
        query: &str,
        limit: usize,
        archived: Archived,
        tags: Option<&Key>,
        out: &mut Ranked,
    ) -> Result<()> {
        self.rank_inner(&Ask { query, limit, archived, tags, rarest: false, cold: true }, out)
    }

    /// The `limit` entries most relevant to `text` (a task, a question, a page of notes),
    /// best first, archived entries left out: [`Store::rank`] for a text of any length. A
    /// text of more than [`RANK_MAX_TERMS`] distinct words the index knows is weighed by the
    /// `RANK_MAX_TERMS` rarest of them (the words that weigh most in BM25; a word the index
    /// does not know matches nothing and is not counted); [`Ranked::dropped_words`] says how
    /// many others were left out. Allocation-free once the index is open, like `rank`.
    pub fn relevant(&mut self, text: &str, limit: usize, out: &mut Ranked) -> Result<()> {
        self.rank_inner(
            &Ask { query: text, limit, archived: Archived::Exclude, tags: None, rarest: true, cold: true },
            out,
        )
    }

    fn rank_inner(&mut self, ask: &Ask<'_>, out: &mut Ranked) -> Result<()> {
        out.clear();
        let ask = Ask { limit: ask.limit.min(RANK_MAX_RESULTS).min(out.capacity()), ..*ask };
        self.recall_ready()?;
        if ask.cold {
            // The cold store's part; when it cannot be built, the live entries still answer.
            if let Err(e) = self.cold_recall_ready() {
                e.context(format_args!("this search leaves the cold store out")).print_warning();
            }
        }
        match self.rank_once(&ask, out) {
            Err(e) if e.code() == crate::error::Code::Io && self.recall.base.is_open() => {
                // store.fts (or store.cold.fts) found damaged: rebuilt, and the query asked again.
                out.clear();
                e.context(format_args!("the full-text index is rebuilt from the log")).print_warning();
                self.recall_discard_file();
                self.cold_recall_close();
                self.recall_ready()?;
                if ask.cold {
                    if let Err(e) = self.cold_recall_ready() {
                        e.context(format_args!("this search leaves the cold store out")).print_warning();
                    }
                }
                self.rank_once(&ask, out)
            }
            res => res,
        }
    }

    /// One ranked query over the live segment (base and delta) and the cold one (see the
    /// module documentation and [`super::cold::recall`]).
    fn rank_once(&mut self, ask: &Ask<'_>, out: &mut Ranked) -> Result<()> {
        let required = match ask.tags {
            Some(key) => match self.tagset_of(key) {
                Some(set) => Some(Some((set, key.tag_count()))),
                None => Some(None), // a tag no live entry carries
            },
            None => None,
        };
        if ask.limit == 0 {
            return Ok(());
        }
        // The bases are taken out while the store's entries are looked at (put back below).
        let mut base = core::mem::replace(&mut self.recall.base, DiskIndex::empty());
        let mut cold = core::mem::take(&mut self.cold_recall);
        let res = self.rank_parts(&mut base, &mut cold, ask, required.as_ref(), out);
        self.recall.base = base;
        self.cold_recall = cold;
        res?;
        out.sort();
        Ok(())
    }

    fn rank_parts(
        &self,
        base: &mut DiskIndex,
        cold: &mut dyn Segment,
        ask: &Ask<'_>,
        required: Option<&Option<(super::slots::TagSet, usize)>>,
        out: &mut Ranked,
    ) -> Result<()> {
        // A tag no live entry carries (`Some(None)`): only cold entries can match.
        let live_part = !matches!(required, Some(None));
        let required = required.and_then(Option::as_ref);
        let mut live = StoreLive { store: self, archived: ask.archived, required };
        rank_two(base, &self.recall.index, &mut live, live_part, cold, ask, out)
    }

    /// Statistics of the full-text index (without building it).
    pub fn recall_stats(&self) -> RecallStats {
        let ix = &self.recall.index;
        let (base_docs, base_tokens) = self.recall.base.totals();
        RecallStats {
            ready: self.recall.state == State::Ready,
            documents: base_docs + ix.live_docs(),
            tokens: base_tokens + ix.total_tokens(),
            terms: self.recall.base.header.terms as usize + ix.term_count(),
            doc_numbers: self.recall.base.doc_count() as usize + ix.doc_count(),
            blocks: ix.block_count(),
            ram_bytes: self.recall.ram_bytes(),
            from_file: self.recall.from_file,
            in_place: self.recall.base.is_open(),
            delta_docs: ix.doc_count(),
            merges: self.recall.merges,
            step_postings_most: self.recall.step_postings_most,
        }
    }
}

/// One ranked query over the live segment (`base` and its delta `ix`, its entries admitted
/// by `live`; left out without `live_part`) and `cold` (see the module documentation and
/// [`super::cold::recall`]), into `out` (not sorted). The store in RAM and its checkpoint read
/// in place (`StoreView`) both rank with it.
pub(in crate::memory::store) fn rank_two(
    base: &mut DiskIndex,
    ix: &FullText,
    live: &mut dyn Live,
    live_part: bool,
    cold: &mut dyn Segment,
    ask: &Ask<'_>,
    out: &mut Ranked,
) -> Result<()> {
    let &Ask { query, limit, archived, tags, rarest, .. } = ask;
    if limit == 0 {
        return Ok(());
    }
    let with_cold = ask.cold && cold.is_ready();
    // Each word's lookups in both segments, in the order the parse asks for them: the
    // cold segment's parse below asks again for the same words in the same order, and
    // takes them from here instead of searching both dictionaries again (a page read and
    // checked per step of each binary search: half a soak-store query's dictionary reads).
    let mut seen = [(0u64, None, None); RANK_MAX_TERMS];
    let mut asked = 0usize;
    let q = QueryWords::parse(query, rarest, |w| {
        let other = if with_cold { cold.lookup(w)? } else { None };
        let mine = lookup(base, ix, w)?;
        if let Some(s) = seen.get_mut(asked) {
            *s = (crate::memory::hash::fnv1a64(w), mine, other);
        }
        asked += 1;
        Ok(joined(mine, other, w))
    })?;
    out.set_dropped_words(q.dropped);
    if q.n == 0 {
        return Ok(());
    }
    let shift = base.doc_count();
    let (base_docs, base_tokens) = base.totals();
    let (cold_docs, cold_tokens) = if with_cold { cold.totals() } else { (0, 0) };
    // The union's statistics; each segment's base read in place bounds a candidate with
    // its own fewest tokens before reading its length.
    let coll = |min_len: Option<u32>| Collection {
        docs: base_docs + ix.live_docs() + cold_docs,
        tokens: base_tokens + ix.total_tokens() + cold_tokens,
        min_len,
    };
    if live_part {
        let live = &*live;
        let admit = |id: EntryId| live.admits(id);
        let min_len = base.is_open().then_some(base.header.min_len);
        let mut parts = base.walk_parts();
        let mut walks: [Chain<DiskWalk<'_>, RamWalk<'_>>; RANK_MAX_TERMS] =
            core::array::from_fn(|_| Chain::new(None, RamWalk::new(ix, NONE), shift));
        for (c, w) in walks.iter_mut().zip(q.words.iter()).take(q.n) {
            let mut b = None;
            if w.bytes > 0 {
                let (Some(file), Some(buf), Some(dec)) = (parts.file, parts.bufs.next(), parts.decoded.next()) else {
                    bail!(Internal, "no walk buffer")
                };
                b = Some(DiskWalk::new(file, buf, dec, w)?);
            }
            *c = Chain::new(b, RamWalk::new(ix, w.term.unwrap_or(NONE)), shift);
        }
        let mut docs = BothDocs { base: parts.docs, delta: ix, shift };
        max_score(&q, &mut walks, &coll(min_len), &mut docs, admit, limit, out)?;
    }
    if with_cold && cold_docs > 0 {
        // The same words in the same order, with the cold segment's postings.
        let mut again = 0usize;
        let qc = QueryWords::parse(query, rarest, |w| {
            let known = seen.get(again).filter(|s| again < asked && s.0 == crate::memory::hash::fnv1a64(w));
            again += 1;
            match known {
                Some(&(_, other, mine)) => Ok(joined(mine, other, w)),
                None => {
                    let other = lookup(base, ix, w)?;
                    Ok(joined(cold.lookup(w)?, other, w))
                }
            }
        })?;
        cold.rank(&qc, &coll(cold.min_len()), (live, archived, tags), limit, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::rank::{B, K1};
    use super::*;
    use crate::memory::key::normalize;
    use crate::memory::store::cold::recall::ColdRecall;
    use crate::memory::store::recall::fulltext::Sizes;
    use crate::memory::store::room_for;
    use crate::testing::temp_dir;

    fn k(s: &str) -> Key {
        normalize(s).unwrap()
    }

    fn words(text: &str) -> Vec<Vec<u8>> {
        let mut t = Tokens::new(text);
        let mut tok = Token::default();
        let mut out = Vec::new();
        while t.next_into(&mut tok) {
            out.push(tok.as_bytes().to_vec());
        }
        out
    }

    /// BM25 of every live entry, computed from scratch as FTS5 computes it, best first.
    fn brute(s: &mut Store, query: &str, limit: usize, archived: Archived) -> Vec<(EntryId, f64)> {
        let ids: Vec<EntryId> = s.ids().collect();
        let mut docs = Vec::new();
        for id in ids {
            let key = s.key(id).unwrap();
            let text = format!("{} {}", key.as_str(), s.value(id).unwrap());
            docs.push((id, words(&text), s.info(id).unwrap().archived));
        }
        let n = docs.len() as f64;
        let avgdl = docs.iter().map(|d| d.1.len()).sum::<usize>() as f64 / n;
        let q = words(query);
        let idf: Vec<f64> = q
            .iter()
            .map(|w| {
                let hits = docs.iter().filter(|d| d.1.contains(w)).count() as f64;
                let idf = ((n - hits + 0.5) / (hits + 0.5)).ln();
                if idf <= 0.0 {
                    1e-6
                } else {
                    idf
                }
            })
            .collect();
        let mut out = Vec::new();
        for (id, toks, arch) in &docs {
            if !archived.admits(*arch) || !q.iter().any(|w| toks.contains(w)) {
                continue;
            }
            let dl = toks.len() as f64;
            let mut score = 0.0;
            for (w, idf) in q.iter().zip(&idf) {
                let f = toks.iter().filter(|t| *t == w).count() as f64;
                score += idf * (f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * dl / avgdl));
            }
            out.push((*id, score));
        }
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out.truncate(limit);
        out
    }

    fn ranked(s: &mut Store, query: &str, limit: usize) -> Vec<(EntryId, f64)> {
        let mut out = Ranked::new();
        s.rank(query, limit, &mut out).unwrap();
        out.hits().iter().map(|h| (h.id, h.score)).collect()
    }

    fn assert_same(got: &[(EntryId, f64)], want: &[(EntryId, f64)], what: &str) {
        assert_eq!(got.len(), want.len(), "{}: {:?} vs {:?}", what, got, want);
        for (g, w) in got.iter().zip(want) {
            assert!((g.1 - w.1).abs() < 1e-9, "{}: {:?} vs {:?}", what, got, want);
            if g.0 != w.0 {
                // Only a tie may swap.
                assert!((g.1 - w.1).abs() < 1e-12, "{}: {:?} vs {:?}", what, got, want);
            }
        }
    }

    /// A small deterministic generator (xorshift).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        /// A Zipf-like word: small numbers far more often.
        fn word(&mut self, vocab: u64) -> String {
            let r = self.below(vocab * vocab) as f64;
            let w = (vocab as f64 - r.sqrt()).max(0.0) as u64;
            format!("w{}", (vocab - 1).saturating_sub(w))
        }
        fn text(&mut self, vocab: u64, n: u64) -> String {
            (0..n).map(|_| self.word(vocab)).collect::<Vec<_>>().join(" ")
        }
    }

    #[test]
    fn ranks_as_bm25_computed_from_scratch() {
        let d = temp_dir("rank-brute");
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for i in 0..300 {
            let n = 5 + rng.below(30);
            let text = rng.text(60, n);
            s.put(&k(&format!("note,n{}", i)), &text, 1).unwrap();
        }
        for _ in 0..60 {
            let q = format!("{} {} {}", rng.word(60), rng.word(60), rng.word(60));
            for limit in [1, 5, 10, 50] {
                let want = brute(&mut s, &q, limit, Archived::Exclude);
                assert_same(&ranked(&mut s, &q, limit), &want, &q);
            }
        }
    }

    #[test]
    fn stays_current_through_overwrites_retags_archives_deletes_and_compaction() {
        let d = temp_dir("rank-upkeep");
        let mut s = Store::open_with_capacity(&d, 256).unwrap();
        let mut rng = Rng(12345);
        let mut live: Vec<String> = Vec::new();
        // Open the index first, so that every change below goes through the upkeep.
        assert!(ranked(&mut s, "anything", 10).is_empty());
        for step in 0..600 {
            let op = rng.below(10);
            if live.is_empty() || op < 4 {
                let key = format!("t{}", step);
                let n = 3 + rng.below(20);
                s.put(&k(&key), &rng.text(40, n), 1).unwrap();
                live.push(key);
            } else {
                let i = rng.below(live.len() as u64) as usize;
                let key = live[i].clone();
                match op {
                    4 | 5 => {
                        let n = 3 + rng.below(20);
                        s.put(&k(&key), &rng.text(40, n), 2).unwrap();
                    }
                    6 => {
                        let archived = s.info(s.find(&k(&key)).unwrap()).unwrap().archived;
                        s.set_archived(&k(&key), !archived, 3).unwrap();
                    }
                    7 => {
                        let new = format!("{},extra{}", key, step);
                        s.add_tags(&k(&key), &k(&format!("extra{}", step)), 4).unwrap();
                        live[i] = new;
                    }
                    _ => {
                        s.delete(&k(&key)).unwrap();
                        live.swap_remove(i);
                    }
                }
            }
            if step % 50 == 49 {
                let q = format!("{} {} extra{}", rng.word(40), rng.word(40), step - 10);
                let want = brute(&mut s, &q, 10, Archived::Exclude);
                assert_same(&ranked(&mut s, &q, 10), &want, &q);
                let mut out = Ranked::new();
                s.rank_where(&q, 10, Archived::Only, None, &mut out).unwrap();
                let got: Vec<_> = out.hits().iter().map(|h| (h.id, h.score)).collect();
                assert_same(&got, &brute(&mut s, &q, 10, Archived::Only), &q);
            }
            if step == 300 {
                s.compact().unwrap();
            }
        }
        let st = s.recall_stats();
        assert!(st.ready);
        assert_eq!(st.documents as usize, s.len());
        // A reopened store builds the same index from the log.
        let q = "w1 w2 w3";
        let before = ranked(&mut s, q, 20);
        drop(s);
        let mut s = Store::open_with_capacity(&d, 256).unwrap();
        assert_eq!(ranked(&mut s, q, 20), before);
    }

    #[test]
    fn tags_are_words_and_filter() {
        let d = temp_dir("rank-tags");
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.put(&k("recipes,french_cuisine"), "Crème brûlée with vanilla", 1).unwrap();
        s.put(&k("recipes,desserts"), "chocolate cake, no vanilla", 1).unwrap();
        s.put(&k("notes"), "the cake is a lie", 1).unwrap();
        // A tag's words match ("french" is only in a tag), diacritics do not matter.
        let got = ranked(&mut s, "FRENCH creme", 10);
        assert_eq!(got.len(), 1);
        assert_eq!(s.key(got[0].0).unwrap().as_str(), "french_cuisine,recipes");
        let mut out = Ranked::new();
        s.rank_where("cake", 10, Archived::Exclude, Some(&k("recipes")), &mut out).unwrap();
        assert_eq!(out.len(), 1);
        s.rank_where("cake", 10, Archived::Exclude, Some(&k("unknown_tag")), &mut out).unwrap();
        assert!(out.is_empty());
        assert!(ranked(&mut s, "", 10).is_empty());
        assert!(ranked(&mut s, " ,;", 10).is_empty());
        assert!(ranked(&mut s, "absent", 10).is_empty());
        assert!(ranked(&mut s, "cake", 0).is_empty());
    }

    #[test]
    fn too_many_query_words_is_a_capacity_error() {
        let d = temp_dir("rank-long");
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.put(&k("a"), "x", 1).unwrap();
        let q: String = (0..=RANK_MAX_TERMS).map(|i| format!("q{} ", i)).collect();
        let mut out = Ranked::new();
        let e = s.rank(&q, 10, &mut out).unwrap_err();
        assert_eq!(e.code(), crate::error::Code::CapacityExceeded);
        assert!(e.message().contains("RANK_MAX_TERMS"));
        // The same word many times is one word.
        s.rank(&"x ".repeat(500), 10, &mut out).unwrap();
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn a_full_index_is_rebuilt_and_keeps_ranking_right() {
        let d = temp_dir("rank-rebuild");
        // Capacity 16: few document numbers, so overwrites force rebuilds.
        let mut s = Store::open_with_capacity(&d, 16).unwrap();
        let mut rng = Rng(7);
        assert!(ranked(&mut s, "w1", 5).is_empty());
        for round in 0..200 {
            let n = 3 + rng.below(10);
            s.put(&k(&format!("e{}", round % 10)), &rng.text(20, n), 1).unwrap();
        }
        let q = "w0 w3 w7";
        let want = brute(&mut s, q, 10, Archived::Exclude);
        assert_same(&ranked(&mut s, q, 10), &want, q);
        assert!(s.recall_stats().delta_docs <= Sizes::delta(room_for(16)).docs);
    }

    fn corpus(s: &mut Store, rng: &mut Rng, n: usize, from: usize) {
        for i in from..from + n {
            let len = 5 + rng.below(25);
            let text = rng.text(80, len);
            s.put(&k(&format!("doc,d{}", i)), &text, 1).unwrap();
        }
    }

    #[test]
    fn the_index_file_is_read_back_and_brought_up_to_date() {
        let d = temp_dir("rank-file");
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        let mut rng = Rng(99);
        corpus(&mut s, &mut rng, 200, 0);
        let q = "w1 w5 w9";
        let want = ranked(&mut s, q, 15);
        s.checkpoint().unwrap();
        assert!(d.join(super::file::RECALL_FILE_NAME).exists());
        drop(s);
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        assert_eq!(ranked(&mut s, q, 15), want);
        assert!(s.recall_stats().from_file);
        // Changes after the file was written (no checkpoint since): new, changed, deleted,
        // archived entries are brought up to date when the file is read.
        corpus(&mut s, &mut rng, 30, 200);
        corpus(&mut s, &mut rng, 20, 0);
        s.delete(&k("doc,d50")).unwrap();
        s.set_archived(&k("doc,d51"), true, 2).unwrap();
        let want = brute(&mut s, q, 15, Archived::Exclude);
        drop(s);
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        assert_same(&ranked(&mut s, q, 15), &want, q);
        assert!(s.recall_stats().from_file);
        assert_eq!(s.recall_stats().documents as usize, s.len());
        // A read-only store reads it too, and writes nothing.
        let before = std::fs::read(d.join("store.fts")).unwrap();
        let mut r = Store::open_read_only_with_capacity(&d, 512).unwrap();
        assert_same(&ranked(&mut r, q, 15), &want, q);
        assert_eq!(std::fs::read(d.join("store.fts")).unwrap(), before);
    }

    #[test]
    fn a_damaged_or_foreign_index_file_is_detected_and_rebuilt() {
        use super::file::RecallFile;
        let d = temp_dir("rank-file-bad");
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        let mut rng = Rng(5);
        corpus(&mut s, &mut rng, 150, 0);
        let q = "w2 w3 w40";
        let want = ranked(&mut s, q, 10);
        s.checkpoint().unwrap();
        assert!(matches!(s.recall_file_check(), RecallFile::Usable { docs: 150, .. }));
        drop(s);
        let path = d.join("store.fts");
        let good = std::fs::read(&path).unwrap();
        // A flipped byte anywhere (header or body), a cut, a foreign file.
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for at in [3, 20, 70, good.len() / 2, good.len() - 1] {
            let mut b = good.clone();
            b[at] ^= 0x10;
            cases.push(b);
        }
        cases.push(good[..good.len() - 7].to_vec());
        cases.push(good[..40].to_vec());
        cases.push(b"not an index".to_vec());
        for bad in cases {
            std::fs::write(&path, &bad).unwrap();
            let mut s = Store::open_with_capacity(&d, 512).unwrap();
            assert!(matches!(s.recall_file_check(), RecallFile::Damaged(_)));
            assert_eq!(ranked(&mut s, q, 10), want);
            assert!(!s.recall_stats().from_file);
        }
        // After a compaction the old file names another log: not used.
        std::fs::write(&path, &good).unwrap();
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        s.delete(&k("doc,d3")).unwrap();
        s.compact().unwrap();
        let want = brute(&mut s, q, 10, Archived::Exclude);
        std::fs::write(&path, &good).unwrap();
        drop(s);
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        assert!(matches!(s.recall_file_check(), RecallFile::Stale(_)));
        assert_same(&ranked(&mut s, q, 10), &want, q);
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(s.recall_file_check(), RecallFile::Missing));
    }

    #[test]
    fn a_read_only_store_searches_an_up_to_date_file_in_place() {
        let d = temp_dir("rank-in-place");
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        let mut rng = Rng(31);
        corpus(&mut s, &mut rng, 300, 0);
        s.set_archived(&k("doc,d7"), true, 2).unwrap();
        let mut queries = vec!["w1 w2 w3".to_string(), "w0".into(), "doc".into(), "absent w5".into()];
        for _ in 0..40 {
            queries.push(format!("{} {} {}", rng.word(80), rng.word(80), rng.word(80)));
        }
        let mut want = Vec::new();
        for q in &queries {
            want.push((ranked(&mut s, q, 10), brute(&mut s, q, 10, Archived::Include)));
        }
        s.close().unwrap();
        let mut r = Store::open_read_only_with_capacity(&d, 512).unwrap();
        for (q, (w, w_all)) in queries.iter().zip(&want) {
            assert_same(&ranked(&mut r, q, 10), w, q);
            let mut out = Ranked::new();
            r.rank_where(q, 10, Archived::Include, None, &mut out).unwrap();
            let got: Vec<_> = out.hits().iter().map(|h| (h.id, h.score)).collect();
            assert_same(&got, w_all, q);
        }
        let st = r.recall_stats();
        assert!(st.in_place && st.ready && st.delta_docs == 0);
        assert!(st.ram_bytes < 2 << 20, "{}", st.ram_bytes);
        // Tags filter in place too.
        let mut out = Ranked::new();
        r.rank_where("w1 w2", 10, Archived::Exclude, Some(&k("d3")), &mut out).unwrap();
        assert!(out.hits().iter().all(|h| r.key(h.id).unwrap().has_tag("d3")));

        // The log grown since the file: loaded and brought up to date instead.
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        corpus(&mut s, &mut rng, 10, 300);
        let q = "w1 w4";
        let want = brute(&mut s, q, 10, Archived::Exclude);
        drop(s);
        let mut r = Store::open_read_only_with_capacity(&d, 512).unwrap();
        assert_same(&ranked(&mut r, q, 10), &want, q);
        // The file in place, and the 10 new entries in the delta.
        let st = r.recall_stats();
        assert!(st.in_place && st.delta_docs == 10, "{:?}", st);
    }

    #[test]
    fn a_read_only_store_far_behind_the_file_merges_into_a_private_dir() {
        let d = temp_dir("rank-private");
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        let mut rng = Rng(4242);
        corpus(&mut s, &mut rng, 120, 0);
        assert!(!ranked(&mut s, "w1", 3).is_empty());
        s.close().unwrap();
        // The log moves on without the index (never searched since): 80 new, 40 changed.
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        corpus(&mut s, &mut rng, 80, 120);
        corpus(&mut s, &mut rng, 40, 10);
        s.delete(&k("doc,d3")).unwrap();
        let queries = ["w1 w2", "w0 w7 w30", "doc", "w11"];
        let want: Vec<_> = queries.iter().map(|q| brute(&mut s, q, 10, Archived::Exclude)).collect();
        drop(s);
        let before: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
        let fts = std::fs::read(d.join("store.fts")).unwrap();
        let mut r = Store::open_read_only_with_capacity(&d, 512).unwrap();
        r.recall_test_delta(8, 4096);
        for (q, w) in queries.iter().zip(&want) {
            assert_same(&ranked(&mut r, q, 10), w, q);
        }
        let st = r.recall_stats();
        assert!(st.merges > 0 && st.in_place, "{:?}", st);
        let private = r.recall.private.clone().unwrap();
        assert!(!private.starts_with(&d) && private.join("store.fts").exists());
        drop(r);
        // Nothing written in the data directory; the private one is gone.
        let after: Vec<_> = std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(before, after);
        assert_eq!(std::fs::read(d.join("store.fts")).unwrap(), fts);
        assert!(!private.exists());
    }

    #[test]
    fn the_largest_values_fit_the_delta_even_when_escaped() {
        let d = temp_dir("rank-large");
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.put(&k("small"), "w1 w2", 1).unwrap();
        assert_eq!(ranked(&mut s, "w1", 5).len(), 1);
        // A value of control characters: a record six times its size, no words.
        let max = crate::limits::STORE_VALUE_MAX_BYTES;
        s.put(&k("escapes"), &"\u{1}".repeat(max), 1).unwrap();
        s.put(&k("escapes"), &"\u{2}".repeat(max - 1), 1).unwrap();
        // The most words a value can hold, overwritten by as many.
        let many = "a ".repeat(max / 2);
        s.put(&k("words"), &many, 1).unwrap();
        s.put(&k("words"), &"b ".repeat(max / 2), 1).unwrap();
        s.put(&k("escapes"), "w1 a b", 1).unwrap();
        for q in ["w1", "a", "b", "escapes words"] {
            assert_same(&ranked(&mut s, q, 5), &brute(&mut s, q, 5, Archived::Exclude), q);
        }
        assert!(s.recall_stats().ready);
    }

    #[test]
    fn damage_met_while_searching_in_place_falls_back_and_rebuilds() {
        let d = temp_dir("rank-in-place-bad");
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        let mut rng = Rng(77);
        corpus(&mut s, &mut rng, 200, 0);
        // A word in every entry ("doc", a tag): its postings are read to their end.
        let q = "doc";
        let want = ranked(&mut s, q, 300);
        s.close().unwrap();
        let path = d.join("store.fts");
        let good = std::fs::read(&path).unwrap();
        // Flip a byte inside the postings of "doc" (its record in the body: length, word,
        // count, blocks, bytes, postings).
        let mut bad = good.clone();
        let rec = (128 + 200 * 20..good.len()).find(|&i| good[i..].starts_with(b"\x03doc")).unwrap();
        bad[rec + 1 + 3 + 12 + 1] ^= 0x04;
        std::fs::write(&path, &bad).unwrap();
        let mut r = Store::open_read_only_with_capacity(&d, 512).unwrap();
        let got = ranked(&mut r, q, 300);
        assert_eq!(got, want);
        assert!(!r.recall_stats().in_place);
    }

    #[test]
    fn relevant_takes_a_text_of_any_length_by_its_rarest_words() {
        let d = temp_dir("rank-relevant");
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        // 100 entries sharing common words; one holds the rare words of the task.
        for i in 0..100 {
            let common: String = (0..80).map(|j| format!("c{} ", (i + j) % 90)).collect();
            s.put(&k(&format!("note,n{}", i)), &common, 1).unwrap();
        }
        s.put(&k("target"), "zebra quokka narwhal c1 c2", 1).unwrap();
        let task: String = (0..90).map(|j| format!("c{} ", j)).collect::<String>() + "zebra quokka narwhal unknownword";
        let mut out = Ranked::new();
        let e = s.rank(&task, 5, &mut out).unwrap_err();
        assert_eq!(e.code(), crate::error::Code::CapacityExceeded);
        s.relevant(&task, 5, &mut out).unwrap();
        assert_eq!(s.key(out.hits()[0].id).unwrap().as_str(), "target");
        assert_eq!(out.len(), 5);
        assert!(out.dropped_words() >= 90 + 3 - 64, "{}", out.dropped_words());
        // A short text: the same as rank, nothing dropped.
        s.relevant("zebra c5", 5, &mut out).unwrap();
        let relevant: Vec<_> = out.hits().to_vec();
        assert_eq!(out.dropped_words(), 0);
        s.rank("zebra c5", 5, &mut out).unwrap();
        assert_eq!(out.hits(), &relevant[..]);
        // In place too (read-only, file up to date).
        s.close().unwrap();
        let mut r = Store::open_read_only_with_capacity(&d, 512).unwrap();
        r.relevant(&task, 5, &mut out).unwrap();
        assert!(r.recall_stats().in_place);
        assert_eq!(r.key(out.hits()[0].id).unwrap().as_str(), "target");
    }

    /// The place of `word`'s record in the body of `file`: where its postings start, their
    /// bytes, its blocks.
    fn word_record(file: &[u8], word: &[u8]) -> (usize, usize, u32) {
        let mut pat = vec![word.len() as u8];
        pat.extend_from_slice(word);
        let docs = u32::from_le_bytes(file[12..16].try_into().unwrap()) as usize;
        let rec = (128 + docs * 20..file.len()).find(|&i| file[i..].starts_with(&pat)).unwrap();
        let at = rec + pat.len();
        let blocks = u32::from_le_bytes(file[at + 4..at + 8].try_into().unwrap());
        let bytes = u32::from_le_bytes(file[at + 8..at + 12].try_into().unwrap()) as usize;
        (at + 12, bytes, blocks)
    }

    /// `file` with its body's CRC and its header's CRC made to match again (damage only
    /// the structures' own CRCs can find).
    fn reseal(file: &mut [u8]) {
        let body_len = u64::from_le_bytes(file[52..60].try_into().unwrap()) as usize;
        let crc = crate::memory::hash::crc32(&file[128..128 + body_len]);
        file[48..52].copy_from_slice(&crc.to_le_bytes());
        let crc = crate::memory::hash::crc32(&file[..124]);
        file[124..128].copy_from_slice(&crc.to_le_bytes());
    }

    #[test]
    fn a_damaged_skip_group_or_block_is_found_by_check_and_by_a_search() {
        use super::super::view::StoreView;
        use super::file::RecallFile;
        let d = temp_dir("rank-skip-bad");
        let mut s = Store::open_with_capacity(&d, 1024).unwrap();
        let mut rng = Rng(91);
        corpus(&mut s, &mut rng, 600, 0);
        // "doc" (a tag of every entry): 600 postings in 5 blocks; a query that reads them.
        let q = "doc w1";
        let want = ranked(&mut s, q, 600);
        s.close().unwrap();
        let path = d.join("store.fts");
        let good = std::fs::read(&path).unwrap();
        let (at, bytes, blocks) = word_record(&good, b"doc");
        assert_eq!(blocks, 5);
        let skip = at + bytes;
        let end0 = u32::from_le_bytes(good[skip + 4..skip + 8].try_into().unwrap()) as usize;
        // A skip entry's impact, the group's CRC, a byte of the second block.
        for (i, spot) in [skip + 12, skip + 5 * 16, at + end0 + 3].into_iter().enumerate() {
            for sealed in [false, true] {
                let mut bad = good.clone();
                bad[spot] ^= 0x21;
                if sealed {
                    reseal(&mut bad);
                }
                std::fs::write(&path, &bad).unwrap();
                let what = format!("spot {} sealed {}", i, sealed);
                // check finds it (by the body's CRC, or sealed, by the structure's own).
                let mut w = Store::open_with_capacity(&d, 1024).unwrap();
                assert!(matches!(w.recall_file_check(), RecallFile::Damaged(_)), "{}", what);
                drop(w);
                // The checkpoint read in place: the search meets it, an IO error (the command
                // then opens the store whole).
                let mut v = StoreView::open(&d, 1024).unwrap().unwrap();
                let mut out = Ranked::new();
                let e = v.rank(q, 600, Archived::Exclude, &mut ColdRecall::new(), &mut out).unwrap_err();
                assert_eq!(e.code(), crate::error::Code::Io, "{}", what);
                // A read-only store searching in place meets it too, and rebuilds from the log.
                let mut r = Store::open_read_only_with_capacity(&d, 1024).unwrap();
                assert_same(&ranked(&mut r, q, 600), &want, &what);
                assert!(!r.recall_stats().in_place, "{}", what);
                // The writer rebuilds it (its open checks every section).
                let mut w = Store::open_with_capacity(&d, 1024).unwrap();
                assert_same(&ranked(&mut w, q, 600), &want, &what);
                assert!(!w.recall_stats().from_file, "{}", what);
            }
        }
        std::fs::write(&path, &good).unwrap();
        let mut w = Store::open_with_capacity(&d, 1024).unwrap();
        assert!(matches!(w.recall_file_check(), RecallFile::Usable { docs: 600, .. }));
    }

    #[test]
    fn a_damaged_document_page_is_found_by_a_search_in_place() {
        use super::super::view::StoreView;
        let d = temp_dir("rank-docs-bad");
        let mut s = Store::open_with_capacity(&d, 1024).unwrap();
        let mut rng = Rng(93);
        corpus(&mut s, &mut rng, 600, 0);
        let q = "doc";
        let want = ranked(&mut s, q, 600);
        s.close().unwrap();
        let path = d.join("store.fts");
        let good = std::fs::read(&path).unwrap();
        // A length in the third page of lengths, and an entry in the third page of records.
        for spot in [128 + 4 * 520, 128 + 600 * 4 + 16 * 520] {
            let mut bad = good.clone();
            bad[spot] ^= 0x01;
            reseal(&mut bad);
            std::fs::write(&path, &bad).unwrap();
            let mut v = StoreView::open(&d, 1024).unwrap().unwrap();
            let mut out = Ranked::new();
            let e = v.rank(q, 600, Archived::Exclude, &mut ColdRecall::new(), &mut out).unwrap_err();
            assert_eq!(e.code(), crate::error::Code::Io, "{}", spot);
            let mut r = Store::open_read_only_with_capacity(&d, 1024).unwrap();
            assert_same(&ranked(&mut r, q, 600), &want, "read-only");
            assert!(!r.recall_stats().from_file);
        }
    }

    #[test]
    fn an_older_format_is_rebuilt_with_a_warning_and_checked_as_out_of_date() {
        use super::file::RecallFile;
        let d = temp_dir("rank-format");
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        let mut rng = Rng(95);
        corpus(&mut s, &mut rng, 50, 0);
        let want = ranked(&mut s, "w1 w2", 10);
        s.close().unwrap();
        let path = d.join("store.fts");
        let mut old = std::fs::read(&path).unwrap();
        old[8..12].copy_from_slice(&4u32.to_le_bytes());
        reseal(&mut old);
        std::fs::write(&path, &old).unwrap();
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        assert!(matches!(s.recall_file_check(), RecallFile::Stale(_)));
        assert_same(&ranked(&mut s, "w1 w2", 10), &want, "rebuilt");
        assert!(!s.recall_stats().from_file);
        s.close().unwrap();
        assert!(matches!(s_check(&d), RecallFile::Usable { docs: 50, .. }));
    }

    fn s_check(d: &std::path::Path) -> super::file::RecallFile {
        Store::open_with_capacity(d, 512).unwrap().recall_file_check()
    }

    #[test]
    fn a_file_of_an_early_merge_is_not_searched_in_place() {
        use super::super::view::StoreView;
        let d = temp_dir("rank-early");
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        let mut rng = Rng(97);
        corpus(&mut s, &mut rng, 100, 0);
        s.checkpoint().unwrap();
        // Built with a tiny delta: early merges write store.fts covering the whole log, the
        // last delta is not written (no close).
        s.recall_test_delta(8, 4096);
        s.recall_rebuild().unwrap();
        assert!(s.recall_stats().delta_docs > 0);
        drop(s);
        let mut v = StoreView::open(&d, 512).unwrap().unwrap();
        let mut out = Ranked::new();
        assert!(!v.rank("w1", 10, Archived::Exclude, &mut ColdRecall::new(), &mut out).unwrap());
    }

    mod blocks {
        use super::*;
        use proptest::prelude::*;

        /// `n` entries of words `w0`.. drawn with weight 1 / (rank + 1) from `vocab`, 1 to
        /// `len` each; some entries long, so lengths vary widely.
        fn fill(s: &mut Store, rng: &mut super::Rng, n: usize, vocab: u64, len: u64) {
            s.begin_batch(n as u64).unwrap();
            for i in 0..n {
                let words = 1 + rng.below(if i % 17 == 0 { 4 * len } else { len });
                let text: Vec<String> = (0..words)
                    .map(|_| {
                        let top = 1 + rng.below(vocab);
                        format!("w{}", rng.below(top))
                    })
                    .collect();
                s.put(&k(&format!("doc,d{}", i)), &text.join(" "), 1).unwrap();
            }
            s.end_batch().unwrap();
        }

        fn check(s: &mut Store, queries: &[(String, usize)], what: &str) {
            for (q, limit) in queries {
                let want = brute(s, q, *limit, Archived::Exclude);
                assert_same(&ranked(s, q, *limit), &want, &format!("{}: {} ({})", what, q, limit));
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
            /// Top-k with block-max pruning over postings of many blocks (and documents of
            /// the base taken out, and a delta) equals BM25 computed over every entry, in the
            /// writer, in a read-only store and read in place.
            #[test]
            fn pruned_top_k_equals_exhaustive_scoring(
                seed in 1u64..u64::MAX, n in 200usize..700, vocab in 2u64..40, len in 2u64..30,
                changes in 0usize..60,
            ) {
                let d = temp_dir("rank-blocks");
                let mut s = Store::open_with_capacity(&d, 1024).unwrap();
                let mut rng = super::Rng(seed);
                fill(&mut s, &mut rng, n, vocab, len);
                let mut queries = Vec::new();
                for _ in 0..12 {
                    let words = 1 + rng.below(4);
                    let q: Vec<String> = (0..words).map(|_| format!("w{}", rng.below(vocab + 2))).collect();
                    queries.push((q.join(" "), 1 + rng.below(25) as usize));
                }
                queries.push(("doc".into(), 7));
                queries.push(("doc w0 w1".into(), 3));
                s.checkpoint().unwrap();
                check(&mut s, &queries, "base");
                // Entries overwritten and deleted: dead documents in the base, a delta.
                for _ in 0..changes {
                    let i = rng.below(n as u64);
                    let key = k(&format!("doc,d{}", i));
                    if rng.below(4) == 0 {
                        let _ = s.delete(&key);
                    } else {
                        let text: Vec<String> = (0..1 + rng.below(len)).map(|_| format!("w{}", rng.below(vocab))).collect();
                        s.put(&key, &text.join(" "), 2).unwrap();
                    }
                }
                check(&mut s, &queries, "base and delta");
                s.close().unwrap();
                let mut r = Store::open_read_only_with_capacity(&d, 1024).unwrap();
                check(&mut r, &queries, "read-only");
                for (q, limit) in &queries {
                    let mut v = super::super::super::view::StoreView::open(&d, 1024).unwrap().unwrap();
                    let mut out = Ranked::new();
                    prop_assert!(v.rank(q, *limit, Archived::Exclude, &mut ColdRecall::new(), &mut out).unwrap());
                    let got: Vec<_> = out.hits().iter().map(|h| (h.id, h.score)).collect();
                    assert_same(&got, &brute(&mut r, q, *limit, Archived::Exclude), &format!("in place: {}", q));
                }
                drop(r);
                let mut w = Store::open_with_capacity(&d, 1024).unwrap();
                let usable = matches!(w.recall_file_check(), super::super::file::RecallFile::Usable { .. });
                prop_assert!(usable);
                let _ = std::fs::remove_dir_all(&d);
            }
        }
    }

    #[test]
    fn heap_keeps_the_best_in_order() {
        let mut r = Ranked::new();
        for (i, sc) in [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0].iter().enumerate() {
            r.offer(RankHit { id: i as EntryId, score: *sc }, 4);
        }
        r.sort();
        let got: Vec<_> = r.hits().iter().map(|h| (h.id, h.score)).collect();
        assert_eq!(got, [(5, 9.0), (7, 6.0), (4, 5.0), (2, 4.0)]);
        let mut r = Ranked::new();
        for id in [5, 3, 9, 1] {
            r.offer(RankHit { id, score: 1.0 }, 3);
        }
        r.sort();
        assert_eq!(r.hits().iter().map(|h| h.id).collect::<Vec<_>>(), [1, 3, 5]);
    }

    /// A checkpoint's merge run in steps while the store changes between them (saves,
    /// overwrites, deletes, archives): every query meanwhile, and after it ends, answers as
    /// BM25 from scratch; the file it wrote, reopened (writer and reader), answers the same.
    #[test]
    fn a_merge_in_steps_beside_changes() {
        let d = temp_dir("rank-steps");
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        let mut rng = Rng(0x51E9);
        let text = |rng: &mut Rng| {
            (0..3 + rng.next() % 12).map(|_| format!("w{}", rng.next() % 40)).collect::<Vec<_>>().join(" ")
        };
        for i in 0..300 {
            let t = text(&mut rng);
            s.put(&k(&format!("e{},doc", i)), &t, 1).unwrap();
        }
        let queries = ["w0 w1", "w3 w17 w5", "w39", "doc w2"];
        let check = |s: &mut Store, what: &str| {
            for q in queries {
                assert_same(&ranked(s, q, 10), &brute(s, q, 10, Archived::Exclude), &format!("{}: {}", what, q));
            }
        };
        check(&mut s, "built");
        s.checkpoint().unwrap();
        for round in 0..3 {
            for _ in 0..40 {
                let i = rng.next() % 340;
                s.put(&k(&format!("e{},doc", i)), &text(&mut rng), 2).unwrap();
            }
            s.recall_start_merge().unwrap();
            assert!(s.recall_merging());
            let merges = s.recall_stats().merges;
            let mut steps = 0;
            while s.recall_merging() {
                s.recall_step(Some(std::time::Instant::now())).unwrap();
                steps += 1;
                let i = rng.next() % 340;
                let key = k(&format!("e{},doc", i));
                match rng.next() % 4 {
                    0 if s.find(&key).is_some() => {
                        s.delete(&key).unwrap();
                    }
                    1 if s.find(&key).is_some() => {
                        let a = s.info(s.find(&key).unwrap()).unwrap().archived;
                        s.set_archived(&key, !a, 3).unwrap();
                    }
                    _ => {
                        s.put(&key, &text(&mut rng), 4).unwrap();
                    }
                }
                if steps % 5 == 0 {
                    check(&mut s, &format!("round {} step {}", round, steps));
                }
                assert!(steps < 10_000, "the merge does not end");
            }
            assert!(steps > 3, "the merge ran in {} steps", steps);
            assert_eq!(s.recall_stats().merges, merges + 1);
            check(&mut s, &format!("round {} merged", round));
            assert_eq!(s.recall_stats().documents as usize, s.len());
        }
        // The file as the last merge left it, behind the log: a writer and a reader bring it
        // up to date and answer the same.
        drop(s);
        let mut s = Store::open_with_capacity(&d, 512).unwrap();
        check(&mut s, "reopened");
        assert!(s.recall_stats().from_file);
        drop(s);
        let mut r = Store::open_read_only_with_capacity(&d, 512).unwrap();
        check(&mut r, "read-only");
        drop(r);
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A word in every document (postings of many blocks) is counted and written across
    /// steps: a step of the least work walks at most a block of its postings and a block of
    /// the next pass, never the whole word (at 1,048,576 entries a step was as long as its
    /// longest word, 100-200 ms: issue 39). Both ways a word is written: its postings kept
    /// in the term buffer while counted, and (the buffer made small) counted, then walked
    /// again to be written. Queries meanwhile, and after, answer as BM25 from scratch.
    #[test]
    fn a_long_word_is_merged_across_steps() {
        use super::file::SKIP_BLOCK;
        let d = temp_dir("rank-long-word");
        let n = 16 * SKIP_BLOCK;
        let mut s = Store::open_with_capacity(&d, n + 64).unwrap();
        s.begin_batch(n as u64).unwrap();
        for i in 0..n {
            s.put(&k(&format!("a{},b{}", i / 64, i % 64)), &format!("common w{} w{}", i % 7, 7 + i % 11), 1).unwrap();
        }
        s.end_batch().unwrap();
        let queries = ["common", "common w3", "a3 w9 w2", "again b7"];
        let check = |s: &mut Store, what: &str| {
            for q in queries {
                assert_same(&ranked(s, q, 10), &brute(s, q, 10, Archived::Exclude), &format!("{}: {}", what, q));
            }
        };
        check(&mut s, "built");
        s.checkpoint().unwrap();
        for round in 0..2 {
            if round == 1 {
                // Room for a few blocks only: the long words are counted, then written.
                s.recall.scratch.term = Vec::with_capacity(12 * SKIP_BLOCK);
            }
            // Documents of the base taken out (no block copied as it is) and a delta.
            for i in (round..n).step_by(37) {
                s.put(&k(&format!("a{},b{}", i / 64, i % 64)), &format!("common again w{}", i % 5), 2).unwrap();
            }
            s.recall_start_merge().unwrap();
            let merges = s.recall_stats().merges;
            let mut steps = 0;
            while s.recall_merging() {
                s.recall_step(Some(std::time::Instant::now())).unwrap();
                steps += 1;
                if steps % 17 == 0 {
                    let i = steps % n;
                    s.put(&k(&format!("a{},b{}", i / 64, i % 64)), "common again and again", 3).unwrap();
                    check(&mut s, &format!("round {} step {}", round, steps));
                }
                assert!(steps < 1_000_000, "the merge does not end");
            }
            assert_eq!(s.recall_stats().merges, merges + 1);
            let most = s.recall_stats().step_postings_most;
            assert!(most <= 2 * SKIP_BLOCK as u64, "round {}: a step walked {} postings", round, most);
            check(&mut s, &format!("round {} merged", round));
            assert_eq!(s.recall_stats().documents as usize, s.len());
        }
        drop(s);
        let mut s = Store::open_with_capacity(&d, n + 64).unwrap();
        check(&mut s, "reopened");
        assert!(matches!(s.recall_file_check(), super::file::RecallFile::Usable { .. }));
        drop(s);
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A due checkpoint's cycle writes `store.ckpt` and starts nothing: the text index's
    /// merge it asks for starts at the next cycle's upkeep that finds the file in place, and
    /// runs in steps after (the
    /// start, 6-16 ms at 1,048,576 entries, no longer adds to the checkpoint's write, the
    /// longest cycle of the upkeep bench). Queries after the merge answer as BM25 from scratch.
    #[test]
    fn a_due_checkpoint_starts_its_merge_at_the_next_cycle() {
        let d = temp_dir("rank-due");
        let mut s = Store::open_with_capacity(&d, 4096).unwrap();
        s.put(&k("e0,doc"), &due_text(0), 1).unwrap();
        assert!(!ranked(&mut s, "w1", 10).is_empty());
        s.checkpoint().unwrap();
        let mut cycles = until_a_due_checkpoint(&mut s);
        assert!(!s.recall_merging(), "the merge started in the checkpoint's cycle");
        // The merge starts at the first cycle that finds the checkpoint in place (none runs
        // while it is finished beside the cycle).
        s.flush_access().unwrap();
        cycles = until_in_place(&mut s, cycles);
        assert!(s.recall_merging(), "the next cycle did not start the merge");
        merge_to_its_end(&mut s, cycles);
        drop(s);
        let _ = std::fs::remove_dir_all(&d);
    }

    /// The text of entry `i` of the due-checkpoint tests: 400 words of 60.
    fn due_text(i: usize) -> String {
        (0..400).map(|j| format!("w{}", (i * 7 + j) % 60)).collect::<Vec<_>>().join(" ")
    }

    /// Cycles (a new entry and the upkeep each) until one takes a due checkpoint, which is
    /// then finished beside the cycle; the cycles run. New entries only: no garbage, so no
    /// compaction (whose checkpoint is taken at once).
    fn until_a_due_checkpoint(s: &mut Store) -> usize {
        let mut cycles = 0;
        loop {
            s.put(&k(&format!("e{},doc", cycles + 1)), &due_text(cycles), 2).unwrap();
            let syncing = s.checkpoint_syncing();
            s.flush_access().unwrap();
            cycles += 1;
            assert!(cycles < 4000, "no checkpoint came");
            if !syncing && s.checkpoint_syncing() {
                return cycles;
            }
        }
    }

    /// Runs the upkeep (after `cycles`) until the checkpoint finished beside the cycle is put
    /// in place; the cycles run then.
    fn until_in_place(s: &mut Store, mut cycles: usize) -> usize {
        while s.checkpoint_syncing() {
            std::thread::sleep(std::time::Duration::from_millis(1));
            s.flush_access().unwrap();
            cycles += 1;
            assert!(cycles < 100_000, "the checkpoint is never put in place");
        }
        cycles
    }

    /// Runs the merge under way to its end, a step a cycle (at most 200,000 cycles after
    /// `cycles`): it is one merge, and queries answer as BM25 from scratch after it.
    fn merge_to_its_end(s: &mut Store, mut cycles: usize) {
        let merges = s.recall_stats().merges;
        while s.recall_merging() {
            s.flush_access().unwrap();
            cycles += 1;
            assert!(cycles < 200_000, "the merge does not end");
        }
        assert_eq!(s.recall_stats().merges, merges + 1);
        for q in ["w1 w2", "doc w59"] {
            assert_same(&ranked(s, q, 10), &brute(s, q, 10, Archived::Exclude), q);
        }
    }

    /// The step that opens a merge's new file does only that: the entries changed or created
    /// while the merge ran are brought into the delta by the next steps (each bounded as the
    /// merge's are), or by a query that comes first. Queries answer as BM25 from scratch
    /// after either.
    #[test]
    fn the_catch_up_after_a_merge_in_steps_runs_in_later_steps() {
        let text = |i: usize| (0..60).map(|j| format!("w{}", (i * 7 + j) % 90)).collect::<Vec<_>>().join(" ");
        let step =
            |s: &mut Store| s.recall_merge_step(std::time::Instant::now() + std::time::Duration::from_millis(25));
        for query_first in [false, true] {
            let d = temp_dir("rank-catch-up");
            let mut s = Store::open_with_capacity(&d, 4096).unwrap();
            for i in 0..300 {
                s.put(&k(&format!("e{i},doc")), &text(i), 1).unwrap();
            }
            assert!(!ranked(&mut s, "w1", 10).is_empty());
            s.checkpoint().unwrap();
            for i in 0..50 {
                s.put(&k(&format!("e{i},doc")), &text(i + 1000), 2).unwrap();
            }
            s.recall_flush_in_steps().unwrap();
            assert!(s.recall_merging(), "no merge started");
            let merges = s.recall_stats().merges;
            let mut i = 0;
            // Changes and new entries while the merge runs, a step after each.
            while s.recall_stats().merges == merges {
                s.put(&k(&format!("e{},doc", i % 300)), &text(i + 2000), 3).unwrap();
                s.put(&k(&format!("new{i},doc")), &text(i + 3000), 3).unwrap();
                step(&mut s).unwrap();
                i += 1;
                assert!(i < 100_000, "the merge does not end");
            }
            // Written; the next step opens it, and leaves the catch-up to the steps after.
            step(&mut s).unwrap();
            assert!(s.recall_catching_up(), "the step that opened the new file caught up too");
            assert!(s.recall_merging());
            if query_first {
                assert_same(
                    &ranked(&mut s, "w1 w2", 10),
                    &brute(&mut s, "w1 w2", 10, Archived::Exclude),
                    "query first",
                );
                assert!(!s.recall_catching_up(), "the query did not finish the catch-up");
            }
            let mut steps = 0;
            while s.recall_merging() {
                step(&mut s).unwrap();
                steps += 1;
                assert!(steps < 100_000, "the catch-up does not end");
            }
            assert_eq!(s.recall_stats().merges, merges + 1);
            for q in ["w1 w2", "doc w59", "w3 w88 w17"] {
                assert_same(&ranked(&mut s, q, 10), &brute(&mut s, q, 10, Archived::Exclude), q);
            }
            drop(s);
            let _ = std::fs::remove_dir_all(&d);
        }
    }

    /// While a due checkpoint is finished and synced beside the cycle, no step of a merge
    /// runs (a step's own sync would wait behind the checkpoint's, its work beside the
    /// finishing thread's): the merges the checkpoint asked for start at the first cycle that
    /// finds it in place, and run to their end. Queries answer as BM25 from scratch meanwhile
    /// and after.
    #[test]
    fn no_merge_step_runs_while_a_checkpoint_is_finished_beside_the_cycle() {
        let d = temp_dir("rank-held");
        let mut s = Store::open_with_capacity(&d, 4096).unwrap();
        s.put(&k("e0,doc"), &due_text(0), 1).unwrap();
        assert!(!ranked(&mut s, "w1", 10).is_empty());
        s.checkpoint().unwrap();
        let (release, _taken) = s.hold_checkpoint_finish();
        let mut cycles = until_a_due_checkpoint(&mut s);
        // The finishing thread is held: the checkpoint stays under way for these cycles.
        for i in 0..5 {
            s.put(&k(&format!("e{},doc", cycles + 1)), &due_text(cycles), 3).unwrap();
            s.flush_access().unwrap();
            cycles += 1;
            assert!(s.checkpoint_syncing(), "the held checkpoint was put in place");
            assert!(!s.recall_merging(), "a merge started while the checkpoint was being finished (cycle {i})");
            assert_same(&ranked(&mut s, "w1 w2", 10), &brute(&mut s, "w1 w2", 10, Archived::Exclude), "held");
        }
        drop(release);
        cycles = until_in_place(&mut s, cycles);
        assert!(s.recall_merging(), "the cycle that put the checkpoint in place did not start the merge");
        merge_to_its_end(&mut s, cycles);
        drop(s);
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A checkpoint taken at once after a due one writes what the due one's merges would
    /// have: the next cycle starts none (a batch's end takes a due checkpoint; the upkeep
    /// bench's store, built in a batch and checkpointed, then merged its whole index again in
    /// its first cycles).
    #[test]
    fn a_checkpoint_at_once_leaves_no_merge_due() {
        let d = temp_dir("rank-due-at-once");
        let mut s = Store::open_with_capacity(&d, 4096).unwrap();
        s.put(&k("e0,doc"), &due_text(0), 1).unwrap();
        assert!(!ranked(&mut s, "w1", 10).is_empty());
        s.checkpoint().unwrap();
        // More than STORE_CHECKPOINT_EVERY_BYTES of log: the batch's end takes a due checkpoint.
        s.begin_batch(3500).unwrap();
        for i in 1..3500 {
            s.put(&k(&format!("e{},doc", i)), &due_text(i), 2).unwrap();
        }
        s.end_batch().unwrap();
        s.checkpoint().unwrap();
        assert!(!s.recall_merging());
        s.put(&k("e1,doc"), "one change", 3).unwrap();
        s.flush_access().unwrap();
        assert!(!s.recall_merging(), "a merge started after a checkpoint taken at once");
        drop(s);
        let _ = std::fs::remove_dir_all(&d);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        #[derive(Clone, Debug)]
        enum Op {
            Put(u8, Vec<u8>),
            Retag(u8, u8),
            Archive(u8),
            Delete(u8),
            Merge,
            Compact,
            Reopen,
            /// A checkpoint's merge started, run in steps.
            StartMerge,
            /// Steps of it, each with its time already up (the least work a step does).
            Steps(u8),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                6 => (0u8..16, proptest::collection::vec(0u8..24, 1..14)).prop_map(|(k, w)| Op::Put(k, w)),
                1 => (0u8..16, 0u8..6).prop_map(|(k, t)| Op::Retag(k, t)),
                1 => (0u8..16).prop_map(Op::Archive),
                2 => (0u8..16).prop_map(Op::Delete),
                1 => Just(Op::Merge),
                1 => Just(Op::Compact),
                1 => Just(Op::Reopen),
                2 => Just(Op::StartMerge),
                3 => (1u8..12).prop_map(Op::Steps),
            ]
        }

        /// The key of slot `k` now (retags add tags), if it exists.
        fn key_of(s: &Store, k: u8) -> Option<Key> {
            let tag = format!("k{}", k);
            s.ids().filter_map(|id| s.key(id)).find(|key| key.has_tag(&tag))
        }

        fn check(s: &mut Store, queries: &[String], what: &str) {
            for q in queries {
                let want = brute(s, q, 10, Archived::Exclude);
                assert_same(&ranked(s, q, 10), &want, &format!("{}: {}", what, q));
                let mut out = Ranked::new();
                s.rank_where(q, 20, Archived::Include, None, &mut out).unwrap();
                let got: Vec<_> = out.hits().iter().map(|h| (h.id, h.score)).collect();
                assert_same(&got, &brute(s, q, 20, Archived::Include), &format!("{} (all): {}", what, q));
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
            /// Base + delta, with merges when the (tiny) delta is full, at checkpoints and at
            /// random points, answers as BM25 computed from scratch over the live entries.
            #[test]
            fn base_and_delta_rank_as_from_scratch(ops in proptest::collection::vec(op(), 1..60), small in 2usize..8) {
                let d = temp_dir("rank-props");
                let mut s = Store::open_with_capacity(&d, 64).unwrap();
                s.recall_test_delta(small, 400);
                assert!(ranked(&mut s, "w1", 5).is_empty());
                let queries: Vec<String> =
                    vec!["w0 w1".into(), "w2 w5 w9".into(), "w17 w23".into(), "k3 t1 w0".into(), "w4".into()];
                for (i, op) in ops.iter().enumerate() {
                    match op {
                        Op::Put(k, words) => {
                            let key = key_of(&s, *k).unwrap_or_else(|| k_(&format!("k{},doc", k)));
                            let text: Vec<String> = words.iter().map(|w| format!("w{}", w)).collect();
                            s.put(&key, &text.join(" "), 1).unwrap();
                        }
                        Op::Retag(k, t) => {
                            if let Some(key) = key_of(&s, *k) {
                                let _ = s.add_tags(&key, &k_(&format!("t{}", t)), 2);
                            }
                        }
                        Op::Archive(k) => {
                            if let Some(key) = key_of(&s, *k) {
                                let a = s.info(s.find(&key).unwrap()).unwrap().archived;
                                s.set_archived(&key, !a, 3).unwrap();
                            }
                        }
                        Op::Delete(k) => {
                            if let Some(key) = key_of(&s, *k) {
                                s.delete(&key).unwrap();
                            }
                        }
                        Op::Merge => s.checkpoint().unwrap(),
                        Op::Compact => {
                            s.compact().unwrap();
                        }
                        Op::Reopen => {
                            drop(s);
                            s = Store::open_with_capacity(&d, 64).unwrap();
                            s.recall_test_delta(small, 400);
                        }
                        Op::StartMerge => s.recall_start_merge().unwrap(),
                        Op::Steps(n) => {
                            for _ in 0..*n {
                                s.recall_step(Some(std::time::Instant::now())).unwrap();
                            }
                        }
                    }
                    if i % 7 == 6 {
                        check(&mut s, &queries, &format!("step {} {:?}", i, op));
                    }
                }
                check(&mut s, &queries, "end");
                let st = s.recall_stats();
                prop_assert_eq!(st.documents as usize, s.len());
                // A clean stop writes the file; reopened, read-only too, it answers the same.
                s.close().unwrap();
                let mut s = Store::open_with_capacity(&d, 64).unwrap();
                check(&mut s, &queries, "reopened");
                drop(s);
                let mut r = Store::open_read_only_with_capacity(&d, 64).unwrap();
                check(&mut r, &queries, "read-only");
                let _ = std::fs::remove_dir_all(&d);
            }
        }

        fn k_(s: &str) -> Key {
            normalize(s).unwrap()
        }
    }
}
