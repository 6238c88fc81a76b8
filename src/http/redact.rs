//! Keeping the API key out of everything a server sends back (issue 10 "Secrets", issue 15
//! "Secrets cut in half").
//!
//! A server, or a proxy in front of it, may echo the `Authorization` header in an error body,
//! a header, or even a reply. Whatever it sends could end up in `memory.json` (the error fed
//! back to the model), the exchange log, the audit log or the terminal, so the HTTP client
//! redacts every byte of a response before anyone sees it: the head, the chunk framing and the
//! body, whole or streamed. The LLM client does the same to the strings it decodes from JSON,
//! because an escape (`\/`, `\u0041`) can hide a key from a scan of the raw bytes.
//!
//! What counts as the key: any run of [`MIN_RUN`] or more consecutive characters of it (all of
//! it when it is shorter), so a key a server cut short, or a message cut at a length limit, is
//! still found. Each maximal stretch of such runs becomes [`MARKER`]; `Bearer <key>` becomes
//! `Bearer [REDACTED]`. The marker is never longer than what it replaces, so redaction can work
//! in place and never needs more room. Redaction comes before any cut to length.
//!
//! Cost: the key's windows of [`MIN_RUN`] bytes are kept sorted (reserved once, when the key is
//! set), with a set of the key's bytes and a 4096-bit filter of the windows' hashes. A scan
//! skips ahead past any byte the key does not contain, so ordinary text costs about one look
//! per [`MIN_RUN`] bytes; a long run of key-like characters costs one filter probe per byte and
//! a binary search on a filter hit. Linear in the text, no allocation after start-up.

use crate::bytes;
use crate::error::Result;
use core::fmt;

/// The shortest run of the key's characters that is treated as the key.
pub const MIN_RUN: usize = 12;

/// What a redacted stretch becomes.
pub const MARKER: &str = "[REDACTED]";

/// The marker for keys shorter than [`MARKER`] (so the marker still fits in place).
const STARS: &str = "************";

/// Bytes a streamed body is redacted in at a time (a stack buffer).
const STREAM_PIECE: usize = 4096;

/// Finds the key in text. `Default` (and [`Redactor::none`]) finds nothing. `Debug` shows only
/// whether a key is set.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Window length: `min(MIN_RUN, key length)`; 0 when there is no key.
    width: usize,
    /// Every window of the key, packed big-endian into a `u128`, sorted, deduplicated.
    grams: Vec<u128>,
    /// The bytes that occur in some window.
    bytes: [u64; 4],
    /// A 4096-bit filter of the windows' hashes.
    filter: Vec<u64>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.width == 0 { "Redactor(none)" } else { "Redactor(<key>)" })
    }
}

const FILTER_WORDS: usize = 64;

fn hash(g: u128) -> usize {
    let x = (g as u64) ^ ((g >> 64) as u64).rotate_left(29);
    (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 52) as usize
}

fn pack(window: &[u8]) -> u128 {
    window.iter().fold(0u128, |g, &b| (g << 8) | u128::from(b))
}

impl Redactor {
    /// A redactor that finds nothing (no key is configured).
    pub const fn none() -> Redactor {
        Redactor { width: 0, grams: Vec::new(), bytes: [0; 4], filter: Vec::new() }
    }

    /// A redactor for `key`. Only ASCII is matched (an API key is ASCII: see
    /// `http::HttpClient::set_bearer`), so a redacted stretch never splits a character; windows
    /// holding other bytes are left out. Allocates (once, at start-up).
    pub fn new(key: &[u8]) -> Redactor {
        let width = key.len().min(MIN_RUN);
        if width == 0 {
            return Redactor::none();
        }
        let mut r = Redactor {
            width,
            grams: Vec::with_capacity(key.len() + 1 - width),
            bytes: [0; 4],
            filter: vec![0; FILTER_WORDS],
        };
        for w in key.windows(width).filter(|w| w.is_ascii()) {
            let g = pack(w);
            r.grams.push(g);
            let h = hash(g);
            if let Some(word) = r.filter.get_mut(h / 64) {
                *word |= 1 << (h % 64);
            }
            for &b in w {
                if let Some(word) = r.bytes.get_mut(usize::from(b / 64)) {
                    *word |= 1 << (b % 64);
                }
            }
        }
        crate::sort::sort(&mut r.grams);
        r.grams.dedup();
        if r.grams.is_empty() {
            return Redactor::none();
        }
        r
    }

