//! The scalars of the event parser: strings (escapes, `\\u` surrogate pairs, UTF-8 checked as
//! it arrives, any slicing), numbers and the literals `true`, `false`, `null`.

use super::*;
use crate::bytes;

impl Parser {
    /// Inside a string: copies runs of plain bytes out in one piece, stops at `"`, `\`, a
    /// control character, or the end of the slice.
    #[inline]
    pub(super) fn string<H: Handler + ?Sized>(
        &mut self,
        input: &[u8],
        txt: Option<&str>,
        mut i: usize,
        h: &mut H,
    ) -> Result<usize> {
        loop {
            let start = i;
            let unread = bytes::skip(input, start);
            // The hot loop: plain bytes (everything but `"`, `\` and controls).
            // (`b as usize < 256`, so the table look-up's bound check is compiled away.)
            let plain = unread.iter().position(|&b| STRING_CLASS.get(b as usize) != Some(&0)).unwrap_or(unread.len());
            i = start + plain;
            if plain > 0 {
                if self.high != 0 {
                    return Err(self.error(input, start, "\\u and a low surrogate after a high surrogate"));
                }
                let run = bytes::take(unread, plain);
                // Input known to be UTF-8 is cut directly (the run ends at an ASCII byte or at
                // the end of the input, both character boundaries); otherwise it is checked.
                let checked = match txt.and_then(|t| t.get(start..i)) {
                    Some(s) => Ok(s),
                    None => core::str::from_utf8(run),
                };
                match checked {
                    Ok(s) => self.emit(h, i, Event::Text(s))?,
                    Err(e) => {
                        let valid = e.valid_up_to();
                        if let Some(s) = run.get(..valid).and_then(|p| core::str::from_utf8(p).ok()) {
                            if !s.is_empty() {
                                self.emit(h, i, Event::Text(s))?;
                            }
                        }
                        let cut = bytes::skip(run, valid);
                        if e.error_len().is_none() && i == input.len() && cut.len() < 4 {
                            // A sequence cut by the end of this slice: keep it for the next.
                            self.utf8 = [0; 4];
                            for (slot, &b) in self.utf8.iter_mut().zip(cut) {
                                *slot = b;
                            }
                            self.utf8_len = cut.len();
                            self.utf8_need = utf8_width(cut.first().copied().unwrap_or(0));
                            self.utf8_at = self.base + start + valid;
                            self.state = State::Utf8;
                            return Ok(i);
                        }
                        return Err(self.error(input, start + valid, "valid UTF-8 in a string"));
                    }
                }
            }
            match input.get(i) {
                None => return Ok(i),
                Some(b'"') => {
                    if self.high != 0 {
                        return Err(self.error(input, i, "\\u and a low surrogate after a high surrogate"));
                    }
                    self.emit(h, i, Event::EndText)?;
                    if self.key {
                        self.state = State::Colon;
                    } else {
                        self.value_done();
                    }
                    return Ok(i + 1);
                }
                Some(b'\\') => {
                    self.state = State::Escape;
                    i += 1;
                    // A one-character escape is decoded here and the scan goes on; `\u` and
                    // an escape cut by the slice's end continue in the main loop.
                    if input.get(i).is_some_and(|&b| b != b'u') {
                        i = self.escape(input, i, h)?;
                        continue;
                    }
                    return Ok(i);
                }
                Some(_) => {
                    return Err(self.error(
                        input,
                        i,
                        "a character allowed in a string (control characters must be escaped, e.g. \\n or \\u0001)",
                    ))
                }
            }
        }
    }

    /// After `\`: one escape character.
    pub(super) fn escape<H: Handler + ?Sized>(&mut self, input: &[u8], i: usize, h: &mut H) -> Result<usize> {
        let Some(&b) = input.get(i) else { return Ok(i) };
        if self.high != 0 && b != b'u' {
            return Err(self.error(input, i, "'u' and a low surrogate after a high surrogate"));
        }
        let text = match b {
            b'"' => "\"",
            b'\\' => "\\",
            b'/' => "/",
            b'b' => "\u{8}",
            b'f' => "\u{c}",
            b'n' => "\n",
            b'r' => "\r",
            b't' => "\t",
            b'u' => {
                self.digits = 0;
                self.unit = 0;
                self.state = State::Unicode;
                return Ok(i + 1);
            }
            _ => return Err(self.error(input, i, "an escape character (one of \" \\ / b f n r t u)")),
        };
        self.emit(h, i, Event::Text(text))?;
        self.state = State::Str;
        Ok(i + 1)
    }

