//! Pre-processing of a raw model reply before it is parsed as tags: what real local models wrap
//! around their answer is removed here, in one forward pass that copies the rest into the
//! reader's working buffer (reserved once).
//!
//! - **`<think>...</think>` blocks are dropped** (Qwen3, DeepSeek-R1 and friends reason there;
//!   a tag mentioned in the reasoning must never count as an instruction). Blocks do not nest:
//!   inside one, a second `<think>` is part of the reasoning.
//! - **An orphan `</think>`** (LM Studio and llama.cpp often put the opening tag in the prompt
//!   template, so the reply starts inside the reasoning) drops everything before it, as the
//!   era-C original did. A reply that does not start with `<think>` but holds a `</think>` is
//!   read that way: up to its first `</think>` is reasoning, even if the reasoning mentions
//!   `<think>`. A later `</think>` with no block open again drops everything before it.
//! - **An unclosed `<think>`** drops everything after it, to the end of the reply. A reply cut
//!   by `max_tokens` while reasoning then yields nothing rather than half-thoughts taken for
//!   instructions; the reader reports it (`UNCLOSED_THINK`) so the feedback can say why.
//! - **Bytes that are not UTF-8** (a server or proxy mangling text, a binary blob) are replaced,
//!   one U+FFFD per invalid sequence as `String::from_utf8_lossy` does, and reported with the
//!   offset of the first one. A reply is never refused for it: the tags around are still good.
//! - **gpt-oss "harmony" channels** passed through as text (`<|channel|>analysis<|message|>...
//!   <|end|><|start|>assistant<|channel|>final<|message|>...`): only what follows the last
//!   `final` channel's `<|message|>` is the answer. Channels with no `final` one (the reply was
//!   cut while reasoning) are dropped like an unclosed `<think>`.
//! - Markers are matched ASCII-case-insensitively (`<Think>`). `<thinking>` is not a think
//!   block: it is the era-A reasoning block, which the interpreter reads as a log entry.
//!
//! Code fences and prose need no removal: the parser ignores text outside elements, and a
//! fence line inside an element is part of that element's text (a value may hold code).
//!
//! Offsets: everything after cleaning (tag offsets, problems) is mapped back to offsets in the
//! original reply through an offset map, so a user reading `parse-reply` output can find the
//! spot in the file the model wrote.

use crate::bytes;
use crate::fixed::ArrayVec;
use crate::limits::{REPLY_MAX_BYTES, REPLY_MAX_OFFSET_SEGMENTS, REPLY_WORK_BYTES};

/// Maps offsets in the cleaned text back to the original reply: a list of (cleaned offset,
/// original offset) where a copied run starts.
#[derive(Clone, Copy, Default)]
pub(crate) struct OffsetMap {
    segs: ArrayVec<(u32, u32), REPLY_MAX_OFFSET_SEGMENTS>,
    /// Some runs were not recorded (too many): offsets after the last recorded run are
    /// approximate (never past the end of the reply).
    pub approximate: bool,
    /// Bytes of the original reply.
    raw_len: u32,
}

impl OffsetMap {
    fn clear(&mut self) {
        self.segs.clear();
        self.approximate = false;
    }

    fn mark(&mut self, work: usize, raw: usize) {
        if self.segs.push((work as u32, raw as u32)).is_err() {
            self.approximate = true;
        }
    }

    /// The offset in the original reply of offset `w` of the cleaned text.
    pub fn raw_offset(&self, w: u32) -> u32 {
        let mut best = (0u32, 0u32);
        for &(ws, rs) in self.segs.iter() {
            if ws > w {
                break;
            }
            best = (ws, rs);
        }
        best.1.saturating_add(w - best.0).min(self.raw_len)
    }
}

/// What cleaning removed or replaced. Offsets are in the original reply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CleanReport {
    /// Bytes of the original reply.
    pub raw_bytes: u32,
    /// Complete `<think>...</think>` blocks removed.
    pub think_blocks: u32,
    /// The last orphan `</think>`: everything before it was removed.
    pub orphan_think_end: Option<u32>,
    /// A `<think>` never closed (or harmony channels with no `final` one): everything from it
    /// on was removed.
    pub unclosed_think: Option<u32>,
    /// Harmony channels: the answer starts here, after the `final` channel's `<|message|>`.
    pub harmony_final: Option<u32>,
    /// Invalid UTF-8 sequences replaced by U+FFFD.
    pub invalid_utf8: u32,
    /// The first of them.
    pub first_invalid_utf8: Option<u32>,
    /// The reply was larger than `REPLY_MAX_BYTES` (or grew past `REPLY_WORK_BYTES` by the
    /// replacements) and was not read at all.
    pub too_large: bool,
}

