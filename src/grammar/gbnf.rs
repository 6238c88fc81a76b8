//! The reply language as a GBNF grammar (llama.cpp's grammar format; grammars/README.md in
//! llama.cpp), for the canonical tag reply:
//!
//! ```text
//! <agent>
//! <think_log>why</think_log>
//! <next_state>commanding</next_state>
//! <action><type>storage_save</type><tags>dictionary,terms</tags><value>text</value></action>
//! </agent>
//! ```
//!
//! A product ask that is the whole reply is the exception: its grammar is the value alone
//! (`root ::= value`), which the agent wraps in the action ([`super::Language::bare_ask`]).
//!
//! Only the parts the current [`Shape`](super::Shape) holds are written, always in that order
//! (the log first, so a model reasons before it decides), one per line, with no other
//! whitespace: a model cannot spend tokens on layout. Text is one line of characters other
//! than `<`, `&` and line breaks, starting with a visible one; tags are `[a-z0-9_]`, the
//! characters key normalisation keeps. Keys a remove or a load may name are listed as
//! literals.
//!
//! Syntax used, and nothing else: `::=`, `|`, `( )`, `?`, `{m,n}`, `"literal"` with the escapes
//! `\\`, `\"` and `\xHH`, and `[...]` / `[^...]` classes. Bounded repetitions never nest past a
//! product of 2,000 (llama.cpp's `MAX_REPETITION_THRESHOLD`; [`super::Bounds::clamped`]).
//! Several actions are written as explicit alternatives, not as a repetition, for the same
//! reason.

use super::{Language, ProductAsk, ProductSave};
use crate::error::Result;
use crate::fixed::{ArrayVec, FixedBuf};
use crate::limits::{
    GRAMMAR_ENTRY_MAX_CLAUSES, GRAMMAR_ENTRY_MAX_WORDS, GRAMMAR_NAME_MAX_CHARS, GRAMMAR_OUTLINE_ITEM_MAX_CHARS,
    GRAMMAR_OUTLINE_ITEM_MAX_WORDS, GRAMMAR_PLAN_MAX_NAMES, GRAMMAR_UNIT_MAX_SENTENCES, GRAMMAR_UNIT_SCRIPT_MAX_CHARS,
    PRODUCT_TAKEN_MAX,
};
use crate::reply::ActionKind;

