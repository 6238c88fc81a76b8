//! Making room: the capacity policy that keeps the live store under its capacity for good
//! (`memory.cleanup`), the clean-up batches it and `memory cleanup` run, `memory restore`,
//! and the recent-use memory that keeps a clean-up away from what the agent is working with.
//!
//! # The policy
//!
//! When a new entry would bring the live store to its threshold (`memory.cleanup.threshold`,
//! 90% of the capacity unless set), the store first moves entries out in one batch, down to
//! [`CLEANUP_MARGIN_PERCENT`] below the threshold (at least one entry when it is full), taking
//! first what was used least and longest ago: the fewest accesses, then the oldest last
//! access, then the oldest entry. It never takes an entry saved or loaded in the last
//! `keep_cycles` cycles ([`Store::note_use`]; a cycle is a [`Store::flush_access`]), nor the
//! task's product entries that the prompt shows (the newest ones, [`Store::protect_tags`]).
//! With `memory.cleanup.max_age_days`, [`Store::upkeep`] also moves entries unused that long.
//!
//! Every bounded table is covered the same way: when the tag table or the link table reaches
//! the threshold of its size, entries move out (the same order, the same shields) until it is
//! the margin below; a tag is freed when the last entry carrying it leaves, a link leaves the
//! live table with its entry (the cold store keeps it, by key, for a `restore`). So a task that gives every entry a tag of its own never stops at the tag table.
//!
//! Entries go to the cold store ([`super`]) unless the policy deletes them.
//!
//! # One batch, all or nothing
//!
//! 1. The moved entries are appended to `store.cold` as one group, then synced.
//! 2. Their deletions are appended to the log as one clean-up batch (`cleanup`, the `del`s,
//!    `batch_end`) in one write, then synced.
//! 3. Only then does the index let go of them (and the full-text index with it).
//!
//! Replay applies a clean-up batch's deletions at its `batch_end` only, and the writer drops
//! one a crash cut short; a cold group without its `batch_end` is dropped likewise. A crash
//! between 1 and 2 leaves the entries in both files: the same entries, shown once (see
//! [`super`]). No instant leaves an entry in neither.

use super::{self as cold, ColdFile};
use crate::error::Result;
use crate::limits::{
    CLEANUP_AGE_CHECK_SECONDS, CLEANUP_DEFAULT_KEEP_CYCLES, CLEANUP_DEFAULT_THRESHOLD_PERCENT, CLEANUP_MARGIN_PERCENT,
    CLEANUP_TABLE_BATCHES_MAX, PRODUCT_VIEW_MAX_ENTRIES, STORE_CLEANUP_BATCH_MAX, STORE_CLEANUP_RECENT_KEYS,
    STORE_MAX_LINKS,
};
use crate::memory::key::Key;
use crate::memory::log::{self, PutHead};
use crate::memory::store::{Cleanup, EntryId, Store};

/// `memory.cleanup`: when and how the agent makes room in the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Whether the agent makes room at all (`memory.cleanup.enable`).
    pub enable: bool,
    /// Fill, in percent of the capacity, at which it does (`memory.cleanup.threshold`).
    pub threshold_percent: u64,
    /// Entries saved or loaded in this many last cycles are never taken.
    pub keep_cycles: u64,
    /// Entries not used for this many seconds are moved by [`Store::upkeep`] (0: never).
    pub max_age_secs: u64,
    /// Delete instead of moving to the cold store (`memory.cleanup.action: "delete"`).
    pub delete: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            enable: true,
            threshold_percent: CLEANUP_DEFAULT_THRESHOLD_PERCENT,
            keep_cycles: CLEANUP_DEFAULT_KEEP_CYCLES,
            max_age_secs: 0,
            delete: false,
        }
    }
}

/// Which entries a clean-up may take (`memory cleanup`'s filters; all must hold).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Last access strictly before this time (Unix seconds).
    pub accessed_before: Option<u64>,
    /// At most this many accesses.
    pub max_hits: Option<u64>,
}

/// Clean-ups done since [`Store::take_moved`] last asked (the status line, the audit log).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moved {
    /// Entries taken out of the live store.
    pub entries: usize,
    /// Batches written.
    pub batches: usize,
    /// Whether they were deleted rather than moved to the cold store.
    pub deleted: bool,
}

/// How an entry was used, for [`Store::note_use`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// Saved (created or updated) by the agent's action.
    Saved,
    /// Loaded by the agent's action.
    Loaded,
}

/// The recent uses: a ring of (cycle, use, key), [`STORE_CLEANUP_RECENT_KEYS`] long.
pub(in crate::memory::store) struct Recent {
    ring: Vec<(u64, Use, Key)>,
    next: usize,
}

impl Recent {
    pub(in crate::memory::store) fn new() -> Recent {
        Recent { ring: Vec::new(), next: 0 }
    }

