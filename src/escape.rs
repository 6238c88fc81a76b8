//! JSON string escaping (RFC 8259 §7), shared by the serializer, the error printer and every
//! writer of JSON text.
//!
//! `"` and `\` are escaped; control characters U+0000..U+001F use the short forms `\b \f \n \r
//! \t` where they exist and `\u00XX` otherwise; everything else, UTF-8 included, passes through
//! unchanged (a `&str` is already valid UTF-8). The C original escaped every byte >= 0x80 as
//! `\u00XX`, corrupting all non-ASCII text; this does not.

use core::fmt;

/// The escape for `b`, if it needs one; `None` for bytes written as they are.
#[inline]
fn escape_for(b: u8) -> Option<&'static str> {
    // The escapes of U+0000..U+001F, six bytes each, in one string (a table of `&str`s was 32
    // pointers for the loader to relocate); a short form (`\n`) is the first two of its six.
    const CONTROL: &str = "\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b....\\t....\\n....\\u000b\\f....\\r....\\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f";
    match b {
        b'"' => Some("\\\""),
        b'\\' => Some("\\\\"),
        0..=0x1f => {
            let at = usize::from(b) * 6;
            let len = if matches!(b, 0x08..=0x0a | 0x0c | 0x0d) { 2 } else { 6 };
            CONTROL.get(at..at + len)
        }
        _ => None,
    }
}

/// 1 for the bytes that need an escape (`"`, `\`, U+0000..U+001F), 0 for the rest.
// Const evaluation: an index out of range here fails the build, it cannot panic at run time.
#[allow(clippy::indexing_slicing)]
pub(crate) static NEEDS_ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = 1;
        i += 1;
    }
    t[b'"' as usize] = 1;
    t[b'\\' as usize] = 1;
    t
};

/// Writes the escaped body of `s` (without the surrounding quotes). Runs of bytes that need no
/// escape are written in one piece; a table look-up per byte finds where they end.
pub fn write_json_str_body<W: fmt::Write + ?Sized>(out: &mut W, s: &str) -> fmt::Result {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        // (`b as usize < 256`, so the bound check is compiled away.)
        if NEEDS_ESCAPE.get(b as usize) == Some(&0) {
            continue;
        }
        if let Some(esc) = escape_for(b) {
            // `i` is at an ASCII byte, a whole character, so both cuts are at character
            // boundaries and cannot fail; were they to, the write fails rather than drop text.
            out.write_str(s.get(start..i).ok_or(fmt::Error)?)?;
            out.write_str(esc)?;
            start = i + 1;
        }
    }
    out.write_str(s.get(start..).ok_or(fmt::Error)?)
}

/// Writes `s` as a JSON string, quotes included.
pub fn write_json_str<W: fmt::Write + ?Sized>(out: &mut W, s: &str) -> fmt::Result {
    out.write_str("\"")?;
    write_json_str_body(out, s)?;
    out.write_str("\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(s: &str) -> String {
        let mut o = String::new();
        write_json_str(&mut o, s).unwrap();
        o
    }

    #[test]
    fn escapes_quotes_backslash_and_controls() {
        assert_eq!(esc("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(esc("\n\r\t\u{8}\u{c}"), r#""\n\r\t\b\f""#);
        assert_eq!(esc("\u{0}\u{1f}\u{7f}"), "\"\\u0000\\u001f\u{7f}\"");
    }

    #[test]
    fn every_control_character_has_its_escape() {
        for b in 0u8..0x20 {
            let want = match b {
                0x08 => "\\b".to_string(),
                0x09 => "\\t".to_string(),
                0x0a => "\\n".to_string(),
                0x0c => "\\f".to_string(),
                0x0d => "\\r".to_string(),
                _ => format!("\\u{:04x}", b),
            };
            assert_eq!(escape_for(b), Some(want.as_str()), "{b:#04x}");
        }
    }

    #[test]
    fn passes_utf8_and_slash_through() {
        assert_eq!(esc("→ é 日本 😀 /"), "\"→ é 日本 😀 /\"");
        assert_eq!(esc(""), "\"\"");
    }
}
