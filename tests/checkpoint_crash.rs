#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Crash test of the checkpoint synced beside the cycle (issue 39): a child process saves,
//! runs the cycle's upkeep after every save (`Store::flush_access`: the step that puts a
//! synced checkpoint in place), and every few saves takes the checkpoint a due cycle takes
//! (`Store::checkpoint_in_steps`: its temp file written, its sync handed to a thread). It is
//! killed with SIGKILL at a random moment, over and over on the same store, so that kills land
//! while a checkpoint is written, synced, or being put in place.
//!
//! After every kill: `store.ckpt` is whole (the old one or the new one, or none yet; never
//! torn), every save the child acknowledged is in the store opened from it and the log, and
//! that store holds exactly what the same log replayed without the checkpoint holds.
//!
//! The child is this test binary itself, re-executed with `--exact checkpoint_child
//! --ignored` and `LKJ_CKPT_DIR` set. Before each save it prints `W <seq> <key>`; after the
//! save returned `Ok`, `A <seq>`.

#[path = "support/temp.rs"]
mod temp;

#[path = "support/rng.rs"]
mod rng;

use lkjagent::memory::key::normalize;
use lkjagent::memory::store::checkpoint::CheckpointFile;
use lkjagent::memory::store::Store;
use rng::Rng;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const KILLS: usize = 24;
/// Entries of the store (a checkpoint of about 1 MB, whose sync takes a while).
const ENTRIES: u64 = 8_000;
const CAP: usize = ENTRIES as usize + 256;

/// Entry `n`'s key (few distinct tags: a store's tags are bounded by its capacity).
fn key_for(n: u64) -> String {
    format!("a{},b{}", n % 128, n / 128)
}

/// The child: saves until killed.
#[test]
#[ignore]
fn checkpoint_child() {
    let Some(dir) = std::env::var_os("LKJ_CKPT_DIR") else { return };
    let seed: u64 = std::env::var("LKJ_CKPT_SEED").unwrap().parse().unwrap();
    let mut rng = Rng(seed | 1);
    let mut store = Store::open_with_capacity(Path::new(&dir), CAP).unwrap();
    let out = std::io::stdout();
    let mut out = out.lock();
    writeln!(out).unwrap();
    for seq in 0..1_000_000u64 {
        let key = key_for(rng.next() % ENTRIES);
        writeln!(out, "W {} {}", seq, key).unwrap();
        store.put(&normalize(&key).unwrap(), &format!("r{}u{} a saved value", seed, seq), 1).unwrap();
        writeln!(out, "A {}", seq).unwrap();
        out.flush().unwrap();
        store.flush_access().unwrap();
        if rng.next().is_multiple_of(8) {
            store.checkpoint_in_steps().unwrap();
        }
    }
}

