//! The HTTP/1.1 client: one kept-alive `TcpStream`, buffers reserved once, bodies decoded as
//! they arrive, and bounded retries around each request.
//!
//! One request is: write the head (and the body), read heads until a final (non-`1xx`) one,
//! then decode the body by its framing into a sink: the caller's [`BodySink`] for a `2xx`
//! answer to a streaming request (so an SSE stream is handled while it arrives), the client's
//! own body buffer otherwise (a whole reply, or a server's error message). Every byte count is
//! checked against its cap before the bytes are kept.
//!
//! Time: a connect timeout, and a per-read timeout counted from the last byte received, so a
//! model that streams slowly is never cut off while one that falls silent is. A blocked read
//! wakes every [`HTTP_STOP_POLL_MS`] to ask the caller's `should_stop`, so SIGTERM is honoured
//! within a fraction of a second even while a model thinks for minutes.
//!
//! Connections are reused. A server may close an idle kept-alive connection at any time
//! (llama.cpp after about 5 s), which the client only learns when its next request reads EOF
//! or a reset before any byte of a response; then, and only then, the request is sent once
//! more on a fresh connection without counting as a retry (RFC 9112 §9.3.1: nothing was
//! processed).
//!
//! Reading the answer off the socket (heads, body framing, redaction on the way) is
//! `receive`'s; this file opens connections, writes requests and retries them.
//!
//! Steady state: after the connection is set up, a request allocates nothing (the head is
//! formatted into a reserved buffer, the socket is read into a reserved buffer, errors are
//! inline values). `make bench` measures it.

use super::curl;
use super::receive::{io_error, read_body, BufferSink, Reader, RedactingSink, Rx};
use super::redact::Redactor;
use super::request::{BodySink, HttpSettings, Meta, Method, Request, Response, Secret, Transport, USER_AGENT};
use super::response::Framing;
use super::retry::{error_is_retryable, status_is_retryable};
use super::url::{Scheme, Url};
use crate::clock::sleep_unless_stopped;
use crate::error::{Code, Error, Result};
use crate::fixed::{ArrayString, FixedBuf};
use crate::limits::{
    HTTP_MAX_BODY_BYTES, HTTP_MAX_REQUEST_HEAD_BYTES, HTTP_MAX_TOKEN_BYTES, HTTP_RECV_BUFFER_BYTES, HTTP_STOP_POLL_MS,
};
use core::fmt;
use std::io::{ErrorKind, Write};
use std::net::TcpStream;
#[cfg(not(target_feature = "crt-static"))]
use std::net::ToSocketAddrs;
use std::time::Duration;

/// An open connection and the server it goes to.
struct Conn {
    stream: TcpStream,
    server: ArrayString<{ crate::limits::HTTP_MAX_URL_BYTES }>,
}

/// The HTTP client. See the module documentation.
pub struct HttpClient {
    settings: HttpSettings,
    bearer: Option<Secret>,
    /// Finds the bearer token in what servers send back (see [`super::redact`]).
    redactor: Redactor,
    conn: Option<Conn>,
    head: FixedBuf,
    rx: Rx,
    body: FixedBuf,
    /// Whether the current exchange has received any byte of a response.
    got_bytes: bool,
    /// New connections opened so far (for tests and figures).
    connections: u64,
    /// The media type of the last response (so a `Response` can borrow it).
    last_content_type: ArrayString<64>,
}

/// Reborrows an optional sink for a shorter time (an `Option` does not coerce by itself).
fn reborrow<'s>(sink: &'s mut Option<&mut dyn BodySink>) -> Option<&'s mut dyn BodySink> {
    match sink {
        Some(s) => Some(&mut **s),
        None => None,
    }
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("settings", &self.settings)
            .field("bearer", &self.bearer)
            .field("connected", &self.conn.is_some())
            .field("connections", &self.connections)
            .finish()
    }
}

