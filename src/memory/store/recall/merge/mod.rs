//! Merging the full-text index's delta into its base: a new `store.fts` (format in
//! [`super::file`]) written from the old one (`super::disk`) and the delta
//! (`super::fulltext`) by streaming, through bounded buffers, crash-safely (see
//! [`super`] for when and why). The merge is a `job` (run in one go, or in steps beside the
//! agent's cycle); which postings it writes for a word is `postings`; the postings' and
//! document pages' encoding is `encode`.

mod encode;
mod job;
mod postings;

pub(in crate::memory::store) use job::{step_deadline, Job};

use super::disk::{Copied, DiskIndex};
use super::file::{
    skip_bytes, verify_file, Header, RecallFile, DICT_PAGE, DICT_TEMP_NAME, DOC_PAGE, HEADER_BYTES, RECALL_FILE_NAME,
    SKIP_BLOCK, SKIP_ENTRY, TEMP_NAME,
};
use super::fulltext::FullText;
use super::rank::impact;
use crate::error::Result;
use crate::memory::hash::{crc32, crc32_continue};
use crate::memory::store::checkpoint::{tail_crc, Put};
use crate::memory::store::{EntryId, Store};
use std::fs::File;
use std::path::Path;

impl Store {
    /// Writes the full-text index (base and delta merged) to a new `store.fts` and searches
    /// that from now on, with an empty delta (the writer at a checkpoint, at close, and
    /// whenever the delta is full; a read-only store, whose delta is full, into a private
    /// directory of its own). Nothing to do when the index is not built, or has nothing
    /// the file lacks.
    pub(in crate::memory::store) fn recall_write_file(&mut self) -> Result<()> {
        // A merge under way is finished first (its file then has part of what is new), and
        // the catch-up after one.
        self.recall_step(None)?;
        self.recall_finish_catch_up()?;
        if !self.recall_file_lacks() {
            return Ok(());
        }
        let res = self.recall_merge();
        if let Err(e) = &res {
            // The old file found damaged: the index is rebuilt from the log at the next
            // query, without it. (A failed write leaves base and delta as they were; one that
            // failed after the rename has already discarded them.)
            if e.code() == crate::error::Code::Io {
                self.recall_discard_file();
            }
        }
        res
    }

    /// Whether the index is built and has anything `store.fts` lacks (or the file does not
    /// cover the log).
    fn recall_file_lacks(&self) -> bool {
        if !self.recall_is_ready() {
            return false;
        }
        let nothing_new = self.recall.index.is_empty() && self.recall.base.dead_docs() == 0 && !self.recall.relabeled;
        if nothing_new && self.recall.base.is_open() && (self.log.read_only() || self.recall.written == self.log.len) {
            return false;
        }
        !(self.log.read_only() && nothing_new)
    }

    /// At a checkpoint the cycle's upkeep takes (the writer): starts the merge of the index
    /// into a new `store.fts` as a [`Job`] run in steps, one per cycle ([`Store::recall_step`]
    /// from `flush_access`), when the index has anything the file lacks and no merge is under
    /// way. Starting takes the documents' new numbers and sorts the delta's words, nothing
    /// more.
    pub(in crate::memory::store) fn recall_start_merge(&mut self) -> Result<()> {
        if self.recall.job.is_some() || self.log.read_only() {
            return Ok(());
        }
        self.recall_finish_catch_up()?;
        if !self.recall_file_lacks() {
            return Ok(());
        }
        self.recall_reserve_delta();
        let covered = self.log.len;
        let tail = tail_crc(self, covered)?;
        let r = &mut self.recall;
        let names = FileNames { file: RECALL_FILE_NAME, temp: TEMP_NAME, dict_temp: DICT_TEMP_NAME };
        let stamp = Stamp { store: self.store_id, covered, tail };
        let job = Job::start(&self.dir, names, (&mut r.base, &r.index, None), &mut r.scratch, stamp)?;
        r.job = Some((Some(job), covered));
        Ok(())
    }

