//! The cold store's keys: `store.cold.keys`, the distinct hashes (FNV-1a, 64 bits) of the
//! keys `store.cold` holds copies of, sorted, so that `status` and `memory stats` count the
//! cold store's current entries without reading all of `store.cold` twice
//! ([`super::scan_current`]: about a second on the soak's 80 MB, issue 39).
//!
//! # What it counts
//!
//! [`super::scan_current`] counts, for each key hash, its newest copy unless the live store
//! holds that copy's key. [`current`] gives the same numbers from this file: the distinct
//! hashes of the copies it covers and of the copies after it (read from `store.cold`), less
//! those of the live store's keys (`live`: the hashes of every live key). Both treat keys by
//! their 64-bit hash; they differ only where a live key's hash equals another key's, which a
//! store of 2^20 live and 2^22 cold keys meets with a chance of about 2^-22.
//!
//! # File and crash rules
//!
//! A cache, as `store.cold.fts` is: its header names the bytes of `store.cold` it covers (the
//! end of a whole group) and the CRC of the 4 KiB before them, and it is used only when
//! `store.cold` still starts with what it was taken of; the groups appended after (a clean-up
//! since the writer last wrote it) are read from `store.cold`, up to
//! [`STORE_COLD_KEYS_TAIL_MAX_BYTES`]. Anything else (missing, damaged, stale, a longer tail)
//! is `None`, and the caller scans `store.cold` as before. Written by the writer only
//! (`Store::cold_keys_write`): at a clean stop (from all of `store.cold` when there is no
//! usable file), and at the checkpoints taken after a compaction of the log or by a command
//! when a usable one lacks at most [`STORE_COLD_KEYS_STEP_BYTES`] (a running agent's
//! clean-ups fill the cold store as they make garbage in the log, so its compactions follow
//! them; the cycle's own due checkpoint allocates nothing and leaves it): the file as it
//! was, merged with the hashes of the groups after it, into a temp file created
//! exclusively, synced, renamed over the old one, the directory synced. A rewrite of `store.cold` removes it first. A kill at any point leaves
//! the old file, the new one or none, each either usable or refused.
//!
//! # Layout (format 1; little-endian)
//!
//! ```text
//! header, 64 bytes:
//!   "LKJCKEYS"  format u32  tail_crc u32  covered u64  count u64  entries u64  damaged u64
//!   body_crc u32  (zero, 8 bytes)  header_crc u32 (of the rest)
//! body (body_crc): count × key hash u64, strictly ascending
//! ```
//!
//! `entries` and `damaged` are [`ColdStats::entries`] and [`ColdStats::damaged`] of the
//! bytes covered.

use super::{walk, ColdStats, COLD_NAME};
use crate::error::Result;
use crate::limits::{STORE_COLD_KEYS_STEP_BYTES, STORE_COLD_KEYS_TAIL_MAX_BYTES, STORE_COLD_SCAN_MAX_KEYS};
use crate::memory::hash::{crc32, crc32_continue};
use crate::memory::log;
use crate::memory::store::Store;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// File name of the cold store's keys inside the data directory.
pub const COLD_KEYS_NAME: &str = "store.cold.keys";
const TEMP_NAME: &str = ".store.cold.keys.tmp";
const MAGIC: &[u8; 8] = b"LKJCKEYS";
const FORMAT: u32 = 1;
const HEADER_BYTES: usize = 64;
/// Bytes of `store.cold` before the covered length whose CRC the header keeps.
const TAIL_BYTES: u64 = 4096;
/// Hashes read or written at a time (64 KiB).
const CHUNK_HASHES: usize = 8192;

/// The header's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Head {
    tail: u32,
    covered: u64,
    count: u64,
    entries: u64,
    damaged: u64,
    body_crc: u32,
}

