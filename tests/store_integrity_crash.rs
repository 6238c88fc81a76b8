#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Crash tests of issue 41's new writes, with real child processes killed by SIGKILL.
//!
//! - `kill_during_tag_cleanups`: a child saves entries of 8 new tags each into a store of
//!   2,048 (the tag table of 8,192 reaches its threshold long before the entries do, so every
//!   clean-up is the tag table's) and is killed at a random moment, over and over on the same
//!   data directory. After each kill the writer opens; every save the child acknowledged is
//!   there once, live or cold, with its value; the tag table is within its size.
//! - `kill_during_an_import_with_a_cold_tier`: a child imports an export with live entries,
//!   links and a cold tier into a copy of a store, killed at a random moment. Acknowledged, the
//!   store holds the whole export; not, importing again completes it (nothing doubled), and
//!   either way its export is the original's.
//! - `kill_during_deletes_of_cold_keys`: a child deletes keys that are live with older cold
//!   copies (the cold store rewritten, then the live entry deleted), killed at random: no
//!   deleted key's older value ever comes back.

#[path = "support/store.rs"]
mod store_support;
#[path = "support/temp.rs"]
mod temp;

use lkjagent::memory::era_b;
use lkjagent::memory::file::{MemoryFile, Overflow};
use lkjagent::memory::key::{normalize, Key};
use lkjagent::memory::store::cleanup::Filter;
use lkjagent::memory::store::{Cleanup, Store};
use std::path::Path;
use std::time::Duration;
use store_support::{
    acknowledged, acks, child_ready, current, kill_after_ready, open_saving_child, save_acknowledged, say, Rng, TempDir,
};

const TAG_CAP: usize = 2_048;

fn tag_key(i: u64) -> Key {
    let tags: Vec<String> = (0..8).map(|t| format!("t{}x{}", i, t)).collect();
    Key::from_tags(tags.iter().map(String::as_str)).unwrap()
}

fn tag_value(i: u64) -> String {
    format!("entry {} of eight tags", i)
}

#[test]
#[ignore]
fn tag_child() {
    let Some((mut store, start)) = open_saving_child("LKJ_TAGS_DIR", "LKJ_TAGS_START", TAG_CAP) else { return };
    let mut out = child_ready();
    for i in start..start + 100_000 {
        save_acknowledged(&mut store, &mut out, i, &tag_key(i), &tag_value(i));
    }
}

#[test]
fn kill_during_tag_cleanups() {
    let t = TempDir::new("kill-tag-cleanup");
    let dir = t.0.clone();
    let mut rng = Rng::new(0x7A65_0000_0000_0041);
    let mut acked: u64 = 0;
    let mut round = 0;
    // Until well past the tag table's size (8,192 tags: 1,024 entries of 8), with 40 kills at least.
    while round < 40 || acked < 2_500 {
        assert!(round < 400, "the children saved too little ({})", acked);
        let rest = kill_after_ready(
            "tag_child",
            &[("LKJ_TAGS_DIR", dir.display().to_string()), ("LKJ_TAGS_START", acked.to_string())],
            Duration::from_micros(rng.below_u64(150_000)),
        );
        let pending = acks(&rest, &mut acked);
        let s = Store::open_with_capacity(&dir, TAG_CAP).unwrap();
        let st = s.stats();
        assert!(st.tags <= st.max_tags && st.entries <= TAG_CAP, "round {}: {:?}", round, st);
        drop(s);
        let all = current(&dir, TAG_CAP);
        for i in 0..acked {
            let got = all.get(tag_key(i).as_str());
            assert_eq!(got, Some(&tag_value(i)), "round {}: entry {} lost", round, i);
        }
        let extra = all.len() as u64 - acked;
        assert!(extra <= 1, "round {}: {} entries never acknowledged", round, extra);
        if let Some(p) = pending.filter(|&p| all.contains_key(tag_key(p).as_str())) {
            acked = p + 1;
        }
        round += 1;
    }
    eprintln!("{} entries of 8 new tags saved over {} kills", acked, round);
}

const IMPORT_CAP: usize = 4_096;

