//! The full-text index's file, `store.fts`: the index's base segment, beside the log, searched
//! in place ([`super::disk`]) so that neither an open nor a search reads every value in
//! the log or holds the index in RAM.
//!
//! Like the checkpoint it is a cache: used only when it names the log it was taken of (the
//! same store id, a length the log still has, the same last 4 KiB before that length);
//! anything else (missing, damaged, stale, foreign) is ignored, with a warning unless it is
//! simply missing, and the index is rebuilt from the log. Entries changed after the file was
//! written are found at open (each document's record offset against the entry's) and brought
//! up to date in the delta (their old record is still in the log, which only grows between
//! compactions).
//!
//! Written by a merge of the old file and the delta (see [`super`]), by the writer
//! only, atomically (a temp file created exclusively, synced, renamed over the old one, the
//! directory synced). Only current documents and their postings are written, renumbered
//! densely, so the file has no garbage.
//!
//! Layout (format 5; little-endian; varints are LEB128):
//!
//! ```text
//! header, 128 bytes:
//!   "LKJFTS\0\0"  format u32  docs u32  store u64  covered u64  tokens u64  terms u32
//!   tail_crc u32  body_crc u32  body_len u64  dict_len u64  pages u32  doc_table_crc u32
//!   dict_crc u32  pages_crc u32  doc_pages u32  fewest tokens of a document u32  (unused)
//!   header_crc u32 (of the rest)
//! body (body_crc):
//!   lengths: docs × tokens u32
//!   records: docs × (entry u32, offset u64, record length u32)
//!   terms, in byte order of the words × (length u8, the word, postings u32, blocks u32,
//!            postings bytes u32, postings, skip table)
//!     postings: blocks of at most SKIP_BLOCK (128) × (docno gap varint, tf varint)
//!     skip table (only with 2 blocks or more): groups of SKIP_GROUP (32) entries ×
//!            (last docno u32, end of the block in the postings u32, CRC-32 of the block u32,
//!             impact u16, postings u16), each group followed by its CRC-32
//! dictionary (dict_crc), the same words in the same order, in pages of 64:
//!   terms × (length u8, the word, postings u32, file offset of the postings u64,
//!            their bytes u32, their CRC-32 u32, the last docno u32, blocks u32, impact u16,
//!            reference mean length u32)
//! page table (pages_crc):
//!   pages × (offset of the page in the dictionary u32, CRC-32 of the page u32)
//! document page table (doc_table_crc):
//!   doc_pages × (CRC-32 of DOC_PAGE (256) lengths u32, CRC-32 of their records u32)
//! ```
//!
//! The first gap of a word is its first docno; the rest are differences (at least 1), across
//! blocks too (a block's first gap counts from the previous block's last docno, which its
//! skip entry gives). A block's *impact* bounds what any of its postings can add to a score:
//! `floor(65535 · tf / (tf + k1 · (1 − b + b · |D| / A))) + 1` at most, over its postings,
//! with `A` the word's reference mean length (64ths of a token; the file's own mean length
//! when the word was written, kept when a merge copies its blocks). A query with mean length
//! `A'` bounds a block's contributions by `IDF · (k1 + 1) · impact / 65535 · max(1, A' / A)`
//! (see [`super::rank`]); the word's impact is the largest of its blocks'.
//!
//! The writer checks the sections' CRCs when it opens the file (and the document pages as it
//! reads them), `lkjagent check` every byte of every structure; a search
//! (`recall_disk`) reads the page tables, the dictionary pages of its words, the skip groups
//! and blocks it needs, and (in place) the document pages of the documents it scores, each
//! checked by its own CRC.

use crate::error::Result;
use crate::limits::{TEXT_MIN_TERMS, TEXT_TERMS_PER_ENTRY};
use crate::memory::hash::{crc32, crc32_continue};
use crate::memory::store::checkpoint::{le32, le64, tail_crc};
use crate::memory::store::Store;
use std::fs::{self, File};
use std::path::Path;

