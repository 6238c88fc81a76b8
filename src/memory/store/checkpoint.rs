//! The checkpoint: the index written to `store.ckpt` so that opening reads it and replays only
//! the log after it.
//!
//! The log stays the only source of truth. A checkpoint is used only when it names the log it
//! was taken of exactly: the same store id (the log's header; new at every compaction), a
//! length the log still has, and the same last 4 KiB before that length (a log cut back and
//! written again differs there). Anything else (missing, damaged, stale, foreign, from another
//! capacity that does not fit) is ignored with a warning and the log is replayed in full.
//!
//! Written atomically (a new temp file created exclusively, synced, renamed over the old one,
//! the directory synced) by the writer only: after a compaction, at a clean stop
//! ([`Store::close`]), and when [`STORE_CHECKPOINT_EVERY_BYTES`] were appended since the last.
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

use super::{EntryId, Store};
use crate::error::Result;
use crate::limits::{KEY_MAX_TAGS, STORE_CHECKPOINT_EVERY_BYTES, STORE_MAX_LINKS, TAG_MAX_BYTES};
use crate::memory::hash::{crc32, crc32_continue};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

/// File name of the checkpoint inside the data directory.
pub const CHECKPOINT_NAME: &str = "store.ckpt";
const TEMP_NAME: &str = ".store.ckpt.tmp";
const MAGIC: &[u8; 8] = b"LKJSTCK\0";
pub(super) const FORMAT: u32 = 3;
/// Bytes of the header.
pub(super) const HEADER_BYTES: usize = 160;
/// Bytes of a column block, the unit a read-only command reads and checks (see the module
/// documentation): 128 locations, 256 times or counts, or 64 tag sets.
pub const COLUMN_BLOCK: usize = crate::limits::STORE_CHECKPOINT_BLOCK_BYTES;
/// Bytes per id of each column, in the file's order: locations, created, accessed, hits,
/// version, tag ids.
pub(super) const COLUMN_WIDTHS: [usize; 6] = [8, 4, 4, 4, 4, 2 * KEY_MAX_TAGS];
/// Bytes of one tag's directory entry: count, archived count, list CRC.
pub(super) const DIRECTORY_ENTRY: usize = 12;
/// Bytes read or written per block.
const BLOCK: usize = 256 << 10;
/// Bytes of log before the covered length whose checksum the checkpoint keeps.
pub(super) const TAIL_BYTES: u64 = 4096;

/// Removes a temp file a crash left (the writer only).
pub(super) fn remove_temp(dir: &Path) {
    let _ = fs::remove_file(dir.join(TEMP_NAME));
}

/// Removes the checkpoint (before a compaction replaces the log it names).
pub(super) fn remove(dir: &Path) {
    let _ = fs::remove_file(dir.join(CHECKPOINT_NAME));
}

