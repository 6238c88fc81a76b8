//! The one error type: a stable code, the source location, and a message a user can act on.
//!
//! Errors are small values (16 bytes, so a `Result` comes back in registers) that never
//! allocate: the message, of at most [`ERROR_MESSAGE_BYTES`], waits in a static slot while the
//! error lives (see `Repr`), and the raising file and line are one static [`Site`] per call site
//! (`site`: the file as a span in one string of the source files' names, so a site holds no
//! pointer).
//! They are created with the [`err!`](crate::err) macro, which captures `file!()` and `line!()`,
//! and printed as one valid JSON line on stderr:
//!
//! ```text
//! {"level":"error","code":"CONFIG_JSON_INVALID","file":"src/agent/config.rs","line":88,"message":"..."}
//! ```
//!
//! This is the C original's `RETURN_ERR` done right: its lines were not valid JSON (unbalanced
//! quotes) and carried the NUL bytes of its string literals.

use crate::escape::write_json_str;
use crate::limits::{ERROR_MESSAGE_BYTES, ERROR_MESSAGE_SLOTS};
use core::fmt;
use core::mem::ManuallyDrop;
use core::sync::atomic::{AtomicUsize, Ordering};
use std::io::Write as _;
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};

mod site;
pub use site::Site;

/// Stable error codes. The text form (`Code::as_str`) is part of the interface: scripts, the
/// audit log and tests match on it, so a code is never renamed once released.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// A command line that cannot be understood. Exit code 2.
    Usage,
    /// `config.json` is not valid JSON. Exit code 2.
    ConfigJsonInvalid,
    /// `config.json` is valid JSON but a value is missing, of the wrong type or out of range.
    ConfigInvalid,
    /// `agent-prompt.json` is not valid JSON (kjxlkj contract).
    PromptJsonInvalid,
    /// `agent-prompt.json` does not follow the prompt-segment schema (kjxlkj contract).
    PromptSchemaInvalid,
    /// A segment of `agent-prompt.json` has an empty prompt (kjxlkj contract).
    PromptSegmentEmpty,
    /// A JSON document (other than the config) is not valid JSON.
    JsonInvalid,
    /// A model reply could not be read as tags at all.
    TagParseError,
    /// A model reply was read but holds no valid instruction.
    ReplyInvalid,
    /// The LLM server did not answer within the configured time.
    LlmTimeout,
    /// The LLM server could not be reached, or said it is not ready.
    LlmUnavailable,
    /// The LLM server answered with an error of its own (its message is carried).
    LlmError,
    /// The prompt did not fit the model's context; the agent pages instead of retrying.
    ContextOverflow,
    /// The server broke HTTP/1.1 framing (bad status line, bad chunk size, cut body, ...).
    HttpProtocol,
    /// A response head or body passed its hard cap.
    ResponseTooLarge,
    /// A fixed capacity (see `limits.rs`) is full.
    CapacityExceeded,
    /// A memory key (tag set) is empty or not allowed.
    KeyInvalid,
    /// A looked-up entry, file or path does not exist.
    NotFound,
    /// An update named a version that is no longer current.
    VersionConflict,
    /// A persistent write did not complete; the previous state is kept.
    PersistFailed,
    /// Any other input/output failure (reading a file, a socket, stdin).
    Io,
    /// The run was stopped by a signal.
    Interrupted,
    /// A rule the program keeps itself was found broken (a bug): the operation is refused
    /// rather than carried on with wrong data. Please report it with the message.
    Internal,
}

impl Code {
    /// Every code, in declaration order.
    pub const ALL: [Code; 23] = [
        Code::Usage,
        Code::ConfigJsonInvalid,
        Code::ConfigInvalid,
        Code::PromptJsonInvalid,
        Code::PromptSchemaInvalid,
        Code::PromptSegmentEmpty,
        Code::JsonInvalid,
        Code::TagParseError,
        Code::ReplyInvalid,
        Code::LlmTimeout,
        Code::LlmUnavailable,
        Code::LlmError,
        Code::ContextOverflow,
        Code::HttpProtocol,
        Code::ResponseTooLarge,
        Code::CapacityExceeded,
        Code::KeyInvalid,
        Code::NotFound,
        Code::VersionConflict,
        Code::PersistFailed,
        Code::Io,
        Code::Interrupted,
        Code::Internal,
    ];

