//! Constrained decoding for the agent: which constraint the endpoint honours, the reply
//! language of this cycle, and asking the model with it (docs/design.md §5).
//!
//! - **What the endpoint honours.** `llm.constrain` is `auto` (the default), `grammar`,
//!   `json_schema` or `off`. With `auto` the agent sends a tiny probe before its first cycle: a
//!   grammar that allows one fixed word, then (if the reply is anything else, or the request is
//!   refused) a JSON Schema that allows one fixed object. The first the server obeys is used for
//!   the run; none means `off`. Servers that silently ignore a field they do not know (vLLM's
//!   removed `guided_*`, Ollama, llama-cpp-python's unknown fields) are caught this way, since a
//!   200 does not prove the constraint was applied. Ollama has no grammar field, so it starts at
//!   the schema; the replay provider is never constrained.
//! - **This cycle's language** ([`Constrainer::prepare`]): the current state's
//!   [`Shape`](crate::grammar::Shape) from the configuration, the [`Bounds`] fitted to
//!   `llm.max_tokens`, the working-memory keys a remove may name, the keys a load may name (those
//!   the last `storage_search` found, live or cold, then the newest stored ones), the tags of
//!   stored entries a search may name, less the keys of the last few removes, loads and
//!   searches and loads of what is already in working memory. Written as
//!   GBNF or JSON Schema into one buffer reserved at start ([`GRAMMAR_MAX_BYTES`]).
//! - **Asking** ([`Constrainer::ask`]): the request carries the constraint and a sampling seed
//!   that changes per cycle and per attempt (servers default to a fixed seed, so a near-identical
//!   prompt would get the same reply again). When a request with a constraint fails (refused
//!   with 400/500, or the connection dropped without an answer), it is sent once more without
//!   the constraint (this cycle's buffer holds one encoding only); if that works, the run goes
//!   on one step down (grammar → JSON Schema → none), with a warning, so a server that refuses
//!   the schema as well steps down again the next cycle.
//!
//! Every reply is still read and checked by the reply reader: the constraint makes a valid
//! reply the likely one, the reader decides what is taken.

use super::actions::SEARCH_RESULTS_KEY;
use super::product::{Product, LIST_PRESENCE_PENALTY};
use crate::error::{Code, Result};
use crate::fixed::{ArrayString, ArrayVec, FixedBuf};
use crate::grammar::{self, Bounds, Constraint, KeyList, Language, Mode, ProductAsk, ProductSave};
use crate::limits::{
    GRAMMAR_KEYS_PER_LIST, GRAMMAR_MAX_BYTES, GRAMMAR_THINK_MAX_CHARS, KEY_MAX_BYTES, PRODUCT_TAKEN_MAX,
    SEARCH_RESULTS_SHOWN, TAG_MAX_BYTES,
};
use crate::llm::{self, Client, Completion, ProviderKind};
use crate::memory::query::{Query, Results};
use crate::memory::store::Store;
use crate::memory::working::WorkingSet as Working;
use crate::reply::ActionKind;

/// How many of the last keyed actions (removes, loads, searches) are not offered again.
pub const RECENT_ACTIONS: usize = 4;

/// The word the probe's grammar and schema allow.
const PROBE_WORD: &str = "lkjok";
/// The probe's grammar.
const PROBE_GRAMMAR: &str = "root ::= \"lkjok\"\n";
/// The probe's schema: one object with one member that can only be the probe word.
const PROBE_SCHEMA: &str = r#"{"type":"object","properties":{"w":{"type":"string","enum":["lkjok"]}},"required":["w"],"additionalProperties":false}"#;
/// The probe's prompt.
const PROBE_PROMPT: &str = "Reply with the single word lkjok.";
/// Tokens the probe may generate.
const PROBE_MAX_TOKENS: u32 = 16;

/// Working-memory keys, for a grammar's remove list.
struct WorkingKeys<'a>(&'a Working);

impl KeyList for WorkingKeys<'_> {
    fn each(&self, f: &mut dyn FnMut(&str) -> bool) {
        for (k, _, _) in self.0.iter() {
            if !f(k.as_str()) {
                break;
            }
        }
    }
}