/// File name of the full-text index inside the data directory.
pub const RECALL_FILE_NAME: &str = "store.fts";
pub(in crate::memory::store) const TEMP_NAME: &str = ".store.fts.tmp";
/// The new file's dictionary while the merge writes its body.
pub(in crate::memory::store) const DICT_TEMP_NAME: &str = ".store.fts.dict.tmp";
pub(in crate::memory::store) const MAGIC: &[u8; 8] = b"LKJFTS\0\0";
pub(in crate::memory::store) const FORMAT: u32 = 5;
pub(in crate::memory::store) const HEADER_BYTES: usize = 128;
/// Words per page of the dictionary (a lookup reads one page).
pub(in crate::memory::store) const DICT_PAGE: usize = 64;
/// Postings per block (the unit a walk skips or decodes).
pub(in crate::memory::store) const SKIP_BLOCK: usize = 128;
/// Skip entries per group (the unit checked by one CRC).
pub(in crate::memory::store) const SKIP_GROUP: usize = 32;
/// Bytes of one skip entry.
pub(in crate::memory::store) const SKIP_ENTRY: usize = 16;
/// Bytes of a full group of skip entries with its CRC.
pub(in crate::memory::store) const GROUP_BYTES: usize = SKIP_GROUP * SKIP_ENTRY + 4;
/// Documents per page of the documents' lengths and records (each page checked by a CRC).
pub(in crate::memory::store) const DOC_PAGE: usize = 256;
/// Bytes of one document's record (entry, offset, record length).
pub(in crate::memory::store) const DOC_RECORD: usize = 16;
/// Bytes of one dictionary entry after its word: postings u32, offset u64, bytes u32, CRC
/// u32, last document u32, blocks u32, impact u16, reference mean length u32.
pub(in crate::memory::store) const ENTRY_TAIL: usize = 34;
/// Bytes gathered before each write.
pub(in crate::memory::store) const CHUNK: usize = 256 << 10;

/// Removes a temp file a crash left (the writer only).
pub(in crate::memory::store) fn remove_temp(dir: &Path) {
    let _ = fs::remove_file(dir.join(TEMP_NAME));
    let _ = fs::remove_file(dir.join(DICT_TEMP_NAME));
}

/// What `lkjagent check` learns of the file.
#[derive(Debug)]
pub enum RecallFile {
    /// There is none (the index is built from the log when first used).
    Missing,
    /// It was taken of the log as it is now, or of a part of it that the log still starts
    /// with (then the records after `covered` are read into the index when it is next used,
    /// and the file is written again at the writer's next checkpoint).
    Usable {
        /// Documents in it.
        docs: u32,
        /// Its size.
        bytes: u64,
        /// Bytes of log it covers.
        covered: u64,
        /// Bytes of log there are now: equal to `covered` when the file is current.
        log_len: u64,
    },
    /// It was taken of another state of the log (another store, a log since compacted or
    /// cut back) or is of another format (an older program's), and why: not damage; the
    /// index will be rebuilt.
    Stale(crate::error::Error),
    /// It is damaged (checksum, cut short, not an index file), and why; the index will be
    /// rebuilt.
    Damaged(crate::error::Error),
}

