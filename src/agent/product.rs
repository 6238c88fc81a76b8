//! The task's product: what the agent has made for its task so far, shown to the model after
//! working memory and before the ask, the names a new entry may not take, and what to ask
//! (docs/design.md §5).
//!
//! Small models state facts about a named thing and continue a list or a document well; they
//! cannot invent what to do next from abstract instructions, and they copy whatever sits in the
//! prompt. So the agent carries the structure and the novelty, and asks the model only what it
//! can answer:
//!
//! - **The product's tags** come from the task's own words: its first
//!   [`PRODUCT_TAGS_MAX`] content words, as tags ("Build a small glossary of cooking terms..."
//!   gives `cooking,glossary`). Every entry of the product carries them and one tag of its own,
//!   its name (`braise,cooking,glossary`), which the agent takes from the head of the value
//!   ([`Product::file`]). The title ("glossary of cooking terms"), the unit ("term", from "one
//!   term per entry") and the domain ("cooking") come from the task's words too.
//! - **The view** ([`Product::render`]) is a line that says what the product is ("The
//!   glossary of cooking terms:"), then the names of the newest entries that carry the
//!   product's tags, oldest of them first, one a line, at most [`PRODUCT_VIEW_MAX_ENTRIES`] in
//!   [`PRODUCT_VIEW_MAX_BYTES`]. It only grows at its end, so that a server's prompt cache
//!   keeps it; full, it starts again from its newest half. Names, not whole entries: with
//!   definitions in its prompt, a small model asked for a new one copies one of them
//!   (measured: 16 of 18 copies).
//! - **The names taken** ([`Product::taken`]) are those of the newest [`PRODUCT_TAKEN_MAX`]
//!   product entries and the task's own words (a small model asked for a cooking term
//!   answers `cooking`, or `One term`). The grammar makes them impossible as a new name; an
//!   entry's name also as the start of one (`Lion`: not `Lions`, `Lionel`), and the first
//!   three letters of a name of five or more (`Elephant`: not `Eleodora`), a word that names
//!   nothing ("A") and the task's words that say nothing of its subject ("One") as its first
//!   word, "The" and the task's words of content of four letters or more as its first letters
//!   ("Cookinglab", "African elephant") ([`crate::grammar::ProductSave`]); a save that names
//!   one anyway (an unconstrained reply) is refused, as is one whose name or text the view
//!   shows already, or whose text is the task's own words ([`Product::repeats`]). A name asked
//!   about once is not asked again in the run, whatever came of it ([`Product::asked`]), but
//!   once more when its text was refused as no sentence and a later list names it again
//!   ([`Product::refused_text`]).
//! - **The asks** ([`Product::ask`], [`Product::write_question`]): with a grammar, the prompt
//!   ends with one concrete question and the grammar writes all of the reply but the answer.
//!   The next names are the plan's free ones (the working-memory entry [`PLAN_KEY`], which
//!   the prompt does not show); for a glossary with none, the words the view's definitions use
//!   most that are not taken (the words a glossary uses are its next terms, and real words,
//!   which a small model defines well: "made with *flour* and *butter*"). The ask for them is
//!   their entries, up to [`QUESTION_NAMES_MAX`] in one question ("What are Flour, Butter and
//!   Milk? Answer in one sentence each.", under the view's line that says what they are of;
//!   the value `Flour: ` and one sentence of words, a line break, `Butter: ` and its
//!   sentence...): each line is filed as an entry of its own, and one cycle defines what took
//!   one each (every cycle's reply pays for the markup around its answer, about 50 tokens a
//!   small model writes one by one). With no name at all: names for the plan, as a numbered
//!   list of up to ten under a heading ("Name five common cooking terms.", the value starting
//!   `Common cooking terms:\n1. `), enough for three questions; for a list that is not a
//!   glossary, the list continues its first entries' names
//!   (`Common African animals:\n1. Lion\n2. Zebra\n3. `), not its newest, which the model
//!   named last and made up as often as not; its first names are those two lists from
//!   nothing agree on ([`FIRST_LISTS_MAX`]); its grammar lets it name what is stored
//!   ([`Product::closed`]). Every list is asked with a presence penalty
//!   ([`LIST_PRESENCE_PENALTY`]). After each cycle the plan keeps only the free, name-shaped
//!   names not yet asked for ([`Product::settle_plan`]), and not a third in a row of the
//!   model's that starts with the letter of the two before it ("Ozaazo, Ozotika, Ozeanos");
//!   after lists that name nothing new, the next starts from nothing ([`BARREN_LISTS_MAX`]).
//!   Without a grammar the ask is the next entry ([`Product::write_ask`]).
//!
//! Everything is reserved in [`Product::new`]; refreshing and rendering allocate nothing.

use crate::error::Result;
use crate::fixed::{ArrayString, ArrayVec, FixedBuf};
use crate::grammar::ProductAsk;
use crate::limits::{
    GRAMMAR_PLAN_MAX_NAMES, PRODUCT_ASKED_MAX, PRODUCT_CANDIDATES_MAX, PRODUCT_ENTRY_MAX_BYTES, PRODUCT_TAGS_MAX,
    PRODUCT_TAKEN_MAX, PRODUCT_TAKEN_MAX_CHARS, PRODUCT_VIEW_MAX_BYTES, PRODUCT_VIEW_MAX_ENTRIES, TAG_MAX_BYTES,
};
use crate::memory::hash::{fnv1a64, fnv1a64_continue};
use crate::memory::key::{normalize, Key};
use crate::memory::query::{EntryId, Query, Results, Sort};
use crate::memory::store::Store;
use crate::memory::working::WorkingSet;

/// The working-memory key of the task.
pub const TASK_KEY: &str = "task";

/// Most of the task's content words kept (for the taken names).
const TASK_WORDS_MAX: usize = 16;

/// Most words of the task kept to recognise a name copied from it.
const TASK_ALL_WORDS_MAX: usize = 48;

/// Longest title of the product, in bytes (cut at a character boundary).
const TITLE_MAX_BYTES: usize = 80;

/// Words of a task that say nothing of its subject: articles, prepositions, pronouns, the verbs
/// and adjectives tasks are phrased with, and the agent's own vocabulary. Sorted (binary
/// search).
const STOPWORDS: &[&str] = &[
    "a", "about", "add", "after", "all", "also", "an", "and", "any", "are", "as", "at", "basic", "be", "before", "big",
    "brief", "build", "by", "can", "collect", "common", "compile", "create", "each", "entries", "entry", "every",
    "few", "first", "for", "from", "gather", "good", "has", "have", "how", "in", "into", "is", "it", "its", "keep",
    "key", "large", "list", "long", "make", "many", "memory", "more", "most", "new", "next", "no", "not", "of", "on",
    "one", "or", "other", "own", "per", "save", "several", "short", "simple", "small", "some", "storage", "store",
    "tag", "tagged", "tags", "than", "that", "the", "their", "them", "then", "these", "this", "those", "to", "two",
    "up", "use", "useful", "value", "values", "what", "when", "where", "which", "who", "with", "write", "you", "your",
];

/// Words a small model starts an answer with that name nothing ("The ...", "Here is ...",
/// "Including: ...") or copies from the agent's own lines ("Result: ..."): the plan keeps no
/// name that is one or starts with one.
#[rustfmt::skip]
const NOT_NAMES: &[&str] = &[
    "a", "action", "an", "another", "answer", "definition", "example", "examples", "here", "heres", "i", "including",
    "it", "its", "my", "name", "new", "next", "no", "ok", "okay", "one", "our", "plan", "refused", "repeat", "result",
    "sure", "tags", "that", "the", "there", "theres", "these", "this", "those", "we", "what", "yes", "you", "your",
];

/// Words a small model starts a list item with that name nothing and that may not be the start
/// of a new name at all, as letters, not only as a word: asked to go on with a list and not
/// allowed to write "The African elephant", SmolLM2-135M wrote "The" as the start of a made-up
/// name ("Thelil", "Thetans", "Thesira": 10 names of 16 in a run). Closed as letters, the
/// model's " The" is no longer a way in, and it starts another name. It costs names that
/// start so ("Thermometer").
const NOT_NAME_STARTS: &[&str] = &["the"];

/// Fewest letters of a plural name's singular for the singular's letters to be closed.
const STEM_MIN_LETTERS: usize = 4;

/// How many first letters of a stored name longer than [`STEM_MIN_LETTERS`] start no new name
/// ("Ele" of "Elephant": not "Eleodora"). It costs the real names that share them ("Mongoose"
/// after "Monkey").
const START_LETTERS: usize = 3;

/// Fewest definitions of the view that must use a word for it to be asked about next.
const CANDIDATE_MIN_USES: u32 = 2;

/// The working-memory key of the plan: the names of the next entries, as the model named them
/// (`Terms for the glossary of cooking terms: roux, fondue`).
pub const PLAN_KEY: &str = "plan";

/// Most names the plan keeps: those of a names ask's list, less one (a list holds
/// [`crate::limits::GRAMMAR_PLAN_MAX_NAMES`], ten), for three questions.
pub const PLAN_NAMES_MAX: usize = 9;

/// The presence penalty every names ask is sent with: what the list or the prompt's tail holds
/// already gets less likely, so the model names something else instead of a name again or its
/// letters run on.
/// SmolLM2-135M, cooking, 30 cycles: lists of ten from nothing repeated a name ("Fennel" nine
/// times, "Fog" ten) or ran through its letters ("Fizzle, Fizzy, Fizzie"); with this penalty on
/// those asks, entries served by `make model-check`'s rule were 24 and 30 in two runs (11, 18,
/// 16 and 10 without); its first list of African animals named 50 real ones in ten samples,
/// 33 without. On a list that went on from the view's newest names, with the stored names
/// closed, it pushed the model off their words (African animals: 7 and 5 served, the lists
/// running into "Zoophytes, Mollusks, Baculidae"). On one that goes on from the first two
/// names, with the stored names open ([`Product::closed`]), it weighs against naming those
/// again: 1.5 new real names a list and 2.0 made up, 1.0 and 2.6 without (SmolLM2-135M, 12
/// samples each); in 30-cycle runs 13, 16, 11, 9, 15 and 13 served, 15, 10 and 8 without.
/// Its cost: the line break that ends a name is in the list already, so a name runs on more
/// often (after "Z", SmolLM2-135M's likeliest was "oos" and then the line's end, 0.73: its
/// greedy list wrote "Zoos" without the penalty and "Zoosia" with it; sampled with it, 4 lists
/// of 12 ran "Zoos" on, into "Zoosia" or "Zooskies", and 1 ended it).
pub const LIST_PRESENCE_PENALTY: f64 = 1.0;

/// Most names one question asks about (SmolLM2-135M: three names asked at once took 3.5-5.0 s,
/// one at a time 5.9 s, with definitions alike).
pub const QUESTION_NAMES_MAX: usize = 3;

/// Most bytes of the names asked about in one question: a title's length each, one a line.
pub const NEXT_MAX_BYTES: usize = QUESTION_NAMES_MAX * (TITLE_MAX_BYTES + 1);

/// How many first letters make names alike: a small model that runs through the letters of a
/// name writes names that start alike, one after another ("Ophira, Ozonope, Ozaazo, Ozotika,
/// Ozeanos"; "Fizzle, Fizzy, Fizzie"; "Zerithi, Zutora, Zunibenja, Zwekara"), and the plan
/// reads a run of them no further than its second name. In the lists of this project's runs
/// of SmolLM2-135M (`make model-check`'s word lists judging): a third name in a row that
/// starts with the two letters of the two before it was 138 names of 141 no name of the
/// task's domain; one that starts with their letter only, 297 of 311 (African animals) and 75
/// of 83 (cooking), where the others were 69% and 51% so. A real list's third name in a row
/// with one first letter goes too ("Lions, Leopards, Lemurs"): 1 in 20 of them.
const RUN_LETTERS: usize = 1;

/// Most words in a name the plan keeps.
const NAME_WORDS_MAX: usize = 3;

/// Most letters in one word of a name the plan keeps (longer ones are a small model's run-on
/// letters more often than words).
const NAME_WORD_MAX_LETTERS: usize = 14;

/// Words of a task's title that say what kind of product it is, not what it is about.
const FORM_WORDS: &[&str] = &[
    "a",
    "an",
    "and",
    "atlas",
    "catalog",
    "catalogue",
    "collection",
    "dictionary",
    "directory",
    "encyclopedia",
    "for",
    "glossary",
    "guide",
    "index",
    "inventory",
    "list",
    "of",
    "overview",
    "register",
    "series",
    "set",
    "summary",
    "table",
    "the",
    "with",
];

/// Most names of the newest entries the ask names.
const ASK_NAMES_MAX: usize = 6;

/// How many of a list's first names (its oldest entries) a names ask goes on from. A small
/// model goes on in the kind of the names it is given; the first names of a list from nothing
/// are those it knows best (SmolLM2-135M, African animals: the first two real in 25 of 30
/// lists, a later name in 3 of 10), and the newest are the ones it named last. Going on from
/// the newest six, its lists ran off the task one window at a time ("Zoophytes, Insects,
/// Mollusks, Baculidae, Lamellibranchi"): 30-cycle runs served 0 to 19 entries by
/// `make model-check`'s rule, 10 or more in 5 of 10. From the first two: 12, 19 and 14 (from
/// the first three: 10, 14, 18).
pub const LIST_FIRST_NAMES: usize = 2;

/// How many of the product's oldest entries are read for its [`LIST_FIRST_NAMES`]: an entry
/// that names nothing (imported with no `name:` head) is passed over, so that a few such do not
/// leave every list starting from nothing.
const FIRST_NAMES_SCAN: usize = 8;

/// Most lists from nothing a list with no entry yet is asked for: its first names are those
/// two of them agree on ([`Product::settle_plan`]), and the last is taken as it is when none
/// do. The first names lead every list after them ([`LIST_FIRST_NAMES`]), and a small model's
/// first list is sometimes made up from its first name on (SmolLM2-135M, African animals:
/// "Monakeko, Anjelica, Zarina" or "Antejimas, Aeterniam" in about 1 of 10 samples; a run
/// that went on from such a list served none of its 30 cycles). Two samples rarely make up
/// the same name, and they agree on the names the model knows (Lions, Elephants): drawn from
/// 36 sampled first lists, the first two names were both real in 80% of single lists and in
/// 94% of the names two of them agreed on (97% with the names two of three named, at one
/// cycle more every time).
pub const FIRST_LISTS_MAX: u32 = 3;

/// Lists that go on from the first names and name nothing new, in a row, after which the next
/// list starts from nothing, every stored name closed ([`Product::settle_plan`]): however the
/// model goes on from them, the agent never asks the same thing cycle after cycle.
pub const BARREN_LISTS_MAX: u32 = 2;

/// Most names heard from the lists from nothing that agreed on none yet: all of their names.
const HEARD_MAX: usize = (FIRST_LISTS_MAX as usize - 1) * GRAMMAR_PLAN_MAX_NAMES as usize;

/// Most bytes of the plan's prefix: a heading of the domain (a title's words) and the units
/// (a tag), then [`LIST_FIRST_NAMES`] numbered names (a title's length each) and the next
/// number.
const PREFIX_MAX_BYTES: usize =
    COMMON_HEADING.len() + TITLE_MAX_BYTES + TAG_MAX_BYTES + 4 + (LIST_FIRST_NAMES + 1) * (TITLE_MAX_BYTES + 5);

/// The first word of the plan's heading and of the names ask: what a small model knows best is
/// what is common, and asked for that it names real things (SmolLM2-135M, in the agent's prompt:
/// 13 of 20 names real African animals after "Name five common African animals.", 7 of 18
/// without "common", 2 of 12 after "Name five animals that live in Africa."; the greedy answer
/// to the plain question was "Aardvarus cristatus").
const COMMON_HEADING: &str = "Common";

/// Words that introduce the unit of a task ("one term per entry"): the content word after the
/// first of them names what an entry is.
const UNIT_MARKERS: &[&str] = &["each", "every", "one", "per"];

/// Units of a task whose entries define words ("one term per entry"): the words a definition
/// uses are the next terms to define. Sorted.
const GLOSSARY_UNITS: &[&str] =
    &["abbreviation", "acronym", "concept", "definition", "expression", "idiom", "phrase", "term", "word"];

