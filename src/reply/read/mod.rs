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
//! | `action` with `<type>` or `type="..."` | an action of that kind ([`ActionKind::from_name`](crate::reply::ActionKind::from_name)) |
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
//! **Escaped answers.** When a reply yields nothing and holds `&lt;` before what could start a
//! tag (a name, `/`, `!`, `?`; not `a &lt; b`), it is read once more with entities decoded
//! (the C original's prompts showed the templates escaped, and models answer in kind); if that
//! finds instructions they are taken with an `ESCAPED_TAGS` warning, else the reply is reported
//! as it was. Any other reply is parsed once.
//!
//! **Bounds.** At most `max_actions` actions are taken (the first ones); more is
//! `TOO_MANY_ACTIONS`. An era-A `<paging>` block counts as one action: its directives are one
//! set, taken or dropped together. `next_state`, `think_log` and `evaluation_log` are taken once each (the
//! last one wins, `DUPLICATE_FIELD`). Everything is stored in the reader's fixed arenas.
//!
//! Parts: this file reads a reply (clean, parse, scope, walk); `state` holds the [`Reader`]'s
//! arenas and what a read stored; `elements` reads each kind of element into instructions;
//! `view` is the read-only [`Interpretation`] handed out after a read.

mod elements;
mod state;
mod view;

use crate::reply::clean::clean;
use crate::reply::instruction::same_name;
use crate::reply::problem::ProblemCode;
use crate::tag::syntax::is_name_start;
use crate::tag::{Limit, Node, ParseOptions};
pub use elements::era_a_kind;
use elements::KJXLKJ;
use state::*;
pub use state::{Dialect, Reader, TEXT_ELEMENTS};
pub use view::Interpretation;

