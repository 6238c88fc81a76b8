#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Crash test of the tagged store: a child process streams writes (puts, deletes, links and
//! compactions) and is killed with SIGKILL at a random moment, 200 times over the same store.
//! After every kill the store must open, be internally consistent, and hold every write the
//! child acknowledged before it died (the one write in flight may or may not have landed).
//!
//! The child is this test binary itself, re-executed with `--exact crash_child --ignored`
//! and `LKJ_CRASH_DIR` set. Before each write it prints `W <seq> <op> <key> [value]`, after the
//! write returned `Ok` it prints `A <seq>`; stdout is a pipe the parent reads after the kill.

use lkjagent::memory::key::{normalize, Key};
use lkjagent::memory::store::Store;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const KILLS: usize = 200;
const KEYS: u64 = 24;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

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
        let n = rng.below(KEYS);
        let key = key_for(n);
        let roll = rng.below(100);
        if roll < 70 {
            // Values grow now and then so compaction has work to do.
            let value = format!("s{}-{}-{}", seed, seq, "x".repeat(rng.below(300) as usize));
            writeln!(out, "W {} put {} {}", seq, key, value).unwrap();
            out.flush().unwrap();
            store.put(&key, &value, seq).unwrap();
        } else if roll < 85 {
            if store.find(&key).is_none() {
                continue;
            }
            writeln!(out, "W {} del {}", seq, key).unwrap();
            out.flush().unwrap();
            store.delete(&key).unwrap();
        } else if roll < 95 {
            let other = key_for(rng.below(KEYS));
            let (Some(a), Some(b)) = (store.find(&key), store.find(&other)) else { continue };
            if a == b {
                continue;
            }
            writeln!(out, "W {} link {} {}", seq, key, other).unwrap();
            out.flush().unwrap();
            store.link(a, b).unwrap();
        } else {
            writeln!(out, "W {} compact", seq).unwrap();
            out.flush().unwrap();
            store.compact().unwrap();
        }
        writeln!(out, "A {}", seq).unwrap();
        out.flush().unwrap();
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
    let dir: PathBuf = std::env::temp_dir().join(format!("lkj-store-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
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
        std::thread::sleep(Duration::from_micros(2_000 + rng.below(25_000)));
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
