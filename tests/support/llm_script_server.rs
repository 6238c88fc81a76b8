//! A scripted OpenAI-compatible server on loopback, for the agent's end-to-end tests.
//!
//! `POST /v1/chat/completions` is answered with the next [`Step`] of a script, in order: a
//! reply whose `choices[0].message.content` is the given text, a reply with only a `reasoning`
//! field, an HTTP error with a given status and body (for example llama.cpp's context-overflow
//! 400), or silence (the request is read and never answered, as a model that is still
//! thinking). `GET /v1/models` lists one model. Every chat request body is recorded, so a test
//! can assert on the prompt the agent sent (`prompts()` gives the last message's content, decoded
//! with the crate's own JSON reader).
//!
//! Why not `http_server.rs` (the HTTP tests' fault-injecting server): these tests need to start
//! a server on a *given* port (the "server down at start, then back" case), and that server's
//! request reader is private to it. This one is small and does only what the agent tests need.
//!
//! Bounded: at most [`MAX_CONNECTIONS`] connections, a 50 ms read poll on each, every silence
//! ends when the server is dropped, and a connection idle for 30 s is closed.
#![allow(dead_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Most connections one server accepts over its life.
pub const MAX_CONNECTIONS: usize = 100;

/// The model the server lists.
pub const MODEL: &str = "qwen/qwen3-8b";

/// The llama.cpp answer when the prompt does not fit the context.
pub const LLAMA_CPP_OVERFLOW: &str = r#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens)","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#;

/// What the server does with one chat request.
#[derive(Clone, Debug)]
pub enum Step {
    /// `200` with this `choices[0].message.content`.
    Content(String),
    /// `200` with an empty content and this `reasoning` text.
    ReasoningOnly(String),
    /// This status line (`"400 Bad Request"`) and JSON body.
    Http(&'static str, String),
    /// Reads the request and never answers (until the server is dropped or this long passes).
    Silence(Duration),
}

/// Shorthand for [`Step::Content`].
pub fn content(text: &str) -> Step {
    Step::Content(text.to_string())
}

/// A chat request as the server saw it.
#[derive(Clone, Debug)]
pub struct Request {
    pub path: String,
    pub body: String,
}

impl Request {
    /// The content of the last message (the agent's prompt, or its non-system part).
    pub fn prompt(&self) -> String {
        let mut doc = lkjagent::json::Document::with_capacity(1024, 1 << 20);
        doc.parse(self.body.as_bytes()).unwrap();
        let messages = doc.root().get("messages").unwrap();
        let last = messages.at(messages.len() - 1).unwrap();
        last.get("content").unwrap().as_str().unwrap().to_string()
    }
}

struct Shared {
    script: Vec<Step>,
    /// What to answer once the script is used up.
    fallback: Step,
    next: AtomicUsize,
    chats: Mutex<Vec<Request>>,
    models_requests: AtomicUsize,
    stop: AtomicBool,
    connections: AtomicUsize,
}

/// The running server; dropping it stops it (and ends every silence).
pub struct LlmServer {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl LlmServer {
    /// Starts on `127.0.0.1:0` with `script`; after the script, every request gets `fallback`.
    pub fn start(script: Vec<Step>, fallback: Step) -> LlmServer {
        LlmServer::start_on(0, script, fallback)
    }

