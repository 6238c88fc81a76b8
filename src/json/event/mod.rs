//! The streaming (event) JSON parser: a resumable state machine beneath the document arena,
//! as csv-core is beneath csv.
//!
//! The caller feeds input in slices of any size ([`Parser::feed`]) and ends with
//! [`Parser::finish`]; the parser reports what it reads as [`Event`]s to a [`Handler`]. A token
//! cut by a slice boundary (a string, an escape, a UTF-8 sequence, a number, a literal) is
//! carried over in a few bytes of parser state, so a document of any size is read in bounded
//! memory: `lkjagent json` formats a multi-megabyte file through a 64 KiB buffer, and
//! [`Document::parse`](super::Document::parse) feeds the whole text at once.
//!
//! Design choices:
//! - No recursion: nesting is a bit stack (one bit per level: object or array) of
//!   [`JSON_MAX_DEPTH`] levels. Deeper input is `CAPACITY_EXCEEDED` at the offending byte, so
//!   100,000 `[` is an error, never a stack overflow.
//! - No allocation: string text is reported in pieces borrowed from the input (runs of plain
//!   bytes) or from a 4-byte buffer (one decoded escape), never copied here.
//! - Strict RFC 8259: whitespace is space, tab, CR, LF only; no byte order mark, comments,
//!   trailing commas, single quotes, leading zeros, `NaN`, or control characters in strings;
//!   `\u` surrogate pairs are joined, lone surrogates and invalid UTF-8 are rejected.
//! - Every error says where (byte offset from the start of the input, and line:column) and what
//!   was expected there.
//!
//! Grammar (RFC 8259 §2, §4, §5, §7):
//!
//! ```text
//! JSON-text = ws value ws
//! value  = false / null / true / object / array / number / string
//! object = begin-object [ member *( value-separator member ) ] end-object
//! member = string name-separator value
//! array  = begin-array [ value *( value-separator value ) ] end-array
//! ws     = *( %x20 / %x09 / %x0A / %x0D )
//! string = quotation-mark *char quotation-mark
//! char   = unescaped / escape ( %x22 / %x5C / %x2F / %x62 / %x66 / %x6E / %x72 / %x74 / %x75 4HEXDIG )
//! unescaped = %x20-21 / %x23-5B / %x5D-10FFFF
//! ```
//!
//! Parts: this file is the structure (values, nesting, separators, errors); `scalars` reads
//! strings, numbers and the literals.

use super::number::NumState;
use crate::error::Result;
use crate::limits::JSON_MAX_DEPTH;

/// What the parser reports, in document order.
///
/// A key, string or number arrives as `BeginKey`/`BeginString`/`BeginNumber`, then zero or
/// more `Text` pieces (decoded, valid UTF-8; concatenated they are the whole value), then
/// `EndText`. Pieces are cut wherever the input slice or an escape cuts them, so a handler must
/// not assume one piece per value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// `{`
    BeginObject,
    /// `}`
    EndObject,
    /// `[`
    BeginArray,
    /// `]`
    EndArray,
    /// An object member's key begins.
    BeginKey,
    /// A string value begins.
    BeginString,
    /// A number begins (its text follows, exactly as written).
    BeginNumber,
    /// A piece of the current key, string or number.
    Text(&'a str),
    /// The current key, string or number is complete.
    EndText,
    /// `null`
    Null,
    /// `true` or `false`
    Bool(bool),
}

/// Receives the parser's events. An error returned here (a full arena, a failed write) stops
/// the parse and is returned unchanged by [`Parser::feed`] / [`Parser::finish`].
pub trait Handler {
    /// Handles one event.
    fn event(&mut self, event: Event<'_>) -> Result<()>;
}

/// A handler that ignores every event: [`Parser`] with it is a validator.
pub struct Validate;

impl Handler for Validate {
    #[inline]
    fn event(&mut self, _: Event<'_>) -> Result<()> {
        Ok(())
    }
}

/// Words of the nesting bit stack.
const STACK_WORDS: usize = JSON_MAX_DEPTH.div_ceil(64);

/// Where the parser stands between bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// A value must come (start of input, after `:`, after `,` in an array).
    Value,
    /// After `[`: a value or `]`.
    ValueOrEnd,
    /// After `{`: a key or `}`.
    KeyOrEnd,
    /// After `,` in an object: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// After a value inside a container: `,` or the closing bracket.
    Comma,
    /// After the top-level value: only whitespace.
    Done,
    /// Inside a string or key, after the opening quote.
    Str,
    /// Inside a string, after `\`.
    Escape,
    /// Inside `\uXXXX`, after `digits` hex digits (in `self.unit`).
    Unicode,
    /// Inside a multi-byte UTF-8 sequence cut by the end of an input slice.
    Utf8,
    /// Inside a number.
    Number,
    /// Inside `true`, `false` or `null`.
    Literal,
    /// A previous error ended the parse.
    Failed,
}

