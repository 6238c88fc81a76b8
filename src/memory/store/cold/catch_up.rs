//! Keeping the cold text index ([`super::recall`]) current: the groups appended to
//! `store.cold` read into its delta (merged into a new file when it is full), each key's newest
//! copy the only current one, and a copy no longer current taken out with its words counted
//! out (the writer notes, at open, which key each indexed copy has).

use super::recall::{decode_put, key_hash, ColdRecall, State};
use super::COLD_NAME;
use crate::error::Result;
use crate::limits::STORE_COLD_SCAN_MAX_KEYS;
use crate::memory::key::{Key, Tag};
use crate::memory::log::{self, LineReader, Record};
use crate::memory::store::recall::disk::FileDoc;
use crate::memory::store::recall::words_of;
use crate::memory::store::Store;
use std::fs::File;

impl Store {
    /// The writer, after opening the base: notes each indexed key's cold id (reading
    /// `store.cold` up to `covered`), and takes out the documents whose key the live store
    /// holds now.
    pub(super) fn cold_recall_note_keys(&mut self, covered: u64) -> Result<()> {
        let noted = core::mem::take(&mut self.cold_recall.open_keys);
        if covered == self.cold_recall.open_keys_end && noted.len() == self.cold_recall.next as usize {
            // Noted as the store opened store.cold, which the file covers exactly.
            return self.cold_recall_note_hashes(&noted);
        }
        // Each cold id's key hash and whether the live store holds the key.
        let mut keys: Vec<(u64, bool)> = Vec::new();
        {
            let Some(file) = self.cold_recall.file.as_ref() else { return Ok(()) };
            let mut reader = LineReader::new(file, covered);
            let mut scratch = Vec::with_capacity(log::READ_SCRATCH_BYTES);
            let mut group = 0usize;
            let mut first = true;
            while let Some(line) = reader.next(&mut scratch)? {
                let text = reader.text(&scratch, line.len)?;
                if core::mem::take(&mut first) {
                    continue;
                }
                match log::decode_cold(text) {
                    Ok(Record::Cleanup { .. }) => keys.truncate(group),
                    Ok(Record::Put { tags, .. }) => {
                        let Ok(key) = Key::from_tags(tags.iter().map(Tag::as_str)) else { continue };
                        keys.push((key_hash(&key), self.find(&key).is_some()));
                    }
                    Ok(Record::BatchEnd) => group = keys.len(),
                    _ => {}
                }
            }
            keys.truncate(group);
        }
        if keys.len() != self.cold_recall.next as usize {
            bail!(
                Io,
                "{} counts {} cold entries before byte {}, its index {}",
                COLD_NAME,
                keys.len(),
                covered,
                self.cold_recall.next
            );
        }
        self.cold_recall.newest.reserve(keys.len() + keys.len() / 2 + 1024);
        for (id, (h, live)) in keys.into_iter().enumerate() {
            let id = id as u32;
            if self.cold_recall.base.doc_of(id).is_none() {
                continue;
            }
            if live {
                self.cold_recall_kill(id)?;
            } else if let Some(old) = self.cold_recall.newest.insert(h, id) {
                self.cold_recall_kill(old)?;
            }
        }
        Ok(())
    }

    /// [`Store::cold_recall_note_keys`] from the key hashes noted as the store opened
    /// `store.cold` (`hashes[id]`, cold id `id`'s), reading no record: each key's newest copy
    /// noted, an older one taken out, then the copies of the keys the live store holds taken
    /// out (the live entries' keys hashed: at most the store's capacity). The same documents
    /// are left as by reading the records (a key is known by its hash, as `newest` knows it).
    fn cold_recall_note_hashes(&mut self, hashes: &[u64]) -> Result<()> {
        self.cold_recall.newest.reserve(hashes.len() + hashes.len() / 2 + 1024);
        for (id, &h) in hashes.iter().enumerate() {
            let id = id as u32;
            if self.cold_recall.base.doc_of(id).is_none() {
                continue;
            }
            if let Some(old) = self.cold_recall.newest.insert(h, id) {
                self.cold_recall_kill(old)?;
            }
        }
        let live: Vec<u64> = self.ids().filter_map(|id| self.key(id)).map(|k| key_hash(&k)).collect();
        for h in live {
            if let Some(id) = self.cold_recall.newest.remove(h) {
                self.cold_recall_kill(id)?;
            }
        }
        Ok(())
    }

