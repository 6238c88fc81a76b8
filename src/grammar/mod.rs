//! The reply language in the other direction: from what the agent would accept now to a
//! constraint the server applies while it samples, so that a valid, executable reply is the
//! only thing a model can write (docs/design.md §5; docs/constrained-decoding.md).
//!
//! The [`reply`](crate::reply) reader takes text to instructions; this module takes the
//! agent's live state to the language of replies it accepts, in two encodings of one language:
//!
//! - [`gbnf`]: a GBNF grammar of the canonical tag reply (llama.cpp `grammar`, llama-cpp-python
//!   `grammar`, vLLM `structured_outputs.grammar`);
//! - [`schema`]: the JSON Schema of the equivalent JSON reply
//!   (`{"next_state": ..., "think_log": ..., "action": {...}}`), for servers that only constrain
//!   JSON (Ollama `format`, LM Studio and OpenAI `response_format`). The reader reads that
//!   dialect too and yields the same instructions.
//!
//! A [`Language`] is built each cycle from the configuration (the current state's [`Shape`]:
//! whether it names a next state, which log element it writes, which actions it may take),
//! the [`Bounds`] (lengths and counts, sized so a reply always ends well inside
//! `llm.max_tokens`) and the live state (the working-memory keys a remove may name, the stored
//! keys a load may name, the stored tags a search may name, less the recent cycles' removes,
//! loads and searches, which are not offered again).
//! Both encodings are written into a caller's fixed buffer; generating allocates nothing.
//!
//! Every grammar written here is well-formed by construction (literals are escaped, every rule
//! it names is written, no bounded repetition nests past llama.cpp's product limit of 2,000):
//! a malformed grammar kills a llama-cpp-python server. The tests parse each grammar with an
//! independent GBNF reader and sample thousands of replies from it through the real reader.

pub mod gbnf;
pub mod schema;

use crate::error::Result;
use crate::fixed::FixedBuf;
use crate::reply::ActionKind;

/// The action kinds a grammar may offer: the canonical five, in the order a grammar lists
/// them (small models favour the first alternative, and saving to the store is what builds
/// the agent's knowledge). Paging, record and issue forms stay readable in free replies but
/// are never offered.
pub const OFFERED_ACTIONS: [ActionKind; 5] = [
    ActionKind::StorageSave,
    ActionKind::StorageSearch,
    ActionKind::StorageLoad,
    ActionKind::WorkingMemoryAdd,
    ActionKind::WorkingMemoryRemove,
];

/// Which log element a state's reply carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogField {
    /// `<think_log>` / `"think_log"`.
    Think,
    /// `<evaluation_log>` / `"evaluation_log"`.
    Evaluation,
}

impl LogField {
    /// The element (and JSON member) name.
    pub fn name(self) -> &'static str {
        match self {
            LogField::Think => "think_log",
            LogField::Evaluation => "evaluation_log",
        }
    }
}

// One bit each in an `ActionSet`.
const _: () = assert!(OFFERED_ACTIONS.len() <= 8);

/// A set of [`OFFERED_ACTIONS`], as bits in that order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ActionSet(u8);

impl ActionSet {
    /// No action.
    pub const NONE: ActionSet = ActionSet(0);
    /// Every offered action: one bit per entry of [`OFFERED_ACTIONS`], so a new one is offered
    /// by naming it there.
    pub const ALL: ActionSet = ActionSet(((1u16 << OFFERED_ACTIONS.len()) - 1) as u8);

    fn bit(kind: ActionKind) -> u8 {
        OFFERED_ACTIONS.iter().position(|&k| k == kind).map_or(0, |i| 1 << i)
    }

    /// The set with `kind` added (kinds that are never offered are ignored).
    pub fn with(self, kind: ActionKind) -> ActionSet {
        ActionSet(self.0 | ActionSet::bit(kind))
    }

    /// The set without `kind`.
    pub fn without(self, kind: ActionKind) -> ActionSet {
        ActionSet(self.0 & !ActionSet::bit(kind))
    }

