//! The checkpoint read in place: what the read-only commands (`status`, `memory query`,
//! `memory search`, `memory show`, `memory stats`) open instead of the whole store when
//! `store.ckpt` covers `store.log` exactly, so that one question costs what it reads, not the
//! store's size.
//!
//! Opening reads the log's header line, the checkpoint's header (160 bytes) and the 4 KiB of
//! log before the length it covers, and checks that the checkpoint names this log (its
//! identity, exactly its length, the same bytes before it) and is of this format and size:
//! `status` needs nothing more (the header counts the entries). A tag query then reads the tag
//! names, the tag directory, the posting list of the tag that drives it (or of each optional
//! tag), and the column blocks ([`STORE_CHECKPOINT_BLOCK_BYTES`] each, one cached per column)
//! of the entries it looks at; a ranked search reads `store.fts` in place (see
//! [`super::recall_disk`]: its page tables, the dictionary pages, skip groups and blocks of
//! its words, the pages of lengths of the documents it scores and of records of those it
//! keeps) and the location blocks of the entries it keeps; with the cold entries, the same
//! of `store.cold.fts` when `store.cold` starts with what it covers, the groups appended after
//! it read into a delta (`ColdRecall::open_in_place`), and, for
//! each cold hit it keeps, its record in `store.cold` and the posting list of its key's
//! rarest tag (a cold copy of a key the live store holds is not current). Every section and
//! block is checked against its CRC-32 when read. The query is answered by the same code as
//! over the tables in RAM (`query::Tables`, `recall::rank_two`), so the answers are the same.
//!
//! Whenever the checkpoint does not cover the log exactly (an agent appending now, a crash
//! before the next checkpoint, another format) [`StoreView::open`] says `None`. The read-only
//! commands then lay the log's records after the checkpoint over it (`tail`: at most
//! `STORE_VIEW_TAIL_MAX_BYTES` of them, read as replay reads them); anything else, and a
//! question that does not answer (a ranked search whose `store.fts` does not fit, statistics
//! after links changed), opens the store whole
//! ([`super::Store::open_read_only_with_capacity`]), which replays what the checkpoint lacks.
//! A damaged section or block found while answering is an error; the caller then warns and
//! opens the store whole too, which finds the damage and replays the log.
//! Nothing is ever written.

use super::checkpoint::{
    le32, le64, Head, CHECKPOINT_NAME, COLUMN_BLOCK, COLUMN_WIDTHS, DIRECTORY_ENTRY, FORMAT, TAIL_BYTES,
};
use super::cold::recall::ColdRecall;
use super::query::{driver, lists_read, resolve, run, Tables};
use super::rank::Ranked;
use super::recall::fulltext::FullText;
use super::recall::{rank_two, Ask, Live};
use super::recall_disk::DiskIndex;
use super::recall_file::{Header as FtsHeader, HEADER_BYTES as FTS_HEADER_BYTES, RECALL_FILE_NAME};
use super::slots::{unpack_location, TagSet};
use super::{room_for, EntryId, EntryInfo, LOG_NAME};
use crate::error::{Error, Result};
use crate::limits::{
    store_max_tags, KEY_MAX_TAGS, RANK_MAX_RESULTS, STORE_CHECKPOINT_BLOCK_BYTES, STORE_MAX_ENTRIES, STORE_MIN_ENTRIES,
    STORE_VIEW_READ_BYTES, TAG_MAX_BYTES,
};
use crate::memory::hash::{crc32, crc32_continue};
use crate::memory::key::Key;
use crate::memory::log::{self, Record};
use crate::memory::query::{Archived, Query, Results};
use core::cell::RefCell;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

pub mod tail;

/// Most bytes of the log's header line.
const LOG_HEADER_MAX: usize = 256;

/// One cached column block.
struct Cached {
    /// Which block (`u64::MAX`: none yet).
    block: u64,
    len: usize,
    data: [u8; COLUMN_BLOCK],
}

