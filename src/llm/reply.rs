//! Reading what a server answered: a completion (whole or one streamed piece), and a server's
//! error body turned into a typed error that carries the server's own words.
//!
//! One function reads both a whole reply and a streamed delta, because they differ only in the
//! key (`message` or `delta`; Ollama native uses `message` for both). The text lands in an
//! `Accumulator` with two fixed buffers: the content, which the agent will parse for actions,
//! and the reasoning, which is only ever logged. Reasoning arrives in a side field
//! (`reasoning_content`: LM Studio, llama.cpp `deepseek`, older vLLM; `reasoning`: vLLM,
//! Ollama `/v1`; `thinking`: Ollama native) or inside the content as `<think>...</think>`
//! (llama.cpp `--reasoning-format none`), sometimes with only the closing tag; `split_think`
//! moves such a block from the content to the reasoning, so a model's musings are never
//! mistaken for actions.

use crate::error::{Code, Error, Result};
use crate::fixed::{ArrayVec, FixedBuf};
use crate::http::Redactor;
use crate::json::{self, Document, Kind, Value};
use core::fmt;

/// Why the model stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishReason {
    /// It finished (or hit a stop sequence; servers strip the stop sequence from the content).
    Stop,
    /// It ran into `max_tokens`: the reply is cut.
    Length,
    /// It asked for tool calls.
    ToolCalls,
    /// A content filter stopped it.
    ContentFilter,
    /// Some other reason the server named.
    Other,
    /// The server did not say.
    Missing,
}

impl FinishReason {
    /// Reads the server's word for it (`done_reason` for Ollama native).
    pub fn from_name(name: &str) -> FinishReason {
        match name {
            "stop" | "eos" | "end_turn" | "stop_sequence" => FinishReason::Stop,
            "length" | "max_tokens" => FinishReason::Length,
            "tool_calls" | "function_call" => FinishReason::ToolCalls,
            "content_filter" => FinishReason::ContentFilter,
            _ => FinishReason::Other,
        }
    }

    /// The OpenAI spelling (`"missing"` when the server gave none).
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other => "other",
            FinishReason::Missing => "missing",
        }
    }
}

/// Token counts, as the server reported them (some report zeros; some nothing, which is `None`
/// in [`super::Completion::usage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Usage {
    /// Tokens in the prompt (Ollama native `prompt_eval_count`).
    pub prompt_tokens: u64,
    /// Tokens generated (Ollama native `eval_count`).
    pub completion_tokens: u64,
    /// Their sum (as reported, or computed when not reported).
    pub total_tokens: u64,
    /// Prompt tokens the server took from its prompt cache instead of evaluating them
    /// (llama.cpp `timings.cache_n`; `usage.prompt_tokens_details.cached_tokens` of OpenAI,
    /// llama.cpp and vLLM). `None`: the server did not say (unknown, not 0).
    pub cached_tokens: Option<u64>,
}

/// What kind of answer came back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Content to act on.
    Text,
    /// The content is empty (or blank) but there is reasoning: a reasoning model spent its
    /// tokens thinking (LM Studio #1602, Gemma through Ollama). The agent should not parse it
    /// as a reply; the reasoning is there for the log.
    ReasoningOnly,
    /// Neither content nor reasoning.
    Empty,
}

/// Most tokens whose log-probabilities a reply keeps (an outline of the product, which asks
/// for them, is a short reply: see [`super::Prompt::logprobs`]). A longer reply keeps the
/// first ones and says it was cut ([`TokenLogprobs::cut`]).
pub const LLM_SCORED_TOKENS_MAX: usize = 512;

/// One generated token: its length in bytes and the model's log-probability of it.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct TokenLogprob {
    /// The token's text, in bytes (its `bytes` when the server gives them, else its string's).
    pub bytes: u32,
    /// The natural log of the probability the model gave the token.
    pub logprob: f64,
}

/// The log-probabilities of a reply's tokens, in order, when the request asked for them and
/// the server sent them.
#[derive(Clone, Debug, Default)]
pub struct TokenLogprobs {
    /// The tokens, at most [`LLM_SCORED_TOKENS_MAX`].
    pub tokens: ArrayVec<TokenLogprob, LLM_SCORED_TOKENS_MAX>,
    /// Whether the server sent any (a server without log-probabilities sends none).
    pub sent: bool,
    /// Whether there were more than the buffer keeps, or one could not be read.
    pub cut: bool,
}

