//! Keeping the text index current with the store: opening it (the base `store.fts` checked
//! against the log, the entries it lacks brought into the delta), moving an entry's words
//! at each change, the early merge of a full delta, rebuilding from the log, and following
//! a compaction or a reload. Querying is the parent module's; writing files is `merge`'s.

use super::file::RECALL_FILE_NAME;
use super::fulltext::{Sizes, NONE};
use super::{words_of_dyn, Recall, State};
use crate::error::Result;
use crate::limits::{STORE_RECORD_MAX_BYTES, STORE_VALUE_MAX_BYTES, TEXT_MIN_TERMS, TEXT_TERMS_PER_ENTRY};
use crate::memory::key::Tag;
use crate::memory::log;
use crate::memory::store::append::LogFile;
use crate::memory::store::{room_for, EntryId, Store};
use std::path::PathBuf;
use std::time::Instant;

/// Ids the catch-up looks at between two looks at its deadline.
const CATCH_UP_IDS_PER_LOOK: EntryId = 4096;

/// Where a catch-up run in steps stands (see [`Store::recall_catch_up_step`]): the base's
/// stale documents from `stale_from`, then the ids from `id_from`; restarted whenever a merge
/// renumbered the base meanwhile (`merges` is the count it was started or restarted at).
#[derive(Clone, Copy)]
pub(in crate::memory::store) struct CatchUp {
    stale_from: u32,
    ids: bool,
    id_from: EntryId,
    merges: u64,
}

impl CatchUp {
    fn at_start(merges: u64) -> CatchUp {
        CatchUp { stale_from: 0, ids: false, id_from: 0, merges }
    }
}

impl Store {
    /// Builds the index now if it is not current (it is otherwise built by the first query).
    ///
    /// The base is `store.fts` when that matches the log (the writer checks every byte of
    /// it first); the entries changed since it was written are brought up to date in the
    /// delta. Without a usable file (none, or one found damaged, with a warning) the index
    /// is built from the log: every live entry into the delta, merged into a new file
    /// whenever the delta is full.
    pub fn recall_ready(&mut self) -> Result<()> {
        if self.recall.state == State::Ready {
            return self.recall_finish_catch_up();
        }
        self.recall_reserve();
        if !self.log.read_only() {
            // The writer reserves everything now, so that no later change allocates.
            self.recall_reserve_delta();
        }
        let mut from_file = false;
        if !core::mem::take(&mut self.recall.ignore_file) {
            let path = self.dir.join(RECALL_FILE_NAME);
            let verify = !self.log.read_only();
            match self.recall_open_base(&path, verify) {
                Ok(found) => from_file = found,
                Err(e) => e.context(format_args!("the full-text index is rebuilt from the log")).print_warning(),
            }
        }
        self.recall.state = State::Ready;
        if let Err(e) = self.recall_reconcile() {
            self.recall.state = State::Stale;
            return Err(e.context(format_args!("building the full-text index")));
        }
        self.recall.from_file = from_file;
        Ok(())
    }

    /// Writes the index's delta into a new `store.fts` now, as a checkpoint does, and the cold
    /// store's into a new `store.cold.fts`, as a close does (the writer; nothing for an index
    /// that is not open or whose file has everything).
    pub fn recall_flush(&mut self) -> Result<()> {
        self.log.check_writable()?;
        self.recall_write_file()?;
        self.cold_recall_write_file(true)
    }

    /// [`Store::recall_flush`] in steps: both merges only started (whenever a file lacks
    /// anything), run by [`Store::recall_merge_step`] (or the cycle's upkeep) until
    /// [`Store::recall_merging`] is false; what a due checkpoint of the cycle does, without
    /// waiting for it to be due.
    pub fn recall_flush_in_steps(&mut self) -> Result<()> {
        self.log.check_writable()?;
        self.recall_start_merge()?;
        self.cold_recall_start_merge(true)
    }

