//! Byte search: the one shared helper for finding a byte, one of two bytes, or a substring (exact
//! or ASCII case-insensitive) in a byte slice. Safe Rust, no allocation, no panics.
//!
//! - Single bytes ([`find_byte`], [`find_either`] and their `r` forms) are found a word at a time:
//!   eight bytes are loaded as one little-endian `u64`, XORed with the wanted byte repeated, and
//!   tested for a zero byte (the "has zero byte" trick, exact, so no false hits), four words per
//!   step.
//! - Substrings ([`find`], [`find_ignore_ascii_case`], [`rfind_ignore_ascii_case`],
//!   [`contains_ignore_ascii_case`]) pick the needle byte that is rarest in ordinary English and
//!   JSON text (a small static rank table), scan for it word at a time at its offset in the
//!   needle, and check a candidate window first at the second rarest byte, then whole. An ASCII
//!   letter is scanned for in both cases at once: `x | 0x20` equals a lowercase letter only when
//!   `x` is that letter in either case.
//! - When candidates come too often for that to pay (the "rare" byte is common in this haystack,
//!   say), the rest of the haystack is searched with Rabin-Karp: a rolling hash, one step per
//!   byte, each hash hit checked. Searching is then linear in practice; only a haystack crafted
//!   to collide with the wrapping 32-bit hash can make it slower, never wrong.
//!
//! Case-insensitive means ASCII only: `A`..`Z` equal `a`..`z`; every other byte, non-ASCII
//! included, equals only itself (as [`slice::eq_ignore_ascii_case`]).
//!
//! Beside the search, the cuts every module makes once it has found something ([`take`],
//! [`skip`], [`range`], [`utf8_prefix`], [`str_prefix`], [`ascii_cut`]): total functions, so
//! that no caller has to pick an empty stand-in for a cut that "cannot fail", turning a slip
//! into silently empty text.
//!
//! And reading a decimal number ([`parse_u64`], [`parse_i64`], [`parse_u32`], [`parse_usize`]):
//! exactly as `str::parse` reads it, in one body out of line, where `str::parse` put its digit
//! loop into each of its 25 callers.

const LO: u64 = 0x0101_0101_0101_0101;
const SEVEN: u64 = 0x7f7f_7f7f_7f7f_7f7f;
/// Bit 5 of every byte: setting it lowercases an ASCII letter.
const CASE: u64 = 0x2020_2020_2020_2020;

/// `b` in each of the eight bytes.
#[inline(always)]
const fn splat(b: u8) -> u64 {
    LO.wrapping_mul(b as u64)
}

/// The high bit of each byte of `x` that is zero, and no other bit. Exact: no carries between
/// bytes (`(x & 0x7f) + 0x7f` stays within a byte), unlike the shorter `(x - 0x01..) & !x & 0x80..`
/// whose borrows can mark a byte above a zero one.
#[inline(always)]
const fn zero_bytes(x: u64) -> u64 {
    !((x & SEVEN).wrapping_add(SEVEN) | x | SEVEN)
}

/// Index of the first (lowest-addressed) byte marked in a non-zero `zero_bytes` mask.
#[inline(always)]
const fn first(mask: u64) -> usize {
    (mask.trailing_zeros() / 8) as usize
}

/// Index of the last (highest-addressed) byte marked in a non-zero `zero_bytes` mask.
#[inline(always)]
const fn last(mask: u64) -> usize {
    ((63 - mask.leading_zeros()) / 8) as usize
}

/// Forward searches started on this thread (tests only): a reader whose searches grow with the
/// number of `<` in its input rather than with the markup in it shows here, without timing.
#[cfg(test)]
pub(crate) mod searches {
    use std::cell::Cell;
    thread_local! {
        static COUNT: Cell<usize> = const { Cell::new(0) };
    }
    pub(crate) fn add() {
        COUNT.with(|c| c.set(c.get().saturating_add(1)));
    }
    /// The count so far, set back to 0.
    pub(crate) fn take() -> usize {
        COUNT.with(|c| c.replace(0))
    }
}

/// The first index whose byte `hit` accepts. `mask` maps a little-endian word to the
/// [`zero_bytes`]-style mask of the bytes `hit` accepts; the two must agree.
#[inline(always)]
fn scan_fwd(hay: &[u8], mask: impl Fn(u64) -> u64, hit: impl Fn(u8) -> bool) -> Option<usize> {
    #[cfg(test)]
    searches::add();
    // A hit in the first word (dense haystacks: a tag every few bytes) is found without setting
    // up the unrolled loop, which then looks at that word again when there is none.
    if let Some((w, _)) = hay.split_first_chunk::<8>() {
        let m = mask(u64::from_le_bytes(*w));
        if m != 0 {
            return Some(first(m));
        }
    }
    let (words, rest) = hay.as_chunks::<8>();
    let (quads, tail) = words.as_chunks::<4>();
    let mut at = 0usize;
    for &[a, b, c, d] in quads {
        let (ma, mb, mc, md) = (
            mask(u64::from_le_bytes(a)),
            mask(u64::from_le_bytes(b)),
            mask(u64::from_le_bytes(c)),
            mask(u64::from_le_bytes(d)),
        );
        if ma | mb | mc | md != 0 {
            return Some(if ma != 0 {
                at + first(ma)
            } else if mb != 0 {
                at + 8 + first(mb)
            } else if mc != 0 {
                at + 16 + first(mc)
            } else {
                at + 24 + first(md)
            });
        }
        at += 32;
    }
    for &w in tail {
        let m = mask(u64::from_le_bytes(w));
        if m != 0 {
            return Some(at + first(m));
        }
        at += 8;
    }
    rest.iter().position(|&x| hit(x)).map(|i| at + i)
}

