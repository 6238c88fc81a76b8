//! The full-text index's file, `store.fts`: the index written beside the log so that opening
//! it reads one compact file instead of every value in the log.
//!
//! Like the checkpoint it is a cache: used only when it names the log it was taken of
//! exactly (the same store id, a length the log still has, the same last 4 KiB before that
//! length); anything else (missing, damaged, stale, foreign) is ignored, with a warning unless
//! it is simply missing, and the index is rebuilt from the log. Entries changed after the
//! file was written are brought up to date at open, one by one (their old record is still in
//! the log, which only grows between compactions).
//!
//! Written atomically by the writer only, with the checkpoint (a temp file created
//! exclusively, synced, renamed over the old one, the directory synced). Readers never write
//! it. Only live documents and their postings are written, renumbered densely, so the file
//! is also the index without garbage.
//!
//! Layout (little-endian; varints are LEB128):
//!
//! ```text
//! header, 128 bytes:
//!   "LKJFTS\0\0"  format u32  docs u32  store u64  covered u64  tokens u64  terms u32
//!   tail_crc u32  body_crc u32  body_len u64  dict_len u64  pages u32  docs_crc u32
//!   dict_crc u32  pages_crc u32  (unused)  header_crc u32 (of the rest)
//! body (body_crc; its first part, the documents, also docs_crc):
//!   docs × (entry u32, tokens u32, offset u64, record length u32)
//!   terms, in byte order of the words × (length u8, the word, postings u32, their bytes u32,
//!            postings × (docno gap varint, tf varint))
//! dictionary (dict_crc), the same words in the same order, in pages of 64:
//!   terms × (length u8, the word, postings u32, file offset of the postings u64,
//!            their bytes u32, their CRC-32 u32)
//! page table (pages_crc):
//!   pages × (offset of the page in the dictionary u32, CRC-32 of the page u32)
//! ```
//!
//! The first gap of a word is its first docno; the rest are differences (at least 1). A
//! loading reader (the writer, or a reader when the log has grown since) reads the file
//! whole and checks every CRC; a searching reader of an up-to-date file
//! (`recall_disk`) reads the documents, the page table, the dictionary pages of its
//! words and their postings, each checked by its own CRC.

use super::checkpoint::{le32, le64, tail_crc, In, Put};
use super::fulltext::{Doc, FullText, NONE};
use super::Store;
use crate::error::Result;
use crate::memory::hash::{crc32, crc32_continue};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

/// File name of the full-text index inside the data directory.
pub const RECALL_FILE_NAME: &str = "store.fts";
const TEMP_NAME: &str = ".store.fts.tmp";
const MAGIC: &[u8; 8] = b"LKJFTS\0\0";
const FORMAT: u32 = 3;
pub(super) const HEADER_BYTES: usize = 128;
/// Words per page of the dictionary (a lookup reads one page).
const DICT_PAGE: usize = 64;
/// Bytes gathered before each write.
const CHUNK: usize = 256 << 10;

/// Removes a temp file a crash left (the writer only).
pub(super) fn remove_temp(dir: &Path) {
    let _ = fs::remove_file(dir.join(TEMP_NAME));
}

/// What `lkjagent check` learns of the file.
#[derive(Debug)]
pub enum RecallFile {
    /// There is none (the index is built from the log when first used).
    Missing,
    /// It matches the log: documents and bytes.
    Usable {
        /// Documents in it.
        docs: u32,
        /// Its size.
        bytes: u64,
    },
    /// It was taken of another state of the log (another store, a log since compacted or
    /// cut back), and why: not damage; the index will be rebuilt.
    Stale(crate::error::Error),
    /// It is damaged (checksum, cut short, not an index file), and why; the index will be
    /// rebuilt.
    Damaged(crate::error::Error),
}

/// Output through a buffer, with a running CRC and length.
struct Out<'a> {
    file: &'a mut File,
    buf: &'a mut Vec<u8>,
    crc: u32,
    len: u64,
}

