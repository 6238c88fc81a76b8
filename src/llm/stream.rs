//! Streamed replies, decoded as they arrive: Server-Sent Events (OpenAI-compatible servers, and
//! llama.cpp's native `/completion`) and newline-delimited JSON (Ollama native).
//!
//! SSE (WHATWG HTML §9.2): lines end in LF, CR LF or CR; `data:` lines (one optional space
//! after the colon) accumulate an event, an empty line dispatches it, lines starting with `:`
//! are comments (llama.cpp and sse-starlette send them as keep-alive pings while a long prompt
//! is processed) and other fields (`event:`, `id:`, `retry:`) are ignored. `data: [DONE]` ends
//! the stream (llama.cpp's `/completion` sends none: its last event says `"stop": true`).
//! Events and transport chunks are independent: an event may straddle chunks, and one chunk may
//! hold several events, so bytes are gathered into a fixed line buffer first.
//! The first delta may carry `"content": null`; the last may carry only `usage`.
//!
//! NDJSON: one JSON object per line; `done: true` ends it; a mid-stream failure is a final
//! `{"error": "..."}` line while the HTTP status is already 200, and becomes the same typed
//! error as a non-streamed one.
//!
//! After each piece of text the progress callback gets the count of pieces so far (one per
//! delta, which is one token on every server observed), and the stop check is asked, so a
//! status line can show a slow model is alive and SIGTERM ends a long stream promptly.

use super::reply::Accumulator;
use super::wire::{apply, Framing, Wire};
use crate::error::Result;
use crate::fixed::FixedBuf;
use crate::http::{BodySink, Redactor};
use crate::json::Document;

/// A [`BodySink`] that decodes a streamed reply into an [`Accumulator`].
pub(crate) struct StreamSink<'a> {
    pub(crate) wire: Wire,
    pub(crate) line: &'a mut FixedBuf,
    pub(crate) data: &'a mut FixedBuf,
    pub(crate) doc: &'a mut Document,
    pub(crate) acc: &'a mut Accumulator,
    /// Redacts the key from a mid-stream error's message.
    pub(crate) redactor: &'a Redactor,
    pub(crate) progress: &'a mut dyn FnMut(u64),
    pub(crate) should_stop: &'a dyn Fn() -> bool,
    /// The end marker (`[DONE]`, `done: true`) was seen; later bytes are ignored.
    pub(crate) done: bool,
    /// The last byte seen was a CR (so a following LF belongs to the same line end).
    pub(crate) after_cr: bool,
}

impl BodySink for StreamSink<'_> {
    fn reset(&mut self) {
        self.line.clear();
        self.data.clear();
        self.acc.reset();
        self.done = false;
        self.after_cr = false;
    }

    fn write(&mut self, mut bytes: &[u8]) -> Result<()> {
        while !bytes.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                // The LF of a CRLF split across two writes.
                if let [b'\n', rest @ ..] = bytes {
                    bytes = rest;
                    continue;
                }
            }
            let eol = bytes.iter().position(|&b| b == b'\n' || b == b'\r').unwrap_or(bytes.len());
            self.push_line_bytes(crate::bytes::take(bytes, eol))?;
            match crate::bytes::skip(bytes, eol) {
                [end, rest @ ..] => {
                    self.after_cr = *end == b'\r';
                    bytes = rest;
                    self.end_line()?;
                }
                [] => bytes = &[],
            }
        }
        Ok(())
    }
}