/// The last index whose byte `hit` accepts; `mask` as for [`scan_fwd`].
#[inline(always)]
fn scan_rev(hay: &[u8], mask: impl Fn(u64) -> u64, hit: impl Fn(u8) -> bool) -> Option<usize> {
    let (head, words) = hay.as_rchunks::<8>();
    let (head_words, quads) = words.as_rchunks::<4>();
    // `end` is one past the bytes still to scan; everything before it is `head`, `head_words`
    // and the quads not yet seen.
    let mut end = hay.len();
    for &[a, b, c, d] in quads.iter().rev() {
        let (ma, mb, mc, md) = (
            mask(u64::from_le_bytes(a)),
            mask(u64::from_le_bytes(b)),
            mask(u64::from_le_bytes(c)),
            mask(u64::from_le_bytes(d)),
        );
        // `end >= 32` here: this quad's 32 bytes lie before it.
        let start = end - 32;
        if ma | mb | mc | md != 0 {
            return Some(if md != 0 {
                start + 24 + last(md)
            } else if mc != 0 {
                start + 16 + last(mc)
            } else if mb != 0 {
                start + 8 + last(mb)
            } else {
                start + last(ma)
            });
        }
        end = start;
    }
    for &w in head_words.iter().rev() {
        let start = end - 8;
        let m = mask(u64::from_le_bytes(w));
        if m != 0 {
            return Some(start + last(m));
        }
        end = start;
    }
    head.iter().rposition(|&x| hit(x))
}

/// How many bytes `hay` starts with that are `b` (0 when its first is not): the length of a
/// run, stepped over a byte at a time, which a search started at every byte would cost many
/// times over.
#[inline]
pub fn run_of(hay: &[u8], b: u8) -> usize {
    hay.iter().take_while(|&&x| x == b).count()
}

/// The first index of `hay` that holds `b`.
pub fn find_byte(hay: &[u8], b: u8) -> Option<usize> {
    let s = splat(b);
    scan_fwd(hay, |w| zero_bytes(w ^ s), |x| x == b)
}

/// The last index of `hay` that holds `b`.
pub fn rfind_byte(hay: &[u8], b: u8) -> Option<usize> {
    let s = splat(b);
    scan_rev(hay, |w| zero_bytes(w ^ s), |x| x == b)
}

/// The first index of `hay` that holds `a` or `b`.
pub fn find_either(hay: &[u8], a: u8, b: u8) -> Option<usize> {
    let (sa, sb) = (splat(a), splat(b));
    scan_fwd(hay, |w| zero_bytes(w ^ sa) | zero_bytes(w ^ sb), |x| x == a || x == b)
}

/// The last index of `hay` that holds `a` or `b`.
pub fn rfind_either(hay: &[u8], a: u8, b: u8) -> Option<usize> {
    let (sa, sb) = (splat(a), splat(b));
    scan_rev(hay, |w| zero_bytes(w ^ sa) | zero_bytes(w ^ sb), |x| x == a || x == b)
}

/// The first index of `hay` holding `b` up to ASCII case: for a letter, either case (one mask:
/// `x | 0x20 == lower` holds exactly for the two cases of `lower`); otherwise `b` itself.
fn find_byte_ignore_case(hay: &[u8], b: u8) -> Option<usize> {
    if !b.is_ascii_alphabetic() {
        return find_byte(hay, b);
    }
    let lower = b.to_ascii_lowercase();
    let s = splat(lower);
    scan_fwd(hay, |w| zero_bytes((w | CASE) ^ s), |x| x | 0x20 == lower)
}

/// The last index of `hay` holding `b` up to ASCII case (see [`find_byte_ignore_case`]).
fn rfind_byte_ignore_case(hay: &[u8], b: u8) -> Option<usize> {
    if !b.is_ascii_alphabetic() {
        return rfind_byte(hay, b);
    }
    let lower = b.to_ascii_lowercase();
    let s = splat(lower);
    scan_rev(hay, |w| zero_bytes((w | CASE) ^ s), |x| x | 0x20 == lower)
}

// ---- substrings ----

/// Bytes from the most to the least frequent in the text this crate searches: English prose,
/// JSON, tagged model replies, code. A rough order is enough; it only steers the choice of the
/// byte to scan for. Bytes not listed (other control bytes, non-ASCII) rank below all of these,
/// see [`rank_table`].
const BY_FREQUENCY: &[u8] =
    b" etaoinsrhldcu\nmfpg,wy.b\"v:k_T0-1ISA2<>/CM=xP()BD3R5H9{}N4L8E76'F[]WGOj;qUz?!Y\tV#*+KJ&|%Q$X@\\Z~^`\r";

