//! Encoding the new `store.fts`'s parts as a merge writes them (format in [`super::super::file`]):
//! document pages with their CRCs, postings in blocks with their skip entries, varints.

use super::*;
use crate::memory::store::recall::file::CHUNK;
use std::io::Write;

/// Output through a buffer, with a running CRC and length.
pub(super) struct Out<'a> {
    pub(super) file: &'a mut File,
    pub(super) buf: &'a mut Vec<u8>,
    pub(super) crc: u32,
    pub(super) len: u64,
}

impl Out<'_> {
    pub(super) fn bytes(&mut self, b: &[u8]) -> Result<()> {
        self.buf.extend_from_slice(b);
        self.crc = crc32_continue(self.crc, b);
        self.len += b.len() as u64;
        if self.buf.len() >= CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    pub(super) fn flush(&mut self) -> Result<()> {
        self.file.write_all(self.buf).map_err(|e| err!(PersistFailed, "writing a new index file failed: {}", e))?;
        self.buf.clear();
        Ok(())
    }
}

/// The CRC of the document page being written.
pub(super) struct DocPages {
    pub(super) crc: u32,
    pub(super) n: usize,
}

impl DocPages {
    /// Writes one document's bytes of a column.
    pub(super) fn add(&mut self, out: &mut Out<'_>, b: &[u8], crcs: &mut Vec<u32>) -> Result<()> {
        out.bytes(b)?;
        self.crc = crc32_continue(self.crc, b);
        self.n += 1;
        if self.n == DOC_PAGE {
            self.end(crcs)?;
        }
        Ok(())
    }

    /// Ends the page (if it has a document).
    pub(super) fn end(&mut self, crcs: &mut Vec<u32>) -> Result<()> {
        if self.n > 0 {
            if crcs.len() >= crcs.capacity() {
                bail!(Internal, "more document pages than the store has room for");
            }
            crcs.push(self.crc);
        }
        self.crc = 0;
        self.n = 0;
        Ok(())
    }
}

/// Encodes one word's postings (gap, tf varints) in blocks of [`SKIP_BLOCK`] into a bounded
/// buffer, and their skip entries: counting them as the buffer fills; with a sink, writing
/// each full buffer to it (at the end of a block, so that a block's bytes are in the buffer
/// when it closes).
pub(super) struct Enc<'a> {
    pub(super) buf: &'a mut Vec<u8>,
    pub(super) skip: &'a mut Vec<u8>,
    pub(super) n: u32,
    pub(super) bytes: u32,
    pub(super) blocks: u32,
    pub(super) prev: Option<u32>,
    /// Whether every byte so far is still in the buffer.
    pub(super) fits: bool,
    /// The word's reference mean length, and the largest impact of its blocks.
    pub(super) mean: u32,
    pub(super) most: u16,
    /// The open block: postings, where it starts in the buffer, its best (tf, length, norm).
    pub(super) bn: u32,
    pub(super) bstart: usize,
    pub(super) best: (u32, u32, f64),
    /// `k1 · b / A` (A the reference mean length).
    pub(super) per_len: f64,
    /// The CRC of the bytes written to the sink.
    pub(super) crc: u32,
}

/// An encoder's place between two steps of a job, taken at the end of a block (none open):
/// what [`Enc::resume`] goes on from. Its buffers stay in the merge's scratch meanwhile.
#[derive(Clone, Copy)]
pub(super) struct EncAt {
    n: u32,
    bytes: u32,
    blocks: u32,
    prev: Option<u32>,
    fits: bool,
    mean: u32,
    most: u16,
    bstart: usize,
    per_len: f64,
    crc: u32,
}

impl<'a> Enc<'a> {
    /// Its place, at the end of a block.
    pub(super) fn at(&self) -> EncAt {
        EncAt {
            n: self.n,
            bytes: self.bytes,
            blocks: self.blocks,
            prev: self.prev,
            fits: self.fits,
            mean: self.mean,
            most: self.most,
            bstart: self.bstart,
            per_len: self.per_len,
            crc: self.crc,
        }
    }

