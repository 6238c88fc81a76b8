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

use super::checker::{join, Checker, Got, Key, Target};
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
    /// The state taken when `memory.json`'s state is not one of `states` (say, after the
    /// states were renamed). A fresh memory starts in `thinking`, which is always a state.
    pub start_state: String,
}

/// The default states, used when the config names none (era-A configs without `state`).
pub const DEFAULT_STATES: [&str; 4] = states::DEFAULT;

/// Cycles run when the config says nothing (or, loudly, 0).
const DEFAULT_MAX_ITERATIONS: i64 = 5;

impl Default for AgentSettings {
    /// The settings of an absent `agent` section.
    fn default() -> AgentSettings {
        let log = |key: &str, max_entries| LogSettings { enable: true, max_entries, key_prefix: format!("{}_", key) };
        AgentSettings {
            think_log: log("think_log", 4),
            evaluation_log: log("evaluation_log", 2),
            command_log: log("command_log", 2),
            paging_limit: TokenLimit { enable: true, max_tokens: 3000 },
            hard_limit: TokenLimit { enable: true, max_tokens: 4500 },
            max_iterations: DEFAULT_MAX_ITERATIONS,
            delay_ms: 0,
            max_actions_per_cycle: 1,
            invalid_reply_limit: 3,
            invalid_reply_backoff_ms: 5000,
            states: DEFAULT_STATES.iter().map(|s| s.to_string()).collect(),
            start_state: states::THINKING.into(),
        }
    }
}

/// `agent`. The checks across keys are [`AgentSettings::read`]'s.
const AGENT: &[Key<AgentSettings>] = &[
    Key::read("think_log", |c, o, _, a| read_log(c, o, "think_log", &mut a.think_log)),
    Key::read("evaluation_log", |c, o, _, a| read_log(c, o, "evaluation_log", &mut a.evaluation_log)),
    Key::read("command_log", read_command_log),
    // The pre-08-08 name of command_log, read by read_command_log.
    Key::elsewhere("execution_log"),
    Key::read("paging_limit", |c, o, _, a| read_limit(c, o, "paging_limit", &mut a.paging_limit)),
    Key::read("hard_limit", |c, o, _, a| read_limit(c, o, "hard_limit", &mut a.hard_limit)),
    Key::read("iterate", read_iterate),
    // Era A's place of iterate.max_iterations, read by read_iterate.
    Key::elsewhere("max_iterations"),
    Key::integer("max_actions_per_cycle", 1, ACTIONS_PER_CYCLE_MAX as i64, AgentSlot::MaxActionsPerCycle),
    Key::integer("invalid_reply_limit", 1, 1000, AgentSlot::InvalidReplyLimit),
    Key::integer("invalid_reply_backoff_ms", 0, 3_600_000, AgentSlot::InvalidReplyBackoff),
    Key::text("start_state", STATE_NAME_MAX_BYTES, AgentSlot::StartState),
    Key::read("state", |c, o, _, a| a.states = read_states(c, o)),
    // Era A's state prompts, read by read_states.
    Key::elsewhere("state_prompts"),
    Key::ignored("self_directed"),
];

/// `agent.iterate`.
const ITERATE: &[Key<AgentSettings>] = &[
    Key::ignored("enable"),
    Key::integer("max_iterations", -1, i64::MAX, AgentSlot::MaxIterations),
    Key::integer("delay_ms", 0, 86_400_000, AgentSlot::Delay),
];

/// Where the values of the `agent` and `agent.iterate` tables go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentSlot {
    MaxActionsPerCycle,
    InvalidReplyLimit,
    InvalidReplyBackoff,
    StartState,
    MaxIterations,
    Delay,
}

impl Target for AgentSettings {
    type Slot = AgentSlot;

    fn set(&mut self, to: AgentSlot, value: Got<'_>) -> bool {
        match (to, value) {
            (AgentSlot::MaxActionsPerCycle, Got::Integer(n)) => self.max_actions_per_cycle = n as usize,
            (AgentSlot::InvalidReplyLimit, Got::Integer(n)) => self.invalid_reply_limit = n as u32,
            (AgentSlot::InvalidReplyBackoff, Got::Integer(ms)) => self.invalid_reply_backoff_ms = ms as u64,
            (AgentSlot::StartState, Got::Text(s)) => self.start_state = states::canonical(s).to_string(),
            (AgentSlot::MaxIterations, Got::Integer(n)) => self.max_iterations = n,
            (AgentSlot::Delay, Got::Integer(ms)) => self.delay_ms = ms as u64,
            _ => return false,
        }
        true
    }
}

/// `agent.{think_log, evaluation_log, command_log}`.
const LOG: &[Key<LogSettings>] = &[
    Key::boolean("enable", LogSlot::Enable),
    Key::integer("max_entries", 1, LOG_MAX_ENTRIES as i64, LogSlot::MaxEntries),
    Key::text("key_prefix", 31, LogSlot::KeyPrefix),
];

