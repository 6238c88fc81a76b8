//! Ranked retrieval, whatever holds the postings: BM25 as FTS5 computes it, exact top-k with
//! MaxScore pruning, over query words that walk their postings in document order (the index
//! in RAM, [`super::fulltext`], or its file, [`super::disk`]). The formula and the
//! pruning are argued in [`super`].

use crate::error::Result;
use crate::limits::{RANK_MAX_RESULTS, RANK_MAX_TERMS};
use crate::memory::store::fulltext::{FullText, NONE};
use crate::memory::store::tokenize::{Token, Tokens};
use crate::memory::store::EntryId;

/// BM25's k1, as FTS5.
pub const K1: f64 = 1.2;
/// BM25's b, as FTS5.
pub const B: f64 = 0.75;
/// FTS5's IDF for a word in half the documents or more.
const MIN_IDF: f64 = 1e-6;
/// An impact of 1 (`tf / (tf + norm)` reaches 1 only in the limit).
pub const IMPACT_ONE: f64 = 65535.0;
/// Reference mean lengths are stored in 64ths of a token.
pub const MEAN_SCALE: f64 = 64.0;

/// The reference mean length of an index of `docs` documents and `tokens` tokens, as stored
/// (64ths of a token, rounded down, at least 1).
pub(in crate::memory::store) fn mean_ref(tokens: u64, docs: u64) -> u32 {
    if docs == 0 {
        return 1;
    }
    let m = (tokens as f64 / docs as f64 * MEAN_SCALE).floor();
    if m >= f64::from(u32::MAX) {
        u32::MAX
    } else {
        (m as u32).max(1)
    }
}

/// The impact of a posting of `tf` occurrences in a document of `len` tokens, for the
/// reference mean length `mean` (as stored): an upper bound of `tf / (tf + norm)` in 65535ths.
pub(in crate::memory::store) fn impact(tf: u32, len: u32, mean: u32) -> u16 {
    let a = f64::from(mean.max(1)) / MEAN_SCALE;
    let f = f64::from(tf);
    let x = f / (f + K1 * (1.0 - B + B * f64::from(len) / a));
    let q = (x * IMPACT_ONE).floor() + 1.0;
    if q >= IMPACT_ONE {
        u16::MAX
    } else if q <= 1.0 {
        1
    } else {
        q as u16
    }
}

/// One ranked entry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RankHit {
    /// The entry.
    pub id: EntryId,
    /// Its BM25 score (higher is better; `-bm25()` of FTS5).
    pub score: f64,
}

/// The bit of a hit's id that says it is of the other segment a query ran over (the cold
/// tier's: [`RankHit::is_cold`]); the rest is the document's number there.
pub const SEGMENT_HIT: EntryId = 1 << 31;

impl RankHit {
    /// Whether the entry lives in the cold store, else in the live store.
    pub fn is_cold(&self) -> bool {
        self.id & SEGMENT_HIT != 0
    }
}

/// The results of a ranked query, best first: a bounded list reserved once
/// ([`RANK_MAX_RESULTS`]), reused from query to query without allocating.
pub struct Ranked {
    hits: Vec<RankHit>,
    dropped: usize,
}

impl Default for Ranked {
    fn default() -> Self {
        Ranked::new()
    }
}

impl Ranked {
    /// An empty list with room for [`RANK_MAX_RESULTS`] hits.
    pub fn new() -> Ranked {
        Ranked { hits: Vec::with_capacity(RANK_MAX_RESULTS), dropped: 0 }
    }

    /// The hits, best first.
    pub fn hits(&self) -> &[RankHit] {
        &self.hits
    }

    /// Number of hits.
    pub fn len(&self) -> usize {
        self.hits.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.hits.is_empty()
    }

    /// Empties the list.
    pub fn clear(&mut self) {
        self.hits.clear();
        self.dropped = 0;
    }

