//! The prompt and its budget: building the prompt (stable head, working memory in insertion
//! order, the changing tail), estimating its tokens, paging working memory out to fit, and
//! asking the model with it (see the engine's module documentation for the rules).

use super::{short, Agent, Cycle, PINNED_KEYS, USER_REQUEST_KEY};
use crate::agent::actions::{self, ActionResult};
use crate::agent::config::Config;
use crate::agent::constrain::Constrainer;
use crate::error::{Code, Result};
use crate::memory::key::normalize;
use crate::sha256::Sha256;
use crate::states;
use crate::tag::render::{render_pairs, Style};
use std::time::Instant;

impl Agent {
    /// Step 2, the budget: pages out before asking when the prompt is over the hard limit,
    /// and moves to `paging` (the model chooses what to move) when it is over the paging limit.
    pub(super) fn prepare_prompt(&mut self, c: &mut Cycle) -> Result<()> {
        c.report.paged_out += self.build_prompt_fitting(c.now)?;
        c.report.paged_out += self.fit(self.hard_cap(), self.paging_target(), c.now)?;
        let est = self.estimate(self.prompt.len());
        let p = self.config.agent.paging_limit;
        // Paging is entered only with something to page: the fixed part is checked at open.
        let pageable = self.memory.working.lru(|k| PINNED_KEYS.contains(&k.as_str())).is_some();
        if p.enable
            && est > p.max_tokens
            && pageable
            && self.memory.state.as_str() != states::PAGING
            && self.config.agent.is_state(states::PAGING)
        {
            self.memory.set_state(states::PAGING)?;
            c.report.state = short(states::PAGING);
            c.report.paged_out += self.build_prompt_fitting(c.now)?;
        }
        c.state_asked = self.memory.state;
        Ok(())
    }

    /// Step 3, ask the model; after a context overflow, once more with a smaller prompt. A
    /// prompt over the budget even with working memory paged out is never sent.
    pub(super) fn ask_fitting(
        &mut self,
        c: &mut Cycle,
        progress: &mut dyn FnMut(u64),
        should_stop: &dyn Fn() -> bool,
    ) -> Result<Result<()>> {
        let asked = Instant::now();
        let est = self.estimate(self.prompt.len());
        c.report.prompt_over_budget = est > self.budget();
        let mut outcome = if c.report.prompt_over_budget {
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
            let moved = self.fit(0, est * 3 / 4, c.now)?;
            c.report.paged_out += moved;
            // Only a smaller prompt is worth a second request.
            if moved > 0 {
                c.report.overflow_retried = true;
                outcome = self.ask(progress, should_stop);
            }
        }
        c.report.latency = asked.elapsed();
        c.report.constrain = self.model.constrain_name(&self.constrainer);
        c.report.prompt_bytes = self.prompt.len();
        c.report.tokens_est = self.estimate(self.prompt.len());
        if !self.prompt.is_empty() {
            c.digest = Sha256::digest(self.prompt.as_slice());
        }
        Ok(outcome)
    }

    /// Asks the model with the current prompt (the constraint for the current state is built
    /// first; it is nothing when replies are not constrained).
    pub(super) fn ask(&mut self, progress: &mut dyn FnMut(u64), should_stop: &dyn Fn() -> bool) -> Result<()> {
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
            // Paging moves working memory out: the product asks nothing then.
            Some(&self.product).filter(|_| state.as_str() != states::PAGING),
        )?;
        let text = self.prompt.text()?;
        let (system, user) = if self.config.system_prompt {
            // The head (base and state prompts) is the system message: `build_prompt` wrote it
            // first, for the constraint mode of this request (a probe comes before the build).
            // A prompt that asks for an outline starts with the base alone, which the whole
            // head starts with too: the whole head is tried first.
            let head = head_of(&self.config, &self.constrainer);
            let ask_head = self.config.prompts.ask_head();
            match text.strip_prefix(head).map(|r| (head, r)).or_else(|| text.strip_prefix(ask_head).map(|r| (ask_head, r))) {
                Some((head, rest)) => (Some(head), rest),
                None => bail!(
                    Internal,
                    "the prompt does not start with its head (base and state prompts), which the system message holds (a bug)"
                ),
            }
        } else {
            (None, text)
        };
        let cycle = self.memory.iteration + 1;
        let product = &self.product;
        self.model.ask(
            &mut self.constrainer,
            system,
            user,
            cycle,
            &mut self.reply,
            &mut self.pending_error,
            progress,
            should_stop,
            &|value| product.outline_yield(value),
        )
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
    pub(super) fn hard_cap(&self) -> u64 {
        let h = &self.config.agent.hard_limit;
        if h.enable {
            h.max_tokens.min(self.budget())
        } else {
            self.budget()
        }
    }

    /// The estimate to page down to.
    pub(super) fn paging_target(&self) -> u64 {
        let p = &self.config.agent.paging_limit;
        if p.enable {
            p.max_tokens.min(self.hard_cap())
        } else {
            self.hard_cap() * 3 / 4
        }
    }

