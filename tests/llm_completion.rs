//! Text-completion endpoints (base models) against a loopback server that answers with the
//! bodies real servers send, as each server documents them
//! (`docs/servers.md`, `docs/constrained-decoding.md`): the OpenAI-compatible `/v1/completions` (llama-cpp-python,
//! vLLM), llama.cpp's native `/completion` and Ollama's native `/api/generate` (sent `raw`).
//!
//! - The endpoint's path alone picks the mode, and the model-list and health URLs beside it.
//! - The request body per server (golden JSON): the prompt as one document, the token cap, the
//!   seed, the stop sequences, and the grammar or JSON Schema in that server's field.
//! - Each answer shape, whole and streamed: the text, why it stopped (a cut at the token cap),
//!   the token counts and the prompt tokens taken from the server's cache where it says.
//! - Errors: a 400 refusing the grammar, each server's context-overflow answer, a mid-stream
//!   error.
//! - The agent's constraint machinery through a completion endpoint: the probe learns that a
//!   grammar is honoured, and a server that refuses the grammar gets the same step-down as on
//!   chat (grammar, JSON Schema, none).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "support/loopback.rs"]
mod loopback;
#[path = "support/temp.rs"]
mod temp;

use lkjagent::agent::config;
use lkjagent::agent::constrain::Constrainer;
use lkjagent::agent::engine::{Agent, Model};
use lkjagent::error::Code;
use lkjagent::grammar::{Constraint, Mode};
use lkjagent::http::RetryPolicy;
use lkjagent::llm::{Api, Client, FinishReason, ModelState, Outcome, Prompt, ProviderKind, Settings, Usage};
use loopback::{chunked, json_ok, response, Action, Seen, Server};
use std::time::Duration;
use temp::{set, shipped, TempDir};

fn settings(endpoint: &str) -> Settings {
    Settings {
        endpoint: endpoint.to_string(),
        model: "smollm2".to_string(),
        connect_timeout: Duration::from_millis(500),
        read_timeout: Duration::from_millis(2000),
        retry: RetryPolicy {
            max_retries: 1,
            base_delay: Duration::from_millis(2),
            max_delay: Duration::from_millis(10),
        },
        ..Settings::default()
    }
}

const NO_STOP: &dyn Fn() -> bool = &|| false;
const SYSTEM: &str = "Glossary of networking terms";
const USER: &str = "1. TCP: Transmission Control Protocol.\n2.";
const GRAMMAR: &str = "root ::= [A-Z]+ \": \" [^\\n]{1,80}\n";
const SCHEMA: &str = r#"{"type":"object","properties":{"w":{"type":"string"}},"required":["w"]}"#;

/// The outcome of one completion, owned, for comparisons.
#[derive(Debug, PartialEq)]
struct Got {
    content: String,
    reasoning: Option<String>,
    outcome: Outcome,
    finish: FinishReason,
    usage: Option<Usage>,
}

