//! One agent and its cycle (DESIGN.md §3, §5, §6):
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

use super::actions::{self, ActionResult, ActionScratch};
use super::audit::{ActionRecord, AuditLog, CycleRecord};
use super::config::Config;
use super::constrain::Constrainer;
use super::exchange::{ExchangeLog, ExchangeRecord, Recorded};
use super::inbox::Inbox;
use super::logs;
use super::settings::canonical_state;
use crate::error::{Code, Error, Result};
use crate::fixed::{ArrayString, ArrayVec, FixedBuf};
use crate::limits::{
    ACTIONS_PER_CYCLE_MAX, FEEDBACK_MAX_BYTES, INBOX_MAX_BYTES, LLM_MAX_CONTENT_BYTES, LLM_MAX_REASONING_BYTES,
    PROMPT_MAX_BYTES, WORKING_TEXT_MAX_BYTES,
};
use crate::llm::{self, Completion, Outcome};
use crate::memory::file::{self as memfile, MemoryFile, Saver};
use crate::memory::key::normalize;
use crate::memory::store::Store;
use crate::reply::{ActionKind, Instruction, Reader};
use crate::sha256::Sha256;
use crate::tag::render::{render_pairs, Style};
use core::fmt::Write as _;
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
mod meta {
    pub const LAST_ACTION: &str = "last_action";
    pub const INVALID_STREAK: &str = "invalid_replies_in_a_row";
    pub const FEEDBACK: &str = "feedback";
    pub const LAST_ERROR: &str = "last_error";
    pub const LAST_CYCLE: &str = "last_cycle";
}

/// Where replies come from.
pub enum Model {
    /// A live server, or the `replay` provider's script.
    Client(Box<llm::Client>),
    /// A recorded exchange log (`lkjagent replay`), with its clock.
    Recorded(Box<Recorded>),
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
    /// The server said the prompt overflowed its context; the agent paged out and asked again.
    pub overflow_retried: bool,
    /// The reply carried out a paging move (a save, a remove, a page-out, an archive).
    pub model_paged: bool,
    pub error: Option<Error>,
    /// A pause the loop should take before the next cycle (invalid-reply back-off).
    pub pause: Duration,
    /// The model source is exhausted (end of a replay script or recorded log).
    pub finished: bool,
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
            action_scratch: ActionScratch::new(),
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