    pub(super) fn add_user_request(&mut self, now: u64) -> Result<()> {
        let key = normalize(USER_REQUEST_KEY)?;
        // A request still pending is kept: the new one is added after it.
        self.scratch.clear();
        if let Some(old) = self.memory.working.get(&key) {
            self.scratch.push_str(old)?;
            self.scratch.push_str("\n\n")?;
        }
        self.scratch.extend_from_slice(self.request.as_slice())?;
        let first = self.memory.working.add(&key, self.scratch.text()?, now);
        if let Err(e) = first {
            // Make room by paging out (fit does not touch `scratch`), then try once more.
            self.build_prompt_fitting(now)?;
            self.fit(0, 0, now)?;
            self.memory.working.add(&key, self.scratch.text()?, now).map_err(|_| e)?;
        }
        Ok(())
    }

    /// Pages least-recently-used entries out to the store while the prompt estimate is above
    /// `trigger`, down to `target`. Returns how many were moved.
    pub(super) fn fit(&mut self, trigger: u64, target: u64, now: u64) -> Result<usize> {
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
    pub(super) fn evict_one(&mut self, now: u64) -> Result<bool> {
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
    pub(super) fn build_prompt_fitting(&mut self, now: u64) -> Result<usize> {
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
    pub(super) fn build_prompt(&mut self) -> Result<()> {
        let state = self.memory.state;
        self.product.refresh(&self.memory.working, Some(&self.store));
        // The view takes at most a quarter of what paging brings the prompt down to, so that
        // paging working memory out always brings the prompt under its limits, view and all.
        let view_bytes = (self.paging_target() as f64 * self.bytes_per_token / 4.0) as usize;
        // A state that saves, with a product and a constraint that carries the format, ends
        // with the concrete ask: the next entry of the product. An outline's prompt has the
        // base alone for its head: its reply names no state, and a small model copied the
        // states' goals into its list. A unit's keeps them: it writes sentences, and the head's
        // plain words keep them in the task's language (docs/measurements.md).
        let saves = self.config.prompts.shape(state.as_str()).actions.contains(crate::reply::ActionKind::StorageSave);
        let asks = saves && self.product.active() && self.constrainer.constrained() && state.as_str() != states::PAGING;
        let outline = matches!(self.product.ask(), crate::grammar::ProductAsk::Outline { .. });
        let p = &mut self.prompt;
        p.clear();
        let head =
            if asks && outline { self.config.prompts.ask_head() } else { head_of(&self.config, &self.constrainer) };
        p.push_str(head)?;
        p.push_str("<working_memory>\n")?;
        let wm = &self.memory.working;
        // The plan is the agent's own bookkeeping (shown, a small model copies its list into
        // the unit it is asked for); the task heads the product's view instead, near the ask.
        let active = self.product.active();
        let hidden = |k: &str| active && (k == crate::agent::product::PLAN_KEY || k == crate::agent::product::TASK_KEY);
        let shown = wm.iter().filter(|(k, _, _)| !hidden(k.as_str()));
        render_pairs(p, shown.map(|(k, t, _)| (k.as_str(), t)), Style::Lines)?;
        p.push_str("</working_memory>\n")?;
        // The product after working memory, near the ask: it grows at its end with each new
        // unit, while working memory changes only when a log is written, so a server's prompt
        // cache keeps working memory (docs/measurements.md).
        let view_at = p.len();
        let task = normalize(crate::agent::product::TASK_KEY).ok().and_then(|k| wm.get(&k)).unwrap_or("");
        self.product.render(task, &mut self.store, p, view_bytes)?;
        if asks && outline {
            // Asked for an outline, the model continues the numbered list the reply's value
            // starts with: the view's heads once more above it are what a small model copies
            // instead. The task stays.
            p.truncate(view_at + self.product.heading_bytes());
            p.push_str("</product>\n")?;
        }
        // Asked one question whose answer the grammar frames, the model has no state to follow
        // and no use for the cycle's number: both go (they made a server evaluate the prompt's
        // tail again at every change of state; docs/measurements.md).
        if !asks {
            p.format(format_args!("<current_state>{}</current_state>\n", state.as_str()))?;
            p.format(format_args!("<iteration>{}</iteration>\n", self.memory.iteration + 1))?;
        }
        if !self.feedback.is_empty() {
            p.push_str("<feedback>\n")?;
            p.extend_from_slice(self.feedback.as_slice())?;
            p.push_str("\n</feedback>\n")?;
        }
        if asks {
            return self.product.write_question(self.product.ask(), p);
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
        // Unconstrained, a state that saves is still told what the next unit is.
        if saves && self.product.active() && state.as_str() != states::PAGING {
            self.product.write_ask(p)?;
        }
        Ok(())
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

/// The prompt's stable head: without the format-teaching parts when replies are constrained.
pub(super) fn head_of<'c>(config: &'c Config, constrainer: &Constrainer) -> &'c str {
    if constrainer.constrained() {
        config.prompts.constrained_head()
    } else {
        config.prompts.head()
    }
}
