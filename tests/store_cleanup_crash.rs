#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Crash tests of the capacity policy's clean-ups, which write two files (`store.cold`, then
//! `store.log`).
//!
//! - `kill_during_cleanups`: a child process saves a new entry per "cycle" into a store of 64
//!   with the clean-up on (a batch of about 7 moved to the cold store every 7 saves) and is
//!   killed with SIGKILL at a random moment, 120 times over the same data directory. After each
//!   kill: a read-only open changes no file; the writer opens (rolling back a clean-up batch cut
//!   short, dropping a torn cold tail); every save the child acknowledged is found with its
//!   value in the live store or the cold store; nothing else is there; the live store is within
//!   its capacity; and the log holds no clean-up batch without its end.
//! - `every_cut_of_a_cleanup_is_all_or_nothing`: the files cut at every byte of one clean-up
//!   (cold group, then log batch): after the writer's open each moved entry is live, and the
//!   clean-up either happened whole or not at all.

#[path = "support/store.rs"]
mod store_support;
#[path = "support/temp.rs"]
mod temp;

use lkjagent::memory::key::normalize;
use lkjagent::memory::log;
use lkjagent::memory::store::cleanup::Filter;
use lkjagent::memory::store::cold;
use lkjagent::memory::store::{Cleanup, Store};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use store_support::{acks, child_ready, files, kill_after_ready, open_saving_child, save_acknowledged, Rng, TempDir};

const CAP: usize = 64;
const KILLS: usize = 120;

fn key_of(i: u64) -> String {
    normalize(&format!("fact,n{}", i)).unwrap().as_str().to_string()
}

fn value_of(i: u64) -> String {
    format!("fact {} {}", i, "v".repeat((i % 50) as usize))
}

/// The child: saves fact n<start>, n<start+1>, ... until killed (at most 100,000).
#[test]
#[ignore]
fn cleanup_child() {
    let Some((mut store, start)) = open_saving_child("LKJ_CLEANUP_DIR", "LKJ_CLEANUP_START", CAP) else { return };
    let mut out = child_ready();
    for i in start..start + 100_000 {
        save_acknowledged(&mut store, &mut out, i, &normalize(&key_of(i)).unwrap(), &value_of(i));
    }
}

/// Every entry of the live store and the cold store: key -> values found.
fn everything(dir: &Path) -> BTreeMap<String, Vec<String>> {
    let mut all: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut s = Store::open_read_only_with_capacity(dir, CAP).unwrap();
    let ids: Vec<u32> = s.ids().collect();
    for id in ids {
        let k = s.key(id).unwrap().as_str().to_string();
        let v = s.value(id).unwrap().to_string();
        all.entry(k).or_default().push(v);
    }
    cold::scan(dir, &mut |e| {
        let mut v = String::new();
        log::decode_str(e.value_escaped, &mut v)?;
        all.entry(e.key.as_str().to_string()).or_default().push(v);
        Ok(true)
    })
    .unwrap();
    all
}

/// Whether the log ends inside a clean-up batch (a `cleanup` record with no `batch_end` after it).
fn open_cleanup_in_log(dir: &Path) -> bool {
    let text = std::fs::read_to_string(dir.join("store.log")).unwrap();
    let mut open = false;
    for line in text.lines() {
        if line.contains("\"op\":\"cleanup\"") {
            open = true;
        } else if line.contains("\"op\":\"batch_end\"") {
            open = false;
        }
    }
    open
}

