//! The HTTP/1.1 client against a real loopback server with injected faults: each framing,
//! keep-alive and its failure modes, timeouts, caps, retries, stop requests, and the curl
//! transport. Every case ends in the documented typed error or a successful retry, within the
//! configured time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "support/loopback.rs"]
mod loopback;

use lkjagent::error::Code;
use lkjagent::http::{BodySink, HttpClient, HttpSettings, Method, Request, RetryPolicy, Transport, Url};
use loopback::{chunked, free_port, json_ok, response, Action, Server};
use std::time::{Duration, Instant};

fn settings() -> HttpSettings {
    HttpSettings {
        connect_timeout: Duration::from_millis(500),
        read_timeout: Duration::from_millis(300),
        retry: RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(2),
            max_delay: Duration::from_millis(10),
        },
        ..HttpSettings::default()
    }
}

fn get(url: &Url) -> Request<'_> {
    Request { method: Method::Get, url, content_type: None, accept: "application/json", body: b"", resend_500: true }
}

fn post<'a>(url: &'a Url, body: &'a [u8]) -> Request<'a> {
    Request {
        method: Method::Post,
        url,
        content_type: Some("application/json"),
        accept: "application/json",
        body,
        resend_500: true,
    }
}

const NO_STOP: &dyn Fn() -> bool = &|| false;

/// Sends one request and returns (status, body, attempts) or the error code and message.
fn fetch(client: &mut HttpClient, req: &Request<'_>) -> Result<(u16, String, u32), (Code, String)> {
    match client.send(req, None, NO_STOP) {
        Ok(r) => Ok((r.status, String::from_utf8_lossy(r.body).into_owned(), r.attempts)),
        Err(e) => Err((e.code(), e.message().to_string())),
    }
}

