//! The LLM client: builds the request for the configured provider and API (chat messages, or
//! one document for a text-completion endpoint), sends it through the HTTP client (or reads the
//! replay script), and turns the answer into a [`Completion`] or a typed error.
//!
//! Everything is reserved in [`Client::new`]: the request body, the JSON arena the reply is
//! parsed into, the content and reasoning buffers, and the streaming line and event buffers.
//! A [`Completion`] borrows its text from those buffers, so a cycle copies the reply once
//! (decoded from JSON) and allocates nothing.
//!
//! Errors the agent acts on: `CONTEXT_OVERFLOW` (page memory out and try again, never a plain
//! retry), `LLM_UNAVAILABLE` / `LLM_TIMEOUT` (the server is down, loading or silent, after the
//! HTTP layer's own retries), `LLM_ERROR` (the server refused, with its message; a `500` to a
//! seeded request is first sent again with seeds of its own, [`retry_seed`], since a server
//! that failed to read what its model wrote fails the same way on the same seed),
//! `INTERRUPTED` (the stop check said so), `NOT_FOUND` (the replay script is exhausted),
//! and `HTTP_PROTOCOL` / `RESPONSE_TOO_LARGE` / `JSON_INVALID` / `CAPACITY_EXCEEDED` for
//! answers that cannot be read.

use super::replay::Replay;
use super::reply::{server_error, split_think, Accumulator, FinishReason, Outcome, TokenLogprobs, Usage};
use super::settings::{Api, ProviderKind, Settings};
use super::stream::StreamSink;
use super::wire::{apply, Sampling, Wire};
use crate::clock::sleep_unless_stopped;
use crate::error::{Error, Result};
use crate::fixed::{ArrayString, FixedBuf};
use crate::grammar::Constraint;
use crate::http::{self, Method, Redactor, Request, RetryPolicy, Scheme, Transport, Url};
use crate::json::{Document, Kind, Writer};
use crate::limits::{
    HTTP_MAX_BODY_BYTES, HTTP_MAX_URL_BYTES, LLM_MAX_CONTENT_BYTES, LLM_MAX_EVENT_BYTES, LLM_MAX_JSON_NODES,
    LLM_MAX_REASONING_BYTES, LLM_MAX_REQUEST_BYTES,
};
use core::fmt;
use std::time::{Duration, Instant};

/// What to send: an optional system message and the user message (the agent's prompt), with
/// the constraint, sampling seed and token cap of this request. To a text-completion endpoint
/// ([`Api::Completion`]) the two go as one document: the system text, a blank line, the user
/// text.
#[derive(Clone, Copy, Debug)]
pub struct Prompt<'a> {
    /// The system message, if any.
    pub system: Option<&'a str>,
    /// The user message.
    pub user: &'a str,
    /// A grammar or JSON Schema the server should constrain the reply with (see
    /// [`Client::complete`] for how each provider is sent it).
    pub constraint: Option<Constraint<'a>>,
    /// The sampling seed (servers default to a fixed one, so a near-identical prompt would get
    /// the same reply again).
    pub seed: Option<u64>,
    /// Overrides `llm.max_tokens` for this request (the constraint probe asks for a few).
    pub max_tokens: Option<u32>,
    /// The presence penalty (OpenAI's `presence_penalty`, Ollama's option of that name): what
    /// the reply or the prompt's tail already holds gets less likely. `None` sends none (the
    /// server's default); `llm.extra` wins over it.
    pub presence_penalty: Option<f64>,
    /// Ask for each generated token's log-probability ([`Completion::logprobs`]). Such a
    /// request is sent whole, never streamed.
    pub logprobs: bool,
}

impl<'a> Prompt<'a> {
    /// A plain request: these messages, no constraint, no seed, the configured token cap.
    pub const fn new(system: Option<&'a str>, user: &'a str) -> Prompt<'a> {
        Prompt { system, user, constraint: None, seed: None, max_tokens: None, presence_penalty: None, logprobs: false }
    }
}

