//! Words of a text, as SQLite FTS5's `unicode61` tokenizer with `remove_diacritics 2` makes
//! them: runs of token characters, case-folded, diacritics removed; every other character
//! separates. The full-text index ([`super::fulltext`]) and ranked queries use it, so that a
//! ranking here orders as FTS5's `bm25()` orders the same texts.
//!
//! # The rules (FTS5 `fts5UnicodeTokenize`, `sqlite3Fts5UnicodeFold`)
//!
//! - ASCII: `0-9`, `A-Z`, `a-z` are token characters, upper case folded to lower; everything
//!   else (`_`, `-`, `'`, punctuation, controls) separates.
//! - Other characters: letters and digits (and private-use characters) are token characters,
//!   folded to lower case, then a Latin letter with diacritics becomes its ASCII base letter
//!   (`É` → `e`, `ǖ` → `u`, `ṩ` → `s`). Letters without a canonical decomposition keep their
//!   own form (`ø`, `æ`, `ß`, `đ`, `ł` stay as they are, as in FTS5).
//! - A combining diacritical mark of U+0300..U+0331 (the ones FTS5 lists: grave, acute,
//!   circumflex, tilde, macron, breve, dot, diaeresis, hook, ring, double acute, caron, double
//!   grave, dot below, diaeresis below, ring below, comma below, cedilla, ogonek, ...) inside
//!   a word is dropped, so decomposed `e` + U+0301 is `e` like precomposed `é`; anywhere else
//!   a mark separates.
//!
//! # Exactness: what is covered
//!
//! std has no Unicode category or decomposition tables, so this module carries its own,
//! compact ones, and says here where it follows FTS5 exactly and where it approximates:
//!
//! - **Exact** (checked against SQLite 3.40's FTS5 for every code point of these ranges, see
//!   `tools/fts5_check.py`): ASCII, Latin-1 Supplement (U+0080..U+00FF), Latin Extended-A and
//!   -B (U+0100..U+024F), Latin Extended Additional (U+1E00..U+1EFF), the combining marks
//!   above, the Greek letter variants FTS5 folds (`ς` → `σ`, `ϐ` → `β`, `ϑ`, `ϕ`, `ϖ`, `ϰ`,
//!   `ϱ`, `ϵ`, `µ` → `μ`, U+1FBE → `ι`), and Deseret (the only letters beyond U+FFFF FTS5
//!   folds).
//! - **Approximate** elsewhere: "letter or digit" is std's `char::is_alphanumeric` (Unicode's
//!   Alphabetic and Numeric properties, plus private use, minus the combining-mark blocks),
//!   where FTS5 uses the general
//!   categories `L*`, `N*`, `Co` of its own (older) Unicode tables. They differ on about
//!   1,900 code points of the Basic Multilingual Plane: combining vowel signs of Indic and
//!   other scripts (Alphabetic here, separators in FTS5), letters added to Unicode after
//!   SQLite's tables, and unassigned code points (token characters in FTS5, separators
//!   here). Case folding is std's `char::to_lowercase` where that is one character, except
//!   for the blocks FTS5's tables predate (Cherokee, Georgian Mtavruli, newer Latin and
//!   Cyrillic additions), which are left unfolded as FTS5 leaves them.
//!
//! A word longer than [`TEXT_TOKEN_MAX_BYTES`] is indexed and queried by its first
//! `TEXT_TOKEN_MAX_BYTES` bytes (cut at a character boundary); FTS5 keeps it whole.

use crate::limits::TEXT_TOKEN_MAX_BYTES;

/// One word, folded, in a fixed buffer.
#[derive(Clone, Copy)]
pub struct Token {
    buf: [u8; TEXT_TOKEN_MAX_BYTES],
    len: usize,
}

impl Default for Token {
    fn default() -> Self {
        Token { buf: [0; TEXT_TOKEN_MAX_BYTES], len: 0 }
    }
}

impl Token {
    /// The word's bytes (UTF-8).
    pub fn as_bytes(&self) -> &[u8] {
        crate::bytes::take(&self.buf, self.len)
    }

    /// Appends `c` if it fits whole (a longer word keeps its first bytes).
    fn push(&mut self, c: char) {
        let n = c.len_utf8();
        if let Some(dst) = self.buf.get_mut(self.len..self.len + n) {
            c.encode_utf8(dst);
            self.len += n;
        }
    }
}

/// The words of a text, one at a time, into a caller's [`Token`] (no allocation).
pub struct Tokens<'a> {
    rest: core::str::Chars<'a>,
}