impl Head {
    fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        let mut put = |at: usize, bytes: &[u8]| {
            if let Some(d) = b.get_mut(at..at + bytes.len()) {
                d.copy_from_slice(bytes);
            }
        };
        put(0, MAGIC);
        put(8, &FORMAT.to_le_bytes());
        put(12, &self.tail.to_le_bytes());
        put(16, &self.covered.to_le_bytes());
        put(24, &self.count.to_le_bytes());
        put(32, &self.entries.to_le_bytes());
        put(40, &self.damaged.to_le_bytes());
        put(48, &self.body_crc.to_le_bytes());
        let crc = crc32(crate::bytes::take(&b, HEADER_BYTES - 4));
        if let Some(d) = b.get_mut(HEADER_BYTES - 4..) {
            d.copy_from_slice(&crc.to_le_bytes());
        }
        b
    }

    /// The header in `b`, or `None` when it is not one this program wrote.
    fn parse(b: &[u8; HEADER_BYTES]) -> Option<Head> {
        let u32_at = |at: usize| b.get(at..at + 4).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes);
        let u64_at = |at: usize| b.get(at..at + 8).and_then(|s| s.try_into().ok()).map(u64::from_le_bytes);
        if b.get(..8) != Some(MAGIC.as_slice()) || u32_at(8)? != FORMAT {
            return None;
        }
        if crc32(crate::bytes::take(b, HEADER_BYTES - 4)) != u32_at(HEADER_BYTES - 4)? {
            return None;
        }
        Some(Head {
            tail: u32_at(12)?,
            covered: u64_at(16)?,
            count: u64_at(24)?,
            entries: u64_at(32)?,
            damaged: u64_at(40)?,
            body_crc: u32_at(48)?,
        })
    }
}

/// The CRC of the [`TAIL_BYTES`] of `cold` before `covered`.
fn tail_crc(cold: &File, covered: u64) -> Option<u32> {
    let start = covered.saturating_sub(TAIL_BYTES);
    let mut buf = vec![0u8; (covered - start) as usize];
    cold.read_exact_at(&mut buf, start).ok()?;
    Some(crc32(&buf))
}

/// `store.cold.keys` and its header when it was taken of what `store.cold` (`cold`, `len`
/// bytes) starts with; `None` otherwise (missing, damaged, stale).
fn usable(dir: &Path, cold: &File, len: u64) -> Option<(File, Head)> {
    let file = File::open(dir.join(COLD_KEYS_NAME)).ok()?;
    let mut raw = [0u8; HEADER_BYTES];
    file.read_exact_at(&mut raw, 0).ok()?;
    let h = Head::parse(&raw)?;
    let size = file.metadata().ok()?.len();
    if h.count > STORE_COLD_SCAN_MAX_KEYS as u64
        || size != HEADER_BYTES as u64 + h.count * 8
        || h.covered > len
        || h.covered == 0
        || tail_crc(cold, h.covered)? != h.tail
    {
        return None;
    }
    Some((file, h))
}

/// Reads the body of `file` (`h`) in order, calling `f` on each hash; an error when it is
/// not strictly ascending or its CRC is not the header's (`Ok(false)`: damaged).
fn read_body(file: &File, h: &Head, f: &mut dyn FnMut(u64)) -> Result<bool> {
    let mut buf = vec![0u8; CHUNK_HASHES * 8];
    let (mut at, mut left, mut crc, mut last) = (HEADER_BYTES as u64, h.count, 0u32, None::<u64>);
    while left > 0 {
        let n = left.min(CHUNK_HASHES as u64) as usize;
        let Some(bytes) = buf.get_mut(..n * 8) else {
            bail!(Internal, "{}: a chunk past its buffer (a bug)", COLD_KEYS_NAME)
        };
        file.read_exact_at(bytes, at)
            .map_err(|e| err!(Io, "reading {} at byte {} failed: {}", COLD_KEYS_NAME, at, e))?;
        crc = crc32_continue(crc, bytes);
        for c in bytes.chunks_exact(8) {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            let v = u64::from_le_bytes(w);
            if last.is_some_and(|l| l >= v) {
                return Ok(false);
            }
            last = Some(v);
            f(v);
        }
        at += n as u64 * 8;
        left -= n as u64;
    }
    Ok(crc == h.body_crc)
}

/// The hashes of the keys of the copies `store.cold` (`cold`, `len` bytes) holds from byte
/// `start` (0: from its header), pushed onto `out` (a copy whose tags are not a key is not,
/// as [`super::scan`] skips it), and what a scan of those bytes counts.
fn hashes_from(cold: &File, start: u64, len: u64, out: &mut Vec<u64>) -> Result<ColdStats> {
    let path = Path::new(COLD_NAME);
    let mut scratch = Vec::with_capacity(log::READ_SCRATCH_BYTES);
    let mut over = false;
    let st = walk(
        cold,
        path,
        start,
        len,
        &mut scratch,
        &mut |e| {
            if out.len() >= STORE_COLD_SCAN_MAX_KEYS {
                // Copies of the same keys: kept once each.
                crate::sort::sort(out);
                out.dedup();
                if out.len() >= STORE_COLD_SCAN_MAX_KEYS {
                    over = true;
                    return Ok(false);
                }
            }
            out.push(super::key_hash(&e.key));
            Ok(true)
        },
        &mut |_, _| Ok(()),
        None,
        &mut 0,
    )?;
    if over {
        bail!(
            CapacityExceeded,
            "{} holds more than {} distinct keys (STORE_COLD_SCAN_MAX_KEYS)",
            COLD_NAME,
            STORE_COLD_SCAN_MAX_KEYS
        );
    }
    crate::sort::sort(out);
    out.dedup();
    Ok(st)
}

