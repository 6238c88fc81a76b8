//! The checkpoint with the log's tail laid over it, for the read-only commands other than a
//! ranked search: `status` (the live count and the log's length), `memory query` (the tag
//! tables after the tail, read through [`Tables`] by the same code as the store in RAM),
//! `memory show` (an entry's record) and `memory stats` (the statistics the store opened
//! whole gives). A posting list after the tail is the checkpoint's, read in place, less the
//! entries the tail replaced or removed, with the tail's `put`s carrying the tag; a tag's
//! counts are the checkpoint's directory's with the tail's changes added.

use super::{Change, TailView};
use crate::error::Result;
use crate::limits::KEY_MAX_TAGS;
use crate::memory::key::Key;
use crate::memory::query::{EntryId, Query, Results};
use crate::memory::store::query::{lists_read, run, Tables};
use crate::memory::store::slots::{unpadded, TagSet};
use crate::memory::store::view::record_value;
use crate::memory::store::Stats;

impl TailView {
    /// Live entries after the tail (archived included), as the store opened whole counts them.
    pub fn len(&self) -> usize {
        self.live_now as usize
    }

    /// Whether no entry is live.
    pub fn is_empty(&self) -> bool {
        self.live_now == 0
    }

    /// The log's length as the store opened whole gives it: up to the tail's last whole record.
    pub fn log_bytes(&self) -> u64 {
        self.good_end
    }

    /// Runs `q` as [`crate::memory::store::Store::query`] does over the store opened whole.
    pub fn query(&mut self, q: &Query, out: &mut Results) -> Result<()> {
        out.clear();
        self.count_tags()?;
        self.lists.clear();
        let mut want = [0u16; KEY_MAX_TAGS];
        let n = lists_read(&*self, q, &mut want);
        for &t in crate::bytes::take(&want, n) {
            self.load_list(t)?;
        }
        run(&*self, q, out);
        self.view.take_fault()
    }

    /// The value of the live entry `key` (`memory show`) into `out`; `Ok(false)` when there
    /// is none.
    pub fn value_of(&mut self, key: &Key, out: &mut String) -> Result<bool> {
        let Some(id) = self.find(key)? else { return Ok(false) };
        let Some((offset, len, _)) = self.place(id) else { return self.view.take_fault().map(|_| false) };
        record_value(&self.view.dir, id, offset, len, out).map(|_| true)
    }

    /// The key of live entry `id`.
    pub fn key(&self, id: EntryId) -> Result<Option<Key>> {
        match self.changed.get(&id) {
            Some(Change::Put(p)) => Ok(self.key_of(&p.set)),
            Some(Change::Gone) => Ok(None),
            Some(Change::Access { .. }) | None => self.view.key(id),
        }
    }

    /// The statistics the store opened whole gives (`ram_bytes`: what this view holds);
    /// `None` when the tail may have changed the links (the caller opens the store whole).
    pub fn stats(&mut self) -> Result<Option<Stats>> {
        if self.links_unsure {
            return Ok(None);
        }
        self.count_tags()?;
        let h = self.view.head;
        let mut live_bytes = h.live_bytes;
        for (id, c) in self.changed_in_order() {
            if let (false, Some((_, len, _))) = (matches!(c, Change::Access { .. }), self.view.location(id)) {
                live_bytes = live_bytes.saturating_sub(u64::from(len));
            }
            if let Change::Put(p) = c {
                live_bytes += u64::from(p.len);
            }
        }
        let tags = (1..self.tag_end()).filter(|&t| self.tag_counts(t).0 > 0).count();
        let log_bytes = self.good_end;
        let mut st = Stats {
            capacity: self.view.cap,
            tags,
            max_tags: crate::limits::store_max_tags(self.view.cap),
            links: h.layout.links as usize,
            log_bytes,
            live_bytes: live_bytes.min(log_bytes),
            garbage_bytes: log_bytes.saturating_sub(live_bytes + h.header_bytes),
            corrupt_records: h.corrupt,
            unfinished_tail_bytes: self.unfinished,
            damaged_tail: self.damaged,
            from_checkpoint: true,
            replayed_bytes: log_bytes.saturating_sub(h.covered),
            ..Stats::default()
        };
        crate::memory::store::view::tally_entries(&*self, self.end_id as EntryId, &mut st);
        self.view.take_fault()?;
        if (st.entries as u64, st.archived as u64) != (self.live_now, self.archived_now) {
            bail!(
                Io,
                "the checkpoint is damaged (its columns and the tail list {} entries, its header {})",
                st.entries,
                self.live_now
            );
        }
        st.ram_bytes = self.view.ram_bytes()
            + self.changed.capacity() * (core::mem::size_of::<(EntryId, Change)>() + 1)
            + self.keys.capacity() * (core::mem::size_of::<(TagSet, EntryId)>() + 1)
            + self.new_tags.iter().map(|t| 2 * t.capacity() + 2 * core::mem::size_of::<String>() + 3).sum::<usize>();
        Ok(Some(st))
    }

