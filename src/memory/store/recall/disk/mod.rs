//! Searching `store.fts` where it lies: the base segment of the full-text index (see
//! [`super`]), for the writer and read-only commands alike.
//!
//! Opening reads the header, the dictionary's and the documents' page tables, and, for the
//! writer (*resident*), the documents (entry and length: 8 bytes each in RAM, and the entry's
//! document: 4 bytes per id), each page checked by its CRC; each document's entry is checked
//! against the log (its record still the one indexed, else it is marked stale for the owner to
//! bring up to date). A read-only command searching a file that covers the log reads no
//! document at open (*in place*): a query reads the page of lengths of each document it
//! scores and the page of records of each it keeps, one of each cached.
//!
//! A query reads, by positioned reads, the dictionary page of each of its words (binary
//! search over the pages' first words), and walks each word's postings block by block
//! through a buffer of [`RECALL_READ_BYTES`] of its own (its skip groups and its postings):
//! a block whose last document is before the one sought is skipped by its skip entry without
//! being read, and the *block-max* bound of the blocks at a document (`Walk::block_max`) lets
//! the ranking skip documents, and whole runs of blocks, that cannot enter the results. The
//! RAM is the documents (resident) plus [`RANK_MAX_TERMS`] × ([`RECALL_READ_BYTES`] and
//! 1 KiB of decoded block), reserved once. Every page, skip group and block is checked
//! against its CRC when read. A mismatch is an error: the owner sets the file aside and
//! rebuilds the index from the log.
//!
//! Here: opening, the documents and their checks; `dict`: the dictionary's pages and the
//! walk of its words in order (what a merge copies); `walk`: one word's postings walked block
//! by block.
//!
//! Documents no longer current are marked dead here (the delta counts their words out); the
//! file itself is never changed, only replaced by a merge.

mod dict;
mod walk;

pub(in crate::memory::store) use dict::{Copied, DictCursor};
pub use walk::DiskWalk;

use super::file::{
    skip_bytes, varint, Header, DICT_PAGE, DOC_PAGE, DOC_RECORD, ENTRY_TAIL, GROUP_BYTES, HEADER_BYTES, SKIP_BLOCK,
    SKIP_ENTRY, SKIP_GROUP,
};
use super::fulltext::NONE;
use super::rank::{impact, Docs, QueryWord, Walk};
use crate::error::Result;
use crate::limits::{RANK_MAX_TERMS, RECALL_READ_BYTES, TEXT_TOKEN_MAX_BYTES};
use crate::memory::hash::crc32;
use crate::memory::store::checkpoint::{le32, le64};
use crate::memory::store::EntryId;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// Most bytes of one dictionary page (64 words of the longest length).
const PAGE_MAX: usize = DICT_PAGE * (1 + TEXT_TOKEN_MAX_BYTES + ENTRY_TAIL);
/// Bytes of each word's read buffer given to its skip groups (whole groups); the rest holds
/// its postings.
const SKIP_WINDOW: usize = (RECALL_READ_BYTES / 4 / GROUP_BYTES) * GROUP_BYTES;
/// Most bytes of one block (two varints of 5 bytes per posting).
const BLOCK_MAX_BYTES: usize = SKIP_BLOCK * 10;
const _: () = assert!(SKIP_WINDOW >= GROUP_BYTES && RECALL_READ_BYTES - SKIP_WINDOW >= BLOCK_MAX_BYTES);
/// Decoded postings per walk: documents and term frequencies of one block.
const DECODED: usize = 2 * SKIP_BLOCK;

/// `store.fts` opened for searching in place: the base segment of the full-text index.
pub struct DiskIndex {
    file: Option<File>,
    pub(in crate::memory::store) header: Header,
    /// Whether the documents are in RAM (the writer; else read page by page as scored).
    resident: bool,
    /// Per document (resident): entry ([`NONE`] once no longer current), tokens.
    docs: Vec<(u32, u32)>,
    /// Entry id to its document here, or [`NONE`] (resident).
    entry_doc: Vec<u32>,
    /// Documents whose entry's record is not the one indexed (found at open), one bit each.
    stale: Vec<u64>,
    /// Per dictionary page: offset in the dictionary, CRC-32.
    pages: Vec<(u32, u32)>,
    /// Per document page: CRC-32 of its lengths, of its records.
    doc_pages: Vec<(u32, u32)>,
    page: Vec<u8>,
    chunks: Vec<u8>,
    /// Each walk's decoded block.
    decoded: Vec<u32>,
    cache: DocCache,
    dead_docs: u64,
    dead_tokens: u64,
}