    /// The code whose text form is `name` (`"CAPACITY_EXCEEDED"`), if any.
    pub fn from_name(name: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.as_str() == name)
    }

    /// The stable text form of the code, e.g. `"CAPACITY_EXCEEDED"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Code::Usage => "USAGE",
            Code::ConfigJsonInvalid => "CONFIG_JSON_INVALID",
            Code::ConfigInvalid => "CONFIG_INVALID",
            Code::PromptJsonInvalid => "PROMPT_JSON_INVALID",
            Code::PromptSchemaInvalid => "PROMPT_SCHEMA_INVALID",
            Code::PromptSegmentEmpty => "PROMPT_SEGMENT_EMPTY",
            Code::JsonInvalid => "JSON_INVALID",
            Code::TagParseError => "TAG_PARSE_ERROR",
            Code::ReplyInvalid => "REPLY_INVALID",
            Code::LlmTimeout => "LLM_TIMEOUT",
            Code::LlmUnavailable => "LLM_UNAVAILABLE",
            Code::LlmError => "LLM_ERROR",
            Code::ContextOverflow => "CONTEXT_OVERFLOW",
            Code::HttpProtocol => "HTTP_PROTOCOL",
            Code::ResponseTooLarge => "RESPONSE_TOO_LARGE",
            Code::CapacityExceeded => "CAPACITY_EXCEEDED",
            Code::KeyInvalid => "KEY_INVALID",
            Code::NotFound => "NOT_FOUND",
            Code::VersionConflict => "VERSION_CONFLICT",
            Code::PersistFailed => "PERSIST_FAILED",
            Code::Io => "IO",
            Code::Interrupted => "INTERRUPTED",
            Code::Internal => "INTERNAL",
        }
    }

    /// The process exit code for a run that ends in this error: 2 for usage and configuration
    /// problems (the user must change something before trying again), 1 for everything else.
    pub const fn exit_code(self) -> i32 {
        match self {
            Code::Usage
            | Code::ConfigJsonInvalid
            | Code::ConfigInvalid
            | Code::PromptJsonInvalid
            | Code::PromptSchemaInvalid
            | Code::PromptSegmentEmpty => 2,
            _ => 1,
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error: code, where it was raised, and what happened. See the module documentation.
///
/// Small on purpose (16 bytes, so a `Result<()>` of it comes back in registers through every `?`,
/// where a 40-byte one was copied through memory: 27 KB of the binary, docs/measurements.md):
/// the code, the raising [`Site`], and a handle to the message, which lives in one of
/// [`ERROR_MESSAGE_SLOTS`] static slots while the error is alive (`Repr` below).
pub struct Error(ManuallyDrop<Repr>);

impl Error {
    /// Builds an error; use the [`err!`](crate::err) macro, which fills in the location.
    /// A message longer than [`ERROR_MESSAGE_BYTES`] is cut at a character boundary and ends in
    /// `...`, so the cut is visible.
    // Out of line: every `err!` site calls it, and the error path is cold.
    #[inline(never)]
    #[cold]
    pub fn new(code: Code, site: &'static Site, args: fmt::Arguments<'_>) -> Error {
        let mut message = Message::new();
        let _ = fmt::write(&mut message.0, args);
        if message.0.clipped {
            message.0.mark_cut("...");
        }
        Error(ManuallyDrop::new(Repr::keep(code, site, &message)))
    }

    /// The stable code.
    pub fn code(&self) -> Code {
        match &*self.0 {
            Repr::Slot { code, .. } => *code,
            Repr::Spilled(b) => b.code,
        }
    }

    /// Where the error was raised.
    fn site(&self) -> &'static Site {
        match &*self.0 {
            Repr::Slot { site, .. } => site,
            Repr::Spilled(b) => b.site,
        }
    }

    /// A copy of the message, without code or location (it reads as a `&str`).
    pub fn message(&self) -> Message {
        match &*self.0 {
            Repr::Slot { slot, .. } => {
                SLOTS.get(usize::from(*slot)).map_or_else(Message::new, |s| lock(s).message.clone())
            }
            Repr::Spilled(b) => b.message.clone(),
        }
    }

    /// The source file that raised the error.
    pub fn file(&self) -> &'static str {
        self.site().file()
    }

    /// The source line that raised the error.
    pub fn line(&self) -> u32 {
        self.site().line()
    }

    /// Returns the same error with `context: ` put in front of its message, keeping code and
    /// location (the place that knew what failed, not the place that added context).
    pub fn context(self, context: fmt::Arguments<'_>) -> Error {
        Error::new(self.code(), self.site(), format_args!("{}: {}", context, self.message()))
    }

    /// Returns the same error under another code (e.g. a JSON error in the config becomes
    /// `CONFIG_JSON_INVALID`), keeping location and message.
    pub fn with_code(mut self, code: Code) -> Error {
        match &mut *self.0 {
            Repr::Slot { code: c, .. } => *c = code,
            Repr::Spilled(b) => b.code = code,
        }
        self
    }

    /// Writes the error as one JSON object (no newline) with the given level.
    pub fn write_json(&self, level: &str, out: &mut dyn fmt::Write) -> fmt::Result {
        out.write_str("{\"level\":")?;
        write_json_str(out, level)?;
        out.write_str(",\"code\":")?;
        write_json_str(out, self.code().as_str())?;
        out.write_str(",\"file\":")?;
        write_json_str(out, self.file())?;
        write!(out, ",\"line\":{},\"message\":", self.line())?;
        write_json_str(out, &self.message())?;
        out.write_str("}")
    }

    /// Prints the error as one JSON line on stderr (level `error`).
    pub fn print(&self) {
        print_line(self, "error");
    }

    /// Prints the error as one JSON line on stderr with level `warning`: something went wrong
    /// that the program handled (a dropped torn log tail, an ignored config key).
    pub fn print_warning(&self) {
        print_line(self, "warning");
    }
}

