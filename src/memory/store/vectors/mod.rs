//! The vector index, a room of the store: recall by meaning. It keeps `store.vec`, a cache of
//! what the embeddings endpoint said of each entry (appended records, synced; rewrites by temp
//! file and rename), and two small tables in RAM; the log stays the truth.
//!
//! Recall by meaning: one quantized vector per live entry in a file of its own (`store.vec`),
//! filled from an embeddings endpoint a bounded number per cycle, searched by a bounded scan,
//! and fused with the word ranking by reciprocal rank.
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

use super::recall::rank::{RankHit, Ranked};
use super::{EntryId, Store};
use crate::error::Result;
use crate::limits::{
    EMBED_BACKOFF_BASE_SECS, EMBED_BACKOFF_MAX_SECS, EMBED_BATCH_MAX, EMBED_FILL_PER_CYCLE, EMBED_SCAN_PER_CYCLE,
    EMBED_TEXT_MAX_BYTES, KEY_MAX_BYTES, RANK_MAX_RESULTS, RRF_K, VECTORS_COMPACT_DEAD_PERCENT,
    VECTORS_COMPACT_MIN_DEAD, VECTORS_MAX_RESULTS, VECTORS_READ_BYTES,
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
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("")
}

/// File name of the vectors inside the data directory.
pub const VECTORS_NAME: &str = "store.vec";

const MAGIC: &[u8; 8] = b"LKJVEC01";
/// Bytes of the header.
pub const HEADER_BYTES: u64 = 32;
/// Bytes of a record besides the vector.
pub const RECORD_OVERHEAD: usize = 20;
/// A record that belongs to no live entry.
const NONE: u32 = u32::MAX;

/// How a ranked query weighs entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    /// BM25 over words only.
    Words,
    /// Cosine of the embeddings only.
    Meaning,
    /// Both, fused by reciprocal rank (k = 60); words only when no embeddings are at hand.
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

/// The hash a record names its entry by: FNV-1a 64 of the key as written.
pub fn key_hash(key: &Key) -> u64 {
    fnv1a64(key.as_str().as_bytes())
}

/// What makes a vector current: the entry's creation time and version (a new value raises the
/// version; a deleted and re-created key starts again with another creation time or id).
/// Never 0 (0 means "no vector").
pub fn stamp(created: u32, version: u32) -> u32 {
    let h = fnv1a64_continue(fnv1a64(&created.to_le_bytes()), &version.to_le_bytes());
    ((h ^ (h >> 32)) as u32) | 1
}

/// Quantizes `v` (any length > 0) to unit length in int8: returns the scale.
pub fn quantize(v: &[f32], out: &mut [i8]) -> f32 {
    let norm = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
    let max = v.iter().fold(0f64, |m, x| m.max(f64::from(x.abs())));
    if norm == 0.0 || max == 0.0 || !norm.is_finite() {
        out.iter_mut().for_each(|q| *q = 0);
        return 0.0;
    }
    // Unit length, then the largest component to 127.
    let scale = max / norm / 127.0;
    for (q, x) in out.iter_mut().zip(v) {
        let y = (f64::from(*x) / norm / scale).round().clamp(-127.0, 127.0);
        *q = y as i8;
    }
    scale as f32
}

/// The dot product of a stored vector (bytes in offset binary: the int8 component plus 128)
/// and a query widened to 16 bits: `Σ byte · q`. Subtract `128 · Σ q` for the int8 dot
/// product. This form (zero-extended bytes, 16-bit products that cannot overflow: 255 · 127)
/// is the one the compiler turns into SIMD on x86-64's baseline SSE2 (`pmullw`, `pmaddwd`):
/// measured twice as fast as sign-extending int8 here.
#[inline]
pub fn dot(a: &[u8], b: &[i16]) -> i32 {
    let mut s = 0i32;
    for (&p, &q) in a.iter().zip(b) {
        s += i32::from(i16::from(p) * q);
    }
    s
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        x.copy_from_slice(s);
    }
    u32::from_le_bytes(x)
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    if let Some(s) = b.get(at..at + 8) {
        x.copy_from_slice(s);
    }
    u64::from_le_bytes(x)
}