/// The store's checkpoint opened for reading in place. See the module documentation.
pub struct StoreView {
    dir: PathBuf,
    file: File,
    head: Head,
    cap: usize,
    /// The tag names (ids 1.. in order) and where each ends in it; empty until a query.
    names: String,
    name_ends: Vec<u32>,
    /// Per tag id (index = id - 1): count, archived count, list CRC; where its list starts.
    directory: Vec<(u32, u32, u32, u64)>,
    /// The posting lists read for the current question.
    lists: Vec<(u16, Vec<u32>)>,
    /// The CRC of every column block, and where each column's start in it.
    blocks: Vec<u32>,
    block_base: [usize; COLUMN_WIDTHS.len()],
    cache: RefCell<Vec<Cached>>,
    /// The first failure met while answering through [`Tables`] (whose reads cannot fail).
    fault: RefCell<Option<Error>>,
    scratch: Vec<u8>,
    /// The tag ids by the hash of their names (`name_hash`), then by id, for the tail's many
    /// lookups (`tail`); empty otherwise (a question's few lookups scan the names).
    by_name: Vec<(u64, u16)>,
}

fn read_at(file: &File, buf: &mut [u8], at: u64, what: &str) -> Result<()> {
    file.read_exact_at(buf, at)
        .map_err(|e| err!(Io, "reading {} bytes of {} at byte {} failed: {}", buf.len(), what, at, e))
}