    /// Words of the text that [`crate::memory::store::Store::relevant`] left out (beyond
    /// the `RANK_MAX_TERMS` rarest; a word counted at each of its occurrences); 0 for other
    /// queries.
    pub fn dropped_words(&self) -> usize {
        self.dropped
    }

    pub(in crate::memory::store) fn set_dropped_words(&mut self, n: usize) {
        self.dropped = n;
    }

    /// Puts back the hits `saved` (as [`Ranked::hits`] gave them, in the order kept): what
    /// a pass over one segment found is undone (`saved.len()` at most the capacity).
    pub(in crate::memory::store) fn restore(&mut self, saved: &[RankHit]) {
        self.hits.clear();
        let room = self.hits.capacity();
        self.hits.extend_from_slice(saved.get(..saved.len().min(room)).unwrap_or(&[]));
    }

    /// Room for hits.
    pub(in crate::memory::store) fn capacity(&self) -> usize {
        self.hits.capacity()
    }

    /// Keeps `h` if it is among the best `limit` (a min-heap on the worst kept, root first).
    pub(in crate::memory::store) fn offer(&mut self, h: RankHit, limit: usize) {
        if self.hits.len() < limit {
            self.hits.push(h);
            let mut i = self.hits.len() - 1;
            while i > 0 {
                let p = (i - 1) / 2;
                if !self.worse_at(i, p) {
                    break;
                }
                self.hits.swap(i, p);
                i = p;
            }
        } else if self.hits.first().is_some_and(|root| better(&h, root)) {
            if let Some(root) = self.hits.first_mut() {
                *root = h;
            }
            let n = self.hits.len();
            let mut i = 0;
            loop {
                let (l, r) = (2 * i + 1, 2 * i + 2);
                let mut m = i;
                if l < n && self.worse_at(l, m) {
                    m = l;
                }
                if r < n && self.worse_at(r, m) {
                    m = r;
                }
                if m == i {
                    break;
                }
                self.hits.swap(i, m);
                i = m;
            }
        }
    }

    fn worse_at(&self, a: usize, b: usize) -> bool {
        match (self.hits.get(a), self.hits.get(b)) {
            (Some(x), Some(y)) => better(y, x),
            _ => false,
        }
    }

    /// Whether a hit of `score` might be kept (before its entry is known: ties are kept by
    /// entry id).
    fn would_take(&self, score: f64, limit: usize) -> bool {
        self.hits.len() < limit || self.hits.first().is_some_and(|root| score >= root.score)
    }

    /// The worst score kept, when `limit` are kept.
    fn threshold(&self, limit: usize) -> Option<f64> {
        if self.hits.len() < limit {
            return None;
        }
        self.hits.first().map(|h| h.score)
    }

    /// Puts the hits best first.
    pub(in crate::memory::store) fn sort(&mut self) {
        crate::sort::sort_by(&mut self.hits, better);
    }
}

/// Higher score first, then the lower id.
fn better(a: &RankHit, b: &RankHit) -> bool {
    a.score > b.score || (a.score == b.score && a.id < b.id)
}

/// A query word as the index knows it: its postings in the base (`store.fts`) and in the
/// delta (RAM), and its live document count over both.
#[derive(Clone, Copy, Default)]
pub struct QueryWord {
    /// Unique per word: the byte offset of its postings in the base, or the delta's term id
    /// with the top bit set when the base does not have it.
    pub at: u64,
    /// Their length in bytes in the base (0: not in the base).
    pub bytes: u32,
    /// Their CRC-32.
    pub crc: u32,
    /// Postings in the base (live and no longer current).
    pub base_df: u32,
    /// The last of them (a document number of the base).
    pub last: u32,
    /// Their blocks in the base.
    pub blocks: u32,
    /// The largest impact of their blocks (see [`super::file`]).
    pub impact: u16,
    /// The reference mean length of their impacts (64ths of a token).
    pub mean: u32,
    /// The delta's term, if it has one.
    pub term: Option<u32>,
    /// Live documents holding it (base and delta).
    pub df: u32,
    /// Times it occurs in the query.
    pub mult: f64,
}