impl<'a> Tokens<'a> {
    /// The words of `text`.
    pub fn new(text: &'a str) -> Tokens<'a> {
        Tokens { rest: text.chars() }
    }

    /// Reads the next word into `out`; `false` at the end of the text.
    pub fn next_into(&mut self, out: &mut Token) -> bool {
        out.len = 0;
        // Skip separators up to the first token character.
        loop {
            let Some(c) = self.rest.next() else { return false };
            if is_token_char(c) {
                push_folded(out, c);
                break;
            }
        }
        for c in self.rest.by_ref() {
            if is_token_char(c) {
                push_folded(out, c);
            } else if !is_diacritic_mark(c) {
                break;
            }
            // A combining diacritic inside a word: folded to nothing.
        }
        true
    }
}

/// Counts the words of `text`.
pub fn count(text: &str) -> usize {
    let mut t = Tokens::new(text);
    let mut tok = Token::default();
    let mut n = 0;
    while t.next_into(&mut tok) {
        n += 1;
    }
    n
}

fn push_folded(out: &mut Token, c: char) {
    let f = fold(c);
    if f != '\0' {
        out.push(f);
    }
}

/// Whether `c` is part of a word (letters, digits, private use; see the module docs).
pub fn is_token_char(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    let u = u32::from(c);
    if is_combining_block(u) {
        return false;
    }
    c.is_alphanumeric() || (0xE000..=0xF8FF).contains(&u) || u >= 0xF_0000
}

/// The blocks of combining marks (all of category `M`, never a letter for FTS5, though
/// Unicode calls some of them Alphabetic).
fn is_combining_block(u: u32) -> bool {
    matches!(u, 0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F)
}

/// The combining marks FTS5 drops inside a word (U+0300..U+0331, a fixed subset): bit `i` of
/// the mask is U+0300 + `i`.
fn is_diacritic_mark(c: char) -> bool {
    const MASK: u64 = 0x0003_61F8_0802_9FDF;
    let u = u32::from(c);
    (0x300..=0x331).contains(&u) && MASK >> (u - 0x300) & 1 == 1
}

/// Case folding and diacritic removal of one token character.
pub fn fold(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    let u = u32::from(c);
    if u >= 0x1_0000 {
        // Beyond the BMP FTS5 folds only Deseret.
        return if (0x1_0400..0x1_0428).contains(&u) { char::from_u32(u + 40).unwrap_or(c) } else { c };
    }
    if is_diacritic_mark(c) {
        return '\0';
    }
    let lower = if unfolded_by_fts5(u) { c } else { single_lowercase(c) };
    let lower = fold_extra(lower);
    match base_letter(u32::from(lower)) {
        Some(b) => char::from(b),
        None => lower,
    }
}

/// `c`'s lower case when that is one character, else `c`.
fn single_lowercase(c: char) -> char {
    let mut l = c.to_lowercase();
    match (l.next(), l.next()) {
        (Some(one), None) => one,
        _ => c,
    }
}

/// Blocks where std lowercases but FTS5's (older) case-folding tables do not.
fn unfolded_by_fts5(u: u32) -> bool {
    matches!(u,
        0x037F | 0x0528..=0x052F | 0x13A0..=0x13FF | 0x1C90..=0x1CBF | 0x2C2F
        | 0xA698..=0xA69B | 0xA796..=0xA79F | 0xA7AB..=0xA7FF)
}

/// Case foldings that are not lower-casing (CaseFolding.txt's simple foldings of letters
/// that are already lower case), as FTS5 applies them.
fn fold_extra(c: char) -> char {
    match c {
        'µ' => 'μ',
        'ς' => 'σ',
        'ϐ' => 'β',
        'ϑ' => 'θ',
        'ϕ' => 'φ',
        'ϖ' => 'π',
        'ϰ' => 'κ',
        'ϱ' => 'ρ',
        'ϵ' => 'ε',
        '\u{1FBE}' => 'ι',
        other => other,
    }
}

/// Lower-case Latin letters with diacritics and their ASCII base letter, as runs
/// `(first, last, step, base)`: the letters `first`, `first + step`, ... up to `last`. Built
/// from the canonical decompositions (a base letter followed by combining marks) of
/// U+00C0..U+024F and U+1E00..U+1EFF, after case folding, and checked against FTS5
/// (`tools/fts5_check.py`). `ſ` (long s) and `İ` (capital I with dot, whose lower case is two
/// characters) are included as FTS5 has them.
const BASE_LETTERS: [(u16, u16, u8, u8); 91] = [
    (0x00E0, 0x00E5, 1, b'a'),
    (0x00E7, 0x00E7, 1, b'c'),
    (0x00E8, 0x00EB, 1, b'e'),
    (0x00EC, 0x00EF, 1, b'i'),
    (0x00F1, 0x00F1, 1, b'n'),
    (0x00F2, 0x00F6, 1, b'o'),
    (0x00F9, 0x00FC, 1, b'u'),
    (0x00FD, 0x00FF, 2, b'y'),
    (0x0101, 0x0105, 2, b'a'),
    (0x0107, 0x010D, 2, b'c'),
    (0x010F, 0x010F, 1, b'd'),
    (0x0113, 0x011B, 2, b'e'),
    (0x011D, 0x0123, 2, b'g'),
    (0x0125, 0x0125, 1, b'h'),
    (0x0129, 0x012F, 2, b'i'),
    (0x0130, 0x0130, 1, b'i'),
    (0x0135, 0x0135, 1, b'j'),
    (0x0137, 0x0137, 1, b'k'),
    (0x013A, 0x013E, 2, b'l'),
    (0x0144, 0x0148, 2, b'n'),
    (0x014D, 0x0151, 2, b'o'),
    (0x0155, 0x0159, 2, b'r'),
    (0x015B, 0x0161, 2, b's'),
    (0x0163, 0x0165, 2, b't'),
    (0x0169, 0x0173, 2, b'u'),
    (0x0175, 0x0175, 1, b'w'),
    (0x0177, 0x0177, 1, b'y'),
    (0x017A, 0x017E, 2, b'z'),
    (0x017F, 0x017F, 1, b's'),
    (0x01A1, 0x01A1, 1, b'o'),
    (0x01B0, 0x01B0, 1, b'u'),
    (0x01CE, 0x01CE, 1, b'a'),
    (0x01D0, 0x01D0, 1, b'i'),
    (0x01D2, 0x01D2, 1, b'o'),
    (0x01D4, 0x01DC, 2, b'u'),
    (0x01DF, 0x01DF, 1, b'a'),
    (0x01E7, 0x01E7, 1, b'g'),
    (0x01E9, 0x01E9, 1, b'k'),
    (0x01EB, 0x01ED, 2, b'o'),
    (0x01F0, 0x01F0, 1, b'j'),
    (0x01F5, 0x01F5, 1, b'g'),
    (0x01F9, 0x01F9, 1, b'n'),
    (0x01FB, 0x01FB, 1, b'a'),
    (0x0201, 0x0203, 2, b'a'),
    (0x0205, 0x0207, 2, b'e'),
    (0x0209, 0x020B, 2, b'i'),
    (0x020D, 0x020F, 2, b'o'),
    (0x0211, 0x0213, 2, b'r'),
    (0x0215, 0x0217, 2, b'u'),
    (0x0219, 0x0219, 1, b's'),
    (0x021B, 0x021B, 1, b't'),
    (0x021F, 0x021F, 1, b'h'),
    (0x0227, 0x0227, 1, b'a'),
    (0x0229, 0x0229, 1, b'e'),
    (0x022B, 0x0231, 2, b'o'),
    (0x0233, 0x0233, 1, b'y'),
    (0x1E01, 0x1E01, 1, b'a'),
    (0x1E03, 0x1E07, 2, b'b'),
    (0x1E09, 0x1E09, 1, b'c'),
    (0x1E0B, 0x1E13, 2, b'd'),
    (0x1E15, 0x1E1D, 2, b'e'),
    (0x1E1F, 0x1E1F, 1, b'f'),
    (0x1E21, 0x1E21, 1, b'g'),
    (0x1E23, 0x1E2B, 2, b'h'),
    (0x1E2D, 0x1E2F, 2, b'i'),
    (0x1E31, 0x1E35, 2, b'k'),
    (0x1E37, 0x1E3D, 2, b'l'),
    (0x1E3F, 0x1E43, 2, b'm'),
    (0x1E45, 0x1E4B, 2, b'n'),
    (0x1E4D, 0x1E53, 2, b'o'),
    (0x1E55, 0x1E57, 2, b'p'),
    (0x1E59, 0x1E5F, 2, b'r'),
    (0x1E61, 0x1E69, 2, b's'),
    (0x1E6B, 0x1E71, 2, b't'),
    (0x1E73, 0x1E7B, 2, b'u'),
    (0x1E7D, 0x1E7F, 2, b'v'),
    (0x1E81, 0x1E89, 2, b'w'),
    (0x1E8B, 0x1E8D, 2, b'x'),
    (0x1E8F, 0x1E8F, 1, b'y'),
    (0x1E91, 0x1E95, 2, b'z'),
    (0x1E96, 0x1E96, 1, b'h'),
    (0x1E97, 0x1E97, 1, b't'),
    (0x1E98, 0x1E98, 1, b'w'),
    (0x1E99, 0x1E99, 1, b'y'),
    (0x1E9B, 0x1E9B, 1, b's'),
    (0x1EA1, 0x1EB7, 2, b'a'),
    (0x1EB9, 0x1EC7, 2, b'e'),
    (0x1EC9, 0x1ECB, 2, b'i'),
    (0x1ECD, 0x1EE3, 2, b'o'),
    (0x1EE5, 0x1EF1, 2, b'u'),
    (0x1EF3, 0x1EF9, 2, b'y'),
];

/// The ASCII base letter of lower-case `u`, if it is a Latin letter with diacritics.
fn base_letter(u: u32) -> Option<u8> {
    if !(0xE0..=0x1EF9).contains(&u) {
        return None;
    }
    // The last run starting at or before `u`.
    let i = BASE_LETTERS.partition_point(|&(first, ..)| u32::from(first) <= u).checked_sub(1)?;
    let &(first, last, step, base) = BASE_LETTERS.get(i)?;
    let (first, last) = (u32::from(first), u32::from(last));
    (u <= last && (u - first).is_multiple_of(u32::from(step))).then_some(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let mut t = Tokens::new(text);
        let mut tok = Token::default();
        let mut out = Vec::new();
        while t.next_into(&mut tok) {
            out.push(String::from_utf8(tok.as_bytes().to_vec()).unwrap());
        }
        out
    }

    #[test]
    fn ascii_letters_and_digits_make_words_everything_else_separates() {
        assert_eq!(
            words("Hello, World! it's snake_case x-ray 42abc"),
            ["hello", "world", "it", "s", "snake", "case", "x", "ray", "42abc"]
        );
        assert_eq!(words(""), Vec::<String>::new());
        assert_eq!(words(" ,.;\t\n"), Vec::<String>::new());
        assert_eq!(words("user,profile favourite"), ["user", "profile", "favourite"]);
    }

    #[test]
    fn diacritics_are_removed_and_case_folded() {
        assert_eq!(words("Crème BRÛLÉE naïve Ångström façade"), ["creme", "brulee", "naive", "angstrom", "facade"]);
        assert_eq!(words("ŁÓDŹ Straße øre Æther đak"), ["łodz", "straße", "øre", "æther", "đak"]);
        assert_eq!(words("Ǖ ǘ ṩ Ỹ İstanbul ſ"), ["u", "u", "s", "y", "istanbul", "s"]);
    }

    #[test]
    fn combining_marks_drop_inside_words_and_separate_elsewhere() {
        // "e" + combining acute: the same word as the precomposed form.
        assert_eq!(words("caf\u{65}\u{301} cafe\u{301}s"), ["cafe", "cafes"]);
        // A mark at the start of a word is a separator; one not in FTS5's list ends the word.
        assert_eq!(words("\u{301}abc ab\u{305}cd"), ["abc", "ab", "cd"]);
    }

    #[test]
    fn greek_variants_fold_as_fts5_folds_them() {
        assert_eq!(words("ΣΟΦΟΣ σοφος µ ϐ"), ["σοφοσ", "σοφοσ", "μ", "β"]);
    }

    #[test]
    fn other_scripts_and_private_use_are_words() {
        assert_eq!(words("東京 Москва \u{E000}x"), ["東京", "москва", "\u{E000}x"]);
        // Deseret is folded; other letters beyond the BMP are kept.
        assert_eq!(words("\u{10400}"), ["\u{10428}"]);
    }

    #[test]
    fn a_long_word_keeps_its_first_bytes() {
        let long = "é".repeat(TEXT_TOKEN_MAX_BYTES);
        let w = words(&long);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0], "e".repeat(TEXT_TOKEN_MAX_BYTES));
        let long = "ж".repeat(TEXT_TOKEN_MAX_BYTES);
        let w = words(&long);
        assert_eq!(w[0].len(), TEXT_TOKEN_MAX_BYTES);
        assert_eq!(count(&format!("{} b", long)), 2);
    }

    #[test]
    fn base_letter_table_is_sorted_and_its_runs_well_formed() {
        for w in BASE_LETTERS.windows(2) {
            assert!(w[0].1 < w[1].0, "{:?} {:?}", w[0], w[1]);
        }
        for &(first, last, step, base) in &BASE_LETTERS {
            assert!(first <= last && step >= 1 && base.is_ascii_lowercase());
            assert_eq!((last - first) % u16::from(step), 0);
        }
        assert_eq!(base_letter(0xE6), None); // æ
        assert_eq!(base_letter(0x100), None); // Ā is folded before the table
        assert_eq!(base_letter(0x101), Some(b'a'));
        assert_eq!(base_letter(0x102), None);
    }

    #[test]
    fn every_latin_code_point_folds_to_what_the_table_says() {
        // Upper and lower case of each letter give the same word.
        for u in (0xC0u32..0x250).chain(0x1E00..0x1F00) {
            let Some(c) = char::from_u32(u) else { continue };
            if !is_token_char(c) {
                continue;
            }
            let f = fold(c);
            let l = single_lowercase(c);
            assert_eq!(fold(l), f, "U+{:04X}", u);
        }
    }
}
