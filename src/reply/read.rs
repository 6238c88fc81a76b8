//! The interpreter: from a raw model reply to one list of instructions plus problems.
//!
//! ```text
//! raw bytes ──clean──► text ──TagTree::parse──► tree ──scope──► walk ──► instructions, problems
//! ```
//!
//! **Scope.** When the reply holds `<agent>` elements, only the last *complete* one is read
//! (models restate the format in prose, or start over; the last finished answer is the one
//! they mean); with none complete, the last one. Without `<agent>`, the whole reply is read.
//!
//! **Walk.** The scope is walked in document order (a loop over the tree's links). Elements that
//! are instructions are read and their subtree skipped; any other element (`<response>`,
//! `<actions>`, junk the model wrapped around its answer) is descended into, so wrappers do not
//! hide instructions. Which elements mean what:
//!
//! | element | instruction |
//! |---|---|
//! | `next_state`, `state` | `NextState` |
//! | `think_log` (also `thinking_log`) | `ThinkLog` |
//! | `evaluation_log` | `EvaluationLog` |
//! | `action` with `<type>` or `type="..."` | an action of that kind ([`ActionKind::from_name`]) |
//! | `action` with `<operation>` (era A) | kind from operation and type (see [`era_a_kind`]) |
//! | `thinking` / `evaluation` (era A) | `ThinkLog` / `EvaluationLog`: its text, or its children as `name: text` lines |
//! | `paging` (era A): `move_to_disk`, `retrieve_from_disk`, `archive_old` | `PageOut`, `PageIn`, `Archive` actions |
//! | `ram_add` (`key`, `value`) | `WorkingMemoryAdd`; key `think_log`/`evaluation_log`/`state` give that instruction instead |
//! | `ram_delete` (`key`) | `WorkingMemoryRemove` |
//! | `state_add` / `state_delete` (`state`) | `NextState` / `StateDelete` |
//! | `record_add` (`keywords`, `value`) | `StorageSave` |
//! | `record_update` (`key`, `value`, optional `version`/`base_version`) | `RecordUpdate` |
//! | `record_search` (`query`, or `keywords`/`tags`, or `ids`) | `StorageSearch` (`ids`: `StorageLoad`) |
//! | `record_issue` (`key`, `value`, `metadata`) | `RecordIssue` |
//! | `type` outside any action | its parent read as an action (`ACTION_WITHOUT_WRAPPER`) |
//!
//! Field names have aliases: tags from `tags`, `tag`, `key`, `keys`, `keywords`, `context_key`;
//! value from `value`, `data`, `content`. Free-text fields are *text elements* for the parser,
//! so tags written inside a value or a log stay text.
//!
//! **JSON replies.** A reply that is one JSON object with a member the protocol knows
//! (`next_state`, `think_log`, `action`, ...) is the JSON dialect (what a JSON Schema
//! constrains a server to): it is rendered as the canonical tags it stands for
//! ([`super::json_reply`]) and read as those, so it yields the same instructions and problems.
//!
//! **Escaped answers.** When a reply yields nothing and holds `&lt;`, it is read once more with
//! entities decoded (the C original's prompts showed the templates escaped, and models answer
//! in kind); if that finds instructions they are taken with an `ESCAPED_TAGS` warning, else the
//! reply is reported as it was.
//!
//! **Bounds.** At most `max_actions` actions are taken (the first ones); more is
//! `TOO_MANY_ACTIONS`. `next_state`, `think_log` and `evaluation_log` are taken once each (the
//! last one wins, `DUPLICATE_FIELD`). Everything is stored in the reader's fixed arenas.

use super::clean::{clean, CleanReport, OffsetMap};
use super::instruction::{same_name, Action, ActionKind, Form, Instruction};
use super::problem::{Problem, ProblemCode, Severity};
use crate::fixed::ArrayVec;
use crate::json::Document;
use crate::limits::{
    REPLY_DEFAULT_MAX_ACTIONS, REPLY_JSON_MAX_NODES, REPLY_MAX_BYTES, REPLY_MAX_INSTRUCTIONS, REPLY_MAX_LIST_ITEMS,
    REPLY_MAX_PROBLEMS, REPLY_WORK_BYTES, TAG_MAX_NODES, TAG_TEXT_BYTES,
};
use crate::tag::tree::Span;
use crate::tag::{Limit, Node, ParseOptions, TagTree};
use core::fmt;

/// Elements whose content is text for the parser (see [`ParseOptions::text_elements`]): the
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

const TAGS_FIELDS: &[&str] = &["tags", "tag", "key", "keys", "keywords", "context_key"];
const VALUE_FIELDS: &[&str] = &["value", "data", "content"];
/// Fields read by the action that holds them; met elsewhere they are skipped, not walked into.
/// (`content` is not one: as a wrapper around an answer it is walked into.)
const FIELD_NAMES: &[&str] =
    &["tags", "tag", "key", "keys", "keywords", "context_key", "value", "data", "query", "operation"];

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum What {
    #[default]
    NextState,
    ThinkLog,
    EvaluationLog,
    StateDelete,
    Action,
}

/// An instruction as stored: ranges of the tree's text arena.
#[derive(Clone, Copy, Debug, Default)]
struct Stored {
    what: What,
    kind: ActionKind,
    form: Form,
    /// The text (next state, log) or the action's tags.
    text: Span,
    value: Option<Span>,
    query: Option<Span>,
    version: Option<Span>,
    metadata: Option<Span>,
    element: Span,
    offset: u32,
}

