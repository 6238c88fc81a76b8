//! The working set: the entries the prompt shows (`working_memory` in `memory.json`).
//!
//! A fixed number of entries ([`WORKING_MAX_ENTRIES`]) in insertion order, their text in one
//! arena of [`WORKING_TEXT_MAX_BYTES`] bytes reserved at construction; nothing grows after
//! that. Each entry carries its normalised [`Key`], creation and update times (Unix seconds,
//! passed in by the caller so tests and replays are deterministic) and a hit count.
//!
//! - `add` overwrites an existing key in place (its position is kept, as in the C original) or
//!   appends a new one; a full set or a full text budget is `CAPACITY_EXCEEDED` and changes
//!   nothing.
//! - `remove` really removes (the C original left an empty key behind).
//! - `lru` lists the least recently used entries first (oldest `updated`, then fewest hits,
//!   then oldest position): the candidates for paging out to the store.
//!
//! Text removal moves the later text down in the arena (a `memmove` of at most the arena size),
//! which keeps the arena dense without a free list.

use crate::error::Result;
use crate::limits::{WORKING_MAX_ENTRIES, WORKING_TEXT_MAX_BYTES};
use crate::memory::key::Key;

/// One entry's metadata; its text is `WorkingSet::text(i)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkingMeta {
    /// When the key was first added (Unix seconds).
    pub created: u64,
    /// When the text was last written or read through `touch` (Unix seconds).
    pub updated: u64,
    /// How often the entry was read through `touch`.
    pub hits: u64,
}

#[derive(Clone, Copy)]
struct Slot {
    key: Key,
    start: usize,
    len: usize,
    meta: WorkingMeta,
}

/// The working set. See the module documentation.
pub struct WorkingSet {
    slots: Vec<Slot>,
    text: Vec<u8>,
    max_entries: usize,
    max_text: usize,
}

impl Default for WorkingSet {
    fn default() -> Self {
        WorkingSet::new()
    }
}

impl WorkingSet {
    /// An empty set with the capacities of `limits.rs`, reserved now.
    pub fn new() -> WorkingSet {
        WorkingSet::with_capacity(WORKING_MAX_ENTRIES, WORKING_TEXT_MAX_BYTES)
    }

    /// An empty set with smaller capacities (tests, tools). Both are capped at the
    /// `limits.rs` values.
    pub fn with_capacity(max_entries: usize, max_text: usize) -> WorkingSet {
        let max_entries = max_entries.min(WORKING_MAX_ENTRIES);
        let max_text = max_text.min(WORKING_TEXT_MAX_BYTES);
        WorkingSet { slots: Vec::with_capacity(max_entries), text: Vec::with_capacity(max_text), max_entries, max_text }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Bytes of text held, all entries together.
    pub fn text_bytes(&self) -> usize {
        self.text.len()
    }

    /// The text budget in bytes.
    pub fn text_capacity(&self) -> usize {
        self.max_text
    }

    /// The entry capacity.
    pub fn capacity(&self) -> usize {
        self.max_entries
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.slots.clear();
        self.text.clear();
    }

    /// Position of `key`, if present.
    pub fn position(&self, key: &Key) -> Option<usize> {
        self.slots.iter().position(|s| s.key == *key)
    }

    /// The text of `key`, if present (does not count as a hit; see [`WorkingSet::touch`]).
    pub fn get(&self, key: &Key) -> Option<&str> {
        self.position(key).and_then(|i| self.text(i))
    }

    /// Adds `key` with `text`, or overwrites its text in place. `CAPACITY_EXCEEDED` (nothing
    /// changed) when the set is full or the text does not fit the budget.
    pub fn add(&mut self, key: &Key, text: &str, now: u64) -> Result<()> {
        let existing = self.position(key);
        let old_len = existing.and_then(|i| self.slots.get(i)).map_or(0, |s| s.len);
        if self.text.len() - old_len + text.len() > self.max_text {
            bail!(
                CapacityExceeded,
                "working memory text is full: {} bytes for \"{}\" do not fit ({} of {} bytes used, \
                 WORKING_TEXT_MAX_BYTES); move entries to the store first",
                text.len(),
                key,
                self.text.len() - old_len,
                self.max_text
            );
        }
        match existing {
            Some(i) => {
                self.cut_text(i);
                let start = self.text.len();
                self.text.extend_from_slice(text.as_bytes());
                if let Some(s) = self.slots.get_mut(i) {
                    s.start = start;
                    s.len = text.len();
                    s.meta.updated = now;
                }
            }
            None => {
                if self.slots.len() >= self.max_entries {
                    bail!(
                        CapacityExceeded,
                        "working memory is full: {} entries (WORKING_MAX_ENTRIES); cannot add \"{}\"",
                        self.max_entries,
                        key
                    );
                }
                let start = self.text.len();
                self.text.extend_from_slice(text.as_bytes());
                self.slots.push(Slot {
                    key: *key,
                    start,
                    len: text.len(),
                    meta: WorkingMeta { created: now, updated: now, hits: 0 },
                });
            }
        }
        Ok(())
    }

    /// Removes `key`; returns whether it was present.
    pub fn remove(&mut self, key: &Key) -> bool {
        match self.position(key) {
            Some(i) => {
                self.cut_text(i);
                self.slots.remove(i);
                true
            }
            None => false,
        }
    }

    /// Records a read of `key` (hit count and `updated`), for LRU; returns whether present.
    pub fn touch(&mut self, key: &Key, now: u64) -> bool {
        match self.position(key).and_then(|i| self.slots.get_mut(i)) {
            Some(s) => {
                s.meta.hits = s.meta.hits.saturating_add(1);
                s.meta.updated = now;
                true
            }
            None => false,
        }
    }

    /// Replaces the metadata of `key` (used when loading a file); returns whether present.
    pub fn set_meta(&mut self, key: &Key, meta: WorkingMeta) -> bool {
        match self.position(key).and_then(|i| self.slots.get_mut(i)) {
            Some(s) => {
                s.meta = meta;
                true
            }
            None => false,
        }
    }

    /// The key at position `i` (insertion order).
    pub fn key(&self, i: usize) -> Option<&Key> {
        self.slots.get(i).map(|s| &s.key)
    }

    /// The text at position `i`.
    pub fn text(&self, i: usize) -> Option<&str> {
        self.slots.get(i).map(|s| self.slot_text(s))
    }

    /// The text of an entry. The arena holds each entry's text as the whole `&str` it was
    /// added as, at `start..start + len` (`cut_text` removes an entry's text whole and moves
    /// the starts after it down), so the range lies within the arena and is all text.
    fn slot_text(&self, s: &Slot) -> &str {
        crate::bytes::utf8_prefix(crate::bytes::range(&self.text, s.start, s.start + s.len))
    }

    /// The metadata at position `i`.
    pub fn meta(&self, i: usize) -> Option<WorkingMeta> {
        self.slots.get(i).map(|s| s.meta)
    }

    /// The entries in insertion order: `(key, text, meta)`.
    pub fn iter(&self) -> impl Iterator<Item = (&Key, &str, WorkingMeta)> + '_ {
        self.slots.iter().map(move |s| (&s.key, self.slot_text(s), s.meta))
    }

