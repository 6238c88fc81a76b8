//! A long, valid script of model replies for runs of many cycles (the allocation tests, the
//! agent benchmark), served by the loopback server or written as a `replay` provider script.
//!
//! Include with `#[path = "support/cycle_script.rs"] mod cycle_script;`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

/// The `i`-th reply of a valid 9-cycle script through every state: thinking, storage_save of a
/// distinct key, evaluating, thinking, working_memory_add, evaluating, thinking, then
/// working_memory_remove / storage_search / storage_load in turn, evaluating. No action repeats
/// the previous one.
pub fn cycle_reply(i: usize) -> String {
    let n = i / 9;
    match i % 9 {
        0 | 3 | 6 => format!(
            "<agent><next_state>commanding</next_state><think_log>step {} of the dictionary</think_log></agent>",
            i
        ),
        1 => format!(
            "<agent><action><type>storage_save</type><tags>dictionary,term_{}</tags>\
             <value>term {}: a word with a one-sentence definition.</value></action></agent>",
            n, n
        ),
        4 => format!(
            "<agent><action><type>working_memory_add</type><tags>scratch</tags>\
             <value>scratch note {} for the next term</value></action></agent>",
            n
        ),
        7 => match n % 3 {
            0 => "<agent><action><type>working_memory_remove</type><tags>scratch</tags></action></agent>".to_string(),
            1 => "<agent><action><type>storage_search</type><tags>dictionary</tags></action></agent>".to_string(),
            _ => format!(
                "<agent><action><type>storage_load</type><tags>dictionary,term_{}</tags></action></agent>",
                n - 1
            ),
        },
        _ => format!(
            "<agent><next_state>thinking</next_state><evaluation_log>cycle {} went as planned</evaluation_log></agent>",
            i
        ),
    }
}

/// [`cycle_reply`] as one line of a `replay` provider script (JSON Lines).
#[allow(dead_code)] // `agent_alloc_http.rs` serves the replies over HTTP instead
pub fn cycle_reply_line(i: usize) -> String {
    use lkjagent::json::Writer;
    let mut line = String::new();
    let mut w = Writer::compact(&mut line);
    w.begin_object().unwrap();
    w.key("content").unwrap();
    w.string(&cycle_reply(i)).unwrap();
    w.end_object().unwrap();
    w.finish().unwrap();
    line.push('\n');
    line
}