/// The fields of an action being read.
#[derive(Clone, Copy, Default)]
struct Fields {
    tags: Option<Span>,
    value: Option<Span>,
    query: Option<Span>,
    version: Option<Span>,
    metadata: Option<Span>,
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
    work: String,
    /// The canonical tag text a JSON reply stands for (swapped with `work` when used).
    alt: String,
    /// A JSON reply, parsed.
    json_doc: Document,
    /// The last reply was read as the JSON dialect.
    json: bool,
    map: OffsetMap,
    clean: CleanReport,
    tree: TagTree,
    scope: u32,
    stored: ArrayVec<Stored, REPLY_MAX_INSTRUCTIONS>,
    problems: ArrayVec<Problem, REPLY_MAX_PROBLEMS>,
    problems_dropped: u32,
    actions_found: u32,
    max_actions: usize,
    dialect: Dialect,
    /// The element last read as an action because it held a bare `<type>`.
    unwrapped: u32,
    /// A field read since this was last cleared could not be taken (cut by the end of the
    /// reply, or not text), already reported: its instruction is not taken.
    field_failed: bool,
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
            max_actions: REPLY_DEFAULT_MAX_ACTIONS,
            dialect: Dialect::default(),
            unwrapped: u32::MAX,
            field_failed: false,
        }
    }

    /// Reads `reply` (the model's message content, as bytes: invalid UTF-8 is tolerated) and
    /// returns what the agent should take from it, taking at most `max_actions` actions
    /// (`REPLY_DEFAULT_MAX_ACTIONS` is 1; 0 takes none and reports each as `TOO_MANY_ACTIONS`).
    /// Never fails and never allocates; the result borrows the reader until the next `read`.
    pub fn read(&mut self, reply: &[u8], max_actions: usize) -> Interpretation<'_> {
        self.max_actions = max_actions;
        self.clean = clean(reply, &mut self.work, &mut self.map);
        // The JSON dialect: read as the canonical tags it stands for.
        self.json = false;
        let t = self.work.trim();
        if t.starts_with('{')
            && self.json_doc.parse(t.as_bytes()).is_ok()
            && super::json_reply::render(self.json_doc.root(), &mut self.alt)
        {
            core::mem::swap(&mut self.work, &mut self.alt);
            // Offsets now point into the rendered tags, not the reply.
            self.map.approximate = true;
            self.json = true;
        }
        self.pass();
        if self.json {
            return Interpretation { r: self };
        }
        if self.stored.is_empty() && self.work.contains("&lt;") {
            // Models shown escaped templates (`&lt;action&gt;`, as the C original's prompts
            // were) sometimes answer in kind. Read the reply once more with entities decoded;
            // if that finds nothing either, report the reply as it was.
            let mut bytes = core::mem::take(&mut self.work).into_bytes();
            decode_in_place(&mut bytes);
            self.work = String::from_utf8(bytes).unwrap_or_else(|e| {
                let mut b = e.into_bytes();
                b.clear();
                String::from_utf8(b).unwrap_or_default()
            });
            self.map.approximate = true;
            self.pass();
            if self.stored.is_empty() {
                self.clean = clean(reply, &mut self.work, &mut self.map);
                self.pass();
            } else {
                self.problem(
                    ProblemCode::EscapedTags,
                    None,
                    format_args!(
                        "the tags were written escaped (&lt;agent&gt;); read after decoding (offsets approximate)"
                    ),
                );
            }
        }
        Interpretation { r: self }
    }

    /// Parses the working text and interprets it, from a clean slate.
    fn pass(&mut self) {
        self.stored.clear();
        self.problems.clear();
        self.problems_dropped = 0;
        self.actions_found = 0;
        self.dialect = Dialect { json: self.json, ..Dialect::default() };
        self.unwrapped = u32::MAX;
        self.scope = 0;
        self.tree.parse(&self.work, &ParseOptions { text_elements: TEXT_ELEMENTS });
        self.interpret();
    }

    /// The result of the last [`Reader::read`].
    pub fn last(&self) -> Interpretation<'_> {
        Interpretation { r: self }
    }

    fn raw(&self, work_offset: u32) -> u32 {
        self.map.raw_offset(work_offset)
    }

    /// Builds a problem at a work offset (mapped to the original reply).
    fn mk(&self, code: ProblemCode, work_offset: Option<u32>, args: fmt::Arguments<'_>) -> Problem {
        Problem::new(code, work_offset.map(|o| self.raw(o)), args)
    }

    fn push_problem(&mut self, p: Problem) {
        if self.problems.push(p).is_err() {
            self.problems_dropped += 1;
        }
    }

    fn problem(&mut self, code: ProblemCode, work_offset: Option<u32>, args: fmt::Arguments<'_>) {
        let p = self.mk(code, work_offset, args);
        self.push_problem(p);
    }

    fn problem_raw(&mut self, code: ProblemCode, raw_offset: Option<u32>, args: fmt::Arguments<'_>) {
        if self.problems.push(Problem::new(code, raw_offset, args)).is_err() {
            self.problems_dropped += 1;
        }
    }

    fn interpret(&mut self) {
        let c = self.clean;
        if c.too_large {
            let max = crate::limits::REPLY_MAX_BYTES;
            if c.raw_bytes as usize > max {
                self.problem_raw(
                    ProblemCode::ReplyTooLarge,
                    None,
                    format_args!("the reply is {} bytes; at most {} are read (REPLY_MAX_BYTES)", c.raw_bytes, max),
                );
            } else {
                self.problem_raw(
                    ProblemCode::ReplyTooLarge,
                    None,
                    format_args!(
                        "the reply holds so many bytes that are not UTF-8 that it no longer fits once they are replaced (REPLY_WORK_BYTES)"
                    ),
                );
            }
            return;
        }
        if let Some(at) = c.first_invalid_utf8 {
            self.problem_raw(
                ProblemCode::InvalidUtf8,
                Some(at),
                format_args!("{} byte sequence(s) that are not UTF-8 were replaced by U+FFFD", c.invalid_utf8),
            );
        }
        if let Some(at) = c.unclosed_think {
            self.problem_raw(
                ProblemCode::UnclosedThink,
                Some(at),
                format_args!(
                    "the reasoning never ends (<think> without </think>); everything after it was dropped. Close it before the answer"
                ),
            );
        }
        self.parse_problems();
        if self.work.trim().is_empty() {
            if c.unclosed_think.is_none() {
                let what = if c.raw_bytes == 0 {
                    "the reply is empty"
                } else if c.think_blocks > 0 || c.orphan_think_end.is_some() {
                    "the reply holds only reasoning (<think>), no answer after it"
                } else {
                    "the reply holds only whitespace"
                };
                self.problem_raw(ProblemCode::EmptyReply, None, format_args!("{}", what));
            }
            return;
        }
        self.choose_scope();
        self.walk();
        self.outside_scope();
        let dropped = (self.actions_found as usize).saturating_sub(self.max_actions);
        if dropped > 0 {
            let (found, max) = (self.actions_found, self.max_actions);
            self.problem(
                ProblemCode::TooManyActions,
                None,
                format_args!(
                    "found {} actions; at most {} per reply are taken, the first {} were kept",
                    found, max, max
                ),
            );
        }
        if self.stored.is_empty() {
            self.no_instruction();
        }
    }

    fn parse_problems(&mut self) {
        let r = *self.tree.report();
        if let Some((limit, at)) = r.limit {
            let code = match limit {
                Limit::Nodes => ProblemCode::TooManyTags,
                Limit::Text => ProblemCode::ReplyTooLarge,
                Limit::Depth => ProblemCode::TooDeep,
            };
            self.problem(
                code,
                Some(at),
                format_args!("the reply exceeds the {} limit of the tag parser here", limit.as_str()),
            );
        }
        if let Some(at) = r.truncated_at {
            self.problem(
                ProblemCode::Truncated,
                Some(at),
                format_args!("the reply ends inside a tag (cut by the token limit?)"),
            );
        }
        if let Some(at) = r.first_unclosed_at_end {
            let name = self.name_at(at);
            let p = self.mk(
                ProblemCode::UnclosedTag,
                Some(at),
                format_args!("{} element(s) never closed, the outermost <{}>", r.unclosed_at_end, name),
            );
            self.push_problem(p);
        }
        if let Some(at) = r.first_implicitly_closed {
            let name = self.name_at(at);
            let p = self.mk(
                ProblemCode::MismatchedTag,
                Some(at),
                format_args!("<{}> has no end tag before its parent's end tag (closed with it)", name),
            );
            self.push_problem(p);
        }
        if let Some(at) = r.first_unmatched_end_tag {
            self.problem(
                ProblemCode::MismatchedTag,
                Some(at),
                format_args!("{} end tag(s) that match no open element were ignored", r.unmatched_end_tags),
            );
        }
    }

    /// The name of the element starting at work offset `offset` (for messages).
    fn name_at(&self, offset: u32) -> &str {
        self.tree.root().descendants().find(|n| n.is_element() && n.offset() == offset).map(|n| n.name()).unwrap_or("?")
    }

    fn choose_scope(&mut self) {
        let mut last_closed = None;
        let mut last_any = None;
        let mut count = 0u32;
        for n in self.tree.root().descendants() {
            if n.is("agent") {
                count += 1;
                last_any = Some((n.id(), n.offset()));
                if n.is_closed() {
                    last_closed = Some((n.id(), n.offset()));
                }
            }
        }
        if let Some((id, at)) = last_closed.or(last_any) {
            self.scope = id;
            self.dialect.envelope = true;
            if count > 1 {
                let which = if last_closed.is_some() { "the last complete one" } else { "the last one" };
                self.problem(
                    ProblemCode::MultipleAgents,
                    Some(at),
                    format_args!("{} <agent> blocks; {} was read", count, which),
                );
            }
        }
    }

    /// Reports instruction elements outside every `<agent>` when an `<agent>` was read: they
    /// were ignored, and the model (or the user tuning a prompt) should know.
    fn outside_scope(&mut self) {
        if self.scope == 0 {
            return;
        }
        let mut found: Option<(u32, u32)> = None;
        let mut count = 0u32;
        let root = self.tree.root();
        let mut walk = root.descendants();
        while let Some(n) = walk.next() {
            if !n.is_element() || n.id() == 0 {
                continue;
            }
            if n.is("agent") {
                walk.skip_subtree(n);
                continue;
            }
            let name = n.name();
            let instruction =
                ["next_state", "think_log", "evaluation_log", "action", "thinking", "evaluation", "paging"]
                    .iter()
                    .chain(KJXLKJ.iter())
                    .any(|k| same_name(k, name));
            if instruction {
                count += 1;
                found.get_or_insert((n.id(), n.offset()));
                walk.skip_subtree(n);
            }
        }
        if let Some((id, at)) = found {
            let name = self.tree.node(id).map(|n| n.name()).unwrap_or("?");
            let p = self.mk(
                ProblemCode::OutsideAgent,
                Some(at),
                format_args!("{} instruction element(s) outside <agent> were ignored, the first <{}>", count, name),
            );
            self.push_problem(p);
        }
    }

    fn walk(&mut self) {
        // Node handles borrow the tree, and reading an instruction appends to the tree's text
        // arena (joined lists and logs), so the walk goes by node ids.
        let scope = self.scope;
        let mut next = self.tree.node(scope).and_then(|s| s.first_child()).map(|n| n.id());
        while let Some(id) = next {
            let descend = self.visit(id);
            let Some(n) = self.tree.node(id) else { break };
            next = if descend { n.first_child().map(|c| c.id()) } else { None };
            if next.is_none() {
                next = after_in_scope(n, scope);
            }
        }
    }

    /// Reads the node `id`; returns whether to walk into it.
    fn visit(&mut self, id: u32) -> bool {
        let Some(n) = self.tree.node(id) else { return false };
        if !n.is_element() {
            return false;
        }
        let name = n.name();
        let at = n.offset();
        let parent = n.parent().map(|p| p.id()).unwrap_or(0);
        let is = |c: &str| same_name(c, name);
        let kj = KJXLKJ.iter().position(|k| is(k));
        if is("next_state") || is("state") {
            self.single(id, What::NextState);
        } else if is("think_log") || is("thinking_log") {
            self.single(id, What::ThinkLog);
        } else if is("evaluation_log") {
            self.single(id, What::EvaluationLog);
        } else if is("action") {
            self.action(id, false);
        } else if is("thinking") {
            self.joined(id, What::ThinkLog);
        } else if is("evaluation") {
            self.joined(id, What::EvaluationLog);
        } else if is("paging") {
            self.paging(id);
        } else if is("move_to_disk") || is("retrieve_from_disk") || is("archive_old") {
            self.directive(id);
        } else if let Some(k) = kj {
            self.kjxlkj(id, k);
        } else if is("type") {
            if parent != self.unwrapped {
                self.unwrapped = parent;
                self.problem(
                    ProblemCode::ActionWithoutWrapper,
                    Some(at),
                    format_args!("<type> outside an <action>: it and its siblings were read as one action"),
                );
                self.action(parent, true);
            }
        } else if FIELD_NAMES.iter().any(|f| is(f)) || is("think") {
            // Fields of an action met elsewhere (read with their action, if any).
        } else {
            return true;
        }
        false
    }

    /// Stores an instruction; `false` when the list is full (reported once).
    fn store(&mut self, s: Stored) -> bool {
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
    fn store_single(&mut self, what: What, form: Form, text: Span, element: Span, work_at: u32) {
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

    /// `<next_state>`, `<think_log>`, `<evaluation_log>`: a text element.
    fn single(&mut self, id: u32, what: What) {
        let Some(n) = self.tree.node(id) else { return };
        let (at, element) = (n.offset(), n.name_span());
        match n.text_content_span() {
            None => {
                let p = self.mk(
                    ProblemCode::FieldNotText,
                    Some(at),
                    format_args!("<{}> holds elements; expected text", n.name()),
                );
                self.push_problem(p);
            }
            Some(s) if s.len == 0 => {
                let p = self.mk(
                    ProblemCode::MissingField,
                    Some(at),
                    format_args!("<{}> is empty; expected text", n.name()),
                );
                self.push_problem(p);
            }
            Some(s) => self.store_single(what, Form::Canonical, s, element, at),
        }
    }

    /// Era-A `<thinking>` / `<evaluation>`: its text, or its children as `name: text` lines.
    fn joined(&mut self, id: u32, what: What) {
        let Some(n) = self.tree.node(id) else { return };
        let (at, element) = (n.offset(), n.name_span());
        let mut kids: ArrayVec<(Span, Span), REPLY_MAX_LIST_ITEMS> = ArrayVec::new();
        let whole = n.text_content_span();
        if whole.is_none() {
            let mut overflow = false;
            for c in n.elements() {
                if let Some(t) = c.text_content_span().filter(|t| t.len > 0) {
                    if kids.push((c.name_span(), t)).is_err() {
                        overflow = true;
                        break;
                    }
                }
            }
            if overflow {
                let p = self.mk(
                    ProblemCode::FieldNotText,
                    Some(at),
                    format_args!(
                        "<{}> has more than {} parts; expected a few text elements",
                        block_name(what),
                        kids.len()
                    ),
                );
                self.push_problem(p);
                return;
            }
        }
        let span = match whole {
            Some(s) => s,
            None => {
                let start = self.tree.text_len();
                let mut ok = true;
                for (i, &(name, text)) in kids.iter().enumerate() {
                    if i > 0 {
                        ok &= self.tree.push_text("\n").is_some();
                    }
                    ok &= self.tree.push_copy(name);
                    ok &= self.tree.push_text(": ").is_some();
                    ok &= self.tree.push_copy(text);
                }
                if !ok {
                    let p = self.mk(
                        ProblemCode::ReplyTooLarge,
                        Some(at),
                        format_args!("<{}> is too long to be joined into one log entry", block_name(what)),
                    );
                    self.push_problem(p);
                    return;
                }
                Span { start: start as u32, len: (self.tree.text_len() - start) as u32 }
            }
        };
        if span.len == 0 {
            let p = self.mk(ProblemCode::MissingField, Some(at), format_args!("<{}> holds no text", block_name(what)));
            self.push_problem(p);
            return;
        }
        self.store_single(what, Form::EraA, span, element, at);
    }

    /// Counts an action and stores it if the cap allows.
    fn push_action(&mut self, kind: ActionKind, form: Form, f: Fields, element: Span, work_at: u32) {
        // The same action twice in one reply is taken once: the second would be refused as a
        // repeat, or fail (a key removed twice).
        let t = &self.tree;
        let same = |a: Option<Span>, b: Option<Span>| match (a, b) {
            (Some(a), Some(b)) => t.str_at(a) == t.str_at(b),
            (None, None) => true,
            _ => false,
        };
        let tags = f.tags.unwrap_or_default();
        let duplicate = self.stored.iter().any(|s| {
            s.what == What::Action
                && s.kind == kind
                && t.str_at(s.text) == t.str_at(tags)
                && same(s.value, f.value)
                && same(s.query, f.query)
        });
        if duplicate {
            self.problem(
                ProblemCode::DuplicateAction,
                Some(work_at),
                format_args!("the same {} action twice in one reply; it was taken once", kind.as_str()),
            );
            return;
        }
        self.actions_found += 1;
        if self.actions_found as usize > self.max_actions {
            return;
        }
        let s = Stored {
            what: What::Action,
            kind,
            form,
            text: f.tags.unwrap_or_default(),
            value: f.value,
            query: f.query,
            version: f.version,
            metadata: f.metadata,
            element,
            offset: self.raw(work_at),
        };
        self.store(s);
    }

    /// Reads a field of element `parent`: its first child named one of `names`, as trimmed
    /// text; `None` when absent or empty. Tags written as a list of elements
    /// (`<tags><tag>a</tag><tag>b</tag></tags>`) are joined with `,` when `join_list`; any
    /// other field holding elements is reported (`FIELD_NOT_TEXT`) and taken as absent.
    fn field(&mut self, parent: u32, names: &[&str], join_list: bool) -> Option<Span> {
        let p = self.tree.node(parent)?;
        let c = p.elements().find(|c| names.iter().any(|n| same_name(n, c.name())))?;
        if c.is_cut() {
            let p = self.mk(
                ProblemCode::TruncatedField,
                Some(c.offset()),
                format_args!("the reply ends inside <{}>; its instruction was not taken", c.name()),
            );
            self.push_problem(p);
            self.field_failed = true;
            return None;
        }
        if let Some(s) = c.text_content_span() {
            return Some(s).filter(|s| s.len > 0);
        }
        let mut parts: ArrayVec<Span, REPLY_MAX_LIST_ITEMS> = ArrayVec::new();
        let mut overflow = false;
        if join_list {
            for e in c.elements() {
                if let Some(t) = e.text_content_span().filter(|t| t.len > 0) {
                    if parts.push(t).is_err() {
                        overflow = true;
                        break;
                    }
                }
            }
        }
        if overflow {
            let p = self.mk(
                ProblemCode::FieldNotText,
                Some(c.offset()),
                format_args!("<{}> lists more than {} items", c.name(), parts.len()),
            );
            self.push_problem(p);
            self.field_failed = true;
            return None;
        }
        if parts.is_empty() {
            let p = self.mk(
                ProblemCode::FieldNotText,
                Some(c.offset()),
                format_args!("<{}> holds elements; expected text", c.name()),
            );
            self.push_problem(p);
            self.field_failed = true;
            return None;
        }
        let start = self.tree.text_len();
        let mut ok = true;
        for (i, &t) in parts.iter().enumerate() {
            if i > 0 {
                ok &= self.tree.push_text(",").is_some();
            }
            ok &= self.tree.push_copy(t);
        }
        ok.then(|| Span { start: start as u32, len: (self.tree.text_len() - start) as u32 })
    }

    /// `<action>` (canonical, or era A with `<operation>`), or the parent of a bare `<type>`.
    fn action(&mut self, id: u32, unwrapped: bool) {
        self.field_failed = false;
        let Some(n) = self.tree.node(id) else { return };
        let (at, element) = (n.offset(), n.name_span());
        let type_span = match n.attr_type_span() {
            Some(s) => Some(s),
            None => self.field(id, &["type"], false),
        };
        let op_span = self.field(id, &["operation"], false);
        if self.field_failed {
            return;
        }
        let type_text = type_span.map(|s| self.tree.str_at(s)).unwrap_or("");
        let op_text = op_span.map(|s| self.tree.str_at(s)).unwrap_or("");
        let (kind, form) = match ActionKind::from_name(type_text) {
            Some(k) => (Some(k), Form::Canonical),
            None if !op_text.is_empty() => (era_a_kind(type_text, op_text), Form::EraA),
            None => (None, Form::Canonical),
        };
        let Some(kind) = kind else {
            let wrap = if unwrapped { " (fields without <action>)" } else { "" };
            let p = if !op_text.is_empty() {
                self.mk(
                    ProblemCode::UnknownAction,
                    Some(at),
                    format_args!("unknown action operation '{}' (type '{}'); expected store, retrieve, search, delete or archive", op_text, type_text),
                )
            } else if !type_text.is_empty() {
                self.mk(
                    ProblemCode::UnknownAction,
                    Some(at),
                    format_args!("unknown action type '{}'; expected one of {}", type_text, KINDS_LIST),
                )
            } else {
                self.mk(
                    ProblemCode::MissingField,
                    Some(at),
                    format_args!("<action>{} without <type>; expected one of {}", wrap, KINDS_LIST),
                )
            };
            self.push_problem(p);
            return;
        };
        let mut f = Fields {
            tags: self.field(id, TAGS_FIELDS, true),
            value: self.field(id, VALUE_FIELDS, false),
            query: self.field(id, &["query"], false),
            version: self.field(id, &["base_version", "version"], false),
            metadata: self.field(id, &["metadata"], false),
        };
        if kind == ActionKind::StorageSearch && f.query.is_none() {
            f.query = f.value.take();
        }
        if !self.field_failed && self.check(kind, &f, at) {
            self.push_action(kind, form, f, element, at);
        }
    }

    /// Checks the fields `kind` needs; reports what is missing.
    fn check(&mut self, kind: ActionKind, f: &Fields, at: u32) -> bool {
        let name = kind.as_str();
        if kind == ActionKind::StorageSearch && f.tags.is_none() && f.query.is_none() {
            self.problem(ProblemCode::MissingField, Some(at), format_args!("{} needs <tags> or <query>", name));
            return false;
        }
        if kind.needs_tags() && f.tags.is_none() {
            self.problem(ProblemCode::MissingField, Some(at), format_args!("{} needs non-empty <tags>", name));
            return false;
        }
        if kind.needs_value() && f.value.is_none() {
            self.problem(ProblemCode::MissingField, Some(at), format_args!("{} needs a non-empty <value>", name));
            return false;
        }
        if kind == ActionKind::RecordIssue && f.metadata.is_none() {
            self.problem(ProblemCode::MissingField, Some(at), format_args!("{} needs <metadata>", name));
            return false;
        }
        true
    }

    /// Era-A `<paging>`: its directives, in order.
    fn paging(&mut self, id: u32) {
        let Some(n) = self.tree.node(id) else { return };
        let at = n.offset();
        let mut kids: ArrayVec<u32, 16> = ArrayVec::new();
        for c in n.elements() {
            if PAGING.iter().any(|d| same_name(d, c.name())) && kids.push(c.id()).is_err() {
                break;
            }
        }
        if kids.is_empty() {
            self.problem(
                ProblemCode::MissingField,
                Some(at),
                format_args!("<paging> without <move_to_disk>, <retrieve_from_disk> or <archive_old>"),
            );
        }
        for &k in kids.iter() {
            self.directive(k);
        }
    }

    /// A paging directive: `<move_to_disk>keys</move_to_disk>`.
    fn directive(&mut self, id: u32) {
        let Some(n) = self.tree.node(id) else { return };
        let (at, element) = (n.offset(), n.name_span());
        let Some(kind) = ActionKind::from_name(n.name()) else { return };
        if n.is_cut() {
            self.problem(
                ProblemCode::TruncatedField,
                Some(at),
                format_args!("the reply ends inside <{}>; it was not taken", kind.as_str()),
            );
            return;
        }
        match n.text_content_span() {
            Some(s) if s.len > 0 => {
                let f = Fields { tags: Some(s), ..Fields::default() };
                self.push_action(kind, Form::EraA, f, element, at);
            }
            Some(_) => self.problem(
                ProblemCode::MissingField,
                Some(at),
                format_args!("<{}> is empty; expected keys", kind.as_str()),
            ),
            None => self.problem(
                ProblemCode::FieldNotText,
                Some(at),
                format_args!("<{}> holds elements; expected keys", kind.as_str()),
            ),
        }
    }

    /// A kjxlkj instruction (index `k` in [`KJXLKJ`]).
    fn kjxlkj(&mut self, id: u32, k: usize) {
        self.field_failed = false;
        let Some(n) = self.tree.node(id) else { return };
        let (at, element) = (n.offset(), n.name_span());
        let name = KJXLKJ.get(k).copied().unwrap_or("");
        match name {
            "state_add" | "state_delete" => {
                let state = self.field(id, &["state"], false);
                if self.field_failed {
                    return;
                }
                let Some(s) = state else {
                    self.problem(
                        ProblemCode::MissingField,
                        Some(at),
                        format_args!("<{}> needs a non-empty <state>", name),
                    );
                    return;
                };
                if name == "state_add" {
                    self.store_single(What::NextState, Form::Kjxlkj, s, element, at);
                } else {
                    let offset = self.raw(at);
                    let st = Stored {
                        what: What::StateDelete,
                        form: Form::Kjxlkj,
                        text: s,
                        element,
                        offset,
                        ..Stored::default()
                    };
                    self.store(st);
                }
            }
            "ram_add" => {
                let key = self.field(id, &["key"], false);
                let value = self.field(id, VALUE_FIELDS, false);
                if self.field_failed {
                    return;
                }
                let (Some(key), Some(value)) = (key, value) else {
                    self.problem(
                        ProblemCode::MissingField,
                        Some(at),
                        format_args!("<ram_add> needs non-empty <key> and <value>"),
                    );
                    return;
                };
                let key_text = self.tree.str_at(key);
                let special = [
                    ("think_log", What::ThinkLog),
                    ("evaluation_log", What::EvaluationLog),
                    ("state", What::NextState),
                ]
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key_text))
                .map(|&(_, w)| w);
                match special {
                    Some(w) => self.store_single(w, Form::Kjxlkj, value, element, at),
                    None => {
                        let f = Fields { tags: Some(key), value: Some(value), ..Fields::default() };
                        self.push_action(ActionKind::WorkingMemoryAdd, Form::Kjxlkj, f, element, at);
                    }
                }
            }
            _ => {
                let (mut kind, tag_fields): (ActionKind, &[&str]) = match name {
                    "ram_delete" => (ActionKind::WorkingMemoryRemove, &["key"]),
                    "record_add" => (ActionKind::StorageSave, &["keywords", "key", "tags"]),
                    "record_update" => (ActionKind::RecordUpdate, &["key", "keywords", "tags"]),
                    "record_issue" => (ActionKind::RecordIssue, &["key", "keywords", "tags"]),
                    _ => (ActionKind::StorageSearch, &["keywords", "tags", "key"]),
                };
                let mut f = Fields {
                    tags: self.field(id, tag_fields, true),
                    value: self.field(id, VALUE_FIELDS, false),
                    query: self.field(id, &["query"], false),
                    version: self.field(id, &["base_version", "version"], false),
                    metadata: self.field(id, &["metadata"], false),
                };
                if kind == ActionKind::StorageSearch && f.tags.is_none() && f.query.is_none() {
                    if let Some(ids) = self.field(id, &["ids"], true) {
                        kind = ActionKind::StorageLoad;
                        f.tags = Some(ids);
                    }
                }
                if !self.field_failed && self.check(kind, &f, at) {
                    self.push_action(kind, Form::Kjxlkj, f, element, at);
                }
            }
        }
    }

    fn no_instruction(&mut self) {
        let mut names: crate::fixed::ArrayString<96> = crate::fixed::ArrayString::new();
        let mut elements = 0;
        if let Some(scope) = self.tree.node(self.scope) {
            let mut shown: ArrayVec<Span, 4> = ArrayVec::new();
            for n in scope.descendants().skip(1).filter(|n| n.is_element()) {
                elements += 1;
                let name = n.name();
                if shown.is_full() || shown.iter().any(|s| self.tree.str_at(*s).eq_ignore_ascii_case(name)) {
                    continue;
                }
                let _ = shown.push(n.name_span());
                let _ = names.format(format_args!("{}<{}>", if shown.len() > 1 { ", " } else { "" }, name));
            }
        }
        if elements == 0 && self.scope == 0 {
            self.problem(
                ProblemCode::NoTags,
                None,
                format_args!("no tags found (prose only); expected <next_state>, <think_log> or <action> elements"),
            );
        } else if !self.problems.iter().any(|p| p.severity() == Severity::Error) {
            let where_ = if self.scope == 0 { "" } else { " inside <agent>" };
            self.problem(
                ProblemCode::NoInstruction,
                None,
                format_args!(
                    "no instruction{}: found {}; expected <next_state>, <think_log> or <action>",
                    where_, names
                ),
            );
        }
    }
}