/// A grammar's load list: the keys of the last `storage_search`'s results first (live or
/// cold: a cold hit is loaded in place, and is not among the newest stored keys), then the
/// newest stored keys (a query's results) that are not among them.
struct StoredKeys<'a> {
    store: Option<&'a Store>,
    found: &'a [ArrayString<KEY_MAX_BYTES>],
    results: &'a Results,
}

impl KeyList for StoredKeys<'_> {
    fn each(&self, f: &mut dyn FnMut(&str) -> bool) {
        for k in self.found {
            if !f(k.as_str()) {
                return;
            }
        }
        let Some(store) = self.store else { return };
        for id in self.results.ids() {
            if let Some(k) = store.key(id) {
                if self.found.iter().any(|x| x.as_str() == k.as_str()) {
                    continue;
                }
                if !f(k.as_str()) {
                    break;
                }
            }
        }
    }
}

/// The key a line of the `search_results` working-memory entry names (the form
/// `agent::actions` writes it in): `key` (a search by tags), `key: preview` or
/// `key (cold): preview` (a search by words). A key holds no white space; a line that is not
/// a key as stored (the closing note of a long list, say) names none.
fn found_key(line: &str) -> Option<&str> {
    let line = line.trim();
    let key = match line.split_once(' ') {
        Some((k, rest)) if rest.starts_with("(cold):") => k,
        Some((k, _)) => k.strip_suffix(':')?,
        None => line,
    };
    let normal = crate::memory::key::normalize(key).ok()?;
    (normal.as_str() == key).then_some(key)
}

/// Distinct tags of the newest stored keys, for a grammar's search list.
struct SearchTags<'a>(&'a [ArrayString<TAG_MAX_BYTES>]);

impl KeyList for SearchTags<'_> {
    fn each(&self, f: &mut dyn FnMut(&str) -> bool) {
        for t in self.0 {
            if !f(t.as_str()) {
                break;
            }
        }
    }
}

/// See the module documentation.
pub struct Constrainer {
    /// What is sent now: `Grammar`, `JsonSchema` or `Off` (`Auto` until the probe ran).
    active: Mode,
    /// This cycle's grammar or schema.
    text: FixedBuf,
    /// The newest stored entries (for the load list), reserved once.
    stored: Results,
    /// The keys the working memory's search results name (first in the load list).
    found: ArrayVec<ArrayString<KEY_MAX_BYTES>, SEARCH_RESULTS_SHOWN>,
    /// Their distinct tags (for the search list).
    tags: ArrayVec<ArrayString<TAG_MAX_BYTES>, { GRAMMAR_KEYS_PER_LIST as usize }>,
    /// The last keyed actions (removes, loads, searches), newest last, not offered again.
    recent: ArrayVec<(ActionKind, ArrayString<KEY_MAX_BYTES>), RECENT_ACTIONS>,
    /// Mixed into every seed: differs from run to run.
    seed_base: u64,
    /// See [`UNAVAILABLE_STEP_DOWN`].
    unavailable_in_a_row: u32,
    /// Whether the schema goes in the older `json_object` form: the endpoint refused the
    /// `json_schema` one and took this ([`Constraint::JsonObject`]).
    schema_as_object: bool,
    /// Whether that form exists for the endpoint: an OpenAI-compatible chat route.
    object_form: bool,
    /// The presence penalty of this cycle's constrained request: the product's
    /// [`LIST_PRESENCE_PENALTY`] for an outline and a running unit.
    presence_penalty: Option<f64>,
    /// This cycle asks for an outline of the product.
    outline: bool,
    /// This cycle asks for the product's first outline, which goes on from no stored units:
    /// it is one of [`FIRST_OUTLINE_SAMPLES`] samples (`crate::agent::model::Model::ask`).
    first_outline: bool,
    /// Which outlines ask for log-probabilities (`llm.logprobs`).
    logprobs: llm::Logprobs,
    /// The canonical reply's text before the value of this cycle's product ask, when its
    /// grammar asks for the value alone ([`grammar::Language::bare_ask`]); empty otherwise.
    envelope: FixedBuf,
    /// The last reply was asked for with that grammar or schema: it is the value alone.
    bare_reply: bool,
    /// Whether a product ask's schema may be its value alone, a string at the schema's root:
    /// until the endpoint refuses one (OpenAI's strict mode takes only an object there).
    bare_schema: bool,
    thinks: bool,
    max_tokens: u64,
}