/// The distinct words of a query that the index knows, in query order.
pub struct QueryWords {
    /// The words.
    pub words: [QueryWord; RANK_MAX_TERMS],
    /// How many.
    pub n: usize,
    /// Words left out (see [`QueryWords::parse`]).
    pub dropped: usize,
}

impl QueryWords {
    /// The known words of `query`, looked up with `find`. More than [`RANK_MAX_TERMS`]
    /// distinct words (known or not) is `CAPACITY_EXCEEDED`; with `rarest`, the
    /// `RANK_MAX_TERMS` known words of fewest documents are kept instead and the others
    /// counted in `dropped`.
    pub fn parse(
        query: &str,
        rarest: bool,
        mut find: impl FnMut(&[u8]) -> Result<Option<QueryWord>>,
    ) -> Result<QueryWords> {
        let mut q = QueryWords { words: [QueryWord::default(); RANK_MAX_TERMS], n: 0, dropped: 0 };
        let mut words = Tokens::new(query);
        let mut tok = Token::default();
        let mut distinct = 0usize;
        while words.next_into(&mut tok) {
            let Some(w) = find(tok.as_bytes())? else {
                if !rarest {
                    // A word no entry holds: it matches nothing, but counts toward the limit.
                    distinct += 1;
                    if distinct > RANK_MAX_TERMS {
                        break;
                    }
                }
                continue;
            };
            if let Some(c) = q.words.iter_mut().take(q.n).find(|c| c.at == w.at) {
                c.mult += 1.0;
                continue;
            }
            if rarest && q.n == RANK_MAX_TERMS {
                // Full: the new word replaces the most common kept one if it is rarer.
                let most = q.words.iter_mut().max_by_key(|c| c.df);
                if let Some(c) = most.filter(|c| c.df > w.df) {
                    *c = QueryWord { mult: 1.0, ..w };
                }
                q.dropped += 1;
                continue;
            }
            distinct += 1;
            if distinct > RANK_MAX_TERMS {
                break;
            }
            if let Some(c) = q.words.get_mut(q.n) {
                *c = QueryWord { mult: 1.0, ..w };
                q.n += 1;
            }
        }
        if distinct > RANK_MAX_TERMS {
            bail!(
                CapacityExceeded,
                "a ranked query weighs at most {} distinct words (RANK_MAX_TERMS); shorten the query",
                RANK_MAX_TERMS
            );
        }
        Ok(q)
    }
}

/// A query word's walk over its postings, in increasing document order.
pub trait Walk {
    /// The current document, or [`NONE`] at the end.
    fn doc(&self) -> u32;
    /// Occurrences of the word in the current document.
    fn tf(&self) -> u32;
    /// Moves to the next posting.
    fn advance(&mut self) -> Result<()>;
    /// Moves to the first posting at or after document `target`.
    fn seek(&mut self, target: u32) -> Result<()> {
        while self.doc() < target {
            self.advance()?;
        }
        Ok(())
    }
    /// The bound of the postings from document `target` on that lie in the block holding
    /// the first of them, and that block's last document, without moving [`Walk::doc`]
    /// (the walk may pass, unread, blocks before `target`: the caller asks for no
    /// document before it afterwards). The bound is an impact (65535ths of the word's
    /// `IDF · (k1 + 1)` at the file's reference mean length), `u32::MAX` for no bound
    /// tighter than that, 0 with `NONE` when no posting is left.
    fn block_max(&mut self, _target: u32) -> Result<(u32, u32)> {
        Ok(if self.doc() == NONE { (0, NONE) } else { (u32::MAX, NONE) })
    }
}