/// The file's header for vectors of `identity` and `dim` dimensions.
pub fn header(identity: u64, dim: usize) -> [u8; HEADER_BYTES as usize] {
    let mut h = [0u8; HEADER_BYTES as usize];
    h[..8].copy_from_slice(MAGIC);
    h[8..16].copy_from_slice(&identity.to_le_bytes());
    h[16..20].copy_from_slice(&(dim as u32).to_le_bytes());
    let crc = crc32(&h[..24]);
    h[24..28].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Encodes one record into `out` (exactly `RECORD_OVERHEAD + q.len()` bytes): for tools that
/// write a vectors file themselves (the benchmark) and for [`Meaning::fill`].
pub fn encode(out: &mut [u8], key_hash: u64, stamp: u32, scale: f32, q: &[i8]) {
    let n = out.len();
    let body = n.saturating_sub(4);
    for (i, b) in
        key_hash.to_le_bytes().iter().chain(stamp.to_le_bytes().iter()).chain(scale.to_le_bytes().iter()).enumerate()
    {
        if let Some(o) = out.get_mut(i) {
            *o = *b;
        }
    }
    for (o, x) in out.iter_mut().skip(16).zip(q) {
        // Offset binary: -127..=127 as 1..=255 (see [`dot`]).
        *o = (*x as u8) ^ 0x80;
    }
    let crc = crc32(out.get(..body).unwrap_or(&[]));
    if let Some(t) = out.get_mut(body..) {
        t.copy_from_slice(&crc.to_le_bytes());
    }
}

/// Whether a record's checksum holds.
fn record_ok(rec: &[u8]) -> bool {
    let body = rec.len().saturating_sub(4);
    rec.len() > RECORD_OVERHEAD && crc32(rec.get(..body).unwrap_or(&[])) == le_u32(rec, body)
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
        keys.sort_unstable();
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

    /// Whether the endpoint may be asked now (not waiting out a failure).
    fn may_ask(&mut self) -> bool {
        !matches!(self.retry_at, Some(t) if Instant::now() < t)
    }

    /// Notes an endpoint failure: the first one warns; the wait doubles.
    fn failed(&mut self, e: crate::error::Error) {
        if !self.warned {
            e.context(format_args!(
                "recall by meaning is off for now, search uses words only; the endpoint is tried again in {} s",
                self.backoff.as_secs()
            ))
            .print_warning();
            self.warned = true;
            self.warnings += 1;
        }
        let now = Instant::now();
        self.retry_at = Some(now.checked_add(self.backoff).unwrap_or(now));
        self.backoff = self.backoff.saturating_mul(2).min(Duration::from_secs(EMBED_BACKOFF_MAX_SECS));
    }

    fn answered(&mut self) {
        self.retry_at = None;
        self.warned = false;
        self.backoff = Duration::from_secs(EMBED_BACKOFF_BASE_SECS);
    }

    fn fill(&mut self, store: &mut Store, max: usize, should_stop: &dyn Fn() -> bool) -> Result<Filled> {
        let mut done = Filled::default();
        if self.read_only {
            bail!(
                PersistFailed,
                "{}: vectors are filled by the agent (or `memory embed`), not by a reader",
                self.path.display()
            );
        }
        self.follow(store)?;
        let next = store.slots.next_id();
        if next == 0 || max == 0 || !self.may_ask() {
            return Ok(done);
        }
        let mut looked = 0usize;
        let scan = EMBED_SCAN_PER_CYCLE.min(next);
        while looked < scan && done.embedded < max {
            self.batch_ids.clear();
            let batch_start = self.cursor;
            let want = (max - done.embedded).min(self.embedder.batch()).min(EMBED_BATCH_MAX);
            while looked < scan && self.batch_ids.len() < want {
                let id = (self.cursor % next) as EntryId;
                self.cursor = (self.cursor + 1) % next;
                looked += 1;
                let Some(s) = store.slots.get(id) else { continue };
                if self.held.get(id as usize).copied() != Some(stamp(s.created, s.ver)) {
                    self.batch_ids.push(id);
                }
            }
            if self.batch_ids.is_empty() {
                break;
            }
            match self.embed_batch(store, should_stop) {
                Ok(n) => {
                    self.answered();
                    done.embedded += n;
                }
                Err(e) if is_endpoint_failure(&e) => {
                    self.failed(e);
                    done.missing += self.batch_ids.len();
                    // The entries are looked at again on the next fill.
                    self.cursor = batch_start;
                    return Ok(done);
                }
                Err(e) => return Err(e),
            }
        }
        self.compact_if_due(store)?;
        Ok(done)
    }

    /// Embeds the entries of `batch_ids` and appends their records (one write, one sync).
    fn embed_batch(&mut self, store: &mut Store, should_stop: &dyn Fn() -> bool) -> Result<usize> {
        self.batch_text.clear();
        self.batch_ends.clear();
        let mut ids_ok = 0usize;
        for i in 0..self.batch_ids.len() {
            let Some(&id) = self.batch_ids.get(i) else { break };
            let Some(key) = store.key(id) else { continue };
            self.batch_text.push_str(key.as_str());
            self.batch_text.push_str(": ");
            let value = store.value(id)?;
            self.batch_text.push_str(head(value, EMBED_TEXT_MAX_BYTES));
            self.batch_ends.push(self.batch_text.len());
            if let Some(slot) = self.batch_ids.get_mut(ids_ok) {
                *slot = id;
            }
            ids_ok += 1;
        }
        self.batch_ids.truncate(ids_ok);
        let mut texts: [&str; EMBED_BATCH_MAX] = [""; EMBED_BATCH_MAX];
        let mut from = 0usize;
        for (t, &end) in texts.iter_mut().zip(self.batch_ends.iter()) {
            *t = self.batch_text.get(from..end).unwrap_or("");
            from = end;
        }
        let n = ids_ok;
        let texts = texts.get(..n).unwrap_or(&[]);
        let dim = self.dim;
        self.embedder.embed(TextKind::Document, texts, &mut self.floats, should_stop)?;
        // The records, then one positioned write at the end of the file and a sync.
        let rl = self.rec_len;
        if self.owner.len() + n > self.max_records {
            self.compact(store)?;
            if self.owner.len() + n > self.max_records {
                bail!(CapacityExceeded, "{}: no room for {} more records", self.path.display(), n);
            }
        }
        for (i, &id) in self.batch_ids.iter().enumerate() {
            let Some(s) = store.slots.get(id) else { continue };
            let Some(key) = store.key(id) else { continue };
            let v = self.floats.get(i * dim..(i + 1) * dim).unwrap_or(&[]);
            let scale = quantize(v, &mut self.qbuf);
            if let Some(rec) = self.out.get_mut(i * rl..(i + 1) * rl) {
                encode(rec, key_hash(&key), stamp(s.created, s.ver), scale, &self.qbuf);
            }
        }
        let Some(file) = self.file.as_ref() else { bail!(Internal, "{} is not open", self.path.display()) };
        let at = HEADER_BYTES + self.records * rl as u64;
        let bytes = self.out.get(..n * rl).unwrap_or(&[]);
        file.write_all_at(bytes, at)
            .and_then(|_| file.sync_data())
            .map_err(|e| err!(PersistFailed, "appending to {} failed: {}", self.path.display(), e))?;
        for (i, &id) in self.batch_ids.iter().enumerate() {
            let st = self.out.get(i * rl..(i + 1) * rl).map_or(0, |r| le_u32(r, 8));
            if let Some(h) = self.held.get_mut(id as usize) {
                if *h == 0 {
                    self.current += 1;
                }
                *h = st;
            }
            self.owner.push(id);
        }
        self.records += n as u64;
        self.embedded += n as u64;
        Ok(n)
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

/// Fuses two rankings by reciprocal rank: each entry scores Σ 1 / (k + rank) over the lists
/// it is in (rank from 1, k = [`RRF_K`]); the best `limit` go to `out`, ties in entry id order.
pub fn fuse(a: &Ranked, b: &Ranked, limit: usize, out: &mut Ranked) {
    out.clear();
    let rrf = |rank: usize| 1.0 / (RRF_K + rank as f64 + 1.0);
    let rank_in = |list: &Ranked, id: EntryId| list.hits().iter().position(|h| h.id == id);
    for (i, h) in a.hits().iter().enumerate() {
        let score = rrf(i) + rank_in(b, h.id).map_or(0.0, rrf);
        out.offer(RankHit { id: h.id, score }, limit);
    }
    for (i, h) in b.hits().iter().enumerate() {
        if rank_in(a, h.id).is_none() {
            out.offer(RankHit { id: h.id, score: rrf(i) }, limit);
        }
    }
    out.sort();
}

impl Store {
    /// [`Store::rank_where`] by words, meaning or both (see [`By`]). Without `meaning`
    /// (embeddings not configured), or when the endpoint cannot embed the query now (warned
    /// once), it is the word ranking alone; `By::Meaning` then gives nothing. Each list is
    /// taken to the depth [`RANK_MAX_RESULTS`] allows before the fusion, at least `limit` and
    /// at least 100.
    #[allow(clippy::too_many_arguments)]
    pub fn rank_by(
        &mut self,
        meaning: Option<&mut Meaning>,
        by: By,
        query: &str,
        limit: usize,
        archived: Archived,
        tags: Option<&Key>,
        out: &mut Ranked,
    ) -> Result<()> {
        self.rank_by_inner(meaning, by, query, limit, archived, tags, false, out)
    }

    /// [`Store::relevant`] fused with the nearest entries by meaning when `meaning` is given
    /// and the endpoint answers (the prompt builder's "entries most relevant to the task").
    pub fn relevant_by(
        &mut self,
        meaning: Option<&mut Meaning>,
        text: &str,
        limit: usize,
        out: &mut Ranked,
    ) -> Result<()> {
        self.rank_by_inner(meaning, By::Both, text, limit, Archived::Exclude, None, true, out)
    }

    #[allow(clippy::too_many_arguments)]
    fn rank_by_inner(
        &mut self,
        meaning: Option<&mut Meaning>,
        by: By,
        query: &str,
        limit: usize,
        archived: Archived,
        tags: Option<&Key>,
        long_text: bool,
        out: &mut Ranked,
    ) -> Result<()> {
        let words = |s: &mut Store, limit: usize, out: &mut Ranked| match long_text {
            true => s.relevant(query, limit, out),
            false => s.rank_where(query, limit, archived, tags, out),
        };
        let Some(m) = meaning.filter(|_| by != By::Words) else {
            if by == By::Meaning {
                out.clear();
                return Ok(());
            }
            return words(self, limit, out);
        };
        m.v.follow(self)?;
        // No vectors yet (a fresh configuration): no request, words alone.
        if m.v.current == 0 && by == By::Both {
            return words(self, limit, out);
        }
        if !m.v.query_vector(query, &|| false) {
            if by == By::Meaning {
                out.clear();
                return Ok(());
            }
            return words(self, limit, out);
        }
        let required = match tags {
            Some(key) => match self.tagset_of(key) {
                Some(set) => Some((set, key.tag_count())),
                None => {
                    out.clear();
                    return Ok(());
                }
            },
            None => None,
        };
        let admit = |id: EntryId| self.admits(id, archived, required.as_ref());
        if by == By::Meaning {
            return m.v.nearest(self, limit, &admit, out);
        }
        // RANK_MAX_RESULTS (1024) is above 100.
        let depth = limit.clamp(100, RANK_MAX_RESULTS);
        m.v.nearest(self, depth, &admit, &mut m.near)?;
        words(self, depth, &mut m.words)?;
        fuse(&m.words, &m.near, limit, out);
        Ok(())
    }
}

/// Removes the temp file a vectors rewrite cut short by a crash left (the writer only).
pub fn remove_temp(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(format!(".{}.compact", VECTORS_NAME)));
}

/// What `lkjagent check` learns of `store.vec` by reading it whole (it changes nothing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VectorsCheck {
    /// The file's size in bytes.
    pub bytes: u64,
    /// The identity in its header (model, dimension, document prefix; see [`Embed::identity`]).
    pub identity: u64,
    /// Numbers per vector, from its header.
    pub dimension: usize,
    /// Whole records whose checksum holds.
    pub records: u64,
    /// Of those, the ones that are the current vector of a live entry.
    pub current: u64,
    /// Records whose checksum fails, before the last good one (damage, not a crash): their
    /// entries are embedded again.
    pub damaged: u64,
    /// Bytes at the end that are not a whole good record: a record being appended now, or one
    /// a crash cut short (the writer drops them when it opens the file).
    pub torn_tail_bytes: u64,
}

/// Reads `store.vec` beside `store` and checks it: its header (magic, checksum, a dimension
/// this program keeps) and every record's checksum; counts the records that are the current
/// vector of one of `store`'s live entries. `Ok(None)` when there is no file. An error (code
/// `IO`) when it is not a vectors file or its header is damaged: the writer then starts it
/// again, and every entry is embedded again.
pub fn check_file(store: &Store) -> Result<Option<VectorsCheck>> {
    let path = store.dir().join(VECTORS_NAME);
    let file = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!(Io, "opening {} failed: {}", path.display(), e),
    };
    let bytes = file.metadata().map_err(|e| err!(Io, "reading {} failed: {}", path.display(), e))?.len();
    let mut h = [0u8; HEADER_BYTES as usize];
    if bytes < HEADER_BYTES || file.read_exact_at(&mut h, 0).is_err() || !h.starts_with(MAGIC) {
        bail!(Io, "{} is not a vectors file (no {} header)", path.display(), "LKJVEC01");
    }
    if crc32(h.get(..24).unwrap_or(&[])) != le_u32(&h, 24) {
        bail!(Io, "the header of {} is damaged (checksum)", path.display());
    }
    let dimension = le_u32(&h, 16) as usize;
    if dimension == 0 || dimension > crate::limits::EMBED_MAX_DIMENSION {
        bail!(
            Io,
            "the header of {} gives {} dimensions (1..={} are kept)",
            path.display(),
            dimension,
            crate::limits::EMBED_MAX_DIMENSION
        );
    }
    let rl = RECORD_OVERHEAD + dimension;
    let mut out = VectorsCheck { bytes, identity: le_u64(&h, 8), dimension, ..VectorsCheck::default() };
    // Live entries by key hash, sorted (16 bytes per entry, for this one scan), as `build`.
    let mut keys: Vec<(u64, u32)> = Vec::with_capacity(store.len());
    for id in store.ids() {
        if let Some(k) = store.key(id) {
            keys.push((key_hash(&k), id));
        }
    }
    keys.sort_unstable();
    // Which entries have a current vector (one bit per id): counted once each, however many
    // copies of it the file holds.
    let mut held = vec![0u8; store.slots.room().div_ceil(8)];
    let mut buf = vec![0u8; (VECTORS_READ_BYTES / rl).max(1) * rl];
    let whole = (bytes - HEADER_BYTES) / rl as u64;
    let (mut r, mut good_end, mut bad_since_good) = (0u64, HEADER_BYTES, 0u64);
    while r < whole {
        let n = ((whole - r) as usize).min(buf.len() / rl);
        let chunk = buf.get_mut(..n * rl).unwrap_or(&mut []);
        file.read_exact_at(chunk, HEADER_BYTES + r * rl as u64)
            .map_err(|e| err!(Io, "reading {} failed: {}", path.display(), e))?;
        for (i, rec) in chunk.chunks_exact(rl).enumerate() {
            if !record_ok(rec) {
                bad_since_good += 1;
                continue;
            }
            out.damaged += bad_since_good;
            bad_since_good = 0;
            out.records += 1;
            good_end = HEADER_BYTES + (r + i as u64 + 1) * rl as u64;
            let (kh, st) = (le_u64(rec, 0), le_u32(rec, 8));
            let Ok(at) = keys.binary_search_by(|(h, _)| h.cmp(&kh)) else { continue };
            let Some(&(_, id)) = keys.get(at) else { continue };
            if store.slots.get(id).is_some_and(|s| stamp(s.created, s.ver) == st) {
                if let Some(b) = held.get_mut(id as usize / 8) {
                    let bit = 1u8 << (id % 8);
                    out.current += u64::from(*b & bit == 0);
                    *b |= bit;
                }
            }
        }
        r += n as u64;
    }
    out.torn_tail_bytes = bytes - good_end;
    Ok(Some(out))
}
