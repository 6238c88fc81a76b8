//! One agent and its cycle (docs/design.md §3, §5, §6):
//!
//! ```text
//! inbox -> fit the budget (page out) -> prompt -> model -> reply -> instructions
//!       -> actions, logs, next state -> persist memory.json -> audit line -> report
//! ```
//!
//! Everything the cycle touches is reserved in [`Agent::open`]: the prompt buffer, the reply
//! reader, the action buffers, the memory.json writer, the audit line. A cycle in steady state
//! allocates nothing (a test with a counting allocator holds it to that).
//!
//! The cycle's steps live in two parts beside this file: `prompt` (building the prompt, its
//! budget and paging, asking the model) and `apply` (reading the reply and carrying it out).
//!
//! # The prompt
//!
//! Stable parts first, so a server's prompt cache (llama.cpp, LM Studio, vLLM prefix caching)
//! is reused from one cycle to the next: the head (the base prompt and `default` segments, then
//! every state's prompt under `<states>`, see `prompts.rs`), then working memory in the order
//! entries were added (logs append at the end, see `logs.rs`), then what changes every cycle:
//! the current state, the iteration, the feedback on the last invalid reply, and one line that
//! points the model at its state's prompt. These are the era-B parts (base, state prompt,
//! working memory), arranged so a typical cycle only appends to the previous cycle's prompt.
//!
//! # Budget and paging
//!
//! Tokens are estimated as `ceil(bytes / bytes_per_token)` with 3 bytes per token (cautious
//! for English and code; the server's reported prompt tokens lower it when they show it was
//! optimistic). The prompt budget is the context window minus `max_tokens`. Before a request:
//! above `hard_limit` or the budget, the agent itself moves least-recently-used entries to the
//! store (never `task` or `user_request`) until it is under `paging_limit`; above
//! `paging_limit`, the state becomes `paging` and the model chooses what to move. If the model
//! does not page in that state, the agent moves entries itself. A `CONTEXT_OVERFLOW` answer
//! pages out a quarter of the prompt and retries once. Nothing is ever dropped: pages go to the
//! store, whose append is fsynced before working memory lets go of them.
//!
//! # The state machine
//!
//! A successful action moves to `evaluating`; a reply whose actions all failed moves to
//! `thinking`; otherwise the reply's `next_state` is used if it is a configured state (`base`
//! never is), else `thinking`, with the refusal logged. An action identical to the previous
//! cycle's is refused and the model is told. A reply with no usable instruction leaves the
//! state as it is and puts precise feedback plus the state's canonical example into the next
//! prompt; after `invalid_reply_limit` such replies in a row the agent pauses
//! (`invalid_reply_backoff_ms`) and returns to `thinking`. No reply can make it loop tightly.

use super::actions::{ActionResult, ActionScratch};
use super::audit::{ActionRecord, AuditLog, CycleRecord};
use super::config::Config;
use super::constrain::Constrainer;
use super::exchange::{ExchangeLog, ExchangeRecord};
use super::inbox::Inbox;
use super::product::Product;
use crate::error::{Error, Result};
use crate::fixed::{ArrayString, ArrayVec, FixedBuf};
use crate::limits::{
    ACTIONS_PER_CYCLE_MAX, FEEDBACK_MAX_BYTES, INBOX_MAX_BYTES, PROMPT_MAX_BYTES, WORKING_TEXT_MAX_BYTES,
};
use crate::memory::file::{self as memfile, MemoryFile, Saver};
use crate::memory::store::Store;
use crate::reply::Reader;
use crate::sha256::Sha256;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Working-memory keys the agent never pages out by itself.
pub const PINNED_KEYS: [&str; 2] = ["task", "user_request"];

/// The working-memory key of the pending user request.
pub const USER_REQUEST_KEY: &str = "user_request";

/// Default estimate of prompt bytes per token (cautious; see the module documentation).
pub const BYTES_PER_TOKEN: f64 = 3.0;

/// Tokens the prompt's tail (state, iteration, the closing line) takes, at most, without
/// feedback.
pub const TAIL_TOKENS: u64 = 64;