impl Out<'_> {
    fn bytes(&mut self, b: &[u8]) -> Result<()> {
        self.buf.extend_from_slice(b);
        self.crc = crc32_continue(self.crc, b);
        self.len += b.len() as u64;
        if self.buf.len() >= CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    fn varint(&mut self, v: u32) -> Result<()> {
        let (b, n) = encode_varint(v);
        self.bytes(crate::bytes::take(&b, n))
    }

    fn flush(&mut self) -> Result<()> {
        self.file.write_all(self.buf).map_err(|e| err!(PersistFailed, "writing {} failed: {}", TEMP_NAME, e))?;
        self.buf.clear();
        Ok(())
    }
}

/// The varint at the front of `p`, which moves past it.
pub(super) fn varint(p: &mut &[u8]) -> Result<u32> {
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

impl Store {
    /// Writes the full-text index to `store.fts` (when it is built and current; the writer
    /// only). Called with the checkpoint.
    pub(super) fn recall_write_file(&mut self) -> Result<()> {
        if !self.recall_is_ready() || self.log.read_only() {
            return Ok(());
        }
        let covered = self.log.len;
        let tail = tail_crc(self, covered)?;
        let tmp = self.dir.join(TEMP_NAME);
        remove_temp(&self.dir);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| err!(PersistFailed, "creating {} failed: {}", tmp.display(), e))?;
        let mut buf = core::mem::take(&mut self.rbuf);
        buf.clear();
        let mut scratch = core::mem::take(&mut self.recall.scratch);
        let res = write_sections(&self.recall.index, &mut file, &mut buf, &mut scratch);
        self.recall.scratch = scratch;
        let res = res.and_then(|x| {
            let mut h = [0u8; HEADER_BYTES];
            let mut w = Put { buf: &mut h, at: 0 };
            w.bytes(MAGIC);
            w.u32(FORMAT);
            w.u32(x.docs);
            w.u64(self.store_id);
            w.u64(covered);
            w.u64(self.recall.index.total_tokens());
            w.u32(x.terms);
            w.u32(tail);
            w.u32(x.body_crc);
            w.u64(x.body_len);
            w.u64(x.dict_len);
            w.u32(x.pages);
            w.u32(x.docs_crc);
            w.u32(x.dict_crc);
            w.u32(x.sparse_crc);
            if let Some((rest, c)) = h.split_last_chunk_mut::<4>() {
                *c = crc32(rest).to_le_bytes();
            }
            use std::os::unix::fs::FileExt;
            file.write_all_at(&h, 0)
                .and_then(|_| file.sync_all())
                .map_err(|e| err!(PersistFailed, "writing {} failed: {}", tmp.display(), e))
        });
        self.rbuf = buf;
        if let Err(e) = res {
            remove_temp(&self.dir);
            return Err(e);
        }
        fs::rename(&tmp, self.dir.join(RECALL_FILE_NAME)).map_err(|e| {
            remove_temp(&self.dir);
            err!(PersistFailed, "renaming {} into place failed: {}", tmp.display(), e)
        })?;
        crate::memory::atomic::sync_dir(&self.dir)?;
        self.recall.written = covered;
        Ok(())
    }

    /// Whether the index is built and `store.fts` does not cover the whole log.
    pub(super) fn recall_file_behind(&self) -> bool {
        self.recall_is_ready() && self.recall.written != self.log.len
    }

    /// Loads `store.fts` into the (reserved) index if it matches the log. `Ok(false)`: there
    /// is none. An error: it cannot be used (the index is left empty).
    pub(super) fn recall_read_file(&mut self) -> Result<bool> {
        let path = self.dir.join(RECALL_FILE_NAME);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => bail!(Io, "opening {} failed: {}", path.display(), e),
        };
        let mut buf = core::mem::take(&mut self.rbuf);
        self.recall.file_stale = false;
        let res = self.read_file_into(file, &mut buf);
        self.rbuf = buf;
        if res.is_err() {
            self.recall.index.clear();
        }
        res.map(|_| true).map_err(|e| e.context(format_args!("{}", path.display())))
    }

    fn read_file_into(&mut self, file: File, buf: &mut Vec<u8>) -> Result<()> {
        let h = {
            let mut r = In::new(file, buf);
            let mut raw = [0u8; HEADER_BYTES];
            raw.copy_from_slice(r.take(HEADER_BYTES)?);
            let h = Header::parse(&raw)?;
            self.recall_header_matches(&h, false)?;
            self.recall.written = h.covered;
            r.crc = 0;
            let ix = &mut self.recall.index;
            ix.clear();
            for _ in 0..h.docs {
                let b = r.take(20)?;
                let doc = Doc { entry: le32(b, 0), tokens: le32(b, 4), offset: le64(b, 8), rec_len: le32(b, 16) };
                if doc.entry == NONE {
                    bail!(Io, "a document without an entry");
                }
                ix.load_doc(doc)?;
            }
            if r.crc != h.docs_crc {
                bail!(Io, "the index file is damaged (checksum of its documents)");
            }
            let mut word = [0u8; 256];
            for _ in 0..h.terms {
                let len = usize::from(*r.take(1)?.first().unwrap_or(&0));
                let w = word.get_mut(..len).unwrap_or(&mut []);
                w.copy_from_slice(r.take(len)?);
                let t = ix.load_term(w)?;
                let n = r.u32()?;
                let bytes = r.u32()? as usize;
                // Checked before reading, so a damaged length cannot ask for a huge buffer.
                if n > h.docs || bytes > n as usize * 10 {
                    bail!(Io, "a word with {} postings in {} bytes, for {} documents", n, bytes, h.docs);
                }
                let mut p = r.take(bytes)?;
                let (mut d, mut i) = (0u32, 0u32);
                ix.load_postings(t, || {
                    if i == n {
                        return Ok(None);
                    }
                    let gap = varint(&mut p)?;
                    let tf = varint(&mut p)?;
                    d = if i == 0 { gap } else { d.checked_add(gap).filter(|_| gap > 0).unwrap_or(NONE) };
                    i += 1;
                    Ok(Some((d, u16::try_from(tf).unwrap_or(u16::MAX))))
                })?;
                if !p.is_empty() {
                    bail!(Io, "a word's postings are longer than their count");
                }
            }
            if r.crc != h.body_crc {
                bail!(Io, "the index file is damaged (checksum)");
            }
            // The dictionary and its page table, for readers that do not load the index.
            r.crc = 0;
            let mut left = h.dict_len;
            while left > 0 {
                let n = left.min(64 << 10) as usize;
                r.take(n)?;
                left -= n as u64;
            }
            if r.crc != h.dict_crc {
                bail!(Io, "the index file is damaged (checksum of its dictionary)");
            }
            r.crc = 0;
            r.take(h.pages as usize * 8)?;
            if r.crc != h.sparse_crc {
                bail!(Io, "the index file is damaged (checksum of its page table)");
            }
            if r.take(1).is_ok() {
                bail!(Io, "the index file has bytes after its end");
            }
            h
        };
        let ix = &self.recall.index;
        if u64::from(h.docs) != ix.live_docs() || h.tokens != ix.total_tokens() || h.terms as usize != ix.term_count() {
            bail!(Io, "the index file's counts do not add up");
        }
        Ok(())
    }

    /// Checks that the file's header names this log: the same store, a length the log has
    /// (exactly its length with `exact`), the same bytes before it.
    pub(super) fn recall_header_matches(&mut self, h: &Header, exact: bool) -> Result<()> {
        // Sizes within what this store can hold, before anything is reserved for them.
        let sizes = super::fulltext::Sizes::for_capacity(self.cap, self.slots.room());
        if h.docs as usize > self.slots.room() || h.terms as usize > sizes.terms {
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

    /// What `lkjagent check` reports about `store.fts` (reads it whole; changes nothing).
    pub fn recall_file_check(&mut self) -> RecallFile {
        let bytes = fs::metadata(self.dir.join(RECALL_FILE_NAME)).map(|m| m.len()).unwrap_or(0);
        let was_ready = self.recall_is_ready();
        self.recall_reserve();
        let res = self.recall_read_file();
        let docs = self.recall.index.live_docs() as u32;
        self.recall_close();
        let out = match res {
            Ok(false) => RecallFile::Missing,
            Ok(true) => RecallFile::Usable { docs, bytes },
            Err(e) if self.recall.file_stale => RecallFile::Stale(e),
            Err(e) => RecallFile::Damaged(e),
        };
        if was_ready {
            // The index was current before the check borrowed its tables: build it again.
            if let Err(e) = self.recall_ready() {
                e.print_warning();
            }
        }
        out
    }
}

/// The header of `store.fts`.
pub(super) struct Header {
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
    pub docs_crc: u32,
    pub dict_crc: u32,
    pub sparse_crc: u32,
}

impl Header {
    /// Checks and reads a header (its own CRC, the magic, the format, sizes that fit
    /// together).
    pub(super) fn parse(h: &[u8; HEADER_BYTES]) -> Result<Header> {
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
            docs_crc: le32(h, 72),
            dict_crc: le32(h, 76),
            sparse_crc: le32(h, 80),
        };
        if x.dict_len > u64::from(x.terms) * (1 + 255 + 20) || u64::from(x.pages) > u64::from(x.terms) / 64 + 1 {
            bail!(Io, "the index file's header gives sizes that do not fit together");
        }
        Ok(x)
    }

    /// Where the dictionary starts in the file.
    pub(super) fn dict_at(&self) -> u64 {
        HEADER_BYTES as u64 + self.body_len
    }
}