/// The varint at the front of `p`, which moves past it.
pub(in crate::memory::store) fn varint(p: &mut &[u8]) -> Result<u32> {
    // Most numbers (gaps between nearby documents, term frequencies) take one byte.
    if let Some((&b, rest)) = p.split_first() {
        if b < 0x80 {
            *p = rest;
            return Ok(u32::from(b));
        }
    }
    let mut v: u32 = 0;
    for shift in [0u32, 7, 14, 21, 28] {
        let Some((&b, rest)) = p.split_first() else { bail!(Io, "a word's postings are cut short") };
        *p = rest;
        v |= u32::from(b & 0x7F).checked_shl(shift).unwrap_or(0);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    bail!(Io, "a number longer than 5 bytes")
}

/// Bytes of a skip table of `blocks` blocks (none for a single block).
pub(in crate::memory::store) fn skip_bytes(blocks: u32) -> u64 {
    if blocks <= 1 {
        return 0;
    }
    let b = u64::from(blocks);
    b * SKIP_ENTRY as u64 + b.div_ceil(SKIP_GROUP as u64) * 4
}

impl Store {
    /// Whether the index is built and `store.fts` lacks some of it.
    pub(in crate::memory::store) fn recall_file_behind(&self) -> bool {
        self.recall_is_ready()
            && (!self.recall.index.is_empty()
                || self.recall.base.dead_docs() > 0
                || (!self.recall.base.is_open() && self.slots.live() > 0))
    }

    /// Opens `path` as the base if it matches the log (its entries' records checked against
    /// the log's: the ones changed since are marked stale for the caller to bring up to
    /// date). With `verify`, every byte is checked first (the writer, once at open).
    /// `Ok(false)`: there is none. An error: it cannot be used (the base is left closed).
    pub(in crate::memory::store) fn recall_open_base(&mut self, path: &Path, verify: bool) -> Result<bool> {
        self.recall.base.close();
        self.recall.file_stale = false;
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => bail!(Io, "opening {} failed: {}", path.display(), e),
        };
        let res = self.recall_load_base(file, verify);
        if res.is_err() {
            self.recall.base.close();
        }
        res.map(|_| true).map_err(|e| e.context(format_args!("{}", path.display())))
    }

    fn recall_load_base(&mut self, file: File, verify: bool) -> Result<()> {
        let mut raw = [0u8; HEADER_BYTES];
        {
            use std::os::unix::fs::FileExt;
            file.read_exact_at(&mut raw, 0)
                .map_err(|e| err!(Io, "reading the header of the index file failed: {}", e))?;
        }
        let h = Header::parse(&raw)?;
        self.recall_header_matches(&h, false)?;
        if verify {
            let mut buf = core::mem::take(&mut self.rbuf);
            let res = verify_file(&file, &h, &mut buf);
            self.rbuf = buf;
            res?;
        }
        let slots = &self.slots;
        let room = slots.room();
        self.recall.base.load(file, h, room, |d| slots.get(d.entry).is_some_and(|s| s.offset == d.offset))?;
        self.recall.written = h.covered;
        Ok(())
    }

    /// Checks that the file's header names this log: the same store, a length the log has
    /// (exactly its length with `exact`), the same bytes before it.
    pub(in crate::memory::store) fn recall_header_matches(&mut self, h: &Header, exact: bool) -> Result<()> {
        // Sizes within what this store can hold, before anything is reserved for them.
        let max_terms = (self.cap * TEXT_TERMS_PER_ENTRY).max(TEXT_MIN_TERMS);
        if h.docs as usize > self.slots.room() || h.terms as usize > max_terms {
            bail!(
                Io,
                "the index file lists {} documents and {} words, more than this store holds (capacity {})",
                h.docs,
                h.terms,
                self.cap
            );
        }
        self.recall.file_stale = true;
        if h.store != self.store_id {
            bail!(Io, "the index file belongs to another store log (a compaction since?)");
        }
        if h.covered > self.log.len || h.covered < self.header_bytes || (exact && h.covered != self.log.len) {
            bail!(Io, "the index file covers {} bytes of log, the log has {}", h.covered, self.log.len);
        }
        if tail_crc(self, h.covered)? != h.tail {
            bail!(Io, "the log before byte {} is not the one the index file was taken of", h.covered);
        }
        self.recall.file_stale = false;
        Ok(())
    }
}

/// Checks every section of `store.fts` against its checksum and its length against the
/// header (streaming through `buf`: what the writer does once at open, and `lkjagent check`
/// before it walks every structure).
pub(in crate::memory::store) fn verify_file(file: &File, h: &Header, buf: &mut Vec<u8>) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let sections = [
        (HEADER_BYTES as u64, h.body_len, h.body_crc, "body"),
        (h.dict_at(), h.dict_len, h.dict_crc, "dictionary"),
        (h.pages_at(), u64::from(h.pages) * 8, h.sparse_crc, "page table"),
        (h.doc_table_at(), u64::from(h.doc_pages) * 8, h.doc_table_crc, "document page table"),
    ];
    buf.clear();
    buf.resize(CHUNK, 0);
    for (at, len, want, what) in sections {
        let (mut at, mut left, mut crc) = (at, len, 0u32);
        while left > 0 {
            let n = left.min(CHUNK as u64) as usize;
            let b = buf.get_mut(..n).unwrap_or(&mut []);
            file.read_exact_at(b, at).map_err(|e| err!(Io, "the index file is cut short ({}: {})", what, e))?;
            crc = crc32_continue(crc, b);
            at += n as u64;
            left -= n as u64;
        }
        if crc != want {
            bail!(Io, "the index file is damaged (checksum of its {})", what);
        }
    }
    let end = h.doc_table_at() + u64::from(h.doc_pages) * 8;
    let len = file.metadata().map_err(|e| err!(Io, "reading the index file's size failed: {}", e))?.len();
    if len != end {
        bail!(Io, "the index file has {} bytes, its header says {}", len, end);
    }
    Ok(())
}