    /// Whether `kind` is in the set.
    pub fn contains(self, kind: ActionKind) -> bool {
        let b = ActionSet::bit(kind);
        b != 0 && self.0 & b != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The kinds in the set, in [`OFFERED_ACTIONS`] order.
    pub fn iter(self) -> impl Iterator<Item = ActionKind> {
        OFFERED_ACTIONS.into_iter().filter(move |&k| self.contains(k))
    }
}

/// What a state's reply holds (from the state's prompt in the configuration).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// The reply names the next state.
    pub next_state: bool,
    /// Which of the configured states it may name: bit `i` for the `i`-th state; 0 for all.
    pub next_mask: u16,
    /// The log element the reply writes, if any.
    pub log: Option<LogField>,
    /// The actions the state may take (empty: none).
    pub actions: ActionSet,
}

impl Shape {
    /// A free shape: a next state, a think log, any action.
    pub const FREE: Shape =
        Shape { next_state: true, next_mask: 0, log: Some(LogField::Think), actions: ActionSet::ALL };
}

/// Lengths and counts of the language, in characters (a character is at most 4 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Longest leading `<think>` block's text; 0: no think block allowed.
    pub think_chars: u32,
    /// Longest log text.
    pub log_chars: u32,
    /// Longest value (working-memory add, storage save).
    pub value_chars: u32,
    /// Longest tag.
    pub tag_chars: u32,
    /// Most tags in one key.
    pub tags_per_key: u32,
    /// Most actions in one reply.
    pub max_actions: u32,
    /// Most keys offered by name for a remove or for a load.
    pub keys_per_list: u32,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            think_chars: 0,
            log_chars: crate::limits::GRAMMAR_LOG_MAX_CHARS,
            value_chars: crate::limits::GRAMMAR_VALUE_MAX_CHARS,
            tag_chars: crate::limits::GRAMMAR_TAG_MAX_CHARS,
            tags_per_key: crate::limits::GRAMMAR_TAGS_PER_KEY,
            max_actions: 1,
            keys_per_list: crate::limits::GRAMMAR_KEYS_PER_LIST,
        }
    }
}

impl Bounds {
    /// Clamps every bound into what the generators and llama.cpp accept: at least 1 where a
    /// zero would make an empty language, a product of nested bounded repetitions under
    /// 2,000, tags within `TAG_MAX_BYTES` and keys within `KEY_MAX_TAGS`.
    pub fn clamped(self) -> Bounds {
        let max_rep = crate::limits::GRAMMAR_MAX_REPETITION - 1;
        let tags_per_key = self.tags_per_key.clamp(1, crate::limits::KEY_MAX_TAGS as u32);
        // `tag ("," tag){0,n-1}`: the tag's bound is nested inside the key's.
        let tag_cap = (max_rep / tags_per_key.saturating_sub(1).max(1)).min(crate::limits::TAG_MAX_BYTES as u32);
        Bounds {
            think_chars: self.think_chars.min(max_rep),
            log_chars: self.log_chars.clamp(1, max_rep),
            value_chars: self.value_chars.clamp(1, max_rep),
            tag_chars: self.tag_chars.clamp(1, tag_cap),
            tags_per_key,
            max_actions: self.max_actions.clamp(1, crate::limits::ACTIONS_PER_CYCLE_MAX as u32),
            keys_per_list: self.keys_per_list.min(crate::limits::GRAMMAR_KEYS_PER_LIST),
        }
    }

    /// The longest reply these bounds allow for `shape`, in bytes (4 per character of text,
    /// plus the markup). A reply never needs more tokens than bytes, so `llm.max_tokens` at
    /// least this large means no constrained reply is ever cut short.
    pub fn max_reply_bytes(&self, shape: &Shape, longest_state: usize) -> u64 {
        let b = self.clamped();
        let key = u64::from(b.tags_per_key) * (u64::from(b.tag_chars) + 1);
        let mut n: u64 = 20; // <agent>\n ... </agent>
        if b.think_chars > 0 {
            n += 20 + 4 * u64::from(b.think_chars);
        }
        if shape.log.is_some() {
            n += 40 + 4 * u64::from(b.log_chars);
        }
        if shape.next_state {
            n += 30 + longest_state as u64;
        }
        if !shape.actions.is_empty() {
            let longest_key = key.max(crate::limits::KEY_MAX_BYTES as u64);
            let one = 80 + longest_key + 4 * u64::from(b.value_chars);
            n += u64::from(b.max_actions) * one;
        }
        n
    }