/// Writes the GBNF grammar of `lang` into `out` (cleared first). `CAPACITY_EXCEEDED` if it
/// does not fit (`limits::GRAMMAR_MAX_BYTES` is sized for the largest key lists).
pub fn write(lang: &Language<'_>, out: &mut FixedBuf) -> Result<()> {
    out.clear();
    let b = lang.bounds.clamped();
    let shape = lang.effective_shape();
    out.push_str("# lkjagent reply grammar (generated each cycle)\n")?;
    if let Some(p) = lang.bare_ask() {
        // The value alone: the agent wraps the reply in the action it asked for.
        out.push_str("root ::= value\n")?;
        return asked_value(out, &p);
    }
    if b.think_chars > 0 {
        out.push_str("root ::= think? agent\n")?;
        out.format(format_args!("think ::= \"<think>\" [^<]{{0,{}}} \"</think>\\n\"\n", b.think_chars))?;
    } else {
        out.push_str("root ::= agent\n")?;
    }
    out.push_str("agent ::= \"<agent>\\n\"")?;
    if shape.log.is_some() {
        out.push_str(" log")?;
    }
    if shape.next_state {
        out.push_str(" next")?;
    }
    if !shape.actions.is_empty() {
        out.push_str(" actions")?;
    }
    out.push_str(" \"</agent>\"\n")?;
    if let Some(log) = shape.log {
        let name = log.name();
        out.format(format_args!("log ::= \"<{}>\" log-text \"</{}>\\n\"\n", name, name))?;
        // Reasoning in words: no digits (small models drift into number lists).
        text_rule(out, "log-text", b.log_chars, "0-9")?;
    }
    if shape.next_state {
        out.push_str("next ::= \"<next_state>\" (")?;
        for (i, s) in lang.next_states().enumerate() {
            out.push_str(if i == 0 { " " } else { " | " })?;
            literal(out, s)?;
        }
        out.push_str(" ) \"</next_state>\\n\"\n")?;
    }
    let asked = lang.product.filter(|p| p.ask != ProductAsk::Entry && shape.actions.contains(ActionKind::StorageSave));
    if let Some(p) = asked {
        return asked_action(out, &p);
    }
    if !shape.actions.is_empty() {
        // actions ::= action | action action | ... (explicit: no nested bounded repetition).
        out.push_str("actions ::= action")?;
        for n in 2..=b.max_actions {
            out.push_str(" | action")?;
            for _ in 1..n {
                out.push_str(" action")?;
            }
        }
        out.push_str("\naction ::= \"<action><type>\" (")?;
        for (i, kind) in shape.actions.iter().enumerate() {
            out.format(format_args!("{}a-{}", if i == 0 { " " } else { " | " }, rule_name(kind)))?;
        }
        out.push_str(" ) \"</action>\\n\"\n")?;
        let mut free_key = false;
        let mut value = false;
        for kind in shape.actions.iter() {
            out.format(format_args!("a-{} ::= \"{}</type><tags>\" ", rule_name(kind), kind.as_str()))?;
            match kind {
                ActionKind::WorkingMemoryRemove | ActionKind::StorageLoad | ActionKind::StorageSearch => {
                    out.push_str("(")?;
                    let mut first = true;
                    let mut failed = None;
                    lang.each_key(kind, &mut |k| {
                        if failed.is_some() {
                            return;
                        }
                        let r = out.push_str(if first { " " } else { " | " }).and_then(|()| literal(out, k));
                        if let Err(e) = r {
                            failed = Some(e);
                        }
                        first = false;
                    });
                    if let Some(e) = failed {
                        return Err(e);
                    }
                    out.push_str(" ) \"</tags>\"\n")?;
                }
                ActionKind::StorageSave if lang.product.is_some() => {
                    let product = lang.product.map_or("", |p| p.tags);
                    literal(out, product)?;
                    out.push_str(" \"</tags><value>\" entry \"</value>\"\n")?;
                }
                _ => {
                    free_key = true;
                    value = true;
                    out.push_str("key \"</tags><value>\" value \"</value>\"\n")?;
                }
            }
        }
        if let Some(product) = lang.product.filter(|_| shape.actions.contains(ActionKind::StorageSave)) {
            product_rules(out, &product, b.value_chars)?;
        }
        if free_key {
            out.format(format_args!("key ::= tag (\",\" tag){{0,{}}}\n", b.tags_per_key.saturating_sub(1)))?;
            // A tag starts with a letter: a key of numbers means nothing to a reader.
            out.format(format_args!("tag ::= [a-z] [a-z0-9_]{{0,{}}}\n", b.tag_chars.saturating_sub(1)))?;
        }
        if value {
            text_rule(out, "value", b.value_chars, "")?;
        }
    }
    Ok(())
}

/// The one action of a product ask, in its envelope: all of it literal but the value.
fn asked_action(out: &mut FixedBuf, p: &ProductSave<'_>) -> Result<()> {
    if let Some((kind, tags)) = p.action() {
        out.format(format_args!("actions ::= \"<action><type>{}</type><tags>\" ", kind.as_str()))?;
        literal(out, tags)?;
        out.push_str(" \"</tags><value>\" value \"</value></action>\\n\"\n")?;
    }
    asked_value(out, p)
}