impl Constrainer {
    /// A constrainer for `settings`, with its buffers reserved. `seed_base` makes the seeds of
    /// one run differ from another's (the run id's hash, say).
    pub fn new(settings: &llm::Settings, seed_base: u64) -> Constrainer {
        let active = match (settings.protocol(), settings.constrain) {
            (ProviderKind::Replay, _) => Mode::Off,
            // Ollama has no grammar field: the schema is its best.
            (ProviderKind::Ollama, Mode::Grammar) => Mode::JsonSchema,
            (_, m) => m,
        };
        Constrainer {
            active,
            text: FixedBuf::with_capacity("reply grammar (limits::GRAMMAR_MAX_BYTES)", GRAMMAR_MAX_BYTES),
            stored: Results::with_capacity(GRAMMAR_KEYS_PER_LIST as usize),
            tags: ArrayVec::new(),
            found: ArrayVec::new(),
            recent: ArrayVec::new(),
            seed_base,
            unavailable_in_a_row: 0,
            presence_penalty: None,
            outline: false,
            first_outline: false,
            schema_as_object: false,
            object_form: settings.protocol() == ProviderKind::OpenAi && settings.api() == llm::Api::Chat,
            thinks: settings.thinks,
            logprobs: settings.logprobs,
            envelope: FixedBuf::with_capacity("reply envelope (ENVELOPE_OPEN_MAX_BYTES)", ENVELOPE_OPEN_MAX_BYTES),
            bare_reply: false,
            bare_schema: true,
            max_tokens: u64::from(settings.max_tokens.unwrap_or(4096)),
        }
    }

    /// What is sent now (`auto` before the probe ran).
    pub fn active(&self) -> Mode {
        self.active
    }

    /// Whether replies are constrained now (or will be, once probed): the prompt's head then
    /// leaves out the parts that teach the format.
    pub fn constrained(&self) -> bool {
        self.active != Mode::Off
    }

    /// The grammar or schema of this cycle (empty when off): all of the buffer, which
    /// [`Constrainer::prepare`] has checked to be text.
    pub fn text(&self) -> &str {
        crate::bytes::utf8_prefix(self.text.as_slice())
    }

    /// Remembers the action the agent just carried out: a remove, load or search is not offered
    /// again with the same key for the next [`RECENT_ACTIONS`] keyed actions (the same again
    /// would be refused as a repeat, or go round in circles).
    pub fn note_action(&mut self, kind: ActionKind, key: &str) {
        if matches!(kind, ActionKind::WorkingMemoryRemove | ActionKind::StorageLoad | ActionKind::StorageSearch) {
            if let Ok(k) = ArrayString::try_from_str(key) {
                if self.recent.is_full() {
                    self.recent.remove(0);
                }
                let _ = self.recent.push((kind, k));
            }
        }
    }

    /// The bounds for `shape`, fitted to `llm.max_tokens`.
    pub fn bounds(&self, shape: &grammar::Shape, states: &[String], max_actions: usize) -> Bounds {
        let longest = states.iter().map(String::len).max().unwrap_or(0);
        let b = Bounds {
            think_chars: if self.thinks { GRAMMAR_THINK_MAX_CHARS } else { 0 },
            max_actions: max_actions as u32,
            ..Bounds::default()
        };
        b.fit(shape, longest, self.max_tokens)
    }

