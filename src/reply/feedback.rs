//! Feedback for the model: after a reply that yielded no valid instruction, or one with an
//! error, a short, precise note (what was found, what was expected) and the canonical example
//! for the state the model is in, written into the next prompt.
//!
//! Kept short on purpose: it is paid for in prompt tokens on every retry, and small models
//! follow one concrete example better than a page of rules. At most
//! `REPLY_FEEDBACK_MAX_PROBLEMS` problems are listed, errors first. The text names elements with
//! `<...>`; the prompt builder escapes it like any other text.

use super::instruction::canonical_kinds;
use super::problem::Severity;
use super::read::Interpretation;
use crate::limits::REPLY_FEEDBACK_MAX_PROBLEMS;
use crate::states;
use core::fmt;

/// Writes the feedback for `it` (the model's last reply, read in state `state`). Writes
/// nothing when the reply has no error (see [`Interpretation::has_errors`]) and at least one
/// instruction: there is nothing to correct. A reply that was partly used gets its errors
/// only; one that was not used at all also gets the canonical example for `state`.
#[inline(never)]
pub fn write_feedback(out: &mut dyn fmt::Write, it: &Interpretation<'_>, state: &str) -> fmt::Result {
    if !it.is_empty() && !it.has_errors() {
        return Ok(());
    }
    if it.is_empty() {
        out.write_str("Your last reply could not be used: it held no valid instruction.\n")?;
    } else {
        out.write_str("Part of your last reply was not used (the rest was carried out):\n")?;
    }
    let mut listed = 0;
    for severity in [Severity::Error, Severity::Warning] {
        for p in it.problems().iter().filter(|p| p.severity() == severity) {
            if listed == REPLY_FEEDBACK_MAX_PROBLEMS {
                break;
            }
            writeln!(out, "- {}: {}", p.code.as_str(), p.detail.as_str())?;
            listed += 1;
        }
    }
    if !it.is_empty() {
        return Ok(());
    }
    out.write_str("After any reasoning, answer with exactly one <agent> block, like this:\n")?;
    write_example(out, state)
}

/// Writes the canonical reply for `state`: `thinking` (and unknown states) a next state and a
/// think log; `commanding`/`executing` one action; `evaluating` a next state and an
/// evaluation log; `paging` an action that frees working memory.
pub fn write_example(out: &mut dyn fmt::Write, state: &str) -> fmt::Result {
    let s = state.trim();
    let is = |name: &str| crate::bytes::eq_fold(s.as_bytes(), name.as_bytes());
    if is(states::COMMANDING) || is(states::EXECUTING) {
        out.write_str(concat!(
            "<agent>\n",
            "  <action>\n",
            "    <type>storage_save</type>\n",
            "    <tags>topic,subtopic</tags>\n",
            "    <value>the text to save</value>\n",
            "  </action>\n",
            "</agent>\n",
            "The type is one of ",
            canonical_kinds!(),
            ".\n",
        ))
    } else if is(states::EVALUATING) {
        out.write_str(concat!(
            "<agent>\n",
            "  <next_state>thinking</next_state>\n",
            "  <evaluation_log>what the last action achieved and what is still missing</evaluation_log>\n",
            "</agent>\n",
        ))
    } else if is(states::PAGING) {
        out.write_str(concat!(
            "<agent>\n",
            "  <action>\n",
            "    <type>storage_save</type>\n",
            "    <tags>tags,of,an,entry</tags>\n",
            "    <value>the working-memory text to keep in storage</value>\n",
            "  </action>\n",
            "</agent>\n",
            "Or use the type working_memory_remove with the tags of an entry to drop it from working memory.\n",
        ))
    } else {
        out.write_str(concat!(
            "<agent>\n",
            "  <next_state>commanding</next_state>\n",
            "  <think_log>what you concluded and what you will do next</think_log>\n",
            "</agent>\n",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reply::Reader;

    fn feedback(reply: &str, state: &str) -> String {
        let mut r = Reader::new();
        let it = r.read(reply.as_bytes(), 1);
        let mut out = String::new();
        write_feedback(&mut out, &it, state).unwrap();
        out
    }

    #[test]
    fn says_what_was_found_and_shows_the_example() {
        let f = feedback("<agent><action><type>storage_delete</type><tags>a</tags></action></agent>", "commanding");
        assert!(f.starts_with("Your last reply could not be used"), "{f}");
        assert!(f.contains("- UNKNOWN_ACTION: unknown action type 'storage_delete'"), "{f}");
        assert!(f.contains("<type>storage_save</type>"), "{f}");
        let f = feedback("", "evaluating");
        assert!(f.contains("EMPTY_REPLY") && f.contains("<evaluation_log>"), "{f}");
        let f = feedback("Sure! I will save it.", "paging");
        assert!(f.contains("NO_TAGS") && f.contains("working_memory_remove"), "{f}");
        let f = feedback("<agent><next_state>x</next_state></agent>", "thinking");
        assert_eq!(f, "");
    }

    #[test]
    fn partial_use_is_said() {
        let r = "<action><type>storage_load</type><tags>a</tags></action><action><type>storage_load</type><tags>b</tags></action>";
        let f = feedback(r, "executing");
        assert!(f.starts_with("Part of your last reply was not used"), "{f}");
        assert!(f.contains("TOO_MANY_ACTIONS"), "{f}");
        assert!(!f.contains("<agent>"), "{f}");
    }

    #[test]
    fn every_example_reads_back_as_valid() {
        for state in ["thinking", "commanding", "evaluating", "paging", "custom"] {
            let mut ex = String::new();
            write_example(&mut ex, state).unwrap();
            let mut r = Reader::new();
            let it = r.read(ex.as_bytes(), 1);
            assert!(!it.is_empty() && it.problems().is_empty(), "{state}: {:?}", it.problems());
        }
    }
}
