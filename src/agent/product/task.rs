//! What the task text says of its product, read once per task: its language, its tags, its
//! unit (what one entry is: a tip, a day, a term) and whether a reader numbers that unit.
//! Every rule is stated in the task's own words and its language's row of [`super::lang`].

use super::lang::{words, Lang, Plural, NEUTRAL};
use crate::fixed::{ArrayString, ArrayVec};
use crate::limits::{PRODUCT_TAGS_MAX, TAG_MAX_BYTES};
use crate::memory::hash::fnv1a64;
use crate::memory::key::{normalize, Key};

/// A tag-sized word.
pub type Word = ArrayString<TAG_MAX_BYTES>;

/// Longest unit kept, in bytes (as written, any script).
pub const UNIT_MAX_BYTES: usize = 48;

/// Most of the task's words kept, lowercased as tags, to know a subject copied from the task.
pub const TASK_WORDS_MAX: usize = 48;

/// Words of a task read for its count of units: a count is stated early.
const COUNT_SCAN_WORDS: usize = 128;

/// Words that may stand between a count and its unit ("10 useful practical tips").
const COUNT_WORDS_BEFORE_UNIT: usize = 2;

/// The largest count of units a task is read to ask for: a larger number is a year, a size or
/// an address, not a count of entries.
const COUNT_MAX: u32 = 1000;

/// Longest phrase for the units kept, in bytes.
pub const PHRASE_MAX_BYTES: usize = 160;

/// Most words of the task's phrase for its units after the units' word.
const PHRASE_AFTER_MAX: usize = 7;

/// Most words of it before the units' word.
const PHRASE_BEFORE_MAX: usize = 3;

/// Most words of what a numbered task's units make up kept for its heading ("one-week trip to
/// Japan"; see `Task::read_whole`).
const WHOLE_MAX_WORDS: usize = 8;

/// Fewest letters of a task word that can be a tag.
const TAG_MIN_LETTERS: usize = 3;

/// The tag a product's tags end with when the task yields fewer than two: the task's hash in
/// four hexadecimal digits follows it, so two such tasks are two products.
const FALLBACK_TAG: &str = "task";

/// See the module documentation.
pub struct Task {
    /// FNV-1a of the task text (0: no task).
    pub hash: u64,
    /// The task's language row.
    pub lang: &'static Lang,
    /// The product's tags as a key (`tips,tomatoes`), when there is a task.
    pub key: Option<Key>,
    /// What one entry is, as the task writes it ("tip", "Begriff"), or the language's word for
    /// an entry.
    pub unit: ArrayString<UNIT_MAX_BYTES>,
    /// The unit in the plural: the task's own plural where it writes one ("Begriffe" for
    /// "Begriff"), else the language's rule.
    pub units: ArrayString<UNIT_MAX_BYTES>,
    /// The task's own phrase for its units ("tips for growing tomatoes at home", "Linux shell
    /// commands", "Astronomie-Begriffe"), or the units when it writes none.
    pub phrase: ArrayString<PHRASE_MAX_BYTES>,
    /// Whether a reader numbers the unit ("Day 3"): its entries are labelled so.
    pub numbered: bool,
    /// Whether the unit is numbered with no subject of its own ("Paragraph 3"): each goes on
    /// from the one before ([`super::lang::Lang::running_units`]).
    pub running: bool,
    /// Whether its unit is a name with a text of its own ("term", "command").
    pub named: bool,
    /// How many units the task asks for, when it says ("a five-day trip", "List 10 tips").
    pub count: Option<u32>,
    /// The task's words that can be tags, lowercased (a subject that is one of them is copied
    /// from the task).
    pub words: ArrayVec<Word, TASK_WORDS_MAX>,
}

impl Task {
    /// No task.
    pub fn none() -> Task {
        Task {
            hash: 0,
            lang: &NEUTRAL,
            key: None,
            unit: ArrayString::new(),
            units: ArrayString::new(),
            phrase: ArrayString::new(),
            numbered: false,
            running: false,
            named: false,
            count: None,
            words: ArrayVec::new(),
        }
    }