/// The value of a product ask: what the model is asked for, a unit's text after its head, or
/// two to [`GRAMMAR_PLAN_MAX_NAMES`] subjects of an outline after the list so far.
fn asked_value(out: &mut FixedBuf, p: &ProductSave<'_>) -> Result<()> {
    out.push_str("value ::= ")?;
    match p.ask {
        ProductAsk::Unit { head, opening, latin } => {
            literal(out, head)?;
            out.push_str(" \": \" text\n")?;
            if !latin {
                // A script without spaces between words: characters, bounded, no markup, not
                // starting with a digit or a Latin letter (a drifting model's way out), after
                // the opening when there is one.
                out.push_str("text ::= ")?;
                if !opening.is_empty() {
                    literal(out, opening)?;
                    out.push_str(" ")?;
                }
                return out.format(format_args!(
                    "[^<&\\n\\r 0-9A-Za-z] [^<&\\n\\r]{{3,{}}}\n",
                    GRAMMAR_UNIT_SCRIPT_MAX_CHARS * GRAMMAR_UNIT_MAX_SENTENCES
                ));
            }
            // One to GRAMMAR_UNIT_MAX_SENTENCES sentences, each of words counted as a chain,
            // `more-<words left>-<commas left>`, not as clauses of a fixed length (a clause cut
            // at a fixed length ended most texts mid-phrase); at least three words each.
            let commas = GRAMMAR_ENTRY_MAX_CLAUSES.saturating_sub(1);
            let left = GRAMMAR_ENTRY_MAX_WORDS.saturating_sub(3);
            out.push_str(if opening.is_empty() { "text ::= sentence" } else { "text ::= opening" })?;
            for _ in 1..GRAMMAR_UNIT_MAX_SENTENCES {
                out.push_str(" (\" \" sentence")?;
            }
            for _ in 1..GRAMMAR_UNIT_MAX_SENTENCES {
                out.push_str(")?")?;
            }
            out.push_str("\n")?;
            if !opening.is_empty() {
                // The first sentence goes on from the unit's subject with a word, not a comma: a
                // small model given the subject first says something of it ("Osaka is a city
                // known for its food"), where it copied the task or listed the other subjects
                // when it chose the opening (docs/measurements.md, "A unit opens with its
                // subject"). Its words count toward the sentence's.
                let said = u32::try_from(opening.split_whitespace().count()).unwrap_or(u32::MAX);
                let l = GRAMMAR_ENTRY_MAX_WORDS.saturating_sub(said.saturating_add(2)).min(left);
                out.push_str("opening ::= ")?;
                literal(out, opening)?;
                out.format(format_args!(
                    " \" \" word (\" \" word more-{l}-{c} | \", \" word more-{l}-{c1})\n",
                    c = commas,
                    c1 = commas.saturating_sub(1)
                ))?;
            }
            // A sentence starts with a capital, as every language in Latin letters writes one
            // (free to start in small letters, a small model ran letters together: see
            // docs/measurements.md, "The grammar's word rules"), and opens with two words in a
            // row, a clause, not a list ("In Kyoto, visit ..." but not "Japan, 2 days, 2."), its
            // commas all counted: free to put one after its first word and its second uncounted,
            // a small model listed the task's words and numbers instead of saying something
            // (docs/measurements.md, "A sentence opens with a clause").
            out.format(format_args!(
                "sentence ::= first \" \" word (\" \" word more-{l}-{c} | \", \" word more-{l}-{c1})\n",
                l = left,
                c = commas,
                c1 = commas.saturating_sub(1)
            ))?;
            out.push_str("first ::= cap core (\"-\" part | \"'\" [a-z]{1,2})? | vcap vpart | one | [A-Z]{2,6}\n")?;
            for w in 0..=left {
                for c in 0..=commas {
                    out.format(format_args!("more-{}-{} ::= end", w, c))?;
                    if w > 0 {
                        out.format(format_args!(" | \" \" word more-{}-{}", w - 1, c))?;
                        if c > 0 {
                            out.format(format_args!(" | \", \" word more-{}-{}", w - 1, c - 1))?;
                        }
                    }
                    out.push_str("\n")?;
                }
            }
            out.push_str("end ::= \".\" | \"!\" | \"?\"\n")?;
            word_rules(out)
        }
        ProductAsk::Outline { prefix, first, words, latin, .. } => {
            literal(out, prefix)?;
            out.push_str(" items\n")?;
            // The list goes on in its own numbers, two items at least: a small model lists
            // what it knows one a line, numbered.
            out.push_str("items ::= item")?;
            for i in 1..GRAMMAR_PLAN_MAX_NAMES {
                out.format(format_args!(
                    " {}\"\\n{}. \" item",
                    if i >= 2 { "(" } else { "" },
                    first.saturating_add(i)
                ))?;
            }
            for _ in 2..GRAMMAR_PLAN_MAX_NAMES {
                out.push_str(")?")?;
            }
            // A line's end after the last: a model that may not number one more goes on with
            // the last item instead.
            out.push_str(" \"\\n\"?\n")?;
            if !latin {
                return out.format(format_args!(
                    "item ::= [^<&\\n\\r:,.0-9 ] [^<&\\n\\r:]{{1,{}}}\n",
                    GRAMMAR_OUTLINE_ITEM_MAX_CHARS.saturating_sub(1)
                ));
            }
            // An item: a subject ("Black hole", "Kyoto") or a unit in one sentence, up to
            // GRAMMAR_OUTLINE_ITEM_MAX_WORDS words, each an optional capital and up to
            // OUTLINE_WORD_MAX_LETTERS small letters (one or two more after `'`) or capitals as
            // many (a word shouted is written whole, and the plan keeps no item with one longer
            // than an acronym: cut at ACRONYM_MAX, "ASTR" and "NUCL" were asked about), apart by a space or a comma, and a `.` at its end; no `:` (which ends a unit's
            // head) and no numbers (a list that has them counts on). Plain letter classes, not
            // the text's word rule: a server tracks one parse of them, and the word rule's
            // vowel groups cost a token about half its time again without keeping words from
            // running together (docs/measurements.md, "The outline's word rule"). The words are counted as a chain, `imore-<words left>`, as a
            // unit's sentence is: a repeated group cost the server twice the time a token. The
            // runs behind it: docs/measurements.md, "Outline items".
            let left = words.clamp(1, GRAMMAR_OUTLINE_ITEM_MAX_WORDS).saturating_sub(1);
            out.format(format_args!("item ::= iw imore-{}\n", left))?;
            for w in 0..=left {
                out.format(format_args!("imore-{} ::= \".\"?", w))?;
                if w > 0 {
                    out.format(format_args!(" | \" \" iw imore-{}", w - 1))?;
                }
                // A number after an item's second word ("Jupiter has 95 moons"), not as its
                // first or second: a list that numbers its items counts on ("20 days of rain",
                // "Day 3 in Nara"); and a word after it: at an item's end, a number is the
                // list's own numbering run into the item ("... electricity usage 2."). With no
                // digits at all, a fact's number came out as a word the grammar forced ("up to
                // iced pounds"; docs/measurements.md).
                if w > 1 && w < left {
                    out.format(format_args!(" | \" \" inum \" \" iw imore-{}", w - 2))?;
                }
                // A sentence has commas; a name has none ("Stars, stars, celestial bodies" was
                // three names in one).
                if w > 0 && left >= crate::limits::GRAMMAR_OUTLINE_NAME_MAX_WORDS {
                    out.format(format_args!(" | \", \" iw imore-{}", w - 1))?;
                }
                out.push_str("\n")?;
            }
            out.format(format_args!(
                "iw ::= cap? [a-z\\u00DF-\\u00F6\\u00F8-\\u00FF]{{1,{}}} (\"'\" [a-z]{{1,2}})? | [A-Z]{{1,{}}}\n",
                OUTLINE_WORD_MAX_LETTERS,
                OUTLINE_WORD_MAX_LETTERS + 1
            ))?;
            out.push_str("inum ::= [0-9]{1,4}\n")?;
            word_rules(out)
        }
        ProductAsk::Entry => bail!(Internal, "a product entry is not an ask of its own (a bug)"),
    }
}

