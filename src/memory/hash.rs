//! The two small checksums the memory layer needs, written here (std has neither).
//!
//! - [`fnv1a64`]: FNV-1a, 64-bit. A fast, well-known non-cryptographic hash for content
//!   de-duplication and hash tables. Not collision resistant against an adversary: the store
//!   never trusts a hash match alone, it compares the bytes before treating two values as equal.
//! - [`crc32`]: CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320, as in zlib, PNG and
//!   `cksum -o 3`), the framing checksum of every store log record. It detects all burst errors
//!   up to 32 bits and every torn write we care about (a record cut short or half-overwritten).
//!   Slice-by-16: sixteen bytes per step through sixteen 256-entry tables (16 KiB, built on the
//!   first checksum), where the plain table method takes one byte per step. [`crc32_continue`] carries a
//!   checksum across blocks, so a file can be checked without holding it whole.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Once;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64 of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    fnv1a64_continue(FNV_OFFSET, bytes)
}

/// Continues an FNV-1a 64 hash from `state` over `bytes` (start with [`fnv1a64`] of nothing).
/// Out of line: the store hashes keys, tags and words in some sixty places, and the loop costs
/// more than the call (docs/measurements.md, "Session 30, house").
#[inline(never)]
pub fn fnv1a64_continue(mut state: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        state ^= u64::from(b);
        state = state.wrapping_mul(FNV_PRIME);
    }
    state
}

/// The slice-by-16 tables. `CRC_TABLES[0]` is the classic byte table: the CRC register after
/// shifting one byte `i` through it. `CRC_TABLES[k][i]` is byte `i` followed by `k` zero bytes,
/// so sixteen bytes fold into the register with one lookup each, independent of one another
/// (16 KiB of tables; twice slice-by-8's, for about half again its speed on the checkpoint's
/// and the index files' sections). Built on the first checksum, not at compile time: as a
/// constant they were 16 KiB of the binary (docs/measurements.md, "Paying back").
// Every index is below its bound: the `const _` below runs it at compile time, where an
// out-of-range index is a build error, and it takes no input, so at run time it does the same.
#[allow(clippy::indexing_slicing)]
const fn crc_tables() -> [[u32; 256]; 16] {
    let mut t = [[0u32; 256]; 16];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut k = 1;
    while k < 16 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

// `crc_tables` evaluated by the compiler (and not kept: nothing reads it).
const _: [[u32; 256]; 16] = crc_tables();

/// The tables, filled on the first checksum (a few microseconds, once). Atomics, so that the
/// zeros they start as go to `.bss`, not into the binary; a relaxed load is a plain load.
static CRC_TABLES: [[AtomicU32; 256]; 16] = [const { [const { AtomicU32::new(0) }; 256] }; 16];
static CRC_TABLES_BUILT: Once = Once::new();

fn crc_tables_built() -> &'static [[AtomicU32; 256]; 16] {
    CRC_TABLES_BUILT.call_once(|| {
        for (row, built) in CRC_TABLES.iter().zip(crc_tables().iter()) {
            for (slot, value) in row.iter().zip(built) {
                slot.store(*value, Ordering::Relaxed);
            }
        }
    });
    &CRC_TABLES
}

/// Entry `(x & 0xff)` of table `k`. The index is below 256 by construction, so the `get` never
/// fails and the optimizer drops its check.
#[inline(always)]
fn crc_lookup(t: &[[AtomicU32; 256]; 16], k: usize, x: u32) -> u32 {
    t.get(k).and_then(|t| t.get((x & 0xff) as usize)).map_or(0, |v| v.load(Ordering::Relaxed))
}

/// CRC-32 (IEEE) of `bytes`.
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32_continue(0, bytes)
}

/// Continues a CRC-32 over `bytes`: `crc` is the checksum of the bytes so far (0 for none), and
/// the result is the checksum of those bytes followed by `bytes`. So
/// `crc32_continue(crc32(a), b) == crc32(a ++ b)`, and a file can be checked block by block.
pub fn crc32_continue(crc: u32, bytes: &[u8]) -> u32 {
    let t = crc_tables_built();
    let mut c = !crc;
    let (words, rest) = bytes.as_chunks::<16>();
    for w in words {
        // The register meets the first four bytes; all sixteen then go through the tables at
        // once, the first byte through the table of fifteen trailing zero bytes.
        let (a, b) = w.split_at(8);
        let a = u64::from_le_bytes(a.try_into().unwrap_or([0; 8])) ^ u64::from(c);
        let b = u64::from_le_bytes(b.try_into().unwrap_or([0; 8]));
        let (a0, a1, b0, b1) = (a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32);
        c = crc_lookup(t, 15, a0)
            ^ crc_lookup(t, 14, a0 >> 8)
            ^ crc_lookup(t, 13, a0 >> 16)
            ^ crc_lookup(t, 12, a0 >> 24)
            ^ crc_lookup(t, 11, a1)
            ^ crc_lookup(t, 10, a1 >> 8)
            ^ crc_lookup(t, 9, a1 >> 16)
            ^ crc_lookup(t, 8, a1 >> 24)
            ^ crc_lookup(t, 7, b0)
            ^ crc_lookup(t, 6, b0 >> 8)
            ^ crc_lookup(t, 5, b0 >> 16)
            ^ crc_lookup(t, 4, b0 >> 24)
            ^ crc_lookup(t, 3, b1)
            ^ crc_lookup(t, 2, b1 >> 8)
            ^ crc_lookup(t, 1, b1 >> 16)
            ^ crc_lookup(t, 0, b1 >> 24);
    }
    for &b in rest {
        c = crc_lookup(t, 0, c ^ u32::from(b)) ^ (c >> 8);
    }
    !c
}

