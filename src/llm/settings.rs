//! What the LLM client needs to know, as a plain struct with documented defaults. The agent's
//! configuration layer fills it from `config.json`; the client checks it once, at start-up
//! ([`super::Client::new`]), so a mistake is reported before the first cycle.

use crate::http::{RetryPolicy, Transport};
use std::path::PathBuf;
use std::time::Duration;

/// Which wire protocol the server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ProviderKind {
    /// `POST <endpoint>/chat/completions` (LM Studio, llama.cpp, vLLM, Ollama's `/v1`,
    /// OpenAI, OpenRouter). The default.
    #[default]
    OpenAi,
    /// Ollama's native `POST /api/chat`, which takes `options.num_ctx` (Ollama's `/v1` does not,
    /// and otherwise truncates long prompts silently).
    Ollama,
    /// Scripted replies from a JSON Lines file ([`Settings::replay_path`]), for demos and tests.
    Replay,
}

impl ProviderKind {
    /// Parses the config spelling: `"openai"`, `"ollama"` or `"replay"`.
    pub fn from_name(name: &str) -> Option<ProviderKind> {
        match name {
            "openai" => Some(ProviderKind::OpenAi),
            "ollama" => Some(ProviderKind::Ollama),
            "replay" => Some(ProviderKind::Replay),
            _ => None,
        }
    }

    /// The config spelling.
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Ollama => "ollama",
            ProviderKind::Replay => "replay",
        }
    }
}

/// Which kind of request the endpoint takes, named by the endpoint's path (see [`Settings::api`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Api {
    /// A chat request: the prompt as a system and a user message, which the server wraps in the
    /// model's chat template. The default.
    #[default]
    Chat,
    /// A text-completion request: the prompt as one document, continued as it is, with no chat
    /// template (base models, and small models that follow a template poorly). The
    /// OpenAI-compatible `/v1/completions` (llama-cpp-python, vLLM, llama.cpp, Ollama's `/v1`),
    /// llama.cpp's native `/completion`, or Ollama's native `/api/generate` (sent `raw`).
    Completion,
}

impl Api {
    /// The name shown in messages: `"chat"` or `"completion"`.
    pub fn name(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Completion => "completion",
        }
    }
}

/// The path of an endpoint URL, without its query, its fragment or trailing `/`s (empty when
/// there is none). Only compared against suffixes: the URL itself is checked by the client.
fn endpoint_path(endpoint: &str) -> &str {
    let end = endpoint.find(['?', '#']).unwrap_or(endpoint.len());
    let url = endpoint.get(..end).unwrap_or(endpoint).trim();
    let after_scheme = url.find("://").and_then(|i| url.get(i + 3..)).unwrap_or(url);
    let path = after_scheme.find('/').and_then(|i| after_scheme.get(i..)).unwrap_or("");
    path.trim_end_matches('/')
}

/// The LLM client's settings. See each field for its default.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Wire protocol. Default [`ProviderKind::OpenAi`].
    pub provider: ProviderKind,
    /// Server URL. For `openai`: the API base (`http://127.0.0.1:1234/v1`, the default, LM
    /// Studio's port), to which `/chat/completions` and `/models` are added; a URL that already
    /// ends in `/chat/completions` is used as it is. For `ollama`: the server root
    /// (`http://127.0.0.1:11434`), to which `/api/chat` and `/api/tags` are added (a trailing
    /// `/api` or `/api/chat` is accepted). Unused by `replay`.
    ///
    /// Its path also picks the [`Api`] ([`Settings::api`]): a URL ending in `/completions`
    /// (not `/chat/completions`), `/completion` or `/api/generate` asks for text completions,
    /// and `/api/generate` is Ollama's native API whatever `provider` says
    /// ([`Settings::protocol`]).
    pub endpoint: String,
    /// Model name sent with each request. Default `"local-model"` (LM Studio and llama.cpp
    /// answer with whatever model is loaded; Ollama and vLLM need the real name).
    pub model: String,
    /// Sampling temperature; `None` leaves it to the server. Default `Some(0.7)`.
    pub temperature: Option<f64>,
    /// Most tokens to generate (`max_tokens`; Ollama `num_predict`); `None` leaves it to the
    /// server. Default `Some(4096)`.
    pub max_tokens: Option<u32>,
    /// Stop sequences. Servers strip them from the content. Default none.
    pub stop: Vec<String>,
    /// A JSON object whose members are added to the request body as they are, e.g.
    /// `{"reasoning_effort":"none"}`, a GBNF `grammar`, `chat_template_kwargs`. A member named
    /// like one the client writes (`model`, `temperature`, `options`, ...) replaces the
    /// client's. Empty (the default) for none.
    pub extra: String,
    /// Name of the environment variable holding the API key, sent as `Authorization: Bearer`.
    /// The key itself never appears in the config, the logs or `Debug` output, and is redacted
    /// from everything the server sends back ([`crate::http::redact`]). Default none.
    pub api_key_env: Option<String>,
    /// Ask for a streamed reply (SSE, or NDJSON for Ollama native), so progress can be shown.
    /// Default `false`.
    pub stream: bool,
    /// The model's context window in tokens; sent as Ollama's `options.num_ctx`. Default
    /// `Some(8192)`.
    pub context_window: Option<u32>,
    /// How requests travel: the built-in client (`http://` only, the default) or the system
    /// `curl` (needed for `https://`).
    pub transport: Transport,
    /// Connect timeout. Default 10 s.
    pub connect_timeout: Duration,
    /// Per-read timeout (silence between bytes). Default 600 s.
    pub read_timeout: Duration,
    /// Retries and backoff. Default 3 retries, 100 ms base, 5 s cap.
    pub retry: RetryPolicy,
    /// The replay script, for [`ProviderKind::Replay`]. Default none.
    pub replay_path: Option<PathBuf>,
    /// How replies are constrained while the server samples them (`llm.constrain`): `auto`
    /// (the default: probe what the endpoint honours), `grammar`, `json_schema` or `off`.
    pub constrain: crate::grammar::Mode,
    /// The model writes a `<think>` block before its answer (`llm.thinks`, a reasoning model):
    /// the grammar allows one, of bounded length. Default `false`.
    pub thinks: bool,
    /// Which of the product's outlines ask for their tokens' log-probabilities
    /// (`llm.logprobs`). Default [`Logprobs::Outlines`].
    pub logprobs: Logprobs,
}

