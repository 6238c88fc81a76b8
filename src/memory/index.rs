//! The store's in-RAM index building blocks: a fixed open-addressing id table and the tag
//! table that interns tag text as 16-bit ids.
//!
//! Both are reserved once and never grow. The id table uses linear probing with backward-shift
//! deletion (no tombstones, so a long-running store never degrades), kept at most half full.

use crate::error::Result;
use crate::limits::{STORE_MAX_TAGS, STORE_TAG_ARENA_BYTES};
use crate::memory::hash::fnv1a64;

/// The "no tag" marker padding unused tag positions of an entry; never a real tag id, because
/// ids are below [`STORE_MAX_TAGS`].
pub const NO_TAG: u16 = u16::MAX;

/// An open-addressing table of `u32` ids keyed by a caller-computed hash; the caller decides
/// equality (the table stores ids only, keys live elsewhere). Slot value 0 means empty, any
/// other value is `id + 1`.
pub struct IdTable {
    slots: Vec<u32>,
    mask: usize,
}

impl IdTable {
    /// A table for up to `max_ids` ids, at most half full: the next power of two at least
    /// twice `max_ids`.
    pub fn new(max_ids: usize) -> IdTable {
        let n = (max_ids.max(1) * 2).next_power_of_two();
        IdTable { slots: vec![0; n], mask: n - 1 }
    }

    /// Bytes of RAM held.
    pub fn ram_bytes(&self) -> usize {
        self.slots.capacity() * core::mem::size_of::<u32>()
    }

