//! Reading a response head (RFC 9112 §4-§6): the status line, the header fields the client
//! acts on, and from them how the body is framed.
//!
//! The head is parsed in place from the receive buffer and nothing is stored but the handful of
//! values the client needs (status, framing, `Connection: close`, `Retry-After`, the media
//! type), so there is no header table to size. Lenient where real servers differ (header names
//! in any case, empty values, bare LF line ends as RFC 9112 §2.2 allows), strict where a
//! mistake would desynchronise the connection: conflicting `Content-Length`s, a
//! `Transfer-Encoding` that does not end in `chunked` on a kept-alive connection, obsolete line
//! folding, a malformed status line. Those are `HTTP_PROTOCOL` errors.

use crate::error::Result;
use crate::fixed::ArrayString;
use crate::limits::HTTP_MAX_HEADERS;

/// How the body of a response is delimited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// No body at all (`HEAD`, `204`, `304`).
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Until the server closes the connection.
    UntilClose,
}

/// What the client keeps of a response head.
#[derive(Clone, Copy, Debug)]
pub struct Head {
    /// Status code, 100..=999.
    pub status: u16,
    /// How the body is delimited.
    pub framing: Framing,
    /// Whether the connection must not be reused after this response.
    pub close: bool,
    /// `Retry-After` in seconds, when given as a number (dates are ignored).
    pub retry_after: Option<u64>,
    /// The `Content-Type` media type, lower-cased, without parameters (cut at 64 bytes).
    pub content_type: ArrayString<64>,
}

/// Finds the end of a head: the index just past the empty line that ends it (CRLF CRLF, or
/// bare LFs), if the bytes hold a complete head.
pub fn head_end(bytes: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(off) = bytes.get(i..)?.iter().position(|&b| b == b'\n') {
        let nl = i + off;
        // An empty line follows when the next byte is LF, or CR LF.
        match (bytes.get(nl + 1), bytes.get(nl + 2)) {
            (Some(b'\n'), _) => return Some(nl + 2),
            (Some(b'\r'), Some(b'\n')) => return Some(nl + 3),
            _ => i = nl + 1,
        }
    }
    None
}

/// Parses a complete head (as delimited by [`head_end`]). `head_request` says the request was
/// `HEAD`, whose response never has a body.
pub fn parse_head(bytes: &[u8], head_request: bool) -> Result<Head> {
    let mut lines = bytes.split(|&b| b == b'\n').map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    // `split` yields at least one piece, even of an empty head.
    let Some(status_line) = lines.next() else { bail!(HttpProtocol, "the response head has no status line") };
    let (status, minor) = parse_status_line(status_line)?;
    let mut head = Head {
        status,
        framing: Framing::UntilClose,
        close: minor == 0,
        retry_after: None,
        content_type: ArrayString::new(),
    };
    let mut content_length: Option<u64> = None;
    let mut transfer_encoding = false;
    let mut chunked_last = false;
    let mut count = 0usize;
    let mut keep_alive_token = false;
    let mut close_token = false;
    for line in lines {
        if line.is_empty() {
            break;
        }
        count += 1;
        if count > HTTP_MAX_HEADERS {
            bail!(HttpProtocol, "the response has more than {} header fields (HTTP_MAX_HEADERS)", HTTP_MAX_HEADERS);
        }
        if line.first().is_some_and(|&b| b == b' ' || b == b'\t') {
            bail!(HttpProtocol, "obsolete header line folding (a line starting with whitespace) is not accepted");
        }
        let mut parts = line.splitn(2, |&b| b == b':');
        let (Some(name), Some(value)) = (parts.next(), parts.next()) else {
            bail!(HttpProtocol, "header line {} has no ':': {:?}", count, Shown(line));
        };
        if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
            bail!(HttpProtocol, "header line {} has an invalid field name {:?}", count, Shown(name));
        }
        let value = trim(value);
        if crate::bytes::eq_fold(name, b"content-length") {
            let n = parse_decimal(value)
                .ok_or_else(|| err!(HttpProtocol, "Content-Length {:?} is not a decimal number", Shown(value)))?;
            if content_length.is_some_and(|c| c != n) {
                bail!(HttpProtocol, "two different Content-Length values ({} and {})", content_length.unwrap_or(0), n);
            }
            content_length = Some(n);
        } else if crate::bytes::eq_fold(name, b"transfer-encoding") {
            transfer_encoding = true;
            // The last coding listed (across repeated fields) decides whether the body is chunked.
            if let Some(last) = value.split(|&b| b == b',').map(trim).rfind(|c| !c.is_empty()) {
                chunked_last = crate::bytes::eq_fold(last, b"chunked");
            }
        } else if crate::bytes::eq_fold(name, b"connection") {
            for token in value.split(|&b| b == b',').map(trim) {
                if crate::bytes::eq_fold(token, b"close") {
                    head.close = true;
                    close_token = true;
                } else if crate::bytes::eq_fold(token, b"keep-alive") {
                    keep_alive_token = true;
                }
            }
        } else if crate::bytes::eq_fold(name, b"retry-after") {
            head.retry_after = parse_decimal(value);
        } else if crate::bytes::eq_fold(name, b"content-type") {
            let media = trim(before(value, b';'));
            head.content_type.clear();
            for &b in media.iter().take(64) {
                let _ = head.content_type.push(char::from(b.to_ascii_lowercase()).min('~'));
            }
        }
    }
    // HTTP/1.1 connections persist unless the server says `close`; HTTP/1.0 ones only when
    // the server says `keep-alive` (RFC 9112 §9.3).
    if minor == 0 && keep_alive_token && !close_token {
        head.close = false;
    }
    head.framing = if head_request || status == 204 || status == 304 || (100..200).contains(&status) {
        Framing::Empty
    } else if transfer_encoding {
        // RFC 9112 §6.1/§6.3: Transfer-Encoding overrides Content-Length, and a message that
        // carried both must not be followed by another on the same connection; a coding other
        // than chunked last means the body runs until close.
        if content_length.is_some() || !chunked_last {
            head.close = true;
        }
        if chunked_last {
            Framing::Chunked
        } else {
            Framing::UntilClose
        }
    } else if let Some(n) = content_length {
        Framing::Length(n)
    } else {
        head.close = true;
        Framing::UntilClose
    };
    Ok(head)
}