const KJXLKJ: &[&str] = &[
    "ram_add",
    "ram_delete",
    "state_add",
    "state_delete",
    "record_add",
    "record_update",
    "record_search",
    "record_issue",
];

const PAGING: &[&str] = &["move_to_disk", "retrieve_from_disk", "archive_old"];

const KINDS_LIST: &str = "working_memory_add, working_memory_remove, storage_save, storage_load, storage_search";

fn what_name(w: What) -> &'static str {
    match w {
        What::NextState => "next_state",
        What::ThinkLog => "think_log",
        What::EvaluationLog => "evaluation_log",
        What::StateDelete => "state_delete",
        What::Action => "action",
    }
}

fn block_name(w: What) -> &'static str {
    match w {
        What::ThinkLog => "thinking",
        _ => "evaluation",
    }
}

/// The era-A kind for `type` + `operation`: store/save/write/add/update/create/set put the data
/// in working memory when the type names it (`working_memory`, `memory`, `ram`, `context`,
/// without `disk`/`storage`), else in the store; retrieve/load/read/get/fetch load;
/// search/find/query/lookup search; delete/remove/forget/clear remove from working memory;
/// archive archives. Anything else is unknown.
pub fn era_a_kind(type_text: &str, op: &str) -> Option<ActionKind> {
    let has = |hay: &str, needle: &str| {
        hay.as_bytes().windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
    };
    let op = op.trim();
    let any = |list: &[&str]| list.iter().any(|o| same_name(o, op));
    let to_working =
        (has(type_text, "memory") || has(type_text, "ram") || has(type_text, "context") || has(type_text, "working"))
            && !has(type_text, "disk")
            && !has(type_text, "storage");
    if any(&["store", "save", "write", "add", "update", "create", "set"]) {
        Some(if to_working { ActionKind::WorkingMemoryAdd } else { ActionKind::StorageSave })
    } else if any(&["retrieve", "load", "read", "get", "fetch"]) {
        Some(ActionKind::StorageLoad)
    } else if any(&["search", "find", "query", "lookup"]) {
        Some(ActionKind::StorageSearch)
    } else if any(&["delete", "remove", "forget", "clear"]) {
        Some(ActionKind::WorkingMemoryRemove)
    } else if any(&["archive"]) {
        Some(ActionKind::Archive)
    } else {
        ActionKind::from_name(op)
    }
}

