//! The persistent tagged store: values in an append-only log on disk (`store.log`, format in
//! [`crate::memory::log`]), an index in RAM sized once at open, and a checkpoint of that index
//! beside the log so that opening does not replay the whole log.
//!
//! The store is entries, plus a tag index, a text index, a vector index and a cold tier. Its
//! core is the files of this folder; the indexes and the cold tier are rooms of their own
//! (folders), each with its file, its format and its crash rules. Imports go one way: the
//! rooms below know nothing of the ones above them.
//!
//! The core:
//!
//! - [`slots`]: the entry table (one slot per id, column by column) and the key table.
//! - [`tags`]: interned tags and their posting lists (the tag index).
//! - [`links`]: links between related entries.
//! - [`append`]: appending to the log, `fdatasync`, batches, the refusal after a failed write.
//! - `write`: creating, replacing, retagging, archiving and deleting entries (the changes).
//! - `replay`: reading the log into the index on open, and repairing a torn tail.
//! - [`checkpoint`]: the index written to `store.ckpt`, so an open replays only what follows;
//!   [`view`]: that file read in place by the read-only commands, a question at a time.
//! - `compact`: rewriting the log with only live state.
//! - `query`: tag queries over the posting lists; `search`: text search over the log;
//!   [`answer`]: `memory search`'s one call, which chooses the index that answers.
//!
//! The rooms, which the core calls after each change it makes (`recall_sync`), at checkpoints
//! and at compaction:
//!
//! - [`recall`]: the text index (`store.fts` and a delta in RAM), ranked BM25 queries.
//! - [`vectors`]: the vector index (`store.vec`), recall by meaning fused with the words.
//! - [`cold`]: the cold tier (`store.cold`), [`cleanup`], the capacity policy that fills it, and
//!   its text index (`store.cold.fts`), which a ranked query walks with the live one's.
//!
//! # Durability
//!
//! Every change is encoded into a reserved write buffer, appended to the log and synced
//! *before* the in-RAM index changes and before the call returns: an `Ok` means the change
//! survives a `kill -9` or a power cut (see [`append`] for failures, and batches). The log is
//! the only source of truth; the checkpoint is a cache of the index that is ignored, with a
//! warning, whenever it does not match the log exactly.
//!
//! On open the log is replayed from the checkpoint's end (or from the top). A record with a
//! bad frame (no newline, wrong checksum) at the end is a torn tail from a crash: it is dropped
//! with a warning and the file is truncated to the last good record. A bad record followed by
//! good ones (damage, not a crash) is skipped with a warning and counted in
//! [`Stats::corrupt_records`]. A file that is not a store log at all is moved aside
//! (`store.log.corrupt-<time>`) and a new log started. A store opened read-only
//! ([`Store::open_read_only`]) writes nothing: an unfinished last record is "not yet written".
//!
//! # Ids and order
//!
//! Entry ids are handed out in creation order and renumbered densely, in the same order, by
//! compaction ([`crate::memory::query::EntryId`]); "newest first" is highest id first. Ids of
//! deleted entries are not reused until the next compaction, which runs when garbage passes
//! [`STORE_COMPACT_GARBAGE_PERCENT`] of the log or when the ids run out.
//!
//! # RAM
//!
//! Capacity is chosen at open (`memory.store_capacity`, [`STORE_DEFAULT_ENTRIES`] unless set,
//! at most [`STORE_MAX_ENTRIES`]); every table is allocated then, zeroed, and never grows (see
//! `limits.rs` for bytes per entry). Values never stay in RAM.

pub mod answer;
pub mod append;
pub mod checkpoint;
pub mod cold;
mod compact;
pub mod links;
mod query;
pub mod recall;
mod replay;
mod search;
pub mod slots;
pub mod tags;
pub mod vectors;
pub mod view;
mod write;

// The rooms' parts by the names they had when the store was one folder (the rest of the
// program and the tests use them).
pub use cold::cleanup;
pub use recall::{disk as recall_disk, file as recall_file, fulltext, rank, tokenize};

pub use write::Deleted;

#[cfg(test)]
mod tests;

use crate::error::Result;
use crate::fixed::FixedBuf;
use crate::limits::{
    store_max_tags, KEY_MAX_TAGS, STORE_COMPACT_GARBAGE_PERCENT, STORE_DEFAULT_ENTRIES, STORE_MAX_ENTRIES,
    STORE_MIN_ENTRIES, STORE_RECORD_MAX_BYTES, STORE_VALUE_MAX_BYTES,
};
use crate::memory::key::Key;
use crate::memory::log;
pub use crate::memory::query::EntryId;
use append::LogFile;
use links::Links;
use slots::{key_hash, KeyTable, Slots, TagSet};
use std::path::{Path, PathBuf};
use tags::Tags;

