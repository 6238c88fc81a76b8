//! Fusing the word ranking with the ranking by meaning (reciprocal rank), and the store's
//! ranked queries that use it.

use super::*;

/// Fuses two rankings by reciprocal rank: each entry scores Σ 1 / (k + rank) over the lists
/// it is in (rank from 1, k = [`RRF_K`]); the best `limit` go to `out`, ties in entry id order.
pub fn fuse(a: &Ranked, b: &Ranked, limit: usize, out: &mut Ranked) {
    out.clear();
    let rrf = |rank: usize| 1.0 / (RRF_K + rank as f64 + 1.0);
    let rank_in = |list: &Ranked, id: EntryId| list.hits().iter().position(|h| h.id == id);
    for (i, h) in a.hits().iter().enumerate() {
        let score = rrf(i) + rank_in(b, h.id).map_or(0.0, rrf);
        out.offer(RankHit { id: h.id, score }, limit);
    }
    for (i, h) in b.hits().iter().enumerate() {
        if rank_in(a, h.id).is_none() {
            out.offer(RankHit { id: h.id, score: rrf(i) }, limit);
        }
    }
    out.sort();
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