impl TokenLogprobs {
    /// The mean log-probability of the tokens that start within bytes `from..to` of the reply
    /// (the tokens' lengths laid end to end from its start); `None` when the server sent none,
    /// they were cut, or none starts there.
    pub fn mean_within(&self, from: usize, to: usize) -> Option<f64> {
        if !self.sent || self.cut {
            return None;
        }
        let (mut at, mut sum, mut n) = (0usize, 0.0, 0u32);
        for t in self.tokens.iter() {
            if at >= from && at < to {
                sum += t.logprob;
                n += 1;
            }
            at += t.bytes as usize;
        }
        let mean = sum / f64::from(n.max(1));
        (n > 0 && mean.is_finite()).then_some(mean)
    }

    /// The lowest log-probability of the tokens that start within bytes `from..to` of the reply,
    /// after the first of them (an item's first token is a choice among many starts); `None`
    /// when the server sent none, they were cut, or fewer than two start there.
    pub fn min_after_first(&self, from: usize, to: usize) -> Option<f64> {
        if !self.sent || self.cut {
            return None;
        }
        let (mut at, mut seen, mut min) = (0usize, 0u32, f64::INFINITY);
        for t in self.tokens.iter() {
            if at >= from && at < to {
                if seen > 0 {
                    min = min.min(t.logprob);
                }
                seen += 1;
            }
            at += t.bytes as usize;
        }
        (seen > 1 && min.is_finite()).then_some(min)
    }

    /// The lowest log-probability of the tokens that start within bytes `from..to` of
    /// `content` (the reply they were read from) and hold a digit: how surely the model wrote
    /// the numbers there. `None` when the server sent none, they were cut, or no such token
    /// starts there.
    pub fn min_of_digits(&self, content: &str, from: usize, to: usize) -> Option<f64> {
        if !self.sent || self.cut {
            return None;
        }
        let (mut at, mut min) = (0usize, f64::INFINITY);
        for t in self.tokens.iter() {
            let end = at.saturating_add(t.bytes as usize);
            let digit = content.as_bytes().get(at..end).is_some_and(|b| b.iter().any(u8::is_ascii_digit));
            if at >= from && at < to && digit {
                min = min.min(t.logprob);
            }
            at = end;
        }
        min.is_finite().then_some(min)
    }

    pub(crate) fn clear(&mut self) {
        self.tokens.clear();
        self.sent = false;
        self.cut = false;
    }

    /// Reads one token's entry: `{"token": "...", "bytes": [..], "logprob": x}` (OpenAI chat,
    /// llama.cpp's `completion_probabilities`).
    pub(crate) fn push_entry(&mut self, v: Value<'_>) {
        let bytes = match v.get("bytes").filter(|b| b.kind() == Kind::Array) {
            Some(b) => Some(b.len()),
            None => v.get("token").and_then(|t| t.as_str()).map(str::len),
        };
        self.push(bytes, v.get("logprob").and_then(|l| l.as_f64()));
    }

    /// Reads a token of its length and log-probability, either possibly missing.
    pub(crate) fn push(&mut self, bytes: Option<usize>, logprob: Option<f64>) {
        self.sent = true;
        let (Some(bytes), Some(logprob)) = (bytes.and_then(|b| u32::try_from(b).ok()), logprob) else {
            self.cut = true;
            return;
        };
        if self.tokens.push(TokenLogprob { bytes, logprob }).is_err() {
            self.cut = true;
        }
    }
}

/// The reply being put together.
pub(crate) struct Accumulator {
    pub(crate) content: FixedBuf,
    pub(crate) reasoning: FixedBuf,
    pub(crate) finish: FinishReason,
    pub(crate) usage: Option<Usage>,
    /// Pieces of text received (a token count's stand-in while streaming).
    pub(crate) pieces: u64,
    /// Whether reasoning had to be cut to fit its buffer.
    pub(crate) reasoning_cut: bool,
    /// The tokens' log-probabilities, when asked for and sent.
    pub(crate) logprobs: TokenLogprobs,
}

