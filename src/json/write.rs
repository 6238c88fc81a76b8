//! [`Writer`]: the streaming JSON serializer, compact or pretty, into any `fmt::Write` (a
//! `String`, a [`FixedBuf`](crate::fixed::FixedBuf), an [`ArrayString`](crate::fixed::ArrayString),
//! a `Formatter`).
//!
//! It is used three ways: by hand, to build request bodies and memory files
//! (`begin_object`, `key`, `string`, ...); to copy a parsed subtree ([`Writer::value`]); and as
//! the [`Handler`] of the streaming parser, which is how `lkjagent json` formats a file of any
//! size.
//!
//! The writer is compiled once for each type of sink it is given, so code off the cycle's path
//! (the commands, the inbox, `Display`) hands it a `&mut dyn fmt::Write`: the binary holds two
//! copies, the request bodies' and log lines' [`FixedBuf`](crate::fixed::FixedBuf) and that one.
//!
//! Output rules: strings are escaped by [`escape`](super::escape) (controls escaped, UTF-8
//! passed through); number text is written exactly as given (and checked against the grammar);
//! `{}`, `[]` and `""` stay as they are. Pretty output indents by two spaces per level and
//! writes `"key": value`; compact output has no whitespace at all.
//!
//! Misuse (a key outside an object, a value where a key is due, a second top-level value, an
//! unbalanced end, a non-finite float, text that is not a number) is `JSON_INVALID` and writes
//! nothing; a sink that refuses a write (a full buffer) is `CAPACITY_EXCEEDED`. Nesting deeper
//! than [`JSON_MAX_DEPTH`] is `CAPACITY_EXCEEDED`, so whatever this writes the parser can read.
//! After a `CAPACITY_EXCEEDED` from the sink the output is cut short: discard it (and start
//! again with a larger buffer); the writer is not meant to continue.

use super::escape::write_json_str_body;
use super::event::{Event, Handler};
use super::number::{self, NumState};
use super::value::{Kind, Value};
use crate::error::Result;
use crate::fixed::ArrayVec;
use crate::limits::JSON_MAX_DEPTH;
use core::fmt;

const STACK_WORDS: usize = JSON_MAX_DEPTH.div_ceil(64);

/// Two spaces per level, written in slices of this.
const SPACES: &str = "                                                                ";

/// What event text is being written.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Text {
    None,
    Key,
    String,
    Number,
}

/// A streaming JSON serializer. See the module documentation.
pub struct Writer<'a, W: fmt::Write + ?Sized> {
    out: &'a mut W,
    pretty: bool,
    depth: usize,
    /// Bit `d` is 1 if the container at depth `d` (0-based) is an object.
    stack: [u64; STACK_WORDS],
    /// No item written yet in the current container.
    first: bool,
    /// A key was written; its value must come next.
    after_key: bool,
    /// The top-level value is complete.
    done: bool,
    /// Event text in progress (see the `Handler` impl), and the number automaton for it.
    text: Text,
    num: NumState,
}

impl<'a, W: fmt::Write + ?Sized> Writer<'a, W> {
    /// A writer producing compact JSON (no whitespace).
    pub fn compact(out: &'a mut W) -> Self {
        Self::new(out, false)
    }

    /// A writer producing pretty JSON (2-space indent, `"key": value`).
    pub fn pretty(out: &'a mut W) -> Self {
        Self::new(out, true)
    }

    fn new(out: &'a mut W, pretty: bool) -> Self {
        Writer {
            out,
            pretty,
            depth: 0,
            stack: [0; STACK_WORDS],
            first: true,
            after_key: false,
            done: false,
            text: Text::None,
            num: NumState::Start,
        }
    }

    /// Whether one complete top-level value has been written.
    pub fn is_complete(&self) -> bool {
        self.done
    }

    /// Checks that one complete top-level value was written (every container closed).
    pub fn finish(&self) -> Result<()> {
        if !self.done {
            bail!(JsonInvalid, "JSON writer: the document is incomplete ({} containers still open)", self.depth);
        }
        Ok(())
    }