    /// Reads `text`. An empty or blank text is no task.
    pub fn read(text: &str) -> Task {
        let mut t = Task::none();
        if text.trim().is_empty() {
            return t;
        }
        t.hash = fnv1a64(text.as_bytes());
        t.lang = Lang::of(text);
        for w in words(text) {
            let mut tag = Word::new();
            if as_tag(w, &mut tag) && !t.words.is_full() && !t.words.as_slice().contains(&tag) {
                let _ = t.words.push(tag);
            }
        }
        t.read_unit(text);
        t.read_count(text);
        t.read_phrase(text);
        t.read_whole(text);
        t.read_tags(text);
        t
    }

    /// The unit: the first word after a unit marker that is not a sentence word, a number or
    /// a word for the entry itself ("one entry per term": `term`), with what it is a measure
    /// of when another marker follows ("one piece of advice per entry": `piece of advice`);
    /// with none, the first word the language writes in the plural, in the singular ("List
    /// common shell commands": `command`); else the language's word for an entry.
    fn read_unit(&mut self, text: &str) {
        let lang = self.lang;
        let mut after_marker = false;
        let mut found = "";
        let mut measure: Option<(&str, &str)> = None;
        // Words as the task spaces them: "one-week" is no marker and a unit.
        let mut spaced =
            text.split_whitespace().map(|t| t.trim_matches(|c: char| !c.is_alphanumeric())).filter(|w| !w.is_empty());
        while let Some(w) = spaced.next() {
            if lang.is_unit_marker(w) {
                after_marker = true;
                continue;
            }
            if after_marker {
                let number = w.chars().all(|c| c.is_numeric());
                let joined = !w.chars().all(char::is_alphanumeric);
                if lang.is_entry_word(w) || number || joined {
                    continue;
                }
                after_marker = false;
                if !lang.is_sentence_word(w) && !lang.is_task_word(w) {
                    found = w;
                    let mut next = spaced.clone();
                    if let (Some(of), Some(what)) = (next.next(), next.next()) {
                        let marked = next.next().is_none_or(|m| lang.is_unit_marker(m));
                        let content = !lang.is_task_word(what) && what.chars().all(char::is_alphabetic);
                        if lang.is_measure_of(of) && content && marked && !lang.is_numbered(w) {
                            measure = Some((of, what));
                        }
                    }
                    break;
                }
            }
        }
        if found.is_empty() && lang.plural == Plural::English {
            found = words(text)
                .filter(|w| w.len() > TAG_MIN_LETTERS && !lang.is_task_word(w))
                .find_map(english_singular)
                .unwrap_or("");
        }
        if found.is_empty() {
            found = lang.entry;
        }
        let _ = self.unit.push_str(crate::bytes::str_prefix(found, UNIT_MAX_BYTES));
        self.numbered = lang.is_numbered(found);
        self.running = lang.is_running(found);
        self.named = lang.is_named(found);
        // The task's own plural: a word of it that starts with the unit and is at most three
        // letters longer ("Begriffe", "tips").
        let own = words(text).find(|w| {
            w.len() > found.len()
                && w.len() <= found.len() + 3
                && w.get(..found.len()).is_some_and(|h| h.to_lowercase() == found.to_lowercase())
        });
        match own {
            Some(w) => {
                let _ = self.units.push_str(crate::bytes::str_prefix(w, UNIT_MAX_BYTES));
            }
            None => plural(lang.plural, found, &mut self.units),
        }
        if let Some((of, what)) = measure {
            let mut both = (self.unit, self.units);
            let grow = |w: &mut ArrayString<UNIT_MAX_BYTES>| [" ", of, " ", what].iter().all(|p| w.push_str(p).is_ok());
            if grow(&mut both.0) && grow(&mut both.1) {
                (self.unit, self.units) = both;
            }
        }
    }

    /// The unit's (or units') first word and the words after it, split at the first space
    /// ("pieces of advice": `pieces`, `of advice`).
    fn head_and_measure(unit: &str) -> (&str, &str) {
        unit.split_once(' ').unwrap_or((unit, ""))
    }

