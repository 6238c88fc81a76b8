//! Fusing the word ranking with the ranking by meaning, and the store's ranked queries that use
//! it.

use super::*;

/// Below this spread (standard deviation over the mean's size) a list's scores count as all
/// equal: it tells nothing about this query, and rounding must not order it.
const FLAT: f64 = 1e-9;

/// One list's scores as standard scores over the pool of candidates both lists bring: `n`
/// entries, those the list does not hold at its `floor`.
#[derive(Clone, Copy)]
struct Standard {
    mean: f64,
    /// 1 / standard deviation; 0 for a flat list.
    inv_sd: f64,
    floor: f64,
}

impl Standard {
    fn of(list: &Ranked, floor: f64, n: usize) -> Standard {
        let hits = list.hits();
        let pad = n.saturating_sub(hits.len()) as f64;
        let n = n.max(1) as f64;
        let mean = (hits.iter().map(|h| h.score).sum::<f64>() + pad * floor) / n;
        let sq = |x: f64| (x - mean) * (x - mean);
        let var = (hits.iter().map(|h| sq(h.score)).sum::<f64>() + pad * sq(floor)) / n;
        let sd = var.sqrt();
        let flat = !sd.is_finite() || sd <= FLAT * mean.abs().max(f64::MIN_POSITIVE);
        Standard { mean, inv_sd: if flat { 0.0 } else { 1.0 / sd }, floor }
    }

    fn z(&self, score: Option<f64>) -> f64 {
        let z = (score.unwrap_or(self.floor) - self.mean) * self.inv_sd;
        if z.is_finite() {
            z
        } else {
            0.0
        }
    }
}

/// Fuses the word ranking `words` with the ranking by meaning `near` by their standard
/// scores: each entry scores how many standard deviations its cosine lies above the mean of
/// the meaning list, plus how many its word score lies above the mean of the word list, that
/// second part through a soft floor at 0 (`lift`): words lift an entry and keep their order,
/// but never push one down (a paraphrase shares no word with its answer). So each list weighs
/// by how much it knows about this query: one whose best stand far out of the rest (a rare
/// word that few entries hold; a clear nearest meaning) moves the result, one of near-equal
/// scores (words most entries have, or a query that means nothing stored) hardly does, and a
/// flat one not at all.
///
/// The pool is the entries of both lists, counted as the longer list's length. An entry a
/// list does not hold takes the list's floor: for words 0 when the list ended before the
/// other did (no word of the query is in the entry), else its last score; for meaning its
/// last score (the entries beyond it are farther). The best `limit` go to `out`, ties in entry
/// id order. Reciprocal rank fusion (k = 60) lost to meaning alone by 27 points of recall@10
/// on paraphrase queries, as a weak word list pushed the right answers out; the figures are
/// in docs/measurements.md ("Recall by meaning: the fusion").
pub fn fuse(words: &Ranked, near: &Ranked, limit: usize, out: &mut Ranked) {
    out.clear();
    let n = words.len().max(near.len());
    let last = |list: &Ranked| list.hits().last().map_or(0.0, |h| h.score);
    let words_floor = if words.len() < near.len() { 0.0 } else { last(words) };
    let w = Standard::of(words, words_floor, n);
    let m = Standard::of(near, last(near), n);
    let score_in = |list: &Ranked, id: EntryId| list.hits().iter().find(|h| h.id == id).map(|h| h.score);
    for h in words.hits() {
        let score = lift(w.z(Some(h.score))) + m.z(score_in(near, h.id));
        out.offer(RankHit { id: h.id, score }, limit);
    }
    for h in near.hits() {
        if score_in(words, h.id).is_none() {
            out.offer(RankHit { id: h.id, score: lift(w.z(None)) + m.z(Some(h.score)) }, limit);
        }
    }
    out.sort();
}

