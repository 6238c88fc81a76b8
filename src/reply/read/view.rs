//! [`Interpretation`]: the read-only view of a [`Reader`] after a read.

use super::state::*;
use crate::reply::clean::CleanReport;
use crate::reply::instruction::{Action, Instruction};
use crate::reply::problem::{Problem, Severity};
use crate::tag::tree::Span;
use crate::tag::TagTree;

/// What the agent takes from one reply: a view of the [`Reader`] after `read`.
#[derive(Clone, Copy)]
pub struct Interpretation<'r> {
    pub(super) r: &'r Reader,
}

impl<'r> Interpretation<'r> {
    fn view(&self, s: &Stored) -> Instruction<'r> {
        let t = &self.r.tree;
        let text = t.str_at(s.text);
        let opt = |o: Option<Span>| o.map(|s| t.str_at(s));
        match s.what {
            What::NextState => Instruction::NextState(text),
            What::ThinkLog => Instruction::ThinkLog(text),
            What::EvaluationLog => Instruction::EvaluationLog(text),
            What::StateDelete => Instruction::StateDelete(text),
            What::Action => Instruction::Action(Action {
                kind: s.kind,
                tags: text,
                value: opt(s.value),
                query: opt(s.query),
                base_version: opt(s.version),
                metadata: opt(s.metadata),
                form: s.form,
                element: t.str_at(s.element),
                offset: s.offset,
            }),
        }
    }

    /// The instructions, in document order.
    pub fn instructions(&self) -> impl Iterator<Item = Instruction<'r>> + 'r {
        let me = *self;
        self.r.stored.as_slice().iter().map(move |s| me.view(s))
    }

    /// Byte offset in the original reply of each instruction, in the order of `instructions`.
    pub fn offsets(&self) -> impl Iterator<Item = u32> + 'r {
        self.r.stored.as_slice().iter().map(|s| s.offset)
    }

    /// Number of instructions.
    pub fn len(&self) -> usize {
        self.r.stored.len()
    }

    /// Whether no instruction was found (the reply is invalid; see `problems`).
    pub fn is_empty(&self) -> bool {
        self.r.stored.is_empty()
    }

    /// The actions, in order (at most the `max_actions` given to `read`).
    pub fn actions(&self) -> impl Iterator<Item = Action<'r>> + 'r {
        self.instructions().filter_map(|i| match i {
            Instruction::Action(a) => Some(a),
            _ => None,
        })
    }

    /// Actions found in the reply, including those past the cap.
    pub fn actions_found(&self) -> usize {
        self.r.actions_found as usize
    }

    /// The requested next state.
    pub fn next_state(&self) -> Option<&'r str> {
        self.instructions().find_map(|i| match i {
            Instruction::NextState(s) => Some(s),
            _ => None,
        })
    }

    /// The think-log entry.
    pub fn think_log(&self) -> Option<&'r str> {
        self.instructions().find_map(|i| match i {
            Instruction::ThinkLog(s) => Some(s),
            _ => None,
        })
    }

    /// The evaluation-log entry.
    pub fn evaluation_log(&self) -> Option<&'r str> {
        self.instructions().find_map(|i| match i {
            Instruction::EvaluationLog(s) => Some(s),
            _ => None,
        })
    }

    /// The problems, in the order found.
    pub fn problems(&self) -> &'r [Problem] {
        self.r.problems.as_slice()
    }

    /// Problems found beyond `REPLY_MAX_PROBLEMS` (counted, not kept).
    pub fn problems_dropped(&self) -> u32 {
        self.r.problems_dropped
    }

    /// Whether any problem is an error (something the model wrote was not taken).
    pub fn has_errors(&self) -> bool {
        self.problems().iter().any(|p| p.severity() == Severity::Error)
    }

    /// Which dialects the reply used.
    pub fn dialect(&self) -> Dialect {
        self.r.dialect
    }

    /// What cleaning removed (think blocks, invalid UTF-8).
    pub fn clean_report(&self) -> CleanReport {
        self.r.clean
    }

    /// The reply after cleaning (what was parsed).
    pub fn cleaned_text(&self) -> &'r str {
        &self.r.work
    }

    /// The parsed tree.
    pub fn tree(&self) -> &'r TagTree {
        &self.r.tree
    }
}
