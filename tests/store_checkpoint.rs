#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! The checkpoint (`store.ckpt`) is a cache of the index that must never change what a store
//! holds: whatever happened to it (missing, cut short, a byte flipped, another store's, stale,
//! the log cut or changed under it, a capacity it does not fit), opening gives exactly the index
//! a full replay of the log gives, never panics, and says (`stats().from_checkpoint`) whether
//! the checkpoint was used. An intact checkpoint is used, and the records appended after it are
//! replayed.
//!
//! Each case works on a copy of one pristine store (a few hundred entries with tags, some
//! overwritten, deleted, archived, retagged, linked and accessed, then `close()`d). The
//! reference is the same copy with `store.ckpt` deleted, opened the same way.

#[path = "support/store.rs"]
mod store_support;
#[path = "support/temp.rs"]
mod temp;

use lkjagent::error::Code;
use lkjagent::memory::store::{Store, LOG_NAME};
use std::fs;
use std::path::Path;
use store_support::{assert_same, copy_dir, files, key, snapshot, Rng, Snap, TempDir};

const CKPT: &str = "store.ckpt";
const CAP: usize = 1024;
const TAGS: [&str; 8] = ["t0", "t1", "shared topic", "日本", "t4", "t5", "t6", "t7"];
const T0: u64 = 1_700_000_000;

/// A key of one to four tags from a small pool (so posting lists overlap), made unique by `n`.
fn key_text(n: u64) -> String {
    let mut parts = vec![format!("k{}", n)];
    let mut x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7;
    for _ in 0..(n % 4) {
        parts.push(TAGS[(x % TAGS.len() as u64) as usize].to_string());
        x /= 8;
    }
    parts.join(",")
}

fn value_for(seed: u64, i: u64, rng: &mut Rng) -> String {
    let pad = "x".repeat(rng.below_u64(120) as usize);
    if i.is_multiple_of(7) {
        format!("s{} op{} é→ \"quoted\" \\ newline\n tab\t {}", seed, i, pad)
    } else {
        format!("s{} op{} {}", seed, i, pad)
    }
}

/// Writes `ops` seeded operations (every kind of change) to the store in `dir`; `now` advances
/// one second every three operations, so some entries share a second.
fn churn(store: &mut Store, seed: u64, ops: u64, first_key: u64, keys: u64, t: u64) {
    let mut rng = Rng::new(seed);
    for i in 0..ops {
        let now = t + i / 3;
        let n = first_key + rng.below_u64(keys);
        let k = key(&key_text(n));
        let roll = rng.below_u64(100);
        let live: Vec<u32> = store.ids().collect();
        let pick = |rng: &mut Rng| live.get(rng.below_u64(live.len() as u64) as usize).copied();
        if roll < 60 || live.len() < 4 {
            store.put(&k, &value_for(seed, i, &mut rng), now).unwrap();
        } else if roll < 70 {
            let id = pick(&mut rng).unwrap();
            let k = store.key(id).unwrap();
            store.delete(&k).unwrap();
        } else if roll < 78 {
            let id = pick(&mut rng).unwrap();
            let k = store.key(id).unwrap();
            let archived = store.info(id).unwrap().archived;
            store.set_archived(&k, !archived, now).unwrap();
        } else if roll < 86 {
            let (a, b) = (pick(&mut rng).unwrap(), pick(&mut rng).unwrap());
            if a != b {
                store.link(a, b).unwrap();
            }
        } else if roll < 89 {
            let (a, b) = (pick(&mut rng).unwrap(), pick(&mut rng).unwrap());
            store.unlink(a, b).unwrap();
        } else if roll < 93 {
            // Retag: add a pool tag, or take one away (refused when it would collide).
            let id = pick(&mut rng).unwrap();
            let k = store.key(id).unwrap();
            let extra = key(TAGS[rng.below_u64(TAGS.len() as u64) as usize]);
            let _ = if rng.below_u64(2) == 0 {
                store.add_tags(&k, &extra, now)
            } else {
                store.remove_tags(&k, &extra, now)
            };
        } else {
            let id = pick(&mut rng).unwrap();
            let k = store.key(id).unwrap();
            store.load(&k, now).unwrap();
            if rng.below_u64(4) == 0 {
                store.flush_access().unwrap();
            }
        }
    }
}

