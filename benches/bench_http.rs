//! Figures for the http area (see bench.rs for the shared helpers).

/// Prints this area's figures.
pub fn run() {}
