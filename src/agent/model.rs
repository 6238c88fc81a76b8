//! Where replies come from, chosen once when the agent opens: a live server (or the `replay`
//! provider's script) through the LLM client, or a recorded exchange log (`lkjagent replay`).
//! The cycle asks this one type for the clock, the inbox, the reply and how it was constrained;
//! it never branches on the kind itself.

use super::constrain::Constrainer;
use super::exchange::Recorded;
use crate::error::{Code, Error, Result};
use crate::fixed::FixedBuf;
use crate::limits::{LLM_MAX_CONTENT_BYTES, LLM_MAX_REASONING_BYTES, REPLY_UNSURE_MAX_BYTES};
use crate::llm::{self, Completion, Outcome, TokenLogprobs};

/// The log-probability under which a token of an outline's item makes the item unsure: the
/// model gave it less than one chance in 8,000, so a grammar made it write what it did not
/// mean (a word run on into letters, a word it has no use for: "Saturn has urns", "keepin's").
/// Of 30 items of SmolLM2-135M's outlines with such a token on 8 tasks, 27 were junk and 3
/// usable but for a word run together (docs/measurements.md, "Outline cost and precision").
pub const UNSURE_TOKEN_LOGPROB: f64 = -9.0;

/// The log-probability under which a digit of an outline's item makes the item unsure (less
/// than one chance in three, e^-1): the model guessed its number among others ("Saturn has 19
/// known moons", "bees fly at up to 55 miles per hour"), and a fact is only as true as its
/// numbers (docs/measurements.md, "Numbers the model guessed").
pub const UNSURE_NUMBER_LOGPROB: f64 = -1.0;

/// Where replies come from.
pub enum Model {
    /// A live server, or the `replay` provider's script.
    Client(Box<llm::Client>),
    /// A recorded exchange log (`lkjagent replay`), with its clock.
    Recorded(Box<Recorded>),
}

/// What the source says as a cycle starts.
pub(crate) struct Start {
    /// The cycle's clock (the recorded one on replay).
    pub now: u64,
    /// The source has nothing more: the run is over.
    pub finished: bool,
    /// A recording's cycle took a message from the inbox; its text is in the request buffer.
    pub recorded_inbox: bool,
}

impl Model {
    /// Starts a cycle: the clock, and for a recording its next cycle, whose reply (or error)
    /// is staged in `reply` and `pending` for [`Model::ask`] and whose inbox text goes to
    /// `request`.
    pub(crate) fn start(
        &mut self,
        reply: &mut LastReply,
        pending: &mut Option<Error>,
        request: &mut FixedBuf,
    ) -> Result<Start> {
        let mut start = Start { now: crate::clock::now_unix(), finished: false, recorded_inbox: false };
        let Model::Recorded(rec) = self else { return Ok(start) };
        let Some(r) = rec.next_cycle()? else {
            start.finished = true;
            return Ok(start);
        };
        start.now = r.time;
        request.clear();
        if let Some(i) = r.inbox {
            request.push_str(i)?;
            start.recorded_inbox = true;
        }
        reply.clear();
        *pending = None;
        match r.reply {
            Ok(x) => {
                reply.content.push_str(x.content)?;
                if let Some(t) = x.reasoning {
                    reply.reasoning.push_str(t)?;
                }
                reply.finish = llm::FinishReason::from_name(x.finish_reason);
                reply.usage = x.usage;
                if let Some(u) = x.unsure {
                    reply.unsure.push_str(u)?;
                }
                reply.outcome = outcome_of(x.content, x.reasoning);
            }
            Err(e) => *pending = Some(e),
        }
        if r.overflow_retried && pending.is_none() {
            *pending = Some(err!(ContextOverflow, "recorded: the server said the prompt overflowed its context"));
        }
        Ok(start)
    }

    /// Whether this source reads the inbox and lets go of it (a recording replays the
    /// messages it recorded instead).
    pub(crate) fn reads_inbox(&self) -> bool {
        matches!(self, Model::Client(_))
    }

    /// Finds out once what the endpoint honours (a recording needs nothing).
    pub(crate) fn probe(&mut self, constrainer: &mut Constrainer, should_stop: &dyn Fn() -> bool) {
        if let Model::Client(c) = self {
            constrainer.probe(c, should_stop);
        }
    }