/// The resumable parser. See the module documentation.
pub struct Parser {
    state: State,
    depth: usize,
    /// Bit `d` is 1 if the container at depth `d` (0-based) is an object.
    stack: [u64; STACK_WORDS],
    /// Bytes consumed before the current slice.
    base: usize,
    /// Line number (1-based) and offset of the line's first byte, for error positions.
    line: usize,
    line_start: usize,
    /// The string being read is a key.
    key: bool,
    /// The number automaton's state.
    num: NumState,
    /// The literal being matched and how many of its bytes matched so far.
    lit: &'static [u8],
    lit_pos: usize,
    /// `\u` digits read so far and their value.
    digits: u8,
    unit: u32,
    /// A high surrogate waiting for its low half (0 if none).
    high: u32,
    /// A UTF-8 sequence cut by a slice boundary: its bytes so far, how many, how many needed,
    /// and the offset where it started.
    utf8: [u8; 4],
    utf8_len: usize,
    utf8_need: usize,
    utf8_at: usize,
}

impl Default for Parser {
    fn default() -> Self {
        Self::new()
    }
}

/// Byte classes for strings: 0 = plain (copied as is), 1 = needs attention (`"`, `\`, a
/// control character). These are exactly the bytes a writer must escape, so the table is the
/// escaper's; non-ASCII bytes (class 0) have their UTF-8 checked by the caller of the scan.
use super::escape::NEEDS_ESCAPE as STRING_CLASS;

mod scalars;

impl Parser {
    /// A parser at the start of a document.
    pub const fn new() -> Parser {
        Parser {
            state: State::Value,
            depth: 0,
            stack: [0; STACK_WORDS],
            base: 0,
            line: 1,
            line_start: 0,
            key: false,
            num: NumState::Start,
            lit: b"",
            lit_pos: 0,
            digits: 0,
            unit: 0,
            high: 0,
            utf8: [0; 4],
            utf8_len: 0,
            utf8_need: 0,
            utf8_at: 0,
        }
    }