fn ask(client: &mut Client, prompt: &Prompt<'_>) -> Result<Got, (Code, String)> {
    match client.complete(prompt, &mut |_| {}, NO_STOP) {
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

/// Serves `reply` to every request at `path` (with `provider`, `stream`) and asks once with the
/// glossary document; the answer and what the server saw.
fn one(path: &str, provider: ProviderKind, stream: bool, reply: Vec<u8>) -> (Result<Got, (Code, String)>, Seen) {
    let server = Server::always(reply);
    let mut client = Client::new(&Settings { provider, stream, ..settings(&server.url(path)) }).unwrap();
    assert_eq!(client.api(), Api::Completion, "{path}");
    let got = ask(&mut client, &Prompt::new(Some(SYSTEM), USER));
    let seen = server.seen().into_iter().next().unwrap();
    assert_eq!(seen.path, path, "asked at the endpoint as configured");
    (got, seen)
}

fn usage(p: u64, c: u64, cached: Option<u64>) -> Option<Usage> {
    Some(Usage { prompt_tokens: p, completion_tokens: c, total_tokens: p + c, cached_tokens: cached })
}

/// An SSE response (chunked, as every server streams) of `data:` events, `sep` after each.
fn sse(events: &[&str], sep: &str) -> Vec<u8> {
    let pieces: Vec<String> = events.iter().map(|e| format!("data: {e}{sep}")).collect();
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    chunked("200 OK", "text/event-stream", &refs)
}

/// The body the client sent for `prompt` to a server at `path`.
fn body(path: &str, provider: ProviderKind, extra: &str, prompt: &Prompt<'_>) -> String {
    let server = Server::always(json_ok(r#"{"choices":[{"text":"ok","finish_reason":"stop"}]}"#));
    let s = Settings { provider, stop: vec!["\n3.".into()], extra: extra.into(), ..settings(&server.url(path)) };
    let mut client = Client::new(&s).unwrap();
    let _ = client.complete(prompt, &mut |_| {}, NO_STOP);
    let seen = server.seen().into_iter().next().unwrap();
    assert_eq!(client.last_request_body(), seen.body.as_slice());
    seen.body_str().to_string()
}

/// A presence penalty goes where each server reads it, after the seed; `llm.extra` wins.
#[test]
fn a_presence_penalty_goes_in_each_servers_field() {
    let p = Prompt { seed: Some(7), max_tokens: Some(64), presence_penalty: Some(1.0), ..Prompt::new(None, "Roux:") };
    let openai = body("/v1/completions", ProviderKind::OpenAi, "", &p);
    assert!(openai.contains(r#""seed":7,"presence_penalty":1,"stop""#), "{openai}");
    let chat = body("/v1/chat/completions", ProviderKind::OpenAi, "", &p);
    assert!(chat.contains(r#""seed":7,"presence_penalty":1,"stop""#), "{chat}");
    let llama = body("/completion", ProviderKind::OpenAi, "", &p);
    assert!(llama.contains(r#""n_predict":64,"seed":7,"presence_penalty":1,"stop""#), "{llama}");
    let ollama = body("/api/generate", ProviderKind::Ollama, "", &p);
    assert!(
        ollama.contains(r#""options":{"temperature":0.7,"num_predict":64,"seed":7,"presence_penalty":1,"num_ctx""#),
        "{ollama}"
    );
    let own = body("/v1/completions", ProviderKind::OpenAi, r#"{"presence_penalty":0}"#, &p);
    assert_eq!(own.matches("presence_penalty").count(), 1, "{own}");
    assert!(own.ends_with(r#""presence_penalty":0}"#), "{own}");
    // None: no field.
    let none = Prompt { presence_penalty: None, ..p };
    assert!(!body("/v1/completions", ProviderKind::OpenAi, "", &none).contains("presence_penalty"));
}

#[test]
fn the_prompt_goes_as_one_document_with_each_servers_fields() {
    let grammar = Prompt {
        constraint: Some(Constraint::Grammar(GRAMMAR)),
        seed: Some(7),
        max_tokens: Some(64),
        ..Prompt::new(Some(SYSTEM), USER)
    };
    let schema = Prompt { constraint: Some(Constraint::JsonSchema(SCHEMA)), ..grammar };
    let doc = r#""prompt":"Glossary of networking terms\n\n1. TCP: Transmission Control Protocol.\n2.""#;
    let g = r#""root ::= [A-Z]+ \": \" [^\\n]{1,80}\n""#;
    // OpenAI-compatible /v1/completions: llama-cpp-python and llama.cpp read `grammar`, vLLM
    // `structured_outputs`; a schema goes as llama.cpp's `json_schema` and vLLM's
    // `structured_outputs.json` (llama-cpp-python has no schema field on this route).
    let openai = |tail: &str| {
        format!(
            r#"{{"model":"smollm2",{doc},"stream":false,"temperature":0.7,"max_tokens":64,"seed":7,"stop":["\n3."],{tail}}}"#
        )
    };
    assert_eq!(
        body("/v1/completions", ProviderKind::OpenAi, "", &grammar),
        openai(&format!(r#""grammar":{g},"structured_outputs":{{"grammar":{g}}}"#))
    );
    assert_eq!(
        body("/v1/completions", ProviderKind::OpenAi, "", &schema),
        openai(&format!(r#""json_schema":{SCHEMA},"structured_outputs":{{"json":{SCHEMA}}}"#))
    );
    // llama.cpp's /completion: `n_predict`, `grammar` or `json_schema`.
    let llama = |tail: &str| {
        format!(
            r#"{{"model":"smollm2",{doc},"stream":false,"temperature":0.7,"n_predict":64,"seed":7,"stop":["\n3."],{tail}}}"#
        )
    };
    assert_eq!(body("/completion", ProviderKind::OpenAi, "", &grammar), llama(&format!(r#""grammar":{g}"#)));
    assert_eq!(body("/completion", ProviderKind::OpenAi, "", &schema), llama(&format!(r#""json_schema":{SCHEMA}"#)));
    // Ollama's /api/generate, `raw` (no template), whichever provider is configured; the schema
    // as `format`, a grammar not at all (Ollama has no field for one).
    let ollama = |tail: &str| {
        format!(
            r#"{{"model":"smollm2",{doc},"raw":true,"stream":false,"options":{{"temperature":0.7,"num_predict":64,"seed":7,"num_ctx":8192,"stop":["\n3."]}}{tail}}}"#
        )
    };
    for provider in [ProviderKind::Ollama, ProviderKind::OpenAi] {
        assert_eq!(body("/api/generate", provider, "", &schema), ollama(&format!(r#","format":{SCHEMA}"#)));
        assert_eq!(body("/api/generate", provider, "", &grammar), ollama(""));
    }
    // No system text: the user text alone. `llm.extra` still wins over any field.
    let plain = Prompt::new(None, "Roux:");
    assert_eq!(
        body("/completion", ProviderKind::OpenAi, r#"{"n_predict":8,"cache_prompt":true}"#, &plain),
        r#"{"model":"smollm2","prompt":"Roux:","stream":false,"temperature":0.7,"stop":["\n3."],"n_predict":8,"cache_prompt":true}"#
    );
    assert_eq!(
        body("/api/generate", ProviderKind::Ollama, r#"{"raw":false,"prompt":"x"}"#, &plain),
        r#"{"model":"smollm2","stream":false,"options":{"temperature":0.7,"num_predict":4096,"num_ctx":8192,"stop":["\n3."]},"raw":false,"prompt":"x"}"#
    );
}

#[test]
fn openai_compatible_completions_whole_and_streamed() {
    // llama-cpp-python 0.3.x.
    let whole = r#"{"id":"cmpl-5d1c","object":"text_completion","created":1764140000,"model":"/models/smollm2.gguf","choices":[{"text":" UDP: User Datagram Protocol.","index":0,"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":42,"completion_tokens":9,"total_tokens":51}}"#;
    let (got, seen) = one("/v1/completions", ProviderKind::OpenAi, false, json_ok(whole));
    assert_eq!(
        got.unwrap(),
        Got {
            content: " UDP: User Datagram Protocol.".into(),
            reasoning: None,
            outcome: Outcome::Text,
            finish: FinishReason::Stop,
            usage: usage(42, 9, None),
        }
    );
    assert_eq!(seen.header("accept"), Some("application/json"));
    // vLLM, cut at the token cap, with the cached-token count (--enable-prompt-tokens-details).
    let cut = r#"{"id":"cmpl-9","object":"text_completion","created":1,"model":"Qwen/Qwen3-0.6B-Base","choices":[{"index":0,"text":" HTTP: Hypertext","logprobs":null,"finish_reason":"length","stop_reason":null,"prompt_logprobs":null}],"usage":{"prompt_tokens":50,"total_tokens":66,"completion_tokens":16,"prompt_tokens_details":{"cached_tokens":48}}}"#;
    let got = one("/v1/completions", ProviderKind::OpenAi, false, json_ok(cut)).0.unwrap();
    assert_eq!(
        (got.content.as_str(), got.finish, got.usage),
        (" HTTP: Hypertext", FinishReason::Length, usage(50, 16, Some(48)))
    );

    // Streamed, llama-cpp-python (sse-starlette, CR LF, a ping), then vLLM's usage-only piece.
    let piece = |text: &str, finish: &str| {
        format!(
            r#"{{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{{"text":"{text}","index":0,"logprobs":null,"finish_reason":{finish}}}]}}"#
        )
    };
    let (a, b, c) = (piece(" FTP", "null"), piece(": File Transfer", "null"), piece("", "\"length\""));
    let usage_only = r#"{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":40,"completion_tokens":3,"total_tokens":43,"prompt_tokens_details":{"cached_tokens":32}}}"#;
    let events = [&a, &b, &c, usage_only, "[DONE]"].map(|e| format!("data: {e}\r\n\r\n"));
    let mut pieces = vec![": ping\r\n\r\n"];
    pieces.extend(events.iter().map(String::as_str));
    let stream = chunked("200 OK", "text/event-stream", &pieces);
    let (got, seen) = one("/v1/completions", ProviderKind::OpenAi, true, stream);
    assert_eq!(seen.header("accept"), Some("text/event-stream"));
    assert!(seen.body_str().contains(r#""stream":true"#));
    let got = got.unwrap();
    assert_eq!(
        (got.content.as_str(), got.finish, got.usage),
        (" FTP: File Transfer", FinishReason::Length, usage(40, 3, Some(32)))
    );
}

#[test]
fn llama_cpp_native_completion_whole_and_streamed() {
    let whole = r#"{"index":0,"content":" SSH: Secure Shell.","tokens":[],"id_slot":0,"stop":true,"model":"smollm2","tokens_predicted":6,"tokens_evaluated":42,"generation_settings":{"n_predict":64,"seed":7,"temperature":0.7,"samplers":["top_k","temp"]},"prompt":"Glossary","has_new_line":false,"truncated":false,"stop_type":"eos","stopping_word":"","tokens_cached":47,"timings":{"cache_n":32,"prompt_n":10,"prompt_ms":12.5,"prompt_per_token_ms":1.25,"prompt_per_second":800.0,"predicted_n":6,"predicted_ms":60.0,"predicted_per_token_ms":10.0,"predicted_per_second":100.0}}"#;
    let (got, _) = one("/completion", ProviderKind::OpenAi, false, json_ok(whole));
    assert_eq!(
        got.unwrap(),
        Got {
            content: " SSH: Secure Shell.".into(),
            reasoning: None,
            outcome: Outcome::Text,
            finish: FinishReason::Stop,
            usage: usage(42, 6, Some(32)),
        }
    );
    // Cut at n_predict: `stop_type` "limit", and before it (2024) the `stopped_limit` flag.
    let limit = whole.replace(r#""stop_type":"eos""#, r#""stop_type":"limit""#);
    assert_eq!(
        one("/completion", ProviderKind::OpenAi, false, json_ok(&limit)).0.unwrap().finish,
        FinishReason::Length
    );
    let old = r#"{"content":" SSH: Sec","stop":true,"stopped_eos":false,"stopped_limit":true,"stopped_word":false,"tokens_predicted":4,"tokens_evaluated":42,"timings":{"prompt_n":42,"predicted_n":4}}"#;
    let got = one("/completion", ProviderKind::OpenAi, false, json_ok(old)).0.unwrap();
    assert_eq!((got.finish, got.usage), (FinishReason::Length, usage(42, 4, None)));
    let word = old
        .replace(r#""stopped_word":false"#, r#""stopped_word":true"#)
        .replace(r#""stopped_limit":true"#, r#""stopped_limit":false"#);
    assert_eq!(one("/completion", ProviderKind::OpenAi, false, json_ok(&word)).0.unwrap().finish, FinishReason::Stop);

    // Streamed: SSE pieces of the same shape, no [DONE]; the last says stop with the figures.
    let p1 = r#"{"index":0,"content":" IP","tokens":[6019],"stop":false,"id_slot":-1,"tokens_predicted":1,"tokens_evaluated":42}"#;
    let p2 = r#"{"index":0,"content":": Internet Protocol.","tokens":[25],"stop":false,"id_slot":-1,"tokens_predicted":2,"tokens_evaluated":42}"#;
    let last = r#"{"index":0,"content":"","tokens":[],"id_slot":0,"stop":true,"model":"smollm2","tokens_predicted":5,"tokens_evaluated":42,"stop_type":"word","stopping_word":"\n3.","tokens_cached":46,"timings":{"cache_n":40,"prompt_n":2,"predicted_n":5}}"#;
    let (got, seen) = one("/completion", ProviderKind::OpenAi, true, sse(&[p1, p2, last], "\n\n"));
    assert_eq!(seen.header("accept"), Some("text/event-stream"));
    let got = got.unwrap();
    assert_eq!(
        (got.content.as_str(), got.finish, got.usage),
        (" IP: Internet Protocol.", FinishReason::Stop, usage(42, 5, Some(40)))
    );
    // A stream cut before its last piece: the text so far, with no reason and no figures.
    let got = one("/completion", ProviderKind::OpenAi, true, sse(&[p1], "\n\n")).0.unwrap();
    assert_eq!((got.content.as_str(), got.finish, got.usage), (" IP", FinishReason::Missing, None));
}

#[test]
fn ollama_generate_whole_and_streamed() {
    let whole = r#"{"model":"smollm2:135m","created_at":"2026-11-26T07:00:00.000Z","response":" DNS: Domain Name System.","done":true,"done_reason":"stop","total_duration":400000000,"load_duration":1000000,"prompt_eval_count":42,"prompt_eval_duration":100000000,"eval_count":8,"eval_duration":200000000}"#;
    let (got, seen) = one("/api/generate", ProviderKind::Ollama, false, json_ok(whole));
    assert_eq!(
        got.unwrap(),
        Got {
            content: " DNS: Domain Name System.".into(),
            reasoning: None,
            outcome: Outcome::Text,
            finish: FinishReason::Stop,
            usage: usage(42, 8, None),
        }
    );
    assert!(seen.body_str().contains(r#""raw":true"#));
    let length = r#"{"model":"m","created_at":"t","response":" DNS: Dom","thinking":"a term","done":true,"done_reason":"length","prompt_eval_count":42,"eval_count":4}"#;
    let got = one("/api/generate", ProviderKind::OpenAi, false, json_ok(length)).0.unwrap();
    assert_eq!((got.finish, got.reasoning.as_deref()), (FinishReason::Length, Some("a term")));

    // NDJSON, split anywhere.
    let lines = concat!(
        r#"{"model":"m","created_at":"t","response":" ARP","done":false}"#,
        "\n",
        r#"{"model":"m","created_at":"t","response":": Address Resolution Protocol.","done":false}"#,
        "\n",
        r#"{"model":"m","created_at":"t","response":"","done":true,"done_reason":"stop","prompt_eval_count":42,"eval_count":9}"#,
        "\n"
    );
    let (a, b) = lines.split_at(50);
    let (got, seen) =
        one("/api/generate", ProviderKind::Ollama, true, chunked("200 OK", "application/x-ndjson", &[a, b]));
    assert_eq!(seen.header("accept"), Some("application/x-ndjson"));
    let got = got.unwrap();
    assert_eq!(
        (got.content.as_str(), got.finish, got.usage),
        (" ARP: Address Resolution Protocol.", FinishReason::Stop, usage(42, 9, None))
    );
    // A failure mid-stream, after a 200.
    let failing = concat!(
        r#"{"model":"m","created_at":"t","response":" ARP","done":false}"#,
        "\n",
        r#"{"error":"an error was encountered while running the model: unexpected EOF"}"#,
        "\n"
    );
    let (code, msg) =
        one("/api/generate", ProviderKind::Ollama, true, chunked("200 OK", "application/x-ndjson", &[failing]))
            .0
            .unwrap_err();
    assert_eq!(code, Code::LlmError);
    assert!(msg.contains("unexpected EOF"), "{msg}");
}

#[test]
fn refusals_and_context_overflow_per_server() {
    let json = ["Content-Type: application/json; charset=utf-8"];
    // llama.cpp refusing a grammar (on either route).
    let refused = r#"{"error":{"code":400,"message":"Failed to initialize samplers: failed to parse grammar","type":"invalid_request_error"}}"#;
    for path in ["/v1/completions", "/completion"] {
        let (code, msg) =
            one(path, ProviderKind::OpenAi, false, response("400 Bad Request", &json, refused)).0.unwrap_err();
        assert_eq!(code, Code::LlmError, "{path}");
        assert!(msg.contains("400") && msg.contains("failed to parse grammar"), "{msg}");
    }
    // Context overflow, each server's words.
    let overflows = [
        (
            "/completion",
            r#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#,
        ),
        (
            "/v1/completions",
            r#"{"error":{"message":"Requested tokens (9000) exceed context window of 4096","type":"invalid_request_error","param":"prompt","code":"context_length_exceeded"}}"#,
        ),
        (
            "/v1/completions",
            r#"{"error":{"message":"You passed 9000 input tokens and requested 64 output tokens. However, the model's context length is only 8192 tokens, resulting in a maximum context length of 8192 tokens.","type":"BadRequestError","param":"input_tokens","code":400}}"#,
        ),
    ];
    for (path, body) in overflows {
        let (code, msg) =
            one(path, ProviderKind::OpenAi, false, response("400 Bad Request", &json, body)).0.unwrap_err();
        assert_eq!(code, Code::ContextOverflow, "{path}: {msg}");
    }
    let (code, msg) = one(
        "/api/generate",
        ProviderKind::Ollama,
        false,
        response(
            "400 Bad Request",
            &json,
            r#"{"error":"invalid format: \"x\"; expected \"json\" or a valid JSON Schema object"}"#,
        ),
    )
    .0
    .unwrap_err();
    assert_eq!(code, Code::LlmError);
    assert!(msg.contains("invalid format"), "{msg}");
}

/// The seed a request went with, read from the body the server saw.
fn seed_sent(seen: &Seen) -> Option<u64> {
    let mut doc = lkjagent::json::Document::with_capacity(1 << 12, 1 << 20);
    doc.parse(&seen.body).ok()?;
    doc.root().get("seed").and_then(|v| v.as_u64())
}

/// llama-server answers 500 when it cannot read the output its model wrote (a constrained
/// reply its own chat parser does not take). Sent again as it is, with the same seed, a
/// deterministic server writes the same output and fails the same way; so a seeded request is
/// sent again with the next seed of its own (DESIGN: the seed changes per retry), and the
/// answer says which seed it was drawn with. A 503 (a server loading) is still sent again as
/// it is: the request was not at fault.
#[test]
fn a_seeded_request_that_failed_with_500_goes_again_with_another_seed() {
    let failed = r#"{"error":{"code":500,"message":"The model produced output that does not match the expected peg-native format","type":"server_error"}}"#;
    let json = ["Content-Type: application/json"];
    let bad_seed = std::sync::Arc::new(std::sync::Mutex::new(None::<u64>));
    let first = bad_seed.clone();
    let server = Server::start(move |_, seen| {
        let seed = seed_sent(seen);
        let mut first = first.lock().unwrap();
        if first.is_none() {
            *first = seed;
        }
        if seed == *first {
            Action::Reply(response("500 Internal Server Error", &json, failed))
        } else {
            Action::Reply(json_ok(&text_body("Roux: flour cooked in fat.")))
        }
    });
    let s = Settings {
        retry: RetryPolicy { max_retries: 3, ..settings("").retry },
        ..settings(&server.url("/v1/completions"))
    };
    let mut client = Client::new(&s).unwrap();
    let p = Prompt { seed: Some(7), ..Prompt::new(None, USER) };
    let c = client.complete(&p, &mut |_| {}, NO_STOP).unwrap();
    assert_eq!(c.content, "Roux: flour cooked in fat.");
    assert_eq!(c.attempts, 2);
    let seen = server.seen();
    assert_eq!(seen.len(), 2, "sent once more, not three times with the same seed");
    assert_eq!(seed_sent(&seen[0]), Some(7));
    let second = seed_sent(&seen[1]).unwrap();
    assert_ne!(second, 7);
    assert!(second < 1 << 53, "a seed every JSON reader reads exactly: {second}");
    assert_eq!(client.last_seed(), Some(second), "the answer's seed is the one it was drawn with");
    assert_eq!(client.last_request_body(), seen[1].body.as_slice());
    // A server that fails every seed: each retry its own seed, then the server's message.
    let always = Server::always(response("500 Internal Server Error", &json, failed));
    let mut client = Client::new(&Settings { retry: s.retry, ..settings(&always.url("/v1/completions")) }).unwrap();
    let e = client.complete(&p, &mut |_| {}, NO_STOP).unwrap_err();
    assert_eq!(e.code(), Code::LlmError);
    assert!(e.message().contains("peg-native"), "{}", e.message());
    let seeds: Vec<Option<u64>> = always.seen().iter().map(seed_sent).collect();
    assert_eq!(seeds.len(), 4, "{seeds:?}");
    for (i, a) in seeds.iter().enumerate() {
        assert!(a.is_some() && !seeds[..i].contains(a), "{seeds:?}");
    }
    // Unseeded, or a 503: the same request again, as before.
    let busy = Server::always(response(
        "503 Service Unavailable",
        &json,
        r#"{"error":{"code":503,"message":"Loading model"}}"#,
    ));
    let mut client = Client::new(&Settings { retry: s.retry, ..settings(&busy.url("/v1/completions")) }).unwrap();
    let _ = client.complete(&p, &mut |_| {}, NO_STOP).unwrap_err();
    let seeds: Vec<Option<u64>> = busy.seen().iter().map(seed_sent).collect();
    assert_eq!(seeds, vec![Some(7); 4]);
}

#[test]
fn the_health_probe_looks_beside_a_completion_endpoint() {
    let server = Server::start(|_, seen| match seen.path.as_str() {
        "/v1/models" => Action::Reply(json_ok(r#"{"object":"list","data":[{"id":"smollm2","object":"model"}]}"#)),
        "/api/tags" => Action::Reply(json_ok(r#"{"models":[{"name":"smollm2:latest","model":"smollm2:latest"}]}"#)),
        _ => Action::Reply(response("404 Not Found", &[], "File Not Found")),
    });
    for path in ["/v1/completions", "/completion"] {
        let mut client = Client::new(&settings(&server.url(path))).unwrap();
        let h = client.health(NO_STOP).unwrap();
        assert_eq!((h.model, h.probe.as_str()), (ModelState::Listed, "/v1/models"), "{path}");
        assert_eq!(client.ask_url().unwrap().path(), path);
    }
    let mut client = Client::new(&settings(&server.url("/api/generate"))).unwrap();
    assert_eq!(client.provider(), ProviderKind::Ollama, "/api/generate is Ollama's");
    let h = client.health(NO_STOP).unwrap();
    assert_eq!((h.model, h.probe.as_str()), (ModelState::Listed, "/api/tags"));
    // llama.cpp without a model list: /health at the root.
    let server = Server::start(|_, seen| match seen.path.as_str() {
        "/health" => Action::Reply(json_ok(r#"{"status":"ok"}"#)),
        _ => Action::Reply(response("404 Not Found", &[], "File Not Found")),
    });
    let mut client = Client::new(&settings(&server.url("/completion"))).unwrap();
    let h = client.health(NO_STOP).unwrap();
    assert_eq!((h.model, h.probe.as_str()), (ModelState::Ready, "/health"));
}

// ---------------------------------------------------------------------------------------------
// The constraint machinery through a completion endpoint
// ---------------------------------------------------------------------------------------------

/// A string member of a request body.
fn field(seen: &Seen, key: &str) -> Option<String> {
    let mut doc = lkjagent::json::Document::with_capacity(1 << 12, 1 << 20);
    doc.parse(&seen.body).ok()?;
    doc.root().get(key).and_then(|v| v.as_str()).map(str::to_string)
}

/// A llama-cpp-python `/v1/completions` answer with this text.
fn text_body(text: &str) -> String {
    let mut out = String::new();
    let mut w = lkjagent::json::Writer::compact(&mut out);
    w.begin_object().unwrap();
    w.key("object").unwrap();
    w.string("text_completion").unwrap();
    w.key("choices").unwrap();
    w.begin_array().unwrap();
    w.begin_object().unwrap();
    w.key("text").unwrap();
    w.string(text).unwrap();
    w.key("finish_reason").unwrap();
    w.string("stop").unwrap();
    w.end_object().unwrap();
    w.end_array().unwrap();
    w.key("usage").unwrap();
    w.raw_value(r#"{"prompt_tokens":30,"completion_tokens":5,"total_tokens":35}"#).unwrap();
    w.end_object().unwrap();
    out
}

#[test]
fn the_probe_learns_a_grammar_through_v1_completions() {
    // Honours a grammar that allows one word (the probe's), as llama-cpp-python does.
    let server = Server::start(|_, seen| {
        let reply = match field(seen, "grammar") {
            Some(g) if g.contains("\"lkjok\"") => "lkjok",
            _ => "Sure! Here is the word you asked for: lkjok",
        };
        Action::Reply(json_ok(&text_body(reply)))
    });
    let s = settings(&server.url("/v1/completions"));
    let mut client = Client::new(&s).unwrap();
    let mut c = Constrainer::new(&s, 1);
    c.probe(&mut client, NO_STOP);
    assert_eq!(c.active(), Mode::Grammar);
    let seen = server.seen();
    assert_eq!(seen.len(), 1, "one probe request");
    assert_eq!(seen[0].path, "/v1/completions");
    assert!(field(&seen[0], "prompt").is_some_and(|p| p.contains("lkjok")), "the probe's prompt as the document");

    // A server that refuses the grammar with 400 but honours the schema: the probe steps down.
    let server = Server::start(|_, seen| {
        let b = seen.body_str();
        if b.contains("\"grammar\"") {
            let refused =
                r#"{"error":{"code":400,"message":"Failed to parse grammar","type":"invalid_request_error"}}"#;
            return Action::Reply(response("400 Bad Request", &["Content-Type: application/json"], refused));
        }
        // llama.cpp's native answer: the text in `content`.
        let reply = if b.contains("\"json_schema\"") { r#"{\"w\":\"lkjok\"}"# } else { "lkjok?" };
        Action::Reply(json_ok(&format!(r#"{{"content":"{reply}","stop":true,"stop_type":"eos"}}"#)))
    });
    let s = settings(&server.url("/completion"));
    let mut client = Client::new(&s).unwrap();
    let mut c = Constrainer::new(&s, 1);
    c.probe(&mut client, NO_STOP);
    assert_eq!(c.active(), Mode::JsonSchema);

    // Ollama's /api/generate (the provider left at "openai"): no grammar field, so the probe
    // starts at the schema, sent as `format`.
    let server = Server::start(|_, seen| {
        let reply = if seen.body_str().contains("\"format\":{") { r#"{\"w\":\"lkjok\"}"# } else { "lkjok?" };
        Action::Reply(json_ok(&format!(r#"{{"model":"m","response":"{reply}","done":true,"done_reason":"stop"}}"#)))
    });
    let s = settings(&server.url("/api/generate"));
    let mut client = Client::new(&s).unwrap();
    let mut c = Constrainer::new(&s, 1);
    c.probe(&mut client, NO_STOP);
    assert_eq!(c.active(), Mode::JsonSchema);
    let seen = server.seen();
    assert_eq!(seen.len(), 1, "the schema first, obeyed at once");
    assert!(seen[0].body_str().contains(r#""raw":true"#) && !seen[0].body_str().contains("\"grammar\""));
}

/// A data directory with the shipped configuration and memory, the endpoint and the
/// constraint mode replaced.
fn shipped_dir(tag: &str, endpoint: &str, constrain: &str) -> TempDir {
    let d = TempDir::new(tag);
    let mut cfg = shipped("config.json");
    set(&mut cfg, "http://127.0.0.1:1234/v1/chat/completions", endpoint);
    set(&mut cfg, "\"constrain\": \"auto\"", &format!("\"constrain\": \"{constrain}\""));
    d.write("config.json", cfg);
    d.write("memory.json", shipped("memory.json"));
    d
}

#[test]
fn a_completion_server_that_refuses_the_grammar_gets_the_same_step_down_as_chat() {
    const FREE_REPLY: &str = "<agent><next_state>commanding</next_state><think_log>Go on.</think_log>\
        <action><type>storage_save</type><tags>glossary,roux</tags><value>Roux: flour cooked in fat.</value></action></agent>";
    let server = Server::start(|_, seen| {
        if seen.method != "POST" {
            return Action::Reply(json_ok(r#"{"data":[{"id":"m"}]}"#));
        }
        let b = seen.body_str();
        if b.contains("\"grammar\"") || b.contains("\"json_schema\"") {
            let refused =
                r#"{"error":{"code":400,"message":"Failed to parse grammar","type":"invalid_request_error"}}"#;
            return Action::Reply(response("400 Bad Request", &["Content-Type: application/json"], refused));
        }
        Action::Reply(json_ok(&text_body(FREE_REPLY)))
    });
    let d = shipped_dir("completion-refuses", &server.url("/v1/completions"), "grammar");
    let cfg = config::load(&d.0).unwrap();
    assert_eq!(cfg.llm.api(), Api::Completion);
    let client = Client::new(&cfg.llm).unwrap();
    let mut a = Agent::open(&d.0, cfg, Model::Client(Box::new(client)), false).unwrap();
    let reports: Vec<_> = (0..4).map(|_| a.cycle(&mut |_| {}, &|| false).unwrap()).collect();
    for (i, r) in reports.iter().enumerate() {
        // The second cycle's schema of the value alone is refused: that try fails, and the
        // cycle is tried again.
        assert_eq!(r.error.is_some(), i == 1, "cycle {}: {:?}", r.cycle, r.error);
    }
    let kinds: Vec<&str> = server
        .seen()
        .iter()
        .filter(|s| s.method == "POST")
        .map(|s| {
            assert_eq!(s.path, "/v1/completions");
            assert!(field(s, "prompt").is_some() && !s.body_str().contains("\"messages\""), "a document, not messages");
            let b = s.body_str();
            if b.contains("\"grammar\"") {
                "grammar"
            } else if b.contains("\"json_schema\"") {
                "schema"
            } else {
                "plain"
            }
        })
        .collect();
    // As on chat: cycle 1 the grammar is refused and sent again without; cycle 2 the schema of
    // the product ask's value alone is refused and the cycle fails; cycle 3 the whole reply's
    // schema is refused and sent again without; then no constraint.
    assert_eq!(kinds, ["grammar", "plain", "schema", "schema", "plain", "plain"], "{kinds:?}");
    assert_eq!(reports[0].constrain, "json_schema");
    assert_eq!(reports[1].constrain, "json_schema");
    assert_eq!(reports[3].constrain, "off");
}
