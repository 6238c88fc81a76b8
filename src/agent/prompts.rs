//! The prompt texts of the configuration, rendered as tags once at start-up.
//!
//! `agent.state.base.prompt` and each `agent.state.<name>.prompt` are trees of strings (objects,
//! arrays, numbers, booleans) in `config.json`. They are rendered here, once, with the tag
//! renderer (`tag::render_tree`, one element per line), so a cycle only copies finished text.
//! Because examples in the shipped config are nested objects, the model sees them as real tags
//! (`<agent><next_state>...`), not as the escaped `&lt;agent&gt;` text the C original sent.
//!
//! Segments of `agent-prompt.json` (kjxlkj) are appended: `default` ones to the base prompt,
//! state ones to their state's prompt.
//!
//! The prompt's head ([`Prompts::head`]) is the base prompt followed by `<states>` holding every
//! state's prompt under the state's name. The C original sent only the current state's prompt,
//! which made the prompt differ from the previous cycle's right after the base prompt whenever
//! the state changed (nearly every cycle), so a server's prompt cache reused little. With all
//! states in the head, the head never changes; the prompt's tail says which state is current.
//!
//! Era A's `agent.state_prompts.<state>` objects (`system_prompt`, `objectives`, ...) are
//! rendered the same way; `executing` is filed under `commanding`.

use super::checker::{join, Checker};
use super::segments::Segments;
use crate::grammar::{ActionSet, LogField, Shape};
use crate::json::{Kind, Value};
use crate::reply::ActionKind;
use crate::tag::render::{render_tree, Source, Style};

/// Rendered prompt texts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prompts {
    base: String,
    states: Vec<(String, String)>,
    head: String,
    /// The head for constrained replies: the same, less the parts that teach the reply format
    /// or the machinery (the base's `output_contract`, `memory_model` and `safety_and_bounds`;
    /// each state's `example`, `output_requirements`, `actions`, `sequence` and
    /// `choose_<state>_when`), which the grammar and the agent carry: the grammar writes the
    /// format and offers only the actions and states allowed, the agent pages and shows the
    /// product. Small models copy examples and instructions into their answers (measured: a
    /// 135M model saved "term: one sentence about it" from an ask's own wording), and every
    /// token of the head is one a small host evaluates at least once.
    constrained_head: String,
    /// The head of a prompt that asks for the product's outline, which the grammar or schema
    /// frames whole: the constrained base only. The states' goals are no use to a reply that
    /// names no state, and a small model copied them into its outlines ("working memory is too
    /// large"; docs/measurements.md).
    ask_head: String,
    /// What each state's reply holds, for the reply grammar (see [`shape_of`]).
    shapes: Vec<(String, Shape)>,
}

/// Whether a top-level member of the base prompt is left out of the constrained head.
fn format_only_base(k: &str) -> bool {
    matches!(k, "output_contract" | "memory_model" | "safety_and_bounds")
}

/// Whether a top-level member of a state's prompt is left out of the constrained head (the
/// `choose_<state>_when` members too: the grammar offers those states).
fn format_only_state(k: &str) -> bool {
    matches!(k, "example" | "output_requirements" | "actions" | "sequence")
        || (k.starts_with("choose_") && k.ends_with("_when"))
}

/// Leaves nothing out (below the top level).
fn keep_all(_: &str) -> bool {
    false
}

