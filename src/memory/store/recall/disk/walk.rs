//! One word's postings in `store.fts`, walked block by block through a bounded window: skip
//! entries pass unread the blocks before the document sought, block-max bounds let ranking
//! skip what cannot enter the results.

use super::*;

/// One skip entry: a block's last document, where it ends in the postings, its CRC, its
/// impact and its postings.
#[derive(Clone, Copy, Default)]
pub(super) struct Entry {
    pub(super) last: u32,
    pub(super) end: u32,
    pub(super) crc: u32,
    pub(super) impact: u16,
    pub(super) count: u16,
}

/// A bounded window over a region of the file, read as needed.
#[derive(Default)]
struct Window<'a> {
    buf: &'a mut [u8],
    /// File offset of `buf[0]`, and the bytes in it.
    at: u64,
    len: usize,
}

impl Window<'_> {
    /// The `n` bytes at `at` (read, when not already in, from `at` up to the window's size or
    /// the region's `end`).
    fn get(&mut self, file: &File, at: u64, n: usize, end: u64) -> Result<&[u8]> {
        let have = at >= self.at && at + n as u64 <= self.at + self.len as u64;
        if !have {
            let len = (self.buf.len() as u64).min(end.saturating_sub(at)) as usize;
            if len < n {
                bail!(Io, "store.fts is damaged (a block or skip group beyond its word's bytes)");
            }
            let Some(dst) = self.buf.get_mut(..len) else { bail!(Internal, "walk buffer") };
            self.len = 0;
            read_at(file, dst, at)?;
            self.at = at;
            self.len = len;
        }
        let from = (at - self.at) as usize;
        self.buf.get(from..from + n).ok_or_else(|| err!(Internal, "walk window"))
    }
}

/// A walk over a word's postings in the file, block by block.
#[derive(Default)]
pub struct DiskWalk<'a> {
    file: Option<&'a File>,
    skip: Window<'a>,
    post: Window<'a>,
    decoded: &'a mut [u32],
    /// Where the postings start, their bytes, where the skip table starts and ends.
    at: u64,
    bytes: u32,
    skip_at: u64,
    skip_end: u64,
    blocks: u32,
    /// The word's only block (when it has one).
    single: Entry,
    /// The dictionary's last document of the word.
    want_last: u32,
    /// The skip group checked and in the window.
    group: Option<u32>,
    /// The next block to decode; the last document and the end of the one before it.
    pub(super) cursor: u32,
    prev_last: u32,
    start: u32,
    /// The decoded block: postings, position, last document, impact.
    n: usize,
    pos: usize,
    cur_last: u32,
    pub(super) cur_impact: u16,
    doc: u32,
}

