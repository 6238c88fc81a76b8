#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Crash test of the tagged store: a child process streams writes (puts, deletes, links and
//! compactions) and is killed with SIGKILL at a random moment, 200 times over the same store.
//! After every kill the store must open, be internally consistent, and hold every write the
//! child acknowledged before it died (the one write in flight may or may not have landed).
//!
//! The child is this test binary itself, re-executed with `--exact crash_child --ignored`
//! and `LKJ_CRASH_DIR` set. Before each write it prints `W <seq> <op> <key> [value]`, after the
//! write returned `Ok` it prints `A <seq>`; stdout is a pipe the parent reads after the kill.
//!
//! Further down, kills at the riskier moments, each with its own child: while checkpoints are
//! written (`kill_during_checkpoint_writing`), while the log is compacted
//! (`kill_during_compaction`: acknowledged values and creation order survive), and inside an
//! import's batch (`kill_during_an_import_batch`: a prefix of the batch survives, and the next
//! open says how much of it, once). Last, deterministic cuts of a batch that pin what the
//! cut-batch warning counts (`cut_batch_warning_*`).
//!
//! Run one group alone with a filter, e.g. `cargo test --test store_crash kill_during`.

use lkjagent::memory::key::{normalize, Key};
use lkjagent::memory::store::Store;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const KILLS: usize = 200;
const KEYS: u64 = 24;

fn key_for(n: u64) -> Key {
    // Keys of one to three tags, some shared between keys.
    let text = match n % 3 {
        0 => format!("k{}", n),
        1 => format!("k{},shared", n),
        _ => format!("k{},shared,Other Tag", n),
    };
    normalize(&text).unwrap()
}

/// The child: writes until killed (bounded at 100,000 writes).
#[test]
#[ignore]
fn crash_child() {
    let Some(dir) = std::env::var_os("LKJ_CRASH_DIR") else { return };
    let seed: u64 = std::env::var("LKJ_CRASH_SEED").unwrap().parse().unwrap();
    let mut rng = Rng(seed | 1);
    let mut store = Store::open_with_capacity(Path::new(&dir), 256).unwrap();
    let out = std::io::stdout();
    let mut out = out.lock();
    // The harness has printed "test crash_child ... " without a newline: end that line.
    writeln!(out).unwrap();
    for seq in 0..100_000u64 {
        let n = rng.below_u64(KEYS);
        let key = key_for(n);
        let roll = rng.below_u64(100);
        if roll < 70 {
            // Values grow now and then so compaction has work to do.
            let value = format!("s{}-{}-{}", seed, seq, "x".repeat(rng.below_u64(300) as usize));
            say(&mut out, &format!("W {} put {} {}", seq, key, value));
            store.put(&key, &value, seq).unwrap();
        } else if roll < 85 {
            if store.find(&key).is_none() {
                continue;
            }
            say(&mut out, &format!("W {} del {}", seq, key));
            store.delete(&key).unwrap();
        } else if roll < 95 {
            let other = key_for(rng.below_u64(KEYS));
            let (Some(a), Some(b)) = (store.find(&key), store.find(&other)) else { continue };
            if a == b {
                continue;
            }
            say(&mut out, &format!("W {} link {} {}", seq, key, other));
            store.link(a, b).unwrap();
        } else {
            say(&mut out, &format!("W {} compact", seq));
            store.compact().unwrap();
        }
        say(&mut out, &format!("A {}", seq));
    }
}

#[derive(Clone, Debug)]
enum Op {
    Put(String, String),
    Del(String),
    Link(String, String),
    Compact,
}

type Model = BTreeMap<String, String>;

fn apply(model: &mut Model, links: &mut Vec<(String, String)>, op: &Op) {
    match op {
        Op::Put(k, v) => {
            model.insert(k.clone(), v.clone());
        }
        Op::Del(k) => {
            model.remove(k);
            links.retain(|(a, b)| a != k && b != k);
        }
        Op::Link(a, b) => {
            let pair = if a < b { (a.clone(), b.clone()) } else { (b.clone(), a.clone()) };
            if !links.contains(&pair) {
                links.push(pair);
            }
        }
        Op::Compact => {}
    }
}

fn parse(out: &str) -> (Vec<Op>, Option<Op>) {
    let mut acked = Vec::new();
    let mut pending: Option<(u64, Op)> = None;
    for line in out.lines() {
        let mut parts = line.splitn(5, ' ');
        match (parts.next(), parts.next()) {
            (Some("W"), Some(seq)) => {
                let seq: u64 = seq.parse().unwrap();
                let op = match parts.next() {
                    Some("put") => Op::Put(parts.next().unwrap().into(), parts.next().unwrap_or("").into()),
                    Some("del") => Op::Del(parts.next().unwrap().into()),
                    Some("link") => Op::Link(parts.next().unwrap().into(), parts.next().unwrap().into()),
                    Some("compact") => Op::Compact,
                    other => panic!("bad line {:?}", other),
                };
                assert!(pending.is_none(), "two writes in flight");
                pending = Some((seq, op));
            }
            (Some("A"), Some(seq)) => {
                let seq: u64 = seq.parse().unwrap();
                let Some((want, op)) = pending.take() else { panic!("ack without write in:\n{}", out) };
                assert_eq!(seq, want);
                acked.push(op);
            }
            _ => {} // the test harness's own lines
        }
    }
    (acked, pending.map(|(_, op)| op))
}

