//! The log's tail laid over the checkpoint read in place: what the read-only commands read
//! when `store.ckpt` covers the log's first bytes but not its last ones (an agent running
//! between two checkpoints, or killed before the next), at most
//! [`STORE_VIEW_TAIL_MAX_BYTES`] of them (twice the agent's checkpoint interval) changing at
//! most `STORE_VIEW_TAIL_MAX_ENTRIES` entries.
//!
//! Opening reads the tail's records as replay reads them (`replay.rs`) and keeps, per entry
//! they touch, what they leave of it (`Change`): its last `put` (its record's place and
//! fields, its key as its tags' ids: the checkpoint's, and ids after them for the tags the
//! tail adds), gone (deleted, one by one or by a whole clean-up batch; or its key taken by a
//! later `put` of another id), or, for an entry of the checkpoint, only its access
//! statistics. A torn last record (a write cut short by a crash, or still being written) is
//! ignored as replay ignores it, with the same warning. Whatever replay would do more than
//! that (a damaged record with good ones after it, an import's batch or a clean-up cut short,
//! a second header, more live entries than the capacity, tags the store could not intern)
//! makes [`TailView::open`] say `None`: the caller opens the store whole, as before; so does
//! a tail over either bound.
//!
//! A ranked search then loads `store.fts` (taken of the checkpoint's log) resident, its
//! documents of the entries the tail changed marked stale, and brings them into a delta as
//! the store's own catch-up does (`recall::catch_up_over`, in the same order), so that the
//! statistics, the documents and so the scores are the ones the store opened whole ranks
//! with; the live entries it asks about (`Live`) are the tail's where it changed them, the
//! checkpoint's elsewhere. Nothing is written.
//!
//! The other read-only commands (`status`, `memory query`, `memory show`, `memory stats`)
//! read the same view through `tables`: the tag tables after the tail (`query::Tables`), an
//! entry's record, the statistics.

use super::StoreView;
use crate::error::{Error, Result};
use crate::limits::{store_max_tags, KEY_MAX_TAGS, RANK_MAX_RESULTS, STORE_CLEANUP_BATCH_MAX};
use crate::limits::{STORE_TAG_ARENA_BYTES_PER_TAG, STORE_VIEW_TAIL_MAX_ENTRIES};
use crate::limits::{TEXT_MIN_TERMS, TEXT_TERMS_PER_ENTRY};
use crate::memory::hash::crc32;
use crate::memory::key::Key;
use crate::memory::log::{self, LineReader, Record};
use crate::memory::query::{Archived, Query, Results};
use crate::memory::store::append::LogFile;
use crate::memory::store::checkpoint::TAIL_BYTES;
use crate::memory::store::cold::recall::ColdRecall;
use crate::memory::store::query::Tables;
use crate::memory::store::rank::Ranked;
use crate::memory::store::recall::file::{Header as FtsHeader, HEADER_BYTES as FTS_HEADER_BYTES, RECALL_FILE_NAME};
use crate::memory::store::recall::fulltext::Sizes;
use crate::memory::store::recall::upkeep::catch_up_over;
use crate::memory::store::recall::{rank_two, Ask, Live, Recall};
use crate::memory::store::slots::{clamp32, unpadded, TagSet, MAX_OFFSET};
use crate::memory::store::{room_for, EntryId, EntryInfo, Stats, LOG_NAME};
use std::collections::HashMap;
use std::fs::File;
use std::hash::{BuildHasherDefault, Hasher};
use std::os::unix::fs::FileExt;
use std::path::Path;

pub use crate::limits::STORE_VIEW_TAIL_MAX_BYTES;

mod tables;
#[cfg(test)]
mod tests;

/// The tail's maps: hashed by FNV-1a (the log's own keys and ids; SipHash took a tenth of
/// an open's instructions).
type Map<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

