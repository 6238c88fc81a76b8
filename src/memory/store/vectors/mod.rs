//! The vector index, a room of the store: recall by meaning. It keeps `store.vec`, a cache of
//! what the embeddings endpoint said of each entry (appended records, synced; rewrites by temp
//! file and rename), and two small tables in RAM; the log stays the truth. Its parts: `format`
//! (the file's header and records, quantization, the check), `fill` (asking the endpoint) and
//! `fuse` (the word and meaning rankings fused).
//!
//! Recall by meaning: one quantized vector per live entry in a file of its own (`store.vec`),
//! filled from an embeddings endpoint a bounded number per cycle, searched by a bounded scan,
//! and fused with the word ranking by standard scores (`fuse`).
//!
//! # The file
//!
//! ```text
//! header (32 bytes): "LKJVEC01" | identity u64 | dimension u32 | 0u32 | crc32 of the 24 before | 0u32
//! record (20 + dimension bytes, fixed):
//!     key hash u64 | stamp u32 | scale f32 | dimension × (i8 + 128) | crc32 of the bytes before
//! ```
//!
//! The identity is [`Embed::identity`] (model, dimension, document prefix): a file of
//! another identity holds vectors of another model, and is started again. A record is the
//! vector of the entry whose key hashes to `key hash` ([`key_hash`]: FNV-1a of the key as
//! written), for the text it had when its stamp ([`stamp`]: its creation time and version)
//! was current. Vectors are unit length, quantized to int8 with one scale per vector
//! (`x ≈ scale · q`), so a cosine is an integer dot product times two scales.
//!
//! Crash rules are the store log's: records are appended whole at the end and synced before
//! the tables change; a torn tail (a record cut short, or a last record whose checksum fails)
//! is dropped by the writer when it opens the file and ignored by readers; a bad record before
//! good ones is skipped (its entry is embedded again). A new file, and the rewrite that drops
//! dead records (superseded, or of entries no longer live: [`VECTORS_COMPACT_DEAD_PERCENT`]),
//! go to a temp file, synced, renamed over, the directory synced: a crash leaves the old file
//! or the new one. The file is a cache: the store log stays the only truth.
//!
//! # In RAM
//!
//! Two tables, reserved when the file is opened: per entry id the stamp of the vector held
//! (4 bytes per entry of capacity), and per record the entry it belongs to (4 bytes per
//! record; the file holds at most twice the capacity before it is rewritten): 12 bytes per
//! entry of capacity in all, 12 MiB at 1,048,576. They are built by one scan of the file at
//! open, and again after the store compacts (ids are renumbered; the store's identity
//! changes), matching records to live entries through their key hashes (a sorted list of 16
//! bytes per live entry, allocated for the scan and freed). With embeddings on, the
//! steady-state cycle allocates nothing (`tests/agent_alloc_embed.rs`); opening, a new
//! connection to the endpoint and that scan do.
//!
//! # Search
//!
//! A query vector is compared with every current record in one pass over the file, read in
//! [`VECTORS_READ_BYTES`] pieces with positioned reads: RAM stays bounded at any size (a
//! million 384-dimension vectors are 404 MiB on disk). The best [`VECTORS_MAX_RESULTS`] go to a
//! bounded heap; only those are checked against the store (live, current, filters).
//!
//! # Failures
//!
//! An endpoint that fails (down, timing out, answering errors) drops search to words only,
//! with one warning, and is tried again after a backoff ([`EMBED_BACKOFF_BASE_SECS`], doubled
//! to [`EMBED_BACKOFF_MAX_SECS`]); when it answers again, the next failure warns again.

mod fill;
mod format;
mod fuse;

pub use format::{
    check_file, dot, encode, header, key_hash, quantize, remove_temp, stamp, VectorsCheck, HEADER_BYTES,
    RECORD_OVERHEAD, VECTORS_NAME,
};
use format::{le_u32, le_u64, record_ok};
pub use fuse::fuse;

