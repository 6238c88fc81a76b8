//! The changes: create, replace, retag, archive, delete, link, access statistics, clean-up and
//! batches. Each encodes one record into the write buffer, appends it (see [`super::append`])
//! and only then changes the index.

use super::slots::{clamp32, key_hash, unpadded, Slot, TagSet};
use super::{check_value, over_garbage_threshold, Change, Cleanup, EntryId, Put, Store, LINK_RECORD_BYTES};
use crate::error::Result;
use crate::limits::KEY_MAX_TAGS;
use crate::memory::key::Key;
use crate::memory::log::{self, PutHead};
use crate::memory::query::{Hit, Results};

/// What [`Store::delete`] deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deleted {
    /// The live entry, if there was one.
    pub live: Option<EntryId>,
    /// Copies dropped from the cold store.
    pub cold: u64,
}

impl Store {
    /// `storage_save`: stores `value` under exactly `key`, creating the entry or replacing its
    /// value (version + 1). Storing the value an entry already holds writes nothing
    /// ([`Change::Unchanged`]): that is the content de-duplication.
    pub fn put(&mut self, key: &Key, value: &str, now: u64) -> Result<Put> {
        match self.find(key) {
            Some(id) => self.replace(id, value, None, now),
            None => self.create(key, value, now),
        }
    }

    /// `record_update`: replaces the value of the existing entry `key`. With
    /// `expected_version`, a different current version is `VERSION_CONFLICT` (someone else
    /// changed it since it was read). A missing entry is `NOT_FOUND`.
    pub fn update(&mut self, key: &Key, value: &str, expected_version: Option<u32>, now: u64) -> Result<Put> {
        let Some(id) = self.find(key) else { bail!(NotFound, "no store entry with tags \"{}\" to update", key) };
        self.replace(id, value, expected_version, now)
    }

    /// Deletes the entry `key` (and its links) for good, wherever its copies are: the cold
    /// store's first (rewritten without them), then the live entry, so that a crash in
    /// between leaves the live value current and no older one can come back. `NOT_FOUND` if
    /// neither holds it.
    pub fn delete(&mut self, key: &Key) -> Result<Deleted> {
        self.log.check_writable()?;
        let cold = self.drop_cold_copies(key)?;
        let live = match self.find(key) {
            Some(id) => {
                self.delete_id(id)?;
                self.compact_if_needed();
                Some(id)
            }
            None if cold > 0 => None,
            None => bail!(NotFound, "no store entry with tags \"{}\" to delete, live or cold", key),
        };
        Ok(Deleted { live, cold })
    }

    /// Adds `tags` to the entry `key`; returns its new key. `KEY_INVALID` when that makes more
    /// than 8 tags or another entry already has the resulting tags.
    pub fn add_tags(&mut self, key: &Key, tags: &Key, now: u64) -> Result<Key> {
        let new_key = key.union(tags)?;
        self.retag(key, &new_key, now)
    }

    /// Removes `tags` from the entry `key`; returns its new key. `KEY_INVALID` when no tag
    /// would be left or another entry already has the resulting tags.
    pub fn remove_tags(&mut self, key: &Key, tags: &Key, now: u64) -> Result<Key> {
        let new_key = key.difference(tags)?;
        self.retag(key, &new_key, now)
    }

    /// Archives (`true`) or retrieves (`false`) the entry `key`. Archived entries stay on disk
    /// and are left out of default query results.
    pub fn set_archived(&mut self, key: &Key, archived: bool, now: u64) -> Result<EntryId> {
        let Some(id) = self.find(key) else { bail!(NotFound, "no store entry with tags \"{}\"", key) };
        self.set_archived_id(id, archived, now)?;
        Ok(id)
    }

    /// Links two entries as related (symmetric; linking twice is a no-op).
    pub fn link(&mut self, a: EntryId, b: EntryId) -> Result<()> {
        for id in [a, b] {
            if !self.contains(id) {
                bail!(NotFound, "no store entry with id {} to link", id);
            }
        }
        if a == b {
            bail!(KeyInvalid, "an entry cannot be linked to itself (id {})", a);
        }
        if self.links.contains(a, b) {
            return Ok(());
        }
        if self.links.len() >= crate::limits::STORE_MAX_LINKS {
            return self.links.add(a, b); // the full-table error, before anything is written
        }
        self.wbuf.clear();
        log::encode_link(&mut self.wbuf, a.min(b), a.max(b), true)?;
        self.log.append(self.wbuf.as_slice())?;
        self.links.add(a, b)?;
        self.live_bytes += LINK_RECORD_BYTES;
        Ok(())
    }

