//! Rotating logs inside working memory: `think_log_001`, `think_log_002`, ... (docs/design.md §6).
//!
//! Each entry gets the next number of its log and is appended at the end of working memory, so
//! the prompt, which shows working memory in insertion order, only grows at its end from one
//! cycle to the next and a server's prompt cache keeps all of it. When a log holds more than
//! `max_entries`, its oldest entries are dropped down to half of `max_entries` (rounded up) in
//! one go: the prompt then changes once every few cycles instead of every cycle, as it would if
//! one entry were dropped (and every slot renumbered, as the C original did) per append. Slots
//! of a log's prefix that do not parse as numbers are left alone; numbered slots from an
//! earlier config count like any other and are dropped oldest first. Numbers restart from 001
//! (renumbering the kept entries in order) only when the next would pass 999.
//!
//! All work is bounded by the working set's size and done in a caller-reserved scratch buffer,
//! so appending never allocates.

use crate::error::Result;
use crate::fixed::{ArrayString, ArrayVec, FixedBuf};
use crate::limits::{LOG_MAX_ENTRIES, WORKING_MAX_ENTRIES};
use crate::memory::key::{normalize, Key};
use crate::memory::working::WorkingSet;

use super::settings::LogSettings;

/// Fraction of a log's three-word phrases, in percent, that may already stand in the prompt
/// before the log counts as a copy (see [`copies`]).
pub const COPY_PERCENT: usize = 60;

/// Whether the model's log `text` copies the prompt it was given: at least [`COPY_PERCENT`]% of
/// its three-word phrases stand in `prompt` as they are (ASCII case ignored; a prompt holds the
/// earlier logs too, so a log that repeats one is a copy as well). Small models copy what sits
/// in the prompt; a copy kept in working memory is shown again, and copied again, every cycle.
/// A log of fewer than three words is not judged. Work: one search of `prompt` per phrase, at
/// most the log's words.
pub fn copies(text: &str, prompt: &[u8]) -> bool {
    let mut window: [&str; 3] = [""; 3];
    let (mut words, mut phrases, mut found) = (0usize, 0usize, 0usize);
    for w in text.split_ascii_whitespace() {
        window = [window[1], window[2], w];
        words += 1;
        if words < 3 {
            continue;
        }
        let mut phrase: ArrayString<192> = ArrayString::new();
        if phrase.format(format_args!("{} {} {}", window[0], window[1], window[2])).is_err() {
            continue;
        }
        phrases += 1;
        if crate::bytes::contains_ignore_ascii_case(prompt, phrase.as_bytes()) {
            found += 1;
        }
    }
    phrases > 0 && found * 100 >= phrases * COPY_PERCENT
}

/// Slot number of `key` if it is `<prefix><digits>` (3 or more digits), else `None`.
pub fn slot_of(key: &str, prefix: &str) -> Option<u32> {
    let digits = key.strip_prefix(prefix)?;
    if digits.len() < 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    crate::bytes::parse_u32(digits)
}

/// The key of slot `n` of `prefix` (`think_log_` + 7 = `think_log_007`).
pub fn slot_key(prefix: &str, n: u32) -> Result<Key> {
    let mut text: ArrayString<48> = ArrayString::new();
    text.format(format_args!("{}{:03}", prefix, n))?;
    normalize(text.as_str())
}

/// Appends `text` to the log `log` in `wm`. `scratch` must hold at least the working set's
/// text budget; it is used only when slots are renumbered.
pub fn append(wm: &mut WorkingSet, log: &LogSettings, text: &str, now: u64, scratch: &mut FixedBuf) -> Result<()> {
    if !log.enable {
        return Ok(());
    }
    let text = text.trim();
    if text.is_empty() {
        return Ok(());
    }
    let present = present_slots(wm, log)?;
    let last = present.as_slice().last().map_or(0, |&(n, _)| n);
    let max = (log.max_entries as usize).clamp(1, LOG_MAX_ENTRIES);
    // Over the limit after this append: keep the newest ceil(max/2) - 1 old entries (the new
    // one makes ceil(max/2)); otherwise keep them all.
    let keep_old = if present.len() + 1 > max { max.div_ceil(2) - 1 } else { present.len() };
    let drop = present.len() - keep_old;
    for &(n, _) in present.as_slice().iter().take(drop) {
        wm.remove(&slot_key(&log.key_prefix, n)?);
    }
    let next = if last as usize >= LOG_MAX_ENTRIES { renumber(wm, log, scratch, now)? } else { last + 1 };
    wm.add(&slot_key(&log.key_prefix, next)?, text, now)
}

/// The numbered slots of `log`, oldest (lowest number) first: `(number, position)`.
fn present_slots(wm: &WorkingSet, log: &LogSettings) -> Result<ArrayVec<(u32, usize), WORKING_MAX_ENTRIES>> {
    let mut present: ArrayVec<(u32, usize), WORKING_MAX_ENTRIES> = ArrayVec::new();
    for (i, (key, _, _)) in wm.iter().enumerate() {
        if let Some(n) = slot_of(key.as_str(), &log.key_prefix) {
            present.push((n, i))?;
        }
    }
    crate::sort::sort(present.as_mut_slice());
    Ok(present)
}

