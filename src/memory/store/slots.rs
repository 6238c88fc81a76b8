//! The entry table: one slot per entry id, kept as parallel arrays of plain integers (the
//! layout a query reads is dense, and every array is allocated zeroed, so pages of ids never
//! used cost no RAM), and the key table that finds an entry by its exact tags.
//!
//! Per id: the record's place in the log with two flag bits (8 bytes), created, last access,
//! access count and version (4 bytes each), and the tag ids (16 bytes): 40 bytes. The key table
//! adds 6 bytes per entry of capacity. See `limits.rs` for the totals.

use crate::error::Result;
use crate::limits::{KEY_MAX_TAGS, STORE_DIRTY_LIST_MAX};
use crate::memory::hash::fnv1a64_continue;
use crate::memory::query::EntryId;

/// The tag ids of one entry, in key order, then zeros (tag id 0 is never used, see
/// [`super::tags`]).
pub type TagSet = [u16; KEY_MAX_TAGS];

/// The tag ids of a [`TagSet`], without the zeros that pad it.
#[inline]
pub fn unpadded(set: &TagSet) -> &[u16] {
    crate::bytes::take(set, set.iter().position(|&t| t == 0).unwrap_or(KEY_MAX_TAGS))
}

/// The entry table's columns for ids `0..n` (see [`Slots::columns_mut`]).
pub struct Columns<'a> {
    /// Packed locations (see [`Slot::pack`]).
    pub loc: &'a mut [u64],
    /// Creation times.
    pub created: &'a mut [u32],
    /// Last accesses.
    pub accessed: &'a mut [u32],
    /// Access counts.
    pub hits: &'a mut [u32],
    /// Versions.
    pub ver: &'a mut [u32],
    /// Tag sets.
    pub tags: &'a mut [TagSet],
}

/// Bits of a location that hold the log offset: logs up to 1 TiB.
const OFFSET_BITS: u32 = 40;
/// Bits of a location that hold the record length: records up to 4 MiB
/// (`STORE_RECORD_MAX_BYTES` is about 400 KiB).
const LEN_BITS: u32 = 22;
const OFFSET_MASK: u64 = (1 << OFFSET_BITS) - 1;
const LEN_MASK: u64 = (1 << LEN_BITS) - 1;
const ARCHIVED: u64 = 1 << 62;
const DIRTY: u64 = 1 << 63;

/// Largest log offset a location can hold.
pub const MAX_OFFSET: u64 = OFFSET_MASK;

/// Times are kept as `u32` Unix seconds (valid until 2106; later times are clamped).
pub fn clamp32(t: u64) -> u32 {
    u32::try_from(t).unwrap_or(u32::MAX)
}

/// A packed location (see [`Slot::pack`]) as offset, length and archived flag; `None` for an
/// id not in use.
pub fn unpack_location(l: u64) -> Option<(u64, u32, bool)> {
    let offset = l & OFFSET_MASK;
    (offset != 0).then_some((offset, ((l >> OFFSET_BITS) & LEN_MASK) as u32, l & ARCHIVED != 0))
}

/// One entry's fields, as a copy (the table stores them column by column).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Slot {
    /// Offset of the entry's current `put` record in the log (never 0: the header is there).
    pub offset: u64,
    /// Length of that record, newline included.
    pub len: u32,
    /// Out of default query results.
    pub archived: bool,
    /// Access statistics changed since they were last written.
    pub dirty: bool,
    /// Creation time, Unix seconds.
    pub created: u32,
    /// Last access, Unix seconds.
    pub accessed: u32,
    /// Access count.
    pub hits: u32,
    /// Version.
    pub ver: u32,
}

impl Slot {
    /// Offset, length and flags in one word.
    pub fn pack(&self) -> u64 {
        (self.offset & OFFSET_MASK)
            | ((u64::from(self.len) & LEN_MASK) << OFFSET_BITS)
            | if self.archived { ARCHIVED } else { 0 }
            | if self.dirty { DIRTY } else { 0 }
    }
}