/// File name of the log inside the data directory.
pub const LOG_NAME: &str = "store.log";

/// What a store or update did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
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
    pub change: Change,
}

/// An entry's metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryInfo {
    /// Id (creation order).
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
}

/// Store statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Live entries (archived included).
    pub entries: usize,
    /// Archived entries.
    pub archived: usize,
    /// Entry capacity (`memory.store_capacity`).
    pub capacity: usize,
    /// Distinct tags in use.
    pub tags: usize,
    /// Most distinct tags at this capacity.
    pub max_tags: usize,
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
    /// Whether that tail holds a whole record that is damaged (it ends in a newline, but its
    /// checksum or JSON is bad), not only a record still being written.
    pub damaged_tail: bool,
    /// Whether that tail is a clean-up batch a crash (or a clean-up being written) cut short:
    /// none of it counts, and the agent rolls it back at its next start.
    pub cut_cleanup: bool,
    /// Whether the last open started from the checkpoint.
    pub from_checkpoint: bool,
    /// Bytes of log the last open replayed (after the checkpoint, or all of it).
    pub replayed_bytes: u64,
    /// RAM reserved by the index, bytes (only the part in use is backed by memory).
    pub ram_bytes: usize,
}

impl Stats {
    /// Whether garbage has passed the compaction threshold ([`Store::needs_compaction`]).
    pub fn compaction_due(&self) -> bool {
        over_garbage_threshold(self.garbage_bytes, self.log_bytes)
    }
}

/// What clean-up does with old entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cleanup {
    /// Archive them (out of default results, still on disk).
    Archive,
    /// Delete them.
    Delete,
    /// Move them to the cold store (`store.cold`, see [`cold`]): out of the live store and its
    /// capacity, still found by `memory show`, `search --cold`, `export` and `restore`.
    Cold,
}

/// The store. See the module documentation.
pub struct Store {
    dir: PathBuf,
    log: LogFile,
    slots: Slots,
    keys: KeyTable,
    tags: Tags,
    links: Links,
    cap: usize,
    /// The log's identity (its header); a checkpoint must name the same.
    store_id: u64,
    /// Format version of the log as read (1 until the writer upgrades it).
    format: u64,
    live_bytes: u64,
    header_bytes: u64,
    corrupt: u64,
    unfinished_tail: u64,
    damaged_tail: bool,
    cut_cleanup: bool,
    from_checkpoint: bool,
    replayed_bytes: u64,
    /// Log length the last checkpoint covers (0: none), or the one being synced beside the
    /// cycle.
    checkpointed: u64,
    /// A checkpoint written and being finished and synced beside the cycle
    /// (`checkpoint::sync`); no merge step runs meanwhile.
    checkpoint_syncing: Option<checkpoint::Syncing>,
    /// The worker thread that finishes and syncs due checkpoints (`checkpoint::sync`),
    /// started at the first.
    checkpoint_worker: Option<checkpoint::Worker>,
    /// A due checkpoint was taken: the next cycle's upkeep that finds it in place starts the
    /// text indexes' merges.
    merges_due: bool,
    /// Read the whole log, never the checkpoint.
    whole_log: bool,
    wbuf: FixedBuf,
    rbuf: Vec<u8>,
    vbuf: String,
    /// What finishing a checkpoint reads and counts with (a buffer of 256 KiB, and each column
    /// block's CRC: 4 bytes a block, 164 KiB at 1,048,576 entries): reserved at the first
    /// checkpoint for the slots' room, again only when the room grew or they went with a
    /// checkpoint let go of before its result came back, so that a due checkpoint allocates
    /// none. Lent with each job to the worker that finishes due checkpoints
    /// (`checkpoint::sync`), back with its result.
    ckpt_bufs: checkpoint::Bufs,
    /// Bytes of the last checkpoint's file that the thread writing it checksummed itself
    /// (the work a due checkpoint puts into its cycle beside the copy of the tables).
    ckpt_checked_here: u64,
    /// The checkpoint's file and temp file, joined once (a due checkpoint joins no path).
    ckpt_paths: checkpoint::Paths,
    /// Test hook: the thread that finishes the next due checkpoint says it took it, then waits
    /// for a message (or its sender dropped) before it starts (`Store::hold_checkpoint_finish`).
    #[cfg(test)]
    ckpt_hold: Option<checkpoint::Hold>,
    /// The full-text index (built on first use).
    recall: recall::Recall,
    /// The capacity policy and its clean-ups (see [`cleanup`]).
    upkeep: cleanup::Upkeep,
    /// The cold store's text index (built on first use).
    cold_recall: cold::recall::ColdRecall,
}