    /// Resets to the start of a new document.
    pub fn reset(&mut self) {
        *self = Parser::new();
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> usize {
        self.base
    }

    /// Current nesting depth.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Reads `input`, the next slice of the document, reporting events to `h`. All of `input`
    /// is consumed; a token cut at its end continues with the next call.
    ///
    /// The slice is first checked as UTF-8 in one pass (a JSON text is UTF-8 as a whole); its
    /// valid part is then read as text, so strings are cut from it without a check each. Only
    /// what follows the first non-UTF-8 byte (an error, or a sequence cut by the slice's end)
    /// is read byte by byte.
    pub fn feed<H: Handler + ?Sized>(&mut self, input: &[u8], h: &mut H) -> Result<()> {
        match core::str::from_utf8(input) {
            Ok(text) => self.feed_checked(input, Some(text), h),
            Err(e) => {
                // (`valid_up_to() <= len`; the fallback reads everything the checking way.)
                let (valid, rest) = input.split_at_checked(e.valid_up_to()).unwrap_or((&[], input));
                let text = core::str::from_utf8(valid).ok();
                self.feed_checked(valid, text, h)?;
                self.feed_checked(rest, None, h)
            }
        }
    }

    /// [`Parser::feed`] for input already known to be UTF-8: pieces of strings and numbers are
    /// cut from `input` directly instead of being checked again (a JSON text is UTF-8 as a
    /// whole, so one check of the whole input replaces one per string).
    pub fn feed_str<H: Handler + ?Sized>(&mut self, input: &str, h: &mut H) -> Result<()> {
        self.feed_checked(input.as_bytes(), Some(input), h)
    }

    fn feed_checked<H: Handler + ?Sized>(&mut self, input: &[u8], txt: Option<&str>, h: &mut H) -> Result<()> {
        let res = self.run(input, txt, h);
        match res {
            Ok(()) => {
                self.base += input.len();
                Ok(())
            }
            Err(e) => {
                self.state = State::Failed;
                Err(e)
            }
        }
    }

    /// Ends the document: a number at the very end is completed, and anything left open is an
    /// error (`unexpected end of input`, with what was expected).
    pub fn finish<H: Handler + ?Sized>(&mut self, h: &mut H) -> Result<()> {
        let res = self.run_end(h);
        if res.is_err() {
            self.state = State::Failed;
        }
        res
    }

    fn run_end<H: Handler + ?Sized>(&mut self, h: &mut H) -> Result<()> {
        match self.state {
            State::Done => Ok(()),
            State::Number if self.num.is_final() => {
                self.emit(h, 0, Event::EndText)?;
                self.value_done();
                // A number completes the document only at depth 0; inside a container the
                // closing bracket is still missing.
                if self.state == State::Done {
                    Ok(())
                } else {
                    Err(self.error(&[], 0, self.expected()))
                }
            }
            _ => Err(self.error(&[], 0, self.expected())),
        }
    }

    /// What the parser needs next, for error messages.
    fn expected(&self) -> &'static str {
        match self.state {
            State::Value if self.depth == 0 => "a JSON value",
            State::Value if self.in_object() => "a value after ':'",
            State::Value => "a value after ','",
            State::ValueOrEnd => "a value or ']'",
            State::KeyOrEnd => "a key (a string in double quotes) or '}'",
            State::Key => "a key (a string in double quotes) after ','",
            State::Colon => "':' after the key",
            State::Comma if self.in_object() => "',' or '}' after an object member",
            State::Comma => "',' or ']' after an array element",
            State::Done => "the end of input after the top-level value",
            State::Str => "the closing '\"' of a string",
            State::Escape => "an escape character (one of \" \\ / b f n r t u)",
            State::Unicode => "4 hex digits after \\u",
            State::Utf8 => "the rest of a UTF-8 sequence",
            State::Number => self.num.expected(),
            State::Literal => match self.lit.first() {
                Some(b't') => "'true'",
                Some(b'f') => "'false'",
                _ => "'null'",
            },
            State::Failed => "nothing (the parse already failed)",
        }
    }

    /// The position of `i` in the current slice. `i` may be "negative" (wrapped), for a token
    /// that began in an earlier slice.
    fn pos(&self, i: usize) -> Pos {
        let at = self.base.wrapping_add(i);
        Pos { at, line: self.line, col: at.saturating_sub(self.line_start) + 1 }
    }

    /// A `JSON_INVALID` error at `input[i]` (or the end of input when `i` is past it).
    fn error(&self, input: &[u8], i: usize, expected: &str) -> crate::error::Error {
        match input.get(i) {
            Some(&b) => err!(JsonInvalid, "invalid JSON at {}: expected {}, found {}", self.pos(i), expected, Found(b)),
            None => err!(JsonInvalid, "invalid JSON at {}: expected {}, found the end of input", self.pos(i), expected),
        }
    }

    #[inline]
    fn in_object(&self) -> bool {
        let d = self.depth.wrapping_sub(1);
        self.stack.get(d / 64).is_some_and(|w| w >> (d % 64) & 1 == 1)
    }

    #[inline]
    fn push(&mut self, object: bool, i: usize) -> Result<()> {
        let d = self.depth;
        match self.stack.get_mut(d / 64) {
            Some(w) if d < JSON_MAX_DEPTH => {
                let bit = 1u64 << (d % 64);
                if object {
                    *w |= bit;
                } else {
                    *w &= !bit;
                }
                self.depth += 1;
                Ok(())
            }
            _ => Err(err!(
                CapacityExceeded,
                "JSON nested deeper than JSON_MAX_DEPTH ({} levels) at {}",
                JSON_MAX_DEPTH,
                self.pos(i)
            )),
        }
    }

