//! The LLM providers against a loopback server that answers with the bodies real servers send
//! (LM Studio, Ollama `/v1` and native, llama.cpp, vLLM, llama-cpp-python), as each server's
//! documentation and its observed replies show them (`docs/servers.md`): normal replies, reasoning-only replies, `<think>` in content,
//! `finish_reason: length`, missing usage, each server's error and context-overflow bodies,
//! the request bodies the client writes, start-up checks and the health probe.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "support/loopback.rs"]
mod loopback;

use lkjagent::error::Code;
use lkjagent::http::RetryPolicy;
use lkjagent::llm::{Client, FinishReason, ModelState, Outcome, Prompt, ProviderKind, Settings, Usage};
use loopback::{chunked, free_port, json_ok, response, Action, Server};
use std::time::Duration;

fn settings(endpoint: &str) -> Settings {
    Settings {
        endpoint: endpoint.to_string(),
        model: "qwen3".to_string(),
        connect_timeout: Duration::from_millis(500),
        read_timeout: Duration::from_millis(500),
        retry: RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(2),
            max_delay: Duration::from_millis(10),
        },
        ..Settings::default()
    }
}

const PROMPT: Prompt<'static> = Prompt::new(None, "What next?");
const NO_STOP: &dyn Fn() -> bool = &|| false;

/// The outcome of one completion, owned, for comparisons.
#[derive(Debug, PartialEq)]
struct Got {
    content: String,
    reasoning: Option<String>,
    outcome: Outcome,
    finish: FinishReason,
    usage: Option<Usage>,
}

fn ask(client: &mut Client) -> Result<Got, (Code, String)> {
    match client.complete(&PROMPT, &mut |_| {}, NO_STOP) {
        Ok(c) => Ok(Got {
            content: c.content.to_string(),
            reasoning: c.reasoning.map(str::to_string),
            outcome: c.outcome,
            finish: c.finish_reason,
            usage: c.usage,
        }),
        Err(e) => Err((e.code(), e.message().to_string())),
    }
}

/// Serves `reply` to every request and asks once.
fn one(provider: ProviderKind, reply: Vec<u8>) -> (Result<Got, (Code, String)>, Server) {
    let server = Server::always(reply);
    let path = if provider == ProviderKind::Ollama { "" } else { "/v1" };
    let mut client = Client::new(&Settings { provider, ..settings(&server.url(path)) }).unwrap();
    (ask(&mut client), server)
}

fn usage(p: u64, c: u64, t: u64) -> Option<Usage> {
    Some(Usage { prompt_tokens: p, completion_tokens: c, total_tokens: t, cached_tokens: None })
}

#[test]
fn lm_studio_replies() {
    let normal = r#"{"id":"chatcmpl-8x","object":"chat.completion","created":1731000000,"model":"qwen/qwen3-8b","choices":[{"index":0,"logprobs":null,"finish_reason":"stop","message":{"role":"assistant","content":"<agent><next_state>thinking</next_state></agent>"}}],"usage":{"prompt_tokens":812,"completion_tokens":21,"total_tokens":833},"stats":{},"system_fingerprint":"qwen/qwen3-8b"}"#;
    let (got, server) = one(ProviderKind::OpenAi, json_ok(normal));
    assert_eq!(
        got.unwrap(),
        Got {
            content: "<agent><next_state>thinking</next_state></agent>".into(),
            reasoning: None,
            outcome: Outcome::Text,
            finish: FinishReason::Stop,
            usage: usage(812, 21, 833),
        }
    );
    assert_eq!(server.seen()[0].path, "/v1/chat/completions");

    // LM Studio #1602: empty content, everything in reasoning_content, usage all zeros.
    let reasoning_only = r#"{"id":"chatcmpl-9","object":"chat.completion","created":1,"model":"gemma","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"","reasoning_content":"Let me think about the memory layout first..."}}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}"#;
    let got = one(ProviderKind::OpenAi, json_ok(reasoning_only)).0.unwrap();
    assert_eq!(got.outcome, Outcome::ReasoningOnly);
    assert_eq!(got.content, "");
    assert_eq!(got.reasoning.as_deref(), Some("Let me think about the memory layout first..."));
    assert_eq!(got.usage, usage(0, 0, 0));

    // Only the closing tag (LM Studio bug-tracker #1368).
    let closing = r#"{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"I should save the term.</think>\n<agent>x</agent>"}}]}"#;
    let got = one(ProviderKind::OpenAi, json_ok(closing)).0.unwrap();
    assert_eq!((got.content.as_str(), got.reasoning.as_deref()), ("<agent>x</agent>", Some("I should save the term.")));
    assert_eq!(got.usage, None, "usage missing is None");
}