    fn note(&mut self, cycle: u64, how: Use, key: Key) {
        if self.ring.len() < STORE_CLEANUP_RECENT_KEYS {
            if self.ring.capacity() == 0 {
                self.ring.reserve_exact(STORE_CLEANUP_RECENT_KEYS);
            }
            self.ring.push((cycle, how, key));
            return;
        }
        if let Some(slot) = self.ring.get_mut(self.next) {
            *slot = (cycle, how, key);
        }
        self.next = (self.next + 1) % STORE_CLEANUP_RECENT_KEYS;
    }
}

/// The writer's clean-up state (see [`Store`]).
pub(in crate::memory::store) struct Upkeep {
    pub(in crate::memory::store) policy: Option<Policy>,
    /// Cycles seen (calls of `flush_access`).
    pub(in crate::memory::store) cycle: u64,
    pub(in crate::memory::store) recent: Recent,
    pub(in crate::memory::store) protect: Option<(Key, usize)>,
    /// Candidates: (hits, last access, id), a max-heap of the best `n` so far.
    heap: std::collections::BinaryHeap<(u32, u32, EntryId)>,
    /// The chosen entries, in id order.
    victims: Vec<EntryId>,
    /// Protected ids of this clean-up.
    shielded: Vec<EntryId>,
    pub(in crate::memory::store) cold: Option<ColdFile>,
    pub(in crate::memory::store) moved: Moved,
    last_age_check: u64,
}

impl Upkeep {
    pub(in crate::memory::store) fn new() -> Upkeep {
        Upkeep {
            policy: None,
            cycle: 0,
            recent: Recent::new(),
            protect: None,
            heap: std::collections::BinaryHeap::new(),
            victims: Vec::new(),
            shielded: Vec::new(),
            cold: None,
            moved: Moved::default(),
            last_age_check: 0,
        }
    }

    /// Reserves every buffer a clean-up uses, so that the agent's cycle never allocates for one.
    pub(in crate::memory::store) fn reserve(&mut self) {
        self.heap.reserve(STORE_CLEANUP_BATCH_MAX + 1);
        self.victims.reserve(STORE_CLEANUP_BATCH_MAX);
        self.shielded.reserve(STORE_CLEANUP_RECENT_KEYS + PRODUCT_VIEW_MAX_ENTRIES);
        self.recent.ring.reserve_exact(STORE_CLEANUP_RECENT_KEYS);
    }
}

impl Store {
    /// Sets the capacity policy (the agent, at start-up); `None` turns it off.
    pub fn set_policy(&mut self, policy: Option<Policy>) {
        self.upkeep.policy = policy;
        self.upkeep.reserve();
    }

    /// The capacity policy in force.
    pub fn policy(&self) -> Option<Policy> {
        self.upkeep.policy
    }

    /// The newest `shown` entries carrying every tag of `tags` (at most
    /// [`PRODUCT_VIEW_MAX_ENTRIES`]) are never taken by a clean-up: the task's product entries
    /// the prompt shows. `None` lifts it.
    pub fn protect_tags(&mut self, tags: Option<Key>, shown: usize) {
        self.upkeep.protect = tags.map(|k| (k, shown.min(PRODUCT_VIEW_MAX_ENTRIES)));
    }

    /// Notes that the agent saved or loaded `key` in this cycle: it is kept from clean-ups for
    /// `keep_cycles` cycles, and [`Store::link_with_recent`] links what is saved next to it.
    pub fn note_use(&mut self, key: &Key, how: Use) {
        let cycle = self.upkeep.cycle;
        self.upkeep.recent.note(cycle, how, *key);
    }

    /// Links the entry `key` (just saved) with the entries saved in the same cycle and with an
    /// entry loaded in this or the previous cycle; returns how many links were made. Links are
    /// advisory: a full link table is reported by the error, and nothing else changes.
    pub fn link_with_recent(&mut self, key: &Key) -> Result<usize> {
        let Some(id) = self.find(key) else { return Ok(0) };
        let cycle = self.upkeep.cycle;
        let mut made = 0;
        for i in 0..self.upkeep.recent.ring.len() {
            let Some(&(c, how, other)) = self.upkeep.recent.ring.get(i) else { continue };
            let near = match how {
                Use::Saved => c == cycle,
                Use::Loaded => c == cycle || c + 1 == cycle,
            };
            if !near || other == *key {
                continue;
            }
            let Some(o) = self.find(&other) else { continue };
            if o != id && !self.links.contains(id, o) {
                self.link(id, o)?;
                made += 1;
            }
        }
        Ok(made)
    }

    /// The clean-ups done since the last call (and forgets them).
    pub fn take_moved(&mut self) -> Moved {
        core::mem::take(&mut self.upkeep.moved)
    }

    /// Entries in the cold store, when the writer has opened it (after its first clean-up).
    pub fn cold_entries(&self) -> Option<u64> {
        self.upkeep.cold.as_ref().map(ColdFile::entries)
    }