    /// Leaves a container. Only called in states that exist inside one (depth >= 1); the
    /// saturating form keeps even a logic slip from wrapping.
    #[inline]
    fn pop(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Reports an event. An error from the handler (a full arena, a failed write) gets the
    /// position added, so it says where in the input it happened like a syntax error does.
    #[inline(always)]
    fn emit<H: Handler + ?Sized>(&self, h: &mut H, i: usize, event: Event<'_>) -> Result<()> {
        h.event(event).map_err(|e| self.handler_error(e, i))
    }

    #[cold]
    fn handler_error(&self, e: crate::error::Error, i: usize) -> crate::error::Error {
        e.context(format_args!("at {}", self.pos(i)))
    }

    /// After a complete value: `,`/close inside a container, end of input at the top.
    #[inline]
    fn value_done(&mut self) {
        self.state = if self.depth == 0 { State::Done } else { State::Comma };
    }

    fn run<H: Handler + ?Sized>(&mut self, input: &[u8], txt: Option<&str>, h: &mut H) -> Result<()> {
        let mut i = 0;
        while i < input.len() {
            i = match self.state {
                State::Str => self.string(input, txt, i, h)?,
                State::Number => self.number(input, txt, i, h)?,
                State::Escape => self.escape(input, i, h)?,
                State::Unicode => self.unicode(input, i, h)?,
                State::Utf8 => self.utf8_rest(input, i, h)?,
                State::Literal => self.literal(input, i, h)?,
                State::Failed => {
                    return Err(err!(JsonInvalid, "the JSON parse already failed; reset the parser"));
                }
                _ => self.structural(input, txt, i, h)?,
            };
        }
        Ok(())
    }

    /// Skips whitespace, then reads one structural byte or the first byte of a value.
    #[inline]
    fn structural<H: Handler + ?Sized>(
        &mut self,
        input: &[u8],
        txt: Option<&str>,
        mut i: usize,
        h: &mut H,
    ) -> Result<usize> {
        // ws = *( %x20 / %x09 / %x0A / %x0D ); newlines can occur only here, so lines are
        // counted here and nowhere else.
        let b = loop {
            match input.get(i) {
                Some(b' ' | b'\t' | b'\r') => i += 1,
                Some(b'\n') => {
                    i += 1;
                    self.line += 1;
                    self.line_start = self.base + i;
                }
                Some(&b) => break b,
                None => return Ok(i),
            }
        };
        match (self.state, b) {
            (State::Value | State::ValueOrEnd, _) => match b {
                b'{' => {
                    self.push(true, i)?;
                    self.emit(h, i, Event::BeginObject)?;
                    self.state = State::KeyOrEnd;
                }
                b'[' => {
                    self.push(false, i)?;
                    self.emit(h, i, Event::BeginArray)?;
                    self.state = State::ValueOrEnd;
                }
                b'"' => {
                    self.key = false;
                    self.emit(h, i, Event::BeginString)?;
                    self.state = State::Str;
                    return self.string(input, txt, i + 1, h);
                }
                b'-' | b'0'..=b'9' => {
                    self.emit(h, i, Event::BeginNumber)?;
                    self.num = NumState::Start;
                    self.state = State::Number;
                    return self.number(input, txt, i, h);
                }
                b't' | b'f' | b'n' => {
                    self.lit = match b {
                        b't' => b"true",
                        b'f' => b"false",
                        _ => b"null",
                    };
                    self.lit_pos = 0;
                    self.state = State::Literal;
                    return Ok(i);
                }
                b']' if self.state == State::ValueOrEnd => {
                    self.pop();
                    self.emit(h, i, Event::EndArray)?;
                    self.value_done();
                }
                // (The next bytes may be in the next slice, so this is worded as a likely cause.)
                0xEF if self.base + i == 0 => {
                    return Err(err!(
                        JsonInvalid,
                        "invalid JSON at {}: expected a JSON value, found byte 0xEF (if it starts a byte \
                         order mark, RFC 8259 does not allow one: save the file as UTF-8 without BOM)",
                        self.pos(i)
                    ));
                }
                _ => return Err(self.error(input, i, self.expected())),
            },
            (State::KeyOrEnd | State::Key, b'"') => {
                self.key = true;
                self.emit(h, i, Event::BeginKey)?;
                self.state = State::Str;
                return self.string(input, txt, i + 1, h);
            }
            (State::KeyOrEnd, b'}') => {
                self.pop();
                self.emit(h, i, Event::EndObject)?;
                self.value_done();
            }
            (State::Colon, b':') => self.state = State::Value,
            (State::Comma, b',') => self.state = if self.in_object() { State::Key } else { State::Value },
            (State::Comma, b']') if !self.in_object() => {
                self.pop();
                self.emit(h, i, Event::EndArray)?;
                self.value_done();
            }
            (State::Comma, b'}') if self.in_object() => {
                self.pop();
                self.emit(h, i, Event::EndObject)?;
                self.value_done();
            }
            _ => return Err(self.error(input, i, self.expected())),
        }
        Ok(i + 1)
    }
}

/// A position for error messages: `byte N (line L, column C)`; columns count bytes.
struct Pos {
    at: usize,
    line: usize,
    col: usize,
}

impl core::fmt::Display for Pos {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "byte {} (line {}, column {})", self.at, self.line, self.col)
    }
}