/// The entry table. Ids below `ids_room` fit; see the module documentation.
pub struct Slots {
    loc: Vec<u64>,
    created: Vec<u32>,
    accessed: Vec<u32>,
    hits: Vec<u32>,
    ver: Vec<u32>,
    tags: Vec<TagSet>,
    /// One past the highest id in use (live or dead): the next id to hand out.
    next: usize,
    live: usize,
    archived: usize,
    /// Ids whose access statistics changed since the last flush (each once), so that a flush
    /// costs what was touched, not the table; past its capacity, `dirty_all` asks for a scan.
    dirty: Vec<EntryId>,
    dirty_all: bool,
}

impl Slots {
    /// A table for ids below `room`, allocated zeroed now.
    pub fn new(room: usize) -> Slots {
        Slots {
            loc: vec![0; room],
            created: vec![0; room],
            accessed: vec![0; room],
            hits: vec![0; room],
            ver: vec![0; room],
            tags: vec![[0; KEY_MAX_TAGS]; room],
            next: 0,
            live: 0,
            archived: 0,
            dirty: Vec::with_capacity(STORE_DIRTY_LIST_MAX),
            dirty_all: false,
        }
    }

    /// Bytes of RAM reserved (whether touched or not).
    pub fn ram_bytes(&self) -> usize {
        self.loc.capacity() * 8
            + (self.created.capacity() + self.accessed.capacity() + self.hits.capacity() + self.ver.capacity()) * 4
            + self.tags.capacity() * core::mem::size_of::<TagSet>()
    }

    /// Ids that fit.
    pub fn room(&self) -> usize {
        self.loc.len()
    }

    /// The next id to hand out (one past the highest id ever used since the last
    /// renumbering).
    pub fn next_id(&self) -> usize {
        self.next
    }

    /// Live entries.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Live archived entries.
    pub fn archived_count(&self) -> usize {
        self.archived
    }

    /// Forgets every entry (touching only the ids used).
    pub fn clear(&mut self) {
        let n = self.next.min(self.loc.len());
        for a in [&mut self.created, &mut self.accessed, &mut self.hits, &mut self.ver] {
            a.iter_mut().take(n).for_each(|x| *x = 0);
        }
        self.loc.iter_mut().take(n).for_each(|x| *x = 0);
        self.tags.iter_mut().take(n).for_each(|t| *t = [0; KEY_MAX_TAGS]);
        self.next = 0;
        self.live = 0;
        self.archived = 0;
        self.dirty.clear();
        self.dirty_all = false;
    }

    /// Whether `id` is a live entry.
    #[inline]
    pub fn is_live(&self, id: EntryId) -> bool {
        self.loc.get(id as usize).is_some_and(|&l| l & OFFSET_MASK != 0)
    }

    /// The fields of live entry `id`.
    pub fn get(&self, id: EntryId) -> Option<Slot> {
        let i = id as usize;
        let l = *self.loc.get(i)?;
        if l & OFFSET_MASK == 0 {
            return None;
        }
        Some(Slot {
            offset: l & OFFSET_MASK,
            len: ((l >> OFFSET_BITS) & LEN_MASK) as u32,
            archived: l & ARCHIVED != 0,
            dirty: l & DIRTY != 0,
            created: self.created.get(i).copied().unwrap_or(0),
            accessed: self.accessed.get(i).copied().unwrap_or(0),
            hits: self.hits.get(i).copied().unwrap_or(0),
            ver: self.ver.get(i).copied().unwrap_or(0),
        })
    }

    /// Whether live entry `id` is archived (false for a dead id).
    #[inline]
    pub fn archived(&self, id: EntryId) -> bool {
        self.loc.get(id as usize).is_some_and(|&l| l & ARCHIVED != 0 && l & OFFSET_MASK != 0)
    }

    /// Creation time of `id` (0 for a dead id).
    #[inline]
    pub fn created(&self, id: EntryId) -> u32 {
        self.created.get(id as usize).copied().unwrap_or(0)
    }

    /// The tag ids of `id`, padded with zeros (all zeros for a dead id).
    #[inline]
    pub fn tagset(&self, id: EntryId) -> TagSet {
        self.tags.get(id as usize).copied().unwrap_or([0; KEY_MAX_TAGS])
    }

    /// The tag ids of `id` without padding.
    pub fn tag_ids(&self, id: EntryId) -> &[u16] {
        let Some(t) = self.tags.get(id as usize) else { return &[] };
        unpadded(t)
    }