/// CRC-32 of the `TAIL_BYTES` of the log before `covered`.
pub(super) fn tail_crc(store: &mut Store, covered: u64) -> Result<u32> {
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
        self.log.check_writable()?;
        if self.log.in_batch() {
            bail!(PersistFailed, "no checkpoint inside a batch");
        }
        if self.slots.any_dirty() {
            self.flush_access_only()?;
        }
        let covered = self.log.len;
        let crc = tail_crc(self, covered)?;
        let tmp = self.dir.join(TEMP_NAME);
        remove_temp(&self.dir);
        // Created exclusively: never through a link planted at the temp name.
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| err!(PersistFailed, "creating {} failed: {}", tmp.display(), e))?;
        let res = self.write_checkpoint(file, covered, crc);
        if let Err(e) = res {
            remove_temp(&self.dir);
            return Err(e);
        }
        fs::rename(&tmp, self.dir.join(CHECKPOINT_NAME)).map_err(|e| {
            remove_temp(&self.dir);
            err!(PersistFailed, "renaming {} into place failed: {}", tmp.display(), e)
        })?;
        crate::memory::atomic::sync_dir(&self.dir)?;
        self.checkpointed = covered;
        // The full-text index beside it, when built: a cache too, so a failure is a warning.
        if let Err(e) = self.recall_write_file() {
            e.context(format_args!("the full-text index file was not written (the next open rebuilds it)"))
                .print_warning();
        }
        Ok(())
    }

    /// A checkpoint when enough log was appended since the last one; a failure is a warning
    /// (the log has everything).
    pub(super) fn checkpoint_if_due(&mut self) {
        if self.log.read_only() || self.log.in_batch() {
            return;
        }
        if self.log.len.saturating_sub(self.checkpointed) >= STORE_CHECKPOINT_EVERY_BYTES {
            self.checkpoint_quietly();
        }
    }

    /// A checkpoint now; a failure is a warning.
    pub(super) fn checkpoint_quietly(&mut self) {
        if let Err(e) = self.checkpoint() {
            e.context(format_args!("the store's checkpoint was not written (the next open reads more log)"))
                .print_warning();
        }
    }

    /// A clean stop: access statistics written, a checkpoint taken if the log grew since the
    /// last. Dropping the store without it loses nothing durable; the next open only reads
    /// more log.
    pub fn close(mut self) -> Result<()> {
        if self.log.read_only() {
            return Ok(());
        }
        self.end_batch()?;
        self.flush_access_only()?;
        if self.log.len != self.checkpointed {
            self.checkpoint()?;
        } else if self.recall_file_behind() {
            // The full-text index was built since the last checkpoint: write its file now,
            // so the next search reads it instead of the whole log.
            if let Err(e) = self.recall_write_file() {
                e.context(format_args!("the full-text index file was not written")).print_warning();
            }
        }
        Ok(())
    }

    fn write_checkpoint(&mut self, mut file: File, covered: u64, tail: u32) -> Result<()> {
        if !self.tags.lists_kept() {
            bail!(Internal, "a checkpoint was asked for while the posting lists are not built");
        }
        let mut out = core::mem::take(&mut self.rbuf);
        let res = self.write_body(&mut file, &mut out).and_then(|sizes| {
            let mut h = [0u8; HEADER_BYTES];
            let mut w = Put { buf: &mut h, at: 0 };
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
            w.u32(sizes.body_crc);
            w.u32(self.slots.live() as u32);
            w.u32(self.slots.archived_count() as u32);
            w.u64(sizes.postings);
            w.u32(sizes.names_crc);
            w.u32(sizes.directory_crc);
            w.u32(sizes.blocks_crc);
            // The header's last 4 bytes are the CRC of the rest.
            if let Some((covered, crc)) = h.split_last_chunk_mut::<4>() {
                *crc = crc32(covered).to_le_bytes();
            }
            let path = self.dir.join(TEMP_NAME);
            use std::os::unix::fs::FileExt;
            file.write_all_at(&h, 0)
                .and_then(|_| file.sync_all())
                .map_err(|e| err!(PersistFailed, "writing {} failed: {}", path.display(), e))
        });
        self.rbuf = out;
        res
    }

    /// Block `b` of column `col` (see [`COLUMN_WIDTHS`]) of ids `0..n`, as the file holds it,
    /// into `buf`; returns its length (0 past the column's end).
    fn column_block(&self, col: usize, n: usize, b: usize, buf: &mut [u8; COLUMN_BLOCK]) -> usize {
        let Some((loc, fields, tags)) = self.slots.columns(n) else { return 0 };
        let width = COLUMN_WIDTHS.get(col).copied().unwrap_or(4);
        let per = COLUMN_BLOCK / width;
        let mut len = 0;
        let mut put = |bytes: &[u8]| {
            if let Some(dst) = buf.get_mut(len..len + bytes.len()) {
                dst.copy_from_slice(bytes);
                len += bytes.len();
            }
        };
        match col {
            // The dirty flag (bit 63) stays in RAM.
            0 => loc.chunks(per).nth(b).unwrap_or(&[]).iter().for_each(|&l| put(&(l & !(1u64 << 63)).to_le_bytes())),
            1..=4 => fields
                .get(col - 1)
                .and_then(|c| c.chunks(per).nth(b))
                .unwrap_or(&[])
                .iter()
                .for_each(|x| put(&x.to_le_bytes())),
            _ => tags.chunks(per).nth(b).unwrap_or(&[]).iter().flatten().for_each(|t| put(&t.to_le_bytes())),
        }
        len
    }

    /// Writes everything after the header (which is written last, at offset 0, with the
    /// sections' CRCs); returns the CRCs and the section sizes.
    fn write_body(&self, file: &mut File, out: &mut Vec<u8>) -> Result<Sizes> {
        let path = self.dir.join(TEMP_NAME);
        // Room for the header, written last.
        file.write_all(&[0u8; HEADER_BYTES])
            .map_err(|e| err!(PersistFailed, "writing {} failed: {}", path.display(), e))?;
        let mut crc = 0u32;
        let mut flush = |out: &mut Vec<u8>, crc: &mut u32, force: bool| -> Result<()> {
            if out.len() < BLOCK && !force {
                return Ok(());
            }
            *crc = crc32_continue(*crc, out);
            file.write_all(out).map_err(|e| err!(PersistFailed, "writing {} failed: {}", path.display(), e))?;
            out.clear();
            Ok(())
        };
        out.clear();
        let limit = self.tags.id_limit();
        let mut tag_text = 0usize;
        let mut names_crc = 0u32;
        for id in 1..limit {
            let n = self.tags.name(id).len();
            out.push(n as u8);
            names_crc = crc32_continue(names_crc, &[n as u8]);
            tag_text += n;
            flush(out, &mut crc, false)?;
        }
        for id in 1..limit {
            out.extend_from_slice(self.tags.name(id).as_bytes());
            names_crc = crc32_continue(names_crc, self.tags.name(id).as_bytes());
            flush(out, &mut crc, false)?;
        }
        let n = self.slots.next_id();
        let mut block = [0u8; COLUMN_BLOCK];
        for col in 0..COLUMN_WIDTHS.len() {
            let mut b = 0;
            loop {
                let len = self.column_block(col, n, b, &mut block);
                if len == 0 {
                    break;
                }
                out.extend_from_slice(crate::bytes::take(&block, len));
                flush(out, &mut crc, false)?;
                b += 1;
            }
        }
        for &(a, b) in self.links.pairs() {
            out.extend_from_slice(&a.to_le_bytes());
            out.extend_from_slice(&b.to_le_bytes());
            flush(out, &mut crc, false)?;
        }
        // The key table as it is: rebuilding it costs a random memory access per entry.
        let keys = self.keys.raw();
        for chunk in keys.chunks(BLOCK / 4) {
            for v in chunk {
                out.extend_from_slice(&v.to_le_bytes());
            }
            flush(out, &mut crc, false)?;
        }
        // The sections read in place: each has CRCs of its own for the readers that read only
        // parts of it; `crc` goes on counting, so that body_crc covers the whole file.
        let mut directory_crc = 0u32;
        let mut postings = 0u64;
        for id in 1..limit {
            let list = self.tags.list(id);
            let mut list_crc = 0u32;
            for chunk in list.chunks(COLUMN_BLOCK / 4) {
                let mut len = 0;
                for (dst, v) in block.chunks_exact_mut(4).zip(chunk) {
                    dst.copy_from_slice(&v.to_le_bytes());
                    len += 4;
                }
                list_crc = crc32_continue(list_crc, crate::bytes::take(&block, len));
            }
            postings += list.len() as u64;
            let mut entry = [0u8; DIRECTORY_ENTRY];
            let mut w = Put { buf: &mut entry, at: 0 };
            w.u32(list.len() as u32);
            w.u32(self.tags.archived_count(id));
            w.u32(list_crc);
            directory_crc = crc32_continue(directory_crc, &entry);
            out.extend_from_slice(&entry);
            flush(out, &mut crc, false)?;
        }
        for id in 1..limit {
            for chunk in self.tags.list(id).chunks(BLOCK / 4) {
                for v in chunk {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                flush(out, &mut crc, false)?;
            }
        }
        let mut blocks_crc = 0u32;
        for col in 0..COLUMN_WIDTHS.len() {
            let mut b = 0;
            loop {
                let len = self.column_block(col, n, b, &mut block);
                if len == 0 {
                    break;
                }
                let c = crc32(crate::bytes::take(&block, len)).to_le_bytes();
                blocks_crc = crc32_continue(blocks_crc, &c);
                out.extend_from_slice(&c);
                flush(out, &mut crc, false)?;
                b += 1;
            }
        }
        flush(out, &mut crc, true)?;
        Ok(Sizes {
            links: self.links.len(),
            key_slots: keys.len(),
            tag_text,
            body_crc: crc,
            names_crc,
            directory_crc,
            blocks_crc,
            postings,
        })
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

/// Sizes and CRCs of the variable sections, for the header.
struct Sizes {
    links: usize,
    key_slots: usize,
    tag_text: usize,
    body_crc: u32,
    names_crc: u32,
    directory_crc: u32,
    blocks_crc: u32,
    postings: u64,
}

/// The byte sizes of a checkpoint's sections, from its header's counts: where each starts is
/// the sum of the ones before (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub(super) struct Layout {
    /// One past the highest tag id.
    pub(super) tags: usize,
    /// Bytes of tag text.
    pub(super) tag_text: u64,
    /// Ids in use (rows of each column).
    pub(super) next_id: u64,
    pub(super) links: u64,
    pub(super) key_slots: u64,
    pub(super) postings: u64,
}

impl Layout {
    // Sizes come from a header that may be damaged: sums saturate (a file that long does not
    // exist, so such a header is refused by its length).

    /// Where the tag lengths start (the text follows them).
    pub(super) fn names_at(&self) -> u64 {
        HEADER_BYTES as u64
    }
    /// Where column `col` starts.
    pub(super) fn column_at(&self, col: usize) -> u64 {
        let before: u64 = COLUMN_WIDTHS.iter().take(col).map(|&w| w as u64).sum();
        self.names_at()
            .saturating_add(self.tags.saturating_sub(1) as u64)
            .saturating_add(self.tag_text)
            .saturating_add(before.saturating_mul(self.next_id))
    }
    /// Bytes of column `col`.
    pub(super) fn column_len(&self, col: usize) -> u64 {
        COLUMN_WIDTHS.get(col).map_or(0, |&w| (w as u64).saturating_mul(self.next_id))
    }
    /// Where the directory starts (after the links and the key table).
    pub(super) fn directory_at(&self) -> u64 {
        self.column_at(COLUMN_WIDTHS.len())
            .saturating_add(self.links.saturating_mul(8))
            .saturating_add(self.key_slots.saturating_mul(4))
    }
    /// Where the posting lists start.
    pub(super) fn postings_at(&self) -> u64 {
        self.directory_at().saturating_add((DIRECTORY_ENTRY as u64).saturating_mul(self.tags.saturating_sub(1) as u64))
    }
    /// Blocks of column `col`.
    pub(super) fn blocks(&self, col: usize) -> u64 {
        self.column_len(col).div_ceil(COLUMN_BLOCK as u64)
    }
    /// Where the column blocks' CRCs start.
    pub(super) fn blocks_at(&self) -> u64 {
        self.postings_at().saturating_add(self.postings.saturating_mul(4))
    }
    /// The whole file's length.
    pub(super) fn file_len(&self) -> u64 {
        let blocks: u64 = (0..COLUMN_WIDTHS.len()).map(|c| self.blocks(c)).fold(0, u64::saturating_add);
        self.blocks_at().saturating_add(blocks.saturating_mul(4))
    }
}

/// Writes little-endian fields into the header.
/// A writer of little-endian fields into a fixed header.
pub(super) struct Put<'b> {
    pub(super) buf: &'b mut [u8],
    pub(super) at: usize,
}