/// Formats one JSON line into a stack buffer and writes it with a single `write_all`, so lines
/// from several threads never interleave and printing never allocates.
fn print_line(e: &Error, level: &str) {
    // Worst case: every message byte escaped as \u00XX (6x) plus the fixed fields.
    let mut line: Text<{ ERROR_MESSAGE_BYTES * 6 + 512 }> = Text::new();
    let _ = e.write_json(level, &mut line);
    let _ = fmt::Write::write_str(&mut line, "\n");
    let bytes = if line.clipped {
        &b"{\"level\":\"error\",\"code\":\"CAPACITY_EXCEEDED\",\"message\":\"error line too long\"}\n"[..]
    } else {
        line.as_str().as_bytes()
    };
    let _ = std::io::stderr().lock().write_all(bytes);
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({}:{})", self.code().as_str(), self.message(), self.file(), self.line())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {}

impl Clone for Error {
    fn clone(&self) -> Error {
        Error(ManuallyDrop::new(Repr::keep(self.code(), self.site(), &self.message())))
    }
}

/// Two errors are equal when code, site and message are.
impl PartialEq for Error {
    fn eq(&self, other: &Error) -> bool {
        self.code() == other.code()
            && self.file() == other.file()
            && self.line() == other.line()
            && self.message() == other.message()
    }
}

impl Eq for Error {}

/// An error's message, copied out of its slot: plain text of at most [`ERROR_MESSAGE_BYTES`]
/// that reads as a `&str` (`e.message().contains("...")`, `&*e.message()`).
#[derive(Clone, PartialEq, Eq)]
pub struct Message(Text<ERROR_MESSAGE_BYTES>);

impl Message {
    const fn new() -> Message {
        Message(Text::new())
    }
}

impl core::ops::Deref for Message {
    type Target = str;
    fn deref(&self) -> &str {
        self.0.as_str()
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self)
    }
}

impl fmt::Debug for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl PartialEq<str> for Message {
    fn eq(&self, other: &str) -> bool {
        **self == *other
    }
}

impl PartialEq<&str> for Message {
    fn eq(&self, other: &&str) -> bool {
        **self == **other
    }
}

