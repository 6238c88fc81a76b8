//! The embeddings client: texts in, one vector of `dimension` numbers per text out, from an
//! OpenAI-compatible `/v1/embeddings` endpoint (llama.cpp `llama-server --embeddings`, vLLM,
//! LM Studio, Ollama's `/v1`, the llama-cpp-python server) or Ollama's native `/api/embed`.
//!
//! It sits beside the chat client and shares its parts: the HTTP/1.1 client (timeouts,
//! bounded retries with backoff, bounded buffers, the bearer token from an environment
//! variable), the JSON reader and writer, and the reading of servers' error bodies.
//!
//! Wire (both APIs take the same request; the answers differ):
//!
//! ```text
//! POST /v1/embeddings  {"model": M, "input": ["t1", "t2"], "encoding_format": "float"}
//!   -> {"data": [{"index": 0, "embedding": [0.1, ...]}, {"index": 1, ...}], ...}
//! POST /api/embed      {"model": M, "input": ["t1", "t2"]}
//!   -> {"embeddings": [[0.1, ...], [...]], ...}
//! ```
//!
//! A text is sent with the configured prefix for its kind (models such as nomic-embed-text and
//! e5 want `search_query: ` / `search_document: `), and cut to its first
//! [`EMBED_TEXT_MAX_BYTES`] bytes at a character boundary (models read a few hundred tokens at
//! most). A vector of another length than the configured dimension is `CONFIG_INVALID` (the
//! model is not the one configured). The buffers (request, response, parsed document) are
//! reserved once in [`Embedder::new`]; a request allocates nothing after the connection is up.

use crate::error::Result;
use crate::fixed::FixedBuf;
use crate::http::{HttpClient, HttpSettings, Method, Redactor, Request, RetryPolicy, Scheme, Transport, Url};
use crate::json::{Document, Kind, Writer};
use crate::limits::{
    EMBED_BATCH_MAX, EMBED_MAX_DIMENSION, EMBED_MAX_REQUEST_BYTES, EMBED_MAX_RESPONSE_BYTES, EMBED_TEXT_MAX_BYTES,
};
use crate::memory::store::vectors::{head, Embed, Meaning, TextKind};
use crate::memory::store::Store;
use std::time::Duration;

/// Which answer shape the endpoint gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmbedApi {
    /// OpenAI-compatible `/v1/embeddings`: `data[i].embedding`.
    OpenAi,
    /// Ollama's native `/api/embed`: `embeddings[i]`.
    Ollama,
}

impl EmbedApi {
    /// The API an endpoint speaks: Ollama's native one for a path ending in `/api/embed` (or
    /// its older `/api/embeddings`), else OpenAI's.
    pub fn of_endpoint(endpoint: &str) -> EmbedApi {
        let path = endpoint.trim_end_matches('/');
        if path.ends_with("/api/embed") || path.ends_with("/api/embeddings") {
            EmbedApi::Ollama
        } else {
            EmbedApi::OpenAi
        }
    }
}

/// `memory.embeddings` (see docs/settings.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmbedSettings {
    /// The endpoint's full URL (`http://127.0.0.1:8081/v1/embeddings`).
    pub endpoint: String,
    /// The answer shape (from the endpoint's path unless configured).
    pub api: EmbedApi,
    /// The model name sent with each request.
    pub model: String,
    /// Numbers per vector.
    pub dimension: usize,
    /// Put before a search text.
    pub query_prefix: String,
    /// Put before a stored value.
    pub document_prefix: String,
    /// Texts per request (1..=[`EMBED_BATCH_MAX`]).
    pub batch: usize,
    /// Longest wait for a connection.
    pub connect_timeout: Duration,
    /// Longest silence while waiting for an answer.
    pub read_timeout: Duration,
    /// Retries of a failed request (connection errors, timeouts, 429, 5xx), with capped
    /// exponential backoff.
    pub max_retries: u32,
    /// Environment variable holding a bearer token, if the server wants one.
    pub api_key_env: Option<String>,
}