    /// Removes the link between two entries, if any.
    pub fn unlink(&mut self, a: EntryId, b: EntryId) -> Result<()> {
        if !self.links.contains(a, b) {
            return Ok(());
        }
        self.wbuf.clear();
        log::encode_link(&mut self.wbuf, a.min(b), a.max(b), false)?;
        self.log.append(self.wbuf.as_slice())?;
        if self.links.remove(a, b) {
            self.live_bytes = self.live_bytes.saturating_sub(LINK_RECORD_BYTES);
        }
        Ok(())
    }

    /// Whether `a` and `b` are linked.
    pub fn linked(&self, a: EntryId, b: EntryId) -> bool {
        self.links.contains(a, b)
    }

    /// The entries related to `id`, in link order.
    pub fn related(&self, id: EntryId, out: &mut Results) {
        out.clear();
        let limit = out.limit(crate::limits::STORE_QUERY_MAX_RESULTS);
        for other in self.links.of(id) {
            if let Some(s) = self.slots.get(other) {
                let hit = Hit { id: other, relevance_ppm: 0, created: u64::from(s.created), hits: u64::from(s.hits) };
                out.push(hit, limit);
            }
        }
    }

    /// Persists the access statistics counted by [`Store::touch`] since the last flush, as
    /// small `touch` records (one sync for all of them), then takes a checkpoint or compacts
    /// when due. Call once per cycle.
    pub fn flush_access(&mut self) -> Result<usize> {
        self.count_cycle();
        let n = self.flush_access_only()?;
        // A checkpoint synced beside the cycles is put in place once its sync is done.
        if let Err(e) = self.checkpoint_sync_step(false) {
            e.context(format_args!("the store's checkpoint was not written (the next open reads more log)"))
                .print_warning();
        }
        // A merge started at an earlier checkpoint goes on a step (this one's starts at the
        // next cycle).
        self.merge_step();
        self.checkpoint_if_due();
        self.compact_if_needed();
        Ok(n)
    }

    /// [`Store::flush_access`] without the checkpoint and compaction.
    pub(super) fn flush_access_only(&mut self) -> Result<usize> {
        if !self.slots.any_dirty() {
            return Ok(0);
        }
        if let Some(list) = self.slots.dirty_list() {
            // Few touched entries (the usual cycle): one record each, one append and sync,
            // without reading the table. The list fits the write buffer many times over.
            self.wbuf.clear();
            let mut n = 0;
            for &id in list {
                let Some(s) = self.slots.get(id).filter(|s| s.dirty) else { continue };
                log::encode_touch(&mut self.wbuf, id, u64::from(s.accessed), u64::from(s.hits))?;
                n += 1;
            }
            if n > 0 {
                self.log.append(self.wbuf.as_slice())?;
            }
            self.slots.flushed();
            return Ok(n);
        }
        let mut written = 0;
        let mut pending = 0;
        let mut first_pending = 0usize;
        self.wbuf.clear();
        let mut from = 0usize;
        while let Some(id) = self.slots.next_dirty(from) {
            from = id as usize + 1;
            let Some(s) = self.slots.get(id) else { continue };
            if self.wbuf.remaining() < 128 {
                self.log.append(self.wbuf.as_slice())?;
                self.clean_range(first_pending, id as usize);
                written += pending;
                pending = 0;
                first_pending = id as usize;
                self.wbuf.clear();
            }
            log::encode_touch(&mut self.wbuf, id, u64::from(s.accessed), u64::from(s.hits))?;
            pending += 1;
        }
        if pending > 0 {
            self.log.append(self.wbuf.as_slice())?;
            self.clean_range(first_pending, self.slots.next_id());
            written += pending;
        }
        self.slots.flushed();
        Ok(written)
    }

