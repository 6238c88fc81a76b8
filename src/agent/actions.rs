//! Carrying out the model's memory actions (docs/design.md §5) against the working set and the store.
//!
//! Every action ends in an [`ActionResult`]: success or failure, and a one-line message that
//! goes into `command_log` and the audit log, worded so the model can correct itself ("not in
//! working memory; keys there: ..."). Failures are results, not errors: only a storage fault
//! (`PERSIST_FAILED`, I/O) is an error, which stops the cycle before anything is persisted.
//!
//! Keys go through the one normalisation of `memory::key` for every layer, so
//! `working_memory_add` of "Story, Idea" and `storage_load` of "idea,story" name the same entry
//! (the C original normalised storage keys only). `working_memory_remove` really removes.
//! `storage_search` writes its matches to the working-memory entry `search_results`, one key per
//! line (the C original joined comma-holding keys with commas, which could not be read back).
//! With a text query the matches are the store's ranked recall (BM25 over tags and values,
//! [`Store::rank_where`]), best first, each key followed by the first words of its value;
//! tags given too filter them.

use crate::error::{Code, Result};
use crate::fixed::{ArrayString, FixedBuf};
use crate::limits::{ACTION_RESULT_MAX_BYTES, SEARCH_RESULTS_SHOWN};
use crate::memory::key::{normalize, Key};
use crate::memory::query::{Archived, Query, Results, Sort};
use crate::memory::store::cleanup::Use;
use crate::memory::store::recall::Ranked;
use crate::memory::store::{Change, Store};
use crate::memory::working::WorkingSet;
use crate::reply::{Action, ActionKind};
use core::fmt::Write as _;

/// Matches a search collects before filtering (shown ones plus room to tell "more").
const SEARCH_RESULTS_CAP: usize = 4 * SEARCH_RESULTS_SHOWN;

/// Words of each value that a ranked `storage_search` shows after the key.
const SEARCH_PREVIEW_WORDS: usize = 12;

/// The working-memory key that receives search results.
pub const SEARCH_RESULTS_KEY: &str = "search_results";

/// What an action did.
#[derive(Clone, Copy, Debug, Default)]
pub struct ActionResult {
    /// The action kind.
    pub kind: ActionKind,
    /// The normalised key acted on (empty when the tags were invalid or absent).
    pub key: ArrayString<{ crate::limits::KEY_MAX_BYTES }>,
    /// Whether it succeeded.
    pub ok: bool,
    /// The result message.
    pub message: ArrayString<ACTION_RESULT_MAX_BYTES>,
}

impl ActionResult {
    fn new(kind: ActionKind) -> ActionResult {
        ActionResult { kind, key: ArrayString::new(), ok: false, message: ArrayString::new() }
    }

    /// The result the agent's own paging starts from.
    pub fn paging() -> ActionResult {
        ActionResult::new(ActionKind::PageOut)
    }

    /// An action refused because it repeats the previous cycle's exactly.
    pub fn refused(kind: ActionKind, tags: &str) -> ActionResult {
        let mut r = ActionResult::new(kind);
        if let Ok(k) = normalize(tags) {
            let _ = r.key.push_str(k.as_str());
        }
        r.done(false, format_args!("refused: identical to the previous action; do something else"))
    }

    /// A save refused because it repeats what is stored: `why` says how.
    pub fn refused_repeat(kind: ActionKind, key: &Key, why: &str) -> ActionResult {
        let mut r = ActionResult::new(kind);
        let _ = r.key.push_str(key.as_str());
        r.done(false, format_args!("refused: a repeat: {}", why))
    }

    /// A save of `key` refused because its value is no entry of the task's product, and why.
    pub fn refused_entry(kind: ActionKind, key: &Key, why: &str) -> ActionResult {
        let mut r = ActionResult::new(kind);
        let _ = r.key.push_str(key.as_str());
        r.done(false, format_args!("refused: not an entry: {}", why))
    }

    /// Says that a save was kept apart as doubtful (see `agent::product`), and why.
    pub fn kept_apart(&mut self, why: &str) {
        self.message.clear();
        if self.message.format(format_args!("kept apart as doubtful: {}", why)).is_err() {
            self.message.clip_with_marker("...");
        }
    }

    fn done(mut self, ok: bool, args: core::fmt::Arguments<'_>) -> ActionResult {
        self.ok = ok;
        self.message.clear();
        if self.message.format(args).is_err() {
            // A long message (a long key in it) is cut visibly; it is a log line, not data.
            let _ = write!(self.message, "{}", args);
            self.message.clip_with_marker("...");
        }
        self
    }
}

