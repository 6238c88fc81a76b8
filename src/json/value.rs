//! [`Value`]: a read-only view of one value in a [`Document`](super::Document), with typed
//! accessors and path look-up.
//!
//! A `Value` is two slices and an index (`Copy`, no lifetimes beyond the document's). Every
//! accessor checks the kind and returns `None` (or an empty iterator, or 0) on a mismatch, so no
//! input can make one panic. Object look-up is a linear scan over the members: the agent's
//! documents are small (a config, a memory file, one LLM response) and a scan over a few dozen
//! keys is faster than building an index. For duplicate keys, [`Value::get`] returns the last.

pub use super::node::Kind;
use super::node::{Node, Span};
use super::number;

/// A value's kind with its payload: see [`Value::typed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Typed<'a> {
    /// `null` (or a missing value).
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, exactly as written.
    Number(&'a str),
    /// A string, decoded.
    String(&'a str),
    /// An array (its items: [`Value::items`]).
    Array,
    /// An object (its members: [`Value::members`]).
    Object,
}

/// The node a missing value reads as.
const NULL: Node = Node { kind: Kind::Null, key: Span { off: 0, len: 0 }, a: Span { off: 0, len: 0 }, end: 0 };

/// A view of one value of a document. See the module documentation.
#[derive(Clone, Copy)]
pub struct Value<'a> {
    nodes: &'a [Node],
    text: &'a str,
    idx: usize,
}