#[test]
fn ollama_openai_compatible_replies_and_errors() {
    let reasoning = r#"{"id":"chatcmpl-311","object":"chat.completion","created":1731000000,"model":"qwen3","system_fingerprint":"fp_ollama","choices":[{"index":0,"message":{"role":"assistant","content":"<agent>ok</agent>","reasoning":"The user wants the next step."},"finish_reason":"stop"}],"usage":{"prompt_tokens":30,"completion_tokens":12,"total_tokens":42}}"#;
    let got = one(ProviderKind::OpenAi, json_ok(reasoning)).0.unwrap();
    assert_eq!(
        (got.content.as_str(), got.reasoning.as_deref()),
        ("<agent>ok</agent>", Some("The user wants the next step."))
    );
    assert_eq!(got.outcome, Outcome::Text);

    let not_found = response(
        "404 Not Found",
        &["Content-Type: application/json"],
        r#"{"error":{"message":"model \"qwen9\" not found, try pulling it first","type":"api_error","param":null,"code":null}}"#,
    );
    let (code, msg) = one(ProviderKind::OpenAi, not_found).0.unwrap_err();
    assert_eq!(code, Code::LlmError);
    assert!(msg.contains("404") && msg.contains("[api_error]") && msg.contains("try pulling it first"), "{}", msg);
}