/// The rules of a word of a text in Latin letters. A word: an optional capital, then letters
/// where vowels come at least every 4 consonants (up to 5 vowel groups), and one `-` part
/// ("flour-based") or one or two letters after `'` ("lion's", "they're"; a longer part is where a
/// drifting model ran the rest of a sentence into one word); a letter and `'` before a word
/// ("l'eau", "d'un"); a capital vowel and at least one more letter ("It", "Es", "In", "Egypt":
/// the capital is the word's first vowel); a word of one capital that Latin-script languages
/// write ("A", "I", "À"; not "Â", which a base model wrote as a word: see
/// docs/measurements.md, "A base model on the English tasks"), and "I" with one or two
/// letters after `'` ("I'm", "I'll": without them SmolLM2-135M ran "I'm" into the next word,
/// "I'mplanning"); a number of up to 4 digits; or an acronym of capitals
/// ("DNA"). Runs of consonants, letters run into digits and long numbers are what a small
/// model writes once it drifts (docs/measurements.md, "The grammar's word rules"). Each rule
/// reads a word one way only, so a server tracks one parse of it.
fn word_rules(out: &mut FixedBuf) -> Result<()> {
    out.push_str(
        "word ::= lead | [0-9]{1,4}\n\
         lead ::= cap? core (\"-\" part | \"'\" [a-z]{1,2})? | vcap vpart | [a-zA-HJ-Z] \"'\" core | one | [A-Z]{2,6}\n\
         one ::= \"A\" | \"I\" (\"'\" [a-z]{1,2})? | \"\\u00C0\"\n\
         cap ::= [A-Z\\u00C0-\\u00D6\\u00D8-\\u00DE]\n\
         vcap ::= [AEIOUY\\u00C0-\\u00C6\\u00C8-\\u00CF\\u00D2-\\u00D6\\u00D9-\\u00DD]\n\
         core ::= cs{0,3} vs (cs{1,4} vs){0,4} cs{0,4}\n\
         part ::= cs{0,3} (vs (cs{1,4} vs){0,2} cs{0,4})?\n\
         vpart ::= cs{1,3} (vs (cs{1,4} vs){0,2} cs{0,4})? | vs (cs{1,4} vs){0,2} cs{0,4}\n\
         cs ::= [b-df-hj-np-tv-z\\u00DF]\n\
         vs ::= [aeiouy\\u00E0-\\u00F6\\u00F8-\\u00FF]{1,3}\n",
    )
}

