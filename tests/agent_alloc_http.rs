//! The agent's steady state allocates nothing over real HTTP too: the cycle of `agent_alloc.rs`,
//! but with replies from the scripted OpenAI-compatible server on loopback, so the request
//! body, the HTTP exchange (kept alive) and the JSON reply parsing are inside the measurement.
//!
//! The server runs in this process on other threads and allocates freely, so the counting
//! allocator here counts per thread, and only on threads that opted in (each test's own
//! thread, which runs the agent): `support/alloc_counter.rs`'s `ThreadCountingAlloc`. Three
//! tests: unstreamed, streamed (SSE) and constrained (a grammar per cycle) replies.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "support/alloc_counter.rs"]
mod alloc_counter;
#[path = "support/cycle_script.rs"]
mod cycle_script;
#[path = "support/loopback.rs"]
mod loopback;
#[path = "support/temp.rs"]
mod temp;

use cycle_script::cycle_reply;
use lkjagent::agent::config;
use lkjagent::agent::engine::{Agent, Model};
use lkjagent::llm;
use loopback::{content, Server};
use temp::{shipped, TempDir};

#[global_allocator]
static GLOBAL: alloc_counter::ThreadCountingAlloc = alloc_counter::ThreadCountingAlloc;

const WARM_UP: usize = 12;
const MEASURED: usize = 120;

#[test]
fn a_cycle_over_http_allocates_nothing_after_warm_up() {
    measure(false, "off");
}

#[test]
fn a_streamed_cycle_allocates_nothing_after_warm_up() {
    measure(true, "off");
}

/// The reply grammar is generated from the live state every cycle (its key lists included)
/// and sent with a fresh seed: all in buffers reserved at start.
#[test]
fn a_constrained_cycle_allocates_nothing_after_warm_up() {
    measure(false, "grammar");
}

/// Runs the agent against the scripted server (`stream` on or off, replies constrained by
/// `constrain`, which the scripted server ignores) and asserts zero allocations per measured
/// cycle on this thread.
fn measure(stream: bool, constrain: &str) {
    let script = (0..WARM_UP + MEASURED).map(|i| content(&cycle_reply(i))).collect();
    let server = Server::llm(script, content("<agent><next_state>thinking</next_state></agent>"));
    let dir = TempDir::new(&format!("alloc-http-{}-{}", stream, constrain));
    let cfg = shipped("config.json")
        .replace("http://127.0.0.1:1234/v1/chat/completions", &server.endpoint())
        .replace("\"stream\": false", if stream { "\"stream\": true" } else { "\"stream\": false" })
        // One request per cycle: no constraint probe (`auto` probes once at the start).
        .replace("\"constrain\": \"auto\"", &format!("\"constrain\": \"{}\"", constrain));
    dir.write("config.json", cfg);
    dir.write("memory.json", shipped("memory.json"));

    let config = config::load(&dir.0).unwrap();
    let client = llm::Client::new(&config.llm).unwrap();
    let mut agent = Agent::open(&dir.0, config, Model::Client(Box::new(client)), false).unwrap();
    let mut progress = |_: u64| {};
    let stop = || false;
    for _ in 0..WARM_UP {
        let r = agent.cycle(&mut progress, &stop).unwrap();
        assert!(r.error.is_none() && !r.invalid_reply, "warm-up cycle {} failed: {:?}", r.cycle, r);
    }

    alloc_counter::count_this_thread(true);
    let sanity = alloc_counter::thread_allocations();
    drop(std::hint::black_box(Vec::<u8>::with_capacity(16)));
    assert!(alloc_counter::thread_allocations() > sanity, "the counting allocator is not counting");

    let mut allocating = Vec::new();
    let mut actions = 0;
    for _ in 0..MEASURED {
        let before = alloc_counter::thread_allocations();
        let r = agent.cycle(&mut progress, &stop).unwrap();
        let n = alloc_counter::thread_allocations() - before;
        if n > 0 {
            allocating.push((r.cycle, r.actions.iter().next().map_or("no action", |a| a.kind), n));
        }
        assert!(r.error.is_none() && !r.invalid_reply, "cycle {} failed: {:?}", r.cycle, r);
        actions += r.actions.len();
    }
    alloc_counter::count_this_thread(false);
    assert_eq!(server.chat_count(), WARM_UP + MEASURED, "one request per cycle");
    assert_eq!(server.chats()[0].body_str().contains("\"stream\":true"), stream);
    assert_eq!(server.chats().iter().all(|c| c.body_str().contains("\"grammar\"")), constrain == "grammar");
    assert!(actions >= MEASURED / 4);
    assert!(
        allocating.is_empty(),
        "allocations in {} of {} cycles over HTTP, stream {} (cycle, action, allocations): {:?}",
        allocating.len(),
        MEASURED,
        stream,
        allocating
    );
}