    /// A clean stop: the store writes its access statistics and a checkpoint of its index,
    /// so the next start reads it instead of the whole log. Nothing durable depends on it.
    pub fn close_store(&mut self) -> Result<()> {
        self.store.flush_access()?;
        self.store.checkpoint()
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

    /// Estimated tokens of `bytes` of prompt.
    pub fn estimate(&self, bytes: usize) -> u64 {
        (bytes as f64 / self.bytes_per_token).ceil() as u64
    }

    /// The prompt budget in tokens: the context window minus the reply's `max_tokens` (a
    /// quarter of the window when `max_tokens` is unset).
    pub fn budget(&self) -> u64 {
        let ctx = u64::from(self.config.llm.context_window.unwrap_or(8192));
        let reply = self.config.llm.max_tokens.map_or(ctx / 4, u64::from);
        ctx.saturating_sub(reply)
    }

    /// The estimate above which the agent pages out by itself.
    fn hard_cap(&self) -> u64 {
        let h = &self.config.agent.hard_limit;
        if h.enable {
            h.max_tokens.min(self.budget())
        } else {
            self.budget()
        }
    }

    /// The estimate to page down to.
    fn paging_target(&self) -> u64 {
        let p = &self.config.agent.paging_limit;
        if p.enable {
            p.max_tokens.min(self.hard_cap())
        } else {
            self.hard_cap() * 3 / 4
        }
    }

    /// Runs one cycle. `progress` sees streamed pieces as they arrive; `should_stop` is asked
    /// while waiting for the model. `Err` only when state could not be persisted (the loop
    /// must stop); every other failure is in the report.
    pub fn cycle(&mut self, progress: &mut dyn FnMut(u64), should_stop: &dyn Fn() -> bool) -> Result<CycleReport> {
        let started = Instant::now();
        let cycle = self.memory.iteration + 1;
        let state_at_start = self.memory.state;
        let mut report = CycleReport {
            cycle,
            state: short(self.memory.state.as_str()),
            next_state: short(self.memory.state.as_str()),
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
            overflow_retried: false,
            model_paged: false,
            error: None,
            pause: Duration::ZERO,
            finished: false,
            cached_tokens: None,
            constrain: "off",
            hit_max_tokens: false,
        };

        // The clock: real, or the recorded one on replay (peeked before anything uses it).
        let mut now = crate::clock::now_unix();
        let mut recorded_inbox = false;
        if let Model::Recorded(rec) = &mut self.model {
            match rec.next_cycle()? {
                None => {
                    report.finished = true;
                    return Ok(report);
                }
                Some(r) => {
                    now = r.time;
                    self.request.clear();
                    if let Some(i) = r.inbox {
                        self.request.push_str(i)?;
                        recorded_inbox = true;
                    }
                    self.reply.clear();
                    self.pending_error = None;
                    let overflow_first = r.overflow_retried;
                    match r.reply {
                        Ok(x) => {
                            self.reply.content.push_str(x.content)?;
                            if let Some(t) = x.reasoning {
                                self.reply.reasoning.push_str(t)?;
                            }
                            self.reply.finish = llm::FinishReason::from_name(x.finish_reason);
                            self.reply.usage = x.usage;
                            self.reply.outcome = outcome_of(x.content, x.reasoning);
                        }
                        Err(e) => self.pending_error = Some(e),
                    }
                    if overflow_first && self.pending_error.is_none() {
                        self.pending_error =
                            Some(err!(ContextOverflow, "recorded: the server said the prompt overflowed its context"));
                    }
                }
            }
        }

        // 1. The inbox.
        // Waiting messages never stop the agent: a message that cannot be taken or placed now
        // stays in the inbox (it is removed only after it was persisted) and is tried again.
        let mut took_inbox = match &self.model {
            Model::Recorded(_) => recorded_inbox,
            Model::Client(_) => match self.inbox.take(&mut self.request) {
                Ok(took) => took,
                Err(e) => {
                    e.context(format_args!("the inbox is left for the next cycle")).print_warning();
                    false
                }
            },
        };
        if took_inbox {
            if let Err(e) = self.add_user_request(now) {
                e.context(format_args!("the user request stays in the inbox for the next cycle")).print_warning();
                took_inbox = false;
            }
        }

        // What the endpoint honours (once per run, before the first prompt is built: the
        // prompt's head depends on it).
        if let Model::Client(c) = &mut self.model {
            self.constrainer.probe(c, should_stop);
        }

        // 2. The budget: page out before asking, if needed.
        report.paged_out += self.build_prompt_fitting(now)?;
        report.paged_out += self.fit(self.hard_cap(), self.paging_target(), now)?;
        let est = self.estimate(self.prompt.len());
        let p = self.config.agent.paging_limit;
        // Paging is entered only with something to page: the fixed part is checked at open.
        let pageable = self.memory.working.lru(|k| PINNED_KEYS.contains(&k.as_str())).is_some();
        if p.enable
            && est > p.max_tokens
            && pageable
            && self.memory.state.as_str() != "paging"
            && self.config.agent.is_state("paging")
        {
            self.memory.set_state("paging")?;
            report.state = short("paging");
            report.paged_out += self.build_prompt_fitting(now)?;
        }

        // 3. Ask the model (one retry after a context overflow, with a smaller prompt).
        let asked = Instant::now();
        let est = self.estimate(self.prompt.len());
        let mut outcome = if est > self.budget() {
            // Even with working memory paged out the prompt does not fit: never send it.
            Err(err!(
                CapacityExceeded,
                "the prompt needs ~{} tokens but the budget is {} (llm.context_window - llm.max_tokens); \
                 shorten the prompts in config.json or raise the context window",
                est,
                self.budget()
            ))
        } else {
            self.ask(progress, should_stop)
        };
        if matches!(&outcome, Err(e) if e.code() == Code::ContextOverflow) {
            // Page out a quarter of the prompt's estimate and ask once more. The estimate itself
            // is calibrated from the prompt tokens servers report, not guessed from an overflow.
            let est = self.estimate(self.prompt.len());
            let moved = self.fit(0, est * 3 / 4, now)?;
            report.paged_out += moved;
            // Only a smaller prompt is worth a second request.
            if moved > 0 {
                report.overflow_retried = true;
                outcome = self.ask(progress, should_stop);
            }
        }
        report.latency = asked.elapsed();
        report.constrain = match &self.model {
            Model::Client(_) => self.constrainer.active().name(),
            Model::Recorded(_) => "off",
        };
        report.prompt_bytes = self.prompt.len();
        report.tokens_est = self.estimate(self.prompt.len());
        let mut digest = [0u8; 32];
        if !self.prompt.is_empty() {
            digest = Sha256::digest(self.prompt.as_slice());
        }

        // 4. Carry out the reply.
        self.results.clear();
        let mut problems: ArrayVec<&'static str, 16> = ArrayVec::new();
        let state_before = self.memory.state;
        match outcome {
            Ok(()) => {
                self.apply_reply(now, &mut problems, &mut report)?;
                // In `paging`, a model that did not page (an invalid reply included) is helped:
                // the agent pages out itself, so an oversized prompt never lasts a second cycle.
                if state_before.as_str() == "paging" && !report.model_paged {
                    report.paged_out += self.build_prompt_fitting(now)?;
                    let target = self.paging_target();
                    report.paged_out += self.fit(0, target, now)?;
                }
            }
            Err(e)
                if e.code() == Code::NotFound
                    && matches!(&self.model, Model::Client(c) if c.provider() == llm::ProviderKind::Replay) =>
            {
                // The replay script is exhausted: the run is over, nothing happened this cycle.
                self.memory.state = state_at_start;
                report.finished = true;
                return Ok(report);
            }
            Err(e) => {
                // A stop asked for by the user is not an error to report later in `status`.
                if e.code() != Code::Interrupted {
                    self.note_error(&e)?;
                }
                report.error = Some(e);
            }
        }

        // 5. Persist, then let go of the inbox, then tell the audit log.
        // A failed cycle is persisted too (its error, a request taken from the inbox), but only
        // a cycle with a reply counts as an iteration.
        if report.error.is_none() {
            self.memory.iteration = cycle;
        }
        self.memory.agent.set(meta::LAST_CYCLE, itoa(now).as_str())?;
        // Access counts of store reads this cycle (storage_load) go to the log with the cycle.
        self.store.flush_access()?;
        self.saver.save(&self.memory)?;
        if took_inbox && matches!(self.model, Model::Client(_)) {
            self.inbox.done()?;
        }
        if self.store.needs_compaction() {
            if let Err(e) = self.store.compact() {
                e.print_warning();
            }
        }
        report.next_state = short(self.memory.state.as_str());
        report.wm_bytes = self.memory.working.text_bytes();
        report.wm_entries = self.memory.working.len();
        report.store_entries = self.store.len();
        let mut records: ArrayVec<ActionRecord<'_>, ACTIONS_PER_CYCLE_MAX> = ArrayVec::new();
        for r in self.results.iter() {
            let _ = records.push(ActionRecord {
                kind: r.kind.as_str(),
                key: r.key.as_str(),
                ok: r.ok,
                result: r.message.as_str(),
            });
            let _ = report.actions.push(ActionBrief { kind: r.kind.as_str(), ok: r.ok });
        }
        let audit = CycleRecord {
            time: now,
            run_id: self.run_id.as_str(),
            cycle,
            state: state_before.as_str(),
            next_state: self.memory.state.as_str(),
            prompt_sha256: &digest,
            prompt_bytes: self.prompt.len(),
            prompt_tokens_est: report.tokens_est,
            reply_bytes: self.reply_len(),
            latency_ms: report.latency.as_millis() as u64,
            usage: report.usage,
            cached_tokens: report.cached_tokens,
            valid: report.error.is_none() && !report.invalid_reply,
            finish: self.reply.finish.as_str(),
            constrain: report.constrain,
            seed: if matches!(self.model, Model::Client(_)) { self.constrainer.last_seed() } else { None },
            actions: records.as_slice(),
            problems: problems.as_slice(),
            error: report.error.as_ref().map(Error::code),
        };
        self.audit.append(&audit)?;
        self.log_exchange(
            now,
            cycle,
            state_before.as_str(),
            took_inbox,
            report.overflow_retried,
            report.error.as_ref(),
        )?;
        self.cycles_this_run += 1;
        report.overhead = started.elapsed().saturating_sub(report.latency);
        Ok(report)
    }

    /// Asks the model with the current prompt.
    fn ask(&mut self, progress: &mut dyn FnMut(u64), should_stop: &dyn Fn() -> bool) -> Result<()> {
        match &mut self.model {
            Model::Client(c) => {
                let state = self.memory.state;
                self.constrainer.prepare(
                    None,
                    self.config.prompts.shape(state.as_str()),
                    &self.config.agent.states,
                    self.config.agent.max_actions_per_cycle,
                    &self.memory.working,
                    Some(&self.store),
                    &PINNED_KEYS,
                    &self.config.agent.log_prefixes(),
                )?;
                let text = self.prompt.as_str().unwrap_or("");
                let (system, user) = if self.config.system_prompt {
                    // The head (base and state prompts) is the system message.
                    let base = head_of(&self.config, &self.constrainer).len().min(text.len());
                    (Some(text.get(..base).unwrap_or("")), text.get(base..).unwrap_or(text))
                } else {
                    (None, text)
                };
                self.reply.clear();
                let cycle = self.memory.iteration + 1;
                let comp = self.constrainer.ask(c, system, user, cycle, progress, should_stop)?;
                self.reply.fill(&comp)
            }
            Model::Recorded(_) => match self.pending_error.take() {
                Some(e) => Err(e),
                None => Ok(()),
            },
        }
    }

    /// The last reply's content length.
    fn reply_len(&self) -> usize {
        self.reply.content.len()
    }

    fn add_user_request(&mut self, now: u64) -> Result<()> {
        let key = normalize(USER_REQUEST_KEY)?;
        // A request still pending is kept: the new one is added after it.
        self.scratch.clear();
        if let Some(old) = self.memory.working.get(&key) {
            self.scratch.push_str(old)?;
            self.scratch.push_str("\n\n")?;
        }
        self.scratch.extend_from_slice(self.request.as_slice())?;
        let first = self.memory.working.add(&key, self.scratch.as_str().unwrap_or(""), now);
        if let Err(e) = first {
            // Make room by paging out (fit does not touch `scratch`), then try once more.
            self.build_prompt_fitting(now)?;
            self.fit(0, 0, now)?;
            self.memory.working.add(&key, self.scratch.as_str().unwrap_or(""), now).map_err(|_| e)?;
        }
        Ok(())
    }

    /// Pages least-recently-used entries out to the store while the prompt estimate is above
    /// `trigger`, down to `target`. Returns how many were moved.
    fn fit(&mut self, trigger: u64, target: u64, now: u64) -> Result<usize> {
        let mut moved = 0;
        if self.estimate(self.prompt.len()) <= trigger {
            return Ok(0);
        }
        while self.estimate(self.prompt.len()) > target {
            if !self.evict_one(now)? {
                break;
            }
            moved += 1;
            self.build_prompt_fitting(now)?;
        }
        Ok(moved)
    }

    /// Pages the least recently used unpinned entry out to the store; false if there is none
    /// (or the store refused it, which leaves it in working memory).
    fn evict_one(&mut self, now: u64) -> Result<bool> {
        let Some(victim) = self.memory.working.lru(|k| PINNED_KEYS.contains(&k.as_str())) else {
            return Ok(false);
        };
        let r = actions::page_out(
            ActionResult::paging(),
            &mut self.memory.working,
            &mut self.store,
            &mut self.action_scratch,
            &victim,
            now,
        )?;
        Ok(r.ok)
    }

    /// Builds the prompt, paging entries out while it does not fit the prompt buffer
    /// (`PROMPT_MAX_BYTES`; possible only with a working memory full of text that needs
    /// escaping), so no content can stop the agent. Returns how many entries were moved.
    fn build_prompt_fitting(&mut self, now: u64) -> Result<usize> {
        let mut moved = 0;
        loop {
            match self.build_prompt() {
                Err(e) if e.code() == Code::CapacityExceeded && self.evict_one(now)? => moved += 1,
                other => return other.map(|()| moved),
            }
        }
    }

    /// Builds the prompt for the current state into the prompt buffer: the stable head (base
    /// and state prompts), working memory in the order entries were added (a cycle usually only
    /// appends to it), then the tail that changes every cycle.
    fn build_prompt(&mut self) -> Result<()> {
        let state = self.memory.state;
        let p = &mut self.prompt;
        p.clear();
        p.push_str(head_of(&self.config, &self.constrainer))?;
        p.push_str("<working_memory>\n")?;
        let wm = &self.memory.working;
        render_pairs(p, wm.iter().map(|(k, t, _)| (k.as_str(), t)), Style::Lines)?;
        p.push_str("</working_memory>\n")?;
        p.format(format_args!(
            "<current_state>{}</current_state>\n<iteration>{}</iteration>\n",
            state.as_str(),
            self.memory.iteration + 1
        ))?;
        if !self.feedback.is_empty() {
            p.push_str("<feedback>\n")?;
            p.extend_from_slice(self.feedback.as_slice())?;
            p.push_str("\n</feedback>\n")?;
        }
        // What to answer with: a grammar enforces the tag format (nothing to ask for); the JSON
        // Schema enforces the JSON dialect, which the model must be told to write.
        let answer = match self.constrainer.active() {
            crate::grammar::Mode::JsonSchema => " and answer with one JSON object",
            _ if self.constrainer.constrained() => "",
            _ => " and answer with one <agent> element",
        };
        p.format(format_args!(
            "You are in the state {}: follow <{}> under <states>{}.\n",
            state.as_str(),
            state.as_str(),
            answer
        ))?;
        Ok(())
    }

    /// Reads the reply and carries it out; fills the usage, invalid-reply and problem fields
    /// of `report`.
    fn apply_reply(
        &mut self,
        now: u64,
        problem_codes: &mut ArrayVec<&'static str, 16>,
        report: &mut CycleReport,
    ) -> Result<()> {
        let state = self.memory.state;
        let max_actions = self.config.agent.max_actions_per_cycle;
        let content = self.reply.content.as_str().unwrap_or("");
        let outcome = self.reply.outcome;
        let usage = self.reply.usage;
        let finish_length = self.reply.finish == llm::FinishReason::Length;
        if let Some((p, _)) = usage {
            // Calibrate the estimate: never more optimistic than the server's own count.
            if p > 0 {
                let observed = self.prompt.len() as f64 / p as f64;
                if observed < self.bytes_per_token {
                    self.bytes_per_token = observed.max(1.0);
                }
            }
        }
        let it = self.reader.read(content.as_bytes(), max_actions);
        let problem_count = it.problems().len();
        report.usage = usage;
        report.cached_tokens = self.reply.cached;
        report.hit_max_tokens = finish_length;
        report.problems = problem_count;
        for p in it.problems() {
            let _ = problem_codes.push(p.code.as_str());
        }
        let has_instruction = outcome == Outcome::Text && !it.is_empty();
        let mut mem = &mut self.memory;
        if !has_instruction {
            // Invalid reply: feedback, and after too many in a row, a pause and `thinking`.
            self.feedback.clear();
            let mut fb = FeedbackSink(&mut self.feedback);
            let wrote = match outcome {
                Outcome::ReasoningOnly => writeln!(
                    fb,
                    "Your last reply had reasoning but no answer text{}. Answer with the agent element only.",
                    if finish_length { " (it ran out of tokens while thinking)" } else { "" }
                )
                .and_then(|()| crate::reply::write_example(&mut fb, state.as_str())),
                _ => crate::reply::write_feedback(&mut fb, &it, state.as_str()),
            };
            if wrote.is_err() {
                self.feedback.clear();
                let _ = crate::reply::write_example(&mut FeedbackSink(&mut self.feedback), state.as_str());
            }
            let streak = mem.agent.get(meta::INVALID_STREAK).and_then(|s| s.parse::<u32>().ok()).unwrap_or(0) + 1;
            if streak >= self.config.agent.invalid_reply_limit {
                mem.agent.set(meta::INVALID_STREAK, "0")?;
                mem.set_state("thinking")?;
                report.pause = Duration::from_millis(self.config.agent.invalid_reply_backoff_ms);
            } else {
                mem.agent.set(meta::INVALID_STREAK, itoa(u64::from(streak)).as_str())?;
            }
            mem.agent.set(meta::FEEDBACK, self.feedback.as_str().unwrap_or(""))?;
            let text = match outcome {
                Outcome::ReasoningOnly => "reply had reasoning only, no answer",
                Outcome::Empty => "reply was empty",
                Outcome::Text => "reply held no usable instruction",
            };
            log_formatted(
                &mut mem.working,
                &mut self.store,
                &mut self.action_scratch,
                &self.config.agent.command_log,
                (&mut self.scratch, &mut self.rotate),
                now,
                format_args!("Invalid reply: {} ({} problem(s)); feedback given", text, it.problems().len()),
            )?;
            report.invalid_reply = true;
            return Ok(());
        }

        // A usable reply.
        mem.agent.set(meta::INVALID_STREAK, "0")?;
        self.feedback.clear();
        if it.has_errors() {
            // Parts were usable, parts not: say what was wrong, without the full example.
            let _ = crate::reply::write_feedback(&mut FeedbackSink(&mut self.feedback), &it, state.as_str());
        }
        let feedback_text = self.feedback.as_str().unwrap_or("");
        if feedback_text.is_empty() {
            mem.agent.remove(meta::FEEDBACK);
        } else {
            mem.agent.set(meta::FEEDBACK, feedback_text)?;
        }
        let mut requested: Option<&str> = None;
        let mut any_action = false;
        let mut any_ok = false;
        let mut paged = false;
        for ins in it.instructions() {
            match ins {
                Instruction::NextState(s) => requested = Some(s),
                Instruction::ThinkLog(t) => log_line(
                    &mut mem.working,
                    &mut self.store,
                    &mut self.action_scratch,
                    &self.config.agent.think_log,
                    t,
                    now,
                    &mut self.scratch,
                )?,
                Instruction::EvaluationLog(t) => log_line(
                    &mut mem.working,
                    &mut self.store,
                    &mut self.action_scratch,
                    &self.config.agent.evaluation_log,
                    t,
                    now,
                    &mut self.scratch,
                )?,
                Instruction::StateDelete(_) => requested = Some("thinking"),
                Instruction::Action(a) => {
                    if self.results.is_full() {
                        continue;
                    }
                    any_action = true;
                    let fp = fingerprint(&a);
                    let previous = mem.agent.get(meta::LAST_ACTION).and_then(|s| u64::from_str_radix(s, 16).ok());
                    let result = if previous == Some(fp) {
                        ActionResult::refused(a.kind, a.tags)
                    } else {
                        actions::apply(&a, &mut mem.working, &mut self.store, &mut self.action_scratch, now)?
                    };
                    mem.agent.set(meta::LAST_ACTION, hex64(fp).as_str())?;
                    any_ok |= result.ok;
                    paged |= result.ok
                        && matches!(
                            a.kind,
                            ActionKind::StorageSave
                                | ActionKind::WorkingMemoryRemove
                                | ActionKind::PageOut
                                | ActionKind::Archive
                        );
                    log_formatted(
                        &mut mem.working,
                        &mut self.store,
                        &mut self.action_scratch,
                        &self.config.agent.command_log,
                        (&mut self.scratch, &mut self.rotate),
                        now,
                        format_args!(
                            "Action: {}, Tags: {}, Result: {}",
                            result.kind.as_str(),
                            if result.key.is_empty() { a.tags } else { result.key.as_str() },
                            result.message.as_str()
                        ),
                    )?;
                    self.constrainer.note_action(result.kind, result.key.as_str());
                    let _ = self.results.push(result);
                    mem = &mut self.memory;
                }
            }
        }
        // The next state.
        let next: &str = if any_ok {
            "evaluating"
        } else if any_action {
            "thinking"
        } else {
            match requested.map(|s| canonical_state(s.trim())) {
                Some(s) if self.config.agent.is_state(s) => s,
                Some(s) => {
                    self.scratch.clear();
                    self.scratch
                        .format(format_args!("Action: state_transition, Tags: {}, Result: not a state (", s))?;
                    for (i, name) in self.config.agent.states.iter().enumerate() {
                        self.scratch.format(format_args!("{}{}", if i == 0 { "" } else { ", " }, name))?;
                    }
                    self.scratch.push_str("); defaulting to thinking")?;
                    let line = self.scratch.as_str().unwrap_or("");
                    log_line(
                        &mut mem.working,
                        &mut self.store,
                        &mut self.action_scratch,
                        &self.config.agent.command_log,
                        line,
                        now,
                        &mut self.rotate,
                    )?;
                    "thinking"
                }
                None => "thinking",
            }
        };
        let next = if self.config.agent.is_state(next) { next } else { "thinking" };
        self.memory.set_state(next)?;
        report.model_paged = paged;
        Ok(())
    }

    fn note_error(&mut self, e: &Error) -> Result<()> {
        self.scratch.clear();
        self.scratch.format(format_args!("{}: {}", e.code(), e.message()))?;
        let text = self.scratch.as_str().unwrap_or("");
        self.memory.agent.set(meta::LAST_ERROR, text)
    }

    fn log_exchange(
        &mut self,
        now: u64,
        cycle: u64,
        state: &str,
        took_inbox: bool,
        overflow_retried: bool,
        error: Option<&Error>,
    ) -> Result<()> {
        let Some(x) = self.exchange.as_mut() else { return Ok(()) };
        let r = &self.reply;
        let content = r.content.as_str();
        let reasoning = r.reasoning.as_str().filter(|t| !t.is_empty());
        let finish = Some(r.finish.as_str());
        let usage = r.usage;
        x.append(&ExchangeRecord {
            time: now,
            cycle,
            state,
            inbox: if took_inbox { self.request.as_str() } else { None },
            prompt: self.prompt.as_str().unwrap_or(""),
            content,
            reasoning,
            finish_reason: finish,
            usage,
            error: error.map(|e| (e.code(), e.message())),
            overflow_retried,
        })
    }

    /// Remembers this cycle's prompt and returns how many of its leading bytes equal the
    /// previous cycle's prompt (the part a server's prompt cache can reuse).
    pub fn prefix_stability(&mut self) -> (usize, usize) {
        let cur = self.prompt.as_slice();
        let prev = self.prev_prompt.as_slice();
        let same = cur.iter().zip(prev.iter()).take_while(|(a, b)| a == b).count();
        self.prev_prompt.clear();
        let _ = self.prev_prompt.extend_from_slice(cur);
        self.last_prefix_equal = same;
        (same, cur.len())
    }
}

/// Appends a log line; when working memory is full, pages its least recently used entry out to
/// the store and tries once more. A line that still does not fit is reported on stderr: a full
/// working memory must not stop the agent, and the line is also in the audit log.
fn log_line(
    wm: &mut crate::memory::working::WorkingSet,
    store: &mut Store,
    action_scratch: &mut ActionScratch,
    log: &super::settings::LogSettings,
    text: &str,
    now: u64,
    rotate: &mut FixedBuf,
) -> Result<()> {
    match logs::append(wm, log, text, now, rotate) {
        Err(e) if e.code() == Code::CapacityExceeded => {
            if let Some(victim) = wm.lru(|k| PINNED_KEYS.contains(&k.as_str())) {
                actions::page_out(ActionResult::paging(), wm, store, action_scratch, &victim, now)?;
                if logs::append(wm, log, text, now, rotate).is_ok() {
                    return Ok(());
                }
            }
            e.context(format_args!("a {} line was not kept in working memory", log.key_prefix)).print_warning();
            Ok(())
        }
        other => other,
    }
}

/// Formats a log line into the first buffer of `bufs` (the second is the rotation scratch)
/// and appends it with [`log_line`].
fn log_formatted(
    wm: &mut crate::memory::working::WorkingSet,
    store: &mut Store,
    action_scratch: &mut ActionScratch,
    log: &super::settings::LogSettings,
    bufs: (&mut FixedBuf, &mut FixedBuf),
    now: u64,
    args: core::fmt::Arguments<'_>,
) -> Result<()> {
    let (text, rotate) = bufs;
    text.clear();
    text.format(args)?;
    log_line(wm, store, action_scratch, log, text.as_str().unwrap_or(""), now, rotate)
}

/// The last reply, copied out of the model source into buffers reserved once, so the cycle
/// can read it while it changes memory.
struct LastReply {
    content: FixedBuf,
    reasoning: FixedBuf,
    outcome: Outcome,
    finish: llm::FinishReason,
    usage: Option<(u64, u64)>,
    /// Prompt tokens the server reused from its cache (`None`: it did not say).
    cached: Option<u64>,
}

impl LastReply {
    fn new() -> LastReply {
        LastReply {
            content: FixedBuf::with_capacity("reply (limits::LLM_MAX_CONTENT_BYTES)", LLM_MAX_CONTENT_BYTES),
            reasoning: FixedBuf::with_capacity("reasoning (limits::LLM_MAX_REASONING_BYTES)", LLM_MAX_REASONING_BYTES),
            outcome: Outcome::Empty,
            finish: llm::FinishReason::Missing,
            usage: None,
            cached: None,
        }
    }

