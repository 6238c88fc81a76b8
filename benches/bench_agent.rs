//! Figures for the agent area (see bench.rs for the shared helpers):
//!
//! - `agent_cycle_overhead_p50/p99`: one cycle minus the wait for the model (`CycleReport::
//!   overhead`), with 1,000 entries in the store, driven by the `replay` provider so there is no
//!   model wait at all. Measured twice: in a directory under the system temp dir (a real disk:
//!   the figure includes the fsyncs of memory.json, its directory, and the store appends) and
//!   in `/dev/shm` (tmpfs, where fsync returns at once: the figure "excluding fsync").
//! - `agent_persist_p50`: the atomic rewrite of memory.json alone (`Saver::save`: temp file,
//!   fsync, rename, fsync of the directory), on both file systems.
//! - `agent_cycle_allocations`: heap allocations per cycle after warm-up (target 0).
//! - `agent_peak_rss_1000`: VmHWM of the real binary (`lkjagent run`, replay provider, 1,000
//!   stored entries, 100 cycles) in a child process, polled from `/proc/<pid>/status`.
//! - `agent_binary_size` / `agent_binary_size_static`: the binary cargo built for this bench
//!   (`CARGO_BIN_EXE_lkjagent`, `target/release/lkjagent`; measured byte-identical to
//!   `make build`'s), and the `make static` binary under `target/static/*/release/` when it has
//!   been built.
//! - `agent_prompt_prefix_stability`: over a 100-cycle scripted run, the share of prompt bytes
//!   equal to the previous prompt's prefix (what a server's prompt cache can reuse), summed over
//!   the steady state, cycles 10 to 100; also the worst single cycle there, and two ceilings
//!   of this layout: the share of the prompt before the first rotating log entry, and before
//!   `<current_state>` (where the per-cycle part begins).
//!
//! Targets (issue 6): overhead p50 <= 1 ms excluding fsync; peak RSS <= 8 MiB with 1,000 stored
//! entries; binary <= 600 KB dynamic, <= 1.5 MiB static; prefix stability >= 90 %.

#[path = "../tests/support/cycle_script.rs"]
mod cycle_script;

use lkjagent::agent::config;
use lkjagent::agent::engine::{Agent, Model};
use lkjagent::llm::{self, ProviderKind};
use lkjagent::memory::key::normalize;
use lkjagent::memory::store::Store;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const STORED: usize = 1000;
const WARM_UP: usize = 20;
const MEASURED_DISK: usize = 300;
const MEASURED_TMPFS: usize = 1000;
const PREFIX_RUN: usize = 100;
/// Steady state of the prefix run: cycles 10..=100.
const STEADY_FROM: usize = 10;

