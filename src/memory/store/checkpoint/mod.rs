//! The checkpoint: the index written to `store.ckpt` so that opening reads it and replays only
//! the log after it. This file writes its body (a copy of the index); `finish` takes its
//! checksums and writes its header, last; `format` is its layout and the readers of its
//! fields, `read` loads it into the index at open, `sync` finishes and syncs the one a due
//! cycle takes beside the cycle (its thread fed through `handoff`) and puts it in place.
//!
//! The log stays the only source of truth. A checkpoint is used only when it names the log it
//! was taken of exactly: the same store id (the log's header; new at every compaction), a
//! length the log still has, and the same last 4 KiB before that length (a log cut back and
//! written again differs there). Anything else (missing, damaged, stale, foreign, from another
//! capacity that does not fit) is ignored with a warning and the log is replayed in full.
//!
//! Written atomically (a new temp file created exclusively, synced, renamed over the old one,
//! the directory synced) by the writer only: after a compaction, at a clean stop
//! ([`Store::close`]), and when [`STORE_CHECKPOINT_EVERY_BYTES`] were appended since the last
//! (then its body written in the cycle, finished and synced beside it, see `sync`).
//! Readers never write it.
//!
//! Layout (little-endian): a fixed header with its own CRC-32, then the index column by column,
//! so that opening copies each column straight into its table (no per-entry decoding); the
//! header holds the CRC-32 of everything after it (the writer's open reads it all). After the
//! key table come
//! the sections a read-only command reads in place instead ([`super::view`]): each tag's
//! posting list with its own CRC, and the CRC of every [`COLUMN_BLOCK`] bytes of each column,
//! so that a command reads the header, the tag names, the lists of the tags it asks for and
//! the column blocks of the entries it looks at, each checked, and nothing else.
//!
//! ```text
//! header, 160 bytes:
//!   "LKJSTCK\0"  format u32  tags u32 (one past the highest tag id)  store u64  covered u64
//!   header_bytes u64  live_bytes u64  corrupt u64  next_id u32  links u32  key_slots u32
//!   tag_text u32  tail_crc u32  body_crc u32  live u32  archived u32  postings u64
//!   names_crc u32 (of the tag lengths and text)  directory_crc u32  blocks_crc u32
//!   (44 bytes unused)  header_crc u32 (of the rest)
//! body (body_crc, to the end of the file):
//!   tag lengths u8 × (tags - 1), tag text (tag_text bytes, ids 1.. in order)
//!   locations u64 × next_id (offset, length and archived flag; 0 for an id not in use)
//!   created, accessed, hits, version: u32 × next_id each
//!   tag ids: 8 × u16 × next_id
//!   links: (a u32, b u32) × links
//!   key table: u32 × key_slots (0 = empty, else id + 1)
//! read in place:
//!   directory (directory_crc): (count u32, archived u32, list crc u32) × (tags - 1)
//!   posting lists: each tag's entry ids in increasing order, u32 × count, tag 1 first
//!   column blocks (blocks_crc): for each column above in order, the CRC-32 of each
//!   COLUMN_BLOCK bytes of it (the last block of a column may be shorter)
//! ```
//!
//! A checkpoint of another format (an older program's) is ignored with a warning like any
//! other that does not match: the log is replayed, and the writer writes this format.

mod finish;
mod format;
mod handoff;
mod read;
mod sync;
#[cfg(test)]
mod tests;

pub(in crate::memory::store) use finish::Bufs;
pub(in crate::memory::store) use format::{le32, le64, Head, In, Put};
pub(in crate::memory::store) use read::{read, written_capacity};
#[cfg(test)]
pub(in crate::memory::store) use sync::Hold;
pub(in crate::memory::store) use sync::{Syncing, Worker};