/// Words of a title that make it a glossary ("dictionary of networking terms"). Sorted.
const GLOSSARY_FORMS: &[&str] = &["dictionary", "glossary", "lexicon", "terminology", "vocabulary"];

/// Words that end a noun phrase in a definition ("made with *flour* and *butter*"): the word
/// before one is the head of a phrase, a candidate term. Sorted.
#[rustfmt::skip]
const PHRASE_ENDS: &[&str] = &[
    "after", "and", "are", "as", "at", "before", "between", "but", "by", "called", "during", "for", "from", "in",
    "including", "into", "is", "like", "made", "of", "on", "or", "over", "such", "than", "that", "through", "to",
    "under", "used", "using", "was", "were", "when", "where", "which", "while", "who", "whose", "with", "without",
];

/// Words other languages build sentences with that are no English words (Spanish, French,
/// Italian, Portuguese, German, Polish): a definition with [`FOREIGN_MIN`] of them, and no
/// fewer English ones, is in another language. SmolLM2-135M wrote such definitions after a
/// foreign name ("Arroz: a la cena del gastronomic."), and a glossary then asked about their
/// words (Saludamientos, Alimentos, Palabras). Sorted.
#[rustfmt::skip]
const FOREIGN_JOINING: &[&str] = &[
    "al", "als", "con", "dans", "das", "de", "degli", "dei", "del", "della", "der", "des", "du", "ein", "eine", "el",
    "en", "est", "et", "il", "jest", "la", "las", "le", "les", "los", "nie", "para", "pour", "que", "sur", "un",
    "una", "und", "une", "y",
];

/// Fewest words of [`FOREIGN_JOINING`] that make a definition foreign: one is a phrase an English
/// definition quotes ("as in pico *de* gallo").
const FOREIGN_MIN: usize = 2;

/// Words that end a phrase but name nothing worth a definition of its own: what definitions
/// of anything are made of ("a *type* of", "the *art* of", "many *others*"), adverbs,
/// adjectives and participles that stand before a phrase end ("*native* to", "*found* in"), and
/// what a definition of a thing calls it ("a food *item*", "a food *product*"). Sorted; a plural
/// is looked up as its singular.
#[rustfmt::skip]
const GENERIC_WORDS: &[&str] = &[
    "able", "addition", "also", "always", "amount", "area", "art", "aspect", "available", "close", "common",
    "context", "different", "done", "due", "eaten", "else", "equal", "even", "ever", "example", "experience",
    "form", "found", "free", "full", "given", "great", "group", "grown", "held", "here", "high", "important",
    "item", "just", "kept", "kind", "known", "level", "lot", "low", "main", "many", "method", "more", "most",
    "much", "native", "never", "number", "often", "only", "other", "part", "particular", "people", "piece", "place",
    "point", "popular", "process", "product", "purpose", "quality", "range", "result", "rich", "role", "same",
    "seen", "side", "similar", "something", "sometimes", "specific", "still", "style", "such", "there", "they",
    "thing", "time", "together", "too", "type", "unique", "use", "user", "usually", "variety", "various", "very",
    "way", "well", "world",
];

/// Endings of words that are not names of things (adverbs, participles, adjectives).
const NOT_NOUN_ENDINGS: &[&str] = &["able", "ed", "ful", "ible", "ical", "ish", "less", "ly", "ous"];

/// A tag-sized word.
type Word = ArrayString<TAG_MAX_BYTES>;

/// See the module documentation.
pub struct Product {
    /// FNV-1a of the task text the fields below were derived from (0: none yet).
    task_hash: u64,
    /// The product's tags, in the order the task names them.
    tags: ArrayVec<Word, PRODUCT_TAGS_MAX>,
    /// Their key (sorted, comma-joined), when there are any.
    key: Option<Key>,
    /// What one entry is ("term"), from the task's words; empty when it does not say.
    unit: Word,
    /// What the product is, in the task's words: from its first content word to the end of
    /// that phrase ("glossary of cooking terms").
    title: ArrayString<TITLE_MAX_BYTES>,
    /// The task's content words.
    words: ArrayVec<Word, TASK_WORDS_MAX>,
    /// The newest product entries, newest first.
    newest: Results,
    /// The names taken, sorted and distinct.
    taken: ArrayVec<Word, PRODUCT_TAKEN_MAX>,
    /// For each entry in the view: the hash of its head (the text before `:`, as
    /// [`normal_hash`] makes it) and the words of its whole value, name and text ([`Words`]).
    seen: ArrayVec<(u64, Words), PRODUCT_VIEW_MAX_ENTRIES>,
    /// Entries the view showed in the last render.
    shown: usize,
    /// Bytes of the last render before its names ([`Product::heading_bytes`]).
    heading_bytes: usize,
    /// The view's first (oldest) entry: it shows the product's entries from this one on, so
    /// that it only grows at its end until it is full ([`Product::render`]).
    view_from: EntryId,
    /// The names (heads) of the newest of them, newest last, for the ask.
    names: ArrayVec<ArrayString<TITLE_MAX_BYTES>, ASK_NAMES_MAX>,
    /// The product's oldest entries, oldest first: a list's first names come from them.
    oldest: Results,
    /// The names (heads) of a list's first entries, oldest first, for its names ask.
    first_names: ArrayVec<ArrayString<TITLE_MAX_BYTES>, LIST_FIRST_NAMES>,
    /// The names of the lists from nothing asked for a list with no entry yet that agreed on
    /// none, as tags in the singular (`lion`), each once; [`Product::settle_plan`].
    heard: ArrayVec<Word, HEARD_MAX>,
    /// How many lists from nothing `heard` holds the names of.
    lists_heard: u32,
    /// How many lists that went on from the first names (or started from nothing after them)
    /// named nothing new, in a row: after one, the next has the stored names closed
    /// ([`Product::closed`]); after [`BARREN_LISTS_MAX`], it starts from nothing.
    barren: u32,
    /// The unit in the plural ("terms").
    units: Word,
    /// What the plan's value starts with: the list's heading, then, for a list that is not a
    /// glossary, the names of its first entries, numbered, one a line, and the number of the
    /// next (`1. Lion\n2. Zebra\n3. `), so that the model continues a list of the product's
    /// own names, which small models do well ([`Product::write_prefix`]).
    prefix: ArrayString<PREFIX_MAX_BYTES>,
    /// The number the prefix leaves for the model's first name.
    first: u32,
    /// The plan's first free names, as written, one a line, at most [`QUESTION_NAMES_MAX`]:
    /// asked about in one question.
    next: ArrayString<NEXT_MAX_BYTES>,
    /// Every word of the task, lowercased (a name that starts with one is copied from it).
    all_words: ArrayVec<Word, TASK_ALL_WORDS_MAX>,
    /// What the product is about: the title less the words of its form and its unit
    /// ("cooking" of "glossary of cooking terms").
    domain: ArrayString<TITLE_MAX_BYTES>,
    /// Whether the product defines words (a glossary): then the words its definitions use are
    /// the next names to ask about ([`Product::render`]).
    glossary: bool,
    /// FNV-1a hashes of the tags of the names asked about this run, oldest first: never asked
    /// again, whatever came of the ask.
    asked: ArrayVec<u64, PRODUCT_ASKED_MAX>,
    /// The same of the names whose text was refused once and that may be asked about once more
    /// ([`Product::refused_text`]), oldest first.
    retried: ArrayVec<u64, PRODUCT_ASKED_MAX>,
    /// The same of those refused so this cycle: [`Product::asked`] passes them over once.
    spared: ArrayVec<u64, QUESTION_NAMES_MAX>,
    /// The words the view's definitions use that could name a new entry, with how many of the
    /// definitions use them, in the order met (newest definition first).
    candidates: ArrayVec<(Word, u32), PRODUCT_CANDIDATES_MAX>,
}

impl Default for Product {
    fn default() -> Self {
        Product::new()
    }
}

impl Product {
    /// An inactive product with its buffers reserved.
    pub fn new() -> Product {
        Product {
            task_hash: 0,
            tags: ArrayVec::new(),
            key: None,
            unit: Word::new(),
            title: ArrayString::new(),
            words: ArrayVec::new(),
            newest: Results::with_capacity(PRODUCT_TAKEN_MAX),
            taken: ArrayVec::new(),
            seen: ArrayVec::new(),
            shown: 0,
            heading_bytes: 0,
            view_from: 0,
            names: ArrayVec::new(),
            oldest: Results::with_capacity(FIRST_NAMES_SCAN),
            first_names: ArrayVec::new(),
            heard: ArrayVec::new(),
            lists_heard: 0,
            barren: 0,
            units: Word::new(),
            prefix: ArrayString::new(),
            first: 1,
            next: ArrayString::new(),
            all_words: ArrayVec::new(),
            domain: ArrayString::new(),
            glossary: false,
            asked: ArrayVec::new(),
            retried: ArrayVec::new(),
            spared: ArrayVec::new(),
            candidates: ArrayVec::new(),
        }
    }

    /// Whether the task names a product (it has content words).
    pub fn active(&self) -> bool {
        self.key.is_some()
    }

    /// The product's tags as a key (`cooking,glossary`).
    pub fn key(&self) -> Option<&Key> {
        self.key.as_ref()
    }

    /// Whether the normalised key `key` is one of the product's entries (carries its tags).
    pub fn owns(&self, key: &str) -> bool {
        let Some(p) = self.key.as_ref() else { return false };
        p.tags().all(|t| key.split(',').any(|k| k == t))
    }