/// FNV-1a, 64 bits.
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// What the tail left of an entry.
enum Change {
    /// Its last `put`.
    Put(Put),
    /// Not live.
    Gone,
    /// An entry of the checkpoint, its access statistics changed.
    Access { accessed: u32, hits: u32 },
}

/// An entry as its last `put` left it (the fields the store keeps in RAM).
#[derive(Clone, Copy)]
struct Put {
    offset: u64,
    /// With its newline.
    len: u32,
    /// Its key's tag ids (the checkpoint's, or the tail's new ones), in the key's order:
    /// 16 bytes that name the key exactly, where the key itself takes 260.
    set: TagSet,
    archived: bool,
    created: u32,
    accessed: u32,
    hits: u32,
    ver: u32,
}

/// The checkpoint read in place with the log's tail laid over it. See the module
/// documentation.
pub struct TailView {
    view: StoreView,
    changed: Map<EntryId, Change>,
    /// The keys of the tail's live `put`s (as their tag ids), and their entries.
    keys: Map<TagSet, EntryId>,
    /// Live entries of the checkpoint the tail did not replace or remove.
    unchanged_live: u64,
    /// The warning replay gives for the torn tail it ignores, said once answered.
    warning: Option<Error>,
    /// The end of the tail's last whole record (the log's length for the store opened whole).
    good_end: u64,
    /// The tags the tail's `put`s carry that the checkpoint does not name, in the order met
    /// (their ids follow the checkpoint's), and their ids by name; their text's bytes.
    new_tags: Vec<String>,
    new_ids: Map<String, u16>,
    new_text: usize,
    /// Whether the tail may have changed the links (a link or unlink record, or an entry
    /// removed while the checkpoint has links): their count is then the store's to give.
    links_unsure: bool,
    /// Live entries after the tail, the archived ones among them, and one past the highest
    /// id it or the checkpoint uses (set by `settle`).
    live_now: u64,
    archived_now: u64,
    end_id: u64,
    /// Per tag id (the index), what the tail changed of its counts (live, archived); `None`
    /// until a question needs them. 16 bytes a tag id, at most 1 MiB: a vector, not a map,
    /// so the binary has one hash table fewer.
    tag_delta: Option<Vec<(i64, i64)>>,
    /// The posting lists after the tail read for the current question.
    lists: Vec<(u16, Vec<u32>)>,
    /// Bytes after the last whole record (ignored), and whether they hold a whole damaged
    /// one, as the store's statistics say them.
    unfinished: u64,
    damaged: bool,
}

impl TailView {
    /// Opens the checkpoint of the store in `dir` in place with the tail of at most
    /// [`STORE_VIEW_TAIL_MAX_BYTES`] after it read; `None` when that does not answer as the
    /// store opened whole would (see the module documentation).
    pub fn open(dir: &Path, capacity: usize) -> Result<Option<TailView>> {
        let Some((view, logf, len)) = StoreView::open_covering(dir, capacity, STORE_VIEW_TAIL_MAX_BYTES)? else {
            return Ok(None);
        };
        TailView::over(view, &logf, len, STORE_VIEW_TAIL_MAX_ENTRIES)
    }

    /// [`TailView::open`] with other bounds: at most `max_bytes` of tail, changing at most
    /// `max_entries` entries.
    #[cfg(test)]
    pub(crate) fn open_bounded(
        dir: &Path,
        capacity: usize,
        max_bytes: u64,
        max_entries: usize,
    ) -> Result<Option<TailView>> {
        let Some((view, logf, len)) = StoreView::open_covering(dir, capacity, max_bytes)? else { return Ok(None) };
        TailView::over(view, &logf, len, max_entries)
    }