/// Where the values of a log's table go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogSlot {
    Enable,
    MaxEntries,
    KeyPrefix,
}

impl Target for LogSettings {
    type Slot = LogSlot;

    fn set(&mut self, to: LogSlot, value: Got<'_>) -> bool {
        match (to, value) {
            (LogSlot::Enable, Got::Bool(on)) => self.enable = on,
            (LogSlot::MaxEntries, Got::Integer(n)) => self.max_entries = n as u32,
            (LogSlot::KeyPrefix, Got::Text(p)) => self.key_prefix = p.to_string(),
            _ => return false,
        }
        true
    }
}

/// `agent.{paging_limit, hard_limit}`.
const LIMIT: &[Key<TokenLimit>] = &[
    Key::read("enable", read_enable),
    // Era B0's spelling of enable, read by read_enable.
    Key::elsewhere("enabled"),
    Key::integer("max_tokens", 1, 100_000_000, LimitSlot::MaxTokens),
];

/// Where the values of a token limit's table go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitSlot {
    MaxTokens,
}

impl Target for TokenLimit {
    type Slot = LimitSlot;

    fn set(&mut self, to: LimitSlot, value: Got<'_>) -> bool {
        match (to, value) {
            (LimitSlot::MaxTokens, Got::Integer(n)) => self.max_tokens = n as u64,
            _ => return false,
        }
        true
    }
}

impl AgentSettings {
    /// The key prefixes of the three rotating logs (entries the agent manages itself).
    pub fn log_prefixes(&self) -> [&str; 3] {
        [&self.think_log.key_prefix, &self.evaluation_log.key_prefix, &self.command_log.key_prefix]
    }

    /// Reads `agent` (which may be absent: every setting has a default).
    pub fn read(c: &mut Checker, agent: Option<Value<'_>>) -> AgentSettings {
        let p = "agent";
        let mut a = AgentSettings::default();
        c.read(agent, p, AGENT, &mut a);
        if !a.states.contains(&a.start_state) {
            c.problem_at(p, "start_state", format_args!("'{}' is not one of the states {:?}", a.start_state, a.states));
        }
        let (paging, hard) = (a.paging_limit, a.hard_limit);
        if paging.enable && hard.enable && hard.max_tokens < paging.max_tokens {
            c.problem(
                "agent.hard_limit.max_tokens",
                format_args!(
                    "{} is below agent.paging_limit.max_tokens ({}); the hard limit must be the higher one",
                    hard.max_tokens, paging.max_tokens
                ),
            );
        }
        a
    }

    /// Whether `name` is a state the model may ask for (`base` never is).
    pub fn is_state(&self, name: &str) -> bool {
        self.states.iter().any(|s| s == states::canonical(name))
    }
}

/// `agent.<key>`, one of the rotating logs, into `log` (which holds its defaults).
fn read_log(c: &mut Checker, agent: Option<Value<'_>>, key: &str, log: &mut LogSettings) {
    let o = c.object(agent, "agent", key);
    let p = join("agent", key);
    c.read(o, &p, LOG, log);
    let prefix = &log.key_prefix;
    let valid = !prefix.is_empty() && prefix.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !valid {
        c.problem_at(&p, "key_prefix", format_args!("'{}' must be 1-31 characters of a-z, 0-9 and _", prefix));
    }
}

/// `command_log`, or its pre-08-08 name `execution_log` when only that is given (its default
/// prefix stays `command_log_`).
fn read_command_log(c: &mut Checker, agent: Option<Value<'_>>, _: &str, a: &mut AgentSettings) {
    let key = match agent {
        Some(o) if o.get("command_log").is_none() && o.get("execution_log").is_some() => "execution_log",
        _ => "command_log",
    };
    read_log(c, agent, key, &mut a.command_log);
    if key == "execution_log" && a.command_log.key_prefix == "execution_log_" {
        a.command_log.key_prefix = "command_log_".into();
    }
}

/// `agent.<key>`, a token limit, into `limit` (which holds its defaults).
fn read_limit(c: &mut Checker, agent: Option<Value<'_>>, key: &str, limit: &mut TokenLimit) {
    let o = c.object(agent, "agent", key);
    c.read(o, &join("agent", key), LIMIT, limit);
}

/// `enable`, or era B0's `enabled` when there is no valid `enable` (both are checked).
fn read_enable(c: &mut Checker, o: Option<Value<'_>>, p: &str, limit: &mut TokenLimit) {
    for key in ["enabled", "enable"] {
        if let Some(on) = c.boolean(o, p, key) {
            limit.enable = on;
        }
    }
}

