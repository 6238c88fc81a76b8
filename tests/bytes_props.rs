#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Property tests of `lkjagent::bytes` against naive reference implementations, on random
//! haystacks and needles drawn from small alphabets (so that matches, near matches and case
//! variants happen), sliced at random offsets (so that every alignment to the 8-byte words is
//! seen), and long enough at times that the substring search hands over to its fallback.

use lkjagent::bytes::{
    contains_ignore_ascii_case, find, find_byte, find_either, find_ignore_ascii_case, rfind_byte, rfind_either,
    rfind_ignore_ascii_case,
};
use proptest::prelude::*;

fn naive_find(hay: &[u8], needle: &[u8], fold: bool) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    hay.windows(needle.len()).position(|w| if fold { w.eq_ignore_ascii_case(needle) } else { w == needle })
}

fn naive_rfind(hay: &[u8], needle: &[u8], fold: bool) -> Option<usize> {
    if needle.is_empty() {
        return Some(hay.len());
    }
    hay.windows(needle.len()).rposition(|w| if fold { w.eq_ignore_ascii_case(needle) } else { w == needle })
}

/// Alphabets: two letters; both cases of two letters; letters with bytes one bit-5 flip away
/// from them (`@`, `` ` ``, `[`, `{`) and non-ASCII; the extremes of the byte range.
const ALPHABETS: [&[u8]; 5] =
    [b"ab", b"aAbB", b"aA@`[{\xc3\xa9\xe3", b"\x00\x01\x7f\x80\xfe\xff xX", b"abcdefghAB .,\n"];

/// A byte string over one alphabet (chosen by index), up to `max` bytes.
fn text(alphabet: usize, max: usize) -> impl Strategy<Value = Vec<u8>> {
    let a = ALPHABETS[alphabet % ALPHABETS.len()];
    prop::collection::vec(prop::sample::select(a), 0..max)
}

/// A haystack (sometimes long), a needle over the same alphabet, and an offset to slice the
/// haystack at.
fn case() -> impl Strategy<Value = (Vec<u8>, Vec<u8>, usize)> {
    (0..ALPHABETS.len(), prop_oneof![3 => Just(80usize), 1 => Just(3000usize)])
        .prop_flat_map(|(a, max)| (text(a, max), text(a, 9), 0usize..8))
}

/// Like [`case`], but the needle is planted in the haystack (a random case flip of each letter)
/// somewhere, so that the search has a true match beside its near misses.
fn planted() -> impl Strategy<Value = (Vec<u8>, Vec<u8>, usize)> {
    (case(), any::<u64>(), any::<prop::sample::Index>()).prop_map(|((mut hay, needle, off), flips, at)| {
        if needle.len() <= hay.len() {
            let at = at.index(hay.len() - needle.len() + 1);
            for (i, &b) in needle.iter().enumerate() {
                hay[at + i] = if flips >> (i % 64) & 1 == 1 { b.to_ascii_uppercase() } else { b };
            }
        }
        (hay, needle, off)
    })
}

/// Every substring search on `hay` agrees with the naive one.
fn substring_searches_match_naive(hay: &[u8], needle: &[u8]) -> Result<(), TestCaseError> {
    prop_assert_eq!(find(hay, needle), naive_find(hay, needle, false));
    prop_assert_eq!(find_ignore_ascii_case(hay, needle), naive_find(hay, needle, true));
    prop_assert_eq!(rfind_ignore_ascii_case(hay, needle), naive_rfind(hay, needle, true));
    prop_assert_eq!(contains_ignore_ascii_case(hay, needle), naive_find(hay, needle, true).is_some());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn single_bytes_match_naive((hay, needle, off) in case(), pick in any::<prop::sample::Index>()) {
        let hay = &hay[off.min(hay.len())..];
        // Bytes from the needle (likely in the haystack) and one arbitrary byte.
        let a = needle.first().copied().unwrap_or(b'a');
        let b = if needle.is_empty() { 0xff } else { needle[pick.index(needle.len())] };
        for (x, y) in [(a, b), (b, a), (a, a), (0u8, 0x80u8)] {
            prop_assert_eq!(find_byte(hay, x), hay.iter().position(|&c| c == x));
            prop_assert_eq!(rfind_byte(hay, x), hay.iter().rposition(|&c| c == x));
            prop_assert_eq!(find_either(hay, x, y), hay.iter().position(|&c| c == x || c == y));
            prop_assert_eq!(rfind_either(hay, x, y), hay.iter().rposition(|&c| c == x || c == y));
        }
    }

    #[test]
    fn substrings_match_naive((hay, needle, off) in case()) {
        substring_searches_match_naive(&hay[off.min(hay.len())..], &needle)?;
    }

    #[test]
    fn planted_substrings_match_naive((hay, needle, off) in planted()) {
        substring_searches_match_naive(&hay[off.min(hay.len())..], &needle)?;
    }

    #[test]
    fn suffixes_and_prefixes_are_found((hay, _, off) in case(), cut in any::<prop::sample::Index>(), len in 1usize..12) {
        // A needle taken from the haystack itself, case flipped: always found, at or before
        // (after) where it was taken from.
        let hay = &hay[off.min(hay.len())..];
        prop_assume!(!hay.is_empty());
        let start = cut.index(hay.len());
        let end = (start + len).min(hay.len());
        let needle: Vec<u8> = hay[start..end].iter().map(|b| if b.is_ascii_lowercase() { b.to_ascii_uppercase() } else { b.to_ascii_lowercase() }).collect();
        let first = find_ignore_ascii_case(hay, &needle).unwrap();
        let last = rfind_ignore_ascii_case(hay, &needle).unwrap();
        prop_assert!(first <= start && start <= last);
        prop_assert_eq!(Some(first), naive_find(hay, &needle, true));
        prop_assert_eq!(Some(last), naive_rfind(hay, &needle, true));
        prop_assert_eq!(find(hay, &hay[start..end]), naive_find(hay, &hay[start..end], false));
    }
}
