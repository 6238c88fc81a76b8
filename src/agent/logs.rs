//! Rotating logs inside working memory: `think_log_001` ... `think_log_NNN` (DESIGN.md §6).
//!
//! Appending keeps the newest `max_entries` entries in slots `001..` in age order (oldest
//! first) and removes every other slot of the prefix, including "stale" slots above
//! `max_entries` left by an earlier config (the C original kept those forever) and holes left
//! by a removed slot (it never reused them). The work is bounded by `max_entries` and done in a
//! caller-reserved scratch buffer, so appending never allocates.

use crate::error::Result;
use crate::fixed::{ArrayString, ArrayVec, FixedBuf};
use crate::limits::{LOG_MAX_ENTRIES, WORKING_MAX_ENTRIES};
use crate::memory::key::{normalize, Key};
use crate::memory::working::WorkingSet;

use super::settings::LogSettings;

/// Slot number of `key` if it is `<prefix><digits>` (3 or more digits), else `None`.
pub fn slot_of(key: &str, prefix: &str) -> Option<u32> {
    let digits = key.strip_prefix(prefix)?;
    if digits.len() < 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The key of slot `n` of `prefix` (`think_log_` + 7 = `think_log_007`).
pub fn slot_key(prefix: &str, n: u32) -> Result<Key> {
    let mut text: ArrayString<48> = ArrayString::new();
    text.format(format_args!("{}{:03}", prefix, n))?;
    normalize(text.as_str())
}

/// Appends `text` to the log `log` in `wm`. `scratch` must hold at least the working set's
/// text budget; it is used to move texts between slots.
pub fn append(wm: &mut WorkingSet, log: &LogSettings, text: &str, now: u64, scratch: &mut FixedBuf) -> Result<()> {
    if !log.enable {
        return Ok(());
    }
    let text = text.trim();
    if text.is_empty() {
        return Ok(());
    }
    // The present slots, oldest (lowest number) first.
    let mut present: ArrayVec<(u32, usize), WORKING_MAX_ENTRIES> = ArrayVec::new();
    for (i, (key, _, _)) in wm.iter().enumerate() {
        if let Some(n) = slot_of(key.as_str(), &log.key_prefix) {
            present.push((n, i))?;
        }
    }
    present.as_mut_slice().sort_unstable();
    let max = (log.max_entries as usize).clamp(1, LOG_MAX_ENTRIES);
    // Slots above max are stale (an earlier config had more): they are removed, not kept.
    let live = present.iter().filter(|(n, _)| *n as usize <= max).count();
    // Keep the newest max-1 live entries; they move to slots 1..=kept, the new one follows.
    let kept = live.min(max - 1);
    let drop = live - kept;
    // Copy the kept texts (in order) into scratch, remembering their lengths.
    scratch.clear();
    let mut lens: ArrayVec<usize, WORKING_MAX_ENTRIES> = ArrayVec::new();
    for &(_, i) in present.as_slice().iter().take(live).skip(drop) {
        let t = wm.text(i).unwrap_or("");
        scratch.push_str(t)?;
        lens.push(t.len())?;
    }
    // Remove every slot of this log, then write kept + new to 1..=kept+1.
    for &(n, _) in present.as_slice() {
        let key = slot_key(&log.key_prefix, n)?;
        wm.remove(&key);
    }
    let mut at = 0usize;
    for (slot, len) in lens.iter().enumerate() {
        let bytes = scratch.as_slice().get(at..at + len).unwrap_or(&[]);
        let t = core::str::from_utf8(bytes).unwrap_or("");
        wm.add(&slot_key(&log.key_prefix, slot as u32 + 1)?, t, now)?;
        at += len;
    }
    wm.add(&slot_key(&log.key_prefix, kept as u32 + 1)?, text, now)
}

/// Whether `key` belongs to one of the logs (rendered after the other entries of the prompt).
pub fn is_log_key(key: &str, logs: [&LogSettings; 3]) -> bool {
    logs.iter().any(|l| slot_of(key, &l.key_prefix).is_some())
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
    fn rotates_dropping_the_oldest_and_cleans_stale_slots() {
        let mut wm = WorkingSet::with_capacity(32, 4096);
        let mut scratch = FixedBuf::with_capacity("scratch", 4096);
        wm.add(&normalize("task").unwrap(), "t", 0).unwrap();
        // A stale slot above max from an earlier config, and a hole at 002.
        wm.add(&slot_key("think_log_", 9).unwrap(), "stale", 0).unwrap();
        wm.add(&slot_key("think_log_", 1).unwrap(), "a", 0).unwrap();
        wm.add(&slot_key("think_log_", 3).unwrap(), "b", 0).unwrap();
        append(&mut wm, &log(3), "c", 1, &mut scratch).unwrap();
        let got = texts(&wm);
        assert_eq!(got[0], ("task".into(), "t".into()));
        assert_eq!(
            &got[1..],
            &[
                ("think_log_001".into(), "a".into()),
                ("think_log_002".into(), "b".into()),
                ("think_log_003".into(), "c".into())
            ]
        );
        append(&mut wm, &log(3), "  d  ", 2, &mut scratch).unwrap();
        let got = texts(&wm);
        assert_eq!(
            &got[1..],
            &[
                ("think_log_001".into(), "b".into()),
                ("think_log_002".into(), "c".into()),
                ("think_log_003".into(), "d".into())
            ]
        );
        // Lowering max drops more; disabled or empty appends change nothing.
        append(&mut wm, &log(1), "e", 3, &mut scratch).unwrap();
        assert_eq!(&texts(&wm)[1..], &[("think_log_001".into(), "e".into())]);
        append(&mut wm, &LogSettings { enable: false, ..log(3) }, "f", 4, &mut scratch).unwrap();
        append(&mut wm, &log(3), "   ", 4, &mut scratch).unwrap();
        assert_eq!(wm.len(), 2);
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