    /// Clears the dirty flag of ids in `from..to` (their touches are written).
    fn clean_range(&mut self, from: usize, to: usize) {
        let mut at = from;
        while let Some(id) = self.slots.next_dirty(at) {
            if id as usize >= to {
                break;
            }
            self.slots.clean(id);
            at = id as usize + 1;
        }
    }

    /// Archives or deletes every entry last accessed before `cutoff` (Unix seconds); returns
    /// how many. Entries already archived are left alone by [`Cleanup::Archive`].
    pub fn cleanup(&mut self, cutoff: u64, action: Cleanup, now: u64) -> Result<usize> {
        let mut n = 0;
        let end = self.slots.next_id() as EntryId;
        for id in 0..end {
            let Some(s) = self.slots.get(id) else { continue };
            if u64::from(s.accessed) >= cutoff {
                continue;
            }
            match action {
                Cleanup::Delete | Cleanup::Cold => {
                    let filter = super::cleanup::Filter { accessed_before: Some(cutoff), max_hits: None };
                    n += self.cleanup_where(&filter, action)?;
                    break;
                }
                Cleanup::Archive if !s.archived => self.set_archived_id(id, true, now)?,
                Cleanup::Archive => continue,
            }
            n += 1;
        }
        self.compact_if_needed();
        Ok(n)
    }

    /// Starts a batch of `changes` changes (an import: the records it will write): they are
    /// written as they come and synced once, by [`Store::end_batch`]. A crash in between leaves
    /// a clean prefix of the batch, and the next open says how much of it is there. Changes
    /// inside a batch are not durable until `end_batch` returns `Ok`. When the ids of deleted
    /// entries are needed to make room for the batch, the store compacts first.
    pub fn begin_batch(&mut self, changes: u64) -> Result<()> {
        if self.log.in_batch() {
            bail!(PersistFailed, "a batch is already open on {}", self.log.path.display());
        }
        let wanted = self.slots.next_id().saturating_add(usize::try_from(changes).unwrap_or(usize::MAX));
        if wanted > self.slots.room() && self.slots.next_id() > self.slots.live() {
            self.compact()?;
        }
        self.wbuf.clear();
        log::encode_batch(&mut self.wbuf, changes)?;
        self.log.begin_batch();
        if let Err(e) = self.log.append(self.wbuf.as_slice()) {
            self.log.end_batch().ok();
            return Err(e);
        }
        Ok(())
    }

    /// Ends the batch: writes its end record and syncs everything once.
    pub fn end_batch(&mut self) -> Result<()> {
        if !self.log.in_batch() {
            return Ok(());
        }
        self.wbuf.clear();
        let res = log::encode_batch_end(&mut self.wbuf).and_then(|_| self.log.append(self.wbuf.as_slice()).map(|_| ()));
        let synced = self.log.end_batch();
        res.and(synced)?;
        self.checkpoint_if_due();
        self.compact_if_needed();
        Ok(())
    }

    pub(super) fn create(&mut self, key: &Key, value: &str, now: u64) -> Result<Put> {
        let head = PutHead { id: 0, ver: 1, created: now, accessed: now, hits: 0, archived: false };
        self.create_with(key, value, &head)
    }