#[test]
fn ollama_native_replies_and_errors() {
    // A native reply longer than 2 KiB comes chunked even without streaming (Go's net/http).
    let long = "x".repeat(3000);
    let body = format!(
        r#"{{"model":"qwen3","created_at":"2025-05-01T10:00:00.000Z","message":{{"role":"assistant","content":"<agent>{}</agent>","thinking":"Planning."}},"done_reason":"stop","done":true,"total_duration":4883583458,"load_duration":1334875,"prompt_eval_count":26,"prompt_eval_duration":342546000,"eval_count":282,"eval_duration":4535599000}}"#,
        long
    );
    let (a, b) = body.split_at(2048);
    let (got, server) = one(ProviderKind::Ollama, chunked("200 OK", "application/json; charset=utf-8", &[a, b]));
    let got = got.unwrap();
    assert_eq!(got.content.len(), 3000 + "<agent></agent>".len());
    assert_eq!(got.reasoning.as_deref(), Some("Planning."));
    assert_eq!((got.finish, got.usage), (FinishReason::Stop, usage(26, 282, 308)));
    let seen = &server.seen()[0];
    assert_eq!(seen.path, "/api/chat");
    let body = seen.body_str();
    assert!(body.contains(r#""options":{"temperature":0.7,"num_predict":4096,"num_ctx":8192}"#), "{}", body);
    assert!(body.contains(r#""stream":false"#), "{}", body);

    let length =
        r#"{"model":"qwen3","message":{"role":"assistant","content":"<agent>cut"},"done_reason":"length","done":true}"#;
    assert_eq!(one(ProviderKind::Ollama, json_ok(length)).0.unwrap().finish, FinishReason::Length);

    let err = response("404 Not Found", &["Content-Type: application/json"], r#"{"error":"model 'qwen9' not found"}"#);
    let (code, msg) = one(ProviderKind::Ollama, err).0.unwrap_err();
    assert_eq!(code, Code::LlmError);
    assert!(msg.contains("model 'qwen9' not found"), "{}", msg);
}

#[test]
fn llama_cpp_replies_and_errors() {
    // --reasoning-format none: the thought stays in content, and is moved out.
    let think = r#"{"choices":[{"finish_reason":"stop","index":0,"message":{"role":"assistant","content":"<think>\nThe memory is empty.\n</think>\n\n<agent>go</agent>"}}],"created":1731000000,"model":"qwen3","system_fingerprint":"b5000","object":"chat.completion","usage":{"completion_tokens":30,"prompt_tokens":100,"total_tokens":130},"id":"chatcmpl-abc","timings":{"prompt_n":100,"predicted_n":30}}"#;
    let got = one(
        ProviderKind::OpenAi,
        response(
            "200 OK",
            &[
                "Content-Type: application/json; charset=utf-8",
                "Keep-Alive: timeout=5, max=100",
                "Access-Control-Allow-Origin: ",
            ],
            think,
        ),
    )
    .0
    .unwrap();
    assert_eq!((got.content.as_str(), got.reasoning.as_deref()), ("<agent>go</agent>", Some("The memory is empty.")));

    let overflow = response(
        "400 Bad Request",
        &["Content-Type: application/json; charset=utf-8", "Connection: close"],
        r#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#,
    );
    let (got, server) = one(ProviderKind::OpenAi, overflow);
    let (code, msg) = got.unwrap_err();
    assert_eq!(code, Code::ContextOverflow, "{}", msg);
    assert!(msg.contains("exceeds the available context size"), "{}", msg);
    assert_eq!(server.seen().len(), 1, "an overflow is never retried");

    let loading = response(
        "503 Service Unavailable",
        &["Content-Type: application/json"],
        r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#,
    );
    let (got, server) = one(ProviderKind::OpenAi, loading);
    let (code, msg) = got.unwrap_err();
    assert_eq!(code, Code::LlmUnavailable);
    assert!(msg.contains("Loading model"), "{}", msg);
    assert_eq!(server.seen().len(), 3, "503 is retried (2 retries)");
}

#[test]
fn vllm_replies_and_errors() {
    let length = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"message":{"role":"assistant","reasoning":"Step one...","content":"<agent>partial","tool_calls":[]},"logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":{"prompt_tokens":50,"total_tokens":150,"completion_tokens":100,"prompt_tokens_details":null},"prompt_logprobs":null}"#;
    let got = one(ProviderKind::OpenAi, json_ok(length)).0.unwrap();
    assert_eq!((got.finish, got.content.as_str()), (FinishReason::Length, "<agent>partial"));
    assert_eq!(got.reasoning.as_deref(), Some("Step one..."));

    let overflow = response(
        "400 Bad Request",
        &["content-type: application/json"],
        r#"{"error":{"message":"You passed 9000 input tokens and requested 1000 output tokens. However, the model's context length is only 8192 tokens, resulting in a maximum context length of 8192 tokens. Please reduce the length of the input prompt.","type":"BadRequestError","param":"input_tokens","code":400}}"#,
    );
    assert_eq!(one(ProviderKind::OpenAi, overflow).0.unwrap_err().0, Code::ContextOverflow);
    let old = response(
        "400 Bad Request",
        &["content-type: application/json"],
        r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}"#,
    );
    assert_eq!(one(ProviderKind::OpenAi, old).0.unwrap_err().0, Code::ContextOverflow);
    let other = response(
        "400 Bad Request",
        &["content-type: application/json"],
        r#"{"object":"error","message":"temperature must be non-negative","type":"BadRequestError","param":null,"code":400}"#,
    );
    let (code, msg) = one(ProviderKind::OpenAi, other).0.unwrap_err();
    assert_eq!(code, Code::LlmError);
    assert!(msg.contains("[BadRequestError]") && msg.contains("temperature must be non-negative"), "{}", msg);
}

#[test]
fn llama_cpp_python_errors() {
    let overflow = response(
        "400 Bad Request",
        &["content-type: application/json"],
        r#"{"error":{"message":"Requested tokens (9000) exceed context window of 8192","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    );
    assert_eq!(one(ProviderKind::OpenAi, overflow).0.unwrap_err().0, Code::ContextOverflow);
    let plain =
        response("500 Internal Server Error", &["content-type: text/plain; charset=utf-8"], "Internal Server Error");
    let (code, msg) = one(ProviderKind::OpenAi, plain).0.unwrap_err();
    assert_eq!(code, Code::LlmError);
    assert!(msg.ends_with("answered 500: Internal Server Error"), "{}", msg);
    let detail = response("404 Not Found", &["content-type: application/json"], r#"{"detail":"Not Found"}"#);
    let (code, msg) = one(ProviderKind::OpenAi, detail).0.unwrap_err();
    assert_eq!(code, Code::LlmError);
    assert!(msg.contains("Not Found") && msg.contains("check the endpoint"), "{}", msg);
}

#[test]
fn unreadable_replies_are_typed_errors() {
    let (code, _) = one(ProviderKind::OpenAi, json_ok("{\"choices\":[")).0.unwrap_err();
    assert_eq!(code, Code::JsonInvalid);
    let (code, msg) = one(ProviderKind::OpenAi, json_ok("{\"object\":\"list\"}")).0.unwrap_err();
    assert_eq!(code, Code::LlmError);
    assert!(msg.contains("choices[0]"), "{}", msg);
    let (code, msg) = one(ProviderKind::OpenAi, json_ok("{\"error\":{\"message\":\"boom\"}}")).0.unwrap_err();
    assert_eq!(code, Code::LlmError);
    assert!(msg.contains("boom"));
    let got = one(ProviderKind::OpenAi, json_ok(r#"{"choices":[{"message":{"content":null},"finish_reason":null}]}"#))
        .0
        .unwrap();
    assert_eq!((got.outcome, got.finish), (Outcome::Empty, FinishReason::Missing));
}

#[test]
fn openai_request_body_with_system_stop_extra_and_bearer() {
    let server = Server::always(json_ok(r#"{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}"#));
    let var = format!("LKJAGENT_TEST_KEY_{}", std::process::id());
    std::env::set_var(&var, "sk-secret-value");
    let s = Settings {
        stop: vec!["</agent>".into()],
        extra: r#"{"max_tokens":64,"reasoning_effort":"none","grammar":"root ::= \"<agent>\" [^<]* \"</agent>\""}"#
            .into(),
        api_key_env: Some(var.clone()),
        ..settings(&server.url("/v1/chat/completions"))
    };
    let mut client = Client::new(&s).unwrap();
    let c = client.complete(&Prompt::new(Some("You are \"lkj\".\n"), "line1\nline2 é"), &mut |_| {}, NO_STOP).unwrap();
    assert_eq!((c.content, c.http_status, c.attempts), ("ok", 200, 1));
    let seen = &server.seen()[0];
    assert_eq!(
        seen.body_str(),
        concat!(
            r#"{"model":"qwen3","messages":[{"role":"system","content":"You are \"lkj\".\n"},"#,
            r#"{"role":"user","content":"line1\nline2 é"}],"stream":false,"temperature":0.7,"stop":["</agent>"],"#,
            r#""max_tokens":64,"reasoning_effort":"none","grammar":"root ::= \"<agent>\" [^<]* \"</agent>\""}"#
        )
    );
    assert_eq!(seen.header("authorization"), Some("Bearer sk-secret-value"));
    assert_eq!(client.last_request_body(), seen.body.as_slice());
    let debug = format!("{:?}", client);
    assert!(!debug.contains("sk-secret-value"), "{}", debug);
    std::env::remove_var(&var);
}

#[test]
fn start_up_checks_are_config_errors() {
    let bad = |s: Settings| Client::new(&s).unwrap_err();
    let e = bad(settings("https://api.openai.com/v1"));
    assert_eq!(e.code(), Code::ConfigInvalid);
    assert!(e.message().contains("TLS") && e.message().contains("curl"), "{}", e);
    assert_eq!(bad(settings("http://[::1/v1")).code(), Code::ConfigInvalid);
    assert_eq!(bad(settings("localhost:1234")).code(), Code::ConfigInvalid);
    assert_eq!(bad(Settings { model: " ".into(), ..settings("http://127.0.0.1:1/v1") }).code(), Code::ConfigInvalid);
    assert_eq!(bad(Settings { extra: "[1]".into(), ..settings("http://127.0.0.1:1/v1") }).code(), Code::ConfigInvalid);
    assert_eq!(bad(Settings { extra: "{".into(), ..settings("http://127.0.0.1:1/v1") }).code(), Code::ConfigInvalid);
    let e = bad(Settings { api_key_env: Some("LKJAGENT_SURELY_UNSET".into()), ..settings("http://127.0.0.1:1/v1") });
    assert!(e.message().contains("LKJAGENT_SURELY_UNSET"));
    assert_eq!(bad(Settings { provider: ProviderKind::Replay, ..Settings::default() }).code(), Code::ConfigInvalid);
    // IPv6 literal endpoints are accepted.
    assert!(Client::new(&settings("http://[::1]:8080/v1")).is_ok());
}

#[test]
fn unreachable_server_is_unavailable() {
    let mut client = Client::new(&settings(&format!("http://127.0.0.1:{}/v1", free_port()))).unwrap();
    let (code, msg) = ask(&mut client).unwrap_err();
    assert_eq!(code, Code::LlmUnavailable, "{}", msg);
    assert_eq!(client.health(NO_STOP).unwrap_err().code(), Code::LlmUnavailable);
}

#[test]
fn health_probe() {
    let models = r#"{"object":"list","data":[{"id":"other","object":"model"},{"id":"qwen3","object":"model","owned_by":"organization_owner"}]}"#;
    let server = Server::always(json_ok(models));
    let mut client = Client::new(&settings(&server.url("/v1/chat/completions"))).unwrap();
    let h = client.health(NO_STOP).unwrap();
    assert_eq!((h.model, h.models_listed, h.probe.as_str(), h.http_status), (ModelState::Listed, 2, "/v1/models", 200));
    let mut client = Client::new(&Settings { model: "qwen9".into(), ..settings(&server.url("/v1")) }).unwrap();
    assert_eq!(client.health(NO_STOP).unwrap().model, ModelState::NotListed);

    // llama.cpp while loading.
    let server = Server::always(response(
        "503 Service Unavailable",
        &[],
        r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#,
    ));
    let mut client = Client::new(&settings(&server.url("/v1"))).unwrap();
    assert_eq!(client.health(NO_STOP).unwrap().model, ModelState::Loading);

    // No model list: fall back to /health at the root.
    let server = Server::start(|_, req| {
        if req.path == "/health" {
            Action::Reply(json_ok(r#"{"status":"ok"}"#))
        } else {
            Action::Reply(response("404 Not Found", &[], "File Not Found"))
        }
    });
    let mut client = Client::new(&settings(&server.url("/v1"))).unwrap();
    let h = client.health(NO_STOP).unwrap();
    assert_eq!((h.model, h.probe.as_str()), (ModelState::Ready, "/health"));

    // Ollama's tags.
    let tags = r#"{"models":[{"name":"qwen3:latest","model":"qwen3:latest","modified_at":"2025-05-01T10:00:00Z","size":5200000000,"digest":"abc","details":{"format":"gguf"}}]}"#;
    let server = Server::always(json_ok(tags));
    let mut client = Client::new(&Settings { provider: ProviderKind::Ollama, ..settings(&server.url("")) }).unwrap();
    let h = client.health(NO_STOP).unwrap();
    assert_eq!((h.model, h.probe.as_str()), (ModelState::Listed, "/api/tags"));
}