/// Rank of every byte: 255 for the most frequent, lower for rarer. Listed bytes come first;
/// then UTF-8 continuation bytes (common in non-English text), then UTF-8 leading bytes, then
/// bytes that never occur in UTF-8, and control bytes, at 0.
// Evaluated at compile time: an out-of-range index would be a build error, not a panic.
#[allow(clippy::indexing_slicing)]
const fn rank_table() -> [u8; 256] {
    let mut rank = [0u8; 256];
    let mut b = 0x80;
    while b < 0x100 {
        rank[b] = match b {
            0x80..=0xbf => 60,
            0xc2..=0xf4 => 40,
            _ => 0,
        };
        b += 1;
    }
    let mut i = 0;
    while i < BY_FREQUENCY.len() {
        rank[BY_FREQUENCY[i] as usize] = 255 - i as u8;
        i += 1;
    }
    rank
}

/// [`rank_table`] for a case-insensitive search: a letter ranks as its more frequent case (a
/// scan finds both).
#[allow(clippy::indexing_slicing)]
const fn fold_rank_table(rank: [u8; 256]) -> [u8; 256] {
    let mut out = rank;
    let mut b = b'A';
    while b <= b'Z' {
        let (upper, lower) = (rank[b as usize], rank[(b | 0x20) as usize]);
        let r = if upper > lower { upper } else { lower };
        out[b as usize] = r;
        out[(b | 0x20) as usize] = r;
        b += 1;
    }
    out
}

static RANK: [u8; 256] = rank_table();
static RANK_FOLD: [u8; 256] = fold_rank_table(rank_table());

/// Whether a search compares bytes exactly or up to ASCII case.
#[derive(Clone, Copy)]
enum Case {
    Exact,
    Fold,
}

impl Case {
    #[inline(always)]
    fn eq(self, a: &[u8], b: &[u8]) -> bool {
        match self {
            Case::Exact => a == b,
            Case::Fold => a.eq_ignore_ascii_case(b),
        }
    }

    #[inline(always)]
    fn byte_eq(self, a: u8, b: u8) -> bool {
        match self {
            Case::Exact => a == b,
            Case::Fold => a.eq_ignore_ascii_case(&b),
        }
    }

    /// The byte a hash sees.
    #[inline(always)]
    fn norm(self, b: u8) -> u8 {
        match self {
            Case::Exact => b,
            Case::Fold => b.to_ascii_lowercase(),
        }
    }

    fn rank(self, b: u8) -> u8 {
        let table = match self {
            Case::Exact => &RANK,
            Case::Fold => &RANK_FOLD,
        };
        table.get(usize::from(b)).copied().unwrap_or(0)
    }

    fn find_byte(self, hay: &[u8], b: u8) -> Option<usize> {
        match self {
            Case::Exact => find_byte(hay, b),
            Case::Fold => find_byte_ignore_case(hay, b),
        }
    }

    fn rfind_byte(self, hay: &[u8], b: u8) -> Option<usize> {
        match self {
            Case::Exact => rfind_byte(hay, b),
            Case::Fold => rfind_byte_ignore_case(hay, b),
        }
    }
}

/// The offsets in `needle` (non-empty) of its rarest byte and of its second rarest at another
/// offset (the same offset when `needle` has one byte). Ties go to the earlier offset.
fn rare_pair(needle: &[u8], case: Case) -> (usize, usize) {
    let mut best = (u8::MAX, 0usize);
    let mut second = (u8::MAX, 0usize);
    let mut seen_second = false;
    for (i, &b) in needle.iter().enumerate() {
        let r = case.rank(b);
        if i == 0 || r < best.0 {
            if i > 0 {
                second = best;
                seen_second = true;
            }
            best = (r, i);
        } else if !seen_second || r < second.0 {
            second = (r, i);
            seen_second = true;
        }
    }
    (best.1, if seen_second { second.1 } else { best.1 })
}

/// Candidates checked before the scan's efficiency is judged.
const WARMUP_CANDIDATES: usize = 64;
/// The scan gives way to Rabin-Karp when candidates come more often than one per this many bytes.
const MIN_BYTES_PER_CANDIDATE: usize = 16;

/// Whether `candidates` found over `covered` bytes of haystack mean the rare-byte scan no longer
/// pays.
#[inline(always)]
fn scan_is_ineffective(candidates: usize, covered: usize) -> bool {
    candidates >= WARMUP_CANDIDATES && covered < candidates.saturating_mul(MIN_BYTES_PER_CANDIDATE)
}

/// The first start of `needle` in `hay`.
fn find_in(hay: &[u8], needle: &[u8], case: Case) -> Option<usize> {
    let m = needle.len();
    if m == 0 {
        return Some(0);
    }
    let last_start = hay.len().checked_sub(m)?;
    let (i1, i2) = rare_pair(needle, case);
    let (b1, b2) = (*needle.get(i1)?, *needle.get(i2)?);
    // A match starting at `s` has `b1` at `s + i1`; `s` runs over `0..=last_start`.
    let end = last_start.checked_add(i1)?.checked_add(1)?;
    let mut from = i1;
    let mut candidates = 0usize;
    while from < end {
        let at = from + case.find_byte(hay.get(from..end)?, b1)?;
        let start = at - i1;
        if hay.get(start + i2).is_some_and(|&x| case.byte_eq(x, b2))
            && hay.get(start..start + m).is_some_and(|w| case.eq(w, needle))
        {
            return Some(start);
        }
        candidates += 1;
        if scan_is_ineffective(candidates, at - i1 + 1) {
            let next = start + 1;
            return rabin_karp(hay.get(next..)?, needle, case).map(|i| next + i);
        }
        from = at + 1;
    }
    None
}

