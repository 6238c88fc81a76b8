//! Tags: their text interned once as 16-bit ids, and for each tag the posting list of the
//! entries that carry it, in increasing id order (oldest first).
//!
//! Ids start at 1 (0 pads an entry's tag set). A tag lives as long as some entry carries it:
//! the length of its posting list is its reference count, and the id is reused once the list
//! is empty.
//!
//! Posting lists share one arena of `u32` entry ids, allocated zeroed at open (pages the lists
//! never reach cost no RAM). Each list has a start, a length and a capacity; a list that fills
//! moves to the end of the arena with half as much room again, and when the arena's used part
//! holds too much dead room (or reaches the end) every list is packed to the front in place.
//! Ids are handed out in increasing order, so adding a new entry appends to each of its lists;
//! only a retag or a delete moves ids within a list.
//!
//! While a log is replayed the lists are not kept, only their lengths (so tags are still freed
//! when unused); [`Tags::build_lists`] lays them out in one pass at the end, exactly sized.

use super::slots::{KeyTable, Slots};
use crate::bytes;
use crate::error::Result;
use crate::limits::{STORE_TAG_ARENA_BYTES_PER_TAG, TAG_MAX_BYTES};
use crate::memory::hash::fnv1a64;
use crate::memory::query::EntryId;

/// Slack a list gets when it is laid out or packed: an eighth of its length and 4 ids.
fn slack(len: u32) -> u32 {
    len / 8 + 4
}

/// The tag table and the posting lists. See the module documentation.
pub struct Tags {
    max: usize,
    text: Vec<u8>,
    text_max: usize,
    off: Vec<u32>,
    text_len: Vec<u8>,
    table: KeyTable,
    /// The next never-used id; ids below it that are free are on `free`.
    fresh: u32,
    free: Vec<u16>,
    in_use: usize,
    start: Vec<u32>,
    count: Vec<u32>,
    cap: Vec<u32>,
    archived: Vec<u32>,
    post: Vec<u32>,
    used: usize,
    total: usize,
    lists: bool,
    /// Scratch for packing (list order) and for arena compaction, reserved once.
    order: Vec<u16>,
}

impl Tags {
    /// A table for up to `max_tags` distinct tags (at most 65,535) and `max_postings` posting
    /// entries (entry ids times tags per entry).
    pub fn new(max_tags: usize, max_postings: usize) -> Tags {
        let max = max_tags.clamp(1, u16::MAX as usize - 1);
        let n = max + 1;
        let text_max = max * STORE_TAG_ARENA_BYTES_PER_TAG;
        Tags {
            max,
            text: Vec::with_capacity(text_max),
            text_max,
            off: vec![0; n],
            text_len: vec![0; n],
            table: KeyTable::new(max),
            fresh: 1,
            free: Vec::with_capacity(max),
            in_use: 0,
            start: vec![0; n],
            count: vec![0; n],
            cap: vec![0; n],
            archived: vec![0; n],
            post: vec![0; max_postings + n * 4],
            used: 0,
            total: 0,
            lists: false,
            order: Vec::with_capacity(n),
        }
    }

    /// Bytes of RAM reserved (whether touched or not).
    pub fn ram_bytes(&self) -> usize {
        self.text.capacity()
            + self.off.capacity() * 4
            + self.text_len.capacity()
            + self.free.capacity() * 2
            + self.table.ram_bytes()
            + (self.start.capacity() + self.count.capacity() + self.cap.capacity() + self.archived.capacity()) * 4
            + self.post.capacity() * 4
            + self.order.capacity() * 2
    }

    /// Most distinct tags.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Forgets every tag and list; lists are not kept until [`Tags::build_lists`].
    pub fn clear(&mut self) {
        self.text.clear();
        let n = (self.fresh as usize).min(self.count.len());
        for a in [&mut self.start, &mut self.count, &mut self.cap, &mut self.archived] {
            a.iter_mut().take(n).for_each(|x| *x = 0);
        }
        self.table.clear();
        self.fresh = 1;
        self.free.clear();
        self.in_use = 0;
        self.used = 0;
        self.total = 0;
        self.lists = false;
    }

    /// Distinct tags in use.
    pub fn in_use(&self) -> usize {
        self.in_use
    }

    /// The text of tag `id` ("" for an unused id).
    pub fn name(&self, id: u16) -> &str {
        let i = usize::from(id);
        if id == 0 || self.count.get(i).copied().unwrap_or(0) == 0 {
            return "";
        }
        self.raw_name(i)
    }

    /// Whether tag `id` is interned (carried or reserved).
    pub fn is_interned(&self, id: u16) -> bool {
        id != 0 && self.text_len.get(usize::from(id)).is_some_and(|&l| l > 0)
    }