    fn clear(&mut self) {
        self.content.clear();
        self.reasoning.clear();
        self.outcome = Outcome::Empty;
        self.finish = llm::FinishReason::Missing;
        self.usage = None;
        self.cached = None;
    }

    fn fill(&mut self, c: &Completion<'_>) -> Result<()> {
        self.content.push_str(c.content)?;
        if let Some(r) = c.reasoning {
            self.reasoning.push_str(r)?;
        }
        self.outcome = c.outcome;
        self.finish = c.finish_reason;
        self.usage = c.usage.map(|u| (u.prompt_tokens, u.completion_tokens));
        self.cached = c.usage.and_then(|u| u.cached_tokens);
        Ok(())
    }
}

/// What a recorded reply was, by the same rule the client applies.
fn outcome_of(content: &str, reasoning: Option<&str>) -> Outcome {
    if !content.trim().is_empty() {
        Outcome::Text
    } else if reasoning.is_some_and(|r| !r.trim().is_empty()) {
        Outcome::ReasoningOnly
    } else {
        Outcome::Empty
    }
}

/// A feedback writer that refuses, rather than cuts, text past the feedback buffer.
struct FeedbackSink<'a>(&'a mut FixedBuf);

impl core::fmt::Write for FeedbackSink<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0.push_str(s).map_err(|_| core::fmt::Error)
    }
}