/// The pristine store: about 250 live entries out of 600 operations, closed (checkpointed).
fn build(dir: &Path, seed: u64) {
    let mut s = Store::open_with_capacity(dir, CAP).unwrap();
    churn(&mut s, seed, 600, 0, 420, T0);
    // Some accesses left unflushed: close() must write them before the checkpoint.
    for id in s.ids().step_by(9).collect::<Vec<_>>() {
        s.touch(id, T0 + 5_000);
    }
    s.close().unwrap();
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Writer,
    ReadOnly,
}

/// Opens `dir` (writer or read-only) at `cap`: the snapshot and `from_checkpoint`, or the code.
fn open(dir: &Path, mode: Mode, cap: usize) -> Result<(Snap, bool), Code> {
    let res = match mode {
        Mode::Writer => Store::open_with_capacity(dir, cap),
        Mode::ReadOnly => Store::open_read_only_with_capacity(dir, cap),
    };
    let mut s = res.map_err(|e| e.code())?;
    let from = s.stats().from_checkpoint;
    Ok((snapshot(&mut s, &TAGS), from))
}

/// Opens `case` (as it is) and a copy of it without the checkpoint, the same way, and checks
/// they agree; returns whether `case` opened from its checkpoint, or the code both failed with.
fn compare(what: &str, case: &Path, scratch: &Path, mode: Mode, cap: usize) -> Result<bool, Code> {
    let reference = scratch.join("reference");
    copy_dir(case, &reference);
    let _ = fs::remove_file(reference.join(CKPT));
    let want = open(&reference, mode, cap);
    let got = open(case, mode, cap);
    match (got, want) {
        (Ok((g, from)), Ok((w, _))) => {
            assert_same(&format!("{} ({:?}, capacity {})", what, mode, cap), &g, &w);
            Ok(from)
        }
        (Err(g), Err(w)) => {
            assert_eq!(g, w, "{}: open failed with {:?}, the full replay with {:?}", what, g, w);
            Err(g)
        }
        (Ok(_), Err(w)) => panic!("{} ({:?}): opened, but the full replay fails with {:?}", what, mode, w),
        (Err(g), Ok(_)) => panic!("{} ({:?}): open fails with {:?}, the full replay works", what, mode, g),
    }
}

/// The full replays of the pristine store (read-only and writer), for damage done to the
/// checkpoint alone: the log, and so the reference, stays the same.
struct Refs {
    ro: Snap,
    w: Snap,
}

fn refs(pristine: &Path, scratch: &Path) -> Refs {
    let reference = scratch.join("reference");
    copy_dir(pristine, &reference);
    fs::remove_file(reference.join(CKPT)).unwrap();
    let ro = open(&reference, Mode::ReadOnly, CAP).unwrap().0;
    let w = open(&reference, Mode::Writer, CAP).unwrap().0;
    Refs { ro, w }
}

/// Puts `ckpt` (or, `None`, no checkpoint) into `case` (a copy of the pristine store whose log
/// is untouched), opens it read-only (when `read_only`; it must change no file) and as the
/// writer, and compares both with the full replays. Returns `from_checkpoint` of the writer.
fn check_ckpt(what: &str, case: &Path, refs: &Refs, ckpt: Option<&[u8]>, read_only: bool) -> bool {
    match ckpt {
        Some(b) => fs::write(case.join(CKPT), b).unwrap(),
        None => {
            let _ = fs::remove_file(case.join(CKPT));
        }
    }
    let mut ro_from = None;
    if read_only {
        let before = files(case);
        let (g, from) = open(case, Mode::ReadOnly, CAP).unwrap_or_else(|c| panic!("{}: read-only open: {:?}", what, c));
        assert_same(&format!("{} (read-only)", what), &g, &refs.ro);
        assert!(files(case) == before, "{}: a read-only open changed the directory", what);
        ro_from = Some(from);
    }
    let (g, from) = open(case, Mode::Writer, CAP).unwrap_or_else(|c| panic!("{}: open: {:?}", what, c));
    assert_same(&format!("{} (writer)", what), &g, &refs.w);
    if let Some(ro) = ro_from {
        assert_eq!(ro, from, "{}: read-only and writer disagree on using the checkpoint", what);
    }
    from
}

