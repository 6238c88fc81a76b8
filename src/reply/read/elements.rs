//! The element readers of the [`Reader`]: single fields and joined logs, actions in every
//! dialect (tags, attributes, era A), era-A paging blocks and kjxlkj instructions, and the
//! report when a reply holds no instruction.

use super::state::*;
use crate::fixed::ArrayVec;
use crate::limits::{ACTIONS_PER_CYCLE_MAX, REPLY_MAX_LIST_ITEMS};
use crate::reply::instruction::{same_name, ActionKind, Form, CANONICAL_KINDS};
use crate::reply::problem::{ProblemCode, Severity};
use crate::tag::tree::Span;

impl Reader {
    /// `<next_state>`, `<think_log>`, `<evaluation_log>`: a text element.
    pub(super) fn single(&mut self, id: u32, what: What) {
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
    pub(super) fn joined(&mut self, id: u32, what: What) {
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
    pub(super) fn push_action(&mut self, kind: ActionKind, form: Form, f: Fields, element: Span, work_at: u32) {
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
        // The directives of one `<paging>` block are one action: each counts as the block.
        let counted = match self.paging_base {
            Some(base) => base + 1,
            None => self.actions_found + 1,
        };
        self.actions_found = counted;
        if counted as usize > self.max_actions {
            return;
        }
        // A `<paging>` block may hold more directives than the agent carries out from one reply.
        let room = self.max_actions.max(ACTIONS_PER_CYCLE_MAX);
        if self.stored.iter().filter(|s| s.what == What::Action).count() >= room {
            if !self.problems.iter().any(|p| p.code == ProblemCode::TooManyActions) {
                self.problem(
                    ProblemCode::TooManyActions,
                    Some(work_at),
                    format_args!(
                        "more than {} actions, <paging> directives included; the first {} were kept",
                        room, room
                    ),
                );
            }
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
    pub(super) fn field(&mut self, parent: u32, names: &[&str], join_list: bool) -> Option<Span> {
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

    /// `<action>` (canonical, or era A with `<operation>`), or the parent of a bare `<type>`
    /// (`unwrapped` is then that `<type>`; at the top level of the reply, where the parent is no
    /// element the model wrote, the action is placed and named at it).
    pub(super) fn action(&mut self, id: u32, unwrapped: Option<u32>) {
        self.field_failed = false;
        let Some(n) = self.tree.node(id) else { return };
        let anchor = match unwrapped {
            Some(t) if id == 0 => self.tree.node(t).unwrap_or(n),
            _ => n,
        };
        let (at, element) = (anchor.offset(), anchor.name_span());
        let type_span = match n.attr_type_span() {
            Some(s) => Some(s),
            None => self.field(id, &["type"], false),
        };
        let op_span = self.field(id, &["operation"], false);
        if self.field_failed {
            return;
        }
        // An absent <type> or <operation> reads as empty text: every check below treats an
        // empty field as a missing one, so `<type></type>` and no `<type>` get the same feedback.
        let [type_text, op_text] = [type_span, op_span].map(|s| s.map_or("", |s| self.tree.str_at(s)));
        let (kind, form) = match ActionKind::from_name(type_text) {
            Some(k) => (Some(k), Form::Canonical),
            None if !op_text.is_empty() => (era_a_kind(type_text, op_text), Form::EraA),
            None => (None, Form::Canonical),
        };
        let Some(kind) = kind else {
            let wrap = if unwrapped.is_some() { " (fields without <action>)" } else { "" };
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
                    format_args!("unknown action type '{}'; expected one of {}", type_text, CANONICAL_KINDS),
                )
            } else {
                self.mk(
                    ProblemCode::MissingField,
                    Some(at),
                    format_args!("<action>{} without <type>; expected one of {}", wrap, CANONICAL_KINDS),
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
    pub(super) fn check(&mut self, kind: ActionKind, f: &Fields, at: u32) -> bool {
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

    /// Era-A `<paging>`: its directives, in order, counted as one action (see `push_action`).
    pub(super) fn paging(&mut self, id: u32) {
        let Some(n) = self.tree.node(id) else { return };
        let at = n.offset();
        let is_directive = |c: &crate::tag::Node<'_>| c.is_element() && PAGING.iter().any(|d| same_name(d, c.name()));
        // By ids: reading a directive appends to the tree's text arena, which node handles borrow.
        let mut next = n.first_child().map(|c| (c.id(), is_directive(&c)));
        let mut any = false;
        self.paging_base = Some(self.actions_found);
        while let Some((k, directive)) = next {
            if directive {
                any = true;
                self.directive(k);
            }
            next = self.tree.node(k).and_then(|c| c.next_sibling()).map(|c| (c.id(), is_directive(&c)));
        }
        self.paging_base = None;
        if !any {
            self.problem(
                ProblemCode::MissingField,
                Some(at),
                format_args!("<paging> without <move_to_disk>, <retrieve_from_disk> or <archive_old>"),
            );
        }
    }

    /// A paging directive: `<move_to_disk>keys</move_to_disk>`.
    pub(super) fn directive(&mut self, id: u32) {
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

    /// A kjxlkj instruction (`name`, one of [`KJXLKJ`]).
    pub(super) fn kjxlkj(&mut self, id: u32, name: &'static str) {
        self.field_failed = false;
        let Some(n) = self.tree.node(id) else { return };
        let (at, element) = (n.offset(), n.name_span());
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

    pub(super) fn no_instruction(&mut self) {
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

pub(super) const KJXLKJ: &[&str] = &[
    "ram_add",
    "ram_delete",
    "state_add",
    "state_delete",
    "record_add",
    "record_update",
    "record_search",
    "record_issue",
];

pub(super) const PAGING: &[&str] = &["move_to_disk", "retrieve_from_disk", "archive_old"];

/// The era-A kind for `type` + `operation`: store/save/write/add/update/create/set put the data
/// in working memory when the type names it (`working_memory`, `memory`, `ram`, `context`,
/// without `disk`/`storage`), else in the store; retrieve/load/read/get/fetch load;
/// search/find/query/lookup search; delete/remove/forget/clear remove from working memory;
/// archive archives. Anything else is unknown.
pub fn era_a_kind(type_text: &str, op: &str) -> Option<ActionKind> {
    let has = |hay: &str, needle: &str| crate::bytes::contains_ignore_ascii_case(hay.as_bytes(), needle.as_bytes());
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
