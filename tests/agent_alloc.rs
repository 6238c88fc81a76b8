//! The agent's steady state allocates nothing (docs/design.md §2): after a few warm-up cycles, a
//! cycle makes zero heap allocations. Measured with a per-thread counting allocator around
//! `Agent::cycle`, driven in-process by the `replay` provider on a generated script of a few
//! hundred valid replies (thinking, commanding, evaluating; storage_save of distinct keys,
//! working_memory_add and _remove, storage_search, storage_load), so every cycle goes through
//! the whole path: prompt, reply parsing, actions, logs, persist (atomic write + fsync) and the
//! audit line. The only thing missing is the HTTP exchange, which the http tests hold to the
//! same rule.
//!
//! One test in this file: the allocation counter is process-wide, and a second test running
//! on another thread would be counted too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "support/alloc_counter.rs"]
mod alloc_counter;

#[path = "support/cycle_script.rs"]
mod cycle_script;
#[path = "support/temp.rs"]
mod temp;

#[global_allocator]
static GLOBAL: alloc_counter::ThreadCountingAlloc = alloc_counter::ThreadCountingAlloc;

use lkjagent::agent::config;
use lkjagent::agent::engine::{Agent, Model};
use lkjagent::llm::{self, ProviderKind};
use temp::TempDir;

const WARM_UP: usize = 12;
const MEASURED: usize = 240;

fn prepare() -> TempDir {
    let dir = TempDir::shipped_data("alloc");
    let script: String = (0..WARM_UP + MEASURED + 9).map(cycle_script::cycle_reply_line).collect();
    dir.write("script.jsonl", script);
    dir
}

#[test]
fn a_cycle_allocates_nothing_after_warm_up() {
    // Counts this thread only: the test harness's own thread may allocate meanwhile (a
    // blocking channel receive does), which once made this test fail on a busy machine.
    alloc_counter::count_this_thread(true);
    let dir = prepare();
    let mut config = config::load(&dir.0).unwrap();
    config.llm.provider = ProviderKind::Replay;
    config.llm.replay_path = Some(dir.0.join("script.jsonl"));
    let client = llm::Client::new(&config.llm).unwrap();
    let opened = alloc_counter::thread_allocations();
    let mut agent = Agent::open(&dir.0, config, Model::Client(Box::new(client)), false).unwrap();
    assert!(alloc_counter::thread_allocations() > opened, "the counting allocator is not counting");
    let mut progress = |_: u64| {};
    let stop = || false;

    let mut prompt_tokens = 0;
    for _ in 0..WARM_UP {
        let r = agent.cycle(&mut progress, &stop).unwrap();
        assert!(r.error.is_none() && !r.invalid_reply, "warm-up cycle {} failed: {:?}", r.cycle, r);
        prompt_tokens = prompt_tokens.max(r.tokens_est);
    }
    // A paging limit the loaded entries pass now and then, so the measured cycles include the
    // `paging` state and the agent's own paging out.
    agent.config.agent.paging_limit.enable = true;
    agent.config.agent.paging_limit.max_tokens = prompt_tokens + 40;
    let mut paged = 0usize;
    let mut per_cycle: Vec<(u64, &'static str, u64)> = Vec::with_capacity(MEASURED);
    let mut actions = 0usize;
    for _ in 0..MEASURED {
        let before = alloc_counter::thread_allocations();
        let r = agent.cycle(&mut progress, &stop).unwrap();
        let n = alloc_counter::thread_allocations() - before;
        assert!(r.error.is_none() && !r.invalid_reply && !r.finished, "cycle {} failed: {:?}", r.cycle, r);
        actions += r.actions.iter().filter(|a| a.ok).count();
        paged += r.paged_out;
        let kind = r.actions.iter().next().map_or("no action", |a| a.kind);
        per_cycle.push((r.cycle, kind, n));
    }
    assert!(actions >= MEASURED / 4, "the script should act every third cycle ({} actions)", actions);
    assert!(paged > 0, "no cycle paged out");
    assert!(agent.store.len() >= MEASURED / 9, "distinct keys saved: {}", agent.store.len());
    let allocating: Vec<&(u64, &str, u64)> = per_cycle.iter().filter(|(_, _, n)| *n > 0).collect();
    let total: u64 = per_cycle.iter().map(|(_, _, n)| n).sum();
    assert!(
        allocating.is_empty(),
        "{} allocation(s) in {} of {} cycles after warm-up (cycle, action, allocations): {:?}",
        total,
        allocating.len(),
        MEASURED,
        allocating
    );
}
