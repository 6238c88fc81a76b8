//! The checkpoint: the index written to `store.ckpt` so that opening reads it and replays only
//! the log after it.
//!
//! The log stays the only source of truth. A checkpoint is used only when it names the log it
//! was taken of exactly: the same store id (the log's header; new at every compaction), a
//! length the log still has, and the same last 4 KiB before that length (a log cut back and
//! written again differs there). Anything else (missing, damaged, stale, foreign, from another
//! capacity that does not fit) is ignored with a warning and the log is replayed in full.
//!
//! Written atomically (a new temp file created exclusively, synced, renamed over the old one,
//! the directory synced) by the writer only: after a compaction, at a clean stop
//! ([`Store::close`]), and when [`STORE_CHECKPOINT_EVERY_BYTES`] were appended since the last.
//! Readers never write it.
//!
//! Layout (little-endian), checksummed as a whole by a trailing CRC-32:
//!
//! ```text
//! "LKJSTCK\0"  format u32  store u64  covered u64  tail_crc u32
//! header_bytes u64  live_bytes u64  corrupt u64  next_id u32
//! tags u32 (one past the highest tag id)   then per tag id from 1: len u8, text
//! entries u32                              then per live entry, oldest first:
//!     id u32, location u64 (offset, length, archived), created u32, accessed u32,
//!     hits u32, version u32, tag ids 8 × u16
//! links u32                                then per link: a u32, b u32
//! key table u32 (its length)               then its slots, u32 each (0 = empty, else id + 1)
//! crc u32
//! ```

use super::slots::Slot;
use super::Store;
use crate::error::Result;
use crate::limits::{KEY_MAX_TAGS, STORE_CHECKPOINT_EVERY_BYTES, STORE_MAX_LINKS, TAG_MAX_BYTES};
use crate::memory::hash::{crc32, crc32_continue};
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

/// File name of the checkpoint inside the data directory.
pub const CHECKPOINT_NAME: &str = "store.ckpt";
const TEMP_NAME: &str = ".store.ckpt.tmp";
const MAGIC: &[u8; 8] = b"LKJSTCK\0";
const FORMAT: u32 = 1;
/// Bytes of log before the covered length whose checksum the checkpoint keeps.
const TAIL_BYTES: u64 = 4096;
/// Bytes per entry.
const ENTRY_BYTES: usize = 4 + 8 + 16 + 2 * KEY_MAX_TAGS;

/// Removes a temp file a crash left (the writer only).
pub(super) fn remove_temp(dir: &Path) {
    let _ = fs::remove_file(dir.join(TEMP_NAME));
}

/// Removes the checkpoint (before a compaction replaces the log it names).
pub(super) fn remove(dir: &Path) {
    let _ = fs::remove_file(dir.join(CHECKPOINT_NAME));
}

/// CRC-32 of the `TAIL_BYTES` of the log before `covered`.
fn tail_crc(store: &mut Store, covered: u64) -> Result<u32> {
    let start = covered.saturating_sub(TAIL_BYTES);
    let n = (covered - start) as usize;
    store.rbuf.clear();
    store.rbuf.resize(n, 0);
    store.log.read_at(&mut store.rbuf, start)?;
    Ok(crc32(&store.rbuf))
}