    /// Shrinks the text bounds (think, value, log; in that order of need) until
    /// [`Bounds::max_reply_bytes`] fits `max_tokens`, never below 16 characters each.
    pub fn fit(mut self, shape: &Shape, longest_state: usize, max_tokens: u64) -> Bounds {
        self = self.clamped();
        for _ in 0..64 {
            if self.max_reply_bytes(shape, longest_state) <= max_tokens {
                break;
            }
            let shrink = |n: u32| if n > 16 { (n * 3 / 4).max(16) } else { n };
            self.think_chars = if self.think_chars > 0 { shrink(self.think_chars) } else { 0 };
            self.value_chars = shrink(self.value_chars);
            self.log_chars = shrink(self.log_chars);
        }
        self
    }
}

/// A list of keys the grammar offers by name (working-memory keys, stored keys).
pub trait KeyList {
    /// Calls `f` with each key, until `f` returns false.
    fn each(&self, f: &mut dyn FnMut(&str) -> bool);
}

/// No keys.
pub struct NoKeys;

impl KeyList for NoKeys {
    fn each(&self, _: &mut dyn FnMut(&str) -> bool) {}
}

impl KeyList for &[&str] {
    fn each(&self, f: &mut dyn FnMut(&str) -> bool) {
        for k in self.iter() {
            if !f(k) {
                break;
            }
        }
    }
}

/// How a save adds to the task's product (see `agent::product`): its tags are the product's,
/// and its value is the entry, a name and one line of text (`Braise: to cook slowly in
/// liquid.`), whose name is never one of an entry already stored under those tags. The agent
/// files it under the product's tags and the name's tag. The agent carries the structure (the
/// tags, the form) and the novelty (the names taken); the model writes only the entry.
#[derive(Clone, Copy)]
pub struct ProductSave<'a> {
    /// The product's tags, comma-separated, each `[a-z0-9_]` (`cooking,glossary`).
    pub tags: &'a str,
    /// What the agent asks for this cycle.
    pub ask: ProductAsk<'a>,
    /// Names a new entry may not take, as tags (`mise_en_place`), sorted bytewise and without
    /// duplicates: each a `[a-z][a-z0-9_]*` tag. One that ends with `_` (`the_`) is a word no
    /// new name starts with (`The oven`); one that ends with `*` (`lion*`) is letters no new
    /// name starts with (`Lion`, `Lions`, `Lionel`). Names that are not, or not shorter than
    /// [`GRAMMAR_NAME_MAX_CHARS`](crate::limits::GRAMMAR_NAME_MAX_CHARS), cannot be written
    /// by the grammar anyway and are skipped.
    pub taken: &'a [&'a str],
}

impl<'a> ProductSave<'a> {
    /// The action an ask is answered with, and its tags: a unit is saved under the product's
    /// tags, an outline added to working memory as the plan; `None` for an entry (not an ask of
    /// its own).
    pub fn action(&self) -> Option<(ActionKind, &'a str)> {
        match self.ask {
            ProductAsk::Unit { .. } => Some((ActionKind::StorageSave, self.tags)),
            ProductAsk::Outline { key, .. } => Some((ActionKind::WorkingMemoryAdd, key)),
            ProductAsk::Entry => None,
        }
    }

