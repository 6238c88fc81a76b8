//! The lexical rules of the tag format, shared by the parser and the renderer so that what one
//! writes the other reads back: which bytes make an element name, how entities decode, how text
//! and attribute values are escaped.
//!
//! **Names.** A name starts with an ASCII letter, `_`, `:` or any non-ASCII byte, and continues
//! with any byte except ASCII whitespace, controls and `< > / = & " '`. This is wider than XML on
//! purpose: the C original wrote memory keys such as `art,dictionary,history` as element names
//! and models read and copy them without trouble, so `,` `.` `+` `-` and digits are name bytes.
//! A name may not *start* with a digit or punctuation, so prose such as `x<3` or `a < b` stays
//! text. Keys that do not fit (empty, starting with a digit, holding a space or a quote) are
//! rendered as `<entry key="...">` instead; see `render.rs`.
//!
//! **Entities.** The five XML entities (`&lt; &gt; &amp; &quot; &apos;`) and numeric character
//! references (`&#38;`, `&#x26;`) decode. A reference to an invalid code point (0, a surrogate,
//! above U+10FFFF) and any unknown entity (`&nbsp;`) are kept literally, as is a bare `&`: a
//! model's text is never silently changed beyond what it clearly meant.

use core::fmt;

/// Whether `b` may start an element name.
#[inline]
pub fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b':' || b >= 0x80
}

/// Whether `b` may continue an element name.
#[inline]
pub fn is_name_byte(b: u8) -> bool {
    !matches!(b, 0..=0x20 | 0x7f | b'<' | b'>' | b'/' | b'=' | b'&' | b'"' | b'\'')
}

/// Whether `s` is a whole, valid element name (what the renderer may write as `<s>`).
pub fn is_valid_name(s: &str) -> bool {
    let b = s.as_bytes();
    match b.split_first() {
        Some((&first, rest)) => is_name_start(first) && rest.iter().all(|&c| is_name_byte(c)),
        None => false,
    }
}

/// Length of the name at the start of `b` (0 if `b` does not start with a name byte).
#[inline]
pub fn name_len(b: &[u8]) -> usize {
    match b.first() {
        Some(&c) if is_name_start(c) => 1 + b.iter().skip(1).take_while(|&&c| is_name_byte(c)).count(),
        _ => 0,
    }
}

/// XML whitespace (space, tab, CR, LF).
#[inline]
pub fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// Longest entity or character reference looked at, `;` included (`&#x10FFFF;` and
/// `&#1114111;` are 10). A longer run before `;` is not an entity and is kept literally.
const ENTITY_MAX: usize = 10;

/// Decodes the entity or character reference at the start of `b` (which starts with `&`).
/// Returns the character and the bytes consumed, or `None` to keep the `&` literally.
pub fn decode_entity(b: &[u8]) -> Option<(char, usize)> {
    let semi = crate::bytes::find_byte(b.get(..ENTITY_MAX.min(b.len()))?, b';')?;
    let body = b.get(1..semi)?;
    let c = match body {
        b"lt" => '<',
        b"gt" => '>',
        b"amp" => '&',
        b"quot" => '"',
        b"apos" => '\'',
        [b'#', b'x' | b'X', hex @ ..] => code_point(hex, 16)?,
        [b'#', dec @ ..] => code_point(dec, 10)?,
        _ => return None,
    };
    Some((c, semi + 1))
}

/// The character with the code point written in `digits` (radix 10 or 16), if it is one a
/// document may hold (not U+0000, not a surrogate, at most U+10FFFF).
fn code_point(digits: &[u8], radix: u32) -> Option<char> {
    if digits.is_empty() || digits.len() > 7 {
        return None;
    }
    let mut v: u32 = 0;
    for &d in digits {
        v = v * radix + (d as char).to_digit(radix)?;
    }
    if v == 0 {
        return None;
    }
    char::from_u32(v)
}