/// An error's code, site and message.
///
/// The message is normally in one of [`ERROR_MESSAGE_SLOTS`] static slots, claimed when the
/// error is made and given back when it is dropped, so making an error never allocates: the
/// steady-state cycle makes errors (a model's malformed reply) and must not allocate
/// (docs/design.md §2). Only when every slot is taken by a live error (code that collects many
/// problems at start-up, such as a `memory.json` report) does an error go to the heap instead,
/// message, code and site together (so both forms stay 16 bytes); nothing is ever dropped.
enum Repr {
    Slot { site: &'static Site, slot: u16, code: Code },
    Spilled(Box<Spilled>),
}

/// An error whose message found no free slot.
struct Spilled {
    site: &'static Site,
    code: Code,
    message: Message,
}

/// One slot: whether a live error holds it, and its message.
struct Slot {
    taken: bool,
    message: Message,
}

/// The message slots. Each has its own lock, held only to copy a message in or out (never two
/// at a time), so errors made on several threads do not wait on each other.
static SLOTS: [Mutex<Slot>; ERROR_MESSAGE_SLOTS] =
    [const { Mutex::new(Slot { taken: false, message: Message::new() }) }; ERROR_MESSAGE_SLOTS];

/// Where the next search for a free slot starts, so that claiming is one try in the usual case
/// (errors are mostly dropped in the order they are made).
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

/// Locks a slot. A slot's lock is never held across code that can panic, but if a thread died
/// holding it anyway, its data (a flag and a byte buffer) is still consistent: use it.
fn lock(slot: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    slot.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Repr {
    /// Stores a copy of `message` in a free slot, or on the heap when none is free.
    fn keep(code: Code, site: &'static Site, message: &Message) -> Repr {
        let start = NEXT_SLOT.load(Ordering::Relaxed);
        for k in 0..ERROR_MESSAGE_SLOTS {
            let i = (start + k) % ERROR_MESSAGE_SLOTS;
            let Some(slot) = SLOTS.get(i) else { break };
            let mut s = match slot.try_lock() {
                Ok(s) => s,
                Err(TryLockError::Poisoned(p)) => p.into_inner(),
                Err(TryLockError::WouldBlock) => continue,
            };
            if !s.taken {
                s.taken = true;
                s.message = message.clone();
                NEXT_SLOT.store((i + 1) % ERROR_MESSAGE_SLOTS, Ordering::Relaxed);
                // `ERROR_MESSAGE_SLOTS` fits in u16 (checked below).
                return Repr::Slot { site, slot: i as u16, code };
            }
        }
        Repr::Spilled(Box::new(Spilled { site, code, message: message.clone() }))
    }
}

impl Drop for Repr {
    fn drop(&mut self) {
        if let Repr::Slot { slot, .. } = self {
            give_back(*slot);
        }
    }
}

impl Drop for Error {
    /// Out of line, and the `Repr` in a `ManuallyDrop`: each of the ~400 places that drop an
    /// error (or a `Result` that may hold one) is one call, where the check of its form and the
    /// release of its slot or box were inlined (about 34 B each). The layout is `Repr`'s.
    #[inline(never)]
    fn drop(&mut self) {
        // The placeholder left behind holds no slot and no box, and is never dropped.
        let placeholder = Repr::Slot { site: crate::site!(), slot: u16::MAX, code: Code::Internal };
        drop(core::mem::replace(&mut *self.0, placeholder));
    }
}

/// Frees slot `i` (out of line: every dropped `Result` may call it).
#[inline(never)]
fn give_back(i: u16) {
    if let Some(slot) = SLOTS.get(usize::from(i)) {
        lock(slot).taken = false;
    }
}

const _: () = assert!(ERROR_MESSAGE_SLOTS > 0 && ERROR_MESSAGE_SLOTS <= u16::MAX as usize);

/// Text in a fixed inline buffer of `N` bytes, for messages and the printed line (the error
/// type sits below every other module, so it keeps its own). Writing past the end keeps what
/// fits, cut at a character boundary, and records the cut instead of failing.
#[derive(Clone, PartialEq, Eq)]
struct Text<const N: usize> {
    bytes: [u8; N],
    len: usize,
    clipped: bool,
}

impl<const N: usize> Text<N> {
    const fn new() -> Self {
        Text { bytes: [0; N], len: 0, clipped: false }
    }

    fn as_str(&self) -> &str {
        // Only whole characters are ever copied in, so this never fails.
        self.bytes.get(..self.len).and_then(|b| core::str::from_utf8(b).ok()).unwrap_or("")
    }

    /// Ends the text with `marker` (cutting whole characters to make room), so a cut shows.
    fn mark_cut(&mut self, marker: &str) {
        if marker.len() > N {
            return;
        }
        self.len = crate::bytes::str_prefix(self.as_str(), N - marker.len()).len();
        self.clipped = false;
        let _ = fmt::Write::write_str(self, marker);
    }
}

impl<const N: usize> fmt::Write for Text<N> {
    fn write_char(&mut self, c: char) -> core::fmt::Result {
        crate::bytes::write_char(self, c)
    }

    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.clipped {
            return Ok(());
        }
        let cut = crate::bytes::str_prefix(s, N - self.len).len();
        if let (Some(dst), Some(src)) = (self.bytes.get_mut(self.len..self.len + cut), s.as_bytes().get(..cut)) {
            dst.copy_from_slice(src);
            self.len += cut;
        }
        if cut < s.len() {
            self.clipped = true;
        }
        Ok(())
    }
}

/// Builds an [`Error`](crate::error::Error) with the caller's file and line:
/// `err!(CapacityExceeded, "prompt buffer full ({} bytes)", n)`.
#[macro_export]
macro_rules! err {
    ($code:ident, $($arg:tt)+) => {
        $crate::error::Error::new($crate::error::Code::$code, $crate::site!(), format_args!($($arg)+))
    };
}

/// The [`Site`](crate::error::Site) of the code that names it: a `&'static` to one static
/// holding `file!()` and `line!()` (the file as a place in one string of names, found at compile
/// time).
#[macro_export]
macro_rules! site {
    () => {{
        static SITE: $crate::error::Site = $crate::error::Site::new(file!(), line!());
        &SITE
    }};
}

/// `return Err(err!(...))`.
#[macro_export]
macro_rules! bail {
    ($code:ident, $($arg:tt)+) => {
        return Err($crate::err!($code, $($arg)+))
    };
}

/// Shorthand for results of this crate.
pub type Result<T> = core::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed::ArrayString;