impl Reader {
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
        // A server that constrains JSON may still let a model write a raw line break inside a
        // string (llama-cpp-python's schema grammar does): read once more with those escaped.
        let parsed = t.starts_with('{')
            && (self.json_doc.parse(t.as_bytes()).is_ok()
                || (escape_raw_controls(t, &mut self.alt) && self.json_doc.parse(self.alt.as_bytes()).is_ok()));
        if parsed && super::json_reply::render(self.json_doc.root(), &mut self.alt) {
            core::mem::swap(&mut self.work, &mut self.alt);
            // Offsets now point into the rendered tags, not the reply.
            self.map.approximate = true;
            self.json = true;
        }
        self.pass();
        if self.json {
            return Interpretation { r: self };
        }
        if self.stored.is_empty() && might_hold_escaped_tags(self.work.as_bytes()) {
            // Models shown escaped templates (`&lt;action&gt;`, as the C original's prompts
            // were) sometimes answer in kind. Read the reply once more with entities decoded;
            // if that finds nothing either, report the reply as it was. (Decoding never
            // lengthens text, so `alt`, reserved as large as `work`, holds it.)
            self.alt.clear();
            crate::tag::syntax::decode_into(&mut self.alt, &self.work);
            core::mem::swap(&mut self.work, &mut self.alt);
            let approximate = self.map.approximate;
            self.map.approximate = true;
            self.pass();
            if self.stored.is_empty() {
                // Back to the reply as it was (cleaned once, kept in `alt`): parsed again, for
                // its own tree and problems.
                core::mem::swap(&mut self.work, &mut self.alt);
                self.map.approximate = approximate;
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
    pub(super) fn pass(&mut self) {
        self.stored.clear();
        self.problems.clear();
        self.problems_dropped = 0;
        self.actions_found = 0;
        self.paging_base = None;
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

    pub(super) fn interpret(&mut self) {
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

    pub(super) fn parse_problems(&mut self) {
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
                format_args!(
                    "the reply ended with {} element(s) still open, the outermost <{}>: end each with its end tag, </{}> last",
                    r.unclosed_at_end, name, name
                ),
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

    /// The name of the element starting at work offset `offset` (for messages). The root is
    /// no element the reply wrote (its offset, 0, is also that of an element starting the reply).
    pub(super) fn name_at(&self, offset: u32) -> &str {
        let mut elements = self.tree.root().descendants().skip(1).filter(|n| n.is_element());
        elements.find(|n| n.offset() == offset).map(|n| n.name()).unwrap_or("?")
    }

    pub(super) fn choose_scope(&mut self) {
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
    pub(super) fn outside_scope(&mut self) {
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

    pub(super) fn walk(&mut self) {
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
    pub(super) fn visit(&mut self, id: u32) -> bool {
        let Some(n) = self.tree.node(id) else { return false };
        if !n.is_element() {
            return false;
        }
        let name = n.name();
        let at = n.offset();
        let parent = n.parent().map(|p| p.id()).unwrap_or(0);
        let is = |c: &str| same_name(c, name);
        let kj = KJXLKJ.iter().copied().find(|k| is(k));
        if is("next_state") || is("state") {
            self.single(id, What::NextState);
        } else if is("think_log") || is("thinking_log") {
            self.single(id, What::ThinkLog);
        } else if is("evaluation_log") {
            self.single(id, What::EvaluationLog);
        } else if is("action") {
            self.action(id, None);
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
                    format_args!(
                        "<type> outside an <action>: it and its siblings were read as one action; wrap them in <action></action>"
                    ),
                );
                self.action(parent, Some(id));
            }
        } else if FIELD_NAMES.iter().any(|f| is(f)) || is("think") {
            // Fields of an action met elsewhere (read with their action, if any).
        } else {
            return true;
        }
        false
    }
}

/// Whether decoding entities could make tags: some `&lt;` is followed by what starts markup
/// (a name, `/`, `!` or `?`). Prose such as `a &lt; b` or `x &lt;= 3` cannot, and is not read
/// a second time.
fn might_hold_escaped_tags(text: &[u8]) -> bool {
    let mut i = 0;
    while let Some(at) = text.get(i..).and_then(|t| crate::bytes::find(t, b"&lt;")) {
        let next = i + at + 4;
        if text.get(next).is_some_and(|&c| is_name_start(c) || matches!(c, b'/' | b'!' | b'?')) {
            return true;
        }
        i = next;
    }
    false
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

/// Copies `text` into `out` with every control character inside a JSON string written as its
/// escape (`\n`, `\t`, `\u00XX`); `false` when there was none (or `out` is full: its
/// capacity is reserved, and a reply never grows it).
fn escape_raw_controls(text: &str, out: &mut String) -> bool {
    out.clear();
    let (mut in_string, mut escaped, mut any) = (false, false, false);
    for c in text.chars() {
        let raw = in_string && (c as u32) < 0x20;
        if out.len() + 6 > out.capacity() {
            return false;
        }
        match c {
            _ if raw => {
                any = true;
                match c {
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c => {
                        let _ = core::fmt::Write::write_fmt(out, format_args!("\\u{:04x}", c as u32));
                    }
                }
                escaped = false;
                continue;
            }
            '"' if !escaped => in_string = !in_string,
            _ => {}
        }
        escaped = in_string && c == '\\' && !escaped;
        out.push(c);
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reply::instruction::ActionKind;

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
    fn a_paging_block_is_one_set_of_directives() {
        let paging = "<paging><move_to_disk>a,b</move_to_disk><retrieve_from_disk>c</retrieve_from_disk>\
            <archive_old>d</archive_old></paging>";
        let mut r = Reader::new();
        let it = r.read(paging.as_bytes(), 1);
        let kinds: Vec<_> = it.actions().map(|a| (a.kind, a.tags)).collect();
        assert_eq!(kinds, [(ActionKind::PageOut, "a,b"), (ActionKind::PageIn, "c"), (ActionKind::Archive, "d")]);
        assert_eq!(it.actions_found(), 1);
        assert!(it.problems().is_empty(), "{:?}", it.problems());
        // After another action, the block is the second action: past a cap of 1 it is dropped
        // whole, within a cap of 2 it is taken whole.
        let both = format!("<action><type>storage_load</type><tags>x</tags></action>{paging}");
        let it = r.read(both.as_bytes(), 1);
        assert_eq!(it.actions().map(|a| a.kind).collect::<Vec<_>>(), [ActionKind::StorageLoad]);
        assert_eq!(it.actions_found(), 2);
        assert_eq!(it.problems().iter().map(|p| p.code).collect::<Vec<_>>(), [ProblemCode::TooManyActions]);
        let it = r.read(both.as_bytes(), 2);
        assert_eq!(it.actions().count(), 4);
        assert!(it.problems().is_empty(), "{:?}", it.problems());
        // A block before another action: taken whole, the action is the second.
        let first = format!("{paging}<action><type>storage_load</type><tags>x</tags></action>");
        let it = r.read(first.as_bytes(), 1);
        assert_eq!(it.actions().count(), 3);
        assert_eq!(it.actions_found(), 2);
        // No more directives than the agent carries out from one reply.
        let many: String = (0..12).map(|i| format!("<move_to_disk>k{i}</move_to_disk>")).collect();
        let it = r.read(format!("<paging>{many}</paging>").as_bytes(), 1);
        assert_eq!(it.actions().count(), crate::limits::ACTIONS_PER_CYCLE_MAX);
        assert_eq!(it.problems().iter().map(|p| p.code).collect::<Vec<_>>(), [ProblemCode::TooManyActions]);
    }

    #[test]
    fn fields_without_action_at_the_top_level_are_placed_at_their_type() {
        let reply = "Sure.\n<type>storage_save</type><tags>a</tags><value>v</value>";
        let at = reply.find("<type>").unwrap() as u32;
        let mut r = Reader::new();
        let it = r.read(reply.as_bytes(), 1);
        let a = it.actions().next().unwrap();
        assert_eq!((a.element, a.offset), ("type", at));
        let p = it.problems()[0];
        assert_eq!((p.code, p.offset), (ProblemCode::ActionWithoutWrapper, Some(at)));
        assert!(p.detail.as_str().contains("<action>"), "{}", p.detail.as_str());
        let it = r.read(b"<type>nope</type><tags>a</tags>", 1);
        let p = it.problems().iter().find(|p| p.code == ProblemCode::UnknownAction).unwrap();
        assert_eq!(p.offset, Some(0));
        assert!(!it.problems().iter().any(|p| p.detail.as_str().contains("<>")), "{:?}", it.problems());
    }

    #[test]
    fn unclosed_elements_are_named_with_what_to_do() {
        // The outermost unclosed element starts the reply, where the tree's root also "is".
        let mut r = Reader::new();
        let it = r.read(b"<agent><next_state>thinking</next_state><think_log>x", 1);
        let p = it.problems().iter().find(|p| p.code == ProblemCode::UnclosedTag).unwrap();
        let d = p.detail.as_str();
        assert!(!d.contains("<>"), "{d}");
        assert!(d.contains("<agent>") && d.contains("</agent>"), "{d}");
        assert_eq!(p.offset, Some(0));
    }

    /// Bytes the tag parser's searches examined reading `reply`, per byte of the reply.
    fn parse_work_per_byte(reply: &str) -> f64 {
        let mut r = Reader::new();
        crate::tag::parse::examined::take();
        r.read(reply.as_bytes(), 1);
        crate::tag::parse::examined::take() as f64 / reply.len() as f64
    }

    #[test]
    fn a_reply_is_parsed_once_unless_it_holds_escaped_tags() {
        // Prose with `&lt;`, no instruction: nothing escaped could be a tag; one parse.
        let prose = "if a &lt; b then c &lt;= d, and 3 &lt; 4.\n".repeat(2000);
        let once = parse_work_per_byte(&prose);
        assert!(once <= 1.1, "{once:.2}");
        // Escaped tags that decode to an instruction: the reply, then the decoded reply.
        let escaped = "&lt;next_state&gt;thinking&lt;/next_state&gt; and some words".repeat(100);
        let twice = parse_work_per_byte(&escaped);
        assert!(twice <= 2.2, "{twice:.2}");
        // Escaped tags that decode to nothing usable: at most the reply, the decoded reply and
        // the reply again (for the tree it reports).
        let useless = "&lt;action&gt;&lt;type&gt;nope&lt;/type&gt;&lt;/action&gt; words".repeat(100);
        let at_most_thrice = parse_work_per_byte(&useless);
        assert!(at_most_thrice <= 3.3, "{at_most_thrice:.2}");
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

    #[test]
    fn a_json_reply_with_a_raw_line_break_in_a_string_is_read() {
        let reply = "{ \"action\": { \"type\": \"working_memory_add\", \"tags\": \"plan\", \"value\": \"Tips:\n1. Use mulch\n2. Prune\"} }";
        let mut r = Reader::new();
        let it = r.read(reply.as_bytes(), 1);
        assert!(!it.has_errors(), "{:?}", it.problems());
        let a = it.actions().next().unwrap();
        assert_eq!(a.value, Some("Tips:\n1. Use mulch\n2. Prune"));
        // Outside a string a line break is whitespace, as JSON has it; a quote escaped in a
        // string does not end it.
        let reply =
            "{\n\"action\": {\"type\": \"storage_save\", \"tags\": \"a\", \"value\": \"say \\\"hi\\\"\n now\"}}";
        let it = r.read(reply.as_bytes(), 1);
        assert!(!it.has_errors(), "{:?}", it.problems());
        assert_eq!(it.actions().next().unwrap().value, Some("say \"hi\"\n now"));
    }
}

#[cfg(test)]
mod size_tests {
    #[test]
    fn record_sizes_match_limits_docs() {
        // limits.rs: REPLY_MAX_INSTRUCTIONS at 72 bytes each, REPLY_MAX_PROBLEMS at about 180.
        assert_eq!(core::mem::size_of::<super::Stored>(), 72);
        assert!(core::mem::size_of::<crate::reply::problem::Problem>() <= 184);
    }
}