    /// The names taken, sorted and distinct.
    pub fn taken(&self) -> impl Iterator<Item = &str> + '_ {
        self.taken.iter().map(|w| w.as_str())
    }

    /// The names the reply's grammar closes for this ask, sorted and distinct: every name
    /// taken, but for a list that goes on from its first names, only the task's words and the
    /// words that name nothing. Closed, a stored name a small model starts is written on into a
    /// made-up one: SmolLM2-135M, going on from "Gorilla, Lions" with 20 names stored, wrote
    /// 0.7 new real names a list and 6.5 made up ("Zebras" into "Zerbergs", "Zohar"); with
    /// them open and the presence penalty, 1.5 and 2.0, and the stored ones it named again are
    /// not planned ([`Product::settle_plan`]). After a list that named nothing new, the next
    /// one has them closed, so that it has something new to name.
    pub fn closed(&self) -> impl Iterator<Item = &str> + '_ {
        let open = self.continues_list() && self.barren == 0;
        self.taken().filter(move |w| !open || self.fixed(w))
    }

    /// Whether the ask is for names that go on from the list's first names.
    fn continues_list(&self) -> bool {
        matches!(self.ask(), ProductAsk::Names { first, .. } if first > 1)
    }

    /// Whether a taken `w` (a name, `word*` or `word_`) is one of the task's words or one that
    /// names nothing, not a stored name's.
    fn fixed(&self, w: &str) -> bool {
        let s = w.trim_end_matches(['*', '_']);
        self.all_words.iter().chain(self.words.iter()).any(|x| x.as_str() == s || singular(x.as_str()) == Some(s))
            || NOT_NAMES.binary_search(&s).is_ok()
            || NOT_NAME_STARTS.contains(&s)
    }

    /// Entries the last [`Product::render`] showed.
    pub fn shown(&self) -> usize {
        self.shown
    }

    /// Bytes the last [`Product::render`] wrote before the names: `<product>` and the line
    /// that says what the product is (none for an inactive product).
    pub fn heading_bytes(&self) -> usize {
        self.heading_bytes
    }

    /// Brings the product up to date with the task in `working` and the entries in `store`:
    /// the tags (when the task changed), the newest entries and the names taken.
    pub fn refresh(&mut self, working: &WorkingSet, store: Option<&Store>) {
        let task = normalize(TASK_KEY).ok().and_then(|k| working.get(&k)).unwrap_or("");
        let hash = fnv1a64(task.as_bytes());
        if hash != self.task_hash || task.is_empty() {
            self.task_hash = hash;
            self.derive(task);
        }
        self.newest.clear();
        self.taken.clear();
        // Passed over only by the cycle whose save was refused.
        self.spared.clear();
        let Some(key) = self.key else { return };
        // Every word of the task first: they must always be there. A name that is one is
        // copied from the task ("Animals"); one that starts with one of its words that say
        // nothing of its subject too ("One animal", "List of": `one_`, `list_`), and one that
        // starts with a word that names nothing ("The lion", "Here are").
        for w in self.all_words.iter().chain(self.words.iter()) {
            let _ = self.taken.push(*w);
            if STOPWORDS.binary_search(&w.as_str()).is_ok() {
                take_word(&mut self.taken, w.as_str());
            }
        }
        // The task's words of content as the start of no name either ("Cookingterms",
        // "Cookinglab", "Cookinganami": 15 names of 20 in a run of SmolLM2-135M asked for
        // cooking names of one word), in the singular ("Termite" is no cooking term; "Term"
        // closes it with "Terms"), but for short ones ("Cat" stays free for "Caterpillar").
        for w in self.words.iter() {
            let w = w.as_str();
            let one = singular(w).filter(|o| o.len() >= STEM_MIN_LETTERS).unwrap_or(w);
            if one.len() >= STEM_MIN_LETTERS {
                take_start(&mut self.taken, one);
            }
        }
        for w in NOT_NAMES {
            if let Ok(w) = Word::try_from_str(w) {
                let _ = self.taken.push(w);
            }
            take_word(&mut self.taken, w);
        }
        for w in NOT_NAME_STARTS {
            take_start(&mut self.taken, w);
        }
        let q = Query { required: Some(key), max_results: PRODUCT_TAKEN_MAX, ..Query::default() };
        if let Some(store) = store {
            store.query(&q, &mut self.newest);
        }
        let mut chars = 0;
        for id in self.newest.ids() {
            let Some(k) = store.and_then(|s| s.key(id)) else { continue };
            if let Some(name) = name_of(&k, &key) {
                // The name as the start of no name: not itself, nor its plural ("Lions" after
                // "Lion"), nor a first word ("Braise and sear"), nor a longer word. Taken only
                // as itself, a name a small model lists again was written on into a made-up one
                // (SmolLM2-135M: "Anjelica", then "Anjelicaan", "Anjelicaanii"; "Zoos" into
                // "Zoosia"): its tokens lead there, and only letters were left to follow them.
                // A plural as its singular's letters ("Elephant", "Elephantesses" after
                // "Elephants"; "Gorillaines" after "Gorillas"), but for a short one, only as
                // a name: as letters it would close "Pear" after "Peas".
                let one = singular(name);
                let stem = one.filter(|o| o.len() >= STEM_MIN_LETTERS).unwrap_or(name);
                let short = one.filter(|o| o.len() < STEM_MIN_LETTERS);
                // A name in -y and its plural in -ies share the letters before them: both are
                // closed ("Jellies" after "Jelly", "Berry" after "Berries"; a repeat refused
                // cost a cycle).
                let other_y = name
                    .strip_suffix('y')
                    .or_else(|| name.strip_suffix("ies"))
                    .filter(|b| b.len() >= STEM_MIN_LETTERS - 1);
                // Its first letters as the start of no name either: SmolLM2-135M, its token for
                // "Ele" or "Oce" still the likeliest once "Elephant" and "Ocelot" were closed,
                // wrote them on into made-up names ("Eleodora", "Elezio", "Eleoprolophos";
                // "Ocenopithecus"), up to a third of a run's names. Closed, the choice moves to
                // the first letter, where the model's next likeliest is another real name. Not
                // a short name's: "Peas" would close "Pear", "Peach" and "Peanut".
                let start = name.get(..START_LETTERS).filter(|_| name.len() > STEM_MIN_LETTERS);
                // What the grammar pays for: with the first letters closed, only them (its trie
                // writes nothing beneath a closed node, where the other forms are).
                chars += match start {
                    Some(s) => s.len() + 1,
                    None => stem.len() + 1 + short.map_or(0, str::len) + other_y.map_or(0, |b| b.len() + 2),
                };
                if chars > PRODUCT_TAKEN_MAX_CHARS || self.taken.len() + 4 > PRODUCT_TAKEN_MAX {
                    break;
                }
                take_start(&mut self.taken, stem);
                if let Some(s) = start {
                    take_start(&mut self.taken, s);
                }
                if let Some(w) = short.and_then(|o| Word::try_from_str(o).ok()) {
                    let _ = self.taken.push(w);
                }
                if let Some(b) = other_y {
                    // "jelli*" for "jelly", "berry" (as a name, and the start of none) for
                    // "berries".
                    let mut w = Word::new();
                    let end = if name.ends_with('y') { "i" } else { "y" };
                    if w.push_str(b).is_ok() && w.push_str(end).is_ok() {
                        take_start(&mut self.taken, w.as_str());
                    }
                }
            }
        }
        self.taken.as_mut_slice().sort_unstable();
        dedup(&mut self.taken);
        // The plan's names that are still free, each once, in its order.
        self.next.clear();
        let plan = normalize(PLAN_KEY).ok().and_then(|k| working.get(&k)).unwrap_or("");
        for name in plan_names(plan) {
            if self.is_free(name) {
                self.push_next(name);
            }
        }
    }

    /// Adds `name` to the names asked about next, written as an entry's head (its first letter
    /// capitalised), unless [`QUESTION_NAMES_MAX`] are there or one of them is `name` in the
    /// singular or the plural: a list that names "Pasta" and "Pastas" would have both defined
    /// alike.
    fn push_next(&mut self, name: &str) {
        let mut chars = name.chars();
        let Some(c) = chars.next() else { return };
        let plural = |a: &str, b: &str| {
            a.len() > b.len()
                && a.get(..b.len()).is_some_and(|h| h.eq_ignore_ascii_case(b))
                && a.get(b.len()..).is_some_and(|t| t == "s" || t == "es")
        };
        let same = |n: &str| n.eq_ignore_ascii_case(name) || plural(n, name) || plural(name, n);
        if self.next.lines().count() >= QUESTION_NAMES_MAX || self.next.lines().any(same) {
            return;
        }
        let line = if self.next.is_empty() { "" } else { "\n" };
        if self.next.len() + line.len() + name.len() <= NEXT_MAX_BYTES {
            let _ = self.next.push_str(line);
            let _ = self.next.push(c.to_ascii_uppercase());
            let _ = self.next.push_str(chars.as_str());
        }
    }

    /// Writes the plan's prefix: the list's heading, the domain and the units capitalised
    /// ("African animals:"), then, for a list, the names of its first entries
    /// ([`LIST_FIRST_NAMES`]) numbered, one a line, and the next number (`1. Lion\n2. Zebra\n3. `);
    /// none after [`BARREN_LISTS_MAX`] lists that named nothing new. A small model asked to
    /// "Name five African animals." writes that heading first; with the list starting at "1. ",
    /// it wrote it as the first name and ran on from it (SmolLM2-135M: "African animals
    /// ikaenjabbabw"). With the heading given, 12 of 29 cooking names were cooking words (Tuna,
    /// Pastry, Frying pan), 11 of 25 without.
    ///
    /// A list's names are its first items, and a small model that goes on with them names more
    /// of their kind. A glossary's are also the words its definitions used (Food, Fish,
    /// Ingredients), no list of anything, and going on with them SmolLM2-135M ran through their
    /// letters instead ("Pantry, Parlor, Parcel, Pintle"): its list starts at `1. ` under the
    /// heading, and the grammar still closes every name taken. Measured on 30 cycles, by
    /// `make model-check`'s rule: cooking served with 13, 14, 13 and 14 entries so, 8 to 11
    /// continuing the names; African animals with 5 and 2 so, 3 to 8 continuing them.
    fn write_prefix(&mut self) {
        self.prefix.clear();
        let _ = self.prefix.push_str(COMMON_HEADING);
        if !self.domain.is_empty() {
            let _ = self.prefix.format(format_args!(" {}", self.domain));
        }
        let _ = self.prefix.format(format_args!(" {}:\n", self.units));
        // The prefix has room for the heading and every first name, numbered.
        let restart = self.glossary || self.barren >= BARREN_LISTS_MAX;
        let listed: &[ArrayString<TITLE_MAX_BYTES>] = if restart { &[] } else { self.first_names.as_slice() };
        for (i, name) in listed.iter().enumerate() {
            let _ = self.prefix.format(format_args!("{}. {}\n", i + 1, name));
        }
        self.first = listed.len() as u32 + 1;
        let _ = self.prefix.format(format_args!("{}. ", self.first));
    }

    /// Whether `name` (as written) can name a new entry: it names no entry of the product and
    /// no word of the task, and is no acronym whose first two letters start a name taken (as
    /// the grammar has it), it looks like a name (1 to [`NAME_WORDS_MAX`] words of 2 to
    /// [`NAME_WORD_MAX_LETTERS`] letters or `-`, with a vowel or all capitals), it does not
    /// start with a word that names nothing ([`NOT_NAMES`], "Including ...") or one of the
    /// task's words that say nothing of its subject ("save one term", copied from the task), it
    /// does not end with a word that ends a phrase ("Salt and"), and it is not all words of the
    /// task ("Cooking terms"; "Cooking oil" is a name).
    fn is_free(&self, name: &str) -> bool {
        let mut tag = Word::new();
        if !slug(name, &mut tag) {
            return false;
        }
        // Taken or asked already, in the singular or the plural ("egg" of "eggs").
        let mut forms: ArrayVec<Word, 3> = ArrayVec::new();
        let _ = forms.push(tag);
        if let Some(one) = tag.as_str().strip_suffix('s').filter(|s| s.len() >= 3) {
            if let Ok(w) = Word::try_from_str(one) {
                let _ = forms.push(w);
            }
        }
        let mut plural = tag;
        if plural.push('s').is_ok() {
            let _ = forms.push(plural);
        }
        // Whether a taken `word*` is the start of `t`: each of its starts looked up in the sorted
        // list, not the whole list scanned for every form of every word a definition uses.
        let starts = |t: &Word| {
            (1..=t.len()).any(|n| {
                let mut w = Word::new();
                t.as_str().get(..n).is_some_and(|s| w.push_str(s).is_ok() && w.push('*').is_ok())
                    && self.taken.as_slice().binary_search(&w).is_ok()
            })
        };
        let seen = |t: &Word| {
            self.taken.as_slice().binary_search(t).is_ok()
                || starts(t)
                || self.asked.as_slice().contains(&fnv1a64(t.as_bytes()))
        };
        if forms.iter().any(seen) {
            return false;
        }
        // An acronym ("CHEM") whose first two letters start a taken name ("chol"): no list
        // writes one (the grammar's acronym rule), so none is asked about either.
        let acronym = name.len() >= 2
            && name.bytes().next().is_some_and(|b| b.is_ascii_uppercase())
            && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
        if let Some(two) = tag.as_str().get(..2).filter(|_| acronym) {
            let taken = self.taken.as_slice();
            if taken.get(taken.partition_point(|w| w.as_str() < two)).is_some_and(|w| w.as_str().starts_with(two)) {
                return false;
            }
        }
        let words = || name.split(' ').filter(|w| !w.is_empty());
        // A word: letters (or `-`), a vowel or all capitals ("TCP"), and no capital after a
        // small letter (a small model that drifts runs names together: "ChickenLovers"). More
        // capitals than an acronym has are a shouted word ("CHOLESTEROL"), which a list writes
        // whole so that it is no made-up acronym ([`crate::grammar::gbnf::ACRONYM_MAX`]).
        let capitals = |w: &str| w.bytes().all(|b| b.is_ascii_uppercase());
        let shaped = |w: &str| {
            (2..=NAME_WORD_MAX_LETTERS).contains(&w.len())
                && w.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-')
                && (w.bytes().any(|b| b"aeiouyAEIOUY".contains(&b)) || capitals(w))
                && !(capitals(w) && w.len() > crate::grammar::gbnf::ACRONYM_MAX as usize)
                && !w.as_bytes().windows(2).any(|p| {
                    p.first().is_some_and(u8::is_ascii_lowercase) && p.get(1).is_some_and(u8::is_ascii_uppercase)
                })
        };
        let first = words().next().unwrap_or("");
        let last = words().next_back().unwrap_or("");
        let among = |list: &[&str], word: &str| list.iter().any(|w| w.eq_ignore_ascii_case(word));
        let task_word = |word: &str| self.all_words.iter().any(|w| w.eq_ignore_ascii_case(word));
        name.trim().len() >= 3
            && words().count() <= NAME_WORDS_MAX
            && words().all(shaped)
            && !among(NOT_NAMES, first)
            && !among(PHRASE_ENDS, first)
            && !(task_word(first) && among(STOPWORDS, first))
            && !among(PHRASE_ENDS, last)
            && !among(STOPWORDS, last)
            && !words().all(task_word)
    }

    /// What to ask a model whose reply a grammar writes (see the module documentation): the
    /// entries for the plan's free names, one a line, else names for the plan.
    pub fn ask(&self) -> ProductAsk<'_> {
        if !self.next.is_empty() {
            ProductAsk::Define(self.next.as_str())
        } else {
            ProductAsk::Names { key: PLAN_KEY, prefix: self.prefix.as_str(), first: self.first }
        }
    }

    /// Remembers that `name` was asked about (a [`ProductAsk::Define`]): it is not asked again
    /// this run, unless its text was refused this cycle for the first time
    /// ([`Product::refused_text`]). The oldest of [`PRODUCT_ASKED_MAX`] is forgotten first.
    pub fn asked(&mut self, name: &str) {
        let mut tag = Word::new();
        if !slug(name, &mut tag) {
            return;
        }
        let hash = fnv1a64(tag.as_bytes());
        if let Some(i) = self.spared.iter().position(|&h| h == hash) {
            self.spared.remove(i);
            return;
        }
        if self.asked.is_full() {
            self.asked.remove(0);
        }
        let _ = self.asked.push(hash);
    }

    /// Notes that a save of the product under `key` was refused for its text (another
    /// language, no sentence): the first time for its name this run, the name is not marked
    /// asked this cycle ([`Product::asked`]), so that a later list that names it again has it
    /// asked about once more. A small model answers a real name in another language now and
    /// then (SmolLM2-135M: "Zebra: a loracana de la amarracha ..."; 27 of the 152 texts refused
    /// as not English in this project's runs were about real names).
    pub fn refused_text(&mut self, key: &Key) {
        let Some(name) = self.key.as_ref().and_then(|p| name_of(key, p)) else { return };
        let hash = fnv1a64(name.as_bytes());
        if self.retried.as_slice().contains(&hash) {
            return;
        }
        if self.retried.is_full() {
            self.retried.remove(0);
        }
        let _ = self.retried.push(hash);
        let _ = self.spared.push(hash);
    }

    /// Writes the question of `ask` as the prompt's last line.
    pub fn write_question(&self, ask: ProductAsk<'_>, out: &mut FixedBuf) -> Result<()> {
        match ask {
            // What the names are of, the view's first line says: there it is the same in every
            // question's prompt, and a server's cache keeps it (here it was 8 of the 25 tokens
            // evaluated again each question).
            ProductAsk::Define(names) if !names.contains('\n') => {
                out.format(format_args!("What is {}? Answer in one sentence.\n", names))
            }
            ProductAsk::Define(names) => {
                out.push_str("What are ")?;
                write_and_list(out, names.lines())?;
                out.push_str("? Answer in one sentence each.\n")
            }
            // Asked in the task's words but not as the task says them (a small model copies the
            // task's text when the question repeats it), and as small models were tuned to
            // answer with a numbered list (SmolLM2-135M, African animals in the agent's prompt:
            // 18 of 30 names real after "Name five ...", 12 of 30 after "List some well-known
            // ...").
            ProductAsk::Names { .. } => out.format(format_args!(
                "Name five common {}{}{}.\n",
                self.domain,
                if self.domain.is_empty() { "" } else { " " },
                self.units.as_str()
            )),
            ProductAsk::Entry => self.write_ask(out),
        }
    }

    /// Keeps the plan in `working` to what is still to do, after a cycle: the names that are
    /// still free, without `done` (the names just asked about, one a line, whatever came of
    /// it), at most [`PLAN_NAMES_MAX`]; no plan when none is left. `scratch` holds the new
    /// text.
    ///
    /// After a list from nothing for a list with no entry yet (not a glossary), the plan keeps
    /// only the names an earlier such list named too (in the singular or the plural), in the
    /// order of the newest; when none did, its names are heard and the plan is dropped, so that
    /// the next cycle asks for a list again. The [`FIRST_LISTS_MAX`]-th is kept as it is.
    /// A list that goes on from the first names is read from the model's own names; whether it
    /// kept none decides whether the next one has the stored names closed
    /// ([`Product::closed`]), and after [`BARREN_LISTS_MAX`] such lists, starts from nothing.
    pub fn settle_plan(
        &mut self,
        working: &mut WorkingSet,
        done: &str,
        scratch: &mut FixedBuf,
        now: u64,
    ) -> Result<()> {
        let Ok(key) = normalize(PLAN_KEY) else { return Ok(()) };
        let Some(plan) = working.get(&key) else { return Ok(()) };
        // A list with no entry yet keeps only what an earlier list from nothing named too; one
        // that starts from nothing after lists that named nothing new is taken as it is.
        let first_list = !self.glossary && matches!(self.ask(), ProductAsk::Names { first: 1, .. });
        let restarted = first_list && self.barren >= BARREN_LISTS_MAX;
        let from_nothing = first_list && !restarted;
        let continuing = self.continues_list();
        // The names the model wrote: not the first names the ask gave it (the run rule reads its
        // own; two given names of one letter left a third of it no name to read).
        let given = if continuing { self.first.saturating_sub(1) as usize } else { 0 };
        let agreeing = from_nothing && self.lists_heard + 1 < FIRST_LISTS_MAX;
        scratch.clear();
        let head = plan.rfind(": ").and_then(|i| plan.get(..i + 2)).unwrap_or("");
        scratch.push_str(head)?;
        let mut kept = 0;
        let mut seen: ArrayVec<Word, PLAN_NAMES_MAX> = ArrayVec::new();
        for name in plan_names(after_given(plan, given)) {
            let mut tag = Word::new();
            if kept == PLAN_NAMES_MAX || done.lines().any(|d| name.eq_ignore_ascii_case(d)) || !self.is_free(name) {
                continue;
            }
            if !slug(name, &mut tag) || seen.iter().any(|s| *s == tag) {
                continue;
            }
            if agreeing && !self.heard.as_slice().contains(&heard_form(tag)) {
                continue;
            }
            let _ = seen.push(tag);
            scratch.push_str(if kept == 0 { "" } else { ", " })?;
            scratch.push_str(name)?;
            kept += 1;
        }
        if agreeing && kept == 0 {
            // Heard: the next cycle asks for a list again.
            for name in plan_names(plan) {
                let mut tag = Word::new();
                if slug(name, &mut tag) && !self.heard.as_slice().contains(&heard_form(tag)) {
                    let _ = self.heard.push(heard_form(tag));
                }
            }
            self.lists_heard += 1;
        } else if from_nothing {
            self.heard.clear();
            self.lists_heard = 0;
        }
        if continuing || restarted {
            self.barren = if kept == 0 { self.barren.saturating_add(1) } else { 0 };
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

    /// Derives the tags, the unit and the content words from the task text.
    fn derive(&mut self, task: &str) {
        self.tags.clear();
        self.words.clear();
        self.unit.clear();
        self.units.clear();
        self.title.clear();
        self.all_words.clear();
        self.domain.clear();
        self.glossary = false;
        self.asked.clear();
        self.retried.clear();
        self.names.clear();
        self.view_from = 0;
        self.key = None;
        let mut after_marker = false;
        for word in words(task) {
            let mut w = Word::new();
            for b in word.bytes() {
                let _ = w.push(b.to_ascii_lowercase() as char);
            }
            let lower = w.as_str();
            if !self.all_words.is_full() && !self.all_words.iter().any(|x| x.as_str() == lower) {
                let _ = self.all_words.push(w);
            }
            if UNIT_MARKERS.contains(&lower) {
                after_marker = self.unit.is_empty();
            }
            if lower.len() < 3 || STOPWORDS.binary_search(&lower).is_ok() || lower.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            if after_marker {
                self.unit = w;
                after_marker = false;
            }
            if !self.words.iter().any(|x| x.as_str() == lower) {
                let _ = self.words.push(w);
                if let Some(singular) = lower.strip_suffix('s').filter(|s| s.len() >= 3 && !s.ends_with('s')) {
                    if let Ok(s) = Word::try_from_str(singular) {
                        if !self.words.iter().any(|x| *x == s) {
                            let _ = self.words.push(s);
                        }
                    }
                }
            }
            if self.title.is_empty() {
                // The word's place in the task: `words` yields slices of it.
                let at = (word.as_ptr() as usize).saturating_sub(task.as_ptr() as usize);
                let rest = task.get(at..).unwrap_or("");
                let phrase = rest.split([':', '.', ';', '!', '?', '\n', ',']).next().unwrap_or("");
                let _ = self.title.push_str(crate::bytes::str_prefix(phrase.trim(), TITLE_MAX_BYTES));
            }
            if !self.tags.is_full() && !self.tags.iter().any(|t| t.as_str() == lower) {
                let _ = self.tags.push(w);
            }
        }
        if !self.tags.is_empty() {
            self.key = Key::from_tags(self.tags.iter().map(|t| t.as_str())).ok();
        }
        if self.unit.is_empty() {
            // No "one ... per entry": the title's last word, when it is not its form, names
            // what the entries are ("glossary of cooking terms").
            let last = self.title.as_str().rsplit(' ').next().unwrap_or("");
            let content = |w: &str| !w.is_empty() && !FORM_WORDS.iter().any(|f| f.eq_ignore_ascii_case(w));
            if self.title.as_str().split(' ').filter(|w| content(w)).count() >= 2 && content(last) {
                let one = last.strip_suffix('s').filter(|s| s.len() >= 3 && !s.ends_with('s')).unwrap_or(last);
                for c in one.chars() {
                    let _ = self.unit.push(c.to_ascii_lowercase());
                }
            }
        }
        let unit = if self.unit.is_empty() { "item" } else { self.unit.as_str() };
        self.glossary = GLOSSARY_UNITS.binary_search(&unit).is_ok()
            || self.title.as_str().split(' ').any(|w| GLOSSARY_FORMS.iter().any(|f| f.eq_ignore_ascii_case(w)));
        let _ = self.units.push_str(unit);
        write_plural(&mut self.units);
        for word in self.title.as_str().split(' ') {
            let lower = |list: &[&str]| list.iter().any(|f| f.eq_ignore_ascii_case(word));
            if word.is_empty()
                || lower(FORM_WORDS)
                || word.eq_ignore_ascii_case(unit)
                || word.eq_ignore_ascii_case(self.units.as_str())
            {
                continue;
            }
            let _ = self.domain.push_str(if self.domain.is_empty() { "" } else { " " });
            let _ = self.domain.push_str(word);
        }
        self.names.clear();
        self.first_names.clear();
        self.heard.clear();
        self.barren = 0;
        self.lists_heard = 0;
        self.write_prefix();
    }

    /// Writes the view into `out`: `<product>`, the names of the newest entries (oldest of them
    /// first, one a line: the head of each value, the text before `:`, or the value's first line
    /// cut at [`PRODUCT_ENTRY_MAX_BYTES`] when it has none), `</product>`; nothing when the
    /// product is inactive. Its lines take at most `max_bytes` (and never more than
    /// [`PRODUCT_VIEW_MAX_BYTES`]): entries that would pass it are left out, the oldest first.
    /// Remembers what it showed for [`Product::repeats`] and the ask, and, for a glossary with
    /// no free name in the plan, takes the next name from the words its definitions use.
    ///
    /// Names, not definitions: a small model asked to define a term with definitions in its
    /// prompt copies one of them (SmolLM2-135M: 16 of 18 definitions were copies of the view's
    /// first entry, 0 of 18 with the names alone).
    pub fn render(&mut self, store: &mut Store, out: &mut FixedBuf, max_bytes: usize) -> Result<()> {
        self.seen.clear();
        self.names.clear();
        self.candidates.clear();
        self.shown = 0;
        self.heading_bytes = 0;
        if !self.active() {
            return Ok(());
        }
        // The entries from the view's first on, counted newest first, then written oldest
        // first: the view only grows at its end, and a server's prompt cache keeps all of it.
        // When they no longer fit, the view starts again from the newest that fill half of it.
        // Its first line says what the product is, for the question that follows ("What are
        // Flour and Butter?"); it counts in the view's bytes, and goes first when they are few.
        let at = out.len();
        out.push_str("<product>\n")?;
        let line_at = out.len();
        out.format(format_args!("The {}:\n", self.title))?;
        let max_bytes = match max_bytes.min(PRODUCT_VIEW_MAX_BYTES).checked_sub(out.len() - line_at) {
            Some(left) => left,
            None => {
                out.truncate(line_at);
                0
            }
        };
        self.heading_bytes = out.len() - at;
        let mut ids: ArrayVec<EntryId, PRODUCT_VIEW_MAX_ENTRIES> = ArrayVec::new();
        if !self.view_ids(store, &mut ids, PRODUCT_VIEW_MAX_ENTRIES, max_bytes) {
            self.view_from = 0;
            ids.clear();
            self.view_ids(store, &mut ids, PRODUCT_VIEW_MAX_ENTRIES / 2, max_bytes / 2);
            // The oldest shown, or past the newest when none fits (a later entry starts it).
            self.view_from = match ids.as_slice().last() {
                Some(&id) => id,
                None => self.newest.ids().next().map_or(0, |id| id.saturating_add(1)),
            };
        }
        for &id in ids.as_slice().iter().rev() {
            let Ok(v) = store.value(id) else { continue };
            out.push_str(shown_line(v))?;
            out.push_str("\n")?;
            let _ = self.seen.push((normal_hash(head(v)), Words::of(v)));
            self.shown += 1;
            if let Some(name) = entry_name(v) {
                if self.names.is_full() {
                    self.names.remove(0);
                }
                let _ = self.names.push(name);
            }
        }
        // Read for a names ask only: a question, most cycles, has no use for them.
        self.first_names.clear();
        if let Some(key) = self.key.filter(|_| !self.glossary && self.next.is_empty()) {
            let q =
                Query { required: Some(key), max_results: FIRST_NAMES_SCAN, sort: Sort::Oldest, ..Query::default() };
            store.query(&q, &mut self.oldest);
            for id in self.oldest.ids() {
                if self.first_names.is_full() {
                    break;
                }
                if let Some(name) = store.value(id).ok().and_then(entry_name) {
                    let _ = self.first_names.push(name);
                }
            }
        }
        self.write_prefix();
        if self.glossary && self.next.is_empty() {
            // The words the definitions use, newest definition first, each counted once a
            // definition; the one most of them use is asked about next.
            for &id in ids.iter() {
                let Ok(v) = store.value(id) else { continue };
                let mut met: ArrayVec<Word, PRODUCT_CANDIDATES_MAX> = ArrayVec::new();
                phrase_heads(body(v), |w| {
                    if !met.iter().any(|m| *m == w) && self.is_free(w.as_str()) {
                        let _ = met.push(w);
                    }
                });
                for w in met.iter() {
                    match self.candidates.as_mut_slice().iter_mut().find(|(c, _)| c == w) {
                        Some((_, n)) => *n += 1,
                        None => {
                            let _ = self.candidates.push((*w, 1));
                        }
                    }
                }
            }
            // Only a word two definitions use: one that only the newest uses leads away from
            // the task, one definition at a time (SmolLM2-135M, cooking: Food, Ingredients,
            // Earth, Planet, Solarsystem, Industry, Beauty, Animal, Language, Horns). The words
            // most of them use, as many as a plan's names, asked about at once.
            // A word picked is counted out (the candidates are this render's own).
            for _ in 0..QUESTION_NAMES_MAX {
                let mut best: Option<&mut (Word, u32)> = None;
                for c in self.candidates.as_mut_slice().iter_mut().filter(|(_, n)| *n >= CANDIDATE_MIN_USES) {
                    if best.as_ref().is_none_or(|b| c.1 > b.1) {
                        best = Some(c);
                    }
                }
                let Some(best) = best else { break };
                best.1 = 0;
                let word = best.0;
                self.push_next(word.as_str());
            }
        }
        out.push_str("</product>\n")
    }

    /// Pushes to `ids` the newest product entries, newest first, back to the view's first
    /// ([`Product::view_from`]), at most `max` of them in `max_bytes` of lines. `false` when
    /// they do not all fit (`ids` then holds those that did, from the newest).
    fn view_ids(
        &self,
        store: &mut Store,
        ids: &mut ArrayVec<EntryId, PRODUCT_VIEW_MAX_ENTRIES>,
        max: usize,
        max_bytes: usize,
    ) -> bool {
        let mut bytes = 0;
        for id in self.newest.ids() {
            if id < self.view_from {
                break;
            }
            let len = match store.value(id) {
                Ok(v) => shown_line(v).len() + 1,
                Err(_) => continue,
            };
            if ids.len() >= max || bytes + len > max_bytes {
                return false;
            }
            bytes += len;
            let _ = ids.push(id);
        }
        true
    }

    /// Writes the ask, the prompt's last line, for a state that saves: the next entry of the
    /// product in its form (the first, when the view is empty).
    pub fn write_ask(&self, out: &mut FixedBuf) -> Result<()> {
        let unit = if self.unit.is_empty() { "item" } else { self.unit.as_str() };
        let n = self.names.len();
        if n == 0 {
            return out.format(format_args!(
                "Name one {} for the {} and say what it is in one sentence.\n",
                unit, self.title
            ));
        }
        write_and_list(out, self.names.iter().map(|n| n.as_str()))?;
        out.format(format_args!(
            " {} in the {}. Name one more {} and say what it is in one sentence.\n",
            if n == 1 { "is" } else { "are" },
            self.title,
            unit
        ))
    }

    /// Where a save under `key` with `value` is filed: a save under exactly the product's tags
    /// is an entry of the product, filed under those tags and its name's tag (the head of the
    /// value, the text before `:`, with ASCII letters lowercased and every run of other
    /// characters as one `_`: `Mise en place: ...` is `mise_en_place`). `Ok(None)`: not a
    /// product save, filed as written. `Err`: a product save with no usable name, and why.
    pub fn file(&self, key: &Key, value: &str) -> core::result::Result<Option<Key>, &'static str> {
        let Some(pkey) = self.key.as_ref().filter(|k| *k == key) else { return Ok(None) };
        let (head, sep, _) = split_entry(value);
        let mut name = Word::new();
        let named = slug(head, &mut name);
        if head.len() > TAG_MAX_BYTES && !named {
            return Err("the name before ':' is too long; name the entry in a few words");
        }
        if !sep || !named {
            return Err("write the entry as its name, a colon, then one sentence");
        }
        if self.words.iter().any(|w| *w == name) {
            return Err("its name is a word of the task itself; name one thing the task is about");
        }
        let named = normalize(name.as_str()).and_then(|n| pkey.union(&n));
        named.map(Some).map_err(|_| "the name before ':' cannot be a tag; name the entry in a few words")
    }

    /// Why `value`, the value of a save under the product's key `key`, is no entry a reader can
    /// use, if it is not: its text holds too few of the words every English sentence is built
    /// with (at least one in six of its words must be a stop word or a word that ends a
    /// phrase). What a drifting small model writes is made of none: "soglassar y crioloramón",
    /// "IRAJAZ AGAIN SAVES GROWL", "2019 Dec 31 2018 2019"; a definition is made of many ("a
    /// powder made by grinding grain"). Nor is a text in another language (two or more of its
    /// joining words, and no fewer English ones: "a la cena del gastronomic").
    pub fn unreadable(&self, key: &Key, value: &str) -> Option<&'static str> {
        let pkey = self.key.as_ref()?;
        name_of(key, pkey)?;
        let (mut all, mut joining, mut foreign) = (0usize, 0usize, 0usize);
        // Whole words, accents and all: cut at them, "alegrías" read as "alegr" and "as".
        for w in body(value).split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
            if made_up(w) {
                return Some("the text has a word no language writes; say in plain words what the name is");
            }
            all += 1;
            let mut lower = Word::new();
            for c in w.chars() {
                if lower.push(c.to_ascii_lowercase()).is_err() {
                    break;
                }
            }
            let l = lower.as_str();
            joining += usize::from(STOPWORDS.binary_search(&l).is_ok() || PHRASE_ENDS.binary_search(&l).is_ok());
            foreign += usize::from(FOREIGN_JOINING.binary_search(&l).is_ok());
        }
        if foreign >= FOREIGN_MIN && foreign >= joining {
            return Some("the text is not in English; say in plain English words what the name is");
        }
        (joining == 0 || joining * 6 < all)
            .then_some("the text is not a sentence a reader can follow; say in plain words what the name is")
    }

    /// Why a save of `key` with `value` would repeat the product, if it would: its name is the
    /// task's own word, its text is the task's words or its name's only, its head (the text
    /// before `:`) is a name the view shows, or its value, name and text together, is alike one
    /// of the view's entries (70% of their words shared). `None`: new.
    pub fn repeats(&self, key: &Key, value: &str) -> Option<&'static str> {
        let pkey = self.key.as_ref()?;
        if let Some(name) = name_of(key, pkey) {
            if self.words.iter().any(|w| w.as_str() == name) {
                return Some("its name is a word of the task itself; name one thing the task is about");
            }
        }
        // A text made only of the name's own words says nothing ("Chicken: Chicken Pots.").
        let name_words = |w: &str| words(head(value)).any(|h| h.eq_ignore_ascii_case(w));
        if split_entry(value).1 && words(body(value)).all(name_words) {
            return Some("the text only repeats the name; say what it is");
        }
        // An entry's text whose words of content are mostly the task's own is copied from it
        // ("a small glossary of cooking terms"). Only words of content count: counted with
        // "a", "of" and "with", which every task and every definition use, short true
        // definitions were refused ("Dish: a cooking dish with a ...": 4 of the 10 refusals
        // in two cooking runs).
        let (mut all, mut task) = (0, 0);
        for w in words(body(value)) {
            let mut lower = Word::new();
            if w.chars().any(|c| lower.push(c.to_ascii_lowercase()).is_err()) {
                all += 1;
                continue;
            }
            let l = lower.as_str();
            if STOPWORDS.binary_search(&l).is_ok() || PHRASE_ENDS.binary_search(&l).is_ok() {
                continue;
            }
            all += 1;
            task += usize::from(self.all_words.iter().any(|t| t.eq_ignore_ascii_case(w)));
        }
        if name_of(key, pkey).is_some() && all > 0 && task * 10 >= all * 7 {
            return Some("the text repeats the task; say what the entry's name is");
        }
        // The name is part of the entry: a text like another entry's under a new name is new
        // unless the two values are alike as a whole (the same text under another name is).
        let (h, v) = (normal_hash(head(value)), Words::of(value));
        if self.seen.iter().any(|(sh, sv)| sv.alike(&v) || (*sh == h && head(value).len() < value.len())) {
            return Some("<product> already says this; write something new");
        }
        None
    }

    /// Whether a save under `key` answers this cycle's question about several names: its value
    /// is their entries, one a line, and each line is an entry of its own.
    pub fn answers_several(&self, key: &Key) -> bool {
        self.key.as_ref() == Some(key) && matches!(self.ask(), ProductAsk::Define(names) if names.contains('\n'))
    }

    /// Remembers `value`, an entry of the product saved this cycle, for [`Product::repeats`]:
    /// the next entries of the same reply may not repeat it either (the oldest entry the view
    /// showed is forgotten when there is no room).
    pub fn saved(&mut self, value: &str) {
        if self.seen.is_full() {
            self.seen.remove(0);
        }
        let _ = self.seen.push((normal_hash(head(value)), Words::of(value)));
    }
}