    /// Whether there is a key to find.
    pub fn is_active(&self) -> bool {
        self.width > 0
    }

    /// What a redacted stretch becomes: [`MARKER`], or as many `*` as the key is long when the
    /// key is shorter than the marker.
    pub fn marker(&self) -> &'static str {
        if self.width >= MARKER.len() {
            MARKER
        } else {
            // `width < MARKER.len() < STARS.len()`, and stars are ASCII: exactly `width` of them.
            bytes::str_prefix(STARS, self.width)
        }
    }

    fn has_byte(&self, b: u8) -> bool {
        self.bytes.get(usize::from(b / 64)).is_some_and(|w| w & (1 << (b % 64)) != 0)
    }

    /// Whether the window of `width` bytes at `s` is a window of the key.
    fn window_matches(&self, text: &[u8], s: usize) -> bool {
        #[cfg(test)]
        tests::count_step();
        let Some(w) = text.get(s..s + self.width) else { return false };
        let g = pack(w);
        let h = hash(g);
        self.filter.get(h / 64).is_some_and(|word| word & (1 << (h % 64)) != 0) && self.grams.binary_search(&g).is_ok()
    }

    /// The first window of the key in `text` starting at `from` or later.
    fn next_window(&self, text: &[u8], mut s: usize) -> Option<usize> {
        let w = self.width;
        'windows: while s + w <= text.len() {
            // From the window's end backwards: a byte the key does not hold rules out every
            // window that contains it.
            for j in (0..w).rev() {
                #[cfg(test)]
                tests::count_step();
                if !text.get(s + j).is_some_and(|&b| self.has_byte(b)) {
                    s += j + 1;
                    continue 'windows;
                }
            }
            if self.window_matches(text, s) {
                return Some(s);
            }
            s += 1;
        }
        None
    }

    /// The next stretch of `text` to redact at or after `from`: `(start, end)`, the union of
    /// overlapping or touching windows of the key, each lying wholly inside `text`.
    pub fn next_run(&self, text: &[u8], from: usize) -> Option<(usize, usize)> {
        if self.width == 0 {
            return None;
        }
        let start = self.next_window(text, from)?;
        let mut end = start + self.width;
        let mut s = start + 1;
        while s <= end && s + self.width <= text.len() {
            if self.window_matches(text, s) {
                end = s + self.width;
            }
            s += 1;
        }
        Some((start, end))
    }

    /// Redacts `buf` in place and returns its new length (at most the old one). The bytes past
    /// the new length are unspecified.
    pub fn redact_in_place(&self, buf: &mut [u8]) -> usize {
        let marker = self.marker().as_bytes();
        let (mut read, mut write) = (0, 0);
        while let Some((a, b)) = self.next_run(buf, read) {
            buf.copy_within(read..a, write);
            write += a - read;
            if let Some(dst) = buf.get_mut(write..write + marker.len()) {
                dst.copy_from_slice(marker);
            }
            write += marker.len();
            read = b;
        }
        let len = buf.len();
        buf.copy_within(read..len, write);
        write + (len - read)
    }

    /// `text` with the key redacted, for formatting (no copy): redaction happens while the
    /// text is written, so a later cut to length cannot leave part of the key behind.
    pub fn show<'a>(&'a self, text: &'a str) -> Redacted<'a> {
        Redacted { redactor: self, text }
    }
}

/// See [`Redactor::show`].
pub struct Redacted<'a> {
    redactor: &'a Redactor,
    text: &'a str,
}

impl fmt::Display for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.text.as_bytes();
        let mut at = 0;
        while let Some((a, b)) = self.redactor.next_run(bytes, at) {
            // Runs are ASCII, so their ends are character boundaries and these cuts cannot fail;
            // were they to, the write fails rather than drop text.
            f.write_str(self.text.get(at..a).ok_or(fmt::Error)?)?;
            f.write_str(self.redactor.marker())?;
            at = b;
        }
        f.write_str(self.text.get(at..).ok_or(fmt::Error)?)
    }
}