/// A run of pages of lengths and one page of records, as last read (in place).
#[derive(Default)]
pub(in crate::memory::store) struct DocCache {
    /// The first page of lengths in `lens`, and how many follow it there (0: none).
    len_first: u32,
    len_pages: u32,
    /// Which of them were checked against their CRC (bit `i`: page `len_first + i`).
    len_checked: u32,
    lens: Vec<u8>,
    rec_page: Option<u32>,
    recs: Vec<u8>,
}

fn read_at(file: &File, buf: &mut [u8], at: u64) -> Result<()> {
    file.read_exact_at(buf, at)
        .map_err(|e| err!(Io, "reading {} bytes at byte {} of store.fts failed: {}", buf.len(), at, e))
}

/// A document of the file as its documents section lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::memory::store) struct FileDoc {
    pub entry: u32,
    pub tokens: u32,
    pub offset: u64,
    pub rec_len: u32,
}

impl FileDoc {
    /// A document from its record (16 bytes) and its length.
    pub(in crate::memory::store) fn parse(b: &[u8], tokens: u32) -> FileDoc {
        FileDoc { entry: le32(b, 0), tokens, offset: le64(b, 4), rec_len: le32(b, 12) }
    }
}

/// Bytes of document page `p` of a column of `width` bytes per document, for `docs` documents.
fn doc_page_len(docs: u32, p: u32, width: usize) -> usize {
    let first = p as usize * DOC_PAGE;
    (docs as usize).saturating_sub(first).min(DOC_PAGE) * width
}

/// Pages of lengths read at once (in place), at most 32 (a bit each in `DocCache`).
const LEN_RUN: u32 = 16;
const _: () = assert!(LEN_RUN <= 32);

impl DocCache {
    /// Whether page `p` of lengths is in the run read last.
    fn holds_lens(&self, p: u32) -> bool {
        p.wrapping_sub(self.len_first) < self.len_pages
    }
}

/// Reads (into `buf`) and checks document page `p` of the column at `at` of `width` bytes.
fn read_doc_page(file: &File, h: &Header, at: u64, p: u32, width: usize, want: u32, buf: &mut Vec<u8>) -> Result<()> {
    let len = doc_page_len(h.docs, p, width);
    buf.clear();
    buf.resize(len, 0);
    read_at(file, buf, at + u64::from(p) * (DOC_PAGE * width) as u64)?;
    if crc32(buf) != want {
        bail!(Io, "store.fts is damaged (checksum of document page {})", p);
    }
    Ok(())
}

/// The documents of a base as a query scores them: from RAM (resident) or read page by page.
pub(in crate::memory::store) struct BaseDocs<'a> {
    file: Option<&'a File>,
    header: &'a Header,
    resident: bool,
    docs: &'a [(u32, u32)],
    doc_pages: &'a [(u32, u32)],
    cache: &'a mut DocCache,
}

impl BaseDocs<'_> {
    fn page_crcs(&self, p: u32) -> Result<(u32, u32)> {
        self.doc_pages.get(p as usize).copied().ok_or_else(|| err!(Io, "store.fts has no document page {}", p))
    }
}