#[test]
fn content_length_keep_alive_and_request_headers() {
    let server = Server::always(json_ok("{\"ok\":true}"));
    let url = Url::parse(&server.url("/v1/chat/completions?x=1")).unwrap();
    let mut client = HttpClient::new(settings()).unwrap();
    client.set_bearer("sk-test-123").unwrap();
    for _ in 0..3 {
        let (status, body, attempts) = fetch(&mut client, &post(&url, b"{\"a\":1}")).unwrap();
        assert_eq!((status, body.as_str(), attempts), (200, "{\"ok\":true}", 1));
    }
    assert_eq!(server.connections(), 1, "the connection is reused");
    assert_eq!(client.connections_opened(), 1);
    let seen = server.seen();
    assert_eq!(seen.len(), 3);
    let r = &seen[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/v1/chat/completions?x=1"));
    assert_eq!(r.header("host"), Some(format!("127.0.0.1:{}", server.addr.port()).as_str()));
    assert_eq!(r.header("content-length"), Some("7"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("accept"), Some("application/json"));
    assert!(r.header("user-agent").unwrap().starts_with("lkjagent/"));
    assert_eq!(r.header("authorization"), Some("Bearer sk-test-123"));
    assert_eq!(r.body_str(), "{\"a\":1}");
    let debug = format!("{:?}", client);
    assert!(!debug.contains("sk-test-123") && debug.contains("redacted"), "{}", debug);
}

#[test]
fn chunked_with_extensions_trailers_and_split_writes() {
    let body = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n";
    let pieces: Vec<(Duration, Vec<u8>)> = body.chunks(3).map(|c| (Duration::from_millis(1), c.to_vec())).collect();
    let server = Server::start(move |n, _| {
        if n == 0 {
            Action::Reply(chunked("200 OK", "text/plain", &["abc", "", "def"][..1]))
        } else {
            Action::Pieces(pieces.clone())
        }
    });
    let url = Url::parse(&server.url("/")).unwrap();
    let mut client = HttpClient::new(settings()).unwrap();
    assert_eq!(fetch(&mut client, &get(&url)).unwrap().1, "abc");
    assert_eq!(fetch(&mut client, &get(&url)).unwrap().1, "hello, world");
    assert_eq!(server.connections(), 1, "a chunked body keeps the connection reusable");
}

#[test]
fn close_delimited_and_interim_responses() {
    let server = Server::start(|n, _| {
        match n {
        0 => Action::ReplyClose(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close".to_vec()),
        _ => Action::Reply(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
                .to_vec(),
        ),
    }
    });
    let url = Url::parse(&server.url("/")).unwrap();
    let mut client = HttpClient::new(settings()).unwrap();
    assert_eq!(fetch(&mut client, &get(&url)).unwrap().1, "until close");
    assert_eq!(fetch(&mut client, &get(&url)).unwrap().1, "ok");
    assert_eq!(server.connections(), 2, "a close-delimited body ends its connection");
}

#[test]
fn connection_refused_is_unavailable_after_bounded_retries() {
    let url = Url::parse(&format!("http://127.0.0.1:{}/v1", free_port())).unwrap();
    let mut client = HttpClient::new(settings()).unwrap();
    let t = Instant::now();
    let (code, msg) = fetch(&mut client, &get(&url)).unwrap_err();
    assert_eq!(code, Code::LlmUnavailable, "{}", msg);
    assert!(msg.contains("3 attempts") && msg.contains("is it running"), "{}", msg);
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn silence_times_out_per_read() {
    let server = Server::start(|_, _| Action::Silence(Duration::from_secs(3)));
    let url = Url::parse(&server.url("/")).unwrap();
    let mut s = settings();
    s.retry.max_retries = 1;
    let mut client = HttpClient::new(s).unwrap();
    let t = Instant::now();
    let (code, msg) = fetch(&mut client, &get(&url)).unwrap_err();
    assert_eq!(code, Code::LlmTimeout, "{}", msg);
    assert!(msg.contains("300 ms"), "{}", msg);
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(600) && took < Duration::from_secs(3), "{:?}", took);
    assert_eq!(server.seen().len(), 2, "the timeout was retried once");
}

#[test]
fn slow_drip_within_the_read_timeout_succeeds() {
    let bytes = response("200 OK", &[], "drip, drip, drip");
    let pieces: Vec<(Duration, Vec<u8>)> = bytes.chunks(4).map(|c| (Duration::from_millis(30), c.to_vec())).collect();
    let server = Server::start(move |_, _| Action::Pieces(pieces.clone()));
    let url = Url::parse(&server.url("/")).unwrap();
    let mut client = HttpClient::new(settings()).unwrap();
    let t = Instant::now();
    let (status, body, attempts) = fetch(&mut client, &get(&url)).unwrap();
    assert_eq!((status, body.as_str(), attempts), (200, "drip, drip, drip", 1));
    assert!(t.elapsed() > Duration::from_millis(300), "the whole answer took longer than one read timeout");
}

#[test]
fn framing_faults_are_protocol_errors() {
    let cases: Vec<(Vec<u8>, Code, &str)> = vec![
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort".to_vec(), Code::HttpProtocol, "5 of 10 body bytes"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\nabc".to_vec(),
            Code::HttpProtocol,
            "3 of 10 bytes of a chunk",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n".to_vec(),
            Code::HttpProtocol,
            "chunk size",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY\r\n0\r\n\r\n".to_vec(),
            Code::HttpProtocol,
            "CRLF",
        ),
        (b"garbage\r\n\r\n".to_vec(), Code::HttpProtocol, "status line"),
        (b"ICY 200 OK\r\n\r\n".to_vec(), Code::HttpProtocol, "status line"),
        (b"HTTP/1.1 200 OK\r\nContent-Le".to_vec(), Code::HttpProtocol, "inside the response head"),
    ];
    for (bytes, code, words) in cases {
        let b = bytes.clone();
        let server = Server::start(move |_, _| Action::ReplyClose(b.clone()));
        let url = Url::parse(&server.url("/")).unwrap();
        let mut client = HttpClient::new(settings()).unwrap();
        let (got, msg) = fetch(&mut client, &get(&url)).unwrap_err();
        assert_eq!(got, code, "{:?}: {}", String::from_utf8_lossy(&bytes), msg);
        assert!(msg.contains(words), "{:?}: {}", String::from_utf8_lossy(&bytes), msg);
        assert_eq!(server.seen().len(), 1, "protocol errors are not retried");
    }
}

#[test]
fn oversize_head_and_body_are_refused_before_buffering() {
    let big_head =
        format!("HTTP/1.1 200 OK\r\nX-Big: {}\r\nContent-Length: 0\r\n\r\n", "a".repeat(20_000)).into_bytes();
    let big_length = b"HTTP/1.1 200 OK\r\nContent-Length: 5000000000\r\n\r\nxx".to_vec();
    let big_chunk = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n100000\r\nxx".to_vec();
    let big_close = format!("HTTP/1.0 200 OK\r\n\r\n{}", "b".repeat(5000)).into_bytes();
    for bytes in [big_head, big_length, big_chunk, big_close] {
        let b = bytes.clone();
        let server = Server::start(move |_, _| Action::ReplyClose(b.clone()));
        let url = Url::parse(&server.url("/")).unwrap();
        let mut client = HttpClient::new(HttpSettings { max_body_bytes: 4096, ..settings() }).unwrap();
        let (code, msg) = fetch(&mut client, &get(&url)).unwrap_err();
        assert_eq!(code, Code::ResponseTooLarge, "{}", msg);
    }
}

#[test]
fn server_errors_are_retried_and_client_errors_are_not() {
    // 500 then 503 (loading) then 200: success on the third attempt.
    let server = Server::start(|n, _| match n {
        0 => {
            Action::Reply(response("500 Internal Server Error", &["Content-Type: text/plain"], "Internal Server Error"))
        }
        1 => Action::Reply(response(
            "503 Service Unavailable",
            &[],
            r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#,
        )),
        _ => Action::Reply(json_ok("{}")),
    });
    let url = Url::parse(&server.url("/")).unwrap();
    let mut client = HttpClient::new(settings()).unwrap();
    assert_eq!(fetch(&mut client, &get(&url)).unwrap(), (200, "{}".to_string(), 3));

    // A 503 that never ends: the last answer is returned with its body once retries are spent.
    let server = Server::always(response("503 Service Unavailable", &[], "busy"));
    let url = Url::parse(&server.url("/")).unwrap();
    assert_eq!(fetch(&mut client, &get(&url)).unwrap(), (503, "busy".to_string(), 3));

    // 429 honours Retry-After (1 s here), then succeeds.
    let server = Server::start(|n, _| match n {
        0 => Action::Reply(response("429 Too Many Requests", &["Retry-After: 1"], "slow down")),
        _ => Action::Reply(json_ok("{}")),
    });
    let url = Url::parse(&server.url("/")).unwrap();
    let t = Instant::now();
    assert_eq!(fetch(&mut client, &get(&url)).unwrap().2, 2);
    assert!(t.elapsed() >= Duration::from_millis(950), "{:?}", t.elapsed());

    // 400 and 404 are answered at once.
    for status in ["400 Bad Request", "404 Not Found"] {
        let server = Server::always(response(status, &[], "{\"detail\":\"Not Found\"}"));
        let url = Url::parse(&server.url("/")).unwrap();
        let (code, body, attempts) = fetch(&mut client, &get(&url)).unwrap();
        assert_eq!((code / 100, attempts), (4, 1));
        assert!(body.contains("Not Found"));
        assert_eq!(server.seen().len(), 1);
    }
}

#[test]
fn kept_alive_connection_closed_by_server_is_resent_once() {
    // The server answers, then drops the idle connection without saying so (as llama.cpp does
    // after 5 s): the next request reads EOF before any byte and goes out again, transparently.
    let server = Server::start(|n, _| match n {
        1 => Action::Close,
        _ => Action::Reply(json_ok("{}")),
    });
    let url = Url::parse(&server.url("/")).unwrap();
    let mut client = HttpClient::new(settings()).unwrap();
    assert_eq!(fetch(&mut client, &get(&url)).unwrap().2, 1);
    assert_eq!(fetch(&mut client, &get(&url)).unwrap(), (200, "{}".to_string(), 1));
    assert_eq!(server.connections(), 2);
    assert_eq!(server.seen().len(), 3);

    // The server closes right after answering, without saying so: the next request finds the
    // connection dead (EOF or reset) and is resent on a fresh one.
    let server = Server::start(|_, _| Action::ReplyClose(json_ok("{}")));
    let url = Url::parse(&server.url("/")).unwrap();
    let mut client = HttpClient::new(settings()).unwrap();
    for _ in 0..3 {
        assert_eq!(fetch(&mut client, &get(&url)).unwrap(), (200, "{}".to_string(), 1));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(server.connections(), 3);

    // Connection: close is honoured: a fresh connection for the next request.
    let server = Server::start(|_, _| Action::ReplyClose(response("200 OK", &["Connection: close"], "x")));
    let url = Url::parse(&server.url("/")).unwrap();
    let mut client = HttpClient::new(settings()).unwrap();
    for _ in 0..3 {
        assert_eq!(fetch(&mut client, &get(&url)).unwrap(), (200, "x".to_string(), 1));
    }
    assert_eq!(server.connections(), 3);
    assert_eq!(server.seen().len(), 3, "no request was sent on a closed connection");
}

#[test]
fn stop_request_cuts_a_wait_short() {
    let server = Server::start(|_, _| Action::Silence(Duration::from_secs(5)));
    let url = Url::parse(&server.url("/")).unwrap();
    let mut client = HttpClient::new(HttpSettings { read_timeout: Duration::from_secs(60), ..settings() }).unwrap();
    let start = Instant::now();
    let stop = move || start.elapsed() > Duration::from_millis(100);
    let t = Instant::now();
    let e = client.send(&get(&url), None, &stop).unwrap_err();
    assert_eq!(e.code(), Code::Interrupted);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
}

struct Collect(Vec<Vec<u8>>, usize);
impl BodySink for Collect {
    fn reset(&mut self) {
        self.0.clear();
        self.1 += 1;
    }
    fn write(&mut self, data: &[u8]) -> lkjagent::error::Result<()> {
        self.0.push(data.to_vec());
        Ok(())
    }
}

#[test]
fn streamed_bodies_go_to_the_sink_and_errors_to_the_buffer() {
    let server = Server::start(|n, _| match n {
        0 => Action::Pieces(vec![
            (Duration::ZERO, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n".to_vec()),
            (Duration::from_millis(20), b"3\r\nabc\r\n0\r\n\r\n".to_vec()),
        ]),
        _ => Action::Reply(response("400 Bad Request", &[], "{\"error\":\"bad\"}")),
    });
    let url = Url::parse(&server.url("/")).unwrap();
    let mut client = HttpClient::new(settings()).unwrap();
    let mut sink = Collect(Vec::new(), 0);
    let r = client.send(&post(&url, b"{}"), Some(&mut sink), NO_STOP).unwrap();
    assert!(r.streamed && r.body.is_empty());
    assert_eq!(sink.0.concat(), b"data: abc");
    assert!(sink.0.len() >= 2, "pieces arrive as they are decoded");
    let r = client.send(&post(&url, b"{}"), Some(&mut sink), NO_STOP).unwrap();
    assert_eq!((r.status, r.streamed, r.body), (400, false, &b"{\"error\":\"bad\"}"[..]));
}

#[test]
fn https_needs_the_curl_transport() {
    let url = Url::parse("https://127.0.0.1:9/v1").unwrap();
    let mut client = HttpClient::new(settings()).unwrap();
    let (code, msg) = fetch(&mut client, &get(&url)).unwrap_err();
    assert_eq!(code, Code::ConfigInvalid);
    assert!(msg.contains("TLS") && msg.contains("curl"), "{}", msg);
}

#[test]
fn bearer_from_missing_env_is_a_config_error_without_the_value() {
    let mut client = HttpClient::new(settings()).unwrap();
    let e = client.set_bearer_from_env("LKJAGENT_TEST_SURELY_UNSET_VAR").unwrap_err();
    assert_eq!(e.code(), Code::ConfigInvalid);
    assert!(e.message().contains("LKJAGENT_TEST_SURELY_UNSET_VAR"));
    assert_eq!(client.set_bearer("two words").unwrap_err().code(), Code::ConfigInvalid);
}

fn have_curl() -> bool {
    std::process::Command::new("curl").arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn curl_transport_round_trip() {
    if !have_curl() {
        eprintln!("curl not installed: curl transport test skipped");
        return;
    }
    let server = Server::start(|n, _| match n {
        0 => Action::Reply(response("503 Service Unavailable", &[], "loading")),
        1 => Action::Reply(chunked("200 OK", "application/json", &["{\"a\":", "\"line\\nbreak\"}"])),
        _ => Action::Reply(response("404 Not Found", &[], "{\"detail\":\"Not Found\"}")),
    });
    let url = Url::parse(&server.url("/v1/chat/completions")).unwrap();
    let mut client = HttpClient::new(HttpSettings { transport: Transport::Curl, ..settings() }).unwrap();
    client.set_bearer("sk-curl-secret").unwrap();
    let body = "{\"q\":\"quote \\\" backslash \\\\ newline \\n tab \\t é\"}";
    let (status, got, attempts) = fetch(&mut client, &post(&url, body.as_bytes())).unwrap();
    assert_eq!((status, got.as_str(), attempts), (200, "{\"a\":\"line\\nbreak\"}", 2));
    let seen = server.seen();
    assert_eq!(seen[1].body_str(), body, "the body arrives byte for byte");
    assert_eq!(seen[1].header("authorization"), Some("Bearer sk-curl-secret"));
    assert!(seen[1].header("user-agent").unwrap().starts_with("lkjagent/"));
    let (status, got, _) = fetch(&mut client, &get(&url)).unwrap();
    assert_eq!(status, 404);
    assert!(got.contains("Not Found"));

    let refused = Url::parse(&format!("http://127.0.0.1:{}/v1", free_port())).unwrap();
    assert_eq!(fetch(&mut client, &get(&refused)).unwrap_err().0, Code::LlmUnavailable);

    // A stop request kills curl while it waits.
    let silent = Server::start(|_, _| Action::Silence(Duration::from_secs(5)));
    let url = Url::parse(&silent.url("/")).unwrap();
    let mut client = HttpClient::new(HttpSettings {
        transport: Transport::Curl,
        read_timeout: Duration::from_secs(30),
        ..settings()
    })
    .unwrap();
    let start = Instant::now();
    let e = client.send(&get(&url), None, &move || start.elapsed() > Duration::from_millis(200)).unwrap_err();
    assert_eq!(e.code(), Code::Interrupted);
    assert!(start.elapsed() < Duration::from_secs(3), "{:?}", start.elapsed());

    // curl's own read timeout (speed-time, whole seconds) ends a silent answer as LLM_TIMEOUT.
    let mut client = HttpClient::new(HttpSettings {
        transport: Transport::Curl,
        read_timeout: Duration::from_secs(1),
        retry: RetryPolicy { max_retries: 0, ..RetryPolicy::default() },
        ..settings()
    })
    .unwrap();
    assert_eq!(fetch(&mut client, &get(&url)).unwrap_err().0, Code::LlmTimeout);
}

#[test]
fn ipv6_loopback_literal() {
    let Some(server) = Server::start_on("[::1]:0", |_, _| Action::Reply(json_ok("{\"v6\":true}"))) else {
        eprintln!("no IPv6 loopback here: test skipped");
        return;
    };
    let url = Url::parse(&format!("http://[::1]:{}/v1/models", server.addr.port())).unwrap();
    let mut client = HttpClient::new(settings()).unwrap();
    assert_eq!(fetch(&mut client, &get(&url)).unwrap().1, "{\"v6\":true}");
    assert_eq!(server.seen()[0].header("host"), Some(format!("[::1]:{}", server.addr.port()).as_str()));
}

/// Nothing the client hands on holds the bearer token (or 12 characters of it): bodies, however
/// they are framed and split, streamed bodies, and the wire bytes quoted in protocol errors.
#[test]
fn the_bearer_token_is_redacted_from_everything_handed_on() {
    const KEY: &str = "sk-Q7wX2mR9pL4vK8nB3cZ6hT1yF5gJ0dSa";
    let leaks = |text: &[u8]| (0..=KEY.len() - 12).any(|i| text.windows(12).any(|w| w == &KEY.as_bytes()[i..i + 12]));
    let echo = format!("{{\"error\":\"Authorization: Bearer {}\"}}", KEY);
    let (a, b) = echo.split_at(30);
    let chunked_echo = chunked("401 Unauthorized", "application/json", &[a, b]);
    let dripped: Vec<(Duration, Vec<u8>)> =
        chunked_echo.chunks(5).map(|c| (Duration::from_millis(1), c.to_vec())).collect();
    let plain = response("401 Unauthorized", &["Content-Type: application/json"], &echo);
    let plain_too = plain.clone();
    let server = Server::start(move |n, _| match n {
        0 => Action::Reply(plain.clone()),
        1 => Action::Reply(json_ok("{\"ok\":true}")),
        2 => Action::Pieces(dripped.clone()),
        _ => Action::Reply(plain_too.clone()),
    });
    let url = Url::parse(&server.url("/v1/chat/completions")).unwrap();
    let mut client = HttpClient::new(settings()).unwrap();
    client.set_bearer(KEY).unwrap();
    let want = "{\"error\":\"Authorization: Bearer [REDACTED]\"}";
    let (status, body, _) = fetch(&mut client, &post(&url, b"{}")).unwrap();
    assert_eq!((status, body.as_str()), (401, want));
    // The framing was read before redaction: the next answer on the connection is intact.
    let (status, body, _) = fetch(&mut client, &post(&url, b"{}")).unwrap();
    assert_eq!((status, body.as_str()), (200, "{\"ok\":true}"));
    assert_eq!(server.connections(), 1);
    // Split across chunks, and the chunks across reads.
    let (status, body, _) = fetch(&mut client, &post(&url, b"{}")).unwrap();
    assert_eq!((status, body.as_str()), (401, want));

    // A 2xx body streamed to a sink, in pieces of 7 bytes.
    let sse = format!("data: {{\"x\":\"{}\"}}\n\n", KEY);
    let dripped: Vec<(Duration, Vec<u8>)> = chunked("200 OK", "text/event-stream", &[&sse])
        .chunks(7)
        .map(|c| (Duration::from_millis(1), c.to_vec()))
        .collect();
    let server = Server::start(move |_, _| Action::Pieces(dripped.clone()));
    let url = Url::parse(&server.url("/")).unwrap();
    let mut sink = Collect(Vec::new(), 0);
    let r = client.send(&post(&url, b"{}"), Some(&mut sink), NO_STOP).unwrap();
    assert!(r.streamed);
    assert_eq!(String::from_utf8(sink.0.concat()).unwrap(), "data: {\"x\":\"[REDACTED]\"}\n\n");

    // Wire bytes quoted in errors: a header line, a chunk size line, a head cut short.
    for bytes in [
        format!("HTTP/1.1 200 OK\r\nAuthorization Bearer {}\r\n\r\n", KEY),
        format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{}\r\n", KEY),
        format!("HTTP/1.1 200 OK\r\nX-Echo: Bearer {}", KEY),
        format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc{}\r\n0\r\n\r\n", KEY),
    ] {
        let b = bytes.clone().into_bytes();
        let server = Server::start(move |_, _| Action::ReplyClose(b.clone()));
        let url = Url::parse(&server.url("/")).unwrap();
        let (code, msg) = fetch(&mut client, &get(&url)).unwrap_err();
        assert_eq!(code, Code::HttpProtocol, "{}", msg);
        assert!(!leaks(msg.as_bytes()), "{:?}: {}", bytes, msg);
    }
}
