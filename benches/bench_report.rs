//! Figures for `lkjagent report` (see bench.rs for the shared helpers): the time to render the
//! page of a generated audit log (`tests/support/audit_gen.rs`) of 1,000 and of 100,000 cycles,
//! best of a few runs, with the page's size; and the peak RSS of a child process (this binary,
//! re-executed with `LKJAGENT_BENCH_REPORT_CHILD`) that renders it once, against the child's RSS
//! before it starts, so the figure is what a report costs, not what the benchmark holds.
//!
//! The render is the whole command but for writing the file: both passes over the audit log,
//! `config.json` and `memory.json`, the page. The data directories are under
//! `std::env::temp_dir()` and removed at the end.

use super::{best_time, report};
use lkjagent::cli::report::{render, Period};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[path = "../tests/support/audit_gen.rs"]
mod audit_gen;

const CHILD_ENV: &str = "LKJAGENT_BENCH_REPORT_CHILD";

/// A field of /proc/self/status in KiB (VmRSS, VmHWM).
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn data_dir(n: u64) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lkj-bench-report-{}-{}", n, std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/config.json");
    std::fs::copy(config, dir.join("config.json")).unwrap();
    // Written a line at a time: the benchmark process never holds the log.
    let mut f = std::io::BufWriter::new(std::fs::File::create(dir.join("logs/audit.jsonl")).unwrap());
    audit_gen::write_audit_log(&mut f, n).unwrap();
    std::io::Write::flush(&mut f).unwrap();
    dir
}

pub fn run() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        child(Path::new(&dir));
        return;
    }
    for n in [1_000u64, 100_000] {
        let dir = data_dir(n);
        let log = std::fs::metadata(dir.join("logs/audit.jsonl")).map(|m| m.len()).unwrap_or(0);
        let mut size = 0;
        let budget = if n > 10_000 { Duration::from_secs(4) } else { Duration::from_secs(1) };
        let t = best_time(budget, 3, || {
            size = render(&dir, &Period::default(), 1_800_000_000).unwrap().len();
        });
        report(&format!("report_{}_cycles_render", n), t.as_secs_f64() * 1e3, "ms");
        report(&format!("report_{}_cycles_audit_log", n), log as f64 / 1e6, "MB");
        report(&format!("report_{}_cycles_page", n), size as f64 / 1024.0, "KiB");
        run_child(n, &dir);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The child: renders the page of `dir` once and reports its RSS before and its peak after.
fn child(dir: &Path) {
    let before = status_kib("VmRSS:").unwrap_or(0);
    let page = render(dir, &Period::default(), 1_800_000_000).unwrap();
    let peak = status_kib("VmHWM:").unwrap_or(0);
    println!("child {} {} {}", before, peak, page.len());
}

fn run_child(n: u64, dir: &Path) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--bench")
        .env(CHILD_ENV, dir)
        .env("LKJAGENT_BENCH_ONLY", "report")
        .stderr(std::process::Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "the report bench child failed: {}", out.status);
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(line) = text.lines().find(|l| l.starts_with("child ")) else {
        super::skipped(&format!("report_{}_cycles_peak_rss", n), "the child printed no figures");
        return;
    };
    let v: Vec<u64> = line.split_whitespace().skip(1).filter_map(|w| w.parse().ok()).collect();
    if let [before, peak, _] = v[..] {
        report(&format!("report_{}_cycles_peak_rss", n), peak as f64 / 1024.0, "MiB");
        report(&format!("report_{}_cycles_rss_growth", n), peak.saturating_sub(before) as f64 / 1024.0, "MiB");
    }
}