/// The buffers actions need, reserved once.
pub struct ActionScratch {
    results: Results,
    ranked: Ranked,
    text: FixedBuf,
    /// Recall by meaning, when `memory.embeddings` is configured: `storage_search` with words
    /// fuses the word and the vector rankings.
    pub meaning: Option<crate::memory::store::vectors::Meaning>,
}

impl ActionScratch {
    /// Reserves the buffers.
    pub fn new() -> ActionScratch {
        ActionScratch {
            results: Results::with_capacity(SEARCH_RESULTS_CAP),
            ranked: Ranked::new(),
            text: FixedBuf::with_capacity(
                "action text buffer (limits::STORE_VALUE_MAX_BYTES)",
                crate::limits::STORE_VALUE_MAX_BYTES,
            ),
            meaning: None,
        }
    }
}

impl Default for ActionScratch {
    fn default() -> Self {
        ActionScratch::new()
    }
}

/// Carries out one action. `Err` only for storage faults the cycle cannot go on after.
pub fn apply(
    a: &Action<'_>,
    wm: &mut WorkingSet,
    store: &mut Store,
    scratch: &mut ActionScratch,
    now: u64,
) -> Result<ActionResult> {
    let r = ActionResult::new(a.kind);
    // Every kind but storage_search needs a key.
    let key = if a.tags.trim().is_empty() && !a.kind.needs_tags() {
        None
    } else {
        match normalize(a.tags) {
            Ok(k) => Some(k),
            Err(e) => return Ok(r.done(false, format_args!("invalid tags '{}': {}", a.tags, e.message()))),
        }
    };
    let mut r = r;
    if let Some(k) = &key {
        let _ = r.key.push_str(k.as_str());
    }
    // An absent value is an empty one: the kinds that need a value say so just below.
    let value = a.value.map_or("", str::trim);
    if a.kind.needs_value() && value.is_empty() {
        return Ok(r.done(false, format_args!("{} needs a non-empty value", a.kind.as_str())));
    }
    match (a.kind, key) {
        (ActionKind::WorkingMemoryAdd, Some(k)) => Ok(match wm.add(&k, value, now) {
            Ok(()) => r.done(true, format_args!("added to working memory")),
            Err(e) => r.done(false, format_args!("{}", e.message())),
        }),
        (ActionKind::WorkingMemoryRemove, Some(k)) => Ok(if wm.remove(&k) {
            r.done(true, format_args!("removed from working memory"))
        } else {
            r.done(false, format_args!("'{}' is not in working memory", k))
        }),
        // A save adds: a stored key is changed only by an explicit update (record_update).
        (ActionKind::StorageSave, Some(k)) if store.find(&k).is_some() => Ok(r.done(
            false,
            format_args!("refused: a repeat: '{}' is already stored; save something new (record_update changes it)", k),
        )),
        (ActionKind::StorageSave, Some(k)) => {
            let saved = store_put(r, store, &k, value, now)?;
            if saved.ok {
                // Saved in the same cycle as another, or right after a load: related.
                let linked = store.link_with_recent(&k);
                store.note_use(&k, Use::Saved);
                if let Err(e) = linked {
                    return Ok(saved.done(true, format_args!("saved to storage (not linked: {})", e.message())));
                }
            }
            Ok(saved)
        }
        (ActionKind::StorageLoad, Some(k)) | (ActionKind::PageIn, Some(k)) => load_into(r, wm, store, scratch, &k, now),
        (ActionKind::PageOut, Some(k)) => page_out(r, wm, store, scratch, &k, now),
        (ActionKind::Archive, Some(k)) => {
            // Archive what is in working memory too: save it first, then take it out.
            if wm.get(&k).is_some() {
                let moved = page_out(r, wm, store, scratch, &k, now)?;
                if !moved.ok {
                    return Ok(moved);
                }
            }
            match store.set_archived(&k, true, now) {
                Ok(_) => Ok(r.done(true, format_args!("archived (kept on disk, out of default search)"))),
                Err(e) => failed(r, e),
            }
        }
        (ActionKind::RecordUpdate, Some(k)) => {
            let expected = match a.base_version.map(str::trim) {
                None | Some("") => None,
                Some(v) => match crate::bytes::parse_u32(v.trim_start_matches('v')) {
                    Some(n) => Some(n),
                    None => return Ok(r.done(false, format_args!("base version '{}' is not a number", v))),
                },
            };
            match store.update(&k, value, expected, now) {
                Ok(p) => {
                    store.note_use(&k, Use::Saved);
                    Ok(r.done(true, format_args!("updated to version {}", p.version)))
                }
                Err(e) if is_fault(e.code()) => Err(e),
                Err(e) => Ok(r.done(false, format_args!("{}: {}", e.code(), e.message()))),
            }
        }
        (ActionKind::RecordIssue, Some(k)) => {
            let issue_key = match normalize("issue").and_then(|i| k.union(&i)) {
                Ok(ik) => ik,
                Err(e) => return Ok(r.done(false, format_args!("{}", e.message()))),
            };
            scratch.text.clear();
            let written = scratch.text.push_str(value).and_then(|()| match a.metadata.map(str::trim) {
                Some(m) if !m.is_empty() => scratch.text.format(format_args!("\n(metadata: {})", m)),
                _ => Ok(()),
            });
            if let Err(e) = written {
                return Ok(r.done(false, format_args!("{}", e.message())));
            }
            let text = scratch.text.text()?;
            r.key.clear();
            let _ = r.key.push_str(issue_key.as_str());
            match store.put(&issue_key, text, now) {
                Ok(_) => Ok(r.done(true, format_args!("issue recorded"))),
                Err(e) => failed(r, e),
            }
        }
        (ActionKind::StorageSearch, key) => search(r, wm, store, scratch, key.as_ref(), a.query, now),
        (kind, None) => Ok(r.done(false, format_args!("{} needs tags", kind.as_str()))),
    }
}

