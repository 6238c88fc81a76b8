//! The parsed tag tree: a fixed-capacity arena of compact node records plus one byte arena for
//! names and decoded text, both reserved once ([`TagTree::with_capacity`]) and reused by every
//! parse, so parsing allocates nothing.
//!
//! Nodes are index records (`u32` links to parent, first and last child, next sibling), not
//! pointers, so the tree is walked with loops, never recursion: [`Node::descendants`] is a
//! pre-order walk over the links. Node 0 is the document root, an element with an empty name.
//!
//! Text is stored as the parser decoded it (entities resolved) but not trimmed; adjacent text
//! pieces (split by a comment, a CDATA section, an entity) are merged into one node.
//! [`Node::text_content`] gives an element's text trimmed, which is what every reader of a
//! reply field wants.

/// "No node" in a link.
pub(crate) const NONE: u32 = u32::MAX;

/// A range of the byte arena.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: u32,
    pub len: u32,
}

impl Span {
    pub fn end(self) -> usize {
        self.start as usize + self.len as usize
    }
}

/// Flags of a node record.
pub(crate) const F_ELEMENT: u8 = 1;
pub(crate) const F_CLOSED: u8 = 2;
pub(crate) const F_TYPE_ATTR: u8 = 4;
pub(crate) const F_KEY_ATTR: u8 = 8;
/// Still open when the input ended (or parsing stopped at a capacity).
pub(crate) const F_CUT: u8 = 16;

/// One node: 48 bytes.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct Rec {
    pub flags: u8,
    pub parent: u32,
    pub next: u32,
    pub first: u32,
    pub last: u32,
    /// Element: its name. Text: its text.
    pub span: Span,
    /// Element: the value of its `type` attribute, if `F_TYPE_ATTR`.
    pub type_attr: Span,
    /// Element: the value of its `key` attribute, if `F_KEY_ATTR`.
    pub key_attr: Span,
    /// Byte offset in the parsed input of the node's start (`<` or first text byte).
    pub offset: u32,
}

/// What stopped or bent a parse; the tree still holds everything read before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// More nodes than the tree's capacity: parsing stopped there.
    Nodes,
    /// More text than the byte arena holds: parsing stopped there.
    Text,
    /// Elements nested deeper than [`crate::limits::TAG_MAX_DEPTH`]: the deeper tags were
    /// dropped (their text kept), parsing went on.
    Depth,
}

impl Limit {
    /// A short name for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::Nodes => "node count",
            Limit::Text => "text bytes",
            Limit::Depth => "nesting depth",
        }
    }
}

/// How well-formed the input was: what the parser had to recover from. Offsets are byte
/// offsets in the parsed input.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParseReport {
    /// End tags that matched no open element (ignored).
    pub unmatched_end_tags: u32,
    /// Where the first of them was.
    pub first_unmatched_end_tag: Option<u32>,
    /// Elements closed by the end tag of an ancestor (their own end tag was missing or came
    /// in the wrong order).
    pub implicitly_closed: u32,
    /// Where the first of those elements started.
    pub first_implicitly_closed: Option<u32>,
    /// Elements still open when the input ended.
    pub unclosed_at_end: u32,
    /// Where the outermost of those started.
    pub first_unclosed_at_end: Option<u32>,
    /// The input ended inside markup (a tag, comment, CDATA section, declaration): where it
    /// started. What followed it was dropped (tag) or kept as text (CDATA).
    pub truncated_at: Option<u32>,
    /// A capacity that was reached, and where.
    pub limit: Option<(Limit, u32)>,
}

impl ParseReport {
    /// Whether the input was well-formed: nothing recovered, nothing cut.
    pub fn is_clean(&self) -> bool {
        *self == ParseReport::default()
    }
}

/// Options of a parse.
#[derive(Clone, Copy, Debug, Default)]
pub struct ParseOptions<'a> {
    /// Elements whose content is text up to their own end tag (like HTML's `<textarea>`):
    /// tags and comments inside are kept as text, entities and CDATA sections still decode.
    /// Used for the reply's free-text fields (`<value>`, `<think_log>`...) so that a model
    /// writing about `<action>` in a note does not create an action. Matched
    /// ASCII-case-insensitively. If the end tag never comes, the content is parsed as ordinary
    /// markup instead. At most `TAG_MAX_TEXT_ELEMENTS` names are used.
    pub text_elements: &'a [&'a str],
}

