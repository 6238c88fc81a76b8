//! A merge as a job that runs in steps: the new index file written from the old one and the
//! delta, a bounded slice of work at a time (`TEXT_MERGE_STEP_MILLIS`), so that the writer's
//! cycle never stops for the whole of it (issue 39: no cycle's upkeep over 100 ms at 1,048,576
//! entries). Run without a deadline, the same job is the one-go merge of a close, a compaction
//! or a full delta.
//!
//! Between two steps the store goes on: entries change, the delta grows, base and delta
//! documents die, queries read the old file. The job writes the index as it was when it
//! started, so it takes from that moment what it needs and is not disturbed by what follows:
//! the documents' new numbers (`WriteScratch::base_new`, `delta_new`: which documents were
//! current, and how many the delta had), the delta's words in byte order (`sorted`); a
//! document that dies after keeps its length and record (`Doc::indexed`, `doc_tokens`); the
//! delta's tables only grow until the job ends (a change that needs them emptied ends the job
//! first, or drops it); postings of documents the delta gained after are skipped (numbers
//! past the snapshot's). The old file is not written while the job runs (only a job writes
//! it). The new file covers the log as it was at the start; once it is in place the store
//! opens it and brings the entries changed since into the delta (`Store::recall_reconcile`),
//! as it does with any file behind the log.
//!
//! Crash safety is the one-go merge's: temp files created exclusively, the header last, synced,
//! renamed over the old file. A kill between steps leaves the temp files (removed at the next
//! open) and the old file, a valid base for the log.
//!
//! Its part: `words` writes the words of base and delta, one at a time, a word too long for a
//! step held in hand until the next.

use super::encode::{push_page, DocPages, Enc, EncAt, Out};
use super::postings::{each_posting, Resume, Source};
use super::{FileNames, Parts, Stamp, WriteScratch};
use crate::error::Result;
use crate::limits::TEXT_MERGE_STEP_MILLIS;
use crate::memory::hash::{crc32, crc32_continue};
use crate::memory::store::checkpoint::Put;
use crate::memory::store::recall::disk::{Copied, DictCursor, DiskIndex};
use crate::memory::store::recall::file::{
    DICT_PAGE, DOC_PAGE, ENTRY_TAIL, FORMAT, HEADER_BYTES, MAGIC, SKIP_ENTRY, SKIP_GROUP,
};
use crate::memory::store::recall::fulltext::{FullText, NONE};
use crate::memory::store::recall::rank::{mean_ref, QueryWord};
use crate::memory::store::EntryId;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod words;

/// The time a step of a merge run beside the cycle works before it stops (the work in hand
/// finished: a word's postings, a batch of document pages).
pub(in crate::memory::store) fn step_deadline() -> Instant {
    Instant::now() + Duration::from_millis(TEXT_MERGE_STEP_MILLIS)
}

/// Where a job is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// The documents' lengths, the base's (from document `at`), then the delta's.
    Lengths,
    /// Their records, the base's (from document page `at`).
    Records,
    /// The delta's records.
    DeltaRecords,
    /// The words, in byte order.
    Words,
    /// The dictionary copied in after the body (from byte `at`).
    Dictionary,
    /// The page tables, the header, the rename.
    Finish,
}

/// The running CRC and length of one output.
#[derive(Clone, Copy, Default)]
struct Sum {
    crc: u32,
    len: u64,
}

/// A merge under way (see the module documentation).
pub(in crate::memory::store) struct Job {
    file: File,
    dict: File,
    tmp: PathBuf,
    dict_tmp: PathBuf,
    path: PathBuf,
    at: Progress,
}

/// A word a step's time ran out in, between two of its blocks: what the next step goes on
/// with (its postings counted, or being written).
struct InHand {
    word: [u8; 256],
    len: usize,
    src: Source,
    /// The base's blocks kept as they are (a clean base), and the word's reference mean.
    copied: Option<Copied>,
    mean: u32,
    /// The base's document its walk starts at (after the copied blocks), and the skip
    /// entries of those blocks.
    from: u32,
    skip_copied: usize,
    /// Where its walk goes on, and the encoder's place.
    next: Resume,
    enc: EncAt,
    /// `None` while counting; then what the count found, as its entry says.
    counted: Option<Counted>,
}

