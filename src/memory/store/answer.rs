//! `memory search`'s one call: which index answers a text search is the store's choice, made
//! here, so the command only asks and prints.
//!
//! - Ranked by words alone: the checkpoint and `store.fts` read in place ([`super::view`]),
//!   when both cover the log, and `store.cold.fts` in place when the cold store has entries
//!   and `store.cold` starts with what it covers (the groups a clean-up appended since read
//!   into a delta, as a read-only store reads them); the store is not opened (the checkpoint
//!   is not read whole, nor the log's tail replayed). When the log has records after the checkpoint (at
//!   most `STORE_VIEW_TAIL_MAX_BYTES`: an agent running, or killed), they are read and laid
//!   over it (`view::tail`), `store.fts` then read resident as the store reads it.
//! - Ranked otherwise (live and cold together, by words and, where embeddings are on, by
//!   meaning): the store opened read-only ([`Store::rank_by`]); a text index it had to build
//!   from the log is said once on stderr, with the command that writes it.
//! - A substring: the log scanned ([`Store::search_text`]).
//! - The cold store alone, every word matched, unranked (`--cold`): a scan of `store.cold`.
//!
//! How to open the store and the embeddings is the caller's ([`Sources`]): the command knows
//! how a data directory is checked and what a missing store prints.

use super::cold;
use super::cold::recall::ColdRecall;
use super::recall::Ranked;
use super::vectors::{By, Meaning};
use super::{EntryInfo, Store};
use crate::error::{Code, Result};
use crate::memory::log;
use crate::memory::query::{Archived, Results};
use crate::memory::store::view::tail::InPlace;
use std::path::Path;

/// How a search looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// Ranked, live and cold together, by words, meaning or both.
    Ranked(By),
    /// Values containing the text (ASCII case-insensitive), newest first, live entries only.
    Substring,
    /// The cold store alone: entries holding every word, unranked.
    Cold,
}

/// What a search asks.
#[derive(Clone, Copy, Debug)]
pub struct SearchAsk<'a> {
    /// The text.
    pub text: &'a str,
    /// At most this many hits.
    pub limit: usize,
    /// Which archived entries pass.
    pub archived: Archived,
    /// How.
    pub how: How,
}

/// One hit.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchHit {
    /// The entry (a cold one's `id` is its hit id, see [`cold::recall::COLD_HIT`]).
    pub info: EntryInfo,
    /// Its BM25 (or fused) score, for a ranked search.
    pub score: Option<f64>,
    /// Whether it lives in the cold store.
    pub cold: bool,
}

/// The answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answer {
    /// The hits, best (or newest) first.
    pub hits: Vec<SearchHit>,
    /// Matches left out beyond the limit (the cold scan counts them).
    pub more: usize,
    /// The substring scan stopped at its byte budget (`STORE_SEARCH_MAX_BYTES`).
    pub truncated: bool,
}

/// How the one call reaches what it chooses to read: the command's own ways.
pub trait Sources {
    /// The store, opened read-only; `None` when there is none yet.
    fn open(&mut self) -> Result<Option<Box<Store>>>;
    /// Whether a ranking `by` would use words alone (no embeddings configured, or words asked).
    fn words_only(&mut self, by: By) -> bool;
    /// Recall by meaning for `store`, when configured and `by` asks for it.
    fn meaning(&mut self, store: &Store, by: By) -> Result<Option<Meaning>>;
}

