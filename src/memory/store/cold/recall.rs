//! The cold tier's text index: `store.cold.fts`, a base segment in the format of `store.fts`
//! ([`crate::memory::store::recall_file`]) over the entries of `store.cold`, and a delta in
//! RAM of the groups appended since it was written. It is built, searched and merged as the
//! live index is ([`crate::memory::store::recall`]): same tables, same merge, same walks, so
//! that one query ranks live and cold entries together, in BM25 over their union (N, the mean
//! length and each word's document count are the sums of both segments').
//!
//! # Documents
//!
//! A cold document's entry number is its *cold id*: the rank of its `put` record among the
//! `put`s of the whole groups of `store.cold`, in file order. Cold ids stay as they are while
//! the file only grows; a rewrite (`restore`, `delete`, compaction) renumbers them and the
//! index is rebuilt. Only current copies are documents: a copy whose key the live store holds,
//! or a copy older than another copy of its key, is not (the writer keeps, for each key it
//! indexed, its newest cold id, and takes the older copy out when a newer one comes, or when
//! the live store creates the key again). A reader without that table (read-only commands)
//! leaves out, at ranking time, a cold hit whose key the live store holds; the file never
//! keeps a copy the writer found no longer current (a checkpoint merges when it has one), so
//! a reader is exact but for what changed since the writer's last checkpoint: a copy
//! superseded since then still counts in its statistics (and, moved to the cold store twice
//! since, could show twice) until the next one.
//!
//! A ranked hit on a cold entry carries [`COLD_HIT`] in its id, with the document's number in
//! the cold segment; [`crate::memory::store::Store::hit_info`] and
//! [`crate::memory::store::Store::value`] read it from `store.cold`. Such an id is good until
//! the store next changes.
//!
//! # File and crash rules
//!
//! The header of `store.cold.fts` names, instead of a log's identity, the cold ids it covers,
//! and the bytes of `store.cold` it covers and the CRC of the 4 KiB before them: it is used
//! only when `store.cold` still starts with what it was taken of, and the groups appended
//! after are read into the delta. Written like `store.fts`: a temp file created exclusively,
//! synced, renamed over the old, the directory synced; at the writer's checkpoints, at close,
//! and when the delta is full. A crash at any point leaves the old file or the new one, each
//! a valid base (or a stale one, which is rebuilt from `store.cold`). A read-only store never
//! writes in the data directory: its merges go to a private directory of its own.
//!
//! # The merge beside the cycle
//!
//! A due checkpoint the cycle's upkeep takes (`Store::checkpoint_in_steps`) only starts the
//! merge: a `Job` of the live index's kind, run a step per cycle (at most
//! `TEXT_MERGE_STEP_MILLIS` of work each) by the cycle's upkeep, so that no cycle stops for the
//! whole file (issue 39: 443 ms at 201,159 cold entries). The job writes the segment as it was
//! when it started. Meanwhile the delta only grows (groups appended to `store.cold` are read
//! into it) and documents are taken out (a copy superseded, a key the live store created
//! again); each cold id taken out is noted ([`TEXT_COLD_MERGE_KILLS_MAX`] at most). The step
//! after the one that put the new file in place opens it as the base, reads the groups appended
//! since the start into an emptied delta, and takes the noted ids out again. Anything that would empty
//! the delta or renumber the ids (a rewrite of `store.cold`, a full delta, the segment closed)
//! drops the job first, its temp files removed; more noted ids than the note holds drop it too
//! (or, once its file is in place, close the segment, reopened from that file at its next
//! use). A kill at any point leaves the old file or the new one, as above.

