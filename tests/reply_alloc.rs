#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Reading replies and rendering prompts allocate nothing once the buffers are reserved: the
//! whole reply corpus is read, feedback written and working memory rendered under a counting
//! allocator. One test in this binary, so no other test allocates concurrently.

#[path = "support/alloc_counter.rs"]
mod alloc_counter;

#[global_allocator]
static GLOBAL: alloc_counter::ThreadCountingAlloc = alloc_counter::ThreadCountingAlloc;

use lkjagent::fixed::FixedBuf;
use lkjagent::reply::{write_feedback, Reader};
use lkjagent::tag::{render_pairs, render_tree, Style};

#[test]
fn steady_state_reading_and_rendering_allocate_nothing() {
    // Counts this thread only: the test harness's own thread may allocate meanwhile (a
    // blocking channel receive does), which once made this test fail on a busy machine.
    alloc_counter::count_this_thread(true);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/replies");
    let mut replies: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    replies.push(vec![0xff; 70_000]);
    let mut reader = Reader::new();
    let mut prompt = FixedBuf::with_capacity("test prompt", 1 << 20);
    let mut doc = lkjagent::json::Document::with_capacity(256, 4096);
    doc.parse(br#"{"role":"You keep a dictionary.","rules":["one action","tags, comma separated"],"n":3}"#).unwrap();
    let pairs = [("user_request", "Define vagueness"), ("dictionary,terms", "a < b & c"), ("2024,plans", "x")];

    // The counter is process-wide and the test harness's own threads may allocate now and
    // then; an allocation made by reading would show in every round, so the quietest round
    // must show none.
    let mut fewest = u64::MAX;
    for _ in 0..5 {
        let before = alloc_counter::thread_allocations();
        for r in &replies {
            let it = reader.read(r, 2);
            prompt.clear();
            write_feedback(&mut prompt, &it, "commanding").unwrap();
            render_pairs(&mut prompt, pairs.iter().copied(), Style::Lines).unwrap();
            render_tree(&mut prompt, doc.root(), Some("base"), Style::Lines).unwrap();
        }
        fewest = fewest.min(alloc_counter::thread_allocations() - before);
    }
    assert_eq!(fewest, 0, "{} allocations in the quietest round of reading {} replies", fewest, replies.len());
}