    /// Writes this cycle's grammar (or schema) for a state of `shape` into the buffer; `mode`
    /// overrides the active one (for `lkjagent grammar`). Nothing is written when off.
    #[allow(clippy::too_many_arguments)]
    pub fn prepare(
        &mut self,
        mode: Option<Mode>,
        shape: grammar::Shape,
        states: &[String],
        max_actions: usize,
        working: &Working,
        store: Option<&Store>,
        pinned: &[&str],
        managed: &[&str],
        product: Option<&Product>,
    ) -> Result<()> {
        self.text.clear();
        self.envelope.clear();
        self.presence_penalty = None;
        self.outline = false;
        self.first_outline = false;
        let mode = mode.unwrap_or(self.active);
        if mode == Mode::Off {
            return Ok(());
        }
        let q = Query { max_results: GRAMMAR_KEYS_PER_LIST as usize, ..Query::default() };
        self.stored.clear();
        self.tags.clear();
        if let Some(store) = store {
            store.query(&q, &mut self.stored);
            for key in self.stored.ids().filter_map(|id| store.key(id)) {
                for tag in key.tags() {
                    if self.tags.is_full() {
                        break;
                    }
                    if !self.tags.iter().any(|t| t.as_str() == tag) {
                        if let Ok(t) = ArrayString::try_from_str(tag) {
                            let _ = self.tags.push(t);
                        }
                    }
                }
            }
        }
        // What the last storage_search found, as the prompt shows it: its keys may be loaded
        // (a cold one too, which no query of the live store lists).
        self.found.clear();
        let results = working.iter().find(|(k, _, _)| k.as_str() == SEARCH_RESULTS_KEY).map(|(_, v, _)| v);
        for key in results.unwrap_or("").lines().filter_map(found_key) {
            if self.found.is_full() {
                break;
            }
            if !self.found.iter().any(|x| x.as_str() == key) {
                if let Ok(k) = ArrayString::try_from_str(key) {
                    let _ = self.found.push(k);
                }
            }
        }
        let bounds = self.bounds(&shape, states, max_actions);
        let stored = StoredKeys { store, found: self.found.as_slice(), results: &self.stored };
        let mut recent: ArrayVec<(ActionKind, &str), RECENT_ACTIONS> = ArrayVec::new();
        for (k, key) in self.recent.iter() {
            let _ = recent.push((*k, key.as_str()));
        }
        // The product's taken names, as the grammar wants them (sorted and distinct already).
        let mut taken: ArrayVec<&str, PRODUCT_TAKEN_MAX> = ArrayVec::new();
        let product = product.and_then(|p| Some((p, p.key()?)));
        if let Some((p, _)) = product {
            for name in p.taken() {
                let _ = taken.push(name);
            }
        }
        // A list repeats itself unless what it wrote already weighs against it: one from nothing
        // its own names, one that goes on from the first names the stored ones it may name.
        if let Some((p, _)) = product {
            if let ProductAsk::Outline { first, .. } = p.ask() {
                self.presence_penalty = Some(LIST_PRESENCE_PENALTY);
                self.outline = true;
                self.first_outline = first == 1;
            } else if p.running() {
                // A running unit goes on from the last sentence in view, which it may not say
                // again.
                self.presence_penalty = Some(LIST_PRESENCE_PENALTY);
            }
        }
        let lang = Language {
            states,
            shape,
            bounds,
            working_keys: &WorkingKeys(working),
            stored_keys: &stored,
            search_tags: &SearchTags(self.tags.as_slice()),
            pinned,
            managed,
            recent: recent.as_slice(),
            in_working: &WorkingKeys(working),
            // The same asks in a grammar and a schema: the schema holds the fixed start of the
            // value as its pattern's literal start.
            product: product.map(|(p, key)| ProductSave { tags: key.as_str(), taken: taken.as_slice(), ask: p.ask() }),
        };
        let json = mode == Mode::JsonSchema;
        match json {
            true => grammar::schema::write(&lang, self.bare_schema, &mut self.text)?,
            false => grammar::gbnf::write(&lang, &mut self.text)?,
        }
        if let Some(p) = lang.bare_ask().filter(|_| !json || self.bare_schema) {
            p.write_envelope_open(json, &mut self.envelope)?;
        }
        // Written as text: anything else (a bug) is an `INTERNAL` error here, never a grammar that
        // reads as empty, which would send the request with no constraint.
        self.text.text().map(|_| ())
    }

