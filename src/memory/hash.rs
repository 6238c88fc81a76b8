//! The two small checksums the memory layer needs, written here (std has neither).
//!
//! - [`fnv1a64`]: FNV-1a, 64-bit. A fast, well-known non-cryptographic hash for content
//!   de-duplication and hash tables. Not collision resistant against an adversary: the store
//!   never trusts a hash match alone, it compares the bytes before treating two values as equal.
//! - [`crc32`]: CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320, as in zlib, PNG and
//!   `cksum -o 3`), the framing checksum of every store log record. It detects all burst errors
//!   up to 32 bits and every torn write we care about (a record cut short or half-overwritten).
//!   The table is computed at compile time.

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64 of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    fnv1a64_continue(FNV_OFFSET, bytes)
}

/// Continues an FNV-1a 64 hash from `state` over `bytes` (start with [`fnv1a64`] of nothing).
pub fn fnv1a64_continue(mut state: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        state ^= u64::from(b);
        state = state.wrapping_mul(FNV_PRIME);
    }
    state
}

// Evaluated at compile time: an out-of-range index would be a build error, not a panic.
#[allow(clippy::indexing_slicing)]
const fn crc_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

static CRC_TABLE: [u32; 256] = crc_table();

/// CRC-32 (IEEE) of `bytes`.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        let idx = ((c ^ u32::from(b)) & 0xff) as usize;
        c = CRC_TABLE.get(idx).copied().unwrap_or(0) ^ (c >> 8);
    }
    !c
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
}
