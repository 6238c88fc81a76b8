//! The reply language as a JSON Schema, for servers that constrain only JSON (Ollama `format`,
//! LM Studio and OpenAI `response_format` `json_schema`, llama.cpp `json_schema`). The reply it
//! describes is the JSON dialect the reader also reads:
//!
//! ```json
//! {"think_log": "why", "next_state": "commanding",
//!  "action": {"type": "storage_save", "tags": "dictionary,terms", "value": "text"}}
//! ```
//!
//! (`"actions": [...]` where more than one action is allowed). The schema follows OpenAI's
//! strict-mode rules, which every other server accepts too: the root is an object, every
//! object lists all its properties as `required` and sets `additionalProperties: false`, no
//! `allOf`/`not`/`if`; strings are bounded with `maxLength` below 2,000 (llama.cpp breaks at
//! 2,000) and tags with a `^...$` pattern.

use super::{Language, ProductAsk, ProductSave, Shape};
use crate::error::Result;
use crate::fixed::FixedBuf;
use crate::json::Writer;
use crate::limits::{
    GRAMMAR_ENTRY_MAX_WORDS, GRAMMAR_OUTLINE_ITEM_MAX_CHARS, GRAMMAR_OUTLINE_ITEM_MAX_WORDS, GRAMMAR_PLAN_MAX_NAMES,
    GRAMMAR_UNIT_MAX_SENTENCES, GRAMMAR_UNIT_SCRIPT_MAX_CHARS,
};
use crate::reply::ActionKind;

/// The schema's name where a server wants one (`response_format.json_schema.name`).
pub const NAME: &str = "lkjagent_reply";

