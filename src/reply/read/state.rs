//! The [`Reader`]'s state: its arenas and what a read has stored so far, and the helpers every
//! part of the reader uses to record a problem or an instruction.

use crate::fixed::ArrayVec;
use crate::json::Document;
use crate::limits::{
    REPLY_DEFAULT_MAX_ACTIONS, REPLY_JSON_MAX_NODES, REPLY_MAX_BYTES, REPLY_MAX_INSTRUCTIONS, REPLY_MAX_PROBLEMS,
    REPLY_WORK_BYTES, TAG_MAX_NODES, TAG_TEXT_BYTES,
};
use crate::reply::clean::{CleanReport, OffsetMap};
use crate::reply::instruction::{ActionKind, Form};
use crate::reply::problem::{Problem, ProblemCode};
use crate::tag::tree::Span;
use crate::tag::TagTree;
use core::fmt;

/// Elements whose content is text for the parser (see [`ParseOptions::text_elements`](crate::tag::ParseOptions::text_elements)): the
/// free-text fields. `content` is a value alias but not here: models also use it as a wrapper
/// around their whole answer, which must stay markup.
pub const TEXT_ELEMENTS: &[&str] = &[
    "value",
    "data",
    "think_log",
    "thinking_log",
    "evaluation_log",
    "query",
    "metadata",
    "rationale",
    "analysis",
    "planning",
    "progress",
    "recommendations",
];

pub(super) const TAGS_FIELDS: &[&str] = &["tags", "tag", "key", "keys", "keywords", "context_key"];
pub(super) const VALUE_FIELDS: &[&str] = &["value", "data", "content"];
/// Fields read by the action that holds them; met elsewhere they are skipped, not walked into.
/// (`content` is not one: as a wrapper around an answer it is walked into.)
pub(super) const FIELD_NAMES: &[&str] =
    &["tags", "tag", "key", "keys", "keywords", "context_key", "value", "data", "query", "operation"];

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum What {
    #[default]
    NextState,
    ThinkLog,
    EvaluationLog,
    StateDelete,
    Action,
}

/// An instruction as stored: ranges of the tree's text arena.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Stored {
    pub(super) what: What,
    pub(super) kind: ActionKind,
    pub(super) form: Form,
    /// The text (next state, log) or the action's tags.
    pub(super) text: Span,
    pub(super) value: Option<Span>,
    pub(super) query: Option<Span>,
    pub(super) version: Option<Span>,
    pub(super) metadata: Option<Span>,
    pub(super) element: Span,
    pub(super) offset: u32,
}

/// The fields of an action being read.
#[derive(Clone, Copy, Default)]
pub(super) struct Fields {
    pub(super) tags: Option<Span>,
    pub(super) value: Option<Span>,
    pub(super) query: Option<Span>,
    pub(super) version: Option<Span>,
    pub(super) metadata: Option<Span>,
}

/// Which dialects a reply used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dialect {
    /// The answer was inside an `<agent>` element.
    pub envelope: bool,
    /// Some instruction was in the canonical (era B/C/TS) form.
    pub canonical: bool,
    /// Some instruction was in the era-A form.
    pub era_a: bool,
    /// Some instruction was a kjxlkj instruction.
    pub kjxlkj: bool,
    /// The reply was the JSON dialect (`{"next_state": ..., "action": {...}}`, the one a JSON
    /// Schema constrains a server to), read as the canonical tags it stands for.
    pub json: bool,
}

impl Dialect {
    /// A one-word summary: `none`, `canonical`, `json`, `era_a`, `kjxlkj` or `mixed`.
    pub fn as_str(&self) -> &'static str {
        match (self.canonical, self.era_a, self.kjxlkj) {
            (false, false, false) => "none",
            (true, false, false) if self.json => "json",
            (true, false, false) => "canonical",
            (false, true, false) => "era_a",
            (false, false, true) => "kjxlkj",
            _ => "mixed",
        }
    }
}