/// Storage faults stop the cycle; everything else is a failed action the model is told about.
fn is_fault(code: Code) -> bool {
    matches!(code, Code::PersistFailed | Code::Io)
}

/// The result of a store operation that failed: a storage fault is passed up (the cycle stops
/// before anything is persisted); any other error is a failed action carrying its message.
fn failed(r: ActionResult, e: crate::error::Error) -> Result<ActionResult> {
    if is_fault(e.code()) {
        Err(e)
    } else {
        Ok(r.done(false, format_args!("{}", e.message())))
    }
}

fn store_put(r: ActionResult, store: &mut Store, k: &Key, value: &str, now: u64) -> Result<ActionResult> {
    match store.put(k, value, now) {
        Ok(p) => Ok(match p.change {
            Change::Created => r.done(true, format_args!("saved to storage")),
            Change::Updated => r.done(true, format_args!("saved to storage (replaced version {})", p.version - 1)),
            Change::Unchanged => r.done(true, format_args!("storage already holds this value")),
        }),
        Err(e) => failed(r, e),
    }
}

fn load_into(
    r: ActionResult,
    wm: &mut WorkingSet,
    store: &mut Store,
    scratch: &mut ActionScratch,
    k: &Key,
    now: u64,
) -> Result<ActionResult> {
    scratch.text.clear();
    let mut cold = false;
    match store.load(k, now) {
        Ok(Some(v)) => scratch.text.push_str(v)?,
        // A key storage_search found in the cold store: its newest copy, read in place (it
        // stays cold; saved again, it is live).
        Ok(None) => match store.cold_value(k) {
            Ok(Some(v)) => {
                scratch.text.push_str(v)?;
                cold = true;
            }
            Ok(None) => {
                return Ok(r.done(false, format_args!("'{}' is not in storage; use storage_search to find keys", k)))
            }
            Err(e) => return failed(r, e),
        },
        Err(e) => return failed(r, e),
    }
    let text = scratch.text.text()?;
    if let Err(e) = wm.add(k, text, now) {
        return Ok(r.done(false, format_args!("{}", e.message())));
    }
    if cold {
        return Ok(r.done(true, format_args!("loaded from the cold store into working memory")));
    }
    store.note_use(k, Use::Loaded);
    // The keys of its related entries, so the model can follow them.
    let mut related = ArrayString::<ACTION_RESULT_MAX_BYTES>::new();
    if let Some(id) = store.find(k) {
        store.related(id, &mut scratch.results);
        for other in scratch.results.ids() {
            let Some(key) = store.key(other) else { continue };
            let sep = if related.is_empty() { "; related: " } else { " | " };
            if related.push_str(sep).and_then(|()| related.push_str(key.as_str())).is_err() {
                related.clip_with_marker("...");
                break;
            }
        }
    }
    Ok(r.done(true, format_args!("loaded from storage into working memory{}", related.as_str())))
}

