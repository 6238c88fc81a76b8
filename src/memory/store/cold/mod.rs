//! The cold tier, a room of the store: `store.cold`, where a clean-up ([`cleanup`], the
//! capacity policy) puts the entries it takes out of the live store, so that the live store
//! never fills up and nothing the agent learned is lost. Crash-safe by groups appended whole and
//! synced before the live log lets go of their entries, and rewrites by temp file and rename.
//!
//! Its parts: [`cleanup`], the capacity policy that fills it; [`rewrite`], `restore`, the
//! drop of a key's copies and the compaction; [`recall`], its text index (`store.cold.fts`),
//! built and merged as the live one, and [`catch_up`], what keeps that current; [`hits`], that
//! index's part of a ranked query and the hits it gives; [`check`], what `lkjagent check` says
//! of that index's file; `by_hash`, the map of each key's newest copy (by the key's hash) that
//! the index and [`scan_current`] keep; [`keys`], the sorted hashes of its keys
//! (`store.cold.keys`), from which `status` and `memory stats` count it without a scan.
//!
//! # Format
//!
//! The store log's format ([`crate::memory::log`]): one checksummed JSON line per record. The
//! first line is a `cold` header (never a log's, so neither file can pass for the other). Then
//! groups, one per clean-up: a `cleanup` record, the records of the entries it moved (each
//! the whole entry, as the log last held it: tags, value, version, created, last access,
//! hits, archived; in format 2, the header's `version`, the short record of
//! [`log::encode_cold_put`], about 61 bytes besides the key and value where the log's `put`
//! of format 1 takes 131; a file is one format, a format 1 file appended to in format 1 until
//! a rewrite writes it in format 2), a `cold_link` record for each link they had (the two entries by their
//! keys, which outlive the live store's ids: `restore` links an entry again to the linked
//! ones that are live, and the others keep the record until they come back too), and a
//! `batch_end`. A group is written and then synced once.
//!
//! # Outside the live index
//!
//! The cold store has no capacity: it grows by what it is given (about the size of the
//! entries' `put` records). Its text index ([`recall`]) ranks its entries with the live ones;
//! the rest reads it by a scan (`memory show`, `search --cold`, `export`, `restore`,
//! `stats`); the agent's cycle appends to it, and `memory compact` rewrites it with its
//! current entries only ([`crate::memory::store::Store::compact_cold`]).
//!
//! # Crash safety, across the two files
//!
//! A clean-up appends its group here and syncs it, then writes its deletions to the live log
//! as one clean-up batch with one sync (see `store::cleanup`). So at every instant each entry
//! it moves is in the live store, or in both, or in the cold store only: never in neither. An
//! entry in both (a crash between the two syncs) is the same entry twice: readers show the
//! live one and skip the cold copy with the same key and creation time, and the next clean-up
//! may move it again (the newer copy then wins). A group cut short by a crash (no
//! `batch_end`) is a torn tail: the writer drops it at its next open, as it drops a torn
//! record (its entries are still live). A damaged record followed by good ones is skipped
//! with a warning, as in the log.
//!
//! # One key, one current value
//!
//! A key's current value is the live store's when the live store holds the key (a save of a
//! key that went cold is its update: it supersedes every cold copy), else its newest copy
//! here (the last in file order: an entry saved again after it went cold and moved out again,
//! or moved twice after a crash). [`scan_current`] walks only these, so no reader shows a
//! key twice or an older value, and counts are of distinct entries. `delete` and `retag`
//! drop a key's cold copies before they change the live entry (a crash in between leaves the
//! live value current), and `restore` drops every copy of the key it brings back.
//!
//! `memory restore KEY` puts the entry back into the live store (synced) and then rewrites
//! the cold store without it (temp file, sync, rename, sync of the directory): a crash in
//! between leaves it in both, which is the case above.