    /// Whether the index is built and current.
    pub(in crate::memory::store) fn recall_is_ready(&self) -> bool {
        self.recall.state == State::Ready
    }

    /// Reserves the index's tables (once) and empties them; the index is stale until filled.
    pub(in crate::memory::store) fn recall_reserve(&mut self) {
        let r = &mut self.recall;
        r.drop_job();
        r.catching_up = None;
        r.state = State::Stale;
        r.index.clear();
        r.base.close();
        if r.rec.capacity() == 0 {
            r.rec = Vec::with_capacity(STORE_RECORD_MAX_BYTES);
            r.val = String::with_capacity(STORE_VALUE_MAX_BYTES);
        }
    }

    /// Reserves the delta's tables and the merge's buffers (once: when the index first has
    /// something the base lacks; a read-only store searching an up-to-date file never does).
    pub(in crate::memory::store) fn recall_reserve_delta(&mut self) {
        if self.recall.index.is_reserved() {
            return;
        }
        let room = room_for(self.cap);
        let max_terms = (self.cap * TEXT_TERMS_PER_ENTRY).max(TEXT_MIN_TERMS);
        self.recall.index.reserve(Sizes::delta(room));
        self.recall.scratch.reserve(room, max_terms);
    }

    /// Test hook: a delta of these (small) sizes, so that merges come often.
    #[cfg(test)]
    pub(in crate::memory::store) fn recall_test_delta(&mut self, docs: usize, words: usize) {
        let room = room_for(self.cap);
        let sizes = Sizes { terms: words, text: words * 8, blocks: words, docs, entries: room };
        self.recall.index.reserve(sizes);
        self.recall.scratch.reserve(room, (self.cap * TEXT_TERMS_PER_ENTRY).max(TEXT_MIN_TERMS));
        // A word's postings of more than 16 bytes take the merge's two-pass way.
        self.recall.scratch.term = Vec::with_capacity(16);
    }

    /// After opening the base: every entry whose record is not the one indexed (changed,
    /// created or deleted since the file was written; all of them without a file) is
    /// brought up to date, merging the delta into a new file whenever it is full.
    fn recall_reconcile(&mut self) -> Result<()> {
        let mut at = CatchUp::at_start(self.recall.merges);
        self.recall_reconcile_until(&mut at, None).map(|_| ())
    }

    /// [`Store::recall_reconcile`] from `at` until `deadline` (to its end without one), `at`
    /// moved on; whether it ended. Changes made meanwhile between two calls are the
    /// index's own (`recall_sync`): only what was stale or missing when the base was opened
    /// is the catch-up's.
    fn recall_reconcile_until(&mut self, at: &mut CatchUp, deadline: Option<Instant>) -> Result<bool> {
        let past = || deadline.is_some_and(|d| Instant::now() >= d);
        if at.merges != self.recall.merges {
            *at = CatchUp::at_start(self.recall.merges);
        }
        // The base's documents found stale at open.
        while !at.ids {
            let Some(d) = self.recall.base.next_stale(at.stale_from) else { break };
            if past() {
                return Ok(false);
            }
            let Some((entry, _)) = self.recall.base.doc(d) else { break };
            self.recall_apply(entry)?;
            // A merge renumbered the base: look again from its start.
            at.stale_from = if self.recall.merges == at.merges { d + 1 } else { 0 };
            at.merges = self.recall.merges;
        }
        at.ids = true;
        // Entries the base and the delta do not have.
        let end = self.slots.next_id() as EntryId;
        while at.id_from < end {
            if at.id_from.is_multiple_of(CATCH_UP_IDS_PER_LOOK) && past() {
                return Ok(false);
            }
            let id = at.id_from;
            if self.slots.is_live(id) && self.recall.base.doc_of(id).is_none() && self.recall.index.doc_of(id).is_none()
            {
                self.recall_apply(id)?;
            }
            at.id_from += 1;
        }
        Ok(true)
    }

