#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Crash test of `memory.json`: a child process saves the memory file again and again (each
//! save about 100 KB, so kills land inside writes) and is killed with SIGKILL at a random
//! moment, 200 times. After every kill `memory.json` must load from the main file (never moved
//! aside as corrupt), be whole, and be the last acknowledged save or the one in flight.
//!
//! The child is this test binary itself, re-executed with `--exact memory_crash_child
//! --ignored` and `LKJ_MEMORY_CRASH_DIR` set; it prints `R` once it has loaded the memory
//! file and `A <iteration>` after each save. The kill's random moment counts from `R`, not
//! from the spawn: on a loaded machine a child's start-up alone can outlast the whole window,
//! and a kill before the first save tests nothing.

#[path = "support/rng.rs"]
mod rng;
#[path = "support/temp.rs"]
mod temp;

use lkjagent::memory::file::{load, Saver, Source};
use lkjagent::memory::key::normalize;
use lkjagent::memory::store::Store;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const KILLS: usize = 200;

fn text_for(iteration: u64) -> String {
    format!("iteration {} → ", iteration).repeat(4000)
}

#[test]
#[ignore]
fn memory_crash_child() {
    let Some(dir) = std::env::var_os("LKJ_MEMORY_CRASH_DIR") else { return };
    let dir = Path::new(&dir);
    let mut store = Store::open_with_capacity(dir, 4).unwrap();
    let (mut m, _) = load(dir, &mut store, 0).unwrap();
    let mut saver = Saver::new(dir);
    let key = normalize("progress").unwrap();
    let out = std::io::stdout();
    let mut out = out.lock();
    // On a line of its own: the test harness's "test memory_crash_child ... " has no end.
    writeln!(out, "\nR").unwrap();
    out.flush().unwrap();
    for _ in 0..10_000 {
        m.iteration += 1;
        m.working.add(&key, &text_for(m.iteration), m.iteration).unwrap();
        saver.save(&m).unwrap();
        writeln!(out, "A {}", m.iteration).unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn memory_file_survives_sigkill() {
    let dir = temp::temp_dir("memory-crash");
    let exe = std::env::current_exe().unwrap();
    let mut rng = rng::Rng::new(0x2545_F491_4F6C_DD1D);
    let mut last_acked = 0u64;
    let started = Instant::now();
    for round in 0..KILLS {
        assert!(started.elapsed() < Duration::from_secs(120), "over the time bound at round {}", round);
        let mut child = Command::new(&exe)
            .args(["--exact", "memory_crash_child", "--nocapture", "--ignored", "--test-threads=1"])
            .env("LKJ_MEMORY_CRASH_DIR", &dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while line.trim_end() != "R" {
            line.clear();
            if stdout.read_line(&mut line).unwrap() == 0 {
                panic!("round {round}: the child ended before it was ready");
            }
        }
        std::thread::sleep(Duration::from_micros(3_000 + rng.below_u64(20_000)));
        child.kill().unwrap();
        let mut out = String::new();
        stdout.read_to_string(&mut out).unwrap();
        child.wait().unwrap();
        for line in out.lines() {
            if let Some(n) = line.strip_prefix("A ") {
                last_acked = n.parse().unwrap();
            }
        }
        let mut store = Store::open_with_capacity(&dir, 4).unwrap();
        let (m, report) = load(&dir, &mut store, 0).unwrap();
        assert_eq!(report.moved_aside, 0, "round {}: a kill left a corrupt memory.json", round);
        if last_acked > 0 {
            assert_eq!(report.source, Source::Main, "round {}", round);
        }
        assert!(
            m.iteration == last_acked || m.iteration == last_acked + 1,
            "round {}: memory.json has iteration {}, last acknowledged {}",
            round,
            m.iteration,
            last_acked
        );
        if m.iteration > 0 {
            assert_eq!(m.working.get(&normalize("progress").unwrap()), Some(text_for(m.iteration).as_str()));
        }
        last_acked = m.iteration;
    }
    assert!(last_acked >= KILLS as u64 / 2, "the children saved too little to test anything ({})", last_acked);
    std::fs::remove_dir_all(&dir).unwrap();
}
