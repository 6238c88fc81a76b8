//! Ranked recall over the cold tier's text index ([`super::recall`]): the cold segment's
//! part of a query that ranks live and cold entries together, and the hits it gives (a
//! [`COLD_HIT`] id, read back from `store.cold`).

use super::recall::{check_len, decode_put, is_cold_hit, ColdRecall, State, COLD_HIT};
use super::COLD_NAME;
use crate::error::Result;
use crate::limits::{RANK_MAX_RESULTS, RANK_MAX_TERMS};
use crate::memory::key::Key;
use crate::memory::log::{self, PutHead};
use crate::memory::query::Archived;
use crate::memory::store::recall::disk::{BaseDocs, DiskWalk};
use crate::memory::store::recall::fulltext::{FullText, NONE};
use crate::memory::store::recall::rank::{max_score, Chain, Collection, Docs, QueryWord, QueryWords, RamWalk, Ranked};
use crate::memory::store::recall::{lookup, Live, Segment};
use crate::memory::store::{EntryId, EntryInfo, Store};
use std::fs::File;
use std::os::unix::fs::FileExt;

/// One entry of the cold store as a hit shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColdHit {
    /// Its fields as the live store last held them (`id` is its id then, not a live one).
    pub head: PutHead,
    /// Its tags.
    pub key: Key,
}

impl Segment for ColdRecall {
    fn is_ready(&self) -> bool {
        ColdRecall::is_ready(self)
    }

    fn totals(&self) -> (u64, u64) {
        ColdRecall::totals(self)
    }

    fn min_len(&self) -> Option<u32> {
        self.base.is_open().then_some(self.base.header.min_len)
    }

    fn lookup(&mut self, w: &[u8]) -> Result<Option<QueryWord>> {
        lookup(&mut self.base, &self.index, w)
    }

    fn rank(
        &mut self,
        q: &QueryWords,
        coll: &Collection,
        (live, archived, tags): (&mut dyn Live, Archived, Option<&Key>),
        limit: usize,
        out: &mut Ranked,
    ) -> Result<()> {
        let mut filter = ColdFilter { live, archived, tags };
        // A tag filter turns most cold documents away: admitted as they come. Else (the usual
        // query) every current document is taken as admitted, which reads nothing; the hits
        // kept are then checked, and only when one is turned away is the pass run again
        // admitting as they come. Exact either way: when every cold hit kept is admitted,
        // they are the best of the admitted, as these are among the taken. The check as they
        // come reads, for each candidate that enters the results, its page of records and
        // its record in store.cold: most of a query's reads before (issue 39).
        if tags.is_none() && !self.eager {
            if self.saved.capacity() == 0 {
                self.saved.reserve_exact(RANK_MAX_RESULTS);
            }
            let mut saved = core::mem::take(&mut self.saved);
            saved.clear();
            saved.extend_from_slice(out.hits().get(..out.hits().len().min(saved.capacity())).unwrap_or(&[]));
            let res =
                self.pass(q, coll, &mut filter, limit, out, false).and_then(|_| self.admits_hits(&mut filter, out));
            let admitted = match res {
                Ok(ok) => ok,
                Err(e) => {
                    self.saved = saved;
                    return Err(e);
                }
            };
            if admitted {
                self.saved = saved;
                return Ok(());
            }
            self.retries += 1;
            out.restore(&saved);
            self.saved = saved;
        }
        self.pass(q, coll, &mut filter, limit, out, true)
    }
}