/// What the store holds: key text -> value, and the links as key pairs.
fn snapshot(dir: &Path) -> (Model, Vec<(String, String)>) {
    let mut store = Store::open_with_capacity(dir, 256).expect("the store opens after a kill");
    let ids: Vec<u32> = store.ids().collect();
    let mut m = Model::new();
    for &id in &ids {
        let key = store.key(id).unwrap();
        assert_eq!(store.find(&key), Some(id), "index and key table agree");
        let v = store.value(id).expect("every live value reads back").to_string();
        m.insert(key.to_string(), v);
    }
    let mut links = Vec::new();
    for &a in &ids {
        for &b in &ids {
            if a < b && store.linked(a, b) {
                let (ka, kb) = (store.key(a).unwrap().to_string(), store.key(b).unwrap().to_string());
                links.push(if ka < kb { (ka, kb) } else { (kb, ka) });
            }
        }
    }
    let st = store.stats();
    assert_eq!(st.entries, m.len());
    assert_eq!(st.corrupt_records, 0, "a crash only ever tears the tail");
    (m, links)
}

fn same_links(a: &[(String, String)], b: &[(String, String)]) -> bool {
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort();
    b.sort();
    a == b
}

#[test]
fn store_survives_sigkill() {
    let dir = temp::temp_dir("store-crash");
    let exe = std::env::current_exe().unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut model = Model::new();
    let mut links: Vec<(String, String)> = Vec::new();
    let mut total_acks = 0usize;
    let mut in_flight_landed = 0usize;
    let mut in_flight_lost = 0usize;
    let started = Instant::now();
    for round in 0..KILLS {
        assert!(started.elapsed() < Duration::from_secs(120), "crash test over its time bound at round {}", round);
        let mut child = Command::new(&exe)
            .args(["--exact", "crash_child", "--nocapture", "--ignored", "--test-threads=1"])
            .env("LKJ_CRASH_DIR", &dir)
            .env("LKJ_CRASH_SEED", (round as u64 + 1).to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // On a loaded machine a child may be killed before it writes at all: while the children
        // are behind one acknowledged write a kill, the window doubles (up to 8 times).
        let behind = round.saturating_sub(total_acks).min(3) as u32;
        std::thread::sleep(Duration::from_micros((2_000 + rng.below_u64(25_000)) << behind));
        child.kill().unwrap(); // SIGKILL
        let mut out = String::new();
        child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        let status = child.wait().unwrap();
        assert!(!status.success(), "the child was killed, not finished");

        let (acked, pending) = parse(&out);
        total_acks += acked.len();
        for op in &acked {
            apply(&mut model, &mut links, op);
        }
        let (got, got_links) = snapshot(&dir);
        if got == model && same_links(&got_links, &links) {
            if pending.is_some() {
                in_flight_lost += 1;
            }
        } else {
            let op = pending.unwrap_or_else(|| panic!("round {}: store differs from acknowledged writes", round));
            apply(&mut model, &mut links, &op);
            assert_eq!(got, model, "round {}: store matches neither before nor after the write in flight", round);
            assert!(same_links(&got_links, &links), "round {}: links differ", round);
            in_flight_landed += 1;
        }
    }
    eprintln!(
        "store_crash: {} kills, {} acknowledged writes, write in flight landed {} times, lost {} times, {:.1} s",
        KILLS,
        total_acks,
        in_flight_landed,
        in_flight_lost,
        started.elapsed().as_secs_f64()
    );
    assert!(total_acks >= KILLS, "the children wrote too little to test anything ({} writes)", total_acks);
    std::fs::remove_dir_all(&dir).unwrap();
}

// =============================================================================================
// Kills at the store's riskier moments: while a checkpoint is written, while the log is
// compacted, and inside an import's batch. Children are this binary again (ignored tests that
// do nothing unless their environment variable is set); they print `ready` once the store is
// open, and the parent kills them a seeded random time after that.
// =============================================================================================

#[path = "support/cli.rs"]
mod cli;
#[path = "support/store.rs"]
mod store_support;
#[path = "support/temp.rs"]
mod temp;

use cli::lkjagent;
use std::io::{BufRead, BufReader};
use store_support::{
    child_ready, copy_dir, kill_after_ready, read_rest, say, snapshot as full_snapshot, spawn_child, wait_ready, Rng,
    TempDir,
};

const CKPT_ENTRIES: u32 = 4_000;
const CKPT_CAP: usize = 4_096;
const CKPT_ROUNDS: u64 = 30;
/// Touches per child run, at most (the parent checks each acknowledged one).
const CKPT_ITERS: u64 = 1_000;
const CKPT_BASE: u64 = 2_000_000_000;
const CKPT_TAGS: [&str; 6] = ["alpha", "beta", "gamma", "delta", "shared", "日本"];

fn ckpt_key(i: u32) -> Key {
    let a = CKPT_TAGS[(i % 6) as usize];
    let b = CKPT_TAGS[((i / 6) % 6) as usize];
    normalize(&format!("c{},{},{}", i, a, b)).unwrap()
}

/// The child: touches one entry and writes a checkpoint, again and again, saying `A <i>` after
/// each checkpoint returned.
#[test]
#[ignore]
fn checkpoint_child() {
    let Some(dir) = std::env::var_os("LKJ_CKPT_DIR") else { return };
    let start: u64 = std::env::var("LKJ_CKPT_START").unwrap().parse().unwrap();
    let mut store = Store::open_with_capacity(Path::new(&dir), CKPT_CAP).unwrap();
    let n = store.len() as u64;
    let mut out = child_ready();
    for i in 0..CKPT_ITERS {
        store.touch(((start + i) % n) as u32, CKPT_BASE + start + i);
        store.checkpoint().unwrap();
        say(&mut out, &format!("A {}", i));
    }
}

#[test]
fn kill_during_checkpoint_writing() {
    let t = TempDir::new("kill-ckpt");
    let dir = t.sub("store");
    {
        let mut s = Store::open_with_capacity(&dir, CKPT_CAP).unwrap();
        s.begin_batch(u64::from(CKPT_ENTRIES)).unwrap();
        for i in 0..CKPT_ENTRIES {
            s.put(
                &ckpt_key(i),
                &format!("value {} {}", i, "v".repeat((i % 50) as usize)),
                1_700_000_000 + u64::from(i),
            )
            .unwrap();
        }
        s.end_batch().unwrap();
        for i in (0..CKPT_ENTRIES).step_by(37) {
            s.link(i, (i * 7 + 1) % CKPT_ENTRIES).unwrap();
        }
        for i in (0..CKPT_ENTRIES).step_by(101) {
            s.set_archived(&ckpt_key(i), true, 1_800_000_000).unwrap();
        }
        s.close().unwrap();
    }
    let tmp = dir.join(".store.ckpt.tmp");
    let mut rng = Rng(0xC4EC_4B01_D000_0001);
    let (mut mid_write, mut acks) = (0, 0u64);
    let started = Instant::now();
    for round in 0..CKPT_ROUNDS {
        assert!(started.elapsed() < Duration::from_secs(120), "over the time bound at round {}", round);
        let start = round * CKPT_ITERS;
        // A checkpoint of CKPT_ENTRIES takes longer than the window on a loaded machine: until
        // one is acknowledged, the window doubles each round (up to 32 times, 1.9 s).
        let widen = if acks == 0 { round.min(5) } else { 0 };
        let rest = kill_after_ready(
            "checkpoint_child",
            &[("LKJ_CKPT_DIR", dir.display().to_string()), ("LKJ_CKPT_START", start.to_string())],
            Duration::from_micros(rng.below_u64(60_000) << widen),
        );
        let acked: Vec<u64> = rest.lines().filter_map(|l| l.strip_prefix("A ")).map(|n| n.parse().unwrap()).collect();
        acks += acked.len() as u64;
        let had_tmp = tmp.exists();
        mid_write += usize::from(had_tmp);

        // A reader opens it, uses a checkpoint, and leaves the writer's temp file alone.
        let s = Store::open_read_only_with_capacity(&dir, CKPT_CAP).unwrap();
        assert_eq!(s.len(), CKPT_ENTRIES as usize, "round {}", round);
        assert!(s.stats().from_checkpoint, "round {}: a kill never leaves a bad checkpoint in place", round);
        assert_eq!(tmp.exists(), had_tmp, "round {}: a read-only open touched the temp file", round);
        drop(s);

        // The writer removes the temp file; its index is the full replay's; every acknowledged
        // access is there.
        let mut s = Store::open_with_capacity(&dir, CKPT_CAP).unwrap();
        assert!(!tmp.exists(), "round {}: the writer's open left .store.ckpt.tmp", round);
        assert!(s.stats().from_checkpoint, "round {}", round);
        assert_eq!(s.len(), CKPT_ENTRIES as usize);
        for &i in &acked {
            let id = ((start + i) % u64::from(CKPT_ENTRIES)) as u32;
            let info = s.info(id).unwrap();
            assert!(
                info.accessed >= CKPT_BASE + start + i && info.hits >= 1,
                "round {}: touch {} of entry {} lost: {:?}",
                round,
                i,
                id,
                info
            );
        }
        if round % 10 == 0 || round == CKPT_ROUNDS - 1 {
            let reference = t.sub("reference");
            copy_dir(&dir, &reference);
            std::fs::remove_file(reference.join("store.ckpt")).unwrap();
            let mut r = Store::open_read_only_with_capacity(&reference, CKPT_CAP).unwrap();
            assert!(!r.stats().from_checkpoint);
            store_support::assert_same(
                &format!("round {}", round),
                &full_snapshot(&mut s, &CKPT_TAGS),
                &full_snapshot(&mut r, &CKPT_TAGS),
            );
        }
    }
    eprintln!(
        "kill_during_checkpoint_writing: {} kills, {} with the temp file half written, {} checkpoints acknowledged, {:.1} s",
        CKPT_ROUNDS,
        mid_write,
        acks,
        started.elapsed().as_secs_f64()
    );
    assert!(acks > 0, "the children wrote no checkpoint to kill");
    assert!(mid_write > 0, "no kill landed while a checkpoint was being written");
}

const COMPACT_KEYS: u64 = 1_500;
const COMPACT_CAP: usize = 4_096;
const COMPACT_ROUNDS: usize = 30;

fn compact_key(n: u64) -> Key {
    normalize(&format!("m{},{}", n, ["red", "green", "blue"][(n % 3) as usize])).unwrap()
}

/// The child: overwrites, creates and deletes entries and compacts every few writes, printing
/// `W <seq> ...` before each durable call and `A <seq>` after it returned.
#[test]
#[ignore]
fn compact_child() {
    let Some(dir) = std::env::var_os("LKJ_COMPACT_DIR") else { return };
    let seed: u64 = std::env::var("LKJ_COMPACT_SEED").unwrap().parse().unwrap();
    let mut rng = Rng(seed | 1);
    let mut store = Store::open_with_capacity(Path::new(&dir), COMPACT_CAP).unwrap();
    let mut out = child_ready();
    for seq in 0..20_000u64 {
        let key = compact_key(rng.below_u64(COMPACT_KEYS));
        if seq % 6 == 5 {
            say(&mut out, &format!("W {} compact", seq));
            store.compact().unwrap();
        } else if rng.below_u64(10) == 0 {
            if store.find(&key).is_none() {
                continue;
            }
            say(&mut out, &format!("W {} del {}", seq, key));
            store.delete(&key).unwrap();
        } else {
            let value = format!("s{}-{}-{}", seed, seq, "y".repeat(rng.below_u64(400) as usize));
            say(&mut out, &format!("W {} put {} {}", seq, key, value));
            store.put(&key, &value, 1_700_000_000 + seq).unwrap();
        }
        say(&mut out, &format!("A {}", seq));
    }
}

/// Key -> (value, creation number): what the acknowledged writes left, and in which order the
/// live keys were created.
#[derive(Clone, Default)]
struct Ordered {
    map: BTreeMap<String, (String, u64)>,
    created: u64,
}

impl Ordered {
    fn apply(&mut self, op: &Op) {
        match op {
            Op::Put(k, v) => {
                if let Some(e) = self.map.get_mut(k) {
                    e.0 = v.clone();
                } else {
                    self.created += 1;
                    self.map.insert(k.clone(), (v.clone(), self.created));
                }
            }
            Op::Del(k) => {
                self.map.remove(k);
            }
            Op::Link(..) | Op::Compact => {}
        }
    }

    /// Live keys in creation order, with their values.
    fn in_order(&self) -> Vec<(String, String)> {
        let mut v: Vec<_> = self.map.iter().map(|(k, (val, c))| (*c, k.clone(), val.clone())).collect();
        v.sort();
        v.into_iter().map(|(_, k, val)| (k, val)).collect()
    }
}

#[test]
fn kill_during_compaction() {
    let t = TempDir::new("kill-compact");
    let dir = t.sub("store");
    let mut model = Ordered::default();
    {
        // A first generation of entries, in one batch.
        let mut s = Store::open_with_capacity(&dir, COMPACT_CAP).unwrap();
        s.begin_batch(COMPACT_KEYS).unwrap();
        for n in 0..COMPACT_KEYS {
            let (k, v) = (compact_key(n), format!("first {} {}", n, "z".repeat((n % 300) as usize)));
            s.put(&k, &v, 1_600_000_000).unwrap();
            model.apply(&Op::Put(k.to_string(), v));
        }
        s.end_batch().unwrap();
        s.close().unwrap();
    }
    let tmp = dir.join(".store.log.compact");
    let mut rng = Rng(0x5EED_C0FF_EE00_0003);
    let (mut mid_compaction, mut acks, mut landed) = (0, 0, 0);
    let started = Instant::now();
    for round in 0..COMPACT_ROUNDS {
        assert!(started.elapsed() < Duration::from_secs(120), "over the time bound at round {}", round);
        let env = [("LKJ_COMPACT_DIR", dir.display().to_string()), ("LKJ_COMPACT_SEED", (round + 1).to_string())];
        let rest = kill_after_ready("compact_child", &env, Duration::from_micros(1_000 + rng.below_u64(60_000)));
        let (acked, pending) = parse(&rest);
        acks += acked.len();
        for op in &acked {
            model.apply(op);
        }
        let had_tmp = tmp.exists();
        mid_compaction += usize::from(had_tmp);

        // A reader leaves the temp file alone; the writer removes it.
        drop(Store::open_read_only_with_capacity(&dir, COMPACT_CAP).unwrap());
        assert_eq!(tmp.exists(), had_tmp, "round {}: a read-only open touched .store.log.compact", round);
        let mut s = Store::open_with_capacity(&dir, COMPACT_CAP).unwrap();
        assert!(!tmp.exists(), "round {}: the writer's open left .store.log.compact", round);
        let ids: Vec<u32> = s.ids().collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "round {}: ids() not increasing", round);
        let mut got = Vec::with_capacity(ids.len());
        for &id in &ids {
            let k = s.key(id).unwrap().to_string();
            got.push((k, s.value(id).unwrap().to_string()));
        }
        // Every acknowledged write is there, and the ids are in creation order; the write in
        // flight may or may not have landed.
        if got != model.in_order() {
            let op = pending.unwrap_or_else(|| {
                panic!("round {}: the store differs from the acknowledged writes (or their creation order)", round)
            });
            let mut with = model.clone();
            with.apply(&op);
            assert!(
                got == with.in_order(),
                "round {}: the store matches neither the acknowledged writes nor them and {:?}, in creation order",
                round,
                op
            );
            model = with;
            landed += 1;
        }
        assert_eq!(s.stats().corrupt_records, 0);
        // Compacted now, the ids are exactly 0..n in the same order.
        if round % 3 == 0 {
            s.compact().unwrap();
            let dense: Vec<u32> = s.ids().collect();
            assert_eq!(dense, (0..got.len() as u32).collect::<Vec<_>>(), "round {}: ids after compaction", round);
            let keys: Vec<String> = dense.iter().map(|&id| s.key(id).unwrap().to_string()).collect();
            assert!(keys.iter().eq(got.iter().map(|(k, _)| k)), "round {}: compaction changed the order", round);
        }
    }
    eprintln!(
        "kill_during_compaction: {} kills, {} during a compaction (temp file present), {} acknowledged writes, \
         write in flight landed {} times, {:.1} s",
        COMPACT_ROUNDS,
        mid_compaction,
        acks,
        landed,
        started.elapsed().as_secs_f64()
    );
    assert!(acks >= COMPACT_ROUNDS, "the children wrote too little ({} writes)", acks);
    assert!(mid_compaction > 0, "no kill landed inside a compaction");
}