/// A word's postings as counted: postings, bytes, blocks, its last document, its largest
/// impact, where they start in the new file.
#[derive(Clone, Copy)]
struct Counted {
    n: u32,
    bytes: u32,
    blocks: u32,
    last: u32,
    most: u16,
    postings_at: u64,
}

/// Where a job is, and what it has written.
struct Progress {
    stamp: Stamp,
    phase: Phase,
    at: u64,
    /// Documents of the base and of the delta when the job started.
    base_docs: u32,
    delta_docs: u32,
    live: u32,
    tokens: u64,
    mean: u32,
    clean: bool,
    body: Sum,
    dout: Sum,
    pages: DocPages,
    min_len: u32,
    cursor: DictCursor,
    bword: [u8; 256],
    bnext: Option<(usize, QueryWord)>,
    di: usize,
    page_crc: u32,
    terms: u32,
    /// The body's and the dictionary's sums once written.
    body_done: Sum,
    dict_done: Sum,
    /// The page tables' CRCs and counts, for the header.
    sparse_crc: u32,
    doc_table_crc: u32,
    doc_pages: u32,
    dict_pages: u32,
    /// Postings walked (counted or written) by the step under way.
    walked: u64,
    /// The word a step's time ran out in, if any.
    hand: Option<InHand>,
}