    /// The tail of `logf` (`len` bytes now) after `view`'s checkpoint laid over it, if it
    /// changes at most `max_entries` entries.
    fn over(view: StoreView, logf: &File, len: u64, max_entries: usize) -> Result<Option<TailView>> {
        let mut t = TailView {
            view,
            changed: Map::default(),
            keys: Map::default(),
            unchanged_live: 0,
            warning: None,
            good_end: 0,
            new_tags: Vec::new(),
            new_ids: Map::default(),
            new_text: 0,
            links_unsure: false,
            live_now: 0,
            archived_now: 0,
            end_id: 0,
            tag_delta: None,
            lists: Vec::new(),
            unfinished: 0,
            damaged: false,
        };
        t.view.prepare()?;
        t.index_names();
        if !t.read(logf, len, max_entries)? {
            return Ok(None);
        }
        t.view.take_fault()?;
        Ok(t.settle()?.then_some(t))
    }

    /// The tag ids by name, so that the tail's lookups of its keys' tags are not a scan each.
    fn index_names(&mut self) {
        let v = &self.view;
        let mut named: Vec<(u64, u16)> = (1..v.head.layout.tags)
            .map(|i| (v.name(i as u16), i as u16))
            .filter(|n| !n.0.is_empty())
            .map(|(name, t)| (super::name_hash(name), t))
            .collect();
        // By hash, then id: the first of a name is the one the scan finds.
        crate::sort::sort(&mut named);
        self.view.by_name = named;
    }

    /// Reads the records from the checkpoint's end to `len`, as replay does; `Ok(false)` for
    /// anything this view does not lay over the checkpoint.
    fn read(&mut self, logf: &File, len: u64, max_entries: usize) -> Result<bool> {
        let from = self.view.head.covered;
        let mut reader = LineReader::starting_at(logf, from, len);
        let mut scratch = Vec::with_capacity(log::READ_SCRATCH_BYTES);
        let mut good_end = from;
        let mut bad: Option<Error> = None;
        let mut whole_bad = false;
        let mut batch = false;
        let mut cleanup: Option<Vec<EntryId>> = None;
        // The tail's puts whose key the checkpoint may hold under another id (`settle_keys`).
        let mut pending: Vec<(EntryId, TagSet)> = Vec::new();
        while let Some(line) = reader.next(&mut scratch)? {
            let text = reader.text(&scratch, line.len)?;
            let decoded = match line.complete {
                true => log::decode(text),
                false => {
                    Err(err!(JsonInvalid, "record has no newline (cut short, or longer than STORE_RECORD_MAX_BYTES)"))
                }
            };
            let rec = match decoded {
                Ok(rec) => rec,
                Err(e) => {
                    whole_bad |= line.complete;
                    bad.get_or_insert(e);
                    continue;
                }
            };
            // A damaged record with good ones after it: replay skips it and counts it.
            if bad.is_some() {
                return Ok(false);
            }
            let rec_len = line.len as u64 + 1;
            match (rec, cleanup.as_mut()) {
                (Record::Cleanup { .. }, None) => cleanup = Some(Vec::new()),
                (Record::Del { id }, Some(c)) if c.len() < STORE_CLEANUP_BATCH_MAX => c.push(id),
                (Record::BatchEnd, Some(_)) => {
                    for id in cleanup.take().unwrap_or_default() {
                        self.remove(id);
                    }
                }
                (Record::Put { head, tags, .. }, _) => {
                    if head.id as usize >= room_for(self.view.cap) || line.offset + rec_len > MAX_OFFSET {
                        return Ok(false);
                    }
                    let Ok(key) = Key::from_tags(tags.iter().map(|t| t.as_str())) else { return Ok(false) };
                    let Some(set) = self.intern(&key) else { return Ok(false) };
                    let put = Put {
                        offset: line.offset,
                        len: rec_len as u32,
                        set,
                        archived: head.archived,
                        created: clamp32(head.created),
                        accessed: clamp32(head.accessed),
                        hits: clamp32(head.hits),
                        ver: head.ver,
                    };
                    self.put(head.id, put, &mut pending);
                }
                (Record::Touch { id, accessed, hits }, _) => self.touch(id, clamp32(accessed), clamp32(hits)),
                (Record::Link { .. } | Record::Unlink { .. }, _) => self.links_unsure = true,
                (Record::Del { id }, None) => self.remove(id),
                (Record::Batch { .. }, _) if !batch => batch = true,
                (Record::BatchEnd, None) => batch = false,
                _ => return Ok(false),
            }
            // What this view holds stays within its bound (`STORE_VIEW_TAIL_MAX_ENTRIES`).
            if self.changed.len() > max_entries || pending.len() > max_entries {
                return Ok(false);
            }
            good_end = line.offset + rec_len;
        }
        if batch || cleanup.is_some() || !self.settle_keys(pending)? {
            return Ok(false);
        }
        self.good_end = good_end;
        if good_end < len {
            (self.unfinished, self.damaged) = (len - good_end, whole_bad);
            self.warning = Some(torn_tail_warning(&self.view.dir.join(LOG_NAME), len - good_end, whole_bad, bad));
        }
        Ok(true)
    }

