#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! The byte offset of a JSON error (a UTF-8 error above all) does not depend on how the input
//! was cut into slices.

#[path = "support/json_slices.rs"]
mod json_slices;

use json_slices::{byte_offset, validate_sliced};
use proptest::prelude::*;

/// The error message of parsing `input` in slices cut at `cuts`, or `None` if it parsed.
fn error_sliced(input: &[u8], cuts: &[usize]) -> Option<String> {
    validate_sliced(input, cuts).err().map(|e| e.message().to_string())
}

/// Strings with multi-byte characters, invalid and cut sequences, around JSON punctuation.
fn pieces() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop::sample::select(vec![
        &b"\""[..],
        b"[",
        b"]",
        b"{",
        b"}",
        b":",
        b",",
        b"a",
        b" ",
        b"\n",
        b"\\",
        b"\\u00e9",
        b"\\ud83d",
        "é".as_bytes(),
        "日".as_bytes(),
        "😀".as_bytes(),
        b"\xc3",
        b"\xe6\x97",
        b"\xf0\x9f\x98",
        b"\xff",
        b"\x80",
        b"\xed\xa0\x80",
        b"\xe0\x80",
        b"\xf4\x90",
        b"\xc0\xaf",
        b"1",
        b"true",
    ]);
    prop::collection::vec(piece, 0..24).prop_map(|v| {
        let mut out = b"[\"".to_vec();
        out.extend(v.concat());
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn error_offsets_do_not_depend_on_slicing(input in pieces(), cuts in prop::collection::vec(any::<usize>(), 0..6)) {
        let whole = error_sliced(&input, &[]);
        let sliced = error_sliced(&input, &cuts);
        prop_assert_eq!(whole.as_deref().and_then(byte_offset), sliced.as_deref().and_then(byte_offset),
            "{:?} whole {:?} sliced {:?}", String::from_utf8_lossy(&input), whole, sliced);
        prop_assert_eq!(&whole, &sliced);
        let bytewise: Vec<usize> = (0..input.len()).collect();
        let b = error_sliced(&input, &bytewise);
        prop_assert_eq!(whole.as_deref().and_then(byte_offset), b.as_deref().and_then(byte_offset),
            "{:?} whole {:?} bytewise {:?}", String::from_utf8_lossy(&input), whole, b);
        prop_assert_eq!(&whole, &b);
    }
}