/// A model's answer. The text borrows from the client's buffers until the next call.
#[derive(Clone, Copy, Debug)]
pub struct Completion<'a> {
    /// The reply text to act on, with any `<think>` block moved to `reasoning`.
    pub content: &'a str,
    /// The model's reasoning, for the log only (never parsed for actions).
    pub reasoning: Option<&'a str>,
    /// Whether `reasoning` had to be cut to fit [`LLM_MAX_REASONING_BYTES`].
    pub reasoning_cut: bool,
    /// Text, reasoning only, or nothing.
    pub outcome: Outcome,
    /// Why the model stopped (`Length` means the content is cut).
    pub finish_reason: FinishReason,
    /// Token counts, when the server gave them.
    pub usage: Option<Usage>,
    /// The final HTTP status (200; 0 for `replay`).
    pub http_status: u16,
    /// HTTP attempts made (1 unless retries were needed).
    pub attempts: u32,
    /// Time from the call to the complete answer.
    pub latency: Duration,
    /// Each token's log-probability, when the prompt asked for them ([`Prompt::logprobs`]);
    /// [`TokenLogprobs::sent`] says whether the server gave any.
    pub logprobs: &'a TokenLogprobs,
}

/// A send that failed: why, after how many HTTP attempts, and the status that failed it (0
/// when no answer came).
struct Failed {
    error: Error,
    attempts: u32,
    status: u16,
}

impl Failed {
    /// A failure before any answer: the request not built or not sent (the HTTP layer's own
    /// retries spent).
    fn unsent(error: Error) -> Failed {
        Failed { error, attempts: 1, status: 0 }
    }
}

/// The seed of retry `retry` (0: the first send) of a request seeded `seed`: `seed` itself,
/// then [`mix_seed`] of the two. A fixed function of the two, so a replay of the run sends the
/// same.
pub fn retry_seed(seed: u64, retry: u32) -> u64 {
    if retry == 0 {
        return seed;
    }
    mix_seed(seed ^ u64::from(retry).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// A sampling seed from `z` (its parts already combined): splitmix64's finalizer, kept below
/// 2^53 so every JSON reader reads the seed exactly.
pub fn mix_seed(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) & ((1 << 53) - 1)
}

/// Whether the server is there and has the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelState {
    /// The server lists the configured model.
    Listed,
    /// The server answers but does not list the model (a typo, or not pulled/downloaded).
    NotListed,
    /// The server is loading a model (llama.cpp `503 Loading model`).
    Loading,
    /// The server is ready but has no model list to check against (llama.cpp `/health`).
    Ready,
}

/// The result of [`Client::health`]. An unreachable server is an error instead
/// (`LLM_UNAVAILABLE` or `LLM_TIMEOUT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Health {
    /// What the server said about the model.
    pub model: ModelState,
    /// How many models the server listed.
    pub models_listed: u32,
    /// The path that was probed (`/v1/models`, `/health`, `/api/tags`; empty for replay).
    pub probe: ArrayString<HTTP_MAX_URL_BYTES>,
    /// The probe's HTTP status (0 for replay).
    pub http_status: u16,
}

/// Where requests go.
struct Endpoints {
    /// Where the model is asked: the chat or the text-completion URL.
    ask: Url,
    models: Url,
    health: Url,
}

/// The LLM client. See the module documentation.
pub struct Client {
    /// The protocol spoken ([`Settings::protocol`]).
    provider: ProviderKind,
    /// Chat or text completion ([`Settings::api`]).
    api: Api,
    /// The dialect of the answers.
    wire: Wire,
    model: String,
    temperature: Option<f64>,
    max_tokens: Option<u32>,
    stop: Vec<String>,
    stream: bool,
    context_window: Option<u32>,
    extra: Option<Document>,
    /// Each member's value of `extra`, in order, as compact JSON: written once here, copied
    /// into each request as it is (a second copy of the JSON writer's value walk, for the
    /// request buffer, cost 2.5 KB of code).
    extra_values: Vec<String>,
    http: Option<http::HttpClient>,
    /// Finds the API key in what the server sends (a copy of the HTTP client's).
    redactor: Redactor,
    endpoints: Option<Endpoints>,
    replay: Option<Replay>,
    request: FixedBuf,
    doc: Document,
    acc: Accumulator,
    line: FixedBuf,
    data: FixedBuf,
    /// The last answer's HTTP status, attempts and latency (see [`Client::last_completion`]).
    last: (u16, u32, Duration),
    /// Retries of a request the server failed, from `llm.retry`.
    retry: RetryPolicy,
    /// The seed the last request went with ([`Client::last_seed`]).
    last_seed: Option<u64>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("llm::Client")
            .field("provider", &self.provider)
            .field("api", &self.api)
            .field("model", &self.model)
            .field("ask", &self.endpoints.as_ref().map(|e| &e.ask))
            .field("http", &self.http)
            .field("replay", &self.replay)
            .finish()
    }
}