use super::Store;
use crate::error::Result;
use crate::limits::{KEY_MAX_TAGS, STORE_CHECKPOINT_EVERY_BYTES};
use crate::memory::hash::crc32;
use finish::Unfinished;
use format::Layout;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// File name of the checkpoint inside the data directory.
pub const CHECKPOINT_NAME: &str = "store.ckpt";
const TEMP_NAME: &str = ".store.ckpt.tmp";
const MAGIC: &[u8; 8] = b"LKJSTCK\0";
pub(in crate::memory::store) const FORMAT: u32 = 3;
/// Bytes of the header.
pub(in crate::memory::store) const HEADER_BYTES: usize = 160;
/// Bytes of a column block, the unit a read-only command reads and checks (see the module
/// documentation): 128 locations, 256 times or counts, or 64 tag sets.
pub const COLUMN_BLOCK: usize = crate::limits::STORE_CHECKPOINT_BLOCK_BYTES;
/// Bytes per id of each column, in the file's order: locations, created, accessed, hits,
/// version, tag ids.
pub(in crate::memory::store) const COLUMN_WIDTHS: [usize; 6] = [8, 4, 4, 4, 4, 2 * KEY_MAX_TAGS];
/// Bytes of one tag's directory entry: count, archived count, list CRC.
pub(in crate::memory::store) const DIRECTORY_ENTRY: usize = 12;
/// Bytes read or written per block.
const BLOCK: usize = 256 << 10;
/// Bytes of log before the covered length whose checksum the checkpoint keeps.
pub(in crate::memory::store) const TAIL_BYTES: u64 = 4096;

/// The checkpoint's paths in the data directory, joined once when the store is made.
pub(in crate::memory::store) struct Paths {
    tmp: PathBuf,
    file: PathBuf,
}

impl Paths {
    pub(in crate::memory::store) fn new(dir: &Path) -> Paths {
        Paths { tmp: dir.join(TEMP_NAME), file: dir.join(CHECKPOINT_NAME) }
    }
}

/// Removes a temp file a crash left (the writer only).
pub(in crate::memory::store) fn remove_temp(dir: &Path) {
    let _ = fs::remove_file(dir.join(TEMP_NAME));
}

/// Removes the checkpoint (before a compaction replaces the log it names).
pub(in crate::memory::store) fn remove(dir: &Path) {
    let _ = fs::remove_file(dir.join(CHECKPOINT_NAME));
}

/// CRC-32 of the `TAIL_BYTES` of the log before `covered`.
pub(in crate::memory::store) fn tail_crc(store: &mut Store, covered: u64) -> Result<u32> {
    let start = covered.saturating_sub(TAIL_BYTES);
    let n = (covered - start) as usize;
    store.rbuf.clear();
    store.rbuf.resize(n, 0);
    store.log.read_at(&mut store.rbuf, start)?;
    Ok(crc32(&store.rbuf))
}

impl Store {
    /// Writes a checkpoint of the index now (the writer only; access statistics counted in
    /// RAM are written to the log first, so the checkpoint matches the log exactly).
    pub fn checkpoint(&mut self) -> Result<()> {
        self.checkpoint_with(false, false)
    }

    /// The checkpoint the cycle's upkeep takes when due: [`Store::checkpoint`], but the
    /// text indexes' merges (the live one's and the cold store's) only started, run in steps by
    /// the next cycles' upkeep
    /// ([`Store::flush_access`], [`Store::recall_merge_step`]), and `store.ckpt`'s body only
    /// written, its checksums, header and sync taken beside the cycle and the file put in
    /// place by a later one (`sync`), so that no cycle stops for all of it.
    pub fn checkpoint_in_steps(&mut self) -> Result<()> {
        self.checkpoint_with(true, true)
    }

    /// `store.ckpt`, then the text indexes beside it: caches too, so a failure is a warning.
    /// `cold_steps`: the cold store's merge only started, as `steps` starts both (a compaction
    /// of the log, which changes nothing in the cold store, takes its checkpoint so).
    fn checkpoint_with(&mut self, steps: bool, cold_steps: bool) -> Result<()> {
        self.checkpoint_file(steps)?;
        // This one writes or starts the merges a due checkpoint left for the next cycle.
        self.merges_due = false;
        let text = if steps { self.recall_start_merge() } else { self.recall_write_file() };
        if let Err(e) = text {
            e.context(format_args!("the full-text index file was not written (the next open rebuilds it)"))
                .print_warning();
        }
        let cold = if cold_steps { self.cold_recall_start_merge(false) } else { self.cold_recall_write_file(false) };
        if let Err(e) = cold {
            e.context(format_args!("the cold store's text index file was not written (the next open rebuilds it)"))
                .print_warning();
        }
        self.cold_keys_quietly(false);
        Ok(())
    }

    /// [`Store::cold_keys_write`], a failure a warning (a cache: readers scan `store.cold`).
    fn cold_keys_quietly(&mut self, whole: bool) {
        if let Err(e) = self.cold_keys_write(whole) {
            e.context(format_args!("the cold store's keys file was not written (readers scan the cold store)"))
                .print_warning();
        }
    }

