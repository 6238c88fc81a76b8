//! The one loopback HTTP/1.1 server of the tests: scripted, fault-injecting, on `127.0.0.1:0`
//! (or another loopback address given), never anything but loopback.
//!
//! A test gives a script: a function from (request number, request) to an [`Action`]: answer
//! with these exact bytes (kept alive or closed after), answer in pieces with pauses (a slow
//! drip, a body or a chunk cut short), say nothing for a while, or close at once. The server
//! records every request (method, path, headers, body) and counts connections, so a test can
//! check what the client sent and whether it reused its connection.
//!
//! The agent's tests want an OpenAI-compatible server instead: [`Server::llm`] runs the script
//! [`llm_script`] builds from a list of [`Step`]s: `POST …/chat/completions` gets the next step
//! (a reply with this content, streamed as SSE when the request asks for a stream, a
//! reasoning-only reply, an HTTP error, or silence), `GET /v1/models` lists [`MODEL`], anything
//! else is a 404. [`Server::chats`], [`Server::prompts`] and [`Server::wait_for_chats`] read
//! back what the agent sent.
//!
//! Everything is bounded: at most [`MAX_CONNECTIONS`] connections, a 50 ms read poll on each, a
//! connection that waits [`IDLE_LIMIT`] for a complete request is closed, and dropping the
//! `Server` ends every pause and silence and stops its threads.
//!
//! Include with `#[path = "support/loopback.rs"] mod loopback;`.
// Included by many test crates, each of which uses only some of it: without this, every crate
// would warn about the parts it does not call.
#![allow(dead_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Most connections one server accepts over its life.
pub const MAX_CONNECTIONS: usize = 200;

/// How long a connection may wait for one complete request before the server closes it.
pub const IDLE_LIMIT: Duration = Duration::from_secs(30);

/// The model the LLM script lists.
pub const MODEL: &str = "qwen/qwen3-8b";

/// The llama.cpp answer when the prompt does not fit the context.
pub const LLAMA_CPP_OVERFLOW: &str = r#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens)","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#;

// ----- the server ------------------------------------------------------------------------------

/// A request as the server saw it.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// Header lines as sent (`Name: value`).
    pub headers: Vec<String>,
    pub body: Vec<u8>,
    /// Which connection (0-based, in accept order) carried it.
    pub connection: usize,
}

impl Seen {
    /// The value of the first header called `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|h| {
            let (n, v) = h.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    pub fn body_str(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap_or("<not utf-8>")
    }

    /// An OpenAI chat request: `POST …/chat/completions`.
    pub fn is_chat(&self) -> bool {
        self.method == "POST" && self.path.ends_with("/chat/completions")
    }

    /// A model list request: `GET /v1/models`.
    pub fn is_models(&self) -> bool {
        self.method == "GET" && self.path.starts_with("/v1/models")
    }

    /// The content of a chat request's last message (the agent's prompt, or its non-system
    /// part), read with the crate's own JSON reader.
    pub fn prompt(&self) -> String {
        let mut doc = lkjagent::json::Document::with_capacity(1024, 1 << 20);
        doc.parse(&self.body).unwrap();
        let messages = doc.root().get("messages").unwrap();
        let last = messages.at(messages.len() - 1).unwrap();
        last.get("content").unwrap().as_str().unwrap().to_string()
    }
}

/// What the server does with one request.
#[derive(Clone, Debug)]
pub enum Action {
    /// Writes the bytes and keeps the connection open for the next request.
    Reply(Vec<u8>),
    /// Writes the bytes and closes the connection.
    ReplyClose(Vec<u8>),
    /// Writes each piece after its pause, then closes the connection.
    Pieces(Vec<(Duration, Vec<u8>)>),
    /// Says nothing for this long (or until the server is dropped), then closes.
    Silence(Duration),
    /// Closes at once without a byte.
    Close,
}

type Script = dyn Fn(usize, &Seen) -> Action + Send + Sync;

/// The running server. Dropping it stops the accept loop and every connection.
pub struct Server {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Seen>>>,
    connections: Arc<AtomicUsize>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    /// Starts a server on `127.0.0.1:0` that answers by `script`.
    pub fn start(script: impl Fn(usize, &Seen) -> Action + Send + Sync + 'static) -> Server {
        Server::start_on("127.0.0.1:0", script).unwrap()
    }

