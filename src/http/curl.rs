//! The opt-in `curl` transport (`"transport": "curl"`): how lkjagent reaches an `https://`
//! endpoint without a TLS stack of its own (std has none, and the crate takes no dependencies).
//!
//! Each attempt runs the system `curl` once through `std::process::Command`. Nothing secret is
//! ever on its command line (which other users can read in `ps`): the command line is the fixed
//! `curl --disable -K -`, and everything else, URL, headers, the bearer token and the request
//! body, is written to curl's standard input as a curl config file (`-K -`), with values quoted
//! and escaped as curl's config syntax requires. `--disable` keeps a user's `~/.curlrc` out.
//!
//! Same limits as the built-in client: `connect-timeout` is the connect timeout; the per-read
//! timeout becomes `speed-limit = 1` / `speed-time = <read timeout>` (curl gives up when fewer
//! than 1 byte per second arrive for that long); the body cap is enforced on curl's output,
//! and curl is killed when it is passed. curl prints the body, then (through `write-out`) a
//! final line with the status code, which is split off. Differences, documented in docs/servers.md:
//! the whole body is read before a streaming sink sees it (progress arrives at the end),
//! and `Retry-After` is not read (the backoff applies). A stop request kills curl. This path
//! allocates (a config text per attempt, a child process): it is for remote APIs, where a
//! process spawn is noise next to the network.

use super::redact::Redactor;
use super::request::{BodySink, HttpSettings, Meta, Request, Secret};
use super::response::Shown;
use crate::bytes;
use crate::error::Result;
use crate::fixed::{ArrayString, FixedBuf};
use crate::limits::HTTP_STOP_POLL_MS;
use core::fmt::Write as _;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Checks at start-up that `curl` can be run; `CONFIG_INVALID` if not.
pub fn check_available() -> Result<()> {
    match Command::new("curl")
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => bail!(ConfigInvalid, "transport \"curl\" is configured but `curl --version` failed ({})", s),
        Err(e) => bail!(ConfigInvalid, "transport \"curl\" is configured but `curl` cannot be run: {}", e),
    }
}