/// Whether `b` at `i` starts `<think>` (`Some(false)`) or `</think>` (`Some(true)`); the
/// marker length is 7 or 8.
fn marker_at(b: &[u8], i: usize) -> Option<bool> {
    let rest = b.get(i..)?;
    // The byte after `<` rules out most tags before any comparison.
    match rest.get(1) {
        Some(b't' | b'T') => rest.get(..7).is_some_and(|m| m.eq_ignore_ascii_case(b"<think>")).then_some(false),
        Some(b'/') => rest.get(..8).is_some_and(|m| m.eq_ignore_ascii_case(b"</think>")).then_some(true),
        _ => None,
    }
}

/// Finds `needle` in `hay` at or after `from`.
fn find_bytes(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    bytes::find(hay.get(from..)?, needle).map(|r| from + r)
}

/// The first `<` in `hay[from..end]`, as an offset into `hay`.
fn find_lt(hay: &[u8], from: usize, end: usize) -> Option<usize> {
    bytes::find_byte(hay.get(from..end)?, b'<').map(|r| from + r)
}

/// Where harmony channels put the answer.
enum Harmony {
    /// No channels.
    None,
    /// The final channel's message starts here.
    Final(usize),
    /// Channels, but no final message: reasoning from here on.
    Unfinished(usize),
}

fn harmony(raw: &[u8]) -> Harmony {
    const CHANNEL: &[u8] = b"<|channel|>";
    let Some(first) = find_bytes(raw, CHANNEL, 0) else { return Harmony::None };
    let mut last_final = None;
    let mut at = first;
    while let Some(c) = find_bytes(raw, CHANNEL, at) {
        if bytes::skip(raw, c + CHANNEL.len()).starts_with(b"final") {
            last_final = Some(c);
        }
        at = c + CHANNEL.len();
    }
    let message = last_final.and_then(|f| find_bytes(raw, b"<|message|>", f));
    match message {
        Some(m) => Harmony::Final(m + b"<|message|>".len()),
        None => Harmony::Unfinished(first),
    }
}

/// Cleans `raw` into `work` (emptied first; its reservation is kept and never exceeded).
pub(crate) fn clean(raw: &[u8], work: &mut String, map: &mut OffsetMap) -> CleanReport {
    work.clear();
    map.clear();
    map.raw_len = raw.len().min(u32::MAX as usize) as u32;
    let mut rep = CleanReport { raw_bytes: raw.len().min(u32::MAX as usize) as u32, ..CleanReport::default() };
    if raw.len() > REPLY_MAX_BYTES {
        rep.too_large = true;
        return rep;
    }
    let (mut keep_from, end) = match harmony(raw) {
        Harmony::None => (0, raw.len()),
        Harmony::Final(start) => {
            rep.harmony_final = Some(start as u32);
            (start, raw.len())
        }
        Harmony::Unfinished(at) => {
            rep.unclosed_think = Some(at as u32);
            (0, at)
        }
    };
    // A reply that does not start with `<think>` but holds a `</think>` starts inside the
    // reasoning (the template opened it): up to the first `</think>` is reasoning, whatever it
    // mentions (even a literal `<think>`). Until that `</think>` is met, `leading` holds and
    // only the first `<think>` is noted: if the reply holds no `</think>` at all, it is read as
    // one without reasoning before it (that `<think>` then opens a block that never ends). One
    // scan either way.
    let first =
        keep_from + raw.get(keep_from..end).map_or(0, |r| r.iter().take_while(|c| c.is_ascii_whitespace()).count());
    let mut leading = marker_at(raw, first) != Some(false);
    let mut first_open: Option<usize> = None;
    let mut open_at: Option<usize> = None;
    let mut i = keep_from;
    while let Some(lt) = find_lt(raw, i, end) {
        // In a run of `<` only the last can start a marker: the run is stepped over at once.
        let lt = lt + bytes::run_of(bytes::range(raw, lt + 1, end), b'<');
        i = lt + 1;
        let marker = marker_at(raw, lt);
        if leading {
            match marker {
                Some(true) => {
                    leading = false;
                    rep.orphan_think_end = Some(lt as u32);
                    keep_from = lt + 8;
                    i = keep_from;
                }
                Some(false) => {
                    first_open.get_or_insert(lt);
                    i = lt + 7;
                }
                None => {}
            }
            continue;
        }
        match (marker, open_at) {
            (Some(false), None) => {
                if copy(raw, keep_from, lt, work, map, &mut rep).is_err() {
                    return rep;
                }
                open_at = Some(lt);
                i = lt + 7;
            }
            (Some(true), Some(_)) => {
                rep.think_blocks += 1;
                open_at = None;
                keep_from = lt + 8;
                i = keep_from;
            }
            (Some(true), None) => {
                // Orphan: the reply so far was reasoning.
                work.clear();
                map.segs.clear();
                map.approximate = false;
                rep.invalid_utf8 = 0;
                rep.first_invalid_utf8 = None;
                rep.think_blocks = 0;
                rep.orphan_think_end = Some(lt as u32);
                keep_from = lt + 8;
                i = keep_from;
            }
            _ => {}
        }
    }
    if leading {
        // No `</think>` anywhere: no reasoning before the answer.
        if let Some(at) = first_open {
            if copy(raw, keep_from, at, work, map, &mut rep).is_ok() {
                rep.unclosed_think = Some(at as u32);
            }
            return rep;
        }
    }
    match open_at {
        Some(at) => rep.unclosed_think = Some(at as u32),
        None => {
            let _ = copy(raw, keep_from, end, work, map, &mut rep);
        }
    }
    rep
}