use super::COLD_NAME;
use crate::error::Result;
use crate::limits::{
    STORE_COLD_SCAN_MAX_KEYS, STORE_RECORD_MAX_BYTES, STORE_VALUE_MAX_BYTES, TEXT_COLD_MERGE_KILLS_MAX, TEXT_MIN_TERMS,
};
use crate::memory::hash::crc32;
use crate::memory::key::{Key, Tag};
use crate::memory::log::{self, PutHead, Record};
use crate::memory::store::recall::disk::DiskIndex;
use crate::memory::store::recall::file::{verify_file, Header, HEADER_BYTES};
use crate::memory::store::recall::fulltext::{FullText, Sizes};
use crate::memory::store::recall::merge::{step_deadline, write_index_file, FileNames, Job, Stamp, WriteScratch};
use crate::memory::store::recall::rank::RankHit;
use crate::memory::store::{EntryId, Store};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// File name of the cold tier's text index inside the data directory.
pub const COLD_RECALL_NAME: &str = "store.cold.fts";
const TEMP_NAME: &str = ".store.cold.fts.tmp";
const DICT_TEMP_NAME: &str = ".store.cold.fts.dict.tmp";
const NAMES: FileNames = FileNames { file: COLD_RECALL_NAME, temp: TEMP_NAME, dict_temp: DICT_TEMP_NAME };
/// The bit that marks a ranked hit's id as a cold entry's (the rest is its document number in
/// the cold segment).
pub const COLD_HIT: EntryId = crate::memory::store::recall::rank::SEGMENT_HIT;
/// Fewest cold ids the tables are sized for; they are sized for the cold store's bytes over
/// [`BYTES_PER_ID`] beyond that (a `put` record takes more), at most
/// [`STORE_COLD_SCAN_MAX_KEYS`]. A cold store that outgrows its tables has them sized again
/// at its next rebuild.
const MIN_ROOM: usize = 65_536;
/// See [`MIN_ROOM`].
const BYTES_PER_ID: u64 = 48;
/// A checkpoint merges the cold segment's delta once it holds one in this many of the base's
/// documents (see [`Store::cold_recall_write_file`]).
const MERGE_SHARE: u64 = 16;
/// ... and at least this many.
const MERGE_MIN_DOCS: u64 = 1024;
/// Bytes of `store.cold` before the covered length whose CRC the header keeps.
pub(super) const TAIL_BYTES: u64 = 4096;

/// Whether a ranked hit's id is a cold entry's.
pub fn is_cold_hit(id: EntryId) -> bool {
    id & COLD_HIT != 0
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    Closed,
    Ready,
    Stale,
}

/// The cold segment: base, delta and what keeps them current. See the module documentation.
pub struct ColdRecall {
    pub(in crate::memory::store) base: DiskIndex,
    pub(in crate::memory::store) index: FullText,
    pub(super) scratch: WriteScratch,
    pub(super) state: State,
    /// `store.cold`, for reading records (none: no cold store).
    pub(super) file: Option<File>,
    /// Bytes of `store.cold` indexed (the end of the last whole group read).
    pub(super) indexed: u64,
    /// Cold ids handed out (the `put`s of the whole groups read).
    pub(super) next: u32,
    /// Bytes of `store.cold` the last file written or read covers.
    pub(super) written: u64,
    /// Ids the tables hold.
    pub(super) room: usize,
    /// Ids the delta's tables were reserved for (0: not reserved).
    pub(super) reserved: usize,
    /// The writer's: each indexed key's hash and its newest cold id.
    pub(super) newest: super::IdsByHash,
    /// The puts of the group being read: offset, length.
    pub(super) group: Vec<(u64, u32)>,
    pub(super) rec: Vec<u8>,
    pub(super) val: String,
    pub(super) private: Option<PathBuf>,
    pub(super) merges: u64,
    pub(super) from_file: bool,
    /// A merge under way, run in steps beside the cycle (`None` once its file is in place, to
    /// be opened at the next step), the bytes of `store.cold` and the cold ids it covers.
    pub(super) job: Option<(Option<Job>, u64, u32)>,
    /// The cold ids taken out since that merge started (at most [`TEXT_COLD_MERGE_KILLS_MAX`]).
    pub(super) killed: Vec<u32>,
    /// More were taken out than `killed` holds: the job is let go of at its next step.
    pub(super) killed_over: bool,
    /// The results as they were before a query's pass over this segment, put back when a
    /// hit it kept is turned away by the filter (reserved at the first ranked query:
    /// `RANK_MAX_RESULTS` hits, 16 KiB).
    pub(super) saved: Vec<RankHit>,
    /// Queries whose first pass kept a hit the filter turned away (run again checking each).
    pub(super) retries: u64,
    /// Every candidate checked as it comes (no first pass that takes them all; tests
    /// compare the two).
    pub(super) eager: bool,
    /// The writer's: each cold id's key hash, noted as the store opened `store.cold`
    /// (`repair_cold`), for the first opening of the segment (taken then; at most
    /// `STORE_COLD_OPEN_KEYS_MAX`), and the bytes of `store.cold` they cover.
    pub(super) open_keys: Vec<u64>,
    pub(super) open_keys_end: u64,
}