    /// After a merge run in steps put its file in place: the entries changed or created since
    /// it started brought into the delta (a failure leaves the index stale, rebuilt by the
    /// next query).
    pub(in crate::memory::store) fn recall_catch_up(&mut self) -> Result<()> {
        self.recall.catching_up = Some(CatchUp::at_start(self.recall.merges));
        self.recall_finish_catch_up()
    }

    /// Starts the catch-up after a merge's new file was opened, to be run in steps by the
    /// cycles' upkeep ([`Store::recall_catch_up_step`]); whatever needs the index current
    /// (a query, a merge, a file written) finishes it first.
    pub(in crate::memory::store) fn recall_catch_up_later(&mut self) {
        self.recall.catching_up = Some(CatchUp::at_start(self.recall.merges));
    }

    /// A step of the catch-up under way, if any, until `deadline` (to its end without one):
    /// a failure leaves the index stale (rebuilt by the next query).
    pub(in crate::memory::store) fn recall_catch_up_step(&mut self, deadline: Option<Instant>) -> Result<()> {
        self.recall.retired = None;
        // Taken out while it runs: a merge at once it causes (a full delta) finds none to finish.
        let Some(mut at) = self.recall.catching_up.take() else { return Ok(()) };
        if self.recall.state != State::Ready {
            return Ok(());
        }
        match self.recall_reconcile_until(&mut at, deadline) {
            Ok(true) => Ok(()),
            Ok(false) => {
                self.recall.catching_up = Some(at);
                Ok(())
            }
            Err(e) => {
                self.recall.state = State::Stale;
                Err(e.context(format_args!("bringing the full-text index up to date after its merge")))
            }
        }
    }

    /// Finishes the catch-up under way, if any.
    pub(in crate::memory::store) fn recall_finish_catch_up(&mut self) -> Result<()> {
        self.recall_catch_up_step(None)
    }

    /// Whether a catch-up is under way (see [`Store::recall_catch_up_later`]).
    pub(in crate::memory::store) fn recall_catching_up(&self) -> bool {
        self.recall.catching_up.is_some()
    }

    /// Rebuilds the index from the log alone (the file set aside): every live entry's `put`
    /// record read and indexed.
    pub fn recall_rebuild(&mut self) -> Result<()> {
        self.recall.ignore_file = true;
        self.recall.state = State::Stale;
        self.recall_ready()
    }

    /// The file is not to be used again (found damaged, or a merge failed): the index is
    /// rebuilt from the log at the next query, and writes a new one.
    pub(in crate::memory::store) fn recall_discard_file(&mut self) {
        self.recall.drop_job();
        self.recall.catching_up = None;
        self.recall.base.close();
        self.recall.index.clear();
        self.recall.ignore_file = true;
        self.recall.state = State::Stale;
    }

    /// Brings entry `id`'s words in the index up to date after a change (nothing while the
    /// index is closed or stale). A failure leaves the index stale, rebuilt by the next query.
    pub(in crate::memory::store) fn recall_sync(&mut self, id: EntryId) {
        if self.recall.state != State::Ready {
            return;
        }
        if let Err(e) = self.recall_apply(id) {
            self.recall.state = State::Stale;
            if e.code() != crate::error::Code::CapacityExceeded {
                e.context(format_args!("the full-text index will be rebuilt")).print_warning();
            }
        }
    }

