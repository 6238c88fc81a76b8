//! Reading one response off the socket: the receive buffer, the heads up to a final one, and
//! the body decoded by its framing into a sink, the key redacted from every byte on the way.
//!
//! The client ([`super::client`]) writes a request, then hands its stream and reserved buffers
//! to a [`Reader`] here. Every read waits at most the per-read timeout and wakes every
//! [`HTTP_STOP_POLL_MS`](crate::limits::HTTP_STOP_POLL_MS) to ask the caller's `should_stop`;
//! every byte count is checked against its cap before the bytes are kept; nothing here
//! allocates.

use super::redact::{Redactor, StreamRedactor};
use super::request::BodySink;
use super::response::{head_end, parse_chunk_size, parse_head, Framing, Head, Shown};
use crate::bytes;
use crate::error::{Code, Error, Result};
use crate::fixed::FixedBuf;
use crate::limits::{HTTP_MAX_HEADERS, HTTP_MAX_HEAD_BYTES};
use std::io::{ErrorKind, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The receive buffer: raw bytes from the socket, `start..` not yet consumed.
pub(super) struct Rx {
    buf: FixedBuf,
    start: usize,
}

impl Rx {
    /// An empty receive buffer of `capacity` bytes, reserved now.
    pub(super) fn with_capacity(capacity: usize) -> Rx {
        Rx { buf: FixedBuf::with_capacity("HTTP receive buffer", capacity), start: 0 }
    }

    /// The bytes not yet consumed (`start` never passes the buffer's length).
    pub(super) fn data(&self) -> &[u8] {
        bytes::skip(self.buf.as_slice(), self.start)
    }

    fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.buf.len());
        if self.start == self.buf.len() {
            self.clear();
        }
    }

    pub(super) fn clear(&mut self) {
        self.buf.clear();
        self.start = 0;
    }

    /// Redacts the key from the first `n` unconsumed bytes, in place (what follows moves up),
    /// and returns their new length.
    fn redact_front(&mut self, n: usize, redactor: &Redactor) -> usize {
        if !redactor.is_active() {
            return n;
        }
        let (start, len) = (self.start, self.buf.len());
        let end = (start + n).min(len);
        let Some(front) = self.buf.as_mut_slice().get_mut(start..end) else { return n };
        let m = redactor.redact_in_place(front);
        let gap = (end - start) - m;
        if gap > 0 {
            self.buf.as_mut_slice().copy_within(end..len, start + m);
            self.buf.truncate(len - gap);
        }
        m
    }

    /// Moves unconsumed bytes to the front so the whole buffer is free for reading.
    fn compact(&mut self) {
        if self.start > 0 {
            let len = self.buf.len();
            self.buf.as_mut_slice().copy_within(self.start..len, 0);
            self.buf.truncate(len - self.start);
            self.start = 0;
        }
    }
}

/// A sink into the client's body buffer (its capacity is the body cap, checked before).
pub(super) struct BufferSink<'a> {
    pub(super) buf: &'a mut FixedBuf,
}

impl BodySink for BufferSink<'_> {
    fn reset(&mut self) {
        self.buf.clear();
    }
    fn write(&mut self, data: &[u8]) -> Result<()> {
        self.buf.extend_from_slice(data).map_err(|e| e.with_code(Code::ResponseTooLarge))
    }
}

/// A sink that redacts the key from the body before the inner sink sees it (see
/// [`super::redact`]); a key split across reads or chunks is still found.
pub(super) struct RedactingSink<'a> {
    inner: &'a mut dyn BodySink,
    redactor: &'a Redactor,
    stream: StreamRedactor,
}

impl<'a> RedactingSink<'a> {
    /// A sink that passes what `redactor` leaves of each byte on to `inner`.
    pub(super) fn new(inner: &'a mut dyn BodySink, redactor: &'a Redactor) -> RedactingSink<'a> {
        RedactingSink { inner, redactor, stream: StreamRedactor::new() }
    }

    /// Passes on what was held back at the end of the body.
    pub(super) fn finish(&mut self) -> Result<()> {
        let inner = &mut *self.inner;
        self.stream.finish(self.redactor, &mut |b| inner.write(b))
    }
}

