//! The document's arena representation, shared by [`Document`](super::Document) (which
//! builds it) and [`Value`](super::Value) (which reads it): the kind of a value, a span of the
//! text arena, and one node.

/// The kind of a JSON value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `null`
    Null,
    /// `true` or `false`
    Bool,
    /// A number (kept as its text).
    Number,
    /// A string.
    String,
    /// An array.
    Array,
    /// An object.
    Object,
}

impl Kind {
    /// The kind's name for messages: `"null"`, `"boolean"`, `"number"`, `"string"`, `"array"`,
    /// `"object"`.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool => "boolean",
            Kind::Number => "number",
            Kind::String => "string",
            Kind::Array => "array",
            Kind::Object => "object",
        }
    }
}

impl core::fmt::Display for Kind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// A span of the text arena.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) off: u32,
    pub(crate) len: u32,
}

impl Span {
    /// The text this span covers in `text`. The document's builder makes every span from text
    /// it wrote into `text` whole, so a span lies within it on character boundaries, and the
    /// default span (the key of an array item, a missing value) is empty. Value accessors
    /// cannot fail, so a span that did not lie within (a bug) would read as `""`; the round-trip
    /// tests of the parser and writer compare whole documents, so such a bug shows there.
    #[inline]
    pub(crate) fn in_text(self, text: &str) -> &str {
        let off = self.off as usize;
        off.checked_add(self.len as usize).and_then(|end| text.get(off..end)).unwrap_or("")
    }
}

/// One value of the document. `a` is: the text span for keys, strings and numbers; `len` = the
/// number of children for containers; `len` = 0/1 for booleans.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    pub(crate) kind: Kind,
    /// The member's key, if the parent is an object (empty otherwise).
    pub(crate) key: Span,
    pub(crate) a: Span,
    /// Index just past this node's subtree.
    pub(crate) end: u32,
}