/// The rules of a product save (see [`ProductSave`]): `entry`, the value, is a name, `": "`
/// and one line of text. The name is what the agent files the entry under (its tag: ASCII
/// letters lowercased, a space as `_`), written as a reader writes a name: a capital, small
/// letters, and a space before each further word (`Cape buffalo`), or an acronym (`TCP`); it
/// is not one whose tag is taken, and does not start with a taken word that ends with `_`, nor
/// with the letters of one that ends with `*`.
///
/// `name` is the complement of the taken names within those names of at most M characters
/// (M = [`GRAMMAR_NAME_MAX_CHARS`]), written as the trie of the taken names: a node is the set
/// of taken names that share a prefix, and its rule either leaves the trie with a character no
/// taken name has next (then the rest of the word and at most one more), or follows one that
/// some have, or ends, when no taken name ends there; a node where a taken `word_` ends, or
/// where the letters of a taken `word*` do, is closed: nothing goes on from it (nor ends there,
/// for `word*`). A node is named by the first of its names in sorted order and the depth
/// (`n-<index>-<depth>`), which is unique because the names are sorted. A node that can write
/// nothing (a taken name of M characters ends there, so the name would have to go on past M)
/// is dead: no rule leads to it. The recursion is as deep as a name is long, at most M.
fn product_rules(out: &mut FixedBuf, p: &ProductSave<'_>, value_chars: u32) -> Result<()> {
    name_rules(out, p)?;
    out.push_str("entry ::= name \": \" value\n")?;
    text_rule(out, "value", value_chars, "")
}

/// Most letters of a word of a name after the trie of taken names ("hippopotamus"; a small
/// model that drifts runs words together: "Elephantelephantlamb").
const NAME_WORD_MAX: usize = 13;

/// Most small letters of an outline item's word after its capital: the longest word of a
/// sentence in most languages of Latin letters ("responsibilities", "Sternbeobachtung").
const OUTLINE_WORD_MAX_LETTERS: u32 = 15;

/// Most characters of a name written as an acronym ("TCP", "HTTP"): a capital, then capitals
/// and digits. Longer runs of capitals were a small model shouting words ("ALMOST"). A list
/// writes them whole, up to a word's most letters (and the plan keeps none: see
/// `agent::product`): cut here, they were made-up acronyms asked about and stored
/// (docs/measurements.md, "The grammar's word rules").
pub const ACRONYM_MAX: u32 = 4;