/// A soft floor at 0, `(z + √(z² + 4)) / 2`: above 0, rising with `z`, about `z` for a large
/// one and about `1 / -z` for a very negative one (softplus's shape, with a square root where
/// softplus takes an exponential and a logarithm, which a static build would link in). Written
/// as `2 / (√(z² + 4) - z)` below 0, where the sum would cancel.
fn lift(z: f64) -> f64 {
    let s = (z * z + 4.0).sqrt();
    if z >= 0.0 {
        (z + s) / 2.0
    } else {
        2.0 / (s - z)
    }
}

impl Store {
    /// [`Store::rank_where`] by words, meaning or both (see [`By`]). Without `meaning`
    /// (embeddings not configured), or when the endpoint cannot embed the query now (warned
    /// once), it is the word ranking alone; `By::Meaning` then gives nothing. Each list is
    /// taken to the depth [`RANK_MAX_RESULTS`] allows before the fusion, at least `limit` and
    /// at least 100.
    #[allow(clippy::too_many_arguments)]
    pub fn rank_by(
        &mut self,
        meaning: Option<&mut Meaning>,
        by: By,
        query: &str,
        limit: usize,
        archived: Archived,
        tags: Option<&Key>,
        out: &mut Ranked,
    ) -> Result<()> {
        self.rank_by_inner(meaning, by, query, limit, archived, tags, false, out)
    }

    /// [`Store::relevant`] fused with the nearest entries by meaning when `meaning` is given
    /// and the endpoint answers (the prompt builder's "entries most relevant to the task").
    pub fn relevant_by(
        &mut self,
        meaning: Option<&mut Meaning>,
        text: &str,
        limit: usize,
        out: &mut Ranked,
    ) -> Result<()> {
        self.rank_by_inner(meaning, By::Both, text, limit, Archived::Exclude, None, true, out)
    }

