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
//!
//! Each section's keys are one table (`LLM`, `RETRY`, `MEMORY` here; the `agent` ones in
//! settings.rs), read by [`Checker::read`]: what a section knows and what it reads are the same
//! list. Checks across keys follow the table's read, so their problems come after its own.

use super::checker::{join, member, names, Checker, Got, Key, Target};
use super::prompts::Prompts;
use super::segments::{self, Segments};
use super::settings::AgentSettings;
use crate::error::{Code, Result};
use crate::http::Transport;
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
    /// `memory.embeddings`: recall by meaning (off when absent; see `embed_config.rs`).
    pub embeddings: Option<crate::llm::embed::EmbedSettings>,
    /// `memory.cleanup`: when and how the agent makes room in the store.
    pub cleanup: crate::memory::store::cleanup::Policy,
    /// Where the config was read from.
    pub path: PathBuf,
}

/// The top level: each section is read by [`parse`] in a step of its own.
const TOP: &[Key<Config>] = &[
    Key::ignored("version"),
    Key::elsewhere("llm"),
    // Era A's name of `llm`, read when there is no `llm`.
    Key::elsewhere("lmstudio"),
    Key::elsewhere("agent"),
    Key::elsewhere("memory"),
    Key::ignored("documentation"),
    Key::ignored("tag_format"),
    Key::ignored("http"),
];

/// `llm` (or era A's `lmstudio`). The checks across keys are [`read_llm`]'s.
const LLM: &[Key<Config>] = &[
    Key::choice("provider", &["openai", "ollama", "replay"], Slot::Provider),
    Key::read("endpoint", read_endpoint),
    Key::read("model", read_model),
    Key::read("temperature", read_temperature),
    Key::integer("max_tokens", -1, 1_000_000, Slot::MaxTokens),
    Key::integer("context_window", 256, 10_000_000, Slot::ContextWindow),
    Key::integer("connect_timeout_ms", 1, 3_600_000, Slot::ConnectTimeout),
    Key::read("read_timeout_ms", read_timeout),
    // Era A's name of read_timeout_ms, read by read_timeout.
    Key::elsewhere("timeout_ms"),
    Key::read("retry", |c, llm, p, config| {
        let retry = c.object(llm, p, "retry");
        c.read(retry, &join(p, "retry"), RETRY, config);
    }),
    Key::text("api_key_env", 128, Slot::ApiKeyEnv),
    Key::read("stop", read_stop),
    Key::boolean("stream", Slot::Stream),
    Key::boolean("system_prompt", Slot::SystemPrompt),
    Key::choice("transport", &["tcp", "curl"], Slot::Transport),
    Key::text("replay_path", 4096, Slot::ReplayPath),
    Key::choice("constrain", &["auto", "grammar", "json_schema", "off"], Slot::Constrain),
    Key::boolean("thinks", Slot::Thinks),
    Key::choice("logprobs", &["outlines", "first_outline", "off"], Slot::Logprobs),
    Key::read("extra", read_extra),
    // Era A's name of endpoint, read by read_endpoint.
    Key::elsewhere("base_url"),
    Key::ignored("tag_format_enforced"),
];

/// `llm.retry`.
const RETRY: &[Key<Config>] = &[
    Key::integer("max_retries", 0, 100, Slot::MaxRetries),
    Key::integer("base_delay_ms", 0, 600_000, Slot::BaseDelay),
    Key::integer("max_delay_ms", 0, 3_600_000, Slot::MaxDelay),
];

/// `memory`.
const MEMORY: &[Key<Config>] = &[
    Key::integer("store_capacity", STORE_MIN_ENTRIES as i64, STORE_MAX_ENTRIES as i64, Slot::StoreCapacity),
    Key::read("embeddings", |c, memory, p, config| config.embeddings = super::embed_config::read(c, memory, p)),
    Key::read("cleanup", read_cleanup),
    // The tagged-memory design's and era A's names of memory.cleanup's keys, read by read_cleanup.
    Key::elsewhere("auto_cleanup_enabled"),
    Key::elsewhere("auto_cleanup_threshold"),
    Key::elsewhere("max_entry_age_days"),
];