mod by_hash;
pub mod catch_up;
pub mod check;
pub mod cleanup;
pub mod hits;
pub mod keys;
pub(super) use by_hash::IdsByHash;
pub mod recall;
pub mod rewrite;

use crate::error::Result;
use crate::fixed::FixedBuf;
use crate::limits::{STORE_COLD_OPEN_KEYS_MAX, STORE_COLD_SCAN_MAX_KEYS};
use crate::memory::key::{Key, Tag};
use crate::memory::log::{self, LineReader, PutHead, Record};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// File name of the cold store inside the data directory.
pub const COLD_NAME: &str = "store.cold";

/// One entry of the cold store, as a scan meets it.
pub struct ColdEntry<'a> {
    /// Where its record starts in `store.cold`.
    pub at: u64,
    /// Its fields as the live store last held them.
    pub head: PutHead,
    /// Its tags.
    pub key: Key,
    /// Its value, still JSON-escaped (decode with [`log::decode_str`]).
    pub value_escaped: &'a str,
}

/// What a scan of the cold store found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ColdStats {
    /// `put` records of whole groups (an entry moved twice after a crash counts twice).
    pub entries: u64,
    /// Size of the file.
    pub bytes: u64,
    /// Damaged records skipped.
    pub damaged: u64,
    /// Bytes at the end that are not a whole group (a clean-up being written, or cut short).
    pub unfinished_tail: u64,
    /// Distinct entries that are current (see the module documentation): set by
    /// [`scan_current`] only.
    pub current: u64,
}

/// The cold store as the writer holds it open (appending only).
pub struct ColdFile {
    path: PathBuf,
    file: File,
    len: u64,
    entries: u64,
    poisoned: bool,
    /// Its format (its header's), in which its groups are appended.
    version: u64,
}

impl ColdFile {
    /// Opens (creating if absent) the cold store in `dir` for appending: a torn tail or a
    /// group cut short by a crash is dropped (see the module documentation). `scratch` is
    /// the store's read buffer.
    pub fn open(dir: &Path, scratch: &mut Vec<u8>) -> Result<ColdFile> {
        ColdFile::open_noting(dir, scratch, None)
    }

    /// [`ColdFile::open`], noting in `keys` the key hash of each `put` of the whole groups
    /// it reads, in file order (each cold id's, see [`recall`]; a `put` whose tags are not a
    /// key is not noted, as [`recall`]'s own reading of the file skips it). Past
    /// [`STORE_COLD_OPEN_KEYS_MAX`] nothing is noted (`keys` left empty).
    pub fn open_noting(dir: &Path, scratch: &mut Vec<u8>, keys: Option<&mut Vec<u64>>) -> Result<ColdFile> {
        let path = dir.join(COLD_NAME);
        crate::memory::nofollow::refuse_link(&path)?;
        if !path.exists() {
            let mut header = FixedBuf::with_capacity("cold store header", 128);
            log::encode_cold_header(&mut header)?;
            crate::memory::atomic::write_file(dir, COLD_NAME, header.as_slice())?;
        }
        let file = crate::memory::nofollow::open(&path, OpenOptions::new().read(true).write(true))?
            .map_err(|e| err!(Io, "opening {} failed: {}", path.display(), e))?;
        let file_len =
            file.metadata().map_err(|e| err!(Io, "reading the size of {} failed: {}", path.display(), e))?.len();
        let mut version = log::COLD_FORMAT_VERSION;
        let st = walk(&file, &path, 0, file_len, scratch, &mut |_| Ok(true), &mut |_, _| Ok(()), keys, &mut version)?;
        let good = file_len - st.unfinished_tail;
        if st.unfinished_tail > 0 {
            err!(
                Io,
                "{}: dropped {} bytes at the end (a clean-up cut short by a crash; its entries are still in the live store)",
                path.display(),
                st.unfinished_tail
            )
            .print_warning();
            file.set_len(good)
                .and_then(|_| file.sync_all())
                .map_err(|e| err!(PersistFailed, "truncating the torn tail of {} failed: {}", path.display(), e))?;
        }
        Ok(ColdFile { path, file, len: good, entries: st.entries, poisoned: false, version })
    }