/// The documents a query scores: their lengths and entries.
pub trait Docs {
    /// Tokens of document `d`; `None` when it is not current.
    fn tokens(&mut self, d: u32) -> Result<Option<u32>>;
    /// Entry of document `d`; `None` when it is not current.
    fn entry(&mut self, d: u32) -> Result<Option<EntryId>>;
    /// Whether [`Docs::tokens`] of `d` would read the file (a candidate is then first
    /// bounded without its length).
    fn costly(&self, _d: u32) -> bool {
        false
    }
}

/// A word's weight in a query.
#[derive(Clone, Copy, Default)]
struct Weight {
    mult: f64,
    idf: f64,
    /// `mult · IDF · (k1 + 1)`: more than any one document can get from this word.
    sup: f64,
    /// What an impact of 1 (65535) bounds, with the reference mean length's correction.
    per_impact: f64,
    /// The most one document can get from this word.
    ub: f64,
}

impl Weight {
    /// This word's part of a document's score, for `f` occurrences and the document's
    /// `k1 · (1 − b + b · |D| / avgdl)`.
    fn contribution(&self, f: u32, norm: f64) -> f64 {
        let f = f64::from(f);
        self.mult * (self.idf * ((f * (K1 + 1.0)) / (f + norm)))
    }

    /// The bound of a block of impact `q` (see [`Walk::block_max`]).
    fn bound(&self, q: u32) -> f64 {
        let b = f64::from(q) * self.per_impact;
        if q == u32::MAX || b > self.sup {
            self.sup
        } else {
            b
        }
    }
}

/// Relative slack given to every bound against rounding (bounds only ever prune).
const SLACK: f64 = 1.0 + 1e-9;

/// Whether a document whose score is at most `bound` cannot enter results whose worst kept
/// score is `theta`.
fn below(bound: f64, theta: Option<f64>) -> bool {
    theta.is_some_and(|t| bound * SLACK < t)
}

/// The collection a query runs over.
pub struct Collection {
    /// Live documents.
    pub docs: u64,
    /// Their tokens.
    pub tokens: u64,
    /// At most the fewest tokens of a document, when reading a document's length costs a
    /// read (in place): a candidate is then first bounded with that length.
    pub min_len: Option<u32>,
}

/// Exact top-k by MaxScore with block-max bounds: `cur[i]` walks the postings of
/// `q.words[i]`; `docs` gives the documents' lengths and entries; `admit` filters entries.
/// Hits go to `out` (unsorted: the caller sorts them).
///
/// Words are ordered by the most a document can get from each (`ub`: its largest block
/// impact, or `IDF · (k1 + 1)` where the delta holds it); once the k-th best score passes the
/// sum of the smallest bounds, documents holding only those words cannot enter the results
/// and those words' postings are no longer walked, only probed (*non-essential*). For each
/// candidate document, the bounds of the blocks holding it in every word are summed first:
/// below the threshold, no document up to the first of those blocks' ends can enter either,
/// and the walks jump past it unread. Otherwise the document's length is read, its essential
/// words scored, and its non-essential ones probed from the largest bound down while the
/// score plus the bounds left can still reach the threshold. Only a document that would be
/// kept has its entry looked up (and `admit`ted).
///
/// The body is compiled once, for both the live store's documents and the cold tier's,
/// behind `dyn`: a candidate costs an indirect call for its length and one for its entry.
#[inline]
pub fn max_score<C: Walk, D: Docs>(
    q: &QueryWords,
    cur: &mut [C],
    coll: &Collection,
    docs: &mut D,
    admit: impl Fn(EntryId) -> bool,
    limit: usize,
    out: &mut Ranked,
) -> Result<()> {
    max_score_dyn(q, cur, coll, docs, &admit, limit, out)
}

