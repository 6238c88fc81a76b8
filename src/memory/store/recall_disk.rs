//! Searching `store.fts` where it lies: what a read-only command uses when the file is up to
//! date with the log (it covers the log exactly), so that one search does not load the index.
//!
//! Opening reads the header, the documents (entry and length: 8 bytes each in RAM) and the
//! dictionary's page table. A query then reads, by positioned reads, the dictionary page of
//! each of its words (binary search over the pages' first words) and walks each word's
//! postings through a buffer of [`RECALL_READ_BYTES`] of its own, refilled as the walk goes:
//! the bytes a query touches are the pages and postings of its words, and the RAM is the
//! documents plus [`RANK_MAX_TERMS`] × [`RECALL_READ_BYTES`], reserved once. Every page is
//! checked against its CRC when read, and every word's postings when its walk reaches their
//! end (a walk that pruning stops early has used only what it read). A mismatch is an error:
//! the store then loads the file whole, which finds the damage and rebuilds from the log.
//!
//! When the log has grown since the file was written (an agent writing, or a crash before
//! its next checkpoint) the file is not used this way: the store loads it and brings it up to
//! date instead ([`super::recall`]).

use super::checkpoint::{le32, le64};
use super::fulltext::NONE;
use super::rank::{QueryWord, Walk};
use super::recall_file::RECALL_FILE_NAME;
use super::recall_file::{varint, Header, HEADER_BYTES};
use super::{EntryId, Store};
use crate::error::Result;
use crate::limits::{RANK_MAX_TERMS, RECALL_READ_BYTES, TEXT_TOKEN_MAX_BYTES};
use crate::memory::hash::{crc32, crc32_continue};
use std::fs::File;
use std::os::unix::fs::FileExt;

/// Bytes of one dictionary entry after its word: postings u32, offset u64, bytes u32, CRC u32.
const ENTRY_TAIL: usize = 20;
/// Most bytes of one dictionary page (64 words of the longest length).
const PAGE_MAX: usize = 64 * (1 + TEXT_TOKEN_MAX_BYTES + ENTRY_TAIL);

/// `store.fts` opened for searching in place.
pub struct DiskIndex {
    file: File,
    header: Header,
    /// Per document: entry, tokens.
    docs: Vec<(u32, u32)>,
    /// Per dictionary page: offset in the dictionary, CRC-32.
    pages: Vec<(u32, u32)>,
    page: Vec<u8>,
    chunks: Vec<u8>,
}

fn read_at(file: &File, buf: &mut [u8], at: u64) -> Result<()> {
    file.read_exact_at(buf, at)
        .map_err(|e| err!(Io, "reading {} bytes at byte {} of store.fts failed: {}", buf.len(), at, e))
}

impl DiskIndex {
    /// Opens `file`, whose header `h` was checked against the log.
    pub(super) fn open(file: File, h: Header) -> Result<DiskIndex> {
        let mut docs = Vec::with_capacity(h.docs as usize);
        let mut chunks = vec![0u8; RANK_MAX_TERMS * RECALL_READ_BYTES];
        let mut at = HEADER_BYTES as u64;
        let mut left = u64::from(h.docs) * 20;
        let mut crc = 0u32;
        let step = (chunks.len() / 20) * 20;
        while left > 0 {
            let n = left.min(step as u64) as usize;
            let buf = chunks.get_mut(..n).unwrap_or(&mut []);
            read_at(&file, buf, at)?;
            crc = crc32_continue(crc, buf);
            for b in buf.chunks_exact(20) {
                docs.push((le32(b, 0), le32(b, 4)));
            }
            at += n as u64;
            left -= n as u64;
        }
        if crc != h.docs_crc {
            bail!(Io, "store.fts is damaged (checksum of its documents)");
        }
        let mut table = vec![0u8; h.pages as usize * 8];
        read_at(&file, &mut table, h.dict_at() + h.dict_len)?;
        if crc32(&table) != h.sparse_crc {
            bail!(Io, "store.fts is damaged (checksum of its page table)");
        }
        let pages = table.chunks_exact(8).map(|b| (le32(b, 0), le32(b, 4))).collect();
        Ok(DiskIndex { file, header: h, docs, pages, page: vec![0u8; PAGE_MAX], chunks })
    }

    /// Live documents and their tokens.
    pub(super) fn totals(&self) -> (u64, u64) {
        (u64::from(self.header.docs), self.header.tokens)
    }

    /// RAM held, bytes.
    pub(super) fn ram_bytes(&self) -> usize {
        self.docs.capacity() * 8 + self.pages.capacity() * 8 + self.page.capacity() + self.chunks.capacity()
    }

    /// Reads and checks dictionary page `p` into the page buffer; returns its length.
    fn load_page(&mut self, p: usize) -> Result<usize> {
        let Some(&(off, crc)) = self.pages.get(p) else { bail!(Io, "store.fts has no dictionary page {}", p) };
        let end = self.pages.get(p + 1).map_or(self.header.dict_len, |x| u64::from(x.0));
        let len = end.saturating_sub(u64::from(off)) as usize;
        let Some(buf) = self.page.get_mut(..len) else { bail!(Io, "store.fts: a dictionary page of {} bytes", len) };
        read_at(&self.file, buf, self.header.dict_at() + u64::from(off))?;
        if crc32(buf) != crc {
            bail!(Io, "store.fts is damaged (checksum of dictionary page {})", p);
        }
        Ok(len)
    }