    /// Inside `\uXXXX`: up to four hex digits, then the code unit is decoded.
    pub(super) fn unicode<H: Handler + ?Sized>(&mut self, input: &[u8], mut i: usize, h: &mut H) -> Result<usize> {
        while self.digits < 4 {
            let Some(&b) = input.get(i) else { return Ok(i) };
            let d = match b {
                b'0'..=b'9' => b - b'0',
                b'a'..=b'f' => b - b'a' + 10,
                b'A'..=b'F' => b - b'A' + 10,
                _ => return Err(self.error(input, i, "a hex digit in a \\u escape")),
            };
            self.unit = self.unit << 4 | u32::from(d);
            self.digits += 1;
            i += 1;
        }
        let unit = self.unit;
        // The escape started 6 bytes back (`\uXXXX`), possibly in an earlier slice.
        let at = i.wrapping_sub(6);
        let code = if self.high != 0 {
            if !(0xDC00..=0xDFFF).contains(&unit) {
                return Err(self.error_at(at, "a low surrogate (\\uDC00-\\uDFFF) after a high surrogate"));
            }
            let c = 0x10000 + ((self.high - 0xD800) << 10) + (unit - 0xDC00);
            self.high = 0;
            c
        } else if (0xD800..=0xDBFF).contains(&unit) {
            self.high = unit;
            self.state = State::Str;
            return Ok(i);
        } else if (0xDC00..=0xDFFF).contains(&unit) {
            return Err(self.error_at(at, "a code point, not a lone low surrogate"));
        } else {
            unit
        };
        let Some(c) = char::from_u32(code) else {
            return Err(self.error_at(at, "a valid code point"));
        };
        let mut buf = [0u8; 4];
        self.emit(h, i, Event::Text(c.encode_utf8(&mut buf)))?;
        self.state = State::Str;
        Ok(i)
    }

    /// An error at `i` relative to the current slice, which may be "negative" (an escape
    /// that began in an earlier slice); only the offset is reported then.
    pub(super) fn error_at(&self, i: usize, expected: &str) -> crate::error::Error {
        err!(JsonInvalid, "invalid JSON at {}: expected {}", self.pos(i), expected)
    }

    /// Completes a UTF-8 sequence cut by the previous slice's end. Each byte is checked as it
    /// comes, as `from_utf8` checks a whole input (`E0 80` can never start a character, so it is
    /// an error at the `E0` now, not at the end of the input later): the error and its offset do
    /// not depend on where the input was cut.
    pub(super) fn utf8_rest<H: Handler + ?Sized>(&mut self, input: &[u8], mut i: usize, h: &mut H) -> Result<usize> {
        while self.utf8_len < self.utf8_need {
            let Some(&b) = input.get(i) else { return Ok(i) };
            if let Some(slot) = self.utf8.get_mut(self.utf8_len) {
                *slot = b;
            }
            self.utf8_len += 1;
            // `utf8_len <= utf8_need <= 4`, the buffer's size.
            let seq = bytes::take(&self.utf8, self.utf8_len);
            if core::str::from_utf8(seq).is_err_and(|e| e.error_len().is_some()) {
                return Err(self.utf8_error());
            }
            i += 1;
        }
        match core::str::from_utf8(bytes::take(&self.utf8, self.utf8_len)) {
            Ok(s) => self.emit(h, i, Event::Text(s))?,
            Err(_) => return Err(self.utf8_error()),
        }
        self.state = State::Str;
        Ok(i)
    }

    /// The error for the cut UTF-8 sequence: at its first byte, worded as when the sequence
    /// lies in one slice.
    #[cold]
    pub(super) fn utf8_error(&self) -> crate::error::Error {
        let first = self.utf8.first().copied().unwrap_or(0);
        let pos = self.pos(self.utf8_at.wrapping_sub(self.base));
        err!(JsonInvalid, "invalid JSON at {}: expected valid UTF-8 in a string, found {}", pos, Found(first))
    }