impl BodySink for RedactingSink<'_> {
    fn reset(&mut self) {
        self.stream.reset();
        self.inner.reset();
    }
    fn write(&mut self, data: &[u8]) -> Result<()> {
        let inner = &mut *self.inner;
        self.stream.write(self.redactor, data, &mut |b| inner.write(b))
    }
}

/// Reads from the socket into the receive buffer, with the per-read timeout and stop checks.
pub(super) struct Reader<'a> {
    pub(super) stream: &'a mut TcpStream,
    pub(super) rx: &'a mut Rx,
    pub(super) read_timeout: Duration,
    pub(super) should_stop: &'a dyn Fn() -> bool,
    pub(super) got_bytes: &'a mut bool,
    pub(super) redactor: &'a Redactor,
}

impl Reader<'_> {
    /// Reads heads until a final one and consumes it: interim `1xx` answers (100 Continue,
    /// 103 Early Hints) are skipped, `101` is refused. `head_request`: the request was `HEAD`
    /// (its answer has no body whatever its headers say).
    pub(super) fn final_head(&mut self, head_request: bool) -> Result<Head> {
        loop {
            let end = loop {
                let found = head_end(self.rx.data());
                if found.unwrap_or(self.rx.data().len()) > HTTP_MAX_HEAD_BYTES {
                    bail!(
                        ResponseTooLarge,
                        "the response head is larger than {} bytes (HTTP_MAX_HEAD_BYTES)",
                        HTTP_MAX_HEAD_BYTES
                    );
                }
                if let Some(end) = found {
                    break end;
                }
                if self.read_more()? == 0 {
                    if self.rx.data().is_empty() {
                        bail!(LlmUnavailable, "the server closed the connection without answering");
                    }
                    let n = self.rx.data().len();
                    let n = self.rx.redact_front(n, self.redactor);
                    bail!(
                        HttpProtocol,
                        "the connection closed inside the response head: {:?}",
                        Shown(bytes::take(self.rx.data(), n))
                    );
                }
            };
            // Redacted before it is read: a header may echo the key, and a malformed one is
            // quoted in the error.
            let end = self.rx.redact_front(end, self.redactor);
            let head = parse_head(bytes::take(self.rx.data(), end), head_request)?;
            self.rx.consume(end);
            match head.status {
                101 => bail!(HttpProtocol, "the server switched protocols (101), which this client never asks for"),
                100..=199 => continue,
                _ => return Ok(head),
            }
        }
    }

    /// Reads more bytes; `Ok(0)` at end of stream. Waits at most the read timeout.
    fn read_more(&mut self) -> Result<usize> {
        self.rx.compact();
        let started = Instant::now();
        loop {
            let stream = &mut *self.stream;
            match self.rx.buf.fill_with(usize::MAX, |spare| stream.read(spare))? {
                Ok(n) => {
                    if n > 0 {
                        *self.got_bytes = true;
                    }
                    return Ok(n);
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {
                    if (self.should_stop)() {
                        bail!(Interrupted, "stopped while waiting for the LLM server's answer");
                    }
                    if started.elapsed() >= self.read_timeout {
                        bail!(
                            LlmTimeout,
                            "the LLM server sent nothing for {} ms (read timeout)",
                            crate::clock::millis(self.read_timeout)
                        );
                    }
                }
                Err(e) => return Err(io_error(&e, "reading the response", self.read_timeout)),
            }
        }
    }

    /// Makes sure a whole line is buffered, redacts it (it may be quoted in an error), and
    /// returns its length including the LF. Lines are at most [`HTTP_MAX_HEAD_BYTES`]; `what`
    /// names the line in errors.
    fn line(&mut self, what: &str) -> Result<usize> {
        loop {
            if let Some(i) = self.rx.data().iter().position(|&b| b == b'\n') {
                return Ok(self.rx.redact_front(i + 1, self.redactor));
            }
            if self.rx.data().len() >= HTTP_MAX_HEAD_BYTES {
                bail!(HttpProtocol, "{} is longer than {} bytes", what, HTTP_MAX_HEAD_BYTES);
            }
            if self.read_more()? == 0 {
                bail!(HttpProtocol, "the connection closed in the middle of the chunked body ({})", what);
            }
        }
    }
}