    /// The text in slot `i`, `""` for a free slot (length 0) or an id past the table. The
    /// arena holds each tag as the whole `&str` it was interned or restored from (a
    /// checkpoint's tag text is checked to be UTF-8 before it is restored), at `off`, `len`:
    /// the range lies within the arena and is all text.
    fn raw_name(&self, i: usize) -> &str {
        let (Some(&off), Some(&len)) = (self.off.get(i), self.text_len.get(i)) else { return "" };
        let start = off as usize;
        bytes::utf8_prefix(bytes::range(&self.text, start, start + usize::from(len)))
    }

    /// The id of `tag`, if some entry carries it.
    pub fn find(&self, tag: &str) -> Option<u16> {
        let id = self.table.find(fnv1a64(tag.as_bytes()), |id| self.raw_name(id as usize) == tag)?;
        Some(id as u16)
    }

    /// The id of `tag`, interning it if new. A new tag is carried by nobody until
    /// [`Tags::add`]; [`Tags::forget_if_unused`] frees it if that does not happen.
    pub fn intern(&mut self, tag: &str) -> Result<u16> {
        if let Some(id) = self.find(tag) {
            return Ok(id);
        }
        if tag.len() > TAG_MAX_BYTES {
            bail!(KeyInvalid, "tag \"{}\" is longer than {} bytes (TAG_MAX_BYTES)", tag, TAG_MAX_BYTES);
        }
        let id = match self.free.pop() {
            Some(id) => id,
            None if (self.fresh as usize) <= self.max => {
                self.fresh += 1;
                (self.fresh - 1) as u16
            }
            None => bail!(
                CapacityExceeded,
                "the store uses {} distinct tags already, its most at this memory.store_capacity; \
                 cannot add \"{}\" (reuse existing tags, or raise memory.store_capacity)",
                self.max,
                tag
            ),
        };
        if self.text.len() + tag.len() > self.text_max {
            self.compact_text();
        }
        if self.text.len() + tag.len() > self.text_max {
            self.free.push(id);
            bail!(
                CapacityExceeded,
                "the store's tag text is full ({} bytes for {} tags, STORE_TAG_ARENA_BYTES_PER_TAG); cannot add \"{}\"",
                self.text_max,
                self.max,
                tag
            );
        }
        let i = usize::from(id);
        if let (Some(o), Some(l)) = (self.off.get_mut(i), self.text_len.get_mut(i)) {
            *o = self.text.len() as u32;
            *l = tag.len() as u8;
        }
        self.text.extend_from_slice(tag.as_bytes());
        if let Err(e) = self.table.insert(fnv1a64(tag.as_bytes()), u32::from(id)) {
            self.free.push(id);
            return Err(e);
        }
        // Reserved, not yet in use: count 0 until an entry carries it. Mark it so `find` sees
        // it (the table has it) and a second intern returns the same id.
        self.in_use += 1;
        Ok(id)
    }

    /// `CAPACITY_EXCEEDED` unless `count` new tags of `bytes` bytes in all fit.
    pub fn check_room(&self, count: usize, bytes: usize) -> Result<()> {
        if self.in_use + count > self.max {
            bail!(
                CapacityExceeded,
                "the store uses {} of its {} distinct tags; {} more do not fit (reuse existing tags, or raise \
                 memory.store_capacity)",
                self.in_use,
                self.max,
                count
            );
        }
        let live: usize =
            (1..self.fresh as usize).map(|i| usize::from(self.text_len.get(i).copied().unwrap_or(0))).sum();
        if live + bytes > self.text_max {
            bail!(
                CapacityExceeded,
                "the store's tag text holds {} of {} bytes; {} more do not fit (STORE_TAG_ARENA_BYTES_PER_TAG)",
                live,
                self.text_max,
                bytes
            );
        }
        Ok(())
    }

    /// Frees `id` if no entry carries it (after an [`Tags::intern`] whose entry was not made).
    pub fn forget_if_unused(&mut self, id: u16) {
        let i = usize::from(id);
        if id == 0 || self.count.get(i).copied().unwrap_or(1) != 0 || self.raw_name(i).is_empty() {
            return;
        }
        let hash = fnv1a64(self.raw_name(i).as_bytes());
        let (text, off, len) = (&self.text, &self.off, &self.text_len);
        let hash_of = |id: u32| -> u64 {
            let j = id as usize;
            let s = off.get(j).copied().unwrap_or(0) as usize;
            let l = usize::from(len.get(j).copied().unwrap_or(0));
            fnv1a64(bytes::range(text, s, s + l))
        };
        if self.table.remove(hash, u32::from(id), hash_of) {
            if let Some(l) = self.text_len.get_mut(i) {
                *l = 0;
            }
            if let Some(c) = self.cap.get_mut(i) {
                *c = 0;
            }
            self.free.push(id);
            self.in_use = self.in_use.saturating_sub(1);
        }
    }