impl Docs for BaseDocs<'_> {
    fn tokens(&mut self, d: u32) -> Result<Option<u32>> {
        if self.resident {
            return Ok(self.docs.get(d as usize).filter(|x| x.0 != NONE).map(|x| x.1));
        }
        if d >= self.header.docs {
            return Ok(None);
        }
        let Some(file) = self.file else { bail!(Internal, "store.fts is not open") };
        let p = d / DOC_PAGE as u32;
        let c = &mut *self.cache;
        if !c.holds_lens(p) {
            // A run of pages in one read: a query's candidates come in increasing order, and
            // on a large segment they touch many pages close together (issue 39's soak store:
            // 140-400 of the cold segment's 794 a query, each once its own read).
            c.len_pages = 0;
            let run = LEN_RUN.min(self.header.doc_pages.saturating_sub(p));
            let len = (0..run).map(|i| doc_page_len(self.header.docs, p + i, 4)).sum::<usize>();
            // Only a longer run than the last zeroes bytes (the read overwrites them all): a
            // clear first zeroed 16 KiB a run, 1% of a common word's query (callgrind).
            c.lens.resize(len, 0);
            read_at(file, &mut c.lens, HEADER_BYTES as u64 + u64::from(p) * (DOC_PAGE * 4) as u64)?;
            (c.len_first, c.len_pages, c.len_checked) = (p, run, 0);
        }
        let i = p - c.len_first;
        let at = i as usize * DOC_PAGE * 4;
        if c.len_checked & (1 << i) == 0 {
            let Some(&(want, _)) = self.doc_pages.get(p as usize) else {
                bail!(Io, "store.fts has no document page {}", p)
            };
            let page = c.lens.get(at..at + doc_page_len(self.header.docs, p, 4)).unwrap_or(&[]);
            if crc32(page) != want {
                c.len_pages = 0;
                bail!(Io, "store.fts is damaged (checksum of document page {})", p);
            }
            c.len_checked |= 1 << i;
        }
        Ok(Some(le32(&c.lens, at + (d as usize % DOC_PAGE) * 4)))
    }

    fn costly(&self, d: u32) -> bool {
        !self.resident && !self.cache.holds_lens(d / DOC_PAGE as u32)
    }

    fn entry(&mut self, d: u32) -> Result<Option<EntryId>> {
        if self.resident {
            return Ok(self.docs.get(d as usize).filter(|x| x.0 != NONE).map(|x| x.0));
        }
        if d >= self.header.docs {
            return Ok(None);
        }
        let Some(file) = self.file else { bail!(Internal, "store.fts is not open") };
        let p = d / DOC_PAGE as u32;
        if self.cache.rec_page != Some(p) {
            self.cache.rec_page = None;
            let (_, want) = self.page_crcs(p)?;
            read_doc_page(file, self.header, self.header.records_at(), p, DOC_RECORD, want, &mut self.cache.recs)?;
            self.cache.rec_page = Some(p);
        }
        Ok(Some(le32(&self.cache.recs, (d as usize % DOC_PAGE) * DOC_RECORD)))
    }
}

impl BaseDocs<'_> {
    /// Whether document `d` is current, known without reading the file: resident, from RAM;
    /// in place, every document of the file is (it covers the log exactly).
    pub(in crate::memory::store) fn is_current(&self, d: u32) -> bool {
        match self.resident {
            true => self.docs.get(d as usize).is_some_and(|x| x.0 != NONE),
            false => d < self.header.docs,
        }
    }

    /// Document `d`'s tokens, current or not (see [`DiskIndex::doc_tokens`]).
    pub(in crate::memory::store) fn tokens_kept(&mut self, d: u32) -> Result<Option<u32>> {
        if self.resident {
            return Ok(self.docs.get(d as usize).map(|x| x.1));
        }
        self.tokens(d)
    }

    /// Document `d`'s record (entry, its record's place), read from its page (cached);
    /// `None` when it is not current or not in the file.
    pub(in crate::memory::store) fn record(&mut self, d: u32) -> Result<Option<FileDoc>> {
        if d >= self.header.docs || (self.resident && self.docs.get(d as usize).is_none_or(|x| x.0 == NONE)) {
            return Ok(None);
        }
        let Some(file) = self.file else { bail!(Internal, "store.fts is not open") };
        let p = d / DOC_PAGE as u32;
        if self.cache.rec_page != Some(p) {
            self.cache.rec_page = None;
            let (_, want) = self.page_crcs(p)?;
            read_doc_page(file, self.header, self.header.records_at(), p, DOC_RECORD, want, &mut self.cache.recs)?;
            self.cache.rec_page = Some(p);
        }
        let at = (d as usize % DOC_PAGE) * DOC_RECORD;
        Ok(Some(FileDoc::parse(self.cache.recs.get(at..).unwrap_or(&[]), 0)))
    }
}