/// Decodes the body by its framing into `sink`, refusing more than `max` bytes before keeping
/// them.
pub(super) fn read_body(r: &mut Reader<'_>, framing: Framing, max: usize, sink: &mut dyn BodySink) -> Result<()> {
    let too_large =
        |n: u64| err!(ResponseTooLarge, "the response body is larger than {} bytes (at least {} bytes)", max, n);
    match framing {
        Framing::Empty => Ok(()),
        Framing::Length(n) => {
            if n > max as u64 {
                return Err(too_large(n));
            }
            let got = copy_exact(r, n, sink)?;
            if got < n {
                bail!(HttpProtocol, "the connection closed after {} of {} body bytes (Content-Length)", got, n);
            }
            Ok(())
        }
        Framing::UntilClose => {
            let mut total: u64 = 0;
            loop {
                if r.rx.data().is_empty() && r.read_more()? == 0 {
                    return Ok(());
                }
                let data = r.rx.data();
                total += data.len() as u64;
                if total > max as u64 {
                    return Err(too_large(total));
                }
                sink.write(data)?;
                let n = data.len();
                r.rx.consume(n);
            }
        }
        Framing::Chunked => {
            let mut total: u64 = 0;
            loop {
                let len = r.line("a chunk size line")?;
                let line = bytes::take(r.rx.data(), len);
                let size = parse_chunk_size(line.strip_suffix(b"\n").unwrap_or(line))?;
                r.rx.consume(len);
                if size == 0 {
                    // Trailer fields, then the empty line that ends the message; they are ignored.
                    for _ in 0..=HTTP_MAX_HEADERS {
                        let len = r.line("a trailer line")?;
                        let empty = matches!(r.rx.data().get(..len), Some(b"\n") | Some(b"\r\n"));
                        r.rx.consume(len);
                        if empty {
                            return Ok(());
                        }
                    }
                    bail!(HttpProtocol, "more than {} trailer fields", HTTP_MAX_HEADERS);
                }
                total = total.saturating_add(size);
                if total > max as u64 {
                    return Err(too_large(total));
                }
                let got = copy_exact(r, size, sink)?;
                if got < size {
                    bail!(HttpProtocol, "the connection closed after {} of {} bytes of a chunk", got, size);
                }
                let len = r.line("the line end after chunk data")?;
                if !matches!(r.rx.data().get(..len), Some(b"\n") | Some(b"\r\n")) {
                    bail!(
                        HttpProtocol,
                        "chunk data is not followed by CRLF: {:?}",
                        Shown(bytes::take(r.rx.data(), len))
                    );
                }
                r.rx.consume(len);
            }
        }
    }
}

/// Passes up to `n` body bytes to the sink; returns how many arrived before the connection
/// closed (`n` when all did).
fn copy_exact(r: &mut Reader<'_>, n: u64, sink: &mut dyn BodySink) -> Result<u64> {
    let mut left = n;
    while left > 0 {
        if r.rx.data().is_empty() && r.read_more()? == 0 {
            break;
        }
        let data = r.rx.data();
        let take = data.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        sink.write(bytes::take(data, take))?;
        r.rx.consume(take);
        left -= take as u64;
    }
    Ok(n - left)
}

/// A socket error as a typed error: timeouts are `LLM_TIMEOUT`, the rest `LLM_UNAVAILABLE`.
pub(super) fn io_error(e: &std::io::Error, doing: &str, timeout: Duration) -> Error {
    match e.kind() {
        ErrorKind::TimedOut | ErrorKind::WouldBlock => {
            err!(LlmTimeout, "{} timed out after {} ms", doing, crate::clock::millis(timeout))
        }
        _ => err!(LlmUnavailable, "{} failed: {}", doing, e),
    }
}
