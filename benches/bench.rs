#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! `make bench`: prints one figure per line, `bench: <name> <value> <unit>`, so runs can be
//! compared. Never asserts on time. Each area of the program has its own file beside this one;
//! this file holds what they share: the counting global allocator of `tests/support` (allocations
//! per operation), timing helpers, percentiles, and peak RSS.
//!
//! Environment: `LKJAGENT_CORPUS` (default `../shared/corpus`) for the public JSON corpora; a
//! figure that needs a missing corpus is reported as skipped, not faked.
//! `LKJAGENT_BENCH_ONLY=json,tag` runs only the named areas (json, tag, http, store, agent, grammar,
//! bytes, report, recall, upkeep, vectors, commands, soak; `LKJAGENT_SOAK_CYCLES` shortens the soak: see
//! bench_soak.rs). `LKJAGENT_BIN` names the binary the process figures run (peak RSS, commands),
//! for a before and after.

use std::time::{Duration, Instant};

#[path = "../tests/support/alloc_counter.rs"]
mod alloc_counter;
mod bench_agent;
mod bench_bytes;
mod bench_commands;
mod bench_grammar;
mod bench_http;
mod bench_json;
mod bench_recall;
mod bench_report;
mod bench_soak;
mod bench_store;
mod bench_tag;
mod bench_upkeep;
mod bench_vectors;
#[path = "../tests/support/rng.rs"]
mod rng;

pub use alloc_counter::allocations;

#[global_allocator]
static GLOBAL: alloc_counter::CountingAlloc = alloc_counter::CountingAlloc;

/// Prints one figure.
pub fn report(name: &str, value: f64, unit: &str) {
    if value.is_finite() && value.abs() >= 100.0 {
        println!("bench: {} {:.1} {}", name, value, unit);
    } else {
        println!("bench: {} {:.3} {}", name, value, unit);
    }
}

/// Says a figure could not be measured, and why.
pub fn skipped(name: &str, why: &str) {
    println!("bench: {} skipped ({})", name, why);
}

/// Throughput in MB/s (10^6 bytes per second) for `bytes` processed in `elapsed`.
pub fn mb_per_s(bytes: usize, elapsed: Duration) -> f64 {
    bytes as f64 / 1e6 / elapsed.as_secs_f64().max(1e-12)
}

/// Runs `f` repeatedly for about `budget` (at least `min_iters` times) and returns the best
/// single-run time; best-of is the figure least disturbed by other work on the machine.
pub fn best_time(budget: Duration, min_iters: u32, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    let mut best = Duration::MAX;
    let mut n = 0u32;
    while n < min_iters || start.elapsed() < budget {
        let t = Instant::now();
        f();
        best = best.min(t.elapsed());
        n += 1;
    }
    best
}

/// The `p`-th percentile (0..=100) of `samples` (sorted in place), in the samples' unit.
pub fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort_unstable();
    let rank = ((p / 100.0) * (samples.len() - 1) as f64).round() as usize;
    samples.get(rank.min(samples.len() - 1)).copied().unwrap_or(Duration::ZERO)
}

/// Peak resident set size of this process (VmHWM), in KiB, if /proc tells it.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The corpus directory (`LKJAGENT_CORPUS`, default `../shared/corpus`).
pub fn corpus_dir() -> std::path::PathBuf {
    std::env::var_os("LKJAGENT_CORPUS").map(Into::into).unwrap_or_else(|| "../shared/corpus".into())
}

fn wanted(area: &str) -> bool {
    match std::env::var("LKJAGENT_BENCH_ONLY") {
        Ok(list) => list.split(',').any(|a| a.trim() == area),
        Err(_) => true,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    if wanted("json") {
        bench_json::run();
    }
    if wanted("tag") {
        bench_tag::run();
    }
    if wanted("http") {
        bench_http::run();
    }
    if wanted("store") {
        bench_store::run();
    }
    if wanted("agent") {
        bench_agent::run();
    }
    if wanted("grammar") {
        bench_grammar::run();
    }
    if wanted("bytes") {
        bench_bytes::run();
    }
    if wanted("report") {
        bench_report::run();
    }
    if wanted("recall") {
        bench_recall::run();
    }
    if wanted("upkeep") {
        bench_upkeep::run();
    }
    if wanted("vectors") {
        bench_vectors::run();
    }
    if wanted("commands") {
        bench_commands::run();
    }
    if wanted("soak") {
        bench_soak::run();
    }
    if let Some(kib) = peak_rss_kib() {
        report("bench_process_peak_rss", kib as f64 / 1024.0, "MiB");
    }
}
