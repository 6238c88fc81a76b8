//! Merging the full-text index's delta into its base: a new `store.fts` (format in
//! [`super::file`]) written from the old one (`super::disk`) and the delta
//! (`super::fulltext`) by streaming, through bounded buffers, crash-safely (see
//! [`super`] for when and why). The postings' and document pages' encoding is `encode`.

mod encode;

use super::disk::{Copied, DictCursor, DiskIndex, DiskWalk};
use super::file::{
    skip_bytes, verify_file, Header, RecallFile, CHUNK, DICT_PAGE, DICT_TEMP_NAME, DOC_PAGE, FORMAT, HEADER_BYTES,
    MAGIC, RECALL_FILE_NAME, SKIP_BLOCK, SKIP_ENTRY, SKIP_GROUP, TEMP_NAME,
};
use super::fulltext::{FullText, NONE};
use super::rank::{impact, mean_ref, Docs, QueryWord, RamWalk, Walk};
use crate::error::Result;
use crate::memory::hash::{crc32, crc32_continue};
use crate::memory::store::checkpoint::{tail_crc, Put};
use crate::memory::store::{EntryId, Store};
use encode::{push_page, DocPages, Enc};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

impl Store {
    /// Writes the full-text index (base and delta merged) to a new `store.fts` and searches
    /// that from now on, with an empty delta (the writer at a checkpoint, at close, and
    /// whenever the delta is full; a read-only store, whose delta is full, into a private
    /// directory of its own). Nothing to do when the index is not built, or has nothing
    /// the file lacks.
    pub(in crate::memory::store) fn recall_write_file(&mut self) -> Result<()> {
        if !self.recall_is_ready() {
            return Ok(());
        }
        let nothing_new = self.recall.index.is_empty() && self.recall.base.dead_docs() == 0 && !self.recall.relabeled;
        if nothing_new && self.recall.base.is_open() && (self.log.read_only() || self.recall.written == self.log.len) {
            return Ok(());
        }
        if self.log.read_only() && nothing_new {
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

/// Writes the merge of `parts` to a new index file in `dir`: temp files created
/// exclusively, the body streamed, the header last, synced, renamed over the old file.
/// Returns the new file's path; the caller syncs the directory and opens it. A failure
/// removes the temp files and leaves the old file as it was.
pub(in crate::memory::store) fn write_index_file(
    dir: &Path,
    names: FileNames,
    (base, delta, place): Parts<'_>,
    scratch: &mut WriteScratch,
    stamp: Stamp,
) -> Result<std::path::PathBuf> {
    let tmp = dir.join(names.temp);
    let dict_tmp = dir.join(names.dict_temp);
    let remove = || {
        let _ = fs::remove_file(&tmp);
        let _ = fs::remove_file(&dict_tmp);
    };
    remove();
    let create = |p: &Path| {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(p)
            .map_err(|e| err!(PersistFailed, "creating {} failed: {}", p.display(), e))
    };
    let res = create(&tmp).and_then(|mut file| {
        let mut dict = create(&dict_tmp)?;
        let x = merge_sections(base, delta, place, &mut file, &mut dict, scratch)?;
        let mut h = [0u8; HEADER_BYTES];
        let mut w = Put { buf: &mut h, at: 0 };
        w.bytes(MAGIC);
        w.u32(FORMAT);
        w.u32(x.docs);
        w.u64(stamp.store);
        w.u64(stamp.covered);
        w.u64(x.tokens);
        w.u32(x.terms);
        w.u32(stamp.tail);
        w.u32(x.body_crc);
        w.u64(x.body_len);
        w.u64(x.dict_len);
        w.u32(x.pages);
        w.u32(x.doc_table_crc);
        w.u32(x.dict_crc);
        w.u32(x.sparse_crc);
        w.u32(x.doc_pages);
        w.u32(x.min_len);
        if let Some((rest, c)) = h.split_last_chunk_mut::<4>() {
            *c = crc32(rest).to_le_bytes();
        }
        use std::os::unix::fs::FileExt;
        file.write_all_at(&h, 0)
            .and_then(|_| file.sync_all())
            .map_err(|e| err!(PersistFailed, "writing {} failed: {}", tmp.display(), e))
    });
    let _ = fs::remove_file(&dict_tmp);
    if let Err(e) = res {
        remove();
        return Err(e);
    }
    let path = dir.join(names.file);
    fs::rename(&tmp, &path).map_err(|e| {
        remove();
        err!(PersistFailed, "renaming {} into place failed: {}", tmp.display(), e)
    })?;
    Ok(path)
}

/// Output through a buffer, with a running CRC and length.
struct Out<'a> {
    file: &'a mut File,
    buf: &'a mut Vec<u8>,
    crc: u32,
    len: u64,
}

impl Out<'_> {
    fn bytes(&mut self, b: &[u8]) -> Result<()> {
        self.buf.extend_from_slice(b);
        self.crc = crc32_continue(self.crc, b);
        self.len += b.len() as u64;
        if self.buf.len() >= CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.file.write_all(self.buf).map_err(|e| err!(PersistFailed, "writing {} failed: {}", TEMP_NAME, e))?;
        self.buf.clear();
        Ok(())
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

/// What [`merge_sections`] wrote, for the header.
struct Written {
    docs: u32,
    tokens: u64,
    terms: u32,
    doc_table_crc: u32,
    doc_pages: u32,
    min_len: u32,
    body_crc: u32,
    body_len: u64,
    dict_crc: u32,
    dict_len: u64,
    pages: u32,
    sparse_crc: u32,
}

/// Where one word's postings come from: the base (its place there) and the delta (its term).
#[derive(Clone, Copy)]
struct Source {
    base: Option<QueryWord>,
    term: Option<u32>,
}

/// Walks the current postings of `src` (the base's from its document `from` on),
/// renumbered, in order: `f(new docno, tf, tokens of the document)`.
fn each_posting(
    base: &mut DiskIndex,
    delta: &FullText,
    sc: &WriteScratch,
    src: Source,
    from: u32,
    mut f: impl FnMut(u32, u32, u32) -> Result<()>,
) -> Result<()> {
    if let Some(w) = src.base {
        let mut parts = base.walk_parts();
        let (Some(file), Some(buf), Some(dec)) = (parts.file, parts.bufs.next(), parts.decoded.next()) else {
            bail!(Internal, "store.fts is not open")
        };
        let mut walk = DiskWalk::starting_at(file, buf, dec, &w, from)?;
        while walk.doc() != NONE {
            let nd = sc.base_new.get(walk.doc() as usize).copied().unwrap_or(NONE);
            if nd != NONE {
                let len = parts.docs.tokens(walk.doc())?.unwrap_or(0);
                f(nd, walk.tf(), len)?;
            }
            walk.advance()?;
        }
    }
    if let Some(t) = src.term {
        let mut walk = RamWalk::new(delta, t);
        while walk.doc() != NONE {
            let nd = sc.delta_new.get(walk.doc() as usize).copied().unwrap_or(NONE);
            if nd != NONE {
                let len = delta.doc(walk.doc()).map_or(0, |x| x.tokens);
                f(nd, walk.tf(), len)?;
            }
            walk.advance()?;
        }
    }
    Ok(())
}

/// Writes everything after a blank header: the current documents of the base, then the
/// delta's, renumbered densely in that order (so every word's postings stay in order: the
/// base's, then the delta's), their lengths then their records, in pages; the words of both
/// in byte order with their current postings in blocks and their skip tables; the
/// dictionary (written to `dict` as it goes, copied in after the body) and the page tables.
/// Reads the base's documents and dictionary once, each word's postings twice at most (to
/// count, then to write), all through bounded buffers, every part checked by its CRC.
fn merge_sections(
    base: &mut DiskIndex,
    delta: &FullText,
    place: Option<&dyn Fn(EntryId) -> Option<(u64, u32)>>,
    file: &mut File,
    dict: &mut File,
    sc: &mut WriteScratch,
) -> Result<Written> {
    use std::os::unix::fs::FileExt;
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
    let mean = mean_ref(tokens, u64::from(live));
    let clean = base.dead_docs() == 0;
    let mut out_buf = core::mem::take(&mut sc.out);
    let mut dict_buf = core::mem::take(&mut sc.dict);
    let mut term_buf = core::mem::take(&mut sc.term);
    let mut skip_buf = core::mem::take(&mut sc.skip);
    out_buf.clear();
    dict_buf.clear();
    let res = (|| {
        file.write_all(&[0u8; HEADER_BYTES]).map_err(|e| err!(PersistFailed, "writing {} failed: {}", TEMP_NAME, e))?;
        let mut out = Out { file, buf: &mut out_buf, crc: 0, len: 0 };
        // The documents' lengths, in pages.
        sc.len_pages.clear();
        sc.rec_pages.clear();
        let mut pages = DocPages { crc: 0, n: 0 };
        let mut min_len = u32::MAX;
        for d in 0..base.doc_count() {
            if let Some((_, t)) = base.doc(d) {
                pages.add(&mut out, &t.to_le_bytes(), &mut sc.len_pages)?;
                min_len = min_len.min(t);
            }
        }
        for d in 0..delta.doc_count() as u32 {
            if let Some(doc) = delta.doc(d).filter(|x| x.entry != NONE) {
                pages.add(&mut out, &doc.tokens.to_le_bytes(), &mut sc.len_pages)?;
                min_len = min_len.min(doc.tokens);
            }
        }
        pages.end(&mut sc.len_pages)?;
        // Their records: the base's current documents as its file lists them (a document
        // still stale keeps its old record, so the next open finds it stale again). After a
        // compaction, every document's entry has a new id and a new record: written from
        // RAM, the records' places from the new log.
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
        if place.is_some() {
            for d in 0..base.doc_count() {
                let Some((entry, _)) = base.doc(d) else { continue };
                pages.add(&mut out, &record(entry, None)?, &mut sc.rec_pages)?;
            }
        } else if base.is_open() {
            let live_doc = |d: u32| base.doc(d).is_some();
            let (input, rec_pages) = (&mut sc.input, &mut sc.rec_pages);
            base.each_record(input, |d, rec| match live_doc(d) {
                true => pages.add(&mut out, rec, rec_pages),
                false => Ok(()),
            })?;
        }
        for d in 0..delta.doc_count() as u32 {
            let Some(doc) = delta.doc(d).filter(|x| x.entry != NONE) else { continue };
            pages.add(&mut out, &record(doc.entry, Some((doc.offset, doc.rec_len)))?, &mut sc.rec_pages)?;
        }
        pages.end(&mut sc.rec_pages)?;
        // The delta's words that have postings, in byte order.
        sc.sorted.clear();
        for t in 0..delta.term_count() as u32 {
            if delta.term(t).is_some_and(|x| x.df > 0) && sc.sorted.len() < sc.sorted.capacity() {
                sc.sorted.push(t);
            }
        }
        crate::sort::sort_by_cmp(&mut sc.sorted, |&a, &b| delta.term_text(a).cmp(delta.term_text(b)));
        let mut dout = Out { file: dict, buf: &mut dict_buf, crc: 0, len: 0 };
        sc.pages.clear();
        let mut page_crc = 0u32;
        let mut terms = 0u32;
        let mut cursor = DictCursor::default();
        let mut bword = [0u8; 256];
        let mut bnext = base.next_word(&mut cursor, &mut bword)?;
        let mut di = 0usize;
        let mut word = [0u8; 256];
        loop {
            let dword = sc.sorted.get(di).map(|&t| delta.term_text(t));
            let bw = bnext.map(|(len, _)| bword.get(..len).unwrap_or(&[]));
            let (src, len) = match (bw, dword) {
                (None, None) => break,
                (Some(b), d) if d.is_none_or(|d| b < d) => {
                    let len = b.len();
                    word.get_mut(..len).unwrap_or(&mut []).copy_from_slice(b);
                    (Source { base: bnext.map(|x| x.1), term: None }, len)
                }
                (Some(b), Some(d)) if b == d => {
                    let len = b.len();
                    word.get_mut(..len).unwrap_or(&mut []).copy_from_slice(b);
                    (Source { base: bnext.map(|x| x.1), term: sc.sorted.get(di).copied() }, len)
                }
                (_, Some(d)) => {
                    let len = d.len();
                    word.get_mut(..len).unwrap_or(&mut []).copy_from_slice(d);
                    (Source { base: None, term: sc.sorted.get(di).copied() }, len)
                }
                (Some(_), None) => break,
            };
            if src.base.is_some() {
                bnext = base.next_word(&mut cursor, &mut bword)?;
            }
            if src.term.is_some() {
                di += 1;
            }
            let w = word.get(..len).unwrap_or(&[]);
            // A clean base (no document taken out: renumbering changes nothing) keeps the
            // word's full blocks byte for byte (all of them when the delta adds nothing);
            // its last block, when not full, is encoded again with the delta's postings.
            skip_buf.clear();
            let copied = match src.base.filter(|_| clean) {
                Some(b) => Some(base.full_blocks(&b, src.term.is_none(), &mut skip_buf)?),
                None => None,
            };
            let c = copied.unwrap_or_default();
            let (word_mean, from) = match (copied, src.base) {
                (Some(_), Some(b)) => (b.mean, c.last.map_or(0, |l| l + 1)),
                _ => (mean, 0),
            };
            let fresh = Enc::after(&mut term_buf, &mut skip_buf, &c, word_mean, 0);
            // Count: postings, bytes, blocks (kept in the term buffer if they fit).
            let skip_len = fresh.skip.len();
            let mut enc = fresh;
            enc.buf.clear();
            each_posting(base, delta, sc, src, from, |nd, tf, l| enc.push(nd, tf, l, None))?;
            enc.close(None, false)?;
            let Enc { n, bytes, blocks, prev, fits, most, .. } = enc;
            if n == 0 {
                continue;
            }
            // The body: the word, its postings, its skip table.
            let postings_at = HEADER_BYTES as u64 + out.len + 1 + len as u64 + 12;
            out.bytes(&[len as u8])?;
            out.bytes(w)?;
            out.bytes(&n.to_le_bytes())?;
            out.bytes(&blocks.to_le_bytes())?;
            out.bytes(&bytes.to_le_bytes())?;
            let mut word_crc = 0u32;
            if let (Some(b), Some(_)) = (src.base, copied) {
                // The copied blocks; all the word's bytes read, to check them against its CRC.
                let (mut at, mut left, mut check) = (b.at, u64::from(b.bytes), 0u32);
                let mut keep = u64::from(c.bytes);
                while left > 0 {
                    let k = left.min(sc.input.len() as u64) as usize;
                    let chunk = sc.input.get_mut(..k).unwrap_or(&mut []);
                    base.read_at(chunk, at)?;
                    check = crc32_continue(check, chunk);
                    let take = chunk.get(..(keep.min(k as u64)) as usize).unwrap_or(&[]);
                    out.bytes(take)?;
                    word_crc = crc32_continue(word_crc, take);
                    keep -= take.len() as u64;
                    at += k as u64;
                    left -= k as u64;
                }
                if check != b.crc {
                    bail!(Io, "store.fts is damaged (the postings of a word do not check out)");
                }
            }
            if fits {
                out.bytes(&term_buf)?;
                word_crc = crc32_continue(word_crc, &term_buf);
            } else {
                skip_buf.truncate(skip_len);
                let mut enc = Enc::after(&mut term_buf, &mut skip_buf, &c, word_mean, word_crc);
                enc.buf.clear();
                each_posting(base, delta, sc, src, from, |nd, tf, l| enc.push(nd, tf, l, Some(&mut out)))?;
                enc.close(Some(&mut out), false)?;
                word_crc = enc.crc;
            }
            if blocks > 1 {
                for group in skip_buf.chunks(SKIP_GROUP * SKIP_ENTRY) {
                    out.bytes(group)?;
                    out.bytes(&crc32(group).to_le_bytes())?;
                }
            }
            let last = prev.unwrap_or(0);
            // The dictionary, in pages of DICT_PAGE words.
            if (terms as usize).is_multiple_of(DICT_PAGE) {
                if terms > 0 {
                    push_page(&mut sc.pages, page_crc)?;
                }
                push_page(&mut sc.pages, dout.len as u32)?;
                page_crc = 0;
            }
            let mut tail = [0u8; super::file::ENTRY_TAIL];
            let mut t = Put { buf: &mut tail, at: 0 };
            t.u32(n);
            t.u64(postings_at);
            t.u32(bytes);
            t.u32(word_crc);
            t.u32(last);
            t.u32(blocks);
            t.bytes(&most.to_le_bytes());
            t.u32(word_mean);
            dout.bytes(&[len as u8])?;
            dout.bytes(w)?;
            dout.bytes(&tail)?;
            page_crc = crc32_continue(crc32_continue(crc32_continue(page_crc, &[len as u8]), w), &tail);
            terms += 1;
        }
        if terms > 0 {
            push_page(&mut sc.pages, page_crc)?;
        }
        let (body_crc, body_len) = (out.crc, out.len);
        let (dict_crc, dict_len) = (dout.crc, dout.len);
        dout.flush()?;
        // The dictionary copied in after the body.
        out.crc = 0;
        let mut at = 0u64;
        while at < dict_len {
            let n = (dict_len - at).min(sc.input.len() as u64) as usize;
            let chunk = sc.input.get_mut(..n).unwrap_or(&mut []);
            dout.file
                .read_exact_at(chunk, at)
                .map_err(|e| err!(PersistFailed, "reading back {} failed: {}", DICT_TEMP_NAME, e))?;
            out.bytes(chunk)?;
            at += n as u64;
        }
        if out.crc != dict_crc {
            bail!(PersistFailed, "the index's dictionary did not read back as written");
        }
        out.crc = 0;
        for &v in sc.pages.iter() {
            out.bytes(&v.to_le_bytes())?;
        }
        let sparse_crc = out.crc;
        out.crc = 0;
        for (&l, &r) in sc.len_pages.iter().zip(sc.rec_pages.iter()) {
            out.bytes(&l.to_le_bytes())?;
            out.bytes(&r.to_le_bytes())?;
        }
        let doc_table_crc = out.crc;
        out.flush()?;
        if sc.len_pages.len() != sc.rec_pages.len() || sc.len_pages.len() != (live as usize).div_ceil(DOC_PAGE) {
            bail!(Internal, "the index's document pages do not add up");
        }
        Ok(Written {
            docs: live,
            tokens,
            terms,
            doc_table_crc,
            doc_pages: sc.len_pages.len() as u32,
            min_len: if live == 0 { 0 } else { min_len },
            body_crc,
            body_len,
            dict_crc,
            dict_len,
            pages: (sc.pages.len() / 2) as u32,
            sparse_crc,
        })
    })();
    sc.out = out_buf;
    sc.dict = dict_buf;
    sc.term = term_buf;
    sc.skip = skip_buf;
    res
}
