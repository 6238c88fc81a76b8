//! Problems found in a reply, each with a stable code. The codes are part of the interface
//! (`parse-reply` output, the audit log, tests), so a code is never renamed once released.
//!
//! A problem is an **error** when something the model wrote was not taken (an unknown action,
//! a missing field, an extra action, a reply with nothing usable); the feedback for the next
//! prompt is built from those. It is a **warning** when the reader recovered and took what the
//! model meant (a missing end tag, a duplicated field, bytes that were not UTF-8).

use crate::fixed::ArrayString;
use crate::limits::REPLY_PROBLEM_DETAIL_BYTES;

/// How much a problem matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// Something the model wrote was not taken.
    Error,
    /// The reader recovered; what the model meant was taken.
    Warning,
}

impl Severity {
    /// `error` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

macro_rules! codes {
    ($($(#[$doc:meta])* $v:ident = $s:literal, $sev:ident;)*) => {
        /// The stable problem codes.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
        pub enum ProblemCode {
            $($(#[$doc])* $v,)*
        }

        impl ProblemCode {
            /// Every code, in a fixed order.
            pub const ALL: &'static [ProblemCode] = &[$(ProblemCode::$v,)*];

            /// The stable text form, e.g. `"UNKNOWN_ACTION"`.
            pub fn as_str(self) -> &'static str {
                match self { $(ProblemCode::$v => $s,)* }
            }

            /// Whether it is an error or a warning (see the module documentation).
            pub fn severity(self) -> Severity {
                match self { $(ProblemCode::$v => Severity::$sev,)* }
            }
        }
    };
}

codes! {
    /// The reply is empty, whitespace only, or only reasoning.
    #[default]
    EmptyReply = "EMPTY_REPLY", Error;
    /// The reply is larger than `REPLY_MAX_BYTES` and was not read.
    ReplyTooLarge = "REPLY_TOO_LARGE", Error;
    /// A `<think>` block was never closed; everything after it was dropped.
    UnclosedThink = "UNCLOSED_THINK", Error;
    /// The reply holds no tags at all (prose only).
    NoTags = "NO_TAGS", Error;
    /// Tags, but none that is an instruction.
    NoInstruction = "NO_INSTRUCTION", Error;
    /// An action whose type is not known.
    UnknownAction = "UNKNOWN_ACTION", Error;
    /// An instruction without a field it needs (or with it empty).
    MissingField = "MISSING_FIELD", Error;
    /// A field that should be text holds elements.
    FieldNotText = "FIELD_NOT_TEXT", Error;
    /// The reply ends inside a field (cut by the token limit?); its instruction was not taken.
    TruncatedField = "TRUNCATED_FIELD", Error;
    /// More actions than allowed per reply; the first ones were taken.
    TooManyActions = "TOO_MANY_ACTIONS", Error;
    /// More instructions than `REPLY_MAX_INSTRUCTIONS`; the rest were dropped.
    TooManyInstructions = "TOO_MANY_INSTRUCTIONS", Error;
    /// More tags than `TAG_MAX_NODES`; the rest of the reply was not read.
    TooManyTags = "TOO_MANY_TAGS", Error;
    /// The reply ends inside a tag (cut by the token limit?); the partial tag was dropped.
    Truncated = "TRUNCATED", Warning;
    /// Elements still open at the end of the reply (closed there).
    UnclosedTag = "UNCLOSED_TAG", Warning;
    /// End tags out of order or matching nothing (recovered).
    MismatchedTag = "MISMATCHED_TAG", Warning;
    /// Elements nested deeper than `TAG_MAX_DEPTH` (their tags were dropped).
    TooDeep = "TOO_DEEP", Warning;
    /// Bytes that are not UTF-8, replaced by U+FFFD.
    InvalidUtf8 = "INVALID_UTF8", Warning;
    /// Several `<agent>` blocks; the last complete one was read.
    MultipleAgents = "MULTIPLE_AGENTS", Warning;
    /// Instruction elements outside the `<agent>` that was read; they were ignored.
    OutsideAgent = "OUTSIDE_AGENT", Warning;
    /// A field given twice (e.g. two `<next_state>`); the last one was taken.
    DuplicateField = "DUPLICATE_FIELD", Warning;
    /// The same action (kind, tags, value and query) twice in one reply; it was taken once.
    DuplicateAction = "DUPLICATE_ACTION", Warning;
    /// The whole answer was written with escaped tags (`&lt;agent&gt;`); read after decoding.
    EscapedTags = "ESCAPED_TAGS", Warning;
    /// Action fields (`<type>`, `<tags>`...) without an `<action>` around them; read as one.
    ActionWithoutWrapper = "ACTION_WITHOUT_WRAPPER", Warning;
}

/// One problem: its code, where (byte offset in the original reply), and what was found
/// versus what was expected.
#[derive(Clone, Copy, Debug, Default)]
pub struct Problem {
    /// The stable code.
    pub code: ProblemCode,
    /// Byte offset in the original reply, when the problem has a place.
    pub offset: Option<u32>,
    /// What was found and what was expected, for people and for the model.
    pub detail: ArrayString<REPLY_PROBLEM_DETAIL_BYTES>,
}

impl Problem {
    /// A problem with a detail formatted from `args`; a detail longer than
    /// `REPLY_PROBLEM_DETAIL_BYTES` is cut at a character boundary and ends in `...`.
    pub fn new(code: ProblemCode, offset: Option<u32>, args: core::fmt::Arguments<'_>) -> Problem {
        let mut detail = ArrayString::new();
        let mut w = Clip { out: &mut detail, clipped: false };
        let _ = core::fmt::write(&mut w, args);
        if w.clipped {
            detail.clip_with_marker("...");
        }
        Problem { code, offset, detail }
    }

    /// Its severity.
    pub fn severity(&self) -> Severity {
        self.code.severity()
    }
}

/// Writes what fits, remembers that something did not.
struct Clip<'a> {
    out: &'a mut ArrayString<REPLY_PROBLEM_DETAIL_BYTES>,
    clipped: bool,
}

impl core::fmt::Write for Clip<'_> {
    fn write_char(&mut self, c: char) -> core::fmt::Result {
        crate::bytes::write_char(self, c)
    }

    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        if self.clipped {
            return Ok(());
        }
        if self.out.push_str(s).is_err() {
            let _ = self.out.push_str(crate::bytes::str_prefix(s, self.out.remaining()));
            self.clipped = true;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_upper_snake() {
        for (i, a) in ProblemCode::ALL.iter().enumerate() {
            assert!(a.as_str().bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_'));
            for b in ProblemCode::ALL.iter().skip(i + 1) {
                assert_ne!(a.as_str(), b.as_str());
            }
        }
        assert_eq!(ProblemCode::Truncated.severity(), Severity::Warning);
        assert_eq!(ProblemCode::UnknownAction.severity(), Severity::Error);
    }
}