/// The header of `store.fts`.
#[derive(Clone, Copy, Default)]
pub(in crate::memory::store) struct Header {
    pub docs: u32,
    pub store: u64,
    pub covered: u64,
    pub tokens: u64,
    pub terms: u32,
    pub tail: u32,
    pub body_crc: u32,
    pub body_len: u64,
    pub dict_len: u64,
    pub pages: u32,
    pub doc_table_crc: u32,
    pub dict_crc: u32,
    pub sparse_crc: u32,
    pub doc_pages: u32,
    pub min_len: u32,
}

impl Header {
    /// Checks and reads a header (its own CRC, the magic, the format, sizes that fit
    /// together).
    pub(in crate::memory::store) fn parse(h: &[u8; HEADER_BYTES]) -> Result<Header> {
        if !h.starts_with(MAGIC) {
            bail!(Io, "not a full-text index file");
        }
        if h.split_last_chunk::<4>().is_none_or(|(rest, crc)| crc32(rest) != u32::from_le_bytes(*crc)) {
            bail!(Io, "the index file's header is damaged");
        }
        if le32(h, 8) != FORMAT {
            bail!(Io, "index file format {} (this program reads {})", le32(h, 8), FORMAT);
        }
        let x = Header {
            docs: le32(h, 12),
            store: le64(h, 16),
            covered: le64(h, 24),
            tokens: le64(h, 32),
            terms: le32(h, 40),
            tail: le32(h, 44),
            body_crc: le32(h, 48),
            body_len: le64(h, 52),
            dict_len: le64(h, 60),
            pages: le32(h, 68),
            doc_table_crc: le32(h, 72),
            dict_crc: le32(h, 76),
            sparse_crc: le32(h, 80),
            doc_pages: le32(h, 84),
            min_len: le32(h, 88),
        };
        if x.dict_len > u64::from(x.terms) * (1 + 255 + ENTRY_TAIL as u64)
            || u64::from(x.pages) > u64::from(x.terms) / DICT_PAGE as u64 + 1
            || x.doc_pages as usize != (x.docs as usize).div_ceil(DOC_PAGE)
            || x.body_len < u64::from(x.docs) * (4 + DOC_RECORD as u64)
        {
            bail!(Io, "the index file's header gives sizes that do not fit together");
        }
        Ok(x)
    }

    /// Whether `h` is the intact header of an index file of another format.
    pub(in crate::memory::store) fn other_format(h: &[u8; HEADER_BYTES]) -> bool {
        h.starts_with(MAGIC)
            && h.split_last_chunk::<4>().is_some_and(|(rest, crc)| crc32(rest) == u32::from_le_bytes(*crc))
            && le32(h, 8) != FORMAT
    }

    /// Where the records of the documents start in the file.
    pub(in crate::memory::store) fn records_at(&self) -> u64 {
        HEADER_BYTES as u64 + 4 * u64::from(self.docs)
    }

    /// Where the dictionary starts in the file.
    pub(in crate::memory::store) fn dict_at(&self) -> u64 {
        HEADER_BYTES as u64 + self.body_len
    }

    /// Where the dictionary's page table starts.
    pub(in crate::memory::store) fn pages_at(&self) -> u64 {
        self.dict_at() + self.dict_len
    }

    /// Where the documents' page table starts.
    pub(in crate::memory::store) fn doc_table_at(&self) -> u64 {
        self.pages_at() + 8 * u64::from(self.pages)
    }
}