    /// [`Store::recall_sync`], with its failure.
    fn recall_apply(&mut self, id: EntryId) -> Result<()> {
        self.recall_reserve_delta();
        loop {
            let want = self.slots.get(id).map(|s| (s.offset, s.len));
            let r = &mut self.recall;
            let (in_delta, in_base, have) = indexed(r, id)?;
            if want.map(|w| w.0) == have.map(|h| h.0) {
                return Ok(());
            }
            // Words and their text take at most a byte each of the records they come from
            // (folding may lengthen a word's text by half: twice, for the text).
            let bound = (have.map_or(0, |h| h.1) + want.map_or(0, |w| w.1)) as usize;
            if !r.index.has_room(1, bound, 2 * bound) {
                if r.job.is_some() {
                    // A merge under way is finished: the delta then holds only what changed
                    // since it started.
                    self.recall_step(None)?;
                    if self.recall.state != State::Ready {
                        bail!(Io, "the full-text index could not merge its delta; it will be rebuilt");
                    }
                    continue;
                }
                if !r.index.is_empty() {
                    // The delta is full: merged into a new store.fts (the documented early
                    // merge).
                    self.recall_write_file()?;
                    if self.recall.state != State::Ready {
                        bail!(Io, "the full-text index could not merge its delta; it will be rebuilt");
                    }
                    continue;
                }
                // An empty delta and a record of escapes: what its words really need (a
                // value of STORE_VALUE_MAX_BYTES always fits, see limits.rs).
                let (mut words, mut text) = (0usize, 0usize);
                for (offset, len) in [have, want].into_iter().flatten() {
                    each_word(&self.log, &mut r.rec, &mut r.val, (id, offset, len), |w| {
                        words += 1;
                        text += w.len();
                        Ok(())
                    })?;
                }
                if !r.index.has_room(1, words, text) {
                    bail!(
                        CapacityExceeded,
                        "entry {}'s {} words are more than the full-text index's delta holds (TEXT_DELTA_* in limits.rs)",
                        id,
                        words
                    );
                }
            }
            return swap_doc(r, &self.log, id, in_delta, in_base, want);
        }
    }

    /// Marks the index current again (after a merge opened its new file).
    pub(in crate::memory::store) fn recall_set_ready(&mut self) {
        self.recall.ignore_file = false;
        self.recall.state = State::Ready;
    }

    /// Counts a merge (the file writer's).
    pub(in crate::memory::store) fn recall_merged(&mut self) {
        self.recall.merges += 1;
    }

    /// The directory merges write `store.fts` to: the data directory (the writer), or a
    /// private one of a read-only store's own, created on first use.
    pub(in crate::memory::store) fn recall_dir(&mut self) -> Result<PathBuf> {
        if !self.log.read_only() {
            return Ok(self.dir.clone());
        }
        if let Some(p) = &self.recall.private {
            return Ok(p.clone());
        }
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("lkjagent-fts-{}-{}", std::process::id(), n));
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).create(&p).map_err(|e| {
            err!(PersistFailed, "creating {} (a read-only search's own index files) failed: {}", p.display(), e)
        })?;
        self.recall.private = Some(p.clone());
        Ok(p)
    }

    /// Before a compaction in id order replaces the log (and the reload closes the index):
    /// gives the index's documents the ids the compaction gives their entries (each
    /// indexed entry's rank in id order) and takes the index out of the store, for
    /// [`Store::recall_follow_compaction`]. `None` when the index is not current.
    pub(in crate::memory::store) fn recall_take_for_compaction(&mut self) -> Option<Recall> {
        self.recall.drop_job();
        if self.recall_finish_catch_up().is_err() {
            return None;
        }
        if !self.recall_is_ready() || !self.recall.index.is_reserved() {
            return None;
        }
        let end = self.slots.next_id();
        let mut r = core::mem::take(&mut self.recall);
        let rank = &mut r.scratch.base_new;
        rank.clear();
        let mut k = 0u32;
        for old in 0..end as EntryId {
            if rank.len() >= rank.capacity() {
                self.recall = r;
                return None;
            }
            rank.push(k);
            k += u32::from(r.base.doc_of(old).is_some() || r.index.doc_of(old).is_some());
        }
        let rank = &r.scratch.base_new;
        let new = |old: EntryId| rank.get(old as usize).copied().unwrap_or(NONE);
        r.base.relabel(new);
        r.index.relabel(new);
        Some(r)
    }

    /// After the compaction and its reload: the index taken by
    /// [`Store::recall_take_for_compaction`] is put back and written whole to a new
    /// `store.fts` for the new log (the new records' offsets from the new log), instead of
    /// being rebuilt from it. Falls back to the rebuild when anything does not fit.
    pub(in crate::memory::store) fn recall_follow_compaction(&mut self, r: Recall) -> Result<()> {
        let indexed = r.base.totals().0 + r.index.live_docs();
        self.recall = r;
        if indexed != self.slots.live() as u64 {
            self.recall_discard_file();
            return self.recall_ready();
        }
        self.recall.state = State::Ready;
        self.recall.relabeled = true;
        let res = self.recall_write_file();
        self.recall.relabeled = false;
        if let Err(e) = res {
            e.context(format_args!("the full-text index is rebuilt for the compacted log")).print_warning();
            self.recall_discard_file();
            return self.recall_ready();
        }
        Ok(())
    }

    /// Closes the index (after a reload: entry ids and log offsets may all have changed).
    pub(in crate::memory::store) fn recall_close(&mut self) {
        self.recall.drop_job();
        self.recall.catching_up = None;
        self.recall.state = State::Closed;
        self.recall.written = 0;
        self.recall.base.close();
    }
}

