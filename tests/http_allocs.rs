//! Zero heap allocations per request once the connection is set up: a whole LLM completion
//! (request body written, sent over a kept-alive connection, reply read, parsed and split) is
//! repeated while a counting allocator watches the test's own thread (the client's): the
//! loopback server (`support/loopback.rs`) runs on other threads and allocates as it likes, and
//! the test harness's threads may allocate at any moment (an all-threads count once saw 4
//! allocations of theirs under load).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "support/alloc_counter.rs"]
mod alloc_counter;

#[path = "support/loopback.rs"]
mod loopback;

#[global_allocator]
static GLOBAL: alloc_counter::ThreadCountingAlloc = alloc_counter::ThreadCountingAlloc;

use lkjagent::llm::{Client, Prompt, Settings};
use loopback::Server;

const REPLY: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n\
18\r\n{\"choices\":[{\"message\":{\r\n\
3c\r\n\"content\":\"<think>hm</think><act>ok</act>\",\"reasoning\":\"r\"},\r\n\
4b\r\n\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\r\n\
0\r\n\r\n";

#[test]
fn no_allocation_per_completion_on_a_kept_alive_connection() {
    let server = Server::always(REPLY.to_vec());
    // With an API key, so every answer is scanned for it (see `http::redact`).
    std::env::set_var("LKJAGENT_ALLOC_TEST_KEY", "sk-Q7wX2mR9pL4vK8nB3cZ6hT1yF5gJ0dSa");
    let settings = Settings {
        endpoint: server.url("/v1"),
        api_key_env: Some("LKJAGENT_ALLOC_TEST_KEY".into()),
        stop: vec!["</act>".into()],
        extra: r#"{"reasoning_effort":"none"}"#.into(),
        ..Settings::default()
    };
    let mut client = Client::new(&settings).unwrap();
    let prompt = Prompt::new(Some("sys"), "what next? é");
    let stop = || false;
    let run = |client: &mut Client| {
        let c = client.complete(&prompt, &mut |_| {}, &stop).unwrap();
        assert_eq!((c.content, c.reasoning), ("<act>ok</act>", Some("r\nhm")));
    };
    run(&mut client); // connection set up
    alloc_counter::count_this_thread(true);
    let sanity = alloc_counter::thread_allocations();
    drop(std::hint::black_box(Vec::<u8>::with_capacity(16)));
    assert!(alloc_counter::thread_allocations() > sanity, "the counting allocator is not counting");
    let before = alloc_counter::thread_allocations();
    for _ in 0..200 {
        run(&mut client);
    }
    let allocs = alloc_counter::thread_allocations() - before;
    alloc_counter::count_this_thread(false);
    assert_eq!(allocs, 0, "heap allocations over 200 completions");
    // Every completion went over the one connection set up before counting.
    assert_eq!(server.connections(), 1, "the connection was kept alive");
}