    /// How many units the task asks for: a number (digits, or a number word of its language)
    /// before the unit's word (at most [`COUNT_WORDS_BEFORE_UNIT`] words between), or before a
    /// span counted in units ("a one-week trip, one day per entry": seven days); not when a
    /// unit marker follows ("one tip per entry" names the unit, it does not count it), nor
    /// across a marker or a word for the entry ("one entry per term"). The first such number
    /// counts.
    fn read_count(&mut self, text: &str) {
        let lang = self.lang;
        let same = |a: &str, b: &str| a.chars().flat_map(char::to_lowercase).eq(b.chars().flat_map(char::to_lowercase));
        let mut tokens: ArrayVec<&str, COUNT_SCAN_WORDS> = ArrayVec::new();
        for t in text.split(|c: char| c.is_whitespace() || c == '-') {
            let t = t.trim_matches(|c: char| !c.is_alphanumeric());
            if !t.is_empty() && tokens.push(t).is_err() {
                break;
            }
        }
        let (unit, measure) = Self::head_and_measure(self.unit.as_str());
        let (units, _) = Self::head_and_measure(self.units.as_str());
        let t = tokens.as_slice();
        for (i, n) in t.iter().enumerate() {
            let n = match n.parse::<u32>() {
                Ok(n) => Some(n),
                Err(_) => lang.numbers.iter().find(|(word, _)| same(word, n)).map(|(_, v)| v),
            };
            let Some(n) = n.filter(|n| (1..=COUNT_MAX).contains(n)) else { continue };
            // The unit's word among the next few, after words that qualify it ("3 practical
            // tips"); a marker or a word for the entry ends the search.
            for (j, w) in t.iter().enumerate().skip(i + 1).take(COUNT_WORDS_BEFORE_UNIT + 1) {
                if lang.is_unit_marker(w) || lang.entry_words.iter().any(|e| same(e, w)) {
                    break;
                }
                let per = if !unit.is_empty() && (same(w, unit) || same(w, units)) {
                    Some(1)
                } else {
                    lang.spans.iter().find(|(span, of, _)| same(span, w) && same(of, unit)).map(|(_, _, k)| *k)
                };
                let Some(per) = per else { continue };
                // What the unit is a measure of, when the task writes it here ("one piece of
                // advice"), is part of the unit's name: the marker is looked for after it.
                let after = t.get(j + 1..).unwrap_or(&[]);
                let written = measure.split(' ').filter(|m| !m.is_empty()).count();
                let skip = if measure.split(' ').zip(after).all(|(m, w)| same(m, w)) { written } else { 0 };
                if after.get(skip).is_some_and(|m| lang.is_unit_marker(m)) {
                    break;
                }
                self.count = Some(n.saturating_mul(per));
                return;
            }
        }
    }