    /// Writes `store.ckpt` (see [`Store::checkpoint`]); `beside`: its temp file's body written
    /// now, finished and synced beside the cycle, put in place by a later step (`sync`).
    fn checkpoint_file(&mut self, beside: bool) -> Result<()> {
        self.log.check_writable()?;
        if self.log.in_batch() {
            bail!(PersistFailed, "no checkpoint inside a batch");
        }
        if self.slots.any_dirty() {
            self.flush_access_only()?;
        }
        let covered = self.log.len;
        let crc = tail_crc(self, covered)?;
        // One checkpoint's file at a time: a sync under way is let go of (this one is newer).
        self.checkpoint_sync_drop();
        self.remove_checkpoint_temp();
        // Created exclusively: never through a link planted at the temp name.
        // Read too: `finish` reads the body back for its checksums.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&self.ckpt_paths.tmp)
            .map_err(|e| err!(PersistFailed, "creating {} failed: {}", self.ckpt_paths.tmp.display(), e))?;
        let res = self.write_checkpoint(&file, covered, crc);
        let unfinished = match res {
            Ok(u) => u,
            Err(e) => {
                self.remove_checkpoint_temp();
                return Err(e);
            }
        };
        self.ckpt_bufs.reserve(self.slots.next_id(), self.slots.room());
        if beside {
            // Its checksums, header and sync beside the cycle (`finish`, `sync`).
            self.ckpt_checked_here = 0;
            return self.checkpoint_sync_beside(file, covered, unfinished);
        }
        let finished = finish::finish(&file, &unfinished, &mut self.ckpt_bufs, true);
        if let Err(e) = finished {
            self.remove_checkpoint_temp();
            bail!(PersistFailed, "writing {} failed: {}", self.ckpt_paths.tmp.display(), e);
        }
        self.ckpt_checked_here = unfinished.layout.file_len();
        self.checkpoint_in_place(covered)
    }

    /// A checkpoint when enough log was appended since the last one; a failure is a warning
    /// (the log has everything).
    pub(in crate::memory::store) fn checkpoint_if_due(&mut self) {
        if self.log.read_only() || self.log.in_batch() {
            return;
        }
        if self.log.len.saturating_sub(self.checkpointed) >= STORE_CHECKPOINT_EVERY_BYTES {
            // The merges it asks for start at the next cycle's upkeep that finds it in place
            // (`merge_step`), so that this cycle's pause is the checkpoint's write alone.
            if let Err(e) = self.checkpoint_file(true) {
                e.context(format_args!("the store's checkpoint was not written (the next open reads more log)"))
                    .print_warning();
            }
            self.merges_due = true;
        }
    }

    /// Starts the merges of the text indexes a due checkpoint asked for (see
    /// [`Store::checkpoint_in_steps`]); `false` when none was asked for.
    pub(in crate::memory::store) fn start_merges_due(&mut self) -> bool {
        if !std::mem::take(&mut self.merges_due) {
            return false;
        }
        if let Err(e) = self.recall_start_merge() {
            e.context(format_args!("the full-text index file was not written (the next open rebuilds it)"))
                .print_warning();
        }
        if let Err(e) = self.cold_recall_start_merge(false) {
            e.context(format_args!("the cold store's text index file was not written (the next open rebuilds it)"))
                .print_warning();
        }
        // (Not store.cold.keys: this is the cycle's, which allocates nothing; a compaction's
        // checkpoint and a clean stop bring it up to date.)
        true
    }

    /// A checkpoint now (after a compaction of the log, or a long replay), but the cold
    /// store's text index merge only started, run in steps by the cycles' upkeep: neither
    /// changes the cold store, and its merge rewrites the whole `store.cold.fts` (a compaction
    /// every ~200 saves of the soak made a cycle of 3.8 s so); a failure is a warning.
    pub(in crate::memory::store) fn checkpoint_quietly(&mut self) {
        if let Err(e) = self.checkpoint_with(false, true) {
            e.context(format_args!("the store's checkpoint was not written (the next open reads more log)"))
                .print_warning();
        }
    }

    /// A clean stop: access statistics written, a checkpoint taken if the log grew since the
    /// last, the text indexes' files brought up to date (`store.cold.fts` too when this run
    /// never built the cold segment, see `Store::cold_recall_open_at_close`). Dropping the
    /// store without it loses nothing durable; the next open only reads more log.
    pub fn close(mut self) -> Result<()> {
        self.stop()
    }