    /// Counts a cycle (called by [`Store::flush_access`]).
    pub(in crate::memory::store) fn count_cycle(&mut self) {
        self.upkeep.cycle += 1;
    }

    /// Periodic upkeep, once a cycle (the agent): with `max_age_secs` set, at most once per
    /// [`CLEANUP_AGE_CHECK_SECONDS`], moves entries not used for that long (one batch).
    pub fn upkeep(&mut self, now: u64) -> Result<usize> {
        let Some(p) = self.upkeep.policy.filter(|p| p.enable && p.max_age_secs > 0) else { return Ok(0) };
        if now < self.upkeep.last_age_check.saturating_add(CLEANUP_AGE_CHECK_SECONDS) {
            return Ok(0);
        }
        self.upkeep.last_age_check = now;
        let filter = Filter { accessed_before: Some(now.saturating_sub(p.max_age_secs)), max_hits: None };
        let mode = if p.delete { Cleanup::Delete } else { Cleanup::Cold };
        self.select(STORE_CLEANUP_BATCH_MAX, &filter, true);
        self.move_victims(mode)
    }

    /// Before a new entry bringing `new_tags` tags the store does not have yet: when the live
    /// store is at its threshold, moves entries out in one batch (see the module
    /// documentation); then, when the tag table or the link table is at the same threshold of
    /// its size, moves entries out until it is [`CLEANUP_MARGIN_PERCENT`] below (tags no entry
    /// carries any more are freed as their last entry leaves; links die with their entries),
    /// in at most [`CLEANUP_TABLE_BATCHES_MAX`] batches. No bounded table ends learning. Does
    /// nothing without a policy, inside an import's batch, or read-only.
    pub(in crate::memory::store) fn make_room_if_due(&mut self, new_tags: usize) -> Result<()> {
        let Some(p) = self.upkeep.policy.filter(|p| p.enable) else { return Ok(()) };
        if self.log.in_batch() || self.log.read_only() {
            return Ok(());
        }
        let threshold = p.threshold_percent.clamp(1, 100);
        let mode = if p.delete { Cleanup::Delete } else { Cleanup::Cold };
        let n = excess(self.slots.live(), self.cap, threshold, 1);
        if n > 0 {
            self.select(n.min(STORE_CLEANUP_BATCH_MAX), &Filter::default(), true);
            self.move_victims(mode)?;
        }
        for _ in 0..CLEANUP_TABLE_BATCHES_MAX {
            // Tags to free, as entries: an entry takes its tags with it (those no other entry
            // carries), about as many as the mean an entry holds now.
            let per_entry = (self.tags.in_use() / self.slots.live().max(1)).max(1);
            let tags = excess(self.tags.in_use() + new_tags, self.tags.max(), threshold, new_tags).div_ceil(per_entry);
            // A moved entry takes its links with it, often more than one.
            let links = excess(self.links.len() + 1, STORE_MAX_LINKS, threshold, 1).div_ceil(2);
            let n = tags.max(links).min(STORE_CLEANUP_BATCH_MAX);
            if n == 0 {
                break;
            }
            self.select(n, &Filter::default(), true);
            if self.move_victims(mode)? == 0 {
                break;
            }
        }
        Ok(())
    }

    /// `memory cleanup`: moves (or deletes) every entry that passes `filter`, in batches of
    /// at most [`STORE_CLEANUP_BATCH_MAX`], least used first; returns how many. Each batch is
    /// all or nothing.
    pub fn cleanup_where(&mut self, filter: &Filter, mode: Cleanup) -> Result<usize> {
        let mut total = 0;
        loop {
            self.select(STORE_CLEANUP_BATCH_MAX, filter, false);
            if self.upkeep.victims.is_empty() {
                return Ok(total);
            }
            total += self.move_victims(mode)?;
        }
    }

    /// The entries [`Store::cleanup_where`] would take, least used first (`--dry-run`), up to
    /// [`STORE_CLEANUP_BATCH_MAX`] (`more` says how many matched beyond).
    pub fn cleanup_preview(&mut self, filter: &Filter, out: &mut Vec<EntryId>) -> usize {
        let matched = self.select(STORE_CLEANUP_BATCH_MAX, filter, false);
        out.clear();
        out.extend_from_slice(&self.upkeep.victims);
        self.upkeep.victims.clear();
        let slots = &self.slots;
        crate::sort::sort_by_key(out, |&id| slots.get(id).map(|s| (s.hits, s.accessed, id)));
        matched
    }