impl Client {
    /// Checks the settings and reserves every buffer. `CONFIG_INVALID` on a malformed endpoint,
    /// an `https://` endpoint without the curl transport, an `ollama` endpoint naming a
    /// text-completion route other than `/api/generate`, an empty model name, an `extra` that
    /// is not a JSON object, an unset API key variable, or a replay script that cannot be
    /// opened.
    pub fn new(settings: &Settings) -> Result<Client> {
        let extra = if settings.extra.trim().is_empty() {
            None
        } else {
            let mut d = Document::with_capacity(LLM_MAX_JSON_NODES, settings.extra.len());
            d.parse(settings.extra.as_bytes()).map_err(|e| {
                e.with_code(crate::error::Code::ConfigInvalid).context(format_args!("llm extra fields"))
            })?;
            if d.root().kind() != Kind::Object {
                bail!(ConfigInvalid, "llm extra fields must be a JSON object, found {}", d.root().kind().name());
            }
            Some(d)
        };
        let mut extra_values = Vec::new();
        for (_, v) in extra.iter().flat_map(|d| d.root().members()) {
            let mut json = String::new();
            Writer::compact(&mut json as &mut dyn fmt::Write).value(v)?;
            extra_values.push(json);
        }
        if let Some(t) = settings.temperature {
            if !t.is_finite() || t < 0.0 {
                bail!(ConfigInvalid, "temperature must be a number >= 0, found {}", t);
            }
        }
        let mut client = Client {
            provider: settings.protocol(),
            api: settings.api(),
            wire: Wire::OpenAi,
            model: settings.model.clone(),
            temperature: settings.temperature,
            max_tokens: settings.max_tokens,
            stop: settings.stop.clone(),
            stream: settings.stream,
            context_window: settings.context_window,
            extra,
            extra_values,
            http: None,
            redactor: Redactor::none(),
            endpoints: None,
            replay: None,
            request: FixedBuf::with_capacity("LLM request body (LLM_MAX_REQUEST_BYTES)", LLM_MAX_REQUEST_BYTES),
            doc: Document::with_capacity(LLM_MAX_JSON_NODES, HTTP_MAX_BODY_BYTES),
            acc: Accumulator::new(LLM_MAX_CONTENT_BYTES, LLM_MAX_REASONING_BYTES),
            line: FixedBuf::with_capacity("streamed line (LLM_MAX_EVENT_BYTES)", LLM_MAX_EVENT_BYTES),
            data: FixedBuf::with_capacity("streamed event (LLM_MAX_EVENT_BYTES)", LLM_MAX_EVENT_BYTES),
            last: (0, 0, Duration::ZERO),
            retry: settings.retry,
            last_seed: None,
        };
        if settings.provider == ProviderKind::Replay {
            let Some(path) = &settings.replay_path else {
                bail!(ConfigInvalid, "provider \"replay\" needs replay_path (a JSON Lines file of replies)");
            };
            client.replay = Some(Replay::open(path)?);
            return Ok(client);
        }
        if settings.model.trim().is_empty() {
            bail!(ConfigInvalid, "the model name is empty");
        }
        let base = Url::parse(&settings.endpoint)?;
        if base.scheme() == Scheme::Https && settings.transport != Transport::Curl {
            bail!(
                ConfigInvalid,
                "endpoint {} is https://, but this std-only build has no TLS: use an http:// endpoint \
                 (a local server or a TLS-terminating proxy), or set \"transport\": \"curl\" to use the system curl",
                base
            );
        }
        let (ep, wire) = endpoints(&base, client.provider, client.api)?;
        client.endpoints = Some(ep);
        client.wire = wire;
        let mut h = http::HttpClient::new(http::HttpSettings {
            connect_timeout: settings.connect_timeout,
            read_timeout: settings.read_timeout,
            retry: settings.retry,
            max_body_bytes: HTTP_MAX_BODY_BYTES,
            transport: settings.transport,
        })?;
        if let Some(var) = &settings.api_key_env {
            h.set_bearer_from_env(var)?;
            client.redactor = h.redactor().clone();
        }
        client.http = Some(h);
        Ok(client)
    }

