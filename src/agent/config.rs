//! `config.json`: read once at start-up into typed settings, with defaults, every problem
//! reported with its key path (exit 2). A key no setting reads is a problem too, named with the
//! known key it is closest to (a typo must not leave the agent on a default the user did not
//! choose); `llm.extra` (raw request fields) and the prompt trees (text) are free-form
//! (docs/design.md §4).
//!
//! Canonical (era B, plus the additions a user expects):
//!
//! ```text
//! llm.{provider, endpoint, model, temperature, max_tokens, context_window, connect_timeout_ms,
//!      read_timeout_ms, retry.{max_retries, base_delay_ms, max_delay_ms}, api_key_env, stop,
//!      stream, system_prompt, transport, replay_path, extra}
//! agent.{...}                       see settings.rs
//! agent.state.<name>.prompt         trees rendered as tags (see prompts.rs)
//! ```
//!
//! Era A is accepted too: `lmstudio.{base_url, model, temperature, max_tokens, timeout_ms}` and
//! `agent.{max_iterations, state_prompts.<state>.{system_prompt, objectives}}`.

use super::checker::{join, Checker};
use super::prompts::Prompts;
use super::segments::{self, Segments};
use super::settings::AgentSettings;
use crate::error::{Code, Result};
use crate::http::{RetryPolicy, Transport};
use crate::json::{Document, Kind, Value, Writer};
use crate::limits::{CONFIG_FILE_MAX_BYTES, STORE_DEFAULT_ENTRIES, STORE_MAX_ENTRIES, STORE_MIN_ENTRIES};
use crate::llm::{ProviderKind, Settings};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The file's name inside the data directory.
pub const FILE_NAME: &str = "config.json";

/// Everything the agent reads from its configuration files.
#[derive(Debug)]
pub struct Config {
    /// The LLM client's settings.
    pub llm: Settings,
    /// Whether the prompt head (base and state prompts) goes as a system message (default: one
    /// user message, as the C original sent).
    pub system_prompt: bool,
    /// The agent's settings.
    pub agent: AgentSettings,
    /// The prompt texts, rendered once.
    pub prompts: Prompts,
    /// `memory.store_capacity`: entries the store has room for (its tables are sized from it
    /// at open).
    pub store_capacity: usize,
    /// Where the config was read from.
    pub path: PathBuf,
}

const TOP_KEYS: &[&str] = &["version", "llm", "lmstudio", "agent", "memory", "documentation", "tag_format", "http"];
const LLM_KEYS: &[&str] = &[
    "provider",
    "endpoint",
    "model",
    "temperature",
    "max_tokens",
    "context_window",
    "connect_timeout_ms",
    "read_timeout_ms",
    "timeout_ms",
    "retry",
    "api_key_env",
    "stop",
    "stream",
    "system_prompt",
    "transport",
    "replay_path",
    "constrain",
    "thinks",
    "extra",
    "base_url",
    "tag_format_enforced",
];

/// Loads and checks `config.json` (and `agent-prompt.json` if present) from `dir`.
///
/// Errors: `CONFIG_JSON_INVALID` (not JSON; the offset is in the message), `CONFIG_INVALID`
/// (each problem was printed on stderr as its own line before this summary returns), the
/// `PROMPT_*` codes of `agent-prompt.json`, `NOT_FOUND`/`IO` for a missing or unreadable file.
pub fn load(dir: &Path) -> Result<Config> {
    let path = dir.join(FILE_NAME);
    let bytes = read_bounded(&path, CONFIG_FILE_MAX_BYTES)?;
    let (config, problems) = parse(&bytes, dir)?;
    let mut config = config;
    config.path = path.clone();
    if !problems.is_empty() {
        for p in &problems {
            err!(ConfigInvalid, "{}: {}", path.display(), p).print();
        }
        bail!(
            ConfigInvalid,
            "{} has {} problem{} (listed above); fix them and start again",
            path.display(),
            problems.len(),
            if problems.len() == 1 { "" } else { "s" }
        );
    }
    Ok(config)
}