    /// The seed for `cycle`'s `attempt`-th request (splitmix64 of the run's base, the cycle and
    /// the attempt), kept below 2^53 so every JSON reader reads it exactly.
    fn seed(&self, cycle: u64, attempt: u64) -> u64 {
        llm::client::mix_seed(
            self.seed_base ^ cycle.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ attempt.wrapping_mul(0xD1B5_4A32_D192_ED03),
        )
    }

    /// Learns what the endpoint honours, if `auto` has not yet: see the module documentation.
    /// A server that cannot be reached leaves it unlearned (asked again next cycle).
    pub fn probe(&mut self, client: &mut Client, should_stop: &dyn Fn() -> bool) {
        if self.active != Mode::Auto {
            return;
        }
        let mut mode = if client.provider() == ProviderKind::Ollama { Mode::JsonSchema } else { Mode::Grammar };
        loop {
            let constraint = match mode {
                Mode::Grammar => Constraint::Grammar(PROBE_GRAMMAR),
                Mode::JsonSchema => Constraint::JsonSchema(PROBE_SCHEMA),
                _ => break,
            };
            let prompt = llm::Prompt {
                constraint: Some(constraint),
                seed: Some(self.seed(0, 0)),
                max_tokens: Some(PROBE_MAX_TOKENS),
                ..llm::Prompt::new(None, PROBE_PROMPT)
            };
            match client.complete(&prompt, &mut |_| {}, should_stop) {
                Ok(c) if obeyed(mode, &c) => {
                    self.active = mode;
                    eprintln!(
                        "lkjagent: constrained decoding: the endpoint honours a {}; replies are constrained by one",
                        noun(mode)
                    );
                    return;
                }
                Ok(_) => eprintln!(
                    "lkjagent: constrained decoding: the endpoint ignored a {} (the probe's reply did not follow it)",
                    noun(mode)
                ),
                Err(e) if matches!(e.code(), Code::LlmTimeout | Code::Interrupted) => {
                    // Slow, loading or stopping: learn it next cycle.
                    return;
                }
                Err(e) if matches!(e.code(), Code::LlmUnavailable | Code::HttpProtocol) => {
                    // The connection failed: the server is down, or it drops requests that
                    // carry this field. A plain request tells which.
                    let plain =
                        llm::Prompt { max_tokens: Some(PROBE_MAX_TOKENS), ..llm::Prompt::new(None, PROBE_PROMPT) };
                    if client.complete(&plain, &mut |_| {}, should_stop).is_err() {
                        return;
                    }
                    eprintln!(
                        "lkjagent: constrained decoding: the endpoint failed a request with a {} ({}: {}) but answers without one",
                        noun(mode),
                        e.code(),
                        e.message()
                    );
                }
                Err(e) => eprintln!(
                    "lkjagent: constrained decoding: the endpoint refused a {}: {}: {}",
                    noun(mode),
                    e.code(),
                    e.message()
                ),
            }
            mode = mode.step_down();
        }
        self.active = Mode::Off;
        eprintln!("lkjagent: constrained decoding: off (the endpoint honours neither a grammar nor a JSON Schema); replies are checked as they come");
    }