/// Saves the working-memory entry `k` to the store, then removes it from working memory.
/// Nothing is removed unless the save was acknowledged (fsynced).
pub fn page_out(
    r: ActionResult,
    wm: &mut WorkingSet,
    store: &mut Store,
    scratch: &mut ActionScratch,
    k: &Key,
    now: u64,
) -> Result<ActionResult> {
    scratch.text.clear();
    match wm.get(k) {
        Some(t) => scratch.text.push_str(t)?,
        None => return Ok(r.done(false, format_args!("'{}' is not in working memory", k))),
    }
    let text = scratch.text.text()?;
    if !text.trim().is_empty() {
        match store.put(k, text, now) {
            Ok(_) => {}
            // The live store cannot take it (full, and nothing in it may be moved; or its tag
            // table is full): the entry goes straight to the cold store, so working memory still
            // shrinks and nothing is lost.
            Err(e) if e.code() == Code::CapacityExceeded => {
                if let Err(cold) = store.put_cold(k, text, now) {
                    return failed(r, cold);
                }
                e.context(format_args!("paging moved '{}' to the cold store instead", k)).print_warning();
                wm.remove(k);
                return Ok(r.done(
                    true,
                    format_args!(
                        "moved from working memory to the cold store (the store cannot take it; see memory.cleanup)"
                    ),
                ));
            }
            Err(e) => return failed(r, e),
        }
    }
    wm.remove(k);
    Ok(r.done(true, format_args!("moved from working memory to storage")))
}

fn search(
    r: ActionResult,
    wm: &mut WorkingSet,
    store: &mut Store,
    scratch: &mut ActionScratch,
    key: Option<&Key>,
    query: Option<&str>,
    now: u64,
) -> Result<ActionResult> {
    let needle = query.map(str::trim).filter(|q| !q.is_empty());
    scratch.results.clear();
    match (key, needle) {
        (None, None) => return Ok(r.done(false, format_args!("storage_search needs tags or a text query"))),
        // Words: ranked recall, the tags (if any) filtering.
        (_, Some(n)) => return search_ranked(r, wm, store, scratch, key, n, now),
        (Some(k), None) => {
            let q = Query {
                required: Some(*k),
                sort: Sort::Relevance,
                max_results: SEARCH_RESULTS_CAP,
                ..Query::default()
            };
            store.query(&q, &mut scratch.results);
        }
    }
    scratch.text.clear();
    let mut shown = 0usize;
    let mut total = 0usize;
    for id in scratch.results.ids() {
        let Some(entry_key) = store.key(id) else { continue };
        if let Some(k) = key {
            if !k.tags().all(|t| entry_key.has_tag(t)) {
                continue;
            }
        }
        total += 1;
        if shown == SEARCH_RESULTS_SHOWN {
            continue;
        }
        if !scratch.text.is_empty() {
            scratch.text.push_str("\n")?;
        }
        scratch.text.push_str(entry_key.as_str())?;
        shown += 1;
    }
    if shown == 0 {
        wm.remove(&normalize(SEARCH_RESULTS_KEY)?);
        return Ok(match key {
            Some(k) => r.done(true, format_args!("no stored key has all the tags '{}'", k)),
            None => r.done(false, format_args!("storage_search needs tags or a text query")),
        });
    }
    if total > shown || scratch.results.truncated() {
        scratch.text.format(format_args!("\n(more matches; narrow the search with more tags)"))?;
    }
    publish_results(r, wm, scratch, shown, now)
}