#[test]
fn checkpoint_synced_beside_the_cycle_survives_sigkill() {
    let dir = temp::temp_dir("ckpt-crash");
    let exe = std::env::current_exe().unwrap();
    let mut model: BTreeMap<String, String> = BTreeMap::new();
    {
        let mut store = Store::open_with_capacity(&dir, CAP).unwrap();
        store.begin_batch(ENTRIES).unwrap();
        for n in 0..ENTRIES {
            let value = format!("r0u{} a first value", n);
            store.put(&normalize(&key_for(n)).unwrap(), &value, 1).unwrap();
            model.insert(key_for(n), format!("r0u{}", n));
        }
        store.end_batch().unwrap();
        store.close().unwrap();
    }
    let mut rng = Rng(0x5EED_C4EC_4B01_7001);
    let (mut acks, mut mid_sync, mut used) = (0usize, 0usize, 0usize);
    let started = Instant::now();
    for round in 0..KILLS {
        assert!(started.elapsed() < Duration::from_secs(240), "over its time bound at round {}", round);
        let mut child = Command::new(&exe)
            .args(["--exact", "checkpoint_child", "--nocapture", "--ignored", "--test-threads=1"])
            .env("LKJ_CKPT_DIR", &dir)
            .env("LKJ_CKPT_SEED", (round as u64 + 1).to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The child opens the store first (its checkpoint and the log after it): kill after.
        std::thread::sleep(Duration::from_micros(60_000 + rng.next() % 250_000));
        child.kill().unwrap();
        child.wait().unwrap();
        // A checkpoint written and not yet in place leaves its temp file.
        mid_sync += usize::from(dir.join(".store.ckpt.tmp").exists());
        let mut out = String::new();
        child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        let mut pending: Option<(u64, String)> = None;
        for line in out.lines() {
            match line.split(' ').collect::<Vec<_>>().as_slice() {
                ["W", seq, key] => pending = Some((seq.parse().unwrap(), key.to_string())),
                ["A", seq] => {
                    let (s, key) = pending.take().unwrap();
                    assert_eq!(s, seq.parse::<u64>().unwrap());
                    model.insert(key, format!("r{}u{}", round + 1, s));
                    acks += 1;
                }
                _ => {}
            }
        }
        // The checkpoint is whole: the old one or the new one, never torn.
        let mut store = Store::open_with_capacity(&dir, CAP).unwrap();
        let check = store.checkpoint_file_check();
        assert!(!matches!(check, CheckpointFile::Damaged(_)), "round {}: {:?}", round, check);
        used += usize::from(matches!(check, CheckpointFile::Usable { .. }));
        // The same log replayed whole, in a copy without the checkpoint.
        let whole = temp::temp_dir("ckpt-crash-whole");
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap();
            if f.file_type().unwrap().is_file() && f.file_name() != "store.ckpt" {
                std::fs::copy(f.path(), whole.join(f.file_name())).unwrap();
            }
        }
        let mut replayed = Store::open_with_capacity(&whole, CAP).unwrap();
        let in_flight = pending.as_ref().map(|p| p.1.clone());
        let mut entries = 0;
        let ids: Vec<_> = store.ids().collect();
        for id in ids {
            let key = store.key(id).unwrap();
            let value = store.value(id).unwrap().to_string();
            let other =
                replayed.find(&key).unwrap_or_else(|| panic!("round {}: {} only with the checkpoint", round, key));
            assert_eq!(replayed.value(other).unwrap(), value, "round {}: {}", round, key);
            assert_eq!(store.info(id).unwrap(), replayed.info(other).unwrap(), "round {}: {}", round, key);
            let want = &model[key.as_str()];
            if Some(key.as_str()) != in_flight.as_deref() {
                assert!(
                    value.starts_with(&format!("{} ", want)),
                    "round {}: {} holds {:?}, not {}",
                    round,
                    key,
                    value,
                    want
                );
            }
            entries += 1;
        }
        assert_eq!(entries, ENTRIES as usize, "round {}", round);
        assert_eq!(replayed.ids().count(), entries, "round {}", round);
        drop(replayed);
        std::fs::remove_dir_all(&whole).unwrap();
        // The save in flight, if it landed, is what the store holds now.
        if let Some((seq, key)) = pending {
            let id = store.find(&normalize(&key).unwrap()).unwrap();
            let word = format!("r{}u{}", round + 1, seq);
            if store.value(id).unwrap().starts_with(&format!("{} ", word)) {
                model.insert(key, word);
            }
        }
        store.close().unwrap();
    }
    eprintln!(
        "checkpoint_crash: {} kills ({} with a checkpoint written and not yet in place), {} acknowledged saves, the checkpoint usable after {} of them, {:.1} s",
        KILLS,
        mid_sync,
        acks,
        used,
        started.elapsed().as_secs_f64()
    );
    assert!(acks >= KILLS, "the children saved too little to test anything ({} saves)", acks);
    assert!(mid_sync > 0, "no kill landed while a checkpoint was synced beside the cycle");
    std::fs::remove_dir_all(&dir).unwrap();
}
