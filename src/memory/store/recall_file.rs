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
//! header, 64 bytes:
//!   "LKJFTS\0\0"  format u32  docs u32  store u64  covered u64  tokens u64  terms u32
//!   tail_crc u32  body_crc u32  body_len u64  header_crc u32 (of the rest)
//! body:
//!   docs × (entry u32, tokens u32, offset u64, record length u32)
//!   terms × (length u8, the word, postings u32, their bytes u32,
//!            postings × (docno gap varint, tf varint))
//! ```
//!
//! The first gap of a word is its first docno; the rest are differences (at least 1).

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
const FORMAT: u32 = 2;
const HEADER_BYTES: usize = 64;
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

    fn varint(&mut self, mut v: u32) -> Result<()> {
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
        self.bytes(crate::bytes::take(&b, n))
    }

    fn flush(&mut self) -> Result<()> {
        self.file.write_all(self.buf).map_err(|e| err!(PersistFailed, "writing {} failed: {}", TEMP_NAME, e))?;
        self.buf.clear();
        Ok(())
    }
}

/// The varint at the front of `p`, which moves past it.
fn varint(p: &mut &[u8]) -> Result<u32> {
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
        let mut renumber = core::mem::take(&mut self.recall.renumber);
        let res = write_body(&self.recall.index, &mut file, &mut buf, &mut renumber);
        self.recall.renumber = renumber;
        let res = res.and_then(|(docs, terms, crc, len)| {
            let ix = &self.recall.index;
            let mut h = [0u8; HEADER_BYTES];
            let mut w = Put { buf: &mut h, at: 0 };
            w.bytes(MAGIC);
            w.u32(FORMAT);
            w.u32(docs);
            w.u64(self.store_id);
            w.u64(covered);
            w.u64(ix.total_tokens());
            w.u32(terms);
            w.u32(tail);
            w.u32(crc);
            w.u64(len);
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
        crate::memory::atomic::sync_dir(&self.dir)
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
        let (docs, terms, tokens) = {
            let mut r = In::new(file, buf);
            let (docs, terms, tokens, body_crc, body_len) = self.read_fts_header(&mut r)?;
            r.crc = 0;
            let ix = &mut self.recall.index;
            ix.clear();
            for _ in 0..docs {
                let b = r.take(20)?;
                let doc = Doc { entry: le32(b, 0), tokens: le32(b, 4), offset: le64(b, 8), rec_len: le32(b, 16) };
                if doc.entry == NONE {
                    bail!(Io, "a document without an entry");
                }
                ix.load_doc(doc)?;
            }
            let mut word = [0u8; 256];
            for _ in 0..terms {
                let len = usize::from(*r.take(1)?.first().unwrap_or(&0));
                let w = word.get_mut(..len).unwrap_or(&mut []);
                w.copy_from_slice(r.take(len)?);
                let t = ix.load_term(w)?;
                let n = r.u32()?;
                let bytes = r.u32()? as usize;
                // Checked before reading, so a damaged length cannot ask for a huge buffer.
                if n > docs || bytes > n as usize * 10 {
                    bail!(Io, "a word with {} postings in {} bytes, for {} documents", n, bytes, docs);
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
            if r.crc != body_crc {
                bail!(Io, "the index file is damaged (checksum)");
            }
            if r.take(1).is_ok() {
                bail!(Io, "the index file has bytes after its end ({} bytes of body expected)", body_len);
            }
            (docs, terms, tokens)
        };
        let ix = &self.recall.index;
        if u64::from(docs) != ix.live_docs() || tokens != ix.total_tokens() || terms as usize != ix.term_count() {
            bail!(Io, "the index file's counts do not add up");
        }
        Ok(())
    }

    /// Reads and checks the header against the log; returns docs, terms, tokens, body CRC and
    /// body length.
    fn read_fts_header(&mut self, r: &mut In<'_>) -> Result<(u32, u32, u64, u32, u64)> {
        let mut h = [0u8; HEADER_BYTES];
        h.copy_from_slice(r.take(HEADER_BYTES)?);
        if !h.starts_with(MAGIC) {
            bail!(Io, "not a full-text index file");
        }
        if h.split_last_chunk::<4>().is_none_or(|(rest, crc)| crc32(rest) != u32::from_le_bytes(*crc)) {
            bail!(Io, "the index file's header is damaged");
        }
        if le32(&h, 8) != FORMAT {
            bail!(Io, "index file format {} (this program reads {})", le32(&h, 8), FORMAT);
        }
        let (docs, store, covered, tokens) = (le32(&h, 12), le64(&h, 16), le64(&h, 24), le64(&h, 32));
        let (terms, tail, body_crc, body_len) = (le32(&h, 40), le32(&h, 44), le32(&h, 48), le64(&h, 52));
        self.recall.file_stale = true;
        if store != self.store_id {
            bail!(Io, "the index file belongs to another store log (a compaction since?)");
        }
        if covered > self.log.len || covered < self.header_bytes {
            bail!(Io, "the index file covers {} bytes of log, the log has {}", covered, self.log.len);
        }
        if tail_crc(self, covered)? != tail {
            bail!(Io, "the log before byte {} is not the one the index file was taken of", covered);
        }
        self.recall.file_stale = false;
        Ok((docs, terms, tokens, body_crc, body_len))
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

/// Writes the live documents and postings of `ix` after a blank header; returns documents,
/// terms, the body's CRC and length.
fn write_body(
    ix: &FullText,
    file: &mut File,
    buf: &mut Vec<u8>,
    renumber: &mut Vec<u32>,
) -> Result<(u32, u32, u32, u64)> {
    file.write_all(&[0u8; HEADER_BYTES]).map_err(|e| err!(PersistFailed, "writing {} failed: {}", TEMP_NAME, e))?;
    // New numbers of the live documents, in order (0..live), in a buffer reserved with the
    // index (room for every document number).
    renumber.clear();
    let mut live = 0u32;
    for d in 0..ix.doc_count() as u32 {
        let alive = ix.doc(d).is_some_and(|x| x.entry != NONE);
        renumber.push(if alive { live } else { NONE });
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
    let new_doc = |d: u32| renumber.get(d as usize).copied().unwrap_or(NONE);
    let mut terms = 0u32;
    for t in 0..ix.term_count() as u32 {
        let postings = || PostingIter::new(ix, t).filter(|&(d, _)| new_doc(d) != NONE);
        let (mut n, mut bytes, mut prev) = (0u32, 0u32, None);
        for (d, tf) in postings() {
            let nd = new_doc(d);
            bytes += varint_len(prev.map_or(nd, |p| nd - p)) + varint_len(u32::from(tf));
            prev = Some(nd);
            n += 1;
        }
        if n == 0 {
            continue;
        }
        let word = ix.term_text(t);
        out.bytes(&[word.len() as u8])?;
        out.bytes(word)?;
        out.bytes(&n.to_le_bytes())?;
        out.bytes(&bytes.to_le_bytes())?;
        let mut prev = None;
        for (d, tf) in postings() {
            let nd = new_doc(d);
            out.varint(prev.map_or(nd, |p| nd - p))?;
            out.varint(u32::from(tf))?;
            prev = Some(nd);
        }
        terms += 1;
    }
    out.flush()?;
    Ok((live, terms, out.crc, out.len))
}

/// Bytes of `v` as a varint.
fn varint_len(v: u32) -> u32 {
    match v {
        0..0x80 => 1,
        0x80..0x4000 => 2,
        0x4000..0x20_0000 => 3,
        0x20_0000..0x1000_0000 => 4,
        _ => 5,
    }
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