/// Moves the log's entries to slots 1..=k (in order, at the end of working memory) and returns
/// the next free number. Runs only when numbers reach 999.
fn renumber(wm: &mut WorkingSet, log: &LogSettings, scratch: &mut FixedBuf, now: u64) -> Result<u32> {
    let present = present_slots(wm, log)?;
    scratch.clear();
    let mut lens: ArrayVec<usize, WORKING_MAX_ENTRIES> = ArrayVec::new();
    // A position that holds no entry, or a cut that fails (a bug), is an error: never an entry
    // renumbered as empty text.
    let lost = || err!(Internal, "renumbering the {} log lost track of an entry's text (a bug)", log.key_prefix);
    for &(_, i) in present.iter() {
        let t = wm.text(i).ok_or_else(lost)?;
        scratch.push_str(t)?;
        lens.push(t.len())?;
    }
    for &(n, _) in present.iter() {
        wm.remove(&slot_key(&log.key_prefix, n)?);
    }
    // The texts lie one after another in `scratch`, each whole.
    let mut rest = scratch.text()?;
    for (slot, &len) in lens.iter().enumerate() {
        let (text, after) = rest.split_at_checked(len).ok_or_else(lost)?;
        wm.add(&slot_key(&log.key_prefix, slot as u32 + 1)?, text, now)?;
        rest = after;
    }
    Ok(lens.len() as u32 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(max: u32) -> LogSettings {
        LogSettings { enable: true, max_entries: max, key_prefix: "think_log_".into() }
    }

    fn texts(wm: &WorkingSet) -> Vec<(String, String)> {
        wm.iter().map(|(k, t, _)| (k.as_str().to_string(), t.to_string())).collect()
    }

    #[test]
    fn appends_at_the_end_and_drops_the_oldest_half_when_full() {
        let mut wm = WorkingSet::with_capacity(32, 4096);
        let mut scratch = FixedBuf::with_capacity("scratch", 4096);
        wm.add(&normalize("task").unwrap(), "t", 0).unwrap();
        for (i, t) in ["a", "b", "c", "d"].iter().enumerate() {
            append(&mut wm, &log(4), t, i as u64, &mut scratch).unwrap();
        }
        assert_eq!(
            &texts(&wm)[1..],
            &[
                ("think_log_001".into(), "a".into()),
                ("think_log_002".into(), "b".into()),
                ("think_log_003".into(), "c".into()),
                ("think_log_004".into(), "d".into())
            ]
        );
        // A note added in between stays where it is; the log keeps appending after it.
        wm.add(&normalize("note").unwrap(), "n", 5).unwrap();
        append(&mut wm, &log(4), "  e  ", 6, &mut scratch).unwrap();
        assert_eq!(
            &texts(&wm)[1..],
            &[("think_log_004".into(), "d".into()), ("note".into(), "n".into()), ("think_log_005".into(), "e".into())]
        );
        // Until full again, appends only add at the end.
        append(&mut wm, &log(4), "f", 7, &mut scratch).unwrap();
        append(&mut wm, &log(4), "g", 8, &mut scratch).unwrap();
        assert_eq!(texts(&wm).last().unwrap(), &("think_log_007".to_string(), "g".to_string()));
        assert_eq!(wm.len(), 6);
        // max 1: each append replaces; disabled or empty appends change nothing.
        append(&mut wm, &log(1), "h", 9, &mut scratch).unwrap();
        assert_eq!(&texts(&wm)[1..], &[("note".into(), "n".into()), ("think_log_008".into(), "h".into())]);
        append(&mut wm, &LogSettings { enable: false, ..log(3) }, "i", 10, &mut scratch).unwrap();
        append(&mut wm, &log(3), "   ", 10, &mut scratch).unwrap();
        assert_eq!(wm.len(), 3);
    }

    #[test]
    fn numbers_restart_past_999_keeping_order() {
        let mut wm = WorkingSet::with_capacity(32, 4096);
        let mut scratch = FixedBuf::with_capacity("scratch", 4096);
        wm.add(&slot_key("think_log_", 998).unwrap(), "x", 0).unwrap();
        wm.add(&slot_key("think_log_", 999).unwrap(), "y", 0).unwrap();
        append(&mut wm, &log(4), "z", 1, &mut scratch).unwrap();
        assert_eq!(
            texts(&wm),
            [
                ("think_log_001".to_string(), "x".to_string()),
                ("think_log_002".into(), "y".into()),
                ("think_log_003".into(), "z".into())
            ]
        );
    }

    #[test]
    fn slot_parsing() {
        assert_eq!(slot_of("think_log_001", "think_log_"), Some(1));
        assert_eq!(slot_of("think_log_1000", "think_log_"), Some(1000));
        assert_eq!(slot_of("think_log_01", "think_log_"), None);
        assert_eq!(slot_of("think_log_abc", "think_log_"), None);
        assert_eq!(slot_of("evaluation_log_001", "think_log_"), None);
    }
}