/// Decodes entities in place (decoding never lengthens text, so writes stay behind reads).
/// The result is UTF-8 if the input was: whole characters are copied or produced.
fn decode_in_place(b: &mut Vec<u8>) {
    let (mut r, mut w) = (0, 0);
    let n = b.len();
    while r < n {
        let entity =
            if b.get(r) == Some(&b'&') { b.get(r..).and_then(crate::tag::syntax::decode_entity) } else { None };
        match entity {
            Some((c, used)) => {
                let mut tmp = [0u8; 4];
                let enc = c.encode_utf8(&mut tmp).as_bytes();
                if let Some(dst) = b.get_mut(w..w + enc.len()) {
                    dst.copy_from_slice(enc);
                }
                w += enc.len();
                r += used;
            }
            None => {
                let byte = b.get(r).copied().unwrap_or(b' ');
                if let Some(dst) = b.get_mut(w) {
                    *dst = byte;
                }
                w += 1;
                r += 1;
            }
        }
    }
    b.truncate(w);
}

/// The node after `n`'s subtree in a walk limited to `scope`'s subtree.
fn after_in_scope(n: Node<'_>, scope: u32) -> Option<u32> {
    let mut cur = n;
    loop {
        if cur.id() == scope {
            return None;
        }
        if let Some(s) = cur.next_sibling() {
            return Some(s.id());
        }
        cur = cur.parent()?;
    }
}