/// Reads model replies. Holds every buffer it needs, reserved once in [`Reader::new`]
/// (about 2.5 MiB, see the `limits.rs` section "Tagged reply format"); reading allocates nothing.
pub struct Reader {
    pub(super) work: String,
    /// The canonical tag text a JSON reply stands for (swapped with `work` when used).
    pub(super) alt: String,
    /// A JSON reply, parsed.
    pub(super) json_doc: Document,
    /// The last reply was read as the JSON dialect.
    pub(super) json: bool,
    pub(super) map: OffsetMap,
    pub(super) clean: CleanReport,
    pub(super) tree: TagTree,
    pub(super) scope: u32,
    pub(super) stored: ArrayVec<Stored, REPLY_MAX_INSTRUCTIONS>,
    pub(super) problems: ArrayVec<Problem, REPLY_MAX_PROBLEMS>,
    pub(super) problems_dropped: u32,
    /// Actions found, an era-A `<paging>` block counting as one (its directives are one set).
    pub(super) actions_found: u32,
    /// While the directives of a `<paging>` block are read: `actions_found` before the block.
    pub(super) paging_base: Option<u32>,
    pub(super) max_actions: usize,
    pub(super) dialect: Dialect,
    /// The element last read as an action because it held a bare `<type>`.
    pub(super) unwrapped: u32,
    /// A field read since this was last cleared could not be taken (cut by the end of the
    /// reply, or not text), already reported: its instruction is not taken.
    pub(super) field_failed: bool,
}

impl Default for Reader {
    fn default() -> Self {
        Reader::new()
    }
}

impl Reader {
    /// A reader with all its buffers reserved.
    pub fn new() -> Reader {
        Reader {
            work: String::with_capacity(REPLY_WORK_BYTES),
            alt: String::with_capacity(REPLY_WORK_BYTES),
            json_doc: Document::with_capacity(REPLY_JSON_MAX_NODES, REPLY_MAX_BYTES),
            json: false,
            map: OffsetMap::default(),
            clean: CleanReport::default(),
            tree: TagTree::with_capacity(TAG_MAX_NODES, TAG_TEXT_BYTES),
            scope: 0,
            stored: ArrayVec::new(),
            problems: ArrayVec::new(),
            problems_dropped: 0,
            actions_found: 0,
            paging_base: None,
            max_actions: REPLY_DEFAULT_MAX_ACTIONS,
            dialect: Dialect::default(),
            unwrapped: u32::MAX,
            field_failed: false,
        }
    }

    pub(super) fn raw(&self, work_offset: u32) -> u32 {
        self.map.raw_offset(work_offset)
    }

    /// Builds a problem at a work offset (mapped to the original reply).
    pub(super) fn mk(&self, code: ProblemCode, work_offset: Option<u32>, args: fmt::Arguments<'_>) -> Problem {
        Problem::new(code, work_offset.map(|o| self.raw(o)), args)
    }

    pub(super) fn push_problem(&mut self, p: Problem) {
        if self.problems.push(p).is_err() {
            self.problems_dropped += 1;
        }
    }

    pub(super) fn problem(&mut self, code: ProblemCode, work_offset: Option<u32>, args: fmt::Arguments<'_>) {
        let p = self.mk(code, work_offset, args);
        self.push_problem(p);
    }

    pub(super) fn problem_raw(&mut self, code: ProblemCode, raw_offset: Option<u32>, args: fmt::Arguments<'_>) {
        if self.problems.push(Problem::new(code, raw_offset, args)).is_err() {
            self.problems_dropped += 1;
        }
    }

    /// Stores an instruction; `false` when the list is full (reported once).
    pub(super) fn store(&mut self, s: Stored) -> bool {
        if self.stored.push(s).is_ok() {
            match s.form {
                Form::Canonical => self.dialect.canonical = true,
                Form::EraA => self.dialect.era_a = true,
                Form::Kjxlkj => self.dialect.kjxlkj = true,
            }
            return true;
        }
        if !self.problems.iter().any(|p| p.code == ProblemCode::TooManyInstructions) {
            self.problem(
                ProblemCode::TooManyInstructions,
                None,
                format_args!("more than {} instructions; the rest were dropped", REPLY_MAX_INSTRUCTIONS),
            );
        }
        false
    }

    /// Stores a next state or log, replacing an earlier one of the same kind.
    pub(super) fn store_single(&mut self, what: What, form: Form, text: Span, element: Span, work_at: u32) {
        let s = Stored { what, form, text, element, offset: self.raw(work_at), ..Stored::default() };
        if let Some(prev) = self.stored.as_mut_slice().iter_mut().find(|p| p.what == what) {
            *prev = s;
            let name = what_name(what);
            self.problem(
                ProblemCode::DuplicateField,
                Some(work_at),
                format_args!("{} given more than once; the last one was taken", name),
            );
            return;
        }
        self.store(s);
    }
}

pub(super) fn what_name(w: What) -> &'static str {
    match w {
        What::NextState => "next_state",
        What::ThinkLog => "think_log",
        What::EvaluationLog => "evaluation_log",
        What::StateDelete => "state_delete",
        What::Action => "action",
    }
}

pub(super) fn block_name(w: What) -> &'static str {
    match w {
        What::ThinkLog => "thinking",
        _ => "evaluation",
    }
}