    /// [`Store::close`] for an owner that keeps the store (the agent, whose store is a field
    /// of its own): the same clean stop, after which the store is still usable.
    pub fn stop(&mut self) -> Result<()> {
        if self.log.read_only() {
            return Ok(());
        }
        self.end_batch()?;
        self.flush_access_only()?;
        // A checkpoint being synced is put in place (or, failing that, taken again below).
        if let Err(e) = self.checkpoint_sync_step(true) {
            e.context(format_args!("the store's checkpoint was not written")).print_warning();
        }
        // A merge under way is finished (the checkpoint below, or the file write, merges
        // what came after it).
        if let Err(e) = self.recall_step(None) {
            e.context(format_args!("the full-text index file was not written")).print_warning();
        }
        if self.log.len != self.checkpointed {
            self.checkpoint()?;
        } else if self.recall_file_behind() {
            // The full-text index was built since the last checkpoint: write its file now,
            // so the next search reads it instead of the whole log.
            if let Err(e) = self.recall_write_file() {
                e.context(format_args!("the full-text index file was not written")).print_warning();
            }
        }
        // An agent that never searched has not built the cold segment: opened now when its
        // file lacks part of store.cold, so that the write below leaves it current.
        let cold = self.cold_recall_open_at_close().and_then(|_| self.cold_recall_write_file(true));
        if let Err(e) = cold {
            e.context(format_args!("the cold store's text index file was not written")).print_warning();
        }
        // So is the cold store's keys file, from all of store.cold when it has none usable.
        self.cold_keys_quietly(true);
        Ok(())
    }

    /// [`Store::close`] for the commands that change the store: the text index is brought up
    /// to date first (from `store.fts` and what changed since, or from the log when there is
    /// no usable file), so that `close` writes `store.fts` current with the log, as the
    /// agent's checkpoint does and readers find it so. A failure to build it is a warning (the
    /// log has everything; the next reader rebuilds it).
    pub fn close_with_indexes(mut self) -> Result<()> {
        if !self.log.read_only() {
            if let Err(e) = self.recall_ready() {
                e.context(format_args!("the full-text index file was not written")).print_warning();
            }
            if let Err(e) = self.cold_recall_ready() {
                e.context(format_args!("the cold store's text index file was not written")).print_warning();
            }
        }
        self.close()
    }

    /// Writes the checkpoint's body into `file` and returns its header but for the CRCs (see
    /// `finish`, which takes them).
    fn write_checkpoint(&mut self, file: &File, covered: u64, tail: u32) -> Result<Unfinished> {
        if !self.tags.lists_kept() {
            bail!(Internal, "a checkpoint was asked for while the posting lists are not built");
        }
        let mut out = core::mem::take(&mut self.rbuf);
        let res = self.write_body(file, &mut out);
        self.rbuf = out;
        let sizes = res?;
        let mut header = [0u8; HEADER_BYTES];
        let mut w = Put { buf: &mut header, at: 0 };
        w.bytes(MAGIC);
        w.u32(FORMAT);
        w.u32(u32::from(self.tags.id_limit()));
        w.u64(self.store_id);
        w.u64(covered);
        w.u64(self.header_bytes);
        w.u64(self.live_bytes);
        w.u64(self.corrupt);
        w.u32(self.slots.next_id() as u32);
        w.u32(sizes.links as u32);
        w.u32(sizes.key_slots as u32);
        w.u32(sizes.tag_text as u32);
        w.u32(tail);
        // The body's CRC (`finish`).
        w.u32(0);
        w.u32(self.slots.live() as u32);
        w.u32(self.slots.archived_count() as u32);
        w.u64(sizes.postings);
        // The names', the directory's and the column blocks' CRCs, and the header's own, last
        // (`finish`).
        let layout = Layout {
            tags: usize::from(self.tags.id_limit()),
            tag_text: sizes.tag_text as u64,
            next_id: self.slots.next_id() as u64,
            links: sizes.links as u64,
            key_slots: sizes.key_slots as u64,
            postings: sizes.postings,
        };
        Ok(Unfinished { header, layout })
    }