impl Put<'_> {
    pub(super) fn bytes(&mut self, b: &[u8]) {
        if let Some(dst) = self.buf.get_mut(self.at..self.at + b.len()) {
            dst.copy_from_slice(b);
        }
        self.at += b.len();
    }
    pub(super) fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }
    pub(super) fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
}

/// Reads the checkpoint into the (empty) index of `store` if it matches the log; returns the
/// log length it covers. `None` when there is none (with a warning when the log is large
/// enough that one was expected); an error when it cannot be used (the caller warns, resets
/// and replays the whole log).
pub(super) fn read(store: &mut Store, file_len: u64) -> Result<Option<u64>> {
    let path = store.dir.join(CHECKPOINT_NAME);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if file_len >= 2 * STORE_CHECKPOINT_EVERY_BYTES && store.format == crate::memory::log::FORMAT_VERSION {
                err!(Io, "{} is missing; reading the whole store log ({} bytes)", path.display(), file_len)
                    .print_warning();
            }
            return Ok(None);
        }
        Err(e) => bail!(Io, "opening {} failed: {}", path.display(), e),
    };
    if store.format < crate::memory::log::FORMAT_VERSION {
        bail!(Io, "{} belongs to a version 1 log", path.display());
    }
    let mut buf = core::mem::take(&mut store.rbuf);
    let res = read_into(store, file, &mut buf, file_len).map_err(|e| e.context(format_args!("{}", path.display())));
    store.rbuf = buf;
    res.map(Some)
}