use super::recall::rank::{RankHit, Ranked};
use super::{EntryId, Store};
use crate::error::Result;
use crate::limits::{
    EMBED_BACKOFF_BASE_SECS, EMBED_BACKOFF_MAX_SECS, EMBED_BATCH_MAX, EMBED_FILL_PER_CYCLE, EMBED_SCAN_PER_CYCLE,
    EMBED_TEXT_MAX_BYTES, KEY_MAX_BYTES, RANK_MAX_RESULTS, VECTORS_COMPACT_DEAD_PERCENT, VECTORS_COMPACT_MIN_DEAD,
    VECTORS_MAX_RESULTS, VECTORS_READ_BYTES,
};
use crate::memory::hash::{crc32, fnv1a64, fnv1a64_continue};
use crate::memory::key::Key;
use crate::memory::query::Archived;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What a text is embedded as (it picks the prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextKind {
    /// A search: `query_prefix`.
    Query,
    /// A stored value: `document_prefix`.
    Document,
}

/// What makes vectors: an embeddings endpoint (`llm::embed::Embedder`, in the layer above),
/// or a test's own function.
pub trait Embed {
    /// Numbers per vector.
    fn dimension(&self) -> usize;
    /// Texts per call at most.
    fn batch(&self) -> usize;
    /// What identifies the vectors it makes (model, dimension, document prefix): vectors of
    /// another identity are not comparable.
    fn identity(&self) -> u64;
    /// Calls made so far.
    fn requests(&self) -> u64;
    /// Embeds `texts` (at most `batch`) as `kind`: text i's vector into
    /// `out[i * dimension ..][.. dimension]`.
    fn embed(&mut self, kind: TextKind, texts: &[&str], out: &mut [f32], should_stop: &dyn Fn() -> bool) -> Result<()>;
}

/// Whether an embeddings failure is the endpoint's (down, slow, answering errors or not
/// embeddings), which drops search to words for a while, rather than a fault here.
pub fn is_endpoint_failure(e: &crate::error::Error) -> bool {
    use crate::error::Code;
    matches!(
        e.code(),
        Code::LlmUnavailable
            | Code::LlmTimeout
            | Code::LlmError
            | Code::HttpProtocol
            | Code::ResponseTooLarge
            | Code::ConfigInvalid
            | Code::ContextOverflow
    )
}

/// The first `max` bytes of `s`, cut back to a character boundary.
pub fn head(s: &str, max: usize) -> &str {
    crate::bytes::str_prefix(s, max)
}

/// A record that belongs to no live entry.
const NONE: u32 = u32::MAX;

/// How a ranked query weighs entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// BM25 over words only.
    Words,
    /// Cosine of the embeddings only.
    Meaning,
    /// Both, fused by standard scores ([`fuse`]); words only when no embeddings are at hand.
    Both,
}

impl By {
    /// `words`, `meaning` or `both`.
    pub fn from_name(name: &str) -> Option<By> {
        match name {
            "words" => Some(By::Words),
            "meaning" => Some(By::Meaning),
            "both" => Some(By::Both),
            _ => None,
        }
    }
}

/// Figures of the vectors, for `memory stats` and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VectorStats {
    /// Records in the file (current or not).
    pub records: u64,
    /// Entries with a current vector.
    pub current: usize,
    /// Bad records skipped, torn tails dropped or ignored at the last open.
    pub damaged: u64,
    /// Vectors embedded by this process.
    pub embedded: u64,
    /// Requests sent to the endpoint by this process.
    pub requests: u64,
    /// Times the file was rewritten without its dead records.
    pub compactions: u64,
    /// Whether the endpoint is being waited out after a failure.
    pub backing_off: bool,
    /// Warnings printed about a failing endpoint (one per outage).
    pub warnings: u64,
}

/// What one fill did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filled {
    /// Vectors embedded and stored.
    pub embedded: usize,
    /// Entries still without a current vector among those looked at.
    pub missing: usize,
}