    /// Writes the fields of `id` (live or not; a slot with offset 0 is dead). `CAPACITY_EXCEEDED`
    /// past the table.
    pub fn set(&mut self, id: EntryId, s: &Slot, tags: Option<&TagSet>) -> Result<()> {
        let i = id as usize;
        let was = self.get(id);
        let (Some(loc), Some(c), Some(a), Some(h), Some(v)) = (
            self.loc.get_mut(i),
            self.created.get_mut(i),
            self.accessed.get_mut(i),
            self.hits.get_mut(i),
            self.ver.get_mut(i),
        ) else {
            bail!(
                CapacityExceeded,
                "entry id {} is beyond the store's room of {} ids (memory.store_capacity)",
                id,
                self.loc.len()
            );
        };
        *loc = s.pack();
        *c = s.created;
        *a = s.accessed;
        *h = s.hits;
        *v = s.ver;
        if let (Some(t), Some(new)) = (self.tags.get_mut(i), tags) {
            *t = *new;
        }
        let now_live = s.offset != 0;
        match (was, now_live) {
            (None, true) => self.live += 1,
            (Some(_), false) => self.live = self.live.saturating_sub(1),
            _ => {}
        }
        let was_archived = was.is_some_and(|w| w.archived);
        let is_archived = now_live && s.archived;
        match (was_archived, is_archived) {
            (false, true) => self.archived += 1,
            (true, false) => self.archived = self.archived.saturating_sub(1),
            _ => {}
        }
        if !now_live {
            if let Some(t) = self.tags.get_mut(i) {
                *t = [0; KEY_MAX_TAGS];
            }
        }
        self.next = self.next.max(i + 1);
        Ok(())
    }

    /// Marks `id` as one more id handed out, even if it is not live (a replayed log names ids
    /// that were deleted since; they are never handed out again until a renumbering).
    pub fn note_id(&mut self, id: EntryId) {
        self.next = self.next.max(id as usize + 1);
    }

    /// The columns of ids `0..n`, to be filled in bulk (from a checkpoint, into a cleared
    /// table); [`Slots::finish_bulk`] then counts what they hold. `None` past the table.
    pub fn columns_mut(&mut self, n: usize) -> Option<Columns<'_>> {
        if n > self.loc.len() {
            return None;
        }
        // Counted as handed out at once, so that `clear` covers them even when a fill stops
        // part way (a damaged checkpoint).
        self.next = self.next.max(n);
        Some(Columns {
            loc: self.loc.get_mut(..n)?,
            created: self.created.get_mut(..n)?,
            accessed: self.accessed.get_mut(..n)?,
            hits: self.hits.get_mut(..n)?,
            ver: self.ver.get_mut(..n)?,
            tags: self.tags.get_mut(..n)?,
        })
    }

    /// The columns of ids `0..n` as they are (for the checkpoint): locations (dirty flags
    /// included), created, accessed, hits, versions, tag sets.
    #[allow(clippy::type_complexity)]
    pub fn columns(&self, n: usize) -> Option<(&[u64], [&[u32]; 4], &[TagSet])> {
        Some((
            self.loc.get(..n)?,
            [self.created.get(..n)?, self.accessed.get(..n)?, self.hits.get(..n)?, self.ver.get(..n)?],
            self.tags.get(..n)?,
        ))
    }

    /// After [`Slots::columns_mut`]: `n` ids are handed out; counts the live and archived ones
    /// and clears the dirty flags.
    pub fn finish_bulk(&mut self, n: usize) {
        self.next = n.min(self.loc.len());
        self.live = 0;
        self.archived = 0;
        for l in self.loc.iter_mut().take(self.next) {
            *l &= !DIRTY;
            if *l & OFFSET_MASK != 0 {
                self.live += 1;
                self.archived += usize::from(*l & ARCHIVED != 0);
            }
        }
    }

    /// Counts an access in RAM.
    pub fn touch(&mut self, id: EntryId, now: u64) {
        let i = id as usize;
        if !self.is_live(id) {
            return;
        }
        if let (Some(l), Some(a), Some(h)) = (self.loc.get_mut(i), self.accessed.get_mut(i), self.hits.get_mut(i)) {
            *h = h.saturating_add(1);
            *a = clamp32(now);
            if *l & DIRTY == 0 {
                *l |= DIRTY;
                if self.dirty.len() < STORE_DIRTY_LIST_MAX {
                    self.dirty.push(id);
                } else {
                    self.dirty_all = true;
                }
            }
        }
    }

    /// Sets the access statistics of `id` as a replayed `touch` record says.
    pub fn set_access(&mut self, id: EntryId, accessed: u64, hits: u64) {
        let i = id as usize;
        if !self.is_live(id) {
            return;
        }
        if let (Some(a), Some(h)) = (self.accessed.get_mut(i), self.hits.get_mut(i)) {
            *a = clamp32(accessed);
            *h = clamp32(hits);
        }
    }

    /// Clears the dirty flag of `id`.
    pub fn clean(&mut self, id: EntryId) {
        if let Some(l) = self.loc.get_mut(id as usize) {
            *l &= !DIRTY;
        }
    }

    /// Whether some entry may have access statistics to write.
    pub fn any_dirty(&self) -> bool {
        self.dirty_all || !self.dirty.is_empty()
    }

    /// The ids touched since the last flush, when they were few enough to list (`None`: scan
    /// the table with [`Slots::next_dirty`]). An id may have been cleaned since (a put carries
    /// its statistics): check [`Slot::dirty`].
    pub fn dirty_list(&self) -> Option<&[EntryId]> {
        (!self.dirty_all).then_some(self.dirty.as_slice())
    }

    /// After a flush wrote every dirty entry: their flags are cleared and the list forgotten.
    pub fn flushed(&mut self) {
        for &id in &self.dirty {
            if let Some(l) = self.loc.get_mut(id as usize) {
                *l &= !DIRTY;
            }
        }
        self.dirty.clear();
        self.dirty_all = false;
    }

    /// Live ids with dirty access statistics, from `from` on.
    pub fn next_dirty(&self, from: usize) -> Option<EntryId> {
        let end = self.next.min(self.loc.len());
        let rest = self.loc.get(from..end)?;
        rest.iter().position(|&l| l & DIRTY != 0 && l & OFFSET_MASK != 0).map(|p| (from + p) as EntryId)
    }

    /// Live ids in increasing order (oldest first).
    pub fn ids(&self) -> impl DoubleEndedIterator<Item = EntryId> + '_ {
        self.loc.iter().take(self.next).enumerate().filter(|(_, &l)| l & OFFSET_MASK != 0).map(|(i, _)| i as EntryId)
    }
}