impl<'a> DiskWalk<'a> {
    /// The walk of `w`'s postings, through `buf` (read) and `decoded`, positioned on the
    /// first.
    pub(in crate::memory::store) fn new(
        file: &'a File,
        buf: &'a mut [u8],
        decoded: &'a mut [u32],
        w: &QueryWord,
    ) -> Result<DiskWalk<'a>> {
        let mut c = DiskWalk::open(file, buf, decoded, w)?;
        c.decode()?;
        Ok(c)
    }

    /// The walk of `w`'s postings, before its first block (nothing read yet).
    pub(super) fn open(
        file: &'a File,
        buf: &'a mut [u8],
        decoded: &'a mut [u32],
        w: &QueryWord,
    ) -> Result<DiskWalk<'a>> {
        let Some((skip, post)) = buf.split_at_mut_checked(SKIP_WINDOW) else { bail!(Internal, "walk buffer") };
        if decoded.len() < DECODED {
            bail!(Internal, "walk decoding buffer");
        }
        if w.blocks == 0
            || u64::from(w.blocks) > u64::from(w.base_df)
            || u64::from(w.base_df) > u64::from(w.blocks) * SKIP_BLOCK as u64
        {
            bail!(Io, "store.fts is damaged (a word of {} postings in {} blocks)", w.base_df, w.blocks);
        }
        let skip_at = w.at + u64::from(w.bytes);
        Ok(DiskWalk {
            file: Some(file),
            skip: Window { buf: skip, at: 0, len: 0 },
            post: Window { buf: post, at: 0, len: 0 },
            decoded,
            at: w.at,
            bytes: w.bytes,
            skip_at,
            skip_end: skip_at + skip_bytes(w.blocks),
            blocks: w.blocks,
            single: Entry { last: w.last, end: w.bytes, crc: w.crc, impact: w.impact, count: w.base_df as u16 },
            want_last: w.last,
            doc: NONE,
            ..DiskWalk::default()
        })
    }

    /// [`DiskWalk::new`], positioned on the first posting at or after document `from`
    /// (the blocks before it passed unread).
    pub(in crate::memory::store) fn starting_at(
        file: &'a File,
        buf: &'a mut [u8],
        decoded: &'a mut [u32],
        w: &QueryWord,
        from: u32,
    ) -> Result<DiskWalk<'a>> {
        let mut c = DiskWalk::open(file, buf, decoded, w)?;
        if from > 0 && c.skip_to(from)?.is_none() {
            c.cursor = c.blocks;
        }
        c.decode()?;
        c.seek(from)?;
        Ok(c)
    }

    /// Skip entry `k` (its group read and checked when not the one in the window).
    pub(super) fn entry(&mut self, k: u32) -> Result<Entry> {
        if self.blocks == 1 {
            return Ok(self.single);
        }
        let g = k / SKIP_GROUP as u32;
        let Some(file) = self.file else { bail!(Internal, "a walk without a file") };
        let in_group = (self.blocks - g * SKIP_GROUP as u32).min(SKIP_GROUP as u32) as usize;
        let len = in_group * SKIP_ENTRY + 4;
        let at = self.skip_at + u64::from(g) * GROUP_BYTES as u64;
        let bytes = self.skip.get(file, at, len, self.skip_end)?;
        if self.group != Some(g) {
            let Some((body, crc)) = bytes.split_last_chunk::<4>() else { bail!(Internal, "skip group") };
            if crc32(body) != u32::from_le_bytes(*crc) {
                bail!(Io, "store.fts is damaged (checksum of a skip group)");
            }
            self.group = Some(g);
        }
        let e = (k as usize % SKIP_GROUP) * SKIP_ENTRY;
        let Some(b) = bytes.get(e..e + SKIP_ENTRY) else { bail!(Internal, "skip entry") };
        Ok(Entry {
            last: le32(b, 0),
            end: le32(b, 4),
            crc: le32(b, 8),
            impact: u16::from_le_bytes([b.get(12).copied().unwrap_or(0), b.get(13).copied().unwrap_or(0)]),
            count: u16::from_le_bytes([b.get(14).copied().unwrap_or(0), b.get(15).copied().unwrap_or(0)]),
        })
    }

    /// Passes block `cursor` without reading it.
    fn pass(&mut self, e: &Entry) {
        self.prev_last = e.last;
        self.start = e.end;
        self.cursor += 1;
    }

    /// Decodes block `cursor` (checked by its CRC) and stands on its first posting; past the
    /// last block, the walk ends.
    fn decode(&mut self) -> Result<()> {
        if self.cursor >= self.blocks {
            self.doc = NONE;
            self.n = 0;
            self.pos = 0;
            return Ok(());
        }
        let k = self.cursor;
        let e = self.entry(k)?;
        let Some(file) = self.file else { bail!(Internal, "a walk without a file") };
        let len = e.end.checked_sub(self.start).filter(|&l| l > 0 && l as usize <= BLOCK_MAX_BYTES);
        let count = usize::from(e.count);
        let (Some(len), true) = (len, e.end <= self.bytes && (1..=SKIP_BLOCK).contains(&count)) else {
            bail!(Io, "store.fts is damaged (a skip entry out of bounds)");
        };
        let end = self.at + u64::from(self.bytes);
        let mut p = self.post.get(file, self.at + u64::from(self.start), len as usize, end)?;
        if crc32(p) != e.crc {
            bail!(Io, "store.fts is damaged (checksum of a block of postings)");
        }
        let Some((docs, tfs)) = self.decoded.split_at_mut_checked(SKIP_BLOCK) else {
            bail!(Internal, "walk decoding buffer")
        };
        let mut prev = if k == 0 { None } else { Some(self.prev_last) };
        for (d, t) in docs.iter_mut().zip(tfs.iter_mut()).take(count) {
            let gap = varint(&mut p)?;
            let tf = varint(&mut p)?;
            let doc = match prev {
                None => Some(gap),
                Some(x) if gap > 0 => x.checked_add(gap).filter(|&d| d != NONE),
                Some(_) => None,
            };
            let (Some(doc), true) = (doc, tf > 0) else { bail!(Io, "store.fts is damaged (a posting out of order)") };
            *d = doc;
            *t = tf;
            prev = Some(doc);
        }
        let last_block = k + 1 == self.blocks;
        if !p.is_empty() || prev != Some(e.last) || (last_block && (e.end != self.bytes || e.last != self.want_last)) {
            bail!(Io, "store.fts is damaged (a block of postings does not match its skip entry)");
        }
        self.n = count;
        self.pos = 0;
        self.cur_last = e.last;
        self.cur_impact = e.impact;
        self.doc = docs.first().copied().unwrap_or(NONE);
        self.pass(&e);
        Ok(())
    }

    /// Passes, unread, the blocks before the first whose last document is `target` or after.
    /// Returns that block's entry (`None`: no block is left).
    fn skip_to(&mut self, target: u32) -> Result<Option<Entry>> {
        while self.cursor < self.blocks {
            let e = self.entry(self.cursor)?;
            if e.last >= target {
                return Ok(Some(e));
            }
            if e.last < self.prev_last && self.cursor > 0 {
                bail!(Io, "store.fts is damaged (skip entries out of order)");
            }
            self.pass(&e);
        }
        Ok(None)
    }
}

impl Walk for DiskWalk<'_> {
    fn doc(&self) -> u32 {
        self.doc
    }

    fn tf(&self) -> u32 {
        self.decoded.get(SKIP_BLOCK + self.pos).copied().unwrap_or(0)
    }

    fn advance(&mut self) -> Result<()> {
        if self.doc == NONE {
            return Ok(());
        }
        self.pos += 1;
        if self.pos < self.n {
            self.doc = self.decoded.get(self.pos).copied().unwrap_or(NONE);
            return Ok(());
        }
        self.decode()
    }

    fn seek(&mut self, target: u32) -> Result<()> {
        if self.doc >= target {
            return Ok(());
        }
        if target > self.cur_last {
            if self.skip_to(target)?.is_none() {
                self.cursor = self.blocks;
            }
            self.decode()?;
        }
        while self.doc < target {
            self.pos += 1;
            if self.pos >= self.n {
                return self.decode().and_then(|_| self.seek(target));
            }
            self.doc = self.decoded.get(self.pos).copied().unwrap_or(NONE);
        }
        Ok(())
    }

    fn block_max(&mut self, target: u32) -> Result<(u32, u32)> {
        if self.doc == NONE {
            return Ok((0, NONE));
        }
        if target <= self.cur_last {
            return Ok((u32::from(self.cur_impact), self.cur_last));
        }
        Ok(match self.skip_to(target)? {
            Some(e) => (u32::from(e.impact), e.last),
            None => (0, NONE),
        })
    }
}
