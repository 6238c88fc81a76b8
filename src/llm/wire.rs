//! The wire dialects of the LLM servers, one place for each: how a request is written for it
//! (sampling fields, the constraint's field, the flags of a text completion, what to accept)
//! and how its answer reads (a whole body, or each streamed piece). A new dialect is a variant
//! here and its arms in this file; which URL it is asked at is `client::endpoints`, and which
//! constraint it can take, `agent::constrain`.

use super::reply::{error_from_json, read_reasoning, read_text, read_usage, Accumulator, FinishReason, Usage};
use super::settings::Api;
use crate::error::Result;
use crate::grammar::{schema, Constraint};
use crate::http::Redactor;
use crate::json::{Kind, Value, Writer};
use core::fmt;

/// The dialect of a server: its request fields and its reply body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wire {
    /// OpenAI chat completions and text completions (`choices[0].text`), whole or SSE deltas.
    OpenAi,
    /// Ollama native `/api/chat` and `/api/generate` (`response`), whole or NDJSON lines.
    Ollama,
    /// llama.cpp's native `/completion`: `content`, `stop`, `stop_type`, `tokens_evaluated`,
    /// `tokens_predicted`, `timings` (whole, or SSE pieces of the same shape).
    LlamaCpp,
}

/// How a streamed answer is cut into pieces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    /// Server-sent events: `data: {...}` lines, `data: [DONE]` last.
    Sse,
    /// One JSON object a line, the last one `done: true`.
    Ndjson,
}

/// The sampling settings of one request, each left to the server when `None` (or empty).
pub(crate) struct Sampling<'a> {
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub seed: Option<u64>,
    pub presence_penalty: Option<f64>,
    pub context_window: Option<u32>,
    pub stop: &'a [String],
    /// Ask for the log-probability of each generated token ([`super::Prompt::logprobs`]).
    pub logprobs: bool,
    /// Chat or text completion (OpenAI asks for log-probabilities differently on each).
    pub api: Api,
}

/// Whether `llm.extra` holds a member of this name (it then wins over the client's own).
type Has<'h> = &'h dyn Fn(&str) -> bool;