    /// One past the highest tag id handed out (for the checkpoint).
    pub fn id_limit(&self) -> u16 {
        self.fresh as u16
    }

    /// Interns `tag` under exactly `id` (loading a checkpoint into an empty table). Ids must
    /// come in increasing order; call [`Tags::finish_restore`] after the last.
    pub fn restore(&mut self, id: u16, tag: &str) -> Result<()> {
        if id == 0 || usize::from(id) > self.max || u32::from(id) < self.fresh || tag.is_empty() {
            bail!(Io, "tag id {} out of order or out of range", id);
        }
        if tag.len() > TAG_MAX_BYTES || self.text.len() + tag.len() > self.text_max || self.find(tag).is_some() {
            bail!(Io, "tag \"{}\" (id {}) does not fit or is there twice", tag, id);
        }
        let i = usize::from(id);
        if let (Some(o), Some(l)) = (self.off.get_mut(i), self.text_len.get_mut(i)) {
            *o = self.text.len() as u32;
            *l = tag.len() as u8;
        }
        self.text.extend_from_slice(tag.as_bytes());
        self.table.insert(fnv1a64(tag.as_bytes()), u32::from(id))?;
        self.fresh = u32::from(id) + 1;
        self.in_use += 1;
        Ok(())
    }

    /// Puts the ids below the highest restored one that were not restored on the free list.
    pub fn finish_restore(&mut self) {
        for i in 1..self.fresh as usize {
            if self.text_len.get(i) == Some(&0) {
                self.free.push(i as u16);
            }
        }
    }

    /// Whether the posting lists are built (they are not while a log is replayed).
    pub fn lists_kept(&self) -> bool {
        self.lists
    }

    /// Number of entries carrying `id`.
    pub fn count(&self, id: u16) -> u32 {
        self.count.get(usize::from(id)).copied().unwrap_or(0)
    }

    /// Number of archived entries carrying `id` (kept only while lists are kept).
    pub fn archived_count(&self, id: u16) -> u32 {
        self.archived.get(usize::from(id)).copied().unwrap_or(0)
    }

    /// The entries carrying `id`, oldest first (empty while lists are not kept).
    pub fn list(&self, id: u16) -> &[u32] {
        let i = usize::from(id);
        if !self.lists {
            return &[];
        }
        let (Some(&s), Some(&n)) = (self.start.get(i), self.count.get(i)) else { return &[] };
        // A tag's list is `count` ids from `start`; the layout keeps `start + cap` within `post`
        // and `count <= cap`.
        bytes::range(&self.post, s as usize, s as usize + n as usize)
    }

    /// Records that entry `entry` (archived or not) carries `id`.
    pub fn add(&mut self, id: u16, entry: EntryId, archived: bool) -> Result<()> {
        let i = usize::from(id);
        if id == 0 || i >= self.count.len() {
            bail!(Io, "tag id {} out of range", id);
        }
        if self.lists {
            if self.count.get(i) == self.cap.get(i) {
                self.grow(i)?;
            }
            let (s, n) = (self.start.get(i).copied().unwrap_or(0) as usize, self.count.get(i).copied().unwrap_or(0));
            let n = n as usize;
            let Some(list) = self.post.get_mut(s..s + n + 1) else { bail!(Io, "posting list out of range") };
            let at = list.get(..n).map_or(0, |l| l.partition_point(|&x| x < entry));
            if list.get(at) == Some(&entry) && at < n {
                return Ok(()); // already there
            }
            list.copy_within(at..n, at + 1);
            if let Some(x) = list.get_mut(at) {
                *x = entry;
            }
            self.total += 1;
            if archived {
                if let Some(a) = self.archived.get_mut(i) {
                    *a += 1;
                }
            }
        }
        if let Some(c) = self.count.get_mut(i) {
            *c += 1;
        }
        Ok(())
    }