    /// Writes the canonical reply's text before an ask's value: in tags (`<agent>`, the
    /// action's type and tags, `<value>`), or for a reply in JSON (`json`) the object up to its
    /// `"value":`, where the value goes as the JSON string the model wrote. [`envelope_close`]
    /// follows the value. Nothing for an entry.
    pub fn write_envelope_open(&self, json: bool, out: &mut FixedBuf) -> Result<()> {
        let Some((kind, tags)) = self.action() else { return Ok(()) };
        // Tags are `[a-z0-9_,]`: nothing in them needs escaping in either form.
        match json {
            false => {
                out.format(format_args!("<agent>\n<action><type>{}</type><tags>{}</tags><value>", kind.as_str(), tags))
            }
            true => out.format(format_args!(r#"{{"action":{{"type":"{}","tags":"{}","value":"#, kind.as_str(), tags)),
        }
    }
}

/// The canonical reply's text after a product ask's value, in tags.
pub const ENVELOPE_CLOSE: &str = "</value></action>\n</agent>";

/// The canonical reply's text after a product ask's value, in JSON.
pub const JSON_ENVELOPE_CLOSE: &str = "}}";

/// What closes the canonical reply whose text before the value is `open`
/// ([`ProductSave::write_envelope_open`]).
pub fn envelope_close(open: &str) -> &'static str {
    if open.starts_with('{') {
        JSON_ENVELOPE_CLOSE
    } else {
        ENVELOPE_CLOSE
    }
}

/// What the agent asks a small model for (see `agent::product`): the whole action is written
/// by the grammar (or held by the schema) but for the part the model is asked; a grammar asks
/// for that part alone where it is the whole reply ([`Language::bare_ask`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProductAsk<'a> {
    /// Any new entry: a save whose value the model writes, head included (a state may still
    /// take its other actions).
    Entry,
    /// The unit with this head: a save of `<head>: ` and one to
    /// [`GRAMMAR_UNIT_MAX_SENTENCES`](crate::limits::GRAMMAR_UNIT_MAX_SENTENCES) sentences, the
    /// only action.
    Unit {
        /// What the value starts with, before `": "` ("Use mulch", "Day 3 – Kyoto").
        head: &'a str,
        /// What the text starts with after `": "`, its first sentence going on from it: the
        /// unit's subject ("Kyoto" of "Day 3 – Kyoto: Kyoto is ..."), or empty for a text the
        /// model starts (a running unit's, a name's definition).
        opening: &'a str,
        /// Whether the task is written in Latin letters (the words' rule follows its script).
        latin: bool,
    },
    /// The subjects of the next units: a `working_memory_add` of the plan entry `key`, whose
    /// value is `prefix` and a few new subjects, the only action: a numbered list, one subject
    /// a line, the first new one numbered `first` (`Tips:\n1. Water regularly\n2. `).
    Outline {
        /// The working-memory key of the plan.
        key: &'a str,
        /// What the value starts with: the list so far, ending with the number of the first
        /// new subject.
        prefix: &'a str,
        /// The number of the first new subject.
        first: u32,
        /// Most words of an item: a name's few for a unit that is a name (a term, a command),
        /// else a sentence's.
        words: u32,
        /// Whether the task is written in Latin letters.
        latin: bool,
    },
}

/// The language of replies the agent accepts now. See the module documentation.
pub struct Language<'a> {
    /// The states a reply may name (the configured states).
    pub states: &'a [String],
    /// What the current state's reply holds.
    pub shape: Shape,
    /// Lengths and counts.
    pub bounds: Bounds,
    /// Working-memory keys a `working_memory_remove` may name.
    pub working_keys: &'a dyn KeyList,
    /// Stored keys a `storage_load` may name.
    pub stored_keys: &'a dyn KeyList,
    /// Tags a `storage_search` may name, one per search (tags of stored entries, so a search
    /// always finds something; with nothing stored there is nothing to search).
    pub search_tags: &'a dyn KeyList,
    /// Keys never offered for removal (the pinned `task`, `user_request`).
    pub pinned: &'a [&'a str],
    /// Key prefixes of entries the agent manages itself (its rotating logs, `think_log_`...):
    /// not offered for removal either (a remove of one spends a cycle on nothing).
    pub managed: &'a [&'a str],
    /// The last few keyed actions (kind, key) the agent carried out: the same again would be
    /// refused as a repeat, or spend a cycle going round in circles (load, search, remove the
    /// same entry), so those keys are not offered to those kinds.
    /// as a repeat, so that key is not offered to that kind.
    pub recent: &'a [(ActionKind, &'a str)],
    /// Keys in working memory, which a load would only copy again.
    pub in_working: &'a dyn KeyList,
    /// When set, a `storage_save` adds an entry to the task's product (see [`ProductSave`]).
    pub product: Option<ProductSave<'a>>,
}