const BATCH_N: u64 = 1_000;
const BATCH_CAP: usize = 4_096;
const BATCH_ROUNDS: usize = 24;
const BATCH_PRE: u64 = 10;

fn batch_key(i: u64) -> Key {
    normalize(&format!("imported,b{:05}", i)).unwrap()
}

fn batch_value(i: u64) -> String {
    format!("batch entry {} {}", i, "w".repeat((i % 97) as usize))
}

/// The child: one batch of `BATCH_N` puts (an import), then `done`.
#[test]
#[ignore]
fn batch_child() {
    let Some(dir) = std::env::var_os("LKJ_BATCH_DIR") else { return };
    let mut store = Store::open_with_capacity(Path::new(&dir), BATCH_CAP).unwrap();
    let mut out = child_ready();
    store.begin_batch(BATCH_N).unwrap();
    for i in 0..BATCH_N {
        store.put(&batch_key(i), &batch_value(i), 1_700_000_000).unwrap();
    }
    store.end_batch().unwrap();
    say(&mut out, "done");
}

/// The child: opens the store as the writer (the agent's start), says how many entries it
/// holds, and stops without a clean close.
#[test]
#[ignore]
fn open_child() {
    let Some(dir) = std::env::var_os("LKJ_OPEN_DIR") else { return };
    let store = Store::open_with_capacity(Path::new(&dir), BATCH_CAP).unwrap();
    println!();
    println!("entries {}", store.len());
}

