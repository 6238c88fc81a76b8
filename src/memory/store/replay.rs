//! Opening: the log's header, the checkpoint if it matches, the records after it, and the
//! repair of a torn tail (see the store's module documentation for the rules).

use super::slots::{clamp32, Slot};
use super::{checkpoint, corrupt_name, EntryId, Store, LINK_RECORD_BYTES, LOG_NAME};
use crate::error::{Error, Result};
use crate::limits::{STORE_CHECKPOINT_EVERY_BYTES, STORE_MAX_LINKS};
use crate::memory::key::Key;
use crate::memory::log::{self, LineReader, Record};

/// A clean-up batch found open while replaying: where it started, and the deletions it holds
/// back until its `batch_end` (a clean-up counts only whole).
struct OpenCleanup {
    at: u64,
    dels: Vec<EntryId>,
}

/// A batch found open while replaying: where it started, the changes it announced, the
/// changes (put records) seen.
#[derive(Clone, Copy)]
struct OpenBatch {
    at: u64,
    changes: u64,
    puts: u64,
}

impl Store {
    fn reset(&mut self) {
        self.slots.clear();
        self.keys.clear();
        self.tags.clear();
        self.links.clear();
        self.live_bytes = 0;
        self.header_bytes = 0;
        self.corrupt = 0;
        self.unfinished_tail = 0;
        self.damaged_tail = false;
        self.cut_cleanup = false;
        self.from_checkpoint = false;
        self.replayed_bytes = 0;
        // A checkpoint being synced names the state being cleared: never put in place.
        self.checkpoint_sync_drop();
        self.checkpointed = 0;
        self.log.len = 0;
        self.recall_close();
    }

    /// Reads the store from disk into a fresh index: header, checkpoint, the rest of the log.
    pub(super) fn open_index(&mut self) -> Result<()> {
        self.reset();
        let file_len = self.log.file_len()?;
        if file_len == 0 {
            if self.log.read_only() {
                return Ok(());
            }
            // An empty file (a crash while the log was first written): start it.
            self.store_id = super::new_store_id();
            self.format = log::FORMAT_VERSION;
            self.wbuf.clear();
            log::encode_header(&mut self.wbuf, self.store_id)?;
            self.header_bytes = self.wbuf.len() as u64;
            self.log.append(self.wbuf.as_slice())?;
            return crate::memory::atomic::sync_dir(&self.dir);
        }
        let Some(header_end) = self.read_header(file_len)? else {
            return self.move_aside_and_start_fresh();
        };
        let mut from = header_end;
        let found = if self.whole_log { Ok(None) } else { checkpoint::read(self, file_len) };
        match found {
            Ok(Some(covered)) => {
                from = covered;
                self.from_checkpoint = true;
                self.checkpointed = covered;
            }
            Ok(None) => {}
            Err(e) => {
                e.context(format_args!("{}: the checkpoint was not used; reading the whole log", self.dir.display()))
                    .print_warning();
                self.reset();
                self.read_header(file_len)?;
            }
        }
        let born = self.replay(from, file_len)?;
        self.replayed_bytes = self.log.len.saturating_sub(from);
        self.tags.build_lists(&self.slots)?;
        if self.slots.live() > self.cap {
            bail!(
                CapacityExceeded,
                "{} holds {} entries, more than memory.store_capacity ({}); raise memory.store_capacity in config.json",
                self.log.path.display(),
                self.slots.live(),
                self.cap
            );
        }
        if self.log.read_only() {
            return Ok(());
        }
        if self.format < log::FORMAT_VERSION {
            // Version 1: ids were reused slots. Rewrite in creation order (by creation time,
            // then by where each entry was created in the log).
            let mut order: Vec<EntryId> = self.slots.ids().collect();
            crate::sort::sort_by_key(&mut order, |&id| {
                (self.slots.created(id), born.get(id as usize).copied().unwrap_or(0), id)
            });
            self.compact_ordered(Some(&order))?;
            err!(
                Io,
                "{}: upgraded the store log to format version {} ({} entries, in creation order)",
                self.log.path.display(),
                log::FORMAT_VERSION,
                self.slots.live()
            )
            .print_warning();
        } else if self.replayed_bytes >= STORE_CHECKPOINT_EVERY_BYTES {
            self.checkpoint_quietly();
        }
        Ok(())
    }