/// `memory.cleanup`'s keys.
const CLEANUP_KEYS: &[&str] = &["enable", "threshold", "keep_cycles", "max_age_days", "action"];

/// `memory.cleanup` (`{enable, threshold, keep_cycles, max_age_days, action}`), and the older
/// names beside it in `memory`: `auto_cleanup_enabled`, `auto_cleanup_threshold`,
/// `max_entry_age_days` (the newer name wins when both are given).
fn read_cleanup(c: &mut Checker, memory: Option<Value<'_>>, p: &str, config: &mut Config) {
    use crate::limits::CLEANUP_KEEP_CYCLES_MAX;
    let policy = &mut config.cleanup;
    if let Some(on) = c.boolean(memory, p, "auto_cleanup_enabled") {
        policy.enable = on;
    }
    if let Some(t) = c.number(memory, p, "auto_cleanup_threshold", 0.01, 1.0) {
        policy.threshold_percent = (t * 100.0).round() as u64;
    }
    if let Some(d) = c.integer(memory, p, "max_entry_age_days", 0, 36_500) {
        policy.max_age_secs = d as u64 * 86_400;
    }
    let path = join(p, "cleanup");
    let Some(o) = c.object(memory, p, "cleanup") else { return };
    c.reject_unknown(Some(o), &path, CLEANUP_KEYS);
    if let Some(on) = c.boolean(Some(o), &path, "enable") {
        policy.enable = on;
    }
    if let Some(t) = c.number(Some(o), &path, "threshold", 0.01, 1.0) {
        policy.threshold_percent = (t * 100.0).round() as u64;
    }
    if let Some(n) = c.integer(Some(o), &path, "keep_cycles", 0, CLEANUP_KEEP_CYCLES_MAX as i64) {
        policy.keep_cycles = n as u64;
    }
    if let Some(d) = c.integer(Some(o), &path, "max_age_days", 0, 36_500) {
        policy.max_age_secs = d as u64 * 86_400;
    }
    if let Some(a) = c.string(Some(o), &path, "action", 16) {
        match a.trim() {
            "cold" => policy.delete = false,
            "delete" => policy.delete = true,
            other => c.problem_at(&path, "action", format_args!("'{}' is not one of cold, delete", other)),
        }
    }
}

/// Where the values of the `llm`, `llm.retry` and `memory` tables go (see [`Config::set`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Provider,
    MaxTokens,
    ContextWindow,
    ConnectTimeout,
    ApiKeyEnv,
    Stream,
    SystemPrompt,
    Transport,
    ReplayPath,
    Constrain,
    Thinks,
    Logprobs,
    MaxRetries,
    BaseDelay,
    MaxDelay,
    StoreCapacity,
}

impl Target for Config {
    type Slot = Slot;

