//! The API key never leaves the request (issue 10 "Secrets", issue 15 "Secrets cut in half").
//!
//! A loopback server echoes the bearer token back in every way a real one might: in a JSON
//! error message (401), in a plain-text 500 whose error message is cut at 240 bytes right
//! inside the key, a truncated key, a key split across two chunks of a chunked body, a key
//! hidden behind a JSON escape, and a key in the model's own reply, whole or streamed across
//! events. The real `lkjagent` binary runs against it with `--exchange-log`, and afterwards no
//! file in the data directory (memory.json, memory.json.prev, the store log, logs/, the exchange
//! log), nor stdout or stderr, holds the key or any run of 12 of its characters.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "support/loopback.rs"]
mod loopback;

#[path = "support/cli.rs"]
mod cli;
#[path = "support/temp.rs"]
mod temp;
use cli::lkjagent;
use loopback::{chunked, completion_body, json_ok, response, sse_content, Action, Server};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use temp::{set, shipped, test_config, TempDir};

/// The key: 32 random characters after the usual prefix.
const KEY: &str = "sk-Q7wX2mR9pL4vK8nB3cZ6hT1yF5gJ0dSa";
const KEY_VAR: &str = "LKJAGENT_TEST_SECRET_KEY";
/// The shortest run of the key's characters that counts as the key.
const RUN: usize = 12;