/// A parsed tag tree in reusable, fixed-capacity storage.
pub struct TagTree {
    pub(crate) nodes: Vec<Rec>,
    pub(crate) text: String,
    pub(crate) report: ParseReport,
    max_nodes: usize,
    max_text: usize,
}

impl TagTree {
    /// Reserves room for `max_nodes` nodes (at least 1, the root) and `max_text_bytes` bytes of
    /// names and text. Cost: 48 bytes per node plus the text bytes. Nothing grows afterwards.
    pub fn with_capacity(max_nodes: usize, max_text_bytes: usize) -> TagTree {
        let max_nodes = max_nodes.clamp(1, NONE as usize - 1);
        let max_text = max_text_bytes.min(u32::MAX as usize);
        let mut t = TagTree {
            nodes: Vec::with_capacity(max_nodes),
            text: String::with_capacity(max_text),
            report: ParseReport::default(),
            max_nodes,
            max_text,
        };
        t.reset();
        t
    }

    /// Empties the tree to a lone root.
    pub(crate) fn reset(&mut self) {
        self.nodes.clear();
        self.text.clear();
        self.report = ParseReport::default();
        self.nodes.push(Rec {
            flags: F_ELEMENT | F_CLOSED,
            parent: NONE,
            next: NONE,
            first: NONE,
            last: NONE,
            ..Rec::default()
        });
    }

    /// Node capacity.
    pub fn max_nodes(&self) -> usize {
        self.max_nodes
    }

    /// Text arena capacity in bytes.
    pub fn max_text(&self) -> usize {
        self.max_text
    }

    /// Bytes of the text arena still free.
    pub fn text_room(&self) -> usize {
        self.max_text.saturating_sub(self.text.len())
    }

    /// Number of nodes, root included.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// What the last parse recovered from.
    pub fn report(&self) -> &ParseReport {
        &self.report
    }

    /// The document root (an element with an empty name).
    pub fn root(&self) -> Node<'_> {
        Node { tree: self, id: 0 }
    }

    pub(crate) fn rec(&self, id: u32) -> Option<&Rec> {
        self.nodes.get(id as usize)
    }

    /// The text of an arena range. Every span is made by the parser (or [`TagTree::push_text`])
    /// from whole `&str`s it appended, so it lies within the arena on character boundaries, and
    /// the default span (an element without that attribute) is empty. Node accessors cannot
    /// fail, so a span that did not lie within (a bug) would read as `""`; the parser's tests
    /// compare whole trees, so such a bug shows there.
    pub(crate) fn str_of(&self, span: Span) -> &str {
        self.text.get(span.start as usize..span.end()).unwrap_or("")
    }

    /// Appends `s` to the text arena (after a parse, for text derived from it) and returns its
    /// range, or `None` if it does not fit.
    pub(crate) fn push_text(&mut self, s: &str) -> Option<Span> {
        if s.len() > self.text_room() {
            return None;
        }
        let start = self.text.len() as u32;
        self.text.push_str(s);
        Some(Span { start, len: s.len() as u32 })
    }

    /// Bytes used in the text arena.
    pub(crate) fn text_len(&self) -> usize {
        self.text.len()
    }

    /// The node with index `id`.
    pub fn node(&self, id: u32) -> Option<Node<'_>> {
        self.rec(id).map(|_| Node { tree: self, id })
    }

    /// Text of an arena range (see [`TagTree::str_of`]).
    pub(crate) fn str_at(&self, span: Span) -> &str {
        self.str_of(span)
    }

    /// Appends a copy of the arena range `span` to the arena (through a small stack buffer, so
    /// no allocation); false if it does not fit, or is not text of the arena.
    pub(crate) fn push_copy(&mut self, span: Span) -> bool {
        if (span.len as usize) > self.text_room() || self.text.get(span.start as usize..span.end()).is_none() {
            return false;
        }
        let mut buf = [0u8; 256];
        let mut at = span.start as usize;
        let end = span.end();
        while at < end {
            let mut cut = (at + buf.len()).min(end);
            while cut > at && !self.text.is_char_boundary(cut) {
                cut -= 1;
            }
            // `cut` is a boundary past `at` (a character is at most 4 bytes), so none of these
            // fail; if one did, nothing half-copied would be passed off as the text.
            let Some(piece) = self.text.get(at..cut).filter(|p| !p.is_empty()) else { return false };
            let Some(dst) = buf.get_mut(..piece.len()) else { return false };
            dst.copy_from_slice(piece.as_bytes());
            let Ok(copied) = core::str::from_utf8(dst) else { return false };
            self.text.push_str(copied);
            at = cut;
        }
        true
    }
}

