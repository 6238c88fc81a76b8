//! Searching `store.fts` where it lies: the base segment of the full-text index (see
//! [`super::recall`]), for the writer and read-only commands alike.
//!
//! Opening reads the header, the documents (entry and length: 8 bytes each in RAM, and the
//! entry's document: 4 bytes per id) and the dictionary's page table; each document's entry
//! is checked against the log (its record still the one indexed, else it is marked stale for
//! the owner to bring up to date). A query then reads, by positioned reads, the dictionary
//! page of each of its words (binary search over the pages' first words) and walks each
//! word's postings through a buffer of [`RECALL_READ_BYTES`] of its own, refilled as the walk
//! goes: the bytes a query touches are the pages and postings of its words, and the RAM is
//! the documents plus [`RANK_MAX_TERMS`] × [`RECALL_READ_BYTES`], reserved once. Every page is
//! checked against its CRC when read, and every word's postings when its walk reaches their
//! end (a walk that pruning stops early has used only what it read). A mismatch is an error:
//! the owner sets the file aside and rebuilds the index from the log.
//!
//! Documents no longer current are marked dead here (the delta counts their words out); the
//! file itself is never changed, only replaced by a merge.

use super::checkpoint::{le32, le64};
use super::fulltext::NONE;
use super::rank::{QueryWord, Walk};
use super::recall_file::{varint, Header, HEADER_BYTES};
use super::EntryId;
use crate::error::Result;
use crate::limits::{RANK_MAX_TERMS, RECALL_READ_BYTES, TEXT_TOKEN_MAX_BYTES};
use crate::memory::hash::{crc32, crc32_continue};
use std::fs::File;
use std::os::unix::fs::FileExt;

/// Bytes of one dictionary entry after its word: postings u32, offset u64, bytes u32, CRC u32,
/// last document u32.
const ENTRY_TAIL: usize = 24;
/// Most bytes of one dictionary page (64 words of the longest length).
const PAGE_MAX: usize = 64 * (1 + TEXT_TOKEN_MAX_BYTES + ENTRY_TAIL);

/// `store.fts` opened for searching in place: the base segment of the full-text index.
pub struct DiskIndex {
    file: Option<File>,
    pub(super) header: Header,
    /// Per document: entry ([`NONE`] once no longer current), tokens.
    docs: Vec<(u32, u32)>,
    /// Entry id to its document here, or [`NONE`].
    entry_doc: Vec<u32>,
    /// Documents whose entry's record is not the one indexed (found at open), one bit each.
    stale: Vec<u64>,
    /// Per dictionary page: offset in the dictionary, CRC-32.
    pages: Vec<(u32, u32)>,
    page: Vec<u8>,
    chunks: Vec<u8>,
    dead_docs: u64,
    dead_tokens: u64,
}

fn read_at(file: &File, buf: &mut [u8], at: u64) -> Result<()> {
    file.read_exact_at(buf, at)
        .map_err(|e| err!(Io, "reading {} bytes at byte {} of store.fts failed: {}", buf.len(), at, e))
}

/// A document of the file as its documents section lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FileDoc {
    pub entry: u32,
    pub tokens: u32,
    pub offset: u64,
    pub rec_len: u32,
}

impl FileDoc {
    pub(super) fn parse(b: &[u8]) -> FileDoc {
        FileDoc { entry: le32(b, 0), tokens: le32(b, 4), offset: le64(b, 8), rec_len: le32(b, 16) }
    }
}

impl DiskIndex {
    /// No file; buffers reserved on the first [`DiskIndex::load`].
    pub(super) fn empty() -> DiskIndex {
        DiskIndex {
            file: None,
            header: Header::default(),
            docs: Vec::new(),
            entry_doc: Vec::new(),
            stale: Vec::new(),
            pages: Vec::new(),
            page: Vec::new(),
            chunks: Vec::new(),
            dead_docs: 0,
            dead_tokens: 0,
        }
    }

    /// Whether a file is open.
    pub(super) fn is_open(&self) -> bool {
        self.file.is_some()
    }

    /// Closes the file (the buffers stay).
    pub(super) fn close(&mut self) {
        self.file = None;
        self.header = Header::default();
        for &(entry, _) in self.docs.iter().filter(|d| d.0 != NONE) {
            if let Some(e) = self.entry_doc.get_mut(entry as usize) {
                *e = NONE;
            }
        }
        self.docs.clear();
        self.stale.clear();
        self.pages.clear();
        self.dead_docs = 0;
        self.dead_tokens = 0;
    }