impl Language<'_> {
    /// Whether `key` may be named by an action of `kind` (a remove or a load).
    fn offers(&self, kind: ActionKind, key: &str) -> bool {
        if key.is_empty() || self.recent.contains(&(kind, key)) {
            return false;
        }
        if kind == ActionKind::StorageLoad {
            let mut loaded = false;
            self.in_working.each(&mut |k| {
                loaded = k == key;
                !loaded
            });
            if loaded {
                return false;
            }
        }
        kind != ActionKind::WorkingMemoryRemove
            || !(self.pinned.contains(&key) || self.managed.iter().any(|p| !p.is_empty() && key.starts_with(p)))
    }

    /// Calls `f` with each key an action of `kind` may name (at most `keys_per_list`).
    pub fn each_key(&self, kind: ActionKind, f: &mut dyn FnMut(&str)) {
        let list = match kind {
            ActionKind::WorkingMemoryRemove => self.working_keys,
            ActionKind::StorageLoad => self.stored_keys,
            ActionKind::StorageSearch => self.search_tags,
            _ => return,
        };
        let max = self.bounds.clamped().keys_per_list as usize;
        let mut n = 0usize;
        list.each(&mut |k| {
            if n >= max {
                return false;
            }
            if self.offers(kind, k) {
                f(k);
                n += 1;
            }
            true
        });
    }

    /// The actions offered now: the shape's, less a remove with no key to name, and a load or
    /// a search with nothing stored to name.
    pub fn actions(&self) -> ActionSet {
        let mut set = self.shape.actions;
        for kind in [ActionKind::WorkingMemoryRemove, ActionKind::StorageLoad, ActionKind::StorageSearch] {
            let mut any = false;
            self.each_key(kind, &mut |_| any = true);
            if !any {
                set = set.without(kind);
            }
        }
        set
    }

    /// The product ask this cycle, when it is the whole reply: the one action, with no log,
    /// no next state and no reasoning before it. Its envelope (`<agent>`, the action's type and
    /// tags, `<value>`) is then all literal, so a grammar (or a schema) asks for the value alone
    /// and the agent wraps the reply in it ([`ProductSave::write_envelope_open`]): a small model
    /// writes a list or a sentence far better after the ask than inside markup it was forced
    /// into (docs/measurements.md, "The reply's markup, and what the model writes inside it",
    /// and "The value alone in a JSON Schema").
    pub fn bare_ask(&self) -> Option<ProductSave<'_>> {
        let shape = self.effective_shape();
        let alone = shape.log.is_none() && !shape.next_state && self.bounds.clamped().think_chars == 0;
        self.product.filter(|p| alone && p.ask != ProductAsk::Entry && shape.actions.contains(ActionKind::StorageSave))
    }

    /// The shape as offered now: [`Language::actions`], and a next state when nothing else
    /// would be left to write.
    pub fn effective_shape(&self) -> Shape {
        let actions = self.actions();
        let next_state = self.shape.next_state || (actions.is_empty() && self.shape.log.is_none());
        Shape {
            next_state: next_state && !self.states.is_empty(),
            next_mask: self.shape.next_mask,
            log: self.shape.log,
            actions,
        }
    }

    /// The states a reply may name now: those of the shape's mask (all when it is 0, or when
    /// the mask names none of the configured states).
    pub fn next_states(&self) -> impl Iterator<Item = &str> + '_ {
        let mask = self.shape.next_mask;
        let any = self.states.iter().enumerate().any(|(i, _)| i < 16 && mask & (1 << i) != 0);
        self.states
            .iter()
            .enumerate()
            .filter(move |(i, _)| !any || (*i < 16 && mask & (1 << i) != 0))
            .map(|(_, s)| s.as_str())
    }
}