    fn set(&mut self, to: Slot, value: Got<'_>) -> bool {
        let s = &mut self.llm;
        match (to, value) {
            (Slot::Provider, Got::Text(name)) => return set(&mut s.provider, ProviderKind::from_name(name)),
            // The C original sent max_tokens -1 ("no limit"); that is None here.
            (Slot::MaxTokens, Got::Integer(n)) => s.max_tokens = u32::try_from(n).ok().filter(|&n| n > 0),
            (Slot::ContextWindow, Got::Integer(n)) => s.context_window = Some(n as u32),
            (Slot::ConnectTimeout, Got::Integer(ms)) => s.connect_timeout = Duration::from_millis(ms as u64),
            (Slot::ApiKeyEnv, Got::Text(k)) => s.api_key_env = Some(k.trim().to_string()).filter(|k| !k.is_empty()),
            (Slot::Stream, Got::Bool(on)) => s.stream = on,
            (Slot::SystemPrompt, Got::Bool(on)) => self.system_prompt = on,
            (Slot::Transport, Got::Text(name)) => {
                let transport = match name {
                    "tcp" => Some(Transport::Tcp),
                    "curl" => Some(Transport::Curl),
                    _ => None,
                };
                return set(&mut s.transport, transport);
            }
            // Relative to the data directory: read_llm resolves it.
            (Slot::ReplayPath, Got::Text(p)) => s.replay_path = Some(PathBuf::from(p.trim())),
            (Slot::Constrain, Got::Text(name)) => return set(&mut s.constrain, crate::grammar::Mode::from_name(name)),
            (Slot::Thinks, Got::Bool(on)) => s.thinks = on,
            (Slot::Logprobs, Got::Text(name)) => return set(&mut s.logprobs, crate::llm::Logprobs::from_name(name)),
            (Slot::MaxRetries, Got::Integer(n)) => s.retry.max_retries = n as u32,
            (Slot::BaseDelay, Got::Integer(ms)) => s.retry.base_delay = Duration::from_millis(ms as u64),
            (Slot::MaxDelay, Got::Integer(ms)) => s.retry.max_delay = Duration::from_millis(ms as u64),
            (Slot::StoreCapacity, Got::Integer(n)) => self.store_capacity = n as usize,
            _ => return false,
        }
        true
    }
}

/// Sets `slot` to `value` if there is one; says whether there was (for a choice).
fn set<V>(slot: &mut V, value: Option<V>) -> bool {
    match value {
        Some(v) => {
            *slot = v;
            true
        }
        None => false,
    }
}

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
    c.reject_unknown(Some(root), "", &names(TOP));
    let mut config = Config {
        llm: Settings::default(),
        system_prompt: false,
        agent: AgentSettings::default(),
        prompts: Prompts::default(),
        store_capacity: STORE_DEFAULT_ENTRIES,
        embeddings: None,
        cleanup: crate::memory::store::cleanup::Policy::default(),
        path: dir.join(FILE_NAME),
    };
    let llm_section = match root.get("llm") {
        Some(_) => c.object(Some(root), "", "llm").map(|v| (v, "llm")),
        None => c.object(Some(root), "", "lmstudio").map(|v| (v, "lmstudio")),
    };
    read_llm(&mut c, llm_section, dir, &mut config);
    let agent_v = c.object(Some(root), "", "agent");
    config.agent = AgentSettings::read(&mut c, agent_v);
    let seg: Option<Segments> = segments::load(dir, &config.agent.states)?;
    config.prompts = Prompts::render(&mut c, agent_v, &config.agent.states, seg.as_ref());
    let memory_v = c.object(Some(root), "", "memory");
    c.read(memory_v, "memory", MEMORY, &mut config);
    let problems = c.problems().to_vec();
    Ok((config, problems))
}