    /// Chooses up to `n` entries passing `filter` (and, for the agent, `shield`: not used
    /// recently, not the product's), least used first, into `victims` in id order; returns how
    /// many passed the filter in all.
    fn select(&mut self, n: usize, filter: &Filter, shield: bool) -> usize {
        self.upkeep.heap.clear();
        self.upkeep.victims.clear();
        self.upkeep.shielded.clear();
        if shield {
            let keep = self.upkeep.policy.map_or(CLEANUP_DEFAULT_KEEP_CYCLES, |p| p.keep_cycles);
            for i in 0..self.upkeep.recent.ring.len() {
                let Some(&(c, _, key)) = self.upkeep.recent.ring.get(i) else { continue };
                if c.saturating_add(keep) <= self.upkeep.cycle {
                    continue;
                }
                if let Some(id) = self.find(&key) {
                    if self.upkeep.shielded.len() < STORE_CLEANUP_RECENT_KEYS {
                        self.upkeep.shielded.push(id);
                    }
                }
            }
        }
        if let Some((set, key, shown)) =
            self.upkeep.protect.filter(|_| shield).and_then(|(k, n)| self.tagset_of(&k).map(|s| (s, k, n)))
        {
            // The newest entries of the product, as many as the prompt shows.
            let mut left = shown;
            for id in self.slots.ids().rev() {
                if left == 0 {
                    break;
                }
                let tags = self.slots.tag_ids(id);
                if set.iter().take(key.tag_count()).all(|t| tags.contains(t)) {
                    self.upkeep.shielded.push(id);
                    left -= 1;
                }
            }
        }
        let mut matched = 0;
        let end = self.slots.next_id() as EntryId;
        for id in 0..end {
            let Some(s) = self.slots.get(id) else { continue };
            if filter.accessed_before.is_some_and(|t| u64::from(s.accessed) >= t)
                || filter.max_hits.is_some_and(|h| u64::from(s.hits) > h)
                || self.upkeep.shielded.contains(&id)
            {
                continue;
            }
            matched += 1;
            let cand = (s.hits, s.accessed, id);
            let heap = &mut self.upkeep.heap;
            if heap.len() < n {
                heap.push(cand);
            } else if heap.peek().is_some_and(|top| cand < *top) {
                heap.pop();
                heap.push(cand);
            }
        }
        let u = &mut self.upkeep;
        // Drained into the reserved list: no allocation.
        for (_, _, id) in u.heap.drain() {
            u.victims.push(id);
        }
        crate::sort::sort(&mut u.victims);
        matched
    }

    /// Moves the chosen entries out (see the module documentation); returns how many.
    fn move_victims(&mut self, mode: Cleanup) -> Result<usize> {
        let n = self.upkeep.victims.len();
        if n == 0 {
            return Ok(0);
        }
        self.log.check_writable()?;
        if matches!(mode, Cleanup::Cold) {
            self.write_cold_group()?;
        }
        // The live batch: one write, one sync.
        self.wbuf.clear();
        log::encode_cleanup(&mut self.wbuf, n as u64)?;
        for i in 0..n {
            let Some(&id) = self.upkeep.victims.get(i) else { continue };
            log::encode_del(&mut self.wbuf, id)?;
        }
        log::encode_batch_end(&mut self.wbuf)?;
        self.log.append(self.wbuf.as_slice())?;
        for i in 0..n {
            let Some(&id) = self.upkeep.victims.get(i) else { continue };
            self.uninstall(id);
            self.recall_sync(id);
        }
        let m = &mut self.upkeep.moved;
        m.entries += n;
        m.batches += 1;
        m.deleted |= matches!(mode, Cleanup::Delete);
        self.upkeep.victims.clear();
        if matches!(mode, Cleanup::Cold) {
            self.cold_recall_sync();
        }
        self.compact_if_needed();
        Ok(n)
    }

    /// Appends the chosen entries to the cold store as one group and syncs it.
    fn write_cold_group(&mut self) -> Result<()> {
        if self.upkeep.cold.is_none() {
            self.upkeep.cold = Some(ColdFile::open(&self.dir, &mut self.rbuf)?);
        }
        let n = self.upkeep.victims.len();
        let Some(mut cold) = self.upkeep.cold.take() else { bail!(Internal, "the cold store is not open (a bug)") };
        let start = cold.len();
        let res = (|| -> Result<()> {
            self.wbuf.clear();
            log::encode_cleanup(&mut self.wbuf, n as u64)?;
            cold.write(self.wbuf.as_slice(), start)?;
            for i in 0..n {
                let Some(&id) = self.upkeep.victims.get(i) else { continue };
                let Some(s) = self.slots.get(id) else { continue };
                self.read_value(id)?;
                let head = PutHead {
                    id,
                    ver: s.ver,
                    created: u64::from(s.created),
                    accessed: u64::from(s.accessed),
                    hits: u64::from(s.hits),
                    archived: s.archived,
                };
                self.wbuf.clear();
                let names = self.slots.tag_ids(id).iter().map(|&t| self.tags.name(t));
                log::encode_cold_put(&mut self.wbuf, cold.version(), &head, names, &self.vbuf)?;
                cold.write(self.wbuf.as_slice(), start)?;
            }
            // Their links, by the keys that outlive the ids, so that a restore links them again.
            for p in 0..self.links.len() {
                let Some(&(a, b)) = self.links.pairs().get(p) else { break };
                let victims = &self.upkeep.victims;
                if !(victims.contains(&a) || victims.contains(&b)) {
                    continue;
                }
                let (Some(ka), Some(kb)) = (self.key(a), self.key(b)) else { continue };
                self.wbuf.clear();
                log::encode_cold_link(&mut self.wbuf, ka.tags(), kb.tags())?;
                cold.write(self.wbuf.as_slice(), start)?;
            }
            self.wbuf.clear();
            log::encode_batch_end(&mut self.wbuf)?;
            cold.write(self.wbuf.as_slice(), start)?;
            cold.commit(start, n as u64)
        })();
        if res.is_err() {
            cold.abort(start);
        }
        self.upkeep.cold = Some(cold);
        res
    }