/// `HTTP/1.x SP 3DIGIT [SP reason]` -> (status, minor version).
fn parse_status_line(line: &[u8]) -> Result<(u16, u8)> {
    let bad = || err!(HttpProtocol, "malformed status line {:?} (expected \"HTTP/1.1 200 OK\")", Shown(line));
    let rest = line.strip_prefix(b"HTTP/1.").ok_or_else(bad)?;
    let (minor, rest) = match rest.split_first() {
        Some((b'0', rest)) => (0, rest),
        Some((b'1', rest)) => (1, rest),
        _ => return Err(bad()),
    };
    let rest = rest.strip_prefix(b" ").ok_or_else(bad)?;
    let digits = rest.get(..3).ok_or_else(bad)?;
    if !digits.iter().all(u8::is_ascii_digit) || digits.first() == Some(&b'0') {
        return Err(bad());
    }
    match rest.get(3) {
        None | Some(b' ') => {}
        _ => return Err(bad()),
    }
    let status = digits.iter().fold(0u16, |n, &d| n * 10 + u16::from(d - b'0'));
    Ok((status, minor))
}

/// Parses a chunk-size line (RFC 9112 §7.1): hex digits, then optional extensions after `;`
/// (ignored). Returns the size.
pub fn parse_chunk_size(line: &[u8]) -> Result<u64> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let hex = trim(before(line, b';'));
    let bad = || err!(HttpProtocol, "invalid chunk size line {:?}", Shown(line));
    if hex.is_empty() || hex.len() > 15 {
        return Err(bad());
    }
    let mut n: u64 = 0;
    for &b in hex {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return Err(bad()),
        };
        n = n * 16 + u64::from(d);
    }
    Ok(n)
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `v` without the optional whitespace (spaces and tabs, RFC 9110 §5.6.3) around it.
fn trim(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// `v` up to its first `delim`, or all of it when it has none.
fn before(v: &[u8], delim: u8) -> &[u8] {
    crate::bytes::take(v, v.iter().position(|&b| b == delim).unwrap_or(v.len()))
}

/// A non-empty run of at most 18 decimal digits (no overflow possible).
fn parse_decimal(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 18 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0')))
}

/// Shows at most 80 bytes of wire data in an error message, lossily decoded.
pub(crate) struct Shown<'a>(pub(crate) &'a [u8]);