    /// The least recently used entry among those `keep` does not protect: oldest `updated`,
    /// then fewest hits, then earliest position. Call it repeatedly (removing the result) to
    /// page out several entries; it allocates nothing.
    pub fn lru(&self, mut keep: impl FnMut(&Key) -> bool) -> Option<Key> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| !keep(&s.key))
            .min_by_key(|(i, s)| (s.meta.updated, s.meta.hits, *i))
            .map(|(_, s)| s.key)
    }

    /// Removes slot `i`'s text from the arena and moves later text down.
    fn cut_text(&mut self, i: usize) {
        let Some(&Slot { start, len, .. }) = self.slots.get(i) else { return };
        if len == 0 || start + len > self.text.len() {
            return;
        }
        self.text.drain(start..start + len);
        for s in self.slots.iter_mut() {
            if s.start > start {
                s.start -= len;
            }
        }
        if let Some(s) = self.slots.get_mut(i) {
            s.len = 0;
            s.start = self.text.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;
    use crate::memory::key::normalize;

    fn k(s: &str) -> Key {
        normalize(s).unwrap()
    }

    #[test]
    fn add_overwrite_remove_in_order() {
        let mut w = WorkingSet::with_capacity(4, 64);
        w.add(&k("task"), "build it", 10).unwrap();
        w.add(&k("notes"), "é→", 11).unwrap();
        w.add(&k("Task"), "build it well", 12).unwrap();
        let order: Vec<_> = w.iter().map(|(k, t, _)| (k.to_string(), t.to_string())).collect();
        assert_eq!(order, [("task".into(), "build it well".into()), ("notes".to_string(), "é→".to_string())]);
        assert_eq!(w.meta(0).unwrap(), WorkingMeta { created: 10, updated: 12, hits: 0 });
        assert_eq!(w.text_bytes(), "build it well".len() + "é→".len());
        assert!(w.remove(&k("task")));
        assert!(!w.remove(&k("task")));
        assert_eq!(w.len(), 1);
        assert_eq!(w.get(&k("notes")), Some("é→"));
        assert_eq!(w.text_bytes(), "é→".len());
        w.add(&k("empty"), "", 13).unwrap();
        assert_eq!(w.get(&k("empty")), Some(""));
    }

    #[test]
    fn capacity_errors_change_nothing() {
        let mut w = WorkingSet::with_capacity(2, 10);
        w.add(&k("a"), "12345", 1).unwrap();
        let e = w.add(&k("b"), "123456", 2).unwrap_err();
        assert_eq!(e.code(), Code::CapacityExceeded);
        assert!(e.message().contains("WORKING_TEXT_MAX_BYTES"));
        w.add(&k("a"), "1234567890", 3).unwrap(); // overwrite may reuse its own bytes
        w.add(&k("a"), "1", 3).unwrap();
        w.add(&k("b"), "2", 4).unwrap();
        let e = w.add(&k("c"), "3", 5).unwrap_err();
        assert!(e.message().contains("WORKING_MAX_ENTRIES"));
        assert_eq!(w.len(), 2);
        assert_eq!(w.get(&k("a")), Some("1"));
        assert_eq!(w.get(&k("b")), Some("2"));
    }

    #[test]
    fn lru_orders_by_use() {
        let mut w = WorkingSet::with_capacity(8, 100);
        w.add(&k("a"), "x", 1).unwrap();
        w.add(&k("b"), "y", 1).unwrap();
        w.add(&k("c"), "z", 2).unwrap();
        assert_eq!(w.lru(|_| false), Some(k("a")));
        w.touch(&k("a"), 1);
        assert_eq!(w.lru(|_| false), Some(k("b")));
        assert_eq!(w.lru(|key| key.as_str() == "b"), Some(k("a")));
        w.touch(&k("a"), 5);
        w.touch(&k("b"), 5);
        assert_eq!(w.lru(|_| false), Some(k("c")));
        assert_eq!(w.lru(|_| true), None);
    }
}