impl Store {
    /// Writes a checkpoint of the index now (the writer only; access statistics counted in
    /// RAM are written to the log first, so the checkpoint matches the log exactly).
    pub fn checkpoint(&mut self) -> Result<()> {
        self.log.check_writable()?;
        if self.log.in_batch() {
            bail!(PersistFailed, "no checkpoint inside a batch");
        }
        if self.slots.next_dirty(0).is_some() {
            self.flush_access_only()?;
        }
        let covered = self.log.len;
        let crc = tail_crc(self, covered)?;
        let tmp = self.dir.join(TEMP_NAME);
        remove_temp(&self.dir);
        // Created exclusively: never through a link planted at the temp name.
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| err!(PersistFailed, "creating {} failed: {}", tmp.display(), e))?;
        let res = self.write_checkpoint(file, covered, crc);
        if let Err(e) = res {
            remove_temp(&self.dir);
            return Err(e);
        }
        fs::rename(&tmp, self.dir.join(CHECKPOINT_NAME)).map_err(|e| {
            remove_temp(&self.dir);
            err!(PersistFailed, "renaming {} into place failed: {}", tmp.display(), e)
        })?;
        crate::memory::atomic::sync_dir(&self.dir)?;
        self.checkpointed = covered;
        Ok(())
    }

    /// A checkpoint when enough log was appended since the last one; a failure is a warning
    /// (the log has everything).
    pub(super) fn checkpoint_if_due(&mut self) {
        if self.log.read_only() || self.log.in_batch() {
            return;
        }
        if self.log.len.saturating_sub(self.checkpointed) >= STORE_CHECKPOINT_EVERY_BYTES {
            self.checkpoint_quietly();
        }
    }

    /// A checkpoint now; a failure is a warning.
    pub(super) fn checkpoint_quietly(&mut self) {
        if let Err(e) = self.checkpoint() {
            e.context(format_args!("the store's checkpoint was not written (the next open reads more log)"))
                .print_warning();
        }
    }

    /// A clean stop: access statistics written, a checkpoint taken if the log grew since the
    /// last. Dropping the store without it loses nothing durable; the next open only reads
    /// more log.
    pub fn close(mut self) -> Result<()> {
        if self.log.read_only() {
            return Ok(());
        }
        self.end_batch()?;
        self.flush_access_only()?;
        if self.log.len != self.checkpointed {
            self.checkpoint()?;
        }
        Ok(())
    }

    fn write_checkpoint(&mut self, mut file: File, covered: u64, tail: u32) -> Result<()> {
        let mut out = core::mem::take(&mut self.rbuf);
        out.clear();
        let mut crc = 0u32;
        let path = self.dir.join(TEMP_NAME);
        let mut flush = |out: &mut Vec<u8>, crc: &mut u32, last: bool| -> Result<()> {
            if out.len() < (256 << 10) && !last {
                return Ok(());
            }
            *crc = crc32_continue(*crc, out);
            if last {
                out.extend_from_slice(&crc.to_le_bytes());
            }
            file.write_all(out).map_err(|e| err!(PersistFailed, "writing {} failed: {}", path.display(), e))?;
            out.clear();
            if last {
                file.sync_all().map_err(|e| err!(PersistFailed, "syncing {} failed: {}", path.display(), e))?;
            }
            Ok(())
        };
        let res = (|| {
            out.extend_from_slice(MAGIC);
            out.extend_from_slice(&FORMAT.to_le_bytes());
            out.extend_from_slice(&self.store_id.to_le_bytes());
            out.extend_from_slice(&covered.to_le_bytes());
            out.extend_from_slice(&tail.to_le_bytes());
            out.extend_from_slice(&self.header_bytes.to_le_bytes());
            out.extend_from_slice(&self.live_bytes.to_le_bytes());
            out.extend_from_slice(&self.corrupt.to_le_bytes());
            out.extend_from_slice(&(self.slots.next_id() as u32).to_le_bytes());
            let limit = self.tags.id_limit();
            out.extend_from_slice(&u32::from(limit).to_le_bytes());
            for id in 1..limit {
                let name = self.tags.name(id);
                out.push(name.len() as u8);
                out.extend_from_slice(name.as_bytes());
                flush(&mut out, &mut crc, false)?;
            }
            out.extend_from_slice(&(self.slots.live() as u32).to_le_bytes());
            for id in self.slots.ids() {
                let Some(s) = self.slots.get(id) else { continue };
                let clean = Slot { dirty: false, ..s };
                out.extend_from_slice(&id.to_le_bytes());
                out.extend_from_slice(&clean.pack().to_le_bytes());
                for x in [s.created, s.accessed, s.hits, s.ver] {
                    out.extend_from_slice(&x.to_le_bytes());
                }
                for t in self.slots.tagset(id) {
                    out.extend_from_slice(&t.to_le_bytes());
                }
                flush(&mut out, &mut crc, false)?;
            }
            out.extend_from_slice(&(self.links.len() as u32).to_le_bytes());
            for &(a, b) in self.links.pairs() {
                out.extend_from_slice(&a.to_le_bytes());
                out.extend_from_slice(&b.to_le_bytes());
                flush(&mut out, &mut crc, false)?;
            }
            // The key table as it is: rebuilding it costs a random memory access per entry.
            let keys = self.keys.raw();
            out.extend_from_slice(&(keys.len() as u32).to_le_bytes());
            for chunk in keys.chunks(16 * 1024) {
                for v in chunk {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                flush(&mut out, &mut crc, false)?;
            }
            flush(&mut out, &mut crc, true)
        })();
        self.rbuf = out;
        res
    }
}

