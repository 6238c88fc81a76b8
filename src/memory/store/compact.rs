//! Compaction: the live entries and links written to a new log beside the old one, in
//! creation order with ids renumbered densely from 0, synced, and renamed over the old log
//! (the atomic-rename discipline of `memory::atomic`); then the new log is read back, which
//! verifies it and rebuilds the index, and a checkpoint of it is written.
//!
//! Superseded `put`s, `touch` and `del` records are garbage; compaction runs when garbage
//! passes `STORE_COMPACT_GARBAGE_PERCENT` of the log (and `STORE_COMPACT_MIN_GARBAGE_BYTES`),
//! when the ids run out (deleted entries' ids come back), and once to upgrade a version 1 log.
//!
//! A crash at any moment leaves either the old log (and at worst a temp file, removed at the
//! next open by the writer) or the new one.

use super::{checkpoint, read_record_value, EntryId, Store, LOG_NAME};
use crate::error::Result;
use crate::fixed::FixedBuf;
use crate::memory::atomic::sync_dir;
use crate::memory::log::{self, PutHead};
use std::fs::{self, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

fn temp_path(dir: &Path) -> PathBuf {
    dir.join(format!(".{}.compact", LOG_NAME))
}

/// Removes a temp file a crash left (the writer only).
pub(super) fn remove_temp(dir: &Path) {
    let _ = fs::remove_file(temp_path(dir));
}

impl Store {
    /// Rewrites the log with only live state (see the module documentation); returns the
    /// bytes before and after.
    pub fn compact(&mut self) -> Result<(u64, u64)> {
        self.compact_ordered(None)
    }

    /// Compacts with the entries in `order` (old ids; all live ones, each once) or, without
    /// it, in id order.
    pub(super) fn compact_ordered(&mut self, order: Option<&[EntryId]>) -> Result<(u64, u64)> {
        self.log.check_writable().map_err(|e| e.context(format_args!("compaction")))?;
        if self.log.in_batch() {
            bail!(PersistFailed, "{}: no compaction inside a batch", self.log.path.display());
        }
        // Access statistics counted in RAM go into the new log's `put` records.
        let before = self.log.len;
        // A checkpoint being synced names the old log: never put in place.
        self.checkpoint_sync_drop();
        // A full-text index in use is built again for the new log (its ids and offsets).
        let recall_was_ready = self.recall_is_ready();
        let tmp = temp_path(&self.dir);
        remove_temp(&self.dir);
        if let Err(e) = self.write_compacted(&tmp, order) {
            remove_temp(&self.dir);
            return Err(e);
        }
        // The checkpoint names the old log: gone before the log is replaced, so a crash
        // between the two never pairs them.
        checkpoint::remove(&self.dir);
        if let Err(e) = fs::rename(&tmp, &self.log.path) {
            remove_temp(&self.dir);
            bail!(
                PersistFailed,
                "renaming the compacted log over {} failed ({}); the old log is intact",
                self.log.path.display(),
                e
            );
        }
        // In id order the full-text index follows: its documents take the new ids, and are
        // written to a new store.fts with the new records' places (its old file names the
        // old log). In another order it is rebuilt.
        let follow = if order.is_none() { self.recall_take_for_compaction() } else { None };
        // From here the new log is in place: read it back (verifying it) or refuse writes.
        // The new log has no checkpoint yet (one is written below): read it whole, quietly.
        self.whole_log = true;
        let res = sync_dir(&self.dir).and_then(|_| self.reload());
        self.whole_log = false;
        if let Err(e) = res {
            self.log.poison();
            return Err(e);
        }
        let res = match follow {
            Some(r) => self.recall_follow_compaction(r),
            None if recall_was_ready => {
                self.recall_discard_file();
                self.recall_ready()
            }
            None => Ok(()),
        };
        if let Err(e) = res {
            e.print_warning();
        }
        self.checkpoint_quietly();
        Ok((before, self.log.len))
    }

    fn write_compacted(&mut self, tmp: &Path, order: Option<&[EntryId]>) -> Result<()> {
        // Created exclusively: never through a link planted at the temp name.
        let out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(tmp)
            .map_err(|e| err!(PersistFailed, "creating {} failed: {}", tmp.display(), e))?;
        // New ids: the position in `order` (or among live ids). Links need the old-to-new
        // map; it is built only when there are links (a one-off allocation of 4 bytes per id).
        let mut new_id: Vec<u32> = Vec::new();
        if !self.links.is_empty() {
            new_id = vec![u32::MAX; self.slots.next_id()];
        }
        let mut at = 0u64;
        let flush = |buf: &mut FixedBuf, at: &mut u64| -> Result<()> {
            out.write_all_at(buf.as_slice(), *at)
                .map_err(|e| err!(PersistFailed, "writing {} failed: {}", tmp.display(), e))?;
            *at += buf.len() as u64;
            buf.clear();
            Ok(())
        };
        let mut wbuf = core::mem::replace(&mut self.wbuf, FixedBuf::with_capacity("", 0));
        let mut value = core::mem::take(&mut self.vbuf);
        let res = (|| {
            wbuf.clear();
            log::encode_header(&mut wbuf, super::new_store_id())?;
            let mut next = 0u32;
            let live: &mut dyn Iterator<Item = EntryId> = match order {
                Some(o) => &mut o.iter().copied(),
                None => &mut self.slots.ids(),
            };
            for old in live {
                let Some(s) = self.slots.get(old) else { continue };
                value.clear();
                read_record_value(&self.log, &mut self.rbuf, s.offset, s.len, old, &mut value)?;
                let head = PutHead {
                    id: next,
                    ver: s.ver,
                    created: u64::from(s.created),
                    accessed: u64::from(s.accessed),
                    hits: u64::from(s.hits),
                    archived: s.archived,
                };
                if wbuf.remaining() < s.len as usize + 1024 {
                    flush(&mut wbuf, &mut at)?;
                }
                let names = self.slots.tag_ids(old).iter().map(|&t| self.tags.name(t));
                log::encode_put(&mut wbuf, &head, names, &value)?;
                if let Some(n) = new_id.get_mut(old as usize) {
                    *n = next;
                }
                next += 1;
            }
            for &(a, b) in self.links.pairs() {
                let (Some(&na), Some(&nb)) = (new_id.get(a as usize), new_id.get(b as usize)) else { continue };
                if na == u32::MAX || nb == u32::MAX {
                    continue;
                }
                if wbuf.remaining() < 64 {
                    flush(&mut wbuf, &mut at)?;
                }
                log::encode_link(&mut wbuf, na.min(nb), na.max(nb), true)?;
            }
            flush(&mut wbuf, &mut at)?;
            out.sync_all().map_err(|e| err!(PersistFailed, "syncing {} failed: {}", tmp.display(), e))
        })();
        self.wbuf = wbuf;
        self.vbuf = value;
        res
    }
}