/// `storage_search` with words: the best-ranked entries (carrying every tag of `key`, if
/// given), one line each: the key, then the first words of its value.
fn search_ranked(
    r: ActionResult,
    wm: &mut WorkingSet,
    store: &mut Store,
    scratch: &mut ActionScratch,
    key: Option<&Key>,
    words: &str,
    now: u64,
) -> Result<ActionResult> {
    let by = crate::memory::store::vectors::By::Both;
    match store.rank_by(
        scratch.meaning.as_mut(),
        by,
        words,
        SEARCH_RESULTS_SHOWN + 1,
        Archived::Exclude,
        key,
        &mut scratch.ranked,
    ) {
        Ok(()) => {}
        // A query too long for the ranking is the model's to shorten.
        Err(e) if e.code() == Code::CapacityExceeded => return Ok(r.done(false, format_args!("{}", e.message()))),
        Err(e) => return Err(e),
    }
    scratch.text.clear();
    let mut shown = 0usize;
    for h in scratch.ranked.hits().iter().take(SEARCH_RESULTS_SHOWN) {
        let Some(entry) = store.hit_info(h.id)? else { continue };
        if shown > 0 {
            scratch.text.push_str("\n")?;
        }
        scratch.text.push_str(entry.key.as_str())?;
        // Where it lives: a cold entry is found, loaded back with `memory restore`.
        scratch.text.push_str(if h.is_cold() { " (cold):" } else { ":" })?;
        let value = store.value(h.id)?;
        let mut it = value.split_whitespace();
        for w in it.by_ref().take(SEARCH_PREVIEW_WORDS) {
            scratch.text.push_str(" ")?;
            scratch.text.push_str(w)?;
        }
        if it.next().is_some() {
            scratch.text.push_str(" ...")?;
        }
        shown += 1;
    }
    if shown == 0 {
        wm.remove(&normalize(SEARCH_RESULTS_KEY)?);
        return Ok(match key {
            Some(k) => r.done(true, format_args!("no stored entry with the tags '{}' holds the words '{}'", k, words)),
            None => r.done(true, format_args!("no stored entry holds the words '{}'", words)),
        });
    }
    if scratch.ranked.len() > shown {
        scratch.text.format(format_args!("\n(more matches; add words or tags to narrow the search)"))?;
    }
    publish_results(r, wm, scratch, shown, now)
}

