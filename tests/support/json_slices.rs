//! The streaming JSON parser fed in slices, for the tests that check that a verdict and an error
//! do not depend on where the input is cut (`fuzz.rs`, `json_utf8_chunks.rs`).
//!
//! Include with `#[path = "support/json_slices.rs"] mod json_slices;`.
#![allow(clippy::indexing_slicing)]

use lkjagent::error::Error;
use lkjagent::json::{Parser, Validate};

/// Validates `input` with [`Parser`] fed in slices cut at `cuts` (each taken modulo
/// `input.len() + 1`, so any numbers do): the first error, if any.
pub fn validate_sliced(input: &[u8], cuts: &[usize]) -> Result<(), Error> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    points.push(0);
    points.push(input.len());
    points.sort_unstable();
    let mut p = Parser::new();
    for w in points.windows(2) {
        p.feed(&input[w[0]..w[1]], &mut Validate)?;
    }
    p.finish(&mut Validate)
}

/// The `N` of `at byte N` in an error message.
pub fn byte_offset(msg: &str) -> Option<usize> {
    let rest = &msg[msg.find("at byte ")? + 8..];
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}