/// Parses a config document. Returns the config (with defaults where values were bad) and the
/// list of problems; `dir` resolves relative paths and holds `agent-prompt.json`.
pub fn parse(bytes: &[u8], dir: &Path) -> Result<(Config, Vec<String>)> {
    let mut doc = Document::with_capacity(bytes.len() / 2 + 64, bytes.len() + 64);
    doc.parse(bytes).map_err(|e| e.with_code(Code::ConfigJsonInvalid).context(format_args!("config.json")))?;
    let root = doc.root();
    let mut c = Checker::new();
    if root.kind() != Kind::Object {
        c.problem("(root)", "the configuration must be a JSON object");
    }
    c.reject_unknown(Some(root), "", TOP_KEYS);
    let llm_section = match root.get("llm") {
        Some(_) => c.object(Some(root), "", "llm").map(|v| (v, "llm")),
        None => c.object(Some(root), "", "lmstudio").map(|v| (v, "lmstudio")),
    };
    let (llm, system_prompt) = read_llm(&mut c, llm_section, dir);
    let agent_v = c.object(Some(root), "", "agent");
    let agent = AgentSettings::read(&mut c, agent_v);
    let seg: Option<Segments> = segments::load(dir, &agent.states)?;
    let prompts = Prompts::render(&mut c, agent_v, &agent.states, seg.as_ref());
    let memory_v = c.object(Some(root), "", "memory");
    c.reject_unknown(memory_v, "memory", &["store_capacity"]);
    let store_capacity = c.integer(
        memory_v,
        "memory",
        "store_capacity",
        STORE_DEFAULT_ENTRIES as i64,
        STORE_MIN_ENTRIES as i64,
        STORE_MAX_ENTRIES as i64,
    ) as usize;
    let problems = c.problems().to_vec();
    Ok((Config { llm, system_prompt, agent, prompts, store_capacity, path: dir.join(FILE_NAME) }, problems))
}