impl<'a> Value<'a> {
    pub(crate) fn new(nodes: &'a [Node], text: &'a str, idx: usize) -> Value<'a> {
        Value { nodes, text, idx }
    }

    #[inline]
    fn node(&self) -> Node {
        self.nodes.get(self.idx).copied().unwrap_or(NULL)
    }

    #[inline]
    fn span(&self, s: Span) -> &'a str {
        s.in_text(self.text)
    }

    /// Index just past this value's subtree (its own index, an empty subtree, for a missing
    /// value).
    #[inline]
    fn end(&self) -> usize {
        match self.nodes.get(self.idx) {
            Some(n) => n.end as usize,
            None => self.idx,
        }
    }

    /// The kind of value.
    pub fn kind(&self) -> Kind {
        self.node().kind
    }

    /// The kind with its payload, for a `match` that needs both: no arm has to read a payload
    /// it already knows is there through an accessor that returns an `Option`.
    pub fn typed(&self) -> Typed<'a> {
        let n = self.node();
        match n.kind {
            Kind::Null => Typed::Null,
            Kind::Bool => Typed::Bool(n.a.len != 0),
            Kind::Number => Typed::Number(self.span(n.a)),
            Kind::String => Typed::String(self.span(n.a)),
            Kind::Array => Typed::Array,
            Kind::Object => Typed::Object,
        }
    }

    /// Whether this is `null` (or a missing value).
    pub fn is_null(&self) -> bool {
        self.kind() == Kind::Null
    }

    /// The boolean, if this is `true` or `false`.
    pub fn as_bool(&self) -> Option<bool> {
        let n = self.node();
        (n.kind == Kind::Bool).then_some(n.a.len != 0)
    }

    /// The decoded string, if this is a string.
    pub fn as_str(&self) -> Option<&'a str> {
        let n = self.node();
        (n.kind == Kind::String).then(|| self.span(n.a))
    }

    /// The number exactly as written (e.g. `"-1.50e3"`), if this is a number.
    pub fn number_text(&self) -> Option<&'a str> {
        let n = self.node();
        (n.kind == Kind::Number).then(|| self.span(n.a))
    }

    /// The number as an `i64`, if it is written as an integer (no fraction or exponent: `3`,
    /// not `3.0` or `3e0`) and fits.
    pub fn as_i64(&self) -> Option<i64> {
        let t = self.number_text()?;
        if !number::is_integer(t) {
            return None;
        }
        crate::bytes::parse_i64(t)
    }

    /// The number as a `u64`, if it is written as a non-negative integer and fits (`-0` is 0).
    pub fn as_u64(&self) -> Option<u64> {
        let t = self.number_text()?;
        if !number::is_integer(t) {
            return None;
        }
        if t == "-0" {
            return Some(0);
        }
        crate::bytes::parse_u64(t)
    }

    /// The number as the nearest `f64`, if it is finite (`1e400` is `None`, not infinity).
    pub fn as_f64(&self) -> Option<f64> {
        let f: f64 = self.number_text()?.parse().ok()?;
        f.is_finite().then_some(f)
    }

    /// Number of elements of an array or members of an object; 0 for anything else.
    pub fn len(&self) -> usize {
        let n = self.node();
        match n.kind {
            Kind::Array | Kind::Object => n.a.len as usize,
            _ => 0,
        }
    }

    /// Whether [`Value::len`] is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The children of an array or object, in order (values only).
    fn children(&self) -> Children<'a> {
        let n = self.node();
        let (next, end) = match n.kind {
            Kind::Array | Kind::Object => (self.idx + 1, self.end()),
            _ => (0, 0),
        };
        Children { nodes: self.nodes, text: self.text, next, end }
    }

    /// The member `key` of an object: the **last** one if the key is repeated. `None` for a
    /// missing key or a value that is not an object. A linear scan (see the module docs).
    pub fn get(&self, key: &str) -> Option<Value<'a>> {
        if self.kind() != Kind::Object {
            return None;
        }
        let mut found = None;
        for v in self.children() {
            if v.key() == key {
                found = Some(v);
            }
        }
        found
    }

    /// Element `i` of an array; `None` if out of range or not an array.
    pub fn at(&self, i: usize) -> Option<Value<'a>> {
        if self.kind() != Kind::Array {
            return None;
        }
        self.children().nth(i)
    }

    /// Looks up a path: segments separated by `.`, each an object key or `[n]` for array
    /// element `n`, e.g. `"choices.[0].message.content"`. The empty path is the value itself.
    /// A key that contains `.` or is written like `[n]` cannot be named this way; use
    /// [`Value::get`].
    pub fn path(&self, path: &str) -> Option<Value<'a>> {
        let mut cur = *self;
        if path.is_empty() {
            return Some(cur);
        }
        for seg in path.split('.') {
            let index = seg.strip_prefix('[').and_then(|s| s.strip_suffix(']'));
            cur = match index {
                Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                    cur.at(crate::bytes::parse_usize(n)?)?
                }
                _ => cur.get(seg)?,
            };
        }
        Some(cur)
    }

    /// An object's members as `(key, value)`, in document order, duplicates included; empty for
    /// anything else.
    pub fn members(&self) -> impl Iterator<Item = (&'a str, Value<'a>)> {
        let c = if self.kind() == Kind::Object { self.children() } else { Children::EMPTY };
        c.map(|v| (v.key(), v))
    }

    /// An array's elements, in order; empty for anything else.
    pub fn items(&self) -> impl Iterator<Item = Value<'a>> {
        if self.kind() == Kind::Array {
            self.children()
        } else {
            Children::EMPTY
        }
    }

    /// This value's key in its parent object ("" when the parent is not an object).
    pub(crate) fn key(&self) -> &'a str {
        self.span(self.node().key)
    }

    /// The nodes of this value's subtree, in document order, for walking without recursion.
    /// Also returns the index of the subtree's first node (node `end` fields are absolute).
    pub(crate) fn subtree(&self) -> (&'a [Node], &'a str, usize) {
        // `nodes[idx..end]`; a missing value (`idx` past the nodes, `end == idx`) has none.
        let nodes = crate::bytes::take(crate::bytes::skip(self.nodes, self.idx), self.end().saturating_sub(self.idx));
        (nodes, self.text, self.idx)
    }
}

/// Iterates over the children of a container by following each child's `end`.
struct Children<'a> {
    nodes: &'a [Node],
    text: &'a str,
    next: usize,
    end: usize,
}

impl Children<'_> {
    const EMPTY: Children<'static> = Children { nodes: &[], text: "", next: 0, end: 0 };
}

impl<'a> Iterator for Children<'a> {
    type Item = Value<'a>;