    /// How replies are constrained now: `grammar`, `json_schema` or `off`.
    pub(crate) fn constrain_name(&self, constrainer: &Constrainer) -> &'static str {
        match self {
            Model::Client(_) => constrainer.active().name(),
            Model::Recorded(_) => "off",
        }
    }

    /// The seed the last request carried, if any (a retry's own, when the server failed the
    /// first: [`llm::Client::last_seed`]).
    pub(crate) fn seed(&self) -> Option<u64> {
        match self {
            Model::Client(c) => c.last_seed(),
            Model::Recorded(_) => None,
        }
    }

    /// Whether `e` means the source is used up (the `replay` provider's script is over).
    pub(crate) fn ended(&self, e: &Error) -> bool {
        e.code() == Code::NotFound && matches!(self, Model::Client(c) if c.provider() == llm::ProviderKind::Replay)
    }

    /// Asks for a reply to `user` (after `system`, when the head goes as a system message)
    /// into `reply`; a recording hands over the reply or error [`Model::start`] staged.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn ask(
        &mut self,
        constrainer: &mut Constrainer,
        system: Option<&str>,
        user: &str,
        cycle: u64,
        reply: &mut LastReply,
        pending: &mut Option<Error>,
        progress: &mut dyn FnMut(u64),
        should_stop: &dyn Fn() -> bool,
        yields: &dyn Fn(&str) -> usize,
    ) -> Result<()> {
        match self {
            Model::Client(c) => {
                reply.clear();
                let comp = constrainer.ask(c, system, user, cycle, progress, should_stop)?;
                let bare = reply.fill(&comp, constrainer.envelope())?;
                // A product's first outline is one of FIRST_OUTLINE_SAMPLES samples. It sets the
                // kind of every later one, and a list of run-together words is the model
                // writing what it does not know, so the surer sample (the mean log-probability
                // of its value's tokens) is taken; but a list that says one thing again is
                // sure because the model copies itself, so a sample that yields more than
                // OUTLINE_YIELD_RATIO times as many distinct items (`yields`) wins whatever
                // its certainty (docs/measurements.md, "Samples that say one thing again").
                let Some(mut best) = constrainer.samples_more().then(|| outline_certainty(&comp, bare)).flatten()
                else {
                    return Ok(());
                };
                let mut best_yield = outline_value(comp.content, bare).map_or(0, yields);
                for sample in 1..super::constrain::FIRST_OUTLINE_SAMPLES {
                    match constrainer.ask_again(c, system, user, cycle, sample, progress, should_stop) {
                        Ok(next) => {
                            let bare = is_bare(&next, constrainer.envelope());
                            let Some(sure) = outline_certainty(&next, bare) else { continue };
                            let got = outline_value(next.content, bare).map_or(0, yields);
                            if takes_over((got, sure), (best_yield, best)) {
                                (best, best_yield) = (sure, got);
                                reply.clear();
                                reply.fill(&next, constrainer.envelope())?;
                            }
                        }
                        Err(e) if e.code() == Code::Interrupted => return Err(e),
                        Err(_) => return Ok(()),
                    }
                }
                Ok(())
            }
            Model::Recorded(_) => match pending.take() {
                Some(e) => Err(e),
                None => Ok(()),
            },
        }
    }
}

/// The last reply, copied out of the model source into buffers reserved once, so the cycle
/// can read it while it changes memory.
/// How many times as many distinct items a sample of the first outline must yield to be taken
/// over a surer one (`Model::ask`).
pub const OUTLINE_YIELD_RATIO: usize = 2;

/// Whether a sample that yields `got.0` distinct items, written with certainty `got.1`, is
/// taken over the one in hand, `have`: it yields more than [`OUTLINE_YIELD_RATIO`] times as
/// many, or it is surer and the one in hand does not yield that many times as many as it.
fn takes_over(got: (usize, f64), have: (usize, f64)) -> bool {
    let ((n, sure), (m, best)) = (got, have);
    n > OUTLINE_YIELD_RATIO.saturating_mul(m) || (sure > best && m <= OUTLINE_YIELD_RATIO.saturating_mul(n))
}

/// Whether a completion is the value alone of the ask whose envelope is `envelope`: asked so,
/// and not in the canonical form all the same (a server that ignored the grammar).
fn is_bare(c: &Completion<'_>, envelope: Option<&str>) -> bool {
    let content = c.content.trim_start();
    match envelope {
        // The value alone of a schema is a JSON string; a whole reply is an object.
        Some(open) if open.starts_with('{') => content.starts_with('"'),
        Some(_) => !content.starts_with("<agent"),
        None => false,
    }
}

/// Where an outline's value stands in a reply: all of a bare one ([`is_bare`]), else the
/// bytes between `<value>` and `</value>`.
fn value_span(content: &str, bare: bool) -> Option<(usize, usize)> {
    if bare {
        return Some((0, content.len()));
    }
    let from = content.find("<value>")? + "<value>".len();
    let to = content.find("</value>")?;
    (from <= to).then_some((from, to))
}