/// The CRC-32 polynomial, reflected.
const CRC_POLY: u32 = 0xedb8_8320;

/// `a · b` modulo the CRC-32 polynomial (both reflected: bit 31 is x^0), as zlib's
/// `multmodp`.
fn crc_mul(a: u32, mut b: u32) -> u32 {
    let mut p = 0u32;
    let mut m = 1u32 << 31;
    while m != 0 {
        if a & m != 0 {
            p ^= b;
        }
        m >>= 1;
        b = if b & 1 != 0 { (b >> 1) ^ CRC_POLY } else { b >> 1 };
    }
    p
}

/// The operator that [`crc32_combine`] applies for `len` bytes: x^(8·len) modulo the
/// polynomial (compute it once for a length met often).
pub fn crc32_shift(len: u64) -> u32 {
    // x^(2^k) for k = 3 (a byte) on: squared at each bit of `len`.
    let mut square = crc_mul(1 << 30, 1 << 30); // x^2
    square = crc_mul(square, square); // x^4
    square = crc_mul(square, square); // x^8: one byte
    let mut p = 1u32 << 31; // x^0
    let mut n = len;
    while n != 0 {
        if n & 1 != 0 {
            p = crc_mul(square, p);
        }
        square = crc_mul(square, square);
        n >>= 1;
    }
    p
}

/// The CRC-32 of `a ++ b` from `crc_a = crc32(a)`, `crc_b = crc32(b)` and `shift =
/// crc32_shift(b.len())`, without reading either (zlib's `crc32_combine`): a checksum of
/// blocks already checksummed costs 32 steps a block instead of a pass over its bytes.
pub fn crc32_combine(crc_a: u32, crc_b: u32, shift: u32) -> u32 {
    crc_mul(shift, crc_a) ^ crc_b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        // Published test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"123456789"), 0xCBF43926);
        assert_eq!(crc32(b"The quick brown fox jumps over the lazy dog"), 0x414FA339);
        assert_eq!(fnv1a64_continue(fnv1a64(b"foo"), b"bar"), fnv1a64(b"foobar"));
    }

    /// The CRC one bit at a time, straight from the definition: the reference the tables must
    /// agree with.
    fn crc32_bitwise(bytes: &[u8]) -> u32 {
        let mut c = !0u32;
        for &b in bytes {
            c ^= u32::from(b);
            for _ in 0..8 {
                c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            }
        }
        !c
    }

    #[test]
    fn crc32_more_vectors() {
        // zlib's crc32 of these.
        assert_eq!(crc32(b"a"), 0xE8B7BE43);
        assert_eq!(crc32(b"abc"), 0x352441C2);
        assert_eq!(crc32(b"message digest"), 0x20159D7F);
        assert_eq!(crc32(b"abcdefghijklmnopqrstuvwxyz"), 0x4C2750BD);
        assert_eq!(crc32(&[0u8; 32]), 0x190A55AD);
        assert_eq!(crc32(&[0xffu8; 32]), 0xFF6CAB0B);
        // Every length around the 8-byte steps, every alignment.
        let data: Vec<u8> = (0..300u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        for off in 0..8 {
            for len in 0..80 {
                let s = &data[off..off + len];
                assert_eq!(crc32(s), crc32_bitwise(s), "off {off} len {len}");
            }
        }
    }

    #[test]
    fn crc32_continues_across_any_split() {
        let data: Vec<u8> = (0..200u32).map(|i| (i * 7 + i / 3) as u8).collect();
        let whole = crc32(&data);
        for cut in 0..=data.len() {
            let (a, b) = data.split_at(cut);
            assert_eq!(crc32_continue(crc32(a), b), whole, "cut {cut}");
        }
        // In uneven blocks, as a file reader would.
        let mut c = 0;
        for block in data.chunks(13) {
            c = crc32_continue(c, block);
        }
        assert_eq!(c, whole);
        assert_eq!(crc32_continue(0, b""), 0);
        assert_eq!(crc32_continue(whole, b""), whole);
    }

    #[test]
    fn crc32_combine_equals_the_crc_of_the_two_together() {
        let data: Vec<u8> = (0..3000u32).map(|i| (i * 31 + i / 7) as u8).collect();
        for cut in [0, 1, 5, 16, 999, 1024, 2048, 2999, 3000] {
            let (a, b) = data.split_at(cut);
            let shift = crc32_shift(b.len() as u64);
            assert_eq!(crc32_combine(crc32(a), crc32(b), shift), crc32(&data), "cut {cut}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

        #[test]
        fn crc32_matches_the_bitwise_reference(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2100),
            off in 0usize..16,
            cut in 0usize..2100,
        ) {
            let s = &data[off.min(data.len())..];
            proptest::prop_assert_eq!(crc32(s), crc32_bitwise(s));
            let (a, b) = s.split_at(cut.min(s.len()));
            proptest::prop_assert_eq!(crc32_continue(crc32(a), b), crc32_bitwise(s));
        }
    }
}
