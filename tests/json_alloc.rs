#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! The JSON layer's steady state allocates nothing: once a `Document` is reserved, parsing
//! (valid or not, capacity exceeded or not), reading, and writing into a fixed buffer make no
//! heap allocation. Counted on the test's own thread, which does all the work (the library
//! starts no thread).

#[path = "support/alloc_counter.rs"]
mod alloc_counter;

use lkjagent::fixed::FixedBuf;
use lkjagent::json::{Document, Parser, Validate, Writer};

#[global_allocator]
static GLOBAL: alloc_counter::ThreadCountingAlloc = alloc_counter::ThreadCountingAlloc;

const DOC: &[u8] = br#"{"model":"qwen","messages":[{"role":"user","content":"h\u00e9llo \ud83d\ude00 \"quoted\"\n"}],
  "temperature":0.7,"max_tokens":4096,"stream":false,"stop":null,"nested":{"a":[[],{},[1,2,{"b":""}]]}}"#;

#[test]
fn parse_read_and_write_allocate_nothing() {
    // Counts this thread only: the test harness's own thread may allocate meanwhile (a
    // blocking channel receive does), which once made this test fail on a busy machine.
    alloc_counter::count_this_thread(true);
    let mut doc = Document::with_capacity(256, 4096);
    let mut out = FixedBuf::with_capacity("test output", 4096);
    doc.parse(DOC).unwrap();
    let deep = vec![b'['; 1000];
    let too_many = format!("[{}0]", "0,".repeat(300)).into_bytes();

    let before = alloc_counter::thread_allocations();
    for _ in 0..20 {
        doc.parse(DOC).unwrap();
        let r = doc.root();
        assert_eq!(r.path("messages.[0].role").and_then(|v| v.as_str()), Some("user"));
        assert_eq!(r.get("max_tokens").and_then(|v| v.as_u64()), Some(4096));
        assert_eq!(r.get("temperature").and_then(|v| v.as_f64()), Some(0.7));
        assert_eq!(r.members().count(), 7);

        out.clear();
        let mut w = Writer::pretty(&mut out);
        w.begin_object().unwrap();
        w.key("copy").unwrap();
        w.value(r).unwrap();
        w.key("t").unwrap();
        w.f64(0.25).unwrap();
        w.key("n").unwrap();
        w.i64(-7).unwrap();
        w.end_object().unwrap();

        // Errors are plain values too: invalid input, too deep, too many values.
        assert!(doc.parse(b"[1,]").is_err());
        assert!(doc.parse(&deep).is_err());
        assert!(doc.parse(&too_many).is_err());
    }
    assert_eq!(alloc_counter::thread_allocations() - before, 0, "allocations during steady-state parse/read/write");

    let before = alloc_counter::thread_allocations();
    let mut p = Parser::new();
    for chunk in DOC.chunks(5) {
        p.feed(chunk, &mut Validate).unwrap();
    }
    p.finish(&mut Validate).unwrap();
    assert_eq!(alloc_counter::thread_allocations() - before, 0, "the streaming parser allocates");
}
