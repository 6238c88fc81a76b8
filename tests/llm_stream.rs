//! Streamed replies (SSE and Ollama NDJSON) over real chunked HTTP, with events straddling
//! chunks, several events in one chunk, comment pings, explicit null content, mid-stream
//! errors and stop requests; and the replay provider.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "support/loopback.rs"]
mod loopback;
#[path = "support/temp.rs"]
mod temp;

use lkjagent::error::Code;
use lkjagent::http::RetryPolicy;
use lkjagent::llm::{Client, FinishReason, Outcome, Prompt, ProviderKind, Settings, Usage};
use loopback::{response, Action, Server};
use std::time::{Duration, Instant};

fn settings(endpoint: &str, provider: ProviderKind) -> Settings {
    Settings {
        provider,
        endpoint: endpoint.to_string(),
        model: "qwen3".to_string(),
        stream: true,
        connect_timeout: Duration::from_millis(500),
        read_timeout: Duration::from_millis(500),
        retry: RetryPolicy {
            max_retries: 1,
            base_delay: Duration::from_millis(2),
            max_delay: Duration::from_millis(10),
        },
        ..Settings::default()
    }
}

const PROMPT: Prompt<'static> = Prompt::new(None, "go");

/// A chunked response whose chunks are written with short pauses, so the client really sees
/// them arrive separately.
fn chunked_pieces(content_type: &str, chunks: &[&str]) -> Action {
    let mut pieces = vec![(
        Duration::ZERO,
        format!("HTTP/1.1 200 OK\r\nContent-Type: {}\r\nTransfer-Encoding: chunked\r\n\r\n", content_type).into_bytes(),
    )];
    for c in chunks {
        pieces.push((Duration::from_millis(3), format!("{:x}\r\n{}\r\n", c.len(), c).into_bytes()));
    }
    pieces.push((Duration::from_millis(3), b"0\r\n\r\n".to_vec()));
    Action::Pieces(pieces)
}

#[test]
fn sse_events_straddle_chunks_share_chunks_and_skip_pings() {
    let chunks: Vec<&str> = vec![
        ": ping - 2025-05-01 10:00:00\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"Think",
        "ing.\"},\"finish_reason\":null}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"<agent>\"},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"h\u{e9}llo\"},\"finish_reason\":null}]}\n",
        "\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"</agent>\"},\"finish_reason\":null}]}\n\n",
        ": ping\n\nevent: message\nid: 7\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4,\"total_tokens\":13}}\n\ndata: [DONE]\n\n",
    ];
    let owned: Vec<String> = chunks.iter().map(|s| s.to_string()).collect();
    let server = Server::start(move |_, _| {
        let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
        chunked_pieces("text/event-stream", &refs)
    });
    let mut client = Client::new(&settings(&server.url("/v1"), ProviderKind::OpenAi)).unwrap();
    let mut ticks = Vec::new();
    let c = client.complete(&PROMPT, &mut |n| ticks.push(n), &|| false).unwrap();
    assert_eq!(c.content, "<agent>héllo</agent>");
    assert_eq!(c.reasoning, Some("Thinking."));
    assert_eq!((c.finish_reason, c.outcome), (FinishReason::Stop, Outcome::Text));
    assert_eq!(c.usage, Some(Usage { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13, cached_tokens: None }));
    assert_eq!(ticks, vec![1, 2, 3, 4], "one progress tick per piece of text");
    let seen = &server.seen()[0];
    assert!(seen.body_str().contains("\"stream\":true"));
    assert_eq!(seen.header("accept"), Some("text/event-stream"));
}

#[test]
fn sse_byte_by_byte_with_crlf_and_no_done() {
    let stream = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"},\"finish_reason\":\"length\"}]}\r\n\r\n";
    let mut pieces = vec![(
        Duration::ZERO,
        format!("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n", stream.len())
            .into_bytes(),
    )];
    pieces.extend(stream.bytes().map(|b| (Duration::ZERO, vec![b])));
    let server = Server::start(move |_, _| Action::Pieces(pieces.clone()));
    let mut client = Client::new(&settings(&server.url("/v1"), ProviderKind::OpenAi)).unwrap();
    let c = client.complete(&PROMPT, &mut |_| {}, &|| false).unwrap();
    assert_eq!((c.content, c.finish_reason), ("ab", FinishReason::Length));
}