/// Writes the JSON Schema of `lang` into `out` (cleared first), as compact JSON. With `bare`,
/// a product ask that is the whole reply ([`Language::bare_ask`]) is the schema of its value
/// alone, a string, which the agent wraps in the action it asked for; a server that takes
/// only an object at the schema's root is sent the whole reply's schema (`bare` false).
pub fn write(lang: &Language<'_>, bare: bool, out: &mut FixedBuf) -> Result<()> {
    out.clear();
    if let Some(p) = lang.bare_ask().filter(|_| bare) {
        let mut w = Writer::compact(out as &mut dyn core::fmt::Write);
        value_schema(&mut w, &p)?;
        return w.finish();
    }
    let b = lang.bounds.clamped();
    let shape: Shape = lang.effective_shape();
    let mut pattern = crate::fixed::ArrayString::<96>::new();
    pattern.format(format_args!(
        "^[a-z][a-z0-9_]{{0,{t}}}(,[a-z][a-z0-9_]{{0,{t}}}){{0,{n}}}$",
        t = b.tag_chars.saturating_sub(1),
        n = b.tags_per_key.saturating_sub(1)
    ))?;
    let mut w = Writer::compact(out as &mut dyn core::fmt::Write);
    w.begin_object()?;
    w.key("type")?;
    w.string("object")?;
    w.key("properties")?;
    w.begin_object()?;
    if let Some(log) = shape.log {
        w.key(log.name())?;
        bounded_string(&mut w, b.log_chars)?;
    }
    if shape.next_state {
        w.key("next_state")?;
        w.begin_object()?;
        w.key("type")?;
        w.string("string")?;
        w.key("enum")?;
        w.begin_array()?;
        for s in lang.next_states() {
            w.string(s)?;
        }
        w.end_array()?;
        w.end_object()?;
    }
    // A product ask holds the one action it asks for, all of it fixed but the model's part.
    let asked = lang.product.filter(|p| p.ask != ProductAsk::Entry && shape.actions.contains(ActionKind::StorageSave));
    let many = b.max_actions > 1 && asked.is_none();
    if let Some(p) = asked {
        w.key("action")?;
        asked_action(&mut w, &p)?;
    } else if !shape.actions.is_empty() {
        w.key(if many { "actions" } else { "action" })?;
        if many {
            w.begin_object()?;
            w.key("type")?;
            w.string("array")?;
            w.key("minItems")?;
            w.u64(1)?;
            w.key("maxItems")?;
            w.u64(u64::from(b.max_actions))?;
            w.key("items")?;
        }
        w.begin_object()?;
        w.key("anyOf")?;
        w.begin_array()?;
        for kind in shape.actions.iter() {
            let with_value = kind.needs_value();
            w.begin_object()?;
            w.key("type")?;
            w.string("object")?;
            w.key("properties")?;
            w.begin_object()?;
            w.key("type")?;
            w.begin_object()?;
            w.key("type")?;
            w.string("string")?;
            w.key("enum")?;
            w.begin_array()?;
            w.string(kind.as_str())?;
            w.end_array()?;
            w.end_object()?;
            w.key("tags")?;
            w.begin_object()?;
            w.key("type")?;
            w.string("string")?;
            match kind {
                // A product save: the product's tags (names are not excluded here: a taken one
                // is refused when the agent files or saves it).
                ActionKind::StorageSave if lang.product.is_some() => {
                    w.key("enum")?;
                    w.begin_array()?;
                    w.string(lang.product.map_or("", |p| p.tags))?;
                    w.end_array()?;
                }
                ActionKind::WorkingMemoryRemove | ActionKind::StorageLoad | ActionKind::StorageSearch => {
                    w.key("enum")?;
                    w.begin_array()?;
                    let mut failed = None;
                    lang.each_key(kind, &mut |k| {
                        if failed.is_none() {
                            failed = w.string(k).err();
                        }
                    });
                    if let Some(e) = failed {
                        return Err(e);
                    }
                    w.end_array()?;
                }
                _ => {
                    w.key("pattern")?;
                    w.string(pattern.as_str())?;
                }
            }
            w.end_object()?;
            if with_value {
                w.key("value")?;
                bounded_string(&mut w, b.value_chars)?;
            }
            w.end_object()?;
            w.key("required")?;
            w.begin_array()?;
            w.string("type")?;
            w.string("tags")?;
            if with_value {
                w.string("value")?;
            }
            w.end_array()?;
            w.key("additionalProperties")?;
            w.bool(false)?;
            w.end_object()?;
        }
        w.end_array()?;
        w.end_object()?;
        if many {
            w.end_object()?;
        }
    }
    w.end_object()?;
    w.key("required")?;
    w.begin_array()?;
    if let Some(log) = shape.log {
        w.string(log.name())?;
    }
    if shape.next_state {
        w.string("next_state")?;
    }
    if !shape.actions.is_empty() {
        w.string(if many { "actions" } else { "action" })?;
    }
    w.end_array()?;
    w.key("additionalProperties")?;
    w.bool(false)?;
    w.end_object()?;
    w.finish()
}

/// Longest pattern of one outline item: four letter classes of 22-24 bytes (`À-ÖØ-öø-ÿ` is 12
/// in UTF-8), a number's class and their bounds, about 160 bytes.
const ITEM_PATTERN_MAX_BYTES: usize = 256;

/// The one action of a product ask (see `gbnf::asked_action`): its type, tags and the start
/// of its value fixed, the model's part a bounded line (a unit's text) or numbered lines (an
/// outline's subjects), as a `pattern`.
fn asked_action<W: core::fmt::Write + ?Sized>(w: &mut Writer<'_, W>, p: &ProductSave<'_>) -> Result<()> {
    let Some((kind, tags)) = p.action() else { bail!(Internal, "a product entry is not an ask of its own (a bug)") };
    w.begin_object()?;
    w.key("type")?;
    w.string("object")?;
    w.key("properties")?;
    w.begin_object()?;
    for (name, value) in [("type", kind.as_str()), ("tags", tags)] {
        w.key(name)?;
        w.begin_object()?;
        w.key("type")?;
        w.string("string")?;
        w.key("enum")?;
        w.begin_array()?;
        w.string(value)?;
        w.end_array()?;
        w.end_object()?;
    }
    w.key("value")?;
    value_schema(w, p)?;
    w.end_object()?;
    w.key("required")?;
    w.begin_array()?;
    for name in ["type", "tags", "value"] {
        w.string(name)?;
    }
    w.end_array()?;
    w.key("additionalProperties")?;
    w.bool(false)?;
    w.end_object()
}