/// Which of the product's outlines ask for their tokens' log-probabilities (`llm.logprobs`):
/// the first outline picks the surest of its samples by them, and an outline leaves out
/// the items the model wrote unsurely (`agent::model`). A server computes them at a cost:
/// llama-cpp-python sorts the whole vocabulary in Python for each token, which took an outline
/// 2.4 times the time a token (docs/measurements.md, "What log-probabilities cost").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Logprobs {
    /// Every outline (the default).
    Outlines,
    /// Only a product's first outline, for its samples; later outlines keep every item
    /// (half the time an outline on llama-cpp-python, and the items with a word the grammar
    /// forced reach the product).
    FirstOutline,
    /// None: the first outline is asked once, and every item is kept.
    Off,
}

impl Logprobs {
    /// The setting named `name` (`outlines`, `first_outline`, `off`).
    pub fn from_name(name: &str) -> Option<Logprobs> {
        match name {
            "outlines" => Some(Logprobs::Outlines),
            "first_outline" => Some(Logprobs::FirstOutline),
            "off" => Some(Logprobs::Off),
            _ => None,
        }
    }
}

impl Settings {
    /// The kind of request the endpoint takes, from its path: [`Api::Completion`] when it ends
    /// in `/completions` (OpenAI-compatible `/v1/completions`; `/chat/completions` is chat),
    /// `/completion` (llama.cpp's native API) or `/api/generate` (Ollama's); [`Api::Chat`]
    /// otherwise, and always for `replay`. So a user switches to text completions by changing
    /// the endpoint alone.
    pub fn api(&self) -> Api {
        if self.provider == ProviderKind::Replay {
            return Api::Chat;
        }
        let path = endpoint_path(&self.endpoint);
        let completion = (path.ends_with("/completions") && !path.ends_with("/chat/completions"))
            || path.ends_with("/completion")
            || path.ends_with("/api/generate");
        if completion {
            Api::Completion
        } else {
            Api::Chat
        }
    }

    /// The wire protocol the client speaks: [`Settings::provider`], except that an endpoint
    /// ending in `/api/generate` is Ollama's native API (so `ollama`) whatever `provider` says.
    pub fn protocol(&self) -> ProviderKind {
        if self.provider == ProviderKind::OpenAi && endpoint_path(&self.endpoint).ends_with("/api/generate") {
            ProviderKind::Ollama
        } else {
            self.provider
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            provider: ProviderKind::OpenAi,
            endpoint: "http://127.0.0.1:1234/v1".to_string(),
            model: "local-model".to_string(),
            temperature: Some(0.7),
            max_tokens: Some(4096),
            stop: Vec::new(),
            extra: String::new(),
            api_key_env: None,
            stream: false,
            context_window: Some(8192),
            transport: Transport::Tcp,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(600),
            retry: RetryPolicy::default(),
            replay_path: None,
            constrain: crate::grammar::Mode::Auto,
            thinks: false,
            logprobs: Logprobs::Outlines,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(endpoint: &str, provider: ProviderKind) -> Settings {
        Settings { endpoint: endpoint.to_string(), provider, ..Settings::default() }
    }

    #[test]
    fn the_endpoint_path_picks_the_api_and_the_protocol() {
        use ProviderKind::{Ollama, OpenAi, Replay};
        for (endpoint, provider, api, protocol) in [
            ("http://127.0.0.1:1234/v1", OpenAi, Api::Chat, OpenAi),
            ("http://h:8080/v1/chat/completions", OpenAi, Api::Chat, OpenAi),
            ("http://h:8080/v1/chat/completions/", OpenAi, Api::Chat, OpenAi),
            ("http://h:8000/v1/completions", OpenAi, Api::Completion, OpenAi),
            ("http://h:8000/v1/completions/?x=1", OpenAi, Api::Completion, OpenAi),
            ("http://h:8000/completions", OpenAi, Api::Completion, OpenAi),
            ("http://h:8080/completion", OpenAi, Api::Completion, OpenAi),
            ("http://h:8080/completion#top", OpenAi, Api::Completion, OpenAi),
            ("http://h:11434/api/generate", OpenAi, Api::Completion, Ollama),
            ("http://h:11434/api/generate", Ollama, Api::Completion, Ollama),
            ("http://h:11434", Ollama, Api::Chat, Ollama),
            ("http://h:11434/api/chat", Ollama, Api::Chat, Ollama),
            ("http://completion", OpenAi, Api::Chat, OpenAi),
            ("http://h/v1/completions?model=chat/completions", OpenAi, Api::Completion, OpenAi),
            ("http://h/v1/completions", Replay, Api::Chat, Replay),
        ] {
            let s = at(endpoint, provider);
            assert_eq!((s.api(), s.protocol()), (api, protocol), "{endpoint} {provider:?}");
        }
        assert_eq!((Api::Chat.name(), Api::Completion.name()), ("chat", "completion"));
    }
}