/// The constraint sent with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Constraint<'a> {
    /// A GBNF grammar of the tag reply.
    Grammar(&'a str),
    /// The JSON Schema (a JSON object text) of the JSON reply.
    JsonSchema(&'a str),
    /// The same schema in the older form some OpenAI-compatible servers take instead of
    /// `json_schema` (llama-cpp-python answers 500 to that and takes `json_object` with a
    /// `schema`): a chat request's `response_format` `{"type": "json_object", "schema": ...}`;
    /// on every other route and server, as [`Constraint::JsonSchema`].
    JsonObject(&'a str),
}

/// How replies are constrained (`llm.constrain`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Learn what the endpoint honours with a probe: grammar, else JSON Schema, else none.
    #[default]
    Auto,
    /// Always a GBNF grammar.
    Grammar,
    /// Always a JSON Schema (JSON replies).
    JsonSchema,
    /// No constraint: free tag replies.
    Off,
}

impl Mode {
    /// Parses the config spelling.
    pub fn from_name(name: &str) -> Option<Mode> {
        match name {
            "auto" => Some(Mode::Auto),
            "grammar" => Some(Mode::Grammar),
            "json_schema" => Some(Mode::JsonSchema),
            "off" => Some(Mode::Off),
            _ => None,
        }
    }

    /// The config spelling.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Grammar => "grammar",
            Mode::JsonSchema => "json_schema",
            Mode::Off => "off",
        }
    }

    /// One step down: grammar → JSON Schema → off.
    pub fn step_down(self) -> Mode {
        match self {
            Mode::Auto | Mode::Grammar => Mode::JsonSchema,
            Mode::JsonSchema | Mode::Off => Mode::Off,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_sets() {
        let s = ActionSet::NONE.with(ActionKind::StorageSave).with(ActionKind::PageOut);
        assert!(s.contains(ActionKind::StorageSave));
        assert!(!s.contains(ActionKind::PageOut));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![ActionKind::StorageSave]);
        assert!(s.without(ActionKind::StorageSave).is_empty());
        assert_eq!(ActionSet::ALL.iter().count(), 5);
    }

    #[test]
    fn bounds_clamp_under_the_repetition_limit_and_fit_max_tokens() {
        let b = Bounds { value_chars: 10_000, tags_per_key: 100, tag_chars: 1000, ..Bounds::default() }.clamped();
        assert!(b.value_chars < 2000);
        assert!(u64::from(b.tag_chars) * u64::from(b.tags_per_key - 1) < 2000);
        let shape = Shape::FREE;
        let fitted = Bounds::default().fit(&shape, 10, 1200);
        assert!(fitted.max_reply_bytes(&shape, 10) <= 1200, "{:?}", fitted);
        // Generous max_tokens leave the defaults alone.
        assert_eq!(Bounds::default().fit(&shape, 10, 1 << 20), Bounds::default().clamped());
    }

    #[test]
    fn removes_and_loads_need_keys() {
        let states = vec!["thinking".to_string()];
        let wm: &[&str] = &["task", "notes"];
        let lang = Language {
            states: &states,
            shape: Shape::FREE,
            bounds: Bounds::default(),
            working_keys: &wm,
            stored_keys: &NoKeys,
            search_tags: &NoKeys,
            pinned: &["task"],
            managed: &["think_log_"],
            recent: &[],
            in_working: &NoKeys,
            product: None,
        };
        let a = lang.actions();
        assert!(a.contains(ActionKind::WorkingMemoryRemove));
        assert!(!a.contains(ActionKind::StorageLoad));
        // The previous cycle removed notes (it failed, or it would be gone): not offered again.
        let lang = Language { recent: &[(ActionKind::WorkingMemoryRemove, "notes")], ..lang };
        assert!(!lang.actions().contains(ActionKind::WorkingMemoryRemove));
    }
}