/// Writes `items` as a reader lists them: "A", "A and B", "A, B and C".
fn write_and_list<'a>(out: &mut FixedBuf, items: impl Iterator<Item = &'a str> + Clone) -> Result<()> {
    let n = items.clone().count();
    for (i, item) in items.enumerate() {
        let sep = match i {
            0 => "",
            _ if i + 1 == n => " and ",
            _ => ", ",
        };
        out.format(format_args!("{}{}", sep, item))?;
    }
    Ok(())
}

/// The one tag of `key` besides the product's tags (`braise` of `braise,cooking,glossary`), if
/// the key is the product's tags and exactly one more.
fn name_of<'k>(key: &'k Key, product: &Key) -> Option<&'k str> {
    if key.tag_count() != product.tag_count() + 1 || !product.tags().all(|t| key.has_tag(t)) {
        return None;
    }
    key.tags().find(|t| !product.has_tag(t))
}

/// Whether `word` is written as no language writes a word: one letter three times in a row
/// ("jimjjj"), but for capitals ("Henry III", "XXL") and "www". A small model asked about a
/// made-up name runs its letters on so ("Biggsii: a kjiek ji-bjjik jibjiszwadzjisjimjjj."): 11
/// texts of the 5,259 stored in this project's SmolLM2-135M runs, and no other text had such a
/// word. Digits are no letters ("1000").
fn made_up(word: &str) -> bool {
    let b = word.as_bytes();
    let thrice = |t: &[u8]| match t {
        [x, y, z] => x.is_ascii_alphabetic() && x.eq_ignore_ascii_case(y) && y.eq_ignore_ascii_case(z),
        _ => false,
    };
    !word.eq_ignore_ascii_case("www") && b.iter().any(u8::is_ascii_lowercase) && b.windows(3).any(thrice)
}