    /// The word's place in the file, if the index has it.
    pub(super) fn find(&mut self, word: &[u8]) -> Result<Option<QueryWord>> {
        // The last page whose first word is at most `word`.
        let (mut lo, mut hi) = (0usize, self.pages.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            let len = self.load_page(mid)?;
            let first = entries(self.page.get(..len).unwrap_or(&[])).next().map(|e| e.0).unwrap_or(&[]);
            if word < first {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let Some(p) = lo.checked_sub(1) else { return Ok(None) };
        let len = self.load_page(p)?;
        for (w, tail) in entries(self.page.get(..len).unwrap_or(&[])) {
            if w == word {
                return Ok(Some(QueryWord {
                    df: le32(tail, 0),
                    at: le64(tail, 4),
                    bytes: le32(tail, 12),
                    crc: le32(tail, 16),
                    mult: 0.0,
                }));
            }
        }
        Ok(None)
    }

    /// What a query's walks need: the file, a buffer for each word, and the documents
    /// (entry, tokens per document number).
    pub(super) fn walk_parts(&mut self) -> (&File, core::slice::ChunksMut<'_, u8>, &[(EntryId, u32)]) {
        (&self.file, self.chunks.chunks_mut(RECALL_READ_BYTES), &self.docs)
    }
}

impl Store {
    /// `store.fts` opened for searching in place, when it is there,
    /// covers the log exactly and its header, documents and page table check out.
    pub(super) fn recall_open_disk(&mut self) -> Option<DiskIndex> {
        let file = File::open(self.dir.join(RECALL_FILE_NAME)).ok()?;
        let mut raw = [0u8; HEADER_BYTES];
        file.read_exact_at(&mut raw, 0).ok()?;
        let h = Header::parse(&raw).ok()?;
        self.recall_header_matches(&h, true).ok()?;
        DiskIndex::open(file, h).ok()
    }
}

/// The entries of a dictionary page: (word, the 20 bytes after it).
fn entries(mut page: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
    core::iter::from_fn(move || {
        let (&len, rest) = page.split_first()?;
        let len = usize::from(len);
        let word = rest.get(..len)?;
        let tail = rest.get(len..len + ENTRY_TAIL)?;
        page = rest.get(len + ENTRY_TAIL..)?;
        Some((word, tail))
    })
}

/// A walk over a word's postings in the file.
#[derive(Default)]
pub struct DiskWalk<'a> {
    file: Option<&'a File>,
    buf: &'a mut [u8],
    /// The next file byte to read, and the end of the postings.
    next: u64,
    end: u64,
    lo: usize,
    hi: usize,
    left: u32,
    doc: u32,
    tf: u32,
    started: bool,
    crc: u32,
    want: u32,
}

impl<'a> DiskWalk<'a> {
    /// The walk of `w`'s postings, through `buf`, positioned on the first.
    pub(super) fn new(file: &'a File, buf: &'a mut [u8], w: &QueryWord) -> Result<DiskWalk<'a>> {
        let mut c = DiskWalk {
            file: Some(file),
            buf,
            next: w.at,
            end: w.at + u64::from(w.bytes),
            left: w.df,
            doc: NONE,
            want: w.crc,
            ..DiskWalk::default()
        };
        c.advance()?;
        Ok(c)
    }

    /// At least 10 bytes (two varints) ahead, unless the postings end first.
    fn fill(&mut self) -> Result<()> {
        if self.hi - self.lo >= 10 || self.next >= self.end {
            return Ok(());
        }
        self.buf.copy_within(self.lo..self.hi, 0);
        self.hi -= self.lo;
        self.lo = 0;
        let n = (self.buf.len() - self.hi).min((self.end - self.next) as usize);
        let Some(file) = self.file else { bail!(Internal, "a walk without a file") };
        let Some(dst) = self.buf.get_mut(self.hi..self.hi + n) else { bail!(Internal, "walk buffer") };
        read_at(file, dst, self.next)?;
        self.crc = crc32_continue(self.crc, dst);
        self.next += n as u64;
        self.hi += n;
        Ok(())
    }
}

impl Walk for DiskWalk<'_> {
    fn doc(&self) -> u32 {
        self.doc
    }

    fn tf(&self) -> u32 {
        self.tf
    }

    fn advance(&mut self) -> Result<()> {
        if self.left == 0 {
            if self.doc != NONE {
                self.doc = NONE;
                if self.next != self.end || self.lo != self.hi || self.crc != self.want {
                    bail!(Io, "store.fts is damaged (the postings of a word do not check out)");
                }
            }
            return Ok(());
        }
        self.fill()?;
        let mut p = self.buf.get(self.lo..self.hi).unwrap_or(&[]);
        let before = p.len();
        let gap = varint(&mut p)?;
        let tf = varint(&mut p)?;
        self.lo += before - p.len();
        self.doc = match self.started {
            false => gap,
            true if gap > 0 => self.doc.checked_add(gap).unwrap_or(NONE),
            true => NONE,
        };
        if self.doc == NONE || tf == 0 {
            bail!(Io, "store.fts is damaged (a posting out of order)");
        }
        self.started = true;
        self.tf = tf;
        self.left -= 1;
        Ok(())
    }
}