impl Default for ColdRecall {
    fn default() -> Self {
        ColdRecall::new()
    }
}

impl Drop for ColdRecall {
    fn drop(&mut self) {
        self.drop_job();
        if let Some(dir) = self.private.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Statistics of the cold segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ColdRecallStats {
    /// Whether it is built and current with `store.cold`.
    pub ready: bool,
    /// Current cold entries indexed.
    pub documents: u64,
    /// Whether it was opened from `store.cold.fts` (else built from `store.cold`).
    pub from_file: bool,
    /// Documents in the delta.
    pub delta_docs: usize,
    /// Merges since it was opened.
    pub merges: u64,
    /// Ranked queries whose hits kept from this segment had one the filter turned away
    /// (a cold copy of a key the live store holds, an archived one): each ran a second pass.
    pub retries: u64,
}

impl ColdRecall {
    /// Closed: nothing reserved.
    pub fn new() -> ColdRecall {
        ColdRecall {
            base: DiskIndex::empty(),
            index: FullText::unreserved(),
            scratch: WriteScratch::default(),
            state: State::Closed,
            file: None,
            indexed: 0,
            next: 0,
            written: 0,
            room: 0,
            reserved: 0,
            newest: super::IdsByHash::new(),
            group: Vec::new(),
            rec: Vec::new(),
            val: String::new(),
            private: None,
            merges: 0,
            from_file: false,
            job: None,
            killed: Vec::new(),
            killed_over: false,
            saved: Vec::new(),
            retries: 0,
            eager: false,
            open_keys: Vec::new(),
            open_keys_end: 0,
        }
    }

    /// Drops a merge under way (its temp files removed; a file it already put in place
    /// stays, a valid base).
    pub(super) fn drop_job(&mut self) {
        if let Some((Some(job), _, _)) = self.job.take() {
            job.remove_temps();
        }
        self.killed.clear();
        self.killed_over = false;
    }

    /// Cold id `id` was taken out: noted for the end of a merge under way.
    pub(super) fn note_kill(&mut self, id: u32) {
        if self.job.is_some() {
            if self.killed.len() < self.killed.capacity() {
                self.killed.push(id);
            } else {
                self.killed_over = true;
            }
        }
    }

    /// Whether it is current (and so is searched).
    pub(in crate::memory::store) fn is_ready(&self) -> bool {
        self.state == State::Ready
    }

    /// Live documents and their tokens (base and delta).
    pub(in crate::memory::store) fn totals(&self) -> (u64, u64) {
        let (d, t) = self.base.totals();
        (d + self.index.live_docs(), t + self.index.total_tokens())
    }

    /// RAM reserved, bytes.
    pub fn ram_bytes(&self) -> usize {
        self.base.ram_bytes()
            + if self.index.is_reserved() { self.index.ram_bytes() + self.scratch.ram_bytes() } else { 0 }
            + self.newest.ram_bytes()
            + self.killed.capacity() * 4
            + self.saved.capacity() * core::mem::size_of::<RankHit>()
            + self.open_keys.capacity() * 8
    }

    /// Reserves the delta's tables and the merge's buffers for `room` ids (once; again when
    /// the room grew).
    pub(super) fn reserve(&mut self) {
        let room = self.room;
        if !self.index.is_reserved() || self.reserved != room {
            self.index.reserve(Sizes::delta(room));
            self.scratch = WriteScratch::default();
            self.scratch.reserve(room, TEXT_MIN_TERMS.max(room * crate::limits::TEXT_TERMS_PER_ENTRY));
            self.reserved = room;
        }
    }

    /// Reads the record at `offset` (`len` bytes) of `store.cold` into `rec`.
    pub(super) fn read(&mut self, offset: u64, len: u32) -> Result<()> {
        let Some(file) = &self.file else { bail!(Internal, "store.cold is not open (a bug)") };
        check_len(len)?;
        self.rec.clear();
        self.rec.resize(len as usize, 0);
        file.read_exact_at(&mut self.rec, offset)
            .map_err(|e| err!(Io, "reading {} bytes at byte {} of {} failed: {}", len, offset, COLD_NAME, e))
    }
}

impl ColdRecall {
    /// The segment of the cold store in `dir` for a reader that does not open the store
    /// (`memory search` over the checkpoint read in place, `StoreView`): `store.cold.fts`
    /// read in place, when `store.cold` starts with what it was taken of (the CRC of the
    /// [`TAIL_BYTES`] before the length it covers), as a read-only store opens it, and the
    /// groups appended since (a clean-up of a running agent, before its next merge) read into
    /// a delta as a read-only store reads them ([`ColdRecall::catch_up_reading`]; `live`
    /// says whether the live store holds a key). `None` otherwise (the caller opens the
    /// store, which rebuilds, or merges a full delta). Nothing is written.
    pub(in crate::memory::store) fn open_in_place(
        dir: &Path,
        live: &mut dyn FnMut(&Key) -> Result<bool>,
    ) -> Result<Option<ColdRecall>> {
        let (Ok(file), Ok(ix)) = (File::open(dir.join(COLD_NAME)), File::open(dir.join(COLD_RECALL_NAME))) else {
            return Ok(None);
        };
        let len = file.metadata().map_err(|e| err!(Io, "reading the size of {} failed: {}", COLD_NAME, e))?.len();
        let mut raw = [0u8; HEADER_BYTES];
        if ix.read_exact_at(&mut raw, 0).is_err() {
            return Ok(None);
        }
        let Ok(h) = Header::parse(&raw) else { return Ok(None) };
        let mut c = ColdRecall::new();
        c.room = room_for_bytes(len);
        if h.covered > len || h.docs as usize > c.room || h.store > c.room as u64 {
            return Ok(None);
        }
        c.file = Some(file);
        if cold_tail_crc(&mut c, h.covered)? != h.tail {
            return Ok(None);
        }
        c.base.open_in_place(ix, h, c.room)?;
        c.indexed = h.covered;
        c.written = h.covered;
        c.next = h.store as u32;
        c.from_file = true;
        c.state = State::Ready;
        if h.covered < len {
            c.val = String::with_capacity(STORE_VALUE_MAX_BYTES);
            let mut scratch = Vec::with_capacity(log::READ_SCRATCH_BYTES);
            if !c.catch_up_reading(live, &mut scratch)? {
                return Ok(None);
            }
        }
        Ok(Some(c))
    }
}

/// A record's length as an index file gives it: more than a record can be is damage (never an
/// allocation of that size).
pub(super) fn check_len(len: u32) -> Result<()> {
    if len as usize > STORE_RECORD_MAX_BYTES + 1 {
        bail!(Io, "{} is damaged (a record of {} bytes, more than STORE_RECORD_MAX_BYTES)", COLD_RECALL_NAME, len);
    }
    Ok(())
}

/// The sizes of the tables for a cold store of `bytes` bytes.
pub(super) fn room_for_bytes(bytes: u64) -> usize {
    let want = (bytes / BYTES_PER_ID) as usize + MIN_ROOM;
    want.next_power_of_two().min(STORE_COLD_SCAN_MAX_KEYS)
}

pub(super) fn key_hash(key: &Key) -> u64 {
    crate::memory::hash::fnv1a64(key.as_str().as_bytes())
}

/// A decoded cold `put` record's head, key and escaped value.
pub(super) fn decode_put(line: &[u8]) -> Result<(PutHead, Key, &str)> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let Record::Put { head, tags, value_escaped } = log::decode_cold(line)? else {
        bail!(Io, "{}: expected a put record", COLD_NAME)
    };
    let key = Key::from_tags(tags.iter().map(Tag::as_str))?;
    Ok((head, key, value_escaped))
}

impl Store {
    /// Statistics of the cold segment (without building it).
    pub fn cold_recall_stats(&self) -> ColdRecallStats {
        let c = &self.cold_recall;
        ColdRecallStats {
            ready: c.state == State::Ready,
            documents: c.totals().0,
            from_file: c.from_file,
            delta_docs: c.index.doc_count(),
            merges: c.merges,
            retries: c.retries,
        }
    }