impl Prompts {
    /// Renders the prompt trees under `agent` for `states`; missing or unrenderable trees are
    /// problems in `c`.
    pub fn render(c: &mut Checker, agent: Option<Value<'_>>, states: &[String], seg: Option<&Segments>) -> Prompts {
        let (section, path) = match agent {
            Some(a) if a.get("state").is_some() => (a.get("state"), "agent.state"),
            Some(a) if a.get("state_prompts").is_some() => (a.get("state_prompts"), "agent.state_prompts"),
            _ => (None, "agent.state"),
        };
        let era_a = path == "agent.state_prompts";
        // An era-B state entry holds its prompt tree and nothing else; the tree itself is the
        // user's text, any keys. (Era A's entries are rendered whole: free-form too.)
        if !era_a {
            for (name, entry) in section.filter(|s| s.kind() == Kind::Object).into_iter().flat_map(|s| s.members()) {
                if entry.kind() == Kind::Object {
                    c.reject_unknown(Some(entry), &join(path, name), &["prompt"]);
                }
            }
        }
        let mut out = Prompts::default();
        // Base prompt: optional in era A (which had none), required in era B.
        let mut constrained_base = String::new();
        match section.and_then(|s| s.get("base")) {
            Some(b) => {
                out.base = render_part(c, b, &join(path, "base"), era_a);
                constrained_base = render_without(b, era_a, format_only_base);
            }
            None if !era_a && section.is_some() => {
                c.problem_at(path, "base", "missing; the base prompt says what the agent is")
            }
            None => {}
        }
        if let Some(seg) = seg {
            append(&mut out.base, &seg.default);
            append(&mut constrained_base, &seg.default);
        }
        let mut constrained_states = Vec::new();
        for state in states {
            // The state's entry, under its own name or (for commanding) the alias executing.
            let entry = section.and_then(|s| s.members().find(|(k, _)| crate::states::canonical(k) == state.as_str()));
            let tree = entry.and_then(|(_, v)| if era_a { Some(v) } else { v.get("prompt") });
            out.shapes.push((state.clone(), tree.map_or(Shape::FREE, |t| shape_of(t, states))));
            let mut constrained = entry.map_or_else(String::new, |(_, v)| render_without(v, era_a, format_only_state));
            if let Some(seg) = seg {
                append(&mut constrained, seg.for_state(state));
            }
            constrained_states.push((state.clone(), constrained));
            let mut text = match entry {
                Some((k, v)) => render_part(c, v, &join(path, k), era_a),
                None if section.is_some() => {
                    c.problem_at(path, state, "missing; every state needs a prompt");
                    String::new()
                }
                None => String::new(),
            };
            if let Some(seg) = seg {
                append(&mut text, seg.for_state(state));
            }
            out.states.push((state.clone(), text));
        }
        // The head: the base prompt, then every state's prompt under its name. It is the same
        // in every cycle, so a server's prompt cache keeps it; the prompt's tail names the
        // current state.
        out.head = head_of(&out.base, &out.states);
        out.constrained_head = head_of(&constrained_base, &constrained_states);
        out.ask_head = constrained_base;
        out
    }

    /// The head of a prompt that asks for an outline (see the field's documentation).
    pub fn ask_head(&self) -> &str {
        &self.ask_head
    }

    /// The head for constrained replies (see the field's documentation).
    pub fn constrained_head(&self) -> &str {
        &self.constrained_head
    }

    /// What `state`'s reply holds (a free shape for a state the config does not describe).
    pub fn shape(&self, state: &str) -> Shape {
        self.shapes.iter().find(|(s, _)| s == state).map_or(Shape::FREE, |(_, sh)| *sh)
    }

    /// The stable head of every prompt: the base prompt and every state's prompt.
    pub fn head(&self) -> &str {
        &self.head
    }

    /// The base prompt text (may be empty).
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The prompt text of `state`; a state the configuration gives no prompt adds none, so
    /// empty.
    pub fn state(&self, state: &str) -> &str {
        self.states.iter().find(|(s, _)| s == state).map_or("", |(_, t)| t.as_str())
    }
}

/// Renders one state entry: era B's `prompt` member, or (era A) the whole entry.
fn render_part(c: &mut Checker, entry: Value<'_>, path: &str, era_a: bool) -> String {
    let (tree, tree_path) =
        if era_a { (Some(entry), path.to_string()) } else { (entry.get("prompt"), join(path, "prompt")) };
    let Some(tree) = tree else {
        c.problem(&tree_path, "missing");
        return String::new();
    };
    if tree.kind() != Kind::Object && tree.kind() != Kind::String {
        c.problem(&tree_path, "expected an object of texts (or one text)");
        return String::new();
    }
    let mut text = String::new();
    // As a `Without` that skips nothing: one instance of the renderer for both.
    if let Err(e) = render_tree(&mut text, Without { v: tree, skip: keep_all }, None, Style::Lines) {
        c.problem(&tree_path, e.message());
    }
    text
}