/// The vectors file, its tables and the embeddings client (see [`Meaning`]).
struct Vectors {
    dir: PathBuf,
    path: PathBuf,
    read_only: bool,
    file: Option<File>,
    identity: u64,
    dim: usize,
    rec_len: usize,
    /// Whole records in the file (after the header).
    records: u64,
    /// Per entry id: the stamp of the vector held, 0 for none.
    held: Vec<u32>,
    /// Per record: the entry id it is the vector of, [`NONE`] if none.
    owner: Vec<u32>,
    /// Records the file may hold before it is rewritten (the room of `owner`).
    max_records: usize,
    /// The store identity the tables were built for (0: not built).
    built_for: u64,
    current: usize,
    damaged: u64,
    embedder: Box<dyn Embed>,
    buf: Vec<u8>,
    /// The fill's batch: ids, texts (one string, cut at `ends`), vectors, the records.
    batch_ids: Vec<EntryId>,
    batch_text: String,
    batch_ends: Vec<usize>,
    floats: Vec<f32>,
    qbuf: Vec<i8>,
    out: Vec<u8>,
    cursor: usize,
    /// The last query's text hash and vector (the prompt builder asks the same task again).
    query_hash: u64,
    query_ok: bool,
    query: Vec<i8>,
    /// The query widened for [`dot`], and 128 times the sum of its components.
    query16: Vec<i16>,
    query_bias: i32,
    query_scale: f32,
    /// The endpoint failed: when to try again, and the wait after the next failure.
    retry_at: Option<Instant>,
    backoff: Duration,
    warned: bool,
    embedded: u64,
    compactions: u64,
    warnings: u64,
}

/// Recall by meaning: the vectors file, its tables, the embeddings client, and the two lists
/// a fusion ranks. See the module documentation.
pub struct Meaning {
    v: Vectors,
    words: Ranked,
    near: Ranked,
}

impl core::fmt::Debug for Meaning {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Meaning").field("path", &self.v.path).field("records", &self.v.records).finish()
    }
}

impl Meaning {
    /// Opens recall by meaning for `store` with `embedder` (no request is sent yet): the
    /// vectors file, read and matched to the store's entries. A writer (`writable`, the lock
    /// holder) creates the file when missing or of another model, and drops a torn tail; a
    /// reader writes nothing and treats a missing file as empty.
    pub fn open(store: &Store, embedder: Box<dyn Embed>, writable: bool) -> Result<Meaning> {
        Ok(Meaning { v: Vectors::open(store, embedder, writable)?, words: Ranked::new(), near: Ranked::new() })
    }

    /// Figures.
    pub fn stats(&self) -> VectorStats {
        self.v.stats()
    }

    /// Bytes of RAM reserved.
    pub fn ram_bytes(&self) -> usize {
        self.v.ram_bytes() + 2 * RANK_MAX_RESULTS * core::mem::size_of::<RankHit>()
    }

    /// The vectors file's path.
    pub fn path(&self) -> &Path {
        &self.v.path
    }

    /// Test hook: the endpoint may be asked again at once (the backoff is over).
    pub fn end_backoff(&mut self) {
        if self.v.retry_at.is_some() {
            self.v.retry_at = Some(Instant::now());
        }
    }

    /// Embeds up to `max` live entries that have no current vector (new, or changed since),
    /// looking at up to [`EMBED_SCAN_PER_CYCLE`] entry ids from where the last fill stopped.
    /// An endpoint failure is not an error: it is warned about once and the fill waits (see
    /// the module documentation). Errors: writing the file (`PERSIST_FAILED`), a reader
    /// (`PERSIST_FAILED`: only the lock holder fills).
    pub fn fill(&mut self, store: &mut Store, max: usize, should_stop: &dyn Fn() -> bool) -> Result<Filled> {
        self.v.fill(store, max, should_stop)
    }

    /// Rewrites the vectors file with only the current records (temp file, sync, rename, sync
    /// the directory), then reads it back.
    pub fn compact(&mut self, store: &Store) -> Result<()> {
        self.v.compact(store)
    }