impl HttpClient {
    /// A client with its buffers reserved. Fails with `CONFIG_INVALID` on settings it cannot
    /// honour (a zero timeout, a body cap above [`HTTP_MAX_BODY_BYTES`], `curl` missing for the
    /// curl transport).
    pub fn new(settings: HttpSettings) -> Result<HttpClient> {
        if settings.connect_timeout.is_zero() || settings.read_timeout.is_zero() {
            bail!(ConfigInvalid, "HTTP connect and read timeouts must be greater than zero");
        }
        if settings.max_body_bytes == 0 || settings.max_body_bytes > HTTP_MAX_BODY_BYTES {
            bail!(ConfigInvalid, "the HTTP body cap must be 1..={} bytes (HTTP_MAX_BODY_BYTES)", HTTP_MAX_BODY_BYTES);
        }
        if settings.transport == Transport::Curl {
            curl::check_available()?;
        }
        Ok(HttpClient {
            settings,
            bearer: None,
            redactor: Redactor::none(),
            conn: None,
            head: FixedBuf::with_capacity(
                "HTTP request head (HTTP_MAX_REQUEST_HEAD_BYTES)",
                HTTP_MAX_REQUEST_HEAD_BYTES,
            ),
            rx: Rx::with_capacity(HTTP_RECV_BUFFER_BYTES),
            body: FixedBuf::with_capacity("HTTP body buffer", settings.max_body_bytes),
            got_bytes: false,
            connections: 0,
            last_content_type: ArrayString::new(),
        })
    }

    /// The settings.
    pub fn settings(&self) -> &HttpSettings {
        &self.settings
    }

    /// Sends `Authorization: Bearer <token>` with every request, the token read now from the
    /// environment variable `var`. `CONFIG_INVALID` (naming the variable, never the value) if it
    /// is unset, empty, too long or holds characters a header cannot carry.
    pub fn set_bearer_from_env(&mut self, var: &str) -> Result<()> {
        let Some(value) = std::env::var_os(var) else {
            bail!(ConfigInvalid, "environment variable {:?} (named by api_key_env) is not set", var);
        };
        let Some(value) = value.to_str() else {
            bail!(ConfigInvalid, "environment variable {:?} (named by api_key_env) is not UTF-8", var);
        };
        self.set_bearer(value).map_err(|e| e.context(format_args!("environment variable {:?}", var)))
    }