/// The log's identity and the bytes of its header line, if it is a store log of this format.
fn log_identity(log: &File) -> Option<(u64, u64)> {
    let mut head = [0u8; LOG_HEADER_MAX];
    let mut got = 0;
    while got < head.len() {
        match log.read_at(head.get_mut(got..)?, got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    let head = crate::bytes::take(&head, got);
    let end = head.iter().position(|&b| b == b'\n')?;
    match log::decode(head.get(..end)?) {
        Ok(Record::Header { version, store }) if version == log::FORMAT_VERSION => Some((store, end as u64 + 1)),
        _ => None,
    }
}

impl StoreView {
    /// Opens the checkpoint of the store in `dir` for reading in place, for a store of
    /// `capacity` entries (`memory.store_capacity`). `None` when it cannot answer for the log
    /// as it is now: no checkpoint or no log, another format, or not exactly this log at this
    /// length (the caller opens the store whole instead). Writes nothing.
    pub fn open(dir: &Path, capacity: usize) -> Result<Option<StoreView>> {
        Ok(StoreView::open_covering(dir, capacity, 0)?.map(|(view, _, _)| view))
    }

    /// [`StoreView::open`] of a checkpoint that covers the log's first bytes, with at most
    /// `tail_max` bytes of log after it (0: exactly the log): the view, the log's handle and
    /// its length now (the tail is the caller's, `tail::TailView`).
    fn open_covering(dir: &Path, capacity: usize, tail_max: u64) -> Result<Option<(StoreView, File, u64)>> {
        let cap = capacity.clamp(STORE_MIN_ENTRIES, STORE_MAX_ENTRIES);
        let Ok(logf) = File::open(dir.join(LOG_NAME)) else { return Ok(None) };
        let Ok(file) = File::open(dir.join(CHECKPOINT_NAME)) else { return Ok(None) };
        let (Ok(log_meta), Ok(meta)) = (logf.metadata(), file.metadata()) else { return Ok(None) };
        let Some((store, header_bytes)) = log_identity(&logf) else { return Ok(None) };
        let mut raw = [0u8; super::checkpoint::HEADER_BYTES];
        if file.read_exact_at(&mut raw, 0).is_err() || le32(&raw, 8) != FORMAT {
            return Ok(None);
        }
        let Ok(head) = Head::parse(&raw) else { return Ok(None) };
        let l = head.layout;
        let room = room_for(cap) as u64;
        // The log as the checkpoint was taken of it, exactly; sizes this capacity holds (what
        // is read later is sized from these, so they bound it).
        if head.store != store
            || head.covered > log_meta.len()
            || log_meta.len() - head.covered > tail_max
            || head.header_bytes != header_bytes
            || meta.len() != l.file_len()
            || l.next_id > room
            || u64::from(head.live) > cap as u64
            || head.archived > head.live
            || l.tags == 0
            || l.tags > store_max_tags(cap) + 1
            || l.tag_text > (l.tags * TAG_MAX_BYTES) as u64
            || l.postings > room * KEY_MAX_TAGS as u64
        {
            return Ok(None);
        }
        let start = head.covered.saturating_sub(TAIL_BYTES);
        let mut tail = [0u8; TAIL_BYTES as usize];
        let tail = tail.get_mut(..(head.covered - start) as usize).unwrap_or(&mut []);
        if logf.read_exact_at(tail, start).is_err() || crc32(tail) != head.tail {
            return Ok(None);
        }
        let mut block_base = [0usize; COLUMN_WIDTHS.len()];
        let mut at = 0usize;
        for (col, base) in block_base.iter_mut().enumerate() {
            *base = at;
            at += l.blocks(col) as usize;
        }
        let cache = (0..COLUMN_WIDTHS.len()).map(|_| Cached { block: u64::MAX, len: 0, data: [0; COLUMN_BLOCK] });
        let len = log_meta.len();
        let view = StoreView {
            dir: dir.to_path_buf(),
            file,
            head,
            cap,
            names: String::new(),
            name_ends: Vec::new(),
            directory: Vec::new(),
            lists: Vec::new(),
            blocks: Vec::new(),
            block_base,
            cache: RefCell::new(cache.collect()),
            fault: RefCell::new(None),
            scratch: Vec::new(),
            by_name: Vec::new(),
        };
        Ok(Some((view, logf, len)))
    }

    /// Live entries (archived included).
    pub fn len(&self) -> usize {
        self.head.live as usize
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.head.live == 0
    }

    /// Size of the log in bytes (which the checkpoint covers exactly).
    pub fn log_bytes(&self) -> u64 {
        self.head.covered
    }

    /// Runs `q` as [`super::Store::query`] does, leaving the best results in `out`. A damaged
    /// section or block is an `IO` error (the caller opens the store whole instead).
    pub fn query(&mut self, q: &Query, out: &mut Results) -> Result<()> {
        out.clear();
        self.prepare()?;
        self.lists.clear();
        let mut want = [0u16; KEY_MAX_TAGS];
        let n = lists_read(&*self, q, &mut want);
        for &t in crate::bytes::take(&want, n) {
            self.load_list(t)?;
        }
        run(&*self, q, out);
        self.take_fault()
    }

    /// The live entry whose key is `key`, as [`super::Store::find`] finds it: reads the
    /// posting list of the key's rarest tag and the tag columns of the entries on it.
    pub fn find(&mut self, key: &Key) -> Result<Option<EntryId>> {
        self.prepare()?;
        self.lists.clear();
        let mut ids = [0u16; KEY_MAX_TAGS];
        let (req, all_known) = resolve(&*self, Some(key), &mut ids);
        let (true, Some(d)) = (all_known, driver(&*self, req)) else { return Ok(None) };
        let mut want = [0u16; KEY_MAX_TAGS];
        for (w, &t) in want.iter_mut().zip(req) {
            *w = t;
        }
        self.load_list(d)?;
        let list = self.lists.iter().find(|(t, _)| *t == d).map(|(_, l)| l.as_slice()).unwrap_or(&[]);
        let found = list.iter().copied().find(|&id| self.location(id).is_some() && self.tagset(id) == want);
        self.take_fault()?;
        Ok(found)
    }

    /// The value of the live entry with exactly the tags of `key` (`memory show`), into
    /// `out`: `Ok(false)` when the store has none. Reads the posting list of the key's rarest
    /// tag, the tag columns of the entries on it, and the entry's record in the log (checked
    /// by its CRC, and that it is that entry's).
    pub fn value_of(&mut self, key: &Key, out: &mut String) -> Result<bool> {
        let Some(id) = self.find(key)? else { return Ok(false) };
        let Some((offset, len, _)) = self.location(id) else { return Ok(false) };
        record_value(&self.dir, id, offset, len, out).map(|_| true)
    }

    /// The store's statistics as [`super::Store::stats`] gives them for the store opened from
    /// this checkpoint (nothing replayed: it covers the log exactly), for `memory stats`: the
    /// header's counts, the tag directory, and the location, created and hits columns read
    /// block by block, each checked (about 16 bytes per id). `ram_bytes` is what this view
    /// holds.
    pub fn stats(&mut self) -> Result<super::Stats> {
        self.prepare()?;
        let h = &self.head;
        let mut st = super::Stats {
            capacity: self.cap,
            tags: self.directory.iter().filter(|d| d.0 > 0).count(),
            max_tags: crate::limits::store_max_tags(self.cap),
            links: h.layout.links as usize,
            log_bytes: h.covered,
            live_bytes: h.live_bytes.min(h.covered),
            garbage_bytes: h.covered.saturating_sub(h.live_bytes + h.header_bytes),
            corrupt_records: h.corrupt,
            from_checkpoint: true,
            ..super::Stats::default()
        };
        tally_entries(&*self, h.layout.next_id as EntryId, &mut st);
        self.take_fault()?;
        if (st.entries, st.archived) != (h.live as usize, h.archived as usize) {
            bail!(
                Io,
                "{} is damaged (its columns list {} entries, its header {})",
                CHECKPOINT_NAME,
                st.entries,
                h.live
            );
        }
        st.ram_bytes = self.ram_bytes();
        Ok(st)
    }

    /// The bytes this view holds (its tables and caches).
    fn ram_bytes(&self) -> usize {
        self.names.capacity()
            + self.name_ends.capacity() * 4
            + self.directory.capacity() * core::mem::size_of::<(u32, u32, u32, u64)>()
            + self.blocks.capacity() * 4
            + COLUMN_WIDTHS.len() * core::mem::size_of::<Cached>()
            + self.scratch.capacity()
            + self.by_name.capacity() * core::mem::size_of::<(u64, u16)>()
    }

    /// The metadata of entry `id`, as [`super::Store::info`] gives it.
    pub fn info(&self, id: EntryId) -> Result<Option<EntryInfo>> {
        let info = self.entry_info(id);
        self.take_fault().map(|_| info)
    }

    /// The key of entry `id`, as [`super::Store::key`] gives it.
    pub fn key(&self, id: EntryId) -> Result<Option<Key>> {
        let key = self.entry_key(id);
        self.take_fault().map(|_| key)
    }

    /// Ranks the entries by the words of `query` as [`super::Store::rank_where`] does (no tag
    /// filter) over `store.fts` read in place, and the cold entries with them over `cold` (a
    /// segment read in place, `ColdRecall::open_in_place`; a closed one leaves them out),
    /// with the same code (`rank_two`). `Ok(false)` when `store.fts` does not cover the log
    /// exactly (the caller opens the store whole, which brings the index up to date).
    pub fn rank(
        &mut self,
        query: &str,
        limit: usize,
        archived: Archived,
        cold: &mut ColdRecall,
        out: &mut Ranked,
    ) -> Result<bool> {
        out.clear();
        let limit = limit.min(RANK_MAX_RESULTS).min(out.capacity());
        let Some((file, h)) = self.fts_file() else { return Ok(false) };
        let room = room_for(self.cap);
        // The file covers the log: every document in it is current, and read only as scored;
        // no delta.
        let mut disk = DiskIndex::empty();
        disk.open_in_place(file, h, room)?;
        self.prepare()?;
        let ask = Ask { query, limit, archived, tags: None, rarest: false, cold: true };
        let mut live = ViewLive { view: self, archived };
        rank_two(&mut disk, &FullText::unreserved(), &mut live, true, cold, &ask, out)?;
        out.sort();
        self.take_fault().map(|_| true)
    }

    /// `store.fts` and its header, if it was taken of the log the checkpoint covers: the same
    /// identity, length and bytes before it (the same 4 KiB the checkpoint's CRC is of), and
    /// every live entry in it (a file written by an early merge, a delta full while the index
    /// was built, before a crash or an exit without closing, covers the log but lacks the
    /// entries of the delta it had then).
    fn fts_file(&self) -> Option<(File, FtsHeader)> {
        let file = File::open(self.dir.join(RECALL_FILE_NAME)).ok()?;
        let mut raw = [0u8; FTS_HEADER_BYTES];
        file.read_exact_at(&mut raw, 0).ok()?;
        let h = FtsHeader::parse(&raw).ok()?;
        let same = h.store == self.head.store
            && h.covered == self.head.covered
            && h.tail == self.head.tail
            && h.docs as usize <= room_for(self.cap)
            && h.docs == self.head.live;
        same.then_some((file, h))
    }

    // ---------------------------------------------------------------------------------------
    // Reading the sections
    // ---------------------------------------------------------------------------------------

    /// Reads the tag names, the directory and the column blocks' CRCs (once).
    fn prepare(&mut self) -> Result<()> {
        if self.blocks.is_empty() {
            self.load_names()?;
            self.load_directory()?;
            self.load_blocks()?;
        }
        Ok(())
    }

    /// Reads `len` bytes at `at` into `scratch` in [`STORE_VIEW_READ_BYTES`] pieces, calling
    /// `each` on every piece; returns the CRC of all of them.
    fn read_section(&mut self, at: u64, len: u64, mut each: impl FnMut(&[u8]) -> Result<()>) -> Result<u32> {
        self.scratch.resize(STORE_VIEW_READ_BYTES, 0);
        let mut crc = 0u32;
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(STORE_VIEW_READ_BYTES as u64) as usize;
            let buf = self.scratch.get_mut(..n).unwrap_or(&mut []);
            read_at(&self.file, buf, at + done, CHECKPOINT_NAME)?;
            crc = crc32_continue(crc, buf);
            each(buf)?;
            done += n as u64;
        }
        Ok(crc)
    }

    fn load_names(&mut self) -> Result<()> {
        let l = self.head.layout;
        let count = l.tags.saturating_sub(1);
        let mut lens: Vec<u8> = Vec::with_capacity(count);
        let mut text: Vec<u8> = Vec::with_capacity(l.tag_text as usize);
        let crc = self.read_section(l.names_at(), count as u64 + l.tag_text, |piece| {
            for &b in piece {
                if lens.len() < count {
                    lens.push(b);
                } else {
                    text.push(b);
                }
            }
            Ok(())
        })?;
        if crc != self.head.names_crc || lens.iter().map(|&n| u64::from(n)).sum::<u64>() != l.tag_text {
            bail!(Io, "{} is damaged (checksum of its tag names)", CHECKPOINT_NAME);
        }
        self.names = String::from_utf8(text).map_err(|_| err!(Io, "{}: a tag name is not UTF-8", CHECKPOINT_NAME))?;
        let mut end = 0u32;
        self.name_ends = lens
            .iter()
            .map(|&n| {
                end += u32::from(n);
                end
            })
            .collect();
        Ok(())
    }

    fn load_directory(&mut self) -> Result<()> {
        let l = self.head.layout;
        let count = l.tags.saturating_sub(1);
        let mut dir: Vec<(u32, u32, u32, u64)> = Vec::with_capacity(count);
        let mut entry = [0u8; DIRECTORY_ENTRY];
        let mut have = 0usize;
        let mut next_at = l.postings_at();
        let live = self.head.live;
        let crc = self.read_section(l.directory_at(), (DIRECTORY_ENTRY * count) as u64, |piece| {
            for &b in piece {
                if let Some(slot) = entry.get_mut(have) {
                    *slot = b;
                }
                have += 1;
                if have == DIRECTORY_ENTRY {
                    let (n, archived, list_crc) = (le32(&entry, 0), le32(&entry, 4), le32(&entry, 8));
                    if n > live || archived > n {
                        bail!(Io, "{} is damaged (a tag of {} entries, {} archived)", CHECKPOINT_NAME, n, archived);
                    }
                    dir.push((n, archived, list_crc, next_at));
                    next_at += 4 * u64::from(n);
                    have = 0;
                }
            }
            Ok(())
        })?;
        if crc != self.head.directory_crc || next_at != l.blocks_at() {
            bail!(Io, "{} is damaged (checksum of its tag directory)", CHECKPOINT_NAME);
        }
        self.directory = dir;
        Ok(())
    }

    fn load_blocks(&mut self) -> Result<()> {
        let l = self.head.layout;
        let total: u64 = (0..COLUMN_WIDTHS.len()).map(|c| l.blocks(c)).sum();
        let mut blocks: Vec<u32> = Vec::with_capacity(total as usize);
        let crc = self.read_section(l.blocks_at(), 4 * total, |piece| {
            blocks.extend(piece.chunks_exact(4).map(|b| le32(b, 0)));
            Ok(())
        })?;
        if crc != self.head.blocks_crc {
            bail!(Io, "{} is damaged (checksum of its block checksums)", CHECKPOINT_NAME);
        }
        self.blocks = blocks;
        Ok(())
    }

    /// Reads the posting list of tag `t` (ids in increasing order, all below the ids in use).
    fn load_list(&mut self, t: u16) -> Result<()> {
        if self.lists.iter().any(|(id, _)| *id == t) {
            return Ok(());
        }
        let Some(&(n, _, want, at)) = self.directory.get(usize::from(t).wrapping_sub(1)) else {
            bail!(Io, "{}: no tag {}", CHECKPOINT_NAME, t);
        };
        let next_id = self.head.layout.next_id;
        let mut list: Vec<u32> = Vec::with_capacity(n as usize);
        let crc = self.read_section(at, 4 * u64::from(n), |piece| {
            for b in piece.chunks_exact(4) {
                let id = le32(b, 0);
                if u64::from(id) >= next_id || list.last().is_some_and(|&last| last >= id) {
                    bail!(Io, "{} is damaged (the list of tag {} is out of order)", CHECKPOINT_NAME, t);
                }
                list.push(id);
            }
            Ok(())
        })?;
        if crc != want {
            bail!(Io, "{} is damaged (checksum of the list of tag {})", CHECKPOINT_NAME, t);
        }
        self.lists.push((t, list));
        Ok(())
    }

    // ---------------------------------------------------------------------------------------
    // Entries, a column block at a time
    // ---------------------------------------------------------------------------------------

    /// Records the first failure met while answering.
    fn failed(&self, e: Error) {
        if let Ok(mut f) = self.fault.try_borrow_mut() {
            if f.is_none() {
                *f = Some(e);
            }
        }
    }

    fn take_fault(&self) -> Result<()> {
        match self.fault.try_borrow_mut().map(|mut f| f.take()) {
            Ok(Some(e)) => Err(e),
            Ok(None) => Ok(()),
            Err(_) => Err(err!(Internal, "the checkpoint view's fault slot is in use")),
        }
    }

    /// Calls `f` with the bytes of `id`'s value in column `col`, reading (and checking) its
    /// block unless it is the one cached. `None` past the ids in use, or on a failure
    /// (recorded).
    fn with_value<R>(&self, col: usize, id: EntryId, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let width = *COLUMN_WIDTHS.get(col)?;
        let l = self.head.layout;
        if u64::from(id) >= l.next_id {
            return None;
        }
        let per = (COLUMN_BLOCK / width) as u64;
        let (b, within) = (u64::from(id) / per, (u64::from(id) % per) as usize * width);
        let Ok(mut cache) = self.cache.try_borrow_mut() else {
            self.failed(err!(Internal, "the checkpoint view's block cache is in use"));
            return None;
        };
        let c = cache.get_mut(col)?;
        if c.block != b {
            let len = (l.column_len(col) - b * COLUMN_BLOCK as u64).min(COLUMN_BLOCK as u64) as usize;
            let want = self.block_base.get(col).and_then(|&base| self.blocks.get(base + b as usize));
            let buf = c.data.get_mut(..len).unwrap_or(&mut []);
            let res = read_at(&self.file, buf, l.column_at(col) + b * COLUMN_BLOCK as u64, CHECKPOINT_NAME);
            if let Err(e) = res {
                c.block = u64::MAX;
                self.failed(e);
                return None;
            }
            if want != Some(&crc32(buf)) {
                c.block = u64::MAX;
                self.failed(err!(
                    Io,
                    "{} is damaged (checksum of block {} of column {}, {} bytes of {} each)",
                    CHECKPOINT_NAME,
                    b,
                    col,
                    STORE_CHECKPOINT_BLOCK_BYTES,
                    width
                ));
                return None;
            }
            c.block = b;
            c.len = len;
        }
        c.data.get(..c.len).and_then(|d| d.get(within..within + width)).map(f)
    }

    /// Offset, length and archived flag of `id`, if live.
    fn location(&self, id: EntryId) -> Option<(u64, u32, bool)> {
        self.with_value(0, id, |b| unpack_location(le64(b, 0))).flatten()
    }

    fn u32_of(&self, col: usize, id: EntryId) -> u32 {
        self.with_value(col, id, |b| le32(b, 0)).unwrap_or(0)
    }

    fn name(&self, t: u16) -> &str {
        let i = usize::from(t);
        let end = self.name_ends.get(i.wrapping_sub(1)).map_or(0, |&e| e as usize);
        let start = if i <= 1 { 0 } else { self.name_ends.get(i - 2).map_or(end, |&e| e as usize) };
        self.names.get(start..end).unwrap_or("")
    }

    fn entry_key(&self, id: EntryId) -> Option<Key> {
        self.location(id)?;
        let set = self.tagset(id);
        Key::from_tags(super::slots::unpadded(&set).iter().map(|&t| self.name(t))).ok()
    }

    fn entry_info(&self, id: EntryId) -> Option<EntryInfo> {
        let (_, _, archived) = self.location(id)?;
        Some(EntryInfo {
            id,
            key: self.entry_key(id)?,
            version: self.u32_of(4, id),
            created: u64::from(self.u32_of(1, id)),
            accessed: u64::from(self.u32_of(2, id)),
            hits: u64::from(self.u32_of(3, id)),
            archived,
        })
    }
}

/// FNV-1a of a tag's name, by which the tail's lookups find its id.
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// Reads the value of entry `id` from its `put` record (`len` bytes at `offset` in the log
/// of the store in `dir`) into `out`, checked by its CRC and that it is that entry's.
fn record_value(dir: &Path, id: EntryId, offset: u64, len: u32, out: &mut String) -> Result<()> {
    let path = dir.join(LOG_NAME);
    let logf = File::open(&path).map_err(|e| err!(Io, "opening {} failed: {}", path.display(), e))?;
    let mut rec = vec![0u8; len as usize];
    logf.read_exact_at(&mut rec, offset)
        .map_err(|e| err!(Io, "reading the record of entry {} in {} failed: {}", id, path.display(), e))?;
    let line = rec.strip_suffix(b"\n").unwrap_or(&rec);
    match log::decode(line) {
        Ok(Record::Put { head, value_escaped, .. }) if head.id == id => {
            out.clear();
            log::decode_str(value_escaped, out)
        }
        _ => bail!(Io, "{} at byte {}: not the record of entry {} (the log changed?)", path.display(), offset, id),
    }
}

/// [`Live`] for the checkpoint read in place, with a query's filter.
struct ViewLive<'a> {
    view: &'a mut StoreView,
    archived: Archived,
}