    #[inline]
    fn put(&mut self, s: &str) -> Result<()> {
        self.out.write_str(s).map_err(|_| {
            err!(CapacityExceeded, "JSON writer: the output buffer refused {} more bytes (it is full)", s.len())
        })
    }

    #[inline]
    fn in_object(&self) -> bool {
        let d = self.depth.wrapping_sub(1);
        self.stack.get(d / 64).is_some_and(|w| w >> (d % 64) & 1 == 1)
    }

    fn newline_indent(&mut self, depth: usize) -> Result<()> {
        self.put("\n")?;
        let mut n = depth * 2;
        while n > 0 {
            let k = n.min(SPACES.len());
            // All ASCII: the prefix is exactly `k` spaces.
            self.put(crate::bytes::str_prefix(SPACES, k))?;
            n -= k;
        }
        Ok(())
    }

    #[inline]
    fn idle(&self, what: &str) -> Result<()> {
        if self.text != Text::None {
            return Err(busy(what));
        }
        Ok(())
    }

    /// Checks that a value may come now and writes what goes before it.
    fn before_value(&mut self) -> Result<()> {
        self.idle("a value")?;
        if self.done {
            bail!(JsonInvalid, "JSON writer: a second top-level value (a JSON text holds exactly one)");
        }
        if self.depth == 0 {
            return Ok(());
        }
        if self.in_object() {
            if !self.after_key {
                bail!(JsonInvalid, "JSON writer: a value inside an object needs a key first");
            }
            self.after_key = false;
            return Ok(());
        }
        if !self.first {
            self.put(",")?;
        }
        if self.pretty {
            self.newline_indent(self.depth)?;
        }
        self.first = false;
        Ok(())
    }

    /// Marks a value complete.
    #[inline]
    fn after_value(&mut self) {
        if self.depth == 0 {
            self.done = true;
        }
    }

    fn begin(&mut self, object: bool) -> Result<()> {
        if self.depth >= JSON_MAX_DEPTH {
            bail!(CapacityExceeded, "JSON writer: nesting deeper than JSON_MAX_DEPTH ({} levels)", JSON_MAX_DEPTH);
        }
        self.before_value()?;
        self.put(if object { "{" } else { "[" })?;
        let d = self.depth;
        if let Some(w) = self.stack.get_mut(d / 64) {
            let bit = 1u64 << (d % 64);
            if object {
                *w |= bit;
            } else {
                *w &= !bit;
            }
        }
        self.depth += 1;
        self.first = true;
        Ok(())
    }

    fn end(&mut self, object: bool) -> Result<()> {
        let name = if object { "end_object" } else { "end_array" };
        self.idle(name)?;
        if self.depth == 0 || self.in_object() != object {
            bail!(JsonInvalid, "JSON writer: {} without a matching begin", name);
        }
        if self.after_key {
            bail!(JsonInvalid, "JSON writer: {} right after a key (the key has no value)", name);
        }
        if self.pretty && !self.first {
            self.newline_indent(self.depth - 1)?;
        }
        self.put(if object { "}" } else { "]" })?;
        self.depth -= 1;
        self.first = false;
        self.after_value();
        Ok(())
    }

    /// `{`
    pub fn begin_object(&mut self) -> Result<()> {
        self.begin(true)
    }

    /// `}`
    pub fn end_object(&mut self) -> Result<()> {
        self.end(true)
    }

    /// `[`
    pub fn begin_array(&mut self) -> Result<()> {
        self.begin(false)
    }

    /// `]`
    pub fn end_array(&mut self) -> Result<()> {
        self.end(false)
    }

    /// Checks that a key may come now and writes what goes before it, and the opening quote.
    fn key_open(&mut self) -> Result<()> {
        self.idle("a key")?;
        if self.depth == 0 || !self.in_object() {
            bail!(JsonInvalid, "JSON writer: a key outside an object");
        }
        if self.after_key {
            bail!(JsonInvalid, "JSON writer: two keys in a row (the first has no value)");
        }
        if !self.first {
            self.put(",")?;
        }
        if self.pretty {
            self.newline_indent(self.depth)?;
        }
        self.first = false;
        self.put("\"")
    }