    /// Creates the entry `key` with the fields of `head` (its id aside): a new entry, or one
    /// restored from the cold store. Makes room first when the capacity policy says so.
    pub(super) fn create_with(&mut self, key: &Key, value: &str, head: &PutHead) -> Result<Put> {
        check_value(value)?;
        self.log.check_writable()?;
        let new_tags = key.tags().filter(|t| self.tags.find(t).is_none()).count();
        self.make_room_if_due(new_tags)?;
        if self.slots.live() >= self.cap {
            let why = match self.upkeep.policy {
                Some(p) if p.enable => {
                    "and a clean-up found nothing it may take (entries used in the last memory.cleanup.keep_cycles \
                     cycles, and the task's own entries, stay); raise memory.store_capacity or lower \
                     memory.cleanup.keep_cycles"
                }
                Some(_) => {
                    "and memory.cleanup is off; set memory.cleanup.enable to true, or raise memory.store_capacity"
                }
                None => "; make room with 'lkjagent memory cleanup' or raise memory.store_capacity",
            };
            bail!(
                CapacityExceeded,
                "the store is full: {} of {} entries (memory.store_capacity) {}",
                self.slots.live(),
                self.cap,
                why
            );
        }
        if self.slots.next_id() >= self.slots.room() && !self.log.in_batch() {
            // The ids of deleted entries come back at compaction (a batch makes room for the
            // entries it announced before it starts).
            self.compact()?;
        }
        let id = self.slots.next_id() as EntryId;
        if id as usize >= self.slots.room() {
            bail!(
                CapacityExceeded,
                "the store has no free entry id ({} ids; a batch creates at most the entries it announced)",
                self.slots.room()
            );
        }
        let set = self.intern_all(key)?;
        let head = PutHead { id, ..*head };
        self.wbuf.clear();
        let written = log::encode_put(&mut self.wbuf, &head, key.tags(), value)
            .and_then(|_| self.log.append(self.wbuf.as_slice()));
        let at = self.written_or_forget(written, &set)?;
        let slot = Slot {
            offset: at,
            len: self.wbuf.len() as u32,
            archived: head.archived,
            dirty: false,
            created: clamp32(head.created),
            accessed: clamp32(head.accessed),
            hits: clamp32(head.hits),
            ver: head.ver,
        };
        self.install(id, &slot, &set)?;
        self.recall_sync(id);
        // A cold copy of the key is no longer current (the live entry supersedes it).
        self.cold_recall_forget(key);
        self.after_write();
        Ok(Put { id, version: head.ver, change: Change::Created })
    }

    fn replace(&mut self, id: EntryId, value: &str, expected: Option<u32>, now: u64) -> Result<Put> {
        check_value(value)?;
        let Some(s) = self.slots.get(id) else { bail!(NotFound, "no store entry with id {}", id) };
        if let Some(v) = expected {
            if v != s.ver {
                let key = self.key(id);
                bail!(
                    VersionConflict,
                    "entry \"{}\" is at version {}, not {}: it changed since it was read; load it again",
                    key.as_ref().map_or("?", |k| k.as_str()),
                    s.ver,
                    v
                );
            }
        }
        self.read_value(id)?;
        if self.vbuf == value {
            return Ok(Put { id, version: s.ver, change: Change::Unchanged });
        }
        let ver = next_version(s.ver, id)?;
        let head = PutHead {
            id,
            ver,
            created: u64::from(s.created),
            accessed: now,
            hits: u64::from(s.hits),
            archived: s.archived,
        };
        self.write_put(id, &head, value)?;
        self.after_write();
        Ok(Put { id, version: ver, change: Change::Updated })
    }

    /// Writes a `put` for live entry `id` with `head` and `value` (its tags unchanged) and
    /// points the slot at it.
    fn write_put(&mut self, id: EntryId, head: &PutHead, value: &str) -> Result<()> {
        let Some(old) = self.slots.get(id) else { bail!(NotFound, "no store entry with id {}", id) };
        self.wbuf.clear();
        let names = self.slots.tag_ids(id).iter().map(|&t| self.tags.name(t));
        log::encode_put(&mut self.wbuf, head, names, value)?;
        let at = self.log.append(self.wbuf.as_slice())?;
        let len = self.wbuf.len() as u32;
        self.live_bytes = self.live_bytes.saturating_sub(u64::from(old.len)) + u64::from(len);
        if old.archived != head.archived {
            for &t in self.slots.tag_ids(id) {
                self.tags.set_archived(t, head.archived);
            }
        }
        let slot = Slot {
            offset: at,
            len,
            archived: head.archived,
            // The put carries the access statistics: nothing left to flush for this entry.
            dirty: false,
            created: old.created,
            accessed: clamp32(head.accessed),
            hits: clamp32(head.hits),
            ver: head.ver,
        };
        self.slots.set(id, &slot, None)?;
        self.recall_sync(id);
        Ok(())
    }