#[test]
fn kill_during_cleanups() {
    let t = TempDir::new("kill-cleanup");
    let dir = t.0.clone();
    let mut rng = Rng::new(0xC1EA_0000_0000_0023);
    let mut acked: u64 = 0; // facts 0..acked were acknowledged
    let mut rollbacks = 0;
    let mut moved_whole = 0;
    for round in 0..KILLS {
        let rest = kill_after_ready(
            "cleanup_child",
            &[("LKJ_CLEANUP_DIR", dir.display().to_string()), ("LKJ_CLEANUP_START", acked.to_string())],
            Duration::from_micros(rng.below_u64(30_000)),
        );
        let pending = acks(&rest, &mut acked);
        let cut = open_cleanup_in_log(&dir);

        // A reader changes nothing.
        let before = files(&dir);
        let _ = everything(&dir);
        assert_eq!(files(&dir), before, "round {}: a read-only open wrote", round);

        // The writer repairs.
        let s = Store::open_with_capacity(&dir, CAP).unwrap();
        assert!(s.len() <= CAP, "round {}: {} live", round, s.len());
        drop(s);
        assert!(!open_cleanup_in_log(&dir), "round {}: a cut clean-up is still in the log", round);
        if cut {
            rollbacks += 1;
        }

        let all = everything(&dir);
        for i in 0..acked {
            let got = all.get(&key_of(i)).unwrap_or_else(|| panic!("round {}: fact {} is lost", round, i));
            assert!(got.iter().all(|v| *v == value_of(i)), "round {}: fact {}: {:?}", round, i, got);
        }
        for k in all.keys() {
            let n: u64 = k.trim_start_matches("fact,n").parse().unwrap_or(u64::MAX);
            assert!(n < acked || Some(n) == pending, "round {}: {} was never saved", round, k);
        }
        if let Some(p) = pending {
            if all.contains_key(&key_of(p)) {
                acked = p + 1; // it landed: the next child goes on after it
            }
        }
        moved_whole = cold::scan(&dir, &mut |_| Ok(true)).unwrap().entries;
    }
    assert!(acked > 200, "the children saved too little to test anything ({})", acked);
    assert!(moved_whole > 100, "few clean-ups happened ({})", moved_whole);
    eprintln!(
        "{} facts saved, {} moved to the cold store, {} cut clean-ups rolled back",
        acked, moved_whole, rollbacks
    );
}

#[test]
fn every_cut_of_a_cleanup_is_all_or_nothing() {
    let t = TempDir::new("cut-cleanup");
    let base = t.0.join("base");
    std::fs::create_dir_all(&base).unwrap();
    let k = |s: &str| normalize(s).unwrap();
    {
        let mut s = Store::open_with_capacity(&base, CAP).unwrap();
        for i in 0..6u64 {
            s.put(&k(&format!("e{}", i)), &format!("value {}", i), 100 + i).unwrap();
        }
        // A first clean-up so the cold store exists with a group before the one that is cut.
        s.cleanup_where(&Filter { accessed_before: Some(101), max_hits: None }, Cleanup::Cold).unwrap();
    }
    let log0 = std::fs::read(base.join("store.log")).unwrap();
    let cold0 = std::fs::read(base.join("store.cold")).unwrap();
    let done = t.0.join("done");
    store_support::copy_dir(&base, &done);
    {
        let mut s = Store::open_with_capacity(&done, CAP).unwrap();
        assert_eq!(s.cleanup_where(&Filter { accessed_before: Some(104), max_hits: None }, Cleanup::Cold).unwrap(), 3);
    }
    let log1 = std::fs::read(done.join("store.log")).unwrap();
    let cold1 = std::fs::read(done.join("store.cold")).unwrap();
    assert!(log1.starts_with(&log0) && cold1.starts_with(&cold0));
    let moved = ["e1", "e2", "e3"];
    let work = t.0.join("work");
    let check = |cold_len: usize, log_len: usize| {
        store_support::copy_dir(&base, &work);
        std::fs::write(work.join("store.cold"), &cold1[..cold_len]).unwrap();
        std::fs::write(work.join("store.log"), &log1[..log_len]).unwrap();
        let s = Store::open_with_capacity(&work, CAP).unwrap();
        let live: Vec<bool> = moved.iter().map(|m| s.find(&k(m)).is_some()).collect();
        drop(s);
        let whole = log_len == log1.len();
        assert!(live.iter().all(|&l| l != whole), "cold {} log {}: {:?}", cold_len, log_len, live);
        let all = everything(&work);
        for i in 0..6 {
            assert!(all.contains_key(&format!("e{}", i)), "cold {} log {}: e{} lost", cold_len, log_len, i);
        }
    };
    // The cold group cut anywhere (nothing in the log yet).
    for c in cold0.len()..=cold1.len() {
        check(c, log0.len());
    }
    // The cold group whole, the log batch cut anywhere.
    for l in log0.len()..=log1.len() {
        check(cold1.len(), l);
    }
}