    #[inline]
    fn next(&mut self) -> Option<Value<'a>> {
        if self.next >= self.end {
            return None;
        }
        let n = self.nodes.get(self.next)?;
        let v = Value::new(self.nodes, self.text, self.next);
        // `end` is always past the node itself; `max` guards against a malformed arena looping.
        self.next = (n.end as usize).max(self.next + 1);
        Some(v)
    }
}

/// Structural equality: same kinds, same member keys in the same order, same string values,
/// same number *text* (`1.0` differs from `1`). Walks both subtrees side by side, no recursion.
impl PartialEq for Value<'_> {
    fn eq(&self, other: &Value<'_>) -> bool {
        let (a, at, _) = self.subtree();
        let (b, bt, _) = other.subtree();
        if a.len() != b.len() {
            return self.kind() == Kind::Null && other.kind() == Kind::Null;
        }
        let base_a = self.idx;
        let base_b = other.idx;
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            let same = x.kind == y.kind
                && (x.end as usize).wrapping_sub(base_a) == (y.end as usize).wrapping_sub(base_b)
                && match x.kind {
                    Kind::String | Kind::Number => x.a.in_text(at) == y.a.in_text(bt),
                    _ => x.a.len == y.a.len,
                }
                && (i == 0 || x.key.in_text(at) == y.key.in_text(bt));
            if !same {
                return false;
            }
        }
        true
    }
}

/// Writes the value as compact JSON.
impl core::fmt::Display for Value<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut w = super::Writer::compact(f as &mut dyn core::fmt::Write);
        w.value(*self).map_err(|_| core::fmt::Error)
    }
}