/// A node of a [`TagTree`]: a cheap, copyable handle.
#[derive(Clone, Copy)]
pub struct Node<'t> {
    tree: &'t TagTree,
    id: u32,
}

impl<'t> Node<'t> {
    fn rec(&self) -> Rec {
        self.tree.rec(self.id).copied().unwrap_or_default()
    }

    fn at(&self, id: u32) -> Option<Node<'t>> {
        if id == NONE || self.tree.rec(id).is_none() {
            None
        } else {
            Some(Node { tree: self.tree, id })
        }
    }

    /// The node's index (0 is the root).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Whether this is an element (else text).
    pub fn is_element(&self) -> bool {
        self.rec().flags & F_ELEMENT != 0
    }

    /// Whether the element's end tag was seen (or it was self-closing); the root counts as
    /// closed. False for an element closed implicitly or cut by the end of the input.
    pub fn is_closed(&self) -> bool {
        self.rec().flags & F_CLOSED != 0
    }

    /// Whether the element was still open when the input ended: its content may be cut
    /// short (a reply stopped by the token limit).
    pub fn is_cut(&self) -> bool {
        self.rec().flags & F_CUT != 0
    }

    /// The element's name as written ("" for the root and for text).
    pub fn name(&self) -> &'t str {
        let r = self.rec();
        if r.flags & F_ELEMENT != 0 {
            self.tree.str_of(r.span)
        } else {
            ""
        }
    }

    /// Whether the element's name is `name`, ignoring ASCII case.
    pub fn is(&self, name: &str) -> bool {
        self.is_element() && self.name().eq_ignore_ascii_case(name)
    }

    /// The text of a text node, as decoded, untrimmed ("" for an element).
    pub fn text(&self) -> &'t str {
        let r = self.rec();
        if r.flags & F_ELEMENT == 0 {
            self.tree.str_of(r.span)
        } else {
            ""
        }
    }

    /// The value of the element's `type="..."` attribute, decoded.
    pub fn attr_type(&self) -> Option<&'t str> {
        let r = self.rec();
        (r.flags & F_TYPE_ATTR != 0).then(|| self.tree.str_of(r.type_attr))
    }

    /// The value of the element's `key="..."` attribute, decoded.
    pub fn attr_key(&self) -> Option<&'t str> {
        let r = self.rec();
        (r.flags & F_KEY_ATTR != 0).then(|| self.tree.str_of(r.key_attr))
    }

    /// The key this element stands for: its `key` attribute if it has one (the renderer's
    /// form for keys that are not valid names), else its name.
    pub fn key(&self) -> &'t str {
        self.attr_key().unwrap_or_else(|| self.name())
    }

    /// Byte offset of the node's start in the parsed input.
    pub fn offset(&self) -> u32 {
        self.rec().offset
    }

    /// The parent (None for the root).
    pub fn parent(&self) -> Option<Node<'t>> {
        self.at(self.rec().parent)
    }

    /// The first child.
    pub fn first_child(&self) -> Option<Node<'t>> {
        self.at(self.rec().first)
    }

    /// The next sibling.
    pub fn next_sibling(&self) -> Option<Node<'t>> {
        self.at(self.rec().next)
    }

    /// The children, in order.
    pub fn children(&self) -> Children<'t> {
        Children { next: self.first_child() }
    }

    /// The element children, in order.
    pub fn elements(&self) -> impl Iterator<Item = Node<'t>> {
        self.children().filter(|n| n.is_element())
    }

    /// Whether the element has element children.
    pub fn has_elements(&self) -> bool {
        self.children().any(|n| n.is_element())
    }

    /// The first element child named `name` (ASCII case-insensitive).
    pub fn child(&self, name: &str) -> Option<Node<'t>> {
        self.children().find(|n| n.is(name))
    }

    /// The element's text, trimmed, if it holds only text (or nothing: then ""). `None` if it
    /// has element children: structured or mixed content is not a text value.
    pub fn text_content(&self) -> Option<&'t str> {
        let mut text = "";
        for c in self.children() {
            if c.is_element() {
                return None;
            }
            // Adjacent text is merged at parse time, so there is at most one text child.
            text = c.text();
        }
        Some(text.trim())
    }

    /// The range of the element's name in the text arena.
    pub(crate) fn name_span(&self) -> Span {
        let r = self.rec();
        if r.flags & F_ELEMENT != 0 {
            r.span
        } else {
            Span::default()
        }
    }

    /// The range of the element's `type` attribute value, trimmed, if it has a non-empty one.
    pub(crate) fn attr_type_span(&self) -> Option<Span> {
        let r = self.rec();
        if r.flags & F_TYPE_ATTR == 0 {
            return None;
        }
        let s = self.tree.str_of(r.type_attr);
        let lead = s.len() - s.trim_start().len();
        let len = s.trim().len() as u32;
        (len > 0).then_some(Span { start: r.type_attr.start + lead as u32, len })
    }

    /// Like [`Node::text_content`], as a range of the tree's text arena.
    pub(crate) fn text_content_span(&self) -> Option<Span> {
        let mut span = Span::default();
        for c in self.children() {
            if c.is_element() {
                return None;
            }
            span = c.rec().span;
        }
        let s = self.tree.str_of(span);
        let lead = s.len() - s.trim_start().len();
        let len = s.trim().len();
        Some(Span { start: span.start + lead as u32, len: len as u32 })
    }

    /// The node and all its descendants, in document order (pre-order, iterative).
    pub fn descendants(&self) -> Descendants<'t> {
        Descendants { top: *self, next: Some(*self) }
    }
}