/// The last start of `needle` in `hay`.
fn rfind_in(hay: &[u8], needle: &[u8], case: Case) -> Option<usize> {
    let m = needle.len();
    if m == 0 {
        return Some(hay.len());
    }
    let last_start = hay.len().checked_sub(m)?;
    let (i1, i2) = rare_pair(needle, case);
    let (b1, b2) = (*needle.get(i1)?, *needle.get(i2)?);
    // `b1` is looked for in `i1..end`, from the back; `end` shrinks past each candidate.
    let mut end = last_start.checked_add(i1)?.checked_add(1)?;
    let mut candidates = 0usize;
    while end > i1 {
        let at = i1 + case.rfind_byte(hay.get(i1..end)?, b1)?;
        let start = at - i1;
        if hay.get(start + i2).is_some_and(|&x| case.byte_eq(x, b2))
            && hay.get(start..start + m).is_some_and(|w| case.eq(w, needle))
        {
            return Some(start);
        }
        candidates += 1;
        if scan_is_ineffective(candidates, last_start - start + 1) {
            // Every start before `start`: the windows inside `hay[..start + m - 1]`.
            return rabin_karp_rev(hay.get(..start + m - 1)?, needle, case);
        }
        end = at;
    }
    None
}

/// The multiplier of the rolling hash (odd, so that it is invertible modulo 2^32).
const RK_BASE: u32 = 0x0100_0193;

/// The hash of `bytes` in order (`h = h * base + byte`), and `base` to the power `bytes.len() - 1`
/// (the weight of the first byte, which a roll takes out).
fn rk_hash<'a>(bytes: impl Iterator<Item = &'a u8>, case: Case) -> (u32, u32) {
    let mut hash = 0u32;
    let mut weight = 1u32;
    for (i, &b) in bytes.enumerate() {
        hash = hash.wrapping_mul(RK_BASE).wrapping_add(u32::from(case.norm(b)));
        if i > 0 {
            weight = weight.wrapping_mul(RK_BASE);
        }
    }
    (hash, weight)
}

/// The first start of `needle` (non-empty) in `hay` by Rabin-Karp.
fn rabin_karp(hay: &[u8], needle: &[u8], case: Case) -> Option<usize> {
    let m = needle.len();
    let first_window = hay.get(..m)?;
    let (want, weight) = rk_hash(needle.iter(), case);
    let (mut hash, _) = rk_hash(first_window.iter(), case);
    // The window at `i` is `hay[i..i + m]`; rolling it takes `hay[i]` out and `hay[i + m]` in.
    for (i, (&out, &next)) in hay.iter().zip(hay.get(m..)?).enumerate() {
        if hash == want && hay.get(i..i + m).is_some_and(|w| case.eq(w, needle)) {
            return Some(i);
        }
        hash = hash
            .wrapping_sub(weight.wrapping_mul(u32::from(case.norm(out))))
            .wrapping_mul(RK_BASE)
            .wrapping_add(u32::from(case.norm(next)));
    }
    let i = hay.len() - m;
    (hash == want && hay.get(i..).is_some_and(|w| case.eq(w, needle))).then_some(i)
}

/// The last start of `needle` (non-empty) in `hay` by Rabin-Karp, rolling from the end. The hash
/// here weighs the bytes the other way round (the first byte lowest).
fn rabin_karp_rev(hay: &[u8], needle: &[u8], case: Case) -> Option<usize> {
    let m = needle.len();
    let last_start = hay.len().checked_sub(m)?;
    let (want, weight) = rk_hash(needle.iter().rev(), case);
    let (mut hash, _) = rk_hash(hay.get(last_start..)?.iter().rev(), case);
    // Step `k` looks at the window at `last_start - k`; rolling it takes its last byte out
    // (`hay[last_start - k + m - 1]`) and the byte before it in (`hay[last_start - k - 1]`).
    for (k, (&out, &next)) in hay.iter().rev().zip(hay.get(..last_start)?.iter().rev()).enumerate() {
        let i = last_start - k;
        if hash == want && hay.get(i..i + m).is_some_and(|w| case.eq(w, needle)) {
            return Some(i);
        }
        hash = hash
            .wrapping_sub(weight.wrapping_mul(u32::from(case.norm(out))))
            .wrapping_mul(RK_BASE)
            .wrapping_add(u32::from(case.norm(next)));
    }
    (hash == want && hay.get(..m).is_some_and(|w| case.eq(w, needle))).then_some(0)
}

/// The first start of `needle` in `hay` (exact bytes). An empty needle is found at 0.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    find_in(hay, needle, Case::Exact)
}

/// The first start of `needle` in `hay`, ASCII letters compared without case (other bytes
/// exactly). An empty needle is found at 0.
pub fn find_ignore_ascii_case(hay: &[u8], needle: &[u8]) -> Option<usize> {
    find_in(hay, needle, Case::Fold)
}

