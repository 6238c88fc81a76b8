//! The task's product: what the agent has made for its task so far, shown to the model just
//! before the ask, and the names a new entry may not take (docs/design.md §5, "Small models").
//!
//! Small models state facts about a named thing and continue a document of the task's own
//! product well; they cannot invent what to do next from abstract instructions, and they copy
//! whatever sits in the prompt. So the agent carries the structure and the novelty, and asks
//! the model only for the next entry:
//!
//! - **The product's tags** come from the task's own words: its first
//!   [`PRODUCT_TAGS_MAX`] content words, as tags ("Build a small glossary of cooking terms..."
//!   gives `cooking,glossary`). Every entry of the product carries them and one tag of its own,
//!   its name (`braise,cooking,glossary`).
//! - **The view** ([`Product::render`]) is the newest [`PRODUCT_VIEW_MAX_ENTRIES`] entries that
//!   carry the product's tags, oldest of them first, one value a line (a value is written
//!   `name: one sentence`), bounded by [`PRODUCT_VIEW_MAX_BYTES`].
//! - **The names taken** ([`Product::taken`]) are those of the newest [`PRODUCT_TAKEN_MAX`]
//!   product entries and the task's own content words (a small model asked for a cooking term
//!   answers `cooking`). The grammar makes them impossible as the name of a new entry
//!   ([`crate::grammar::ProductSave`]); a save that names one anyway (an unconstrained reply)
//!   is refused, as is a value whose head or text is one the view shows already.
//! - **The ask** ([`Product::write_ask`]) is the last line of the prompt: the next entry of the
//!   product, in its form, or, with nothing made yet, the first.
//!
//! Everything is reserved in [`Product::new`]; refreshing and rendering allocate nothing.

use crate::error::Result;
use crate::fixed::{ArrayString, ArrayVec, FixedBuf};
use crate::limits::{
    GRAMMAR_NAME_MAX_CHARS, PRODUCT_ENTRY_MAX_BYTES, PRODUCT_TAGS_MAX, PRODUCT_TAKEN_MAX, PRODUCT_TAKEN_MAX_CHARS,
    PRODUCT_VIEW_MAX_BYTES, PRODUCT_VIEW_MAX_ENTRIES, TAG_MAX_BYTES,
};
use crate::memory::hash::{fnv1a64, fnv1a64_continue};
use crate::memory::key::{normalize, Key};
use crate::memory::query::{EntryId, Query, Results};
use crate::memory::store::Store;
use crate::memory::working::WorkingSet;

/// The working-memory key of the task.
pub const TASK_KEY: &str = "task";

/// Most of the task's content words kept (for the taken names).
const TASK_WORDS_MAX: usize = 16;

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

