//! The prompt side of the tag format: trees (config prompt objects, working memory) written as
//! tags, in a form the parser in `parse.rs` reads back to the same tree.
//!
//! Rules, each chosen so the output is both cheap in tokens and exact:
//!
//! - Text escapes only `&`, `<`, `>` (`syntax::write_text`); the parser decodes them back.
//!   Leading and trailing whitespace of a text is not significant (the parser trims), so a
//!   tree's texts read back trimmed.
//! - A key that is a valid name (`syntax::is_valid_name`; this includes memory keys such as
//!   `dictionary,terms`) is the element name: `<dictionary,terms>...</dictionary,terms>`, as the
//!   C original wrote them, which models read and copy well. Any other key (empty, starting with
//!   a digit, holding a space, a quote, `/`...) is written `<entry key="...">...</entry>`, with
//!   the key escaped as an attribute value; the parser keeps `key` attributes and
//!   [`Node::key`](super::Node::key) returns them. Nothing is dropped or mangled.
//! - Object members keep their order (the config author's order, and stable from one cycle to
//!   the next, which keeps the server's prompt cache warm). The C original sorted them.
//! - Arrays are `<item>` children: `<rules><item>a</item><item>b</item></rules>`.
//! - An empty text is `<key></key>`, a null or empty object or array `<key/>`.
//! - [`Style::Lines`] puts each element on its own line, indented two spaces per level; text is
//!   written as it is (its own newlines included). [`Style::Compact`] writes no layout.
//!
//! Rendering writes into any `fmt::Write` (the prompt is a `FixedBuf`) and never allocates. The
//! tree walk is a loop over an explicit, fixed-size stack (no recursion): deeper than
//! [`TAG_MAX_DEPTH`] (which the parser would not read back) is `CAPACITY_EXCEEDED`, and a full
//! output buffer is `CAPACITY_EXCEEDED` too.

use super::syntax::{is_valid_name, write_attr_value, write_text};
use crate::error::Result;
use crate::fixed::ArrayVec;
use crate::limits::TAG_MAX_DEPTH;
use core::fmt;

/// Layout of rendered tags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// No whitespace between tags.
    Compact,
    /// One element per line, two spaces of indentation per level.
    Lines,
}

/// Writes tags one by one, tracking depth for indentation.
pub struct TagWriter<'o> {
    out: &'o mut dyn fmt::Write,
    style: Style,
    depth: usize,
}

impl<'o> TagWriter<'o> {
    /// A writer into `out`.
    pub fn new(out: &'o mut dyn fmt::Write, style: Style) -> TagWriter<'o> {
        TagWriter { out, style, depth: 0 }
    }

    fn indent(&mut self) -> fmt::Result {
        if self.style == Style::Lines {
            for _ in 0..self.depth {
                self.out.write_str("  ")?;
            }
        }
        Ok(())
    }

    fn newline(&mut self) -> fmt::Result {
        if self.style == Style::Lines {
            self.out.write_str("\n")?;
        }
        Ok(())
    }

    fn start(&mut self, key: &str) -> fmt::Result {
        if is_valid_name(key) {
            self.out.write_str("<")?;
            self.out.write_str(key)?;
            self.out.write_str(">")
        } else {
            self.out.write_str("<entry key=\"")?;
            write_attr_value(self.out, key)?;
            self.out.write_str("\">")
        }
    }

    fn end(&mut self, key: &str) -> fmt::Result {
        self.out.write_str("</")?;
        self.out.write_str(if is_valid_name(key) { key } else { "entry" })?;
        self.out.write_str(">")
    }

    /// Opens an element that will hold elements.
    pub fn open(&mut self, key: &str) -> fmt::Result {
        self.indent()?;
        self.start(key)?;
        self.newline()?;
        self.depth += 1;
        Ok(())
    }

    /// Closes the element opened last with `open(key)`.
    pub fn close(&mut self, key: &str) -> fmt::Result {
        self.depth = self.depth.saturating_sub(1);
        self.indent()?;
        self.end(key)?;
        self.newline()
    }

    /// Writes `<key>text</key>`.
    pub fn leaf(&mut self, key: &str, text: &str) -> fmt::Result {
        self.indent()?;
        self.start(key)?;
        write_text(self.out, text)?;
        self.end(key)?;
        self.newline()
    }

    /// Writes `<key/>` (or `<entry key="..."/>`).
    pub fn empty(&mut self, key: &str) -> fmt::Result {
        self.indent()?;
        if is_valid_name(key) {
            self.out.write_str("<")?;
            self.out.write_str(key)?;
            self.out.write_str("/>")?;
        } else {
            self.out.write_str("<entry key=\"")?;
            write_attr_value(self.out, key)?;
            self.out.write_str("\"/>")?;
        }
        self.newline()
    }
}

fn full() -> crate::error::Error {
    err!(CapacityExceeded, "the rendered tags do not fit in the output buffer (see PROMPT_MAX_BYTES in limits.rs)")
}

/// Renders ordered key/text pairs (working memory) as `<key>text</key>` elements.
pub fn render_pairs<'a>(
    out: &mut dyn fmt::Write,
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    style: Style,
) -> Result<()> {
    let mut w = TagWriter::new(out, style);
    for (k, v) in pairs {
        w.leaf(k, v).map_err(|_| full())?;
    }
    Ok(())
}