/// The `name` rule of [`product_rules`] and of a names ask, of names of `words` words.
fn name_rules(out: &mut FixedBuf, p: &ProductSave<'_>) -> Result<()> {
    let max = GRAMMAR_NAME_MAX_CHARS as usize;
    // Only names the rule below could write matter; they must come sorted and distinct.
    let writable = |n: &str| {
        let letters = n.strip_suffix('*').unwrap_or(n);
        letters.len() <= max
            && letters.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
            && letters.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    if p.taken.iter().zip(p.taken.iter().skip(1)).any(|(a, b)| a >= b) {
        bail!(Internal, "the names a product entry may not take are not sorted and distinct (a bug)");
    }
    let mut taken: ArrayVec<&str, PRODUCT_TAKEN_MAX> = ArrayVec::new();
    for n in p.taken.iter().copied().filter(|n| writable(n)) {
        if taken.push(n).is_err() {
            break;
        }
    }
    // A name of one or two words ("Cape buffalo").
    let one = false;
    let trie = Trie { names: taken.as_slice(), max, one };
    let capitals = if one { NAME_WORD_MAX as u32 } else { ACRONYM_MAX };
    // A name's second word, when it may have one.
    let second = if one { "" } else { " (\" \" nw)?" };
    if taken.is_empty() || !trie.alive(0, taken.len(), 0) {
        // Nothing to exclude, or (not with any real list) the names fill every path: a save of
        // a taken name is then refused when carried out.
        out.format(format_args!(
            "name ::= [A-Z] ([a-z]{{0,{}}}{} | [A-Z0-9]{{1,{}}})\n",
            NAME_WORD_MAX - 1,
            second,
            capitals - 1
        ))?;
    } else {
        out.push_str("name ::= n-0-0\n")?;
        trie.node(out, 0, taken.len(), 0)?;
        for depth in 1..=max {
            // The rest of this word, and at most one more word when a name may have two.
            out.format(format_args!("r-{} ::= [a-z]{{0,{}}}{}", depth, (max - depth).min(NAME_WORD_MAX), second))?;
            // After a first letter no taken name starts with, an acronym too.
            out.push_str(if depth == 1 { " | [A-Z] ra\n" } else { "\n" })?;
        }
        out.format(format_args!("ra ::= [A-Z0-9]{{0,{}}}\n", capitals - 2))?;
    }
    if one {
        return Ok(());
    }
    // A second word: small letters, a vowel at least every 3 consonants ("buffalo", not the
    // runs of consonants a small model wrote when any letters were allowed: see
    // docs/measurements.md, "The grammar's word rules"); at most 4 + 4 × 5 letters.
    out.push_str("nw ::= [b-df-hj-np-tv-z]{0,2} [aeiouy]{1,2} ([b-df-hj-np-tv-z]{1,3} [aeiouy]{1,2}){0,3} [b-df-hj-np-tv-z]{0,2}\n")
}

/// The taken names, sorted, as a trie (see [`product_rules`]): a node is a range of names
/// sharing their first `depth` bytes.
struct Trie<'a> {
    names: &'a [&'a str],
    /// The longest name the rule writes.
    max: usize,
    /// Whether a name is one word: no space leaves the trie or follows in it.
    one: bool,
}

