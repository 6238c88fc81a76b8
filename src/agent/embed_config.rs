//! `memory.embeddings` in `config.json`: recall by meaning, off unless this object is present.
//!
//! ```json
//! "memory": {"embeddings": {"endpoint": "http://127.0.0.1:8081/v1/embeddings",
//!                           "model": "all-MiniLM-L6-v2", "dimension": 384}}
//! ```
//!
//! `endpoint`, `model` and `dimension` are required; `api` (`openai` or `ollama`) follows the
//! endpoint's path unless given; `query_prefix`, `document_prefix`, `batch`,
//! `connect_timeout_ms`, `read_timeout_ms`, `max_retries` and `api_key_env` have defaults
//! ([`EmbedSettings::default`]). Read by the same [`Checker`] as the rest of the file, so a
//! typo is a problem naming the nearest key. The commands that do not load the whole
//! configuration (`memory search`, `memory embed`) read only this object (`cli::memory_embed`).

use super::checker::{Checker, Got, Key, Target};
use crate::json::Value;
use crate::limits::{EMBED_BATCH_MAX, EMBED_MAX_DIMENSION};
use crate::llm::embed::{EmbedApi, EmbedSettings};
use std::time::Duration;

/// The settings being read, and which of the required ones were seen.
pub struct Reading {
    /// The settings so far (defaults where not given).
    pub s: EmbedSettings,
    api_given: bool,
}

/// `memory.embeddings`.
pub const EMBEDDINGS: &[Key<Reading>] = &[
    Key::text("endpoint", 2048, Slot::Endpoint),
    Key::choice("api", &["openai", "ollama"], Slot::Api),
    Key::text("model", 256, Slot::Model),
    Key::integer("dimension", 1, EMBED_MAX_DIMENSION as i64, Slot::Dimension),
    Key::text("query_prefix", 256, Slot::QueryPrefix),
    Key::text("document_prefix", 256, Slot::DocumentPrefix),
    Key::integer("batch", 1, EMBED_BATCH_MAX as i64, Slot::Batch),
    Key::integer("connect_timeout_ms", 1, 3_600_000, Slot::ConnectTimeout),
    Key::integer("read_timeout_ms", 1, 3_600_000, Slot::ReadTimeout),
    Key::integer("max_retries", 0, 10, Slot::MaxRetries),
    Key::text("api_key_env", 128, Slot::ApiKeyEnv),
];

/// Where the values of [`EMBEDDINGS`] go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Endpoint,
    Api,
    Model,
    Dimension,
    QueryPrefix,
    DocumentPrefix,
    Batch,
    ConnectTimeout,
    ReadTimeout,
    MaxRetries,
    ApiKeyEnv,
}

impl Target for Reading {
    type Slot = Slot;

    fn set(&mut self, to: Slot, value: Got<'_>) -> bool {
        let s = &mut self.s;
        match (to, value) {
            (Slot::Endpoint, Got::Text(t)) => s.endpoint = t.trim().to_string(),
            (Slot::Api, Got::Text(t)) => {
                s.api = match t {
                    "openai" => EmbedApi::OpenAi,
                    "ollama" => EmbedApi::Ollama,
                    _ => return false,
                };
                self.api_given = true;
            }
            (Slot::Model, Got::Text(t)) => s.model = t.trim().to_string(),
            (Slot::Dimension, Got::Integer(n)) => s.dimension = n as usize,
            (Slot::QueryPrefix, Got::Text(t)) => s.query_prefix = t.to_string(),
            (Slot::DocumentPrefix, Got::Text(t)) => s.document_prefix = t.to_string(),
            (Slot::Batch, Got::Integer(n)) => s.batch = n as usize,
            (Slot::ConnectTimeout, Got::Integer(ms)) => s.connect_timeout = Duration::from_millis(ms as u64),
            (Slot::ReadTimeout, Got::Integer(ms)) => s.read_timeout = Duration::from_millis(ms as u64),
            (Slot::MaxRetries, Got::Integer(n)) => s.max_retries = n as u32,
            (Slot::ApiKeyEnv, Got::Text(k)) => s.api_key_env = Some(k.trim().to_string()).filter(|k| !k.is_empty()),
            _ => return false,
        }
        true
    }
}

/// Reads `memory.embeddings` from the `memory` object `memory` (at `path`, `memory`): `None`
/// when absent (or with problems, which are in `c`).
pub fn read(c: &mut Checker, memory: Option<Value<'_>>, path: &str) -> Option<EmbedSettings> {
    let v = c.object(memory, path, "embeddings")?;
    let at = super::checker::join(path, "embeddings");
    let before = c.problems().len();
    let mut r = Reading { s: EmbedSettings::default(), api_given: false };
    c.read(Some(v), &at, EMBEDDINGS, &mut r);
    if r.s.endpoint.is_empty() {
        c.problem_at(&at, "endpoint", "missing; e.g. \"http://127.0.0.1:8081/v1/embeddings\"");
    } else if let Err(e) = crate::http::Url::parse(&r.s.endpoint) {
        c.problem_at(&at, "endpoint", e.message());
    }
    if r.s.model.is_empty() {
        c.problem_at(&at, "model", "missing; name the embedding model the server has loaded");
    }
    if r.s.dimension == 0 {
        c.problem_at(&at, "dimension", "missing; the model's vector length, e.g. 384 for all-MiniLM-L6-v2");
    }
    if !r.api_given {
        r.s.api = EmbedApi::of_endpoint(&r.s.endpoint);
    }
    (c.problems().len() == before).then_some(r.s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Document;

    fn parse(text: &str) -> (Option<EmbedSettings>, Vec<String>) {
        let mut doc = Document::with_capacity(256, 4096);
        doc.parse(text.as_bytes()).unwrap();
        let mut c = Checker::new();
        let s = read(&mut c, Some(doc.root()), "memory");
        (s, c.problems().to_vec())
    }

    #[test]
    fn reads_the_settings_and_their_defaults() {
        let (s, p) = parse(
            r#"{"embeddings": {"endpoint": "http://127.0.0.1:11434/api/embed", "model": "nomic-embed-text",
                "dimension": 768, "query_prefix": "search_query: ", "batch": 4}}"#,
        );
        assert!(p.is_empty(), "{p:?}");
        let s = s.unwrap();
        assert_eq!(s.api, EmbedApi::Ollama);
        assert_eq!((s.dimension, s.batch, s.query_prefix.as_str()), (768, 4, "search_query: "));
        assert_eq!(s.read_timeout, EmbedSettings::default().read_timeout);
        assert_eq!(parse(r#"{}"#), (None, vec![]));
    }

    #[test]
    fn problems_name_the_key() {
        let (s, p) = parse(r#"{"embeddings": {"endpoint": "http://h/v1/embeddings", "modle": "m", "dimension": 0}}"#);
        assert!(s.is_none());
        let all = p.join("\n");
        assert!(all.contains("memory.embeddings.modle: unknown key; did you mean memory.embeddings.model?"), "{all}");
        assert!(all.contains("memory.embeddings.dimension"), "{all}");
    }
}