    /// Empties the table.
    pub fn clear(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = 0);
    }

    fn home(&self, hash: u64) -> usize {
        // Fold the high bits in: FNV's low bits alone are weaker.
        ((hash ^ (hash >> 32)) as usize) & self.mask
    }

    /// The id with this hash for which `eq` holds.
    pub fn find(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> Option<u32> {
        let mut i = self.home(hash);
        for _ in 0..self.slots.len() {
            let v = *self.slots.get(i)?;
            if v == 0 {
                return None;
            }
            if eq(v - 1) {
                return Some(v - 1);
            }
            i = (i + 1) & self.mask;
        }
        None
    }

    /// Inserts `id` (the caller has checked it is not present). `CAPACITY_EXCEEDED` only if the
    /// caller inserts more ids than it sized the table for.
    pub fn insert(&mut self, hash: u64, id: u32) -> Result<()> {
        let mut i = self.home(hash);
        for _ in 0..self.slots.len() {
            match self.slots.get_mut(i) {
                Some(s) if *s == 0 => {
                    *s = id + 1;
                    return Ok(());
                }
                _ => i = (i + 1) & self.mask,
            }
        }
        bail!(CapacityExceeded, "index hash table is full ({} slots)", self.slots.len())
    }

    /// Removes `id`, stored under `hash`; `hash_of` gives the hash of any other stored id (for
    /// the backward shift). Returns whether it was found.
    pub fn remove(&mut self, hash: u64, id: u32, mut hash_of: impl FnMut(u32) -> u64) -> bool {
        let mut i = self.home(hash);
        let mut found = false;
        for _ in 0..self.slots.len() {
            match self.slots.get(i) {
                Some(&v) if v == id + 1 => {
                    found = true;
                    break;
                }
                Some(&0) | None => return false,
                _ => i = (i + 1) & self.mask,
            }
        }
        if !found {
            return false;
        }
        // Backward shift: move later members of the probe run into the hole when their home
        // position does not lie cyclically in (hole, position].
        let mut j = i;
        for _ in 0..self.slots.len() {
            j = (j + 1) & self.mask;
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

/// Interned tags: text in one arena, 16-bit ids, reference counts (a tag whose last entry goes
/// away frees its id). The arena is compacted in place when it fills with dead text.
pub struct TagTable {
    arena: Vec<u8>,
    off: Vec<u32>,
    len: Vec<u8>,
    refs: Vec<u32>,
    table: IdTable,
    in_use: usize,
    /// Scratch for arena compaction, reserved once.
    order: Vec<u16>,
}

impl Default for TagTable {
    fn default() -> Self {
        TagTable::new()
    }
}

impl TagTable {
    /// An empty table with the capacities of `limits.rs`, reserved now.
    pub fn new() -> TagTable {
        TagTable {
            arena: Vec::with_capacity(STORE_TAG_ARENA_BYTES),
            off: vec![0; STORE_MAX_TAGS],
            len: vec![0; STORE_MAX_TAGS],
            refs: vec![0; STORE_MAX_TAGS],
            table: IdTable::new(STORE_MAX_TAGS),
            in_use: 0,
            order: Vec::with_capacity(STORE_MAX_TAGS),
        }
    }

    /// Bytes of RAM held.
    pub fn ram_bytes(&self) -> usize {
        self.arena.capacity()
            + self.off.capacity() * 4
            + self.len.capacity()
            + self.refs.capacity() * 4
            + self.order.capacity() * 2
            + self.table.ram_bytes()
    }

    /// Forgets every tag.
    pub fn clear(&mut self) {
        self.arena.clear();
        self.refs.iter_mut().for_each(|r| *r = 0);
        self.table.clear();
        self.in_use = 0;
    }

    /// Distinct tags in use.
    pub fn in_use(&self) -> usize {
        self.in_use
    }

    /// The text of tag `id` ("" for an unused id).
    pub fn name(&self, id: u16) -> &str {
        let i = usize::from(id);
        let (Some(&off), Some(&len)) = (self.off.get(i), self.len.get(i)) else { return "" };
        if self.refs.get(i).copied().unwrap_or(0) == 0 {
            return "";
        }
        let start = off as usize;
        self.arena.get(start..start + usize::from(len)).and_then(|b| core::str::from_utf8(b).ok()).unwrap_or("")
    }

    /// Number of entries using tag `id`.
    pub fn refs(&self, id: u16) -> u32 {
        self.refs.get(usize::from(id)).copied().unwrap_or(0)
    }

    /// The id of `tag`, if interned.
    pub fn find(&self, tag: &str) -> Option<u16> {
        let id = self.table.find(fnv1a64(tag.as_bytes()), |id| self.name(id as u16) == tag)?;
        Some(id as u16)
    }

    /// The id of `tag`, interning it if new, and counts one more reference.
    pub fn acquire(&mut self, tag: &str) -> Result<u16> {
        if let Some(id) = self.find(tag) {
            if let Some(r) = self.refs.get_mut(usize::from(id)) {
                *r += 1;
            }
            return Ok(id);
        }
        let Some(id) = self.refs.iter().position(|&r| r == 0) else {
            bail!(
                CapacityExceeded,
                "the store uses {} distinct tags already (STORE_MAX_TAGS); cannot add \"{}\"",
                STORE_MAX_TAGS,
                tag
            );
        };
        if self.arena.len() + tag.len() > STORE_TAG_ARENA_BYTES {
            self.compact_arena();
            if self.arena.len() + tag.len() > STORE_TAG_ARENA_BYTES {
                bail!(
                    CapacityExceeded,
                    "tag text is full ({} bytes, STORE_TAG_ARENA_BYTES); cannot add \"{}\"",
                    STORE_TAG_ARENA_BYTES,
                    tag
                );
            }
        }
        let off = self.arena.len() as u32;
        self.arena.extend_from_slice(tag.as_bytes());
        if let (Some(o), Some(l), Some(r)) = (self.off.get_mut(id), self.len.get_mut(id), self.refs.get_mut(id)) {
            *o = off;
            *l = tag.len() as u8;
            *r = 1;
        }
        self.table.insert(fnv1a64(tag.as_bytes()), id as u32)?;
        self.in_use += 1;
        Ok(id as u16)
    }

    /// Drops one reference to `id`; the last one frees the id.
    pub fn release(&mut self, id: u16) {
        let i = usize::from(id);
        let Some(&r) = self.refs.get(i) else { return };
        if r == 0 {
            return;
        }
        if r > 1 {
            if let Some(r) = self.refs.get_mut(i) {
                *r -= 1;
            }
            return;
        }
        let hash = fnv1a64(self.name(id).as_bytes());
        let (arena, off, len) = (&self.arena, &self.off, &self.len);
        let name_of = |id: u32| -> u64 {
            let i = id as usize;
            let start = off.get(i).copied().unwrap_or(0) as usize;
            let l = usize::from(len.get(i).copied().unwrap_or(0));
            fnv1a64(arena.get(start..start + l).unwrap_or(&[]))
        };
        self.table.remove(hash, u32::from(id), name_of);
        if let Some(r) = self.refs.get_mut(i) {
            *r = 0;
        }
        self.in_use -= 1;
    }

    /// Moves live tag text to the front of the arena (runs only when the arena is full).
    fn compact_arena(&mut self) {
        // Live ids in arena order, so each move goes downwards and never overwrites live text.
        let mut order = core::mem::take(&mut self.order);
        order.clear();
        order.extend((0..self.refs.len()).filter(|&i| self.refs.get(i).copied().unwrap_or(0) > 0).map(|i| i as u16));
        order.sort_unstable_by_key(|&i| self.off.get(usize::from(i)).copied().unwrap_or(0));
        let mut w = 0usize;
        for &id in &order {
            let i = usize::from(id);
            let start = self.off.get(i).copied().unwrap_or(0) as usize;
            let l = usize::from(self.len.get(i).copied().unwrap_or(0));
            if start + l <= self.arena.len() {
                self.arena.copy_within(start..start + l, w);
            }
            if let Some(o) = self.off.get_mut(i) {
                *o = w as u32;
            }
            w += l;
        }
        self.arena.truncate(w);
        self.order = order;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_table_insert_find_remove_under_collisions() {
        let mut t = IdTable::new(64);
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
    fn tags_intern_count_and_free() {
        let mut t = TagTable::new();
        let a = t.acquire("alpha").unwrap();
        let b = t.acquire("beta").unwrap();
        assert_eq!(t.acquire("alpha").unwrap(), a);
        assert_eq!(t.refs(a), 2);
        assert_eq!(t.name(b), "beta");
        t.release(a);
        assert_eq!(t.find("alpha"), Some(a));
        t.release(a);
        assert_eq!(t.find("alpha"), None);
        assert_eq!(t.in_use(), 1);
        assert_eq!(t.acquire("gamma").unwrap(), a, "freed ids are reused");
        assert_eq!(t.find("beta"), Some(b));
    }

    #[test]
    fn arena_compacts_when_full_of_dead_text() {
        let mut t = TagTable::new();
        let keep = t.acquire("keep-me").unwrap();
        for i in 0..(STORE_TAG_ARENA_BYTES / 64) * 3 {
            let name = format!("{:0>60}", i);
            let id = t.acquire(&name).unwrap();
            t.release(id);
        }
        assert_eq!(t.name(keep), "keep-me");
        assert_eq!(t.find("keep-me"), Some(keep));
    }
}