    /// Where live entry `id`'s record is (offset, length) and whether it is archived: the
    /// tail's, or the checkpoint's; `None` when it is not live.
    fn place(&self, id: EntryId) -> Option<(u64, u32, bool)> {
        match self.changed.get(&id) {
            Some(Change::Put(p)) => Some((p.offset, p.len, p.archived)),
            Some(Change::Gone) => None,
            Some(Change::Access { .. }) | None => self.view.location(id),
        }
    }

    /// The tag ids of `key` (the checkpoint's, or the tail's new ones, interned here), in its
    /// order; `None` past the tags the store holds (ids, or text: the store's open fails there).
    fn intern(&mut self, key: &Key) -> Option<TagSet> {
        let mut set = [0u16; KEY_MAX_TAGS];
        let l = self.view.head.layout;
        let max = store_max_tags(self.view.cap);
        for (s, tag) in set.iter_mut().zip(key.tags()) {
            *s = match (Tables::tag(&self.view, tag), self.new_ids.get(tag)) {
                (Some(t), _) | (None, Some(&t)) => t,
                (None, None) => {
                    let t = u16::try_from(l.tags + self.new_tags.len()).ok()?;
                    self.new_text += tag.len();
                    if usize::from(t) + 1 > max
                        || l.tag_text as usize + self.new_text > max * STORE_TAG_ARENA_BYTES_PER_TAG
                    {
                        return None;
                    }
                    self.new_tags.push(tag.to_string());
                    self.new_ids.insert(tag.to_string(), t);
                    t
                }
            };
        }
        Some(set)
    }

    /// The tag ids of `key`, if every tag is known (no entry holds a key with a tag that is
    /// not).
    fn tag_set(&self, key: &Key) -> Option<TagSet> {
        let mut set = [0u16; KEY_MAX_TAGS];
        for (s, tag) in set.iter_mut().zip(key.tags()) {
            *s = Tables::tag(&self.view, tag).or_else(|| self.new_ids.get(tag).copied())?;
        }
        Some(set)
    }

    /// The key whose tag ids are `set`.
    fn key_of(&self, set: &TagSet) -> Option<Key> {
        let l = self.view.head.layout;
        let name = |t: u16| match usize::from(t).checked_sub(l.tags) {
            None => self.view.name(t),
            Some(i) => self.new_tags.get(i).map_or("", String::as_str),
        };
        Key::from_tags(unpadded(set).iter().map(|&t| name(t))).ok()
    }

    /// The live entry whose key is `key`, as the store finds it.
    pub fn find(&mut self, key: &Key) -> Result<Option<EntryId>> {
        if let Some(id) = self.tag_set(key).and_then(|set| self.keys.get(&set)) {
            return Ok(Some(*id));
        }
        Ok(self.view.find(key)?.filter(|id| matches!(self.changed.get(id), Some(Change::Access { .. }) | None)))
    }

