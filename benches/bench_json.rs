//! Figures for the json area (see bench.rs for the shared helpers).

/// Prints this area's figures.
pub fn run() {}