/// What [`current`] asks of the live store once the file proves usable: the hashes of all
/// its keys, given the number of distinct keys the file holds (`None`: too many to be worth
/// it, the caller scans instead).
pub type LiveHashes<'a> = &'a mut dyn FnMut(u64) -> Result<Option<Vec<u64>>>;

/// The cold store's statistics in `dir` as [`super::scan_current`] gives them (see the module
/// documentation), from `store.cold.keys` and the groups after it: `live` none counts every
/// key (as `status` does), else none whose hash it gives. `None` when the file is not usable
/// or `live` declines; the caller scans. A missing `store.cold` is an empty cold store.
pub fn current(dir: &Path, live: Option<LiveHashes<'_>>) -> Result<Option<ColdStats>> {
    let cold = match File::open(dir.join(COLD_NAME)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Some(ColdStats::default())),
        Err(e) => bail!(Io, "opening {} failed: {}", dir.join(COLD_NAME).display(), e),
    };
    let len = cold.metadata().map_err(|e| err!(Io, "reading the size of {} failed: {}", COLD_NAME, e))?.len();
    let Some((file, h)) = usable(dir, &cold, len) else { return Ok(None) };
    if len - h.covered > STORE_COLD_KEYS_TAIL_MAX_BYTES {
        return Ok(None);
    }
    let mut lives = match live {
        None => Vec::new(),
        Some(ask) => match ask(h.count)? {
            None => return Ok(None),
            Some(mut v) => {
                crate::sort::sort(&mut v);
                v.dedup();
                v
            }
        },
    };
    let mut tail = Vec::new();
    let tail_st = if h.covered < len { hashes_from(&cold, h.covered, len, &mut tail)? } else { ColdStats::default() };
    // The hashes asked about, in order: the tail's (bit 1) and the live keys' (bit 2).
    let mut asked: Vec<(u64, u8)> = Vec::with_capacity(tail.len() + lives.len());
    let (mut a, mut b) = (tail.iter().peekable(), lives.iter().peekable());
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(&&x), Some(&&y)) if x == y => {
                a.next();
                b.next();
                (x, 3)
            }
            (Some(&&x), Some(&&y)) if x < y => {
                a.next();
                (x, 1)
            }
            (Some(&&x), None) => {
                a.next();
                (x, 1)
            }
            (_, Some(&&y)) => {
                b.next();
                (y, 2)
            }
            (None, None) => break,
        };
        asked.push(next);
    }
    lives.clear();
    lives.shrink_to_fit();
    // One pass over the body beside them: which are in it.
    let mut in_file = vec![false; asked.len()];
    let mut i = 0usize;
    let whole = read_body(&file, &h, &mut |v| {
        while asked.get(i).is_some_and(|&(q, _)| q < v) {
            i += 1;
        }
        if let (Some(&(q, _)), Some(m)) = (asked.get(i), in_file.get_mut(i)) {
            *m |= q == v;
        }
    })?;
    if !whole {
        return Ok(None);
    }
    // Distinct keys: the file's and the tail's it lacks; those of live keys left out.
    let (mut keys, mut held) = (h.count, 0u64);
    for (&(_, bits), &f) in asked.iter().zip(&in_file) {
        let cold_key = f || bits & 1 != 0;
        keys += u64::from(!f && bits & 1 != 0);
        held += u64::from(cold_key && bits & 2 != 0);
    }
    Ok(Some(ColdStats {
        entries: h.entries + tail_st.entries,
        bytes: len,
        damaged: h.damaged + tail_st.damaged,
        unfinished_tail: tail_st.unfinished_tail,
        current: keys - held,
    }))
}

/// Removes `store.cold.keys` and a temp file a crash left (the writer only, before it
/// rewrites `store.cold`).
pub fn remove(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(COLD_KEYS_NAME));
    remove_temp(dir);
}