/// An outline's value in a reply ([`value_span`]).
fn outline_value(content: &str, bare: bool) -> Option<&str> {
    let (from, to) = value_span(content, bare)?;
    content.get(from..to)
}

/// The mean log-probability of the tokens of an outline's value ([`value_span`]), as the
/// server sent them; `None` without them.
fn outline_certainty(c: &Completion<'_>, bare: bool) -> Option<f64> {
    let (from, to) = value_span(c.content, bare)?;
    c.logprobs.mean_within(from, to)
}

pub(crate) struct LastReply {
    pub content: FixedBuf,
    pub reasoning: FixedBuf,
    pub outcome: Outcome,
    pub finish: llm::FinishReason,
    pub usage: Option<(u64, u64)>,
    /// Prompt tokens the server reused from its cache (`None`: it did not say).
    pub cached: Option<u64>,
    /// An outline's items the model wrote unsurely, one a line ([`unsure_items`]): recorded
    /// in the exchange log, so a replay reads the same.
    pub unsure: FixedBuf,
}

impl LastReply {
    pub fn new() -> LastReply {
        LastReply {
            content: FixedBuf::with_capacity("reply (limits::LLM_MAX_CONTENT_BYTES)", LLM_MAX_CONTENT_BYTES),
            reasoning: FixedBuf::with_capacity("reasoning (limits::LLM_MAX_REASONING_BYTES)", LLM_MAX_REASONING_BYTES),
            outcome: Outcome::Empty,
            finish: llm::FinishReason::Missing,
            usage: None,
            cached: None,
            unsure: FixedBuf::with_capacity("unsure items (limits::REPLY_UNSURE_MAX_BYTES)", REPLY_UNSURE_MAX_BYTES),
        }
    }

    pub fn clear(&mut self) {
        self.content.clear();
        self.reasoning.clear();
        self.outcome = Outcome::Empty;
        self.finish = llm::FinishReason::Missing;
        self.usage = None;
        self.cached = None;
        self.unsure.clear();
    }

    /// Copies `c` in; a reply that is the value alone of an ask whose canonical text before
    /// the value is `envelope` ([`is_bare`]) is copied in that envelope, so that it reads (and
    /// is logged and replayed) as the canonical reply the grammar stands for. Whether it was.
    pub fn fill(&mut self, c: &Completion<'_>, envelope: Option<&str>) -> Result<bool> {
        let bare = is_bare(c, envelope);
        if let Some(open) = envelope.filter(|_| bare) {
            self.content.push_str(open)?;
            self.content.push_str(c.content)?;
            self.content.push_str(crate::grammar::envelope_close(open))?;
        } else {
            self.content.push_str(c.content)?;
        }
        if let Some(r) = c.reasoning {
            self.reasoning.push_str(r)?;
        }
        self.outcome = c.outcome;
        self.finish = c.finish_reason;
        self.usage = c.usage.map(|u| (u.prompt_tokens, u.completion_tokens));
        self.cached = c.usage.and_then(|u| u.cached_tokens);
        unsure_items(c.content, c.logprobs, bare, &mut self.unsure)?;
        Ok(bare)
    }
}

/// Writes into `out`, one a line, the items of an outline in `content` (the lines `N. item` of
/// its value) that the model wrote unsurely: a token after an item's first under
/// [`UNSURE_TOKEN_LOGPROB`], or a digit under [`UNSURE_NUMBER_LOGPROB`]. Nothing without
/// log-probabilities.
fn unsure_items(content: &str, logprobs: &TokenLogprobs, bare: bool, out: &mut FixedBuf) -> Result<()> {
    if !logprobs.sent || logprobs.cut {
        return Ok(());
    }
    let Some((from, to)) = value_span(content, bare) else { return Ok(()) };
    let Some(value) = content.get(from..to) else { return Ok(()) };
    let mut at = from;
    for line in value.split('\n') {
        let start = at;
        at += line.len() + 1;
        let Some((number, item)) = line.split_once(". ") else { continue };
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let item_at = start + number.len() + 2;
        let end = start + line.len();
        let unsure_word = logprobs.min_after_first(item_at, end).is_some_and(|m| m < UNSURE_TOKEN_LOGPROB);
        let guessed_number = logprobs.min_of_digits(content, item_at, end).is_some_and(|m| m < UNSURE_NUMBER_LOGPROB);
        if unsure_word || guessed_number {
            out.push_str(item.trim())?;
            out.push_str("\n")?;
        }
    }
    Ok(())
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