/// What walks need: the file, a read buffer and a decoding buffer per word, and the
/// documents.
pub(in crate::memory::store) struct WalkParts<'a> {
    pub file: Option<&'a File>,
    pub bufs: core::slice::ChunksMut<'a, u8>,
    pub decoded: core::slice::ChunksMut<'a, u32>,
    pub docs: BaseDocs<'a>,
}

impl DiskIndex {
    /// No file; buffers reserved on the first [`DiskIndex::load`].
    pub(in crate::memory::store) fn empty() -> DiskIndex {
        DiskIndex {
            file: None,
            header: Header::default(),
            resident: true,
            docs: Vec::new(),
            entry_doc: Vec::new(),
            stale: Vec::new(),
            pages: Vec::new(),
            doc_pages: Vec::new(),
            page: Vec::new(),
            chunks: Vec::new(),
            decoded: Vec::new(),
            cache: DocCache::default(),
            dead_docs: 0,
            dead_tokens: 0,
        }
    }

    /// Takes the file out (the base then has none open, as after [`DiskIndex::close`]).
    pub(in crate::memory::store) fn take_file(&mut self) -> Option<File> {
        self.file.take()
    }

    /// Whether a file is open.
    pub(in crate::memory::store) fn is_open(&self) -> bool {
        self.file.is_some()
    }

    /// Closes the file (the buffers stay).
    pub(in crate::memory::store) fn close(&mut self) {
        self.file = None;
        self.header = Header::default();
        if self.docs.len() >= self.entry_doc.len() / 8 {
            // Many documents: one pass over the table, not a write at each one's scattered
            // place (closing the base is part of the cycle that opens a merge's new file).
            self.entry_doc.fill(NONE);
        } else {
            for &(entry, _) in self.docs.iter().filter(|d| d.0 != NONE) {
                if let Some(e) = self.entry_doc.get_mut(entry as usize) {
                    *e = NONE;
                }
            }
        }
        self.docs.clear();
        self.stale.clear();
        self.pages.clear();
        self.doc_pages.clear();
        self.cache.len_pages = 0;
        self.cache.rec_page = None;
        self.dead_docs = 0;
        self.dead_tokens = 0;
    }

    /// Reserves the query buffers (once).
    fn reserve_buffers(&mut self) {
        if self.chunks.is_empty() {
            self.chunks = vec![0u8; RANK_MAX_TERMS * RECALL_READ_BYTES];
            self.page = vec![0u8; PAGE_MAX];
            self.decoded = vec![0u32; RANK_MAX_TERMS * DECODED];
            self.cache.lens = Vec::with_capacity(LEN_RUN as usize * DOC_PAGE * 4);
            self.cache.recs = Vec::with_capacity(DOC_PAGE * DOC_RECORD);
        }
    }

    /// Reads and checks the two page tables of `file` (header `h`).
    fn load_tables(&mut self, file: &File, h: &Header) -> Result<()> {
        let Some(table) = self.chunks.get_mut(..h.pages as usize * 8) else {
            bail!(Io, "store.fts has a page table of {} pages, more than this reader holds", h.pages)
        };
        read_at(file, table, h.pages_at())?;
        if crc32(table) != h.sparse_crc {
            bail!(Io, "store.fts is damaged (checksum of its page table)");
        }
        if self.pages.capacity() < h.pages as usize {
            self.pages.reserve_exact(h.pages as usize);
        }
        self.pages.extend(table.chunks_exact(8).map(|b| (le32(b, 0), le32(b, 4))));
        let Some(table) = self.chunks.get_mut(..h.doc_pages as usize * 8) else {
            bail!(Io, "store.fts has {} document pages, more than this reader holds", h.doc_pages)
        };
        read_at(file, table, h.doc_table_at())?;
        if crc32(table) != h.doc_table_crc {
            bail!(Io, "store.fts is damaged (checksum of its document page table)");
        }
        if self.doc_pages.capacity() < h.doc_pages as usize {
            self.doc_pages.reserve_exact(h.doc_pages as usize);
        }
        self.doc_pages.extend(table.chunks_exact(8).map(|b| (le32(b, 0), le32(b, 4))));
        Ok(())
    }