/// Writes `value` as a double-quoted curl config value (`\` and `"` escaped, line breaks and
/// tabs as `\n`, `\r`, `\t`).
fn quoted(out: &mut String, value: &str) {
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The config text for one request (see the module documentation).
pub(crate) fn config_text(settings: &HttpSettings, bearer: Option<&Secret>, req: &Request<'_>) -> Result<String> {
    let Ok(body) = core::str::from_utf8(req.body) else {
        bail!(Io, "the curl transport sends UTF-8 request bodies only");
    };
    let mut c = String::with_capacity(req.body.len() + 1024);
    let mut line = |key: &str, value: &str| {
        c.push_str(key);
        c.push_str(" = ");
        quoted(&mut c, value);
        c.push('\n');
    };
    let mut url = ArrayString::<{ crate::limits::HTTP_MAX_URL_BYTES + 16 }>::new();
    let _ = req.url.write_to(&mut url);
    line("url", url.as_str());
    line("request", req.method.as_str());
    line("header", &header("Accept", req.accept)?);
    line("user-agent", super::request::USER_AGENT);
    if let Some(ct) = req.content_type {
        line("header", &header("Content-Type", ct)?);
    }
    if let Some(Secret(token)) = bearer {
        line("header", &header("Authorization", &format!("Bearer {}", token.as_str()))?);
    }
    if !req.body.is_empty() || req.method == super::Method::Post {
        // `data-raw`: the value is sent as it is (no `@file` meaning, no newline stripping).
        line("data-raw", body);
    }
    let mut n = String::new();
    let _ = write!(n, "{:.3}", settings.connect_timeout.as_secs_f64());
    line("connect-timeout", &n);
    line("speed-limit", "1");
    n.clear();
    let _ = write!(n, "{}", settings.read_timeout.as_secs().max(1));
    line("speed-time", &n);
    n.clear();
    let _ = write!(n, "{}", settings.max_body_bytes);
    line("max-filesize", &n);
    line("write-out", "\\n%{http_code}");
    c.push_str("silent\nshow-error\nno-buffer\n");
    Ok(c)
}

fn header(name: &str, value: &str) -> Result<String> {
    if value.bytes().any(|b| b < b' ' || b == 0x7f) {
        bail!(ConfigInvalid, "header {} holds a control character", name);
    }
    Ok(format!("{}: {}", name, value))
}

/// Reads curl's standard output into `body` until it ends; `true` if it passed the buffer's
/// capacity (the body cap), in which case reading stopped.
fn read_capped(out: Option<std::process::ChildStdout>, body: &mut FixedBuf) -> bool {
    let Some(mut out) = out else { return false };
    loop {
        match body.fill_with(64 * 1024, |spare| out.read(spare)) {
            Ok(Ok(0)) => return false,
            Ok(Ok(_)) => {}
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Ok(Err(_)) => return false,
            Err(_) => return true,
        }
    }
}

/// One attempt through `curl`. The body lands in `body` (or, for a `2xx` with a sink, in the
/// sink at the end).
pub(crate) fn attempt(
    settings: &HttpSettings,
    bearer: Option<&Secret>,
    redactor: &Redactor,
    req: &Request<'_>,
    body: &mut FixedBuf,
    sink: Option<&mut dyn BodySink>,
    should_stop: &dyn Fn() -> bool,
) -> Result<Meta> {
    let config = config_text(settings, bearer, req)?;
    let mut child = Command::new("curl")
        .args(["--disable", "-K", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| err!(LlmUnavailable, "cannot run curl: {}", e))?;
    if let Some(mut stdin) = child.stdin.take() {
        // curl reads the whole config before it starts; a failed write means it exited early,
        // and its exit status and message below say why.
        let _ = stdin.write_all(config.as_bytes());
    }
    drop(config);
    body.clear();
    // curl's output is read on a helper thread while this one watches `should_stop`, so a stop
    // request kills curl instead of waiting for its timeouts. The wait between checks grows
    // from 1 ms to HTTP_STOP_POLL_MS, so a fast answer is not delayed by the polling.
    let out = child.stdout.take();
    let buf = &mut *body;
    let watched = std::thread::scope(|scope| {
        let reader = scope.spawn(move || read_capped(out, buf));
        let mut pause = Duration::from_millis(1);
        loop {
            if reader.is_finished() {
                return Ok(reader.join().unwrap_or(true));
            }
            if should_stop() {
                let _ = child.kill();
                let _ = reader.join();
                return Err(err!(Interrupted, "stopped while curl was waiting for {}", req.url));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(HTTP_STOP_POLL_MS));
        }
    });
    let overflow = match watched {
        Ok(overflow) => overflow,
        Err(e) => {
            let _ = child.wait();
            return Err(e);
        }
    };
    if overflow {
        let _ = child.kill();
    }
    let mut errtext: ArrayString<200> = ArrayString::new();
    if let Some(mut err) = child.stderr.take() {
        let mut buf = [0u8; 200];
        let n = err.read(&mut buf).unwrap_or(0);
        let n = redactor.redact_in_place(buf.get_mut(..n).unwrap_or(&mut []));
        let _ = errtext.format(format_args!("{:?}", Shown(bytes::take(&buf, n).trim_ascii())));
    }
    let status = child.wait().map_err(|e| err!(Io, "waiting for curl failed: {}", e))?;
    if overflow {
        bail!(ResponseTooLarge, "the response body is larger than {} bytes", settings.max_body_bytes);
    }
    match status.code() {
        Some(0) => {}
        Some(6) => bail!(LlmUnavailable, "curl cannot resolve the host of {}: {}", req.url, errtext),
        Some(7) => bail!(LlmUnavailable, "curl cannot connect to {}: {}", req.url, errtext),
        Some(28) => bail!(LlmTimeout, "curl timed out talking to {}: {}", req.url, errtext),
        Some(52 | 55 | 56) => bail!(LlmUnavailable, "curl lost the connection to {}: {}", req.url, errtext),
        Some(63) => bail!(ResponseTooLarge, "the response body is larger than {} bytes", settings.max_body_bytes),
        Some(c) => bail!(HttpProtocol, "curl failed with exit code {} talking to {}: {}", c, req.url, errtext),
        None => bail!(LlmUnavailable, "curl was killed by a signal talking to {}", req.url),
    }
    // The last line is the status code written by `write-out` (`\n%{http_code}`); without a
    // newline, curl wrote none.
    let all = body.as_slice();
    let nl = all.iter().rposition(|&b| b == b'\n');
    let code_text = nl.map_or(&[][..], |i| bytes::skip(all, i + 1));
    let code = core::str::from_utf8(code_text)
        .ok()
        .and_then(|t| crate::bytes::parse_u32(t.trim()))
        .and_then(|n| u16::try_from(n).ok())
        .unwrap_or(0);
    if !(100..1000).contains(&code) {
        let mut shown = [0u8; 128];
        let n = code_text.len().min(shown.len());
        let got = shown.get_mut(..n).unwrap_or(&mut []);
        got.copy_from_slice(bytes::take(code_text, n));
        let n = redactor.redact_in_place(got);
        bail!(HttpProtocol, "curl reported no HTTP status for {} (got {:?})", req.url, Shown(bytes::take(&shown, n)));
    }
    body.truncate(nl.unwrap_or(0));
    // The body is redacted whole, before anyone sees it (see `super::redact`).
    let n = redactor.redact_in_place(body.as_mut_slice());
    body.truncate(n);
    if body.len() > settings.max_body_bytes {
        bail!(ResponseTooLarge, "the response body is larger than {} bytes", settings.max_body_bytes);
    }
    let streamed = match sink {
        Some(s) if (200..300).contains(&code) => {
            s.reset();
            s.write(body.as_slice())?;
            true
        }
        _ => false,
    };
    Ok(Meta { status: code, retry_after: None, content_type: ArrayString::new(), streamed })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{Method, Url};

    #[test]
    fn config_quotes_values_and_keeps_secrets_off_the_command_line() {
        let url = Url::parse("https://api.example.org/v1/chat/completions").unwrap();
        let req = Request {
            method: Method::Post,
            url: &url,
            content_type: Some("application/json"),
            accept: "application/json",
            body: b"{\"a\":\"x\\\"y\\\\z\"}",
            resend_500: true,
        };
        let secret = Secret(ArrayString::try_from_str("sk-123").unwrap());
        let c = config_text(&HttpSettings::default(), Some(&secret), &req).unwrap();
        assert!(c.contains("url = \"https://api.example.org/v1/chat/completions\"\n"));
        assert!(c.contains("header = \"Authorization: Bearer sk-123\"\n"));
        assert!(c.contains("data-raw = \"{\\\"a\\\":\\\"x\\\\\\\"y\\\\\\\\z\\\"}\"\n"));
        assert!(c.contains("connect-timeout = \"10.000\"\n"));
        assert!(c.contains("speed-time = \"600\"\n"));
        assert_eq!(format!("{:?}", secret), "<redacted>");
    }
}
