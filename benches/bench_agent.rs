//! Figures for the agent area (see bench.rs for the shared helpers).

/// Prints this area's figures.
pub fn run() {}