/// Appends `raw[from..to]` to `work`, replacing invalid UTF-8. Err when it does not fit.
fn copy(
    raw: &[u8],
    from: usize,
    to: usize,
    work: &mut String,
    map: &mut OffsetMap,
    rep: &mut CleanReport,
) -> Result<(), ()> {
    let mut pos = from;
    let Some(mut rest) = raw.get(from..to) else { return Ok(()) };
    map.mark(work.len(), pos);
    loop {
        let (valid, bad) = match core::str::from_utf8(rest) {
            Ok(s) => (s, None),
            Err(e) => {
                // All of the part before the error is text.
                let ok = bytes::utf8_prefix(bytes::take(rest, e.valid_up_to()));
                (ok, Some(e.error_len().unwrap_or(rest.len() - e.valid_up_to()).max(1)))
            }
        };
        let need = valid.len() + if bad.is_some() { 3 } else { 0 };
        if work.len() + need > REPLY_WORK_BYTES {
            work.clear();
            map.clear();
            rep.too_large = true;
            return Err(());
        }
        work.push_str(valid);
        let Some(bad_len) = bad else { return Ok(()) };
        rep.invalid_utf8 += 1;
        rep.first_invalid_utf8.get_or_insert((pos + valid.len()) as u32);
        work.push('\u{FFFD}');
        pos += valid.len() + bad_len;
        rest = bytes::skip(rest, valid.len() + bad_len);
        map.mark(work.len(), pos);
        if rest.is_empty() {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(raw: &[u8]) -> (String, CleanReport, OffsetMap) {
        let mut w = String::with_capacity(REPLY_WORK_BYTES);
        let mut m = OffsetMap::default();
        let r = clean(raw, &mut w, &mut m);
        (w, r, m)
    }

    #[test]
    fn think_blocks_are_dropped() {
        let (w, r, m) = run(b"<think>use <action> here</think>\n<agent>x</agent><THINK>more</Think>!");
        assert_eq!(w, "\n<agent>x</agent>!");
        assert_eq!(r.think_blocks, 2);
        assert_eq!(m.raw_offset(1), 33);
        assert_eq!(m.raw_offset(17), 68);
    }

    #[test]
    fn orphan_close_drops_everything_before() {
        let (w, r, _) = run(b"reasoning <think>a</think> <action>no</action></think> <agent/>");
        assert_eq!(w, " <agent/>");
        assert_eq!(r.orphan_think_end, Some(46));
        assert_eq!(r.think_blocks, 0);
    }

    #[test]
    fn unclosed_think_drops_to_the_end() {
        let (w, r, _) = run(b"<agent/> <think>and then <action>");
        assert_eq!(w, "<agent/> ");
        assert_eq!(r.unclosed_think, Some(9));
        let (w, _, _) = run(b"<thinking>era A</thinking>");
        assert_eq!(w, "<thinking>era A</thinking>");
    }

    #[test]
    fn harmony_channels_keep_only_the_final_message() {
        let (w, r, m) = run(b"<|channel|>analysis<|message|>Use <action>?<|end|><|start|>assistant<|channel|>final<|message|><agent/><|return|>");
        assert_eq!(w, "<agent/><|return|>");
        assert_eq!(r.harmony_final, Some(95));
        assert_eq!(m.raw_offset(0), 95);
        let (w, r, _) = run(b"<|channel|>analysis<|message|>still thinking about <next_state>");
        assert_eq!(w, "");
        assert_eq!(r.unclosed_think, Some(0));
    }

    #[test]
    fn invalid_utf8_is_replaced_and_mapped() {
        let (w, r, m) = run(b"ab\xffcd\xe2\x82");
        assert_eq!(w, "ab\u{FFFD}cd\u{FFFD}");
        assert_eq!((r.invalid_utf8, r.first_invalid_utf8), (2, Some(2)));
        assert_eq!(m.raw_offset(5), 3); // 'c'
    }

    #[test]
    fn too_large_is_refused_whole() {
        let big = vec![b'a'; REPLY_MAX_BYTES + 1];
        let (w, r, _) = run(&big);
        assert!(r.too_large && w.is_empty());
        let junk = vec![0xffu8; REPLY_MAX_BYTES];
        let (w, r, _) = run(&junk);
        assert!(r.too_large && w.is_empty());
    }
}