    /// Writes the body, from the tag names to the posting lists (the header, the directory's
    /// list CRCs and the column blocks' CRCs after the lists are `finish`'s); returns the
    /// section sizes. Only a copy of the index: no checksum is taken here.
    fn write_body(&self, mut file: &File, out: &mut Vec<u8>) -> Result<Sizes> {
        let path = &self.ckpt_paths.tmp;
        // Room for the header, written last.
        file.write_all(&[0u8; HEADER_BYTES])
            .map_err(|e| err!(PersistFailed, "writing {} failed: {}", path.display(), e))?;
        let mut flush = |out: &mut Vec<u8>, force: bool| -> Result<()> {
            if out.len() < BLOCK && !force {
                return Ok(());
            }
            write_block(file, out, path)
        };
        out.clear();
        let limit = self.tags.id_limit();
        let mut tag_text = 0usize;
        for id in 1..limit {
            let n = self.tags.name(id).len();
            out.push(n as u8);
            tag_text += n;
            flush(out, false)?;
        }
        for id in 1..limit {
            out.extend_from_slice(self.tags.name(id).as_bytes());
            flush(out, false)?;
        }
        // The columns (see `COLUMN_WIDTHS`), each whole; the dirty flag (bit 63 of a location)
        // stays in RAM.
        let n = self.slots.next_id();
        let Some((loc, fields, tags)) = self.slots.columns(n) else {
            bail!(Internal, "the checkpoint asked for {} ids of the slots' columns, which hold fewer", n)
        };
        put_le(out, loc, |l: u64| (l & !(1u64 << 63)).to_le_bytes(), &mut flush)?;
        for field in fields {
            put_le(out, field, u32::to_le_bytes, &mut flush)?;
        }
        put_le(out, tags, tag_set_le, &mut flush)?;
        put_le(out, self.links.pairs(), |(a, b): (u32, u32)| pair_le(a, b), &mut flush)?;
        // The key table as it is: rebuilding it costs a random memory access per entry.
        let keys = self.keys.raw();
        put_le(out, keys, u32::to_le_bytes, &mut flush)?;
        // The sections read in place: the directory (each list's CRC left 0 for `finish`),
        // then the lists.
        let mut postings = 0u64;
        for id in 1..limit {
            let mut entry = [0u8; DIRECTORY_ENTRY];
            let mut w = Put { buf: &mut entry, at: 0 };
            w.u32(self.tags.list(id).len() as u32);
            w.u32(self.tags.archived_count(id));
            postings += self.tags.list(id).len() as u64;
            out.extend_from_slice(&entry);
            flush(out, false)?;
        }
        for id in 1..limit {
            put_le(out, self.tags.list(id), u32::to_le_bytes, &mut flush)?;
        }
        flush(out, true)?;
        Ok(Sizes { links: self.links.len(), key_slots: keys.len(), tag_text, postings })
    }
}

/// What `lkjagent check` learns of `store.ckpt`.
#[derive(Debug)]
pub enum CheckpointFile {
    /// There is none (the next start reads the whole log, and writes one).
    Missing,
    /// It matches the log and checks out whole: it covers `covered` of the log's `log_bytes`
    /// (all of it: the read-only commands read it in place; less: the next start replays the
    /// rest).
    Usable {
        /// Log bytes it covers.
        covered: u64,
        /// The log's length (whole records).
        log_bytes: u64,
        /// Its size.
        bytes: u64,
    },
    /// It was taken of another state of the log (another store, a log since compacted or cut
    /// back), by another format, or at a larger capacity, and why: not damage; the next start
    /// reads the whole log and writes a new one.
    Stale(crate::error::Error),
    /// It is damaged (a checksum, cut short, not a checkpoint), and why; the next start reads
    /// the whole log and writes a new one.
    Damaged(crate::error::Error),
}

