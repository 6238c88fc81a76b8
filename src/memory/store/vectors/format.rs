//! The format of `store.vec` (see the module documentation of `vectors`): the header, a
//! record's encoding and checksum, int8 quantization and the dot product over it, and the
//! whole-file check `lkjagent check` runs.

use super::*;

/// File name of the vectors inside the data directory.
pub const VECTORS_NAME: &str = "store.vec";

const MAGIC: &[u8; 8] = b"LKJVEC01";
/// Bytes of the header.
pub const HEADER_BYTES: u64 = 32;
/// Bytes of a record besides the vector.
pub const RECORD_OVERHEAD: usize = 20;

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

pub(super) fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        x.copy_from_slice(s);
    }
    u32::from_le_bytes(x)
}

pub(super) fn le_u64(b: &[u8], at: usize) -> u64 {
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
pub(super) fn record_ok(rec: &[u8]) -> bool {
    let body = rec.len().saturating_sub(4);
    rec.len() > RECORD_OVERHEAD && crc32(rec.get(..body).unwrap_or(&[])) == le_u32(rec, body)
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
    crate::sort::sort(&mut keys);
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
