//! The agent's steady state allocates nothing over real HTTP too: the cycle of `agent_alloc.rs`,
//! but with replies from the scripted OpenAI-compatible server on loopback, so the request
//! body, the HTTP exchange (kept alive) and the JSON reply parsing are inside the measurement.
//!
//! The server runs in this process on other threads and allocates freely, so the counting
//! allocator here counts per thread, and only on threads that opted in (each test's own
//! thread, which runs the agent): `support/alloc_counter.rs`'s `ThreadCountingAlloc`. Tests:
//! unstreamed, streamed (SSE) and constrained (a grammar per cycle) chat replies, and the same
//! through text-completion endpoints (`/v1/completions`, llama.cpp's `/completion`).
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
use loopback::{chunked, content, json_ok, Action, Seen, Server};
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// The prompt goes as one document and the answer comes in `choices[0].text`.
#[test]
fn a_constrained_text_completion_cycle_allocates_nothing_after_warm_up() {
    measure_at("/v1/completions", false, "grammar");
}

/// llama.cpp's native `/completion`, streamed: SSE pieces of `content` with no `[DONE]`.
#[test]
fn a_streamed_llama_cpp_completion_cycle_allocates_nothing_after_warm_up() {
    measure_at("/completion", true, "off");
}

/// Runs the agent against the scripted chat server; see [`measure_at`].
fn measure(stream: bool, constrain: &str) {
    measure_at("/v1/chat/completions", stream, constrain);
}

/// A text-completion answer, in the dialect of the endpoint at `path`, streamed or whole.
fn completion_answer(path: &str, text: &str, stream: bool) -> Action {
    let json = |t: &str| {
        let mut out = String::new();
        lkjagent::json::Writer::compact(&mut out).string(t).unwrap();
        out
    };
    let llama = path == "/completion";
    if !stream {
        return Action::Reply(json_ok(&if llama {
            format!(
                r#"{{"content":{},"stop":true,"stop_type":"eos","tokens_evaluated":500,"tokens_predicted":40,"timings":{{"cache_n":450,"prompt_n":50}}}}"#,
                json(text)
            )
        } else {
            format!(
                r#"{{"object":"text_completion","choices":[{{"text":{},"index":0,"finish_reason":"stop"}}],"usage":{{"prompt_tokens":500,"completion_tokens":40}}}}"#,
                json(text)
            )
        }));
    }
    let mut events = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = rest.len().min(16);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        events.push(if llama {
            format!("data: {{\"content\":{},\"stop\":false}}\n\n", json(piece))
        } else {
            format!("data: {{\"choices\":[{{\"text\":{},\"index\":0,\"finish_reason\":null}}]}}\n\n", json(piece))
        });
    }
    events.push(if llama {
        r#"data: {"content":"","stop":true,"stop_type":"eos","tokens_evaluated":500,"tokens_predicted":40}"#.to_string()
            + "\n\n"
    } else {
        r#"data: {"choices":[{"text":"","index":0,"finish_reason":"stop"}]}"#.to_string() + "\n\ndata: [DONE]\n\n"
    });
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    Action::Reply(chunked("200 OK", "text/event-stream", &events))
}

/// Runs the agent against a scripted server at `path` (chat, or a text-completion endpoint;
/// `stream` on or off, replies constrained by `constrain`, which the scripted server ignores)
/// and asserts zero allocations per measured cycle on this thread.
fn measure_at(path: &'static str, stream: bool, constrain: &str) {
    let idle = "<agent><next_state>thinking</next_state></agent>";
    let server = if path.ends_with("/chat/completions") {
        let script = (0..WARM_UP + MEASURED).map(|i| content(&cycle_reply(i))).collect();
        Server::llm(script, content(idle))
    } else {
        let asked = AtomicUsize::new(0);
        Server::start(move |_, seen: &Seen| {
            if seen.method != "POST" || seen.path != path {
                return Action::Reply(json_ok(r#"{"data":[{"id":"m"}]}"#));
            }
            let i = asked.fetch_add(1, Ordering::Relaxed);
            let text = if i < WARM_UP + MEASURED { cycle_reply(i) } else { idle.to_string() };
            completion_answer(path, &text, seen.body_str().contains("\"stream\":true"))
        })
    };
    let dir = TempDir::new(&format!("alloc-http-{}-{}-{}", path.replace('/', "_"), stream, constrain));
    let cfg = shipped("config.json")
        .replace("http://127.0.0.1:1234/v1/chat/completions", &server.url(path))
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
    let asked: Vec<Seen> = server.seen().into_iter().filter(|s| s.method == "POST").collect();
    assert_eq!(asked.len(), WARM_UP + MEASURED, "one request per cycle");
    assert!(asked.iter().all(|s| s.path == path));
    assert_eq!(asked[0].body_str().contains("\"stream\":true"), stream);
    assert_eq!(asked.iter().all(|c| c.body_str().contains("\"grammar\"")), constrain == "grammar");
    assert_eq!(asked[0].body_str().contains("\"prompt\":"), !path.ends_with("/chat/completions"));
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