/// The identity of an action, to refuse an identical one in the next cycle.
fn fingerprint(a: &crate::reply::Action<'_>) -> u64 {
    use crate::memory::hash::{fnv1a64, fnv1a64_continue};
    let mut h = fnv1a64(a.kind.as_str().as_bytes());
    let key = normalize(a.tags);
    h = fnv1a64_continue(h, b"\0");
    h = match &key {
        Ok(k) => fnv1a64_continue(h, k.as_str().as_bytes()),
        Err(_) => fnv1a64_continue(h, a.tags.as_bytes()),
    };
    h = fnv1a64_continue(h, b"\0");
    h = fnv1a64_continue(h, a.value.unwrap_or("").trim().as_bytes());
    h = fnv1a64_continue(h, b"\0");
    fnv1a64_continue(h, a.query.unwrap_or("").trim().as_bytes())
}

fn short(s: &str) -> ArrayString<32> {
    let mut a = ArrayString::new();
    let _ = a.push_str(s.get(..s.len().min(32)).unwrap_or(""));
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

/// The prompt's stable head: without the format-teaching parts when replies are constrained.
fn head_of<'c>(config: &'c Config, constrainer: &Constrainer) -> &'c str {
    if constrainer.constrained() {
        config.prompts.constrained_head()
    } else {
        config.prompts.head()
    }
}

/// FNV-1a of `bytes` (the seed base from the run id).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}