    /// Replay's `put`: `id`'s old key let go, another entry of the tail holding the key
    /// removed, `id` put. Whether an entry of the checkpoint holds the key under another id is
    /// settled once the whole tail is read (`settle_keys`), in the order of the ids, so that
    /// the checkpoint's blocks are read once each, not once per record.
    fn put(&mut self, id: EntryId, put: Put, pending: &mut Vec<(EntryId, TagSet)>) {
        if let Some(Change::Put(old)) = self.changed.get(&id) {
            self.keys.remove(&old.set);
        }
        // The checkpoint's key of `id` no longer names it: `find` skips changed entries.
        self.changed.insert(id, Change::Gone);
        match self.keys.get(&put.set) {
            Some(&other) => self.remove(other),
            None => pending.push((id, put.set)),
        }
        self.keys.insert(put.set, id);
        self.changed.insert(id, Change::Put(put));
    }

    /// For each put of `pending` (its id, its key), the entry of the checkpoint holding the
    /// key under another id, which replay removes: gone, when the tail changes it nowhere
    /// else; `Ok(false)` when it does (the order of the two would matter: the store is opened
    /// whole). Such a put is rare (a writer replaces a key's value under its id); the common
    /// case, a value replaced, is one check of the id's own tags.
    fn settle_keys(&mut self, mut pending: Vec<(EntryId, TagSet)>) -> Result<bool> {
        crate::sort::sort_by_key(&mut pending, |p| p.0);
        for (id, set) in pending {
            if self.view.location(id).is_some() && self.view.tagset(id) == set {
                continue;
            }
            let Some(key) = self.key_of(&set) else { continue };
            let Some(other) = self.view.find(&key)?.filter(|&other| other != id) else { continue };
            if self.changed.contains_key(&other) {
                return Ok(false);
            }
            self.links_unsure |= self.view.head.layout.links > 0;
            self.changed.insert(other, Change::Gone);
        }
        self.view.take_fault()?;
        Ok(true)
    }

    /// Replay's deletion of `id` (an id the checkpoint does not hold live is marked gone
    /// too: it reads as not live either way).
    fn remove(&mut self, id: EntryId) {
        // Replay drops the links of an entry it removes.
        self.links_unsure |= self.view.head.layout.links > 0;
        match self.changed.get(&id) {
            Some(Change::Put(p)) => {
                self.keys.remove(&p.set);
            }
            Some(Change::Gone) => return,
            Some(Change::Access { .. }) | None => {}
        }
        self.changed.insert(id, Change::Gone);
    }

    /// Replay's `touch` of `id` (nothing when it is not live).
    fn touch(&mut self, id: EntryId, accessed: u32, hits: u32) {
        match self.changed.get_mut(&id) {
            Some(Change::Put(p)) => {
                p.accessed = accessed;
                p.hits = hits;
            }
            Some(Change::Gone) => {}
            Some(Change::Access { accessed: a, hits: h }) => {
                *a = accessed;
                *h = hits;
            }
            // An id the checkpoint does not hold live reads as not live either way.
            None => {
                self.changed.insert(id, Change::Access { accessed, hits });
            }
        }
    }