    /// The phrase: in the task's clause that holds its units' word (as a word, or the end of a
    /// hyphenated one: "Astronomie-Begriffe"), up to [`PHRASE_BEFORE_MAX`] words of content
    /// before it and, when the clause goes on without a joining word, up to
    /// [`PHRASE_AFTER_MAX`] words after it, up to its last word of content (not "in
    /// storage"); else the units. The task's first word, its verb, is
    /// not part of it.
    fn read_phrase(&mut self, text: &str) {
        let lang = self.lang;
        let units = self.units.as_str();
        // What the units are a measure of stands for them ("advice" for "pieces of advice").
        let what = Self::head_and_measure(units).1.rsplit(' ').next().unwrap_or("");
        let is_units = |w: &str| {
            let last = w.rsplit('-').next().unwrap_or(w);
            let last = last.to_lowercase();
            !units.is_empty() && (last == units.to_lowercase() || (!what.is_empty() && last == what.to_lowercase()))
        };
        let mut first = true;
        for clause in text.split(['.', ',', ':', ';', '!', '?', '\n', '(', ')']) {
            let tokens: ArrayVec<&str, 64> = {
                let mut v = ArrayVec::new();
                for t in clause.split_whitespace() {
                    if v.push(t).is_err() {
                        break;
                    }
                }
                v
            };
            let t = tokens.as_slice();
            let opens = first && !t.is_empty();
            first &= t.is_empty();
            let Some(at) = t.iter().position(|w| is_units(w)) else { continue };
            let mut start = at;
            // The task's first word is its verb ("Suggest", "Describe"), whichever it is, unless
            // the units' word follows it straight ("Astronomy terms").
            let floor = usize::from(opens && at >= 2);
            while start > floor && at - start < PHRASE_BEFORE_MAX {
                let w = t.get(start - 1).copied().unwrap_or("");
                if lang.is_task_word(w) || w.chars().all(|c| c.is_numeric()) {
                    break;
                }
                start -= 1;
            }
            let mut end = at + 1;
            let after = t.get(at + 1..).unwrap_or(&[]);
            if after.len() <= PHRASE_AFTER_MAX && after.first().is_some_and(|w| !lang.is_join(w)) {
                // Up to its last word of content: not the words about the task itself that may
                // end it ("terms in storage"), but those within it ("a new language").
                end = at + 1 + after.iter().rposition(|w| !lang.is_task_word(w)).map_or(0, |i| i + 1);
            }
            for (i, w) in t.get(start..end).unwrap_or(&[]).iter().enumerate() {
                let sep = if i == 0 { "" } else { " " };
                let w = if start + i == at && !what.is_empty() { units } else { w };
                if self.phrase.push_str(sep).is_err() || self.phrase.push_str(w).is_err() {
                    break;
                }
            }
            return;
        }
        let _ = self.phrase.push_str(units);
    }

    /// For a numbered unit, the phrase names what the units make up, where the language's table
    /// says how (`Lang::units_of`): the task's first clause after its first word and its
    /// sentence words, but for a word that holds the unit's own ("Plan a one-week trip to
    /// Japan": "days of the one-week trip to Japan").
    /// Under a bare "Days:" SmolLM2-135M listed made-up words ("ichiya Japan, Tokyo"), under
    /// this the places of the trip (docs/measurements.md, "A numbered unit's heading").
    fn read_whole(&mut self, text: &str) {
        let (lang, of) = (self.lang, self.lang.units_of);
        let Some(clause) = text.split([',', '.', ':', ';', '!', '?', '\n', '(', ')']).next() else { return };
        let mut whole = clause.split_whitespace().skip(1).skip_while(|w| lang.is_sentence_word(w)).peekable();
        if !self.numbered || of.is_empty() || whole.peek().is_none() {
            return;
        }
        let mut phrase = ArrayString::<PHRASE_MAX_BYTES>::new();
        if phrase.push_str(self.units.as_str()).is_err() || phrase.push_str(of).is_err() {
            return;
        }
        // A word that holds the unit's own word ("step-by-step", "four-week" for weeks) says
        // nothing more of what the units make up, and the model wrote the word on ("Step ik").
        let (unit, units) = (self.unit.as_str(), self.units.as_str());
        let holds_unit =
            |w: &str| w.split('-').any(|part| part.eq_ignore_ascii_case(unit) || part.eq_ignore_ascii_case(units));
        let mut kept: ArrayVec<&str, WHOLE_MAX_WORDS> = ArrayVec::new();
        for w in whole.filter(|w| !holds_unit(w)).take(WHOLE_MAX_WORDS) {
            // A clause that names the units itself ("one day per entry") says nothing more.
            if lang.is_unit_marker(w) || lang.is_entry_word(w) {
                return;
            }
            let _ = kept.push(w);
        }
        // Cut at the bound, it ends with a word of content ("a loaf of bread", not "bread at").
        while kept.as_slice().last().is_some_and(|w| lang.is_sentence_word(w)) {
            kept.pop();
        }
        if kept.is_empty() {
            return;
        }
        for (i, w) in kept.iter().enumerate() {
            if (i > 0 && phrase.push_str(" ").is_err()) || phrase.push_str(w).is_err() {
                return;
            }
        }
        self.phrase = phrase;
    }