/// Removes a temp file a crash left (the writer only).
pub fn remove_temp(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(TEMP_NAME));
}

/// Writes `store.cold.keys` for what `store.cold` holds (see the module documentation):
/// the hashes of `old` (a usable file, `h`) merged with `new` (sorted, distinct), with the
/// header `h` gives for the bytes they cover.
fn write(dir: &Path, old: Option<(&File, &Head)>, new: &[u64], mut h: Head) -> Result<()> {
    let tmp = dir.join(TEMP_NAME);
    let out = crate::memory::nofollow::create_temp(&tmp)
        .map_err(|e| err!(PersistFailed, "creating {} failed: {}", tmp.display(), e))?;
    let res = (|| -> Result<()> {
        let mut buf: Vec<u8> = Vec::with_capacity(CHUNK_HASHES * 8);
        let (mut at, mut crc, mut count) = (HEADER_BYTES as u64, 0u32, 0u64);
        let mut fault = None;
        let mut emit = |v: u64, buf: &mut Vec<u8>| {
            buf.extend_from_slice(&v.to_le_bytes());
            count += 1;
            if buf.len() >= CHUNK_HASHES * 8 {
                crc = crc32_continue(crc, buf);
                if let Err(e) = out.write_all_at(buf, at) {
                    fault.get_or_insert(e);
                }
                at += buf.len() as u64;
                buf.clear();
            }
        };
        let mut rest = new.iter().copied().peekable();
        if let Some((file, oh)) = old {
            let whole = read_body(file, oh, &mut |v| {
                while let Some(n) = rest.next_if(|&n| n < v) {
                    emit(n, &mut buf);
                }
                rest.next_if_eq(&v);
                emit(v, &mut buf);
            })?;
            if !whole {
                bail!(Io, "{} is damaged (its hashes are not the ones its header names)", COLD_KEYS_NAME);
            }
        }
        for n in rest {
            emit(n, &mut buf);
        }
        crc = crc32_continue(crc, &buf);
        if let Some(e) = fault {
            bail!(PersistFailed, "writing {} failed: {}", tmp.display(), e);
        }
        out.write_all_at(&buf, at).map_err(|e| err!(PersistFailed, "writing {} failed: {}", tmp.display(), e))?;
        h.count = count;
        h.body_crc = crc;
        out.write_all_at(&h.encode(), 0).map_err(|e| err!(PersistFailed, "writing {} failed: {}", tmp.display(), e))?;
        out.sync_all().map_err(|e| err!(PersistFailed, "syncing {} failed: {}", tmp.display(), e))?;
        let path = dir.join(COLD_KEYS_NAME);
        std::fs::rename(&tmp, &path)
            .map_err(|e| err!(PersistFailed, "renaming {} over {} failed: {}", tmp.display(), path.display(), e))?;
        crate::memory::atomic::sync_dir(dir)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

impl Store {
    /// Brings `store.cold.keys` up to date with `store.cold` (the writer only; see the module
    /// documentation): nothing when it is current; the groups appended since merged into it
    /// when it is usable; `whole` (a clean stop), built from all of `store.cold` when it is
    /// not. Without `whole` (a checkpoint) only a usable file lacking at most
    /// [`STORE_COLD_KEYS_STEP_BYTES`] is brought up to date, so that no cycle reads the whole
    /// cold store. A failure leaves the old file (or none): a cache, so the caller warns.
    pub(in crate::memory::store) fn cold_keys_write(&mut self, whole: bool) -> Result<()> {
        if self.log.read_only() {
            return Ok(());
        }
        let cold = match File::open(self.dir.join(COLD_NAME)) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => bail!(Io, "opening {} failed: {}", COLD_NAME, e),
        };
        let len = cold.metadata().map_err(|e| err!(Io, "reading the size of {} failed: {}", COLD_NAME, e))?.len();
        let mut old = usable(&self.dir, &cold, len);
        if old.as_ref().is_some_and(|(_, h)| h.covered == len) {
            return Ok(());
        }
        if !whole && old.as_ref().is_none_or(|(_, h)| len - h.covered > STORE_COLD_KEYS_STEP_BYTES) {
            return Ok(());
        }
        for _ in 0..2 {
            let start = old.as_ref().map_or(0, |(_, h)| h.covered);
            let mut new = Vec::new();
            let st = hashes_from(&cold, start, len, &mut new)?;
            if st.unfinished_tail > 0 {
                // A group being written, or cut short (dropped at the next open): its copies
                // are not the file's yet.
                return Ok(());
            }
            let covered = len;
            let Some(tail) = tail_crc(&cold, covered) else {
                bail!(Io, "reading {} before byte {} failed", COLD_NAME, covered);
            };
            let base = old.as_ref().map(|(_, h)| *h);
            let h = Head {
                tail,
                covered,
                count: 0,
                entries: base.map_or(0, |b| b.entries) + st.entries,
                damaged: base.map_or(0, |b| b.damaged) + st.damaged,
                body_crc: 0,
            };
            match write(&self.dir, old.as_ref().map(|(f, h)| (f, h)), &new, h) {
                Err(e) if old.is_some() && whole && e.code() == crate::error::Code::Io => old = None,
                res => return res,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::key::Key;
    use crate::memory::store::cleanup::Policy;
    use crate::testing::rng::Rng;
    use crate::testing::temp_dir;

    fn k(s: &str) -> Key {
        crate::memory::key::normalize(s).unwrap()
    }

    fn live_hashes(s: &Store) -> Vec<u64> {
        s.ids().filter_map(|id| s.key(id)).map(|k| super::super::key_hash(&k)).collect()
    }

    /// Both counts (every key, as `status`; none live, as `memory stats`) from the file,
    /// each against the scan's; whether the file answered.
    fn same_as_scan(s: &Store, what: &str) -> bool {
        let d = s.dir().to_path_buf();
        let all = super::super::scan_current(&d, &|_| false, &mut |_| Ok(true)).unwrap();
        let not_live = super::super::scan_current(&d, &|key| s.find(key).is_some(), &mut |_| Ok(true)).unwrap();
        let got_all = current(&d, None).unwrap();
        let mut asked = None;
        let got_not_live = current(
            &d,
            Some(&mut |n| {
                asked = Some(n);
                Ok(Some(live_hashes(s)))
            }),
        )
        .unwrap();
        assert_eq!(got_all.is_some(), got_not_live.is_some(), "{what}");
        if let (Some(a), Some(b)) = (got_all, got_not_live) {
            assert_eq!(a, all, "{what}: every key");
            assert_eq!(b, not_live, "{what}: none live");
            assert!(asked.is_some() || !d.join(COLD_NAME).exists(), "{what}");
            return true;
        }
        false
    }

    #[test]
    fn counts_equal_the_scans_with_keys_live_and_cold_copies_and_tails() {
        let d = temp_dir("cold-keys");
        let mut rng = Rng::new(0x39_0032);
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.set_policy(Some(Policy::default()));
        let (mut answered, mut with_tail, mut live_and_cold) = (0, 0, 0);
        let mut next = 0u64;
        for step in 0..400u64 {
            match rng.below(24) {
                // A key saved again: often one that went cold (live and cold then).
                0..=5 if next > 0 => {
                    let i = rng.below(next as usize);
                    s.put(&k(&format!("n{i},note")), &format!("again at {step}"), 1000 + step).unwrap();
                }
                6 => {
                    let mut keys = Vec::new();
                    super::super::scan_current(&d, &|key| s.find(key).is_some(), &mut |e| {
                        keys.push(e.key);
                        Ok(true)
                    })
                    .unwrap();
                    if !keys.is_empty() {
                        let key = keys[rng.below(keys.len())];
                        if rng.below(2) == 0 {
                            s.restore(&key).unwrap();
                        } else {
                            s.delete(&key).unwrap();
                        }
                    }
                }
                7 if step % 5 == 0 => {
                    s.compact_cold().unwrap();
                }
                8 | 9 => s.checkpoint().unwrap(),
                10 => s.stop().unwrap(),
                11 => {
                    // Dropped without a clean stop, opened again.
                    drop(s);
                    s = Store::open_with_capacity(&d, 64).unwrap();
                    s.set_policy(Some(Policy::default()));
                }
                _ => {
                    s.put(&k(&format!("n{next},note")), &format!("note {next} at {step}"), 1000 + step).unwrap();
                    next += 1;
                }
            }
            s.flush_access().unwrap();
            let live = live_hashes(&s);
            let cold = super::super::scan_current(&d, &|_| false, &mut |_| Ok(true)).unwrap();
            if same_as_scan(&s, &format!("step {step}")) && d.join(COLD_NAME).exists() {
                answered += 1;
                let covered = std::fs::read(d.join(COLD_KEYS_NAME)).map(|b| {
                    let raw: [u8; HEADER_BYTES] = b[..HEADER_BYTES].try_into().unwrap();
                    Head::parse(&raw).unwrap().covered
                });
                with_tail += usize::from(covered.unwrap() < cold.bytes);
                let not_live = super::super::scan_current(&d, &|key| s.find(key).is_some(), &mut |_| Ok(true));
                live_and_cold += usize::from(not_live.unwrap().current < cold.current && !live.is_empty());
            }
        }
        s.stop().unwrap();
        assert!(same_as_scan(&s, "after a stop"), "a clean stop leaves the file current");
        assert!(answered > 60 && with_tail > 30 && live_and_cold > 30, "{answered} {with_tail} {live_and_cold}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_damaged_stale_or_far_behind_file_is_not_used() {
        let d = temp_dir("cold-keys-bad");
        let mut s = Store::open_with_capacity(&d, 64).unwrap();
        s.set_policy(Some(Policy::default()));
        for i in 0..300u64 {
            s.put(&k(&format!("n{i},note")), &format!("note {i} {}", "word ".repeat(20)), 1000 + i).unwrap();
        }
        s.stop().unwrap();
        assert!(same_as_scan(&s, "current"));
        let good = std::fs::read(d.join(COLD_KEYS_NAME)).unwrap();
        // A hash of the body changed: its CRC says so.
        let mut bad = good.clone();
        bad[HEADER_BYTES + 3] ^= 0x10;
        std::fs::write(d.join(COLD_KEYS_NAME), &bad).unwrap();
        assert!(!same_as_scan(&s, "damaged body"));
        // The header's CRC.
        let mut bad = good.clone();
        bad[20] ^= 1;
        std::fs::write(d.join(COLD_KEYS_NAME), &bad).unwrap();
        assert!(!same_as_scan(&s, "damaged header"));
        // Cut short.
        std::fs::write(d.join(COLD_KEYS_NAME), &good[..good.len() - 8]).unwrap();
        assert!(!same_as_scan(&s, "cut short"));
        // The writer brings a damaged file back at its stop, from all of store.cold.
        std::fs::write(d.join(COLD_KEYS_NAME), &bad).unwrap();
        s.stop().unwrap();
        assert!(same_as_scan(&s, "written again"));
        // store.cold rewritten (a restore): the file goes with the old one.
        let mut keys = Vec::new();
        super::super::scan_current(&d, &|key| s.find(key).is_some(), &mut |e| {
            keys.push(e.key);
            Ok(true)
        })
        .unwrap();
        let old = std::fs::read(d.join(COLD_KEYS_NAME)).unwrap();
        s.restore(&keys[keys.len() / 2]).unwrap();
        assert!(!d.join(COLD_KEYS_NAME).exists());
        // Put back (as if a crash had kept it): store.cold no longer starts with what it covers.
        std::fs::write(d.join(COLD_KEYS_NAME), &old).unwrap();
        assert!(!same_as_scan(&s, "stale"));
        s.stop().unwrap();
        assert!(same_as_scan(&s, "after the restore's stop"));
        // More groups than a reader reads after it: scanned instead; a checkpoint does not
        // read them either, a stop does. (The writer's checkpoints after its compactions keep
        // it current as it goes: the file as it was put back, as if they had not.)
        let before = std::fs::read(d.join(COLD_KEYS_NAME)).unwrap();
        let mut i = 300u64;
        let cold_len = |d: &Path| std::fs::metadata(d.join(COLD_NAME)).unwrap().len();
        let covered = Head::parse(&before[..HEADER_BYTES].try_into().unwrap()).unwrap().covered;
        while cold_len(&d) - covered <= STORE_COLD_KEYS_TAIL_MAX_BYTES {
            s.put(&k(&format!("n{i},note")), &"a longer note ".repeat(200), 1000 + i).unwrap();
            i += 1;
        }
        assert!(same_as_scan(&s, "kept current by the writer's checkpoints"));
        assert_ne!(std::fs::read(d.join(COLD_KEYS_NAME)).unwrap(), before);
        std::fs::write(d.join(COLD_KEYS_NAME), &before).unwrap();
        assert!(!same_as_scan(&s, "far behind"));
        s.checkpoint().unwrap();
        assert_eq!(std::fs::read(d.join(COLD_KEYS_NAME)).unwrap(), before, "a checkpoint leaves it");
        s.stop().unwrap();
        assert!(same_as_scan(&s, "after the stop"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
