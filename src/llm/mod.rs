//! The LLM providers (docs/design.md §7): OpenAI-compatible chat completions (the default: LM
//! Studio, llama.cpp, vLLM, Ollama's `/v1`, OpenAI, OpenRouter), Ollama's native `/api/chat`,
//! and `replay` (scripted replies from a file); streamed or whole replies; and the health probe.
//! An endpoint whose path names a text-completion API (`/v1/completions`, llama.cpp's
//! `/completion`, Ollama's `/api/generate`) gets the prompt as one document instead, for base
//! models ([`settings::Api`]). What each server sends and needs: `docs/servers.md`.
//!
//! - [`settings`]: the plain settings struct and its defaults.
//! - [`client`]: the client the agent calls (`complete`, `health`).
//! - [`reply`]: reading replies and servers' error bodies.
//! - [`stream`]: SSE and NDJSON decoding.
//! - `wire`: each server's dialect in one place: its request fields and how its answer reads.
//! - [`replay`]: the replay script.
//! - [`embed`]: the embeddings client (OpenAI `/v1/embeddings`, Ollama `/api/embed`) that recall
//!   by meaning uses.
//!
//! ```text
//! let mut llm = llm::Client::new(&settings)?;                       // start-up: checks, reserves
//! let c = llm.complete(&Prompt::new(None, &prompt), &mut |n| status(n), &|| stopping())?;
//! match c.outcome { Outcome::Text => act(c.content), Outcome::ReasoningOnly | Outcome::Empty => ... }
//! ```

pub mod client;
pub mod embed;
pub mod replay;
pub mod reply;
pub mod settings;
pub mod stream;
mod wire;

pub use client::{Client, Completion, Health, ModelState, Prompt};
pub use reply::{FinishReason, Outcome, TokenLogprob, TokenLogprobs, Usage, LLM_SCORED_TOKENS_MAX};
pub use settings::{Api, Logprobs, ProviderKind, Settings};