/// Where the key (or a run of it) appears in `text`, if anywhere.
fn leak(text: &[u8]) -> Option<String> {
    let key = KEY.as_bytes();
    for start in 0..=key.len() - RUN {
        let run = &key[start..start + RUN];
        if let Some(at) = text.windows(RUN).position(|w| w == run) {
            let from = at.saturating_sub(60);
            let to = (at + RUN + 60).min(text.len());
            return Some(String::from_utf8_lossy(&text[from..to]).into_owned());
        }
    }
    None
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// What a model says when all is well: think, go on.
fn good_reply(log: &str) -> Vec<u8> {
    let content = format!("<agent><next_state>commanding</next_state><think_log>{}</think_log></agent>", log);
    json_ok(&completion_body(&content, None))
}

/// Runs `lkjagent run --max-iterations <cycles> --exchange-log` against a server whose chat
/// answers are `chat(n)` for the n-th chat request; checks that the run ends and that the key
/// shows up nowhere. `tweak` edits the config text.
fn run_and_check(tag: &str, cycles: u32, tweak: impl FnOnce(&mut String), chat: fn(usize) -> Vec<u8>) {
    let chats = AtomicUsize::new(0);
    let server = Server::start(move |_, req| {
        if req.path.ends_with("/models") {
            return Action::Reply(json_ok(r#"{"object":"list","data":[{"id":"qwen/qwen3-8b","object":"model"}]}"#));
        }
        if req.path.ends_with("/chat/completions") {
            return Action::Reply(chat(chats.fetch_add(1, Ordering::Relaxed)));
        }
        Action::Reply(response("404 Not Found", &[], "not found"))
    });
    let d = TempDir::new(tag);
    let mut c = test_config(&server.url("/v1/chat/completions"));
    set(&mut c, "\"read_timeout_ms\": 20000", &format!("\"read_timeout_ms\": 20000, \"api_key_env\": \"{}\"", KEY_VAR));
    set(&mut c, "\"constrain\": \"auto\"", "\"constrain\": \"off\"");
    tweak(&mut c);
    std::fs::write(d.0.join("config.json"), c).unwrap();
    std::fs::write(d.0.join("memory.json"), shipped("memory.json")).unwrap();

    let o = lkjagent(["run", "--max-iterations", &cycles.to_string(), "--exchange-log"])
        .data(&d.0)
        .env(KEY_VAR, KEY)
        .output_within(Duration::from_secs(60));
    let (status, out, err) = (o.status, o.stdout, o.stderr);
    let shown = format!("stdout:\n{}\nstderr:\n{}", String::from_utf8_lossy(&out), String::from_utf8_lossy(&err));
    assert!(status.success(), "exit {:?}\n{}", status, shown);
    // The server did send the key, and the agent did meet the echo.
    let seen = server.seen();
    let auth = format!("Bearer {}", KEY);
    assert!(seen.iter().any(|s| s.header("authorization") == Some(auth.as_str())), "the key was not sent");
    assert!(String::from_utf8_lossy(&out).contains(&format!("{} cycle(s) done", cycles)), "{}", shown);

    if let Some(l) = leak(&out) {
        panic!("{}: the key is on stdout: ...{}...\n{}", tag, l, shown);
    }
    if let Some(l) = leak(&err) {
        panic!("{}: the key is on stderr: ...{}...\n{}", tag, l, shown);
    }
    let mut files = Vec::new();
    files_under(&d.0, &mut files);
    let names: Vec<String> = files.iter().map(|f| f.strip_prefix(&d.0).unwrap().display().to_string()).collect();
    for must in ["memory.json", "memory.json.prev", "logs/audit.jsonl"] {
        assert!(names.iter().any(|n| n == must), "{} missing: {:?}", must, names);
    }
    assert!(names.iter().any(|n| n.ends_with("exchange.jsonl")), "no exchange log: {:?}", names);
    for f in &files {
        if let Some(l) = leak(&std::fs::read(f).unwrap()) {
            panic!("{}: the key is in {}: ...{}...\n{}", tag, f.display(), l, shown);
        }
    }
    // The echo did reach what the user sees and what is kept, as the marker.
    let memory = std::fs::read_to_string(d.0.join("memory.json")).unwrap()
        + &std::fs::read_to_string(d.0.join("memory.json.prev")).unwrap();
    let redacted = format!("{}{}", String::from_utf8_lossy(&out), memory);
    assert!(redacted.contains("[REDACTED]"), "{}: no marker anywhere\n{}\n{}", tag, memory, shown);
}

/// OpenAI's shape: a 401 whose message repeats the header it refused.
#[test]
fn a_401_echoing_the_authorization_header() {
    run_and_check(
        "401",
        1,
        |_| {},
        |n| match n {
            0 => response(
                "401 Unauthorized",
                &["Content-Type: application/json"],
                &format!(
                    r#"{{"error":{{"message":"Incorrect API key provided in Authorization: Bearer {}. You can find your API key in your account.","type":"invalid_request_error","code":"invalid_api_key"}}}}"#,
                    KEY
                ),
            ),
            _ => good_reply("the server let me in"),
        },
    );
}

/// A plain-text 500 where the 240-byte cut of the error message falls inside the key, so a
/// redaction after the cut would leave 20 of its characters.
#[test]
fn a_500_whose_message_is_cut_inside_the_key() {
    run_and_check(
        "cut",
        1,
        |_| {},
        |n| match n {
            0 | 1 => {
                // "the LLM server answered 500: " is 29 bytes; the key starts at byte 217.
                let pad = "x".repeat(188 - "Authorization: Bearer ".len() - "proxy error; ".len());
                let body = format!("proxy error; {}Authorization: Bearer {} was refused upstream", pad, KEY);
                response("500 Internal Server Error", &["Content-Type: text/plain"], &body)
            }
            _ => good_reply("the proxy is back"),
        },
    );
}

/// A server that echoes only the first 20 characters of the key.
#[test]
fn a_truncated_key_is_still_the_key() {
    run_and_check(
        "truncated",
        1,
        |_| {},
        |n| match n {
            0 => response(
                "403 Forbidden",
                &["Content-Type: application/json"],
                &format!(r#"{{"error":"token {}... is not allowed here"}}"#, &KEY[..20]),
            ),
            _ => good_reply("allowed now"),
        },
    );
}

/// The key split across two chunks of a chunked error body.
#[test]
fn a_key_split_across_chunks() {
    run_and_check(
        "chunked",
        1,
        |_| {},
        |n| match n {
            0 => {
                let a = format!(r#"{{"error":{{"message":"Authorization: Bearer {}"#, &KEY[..17]);
                let b = format!(r#"{} is not valid","type":"auth"}}}}"#, &KEY[17..]);
                chunked("401 Unauthorized", "application/json", &[&a, &b])
            }
            _ => good_reply("in"),
        },
    );
}

/// A JSON encoder that escapes a character of the key (`\u0051` for `Q`): the raw bytes hold
/// no run of 12, the decoded message does.
#[test]
fn a_key_behind_a_json_escape() {
    run_and_check(
        "escaped",
        1,
        |_| {},
        |n| match n {
            0 => {
                let escaped = KEY.replacen('Q', "\\u0051", 1).replacen('K', "\\u004b", 1).replacen('F', "\\u0046", 1);
                response(
                    "401 Unauthorized",
                    &["Content-Type: application/json"],
                    &format!(r#"{{"error":{{"message":"bad key Bearer {}"}}}}"#, escaped),
                )
            }
            _ => good_reply("in"),
        },
    );
}

/// The model's own reply holds the key (a proxy that answers with the request it saw): it would
/// be kept in working memory, the exchange log and the audit trail.
#[test]
fn a_key_in_the_reply_content() {
    run_and_check(
        "content",
        2,
        |_| {},
        |n| match n {
            0 => good_reply(&format!("the request carried Authorization: Bearer {}", KEY)),
            _ => good_reply("nothing to see"),
        },
    );
}

/// A streamed reply with the key cut into deltas of 10, 10 and 15 characters, the events
/// themselves split across chunks: no piece is 12 long by itself.
#[test]
fn a_key_streamed_in_pieces() {
    run_and_check(
        "stream",
        1,
        |c| set(c, "\"stream\": false", "\"stream\": true"),
        |_| {
            let head = "<agent><next_state>commanding</next_state><think_log>saw Bearer ";
            let events = [
                sse_content(head),
                sse_content(&KEY[..10]),
                sse_content(&KEY[10..20]),
                sse_content(&KEY[20..]),
                sse_content(" in the request</think_log></agent>"),
                "data: [DONE]\n\n".to_string(),
            ];
            let all: String = events.concat();
            // Chunks of 37 bytes: every event straddles a chunk boundary.
            let pieces: Vec<&str> = all.as_bytes().chunks(37).map(|c| std::str::from_utf8(c).unwrap()).collect();
            chunked("200 OK", "text/event-stream", &pieces)
        },
    );
}