/// The damaged copy is opened read-only first (which must change no file), then as the writer.
/// Returns `from_checkpoint` of the writer's open.
fn check_case(what: &str, pristine: &Path, scratch: &Path, damage: impl FnOnce(&Path)) -> bool {
    let case = scratch.join("case");
    copy_dir(pristine, &case);
    damage(&case);
    let before = files(&case);
    let ro = compare(what, &case, scratch, Mode::ReadOnly, CAP);
    assert!(files(&case) == before, "{}: a read-only open changed the directory", what);
    let w = compare(what, &case, scratch, Mode::Writer, CAP).expect("the writer opens");
    if let Ok(ro) = ro {
        assert_eq!(ro, w, "{}: read-only and writer disagree on using the checkpoint", what);
    }
    w
}

fn with_file(dir: &Path, name: &str, f: impl FnOnce(&mut Vec<u8>)) {
    let p = dir.join(name);
    let mut b = fs::read(&p).unwrap();
    f(&mut b);
    fs::write(&p, b).unwrap();
}

/// Byte offsets where the log's records start (the header's end first).
fn record_starts(log: &[u8]) -> Vec<usize> {
    let mut v = Vec::new();
    let mut at = 0;
    while let Some(nl) = log[at..].iter().position(|&b| b == b'\n') {
        at += nl + 1;
        v.push(at);
    }
    v
}

#[test]
fn intact_checkpoint_is_used_and_matches_a_full_replay() {
    let t = TempDir::new("ckpt-intact");
    let pristine = t.sub("pristine");
    build(&pristine, 11);
    assert!(pristine.join(CKPT).exists(), "close() leaves a checkpoint");
    let (snap, _) = open(&pristine, Mode::ReadOnly, CAP).unwrap();
    assert!(snap.entries.len() > 200, "the store holds a few hundred entries ({})", snap.entries.len());
    assert!(snap.entries.iter().any(|e| e.archived), "some archived");
    assert!(snap.entries.iter().any(|e| !e.related.is_empty()), "some linked");
    assert!(snap.entries.iter().any(|e| e.version > 1), "some overwritten");
    assert!(snap.entries.iter().any(|e| e.hits > 0), "some accessed");
    assert!(snap.entries.iter().all(|e| e.value.is_ok()), "every value reads");
    assert!(check_case("intact", &pristine, t.path(), |_| {}), "an intact checkpoint is used");

    // The id the next entry gets is the same either way (the checkpoint keeps next_id, deleted
    // newest ids included).
    let (a, b) = (t.sub("a"), t.sub("b"));
    copy_dir(&pristine, &a);
    copy_dir(&pristine, &b);
    fs::remove_file(b.join(CKPT)).unwrap();
    let mut sa = Store::open_with_capacity(&a, CAP).unwrap();
    let mut sb = Store::open_with_capacity(&b, CAP).unwrap();
    assert!(sa.stats().from_checkpoint && !sb.stats().from_checkpoint);
    let pa = sa.put(&key("probe,next"), "p", T0 + 9_000).unwrap();
    let pb = sb.put(&key("probe,next"), "p", T0 + 9_000).unwrap();
    assert_eq!(pa, pb, "the next id after a checkpoint open");
    assert_same("after one more put", &snapshot(&mut sa, &TAGS), &snapshot(&mut sb, &TAGS));
}