    /// Records that entry `entry` no longer carries `id`; the last one frees the tag unless
    /// `keep` (the entry is about to carry it again under new tags).
    pub fn remove(&mut self, id: u16, entry: EntryId, archived: bool, keep: bool) {
        let i = usize::from(id);
        let n = self.count.get(i).copied().unwrap_or(0) as usize;
        if n == 0 {
            return;
        }
        if self.lists {
            let s = self.start.get(i).copied().unwrap_or(0) as usize;
            let Some(list) = self.post.get_mut(s..s + n) else { return };
            let at = list.partition_point(|&x| x < entry);
            if list.get(at) != Some(&entry) {
                return;
            }
            list.copy_within(at + 1..n, at);
            self.total = self.total.saturating_sub(1);
            if archived {
                if let Some(a) = self.archived.get_mut(i) {
                    *a = a.saturating_sub(1);
                }
            }
        }
        if let Some(c) = self.count.get_mut(i) {
            *c = c.saturating_sub(1);
        }
        if n == 1 && !keep {
            self.forget_if_unused(id);
        }
    }

    /// Counts an entry carrying `id` becoming archived (`true`) or not.
    pub fn set_archived(&mut self, id: u16, archived: bool) {
        if let Some(a) = self.archived.get_mut(usize::from(id)) {
            *a = if archived { a.saturating_add(1) } else { a.saturating_sub(1) };
        }
    }

    /// Lays out and fills every posting list from the entry table (after a replay or a
    /// checkpoint load), checking the lengths counted on the way.
    pub fn build_lists(&mut self, slots: &Slots) -> Result<()> {
        let n = (self.fresh as usize).min(self.count.len());
        let mut at = 0usize;
        for i in 1..n {
            let c = self.count.get(i).copied().unwrap_or(0);
            let cap = if c == 0 { 0 } else { c + slack(c) };
            if let (Some(s), Some(k)) = (self.start.get_mut(i), self.cap.get_mut(i)) {
                *s = at as u32;
                *k = cap;
            }
            at += cap as usize;
        }
        if at > self.post.len() {
            bail!(Io, "posting lists need {} ids, the arena holds {}", at, self.post.len());
        }
        self.used = at;
        self.count.iter_mut().take(n).for_each(|c| *c = 0);
        self.archived.iter_mut().take(n).for_each(|c| *c = 0);
        self.total = 0;
        self.lists = true;
        for id in slots.ids() {
            let archived = slots.archived(id);
            for &t in slots.tag_ids(id) {
                let i = usize::from(t);
                let (Some(&s), Some(&c), Some(&k)) = (self.start.get(i), self.count.get(i), self.cap.get(i)) else {
                    bail!(Io, "entry {} names tag id {} out of range", id, t);
                };
                if c >= k {
                    bail!(Io, "tag \"{}\" is carried by more entries than counted", self.raw_name(i));
                }
                if let Some(x) = self.post.get_mut((s + c) as usize) {
                    *x = id;
                }
                if let Some(c) = self.count.get_mut(i) {
                    *c += 1;
                }
                if archived {
                    if let Some(a) = self.archived.get_mut(i) {
                        *a += 1;
                    }
                }
                self.total += 1;
            }
        }
        // Tags counted during the replay but carried by nobody now (cannot happen when the
        // counts were right; freed rather than leaked).
        for i in 1..n {
            if self.count.get(i) == Some(&0) && !self.raw_name(i).is_empty() {
                self.forget_if_unused(i as u16);
            }
        }
        Ok(())
    }

    /// Gives list `i` room for more ids.
    fn grow(&mut self, i: usize) -> Result<()> {
        let (s, n, k) = (
            self.start.get(i).copied().unwrap_or(0) as usize,
            self.count.get(i).copied().unwrap_or(0) as usize,
            self.cap.get(i).copied().unwrap_or(0) as usize,
        );
        let want = n + n / 2 + 4;
        if s + k == self.used && s + want <= self.post.len() {
            self.used = s + want;
        } else {
            if self.used + want > self.post.len() || self.used - self.total > self.total / 2 + 65_536 {
                self.pack();
            }
            let s = self.start.get(i).copied().unwrap_or(0) as usize;
            if self.used + want > self.post.len() {
                bail!(
                    CapacityExceeded,
                    "the store's posting lists are full ({} ids); raise memory.store_capacity",
                    self.post.len()
                );
            }
            self.post.copy_within(s..s + n, self.used);
            if let Some(st) = self.start.get_mut(i) {
                *st = self.used as u32;
            }
            self.used += want;
        }
        if let Some(c) = self.cap.get_mut(i) {
            *c = want as u32;
        }
        Ok(())
    }