/// `AgentMeta` keys kept in `memory.json` between runs.
mod apply;
mod prompt;

use super::model::LastReply;
pub use super::model::Model;

/// Names of the agent map entries the cycle keeps in memory.json.
mod meta {
    pub const LAST_ACTION: &str = "last_action";
    pub const INVALID_STREAK: &str = "invalid_replies_in_a_row";
    pub const FEEDBACK: &str = "feedback";
    pub const LAST_ERROR: &str = "last_error";
    pub const LAST_CYCLE: &str = "last_cycle";
}

/// What one cycle did, for the status line.
#[derive(Clone, Debug)]
pub struct CycleReport {
    pub cycle: u64,
    pub state: ArrayString<32>,
    pub next_state: ArrayString<32>,
    pub actions: ArrayVec<ActionBrief, ACTIONS_PER_CYCLE_MAX>,
    pub problems: usize,
    pub invalid_reply: bool,
    pub latency: Duration,
    pub overhead: Duration,
    pub prompt_bytes: usize,
    pub tokens_est: u64,
    pub usage: Option<(u64, u64)>,
    pub wm_bytes: usize,
    pub wm_budget: usize,
    pub wm_entries: usize,
    pub store_entries: usize,
    pub paged_out: usize,
    /// Entries a clean-up took out of the store this cycle (`memory.cleanup`).
    pub cleanup: crate::memory::store::cleanup::Moved,
    /// Entries in the cold store, once the agent has written to it.
    pub cold_entries: Option<u64>,
    /// The server said the prompt overflowed its context; the agent paged out and asked again.
    pub overflow_retried: bool,
    /// The reply carried out a paging move (a save, a remove, a page-out, an archive).
    pub model_paged: bool,
    pub error: Option<Error>,
    /// The prompt needs more tokens than the budget (`llm.context_window - llm.max_tokens`)
    /// even after paging: `error` says so, and the run ends, since waiting does not change it.
    pub prompt_over_budget: bool,
    /// A pause the loop should take before the next cycle (invalid-reply back-off).
    pub pause: Duration,
    /// The model source is exhausted (end of a replay script or recorded log).
    pub finished: bool,
    /// The product holds as many units as the task asks for: the cycle asked nothing.
    pub task_done: bool,
    /// Prompt tokens the server reused from its cache (`None`: it did not say).
    pub cached_tokens: Option<u64>,
    /// How the reply was constrained: `grammar`, `json_schema` or `off`.
    pub constrain: &'static str,
    /// The reply stopped at `max_tokens`.
    pub hit_max_tokens: bool,
}

/// One action in a [`CycleReport`].
#[derive(Clone, Copy, Debug, Default)]
pub struct ActionBrief {
    pub kind: &'static str,
    pub ok: bool,
}

/// The state a memory file is in.
type State = ArrayString<{ crate::limits::MEMORY_STATE_MAX_BYTES }>;

/// One cycle in progress: what its steps hand on to each other.
struct Cycle {
    /// The cycle's clock, Unix seconds.
    now: u64,
    /// Its number (the iteration it becomes).
    cycle: u64,
    /// The state when it began (restored when the source turns out to be used up).
    state_at_start: State,
    /// The state the model was asked in (`paging` when the budget forced it).
    state_asked: State,
    /// A message was taken from the inbox into working memory.
    took_inbox: bool,
    /// SHA-256 of the prompt sent.
    digest: [u8; 32],
    /// The reply's problem codes, for the audit line.
    problems: ArrayVec<&'static str, 16>,
    report: CycleReport,
}