    /// The `limit` entries nearest to `vector` (of the configured dimension; not sent to the
    /// endpoint), best first, score the cosine; `archived` says which entries pass.
    pub fn nearest_to(
        &mut self,
        store: &Store,
        vector: &[f32],
        limit: usize,
        archived: Archived,
        out: &mut Ranked,
    ) -> Result<()> {
        if vector.len() != self.v.dim {
            bail!(Usage, "a vector of {} dimensions for vectors of {}", vector.len(), self.v.dim);
        }
        self.v.follow(store)?;
        self.v.query_scale = quantize(vector, &mut self.v.query);
        self.v.widen_query();
        // The cached query text no longer matches the query vector.
        self.v.query_ok = false;
        let admit = |id: EntryId| store.slots.get(id).is_some_and(|s| archived.admits(s.archived));
        self.v.nearest(store, limit, &admit, out)
    }
}

impl Vectors {
    fn open(store: &Store, embedder: Box<dyn Embed>, writable: bool) -> Result<Vectors> {
        let dim = embedder.dimension();
        if dim == 0 || dim > crate::limits::EMBED_MAX_DIMENSION {
            bail!(
                ConfigInvalid,
                "embeddings of {} dimensions (1..={} are kept)",
                dim,
                crate::limits::EMBED_MAX_DIMENSION
            );
        }
        let rec_len = RECORD_OVERHEAD + dim;
        let room = store.slots.room();
        let max_records = room.saturating_mul(2) + EMBED_FILL_PER_CYCLE + VECTORS_COMPACT_MIN_DEAD;
        let per_read = (VECTORS_READ_BYTES / rec_len).max(1) * rec_len;
        let dir = store.dir().to_path_buf();
        let mut m = Vectors {
            path: dir.join(VECTORS_NAME),
            dir,
            read_only: !writable,
            file: None,
            identity: embedder.identity(),
            dim,
            rec_len,
            records: 0,
            held: vec![0; room],
            owner: Vec::with_capacity(max_records),
            max_records,
            built_for: 0,
            current: 0,
            damaged: 0,
            embedder,
            buf: vec![0; per_read],
            batch_ids: Vec::with_capacity(EMBED_BATCH_MAX),
            batch_text: String::with_capacity(EMBED_BATCH_MAX * (KEY_MAX_BYTES + 2 + EMBED_TEXT_MAX_BYTES)),
            batch_ends: Vec::with_capacity(EMBED_BATCH_MAX),
            floats: vec![0.0; EMBED_BATCH_MAX * dim],
            qbuf: vec![0; dim],
            out: vec![0; EMBED_BATCH_MAX * rec_len],
            cursor: 0,
            query_hash: 0,
            query_ok: false,
            query: vec![0; dim],
            query16: vec![0; dim],
            query_bias: 0,
            query_scale: 0.0,
            retry_at: None,
            backoff: Duration::from_secs(EMBED_BACKOFF_BASE_SECS),
            warned: false,
            embedded: 0,
            compactions: 0,
            warnings: 0,
        };
        m.open_file()?;
        m.build(store)?;
        Ok(m)
    }

    fn stats(&self) -> VectorStats {
        VectorStats {
            records: self.records,
            current: self.current,
            damaged: self.damaged,
            embedded: self.embedded,
            requests: self.embedder.requests(),
            compactions: self.compactions,
            backing_off: self.retry_at.is_some(),
            warnings: self.warnings,
        }
    }

    fn ram_bytes(&self) -> usize {
        self.held.capacity() * 4
            + self.owner.capacity() * 4
            + self.buf.capacity()
            + self.batch_text.capacity()
            + self.floats.capacity() * 4
            + self.out.capacity()
    }