fn read_llm(c: &mut Checker, section: Option<(Value<'_>, &str)>, dir: &Path) -> (Settings, bool) {
    let mut s = Settings::default();
    let Some((v, p)) = section else {
        c.problem("llm", "missing; it needs at least endpoint and model");
        return (s, false);
    };
    let o = Some(v);
    c.reject_unknown(o, p, LLM_KEYS);
    if let Some(name) = c.string(o, p, "provider", 16) {
        match ProviderKind::from_name(name.trim()) {
            Some(k) => s.provider = k,
            None => c.problem(&join(p, "provider"), format_args!("'{}' is not one of openai, ollama, replay", name)),
        }
    }
    let endpoint = c.string(o, p, "endpoint", 2048).or_else(|| c.string(o, p, "base_url", 2048));
    match endpoint {
        Some(e) => s.endpoint = e.trim().to_string(),
        None if s.provider != ProviderKind::Replay => {
            c.problem(&join(p, "endpoint"), "missing; e.g. \"http://127.0.0.1:1234/v1/chat/completions\"")
        }
        None => {}
    }
    match c.string(o, p, "model", 256) {
        Some(m) if !m.trim().is_empty() => s.model = m.trim().to_string(),
        Some(_) => c.problem(&join(p, "model"), "is empty; name the model the server has loaded"),
        None if s.provider != ProviderKind::Replay => c.problem(&join(p, "model"), "missing; e.g. \"qwen/qwen3-8b\""),
        None => {}
    }
    s.temperature = match o.and_then(|v| v.get("temperature")) {
        Some(t) if t.is_null() => None,
        Some(_) => Some(c.number(o, p, "temperature", 0.7, 0.0, 2.0)),
        None => s.temperature,
    };
    // The C original sent max_tokens -1 ("no limit"); that is None here.
    s.max_tokens = match c.integer(o, p, "max_tokens", i64::from(s.max_tokens.unwrap_or(4096)), -1, 1_000_000) {
        n if n <= 0 => None,
        n => Some(n as u32),
    };
    s.context_window = Some(c.integer(o, p, "context_window", 8192, 256, 10_000_000) as u32);
    if let (Some(ctx), Some(max)) = (s.context_window, s.max_tokens) {
        if max >= ctx {
            c.problem(
                &join(p, "max_tokens"),
                format_args!("{} leaves no room for the prompt in a context window of {} tokens", max, ctx),
            );
        }
    }
    let legacy_timeout = c.integer(o, p, "timeout_ms", 600_000, 1, 86_400_000);
    s.connect_timeout = Duration::from_millis(c.integer(o, p, "connect_timeout_ms", 10_000, 1, 3_600_000) as u64);
    s.read_timeout = Duration::from_millis(c.integer(o, p, "read_timeout_ms", legacy_timeout, 1, 86_400_000) as u64);
    let retry = c.object(o, p, "retry");
    let rp = join(p, "retry");
    c.reject_unknown(retry, &rp, &["max_retries", "base_delay_ms", "max_delay_ms"]);
    let d = RetryPolicy::default();
    s.retry = RetryPolicy {
        max_retries: c.integer(retry, &rp, "max_retries", i64::from(d.max_retries), 0, 100) as u32,
        base_delay: Duration::from_millis(c.integer(
            retry,
            &rp,
            "base_delay_ms",
            d.base_delay.as_millis() as i64,
            0,
            600_000,
        ) as u64),
        max_delay: Duration::from_millis(c.integer(
            retry,
            &rp,
            "max_delay_ms",
            d.max_delay.as_millis() as i64,
            0,
            3_600_000,
        ) as u64),
    };
    s.api_key_env = c.string(o, p, "api_key_env", 128).map(|k| k.trim().to_string()).filter(|k| !k.is_empty());
    match o.and_then(|v| v.get("stop")) {
        None => {}
        Some(v) if v.kind() == Kind::String => s.stop = vec![v.as_str().unwrap_or("").to_string()],
        Some(v) if v.kind() == Kind::Array && v.items().all(|i| i.kind() == Kind::String) => {
            s.stop = v.items().filter_map(|i| i.as_str()).map(str::to_string).collect();
        }
        Some(_) => c.problem(&join(p, "stop"), "expected a string or an array of strings"),
    }
    s.stream = c.boolean(o, p, "stream", false);
    let system_prompt = c.boolean(o, p, "system_prompt", false);
    if let Some(t) = c.string(o, p, "transport", 16) {
        match t.trim() {
            "tcp" => s.transport = Transport::Tcp,
            "curl" => s.transport = Transport::Curl,
            other => c.problem(&join(p, "transport"), format_args!("'{}' is not one of tcp, curl", other)),
        }
    }
    if let Some(r) = c.string(o, p, "replay_path", 4096) {
        let path = PathBuf::from(r.trim());
        s.replay_path = Some(if path.is_absolute() { path } else { dir.join(path) });
    }
    if let Some(m) = c.string(o, p, "constrain", 16) {
        match crate::grammar::Mode::from_name(m.trim()) {
            Some(mode) => s.constrain = mode,
            None => {
                c.problem(&join(p, "constrain"), format_args!("'{}' is not one of auto, grammar, json_schema, off", m))
            }
        }
    }
    s.thinks = c.boolean(o, p, "thinks", false);
    if s.provider == ProviderKind::Replay && s.replay_path.is_none() {
        c.problem(&join(p, "replay_path"), "the replay provider needs the path of its script");
    }
    match o.and_then(|v| v.get("extra")) {
        None => {}
        Some(x) if x.kind() == Kind::Object && x.members().next().is_none() => {}
        Some(x) if x.kind() == Kind::Object => {
            let mut text = String::new();
            if Writer::compact(&mut text).value(x).is_ok() {
                s.extra = text;
            }
        }
        Some(_) => c.problem(&join(p, "extra"), "expected an object of raw request fields, e.g. {\"top_p\": 0.9}"),
    }
    (s, system_prompt)
}

/// Reads a whole file of at most `max` bytes; a missing one is `CONFIG_INVALID`, naming the file
/// and what to do.
pub fn read_bounded(path: &Path, max: usize) -> Result<Vec<u8>> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A missing configuration is a configuration error (exit 2), like an invalid one.
            bail!(
                ConfigInvalid,
                "{} does not exist; copy the shipped data/ directory or pass --data DIR",
                path.display()
            )
        }
        Err(e) => bail!(Io, "cannot read {}: {}", path.display(), e),
        Ok(m) if m.len() > max as u64 => {
            bail!(ConfigInvalid, "{} is {} bytes; at most {} are read", path.display(), m.len(), max)
        }
        Ok(_) => std::fs::read(path).map_err(|e| err!(Io, "cannot read {}: {}", path.display(), e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        std::env::temp_dir()
    }

    fn problems(text: &str) -> Vec<String> {
        parse(text.as_bytes(), &dir()).unwrap().1
    }

    #[test]
    fn shipped_config_is_clean() {
        let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/data/config.json")).unwrap();
        let (c, problems) = parse(&bytes, &dir()).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(c.llm.model, "qwen/qwen3-8b");
        assert_eq!(c.llm.endpoint, "http://127.0.0.1:1234/v1/chat/completions");
        assert_eq!(c.agent.states, ["thinking", "commanding", "evaluating", "paging"]);
        assert_eq!(c.agent.max_iterations, 5);
        assert!(c.prompts.state("commanding").contains("<type>storage_save</type>"));
    }

    #[test]
    fn every_problem_has_its_key_path() {
        let p = problems(
            r#"{"llm":{"endpoint":"http://x/v1","model":"","temperature":"hot","max_tokens":9000,"context_window":8192},
                "agent":{"think_log":{"max_entries":"four"},"iterate":{"max_iterations":-7},
                         "state":{"base":{"prompt":{}},"thinking":{"prompt":{}},"Bad State":{"prompt":{}}}}}"#,
        );
        let text = p.join("\n");
        for needle in [
            "llm.model:",
            "llm.temperature:",
            "llm.max_tokens:",
            "agent.think_log.max_entries:",
            "agent.iterate.max_iterations:",
            "agent.state.Bad State:",
        ] {
            assert!(text.contains(needle), "{needle} missing in:\n{text}");
        }
    }

    #[test]
    fn era_a_shape_is_accepted() {
        let (c, p) = parse(
            br#"{"lmstudio":{"base_url":"http://127.0.0.1:1234/v1/chat/completions","model":"m","temperature":0.5,"max_tokens":512,"timeout_ms":30000},
                 "agent":{"max_iterations":-1,"state_prompts":{"thinking":{"system_prompt":"Think.","objectives":["a"]},
                 "executing":{"system_prompt":"Act."},"evaluating":{"system_prompt":"Judge."},"paging":{"system_prompt":"Page."}}}}"#,
            &dir(),
        )
        .unwrap();
        assert!(p.is_empty(), "{p:?}");
        assert_eq!(c.agent.max_iterations, -1);
        assert_eq!(c.llm.read_timeout, Duration::from_millis(30_000));
        assert_eq!(c.agent.states, ["thinking", "commanding", "evaluating", "paging"]);
        assert!(c.prompts.state("commanding").contains("Act."));
    }

    #[test]
    fn not_json_is_config_json_invalid_with_offset() {
        let e = parse(b"{\"llm\": }", &dir()).unwrap_err();
        assert_eq!(e.code(), Code::ConfigJsonInvalid);
        assert!(e.message().contains('8'), "{}", e.message());
    }
}