impl Accumulator {
    pub(crate) fn new(content_cap: usize, reasoning_cap: usize) -> Accumulator {
        Accumulator {
            content: FixedBuf::with_capacity("LLM reply content (LLM_MAX_CONTENT_BYTES)", content_cap),
            reasoning: FixedBuf::with_capacity("LLM reasoning (LLM_MAX_REASONING_BYTES)", reasoning_cap),
            finish: FinishReason::Missing,
            usage: None,
            pieces: 0,
            reasoning_cut: false,
            logprobs: TokenLogprobs::default(),
        }
    }

    pub(crate) fn reset(&mut self) {
        self.content.clear();
        self.reasoning.clear();
        self.finish = FinishReason::Missing;
        self.usage = None;
        self.pieces = 0;
        self.reasoning_cut = false;
        self.logprobs.clear();
    }

    /// Appends content; a reply longer than the buffer is an error (it cannot be acted on in
    /// part).
    pub(crate) fn push_content(&mut self, s: &str) -> Result<()> {
        self.content.push_str(s).map_err(|_| {
            err!(
                CapacityExceeded,
                "the model's reply is longer than {} bytes (LLM_MAX_CONTENT_BYTES)",
                self.content.capacity()
            )
        })
    }

    /// Appends reasoning; what does not fit is dropped at a character boundary (it is only
    /// logged) and the cut is remembered.
    pub(crate) fn push_reasoning(&mut self, s: &str) {
        if self.reasoning.push_str(s).is_err() {
            let _ = self.reasoning.push_str(crate::bytes::str_prefix(s, self.reasoning.remaining()));
            self.reasoning_cut = true;
        }
    }

    /// Redacts the API key from the content and the reasoning, in place (the key is ASCII, so
    /// both stay UTF-8). Done once the reply is whole, so a key spread over several streamed
    /// pieces, or hidden by a JSON escape, is found too.
    pub(crate) fn redact(&mut self, r: &Redactor) {
        if !r.is_active() {
            return;
        }
        for buf in [&mut self.content, &mut self.reasoning] {
            let n = r.redact_in_place(buf.as_mut_slice());
            buf.truncate(n);
        }
    }

    /// Checks that both buffers hold text, once they are complete (redacted, `<think>` split
    /// off): only `&str`s go in, redaction replaces ASCII runs with ASCII, and cuts fall on
    /// character boundaries, so anything else is a bug, reported as an `INTERNAL` error rather than
    /// a reply that silently reads as empty. After this, [`Accumulator::content_str`] and
    /// [`Accumulator::reasoning_str`] are the whole buffers.
    pub(crate) fn check_text(&self) -> Result<()> {
        self.content.text()?;
        self.reasoning.text()?;
        Ok(())
    }

    /// The content as text: all of it, the buffer only ever holding text (see
    /// [`Accumulator::check_text`]).
    pub(crate) fn content_str(&self) -> &str {
        crate::bytes::utf8_prefix(self.content.as_slice())
    }

    /// The reasoning, if any (text, as the content).
    pub(crate) fn reasoning_str(&self) -> Option<&str> {
        Some(crate::bytes::utf8_prefix(self.reasoning.as_slice())).filter(|s| !s.trim().is_empty())
    }

    pub(crate) fn outcome(&self) -> Outcome {
        if !self.content_str().trim().is_empty() {
            Outcome::Text
        } else if self.reasoning_str().is_some() {
            Outcome::ReasoningOnly
        } else {
            Outcome::Empty
        }
    }
}

/// Content: a string, `null` (a streamed role-only delta), or an array of parts with `text`.
pub(super) fn read_text(v: Option<Value<'_>>, acc: &mut Accumulator) -> Result<()> {
    let Some(v) = v else { return Ok(()) };
    match v.typed() {
        json::Typed::String(s) if !s.is_empty() => {
            acc.push_content(s)?;
            acc.pieces += 1;
        }
        json::Typed::Array => {
            for part in v.items() {
                if let Some(s) = part.get("text").and_then(|t| t.as_str()) {
                    acc.push_content(s)?;
                    acc.pieces += 1;
                }
            }
        }
        json::Typed::String(_) | json::Typed::Null => {}
        // Not a reply with no text: a server that does not speak the protocol.
        json::Typed::Bool(_) | json::Typed::Number(_) | json::Typed::Object => bail!(
            LlmError,
            "the server's reply has a message content that is a JSON {}, not a string, null or an array of parts",
            v.kind().name()
        ),
    }
    Ok(())
}

