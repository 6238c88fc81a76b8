//! Figures for the http area: round trips per second against a loopback server that answers at
//! once, over one kept-alive connection and with a new connection per request, and heap
//! allocations per request once the connection is set up (target: zero).
//!
//! The server is a plain thread with stack buffers (it must not allocate per request either,
//! because the counting allocator counts every thread).

use lkjagent::http::{HttpClient, HttpSettings, Method, Request, Url};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

const REPLY: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 76\r\n\r\n{\"choices\":[{\"message\":{\"content\":\"<act>ok</act>\"},\"finish_reason\":\"stop\"}]}";
const BODY: &[u8] = b"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

/// Answers every request on a connection until the client closes it.
fn serve(mut s: TcpStream) {
    let mut buf = [0u8; 8192];
    let mut have = 0usize;
    loop {
        // One request: head up to CRLFCRLF, then Content-Length bytes.
        let end = loop {
            if let Some(i) = buf[..have].windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match s.read(&mut buf[have..]) {
                Ok(0) | Err(_) => return,
                Ok(n) => have += n,
            }
        };
        let head = &buf[..end];
        let len = head
            .split(|&b| b == b'\n')
            .find_map(|l| {
                let l = std::str::from_utf8(l).ok()?;
                let (n, v) = l.split_once(':')?;
                n.eq_ignore_ascii_case("content-length").then(|| v.trim().parse::<usize>().ok())?
            })
            .unwrap_or(0);
        while have < end + len {
            match s.read(&mut buf[have..]) {
                Ok(0) | Err(_) => return,
                Ok(n) => have += n,
            }
        }
        buf.copy_within(end + len..have, 0);
        have -= end + len;
        if s.write_all(REPLY).is_err() {
            return;
        }
    }
}

fn start_server() -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let _ = s.set_nodelay(true);
            serve(s);
        }
    });
    addr
}

/// Prints this area's figures.
pub fn run() {
    let addr = start_server();
    let url = Url::parse(&format!("http://{}/v1/chat/completions", addr)).unwrap();
    let req = Request {
        method: Method::Post,
        url: &url,
        content_type: Some("application/json"),
        accept: "application/json",
        body: BODY,
        resend_500: true,
    };
    let stop = || false;
    let mut client =
        HttpClient::new(HttpSettings { read_timeout: Duration::from_secs(5), ..HttpSettings::default() }).unwrap();
    let one = |client: &mut HttpClient| {
        let r = client.send(&req, None, &stop).unwrap();
        assert_eq!(r.status, 200);
        r.body.len()
    };

    // Warm up (connection set up), then count allocations over many kept-alive requests.
    for _ in 0..10 {
        one(&mut client);
    }
    let n = 2000u32;
    let before = super::allocations();
    let t = Instant::now();
    for _ in 0..n {
        one(&mut client);
    }
    let elapsed = t.elapsed();
    let allocs = super::allocations() - before;
    super::report("http_roundtrips_keepalive", f64::from(n) / elapsed.as_secs_f64(), "req/s");
    super::report("http_allocs_per_request", allocs as f64 / f64::from(n), "allocs");

    let n = 300u32;
    let t = Instant::now();
    for _ in 0..n {
        client.disconnect();
        one(&mut client);
    }
    super::report("http_roundtrips_new_connection", f64::from(n) / t.elapsed().as_secs_f64(), "req/s");

    // The server answers one connection at a time: close this one first.
    drop(client);

    // A whole LLM cycle (request body written, sent, reply parsed, think split) on a kept-alive
    // connection: allocations per completion after the first.
    let settings = lkjagent::llm::Settings {
        endpoint: format!("http://{}/v1", addr),
        stop: vec!["</act>".to_string()],
        ..lkjagent::llm::Settings::default()
    };
    let mut llm = lkjagent::llm::Client::new(&settings).unwrap();
    let prompt = lkjagent::llm::Prompt::new(Some("system"), "what next?");
    let ask = |llm: &mut lkjagent::llm::Client| {
        let c = llm.complete(&prompt, &mut |_| {}, &stop).unwrap();
        assert_eq!(c.content, "<act>ok</act>");
    };
    for _ in 0..10 {
        ask(&mut llm);
    }
    let n = 1000u32;
    let before = super::allocations();
    let t = Instant::now();
    for _ in 0..n {
        ask(&mut llm);
    }
    let elapsed = t.elapsed();
    let allocs = super::allocations() - before;
    super::report("llm_completions_keepalive", f64::from(n) / elapsed.as_secs_f64(), "req/s");
    super::report("llm_allocs_per_completion", allocs as f64 / f64::from(n), "allocs");
}