/// Adds `word*` to the names taken: no new name starts with the letters of `word`.
fn take_start(taken: &mut ArrayVec<Word, PRODUCT_TAKEN_MAX>, word: &str) {
    let mut w = Word::new();
    if w.push_str(word).is_ok() && w.push('*').is_ok() {
        let _ = taken.push(w);
    }
}

/// The singular of a plural name in -s ("lions", not "bus" nor "glass"), if it is one.
fn singular(name: &str) -> Option<&str> {
    name.strip_suffix('s').filter(|s| s.len() >= 3 && !s.ends_with('s'))
}

/// The name of an entry of the product: the head of `value`, trimmed and cut at
/// [`TITLE_MAX_BYTES`]; none when it is empty or the whole value (no `:`).
fn entry_name(value: &str) -> Option<ArrayString<TITLE_MAX_BYTES>> {
    let name = crate::bytes::str_prefix(head(value).trim(), TITLE_MAX_BYTES);
    (!name.is_empty() && name.len() < value.len()).then(|| ArrayString::try_from_str(name).unwrap_or_default())
}

/// Makes the word in `w` plural as English mostly does: "city" and "cities", "dish" and
/// "dishes", "toy" and "toys"; a word in -s is taken as plural already ("terms"). A word with
/// no room left stays as it is.
fn write_plural(w: &mut Word) {
    let s = w.as_str();
    if s.ends_with('s') {
        return;
    }
    let stem = s.strip_suffix('y').filter(|b| !b.is_empty() && !b.ends_with(['a', 'e', 'i', 'o', 'u']));
    let sibilant = ["x", "z", "ch", "sh"].iter().any(|e| s.ends_with(e));
    let mut out = Word::new();
    let ok = match stem {
        Some(b) => out.push_str(b).is_ok() && out.push_str("ies").is_ok(),
        None => out.push_str(s).is_ok() && out.push_str(if sibilant { "es" } else { "s" }).is_ok(),
    };
    if ok {
        *w = out;
    }
}

/// A name's tag as lists are compared by it: in the singular (`lion` for `lions`).
fn heard_form(tag: Word) -> Word {
    singular(tag.as_str()).and_then(|s| Word::try_from_str(s).ok()).unwrap_or(tag)
}

/// Adds `word_` to the names taken: no new name starts with `word`.
fn take_word(taken: &mut ArrayVec<Word, PRODUCT_TAKEN_MAX>, word: &str) {
    let mut w = Word::new();
    if w.push_str(word).is_ok() && w.push('_').is_ok() {
        let _ = taken.push(w);
    }
}

/// The words of `text`: runs of ASCII letters and digits (other characters separate).
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty() && w.len() <= TAG_MAX_BYTES)
}

/// The names of a plan's value: the list after its last `": "` or heading's `":\n"` (or all of it), one name a line
/// or between commas, each without its number (`3. Roux`) and without a last word that ends a
/// phrase (`Lions and`: a small model goes on writing prose), trimmed, empty ones left out, and
/// none whose first [`RUN_LETTERS`] letters the two names before it (as written) share.
fn plan_names(plan: &str) -> impl Iterator<Item = &str> {
    let list = match plan.rfind(": ").into_iter().chain(plan.rfind(":\n")).max() {
        Some(i) => plan.get(i + 2..).unwrap_or(""),
        None => plan,
    };
    list.split([',', '\n'])
        .map(|n| {
            let n = n.trim();
            let digits = n.bytes().take_while(u8::is_ascii_digit).count();
            let n = match n.get(digits..).and_then(|rest| rest.strip_prefix('.')) {
                Some(rest) if digits > 0 => rest.trim(),
                _ => n,
            };
            match n.rsplit_once(' ') {
                Some((rest, last))
                    if PHRASE_ENDS.binary_search(&last).is_ok() || STOPWORDS.binary_search(&last).is_ok() =>
                {
                    rest.trim_end()
                }
                _ => n,
            }
        })
        .filter(|n| !n.is_empty())
        .scan(["", ""], |before, n| {
            let alike = |b: &str| {
                matches!((b.get(..RUN_LETTERS), n.get(..RUN_LETTERS)), (Some(x), Some(y)) if x.eq_ignore_ascii_case(y))
            };
            let run = before.iter().all(|b| alike(b));
            *before = [before[1], n];
            Some((!run).then_some(n))
        })
        .flatten()
}

/// `plan` less the first `given` names of its numbered list, which the ask gave the model.
fn after_given(plan: &str, given: usize) -> &str {
    let Some(i) = plan.find(":\n").filter(|_| given > 0) else { return plan };
    let mut rest = plan.get(i + 2..).unwrap_or("");
    for _ in 0..given {
        rest = rest.split_once('\n').map_or("", |(_, r)| r);
    }
    rest
}

/// The tag of a name as the agent files it: ASCII letters and digits lowercased, every run of
/// other characters one `_`, none at either end. False when it does not start with a letter or
/// does not fit a tag.
fn slug(name: &str, out: &mut Word) -> bool {
    out.clear();
    let mut gap = false;
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() {
            if gap && !out.is_empty() && out.push('_').is_err() {
                return false;
            }
            gap = false;
            if out.push(c.to_ascii_lowercase()).is_err() {
                return false;
            }
        } else {
            gap = true;
        }
    }
    out.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
}

/// The head of a value: the text before its first `:` (all of it when there is none).
fn head(value: &str) -> &str {
    split_entry(value).0
}

/// The body of a value: the text after its first `:` (all of it when there is none).
fn body(value: &str) -> &str {
    match split_entry(value) {
        (_, true, rest) => rest,
        (all, false, _) => all,
    }
}

/// A value split at its first `:`: the head, whether there was one, the rest.
fn split_entry(value: &str) -> (&str, bool, &str) {
    match value.split_once(':') {
        Some((h, rest)) => (h, true, rest),
        None => (value, false, ""),
    }
}

/// A value as one line of the view: its first line, cut at [`PRODUCT_ENTRY_MAX_BYTES`] at a
/// character boundary.
fn line(value: &str) -> &str {
    let first = value.trim().lines().next().unwrap_or("");
    crate::bytes::str_prefix(first, PRODUCT_ENTRY_MAX_BYTES)
}

/// What the view shows of a value: its head (the name), or its first line when it has none.
fn shown_line(value: &str) -> &str {
    match split_entry(value) {
        (h, true, _) if !h.trim().is_empty() => crate::bytes::str_prefix(h.trim(), PRODUCT_ENTRY_MAX_BYTES),
        _ => line(value),
    }
}

/// Most tokens (words and signs) of a definition [`phrase_heads`] reads; the rest is left out.
const HEAD_TOKENS_MAX: usize = 96;

/// Calls `f` with each word of `text` that ends a noun phrase and could name an entry of its
/// own, lowercased: a word of small letters ([`NAME_WORD_MAX_LETTERS`] at most, with a vowel)
/// followed by a sign, the end of the text or a word that ends a phrase ([`PHRASE_ENDS`]:
/// "made with *flour* and *butter*."), and not a word that names nothing ([`STOPWORDS`],
/// [`GENERIC_WORDS`], [`NOT_NAMES`], [`NOT_NOUN_ENDINGS`]). Before `and`, `or` or a comma, the
/// next word must end a phrase too: "*flour* and *water* used" are both names, "sweet and
/// creamy dessert" holds none but "dessert". Capitalised words are left out: a proper name in
/// a definition is a place or a people more often than a term.
fn phrase_heads(text: &str, mut f: impl FnMut(Word)) {
    // The tokens: words of letters (with `'` or `-` inside), and single signs; each with
    // whether it is a word.
    let mut tokens: ArrayVec<(&str, bool), HEAD_TOKENS_MAX> = ArrayVec::new();
    let mut rest = text;
    while !tokens.is_full() {
        rest = rest.trim_start_matches([' ', '\t', '\n', '\r']);
        let Some(c) = rest.chars().next() else { break };
        let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-')).unwrap_or(rest.len());
        let at = if end == 0 { c.len_utf8() } else { end };
        let _ = tokens.push((rest.get(..at).unwrap_or(""), end > 0));
        rest = rest.get(at..).unwrap_or("");
    }
    let t = tokens.as_slice();
    // Whether the token at `i` (past the end: the end of the text) ends a phrase.
    let ends = |i: usize| match t.get(i) {
        None | Some((_, false)) => true,
        Some((w, true)) => PHRASE_ENDS.binary_search(w).is_ok(),
    };
    // Whether the token at `i` joins two phrases.
    let joins = |i: usize| matches!(t.get(i), Some((",", false) | ("and" | "or", true)));
    for (i, &(word, is_word)) in t.iter().enumerate() {
        if !is_word || !ends(i + 1) {
            continue;
        }
        // Past the joining words, commas and adverbs ("butter, and sometimes eggs").
        let adverb = |j: usize| matches!(t.get(j), Some((w, true)) if w.ends_with("ly") || GENERIC_WORDS.binary_search(w).is_ok());
        let mut j = i + 1;
        while joins(j) || (j > i + 1 && adverb(j)) {
            j += 1;
        }
        // Joined to a word that does not end a phrase: a modifier of that phrase's head ("sweet
        // and creamy dessert"), unless a participle starts a clause there ("chili, served in").
        if j > i + 1 && matches!(t.get(j), Some((w, true)) if !w.ends_with("ed")) && !ends(j + 1) {
            continue;
        }
        if let Some(w) = term_word(word) {
            f(w);
        }
    }
}

/// `word` lowercased if it could name an entry (see [`phrase_heads`]).
fn term_word(word: &str) -> Option<Word> {
    let b = word.as_bytes();
    let ok = (3..=NAME_WORD_MAX_LETTERS).contains(&b.len())
        && b.iter().all(u8::is_ascii_lowercase)
        && b.iter().any(|c| b"aeiouy".contains(c));
    if !ok {
        return None;
    }
    let one = word.strip_suffix('s').filter(|s| s.len() >= 3).unwrap_or(word);
    let listed = |list: &[&str]| list.binary_search(&word).is_ok() || list.binary_search(&one).is_ok();
    if listed(STOPWORDS) || listed(GENERIC_WORDS) || listed(PHRASE_ENDS) || NOT_NAMES.binary_search(&word).is_ok() {
        return None;
    }
    if NOT_NOUN_ENDINGS.iter().any(|e| word.ends_with(e) && word.len() > e.len() + 2) {
        return None;
    }
    Word::try_from_str(word).ok()
}

/// FNV-1a of `text`'s words, lowercased, one space between: equal for texts that differ only in
/// case, spacing and punctuation.
fn normal_hash(text: &str) -> u64 {
    let mut h = fnv1a64(b"");
    for w in words(text) {
        for b in w.bytes() {
            h = fnv1a64_continue(h, &[b.to_ascii_lowercase()]);
        }
        h = fnv1a64_continue(h, b" ");
    }
    h
}

/// Most words of a text kept to compare it with another (its first distinct ones).
const TEXT_WORDS_MAX: usize = 24;

/// The distinct words of a text (the first [`TEXT_WORDS_MAX`]), as sorted FNV-1a hashes of their
/// lowercased letters, to tell a copy that differs in a word or two from a new text.
#[derive(Clone, Copy, Debug, Default)]
struct Words(ArrayVec<u32, TEXT_WORDS_MAX>);

impl Words {
    fn of(text: &str) -> Words {
        let mut w = ArrayVec::new();
        for word in words(text) {
            let h = normal_hash(word) as u32;
            if !w.is_full() && !w.iter().any(|&x| x == h) {
                let _ = w.push(h);
            }
        }
        w.as_mut_slice().sort_unstable();
        Words(w)
    }

    /// Whether the two share at least 70% of their words (Jaccard): one is a near copy of the
    /// other ("a Japanese dish made with kimchi" and "Japanese dish made with kimchi").
    fn alike(&self, other: &Words) -> bool {
        let (a, b) = (self.0.as_slice(), other.0.as_slice());
        if a.is_empty() || b.is_empty() {
            return a == b;
        }
        let shared = a.iter().filter(|x| b.binary_search(x).is_ok()).count();
        shared * 10 >= (a.len() + b.len() - shared) * 7
    }
}

