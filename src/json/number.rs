//! The JSON number grammar (RFC 8259 §6) as a small deterministic automaton, shared by the
//! streaming parser (which feeds it one byte at a time, across input chunks) and by
//! [`Writer::number_text`](super::Writer::number_text) (which checks a whole text).
//!
//! ```text
//! number        = [ minus ] int [ frac ] [ exp ]
//! decimal-point = %x2E       ; .
//! digit1-9      = %x31-39    ; 1-9
//! e             = %x65 / %x45 ; e E
//! exp           = e [ minus / plus ] 1*DIGIT
//! frac          = decimal-point 1*DIGIT
//! int           = zero / ( digit1-9 *DIGIT )
//! minus         = %x2D       ; -
//! plus          = %x2B       ; +
//! zero          = %x30       ; 0
//! ```
//!
//! Numbers are kept as text: the document stores the exact digits and the accessors convert on
//! demand, so `1.0`, `1e2` and `-0` survive a round trip unchanged.

/// Where the automaton stands after the bytes seen so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumState {
    /// Nothing read yet.
    Start,
    /// Read `-`; a digit must follow.
    Minus,
    /// Read the integer `0` (optionally after `-`); no more integer digits may follow.
    Zero,
    /// Inside the integer part `digit1-9 *DIGIT`.
    Int,
    /// Read `.`; a digit must follow.
    Dot,
    /// Inside the fraction digits.
    Frac,
    /// Read `e` or `E`; a sign or digit must follow.
    E,
    /// Read the exponent's sign; a digit must follow.
    ESign,
    /// Inside the exponent digits.
    Exp,
}

impl NumState {
    /// The state after `b`, or `None` if `b` cannot continue the number (the number then ends
    /// before `b`, which is valid only in a [final](NumState::is_final) state).
    #[inline]
    pub fn step(self, b: u8) -> Option<NumState> {
        use NumState::*;
        match (self, b) {
            (Start, b'-') => Some(Minus),
            (Start | Minus, b'0') => Some(Zero),
            (Start | Minus, b'1'..=b'9') => Some(Int),
            (Int, b'0'..=b'9') => Some(Int),
            (Zero | Int, b'.') => Some(Dot),
            (Dot | Frac, b'0'..=b'9') => Some(Frac),
            (Zero | Int | Frac, b'e' | b'E') => Some(E),
            (E, b'+' | b'-') => Some(ESign),
            (E | ESign | Exp, b'0'..=b'9') => Some(Exp),
            _ => None,
        }
    }

    /// Whether the bytes so far form a complete number.
    #[inline]
    pub fn is_final(self) -> bool {
        matches!(self, NumState::Zero | NumState::Int | NumState::Frac | NumState::Exp)
    }

    /// What must come next, for error messages, when the number stops in a non-final state.
    pub fn expected(self) -> &'static str {
        match self {
            NumState::Start => "a number",
            NumState::Minus => "a digit after '-'",
            NumState::Dot => "a digit after the decimal point",
            NumState::E => "a digit or sign after the exponent 'e'",
            NumState::ESign => "a digit after the exponent's sign",
            NumState::Zero | NumState::Int | NumState::Frac | NumState::Exp => "the end of the number",
        }
    }
}

/// Checks that `text` is exactly one JSON number. On failure, returns the byte offset in
/// `text` where it goes wrong and what was expected there.
pub fn check(text: &str) -> Result<(), (usize, &'static str)> {
    let mut state = NumState::Start;
    for (i, &b) in text.as_bytes().iter().enumerate() {
        match state.step(b) {
            Some(next) => state = next,
            None if state == NumState::Zero && b.is_ascii_digit() => return Err((i, "no digit after a leading 0")),
            None => return Err((i, state.expected())),
        }
    }
    if state.is_final() {
        Ok(())
    } else {
        Err((text.len(), state.expected()))
    }
}

/// Whether `text` is an integer in the grammar (no fraction, no exponent).
pub fn is_integer(text: &str) -> bool {
    !text.as_bytes().iter().any(|&b| matches!(b, b'.' | b'e' | b'E'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_grammar() {
        for ok in [
            "0",
            "-0",
            "1",
            "-1",
            "10",
            "1.5",
            "-0.0",
            "1e5",
            "1E+5",
            "1e-05",
            "0e0",
            "123.456e-789",
            "-9223372036854775808",
        ] {
            assert_eq!(check(ok), Ok(()), "{}", ok);
        }
    }

    #[test]
    fn rejects_outside_the_grammar_with_position() {
        let table: [(&str, usize); 14] = [
            ("", 0),
            ("-", 1),
            ("01", 1),
            ("-01", 2),
            ("1.", 2),
            (".5", 0),
            ("1e", 2),
            ("1e+", 3),
            ("+1", 0),
            ("1.e5", 2),
            ("0x10", 1),
            ("1 ", 1),
            ("NaN", 0),
            ("1e5.0", 3),
        ];
        for (text, at) in table {
            let got = check(text);
            assert_eq!(got.map_err(|e| e.0), Err(at), "{:?}", text);
        }
        assert_eq!(check("01"), Err((1, "no digit after a leading 0")));
    }

    #[test]
    fn integer_test() {
        assert!(is_integer("-12"));
        assert!(!is_integer("1.0"));
        assert!(!is_integer("1e3"));
    }
}