    fn set_archived_id(&mut self, id: EntryId, archived: bool, now: u64) -> Result<()> {
        let Some(s) = self.slots.get(id) else { bail!(NotFound, "no store entry with id {}", id) };
        if s.archived == archived {
            return Ok(());
        }
        self.read_value(id)?;
        let value = core::mem::take(&mut self.vbuf);
        let res = next_version(s.ver, id).and_then(|ver| {
            let head =
                PutHead { id, ver, created: u64::from(s.created), accessed: now, hits: u64::from(s.hits), archived };
            self.write_put(id, &head, &value)
        });
        self.vbuf = value;
        res?;
        self.after_write();
        Ok(())
    }

    /// Gives the entry `key` the tags of `new_key` (one record); returns the new key.
    /// `KEY_INVALID` when another entry has them already.
    /// Cold copies of `key` (older values the live entry superseded) are dropped first, so
    /// that none shows under the old key afterwards; a key held only in the cold store is
    /// `NOT_FOUND` (restore it first), and a `new_key` the cold store holds is `KEY_INVALID`.
    pub fn retag(&mut self, key: &Key, new_key: &Key, now: u64) -> Result<Key> {
        let Some(id) = self.find(key) else {
            if self.in_cold(key)? {
                bail!(
                    NotFound,
                    "\"{}\" is in the cold store only; bring it back first (lkjagent memory restore {})",
                    key,
                    key
                );
            }
            bail!(NotFound, "no store entry with tags \"{}\"", key)
        };
        if new_key == key {
            return Ok(*new_key);
        }
        if self.find(new_key).is_some() {
            bail!(KeyInvalid, "cannot change tags of \"{}\": an entry with tags \"{}\" exists already", key, new_key);
        }
        if self.in_cold(new_key)? {
            bail!(
                KeyInvalid,
                "cannot change tags of \"{}\": the cold store holds an entry with tags \"{}\" (lkjagent memory \
                 restore or delete it first)",
                key,
                new_key
            );
        }
        self.drop_cold_copies(key)?;
        let Some(old) = self.slots.get(id) else { bail!(NotFound, "no store entry with id {}", id) };
        let ver = next_version(old.ver, id)?;
        let set = self.intern_all(new_key)?;
        let written = self.read_value(id).and_then(|_| {
            let head = PutHead {
                id,
                ver,
                created: u64::from(old.created),
                accessed: now,
                hits: u64::from(old.hits),
                archived: old.archived,
            };
            self.wbuf.clear();
            log::encode_put(&mut self.wbuf, &head, new_key.tags(), &self.vbuf)?;
            self.log.append(self.wbuf.as_slice())
        });
        let at = self.written_or_forget(written, &set)?;
        let slot = Slot {
            offset: at,
            len: self.wbuf.len() as u32,
            archived: old.archived,
            dirty: false,
            created: old.created,
            accessed: clamp32(now),
            hits: old.hits,
            ver,
        };
        self.unindex_keeping(id, &set);
        self.install(id, &slot, &set)?;
        self.recall_sync(id);
        self.after_write();
        Ok(*new_key)
    }

    pub(super) fn delete_id(&mut self, id: EntryId) -> Result<()> {
        if !self.slots.is_live(id) {
            bail!(NotFound, "no store entry with id {}", id);
        }
        self.wbuf.clear();
        log::encode_del(&mut self.wbuf, id)?;
        self.log.append(self.wbuf.as_slice())?;
        self.uninstall(id);
        self.recall_sync(id);
        Ok(())
    }

    /// The tag ids of `key`, interning new tags; on error, the new ones are freed again.
    fn intern_all(&mut self, key: &Key) -> Result<TagSet> {
        let mut set = [0u16; KEY_MAX_TAGS];
        for (i, tag) in key.tags().enumerate() {
            match self.tags.intern(tag) {
                Ok(t) => {
                    if let Some(s) = set.get_mut(i) {
                        *s = t;
                    }
                }
                Err(e) => {
                    self.forget_unused(&set);
                    return Err(e);
                }
            }
        }
        Ok(set)
    }

    /// The offset a change was written at; when it was not written, the tags interned for it
    /// are freed again and the error returned.
    fn written_or_forget(&mut self, written: Result<u64>, set: &TagSet) -> Result<u64> {
        if written.is_err() {
            self.forget_unused(set);
        }
        written
    }