/// Approximate bytes of one link record, for garbage accounting.
const LINK_RECORD_BYTES: u64 = 40;

/// Ids of room beyond the capacity, so deletes do not force a compaction at once (ids of
/// deleted entries are reclaimed by compaction).
fn room_for(cap: usize) -> usize {
    cap + cap / 64 + 16
}

impl Store {
    /// Opens (or creates) the store in `dir` with the default capacity
    /// ([`STORE_DEFAULT_ENTRIES`]).
    pub fn open(dir: &Path) -> Result<Store> {
        Store::open_with_capacity(dir, STORE_DEFAULT_ENTRIES)
    }

    /// Opens (or creates) the store in `dir` with room for `entries` entries (clamped to
    /// [`STORE_MIN_ENTRIES`]..=[`STORE_MAX_ENTRIES`]). A log holding more entries is
    /// `CAPACITY_EXCEEDED`, naming `memory.store_capacity`.
    pub fn open_with_capacity(dir: &Path, entries: usize) -> Result<Store> {
        let path = dir.join(LOG_NAME);
        // The writer appends to the log in place and replaces it by renaming: never through a
        // link, and never replacing one (see `memory::nofollow`).
        crate::memory::nofollow::refuse_link(&path)?;
        if !path.exists() {
            // A new log appears whole (header included) or not at all.
            let mut header = FixedBuf::with_capacity("store log header", 128);
            log::encode_header(&mut header, new_store_id())?;
            crate::memory::atomic::write_file(dir, LOG_NAME, header.as_slice())?;
        }
        let log = LogFile::open(&path)?;
        let mut s = Store::with(dir, log, entries);
        // A compaction or checkpoint cut short by a crash leaves its temp file; only the
        // writer (the lock holder) removes it.
        compact::remove_temp(dir);
        checkpoint::remove_temp(dir);
        recall_file::remove_temp(dir);
        cold::remove_temp(dir);
        cold::recall::remove_temp(dir);
        cold::keys::remove_temp(dir);
        s.open_index()?;
        // A cold group a crash cut short is dropped now, before anything reads the cold store
        // to decide what to write (an import's cold tier, a delete's rewrite).
        s.repair_cold()?;
        Ok(s)
    }

    /// Opens the store in `dir` for reading only (the commands that only look, while an agent
    /// may be running): nothing is ever written, truncated or moved, so a record the agent is
    /// appending right now is ignored rather than cut off as a torn tail, and the writer's
    /// temporary files are left alone. Writes are `PERSIST_FAILED`. A missing log is
    /// `NOT_FOUND`. `entries` is the capacity, as for [`Store::open_with_capacity`].
    ///
    /// The tables are sized for the capacity the checkpoint was written at when that is
    /// smaller (a writer of 1,024 entries read with the default 65,536: a few KiB of tables
    /// to fill, not 2 MiB to clear, issue 39's soak store); a log that outgrew it since (a
    /// writer at a larger capacity appended) is opened again at the full size.
    pub fn open_read_only_with_capacity(dir: &Path, entries: usize) -> Result<Store> {
        let cap = entries.clamp(STORE_MIN_ENTRIES, STORE_MAX_ENTRIES);
        if let Some(sized) = checkpoint::written_capacity(dir).filter(|&c| c < cap) {
            let log = LogFile::open_read_only(&dir.join(LOG_NAME))?;
            let mut s = Store::with_tables(dir, log, cap, sized);
            match s.open_index() {
                Ok(()) => return Ok(s),
                Err(e) if e.code() == crate::error::Code::CapacityExceeded => {}
                Err(e) => return Err(e),
            }
        }
        let log = LogFile::open_read_only(&dir.join(LOG_NAME))?;
        let mut s = Store::with(dir, log, entries);
        s.open_index()?;
        Ok(s)
    }