/// Entry `id`'s words moved: its document in the delta (`in_delta`), or else in the base
/// (`in_base`: the document, its record's offset and length), counted out; its record `want`
/// (offset, length), if it is live, indexed as a new document. The caller made sure the delta
/// has room.
fn swap_doc(
    r: &mut Recall,
    log: &LogFile,
    id: EntryId,
    in_delta: bool,
    in_base: Option<(u32, u64, u32)>,
    want: Option<(u64, u32)>,
) -> Result<()> {
    if in_delta {
        remove_entry(r, log, id)?;
    } else if let Some((d, offset, rec_len)) = in_base {
        r.index.start_base_kill();
        let index = &mut r.index;
        each_word(log, &mut r.rec, &mut r.val, (id, offset, rec_len), |w| index.kill_base_word(w))?;
        r.base.kill(d);
    }
    if let Some((offset, len)) = want {
        add_entry(r, log, (id, offset, len))?;
    }
    Ok(())
}

/// [`Store::recall_reconcile`] for a reader that is not a store in RAM (the checkpoint read in
/// place with the log's tail laid over it, `view::tail`), over `r` (its base loaded with the
/// stale documents marked, an empty delta reserved): the base's stale documents in their
/// order, then the ids of `new` (increasing) that neither the base nor the delta holds, each
/// brought to `want(id)` (its record's offset and length; `None` when it is not live), as the
/// store's catch-up brings them, in the same order, so that the delta is the same (reserved
/// of `sizes` when first needed: a base that has everything needs none). `Ok(false)`
/// when the delta has no room for a change (the store would merge early: the caller opens it
/// instead).
pub(in crate::memory::store) fn catch_up_over(
    r: &mut Recall,
    log: &LogFile,
    sizes: Sizes,
    new: &[EntryId],
    mut want: impl FnMut(EntryId) -> Option<(u64, u32)>,
) -> Result<bool> {
    let mut from = 0;
    while let Some(d) = r.base.next_stale(from) {
        let Some((entry, _)) = r.base.doc(d) else { break };
        if !apply_over(r, log, sizes, entry, want(entry))? {
            return Ok(false);
        }
        from = d + 1;
    }
    for &id in new {
        let live = want(id);
        if live.is_some()
            && r.base.doc_of(id).is_none()
            && r.index.doc_of(id).is_none()
            && !apply_over(r, log, sizes, id, live)?
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// [`Store::recall_apply`] without the early merge: `Ok(false)` when the delta has no room.
/// The delta is reserved (of `sizes`) at its first change, as the store reserves it.
fn apply_over(r: &mut Recall, log: &LogFile, sizes: Sizes, id: EntryId, want: Option<(u64, u32)>) -> Result<bool> {
    let (in_delta, in_base, have) = indexed(r, id)?;
    if want.map(|w| w.0) == have.map(|h| h.0) {
        return Ok(true);
    }
    if !r.index.is_reserved() {
        r.index.reserve(sizes);
    }
    let bound = (have.map_or(0, |h| h.1) + want.map_or(0, |w| w.1)) as usize;
    if !r.index.has_room(1, bound, 2 * bound) {
        return Ok(false);
    }
    swap_doc(r, log, id, in_delta, in_base, want)?;
    Ok(true)
}

/// Where an entry's text stands in the index ([`indexed`]): whether the delta holds it; its
/// document in `store.fts` and that document's record (offset, length); the record it was
/// indexed from.
type Indexed = (bool, Option<(u32, u64, u32)>, Option<(u64, u32)>);

/// Where entry `id`'s text stands in the index now ([`Indexed`]; the record is `None` when it
/// is not indexed). The store's upkeep and a reader's tail read it alike.
fn indexed(r: &mut Recall, id: EntryId) -> Result<Indexed> {
    let in_delta = r.index.doc_of(id).map(|(_, d)| (d.offset, d.rec_len));
    let in_base = match (in_delta, r.base.doc_of(id)) {
        (None, Some(d)) => {
            let doc = r.base.file_doc(d)?;
            Some((d, doc.offset, doc.rec_len))
        }
        _ => None,
    };
    let have = in_delta.or(in_base.map(|(_, offset, len)| (offset, len)));
    Ok((in_delta.is_some(), in_base, have))
}

/// Reads the `put` record of entry `id` (`len` bytes at `offset`) and calls `f` with each
/// word of its text: the tags, then the value.
fn each_word(
    log: &LogFile,
    rec: &mut Vec<u8>,
    val: &mut String,
    (id, offset, len): (EntryId, u64, u32),
    mut f: impl FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    each_word_dyn(log, rec, val, (id, offset, len), &mut f)
}

/// `each_word`, compiled once (it was inlined at its four callers, about 1.2 KB each).
fn each_word_dyn(
    log: &LogFile,
    rec: &mut Vec<u8>,
    val: &mut String,
    (id, offset, len): (EntryId, u64, u32),
    f: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    rec.clear();
    rec.resize(len as usize, 0);
    log.read_at(rec, offset)?;
    let line = rec.strip_suffix(b"\n").unwrap_or(rec);
    let log::Record::Put { head, tags, value_escaped } = log::decode(line)? else {
        bail!(Io, "{} at byte {}: expected the put record of entry {}", log.path.display(), offset, id);
    };
    if head.id != id {
        bail!(Io, "{} at byte {}: record is for entry {}, not {}", log.path.display(), offset, head.id, id);
    }
    words_of_dyn(&mut tags.iter().map(Tag::as_str), value_escaped, val, f)
}

/// Indexes entry `id`'s record as a new document.
fn add_entry(r: &mut Recall, log: &LogFile, (id, offset, len): (EntryId, u64, u32)) -> Result<()> {
    let d = r.index.start_doc(id, offset, len)?;
    let index = &mut r.index;
    each_word(log, &mut r.rec, &mut r.val, (id, offset, len), |w| index.add_word(d, w))?;
    r.index.finish_doc(d);
    Ok(())
}

/// Takes entry `id`'s live document out of the delta, if it has one (its record, still in
/// the log, says which words to count out).
fn remove_entry(r: &mut Recall, log: &LogFile, id: EntryId) -> Result<()> {
    let Some((_, doc)) = r.index.doc_of(id) else { return Ok(()) };
    let Some(d) = r.index.start_remove(id) else { return Ok(()) };
    let index = &mut r.index;
    each_word(log, &mut r.rec, &mut r.val, (id, doc.offset, doc.rec_len), |w| {
        index.remove_word(w);
        Ok(())
    })?;
    r.index.finish_remove(d);
    Ok(())
}