/// A sequential reader over a file (the checkpoint, the full-text index's file) with a
/// running CRC of what it returned.
pub(super) struct In<'b> {
    file: File,
    buf: &'b mut Vec<u8>,
    pos: usize,
    pub(super) crc: u32,
}

impl<'b> In<'b> {
    /// A reader of `file` from its start, through `buf` (cleared).
    pub(super) fn new(file: File, buf: &'b mut Vec<u8>) -> In<'b> {
        buf.clear();
        In { file, buf, pos: 0, crc: 0 }
    }

    /// The next `n` bytes.
    pub(super) fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.pos + n > self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
            let have = self.buf.len();
            let want = (256usize << 10).max(n);
            self.buf.resize(have + want, 0);
            let mut got = 0;
            while got < want {
                match self.file.read(self.buf.get_mut(have + got..).unwrap_or(&mut [])) {
                    Ok(0) => break,
                    Ok(k) => got += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => bail!(Io, "reading failed: {}", e),
                }
            }
            self.buf.truncate(have + got);
            if self.buf.len() < n {
                bail!(Io, "the file is cut short");
            }
        }
        // Refilled above to hold `n` bytes from `pos`; never fewer passed off as them.
        let Some(s) = self.buf.get(self.pos..self.pos + n) else { bail!(Io, "the file is cut short") };
        self.crc = crc32_continue(self.crc, s);
        self.pos += n;
        Ok(s)
    }

    /// The next little-endian u32.
    pub(super) fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
    }
}