/// Removes adjacent duplicates of a sorted list.
fn dedup(list: &mut ArrayVec<Word, PRODUCT_TAKEN_MAX>) {
    let mut prev: Option<Word> = None;
    list.retain(|w| {
        let keep = prev.as_ref() != Some(w);
        prev = Some(*w);
        keep
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product_for(task: &str) -> Product {
        let mut p = Product::new();
        p.derive(task);
        p
    }

    /// The view stays within its bounds for any store: random product entries (long, short,
    /// several lines, multi-byte text, names that are and are not tags) and random byte
    /// budgets; the taken names stay sorted and distinct, within their bounds.
    #[test]
    fn the_view_stays_within_its_bounds_for_any_store() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let pieces = ["a", "é", "考え", " ", "\n", ":", "sear", "braise ", "x".repeat(90).leak()];
        for case in 0..12 {
            let dir = crate::testing::temp_dir("product-view");
            let mut store = Store::open_with_capacity(&dir, 4096).unwrap();
            let mut working = WorkingSet::new();
            working.add(&normalize("task").unwrap(), "A glossary of cooking terms, one term per entry.", 1).unwrap();
            for i in 0..(next() % 400) {
                let mut value = format!("Name{}: ", i);
                for _ in 0..(next() % 40) {
                    value.push_str(pieces[(next() % pieces.len() as u64) as usize]);
                }
                let key = if next() % 5 == 0 {
                    format!("cooking,glossary,n{i},extra")
                } else {
                    format!("cooking,glossary,n{i}")
                };
                store.put(&normalize(&key).unwrap(), value.trim(), 1).unwrap();
            }
            let mut p = Product::new();
            p.refresh(&working, Some(&store));
            let taken: Vec<&str> = p.taken().collect();
            assert!(taken.windows(2).all(|w| w[0] < w[1]), "case {case}: {taken:?}");
            // What the grammar pays for: a rule per node of the names' trie (a distinct
            // prefix). The stored names' part is bounded; the task's words and the words that
            // name nothing are there with an empty store too.
            let nodes = |names: &[&str]| {
                let mut prefixes = std::collections::BTreeSet::new();
                for n in names {
                    for i in 1..=n.len() {
                        prefixes.insert(&n[..i]);
                    }
                }
                prefixes.len()
            };
            let mut fixed = Product::new();
            let empty_dir = crate::testing::temp_dir("product-view-empty");
            let empty = Store::open_with_capacity(&empty_dir, 8).unwrap();
            fixed.refresh(&working, Some(&empty));
            let fixed: Vec<&str> = fixed.taken().collect();
            let _ = std::fs::remove_dir_all(&empty_dir);
            assert!(taken.len() <= PRODUCT_TAKEN_MAX);
            assert!(nodes(&taken) <= nodes(&fixed) + PRODUCT_TAKEN_MAX_CHARS, "case {case}: {}", nodes(&taken));
            for max in [0, 1, 100, 2000, 1 << 20] {
                let mut out = FixedBuf::with_capacity("view", 64 * 1024);
                p.render(&mut store, &mut out, max).unwrap();
                let text = out.as_str().expect("the view is text");
                let body = text.strip_prefix("<product>\n").and_then(|t| t.strip_suffix("</product>\n")).unwrap();
                assert!(body.len() <= max.min(PRODUCT_VIEW_MAX_BYTES), "case {case}, max {max}: {} bytes", body.len());
                // The heading, when the bytes hold it, then the names.
                let heading = format!("The {}:\n", p.title.as_str());
                let names = body.strip_prefix(heading.as_str());
                assert_eq!(names.is_some(), heading.len() <= max.min(PRODUCT_VIEW_MAX_BYTES), "case {case}, max {max}");
                let lines: Vec<&str> = names.unwrap_or(body).lines().collect();
                assert!(lines.len() <= PRODUCT_VIEW_MAX_ENTRIES && lines.len() == p.shown());
                assert!(lines.iter().all(|l| l.len() <= PRODUCT_ENTRY_MAX_BYTES && !l.is_empty()), "{lines:?}");
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    #[test]
    fn word_lists_are_sorted() {
        for list in [STOPWORDS, NOT_NAMES, GLOSSARY_UNITS, GLOSSARY_FORMS, PHRASE_ENDS, GENERIC_WORDS, FOREIGN_JOINING]
        {
            assert!(list.windows(2).all(|w| w[0] < w[1]), "{list:?}");
        }
        // A foreign word is no English one that counts for a sentence.
        for w in FOREIGN_JOINING {
            assert!(!STOPWORDS.contains(w) && !PHRASE_ENDS.contains(w), "{w}");
        }
    }

    fn heads(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        phrase_heads(text, |w| out.push(w.as_str().to_string()));
        out
    }

    /// The words a definition offers as terms are the heads of its noun phrases (measured on
    /// SmolLM2-135M's definitions), not its adjectives, verbs, adverbs or names of places.
    #[test]
    fn a_definition_offers_the_heads_of_its_phrases() {
        assert_eq!(
            heads(" a traditional French recipe made with flour, butter, and sometimes eggs that is often used in soups and stews."),
            ["recipe", "flour", "butter", "eggs", "soups", "stews"]
        );
        assert_eq!(
            heads("a cooking technique that involves removing the skin of vegetables by steam or oil before they are added to food."),
            ["technique", "skin", "vegetables", "steam", "oil", "food"]
        );
        assert_eq!(heads("a crucial ingredient in the world of baking."), ["ingredient", "baking"]);
        assert_eq!(heads("a large bird of prey that is native to Africa."), ["bird", "prey"]);
        assert_eq!(heads("lions, elephants, giraffes, and many others."), ["lions", "elephants", "giraffes"]);
        assert!(heads("").is_empty() && heads(",.;").is_empty() && heads("考え、ok.").is_empty());
        assert_eq!(heads("a dessert.考え"), ["dessert"]);
        // Before "and", "or" or a comma, the next word must end a phrase too.
        assert_eq!(heads("a sweet and delicious drink made with milk."), ["drink", "milk"]);
        assert_eq!(heads("food and drinks."), ["food", "drinks"]);
        assert_eq!(heads("salt, pepper or chili, served in a bowl."), ["salt", "pepper", "chili", "bowl"]);
        // What definitions of anything are ("a food *item*", "a food *product*") is no term: asked
        // about, SmolLM2-135M wrote "Item: an ingredient that is used in cooking." and
        // "Product: an item of food that is made fromedrawing."
        assert_eq!(heads("a food item made with bread and cheese."), ["bread", "cheese"]);
        assert_eq!(heads("an international food product made with fish and seafood."), ["fish", "seafood"]);
    }

    #[test]
    fn a_glossary_asks_next_about_what_its_definitions_use_most() {
        let dir = crate::testing::temp_dir("product-next");
        let mut store = Store::open_with_capacity(&dir, 64).unwrap();
        let mut working = WorkingSet::new();
        let task = "Build a small glossary of cooking terms: save one term per entry, with a definition.";
        working.add(&normalize("task").unwrap(), task, 1).unwrap();
        let put = |store: &mut Store, k: &str, v: &str| store.put(&normalize(k).unwrap(), v, 1).unwrap();
        put(&mut store, "cooking,glossary,roux", "Roux: a mixture of flour and fat used to thicken sauces.");
        put(&mut store, "cooking,glossary,batter", "Batter: a liquid made from flour and water used in baking.");
        put(&mut store, "cooking,glossary,flour", "Flour: a powder made by grinding grain.");
        let mut p = Product::new();
        let mut out = FixedBuf::with_capacity("view", 64 * 1024);
        p.refresh(&working, Some(&store));
        assert!(p.glossary);
        p.render(&mut store, &mut out, 1 << 20).unwrap();
        // What it is, then names only, oldest first.
        assert_eq!(
            out.as_str().unwrap(),
            "<product>\nThe glossary of cooking terms:\nRoux\nBatter\nFlour\n</product>\n"
        );
        // "flour" is taken; of the free words, none is used twice: names are asked for.
        assert_eq!(p.ask(), ProductAsk::Names { key: PLAN_KEY, prefix: "Common cooking terms:\n1. ", first: 1 });
        let mut q = FixedBuf::with_capacity("ask", 256);
        p.write_question(p.ask(), &mut q).unwrap();
        assert_eq!(q.as_str().unwrap(), "Name five common cooking terms.\n");
        // A word two definitions use is asked about.
        put(&mut store, "cooking,glossary,gravy", "Gravy: a sauce of water and fat, with grains.");
        p.refresh(&working, Some(&store));
        out.clear();
        p.render(&mut store, &mut out, 1 << 20).unwrap();
        assert_eq!(p.ask(), ProductAsk::Define("Water"));
        // A list is not a glossary: its names come from the model.
        let mut list = Product::new();
        working.add(&normalize("task").unwrap(), "Make a list of African animals: one animal per entry.", 2).unwrap();
        list.refresh(&working, Some(&store));
        out.clear();
        list.render(&mut store, &mut out, 1 << 20).unwrap();
        assert!(!list.glossary && matches!(list.ask(), ProductAsk::Names { .. }));
        // A list's names ask goes on with its items; a glossary's starts under its heading.
        put(&mut store, "african,animals,lion", "Lion: a big cat of the savanna.");
        put(&mut store, "african,animals,zebra", "Zebra: a horse with stripes.");
        list.refresh(&working, Some(&store));
        out.clear();
        list.render(&mut store, &mut out, 1 << 20).unwrap();
        assert_eq!(
            list.ask(),
            ProductAsk::Names { key: PLAN_KEY, prefix: "Common African animals:\n1. Lion\n2. Zebra\n3. ", first: 3 }
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A plan the model wrote as a numbered list is read name by name, without numbers or a
    /// last word that ends a phrase; what is free follows the task and the stored names.
    #[test]
    fn a_numbered_plan_is_read_name_by_name() {
        let names: Vec<&str> = plan_names("1. Elephant\n2. Lions and\n3. Cape buffalo\n4.  \n10. Okapi").collect();
        assert_eq!(names, ["Elephant", "Lions", "Cape buffalo", "Okapi"]);
        let names: Vec<&str> = plan_names("Some cooking terms: Roux, Braise").collect();
        assert_eq!(names, ["Roux", "Braise"]);
        let names: Vec<&str> = plan_names("African animals:\n1. Zebra\n2. Okapi").collect();
        assert_eq!(names, ["Zebra", "Okapi"]);
        let dir = crate::testing::temp_dir("product-free");
        let mut store = Store::open_with_capacity(&dir, 64).unwrap();
        let working = animals_task();
        store.put(&normalize("african,animals,lion").unwrap(), "Lion: a big cat.", 1).unwrap();
        store.put(&normalize("african,animals,gorillas").unwrap(), "Gorillas: big apes.", 1).unwrap();
        store.put(&normalize("african,animals,bats").unwrap(), "Bats: they fly.", 1).unwrap();
        let mut p = Product::new();
        p.refresh(&working, Some(&store));
        // A word of the task's content is the start of no name, as letters ("Africanus",
        // "Animalia"), nor are all its words, nor its empty words.
        assert!(p.is_free("Zebra") && p.is_free("Afric") && p.is_free("Anima"));
        for compound in ["Africanus", "African elephant", "Animalia"] {
            assert!(!p.is_free(compound), "{compound}");
        }
        for copied in [
            "African animals",
            "Animal",
            "List of birds",
            "One zebra",
            "The zebra",
            "Thelil",
            "Zebra and",
            "Lions",
            "Lion cub",
            "Lionel",
            "Gorilla",
            "Gorillaines",
            "Bat",
            "Bats",
        ] {
            assert!(!p.is_free(copied), "{copied}");
        }
        // What the grammar's trie is made of: a stored name, "the" and the task's words of
        // content (in the singular) as letters no name starts with, the task's empty words as
        // first words, its words exactly.
        let taken: Vec<&str> = p.taken().collect();
        assert!(p.is_free("Bath") && p.is_free("Batty"));
        for t in ["lion*", "gorilla*", "bats*", "bat", "the*", "one_", "african", "african*", "animal*"] {
            assert!(taken.contains(&t), "{t}: {taken:?}");
        }
        for t in ["lion", "lions", "lion_", "gorillas*", "bat*", "african_", "animals*"] {
            assert!(!taken.contains(&t), "{t}: {taken:?}");
        }
        // A name asked about is not free again, in the plural either.
        p.asked("Zebra");
        assert!(!p.is_free("Zebra") && !p.is_free("Zebras") && p.is_free("Zebu"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A small model that runs through the letters of a name writes names that start alike, one
    /// after another ("Ophira, Ozonope, Ozaazo, Ozotika, Ozeanos"; "Fizzle, Fizzy, Fizzie"): the
    /// plan reads a run of them no further than its second name.
    #[test]
    fn a_run_of_names_that_start_alike_is_read_to_its_second() {
        let names: Vec<&str> = plan_names(
            "Common African animals:\n1. Lions\n2. Ophira\n3. Ozonope\n4. Ozaazo\n5. Ozotika\n6. Ozeanos\n7. Zebra",
        )
        .collect();
        assert_eq!(names, ["Lions", "Ophira", "Ozonope", "Zebra"]);
        let names: Vec<&str> = plan_names("Common cooking terms: Fizzle, fizzy, Fizzie, Fizz, Flour, Butter").collect();
        assert_eq!(names, ["Fizzle", "fizzy", "Butter"]);
        // A run of a first letter only: a third name in a row is seldom a real one.
        let names: Vec<&str> =
            plan_names("Common African animals:\n1. Zerithi\n2. Zutora\n3. Zunibenja\n4. Zwekara\n5. Lions").collect();
        assert_eq!(names, ["Zerithi", "Zutora", "Lions"]);
        let names: Vec<&str> =
            plan_names("Common African animals:\n1. Lions\n2. Leopards\n3. Lemurs\n4. Baboons\n5. Bats\n6. Bees")
                .collect();
        assert_eq!(names, ["Lions", "Leopards", "Baboons", "Bats"]);
        // Read again as the plan is rewritten (the names kept, between commas), it stays.
        assert_eq!(plan_names("Names: Ophira, Ozonope, Zebra").count(), 3);
        assert_eq!(plan_names("Names: Lions, Leopards, Baboons, Bats").count(), 4);
    }

    #[test]
    fn tags_unit_and_words_come_from_the_task() {
        let p = product_for(
            "Build a small glossary of cooking terms: save one term per entry to storage, with a one-sentence definition.",
        );
        assert_eq!(p.key().map(|k| k.as_str()), Some("cooking,glossary"));
        assert_eq!(p.unit.as_str(), "term");
        assert_eq!(p.title.as_str(), "glossary of cooking terms");
        let words: Vec<&str> = p.words.iter().map(|w| w.as_str()).collect();
        assert_eq!(words, ["glossary", "cooking", "terms", "term", "sentence", "definition"]);
        let none = product_for("Do it.");
        assert!(!none.active());
    }

    /// The unit's plural is written as English writes it, so that the list's heading and its
    /// question say what the title says once ("Common European capital cities:", not "Common
    /// European capital cities citys:", which SmolLM2-135M was asked to go on with).
    #[test]
    fn the_units_are_the_plural_english_writes() {
        for (task, units, prefix) in [
            (
                "Make a list of European capital cities: save one city per entry, with one sentence about it.",
                "cities",
                "Common European capital cities:\n1. ",
            ),
            ("Make a list of kitchen tools: one dish per entry.", "dishes", "Common kitchen tools dishes:\n1. "),
            ("Make a list of toys: one toy per entry.", "toys", "Common toys:\n1. "),
            ("Make a list of African animals: one animal per entry.", "animals", "Common African animals:\n1. "),
        ] {
            let p = product_for(task);
            assert_eq!((p.units.as_str(), p.prefix.as_str()), (units, prefix), "{task}");
        }
    }

    #[test]
    fn a_product_save_is_filed_under_its_name() {
        let p = product_for("A glossary of cooking terms, one term per entry.");
        let key = |s: &str| normalize(s).unwrap();
        let filed = |k: &str, v: &str| p.file(&key(k), v).map(|o| o.map(|k| k.as_str().to_string()));
        assert_eq!(
            filed("cooking,glossary", "Mise en place: all set out."),
            Ok(Some("cooking,glossary,mise_en_place".into()))
        );
        assert_eq!(filed("glossary,cooking", "Sous-vide : in a bath."), Ok(Some("cooking,glossary,sous_vide".into())));
        assert!(filed("cooking,glossary", "no colon here").is_err());
        assert!(filed("cooking,glossary", "1st: a number first").is_err());
        assert!(filed("cooking,glossary", ": nothing before").is_err());
        assert!(filed("cooking,glossary", &format!("{}: too long", "x".repeat(80))).is_err());
        // Not the product's tags exactly: filed as written.
        assert_eq!(filed("cooking,glossary,sear", "Sear: brown it."), Ok(None));
        assert_eq!(filed("notes", "a: b"), Ok(None));
    }

    #[test]
    fn repeats_are_found_by_name_head_and_value() {
        let mut p = product_for("A glossary of cooking terms, one term per entry.");
        let _ =
            p.seen.push((normal_hash("braise"), Words::of("braise: a Japanese dish made with kimchi and pork belly")));
        let key = |s: &str| normalize(s).unwrap();
        assert!(p.repeats(&key("cooking,glossary,terms"), "terms: making food").is_some());
        assert!(p.file(&key("cooking,glossary"), "Cooking: making food").is_err());
        assert!(p.repeats(&key("cooking,glossary,braising"), "Braise : something else").is_some());
        assert!(p.repeats(&key("cooking,glossary,other"), "BRAISE: something else entirely").is_some());
        assert!(p
            .repeats(&key("cooking,glossary,jianjen"), "Jianjen: Japanese dish made with kimchi and pork belly.")
            .is_some());
        // A text of the name's words only says nothing.
        assert!(p.repeats(&key("cooking,glossary,chicken_pot"), "Chicken pot: pot chicken.").is_some());
        // A value with no name is not judged by its name.
        assert!(p.repeats(&key("notes"), "first").is_none());
        // Another name with the same text is a copy too.
        assert!(p
            .repeats(&key("cooking,glossary,stew"), "Stew: A JAPANESE dish, made with kimchi and pork belly!")
            .is_some());
        assert!(p.repeats(&key("cooking,glossary,sear"), "sear: to brown the surface").is_none());
        // Not a product key: only the value checks apply.
        assert!(p.repeats(&key("notes"), "sear: to brown").is_none());
        assert!(p.repeats(&key("notes"), "a glossary of cooking terms.").is_none());
        // A text of the task's own words is copied from it.
        assert!(p.repeats(&key("cooking,glossary,whisk"), "Whisk: a glossary of cooking terms.").is_some());
        assert!(p.repeats(&key("cooking,glossary,whisk"), "Whisk: a tool of wire loops to beat eggs.").is_none());
        // Only words of content count: "a", "of", "with" and "per" are the task's words too.
        assert!(p.repeats(&key("cooking,glossary,dish"), "Dish: a cooking dish with a sauce.").is_none());
        assert!(p.repeats(&key("cooking,glossary,dish"), "Dish: a term of cooking, one per entry.").is_some());
    }

    /// The name is part of an entry: a new name whose text is like another entry's but for a
    /// word or two is a new entry (the view shows names only, so the model did not copy the
    /// text; a small model's sentences about animals are alike: SmolLM2-135M's "Leopards: a
    /// big cat that lives in Africa." after "Zebra: a big animal that lives in Africa." was
    /// refused, and Leopards never asked again); the same text under a new name is a copy.
    #[test]
    fn a_new_name_with_a_text_like_another_entrys_is_a_new_entry() {
        let stored =
            ["Zebra: a big animal that lives in Africa.", "Turtles: a big group of animals that live in the sea."];
        let (dir, mut store, mut p) = animals_with("product-alike", &stored.map(String::from));
        let key = |s: &str| normalize(s).unwrap();
        let mut out = FixedBuf::with_capacity("view", 4096);
        p.render(&mut store, &mut out, 4096).unwrap();
        let new = [
            ("african,animals,leopards", "Leopards: a big cat that lives in Africa."),
            ("african,animals,dolphins", "Dolphins: a large group of animals that live in the sea."),
        ];
        for (k, v) in new {
            assert_eq!(p.repeats(&key(k), v), None, "{v}");
        }
        let copies = [
            ("african,animals,gazelle", "Gazelle: a big animal that lives in Africa."),
            ("african,animals,zebra", "Zebra: a big animal of Africa."),
        ];
        for (k, v) in copies {
            assert!(p.repeats(&key(k), v).is_some(), "{v}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// An acronym is a name to ask about, with a vowel or without: a glossary of networking
    /// terms is made of them ("TCP", "HTTP", "DNS"), and the grammar lets a list write them;
    /// small letters with no vowel are still a small model's run-on consonants.
    #[test]
    fn an_acronym_without_a_vowel_is_a_name() {
        let p = product_for("Build a small glossary of networking terms: one term per entry.");
        for name in ["TCP", "HTTP", "DNS", "SMTP", "BBQ"] {
            assert!(p.is_free(name), "{name}");
        }
        for name in ["Tcp", "Jrjbjhkzfjnjl", "X"] {
            assert!(!p.is_free(name), "{name}");
        }
        // Capitals of more than four are a shouted word, no acronym (a list writes them whole).
        for name in ["CHOLESTEROL", "DINNER", "ALMOST"] {
            assert!(!p.is_free(name), "{name}");
        }
    }

    /// An acronym whose first two letters start a stored name is no name to ask about: the
    /// grammar lets no list write one ("its second letter not one a taken name has next"), and a
    /// list that wrote several in a row before any was stored ("CHOL, CHEM, CHAR", "AACA, AACB,
    /// AADA": SmolLM2-135M in 2 cooking runs of 6) had every one asked, a cycle each.
    #[test]
    fn an_acronym_that_starts_as_a_stored_name_is_not_asked_about() {
        let (dir, p) = animals_after("product-acronym", &["CHOL", "Aardvark"]);
        for name in ["CHEM", "CHAR", "AACB", "AADA"] {
            assert!(!p.is_free(name), "{name}");
        }
        // Not an acronym, or not sharing two letters: free as before.
        for name in ["Cheetah", "Chameleon", "USA", "AID", "Caracal"] {
            assert!(p.is_free(name), "{name}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A product of "Make a list of African animals" refreshed from a store holding an entry
    /// for each of `names` (`Cape buffalo` under `cape_buffalo`), and the store's directory.
    fn animals_after(label: &str, names: &[&str]) -> (std::path::PathBuf, Product) {
        let values: Vec<String> = names.iter().map(|n| format!("{n}: an animal of Africa.")).collect();
        let (dir, _, p) = animals_with(label, &values);
        (dir, p)
    }

    /// The same from whole values (`Zebra: ...` under `zebra`), with the store.
    /// The prefix and first number of `p`'s names ask, refreshed from `working` and `store`
    /// and rendered into `out`; a panic when it asks something else.
    fn names_ask(p: &mut Product, working: &WorkingSet, store: &mut Store, out: &mut FixedBuf) -> (String, u32) {
        p.refresh(working, Some(store));
        out.clear();
        p.render(store, out, 1 << 20).unwrap();
        match p.ask() {
            ProductAsk::Names { prefix, first, .. } => (prefix.to_string(), first),
            other => panic!("{other:?}"),
        }
    }

    /// Working memory that holds the task of [`animals_with`]'s product.
    fn animals_task() -> WorkingSet {
        let mut working = WorkingSet::new();
        working.add(&normalize("task").unwrap(), "Make a list of African animals: one animal per entry.", 1).unwrap();
        working
    }

    fn animals_with(label: &str, values: &[String]) -> (std::path::PathBuf, Store, Product) {
        product_with(label, "Make a list of African animals: one animal per entry.", "african,animals", values)
    }

    /// A product of `task` (whose tags are `tags`) refreshed from a store holding `values`,
    /// oldest first, each under the tags and its name.
    fn product_with(label: &str, task: &str, tags: &str, values: &[String]) -> (std::path::PathBuf, Store, Product) {
        let dir = crate::testing::temp_dir(label);
        let mut store = Store::open_with_capacity(&dir, 256).unwrap();
        let mut working = WorkingSet::new();
        working.add(&normalize("task").unwrap(), task, 1).unwrap();
        for (i, v) in values.iter().enumerate() {
            let key = format!("{tags},{}", head(v).trim().to_lowercase().replace(' ', "_"));
            store.put(&normalize(&key).unwrap(), v, i as u64 + 1).unwrap();
        }
        let mut p = Product::new();
        p.refresh(&working, Some(&store));
        (dir, store, p)
    }

    /// The view only grows at its end, so a server's prompt cache keeps all of it, until it is
    /// full; then it starts again from its newest half (a window that slid one entry a cycle
    /// changed its first line each cycle, and the server evaluated all of it again).
    #[test]
    fn the_view_grows_at_its_end_and_full_starts_again_from_its_newest_half() {
        let (dir, mut store, mut p) = animals_with("product-pages", &[]);
        let working = animals_task();
        let mut out = FixedBuf::with_capacity("view", 64 * 1024);
        let mut before = String::new();
        let mut starts = 0;
        for i in 0..3 * PRODUCT_VIEW_MAX_ENTRIES {
            let name = format!("Animal{}", (b'a' + (i % 26) as u8) as char).repeat(1 + i / 26);
            let key = normalize(&format!("african,animals,{}", name.to_lowercase())).unwrap();
            store.put(&key, &format!("{name}: an animal of Africa."), i as u64 + 1).unwrap();
            p.refresh(&working, Some(&store));
            out.clear();
            p.render(&mut store, &mut out, 1 << 20).unwrap();
            let view = out.as_str().unwrap().to_string();
            let lines: Vec<&str> = view.lines().filter(|l| !l.starts_with('<') && !l.starts_with("The ")).collect();
            assert!(lines.len() <= PRODUCT_VIEW_MAX_ENTRIES && lines.last() == Some(&name.as_str()), "{view}");
            let kept = before.trim_end_matches("</product>\n");
            if !view.starts_with(kept) {
                // Full: the newest half, then growing again.
                assert_eq!(before.lines().count() - 3, PRODUCT_VIEW_MAX_ENTRIES, "{before}: tags, heading, names");
                assert_eq!(lines.len(), PRODUCT_VIEW_MAX_ENTRIES / 2, "{view}");
                starts += 1;
            }
            before = view;
        }
        assert_eq!(starts, 4, "full at one past the most, then every half of it");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A list goes on from its first names, whatever came after them: a small model goes on in
    /// the kind of the names it is given, and the newest are the ones it named last, made up as
    /// often as not. An entry archived or deleted is no first name any more: the next one is.
    #[test]
    fn a_list_goes_on_from_its_first_names_not_its_newest() {
        let values: Vec<String> =
            ["Lion: a big cat.", "Zebra: a horse with stripes.", "Zoosia: an animal.", "Monaakesi: a beast."]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let (dir, mut store, mut p) = animals_with("product-first-names", &values);
        let working = animals_task();
        let mut out = FixedBuf::with_capacity("view", 64 * 1024);
        let prefix = |p: &mut Product, store: &mut Store, out: &mut FixedBuf| names_ask(p, &working, store, out);
        assert_eq!(prefix(&mut p, &mut store, &mut out), ("Common African animals:\n1. Lion\n2. Zebra\n3. ".into(), 3));
        // Still the first ones once the view starts again from its newest half.
        for i in 0..PRODUCT_VIEW_MAX_ENTRIES {
            let name = format!("Animal{}", (b'a' + i as u8) as char);
            let key = normalize(&format!("african,animals,{}", name.to_lowercase())).unwrap();
            store.put(&key, &format!("{name}: an animal of Africa."), 10 + i as u64).unwrap();
        }
        let (text, first) = prefix(&mut p, &mut store, &mut out);
        assert!(!out.as_str().unwrap().contains("\nLion\n"), "the view no longer shows the first");
        assert_eq!((text.as_str(), first), ("Common African animals:\n1. Lion\n2. Zebra\n3. ", 3));
        // The user takes one back: the next first name stands in for it.
        store.set_archived(&normalize("african,animals,lion").unwrap(), true, 100).unwrap();
        store.delete(&normalize("african,animals,zebra").unwrap()).unwrap();
        let (text, _) = prefix(&mut p, &mut store, &mut out);
        assert_eq!(text, "Common African animals:\n1. Zoosia\n2. Monaakesi\n3. ");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Entries under the product's tags that name nothing (imported, say, with no `name:` head)
    /// are no first names: the first that name something are, and the list goes on from them
    /// rather than starting again from nothing each time.
    #[test]
    fn a_list_goes_on_from_its_first_entries_that_name_something() {
        let values: Vec<String> = [
            "Lions of the savanna",
            "A note without a name",
            "Zebra: a horse with stripes.",
            "Okapi: a forest giraffe.",
            "Eland: an antelope.",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (dir, mut store, mut p) = animals_with("product-first-named", &values);
        let mut out = FixedBuf::with_capacity("view", 4096);
        let ask = names_ask(&mut p, &animals_task(), &mut store, &mut out);
        assert_eq!(ask, ("Common African animals:\n1. Zebra\n2. Okapi\n3. ".into(), 3));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A list that goes on from its first names may name what is stored: closed, a name a small
    /// model starts is written on into a made-up one ("Zebras" into "Zerbergs"; SmolLM2-135M
    /// going on from "Gorilla, Lions": 0.7 new real names a list and 6.5 made up with them
    /// closed, 1.5 and 2.0 open). The task's words and the words that name nothing stay closed,
    /// the stored names are not planned again, and once a list names nothing new, the next one
    /// closes them: it always has something new to name.
    #[test]
    fn a_list_that_goes_on_may_name_what_is_stored_and_plans_only_what_is_new() {
        let values: Vec<String> =
            ["Lion", "Zebra", "Okapi"].iter().map(|n| format!("{n}: an animal of Africa.")).collect();
        let (dir, mut store, mut p) = animals_with("product-open-list", &values);
        let mut working = animals_task();
        let key = normalize(PLAN_KEY).unwrap();
        let mut scratch = FixedBuf::with_capacity("plan", 1024);
        let mut out = FixedBuf::with_capacity("view", 4096);
        let stored = |w: &&str| ["lion*", "zebra*", "zeb*", "okapi*", "oka*"].contains(w);
        assert_eq!(names_ask(&mut p, &working, &mut store, &mut out).1, 3);
        let closed: Vec<&str> = p.closed().collect();
        assert!(!closed.iter().any(stored), "{closed:?}");
        assert!(closed.contains(&"african") && closed.contains(&"animals") && closed.contains(&"the*"), "{closed:?}");
        assert!(p.taken().any(|w| w == "zeb*"), "the names taken are still all of them");
        let mut list =
            |p: &mut Product, working: &mut WorkingSet, store: &mut Store, out: &mut FixedBuf, names: &str| {
                names_ask(p, working, store, out);
                working.add(&key, &format!("Common African animals:\n1. Lion\n2. Zebra\n{names}"), 2).unwrap();
                p.settle_plan(working, "", &mut scratch, 3).unwrap();
                working.get(&key).map(str::to_string)
            };
        let plan = list(&mut p, &mut working, &mut store, &mut out, "3. Zebras\n4. Giraffes\n5. Okapi\n6. Hippos");
        assert_eq!(plan.as_deref(), Some("Giraffes, Hippos"));
        working.remove(&key);
        // A list of stored names only: the next one has them closed, until one names something.
        assert_eq!(list(&mut p, &mut working, &mut store, &mut out, "3. Okapi\n4. Lions"), None);
        names_ask(&mut p, &working, &mut store, &mut out);
        assert!(p.closed().eq(p.taken()), "closed as taken");
        assert_eq!(list(&mut p, &mut working, &mut store, &mut out, "3. Eland").as_deref(), Some("Eland"));
        working.remove(&key);
        names_ask(&mut p, &working, &mut store, &mut out);
        assert!(!p.closed().any(|w| stored(&w)), "open again");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A list with no entry yet is asked for its names again, and its first entries are the
    /// names two lists agree on (in the singular or the plural): those a small model knows, not
    /// those it made up once ("Monakeko, Anjelica"). After [`FIRST_LISTS_MAX`] lists that agree
    /// on none, the last is taken as it is. A glossary's list is taken at once.
    #[test]
    fn a_lists_first_names_are_those_two_lists_agree_on() {
        let (dir, mut store, mut p) = animals_with("product-agree", &[]);
        let mut working = animals_task();
        let key = normalize(PLAN_KEY).unwrap();
        let mut scratch = FixedBuf::with_capacity("plan", 1024);
        let mut out = FixedBuf::with_capacity("view", 4096);
        let mut list = |p: &mut Product, working: &mut WorkingSet, store: &mut Store, names: &str| {
            p.refresh(working, Some(&*store));
            out.clear();
            p.render(store, &mut out, 1 << 20).unwrap();
            assert!(matches!(p.ask(), ProductAsk::Names { first: 1, .. }), "{:?}", p.ask());
            working.add(&key, &format!("Common African animals:\n{names}"), 2).unwrap();
            p.settle_plan(working, "", &mut scratch, 3).unwrap();
            working.get(&key).map(str::to_string)
        };
        assert_eq!(
            list(&mut p, &mut working, &mut store, "1. Monakeko\n2. Lions\n3. Elephants\n4. Zoosia"),
            None,
            "heard"
        );
        let agreed = list(&mut p, &mut working, &mut store, "1. Elephant\n2. Zebras\n3. Lions\n4. Okapi");
        assert_eq!(agreed.as_deref(), Some("Elephant, Lions"));
        p.refresh(&working, Some(&store));
        assert_eq!(p.ask(), ProductAsk::Define("Elephant\nLions"));
        // Three lists that agree on nothing: the third is the plan.
        working.remove(&key);
        assert_eq!(list(&mut p, &mut working, &mut store, "1. Monakeko\n2. Anjelica"), None);
        assert_eq!(list(&mut p, &mut working, &mut store, "1. Aardvarks\n2. Aniocerus"), None);
        assert_eq!(
            list(&mut p, &mut working, &mut store, "1. Zanzibar\n2. Kigali").as_deref(),
            Some("Zanzibar, Kigali")
        );
        let _ = std::fs::remove_dir_all(&dir);
        // A glossary asks about its first list's names at once.
        let (dir, mut store, mut g) = product_with(
            "product-agree-glossary",
            "Build a small glossary of cooking terms: one term per entry.",
            "cooking,glossary",
            &[],
        );
        let mut working = WorkingSet::new();
        working
            .add(&normalize("task").unwrap(), "Build a small glossary of cooking terms: one term per entry.", 1)
            .unwrap();
        g.refresh(&working, Some(&store));
        out.clear();
        g.render(&mut store, &mut out, 1 << 20).unwrap();
        working.add(&key, "Common cooking terms:\n1. Roux\n2. Braise", 2).unwrap();
        g.settle_plan(&mut working, "", &mut scratch, 3).unwrap();
        assert_eq!(working.get(&key), Some("Roux, Braise"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The plan's free names are asked about in one question, and the reply's entries, one a
    /// line, are judged against each other as they are saved: one cycle for the plan's names,
    /// not one each.
    #[test]
    fn the_plans_free_names_are_asked_about_at_once() {
        let (dir, mut store, mut p) = animals_with("product-several", &["Lion: a big cat of Africa.".to_string()]);
        let mut working = animals_task();
        let plan = "Common African animals:\n1. Zebra\n2. Lions\n3. Zebras\n4. Okapi\n5. Zebra\n6. Eland\n7. Kudu";
        working.add(&normalize(PLAN_KEY).unwrap(), plan, 2).unwrap();
        p.refresh(&working, Some(&store));
        let mut out = FixedBuf::with_capacity("view", 4096);
        p.render(&mut store, &mut out, 1 << 20).unwrap();
        // The free names, each once (not in the plural either), at most PLAN_NAMES_MAX of them
        // ("Lions" is taken).
        assert_eq!(p.ask(), ProductAsk::Define("Zebra\nOkapi\nEland"));
        let mut q = FixedBuf::with_capacity("ask", 256);
        p.write_question(p.ask(), &mut q).unwrap();
        assert_eq!(q.as_str().unwrap(), "What are Zebra, Okapi and Eland? Answer in one sentence each.\n");
        // An entry saved this cycle is one the next line may not repeat.
        let key = normalize("african,animals,okapi").unwrap();
        let zebra = "Zebra: a horse of Africa with black and white stripes.";
        assert!(p.repeats(&key, "Okapi: a horse of Africa with black and white stripes.").is_none());
        p.saved(zebra);
        assert!(p.repeats(&key, "Okapi: a horse of Africa with black and white stripes.").is_some());
        assert!(p.repeats(&key, "Okapi: a forest animal related to the giraffe.").is_none());
        // Every name asked about is done: the plan keeps the rest.
        for name in ["Zebra", "Okapi", "Eland"] {
            p.asked(name);
        }
        let mut scratch = FixedBuf::with_capacity("plan", 1024);
        p.settle_plan(&mut working, "Zebra\nOkapi\nEland", &mut scratch, 3).unwrap();
        assert_eq!(working.get(&normalize(PLAN_KEY).unwrap()), Some("Kudu"));
        p.refresh(&working, Some(&store));
        assert_eq!(p.ask(), ProductAsk::Define("Kudu"));
        q.clear();
        p.write_question(p.ask(), &mut q).unwrap();
        assert_eq!(q.as_str().unwrap(), "What is Kudu? Answer in one sentence.\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A list never stops naming: going on from two made-up first names of one letter
    /// ("Anjelica, Anzahana"), SmolLM2-135M listed names of that letter only, which the run
    /// rule read none of, and 25 cycles in a row planned nothing. The run rule reads the
    /// model's own names, not the first names given to it; and after lists that name nothing
    /// new [`BARREN_LISTS_MAX`] times in a row, the next one starts from nothing, every stored
    /// name closed, until one names something new.
    #[test]
    fn a_list_that_names_nothing_new_is_asked_otherwise() {
        let values: Vec<String> =
            ["Anjelica", "Anzahana"].iter().map(|n| format!("{n}: an animal of Africa.")).collect();
        let (dir, mut store, mut p) = animals_with("product-barren", &values);
        let mut working = animals_task();
        let key = normalize(PLAN_KEY).unwrap();
        let mut scratch = FixedBuf::with_capacity("plan", 1024);
        let mut out = FixedBuf::with_capacity("view", 4096);
        let mut list = |p: &mut Product, working: &mut WorkingSet, store: &mut Store, names: &str| {
            let (prefix, _) = names_ask(p, working, store, &mut out);
            working.add(&key, &format!("{prefix}{names}"), 2).unwrap();
            p.settle_plan(working, "", &mut scratch, 3).unwrap();
            let plan = working.get(&key).map(str::to_string);
            working.remove(&key);
            (prefix, plan)
        };
        let given = "Common African animals:\n1. Anjelica\n2. Anzahana\n3. ";
        let (prefix, plan) = list(&mut p, &mut working, &mut store, "Ankhara\n4. Amiya\n5. Alimaa");
        assert_eq!((prefix.as_str(), plan.as_deref()), (given, Some("Ankhara, Amiya")));
        // Two lists of stored names only, then one from nothing.
        assert_eq!(list(&mut p, &mut working, &mut store, "Anjelica\n4. Anzahana").1, None);
        assert_eq!(list(&mut p, &mut working, &mut store, "Anzahana").1, None);
        names_ask(&mut p, &working, &mut store, &mut FixedBuf::with_capacity("view", 4096));
        assert!(p.closed().eq(p.taken()), "from nothing, every stored name closed");
        let (prefix, plan) = list(&mut p, &mut working, &mut store, "Lions\n2. Zebras");
        assert_eq!((prefix.as_str(), plan.as_deref()), ("Common African animals:\n1. ", Some("Lions, Zebras")));
        // Named something: from the first names again.
        assert_eq!(list(&mut p, &mut working, &mut store, "Okapi").0, given);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A name whose text was refused as no sentence (another language, made-up words) is asked
    /// about once more when a later list names it again: a small model answered about Zebra,
    /// Crocodile and Mona in Spanish, and Zebra was never asked about again though four later
    /// lists named it (27 of the 152 texts refused as not English in this project's runs were
    /// about real names). A second refusal is the last.
    #[test]
    fn a_name_whose_text_was_refused_is_asked_once_more_when_a_list_names_it_again() {
        let (dir, mut store, mut p) = animals_with("product-again", &["Lion: a big cat of Africa.".to_string()]);
        let mut working = animals_task();
        let key = normalize(PLAN_KEY).unwrap();
        let zebra = normalize("african,animals,zebra").unwrap();
        let mut scratch = FixedBuf::with_capacity("plan", 1024);
        let mut out = FixedBuf::with_capacity("view", 4096);
        let mut ask = |p: &mut Product, working: &mut WorkingSet, store: &mut Store, plan: &str| {
            working.add(&key, plan, 2).unwrap();
            p.refresh(working, Some(&*store));
            out.clear();
            p.render(store, &mut out, 1 << 20).unwrap();
            match p.ask() {
                ProductAsk::Define(names) => names.to_string(),
                other => panic!("{other:?}"),
            }
        };
        let mut refused = |p: &mut Product, working: &mut WorkingSet, names: &str| {
            let text = "Zebra: a loracana de la amarracha mamara y el cambio del leche.";
            assert!(p.unreadable(&zebra, text).is_some());
            p.refused_text(&zebra);
            for name in names.lines() {
                p.asked(name);
            }
            p.settle_plan(working, names, &mut scratch, 3).unwrap();
        };
        assert_eq!(ask(&mut p, &mut working, &mut store, "Zebra, Okapi"), "Zebra\nOkapi");
        refused(&mut p, &mut working, "Zebra\nOkapi");
        assert_eq!(working.get(&key), None, "the plan is done");
        assert_eq!(ask(&mut p, &mut working, &mut store, "Okapi, Zebra, Eland"), "Zebra\nEland", "once more");
        refused(&mut p, &mut working, "Zebra\nEland");
        assert_eq!(ask(&mut p, &mut working, &mut store, "Zebra, Kudu"), "Kudu", "not a third time");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A names ask lists up to ten names; the plan keeps nine of them, and a question asks
    /// about three: one names ask serves three questions, not one (after each names ask, whose
    /// prompt shows none of the view's names, a server evaluates them again).
    #[test]
    fn a_plan_keeps_nine_names_asked_about_three_at_a_time() {
        let (dir, mut store, mut p) = animals_with("product-plan", &[]);
        let mut working = animals_task();
        let names = ["Zebra", "Okapi", "Eland", "Kudu", "Hyrax", "Lion", "Hippo", "Rhino", "Gnu", "Ostrich"];
        let plan: String = std::iter::once("Common African animals:".to_string())
            .chain(names.iter().enumerate().map(|(i, n)| format!("{}. {n}", i + 1)))
            .collect::<Vec<_>>()
            .join("\n");
        let key = normalize(PLAN_KEY).unwrap();
        working.add(&key, &plan, 2).unwrap();
        let mut scratch = FixedBuf::with_capacity("plan", 1024);
        let mut out = FixedBuf::with_capacity("view", 4096);
        // The cycle that wrote the list settles it: nine names are kept.
        p.refresh(&working, Some(&store));
        p.settle_plan(&mut working, "", &mut scratch, 3).unwrap();
        assert_eq!(working.get(&key), Some("Zebra, Okapi, Eland, Kudu, Hyrax, Lion, Hippo, Rhino, Gnu"));
        let mut asks = Vec::new();
        for _ in 0..4 {
            p.refresh(&working, Some(&store));
            out.clear();
            p.render(&mut store, &mut out, 1 << 20).unwrap();
            let ProductAsk::Define(asked) = p.ask() else { break };
            let asked = asked.to_string();
            for name in asked.lines() {
                p.asked(name);
            }
            p.settle_plan(&mut working, &asked, &mut scratch, 4).unwrap();
            asks.push(asked);
        }
        assert_eq!(asks, ["Zebra\nOkapi\nEland", "Kudu\nHyrax\nLion", "Hippo\nRhino\nGnu"]);
        assert_eq!(working.get(&key), None, "the plan is done");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn names_are_listed_as_a_reader_lists_them() {
        let mut out = FixedBuf::with_capacity("list", 256);
        for (items, listed) in [
            (&[][..], ""),
            (&["Roux"][..], "Roux"),
            (&["Roux", "Sear"][..], "Roux and Sear"),
            (&["Roux", "Sear", "Mise en place"][..], "Roux, Sear and Mise en place"),
        ] {
            out.clear();
            write_and_list(&mut out, items.iter().copied()).unwrap();
            assert_eq!(out.as_str().unwrap(), listed);
        }
    }

    /// A glossary with no plan asks about the words most of its definitions use, as many as a
    /// plan's names, the most used first.
    #[test]
    fn the_words_most_definitions_use_are_asked_about_at_once() {
        let values: Vec<String> = [
            "Roux: a paste made with flour and butter.",
            "Batter: a liquid made with flour and milk.",
            "Gravy: a sauce made with butter and milk.",
            "Crepe: a cake made with flour and eggs.",
            "Scone: a bun made with eggs and cream.",
        ]
        .map(String::from)
        .to_vec();
        let task = "Build a small glossary of cooking terms: one term per entry, with a definition.";
        let (dir, mut store, mut p) = product_with("product-words", task, "cooking,glossary", &values);
        let mut out = FixedBuf::with_capacity("view", 4096);
        p.render(&mut store, &mut out, 1 << 20).unwrap();
        // Flour three times; eggs, butter and milk twice (eggs met first, in the newest
        // definition); cream, paste and the others once.
        assert_eq!(p.ask(), ProductAsk::Define("Flour\nEggs\nButter"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_name_in_y_and_its_plural_in_ies_close_each_other() {
        let (dir, p) = animals_after("product-ies", &["Berries", "Jelly", "Ray"]);
        // "Jelly" closes "Jellies" ("jelli*"), "Berries" closes "Berry" ("berry*"); a name of
        // two letters before its "y" closes nothing more ("Rain" stays free after "Ray").
        let taken: Vec<&str> = p.taken().collect();
        assert!(taken.contains(&"jelli*") && taken.contains(&"berry*") && taken.contains(&"berrie*"), "{taken:?}");
        assert!(!p.is_free("Jellies") && !p.is_free("Berry") && !p.is_free("Rays"));
        assert!(p.is_free("Jackal") && p.is_free("Rain"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_stored_name_closes_its_first_letters_as_the_start_of_another() {
        let (dir, p) = animals_after("product-start", &["Elephant", "Tigers", "Cape buffalo", "Bats", "Ox"]);
        let taken: Vec<&str> = p.taken().collect();
        assert!(taken.contains(&"ele*") && taken.contains(&"tig*") && taken.contains(&"cap*"), "{taken:?}");
        // The names a small model wrote on from a taken name's first token are closed...
        for drift in ["Eleodora", "Elezio", "Tigress", "Capensis"] {
            assert!(!p.is_free(drift), "{drift}");
        }
        // ...other names are not, nor those sharing fewer letters; a name of four letters or
        // fewer closes only its own letters as a start ("Bats": not "Bath"; "Ox": "Oxpecker",
        // but not "Ostrich").
        for free in ["Eland", "Tiang", "Camel", "Ostrich", "Giraffe", "Bath"] {
            assert!(p.is_free(free), "{free}");
        }
        assert!(!taken.contains(&"bat*") && !p.is_free("Oxpecker"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A long name's first letters close all its other forms, so the grammar pays only for them
    /// (a closed node of the trie has no children): the budget of taken characters holds about
    /// three times as many such names as when each was charged for its whole letters too.
    #[test]
    fn a_long_name_costs_the_taken_budget_only_its_first_letters() {
        // 150 names of ten letters, each with first letters of its own ("baaname", "bbaname"...).
        let names: Vec<String> = (0..150u8)
            .map(|i| format!("{}{}{}namesake", (b'b' + i / 26 % 26) as char, (b'a' + i % 26) as char, 'a'))
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let (dir, p) = animals_after("product-budget", &refs);
        let taken: Vec<&str> = p.taken().collect();
        let closed = names.iter().filter(|n| taken.contains(&format!("{}*", &n[..3]).as_str())).count();
        // Charged 15 characters each (ten letters, the start, two signs), 68 fit in 1,024.
        assert!(closed >= 120, "{closed} of 150 names closed");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Text a drifting small model wrote (SmolLM2-135M, in model checks) is refused; its
    /// definitions are not.
    #[test]
    fn text_without_the_words_of_a_sentence_is_no_entry() {
        let p = product_for("A glossary of cooking terms, one term per entry.");
        let key = |s: &str| normalize(s).unwrap();
        judged(
            &p,
            &key("cooking,glossary,x"),
            &[
                "Food: soglassar y crioloramón.",
                "Iraj: IRAJAZ AGAIN SAVES GROWL LOCAL TOURNA.",
                "Days: 2019 Dec 31 2018 2019 Jan 5 2020, 2020 april 16 2021.",
                "Ability: ssozaglollymall-bababyjohnny 2019 3.",
                "Nzampaba: Nzombabara-lambiya mbia ku njimba-njimba lokombe-mwaka ku njimbabala-na zamboa-kwazao.",
            ],
            &[
                "Milk: a dairy product that is used for cooking.",
                "Espresso: a drink made with espresso and steamed milk.",
                "Yeast: a type of fungus used in baking.",
                "Roux: a mixture of flour and fat cooked together and used to thicken sauces.",
            ],
        );
        // Not an entry of the product: not judged.
        assert!(p.unreadable(&key("notes"), "Food: soglassar y crioloramón.").is_none());
    }

    /// Asserts that `p` reads each of `junk` as no entry under `key`, and each of `good` as one.
    fn judged(p: &Product, key: &Key, junk: &[&str], good: &[&str]) {
        for text in junk {
            assert!(p.unreadable(key, text).is_some(), "{text}");
        }
        for text in good {
            assert!(p.unreadable(key, text).is_none(), "{text}");
        }
    }

    /// A word that no language writes, with one letter three times in a row, is no entry's text:
    /// a small model asked about a made-up name ran its letters on ("Biggsii: a kjiek ji-bjjik
    /// jibjiszwadzjisjimjjj."; 11 such texts in the 5,259 stored in this project's runs, and no
    /// other text had such a word). Capitals ("Henry III") and "www" are words.
    #[test]
    fn a_word_with_a_letter_three_times_in_a_row_is_no_entry() {
        let p = product_for("Make a list of African animals: one animal per entry.");
        let key = normalize("african,animals,x").unwrap();
        judged(
            &p,
            &key,
            &[
                "Biggsii: a kjiek ji-bjjik jibjiszwadzjisjimjjj.",
                "Birds: a jim-jimbarkcrickhd wiirklepterwiiit of the river and the plain.",
                "Kangaroo: a jenyjayjawdjajjabjjj and the koala is a jebjahjebjhj, but it's not a bear.",
            ],
            &[
                "Lion: a big cat that King Henry III kept in the Tower of London.",
                "Okapi: an animal of the forest; see www.example.org for more of it.",
                "Kudu: an antelope with horns of great lengths and strengths.",
            ],
        );
    }

    /// A definition in another language is no entry of an English product, however many of its
    /// words look English when cut at their accents ("alegrías": "alegr", "as"); and a glossary
    /// whose definitions were Spanish asked about their words next (SmolLM2-135M: Saludamientos,
    /// Alimentos, Palabras). An English definition with a foreign name or phrase in it is one.
    #[test]
    fn a_definition_in_another_language_is_no_entry() {
        let p = product_for("A glossary of cooking terms, one term per entry.");
        let key = normalize("cooking,glossary,x").unwrap();
        judged(
            &p,
            &key,
            &[
                "Parenilas: a criolla de saludamientos y alegrías que encontramo el cambio.",
                "Arroz: a la cena del gastronomic.",
                "Aroma: an amor más criada que no puedo ser en espanolos.",
                "Llama: a fuego de la manzana.",
                "Fizz: a la fizz, a la frillleur, a la mousse.",
            ],
            &[
                "Sauté: to cook food quickly in a little fat over high heat.",
                "Paella: a Spanish rice dish from Valencia, made with saffron.",
                "Pico de gallo: a fresh salsa of chopped tomato, onion and chili.",
                "Salsa: a sauce, from the Spanish word for sauce, as in pico de gallo.",
                "Crème brûlée: a dessert of rich custard under a layer of hard caramel.",
            ],
        );
    }
}