/// The schema of a product ask's value: a string of the fixed start and the model's part, as
/// a `pattern` (see [`asked_action`]).
fn value_schema<W: core::fmt::Write + ?Sized>(w: &mut Writer<'_, W>, p: &ProductSave<'_>) -> Result<()> {
    let mut pattern = crate::fixed::ArrayString::<PATTERN_MAX_BYTES>::new();
    pattern.push_str("^")?;
    match p.ask {
        ProductAsk::Unit { head, opening, latin } => {
            regex_literal(&mut pattern, head)?;
            pattern.push_str(": ")?;
            let most = GRAMMAR_UNIT_SCRIPT_MAX_CHARS * GRAMMAR_UNIT_MAX_SENTENCES;
            // After the unit's subject, when the text opens with it (as in the grammar), a word
            // goes on from it.
            if !opening.is_empty() {
                regex_literal(&mut pattern, opening)?;
                pattern.push_str(if latin { " " } else { "" })?;
            }
            match latin {
                // One to GRAMMAR_UNIT_MAX_SENTENCES sentences, as the grammar has them, each a
                // letter, a bounded run and its end (a capital after the first).
                true => {
                    let run = SENTENCE_MAX_CHARS;
                    // After the subject, the first sentence has said a word already.
                    let least = if opening.is_empty() { 8 } else { 2 };
                    pattern.format(format_args!("[A-Za-zÀ-ÖØ-öø-ÿ][^{NOT_TEXT}.!?]{{{least},{run}}}[.!?]"))?;
                    for _ in 1..GRAMMAR_UNIT_MAX_SENTENCES {
                        pattern.format(format_args!("( [A-ZÀ-ÖØ-Þ][^{NOT_TEXT}.!?]{{8,{run}}}[.!?]"))?;
                    }
                    for _ in 1..GRAMMAR_UNIT_MAX_SENTENCES {
                        pattern.push_str(")?")?;
                    }
                    pattern.push_str("$")?;
                }
                false => pattern.format(format_args!("[^{NOT_TEXT} 0-9A-Za-z][^{NOT_TEXT}]{{3,{}}}$", most))?,
            }
        }
        ProductAsk::Outline { prefix, first, words, latin, .. } => {
            regex_literal(&mut pattern, prefix)?;
            // Two items at least, numbered on in order, as the grammar has them; an item is
            // words (of letters, in Latin script: up to GRAMMAR_OUTLINE_ITEM_MAX_WORDS of at most
            // 14, apart by a space or a comma, a `.` at the end) or a bounded run of characters.
            // Bounded by characters only, SmolLM2-135M wrote sentences cut at the bound ("Use a
            // drip irrigation system to reduce p").
            let mut item = crate::fixed::ArrayString::<ITEM_PATTERN_MAX_BYTES>::new();
            // After its second word, a number may stand before a word, as in the grammar.
            let more = words.clamp(1, GRAMMAR_OUTLINE_ITEM_MAX_WORDS).saturating_sub(1);
            let sep = if words > crate::limits::GRAMMAR_OUTLINE_NAME_MAX_WORDS { ",?" } else { "" };
            match latin {
                true if more == 0 => item.push_str("[A-Za-zÀ-ÖØ-öø-ÿ][A-Za-zÀ-ÖØ-öø-ÿ'-]{0,13}[.]?")?,
                true => item.format(format_args!(
                    "[A-Za-zÀ-ÖØ-öø-ÿ][A-Za-zÀ-ÖØ-öø-ÿ'-]{{0,13}}({sep} [A-Za-zÀ-ÖØ-öø-ÿ'-]{{1,14}}({sep} ([0-9]{{1,4}} )?[A-Za-zÀ-ÖØ-öø-ÿ'-]{{1,14}}){{0,{}}})?[.]?",
                    more - 1
                ))?,
                false => item.format(format_args!(
                    "[^{NOT_TEXT}:,0-9 ][^{NOT_TEXT}:,]{{1,{}}}",
                    GRAMMAR_OUTLINE_ITEM_MAX_CHARS.saturating_sub(1)
                ))?,
            }
            pattern.format(format_args!("{item}\n{}[.] {item}", first.saturating_add(1)))?;
            for i in 2..GRAMMAR_PLAN_MAX_NAMES {
                pattern.format(format_args!("(\n{}[.] {item}", first.saturating_add(i)))?;
            }
            for _ in 2..GRAMMAR_PLAN_MAX_NAMES {
                pattern.push_str(")?")?;
            }
            pattern.push_str("\n?$")?;
        }
        ProductAsk::Entry => bail!(Internal, "a product entry is not an ask of its own (a bug)"),
    }
    w.begin_object()?;
    w.key("type")?;
    w.string("string")?;
    w.key("pattern")?;
    w.string(pattern.as_str())?;
    w.end_object()
}