/// `iterate`, whose `max_iterations` era A kept directly under `agent` (both are checked; the
/// one in `iterate` wins).
fn read_iterate(c: &mut Checker, agent: Option<Value<'_>>, p: &str, a: &mut AgentSettings) {
    let iterate = c.object(agent, p, "iterate");
    if let Some(n) = c.integer(agent, p, "max_iterations", -1, i64::MAX) {
        a.max_iterations = n;
    }
    let ip = join(p, "iterate");
    c.read(iterate, &ip, ITERATE, a);
    if a.max_iterations == 0 {
        // The C original treated 0 as "use the default"; keep that reading, loudly.
        c.problem_at(&ip, "max_iterations", "0 cycles would do nothing; use -1 to run forever or a count >= 1");
        a.max_iterations = DEFAULT_MAX_ITERATIONS;
    }
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
                    c.problem_at(
                        path,
                        name,
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

/// Each `agent` table's key names under the path of every section it reads, for the test that
/// docs/settings.md documents every key. A new table needs a line here.
#[cfg(test)]
pub(crate) fn key_tables() -> Vec<(&'static str, Vec<&'static str>)> {
    use super::checker::names;
    let mut tables = vec![("agent", names(AGENT)), ("agent.iterate", names(ITERATE))];
    for log in ["agent.think_log", "agent.evaluation_log", "agent.command_log"] {
        tables.push((log, names(LOG)));
    }
    for limit in ["agent.paging_limit", "agent.hard_limit"] {
        tables.push((limit, names(LIMIT)));
    }
    tables
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::checker::{read_elsewhere, table_faults};
    use crate::json::Document;

    /// `AgentSettings::read` of the `agent` object `text`, and the problems.
    fn read(text: &str) -> (AgentSettings, Vec<String>) {
        let mut doc = Document::with_capacity(256, 4096);
        doc.parse(text.as_bytes()).unwrap();
        let mut c = Checker::new();
        let a = AgentSettings::read(&mut c, Some(doc.root()));
        (a, c.problems().to_vec())
    }

    #[test]
    fn tables_are_sound() {
        for table in [AGENT, ITERATE] {
            assert_eq!(table_faults(table, &mut AgentSettings::default()), Vec::<String>::new());
        }
        assert_eq!(table_faults(LOG, &mut AgentSettings::default().think_log), Vec::<String>::new());
        assert_eq!(table_faults(LIMIT, &mut AgentSettings::default().hard_limit), Vec::<String>::new());
    }

    /// The lists a far-off unknown key gets are the tables, in the order the key lists had
    /// before the tables.
    #[test]
    fn unknown_keys_are_told_the_keys_known_there() {
        let (_, p) =
            read(r#"{"zzzz": 1, "iterate": {"zzzz": 1}, "think_log": {"zzzz": 1}, "paging_limit": {"zzzz": 1}}"#);
        for (at, known) in [
            (
                "agent.zzzz",
                "think_log, evaluation_log, command_log, execution_log, paging_limit, hard_limit, iterate, \
                 max_iterations, max_actions_per_cycle, invalid_reply_limit, invalid_reply_backoff_ms, start_state, \
                 state, state_prompts, self_directed",
            ),
            ("agent.iterate.zzzz", "enable, max_iterations, delay_ms"),
            ("agent.think_log.zzzz", "enable, max_entries, key_prefix"),
            ("agent.paging_limit.zzzz", "enable, enabled, max_tokens"),
        ] {
            let expected = format!("{at}: unknown key; the keys known here are {known}");
            assert!(p.contains(&expected), "{expected}\nmissing in {p:#?}");
        }
    }

    /// A key the tables leave to other code ([`Rule::Elsewhere`]) is read there: each one,
    /// given alone, changes what it should. A new such key needs a case here.
    #[test]
    fn every_key_read_elsewhere_is_read() {
        type Case = (&'static str, &'static str, fn(&AgentSettings) -> bool);
        let cases: &[Case] = &[
            ("execution_log", r#"{"execution_log": {"max_entries": 7}}"#, |a| {
                a.command_log.max_entries == 7 && a.command_log.key_prefix == "command_log_"
            }),
            ("max_iterations", r#"{"max_iterations": 11}"#, |a| a.max_iterations == 11),
            ("state_prompts", r#"{"state_prompts": {"thinking": {}, "dreaming": {}}}"#, |a| {
                a.states == ["thinking", "dreaming"]
            }),
            ("enabled", r#"{"paging_limit": {"enabled": false}}"#, |a| !a.paging_limit.enable),
        ];
        let mut elsewhere = read_elsewhere(AGENT);
        elsewhere.extend(read_elsewhere(ITERATE));
        elsewhere.extend(read_elsewhere(LOG));
        elsewhere.extend(read_elsewhere(LIMIT));
        elsewhere.sort_unstable();
        let mut named: Vec<&str> = cases.iter().map(|c| c.0).collect();
        named.sort_unstable();
        assert_eq!(elsewhere, named);
        for (key, text, was_read) in cases {
            let (a, p) = read(text);
            assert!(p.is_empty(), "{key}: {p:?}");
            assert!(was_read(&a), "{key} was not read: {a:?}");
        }
    }
}
