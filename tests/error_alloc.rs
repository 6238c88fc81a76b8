#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Errors never allocate while no more than `ERROR_MESSAGE_SLOTS` of them are alive: made,
//! cloned, given context and dropped, over and over (a slot is given back on drop). Past that,
//! messages spill to the heap and are still kept whole. Counted on the test's own thread; one
//! test in this binary, so no other thread holds slots.

#[path = "support/alloc_counter.rs"]
mod alloc_counter;

use lkjagent::err;
use lkjagent::error::{Code, Error};
use lkjagent::limits::ERROR_MESSAGE_SLOTS;

#[global_allocator]
static GLOBAL: alloc_counter::ThreadCountingAlloc = alloc_counter::ThreadCountingAlloc;

#[test]
fn errors_use_slots_then_spill_and_give_slots_back() {
    // Counts this thread only: the test harness's own thread may allocate meanwhile (a
    // blocking channel receive does), which once made this test fail on a busy machine.
    alloc_counter::count_this_thread(true);
    let mut held: Vec<Error> = Vec::with_capacity(4 * ERROR_MESSAGE_SLOTS);

    // Made and dropped many times over: every message fits in a slot given back before.
    let before = alloc_counter::thread_allocations();
    for i in 0..10 * ERROR_MESSAGE_SLOTS {
        let e = err!(ReplyInvalid, "reply {} holds no instruction", i);
        let e = e.context(format_args!("cycle {}", i)).with_code(Code::TagParseError);
        let copy = e.clone();
        assert!(copy == e && copy.code() == Code::TagParseError);
        assert!(e.message().starts_with("cycle "));
    }
    assert_eq!(alloc_counter::thread_allocations() - before, 0, "making and dropping errors allocated");

    // As many alive as there are slots: still no allocation.
    let before = alloc_counter::thread_allocations();
    for i in 0..ERROR_MESSAGE_SLOTS {
        held.push(err!(Io, "held {}", i));
    }
    assert_eq!(alloc_counter::thread_allocations() - before, 0, "filling the slots allocated");

    // One more spills to the heap, with its message whole.
    let before = alloc_counter::thread_allocations();
    held.push(err!(Io, "spilled {}", "message"));
    assert_eq!(alloc_counter::thread_allocations() - before, 1);
    assert_eq!(held.last().unwrap().message(), "spilled message");
    for (i, e) in held.iter().take(ERROR_MESSAGE_SLOTS).enumerate() {
        assert_eq!(e.message(), format!("held {}", i).as_str());
    }

    // Dropped, the slots are free again.
    held.clear();
    let before = alloc_counter::thread_allocations();
    for i in 0..ERROR_MESSAGE_SLOTS {
        held.push(err!(Io, "again {}", i));
    }
    assert_eq!(alloc_counter::thread_allocations() - before, 0, "slots were not given back");
}