    fn key_close(&mut self) -> Result<()> {
        self.put(if self.pretty { "\": " } else { "\":" })?;
        self.after_key = true;
        Ok(())
    }

    /// An object member's key; its value must follow.
    pub fn key(&mut self, key: &str) -> Result<()> {
        self.key_open()?;
        self.body(key)?;
        self.key_close()
    }

    fn body(&mut self, s: &str) -> Result<()> {
        write_json_str_body(self.out, s).map_err(|_| {
            err!(CapacityExceeded, "JSON writer: the output buffer refused a string of {} bytes (it is full)", s.len())
        })
    }

    /// A value given as JSON text, written as it is (compact output stays compact only if the
    /// text is). The caller vouches that `json` is exactly one complete JSON value: it is used
    /// for documents this crate generated itself (the reply grammar's JSON Schema), never for
    /// outside input. An empty text is `JSON_INVALID`.
    pub fn raw_value(&mut self, json: &str) -> Result<()> {
        if json.trim().is_empty() {
            bail!(JsonInvalid, "JSON writer: an empty raw value");
        }
        self.before_value()?;
        self.put(json)?;
        self.after_value();
        Ok(())
    }

    /// A string value written from `parts` in order, as one text (with no copy of them).
    pub fn string_of(&mut self, parts: &[&str]) -> Result<()> {
        self.before_value()?;
        self.put("\"")?;
        for p in parts {
            self.body(p)?;
        }
        self.put("\"")?;
        self.after_value();
        Ok(())
    }

    /// A string value.
    pub fn string(&mut self, s: &str) -> Result<()> {
        self.before_value()?;
        self.put("\"")?;
        self.body(s)?;
        self.put("\"")?;
        self.after_value();
        Ok(())
    }

    /// A number given as text, written exactly as given; `JSON_INVALID` (writing nothing) if it
    /// is not a JSON number (`1.`, `+1`, `0x10`, `NaN`, ...).
    pub fn number_text(&mut self, text: &str) -> Result<()> {
        if let Err((at, expected)) = number::check(text) {
            bail!(JsonInvalid, "JSON writer: {:?} is not a JSON number: expected {} at byte {}", text, expected, at);
        }
        self.number_unchecked(text)
    }

    fn number_unchecked(&mut self, text: &str) -> Result<()> {
        self.before_value()?;
        self.put(text)?;
        self.after_value();
        Ok(())
    }

    /// An integer.
    pub fn i64(&mut self, n: i64) -> Result<()> {
        self.integer(n)
    }

    /// An unsigned integer.
    pub fn u64(&mut self, n: u64) -> Result<()> {
        self.integer(n)
    }

    fn integer(&mut self, n: impl fmt::Display) -> Result<()> {
        self.before_value()?;
        self.out
            .write_fmt(format_args!("{}", n))
            .map_err(|_| err!(CapacityExceeded, "JSON writer: the output buffer refused a number (it is full)"))?;
        self.after_value();
        Ok(())
    }

    /// A float, in the shortest text that reads back as the same `f64` (`0.7`, `1e300`,
    /// `5e-324`); `JSON_INVALID` for NaN and infinities, which JSON cannot represent.
    pub fn f64(&mut self, x: f64) -> Result<()> {
        if !x.is_finite() {
            bail!(JsonInvalid, "JSON writer: {} is not a finite number; JSON has no NaN or infinity", x);
        }
        self.before_value()?;
        // Rust's `{}` and `{:e}` both print the shortest round-trip digits; plain notation is
        // used where it is short, exponent notation for very large or very small magnitudes.
        let a = x.abs();
        let res = if a == 0.0 || (1e-5..1e16).contains(&a) {
            self.out.write_fmt(format_args!("{}", x))
        } else {
            self.out.write_fmt(format_args!("{:e}", x))
        };
        res.map_err(|_| err!(CapacityExceeded, "JSON writer: the output buffer refused a number (it is full)"))?;
        self.after_value();
        Ok(())
    }