    /// Reads and checks the header line; sets the format and the store id and returns where
    /// the records start, or `None` when the file is not a store log at all.
    pub(super) fn read_header(&mut self, file_len: u64) -> Result<Option<u64>> {
        let mut scratch = core::mem::take(&mut self.rbuf);
        let res = (|| {
            // The header is one short line (under 128 bytes, `log::encode_header`): the first
            // 4 KiB hold it whole, where a read of the log's first chunk (64 KiB) filled and
            // copied 60 KiB more for every open. A first line that does not end within them
            // is no header either way.
            let mut reader = LineReader::new(&self.log.file, file_len.min(4096));
            let Some(line) = reader.next(&mut scratch)? else { return Ok(None) };
            if !line.complete {
                return Ok(None);
            }
            match log::decode(reader.text(&scratch, line.len)?) {
                Ok(Record::Header { version, store })
                    if (log::FORMAT_VERSION_OLDEST..=log::FORMAT_VERSION).contains(&version) =>
                {
                    self.format = version;
                    self.store_id = store;
                    self.header_bytes = line.len as u64 + 1;
                    self.log.len = self.header_bytes;
                    Ok(Some(self.header_bytes))
                }
                Ok(Record::Header { version, .. }) => bail!(
                    Io,
                    "{} has format version {}; this program reads versions {} to {}",
                    self.log.path.display(),
                    version,
                    log::FORMAT_VERSION_OLDEST,
                    log::FORMAT_VERSION
                ),
                _ => Ok(None),
            }
        })();
        self.rbuf = scratch;
        res
    }