/// The little-endian numbers at the header's fixed offsets (0 past its end).
pub(super) fn le32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).and_then(|s| s.try_into().ok()).map_or(0, u32::from_le_bytes)
}

pub(super) fn le64(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).and_then(|s| s.try_into().ok()).map_or(0, u64::from_le_bytes)
}

/// A checkpoint's header, checked (magic, format, its own CRC) and read.
#[derive(Clone, Copy, Debug)]
pub(super) struct Head {
    pub(super) store: u64,
    pub(super) covered: u64,
    pub(super) header_bytes: u64,
    pub(super) live_bytes: u64,
    pub(super) corrupt: u64,
    pub(super) tail: u32,
    pub(super) body_crc: u32,
    /// Live entries, and the archived ones among them.
    pub(super) live: u32,
    pub(super) archived: u32,
    pub(super) names_crc: u32,
    pub(super) directory_crc: u32,
    pub(super) blocks_crc: u32,
    pub(super) layout: Layout,
}

impl Head {
    pub(super) fn parse(hdr: &[u8; HEADER_BYTES]) -> Result<Head> {
        let u32_at = |at: usize| le32(hdr, at);
        let u64_at = |at: usize| le64(hdr, at);
        if !hdr.starts_with(MAGIC) {
            bail!(Io, "not a store checkpoint");
        }
        if u32_at(8) != FORMAT {
            bail!(Io, "checkpoint format {} (this program reads {}); it is written again", u32_at(8), FORMAT);
        }
        // The header's last 4 bytes are the CRC of the rest.
        if hdr.split_last_chunk::<4>().is_none_or(|(rest, crc)| crc32(rest) != u32::from_le_bytes(*crc)) {
            bail!(Io, "the checkpoint's header is damaged");
        }
        Ok(Head {
            store: u64_at(16),
            covered: u64_at(24),
            header_bytes: u64_at(32),
            live_bytes: u64_at(40),
            corrupt: u64_at(48),
            tail: u32_at(72),
            body_crc: u32_at(76),
            live: u32_at(80),
            archived: u32_at(84),
            names_crc: u32_at(96),
            directory_crc: u32_at(100),
            blocks_crc: u32_at(104),
            layout: Layout {
                tags: u32_at(12) as usize,
                tag_text: u64::from(u32_at(68)),
                next_id: u64::from(u32_at(56)),
                links: u64::from(u32_at(60)),
                key_slots: u64::from(u32_at(64)),
                postings: u64_at(88),
            },
        })
    }
}