    /// Reads the whole groups of `store.cold` after what is indexed into the delta (the
    /// writer after every append to it; any store when it opens the segment). Merges into a
    /// new file whenever the delta is full.
    pub(in crate::memory::store) fn cold_recall_catch_up(&mut self) -> Result<()> {
        if self.cold_recall.state != State::Ready {
            return Ok(());
        }
        if self.cold_recall.file.is_none() {
            match File::open(self.dir.join(COLD_NAME)) {
                Ok(f) => self.cold_recall.file = Some(f),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => bail!(Io, "opening {} failed: {}", COLD_NAME, e),
            }
            if self.cold_recall.room == 0 {
                // Opened before the cold store existed: sized now.
                self.cold_recall.state = State::Stale;
                return self.cold_recall_ready();
            }
        }
        let res = self.cold_recall_read_groups();
        if res.is_err() {
            self.cold_recall.state = State::Stale;
        }
        res
    }

    fn cold_recall_read_groups(&mut self) -> Result<()> {
        let Some(file) = self.cold_recall.file.as_ref() else { return Ok(()) };
        let len = file.metadata().map_err(|e| err!(Io, "reading the size of {} failed: {}", COLD_NAME, e))?.len();
        let mut at = self.cold_recall.indexed;
        let mut group = core::mem::take(&mut self.cold_recall.group);
        let res = (|| -> Result<()> {
            while at < len {
                // One group: its puts' places, then (at its end) each indexed.
                group.clear();
                let end = self.cold_group_at(at, len, &mut group)?;
                let Some(end) = end else { break };
                for &(offset, rec_len) in &group {
                    let id = self.cold_recall.next;
                    if id as usize >= self.cold_recall.room {
                        bail!(
                            CapacityExceeded,
                            "{} holds more entries than its text index was sized for ({}); it is sized again at its \
                             next rebuild (at most STORE_COLD_SCAN_MAX_KEYS, {})",
                            COLD_NAME,
                            self.cold_recall.room,
                            STORE_COLD_SCAN_MAX_KEYS
                        );
                    }
                    self.cold_recall.next += 1;
                    self.cold_recall_add(id, offset, rec_len)?;
                }
                self.cold_recall.indexed = end;
                at = end;
            }
            Ok(())
        })();
        group.clear();
        self.cold_recall.group = group;
        res
    }

    /// Reads the group (or the header) at `at` of `store.cold` (`len` bytes): its puts'
    /// places into `group`; returns where it ends, `None` when it is not whole yet.
    fn cold_group_at(&mut self, at: u64, len: u64, group: &mut Vec<(u64, u32)>) -> Result<Option<u64>> {
        let Some(file) = self.cold_recall.file.as_ref() else { return Ok(None) };
        group_at(file, at, len, &mut self.rbuf, group)
    }

    /// Indexes the cold `put` at `offset` as document `id`, unless the live store holds its
    /// key; an older copy of its key the writer indexed is taken out.
    fn cold_recall_add(&mut self, id: u32, offset: u64, len: u32) -> Result<()> {
        self.cold_recall.read(offset, len)?;
        let (_, key, _) = decode_put(&self.cold_recall.rec)?;
        if self.find(&key).is_some() {
            return Ok(());
        }
        self.cold_recall.admit(id, &key, offset, len)?;
        if !self.cold_recall.index_doc(id, offset, len)? {
            self.cold_recall_merge()?;
            self.cold_recall.read(offset, len)?;
            if !self.cold_recall.index_doc(id, offset, len)? {
                bail!(Internal, "the cold text index's delta is full right after a merge");
            }
        }
        Ok(())
    }

    /// Takes cold id `id`'s document out (counting its words out), wherever it is.
    pub(super) fn cold_recall_kill(&mut self, id: u32) -> Result<()> {
        self.cold_recall.kill(id)
    }
}

/// Reads the group (or the header) at `at` of `file` (`store.cold`, `len` bytes) through
/// `scratch`: its puts' places into `group`; returns where it ends, `None` when it is not
/// whole yet.
fn group_at(file: &File, at: u64, len: u64, scratch: &mut Vec<u8>, group: &mut Vec<(u64, u32)>) -> Result<Option<u64>> {
    {
        let mut reader = LineReader::starting_at(file, at, len);
        while let Some(line) = reader.next(scratch)? {
            if !line.complete {
                break;
            }
            let text = reader.text(scratch, line.len)?;
            match log::decode_cold(text) {
                Ok(Record::ColdHeader { .. }) if line.offset == 0 => return Ok(Some(line.len as u64 + 1)),
                Ok(Record::Cleanup { .. }) => group.clear(),
                Ok(Record::Put { .. }) => group.push((line.offset, line.len as u32 + 1)),
                Ok(Record::BatchEnd) => return Ok(Some(line.offset + line.len as u64 + 1)),
                // Damage is skipped, as the cold store's readers skip it.
                _ => {}
            }
        }
    }
    Ok(None)
}

impl Store {
    /// After an append to `store.cold`: its new groups into the segment, when it is built. A
    /// failure leaves it stale (rebuilt at its next use), with a warning.
    pub(in crate::memory::store) fn cold_recall_sync(&mut self) {
        if let Err(e) = self.cold_recall_catch_up() {
            e.context(format_args!("the cold store's text index will be rebuilt")).print_warning();
        }
    }