    /// Its format, in which its groups are appended ([`log::encode_cold_put`]).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Entries written (see [`ColdStats::entries`]).
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the next group starts.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file holds no group yet.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Appends whole records of the group being written, unsynced; returns where they start.
    /// A failed write cuts the file back to `group_start` and refuses further writes.
    pub fn write(&mut self, bytes: &[u8], group_start: u64) -> Result<u64> {
        if self.poisoned {
            bail!(PersistFailed, "{}: an earlier write failed; reopen the store", self.path.display());
        }
        let at = self.len;
        if let Err(e) = self.file.write_all_at(bytes, at) {
            self.abort(group_start);
            bail!(
                PersistFailed,
                "appending {} bytes to {} failed ({}); nothing was moved",
                bytes.len(),
                self.path.display(),
                e
            );
        }
        self.len += bytes.len() as u64;
        Ok(at)
    }

    /// Syncs the group that started at `group_start`, holding `entries` entries.
    pub fn commit(&mut self, group_start: u64, entries: u64) -> Result<()> {
        if let Err(e) = self.file.sync_data() {
            self.abort(group_start);
            bail!(PersistFailed, "syncing {} failed ({}); nothing was moved", self.path.display(), e);
        }
        self.entries += entries;
        Ok(())
    }

    /// Cuts the file back to `group_start` (best effort) and refuses further writes: after a
    /// failed write or sync the kernel's view of the file cannot be trusted.
    pub fn abort(&mut self, group_start: u64) {
        let _ = self.file.set_len(group_start);
        self.len = group_start;
        self.poisoned = true;
    }
}

/// Reads every entry of the cold store in `dir` in file order, calling `f` on each until it
/// returns `Ok(false)`. Writes nothing: a tail that is not a whole group yet (a clean-up being
/// written) is read as far as its records are whole, which is harmless (its entries are
/// still in the live store, see the module documentation). A missing file is an empty store.
pub fn scan(dir: &Path, f: &mut dyn FnMut(&ColdEntry<'_>) -> Result<bool>) -> Result<ColdStats> {
    scan_with_links(dir, f, &mut |_, _| Ok(()))
}

/// The links the cold store keeps (see the module documentation), each pair of keys as written.
pub fn scan_links(dir: &Path, f: &mut dyn FnMut(&Key, &Key) -> Result<()>) -> Result<()> {
    scan_with_links(dir, &mut |_| Ok(true), f).map(|_| ())
}

/// [`scan`], calling `links` on each link it keeps as well.
fn scan_with_links(
    dir: &Path,
    f: &mut dyn FnMut(&ColdEntry<'_>) -> Result<bool>,
    links: &mut dyn FnMut(&Key, &Key) -> Result<()>,
) -> Result<ColdStats> {
    let path = dir.join(COLD_NAME);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ColdStats::default()),
        Err(e) => bail!(Io, "opening {} failed: {}", path.display(), e),
    };
    let len = file.metadata().map_err(|e| err!(Io, "reading the size of {} failed: {}", path.display(), e))?.len();
    let mut scratch = Vec::with_capacity(log::READ_SCRATCH_BYTES);
    walk(&file, &path, 0, len, &mut scratch, f, links, None, &mut 0)
}