fn read_into(store: &mut Store, file: File, buf: &mut Vec<u8>, file_len: u64) -> Result<u64> {
    buf.clear();
    let ckpt_len = file.metadata().map_err(|e| err!(Io, "reading failed: {}", e))?.len();
    let mut r = In::new(file, buf);
    let mut hdr = [0u8; HEADER_BYTES];
    hdr.copy_from_slice(r.take(HEADER_BYTES)?);
    let h = Head::parse(&hdr)?;
    let tags = h.layout.tags;
    let id = h.store;
    let covered = h.covered;
    let header_bytes = h.header_bytes;
    let next_id = h.layout.next_id as usize;
    let links = h.layout.links as usize;
    let key_slots = h.layout.key_slots as usize;
    let tag_text = h.layout.tag_text as usize;
    if ckpt_len != h.layout.file_len() {
        bail!(Io, "the checkpoint has {} bytes; its header describes {}", ckpt_len, h.layout.file_len());
    }
    if id != store.store_id {
        bail!(Io, "the checkpoint is of another log (store {:016x}, the log is {:016x})", id, store.store_id);
    }
    if covered > file_len || covered < header_bytes || header_bytes != store.header_bytes {
        bail!(Io, "the checkpoint covers {} bytes of log; the log has {}", covered, file_len);
    }
    if next_id > store.slots.room() {
        bail!(Io, "the checkpoint names {} ids, more than this capacity has room for", next_id);
    }
    if tags == 0 || tags > store.tags.max() + 1 || tag_text > tags * TAG_MAX_BYTES || links > STORE_MAX_LINKS {
        bail!(Io, "the checkpoint's tag or link counts are out of range");
    }
    // The body's CRC is counted from here on.
    r.crc = 0;
    load_tags(store, &mut r, tags, tag_text)?;
    // The entry table, column by column, straight into place.
    let Some(cols) = store.slots.columns_mut(next_id) else { bail!(Io, "entry table out of range") };
    fill(&mut r, cols.loc, 8, |b| b.try_into().map_or(0, u64::from_le_bytes))?;
    for col in [cols.created, cols.accessed, cols.hits, cols.ver] {
        fill(&mut r, col, 4, |b| b.try_into().map_or(0, u32::from_le_bytes))?;
    }
    fill(&mut r, cols.tags, 16, |b| {
        let mut set = [0u16; KEY_MAX_TAGS];
        for (t, pair) in set.iter_mut().zip(b.chunks_exact(2)) {
            *t = pair.try_into().map_or(0, u16::from_le_bytes);
        }
        set
    })?;
    store.slots.finish_bulk(next_id);
    if store.slots.live() > store.cap {
        bail!(Io, "the checkpoint holds {} entries, more than memory.store_capacity", store.slots.live());
    }
    // Every live entry: within the covered log, tags that exist, in order and padded with zeros;
    // each tag counted.
    for i in 0..next_id as EntryId {
        let Some(slot) = store.slots.get(i) else { continue };
        if slot.offset < header_bytes || slot.len == 0 || slot.offset + u64::from(slot.len) > covered {
            bail!(Io, "entry {} points outside the covered log", i);
        }
        let set = store.slots.tagset(i);
        let n = set.iter().position(|&t| t == 0).unwrap_or(KEY_MAX_TAGS);
        if n == 0
            || set.get(n..).is_some_and(|rest| rest.iter().any(|&t| t != 0))
            || set.iter().take(n).any(|&t| usize::from(t) >= tags || !store.tags.is_interned(t))
        {
            bail!(Io, "entry {} names a tag that is not there", i);
        }
        for &t in crate::bytes::take(&set, n) {
            store.tags.add(t, i, slot.archived)?;
        }
    }
    for _ in 0..links {
        let (a, b) = (r.u32()?, r.u32()?);
        if !store.contains(a) || !store.contains(b) || a == b || store.links.contains(a, b) {
            bail!(Io, "a link between {} and {} that cannot be", a, b);
        }
        store.links.add(a, b)?;
    }
    // The key table: used as it is when this capacity sizes it the same (every slot names a
    // live entry, the count matches), else rebuilt.
    let same = key_slots == store.keys.raw().len();
    let mut filled = 0usize;
    let mut at = 0usize;
    while at < key_slots {
        let k = (key_slots - at).min(BLOCK / 4);
        let b = r.take(4 * k)?;
        if same {
            let dst = store.keys.raw_mut().get_mut(at..at + k).unwrap_or(&mut []);
            for (d, src) in dst.iter_mut().zip(b.chunks_exact(4)) {
                let v = src.try_into().map_or(0, u32::from_le_bytes);
                if v != 0 {
                    if !store.slots.is_live(v - 1) {
                        bail!(Io, "the key table names entry {}, which is not there", v - 1);
                    }
                    filled += 1;
                }
                *d = v;
            }
        }
        at += k;
    }
    // The sections read in place follow: the writer's open uses none of them, but reads them
    // through the body's CRC, so that damage anywhere in the file is found here too.
    let mut left = h.layout.file_len().saturating_sub(h.layout.directory_at());
    while left > 0 {
        let k = left.min(BLOCK as u64) as usize;
        r.take(k)?;
        left -= k as u64;
    }
    if r.crc != h.body_crc {
        bail!(Io, "checksum mismatch");
    }
    if r.pos != r.buf.len() || r.file.read(&mut [0u8; 1]).map_err(|e| err!(Io, "reading failed: {}", e))? != 0 {
        bail!(Io, "unexpected bytes after the checkpoint's end");
    }
    if !same {
        store.rebuild_keys()?;
    } else if filled != store.slots.live() {
        bail!(Io, "the key table holds {} entries, the checkpoint {}", filled, store.slots.live());
    }
    // Last: the log must still hold what the checkpoint was taken of.
    if tail_crc(store, covered)? != h.tail {
        bail!(Io, "the log changed before byte {} since the checkpoint was taken (stale)", covered);
    }
    if store.slots.live() != h.live as usize || store.slots.archived_count() != h.archived as usize {
        bail!(
            Io,
            "the checkpoint's header counts {} entries ({} archived); its table {}",
            h.live,
            h.archived,
            store.slots.live()
        );
    }
    store.header_bytes = header_bytes;
    store.live_bytes = h.live_bytes;
    store.corrupt = h.corrupt;
    store.log.len = covered;
    Ok(covered)
}