impl Trie<'_> {
    /// The tag characters a name may start with, and go on with.
    const FIRST: &'static [u8] = b"abcdefghijklmnopqrstuvwxyz";
    const NEXT: &'static [u8] = b"abcdefghijklmnopqrstuvwxyz_";

    /// Writes the characters of a name at `depth` that make tag character `c` (a class body):
    /// a capital first, small letters after it, a space for `_`. A name is written as a
    /// reader writes one ("Cape buffalo"), not as a small model that drifts writes
    /// ("AfricanBear", "Giraffe-giraffe-hippo"; docs/measurements.md, "The grammar's word
    /// rules").
    fn write_chars(out: &mut FixedBuf, c: u8, depth: usize) -> Result<()> {
        match c {
            b'a'..=b'z' if depth == 0 => out.format(format_args!("{}", c.to_ascii_uppercase() as char)),
            b'_' => out.push_str(" "),
            _ => out.format(format_args!("{}", c as char)),
        }
    }

    /// The byte of name `i` at `depth` (none: the name ends before).
    fn byte_at(&self, i: usize, depth: usize) -> Option<u8> {
        self.names.get(i).and_then(|n| n.as_bytes().get(depth)).copied()
    }

    /// Whether a taken name of the node ends at it (then the name must go on), or a taken
    /// `word*` does (then nothing may be written from it: see [`Trie::closed`]).
    fn ends_here(&self, lo: usize, hi: usize, depth: usize) -> bool {
        (lo..hi).any(|i| matches!(self.byte_at(i, depth), None | Some(b'*')))
    }

    /// The children of a node: (first name, one past the last, next byte), in order.
    fn children(&self, lo: usize, hi: usize, depth: usize) -> impl Iterator<Item = (usize, usize, u8)> + '_ {
        let mut i = lo;
        core::iter::from_fn(move || {
            while i < hi {
                let Some(c) = self.byte_at(i, depth) else {
                    i += 1;
                    continue;
                };
                let start = i;
                while i < hi && self.byte_at(i, depth) == Some(c) {
                    i += 1;
                }
                return Some((start, i, c));
            }
            None
        })
    }

    /// Whether a taken name that ends with `_` ends at the node, or one that ends with `*`
    /// ends just after it: no name goes on from it. `a_` is the first word of no name (`A
    /// lion`); `lion*` is the start of none, nor a name (`Lion`, `Lions`, `Lionel`).
    fn closed(&self, lo: usize, hi: usize, depth: usize) -> bool {
        depth > 0
            && (lo..hi).any(|i| {
                self.names.get(i).is_some_and(|n| match n.as_bytes().last() {
                    Some(b'_') => n.len() == depth,
                    Some(b'*') => n.len() == depth + 1,
                    _ => false,
                })
            })
    }

    /// The characters that leave the trie at a node: those of the alphabet no name has next;
    /// none where the node is closed.
    fn others(&self, lo: usize, hi: usize, depth: usize) -> impl Iterator<Item = u8> + '_ {
        let alphabet = if depth == 0 || self.one { Trie::FIRST } else { Trie::NEXT };
        let closed = self.closed(lo, hi, depth);
        alphabet.iter().copied().filter(move |&c| !(closed || (lo..hi).any(|i| self.byte_at(i, depth) == Some(c))))
    }

    /// The children a name may follow: all, none where the node is closed.
    fn follows(&self, lo: usize, hi: usize, depth: usize) -> impl Iterator<Item = (usize, usize, u8)> + '_ {
        let closed = self.closed(lo, hi, depth);
        self.children(lo, hi, depth).filter(move |&(_, _, c)| !(closed || (self.one && c == b'_')))
    }

    /// Whether the node can write anything: end here, leave, or follow a live child.
    fn alive(&self, lo: usize, hi: usize, depth: usize) -> bool {
        (depth > 0 && !self.ends_here(lo, hi, depth))
            || (depth < self.max
                && (self.others(lo, hi, depth).next().is_some()
                    || self.follows(lo, hi, depth).any(|(a, b, _)| self.alive(a, b, depth + 1))))
    }

    /// Writes the rule of a live node, then its live children's.
    fn node(&self, out: &mut FixedBuf, lo: usize, hi: usize, depth: usize) -> Result<()> {
        let may_end = depth > 0 && !self.ends_here(lo, hi, depth);
        out.format(format_args!("n-{}-{} ::= {}", lo, depth, if may_end { "( " } else { "" }))?;
        let mut first = true;
        if depth < self.max {
            let mut others = self.others(lo, hi, depth).peekable();
            if others.peek().is_some() {
                out.push_str("[")?;
                for c in others {
                    Trie::write_chars(out, c, depth)?;
                }
                out.format(format_args!("] r-{}", depth + 1))?;
                first = false;
            }
            if depth == 1 {
                // An acronym ("TCP"): capitals and digits after the first, a few; its second
                // letter not one a taken name has next ("AB" after `ab`; "ABC" too, for
                // simplicity).
                let open = |c: &u8| !(lo..hi).any(|i| self.byte_at(i, depth) == Some(c.to_ascii_lowercase()));
                if (b'A'..=b'Z').any(|c| open(&c)) {
                    out.push_str(if first { "[" } else { " | [" })?;
                    for c in (b'A'..=b'Z').filter(open) {
                        out.format(format_args!("{}", c as char))?;
                    }
                    out.push_str("] ra")?;
                    first = false;
                }
            }
            for (a, b, c) in self.follows(lo, hi, depth) {
                if self.alive(a, b, depth + 1) {
                    out.push_str(if first { "[" } else { " | [" })?;
                    Trie::write_chars(out, c, depth)?;
                    out.format(format_args!("] n-{}-{}", a, depth + 1))?;
                    first = false;
                }
            }
        }
        if may_end {
            // Only the end: `( )?` of nothing would be malformed, so write an empty literal.
            out.push_str(if first { "\"\" )?\n" } else { " )?\n" })?;
        } else {
            out.push_str("\n")?;
        }
        if depth < self.max {
            for (a, b, _) in self.follows(lo, hi, depth) {
                if self.alive(a, b, depth + 1) {
                    self.node(out, a, b, depth + 1)?;
                }
            }
        }
        Ok(())
    }
}

/// `name ::= [A-Za-z\u00C0-\U0010FFFF] [^<&\n\r<also>]{0,max-1}`: one line of text that
/// starts with a letter (ASCII, or any character past Latin-1's symbols), without the
/// characters in `also` (a class fragment such as `0-9`).
fn text_rule(out: &mut FixedBuf, name: &str, max_chars: u32, also: &str) -> Result<()> {
    out.format(format_args!(
        "{} ::= [A-Za-z\\u00C0-\\U0010FFFF] [^<&\\n\\r{}]{{0,{}}}\n",
        name,
        also,
        max_chars.saturating_sub(1)
    ))
}

