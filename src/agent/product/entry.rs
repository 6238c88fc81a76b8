//! What a unit's value and key say: its head and subject, its own tag, the view's line of it,
//! and the items of a plan.

use super::task::Word;
use super::LABEL_JOIN;
use crate::limits::PRODUCT_ENTRY_MAX_BYTES;
use crate::memory::key::Key;

/// The one tag of `key` besides the product's tags, if the key is the product's tags and
/// exactly one more.
pub(super) fn own_tag<'k>(key: &'k Key, product: &Key) -> Option<&'k str> {
    if key.tag_count() != product.tag_count() + 1 || !product.tags().all(|t| key.has_tag(t)) {
        return None;
    }
    key.tags().find(|t| !product.has_tag(t))
}

/// The subject of a head: after a numbered label's join ("Day 3 – Kyoto": `Kyoto`), else the
/// head, trimmed.
pub(super) fn subject_of(head: &str) -> &str {
    match head.split_once(LABEL_JOIN) {
        Some((_, s)) => s.trim(),
        None => head.trim(),
    }
}

/// The items of a plan or an outline: its lines (after a heading line that ends with `:`), a
/// leading number and `.` taken off, empty ones skipped.
pub(super) fn plan_items(plan: &str) -> impl Iterator<Item = &str> {
    let list = match plan.split_once(":\n") {
        Some((_, rest)) => rest,
        None => plan,
    };
    list.lines()
        .map(|l| {
            let l = l.trim();
            let digits = l.bytes().take_while(u8::is_ascii_digit).count();
            match l.get(digits..).and_then(|r| r.strip_prefix('.')) {
                Some(rest) if digits > 0 => rest.trim(),
                _ => l,
            }
        })
        .filter(|l| !l.is_empty())
}

/// `name` as a tag: ASCII letters and digits lowercased, every run of other characters one
/// `_`, none at either end; false when it has no ASCII letter first or does not fit a tag.
pub(super) fn slug(name: &str, out: &mut Word) -> bool {
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

/// `name` as a tag ([`slug`]) of at most `max` bytes: as many of its first words as fit, at
/// least one; false as [`slug`] is.
pub(super) fn slug_words(name: &str, max: usize, out: &mut Word) -> bool {
    let mut end = name.len();
    loop {
        let part = name.get(..end).unwrap_or("");
        if slug(part, out) && out.len() <= max {
            return true;
        }
        // Drop the last word: back to the last space before `end`.
        match part.trim_end().rfind(char::is_whitespace) {
            Some(i) if i > 0 => end = i,
            _ => return slug(name, out) && out.len() <= max,
        }
    }
}

/// The first [`super::NAME_START_LETTERS`] letters of `item`, lowercased (any script; what is
/// not a letter skipped), `'\0'` after the last of a shorter name; `None` when it has fewer
/// than [`NAME_START_MIN_LETTERS`].
pub(super) fn name_start(item: &str) -> Option<[char; super::NAME_START_LETTERS]> {
    let mut out = ['\0'; super::NAME_START_LETTERS];
    let mut letters = item.chars().filter(|c| c.is_alphabetic()).flat_map(char::to_lowercase);
    for (i, slot) in out.iter_mut().enumerate() {
        match letters.next() {
            Some(c) => *slot = c,
            None if i >= NAME_START_MIN_LETTERS => break,
            None => return None,
        }
    }
    Some(out)
}

/// Fewest letters of a name that is a start ([`name_start`]) whole: "vim" is one ("vimi",
/// "vimx" spell on from it), "rm" too short to tell ("rmdir"). Three letters split real names
/// from spelled-on ones as four do (docs/measurements.md, "Names that spell on").
const NAME_START_MIN_LETTERS: usize = 3;

/// Whether two names' starts ([`name_start`]) are the same as far as the shorter goes.
pub(super) fn same_start(a: &[char; super::NAME_START_LETTERS], b: &[char; super::NAME_START_LETTERS]) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y || *x == '\0' || *y == '\0')
}

/// Whether `text` (an outline's item, or a unit without a head) has more words than a subject:
/// a unit in one sentence.
pub(super) fn is_sentence(text: &str) -> bool {
    super::lang::words(text).count() > super::SUBJECT_MAX_WORDS
}

/// The text before the first `:` of a value, or all of it.
pub(super) fn head(value: &str) -> &str {
    split_entry(value).0
}

/// `(head, whether there was a ':', text after it)`.
pub(super) fn split_entry(value: &str) -> (&str, bool, &str) {
    match value.split_once(':') {
        Some((h, rest)) => (h, true, rest),
        None => (value, false, ""),
    }
}

/// The byte offsets just after each sentence's end in `t`: a `.`, `!` or `?` followed by a
/// space.
fn sentence_ends(t: &str) -> impl DoubleEndedIterator<Item = usize> + '_ {
    t.char_indices().filter_map(move |(i, c)| {
        let at = i + c.len_utf8();
        (matches!(c, '.' | '!' | '?') && t.get(at..).is_some_and(|r| r.starts_with(' '))).then_some(at)
    })
}

/// The first sentence of `text`, trimmed: up to its first end ([`sentence_ends`]), or all of it.
pub(super) fn first_sentence(text: &str) -> &str {
    let t = text.trim();
    t.get(..sentence_ends(t).next().unwrap_or(t.len())).unwrap_or(t)
}

/// The last sentence of `text`, after its last end ([`sentence_ends`]), trimmed and cut at
/// [`PRODUCT_ENTRY_MAX_BYTES`].
pub(super) fn last_sentence(text: &str) -> &str {
    let t = text.trim();
    let start = sentence_ends(t).next_back().unwrap_or(0);
    crate::bytes::str_prefix(t.get(start..).unwrap_or(t).trim(), PRODUCT_ENTRY_MAX_BYTES)
}

/// The line the view shows for a value: its head, or its first line, cut at
/// [`PRODUCT_ENTRY_MAX_BYTES`].
pub(super) fn shown_line(value: &str) -> &str {
    let line = match split_entry(value) {
        (h, true, _) if !h.trim().is_empty() => h.trim(),
        _ => value.trim().lines().next().unwrap_or(""),
    };
    crate::bytes::str_prefix(line, PRODUCT_ENTRY_MAX_BYTES)
}