    /// Opens (a writer: creates or starts again) the file and checks its header.
    fn open_file(&mut self) -> Result<()> {
        self.file = None;
        self.records = 0;
        if self.read_only {
            let f = match File::open(&self.path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => bail!(Io, "opening {} failed: {}", self.path.display(), e),
            };
            if self.header_matches(&f) {
                self.file = Some(f);
            }
            return Ok(());
        }
        crate::memory::nofollow::refuse_link(&self.path)?;
        let existing = OpenOptions::new().read(true).write(true).open(&self.path);
        if let Ok(f) = existing {
            if self.header_matches(&f) {
                self.file = Some(f);
                return Ok(());
            }
            err!(
                Io,
                "{} holds vectors of another model, dimension or prefix (or is unreadable); starting it again: \
                 every entry is embedded again, {} per cycle",
                self.path.display(),
                EMBED_FILL_PER_CYCLE
            )
            .print_warning();
        }
        self.start_new()
    }

    /// A new, empty file (header only), written atomically.
    fn start_new(&mut self) -> Result<()> {
        self.file = None;
        crate::memory::atomic::write_file(&self.dir, VECTORS_NAME, &header(self.identity, self.dim))?;
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.path)
            .map_err(|e| err!(PersistFailed, "opening {} failed: {}", self.path.display(), e))?;
        self.file = Some(f);
        self.records = 0;
        self.owner.clear();
        self.held.iter_mut().for_each(|h| *h = 0);
        self.current = 0;
        Ok(())
    }

    fn header_matches(&self, f: &File) -> bool {
        let mut h = [0u8; HEADER_BYTES as usize];
        f.read_exact_at(&mut h, 0).is_ok() && h == header(self.identity, self.dim)
    }

    /// Matches the file's records to the store's live entries (see the module documentation);
    /// a writer drops a torn tail.
    fn build(&mut self, store: &Store) -> Result<()> {
        self.owner.clear();
        self.held.iter_mut().for_each(|h| *h = 0);
        self.current = 0;
        self.damaged = 0;
        self.records = 0;
        self.built_for = store.store_id;
        let Some(file) = self.file.as_ref() else { return Ok(()) };
        let len = file.metadata().map_err(|e| err!(Io, "reading {} failed: {}", self.path.display(), e))?.len();
        let whole = len.saturating_sub(HEADER_BYTES) / self.rec_len as u64;
        // Live entries by key hash, sorted: a one-off list for this scan.
        let mut keys: Vec<(u64, u32)> = Vec::with_capacity(store.len());
        for id in store.ids() {
            if let Some(k) = store.key(id) {
                keys.push((key_hash(&k), id));
            }
        }
        crate::sort::sort(&mut keys);
        let rl = self.rec_len;
        let mut good_end = HEADER_BYTES;
        let mut r = 0u64;
        while r < whole {
            let n = ((whole - r) as usize).min(self.buf.len() / rl);
            let at = HEADER_BYTES + r * rl as u64;
            let chunk = self.buf.get_mut(..n * rl).unwrap_or(&mut []);
            file.read_exact_at(chunk, at).map_err(|e| err!(Io, "reading {} failed: {}", self.path.display(), e))?;
            for rec in chunk.chunks_exact(rl) {
                if self.owner.len() >= self.max_records {
                    bail!(
                        CapacityExceeded,
                        "{} holds more than {} records (twice memory.store_capacity); remove it to embed again",
                        self.path.display(),
                        self.max_records
                    );
                }
                if !record_ok(rec) {
                    self.damaged += 1;
                    self.owner.push(NONE);
                    continue;
                }
                good_end = HEADER_BYTES + (self.owner.len() as u64 + 1) * rl as u64;
                let (kh, st) = (le_u64(rec, 0), le_u32(rec, 8));
                let mut owner = NONE;
                if let Ok(i) = keys.binary_search_by(|(h, _)| h.cmp(&kh)) {
                    if let Some(&(_, id)) = keys.get(i) {
                        let cur = store.slots.get(id).map(|s| stamp(s.created, s.ver));
                        let held = self.held.get_mut(id as usize);
                        if let (Some(cur), Some(held)) = (cur, held) {
                            if cur == st && *held != st {
                                if *held == 0 {
                                    self.current += 1;
                                }
                                *held = st;
                                owner = id;
                            }
                        }
                    }
                }
                self.owner.push(owner);
            }
            r += n as u64;
        }
        // Damaged records after the last good one, and a partial record: a torn tail.
        let tail_bad = (self.owner.len() as u64).saturating_sub((good_end - HEADER_BYTES) / rl as u64);
        if good_end < len {
            if self.read_only {
                // Perhaps a record being written now: not counted, not read.
                self.damaged = self.damaged.saturating_sub(tail_bad);
            } else {
                if let Err(e) = file.set_len(good_end).and_then(|_| file.sync_all()) {
                    bail!(PersistFailed, "dropping the torn tail of {} failed: {}", self.path.display(), e);
                }
                err!(
                    Io,
                    "{}: dropped a torn tail of {} bytes (a write cut short); those entries are embedded again",
                    self.path.display(),
                    len - good_end
                )
                .print_warning();
                self.damaged = self.damaged.saturating_sub(tail_bad) + 1;
            }
            self.owner.truncate(((good_end - HEADER_BYTES) / rl as u64) as usize);
        }
        self.records = self.owner.len() as u64;
        Ok(())
    }

    /// Sets the query's 16-bit copy and its bias for [`dot`].
    fn widen_query(&mut self) {
        let mut sum = 0i32;
        for (w, &q) in self.query16.iter_mut().zip(&self.query) {
            *w = i16::from(q);
            sum += i32::from(q);
        }
        self.query_bias = 128 * sum;
    }

    /// Rebuilds the tables when the store was compacted (its ids renumbered) since.
    fn follow(&mut self, store: &Store) -> Result<()> {
        if self.built_for != store.store_id {
            self.build(store)?;
        }
        Ok(())
    }

    /// Rewrites the file without its dead records when they are many (see the limits).
    fn compact_if_due(&mut self, store: &Store) -> Result<()> {
        let dead = self.owner.len().saturating_sub(self.current);
        if dead >= VECTORS_COMPACT_MIN_DEAD && dead * 100 >= self.owner.len() * VECTORS_COMPACT_DEAD_PERCENT {
            self.compact(store)?;
        }
        Ok(())
    }

    fn compact(&mut self, store: &Store) -> Result<()> {
        if self.read_only {
            bail!(PersistFailed, "{}: a reader does not rewrite the vectors", self.path.display());
        }
        self.follow(store)?;
        let tmp = self.dir.join(format!(".{}.compact", VECTORS_NAME));
        let _ = std::fs::remove_file(&tmp);
        let out = crate::memory::nofollow::create_temp(&tmp)
            .map_err(|e| err!(PersistFailed, "creating {} failed: {}", tmp.display(), e))?;
        let res = self.copy_current(&out, store);
        let res = res.and_then(|_| {
            out.sync_all().map_err(|e| err!(PersistFailed, "syncing {} failed: {}", tmp.display(), e))?;
            std::fs::rename(&tmp, &self.path).map_err(|e| {
                err!(PersistFailed, "renaming {} over {} failed: {}", tmp.display(), self.path.display(), e)
            })?;
            crate::memory::atomic::sync_dir(&self.dir)
        });
        if let Err(e) = res {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        self.compactions += 1;
        self.open_file()?;
        self.build(store)
    }

    /// Writes the header and every current record to `out`.
    fn copy_current(&mut self, out: &File, store: &Store) -> Result<()> {
        let Some(file) = self.file.as_ref() else { return Ok(()) };
        out.write_all_at(&header(self.identity, self.dim), 0)
            .map_err(|e| err!(PersistFailed, "writing the vectors' temp file failed: {}", e))?;
        let rl = self.rec_len;
        let mut at_out = HEADER_BYTES;
        let mut r = 0usize;
        let total = self.owner.len();
        while r < total {
            let n = (total - r).min(self.buf.len() / rl);
            let chunk = self.buf.get_mut(..n * rl).unwrap_or(&mut []);
            file.read_exact_at(chunk, HEADER_BYTES + (r * rl) as u64)
                .map_err(|e| err!(Io, "reading {} failed: {}", self.path.display(), e))?;
            // Keep the current records, moved to the front of the chunk.
            let mut kept = 0usize;
            for i in 0..n {
                let id = self.owner.get(r + i).copied().unwrap_or(NONE);
                let st = le_u32(chunk.get(i * rl..).unwrap_or(&[]), 8);
                let live = store.slots.get(id).is_some_and(|s| stamp(s.created, s.ver) == st);
                if id != NONE && live && self.held.get(id as usize).copied() == Some(st) {
                    if kept != i {
                        chunk.copy_within(i * rl..(i + 1) * rl, kept * rl);
                    }
                    kept += 1;
                }
            }
            let bytes = chunk.get(..kept * rl).unwrap_or(&[]);
            out.write_all_at(bytes, at_out)
                .map_err(|e| err!(PersistFailed, "writing the vectors' temp file failed: {}", e))?;
            at_out += bytes.len() as u64;
            r += n;
        }
        Ok(())
    }

    /// Embeds `text` as a query (or reuses the last one's vector for the same text). `false`
    /// when the endpoint cannot be asked now or failed (warned once): search by words.
    fn query_vector(&mut self, text: &str, should_stop: &dyn Fn() -> bool) -> bool {
        let h = fnv1a64(text.as_bytes());
        if self.query_ok && self.query_hash == h {
            return true;
        }
        self.query_ok = false;
        if !self.may_ask() {
            return false;
        }
        let floats = self.floats.get_mut(..self.dim).unwrap_or(&mut []);
        match self.embedder.embed(TextKind::Query, &[text], floats, should_stop) {
            Ok(()) => {
                self.answered();
                self.query_scale = quantize(self.floats.get(..self.dim).unwrap_or(&[]), &mut self.query);
                self.widen_query();
                self.query_hash = h;
                self.query_ok = true;
                true
            }
            Err(e) => {
                if is_endpoint_failure(&e) {
                    self.failed(e);
                } else {
                    e.context(format_args!("searching by words only")).print_warning();
                }
                false
            }
        }
    }

    /// The `limit` entries nearest to the current query vector, best first, into `out`
    /// (score: the cosine), those that `admit` lets through.
    fn nearest(
        &mut self,
        store: &Store,
        limit: usize,
        admit: &dyn Fn(EntryId) -> bool,
        out: &mut Ranked,
    ) -> Result<()> {
        out.clear();
        let limit = limit.min(VECTORS_MAX_RESULTS).min(out.capacity());
        let Some(file) = self.file.as_ref() else { return Ok(()) };
        if limit == 0 || self.current == 0 {
            return Ok(());
        }
        let rl = self.rec_len;
        let total = self.owner.len();
        let qs = f64::from(self.query_scale);
        let mut r = 0usize;
        while r < total {
            let n = (total - r).min(self.buf.len() / rl);
            let chunk = self.buf.get_mut(..n * rl).unwrap_or(&mut []);
            file.read_exact_at(chunk, HEADER_BYTES + (r * rl) as u64)
                .map_err(|e| err!(Io, "reading {} failed: {}", self.path.display(), e))?;
            let owners = self.owner.get(r..r + n).unwrap_or(&[]);
            for (rec, &id) in chunk.chunks_exact(rl).zip(owners) {
                if id == NONE {
                    continue;
                }
                let st = le_u32(rec, 8);
                if self.held.get(id as usize).copied() != Some(st) {
                    continue;
                }
                let scale = f64::from(f32::from_bits(le_u32(rec, 12)));
                let v = rec.get(16..16 + self.dim).unwrap_or(&[]);
                let score = f64::from(dot(v, &self.query16) - self.query_bias) * scale * qs;
                if out.len() >= limit && out.hits().first().is_some_and(|w| score < w.score) {
                    continue;
                }
                // Only a candidate is checked against the store: live, current, filters.
                let current = store.slots.get(id).is_some_and(|s| stamp(s.created, s.ver) == st);
                if current && admit(id) {
                    out.offer(RankHit { id, score }, limit);
                }
            }
            r += n;
        }
        out.sort();
        Ok(())
    }
}