    /// The text of the number bytes `input[start..end]`, which the number automaton accepted one
    /// by one: ASCII digits, signs, `.`, `e` and `E`, within the input, so always text. Were
    /// they not, that is an error at `start`, never a number read as empty text.
    #[inline]
    fn number_text<'t>(&self, input: &'t [u8], txt: Option<&'t str>, start: usize, end: usize) -> Result<&'t str> {
        let text = txt.and_then(|t| t.get(start..end));
        let text = text.or_else(|| input.get(start..end).and_then(|b| core::str::from_utf8(b).ok()));
        text.ok_or_else(|| self.error(input, start, "a number of ASCII characters"))
    }

    /// Inside a number: runs the automaton over the digits in this slice and reports them as
    /// one piece.
    #[inline]
    pub(super) fn number<H: Handler + ?Sized>(
        &mut self,
        input: &[u8],
        txt: Option<&str>,
        mut i: usize,
        h: &mut H,
    ) -> Result<usize> {
        let start = i;
        if self.num == NumState::Start {
            if let Some(end) = scan_number(input, i) {
                let text = self.number_text(input, txt, start, end)?;
                self.emit(h, i, Event::Text(text))?;
                self.emit(h, i, Event::EndText)?;
                self.value_done();
                return Ok(end);
            }
        }
        let mut num = self.num;
        while let Some(&b) = input.get(i) {
            match num.step(b) {
                Some(next) => {
                    num = next;
                    i += 1;
                }
                None => break,
            }
        }
        self.num = num;
        if i > start {
            let text = self.number_text(input, txt, start, i)?;
            self.emit(h, i, Event::Text(text))?;
        }
        let Some(&b) = input.get(i) else { return Ok(i) };
        if !num.is_final() {
            return Err(self.error(input, i, num.expected()));
        }
        if num == NumState::Zero && b.is_ascii_digit() {
            return Err(self.error(input, i, "no digit after a leading 0 (leading zeros are not allowed)"));
        }
        self.emit(h, i, Event::EndText)?;
        self.value_done();
        Ok(i)
    }

    /// Inside `true`, `false` or `null`.
    pub(super) fn literal<H: Handler + ?Sized>(&mut self, input: &[u8], mut i: usize, h: &mut H) -> Result<usize> {
        while let Some(&want) = self.lit.get(self.lit_pos) {
            let Some(&b) = input.get(i) else { return Ok(i) };
            if b != want {
                return Err(self.error(input, i, self.expected()));
            }
            self.lit_pos += 1;
            i += 1;
        }
        self.emit(
            h,
            i,
            match self.lit.first() {
                Some(b't') => Event::Bool(true),
                Some(b'f') => Event::Bool(false),
                _ => Event::Null,
            },
        )?;
        self.value_done();
        Ok(i)
    }
}

/// The fast path for a number that lies wholly in `b` from `i`: returns where it ends if it is
/// complete, valid, and followed by a byte that cannot continue it. `None` means "not sure"
/// (the slice ends inside it, or it is invalid): the automaton then reads it byte by byte and
/// reports any error. This is the grammar of `number.rs`, unrolled into digit loops.
#[inline]
pub(super) fn scan_number(b: &[u8], mut i: usize) -> Option<usize> {
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match *b.get(i)? {
        b'0' => {
            i += 1;
            if b.get(i)?.is_ascii_digit() {
                return None;
            }
        }
        b'1'..=b'9' => {
            i += 1;
            while b.get(i)?.is_ascii_digit() {
                i += 1;
            }
        }
        _ => return None,
    }
    if *b.get(i)? == b'.' {
        i += 1;
        if !b.get(i)?.is_ascii_digit() {
            return None;
        }
        while b.get(i)?.is_ascii_digit() {
            i += 1;
        }
    }
    if matches!(*b.get(i)?, b'e' | b'E') {
        i += 1;
        if matches!(*b.get(i)?, b'+' | b'-') {
            i += 1;
        }
        if !b.get(i)?.is_ascii_digit() {
            return None;
        }
        while b.get(i)?.is_ascii_digit() {
            i += 1;
        }
    }
    Some(i)
}

/// Bytes in the UTF-8 sequence that starts with `b` (1 for anything that cannot start one,
/// which `from_utf8` then rejects).
pub(super) fn utf8_width(b: u8) -> usize {
    match b {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => 1,
    }
}