/// [`max_score`]'s body.
#[inline(never)]
fn max_score_dyn<C: Walk>(
    q: &QueryWords,
    cur: &mut [C],
    coll: &Collection,
    docs: &mut dyn Docs,
    admit: &dyn Fn(EntryId) -> bool,
    limit: usize,
    out: &mut Ranked,
) -> Result<()> {
    let n_docs = coll.docs as f64;
    let avgdl = if coll.docs == 0 { 1.0 } else { coll.tokens as f64 / n_docs };
    let n = q.n.min(cur.len());
    let mut w = [Weight::default(); RANK_MAX_TERMS];
    for (wi, qw) in w.iter_mut().zip(q.words.iter()).take(n) {
        let df = f64::from(qw.df);
        let idf = ((n_docs - df + 0.5) / (df + 0.5)).ln();
        let idf = if idf <= 0.0 { MIN_IDF } else { idf };
        let sup = qw.mult * idf * (K1 + 1.0);
        // A block's impact was taken at the reference mean length A; at avgdl it bounds
        // the contributions by impact · max(1, avgdl / A) (see recall_file).
        let reference = f64::from(qw.mean) / MEAN_SCALE;
        let per_impact = match qw.mean {
            0 => f64::INFINITY,
            _ => sup / IMPACT_ONE * (avgdl / reference).max(1.0) * SLACK,
        };
        let mut wi_ = Weight { mult: qw.mult, idf, sup, per_impact, ub: 0.0 };
        let base = if qw.bytes > 0 { wi_.bound(u32::from(qw.impact)) } else { 0.0 };
        let delta = if qw.term.is_some() { sup } else { 0.0 };
        wi_.ub = base.max(delta);
        *wi = wi_;
    }
    // Words by upper bound, smallest first, and the running sums of those bounds.
    let mut perm = [0u8; RANK_MAX_TERMS];
    for (i, p) in perm.iter_mut().enumerate().take(n) {
        *p = i as u8;
    }
    let ub = |i: &u8| w.get(*i as usize).map_or(0.0, |x| x.ub);
    if let Some(p) = perm.get_mut(..n) {
        crate::sort::sort_by_cmp(p, |a, b| ub(a).total_cmp(&ub(b)));
    }
    let at = |k: usize| perm.get(k).copied().unwrap_or(0) as usize;
    let mut prefix = [0f64; RANK_MAX_TERMS];
    let mut sum = 0.0;
    for (k, p) in prefix.iter_mut().enumerate().take(n) {
        sum += w.get(at(k)).map_or(0.0, |x| x.ub);
        *p = sum;
    }
    let mut first_ess = 0usize;
    // Each word's part of the current document's score (0: the document lacks it).
    let mut part = [0f64; RANK_MAX_TERMS];
    // The bound of each word's block at the current document (by rank in `perm`).
    let mut bb = [0f64; RANK_MAX_TERMS];
    // The last document each of those bounds holds to (asked again after it).
    let mut ends = [NONE; RANK_MAX_TERMS];
    loop {
        let mut d = NONE;
        for k in first_ess..n {
            d = d.min(cur.get(at(k)).map_or(NONE, |c| c.doc()));
        }
        if d == NONE {
            break;
        }
        let theta = out.threshold(limit);
        if theta.is_some() {
            // The blocks at d: their bounds, and the first of their ends. A word's bound
            // holds up to its block's end whatever its walk did since, so it is asked
            // again only past that end.
            let mut bound = 0.0;
            let mut end = NONE;
            for (k, (b, e)) in bb.iter_mut().zip(ends.iter_mut()).enumerate().take(n) {
                if d > *e || *e == NONE {
                    let i = at(k);
                    let Some(c) = cur.get_mut(i) else { continue };
                    let (imp, last) = c.block_max(d)?;
                    *b = w.get(i).map_or(0.0, |x| x.bound(imp));
                    *e = if last == NONE { NONE - 1 } else { last };
                }
                bound += *b;
                end = end.min(*e);
            }
            if end == NONE - 1 {
                end = NONE;
            }
            if below(bound, theta) {
                // No document from d to `end` can enter the results.
                if end == NONE {
                    break;
                }
                for k in first_ess..n {
                    if let Some(c) = cur.get_mut(at(k)) {
                        c.seek(end + 1)?;
                    }
                }
                continue;
            }
        }
        if let (Some(t), Some(min), true) = (theta, coll.min_len, docs.costly(d)) {
            // Bounded before its length is read: its essential words at the shortest length,
            // its other words at their blocks' bounds.
            let norm = K1 * (1.0 - B + B * f64::from(min) / avgdl);
            let mut s: f64 = bb.iter().take(first_ess).sum();
            for k in first_ess..n {
                let i = at(k);
                if let Some(c) = cur.get(i).filter(|c| c.doc() == d) {
                    // The smaller of two bounds: at the shortest length, and its block's
                    // (taken above for the block that holds d): fewer pages of lengths read.
                    let x = w.get(i).map_or(0.0, |x| x.contribution(c.tf(), norm));
                    s += x.min(bb.get(k).copied().unwrap_or(f64::INFINITY));
                }
            }
            if s * SLACK * SLACK < t {
                for k in first_ess..n {
                    if let Some(c) = cur.get_mut(at(k)).filter(|c| c.doc() == d) {
                        c.advance()?;
                    }
                }
                continue;
            }
        }
        let len = docs.tokens(d)?;
        let norm = K1 * (1.0 - B + B * f64::from(len.unwrap_or(0)) / avgdl);
        let mut s = 0.0;
        part.iter_mut().take(n).for_each(|p| *p = 0.0);
        for k in first_ess..n {
            let i = at(k);
            let Some(c) = cur.get_mut(i) else { continue };
            if c.doc() == d {
                if len.is_some() {
                    let x = w.get(i).map_or(0.0, |x| x.contribution(c.tf(), norm));
                    if let Some(p) = part.get_mut(i) {
                        *p = x;
                    }
                    s += x;
                }
                c.advance()?;
            }
        }
        if len.is_none() {
            continue;
        }
        let mut rest: f64 = bb.iter().take(first_ess).sum();
        let mut pruned = false;
        for k in (0..first_ess).rev() {
            if rest > 0.0 && below(s + rest, theta) {
                pruned = true;
                break;
            }
            let b = bb.get(k).copied().unwrap_or(0.0);
            rest -= b;
            if b == 0.0 {
                continue;
            }
            let i = at(k);
            let Some(c) = cur.get_mut(i) else { continue };
            c.seek(d)?;
            if c.doc() == d {
                let x = w.get(i).map_or(0.0, |x| x.contribution(c.tf(), norm));
                if let Some(p) = part.get_mut(i) {
                    *p = x;
                }
                s += x;
            }
        }
        if pruned {
            continue;
        }
        // The exact score, its words' parts summed in query order as FTS5 sums its phrases.
        let mut score = 0.0;
        for &p in part.iter().take(n) {
            if p > 0.0 {
                score += p;
            }
        }
        if !out.would_take(score, limit) {
            continue;
        }
        let Some(entry) = docs.entry(d)?.filter(|&e| admit(e)) else { continue };
        out.offer(RankHit { id: entry, score }, limit);
        if let Some(t) = out.threshold(limit) {
            while first_ess < n && prefix.get(first_ess).is_some_and(|&p| p * SLACK < t) {
                first_ess += 1;
            }
        }
    }
    Ok(())
}