impl core::fmt::Debug for Shown<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let cut = self.0.get(..80).unwrap_or(self.0);
        f.write_str("\"")?;
        for chunk in cut.utf8_chunks() {
            for c in chunk.valid().chars() {
                write!(f, "{}", c.escape_debug())?;
            }
            for b in chunk.invalid() {
                write!(f, "\\x{:02x}", b)?;
            }
        }
        f.write_str(if cut.len() < self.0.len() { "\"..." } else { "\"" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    fn head(text: &str) -> Result<Head> {
        let b = text.as_bytes();
        let end = head_end(b).expect("complete head");
        parse_head(&b[..end], false)
    }

    #[test]
    fn finds_head_end_with_crlf_or_lf() {
        assert_eq!(head_end(b"HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody"), Some(25));
        assert_eq!(head_end(b"HTTP/1.1 200 OK\nA: b\n\nbody"), Some(22));
        assert_eq!(head_end(b"HTTP/1.1 200 OK\r\nA: b\r\n"), None);
        assert_eq!(head_end(b""), None);
    }

    #[test]
    fn content_length_chunked_and_close_framing() {
        let h = head("HTTP/1.1 200 OK\r\ncontent-length: 12\r\nContent-type: application/json; charset=utf-8\r\n\r\n")
            .unwrap();
        assert_eq!((h.status, h.framing, h.close), (200, Framing::Length(12), false));
        assert_eq!(h.content_type.as_str(), "application/json");
        let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
        assert_eq!((h.framing, h.close), (Framing::Chunked, false));
        let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 5\r\n\r\n").unwrap();
        assert_eq!((h.framing, h.close), (Framing::Chunked, true));
        let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n").unwrap();
        assert_eq!((h.framing, h.close), (Framing::UntilClose, true));
        let h = head("HTTP/1.0 200 OK\r\n\r\n").unwrap();
        assert_eq!((h.framing, h.close), (Framing::UntilClose, true));
        let h = head("HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n").unwrap();
        assert!(h.close);
        let h = head("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n").unwrap();
        assert_eq!(h.framing, Framing::Empty);
        let h = head(
            "HTTP/1.1 429 Too Many\r\nRetry-After: 7\r\nAccess-Control-Allow-Origin: \r\nContent-Length: 0\r\n\r\n",
        )
        .unwrap();
        assert_eq!((h.status, h.retry_after), (429, Some(7)));
    }

    #[test]
    fn protocol_errors() {
        for bad in [
            "garbage\r\n\r\n",
            "HTTP/2 200 OK\r\n\r\n",
            "HTTP/1.1 20 OK\r\n\r\n",
            "HTTP/1.1 2000\r\n\r\n",
            "HTTP/1.1 099 x\r\n\r\n",
            "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
            "HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
        ] {
            assert_eq!(head(bad).unwrap_err().code(), Code::HttpProtocol, "{:?}", bad);
        }
        let many = format!("HTTP/1.1 200 OK\r\n{}\r\n", "X: y\r\n".repeat(HTTP_MAX_HEADERS + 1));
        assert_eq!(head(&many).unwrap_err().code(), Code::HttpProtocol);
        let same = head("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n").unwrap();
        assert_eq!(same.framing, Framing::Length(3));
    }

    #[test]
    fn chunk_sizes() {
        assert_eq!(parse_chunk_size(b"1a").unwrap(), 26);
        assert_eq!(parse_chunk_size(b"FF;name=value\r").unwrap(), 255);
        assert_eq!(parse_chunk_size(b"0").unwrap(), 0);
        for bad in [&b""[..], b"xyz", b"-1", b"1234567890abcdef0", b";ext"] {
            assert_eq!(parse_chunk_size(bad).unwrap_err().code(), Code::HttpProtocol);
        }
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_heads_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            if let Some(end) = head_end(&bytes) {
                proptest::prop_assert!(end <= bytes.len());
                let _ = parse_head(&bytes[..end], false);
            }
            let _ = parse_head(&bytes, true);
            let _ = parse_chunk_size(&bytes);
        }

        #[test]
        fn arbitrary_urls_never_panic(text in "\\PC{0,80}", tail in "[a-z0-9:/\\[\\]@?#.%-]{0,40}") {
            let _ = crate::http::Url::parse(&text);
            let _ = crate::http::Url::parse(&format!("http://{}", tail));
        }
    }
}