/// Whether a step's time is up.
fn over(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

impl Job {
    /// Starts a merge of `base` and `delta` into a new file in `dir` (temp files created
    /// exclusively, a blank header written): the documents' new numbers and the delta's words
    /// in order are taken now.
    pub(in crate::memory::store) fn start(
        dir: &Path,
        names: FileNames,
        (base, delta, _): Parts<'_>,
        sc: &mut WriteScratch,
        stamp: Stamp,
    ) -> Result<Job> {
        let tmp = dir.join(names.temp);
        let dict_tmp = dir.join(names.dict_temp);
        let _ = fs::remove_file(&tmp);
        let _ = fs::remove_file(&dict_tmp);
        let create = |p: &Path| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(p)
                .map_err(|e| err!(PersistFailed, "creating {} failed: {}", p.display(), e))
        };
        let mut file = create(&tmp)?;
        let dict = match create(&dict_tmp) {
            Ok(d) => d,
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                return Err(e);
            }
        };
        if let Err(e) = file.write_all(&[0u8; HEADER_BYTES]) {
            let _ = fs::remove_file(&tmp);
            let _ = fs::remove_file(&dict_tmp);
            bail!(PersistFailed, "writing {} failed: {}", tmp.display(), e);
        }
        // New numbers: the base's current documents, then the delta's.
        let mut live = 0u32;
        let mut tokens = 0u64;
        sc.base_new.clear();
        for d in 0..base.doc_count() {
            let doc = base.doc(d);
            if sc.base_new.len() < sc.base_new.capacity() {
                sc.base_new.push(if doc.is_some() { live } else { NONE });
            }
            live += u32::from(doc.is_some());
            tokens += doc.map_or(0, |x| u64::from(x.1));
        }
        sc.delta_new.clear();
        for d in 0..delta.doc_count() as u32 {
            let doc = delta.doc(d).filter(|x| x.entry != NONE);
            if sc.delta_new.len() < sc.delta_new.capacity() {
                sc.delta_new.push(if doc.is_some() { live } else { NONE });
            }
            live += u32::from(doc.is_some());
            tokens += doc.map_or(0, |x| u64::from(x.tokens));
        }
        // The delta's words that have postings, in byte order.
        sc.sorted.clear();
        for t in 0..delta.term_count() as u32 {
            if delta.term(t).is_some_and(|x| x.df > 0) && sc.sorted.len() < sc.sorted.capacity() {
                sc.sorted.push(t);
            }
        }
        crate::sort::sort_by_cmp(&mut sc.sorted, |&a, &b| delta.term_text(a).cmp(delta.term_text(b)));
        sc.len_pages.clear();
        sc.rec_pages.clear();
        sc.pages.clear();
        let at = Progress {
            stamp,
            phase: Phase::Lengths,
            at: 0,
            base_docs: sc.base_new.len() as u32,
            delta_docs: sc.delta_new.len() as u32,
            live,
            tokens,
            mean: mean_ref(tokens, u64::from(live)),
            clean: base.dead_docs() == 0,
            body: Sum::default(),
            dout: Sum::default(),
            pages: DocPages { crc: 0, n: 0 },
            min_len: u32::MAX,
            cursor: DictCursor::default(),
            bword: [0u8; 256],
            bnext: None,
            di: 0,
            page_crc: 0,
            terms: 0,
            body_done: Sum::default(),
            dict_done: Sum::default(),
            sparse_crc: 0,
            doc_table_crc: 0,
            doc_pages: 0,
            dict_pages: 0,
            walked: 0,
            hand: None,
        };
        Ok(Job { file, dict, path: dir.join(names.file), tmp, dict_tmp, at })
    }

    /// Postings the last step walked (a word's counted and written each count).
    pub(in crate::memory::store) fn walked(&self) -> u64 {
        self.at.walked
    }

    /// Removes the job's temp files (a job dropped, or failed).
    pub(in crate::memory::store) fn remove_temps(&self) {
        let _ = fs::remove_file(&self.tmp);
        let _ = fs::remove_file(&self.dict_tmp);
    }

    /// Runs the job until `deadline` (to its end without one). Returns the new file's path
    /// once it is renamed into place (the caller syncs the directory and opens it); `None`
    /// while work remains. A failure removes the temp files; the old file stays as it was.
    pub(in crate::memory::store) fn step(
        &mut self,
        parts: Parts<'_>,
        sc: &mut WriteScratch,
        deadline: Option<Instant>,
    ) -> Result<Option<PathBuf>> {
        let mut bufs = (
            core::mem::take(&mut sc.out),
            core::mem::take(&mut sc.dict),
            core::mem::take(&mut sc.term),
            core::mem::take(&mut sc.skip),
        );
        self.at.walked = 0;
        let res = self.at.run((&mut self.file, &mut self.dict, &self.dict_tmp), parts, sc, &mut bufs, deadline);
        let res = match res {
            Ok(true) => self.write_header().map(|_| true),
            other => other,
        };
        (sc.out, sc.dict, sc.term, sc.skip) = bufs;
        sc.out.clear();
        sc.dict.clear();
        match res {
            Ok(true) => Ok(Some(self.path.clone())),
            Ok(false) => {
                // What this step wrote goes to the disk now, so that the last step's sync
                // does not carry the whole file.
                if deadline.is_some() {
                    self.file
                        .sync_data()
                        .map_err(|e| err!(PersistFailed, "syncing {} failed: {}", self.tmp.display(), e))?;
                }
                Ok(None)
            }
            Err(e) => {
                self.remove_temps();
                Err(e)
            }
        }
    }

    /// The header, last; the file synced and renamed over the old one.
    fn write_header(&mut self) -> Result<()> {
        let a = &self.at;
        let mut h = [0u8; HEADER_BYTES];
        let mut w = Put { buf: &mut h, at: 0 };
        w.bytes(MAGIC);
        w.u32(FORMAT);
        w.u32(a.live);
        w.u64(a.stamp.store);
        w.u64(a.stamp.covered);
        w.u64(a.tokens);
        w.u32(a.terms);
        w.u32(a.stamp.tail);
        w.u32(a.body_done.crc);
        w.u64(a.body_done.len);
        w.u64(a.dict_done.len);
        w.u32(a.dict_pages);
        w.u32(a.doc_table_crc);
        w.u32(a.dict_done.crc);
        w.u32(a.sparse_crc);
        w.u32(a.doc_pages);
        w.u32(if a.live == 0 { 0 } else { a.min_len });
        if let Some((rest, c)) = h.split_last_chunk_mut::<4>() {
            *c = crc32(rest).to_le_bytes();
        }
        use std::os::unix::fs::FileExt;
        let _ = fs::remove_file(&self.dict_tmp);
        self.file
            .write_all_at(&h, 0)
            .and_then(|_| self.file.sync_all())
            .map_err(|e| err!(PersistFailed, "writing {} failed: {}", self.tmp.display(), e))?;
        fs::rename(&self.tmp, &self.path)
            .map_err(|e| err!(PersistFailed, "renaming {} into place failed: {}", self.tmp.display(), e))
    }
}