impl core::fmt::Debug for Node<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.is_element() {
            write!(f, "<{}>@{}", self.name(), self.offset())
        } else {
            write!(f, "{:?}@{}", self.text(), self.offset())
        }
    }
}

/// Iterator over a node's children.
pub struct Children<'t> {
    next: Option<Node<'t>>,
}

impl<'t> Iterator for Children<'t> {
    type Item = Node<'t>;
    fn next(&mut self) -> Option<Node<'t>> {
        let n = self.next?;
        self.next = n.next_sibling();
        Some(n)
    }
}

/// Pre-order walk over a subtree, following links (no recursion, no stack).
pub struct Descendants<'t> {
    top: Node<'t>,
    next: Option<Node<'t>>,
}

impl<'t> Descendants<'t> {
    /// Skips the subtree of the node returned last: the walk continues with its next sibling
    /// (or the next sibling of an ancestor).
    pub fn skip_subtree(&mut self, of: Node<'t>) {
        self.next = self.after(of);
    }

    fn after(&self, mut n: Node<'t>) -> Option<Node<'t>> {
        loop {
            if n.id == self.top.id {
                return None;
            }
            if let Some(s) = n.next_sibling() {
                return Some(s);
            }
            n = n.parent()?;
        }
    }
}

impl<'t> Iterator for Descendants<'t> {
    type Item = Node<'t>;
    fn next(&mut self) -> Option<Node<'t>> {
        let n = self.next?;
        self.next = match n.first_child() {
            Some(c) => Some(c),
            None => self.after(n),
        };
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_record_size_matches_the_documented_cost() {
        // limits.rs documents TAG_MAX_NODES at 48 bytes per node.
        assert_eq!(core::mem::size_of::<Rec>(), 48);
    }
}