/// Prints this area's figures.
pub fn run() {
    let Some(seed) = Scratch::new(std::env::temp_dir(), "seed") else {
        super::skipped("agent", "cannot create a temp directory");
        return;
    };
    // The 1,000-entry store is built once (on tmpfs when there is one: 1,000 fsyncs on a disk
    // take a while) and copied into each data directory.
    let seed_fs = if Path::new("/dev/shm").is_dir() { Scratch::new("/dev/shm".into(), "seed") } else { None };
    let seed_dir = seed_fs.as_ref().unwrap_or(&seed);
    if let Err(e) = fill_store(&seed_dir.0) {
        super::skipped("agent", &format!("cannot build the store: {}", e));
        return;
    }

    cycles("", std::env::temp_dir(), &seed_dir.0, MEASURED_DISK);
    if Path::new("/dev/shm").is_dir() {
        cycles("_tmpfs", "/dev/shm".into(), &seed_dir.0, MEASURED_TMPFS);
    } else {
        super::skipped("agent_cycle_overhead_p50_tmpfs", "no /dev/shm");
    }
    prefix_stability(&seed_dir.0);
    peak_rss(&seed_dir.0);
    binary_sizes();
}

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(base: PathBuf, what: &str) -> Option<Scratch> {
        let d = base.join(format!("lkjagent-bench-agent-{}-{}", what, std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).ok()?;
        Some(Scratch(d))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes config.json, memory.json and a store of [`STORED`] entries into `dir`.
fn fill_store(dir: &Path) -> Result<(), String> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
    for f in ["config.json", "memory.json"] {
        std::fs::copy(data.join(f), dir.join(f)).map_err(|e| format!("{}: {}", f, e))?;
    }
    let mut store = Store::open(dir).map_err(|e| e.message().to_string())?;
    for i in 0..STORED {
        let key = normalize(&format!("dictionary,corpus,topic_{},entry_{}", i % 20, i))
            .map_err(|e| e.message().to_string())?;
        let value =
            format!("entry {}: a stored note of about a hundred bytes, as the agent would save one, number {}.", i, i);
        store.put(&key, &value, 1_700_000_000 + i as u64).map_err(|e| e.message().to_string())?;
    }
    Ok(())
}

/// Copies every file of `from` into a fresh directory under `base`, with a replay script of
/// `cycles` replies.
fn data_copy(base: PathBuf, what: &str, from: &Path, cycles: usize) -> Option<Scratch> {
    let d = Scratch::new(base, what)?;
    for e in std::fs::read_dir(from).ok()? {
        let p = e.ok()?.path();
        if p.is_file() {
            std::fs::copy(&p, d.0.join(p.file_name()?)).ok()?;
        }
    }
    let script: String = (0..cycles).map(cycle_script::cycle_reply_line).collect();
    std::fs::write(d.0.join("script.jsonl"), script).ok()?;
    Some(d)
}

fn open(dir: &Path) -> Option<Agent> {
    let mut config = config::load(dir).ok()?;
    config.llm.provider = ProviderKind::Replay;
    config.llm.replay_path = Some(dir.join("script.jsonl"));
    let client = llm::Client::new(&config.llm).ok()?;
    Agent::open(dir, config, Model::Client(Box::new(client)), false).ok()
}

/// Overhead per cycle, allocations per cycle, and persist time, in a data dir under `base`.
fn cycles(suffix: &str, base: PathBuf, seed: &Path, measured: usize) {
    let name = |n: &str| format!("agent_{}{}", n, suffix);
    let Some(d) = data_copy(base, "cycles", seed, WARM_UP + measured + 9) else {
        super::skipped(&name("cycle_overhead_p50"), "cannot prepare the data directory");
        return;
    };
    let Some(mut agent) = open(&d.0) else {
        super::skipped(&name("cycle_overhead_p50"), "cannot open the agent");
        return;
    };
    let mut progress = |_: u64| {};
    let stop = || false;
    for _ in 0..WARM_UP {
        let _ = agent.cycle(&mut progress, &stop);
    }
    let mut overhead = Vec::with_capacity(measured);
    let mut total = Vec::with_capacity(measured);
    let allocs_before = super::allocations();
    for _ in 0..measured {
        let t = Instant::now();
        let r = match agent.cycle(&mut progress, &stop) {
            Ok(r) if r.error.is_none() && !r.finished => r,
            _ => {
                super::skipped(&name("cycle_overhead_p50"), "a cycle failed");
                return;
            }
        };
        total.push(t.elapsed());
        overhead.push(r.overhead);
    }
    let allocs = super::allocations() - allocs_before;
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    super::report(&name("cycle_overhead_p50"), us(super::percentile(&mut overhead, 50.0)), "us");
    super::report(&name("cycle_overhead_p99"), us(super::percentile(&mut overhead, 99.0)), "us");
    super::report(&name("cycle_total_p50"), us(super::percentile(&mut total, 50.0)), "us");
    super::report(&name("cycle_allocations"), allocs as f64 / measured as f64, "allocs/cycle");
    super::report(&name("store_entries"), agent.store.len() as f64, "entries");

    // Persist alone: the same Saver the cycle uses, on the same memory.
    let mut saver = lkjagent::memory::file::Saver::new(&d.0);
    let mut persist = Vec::with_capacity(100);
    for _ in 0..100 {
        let t = Instant::now();
        if saver.save(&agent.memory).is_err() {
            super::skipped(&name("persist_p50"), "save failed");
            return;
        }
        persist.push(t.elapsed());
    }
    super::report(&name("persist_p50"), us(super::percentile(&mut persist, 50.0)), "us");
    super::report(&name("persist_bytes"), saver.last_bytes() as f64, "bytes");
}

/// Prefix stability over a 100-cycle scripted run; steady state = cycles 10..=100.
fn prefix_stability(seed: &Path) {
    let base = if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    let Some(d) = data_copy(base, "prefix", seed, PREFIX_RUN + 9) else {
        super::skipped("agent_prompt_prefix_stability", "cannot prepare the data directory");
        return;
    };
    let Some(mut agent) = open(&d.0) else {
        super::skipped("agent_prompt_prefix_stability", "cannot open the agent");
        return;
    };
    let (mut equal, mut bytes) = (0usize, 0usize);
    // Where the prompt's per-cycle part starts (the current state), and where the rotating
    // logs start: the ceilings of the figure with this layout.
    let (mut before_state, mut before_logs) = (0usize, 0usize);
    let mut worst = 100.0f64;
    for i in 1..=PREFIX_RUN {
        if !matches!(agent.cycle(&mut |_| {}, &|| false), Ok(r) if r.error.is_none()) {
            super::skipped("agent_prompt_prefix_stability", "a cycle failed");
            return;
        }
        let (same, len) = agent.prefix_stability();
        if i >= STEADY_FROM && len > 0 {
            equal += same;
            bytes += len;
            let p = agent.last_prompt();
            let find = |needle: &[u8]| p.windows(needle.len()).position(|w| w == needle).unwrap_or(p.len());
            before_state += find(b"<current_state>");
            before_logs += [&b"<think_log_"[..], b"<evaluation_log_", b"<command_log_"]
                .iter()
                .map(|n| find(n))
                .min()
                .unwrap_or(p.len());
            worst = worst.min(100.0 * same as f64 / len as f64);
        }
    }
    super::report("agent_prompt_prefix_stability", 100.0 * equal as f64 / bytes.max(1) as f64, "%");
    super::report("agent_prompt_prefix_stability_worst_cycle", worst, "%");
    super::report("agent_prompt_share_before_logs", 100.0 * before_logs as f64 / bytes.max(1) as f64, "%");
    super::report("agent_prompt_share_before_state", 100.0 * before_state as f64 / bytes.max(1) as f64, "%");
    super::report("agent_prompt_bytes_mean", bytes as f64 / (PREFIX_RUN + 1 - STEADY_FROM) as f64, "bytes");
}

/// VmHWM of the release binary running 100 cycles on a 1,000-entry store.
fn peak_rss(seed: &Path) {
    // `LKJAGENT_BIN` measures another build (an older one, for a before and after).
    let bin = std::env::var_os("LKJAGENT_BIN")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_lkjagent").into());
    let bin = bin.as_path();
    let Some(d) = data_copy(std::env::temp_dir(), "rss", seed, PREFIX_RUN + 9) else {
        super::skipped("agent_peak_rss_1000", "cannot prepare the data directory");
        return;
    };
    // The replay provider, in the config the binary reads.
    let Ok(text) = std::fs::read_to_string(d.0.join("config.json")) else { return };
    let text = text.replacen(
        "\"provider\": \"openai\",",
        "\"provider\": \"replay\",\n    \"replay_path\": \"script.jsonl\",",
        1,
    );
    if std::fs::write(d.0.join("config.json"), text).is_err() {
        return;
    }
    let child = std::process::Command::new(bin)
        .arg("--data")
        .arg(&d.0)
        .args(["run", "--max-iterations", "100"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    let Ok(mut child) = child else {
        super::skipped("agent_peak_rss_1000", "cannot start the binary");
        return;
    };
    let status_path = format!("/proc/{}/status", child.id());
    let mut hwm_kib = 0u64;
    let end = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Ok(s) = std::fs::read_to_string(&status_path) {
            if let Some(v) = s
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
            {
                hwm_kib = hwm_kib.max(v);
            }
        }
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() < end => std::thread::sleep(Duration::from_millis(1)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let stored = Store::open(&d.0).map(|s| s.len()).unwrap_or(0);
    match status {
        Some(s) if s.success() && hwm_kib > 0 => {
            super::report("agent_peak_rss_1000", hwm_kib as f64 / 1024.0, "MiB");
            super::report("agent_peak_rss_1000_store_entries", stored as f64, "entries");
        }
        _ => super::skipped("agent_peak_rss_1000", "the binary did not finish its 100 cycles"),
    }
}

fn binary_sizes() {
    let bin = Path::new(env!("CARGO_BIN_EXE_lkjagent"));
    match std::fs::metadata(bin) {
        Ok(m) => super::report("agent_binary_size", m.len() as f64 / 1000.0, "KB"),
        Err(_) => super::skipped("agent_binary_size", "binary not found"),
    }
    let statics = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/static");
    let found = std::fs::read_dir(&statics)
        .ok()
        .and_then(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path().join("release/lkjagent")).find(|p| p.is_file()));
    match found.and_then(|p| std::fs::metadata(p).ok()) {
        Some(m) => super::report("agent_binary_size_static", m.len() as f64 / (1024.0 * 1024.0), "MiB"),
        None => super::skipped("agent_binary_size_static", "run 'make static' first"),
    }
}