    /// [`Store::open_read_only_with_capacity`] that reads and checks every record of the log
    /// and ignores the checkpoint (`lkjagent check`: damage inside the part of the log a
    /// checkpoint covers is found only this way, or when that record is read).
    pub fn open_read_only_whole_log(dir: &Path, entries: usize) -> Result<Store> {
        let log = LogFile::open_read_only(&dir.join(LOG_NAME))?;
        let mut s = Store::with(dir, log, entries);
        s.whole_log = true;
        s.open_index()?;
        Ok(s)
    }

    /// [`Store::open_read_only_with_capacity`] with the default capacity.
    pub fn open_read_only(dir: &Path) -> Result<Store> {
        Store::open_read_only_with_capacity(dir, STORE_DEFAULT_ENTRIES)
    }

    fn with(dir: &Path, log: LogFile, entries: usize) -> Store {
        let cap = entries.clamp(STORE_MIN_ENTRIES, STORE_MAX_ENTRIES);
        Store::with_tables(dir, log, cap, cap)
    }

    /// A store of capacity `cap` whose tables are sized for `sized` (at most `cap`) entries.
    fn with_tables(dir: &Path, log: LogFile, cap: usize, sized: usize) -> Store {
        let sized = sized.min(cap);
        let room = room_for(sized);
        Store {
            dir: dir.to_path_buf(),
            log,
            slots: Slots::new(room),
            keys: KeyTable::new(room),
            tags: Tags::new(store_max_tags(sized), room * KEY_MAX_TAGS),
            links: Links::new(),
            cap,
            store_id: 0,
            format: log::FORMAT_VERSION,
            live_bytes: 0,
            header_bytes: 0,
            corrupt: 0,
            unfinished_tail: 0,
            damaged_tail: false,
            cut_cleanup: false,
            from_checkpoint: false,
            replayed_bytes: 0,
            checkpointed: 0,
            checkpoint_syncing: None,
            checkpoint_worker: None,
            merges_due: false,
            whole_log: false,
            wbuf: FixedBuf::with_capacity("store write buffer (STORE_RECORD_MAX_BYTES)", STORE_RECORD_MAX_BYTES),
            rbuf: Vec::with_capacity(log::READ_SCRATCH_BYTES),
            vbuf: String::with_capacity(STORE_VALUE_MAX_BYTES),
            ckpt_bufs: checkpoint::Bufs::default(),
            ckpt_checked_here: 0,
            ckpt_paths: checkpoint::Paths::new(dir),
            #[cfg(test)]
            ckpt_hold: None,
            recall: recall::Recall::new(),
            upkeep: cleanup::Upkeep::new(),
            cold_recall: cold::recall::ColdRecall::new(),
        }
    }

    /// Re-reads the log from disk, rebuilding the index (and clearing the refusal to write
    /// after a failed write).
    pub fn reload(&mut self) -> Result<()> {
        let res = self.log.reopen().and_then(|_| self.open_index());
        if res.is_err() {
            // A half-rebuilt index must not be written through.
            self.log.poison();
        }
        res
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Live entries.
    pub fn len(&self) -> usize {
        self.slots.live()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.slots.live() == 0
    }

    /// Entry capacity.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Bytes of RAM the index reserves (entry table, key table, tags and posting lists,
    /// links). Tables are allocated zeroed, so only the part in use is backed by memory. The
    /// read, write and value buffers (about 3 × `STORE_RECORD_MAX_BYTES`, independent of the
    /// capacity) are not included.
    pub fn ram_bytes(&self) -> usize {
        self.slots.ram_bytes()
            + self.keys.ram_bytes()
            + self.tags.ram_bytes()
            + self.links.ram_bytes()
            + self.recall.ram_bytes()
            + self.cold_recall.ram_bytes()
            + self.ckpt_bufs.ram_bytes()
    }

    /// Size of the log in bytes.
    pub fn log_bytes(&self) -> u64 {
        self.log.len
    }

    // ---------------------------------------------------------------------------------------
    // Reading
    // ---------------------------------------------------------------------------------------

    /// The tag ids of `key`, if every tag is in use (else no entry can carry it).
    fn tagset_of(&self, key: &Key) -> Option<TagSet> {
        let mut ids = [0u16; KEY_MAX_TAGS];
        for (slot, tag) in ids.iter_mut().zip(key.tags()) {
            *slot = self.tags.find(tag)?;
        }
        Some(ids)
    }

    /// Whether a ranked search admits the entry `id`: it is live, `archived` admits it, and it
    /// carries the first `n` tags of `required` when given (a set from `tagset_of`).
    pub(crate) fn admits(
        &self,
        id: EntryId,
        archived: crate::memory::query::Archived,
        required: Option<&(TagSet, usize)>,
    ) -> bool {
        let Some(s) = self.slots.get(id) else { return false };
        if !archived.admits(s.archived) {
            return false;
        }
        match required {
            None => true,
            Some((set, n)) => {
                let have = self.slots.tag_ids(id);
                crate::bytes::take(set, *n).iter().all(|t| have.contains(t))
            }
        }
    }

    /// The entry with exactly these tags, without counting an access.
    pub fn find(&self, key: &Key) -> Option<EntryId> {
        let set = self.tagset_of(key)?;
        let n = key.tag_count().min(KEY_MAX_TAGS);
        let hash = key_hash(crate::bytes::take(&set, n));
        self.keys.find(hash, |id| self.slots.tagset(id) == set)
    }

    /// Whether some entry carries `tag`.
    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.find(tag).is_some()
    }