/// What a node of a source tree is, for [`render_tree`].
#[derive(Clone, Copy, Debug)]
pub enum Shape<'a> {
    /// A text leaf (strings; numbers and booleans as their text).
    Text(&'a str),
    /// Nothing (`<key/>`).
    Null,
    /// Named children ([`Source::child`] gives key and value).
    Map,
    /// Unnamed children, rendered as `<item>`.
    List,
}

/// A tree that can be rendered as tags: implemented for `crate::json::Value` (config prompt
/// objects) and by tests.
pub trait Source<'a>: Copy {
    /// What this node is.
    fn shape(&self) -> Shape<'a>;
    /// The `i`-th child of a map (its key) or list (key ignored).
    fn child(&self, i: usize) -> Option<(&'a str, Self)>;
}

/// How a frame of the render stack writes its children.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum Frame {
    /// The root map: children written at the top level, no element around them.
    #[default]
    Root,
    /// A map element: children under their keys.
    Map,
    /// A list element: children as `<item>`.
    List,
}

/// Renders `root` as one element named `wrap` (`<wrap>...</wrap>`), or, with `wrap` `None`
/// and a map root, its members at the top level with no element around them (as the C
/// original did). A non-map root with no `wrap` is written under the key `value`.
pub fn render_tree<'a, S: Source<'a>>(
    out: &mut dyn fmt::Write,
    root: S,
    wrap: Option<&'a str>,
    style: Style,
) -> Result<()> {
    let mut w = TagWriter::new(out, style);
    // Each frame: the container, its key, how it writes children, the next child index.
    let mut stack: ArrayVec<(Option<S>, &'a str, Frame, usize), { TAG_MAX_DEPTH + 1 }> = ArrayVec::new();
    match (root.shape(), wrap) {
        (Shape::Map, None) => stack.push((Some(root), "", Frame::Root, 0))?,
        (_, key) => render_one(&mut w, &mut stack, key.unwrap_or("value"), root)?,
    }
    while let Some((Some(node), key, frame, i)) = stack.pop() {
        match node.child(i) {
            Some((k, child)) => {
                stack.push((Some(node), key, frame, i + 1))?;
                let k = if frame == Frame::List { "item" } else { k };
                render_one(&mut w, &mut stack, k, child)?;
            }
            None if frame != Frame::Root => w.close(key).map_err(|_| full())?,
            None => {}
        }
    }
    Ok(())
}

/// Writes a leaf, or opens a container and pushes its frame.
fn render_one<'a, S: Source<'a>, const N: usize>(
    w: &mut TagWriter<'_>,
    stack: &mut ArrayVec<(Option<S>, &'a str, Frame, usize), N>,
    key: &'a str,
    node: S,
) -> Result<()> {
    let frame = match node.shape() {
        Shape::Text(t) => return w.leaf(key, t).map_err(|_| full()),
        Shape::Null => return w.empty(key).map_err(|_| full()),
        Shape::Map => Frame::Map,
        Shape::List => Frame::List,
    };
    if node.child(0).is_none() {
        return w.empty(key).map_err(|_| full());
    }
    if stack.len() + 1 >= TAG_MAX_DEPTH {
        bail!(
            CapacityExceeded,
            "tree nested deeper than {} levels at '{}' (TAG_MAX_DEPTH in limits.rs)",
            TAG_MAX_DEPTH,
            key
        );
    }
    w.open(key).map_err(|_| full())?;
    stack.push((Some(node), key, frame, 0))
}

/// Config prompt objects: strings as text, numbers as their JSON text, booleans as
/// `true`/`false`, null as `<key/>`, objects as maps, arrays as lists. Child `i` is found by
/// walking the siblings (`O(i)`), fine for prompt objects of a few dozen members.
impl<'a> Source<'a> for crate::json::Value<'a> {
    fn shape(&self) -> Shape<'a> {
        use crate::json::Typed;
        match self.typed() {
            Typed::Null => Shape::Null,
            Typed::Bool(b) => Shape::Text(if b { "true" } else { "false" }),
            Typed::Number(text) | Typed::String(text) => Shape::Text(text),
            Typed::Array => Shape::List,
            Typed::Object => Shape::Map,
        }
    }

    fn child(&self, i: usize) -> Option<(&'a str, Self)> {
        match self.kind() {
            crate::json::Kind::Object => self.members().nth(i),
            crate::json::Kind::Array => self.at(i).map(|v| ("item", v)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tag::{ParseOptions, TagTree};

    #[test]
    fn pairs_render_and_read_back() {
        let mut out = String::new();
        let pairs = [
            ("user_request", "sort <b> & c"),
            ("dictionary,terms", "x"),
            ("2024,plans", "y"),
            ("a \"q\"", ""),
            ("", "e"),
        ];
        render_pairs(&mut out, pairs.iter().copied(), Style::Lines).unwrap();
        assert_eq!(
            out,
            "<user_request>sort &lt;b&gt; &amp; c</user_request>\n<dictionary,terms>x</dictionary,terms>\n\
             <entry key=\"2024,plans\">y</entry>\n<entry key=\"a &quot;q&quot;\"></entry>\n<entry key=\"\">e</entry>\n"
        );
        let mut t = TagTree::with_capacity(100, 1000);
        assert!(t.parse(&out, &ParseOptions::default()).is_clean());
        let got: Vec<_> = t.root().elements().map(|e| (e.key(), e.text_content().unwrap())).collect();
        assert_eq!(got, pairs);
    }

    #[test]
    fn json_prompt_objects_render() {
        let mut doc = crate::json::Document::with_capacity(100, 1000);
        doc.parse(br#"{"role":"agent <x>","rules":["a","b"],"n":1.5,"on":true,"none":null,"empty":{},"deep":{"k":{"j":"v"}}}"#)
            .unwrap();
        let mut out = String::new();
        render_tree(&mut out, doc.root(), None, Style::Compact).unwrap();
        assert_eq!(
            out,
            "<role>agent &lt;x&gt;</role><rules><item>a</item><item>b</item></rules><n>1.5</n><on>true</on><none/><empty/>\
             <deep><k><j>v</j></k></deep>"
        );
        let mut lines = String::new();
        render_tree(&mut lines, doc.root().get("deep").unwrap(), Some("deep"), Style::Lines).unwrap();
        assert_eq!(lines, "<deep>\n  <k>\n    <j>v</j>\n  </k>\n</deep>\n");
    }

    #[test]
    fn full_output_and_depth_are_errors() {
        let mut small: crate::fixed::ArrayString<8> = crate::fixed::ArrayString::new();
        let e = render_pairs(&mut small, [("key", "long value")], Style::Compact).unwrap_err();
        assert_eq!(e.code(), crate::error::Code::CapacityExceeded);
        let deep = "[".repeat(TAG_MAX_DEPTH + 2) + &"]".repeat(TAG_MAX_DEPTH + 2);
        let deep = deep.replacen("[]", "[1]", 1);
        let mut doc = crate::json::Document::with_capacity(1000, 1000);
        doc.parse(deep.as_bytes()).unwrap();
        let e = render_tree(&mut String::new(), doc.root(), Some("x"), Style::Compact).unwrap_err();
        assert_eq!(e.code(), crate::error::Code::CapacityExceeded);
    }
}