/// The agent: configuration, memory, store, model, and every buffer a cycle uses.
pub struct Agent {
    dir: PathBuf,
    /// Held for the agent's life: one writer per data directory.
    _lock: super::lock::DataLock,
    pub config: Config,
    pub memory: MemoryFile,
    pub store: Store,
    model: Model,
    reader: Reader,
    constrainer: Constrainer,
    /// The task's product so far (see `agent::product`).
    product: Product,
    saver: Saver,
    inbox: Inbox,
    audit: AuditLog,
    exchange: Option<ExchangeLog>,
    prompt: FixedBuf,
    scratch: FixedBuf,
    request: FixedBuf,
    feedback: FixedBuf,
    action_scratch: ActionScratch,
    rotate: FixedBuf,
    reply: LastReply,
    pending_error: Option<Error>,
    results: ArrayVec<ActionResult, ACTIONS_PER_CYCLE_MAX>,
    run_id: ArrayString<16>,
    bytes_per_token: f64,
    cycles_this_run: u64,
    /// Prefix stability of the last prompt (bytes equal to the previous prompt's prefix).
    pub last_prefix_equal: usize,
    prev_prompt: FixedBuf,
}

impl Agent {
    /// Opens the agent in data directory `dir` with `config`, talking to `model`. Loads (or
    /// starts) `memory.json` and the store, and reserves every buffer.
    pub fn open(dir: &Path, config: Config, model: Model, exchange_log: bool) -> Result<Agent> {
        Agent::open_at(dir, config, model, exchange_log, crate::clock::now_unix())
    }

    /// [`Agent::open`] with the clock at `now` (Unix seconds): loading stamps entries that
    /// carry no times with it, so `replay` opens at the recorded run's start.
    pub fn open_at(dir: &Path, config: Config, model: Model, exchange_log: bool, now: u64) -> Result<Agent> {
        let lock = super::lock::DataLock::acquire(dir)?;
        let mut store = Store::open_with_capacity(dir, config.store_capacity)?;
        store.set_policy(Some(config.cleanup));
        let (mut memory, report) = memfile::load(dir, &mut store, now)?;
        if report.moved_aside > 0 {
            err!(PersistFailed, "{} unreadable memory file(s) moved aside in {}", report.moved_aside, dir.display())
                .print_warning();
        }
        // The fixed part of every prompt must leave room under the limits, or the agent would
        // page everything out and still be over them.
        let head = (config.prompts.head().len() as f64 / BYTES_PER_TOKEN).ceil() as u64 + TAIL_TOKENS;
        let limits = [
            ("agent.paging_limit.max_tokens", config.agent.paging_limit.enable, config.agent.paging_limit.max_tokens),
            ("agent.hard_limit.max_tokens", config.agent.hard_limit.enable, config.agent.hard_limit.max_tokens),
        ];
        for (name, on, max) in limits {
            if on && max <= head {
                bail!(
                    ConfigInvalid,
                    "{} is {} but the prompt's fixed part (base and state prompts) already needs ~{} tokens; \
                     raise it or shorten the prompts",
                    name,
                    max,
                    head
                );
            }
        }
        if !config.agent.is_state(memory.state.as_str()) {
            let start = config.agent.start_state.clone();
            memory.set_state(&start)?;
        }
        let run_id = make_run_id(now);
        let constrainer = Constrainer::new(&config.llm, fnv1a(run_id.as_bytes()));
        let exchange = if exchange_log { Some(ExchangeLog::start(dir, run_id.as_str(), now)?) } else { None };
        let mut action_scratch = ActionScratch::new();
        if let Some(e) = &config.embeddings {
            // A setting it cannot use stops the start; trouble with store.vec (a cache of the
            // store) only turns recall by meaning off, with a warning.
            action_scratch.meaning = match crate::llm::embed::meaning(&store, e, true) {
                Ok(m) => Some(m),
                Err(e) if e.code() == crate::error::Code::ConfigInvalid => return Err(e),
                Err(e) => {
                    e.context(format_args!("recall by meaning is off for this run")).print_warning();
                    None
                }
            };
        }
        let mut product = Product::new();
        // The heads the product's asks come after: a unit made of their words copies them.
        product.read_instructions(config.prompts.ask_head());
        product.read_instructions(config.prompts.constrained_head());
        product.open(&mut memory.working, memory.agent.get(super::product::STATE_META_KEY), &store);
        let mut feedback = FixedBuf::with_capacity("feedback (limits::FEEDBACK_MAX_BYTES)", FEEDBACK_MAX_BYTES);
        if let Some(f) = memory.agent.get(meta::FEEDBACK) {
            let _ = feedback.push_str(f);
        }
        Ok(Agent {
            dir: dir.to_path_buf(),
            _lock: lock,
            config,
            memory,
            store,
            model,
            reader: Reader::new(),
            constrainer,
            product,
            saver: Saver::new(dir),
            inbox: Inbox::new(dir),
            audit: AuditLog::open(dir)?,
            exchange,
            prompt: FixedBuf::with_capacity("prompt (limits::PROMPT_MAX_BYTES)", PROMPT_MAX_BYTES),
            scratch: FixedBuf::with_capacity(
                "working-memory scratch (limits::WORKING_TEXT_MAX_BYTES)",
                WORKING_TEXT_MAX_BYTES,
            ),
            // As large as the inbox file can be, so every waiting message always fits.
            request: FixedBuf::with_capacity("user request (limits::INBOX_MAX_BYTES)", INBOX_MAX_BYTES),
            feedback,
            action_scratch,
            rotate: FixedBuf::with_capacity(
                "log rotation scratch (limits::WORKING_TEXT_MAX_BYTES)",
                WORKING_TEXT_MAX_BYTES,
            ),
            reply: LastReply::new(),
            pending_error: None,
            results: ArrayVec::new(),
            run_id,
            bytes_per_token: BYTES_PER_TOKEN,
            cycles_this_run: 0,
            last_prefix_equal: 0,
            prev_prompt: FixedBuf::with_capacity("previous prompt (limits::PROMPT_MAX_BYTES)", PROMPT_MAX_BYTES),
        })
    }