    /// `CAPACITY_EXCEEDED` unless `count` new tags of `bytes` bytes in all fit the tag table
    /// (checked before an import writes anything).
    pub fn check_tag_room(&self, count: usize, bytes: usize) -> Result<()> {
        self.tags.check_room(count, bytes)
    }

    /// Whether `id` is a live entry.
    pub fn contains(&self, id: EntryId) -> bool {
        self.slots.is_live(id)
    }

    /// The key of entry `id`.
    pub fn key(&self, id: EntryId) -> Option<Key> {
        if !self.slots.is_live(id) {
            return None;
        }
        Key::from_tags(self.slots.tag_ids(id).iter().map(|&t| self.tags.name(t))).ok()
    }

    /// The metadata of entry `id`.
    pub fn info(&self, id: EntryId) -> Option<EntryInfo> {
        let s = self.slots.get(id)?;
        Some(EntryInfo {
            id,
            key: self.key(id)?,
            version: s.ver,
            created: u64::from(s.created),
            accessed: u64::from(s.accessed),
            hits: u64::from(s.hits),
            archived: s.archived,
        })
    }

    /// Counts an access to `id` (in RAM; persisted by [`Store::flush_access`]). Access
    /// statistics are advisory: a crash loses the ones not yet flushed, never a value.
    pub fn touch(&mut self, id: EntryId, now: u64) {
        self.slots.touch(id, now);
    }

    /// The value of entry `id`, read from the log into the store's value buffer (valid until
    /// the next call that reads a value); the id of a ranked hit on a cold entry reads it
    /// from the cold store. `NOT_FOUND` for a dead id; a record that no longer
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

    /// Reads the value of live entry `id` into `vbuf`.
    fn read_value(&mut self, id: EntryId) -> Result<()> {
        if cold::recall::is_cold_hit(id) {
            // A ranked hit on a cold entry.
            let mut v = core::mem::take(&mut self.vbuf);
            let hit = self.cold_hit(id, &mut v);
            self.vbuf = v;
            return match hit? {
                Some(_) => Ok(()),
                None => bail!(NotFound, "no cold store entry for hit {} (the store changed since the search)", id),
            };
        }
        let Some(s) = self.slots.get(id) else { bail!(NotFound, "no store entry with id {}", id) };
        self.vbuf.clear();
        read_record_value(&self.log, &mut self.rbuf, s.offset, s.len, id, &mut self.vbuf)
    }