impl Progress {
    fn run(
        &mut self,
        (file, dict, dict_tmp): (&mut File, &mut File, &Path),
        (base, delta, place): Parts<'_>,
        sc: &mut WriteScratch,
        (out_buf, dict_buf, term_buf, skip_buf): &mut (Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>),
        deadline: Option<Instant>,
    ) -> Result<bool> {
        out_buf.clear();
        dict_buf.clear();
        let mut out = Out { file, buf: out_buf, crc: self.body.crc, len: self.body.len };
        let mut dout = Out { file: dict, buf: dict_buf, crc: self.dout.crc, len: self.dout.len };
        let res = (|| -> Result<bool> {
            if self.phase == Phase::Lengths {
                let pages = &mut self.pages;
                while (self.at as u32) < self.base_docs {
                    let d = self.at as u32;
                    self.at += 1;
                    if sc.base_new.get(d as usize).is_none_or(|&n| n == NONE) {
                        continue;
                    }
                    let t = base.doc_tokens(d).unwrap_or(0);
                    pages.add(&mut out, &t.to_le_bytes(), &mut sc.len_pages)?;
                    self.min_len = self.min_len.min(t);
                    if d.is_multiple_of(65_536) && over(deadline) {
                        return Ok(false);
                    }
                }
                for d in 0..self.delta_docs {
                    if sc.delta_new.get(d as usize).is_none_or(|&n| n == NONE) {
                        continue;
                    }
                    let t = delta.doc(d).map_or(0, |x| x.tokens);
                    pages.add(&mut out, &t.to_le_bytes(), &mut sc.len_pages)?;
                    self.min_len = self.min_len.min(t);
                }
                pages.end(&mut sc.len_pages)?;
                self.phase = Phase::Records;
                self.at = 0;
            }
            // Their records: the base's current documents as its file lists them (a document
            // still stale keeps its old record, so the next open finds it stale again). After
            // a compaction, every document's entry has a new id and a new record: written
            // from RAM, the records' places from the new log.
            let record = |entry: EntryId, at: Option<(u64, u32)>| -> Result<[u8; 16]> {
                let (offset, len) = match (place, at) {
                    (Some(place), _) => {
                        place(entry).ok_or_else(|| err!(Internal, "entry {} is not in the new log", entry))?
                    }
                    (None, Some(x)) => x,
                    (None, None) => bail!(Internal, "a document without a record"),
                };
                let mut b = [0u8; 16];
                let mut w = Put { buf: &mut b, at: 0 };
                w.u32(entry);
                w.u64(offset);
                w.u32(len);
                Ok(b)
            };
            if self.phase == Phase::Records {
                if place.is_some() {
                    for d in 0..self.base_docs {
                        let Some((entry, _)) = base.doc(d) else { continue };
                        self.pages.add(&mut out, &record(entry, None)?, &mut sc.rec_pages)?;
                    }
                } else if base.is_open() {
                    let base_new = &sc.base_new;
                    let (input, rec_pages, pages) = (&mut sc.input, &mut sc.rec_pages, &mut self.pages);
                    // The pages the input buffer holds at a time, then a look at the clock.
                    let per = (input.len() / (DOC_PAGE * super::super::file::DOC_RECORD)).max(1) as u32;
                    loop {
                        let from = self.at as u32;
                        let next = base.each_record(input, (from, per), |d, rec| {
                            match base_new.get(d as usize).is_some_and(|&n| n != NONE) {
                                true => pages.add(&mut out, rec, rec_pages),
                                false => Ok(()),
                            }
                        })?;
                        self.at = u64::from(next);
                        if next == from {
                            break;
                        }
                        if over(deadline) {
                            return Ok(false);
                        }
                    }
                }
                self.phase = Phase::DeltaRecords;
            }
            if self.phase == Phase::DeltaRecords {
                for d in 0..self.delta_docs {
                    if sc.delta_new.get(d as usize).is_none_or(|&n| n == NONE) {
                        continue;
                    }
                    let Some(doc) = delta.doc(d) else { continue };
                    self.pages.add(
                        &mut out,
                        &record(doc.indexed, Some((doc.offset, doc.rec_len)))?,
                        &mut sc.rec_pages,
                    )?;
                }
                self.pages.end(&mut sc.rec_pages)?;
                self.phase = Phase::Words;
                self.bnext = base.next_word(&mut self.cursor, &mut self.bword)?;
            }
            if self.phase == Phase::Words {
                let done = self.words(base, delta, sc, (&mut out, &mut dout), (term_buf, skip_buf), deadline)?;
                if !done {
                    self.cursor.suspend();
                    return Ok(false);
                }
                if self.terms > 0 {
                    push_page(&mut sc.pages, self.page_crc)?;
                }
                self.body_done = Sum { crc: out.crc, len: out.len };
                self.dict_done = Sum { crc: dout.crc, len: dout.len };
                dout.flush()?;
                out.crc = 0;
                self.phase = Phase::Dictionary;
                self.at = 0;
            }
            if self.phase == Phase::Dictionary {
                use std::os::unix::fs::FileExt;
                // The dictionary copied in after the body.
                while self.at < self.dict_done.len {
                    let n = (self.dict_done.len - self.at).min(sc.input.len() as u64) as usize;
                    let chunk = sc.input.get_mut(..n).unwrap_or(&mut []);
                    dout.file
                        .read_exact_at(chunk, self.at)
                        .map_err(|e| err!(PersistFailed, "reading back {} failed: {}", dict_tmp.display(), e))?;
                    out.bytes(chunk)?;
                    self.at += n as u64;
                    if over(deadline) && self.at < self.dict_done.len {
                        return Ok(false);
                    }
                }
                if out.crc != self.dict_done.crc {
                    bail!(PersistFailed, "the index's dictionary did not read back as written");
                }
                self.phase = Phase::Finish;
            }
            self.finish(&mut out, sc)?;
            Ok(true)
        })();
        // Both buffers go to their files at the end of every step (the next step starts
        // them empty).
        let flushed = out.flush().and_then(|_| dout.flush());
        self.body = Sum { crc: out.crc, len: out.len };
        self.dout = Sum { crc: dout.crc, len: dout.len };
        let done = res?;
        flushed?;
        Ok(done)
    }

    /// The page tables after the dictionary.
    fn finish(&mut self, out: &mut Out<'_>, sc: &mut WriteScratch) -> Result<()> {
        out.crc = 0;
        for &v in sc.pages.iter() {
            out.bytes(&v.to_le_bytes())?;
        }
        self.sparse_crc = out.crc;
        out.crc = 0;
        for (&l, &r) in sc.len_pages.iter().zip(sc.rec_pages.iter()) {
            out.bytes(&l.to_le_bytes())?;
            out.bytes(&r.to_le_bytes())?;
        }
        self.doc_table_crc = out.crc;
        if sc.len_pages.len() != sc.rec_pages.len() || sc.len_pages.len() != (self.live as usize).div_ceil(DOC_PAGE) {
            bail!(Internal, "the index's document pages do not add up");
        }
        self.doc_pages = sc.len_pages.len() as u32;
        self.dict_pages = (sc.pages.len() / 2) as u32;
        Ok(())
    }
}
