//! Figures for the tag area (see bench.rs for the shared helpers).

/// Prints this area's figures.
pub fn run() {}