    /// The encoder `at` was taken of, on its buffers (as it left them).
    pub(super) fn resume(buf: &'a mut Vec<u8>, skip: &'a mut Vec<u8>, at: &EncAt) -> Enc<'a> {
        Enc {
            buf,
            skip,
            n: at.n,
            bytes: at.bytes,
            blocks: at.blocks,
            prev: at.prev,
            fits: at.fits,
            mean: at.mean,
            most: at.most,
            bn: 0,
            bstart: at.bstart,
            best: (0, 0, 0.0),
            per_len: at.per_len,
            crc: at.crc,
        }
    }

    /// An encoder that goes on after the blocks `c` copied (none: from a word's first
    /// posting), with the word's reference mean length and the CRC of the sink's bytes so far.
    pub(super) fn after(buf: &'a mut Vec<u8>, skip: &'a mut Vec<u8>, c: &Copied, mean: u32, crc: u32) -> Enc<'a> {
        Enc {
            buf,
            skip,
            n: c.n,
            bytes: c.bytes,
            blocks: c.blocks,
            prev: c.last,
            fits: true,
            mean,
            most: c.impact,
            bn: 0,
            bstart: 0,
            best: (0, 0, 0.0),
            per_len: per_len(mean),
            crc,
        }
    }

    pub(super) fn push(&mut self, nd: u32, tf: u32, len: u32, sink: Option<&mut Out<'_>>) -> Result<()> {
        let (g, gk) = encode_varint(self.prev.map_or(nd, |p| nd.wrapping_sub(p)));
        let (t, tk) = encode_varint(tf);
        self.buf.extend_from_slice(crate::bytes::take(&g, gk));
        self.buf.extend_from_slice(crate::bytes::take(&t, tk));
        self.bytes += (gk + tk) as u32;
        self.n += 1;
        self.prev = Some(nd);
        // The posting of the largest tf / (tf + norm) so far: f1 · n2 > f2 · n1.
        let norm = crate::memory::store::recall::rank::K1 * (1.0 - crate::memory::store::recall::rank::B)
            + f64::from(len) * self.per_len;
        let (bf, _, bn) = self.best;
        if bf == 0 || f64::from(tf) * bn > f64::from(bf) * norm {
            self.best = (tf, len, norm);
        }
        self.bn += 1;
        if self.bn as usize == SKIP_BLOCK {
            self.close(sink, true)?;
        }
        Ok(())
    }
}

impl Enc<'_> {
    /// Closes the open block (if it has postings): its skip entry, and the buffer written
    /// to the sink (or, counting, let go) when the next block might not fit it.
    pub(super) fn close(&mut self, sink: Option<&mut Out<'_>>, more: bool) -> Result<()> {
        if self.bn > 0 {
            let block = self.buf.get(self.bstart..).unwrap_or(&[]);
            let (tf, len, _) = self.best;
            let q = impact(tf, len, self.mean);
            let mut e = [0u8; SKIP_ENTRY];
            let mut w = Put { buf: &mut e, at: 0 };
            w.u32(self.prev.unwrap_or(0));
            w.u32(self.bytes);
            w.u32(crc32(block));
            w.bytes(&q.to_le_bytes());
            w.bytes(&(self.bn as u16).to_le_bytes());
            if self.skip.len() + SKIP_ENTRY > self.skip.capacity() {
                bail!(Internal, "a word has more blocks than the store has documents for");
            }
            self.skip.extend_from_slice(&e);
            self.most = self.most.max(q);
            self.blocks += 1;
            self.bn = 0;
            self.best = (0, 0, 0.0);
        }
        match sink {
            Some(out) => {
                out.bytes(self.buf)?;
                self.crc = crc32_continue(self.crc, self.buf);
                self.buf.clear();
            }
            None if more && self.buf.len() + SKIP_BLOCK * 10 > self.buf.capacity() => {
                self.fits = false;
                self.buf.clear();
            }
            None => {}
        }
        self.bstart = self.buf.len();
        Ok(())
    }
}

/// `k1 · b / A` for the reference mean length `mean` (as stored): what a token adds to a
/// document's norm.
pub(super) fn per_len(mean: u32) -> f64 {
    use crate::memory::store::recall::rank::{B, K1};
    K1 * B / (f64::from(mean.max(1)) / crate::memory::store::recall::rank::MEAN_SCALE)
}

/// Adds to the page list (reserved for the most words the index may have).
pub(super) fn push_page(pages: &mut Vec<u32>, v: u32) -> Result<()> {
    if pages.len() >= pages.capacity() {
        bail!(
            CapacityExceeded,
            "the full-text index has more words than its file may list (TEXT_TERMS_PER_ENTRY, TEXT_DELTA_TERMS)"
        );
    }
    pages.push(v);
    Ok(())
}

/// `v` as a varint: the bytes and how many.
pub(super) fn encode_varint(mut v: u32) -> ([u8; 5], usize) {
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