impl Live for ViewLive<'_> {
    fn admits(&self, id: EntryId) -> bool {
        self.view.location(id).is_some_and(|(_, _, a)| self.archived.admits(a))
    }

    fn holds(&mut self, key: &Key) -> Result<bool> {
        self.view.find(key).map(|id| id.is_some())
    }
}

impl Tables for StoreView {
    fn tag(&self, name: &str) -> Option<u16> {
        if !self.by_name.is_empty() {
            // The first id of that name, as the scan below finds it.
            let h = name_hash(name);
            let from = self.by_name.partition_point(|&(x, _)| x < h);
            let same = self.by_name.get(from..).unwrap_or(&[]).iter().take_while(|&&(x, _)| x == h);
            return same.map(|&(_, t)| t).find(|&t| !name.is_empty() && self.name(t) == name);
        }
        // Tag ids in use are below 65,535; names of unused ids are empty.
        (1..self.head.layout.tags).find(|&i| !name.is_empty() && self.name(i as u16) == name).map(|i| i as u16)
    }

    fn tag_counts(&self, t: u16) -> (u32, u32) {
        self.directory.get(usize::from(t).wrapping_sub(1)).map_or((0, 0), |&(n, a, _, _)| (n, a))
    }

    fn list(&self, t: u16) -> &[u32] {
        match self.lists.iter().find(|(id, _)| *id == t) {
            Some((_, list)) => list,
            None => {
                self.failed(err!(Internal, "the posting list of tag {} was not read before the query", t));
                &[]
            }
        }
    }