    /// The changed entries in the order of their ids (the checkpoint's blocks read once each).
    fn changed_in_order(&self) -> impl Iterator<Item = (EntryId, &Change)> + '_ {
        let mut ids: Vec<EntryId> = self.changed.keys().copied().collect();
        crate::sort::sort(&mut ids);
        ids.into_iter().filter_map(|id| self.changed.get(&id).map(|c| (id, c)))
    }

    /// Counts the live entries after the tail; `Ok(false)` past the capacity (the store's
    /// open fails there).
    fn settle(&mut self) -> Result<bool> {
        let (mut was, mut was_archived) = (0u64, 0u64);
        let (mut now, mut now_archived) = (0u64, 0u64);
        let mut end = self.view.head.layout.next_id;
        for (id, c) in self.changed_in_order() {
            let replaced = !matches!(c, Change::Access { .. });
            if let (true, Some((_, _, archived))) = (replaced, self.view.location(id)) {
                was += 1;
                was_archived += u64::from(archived);
            }
            if let Change::Put(p) = c {
                now += 1;
                now_archived += u64::from(p.archived);
            }
            end = end.max(u64::from(id) + 1);
        }
        self.view.take_fault()?;
        self.unchanged_live = u64::from(self.view.head.live).saturating_sub(was);
        self.live_now = self.unchanged_live + now;
        self.archived_now = u64::from(self.view.head.archived).saturating_sub(was_archived) + now_archived;
        self.end_id = end;
        Ok(self.live_now <= self.view.cap as u64)
    }

    /// The metadata of live entry `id`, as the store opened whole gives it.
    pub fn info(&self, id: EntryId) -> Result<Option<EntryInfo>> {
        let p = match self.changed.get(&id) {
            Some(Change::Put(p)) => p,
            Some(Change::Gone) => return Ok(None),
            Some(&Change::Access { accessed, hits }) => {
                return Ok(self.view.info(id)?.map(|i| EntryInfo { accessed: accessed.into(), hits: hits.into(), ..i }))
            }
            None => return self.view.info(id),
        };
        let Some(key) = self.key_of(&p.set) else { return Ok(None) };
        Ok(Some(EntryInfo {
            id,
            key,
            version: p.ver,
            created: p.created.into(),
            accessed: p.accessed.into(),
            hits: p.hits.into(),
            archived: p.archived,
        }))
    }

    /// Ranks as [`StoreView::rank`] does, over `store.fts` with the tail's changes brought
    /// into a delta as the store brings them (see the module documentation). `Ok(false)` when
    /// `store.fts` was not taken of the checkpoint's log, or does not hold its live entries,
    /// or the delta would not hold the changes (the caller opens the store whole).
    pub fn rank(
        &mut self,
        query: &str,
        limit: usize,
        archived: Archived,
        cold: &mut ColdRecall,
        out: &mut Ranked,
    ) -> Result<bool> {
        out.clear();
        let limit = limit.min(RANK_MAX_RESULTS).min(out.capacity());
        let Some((file, h)) = self.fts_file()? else { return Ok(false) };
        let room = room_for(self.view.cap);
        let mut r = Recall::new();
        let mut kept = 0u64;
        r.base.load(file, h, room, |d| {
            let unchanged = matches!(self.changed.get(&d.entry), Some(Change::Access { .. }) | None);
            let current = self.place(d.entry).is_some_and(|p| p.0 == d.offset);
            kept += u64::from(unchanged && current);
            current
        })?;
        self.view.take_fault()?;
        // Every live entry the tail left alone is in the base: only the tail's are new.
        // When every live entry the tail left alone is in the base, only the tail's can be
        // missing from it; otherwise (a file of another log length) every id is looked at,
        // as the store looks at them.
        let mut new: Vec<EntryId> = match kept == self.unchanged_live {
            true => self.changed.iter().filter(|(_, c)| matches!(c, Change::Put(_))).map(|(&id, _)| id).collect(),
            false => {
                let end = self.changed.keys().map(|&id| u64::from(id) + 1).max().unwrap_or(0);
                (0..end.max(self.view.head.layout.next_id) as EntryId).collect()
            }
        };
        crate::sort::sort(&mut new);
        let log = LogFile::open_read_only(&self.view.dir.join(LOG_NAME))?;
        let caught = catch_up_over(&mut r, &log, Sizes::delta(room), &new, |id| self.place(id).map(|p| (p.0, p.1)))?;
        self.view.take_fault()?;
        if !caught {
            return Ok(false);
        }
        let ask = Ask { query, limit, archived, tags: None, rarest: false, cold: true };
        let mut live = TailLive { tail: self, archived };
        rank_two(&mut r.base, &r.index, &mut live, true, cold, &ask, out)?;
        out.sort();
        self.view.take_fault().map(|_| true)
    }

    /// `store.fts` and its header, if the store opened whole would take it as its base: of
    /// this log, at a length within its whole records (the checkpoint's, or another, before or
    /// after it: its documents are then checked against the entries as the store checks them),
    /// the same bytes before it, sizes this capacity holds. Read errors are said by the store.
    fn fts_file(&self) -> Result<Option<(File, FtsHeader)>> {
        let v = &self.view;
        let Ok(file) = File::open(v.dir.join(RECALL_FILE_NAME)) else { return Ok(None) };
        let mut raw = [0u8; FTS_HEADER_BYTES];
        if file.read_exact_at(&mut raw, 0).is_err() {
            return Ok(None);
        }
        let Ok(h) = FtsHeader::parse(&raw) else { return Ok(None) };
        let max_terms = (v.cap * TEXT_TERMS_PER_ENTRY).max(TEXT_MIN_TERMS);
        if h.store != v.head.store
            || h.docs as usize > room_for(v.cap)
            || h.terms as usize > max_terms
            || h.covered > self.good_end
            || h.covered < v.head.header_bytes
        {
            return Ok(None);
        }
        let start = h.covered.saturating_sub(TAIL_BYTES);
        let mut before = [0u8; TAIL_BYTES as usize];
        let before = before.get_mut(..(h.covered - start) as usize).unwrap_or(&mut []);
        let log = File::open(v.dir.join(LOG_NAME)).map_err(|e| err!(Io, "opening {} failed: {}", LOG_NAME, e))?;
        if log.read_exact_at(before, start).is_err() || crc32(before) != h.tail {
            return Ok(None);
        }
        Ok(Some((file, h)))
    }

    /// Says the warning replay gives for the torn tail ignored, if any (once).
    pub fn say_warning(&mut self) {
        if let Some(w) = self.warning.take() {
            w.print_warning();
        }
    }
}