impl Default for EmbedSettings {
    fn default() -> Self {
        EmbedSettings {
            endpoint: String::new(),
            api: EmbedApi::OpenAi,
            model: String::new(),
            dimension: 0,
            query_prefix: String::new(),
            document_prefix: String::new(),
            batch: EMBED_BATCH_MAX,
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(60),
            max_retries: 2,
            api_key_env: None,
        }
    }
}

impl EmbedSettings {
    /// What identifies the vectors these settings make: the model, the dimension and the
    /// document prefix (vectors of another model or prefix are not comparable).
    pub fn identity(&self) -> u64 {
        let mut h = crate::memory::hash::fnv1a64(self.model.as_bytes());
        h = crate::memory::hash::fnv1a64_continue(h, &(self.dimension as u64).to_le_bytes());
        crate::memory::hash::fnv1a64_continue(h, self.document_prefix.as_bytes())
    }
}

/// The embeddings client. See the module documentation.
pub struct Embedder {
    settings: EmbedSettings,
    url: Url,
    http: HttpClient,
    redactor: Redactor,
    request: FixedBuf,
    /// A prefix and a text joined (room for the longest of each).
    joined: String,
    doc: Document,
    requests: u64,
}

impl core::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Embedder")
            .field("endpoint", &self.settings.endpoint)
            .field("model", &self.settings.model)
            .finish()
    }
}

impl Embedder {
    /// Checks the settings and reserves the buffers. `CONFIG_INVALID` on a malformed or
    /// `https://` endpoint, an empty model, a dimension or batch out of range, an unset API
    /// key variable.
    pub fn new(settings: &EmbedSettings) -> Result<Embedder> {
        let url = Url::parse(&settings.endpoint).map_err(|e| e.context(format_args!("memory.embeddings.endpoint")))?;
        if url.scheme() == Scheme::Https {
            bail!(
                ConfigInvalid,
                "memory.embeddings.endpoint {} is https://, but this std-only build has no TLS: \
                 use an http:// endpoint (a local server or a TLS-terminating proxy)",
                url
            );
        }
        if settings.model.trim().is_empty() {
            bail!(ConfigInvalid, "memory.embeddings.model is empty; name the embedding model the server has loaded");
        }
        if settings.dimension == 0 || settings.dimension > EMBED_MAX_DIMENSION {
            bail!(
                ConfigInvalid,
                "memory.embeddings.dimension must be 1..={} (EMBED_MAX_DIMENSION)",
                EMBED_MAX_DIMENSION
            );
        }
        if settings.batch == 0 || settings.batch > EMBED_BATCH_MAX {
            bail!(ConfigInvalid, "memory.embeddings.batch must be 1..={} (EMBED_BATCH_MAX)", EMBED_BATCH_MAX);
        }
        let mut h = HttpClient::new(HttpSettings {
            connect_timeout: settings.connect_timeout,
            read_timeout: settings.read_timeout,
            retry: RetryPolicy { max_retries: settings.max_retries, ..RetryPolicy::default() },
            max_body_bytes: EMBED_MAX_RESPONSE_BYTES,
            transport: Transport::Tcp,
        })?;
        if let Some(var) = &settings.api_key_env {
            h.set_bearer_from_env(var)?;
        }
        // A vector per text, a node per number, a few more per item and the envelope.
        let nodes = EMBED_BATCH_MAX * (settings.dimension + 8) + 256;
        Ok(Embedder {
            settings: settings.clone(),
            url,
            redactor: h.redactor().clone(),
            http: h,
            request: FixedBuf::with_capacity("embeddings request (EMBED_MAX_REQUEST_BYTES)", EMBED_MAX_REQUEST_BYTES),
            joined: String::with_capacity(
                settings.query_prefix.len().max(settings.document_prefix.len()) + EMBED_TEXT_MAX_BYTES,
            ),
            doc: Document::with_capacity(nodes, EMBED_MAX_RESPONSE_BYTES),
            requests: 0,
        })
    }

    /// The settings.
    pub fn settings(&self) -> &EmbedSettings {
        &self.settings
    }

