//! A hand-written HTTP/1.1 client on `std::net::TcpStream` (docs/design.md §7), and an opt-in
//! transport through the system `curl` for `https://` endpoints.
//!
//! - [`url`]: endpoint URLs (`http://host[:port]/path?query`, IPv6 literals).
//! - [`response`]: response heads and body framing.
//! - [`retry`]: what is retried, and capped exponential backoff (the wait itself is
//!   `clock::sleep_unless_stopped`, which SIGTERM cuts short).
//! - [`request`]: what a request and its answer are (settings, method, body sink), shared by
//!   both transports.
//! - [`client`]: the client (keep-alive, timeouts, caps, retries).
//! - `receive`: reading one response off the socket (heads, body framing, redaction).
//! - [`curl`]: the `curl` transport.
//! - [`redact`]: keeping the API key out of everything a server sends back.
//! - [`resolve`]: host names to addresses for the static binary (`/etc/hosts`, then DNS).

pub mod client;
pub mod curl;
mod receive;
pub mod redact;
pub mod request;
pub mod resolve;
pub mod response;
pub mod retry;
pub mod url;

pub use client::HttpClient;
pub use redact::{Redactor, StreamRedactor};
pub use request::{BodySink, HttpSettings, Method, Request, Response, Transport, USER_AGENT};
pub use retry::RetryPolicy;
pub use url::{Scheme, Url};