impl ColdRecall {
    /// One pass of max-score over the cold segment; `check` admits each candidate as it
    /// enters the results (else every current document is taken, see [`Segment::rank`]).
    fn pass(
        &mut self,
        q: &QueryWords,
        coll: &Collection,
        filter: &mut ColdFilter<'_>,
        limit: usize,
        out: &mut Ranked,
        check: bool,
    ) -> Result<()> {
        let ColdRecall { base, index, file, rec, .. } = self;
        let shift = base.doc_count();
        let mut parts = base.walk_parts();
        let mut walks: [Chain<DiskWalk<'_>, RamWalk<'_>>; RANK_MAX_TERMS] =
            core::array::from_fn(|_| Chain::new(None, RamWalk::new(index, NONE), shift));
        for (c, w) in walks.iter_mut().zip(q.words.iter()).take(q.n) {
            let mut b = None;
            if w.bytes > 0 {
                let (Some(f), Some(buf), Some(dec)) = (parts.file, parts.bufs.next(), parts.decoded.next()) else {
                    bail!(Internal, "no walk buffer")
                };
                b = Some(DiskWalk::new(f, buf, dec, w)?);
            }
            *c = Chain::new(b, RamWalk::new(index, w.term.unwrap_or(NONE)), shift);
        }
        let mut docs = ColdDocs { base: parts.docs, delta: index, shift, file: file.as_ref(), rec, filter, check };
        max_score(q, &mut walks, coll, &mut docs, |_| true, limit, out)
    }