/// What the agent takes from one reply: a view of the [`Reader`] after `read`.
#[derive(Clone, Copy)]
pub struct Interpretation<'r> {
    r: &'r Reader,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_point_into_the_original_reply() {
        let reply = "<think>a <b> c</think>\n<agent><action><type>bad</type></action></agent>";
        let mut r = Reader::new();
        let it = r.read(reply.as_bytes(), 1);
        let p = it.problems()[0];
        assert_eq!(p.code, ProblemCode::UnknownAction);
        assert_eq!(p.offset, Some(reply.find("<action>").unwrap() as u32));
        let ok = "<think>x</think><agent><next_state>thinking</next_state></agent>";
        let it = r.read(ok.as_bytes(), 1);
        assert_eq!(it.offsets().next(), Some(ok.find("<next_state>").unwrap() as u32));
    }

    #[test]
    fn accessors_and_caps() {
        let mut r = Reader::new();
        let reply = b"<agent><state>evaluating</state><think_log>t</think_log><evaluation_log>e</evaluation_log>\
            <action><type>storage_load</type><tags>a</tags></action><action><type>storage_load</type><tags>b</tags></action></agent>";
        let it = r.read(reply, 0);
        assert_eq!((it.next_state(), it.think_log(), it.evaluation_log()), (Some("evaluating"), Some("t"), Some("e")));
        assert_eq!((it.actions().count(), it.actions_found()), (0, 2));
        assert_eq!(it.problems()[0].code, ProblemCode::TooManyActions);
        let it = r.read(reply, 5);
        let tags: Vec<_> = it.actions().map(|a| a.tags).collect();
        assert_eq!(tags, ["a", "b"]);
        assert!(!it.has_errors());
        assert_eq!(r.last().len(), 5);
    }

    #[test]
    fn era_a_kinds() {
        assert_eq!(era_a_kind("working_memory", "store"), Some(ActionKind::WorkingMemoryAdd));
        assert_eq!(era_a_kind("disk_storage", "store"), Some(ActionKind::StorageSave));
        assert_eq!(era_a_kind("disk_storage", "Retrieve"), Some(ActionKind::StorageLoad));
        assert_eq!(era_a_kind("", "search"), Some(ActionKind::StorageSearch));
        assert_eq!(era_a_kind("context", "delete"), Some(ActionKind::WorkingMemoryRemove));
        assert_eq!(era_a_kind("", "move_to_disk"), Some(ActionKind::PageOut));
        assert_eq!(era_a_kind("x", "compress"), None);
    }

    #[test]
    fn problems_past_the_cap_are_counted() {
        let mut reply = String::from("<agent>");
        for _ in 0..40 {
            reply.push_str("<action><type>nope</type></action>");
        }
        reply.push_str("</agent>");
        let mut r = Reader::new();
        let it = r.read(reply.as_bytes(), 1);
        assert_eq!(it.problems().len(), crate::limits::REPLY_MAX_PROBLEMS);
        assert_eq!(it.problems_dropped() as usize, 40 - crate::limits::REPLY_MAX_PROBLEMS);
    }
}

#[cfg(test)]
mod size_tests {
    #[test]
    fn record_sizes_match_limits_docs() {
        // limits.rs: REPLY_MAX_INSTRUCTIONS at 72 bytes each, REPLY_MAX_PROBLEMS at about 180.
        assert_eq!(core::mem::size_of::<super::Stored>(), 72);
        assert!(core::mem::size_of::<super::Problem>() <= 184);
    }
}