    /// Runs the full-text index's merge under way (started by a checkpoint the cycle's
    /// upkeep took) until `until`, the work in hand finished (a word's postings, a batch of
    /// pages); when it ends, `store.fts` is the new file. With none under way, the cold
    /// store's merge likewise (`store.cold.fts`). Returns whether one is still under way. The
    /// writer only (nothing to do for a reader).
    pub fn recall_merge_step(&mut self, until: std::time::Instant) -> Result<bool> {
        if self.log.read_only() || self.log.in_batch() {
            return Ok(false);
        }
        if self.recall.job.is_some() {
            self.recall_step(Some(until))?;
        } else if self.recall_catching_up() {
            self.recall_catch_up_step(Some(until))?;
        } else {
            self.cold_recall_step(Some(until))?;
        }
        Ok(self.recall_merging())
    }

    /// The next step of the full-text index's merge, when one is under way (the cycle's
    /// upkeep, once a cycle: at most `TEXT_MERGE_STEP_MILLIS` of work); a failure is a
    /// warning (the log has everything). None while a due checkpoint is being finished and
    /// synced beside the cycle (`checkpoint::sync`): a step's own sync would wait behind that
    /// one (71 MB at 1,048,576 entries), and its work would run beside the finishing thread's;
    /// the merges that checkpoint asked for start at the first cycle that finds it in place.
    pub(in crate::memory::store) fn merge_step(&mut self) {
        if self.log.read_only() || self.log.in_batch() || self.checkpoint_syncing() {
            return;
        }
        // Merges a due checkpoint asked for start now; their steps from the next cycle.
        if self.start_merges_due() {
            return;
        }
        if self.recall.job.is_none() && self.recall_catching_up() {
            if let Err(e) = self.recall_catch_up_step(Some(step_deadline())) {
                e.context(format_args!("the full-text index will be rebuilt")).print_warning();
            }
            return;
        }
        if self.recall.job.is_none() {
            // The cold store's, when the live index has none under way (one a cycle).
            return self.cold_merge_step();
        }
        if let Err(e) = self.recall_step(Some(step_deadline())) {
            e.context(format_args!("the full-text index's merge was dropped (the next checkpoint writes it)"))
                .print_warning();
        }
    }

    /// Whether a merge of the index, or of the cold store's, is under way (started at a
    /// checkpoint, run in steps).
    pub fn recall_merging(&self) -> bool {
        self.recall.job.is_some() || self.recall_catching_up() || self.cold_recall_merging()
    }

    /// Runs the merge under way, if any, until `deadline` (to its end without one). The step
    /// after the one that put the new file in place opens it (its documents read, 20 bytes
    /// each) and brings the entries changed since the merge started into the delta (until
    /// then queries read the old file, still open). A failure drops the merge (its temp files
    /// removed); when the old file was found damaged, the index is rebuilt from the log at the
    /// next query.
    pub(in crate::memory::store) fn recall_step(&mut self, deadline: Option<std::time::Instant>) -> Result<()> {
        let Some((job, covered)) = self.recall.job.take() else { return Ok(()) };
        if let Some(mut job) = job {
            let r = &mut self.recall;
            let res = job.step((&mut r.base, &r.index, None), &mut r.scratch, deadline);
            if deadline.is_some() {
                r.step_postings_most = r.step_postings_most.max(job.walked());
            }
            match res {
                Ok(Some(_)) => {}
                Ok(None) => {
                    self.recall.job = Some((Some(job), covered));
                    return Ok(());
                }
                Err(e) => {
                    if e.code() == crate::error::Code::Io {
                        self.recall_discard_file();
                    }
                    return Err(e);
                }
            }
            crate::memory::atomic::sync_dir(&self.dir)?;
            self.recall_merged();
            if deadline.is_some() {
                // Written: opened at the next step.
                self.recall.job = Some((None, covered));
                return Ok(());
            }
        }
        // The new file covers the log as it was when the merge started: opened as a base,
        // its documents whose entries changed since are stale, and reconciling brings them
        // and the entries created since into the (emptied) delta.
        let path = self.dir.join(RECALL_FILE_NAME);
        self.recall.retired = self.recall.base.take_file();
        self.recall_discard_file();
        if !self.recall_open_base(&path, false)? {
            bail!(Io, "{} vanished after it was written", path.display());
        }
        self.recall_set_ready();
        self.recall.written = covered;
        if deadline.is_some() {
            // Its catch-up in the next steps: this one opened the file.
            self.recall_catch_up_later();
            return Ok(());
        }
        self.recall_catch_up()
    }