/// One word's walk over two segments: first `base` (document numbers below `shift`), then
/// `delta` (its numbers moved up by `shift`), so documents still come in increasing order.
pub struct Chain<A: Walk, D: Walk> {
    base: Option<A>,
    delta: D,
    shift: u32,
    /// The current document (kept, as `max_score` asks for it far more often than it moves).
    cur: u32,
    /// Whether the base's walk is done.
    in_delta: bool,
}

impl<A: Walk, D: Walk> Chain<A, D> {
    /// The walk of a word with postings `base` (if the base has it) then `delta`, the base
    /// holding `shift` documents.
    pub fn new(base: Option<A>, delta: D, shift: u32) -> Self {
        let mut c = Chain { base, delta, shift, cur: NONE, in_delta: false };
        c.settle();
        c
    }

    /// Moves to the delta once the base's walk is done, and notes the current document.
    fn settle(&mut self) {
        if !self.in_delta {
            match self.base.as_ref().map_or(NONE, |b| b.doc()) {
                NONE => self.in_delta = true,
                d => {
                    self.cur = d;
                    return;
                }
            }
        }
        self.cur = match self.delta.doc() {
            NONE => NONE,
            d => d.saturating_add(self.shift),
        };
    }
}

impl<A: Walk, D: Walk> Walk for Chain<A, D> {
    fn doc(&self) -> u32 {
        self.cur
    }