    /// `true` or `false`.
    pub fn bool(&mut self, b: bool) -> Result<()> {
        self.before_value()?;
        self.put(if b { "true" } else { "false" })?;
        self.after_value();
        Ok(())
    }

    /// `null`
    pub fn null(&mut self) -> Result<()> {
        self.before_value()?;
        self.put("null")?;
        self.after_value();
        Ok(())
    }

    /// Copies a parsed value and everything under it (without its own key: write that with
    /// [`Writer::key`] first when inside an object). Walks the arena in order, no recursion.
    pub fn value(&mut self, v: Value<'_>) -> Result<()> {
        let (nodes, text, base) = v.subtree();
        if nodes.is_empty() {
            return self.null();
        }
        // End indices of the containers opened by this walk.
        let mut ends: ArrayVec<u32, JSON_MAX_DEPTH> = ArrayVec::new();
        for (off, n) in nodes.iter().enumerate() {
            let i = (base + off) as u32;
            while ends.as_slice().last() == Some(&i) {
                ends.pop();
                self.end(self.in_object())?;
            }
            if off > 0 && self.in_object() {
                self.key(n.key.in_text(text))?;
            }
            match n.kind {
                Kind::Object | Kind::Array => {
                    self.begin(n.kind == Kind::Object)?;
                    ends.push(n.end)?;
                }
                Kind::String => self.string(n.a.in_text(text))?,
                // Number text in a document was checked by the parser.
                Kind::Number => self.number_unchecked(n.a.in_text(text))?,
                Kind::Bool => self.bool(n.a.len != 0)?,
                Kind::Null => self.null()?,
            }
        }
        while ends.pop().is_some() {
            self.end(self.in_object())?;
        }
        Ok(())
    }
}

/// The writer as the parser's event handler: `Parser` + `Writer` re-formats a document of any
/// size in bounded memory. Events are checked like calls (a misplaced event is `JSON_INVALID`),
/// and number pieces are run through the number automaton, so even hand-made events cannot
/// produce invalid JSON.
impl<W: fmt::Write + ?Sized> Handler for Writer<'_, W> {
    fn event(&mut self, event: Event<'_>) -> Result<()> {
        match event {
            Event::BeginObject => self.begin_object(),
            Event::EndObject => self.end_object(),
            Event::BeginArray => self.begin_array(),
            Event::EndArray => self.end_array(),
            Event::Null => self.null(),
            Event::Bool(b) => self.bool(b),
            Event::BeginKey => {
                self.key_open()?;
                self.text = Text::Key;
                Ok(())
            }
            Event::BeginString => {
                self.before_value()?;
                self.put("\"")?;
                self.text = Text::String;
                Ok(())
            }
            Event::BeginNumber => {
                self.before_value()?;
                self.text = Text::Number;
                self.num = NumState::Start;
                Ok(())
            }
            Event::Text(t) => match self.text {
                Text::Key | Text::String => self.body(t),
                Text::Number => {
                    for &b in t.as_bytes() {
                        match self.num.step(b) {
                            Some(s) => self.num = s,
                            None => bail!(JsonInvalid, "JSON writer: {:?} cannot continue a number", t),
                        }
                    }
                    self.put(t)
                }
                Text::None => bail!(JsonInvalid, "JSON writer: text outside a key, string or number"),
            },
            Event::EndText => {
                let was = self.text;
                self.text = Text::None;
                match was {
                    Text::Key => self.key_close(),
                    Text::String => {
                        self.put("\"")?;
                        self.after_value();
                        Ok(())
                    }
                    Text::Number if self.num.is_final() => {
                        self.after_value();
                        Ok(())
                    }
                    Text::Number => {
                        bail!(JsonInvalid, "JSON writer: incomplete number: expected {}", self.num.expected())
                    }
                    Text::None => bail!(JsonInvalid, "JSON writer: end of text that was never begun"),
                }
            }
        }
    }
}