    /// Asks the model with this cycle's constraint and seed; on a failure with a constraint,
    /// once more one step down (see the module documentation). `cycle` numbers the seed.
    pub fn ask<'c>(
        &mut self,
        client: &'c mut Client,
        system: Option<&str>,
        user: &str,
        cycle: u64,
        progress: &mut dyn FnMut(u64),
        should_stop: &dyn Fn() -> bool,
    ) -> Result<Completion<'c>> {
        let seed = self.seed(cycle, 0);
        self.bare_reply = false;
        let text = crate::bytes::utf8_prefix(self.text.as_slice());
        let constraint = match self.active {
            Mode::Grammar if !text.is_empty() => Some(Constraint::Grammar(text)),
            Mode::JsonSchema if !text.is_empty() && self.schema_as_object => Some(Constraint::JsonObject(text)),
            Mode::JsonSchema if !text.is_empty() => Some(Constraint::JsonSchema(text)),
            _ => None,
        };
        let presence_penalty = self.presence_penalty.filter(|_| constraint.is_some());
        let prompt = llm::Prompt {
            constraint,
            seed: Some(seed),
            presence_penalty,
            logprobs: self.asks_logprobs(),
            ..llm::Prompt::new(system, user)
        };
        if constraint.is_none() {
            return client.complete(&prompt, progress, should_stop);
        }
        // Two borrows of the client cannot both live: try, and on a failure that may be the
        // constraint's fault, drop the first result before asking again.
        let failure = client.complete(&prompt, progress, should_stop).err();
        let Some(e) = failure else {
            self.unavailable_in_a_row = 0;
            self.bare_reply = !self.envelope.is_empty();
            return Ok(client.last_completion());
        };
        if !may_be_the_constraint(&e) {
            return Err(e);
        }
        let from = self.active;
        let seed = self.seed(cycle, 1);
        // A schema refused in the `json_schema` form is tried once in the `json_object` one
        // before none: a server that takes a schema so keeps its replies constrained.
        if from == Mode::JsonSchema && self.object_form && !self.schema_as_object {
            let object = llm::Prompt { constraint: Some(Constraint::JsonObject(text)), seed: Some(seed), ..prompt };
            if client.complete(&object, progress, should_stop).is_ok() {
                self.schema_as_object = true;
                self.unavailable_in_a_row = 0;
                self.bare_reply = !self.envelope.is_empty();
                eprintln!(
                    "lkjagent: constrained decoding: the endpoint refused the JSON Schema as response_format json_schema ({}: {}) and took it as json_object with a schema; the run goes on so",
                    e.code(),
                    e.message()
                );
                return Ok(client.last_completion());
            }
        }
        let retry = llm::Prompt { constraint: None, seed: Some(seed), ..llm::Prompt::new(system, user) };
        // A schema of the value alone refused (or its reply not read by the server: llama-server
        // answers 500 when its own chat parser does not take the output): the next cycles send
        // the whole reply's schema, which the endpoint may take, and nothing steps down yet.
        // This cycle fails rather than go through without a constraint, which a small model
        // answers with thousands of tokens of prose (docs/measurements.md, "The value alone in
        // a JSON Schema").
        if from == Mode::JsonSchema && self.bare_schema && !self.envelope.is_empty() {
            self.bare_schema = false;
            eprintln!(
                "lkjagent: constrained decoding: the request with a JSON Schema of the value alone failed ({}: {}); \
                 the next send the whole reply's schema",
                e.code(),
                e.message()
            );
            return Err(e);
        }
        match client.complete(&retry, progress, should_stop) {
            Ok(_) if e.code() == Code::LlmUnavailable && self.unavailable_in_a_row + 1 < UNAVAILABLE_STEP_DOWN => {
                self.unavailable_in_a_row += 1;
                eprintln!(
                    "lkjagent: constrained decoding: the request with a {} failed ({}: {}) and went through without one; \
                     the {} stays for the next cycle",
                    noun(from),
                    e.code(),
                    e.message(),
                    noun(from)
                );
                Ok(client.last_completion())
            }
            Ok(_) => {
                self.unavailable_in_a_row = 0;
                self.active = from.step_down();
                eprintln!(
                    "lkjagent: constrained decoding: the request with a {} failed ({}: {}); it went through without one, so the run goes on with {}",
                    noun(from),
                    e.code(),
                    e.message(),
                    if self.active == Mode::Off { "no constraint" } else { "a JSON Schema" }
                );
                Ok(client.last_completion())
            }
            Err(e2) => Err(e2),
        }
    }

    /// The canonical reply's text before the value, when the last reply was asked for as the
    /// value alone (the agent wraps it: [`grammar::envelope_close`] follows the value).
    pub fn envelope(&self) -> Option<&str> {
        if self.bare_reply {
            self.envelope.text().ok()
        } else {
            None
        }
    }

    /// Whether this cycle asks a grammar for an outline of the product (its reply's
    /// log-probabilities are asked for).
    pub fn asks_outline(&self) -> bool {
        self.outline && self.active == Mode::Grammar
    }

    /// Whether this cycle's outline is one of [`FIRST_OUTLINE_SAMPLES`] samples, the one whose
    /// items the model wrote the most surely (`crate::agent::model::Model::ask`): only the
    /// first outline, which goes on from nothing, as every later one goes on from the units it
    /// gave (docs/measurements.md, "One sample after the first outline").
    pub fn samples_more(&self) -> bool {
        self.asks_outline() && self.first_outline && self.logprobs != llm::Logprobs::Off
    }

    /// Whether this cycle's request asks for its tokens' log-probabilities: an outline, as
    /// `llm.logprobs` says.
    pub fn asks_logprobs(&self) -> bool {
        self.asks_outline()
            && match self.logprobs {
                llm::Logprobs::Outlines => true,
                llm::Logprobs::FirstOutline => self.first_outline,
                llm::Logprobs::Off => false,
            }
    }

    /// Asks the same request once more with another seed (the `sample`-th more sample of an
    /// outline, from 1); no step down: a failure leaves the samples before.
    #[allow(clippy::too_many_arguments)]
    pub fn ask_again<'c>(
        &mut self,
        client: &'c mut Client,
        system: Option<&str>,
        user: &str,
        cycle: u64,
        sample: u64,
        progress: &mut dyn FnMut(u64),
        should_stop: &dyn Fn() -> bool,
    ) -> Result<Completion<'c>> {
        self.bare_reply = !self.envelope.is_empty();
        let text = crate::bytes::utf8_prefix(self.text.as_slice());
        let prompt = llm::Prompt {
            constraint: Some(Constraint::Grammar(text)),
            seed: Some(self.seed(cycle, OUTLINE_SECOND_ATTEMPT + sample - 1)),
            presence_penalty: self.presence_penalty,
            logprobs: true,
            ..llm::Prompt::new(system, user)
        };
        client.complete(&prompt, progress, should_stop)
    }
}