/// Redacts a byte stream that arrives in pieces, with the same result as redacting it whole
/// however it is split: the last `width - 1` bytes are held back until the next piece (or
/// [`StreamRedactor::finish`]) shows whether they start a window of the key.
#[derive(Clone, Debug, Default)]
pub struct StreamRedactor {
    pending: [u8; MIN_RUN],
    pending_len: usize,
    /// How many leading pending bytes a window already seen covers.
    covered: usize,
    /// The last output was the marker (a stretch that goes on continues it).
    in_marker: bool,
}

impl StreamRedactor {
    /// A redactor at the start of a stream.
    pub const fn new() -> StreamRedactor {
        StreamRedactor { pending: [0; MIN_RUN], pending_len: 0, covered: 0, in_marker: false }
    }

    /// Back to the start of a stream (what was held back is dropped).
    pub fn reset(&mut self) {
        *self = StreamRedactor::new();
    }

    /// Redacts `data` and passes what is settled to `out`, in order.
    pub fn write(&mut self, r: &Redactor, data: &[u8], out: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        if !r.is_active() {
            return if data.is_empty() { Ok(()) } else { out(data) };
        }
        let mut work = [0u8; STREAM_PIECE + MIN_RUN];
        for piece in data.chunks(STREAM_PIECE) {
            let p = self.pending_len;
            let n = p + piece.len();
            // `p <= MIN_RUN` and a piece is at most STREAM_PIECE bytes: both fit `work`.
            if let Some(dst) = work.get_mut(..p) {
                dst.copy_from_slice(bytes::take(&self.pending, p));
            }
            if let Some(dst) = work.get_mut(p..n) {
                dst.copy_from_slice(piece);
            }
            let text = bytes::take(&work, n);
            // Positions below `settled` are in no window still to come.
            let settled = (n + 1).saturating_sub(r.width);
            self.emit(r, text, settled, out)?;
            let rest = bytes::skip(text, settled);
            self.pending_len = rest.len().min(MIN_RUN);
            if let Some(dst) = self.pending.get_mut(..self.pending_len) {
                dst.copy_from_slice(bytes::take(rest, self.pending_len));
            }
        }
        Ok(())
    }

    /// Ends the stream: what was held back is settled and passed on.
    pub fn finish(&mut self, r: &Redactor, out: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let pending = self.pending;
        let text = bytes::take(&pending, self.pending_len);
        let result = self.emit(r, text, text.len(), out);
        self.reset();
        result
    }

    /// Passes on `text[..settled]`, redacted, and keeps how much of the rest is covered.
    fn emit(
        &mut self,
        r: &Redactor,
        text: &[u8],
        settled: usize,
        out: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut pos = 0;
        let mut current = (self.covered > 0).then_some((0, self.covered));
        let mut from = 0;
        self.covered = 0;
        loop {
            let next = r.next_run(text, from);
            match (current, next) {
                // A run that overlaps or touches the current one extends it.
                (Some((a, b)), Some((s, e))) if s <= b => {
                    current = Some((a, b.max(e)));
                    from = e;
                }
                (Some((a, b)), _) => {
                    // The current run is complete: what precedes it, then its marker (settled
                    // parts only; the rest is remembered as covered).
                    // `pos <= settled <= text.len()`.
                    self.plain(bytes::range(text, pos, a.min(settled)), out)?;
                    if a < settled {
                        self.mark(r, out)?;
                    }
                    pos = pos.max(b.min(settled));
                    self.covered = b.saturating_sub(settled);
                    current = next;
                    match next {
                        Some((_, e)) => from = e,
                        None => break,
                    }
                }
                (None, Some((s, e))) => {
                    current = Some((s, e));
                    from = e;
                }
                (None, None) => break,
            }
        }
        self.plain(bytes::range(text, pos, settled), out)
    }

    fn plain(&mut self, bytes: &[u8], out: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.in_marker = false;
        out(bytes)
    }