    /// Starts a server on a loopback address (`127.0.0.1:<port>`, `[::1]:0`); `None` if it
    /// cannot be bound (no IPv6 on this machine).
    pub fn start_on(
        bind: impl ToSocketAddrs,
        script: impl Fn(usize, &Seen) -> Action + Send + Sync + 'static,
    ) -> Option<Server> {
        let listener = TcpListener::bind(bind).ok()?;
        let addr = listener.local_addr().unwrap();
        assert!(addr.ip().is_loopback(), "the test server listens on loopback only, not {}", addr);
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(AtomicUsize::new(0));
        let script: Arc<Script> = Arc::new(script);
        let (s, q, c) = (stop.clone(), seen.clone(), connections.clone());
        let accept = std::thread::spawn(move || {
            let mut workers = Vec::new();
            while !s.load(Ordering::Relaxed) && c.load(Ordering::Relaxed) < MAX_CONNECTIONS {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let n = c.fetch_add(1, Ordering::Relaxed);
                        let (script, q, requests, s) = (script.clone(), q.clone(), requests.clone(), s.clone());
                        workers.push(std::thread::spawn(move || serve(stream, n, &*script, &q, &requests, &s)));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
            for w in workers {
                let _ = w.join();
            }
        });
        Some(Server { addr, stop, seen, connections, accept: Some(accept) })
    }

    /// A server that answers every request with the same bytes, keeping connections alive.
    pub fn always(bytes: Vec<u8>) -> Server {
        Server::start(move |_, _| Action::Reply(bytes.clone()))
    }

    /// An OpenAI-compatible server on `127.0.0.1:0` that answers chat requests by `steps` in
    /// order, then by `fallback` (see [`llm_script`]).
    pub fn llm(steps: Vec<Step>, fallback: Step) -> Server {
        Server::start(llm_script(steps, fallback))
    }

    /// `http://<addr><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// The chat endpoint, `http://<addr>/v1/chat/completions`.
    pub fn endpoint(&self) -> String {
        self.url("/v1/chat/completions")
    }

    /// The requests seen so far, in the order they were answered.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    /// The chat requests so far, in order.
    pub fn chats(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().iter().filter(|s| s.is_chat()).cloned().collect()
    }

    /// How many chat requests have arrived.
    pub fn chat_count(&self) -> usize {
        self.seen.lock().unwrap().iter().filter(|s| s.is_chat()).count()
    }

    /// The prompts of the chat requests so far.
    pub fn prompts(&self) -> Vec<String> {
        self.chats().iter().map(Seen::prompt).collect()
    }

    /// How many `GET /v1/models` requests have arrived.
    pub fn models_requests(&self) -> usize {
        self.seen.lock().unwrap().iter().filter(|s| s.is_models()).count()
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

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// A loopback port on which nothing listens (bound, then released): a connection to it is
/// refused, and a server can be started on it later.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn serve(
    mut stream: TcpStream,
    connection: usize,
    script: &Script,
    seen: &Mutex<Vec<Seen>>,
    requests: &AtomicUsize,
    stop: &AtomicBool,
) {
    stream.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let Some(req) = read_request(&mut stream, &mut buf, connection, stop) else { return };
        let n = requests.fetch_add(1, Ordering::Relaxed);
        let action = script(n, &req);
        seen.lock().unwrap().push(req);
        match action {
            Action::Reply(bytes) => {
                if stream.write_all(&bytes).is_err() {
                    return;
                }
            }
            Action::ReplyClose(bytes) => {
                let _ = stream.write_all(&bytes);
                return;
            }
            Action::Pieces(pieces) => {
                for (pause, bytes) in pieces {
                    sleep_unless(pause, stop);
                    if stream.write_all(&bytes).is_err() {
                        return;
                    }
                }
                return;
            }
            Action::Silence(d) => {
                sleep_unless(d, stop);
                return;
            }
            Action::Close => return,
        }
    }
}

fn sleep_unless(d: Duration, stop: &AtomicBool) {
    let end = Instant::now() + d;
    while Instant::now() < end && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(5).min(end.saturating_duration_since(Instant::now())));
    }
}

