//! An [`Interpretation`] as JSON: what `lkjagent parse-reply` prints, and what the audit log can
//! record for a cycle. Field names are stable.
//!
//! ```text
//! {"dialect": "canonical", "envelope": true, "valid": true,
//!  "instructions": [{"instruction": "next_state", "text": "commanding", "offset": 12},
//!                   {"instruction": "action", "type": "storage_save", "tags": "a,b", "value": "..",
//!                    "form": "canonical", "element": "action", "offset": 40}],
//!  "actions_found": 1, "max_actions": 1,
//!  "problems": [{"code": "UNKNOWN_ACTION", "severity": "error", "offset": 5, "detail": ".."}],
//!  "problems_dropped": 0,
//!  "cleaning": {"bytes": 321, "think_blocks": 1, "orphan_think_end": null, "unclosed_think": null,
//!               "harmony_final": null, "invalid_utf8": 0}}
//! ```
//!
//! Offsets are byte offsets in the original reply; `null` where a problem has no place.

use super::instruction::Instruction;
use super::read::Interpretation;
use crate::error::Result;
use crate::json::Writer;
use core::fmt;

fn opt_u32<W: fmt::Write + ?Sized>(w: &mut Writer<'_, W>, key: &str, v: Option<u32>) -> Result<()> {
    w.key(key)?;
    match v {
        Some(n) => w.u64(n as u64),
        None => w.null(),
    }
}

/// Writes `it` (read with at most `max_actions` actions) as one JSON object.
pub fn write_json<W: fmt::Write + ?Sized>(
    w: &mut Writer<'_, W>,
    it: &Interpretation<'_>,
    max_actions: usize,
) -> Result<()> {
    w.begin_object()?;
    write_members(w, it, max_actions)?;
    w.end_object()
}

/// Writes the members of [`write_json`]'s object into an object the caller has begun (so it
/// can add its own members).
pub fn write_members<W: fmt::Write + ?Sized>(
    w: &mut Writer<'_, W>,
    it: &Interpretation<'_>,
    max_actions: usize,
) -> Result<()> {
    w.key("dialect")?;
    w.string(it.dialect().as_str())?;
    w.key("envelope")?;
    w.bool(it.dialect().envelope)?;
    w.key("valid")?;
    w.bool(!it.is_empty())?;
    w.key("instructions")?;
    w.begin_array()?;
    for (i, off) in it.instructions().zip(it.offsets()) {
        w.begin_object()?;
        w.key("instruction")?;
        w.string(i.as_str())?;
        match i {
            Instruction::NextState(t)
            | Instruction::ThinkLog(t)
            | Instruction::EvaluationLog(t)
            | Instruction::StateDelete(t) => {
                w.key("text")?;
                w.string(t)?;
            }
            Instruction::Action(a) => {
                w.key("type")?;
                w.string(a.kind.as_str())?;
                w.key("tags")?;
                w.string(a.tags)?;
                for (k, v) in
                    [("value", a.value), ("query", a.query), ("base_version", a.base_version), ("metadata", a.metadata)]
                {
                    if let Some(v) = v {
                        w.key(k)?;
                        w.string(v)?;
                    }
                }
                w.key("form")?;
                w.string(a.form.as_str())?;
                w.key("element")?;
                w.string(a.element)?;
            }
        }
        w.key("offset")?;
        w.u64(off as u64)?;
        w.end_object()?;
    }
    w.end_array()?;
    w.key("actions_found")?;
    w.u64(it.actions_found() as u64)?;
    w.key("max_actions")?;
    w.u64(max_actions as u64)?;
    w.key("problems")?;
    w.begin_array()?;
    for p in it.problems() {
        w.begin_object()?;
        w.key("code")?;
        w.string(p.code.as_str())?;
        w.key("severity")?;
        w.string(p.severity().as_str())?;
        opt_u32(w, "offset", p.offset)?;
        w.key("detail")?;
        w.string(p.detail.as_str())?;
        w.end_object()?;
    }
    w.end_array()?;
    w.key("problems_dropped")?;
    w.u64(it.problems_dropped() as u64)?;
    let c = it.clean_report();
    w.key("cleaning")?;
    w.begin_object()?;
    w.key("bytes")?;
    w.u64(c.raw_bytes as u64)?;
    w.key("think_blocks")?;
    w.u64(c.think_blocks as u64)?;
    opt_u32(w, "orphan_think_end", c.orphan_think_end)?;
    opt_u32(w, "unclosed_think", c.unclosed_think)?;
    opt_u32(w, "harmony_final", c.harmony_final)?;
    w.key("invalid_utf8")?;
    w.u64(c.invalid_utf8 as u64)?;
    w.end_object()
}