    /// One past the highest tag id: the checkpoint's, then the tail's new ones.
    fn tag_end(&self) -> u16 {
        u16::try_from(self.view.head.layout.tags + self.new_tags.len()).unwrap_or(u16::MAX)
    }

    /// What the tail changed of each tag's counts (once).
    fn count_tags(&mut self) -> Result<()> {
        if self.tag_delta.is_some() {
            return Ok(());
        }
        let mut delta = vec![(0i64, 0i64); usize::from(self.tag_end())];
        for (id, c) in self.changed_in_order() {
            if let (false, Some((_, _, archived))) = (matches!(c, Change::Access { .. }), self.view.location(id)) {
                for t in self.view.tagset(id).into_iter().filter(|&t| t != 0) {
                    if let Some(d) = delta.get_mut(usize::from(t)) {
                        d.0 -= 1;
                        d.1 -= i64::from(archived);
                    }
                }
            }
            if let Change::Put(p) = c {
                for &t in unpadded(&p.set) {
                    if let Some(d) = delta.get_mut(usize::from(t)) {
                        d.0 += 1;
                        d.1 += i64::from(p.archived);
                    }
                }
            }
        }
        self.view.take_fault()?;
        self.tag_delta = Some(delta);
        Ok(())
    }

    /// Reads the posting list of tag `t` after the tail (ids in increasing order).
    fn load_list(&mut self, t: u16) -> Result<()> {
        if self.lists.iter().any(|(id, _)| *id == t) {
            return Ok(());
        }
        let mut list = Vec::new();
        if usize::from(t) < self.view.head.layout.tags {
            self.view.lists.clear();
            self.view.load_list(t)?;
            list = self.view.lists.pop().map(|(_, l)| l).unwrap_or_default();
            list.retain(|id| matches!(self.changed.get(id), Some(Change::Access { .. }) | None));
        }
        for (&id, c) in &self.changed {
            if let Change::Put(p) = c {
                if p.set.contains(&t) {
                    list.push(id);
                }
            }
        }
        crate::sort::sort(&mut list);
        self.lists.push((t, list));
        Ok(())
    }
}

impl Tables for TailView {
    fn tag(&self, name: &str) -> Option<u16> {
        Tables::tag(&self.view, name).or_else(|| self.new_ids.get(name).copied())
    }

    fn tag_counts(&self, t: u16) -> (u32, u32) {
        let (n, a) = self.view.tag_counts(t);
        let (dn, da) = self.tag_delta.as_ref().and_then(|d| d.get(usize::from(t))).copied().unwrap_or((0, 0));
        let at_least_0 = |v: i64| u32::try_from(v.max(0)).unwrap_or(u32::MAX);
        (at_least_0(i64::from(n) + dn), at_least_0(i64::from(a) + da))
    }

    fn list(&self, t: u16) -> &[u32] {
        match self.lists.iter().find(|(id, _)| *id == t) {
            Some((_, list)) => list,
            None => {
                self.view.failed(err!(Internal, "the posting list of tag {} was not read before the query", t));
                &[]
            }
        }
    }

    fn counts(&self) -> (usize, usize) {
        (self.live_now as usize, self.archived_now as usize)
    }

    fn id_end(&self) -> EntryId {
        self.end_id as EntryId
    }

    fn is_live(&self, id: EntryId) -> bool {
        self.place(id).is_some()
    }

    fn tagset(&self, id: EntryId) -> TagSet {
        match self.changed.get(&id) {
            Some(Change::Put(p)) => p.set,
            Some(Change::Gone) => [0; KEY_MAX_TAGS],
            Some(Change::Access { .. }) | None => self.view.tagset(id),
        }
    }

    fn fields(&self, id: EntryId) -> Option<(bool, u32, u32)> {
        match self.changed.get(&id) {
            Some(Change::Put(p)) => Some((p.archived, p.created, p.hits)),
            Some(Change::Gone) => None,
            Some(&Change::Access { hits, .. }) => self.view.fields(id).map(|(a, c, _)| (a, c, hits)),
            None => self.view.fields(id),
        }
    }
}
