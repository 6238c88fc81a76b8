//! The checkpoint's checksums, taken from its file once the body is written: the CRC of each
//! column block (written after the posting lists), of each posting list (into the tag
//! directory), of the tag names, the directory, the blocks' list and the whole body, then the
//! header with them (and its own CRC) written at offset 0, last, and the file synced.
//!
//! A due checkpoint's cycle only copies the index into the file (the index as it is at that
//! instant, so the file is consistent) and hands the file to the store's worker thread,
//! which finishes it beside the cycle and syncs it (`sync`): the checksums were most of a
//! checkpoint's cycle (a pass over every byte of the file's 71 MB at 1,048,576 entries, some
//! twice). A checkpoint taken at once finishes it in place. Either way the file is the same,
//! byte for byte, and the header that makes it a checkpoint is written after everything it
//! checks, so a file cut short anywhere is never taken for one (and a crash leaves only a
//! temp file).
//!
//! The file is read back (from the page cache, where it was just written) through one buffer
//! of [`BLOCK`] bytes; the column blocks' CRCs go in a list reserved for the slots' room. Both
//! are the store's, reserved once and lent to the worker (`Bufs`).

use super::format::{le32, Layout};
use super::{BLOCK, COLUMN_BLOCK, COLUMN_WIDTHS, DIRECTORY_ENTRY, HEADER_BYTES};
use crate::memory::hash::{crc32, crc32_combine, crc32_continue, crc32_shift};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Where the header holds the CRCs taken here (see the module documentation of
/// `checkpoint`): the body's, the names', the directory's, the column blocks' list's.
const BODY_CRC_AT: usize = 76;
const NAMES_CRC_AT: usize = 96;
const DIRECTORY_CRC_AT: usize = 100;
const BLOCKS_CRC_AT: usize = 104;

/// The buffers finishing a checkpoint reads and counts with, reserved once by the store
/// (`Bufs::reserve`) and lent with each job to the worker that finishes due checkpoints, back
/// with its result. A checkpoint let go of (a newer checkpoint, a compaction) before its
/// result came back keeps them until it does; the next checkpoint meanwhile reserves its own.
#[derive(Default)]
pub(in crate::memory::store) struct Bufs {
    /// Bytes read back: [`BLOCK`] of them.
    bytes: Vec<u8>,
    /// Each column block's CRC, 4 bytes a block (164 KiB at 1,048,576 entries).
    crcs: Vec<u32>,
}

impl Bufs {
    /// Room for a checkpoint of `ids` ids (reserving for `room`, the slots' room, when there
    /// is not enough, so that it happens once).
    pub(in crate::memory::store) fn reserve(&mut self, ids: usize, room: usize) {
        let blocks = |n: usize| -> usize { COLUMN_WIDTHS.iter().map(|w| (n * w).div_ceil(COLUMN_BLOCK)).sum() };
        if self.crcs.capacity() < blocks(ids) {
            self.crcs.reserve_exact(blocks(ids.max(room)));
        }
        if self.bytes.capacity() < BLOCK {
            self.bytes.reserve_exact(BLOCK);
        }
    }

    /// Bytes of RAM reserved.
    pub(in crate::memory::store) fn ram_bytes(&self) -> usize {
        self.bytes.capacity() + self.crcs.capacity() * 4
    }
}

/// A checkpoint whose body is written (all but the column blocks' CRCs, and the directory's
/// list CRCs as zeros): its header but for the CRCs, and its sections' sizes.
#[derive(Clone, Copy)]
pub(in crate::memory::store) struct Unfinished {
    pub(in crate::memory::store) header: [u8; HEADER_BYTES],
    pub(in crate::memory::store) layout: Layout,
}

/// Takes the checksums of `file`, writes them and the header, and syncs the file when `sync`
/// (see the module documentation).
pub(in crate::memory::store) fn finish(file: &File, u: &Unfinished, bufs: &mut Bufs, sync: bool) -> io::Result<()> {
    let l = u.layout;
    let buf = &mut bufs.bytes;
    buf.clear();
    buf.resize(BLOCK, 0);
    // The body starts with the tag names: their CRC is the body's so far.
    let mut body = crc_range(file, buf, l.names_at(), l.column_at(0), 0)?;
    let names_crc = body;
    // Each column block's CRC, and the body's from them (`crc32_combine`: no second pass).
    let crcs = &mut bufs.crcs;
    crcs.clear();
    let whole = crc32_shift(COLUMN_BLOCK as u64);
    for col in 0..COLUMN_WIDTHS.len() {
        let (mut at, end) = (l.column_at(col), l.column_at(col).saturating_add(l.column_len(col)));
        while at < end {
            let n = (end - at).min(BLOCK as u64) as usize;
            let chunk = buf.get_mut(..n).unwrap_or(&mut []);
            file.read_exact_at(chunk, at)?;
            for b in chunk.chunks(COLUMN_BLOCK) {
                let c = crc32(b);
                crcs.push(c);
                let shift = if b.len() == COLUMN_BLOCK { whole } else { crc32_shift(b.len() as u64) };
                body = crc32_combine(body, c, shift);
            }
            at += n as u64;
        }
    }
    // The links and the key table.
    body = crc_range(file, buf, l.column_at(COLUMN_WIDTHS.len()), l.directory_at(), body)?;
    // The directory, a part at a time: each of its tags' list CRCs taken from the lists (which
    // follow the directory in the same order), the part written back. The lists' own CRC, for
    // the body's, is counted apart and put after the directory's.
    let dir_room = (BLOCK / 4) / DIRECTORY_ENTRY * DIRECTORY_ENTRY;
    let (dir_buf, list_buf) = buf.split_at_mut(dir_room);
    let (mut directory_crc, mut lists_crc, mut postings) = (0u32, 0u32, 0u64);
    let mut list_at = l.postings_at();
    let (mut at, end) = (l.directory_at(), l.postings_at());
    while at < end {
        let n = (end - at).min(dir_room as u64) as usize;
        let part = dir_buf.get_mut(..n).unwrap_or(&mut []);
        file.read_exact_at(part, at)?;
        for entry in part.chunks_exact_mut(DIRECTORY_ENTRY) {
            let count = u64::from(le32(entry, 0));
            postings += count;
            if postings > l.postings {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the tag directory counts more postings than written",
                ));
            }
            let (mut left, mut list_crc) = (count * 4, 0u32);
            while left > 0 {
                let k = left.min(list_buf.len() as u64) as usize;
                if k == 0 {
                    return Err(io::Error::other("no room to read a posting list back"));
                }
                let bytes = list_buf.get_mut(..k).unwrap_or(&mut []);
                file.read_exact_at(bytes, list_at)?;
                list_crc = crc32_continue(list_crc, bytes);
                lists_crc = crc32_continue(lists_crc, bytes);
                list_at += k as u64;
                left -= k as u64;
            }
            if let Some(c) = entry.get_mut(8..12) {
                c.copy_from_slice(&list_crc.to_le_bytes());
            }
        }
        file.write_all_at(part, at)?;
        directory_crc = crc32_continue(directory_crc, part);
        body = crc32_continue(body, part);
        at += n as u64;
    }
    if postings != l.postings {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "the tag directory counts fewer postings than written"));
    }
    body = crc32_combine(body, lists_crc, crc32_shift(l.postings * 4));
    // The column blocks' CRCs, after the posting lists.
    let mut blocks_crc = 0u32;
    let mut at = l.blocks_at();
    for part in crcs.chunks(BLOCK / 4) {
        let bytes = buf.get_mut(..part.len() * 4).unwrap_or(&mut []);
        for (dst, c) in bytes.chunks_exact_mut(4).zip(part) {
            dst.copy_from_slice(&c.to_le_bytes());
        }
        file.write_all_at(bytes, at)?;
        blocks_crc = crc32_continue(blocks_crc, bytes);
        body = crc32_continue(body, bytes);
        at += bytes.len() as u64;
    }
    // The header, last: its CRCs, then its own CRC over the rest.
    let mut h = u.header;
    for (at, v) in
        [(BODY_CRC_AT, body), (NAMES_CRC_AT, names_crc), (DIRECTORY_CRC_AT, directory_crc), (BLOCKS_CRC_AT, blocks_crc)]
    {
        if let Some(dst) = h.get_mut(at..at + 4) {
            dst.copy_from_slice(&v.to_le_bytes());
        }
    }
    if let Some((rest, crc)) = h.split_last_chunk_mut::<4>() {
        *crc = crc32(rest).to_le_bytes();
    }
    file.write_all_at(&h, 0)?;
    if sync {
        file.sync_all()?;
    }
    Ok(())
}

/// `crc` continued over the bytes `from..to` of `file`, read through `buf`.
fn crc_range(file: &File, buf: &mut [u8], from: u64, to: u64, mut crc: u32) -> io::Result<u32> {
    let mut at = from;
    while at < to {
        let n = (to - at).min(buf.len() as u64) as usize;
        let chunk = buf.get_mut(..n).unwrap_or(&mut []);
        file.read_exact_at(chunk, at)?;
        crc = crc32_continue(crc, chunk);
        at += n as u64;
    }
    Ok(crc)
}
