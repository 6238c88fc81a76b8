//! The persistent tagged store: values in an append-only log on disk (`store.log`, format in
//! [`crate::memory::log`]), a fixed-capacity index in RAM.
//!
//! # Durability
//!
//! Every change is encoded into a reserved write buffer, written at the end of the log and
//! `fdatasync`ed *before* the in-RAM index changes and before the call returns: an `Ok` means
//! the change survives a `kill -9` or a power cut. If the write or the sync fails (ENOSPC,
//! EIO, ...), the index keeps its old state, the log is cut back to its previous length (best
//! effort), the error is `PERSIST_FAILED`, and the store refuses further writes until
//! [`Store::reload`] has re-read and verified the log: after a failed `fsync` the kernel may
//! have dropped the dirty pages, so retrying it and trusting the answer would be a lie.
//!
//! On open the log is replayed from the top. A record with a bad frame (no newline, wrong
//! checksum) at the end is a torn tail from a crash: it is dropped with a warning and the file
//! is truncated to the last good record. A bad record followed by good ones (damage, not a
//! crash) is skipped with a warning and counted in [`Stats::corrupt_records`]. A file that is
//! not a store log at all is moved aside (`store.log.corrupt-<time>`) and a new log started.
//!
//! # RAM
//!
//! Per entry, a 32-byte slot (log offset and length, times as `u32` Unix seconds, access count,
//! version, content hash, flags), a 16-byte tag set (up to 8 tag ids) and 8 bytes of key hash
//! table; plus, shared,
//! the tag table and the link table (see `limits.rs`). [`Store::ram_bytes`] measures the total;
//! at [`STORE_MAX_ENTRIES`] it is about 62 bytes per entry. Values never stay in RAM.
//!
//! Times are kept as `u32` seconds (valid until 2106; later times are clamped).
//!
//! # Queries
//!
//! A query scans the tag sets (16 bytes per entry in one dense array, each compared with a
//! fixed 8-wide loop the compiler vectorises) and reads a slot only for entries whose tags
//! match; there are no posting lists to maintain on writes. See
//! `benches/bench_store.rs` for the measured latency.
//!
//! # Compaction
//!
//! Superseded `put`s, `touch` and `del` records are garbage. When garbage passes
//! [`STORE_COMPACT_GARBAGE_PERCENT`] of the log (and [`STORE_COMPACT_MIN_GARBAGE_BYTES`]), the
//! live entries and links are written to a new log beside the old one, which is synced and
//! renamed over it (the same atomic-rename discipline as `memory::atomic`), then re-read to
//! verify and to rebuild the index.

use crate::error::{Error, Result};
use crate::fixed::FixedBuf;
use crate::limits::{
    KEY_MAX_TAGS, STORE_COMPACT_GARBAGE_PERCENT, STORE_COMPACT_MIN_GARBAGE_BYTES, STORE_MAX_ENTRIES, STORE_MAX_LINKS,
    STORE_QUERY_MAX_RESULTS, STORE_RECORD_MAX_BYTES, STORE_SEARCH_MAX_BYTES, STORE_VALUE_MAX_BYTES,
};
use crate::memory::atomic::sync_dir;
use crate::memory::hash::fnv1a64;
use crate::memory::index::{IdTable, TagTable, NO_TAG};
use crate::memory::key::Key;
use crate::memory::log::{self, PutHead, Record};
use crate::memory::query::{relevance_ppm, Archived, Hit, Query, Results};
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// An entry's persistent id (its index slot). Stable across reloads and compaction.
pub type EntryId = u32;

/// File name of the log inside the data directory.
pub const LOG_NAME: &str = "store.log";

const LIVE: u8 = 1;
const ARCHIVED: u8 = 2;
const DIRTY_ACCESS: u8 = 4;

/// An entry's tag ids, padded with [`NO_TAG`]: 16 bytes, kept apart from the slot so a query
/// scans one dense array (see the module documentation).
type TagSet = [u16; KEY_MAX_TAGS];

const EMPTY_TAGS: TagSet = [NO_TAG; KEY_MAX_TAGS];

/// One index slot: 32 bytes (its tags are in the parallel `tagsets` array).
#[derive(Clone, Copy, Default)]
struct Slot {
    off_lo: u32,
    off_hi: u8,
    flags: u8,
    ntags: u8,
    rec_len: u32,
    created: u32,
    accessed: u32,
    hits: u32,
    ver: u32,
    hash: u32,
}

impl Slot {
    fn live(&self) -> bool {
        self.flags & LIVE != 0
    }
    fn archived(&self) -> bool {
        self.flags & ARCHIVED != 0
    }
    fn offset(&self) -> u64 {
        u64::from(self.off_lo) | (u64::from(self.off_hi) << 32)
    }
}

/// The tag ids of entry `id` (empty for a dead or unknown id). A free function over the two
/// arrays, so callers can hold it while writing other fields of the store.
fn tag_ids_in<'a>(tagsets: &'a [TagSet], slots: &[Slot], id: EntryId) -> &'a [u16] {
    let n = slots.get(id as usize).filter(|s| s.live()).map_or(0, |s| usize::from(s.ntags));
    tagsets.get(id as usize).and_then(|t| t.get(..n)).unwrap_or(&[])
}

/// Whether a tag set holds `tag`. The full fixed-width compare (padding is `NO_TAG`, which no
/// query tag equals) compiles to a couple of vector instructions.
#[inline]
fn set_has(set: &TagSet, tag: u16) -> bool {
    set.contains(&tag)
}

fn clamp32(t: u64) -> u32 {
    u32::try_from(t).unwrap_or(u32::MAX)
}

fn hash32(value: &str) -> u32 {
    let h = fnv1a64(value.as_bytes());
    (h ^ (h >> 32)) as u32
}

fn key_hash(ids: &[u16]) -> u64 {
    let mut h = fnv1a64(&[]);
    for id in ids {
        h = crate::memory::hash::fnv1a64_continue(h, &id.to_le_bytes());
    }
    h
}

/// What a store or update did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A new entry.
    Created,
    /// An existing entry got a new value (its version went up).
    Updated,
    /// The entry already held exactly this value: nothing was written.
    Unchanged,
}

/// The answer of a store or update.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Put {
    /// The entry.
    pub id: EntryId,
    /// Its version now.
    pub version: u32,
    /// What happened.
    pub outcome: Outcome,
}

/// An entry's metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryInfo {
    /// Persistent id.
    pub id: EntryId,
    /// The tags.
    pub key: Key,
    /// Version (1 on creation).
    pub version: u32,
    /// Creation time, Unix seconds.
    pub created: u64,
    /// Last access, Unix seconds.
    pub accessed: u64,
    /// Access count.
    pub hits: u64,
    /// Out of default query results.
    pub archived: bool,
    /// 32-bit fold of the value's FNV-1a 64 hash.
    pub content_hash: u32,
}

/// Store statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Live entries (archived included).
    pub entries: usize,
    /// Archived entries.
    pub archived: usize,
    /// Entry capacity.
    pub capacity: usize,
    /// Distinct tags in use.
    pub tags: usize,
    /// Links between entries.
    pub links: usize,
    /// Log size in bytes.
    pub log_bytes: u64,
    /// Bytes of the log that hold live state.
    pub live_bytes: u64,
    /// Bytes of superseded records.
    pub garbage_bytes: u64,
    /// Oldest and newest `created` (0 when empty).
    pub oldest_created: u64,
    /// See `oldest_created`.
    pub newest_created: u64,
    /// The most accessed entry.
    pub most_accessed: Option<EntryId>,
    /// Accesses, all entries together.
    pub total_hits: u64,
    /// Damaged records skipped when the log was read.
    pub corrupt_records: u64,
    /// Bytes at the end of the log that were not a whole record yet when a read-only store
    /// read it (a record the agent is writing, or one a crash cut short; only the agent, which
    /// holds the lock, drops such a tail). Always 0 for the writer.
    pub unfinished_tail_bytes: u64,
    /// RAM held by the index, bytes.
    pub ram_bytes: usize,
}

/// What clean-up does with old entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cleanup {
    /// Archive them (out of default results, still on disk).
    Archive,
    /// Delete them.
    Delete,
}

/// The store. See the module documentation.
pub struct Store {
    dir: PathBuf,
    path: PathBuf,
    file: File,
    len: u64,
    slots: Vec<Slot>,
    tagsets: Vec<TagSet>,
    cap: usize,
    live: usize,
    /// No slot below this index is free (so creating does not rescan the full prefix).
    free_hint: usize,
    /// One past the highest live slot: scans stop here.
    high: usize,
    keys: IdTable,
    tags: TagTable,
    links: Vec<(u32, u32)>,
    live_bytes: u64,
    header_bytes: u64,
    corrupt: u64,
    /// See [`Stats::unfinished_tail_bytes`].
    unfinished_tail: u64,
    wbuf: FixedBuf,
    rbuf: Vec<u8>,
    vbuf: String,
    poisoned: bool,
    read_only: bool,
    #[cfg(test)]
    fail_next_write: bool,
}