/// Reads the checkpoint into the (empty) index of `store` if it matches the log; returns the
/// log length it covers. `None` when there is none (with a warning when the log is large
/// enough that one was expected); an error when it cannot be used (the caller warns, resets
/// and replays the whole log).
pub(super) fn read(store: &mut Store, file_len: u64) -> Result<Option<u64>> {
    let path = store.dir.join(CHECKPOINT_NAME);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if file_len >= 2 * STORE_CHECKPOINT_EVERY_BYTES && store.format == crate::memory::log::FORMAT_VERSION {
                err!(Io, "{} is missing; reading the whole store log ({} bytes)", path.display(), file_len)
                    .print_warning();
            }
            return Ok(None);
        }
        Err(e) => bail!(Io, "opening {} failed: {}", path.display(), e),
    };
    if store.format < crate::memory::log::FORMAT_VERSION {
        bail!(Io, "{} belongs to a version 1 log", path.display());
    }
    let mut buf = core::mem::take(&mut store.rbuf);
    let res = read_into(store, file, &mut buf, file_len).map_err(|e| e.context(format_args!("{}", path.display())));
    store.rbuf = buf;
    res.map(Some)
}

/// A sequential reader over the checkpoint file with a running CRC of what it returned.
struct In<'b> {
    file: File,
    buf: &'b mut Vec<u8>,
    pos: usize,
    crc: u32,
}

impl In<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.pos + n > self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
            let have = self.buf.len();
            let want = (256usize << 10).max(n);
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
            if self.buf.len() < n {
                bail!(Io, "the checkpoint is cut short");
            }
        }
        let s = self.buf.get(self.pos..self.pos + n).unwrap_or(&[]);
        self.crc = crc32_continue(self.crc, s);
        self.pos += n;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?.first().copied().unwrap_or(0))
    }

    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
    }

    fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    }
}

fn le32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).and_then(|s| s.try_into().ok()).map_or(0, u32::from_le_bytes)
}