    /// The live store created `key`: a cold copy of it the writer indexed is no longer
    /// current.
    pub(in crate::memory::store) fn cold_recall_forget(&mut self, key: &Key) {
        if self.cold_recall.state != State::Ready || self.log.read_only() {
            return;
        }
        let Some(id) = self.cold_recall.newest.remove(key_hash(key)) else { return };
        if let Err(e) = self.cold_recall_kill(id) {
            self.cold_recall.state = State::Stale;
            e.context(format_args!("the cold store's text index will be rebuilt")).print_warning();
        }
    }
}

impl ColdRecall {
    /// Document `id` (the cold `put` of `key` at `offset`, `len` bytes; the live store does
    /// not hold the key) is the newest copy of its key read after the file: an older copy read
    /// after it is taken out (the record read again into `rec`).
    fn admit(&mut self, id: u32, key: &Key, offset: u64, len: u32) -> Result<()> {
        // (A reader's table holds the keys of what it read after the file only.)
        if let Some(old) = self.newest.insert(key_hash(key), id) {
            self.kill(old)?;
            self.read(offset, len)?;
        }
        Ok(())
    }

    /// Indexes the record in `rec` (at `offset`, `len` bytes) as document `id` into the
    /// delta; `Ok(false)` when the delta has no room left for it (merged first by the writer).
    fn index_doc(&mut self, id: u32, offset: u64, len: u32) -> Result<bool> {
        self.reserve();
        // Room: a word and its text take at most a byte each of the record.
        if !self.index.has_room(1, len as usize, 2 * len as usize) {
            if self.index.is_empty() {
                bail!(
                    CapacityExceeded,
                    "a cold entry's words are more than the text index's delta holds (TEXT_DELTA_*)"
                );
            }
            return Ok(false);
        }
        let d = self.index.start_doc(id, offset, len)?;
        let index = &mut self.index;
        let (_, key, value) = decode_put(&self.rec)?;
        words_of(key.tags(), value, &mut self.val, |w| index.add_word(d, w))?;
        self.index.finish_doc(d);
        Ok(true)
    }

    /// Takes cold id `id`'s document out (counting its words out), wherever it is.
    pub(super) fn kill(&mut self, id: u32) -> Result<()> {
        let c = self;
        c.reserve();
        c.note_kill(id);
        if let Some((_, doc)) = c.index.doc_of(id) {
            let Some(d) = c.index.start_remove(id) else { return Ok(()) };
            c.read(doc.offset, doc.rec_len)?;
            let (_, key, value) = decode_put(&c.rec)?;
            let index = &mut c.index;
            words_of(key.tags(), value, &mut c.val, |w| {
                index.remove_word(w);
                Ok(())
            })?;
            c.index.finish_remove(d);
        } else if let Some(d) = c.base.doc_of(id) {
            let FileDoc { offset, rec_len, .. } = c.base.file_doc(d)?;
            c.read(offset, rec_len)?;
            c.index.start_base_kill();
            let (_, key, value) = decode_put(&c.rec)?;
            let index = &mut c.index;
            words_of(key.tags(), value, &mut c.val, |w| index.kill_base_word(w))?;
            c.base.kill(d);
        }
        Ok(())
    }

    /// A reader's catch-up without the store (the checkpoint read in place, `view::tail`):
    /// the whole groups of `store.cold` after what the base covers read into the delta as a
    /// read-only store reads them (the same cold ids, the same documents; `live` says whether
    /// the live store holds a key), through `scratch`. `Ok(false)` where the store would merge
    /// (its delta full) or refuse (more ids than the room): the caller opens the store whole.
    pub(in crate::memory::store) fn catch_up_reading(
        &mut self,
        live: &mut dyn FnMut(&Key) -> Result<bool>,
        scratch: &mut Vec<u8>,
    ) -> Result<bool> {
        let Some(file) = self.file.as_ref() else { return Ok(true) };
        let len = file.metadata().map_err(|e| err!(Io, "reading the size of {} failed: {}", COLD_NAME, e))?.len();
        let mut group = Vec::new();
        while self.indexed < len {
            group.clear();
            let Some(file) = self.file.as_ref() else { return Ok(true) };
            let Some(end) = group_at(file, self.indexed, len, scratch, &mut group)? else { break };
            for &(offset, rec_len) in &group {
                let id = self.next;
                if id as usize >= self.room {
                    return Ok(false);
                }
                self.next += 1;
                self.read(offset, rec_len)?;
                let (_, key, _) = decode_put(&self.rec)?;
                if live(&key)? {
                    continue;
                }
                self.admit(id, &key, offset, rec_len)?;
                if !self.index_doc(id, offset, rec_len)? {
                    return Ok(false);
                }
            }
            self.indexed = end;
        }
        Ok(true)
    }
}
