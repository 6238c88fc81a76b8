//! The `agent` section of `config.json`: logs, limits, iteration, reply handling, and the set of
//! states (docs/design.md §4, §6), with defaults and validation.
//!
//! Era-B shape (canonical):
//! `agent.{think_log, evaluation_log, command_log}.{enable, max_entries, key_prefix}`,
//! `agent.paging_limit.{enable, max_tokens}`, `agent.hard_limit.{enable, max_tokens}`,
//! `agent.iterate.{max_iterations, delay_ms}`, `agent.state.<name>.prompt`.
//! Additions: `agent.max_actions_per_cycle`, `agent.invalid_reply_limit`,
//! `agent.invalid_reply_backoff_ms`, `agent.start_state`.
//! Era-A shape (accepted): `agent.max_iterations`, `agent.state_prompts.<state>.system_prompt`.
//!
//! Fixes over the C original (spec §11): a missing log `enable` means on, not off; `base` is not
//! a state; `hard_limit` is enforced; `iterate.delay_ms` is read.

use super::checker::{join, Checker};
use crate::json::Value;
use crate::limits::{ACTIONS_PER_CYCLE_MAX, LOG_MAX_ENTRIES, STATES_MAX, STATE_NAME_MAX_BYTES};
use crate::states;

/// One rotating log kept in working memory (`think_log_001`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogSettings {
    /// Whether entries are kept at all.
    pub enable: bool,
    /// How many slots rotate (1..=999; the oldest entry is dropped).
    pub max_entries: u32,
    /// Key prefix; slots are `<prefix>001` ... `<prefix>NNN`.
    pub key_prefix: String,
}

/// A token limit that can be switched off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenLimit {
    /// Whether the limit applies.
    pub enable: bool,
    /// Estimated prompt tokens at which it applies.
    pub max_tokens: u64,
}

/// Everything under `agent` except the prompt trees (see `prompts.rs`).
#[derive(Clone, Debug, PartialEq)]
pub struct AgentSettings {
    pub think_log: LogSettings,
    pub evaluation_log: LogSettings,
    pub command_log: LogSettings,
    /// Above this estimate the next state is `paging` (the model chooses what to move out).
    pub paging_limit: TokenLimit,
    /// Above this estimate the agent evicts least-recently-used entries itself.
    pub hard_limit: TokenLimit,
    /// Cycles to run: -1 runs until stopped.
    pub max_iterations: i64,
    /// Pause between cycles, in milliseconds.
    pub delay_ms: u64,
    /// Most actions carried out from one reply.
    pub max_actions_per_cycle: usize,
    /// Invalid replies in a row before the agent backs off and returns to `thinking`.
    pub invalid_reply_limit: u32,
    /// The back-off pause after `invalid_reply_limit` invalid replies, in milliseconds.
    pub invalid_reply_backoff_ms: u64,
    /// The states, in config order (`base` excluded; `executing` is an alias of `commanding`
    /// and is not listed separately).
    pub states: Vec<String>,
    /// The state a fresh memory starts in.
    pub start_state: String,
}

/// The default states, used when the config names none (era-A configs without `state`).
pub const DEFAULT_STATES: [&str; 4] = states::DEFAULT;

const AGENT_KEYS: &[&str] = &[
    "think_log",
    "evaluation_log",
    "command_log",
    "execution_log",
    "paging_limit",
    "hard_limit",
    "iterate",
    "max_iterations",
    "max_actions_per_cycle",
    "invalid_reply_limit",
    "invalid_reply_backoff_ms",
    "start_state",
    "state",
    "state_prompts",
    "self_directed",
];

impl AgentSettings {
    /// The key prefixes of the three rotating logs (entries the agent manages itself).
    pub fn log_prefixes(&self) -> [&str; 3] {
        [&self.think_log.key_prefix, &self.evaluation_log.key_prefix, &self.command_log.key_prefix]
    }