/// Reads the current entries of the cold store in `dir` (see the module documentation): for
/// each key its newest copy, and none of a key `live` says the live store holds. Two passes:
/// the first notes where each key's newest copy is, about 32 bytes per distinct key (keys by their
/// 64-bit hash), at most [`STORE_COLD_SCAN_MAX_KEYS`]; the second calls `f` on those.
pub fn scan_current(
    dir: &Path,
    live: &dyn Fn(&Key) -> bool,
    f: &mut dyn FnMut(&ColdEntry<'_>) -> Result<bool>,
) -> Result<ColdStats> {
    // Each key's newest copy by its place among the copies read (the same in both passes: the
    // file is only appended to), a u32, in the map the cold text index keeps
    // (`recall::ColdRecall::newest`).
    let mut newest = IdsByHash::new();
    let (mut over, mut nth) = (false, 0u32);
    scan(dir, &mut |e| {
        let h = key_hash(&e.key);
        if (newest.len() >= STORE_COLD_SCAN_MAX_KEYS && !newest.contains_key(h)) || nth == u32::MAX {
            over = true;
            return Ok(false);
        }
        newest.insert(h, nth);
        nth += 1;
        Ok(true)
    })?;
    if over {
        bail!(
            CapacityExceeded,
            "{} holds more than {} distinct keys (STORE_COLD_SCAN_MAX_KEYS) or {} copies; restore or delete some, or raise the limit",
            dir.join(COLD_NAME).display(),
            STORE_COLD_SCAN_MAX_KEYS,
            u32::MAX
        );
    }
    let (mut current, mut nth) = (0u64, 0u32);
    let mut st = scan(dir, &mut |e| {
        let at = nth;
        nth = nth.saturating_add(1);
        if newest.get(key_hash(&e.key)) != Some(at) || live(&e.key) {
            return Ok(true);
        }
        current += 1;
        f(e)
    })?;
    st.current = current;
    Ok(st)
}

/// The format of the cold store in `dir` (its header's; `None`: no file, or no whole header).
pub fn format_of(dir: &Path) -> Result<Option<u64>> {
    let path = dir.join(COLD_NAME);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!(Io, "opening {} failed: {}", path.display(), e),
    };
    let len = file.metadata().map_err(|e| err!(Io, "reading the size of {} failed: {}", path.display(), e))?.len();
    let mut scratch = Vec::with_capacity(4096);
    let mut reader = LineReader::new(&file, len.min(4096));
    let Some(line) = reader.next(&mut scratch)? else { return Ok(None) };
    match log::decode_cold(reader.text(&scratch, line.len)?) {
        Ok(Record::ColdHeader { version }) if line.complete => Ok(Some(version)),
        _ => Ok(None),
    }
}

/// The newest copy of `key` in the cold store of `dir`, its value decoded, even where the live
/// store holds the key too.
pub fn newest(dir: &Path, key: &Key) -> Result<Option<(PutHead, String)>> {
    let mut found: Option<(PutHead, String)> = None;
    scan(dir, &mut |e| {
        if e.key == *key {
            let mut v = String::new();
            log::decode_str(e.value_escaped, &mut v)?;
            found = Some((e.head, v));
        }
        Ok(true)
    })?;
    Ok(found)
}

fn key_hash(key: &Key) -> u64 {
    crate::memory::hash::fnv1a64(key.as_str().as_bytes())
}