/// The first non-empty reasoning side field.
pub(super) fn read_reasoning(msg: Value<'_>, acc: &mut Accumulator) {
    for key in ["reasoning_content", "reasoning", "thinking"] {
        if let Some(s) = msg.get(key).and_then(|v| v.as_str()).filter(|s| !s.is_empty()) {
            acc.push_reasoning(s);
            acc.pieces += 1;
            return;
        }
    }
}

pub(super) fn read_usage(v: Option<Value<'_>>) -> Option<Usage> {
    let v = v.filter(|v| v.kind() == Kind::Object)?;
    let n = |k: &str| v.get(k).and_then(|x| x.as_u64());
    let (p, c) = (n("prompt_tokens").unwrap_or(0), n("completion_tokens").unwrap_or(0));
    Some(Usage {
        prompt_tokens: p,
        completion_tokens: c,
        total_tokens: n("total_tokens").unwrap_or(p.saturating_add(c)),
        cached_tokens: v.path("prompt_tokens_details.cached_tokens").and_then(|x| x.as_u64()),
    })
}

/// Moves a `<think>...</think>` block at the start of the content (or everything before a lone
/// `</think>`, or an unclosed `<think>` to the end) into the reasoning.
pub(crate) fn split_think(acc: &mut Accumulator) {
    const OPEN: &str = "<think>";
    const CLOSE: &str = "</think>";
    let (think_start, think_end, rest_start) = {
        let text = acc.content_str();
        let lead = text.len() - text.trim_start().len();
        let opened = text.get(lead..).is_some_and(|t| t.starts_with(OPEN));
        match (opened, crate::bytes::find(text.as_bytes(), CLOSE.as_bytes())) {
            (true, Some(c)) if c >= lead + OPEN.len() => (lead + OPEN.len(), c, c + CLOSE.len()),
            (true, None) => (lead + OPEN.len(), text.len(), text.len()),
            (false, Some(c)) => (0, c, c + CLOSE.len()),
            _ => return,
        }
    };
    // The thought is copied out first (the two buffers are separate fields), then the gap in
    // the content is closed.
    // Both ends are at a tag's `<` or `>` (ASCII) or at the end of the content.
    let content = crate::bytes::utf8_prefix(acc.content.as_slice());
    let think = crate::bytes::ascii_cut(content, think_start, think_end).trim();
    if !think.is_empty() {
        if !acc.reasoning.is_empty() {
            let _ = acc.reasoning.push_str("\n");
        }
        if acc.reasoning.push_str(think).is_err() {
            acc.reasoning_cut = true;
        }
    }
    acc.content.consume_front(rest_start);
    // Drop the blank line(s) a model writes after `</think>`.
    let blank = acc.content_str().len() - acc.content_str().trim_start().len();
    acc.content.consume_front(blank);
}

/// Words in a server's message that mean "the prompt does not fit the context": vLLM and
/// OpenAI ("maximum context length", "context length is only"), llama.cpp ("exceeds the
/// available context size"), llama-cpp-python ("exceed context window", code
/// `context_length_exceeded`), LM Studio ("greater than the context length").
const OVERFLOW_WORDS: [&str; 6] = [
    "maximum context length",
    "context length is only",
    "exceeds the available context size",
    "exceed context window",
    "greater than the context length",
    "context_length_exceeded",
];

/// The typed error for a non-`2xx` answer (or a `2xx` whose body is an error): see
/// [`classify`]. Works on any body; non-JSON bodies are quoted as text. The HTTP client has
/// redacted the body's bytes already; the strings decoded from JSON are redacted again by `r`
/// (an escape such as `\/` can hide the key from the byte scan), before the message is cut to
/// its length.
pub(crate) fn server_error(status: u16, body: &[u8], doc: &mut Document, r: &Redactor) -> Error {
    if doc.parse(body).is_ok() && doc.root().kind() == Kind::Object {
        return error_from_json(status, doc.root(), r);
    }
    let text = String8(body);
    classify(status, None, None, &text, r)
}