#[test]
fn sse_error_event_is_a_typed_error() {
    let server = Server::start(|_, _| {
        chunked_pieces(
            "text/event-stream",
            &["data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n", "data: {\"error\":{\"message\":\"request (9000 tokens) exceeds the available context size (8192 tokens)\",\"type\":\"exceed_context_size_error\"}}\n\n"],
        )
    });
    let mut client = Client::new(&settings(&server.url("/v1"), ProviderKind::OpenAi)).unwrap();
    let e = client.complete(&PROMPT, &mut |_| {}, &|| false).unwrap_err();
    assert_eq!(e.code(), Code::ContextOverflow, "{}", e);
    assert_eq!(server.seen().len(), 1);
}

#[test]
fn streaming_request_answered_with_an_error_status() {
    let server = Server::always(response(
        "400 Bad Request",
        &["Content-Type: application/json"],
        r#"{"error":{"message":"Requested tokens (9000) exceed context window of 8192","code":"context_length_exceeded"}}"#,
    ));
    let mut client = Client::new(&settings(&server.url("/v1"), ProviderKind::OpenAi)).unwrap();
    let e = client.complete(&PROMPT, &mut |_| {}, &|| false).unwrap_err();
    assert_eq!(e.code(), Code::ContextOverflow, "{}", e);
}

#[test]
fn ollama_ndjson_stream_and_mid_stream_error() {
    let lines = [
        "{\"model\":\"qwen3\",\"created_at\":\"t\",\"message\":{\"role\":\"assistant\",\"content\":\"\",\"thinking\":\"Hmm.\"},\"done\":false}\n",
        "{\"model\":\"qwen3\",\"created_at\":\"t\",\"message\":{\"role\":\"assistant\",\"content\":\"<agent>\"},\"done\":false}\n{\"model\":\"qwen3\",\"created_at\":\"t\",\"message\":{\"role\":\"assistant\",\"content\":\"ok</agent>\"},\"done\":false}\n",
        "{\"model\":\"qwen3\",\"created_at\":\"t\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done_reason\":\"stop\",\"done\":true,\"prompt_eval_count\":12,\"eval_count\":3}\n",
    ];
    let server = Server::start(move |n, _| {
        if n == 0 {
            chunked_pieces("application/x-ndjson", &lines)
        } else {
            chunked_pieces(
                "application/x-ndjson",
                &[
                    "{\"model\":\"qwen3\",\"message\":{\"role\":\"assistant\",\"content\":\"<agent>\"},\"done\":false}\n",
                    "{\"error\":\"an error was encountered while running the model: unexpected EOF\"}\n",
                ],
            )
        }
    });
    let mut client = Client::new(&settings(&server.url(""), ProviderKind::Ollama)).unwrap();
    let mut last = 0;
    let c = client.complete(&PROMPT, &mut |n| last = n, &|| false).unwrap();
    assert_eq!((c.content, c.reasoning), ("<agent>ok</agent>", Some("Hmm.")));
    assert_eq!(c.usage, Some(Usage { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15, cached_tokens: None }));
    assert_eq!((c.finish_reason, last), (FinishReason::Stop, 3));
    assert_eq!(server.seen()[0].header("accept"), Some("application/x-ndjson"));
    let e = client.complete(&PROMPT, &mut |_| {}, &|| false).unwrap_err();
    assert_eq!(e.code(), Code::LlmError);
    assert!(e.message().contains("answered 200") && e.message().contains("unexpected EOF"), "{}", e);
}