    /// Sends `Authorization: Bearer <token>` with every request. See [`Self::set_bearer_from_env`].
    pub fn set_bearer(&mut self, token: &str) -> Result<()> {
        let token = token.trim();
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            bail!(ConfigInvalid, "the API key is empty or holds spaces or control characters");
        }
        let token = ArrayString::try_from_str(token)
            .map_err(|_| err!(ConfigInvalid, "the API key is longer than {} bytes", HTTP_MAX_TOKEN_BYTES))?;
        self.redactor = Redactor::new(token.as_bytes());
        self.bearer = Some(Secret(token));
        Ok(())
    }

    /// What finds the bearer token in text a server sent. Every response head and body the
    /// client hands on has been through it already; the caller needs it for text it decodes
    /// further (a JSON escape can hide the key from a scan of the raw bytes).
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// New TCP connections opened so far.
    pub fn connections_opened(&self) -> u64 {
        self.connections
    }

    /// Closes the kept-alive connection, if any.
    pub fn disconnect(&mut self) {
        self.conn = None;
    }

    /// Sends `req`, retrying as the policy says (see [`super::retry`]). A `2xx` body goes to
    /// `sink` when one is given; any other body is kept and returned. Every status is returned
    /// as `Ok` once retries are spent: what a `4xx`/`5xx` means is the caller's business.
    /// Errors: `LLM_UNAVAILABLE`, `LLM_TIMEOUT` (after retries), `HTTP_PROTOCOL`,
    /// `RESPONSE_TOO_LARGE`, `INTERRUPTED` (when `should_stop` said so), `CONFIG_INVALID`
    /// (`https://` without the curl transport), or the sink's own error.
    pub fn send(
        &mut self,
        req: &Request<'_>,
        mut sink: Option<&mut dyn BodySink>,
        should_stop: &dyn Fn() -> bool,
    ) -> Result<Response<'_>> {
        if req.url.scheme() == Scheme::Https && self.settings.transport != Transport::Curl {
            bail!(
                ConfigInvalid,
                "{} needs TLS, which this std-only build does not have: use an http:// endpoint \
                 (a local server or a TLS-terminating proxy), or set \"transport\": \"curl\"",
                req.url
            );
        }
        let policy = self.settings.retry;
        let mut attempt: u32 = 0;
        let meta = loop {
            if should_stop() {
                bail!(Interrupted, "stopped before sending the request to {}", req.url);
            }
            attempt += 1;
            let result = match self.settings.transport {
                Transport::Tcp => self.attempt_tcp(req, reborrow(&mut sink), should_stop),
                Transport::Curl => curl::attempt(
                    &self.settings,
                    self.bearer.as_ref(),
                    &self.redactor,
                    req,
                    &mut self.body,
                    reborrow(&mut sink),
                    should_stop,
                ),
            };
            let retries_used = attempt - 1;
            match result {
                Ok(meta)
                    if status_is_retryable(meta.status)
                        && (meta.status != 500 || req.resend_500)
                        && retries_used < policy.max_retries =>
                {
                    sleep_unless_stopped(policy.delay_after(retries_used, meta.retry_after), should_stop)?;
                }
                Ok(meta) => break meta,
                Err(e) if error_is_retryable(&e) && retries_used < policy.max_retries => {
                    sleep_unless_stopped(policy.delay(retries_used), should_stop)?;
                }
                Err(e) if error_is_retryable(&e) && attempt > 1 => {
                    return Err(e.context(format_args!("{} attempts", attempt)));
                }
                Err(e) => return Err(e),
            }
        };
        // The content type is kept in the client so the response can borrow it.
        self.last_content_type = meta.content_type;
        let body = if meta.streamed { &[][..] } else { self.body.as_slice() };
        Ok(Response {
            status: meta.status,
            content_type: self.last_content_type.as_str(),
            body,
            streamed: meta.streamed,
            attempts: attempt,
        })
    }

    /// One attempt over TCP, with the one transparent resend when a reused connection turns
    /// out to be closed before any byte of the response.
    fn attempt_tcp(
        &mut self,
        req: &Request<'_>,
        mut sink: Option<&mut dyn BodySink>,
        should_stop: &dyn Fn() -> bool,
    ) -> Result<Meta> {
        if self.conn.as_ref().is_some_and(|c| c.server.as_str() != req.url.host_header()) {
            self.conn = None;
        }
        let reused = self.conn.is_some();
        if !reused {
            self.connect(req.url)?;
        }
        let first = self.exchange(req, reborrow(&mut sink), should_stop);
        let result = match first {
            Err(e) if reused && !self.got_bytes && e.code() == Code::LlmUnavailable => {
                self.conn = None;
                self.connect(req.url)?;
                self.exchange(req, sink, should_stop)
            }
            other => other,
        };
        if result.is_err() {
            self.conn = None;
        }
        result
    }

    /// Opens a connection to `url`'s server: every resolved address in turn, each with the
    /// connect timeout.
    fn connect(&mut self, url: &Url) -> Result<()> {
        // The static binary resolves names itself (see `resolve`); the dynamic one asks the system.
        #[cfg(target_feature = "crt-static")]
        let addrs = super::resolve::lookup(url.host(), url.port()).map_err(|e| {
            err!(LlmUnavailable, "cannot resolve the LLM server's host {:?}: {}", url.host(), e.message())
        })?;
        #[cfg(not(target_feature = "crt-static"))]
        let addrs = (url.host(), url.port())
            .to_socket_addrs()
            .map_err(|e| err!(LlmUnavailable, "cannot resolve the LLM server's host {:?}: {}", url.host(), e))?;
        let mut last: Option<Error> = None;
        for addr in addrs {
            match TcpStream::connect_timeout(&addr, self.settings.connect_timeout) {
                Ok(stream) => {
                    let poll = self.settings.read_timeout.min(Duration::from_millis(HTTP_STOP_POLL_MS));
                    let setup = stream
                        .set_nodelay(true)
                        .and_then(|_| stream.set_read_timeout(Some(poll)))
                        .and_then(|_| stream.set_write_timeout(Some(self.settings.read_timeout)));
                    if let Err(e) = setup {
                        bail!(Io, "cannot set up the connection to {}: {}", url.host_header(), e);
                    }
                    let mut server = ArrayString::new();
                    server.push_str(url.host_header())?;
                    self.conn = Some(Conn { stream, server });
                    self.connections += 1;
                    return Ok(());
                }
                Err(e) if matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) => {
                    last = Some(err!(
                        LlmTimeout,
                        "connecting to the LLM server at {} timed out after {} ms",
                        addr,
                        crate::clock::millis(self.settings.connect_timeout)
                    ));
                }
                Err(e) => {
                    last = Some(err!(
                        LlmUnavailable,
                        "cannot connect to the LLM server at {} ({}): is it running?",
                        addr,
                        e
                    ));
                }
            }
        }
        Err(last.unwrap_or_else(|| err!(LlmUnavailable, "the host {:?} resolved to no address", url.host())))
    }

    /// Writes the request and reads the response on the open connection.
    fn exchange(
        &mut self,
        req: &Request<'_>,
        mut sink: Option<&mut dyn BodySink>,
        should_stop: &dyn Fn() -> bool,
    ) -> Result<Meta> {
        self.got_bytes = false;
        self.write_head(req)?;
        let Some(conn) = self.conn.as_mut() else {
            bail!(LlmUnavailable, "no connection to {}", req.url.host_header());
        };
        let stream = &mut conn.stream;
        let sent = stream.write_all(self.head.as_slice()).and_then(|_| stream.write_all(req.body));
        if let Err(e) = sent {
            return Err(io_error(&e, "sending the request", self.settings.read_timeout));
        }
        self.rx.clear();
        let mut reader = Reader {
            stream,
            rx: &mut self.rx,
            read_timeout: self.settings.read_timeout,
            should_stop,
            got_bytes: &mut self.got_bytes,
            redactor: &self.redactor,
        };
        let head = reader.final_head(req.method == Method::Head)?;
        let to_sink = (200..300).contains(&head.status) && sink.is_some();
        let max = self.settings.max_body_bytes;
        self.body.clear();
        let mut buffered = BufferSink { buf: &mut self.body };
        let inner: &mut dyn BodySink = match reborrow(&mut sink) {
            Some(s) if to_sink => s,
            _ => &mut buffered,
        };
        // Every body byte is redacted on its way to the sink, however the body is framed.
        let mut target = RedactingSink::new(inner, reader.redactor);
        target.reset();
        read_body(&mut reader, head.framing, max, &mut target)?;
        target.finish()?;
        let leftover = !reader.rx.data().is_empty();
        if head.close || leftover || head.framing == Framing::UntilClose {
            self.conn = None;
        }
        Ok(Meta {
            status: head.status,
            retry_after: head.retry_after,
            content_type: head.content_type,
            streamed: to_sink,
        })
    }

    /// Formats the request head into its reserved buffer.
    fn write_head(&mut self, req: &Request<'_>) -> Result<()> {
        let h = &mut self.head;
        h.clear();
        let r = (|| -> Result<()> {
            h.format(format_args!(
                "{} {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: {}\r\nAccept: {}\r\n",
                req.method.as_str(),
                req.url.path(),
                req.url.host_header(),
                USER_AGENT,
                req.accept
            ))?;
            if let Some(ct) = req.content_type {
                h.format(format_args!("Content-Type: {}\r\n", ct))?;
            }
            if req.method == Method::Post || !req.body.is_empty() {
                h.format(format_args!("Content-Length: {}\r\n", req.body.len()))?;
            }
            if let Some(Secret(token)) = &self.bearer {
                h.push_str("Authorization: Bearer ")?;
                h.push_str(token.as_str())?;
                h.push_str("\r\n")?;
            }
            h.push_str("\r\n")
        })();
        r.map_err(|_| {
            err!(
                CapacityExceeded,
                "the request head does not fit in {} bytes (HTTP_MAX_REQUEST_HEAD_BYTES)",
                HTTP_MAX_REQUEST_HEAD_BYTES
            )
        })
    }
}