/// Answers `ask` over the store in `dir` (capacity `capacity`), reading what answers it
/// cheapest; `None` when there is no store (and, for [`How::Cold`], no cold store either).
pub fn search(dir: &Path, capacity: usize, ask: &SearchAsk<'_>, src: &mut dyn Sources) -> Result<Option<Answer>> {
    match ask.how {
        How::Cold => search_cold(dir, ask, src),
        How::Substring => {
            let Some(mut store) = src.open()? else { return Ok(None) };
            let mut results = Results::with_capacity(ask.limit);
            store.search_text(ask.text, ask.archived, ask.limit, &mut results)?;
            let hits = results
                .ids()
                .filter_map(|id| store.info(id))
                .map(|info| SearchHit { info, score: None, cold: false })
                .collect();
            Ok(Some(Answer { hits, more: 0, truncated: results.truncated() }))
        }
        How::Ranked(by) => {
            if src.words_only(by) {
                if let Some(answer) = ranked_in_place(dir, capacity, ask)? {
                    return Ok(Some(answer));
                }
            }
            let Some(mut store) = src.open()? else { return Ok(None) };
            let mut meaning = src.meaning(&store, by)?;
            let mut ranked = Ranked::new();
            store.rank_by(meaning.as_mut(), by, ask.text, ask.limit, ask.archived, None, &mut ranked)?;
            let index = store.recall_stats();
            if index.ready && !index.from_file && !store.is_empty() {
                // Said once, on stderr: the answer is right, only slow, and the fix is one command.
                err!(
                    NotFound,
                    "{}: store.fts is missing or does not match store.log, so this search built the full-text index \
                     from the log (slow on a large store); 'lkjagent memory compact' (or any command that changes the \
                     store, or the agent's next checkpoint) writes it",
                    dir.display()
                )
                .print_warning();
            }
            let cold_index = store.cold_recall_stats();
            if cold_index.ready && !cold_index.from_file && cold_index.documents > 0 {
                err!(
                    NotFound,
                    "{}: store.cold.fts is missing or does not match store.cold, so this search built the cold \
                     store's text index from it (slow on a large cold store); 'lkjagent memory compact' (or the agent's \
                     next close) writes it",
                    dir.display()
                )
                .print_warning();
            }
            let mut hits = Vec::with_capacity(ranked.len());
            for h in ranked.hits() {
                if let Some(info) = store.hit_info(h.id)? {
                    hits.push(SearchHit { info, score: Some(h.score), cold: h.is_cold() });
                }
            }
            Ok(Some(Answer { hits, more: 0, truncated: false }))
        }
    }
}

/// Whether `store.cold` in `dir` holds any group (more than its header).
fn cold_has_entries(dir: &Path) -> bool {
    let mut header = crate::fixed::FixedBuf::with_capacity("cold store header", 128);
    let header_len = match log::encode_cold_header(&mut header) {
        Ok(()) => header.len() as u64,
        Err(_) => 0,
    };
    std::fs::metadata(dir.join(cold::COLD_NAME)).is_ok_and(|m| m.len() > header_len)
}

/// The ranked search over the checkpoint and `store.fts` read in place, and `store.cold.fts`
/// too when the cold store has entries (with the groups appended to `store.cold` after it);
/// `None` when they do not cover the log and `store.cold` (or a read failed: said, and the
/// store is opened whole instead).
fn ranked_in_place(dir: &Path, capacity: usize, ask: &SearchAsk<'_>) -> Result<Option<Answer>> {
    if crate::memory::nofollow::is_link(&dir.join(super::LOG_NAME))
        || crate::memory::nofollow::is_link(&dir.join(cold::COLD_NAME))
    {
        return Ok(None);
    }
    // With the log's records after the checkpoint laid over it, if any (an agent running, or
    // killed).
    let Ok(Some(mut view)) = InPlace::open(dir, capacity) else { return Ok(None) };
    let mut segment = if cold_has_entries(dir) {
        match ColdRecall::open_in_place(dir, &mut |k| view.find(k).map(|id| id.is_some())) {
            Ok(Some(c)) => c,
            Ok(None) | Err(_) => return Ok(None),
        }
    } else {
        ColdRecall::new()
    };
    let mut ranked = Ranked::new();
    let mut value = String::new();
    let found = view.rank(ask.text, ask.limit, ask.archived, &mut segment, &mut ranked).and_then(|done| match done {
        false => Ok(None),
        true => ranked
            .hits()
            .iter()
            .map(|h| {
                let info = match h.is_cold() {
                    true => segment.hit(h.id, &mut value)?.map(|c| c.info(h.id)),
                    false => view.info(h.id)?,
                };
                Ok(info.map(|info| SearchHit { info, score: Some(h.score), cold: h.is_cold() }))
            })
            .filter_map(Result::transpose)
            .collect::<Result<Vec<_>>>()
            .map(Some),
    });
    match found {
        Ok(Some(hits)) => {
            view.say_warning();
            Ok(Some(Answer { hits, more: 0, truncated: false }))
        }
        Ok(None) => Ok(None),
        Err(e) if e.code() == Code::CapacityExceeded => Err(e),
        Err(e) => {
            e.context(format_args!("{}: opening the store whole instead", dir.display())).print_warning();
            Ok(None)
        }
    }
}