    /// Each tag in use and the number of live entries carrying it (archived ones included),
    /// from the index's counters: no entry is visited (for `lkjagent report`).
    pub fn tag_counts(&self) -> impl Iterator<Item = (&str, u32)> + '_ {
        (1..self.tags.id_limit())
            .map(|id| (self.tags.name(id), self.tags.count(id)))
            .filter(|(name, n)| *n > 0 && !name.is_empty())
    }

    /// Every live id is below this (the next id to be handed out); it may pass the capacity,
    /// since the ids of entries taken out come back only at a compaction. Walk `0..id_limit()`
    /// where [`Store::ids`] cannot be borrowed.
    pub fn id_limit(&self) -> EntryId {
        self.slots.next_id() as EntryId
    }

    /// The links, each as its two entry ids (smaller first), in the order they were made.
    pub fn link_pairs(&self) -> &[(EntryId, EntryId)] {
        self.links.pairs()
    }

    /// Creates the entry `key` with the version, times, hits and archived flag of `head` (its
    /// id aside), or replaces the value of the entry the store holds under `key` (version + 1;
    /// its times stay): `memory import` of an exported entry.
    pub fn put_with(&mut self, key: &Key, value: &str, head: &log::PutHead) -> Result<Put> {
        match self.find(key) {
            Some(_) => self.put(key, value, head.accessed),
            None => self.create_with(key, value, head),
        }
    }

    /// Live entry ids, oldest first (for export and listing).
    pub fn ids(&self) -> impl DoubleEndedIterator<Item = EntryId> + '_ {
        self.slots.ids()
    }

    /// Statistics.
    pub fn stats(&self) -> Stats {
        let mut st = Stats {
            capacity: self.cap,
            tags: self.tags.in_use(),
            // The capacity's, not the tables' (a read-only store sizes them for the capacity
            // its checkpoint was written at, when smaller).
            max_tags: crate::limits::store_max_tags(self.cap),
            links: self.links.len(),
            log_bytes: self.log.len,
            live_bytes: self.live_bytes.min(self.log.len),
            garbage_bytes: self.garbage(),
            corrupt_records: self.corrupt,
            unfinished_tail_bytes: self.unfinished_tail,
            damaged_tail: self.damaged_tail,
            cut_cleanup: self.cut_cleanup,
            from_checkpoint: self.from_checkpoint,
            replayed_bytes: self.replayed_bytes,
            ram_bytes: self.ram_bytes(),
            ..Stats::default()
        };
        let mut best_hits = 0u32;
        for id in self.slots.ids() {
            let Some(s) = self.slots.get(id) else { continue };
            let created = u64::from(s.created);
            if st.entries == 0 || created < st.oldest_created {
                st.oldest_created = created;
            }
            st.newest_created = st.newest_created.max(created);
            st.entries += 1;
            st.archived += usize::from(s.archived);
            st.total_hits += u64::from(s.hits);
            if st.most_accessed.is_none() || s.hits > best_hits {
                st.most_accessed = Some(id);
                best_hits = s.hits;
            }
        }
        st
    }

    fn garbage(&self) -> u64 {
        self.log.len.saturating_sub(self.live_bytes + self.header_bytes)
    }

    /// Test hook: the next log write fails as if the disk reported EIO.
    #[cfg(test)]
    pub(crate) fn inject_write_failure(&mut self) {
        self.log.fail_next_write = true;
    }
}

/// Reads the `put` record of entry `id` (`len` bytes at `offset`) through `rbuf` and decodes
/// its value into `out`. A free function so callers can hold other parts of the store.
fn read_record_value(
    log: &LogFile,
    rbuf: &mut Vec<u8>,
    offset: u64,
    len: u32,
    id: EntryId,
    out: &mut String,
) -> Result<()> {
    rbuf.clear();
    rbuf.resize(len as usize, 0);
    log.read_at(rbuf, offset).map_err(|e| e.context(format_args!("the record of entry {}", id)))?;
    let line = rbuf.strip_suffix(b"\n").unwrap_or(rbuf);
    let rec = log::decode(line).map_err(|e| {
        e.with_code(crate::error::Code::Io).context(format_args!("{} at byte {}", log.path.display(), offset))
    })?;
    let log::Record::Put { head, value_escaped, .. } = rec else {
        bail!(Io, "{} at byte {}: expected the put record of entry {}", log.path.display(), offset, id);
    };
    if head.id != id {
        bail!(Io, "{} at byte {}: record is for entry {}, not {}", log.path.display(), offset, head.id, id);
    }
    log::decode_str(value_escaped, out)
}

/// A new log identity: the clock, the process id and a counter, mixed. Not a secret; it only
/// has to differ between the logs a checkpoint could be confused with.
fn new_store_id() -> u64 {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let mut h = crate::memory::hash::fnv1a64(&t.to_le_bytes());
    h = crate::memory::hash::fnv1a64_continue(h, &std::process::id().to_le_bytes());
    h = crate::memory::hash::fnv1a64_continue(h, &n.to_le_bytes());
    // Never 0: 0 stands for "a version 1 log, no identity".
    h | 1
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

/// Whether garbage has passed the compaction threshold (`STORE_COMPACT_*` in `limits.rs`).
fn over_garbage_threshold(garbage: u64, log_len: u64) -> bool {
    garbage >= crate::limits::STORE_COMPACT_MIN_GARBAGE_BYTES
        && garbage * 100 >= log_len * STORE_COMPACT_GARBAGE_PERCENT
}