    /// Opens `file`, whose header `h` was checked against the log, for a store of `room`
    /// ids, resident: reads its documents (each page checked by its CRC; `current(doc)` says
    /// whether the entry's record is still the one indexed, else the document is marked
    /// stale) and page tables. Buffers are reserved the first time and reused after.
    pub(in crate::memory::store) fn load(
        &mut self,
        file: File,
        h: Header,
        room: usize,
        mut current: impl FnMut(&FileDoc) -> bool,
    ) -> Result<()> {
        self.load_dyn(file, h, room, &mut current)
    }

    /// `DiskIndex::load`, compiled once: a load runs once per open, and its callers' six
    /// closures each had a copy of it (about 2 KB each).
    fn load_dyn(
        &mut self,
        file: File,
        h: Header,
        room: usize,
        current: &mut dyn FnMut(&FileDoc) -> bool,
    ) -> Result<()> {
        self.close();
        self.resident = true;
        self.reserve_buffers();
        if h.docs as usize > room {
            bail!(Io, "store.fts lists {} documents, more than this store holds", h.docs);
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
        self.load_tables(&file, &h)?;
        // Pages of lengths and records, many at a time.
        let per = (self.chunks.len() / ((4 + DOC_RECORD) * DOC_PAGE)).max(1) * DOC_PAGE;
        let mut first = 0usize;
        let mut tokens = 0u64;
        let mut min_len = if docs == 0 { 0 } else { u32::MAX };
        while first < docs {
            let n = (docs - first).min(per);
            let Some((lens, recs)) = self.chunks.split_at_mut_checked(per * 4) else {
                bail!(Internal, "store.fts: document buffer")
            };
            let (Some(lens), Some(recs)) = (lens.get_mut(..n * 4), recs.get_mut(..n * DOC_RECORD)) else {
                bail!(Internal, "store.fts: document buffer")
            };
            read_at(&file, lens, HEADER_BYTES as u64 + first as u64 * 4)?;
            read_at(&file, recs, h.records_at() + (first * DOC_RECORD) as u64)?;
            for (i, (lp, rp)) in lens.chunks(DOC_PAGE * 4).zip(recs.chunks(DOC_PAGE * DOC_RECORD)).enumerate() {
                let p = first / DOC_PAGE + i;
                let want = self.doc_pages.get(p).copied().unwrap_or_default();
                if (crc32(lp), crc32(rp)) != want {
                    bail!(Io, "store.fts is damaged (checksum of document page {})", p);
                }
            }
            for (l, r) in lens.chunks_exact(4).zip(recs.chunks_exact(DOC_RECORD)) {
                let doc = FileDoc::parse(r, le32(l, 0));
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
                tokens += u64::from(doc.tokens);
                min_len = min_len.min(doc.tokens);
                self.docs.push((doc.entry, doc.tokens));
            }
            first += n;
        }
        if tokens != h.tokens || min_len != h.min_len {
            bail!(Io, "store.fts is damaged (its documents' tokens do not add up)");
        }
        self.file = Some(file);
        self.header = h;
        Ok(())
    }

    /// Opens `file` (header `h`, checked against the log, which it covers exactly: every
    /// document is current) in place: reads only its page tables; documents are read page
    /// by page as queries score them.
    pub(in crate::memory::store) fn open_in_place(&mut self, file: File, h: Header, room: usize) -> Result<()> {
        self.close();
        self.resident = false;
        self.reserve_buffers();
        if h.docs as usize > room {
            bail!(Io, "store.fts lists {} documents, more than this store holds", h.docs);
        }
        self.load_tables(&file, &h)?;
        self.file = Some(file);
        self.header = h;
        Ok(())
    }

    /// Checks every structure of `file` (whose sections' CRCs were checked): its documents
    /// (pages, entries, lengths), its dictionary in order, and every word's skip groups and
    /// blocks, decoded (`lkjagent check`).
    pub(in crate::memory::store) fn check_file(file: File, h: Header, room: usize) -> Result<()> {
        let mut ix = DiskIndex::empty();
        ix.load(file, h, room, |_| true)?;
        let mut c = DictCursor::default();
        let mut word = [0u8; 256];
        let mut prev = [0u8; 256];
        let mut prev_len = None;
        let mut terms = 0u32;
        while let Some((len, w)) = ix.next_word(&mut c, &mut word)? {
            let (this, before) = (word.get(..len).unwrap_or(&[]), prev_len.and_then(|n| prev.get(..n)));
            if len == 0 || before.is_some_and(|b| b >= this) {
                bail!(Io, "store.fts is damaged (its dictionary is out of order at word {})", terms);
            }
            prev.copy_from_slice(&word);
            prev_len = Some(len);
            terms += 1;
            let mut parts = ix.walk_parts();
            let (Some(file), Some(buf), Some(dec)) = (parts.file, parts.bufs.next(), parts.decoded.next()) else {
                bail!(Internal, "store.fts is not open")
            };
            let mut walk = DiskWalk::new(file, buf, dec, &w)?;
            let mut n = 0u32;
            let mut last = NONE;
            let mut most = 0u16;
            while walk.doc() != NONE {
                let Some(&(_, len)) = parts.docs.docs.get(walk.doc() as usize) else {
                    bail!(Io, "store.fts is damaged (a posting names document {} of {})", walk.doc(), h.docs)
                };
                // Each block's impact bounds each of its postings.
                if impact(walk.tf(), len, w.mean) > walk.cur_impact {
                    bail!(Io, "store.fts is damaged (a block's impact is below one of its postings')");
                }
                n += 1;
                last = walk.doc();
                most = most.max(walk.cur_impact);
                walk.advance()?;
            }
            if n != w.base_df || last != w.last || most != w.impact || walk.cursor != w.blocks {
                bail!(Io, "store.fts is damaged (the postings of word {} do not match the dictionary)", terms);
            }
        }
        if terms != h.terms {
            bail!(Io, "store.fts is damaged (its dictionary lists {} words, its header {})", terms, h.terms);
        }
        Ok(())
    }

    /// Documents in the file (live and no longer current): the delta's numbers start here.
    pub(in crate::memory::store) fn doc_count(&self) -> u32 {
        if self.resident {
            self.docs.len() as u32
        } else {
            self.header.docs
        }
    }

    /// Live documents and their tokens.
    pub(in crate::memory::store) fn totals(&self) -> (u64, u64) {
        (u64::from(self.doc_count()) - self.dead_docs, self.header.tokens - self.dead_tokens)
    }

    /// Documents no longer current.
    pub(in crate::memory::store) fn dead_docs(&self) -> u64 {
        self.dead_docs
    }

    /// RAM held, bytes.
    pub(in crate::memory::store) fn ram_bytes(&self) -> usize {
        self.docs.capacity() * 8
            + self.entry_doc.capacity() * 4
            + self.stale.capacity() * 8
            + self.pages.capacity() * 8
            + self.doc_pages.capacity() * 8
            + self.page.capacity()
            + self.chunks.capacity()
            + self.decoded.capacity() * 4
            + self.cache.lens.capacity()
            + self.cache.recs.capacity()
    }

    /// The current document of entry `id`, if it has one here.
    pub(in crate::memory::store) fn doc_of(&self, id: EntryId) -> Option<u32> {
        self.entry_doc.get(id as usize).copied().filter(|&d| d != NONE)
    }

    /// Document `d`: entry and tokens, `None` when no longer current (resident).
    pub(in crate::memory::store) fn doc(&self, d: u32) -> Option<(EntryId, u32)> {
        self.docs.get(d as usize).copied().filter(|x| x.0 != NONE)
    }

    /// Document `d`'s tokens, current or not (a merge under way writes the documents that
    /// were current when it started); `None` beyond the file or when not resident.
    pub(in crate::memory::store) fn doc_tokens(&self, d: u32) -> Option<u32> {
        self.docs.get(d as usize).filter(|_| self.resident).map(|x| x.1)
    }

    /// The first document from `from` on marked stale at open (and not yet taken out).
    pub(in crate::memory::store) fn next_stale(&self, from: u32) -> Option<u32> {
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

    /// Document `d` as the file lists it (its page of records read and checked).
    pub(in crate::memory::store) fn file_doc(&mut self, d: u32) -> Result<FileDoc> {
        let Some(file) = &self.file else { bail!(Internal, "store.fts is not open") };
        let p = d / DOC_PAGE as u32;
        let (_, want) =
            self.doc_pages.get(p as usize).copied().ok_or_else(|| err!(Io, "store.fts has no document {}", d))?;
        self.cache.rec_page = None;
        read_doc_page(file, &self.header, self.header.records_at(), p, DOC_RECORD, want, &mut self.cache.recs)?;
        self.cache.rec_page = Some(p);
        let at = (d as usize % DOC_PAGE) * DOC_RECORD;
        let tokens = self.docs.get(d as usize).map_or(0, |x| x.1);
        let doc = FileDoc::parse(self.cache.recs.get(at..).unwrap_or(&[]), tokens);
        if self.docs.get(d as usize).is_none_or(|x| x.0 != doc.entry) {
            bail!(Io, "store.fts changed under its reader (document {})", d);
        }
        Ok(doc)
    }

    /// Calls `f(document, record)` for every document's record of the document pages from
    /// `from` on, at most `count` of them, page by page through `buf`, each page checked by
    /// its CRC (the merge); returns the page after the last read.
    pub(in crate::memory::store) fn each_record(
        &self,
        buf: &mut [u8],
        (from, count): (u32, u32),
        mut f: impl FnMut(u32, &[u8]) -> Result<()>,
    ) -> Result<u32> {
        let Some(file) = &self.file else { bail!(Internal, "store.fts is not open") };
        let h = &self.header;
        let page_bytes = DOC_PAGE * DOC_RECORD;
        let per = (buf.len() / page_bytes).max(1);
        let mut p = from;
        let end = from.saturating_add(count).min(h.doc_pages);
        while p < end {
            let pages = (end - p).min(per as u32);
            let len =
                (pages as usize * page_bytes).min((h.docs as usize).saturating_sub(p as usize * DOC_PAGE) * DOC_RECORD);
            let Some(chunk) = buf.get_mut(..len) else { bail!(Internal, "merge input buffer") };
            read_at(file, chunk, h.records_at() + u64::from(p) * page_bytes as u64)?;
            for (i, page) in chunk.chunks(page_bytes).enumerate() {
                let q = p + i as u32;
                if self.doc_pages.get(q as usize).is_none_or(|x| x.1 != crc32(page)) {
                    bail!(Io, "store.fts is damaged (checksum of document page {})", q);
                }
                for (j, rec) in page.chunks_exact(DOC_RECORD).enumerate() {
                    f(q * DOC_PAGE as u32 + j as u32, rec)?;
                }
            }
            p += pages;
        }
        Ok(p)
    }

    /// The blocks of `w` a merge of a clean base copies byte for byte (all of them with
    /// `all`, else all but a last block that is not full), their skip entries appended to
    /// `skip` (each group read checked by its CRC).
    pub(in crate::memory::store) fn full_blocks(
        &mut self,
        w: &QueryWord,
        all: bool,
        skip: &mut Vec<u8>,
    ) -> Result<Copied> {
        let mut parts = self.walk_parts();
        let (Some(file), Some(buf), Some(dec)) = (parts.file, parts.bufs.next(), parts.decoded.next()) else {
            bail!(Internal, "store.fts is not open")
        };
        let mut walk = DiskWalk::open(file, buf, dec, w)?;
        let mut c = Copied::default();
        for k in 0..w.blocks {
            let e = walk.entry(k)?;
            if k + 1 == w.blocks && !all && usize::from(e.count) < SKIP_BLOCK {
                break;
            }
            if skip.len() + SKIP_ENTRY > skip.capacity() {
                bail!(Internal, "a word has more blocks than the store has documents for");
            }
            skip.extend_from_slice(&e.last.to_le_bytes());
            skip.extend_from_slice(&e.end.to_le_bytes());
            skip.extend_from_slice(&e.crc.to_le_bytes());
            skip.extend_from_slice(&e.impact.to_le_bytes());
            skip.extend_from_slice(&e.count.to_le_bytes());
            c = Copied {
                n: c.n + u32::from(e.count),
                bytes: e.end,
                blocks: k + 1,
                last: Some(e.last),
                impact: c.impact.max(e.impact),
            };
        }
        Ok(c)
    }

    /// Gives entries new ids (a compaction's): `new(old)` for every current document.
    pub(in crate::memory::store) fn relabel(&mut self, mut new: impl FnMut(EntryId) -> EntryId) {
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
    pub(in crate::memory::store) fn kill(&mut self, d: u32) {
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
}
