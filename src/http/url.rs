//! Endpoint URLs: `http://host[:port]/path[?query]`, IPv6 literals in brackets, and `https://`
//! recognised so that the error can say what to do about it.
//!
//! A URL is parsed once, at start-up, into fixed inline strings: host (brackets removed, for
//! name resolution), port, path with query, and the `Host` header value (brackets kept, port
//! added when it is not the scheme's default, RFC 9112 §3.2). Anything the client cannot use
//! (credentials in the URL, a fragment, a port outside 1..=65535, spaces) is a
//! `CONFIG_INVALID` error that quotes the URL, because a bad endpoint is a configuration
//! mistake the user must fix before the agent can run.

use crate::error::Result;
use crate::fixed::ArrayString;
use crate::limits::HTTP_MAX_URL_BYTES;
use core::fmt;

/// The URL scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// `http://`: the built-in client.
    Http,
    /// `https://`: only through the `curl` transport (std has no TLS).
    Https,
}

/// A parsed endpoint URL. See the module documentation.
#[derive(Clone, PartialEq, Eq)]
pub struct Url {
    scheme: Scheme,
    host: ArrayString<HTTP_MAX_URL_BYTES>,
    port: u16,
    path: ArrayString<HTTP_MAX_URL_BYTES>,
    host_header: ArrayString<HTTP_MAX_URL_BYTES>,
}

impl Url {
    /// Parses `text`; `CONFIG_INVALID` with the reason and the URL on any problem.
    pub fn parse(text: &str) -> Result<Url> {
        parse(text).map_err(|e| e.context(format_args!("endpoint URL {:?}", Clipped(text))))
    }

    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// Host name or address, without IPv6 brackets (what name resolution wants).
    pub fn host(&self) -> &str {
        self.host.as_str()
    }

    /// The port (explicit, or 80 / 443 by scheme).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Path and query, always starting with `/`.
    pub fn path(&self) -> &str {
        self.path.as_str()
    }

    /// The `Host` header value: host (IPv6 in brackets), then `:port` unless it is the default.
    pub fn host_header(&self) -> &str {
        self.host_header.as_str()
    }

    /// The same server with another path (and query), e.g. `/v1/models` beside
    /// `/v1/chat/completions`. `path` must start with `/`.
    pub fn with_path(&self, path: &str) -> Result<Url> {
        if !path.starts_with('/') || path.bytes().any(|b| b <= b' ' || b == 0x7f || b == b'#') {
            bail!(
                ConfigInvalid,
                "URL path {:?} must start with '/' and hold no spaces, controls or '#'",
                Clipped(path)
            );
        }
        let mut u = self.clone();
        u.path = ArrayString::try_from_str(path)
            .map_err(|_| err!(ConfigInvalid, "URL path is longer than {} bytes", HTTP_MAX_URL_BYTES))?;
        Ok(u)
    }

    /// Writes the URL back as text (`scheme://host-header/path`).
    pub fn write_to(&self, out: &mut dyn fmt::Write) -> fmt::Result {
        let scheme = match self.scheme {
            Scheme::Http => "http://",
            Scheme::Https => "https://",
        };
        out.write_str(scheme)?;
        out.write_str(self.host_header())?;
        out.write_str(self.path())
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_to(f)
    }
}

impl fmt::Debug for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Url({})", self)
    }
}

/// Shows at most 120 bytes of a user string in an error message.
struct Clipped<'a>(&'a str);

impl fmt::Debug for Clipped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let head = crate::bytes::str_prefix(self.0, 120);
        if head.len() < self.0.len() {
            write!(f, "{:?}...", head)
        } else {
            write!(f, "{:?}", head)
        }
    }
}

fn parse(text: &str) -> Result<Url> {
    if text.len() > HTTP_MAX_URL_BYTES {
        bail!(ConfigInvalid, "longer than {} bytes", HTTP_MAX_URL_BYTES);
    }
    if let Some(b) = text.bytes().find(|&b| b <= b' ' || b == 0x7f) {
        bail!(ConfigInvalid, "holds a space or control character (byte 0x{:02x})", b);
    }
    let (scheme, rest) = if let Some(r) = strip_prefix_ignore_case(text, "http://") {
        (Scheme::Http, r)
    } else if let Some(r) = strip_prefix_ignore_case(text, "https://") {
        (Scheme::Https, r)
    } else {
        bail!(ConfigInvalid, "must start with http:// (or https:// with the curl transport)");
    };
    if rest.contains('#') {
        bail!(ConfigInvalid, "a fragment ('#') has no meaning for an API endpoint; remove it");
    }
    // The path keeps its leading '/' or '?'; without either, all of `rest` is the authority.
    let (authority, path) = match rest.find(['/', '?']).and_then(|i| rest.split_at_checked(i)) {
        Some(split) => split,
        None => (rest, ""),
    };
    if authority.contains('@') {
        bail!(ConfigInvalid, "credentials in the URL are not supported; name an environment variable in api_key_env");
    }
    let (host, port_text) = split_host_port(authority)?;
    if host.is_empty() {
        bail!(ConfigInvalid, "the host is empty");
    }
    let default_port = match scheme {
        Scheme::Http => 80,
        Scheme::Https => 443,
    };
    let port = match port_text {
        None => default_port,
        Some(p) => parse_port(p)?,
    };
    let mut u =
        Url { scheme, host: ArrayString::new(), port, path: ArrayString::new(), host_header: ArrayString::new() };
    u.host.push_str(host)?;
    if path.starts_with('?') || path.is_empty() {
        u.path.push_str("/")?;
    }
    u.path.push_str(path)?;
    if host.contains(':') {
        u.host_header.format(format_args!("[{}]", host))?;
    } else {
        u.host_header.push_str(host)?;
    }
    if port != default_port {
        u.host_header.format(format_args!(":{}", port))?;
    }
    Ok(u)
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    if head.eq_ignore_ascii_case(prefix) {
        s.get(prefix.len()..)
    } else {
        None
    }
}