    /// The tags: the task's first word of content and the longest of the others (the subject
    /// of "tips for growing tomatoes" is longer than its verbs), each a tag of at least
    /// [`TAG_MIN_LETTERS`] ASCII letters or digits; with fewer than two, the unit's tag (or
    /// [`FALLBACK_TAG`]) and the task's hash, so every task has a product of its own.
    fn read_tags(&mut self, text: &str) {
        let lang = self.lang;
        let mut content: ArrayVec<Word, TASK_WORDS_MAX> = ArrayVec::new();
        for w in words(text) {
            let mut tag = Word::new();
            let letters = w.chars().filter(|c| c.is_alphabetic()).count();
            if letters >= TAG_MIN_LETTERS
                && !lang.is_task_word(w)
                && as_tag(w, &mut tag)
                && !content.as_slice().contains(&tag)
            {
                let _ = content.push(tag);
            }
        }
        let mut tags: ArrayVec<Word, PRODUCT_TAGS_MAX> = ArrayVec::new();
        if let Some(first) = content.as_slice().first() {
            let _ = tags.push(*first);
        }
        let mut longest: Option<Word> = None;
        for w in content.iter().skip(1) {
            if longest.is_none_or(|l| w.len() > l.len()) {
                longest = Some(*w);
            }
        }
        if let Some(l) = longest {
            let _ = tags.push(l);
        }
        if tags.len() < PRODUCT_TAGS_MAX {
            let mut unit = Word::new();
            if tags.is_empty() && as_tag(self.unit.as_str(), &mut unit) {
                let _ = tags.push(unit);
            } else if tags.is_empty() {
                let _ = tags.push(Word::try_from_str(FALLBACK_TAG).unwrap_or_default());
            }
            let mut hashed = Word::new();
            let _ = hashed.format(format_args!("t{:04x}", self.hash & 0xffff));
            let _ = tags.push(hashed);
        }
        let mut joined = ArrayString::<{ PRODUCT_TAGS_MAX * (TAG_MAX_BYTES + 1) }>::new();
        for (i, t) in tags.iter().enumerate() {
            let _ = joined.push_str(if i == 0 { "" } else { "," });
            let _ = joined.push_str(t.as_str());
        }
        self.key = normalize(joined.as_str()).ok();
    }

    /// The label of the `n`-th entry of a numbered unit ("Day 3"), into `out`.
    pub fn label(&self, n: u32, out: &mut ArrayString<UNIT_MAX_BYTES>) {
        out.clear();
        let mut chars = self.unit.chars();
        if let Some(c) = chars.next() {
            for u in c.to_uppercase() {
                let _ = out.push(u);
            }
        }
        let _ = out.format(format_args!("{} {}", chars.as_str(), n));
    }
}

/// `word` as a tag (`[a-z0-9]`, lowercased), when it is ASCII letters and digits only and
/// starts with a letter; `false` otherwise (a word of another script, "Größe", is no tag).
pub fn as_tag(word: &str, out: &mut Word) -> bool {
    out.clear();
    if !word.bytes().all(|b| b.is_ascii_alphanumeric()) || !word.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
    {
        return false;
    }
    for b in word.bytes() {
        if out.push(b.to_ascii_lowercase() as char).is_err() {
            return false;
        }
    }
    true
}

/// The singular of an English plural ("commands": `command`, "facts": `fact`, "stories":
/// none: only a plain `-s` is undone, which is never wrong about what the unit is).
fn english_singular(word: &str) -> Option<&str> {
    let one = word.strip_suffix('s')?;
    let plain = one.len() >= TAG_MIN_LETTERS
        && !one.ends_with(['s', 'u', 'i'])
        && one.chars().all(|c| c.is_ascii_alphabetic())
        && one.chars().next().is_some_and(|c| c.is_ascii_lowercase());
    plain.then_some(one)
}