    /// Whether every cold hit of `out` passes the filter (each one's record read).
    fn admits_hits(&mut self, filter: &mut ColdFilter<'_>, out: &Ranked) -> Result<bool> {
        let ColdRecall { base, index, file, rec, .. } = self;
        let shift = base.doc_count();
        let parts = base.walk_parts();
        let mut docs =
            ColdDocs { base: parts.docs, delta: index, shift, file: file.as_ref(), rec, filter, check: true };
        for h in out.hits().iter().filter(|h| is_cold_hit(h.id)) {
            if docs.admitted(h.id & !COLD_HIT)?.is_none() {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Which cold entries a ranked query admits: `archived` says which pass; with `tags`, only
/// those carrying all of them; never one whose key the live store holds (asked of `live`).
struct ColdFilter<'a> {
    live: &'a mut dyn Live,
    archived: Archived,
    tags: Option<&'a Key>,
}

/// The cold segment's documents as a query scores them: base, then delta; a document is
/// named (as a [`COLD_HIT`] id) only when it is current and (with `check`) its record passes
/// the filter.
struct ColdDocs<'a, 'f> {
    base: BaseDocs<'a>,
    delta: &'a FullText,
    shift: u32,
    file: Option<&'a File>,
    rec: &'a mut Vec<u8>,
    filter: &'a mut ColdFilter<'f>,
    check: bool,
}

impl ColdDocs<'_, '_> {
    /// Document `d` as a hit when it is current and its record passes the filter.
    fn admitted(&mut self, d: u32) -> Result<Option<EntryId>> {
        let place = match d.checked_sub(self.shift) {
            None => self.base.record(d)?.map(|x| (x.offset, x.rec_len)),
            Some(x) => self.delta.doc(x).filter(|x| x.entry != NONE).map(|x| (x.offset, x.rec_len)),
        };
        let (Some((offset, len)), Some(file)) = (place, self.file) else { return Ok(None) };
        check_len(len)?;
        self.rec.clear();
        self.rec.resize(len as usize, 0);
        file.read_exact_at(self.rec, offset)
            .map_err(|e| err!(Io, "reading {} bytes at byte {} of {} failed: {}", len, offset, COLD_NAME, e))?;
        let (head, key, _) = decode_put(self.rec)?;
        let f = &mut *self.filter;
        if !f.archived.admits(head.archived)
            || f.tags.is_some_and(|t| !t.tags().all(|x| key.tags().any(|y| y == x)))
            || f.live.holds(&key)?
        {
            return Ok(None);
        }
        Ok(Some(COLD_HIT | d))
    }
}

impl Docs for ColdDocs<'_, '_> {
    fn tokens(&mut self, d: u32) -> Result<Option<u32>> {
        match d.checked_sub(self.shift) {
            None => self.base.tokens(d),
            Some(d) => Ok(self.delta.doc(d).filter(|x| x.entry != NONE).map(|x| x.tokens)),
        }
    }

    fn costly(&self, d: u32) -> bool {
        d < self.shift && self.base.costly(d)
    }

    fn entry(&mut self, d: u32) -> Result<Option<EntryId>> {
        if self.check {
            return self.admitted(d);
        }
        let current = match d.checked_sub(self.shift) {
            None => self.base.is_current(d),
            Some(x) => self.delta.doc(x).is_some_and(|x| x.entry != NONE),
        };
        Ok(current.then_some(COLD_HIT | d))
    }
}

impl Store {
    /// The metadata of the entry of a ranked hit: a live entry's ([`Store::info`]), or a cold
    /// one's (a [`COLD_HIT`] id, read from `store.cold`; its `id` stays the hit's).
    pub fn hit_info(&mut self, id: EntryId) -> Result<Option<EntryInfo>> {
        if !is_cold_hit(id) {
            return Ok(self.info(id));
        }
        let mut v = core::mem::take(&mut self.vbuf);
        let hit = self.cold_hit(id, &mut v);
        self.vbuf = v;
        Ok(hit?.map(|h| h.info(id)))
    }

    /// The newest cold copy of `key`, read in place (the cold text index's table of each
    /// key's newest copy, then that one record of `store.cold`): what `storage_load` gives the
    /// model for a key `storage_search` found cold. The entry stays cold (saved again, it is
    /// live and its cold copies no longer current). `None` when the live store holds the key,
    /// or the cold store has no copy of it; the writer only (a reader has no such table).
    pub fn cold_value(&mut self, key: &Key) -> Result<Option<&str>> {
        if self.find(key).is_some() || self.log.read_only() {
            return Ok(None);
        }
        self.cold_recall_ready()?;
        let c = &self.cold_recall;
        let Some(cid) = c.newest.get(super::recall::key_hash(key)) else { return Ok(None) };
        let d = match (c.index.doc_of(cid), c.base.doc_of(cid)) {
            (Some((d, _)), _) => c.base.doc_count() + d,
            (None, Some(d)) => d,
            (None, None) => return Ok(None),
        };
        let mut v = core::mem::take(&mut self.vbuf);
        let hit = self.cold_hit(d | COLD_HIT, &mut v);
        self.vbuf = v;
        match hit? {
            Some(h) if h.key == *key => Ok(Some(self.vbuf.as_str())),
            _ => Ok(None),
        }
    }

    /// The cold entry of hit `id` (a [`COLD_HIT`] id): its fields, key, and value in `value`.
    pub(in crate::memory::store) fn cold_hit(&mut self, id: EntryId, value: &mut String) -> Result<Option<ColdHit>> {
        self.cold_recall.hit(id, value)
    }
}

impl ColdRecall {
    /// The cold entry of hit `id` (a [`COLD_HIT`] id) read from `store.cold`: its fields, key,
    /// and value in `value`; `None` when the segment is not current or the document is not.
    pub(in crate::memory::store) fn hit(&mut self, id: EntryId, value: &mut String) -> Result<Option<ColdHit>> {
        let d = id & !COLD_HIT;
        if self.state != State::Ready {
            return Ok(None);
        }
        let shift = self.base.doc_count();
        let place = match d.checked_sub(shift) {
            None => self.base.walk_parts().docs.record(d)?.map(|x| (x.offset, x.rec_len)),
            Some(x) => self.index.doc(x).filter(|x| x.entry != NONE).map(|x| (x.offset, x.rec_len)),
        };
        let Some((offset, len)) = place else { return Ok(None) };
        self.read(offset, len)?;
        let (head, key, escaped) = decode_put(&self.rec)?;
        value.clear();
        log::decode_str(escaped, value)?;
        Ok(Some(ColdHit { head, key }))
    }
}

impl ColdHit {
    /// The metadata a hit on it shows (`id`: the hit's).
    pub fn info(&self, id: EntryId) -> EntryInfo {
        let h = &self.head;
        EntryInfo {
            id,
            key: self.key,
            version: h.ver,
            created: h.created,
            accessed: h.accessed,
            hits: h.hits,
            archived: h.archived,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::store::cleanup::{Policy, Use};
    use crate::memory::store::recall::rank::{B, K1};
    use crate::memory::store::tokenize::{Token, Tokens};
    use crate::testing::rng::Rng;
    use crate::testing::temp_dir;

    fn k(s: &str) -> Key {
        crate::memory::key::normalize(s).unwrap()
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

    /// Every current entry, live and cold: key, words, archived.
    fn union(s: &mut Store) -> Vec<(String, Vec<Vec<u8>>, bool)> {
        let mut docs = Vec::new();
        let ids: Vec<EntryId> = s.ids().collect();
        for id in ids {
            let key = s.key(id).unwrap();
            let text = format!("{} {}", key.as_str(), s.value(id).unwrap());
            docs.push((key.as_str().to_string(), words(&text), s.info(id).unwrap().archived));
        }
        let dir = s.dir().to_path_buf();
        super::super::scan_current(&dir, &|key| s.find(key).is_some(), &mut |e| {
            let mut v = String::new();
            log::decode_str(e.value_escaped, &mut v)?;
            docs.push((e.key.as_str().to_string(), words(&format!("{} {}", e.key.as_str(), v)), e.head.archived));
            Ok(true)
        })
        .unwrap();
        docs
    }

    /// Each entry's BM25 for `query` over the union, as FTS5 computes it (matching ones only).
    fn brute(docs: &[(String, Vec<Vec<u8>>, bool)], query: &str) -> Vec<(String, f64)> {
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
        for (key, toks, arch) in docs {
            if *arch || !q.iter().any(|w| toks.contains(w)) {
                continue;
            }
            let dl = toks.len() as f64;
            let mut score = 0.0;
            for (w, idf) in q.iter().zip(&idf) {
                let f = toks.iter().filter(|t| *t == w).count() as f64;
                score += idf * (f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * dl / avgdl));
            }
            out.push((key.clone(), score));
        }
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        out
    }

    /// The store's top 10 for each query equals the brute force's over the union: the same
    /// scores in order, each hit the entry of its score, cold hits where the entry is cold.
    fn check(s: &mut Store, queries: &[String], what: &str) -> (usize, usize) {
        let docs = union(s);
        let (mut live, mut cold) = (0, 0);
        let mut r = Ranked::new();
        for q in queries {
            let want = brute(&docs, q);
            s.rank(q, 10, &mut r).unwrap();
            let got: Vec<(String, f64, bool)> = r
                .hits()
                .iter()
                .map(|h| (s.hit_info(h.id).unwrap().unwrap().key.as_str().to_string(), h.score, h.is_cold()))
                .collect();
            assert_eq!(got.len(), want.len().min(10), "{}: {:?}: {:?} vs {:?}", what, q, got, want);
            for ((key, score, is_cold), (_, w)) in got.iter().zip(&want) {
                assert!((score - w).abs() <= 1e-9 * w.abs().max(1.0), "{}: {:?}: {:?} vs {:?}", what, q, got, want);
                let own = want.iter().find(|x| &x.0 == key).map(|x| x.1);
                assert!(
                    own.is_some_and(|o| (o - score).abs() <= 1e-9 * o.abs().max(1.0)),
                    "{}: {} {:?}",
                    what,
                    key,
                    own
                );
                assert_eq!(*is_cold, s.find(&k(key)).is_none(), "{}: {} lives where it says", what, key);
                live += usize::from(!is_cold);
                cold += usize::from(*is_cold);
            }
        }
        (live, cold)
    }

    fn queries(rng: &mut Rng, n: usize) -> Vec<String> {
        (0..n)
            .map(|_| (0..2 + rng.below(2)).map(|_| format!("w{}", rng.skewed(40))).collect::<Vec<_>>().join(" "))
            .collect()
    }

    /// Random saves, saves of cold keys, restores, deletes (live and cold), compactions,
    /// checkpoints, merges and reopens: every few steps the ranking equals the brute force's
    /// over the union, for the writer, and for a reader once the writer's files are written.
    #[test]
    fn every_change_keeps_the_union_ranked_as_bm25() {
        every_change_ranked(false);
    }

    /// The same, with the due checkpoints' merges run in steps beside the changes (a step of
    /// the least work after each): every query during a merge of either segment equals BM25
    /// from scratch.
    #[test]
    fn every_change_keeps_the_union_ranked_while_merging_in_steps() {
        every_change_ranked(true);
    }

    fn every_change_ranked(steps: bool) {
        let d = temp_dir(if steps { "cold-rank-steps" } else { "cold-rank-ops" });
        let mut rng = Rng::new(0x39_0040);
        let mut cold_merging = 0;
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.set_policy(Some(Policy::default()));
        let qs = queries(&mut rng, 12);
        let mut next = 0usize;
        let text = |rng: &mut Rng| {
            (0..2 + rng.below(10)).map(|_| format!("w{}", rng.skewed(40))).collect::<Vec<_>>().join(" ")
        };
        let any_cold = |s: &Store, rng: &mut Rng| {
            let mut keys = Vec::new();
            super::super::scan_current(s.dir(), &|k| s.find(k).is_some(), &mut |e| {
                keys.push(e.key);
                Ok(true)
            })
            .unwrap();
            (!keys.is_empty()).then(|| keys[rng.below(keys.len())])
        };
        for step in 0..160 {
            match rng.below(20) {
                0 => {
                    if let Some(key) = any_cold(&s, &mut rng) {
                        s.restore(&key).unwrap();
                    }
                }
                1 => {
                    if let Some(key) = any_cold(&s, &mut rng) {
                        s.delete(&key).unwrap();
                    }
                }
                2 => {
                    s.compact_cold().unwrap();
                }
                3 | 19 if steps => {
                    // As the agent's cycle does: the segment current (its searches keep it
                    // so), then a due checkpoint.
                    s.cold_recall_ready().unwrap();
                    s.checkpoint_in_steps().unwrap();
                }
                3 => s.checkpoint().unwrap(),
                4 => s.recall_flush().unwrap(),
                5 => {
                    drop(s);
                    s = Store::open_with_capacity(&d, 64).unwrap();
                    s.set_policy(Some(Policy::default()));
                }
                6..=8 if next > 10 => {
                    // A key saved before: live or cold now.
                    let key = k(&format!("fact,n{}", rng.below(next)));
                    let t = text(&mut rng);
                    s.put(&key, &t, 2000 + step).unwrap();
                    s.note_use(&key, Use::Saved);
                    s.flush_access().unwrap();
                }
                _ => {
                    for _ in 0..1 + rng.below(12) {
                        let key = k(&format!("fact,n{}", next));
                        next += 1;
                        let t = text(&mut rng);
                        s.put(&key, &t, 1000 + next as u64).unwrap();
                        s.note_use(&key, Use::Saved);
                        s.flush_access().unwrap();
                    }
                }
            }
            if steps {
                cold_merging += usize::from(s.cold_recall_merging());
                s.recall_merge_step(std::time::Instant::now()).unwrap();
            }
            if step % 8 == 7 {
                check(&mut s, &qs, &format!("step {}", step));
                // A reader is exact once the writer's files have what it knows (see
                // `recall`'s module documentation for the window before).
                s.recall_flush().unwrap();
                let mut ro = Store::open_read_only_with_capacity(&d, 64).unwrap();
                check(&mut ro, &qs, &format!("step {} read-only", step));
            }
        }
        assert!(!steps || cold_merging > 0, "no step found the cold store's merge under way");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A query's first pass over the cold segment takes every current document; a hit it
    /// keeps that the filter turns away (here a cold copy of a key saved again since the
    /// writer wrote its file, which a reader still finds there) sends it to a second pass
    /// that checks each candidate as it comes. The hits equal those of checking each from the
    /// start, and none is a cold copy of a key the live store holds.
    #[test]
    fn a_cold_hit_turned_away_ranks_again_checking_each() {
        let d = temp_dir("cold-rank-again");
        let mut rng = Rng::new(0x39_0041);
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.set_policy(Some(Policy::default()));
        for i in 0..300 {
            let key = k(&format!("fact,n{}", i));
            let text = (0..3 + rng.below(8)).map(|_| format!("w{}", rng.skewed(40))).collect::<Vec<_>>().join(" ");
            s.put(&key, &format!("{} u{}", text, i), 1000 + i as u64).unwrap();
            s.note_use(&key, Use::Saved);
            s.flush_access().unwrap();
        }
        s.close_with_indexes().unwrap();
        let mut cold = Vec::new();
        super::super::scan_current(&d, &|_| false, &mut |e| {
            cold.push(e.key);
            Ok(cold.len() < 6)
        })
        .unwrap();
        assert_eq!(cold.len(), 6);
        // Saved again: live now, their cold copies no longer current; store.cold.fts, not
        // written since, still lists them.
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        for (i, key) in cold.iter().enumerate() {
            s.put(key, &format!("w1 w2 fresh{}", i), 5000 + i as u64).unwrap();
        }
        let mut qs: Vec<String> = Vec::new();
        for key in &cold {
            let n = key.as_str().rsplit('n').next().unwrap().to_string();
            qs.push(format!("u{} w1", n));
            qs.push(format!("w{} u{}", rng.skewed(40), n));
        }
        qs.extend(queries(&mut rng, 20));
        let mut lazy = Store::open_read_only_with_capacity(&d, 64).unwrap();
        let mut eager = Store::open_read_only_with_capacity(&d, 64).unwrap();
        let (mut a, mut b) = (Ranked::new(), Ranked::new());
        for q in &qs {
            lazy.rank(q, 10, &mut a).unwrap();
            eager.cold_recall.eager = true;
            eager.rank(q, 10, &mut b).unwrap();
            assert_eq!(a.hits(), b.hits(), "{:?}", q);
            for h in a.hits() {
                let key = lazy.hit_info(h.id).unwrap().unwrap().key;
                assert!(!h.is_cold() || lazy.find(&key).is_none(), "{:?}: {} is live", q, key.as_str());
            }
        }
        assert!(lazy.cold_recall_stats().retries > 0, "no query ranked again");
        assert_eq!(eager.cold_recall_stats().retries, 0);
        drop(s);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn live_and_cold_rank_together_as_bm25_over_their_union() {
        let d = temp_dir("cold-rank");
        let mut rng = Rng::new(39);
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.set_policy(Some(Policy::default()));
        let save = |s: &mut Store, rng: &mut Rng, i: usize| {
            let key = k(&format!("fact,n{}", i));
            let text = (0..3 + rng.below(12)).map(|_| format!("w{}", rng.skewed(40))).collect::<Vec<_>>().join(" ");
            s.put(&key, &text, 1000 + i as u64).unwrap();
            s.note_use(&key, Use::Saved);
            s.flush_access().unwrap();
        };
        // The segment built before the cold store exists, kept current as clean-ups fill it.
        let qs = queries(&mut rng, 40);
        check(&mut s, &qs, "empty cold store");
        for i in 0..300 {
            save(&mut s, &mut rng, i);
        }
        let (live, cold) = check(&mut s, &qs, "kept current");
        let st = s.cold_recall_stats();
        assert!(st.ready && st.documents > 200 && !st.from_file, "{:?}", st);
        assert!(live > 0 && cold > 0, "both places answer: {} live, {} cold", live, cold);
        // A key saved again after it went cold: its cold copy is no longer current.
        s.put(&k("fact,n3"), "w1 w2 w3 fresh", 5000).unwrap();
        check(&mut s, &qs, "a cold key saved again");
        s.checkpoint().unwrap();
        assert!(d.join(super::super::recall::COLD_RECALL_NAME).exists());
        drop(s);
        // From its file, then the groups after it.
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.set_policy(Some(Policy::default()));
        check(&mut s, &qs, "reopened");
        assert!(s.cold_recall_stats().from_file);
        for i in 300..400 {
            save(&mut s, &mut rng, i);
        }
        check(&mut s, &qs, "after more clean-ups");
        // A read-only store while the writer's file is behind store.cold.
        let mut ro = Store::open_read_only_with_capacity(&d, 64).unwrap();
        check(&mut ro, &qs, "read-only, file behind");
        drop(ro);
        // Restore and delete rewrite store.cold: rebuilt.
        let cold_key = {
            let mut found = None;
            super::super::scan_current(&d, &|key| s.find(key).is_some(), &mut |e| {
                found = Some(e.key);
                Ok(false)
            })
            .unwrap();
            found.unwrap()
        };
        s.delete(&cold_key).unwrap();
        check(&mut s, &qs, "after a cold delete");
        s.close_with_indexes().unwrap();
        let mut ro = Store::open_read_only_with_capacity(&d, 64).unwrap();
        check(&mut ro, &qs, "read-only, file current");
        assert!(ro.cold_recall_stats().from_file);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