/// The hash of a key given as tag ids (what the key table is keyed by).
pub fn key_hash(ids: &[u16]) -> u64 {
    let mut h = crate::memory::hash::fnv1a64(&[]);
    for id in ids {
        h = fnv1a64_continue(h, &id.to_le_bytes());
    }
    h
}

/// An open-addressing table of entry ids keyed by a caller-computed hash; the caller decides
/// equality (the table stores ids only). Linear probing with backward-shift deletion (no
/// tombstones, so a long-running store never degrades), at most two thirds full. A slot holds
/// `id + 1`; 0 is empty. The table length need not be a power of two: a hash is mapped to a
/// home slot by a multiply-shift ("fast range").
pub struct KeyTable {
    slots: Vec<u32>,
}

impl KeyTable {
    /// A table for up to `max_ids` ids: one and a half slots each.
    pub fn new(max_ids: usize) -> KeyTable {
        let n = max_ids.max(1).saturating_add(max_ids / 2).saturating_add(1);
        KeyTable { slots: vec![0; n] }
    }

    /// Bytes of RAM reserved.
    pub fn ram_bytes(&self) -> usize {
        self.slots.capacity() * 4
    }

    /// Empties the table.
    pub fn clear(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = 0);
    }

    /// The raw slots (for the checkpoint).
    pub fn raw(&self) -> &[u32] {
        &self.slots
    }

    /// The raw slots to fill from a checkpoint (same length as [`KeyTable::raw`]).
    pub fn raw_mut(&mut self) -> &mut [u32] {
        &mut self.slots
    }

    fn home(&self, hash: u64) -> usize {
        // Fold the high bits in (FNV's low bits alone are weaker), then map to [0, len).
        let h = (hash ^ (hash >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (((h >> 32) * self.slots.len() as u64) >> 32) as usize
    }

    fn step(&self, i: usize) -> usize {
        if i + 1 >= self.slots.len() {
            0
        } else {
            i + 1
        }
    }

    /// The id with this hash for which `eq` holds.
    pub fn find(&self, hash: u64, mut eq: impl FnMut(EntryId) -> bool) -> Option<EntryId> {
        let mut i = self.home(hash);
        for _ in 0..self.slots.len() {
            let v = *self.slots.get(i)?;
            if v == 0 {
                return None;
            }
            if eq(v - 1) {
                return Some(v - 1);
            }
            i = self.step(i);
        }
        None
    }

    /// Inserts `id` (the caller has checked it is not present). `CAPACITY_EXCEEDED` only if the
    /// caller inserts more ids than it sized the table for.
    pub fn insert(&mut self, hash: u64, id: EntryId) -> Result<()> {
        let mut i = self.home(hash);
        for _ in 0..self.slots.len() {
            match self.slots.get_mut(i) {
                Some(s) if *s == 0 => {
                    *s = id + 1;
                    return Ok(());
                }
                _ => i = self.step(i),
            }
        }
        bail!(CapacityExceeded, "the store's key table is full ({} slots)", self.slots.len())
    }

    /// Removes `id`, stored under `hash`; `hash_of` gives the hash of any other stored id (for
    /// the backward shift). Returns whether it was found.
    pub fn remove(&mut self, hash: u64, id: EntryId, mut hash_of: impl FnMut(EntryId) -> u64) -> bool {
        let n = self.slots.len();
        let mut i = self.home(hash);
        let mut found = false;
        for _ in 0..n {
            match self.slots.get(i) {
                Some(&v) if v == id + 1 => {
                    found = true;
                    break;
                }
                Some(&0) | None => return false,
                _ => i = self.step(i),
            }
        }
        if !found {
            return false;
        }
        // Backward shift: move later members of the probe run into the hole when their home
        // does not lie cyclically in (hole, position].
        let mut j = i;
        for _ in 0..n {
            j = self.step(j);
            let v = self.slots.get(j).copied().unwrap_or(0);
            if v == 0 {
                break;
            }
            let k = self.home(hash_of(v - 1));
            let stays = if i <= j { i < k && k <= j } else { i < k || k <= j };
            if !stays {
                if let Some(s) = self.slots.get_mut(i) {
                    *s = v;
                }
                i = j;
            }
        }
        if let Some(s) = self.slots.get_mut(i) {
            *s = 0;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_table_insert_find_remove_under_collisions() {
        let mut t = KeyTable::new(64);
        // Everything hashes to the same home: the worst case for backward shift.
        let h = |_: u32| 5u64;
        for id in 0..64u32 {
            t.insert(h(id), id).unwrap();
        }
        for id in (0..64u32).step_by(3) {
            assert!(t.remove(h(id), id, h));
        }
        for id in 0..64u32 {
            let found = t.find(h(id), |x| x == id);
            assert_eq!(found.is_some(), id % 3 != 0, "{}", id);
        }
        assert!(!t.remove(h(0), 0, h));
    }

    #[test]
    fn key_table_wraps_around_the_end() {
        let mut t = KeyTable::new(8);
        let last = (0..u64::MAX).step_by(7919).find(|&h| t.home(h) == t.slots.len() - 1).unwrap();
        for id in 0..4 {
            t.insert(last, id).unwrap();
        }
        assert!(t.remove(last, 1, |_| last));
        for id in [0, 2, 3] {
            assert_eq!(t.find(last, |x| x == id), Some(id));
        }
    }

    #[test]
    fn slots_pack_and_count() {
        let mut s = Slots::new(4);
        let slot = Slot {
            offset: MAX_OFFSET,
            len: 400_000,
            archived: true,
            dirty: false,
            created: 7,
            accessed: 8,
            hits: 9,
            ver: 10,
        };
        s.set(2, &slot, Some(&[3, 4, 0, 0, 0, 0, 0, 0])).unwrap();
        assert_eq!(s.get(2), Some(slot));
        assert_eq!((s.live(), s.archived_count(), s.next_id()), (1, 1, 3));
        assert_eq!(s.tag_ids(2), [3, 4]);
        s.touch(2, 99);
        assert_eq!(s.next_dirty(0), Some(2));
        s.set(2, &Slot::default(), None).unwrap();
        assert_eq!((s.live(), s.archived_count()), (0, 0));
        assert!(s.tag_ids(2).is_empty());
        assert!(s.set(4, &slot, None).is_err());
        assert_eq!(s.ids().count(), 0);
    }
}
