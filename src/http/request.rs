//! What a request and its answer are, shared by the two ways of sending one: the client's own
//! connection ([`super::client`]) and the `curl` child process ([`super::curl`]).

use super::retry::RetryPolicy;
use super::url::Url;
use crate::error::Result;
use crate::fixed::ArrayString;
use crate::limits::{HTTP_MAX_BODY_BYTES, HTTP_MAX_TOKEN_BYTES};
use core::fmt;
use std::time::Duration;

/// The `User-Agent` sent with every request.
pub const USER_AGENT: &str = concat!("lkjagent/", env!("CARGO_PKG_VERSION"));

/// How requests reach the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Transport {
    /// The built-in HTTP/1.1 client on `std::net::TcpStream` (`http://` only).
    #[default]
    Tcp,
    /// The system `curl` program, run once per attempt (needed for `https://`). See
    /// [`super::curl`].
    Curl,
}

/// The client's settings. `Default` gives the documented defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpSettings {
    /// Longest wait for a connection to open. Default 10 s.
    pub connect_timeout: Duration,
    /// Longest silence while waiting for the next byte of a response (not for the whole
    /// response). Default 600 s: a local model can think for minutes before its first byte.
    pub read_timeout: Duration,
    /// Retries and backoff. Default: 3 retries, 100 ms base, 5 s cap.
    pub retry: RetryPolicy,
    /// Largest body accepted; at most [`HTTP_MAX_BODY_BYTES`], which is also the default.
    pub max_body_bytes: usize,
    /// How requests are sent. Default [`Transport::Tcp`].
    pub transport: Transport,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(600),
            retry: RetryPolicy::default(),
            max_body_bytes: HTTP_MAX_BODY_BYTES,
            transport: Transport::Tcp,
        }
    }
}

/// Request methods the client uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// `GET` (health probes).
    Get,
    /// `POST` (completions).
    Post,
    /// `HEAD` (no body in the response).
    Head,
}

impl Method {
    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Head => "HEAD",
        }
    }
}

/// One request.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The method.
    pub method: Method,
    /// Where to send it.
    pub url: &'a Url,
    /// `Content-Type` of the body, if there is one.
    pub content_type: Option<&'a str>,
    /// The `Accept` header.
    pub accept: &'a str,
    /// The body (empty for none; `Content-Length` is always sent for `POST`).
    pub body: &'a [u8],
    /// Whether a `500` is retried with this very request. A caller whose request would fail
    /// the same way again as it is (a seeded generation on a deterministic server) says no,
    /// and sends it again changed itself; other retried statuses and failures are retried as
    /// the policy says either way.
    pub resend_500: bool,
}

/// Where a streamed `2xx` body goes, piece by piece, as it is decoded.
pub trait BodySink {
    /// Called before the first piece of each attempt (a retried request starts over).
    fn reset(&mut self);
    /// One decoded piece of body. An error ends the request with that error.
    fn write(&mut self, data: &[u8]) -> Result<()>;
}

/// A response: the status and, unless it was streamed into a sink, the body.
#[derive(Clone, Copy, Debug)]
pub struct Response<'a> {
    /// The final status code.
    pub status: u16,
    /// The media type, lower-cased, without parameters (may be empty).
    pub content_type: &'a str,
    /// The body, when it was not given to a sink (always for non-`2xx` answers).
    pub body: &'a [u8],
    /// Whether the body went to the caller's sink.
    pub streamed: bool,
    /// Attempts made (1 when the first one answered).
    pub attempts: u32,
}

/// What one attempt learned (a `Copy` summary; the body stays in the client).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Meta {
    pub(crate) status: u16,
    pub(crate) retry_after: Option<u64>,
    pub(crate) content_type: ArrayString<64>,
    pub(crate) streamed: bool,
}

/// A bearer token: shown as `<redacted>` by `Debug`, never written anywhere but the request.
#[derive(Clone)]
pub(crate) struct Secret(pub(crate) ArrayString<HTTP_MAX_TOKEN_BYTES>);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}