/// Words that introduce the unit of a task ("one term per entry"): the content word after the
/// first of them names what an entry is.
const UNIT_MARKERS: &[&str] = &["each", "every", "one", "per"];

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
    /// The task's content words.
    words: ArrayVec<Word, TASK_WORDS_MAX>,
    /// The newest product entries, newest first.
    newest: Results,
    /// The names taken, sorted and distinct.
    taken: ArrayVec<Word, PRODUCT_TAKEN_MAX>,
    /// Hashes of the head (the text before `:`) and of the whole value of each entry in the
    /// view, as [`normal_hash`] makes them.
    seen: ArrayVec<(u64, u64), PRODUCT_VIEW_MAX_ENTRIES>,
    /// Entries the view showed in the last render.
    shown: usize,
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
            words: ArrayVec::new(),
            newest: Results::with_capacity(PRODUCT_TAKEN_MAX),
            taken: ArrayVec::new(),
            seen: ArrayVec::new(),
            shown: 0,
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

    /// The names taken, sorted and distinct.
    pub fn taken(&self) -> impl Iterator<Item = &str> + '_ {
        self.taken.iter().map(|w| w.as_str())
    }

    /// Entries the last [`Product::render`] showed.
    pub fn shown(&self) -> usize {
        self.shown
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
        let Some(key) = self.key else { return };
        let q = Query { required: Some(key), max_results: PRODUCT_TAKEN_MAX, ..Query::default() };
        if let Some(store) = store {
            store.query(&q, &mut self.newest);
        }
        let mut chars = 0;
        for id in self.newest.ids() {
            let Some(k) = store.and_then(|s| s.key(id)) else { continue };
            if let Some(name) = name_of(&k, &key) {
                chars += name.len();
                if chars > PRODUCT_TAKEN_MAX_CHARS || self.taken.is_full() {
                    break;
                }
                if let Ok(w) = Word::try_from_str(name) {
                    let _ = self.taken.push(w);
                }
            }
        }
        for w in self.words.iter() {
            if self.taken.is_full() {
                break;
            }
            let _ = self.taken.push(*w);
        }
        self.taken.as_mut_slice().sort_unstable();
        dedup(&mut self.taken);
    }

    /// Derives the tags, the unit and the content words from the task text.
    fn derive(&mut self, task: &str) {
        self.tags.clear();
        self.words.clear();
        self.unit.clear();
        self.key = None;
        let mut after_marker = false;
        for word in words(task) {
            let mut w = Word::new();
            for b in word.bytes() {
                let _ = w.push(b.to_ascii_lowercase() as char);
            }
            let lower = w.as_str();
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
            if !self.tags.is_full() && !self.tags.iter().any(|t| t.as_str() == lower) {
                let _ = self.tags.push(w);
            }
        }
        if !self.tags.is_empty() {
            self.key = Key::from_tags(self.tags.iter().map(|t| t.as_str())).ok();
        }
    }

    /// Writes the view into `out`: `<product>`, the newest entries' values (oldest of them
    /// first, one a line, each cut at [`PRODUCT_ENTRY_MAX_BYTES`]), `</product>`; nothing when
    /// the product is inactive. Within [`PRODUCT_VIEW_MAX_BYTES`]: entries that would pass it
    /// are left out, the oldest first. Remembers what it showed for [`Product::repeats`].
    pub fn render(&mut self, store: &mut Store, out: &mut FixedBuf) -> Result<()> {
        self.seen.clear();
        self.shown = 0;
        if !self.active() {
            return Ok(());
        }
        // The newest entries that fit, counted newest first; then written oldest first.
        let mut ids: ArrayVec<EntryId, PRODUCT_VIEW_MAX_ENTRIES> = ArrayVec::new();
        let mut bytes = 0;
        for id in self.newest.ids() {
            if ids.is_full() {
                break;
            }
            let len = match store.value(id) {
                Ok(v) => line(v).len() + 1,
                Err(_) => continue,
            };
            if bytes + len > PRODUCT_VIEW_MAX_BYTES {
                break;
            }
            bytes += len;
            let _ = ids.push(id);
        }
        out.push_str("<product>\n")?;
        for &id in ids.as_slice().iter().rev() {
            let Ok(v) = store.value(id) else { continue };
            let text = line(v);
            out.push_str(text)?;
            out.push_str("\n")?;
            let _ = self.seen.push((normal_hash(head(v)), normal_hash(v)));
            self.shown += 1;
        }
        out.push_str("</product>\n")
    }

    /// Writes the ask, the prompt's last line, for a state that saves: the next entry of the
    /// product in its form (the first, when the view is empty).
    pub fn write_ask(&self, out: &mut FixedBuf) -> Result<()> {
        let unit = if self.unit.is_empty() { "entry" } else { self.unit.as_str() };
        let (what, n) = if self.shown == 0 { ("the first", "") } else { ("the next", " new") };
        out.format(format_args!(
            "Write {} {} for the task, a{} {} not in <product>, as \"{}: one sentence about it\".\n",
            what, unit, n, unit, unit
        ))
    }

    /// Why a save of `key` with `value` would repeat the product, if it would: its name is the
    /// task's own word, or its value (or the head of its value, the text before `:`) is one the
    /// view shows. `None`: new.
    pub fn repeats(&self, key: &Key, value: &str) -> Option<&'static str> {
        let pkey = self.key.as_ref()?;
        if let Some(name) = name_of(key, pkey) {
            if self.words.iter().any(|w| w.as_str() == name) {
                return Some("its name is a word of the task itself; name one thing the task is about");
            }
        }
        let (h, v) = (normal_hash(head(value)), normal_hash(value));
        if self.seen.iter().any(|&(sh, sv)| sv == v || (sh == h && head(value).len() < value.len())) {
            return Some("<product> already has this entry; write a new one");
        }
        None
    }
}

/// The one tag of `key` besides the product's tags (`braise` of `braise,cooking,glossary`), if
/// the key is the product's tags and exactly one more.
fn name_of<'k>(key: &'k Key, product: &Key) -> Option<&'k str> {
    if key.tag_count() != product.tag_count() + 1 || !product.tags().all(|t| key.has_tag(t)) {
        return None;
    }
    key.tags().find(|t| !product.has_tag(t)).filter(|n| n.len() < GRAMMAR_NAME_MAX_CHARS as usize)
}

/// The words of `text`: runs of ASCII letters and digits (other characters separate).
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty() && w.len() <= TAG_MAX_BYTES)
}

/// The head of a value: the text before its first `:` (all of it when there is none).
fn head(value: &str) -> &str {
    value.split(':').next().unwrap_or(value)
}

/// A value as one line of the view: its first line, cut at [`PRODUCT_ENTRY_MAX_BYTES`] at a
/// character boundary.
fn line(value: &str) -> &str {
    let first = value.trim().lines().next().unwrap_or("");
    crate::bytes::str_prefix(first, PRODUCT_ENTRY_MAX_BYTES)
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

    #[test]
    fn stopwords_are_sorted() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn tags_unit_and_words_come_from_the_task() {
        let p = product_for(
            "Build a small glossary of cooking terms: save one term per entry to storage, with a one-sentence definition.",
        );
        assert_eq!(p.key().map(|k| k.as_str()), Some("cooking,glossary"));
        assert_eq!(p.unit.as_str(), "term");
        let words: Vec<&str> = p.words.iter().map(|w| w.as_str()).collect();
        assert_eq!(words, ["glossary", "cooking", "terms", "term", "sentence", "definition"]);
        let none = product_for("Do it.");
        assert!(!none.active());
    }

    #[test]
    fn repeats_are_found_by_name_head_and_value() {
        let mut p = product_for("A glossary of cooking terms, one term per entry.");
        let _ = p.seen.push((normal_hash("braise"), normal_hash("braise: to cook slowly")));
        let key = |s: &str| normalize(s).unwrap();
        assert!(p.repeats(&key("cooking,glossary,cooking"), "cooking: making food").is_some());
        assert!(p.repeats(&key("cooking,glossary,braising"), "Braise : something else").is_some());
        assert!(p.repeats(&key("cooking,glossary,other"), "BRAISE: to cook, slowly!").is_some());
        assert!(p.repeats(&key("cooking,glossary,sear"), "sear: to brown the surface").is_none());
        // Not a product key: only the value checks apply.
        assert!(p.repeats(&key("notes"), "sear: to brown").is_none());
    }
}