/// The base prompt, then every state's prompt under its name, inside `<states>`.
fn head_of(base: &str, states: &[(String, String)]) -> String {
    let mut head = String::new();
    head.push_str(base);
    head.push_str("<states>\n");
    for (name, text) in states {
        head.push('<');
        head.push_str(name);
        head.push_str(">\n");
        head.push_str(text);
        if !text.is_empty() && !text.ends_with('\n') {
            head.push('\n');
        }
        head.push_str("</");
        head.push_str(name);
        head.push_str(">\n");
    }
    head.push_str("</states>\n");
    head
}

/// What a state's reply holds, read from its prompt tree: the action types are the keys of
/// its `actions` object (else the type its example's action has); it names a next state and
/// writes a log when its `example.agent` does. A prompt with neither an example nor actions
/// (era A's) gets a free shape: a next state, a think log, any action.
///
/// The states it may name are those its prompt gives a `choose_<state>_when` for, when it gives
/// any (the shipped thinking prompt: `choose_commanding_when`); else every state.
pub fn shape_of(tree: Value<'_>, states: &[String]) -> Shape {
    let mut next_mask = 0u16;
    for (i, state) in states.iter().enumerate().take(16) {
        let named = tree
            .members()
            .any(|(k, _)| k.strip_prefix("choose_").and_then(|r| r.strip_suffix("_when")) == Some(state.as_str()));
        if named {
            next_mask |= 1 << i;
        }
    }
    let example = tree.get("example").and_then(|e| e.get("agent"));
    let mut actions = ActionSet::NONE;
    if let Some(list) = tree.get("actions").filter(|a| a.kind() == Kind::Object) {
        for (name, _) in list.members() {
            if let Some(kind) = ActionKind::from_name(name) {
                actions = actions.with(kind);
            }
        }
    } else if let Some(kind) =
        example.and_then(|e| e.path("action.type")).and_then(|t| t.as_str()).and_then(ActionKind::from_name)
    {
        actions = actions.with(kind);
    }
    let Some(example) = example else {
        return Shape { actions: if actions.is_empty() { ActionSet::ALL } else { actions }, next_mask, ..Shape::FREE };
    };
    let log = if example.get("think_log").is_some() {
        Some(LogField::Think)
    } else if example.get("evaluation_log").is_some() {
        Some(LogField::Evaluation)
    } else {
        None
    };
    let next_state = example.get("next_state").is_some() || example.get("state").is_some();
    Shape { next_state, next_mask, log, actions }
}

/// A prompt tree less some top-level members (see [`format_only_state`]).
#[derive(Clone, Copy)]
struct Without<'a> {
    v: Value<'a>,
    skip: fn(&str) -> bool,
}

impl<'a> Source<'a> for Without<'a> {
    fn shape(&self) -> crate::tag::render::Shape<'a> {
        self.v.shape()
    }

    fn child(&self, i: usize) -> Option<(&'a str, Self)> {
        if self.v.kind() == Kind::Object {
            let skip = self.skip;
            self.v.members().filter(|(k, _)| !skip(k)).nth(i).map(|(k, v)| (k, Without { v, skip: keep_all }))
        } else {
            self.v.child(i).map(|(k, v)| (k, Without { v, skip: keep_all }))
        }
    }
}

/// Renders one state entry like [`render_part`], less the top-level members `skip` names;
/// problems were reported by `render_part` already, so here a failure is just empty text.
fn render_without(entry: Value<'_>, era_a: bool, skip: fn(&str) -> bool) -> String {
    let tree = if era_a { Some(entry) } else { entry.get("prompt") };
    let mut text = String::new();
    if let Some(tree) = tree.filter(|t| matches!(t.kind(), Kind::Object | Kind::String)) {
        if render_tree(&mut text, Without { v: tree, skip }, None, Style::Lines).is_err() {
            text.clear();
        }
    }
    text
}

fn append(text: &mut String, more: &str) {
    if more.is_empty() {
        return;
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(more);
    if !text.ends_with('\n') {
        text.push('\n');
    }
}
