//! Figures for the byte-search area (see bench.rs for the shared helpers): `lkjagent::bytes`
//! on 16 MiB of lorem-ipsum-like text, in GB/s (10^9 bytes per second), beside the naive
//! `windows().any(eq_ignore_ascii_case)` loop it replaces; and the store's CRC-32 (slice-by-16)
//! on the same bytes, beside the one-table, byte-at-a-time loop it replaced.
//!
//! The no-match needle, "quantum flux capacity" (21 bytes), has only letters that occur in the
//! text: its rarest byte, 'q', starts words such as "quis" and "aliqua", so the scan has
//! candidates to reject along the way. A second needle has a byte the text lacks ('z'): the scan
//! alone.

use lkjagent::bytes::{find_byte, find_either, find_ignore_ascii_case, rfind_ignore_ascii_case};
use lkjagent::memory::hash::{crc32, crc32_continue};
use std::hint::black_box;
use std::time::Duration;

const WORDS: &[&str] = &[
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
    "consectetur",
    "adipiscing",
    "elit",
    "sed",
    "do",
    "eiusmod",
    "tempor",
    "incididunt",
    "ut",
    "labore",
    "et",
    "dolore",
    "magna",
    "aliqua",
    "enim",
    "ad",
    "minim",
    "veniam",
    "quis",
    "nostrud",
    "exercitation",
    "ullamco",
    "laboris",
    "nisi",
    "aliquip",
    "ex",
    "ea",
    "commodo",
    "consequat",
    "duis",
    "aute",
    "irure",
    "in",
    "reprehenderit",
    "voluptate",
    "velit",
    "esse",
    "cillum",
    "eu",
    "fugiat",
    "nulla",
    "pariatur",
    "excepteur",
    "sint",
    "occaecat",
    "cupidatat",
    "non",
    "proident",
    "sunt",
    "culpa",
    "qui",
    "officia",
    "deserunt",
    "mollit",
    "anim",
    "id",
    "est",
    "laborum",
];

const SIZE: usize = 16 << 20;

/// `SIZE` bytes of sentences of lorem ipsum words in a fixed pseudo-random order: capitalised
/// first words, commas, full stops, a line break now and then.
fn lorem() -> Vec<u8> {
    let mut rng = crate::rng::Rng::new(0x853c_49e6_748f_ea9b);
    let mut next = move |n: usize| rng.below(n);
    let mut out = Vec::with_capacity(SIZE + 64);
    while out.len() < SIZE {
        let words = 6 + next(12);
        for w in 0..words {
            let word = WORDS[next(WORDS.len())].as_bytes();
            if w == 0 {
                out.push(word[0].to_ascii_uppercase());
                out.extend_from_slice(&word[1..]);
            } else {
                out.extend_from_slice(word);
            }
            if w + 1 < words {
                out.extend_from_slice(if next(8) == 0 { b", " } else { b" " });
            }
        }
        out.extend_from_slice(if next(6) == 0 { b".\n" } else { b". " });
    }
    out.truncate(SIZE);
    out
}

/// The CRC-32 as it was before slice-by-8 (now slice-by-16): one table, one byte per step.
fn crc32_bytewise(bytes: &[u8]) -> u32 {
    let mut table = [0u32; 256];
    for (i, e) in table.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
        }
        *e = c;
    }
    let mut c = !0u32;
    for &b in bytes {
        c = table[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

fn gb_per_s(bytes: usize, t: Duration) -> f64 {
    super::mb_per_s(bytes, t) / 1000.0
}

/// Prints this area's figures.
pub fn run() {
    let text = lorem();
    let budget = Duration::from_millis(700);
    let needle = b"quantum flux capacity";
    let absent = b"wizard of the storage";
    assert!(needle.len() == 21 && absent.len() == 21);

    let t = super::best_time(budget, 5, || {
        assert_eq!(black_box(find_ignore_ascii_case(black_box(&text), needle)), None);
    });
    super::report("bytes_find_ignore_case_no_match_16mib", gb_per_s(SIZE, t), "GB/s");

    let t = super::best_time(budget, 5, || {
        assert_eq!(black_box(rfind_ignore_ascii_case(black_box(&text), needle)), None);
    });
    super::report("bytes_rfind_ignore_case_no_match_16mib", gb_per_s(SIZE, t), "GB/s");

    let t = super::best_time(budget, 5, || {
        assert_eq!(black_box(find_ignore_ascii_case(black_box(&text), absent)), None);
    });
    super::report("bytes_find_ignore_case_absent_byte_16mib", gb_per_s(SIZE, t), "GB/s");

    let t = super::best_time(budget, 5, || {
        assert_eq!(black_box(find_byte(black_box(&text), b'#')), None);
    });
    super::report("bytes_find_byte_16mib", gb_per_s(SIZE, t), "GB/s");

    let t = super::best_time(budget, 5, || {
        assert_eq!(black_box(find_either(black_box(&text), b'#', b'@')), None);
    });
    super::report("bytes_find_either_16mib", gb_per_s(SIZE, t), "GB/s");

    let t = super::best_time(budget, 3, || {
        let n: &[u8] = black_box(needle);
        assert!(!black_box(black_box(&text).windows(n.len()).any(|w| w.eq_ignore_ascii_case(n))));
    });
    super::report("bytes_naive_windows_ignore_case_no_match_16mib", gb_per_s(SIZE, t), "GB/s");

    let want = crc32(&text);
    let t = super::best_time(budget, 5, || {
        assert_eq!(black_box(crc32(black_box(&text))), want);
    });
    super::report("crc32_slice_by_16_16mib", gb_per_s(SIZE, t), "GB/s");

    // In 64 KiB blocks, as a file reader would.
    let t = super::best_time(budget, 5, || {
        let c = black_box(&text).chunks(64 << 10).fold(0, crc32_continue);
        assert_eq!(black_box(c), want);
    });
    super::report("crc32_continue_64kib_blocks_16mib", gb_per_s(SIZE, t), "GB/s");

    let t = super::best_time(budget, 3, || {
        assert_eq!(black_box(crc32_bytewise(black_box(&text))), want);
    });
    super::report("crc32_bytewise_16mib", gb_per_s(SIZE, t), "GB/s");
}