    fn tf(&self) -> u32 {
        match &self.base {
            Some(b) if !self.in_delta => b.tf(),
            _ => self.delta.tf(),
        }
    }

    fn advance(&mut self) -> Result<()> {
        match &mut self.base {
            Some(b) if !self.in_delta => b.advance()?,
            _ => self.delta.advance()?,
        }
        self.settle();
        Ok(())
    }

    fn seek(&mut self, target: u32) -> Result<()> {
        if self.cur >= target {
            return Ok(());
        }
        if !self.in_delta {
            if let Some(b) = &mut self.base {
                b.seek(target)?;
            }
            self.settle();
            if !self.in_delta {
                return Ok(());
            }
        }
        self.delta.seek(target.saturating_sub(self.shift))?;
        self.settle();
        Ok(())
    }

    fn block_max(&mut self, target: u32) -> Result<(u32, u32)> {
        if !self.in_delta && target < self.shift {
            if let Some(b) = &mut self.base {
                match b.block_max(target)? {
                    (0, NONE) => {}
                    found => return Ok(found),
                }
            }
        }
        // The delta's postings: no bound tighter than the word's.
        Ok(if self.delta.doc() == NONE { (0, NONE) } else { (u32::MAX, NONE) })
    }
}

/// A walk over a term's postings in the index in RAM.
#[derive(Default)]
pub struct RamWalk<'a> {
    ix: Option<&'a FullText>,
    block: u32,
    pos: u32,
    doc: u32,
}

impl<'a> RamWalk<'a> {
    /// The walk of term `t`'s postings.
    pub fn new(ix: &'a FullText, t: u32) -> RamWalk<'a> {
        let mut c = RamWalk { ix: Some(ix), block: ix.term(t).map_or(NONE, |x| x.head), pos: 0, doc: NONE };
        c.load();
        c
    }

    fn load(&mut self) {
        self.doc = match self.ix.and_then(|ix| ix.block(self.block)) {
            Some(b) if self.pos < b.n => b.doc.get(self.pos as usize).copied().unwrap_or(NONE),
            _ => NONE,
        };
    }
}

impl Walk for RamWalk<'_> {
    fn doc(&self) -> u32 {
        self.doc
    }

    fn tf(&self) -> u32 {
        self.ix
            .and_then(|ix| ix.block(self.block))
            .and_then(|b| b.tf.get(self.pos as usize))
            .map_or(0, |&f| u32::from(f))
    }

    fn advance(&mut self) -> Result<()> {
        let Some(b) = self.ix.and_then(|ix| ix.block(self.block)) else {
            self.doc = NONE;
            return Ok(());
        };
        self.pos += 1;
        if self.pos >= b.n {
            self.block = b.next;
            self.pos = 0;
        }
        self.load();
        Ok(())
    }

    fn seek(&mut self, target: u32) -> Result<()> {
        while self.doc < target {
            let Some(b) = self.ix.and_then(|ix| ix.block(self.block)) else {
                self.doc = NONE;
                return Ok(());
            };
            let last = b.doc.get((b.n as usize).saturating_sub(1)).copied().unwrap_or(0);
            if last < target {
                self.block = b.next;
                self.pos = 0;
                self.load();
            } else {
                self.advance()?;
            }
        }
        Ok(())
    }
}