/// Puts the search results in `scratch.text` into working memory as `search_results`.
fn publish_results(
    r: ActionResult,
    wm: &mut WorkingSet,
    scratch: &mut ActionScratch,
    shown: usize,
    now: u64,
) -> Result<ActionResult> {
    let text = scratch.text.text()?;
    Ok(match wm.add(&normalize(SEARCH_RESULTS_KEY)?, text, now) {
        Ok(()) => {
            r.done(true, format_args!("{} match{}: see search_results", shown, if shown == 1 { "" } else { "es" }))
        }
        Err(e) => r.done(false, format_args!("{}", e.message())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reply::Form;
    use crate::testing::temp_dir;

    fn search_action<'a>(tags: &'a str, query: &'a str) -> Action<'a> {
        Action {
            kind: ActionKind::StorageSearch,
            tags,
            value: None,
            query: Some(query),
            base_version: None,
            metadata: None,
            form: Form::Canonical,
            element: "action",
            offset: 0,
        }
    }

    fn action<'a>(kind: ActionKind, tags: &'a str, value: Option<&'a str>) -> Action<'a> {
        Action { kind, tags, value, ..search_action("", "") }
    }

    /// Saves in one cycle are linked, and so is a save right after a load; a load names the
    /// loaded entry's related keys.
    #[test]
    fn saves_link_and_a_load_shows_the_related_keys() {
        let d = temp_dir("action-links");
        let mut store = Store::open_with_capacity(&d, 64).unwrap();
        let mut wm = WorkingSet::new();
        let mut scratch = ActionScratch::new();
        let save = |store: &mut Store, wm: &mut WorkingSet, scratch: &mut ActionScratch, tags: &str| {
            let r = apply(&action(ActionKind::StorageSave, tags, Some("text")), wm, store, scratch, 1).unwrap();
            assert!(r.ok, "{}", r.message.as_str());
        };
        save(&mut store, &mut wm, &mut scratch, "fruit,apple");
        save(&mut store, &mut wm, &mut scratch, "fruit,pear");
        store.flush_access().unwrap(); // the next cycle
        store.flush_access().unwrap();
        save(&mut store, &mut wm, &mut scratch, "tools,hammer");
        let r =
            apply(&action(ActionKind::StorageLoad, "apple,fruit", None), &mut wm, &mut store, &mut scratch, 2).unwrap();
        assert_eq!(r.message.as_str(), "loaded from storage into working memory; related: fruit,pear");
        store.flush_access().unwrap();
        save(&mut store, &mut wm, &mut scratch, "fruit,plum");
        let r =
            apply(&action(ActionKind::StorageLoad, "apple,fruit", None), &mut wm, &mut store, &mut scratch, 3).unwrap();
        assert_eq!(r.message.as_str(), "loaded from storage into working memory; related: fruit,pear | fruit,plum");
        let r = apply(&action(ActionKind::StorageLoad, "hammer,tools", None), &mut wm, &mut store, &mut scratch, 3)
            .unwrap();
        assert_eq!(r.message.as_str(), "loaded from storage into working memory", "nothing related");
    }

    /// A key storage_search found in the cold store is loaded by storage_load (read in place,
    /// the entry staying cold); a key in neither is still refused.
    #[test]
    fn storage_load_loads_a_cold_hit() {
        use crate::memory::store::cold::cleanup::Filter;
        let d = temp_dir("action-cold-load");
        let mut store = Store::open_with_capacity(&d, 64).unwrap();
        let k = |s: &str| normalize(s).unwrap();
        store.put(&k("fruit,quince"), "A quince is a hard golden fruit for jelly.", 1).unwrap();
        store.put(&k("tools,saw"), "A saw cuts wood.", 50).unwrap();
        let moved = store
            .cleanup_where(&Filter { accessed_before: Some(10), max_hits: None }, crate::memory::store::Cleanup::Cold)
            .unwrap();
        assert_eq!(moved, 1);
        let mut wm = WorkingSet::new();
        let mut scratch = ActionScratch::new();
        let r = apply(&search_action("", "golden jelly"), &mut wm, &mut store, &mut scratch, 2).unwrap();
        assert!(r.ok, "{}", r.message.as_str());
        assert!(wm.get(&k(SEARCH_RESULTS_KEY)).unwrap().starts_with("fruit,quince (cold): A quince"));
        let r = apply(&action(ActionKind::StorageLoad, "fruit,quince", None), &mut wm, &mut store, &mut scratch, 3)
            .unwrap();
        assert!(r.ok, "{}", r.message.as_str());
        assert_eq!(r.message.as_str(), "loaded from the cold store into working memory");
        assert_eq!(wm.get(&k("fruit,quince")).unwrap(), "A quince is a hard golden fruit for jelly.");
        assert!(store.find(&k("fruit,quince")).is_none(), "it stays cold");
        let r = apply(&action(ActionKind::StorageLoad, "fruit,medlar", None), &mut wm, &mut store, &mut scratch, 4)
            .unwrap();
        assert!(!r.ok && r.message.as_str().contains("is not in storage"), "{}", r.message.as_str());
    }

    #[test]
    fn storage_search_with_words_ranks_and_previews_tags_filter() {
        let d = temp_dir("action-rank");
        let mut store = Store::open_with_capacity(&d, 64).unwrap();
        let k = |s: &str| normalize(s).unwrap();
        store
            .put(&k("fruit,apple"), "An apple is a round fruit that grows on trees in orchards across the world.", 1)
            .unwrap();
        store.put(&k("fruit,pear"), "A pear is a sweet fruit.", 1).unwrap();
        store.put(&k("tools,hammer"), "A hammer drives nails; not a fruit.", 1).unwrap();
        let mut wm = WorkingSet::new();
        let mut scratch = ActionScratch::new();
        let r = apply(&search_action("", "round fruit"), &mut wm, &mut store, &mut scratch, 2).unwrap();
        assert!(r.ok, "{}", r.message.as_str());
        assert_eq!(r.message.as_str(), "3 matches: see search_results");
        let text = wm.get(&k(SEARCH_RESULTS_KEY)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // Best first, each with the first words of its value.
        assert_eq!(lines[0], "apple,fruit: An apple is a round fruit that grows on trees in orchards ...");
        assert_eq!(lines.len(), 3, "{text}");
        // Tags filter the ranked entries.
        let r = apply(&search_action("tools", "fruit"), &mut wm, &mut store, &mut scratch, 3).unwrap();
        assert!(r.ok);
        assert_eq!(wm.get(&k(SEARCH_RESULTS_KEY)).unwrap(), "hammer,tools: A hammer drives nails; not a fruit.");
        // No match: said so, and the old results are gone.
        let r = apply(&search_action("", "zebra"), &mut wm, &mut store, &mut scratch, 4).unwrap();
        assert!(
            r.ok && r.message.as_str().contains("no stored entry holds the words 'zebra'"),
            "{}",
            r.message.as_str()
        );
        assert!(wm.get(&k(SEARCH_RESULTS_KEY)).is_none());
        // A query too long to rank is the model's to fix, not a fault.
        let long = (0..100).map(|i| format!("w{} ", i)).collect::<String>();
        let r = apply(&search_action("", &long), &mut wm, &mut store, &mut scratch, 5).unwrap();
        assert!(!r.ok && r.message.as_str().contains("RANK_MAX_TERMS"));
    }
}