/// Walks the file: checks the header, calls `f` on each `put`, counts damage, and measures
/// the tail after the last whole group. From `start` when it is not 0: the end of a whole
/// group (no header there; `bytes` is still the file's size). `version` is set to the
/// header's format.
#[allow(clippy::too_many_arguments)]
fn walk(
    file: &File,
    path: &Path,
    start: u64,
    file_len: u64,
    scratch: &mut Vec<u8>,
    f: &mut dyn FnMut(&ColdEntry<'_>) -> Result<bool>,
    links: &mut dyn FnMut(&Key, &Key) -> Result<()>,
    mut keys: Option<&mut Vec<u64>>,
    version: &mut u64,
) -> Result<ColdStats> {
    let mut st = ColdStats { bytes: file_len, ..ColdStats::default() };
    // The keys noted up to the last whole group.
    let mut noted = 0usize;
    let mut reader = LineReader::starting_at(file, start, file_len);
    let mut first = start == 0;
    // End of the last whole group (or of the header).
    let mut good_end = start;
    let mut in_group = false;
    let mut group_puts = 0u64;
    let mut pending_bad: Option<u64> = None;
    let mut go_on = true;
    while let Some(line) = reader.next(scratch)? {
        let log::Line { offset, len, complete } = line;
        let text = reader.text(scratch, len)?;
        let rec = if complete { log::decode_cold(text) } else { Err(err!(JsonInvalid, "no newline")) };
        if first {
            first = false;
            match rec {
                Ok(Record::ColdHeader { version: v @ 1..=log::COLD_FORMAT_VERSION }) => {
                    *version = v;
                    good_end = offset + len as u64 + 1;
                    continue;
                }
                Ok(Record::ColdHeader { version }) => bail!(
                    Io,
                    "{} has format version {}; this program reads versions 1 to {}",
                    path.display(),
                    version,
                    log::COLD_FORMAT_VERSION
                ),
                _ => bail!(
                    Io,
                    "{} does not start with a cold store header; move it aside (the agent starts a new one)",
                    path.display()
                ),
            }
        }
        let rec = match rec {
            Ok(r) => r,
            Err(_) => {
                if pending_bad.is_none() {
                    pending_bad = Some(offset);
                }
                continue;
            }
        };
        if let Some(at) = pending_bad.take() {
            st.damaged += 1;
            err!(Io, "{}: skipped a damaged record at byte {}", path.display(), at).print_warning();
        }
        match rec {
            Record::Cleanup { .. } => {
                in_group = true;
                group_puts = 0;
                if let Some(k) = keys.as_deref_mut() {
                    k.truncate(noted);
                }
            }
            Record::BatchEnd => {
                in_group = false;
                st.entries += group_puts;
                group_puts = 0;
                good_end = offset + len as u64 + 1;
                if let Some(k) = keys.as_deref_mut() {
                    noted = k.len();
                }
            }
            Record::Put { head, tags, value_escaped } if go_on => {
                group_puts += 1;
                let Ok(key) = Key::from_tags(tags.iter().map(Tag::as_str)) else { continue };
                if let Some(k) = keys.as_deref_mut() {
                    if k.len() < STORE_COLD_OPEN_KEYS_MAX {
                        k.push(key_hash(&key));
                    } else {
                        // Too many to keep: none noted (the first search reads store.cold).
                        k.clear();
                        k.shrink_to_fit();
                        keys = None;
                    }
                }
                go_on = f(&ColdEntry { at: offset, head, key, value_escaped })?;
            }
            Record::Put { .. } => group_puts += 1,
            Record::ColdLink { a, b } => {
                let a = Key::from_tags(a.iter().map(Tag::as_str));
                let b = Key::from_tags(b.iter().map(Tag::as_str));
                if let (Ok(a), Ok(b)) = (a, b) {
                    links(&a, &b)?;
                }
            }
            _ => {}
        }
    }
    if first && file_len > 0 && start == 0 {
        bail!(Io, "{} does not start with a whole cold store header", path.display());
    }
    if let Some(k) = keys {
        k.truncate(noted);
    }
    // A group still open at the end, or damage at the very end, is not a whole group.
    if in_group || pending_bad.is_some() {
        st.unfinished_tail = file_len.saturating_sub(good_end);
    }
    Ok(st)
}

/// Rewrites the cold store in `dir` without the entries for which `drop` says true (`memory
/// restore`): a new file beside it, synced, renamed over it, the directory synced. Returns
/// how many were left out. The caller holds the data directory's lock.
pub fn rewrite_without(dir: &Path, drop: &mut dyn FnMut(&ColdEntry<'_>) -> bool) -> Result<u64> {
    let path = dir.join(COLD_NAME);
    let tmp = dir.join(format!(".{}.rewrite", COLD_NAME));
    let _ = std::fs::remove_file(&tmp);
    let out = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| err!(PersistFailed, "creating {} failed: {}", tmp.display(), e))?;
    let mut buf = FixedBuf::with_capacity("cold store rewrite buffer", crate::limits::STORE_RECORD_MAX_BYTES);
    let mut at = 0u64;
    let mut dropped = 0u64;
    let res = (|| -> Result<()> {
        log::encode_cold_header(&mut buf)?;
        let mut value = String::with_capacity(crate::limits::STORE_VALUE_MAX_BYTES);
        // One group for all the entries kept: counted first (`drop` decides the same way twice).
        let mut kept = 0u64;
        // Their keys' hashes, and every link's pair of key hashes (lower first), each sorted (lists:
        // no hash set's code for them in the binary).
        let (mut kept_keys, mut pairs) = (Vec::new(), Vec::new());
        scan_with_links(
            dir,
            &mut |e| {
                if !drop(e) {
                    kept += 1;
                    kept_keys.push(key_hash(&e.key));
                }
                Ok(true)
            },
            &mut |a, b| {
                let (ha, hb) = (key_hash(a), key_hash(b));
                pairs.push((ha.min(hb), ha.max(hb)));
                Ok(())
            },
        )?;
        crate::sort::sort(&mut kept_keys);
        kept_keys.dedup();
        let kept_key = |h: &u64| kept_keys.binary_search(h).is_ok();
        pairs.retain(|(a, b)| kept_key(a) || kept_key(b));
        crate::sort::sort(&mut pairs);
        pairs.dedup();
        // Which of them were written (each once).
        let mut written = vec![0u64; pairs.len().div_ceil(64)];
        log::encode_cleanup(&mut buf, kept)?;
        scan(dir, &mut |e| {
            if drop(e) {
                dropped += 1;
                return Ok(true);
            }
            value.clear();
            log::decode_str(e.value_escaped, &mut value)?;
            if buf.remaining() < e.value_escaped.len() * 6 + 4096 {
                out.write_all_at(buf.as_slice(), at)
                    .map_err(|err| err!(PersistFailed, "writing {} failed: {}", tmp.display(), err))?;
                at += buf.len() as u64;
                buf.clear();
            }
            // The id a copy had in the live store means nothing here: 0, a byte.
            log::encode_cold_put(
                &mut buf,
                log::COLD_FORMAT_VERSION,
                &log::PutHead { id: 0, ..e.head },
                e.key.tags(),
                &value,
            )?;
            Ok(true)
        })?;
        // The links of the entries kept (once each).
        scan_links(dir, &mut |a, b| {
            let (ha, hb) = (key_hash(a), key_hash(b));
            let Ok(i) = pairs.binary_search(&(ha.min(hb), ha.max(hb))) else { return Ok(()) };
            match written.get_mut(i / 64) {
                Some(w) if *w & (1 << (i % 64)) == 0 => *w |= 1 << (i % 64),
                _ => return Ok(()),
            }
            if buf.remaining() < 4096 {
                out.write_all_at(buf.as_slice(), at)
                    .map_err(|err| err!(PersistFailed, "writing {} failed: {}", tmp.display(), err))?;
                at += buf.len() as u64;
                buf.clear();
            }
            log::encode_cold_link(&mut buf, a.tags(), b.tags())
        })?;
        log::encode_batch_end(&mut buf)?;
        out.write_all_at(buf.as_slice(), at)
            .map_err(|e| err!(PersistFailed, "writing {} failed: {}", tmp.display(), e))?;
        out.sync_all().map_err(|e| err!(PersistFailed, "syncing {} failed: {}", tmp.display(), e))?;
        // Its keys' file is of the old file: gone before the new one is in place.
        keys::remove(dir);
        std::fs::rename(&tmp, &path)
            .map_err(|e| err!(PersistFailed, "renaming {} over {} failed: {}", tmp.display(), path.display(), e))?;
        crate::memory::atomic::sync_dir(dir)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res.map(|_| dropped)
}

/// Removes a rewrite's temp file a crash left (the writer only).
pub fn remove_temp(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(format!(".{}.rewrite", COLD_NAME)));
}