fn k(s: &str) -> Key {
    normalize(s).unwrap()
}

/// An export of a store with 600 live entries, links, and 3,000 cold entries.
fn source_export(dir: &Path) -> String {
    let mut s = Store::open_with_capacity(dir, IMPORT_CAP).unwrap();
    for i in 0..3_600u64 {
        s.put(&k(&format!("src,n{}", i)), &format!("source value {} {}", i, "w".repeat((i % 40) as usize)), 5_000 + i)
            .unwrap();
    }
    s.cleanup_where(&Filter { accessed_before: Some(5_000 + 3_000), max_hits: None }, Cleanup::Cold).unwrap();
    for i in 3_000..3_100u32 {
        let (a, b) = (s.find(&k(&format!("src,n{}", i))).unwrap(), s.find(&k(&format!("src,n{}", i + 1))).unwrap());
        s.link(a, b).unwrap();
    }
    let mut out = String::new();
    era_b::export(Some(&mut s), Some(&MemoryFile::new()), Overflow::none(), &mut out).unwrap();
    out
}

/// A store the import goes into: a few entries of its own, one cold.
fn target(dir: &Path) {
    let mut s = Store::open_with_capacity(dir, IMPORT_CAP).unwrap();
    for i in 0..10u64 {
        s.put(&k(&format!("own,n{}", i)), &format!("own {}", i), 100 + i).unwrap();
    }
    s.cleanup_where(&Filter { accessed_before: Some(101), max_hits: None }, Cleanup::Cold).unwrap();
    s.close().unwrap();
}

#[test]
#[ignore]
fn import_child() {
    let Some(dir) = std::env::var_os("LKJ_IMPORT_DIR") else { return };
    let doc = std::fs::read(std::env::var("LKJ_IMPORT_DOC").unwrap()).unwrap();
    let mut store = Store::open_with_capacity(Path::new(&dir), IMPORT_CAP).unwrap();
    let mut out = child_ready();
    era_b::import(&doc, &mut store, &mut MemoryFile::new(), 7).unwrap();
    store.close().unwrap();
    say(&mut out, "A");
}

fn export_of(dir: &Path) -> String {
    let mut s = Store::open_read_only_with_capacity(dir, IMPORT_CAP).unwrap();
    let mut out = String::new();
    era_b::export(Some(&mut s), Some(&MemoryFile::new()), Overflow::none(), &mut out).unwrap();
    out
}