    /// What `lkjagent check` reports about `store.fts` (reads it whole, checking every
    /// byte and decoding every structure; changes nothing, holds nothing after).
    pub fn recall_file_check(&mut self) -> RecallFile {
        let path = self.dir.join(RECALL_FILE_NAME);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return RecallFile::Missing,
            Err(e) => return RecallFile::Damaged(err!(Io, "opening {} failed: {}", path.display(), e)),
        };
        let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
        let mut raw = [0u8; HEADER_BYTES];
        let read = {
            use std::os::unix::fs::FileExt;
            file.read_exact_at(&mut raw, 0)
        };
        if let Err(e) = read {
            return RecallFile::Damaged(err!(Io, "{}: reading its header failed: {}", path.display(), e));
        }
        let h = match Header::parse(&raw) {
            Ok(h) => h,
            // Another format (an older program's): not damage; rebuilt from the log.
            Err(e) if Header::other_format(&raw) => {
                return RecallFile::Stale(e.context(format_args!("{}", path.display())))
            }
            Err(e) => return RecallFile::Damaged(e.context(format_args!("{}", path.display()))),
        };
        let stale_before = self.recall.file_stale;
        let matches = self.recall_header_matches(&h, false);
        let stale = self.recall.file_stale;
        self.recall.file_stale = stale_before;
        if let Err(e) = matches {
            let e = e.context(format_args!("{}", path.display()));
            return if stale { RecallFile::Stale(e) } else { RecallFile::Damaged(e) };
        }
        let mut buf = core::mem::take(&mut self.rbuf);
        let res = verify_file(&file, &h, &mut buf);
        self.rbuf = buf;
        // Every structure too: the document pages, the dictionary, every word's skip groups
        // and blocks, decoded (what searches rely on without reading it all).
        let res = res.and_then(|_| DiskIndex::check_file(file, h, self.slots.room()));
        match res {
            Ok(()) => RecallFile::Usable { docs: h.docs, bytes, covered: h.covered, log_len: self.log.len },
            Err(e) => RecallFile::Damaged(e.context(format_args!("{}", path.display()))),
        }
    }

    /// The merge itself: see [`Store::recall_write_file`] and the module documentation.
    fn recall_merge(&mut self) -> Result<()> {
        self.recall_reserve_delta();
        let covered = self.log.len;
        let tail = tail_crc(self, covered)?;
        let dir = self.recall_dir()?;
        let r = &mut self.recall;
        let slots = &self.slots;
        let place = |e: EntryId| slots.get(e).map(|s| (s.offset, s.len));
        let place: Option<&dyn Fn(EntryId) -> Option<(u64, u32)>> = if r.relabeled { Some(&place) } else { None };
        let names = FileNames { file: RECALL_FILE_NAME, temp: TEMP_NAME, dict_temp: DICT_TEMP_NAME };
        let stamp = Stamp { store: self.store_id, covered, tail };
        let path = write_index_file(&dir, names, (&mut r.base, &r.index, place), &mut r.scratch, stamp)?;
        // From here the base and delta in RAM are the old file's: replaced by the new one.
        self.recall_discard_file();
        crate::memory::atomic::sync_dir(&dir)?;
        self.recall_merged();
        if !self.recall_open_base(&path, false)? {
            bail!(Io, "{} vanished after it was written", path.display());
        }
        self.recall_set_ready();
        self.recall.written = covered;
        Ok(())
    }
}

/// The names an index file is written under: the file, its temp file, its dictionary's temp
/// file (`store.fts`'s, or the cold tier's `store.cold.fts`'s).
#[derive(Clone, Copy)]
pub(in crate::memory::store) struct FileNames {
    pub file: &'static str,
    pub temp: &'static str,
    pub dict_temp: &'static str,
}

/// What an index file's header says it was taken of: the store (`store.fts`: the log's
/// identity; `store.cold.fts`: the cold records it covers), the bytes of the file it indexes
/// it covers, and the CRC of the 4 KiB before that.
#[derive(Clone, Copy)]
pub(in crate::memory::store) struct Stamp {
    pub store: u64,
    pub covered: u64,
    pub tail: u32,
}