/// The last start of `needle` in `hay`, ASCII letters compared without case (other bytes
/// exactly). An empty needle is found at `hay.len()`.
pub fn rfind_ignore_ascii_case(hay: &[u8], needle: &[u8]) -> Option<usize> {
    rfind_in(hay, needle, Case::Fold)
}

/// Whether `needle` occurs in `hay`, ASCII letters compared without case (other bytes exactly).
/// An empty needle always does.
pub fn contains_ignore_ascii_case(hay: &[u8], needle: &[u8]) -> bool {
    find_ignore_ascii_case(hay, needle).is_some()
}

// Cutting. Each of these is total: it has one right answer for every input, so a caller never
// has to pick a stand-in (such as an empty slice) for a cut that "cannot fail".

/// The first `n` items of `s`, or all of `s` when it has fewer (as [`Iterator::take`]). For a
/// container's filled part (`buf[..len]`, `len` never past the buffer).
#[inline]
pub fn take<T>(s: &[T], n: usize) -> &[T] {
    match s.split_at_checked(n) {
        Some((head, _)) => head,
        None => s,
    }
}

/// `s` without its first `n` items: empty when it has no more (as [`Iterator::skip`]).
#[inline]
pub fn skip<T>(s: &[T], n: usize) -> &[T] {
    match s.split_at_checked(n) {
        Some((_, rest)) => rest,
        None => &[],
    }
}

/// The items of `s` from `from` up to `to`, clamped to `s`: empty when `to <= from` or `from`
/// is past the end (as `s.iter().take(to).skip(from)`). For ranges a scan or a count keeps
/// within `s`.
#[inline]
pub fn range<T>(s: &[T], from: usize, to: usize) -> &[T] {
    skip(take(s, to), from)
}

/// Whether `a` and `b` are the same bytes up to ASCII case (`<[u8]>::eq_ignore_ascii_case`,
/// compiled once for the places off the hot paths that compare names: HTTP header fields, URL
/// schemes, host names, state names).
#[inline(never)]
pub fn eq_fold(a: &[u8], b: &[u8]) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// `fmt::Write::write_char` of every writer of this crate, compiled once: the default method
/// is compiled for each writer (a `dyn fmt::Write`'s table names it whether called or not),
/// each with its own copy of the UTF-8 encoding.
#[inline(never)]
pub fn write_char(w: &mut dyn core::fmt::Write, c: char) -> core::fmt::Result {
    w.write_str(c.encode_utf8(&mut [0; 4]))
}

/// The longest prefix of `b` that is UTF-8: all of `b` when it is text, as it is for every
/// buffer that only whole `&str`s are written to. No allocation; valid text is checked once.
#[inline]
pub fn utf8_prefix(b: &[u8]) -> &str {
    match core::str::from_utf8(b) {
        Ok(s) => s,
        // `utf8_chunks` yields nothing for empty input, else the valid text before the first
        // invalid sequence.
        Err(_) => b.utf8_chunks().next().map_or("", |c| c.valid()),
    }
}

/// The longest prefix of `s` that is at most `max` bytes long: `s` cut at the last character
/// boundary at or before `max` (for messages and bounded copies).
#[inline]
pub fn str_prefix(s: &str, max: usize) -> &str {
    if max >= s.len() {
        return s;
    }
    // A character is at most 4 bytes, so this looks at 4 bytes at most. The split is then at
    // a boundary within `s` and cannot fail; `""` (offset 0, always a boundary) is its due.
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.split_at_checked(cut).map_or("", |(head, _)| head)
}

/// `s[from..to]`, for offsets found by scanning `s` for ASCII bytes (the offset of one, or
/// the one after it), or its ends. An ASCII byte is a whole character, so such offsets are
/// character boundaries, and a scan keeps them within `s`: the cut cannot fail. For the cuts
/// of scanners that have no error to return (the tag parser never fails); where there is one,
/// split with `split_at_checked` and report the `None`.
///
/// Were a caller to pass other offsets (a bug), the text would come out empty, never a panic
/// on untrusted input; the tests of each caller compare whole outputs, so such a bug shows.
#[inline]
pub fn ascii_cut(s: &str, from: usize, to: usize) -> &str {
    s.get(from..to).unwrap_or_default()
}

// Reading numbers.

/// `s` as a `u64`, read as `s.parse::<u64>()` reads it (an optional `+`, then ASCII digits,
/// no overflow), or `None`.
#[inline(never)]
pub fn parse_u64(s: &str) -> Option<u64> {
    s.parse().ok()
}

/// `s` as an `i64`, read as `s.parse::<i64>()` reads it (an optional sign, then ASCII digits,
/// no overflow), or `None`.
#[inline(never)]
pub fn parse_i64(s: &str) -> Option<i64> {
    s.parse().ok()
}

/// `s` as a `u32`, read as `s.parse::<u32>()` reads it, or `None`: what `u64` reads, if it fits.
pub fn parse_u32(s: &str) -> Option<u32> {
    parse_u64(s).and_then(|n| u32::try_from(n).ok())
}