fn read_into(store: &mut Store, file: File, buf: &mut Vec<u8>, file_len: u64) -> Result<u64> {
    buf.clear();
    let mut r = In { file, buf, pos: 0, crc: 0 };
    if r.take(8)? != MAGIC {
        bail!(Io, "not a store checkpoint");
    }
    let format = r.u32()?;
    if format != FORMAT {
        bail!(Io, "checkpoint format {} (this program reads {})", format, FORMAT);
    }
    let id = r.u64()?;
    if id != store.store_id {
        bail!(Io, "the checkpoint is of another log (store {:016x}, the log is {:016x})", id, store.store_id);
    }
    let covered = r.u64()?;
    let tail = r.u32()?;
    let header_bytes = r.u64()?;
    let live_bytes = r.u64()?;
    let corrupt = r.u64()?;
    let next_id = r.u32()? as usize;
    if covered > file_len || covered < header_bytes || header_bytes != store.header_bytes {
        bail!(Io, "the checkpoint covers {} bytes of log; the log has {}", covered, file_len);
    }
    if next_id > store.slots.room() {
        bail!(Io, "the checkpoint names {} ids, more than this capacity has room for", next_id);
    }
    let tags = r.u32()?;
    if tags as usize > store.tags.max() + 1 {
        bail!(Io, "the checkpoint has {} tag ids, more than this capacity has room for", tags);
    }
    let mut name = [0u8; TAG_MAX_BYTES];
    for id in 1..tags {
        let n = usize::from(r.u8()?);
        if n > TAG_MAX_BYTES {
            bail!(Io, "a tag of {} bytes", n);
        }
        let text = r.take(n)?;
        if let Some(dst) = name.get_mut(..n) {
            dst.copy_from_slice(text);
        }
        if n > 0 {
            let s = core::str::from_utf8(name.get(..n).unwrap_or(&[]))
                .map_err(|_| err!(Io, "tag id {} is not UTF-8", id))?;
            store.tags.restore(id as u16, s)?;
        }
    }
    store.tags.finish_restore();
    let entries = r.u32()? as usize;
    if entries > store.cap {
        bail!(Io, "the checkpoint holds {} entries, more than memory.store_capacity", entries);
    }
    let mut last: Option<u32> = None;
    for _ in 0..entries {
        let b = r.take(ENTRY_BYTES)?;
        let id = le32(b, 0);
        let loc = b.get(4..12).and_then(|s| s.try_into().ok()).map_or(0, u64::from_le_bytes);
        let slot = Slot::from_packed(loc, le32(b, 12), le32(b, 16), le32(b, 20), le32(b, 24));
        let mut set = [0u16; KEY_MAX_TAGS];
        for (i, t) in set.iter_mut().enumerate() {
            let at = 28 + 2 * i;
            *t = b.get(at..at + 2).and_then(|s| s.try_into().ok()).map_or(0, u16::from_le_bytes);
        }
        if last.is_some_and(|l| id <= l) || id as usize >= next_id || slot.offset < header_bytes || slot.dirty {
            bail!(Io, "entry {} is out of order or out of range", id);
        }
        if slot.offset + u64::from(slot.len) > covered || slot.len == 0 {
            bail!(Io, "entry {} points past the covered log", id);
        }
        let n = set.iter().position(|&t| t == 0).unwrap_or(KEY_MAX_TAGS);
        if n == 0
            || set.get(n..).is_some_and(|rest| rest.iter().any(|&t| t != 0))
            || set.iter().take(n).any(|&t| t >= tags as u16 || !store.tags.is_interned(t))
        {
            bail!(Io, "entry {} names a tag that is not there", id);
        }
        last = Some(id);
        store.install_keyed(id, &slot, &set, false)?;
    }
    store.slots.note_next(next_id);
    let links = r.u32()? as usize;
    if links > STORE_MAX_LINKS {
        bail!(Io, "{} links", links);
    }
    for _ in 0..links {
        let (a, b) = (r.u32()?, r.u32()?);
        if !store.contains(a) || !store.contains(b) || a == b || store.links.contains(a, b) {
            bail!(Io, "a link between {} and {} that cannot be", a, b);
        }
        store.links.add(a, b)?;
    }
    // The key table: used as it is when this capacity sizes it the same (every slot names a
    // live entry, each once: the count must match), else rebuilt.
    let n = r.u32()? as usize;
    let same = n == store.keys.raw().len();
    let mut filled = 0usize;
    let mut at = 0usize;
    while at < n {
        let k = (n - at).min(16 * 1024);
        let b = r.take(4 * k)?;
        if same {
            let dst = store.keys.raw_mut().get_mut(at..at + k).unwrap_or(&mut []);
            for (d, src) in dst.iter_mut().zip(b.chunks_exact(4)) {
                let v = src.try_into().map_or(0, u32::from_le_bytes);
                if v != 0 {
                    if !store.slots.is_live(v - 1) {
                        bail!(Io, "the key table names entry {}, which is not there", v - 1);
                    }
                    filled += 1;
                }
                *d = v;
            }
        }
        at += k;
    }
    if !same {
        store.rebuild_keys()?;
    } else if filled != store.slots.live() {
        bail!(Io, "the key table holds {} entries, the checkpoint {}", filled, store.slots.live());
    }
    let want = r.crc;
    let got = r.u32()?;
    if want != got {
        bail!(Io, "checksum mismatch");
    }
    if r.pos != r.buf.len() || r.file.read(&mut [0u8; 1]).map_err(|e| err!(Io, "reading failed: {}", e))? != 0 {
        bail!(Io, "unexpected bytes after the checksum");
    }
    // Last: the log must still hold what the checkpoint was taken of.
    if tail_crc(store, covered)? != tail {
        bail!(Io, "the log changed before byte {} since the checkpoint was taken (stale)", covered);
    }
    store.header_bytes = header_bytes;
    store.live_bytes = live_bytes;
    store.corrupt = corrupt;
    store.log.len = covered;
    Ok(covered)
}