    /// The protocol in use ([`Settings::protocol`]: `ollama` for an `/api/generate` endpoint
    /// whatever the configured provider).
    pub fn provider(&self) -> ProviderKind {
        self.provider
    }

    /// Chat or text completion, as the endpoint's path says ([`Settings::api`]).
    pub fn api(&self) -> Api {
        self.api
    }

    /// The model name sent with each request.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The URL the model is asked at, chat or text completion (none for replay).
    pub fn ask_url(&self) -> Option<&Url> {
        self.endpoints.as_ref().map(|e| &e.ask)
    }

    /// The body of the last request sent (for the audit log; it holds the prompt, never the
    /// API key, which travels only in a header).
    pub fn last_request_body(&self) -> &[u8] {
        self.request.as_slice()
    }

    /// Asks the model. `progress` gets the number of text pieces received so far while a
    /// streamed reply arrives; `should_stop` is asked while waiting (backoff sleeps, silent
    /// reads, between streamed pieces) and ends the call with `INTERRUPTED` when it says yes.
    /// See the module documentation for the errors.
    pub fn complete(
        &mut self,
        prompt: &Prompt<'_>,
        progress: &mut dyn FnMut(u64),
        should_stop: &dyn Fn() -> bool,
    ) -> Result<Completion<'_>> {
        let start = Instant::now();
        self.acc.reset();
        let (status, attempts) = if let Some(replay) = self.replay.as_mut() {
            if should_stop() {
                bail!(Interrupted, "stopped before asking the model");
            }
            replay.next(&mut self.doc, &mut self.acc)?;
            progress(self.acc.pieces);
            (0, 1)
        } else {
            self.exchange(prompt, progress, should_stop)?
        };
        // Before anything reads the reply: the key, echoed by a server, is never kept.
        self.acc.redact(&self.redactor);
        split_think(&mut self.acc);
        self.acc.check_text()?;
        self.last = (status, attempts, start.elapsed());
        Ok(self.last_completion())
    }

    /// The answer of the last successful [`Client::complete`] again (its text stays in the
    /// client's buffers until the next call).
    pub fn last_completion(&self) -> Completion<'_> {
        let (http_status, attempts, latency) = self.last;
        Completion {
            content: self.acc.content_str(),
            reasoning: self.acc.reasoning_str(),
            reasoning_cut: self.acc.reasoning_cut,
            outcome: self.acc.outcome(),
            finish_reason: self.acc.finish,
            usage: self.acc.usage,
            http_status,
            attempts,
            latency,
            logprobs: &self.acc.logprobs,
        }
    }

    /// The sampling seed the last request went with: the prompt's, or a retry's own
    /// ([`retry_seed`]); `None` for a prompt without one. A replay of the run sends this one.
    pub fn last_seed(&self) -> Option<u64> {
        self.last_seed
    }

    /// Sends the request and reads the answer into the accumulator; (status, attempts). A
    /// seeded request the server failed with a `500` goes again with the next seed of its own,
    /// as `llm.retry` says (see [`retry_seed`]); the HTTP layer retries everything else.
    fn exchange(
        &mut self,
        prompt: &Prompt<'_>,
        progress: &mut dyn FnMut(u64),
        should_stop: &dyn Fn() -> bool,
    ) -> Result<(u16, u32)> {
        let mut attempts = 0;
        let mut retry = 0;
        loop {
            let seed = prompt.seed.map(|s| retry_seed(s, retry));
            self.last_seed = seed;
            match self.exchange_once(&Prompt { seed, ..*prompt }, progress, should_stop) {
                Ok((status, n)) => return Ok((status, attempts + n)),
                Err(Failed { error, attempts: n, status }) => {
                    attempts += n;
                    // The server's own message, whole: a note of the seeds tried before it
                    // would push its end past the message's bound.
                    if status != 500 || seed.is_none() || retry >= self.retry.max_retries {
                        return Err(error);
                    }
                    sleep_unless_stopped(self.retry.delay(retry), should_stop)?;
                    retry += 1;
                }
            }
        }
    }

    /// One send of the request (with the HTTP layer's own retries, but a `500` not resent as
    /// it is: [`Request::resend_500`]).
    fn exchange_once(
        &mut self,
        prompt: &Prompt<'_>,
        progress: &mut dyn FnMut(u64),
        should_stop: &dyn Fn() -> bool,
    ) -> core::result::Result<(u16, u32), Failed> {
        self.build_request(prompt).map_err(Failed::unsent)?;
        let wire = self.wire;
        let (Some(http), Some(ep)) = (self.http.as_mut(), self.endpoints.as_ref()) else {
            return Err(Failed::unsent(crate::err!(LlmUnavailable, "no HTTP client is set up")));
        };
        let stream = self.stream && !prompt.logprobs;
        let accept = wire.accept(stream);
        let req = Request {
            method: Method::Post,
            url: &ep.ask,
            content_type: Some("application/json"),
            accept,
            body: self.request.as_slice(),
            resend_500: prompt.seed.is_none(),
        };
        if stream {
            let mut sink = StreamSink {
                wire,
                line: &mut self.line,
                data: &mut self.data,
                doc: &mut self.doc,
                acc: &mut self.acc,
                redactor: &self.redactor,
                progress,
                should_stop,
                done: false,
                after_cr: false,
            };
            let resp = http.send(&req, Some(&mut sink), should_stop).map_err(Failed::unsent)?;
            let (status, attempts, streamed) = (resp.status, resp.attempts, resp.streamed);
            if !streamed {
                return Err(Failed {
                    error: server_error(status, resp.body, sink.doc, &self.redactor),
                    attempts,
                    status,
                });
            }
            sink.finish().map_err(|error| Failed { error, attempts, status })?;
            Ok((status, attempts))
        } else {
            let resp = http.send(&req, None, should_stop).map_err(Failed::unsent)?;
            let (status, attempts) = (resp.status, resp.attempts);
            if !(200..300).contains(&status) {
                return Err(Failed {
                    error: server_error(status, resp.body, &mut self.doc, &self.redactor),
                    attempts,
                    status,
                });
            }
            let read = self.doc.parse(resp.body).map_err(|e| e.context(format_args!("the reply of {}", ep.ask)));
            read.and_then(|()| apply(self.doc.root(), wire, status, &mut self.acc, &self.redactor))
                .map_err(|error| Failed { error, attempts, status })?;
            Ok((status, attempts))
        }
    }

    /// Writes the request body for the provider and the API into `self.request`.
    fn build_request(&mut self, prompt: &Prompt<'_>) -> Result<()> {
        self.request.clear();
        let extra = self.extra.as_ref().map(|d| d.root());
        let has = |k: &str| extra.is_some_and(|e| e.get(k).is_some());
        let mut w = Writer::compact(&mut self.request as &mut dyn fmt::Write);
        w.begin_object()?;
        if !has("model") {
            w.key("model")?;
            w.string(&self.model)?;
        }
        match self.api {
            Api::Chat if !has("messages") => {
                w.key("messages")?;
                w.begin_array()?;
                if let Some(system) = prompt.system {
                    w.begin_object()?;
                    w.key("role")?;
                    w.string("system")?;
                    w.key("content")?;
                    w.string(system)?;
                    w.end_object()?;
                }
                w.begin_object()?;
                w.key("role")?;
                w.string("user")?;
                w.key("content")?;
                w.string(prompt.user)?;
                w.end_object()?;
                w.end_array()?;
            }
            Api::Chat => {}
            Api::Completion => {
                if !has("prompt") {
                    w.key("prompt")?;
                    document(&mut w, prompt)?;
                }
                self.wire.write_completion_flags(&mut w, &has)?;
            }
        }
        if !has("stream") {
            w.key("stream")?;
            w.bool(self.stream && !prompt.logprobs)?;
        }
        let sampling = Sampling {
            temperature: self.temperature,
            max_tokens: prompt.max_tokens.or(self.max_tokens),
            seed: prompt.seed,
            presence_penalty: prompt.presence_penalty,
            context_window: self.context_window,
            stop: &self.stop,
            logprobs: prompt.logprobs,
            api: self.api,
        };
        self.wire.write_sampling(&mut w, &sampling, &has)?;
        self.wire.write_constraint(&mut w, self.api, prompt.constraint, &has)?;
        if let Some(e) = extra {
            for ((k, _), json) in e.members().zip(&self.extra_values) {
                w.key(k)?;
                w.raw_value(json)?;
            }
        }
        w.end_object()?;
        w.finish().map_err(|e| e.context(format_args!("building the LLM request")))
    }

    /// Probes the server: `GET /v1/models` (OpenAI-compatible; `/health` at the server root
    /// when there is no model list) or `GET /api/tags` (Ollama), and says whether the model is
    /// there, missing or loading. An unreachable server is `LLM_UNAVAILABLE` / `LLM_TIMEOUT`.
    pub fn health(&mut self, should_stop: &dyn Fn() -> bool) -> Result<Health> {
        let mut health =
            Health { model: ModelState::Listed, models_listed: 0, probe: ArrayString::new(), http_status: 0 };
        if self.replay.is_some() {
            health.models_listed = 1;
            return Ok(health);
        }
        let (Some(http), Some(ep)) = (self.http.as_mut(), self.endpoints.as_ref()) else {
            bail!(LlmUnavailable, "no HTTP client is set up");
        };
        for url in [&ep.models, &ep.health] {
            health.probe.clear();
            let _ = health.probe.push_str(url.path());
            let req = Request {
                method: Method::Get,
                url,
                content_type: None,
                accept: "application/json",
                body: b"",
                resend_500: true,
            };
            let resp = http.send(&req, None, should_stop)?;
            health.http_status = resp.status;
            match resp.status {
                200..=299 => {}
                503 => {
                    health.model = ModelState::Loading;
                    return Ok(health);
                }
                404 | 405 if !core::ptr::eq(url, &ep.health) => continue,
                s => return Err(server_error(s, resp.body, &mut self.doc, &self.redactor)),
            }
            if core::ptr::eq(url, &ep.health) {
                health.model = ModelState::Ready;
                return Ok(health);
            }
            self.doc.parse(resp.body).map_err(|e| e.context(format_args!("the model list of {}", url)))?;
            let root = self.doc.root();
            let list = root.get("data").or_else(|| root.get("models"));
            let mut found = false;
            for m in list.into_iter().flat_map(|l| l.items()) {
                health.models_listed += 1;
                for key in ["id", "name", "model"] {
                    if let Some(name) = m.get(key).and_then(|v| v.as_str()) {
                        found |= model_matches(name, &self.model);
                    }
                }
            }
            health.model = if found { ModelState::Listed } else { ModelState::NotListed };
            return Ok(health);
        }
        Ok(health)
    }
}

