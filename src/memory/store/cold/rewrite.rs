//! The cold store's rewrites: `memory restore` (an entry back into the live store, its links
//! made again), the drop of a key's copies (`delete`, `retag`, `restore`), and the compaction
//! that keeps each key's newest copy only. Each is a new file beside `store.cold`, synced,
//! renamed over it, the directory synced; the cold text index is built again from it.

use super::{self as cold, ColdFile};
use crate::error::Result;
use crate::limits::STORE_MAX_LINKS;
use crate::memory::key::Key;
use crate::memory::log::PutHead;
use crate::memory::store::{EntryId, Store};

impl Store {
    /// `memory restore`: puts the newest cold copy of `key` back into the live store with its
    /// tags, value and statistics (version + 1), synced, then rewrites the cold store without
    /// any copy of the key. When the live store holds the key already, its value is the
    /// current one (see [`cold`]): the cold copies are older values, and are only dropped.
    /// `NOT_FOUND` when the cold store has no copy; `CAPACITY_EXCEEDED` when the live store is
    /// full.
    pub fn restore(&mut self, key: &Key) -> Result<Restored> {
        self.log.check_writable()?;
        let Some((head, value)) = cold::newest(&self.dir, key)? else {
            bail!(NotFound, "no entry \"{}\" in the cold store ({})", key, self.dir.join(cold::COLD_NAME).display())
        };
        if let Some(id) = self.find(key) {
            let twin = self.slots.get(id).is_some_and(|s| u64::from(s.created) == head.created);
            let dropped = self.drop_cold_copies(key)?;
            return Ok(if twin { Restored::Back(id) } else { Restored::LiveAlready { dropped } });
        }
        if self.slots.live() >= self.cap {
            bail!(
                CapacityExceeded,
                "the live store is full ({} entries, memory.store_capacity); make room first (lkjagent memory cleanup) \
                 or raise memory.store_capacity",
                self.slots.live()
            );
        }
        // Live first (synced), then the cold store without it: a crash between leaves it in both,
        // the live copy current.
        let head = PutHead { ver: head.ver.saturating_add(1), ..head };
        let id = self.create_with(key, &value, &head)?.id;
        self.relink_from_cold(key, id)?;
        self.drop_cold_copies(key)?;
        Ok(Restored::Back(id))
    }

    /// The links the cold store keeps for `key` (now live as `id`) whose other entry is live,
    /// made again in the live store (those to entries still cold stay in the cold store until
    /// those come back too). Returns how many.
    fn relink_from_cold(&mut self, key: &Key, id: EntryId) -> Result<usize> {
        let mut partners: Vec<Key> = Vec::new();
        cold::scan_links(&self.dir, &mut |a, b| {
            if a == key {
                partners.push(*b);
            } else if b == key {
                partners.push(*a);
            }
            Ok(())
        })?;
        let mut n = 0;
        for other in partners {
            let Some(o) = self.find(&other) else { continue };
            if o != id && !self.links.contains(id, o) && self.links.len() < STORE_MAX_LINKS {
                self.link(id, o)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Rewrites the cold store without any copy of `key` (none there: nothing is written);
    /// returns how many it held. The writer only.
    pub(in crate::memory::store) fn drop_cold_copies(&mut self, key: &Key) -> Result<u64> {
        self.log.check_writable()?;
        let mut copies = 0u64;
        cold::scan(&self.dir, &mut |e| {
            copies += u64::from(e.key == *key);
            Ok(true)
        })?;
        if copies == 0 {
            return Ok(0);
        }
        // The append handle would point at the file the rename replaces: opened again after.
        self.upkeep.cold = None;
        let dropped = cold::rewrite_without(&self.dir, &mut |e| e.key == *key);
        // Whatever happened to the file, its text index is built again from it.
        self.cold_recall_reset();
        let dropped = dropped?;
        self.repair_cold()?;
        Ok(dropped)
    }

    /// Compacts the cold store: rewrites it with only its current entries (each key's newest
    /// copy, none whose key the live store holds; see [`super`]), so that what restores,
    /// deletes, saves of cold keys and crashes left behind goes. Crash-safe as every rewrite
    /// (temp file, sync, rename, sync of the directory): a kill leaves the old file or the new
    /// one, and every current entry is in both. Its text index is built again from it.
    /// Returns the file's size before and after; nothing is written when every copy is
    /// current. The writer only.
    pub fn compact_cold(&mut self) -> Result<(u64, u64)> {
        self.log.check_writable()?;
        let path = self.dir.join(cold::COLD_NAME);
        let before = match std::fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((0, 0)),
            Err(e) => bail!(Io, "reading the size of {} failed: {}", path.display(), e),
        };
        // The current copies, by where they start (in the file's order: sorted).
        let mut current = Vec::new();
        // Copies written by a clean-up carry their live id, which the rewrite drops (a few
        // bytes each).
        let mut ids = false;
        let st = cold::scan_current(&self.dir, &|k| self.find(k).is_some(), &mut |e| {
            current.push(e.at);
            ids |= e.head.id != 0;
            Ok(true)
        })?;
        // A file of an older format is rewritten whole in the current one (shorter records).
        let old_format = cold::format_of(&self.dir)? != Some(crate::memory::log::COLD_FORMAT_VERSION);
        if st.entries == current.len() as u64 && st.damaged == 0 && !ids && !old_format {
            return Ok((before, before));
        }
        self.upkeep.cold = None;
        crate::sort::sort(&mut current);
        let res = cold::rewrite_without(&self.dir, &mut |e| current.binary_search(&e.at).is_err());
        self.cold_recall_reset();
        res?;
        self.repair_cold()?;
        let after = std::fs::metadata(&path).map_or(0, |m| m.len());
        Ok((before, after))
    }

    /// Opens the cold store for appending when it exists, which drops a group a crash cut
    /// short (the writer, at its open).
    pub(in crate::memory::store) fn repair_cold(&mut self) -> Result<()> {
        if self.upkeep.cold.is_none() && self.dir.join(cold::COLD_NAME).exists() {
            // Each cold id's key noted on the way, for the cold text index's first opening.
            let mut keys = core::mem::take(&mut self.cold_recall.open_keys);
            keys.clear();
            let cold = ColdFile::open_noting(&self.dir, &mut self.rbuf, Some(&mut keys))?;
            self.cold_recall.open_keys_end = cold.len();
            self.cold_recall.open_keys = keys;
            self.upkeep.cold = Some(cold);
        }
        Ok(())
    }

    /// Whether the cold store holds a copy of `key` (a scan).
    pub(in crate::memory::store) fn in_cold(&self, key: &Key) -> Result<bool> {
        let mut found = false;
        cold::scan(&self.dir, &mut |e| {
            found = e.key == *key;
            Ok(!found)
        })?;
        Ok(found)
    }
}

/// What [`Store::restore`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restored {
    /// The entry is live again (or was, after a crash between the two files' syncs).
    Back(EntryId),
    /// The live store holds the key with a newer value; this many older cold copies were
    /// dropped.
    LiveAlready {
        /// Cold copies dropped.
        dropped: u64,
    },
}