#[test]
fn stop_request_ends_a_stream() {
    let mut chunks = Vec::new();
    for _ in 0..50 {
        chunks.push("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n".to_string());
    }
    let server = Server::start(move |_, _| {
        let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
        chunked_pieces("text/event-stream", &refs)
    });
    let mut client = Client::new(&settings(&server.url("/v1"), ProviderKind::OpenAi)).unwrap();
    let seen = std::cell::Cell::new(0u64);
    let t = Instant::now();
    let e = client.complete(&PROMPT, &mut |n| seen.set(n), &|| seen.get() >= 5).unwrap_err();
    assert_eq!(e.code(), Code::Interrupted);
    assert_eq!(seen.get(), 5);
    assert!(t.elapsed() < Duration::from_secs(2));
}

/// A unique temp file holding `text`; removed by the caller.
fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let path = temp::temp_dir("llm-test").join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn replay_script_in_order_then_exhausted() {
    let script = concat!(
        "{\"content\": \"<agent>one</agent>\", \"reasoning\": \"first\", \"finish_reason\": \"stop\", \"usage\": {\"prompt_tokens\": 1, \"completion_tokens\": 2}}\n",
        "\n",
        "{\"content\": \"<think>hidden</think><agent>two</agent>\", \"finish_reason\": \"length\"}\n",
        "{\"error\": \"CONTEXT_OVERFLOW\", \"message\": \"scripted overflow\"}\n",
        "{\"content\": \"\", \"reasoning\": \"only thinking\"}\n",
        "{\"error\": \"LLM_TIMEOUT\"}",
    );
    let path = temp_file("replay.jsonl", script);
    let s = Settings { provider: ProviderKind::Replay, replay_path: Some(path.clone()), ..Settings::default() };
    let mut client = Client::new(&s).unwrap();
    let h = client.health(&|| false).unwrap();
    assert_eq!(h.models_listed, 1);
    let c = client.complete(&PROMPT, &mut |_| {}, &|| false).unwrap();
    assert_eq!((c.content, c.reasoning, c.finish_reason), ("<agent>one</agent>", Some("first"), FinishReason::Stop));
    assert_eq!(c.usage, Some(Usage { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3, cached_tokens: None }));
    let c = client.complete(&PROMPT, &mut |_| {}, &|| false).unwrap();
    assert_eq!((c.content, c.reasoning, c.finish_reason), ("<agent>two</agent>", Some("hidden"), FinishReason::Length));
    assert_eq!(c.usage, None);
    let e = client.complete(&PROMPT, &mut |_| {}, &|| false).unwrap_err();
    assert_eq!((e.code(), &*e.message()), (Code::ContextOverflow, "scripted overflow"));
    assert_eq!(client.complete(&PROMPT, &mut |_| {}, &|| false).unwrap().outcome, Outcome::ReasoningOnly);
    assert_eq!(client.complete(&PROMPT, &mut |_| {}, &|| false).unwrap_err().code(), Code::LlmTimeout);
    for _ in 0..2 {
        let e = client.complete(&PROMPT, &mut |_| {}, &|| false).unwrap_err();
        assert_eq!(e.code(), Code::NotFound);
        assert!(e.message().contains("replay script exhausted") && e.message().contains("5 replies"), "{}", e);
    }
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn replay_script_errors_name_the_line() {
    let path = temp_file(
        "bad.jsonl",
        "{\"content\":\"ok\"}\n[1]\n{\"error\":\"NO_SUCH_CODE\"}\n{\"reasoning\":\"x\"}\n{oops\n",
    );
    let s = Settings { provider: ProviderKind::Replay, replay_path: Some(path.clone()), ..Settings::default() };
    let mut client = Client::new(&s).unwrap();
    assert_eq!(client.complete(&PROMPT, &mut |_| {}, &|| false).unwrap().content, "ok");
    for line in 2..=5 {
        let e = client.complete(&PROMPT, &mut |_| {}, &|| false).unwrap_err();
        assert_eq!(e.code(), Code::JsonInvalid, "{}", e);
        assert!(e.message().contains(&format!("line {}", line)), "{}", e);
    }
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    let missing = Settings { provider: ProviderKind::Replay, replay_path: Some(path), ..Settings::default() };
    assert_eq!(Client::new(&missing).unwrap_err().code(), Code::ConfigInvalid);
}
