//! The task's product: a document of the units the task names (a tip, a day, a term; an
//! entry when it names none), which one general flow writes one unit at a time, whatever the
//! task's shape or language (docs/design.md §5).
//!
//! Small models state facts about a named subject and continue a list well; they cannot invent
//! what to do next from abstract instructions, and they copy what sits in the prompt. So the
//! agent carries the structure and the novelty, and asks the model only what it can answer:
//!
//! - **The task in view.** The product's heading is the task as the user wrote it; the
//!   entries follow, one line each (their heads), oldest first ([`Product::render`]). The view
//!   only grows at its end, so a server's prompt cache keeps it.
//! - **An outline, then one unit per subject.** With no subject planned, the ask is an
//!   outline: a numbered list of the next units' subjects ("Water regularly", "Kyoto", "The
//!   storm"), which the grammar starts with the product's first two subjects (its newest two,
//!   numbered as they are, for units a reader reads in order), so that the list goes on in the
//!   product's own kind ([`ProductAsk::Outline`]). The free subjects become the
//!   plan (the working-memory entry [`PLAN_KEY`], not shown). Then each cycle asks for the
//!   unit about the plan's next subject ([`ProductAsk::Unit`]): the grammar writes the head
//!   (the subject, or for a unit a reader numbers, its label too: "Day 3 – Kyoto") and the
//!   subject again as the text's opening, and the model one to three sentences from there
//!   ("Kyoto is ..."; a name's definition opens as the model writes it).
//! - **Novelty.** A subject stored or asked about before is not planned; a unit alike one the
//!   view shows is refused ([`Product::judge`]).
//! - **Precision.** A unit whose text is not in the task's language or is not made of words is
//!   kept apart under [`DOUBT_TAG`]: stored, searchable, never shown as product.
//! - **Restart-safe.** What was asked and how many outlines named nothing new survive a restart
//!   in `memory.json` ([`Product::state`], [`Product::restore`]); a changed task starts a new
//!   product (new tags) and a new plan, and the old product stays in the store.
//!
//! The task's language decides the questions and the text checks ([`lang`]); nothing here
//! names a word of any language. The parts: [`task`] reads the task text (tags, unit, phrase),
//! [`lang`] is the table of languages, [`judge`] files a unit and says whether it is new,
//! doubtful or a repeat, `entry` reads a value's head and subject, `view` writes what the
//! prompt shows of the product, `state` keeps what survives a restart. Everything is reserved in [`Product::new`]; refreshing and
//! rendering allocate nothing.

mod entry;
pub mod judge;
pub mod lang;
mod state;
pub mod task;
mod view;

use crate::error::Result;
use crate::fixed::{ArrayString, ArrayVec, FixedBuf};
use crate::grammar::ProductAsk;
use crate::limits::{PRODUCT_ASKED_MAX, PRODUCT_TAKEN_MAX, PRODUCT_VIEW_MAX_ENTRIES};
use crate::memory::key::{normalize, Key};
use crate::memory::query::{EntryId, Query, Results};
use crate::memory::store::recall::Ranked;
use crate::memory::store::Store;
use crate::memory::working::WorkingSet;
use entry::{is_sentence, name_start, own_tag, plan_items, same_start, slug};
use judge::{lower_hash, Gist, Words};
use task::{as_tag, Task, Word, UNIT_MAX_BYTES};

/// The working-memory key of the task.
pub const TASK_KEY: &str = "task";

/// The working-memory key of the plan: the subjects of the next units, one a line.
pub const PLAN_KEY: &str = "plan";

/// The tag a doubtful unit is kept under, beside the product's tags and its own.
pub const DOUBT_TAG: &str = "doubt";

/// The key of the product's state in `memory.json`'s agent map.
pub const STATE_META_KEY: &str = "product";

/// Most subjects the plan keeps.
pub const PLAN_SUBJECTS_MAX: usize = 9;

/// Longest subject kept, in bytes.
pub const SUBJECT_MAX_BYTES: usize = 96;

/// Letters of a name's start: a name of an outline that starts with the same letters as an
/// earlier one of it is not planned (see [`Product::settle`]).
pub const NAME_START_LETTERS: usize = 4;

/// Most names of one outline compared by their start ([`NAME_START_LETTERS`]): those the
/// grammar lets an outline write; past them (an outline not constrained) a name is compared
/// with these only.
const OUTLINE_STARTS_MAX: usize = crate::limits::GRAMMAR_PLAN_MAX_NAMES as usize;