/// The error object of a JSON body, in each server's shape: `{"error":"..."}` (Ollama native),
/// `{"error":{"message","type","code"}}` (OpenAI, llama.cpp, vLLM, Ollama `/v1`),
/// `{"object":"error","message",...}` (older vLLM), `{"detail":"..."}` (FastAPI servers).
pub(super) fn error_from_json(status: u16, root: Value<'_>, r: &Redactor) -> Error {
    let err = root.get("error");
    let (obj, message) = match err {
        Some(e) if e.kind() == Kind::String => (root, e.as_str()),
        Some(e) if e.kind() == Kind::Object => (e, e.get("message").and_then(|m| m.as_str())),
        _ => (root, root.get("message").or_else(|| root.get("detail")).and_then(|m| m.as_str())),
    };
    let kind = obj.get("type").and_then(|t| t.as_str());
    let code = obj.get("code").and_then(|c| c.as_str().or_else(|| c.number_text()));
    let message = message.unwrap_or("(no message)");
    classify(status, kind, code, &message, r)
}

/// Picks the code: context overflow by the servers' words, `LLM_UNAVAILABLE` for 429 and the
/// "not ready" statuses (502, 503, 504), `LLM_TIMEOUT` for 408, `LLM_ERROR` for the rest.
fn classify(status: u16, kind: Option<&str>, code: Option<&str>, message: &dyn Msg, r: &Redactor) -> Error {
    let overflow = kind == Some("exceed_context_size_error")
        || code == Some("context_length_exceeded")
        || OVERFLOW_WORDS.iter().any(|w| message.contains_ignore_case(w));
    let (c, hint) = if overflow {
        (Code::ContextOverflow, " (the prompt does not fit the model's context)")
    } else {
        match status {
            429 => (Code::LlmUnavailable, " (rate limited)"),
            502..=504 => (Code::LlmUnavailable, " (the server is not ready)"),
            408 => (Code::LlmTimeout, ""),
            401 | 403 => (Code::LlmError, " (check the API key named by api_key_env)"),
            404 => (Code::LlmError, " (check the endpoint URL and the model name)"),
            _ => (Code::LlmError, ""),
        }
    };
    Error::new(
        c,
        crate::site!(),
        format_args!(
            "the LLM server answered {}{}{}{}: {}",
            status,
            Typed(kind, r),
            Typed(code, r),
            hint,
            Said(message, r)
        ),
    )
}

/// ` [type]` when known.
struct Typed<'a>(Option<&'a str>, &'a Redactor);
impl fmt::Display for Typed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(t) if !t.is_empty() => write!(f, " [{}]", self.1.show(t)),
            _ => Ok(()),
        }
    }
}

/// A message that may be a `&str` or raw bytes.
trait Msg {
    fn contains_ignore_case(&self, needle: &str) -> bool;
    fn write(&self, f: &mut fmt::Formatter<'_>, r: &Redactor) -> fmt::Result;
}

/// A message shown with the key redacted.
struct Said<'a>(&'a dyn Msg, &'a Redactor);
impl fmt::Display for Said<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.write(f, self.1)
    }
}

impl Msg for &str {
    fn contains_ignore_case(&self, needle: &str) -> bool {
        contains_ignore_case(self.as_bytes(), needle)
    }
    fn write(&self, f: &mut fmt::Formatter<'_>, r: &Redactor) -> fmt::Result {
        write!(f, "{}", r.show(self))
    }
}

/// Raw body bytes shown lossily, whitespace collapsed.
struct String8<'a>(&'a [u8]);

impl Msg for String8<'_> {
    fn contains_ignore_case(&self, needle: &str) -> bool {
        contains_ignore_case(self.0, needle)
    }
    /// Raw body bytes come from the HTTP client, which has redacted them whole already.
    fn write(&self, f: &mut fmt::Formatter<'_>, _: &Redactor) -> fmt::Result {
        write!(f, "{}", self)
    }
}

impl fmt::Display for String8<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let body = self.0.trim_ascii();
        if body.is_empty() {
            return f.write_str("(empty body)");
        }
        let mut space = false;
        for chunk in body.get(..400).unwrap_or(body).utf8_chunks() {
            for c in chunk.valid().chars() {
                if c.is_whitespace() || c.is_control() {
                    space = true;
                    continue;
                }
                if space {
                    f.write_str(" ")?;
                    space = false;
                }
                write!(f, "{}", c)?;
            }
            if !chunk.invalid().is_empty() {
                f.write_str("\u{fffd}")?;
            }
        }
        Ok(())
    }
}

