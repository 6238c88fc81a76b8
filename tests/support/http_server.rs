//! A fault-injecting HTTP/1.1 server on loopback (`127.0.0.1:0`) for the http and llm tests.
//!
//! Each test gives a script: a function from (request number, request) to an [`Action`]: answer
//! with these exact bytes (kept alive or closed after), answer in pieces with pauses (a slow
//! drip, a stream cut short), say nothing, or close at once. The server records every request
//! (method, path, headers, body) and counts connections, so tests can check what the client
//! sent and whether it reused its connection. Everything is bounded: at most
//! [`MAX_CONNECTIONS`] connections, a read timeout on each, and the server thread stops when
//! the `Server` is dropped.
//!
//! Include with `#[path = "support/http_server.rs"] mod http_server;`.
#![allow(dead_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Most connections one server accepts over its life.
pub const MAX_CONNECTIONS: usize = 200;

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
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    pub fn body_str(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap_or("<not utf-8>")
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
    /// Says nothing for this long, then closes.
    Silence(Duration),
    /// Closes at once without a byte.
    Close,
}

type Script = dyn Fn(usize, &Seen) -> Action + Send + Sync;

/// The running server. Dropping it stops the accept loop.
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

    /// Starts a server on a loopback address (`127.0.0.1:0` or `[::1]:0`); `None` if it cannot
    /// be bound (no IPv6 on this machine).
    pub fn start_on(bind: &str, script: impl Fn(usize, &Seen) -> Action + Send + Sync + 'static) -> Option<Server> {
        let listener = TcpListener::bind(bind).ok()?;
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
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

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// The requests seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
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

/// A port on which nothing listens (bound, then released).
pub fn refused_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
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
    let idle_limit = Instant::now() + Duration::from_secs(20);
    loop {
        let Some(req) = read_request(&mut stream, &mut buf, connection, stop, idle_limit) else { return };
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

/// Reads one request (head, then a Content-Length body). `None` at EOF, on stop, or when idle
/// too long.
fn read_request(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    connection: usize,
    stop: &AtomicBool,
    idle_limit: Instant,
) -> Option<Seen> {
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match stream.read(&mut tmp) {
            Ok(0) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
            Err(_) if stop.load(Ordering::Relaxed) || Instant::now() > idle_limit => return None,
            Err(_) => {}
        }
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
        match stream.read(&mut tmp) {
            Ok(0) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
            Err(_) if stop.load(Ordering::Relaxed) || Instant::now() > idle_limit => return None,
            Err(_) => {}
        }
    }
    req.body = buf.drain(..len).collect();
    Some(req)
}

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
