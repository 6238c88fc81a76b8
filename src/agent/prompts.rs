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

use super::check::{join, Checker};
use super::segments::Segments;
use super::settings::canonical_state;
use crate::json::{Kind, Value};
use crate::tag::render::{render_tree, Style};

/// Rendered prompt texts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prompts {
    base: String,
    states: Vec<(String, String)>,
    head: String,
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
        let mut out = Prompts::default();
        // Base prompt: optional in era A (which had none), required in era B.
        match section.and_then(|s| s.get("base")) {
            Some(b) => out.base = render_part(c, b, &join(path, "base"), era_a),
            None if !era_a && section.is_some() => {
                c.problem(&join(path, "base"), "missing; the base prompt says what the agent is")
            }
            None => {}
        }
        if let Some(seg) = seg {
            append(&mut out.base, &seg.default);
        }
        for state in states {
            // The state's entry, under its own name or (for commanding) the alias executing.
            let entry = section.and_then(|s| s.members().find(|(k, _)| canonical_state(k) == state.as_str()));
            let mut text = match entry {
                Some((k, v)) => render_part(c, v, &join(path, k), era_a),
                None if section.is_some() => {
                    c.problem(&join(path, state), "missing; every state needs a prompt");
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
        out.head.push_str(&out.base);
        out.head.push_str("<states>\n");
        for (name, text) in &out.states {
            out.head.push('<');
            out.head.push_str(name);
            out.head.push_str(">\n");
            out.head.push_str(text);
            if !text.is_empty() && !text.ends_with('\n') {
                out.head.push('\n');
            }
            out.head.push_str("</");
            out.head.push_str(name);
            out.head.push_str(">\n");
        }
        out.head.push_str("</states>\n");
        out
    }

    /// The stable head of every prompt: the base prompt and every state's prompt.
    pub fn head(&self) -> &str {
        &self.head
    }

    /// The base prompt text (may be empty).
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The prompt text of `state` (empty if the state has none).
    pub fn state(&self, state: &str) -> &str {
        self.states.iter().find(|(s, _)| s == state).map(|(_, t)| t.as_str()).unwrap_or("")
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
    if let Err(e) = render_tree(&mut text, tree, None, Style::Lines) {
        c.problem(&tree_path, e.message());
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