/// A base and delta, and where the records of the base's documents are when they moved
/// (a compaction's new log), to merge.
pub(in crate::memory::store) type Parts<'a> =
    (&'a mut DiskIndex, &'a FullText, Option<&'a dyn Fn(EntryId) -> Option<(u64, u32)>>);

/// Writes the merge of `parts` to a new index file in `dir` in one go (a [`Job`] run
/// without a deadline): temp files created exclusively, the body streamed, the header last,
/// synced, renamed over the old file. Returns the new file's path; the caller syncs the
/// directory and opens it. A failure removes the temp files and leaves the old file as it was.
pub(in crate::memory::store) fn write_index_file(
    dir: &Path,
    names: FileNames,
    (base, delta, place): Parts<'_>,
    scratch: &mut WriteScratch,
    stamp: Stamp,
) -> Result<std::path::PathBuf> {
    let mut job = Job::start(dir, names, (&mut *base, delta, place), scratch, stamp)?;
    match job.step((base, delta, place), scratch, None)? {
        Some(path) => Ok(path),
        None => {
            job.remove_temps();
            bail!(Internal, "a merge without a deadline stopped before its end")
        }
    }
}

/// Scratch of the merge, reserved with the index's tables (see `Store::recall_reserve`).
#[derive(Default)]
pub struct WriteScratch {
    /// New numbers of the base's documents ([`NONE`]: not current).
    pub base_new: Vec<u32>,
    /// New numbers of the delta's documents.
    pub delta_new: Vec<u32>,
    /// The delta's words with live documents, in byte order.
    pub sorted: Vec<u32>,
    /// Each dictionary page: offset in the dictionary, CRC-32.
    pub pages: Vec<u32>,
    /// Each document page: CRC-32 of its lengths, of its records.
    pub len_pages: Vec<u32>,
    /// See `len_pages`.
    pub rec_pages: Vec<u32>,
    /// One word's skip entries (the most blocks a word of the store's documents has).
    pub skip: Vec<u8>,
    /// Output buffer of the new file.
    pub out: Vec<u8>,
    /// Output buffer of its dictionary (written to a file of its own, then copied after the
    /// body).
    pub dict: Vec<u8>,
    /// Input buffer (the old documents and postings, the dictionary copied back).
    pub input: Vec<u8>,
    /// One word's new postings, when they fit.
    pub term: Vec<u8>,
}

impl WriteScratch {
    /// Reserves the buffers for a store of `room` ids, once.
    pub fn reserve(&mut self, room: usize, max_terms: usize) {
        use crate::limits::{TEXT_DELTA_DOCS, TEXT_DELTA_TERMS, TEXT_MERGE_BUFFER_BYTES};
        if self.out.capacity() == 0 {
            self.base_new = Vec::with_capacity(room);
            self.delta_new = Vec::with_capacity(TEXT_DELTA_DOCS);
            self.sorted = Vec::with_capacity(TEXT_DELTA_TERMS);
            self.pages = Vec::with_capacity(2 * ((max_terms + TEXT_DELTA_TERMS) / DICT_PAGE + 2));
            self.len_pages = Vec::with_capacity(room.div_ceil(DOC_PAGE) + 1);
            self.rec_pages = Vec::with_capacity(room.div_ceil(DOC_PAGE) + 1);
            self.skip = Vec::with_capacity(skip_bytes(room.div_ceil(SKIP_BLOCK) as u32 + 2) as usize);
            self.out = Vec::with_capacity(TEXT_MERGE_BUFFER_BYTES + 512);
            self.dict = Vec::with_capacity(TEXT_MERGE_BUFFER_BYTES + 512);
            self.input = vec![0u8; TEXT_MERGE_BUFFER_BYTES];
            self.term = Vec::with_capacity(TEXT_MERGE_BUFFER_BYTES);
        }
    }

    /// RAM held, bytes.
    pub fn ram_bytes(&self) -> usize {
        (self.base_new.capacity()
            + self.delta_new.capacity()
            + self.sorted.capacity()
            + self.pages.capacity()
            + self.len_pages.capacity()
            + self.rec_pages.capacity())
            * 4
            + self.skip.capacity()
            + self.out.capacity()
            + self.dict.capacity()
            + self.input.capacity()
            + self.term.capacity()
    }
}