/// Longest text before a product ask's value in the canonical reply: `<agent>`, the action's
/// type and tags (a key), `<value>`.
pub const ENVELOPE_OPEN_MAX_BYTES: usize = KEY_MAX_BYTES + 64;

/// The attempt number of an outline's second sample in its seed (0 and 1 are the first
/// request and its retry one step down); each further sample the next.
const OUTLINE_SECOND_ATTEMPT: u64 = 2;

/// How many samples a product's first outline is the surest of. The first outline decides a
/// run (every later one goes on from its units), and a small model draws a list of real
/// subjects only now and then; the list it wrote the most surely is the one a person keeps
/// (docs/measurements.md, "The surer of two outlines", "The surest of more", session 23).
pub const FIRST_OUTLINE_SAMPLES: u64 = 3;

/// Whether a failed request may have failed because of its constraint: a refusal (400/500
/// come back as `LLM_ERROR`), an unreadable answer (`HTTP_PROTOCOL`), or a connection dropped
/// without an answer (`LLM_UNAVAILABLE`, which is also a server that is busy or restarting);
/// not a timeout, an overflow or a stop.
fn may_be_the_constraint(e: &crate::error::Error) -> bool {
    matches!(e.code(), Code::LlmError | Code::HttpProtocol | Code::LlmUnavailable)
}

/// Constrained requests that failed as unavailable while the same request without the
/// constraint went through, in a row, before the run steps down for good: one such failure can
/// be a passing fault (a restart, a 503) rather than a server that drops constrained requests.
const UNAVAILABLE_STEP_DOWN: u32 = 2;

fn noun(mode: Mode) -> &'static str {
    match mode {
        Mode::JsonSchema => "JSON Schema",
        _ => "grammar",
    }
}

/// Whether the probe's reply followed the probe's constraint.
fn obeyed(mode: Mode, c: &Completion<'_>) -> bool {
    let text = c.content.trim();
    match mode {
        Mode::Grammar => text == PROBE_WORD,
        Mode::JsonSchema => {
            let mut doc = crate::json::Document::with_capacity(16, 64);
            doc.parse(text.as_bytes()).is_ok() && doc.root().get("w").and_then(|w| w.as_str()) == Some(PROBE_WORD)
        }
        _ => false,
    }
}