#[test]
fn records_after_the_checkpoint_are_replayed() {
    let t = TempDir::new("ckpt-after");
    let pristine = t.sub("pristine");
    build(&pristine, 12);
    let old_ckpt = fs::read(pristine.join(CKPT)).unwrap();

    // Writes after the close, dropped without close(): the checkpoint covers a prefix.
    let mut s = Store::open_with_capacity(&pristine, CAP).unwrap();
    assert!(s.stats().from_checkpoint);
    churn(&mut s, 99, 150, 300, 400, T0 + 10_000);
    s.flush_access().unwrap(); // accesses counted in RAM only are advisory: a drop loses them
    let expected = snapshot(&mut s, &TAGS);
    drop(s);
    let mut s = Store::open_with_capacity(&pristine, CAP).unwrap();
    let st = s.stats();
    assert!(st.from_checkpoint, "the old checkpoint still names a prefix of this log");
    assert!(st.replayed_bytes > 0 && st.replayed_bytes < st.log_bytes, "{:?}", st);
    assert_same("reopened after writes past the checkpoint", &snapshot(&mut s, &TAGS), &expected);
    drop(s);
    assert!(check_case("writes after the checkpoint", &pristine, t.path(), |_| {}));

    // A newer close, then the OLDER checkpoint put back: still a prefix of the same log (no
    // compaction happened), so it is used and the rest replayed.
    let mut s = Store::open_with_capacity(&pristine, CAP).unwrap();
    churn(&mut s, 98, 60, 0, 480, T0 + 20_000);
    s.close().unwrap();
    assert_ne!(fs::read(pristine.join(CKPT)).unwrap(), old_ckpt);
    let from = check_case("an older checkpoint of the same log", &pristine, t.path(), |d| {
        fs::write(d.join(CKPT), &old_ckpt).unwrap();
    });
    assert!(from, "an older checkpoint of the same, only grown, log is still good");
}

#[test]
fn missing_truncated_or_extended_checkpoint_falls_back() {
    let t = TempDir::new("ckpt-cut");
    let pristine = t.sub("pristine");
    build(&pristine, 13);
    let refs = refs(&pristine, t.path());
    let case = t.sub("case");
    copy_dir(&pristine, &case);
    let good = fs::read(pristine.join(CKPT)).unwrap();
    assert!(check_ckpt("intact", &case, &refs, Some(&good), true));
    assert!(!check_ckpt("missing", &case, &refs, None, true));
    let len = good.len();
    let mut cuts: Vec<usize> =
        vec![0, 1, 7, 8, 11, 12, 19, 20, 27, 28, 36, 44, 52, 59, 60, 61, 64, 100, len / 3, len / 2, len - 5];
    cuts.extend([len - 4, len - 3, len - 1]);
    cuts.extend((0..len).step_by(499));
    for (i, cut) in cuts.into_iter().enumerate() {
        let what = format!("cut to {} of {} bytes", cut, len);
        assert!(!check_ckpt(&what, &case, &refs, Some(&good[..cut]), i.is_multiple_of(2)), "{}: used", what);
    }
    for extra in [&b"\0"[..], b"junk", &[0u8; 4096], &good] {
        let what = format!("{} bytes appended", extra.len());
        let long = [&good[..], extra].concat();
        assert!(!check_ckpt(&what, &case, &refs, Some(&long), true), "{}: used", what);
    }
}

#[test]
fn a_flipped_byte_anywhere_falls_back() {
    let t = TempDir::new("ckpt-flip");
    let pristine = t.sub("pristine");
    build(&pristine, 14);
    let refs = refs(&pristine, t.path());
    let case = t.sub("case");
    copy_dir(&pristine, &case);
    let good = fs::read(pristine.join(CKPT)).unwrap();
    let len = good.len();
    let mut positions: Vec<usize> = (0..len).step_by(97).collect();
    // Every byte of the fixed head, and the checksum at the end.
    positions.extend(0..60);
    positions.extend(len - 4..len);
    positions.sort_unstable();
    positions.dedup();
    let mut rng = Rng::new(14);
    for (i, at) in positions.into_iter().enumerate() {
        // A different bit each time, and sometimes a whole byte.
        let mask = if rng.below_u64(4) == 0 { 0xff } else { 1u8 << rng.below_u64(8) };
        let mut bad = good.clone();
        bad[at] ^= mask;
        let what = format!("byte {} of {} ^= {:#04x}", at, len, mask);
        assert!(!check_ckpt(&what, &case, &refs, Some(&bad), i.is_multiple_of(4)), "{}: used", what);
    }
    assert!(check_ckpt("intact again", &case, &refs, Some(&good), true));
}