/// What the stderr of an open says about a cut batch: (announced changes, changes in the store).
fn cut_batch_warning(stderr: &str) -> Option<(u64, u64)> {
    let line = stderr.lines().find(|l| l.contains("a batch (an import) of "))?;
    let num_after = |pat: &str| -> u64 {
        let at = line.find(pat).unwrap_or_else(|| panic!("no {:?} in {}", pat, line)) + pat.len();
        line[at..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
    };
    Some((num_after("a batch (an import) of "), num_after("cut short by a crash: ")))
}

/// Whether the log holds a whole `batch` record and a whole `batch_end` record.
fn batch_records(dir: &Path) -> (bool, bool) {
    let bytes = std::fs::read(dir.join("store.log")).unwrap();
    let (mut begin, mut end) = (false, false);
    for line in bytes.split_inclusive(|&b| b == b'\n').filter(|l| l.ends_with(b"\n")) {
        match lkjagent::memory::log::decode(&line[..line.len() - 1]) {
            Ok(lkjagent::memory::log::Record::Batch { .. }) => begin = true,
            Ok(lkjagent::memory::log::Record::BatchEnd) => end = true,
            _ => {}
        }
    }
    (begin, end)
}

/// `lkjagent --data DIR memory stats` (a read-only open): its stderr.
fn cli_stats_stderr(dir: &Path) -> String {
    let o = lkjagent(["memory", "stats"]).data(dir).output();
    assert!(o.status.success(), "memory stats failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stderr).unwrap()
}

/// A writer's open in a child process: (entries, stderr).
fn writer_open_stderr(dir: &Path) -> (usize, String) {
    let child = spawn_child("open_child", &[("LKJ_OPEN_DIR", dir.display().to_string())], true);
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8(o.stdout).unwrap();
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(o.status.success(), "the open failed: {}", stderr);
    let n = out.lines().find_map(|l| l.strip_prefix("entries ")).unwrap_or_else(|| panic!("{}", out));
    (n.parse().unwrap(), stderr)
}

#[test]
fn kill_during_an_import_batch() {
    let t = TempDir::new("kill-batch");
    let mut rng = Rng(0xBA7C_4000_0000_0005);
    let (mut cut, mut whole, mut none) = (0, 0, 0);
    let mut full_run = Duration::ZERO;
    let started = Instant::now();
    for round in 0..BATCH_ROUNDS {
        assert!(started.elapsed() < Duration::from_secs(120), "over the time bound at round {}", round);
        let dir = t.sub(&format!("r{}", round));
        {
            let mut s = Store::open_with_capacity(&dir, BATCH_CAP).unwrap();
            for p in 0..BATCH_PRE {
                s.put(&normalize(&format!("before,p{}", p)).unwrap(), &format!("there before {}", p), 1_600_000_000)
                    .unwrap();
            }
            if round % 2 == 0 {
                s.close().unwrap(); // a checkpoint before the batch, half of the time
            }
        }
        let mut child = spawn_child("batch_child", &[("LKJ_BATCH_DIR", dir.display().to_string())], false);
        let mut out = BufReader::new(child.stdout.take().unwrap());
        wait_ready(&mut out);
        if round == 0 {
            // Round 0 runs to the end: how long a whole batch takes here sets the kill window.
            let t0 = Instant::now();
            let mut line = String::new();
            while line.trim_end() != "done" {
                line.clear();
                assert!(out.read_line(&mut line).unwrap() > 0, "the batch child ended without done");
            }
            full_run = t0.elapsed();
            let _ = read_rest(out);
            child.wait().unwrap();
        } else {
            let window = full_run.as_micros() as u64 + 1;
            std::thread::sleep(Duration::from_micros(rng.below_u64(window)));
            child.kill().unwrap();
            let _ = read_rest(out);
            child.wait().unwrap();
        }
        let (has_begin, has_end) = batch_records(&dir);
        let is_cut = has_begin && !has_end;

        // A reader says it, and changes nothing; the writer says it once and closes the batch.
        let ro1 = cli_stats_stderr(&dir);
        let (n1, w1) = writer_open_stderr(&dir);
        let (n2, w2) = writer_open_stderr(&dir);
        let ro2 = cli_stats_stderr(&dir);
        assert_eq!(n1, n2, "round {}", round);

        // A prefix of the batch, in order, and everything from before.
        let mut s = Store::open_read_only_with_capacity(&dir, BATCH_CAP).unwrap();
        for p in 0..BATCH_PRE {
            let id = s.find(&normalize(&format!("before,p{}", p)).unwrap()).unwrap();
            assert_eq!(s.value(id).unwrap(), format!("there before {}", p), "round {}", round);
        }
        let mut present = 0u64;
        let mut last_id = None;
        for i in 0..BATCH_N {
            if let Some(id) = s.find(&batch_key(i)) {
                assert_eq!(present, i, "round {}: batch entry {} is there but {} is not", round, i, present);
                assert!(last_id.is_none_or(|l| l < id), "round {}: batch entries out of creation order", round);
                assert_eq!(s.value(id).unwrap(), batch_value(i));
                last_id = Some(id);
                present += 1;
            }
        }
        assert_eq!(s.len() as u64, BATCH_PRE + present, "round {}: nothing else in the store", round);
        assert_eq!(n1 as u64, BATCH_PRE + present);
        let what = format!(
            "round {} (batch record {}, end record {}, {} of {} entries)\n\
             memory stats, then:\n{}\nfirst open:\n{}\nsecond open:\n{}\nmemory stats again:\n{}",
            round, has_begin, has_end, present, BATCH_N, ro1, w1, w2, ro2
        );
        if is_cut {
            cut += 1;
            assert_eq!(cut_batch_warning(&ro1), Some((BATCH_N, present)), "{}", what);
            assert_eq!(cut_batch_warning(&w1), Some((BATCH_N, present)), "{}", what);
        } else {
            assert!(present == 0 || present == BATCH_N, "{}", what);
            assert_eq!(cut_batch_warning(&ro1), None, "{}", what);
            assert_eq!(cut_batch_warning(&w1), None, "{}", what);
            if present == 0 {
                none += 1;
            } else {
                whole += 1;
            }
        }
        assert_eq!(cut_batch_warning(&w2), None, "a second open warns again: {}", what);
        assert_eq!(cut_batch_warning(&ro2), None, "a read-only open after the writer's warns again: {}", what);
        assert_eq!(batch_records(&dir), (has_begin, has_begin), "round {}: the writer closed the batch", round);
    }
    eprintln!(
        "kill_during_an_import_batch: {} rounds (a whole batch took {:.1} ms): cut short {}, whole {}, not begun {}, {:.1} s",
        BATCH_ROUNDS,
        full_run.as_secs_f64() * 1e3,
        cut,
        whole,
        none,
        started.elapsed().as_secs_f64()
    );
    assert!(cut > 0, "no kill landed inside the batch");
}

// ---------------------------------------------------------------------------------------------
// What the cut-batch warning counts. A kill leaves in the log exactly what the process had
// written (the store keeps nothing buffered in the process: `store/append.rs` writes each
// record with `pwrite`), so these cut a batch by dropping the store, or by taking the
// `batch_end` record off a finished batch, and read the warning from a writer's open in a
// child process.
// ---------------------------------------------------------------------------------------------

/// The log without its last record.
fn drop_last_record(dir: &Path) {
    let p = dir.join("store.log");
    let bytes = std::fs::read(&p).unwrap();
    let body = &bytes[..bytes.len() - 1];
    let start = body.iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let last = lkjagent::memory::log::decode(&bytes[start..bytes.len() - 1]).unwrap();
    assert!(matches!(last, lkjagent::memory::log::Record::BatchEnd), "the last record is {:?}", last);
    std::fs::write(&p, &bytes[..start]).unwrap();
    let _ = std::fs::remove_file(dir.join("store.ckpt"));
}

/// A batch that ran out of ids part way (deleted entries' ids come back only at compaction):
/// the store closes the batch, compacts, and carries on in a new batch announced with 0
/// entries. Cut short after that, the warning should still speak of the import: its N entries
/// and how many of them are in the store.
#[test]
fn cut_batch_warning_after_the_ids_ran_out_counts_the_whole_import() {
    let t = TempDir::new("cut-batch-ids");
    let dir = t.sub("store");
    let mut s = Store::open_with_capacity(&dir, 256).unwrap(); // room for 256 + 4 + 16 ids
    for i in 0..200u64 {
        s.put(&normalize(&format!("old,o{}", i)).unwrap(), "old", 1_600_000_000).unwrap();
    }
    for i in 0..150u64 {
        s.delete(&normalize(&format!("old,o{}", i)).unwrap()).unwrap();
    }
    let log_before = s.log_bytes();
    s.begin_batch(150).unwrap();
    for i in 0..120 {
        s.put(&batch_key(i), &batch_value(i), 1_700_000_000).unwrap();
    }
    assert!(s.log_bytes() < log_before, "the batch compacted the log part way");
    drop(s); // a kill here

    let (n, stderr) = writer_open_stderr(&dir);
    assert_eq!(n, 50 + 120);
    let r = Store::open_read_only_with_capacity(&dir, BATCH_CAP).unwrap();
    assert!((0..120).all(|i| r.find(&batch_key(i)).is_some()), "all 120 written entries are there");
    assert_eq!(
        cut_batch_warning(&stderr),
        Some((150, 120)),
        "the warning should say that 120 of the import's 150 entries are in the store; it said:\n{}",
        stderr
    );
}

/// An import that archives some of its entries: those new to the store are created archived
/// (one record each, their times as exported), and entries the store held are archived by a
/// record of their own; the batch announces every change it will make (20 new entries, then 5
/// archivings of held ones in a second import), and a crash just before its end mark finds
/// them all, archived.
#[test]
fn cut_batch_warning_counts_entries_not_archive_records() {
    let t = TempDir::new("cut-batch-archived");
    let dir = t.sub("store");
    let storage: Vec<String> = (0..20).map(|i| format!("\"imp,e{}\": \"value {}\"", i, i)).collect();
    let archived: Vec<String> = (0..5).map(|i| format!("\"imp,e{}\"", i)).collect();
    let doc = format!("{{\"storage\": {{{}}}, \"archived\": [{}]}}", storage.join(", "), archived.join(", "));
    let mut s = Store::open_with_capacity(&dir, BATCH_CAP).unwrap();
    let mut m = lkjagent::memory::file::MemoryFile::new();
    let r = lkjagent::memory::era_b::import(doc.as_bytes(), &mut s, &mut m, 1_700_000_000).unwrap();
    assert_eq!((r.stored.added, r.archived), (20, 5));
    drop(s);
    drop_last_record(&dir); // killed just before the batch_end record

    let (n, stderr) = writer_open_stderr(&dir);
    assert_eq!(n, 20);
    assert_eq!(
        cut_batch_warning(&stderr),
        Some((20, 20)),
        "all 20 changes of the import (5 of them entries created archived) are in the store; the warning said:\n{}",
        stderr
    );
    assert!(stderr.contains("all it had to make"), "{}", stderr);
    let s = Store::open_read_only_with_capacity(&dir, BATCH_CAP).unwrap();
    for i in 0..20 {
        let id = s.find(&lkjagent::memory::key::normalize(&format!("imp,e{}", i)).unwrap()).unwrap();
        assert_eq!(s.info(id).unwrap().archived, i < 5, "imp,e{}", i);
    }
    drop(s);

    // The held entries archived by a second import: a record each, announced and found.
    let dir = t.sub("store2");
    let plain = format!("{{\"storage\": {{{}}}}}", storage.join(", "));
    let mut s = Store::open_with_capacity(&dir, BATCH_CAP).unwrap();
    lkjagent::memory::era_b::import(plain.as_bytes(), &mut s, &mut m, 1_700_000_000).unwrap();
    let r = lkjagent::memory::era_b::import(doc.as_bytes(), &mut s, &mut m, 1_700_000_001).unwrap();
    assert_eq!((r.stored.unchanged, r.archived), (20, 5));
    drop(s);
    drop_last_record(&dir);
    let (n, stderr) = writer_open_stderr(&dir);
    assert_eq!(n, 20);
    assert_eq!(cut_batch_warning(&stderr), Some((5, 5)), "the 5 archivings; the warning said:\n{}", stderr);
}

/// Importing a file again writes only the entries that changed, and the batch announces only
/// those: cut short, the warning does not count the unchanged ones (in the store all along) as
/// missing.
#[test]
fn cut_batch_warning_counts_unchanged_entries_as_there() {
    let t = TempDir::new("cut-batch-unchanged");
    let dir = t.sub("store");
    let doc = |changed_from: usize| {
        let storage: Vec<String> = (0..30)
            .map(|i| format!("\"imp,e{}\": \"value {}{}\"", i, i, if i >= changed_from { " new" } else { "" }))
            .collect();
        format!("{{\"storage\": {{{}}}}}", storage.join(", "))
    };
    let mut s = Store::open_with_capacity(&dir, BATCH_CAP).unwrap();
    let mut m = lkjagent::memory::file::MemoryFile::new();
    lkjagent::memory::era_b::import(doc(30).as_bytes(), &mut s, &mut m, 1_700_000_000).unwrap();
    let r = lkjagent::memory::era_b::import(doc(20).as_bytes(), &mut s, &mut m, 1_700_000_001).unwrap();
    assert_eq!((r.stored.unchanged, r.stored.replaced), (20, 10));
    drop(s);
    drop_last_record(&dir);

    let (n, stderr) = writer_open_stderr(&dir);
    assert_eq!(n, 30);
    let w = cut_batch_warning(&stderr).expect("a cut batch is reported");
    assert_eq!(
        w,
        (10, 10),
        "all 10 changes are in the store, and the 20 unchanged entries were never missing; the warning said:\n{}",
        stderr
    );
    assert!(!stderr.contains("the rest are not"), "{}", stderr);
}

/// A batch that needs the ids of deleted entries compacts before its first record, never in
/// the middle: the batch record follows the compacted entries, and the batch is whole in the
/// new log.
#[test]
fn a_batch_that_needs_room_compacts_before_it_begins() {
    let t = TempDir::new("cut-batch-room-first");
    let dir = t.sub("store");
    let mut s = Store::open_with_capacity(&dir, 256).unwrap();
    for i in 0..200u64 {
        s.put(&normalize(&format!("old,o{}", i)).unwrap(), "old", 1_600_000_000).unwrap();
    }
    for i in 0..150u64 {
        s.delete(&normalize(&format!("old,o{}", i)).unwrap()).unwrap();
    }
    s.begin_batch(150).unwrap();
    // The compaction came first: 50 entries, then the batch record, nothing deleted left.
    let bytes = std::fs::read(dir.join("store.log")).unwrap();
    let records: Vec<_> = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| lkjagent::memory::log::decode(l).unwrap())
        .collect();
    assert_eq!(records.len(), 1 + 50 + 1, "header, the 50 live entries, the batch record");
    assert!(matches!(records.last(), Some(lkjagent::memory::log::Record::Batch { entries: 150 })));
    for i in 0..150 {
        s.put(&batch_key(i), &batch_value(i), 1_700_000_000).unwrap();
    }
    s.end_batch().unwrap();
    drop(s);
    let (n, stderr) = writer_open_stderr(&dir);
    assert_eq!(n, 50 + 150);
    assert_eq!(cut_batch_warning(&stderr), None, "{}", stderr);
}
