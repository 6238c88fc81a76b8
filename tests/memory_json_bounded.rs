//! A `memory.json` whose `working_memory` is far larger than the working set (an era-B file that
//! grew without bound) is handled in bounded memory, bounded output and one store batch.
//!
//! Real `lkjagent` child processes on real files. The peak resident memory of a child is read
//! from GNU time (`/usr/bin/time -v -o FILE`, which takes it from the kernel's `wait4` report)
//! when it is installed; otherwise the child's `VmHWM` in `/proc/<pid>/status` is polled until
//! it exits, which can only read low (a lower bound).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "support/cli.rs"]
mod cli;
#[path = "support/temp.rs"]
mod temp;
use cli::{lkjagent, text};
use lkjagent::memory::log::{decode, Record};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The bound for the commands that only look (`status`, `check`), in KiB.
const LOOKING_PEAK_KIB: u64 = 16 * 1024;

/// Working-memory entries of the large file (the working set holds 256).
const HUGE: usize = 130_000;

struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let p = temp::temp_dir(&format!("bounded-{}", tag));
        let shipped = temp::shipped;
        let config = shipped("config.json");
        let from = "\"provider\": \"openai\"";
        assert_eq!(config.matches(from).count(), 1);
        let config = config.replace(from, "\"provider\": \"replay\", \"replay_path\": \"demo.jsonl\"");
        std::fs::write(p.join("config.json"), config).unwrap();
        std::fs::write(p.join("demo.jsonl"), shipped("demo.jsonl")).unwrap();
        Dir(p)
    }

    /// Writes a `memory.json` with `n` working-memory entries `k0`, `k1`, ... (one distinct tag
    /// each) holding `v`.
    fn memory_with(&self, n: usize) -> Vec<u8> {
        let mut m = String::from("{\"state\":\"thinking\",\"iteration\":1,\"working_memory\":{");
        for i in 0..n {
            if i > 0 {
                m.push(',');
            }
            m.push_str(&format!("\"k{}\":\"v\"", i));
        }
        m.push_str("}}");
        std::fs::write(self.0.join("memory.json"), &m).unwrap();
        m.into_bytes()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `lkjagent --data DIR args` and returns its output and peak resident memory in KiB.
fn measured(dir: &Path, args: &[&str]) -> (Output, u64) {
    let time = Path::new("/usr/bin/time");
    let report = dir.join(".peak");
    let gnu_time = time.exists()
        && Command::new(time)
            .args(["-v", "-o"])
            .arg(&report)
            .arg("true")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if gnu_time {
        let o = lkjagent(args).data(dir).under(&["/usr/bin/time", "-v", "-o", report.to_str().unwrap()]).output();
        let text = std::fs::read_to_string(&report).unwrap();
        let _ = std::fs::remove_file(&report);
        let kib = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no peak in the report of /usr/bin/time:\n{}", text));
        return (o, kib);
    }
    let mut child = lkjagent(args).data(dir).spawn();
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    let end = Instant::now() + Duration::from_secs(120);
    while child.is_running() && Instant::now() < end {
        if let Ok(s) = std::fs::read_to_string(&status) {
            if let Some(v) = s.lines().find_map(|l| l.strip_prefix("VmHWM:")) {
                peak = peak.max(v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0));
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let o = child.wait();
    eprintln!("note: /usr/bin/time -v is not installed; the peak {} KiB was polled (a lower bound)", peak);
    (o, peak)
}

/// `status` and `check` read a 130,000-entry `memory.json` in at most 16 MiB, and say how many
/// entries do not fit in a few lines rather than one line each.
#[test]
fn status_and_check_stay_bounded_on_a_huge_working_memory() {
    let d = Dir::new("looking");
    let before = d.memory_with(HUGE);
    let overflow = HUGE - 256;
    let mut failed = Vec::new();
    for args in [&["status"][..], &["status", "--json"][..], &["check", "--no-network"][..]] {
        let (o, peak) = measured(&d.0, args);
        let out = text(&o);
        eprintln!("{:?}: peak {} KiB, {} bytes of output", args, peak, out.len());
        if peak > LOOKING_PEAK_KIB {
            failed.push(format!("{:?}: peak {} KiB, more than {} KiB", args, peak, LOOKING_PEAK_KIB));
        }
        if out.len() > 16 * 1024 {
            failed.push(format!("{:?}: {} bytes of output (one line per entry?)", args, out.len()));
        }
        if !out.contains(&overflow.to_string()) {
            failed
                .push(format!("{:?}: the count of entries that do not fit ({}) is not said:\n{}", args, overflow, out));
        }
    }
    assert_eq!(std::fs::read(d.0.join("memory.json")).unwrap(), before, "a command that only looks wrote");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The records of `store.log`, as (kind, count of puts).
fn log_records(dir: &Path) -> Vec<&'static str> {
    let bytes = std::fs::read(dir.join("store.log")).unwrap();
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| match decode(l).unwrap() {
            Record::Header { .. } => "header",
            Record::Put { .. } => "put",
            Record::Batch { .. } => "batch",
            Record::BatchEnd => "batch_end",
            _ => "other",
        })
        .collect()
}

/// More entries than the store has room for (`memory.store_capacity`, 65,536 by default): the
/// agent refuses the file before writing anything, at once, naming the setting.
#[test]
fn the_agent_refuses_more_overflow_than_the_store_holds_before_writing_any() {
    let d = Dir::new("refuse");
    let before = d.memory_with(HUGE);
    let started = Instant::now();
    let (o, peak) = measured(&d.0, &["run", "--max-iterations", "1"]);
    let took = started.elapsed();
    let out = text(&o);
    eprintln!("run: peak {} KiB, {:?}", peak, took);
    assert_eq!(o.status.code(), Some(1), "{}", out);
    assert!(out.contains("memory.store_capacity") && out.contains(&(HUGE - 256).to_string()), "{}", out);
    assert!(out.len() < 16 * 1024, "{} bytes of output", out.len());
    assert_eq!(std::fs::read(d.0.join("memory.json")).unwrap(), before);
    let records = log_records(&d.0);
    assert!(!records.contains(&"put"), "entries were written before the refusal: {} records", records.len());
}

/// Entries the store has room for are moved there at start-up as one batch (one sync), with a
/// bounded number of warnings, and memory.json is saved without them.
#[test]
fn overflow_moves_to_the_store_in_one_batch_with_bounded_warnings() {
    let d = Dir::new("batch");
    let n = 3_000;
    d.memory_with(n);
    let o = lkjagent(["run", "--max-iterations", "1"]).data(&d.0).output();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{}", err);
    let warnings = err.lines().filter(|l| l.contains("\"warning\"")).count();
    assert!(warnings <= 20, "{} warning lines: one per entry?", warnings);
    assert!(err.contains(&(n - 256).to_string()), "the count is not said:\n{}", err);
    let records = log_records(&d.0);
    let batch = records.iter().position(|r| *r == "batch").expect("no batch record");
    let end = records.iter().position(|r| *r == "batch_end").expect("no batch end");
    assert_eq!(records.iter().filter(|r| **r == "batch").count(), 1);
    let puts_in_batch = records[batch..end].iter().filter(|r| **r == "put").count();
    assert_eq!(puts_in_batch, n - 256, "{:?}", &records[..8]);
    let saved = std::fs::read_to_string(d.0.join("memory.json")).unwrap();
    assert!(!saved.contains(&format!("\"k{}\"", n - 1)), "memory.json still holds the overflow");
}