    #[allow(clippy::too_many_arguments)]
    fn rank_by_inner(
        &mut self,
        meaning: Option<&mut Meaning>,
        by: By,
        query: &str,
        limit: usize,
        archived: Archived,
        tags: Option<&Key>,
        long_text: bool,
        out: &mut Ranked,
    ) -> Result<()> {
        let words = |s: &mut Store, limit: usize, out: &mut Ranked| match long_text {
            true => s.relevant(query, limit, out),
            false => s.rank_where(query, limit, archived, tags, out),
        };
        let Some(m) = meaning.filter(|_| by != By::Words) else {
            if by == By::Meaning {
                out.clear();
                return Ok(());
            }
            return words(self, limit, out);
        };
        m.v.follow(self)?;
        // No vectors yet (a fresh configuration): no request, words alone.
        if m.v.current == 0 && by == By::Both {
            return words(self, limit, out);
        }
        if !m.v.query_vector(query, &|| false) {
            if by == By::Meaning {
                out.clear();
                return Ok(());
            }
            return words(self, limit, out);
        }
        let required = match tags {
            Some(key) => match self.tagset_of(key) {
                Some(set) => Some((set, key.tag_count())),
                None => {
                    out.clear();
                    return Ok(());
                }
            },
            None => None,
        };
        let admit = |id: EntryId| self.admits(id, archived, required.as_ref());
        if by == By::Meaning {
            return m.v.nearest(self, limit, &admit, out);
        }
        // RANK_MAX_RESULTS (1024) is above 100.
        let depth = limit.clamp(100, RANK_MAX_RESULTS);
        m.v.nearest(self, depth, &admit, &mut m.near)?;
        words(self, depth, &mut m.words)?;
        fuse(&m.words, &m.near, limit, out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ranking of `(id, score)`, best first as given.
    fn list(hits: &[(EntryId, f64)]) -> Ranked {
        let mut r = Ranked::new();
        for &(id, score) in hits {
            r.offer(RankHit { id, score }, RANK_MAX_RESULTS);
        }
        r.sort();
        r
    }

    fn fused(words: &Ranked, near: &Ranked, limit: usize) -> Vec<EntryId> {
        let mut out = Ranked::new();
        fuse(words, near, limit, &mut out);
        out.hits().iter().map(|h| h.id).collect()
    }

    /// A ranking by meaning of `n` entries from id `from`, cosines falling slowly from 0.40,
    /// with entry `top` (if any) far out in front at 0.70.
    fn meaning(from: EntryId, n: u32, top: Option<EntryId>) -> Ranked {
        let mut hits: Vec<(EntryId, f64)> =
            (0..n).map(|i| (from + i, 0.40 - f64::from(i) * 0.002)).filter(|&(id, _)| Some(id) != top).collect();
        if let Some(t) = top {
            hits.push((t, 0.70));
        }
        list(&hits)
    }

    #[test]
    fn one_list_alone_keeps_its_order() {
        let near = meaning(10, 50, Some(30));
        let words = list(&[(7, 12.0), (3, 9.5), (5, 1.0), (1, 0.9), (2, 0.5), (9, 0.4)]);
        let order: Vec<EntryId> = near.hits().iter().map(|h| h.id).take(10).collect();
        assert_eq!(fused(&Ranked::new(), &near, 10), order);
        assert_eq!(fused(&words, &Ranked::new(), 10), vec![7, 3, 5, 1, 2, 9]);
        assert!(fused(&Ranked::new(), &Ranked::new(), 10).is_empty());
    }

    #[test]
    fn a_word_list_of_near_equal_scores_does_not_push_out_a_clear_meaning() {
        // Words most entries hold: the same 100 entries as by meaning but the right answer
        // (id 42, clearly nearest by meaning), within 1% of each other and in another order.
        // By reciprocal rank the ones in both lists came first, and 42 fell out of the ten.
        let words =
            list(&(0..100).filter(|&id| id != 42).map(|id| (id, 1.0 + f64::from(id) * 0.0001)).collect::<Vec<_>>());
        let near = meaning(0, 100, Some(42));
        assert_eq!(fused(&words, &near, 10).first(), Some(&42));
        // Scores that are all equal tell nothing, and do not move meaning's order at all.
        let flat = list(&(200..300).map(|id| (id, 1e-6)).collect::<Vec<_>>());
        let order: Vec<EntryId> = near.hits().iter().map(|h| h.id).take(10).collect();
        assert_eq!(fused(&flat, &near, 10)[..], order[..]);
    }

    #[test]
    fn a_rare_word_match_wins_over_a_meaning_that_knows_little() {
        // One entry holds the query's rare word (say an error code); by meaning it is far down
        // a list of near-equal cosines.
        let words = list(&[(77, 14.0)]);
        let near = meaning(0, 100, None);
        assert!(near.hits().iter().position(|h| h.id == 77).is_some_and(|p| p > 50));
        assert_eq!(fused(&words, &near, 10).first(), Some(&77));
    }

    #[test]
    fn an_entry_both_rankings_favour_comes_first() {
        let words = list(&[(1, 10.0), (2, 9.0), (3, 8.0), (4, 1.0), (5, 0.5)]);
        let near = list(&[(6, 0.60), (3, 0.59), (7, 0.58), (8, 0.30), (9, 0.29)]);
        assert_eq!(fused(&words, &near, 3)[0], 3);
        // Every entry of either list is a candidate; the limit holds.
        assert_eq!(fused(&words, &near, 100).len(), 9);
        assert_eq!(fused(&words, &near, 2).len(), 2);
    }

    #[test]
    fn ties_go_in_entry_id_order_and_odd_scores_stay_finite() {
        let words = list(&[(9, 1.0), (4, 1.0)]);
        let near = list(&[(9, 0.5), (4, 0.5)]);
        assert_eq!(fused(&words, &near, 10), vec![4, 9]);
        let odd = list(&[(1, f64::NAN), (2, f64::INFINITY), (3, 1.0)]);
        let mut out = Ranked::new();
        fuse(&odd, &near, 10, &mut out);
        assert_eq!(out.len(), 5);
        assert!(out.hits().iter().all(|h| h.score.is_finite()));
    }
}