/// Most words of a subject ("Black hole", "Use mulch", "Kyoto"): an outline's item of more is a
/// unit in one sentence, stored as it is ([`Product::settle`]).
pub const SUBJECT_MAX_WORDS: usize = crate::limits::GRAMMAR_OUTLINE_NAME_MAX_WORDS as usize;

/// Longest outline item kept, in bytes: [`crate::limits::GRAMMAR_OUTLINE_ITEM_MAX_WORDS`] words
/// of the grammar's rule, or [`crate::limits::GRAMMAR_OUTLINE_ITEM_MAX_CHARS`] characters of a
/// script without spaces, with room to spare; a longer one is not kept.
pub const ITEM_MAX_BYTES: usize = 1024;

/// Longest unit an outline writes: a numbered label, its join and an item.
pub const ITEM_UNIT_MAX_BYTES: usize = UNIT_MAX_BYTES + 8 + ITEM_MAX_BYTES;

/// Longest head of a unit: a numbered label, " – " and a subject.
pub const HEAD_MAX_BYTES: usize = UNIT_MAX_BYTES + 8 + SUBJECT_MAX_BYTES;

/// How many of the product's first subjects an outline goes on from.
pub const OUTLINE_FIRST: usize = 2;

/// How many of the product's oldest (or newest) entries are read for them: the first subjects
/// move on through these, two after each barren outline, before they start again from the
/// first (eight sent a product of 19 facts back to its oldest two every fourth barren outline).
const OUTLINE_FIRST_SCAN: usize = 32;

/// Every this many outlines in a row that planned nothing new, the next starts from nothing.
pub const BARREN_MAX: u32 = 2;

/// The presence penalty every outline is sent with: what the list holds already gets less
/// likely, so the model names something else instead of the same again (docs/measurements.md).
pub const LIST_PRESENCE_PENALTY: f64 = 1.0;

/// What joins a numbered unit's label and its subject.
const LABEL_JOIN: &str = " – ";

/// Longest outline prefix: the units' heading and the first subjects, numbered.
const PREFIX_MAX_BYTES: usize = task::PHRASE_MAX_BYTES + 4 + OUTLINE_FIRST * (ITEM_MAX_BYTES + 6) + 8;