/// `--cold`: the current cold entries holding every word of the text (in their tags or
/// value, ASCII case-insensitive), in file order, at most `limit`.
fn search_cold(dir: &Path, ask: &SearchAsk<'_>, src: &mut dyn Sources) -> Result<Option<Answer>> {
    let live = src.open()?;
    if live.is_none() && !dir.join(cold::COLD_NAME).exists() {
        return Ok(None);
    }
    let words: Vec<String> = ask.text.split_whitespace().map(str::to_ascii_lowercase).collect();
    let mut answer = Answer::default();
    let mut value = String::new();
    let is_live = |k: &crate::memory::key::Key| live.as_ref().is_some_and(|s| s.find(k).is_some());
    cold::scan_current(dir, &is_live, &mut |e| {
        value.clear();
        log::decode_str(e.value_escaped, &mut value)?;
        value.make_ascii_lowercase();
        let tags = e.key.as_str();
        if !words.iter().all(|w| value.contains(w.as_str()) || tags.contains(w.as_str())) {
            return Ok(true);
        }
        if answer.hits.len() == ask.limit {
            answer.more += 1;
            return Ok(true);
        }
        let h = e.head;
        let info = EntryInfo {
            id: cold::recall::COLD_HIT,
            key: e.key,
            version: h.ver,
            created: h.created,
            accessed: h.accessed,
            hits: h.hits,
            archived: h.archived,
        };
        answer.hits.push(SearchHit { info, score: None, cold: true });
        Ok(true)
    })?;
    Ok(Some(answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::key::{normalize, Key};
    use crate::memory::store::cleanup::{Policy, Use};
    use crate::testing::rng::Rng;
    use crate::testing::temp_dir;

    fn k(s: &str) -> Key {
        normalize(s).unwrap()
    }

    fn text(rng: &mut Rng) -> String {
        (0..3 + rng.below(10)).map(|_| format!("w{}", rng.skewed(40))).collect::<Vec<_>>().join(" ")
    }

    /// Each query's hits from the checkpoint and both text indexes read in place equal the
    /// hits of the store opened read-only (ranked over live and cold, each cold hit's key
    /// checked against the live store): the same entries, scores, order and places.
    fn same_as_opened(d: &Path, queries: &[String], archived: Archived, what: &str) -> (usize, u64) {
        let mut ro = Store::open_read_only_with_capacity(d, 64).unwrap();
        let mut r = Ranked::new();
        let mut cold_hits = 0;
        for q in queries {
            let ask = SearchAsk { text: q, limit: 10, archived, how: How::Ranked(By::Words) };
            let got = ranked_in_place(d, 64, &ask).unwrap().expect("answered in place");
            ro.rank_where(q, 10, archived, None, &mut r).unwrap();
            let want: Vec<(String, f64, bool, bool)> = r
                .hits()
                .iter()
                .map(|h| {
                    let info = ro.hit_info(h.id).unwrap().unwrap();
                    (info.key.as_str().to_string(), h.score, h.is_cold(), info.archived)
                })
                .collect();
            let got: Vec<(String, f64, bool, bool)> = got
                .hits
                .iter()
                .map(|h| (h.info.key.as_str().to_string(), h.score.unwrap(), h.cold, h.info.archived))
                .collect();
            assert_eq!(got, want, "{}: {:?}", what, q);
            cold_hits += got.iter().filter(|h| h.2).count();
        }
        (cold_hits, ro.cold_recall_stats().retries)
    }

    /// A store of capacity 64 given 300 entries of `rng`'s text (most moved to the cold store
    /// by its policy), closed with its indexes.
    fn store_of_300_closed(d: &std::path::Path, rng: &mut Rng) {
        let mut s = Store::open_with_capacity(d, 64).unwrap();
        s.set_policy(Some(Policy::default()));
        for i in 0..300 {
            let key = k(&format!("fact,n{}", i));
            let t = format!("{} u{}", text(rng), i);
            s.put(&key, &t, 1000 + i as u64).unwrap();
            s.note_use(&key, Use::Saved);
            s.flush_access().unwrap();
        }
        s.close_with_indexes().unwrap();
    }

    /// `memory search` over a store with cold entries ranks in place, as it does without them
    /// (issue 39: the store's open was a fifth of such a search), and answers as the store
    /// opened does: after a clean close, with archived entries, and with a `store.cold.fts`
    /// that still lists cold copies of keys saved again since (a reader's window: those hits
    /// are turned away by the live keys' lookup the checkpoint answers in place).
    #[test]
    fn a_search_over_live_and_cold_in_place_equals_the_opened_stores() {
        let d = temp_dir("answer-cold-in-place");
        let mut rng = Rng::new(0x39_0030);
        store_of_300_closed(&d, &mut rng);
        let mut qs: Vec<String> = (0..30)
            .map(|_| (0..2 + rng.below(2)).map(|_| format!("w{}", rng.skewed(40))).collect::<Vec<_>>().join(" "))
            .collect();
        let (cold_hits, _) = same_as_opened(&d, &qs, Archived::Exclude, "closed");
        assert!(cold_hits > 0, "cold entries answer");

        // Some live entries archived: left out, or let in, alike.
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        let live: Vec<Key> = s.ids().take(8).map(|id| s.key(id).unwrap()).collect();
        for key in &live {
            s.set_archived(key, true, 4000).unwrap();
        }
        s.close_with_indexes().unwrap();
        same_as_opened(&d, &qs, Archived::Exclude, "archived left out");
        same_as_opened(&d, &qs, Archived::Include, "archived let in");

        // Cold keys saved again (live now); store.cold.fts as it was before, which still
        // covers store.cold (no clean-up ran: no policy), so it lists their cold copies.
        let old = std::fs::read(d.join(super::cold::recall::COLD_RECALL_NAME)).unwrap();
        let cold_len = std::fs::metadata(d.join(cold::COLD_NAME)).unwrap().len();
        let mut gone = Vec::new();
        cold::scan_current(&d, &|_| false, &mut |e| {
            gone.push(e.key);
            Ok(gone.len() < 6)
        })
        .unwrap();
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        for (i, key) in gone.iter().enumerate() {
            s.put(key, &format!("w1 w2 fresh{}", i), 5000 + i as u64).unwrap();
            let n = key.as_str().rsplit('n').next().unwrap().to_string();
            qs.push(format!("u{} w1", n));
            qs.push(format!("w{} u{}", rng.skewed(40), n));
        }
        s.close_with_indexes().unwrap();
        assert_eq!(std::fs::metadata(d.join(cold::COLD_NAME)).unwrap().len(), cold_len);
        std::fs::write(d.join(super::cold::recall::COLD_RECALL_NAME), old).unwrap();
        let (_, retries) = same_as_opened(&d, &qs, Archived::Exclude, "a stale store.cold.fts");
        assert!(retries > 0, "no cold hit was turned away: the case is not tested");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Each query's hits read in place (the checkpoint with the log's tail laid over it, or
    /// without one) against the store opened read-only: the same entries, with every field,
    /// scores, order and places. Returns how many queries were answered in place.
    fn tail_same_as_opened(d: &Path, queries: &[String], archived: Archived, what: &str) -> usize {
        let mut ro = Store::open_read_only_with_capacity(d, 64).unwrap();
        let mut r = Ranked::new();
        let mut in_place = 0;
        for q in queries {
            let ask = SearchAsk { text: q, limit: 10, archived, how: How::Ranked(By::Words) };
            let Some(got) = ranked_in_place(d, 64, &ask).unwrap() else { continue };
            in_place += 1;
            ro.rank_where(q, 10, archived, None, &mut r).unwrap();
            let want: Vec<(EntryInfo, f64, bool)> =
                r.hits().iter().map(|h| (ro.hit_info(h.id).unwrap().unwrap(), h.score, h.is_cold())).collect();
            let got: Vec<(EntryInfo, f64, bool)> =
                got.hits.iter().map(|h| (h.info, h.score.unwrap(), h.cold)).collect();
            assert_eq!(got, want, "{}: {:?}", what, q);
        }
        in_place
    }

    /// A line of the log, as written (for a torn copy of it).
    fn last_put_line(d: &Path) -> Vec<u8> {
        let log = std::fs::read(d.join(super::super::LOG_NAME)).unwrap();
        let body = &log[..log.len() - 1];
        let start = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        log[start..].to_vec()
    }

    /// `memory search` beside a running agent (the log has records after the checkpoint):
    /// the tail's puts, replaced values, deletions, archived entries, access counts and a key
    /// saved again whose cold copy must be turned away, laid over the checkpoint in place,
    /// answer as the store opened whole does (issue 39); with `store.fts` taken of the
    /// checkpoint (the tail's entries then stale documents) or of the whole log; a torn last
    /// record is ignored as replay ignores it; a damaged record before good ones, and a tail
    /// over `STORE_VIEW_TAIL_MAX_BYTES`, open the store whole.
    #[test]
    fn a_search_with_a_tail_after_the_checkpoint_in_place_equals_the_opened_stores() {
        use crate::memory::store::view::tail::{TailView, STORE_VIEW_TAIL_MAX_BYTES};
        use crate::memory::store::view::StoreView;
        let d = temp_dir("answer-tail-in-place");
        let mut rng = Rng::new(0x39_0031);
        store_of_300_closed(&d, &mut rng);
        // Ids free for the tail's new entries (no compaction in it: a new log).
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.compact().unwrap();
        s.close_with_indexes().unwrap();
        let fts_at_checkpoint = std::fs::read(d.join(super::super::recall::file::RECALL_FILE_NAME)).unwrap();
        let mut qs: Vec<String> = (0..30)
            .map(|_| (0..2 + rng.below(2)).map(|_| format!("w{}", rng.skewed(40))).collect::<Vec<_>>().join(" "))
            .collect();
        let mut cold_keys = Vec::new();
        cold::scan_current(&d, &|_| false, &mut |e| {
            cold_keys.push(e.key);
            Ok(cold_keys.len() < 2)
        })
        .unwrap();

        // The agent's changes since its last checkpoint, its writer dropped (not closed).
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        let live: Vec<Key> = s.ids().map(|id| s.key(id).unwrap()).collect();
        for key in &live[..10] {
            s.delete(key).unwrap();
        }
        for (i, key) in live[10..16].iter().enumerate() {
            s.put(key, &format!("w1 w3 replaced{} {}", i, text(&mut rng)), 6000 + i as u64).unwrap();
            qs.push(format!("replaced{} w1", i));
        }
        for key in &live[16..19] {
            s.set_archived(key, true, 6100).unwrap();
        }
        for (i, key) in live[19..23].iter().enumerate() {
            let id = s.find(key).unwrap();
            for n in 0..=i {
                s.touch(id, 6200 + n as u64);
            }
        }
        s.flush_access().unwrap();
        for i in 0..6 {
            s.put(&k(&format!("fact,new{}", i)), &format!("w2 w5 fresh{} {}", i, text(&mut rng)), 6300).unwrap();
            qs.push(format!("fresh{} w2", i));
        }
        for (i, key) in cold_keys.iter().enumerate() {
            s.put(key, &format!("w1 again{}", i), 6400).unwrap();
            let n = key.as_str().rsplit('n').next().unwrap().to_string();
            qs.push(format!("u{} w1", n));
        }
        // The same key replaced twice, and one deleted after being replaced.
        s.put(&live[24], "w4 twice1", 6500).unwrap();
        s.put(&live[24], "w4 twice2", 6501).unwrap();
        s.put(&live[25], "w4 gone", 6502).unwrap();
        s.delete(&live[25]).unwrap();
        qs.push("twice1 twice2 w4".into());
        qs.push("gone w4".into());
        drop(s);
        assert!(StoreView::open(&d, 64).unwrap().is_none(), "the checkpoint covers the log: no tail tested");
        assert!(TailView::open(&d, 64).unwrap().is_some());
        let n = qs.len();
        assert_eq!(tail_same_as_opened(&d, &qs, Archived::Exclude, "tail"), n);
        assert_eq!(tail_same_as_opened(&d, &qs, Archived::Include, "tail, archived let in"), n);

        // store.fts written of the whole log since (as the agent's merge in steps writes it),
        // the checkpoint still behind: its documents are all current.
        let fts = d.join(super::super::recall::file::RECALL_FILE_NAME);
        assert!(std::fs::read(&fts).unwrap() == fts_at_checkpoint, "the tail's entries were not stale documents");
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.recall_ready().unwrap();
        s.recall_flush().unwrap();
        drop(s);
        assert!(std::fs::read(&fts).unwrap() != fts_at_checkpoint, "store.fts of the whole log is not tested");
        assert!(StoreView::open(&d, 64).unwrap().is_none());
        assert_eq!(tail_same_as_opened(&d, &qs, Archived::Exclude, "store.fts of the whole log"), n);
        assert_eq!(tail_same_as_opened(&d, &qs, Archived::Only, "store.fts of the whole log, archived"), n);

        // A torn last record: half a put (a crash mid-write), then a whole damaged one.
        let log_path = d.join(super::super::LOG_NAME);
        let good = std::fs::read(&log_path).unwrap();
        let line = last_put_line(&d);
        let mut torn = good.clone();
        torn.extend_from_slice(&line[..line.len() / 2]);
        std::fs::write(&log_path, &torn).unwrap();
        assert_eq!(tail_same_as_opened(&d, &qs, Archived::Exclude, "torn"), n);
        let mut damaged = good.clone();
        let mut bad = line.clone();
        bad[12] ^= 0x01;
        damaged.extend_from_slice(&bad);
        std::fs::write(&log_path, &damaged).unwrap();
        assert_eq!(tail_same_as_opened(&d, &qs, Archived::Exclude, "damaged last"), n);
        // A damaged record with a good one after it: replay skips it; opened whole.
        damaged.extend_from_slice(&line);
        std::fs::write(&log_path, &damaged).unwrap();
        assert!(TailView::open(&d, 64).unwrap().is_none());
        assert_eq!(tail_same_as_opened(&d, &qs, Archived::Exclude, "damaged inside"), 0);
        std::fs::write(&log_path, &good).unwrap();

        // Entries moved to the cold store by the agent's clean-up in the tail, `store.fts`
        // written of the whole log since (as the agent's merge in steps writes it), not
        // `store.cold.fts`: the groups appended to `store.cold` after it are read in place as
        // a read-only store reads them.
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.set_policy(Some(Policy::default()));
        for i in 0..40 {
            let key = k(&format!("fact,late{}", i));
            s.put(&key, &format!("w3 late{} {}", i, text(&mut rng)), 8000 + i as u64).unwrap();
            s.note_use(&key, Use::Saved);
            s.flush_access().unwrap();
            qs.push(format!("late{} w3", i));
        }
        s.recall_ready().unwrap();
        s.recall_flush().unwrap();
        drop(s);
        let good = std::fs::read(&log_path).unwrap();
        let cold_header = std::fs::read(d.join(super::cold::recall::COLD_RECALL_NAME)).unwrap();
        let cold_header = super::super::recall::file::Header::parse(
            cold_header[..super::super::recall::file::HEADER_BYTES].try_into().unwrap(),
        )
        .unwrap();
        let cold_len = std::fs::metadata(d.join(cold::COLD_NAME)).unwrap().len();
        assert!(cold_header.covered < cold_len, "no group appended after store.cold.fts: not tested");
        assert!(StoreView::open(&d, 64).unwrap().is_none(), "no tail: not tested");
        let mut view = InPlace::open(&d, 64).unwrap().unwrap();
        let segment = ColdRecall::open_in_place(&d, &mut |k| view.find(k).map(|id| id.is_some())).unwrap().unwrap();
        assert!(segment.index.live_docs() > 0, "no cold document read after store.cold.fts: not tested");
        let n = qs.len();
        assert_eq!(tail_same_as_opened(&d, &qs, Archived::Exclude, "moved to the cold store"), n);
        assert_eq!(tail_same_as_opened(&d, &qs, Archived::Include, "moved to the cold store, archived"), n);

        // A tail over the bound: the last put written again and again (replay puts the same
        // entry each time); opened whole.
        let line = last_put_line(&d);
        let mut long = std::fs::read(&log_path).unwrap();
        while (long.len() as u64) < good.len() as u64 + STORE_VIEW_TAIL_MAX_BYTES {
            long.extend_from_slice(&line);
        }
        std::fs::write(&log_path, &long).unwrap();
        assert!(StoreView::open(&d, 64).unwrap().is_none());
        assert!(TailView::open(&d, 64).unwrap().is_none());
        assert_eq!(tail_same_as_opened(&d, &qs, Archived::Exclude, "over the bound"), 0);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