fn contains_ignore_case(hay: &[u8], needle: &str) -> bool {
    !needle.is_empty() && crate::bytes::contains_ignore_ascii_case(hay, needle.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::wire::{apply, Wire};

    fn acc() -> Accumulator {
        Accumulator::new(1024, 1024)
    }

    /// Reads `body` as a whole reply of `wire` into a fresh accumulator.
    fn read(body: &str, wire: super::super::wire::Wire) -> Accumulator {
        let mut doc = Document::with_capacity(256, 4096);
        doc.parse(body.as_bytes()).unwrap();
        let mut a = acc();
        super::super::wire::apply(doc.root(), wire, 200, &mut a, &Redactor::none()).unwrap();
        a
    }

    #[test]
    fn token_log_probabilities_are_read_in_every_form_and_summed_up_over_a_span() {
        use super::super::wire::Wire;
        let chat = r#"{"choices":[{"message":{"content":"ab cd"},"logprobs":{"content":[
            {"token":"ab","logprob":-1.0,"bytes":[97,98]},{"token":" cd","logprob":-3.0}]}}]}"#;
        let text = r#"{"choices":[{"text":"ab cd","logprobs":{"tokens":["ab"," cd"],"token_logprobs":[-1.0,-3.0]}}]}"#;
        let native = r#"{"content":"ab cd","stop":true,"completion_probabilities":[
            {"token":"ab","logprob":-1.0},{"token":" cd","logprob":-3.0}]}"#;
        for (body, wire) in [(chat, Wire::OpenAi), (text, Wire::OpenAi), (native, Wire::LlamaCpp)] {
            let a = read(body, wire);
            assert!(a.logprobs.sent && !a.logprobs.cut, "{body}");
            assert_eq!(a.logprobs.mean_within(0, 5), Some(-2.0), "{body}");
            // The lowest after a span's first token: none in a span of one token.
            assert_eq!(a.logprobs.min_after_first(0, 5), Some(-3.0), "{body}");
            assert_eq!(a.logprobs.min_after_first(2, 5), None, "{body}");
            assert_eq!(a.logprobs.mean_within(2, 5), Some(-3.0), "{body}");
            assert_eq!(a.logprobs.mean_within(5, 9), None, "{body}");
            // No digit in "ab cd".
            assert_eq!(a.logprobs.min_of_digits("ab cd", 0, 5), None, "{body}");
        }
        // The digits' tokens, read in the reply they came from: "7" and "2" of "Day 7 of 2".
        let digits = r#"{"choices":[{"message":{"content":"Day 7 of 2"},"logprobs":{"content":[
            {"token":"Day","logprob":-4.0},{"token":" 7","logprob":-0.5},{"token":" of","logprob":-6.0},
            {"token":" 2","logprob":-2.5}]}}]}"#;
        let a = read(digits, Wire::OpenAi);
        assert_eq!(a.logprobs.min_of_digits("Day 7 of 2", 0, 10), Some(-2.5));
        assert_eq!(a.logprobs.min_of_digits("Day 7 of 2", 0, 6), Some(-0.5));
        assert_eq!(a.logprobs.min_of_digits("Day 7 of 2", 5, 8), None);
        // None sent, or one unreadable: no figure.
        let plain = read(r#"{"choices":[{"message":{"content":"ab"}}]}"#, Wire::OpenAi);
        assert!(!plain.logprobs.sent && plain.logprobs.mean_within(0, 2).is_none());
        let odd =
            read(r#"{"choices":[{"message":{"content":"ab"},"logprobs":{"content":[{"token":"ab"}]}}]}"#, Wire::OpenAi);
        assert!(odd.logprobs.cut && odd.logprobs.mean_within(0, 2).is_none());
        // More tokens than kept: cut, no figure.
        let mut many = TokenLogprobs::default();
        for _ in 0..=LLM_SCORED_TOKENS_MAX {
            many.push(Some(1), Some(-1.0));
        }
        assert!(many.cut && many.mean_within(0, 10).is_none());
    }

    #[test]
    fn think_blocks_move_to_reasoning() {
        let mut a = acc();
        a.push_content("  <think>\nplan it\n</think>\n\n<act>x</act>").unwrap();
        split_think(&mut a);
        assert_eq!((a.content_str(), a.reasoning_str()), ("<act>x</act>", Some("plan it")));
        let mut a = acc();
        a.push_content("only closing</think><act>y</act>").unwrap();
        split_think(&mut a);
        assert_eq!((a.content_str(), a.reasoning_str()), ("<act>y</act>", Some("only closing")));
        let mut a = acc();
        a.push_content("<think>cut by length").unwrap();
        split_think(&mut a);
        assert_eq!((a.content_str(), a.outcome()), ("", Outcome::ReasoningOnly));
        let mut a = acc();
        a.push_content("<think></think><act>z</act>").unwrap();
        split_think(&mut a);
        assert_eq!((a.content_str(), a.reasoning_str()), ("<act>z</act>", None));
        let mut a = acc();
        a.push_content("no think <think> here").unwrap();
        split_think(&mut a);
        assert_eq!(a.content_str(), "no think <think> here");
    }

    #[test]
    fn reasoning_is_cut_not_failed() {
        let mut a = Accumulator::new(8, 5);
        a.push_reasoning("abcé");
        a.push_reasoning("é");
        assert_eq!(a.reasoning.as_str(), Some("abcé"));
        assert!(a.reasoning_cut);
        assert_eq!(a.push_content("123456789").unwrap_err().code(), Code::CapacityExceeded);
    }

    #[test]
    fn content_of_the_wrong_type_is_an_error_not_an_empty_reply() {
        let mut doc = Document::with_capacity(64, 1024);
        for (content, text) in [
            ("\"hi\"", Some("hi")),
            ("null", Some("")),
            ("[{\"text\":\"a\"}]", Some("a")),
            ("42", None),
            ("{}", None),
            ("true", None),
        ] {
            let body = format!(r#"{{"choices":[{{"message":{{"content":{content}}}}}]}}"#);
            doc.parse(body.as_bytes()).unwrap();
            let mut a = acc();
            let got = apply(doc.root(), Wire::OpenAi, 200, &mut a, &Redactor::none());
            match text {
                Some(t) => assert_eq!((got.unwrap(), a.content_str()), (false, t), "{content}"),
                None => {
                    let e = got.unwrap_err();
                    assert_eq!(e.code(), Code::LlmError, "{content}");
                    assert!(e.message().contains("message content that is a JSON"), "{e}");
                }
            }
        }
    }

    #[test]
    fn text_buffers_that_are_not_text_are_reported() {
        let mut a = acc();
        a.push_content("aé").unwrap();
        assert!(a.check_text().is_ok());
        a.content.truncate(2);
        assert_eq!(a.check_text().unwrap_err().code(), Code::Internal);
    }

    #[test]
    fn non_json_error_bodies_are_quoted() {
        let mut doc = Document::with_capacity(64, 1024);
        let e = server_error(500, b"Internal Server Error\n\n  trace", &mut doc, &Redactor::none());
        assert_eq!(e.code(), Code::LlmError);
        assert!(e.message().ends_with("answered 500: Internal Server Error trace"), "{}", e);
        let e = server_error(503, b"", &mut doc, &Redactor::none());
        assert_eq!(e.code(), Code::LlmUnavailable);
        assert!(e.message().contains("(empty body)"));
    }

    #[test]
    fn the_key_is_redacted_before_the_message_is_cut() {
        let key = "sk-Q7wX2mR9pL4vK8nB3cZ6hT1yF5gJ0dSa";
        let r = Redactor::new(key.as_bytes());
        let mut doc = Document::with_capacity(64, 4096);
        // Decoded from an escape: the raw body holds no run of the key.
        let body = format!(r#"{{"error":{{"message":"bad {}","type":"{}"}}}}"#, key.replacen('Q', "\\u0051", 1), key);
        let e = server_error(401, body.as_bytes(), &mut doc, &r);
        assert!(
            e.message().ends_with("answered 401 [[REDACTED]] (check the API key named by api_key_env): bad [REDACTED]"),
            "{}",
            e
        );
        // A message long enough to be cut inside the key: the marker is cut instead.
        for pad in 150..240 {
            let body = format!(r#"{{"error":"{} Bearer {} end"}}"#, "x".repeat(pad), key);
            let e = server_error(500, body.as_bytes(), &mut doc, &r);
            assert!(!e.message().contains(&key[..12]) && !e.message().contains(&key[20..]), "{}", e);
        }
        let mut acc = acc();
        acc.push_content(&key[..10]).unwrap();
        acc.push_content(&format!("{} and {}", &key[10..], &key[3..15])).unwrap();
        acc.push_reasoning(key);
        acc.redact(&r);
        assert_eq!((acc.content_str(), acc.reasoning_str()), ("[REDACTED] and [REDACTED]", Some("[REDACTED]")));
    }
}
