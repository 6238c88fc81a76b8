//! Step 4 of the cycle: the reply read and carried out. An invalid reply gets feedback (and,
//! after too many in a row, a pause and `thinking`); a usable one has its logs kept, its
//! actions applied (an action identical to the previous cycle's is refused), and the next
//! state chosen (see the engine's module documentation for the state machine).

use super::{hex64, itoa, meta, Agent, Cycle, PINNED_KEYS};
use crate::agent::actions::{self, ActionResult, ActionScratch};
use crate::agent::config::Config;
use crate::agent::constrain::Constrainer;
use crate::agent::logs;
use crate::agent::product::{Product, Verdict, PLAN_KEY};
use crate::agent::settings::LogSettings;
use crate::error::{Code, Error, Result};
use crate::fixed::ArrayString;
use crate::fixed::{ArrayVec, FixedBuf};
use crate::limits::ACTIONS_PER_CYCLE_MAX;
use crate::limits::KEY_MAX_BYTES;
use crate::llm::{self, Outcome};
use crate::memory::file::MemoryFile;
use crate::memory::key::normalize;
use crate::memory::store::Store;
use crate::reply::{ActionKind, Instruction, Interpretation};
use crate::states;
use core::fmt::Write as _;
use std::time::Duration;

impl Agent {
    /// Step 4: carries out the reply, or notes why there is none. A `replay` script that is
    /// used up ends the run with nothing done this cycle.
    pub(super) fn carry_out(&mut self, c: &mut Cycle, outcome: Result<()>) -> Result<()> {
        self.results.clear();
        match outcome {
            Ok(()) => {
                self.apply_reply(c)?;
                // In `paging`, a model that did not page (an invalid reply included) is helped:
                // the agent pages out itself, so an oversized prompt never lasts a second cycle.
                if c.state_asked.as_str() == states::PAGING && !c.report.model_paged {
                    c.report.paged_out += self.build_prompt_fitting(c.now)?;
                    let target = self.paging_target();
                    c.report.paged_out += self.fit(0, target, c.now)?;
                }
            }
            Err(e) if self.model.ended(&e) => {
                self.memory.state = c.state_at_start;
                c.report.finished = true;
            }
            Err(e) => {
                // A stop asked for by the user is not an error to report later in `status`.
                if e.code() != Code::Interrupted {
                    self.note_error(&e)?;
                }
                c.report.error = Some(e);
            }
        }
        Ok(())
    }

    /// Reads the reply and carries it out; fills the usage, invalid-reply and problem fields
    /// of the report.
    fn apply_reply(&mut self, c: &mut Cycle) -> Result<()> {
        let usage = self.reply.usage;
        if let Some((p, _)) = usage {
            // Calibrate the estimate: never more optimistic than the server's own count.
            if p > 0 {
                let observed = self.prompt.len() as f64 / p as f64;
                if observed < self.bytes_per_token {
                    self.bytes_per_token = observed.max(1.0);
                }
            }
        }
        // The reader takes bytes (it replaces invalid UTF-8 itself, and reports it).
        let it = self.reader.read(self.reply.content.as_slice(), self.config.agent.max_actions_per_cycle);
        c.report.usage = usage;
        c.report.cached_tokens = self.reply.cached;
        c.report.hit_max_tokens = self.reply.finish == llm::FinishReason::Length;
        c.report.problems = it.problems().len();
        for p in it.problems() {
            let _ = c.problems.push(p.code.as_str());
        }
        let mut doing = Doing {
            memory: &mut self.memory,
            store: &mut self.store,
            action_scratch: &mut self.action_scratch,
            config: &self.config,
            constrainer: &mut self.constrainer,
            product: &mut self.product,
            prompt: self.prompt.as_slice(),
            scratch: &mut self.scratch,
            rotate: &mut self.rotate,
            feedback: &mut self.feedback,
            results: &mut self.results,
            unsure: self.reply.unsure.text()?,
            now: c.now,
        };
        let outcome = self.reply.outcome;
        if outcome != Outcome::Text || it.is_empty() {
            c.report.pause = doing.invalid(&it, outcome, c.report.hit_max_tokens)?;
            c.report.invalid_reply = true;
            return Ok(());
        }
        c.report.model_paged = doing.usable(&it)?;
        Ok(())
    }

    fn note_error(&mut self, e: &Error) -> Result<()> {
        self.scratch.clear();
        self.scratch.format(format_args!("{}: {}", e.code(), e.message()))?;
        self.memory.agent.set(meta::LAST_ERROR, self.scratch.text()?)
    }
}