#[test]
fn a_foreign_checkpoint_is_refused() {
    let t = TempDir::new("ckpt-foreign");
    let pristine = t.sub("pristine");
    build(&pristine, 15);
    // The same operations at the same times: logs identical except for the store id in the
    // header, so the checkpoint's length and tail checksum match; only the id tells them apart.
    let twin = t.sub("twin");
    build(&twin, 15);
    let (a, b) = (fs::read(pristine.join(LOG_NAME)).unwrap(), fs::read(twin.join(LOG_NAME)).unwrap());
    let header_end = a.iter().position(|&c| c == b'\n').unwrap();
    assert_eq!(a.len(), b.len());
    assert_eq!(a[header_end..], b[header_end..], "the twin's records are byte for byte the same");
    assert_ne!(a[..header_end], b[..header_end], "the headers differ (store id)");
    let refs = refs(&pristine, t.path());
    let case = t.sub("case");
    copy_dir(&pristine, &case);
    let foreign = fs::read(twin.join(CKPT)).unwrap();
    assert!(!check_ckpt("the twin's checkpoint", &case, &refs, Some(&foreign), true));

    // An unrelated store's checkpoint.
    let other = t.sub("other");
    build(&other, 16);
    let foreign = fs::read(other.join(CKPT)).unwrap();
    assert!(!check_ckpt("another store's checkpoint", &case, &refs, Some(&foreign), true));
}

#[test]
fn a_stale_checkpoint_after_compaction_is_refused() {
    let t = TempDir::new("ckpt-stale");
    let pristine = t.sub("pristine");
    build(&pristine, 17);
    let old = fs::read(pristine.join(CKPT)).unwrap();
    // Checkpoint taken; more appends; the log compacted; more appends; the OLD checkpoint back.
    let mut s = Store::open_with_capacity(&pristine, CAP).unwrap();
    churn(&mut s, 71, 120, 200, 400, T0 + 30_000);
    s.compact().unwrap();
    churn(&mut s, 72, 40, 0, 600, T0 + 40_000);
    drop(s);
    assert!(!check_case("pre-compaction checkpoint", &pristine, t.path(), |d| fs::write(d.join(CKPT), &old).unwrap()));

    // The checkpoint of one compaction put back over the next compaction of the same entries.
    let mut s = Store::open_with_capacity(&pristine, CAP).unwrap();
    s.compact().unwrap();
    let mid = fs::read(pristine.join(CKPT)).unwrap();
    s.compact().unwrap();
    drop(s);
    assert!(!check_case("checkpoint of an earlier compaction", &pristine, t.path(), |d| {
        fs::write(d.join(CKPT), &mid).unwrap()
    }));
}

#[test]
fn a_log_cut_below_the_checkpoint_falls_back() {
    let t = TempDir::new("ckpt-logcut");
    let pristine = t.sub("pristine");
    build(&pristine, 18);
    let log = fs::read(pristine.join(LOG_NAME)).unwrap();
    let starts = record_starts(&log);
    let n = starts.len();
    // At record boundaries (one, three, half the records gone; only the header left) and
    // inside a record (a torn tail the writer cuts off, the reader ignores).
    let mut cuts = vec![starts[n - 2], starts[n - 4], starts[n / 2], starts[0], log.len() - 1, log.len() - 30];
    cuts.push(starts[n / 3] + 17);
    for cut in cuts {
        let from = check_case(&format!("log cut to {} of {} bytes", cut, log.len()), &pristine, t.path(), |d| {
            with_file(d, LOG_NAME, |b| b.truncate(cut))
        });
        assert!(!from, "the checkpoint was used over a log cut to {} of {} bytes", cut, log.len());
    }
}