#[test]
fn kill_during_an_import_with_a_cold_tier() {
    let t = TempDir::new("kill-import-cold");
    let src = t.0.join("src");
    std::fs::create_dir_all(&src).unwrap();
    let doc = source_export(&src);
    let doc_path = t.0.join("export.json");
    std::fs::write(&doc_path, &doc).unwrap();
    let base = t.0.join("base");
    std::fs::create_dir_all(&base).unwrap();
    target(&base);
    // What a whole import gives.
    let whole = t.0.join("whole");
    store_support::copy_dir(&base, &whole);
    let took = std::time::Instant::now();
    {
        let mut s = Store::open_with_capacity(&whole, IMPORT_CAP).unwrap();
        era_b::import(doc.as_bytes(), &mut s, &mut MemoryFile::new(), 7).unwrap();
        s.close().unwrap();
    }
    // Kills spread over the import's time and a little after it.
    let span = (took.elapsed().as_micros() as u64 * 3 / 2).max(1_000);
    let want = export_of(&whole);
    let want_all = current(&whole, IMPORT_CAP);
    assert_eq!(want_all.len(), 3_610);
    let mut rng = Rng::new(0x1A90_0000_0000_0041);
    let work = t.0.join("work");
    let (mut acked_rounds, mut cut_rounds) = (0, 0);
    for round in 0..30 {
        store_support::copy_dir(&base, &work);
        let acked = kill_after_ready(
            "import_child",
            &[("LKJ_IMPORT_DIR", work.display().to_string()), ("LKJ_IMPORT_DOC", doc_path.display().to_string())],
            Duration::from_micros(rng.below_u64(span)),
        )
        .contains('A');
        // The writer opens; what is there is whole entries of the base or the import.
        drop(Store::open_with_capacity(&work, IMPORT_CAP).unwrap());
        let got = current(&work, IMPORT_CAP);
        for (key, value) in &got {
            assert_eq!(want_all.get(key), Some(value), "round {}: {} is not the import's or the base's", round, key);
        }
        if acked {
            acked_rounds += 1;
        } else {
            cut_rounds += 1;
            let mut s = Store::open_with_capacity(&work, IMPORT_CAP).unwrap();
            era_b::import(doc.as_bytes(), &mut s, &mut MemoryFile::new(), 7).unwrap();
            s.close().unwrap();
        }
        let got = current(&work, IMPORT_CAP);
        let missing: Vec<_> = want_all.keys().filter(|k| !got.contains_key(*k)).take(5).collect();
        let wrong: Vec<_> = got.iter().filter(|(k, v)| want_all.get(*k) != Some(v)).take(5).collect();
        assert!(
            missing.is_empty() && wrong.is_empty(),
            "round {} (acked {}): missing {:?}, wrong {:?}",
            round,
            acked,
            missing,
            wrong
        );
        // The same entries, times and links (the cold list's order may differ after a cut
        // import, its length not).
        let got = export_of(&work);
        let live_part = |text: &str| text[..text.find("\"cold\"").unwrap()].to_string();
        assert_eq!(live_part(&got), live_part(&want), "round {}", round);
        assert_eq!(got.len(), want.len(), "round {}", round);
    }
    eprintln!("{} imports killed part way and completed by a second, {} finished", cut_rounds, acked_rounds);
}

const DEL_CAP: usize = 256;

#[test]
#[ignore]
fn delete_child() {
    let Some(dir) = std::env::var_os("LKJ_DEL_DIR") else { return };
    let mut store = Store::open_with_capacity(Path::new(&dir), DEL_CAP).unwrap();
    let mut out = child_ready();
    for i in 0..200u64 {
        let key = k(&format!("del,n{}", i));
        if store.find(&key).is_none() {
            continue;
        }
        acknowledged(&mut out, i, || store.delete(&key).unwrap());
    }
}

#[test]
fn kill_during_deletes_of_cold_keys() {
    let t = TempDir::new("kill-delete-cold");
    let base = t.0.join("base");
    std::fs::create_dir_all(&base).unwrap();
    {
        // Every key cold with its old value, then saved again: live with a new one.
        let mut s = Store::open_with_capacity(&base, DEL_CAP).unwrap();
        for i in 0..200u64 {
            s.put(&k(&format!("del,n{}", i)), &format!("old {}", i), 10).unwrap();
        }
        s.cleanup_where(&Filter { accessed_before: Some(11), max_hits: None }, Cleanup::Cold).unwrap();
        for i in 0..200u64 {
            s.put(&k(&format!("del,n{}", i)), &format!("new {}", i), 20).unwrap();
        }
        s.close().unwrap();
    }
    let mut rng = Rng::new(0xDE1E_0000_0000_0041);
    let work = t.0.join("work");
    for round in 0..20 {
        store_support::copy_dir(&base, &work);
        let rest = kill_after_ready(
            "delete_child",
            &[("LKJ_DEL_DIR", work.display().to_string())],
            Duration::from_micros(rng.below_u64(400_000)),
        );
        let mut acked = 0;
        let pending = acks(&rest, &mut acked);
        drop(Store::open_with_capacity(&work, DEL_CAP).unwrap());
        let all = current(&work, DEL_CAP);
        for i in 0..200u64 {
            let got = all.get(k(&format!("del,n{}", i)).as_str());
            if i < acked {
                assert_eq!(got, None, "round {}: deleted del,n{} came back", round, i);
            } else if Some(i) == pending {
                assert!(got.is_none() || got == Some(&format!("new {}", i)), "round {}: {:?}", round, got);
            } else {
                assert_eq!(got, Some(&format!("new {}", i)), "round {}: del,n{}", round, i);
            }
        }
    }
}
