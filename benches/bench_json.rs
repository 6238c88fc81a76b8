//! Figures for the json area (see bench.rs for the shared helpers), on the nativejson-benchmark
//! files canada.json (numbers), citm_catalog.json (keys, integers) and twitter.json (strings,
//! non-ASCII, escapes):
//!
//! - `json_parse_<file>`: [`Document::parse`] throughput, MB/s of input, arena reserved once.
//! - `json_validate_<file>`: the streaming parser alone (no arena), MB/s of input.
//! - `json_serialize_<file>`: [`Writer::value`] compact throughput, MB/s of output, into a
//!   `String` reserved once.
//! - `json_parse_allocs_per_parse`: heap allocations per `Document::parse` (the most over the
//!   three files); the target is 0.

use lkjagent::json::{Document, Parser, Validate, Writer};
use std::time::Duration;

/// Arena for the benchmark files (canada.json, the largest, needs ~ 280,000 nodes).
const NODES: usize = 1 << 20;
const TEXT: usize = 1 << 23;
const BUDGET: Duration = Duration::from_millis(1500);

/// Prints this area's figures.
pub fn run() {
    let dir = super::corpus_dir().join("json/nativejson/data");
    let mut doc = Document::with_capacity(NODES, TEXT);
    let mut out = String::with_capacity(8 << 20);
    let mut worst_allocs: Option<u64> = None;
    for name in ["canada", "citm_catalog", "twitter"] {
        let path = dir.join(format!("{}.json", name));
        let Ok(bytes) = std::fs::read(&path) else {
            let why = format!("corpus not found at {}", path.display());
            super::skipped(&format!("json_parse_{}", name), &why);
            super::skipped(&format!("json_validate_{}", name), &why);
            super::skipped(&format!("json_serialize_{}", name), &why);
            continue;
        };

        let t = super::best_time(BUDGET, 5, || doc.parse(&bytes).unwrap());
        super::report(&format!("json_parse_{}", name), super::mb_per_s(bytes.len(), t), "MB/s");

        let t = super::best_time(BUDGET, 5, || {
            let mut p = Parser::new();
            p.feed(&bytes, &mut Validate).unwrap();
            p.finish(&mut Validate).unwrap();
        });
        super::report(&format!("json_validate_{}", name), super::mb_per_s(bytes.len(), t), "MB/s");

        doc.parse(&bytes).unwrap();
        let t = super::best_time(BUDGET, 5, || {
            out.clear();
            Writer::compact(&mut out).value(doc.root()).unwrap();
        });
        super::report(&format!("json_serialize_{}", name), super::mb_per_s(out.len(), t), "MB/s");

        const RUNS: u64 = 10;
        let before = super::allocations();
        for _ in 0..RUNS {
            doc.parse(&bytes).unwrap();
        }
        let per = (super::allocations() - before) / RUNS;
        worst_allocs = Some(worst_allocs.map_or(per, |w| w.max(per)));
    }
    match worst_allocs {
        Some(n) => super::report("json_parse_allocs_per_parse", n as f64, "allocs"),
        None => super::skipped("json_parse_allocs_per_parse", "corpus not found"),
    }
}