    /// Moves every list to the front of the arena, in place, keeping a little slack each.
    fn pack(&mut self) {
        let n = (self.fresh as usize).min(self.count.len());
        let mut order = core::mem::take(&mut self.order);
        order.clear();
        order.extend((1..n).filter(|&i| self.cap.get(i).is_some_and(|&c| c > 0)).map(|i| i as u16));
        crate::sort::sort_by_key(&mut order, |&i| self.start.get(usize::from(i)).copied().unwrap_or(0));
        let mut w = 0usize;
        for &t in &order {
            let i = usize::from(t);
            let (s, c, k) = (
                self.start.get(i).copied().unwrap_or(0) as usize,
                self.count.get(i).copied().unwrap_or(0),
                self.cap.get(i).copied().unwrap_or(0),
            );
            // Never more than the old room: each list moves down, never over the next one.
            let cap = if c == 0 { 0 } else { (c + slack(c)).min(k) };
            self.post.copy_within(s..s + c as usize, w);
            if let (Some(st), Some(kk)) = (self.start.get_mut(i), self.cap.get_mut(i)) {
                *st = w as u32;
                *kk = cap;
            }
            w += cap as usize;
        }
        self.used = w;
        self.order = order;
    }

    /// Moves live tag text to the front of the arena (only when it is full of dead text).
    fn compact_text(&mut self) {
        let n = (self.fresh as usize).min(self.count.len());
        let mut order = core::mem::take(&mut self.order);
        order.clear();
        order.extend((1..n).filter(|&i| self.text_len.get(i).is_some_and(|&l| l > 0)).map(|i| i as u16));
        crate::sort::sort_by_key(&mut order, |&i| self.off.get(usize::from(i)).copied().unwrap_or(0));
        let mut w = 0usize;
        for &id in &order {
            let i = usize::from(id);
            let start = self.off.get(i).copied().unwrap_or(0) as usize;
            let l = usize::from(self.text_len.get(i).copied().unwrap_or(0));
            if start + l <= self.text.len() {
                self.text.copy_within(start..start + l, w);
            }
            if let Some(o) = self.off.get_mut(i) {
                *o = w as u32;
            }
            w += l;
        }
        self.text.truncate(w);
        self.order = order;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intern_count_and_free() {
        let mut t = Tags::new(16, 64);
        t.lists = true;
        let a = t.intern("alpha").unwrap();
        let b = t.intern("beta").unwrap();
        assert_eq!(t.intern("alpha").unwrap(), a);
        t.add(a, 1, false).unwrap();
        t.add(a, 2, true).unwrap();
        t.add(b, 2, true).unwrap();
        assert_eq!((t.count(a), t.archived_count(a)), (2, 1));
        assert_eq!(t.name(b), "beta");
        t.remove(a, 1, false, false);
        assert_eq!(t.find("alpha"), Some(a));
        t.remove(a, 2, true, false);
        assert_eq!(t.find("alpha"), None);
        assert_eq!(t.in_use(), 1);
        let g = t.intern("gamma").unwrap();
        assert_eq!(g, a, "freed ids are reused");
        t.forget_if_unused(g);
        assert_eq!(t.find("gamma"), None);
        assert_eq!(t.find("beta"), Some(b));
    }

    #[test]
    fn lists_stay_sorted_through_inserts_moves_and_packs() {
        let mut t = Tags::new(8, 4096);
        t.lists = true;
        let mut model: Vec<Vec<u32>> = vec![Vec::new(); 6];
        let mut r = crate::testing::rng::Rng(12345);
        for step in 0..3000u32 {
            let x = r.next();
            let k = (x % 6) as usize;
            let e = (x >> 8) as u32 % 400;
            let has = model[k].binary_search(&e);
            match has {
                Ok(p) if step % 3 == 0 => {
                    let id = t.find(&format!("t{}", k)).unwrap();
                    t.remove(id, e, false, false);
                    model[k].remove(p);
                    if model[k].is_empty() {
                        // The tag was freed; take it again (it may come back under another id).
                        assert_eq!(t.find(&format!("t{}", k)), None);
                    }
                }
                Ok(_) => {}
                Err(p) => {
                    let id = t.intern(&format!("t{}", k)).unwrap();
                    t.add(id, e, false).unwrap();
                    model[k].insert(p, e);
                }
            }
        }
        for (k, want) in model.iter().enumerate() {
            let got = t.find(&format!("t{}", k)).map_or(&[][..], |id| t.list(id));
            assert_eq!(got, &want[..], "tag {}", k);
        }
        assert!(t.used <= t.post.len());
    }

    #[test]
    fn too_many_tags_names_the_setting() {
        let mut t = Tags::new(2, 16);
        let a = t.intern("a").unwrap();
        t.add(a, 0, false).unwrap();
        let b = t.intern("b").unwrap();
        t.add(b, 0, false).unwrap();
        let e = t.intern("c").unwrap_err();
        assert!(e.message().contains("memory.store_capacity"), "{}", e.message());
    }
}