    #[test]
    fn carries_code_location_and_message() {
        let e = crate::err!(KeyInvalid, "tag {} is {} bytes", "x", 3);
        assert_eq!(e.code(), Code::KeyInvalid);
        assert_eq!(e.message(), "tag x is 3 bytes");
        assert!(e.file().ends_with("error.rs"));
        assert!(e.line() > 0);
        assert_eq!(e.code().exit_code(), 1);
        assert_eq!(Code::ConfigInvalid.exit_code(), 2);
    }

    #[test]
    fn codes_round_trip_through_their_names() {
        for c in Code::ALL {
            assert_eq!(Code::from_name(c.as_str()), Some(c));
        }
        assert_eq!(Code::from_name("NO_SUCH_CODE"), None);
    }

    #[test]
    fn json_line_is_valid_and_escaped() {
        let e = crate::err!(Io, "bad \"name\"\n\u{0}\u{1f} é");
        let mut s: ArrayString<1024> = ArrayString::new();
        e.write_json("error", &mut s).unwrap();
        let text = s.as_str();
        assert!(text.starts_with("{\"level\":\"error\",\"code\":\"IO\",\"file\":\"src/error.rs\",\"line\":"));
        assert!(text.ends_with(",\"message\":\"bad \\\"name\\\"\\n\\u0000\\u001f é\"}"));
        assert!(!text.as_bytes().contains(&0));
    }

    #[test]
    fn long_message_is_cut_visibly_at_a_char_boundary() {
        let long = "é".repeat(ERROR_MESSAGE_BYTES);
        let e = crate::err!(Io, "{}", long);
        assert!(e.message().len() <= ERROR_MESSAGE_BYTES);
        assert!(e.message().ends_with("..."));
        assert!(e.message().starts_with("éé"));
    }

    #[test]
    fn an_error_is_small() {
        assert!(core::mem::size_of::<Error>() <= 16, "{}", core::mem::size_of::<Error>());
        assert!(core::mem::size_of::<Result<()>>() <= 16);
    }

    #[test]
    fn more_live_errors_than_slots_keep_every_message() {
        let many: Vec<Error> = (0..ERROR_MESSAGE_SLOTS * 3).map(|i| crate::err!(Io, "error number {}", i)).collect();
        let copies = many.clone();
        for (i, (e, c)) in many.iter().zip(&copies).enumerate() {
            assert_eq!(e.message(), format!("error number {}", i).as_str());
            assert!(e == c);
        }
        drop(many);
        // The copies outlive the originals: their messages are their own.
        for (i, c) in copies.iter().enumerate() {
            assert_eq!(c.message(), format!("error number {}", i).as_str());
        }
    }

    #[test]
    fn context_keeps_code_and_location() {
        let e = crate::err!(NotFound, "no such key");
        let line = e.line();
        let e = e.context(format_args!("reading {}", "memory.json"));
        assert_eq!(e.message(), "reading memory.json: no such key");
        assert_eq!(e.line(), line);
        assert_eq!(e.code(), Code::NotFound);
    }
}