    fn counts(&self) -> (usize, usize) {
        (self.head.live as usize, self.head.archived as usize)
    }

    fn id_end(&self) -> EntryId {
        self.head.layout.next_id as EntryId
    }

    fn is_live(&self, id: EntryId) -> bool {
        self.location(id).is_some()
    }

    fn tagset(&self, id: EntryId) -> TagSet {
        let mut set = [0u16; KEY_MAX_TAGS];
        self.with_value(5, id, |b| {
            for (t, pair) in set.iter_mut().zip(b.chunks_exact(2)) {
                *t = u16::from_le_bytes([pair.first().copied().unwrap_or(0), pair.get(1).copied().unwrap_or(0)]);
            }
        });
        set
    }

    fn fields(&self, id: EntryId) -> Option<(bool, u32, u32)> {
        let (_, _, archived) = self.location(id)?;
        Some((archived, self.u32_of(1, id), self.u32_of(3, id)))
    }
}

/// Counts into `st` the entries of ids below `end` that `t` holds: how many, archived, their
/// hits, the oldest and newest, the most accessed (the first of the most, by id), as
/// [`super::Store::stats`] counts them.
fn tally_entries(t: &dyn Tables, end: EntryId, st: &mut super::Stats) {
    let mut best_hits = 0u32;
    for id in 0..end {
        let Some((archived, created, hits)) = t.fields(id) else { continue };
        let created = u64::from(created);
        if st.entries == 0 || created < st.oldest_created {
            st.oldest_created = created;
        }
        st.newest_created = st.newest_created.max(created);
        st.entries += 1;
        st.archived += usize::from(archived);
        st.total_hits += u64::from(hits);
        if st.most_accessed.is_none() || hits > best_hits {
            st.most_accessed = Some(id);
            best_hits = hits;
        }
    }
}