impl Wire {
    /// The `Accept` header: a whole JSON body, or the stream's framing.
    pub(crate) fn accept(self, stream: bool) -> &'static str {
        match (stream, self.framing()) {
            (false, _) => "application/json",
            (true, Framing::Sse) => "text/event-stream",
            (true, Framing::Ndjson) => "application/x-ndjson",
        }
    }

    /// How a streamed answer of this dialect is framed.
    pub(crate) fn framing(self) -> Framing {
        match self {
            Wire::OpenAi | Wire::LlamaCpp => Framing::Sse,
            Wire::Ollama => Framing::Ndjson,
        }
    }

    /// The fields of a text-completion request beyond the prompt: Ollama applies the model's
    /// template unless told the prompt is complete (`raw`).
    pub(crate) fn write_completion_flags<W: fmt::Write + ?Sized>(
        self,
        w: &mut Writer<'_, W>,
        has: Has<'_>,
    ) -> Result<()> {
        if self == Wire::Ollama && !has("raw") {
            w.key("raw")?;
            w.bool(true)?;
        }
        Ok(())
    }

    /// The sampling fields: Ollama's under `options` (with `num_ctx`, so nothing is cut), the
    /// others at the top level (llama.cpp's native token cap is `n_predict`).
    pub(crate) fn write_sampling<W: fmt::Write + ?Sized>(
        self,
        w: &mut Writer<'_, W>,
        s: &Sampling<'_>,
        has: Has<'_>,
    ) -> Result<()> {
        match self {
            Wire::Ollama => {
                if !has("options") {
                    w.key("options")?;
                    w.begin_object()?;
                    if let Some(t) = s.temperature {
                        w.key("temperature")?;
                        w.f64(t)?;
                    }
                    if let Some(n) = s.max_tokens {
                        w.key("num_predict")?;
                        w.u64(u64::from(n))?;
                    }
                    if let Some(seed) = s.seed {
                        w.key("seed")?;
                        w.u64(seed)?;
                    }
                    if let Some(p) = s.presence_penalty {
                        w.key("presence_penalty")?;
                        w.f64(p)?;
                    }
                    if let Some(n) = s.context_window {
                        w.key("num_ctx")?;
                        w.u64(u64::from(n))?;
                    }
                    if !s.stop.is_empty() {
                        w.key("stop")?;
                        w.begin_array()?;
                        for s in s.stop {
                            w.string(s)?;
                        }
                        w.end_array()?;
                    }
                    w.end_object()?;
                }
                if s.logprobs && !has("logprobs") {
                    w.key("logprobs")?;
                    w.bool(true)?;
                }
            }
            Wire::OpenAi | Wire::LlamaCpp => {
                if let Some(t) = s.temperature.filter(|_| !has("temperature")) {
                    w.key("temperature")?;
                    w.f64(t)?;
                }
                // llama.cpp's native API calls the token cap `n_predict`.
                let cap = if self == Wire::LlamaCpp { "n_predict" } else { "max_tokens" };
                if let Some(n) = s.max_tokens.filter(|_| !has(cap)) {
                    w.key(cap)?;
                    w.u64(u64::from(n))?;
                }
                if let Some(seed) = s.seed.filter(|_| !has("seed")) {
                    w.key("seed")?;
                    w.u64(seed)?;
                }
                if let Some(p) = s.presence_penalty.filter(|_| !has("presence_penalty")) {
                    w.key("presence_penalty")?;
                    w.f64(p)?;
                }
                if !s.stop.is_empty() && !has("stop") {
                    w.key("stop")?;
                    w.begin_array()?;
                    for s in s.stop {
                        w.string(s)?;
                    }
                    w.end_array()?;
                }
                // Log-probabilities: llama.cpp's native `n_probs`, OpenAI's `logprobs` (a
                // flag on chat, the number of alternatives on text completion).
                match (s.logprobs, self, s.api) {
                    (false, _, _) => {}
                    (true, Wire::LlamaCpp, _) if !has("n_probs") => {
                        w.key("n_probs")?;
                        w.u64(1)?;
                    }
                    (true, Wire::OpenAi, Api::Chat) if !has("logprobs") => {
                        w.key("logprobs")?;
                        w.bool(true)?;
                        // llama-cpp-python sends none unless asked for alternatives too.
                        if !has("top_logprobs") {
                            w.key("top_logprobs")?;
                            w.u64(1)?;
                        }
                    }
                    (true, Wire::OpenAi, Api::Completion) if !has("logprobs") => {
                        w.key("logprobs")?;
                        w.u64(1)?;
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The constraint, in this server's field for it.
    pub(crate) fn write_constraint<W: fmt::Write + ?Sized>(
        self,
        w: &mut Writer<'_, W>,
        api: Api,
        constraint: Option<Constraint<'_>>,
        has: Has<'_>,
    ) -> Result<()> {
        // The constraint, in each server's field (constrained-decoding.md): a grammar as
        // llama.cpp's and llama-cpp-python's `grammar` and vLLM's `structured_outputs.grammar`
        // (each server ignores the other's field); a schema as OpenAI's `response_format` on
        // chat (LM Studio, llama.cpp, vLLM, OpenAI), as llama.cpp's `json_schema` and vLLM's
        // `structured_outputs.json` on text completion, or as Ollama's `format`. A field of the
        // same name in `llm.extra` wins.
        // The older `json_object` form is only a chat request's; elsewhere it is the schema.
        let constraint = match constraint {
            Some(Constraint::JsonObject(s)) if api == Api::Completion || self == Wire::Ollama => {
                Some(Constraint::JsonSchema(s))
            }
            other => other,
        };
        match (constraint, self) {
            (None, _) => {}
            (Some(Constraint::JsonObject(s)), _) => {
                if !has("response_format") {
                    w.key("response_format")?;
                    w.begin_object()?;
                    w.key("type")?;
                    w.string("json_object")?;
                    w.key("schema")?;
                    w.raw_value(s)?;
                    w.end_object()?;
                }
            }
            (Some(Constraint::Grammar(g)), Wire::Ollama) => {
                // Ollama has no grammar field; the agent never asks for one (see
                // `agent::constrain`), and a caller that does gets a plain request.
                let _ = g;
            }
            (Some(Constraint::Grammar(g)), Wire::OpenAi | Wire::LlamaCpp) => {
                if !has("grammar") {
                    w.key("grammar")?;
                    w.string(g)?;
                }
                if self == Wire::OpenAi && !has("structured_outputs") {
                    w.key("structured_outputs")?;
                    w.begin_object()?;
                    w.key("grammar")?;
                    w.string(g)?;
                    w.end_object()?;
                }
            }
            (Some(Constraint::JsonSchema(s)), Wire::Ollama) => {
                if !has("format") {
                    w.key("format")?;
                    w.raw_value(s)?;
                }
            }
            (Some(Constraint::JsonSchema(s)), Wire::OpenAi | Wire::LlamaCpp) if api == Api::Completion => {
                if !has("json_schema") {
                    w.key("json_schema")?;
                    w.raw_value(s)?;
                }
                if self == Wire::OpenAi && !has("structured_outputs") {
                    w.key("structured_outputs")?;
                    w.begin_object()?;
                    w.key("json")?;
                    w.raw_value(s)?;
                    w.end_object()?;
                }
            }
            (Some(Constraint::JsonSchema(s)), Wire::OpenAi | Wire::LlamaCpp) => {
                if !has("response_format") {
                    w.key("response_format")?;
                    w.begin_object()?;
                    w.key("type")?;
                    w.string("json_schema")?;
                    w.key("json_schema")?;
                    w.begin_object()?;
                    w.key("name")?;
                    w.string(schema::NAME)?;
                    w.key("strict")?;
                    w.bool(true)?;
                    w.key("schema")?;
                    w.raw_value(s)?;
                    w.end_object()?;
                    w.end_object()?;
                }
            }
        }
        Ok(())
    }

    /// Reads one reply object of this dialect (whole or a streamed piece) into `acc`; returns
    /// whether it said it is the last one. The checks every dialect shares (an object, no
    /// `error` member) are made before, by [`apply`].
    pub(crate) fn read(self, root: Value<'_>, acc: &mut Accumulator) -> Result<bool> {
        match self {
            Wire::OpenAi => read_openai(root, acc),
            Wire::Ollama => read_ollama(root, acc),
            Wire::LlamaCpp => read_llamacpp(root, acc),
        }
    }
}

/// Reads one reply object (whole or a streamed piece) into `acc`. Returns whether it said it is
/// the last one (Ollama `done: true`). A body with an `error` member is the server's error (its
/// text redacted by `r`); the text that lands in `acc` is redacted by `Accumulator::redact`
/// once the reply is whole.
pub(crate) fn apply(root: Value<'_>, wire: Wire, status: u16, acc: &mut Accumulator, r: &Redactor) -> Result<bool> {
    if root.kind() != Kind::Object {
        bail!(LlmError, "the server's reply is a JSON {}, not an object", root.kind().name());
    }
    if root.get("error").is_some_and(|e| !e.is_null()) {
        return Err(error_from_json(status, root, r));
    }
    wire.read(root, acc)
}

fn read_openai(root: Value<'_>, acc: &mut Accumulator) -> Result<bool> {
    let Some(choice) = root.path("choices.[0]") else {
        // The last streamed piece may carry only `usage`, with an empty `choices`.
        if let Some(u) = read_usage(root.get("usage")) {
            acc.usage = Some(u);
            return Ok(false);
        }
        if root.get("choices").is_some() {
            return Ok(false);
        }
        bail!(LlmError, "the server's reply has no choices[0] (is this an OpenAI-compatible endpoint?)");
    };
    let msg = choice.get("message").or_else(|| choice.get("delta"));
    if let Some(msg) = msg {
        read_text(msg.get("content"), acc)?;
        read_reasoning(msg, acc);
    } else if let Some(text) = choice.get("text").and_then(|t| t.as_str()) {
        acc.push_content(text)?;
        acc.pieces += 1;
    }
    if let Some(f) = choice.get("finish_reason").and_then(|f| f.as_str()) {
        acc.finish = FinishReason::from_name(f);
    }
    // Each token's log-probability: `logprobs.content` on chat (and newer llama.cpp text
    // completion), the parallel `tokens` and `token_logprobs` of OpenAI's text completion.
    if let Some(lp) = choice.get("logprobs").filter(|l| l.kind() == Kind::Object) {
        if let Some(content) = lp.get("content").filter(|c| c.kind() == Kind::Array) {
            for t in content.items() {
                acc.logprobs.push_entry(t);
            }
        } else if let (Some(tokens), Some(lps)) = (lp.get("tokens"), lp.get("token_logprobs")) {
            for (t, l) in tokens.items().zip(lps.items()) {
                acc.logprobs.push(t.as_str().map(str::len), l.as_f64());
            }
        }
    }
    if let Some(u) = read_usage(root.get("usage")) {
        acc.usage = Some(u);
    }
    // llama.cpp's own figure of prompt tokens reused from its cache.
    if let Some(n) = root.path("timings.cache_n").and_then(|x| x.as_u64()) {
        let u = acc.usage.get_or_insert_with(Usage::default);
        u.cached_tokens = Some(n);
    }
    Ok(false)
}

fn read_ollama(root: Value<'_>, acc: &mut Accumulator) -> Result<bool> {
    if let Some(msg) = root.get("message") {
        read_text(msg.get("content"), acc)?;
        read_reasoning(msg, acc);
    } else if root.get("response").is_some() {
        // `/api/generate`: the text and the thinking at the top level.
        read_text(root.get("response"), acc)?;
        read_reasoning(root, acc);
    }
    if let Some(lp) = root.get("logprobs").filter(|l| l.kind() == Kind::Array) {
        for t in lp.items() {
            acc.logprobs.push_entry(t);
        }
    }
    let done = root.get("done").and_then(|d| d.as_bool()).unwrap_or(false);
    if let Some(r) = root.get("done_reason").and_then(|r| r.as_str()) {
        acc.finish = FinishReason::from_name(r);
    } else if done {
        acc.finish = FinishReason::Stop;
    }
    let prompt = root.get("prompt_eval_count").and_then(|v| v.as_u64());
    let eval = root.get("eval_count").and_then(|v| v.as_u64());
    if prompt.is_some() || eval.is_some() {
        let (p, c) = (prompt.unwrap_or(0), eval.unwrap_or(0));
        acc.usage = Some(Usage {
            prompt_tokens: p,
            completion_tokens: c,
            total_tokens: p.saturating_add(c),
            cached_tokens: None,
        });
    }
    Ok(done)
}

fn read_llamacpp(root: Value<'_>, acc: &mut Accumulator) -> Result<bool> {
    read_text(root.get("content"), acc)?;
    if let Some(lp) = root.get("completion_probabilities").filter(|l| l.kind() == Kind::Array) {
        for t in lp.items() {
            acc.logprobs.push_entry(t);
        }
    }
    let done = root.get("stop").and_then(|d| d.as_bool()).unwrap_or(false);
    let flag = |k: &str| root.get(k).and_then(|v| v.as_bool()) == Some(true);
    // `stop_type` since 2024 (`none` while streaming); the `stopped_*` flags before.
    acc.finish = match root.get("stop_type").and_then(|t| t.as_str()) {
        Some("eos" | "word") => FinishReason::Stop,
        Some("limit") => FinishReason::Length,
        Some("none") | None if !done => acc.finish,
        Some(_) => FinishReason::Other,
        None if flag("stopped_limit") => FinishReason::Length,
        None if flag("stopped_eos") || flag("stopped_word") => FinishReason::Stop,
        None => FinishReason::Other,
    };
    // `tokens_evaluated` counts the whole prompt, `timings.cache_n` the part taken from
    // the prompt cache (`timings.prompt_n` the rest).
    let n = |k: &str| root.path(k).and_then(|x| x.as_u64());
    let cached = n("timings.cache_n");
    let prompt = n("tokens_evaluated").or_else(|| Some(n("timings.prompt_n")?.saturating_add(cached.unwrap_or(0))));
    let predicted = n("tokens_predicted").or_else(|| n("timings.predicted_n"));
    if done && (prompt.is_some() || predicted.is_some()) {
        let (p, c) = (prompt.unwrap_or(0), predicted.unwrap_or(0));
        acc.usage = Some(Usage {
            prompt_tokens: p,
            completion_tokens: c,
            total_tokens: p.saturating_add(c),
            cached_tokens: cached,
        });
    }
    Ok(done)
}
