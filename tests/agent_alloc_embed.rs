//! The agent's steady state with recall by meaning on (`memory.embeddings`): each cycle embeds
//! the entries without a current vector (every new `storage_save`) through a loopback
//! embeddings server, appends them to `store.vec` and syncs it, and `storage_search` with
//! words fuses the two rankings. After warm-up none of it allocates: the request and answer
//! buffers, the parsed document, the batch and the two fusion lists are reserved when the
//! agent opens (`llm::embed::Embedder::new`, `Meaning::open`). What does allocate, outside
//! the steady state: opening (the tables), a new connection to the endpoint, and the one scan
//! after the store compacts (a sorted list of key hashes, freed after).
//!
//! Counting is per thread (`support/alloc_counter.rs`'s `ThreadCountingAlloc`): the server's
//! threads allocate freely.
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
use loopback::{content, json_ok, llm_script, Action, Seen, Server};
use temp::{shipped, TempDir};

#[global_allocator]
static GLOBAL: alloc_counter::ThreadCountingAlloc = alloc_counter::ThreadCountingAlloc;

/// Past the first search by words (cycle 17), which opens the full-text index (that allocates
/// once, embeddings or not: `memory::store::recall`).
const WARM_UP: usize = 18;
const MEASURED: usize = 90;
const DIM: usize = 8;

/// A deterministic vector per text: its bytes summed into DIM buckets.
fn embeddings(seen: &Seen) -> Action {
    let mut doc = lkjagent::json::Document::with_capacity(4096, 1 << 20);
    doc.parse(&seen.body).unwrap();
    let items: Vec<String> = doc
        .root()
        .get("input")
        .unwrap()
        .items()
        .enumerate()
        .map(|(i, t)| {
            let mut v = [1.0f32; DIM];
            for (j, b) in t.as_str().unwrap().bytes().enumerate() {
                v[(j + b as usize) % DIM] += f32::from(b) / 255.0;
            }
            let nums: Vec<String> = v.iter().map(|x| x.to_string()).collect();
            format!(r#"{{"index":{},"embedding":[{}]}}"#, i, nums.join(","))
        })
        .collect();
    Action::Reply(json_ok(&format!(r#"{{"data":[{}]}}"#, items.join(","))))
}

#[test]
fn a_cycle_with_embeddings_on_allocates_nothing_after_warm_up() {
    let idle = "<agent><next_state>thinking</next_state></agent>";
    // The scripted replies, with a storage_search by words in place of every ninth reply's
    // tag search, so that the fused ranking runs too.
    let script = (0..WARM_UP + MEASURED)
        .map(|i| {
            let r = cycle_reply(i);
            content(&r.replace(
                "<type>storage_search</type><tags>dictionary</tags>",
                "<type>storage_search</type><query>definition of a word</query>",
            ))
        })
        .collect();
    let chat = llm_script(script, content(idle));
    let server =
        Server::start(move |n, seen| if seen.path == "/v1/embeddings" { embeddings(seen) } else { chat(n, seen) });
    let dir = TempDir::new("alloc-embed");
    let cfg = shipped("config.json")
        .replace("http://127.0.0.1:1234/v1/chat/completions", &server.url("/v1/chat/completions"))
        .replace("\"constrain\": \"auto\"", "\"constrain\": \"off\"");
    assert!(cfg.contains("\"store_capacity\": 65536"), "the shipped config's memory section changed");
    let cfg = cfg.replace(
        "\"store_capacity\": 65536",
        &format!(
            "\"store_capacity\": 65536, \"embeddings\": {{\"endpoint\": \"{}\", \"model\": \"m\", \"dimension\": {}}}",
            server.url("/v1/embeddings"),
            DIM
        ),
    );
    dir.write("config.json", cfg);
    dir.write("memory.json", shipped("memory.json"));

    let config = config::load(&dir.0).unwrap();
    assert!(config.embeddings.is_some());
    let client = llm::Client::new(&config.llm).unwrap();
    let mut agent = Agent::open(&dir.0, config, Model::Client(Box::new(client)), false).unwrap();
    let mut progress = |_: u64| {};
    let stop = || false;
    for _ in 0..WARM_UP {
        let r = agent.cycle(&mut progress, &stop).unwrap();
        assert!(r.error.is_none() && !r.invalid_reply, "warm-up cycle {} failed: {:?}", r.cycle, r);
    }
    alloc_counter::count_this_thread(true);
    let mut allocating = Vec::new();
    for _ in 0..MEASURED {
        let before = alloc_counter::thread_allocations();
        let r = agent.cycle(&mut progress, &stop).unwrap();
        let n = alloc_counter::thread_allocations() - before;
        if n > 0 {
            allocating.push((r.cycle, r.actions.iter().next().map_or("no action", |a| a.kind), n));
        }
        assert!(r.error.is_none() && !r.invalid_reply, "cycle {} failed: {:?}", r.cycle, r);
    }
    alloc_counter::count_this_thread(false);
    let embeds: Vec<Seen> = server.seen().into_iter().filter(|s| s.path == "/v1/embeddings").collect();
    // Every saved entry was embedded (one per storage_save), and searches embedded their query.
    let saves = (0..WARM_UP + MEASURED).filter(|i| i % 9 == 1).count();
    assert!(embeds.len() > saves, "{} embeddings requests for {} saves", embeds.len(), saves);
    let vec_len = std::fs::metadata(dir.0.join("store.vec")).unwrap().len();
    assert!(vec_len > 32, "store.vec holds no vector");
    assert!(allocating.is_empty(), "allocations with embeddings on (cycle, action, allocations): {:?}", allocating);
}