impl Store {
    /// What `lkjagent check` reports about `store.ckpt`: it is read whole and checked against
    /// the log in a store of its own (this one's tables stay as they are); nothing is written.
    pub fn checkpoint_file_check(&self) -> CheckpointFile {
        let path = self.dir.join(CHECKPOINT_NAME);
        let bytes = match fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return CheckpointFile::Missing,
            Err(e) => return CheckpointFile::Damaged(err!(Io, "cannot look at {}: {}", path.display(), e)),
        };
        let mut raw = [0u8; HEADER_BYTES];
        let read_head = File::open(&path).and_then(|mut f| f.read_exact(&mut raw));
        if read_head.is_err() || !raw.starts_with(MAGIC) {
            return CheckpointFile::Damaged(err!(Io, "not a store checkpoint (or cut short)"));
        }
        if le32(&raw, 8) != FORMAT {
            return CheckpointFile::Stale(err!(Io, "of format {} (this program writes {})", le32(&raw, 8), FORMAT));
        }
        let h = match Head::parse(&raw) {
            Ok(h) => h,
            Err(e) => return CheckpointFile::Damaged(e),
        };
        if h.store != self.store_id {
            return CheckpointFile::Stale(err!(Io, "of another store log (a compaction since?)"));
        }
        if h.layout.next_id > self.slots.room() as u64 || u64::from(h.live) > self.cap as u64 {
            return CheckpointFile::Stale(err!(Io, "taken at a larger memory.store_capacity than this one"));
        }
        // A store of its own, read as the next start reads it: the log's header, then the
        // checkpoint checked whole (every checksum, every entry against the log).
        let res = super::append::LogFile::open_read_only(&self.dir.join(super::LOG_NAME)).and_then(|log| {
            let mut s = Store::with(&self.dir, log, self.cap);
            let file_len = s.log.file_len()?;
            s.read_header(file_len)?;
            if h.covered > file_len || tail_crc(&mut s, h.covered)? != h.tail {
                return Ok(Err(err!(Io, "the log changed before byte {} since it was taken", h.covered)));
            }
            read(&mut s, file_len).map(Ok)
        });
        match res {
            Ok(Ok(Some(covered))) => CheckpointFile::Usable { covered, log_bytes: self.log.len, bytes },
            Ok(Ok(None)) => CheckpointFile::Missing,
            Ok(Err(stale)) => CheckpointFile::Stale(stale),
            Err(e) => CheckpointFile::Damaged(e),
        }
    }
}

/// Appends each of `src` as `W` little-endian bytes (`le`) to `out`, passing it to `flush`
/// (which writes it out once it holds [`BLOCK`] bytes) every [`BLOCK`] bytes, so that `out` never
/// holds more than [`BLOCK`] bytes of it beyond what came before. A loop over whole elements
/// into bytes already in place, which the compiler makes a plain copy on a little-endian
/// machine: the due checkpoint's cycle copies the whole index so (an append of 2 to 8 bytes at
/// a time before, about half of that cycle at 1,048,576 entries).
fn put_le<T: Copy, const W: usize>(
    out: &mut Vec<u8>,
    src: &[T],
    le: impl Fn(T) -> [u8; W],
    flush: &mut impl FnMut(&mut Vec<u8>, bool) -> Result<()>,
) -> Result<()> {
    for chunk in src.chunks((BLOCK / W).max(1)) {
        let bytes = chunk.len() * W;
        if out.len() + bytes > BLOCK {
            flush(out, true)?;
        }
        let at = out.len();
        out.resize(at + bytes, 0);
        if let Some(dst) = out.get_mut(at..) {
            for (d, &x) in dst.chunks_exact_mut(W).zip(chunk) {
                d.copy_from_slice(&le(x));
            }
        }
        flush(out, false)?;
    }
    Ok(())
}

/// Writes `out` to `file` (named `path` in an error) and empties it. Out of line: the body's
/// `flush` is inlined at its twelve uses, and only its check of the block's fill need be.
#[inline(never)]
fn write_block(mut file: &File, out: &mut Vec<u8>, path: &Path) -> Result<()> {
    file.write_all(out).map_err(|e| err!(PersistFailed, "writing {} failed: {}", path.display(), e))?;
    out.clear();
    Ok(())
}

/// A tag set as the file holds it: its tag ids, little-endian.
fn tag_set_le(set: [u16; KEY_MAX_TAGS]) -> [u8; 2 * KEY_MAX_TAGS] {
    let mut b = [0u8; 2 * KEY_MAX_TAGS];
    for (d, t) in b.chunks_exact_mut(2).zip(set) {
        d.copy_from_slice(&t.to_le_bytes());
    }
    b
}

/// A link as the file holds it: its two ids, little-endian.
fn pair_le(a: u32, b: u32) -> [u8; 8] {
    let mut out = [0u8; 8];
    let (x, y) = out.split_at_mut(4);
    x.copy_from_slice(&a.to_le_bytes());
    y.copy_from_slice(&b.to_le_bytes());
    out
}

/// Sizes of the variable sections, for the header.
struct Sizes {
    links: usize,
    key_slots: usize,
    tag_text: usize,
    postings: u64,
}