fn rule_name(kind: ActionKind) -> &'static str {
    match kind {
        ActionKind::WorkingMemoryAdd => "wm-add",
        ActionKind::WorkingMemoryRemove => "wm-remove",
        ActionKind::StorageSave => "save",
        ActionKind::StorageLoad => "load",
        ActionKind::StorageSearch => "search",
        ActionKind::PageOut => "page-out",
        ActionKind::PageIn => "page-in",
        ActionKind::Archive => "archive",
        ActionKind::RecordUpdate => "record-update",
        ActionKind::RecordIssue => "record-issue",
    }
}

/// Writes `s` as a GBNF string literal: `"` and `\` escaped, control characters as `\xHH`,
/// everything else (UTF-8 included, which llama.cpp decodes) as is. Text inside a tag reply
/// that the reader would decode as markup (`<`, `&`) is written as the entity the reader
/// decodes back, so a listed key reads back as itself.
pub fn literal(out: &mut FixedBuf, s: &str) -> Result<()> {
    out.push_str("\"")?;
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\"")?,
            '\\' => out.push_str("\\\\")?,
            '<' => out.push_str("&lt;")?,
            '&' => out.push_str("&amp;")?,
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.format(format_args!("\\x{:02X}", c as u32))?,
            c => {
                let mut b = [0u8; 4];
                out.push_str(c.encode_utf8(&mut b))?;
            }
        }
    }
    out.push_str("\"")
}

#[cfg(test)]
mod tests {
    use super::super::{ActionSet, Bounds, LogField, NoKeys, Shape};
    use super::*;

    fn grammar(lang: &Language<'_>) -> String {
        let mut out = FixedBuf::with_capacity("test grammar", 64 * 1024);
        write(lang, &mut out).unwrap();
        out.as_str().unwrap().to_string()
    }

    #[test]
    fn thinking_state_names_states_and_writes_a_think_log() {
        let states = vec!["thinking".to_string(), "commanding".to_string()];
        let lang = Language {
            states: &states,
            shape: Shape { next_state: true, next_mask: 0, log: Some(LogField::Think), actions: ActionSet::NONE },
            bounds: Bounds::default(),
            working_keys: &NoKeys,
            stored_keys: &NoKeys,
            search_tags: &NoKeys,
            pinned: &[],
            managed: &[],
            recent: &[],
            in_working: &NoKeys,
            product: None,
        };
        let g = grammar(&lang);
        assert!(g.contains("agent ::= \"<agent>\\n\" log next \"</agent>\""), "{g}");
        assert!(g.contains("next ::= \"<next_state>\" ( \"thinking\" | \"commanding\" ) \"</next_state>\\n\""), "{g}");
        assert!(g.contains("log ::= \"<think_log>\" log-text \"</think_log>\\n\""), "{g}");
        assert!(!g.contains("action"), "{g}");
    }

    #[test]
    fn keys_are_listed_escaped_and_pinned_ones_left_out() {
        let states = vec!["thinking".to_string()];
        let wm: &[&str] = &["task", "notes", "a\"b\\c<d", "x\u{1}y"];
        let stored: &[&str] = &["fruit,apple"];
        let lang = Language {
            states: &states,
            shape: Shape { next_state: false, next_mask: 0, log: None, actions: ActionSet::ALL },
            bounds: Bounds { max_actions: 3, ..Bounds::default() },
            working_keys: &wm,
            stored_keys: &stored,
            search_tags: &NoKeys,
            pinned: &["task"],
            managed: &[],
            recent: &[],
            in_working: &NoKeys,
            product: None,
        };
        let g = grammar(&lang);
        assert!(g.contains(r#"a-wm-remove ::= "working_memory_remove</type><tags>" ( "notes" | "a\"b\\c&lt;d" | "x\x01y" ) "</tags>""#), "{g}");
        assert!(g.contains(r#"a-load ::= "storage_load</type><tags>" ( "fruit,apple" ) "</tags>""#), "{g}");
        assert!(g.contains("actions ::= action | action action | action action action\n"), "{g}");
        assert!(g.contains("tag ::= [a-z] [a-z0-9_]{0,"), "{g}");
    }
}
