//! The dictionary of `store.fts` read in place: its pages loaded and checked, a word found by
//! binary search over the pages' first words, and every word in byte order (for a merge).

use super::*;

impl DiskIndex {
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
    pub(in crate::memory::store) fn read_at(&self, buf: &mut [u8], at: u64) -> Result<()> {
        let Some(file) = &self.file else { bail!(Internal, "store.fts is not open") };
        read_at(file, buf, at)
    }
    /// The next word of the dictionary after `c` (all of them in byte order, page by page,
    /// each page checked), copied into `word`: its length and where its postings are.
    /// `None` after the last, or when no file is open.
    pub(in crate::memory::store) fn next_word(
        &mut self,
        c: &mut DictCursor,
        word: &mut [u8; 256],
    ) -> Result<Option<(usize, QueryWord)>> {
        if self.file.is_none() {
            return Ok(None);
        }
        loop {
            if !c.loaded {
                if c.page >= self.pages.len() {
                    return Ok(None);
                }
                c.len = self.load_page(c.page)?;
                if !core::mem::take(&mut c.resume) {
                    c.pos = 0;
                }
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
    pub(in crate::memory::store) fn find(&mut self, word: &[u8]) -> Result<Option<QueryWord>> {
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

    /// What walks need: the file (if open), a read buffer and a decoding buffer for each
    /// word, and the documents.
    pub(in crate::memory::store) fn walk_parts(&mut self) -> WalkParts<'_> {
        WalkParts {
            file: self.file.as_ref(),
            bufs: self.chunks.chunks_mut(RECALL_READ_BYTES),
            decoded: self.decoded.chunks_mut(DECODED),
            docs: BaseDocs {
                file: self.file.as_ref(),
                header: &self.header,
                resident: self.resident,
                docs: &self.docs,
                doc_pages: &self.doc_pages,
                cache: &mut self.cache,
            },
        }
    }
}

/// What a merge copies of a word's blocks: postings, bytes, blocks, the last document, the
/// largest impact.
#[derive(Clone, Copy, Default)]
pub(in crate::memory::store) struct Copied {
    pub n: u32,
    pub bytes: u32,
    pub blocks: u32,
    pub last: Option<u32>,
    pub impact: u16,
}

/// A place in the dictionary, for [`DiskIndex::next_word`].
#[derive(Default)]
pub(in crate::memory::store) struct DictCursor {
    page: usize,
    pos: usize,
    len: usize,
    loaded: bool,
    /// Read the page again, staying at `pos` (see [`DictCursor::suspend`]).
    resume: bool,
}

impl DictCursor {
    /// Lets the index's page buffer be used by others (queries between two steps of a
    /// merge): the next word read loads the page again and goes on where it was.
    pub(in crate::memory::store) fn suspend(&mut self) {
        if self.loaded {
            self.loaded = false;
            self.resume = true;
        }
    }
}

/// A dictionary entry's tail as a query word of the base.
fn word_at(tail: &[u8]) -> QueryWord {
    QueryWord {
        base_df: le32(tail, 0),
        at: le64(tail, 4),
        bytes: le32(tail, 12),
        crc: le32(tail, 16),
        last: le32(tail, 20),
        blocks: le32(tail, 24),
        impact: u16::from_le_bytes([tail.get(28).copied().unwrap_or(0), tail.get(29).copied().unwrap_or(0)]),
        mean: le32(tail, 30),
        ..QueryWord::default()
    }
}

/// The entries of a dictionary page: (word, the bytes after it).
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