/// What no free text of a pattern holds: `<` and `&` (the XML dialect's markup), line ends and
/// tabs, and `"` and `\`. A server's schema converter may copy a pattern's characters into the
/// JSON string's grammar as they are (llama.cpp's does), so a quote the pattern allowed would
/// end the string early, and the server, unable to read its own reply, answers 500 ("does not
/// match the expected ... format") to every seed that writes one.
const NOT_TEXT: &str = "<&\n\r\t\"\\\\";

/// Longest sentence of a unit in Latin letters, in characters: as many as the grammar's
/// longest sentence of [`GRAMMAR_ENTRY_MAX_WORDS`] words has, at six a word and its space.
/// Bounded by characters over all its sentences alone (360), SmolLM2-135M ran one thought into
/// a repetition to the bound ("I'm going to Tokyo." fifteen times).
const SENTENCE_MAX_CHARS: u32 = GRAMMAR_ENTRY_MAX_WORDS * 6;

/// Longest pattern of a product ask: its fixed start (a head or an outline's prefix, each
/// character escaped at most into two) and the rest.
const PATTERN_MAX_BYTES: usize = 4 * 1024;

/// Writes `s` as regular-expression text that matches itself: a metacharacter as a class of
/// itself (`[.]`), `\\`, `^`, `[` and `]` with a `\\` (which a class cannot hold plainly).
/// Not `\\.`: llama-cpp-python's schema converter copies that escape into a GBNF literal that
/// llama.cpp rejects, and its server then crashes.
fn regex_literal(out: &mut crate::fixed::ArrayString<PATTERN_MAX_BYTES>, s: &str) -> Result<()> {
    for c in s.chars() {
        if ".$|?*+(){}/".contains(c) {
            out.push('[')?;
            out.push(c)?;
            out.push(']')?;
            continue;
        }
        if "\\^[]".contains(c) {
            out.push('\\')?;
        }
        out.push(c)?;
    }
    Ok(())
}

fn bounded_string<W: core::fmt::Write + ?Sized>(w: &mut Writer<'_, W>, max_chars: u32) -> Result<()> {
    w.begin_object()?;
    w.key("type")?;
    w.string("string")?;
    w.key("minLength")?;
    w.u64(1)?;
    w.key("maxLength")?;
    w.u64(u64::from(max_chars))?;
    w.end_object()
}

#[cfg(test)]
mod tests {
    use super::super::{ActionSet, Bounds, LogField, NoKeys};
    use super::*;
    use crate::json::Document;

