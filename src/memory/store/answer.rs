//! `memory search`'s one call: which index answers a text search is the store's choice, made
//! here, so the command only asks and prints.
//!
//! - Ranked by words alone, with no cold entries: the checkpoint and `store.fts` read in
//!   place ([`super::view`]), when both cover the log; the store is not opened.
//! - Ranked otherwise (live and cold together, by words and, where embeddings are on, by
//!   meaning): the store opened read-only ([`Store::rank_by`]); a text index it had to build
//!   from the log is said once on stderr, with the command that writes it.
//! - A substring: the log scanned ([`Store::search_text`]).
//! - The cold store alone, every word matched, unranked (`--cold`): a scan of `store.cold`.
//!
//! How to open the store and the embeddings is the caller's ([`Sources`]): the command knows
//! how a data directory is checked and what a missing store prints.

use super::cold;
use super::recall::Ranked;
use super::vectors::{By, Meaning};
use super::{EntryInfo, Store};
use crate::error::{Code, Result};
use crate::memory::log;
use crate::memory::query::{Archived, Results};
use crate::memory::store::view::StoreView;
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
            if src.words_only(by) && !cold_has_entries(dir) {
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

/// The ranked search over the checkpoint and `store.fts` read in place; `None` when they do
/// not cover the log (or a read failed: said, and the store is opened whole instead).
fn ranked_in_place(dir: &Path, capacity: usize, ask: &SearchAsk<'_>) -> Result<Option<Answer>> {
    if crate::memory::nofollow::is_link(&dir.join(super::LOG_NAME)) {
        return Ok(None);
    }
    let Ok(Some(mut view)) = StoreView::open(dir, capacity) else { return Ok(None) };
    let mut ranked = Ranked::new();
    let found = view.rank(ask.text, ask.limit, ask.archived, &mut ranked).and_then(|done| match done {
        false => Ok(None),
        true => ranked
            .hits()
            .iter()
            .map(|h| view.info(h.id).map(|i| i.map(|info| SearchHit { info, score: Some(h.score), cold: false })))
            .filter_map(Result::transpose)
            .collect::<Result<Vec<_>>>()
            .map(Some),
    });
    match found {
        Ok(Some(hits)) => Ok(Some(Answer { hits, more: 0, truncated: false })),
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
