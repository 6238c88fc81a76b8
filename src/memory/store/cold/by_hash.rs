//! Each cold key's newest copy: a map from a key's 64-bit hash to a cold id, the one table of
//! the cold tier that grows with it (the writer's cold index keeps it, `scan_current` builds
//! one per scan).
//!
//! The keys are hashes already (FNV-1a of the key), so the table mixes them once by a
//! multiplication and keeps them in one array of pairs: open addressing, linear probing,
//! deletion by backward shift (no tombstones, so a table that lives as long as the writer never
//! degrades), at most three quarters full. It grows by doubling, one allocation, as std's
//! `HashMap` does; [`IdsByHash::reserve`] sizes it ahead so that the cycles that follow
//! allocate nothing. A std `HashMap<u64, u32>` did this before, with SipHash over hashes and
//! its own code in the binary for one map type.

/// A slot's id when it is empty (no cold id reaches it: `scan_current` stops short of it and
/// the cold index numbers at most `STORE_COLD_SCAN_MAX_KEYS` copies).
const EMPTY: u32 = u32::MAX;
/// Fewest slots once anything is stored.
const MIN_SLOTS: usize = 16;

/// A map from a key's hash to a cold id. See the module documentation.
#[derive(Default)]
pub struct IdsByHash {
    /// Hash and id; `EMPTY` for a free slot. A power of two long, or empty.
    slots: Vec<(u64, u32)>,
    len: usize,
}

impl IdsByHash {
    /// Empty; nothing reserved.
    pub const fn new() -> IdsByHash {
        IdsByHash { slots: Vec::new(), len: 0 }
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Entries it holds without growing.
    pub fn capacity(&self) -> usize {
        self.slots.len() / 4 * 3
    }

    /// Bytes of RAM reserved (16 per slot).
    pub fn ram_bytes(&self) -> usize {
        self.slots.capacity() * core::mem::size_of::<(u64, u32)>()
    }

    /// Empties it, keeping its room. Out of line: its fill loop was inlined at four callers.
    #[inline(never)]
    pub fn clear(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = (0, EMPTY));
        self.len = 0;
    }

    /// Room for `additional` more entries without growing.
    pub fn reserve(&mut self, additional: usize) {
        let need = self.len.saturating_add(additional);
        if need > self.capacity() {
            let mut n = self.slots.len().max(MIN_SLOTS);
            while n / 4 * 3 < need {
                n = n.saturating_mul(2);
            }
            self.rehash(n);
        }
    }

    fn rehash(&mut self, n: usize) {
        let old = core::mem::replace(&mut self.slots, vec![(0, EMPTY); n]);
        self.len = 0;
        for (h, id) in old {
            if id != EMPTY {
                self.insert(h, id);
            }
        }
    }

    fn home(&self, h: u64) -> usize {
        // The high bits of a multiplicative mix (FNV's low bits alone are weak).
        let bits = self.slots.len().trailing_zeros();
        if bits == 0 {
            return 0;
        }
        (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    fn next(&self, i: usize) -> usize {
        (i + 1) & (self.slots.len().wrapping_sub(1))
    }

    /// Where `h` is, or the empty slot that ends its run (`None` when the table is empty).
    fn probe(&self, h: u64) -> Option<usize> {
        let mut i = self.home(h);
        for _ in 0..self.slots.len() {
            match self.slots.get(i) {
                Some(&(sh, id)) if id == EMPTY || sh == h => return Some(i),
                Some(_) => i = self.next(i),
                None => return None,
            }
        }
        None
    }

    /// The id under `h`.
    pub fn get(&self, h: u64) -> Option<u32> {
        let i = self.probe(h)?;
        self.slots.get(i).filter(|s| s.1 != EMPTY).map(|s| s.1)
    }

    /// Whether `h` is held.
    pub fn contains_key(&self, h: u64) -> bool {
        self.get(h).is_some()
    }

    /// Sets `h` to `id`; returns the id it replaced. `id` must not be `u32::MAX` (ignored).
    pub fn insert(&mut self, h: u64, id: u32) -> Option<u32> {
        if id == EMPTY {
            return None;
        }
        if self.len + 1 > self.capacity() {
            self.reserve(1);
        }
        let i = self.probe(h)?;
        let slot = self.slots.get_mut(i)?;
        if slot.1 == EMPTY {
            *slot = (h, id);
            self.len += 1;
            None
        } else {
            Some(core::mem::replace(&mut slot.1, id))
        }
    }

    /// Takes `h` out; returns its id.
    pub fn remove(&mut self, h: u64) -> Option<u32> {
        let mut hole = self.probe(h)?;
        let id = self.slots.get(hole).filter(|s| s.1 != EMPTY)?.1;
        self.len -= 1;
        // Backward shift: a later member of the run moves into the hole unless its home lies
        // cyclically in (hole, its place].
        let mut j = hole;
        loop {
            j = self.next(j);
            let Some(&(sh, sid)) = self.slots.get(j) else { break };
            if sid == EMPTY {
                break;
            }
            let k = self.home(sh);
            let stays = if hole <= j { hole < k && k <= j } else { hole < k || k <= j };
            if !stays {
                if let Some(s) = self.slots.get_mut(hole) {
                    *s = (sh, sid);
                }
                hole = j;
            }
        }
        if let Some(s) = self.slots.get_mut(hole) {
            *s = (0, EMPTY);
        }
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn agrees_with_a_btree_map_on_random_operations() {
        let mut rng = crate::testing::rng::Rng::new(0x39);
        // Few distinct hashes, some colliding in their home slot (same high bits after the
        // mix is unlikely; same low bits are common), so that runs form and shift.
        for round in 0..20 {
            let mut m = IdsByHash::new();
            let mut want: BTreeMap<u64, u32> = BTreeMap::new();
            if round % 2 == 1 {
                m.reserve(100);
                assert!(m.capacity() >= 100);
            }
            for step in 0..4000u32 {
                let h = (rng.below_u64(300)) << (rng.below_u64(3) * 20);
                match rng.below(4) {
                    0 | 1 => assert_eq!(m.insert(h, step), want.insert(h, step), "insert {}", h),
                    2 => assert_eq!(m.remove(h), want.remove(&h), "remove {}", h),
                    _ => assert_eq!(m.get(h), want.get(&h).copied(), "get {}", h),
                }
                assert_eq!(m.len(), want.len());
            }
            for (h, id) in &want {
                assert_eq!(m.get(*h), Some(*id));
            }
            m.clear();
            assert!(m.len() == 0 && want.keys().all(|h| !m.contains_key(*h)));
        }
    }

    #[test]
    fn reserved_room_takes_that_many_without_growing() {
        let mut m = IdsByHash::new();
        assert_eq!(m.ram_bytes(), 0);
        m.reserve(1000);
        let bytes = m.ram_bytes();
        for i in 0..1000u32 {
            assert_eq!(m.insert(u64::from(i).wrapping_mul(0x1234_5678_9ABC_DEF1), i), None);
        }
        assert_eq!(m.ram_bytes(), bytes);
        assert_eq!(m.insert(7, u32::MAX), None, "the empty mark is never stored");
        assert!(!m.contains_key(7));
    }
}
