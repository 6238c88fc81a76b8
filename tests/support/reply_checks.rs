//! What the tag parser and the reply reader promise on any input, checked the same way by the
//! property tests (`reply_props.rs`) and the fuzzer (`fuzz.rs`): the pieces their tag-like
//! inputs are made of, and the invariants of one parse and of one reading.
//!
//! Include with `#[path = "support/reply_checks.rs"] mod reply_checks;`.

use lkjagent::limits::{ACTIONS_PER_CYCLE_MAX, REPLY_MAX_INSTRUCTIONS, REPLY_MAX_PROBLEMS};
use lkjagent::reply::{Instruction, Interpretation};
use lkjagent::tag::TagTree;

/// Pieces that make tag-like text with every construct the parser knows, badly nested. The
/// property tests draw from this list as it is (their saved regression seeds index into it);
/// the fuzzer adds more.
pub const PIECES: &[&str] = &[
    "<",
    ">",
    "</",
    "/>",
    "<agent>",
    "</agent>",
    "<action>",
    "</action>",
    "<action type=\"storage_save\">",
    "<type>",
    "</type>",
    "storage_save",
    "working_memory_add",
    "<tags>",
    "</tags>",
    "a,b",
    "<value>",
    "</value>",
    "<next_state>",
    "</next_state>",
    "<think>",
    "</think>",
    "<thinking>",
    "<paging>",
    "<move_to_disk>",
    "<ram_add>",
    "<key>",
    "<state_add>",
    "<state>",
    "&amp;",
    "&lt;",
    "&#x",
    "&#",
    "1F600",
    ";",
    "<!--",
    "-->",
    "<![CDATA[",
    "]]>",
    "<?xml",
    "?>",
    "<!DOCTYPE",
    "\"",
    "'",
    "=",
    " ",
    "\n",
    "a",
    "é",
    "日本",
    "x<3",
    "```xml",
    "\u{0}",
    "<record_update>",
    "<version>",
    "<actions>",
];

/// A tree just parsed from `len` bytes into room for `capacity` nodes: within its capacity, its
/// walk visits every node once, and no node or report offset lies past the input.
pub fn check_tree(tree: &TagTree, len: usize, capacity: usize) -> Result<(), String> {
    let len = len as u64;
    if tree.node_count() > capacity {
        return Err(format!("{} nodes, past the capacity {capacity}", tree.node_count()));
    }
    let walked = tree.root().descendants().count();
    if walked != tree.node_count() {
        return Err(format!("the walk visits {walked} of {} nodes", tree.node_count()));
    }
    if let Some(n) = tree.root().descendants().find(|n| u64::from(n.offset()) > len) {
        return Err(format!("a node at {} past the input ({len} bytes)", n.offset()));
    }
    let rep = *tree.report();
    let offsets = [
        rep.first_unmatched_end_tag,
        rep.first_implicitly_closed,
        rep.first_unclosed_at_end,
        rep.truncated_at,
        rep.limit.map(|l| l.1),
    ];
    if let Some(o) = offsets.into_iter().flatten().find(|&o| u64::from(o) > len) {
        return Err(format!("report offset {o} past the input ({len} bytes): {rep:?}"));
    }
    Ok(())
}

/// A reading of `input` with at most `max` actions: instructions, problems and actions within
/// their caps (a `<paging>` block is one action however many directives it holds, and all of
/// them together stay within what the agent carries out from one reply), an instruction or an
/// error saying why not, offsets within the input, and every action that needs a value has one.
pub fn check_reading(it: &Interpretation<'_>, input: &[u8], max: usize) -> Result<(), String> {
    let len = input.len().max(1);
    if it.len() > REPLY_MAX_INSTRUCTIONS || it.problems().len() > REPLY_MAX_PROBLEMS {
        return Err(format!("{} instructions, {} problems: past the caps", it.len(), it.problems().len()));
    }
    // Element names are read without regard to case (`<Move_To_Disk>` is a directive too).
    let paging =
        |e: &str| ["move_to_disk", "retrieve_from_disk", "archive_old"].iter().any(|p| p.eq_ignore_ascii_case(e));
    let plain = it.actions().filter(|a| !paging(a.element)).count();
    if plain > max || it.actions().count() > max.max(ACTIONS_PER_CYCLE_MAX) {
        return Err(format!("{} actions ({plain} not paging) with at most {max} allowed", it.actions().count()));
    }
    if it.actions_found() < plain {
        return Err(format!("{} actions found but {plain} taken", it.actions_found()));
    }
    if it.is_empty() && !it.has_errors() {
        return Err("no instruction and no error saying why".into());
    }
    if let Some(o) = it.problems().iter().filter_map(|p| p.offset).find(|&o| o as usize > len) {
        return Err(format!("problem offset {o} past the input ({} bytes)", input.len()));
    }
    if let Some(o) = it.offsets().find(|&o| o as usize > len) {
        return Err(format!("instruction offset {o} past the input ({} bytes)", input.len()));
    }
    for i in it.instructions() {
        if let Instruction::Action(a) = i {
            if a.kind.needs_value() && a.value.is_none_or(str::is_empty) {
                return Err(format!("{} action without a value", a.kind.as_str()));
            }
        }
    }
    Ok(())
}