/// Reads the `llm` section by its table, then checks what no single key can.
fn read_llm(c: &mut Checker, section: Option<(Value<'_>, &str)>, dir: &Path, config: &mut Config) {
    let Some((v, p)) = section else {
        c.problem("llm", "missing; it needs at least endpoint and model");
        return;
    };
    c.read(Some(v), p, LLM, config);
    let s = &mut config.llm;
    if let (Some(ctx), Some(max)) = (s.context_window, s.max_tokens) {
        if max >= ctx {
            c.problem_at(
                p,
                "max_tokens",
                format_args!("{} leaves no room for the prompt in a context window of {} tokens", max, ctx),
            );
        }
    }
    if let Some(path) = s.replay_path.take() {
        s.replay_path = Some(if path.is_absolute() { path } else { dir.join(path) });
    }
    if s.provider == ProviderKind::Replay && s.replay_path.is_none() {
        c.problem_at(p, "replay_path", "the replay provider needs the path of its script");
    }
}

/// `endpoint`, or era A's `base_url` when there is no valid `endpoint`; only `replay` needs
/// none (`provider` is read before it).
fn read_endpoint(c: &mut Checker, o: Option<Value<'_>>, p: &str, config: &mut Config) {
    let s = &mut config.llm;
    match c.string(o, p, "endpoint", 2048).or_else(|| c.string(o, p, "base_url", 2048)) {
        Some(e) => s.endpoint = e.trim().to_string(),
        None if s.provider != ProviderKind::Replay => {
            c.problem_at(p, "endpoint", "missing; e.g. \"http://127.0.0.1:1234/v1/chat/completions\"")
        }
        None => {}
    }
}

/// `model`: required and not blank, except for `replay`.
fn read_model(c: &mut Checker, o: Option<Value<'_>>, p: &str, config: &mut Config) {
    let s = &mut config.llm;
    match c.string(o, p, "model", 256) {
        Some(m) if !m.trim().is_empty() => s.model = m.trim().to_string(),
        Some(_) => c.problem_at(p, "model", "is empty; name the model the server has loaded"),
        None if s.provider != ProviderKind::Replay => c.problem_at(p, "model", "missing; e.g. \"qwen/qwen3-8b\""),
        None => {}
    }
}

/// `temperature`: a number, or `null` to leave it to the server.
fn read_temperature(c: &mut Checker, o: Option<Value<'_>>, p: &str, config: &mut Config) {
    match member(o, "temperature") {
        Some(t) if t.is_null() => config.llm.temperature = None,
        Some(_) => {
            if let Some(t) = c.number(o, p, "temperature", 0.0, 2.0) {
                config.llm.temperature = Some(t);
            }
        }
        None => {}
    }
}

/// `read_timeout_ms`, or era A's `timeout_ms` when there is no valid `read_timeout_ms` (both
/// are checked).
fn read_timeout(c: &mut Checker, o: Option<Value<'_>>, p: &str, config: &mut Config) {
    for key in ["timeout_ms", "read_timeout_ms"] {
        if let Some(ms) = c.integer(o, p, key, 1, 86_400_000) {
            config.llm.read_timeout = Duration::from_millis(ms as u64);
        }
    }
}

/// `stop`: one string or an array of them.
fn read_stop(c: &mut Checker, o: Option<Value<'_>>, p: &str, config: &mut Config) {
    let Some(v) = member(o, "stop") else { return };
    let mut stop = Vec::new();
    let mut take = |s: Value<'_>| s.as_str().map(|s| stop.push(s.to_string())).is_some();
    let all_strings = if v.kind() == Kind::Array { v.items().all(&mut take) } else { take(v) };
    if all_strings {
        config.llm.stop = stop;
    } else {
        c.problem_at(p, "stop", "expected a string or an array of strings");
    }
}

/// `extra`: an object of raw request fields, kept as compact JSON text (free-form: its keys
/// are the server's).
fn read_extra(c: &mut Checker, o: Option<Value<'_>>, p: &str, config: &mut Config) {
    match member(o, "extra") {
        None => {}
        Some(x) if x.kind() == Kind::Object && x.members().next().is_none() => {}
        Some(x) if x.kind() == Kind::Object => {
            let mut text = String::new();
            if Writer::compact(&mut text as &mut dyn core::fmt::Write).value(x).is_ok() {
                config.llm.extra = text;
            }
        }
        Some(_) => c.problem_at(p, "extra", "expected an object of raw request fields, e.g. {\"top_p\": 0.9}"),
    }
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

    fn config() -> Config {
        parse(b"{}", &dir()).unwrap().0
    }

    #[test]
    fn tables_are_sound() {
        for table in [TOP, LLM, RETRY, MEMORY] {
            let faults = crate::agent::checker::table_faults(table, &mut config());
            assert!(faults.is_empty(), "{faults:?}");
        }
    }

    /// The lists a far-off unknown key gets are the tables, in the order the key lists had
    /// before the tables (which also decides ties between equally near keys).
    #[test]
    fn unknown_keys_are_told_the_keys_known_there() {
        let p = problems(r#"{"zzz": 1, "llm": {"zzzz": 1, "retry": {"zzzz": 1}}, "memory": {"zzzz": 1}}"#);
        for (at, known) in [
            ("zzz", "version, llm, lmstudio, agent, memory, documentation, tag_format, http"),
            (
                "llm.zzzz",
                "provider, endpoint, model, temperature, max_tokens, context_window, connect_timeout_ms, \
                 read_timeout_ms, timeout_ms, retry, api_key_env, stop, stream, system_prompt, transport, \
                 replay_path, constrain, thinks, logprobs, extra, base_url, tag_format_enforced",
            ),
            ("llm.retry.zzzz", "max_retries, base_delay_ms, max_delay_ms"),
            (
                "memory.zzzz",
                "store_capacity, embeddings, cleanup, auto_cleanup_enabled, auto_cleanup_threshold, max_entry_age_days",
            ),
        ] {
            let expected = format!("{at}: unknown key; the keys known here are {known}");
            assert!(p.contains(&expected), "{expected}\nmissing in {p:#?}");
        }
    }

    /// Every key of every table is in the settings reference (`docs/settings.md`), in the part
    /// for its section, as `key` or `section.key`: a key added to a table without documentation
    /// fails here. The reference is the page's text under its title; each section's part starts
    /// at a line `**...**` naming the section as `path` (the top level's: `**top level**`) and
    /// runs to the next such line.
    #[test]
    fn every_key_is_in_the_settings_reference() {
        let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/settings.md")).unwrap();
        let reference: Vec<&str> = page
            .lines()
            .skip_while(|l| *l != "# Settings reference")
            .skip(1)
            .take_while(|l| !l.starts_with('#'))
            .collect();
        assert!(!reference.is_empty(), "docs/settings.md has no \"# Settings reference\"");
        // Each part: its label (the text between the leading ** and the next **), its text.
        let mut parts: Vec<(&str, String)> = Vec::new();
        for line in reference {
            if let Some(rest) = line.strip_prefix("**") {
                parts.push((rest.split("**").next().unwrap_or(""), String::new()));
            }
            if let Some((_, text)) = parts.last_mut() {
                text.push_str(line);
                text.push('\n');
            }
        }
        let mut tables: Vec<(&str, Vec<&str>)> =
            vec![("", names(TOP)), ("llm", names(LLM)), ("llm.retry", names(RETRY)), ("memory", names(MEMORY))];
        tables.push(("memory.embeddings", names(crate::agent::embed_config::EMBEDDINGS)));
        tables.extend(crate::agent::settings::key_tables());
        let mut missing = Vec::new();
        for (path, keys) in tables {
            let label = if path.is_empty() { "top level".to_string() } else { format!("`{path}`") };
            let Some((_, text)) = parts.iter().find(|(l, _)| l.contains(&label)) else {
                missing.push(format!("no part labelled {label}"));
                continue;
            };
            for key in keys {
                if !text.contains(&format!("`{key}`")) && !text.contains(&format!("`{path}.{key}`")) {
                    missing.push(join(path, key));
                }
            }
        }
        assert!(missing.is_empty(), "not in docs/settings.md: {missing:?}");
    }

    /// `memory.cleanup`: every key, the older names beside it (the newer wins), and the
    /// problems of bad values and unknown keys, with their paths.
    #[test]
    fn memory_cleanup_is_read_with_its_older_names() {
        let (c, p) = parse(
            br#"{"llm": {"endpoint": "http://h/v1", "model": "m"}, "memory": {"auto_cleanup_threshold": 0.8,
                 "cleanup": {"enable": true, "threshold": 0.75, "keep_cycles": 5, "max_age_days": 2, "action": "delete"}}}"#,
            &dir(),
        )
        .unwrap();
        assert!(p.is_empty(), "{p:?}");
        let want = crate::memory::store::cleanup::Policy {
            enable: true,
            threshold_percent: 75,
            keep_cycles: 5,
            max_age_secs: 2 * 86_400,
            delete: true,
        };
        assert_eq!(c.cleanup, want);
        let (c, _) = parse(br#"{"llm": {"endpoint": "http://h/v1", "model": "m"}}"#, &dir()).unwrap();
        assert_eq!(c.cleanup, crate::memory::store::cleanup::Policy::default());
        let (_, p) = parse(
            br#"{"llm": {"endpoint": "http://h/v1", "model": "m"}, "memory": {"cleanup": {"threshold": 2, "action": "burn", "treshold": 1}}}"#,
            &dir(),
        )
        .unwrap();
        let text = p.join("\n");
        assert!(text.contains("memory.cleanup.threshold:"), "{text}");
        assert!(text.contains("memory.cleanup.action: 'burn' is not one of cold, delete"), "{text}");
        assert!(
            text.contains("memory.cleanup.treshold: unknown key; did you mean memory.cleanup.threshold?"),
            "{text}"
        );
    }

    /// A key the tables leave to other code ([`Rule::Elsewhere`]) is read there: each one,
    /// given alone, changes what it should. A new such key needs a case here.
    #[test]
    fn every_key_read_elsewhere_is_read() {
        use crate::agent::checker::read_elsewhere;
        type Case = (&'static str, &'static str, fn(&Config) -> bool);
        let cases: &[Case] = &[
            ("llm", r#"{"llm": {"endpoint": "http://h/v1", "model": "m"}}"#, |c| c.llm.model == "m"),
            ("lmstudio", r#"{"lmstudio": {"endpoint": "http://h/v1", "model": "m"}}"#, |c| c.llm.model == "m"),
            (
                "agent",
                r#"{"llm": {"endpoint": "http://h/v1", "model": "m"}, "agent": {"invalid_reply_limit": 9}}"#,
                |c| c.agent.invalid_reply_limit == 9,
            ),
            (
                "memory",
                r#"{"llm": {"endpoint": "http://h/v1", "model": "m"}, "memory": {"store_capacity": 4096}}"#,
                |c| c.store_capacity == 4096,
            ),
            ("timeout_ms", r#"{"llm": {"endpoint": "http://h/v1", "model": "m", "timeout_ms": 1234}}"#, |c| {
                c.llm.read_timeout == Duration::from_millis(1234)
            }),
            ("base_url", r#"{"llm": {"base_url": "http://h/v1", "model": "m"}}"#, |c| c.llm.endpoint == "http://h/v1"),
            (
                "auto_cleanup_enabled",
                r#"{"llm": {"endpoint": "http://h/v1", "model": "m"}, "memory": {"auto_cleanup_enabled": false}}"#,
                |c| !c.cleanup.enable,
            ),
            (
                "auto_cleanup_threshold",
                r#"{"llm": {"endpoint": "http://h/v1", "model": "m"}, "memory": {"auto_cleanup_threshold": 0.8}}"#,
                |c| c.cleanup.threshold_percent == 80,
            ),
            (
                "max_entry_age_days",
                r#"{"llm": {"endpoint": "http://h/v1", "model": "m"}, "memory": {"max_entry_age_days": 30}}"#,
                |c| c.cleanup.max_age_secs == 30 * 86_400,
            ),
        ];
        let mut elsewhere: Vec<&str> = [TOP, LLM, RETRY, MEMORY].into_iter().flat_map(read_elsewhere).collect();
        elsewhere.sort_unstable();
        let mut named: Vec<&str> = cases.iter().map(|c| c.0).collect();
        named.sort_unstable();
        assert_eq!(elsewhere, named);
        for (key, text, read) in cases {
            let (c, p) = parse(text.as_bytes(), &dir()).unwrap();
            assert!(p.is_empty(), "{key}: {p:?}");
            assert!(read(&c), "{key} was not read");
        }
    }
}