#[test]
fn a_log_changed_before_the_covered_length_falls_back() {
    let t = TempDir::new("ckpt-logchange");
    let pristine = t.sub("pristine");
    build(&pristine, 19);
    let ckpt = fs::read(pristine.join(CKPT)).unwrap();
    let log = fs::read(pristine.join(LOG_NAME)).unwrap();
    let covered = log.len();
    let starts = record_starts(&log);

    // Cut back and written again past the old length: same store id, a length the log still
    // has, different bytes before it.
    for back in [1usize, 3, 12] {
        let cut = starts[starts.len() - 1 - back];
        let from = check_case(&format!("log cut back {} records and rewritten", back), &pristine, t.path(), |d| {
            with_file(d, LOG_NAME, |b| b.truncate(cut));
            let mut s = Store::open_with_capacity(d, CAP).unwrap();
            let mut i = 0;
            while s.log_bytes() < covered as u64 + 10 {
                s.put(&key(&format!("rewritten,r{}", i)), &format!("other bytes {}", i), T0 + 50_000).unwrap();
                i += 1;
            }
            drop(s); // no close(): the old checkpoint stays
            fs::write(d.join(CKPT), &ckpt).unwrap();
        });
        assert!(!from, "the checkpoint was used over a log rewritten after cutting {} records", back);
    }

    // One byte changed in the last 4 KiB before the covered length (a damaged record, which a
    // full replay skips, or a torn last record, which the writer cuts).
    for before in [1usize, 2, 9, 40, 333, 1000, 2500, 4000, 4096] {
        let at = covered - before;
        let from = check_case(&format!("log byte {} (covered - {}) changed", at, before), &pristine, t.path(), |d| {
            with_file(d, LOG_NAME, |b| b[at] = if b[at] == b'Q' { b'R' } else { b'Q' })
        });
        assert!(!from, "the checkpoint was used over a log changed at covered - {}", before);
    }
}