/// Approximate bytes of one link record, for garbage accounting.
const LINK_RECORD_BYTES: u64 = 40;

impl Store {
    /// Opens (or creates) the store in `dir`, with [`STORE_MAX_ENTRIES`] entries.
    pub fn open(dir: &Path) -> Result<Store> {
        Store::open_with_capacity(dir, STORE_MAX_ENTRIES)
    }

    /// Opens (or creates) the store in `dir` with room for `entries` entries (at most
    /// [`STORE_MAX_ENTRIES`]; a log naming a larger id is `CAPACITY_EXCEEDED`).
    pub fn open_with_capacity(dir: &Path, entries: usize) -> Result<Store> {
        let cap = entries.clamp(1, STORE_MAX_ENTRIES);
        let path = dir.join(LOG_NAME);
        if !path.exists() {
            // A new log appears whole (header included) or not at all.
            let mut header = FixedBuf::with_capacity("store log header", 128);
            log::encode_header(&mut header)?;
            crate::memory::atomic::write_file(dir, LOG_NAME, header.as_slice())?;
        }
        // A compaction cut short by a crash leaves its temp file; the log itself is intact.
        let _ = fs::remove_file(dir.join(format!(".{}.compact", LOG_NAME)));
        let file = open_log(&path)?;
        Store::build(dir, path, file, cap, false)
    }

