//! The checkpoint's layout (see the module documentation of `checkpoint`): where each section
//! lies, and the little-endian writer and the checked sequential reader of its fields.

use super::{COLUMN_BLOCK, COLUMN_WIDTHS, DIRECTORY_ENTRY, FORMAT, HEADER_BYTES, MAGIC};
use crate::error::Result;
use crate::memory::hash::{crc32, crc32_continue};
use std::fs::File;
use std::io::Read;

/// The byte sizes of a checkpoint's sections, from its header's counts: where each starts is
/// the sum of the ones before (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub(in crate::memory::store) struct Layout {
    /// One past the highest tag id.
    pub(in crate::memory::store) tags: usize,
    /// Bytes of tag text.
    pub(in crate::memory::store) tag_text: u64,
    /// Ids in use (rows of each column).
    pub(in crate::memory::store) next_id: u64,
    pub(in crate::memory::store) links: u64,
    pub(in crate::memory::store) key_slots: u64,
    pub(in crate::memory::store) postings: u64,
}

impl Layout {
    // Sizes come from a header that may be damaged: sums saturate (a file that long does not
    // exist, so such a header is refused by its length).

    /// Where the tag lengths start (the text follows them).
    pub(in crate::memory::store) fn names_at(&self) -> u64 {
        HEADER_BYTES as u64
    }
    /// Where column `col` starts.
    pub(in crate::memory::store) fn column_at(&self, col: usize) -> u64 {
        let before: u64 = COLUMN_WIDTHS.iter().take(col).map(|&w| w as u64).sum();
        self.names_at()
            .saturating_add(self.tags.saturating_sub(1) as u64)
            .saturating_add(self.tag_text)
            .saturating_add(before.saturating_mul(self.next_id))
    }
    /// Bytes of column `col`.
    pub(in crate::memory::store) fn column_len(&self, col: usize) -> u64 {
        COLUMN_WIDTHS.get(col).map_or(0, |&w| (w as u64).saturating_mul(self.next_id))
    }
    /// Where the directory starts (after the links and the key table).
    pub(in crate::memory::store) fn directory_at(&self) -> u64 {
        self.column_at(COLUMN_WIDTHS.len())
            .saturating_add(self.links.saturating_mul(8))
            .saturating_add(self.key_slots.saturating_mul(4))
    }
    /// Where the posting lists start.
    pub(in crate::memory::store) fn postings_at(&self) -> u64 {
        self.directory_at().saturating_add((DIRECTORY_ENTRY as u64).saturating_mul(self.tags.saturating_sub(1) as u64))
    }
    /// Blocks of column `col`.
    pub(in crate::memory::store) fn blocks(&self, col: usize) -> u64 {
        self.column_len(col).div_ceil(COLUMN_BLOCK as u64)
    }
    /// Where the column blocks' CRCs start.
    pub(in crate::memory::store) fn blocks_at(&self) -> u64 {
        self.postings_at().saturating_add(self.postings.saturating_mul(4))
    }
    /// The whole file's length.
    pub(in crate::memory::store) fn file_len(&self) -> u64 {
        let blocks: u64 = (0..COLUMN_WIDTHS.len()).map(|c| self.blocks(c)).fold(0, u64::saturating_add);
        self.blocks_at().saturating_add(blocks.saturating_mul(4))
    }
}

/// Writes little-endian fields into the header.
/// A writer of little-endian fields into a fixed header.
pub(in crate::memory::store) struct Put<'b> {
    pub(in crate::memory::store) buf: &'b mut [u8],
    pub(in crate::memory::store) at: usize,
}

impl Put<'_> {
    pub(in crate::memory::store) fn bytes(&mut self, b: &[u8]) {
        if let Some(dst) = self.buf.get_mut(self.at..self.at + b.len()) {
            dst.copy_from_slice(b);
        }
        self.at += b.len();
    }
    pub(in crate::memory::store) fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }
    pub(in crate::memory::store) fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
}

/// A sequential reader over a file (the checkpoint, the full-text index's file) with a
/// running CRC of what it returned.
pub(in crate::memory::store) struct In<'b> {
    file: File,
    buf: &'b mut Vec<u8>,
    pos: usize,
    /// Bytes of the file not yet read, by its length when opened: a refill asks for no more
    /// (the buffer is zeroed up to what it asks for: 256 KiB for a checkpoint of 64 KiB was
    /// 48 pages of a read-only command's memory written for nothing).
    left: u64,
    pub(in crate::memory::store) crc: u32,
}

impl<'b> In<'b> {
    /// Whether everything was read: the buffer and the file both at their end.
    pub(in crate::memory::store) fn at_end(&mut self) -> Result<bool> {
        if self.pos != self.buf.len() {
            return Ok(false);
        }
        Ok(self.file.read(&mut [0u8; 1]).map_err(|e| err!(Io, "reading failed: {}", e))? == 0)
    }

    /// A reader of `file` (of `len` bytes) from its start, through `buf` (cleared).
    pub(in crate::memory::store) fn new(file: File, len: u64, buf: &'b mut Vec<u8>) -> In<'b> {
        buf.clear();
        In { file, buf, pos: 0, left: len, crc: 0 }
    }

    /// The next `n` bytes.
    pub(in crate::memory::store) fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.pos + n > self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
            let have = self.buf.len();
            let want = (256usize << 10).min(usize::try_from(self.left).unwrap_or(usize::MAX)).max(n);
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
            self.left = self.left.saturating_sub(got as u64);
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
    pub(in crate::memory::store) fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
    }
}

/// The little-endian numbers at the header's fixed offsets (0 past its end).
pub(in crate::memory::store) fn le32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).and_then(|s| s.try_into().ok()).map_or(0, u32::from_le_bytes)
}

pub(in crate::memory::store) fn le64(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).and_then(|s| s.try_into().ok()).map_or(0, u64::from_le_bytes)
}

/// A checkpoint's header, checked (magic, format, its own CRC) and read.
#[derive(Clone, Copy, Debug)]
pub(in crate::memory::store) struct Head {
    pub(in crate::memory::store) store: u64,
    pub(in crate::memory::store) covered: u64,
    pub(in crate::memory::store) header_bytes: u64,
    pub(in crate::memory::store) live_bytes: u64,
    pub(in crate::memory::store) corrupt: u64,
    pub(in crate::memory::store) tail: u32,
    pub(in crate::memory::store) body_crc: u32,
    /// Live entries, and the archived ones among them.
    pub(in crate::memory::store) live: u32,
    pub(in crate::memory::store) archived: u32,
    pub(in crate::memory::store) names_crc: u32,
    pub(in crate::memory::store) directory_crc: u32,
    pub(in crate::memory::store) blocks_crc: u32,
    pub(in crate::memory::store) layout: Layout,
}

impl Head {
    pub(in crate::memory::store) fn parse(hdr: &[u8; HEADER_BYTES]) -> Result<Head> {
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