/// Reads the tag names (all lengths, then all text) and interns each under its id. The
/// lengths are copied out first (at most 64 KiB, once per open).
fn load_tags(store: &mut Store, r: &mut In<'_>, tags: usize, tag_text: usize) -> Result<()> {
    let mut all_lens: Vec<u8> = Vec::with_capacity(tags);
    all_lens.extend_from_slice(r.take(tags - 1)?);
    if all_lens.iter().map(|&l| usize::from(l)).sum::<usize>() != tag_text {
        bail!(Io, "the tag lengths do not add up to the tag text");
    }
    for (i, &n) in all_lens.iter().enumerate() {
        let n = usize::from(n);
        if n > TAG_MAX_BYTES {
            bail!(Io, "a tag of {} bytes", n);
        }
        let text = r.take(n)?;
        if n > 0 {
            let s = core::str::from_utf8(text).map_err(|_| err!(Io, "tag id {} is not UTF-8", i + 1))?;
            store.tags.restore((i + 1) as u16, s)?;
        }
    }
    store.tags.finish_restore();
    Ok(())
}

/// Fills `dst` from the next `dst.len() * width` bytes, converting each `width`-byte group.
fn fill<T>(r: &mut In<'_>, dst: &mut [T], width: usize, convert: impl Fn(&[u8]) -> T) -> Result<()> {
    let per_block = (BLOCK / width).max(1);
    for chunk in dst.chunks_mut(per_block) {
        let b = r.take(chunk.len() * width)?;
        for (d, src) in chunk.iter_mut().zip(b.chunks_exact(width)) {
            *d = convert(src);
        }
    }
    Ok(())
}