    #[test]
    fn schema_is_json_and_strict() {
        let states = vec!["thinking".to_string(), "commanding".to_string()];
        let wm: &[&str] = &["notes"];
        let lang = Language {
            states: &states,
            shape: Shape { next_state: true, next_mask: 0, log: Some(LogField::Evaluation), actions: ActionSet::ALL },
            bounds: Bounds::default(),
            working_keys: &wm,
            stored_keys: &NoKeys,
            search_tags: &NoKeys,
            pinned: &[],
            managed: &[],
            recent: &[],
            in_working: &NoKeys,
            product: None,
        };
        let mut out = FixedBuf::with_capacity("schema", 64 * 1024);
        write(&lang, true, &mut out).unwrap();
        let mut doc = Document::with_capacity(4096, 64 * 1024);
        doc.parse(out.as_slice()).unwrap();
        let root = doc.root();
        assert_eq!(root.path("required.[0]").and_then(|v| v.as_str()), Some("evaluation_log"));
        assert_eq!(root.path("properties.next_state.enum.[1]").and_then(|v| v.as_str()), Some("commanding"));
        let variants = root.path("properties.action.anyOf").unwrap();
        assert_eq!(variants.len(), 3, "no load or search with nothing stored");
        let text = out.as_str().unwrap();
        assert!(text.contains(r#""enum":["notes"]"#), "{text}");
        assert_eq!(text.matches(r#""additionalProperties":false"#).count(), 4, "{text}");
    }

    /// A server's converter may copy a pattern's characters into the JSON string's grammar as
    /// they are (llama.cpp's does): a `"` the pattern allows then ends the string early, and the
    /// server cannot read its own reply (a 500). So no class of a product ask's pattern holds a
    /// quote, a backslash or a control character: a negated class names them all, and no other
    /// class holds one.
    #[test]
    fn no_pattern_lets_a_value_hold_a_quote_a_backslash_or_a_control_character() {
        let asks = [
            ProductAsk::Unit { head: "Day 3 – Kobe", opening: "Kobe", latin: true },
            ProductAsk::Unit { head: "Mulch", opening: "", latin: true },
            ProductAsk::Unit { head: "三日目 – 京都", opening: "京都", latin: false },
            ProductAsk::Outline { key: "plan", prefix: "Tips:\n1. Mulch\n2. ", first: 2, words: 12, latin: true },
            ProductAsk::Outline { key: "plan", prefix: "Terms:\n1. ", first: 1, words: 3, latin: true },
            ProductAsk::Outline { key: "plan", prefix: "用語:\n1. ", first: 1, words: 3, latin: false },
        ];
        for ask in asks {
            let p = ProductSave { tags: "tips,tomatoes", ask, taken: &[] };
            let mut out = String::new();
            value_schema(&mut Writer::compact(&mut out), &p).unwrap();
            let mut doc = Document::with_capacity(16, 8192);
            doc.parse(out.as_bytes()).unwrap();
            let pattern = doc.root().get("pattern").and_then(|v| v.as_str()).unwrap().to_string();
            let mut classes = 0;
            let mut rest = pattern.as_str();
            while let Some(open) = rest.find('[') {
                if open > 0 && rest.as_bytes()[open - 1] == b'\\' {
                    rest = &rest[open + 1..];
                    continue;
                }
                let body = &rest[open + 1..];
                let close = body.find(']').unwrap();
                let (class, negated) = match body[..close].strip_prefix('^') {
                    Some(c) => (c, true),
                    None => (&body[..close], false),
                };
                classes += 1;
                if negated {
                    for must in ["\"", "\\\\", "\n", "\r", "\t"] {
                        assert!(class.contains(must), "[^{class}] lets {must:?} in: {pattern}");
                    }
                } else {
                    assert!(
                        !class.contains('"') && !class.contains('\\') && !class.chars().any(|c| c.is_control()),
                        "[{class}] holds a quote, a backslash or a control character: {pattern}"
                    );
                }
                rest = &body[close + 1..];
            }
            assert!(classes > 0, "{pattern}");
        }
    }
}