    /// Frees the tags of `set` that no entry carries (after a change that was not made).
    fn forget_unused(&mut self, set: &TagSet) {
        for &t in set.iter().filter(|&&t| t != 0) {
            self.tags.forget_if_unused(t);
        }
    }

    /// Puts entry `id` (whose record is written) into the index: slot, key table, posting
    /// lists.
    pub(super) fn install(&mut self, id: EntryId, slot: &Slot, set: &TagSet) -> Result<()> {
        self.install_keyed(id, slot, set, true)
    }

    /// [`Store::install`]; without `key`, the key table is left alone (a checkpoint brings
    /// its own).
    pub(super) fn install_keyed(&mut self, id: EntryId, slot: &Slot, set: &TagSet, key: bool) -> Result<()> {
        self.slots.set(id, slot, Some(set))?;
        let ids = unpadded(set);
        if key {
            self.keys.insert(key_hash(ids), id)?;
        }
        for &t in ids {
            self.tags.add(t, id, slot.archived)?;
        }
        self.live_bytes += u64::from(slot.len);
        Ok(())
    }

    /// Fills the key table from the entry table (after a checkpoint of another capacity).
    pub(super) fn rebuild_keys(&mut self) -> Result<()> {
        self.keys.clear();
        let end = self.slots.next_id() as EntryId;
        for id in 0..end {
            if self.slots.is_live(id) {
                self.keys.insert(key_hash(self.slots.tag_ids(id)), id)?;
            }
        }
        Ok(())
    }

    /// Takes entry `id` out of the index for good (its links too).
    pub(super) fn uninstall(&mut self, id: EntryId) {
        if !self.slots.is_live(id) {
            return;
        }
        let dropped = self.links.remove_entry(id) as u64;
        self.live_bytes = self.live_bytes.saturating_sub(dropped * LINK_RECORD_BYTES);
        self.unindex(id);
    }

    /// Takes entry `id` out of the key table and the posting lists and frees its slot, keeping
    /// its links: it is about to be installed again under the same id (new tags, or a replayed
    /// put).
    pub(super) fn unindex(&mut self, id: EntryId) {
        self.unindex_keeping(id, &[0; KEY_MAX_TAGS]);
    }

    /// [`Store::unindex`], keeping the tags of `keep` interned even if no entry carries them
    /// for a moment (the entry's new tags).
    fn unindex_keeping(&mut self, id: EntryId, keep: &TagSet) {
        let Some(s) = self.slots.get(id) else { return };
        let set = self.slots.tagset(id);
        let ids = unpadded(&set);
        let slots = &self.slots;
        self.keys.remove(key_hash(ids), id, |other| key_hash(slots.tag_ids(other)));
        for &t in ids {
            self.tags.remove(t, id, s.archived, keep.contains(&t));
        }
        self.live_bytes = self.live_bytes.saturating_sub(u64::from(s.len));
        // A dead slot: offset 0.
        let _ = self.slots.set(id, &Slot::default(), None);
    }

    /// After a change: a compaction when due (not inside a batch). Checkpoints are taken by
    /// [`Store::flush_access`], at the end of a batch and at [`Store::close`], when no access
    /// statistics are pending.
    fn after_write(&mut self) {
        self.compact_if_needed();
    }

    /// Whether garbage has passed the compaction threshold.
    pub fn needs_compaction(&self) -> bool {
        over_garbage_threshold(self.garbage(), self.log.len)
    }

    /// Compacts when [`Store::needs_compaction`] (never inside a batch, nor when read-only); a
    /// failure is printed as a warning (the change that triggered it is already durable, and
    /// the old log stays intact).
    pub(super) fn compact_if_needed(&mut self) {
        if self.needs_compaction() && !self.log.read_only() && !self.log.in_batch() {
            if let Err(e) = self.compact() {
                e.print_warning();
            }
        }
    }
}

/// The version after `ver`; an entry at the highest version is refused, never wrapped.
fn next_version(ver: u32, id: EntryId) -> Result<u32> {
    match ver.checked_add(1) {
        Some(v) => Ok(v),
        None => bail!(
            CapacityExceeded,
            "store entry {} is at version {}, the highest there is; delete it and store it again",
            id,
            ver
        ),
    }
}