    /// Requests sent so far (answered or not; retries inside one count once).
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Embeds `texts` (at most the configured batch) as `kind`, writing text i's vector to
    /// `out[i * dimension ..][.. dimension]`. Errors: the HTTP client's (`LLM_UNAVAILABLE`,
    /// `LLM_TIMEOUT` after the retries, `HTTP_PROTOCOL`, `RESPONSE_TOO_LARGE`), the server's
    /// own (`LLM_ERROR`, `LLM_UNAVAILABLE` for 502/503/504), `HTTP_PROTOCOL` for an answer
    /// that is not embeddings, `CONFIG_INVALID` for vectors of another dimension.
    pub fn embed(
        &mut self,
        kind: TextKind,
        texts: &[&str],
        out: &mut [f32],
        should_stop: &dyn Fn() -> bool,
    ) -> Result<()> {
        let dim = self.settings.dimension;
        if texts.len() > self.settings.batch || out.len() < texts.len() * dim {
            bail!(Internal, "embeddings batch of {} texts for room of {} vectors", texts.len(), out.len() / dim.max(1));
        }
        if texts.is_empty() {
            return Ok(());
        }
        self.build(kind, texts)?;
        self.requests += 1;
        let req = Request {
            method: Method::Post,
            url: &self.url,
            content_type: Some("application/json"),
            accept: "application/json",
            body: self.request.as_slice(),
            resend_500: true,
        };
        let resp = self
            .http
            .send(&req, None, should_stop)
            .map_err(|e| e.context(format_args!("embeddings at {}", self.url)))?;
        let status = resp.status;
        if !(200..300).contains(&status) {
            let e = crate::llm::reply::server_error(status, resp.body, &mut self.doc, &self.redactor);
            return Err(e.context(format_args!("embeddings at {}", self.url)));
        }
        self.doc.parse(resp.body).map_err(|e| {
            e.with_code(crate::error::Code::HttpProtocol).context(format_args!("embeddings answer from {}", self.url))
        })?;
        read_vectors(&self.doc, self.settings.api, dim, texts.len(), out)
            .map_err(|e| e.context(format_args!("embeddings answer from {}", self.url)))
    }

    /// Writes the request body for `texts` into `self.request`.
    fn build(&mut self, kind: TextKind, texts: &[&str]) -> Result<()> {
        let prefix = match kind {
            TextKind::Query => self.settings.query_prefix.as_str(),
            TextKind::Document => self.settings.document_prefix.as_str(),
        };
        self.request.clear();
        let mut w = Writer::compact(&mut self.request as &mut dyn core::fmt::Write);
        w.begin_object()?;
        w.key("model")?;
        w.string(&self.settings.model)?;
        w.key("input")?;
        w.begin_array()?;
        for t in texts {
            let t = head(t, EMBED_TEXT_MAX_BYTES);
            if prefix.is_empty() {
                w.string(t)?;
            } else {
                // Room reserved in `new` for the longest prefix and text.
                self.joined.clear();
                self.joined.push_str(prefix);
                self.joined.push_str(t);
                w.string(&self.joined)?;
            }
        }
        w.end_array()?;
        if self.settings.api == EmbedApi::OpenAi {
            w.key("encoding_format")?;
            w.string("float")?;
        }
        w.end_object()?;
        w.finish()
    }
}

/// Reads `n` vectors of `dim` numbers from an answer into `out`.
fn read_vectors(doc: &Document, api: EmbedApi, dim: usize, n: usize, out: &mut [f32]) -> Result<()> {
    let root = doc.root();
    let list = match api {
        EmbedApi::Ollama => root.get("embeddings"),
        EmbedApi::OpenAi => root.get("data"),
    };
    let Some(list) = list.filter(|l| l.kind() == Kind::Array) else {
        let want = if api == EmbedApi::Ollama { "\"embeddings\"" } else { "\"data\"" };
        bail!(HttpProtocol, "no {} array in the answer; is the endpoint an embeddings endpoint?", want);
    };
    if list.len() != n {
        bail!(HttpProtocol, "{} vectors in the answer for {} texts", list.len(), n);
    }
    for (i, item) in list.items().enumerate() {
        let (at, vector) = match api {
            EmbedApi::Ollama => (i, Some(item)),
            EmbedApi::OpenAi => {
                let at = item.get("index").and_then(|x| x.as_u64()).map_or(i, |x| x as usize);
                (at, item.get("embedding"))
            }
        };
        let Some(vector) = vector.filter(|v| v.kind() == Kind::Array) else {
            bail!(HttpProtocol, "item {} of the answer holds no vector", i);
        };
        if at >= n {
            bail!(HttpProtocol, "item {} of the answer has index {} for {} texts", i, at, n);
        }
        if vector.len() != dim {
            bail!(
                ConfigInvalid,
                "the server's vectors have {} dimensions, but memory.embeddings.dimension is {}; \
                 set it to the model's dimension",
                vector.len(),
                dim
            );
        }
        let Some(slot) = out.get_mut(at * dim..(at + 1) * dim) else {
            bail!(Internal, "vector {} out of the output's room", at);
        };
        for (x, v) in slot.iter_mut().zip(vector.items()) {
            let Some(f) = v.as_f64().filter(|f| f.is_finite()) else {
                bail!(HttpProtocol, "vector {} holds {} where a number was expected", at, v.kind().name());
            };
            *x = f as f32;
        }
    }
    Ok(())
}