/// [`Live`] for the checkpoint with the tail laid over it, with a query's filter.
struct TailLive<'a> {
    tail: &'a mut TailView,
    archived: Archived,
}

impl Live for TailLive<'_> {
    fn admits(&self, id: EntryId) -> bool {
        self.tail.place(id).is_some_and(|p| self.archived.admits(p.2))
    }

    fn holds(&mut self, key: &Key) -> Result<bool> {
        self.tail.find(key).map(|id| id.is_some())
    }
}

/// Replay's warning for `bytes` ignored at the end of the log at `path` (a read-only open
/// leaves them as they are).
fn torn_tail_warning(path: &Path, bytes: u64, whole_bad: bool, why: Option<Error>) -> Error {
    if whole_bad {
        let why = why.map(|e| e.message());
        err!(
            Io,
            "{}: ignored {} bytes at the end that hold a damaged record{}{} (opened read-only, so left as \
             they are; the agent drops them as a torn tail at its next start)",
            path.display(),
            bytes,
            if why.is_some() { ": " } else { "" },
            why.as_deref().unwrap_or("")
        )
    } else {
        err!(
            Io,
            "{}: ignored {} bytes at the end that are not a whole record yet (opened read-only; \
             a running agent may be writing them)",
            path.display(),
            bytes
        )
    }
}

/// The checkpoint read in place: covering the log exactly, or with the log's tail laid over
/// it ([`TailView`]).
// One per command, made once and never moved in a loop: a box would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum InPlace {
    /// `store.ckpt` covers all of `store.log`.
    Exact(StoreView),
    /// It covers its first bytes, the rest laid over it.
    Tail(TailView),
}

impl InPlace {
    /// The checkpoint of the store in `dir` read in place, with the log's tail laid over it
    /// when it has one (the log and the checkpoint opened once for both); `None` when the
    /// store is to be opened whole.
    pub fn open(dir: &Path, capacity: usize) -> Result<Option<InPlace>> {
        let Some((view, logf, len)) = StoreView::open_covering(dir, capacity, STORE_VIEW_TAIL_MAX_BYTES)? else {
            return Ok(None);
        };
        if len == view.head.covered {
            return Ok(Some(InPlace::Exact(view)));
        }
        Ok(TailView::over(view, &logf, len, STORE_VIEW_TAIL_MAX_ENTRIES)?.map(InPlace::Tail))
    }