    /// Reads `agent` (which may be absent: every setting has a default).
    pub fn read(c: &mut Checker, agent: Option<Value<'_>>) -> AgentSettings {
        let p = "agent";
        c.reject_unknown(agent, p, AGENT_KEYS);
        let think_log = read_log(c, agent, "think_log", 4);
        let evaluation_log = read_log(c, agent, "evaluation_log", 2);
        // `execution_log` is the pre-08-08 name of `command_log`.
        let command_key = match agent {
            Some(a) if a.get("command_log").is_none() && a.get("execution_log").is_some() => "execution_log",
            _ => "command_log",
        };
        let mut command_log = read_log(c, agent, command_key, 2);
        if command_key == "execution_log" && command_log.key_prefix == "execution_log_" {
            command_log.key_prefix = "command_log_".into();
        }
        let paging_limit = read_limit(c, agent, "paging_limit", 3000);
        let hard_limit = read_limit(c, agent, "hard_limit", 4500);
        let iterate = c.object(agent, p, "iterate");
        let ip = join(p, "iterate");
        // Era A kept max_iterations directly under agent.
        let legacy_max = c.integer(agent, p, "max_iterations", 5, -1, i64::MAX);
        let mut max_iterations = c.integer(iterate, &ip, "max_iterations", legacy_max, -1, i64::MAX);
        if max_iterations == 0 {
            // The C original treated 0 as "use the default"; keep that reading, loudly.
            c.problem(&join(&ip, "max_iterations"), "0 cycles would do nothing; use -1 to run forever or a count >= 1");
            max_iterations = 5;
        }
        c.reject_unknown(iterate, &ip, &["enable", "max_iterations", "delay_ms"]);
        let delay_ms = c.integer(iterate, &ip, "delay_ms", 0, 0, 86_400_000) as u64;
        let max_actions_per_cycle =
            c.integer(agent, p, "max_actions_per_cycle", 1, 1, ACTIONS_PER_CYCLE_MAX as i64) as usize;
        let invalid_reply_limit = c.integer(agent, p, "invalid_reply_limit", 3, 1, 1000) as u32;
        let invalid_reply_backoff_ms = c.integer(agent, p, "invalid_reply_backoff_ms", 5000, 0, 3_600_000) as u64;

        let states = read_states(c, agent);
        let start_state =
            c.string(agent, p, "start_state", STATE_NAME_MAX_BYTES).unwrap_or_else(|| states::THINKING.into());
        let start_state = states::canonical(&start_state).to_string();
        if !states.contains(&start_state) {
            c.problem(&join(p, "start_state"), format_args!("'{}' is not one of the states {:?}", start_state, states));
        }
        if paging_limit.enable && hard_limit.enable && hard_limit.max_tokens < paging_limit.max_tokens {
            c.problem(
                "agent.hard_limit.max_tokens",
                format_args!(
                    "{} is below agent.paging_limit.max_tokens ({}); the hard limit must be the higher one",
                    hard_limit.max_tokens, paging_limit.max_tokens
                ),
            );
        }
        AgentSettings {
            think_log,
            evaluation_log,
            command_log,
            paging_limit,
            hard_limit,
            max_iterations,
            delay_ms,
            max_actions_per_cycle,
            invalid_reply_limit,
            invalid_reply_backoff_ms,
            states,
            start_state,
        }
    }

    /// Whether `name` is a state the model may ask for (`base` never is).
    pub fn is_state(&self, name: &str) -> bool {
        self.states.iter().any(|s| s == states::canonical(name))
    }
}

fn read_log(c: &mut Checker, agent: Option<Value<'_>>, key: &str, default_max: i64) -> LogSettings {
    let o = c.object(agent, "agent", key);
    let p = join("agent", key);
    c.reject_unknown(o, &p, &["enable", "max_entries", "key_prefix"]);
    let enable = c.boolean(o, &p, "enable", true);
    let max_entries = c.integer(o, &p, "max_entries", default_max, 1, LOG_MAX_ENTRIES as i64) as u32;
    let default_prefix = format!("{}_", key);
    let key_prefix = c.string(o, &p, "key_prefix", 31).unwrap_or(default_prefix);
    let valid =
        !key_prefix.is_empty() && key_prefix.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !valid {
        c.problem(&join(&p, "key_prefix"), format_args!("'{}' must be 1-31 characters of a-z, 0-9 and _", key_prefix));
    }
    LogSettings { enable, max_entries, key_prefix }
}

fn read_limit(c: &mut Checker, agent: Option<Value<'_>>, key: &str, default: i64) -> TokenLimit {
    let o = c.object(agent, "agent", key);
    let p = join("agent", key);
    c.reject_unknown(o, &p, &["enable", "enabled", "max_tokens"]);
    // Era B0 spelled it `enabled`.
    let legacy = c.boolean(o, &p, "enabled", true);
    let enable = c.boolean(o, &p, "enable", legacy);
    let max_tokens = c.integer(o, &p, "max_tokens", default, 1, 100_000_000) as u64;
    TokenLimit { enable, max_tokens }
}

fn read_states(c: &mut Checker, agent: Option<Value<'_>>) -> Vec<String> {
    let mut states: Vec<String> = Vec::new();
    let section = match agent {
        Some(a) if a.get("state").is_some() => c.object(agent, "agent", "state").map(|v| (v, "agent.state")),
        Some(a) if a.get("state_prompts").is_some() => {
            c.object(agent, "agent", "state_prompts").map(|v| (v, "agent.state_prompts"))
        }
        _ => None,
    };
    match section {
        Some((obj, path)) => {
            for (name, _) in obj.members() {
                if name == "base" {
                    continue;
                }
                let canon = states::canonical(name);
                let valid = !canon.is_empty()
                    && canon.len() <= STATE_NAME_MAX_BYTES
                    && canon.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
                if !valid {
                    c.problem(
                        &join(path, name),
                        format_args!("a state name must be 1-{} characters of a-z, 0-9 and _", STATE_NAME_MAX_BYTES),
                    );
                    continue;
                }
                if !states.iter().any(|s| s == canon) {
                    states.push(canon.to_string());
                }
            }
            if states.len() > STATES_MAX {
                c.problem(path, format_args!("{} states; at most {} are supported", states.len(), STATES_MAX));
                states.truncate(STATES_MAX);
            }
        }
        None => states.extend(DEFAULT_STATES.iter().map(|s| s.to_string())),
    }
    if !states.iter().any(|s| s == crate::states::THINKING) {
        c.problem("agent.state", "the state 'thinking' is required: the agent returns to it after invalid replies");
    }
    states
}