/// Shows a byte in an error message: printable ASCII as itself, anything else in hex.
struct Found(u8);

impl core::fmt::Display for Found {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            b'\'' => f.write_str("\"'\""),
            0x21..=0x7e => write!(f, "'{}'", self.0 as char),
            b' ' => f.write_str("a space"),
            b'\n' => f.write_str("a line feed"),
            b => write!(f, "byte 0x{:02X}", b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    /// Collects events as owned text, joining pieces so tests do not depend on cuts.
    #[derive(Default)]
    struct Collect(Vec<String>);

    impl Handler for Collect {
        fn event(&mut self, e: Event<'_>) -> Result<()> {
            match e {
                Event::Text(t) => match self.0.last_mut() {
                    Some(last) if last.starts_with('~') => last.push_str(t),
                    _ => self.0.push(format!("~{}", t)),
                },
                Event::EndText => {
                    if !self.0.last().is_some_and(|l| l.starts_with('~')) {
                        self.0.push("~".into());
                    }
                    self.0.push("end".into());
                }
                other => self.0.push(format!("{:?}", other)),
            }
            Ok(())
        }
    }

    /// Parses `input` whole, through `feed` and (if it is UTF-8) through `feed_str`, which
    /// must agree to the letter.
    fn events(input: &[u8]) -> Result<Vec<String>> {
        let mut p = Parser::new();
        let mut c = Collect::default();
        let res = p.feed(input, &mut c).and_then(|()| p.finish(&mut c)).map(|()| c.0);
        if let Ok(text) = core::str::from_utf8(input) {
            let mut p = Parser::new();
            let mut c = Collect::default();
            let res_str = p.feed_str(text, &mut c).and_then(|()| p.finish(&mut c)).map(|()| c.0);
            assert_eq!(res_str, res, "feed_str vs feed on {:?}", text);
        }
        res
    }

    /// Feeds `input` one byte at a time: every token crosses a slice boundary.
    fn events_bytewise(input: &[u8]) -> Result<Vec<String>> {
        let mut p = Parser::new();
        let mut c = Collect::default();
        for b in input {
            p.feed(core::slice::from_ref(b), &mut c)?;
        }
        p.finish(&mut c)?;
        Ok(c.0)
    }

    #[test]
    fn reports_events_in_order() {
        let got = events(br#" {"a": [1, -2.5e3, true, false, null, "x\n\u00e9\ud83d\ude00"], "b": {}} "#).unwrap();
        let want = [
            "BeginObject",
            "BeginKey",
            "~a",
            "end",
            "BeginArray",
            "BeginNumber",
            "~1",
            "end",
            "BeginNumber",
            "~-2.5e3",
            "end",
            "Bool(true)",
            "Bool(false)",
            "Null",
            "BeginString",
            "~x\né😀",
            "end",
            "EndArray",
            "BeginKey",
            "~b",
            "end",
            "BeginObject",
            "EndObject",
            "EndObject",
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn any_slicing_gives_the_same_events() {
        let docs: [&[u8]; 5] = [
            br#"{"k\"ey":"v\\a\/l\b\f\n\r\t\u0041\uD834\uDD1E end","n":[0,-0.0e+1,123456789012345678901234]}"#,
            "[\"日本語 → ü\", 1E5, {\"\":\"\"}]".as_bytes(),
            b"  123  ",
            b"-0",
            b"\"\"",
        ];
        for d in docs {
            let whole = events(d).unwrap();
            assert_eq!(events_bytewise(d).unwrap(), whole, "{:?}", String::from_utf8_lossy(d));
            for cut in 0..d.len() {
                let mut p = Parser::new();
                let mut c = Collect::default();
                p.feed(&d[..cut], &mut c).unwrap();
                p.feed(&d[cut..], &mut c).unwrap();
                p.finish(&mut c).unwrap();
                assert_eq!(c.0, whole);
            }
        }
    }

    #[test]
    fn top_level_scalars() {
        assert_eq!(events(b"1").unwrap(), ["BeginNumber", "~1", "end"]);
        assert_eq!(events(b"\"s\"").unwrap(), ["BeginString", "~s", "end"]);
        assert_eq!(events(b"null").unwrap(), ["Null"]);
        assert_eq!(events(b" true\n").unwrap(), ["Bool(true)"]);
    }

    /// (input, byte offset of the error, fragment of the message)
    const REJECTED: &[(&[u8], usize, &str)] = &[
        (b"", 0, "expected a JSON value, found the end of input"),
        (b"   ", 3, "expected a JSON value"),
        (b"[1,]", 3, "expected a value after ','"),
        (b"{\"a\":1,}", 7, "expected a key (a string in double quotes) after ','"),
        (b"{\"a\" 1}", 5, "expected ':' after the key"),
        (b"[1 2]", 3, "expected ',' or ']'"),
        (b"{\"a\":1]", 6, "expected ',' or '}'"),
        (b"[1]]", 3, "expected the end of input"),
        (b"[01]", 2, "leading 0"),
        (b"[-]", 2, "a digit after '-'"),
        (b"[1.]", 3, "a digit after the decimal point"),
        (b"[1e]", 3, "exponent"),
        (b"[.5]", 1, "expected a value or ']'"),
        (b"[tru]", 4, "expected 'true'"),
        (b"nul", 3, "expected 'null', found the end of input"),
        (b"[\"a\tb\"]", 3, "control characters must be escaped"),
        (b"[\"\\x\"]", 3, "an escape character"),
        (b"[\"\\u12G4\"]", 6, "a hex digit"),
        (b"[\"\\uD800\"]", 8, "low surrogate"),
        (b"[\"\\uD800\\n\"]", 9, "'u' and a low surrogate"),
        (b"[\"\\uD800\\u0041\"]", 8, "a low surrogate (\\uDC00-\\uDFFF)"),
        (b"[\"\\uDC00\"]", 2, "lone low surrogate"),
        (b"[\"\xff\"]", 2, "valid UTF-8"),
        (b"[\"\xc3\"]", 2, "valid UTF-8"),
        (b"[\"\xed\xa0\x80\"]", 2, "valid UTF-8"),
        // Sequences that cannot be completed, cut by the end of the input: the same offset
        // whether the bytes after the first came in the same slice or later ones.
        (b"[\"\xe0\x80", 2, "valid UTF-8 in a string, found byte 0xE0"),
        (b"[\"\xf4\x90", 2, "valid UTF-8 in a string, found byte 0xF4"),
        (b"[\"a\xed\xa0", 3, "valid UTF-8 in a string, found byte 0xED"),
        (b"[\"\xf0\x9f\x98\"", 2, "valid UTF-8 in a string, found byte 0xF0"),
        (b"\xef\xbb\xbf{}", 0, "expected a JSON value, found byte 0xEF (if it starts a byte order mark"),
        (b"[\"abc", 5, "closing '\"'"),
        (b"{\"a\":", 5, "a value after ':'"),
        (b"[1", 2, "',' or ']'"),
        (b"'a'", 0, "found \"'\""),
        (b"[1]\n  x", 6, "line 2, column 3"),
    ];

    #[test]
    fn rejects_with_offset_and_expectation() {
        for &(input, at, msg) in REJECTED {
            for e in [events(input).unwrap_err(), events_bytewise(input).unwrap_err()] {
                assert_eq!(e.code(), Code::JsonInvalid, "{:?}: {}", String::from_utf8_lossy(input), e);
                let m = e.message();
                assert!(m.contains(&format!("at byte {} ", at)), "{:?}: {}", String::from_utf8_lossy(input), m);
                assert!(m.contains(msg), "{:?}: {}", String::from_utf8_lossy(input), m);
            }
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = vec![b'['; 100_000];
        let e = events(&deep).unwrap_err();
        assert_eq!(e.code(), Code::CapacityExceeded);
        assert!(e.message().contains("JSON_MAX_DEPTH"), "{}", e);
        assert!(e.message().contains(&format!("at byte {}", JSON_MAX_DEPTH)), "{}", e);
        let mut ok = vec![b'['; JSON_MAX_DEPTH];
        ok.extend(vec![b']'; JSON_MAX_DEPTH]);
        assert!(events(&ok).is_ok());
    }

    #[test]
    fn failed_parser_stays_failed_until_reset() {
        let mut p = Parser::new();
        assert!(p.feed(b"[x", &mut Validate).is_err());
        assert!(p.feed(b"]", &mut Validate).is_err());
        p.reset();
        p.feed(b"[]", &mut Validate).unwrap();
        p.finish(&mut Validate).unwrap();
    }
}