/// What happens when the log is damaged further back than the 4 KiB the checkpoint checks:
/// by design (`store/checkpoint/mod.rs`: "the same last 4 KiB before that length") the checkpoint
/// is still used. This pins that the damage is then not served as data: the damaged entry's
/// value fails to read (`IO`) instead of coming back wrong, and every other entry matches the
/// full replay. (A full replay instead skips the damaged record: the entry falls back to its
/// previous version or disappears, and `corrupt_records` is 1.)
#[test]
fn damage_deeper_than_the_checked_tail_is_not_served_as_data() {
    let t = TempDir::new("ckpt-deep");
    let pristine = t.sub("pristine");
    build(&pristine, 20);
    let log = fs::read(pristine.join(LOG_NAME)).unwrap();
    assert!(log.len() > 3 * 4096);
    let (want, _) = open(&pristine, Mode::ReadOnly, CAP).unwrap();
    // A byte in the value of a live entry's current record well before the checked tail: the
    // last place its value (with the record's closing `"}`) appears is its current record.
    let case = t.sub("case");
    copy_dir(&pristine, &case);
    let needle = |e: &store_support::Entry| format!("{}\"}}", e.value.as_ref().unwrap()).into_bytes();
    let victim = want
        .entries
        .iter()
        .find(|e| rfind(&log, &needle(e)).is_some_and(|at| at + 4096 * 2 < log.len()))
        .expect("an entry written early");
    let at = rfind(&log, &needle(victim)).unwrap() + 3;
    with_file(&case, LOG_NAME, |b| b[at] = if b[at] == b'Q' { b'R' } else { b'Q' });
    let mut s = Store::open_with_capacity(&case, CAP).unwrap();
    assert!(s.stats().from_checkpoint, "damage before the checked tail is not detected at open (by design)");
    let got = snapshot(&mut s, &TAGS);
    for (g, w) in got.entries.iter().zip(&want.entries) {
        if g.id == victim.id {
            assert_eq!(g.value, Err("Io".to_string()), "the damaged record is refused when read");
        } else {
            assert_eq!(g, w);
        }
    }
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

#[test]
fn a_checkpoint_that_does_not_fit_the_capacity_falls_back() {
    let t = TempDir::new("ckpt-cap");
    let pristine = t.sub("pristine");
    build(&pristine, 21);
    let (snap, _) = open(&pristine, Mode::ReadOnly, CAP).unwrap();
    let live = snap.entries.len();
    let next = snap.entries.last().unwrap().id as usize + 1;
    let mut caps = vec![1, 16, live / 2, live - 1, live, live + 1, next, next + 40, CAP, 4 * CAP];
    caps.sort_unstable();
    caps.dedup();
    let (mut fell_back, mut used, mut failed) = (0, 0, 0);
    for cap in caps {
        let case = t.sub("case");
        copy_dir(&pristine, &case);
        for mode in [Mode::ReadOnly, Mode::Writer] {
            match compare(&format!("capacity {}", cap), &case, t.path(), mode, cap) {
                Ok(true) => used += 1,
                Ok(false) => fell_back += 1,
                Err(code) => {
                    assert_eq!(code, Code::CapacityExceeded, "capacity {}", cap);
                    assert!(cap < next, "capacity {} (room for ids up to {}) was refused", cap, next);
                    failed += 1;
                }
            }
        }
        // The capacity the store was built with, and any larger one, use the checkpoint.
        if cap >= CAP {
            assert_eq!(compare("same or larger capacity", &case, t.path(), Mode::Writer, cap), Ok(true));
        }
    }
    eprintln!("capacity cases: checkpoint used {}, fell back {}, both refused {}", used, fell_back, failed);
    assert!(failed > 0 && used > 0, "the capacities tried cover both outcomes");
}

/// Many sessions over one store, each opened from the checkpoint the last one left (or from
/// an older one, when it stopped without `close()`), some compacting: after each, opening from
/// the checkpoint and replaying the whole log agree. Keys move through the key space, so tags
/// are freed and new ones interned between checkpoints.
#[test]
fn sessions_of_writes_checkpoints_and_compactions_agree_with_full_replays() {
    let t = TempDir::new("ckpt-sessions");
    let dir = t.sub("store");
    let mut rng = Rng::new(23);
    for session in 0..12u64 {
        let mut s = Store::open_with_capacity(&dir, CAP).unwrap();
        if session > 0 {
            assert!(s.stats().from_checkpoint, "session {}: a checkpoint is there to use", session);
        }
        churn(&mut s, 100 + session, 90, session * 40, 300, T0 + session * 1_000);
        if rng.below_u64(3) == 0 {
            s.compact().unwrap();
            churn(&mut s, 200 + session, 20, session * 40 + 150, 300, T0 + session * 1_000 + 500);
        }
        if session > 0 && rng.below_u64(4) == 0 {
            s.flush_access().unwrap();
            drop(s); // stopped without close(): the next open replays past the checkpoint
        } else {
            s.close().unwrap();
        }
        let case = t.sub("case");
        copy_dir(&dir, &case);
        let from = compare(&format!("session {}", session), &case, t.path(), Mode::ReadOnly, CAP).unwrap();
        assert!(from, "session {}: the checkpoint is used", session);
        let from = compare(&format!("session {}", session), &case, t.path(), Mode::Writer, CAP).unwrap();
        assert!(from, "session {}: the checkpoint is used", session);
    }
}

/// A checkpoint changed and checksummed again (a buggy writer, or a hand edit), at every 97th
/// byte and every byte of the fixed head: the checksum no longer helps, only the checks of the
/// content do. Opening must never panic, and a store opened from such a checkpoint must still
/// answer every read and query without panicking (a value may fail to read: its record does
/// not check out).
#[test]
fn a_rechecksummed_changed_checkpoint_never_panics() {
    let t = TempDir::new("ckpt-recrc");
    let pristine = t.sub("pristine");
    build(&pristine, 24);
    let case = t.sub("case");
    copy_dir(&pristine, &case);
    let good = fs::read(pristine.join(CKPT)).unwrap();
    let len = good.len();
    let mut positions: Vec<usize> = (0..len - 4).step_by(97).collect();
    positions.extend(0..60);
    positions.sort_unstable();
    positions.dedup();
    let mut rng = Rng::new(24);
    let (mut used, mut refused, mut unreadable) = (0, 0, 0);
    for at in positions {
        let mask = if rng.below_u64(4) == 0 { 0xff } else { 1u8 << rng.below_u64(8) };
        let mut bad = good.clone();
        bad[at] ^= mask;
        let crc = lkjagent::memory::hash::crc32(&bad[..len - 4]);
        bad[len - 4..].copy_from_slice(&crc.to_le_bytes());
        fs::write(case.join(CKPT), &bad).unwrap();
        for mode in [Mode::ReadOnly, Mode::Writer] {
            match open(&case, mode, CAP) {
                Ok((snap, true)) => {
                    used += 1;
                    unreadable += snap.entries.iter().filter(|e| e.value.is_err()).count();
                }
                Ok((_, false)) => refused += 1,
                Err(code) => {
                    panic!("byte {} ^= {:#04x}: the open failed ({:?}) instead of falling back", at, mask, code)
                }
            }
        }
    }
    eprintln!(
        "re-checksummed checkpoints: used {} times ({} values then unreadable), refused {} times",
        used, unreadable, refused
    );
}