/// A verdict on a unit's text ([`Product::judge`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A new unit of the product.
    New,
    /// Kept apart, under [`DOUBT_TAG`]: not the task's language, or not words.
    Doubt(&'static str),
    /// Refused: the product says this already.
    Repeat(&'static str),
}

/// What an entry the view shows says: the hash of its head, the words of its value, the hash
/// of its opening ([`judge::opening`]), its gist ([`Gist`]) and, for a numbered unit about a
/// subject, its subject's words by stem ([`judge::Subject`]).
#[derive(Clone, Copy, Default)]
struct Seen {
    head: u64,
    words: Words,
    opening: u64,
    gist: Gist,
    subject: judge::Subject,
}

/// See the module documentation.
pub struct Product {
    task: Task,
    /// Whether the task's letters are Latin (the text rules follow its script).
    latin: bool,
    /// Whether the task is written in plain letters, A to Z only: a unit's text in other
    /// letters is in another language ([`judge::accented`]).
    plain_letters: bool,
    /// The newest product entries, newest first.
    newest: Results,
    /// The own tags of those entries and the task's words, sorted and distinct.
    taken: ArrayVec<Word, PRODUCT_TAKEN_MAX>,
    /// What each entry the view shows says, to tell a new unit from it ([`Product::judge`]).
    seen: ArrayVec<Seen, PRODUCT_VIEW_MAX_ENTRIES>,
    shown: usize,
    /// The words of the sentence a running unit's view ends with ([`Product::render`]).
    ending: Words,
    /// The words of the sentence a running unit's view shows the product beginning with.
    beginning: Words,
    heading_bytes: usize,
    /// The view's first (oldest) entry: it grows at its end until full, then starts again.
    view_from: EntryId,
    /// The entries read for the outline's first subjects ([`Product::read_first`]).
    firsts: Results,
    /// The items the next outline goes on from (subjects, or units in one sentence).
    first: ArrayVec<ArrayString<ITEM_MAX_BYTES>, OUTLINE_FIRST>,
    /// The outline's value so far: the units' heading and the first subjects, numbered.
    prefix: ArrayString<PREFIX_MAX_BYTES>,
    /// The number of the outline's first new subject.
    first_number: u32,
    /// The newest unit's number, for units a reader numbers: the outline's first subjects are
    /// numbered up to it (0: from 1).
    newest_number: u32,
    /// The plan's first free subject: asked about now (empty: an outline is asked).
    subject: ArrayString<SUBJECT_MAX_BYTES>,
    /// The head of the unit asked for.
    head: ArrayString<HEAD_MAX_BYTES>,
    /// A numbered unit's label ("Day 3").
    label: ArrayString<UNIT_MAX_BYTES>,
    /// Hashes (48 bits) of the subjects asked about for this task, oldest first.
    asked: ArrayVec<u64, PRODUCT_ASKED_MAX>,
    /// Outlines in a row that planned nothing new; for a running unit, asks in a row that
    /// saved none.
    barren: u32,
    /// How many of the entries read for the next outline's first subjects it passes over:
    /// [`OUTLINE_FIRST`] more after each barren outline. An outline that planned something
    /// keeps it for units read in any order, whose oldest entries stay the same: gone back to
    /// the oldest two, every outline wrote what it had written before (docs/measurements.md,
    /// "First subjects that gave nothing").
    first_skip: u32,
    /// The last outline planned no subject, only units: whether it was barren is known once
    /// they are saved or refused ([`Product::next_unit`]).
    outline_units: bool,
    /// Asks in a row for a unit about a subject that saved none (not kept over a restart).
    unsaved: u32,
    /// The product's entries when the prompt was built: a running unit asked for and not
    /// saved leaves [`Product::written`] at it.
    written_asked: usize,
    /// The units in one sentence the last outline wrote, still to be saved, without their
    /// labels ([`Product::next_unit`] labels them).
    units: ArrayVec<ArrayString<ITEM_MAX_BYTES>, PLAN_SUBJECTS_MAX>,
    /// The product's entries: as the last refresh counted them, and one more for each unit
    /// saved since. A numbered unit's label is the next number.
    written: usize,
    /// The stored entries most relevant to a new unit ([`Product::repeats_stored`]).
    ranked: Ranked,
    /// The task the asked subjects and the barren count belong to.
    state_task: u64,
    /// The words of the prompt's own instructions ([`Product::read_instructions`]).
    instructions: ArrayVec<Word, { judge::INSTRUCTION_WORDS_MAX }>,
}

impl Default for Product {
    fn default() -> Self {
        Product::new()
    }
}

/// 48 bits of a subject's hash: what [`Product::state`] keeps.
fn subject_hash(subject: &str) -> u64 {
    lower_hash(subject) & 0xffff_ffff_ffff
}

/// Whether `subject` opens with the whole of a known one and says it again with more words
/// ("Fukuoka again", "Osaka Castle" after "Osaka"): whether `known` holds one of its first
/// words short of all of them.
fn opens_with(subject: &str, mut known: impl FnMut(&str) -> bool) -> bool {
    let s = subject.trim();
    s.char_indices().filter(|&(_, c)| c == ' ').any(|(i, _)| s.get(..i).is_some_and(|o| known(o.trim_end_matches(','))))
}

impl Product {
    /// An inactive product with its buffers reserved.
    pub fn new() -> Product {
        Product {
            task: Task::none(),
            latin: true,
            plain_letters: true,
            newest: Results::with_capacity(PRODUCT_TAKEN_MAX),
            taken: ArrayVec::new(),
            seen: ArrayVec::new(),
            shown: 0,
            ending: Words::default(),
            beginning: Words::default(),
            heading_bytes: 0,
            view_from: 0,
            firsts: Results::with_capacity(OUTLINE_FIRST_SCAN),
            first: ArrayVec::new(),
            prefix: ArrayString::new(),
            first_number: 1,
            newest_number: 0,
            subject: ArrayString::new(),
            head: ArrayString::new(),
            label: ArrayString::new(),
            asked: ArrayVec::new(),
            barren: 0,
            first_skip: 0,
            outline_units: false,
            written_asked: 0,
            unsaved: 0,
            units: ArrayVec::new(),
            written: 0,
            ranked: Ranked::new(),
            state_task: 0,
            instructions: ArrayVec::new(),
        }
    }

    /// Whether the task's unit is a running one ([`task::Task::running`]): the next goes on
    /// from the last, with no outline.
    pub fn running(&self) -> bool {
        self.task.running
    }

    /// Whether there is a task.
    pub fn active(&self) -> bool {
        self.task.key.is_some()
    }

    /// The product's tags as a key (`tips,tomatoes`).
    pub fn key(&self) -> Option<&Key> {
        self.task.key.as_ref()
    }

    /// Whether the normalised key `key` is an entry of the product: it carries the product's
    /// tags and not [`DOUBT_TAG`].
    pub fn owns(&self, key: &str) -> bool {
        let Some(p) = self.task.key.as_ref() else { return false };
        let has = |t: &str| key.split(',').any(|k| k == t);
        p.tags().all(has) && !has(DOUBT_TAG)
    }

    /// Names a new entry may not take, as tags, sorted and distinct: the stored entries' own
    /// tags and the task's words (for a grammar that writes a whole entry).
    pub fn taken(&self) -> impl Iterator<Item = &str> + '_ {
        self.taken.iter().map(|w| w.as_str())
    }

    /// The count of units the task asks for, once the product holds that many ("a five-day
    /// trip": five days written); `None` while it holds fewer, or the task states no count.
    /// Read after [`Product::refresh`].
    pub fn done(&self) -> Option<u32> {
        let count = self.task.count?;
        (self.active() && self.written >= count as usize).then_some(count)
    }

    /// Whether the task, as the last refresh read it, states how many units it wants.
    pub fn counts(&self) -> bool {
        self.task.count.is_some()
    }

    /// The task's unit, in the plural ("days").
    pub fn units(&self) -> &str {
        self.task.units.as_str()
    }

    /// Entries the last render showed.
    pub fn shown(&self) -> usize {
        self.shown
    }

    /// Bytes the last render wrote before the entries: `<product>` and the task.
    pub fn heading_bytes(&self) -> usize {
        self.heading_bytes
    }

    /// Brings the product up to date with the task in `working` and the entries in `store`.
    pub fn refresh(&mut self, working: &WorkingSet, store: Option<&Store>) {
        let text = normalize(TASK_KEY).ok().and_then(|k| working.get(&k)).unwrap_or("");
        let hash = if text.trim().is_empty() { 0 } else { crate::memory::hash::fnv1a64(text.as_bytes()) };
        if hash != self.task.hash {
            self.task = Task::read(text);
            self.latin = judge::mostly_latin(text);
            self.plain_letters = text.chars().filter(|c| c.is_alphabetic()).all(|c| c.is_ascii_alphabetic());
            self.view_from = 0;
        }
        if self.state_task != self.task.hash {
            self.asked.clear();
            self.barren = 0;
            self.first_skip = 0;
            self.state_task = self.task.hash;
        }
        self.newest.clear();
        self.taken.clear();
        self.written = 0;
        let Some(key) = self.task.key else {
            self.subject.clear();
            return;
        };
        for w in self.task.words.iter() {
            let _ = self.taken.push(*w);
        }
        let doubt = normalize(DOUBT_TAG).ok();
        let q = Query { required: Some(key), excluded: doubt, max_results: PRODUCT_TAKEN_MAX, ..Query::default() };
        if let Some(store) = store {
            store.query(&q, &mut self.newest);
            self.written = self.newest.matched();
            for id in self.newest.ids() {
                let Some(k) = store.key(id) else { continue };
                if let Some(own) = own_tag(&k, &key).and_then(|t| Word::try_from_str(t).ok()) {
                    if self.taken.push(own).is_err() {
                        break;
                    }
                }
            }
        }
        self.written_asked = self.written;
        crate::sort::sort(self.taken.as_mut_slice());
        let mut distinct: ArrayVec<Word, PRODUCT_TAKEN_MAX> = ArrayVec::new();
        for w in self.taken.iter() {
            if distinct.as_slice().last() != Some(w) {
                let _ = distinct.push(*w);
            }
        }
        self.taken = distinct;
        // The plan's first free subject is asked about next.
        self.subject.clear();
        let plan = normalize(PLAN_KEY).ok().and_then(|k| working.get(&k)).unwrap_or("");
        if let Some(s) = plan_items(plan).find(|s| !self.task.running && self.is_free(s)) {
            let _ = self.subject.push_str(s);
        }
        self.write_head();
        // The outline's prefix as the last render left its first subjects (a render without a
        // store, as `lkjagent grammar` may do, leaves none).
        self.write_prefix();
    }

    /// The head of the unit about `subject`: the subject, or for a numbered unit its label, the
    /// join and the subject ("Day 3 – Kyoto").
    fn write_head(&mut self) {
        self.head.clear();
        self.label.clear();
        if self.task.running {
            // A running unit has no subject: its head is its label.
            self.task.label(self.next_number(), &mut self.label);
            let _ = self.head.push_str(self.label.as_str());
            return;
        }
        if self.subject.is_empty() {
            return;
        }
        if self.task.numbered {
            self.task.label(self.next_number(), &mut self.label);
            let _ = self.head.push_str(self.label.as_str());
            let _ = self.head.push_str(LABEL_JOIN);
        }
        let _ = self.head.push_str(self.subject.as_str());
    }

    /// Whether `subject` (an outline's item, as written) can be planned: a subject of at most
    /// [`SUBJECT_MAX_WORDS`] words and no comma ([`Product::readable`]), not asked about or
    /// stored before, and not opening like a unit the view shows ([`judge::opening`]).
    fn is_free(&self, subject: &str) -> bool {
        let s = subject.trim();
        if s.len() > SUBJECT_MAX_BYTES || is_sentence(s) || s.contains(',') || !self.readable(s) {
            return false;
        }
        if self.asked.as_slice().contains(&subject_hash(s))
            || opens_with(s, |o| self.asked.as_slice().contains(&subject_hash(o)))
        {
            return false;
        }
        // Its unit would open like one the view shows, and be refused ([`Product::judge`]).
        let op = self.opening(s);
        if op != 0 && self.seen.iter().any(|e| e.opening == op) {
            return false;
        }
        let mut own = Word::new();
        let mut taken = |o: &str| slug(o, &mut own) && self.taken.as_slice().binary_search(&own).is_ok();
        !(taken(s) || opens_with(s, &mut taken))
    }

    /// Whether an outline's item names the task's own unit, in the singular or the plural ("The
    /// first paragraph describes the keeper", "Fact about the human heart", "Day of the trip"):
    /// it is about the product, not a part of it (docs/measurements.md, "Items about the
    /// product").
    fn names_own_unit(&self, item: &str) -> bool {
        let (one, many) = (self.task.unit.as_str(), self.task.units.as_str());
        !one.is_empty() && lang::words(item).any(|w| w.eq_ignore_ascii_case(one) || w.eq_ignore_ascii_case(many))
    }

    /// How many items of an outline's value (`value`: the heading and the numbered list, as
    /// a reply writes it) past the first subjects it was given are readable and unlike the
    /// value's earlier items, by the rules a unit is judged by: a distinct opening and gist for
    /// a unit in one sentence (`judge::opening`, `Gist`), a distinct start for a name
    /// ([`NAME_START_LETTERS`]), a distinct subject otherwise. A model that says one thing
    /// again and again writes it surely, because it copies itself; this is what a sample of
    /// the first outline yields beside how surely it was written
    /// (`crate::agent::model::Model::ask`).
    pub fn outline_yield(&self, value: &str) -> usize {
        let mut keys: ArrayVec<u64, OUTLINE_STARTS_MAX> = ArrayVec::new();
        let mut gists: ArrayVec<Gist, OUTLINE_STARTS_MAX> = ArrayVec::new();
        for item in plan_items(value).skip(self.first.len()).take(OUTLINE_STARTS_MAX) {
            let item = item.trim();
            if !self.readable(item) {
                continue;
            }
            let key = if is_sentence(item) {
                let gist = self.gist(item);
                if gists.iter().any(|g| g.alike(&gist)) {
                    continue;
                }
                let _ = gists.push(gist);
                self.opening(item)
            } else if self.task.named {
                name_start(self.task.lang.name_of(item))
                    .map_or(0, |k| k.iter().fold(0u64, |h, &c| h.wrapping_mul(0x110000).wrapping_add(u64::from(c))) | 1)
            } else {
                subject_hash(item.trim_end_matches('.').trim_end()) | 1
            };
            if key != 0 && !keys.as_slice().contains(&key) {
                let _ = keys.push(key);
            }
        }
        keys.len()
    }

    /// Whether `text` names the product itself, the task or its entries
    /// ([`lang::Lang::product_words`]; not the task's unit, when that is one of them: "one
    /// task per entry"): it talks about the task, not its subject.
    pub(super) fn about_the_task(&self, text: &str) -> bool {
        let lang = self.task.lang;
        let unit = |w: &str| {
            w.eq_ignore_ascii_case(self.task.unit.as_str()) || w.eq_ignore_ascii_case(self.task.units.as_str())
        };
        lang::words(text).any(|w| lang.is_product_word(w) && !unit(w))
    }

    /// Whether `item` (an outline's item, trimmed) is one a reader can use: words with a
    /// letter, no `:`, not a string of names, no word run on, shouted nor in letters of another
    /// language, not about the task ([`Product::about_the_task`]),
    /// not cut off (by the grammar's bound, or before its last words), and not the task's own
    /// words only. Whether it repeats the product is judged when it is saved.
    fn readable(&self, item: &str) -> bool {
        // An item as long as the outline's grammar allows is one the bound cut or forced to
        // its end: the model had more to say ("... still not fully understood including",
        // "... so that they will be ready in time before.").
        let at_bound = match self.latin {
            true => item.split_whitespace().count() >= crate::limits::GRAMMAR_OUTLINE_ITEM_MAX_WORDS as usize,
            false => item.chars().count() >= crate::limits::GRAMMAR_OUTLINE_ITEM_MAX_CHARS as usize,
        };
        if at_bound {
            return false;
        }
        let s = item.trim_end_matches('.');
        if s.len() < 2 || s.len() > ITEM_MAX_BYTES || lang::words(s).next().is_none() || s.contains(':') {
            return false;
        }
        // A string of names, one a comma ("Science, technology, engineering, arts, ..."), is
        // no unit: a sentence has at most as many clauses as a unit's text may.
        if s.matches(',').count() >= crate::limits::GRAMMAR_ENTRY_MAX_CLAUSES as usize {
            return false;
        }
        if judge::doubtful(s, &lang::NEUTRAL, self.latin, &|_| false).is_some()
            || (self.plain_letters && judge::accented(s))
        {
            return false;
        }
        // A word in capitals longer than an acronym is a word shouted ("CELESTIAL"): the
        // grammar lets it be written whole, so that no cut of it passes for an acronym.
        let shouted = |w: &str| {
            w.chars().count() > crate::grammar::gbnf::ACRONYM_MAX as usize && !w.chars().any(char::is_lowercase)
        };
        if lang::words(s).any(shouted) {
            return false;
        }
        let lang = self.task.lang;
        if self.about_the_task(s) {
            return false;
        }
        // A phrase cut off ("The universe is made up", "a science that") ends with a word
        // every sentence is built with; a subject or a sentence does not.
        if lang::words(s).last().is_some_and(|w| lang.is_sentence_word(w)) {
            return false;
        }
        let task_word = |w: &str| {
            let mut t = Word::new();
            lang.is_task_word(w) || (as_tag(w, &mut t) && self.task.words.as_slice().contains(&t))
        };
        !lang::words(s).filter(|w| !lang.is_sentence_word(w)).all(task_word)
    }

    /// What to ask a model whose reply a grammar or a schema writes: the unit about the plan's
    /// next subject, else an outline.
    pub fn ask(&self) -> ProductAsk<'_> {
        if self.subject.is_empty() && !self.task.running {
            ProductAsk::Outline {
                key: PLAN_KEY,
                prefix: self.prefix.as_str(),
                first: self.first_number,
                words: if self.task.named {
                    SUBJECT_MAX_WORDS as u32
                } else {
                    crate::limits::GRAMMAR_OUTLINE_ITEM_MAX_WORDS
                },
                latin: self.latin,
            }
        } else {
            ProductAsk::Unit { head: self.head.as_str(), opening: self.text_opening(), latin: self.latin }
        }
    }

    /// What a unit's text opens with: its subject, for a unit about one that is not a name (a
    /// tip, a day, a fact), so that the model says something of it; a running unit and a
    /// name's definition open as the model writes them.
    fn text_opening(&self) -> &str {
        if self.task.running || self.task.named {
            ""
        } else {
            self.subject.trim_end_matches(['.', ' '])
        }
    }

    /// Writes the question of `ask` as the prompt's last line, in the task's language (none
    /// for a language the table does not hold: the product's lines and the grammar ask).
    pub fn write_question(&self, ask: ProductAsk<'_>, out: &mut FixedBuf) -> Result<()> {
        let lang = self.task.lang;
        if !lang.asks() {
            return Ok(());
        }
        match ask {
            ProductAsk::Outline { .. } if self.task.numbered => {
                let (a, b) = lang.outline_numbered;
                out.format(format_args!("{}{}{}\n", a, self.task.units, b))
            }
            ProductAsk::Outline { .. } => {
                let (a, b) = lang.outline;
                out.format(format_args!("{}{}{}\n", a, self.task.phrase, b))
            }
            ProductAsk::Unit { .. } if self.task.running => {
                let (a, b) = lang.unit_next;
                out.format(format_args!("{}{}{}\n", a, self.label, b))
            }
            ProductAsk::Unit { .. } if self.task.named && !self.task.numbered => {
                let (a, b) = lang.unit_named;
                out.format(format_args!("{}{}{}\n", a, self.subject, b))
            }
            ProductAsk::Unit { .. } => {
                let (a, b, c) = if self.task.numbered { lang.unit_numbered } else { lang.unit };
                let unit = if self.task.numbered { self.label.as_str() } else { self.task.unit.as_str() };
                out.format(format_args!("{}{}{}{}{}\n", a, unit, b, self.subject, c))
            }
            ProductAsk::Entry => self.write_ask(out),
        }
    }

    /// The ask for a reply no grammar writes: the next unit, as a save of the product.
    pub fn write_ask(&self, out: &mut FixedBuf) -> Result<()> {
        let Some(key) = self.task.key else { return Ok(()) };
        let lang = self.task.lang;
        if (!self.subject.is_empty() || self.task.running) && lang.asks() {
            self.write_question(ProductAsk::Unit { head: self.head.as_str(), opening: "", latin: self.latin }, out)?;
        }
        if self.task.running {
            return out.format(format_args!(
                "Save it with tags {} and a value that starts with \"{}: \".\n",
                key.as_str(),
                self.label
            ));
        }
        let unit = if self.task.unit.is_empty() { "entry" } else { self.task.unit.as_str() };
        out.format(format_args!(
            "Save the next {} with tags {} and a value that starts with its subject and a colon.\n",
            unit,
            key.as_str()
        ))
    }

    /// After a cycle that asked `ask` (grammar or schema): the subject asked about is not asked
    /// again; an outline's free subjects become the plan, and its items of more than
    /// [`SUBJECT_MAX_WORDS`] words are units in one sentence, to be saved as they are
    /// ([`Product::next_unit`]; for a numbered unit, after its label). An item the model wrote
    /// unsurely (a line of `unsure`, read from the reply's log-probabilities) is neither.
    /// `scratch` holds the new plan.
    pub fn settle(&mut self, working: &mut WorkingSet, scratch: &mut FixedBuf, now: u64, unsure: &str) -> Result<()> {
        let Ok(key) = normalize(PLAN_KEY) else { return Ok(()) };
        if self.task.running {
            // No outline plans a running unit, and it has no subject to remember; a unit asked
            // for and not saved counts, so that the next ask is not the same (see `render`).
            self.barren = match self.written > self.written_asked {
                true => 0,
                false => self.barren.saturating_add(1).min(BARREN_MAX),
            };
            return Ok(());
        }
        let outline = self.subject.is_empty();
        self.unsaved = match outline || self.written > self.written_asked {
            true => 0,
            false => self.unsaved.saturating_add(1),
        };
        if !outline {
            if self.asked.is_full() {
                self.asked.remove(0);
            }
            let _ = self.asked.push(subject_hash(self.subject.as_str()));
        }
        let Some(plan) = working.get(&key) else {
            if outline {
                self.outline_barren();
            }
            return Ok(());
        };
        // An outline's own items: those after the first subjects it was given.
        let given = if outline { self.first.len() } else { 0 };
        scratch.clear();
        self.units.clear();
        let mut kept = 0usize;
        let mut hashes: ArrayVec<u64, PLAN_SUBJECTS_MAX> = ArrayVec::new();
        // Every earlier item of the outline, given ones included, by its subject's hash: an
        // item that opens with one of them whole says it again ([`opens_with`]).
        let mut earlier: ArrayVec<u64, OUTLINE_STARTS_MAX> = ArrayVec::new();
        // A name that starts with the letters of an earlier name of the outline (one given to
        // it included) is a small model spelling on from it ("Astrobiology, Astrology,
        // Astrumologia"), not naming: such items were one in twenty real ones
        // (docs/measurements.md, "Names that spell on"). Other units may open alike.
        let mut starts: ArrayVec<[char; NAME_START_LETTERS], OUTLINE_STARTS_MAX> = ArrayVec::new();
        let names = outline && self.task.named;
        let lang = self.task.lang;
        let joining = |w: &str| lang.is_join(w) || lang.is_measure_of(w);
        for (i, s) in plan_items(plan).enumerate() {
            let s = if names { lang.name_of(s) } else { s };
            let start = if names { name_start(s) } else { None };
            let again = opens_with(s, |o| earlier.as_slice().contains(&subject_hash(o)));
            let _ = earlier.push(subject_hash(s.trim().trim_end_matches('.').trim_end()));
            let spelled_on = again || start.is_some_and(|k| starts.iter().any(|e| same_start(e, &k)));
            if let Some(k) = start.filter(|_| !spelled_on) {
                let _ = starts.push(k);
            }
            if i < given || spelled_on {
                continue;
            }
            // A name holds no sentence word but those that join names ("Circle of fifths",
            // "Rhythm and blues"): one with "is", "the" or "in" is a definition crammed into
            // the item ("Music theory is aesthetics."), a real term once in 148
            // (docs/measurements.md, "Names that hold sentence words").
            if names && lang::words(s).any(|w| lang.is_sentence_word(w) && !joining(w)) {
                continue;
            }
            if outline && unsure.lines().any(|u| u == s.trim()) {
                continue;
            }
            if outline && self.names_own_unit(s) {
                continue;
            }
            if outline && is_sentence(s) {
                if self.readable(s) {
                    if let Ok(unit) = ArrayString::try_from_str(s.trim()) {
                        let _ = self.units.push(unit);
                    }
                }
                continue;
            }
            // A subject is a name, not a sentence: the stop an outline may write after it goes.
            let s = s.trim().trim_end_matches('.').trim_end();
            let h = subject_hash(s);
            if kept == PLAN_SUBJECTS_MAX || hashes.as_slice().contains(&h) || !self.is_free(s) {
                continue;
            }
            let _ = hashes.push(h);
            scratch.push_str(if kept == 0 { "" } else { "\n" })?;
            scratch.push_str(s)?;
            kept += 1;
        }
        if outline {
            // Barren: nothing of it kept. With units but no subject, that is known once its
            // units are saved or refused ([`Product::next_unit`]): an outline whose units all
            // said stored ones again gave nothing, and counted as giving, the next outline was
            // given the same first subjects and wrote the same (docs/measurements.md, "An
            // outline of repeats is barren").
            self.outline_units = kept == 0 && !self.units.is_empty();
            if kept + self.units.len() == 0 {
                self.outline_barren();
            } else if kept > 0 {
                self.outline_gave();
            }
        }
        if kept == 0 {
            working.remove(&key);
            return Ok(());
        }
        let text = scratch.text()?;
        if text != plan {
            working.add(&key, text, now)?;
        }
        Ok(())
    }

    /// An outline planned nothing new: the next goes on from the next first subjects, or from
    /// nothing (see [`Product::read_first`]).
    fn outline_barren(&mut self) {
        self.barren = self.barren.saturating_add(1);
        self.first_skip = self.first_skip.saturating_add(OUTLINE_FIRST as u32);
    }

    /// An outline planned something: units a reader numbers go on from the newest again.
    fn outline_gave(&mut self) {
        self.barren = 0;
        if self.task.numbered {
            self.first_skip = 0;
        }
    }

    /// The number of the next unit: one more than the product holds.
    fn next_number(&self) -> u32 {
        u32::try_from(self.written).unwrap_or(u32::MAX).saturating_add(1)
    }

    /// Moves into `out` the next unit in one sentence the last outline wrote (see
    /// [`Product::settle`]), oldest first, as its value: for a numbered unit, after the label
    /// of the next number, so that a unit refused leaves no gap. `false` when none is left, or
    /// once the product holds the count of units the task asks for (the rest are dropped).
    pub fn next_unit(&mut self, out: &mut ArrayString<ITEM_UNIT_MAX_BYTES>) -> bool {
        if self.done().is_some() {
            self.units.clear();
        }
        let Some(item) = self.units.remove(0) else {
            if self.outline_units {
                self.outline_units = false;
                match self.written > self.written_asked {
                    true => self.outline_gave(),
                    false => self.outline_barren(),
                }
            }
            return false;
        };
        out.clear();
        if self.task.numbered {
            let mut label = ArrayString::<UNIT_MAX_BYTES>::new();
            self.task.label(self.next_number(), &mut label);
            let _ = out.push_str(label.as_str());
            let _ = out.push_str(LABEL_JOIN);
        }
        // Fits: ITEM_UNIT_MAX_BYTES holds a label, the join and an item.
        let _ = out.push_str(item.as_str());
        true
    }

    /// Remembers `value`, a unit saved this cycle, so the reply's next units may not repeat it
    /// (and a numbered unit after it takes the next number).
    pub fn saved(&mut self, value: &str) {
        self.written = self.written.saturating_add(1);
        if self.seen.is_full() {
            self.seen.remove(0);
        }
        let _ = self.seen.push(self.seen_of(value));
    }
}

#[cfg(test)]
mod tests;