/// Reads one request (head, then a Content-Length body). `None` at EOF, on stop, or after
/// [`IDLE_LIMIT`] without a complete request.
fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>, connection: usize, stop: &AtomicBool) -> Option<Seen> {
    let idle_limit = Instant::now() + IDLE_LIMIT;
    let mut tmp = [0u8; 16384];
    let mut fill = |buf: &mut Vec<u8>| -> Option<()> {
        match stream.read(&mut tmp) {
            Ok(0) => None,
            Ok(n) => {
                buf.extend_from_slice(&tmp[..n]);
                Some(())
            }
            Err(_) if stop.load(Ordering::Relaxed) || Instant::now() > idle_limit => None,
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
    let headers: Vec<String> = lines.filter(|l| !l.is_empty()).map(str::to_string).collect();
    let mut req = Seen { method, path, headers, body: Vec::new(), connection };
    let len: usize = req.header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    buf.drain(..head_end);
    while buf.len() < len {
        fill(buf)?;
    }
    req.body = buf.drain(..len).collect();
    Some(req)
}

// ----- responses -------------------------------------------------------------------------------

/// A complete response with a Content-Length body and the given extra header lines.
pub fn response(status: &str, headers: &[&str], body: &str) -> Vec<u8> {
    let mut r = format!("HTTP/1.1 {}\r\n", status);
    for h in headers {
        r.push_str(h);
        r.push_str("\r\n");
    }
    r.push_str(&format!("Content-Length: {}\r\n\r\n{}", body.len(), body));
    r.into_bytes()
}

/// `200 OK` with a JSON body.
pub fn json_ok(body: &str) -> Vec<u8> {
    response("200 OK", &["Content-Type: application/json"], body)
}

/// A chunked response whose body is `pieces`, one chunk each, then the last chunk.
pub fn chunked(status: &str, content_type: &str, pieces: &[&str]) -> Vec<u8> {
    let mut r = format!("HTTP/1.1 {}\r\nContent-Type: {}\r\nTransfer-Encoding: chunked\r\n\r\n", status, content_type);
    for p in pieces {
        r.push_str(&format!("{:x}\r\n{}\r\n", p.len(), p));
    }
    r.push_str("0\r\n\r\n");
    r.into_bytes()
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

/// One Server-Sent Event of a streamed completion carrying this content delta.
pub fn sse_content(piece: &str) -> String {
    use lkjagent::json::Writer;
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
    format!("data: {}\n\n", e)
}

/// A streamed (`"stream": true`) completion: Server-Sent Events in a chunked body, the content
/// in pieces of at most 16 bytes (one delta each, cut at character boundaries), then a final
/// event with the finish reason and usage, then `[DONE]`.
pub fn streamed_completion(content: &str) -> Vec<u8> {
    let mut events: Vec<String> = Vec::new();
    let mut rest = content;
    while !rest.is_empty() {
        let mut cut = rest.len().min(16);
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        events.push(sse_content(piece));
    }
    events.push(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\
         \"usage\":{\"prompt_tokens\":500,\"completion_tokens\":40}}\n\n"
            .to_string(),
    );
    events.push("data: [DONE]\n\n".to_string());
    let events: Vec<&str> = events.iter().map(String::as_str).collect();
    chunked("200 OK", "text/event-stream", &events)
}

// ----- the LLM script --------------------------------------------------------------------------

/// What the LLM script does with one chat request.
#[derive(Clone, Debug)]
pub enum Step {
    /// `200` with this `choices[0].message.content` (streamed when the request asks).
    Content(String),
    /// `200` with an empty content and this `reasoning` text.
    ReasoningOnly(String),
    /// This status line (`"400 Bad Request"`) and JSON body.
    Http(&'static str, String),
    /// Reads the request and never answers (until the server is dropped or this long passes),
    /// as a model that is still thinking.
    Silence(Duration),
}

/// Shorthand for [`Step::Content`].
pub fn content(text: &str) -> Step {
    Step::Content(text.to_string())
}

/// The script of an OpenAI-compatible server: the n-th chat request gets `steps[n]`, or
/// `fallback` once the steps are used up; `GET /v1/models` lists [`MODEL`]; anything else is a
/// 404. Connections are kept alive.
pub fn llm_script(steps: Vec<Step>, fallback: Step) -> impl Fn(usize, &Seen) -> Action + Send + Sync + 'static {
    let chats = AtomicUsize::new(0);
    move |_, req| {
        if req.is_models() {
            let list = format!(r#"{{"object":"list","data":[{{"id":"{}","object":"model"}}]}}"#, MODEL);
            return Action::Reply(json_ok(&list));
        }
        if !req.is_chat() {
            return Action::Reply(response(
                "404 Not Found",
                &["Content-Type: application/json"],
                r#"{"error":"not found"}"#,
            ));
        }
        let n = chats.fetch_add(1, Ordering::Relaxed);
        let streamed = req.body.windows(13).any(|w| w == b"\"stream\":true");
        match steps.get(n).unwrap_or(&fallback) {
            Step::Content(c) if streamed => Action::Reply(streamed_completion(c)),
            Step::Content(c) => Action::Reply(json_ok(&completion_body(c, None))),
            Step::ReasoningOnly(r) => Action::Reply(json_ok(&completion_body("", Some(r)))),
            Step::Http(status, body) => Action::Reply(response(status, &["Content-Type: application/json"], body)),
            Step::Silence(d) => Action::Silence(*d),
        }
    }
}