/// `s` as a `usize`, read as `s.parse::<usize>()` reads it, or `None`.
pub fn parse_usize(s: &str) -> Option<usize> {
    parse_u64(s).and_then(|n| usize::try_from(n).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_str_parse_reads_them() {
        let samples = [
            "",
            "+",
            "-",
            "0",
            "+0",
            "-0",
            "007",
            "42",
            "+42",
            "-42",
            " 42",
            "42 ",
            "4_2",
            "1e3",
            "0x10",
            "4294967295",
            "4294967296",
            "-2147483648",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "18446744073709551615",
            "18446744073709551616",
            "99999999999999999999999",
            "٣",
            "12a",
            "++1",
            "+-1",
        ];
        for s in samples {
            assert_eq!(parse_u64(s), s.parse::<u64>().ok(), "{s:?}");
            assert_eq!(parse_i64(s), s.parse::<i64>().ok(), "{s:?}");
            assert_eq!(parse_u32(s), s.parse::<u32>().ok(), "{s:?}");
            assert_eq!(parse_usize(s), s.parse::<usize>().ok(), "{s:?}");
        }
    }

    #[test]
    fn cuts_are_total() {
        let s = [1, 2, 3];
        assert_eq!(take(&s, 0), &[] as &[i32]);
        assert_eq!(take(&s, 2), &[1, 2]);
        assert_eq!(take(&s, 3), &s);
        assert_eq!(take(&s, 9), &s);
        assert_eq!(skip(&s, 0), &s);
        assert_eq!(skip(&s, 2), &[3]);
        assert_eq!(skip(&s, 3), &[] as &[i32]);
        assert_eq!(skip(&s, 9), &[] as &[i32]);
        assert_eq!(range(&s, 1, 2), &[2]);
        assert_eq!(range(&s, 1, 9), &[2, 3]);
        assert_eq!(range(&s, 2, 1), &[] as &[i32]);
        assert_eq!(range(&s, 5, 9), &[] as &[i32]);
        assert_eq!(utf8_prefix(b""), "");
        assert_eq!(utf8_prefix("aé".as_bytes()), "aé");
        assert_eq!(utf8_prefix(b"a\xc3"), "a");
        assert_eq!(utf8_prefix(b"ab\xffcd"), "ab");
        assert_eq!(utf8_prefix(b"\xff"), "");
        let t = "aé€😀";
        let prefixes: Vec<&str> = (0..=t.len() + 1).map(|m| str_prefix(t, m)).collect();
        assert_eq!(prefixes, ["", "a", "a", "aé", "aé", "aé", "aé€", "aé€", "aé€", "aé€", "aé€😀", "aé€😀"]);
        assert_eq!(ascii_cut("a<b>c", 1, 4), "<b>");
        assert_eq!(ascii_cut("a<b>c", 4, 5), "c");
        assert_eq!(ascii_cut("é", 0, 1), "");
        assert_eq!(ascii_cut("abc", 2, 9), "");
    }

    fn naive_find(hay: &[u8], needle: &[u8], fold: bool) -> Option<usize> {
        if needle.is_empty() {
            return Some(0);
        }
        hay.windows(needle.len()).position(|w| if fold { w.eq_ignore_ascii_case(needle) } else { w == needle })
    }

    fn naive_rfind(hay: &[u8], needle: &[u8], fold: bool) -> Option<usize> {
        if needle.is_empty() {
            return Some(hay.len());
        }
        hay.windows(needle.len()).rposition(|w| if fold { w.eq_ignore_ascii_case(needle) } else { w == needle })
    }

    /// A small xorshift generator: deterministic inputs without a dependency.
    use crate::testing::rng::Rng;

    const ALPHABETS: [&[u8]; 4] = [b"ab", b"aAbB", b"xyzXYZ\xc3\xa9", b"aA\x80\xff\x00 "];

    #[test]
    fn single_bytes_at_every_position_and_alignment() {
        // Every length up to past two unrolled steps, every position of the byte, every
        // alignment of the slice within its buffer.
        let buf = vec![b'.'; 100];
        for offset in 0..8 {
            for len in 0..80 {
                let base = &buf[offset..offset + len];
                assert_eq!(find_byte(base, b'x'), None);
                assert_eq!(rfind_byte(base, b'x'), None);
                assert_eq!(find_either(base, b'x', b'y'), None);
                assert_eq!(rfind_either(base, b'x', b'y'), None);
                for p in 0..len {
                    let mut v = buf.clone();
                    v[offset + p] = b'x';
                    let hay = &v[offset..offset + len];
                    assert_eq!(find_byte(hay, b'x'), Some(p), "len {len} p {p}");
                    assert_eq!(rfind_byte(hay, b'x'), Some(p), "len {len} p {p}");
                    assert_eq!(find_either(hay, b'y', b'x'), Some(p));
                    assert_eq!(rfind_either(hay, b'x', b'y'), Some(p));
                    assert_eq!(find_byte(hay, b'.'), if len == 1 { None } else { Some(usize::from(p == 0)) });
                    // A second hit later: first and last differ.
                    for q in p + 1..len {
                        let mut w = v.clone();
                        w[offset + q] = b'y';
                        let hay = &w[offset..offset + len];
                        assert_eq!(find_either(hay, b'x', b'y'), Some(p));
                        assert_eq!(rfind_either(hay, b'x', b'y'), Some(q));
                        assert_eq!(find_byte_ignore_case(hay, b'X'), Some(p));
                        assert_eq!(rfind_byte_ignore_case(hay, b'Y'), Some(q));
                    }
                }
            }
        }
    }

    #[test]
    fn zero_masks_are_exact() {
        // A zero byte below a 0x01 byte: the short trick's borrow would mark the 0x01 too.
        let w = u64::from_le_bytes([1, 0, 1, 1, 0x80, 0xff, 0, 1]);
        let m = zero_bytes(w);
        assert_eq!(first(m), 1);
        assert_eq!(last(m), 6);
        assert_eq!(m.count_ones(), 2);
        assert_eq!(zero_bytes(u64::MAX), 0);
        assert_eq!(zero_bytes(0).count_ones(), 8);
    }

    #[test]
    fn high_and_zero_bytes() {
        let hay = [0u8, 0x80, 0xff, 0x7f, 1, 0, 0xff, 0x80, 0x20, 0x00, 0xfe];
        for b in [0u8, 0x80, 0xff, 0x7f, 1, 0x20, 0xfe, 0x42] {
            assert_eq!(find_byte(&hay, b), hay.iter().position(|&x| x == b), "{b:#x}");
            assert_eq!(rfind_byte(&hay, b), hay.iter().rposition(|&x| x == b), "{b:#x}");
        }
        // 0x20 is not a letter: its scan must not take '@' (0x40 | 0x20 == 0x60) or anything.
        assert_eq!(find_byte_ignore_case(b"@@@@@@@@@@@ ", b' '), Some(11));
        // `x | 0x20 == lower` only for the letter's two cases.
        for x in 0..=255u8 {
            let hay = [x];
            let got = find_byte_ignore_case(&hay, b'q').is_some();
            assert_eq!(got, x == b'q' || x == b'Q', "{x:#x}");
        }
    }

    #[test]
    fn substring_edges() {
        assert_eq!(find(b"", b""), Some(0));
        assert_eq!(find(b"abc", b""), Some(0));
        assert_eq!(find_ignore_ascii_case(b"abc", b""), Some(0));
        assert_eq!(rfind_ignore_ascii_case(b"abc", b""), Some(3));
        assert_eq!(rfind_ignore_ascii_case(b"", b""), Some(0));
        assert!(contains_ignore_ascii_case(b"", b""));
        // Needle longer than the haystack.
        assert_eq!(find(b"ab", b"abc"), None);
        assert_eq!(find_ignore_ascii_case(b"ab", b"ABC"), None);
        assert_eq!(rfind_ignore_ascii_case(b"ab", b"ABC"), None);
        assert!(!contains_ignore_ascii_case(b"", b"a"));
        // Whole haystack.
        assert_eq!(find(b"abc", b"abc"), Some(0));
        assert_eq!(rfind_ignore_ascii_case(b"aBc", b"AbC"), Some(0));
        // One-byte needles.
        assert_eq!(find(b"hello", b"l"), Some(2));
        assert_eq!(find_ignore_ascii_case(b"heLlo", b"L"), Some(2));
        assert_eq!(rfind_ignore_ascii_case(b"heLlo", b"l"), Some(3));
        assert_eq!(find_ignore_ascii_case(b"a-b", b"-"), Some(1));
        // Start and end.
        assert_eq!(find_ignore_ascii_case(b"Storage_Save and more", b"storage_save"), Some(0));
        assert_eq!(rfind_ignore_ascii_case(b"more and STORAGE_SAVE", b"storage_save"), Some(9));
        // Overlapping occurrences.
        assert_eq!(find(b"aaaa", b"aa"), Some(0));
        assert_eq!(rfind_ignore_ascii_case(b"aAaA", b"aa"), Some(2));
        // Non-ASCII bytes compare exactly: 'É' (c3 89) is not 'é' (c3 a9), and 0xc3 | 0x20 is
        // 0xe3, no letter.
        assert_eq!(find_ignore_ascii_case("caf\u{e9}".as_bytes(), "CAF\u{c9}".as_bytes()), None);
        assert_eq!(find_ignore_ascii_case("x CAF\u{e9}".as_bytes(), "caf\u{e9}".as_bytes()), Some(2));
        assert_eq!(find_ignore_ascii_case(b"\xe3\x81\x82", b"\xc3"), None);
        // Letters only fold with letters: '[' (0x5b) is not '{' (0x7b), '@' not '`'.
        assert_eq!(find_ignore_ascii_case(b"a[b", b"a{b"), None);
        assert_eq!(find_ignore_ascii_case(b"@", b"`"), None);
    }

    #[test]
    fn matches_straddling_words_at_every_alignment() {
        let needle = b"Needle_Q";
        let buf = vec![b'e'; 120];
        for offset in 0..8 {
            for start in 0..(100 - needle.len()) {
                let mut v = buf.clone();
                v[offset + start..offset + start + needle.len()].copy_from_slice(needle);
                let hay = &v[offset..offset + 100];
                assert_eq!(find(hay, needle), Some(start));
                assert_eq!(find_ignore_ascii_case(hay, b"NEEDLE_q"), Some(start));
                assert_eq!(rfind_ignore_ascii_case(hay, b"needle_Q"), Some(start));
                // Cut just before the match ends: not found.
                let cut = &v[offset..offset + start + needle.len() - 1];
                assert_eq!(find(cut, needle), None);
                assert_eq!(rfind_ignore_ascii_case(cut, needle), None);
            }
        }
    }

    #[test]
    fn rare_pair_picks_rare_bytes() {
        // 'q' and 'z' rank below the other letters; ties go to the earlier offset.
        assert_eq!(rare_pair(b"aquiz", Case::Exact), (4, 1));
        assert_eq!(rare_pair(b"a", Case::Exact), (0, 0));
        assert_eq!(rare_pair(b"aa", Case::Exact), (0, 1));
        // Exact: 'Q' is rarer than 'q'; folded, both rank as 'q'.
        assert_eq!(rare_pair(b"qQ", Case::Exact), (1, 0));
        assert_eq!(rare_pair(b"qQ", Case::Fold), (0, 1));
        // A control byte is rarest of all.
        assert_eq!(rare_pair(b"ab\x01c", Case::Fold).0, 2);
    }

    #[test]
    fn rank_table_lists_each_byte_once() {
        let mut seen = [false; 256];
        for &b in BY_FREQUENCY {
            assert!(!seen[b as usize], "{:?} twice", b as char);
            seen[b as usize] = true;
        }
        // Every listed byte outranks every unlisted one.
        let least_listed = BY_FREQUENCY.iter().map(|&b| RANK[b as usize]).min().unwrap();
        for b in 0..256 {
            if !seen[b] {
                assert!(RANK[b] < least_listed);
            }
        }
    }

    #[test]
    fn rabin_karp_matches_naive() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..4000 {
            let alphabet = ALPHABETS[round % ALPHABETS.len()];
            let hay = rng.bytes(0..60, alphabet);
            let needle = rng.bytes(1..7, alphabet);
            for (case, fold) in [(Case::Exact, false), (Case::Fold, true)] {
                assert_eq!(rabin_karp(&hay, &needle, case), naive_find(&hay, &needle, fold), "{hay:?} {needle:?}");
                assert_eq!(rabin_karp_rev(&hay, &needle, case), naive_rfind(&hay, &needle, fold), "{hay:?} {needle:?}");
            }
        }
    }

    #[test]
    fn searches_that_give_way_to_rabin_karp() {
        // Candidates on nearly every byte: the scan hands over to Rabin-Karp after the warm-up,
        // on both sides of the match.
        let mut rng = Rng(7);
        for round in 0..300 {
            let len = 200 + rng.below(2000);
            // 'b' ranks rarer than 'a': the scan looks for it, and finds it everywhere.
            let mut hay = vec![b'b'; len];
            let needle: &[u8] = if round % 2 == 0 { b"bbbbbbba" } else { b"BBBBBBBA" };
            let at = rng.below(len - needle.len());
            if round % 3 != 0 {
                hay[at..at + needle.len()].copy_from_slice(b"bbbbbbba");
            }
            // Noise: a few other bytes, sometimes a second match.
            for _ in 0..rng.below(4) {
                let i = rng.below(len);
                hay[i] = b"aAc"[rng.below(3)];
            }
            assert_eq!(find_ignore_ascii_case(&hay, needle), naive_find(&hay, needle, true));
            assert_eq!(rfind_ignore_ascii_case(&hay, needle), naive_rfind(&hay, needle, true));
            assert_eq!(find(&hay, needle), naive_find(&hay, needle, false));
        }
        // The match right next to the candidate after which the scan gives way: 'q' is the
        // needle's rarest byte, every 'q' of the run is a failed candidate.
        for n in WARMUP_CANDIDATES - 2..WARMUP_CANDIDATES + 3 {
            let mut hay = vec![b'q'; n];
            hay.extend_from_slice(b"qe");
            assert_eq!(find(&hay, b"qe"), Some(n), "{n}");
            assert_eq!(find_ignore_ascii_case(&hay, b"QE"), Some(n), "{n}");
            let mut hay = b"eq".to_vec();
            hay.extend(std::iter::repeat_n(b'q', n));
            assert_eq!(rfind_ignore_ascii_case(&hay, b"EQ"), Some(0), "{n}");
        }
        // The worst case for a scan that always verifies: a long needle of the haystack's byte.
        let hay = vec![b'x'; 100_000];
        let needle = vec![b'x'; 5_000];
        assert_eq!(find(&hay, &needle), Some(0));
        let mut needle_b = needle.clone();
        needle_b[0] = b'y';
        assert_eq!(find(&hay, &needle_b), None);
        assert_eq!(rfind_ignore_ascii_case(&hay, &needle_b), None);
        needle_b[0] = b'x';
        needle_b[4_999] = b'y';
        assert_eq!(find_ignore_ascii_case(&hay, &needle_b), None);
        assert_eq!(rfind_ignore_ascii_case(&hay, &needle_b), None);
    }

    #[test]
    fn random_searches_match_naive() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for round in 0..3000 {
            let alphabet = ALPHABETS[round % ALPHABETS.len()];
            let hay = rng.bytes(0..300, alphabet);
            let needle = rng.bytes(0..5, alphabet);
            assert_eq!(find(&hay, &needle), naive_find(&hay, &needle, false));
            assert_eq!(find_ignore_ascii_case(&hay, &needle), naive_find(&hay, &needle, true));
            assert_eq!(rfind_ignore_ascii_case(&hay, &needle), naive_rfind(&hay, &needle, true));
        }
    }
}