/// What carrying out a reply works on: the agent's parts other than the reader, which holds
/// the reply being read.
struct Doing<'a> {
    memory: &'a mut MemoryFile,
    store: &'a mut Store,
    action_scratch: &'a mut ActionScratch,
    config: &'a Config,
    constrainer: &'a mut Constrainer,
    product: &'a mut Product,
    /// The prompt the reply answers.
    prompt: &'a [u8],
    scratch: &'a mut FixedBuf,
    rotate: &'a mut FixedBuf,
    feedback: &'a mut FixedBuf,
    results: &'a mut ArrayVec<ActionResult, ACTIONS_PER_CYCLE_MAX>,
    /// The reply's outline items the model wrote unsurely, one a line.
    unsure: &'a str,
    now: u64,
}

impl Doing<'_> {
    /// A reply with no usable instruction: feedback for the next prompt, the streak counted,
    /// and after `invalid_reply_limit` in a row a return to `thinking`; returns the pause the
    /// loop should take.
    fn invalid(&mut self, it: &Interpretation<'_>, outcome: Outcome, finish_length: bool) -> Result<Duration> {
        let state = self.memory.state;
        self.feedback.clear();
        let mut fb = FeedbackSink(self.feedback);
        let wrote = match outcome {
            Outcome::ReasoningOnly => writeln!(
                fb,
                "Your last reply had reasoning but no answer text{}. Answer with the agent element only.",
                if finish_length { " (it ran out of tokens while thinking)" } else { "" }
            )
            .and_then(|()| crate::reply::write_example(&mut fb, state.as_str())),
            _ => crate::reply::write_feedback(&mut fb, it, state.as_str()),
        };
        if wrote.is_err() {
            self.feedback.clear();
            let _ = crate::reply::write_example(&mut FeedbackSink(self.feedback), state.as_str());
        }
        let mem = &mut *self.memory;
        let streak = mem.agent.get(meta::INVALID_STREAK).and_then(crate::bytes::parse_u32).unwrap_or(0) + 1;
        let mut pause = Duration::ZERO;
        if streak >= self.config.agent.invalid_reply_limit {
            mem.agent.set(meta::INVALID_STREAK, "0")?;
            mem.set_state(states::THINKING)?;
            pause = Duration::from_millis(self.config.agent.invalid_reply_backoff_ms);
        } else {
            mem.agent.set(meta::INVALID_STREAK, itoa(u64::from(streak)).as_str())?;
        }
        mem.agent.set(meta::FEEDBACK, self.feedback.text()?)?;
        let text = match outcome {
            Outcome::ReasoningOnly => "reply had reasoning only, no answer",
            Outcome::Empty => "reply was empty",
            Outcome::Text => "reply held no usable instruction",
        };
        let log = &self.config.agent.command_log;
        self.log_formatted(
            log,
            format_args!("Invalid reply: {} ({} problem(s)); feedback given", text, it.problems().len()),
        )?;
        Ok(pause)
    }

    /// A usable reply: feedback on the parts that were not, logs, actions, the next state.
    /// Returns whether the reply moved something out of working memory.
    fn usable(&mut self, it: &Interpretation<'_>) -> Result<bool> {
        let state = self.memory.state;
        self.memory.agent.set(meta::INVALID_STREAK, "0")?;
        self.feedback.clear();
        if it.has_errors() {
            // Parts were usable, parts not: say what was wrong, without the full example.
            let _ = crate::reply::write_feedback(&mut FeedbackSink(self.feedback), it, state.as_str());
        }
        match self.feedback.text()? {
            "" => {
                self.memory.agent.remove(meta::FEEDBACK);
            }
            text => self.memory.agent.set(meta::FEEDBACK, text)?,
        }
        let config = self.config;
        let mut requested: Option<&str> = None;
        let (mut any_action, mut any_ok, mut paged) = (false, false, false);
        for ins in it.instructions() {
            match ins {
                Instruction::NextState(s) => requested = Some(s),
                // A log that copies the prompt is not kept: it would be shown, and copied, again.
                Instruction::ThinkLog(t) | Instruction::EvaluationLog(t) if logs::copies(t, self.prompt) => {}
                Instruction::ThinkLog(t) => self.log_line(&config.agent.think_log, t, false)?,
                Instruction::EvaluationLog(t) => self.log_line(&config.agent.evaluation_log, t, false)?,
                Instruction::StateDelete(_) => requested = Some(states::THINKING),
                Instruction::Action(a) => {
                    if self.results.is_full() {
                        continue;
                    }
                    any_action = true;
                    let result = self.action(&a)?;
                    any_ok |= result.ok;
                    paged |= result.ok
                        && matches!(
                            a.kind,
                            ActionKind::StorageSave
                                | ActionKind::WorkingMemoryRemove
                                | ActionKind::PageOut
                                | ActionKind::Archive
                        );
                    if result.ok && self.product.owns(result.key.as_str()) {
                        self.product.saved(a.value.unwrap_or(""));
                    }
                    let _ = self.results.push(result);
                }
            }
        }
        // The plan keeps what is still to do: not the subject just asked about (whatever came
        // of it), nor subjects now stored. What the flow knows survives a restart.
        if self.constrainer.constrained() && self.product.active() && state.as_str() != states::PAGING {
            self.product.settle(&mut self.memory.working, self.rotate, self.now, self.unsure)?;
            // An outline's units in one sentence are saved as the model wrote them, each judged
            // and filed as a save of the product is.
            let mut key = ArrayString::<KEY_MAX_BYTES>::new();
            let _ = key.push_str(self.product.key().map_or("", |k| k.as_str()));
            let mut value = ArrayString::<{ crate::agent::product::ITEM_UNIT_MAX_BYTES }>::new();
            while self.product.next_unit(&mut value) {
                let a = crate::reply::Action {
                    kind: ActionKind::StorageSave,
                    tags: key.as_str(),
                    value: Some(value.as_str()),
                    query: None,
                    base_version: None,
                    metadata: None,
                    form: crate::reply::Form::Canonical,
                    element: "action",
                    offset: 0,
                };
                let result = self.action(&a)?;
                any_ok |= result.ok;
                paged |= result.ok;
                if result.ok && self.product.owns(result.key.as_str()) {
                    self.product.saved(value.as_str());
                }
                let _ = self.results.push(result);
            }
            let mut text = ArrayString::<{ crate::limits::AGENT_META_VALUE_MAX_BYTES }>::new();
            self.product.state(&mut text);
            self.memory.agent.set(crate::agent::product::STATE_META_KEY, text.as_str())?;
        }
        let next = if any_ok {
            states::EVALUATING
        } else if any_action {
            states::THINKING
        } else {
            self.requested_state(requested)?
        };
        let next = if config.agent.is_state(next) { next } else { states::THINKING };
        self.memory.set_state(next)?;
        Ok(paged)
    }

    /// Carries out one action (refused when identical to the previous cycle's), and logs it.
    fn action(&mut self, a: &crate::reply::Action<'_>) -> Result<ActionResult> {
        let fp = fingerprint(a);
        let previous = self.memory.agent.get(meta::LAST_ACTION).and_then(|s| u64::from_str_radix(s, 16).ok());
        // A save under the product's tags is a unit, filed under its subject too (see
        // `agent::product`): refused when it repeats the product, kept apart when doubtful.
        let mut filed = ArrayString::<KEY_MAX_BYTES>::new();
        let mut refusal = None;
        let mut doubt = None;
        if let (ActionKind::StorageSave, Ok(k)) = (a.kind, normalize(a.tags)) {
            let value = a.value.map_or("", str::trim);
            match self.product.file(&k, value) {
                Ok(Some(key)) => match self.product.judge(&key, value) {
                    Verdict::New if self.product.repeats_stored(self.store, value) => {
                        refusal = Some((key, "the product says this already; write something new", true));
                    }
                    Verdict::New => {
                        let _ = filed.push_str(key.as_str());
                    }
                    Verdict::Repeat(why) => refusal = Some((key, why, true)),
                    Verdict::Doubt(why) => {
                        let apart = self.product.doubt_key(&key)?;
                        let _ = filed.push_str(apart.as_str());
                        doubt = Some(why);
                    }
                },
                Ok(None) => {}
                Err(why) => refusal = Some((k, why, false)),
            }
        }
        let a = &crate::reply::Action { tags: if filed.is_empty() { a.tags } else { filed.as_str() }, ..*a };
        let mut result = if previous == Some(fp) {
            ActionResult::refused(a.kind, a.tags)
        } else if let Some((k, why, repeat)) = refusal {
            if repeat {
                ActionResult::refused_repeat(a.kind, &k, why)
            } else {
                ActionResult::refused_entry(a.kind, &k, why)
            }
        } else {
            actions::apply(a, &mut self.memory.working, self.store, self.action_scratch, self.now)?
        };
        if let (Some(why), true) = (doubt, result.ok) {
            result.kept_apart(why);
        }
        self.memory.agent.set(meta::LAST_ACTION, hex64(fp).as_str())?;
        let config = self.config;
        // A new entry of the product shows in the product view, and the plan (names the grammar
        // asked for) is the agent's own note, which the prompt does not show; a log line saying
        // so would only be agent talk for a small model to copy (it is in the audit log), and
        // one more line in working memory, ahead of the view, changes the prompt's head: the
        // server re-reads all that follows it.
        // With a grammar the agent asks for each entry and asks about a name at most twice, so a
        // refused save of the product needs no line either: the next question is another one
        // (without a grammar the line is what tells the model its save was refused).
        let asked = self.constrainer.constrained();
        let product_work = match result.kind {
            ActionKind::StorageSave => {
                (self.product.owns(result.key.as_str()) || doubt.is_some()) && (result.ok || asked)
            }
            ActionKind::WorkingMemoryAdd => result.ok && self.product.active() && result.key.as_str() == PLAN_KEY,
            _ => false,
        };
        if product_work {
            self.constrainer.note_action(result.kind, result.key.as_str());
            return Ok(result);
        }
        self.log_formatted(
            &config.agent.command_log,
            format_args!(
                "Action: {}, Tags: {}, Result: {}",
                result.kind.as_str(),
                if result.key.is_empty() { a.tags } else { result.key.as_str() },
                result.message.as_str()
            ),
        )?;
        self.constrainer.note_action(result.kind, result.key.as_str());
        Ok(result)
    }

    /// The state the reply asked for, if it is one (else `thinking`, with the refusal logged).
    fn requested_state<'s>(&mut self, requested: Option<&'s str>) -> Result<&'s str> {
        let config = self.config;
        match requested.map(|s| states::canonical(s.trim())) {
            Some(s) if config.agent.is_state(s) => Ok(s),
            Some(s) => {
                self.scratch.clear();
                self.scratch.format(format_args!("Action: state_transition, Tags: {}, Result: not a state (", s))?;
                for (i, name) in config.agent.states.iter().enumerate() {
                    self.scratch.format(format_args!("{}{}", if i == 0 { "" } else { ", " }, name))?;
                }
                self.scratch.push_str("); defaulting to thinking")?;
                self.log_line(&config.agent.command_log, "", true)?;
                Ok(states::THINKING)
            }
            None => Ok(states::THINKING),
        }
    }

    /// Formats a log line into the scratch buffer and appends it with [`Doing::log_line`].
    fn log_formatted(&mut self, log: &LogSettings, args: core::fmt::Arguments<'_>) -> Result<()> {
        self.scratch.clear();
        self.scratch.format(args)?;
        self.log_line(log, "", true)
    }

    /// Appends a log line (`text`, or with `from_scratch` the scratch buffer's text); when
    /// working memory is full, pages its least recently used entry out to the store and tries
    /// once more. A line that still does not fit is reported on stderr: a full working memory
    /// must not stop the agent, and the line is also in the audit log.
    fn log_line(&mut self, log: &LogSettings, text: &str, from_scratch: bool) -> Result<()> {
        let (wm, now) = (&mut self.memory.working, self.now);
        let (line, rotate): (&str, &mut FixedBuf) =
            if from_scratch { (self.scratch.text()?, &mut *self.rotate) } else { (text, &mut *self.scratch) };
        match logs::append(wm, log, line, now, rotate) {
            Err(e) if e.code() == Code::CapacityExceeded => {
                if let Some(victim) = wm.lru(|k| PINNED_KEYS.contains(&k.as_str())) {
                    actions::page_out(ActionResult::paging(), wm, self.store, self.action_scratch, &victim, now)?;
                    if logs::append(wm, log, line, now, rotate).is_ok() {
                        return Ok(());
                    }
                }
                e.context(format_args!("a {} line was not kept in working memory", log.key_prefix)).print_warning();
                Ok(())
            }
            other => other,
        }
    }
}

/// A feedback writer that refuses, rather than cuts, text past the feedback buffer.
struct FeedbackSink<'a>(&'a mut FixedBuf);

impl core::fmt::Write for FeedbackSink<'_> {
    fn write_char(&mut self, c: char) -> core::fmt::Result {
        crate::bytes::write_char(self, c)
    }

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
    h = fnv1a64_continue(h, field(a.value));
    h = fnv1a64_continue(h, b"\0");
    fnv1a64_continue(h, field(a.query))
}

/// An optional field's text for [`fingerprint`]: an absent field and an empty one make the same
/// action, as carrying it out reads both as empty.
fn field(text: Option<&str>) -> &[u8] {
    text.map_or("", str::trim).as_bytes()
}