    /// Builds the cold segment now if it is not current: from `store.cold.fts` when it
    /// matches `store.cold` (and the groups appended since), else from `store.cold`.
    pub fn cold_recall_ready(&mut self) -> Result<()> {
        if self.cold_recall.state == State::Ready {
            return Ok(());
        }
        let res = self.cold_recall_open();
        if res.is_err() {
            self.cold_recall.state = State::Stale;
            self.cold_recall.base.close();
            self.cold_recall.index.clear();
        }
        res.map_err(|e| e.context(format_args!("building the cold store's text index")))
    }

    fn cold_recall_open(&mut self) -> Result<()> {
        let path = self.dir.join(COLD_NAME);
        let read_only_store = self.log.read_only();
        let c = &mut self.cold_recall;
        c.drop_job();
        c.base.close();
        c.newest.clear();
        c.file = None;
        c.indexed = 0;
        c.next = 0;
        c.written = 0;
        c.from_file = false;
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                c.index.clear();
                c.state = State::Ready;
                return Ok(());
            }
            Err(e) => bail!(Io, "opening {} failed: {}", path.display(), e),
        };
        let len = file.metadata().map_err(|e| err!(Io, "reading the size of {} failed: {}", path.display(), e))?.len();
        // The delta's tables are reserved when something goes into it (a reader of a file
        // that covers store.cold never does).
        c.room = room_for_bytes(len).max(c.room);
        c.index.clear();
        if !read_only_store && c.newest.capacity() == 0 {
            // The writer's keys table, reserved once (a clean-up then allocates nothing).
            c.newest.reserve(c.room / 4);
        }
        if c.rec.capacity() == 0 {
            c.rec = Vec::with_capacity(STORE_RECORD_MAX_BYTES);
            c.val = String::with_capacity(STORE_VALUE_MAX_BYTES);
            c.group = Vec::with_capacity(crate::limits::STORE_CLEANUP_BATCH_MAX);
        }
        c.file = Some(file);
        // The file, when it matches; damage or another state of store.cold is said and the
        // index rebuilt.
        c.state = State::Ready;
        match self.cold_recall_load(len) {
            Ok(found) => self.cold_recall.from_file = found,
            Err(e) => {
                e.context(format_args!("the cold store's text index is rebuilt from {}", COLD_NAME)).print_warning();
                let c = &mut self.cold_recall;
                c.base.close();
                c.newest.clear();
                c.index.clear();
                c.indexed = 0;
                c.next = 0;
            }
        }
        self.cold_recall_catch_up()
    }

    /// At the writer's clean stop ([`Store::close`], [`Store::stop`]): when the cold segment
    /// was not built this run (an agent that never searched) and `store.cold.fts` does not
    /// cover all of `store.cold` (missing, taken of a part of it, or of another state), the
    /// segment is opened now (from the file and the groups appended after it, or built from
    /// `store.cold`), so that the close's write leaves the file current. The next first search,
    /// the writer's or a reader's, then reads the file instead of building the segment from
    /// all of `store.cold` (1.4-20 s at the soak's 200,000 entries, docs/measurements.md). A
    /// file that covers all of `store.cold` is left as it is: its header and the CRC of the
    /// 4 KiB before its end are read, nothing more.
    pub(in crate::memory::store) fn cold_recall_open_at_close(&mut self) -> Result<()> {
        if self.log.read_only() || self.cold_recall.state == State::Ready {
            return Ok(());
        }
        let len = match std::fs::metadata(self.dir.join(COLD_NAME)) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => bail!(Io, "reading the size of {} failed: {}", COLD_NAME, e),
        };
        if self.cold_recall_file_covers(len) {
            return Ok(());
        }
        self.cold_recall_ready()
    }

    /// Whether `store.cold.fts`'s header says it was taken of all of `store.cold` as it is
    /// now (`len` bytes: its length, and the CRC of the [`TAIL_BYTES`] before it). Anything
    /// unreadable is a no.
    fn cold_recall_file_covers(&mut self, len: u64) -> bool {
        let Ok(ix) = File::open(self.dir.join(COLD_RECALL_NAME)) else { return false };
        let mut raw = [0u8; HEADER_BYTES];
        if ix.read_exact_at(&mut raw, 0).is_err() {
            return false;
        }
        let Ok(h) = Header::parse(&raw) else { return false };
        if h.covered != len {
            return false;
        }
        let Ok(cold) = File::open(self.dir.join(COLD_NAME)) else { return false };
        let start = len.saturating_sub(TAIL_BYTES);
        let buf = &mut self.rbuf;
        buf.clear();
        buf.resize((len - start) as usize, 0);
        cold.read_exact_at(buf, start).is_ok() && crc32(buf) == h.tail
    }

    /// Opens `store.cold.fts` as the base when it was taken of what `store.cold` (of `len`
    /// bytes) starts with; `Ok(false)` when there is none.
    fn cold_recall_load(&mut self, len: u64) -> Result<bool> {
        let path = self.dir.join(COLD_RECALL_NAME);
        let ix = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => bail!(Io, "opening {} failed: {}", path.display(), e),
        };
        let mut raw = [0u8; HEADER_BYTES];
        ix.read_exact_at(&mut raw, 0).map_err(|e| err!(Io, "{}: reading its header failed: {}", path.display(), e))?;
        let h = Header::parse(&raw).map_err(|e| e.context(format_args!("{}", path.display())))?;
        let read_only = self.log.read_only();
        let c = &mut self.cold_recall;
        if h.covered > len || h.docs as usize > c.room || h.store > c.room as u64 {
            bail!(
                Io,
                "{} covers {} bytes of {} ({} now) and {} cold ids",
                path.display(),
                h.covered,
                COLD_NAME,
                len,
                h.store
            );
        }
        if cold_tail_crc(c, h.covered)? != h.tail {
            bail!(Io, "{}: {} before byte {} is not the one it was taken of", path.display(), COLD_NAME, h.covered);
        }
        if read_only && h.covered == len {
            c.base.open_in_place(ix, h, c.room)?;
        } else {
            if !read_only {
                let mut buf = core::mem::take(&mut self.rbuf);
                let res = verify_file(&ix, &h, &mut buf);
                self.rbuf = buf;
                res.map_err(|e| e.context(format_args!("{}", path.display())))?;
            }
            let c = &mut self.cold_recall;
            c.base.load(ix, h, c.room, |_| true)?;
        }
        let c = &mut self.cold_recall;
        c.indexed = h.covered;
        c.written = h.covered;
        c.next = h.store as u32;
        if !read_only {
            self.cold_recall_note_keys(h.covered)?;
        }
        Ok(true)
    }

    /// `store.cold` was rewritten (its cold ids and places all changed): the segment is built
    /// again at its next use, and its file is removed (a stale one would be rebuilt anyway).
    pub(in crate::memory::store) fn cold_recall_reset(&mut self) {
        let c = &mut self.cold_recall;
        c.drop_job();
        c.open_keys = Vec::new();
        c.state = State::Closed;
        c.base.close();
        c.index.clear();
        c.newest.clear();
        c.file = None;
        c.written = 0;
        if !self.log.read_only() {
            let _ = std::fs::remove_file(self.dir.join(COLD_RECALL_NAME));
        }
    }

    /// Closes the segment (its file found damaged by a search); it is opened again, or
    /// rebuilt, at its next use.
    pub(in crate::memory::store) fn cold_recall_close(&mut self) {
        let c = &mut self.cold_recall;
        c.drop_job();
        c.state = State::Closed;
        c.base.close();
        c.index.clear();
        c.newest.clear();
        c.file = None;
    }

    /// Writes the segment to a new `store.cold.fts` when it has anything the file lacks (the
    /// writer at close, with `all`; nothing when it is not built). At a checkpoint (without
    /// `all`) only once the delta holds [`MERGE_SHARE`] of the base's documents, at least
    /// [`MERGE_MIN_DOCS`] (a merge rewrites the whole file, so the cold store's growth pays
    /// for it a constant per entry, and a reader catches up on at most that share), or when a
    /// document of the file is no longer current (a reader cannot tell: the file must not
    /// keep it).
    /// A merge under way is finished first.
    pub(in crate::memory::store) fn cold_recall_write_file(&mut self, all: bool) -> Result<()> {
        self.cold_recall_step(None)?;
        if !self.cold_recall_due(all) {
            return Ok(());
        }
        self.cold_recall_merge()
    }

    /// Whether the segment has what its file lacks, and (without `all`) enough of it to merge
    /// at a checkpoint (see [`Store::cold_recall_write_file`]); never for a reader.
    fn cold_recall_due(&self, all: bool) -> bool {
        let c = &self.cold_recall;
        if c.state != State::Ready || self.log.read_only() || c.file.is_none() {
            return false;
        }
        if c.index.is_empty() && c.base.dead_docs() == 0 && c.written == c.indexed && c.base.is_open() {
            return false;
        }
        let pending = c.index.doc_count() as u64;
        let due = pending >= MERGE_MIN_DOCS.max(u64::from(c.base.doc_count()) / MERGE_SHARE) || c.base.dead_docs() > 0;
        all || !c.base.is_open() || due
    }

    /// At a checkpoint the cycle's upkeep takes (the writer): starts the merge the
    /// checkpoint would do ([`Store::cold_recall_write_file`] without `all`) as a [`Job`] run
    /// in steps by the next cycles (see the module documentation). Starting takes the
    /// documents' new numbers and sorts the delta's words, nothing more.
    /// With `all`, whenever the file lacks anything (as a close merges).
    pub(in crate::memory::store) fn cold_recall_start_merge(&mut self, all: bool) -> Result<()> {
        if self.cold_recall.job.is_some() || !self.cold_recall_due(all) {
            return Ok(());
        }
        self.cold_recall.reserve();
        let c = &mut self.cold_recall;
        if c.killed.capacity() == 0 {
            c.killed.reserve_exact(TEXT_COLD_MERGE_KILLS_MAX);
        }
        let covered = c.indexed;
        let next = c.next;
        let stamp = Stamp { store: u64::from(next), covered, tail: cold_tail_crc(c, covered)? };
        let job = Job::start(&self.dir, NAMES, (&mut c.base, &c.index, None), &mut c.scratch, stamp)?;
        c.killed.clear();
        c.killed_over = false;
        c.job = Some((Some(job), covered, next));
        Ok(())
    }

    /// Whether a merge of the cold segment is under way (started at a checkpoint, run in
    /// steps).
    pub fn cold_recall_merging(&self) -> bool {
        self.cold_recall.job.is_some()
    }

    /// Runs the cold merge under way, if any, until `deadline` (to its end without one). The
    /// step after the one that put the new file in place opens it (see the module
    /// documentation). A failure drops the merge (its temp files removed); when the old file
    /// was found damaged, the segment is rebuilt from `store.cold` at its next use.
    pub(in crate::memory::store) fn cold_recall_step(&mut self, deadline: Option<std::time::Instant>) -> Result<()> {
        if self.cold_recall.killed_over {
            // More taken out than noted: this merge is let go of (the next checkpoint
            // starts another); a file already in place is opened afresh at the next use.
            let written = matches!(self.cold_recall.job, Some((None, _, _)));
            self.cold_recall.drop_job();
            if written {
                self.cold_recall_close();
            }
            return Ok(());
        }
        let Some((job, covered, next)) = self.cold_recall.job.take() else { return Ok(()) };
        if let Some(mut job) = job {
            let c = &mut self.cold_recall;
            match job.step((&mut c.base, &c.index, None), &mut c.scratch, deadline) {
                Ok(Some(_)) => {}
                Ok(None) => {
                    c.job = Some((Some(job), covered, next));
                    return Ok(());
                }
                Err(e) => {
                    c.killed.clear();
                    if e.code() == crate::error::Code::Io {
                        // The old file is damaged: rebuilt from store.cold at the next use.
                        self.cold_recall_reset();
                    }
                    return Err(e);
                }
            }
            self.cold_recall.merges += 1;
            if let Err(e) = crate::memory::atomic::sync_dir(&self.dir) {
                // The base and delta in RAM still have everything; the next merge writes again.
                self.cold_recall.killed.clear();
                return Err(e);
            }
            if deadline.is_some() {
                // In place: opened at the next step.
                self.cold_recall.job = Some((None, covered, next));
                return Ok(());
            }
        }
        let res = self.cold_recall_install(covered, next);
        self.cold_recall.killed.clear();
        if res.is_err() {
            let c = &mut self.cold_recall;
            c.state = State::Stale;
            c.base.close();
            c.index.clear();
        }
        res.map_err(|e| e.context(format_args!("opening the cold store's text index after its merge")))
    }

    /// The merge's file, in place, opened as the base (it covers `covered` bytes of
    /// `store.cold` and `next` cold ids); the groups appended since it started read into the
    /// emptied delta, and the ids taken out since taken out again.
    fn cold_recall_install(&mut self, covered: u64, next: u32) -> Result<()> {
        let path = self.dir.join(COLD_RECALL_NAME);
        let ix = File::open(&path).map_err(|e| err!(Io, "opening {} failed: {}", path.display(), e))?;
        let mut raw = [0u8; HEADER_BYTES];
        ix.read_exact_at(&mut raw, 0).map_err(|e| err!(Io, "{}: reading its header failed: {}", path.display(), e))?;
        let h = Header::parse(&raw)?;
        if h.covered != covered || h.store != u64::from(next) {
            bail!(Io, "{} is not the file its merge wrote", path.display());
        }
        let c = &mut self.cold_recall;
        c.base.close();
        c.index.clear();
        c.base.load(ix, h, c.room, |_| true)?;
        c.written = covered;
        c.indexed = covered;
        c.next = next;
        // (Taken before the catch-up: a full delta there merges, which empties the note.)
        let mut killed = core::mem::take(&mut c.killed);
        let res = self.cold_recall_catch_up().and_then(|_| killed.iter().try_for_each(|&id| self.cold_recall_kill(id)));
        killed.clear();
        self.cold_recall.killed = killed;
        res
    }

    /// The next step of the cold merge under way (the cycle's upkeep, when the live index has
    /// none under way); a failure is a warning.
    pub(in crate::memory::store) fn cold_merge_step(&mut self) {
        if self.log.read_only() || self.log.in_batch() {
            return;
        }
        if let Err(e) = self.cold_recall_step(Some(step_deadline())) {
            e.context(format_args!("the cold store's text index merge was dropped (the next checkpoint writes it)"))
                .print_warning();
        }
    }

    /// The merge: base and delta into a new file, searched from now on (a merge under way is
    /// dropped first: this one writes everything it would).
    pub(super) fn cold_recall_merge(&mut self) -> Result<()> {
        self.cold_recall.drop_job();
        self.cold_recall.reserve();
        let dir = self.cold_recall_dir()?;
        let c = &mut self.cold_recall;
        let covered = c.indexed;
        let stamp = Stamp { store: u64::from(c.next), covered, tail: cold_tail_crc(c, covered)? };
        let res = write_index_file(&dir, NAMES, (&mut c.base, &c.index, None), &mut c.scratch, stamp);
        let path = match res {
            Ok(p) => p,
            Err(e) => {
                if e.code() == crate::error::Code::Io {
                    // The old file is damaged: rebuilt from store.cold at the next use.
                    self.cold_recall_reset();
                }
                return Err(e);
            }
        };
        let c = &mut self.cold_recall;
        c.base.close();
        c.index.clear();
        crate::memory::atomic::sync_dir(&dir)?;
        c.merges += 1;
        let ix = File::open(&path).map_err(|e| err!(Io, "opening {} failed: {}", path.display(), e))?;
        let mut raw = [0u8; HEADER_BYTES];
        ix.read_exact_at(&mut raw, 0).map_err(|e| err!(Io, "{}: reading its header failed: {}", path.display(), e))?;
        let h = Header::parse(&raw)?;
        c.base.load(ix, h, c.room, |_| true)?;
        c.written = covered;
        Ok(())
    }

    /// Where merges write `store.cold.fts`: the data directory (the writer), or a private
    /// directory of a read-only store's own.
    fn cold_recall_dir(&mut self) -> Result<PathBuf> {
        if !self.log.read_only() {
            return Ok(self.dir.clone());
        }
        if let Some(p) = &self.cold_recall.private {
            return Ok(p.clone());
        }
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("lkjagent-cold-fts-{}-{}", std::process::id(), n));
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).create(&p).map_err(|e| {
            err!(PersistFailed, "creating {} (a read-only search's own index files) failed: {}", p.display(), e)
        })?;
        self.cold_recall.private = Some(p.clone());
        Ok(p)
    }
}

/// CRC-32 of the `TAIL_BYTES` of `store.cold` before `covered`.
fn cold_tail_crc(c: &mut ColdRecall, covered: u64) -> Result<u32> {
    let start = covered.saturating_sub(TAIL_BYTES);
    c.read(start, (covered - start) as u32)?;
    Ok(crc32(&c.rec))
}

/// Removes a merge's temp files a crash left (the writer only).
pub fn remove_temp(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(TEMP_NAME));
    let _ = std::fs::remove_file(dir.join(DICT_TEMP_NAME));
}