    /// Starts on `127.0.0.1:port`.
    pub fn start_on(port: u16, script: Vec<Step>, fallback: Step) -> LlmServer {
        let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            script,
            fallback,
            next: AtomicUsize::new(0),
            chats: Mutex::new(Vec::new()),
            models_requests: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            connections: AtomicUsize::new(0),
        });
        let sh = shared.clone();
        let accept = std::thread::spawn(move || {
            let mut workers = Vec::new();
            while !sh.stop.load(Ordering::Relaxed) && sh.connections.load(Ordering::Relaxed) < MAX_CONNECTIONS {
                match listener.accept() {
                    Ok((stream, _)) => {
                        sh.connections.fetch_add(1, Ordering::Relaxed);
                        let sh = sh.clone();
                        workers.push(std::thread::spawn(move || serve(stream, &sh)));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
            for w in workers {
                let _ = w.join();
            }
        });
        LlmServer { addr, shared, accept: Some(accept) }
    }

    /// The chat endpoint, `http://127.0.0.1:<port>/v1/chat/completions`.
    pub fn endpoint(&self) -> String {
        format!("http://{}/v1/chat/completions", self.addr)
    }

    /// The chat requests so far, in order.
    pub fn chats(&self) -> Vec<Request> {
        self.shared.chats.lock().unwrap().clone()
    }

    /// How many chat requests have arrived.
    pub fn chat_count(&self) -> usize {
        self.shared.chats.lock().unwrap().len()
    }

    /// The prompts of the chat requests so far.
    pub fn prompts(&self) -> Vec<String> {
        self.chats().iter().map(Request::prompt).collect()
    }

    /// How many `GET /v1/models` requests have arrived.
    pub fn models_requests(&self) -> usize {
        self.shared.models_requests.load(Ordering::Relaxed)
    }

    /// Waits (at most `limit`) until `n` chat requests have arrived; whether they did.
    pub fn wait_for_chats(&self, n: usize, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if self.chat_count() >= n {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.chat_count() >= n
    }
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// A port on which nothing listens (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// An OpenAI chat-completion body with this content (and reasoning), JSON-escaped properly.
pub fn completion_body(content: &str, reasoning: Option<&str>) -> String {
    use lkjagent::json::Writer;
    let mut out = String::new();
    let mut w = Writer::compact(&mut out);
    w.begin_object().unwrap();
    w.key("id").unwrap();
    w.string("chatcmpl-test").unwrap();
    w.key("object").unwrap();
    w.string("chat.completion").unwrap();
    w.key("model").unwrap();
    w.string(MODEL).unwrap();
    w.key("choices").unwrap();
    w.begin_array().unwrap();
    w.begin_object().unwrap();
    w.key("index").unwrap();
    w.u64(0).unwrap();
    w.key("message").unwrap();
    w.begin_object().unwrap();
    w.key("role").unwrap();
    w.string("assistant").unwrap();
    w.key("content").unwrap();
    w.string(content).unwrap();
    if let Some(r) = reasoning {
        w.key("reasoning_content").unwrap();
        w.string(r).unwrap();
    }
    w.end_object().unwrap();
    w.key("finish_reason").unwrap();
    w.string("stop").unwrap();
    w.end_object().unwrap();
    w.end_array().unwrap();
    w.key("usage").unwrap();
    w.begin_object().unwrap();
    w.key("prompt_tokens").unwrap();
    w.u64(500).unwrap();
    w.key("completion_tokens").unwrap();
    w.u64(40).unwrap();
    w.end_object().unwrap();
    w.end_object().unwrap();
    w.finish().unwrap();
    out
}

fn http(status: &str, body: &str) -> Vec<u8> {
    format!("HTTP/1.1 {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}", status, body.len(), body)
        .into_bytes()
}

/// A streamed (`"stream": true`) answer: Server-Sent Events in a chunked body, the content in
/// pieces of at most 16 bytes (one delta each, cut at character boundaries), then a final
/// event with the finish reason and usage, then `[DONE]`.
fn sse(content: &str) -> Vec<u8> {
    use lkjagent::json::Writer;
    let mut events: Vec<String> = Vec::new();
    let mut rest = content;
    while !rest.is_empty() {
        let mut cut = rest.len().min(16);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        let mut e = String::new();
        let mut w = Writer::compact(&mut e);
        w.begin_object().unwrap();
        w.key("choices").unwrap();
        w.begin_array().unwrap();
        w.begin_object().unwrap();
        w.key("index").unwrap();
        w.u64(0).unwrap();
        w.key("delta").unwrap();
        w.begin_object().unwrap();
        w.key("content").unwrap();
        w.string(piece).unwrap();
        w.end_object().unwrap();
        w.key("finish_reason").unwrap();
        w.null().unwrap();
        w.end_object().unwrap();
        w.end_array().unwrap();
        w.end_object().unwrap();
        w.finish().unwrap();
        events.push(format!("data: {}\n\n", e));
    }
    events.push(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\
         \"usage\":{\"prompt_tokens\":500,\"completion_tokens\":40}}\n\n"
            .to_string(),
    );
    events.push("data: [DONE]\n\n".to_string());
    let mut r = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for e in events {
        r.extend_from_slice(format!("{:x}\r\n{}\r\n", e.len(), e).as_bytes());
    }
    r.extend_from_slice(b"0\r\n\r\n");
    r
}

fn serve(mut stream: TcpStream, sh: &Shared) {
    stream.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let Some((method, path, body)) = read_request(&mut stream, &mut buf, sh) else { return };
        if method == "GET" && path.starts_with("/v1/models") {
            sh.models_requests.fetch_add(1, Ordering::Relaxed);
            let list = format!(r#"{{"object":"list","data":[{{"id":"{}","object":"model"}}]}}"#, MODEL);
            if stream.write_all(&http("200 OK", &list)).is_err() {
                return;
            }
            continue;
        }
        if method != "POST" || !path.ends_with("/chat/completions") {
            let _ = stream.write_all(&http("404 Not Found", r#"{"error":"not found"}"#));
            continue;
        }
        sh.chats.lock().unwrap().push(Request { path, body: String::from_utf8_lossy(&body).into_owned() });
        let n = sh.next.fetch_add(1, Ordering::Relaxed);
        let step = sh.script.get(n).unwrap_or(&sh.fallback).clone();
        let streamed = body.windows(13).any(|w| w == b"\"stream\":true");
        let bytes = match step {
            Step::Content(c) if streamed => sse(&c),
            Step::Content(c) => http("200 OK", &completion_body(&c, None)),
            Step::ReasoningOnly(r) => http("200 OK", &completion_body("", Some(&r))),
            Step::Http(status, body) => http(status, &body),
            Step::Silence(d) => {
                let end = Instant::now() + d;
                while Instant::now() < end && !sh.stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5));
                }
                return;
            }
        };
        if stream.write_all(&bytes).is_err() {
            return;
        }
    }
}

/// Reads one request (head, then a Content-Length body): `None` at EOF, on stop, or after 30 s
/// without a complete request.
fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>, sh: &Shared) -> Option<(String, String, Vec<u8>)> {
    let idle_limit = Instant::now() + Duration::from_secs(30);
    let mut tmp = [0u8; 16384];
    let mut fill = |buf: &mut Vec<u8>| -> Option<()> {
        match stream.read(&mut tmp) {
            Ok(0) => None,
            Ok(n) => {
                buf.extend_from_slice(&tmp[..n]);
                Some(())
            }
            Err(_) if sh.stop.load(Ordering::Relaxed) || Instant::now() > idle_limit => None,
            Err(_) => Some(()),
        }
    };
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        fill(buf)?;
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_string();
    let path = first.next().unwrap_or("").to_string();
    let len: usize = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    buf.drain(..head_end);
    while buf.len() < len {
        fill(buf)?;
    }
    let body = buf.drain(..len).collect();
    Some((method, path, body))
}

/// The `i`-th reply of a valid 9-cycle script through every state, for long runs (allocation
/// tests, benchmarks): thinking, storage_save of a distinct key, evaluating, thinking,
/// working_memory_add, evaluating, thinking, then working_memory_remove / storage_search /
/// storage_load in turn, evaluating. No action repeats the previous one.
pub fn cycle_reply(i: usize) -> String {
    let n = i / 9;
    match i % 9 {
        0 | 3 | 6 => format!(
            "<agent><next_state>commanding</next_state><think_log>step {} of the dictionary</think_log></agent>",
            i
        ),
        1 => format!(
            "<agent><action><type>storage_save</type><tags>dictionary,term_{}</tags>\
             <value>term {}: a word with a one-sentence definition.</value></action></agent>",
            n, n
        ),
        4 => format!(
            "<agent><action><type>working_memory_add</type><tags>scratch</tags>\
             <value>scratch note {} for the next term</value></action></agent>",
            n
        ),
        7 => match n % 3 {
            0 => "<agent><action><type>working_memory_remove</type><tags>scratch</tags></action></agent>".to_string(),
            1 => "<agent><action><type>storage_search</type><tags>dictionary</tags></action></agent>".to_string(),
            _ => format!(
                "<agent><action><type>storage_load</type><tags>dictionary,term_{}</tags></action></agent>",
                n - 1
            ),
        },
        _ => format!(
            "<agent><next_state>thinking</next_state><evaluation_log>cycle {} went as planned</evaluation_log></agent>",
            i
        ),
    }
}

/// [`cycle_reply`] as one line of a `replay` provider script (JSON Lines).
pub fn cycle_reply_line(i: usize) -> String {
    use lkjagent::json::Writer;
    let mut line = String::new();
    let mut w = Writer::compact(&mut line);
    w.begin_object().unwrap();
    w.key("content").unwrap();
    w.string(&cycle_reply(i)).unwrap();
    w.end_object().unwrap();
    w.finish().unwrap();
    line.push('\n');
    line
}