/// Appends `raw` to `out` with entities decoded. `out` must have room for `raw.len()` bytes
/// (decoding never makes text longer); the caller checks.
pub fn decode_into(out: &mut String, raw: &str) {
    let bytes = raw.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while let Some(rel) = bytes.get(i..).and_then(|r| crate::bytes::find_byte(r, b'&')) {
        let amp = i + rel;
        match bytes.get(amp..).and_then(decode_entity) {
            Some((c, used)) => {
                // `start` is 0 or just past an entity's `;`, `amp` at its `&`: ASCII bytes.
                out.push_str(crate::bytes::ascii_cut(raw, start, amp));
                out.push(c);
                start = amp + used;
                i = start;
            }
            None => i = amp + 1,
        }
    }
    out.push_str(crate::bytes::ascii_cut(raw, start, raw.len()));
}

/// Writes `s` as element text: `&`, `<` and `>` become entities, everything else is written as
/// it is (quotes need no escape in text, and every escape costs the model tokens).
pub fn write_text(out: &mut dyn fmt::Write, s: &str) -> fmt::Result {
    write_escaped(out, s, false)
}

/// Writes `s` as a double-quoted attribute value's body: as text, plus `"` as `&quot;`.
pub fn write_attr_value(out: &mut dyn fmt::Write, s: &str) -> fmt::Result {
    write_escaped(out, s, true)
}

fn write_escaped(out: &mut dyn fmt::Write, s: &str, quote: bool) -> fmt::Result {
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' if quote => "&quot;",
            _ => continue,
        };
        // `i` is at an ASCII byte, so both cuts are on character boundaries and cannot fail;
        // were they to, the write fails rather than drop text.
        out.write_str(s.get(start..i).ok_or(fmt::Error)?)?;
        out.write_str(esc)?;
        start = i + 1;
    }
    out.write_str(s.get(start..).ok_or(fmt::Error)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> String {
        let mut o = String::new();
        decode_into(&mut o, s);
        o
    }

    #[test]
    fn names() {
        for ok in ["a", "next_state", "art,dictionary,history", "c++", "x.y", "_1", "日本", ":ns", "a-b"] {
            assert!(is_valid_name(ok), "{ok}");
        }
        for bad in ["", "1abc", "a b", "a\"b", "a/b", "-x", ",a", "a&b", "a=b", "a<b", "a>b", "a\tb"] {
            assert!(!is_valid_name(bad), "{bad}");
        }
        assert_eq!(name_len(b"type>x"), 4);
        assert_eq!(name_len(b"3>"), 0);
        assert_eq!(name_len(b"a,b/>"), 3);
    }

    #[test]
    fn entities_decode_and_unknown_ones_stay() {
        assert_eq!(dec("a &lt;b&gt; &amp; &quot;c&quot; &apos;d&apos;"), "a <b> & \"c\" 'd'");
        assert_eq!(dec("&#65;&#x42;&#X43; &#x1F600;"), "ABC 😀");
        assert_eq!(
            dec("&nbsp; & &amp &#0; &#xD800; &#x110000; &#; &#x; &#12345678;"),
            "&nbsp; & &amp &#0; &#xD800; &#x110000; &#; &#x; &#12345678;"
        );
        assert_eq!(dec("&AMP; &lt"), "&AMP; &lt");
        assert_eq!(dec("&&lt;"), "&<");
        assert_eq!(dec("é&amp;é"), "é&é");
    }

    #[test]
    fn escaping() {
        let mut o = String::new();
        write_text(&mut o, "a<b>&\"c'").unwrap();
        assert_eq!(o, "a&lt;b&gt;&amp;\"c'");
        o.clear();
        write_attr_value(&mut o, "k\"&").unwrap();
        assert_eq!(o, "k&quot;&amp;");
        assert_eq!(dec("a&lt;b&gt;&amp;\"c'"), "a<b>&\"c'");
    }
}