/// `word` in the plural by `rule`, into `out`.
fn plural(rule: Plural, word: &str, out: &mut ArrayString<UNIT_MAX_BYTES>) {
    out.clear();
    let fits =
        |out: &mut ArrayString<UNIT_MAX_BYTES>, a: &str, b: &str| out.push_str(a).is_ok() && out.push_str(b).is_ok();
    let ok = match rule {
        Plural::Same => fits(out, word, ""),
        Plural::S if word.ends_with('s') => fits(out, word, ""),
        Plural::S => fits(out, word, "s"),
        Plural::English => {
            let stem = word.strip_suffix('y').filter(|b| !b.is_empty() && !b.ends_with(['a', 'e', 'i', 'o', 'u']));
            let sibilant = ["s", "x", "z", "ch", "sh"].iter().any(|e| word.ends_with(e));
            match stem {
                Some(b) => fits(out, b, "ies"),
                None => fits(out, word, if sibilant { "es" } else { "s" }),
            }
        }
    };
    if !ok {
        out.clear();
        let _ = out.push_str(crate::bytes::str_prefix(word, UNIT_MAX_BYTES));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (String, String, String, bool) {
        let t = Task::read(text);
        (t.key.map(|k| k.as_str().to_string()).unwrap_or_default(), t.unit.to_string(), t.units.to_string(), t.numbered)
    }

    #[test]
    fn tags_and_unit_come_from_the_tasks_own_words() {
        let cases = [
            ("Write practical tips for growing tomatoes at home, one tip per entry.", "tips,tomatoes", "tip", "tips", false),
            ("Build a glossary of astronomy terms: one entry per term, with a one-sentence definition.", "astronomy,glossary", "term", "terms", false),
            ("Collect useful facts about the planets of the solar system.", "facts,planets", "fact", "facts", false),
            ("Plan a one-week trip to Japan, one day per entry.", "japan,plan", "day", "days", true),
            ("List common Linux shell commands and what each does.", "commands,linux", "command", "commands", false),
            ("Write a short story about a lighthouse keeper, one paragraph per entry.", "lighthouse,story", "paragraph", "paragraphs", true),
            ("Erstelle ein Glossar der Astronomie-Begriffe: ein Eintrag pro Begriff, mit einer Definition in einem Satz.", "astronomie,glossar", "Begriff", "Begriffe", false),
            ("Give advice for keeping houseplants alive, one piece of advice per entry.", "advice,houseplants", "piece of advice", "pieces of advice", false),
            ("Collect trivia about the Moon: one bit of trivia per entry.", "moon,trivia", "bit of trivia", "bits of trivia", false),
            ("Plan a holiday in Rome, one day of the holiday per entry.", "holiday,plan", "day", "days", true),
            // Words that praise the units are no more their subject than "useful" is.
            ("Collect interesting facts about honeybees.", "facts,honeybees", "fact", "facts", false),
            ("List famous paintings and the artist who painted each.", "painted,paintings", "painting", "paintings", false),
        ];
        for (task, key, unit, units, numbered) in cases {
            assert_eq!(read(task), (key.into(), unit.into(), units.into(), numbered), "{task}");
        }
    }

    #[test]
    fn a_task_without_tags_of_its_own_gets_a_product_of_its_own() {
        let a = Task::read("天文学の用語集を作成してください。");
        let b = Task::read("日本の旅行の計画を立ててください。");
        let (ka, kb) = (a.key.unwrap(), b.key.unwrap());
        assert_ne!(ka, kb);
        assert!(ka.as_str().starts_with("t"), "{}", ka.as_str());
        assert!(Task::read("").key.is_none() && Task::read("  \n").key.is_none());
    }

    #[test]
    fn any_text_reads_within_bounds() {
        let mut r = crate::testing::rng::Rng(7);
        let mut below = |n: u64| r.next() % n;
        for _ in 0..500 {
            let len = below(4097) as usize;
            let text: String = (0..len).map(|_| char::from_u32(below(0x3100) as u32).unwrap_or('x')).collect();
            let t = Task::read(&text);
            assert!(t.unit.len() <= UNIT_MAX_BYTES && t.units.len() <= UNIT_MAX_BYTES);
            if !text.trim().is_empty() {
                assert!(t.key.is_some(), "{text:?}");
            }
        }
    }

    #[test]
    fn the_units_phrase_is_the_tasks_own() {
        let cases = [
            (
                "Write practical tips for growing tomatoes at home, one tip per entry.",
                "tips for growing tomatoes at home",
            ),
            (
                "Build a glossary of astronomy terms: one entry per term, with a one-sentence definition.",
                "astronomy terms",
            ),
            (
                "Build a glossary of astronomy terms in storage: one entry per term, with a one-sentence definition.",
                "astronomy terms",
            ),
            ("List common Linux shell commands and what each does.", "Linux shell commands"),
            (
                "Collect useful facts about the planets of the solar system.",
                "facts about the planets of the solar system",
            ),
            ("Plan a one-week trip to Japan, one day per entry.", "days of the one-week trip to Japan"),
            ("Write a recipe for pancakes, one step per entry.", "steps of the recipe for pancakes"),
            // A word that holds the units' own word says nothing more of what they make up: under
            // "Steps of the step-by-step instructions" SmolLM2-135M wrote "Step ik" in two
            // outlines of three, then Dutch and Norwegian.
            (
                "Write step-by-step instructions for baking a loaf of bread at home, one step per entry.",
                "steps of the instructions for baking a loaf of bread",
            ),
            ("Write a four-week beginner running plan, one week per entry.", "weeks of the beginner running plan"),
            ("One day per entry: a trip to Rome.", "days"),
            ("Erstelle ein Glossar der Astronomie-Begriffe: ein Eintrag pro Begriff.", "Astronomie-Begriffe"),
            (
                "Give advice for keeping houseplants alive, one piece of advice per entry.",
                "pieces of advice for keeping houseplants alive",
            ),
            (
                "Give five pieces of advice for keeping houseplants alive, one piece of advice per entry.",
                "pieces of advice for keeping houseplants alive",
            ),
            // The task's first word is its verb, whichever: "Name five Suggest healthy
            // breakfast ideas." asked for ideas of suggesting.
            ("Suggest healthy breakfast ideas, one idea per entry.", "healthy breakfast ideas"),
            ("Describe famous bridges of Europe.", "bridges of Europe"),
            // A task without a verb loses its first word only when a word of content is left
            // before its units.
            ("Healthy breakfast ideas, one idea per entry.", "breakfast ideas"),
            // A word tasks are phrased with may be the subject's own ("a new language"): the
            // phrase ends at its last word of content, not at the first such word.
            ("Give tips for learning a new language, one tip per entry.", "tips for learning a new language"),
            ("Give tips for making your own candles, one tip per entry.", "tips for making your own candles"),
            ("Astronomy terms: one entry per term.", "Astronomy terms"),
        ];
        for (task, phrase) in cases {
            assert_eq!(Task::read(task).phrase.as_str(), phrase, "{task}");
        }
    }

    #[test]
    fn the_count_of_units_is_read_where_the_task_states_one() {
        let cases = [
            ("Plan a one-week trip to Japan, one day per entry.", Some(7)),
            ("Plan a five-day trip to Italy, one day per entry.", Some(5)),
            ("List 10 tips for saving water, one tip per entry.", Some(10)),
            ("Write 3 practical tips for growing tomatoes at home, one tip per entry.", Some(3)),
            ("Write three paragraphs about the sea, one paragraph per entry.", Some(3)),
            ("Write practical tips for growing tomatoes at home, one tip per entry.", None),
            ("Build a glossary of astronomy terms: one entry per term, with a one-sentence definition.", None),
            ("Collect useful facts about the 8 planets of the solar system.", None),
            ("Liste zehn Begriffe der Astronomie auf, ein Eintrag pro Begriff.", Some(10)),
            ("List 2026 tips, one tip per entry.", None),
            ("Give advice for keeping houseplants alive, one piece of advice per entry.", None),
            ("Give five pieces of advice for keeping houseplants alive, one piece of advice per entry.", Some(5)),
        ];
        for (task, count) in cases {
            assert_eq!(Task::read(task).count, count, "{task}");
        }
    }

    #[test]
    fn a_numbered_unit_is_labelled_with_its_number() {
        let t = Task::read("Plan a one-week trip to Japan, one day per entry.");
        let mut l = ArrayString::new();
        t.label(3, &mut l);
        assert_eq!(l.as_str(), "Day 3");
    }
}