impl Embed for Embedder {
    fn dimension(&self) -> usize {
        self.settings.dimension
    }

    fn batch(&self) -> usize {
        self.settings.batch
    }

    fn identity(&self) -> u64 {
        self.settings.identity()
    }

    fn requests(&self) -> u64 {
        self.requests
    }

    fn embed(&mut self, kind: TextKind, texts: &[&str], out: &mut [f32], should_stop: &dyn Fn() -> bool) -> Result<()> {
        Embedder::embed(self, kind, texts, out, should_stop)
    }
}

/// Recall by meaning for `store` through the endpoint `settings` name (see
/// [`Meaning::open`]): what the agent (`writable`) and `memory search` open.
pub fn meaning(store: &Store, settings: &EmbedSettings, writable: bool) -> Result<Meaning> {
    Meaning::open(store, Box::new(Embedder::new(settings)?), writable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Document {
        let mut d = Document::with_capacity(1024, 4096);
        d.parse(text.as_bytes()).unwrap();
        d
    }

    #[test]
    fn reads_both_answer_shapes() {
        let mut out = [0f32; 4];
        let d = doc(r#"{"data":[{"index":1,"embedding":[3,4]},{"index":0,"embedding":[1,2]}]}"#);
        read_vectors(&d, EmbedApi::OpenAi, 2, 2, &mut out).unwrap();
        assert_eq!(out, [1.0, 2.0, 3.0, 4.0]);
        let d = doc(r#"{"model":"m","embeddings":[[5,6],[7,8]]}"#);
        read_vectors(&d, EmbedApi::Ollama, 2, 2, &mut out).unwrap();
        assert_eq!(out, [5.0, 6.0, 7.0, 8.0]);
    }

    #[test]
    fn wrong_answers_are_errors() {
        let mut out = [0f32; 4];
        for (text, code) in [
            (r#"{"data":[{"embedding":[1,2,3]},{"embedding":[1,2,3]}]}"#, crate::error::Code::ConfigInvalid),
            (r#"{"data":[{"embedding":[1,2]}]}"#, crate::error::Code::HttpProtocol),
            (r#"{"choices":[]}"#, crate::error::Code::HttpProtocol),
            (r#"{"data":[{"embedding":[1,"x"]},{"embedding":[1,2]}]}"#, crate::error::Code::HttpProtocol),
            (r#"{"data":[{"index":7,"embedding":[1,2]},{"embedding":[1,2]}]}"#, crate::error::Code::HttpProtocol),
        ] {
            let e = read_vectors(&doc(text), EmbedApi::OpenAi, 2, 2, &mut out).unwrap_err();
            assert_eq!(e.code(), code, "{text}");
        }
    }

    #[test]
    fn the_api_follows_the_path() {
        assert_eq!(EmbedApi::of_endpoint("http://h:11434/api/embed"), EmbedApi::Ollama);
        assert_eq!(EmbedApi::of_endpoint("http://h:8081/v1/embeddings"), EmbedApi::OpenAi);
    }

    #[test]
    fn head_cuts_at_a_character_boundary() {
        assert_eq!(head("héllo", 2), "h");
        assert_eq!(head("héllo", 3), "hé");
        assert_eq!(head("abc", 10), "abc");
    }
}