    /// Opens `file`, whose header `h` was checked against the log, for a store of `room`
    /// ids: reads its documents (checked by their CRC; `current(doc)` says whether the entry's
    /// record is still the one indexed, else the document is marked stale) and page table.
    /// Buffers are reserved the first time and reused after.
    pub(super) fn load(
        &mut self,
        file: File,
        h: Header,
        room: usize,
        mut current: impl FnMut(&FileDoc) -> bool,
    ) -> Result<()> {
        self.close();
        if self.chunks.is_empty() {
            self.chunks = vec![0u8; RANK_MAX_TERMS * RECALL_READ_BYTES];
            self.page = vec![0u8; PAGE_MAX];
        }
        if self.entry_doc.len() != room {
            self.entry_doc = vec![NONE; room];
        }
        let docs = h.docs as usize;
        if self.docs.capacity() < docs {
            self.docs.reserve_exact(docs.max(room));
        }
        let words = docs.div_ceil(64);
        if self.stale.capacity() < words {
            self.stale.reserve_exact(room.div_ceil(64).max(words));
        }
        self.stale.resize(words, 0);
        let mut at = HEADER_BYTES as u64;
        let mut left = u64::from(h.docs) * 20;
        let mut crc = 0u32;
        let step = (self.chunks.len() / 20) * 20;
        while left > 0 {
            let n = left.min(step as u64) as usize;
            let buf = self.chunks.get_mut(..n).unwrap_or(&mut []);
            read_at(&file, buf, at)?;
            crc = crc32_continue(crc, buf);
            for b in buf.chunks_exact(20) {
                let doc = FileDoc::parse(b);
                let d = self.docs.len();
                match self.entry_doc.get_mut(doc.entry as usize) {
                    Some(e) if *e == NONE => *e = d as u32,
                    _ => bail!(Io, "store.fts names entry {} twice or beyond the store's ids", doc.entry),
                }
                if !current(&doc) {
                    if let Some(w) = self.stale.get_mut(d / 64) {
                        *w |= 1 << (d % 64);
                    }
                }
                self.docs.push((doc.entry, doc.tokens));
            }
            at += n as u64;
            left -= n as u64;
        }
        if crc != h.docs_crc {
            bail!(Io, "store.fts is damaged (checksum of its documents)");
        }
        let Some(table) = self.chunks.get_mut(..h.pages as usize * 8) else {
            bail!(Io, "store.fts has a page table of {} pages, more than this reader holds", h.pages)
        };
        read_at(&file, table, h.dict_at() + h.dict_len)?;
        if crc32(table) != h.sparse_crc {
            bail!(Io, "store.fts is damaged (checksum of its page table)");
        }
        if self.pages.capacity() < h.pages as usize {
            self.pages.reserve_exact(h.pages as usize);
        }
        self.pages.extend(table.chunks_exact(8).map(|b| (le32(b, 0), le32(b, 4))));
        let tokens: u64 = self.docs.iter().map(|d| u64::from(d.1)).sum();
        if tokens != h.tokens {
            bail!(Io, "store.fts is damaged (its documents' tokens do not add up)");
        }
        self.file = Some(file);
        self.header = h;
        Ok(())
    }

    /// Documents in the file (live and no longer current): the delta's numbers start here.
    pub(super) fn doc_count(&self) -> u32 {
        self.docs.len() as u32
    }

    /// Live documents and their tokens.
    pub(super) fn totals(&self) -> (u64, u64) {
        (self.docs.len() as u64 - self.dead_docs, self.header.tokens - self.dead_tokens)
    }

    /// Documents no longer current.
    pub(super) fn dead_docs(&self) -> u64 {
        self.dead_docs
    }

    /// RAM held, bytes.
    pub(super) fn ram_bytes(&self) -> usize {
        self.docs.capacity() * 8
            + self.entry_doc.capacity() * 4
            + self.stale.capacity() * 8
            + self.pages.capacity() * 8
            + self.page.capacity()
            + self.chunks.capacity()
    }

    /// The current document of entry `id`, if it has one here.
    pub(super) fn doc_of(&self, id: EntryId) -> Option<u32> {
        self.entry_doc.get(id as usize).copied().filter(|&d| d != NONE)
    }

    /// Document `d`: entry and tokens, `None` when no longer current.
    pub(super) fn doc(&self, d: u32) -> Option<(EntryId, u32)> {
        self.docs.get(d as usize).copied().filter(|x| x.0 != NONE)
    }

    /// The first document from `from` on marked stale at open (and not yet taken out).
    pub(super) fn next_stale(&self, from: u32) -> Option<u32> {
        let mut w = from as usize / 64;
        let mut bits = self.stale.get(w)? & (u64::MAX << (from % 64));
        loop {
            if bits != 0 {
                return Some((w * 64) as u32 + bits.trailing_zeros());
            }
            w += 1;
            bits = *self.stale.get(w)?;
        }
    }

    /// Document `d` as the file lists it (one positioned read).
    pub(super) fn file_doc(&self, d: u32) -> Result<FileDoc> {
        let Some(file) = &self.file else { bail!(Internal, "store.fts is not open") };
        let mut b = [0u8; 20];
        read_at(file, &mut b, HEADER_BYTES as u64 + u64::from(d) * 20)?;
        let doc = FileDoc::parse(&b);
        if self.docs.get(d as usize).is_none_or(|x| x.0 != doc.entry) {
            bail!(Io, "store.fts changed under its reader (document {})", d);
        }
        Ok(doc)
    }