    fn mark(&mut self, r: &Redactor, out: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        if self.in_marker {
            return Ok(());
        }
        self.in_marker = true;
        out(r.marker().as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEY: &str = "sk-Q7wX2mR9pL4vK8nB3cZ6hT1yF5gJ0dSa";

    fn in_place(r: &Redactor, text: &str) -> String {
        let mut buf = text.as_bytes().to_vec();
        let n = r.redact_in_place(&mut buf);
        buf.truncate(n);
        String::from_utf8(buf).unwrap()
    }

    fn streamed(r: &Redactor, text: &[u8], cuts: &[usize]) -> Vec<u8> {
        let mut s = StreamRedactor::new();
        let mut out = Vec::new();
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.push(text.len());
        let mut at = 0;
        for c in cuts {
            s.write(r, &text[at..c], &mut |b| {
                out.extend_from_slice(b);
                Ok(())
            })
            .unwrap();
            at = c;
        }
        s.finish(r, &mut |b| {
            out.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
        out
    }

    /// The definition, by brute force: a byte is covered when some window of the key's length
    /// (at most MIN_RUN) around it is a substring of the key; each covered stretch becomes the
    /// marker.
    fn reference(key: &[u8], text: &[u8]) -> Vec<u8> {
        let w = key.len().min(MIN_RUN);
        let marker = if w >= MARKER.len() { MARKER.as_bytes() } else { &STARS.as_bytes()[..w] };
        let mut covered = vec![false; text.len()];
        if w > 0 {
            for s in 0..text.len().saturating_sub(w - 1) {
                let win = &text[s..s + w];
                if win.is_ascii() && key.windows(w).any(|k| k == win) {
                    covered[s..s + w].iter_mut().for_each(|c| *c = true);
                }
            }
        }
        let mut out = Vec::new();
        for (i, &b) in text.iter().enumerate() {
            if !covered[i] {
                out.push(b);
            } else if i == 0 || !covered[i - 1] {
                out.extend_from_slice(marker);
            }
        }
        out
    }

    #[test]
    fn the_key_and_bearer_key_are_redacted() {
        let r = Redactor::new(KEY.as_bytes());
        assert_eq!(in_place(&r, &format!("Authorization: Bearer {}.", KEY)), "Authorization: Bearer [REDACTED].");
        assert_eq!(in_place(&r, &format!("{}{}", KEY, KEY)), "[REDACTED]");
        assert_eq!(in_place(&r, "nothing here"), "nothing here");
        assert_eq!(r.show(&format!("a {} b", KEY)).to_string(), "a [REDACTED] b");
        assert_eq!(format!("{:?}", r), "Redactor(<key>)");
    }

    #[test]
    fn a_run_of_twelve_is_the_key_eleven_is_not() {
        let r = Redactor::new(KEY.as_bytes());
        let twelve = &KEY[7..19];
        let eleven = &KEY[7..18];
        assert_eq!(in_place(&r, &format!("x{}y", twelve)), "x[REDACTED]y");
        assert_eq!(in_place(&r, &format!("x{}y", eleven)), format!("x{}y", eleven));
        // A key cut short by a server, and a key with a stranger in the middle.
        assert_eq!(in_place(&r, &format!("{}...", &KEY[..20])), "[REDACTED]...");
        assert_eq!(in_place(&r, &format!("{}#{}", &KEY[..14], &KEY[14..])), "[REDACTED]#[REDACTED]");
    }

    #[test]
    fn short_keys_and_no_key() {
        let r = Redactor::new(b"abc");
        assert_eq!(in_place(&r, "xabcx abd"), "x***x abd");
        let none = Redactor::none();
        assert!(!none.is_active());
        assert_eq!(in_place(&none, KEY), KEY);
        assert_eq!(streamed(&none, KEY.as_bytes(), &[5]), KEY.as_bytes());
        assert!(!Redactor::new(b"").is_active());
        // Bytes outside ASCII are never matched, so no character is ever split.
        let r = Redactor::new("ééééééééééééé".as_bytes());
        assert_eq!(in_place(&r, "ééééééééééééé"), "ééééééééééééé");
    }

    thread_local! {
        /// Bytes looked at and windows probed by this thread's redactions (tests run each on
        /// a thread of its own).
        static STEPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    pub(super) fn count_step() {
        STEPS.with(|n| n.set(n.get() + 1));
    }

    /// The steps `redact_in_place` takes on `text`, and the text it leaves.
    fn steps_of(r: &Redactor, text: &[u8]) -> (usize, Vec<u8>) {
        let mut buf = text.to_vec();
        STEPS.with(|n| n.set(0));
        let len = r.redact_in_place(&mut buf);
        buf.truncate(len);
        (STEPS.with(|n| n.get()), buf)
    }

    /// Linear by count, not by clock (speed is `make bench`'s): in a text of key-like
    /// characters everywhere every byte takes the slow path, a look at each byte of a window
    /// and a probe, and no more than that per byte however long the text.
    #[test]
    fn long_text_is_linear() {
        let r = Redactor::new(KEY.as_bytes());
        let text: Vec<u8> = KEY.bytes().cycle().skip(3).step_by(7).take(1 << 20).collect();
        for len in [1 << 10, 1 << 14, 1 << 20] {
            let part = &text[..len];
            let (steps, out) = steps_of(&r, part);
            assert!(steps >= len, "{} bytes in {} steps: the slow path was not taken", len, steps);
            assert!(steps <= (MIN_RUN + 2) * len, "{} bytes took {} steps, over {} a byte", len, steps, MIN_RUN + 2);
            if len <= 1 << 14 {
                assert_eq!(out, reference(KEY.as_bytes(), part), "{} bytes", len);
            }
        }
        // The key over and over (about 1 MiB) is one stretch, each window probed about once.
        let keys = KEY.repeat(30_000).into_bytes();
        let (steps, out) = steps_of(&r, &keys);
        assert!(steps <= (MIN_RUN + 2) * keys.len(), "{} steps for {} bytes of keys", steps, keys.len());
        assert_eq!(out, MARKER.as_bytes());
    }

    fn text_from(key: &[u8], parts: &[(u8, usize, usize)]) -> Vec<u8> {
        let mut text = Vec::new();
        for &(kind, a, b) in parts {
            match kind % 3 {
                0 if !key.is_empty() => {
                    let a = a % key.len();
                    let b = (a + b % 20).min(key.len());
                    text.extend_from_slice(&key[a..b]);
                }
                1 => text.extend_from_slice(&b"ab- _.X\xc3\xa9"[..a % 9]),
                _ => text.push(b"abcQ7 X\n"[a % 8]),
            }
        }
        text
    }

    proptest! {
        #[test]
        fn every_way_agrees_with_the_definition(
            key in "[abcQ7X_-]{1,30}",
            parts in proptest::collection::vec((any::<u8>(), 0usize..64, 0usize..64), 0..40),
            cuts in proptest::collection::vec(0usize..400, 0..10),
        ) {
            let key = key.as_bytes();
            let r = Redactor::new(key);
            let text = text_from(key, &parts);
            let want = reference(key, &text);
            let mut buf = text.clone();
            let n = r.redact_in_place(&mut buf);
            prop_assert_eq!(&buf[..n], &want[..]);
            prop_assert_eq!(streamed(&r, &text, &cuts), want.clone());
            if let Ok(s) = std::str::from_utf8(&text) {
                prop_assert_eq!(r.show(s).to_string().into_bytes(), want.clone());
            }
            // Nothing of MIN_RUN (or the whole key) is left.
            let w = key.len().min(MIN_RUN);
            prop_assert!(want.windows(w).all(|win| !key.windows(w).any(|k| k == win)));
        }

        #[test]
        fn arbitrary_bytes_never_panic(key in proptest::collection::vec(any::<u8>(), 0..40), text in proptest::collection::vec(any::<u8>(), 0..300), cuts in proptest::collection::vec(0usize..300, 0..6)) {
            let r = Redactor::new(&key);
            let mut buf = text.clone();
            let n = r.redact_in_place(&mut buf);
            prop_assert!(n <= text.len());
            prop_assert_eq!(streamed(&r, &text, &cuts), buf[..n].to_vec());
        }
    }
}