/// The error of a value begun while a key, string or number is still being written.
#[cold]
#[inline(never)]
fn busy(what: &str) -> crate::error::Error {
    crate::err!(JsonInvalid, "JSON writer: {} while a key, string or number is being written", what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;
    use crate::fixed::ArrayString;
    use crate::json::{Document, Parser};

    #[test]
    fn builds_compact_and_pretty() {
        let build = |w: &mut Writer<'_, String>| -> Result<()> {
            w.begin_object()?;
            w.key("model")?;
            w.string("qwen")?;
            w.key("t")?;
            w.f64(0.7)?;
            w.key("n")?;
            w.i64(-3)?;
            w.key("u")?;
            w.u64(u64::MAX)?;
            w.key("raw")?;
            w.number_text("1e5")?;
            w.key("list")?;
            w.begin_array()?;
            w.bool(true)?;
            w.null()?;
            w.begin_array()?;
            w.end_array()?;
            w.begin_object()?;
            w.end_object()?;
            w.string("")?;
            w.end_array()?;
            w.key("e\"sc\n")?;
            w.string("→\u{1}")?;
            w.end_object()?;
            w.finish()
        };
        let mut s = String::new();
        build(&mut Writer::compact(&mut s)).unwrap();
        assert_eq!(
            s,
            r#"{"model":"qwen","t":0.7,"n":-3,"u":18446744073709551615,"raw":1e5,"list":[true,null,[],{},""],"e\"sc\n":"→\u0001"}"#
        );
        let mut p = String::new();
        build(&mut Writer::pretty(&mut p)).unwrap();
        let want = "{\n  \"model\": \"qwen\",\n  \"t\": 0.7,\n  \"n\": -3,\n  \"u\": 18446744073709551615,\n  \"raw\": 1e5,\n  \"list\": [\n    true,\n    null,\n    [],\n    {},\n    \"\"\n  ],\n  \"e\\\"sc\\n\": \"→\\u0001\"\n}";
        assert_eq!(p, want);
    }

    #[test]
    fn a_string_of_parts_is_the_string_of_their_text() {
        let mut s = String::new();
        let mut w = Writer::compact(&mut s);
        w.begin_array().unwrap();
        w.string_of(&["a\"", "", "\n\u{1}é"]).unwrap();
        w.string_of(&[]).unwrap();
        w.string("a\"\n\u{1}é").unwrap();
        w.end_array().unwrap();
        w.finish().unwrap();
        assert_eq!(s, r#"["a\"\n\u0001é","","a\"\n\u0001é"]"#);
    }

    #[test]
    fn floats_are_shortest_round_trip() {
        for (x, want) in [
            (0.7, "0.7"),
            (1.0, "1"),
            (-0.0, "-0"),
            (1e300, "1e300"),
            (5e-324, "5e-324"),
            (123456.789, "123456.789"),
            (1e16, "1e16"),
            (1e-7, "1e-7"),
            (f64::MAX, "1.7976931348623157e308"),
        ] {
            let mut s = String::new();
            Writer::compact(&mut s).f64(x).unwrap();
            assert_eq!(s, want);
            assert_eq!(s.parse::<f64>().unwrap().to_bits(), x.to_bits());
            assert_eq!(number::check(&s), Ok(()));
        }
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let mut s = String::new();
            assert_eq!(Writer::compact(&mut s).f64(bad).unwrap_err().code(), Code::JsonInvalid);
            assert_eq!(s, "");
        }
    }

    #[test]
    fn misuse_is_json_invalid_and_writes_nothing() {
        type Step = fn(&mut Writer<'_, String>) -> Result<()>;
        let ok: Step = |_| Ok(());
        // (name, setup, the misuse)
        let cases: [(&str, Step, Step); 11] = [
            ("key at top", ok, |w| w.key("k")),
            ("value without key", |w| w.begin_object(), |w| w.null()),
            ("string without key", |w| w.begin_object(), |w| w.string("s")),
            ("key in array", |w| w.begin_array(), |w| w.key("k")),
            ("two keys", |w| w.begin_object().and_then(|()| w.key("a")), |w| w.key("b")),
            ("end after key", |w| w.begin_object().and_then(|()| w.key("a")), |w| w.end_object()),
            ("unbalanced end", ok, |w| w.end_array()),
            ("wrong end", |w| w.begin_array(), |w| w.end_object()),
            ("second value", |w| w.null(), |w| w.begin_array()),
            ("bad number", |w| w.begin_array(), |w| w.number_text("01")),
            ("stray text event", |w| w.begin_array(), |w| w.event(Event::Text("x"))),
        ];
        for (name, setup, misuse) in cases {
            let mut s = String::new();
            let mut w = Writer::pretty(&mut s);
            setup(&mut w).unwrap();
            let before = w.out.len();
            let e = misuse(&mut w).unwrap_err();
            assert_eq!(e.code(), Code::JsonInvalid, "{}: {}", name, e);
            assert_eq!(w.out.len(), before, "{}: wrote {:?}", name, w.out);
        }
        let mut s = String::new();
        let mut w = Writer::compact(&mut s);
        w.begin_array().unwrap();
        assert!(w.finish().is_err());
        assert!(!w.is_complete());
    }

    #[test]
    fn full_sink_is_capacity_exceeded() {
        let mut small: ArrayString<8> = ArrayString::new();
        let mut w = Writer::compact(&mut small);
        w.begin_array().unwrap();
        w.string("abc").unwrap();
        let e = w.string("abcdef").unwrap_err();
        assert_eq!(e.code(), Code::CapacityExceeded);
    }

    #[test]
    fn too_deep_is_capacity_exceeded() {
        let mut s = String::new();
        let mut w = Writer::compact(&mut s);
        for _ in 0..JSON_MAX_DEPTH {
            w.begin_array().unwrap();
        }
        assert_eq!(w.begin_array().unwrap_err().code(), Code::CapacityExceeded);
    }

    #[test]
    fn copies_parsed_subtrees() {
        let mut d = Document::with_capacity(64, 256);
        d.parse(br#"{"a":{"x":[1,{},[],"",{"y":null}],"z":-0.0e1},"b":true}"#).unwrap();
        let mut s = String::new();
        let mut w = Writer::compact(&mut s);
        w.begin_object().unwrap();
        w.key("copy").unwrap();
        w.value(d.root().get("a").unwrap()).unwrap();
        w.key("whole").unwrap();
        w.value(d.root()).unwrap();
        w.key("missing").unwrap();
        w.value(d.root().path("nope").unwrap_or(d.root().get("b").unwrap())).unwrap();
        w.end_object().unwrap();
        w.finish().unwrap();
        assert_eq!(
            s,
            r#"{"copy":{"x":[1,{},[],"",{"y":null}],"z":-0.0e1},"whole":{"a":{"x":[1,{},[],"",{"y":null}],"z":-0.0e1},"b":true},"missing":true}"#
        );
        let mut p = String::new();
        Writer::pretty(&mut p).value(d.root().path("a.x").unwrap()).unwrap();
        assert_eq!(p, "[\n  1,\n  {},\n  [],\n  \"\",\n  {\n    \"y\": null\n  }\n]");
    }

    #[test]
    fn formats_from_parser_events() {
        let input = br#" { "a" : [ 1 , 2.5e-3 , "x\u00e9\n" ] , "b" : { } , "c" : [ ] } "#;
        for pretty in [false, true] {
            let mut s = String::new();
            let mut w = if pretty { Writer::pretty(&mut s) } else { Writer::compact(&mut s) };
            let mut p = Parser::new();
            for chunk in input.chunks(3) {
                p.feed(chunk, &mut w).unwrap();
            }
            p.finish(&mut w).unwrap();
            w.finish().unwrap();
            let want = if pretty {
                "{\n  \"a\": [\n    1,\n    2.5e-3,\n    \"xé\\n\"\n  ],\n  \"b\": {},\n  \"c\": []\n}"
            } else {
                r#"{"a":[1,2.5e-3,"xé\n"],"b":{},"c":[]}"#
            };
            assert_eq!(s, want);
        }
    }
}