    /// Gives entries new ids (a compaction's): `new(old)` for every current document.
    pub(super) fn relabel(&mut self, mut new: impl FnMut(EntryId) -> EntryId) {
        for &(entry, _) in self.docs.iter().filter(|d| d.0 != NONE) {
            if let Some(e) = self.entry_doc.get_mut(entry as usize) {
                *e = NONE;
            }
        }
        for (d, x) in self.docs.iter_mut().enumerate() {
            if x.0 == NONE {
                continue;
            }
            x.0 = new(x.0);
            if let Some(e) = self.entry_doc.get_mut(x.0 as usize) {
                *e = d as u32;
            }
        }
    }

    /// Takes document `d` out: no longer current (its entry changed or went).
    pub(super) fn kill(&mut self, d: u32) {
        let Some(x) = self.docs.get_mut(d as usize) else { return };
        if x.0 == NONE {
            return;
        }
        if let Some(e) = self.entry_doc.get_mut(x.0 as usize) {
            *e = NONE;
        }
        x.0 = NONE;
        self.dead_docs += 1;
        self.dead_tokens += u64::from(x.1);
        if let Some(w) = self.stale.get_mut(d as usize / 64) {
            *w &= !(1 << (d % 64));
        }
    }

    /// Reads and checks dictionary page `p` into the page buffer; returns its length.
    fn load_page(&mut self, p: usize) -> Result<usize> {
        let Some(file) = &self.file else { bail!(Internal, "store.fts is not open") };
        let Some(&(off, crc)) = self.pages.get(p) else { bail!(Io, "store.fts has no dictionary page {}", p) };
        let end = self.pages.get(p + 1).map_or(self.header.dict_len, |x| u64::from(x.0));
        let len = end.saturating_sub(u64::from(off)) as usize;
        let Some(buf) = self.page.get_mut(..len) else { bail!(Io, "store.fts: a dictionary page of {} bytes", len) };
        read_at(file, buf, self.header.dict_at() + u64::from(off))?;
        if crc32(buf) != crc {
            bail!(Io, "store.fts is damaged (checksum of dictionary page {})", p);
        }
        Ok(len)
    }

    /// `buf.len()` bytes of the file at `at`.
    pub(super) fn read_at(&self, buf: &mut [u8], at: u64) -> Result<()> {
        let Some(file) = &self.file else { bail!(Internal, "store.fts is not open") };
        read_at(file, buf, at)
    }

    /// The next word of the dictionary after `c` (all of them in byte order, page by page,
    /// each page checked), copied into `word`: its length and where its postings are.
    /// `None` after the last, or when no file is open.
    pub(super) fn next_word(&mut self, c: &mut DictCursor, word: &mut [u8; 256]) -> Result<Option<(usize, QueryWord)>> {
        if self.file.is_none() {
            return Ok(None);
        }
        loop {
            if !c.loaded {
                if c.page >= self.pages.len() {
                    return Ok(None);
                }
                c.len = self.load_page(c.page)?;
                c.pos = 0;
                c.loaded = true;
            }
            let rest = self.page.get(c.pos..c.len).unwrap_or(&[]);
            if let Some((w, tail)) = entries(rest).next() {
                let len = w.len();
                word.get_mut(..len).unwrap_or(&mut []).copy_from_slice(w);
                c.pos += 1 + len + ENTRY_TAIL;
                return Ok(Some((len, word_at(tail))));
            }
            if c.pos != c.len {
                bail!(Io, "store.fts is damaged (dictionary page {} does not parse)", c.page);
            }
            c.page += 1;
            c.loaded = false;
        }
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
                return Ok(Some(word_at(tail)));
            }
        }
        Ok(None)
    }

    /// What walks need: the file (if open), a buffer for each word, and the documents
    /// (entry, or [`NONE`], and tokens per document number).
    #[allow(clippy::type_complexity)]
    pub(super) fn walk_parts(&mut self) -> (Option<&File>, core::slice::ChunksMut<'_, u8>, &[(EntryId, u32)]) {
        (self.file.as_ref(), self.chunks.chunks_mut(RECALL_READ_BYTES), &self.docs)
    }
}

/// A place in the dictionary, for [`DiskIndex::next_word`].
#[derive(Default)]
pub(super) struct DictCursor {
    page: usize,
    pos: usize,
    len: usize,
    loaded: bool,
}

/// A dictionary entry's tail as a query word of the base.
fn word_at(tail: &[u8]) -> QueryWord {
    QueryWord {
        base_df: le32(tail, 0),
        at: le64(tail, 4),
        last: le32(tail, 20),
        bytes: le32(tail, 12),
        crc: le32(tail, 16),
        ..QueryWord::default()
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
            left: w.base_df,
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
