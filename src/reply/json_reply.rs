//! The JSON reply dialect, the one a JSON Schema constrains a server to
//! ([`grammar::schema`](crate::grammar::schema)):
//!
//! ```json
//! {"think_log": "why", "next_state": "commanding",
//!  "action": {"type": "storage_save", "tags": "dictionary,terms", "value": "text"}}
//! ```
//!
//! with `"actions": [...]` for several actions. It is not read separately: [`render`] writes it
//! as the canonical tag reply (`<agent><think_log>why</think_log>...</agent>`, text escaped as
//! entities the tag reader decodes), and the [`Reader`](super::Reader) reads that, so both
//! dialects yield the same instructions and the same problem codes. Members are written in the
//! order the reply has them; a string is written as is, a number or boolean as its text, an
//! array of strings (tags as a list) joined with commas; members that are objects or arrays
//! anywhere but `action`/`actions` are left out (the tag reader would ignore them anyway).
//! Recursion is bounded by the shape: at most root → actions → action → field.

use crate::json::{Kind, Typed, Value};

/// Renders the JSON reply `root` into `out` (cleared first) as the canonical tag reply.
/// Returns false, leaving `out` in an unspecified state, when `root` is not an object with at
/// least one member the reply protocol knows, or the text would not fit `out`'s capacity
/// (which is never grown: the caller reserved it).
pub fn render(root: Value<'_>, out: &mut String) -> bool {
    out.clear();
    if root.kind() != Kind::Object {
        return false;
    }
    let known = root.members().any(|(k, _)| {
        matches!(k, "next_state" | "state" | "think_log" | "thinking_log" | "evaluation_log" | "action" | "actions")
    });
    if !known {
        return false;
    }
    let mut w = Bounded { out, ok: true };
    w.put("<agent>\n");
    for (name, v) in root.members() {
        match (name, v.kind()) {
            ("action", Kind::Object) => action(&mut w, v),
            ("actions", Kind::Array) => {
                w.put("<actions>\n");
                for item in v.items().filter(|i| i.kind() == Kind::Object) {
                    action(&mut w, item);
                }
                w.put("</actions>\n");
            }
            _ => field(&mut w, name, v),
        }
    }
    w.put("</agent>\n");
    w.ok
}

fn action(w: &mut Bounded<'_>, a: Value<'_>) {
    w.put("<action>");
    for (name, v) in a.members() {
        field(w, name, v);
    }
    w.put("</action>\n");
}

/// One member as an element: `<name>text</name>`; objects and nested arrays are left out.
fn field(w: &mut Bounded<'_>, name: &str, v: Value<'_>) {
    // A member name is written as an element name only when it is one (letters, digits, `_`).
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return;
    }
    match v.typed() {
        Typed::String(s) | Typed::Number(s) => {
            w.open(name);
            w.text(s);
            w.close(name);
        }
        Typed::Bool(b) => {
            w.open(name);
            w.put(if b { "true" } else { "false" });
            w.close(name);
        }
        Typed::Array => {
            w.open(name);
            for (i, item) in v.items().filter_map(|i| i.as_str()).enumerate() {
                if i > 0 {
                    w.put(",");
                }
                w.text(item);
            }
            w.close(name);
        }
        _ => {}
    }
}

/// A writer into a string that never grows it: past its capacity it stops and says so.
struct Bounded<'a> {
    out: &'a mut String,
    ok: bool,
}

impl Bounded<'_> {
    fn put(&mut self, s: &str) {
        if self.ok && self.out.len() + s.len() <= self.out.capacity() {
            self.out.push_str(s);
        } else {
            self.ok = false;
        }
    }

    fn open(&mut self, name: &str) {
        self.put("<");
        self.put(name);
        self.put(">");
    }

    fn close(&mut self, name: &str) {
        self.put("</");
        self.put(name);
        self.put(">\n");
    }

    /// Text with `<` and `&` as the entities the tag reader decodes.
    fn text(&mut self, s: &str) {
        let mut rest = s;
        while let Some(i) = crate::bytes::find_either(rest.as_bytes(), b'<', b'&') {
            // `i` is at `<` or `&`, an ASCII byte: the cuts around it are character boundaries
            // and cannot fail; were they to, the text is marked cut, not silently shortened.
            let (Some(plain), Some(after)) = (rest.get(..i), rest.get(i + 1..)) else {
                self.ok = false;
                return;
            };
            self.put(plain);
            self.put(if rest.as_bytes().get(i) == Some(&b'<') { "&lt;" } else { "&amp;" });
            rest = after;
        }
        self.put(rest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Document;

    fn rendered(json: &str) -> Option<String> {
        let mut doc = Document::with_capacity(256, 4096);
        doc.parse(json.as_bytes()).ok()?;
        let mut out = String::with_capacity(4096);
        render(doc.root(), &mut out).then_some(out)
    }

    #[test]
    fn renders_the_canonical_reply() {
        let r = rendered(
            r#"{"think_log":"a<b & c","next_state":"commanding","action":{"type":"storage_save","tags":["x","y"],"value":"v"}}"#,
        )
        .unwrap();
        assert_eq!(
            r,
            "<agent>\n<think_log>a&lt;b &amp; c</think_log>\n<next_state>commanding</next_state>\n\
             <action><type>storage_save</type>\n<tags>x,y</tags>\n<value>v</value>\n</action>\n</agent>\n"
        );
    }

    #[test]
    fn not_a_reply() {
        assert!(rendered("[1,2]").is_none());
        assert!(rendered(r#"{"hello":"world"}"#).is_none());
        assert!(rendered(r#""next_state""#).is_none());
    }

    #[test]
    fn never_grows_the_buffer() {
        let mut doc = Document::with_capacity(256, 4096);
        doc.parse(br#"{"think_log":"<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<"}"#).unwrap();
        let mut out = String::with_capacity(64);
        let cap = out.capacity();
        assert!(!render(doc.root(), &mut out));
        assert_eq!(out.capacity(), cap);
    }
}