    /// [`StoreView::rank`] or [`TailView::rank`].
    pub fn rank(
        &mut self,
        query: &str,
        limit: usize,
        archived: Archived,
        cold: &mut ColdRecall,
        out: &mut Ranked,
    ) -> Result<bool> {
        match self {
            InPlace::Exact(v) => v.rank(query, limit, archived, cold, out),
            InPlace::Tail(t) => t.rank(query, limit, archived, cold, out),
        }
    }

    /// [`StoreView::info`] or [`TailView::info`].
    pub fn info(&self, id: EntryId) -> Result<Option<EntryInfo>> {
        match self {
            InPlace::Exact(v) => v.info(id),
            InPlace::Tail(t) => t.info(id),
        }
    }

    /// Says the warning replay gives for a torn tail ignored, if any (once).
    pub fn say_warning(&mut self) {
        if let InPlace::Tail(t) = self {
            t.say_warning();
        }
    }

    /// The hashes (FNV-1a, 64 bits) of every live entry's key, pushed onto `out`: what
    /// `memory stats` leaves out of its count of the cold store (`cold::keys::current`).
    pub fn live_key_hashes(&self, out: &mut Vec<u64>) -> Result<()> {
        let end = match self {
            InPlace::Exact(v) => v.head.layout.next_id,
            InPlace::Tail(t) => t.end_id,
        };
        out.reserve(self.len());
        for id in 0..end {
            let Ok(id) = EntryId::try_from(id) else { break };
            if let Some(k) = self.key(id)? {
                out.push(crate::memory::hash::fnv1a64(k.as_str().as_bytes()));
            }
        }
        Ok(())
    }

    /// Live entries (archived included), as the store opened whole counts them.
    pub fn len(&self) -> usize {
        match self {
            InPlace::Exact(v) => v.len(),
            InPlace::Tail(t) => t.len(),
        }
    }

    /// Whether no entry is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The log's length as the store opened whole gives it.
    pub fn log_bytes(&self) -> u64 {
        match self {
            InPlace::Exact(v) => v.log_bytes(),
            InPlace::Tail(t) => t.log_bytes(),
        }
    }

    /// [`StoreView::query`] or [`TailView::query`].
    pub fn query(&mut self, q: &Query, out: &mut Results) -> Result<()> {
        match self {
            InPlace::Exact(v) => v.query(q, out),
            InPlace::Tail(t) => t.query(q, out),
        }
    }

    /// [`StoreView::find`] or [`TailView::find`].
    pub fn find(&mut self, key: &Key) -> Result<Option<EntryId>> {
        match self {
            InPlace::Exact(v) => v.find(key),
            InPlace::Tail(t) => t.find(key),
        }
    }

    /// [`StoreView::value_of`] or [`TailView::value_of`].
    pub fn value_of(&mut self, key: &Key, out: &mut String) -> Result<bool> {
        match self {
            InPlace::Exact(v) => v.value_of(key, out),
            InPlace::Tail(t) => t.value_of(key, out),
        }
    }

    /// [`StoreView::key`] or [`TailView::key`].
    pub fn key(&self, id: EntryId) -> Result<Option<Key>> {
        match self {
            InPlace::Exact(v) => v.key(id),
            InPlace::Tail(t) => t.key(id),
        }
    }

    /// [`StoreView::stats`] or [`TailView::stats`]; `None` when the store is to be opened
    /// whole for them.
    pub fn stats(&mut self) -> Result<Option<Stats>> {
        match self {
            InPlace::Exact(v) => v.stats().map(Some),
            InPlace::Tail(t) => t.stats(),
        }
    }
}