    /// The count of units the task asks for and the units' word, once the product holds them
    /// (see [`CycleReport::task_done`]).
    pub fn task_done(&self) -> Option<(u32, &str)> {
        self.product.done().map(|n| (n, self.product.units()))
    }

    /// A clean stop: the store writes its access statistics, a checkpoint of its index and
    /// its text indexes' files, the cold store's too (though this run never searched), so
    /// the next start and the next first search read them instead of the whole log and
    /// `store.cold` ([`Store::stop`]). Nothing durable depends on it.
    pub fn close_store(&mut self) -> Result<()> {
        self.store.flush_access()?;
        self.store.stop()
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// This run's id (in the audit log).
    pub fn run_id(&self) -> &str {
        self.run_id.as_str()
    }

    /// The exchange log's directory, when it is on.
    pub fn exchange_dir(&self) -> Option<&Path> {
        self.exchange.as_ref().map(|e| e.dir())
    }

    /// The prompt of the last cycle.
    pub fn last_prompt(&self) -> &[u8] {
        self.prompt.as_slice()
    }

    /// Runs one cycle: build the prompt, ask the model, read the reply, carry out its
    /// instructions, persist, report. `progress` sees streamed pieces as they arrive;
    /// `should_stop` is asked while waiting for the model. `Err` only when state could not be
    /// persisted (the loop must stop); every other failure is in the report.
    pub fn cycle(&mut self, progress: &mut dyn FnMut(u64), should_stop: &dyn Fn() -> bool) -> Result<CycleReport> {
        let started = Instant::now();
        let mut c = self.begin()?;
        if c.report.finished {
            return Ok(c.report);
        }
        self.take_inbox(&mut c);
        // A task that asks for a count of units is done once the product holds them: nothing
        // is asked (a new message in the inbox is a new request, so the cycle goes on).
        // Only a task that states a count (as the last prompt read it) pays for the refresh.
        if self.product.counts() && !c.took_inbox {
            self.product.refresh(&self.memory.working, Some(&self.store));
            if self.product.done().is_some() {
                c.report.task_done = true;
                return Ok(c.report);
            }
        }
        self.model.probe(&mut self.constrainer, should_stop);
        self.prepare_prompt(&mut c)?;
        // The task's own entries, which the prompt shows, stay in the store.
        self.store.protect_tags(self.product.key().copied(), self.product.shown());
        let outcome = self.ask_fitting(&mut c, progress, should_stop)?;
        self.carry_out(&mut c, outcome)?;
        if c.report.finished {
            return Ok(c.report);
        }
        self.persist(&mut c)?;
        self.fill_vectors(should_stop);
        self.record(&mut c)?;
        self.cycles_this_run += 1;
        c.report.overhead = started.elapsed().saturating_sub(c.report.latency);
        Ok(c.report)
    }

    /// Recall by meaning (when configured): embeds a bounded number of entries without a
    /// current vector. The vectors are a cache of the store: a failure is a warning.
    fn fill_vectors(&mut self, should_stop: &dyn Fn() -> bool) {
        if let Some(m) = self.action_scratch.meaning.as_mut() {
            if let Err(e) = m.fill(&mut self.store, crate::limits::EMBED_FILL_PER_CYCLE, should_stop) {
                e.context(format_args!("recall by meaning: filling vectors")).print_warning();
            }
        }
    }

    /// Starts a cycle: the report, and the clock (and, on replay, the recorded reply).
    fn begin(&mut self) -> Result<Cycle> {
        let cycle = self.memory.iteration + 1;
        let state = self.memory.state;
        let report = CycleReport {
            cycle,
            state: short(state.as_str()),
            next_state: short(state.as_str()),
            actions: ArrayVec::new(),
            problems: 0,
            invalid_reply: false,
            latency: Duration::ZERO,
            overhead: Duration::ZERO,
            prompt_bytes: 0,
            tokens_est: 0,
            usage: None,
            wm_bytes: 0,
            wm_budget: self.memory.working.text_capacity(),
            wm_entries: 0,
            store_entries: 0,
            paged_out: 0,
            cleanup: Default::default(),
            cold_entries: None,
            overflow_retried: false,
            model_paged: false,
            error: None,
            prompt_over_budget: false,
            pause: Duration::ZERO,
            finished: false,
            task_done: false,
            cached_tokens: None,
            constrain: "off",
            hit_max_tokens: false,
        };
        let start = self.model.start(&mut self.reply, &mut self.pending_error, &mut self.request)?;
        let mut c = Cycle {
            now: start.now,
            cycle,
            state_at_start: state,
            state_asked: state,
            took_inbox: start.recorded_inbox,
            digest: [0; 32],
            problems: ArrayVec::new(),
            report,
        };
        c.report.finished = start.finished;
        Ok(c)
    }

    /// Takes waiting messages into working memory as `user_request`. Waiting messages never
    /// stop the agent: a message that cannot be taken or placed now stays in the inbox (it is
    /// removed only after it was persisted) and is tried again.
    fn take_inbox(&mut self, c: &mut Cycle) {
        if self.model.reads_inbox() {
            c.took_inbox = match self.inbox.take(&mut self.request) {
                Ok(took) => took,
                Err(e) => {
                    e.context(format_args!("the inbox is left for the next cycle")).print_warning();
                    false
                }
            };
        }
        if c.took_inbox {
            if let Err(e) = self.add_user_request(c.now) {
                e.context(format_args!("the user request stays in the inbox for the next cycle")).print_warning();
                c.took_inbox = false;
            }
        }
    }

    /// Persists: the iteration (only a cycle with a reply counts), memory.json, the store's
    /// access counts; then lets go of the inbox. A failed cycle is persisted too (its error, a
    /// request taken from the inbox).
    fn persist(&mut self, c: &mut Cycle) -> Result<()> {
        if c.report.error.is_none() {
            self.memory.iteration = c.cycle;
        }
        self.memory.agent.set(meta::LAST_CYCLE, itoa(c.now).as_str())?;
        // Access counts of store reads this cycle (storage_load) go to the log with the cycle;
        // a checkpoint or a compaction follows when due.
        self.store.upkeep(c.now)?;
        self.store.flush_access()?;
        self.saver.save(&self.memory)?;
        if c.took_inbox && self.model.reads_inbox() {
            self.inbox.done()?;
        }
        c.report.next_state = short(self.memory.state.as_str());
        c.report.wm_bytes = self.memory.working.text_bytes();
        c.report.wm_entries = self.memory.working.len();
        c.report.store_entries = self.store.len();
        c.report.cleanup = self.store.take_moved();
        c.report.cold_entries = self.store.cold_entries();
        Ok(())
    }

    /// Reports the cycle: the report's action list, the audit line, the exchange log.
    fn record(&mut self, c: &mut Cycle) -> Result<()> {
        let mut records: ArrayVec<ActionRecord<'_>, ACTIONS_PER_CYCLE_MAX> = ArrayVec::new();
        for r in self.results.iter() {
            let _ = records.push(ActionRecord {
                kind: r.kind.as_str(),
                key: r.key.as_str(),
                ok: r.ok,
                result: r.message.as_str(),
            });
            let _ = c.report.actions.push(ActionBrief { kind: r.kind.as_str(), ok: r.ok });
        }
        let report = &c.report;
        let audit = CycleRecord {
            time: c.now,
            run_id: self.run_id.as_str(),
            cycle: c.cycle,
            state: c.state_asked.as_str(),
            next_state: self.memory.state.as_str(),
            prompt_sha256: &c.digest,
            prompt_bytes: self.prompt.len(),
            prompt_tokens_est: report.tokens_est,
            reply_bytes: self.reply.content.len(),
            latency_ms: report.latency.as_millis() as u64,
            usage: report.usage,
            cached_tokens: report.cached_tokens,
            valid: report.error.is_none() && !report.invalid_reply,
            finish: self.reply.finish.as_str(),
            constrain: report.constrain,
            seed: self.model.seed(),
            actions: records.as_slice(),
            problems: c.problems.as_slice(),
            error: report.error.as_ref().map(Error::code),
            cleanup: (report.cleanup.entries, report.cleanup.deleted),
        };
        self.audit.append(&audit)?;
        let Some(x) = self.exchange.as_mut() else { return Ok(()) };
        let r = &self.reply;
        let error = c.report.error.as_ref().map(|e| (e.code(), e.message()));
        x.append(&ExchangeRecord {
            time: c.now,
            cycle: c.cycle,
            state: c.state_asked.as_str(),
            inbox: if c.took_inbox { Some(self.request.text()?) } else { None },
            prompt: self.prompt.text()?,
            content: Some(r.content.text()?),
            reasoning: Some(r.reasoning.text()?).filter(|t| !t.is_empty()),
            finish_reason: Some(r.finish.as_str()),
            usage: r.usage,
            unsure: Some(r.unsure.text()?).filter(|t| !t.is_empty()),
            error: error.as_ref().map(|(code, message)| (*code, &**message)),
            overflow_retried: c.report.overflow_retried,
        })
    }
}

/// `s` cut to 32 bytes at a character boundary (a state name for the report).
fn short(s: &str) -> ArrayString<32> {
    let mut a = ArrayString::new();
    let _ = a.push_str(crate::bytes::str_prefix(s, 32));
    a
}

fn itoa(n: u64) -> ArrayString<24> {
    let mut a = ArrayString::new();
    let _ = a.format(format_args!("{}", n));
    a
}

fn hex64(n: u64) -> ArrayString<16> {
    let mut a = ArrayString::new();
    let _ = a.format(format_args!("{:016x}", n));
    a
}

/// A run id: 12 hex digits from the time and the process id, hashed.
fn make_run_id(now: u64) -> ArrayString<16> {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let mut seed = [0u8; 16];
    seed[..8].copy_from_slice(&now.to_le_bytes());
    seed[8..12].copy_from_slice(&nanos.to_le_bytes());
    seed[12..].copy_from_slice(&std::process::id().to_le_bytes());
    let d = Sha256::digest(&seed);
    let mut a = ArrayString::new();
    for b in d.iter().take(6) {
        let _ = a.format(format_args!("{:02x}", b));
    }
    a
}

/// FNV-1a of `bytes` (the seed base from the run id).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    #[test]
    fn short_cuts_a_long_name_at_a_character_boundary() {
        assert_eq!(super::short("thinking").as_str(), "thinking");
        // 31 ASCII bytes then a 3-byte character across byte 32: cut before it, not emptied.
        let name = format!("{}考える", "s".repeat(31));
        assert_eq!(super::short(&name).as_str(), "s".repeat(31));
    }
}