impl core::fmt::Debug for Value<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Document;

    fn doc(text: &str) -> Document {
        let mut d = Document::with_capacity(256, 4096);
        d.parse(text.as_bytes()).unwrap();
        d
    }

    #[test]
    fn typed_accessors_check_the_kind() {
        let d = doc(r#"{"s":"x","n":42,"b":false,"z":null,"a":[1],"o":{}}"#);
        let r = d.root();
        let s = r.get("s").unwrap();
        assert_eq!(s.as_str(), Some("x"));
        assert_eq!(s.as_bool(), None);
        assert_eq!(s.as_i64(), None);
        assert_eq!(s.len(), 0);
        assert_eq!(r.get("n").unwrap().as_i64(), Some(42));
        assert_eq!(r.get("n").unwrap().as_str(), None);
        assert_eq!(r.get("b").unwrap().as_bool(), Some(false));
        assert!(r.get("z").unwrap().is_null());
        assert_eq!(r.get("a").unwrap().kind(), Kind::Array);
        assert_eq!(r.get("o").unwrap().kind(), Kind::Object);
        assert!(r.get("o").unwrap().is_empty());
        assert!(r.get("missing").is_none());
        assert!(s.get("x").is_none());
        assert!(r.at(0).is_none());
    }

    #[test]
    fn typed_gives_kind_and_payload() {
        let d = doc(r#"{"s":"x\u00e9","n":-1.5e3,"b":true,"z":null,"a":[1],"o":{}}"#);
        let r = d.root();
        let typed: Vec<Typed> = r.members().map(|(_, v)| v.typed()).collect();
        assert_eq!(
            typed,
            [Typed::String("xé"), Typed::Number("-1.5e3"), Typed::Bool(true), Typed::Null, Typed::Array, Typed::Object]
        );
        assert_eq!(r.at(0).map(|v| v.typed()), None);
    }

    #[test]
    fn numeric_accessors_are_checked() {
        let d = doc(r#"[9223372036854775807, 9223372036854775808, -9223372036854775808, 18446744073709551615,
                       18446744073709551616, -1, -0, 1.5, 1e2, 1e400, 0.1, -0.0]"#);
        let v: Vec<Value> = d.root().items().collect();
        assert_eq!(v[0].as_i64(), Some(i64::MAX));
        assert_eq!(v[1].as_i64(), None);
        assert_eq!(v[1].as_u64(), Some(1 << 63));
        assert_eq!(v[2].as_i64(), Some(i64::MIN));
        assert_eq!(v[2].as_u64(), None);
        assert_eq!(v[3].as_u64(), Some(u64::MAX));
        assert_eq!(v[4].as_u64(), None);
        assert_eq!(v[4].as_f64(), Some(18446744073709551616.0));
        assert_eq!(v[5].as_u64(), None);
        assert_eq!(v[5].as_i64(), Some(-1));
        assert_eq!(v[6].as_u64(), Some(0));
        assert_eq!(v[6].as_i64(), Some(0));
        assert_eq!(v[7].as_i64(), None);
        assert_eq!(v[7].as_f64(), Some(1.5));
        assert_eq!(v[8].as_i64(), None);
        assert_eq!(v[8].as_f64(), Some(100.0));
        assert_eq!(v[9].as_f64(), None);
        assert_eq!(v[10].as_f64(), Some(0.1));
        assert_eq!(v[11].number_text(), Some("-0.0"));
    }

    #[test]
    fn duplicate_keys_get_returns_the_last_members_keeps_all() {
        let d = doc(r#"{"k":1,"other":true,"k":2}"#);
        assert_eq!(d.root().get("k").unwrap().as_i64(), Some(2));
        let keys: Vec<&str> = d.root().members().map(|(k, _)| k).collect();
        assert_eq!(keys, ["k", "other", "k"]);
        assert_eq!(d.root().len(), 3);
    }

    #[test]
    fn paths() {
        let d = doc(r#"{"choices":[{"message":{"content":"hi","x.y":1}}],"[0]":"k","":{"":5}}"#);
        let r = d.root();
        assert_eq!(r.path("choices.[0].message.content").unwrap().as_str(), Some("hi"));
        assert_eq!(r.path("").unwrap().kind(), Kind::Object);
        assert!(r.path("choices.[1]").is_none());
        assert!(r.path("choices.0").is_none());
        assert!(r.path("choices.[x]").is_none());
        assert!(r.path("choices.[99999999999999999999999]").is_none());
        assert!(r.path("choices.[0].message.x.y").is_none());
        assert_eq!(r.path("choices.[0].message").unwrap().get("x.y").unwrap().as_i64(), Some(1));
        assert!(r.path("[0]").is_none(), "[0] on an object is an index, not a key");
        assert_eq!(r.get("[0]").unwrap().as_str(), Some("k"));
        assert_eq!(r.path(".").and_then(|v| v.as_i64()), Some(5), "the empty key, twice");
    }

    #[test]
    fn members_and_items_iterate_in_order() {
        let d = doc(r#"{"a":[1,[2,3],{"x":4},5],"b":"s"}"#);
        let r = d.root();
        let m: Vec<String> = r.members().map(|(k, v)| format!("{}={}", k, v)).collect();
        assert_eq!(m, [r#"a=[1,[2,3],{"x":4},5]"#, r#"b="s""#]);
        let a = r.get("a").unwrap();
        let items: Vec<String> = a.items().map(|v| v.to_string()).collect();
        assert_eq!(items, ["1", "[2,3]", r#"{"x":4}"#, "5"]);
        assert_eq!(a.at(3).unwrap().as_i64(), Some(5));
        assert!(a.at(4).is_none());
        assert_eq!(a.members().count(), 0);
        assert_eq!(r.items().count(), 0);
    }

    #[test]
    fn structural_equality() {
        let a = doc(r#"{"a":[1,{"b":"c"}],"d":null}"#);
        let b = doc(" { \"a\" : [ 1 , { \"b\" : \"c\" } ] , \"d\" : null } ");
        assert_eq!(a.root(), b.root());
        for other in [
            r#"{"a":[1,{"b":"x"}],"d":null}"#,
            r#"{"a":[1.0,{"b":"c"}],"d":null}"#,
            r#"{"a":[1,{"B":"c"}],"d":null}"#,
            r#"{"a":[1,{"b":"c"}]}"#,
            r#"{"d":null,"a":[1,{"b":"c"}]}"#,
        ] {
            assert_ne!(a.root(), doc(other).root(), "{}", other);
        }
        // Sub-values compare without their keys.
        let c = doc(r#""c""#);
        assert_eq!(a.root().path("a.[1].b"), Some(c.root()));
    }
}