    /// Replays records from byte `from` to the end; returns, for a version 1 log, where each
    /// live entry was created (empty otherwise).
    fn replay(&mut self, from: u64, file_len: u64) -> Result<Vec<u64>> {
        let mut born = if self.format < log::FORMAT_VERSION { vec![0u64; self.slots.room()] } else { Vec::new() };
        // A second handle on the same open file (a dup'd descriptor, no copy) lets the reader
        // borrow it while records are applied to `self`.
        let read_handle = self
            .log
            .file
            .try_clone()
            .map_err(|e| err!(Io, "duplicating the handle of {} failed: {}", self.log.path.display(), e))?;
        let mut reader = LineReader::starting_at(&read_handle, from, file_len);
        let mut good_end = from;
        let mut bad_after_good: Option<(u64, Error)> = None;
        // Whether a bad record since the last good one was whole (it had its newline).
        let mut whole_bad_after_good = false;
        let mut batch: Option<OpenBatch> = None;
        let mut cleanup: Option<OpenCleanup> = None;
        let mut scratch = core::mem::take(&mut self.rbuf);
        let res = loop {
            let line = match reader.next(&mut scratch) {
                Ok(Some(l)) => l,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e.context(format_args!("reading {}", self.log.path.display()))),
            };
            let log::Line { offset, len, complete } = line;
            let text = match reader.text(&scratch, len) {
                Ok(t) => t,
                Err(e) => break Err(e.context(format_args!("reading {}", self.log.path.display()))),
            };
            let decoded = if complete {
                log::decode(text)
            } else {
                Err(err!(JsonInvalid, "record has no newline (cut short, or longer than STORE_RECORD_MAX_BYTES)"))
            };
            match decoded {
                Ok(rec) => {
                    whole_bad_after_good = false;
                    if let Some((at, e)) = bad_after_good.take() {
                        self.corrupt += 1;
                        e.context(format_args!("{}: skipped a damaged record at byte {}", self.log.path.display(), at))
                            .print_warning();
                    }
                    let applied = match rec {
                        Record::Cleanup { .. } | Record::Del { .. } | Record::BatchEnd => {
                            self.apply_cleanup(&rec, offset, &mut cleanup)
                        }
                        _ => Ok(false),
                    };
                    let applied = match applied {
                        Ok(true) => Ok(()),
                        Ok(false) => self.apply(rec, offset, len as u32 + 1, &mut batch, &mut born),
                        Err(e) => Err(e),
                    };
                    if let Err(e) = applied {
                        break Err(e.context(format_args!("{} at byte {}", self.log.path.display(), offset)));
                    }
                    good_end = offset + len as u64 + 1;
                }
                Err(e) => {
                    whole_bad_after_good |= complete;
                    if bad_after_good.is_none() {
                        bad_after_good = Some((offset, e));
                    } else {
                        self.corrupt += 1;
                    }
                }
            }
        };
        self.rbuf = scratch;
        res?;
        self.log.len = good_end;
        if good_end < file_len && self.log.read_only() && whole_bad_after_good {
            self.unfinished_tail = file_len - good_end;
            self.damaged_tail = true;
            let why = bad_after_good.map(|(_, e)| e.message());
            err!(
                Io,
                "{}: ignored {} bytes at the end that hold a damaged record{}{} (opened read-only, so left as \
                 they are; the agent drops them as a torn tail at its next start)",
                self.log.path.display(),
                file_len - good_end,
                if why.is_some() { ": " } else { "" },
                why.as_deref().unwrap_or("")
            )
            .print_warning();
        } else if good_end < file_len && self.log.read_only() {
            self.unfinished_tail = file_len - good_end;
            err!(
                Io,
                "{}: ignored {} bytes at the end that are not a whole record yet (opened read-only; \
                 a running agent may be writing them)",
                self.log.path.display(),
                file_len - good_end
            )
            .print_warning();
        } else if good_end < file_len {
            let why = bad_after_good.map(|(_, e)| e);
            err!(
                Io,
                "{}: dropped a torn tail of {} bytes at byte {} (a write cut short by a crash){}{}",
                self.log.path.display(),
                file_len - good_end,
                good_end,
                if why.is_some() { ": " } else { "" },
                why.as_ref().map(Error::message).as_deref().unwrap_or("")
            )
            .print_warning();
            self.log.truncate(good_end)?;
        }
        if let Some(b) = batch {
            self.report_cut_batch(b)?;
        }
        if let Some(open) = cleanup {
            self.drop_cut_cleanup(open.at, file_len)?;
        }
        Ok(born)
    }

    /// Replays a record of a clean-up batch: its start, a deletion inside it (held back), its
    /// end (the deletions applied). Returns false for a record that is not part of one.
    fn apply_cleanup(&mut self, rec: &Record<'_>, offset: u64, open: &mut Option<OpenCleanup>) -> Result<bool> {
        match (rec, open.as_mut()) {
            (Record::Cleanup { entries }, _) => {
                if open.is_some() {
                    err!(Io, "{}: a clean-up batch was cut short by another; it is ignored", self.log.path.display())
                        .print_warning();
                }
                let want = usize::try_from(*entries).unwrap_or(usize::MAX).min(crate::limits::STORE_CLEANUP_BATCH_MAX);
                *open = Some(OpenCleanup { at: offset, dels: Vec::with_capacity(want) });
                Ok(true)
            }
            (Record::Del { id }, Some(c)) => {
                if c.dels.len() >= crate::limits::STORE_CLEANUP_BATCH_MAX {
                    bail!(Io, "a clean-up batch holds more than STORE_CLEANUP_BATCH_MAX deletions");
                }
                c.dels.push(*id);
                Ok(true)
            }
            (Record::BatchEnd, Some(_)) => {
                if let Some(c) = open.take() {
                    for id in c.dels {
                        self.uninstall(id);
                        if (id as usize) < self.slots.room() {
                            self.slots.note_id(id);
                        }
                    }
                }
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// A clean-up batch a crash cut short (no `batch_end`): none of it counts. The writer cuts
    /// the log back to where it began (its entries stay live, and any copies the cold store
    /// took of them are the same entries, shown once); a reader reads up to there only.
    fn drop_cut_cleanup(&mut self, at: u64, file_len: u64) -> Result<()> {
        if self.log.read_only() {
            self.unfinished_tail = file_len.saturating_sub(at);
            self.cut_cleanup = true;
            self.log.len = at;
            return Ok(());
        }
        err!(
            Io,
            "{}: a clean-up cut short by a crash was rolled back ({} bytes at byte {}); its entries stay in the store",
            self.log.path.display(),
            self.log.len.saturating_sub(at),
            at
        )
        .print_warning();
        self.log.truncate(at)
    }

    /// Says how much of a batch a crash cut short, and (as the writer) closes it in the log so
    /// that it is said once.
    fn report_cut_batch(&mut self, b: OpenBatch) -> Result<()> {
        cut_batch_warning(&self.log.path, &b).print_warning();
        if self.log.read_only() {
            return Ok(());
        }
        self.wbuf.clear();
        log::encode_batch_end(&mut self.wbuf)?;
        self.log.append(self.wbuf.as_slice())?;
        Ok(())
    }

    /// Applies one replayed record.
    fn apply(
        &mut self,
        rec: Record<'_>,
        offset: u64,
        rec_len: u32,
        batch: &mut Option<OpenBatch>,
        born: &mut [u64],
    ) -> Result<()> {
        match rec {
            Record::Header { .. } => bail!(Io, "a second header record"),
            Record::Put { head, tags, .. } => {
                if head.id as usize >= self.slots.room() {
                    bail!(
                        CapacityExceeded,
                        "the log names entry id {}, beyond the {} ids memory.store_capacity ({}) leaves room for; \
                         raise memory.store_capacity in config.json",
                        head.id,
                        self.slots.room(),
                        self.cap
                    );
                }
                if offset + u64::from(rec_len) > super::slots::MAX_OFFSET {
                    bail!(CapacityExceeded, "the log passes 1 TiB, the most the store's index can address");
                }
                let key = Key::from_tags(tags.iter().map(|t| t.as_str()))?;
                let was_live = self.slots.is_live(head.id);
                self.unindex(head.id);
                if let Some(other) = self.find(&key) {
                    self.uninstall(other); // a later put for the same key wins
                }
                let set = self.intern_replayed(&key)?;
                let slot = Slot {
                    offset,
                    len: rec_len,
                    archived: head.archived,
                    dirty: false,
                    created: clamp32(head.created),
                    accessed: clamp32(head.accessed),
                    hits: clamp32(head.hits),
                    ver: head.ver,
                };
                self.install(head.id, &slot, &set)?;
                if !was_live {
                    if let Some(b) = born.get_mut(head.id as usize) {
                        *b = offset;
                    }
                }
                if let Some(b) = batch.as_mut() {
                    b.puts += 1;
                }
            }
            Record::Touch { id, accessed, hits } => self.slots.set_access(id, accessed, hits),
            Record::Link { a, b } => {
                if self.contains(a)
                    && self.contains(b)
                    && a != b
                    && !self.links.contains(a, b)
                    && self.links.len() < STORE_MAX_LINKS
                {
                    self.links.add(a, b)?;
                    self.live_bytes += LINK_RECORD_BYTES;
                }
            }
            Record::Unlink { a, b } => {
                if self.links.remove(a, b) {
                    self.live_bytes = self.live_bytes.saturating_sub(LINK_RECORD_BYTES);
                }
            }
            Record::Del { id } => {
                self.uninstall(id);
                if (id as usize) < self.slots.room() {
                    self.slots.note_id(id);
                }
            }
            Record::Batch { entries } => {
                if let Some(b) = batch.take() {
                    self.report_cut_batch_in_replay(b);
                }
                *batch = Some(OpenBatch { at: offset, changes: entries, puts: 0 });
            }
            Record::BatchEnd => *batch = None,
            // Handled by `apply_cleanup`.
            Record::Cleanup { .. } => {}
            Record::ColdHeader { .. } => bail!(Io, "a cold store's header inside the log"),
            Record::ColdLink { .. } => bail!(Io, "a cold store's link inside the log"),
        }
        Ok(())
    }

    /// A batch followed by another batch: the first was cut short (and not closed).
    fn report_cut_batch_in_replay(&self, b: OpenBatch) {
        cut_batch_warning(&self.log.path, &b).print_warning();
    }

    /// The tag ids of a replayed key (interning as needed).
    fn intern_replayed(&mut self, key: &Key) -> Result<super::slots::TagSet> {
        let mut set = [0u16; crate::limits::KEY_MAX_TAGS];
        for (s, tag) in set.iter_mut().zip(key.tags()) {
            *s = self.tags.intern(tag)?;
        }
        Ok(set)
    }

    /// The log is not a store log at all: keep it under another name, never overwrite it,
    /// and start an empty log.
    fn move_aside_and_start_fresh(&mut self) -> Result<()> {
        if self.log.read_only() {
            bail!(Io, "{} is not a store log (bad or missing header)", self.log.path.display());
        }
        let aside = corrupt_name(&self.dir, LOG_NAME);
        std::fs::rename(&self.log.path, &aside).map_err(|e| {
            err!(PersistFailed, "moving the unreadable {} aside failed: {}", self.log.path.display(), e)
        })?;
        err!(
            Io,
            "{} is not a store log (bad or missing header); kept it as {} and started an empty store",
            self.log.path.display(),
            aside.display()
        )
        .print_warning();
        checkpoint::remove(&self.dir);
        self.log.reopen()?;
        self.open_index()
    }
}

/// The warning for a batch a crash cut short: how many of its changes are in the store (always
/// the first ones: records are written in order).
fn cut_batch_warning(path: &std::path::Path, b: &OpenBatch) -> Error {
    if b.puts >= b.changes {
        err!(
            PersistFailed,
            "{}: a batch (an import) of {} changes starting at byte {} was cut short by a crash: {} of them are \
             in the store, all it had to make (only its end mark was lost)",
            path.display(),
            b.changes,
            b.at,
            b.puts
        )
    } else {
        err!(
            PersistFailed,
            "{}: a batch (an import) of {} changes starting at byte {} was cut short by a crash: {} of them are \
             in the store (the first ones, in the order of the import), the rest are not; import the file again \
             to finish it",
            path.display(),
            b.changes,
            b.at,
            b.puts
        )
    }
}