    /// Writes `value` under `key` straight to the cold store, as one synced group: the last
    /// resort of paging when the live store is full and nothing in it may be moved, so that
    /// working memory can still shrink and nothing is lost. `memory show`, `search --cold`,
    /// `export` and `restore` find it there.
    pub fn put_cold(&mut self, key: &Key, value: &str, now: u64) -> Result<()> {
        crate::memory::store::check_value(value)?;
        self.log.check_writable()?;
        if self.find(key).is_some() {
            // A cold copy would be hidden by the live entry (one key, one current value): the
            // live entry takes the value (a replace needs no room).
            return self.put(key, value, now).map(|_| ());
        }
        if self.upkeep.cold.is_none() {
            self.upkeep.cold = Some(ColdFile::open(&self.dir, &mut self.rbuf)?);
        }
        let Some(cold) = self.upkeep.cold.as_mut() else { bail!(Internal, "the cold store is not open (a bug)") };
        let start = cold.len();
        let head = PutHead { id: 0, ver: 1, created: now, accessed: now, hits: 0, archived: false };
        self.wbuf.clear();
        log::encode_cleanup(&mut self.wbuf, 1)?;
        log::encode_cold_put(&mut self.wbuf, cold.version(), &head, key.tags(), value)?;
        log::encode_batch_end(&mut self.wbuf)?;
        cold.write(self.wbuf.as_slice(), start)?;
        cold.commit(start, 1)?;
        self.cold_recall_sync();
        Ok(())
    }

    /// Appends `entries` (key, fields, value) to the cold store as one group, synced once
    /// (`memory import` of an export's cold tier): all or none of them after a crash. Keys
    /// the live store holds are the caller's to leave out (their cold copies would be hidden).
    pub fn put_cold_group(&mut self, entries: &[(Key, PutHead, String)]) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        for (_, _, value) in entries {
            crate::memory::store::check_value(value)?;
        }
        self.log.check_writable()?;
        if self.upkeep.cold.is_none() {
            self.upkeep.cold = Some(ColdFile::open(&self.dir, &mut self.rbuf)?);
        }
        let Some(cold) = self.upkeep.cold.as_mut() else { bail!(Internal, "the cold store is not open (a bug)") };
        let start = cold.len();
        let wbuf = &mut self.wbuf;
        let res = (|| -> Result<()> {
            wbuf.clear();
            log::encode_cleanup(wbuf, entries.len() as u64)?;
            cold.write(wbuf.as_slice(), start)?;
            for (key, head, value) in entries {
                wbuf.clear();
                log::encode_cold_put(wbuf, cold.version(), &PutHead { id: 0, ..*head }, key.tags(), value)?;
                cold.write(wbuf.as_slice(), start)?;
            }
            wbuf.clear();
            log::encode_batch_end(wbuf)?;
            cold.write(wbuf.as_slice(), start)?;
            cold.commit(start, entries.len() as u64)
        })();
        if res.is_err() {
            cold.abort(start);
        }
        res?;
        self.cold_recall_sync();
        Ok(())
    }
}

pub use super::rewrite::Restored;