/// Splits `host[:port]` or `[v6]:port`; checks the host's characters.
fn split_host_port(authority: &str) -> Result<(&str, Option<&str>)> {
    if let Some(inner) = authority.strip_prefix('[') {
        let Some((host, after)) = inner.split_once(']') else {
            bail!(ConfigInvalid, "an IPv6 address opened with '[' is not closed with ']'");
        };
        if host.parse::<std::net::Ipv6Addr>().is_err() {
            bail!(ConfigInvalid, "{:?} is not an IPv6 address", Clipped(host));
        }
        return match after.strip_prefix(':') {
            Some(p) => Ok((host, Some(p))),
            None if after.is_empty() => Ok((host, None)),
            None => bail!(ConfigInvalid, "unexpected {:?} after the IPv6 address", Clipped(after)),
        };
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    if host.contains(':') {
        bail!(ConfigInvalid, "an IPv6 address must be written in brackets, e.g. http://[::1]:8080/v1");
    }
    if let Some(b) = host.bytes().find(|&b| !(b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')) {
        bail!(ConfigInvalid, "the host holds {:?}, which is not allowed in a host name", char::from(b));
    }
    Ok((host, port))
}

fn parse_port(p: &str) -> Result<u16> {
    if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
        bail!(ConfigInvalid, "port {:?} is not a number from 1 to 65535", Clipped(p));
    }
    match crate::bytes::parse_u32(p) {
        Some(n @ 1..=65535) => Ok(n as u16),
        _ => bail!(ConfigInvalid, "port {} is outside 1..=65535", p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    #[test]
    fn parses_host_port_path_query() {
        let u = Url::parse("http://127.0.0.1:1234/v1/chat/completions?x=1").unwrap();
        assert_eq!(u.scheme(), Scheme::Http);
        assert_eq!(u.host(), "127.0.0.1");
        assert_eq!(u.port(), 1234);
        assert_eq!(u.path(), "/v1/chat/completions?x=1");
        assert_eq!(u.host_header(), "127.0.0.1:1234");
        let u = Url::parse("HTTP://localhost").unwrap();
        assert_eq!((u.port(), u.path(), u.host_header()), (80, "/", "localhost"));
        let u = Url::parse("http://example.org:80?q").unwrap();
        assert_eq!((u.path(), u.host_header()), ("/?q", "example.org"));
        assert_eq!(u.to_string(), "http://example.org/?q");
    }

    #[test]
    fn ipv6_literals_keep_brackets_in_host_header_only() {
        let u = Url::parse("http://[::1]:8080/v1").unwrap();
        assert_eq!((u.host(), u.port(), u.path(), u.host_header()), ("::1", 8080, "/v1", "[::1]:8080"));
        let u = Url::parse("http://[fe80::1]/").unwrap();
        assert_eq!((u.host_header(), u.port()), ("[fe80::1]", 80));
        let u = Url::parse("https://[::1]/v1").unwrap();
        assert_eq!((u.scheme(), u.port()), (Scheme::Https, 443));
    }

    #[test]
    fn malformed_urls_are_config_errors() {
        for bad in [
            "",
            "ftp://x/",
            "127.0.0.1:1234/v1",
            "http://",
            "http://:80/",
            "http://host:0/",
            "http://host:65536/",
            "http://host:12a/",
            "http://host:/",
            "http://user:pw@host/",
            "http://[::1/",
            "http://[nothex]:80/",
            "http://::1:80/",
            "http://host/a b",
            "http://host/#frag",
            "http://ho%st/",
        ] {
            let e = Url::parse(bad).unwrap_err();
            assert_eq!(e.code(), Code::ConfigInvalid, "{:?}", bad);
            assert!(e.message().contains("endpoint URL"), "{}", e);
        }
        let long = format!("http://h/{}", "a".repeat(HTTP_MAX_URL_BYTES));
        assert_eq!(Url::parse(&long).unwrap_err().code(), Code::ConfigInvalid);
    }

    #[test]
    fn with_path_keeps_the_server() {
        let u = Url::parse("http://[::1]:11434/api/chat").unwrap();
        let t = u.with_path("/api/tags").unwrap();
        assert_eq!((t.host_header(), t.path()), ("[::1]:11434", "/api/tags"));
        assert!(u.with_path("api").is_err());
        assert!(u.with_path("/a b").is_err());
    }
}