impl StreamSink<'_> {
    fn push_line_bytes(&mut self, b: &[u8]) -> Result<()> {
        self.line.extend_from_slice(b).map_err(|_| {
            err!(
                ResponseTooLarge,
                "a streamed line is longer than {} bytes (LLM_MAX_EVENT_BYTES)",
                self.line.capacity()
            )
        })
    }

    /// Handles the complete line in `self.line`.
    fn end_line(&mut self) -> Result<()> {
        if self.done {
            self.line.clear();
            return Ok(());
        }
        match self.wire.framing() {
            Framing::Sse => self.sse_line(),
            Framing::Ndjson => {
                let r = if self.line.as_slice().trim_ascii().is_empty() { Ok(()) } else { self.dispatch_line() };
                self.line.clear();
                r
            }
        }
    }

    fn sse_line(&mut self) -> Result<()> {
        let line = self.line.as_slice();
        let r = if line.is_empty() {
            self.dispatch_data()
        } else if line.first() == Some(&b':') {
            Ok(())
        } else if let Some(value) = line.strip_prefix(b"data:") {
            let value = value.strip_prefix(b" ").unwrap_or(value);
            let sep = if self.data.is_empty() { &b""[..] } else { b"\n" };
            let (data, cap) = (&mut *self.data, self.line.capacity());
            data.extend_from_slice(sep).and_then(|_| data.extend_from_slice(value)).map_err(|_| {
                err!(ResponseTooLarge, "a streamed event is longer than {} bytes (LLM_MAX_EVENT_BYTES)", cap)
            })
        } else {
            Ok(())
        };
        self.line.clear();
        r
    }

    /// Dispatches the gathered SSE event.
    fn dispatch_data(&mut self) -> Result<()> {
        if self.data.is_empty() {
            return Ok(());
        }
        let r = if self.data.as_slice().trim_ascii() == b"[DONE]" {
            self.done = true;
            Ok(())
        } else {
            let before = self.acc.pieces;
            self.doc.parse(self.data.as_slice()).map_err(|e| e.context(format_args!("a streamed event")))?;
            let last = apply(self.doc.root(), self.wire, 200, self.acc, self.redactor)?;
            self.done |= last;
            self.after_piece(before)
        };
        self.data.clear();
        r
    }

    /// Dispatches one NDJSON line.
    fn dispatch_line(&mut self) -> Result<()> {
        let before = self.acc.pieces;
        self.doc.parse(self.line.as_slice()).map_err(|e| e.context(format_args!("a streamed line")))?;
        if apply(self.doc.root(), self.wire, 200, self.acc, self.redactor)? {
            self.done = true;
        }
        self.after_piece(before)
    }

    fn after_piece(&mut self, before: u64) -> Result<()> {
        if self.acc.pieces != before {
            (self.progress)(self.acc.pieces);
        }
        if (self.should_stop)() {
            bail!(Interrupted, "stopped while the model was streaming its reply");
        }
        Ok(())
    }

    /// Handles what is left when the body ends: a last line or event without its terminator.
    pub(crate) fn finish(&mut self) -> Result<()> {
        if !self.line.is_empty() {
            self.end_line()?;
        }
        if self.wire.framing() == Framing::Sse && !self.done {
            self.dispatch_data()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;
    use proptest::prelude::*;

    struct Parts {
        line: FixedBuf,
        data: FixedBuf,
        doc: Document,
        acc: Accumulator,
    }

    fn parts() -> Parts {
        Parts {
            line: FixedBuf::with_capacity("line", 4096),
            data: FixedBuf::with_capacity("data", 4096),
            doc: Document::with_capacity(256, 4096),
            acc: Accumulator::new(4096, 4096),
        }
    }

    /// Feeds `bytes` cut at `cuts` and returns (content, reasoning, pieces) or the error code.
    fn run(wire: Wire, bytes: &[u8], cuts: &[usize]) -> core::result::Result<(String, String, u64), Code> {
        let mut p = parts();
        let mut progress = |_n: u64| {};
        let mut sink = StreamSink {
            wire,
            line: &mut p.line,
            data: &mut p.data,
            doc: &mut p.doc,
            acc: &mut p.acc,
            redactor: &crate::http::Redactor::none(),
            progress: &mut progress,
            should_stop: &|| false,
            done: false,
            after_cr: false,
        };
        sink.reset();
        let mut at = 0;
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.push(bytes.len());
        for c in cuts {
            sink.write(&bytes[at..c]).map_err(|e| e.code())?;
            at = c;
        }
        sink.finish().map_err(|e| e.code())?;
        Ok((p.acc.content_str().to_string(), p.acc.reasoning.as_str().unwrap_or("").to_string(), p.acc.pieces))
    }

    const SSE: &str =
        ": ping\r\n\r\ndata: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\r\n\r\n\
        data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"r\u{e9}\"}}]}\n\n\
        data: {\"choices\":[{\"delta\":{\"content\":\"<a>\"}}]}\r\r\
        data: {\"choices\":[{\"delta\":{\"content\":\"\u{4e16}\u{754c}</a>\"},\"finish_reason\":\"stop\"}]}\n\n\
        data: [DONE]\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"after done\"}}]}\n\n";

    #[test]
    fn sse_multi_line_data_and_no_trailing_blank_line() {
        let multi = "data: {\"choices\":[{\"delta\":\ndata: {\"content\":\"x\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"y\"}}]}";
        assert_eq!(run(Wire::OpenAi, multi.as_bytes(), &[]).unwrap().0, "xy");
        assert_eq!(run(Wire::OpenAi, b"data: {not json}\n\n", &[]).unwrap_err(), Code::JsonInvalid);
        assert_eq!(run(Wire::Ollama, b"{\"message\":{\"content\":\"z\"},\"done\":true}", &[]).unwrap().0, "z");
    }

    proptest! {
        #[test]
        fn sse_is_independent_of_how_bytes_are_split(cuts in proptest::collection::vec(0usize..2000, 0..12)) {
            let got = run(Wire::OpenAi, SSE.as_bytes(), &cuts).unwrap();
            prop_assert_eq!(got, ("<a>\u{4e16}\u{754c}</a>".to_string(), "r\u{e9}".to_string(), 3));
        }

        #[test]
        fn ndjson_is_independent_of_how_bytes_are_split(cuts in proptest::collection::vec(0usize..500, 0..8)) {
            let s = "{\"message\":{\"content\":\"a\",\"thinking\":\"t\"},\"done\":false}\r\n\n{\"message\":{\"content\":\"\u{e9}\"},\"done\":true}\n{\"ignored\":1}\n";
            let got = run(Wire::Ollama, s.as_bytes(), &cuts).unwrap();
            prop_assert_eq!(got, ("a\u{e9}".to_string(), "t".to_string(), 3));
        }

        #[test]
        fn llama_cpp_completion_stream_ends_at_stop(cuts in proptest::collection::vec(0usize..400, 0..8)) {
            // No `[DONE]`: the piece that says `"stop": true` is the last one read.
            let s = "data: {\"content\":\"a\",\"stop\":false}\n\n\
                data: {\"content\":\"\u{e9}\",\"stop\":true,\"stop_type\":\"limit\",\"tokens_evaluated\":3}\n\n\
                data: {\"content\":\"after the end\",\"stop\":false}\n\n";
            let got = run(Wire::LlamaCpp, s.as_bytes(), &cuts).unwrap();
            prop_assert_eq!(got, ("a\u{e9}".to_string(), String::new(), 2));
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300), cuts in proptest::collection::vec(0usize..300, 0..4)) {
            let _ = run(Wire::OpenAi, &bytes, &cuts);
            let _ = run(Wire::Ollama, &bytes, &cuts);
            let _ = run(Wire::LlamaCpp, &bytes, &cuts);
        }
    }
}