/// Scratch of the file writer, reserved with the index's tables.
#[derive(Default)]
pub struct WriteScratch {
    /// New numbers of the documents.
    pub renumber: Vec<u32>,
    /// The live words in byte order.
    pub sorted: Vec<u32>,
    /// Each dictionary page: offset in the dictionary, CRC-32.
    pub pages: Vec<u32>,
}

/// What [`write_sections`] wrote, for the header.
struct Written {
    docs: u32,
    terms: u32,
    docs_crc: u32,
    body_crc: u32,
    body_len: u64,
    dict_crc: u32,
    dict_len: u64,
    pages: u32,
    sparse_crc: u32,
}

/// Writes everything after a blank header: documents, words with their postings (in byte
/// order of the words), the dictionary and its page table (see the module documentation).
fn write_sections(ix: &FullText, file: &mut File, buf: &mut Vec<u8>, sc: &mut WriteScratch) -> Result<Written> {
    file.write_all(&[0u8; HEADER_BYTES]).map_err(|e| err!(PersistFailed, "writing {} failed: {}", TEMP_NAME, e))?;
    // New numbers of the live documents, in order (0..live).
    sc.renumber.clear();
    let mut live = 0u32;
    for d in 0..ix.doc_count() as u32 {
        let alive = ix.doc(d).is_some_and(|x| x.entry != NONE);
        if sc.renumber.len() < sc.renumber.capacity() {
            sc.renumber.push(if alive { live } else { NONE });
        }
        live += u32::from(alive);
    }
    let mut out = Out { file, buf, crc: 0, len: 0 };
    for d in 0..ix.doc_count() as u32 {
        let Some(doc) = ix.doc(d).filter(|x| x.entry != NONE) else { continue };
        let mut b = [0u8; 20];
        let mut w = Put { buf: &mut b, at: 0 };
        w.u32(doc.entry);
        w.u32(doc.tokens);
        w.u64(doc.offset);
        w.u32(doc.rec_len);
        out.bytes(&b)?;
    }
    let docs_crc = out.crc;
    let docs_len = out.len;
    // The live words, in byte order.
    sc.sorted.clear();
    for t in 0..ix.term_count() as u32 {
        if ix.term(t).is_some_and(|x| x.df > 0) && sc.sorted.len() < sc.sorted.capacity() {
            sc.sorted.push(t);
        }
    }
    sc.sorted.sort_unstable_by(|&a, &b| ix.term_text(a).cmp(ix.term_text(b)));
    let renumber = &sc.renumber;
    let new_doc = |d: u32| renumber.get(d as usize).copied().unwrap_or(NONE);
    // A word's live postings, renumbered and gap-encoded: count, bytes, CRC.
    let measure = |t: u32| {
        let (mut n, mut bytes, mut crc, mut prev) = (0u32, 0u32, 0u32, None);
        for (d, tf) in PostingIter::new(ix, t) {
            let nd = new_doc(d);
            if nd == NONE {
                continue;
            }
            for v in [prev.map_or(nd, |p| nd - p), u32::from(tf)] {
                let (b, k) = encode_varint(v);
                crc = crc32_continue(crc, crate::bytes::take(&b, k));
                bytes += k as u32;
            }
            prev = Some(nd);
            n += 1;
        }
        (n, bytes, crc)
    };
    let mut terms = 0u32;
    for &t in sc.sorted.iter() {
        let (n, bytes, _) = measure(t);
        let word = ix.term_text(t);
        out.bytes(&[word.len() as u8])?;
        out.bytes(word)?;
        out.bytes(&n.to_le_bytes())?;
        out.bytes(&bytes.to_le_bytes())?;
        let mut prev = None;
        for (d, tf) in PostingIter::new(ix, t) {
            let nd = new_doc(d);
            if nd == NONE {
                continue;
            }
            out.varint(prev.map_or(nd, |p| nd - p))?;
            out.varint(u32::from(tf))?;
            prev = Some(nd);
        }
        terms += 1;
    }
    let (body_crc, body_len) = (out.crc, out.len);
    // The dictionary: where each word's postings are, in pages of DICT_PAGE words.
    out.crc = 0;
    out.len = 0;
    sc.pages.clear();
    let mut at = HEADER_BYTES as u64 + docs_len;
    let mut page_crc = 0u32;
    for (i, &t) in sc.sorted.iter().enumerate() {
        let (n, bytes, crc) = measure(t);
        let word = ix.term_text(t);
        if i % DICT_PAGE == 0 {
            if i > 0 {
                sc.pages.push(page_crc);
            }
            sc.pages.push(out.len as u32);
            page_crc = 0;
        }
        let postings_at = at + 1 + word.len() as u64 + 8;
        out.bytes(&[word.len() as u8])?;
        out.bytes(word)?;
        let mut tail = [0u8; 20];
        let mut w = Put { buf: &mut tail, at: 0 };
        w.u32(n);
        w.u64(postings_at);
        w.u32(bytes);
        w.u32(crc);
        out.bytes(&tail)?;
        page_crc = crc32_continue(crc32_continue(crc32_continue(page_crc, &[word.len() as u8]), word), &tail);
        at = postings_at + u64::from(bytes);
    }
    if !sc.sorted.is_empty() {
        sc.pages.push(page_crc);
    }
    let (dict_crc, dict_len) = (out.crc, out.len);
    out.crc = 0;
    for &v in sc.pages.iter() {
        out.bytes(&v.to_le_bytes())?;
    }
    let sparse_crc = out.crc;
    out.flush()?;
    Ok(Written {
        docs: live,
        terms,
        docs_crc,
        body_crc,
        body_len,
        dict_crc,
        dict_len,
        pages: (sc.pages.len() / 2) as u32,
        sparse_crc,
    })
}

/// `v` as a varint: the bytes and how many.
fn encode_varint(mut v: u32) -> ([u8; 5], usize) {
    let mut b = [0u8; 5];
    let mut n = 0;
    while let Some(slot) = b.get_mut(n) {
        let low = (v & 0x7F) as u8;
        v >>= 7;
        n += 1;
        if v == 0 {
            *slot = low;
            break;
        }
        *slot = low | 0x80;
    }
    (b, n)
}

/// The postings of term `t`, in order.
struct PostingIter<'a> {
    ix: &'a FullText,
    block: u32,
    pos: u32,
}

impl<'a> PostingIter<'a> {
    fn new(ix: &'a FullText, t: u32) -> PostingIter<'a> {
        PostingIter { ix, block: ix.term(t).map_or(NONE, |x| x.head), pos: 0 }
    }
}

impl Iterator for PostingIter<'_> {
    type Item = (u32, u16);
    fn next(&mut self) -> Option<(u32, u16)> {
        loop {
            let b = self.ix.block(self.block)?;
            if self.pos < b.n {
                let i = self.pos as usize;
                self.pos += 1;
                return Some((*b.doc.get(i)?, *b.tf.get(i)?));
            }
            self.block = b.next;
            self.pos = 0;
        }
    }
}