/// The prompt as one document, for a text-completion request: the system text (if any), a
/// blank line, the user text; written as one JSON string straight from the two parts, with no
/// chat template and no copy.
fn document<W: fmt::Write + ?Sized>(w: &mut Writer<'_, W>, prompt: &Prompt<'_>) -> Result<()> {
    match prompt.system {
        Some(system) => w.string_of(&[system, "\n\n", prompt.user]),
        None => w.string_of(&[prompt.user]),
    }
}

/// Whether a listed model name is the configured one (Ollama adds `:latest` to bare names).
fn model_matches(listed: &str, wanted: &str) -> bool {
    listed == wanted || listed.strip_suffix(":latest") == Some(wanted) || wanted.strip_suffix(":latest") == Some(listed)
}

/// The URLs for a protocol and an API (see [`Settings::endpoint`]), and the dialect of the
/// answers: the chat or text-completion URL, the model list and the health probe.
///
/// | protocol, API | asked at | model list | health |
/// |---|---|---|---|
/// | `openai`, chat | `<api>/chat/completions` | `<api>/models` | `<root>/health` |
/// | `openai`, completion | `<api>/completions` | `<api>/models` | `<root>/health` |
/// | `openai`, completion at `/completion` (llama.cpp) | `<root>/completion` | `<root>/v1/models` | `<root>/health` |
/// | `ollama`, chat | `<root>/api/chat` | `<root>/api/tags` | the same |
/// | `ollama`, completion | `<root>/api/generate` | `<root>/api/tags` | the same |
///
/// where `<api>` is the endpoint less its last part and `<root>` is `<api>` less a `/v1`.
fn endpoints(base: &Url, provider: ProviderKind, api: Api) -> Result<(Endpoints, Wire)> {
    let path = base.path();
    // The query keeps its '?'; without one, all of it is the path.
    let (path, query) = match path.find('?').and_then(|i| path.split_at_checked(i)) {
        Some(split) => split,
        None => (path, ""),
    };
    let path = path.trim_end_matches('/');
    let mut p: ArrayString<HTTP_MAX_URL_BYTES> = ArrayString::new();
    // Out of line: a closure here was inlined at each of the ten URLs below.
    #[inline(never)]
    fn url(base: &Url, p: &mut ArrayString<HTTP_MAX_URL_BYTES>, args: fmt::Arguments<'_>) -> Result<Url> {
        p.clear();
        p.format(args).map_err(|_| err!(ConfigInvalid, "endpoint path is longer than {} bytes", HTTP_MAX_URL_BYTES))?;
        base.with_path(p)
    }
    match (provider, api) {
        (ProviderKind::Ollama, Api::Chat) => {
            let root = path.strip_suffix("/api/chat").or_else(|| path.strip_suffix("/api")).unwrap_or(path);
            let ask = url(base, &mut p, format_args!("{}/api/chat{}", root, query))?;
            let models = url(base, &mut p, format_args!("{}/api/tags", root))?;
            Ok((Endpoints { ask, health: models.clone(), models }, Wire::Ollama))
        }
        (ProviderKind::Ollama, Api::Completion) => {
            let Some(root) = path.strip_suffix("/api/generate") else {
                bail!(
                    ConfigInvalid,
                    "endpoint {}: the \"ollama\" provider speaks Ollama's native API, whose text completion is \
                     /api/generate; for an OpenAI-compatible /v1/completions set provider \"openai\"",
                    base
                );
            };
            let ask = url(base, &mut p, format_args!("{}/api/generate{}", root, query))?;
            let models = url(base, &mut p, format_args!("{}/api/tags", root))?;
            Ok((Endpoints { ask, health: models.clone(), models }, Wire::Ollama))
        }
        (_, Api::Completion) if path.ends_with("/completion") => {
            // llama.cpp's native API, at the server root beside `/v1`.
            let root = path.strip_suffix("/completion").unwrap_or(path);
            let ask = url(base, &mut p, format_args!("{}/completion{}", root, query))?;
            let models = url(base, &mut p, format_args!("{}/v1/models", root))?;
            let health = url(base, &mut p, format_args!("{}/health", root))?;
            Ok((Endpoints { ask, models, health }, Wire::LlamaCpp))
        }
        (_, _) => {
            let (last, api) = match api {
                Api::Chat => ("/chat/completions", path.strip_suffix("/chat/completions").unwrap_or(path)),
                Api::Completion => ("/completions", path.strip_suffix("/completions").unwrap_or(path)),
            };
            let ask = url(base, &mut p, format_args!("{}{}{}", api, last, query))?;
            let models = url(base, &mut p, format_args!("{}/models", api))?;
            // llama.cpp serves `/health` at the server root, beside `/v1`.
            let root = api.strip_suffix("/v1").unwrap_or(api);
            let health = url(base, &mut p, format_args!("{}/health", root))?;
            Ok((Endpoints { ask, models, health }, Wire::OpenAi))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (ask, models, health) paths and the dialect for an endpoint.
    fn paths(endpoint: &str, provider: ProviderKind) -> (String, String, String, Wire) {
        let s = Settings { endpoint: endpoint.to_string(), provider, ..Settings::default() };
        let (e, wire) = endpoints(&Url::parse(endpoint).unwrap(), s.protocol(), s.api()).unwrap();
        (e.ask.path().to_string(), e.models.path().to_string(), e.health.path().to_string(), wire)
    }

    #[test]
    fn endpoint_paths() {
        use ProviderKind::{Ollama, OpenAi};
        let p = |a: &str, m: &str, h: &str, w: Wire| (a.to_string(), m.to_string(), h.to_string(), w);
        for (endpoint, provider, want) in [
            ("http://127.0.0.1:1234/v1/", OpenAi, p("/v1/chat/completions", "/v1/models", "/health", Wire::OpenAi)),
            (
                "http://h:8080/v1/chat/completions",
                OpenAi,
                p("/v1/chat/completions", "/v1/models", "/health", Wire::OpenAi),
            ),
            ("http://h:8080", OpenAi, p("/chat/completions", "/models", "/health", Wire::OpenAi)),
            ("http://h:11434", Ollama, p("/api/chat", "/api/tags", "/api/tags", Wire::Ollama)),
            ("http://h:11434/api", Ollama, p("/api/chat", "/api/tags", "/api/tags", Wire::Ollama)),
            ("http://h:11434/api/chat", Ollama, p("/api/chat", "/api/tags", "/api/tags", Wire::Ollama)),
            // Text completion, chosen by the path alone.
            ("http://h:8000/v1/completions", OpenAi, p("/v1/completions", "/v1/models", "/health", Wire::OpenAi)),
            (
                "http://h:8000/v1/completions/?a=b",
                OpenAi,
                p("/v1/completions?a=b", "/v1/models", "/health", Wire::OpenAi),
            ),
            ("http://h:8000/x/completions", OpenAi, p("/x/completions", "/x/models", "/x/health", Wire::OpenAi)),
            ("http://h:8080/completion", OpenAi, p("/completion", "/v1/models", "/health", Wire::LlamaCpp)),
            (
                "http://h:8080/llm/completion",
                OpenAi,
                p("/llm/completion", "/llm/v1/models", "/llm/health", Wire::LlamaCpp),
            ),
            ("http://h:11434/api/generate", Ollama, p("/api/generate", "/api/tags", "/api/tags", Wire::Ollama)),
            ("http://h:11434/api/generate", OpenAi, p("/api/generate", "/api/tags", "/api/tags", Wire::Ollama)),
        ] {
            assert_eq!(paths(endpoint, provider), want, "{endpoint} {provider:?}");
        }
        // Ollama's native API has no /v1/completions.
        let s = Settings { endpoint: "http://h:11434/v1/completions".into(), provider: Ollama, ..Settings::default() };
        let e = endpoints(&Url::parse(&s.endpoint).unwrap(), s.protocol(), s.api()).err().unwrap();
        assert_eq!(e.code(), crate::error::Code::ConfigInvalid);
        assert!(e.message().contains("set provider \"openai\""), "{e}");
    }

    #[test]
    fn a_completion_prompt_is_one_document() {
        let mut out = String::new();
        let mut w = Writer::compact(&mut out);
        document(&mut w, &Prompt::new(Some("You are \"x\"."), "Line 1\nLine 2")).unwrap();
        assert_eq!(out, r#""You are \"x\".\n\nLine 1\nLine 2""#);
        let mut out = String::new();
        let mut w = Writer::compact(&mut out);
        document(&mut w, &Prompt::new(None, "Only the user text")).unwrap();
        assert_eq!(out, r#""Only the user text""#);
    }

    #[test]
    fn model_names_match_with_latest_tag() {
        assert!(model_matches("llama3:latest", "llama3"));
        assert!(model_matches("qwen3", "qwen3:latest"));
        assert!(!model_matches("qwen3:8b", "qwen3"));
    }
}
