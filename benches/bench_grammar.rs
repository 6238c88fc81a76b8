//! Reply-grammar figures: the time to generate one cycle's GBNF grammar and JSON Schema from
//! the shipped configuration and a live state (working memory with entries, a store with
//! entries, so every key list is filled), and the allocations per generation (target 0).

use super::{allocations, percentile, report};
use lkjagent::agent::config;
use lkjagent::agent::constrain::Constrainer;
use lkjagent::agent::engine::PINNED_KEYS;
use lkjagent::grammar::Mode;
use lkjagent::memory::key::normalize;
use lkjagent::memory::store::Store;
use lkjagent::memory::working::WorkingSet;
use std::path::Path;
use std::time::{Duration, Instant};

pub fn run() {
    let dir = std::env::temp_dir().join(format!("lkjagent-bench-grammar-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
    std::fs::copy(data.join("config.json"), dir.join("config.json")).unwrap();
    let cfg = config::load(&dir).unwrap();
    let mut store = Store::open_with_capacity(&dir, 4096).unwrap();
    for i in 0..1000 {
        let key = normalize(&format!("glossary,topic_{},term_{}", i % 20, i)).unwrap();
        store.put(&key, "a one-sentence definition of the term", 1).unwrap();
    }
    let mut working = WorkingSet::new();
    for i in 0..24 {
        working.add(&normalize(&format!("note_{}", i)).unwrap(), "a working note", 1).unwrap();
    }
    let mut c = Constrainer::new(&cfg.llm, 1);
    for (mode, name) in [(Mode::Grammar, "gbnf"), (Mode::JsonSchema, "json_schema")] {
        let mut samples = Vec::with_capacity(2000);
        let mut allocs = 0u64;
        let mut bytes = 0;
        for i in 0..2000 {
            let state = &cfg.agent.states[i % cfg.agent.states.len()];
            let before = allocations();
            let t = Instant::now();
            c.prepare(
                Some(mode),
                cfg.prompts.shape(state),
                &cfg.agent.states,
                cfg.agent.max_actions_per_cycle,
                &working,
                Some(&store),
                &PINNED_KEYS,
                &cfg.agent.log_prefixes(),
                None,
            )
            .unwrap();
            samples.push(t.elapsed());
            allocs += allocations() - before;
            bytes = bytes.max(c.text().len());
        }
        let p50: Duration = percentile(&mut samples, 50.0);
        let p99: Duration = percentile(&mut samples, 99.0);
        report(&format!("grammar_{}_generate_p50", name), p50.as_secs_f64() * 1e6, "us");
        report(&format!("grammar_{}_generate_p99", name), p99.as_secs_f64() * 1e6, "us");
        report(&format!("grammar_{}_allocations_per_cycle", name), allocs as f64 / 2000.0, "allocs");
        report(&format!("grammar_{}_largest", name), bytes as f64, "bytes");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