    /// Opens the store in `dir` for reading only (the `memory` commands that only look, while
    /// an agent may be running): nothing is ever written, truncated or moved, so a record the
    /// agent is appending right now is ignored rather than cut off as a torn tail. Writes are
    /// `PERSIST_FAILED`. A missing log is `NOT_FOUND`.
    pub fn open_read_only(dir: &Path) -> Result<Store> {
        let path = dir.join(LOG_NAME);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                bail!(NotFound, "no store at {} (it is created by the first run)", path.display())
            }
            Err(e) => bail!(Io, "opening {} failed: {}", path.display(), e),
        };
        Store::build(dir, path, file, STORE_MAX_ENTRIES, true)
    }

    fn build(dir: &Path, path: PathBuf, file: File, cap: usize, read_only: bool) -> Result<Store> {
        let mut s = Store {
            dir: dir.to_path_buf(),
            path,
            file,
            len: 0,
            slots: vec![Slot::default(); cap],
            tagsets: vec![EMPTY_TAGS; cap],
            cap,
            live: 0,
            free_hint: 0,
            high: 0,
            keys: IdTable::new(cap),
            tags: TagTable::new(),
            links: Vec::with_capacity(STORE_MAX_LINKS),
            live_bytes: 0,
            header_bytes: 0,
            corrupt: 0,
            unfinished_tail: 0,
            wbuf: FixedBuf::with_capacity("store write buffer (STORE_RECORD_MAX_BYTES)", STORE_RECORD_MAX_BYTES),
            rbuf: Vec::with_capacity(log::READ_SCRATCH_BYTES),
            vbuf: String::with_capacity(STORE_VALUE_MAX_BYTES),
            poisoned: false,
            read_only,
            #[cfg(test)]
            fail_next_write: false,
        };
        s.replay()?;
        Ok(s)
    }

    /// Re-reads the log from disk, rebuilding the index (and clearing the refusal to write
    /// after a failed write).
    pub fn reload(&mut self) -> Result<()> {
        self.poisoned = false;
        let reopened = if self.read_only {
            File::open(&self.path).map_err(|e| err!(Io, "opening {} failed: {}", self.path.display(), e))
        } else {
            open_log(&self.path)
        };
        let res = reopened.and_then(|f| {
            self.file = f;
            self.replay()
        });
        if res.is_err() {
            // A half-rebuilt index must not be written through.
            self.poisoned = true;
        }
        res
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Live entries.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Entry capacity.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Bytes of RAM the index holds (slots, key table, tag table, link table). The read, write
    /// and value buffers (about 3 × `STORE_RECORD_MAX_BYTES`, independent of the entry count)
    /// are not included.
    pub fn ram_bytes(&self) -> usize {
        self.slots.capacity() * core::mem::size_of::<Slot>()
            + self.tagsets.capacity() * core::mem::size_of::<TagSet>()
            + self.keys.ram_bytes()
            + self.tags.ram_bytes()
            + self.links.capacity() * core::mem::size_of::<(u32, u32)>()
    }

    /// Size of the log in bytes.
    pub fn log_bytes(&self) -> u64 {
        self.len
    }

    // ---------------------------------------------------------------------------------------
    // Reading
    // ---------------------------------------------------------------------------------------

    /// The entry with exactly these tags, without counting an access.
    pub fn find(&self, key: &Key) -> Option<EntryId> {
        let mut ids = [NO_TAG; KEY_MAX_TAGS];
        let mut n = 0;
        for (slot, tag) in ids.iter_mut().zip(key.tags()) {
            *slot = self.tags.find(tag)?;
            n += 1;
        }
        let want = ids.get(..n).unwrap_or(&[]);
        self.keys.find(key_hash(want), |id| tag_ids_in(&self.tagsets, &self.slots, id) == want)
    }

    /// Whether `id` is a live entry.
    pub fn contains(&self, id: EntryId) -> bool {
        self.slot(id).is_some()
    }

    fn slot(&self, id: EntryId) -> Option<&Slot> {
        self.slots.get(id as usize).filter(|s| s.live())
    }

    /// The key of entry `id`.
    pub fn key(&self, id: EntryId) -> Option<Key> {
        self.slot(id)?;
        Key::from_tags(tag_ids_in(&self.tagsets, &self.slots, id).iter().map(|&t| self.tags.name(t))).ok()
    }

    /// The metadata of entry `id`.
    pub fn info(&self, id: EntryId) -> Option<EntryInfo> {
        let s = self.slot(id)?;
        Some(EntryInfo {
            id,
            key: self.key(id)?,
            version: s.ver,
            created: u64::from(s.created),
            accessed: u64::from(s.accessed),
            hits: u64::from(s.hits),
            archived: s.archived(),
            content_hash: s.hash,
        })
    }

    /// Counts an access to `id` (in RAM; persisted by [`Store::flush_access`]). Access
    /// statistics are advisory: a crash loses the ones not yet flushed, never a value.
    pub fn touch(&mut self, id: EntryId, now: u64) {
        if let Some(s) = self.slots.get_mut(id as usize).filter(|s| s.live()) {
            s.hits = s.hits.saturating_add(1);
            s.accessed = clamp32(now);
            s.flags |= DIRTY_ACCESS;
        }
    }

    /// The value of entry `id`, read from the log into the store's value buffer (valid until
    /// the next call that reads a value). `NOT_FOUND` for a dead id; a record that no longer
    /// checks out is `IO` naming the offset.
    pub fn value(&mut self, id: EntryId) -> Result<&str> {
        self.read_value(id)?;
        Ok(self.vbuf.as_str())
    }

    /// `storage_load`: the value for exactly `key`, counting an access; `None` if absent.
    pub fn load(&mut self, key: &Key, now: u64) -> Result<Option<&str>> {
        let Some(id) = self.find(key) else { return Ok(None) };
        self.touch(id, now);
        self.read_value(id)?;
        Ok(Some(self.vbuf.as_str()))
    }

    fn read_value(&mut self, id: EntryId) -> Result<()> {
        let Some(s) = self.slot(id).copied() else { bail!(NotFound, "no store entry with id {}", id) };
        let off = s.offset();
        let n = s.rec_len as usize;
        self.rbuf.clear();
        self.rbuf.resize(n, 0);
        self.file.read_exact_at(&mut self.rbuf, off).map_err(|e| {
            err!(Io, "reading the record of entry {} at byte {} of {} failed: {}", id, off, self.path.display(), e)
        })?;
        let line = self.rbuf.strip_suffix(b"\n").unwrap_or(&self.rbuf);
        let rec = log::decode(line).map_err(|e| {
            e.with_code(crate::error::Code::Io).context(format_args!("{} at byte {}", self.path.display(), off))
        })?;
        let Record::Put { head, value_escaped, .. } = rec else {
            bail!(Io, "{} at byte {}: expected the put record of entry {}", self.path.display(), off, id);
        };
        if head.id != id {
            bail!(Io, "{} at byte {}: record is for entry {}, not {}", self.path.display(), off, head.id, id);
        }
        self.vbuf.clear();
        log::decode_str(value_escaped, &mut self.vbuf)?;
        Ok(())
    }

    // ---------------------------------------------------------------------------------------
    // Writing
    // ---------------------------------------------------------------------------------------

    /// `storage_save`: stores `value` under exactly `key`, creating the entry or replacing its
    /// value (version + 1). Storing the value an entry already holds writes nothing
    /// ([`Outcome::Unchanged`]): that is the content de-duplication.
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

    /// Deletes the entry `key` (and its links). `NOT_FOUND` if absent.
    pub fn delete(&mut self, key: &Key) -> Result<EntryId> {
        let Some(id) = self.find(key) else { bail!(NotFound, "no store entry with tags \"{}\" to delete", key) };
        self.delete_id(id)?;
        self.compact_if_needed();
        Ok(id)
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
        self.check_link_ends(a, b)?;
        if self.linked(a, b) {
            return Ok(());
        }
        if self.links.len() >= STORE_MAX_LINKS {
            bail!(CapacityExceeded, "the store holds {} links already (STORE_MAX_LINKS)", STORE_MAX_LINKS);
        }
        self.wbuf.clear();
        log::encode_link(&mut self.wbuf, a.min(b), a.max(b), true)?;
        self.commit()?;
        self.links.push((a.min(b), a.max(b)));
        self.live_bytes += LINK_RECORD_BYTES;
        Ok(())
    }

    /// Removes the link between two entries, if any.
    pub fn unlink(&mut self, a: EntryId, b: EntryId) -> Result<()> {
        if !self.linked(a, b) {
            return Ok(());
        }
        self.wbuf.clear();
        log::encode_link(&mut self.wbuf, a.min(b), a.max(b), false)?;
        self.commit()?;
        self.drop_link(a, b);
        Ok(())
    }

    /// Whether `a` and `b` are linked.
    pub fn linked(&self, a: EntryId, b: EntryId) -> bool {
        self.links.contains(&(a.min(b), a.max(b)))
    }

    /// The entries related to `id`, in link order.
    pub fn related(&self, id: EntryId, out: &mut Results) {
        out.clear();
        let limit = out.limit(STORE_QUERY_MAX_RESULTS);
        for &(a, b) in &self.links {
            let other = if a == id {
                b
            } else if b == id {
                a
            } else {
                continue;
            };
            if let Some(s) = self.slot(other) {
                out.push(
                    Hit { id: other, relevance_ppm: 0, created: u64::from(s.created), hits: u64::from(s.hits) },
                    limit,
                );
            }
        }
    }

    /// Persists the access statistics counted by [`Store::touch`] since the last flush, as
    /// small `touch` records (one sync for all of them). Call once per cycle.
    pub fn flush_access(&mut self) -> Result<usize> {
        let mut written = 0;
        let mut pending = 0;
        self.wbuf.clear();
        for i in 0..self.high {
            let Some(s) = self.slots.get(i).copied() else { break };
            if !s.live() || s.flags & DIRTY_ACCESS == 0 {
                continue;
            }
            if self.wbuf.remaining() < 128 {
                self.commit()?;
                self.clear_dirty(i);
                written += pending;
                pending = 0;
                self.wbuf.clear();
            }
            log::encode_touch(&mut self.wbuf, i as u32, u64::from(s.accessed), u64::from(s.hits))?;
            pending += 1;
        }
        if pending > 0 {
            self.commit()?;
            self.clear_dirty(self.slots.len());
            written += pending;
        }
        self.compact_if_needed();
        Ok(written)
    }

    /// Clears the dirty-access flag of slots before `end` (their touches are written).
    fn clear_dirty(&mut self, end: usize) {
        for s in self.slots.iter_mut().take(end) {
            s.flags &= !DIRTY_ACCESS;
        }
    }

    /// Archives or deletes every entry last accessed before `cutoff` (Unix seconds); returns
    /// how many. Entries already archived are left alone by [`Cleanup::Archive`].
    pub fn cleanup(&mut self, cutoff: u64, action: Cleanup, now: u64) -> Result<usize> {
        let mut n = 0;
        for i in 0..self.high {
            let Some(s) = self.slots.get(i).copied() else { break };
            if !s.live() || u64::from(s.accessed) >= cutoff {
                continue;
            }
            match action {
                Cleanup::Delete => self.delete_id(i as u32)?,
                Cleanup::Archive if !s.archived() => self.set_archived_id(i as u32, true, now)?,
                Cleanup::Archive => continue,
            }
            n += 1;
        }
        self.compact_if_needed();
        Ok(n)
    }

    fn check_link_ends(&self, a: EntryId, b: EntryId) -> Result<()> {
        for id in [a, b] {
            if !self.contains(id) {
                bail!(NotFound, "no store entry with id {} to link", id);
            }
        }
        if a == b {
            bail!(KeyInvalid, "an entry cannot be linked to itself (id {})", a);
        }
        Ok(())
    }

    fn drop_link(&mut self, a: EntryId, b: EntryId) {
        let pair = (a.min(b), a.max(b));
        if let Some(i) = self.links.iter().position(|&p| p == pair) {
            self.links.remove(i);
            self.live_bytes = self.live_bytes.saturating_sub(LINK_RECORD_BYTES);
        }
    }

    fn create(&mut self, key: &Key, value: &str, now: u64) -> Result<Put> {
        check_value(value)?;
        let start = self.free_hint.min(self.slots.len());
        let found = self.slots.get(start..).and_then(|rest| rest.iter().position(|s| !s.live()));
        let Some(id) = found.map(|i| i + start) else {
            bail!(
                CapacityExceeded,
                "the store is full: {} entries (STORE_MAX_ENTRIES); delete or clean up first",
                self.cap
            );
        };
        let mut ids = [NO_TAG; KEY_MAX_TAGS];
        let mut n = 0;
        for (slot, tag) in ids.iter_mut().zip(key.tags()) {
            match self.tags.acquire(tag) {
                Ok(t) => *slot = t,
                Err(e) => {
                    ids.iter().take(n).for_each(|&t| self.tags.release(t));
                    return Err(e);
                }
            }
            n += 1;
        }
        let head = PutHead { id: id as u32, ver: 1, created: now, accessed: now, hits: 0, archived: false };
        self.wbuf.clear();
        let written = log::encode_put(&mut self.wbuf, &head, key.tags(), value).and_then(|_| self.commit());
        let at = match written {
            Ok(at) => at,
            Err(e) => {
                ids.iter().take(n).for_each(|&t| self.tags.release(t));
                return Err(e);
            }
        };
        let rec_len = self.wbuf.len() as u32;
        let slot = Slot {
            off_lo: at as u32,
            off_hi: (at >> 32) as u8,
            flags: LIVE,
            ntags: n as u8,
            rec_len,
            created: clamp32(now),
            accessed: clamp32(now),
            hits: 0,
            ver: 1,
            hash: hash32(value),
        };
        self.install(id as u32, slot, ids)?;
        self.compact_if_needed();
        Ok(Put { id: id as u32, version: 1, outcome: Outcome::Created })
    }

    fn replace(&mut self, id: EntryId, value: &str, expected: Option<u32>, now: u64) -> Result<Put> {
        check_value(value)?;
        let Some(s) = self.slot(id).copied() else { bail!(NotFound, "no store entry with id {}", id) };
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
        if s.hash == hash32(value) {
            self.read_value(id)?;
            if self.vbuf == value {
                return Ok(Put { id, version: s.ver, outcome: Outcome::Unchanged });
            }
        }
        let head = PutHead {
            id,
            ver: s.ver.wrapping_add(1),
            created: u64::from(s.created),
            accessed: now,
            hits: u64::from(s.hits),
            archived: s.archived(),
        };
        self.write_put(id, &head, value)?;
        self.compact_if_needed();
        Ok(Put { id, version: head.ver, outcome: Outcome::Updated })
    }

    /// Writes a `put` for live entry `id` with `head` and `value` (its tags unchanged) and
    /// points the slot at it.
    fn write_put(&mut self, id: EntryId, head: &PutHead, value: &str) -> Result<()> {
        if self.slot(id).is_none() {
            bail!(NotFound, "no store entry with id {}", id);
        }
        self.wbuf.clear();
        let names = tag_ids_in(&self.tagsets, &self.slots, id).iter().map(|&t| self.tags.name(t));
        log::encode_put(&mut self.wbuf, head, names, value)?;
        let at = self.commit()?;
        let rec_len = self.wbuf.len() as u32;
        if let Some(slot) = self.slots.get_mut(id as usize) {
            self.live_bytes = self.live_bytes.saturating_sub(u64::from(slot.rec_len)) + u64::from(rec_len);
            slot.off_lo = at as u32;
            slot.off_hi = (at >> 32) as u8;
            slot.rec_len = rec_len;
            slot.ver = head.ver;
            slot.accessed = clamp32(head.accessed);
            slot.hash = hash32(value);
            slot.hits = clamp32(head.hits);
            // The put carries the access statistics: nothing left to flush for this entry.
            slot.flags = (if head.archived { slot.flags | ARCHIVED } else { slot.flags & !ARCHIVED }) & !DIRTY_ACCESS;
        }
        Ok(())
    }

    /// Rewrites entry `id`'s current value with new metadata (archive flag, tags).
    fn rewrite_meta(&mut self, id: EntryId, archived: bool, now: u64) -> Result<()> {
        let Some(s) = self.slot(id).copied() else { bail!(NotFound, "no store entry with id {}", id) };
        self.read_value(id)?;
        let value = core::mem::take(&mut self.vbuf);
        let head = PutHead {
            id,
            ver: s.ver.wrapping_add(1),
            created: u64::from(s.created),
            accessed: now,
            hits: u64::from(s.hits),
            archived,
        };
        let res = self.write_put(id, &head, &value);
        self.vbuf = value;
        res
    }

    fn set_archived_id(&mut self, id: EntryId, archived: bool, now: u64) -> Result<()> {
        match self.slot(id) {
            None => bail!(NotFound, "no store entry with id {}", id),
            Some(s) if s.archived() == archived => Ok(()),
            Some(_) => self.rewrite_meta(id, archived, now),
        }
    }

    fn retag(&mut self, key: &Key, new_key: &Key, now: u64) -> Result<Key> {
        let Some(id) = self.find(key) else { bail!(NotFound, "no store entry with tags \"{}\"", key) };
        if new_key == key {
            return Ok(*new_key);
        }
        if self.find(new_key).is_some() {
            bail!(KeyInvalid, "cannot change tags of \"{}\": an entry with tags \"{}\" exists already", key, new_key);
        }
        let Some(old) = self.slot(id).copied() else { bail!(NotFound, "no store entry with id {}", id) };
        let mut ids = [NO_TAG; KEY_MAX_TAGS];
        let mut n = 0;
        for (slot, tag) in ids.iter_mut().zip(new_key.tags()) {
            match self.tags.acquire(tag) {
                Ok(t) => *slot = t,
                Err(e) => {
                    ids.iter().take(n).for_each(|&t| self.tags.release(t));
                    return Err(e);
                }
            }
            n += 1;
        }
        let res = (|| {
            self.read_value(id)?;
            let value = core::mem::take(&mut self.vbuf);
            let head = PutHead {
                id,
                ver: old.ver.wrapping_add(1),
                created: u64::from(old.created),
                accessed: now,
                hits: u64::from(old.hits),
                archived: old.archived(),
            };
            self.wbuf.clear();
            let r = log::encode_put(&mut self.wbuf, &head, new_key.tags(), &value).and_then(|_| self.commit());
            self.vbuf = value;
            r.map(|at| (at, head))
        })();
        let (at, head) = match res {
            Ok(x) => x,
            Err(e) => {
                ids.iter().take(n).for_each(|&t| self.tags.release(t));
                return Err(e);
            }
        };
        let rec_len = self.wbuf.len() as u32;
        self.unindex(id);
        let slot = Slot {
            off_lo: at as u32,
            off_hi: (at >> 32) as u8,
            flags: LIVE | (old.flags & ARCHIVED),
            ntags: n as u8,
            rec_len,
            created: old.created,
            accessed: clamp32(now),
            hits: old.hits,
            ver: head.ver,
            hash: old.hash,
        };
        self.install(id, slot, ids)?;
        self.compact_if_needed();
        Ok(*new_key)
    }

    fn delete_id(&mut self, id: EntryId) -> Result<()> {
        if self.slot(id).is_none() {
            bail!(NotFound, "no store entry with id {}", id);
        }
        self.wbuf.clear();
        log::encode_del(&mut self.wbuf, id)?;
        self.commit()?;
        self.uninstall(id);
        Ok(())
    }

    /// Puts a slot (whose tag references are already acquired) into the index.
    fn install(&mut self, id: EntryId, slot: Slot, tags: TagSet) -> Result<()> {
        let hash = key_hash(tags.get(..usize::from(slot.ntags)).unwrap_or(&[]));
        let (Some(dst), Some(dst_tags)) = (self.slots.get_mut(id as usize), self.tagsets.get_mut(id as usize)) else {
            bail!(
                CapacityExceeded,
                "entry id {} is beyond the store's capacity of {} (STORE_MAX_ENTRIES)",
                id,
                self.cap
            );
        };
        *dst = slot;
        *dst_tags = tags;
        self.high = self.high.max(id as usize + 1);
        if self.free_hint == id as usize {
            self.free_hint += 1;
        }
        self.live += 1;
        self.live_bytes += u64::from(slot.rec_len);
        self.keys.insert(hash, id)
    }

    /// Takes a live slot out of the index (tags released, links dropped), without writing:
    /// the entry is gone.
    fn uninstall(&mut self, id: EntryId) {
        if self.slot(id).is_none() {
            return;
        }
        let before = self.links.len();
        self.links.retain(|&(a, b)| a != id && b != id);
        let dropped = (before - self.links.len()) as u64;
        self.live_bytes = self.live_bytes.saturating_sub(dropped * LINK_RECORD_BYTES);
        self.unindex(id);
    }

    /// Takes a live slot out of the key table and releases its tags, keeping its links: the
    /// entry is about to be installed again under the same id (new tags or a replayed put).
    fn unindex(&mut self, id: EntryId) {
        let Some(s) = self.slot(id).copied() else { return };
        let (slots, sets) = (&self.slots, &self.tagsets);
        let mine = tag_ids_in(sets, slots, id);
        self.keys.remove(key_hash(mine), id, |other| key_hash(tag_ids_in(sets, slots, other)));
        for &t in mine {
            self.tags.release(t);
        }
        if let Some(set) = self.tagsets.get_mut(id as usize) {
            *set = EMPTY_TAGS;
        }
        self.live_bytes = self.live_bytes.saturating_sub(u64::from(s.rec_len));
        if let Some(slot) = self.slots.get_mut(id as usize) {
            *slot = Slot::default();
        }
        self.free_hint = self.free_hint.min(id as usize);
        while self.high > 0 && !self.slots.get(self.high - 1).is_some_and(|s| s.live()) {
            self.high -= 1;
        }
        self.live -= 1;
    }

    /// Appends the write buffer at the end of the log and syncs it; returns the offset it was
    /// written at. See the module documentation for the failure rules.
    fn commit(&mut self) -> Result<u64> {
        if self.read_only {
            bail!(PersistFailed, "{} was opened read-only", self.path.display());
        }
        if self.poisoned {
            bail!(
                PersistFailed,
                "{}: an earlier write failed; the store refuses writes until it is reopened",
                self.path.display()
            );
        }
        let at = self.len;
        let bytes = self.wbuf.as_slice();
        #[cfg(test)]
        let injected = core::mem::take(&mut self.fail_next_write);
        #[cfg(not(test))]
        let injected = false;
        let res = if injected {
            Err(std::io::Error::other("injected EIO"))
        } else {
            self.file.write_all_at(bytes, at).and_then(|_| self.file.sync_data())
        };
        match res {
            Ok(()) => {
                self.len += bytes.len() as u64;
                Ok(at)
            }
            Err(e) => {
                let _ = self.file.set_len(at);
                self.poisoned = true;
                bail!(
                    PersistFailed,
                    "appending {} bytes to {} failed ({}); the change was not made",
                    bytes.len(),
                    self.path.display(),
                    e
                )
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // Queries
    // ---------------------------------------------------------------------------------------

    /// Runs `q`, leaving the best results in `out` (cleared first). Allocates nothing.
    pub fn query(&self, q: &Query, out: &mut Results) {
        out.clear();
        let limit = out.limit(q.max_results);
        let mut req = [NO_TAG; KEY_MAX_TAGS];
        let mut nreq = 0;
        if let Some(k) = &q.required {
            for (slot, t) in req.iter_mut().zip(k.tags()) {
                match self.tags.find(t) {
                    Some(id) => *slot = id,
                    None => return, // nobody carries it
                }
                nreq += 1;
            }
        }
        let mut opt = [NO_TAG; KEY_MAX_TAGS];
        let mut nopt = 0;
        if let Some(k) = &q.optional {
            for t in k.tags() {
                if let Some(id) = self.tags.find(t) {
                    if let Some(slot) = opt.get_mut(nopt) {
                        *slot = id;
                        nopt += 1;
                    }
                }
            }
            if nopt == 0 {
                return; // nobody carries any of them
            }
        }
        let mut exc = [NO_TAG; KEY_MAX_TAGS];
        let mut nexc = 0;
        if let Some(k) = &q.excluded {
            for t in k.tags() {
                if let Some(id) = self.tags.find(t) {
                    if let Some(slot) = exc.get_mut(nexc) {
                        *slot = id;
                        nexc += 1;
                    }
                }
            }
        }
        let req = req.get(..nreq).unwrap_or(&[]);
        let opt = opt.get(..nopt).unwrap_or(&[]);
        let exc = exc.get(..nexc).unwrap_or(&[]);
        // Relevance compares the entry's tags with required ∪ optional (as a set).
        let n_query = q.required.map_or(0, |k| k.tag_count())
            + q.optional.map_or(0, |o| o.tags().filter(|t| !q.required.is_some_and(|r| r.has_tag(t))).count());
        let mut rel = [NO_TAG; 2 * KEY_MAX_TAGS];
        let mut nrel = 0;
        for &t in req.iter().chain(opt.iter()) {
            if !rel.contains(&t) {
                if let Some(slot) = rel.get_mut(nrel) {
                    *slot = t;
                    nrel += 1;
                }
            }
        }
        let rel = rel.get(..nrel).unwrap_or(&[]);
        let (cmin, cmax) = q.created;
        let (hmin, hmax) = q.hits;
        let high = self.high;
        let sets = self.tagsets.get(..high).unwrap_or(&[]);
        let slots = self.slots.get(..high).unwrap_or(&[]);
        for (i, (set, s)) in sets.iter().zip(slots.iter()).enumerate() {
            // Tags first: they are the dense array; the slot is read only for candidates.
            if !req.iter().all(|&t| set_has(set, t))
                || exc.iter().any(|&t| set_has(set, t))
                || (!opt.is_empty() && !opt.iter().any(|&t| set_has(set, t)))
            {
                continue;
            }
            if s.flags & LIVE == 0 || !q.archived.admits(s.archived()) {
                continue;
            }
            let created = u64::from(s.created);
            let hits = u64::from(s.hits);
            if created < cmin || created > cmax || hits < hmin || hits > hmax {
                continue;
            }
            let shared = rel.iter().filter(|&&t| set_has(set, t)).count();
            let relevance = relevance_ppm(shared, usize::from(s.ntags), n_query);
            out.offer(Hit { id: i as u32, relevance_ppm: relevance, created, hits }, q.sort, limit);
        }
    }

    /// Text search over values: entries whose value contains `needle` (ASCII case-insensitive),
    /// in id order, at most `max_results`. Reads values from the log, at most
    /// [`STORE_SEARCH_MAX_BYTES`] of them per call (`out.truncated()` says it stopped there).
    /// An empty needle matches nothing.
    pub fn search_text(
        &mut self,
        needle: &str,
        archived: Archived,
        max_results: usize,
        out: &mut Results,
    ) -> Result<()> {
        out.clear();
        if needle.is_empty() {
            return Ok(());
        }
        let limit = out.limit(max_results);
        let mut read = 0u64;
        for i in 0..self.high {
            let Some(s) = self.slots.get(i).copied() else { break };
            if !s.live() || !archived.admits(s.archived()) {
                continue;
            }
            if read + u64::from(s.rec_len) > STORE_SEARCH_MAX_BYTES {
                out.set_truncated();
                break;
            }
            read += u64::from(s.rec_len);
            self.read_value(i as u32)?;
            if contains_ignore_ascii_case(&self.vbuf, needle) {
                let hit =
                    Hit { id: i as u32, relevance_ppm: 0, created: u64::from(s.created), hits: u64::from(s.hits) };
                if !out.push(hit, limit) {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Live entry ids in id order (for export and listing).
    pub fn ids(&self) -> impl Iterator<Item = EntryId> + '_ {
        self.slots.iter().take(self.high).enumerate().filter(|(_, s)| s.live()).map(|(i, _)| i as u32)
    }

    /// Statistics.
    pub fn stats(&self) -> Stats {
        let mut st = Stats {
            capacity: self.cap,
            tags: self.tags.in_use(),
            links: self.links.len(),
            log_bytes: self.len,
            live_bytes: self.live_bytes.min(self.len),
            garbage_bytes: self.garbage(),
            corrupt_records: self.corrupt,
            unfinished_tail_bytes: self.unfinished_tail,
            ram_bytes: self.ram_bytes(),
            ..Stats::default()
        };
        let mut best_hits = 0u32;
        for (i, s) in self.slots.iter().take(self.high).enumerate().filter(|(_, s)| s.live()) {
            let created = u64::from(s.created);
            if st.entries == 0 || created < st.oldest_created {
                st.oldest_created = created;
            }
            st.newest_created = st.newest_created.max(created);
            st.entries += 1;
            st.archived += usize::from(s.archived());
            st.total_hits += u64::from(s.hits);
            if st.most_accessed.is_none() || s.hits > best_hits {
                st.most_accessed = Some(i as u32);
                best_hits = s.hits;
            }
        }
        st
    }

    // ---------------------------------------------------------------------------------------
    // Compaction
    // ---------------------------------------------------------------------------------------

    fn garbage(&self) -> u64 {
        self.len.saturating_sub(self.live_bytes + self.header_bytes)
    }

    /// Whether garbage has passed the compaction threshold.
    pub fn needs_compaction(&self) -> bool {
        let g = self.garbage();
        g >= STORE_COMPACT_MIN_GARBAGE_BYTES && g * 100 >= self.len * STORE_COMPACT_GARBAGE_PERCENT
    }

    /// Compacts when [`Store::needs_compaction`]; a failure is printed as a warning (the
    /// change that triggered it is already durable, and the old log stays intact).
    fn compact_if_needed(&mut self) {
        if self.needs_compaction() && !self.read_only {
            if let Err(e) = self.compact() {
                e.print_warning();
            }
        }
    }

    /// Rewrites the log with only live state (see the module documentation); returns the
    /// bytes before and after.
    pub fn compact(&mut self) -> Result<(u64, u64)> {
        if self.read_only {
            bail!(PersistFailed, "{} was opened read-only", self.path.display());
        }
        if self.poisoned {
            bail!(
                PersistFailed,
                "{}: an earlier write failed; reopen the store before compacting",
                self.path.display()
            );
        }
        let before = self.len;
        let tmp = self.dir.join(format!(".{}.compact", LOG_NAME));
        let res = self.write_compacted(&tmp);
        if let Err(e) = res {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        if let Err(e) = fs::rename(&tmp, &self.path) {
            let _ = fs::remove_file(&tmp);
            bail!(
                PersistFailed,
                "renaming the compacted log over {} failed ({}); the old log is intact",
                self.path.display(),
                e
            );
        }
        // From here the new log is in place: re-read it (verifying it) or refuse writes.
        let res = sync_dir(&self.dir).and_then(|_| self.reload());
        if let Err(e) = res {
            self.poisoned = true;
            return Err(e);
        }
        Ok((before, self.len))
    }

    fn write_compacted(&mut self, tmp: &Path) -> Result<()> {
        let out = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(tmp)
            .map_err(|e| err!(PersistFailed, "creating {} failed: {}", tmp.display(), e))?;
        let mut at = 0u64;
        let flush = |buf: &mut FixedBuf, at: &mut u64| -> Result<()> {
            out.write_all_at(buf.as_slice(), *at)
                .map_err(|e| err!(PersistFailed, "writing {} failed: {}", tmp.display(), e))?;
            *at += buf.len() as u64;
            buf.clear();
            Ok(())
        };
        self.wbuf.clear();
        log::encode_header(&mut self.wbuf)?;
        for i in 0..self.high {
            let Some(s) = self.slots.get(i).copied() else { break };
            if !s.live() {
                continue;
            }
            self.read_value(i as u32)?;
            let head = PutHead {
                id: i as u32,
                ver: s.ver,
                created: u64::from(s.created),
                accessed: u64::from(s.accessed),
                hits: u64::from(s.hits),
                archived: s.archived(),
            };
            if self.wbuf.remaining() < s.rec_len as usize + 256 {
                flush(&mut self.wbuf, &mut at)?;
            }
            let names = tag_ids_in(&self.tagsets, &self.slots, i as u32).iter().map(|&t| self.tags.name(t));
            if log::encode_put(&mut self.wbuf, &head, names, &self.vbuf).is_err() {
                flush(&mut self.wbuf, &mut at)?;
                let names = tag_ids_in(&self.tagsets, &self.slots, i as u32).iter().map(|&t| self.tags.name(t));
                log::encode_put(&mut self.wbuf, &head, names, &self.vbuf)?;
            }
        }
        for i in 0..self.links.len() {
            let Some(&(a, b)) = self.links.get(i) else { break };
            if self.wbuf.remaining() < 64 {
                flush(&mut self.wbuf, &mut at)?;
            }
            log::encode_link(&mut self.wbuf, a, b, true)?;
        }
        flush(&mut self.wbuf, &mut at)?;
        out.sync_all().map_err(|e| err!(PersistFailed, "syncing {} failed: {}", tmp.display(), e))
    }

    // ---------------------------------------------------------------------------------------
    // Loading
    // ---------------------------------------------------------------------------------------

    fn reset(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = Slot::default());
        self.tagsets.iter_mut().for_each(|t| *t = EMPTY_TAGS);
        self.keys.clear();
        self.tags.clear();
        self.links.clear();
        self.live = 0;
        self.free_hint = 0;
        self.high = 0;
        self.live_bytes = 0;
        self.header_bytes = 0;
        self.corrupt = 0;
        self.unfinished_tail = 0;
        self.len = 0;
    }

    /// Replays the log into a fresh index. See the module documentation.
    fn replay(&mut self) -> Result<()> {
        self.reset();
        let file_len = self
            .file
            .metadata()
            .map_err(|e| err!(Io, "reading the size of {} failed: {}", self.path.display(), e))?
            .len();
        if file_len == 0 && self.read_only {
            return Ok(());
        }
        if file_len == 0 {
            self.wbuf.clear();
            log::encode_header(&mut self.wbuf)?;
            self.header_bytes = self.wbuf.len() as u64;
            self.commit()?;
            return sync_dir(&self.dir);
        }
        // A second handle on the same open file (a dup'd descriptor, no copy) lets the reader
        // borrow it while records are applied to `self`.
        let read_handle = self
            .file
            .try_clone()
            .map_err(|e| err!(Io, "duplicating the handle of {} failed: {}", self.path.display(), e))?;
        let mut reader = log::LineReader::new(&read_handle, file_len);
        let mut good_end = 0u64;
        let mut first = true;
        let mut bad_after_good: Option<(u64, Error)> = None;
        let mut scratch = core::mem::take(&mut self.rbuf);
        loop {
            let line = match reader.next(&mut scratch) {
                Ok(Some(l)) => l,
                Ok(None) => break,
                Err(e) => {
                    self.rbuf = scratch;
                    return Err(e.context(format_args!("reading {}", self.path.display())));
                }
            };
            let log::Line { offset, len, complete } = line;
            let text = reader.text(&scratch, len);
            let decoded = if complete {
                log::decode(text)
            } else {
                Err(err!(JsonInvalid, "record has no newline (cut short, or longer than STORE_RECORD_MAX_BYTES)"))
            };
            if first {
                first = false;
                match decoded {
                    Ok(Record::Header { version }) if version == log::FORMAT_VERSION => {
                        self.header_bytes = len as u64 + 1;
                        good_end = offset + len as u64 + 1;
                        continue;
                    }
                    Ok(Record::Header { version }) => {
                        self.rbuf = scratch;
                        bail!(
                            Io,
                            "{} has format version {}; this program reads version {}",
                            self.path.display(),
                            version,
                            log::FORMAT_VERSION
                        );
                    }
                    _ => {
                        self.rbuf = scratch;
                        return self.move_aside_and_start_fresh();
                    }
                }
            }
            match decoded {
                Ok(rec) => {
                    if let Some((at, e)) = bad_after_good.take() {
                        self.corrupt += 1;
                        e.context(format_args!("{}: skipped a damaged record at byte {}", self.path.display(), at))
                            .print_warning();
                    }
                    // Values are decoded into vbuf; the record borrows scratch, not self.
                    let applied = self.apply(rec, offset, len as u32 + 1);
                    if let Err(e) = applied {
                        self.rbuf = scratch;
                        return Err(e.context(format_args!("{} at byte {}", self.path.display(), offset)));
                    }
                    good_end = offset + len as u64 + 1;
                }
                Err(e) => {
                    if bad_after_good.is_none() {
                        bad_after_good = Some((offset, e));
                    } else {
                        self.corrupt += 1;
                    }
                }
            }
        }
        self.rbuf = scratch;
        if first {
            return self.move_aside_and_start_fresh();
        }
        if good_end < file_len && self.read_only {
            self.unfinished_tail = file_len - good_end;
            err!(
                Io,
                "{}: ignored {} bytes at the end that are not a whole record yet (opened read-only; \
                 a running agent may be writing them)",
                self.path.display(),
                file_len - good_end
            )
            .print_warning();
        } else if good_end < file_len {
            let why = bad_after_good.map(|(_, e)| e);
            err!(
                Io,
                "{}: dropped a torn tail of {} bytes at byte {} (a write cut short by a crash){}{}",
                self.path.display(),
                file_len - good_end,
                good_end,
                if why.is_some() { ": " } else { "" },
                why.as_ref().map_or("", |e| e.message())
            )
            .print_warning();
            self.file.set_len(good_end).and_then(|_| self.file.sync_all()).map_err(|e| {
                err!(PersistFailed, "truncating the torn tail of {} failed: {}", self.path.display(), e)
            })?;
        }
        self.len = good_end;
        Ok(())
    }

    /// Applies one replayed record.
    fn apply(&mut self, rec: Record<'_>, offset: u64, rec_len: u32) -> Result<()> {
        match rec {
            Record::Header { .. } => bail!(Io, "a second header record"),
            Record::Put { head, tags, value_escaped } => {
                if head.id as usize >= self.cap {
                    bail!(
                        CapacityExceeded,
                        "entry id {} is beyond the store's capacity of {} (STORE_MAX_ENTRIES)",
                        head.id,
                        self.cap
                    );
                }
                self.vbuf.clear();
                log::decode_str(value_escaped, &mut self.vbuf)?;
                let key = Key::from_tags(tags.iter().map(|t| t.as_str()))?;
                self.unindex(head.id);
                if let Some(other) = self.find(&key) {
                    self.uninstall(other); // a later put for the same key wins
                }
                let mut ids = [NO_TAG; KEY_MAX_TAGS];
                let mut n = 0;
                for (slot, tag) in ids.iter_mut().zip(key.tags()) {
                    *slot = self.tags.acquire(tag)?;
                    n += 1;
                }
                let slot = Slot {
                    off_lo: offset as u32,
                    off_hi: (offset >> 32) as u8,
                    flags: LIVE | if head.archived { ARCHIVED } else { 0 },
                    ntags: n as u8,
                    rec_len,
                    created: clamp32(head.created),
                    accessed: clamp32(head.accessed),
                    hits: clamp32(head.hits),
                    ver: head.ver,
                    hash: hash32(&self.vbuf),
                };
                self.install(head.id, slot, ids)
            }
            Record::Touch { id, accessed, hits } => {
                if let Some(s) = self.slots.get_mut(id as usize).filter(|s| s.live()) {
                    s.accessed = clamp32(accessed);
                    s.hits = clamp32(hits);
                }
                Ok(())
            }
            Record::Link { a, b } => {
                if self.contains(a)
                    && self.contains(b)
                    && a != b
                    && !self.linked(a, b)
                    && self.links.len() < STORE_MAX_LINKS
                {
                    self.links.push((a.min(b), a.max(b)));
                    self.live_bytes += LINK_RECORD_BYTES;
                }
                Ok(())
            }
            Record::Unlink { a, b } => {
                self.drop_link(a, b);
                Ok(())
            }
            Record::Del { id } => {
                self.uninstall(id);
                Ok(())
            }
        }
    }

    /// The log is not a store log at all: keep it under another name, never overwrite it,
    /// and start an empty log.
    fn move_aside_and_start_fresh(&mut self) -> Result<()> {
        if self.read_only {
            bail!(Io, "{} is not a store log (bad or missing header)", self.path.display());
        }
        let aside = corrupt_name(&self.dir, LOG_NAME);
        fs::rename(&self.path, &aside)
            .map_err(|e| err!(PersistFailed, "moving the unreadable {} aside failed: {}", self.path.display(), e))?;
        err!(
            Io,
            "{} is not a store log (bad or missing header); kept it as {} and started an empty store",
            self.path.display(),
            aside.display()
        )
        .print_warning();
        self.file = open_log(&self.path)?;
        self.reset();
        self.replay()
    }

    /// Test hook: the next log write fails as if the disk reported EIO.
    #[cfg(test)]
    pub(crate) fn inject_write_failure(&mut self) {
        self.fail_next_write = true;
    }
}

/// A name beside `name` for an unreadable file, unique and never an existing file:
/// `<name>.corrupt-<unix seconds>[-n]`.
pub fn corrupt_name(dir: &Path, name: &str) -> PathBuf {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let mut p = dir.join(format!("{}.corrupt-{}", name, secs));
    let mut n = 1;
    while p.exists() {
        p = dir.join(format!("{}.corrupt-{}-{}", name, secs, n));
        n += 1;
    }
    p
}

fn check_value(value: &str) -> Result<()> {
    if value.len() > STORE_VALUE_MAX_BYTES {
        bail!(
            CapacityExceeded,
            "a store value of {} bytes is larger than {} bytes (STORE_VALUE_MAX_BYTES); split it",
            value.len(),
            STORE_VALUE_MAX_BYTES
        );
    }
    Ok(())
}

fn contains_ignore_ascii_case(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.len() > h.len() {
        return false;
    }
    h.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n))
}

fn open_log(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| err!(Io, "opening {} failed: {}", path.display(), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;
    use crate::memory::key::normalize;
    use crate::memory::query::Sort;

    fn k(s: &str) -> Key {
        normalize(s).unwrap()
    }

    fn temp_dir(tag: &str) -> PathBuf {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("lkj-store-{}-{}-{}", tag, std::process::id(), n));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn put_load_update_delete_and_reload() {
        let d = temp_dir("basic");
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        let p = s.put(&k("Dictionary, terms"), "a word list", 100).unwrap();
        assert_eq!((p.version, p.outcome), (1, Outcome::Created));
        assert_eq!(s.put(&k("terms,dictionary"), "a word list", 101).unwrap().outcome, Outcome::Unchanged);
        let before = s.log_bytes();
        assert_eq!(s.put(&k("terms,dictionary"), "a word list", 101).unwrap().outcome, Outcome::Unchanged);
        assert_eq!(s.log_bytes(), before, "an unchanged value writes nothing");
        let p2 = s.put(&k("dictionary,terms"), "more words", 102).unwrap();
        assert_eq!((p2.id, p2.version, p2.outcome), (p.id, 2, Outcome::Updated));
        let e = s.update(&k("dictionary,terms"), "x", Some(1), 103).unwrap_err();
        assert_eq!(e.code(), Code::VersionConflict);
        assert!(e.message().contains("version 2, not 1"), "{}", e.message());
        assert_eq!(s.update(&k("dictionary,terms"), "v3", Some(2), 104).unwrap().version, 3);
        assert_eq!(s.update(&k("nope"), "x", None, 1).unwrap_err().code(), Code::NotFound);
        assert_eq!(s.load(&k("dictionary,terms"), 105).unwrap(), Some("v3"));
        s.put(&k("a.b,[0]"), "é→ \"q\"\n", 106).unwrap();
        s.put(&k("gone"), "", 107).unwrap();
        s.delete(&k("gone")).unwrap();
        assert_eq!(s.delete(&k("gone")).unwrap_err().code(), Code::NotFound);
        assert_eq!(s.flush_access().unwrap(), 1);
        drop(s);

        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        assert_eq!(s.len(), 2);
        let info = s.info(p.id).unwrap();
        assert_eq!(info.key.as_str(), "dictionary,terms");
        assert_eq!((info.version, info.created, info.accessed, info.hits), (3, 100, 105, 1));
        assert_eq!(s.load(&k("[0],a.b"), 1).unwrap(), Some("é→ \"q\"\n"));
        assert_eq!(s.find(&k("gone")), None);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn tags_archive_links_cleanup() {
        let d = temp_dir("tags");
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        let a = s.put(&k("a,b"), "one", 10).unwrap().id;
        let b = s.put(&k("c"), "two", 20).unwrap().id;
        assert_eq!(s.add_tags(&k("a,b"), &k("z"), 30).unwrap().as_str(), "a,b,z");
        assert_eq!(s.add_tags(&k("a,b,z"), &k("c"), 30).unwrap().as_str(), "a,b,c,z");
        assert_eq!(s.remove_tags(&k("a,b,c,z"), &k("z,b"), 31).unwrap().as_str(), "a,c");
        assert_eq!(s.remove_tags(&k("a,c"), &k("a"), 31).unwrap_err().code(), Code::KeyInvalid, "would collide with c");
        assert_eq!(s.find(&k("a,c")), Some(a));
        s.link(a, b).unwrap();
        s.link(b, a).unwrap();
        let mut r = Results::new();
        s.related(a, &mut r);
        assert_eq!(r.ids().collect::<Vec<_>>(), [b]);
        s.set_archived(&k("c"), true, 40).unwrap();
        s.query(&Query::default(), &mut r);
        assert_eq!(r.ids().collect::<Vec<_>>(), [a]);
        s.query(&Query { archived: Archived::Only, ..Query::default() }, &mut r);
        assert_eq!(r.ids().collect::<Vec<_>>(), [b]);
        drop(s);
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        assert!(s.linked(a, b));
        assert!(s.info(b).unwrap().archived);
        assert_eq!(s.value(a).unwrap(), "one");
        // a was last accessed at 31, b at 40.
        assert_eq!(s.cleanup(35, Cleanup::Delete, 50).unwrap(), 1);
        assert!(!s.contains(a));
        s.related(b, &mut r);
        assert!(r.is_empty(), "links die with their entry");
        assert_eq!(s.cleanup(100, Cleanup::Archive, 50).unwrap(), 0, "already archived");
        s.set_archived(&k("c"), false, 60).unwrap();
        assert_eq!(s.stats().archived, 0);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn query_filters_and_orders() {
        let d = temp_dir("query");
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.put(&k("rust,notes"), "1", 100).unwrap();
        s.put(&k("rust,notes,old"), "2", 50).unwrap();
        s.put(&k("rust"), "3", 200).unwrap();
        s.put(&k("python,notes"), "4", 150).unwrap();
        let mut r = Results::new();
        let q = Query { required: Some(k("rust,notes")), excluded: Some(k("old")), ..Query::default() };
        s.query(&q, &mut r);
        assert_eq!(r.ids().collect::<Vec<_>>(), [0]);
        let q = Query { optional: Some(k("python,old")), sort: Sort::Oldest, ..Query::default() };
        s.query(&q, &mut r);
        assert_eq!(r.ids().collect::<Vec<_>>(), [1, 3]);
        let q = Query { optional: Some(k("rust,notes")), sort: Sort::Relevance, max_results: 3, ..Query::default() };
        s.query(&q, &mut r);
        // Jaccard: {rust,notes} 1, {notes,old,rust} 2/3, {rust} 1/2, {notes,python} 1/3.
        assert_eq!(r.ids().collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(r.matched(), 4);
        let q = Query { created: (100, 150), ..Query::default() };
        s.query(&q, &mut r);
        assert_eq!(r.ids().collect::<Vec<_>>(), [3, 0]);
        let q = Query { required: Some(k("unknown")), ..Query::default() };
        s.query(&q, &mut r);
        assert!(r.is_empty());
        s.search_text("", Archived::Exclude, 10, &mut r).unwrap();
        assert!(r.is_empty());
        s.put(&k("doc"), "The Quick brown fox", 1).unwrap();
        s.search_text("quick BROWN", Archived::Exclude, 10, &mut r).unwrap();
        assert_eq!(r.ids().collect::<Vec<_>>(), [4]);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn torn_tail_is_dropped_and_damage_skipped() {
        let d = temp_dir("torn");
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.put(&k("a"), "first", 1).unwrap();
        s.put(&k("b"), "second", 2).unwrap();
        let good_len = s.log_bytes();
        drop(s);
        let path = d.join(LOG_NAME);
        let mut bytes = fs::read(&path).unwrap();
        bytes.extend_from_slice(b"0badc0de {\"op\":\"put\",\"id\":5,");
        fs::write(&path, &bytes).unwrap();
        let s = Store::open_with_capacity(&d, 64).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(fs::metadata(&path).unwrap().len(), good_len, "the tail is cut off");
        drop(s);
        // Damage in the middle: the record of "a" gets a flipped byte; "b" is still read.
        let mut bytes = fs::read(&path).unwrap();
        let at = bytes.windows(7).position(|w| w == b"\"first\"").unwrap();
        bytes[at + 1] = b'F';
        fs::write(&path, &bytes).unwrap();
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s.stats().corrupt_records, 1);
        assert_eq!(s.load(&k("b"), 3).unwrap(), Some("second"));
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn foreign_file_is_moved_aside() {
        let d = temp_dir("foreign");
        fs::write(d.join(LOG_NAME), b"not a log\n").unwrap();
        let s = Store::open_with_capacity(&d, 8).unwrap();
        assert!(s.is_empty());
        let aside: Vec<_> = fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with("store.log.corrupt-"))
            .collect();
        assert_eq!(aside.len(), 1);
        assert_eq!(fs::read(d.join(&aside[0])).unwrap(), b"not a log\n");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn failed_write_keeps_state_and_refuses_until_reload() {
        let d = temp_dir("eio");
        let mut s = Store::open_with_capacity(&d, 8).unwrap();
        s.put(&k("a"), "old", 1).unwrap();
        let len = s.log_bytes();
        s.inject_write_failure();
        let e = s.put(&k("a"), "new", 2).unwrap_err();
        assert_eq!(e.code(), Code::PersistFailed);
        assert_eq!(s.load(&k("a"), 3).unwrap(), Some("old"));
        assert_eq!(s.put(&k("b"), "x", 3).unwrap_err().code(), Code::PersistFailed, "refuses until reload");
        assert_eq!(fs::metadata(d.join(LOG_NAME)).unwrap().len(), len);
        s.reload().unwrap();
        s.put(&k("a"), "new", 4).unwrap();
        assert_eq!(s.load(&k("a"), 5).unwrap(), Some("new"));
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn compaction_keeps_live_state_and_shrinks() {
        let d = temp_dir("compact");
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        for i in 0..200u64 {
            s.put(&k(&format!("e{}", i % 10)), &format!("value {} {}", i, "x".repeat(100)), i).unwrap();
        }
        let a = s.find(&k("e1")).unwrap();
        let b = s.find(&k("e2")).unwrap();
        s.link(a, b).unwrap();
        s.set_archived(&k("e3"), true, 300).unwrap();
        s.touch(a, 400);
        let before = s.log_bytes();
        let (b0, b1) = s.compact().unwrap();
        assert_eq!(b0, before);
        assert!(b1 * 5 < b0, "{} -> {}", b0, b1);
        assert_eq!(s.stats().garbage_bytes, 0);
        assert_eq!(s.len(), 10);
        assert!(s.linked(a, b));
        assert_eq!(s.info(a).unwrap().hits, 1);
        assert!(s.info(s.find(&k("e3")).unwrap()).unwrap().archived);
        assert!(s.value(a).unwrap().starts_with("value 191 "));
        drop(s);
        let s = Store::open_with_capacity(&d, 64).unwrap();
        assert_eq!(s.len(), 10);
        assert!(s.linked(a, b));
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn ram_per_entry_is_within_budget() {
        assert_eq!(core::mem::size_of::<Slot>() + core::mem::size_of::<TagSet>(), 48);
        let d = temp_dir("ram");
        let s = Store::open(&d).unwrap();
        let per_entry = s.ram_bytes() as f64 / s.capacity() as f64;
        assert!(per_entry <= 64.0, "{} bytes per entry", per_entry);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn capacity_errors_are_clear() {
        let d = temp_dir("cap");
        let mut s = Store::open_with_capacity(&d, 2).unwrap();
        s.put(&k("a"), "1", 1).unwrap();
        s.put(&k("b"), "2", 1).unwrap();
        let e = s.put(&k("c"), "3", 1).unwrap_err();
        assert_eq!(e.code(), Code::CapacityExceeded);
        assert!(e.message().contains("STORE_MAX_ENTRIES"));
        let big = "x".repeat(STORE_VALUE_MAX_BYTES + 1);
        let e = s.put(&k("a"), &big, 1).unwrap_err();
        assert!(e.message().contains("STORE_VALUE_MAX_BYTES"));
        drop(s);
        // A log written with more room cannot be opened with less.
        let mut s = Store::open_with_capacity(&d, 8).unwrap();
        s.delete(&k("a")).unwrap();
        s.put(&k("z"), "late", 1).unwrap();
        s.put(&k("y"), "later", 1).unwrap();
        drop(s);
        let e = Store::open_with_capacity(&d, 2).err().unwrap();
        assert_eq!(e.code(), Code::CapacityExceeded);
        fs::remove_dir_all(&d).unwrap();
    }
}

#[cfg(test)]
mod damage_tests {
    use super::*;
    use crate::memory::key::normalize;

    #[test]
    fn an_over_long_damaged_line_is_skipped() {
        let d = std::env::temp_dir().join(format!("lkj-store-longline-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        let mut s = Store::open_with_capacity(&d, 8).unwrap();
        s.put(&normalize("before").unwrap(), "1", 1).unwrap();
        drop(s);
        // Garbage longer than any record, then a newline, then a good record.
        let mut bytes = fs::read(d.join(LOG_NAME)).unwrap();
        bytes.resize(bytes.len() + log::READ_SCRATCH_BYTES * 3 + 17, b'x');
        bytes.push(b'\n');
        let mut rec = FixedBuf::with_capacity("test", 1024);
        let head = PutHead { id: 3, ver: 1, created: 2, accessed: 2, hits: 0, archived: false };
        log::encode_put(&mut rec, &head, ["after"].into_iter(), "2").unwrap();
        bytes.extend_from_slice(rec.as_slice());
        fs::write(d.join(LOG_NAME), &bytes).unwrap();
        let mut s = Store::open_with_capacity(&d, 8).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s.stats().corrupt_records, 1);
        assert_eq!(s.load(&normalize("after").unwrap(), 3).unwrap(), Some("2"));
        assert_eq!(s.load(&normalize("before").unwrap(), 3).unwrap(), Some("1"));
        // And the same garbage as a torn tail (no newline) is cut off.
        drop(s);
        let good = fs::metadata(d.join(LOG_NAME)).unwrap().len();
        let mut bytes = fs::read(d.join(LOG_NAME)).unwrap();
        bytes.resize(bytes.len() + STORE_RECORD_MAX_BYTES + 5, b'y');
        fs::write(d.join(LOG_NAME), &bytes).unwrap();
        let s = Store::open_with_capacity(&d, 8).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(fs::metadata(d.join(LOG_NAME)).unwrap().len(), good);
        fs::remove_dir_all(&d).unwrap();
    }
}

#[cfg(test)]
mod read_only_tests {
    use super::*;
    use crate::error::Code;
    use crate::memory::key::normalize;

    #[test]
    fn read_only_never_writes_and_leaves_a_partial_tail_alone() {
        let d = std::env::temp_dir().join(format!("lkj-store-ro-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        assert_eq!(Store::open_read_only(&d).err().unwrap().code(), Code::NotFound);
        let mut w = Store::open_with_capacity(&d, 8).unwrap();
        w.put(&normalize("a").unwrap(), "1", 1).unwrap();
        // A record being appended by the writer, not complete yet.
        let mut bytes = fs::read(d.join(LOG_NAME)).unwrap();
        bytes.extend_from_slice(b"12345678 {\"op\":\"put\",\"id\":1");
        fs::write(d.join(LOG_NAME), &bytes).unwrap();
        let mut r = Store::open_read_only(&d).unwrap();
        assert_eq!(r.load(&normalize("a").unwrap(), 2).unwrap(), Some("1"));
        assert_eq!(fs::read(d.join(LOG_NAME)).unwrap(), bytes, "nothing cut");
        assert_eq!(r.put(&normalize("b").unwrap(), "2", 3).unwrap_err().code(), Code::PersistFailed);
        assert_eq!(r.flush_access().unwrap_err().code(), Code::PersistFailed);
        assert_eq!(r.compact().unwrap_err().code(), Code::PersistFailed);
        assert_eq!(fs::read(d.join(LOG_NAME)).unwrap(), bytes, "still nothing written");
        drop(w);
        fs::remove_dir_all(&d).unwrap();
    }
}

#[cfg(test)]
mod enospc_tests {
    use super::*;
    use crate::error::Code;

    #[test]
    fn a_full_disk_is_persist_failed() {
        // /dev/full answers every write with ENOSPC: a log that is a link to it stands for a
        // full disk at the first write (the header of a new log).
        if !Path::new("/dev/full").exists() {
            return;
        }
        let d = std::env::temp_dir().join(format!("lkj-store-enospc-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        std::os::unix::fs::symlink("/dev/full", d.join(LOG_NAME)).unwrap();
        let e = Store::open_with_capacity(&d, 4).err().unwrap();
        assert_eq!(e.code(), Code::PersistFailed);
        assert!(e.message().contains("No space left"), "{}", e.message());
        fs::remove_dir_all(&d).unwrap();
    }
}