/// How many to take out of a table holding `used` of `size` so that it ends
/// [`CLEANUP_MARGIN_PERCENT`] below `threshold` percent of its size: 0 while it is below the
/// threshold; at least `need` when it is full (room for what comes next).
fn excess(used: usize, size: usize, threshold: u64, need: usize) -> usize {
    let (used, size) = (used as u64, size as u64);
    let trigger = (size * threshold).div_ceil(100).max(1);
    if used < trigger {
        return 0;
    }
    let target = size * threshold.saturating_sub(CLEANUP_MARGIN_PERCENT) / 100;
    let mut n = used.saturating_sub(target);
    if used >= size {
        n = n.max(need as u64);
    }
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Reads the cold store: see [`cold::scan`].
pub use cold::scan as scan_cold;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::memory::key::normalize;
    use crate::memory::store::recall::Ranked;
    use crate::memory::store::{Cleanup, LOG_NAME};
    use crate::testing::temp_dir;
    use std::collections::BTreeMap;

    fn k(s: &str) -> Key {
        normalize(s).unwrap()
    }

    /// Every entry of the cold store, by key (the newest copy wins), values decoded.
    fn cold_map(d: &std::path::Path) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        cold::scan(d, &mut |e| {
            let mut v = String::new();
            log::decode_str(e.value_escaped, &mut v)?;
            m.insert(e.key.as_str().to_string(), v);
            Ok(true)
        })
        .unwrap();
        m
    }

    #[test]
    fn a_store_of_four_takes_three_hundred_saves_and_keeps_every_one() {
        let d = temp_dir("cleanup-four");
        let mut s = Store::open_with_capacity(&d, 4).unwrap();
        s.set_policy(Some(Policy::default()));
        for i in 0..300u64 {
            let key = k(&format!("fact,n{}", i));
            s.put(&key, &format!("fact number {}", i), 1000 + i).unwrap();
            s.note_use(&key, Use::Saved);
            s.flush_access().unwrap();
            assert!(s.len() <= 4, "live {} at save {}", s.len(), i);
        }
        let moved = s.take_moved();
        assert!(moved.entries >= 296 && !moved.deleted, "{moved:?}");
        drop(s);
        let mut s = Store::open_with_capacity(&d, 4).unwrap();
        let cold = cold_map(&d);
        for i in 0..300u64 {
            let key = k(&format!("fact,n{}", i));
            let want = format!("fact number {}", i);
            match s.load(&key, 1).unwrap() {
                Some(v) => assert_eq!(v, want),
                None => assert_eq!(cold.get(key.as_str()), Some(&want), "{} lost", key),
            }
        }
        // The newest entries are the live ones (least used and oldest go first).
        assert!(s.find(&k("fact,n299")).is_some());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn recent_and_product_entries_stay_and_the_full_store_says_why() {
        let d = temp_dir("cleanup-shield");
        let mut s = Store::open_with_capacity(&d, 4).unwrap();
        s.set_policy(Some(Policy { keep_cycles: 100, ..Policy::default() }));
        s.protect_tags(Some(k("product")), 1);
        s.put(&k("product,old"), "an old product entry, no longer shown", 1).unwrap();
        s.put(&k("product,a"), "the product's entry the prompt shows", 1).unwrap();
        s.put(&k("filler"), "v", 1).unwrap();
        s.put(&k("one,more"), "v", 3).unwrap();
        s.put(&k("two,more"), "v", 3).unwrap();
        // The old product entry made room (least used, longest ago); the shown one stays.
        assert!(s.find(&k("product,old")).is_none() && s.find(&k("product,a")).is_some());
        for gone in ["one,more", "two,more", "filler"] {
            s.delete(&k(gone)).unwrap();
        }
        for i in 0..3 {
            let key = k(&format!("used,{}", i));
            s.put(&key, "v", 2).unwrap();
            s.note_use(&key, Use::Saved);
        }
        let e = s.put(&k("one,more"), "v", 3).unwrap_err();
        assert_eq!(e.code(), crate::error::Code::CapacityExceeded);
        assert!(e.message().contains("memory.cleanup.keep_cycles"), "{}", e.message());
        assert!(e.message().contains("memory.store_capacity"), "{}", e.message());
        // Off: the message says to turn it on.
        s.set_policy(Some(Policy { enable: false, ..Policy::default() }));
        let e = s.put(&k("one,more"), "v", 3).unwrap_err();
        assert!(e.message().contains("memory.cleanup.enable"), "{}", e.message());
        // Paging's last resort: straight to the cold store.
        s.put_cold(&k("paged,page"), "paged text", 4).unwrap();
        assert_eq!(cold_map(&d).get("page,paged").map(String::as_str), Some("paged text"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn moved_entries_leave_the_full_text_index() {
        let d = temp_dir("cleanup-fts");
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.put(&k("a"), "zebra crossing", 1).unwrap();
        s.put(&k("b"), "zebra stripes", 50).unwrap();
        let mut r = Ranked::new();
        s.rank("zebra", 10, &mut r).unwrap();
        assert_eq!(r.len(), 2);
        let n = s.cleanup_where(&Filter { accessed_before: Some(10), max_hits: None }, Cleanup::Cold).unwrap();
        assert_eq!(n, 1);
        // Out of the live index, into the cold one: one search still finds both, each saying
        // where it lives.
        let where_ = |s: &mut Store, r: &Ranked| -> Vec<(String, bool)> {
            r.hits()
                .iter()
                .map(|h| (s.hit_info(h.id).unwrap().unwrap().key.as_str().to_string(), h.is_cold()))
                .collect()
        };
        s.rank("zebra", 10, &mut r).unwrap();
        let mut got = where_(&mut s, &r);
        got.sort();
        assert_eq!(got, [("a".to_string(), true), ("b".to_string(), false)]);
        assert!(s.contains(r.hits().iter().find(|h| !h.is_cold()).unwrap().id));
        assert!(s.find(&k("a")).is_none(), "a is no longer live");
        drop(s);
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.rank("zebra", 10, &mut r).unwrap();
        let mut got = where_(&mut s, &r);
        got.sort();
        assert_eq!(got, [("a".to_string(), true), ("b".to_string(), false)], "after a reopen too");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_cleanup_batch_counts_only_whole() {
        let d = temp_dir("cleanup-whole");
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        for i in 0..5 {
            s.put(&k(&format!("e{}", i)), "v", i).unwrap();
        }
        let whole = s.log_bytes();
        assert_eq!(s.cleanup_where(&Filter { accessed_before: Some(3), max_hits: None }, Cleanup::Cold).unwrap(), 3);
        let after = s.log_bytes();
        drop(s);
        // The batch cut anywhere before its batch_end: none of it counts, and the writer cuts
        // it off; the cold copies are the same entries.
        let full = std::fs::read(d.join(LOG_NAME)).unwrap();
        for cut in [whole + 1, whole + 40, after - 1] {
            std::fs::write(d.join(LOG_NAME), &full[..cut as usize]).unwrap();
            let s = Store::open_read_only(&d).unwrap();
            assert_eq!(s.len(), 5, "read-only, cut at {}", cut);
            drop(s);
            let s = Store::open_with_capacity(&d, 64).unwrap();
            assert_eq!(s.len(), 5, "cut at {}", cut);
            assert_eq!(s.log_bytes(), whole, "rolled back to the batch's start");
        }
        std::fs::write(d.join(LOG_NAME), &full).unwrap();
        let s = Store::open_with_capacity(&d, 64).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(cold_map(&d).len(), 3);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_cold_store_drops_a_torn_tail_and_an_unfinished_group() {
        let d = temp_dir("cleanup-cold-tail");
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        for i in 0..4 {
            s.put(&k(&format!("e{}", i)), "v", i).unwrap();
        }
        s.cleanup_where(&Filter { accessed_before: Some(2), max_hits: None }, Cleanup::Cold).unwrap();
        let first = std::fs::metadata(d.join(cold::COLD_NAME)).unwrap().len();
        s.cleanup_where(&Filter { accessed_before: Some(4), max_hits: None }, Cleanup::Cold).unwrap();
        drop(s);
        let full = std::fs::read(d.join(cold::COLD_NAME)).unwrap();
        for cut in [first + 3, full.len() as u64 - 1, full.len() as u64 - 30] {
            std::fs::write(d.join(cold::COLD_NAME), &full[..cut as usize]).unwrap();
            let mut buf = Vec::new();
            let c = ColdFile::open(&d, &mut buf).unwrap();
            assert_eq!(c.len(), first, "cut at {}", cut);
            assert_eq!(c.entries(), 2);
            assert_eq!(std::fs::metadata(d.join(cold::COLD_NAME)).unwrap().len(), first);
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn links_survive_a_move_to_the_cold_store_and_back() {
        let d = temp_dir("cleanup-cold-links");
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        let a = s.put(&k("a"), "old a", 5).unwrap().id;
        let b = s.put(&k("b"), "old b", 6).unwrap().id;
        let c = s.put(&k("c"), "new c", 50).unwrap().id;
        s.link(a, b).unwrap();
        s.link(a, c).unwrap();
        // a and b go cold together, c stays live: the live table lets go of both links.
        s.cleanup_where(&Filter { accessed_before: Some(10), max_hits: None }, Cleanup::Cold).unwrap();
        assert!(s.find(&k("a")).is_none() && s.find(&k("b")).is_none());
        assert_eq!(s.link_pairs().len(), 0);
        let mut kept = Vec::new();
        cold::scan_links(&d, &mut |x, y| {
            kept.push((x.as_str().to_string(), y.as_str().to_string()));
            Ok(())
        })
        .unwrap();
        kept.sort();
        assert_eq!(kept, [("a".to_string(), "b".to_string()), ("a".to_string(), "c".to_string())]);
        // a comes back: linked again to c (live); its link to b waits in the cold store.
        let Restored::Back(a2) = s.restore(&k("a")).unwrap() else { panic!("not restored") };
        let c2 = s.find(&k("c")).unwrap();
        assert_eq!(c2, c);
        assert!(s.linked(a2, c2), "a-c again");
        assert_eq!(s.link_pairs().len(), 1);
        // b comes back (after a reopen and a compaction of the cold store): linked to a again.
        drop(s);
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.compact_cold().unwrap();
        let Restored::Back(b2) = s.restore(&k("b")).unwrap() else { panic!("not restored") };
        let a2 = s.find(&k("a")).unwrap();
        assert!(s.linked(a2, b2) && s.linked(a2, c2), "a-b and a-c: {:?}", s.link_pairs());
        // Nothing left in the cold store, links neither.
        let mut left = 0;
        cold::scan_links(&d, &mut |_, _| {
            left += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(left, 0);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// The links `store.cold` keeps, in the file's order, each pair of keys lower first (a link
    /// has no direction).
    fn cold_links(d: &std::path::Path) -> Vec<(String, String)> {
        let mut kept = Vec::new();
        cold::scan_links(d, &mut |x, y| {
            let (x, y) = (x.as_str().to_string(), y.as_str().to_string());
            kept.push(if x <= y { (x, y) } else { (y, x) });
            Ok(())
        })
        .unwrap();
        kept
    }

    #[test]
    fn a_link_recorded_twice_in_the_cold_store_is_kept_once_by_its_compaction() {
        let d = temp_dir("cleanup-cold-link-twice");
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        let a = s.put(&k("a"), "old a", 5).unwrap().id;
        let b = s.put(&k("b"), "b", 200).unwrap().id;
        s.link(a, b).unwrap();
        // a goes cold (its link to b, live, recorded with it), is saved again and linked to b
        // again, and goes cold again: store.cold holds two copies of a and the link twice.
        s.cleanup_where(&Filter { accessed_before: Some(10), max_hits: None }, Cleanup::Cold).unwrap();
        let a2 = s.put(&k("a"), "new a", 60).unwrap().id;
        s.link(a2, b).unwrap();
        s.cleanup_where(&Filter { accessed_before: Some(100), max_hits: None }, Cleanup::Cold).unwrap();
        assert!(s.find(&k("a")).is_none() && s.find(&k("b")).is_some());
        let ab = ("a".to_string(), "b".to_string());
        assert_eq!(cold_links(&d), [ab.clone(), ab.clone()], "recorded twice");
        // The compaction keeps a's newest copy and the link once, and says the file shrank.
        let (before, after) = s.compact_cold().unwrap();
        assert!(after < before, "{} -> {}", before, after);
        assert_eq!(cold_links(&d), [ab], "kept once");
        assert_eq!(cold_map(&d).into_iter().collect::<Vec<_>>(), [("a".to_string(), "new a".to_string())]);
        // So after a reopen a comes back with its newest value, linked to b once.
        drop(s);
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        let Restored::Back(a3) = s.restore(&k("a")).unwrap() else { panic!("not restored") };
        assert_eq!(s.value(a3).unwrap(), "new a");
        let b2 = s.find(&k("b")).unwrap();
        assert!(s.linked(a3, b2));
        assert_eq!(s.link_pairs().len(), 1, "{:?}", s.link_pairs());
        assert!(cold_links(&d).is_empty() && cold_map(&d).is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn restore_brings_an_entry_back_once() {
        let d = temp_dir("cleanup-restore");
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.put(&k("old,fact"), "an old fact", 5).unwrap();
        s.put(&k("new"), "x", 50).unwrap();
        s.cleanup_where(&Filter { accessed_before: Some(10), max_hits: None }, Cleanup::Cold).unwrap();
        assert!(s.find(&k("fact,old")).is_none());
        let cold_before = std::fs::read(d.join(cold::COLD_NAME)).unwrap();
        let Restored::Back(id) = s.restore(&k("fact,old")).unwrap() else { panic!("not restored") };
        assert!(cold_map(&d).is_empty(), "the cold store no longer holds it");
        // A crash between the live put and the cold store's rewrite leaves it in both: a
        // second restore finds it back already and only drops the cold copy.
        std::fs::write(d.join(cold::COLD_NAME), &cold_before).unwrap();
        assert_eq!(s.restore(&k("fact,old")).unwrap(), Restored::Back(id), "in both after a crash: back already");
        assert!(cold_map(&d).is_empty());
        assert_eq!(s.restore(&k("fact,old")).unwrap_err().code(), crate::error::Code::NotFound);
        let info = s.info(id).unwrap();
        assert_eq!(info.created, 5);
        assert_eq!(s.value(id).unwrap(), "an old fact");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn saves_link_with_the_same_cycle_and_a_load_just_before() {
        let d = temp_dir("cleanup-links");
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.put(&k("a"), "a", 1).unwrap();
        s.note_use(&k("a"), Use::Loaded);
        s.flush_access().unwrap(); // next cycle
        s.put(&k("b"), "b", 2).unwrap();
        assert_eq!(s.link_with_recent(&k("b")).unwrap(), 1, "saved right after a load of a");
        s.note_use(&k("b"), Use::Saved);
        s.put(&k("c"), "c", 2).unwrap();
        assert_eq!(s.link_with_recent(&k("c")).unwrap(), 2, "same cycle as b, and after a's load");
        s.flush_access().unwrap();
        s.flush_access().unwrap();
        s.put(&k("d"), "d", 3).unwrap();
        assert_eq!(s.link_with_recent(&k("d")).unwrap(), 0, "nothing recent");
        let (a, b) = (s.find(&k("a")).unwrap(), s.find(&k("b")).unwrap());
        assert!(s.linked(a, b));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
