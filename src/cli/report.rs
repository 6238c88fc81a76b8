//! `lkjagent report [--out FILE] [--since TIME | --last N] [--run ID]`: one self-contained HTML
//! page of what the agent did, for people who would rather look than read logs.
//!
//! It reads what the agent already writes and changes none of it: the audit log and its rotated
//! file, as a stream, twice (a first pass counts the period's cycles, or only the lines when the
//! period is everything, so the second can bin them into a fixed number of chart points:
//! `summary`); `memory.json` (`cli::memory::read_memory`); `config.json` (read leniently: a
//! report of a directory whose config has problems still shows the rest); the store, opened
//! read-only (`cli::util::open_store_read_only`); and the exchange logs where a run recorded
//! one. So it works while the agent runs.
//!
//! The page has inline CSS and inline SVG only: no script, no external URL of any kind, nothing
//! fetched when it opens. Every text from a model, a config or a file goes through the page's
//! one escaping function (`crate::html`), so a value holding `<script>` shows as text. Its size
//! is bounded by the report's counts (`limits::REPORT_*`) whatever the run's length, and capped
//! by `REPORT_MAX_BYTES`. Damaged or foreign audit lines are counted and shown, never fatal.
//!
//! Rooms: `scan` (the audit lines and the period), `summary` (what the period adds up to),
//! `sources` (config, store, exchange logs), `chart` (the drawings), `page` (the layout), with
//! `style` (its stylesheet) and `tables` (the task and the tables). This file is the command:
//! its options, and the order in which the rooms are called.

mod chart;
mod page;
pub mod scan;
mod sources;
mod style;
pub mod summary;
mod tables;

pub use scan::Period;

use super::args::Args;
use super::memory::{read_memory, MemoryRead};
use super::util::write_all;
use crate::error::Result;
use crate::html::Page;
use crate::limits::REPORT_MAX_BYTES;
use page::Report;
use scan::{audit_files, Scanner};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use summary::Summary;

const HELP: &str = "\
lkjagent report: one self-contained HTML page of what the agent did

usage: lkjagent [--data DIR] report [--out FILE] [--since TIME | --last N] [--run ID]

Reads the audit log (and its rotated file), memory.json, config.json and the store, changes
nothing, and works while the agent runs. The page shows: the task, as written in working
memory; a header (runs, model and endpoint, constraint, cycles, time span, stored entries, last
error); a strip of the cycles coloured by outcome; charts of latency, prompt tokens (sent, from
the server's cache, generated), the prompt's size against the paging and hard limits, and the
store's entries; tables of the newest entries of the task's product and, apart, of the agent's
own logs and notes, each with its count, the most used tags, actions by type, problems by code,
and runs; and the audit block (run ids, first and last prompt SHA-256, counts, error codes).
Inline CSS and SVG only: no script, nothing fetched when it opens; every text from a model or a
file is escaped.

options:
  --out FILE    where to write the page (default: report.html; '-' for stdout)
  --since TIME  only cycles from TIME: Unix seconds, 2026-11-26, 2026-11-26T08:00:00Z, or an
                age such as 90m, 12h, 7d
  --last N      only the last N cycles
  --run ID      only the cycles of run ID (the audit log's 'run')
  --help, -h    this help

exit codes: 0 written, 1 a file could not be read or written, 2 usage error
";

/// Runs `lkjagent report`.
pub fn run(mut args: Args, data: &Path) -> Result<i32> {
    if args.help() {
        write_all(&mut io::stdout().lock(), HELP)?;
        return Ok(super::EXIT_OK);
    }
    let out = args.value("--out")?.unwrap_or_else(|| "report.html".to_string());
    let since = args.value("--since")?;
    let last = args.value("--last")?;
    let run = args.value("--run")?;
    args.finish("report")?;
    if since.is_some() && last.is_some() {
        bail!(Usage, "--since and --last choose the period two ways; give one of them");
    }
    let period = Period {
        since: match since {
            Some(t) => Some(parse_since(&t, crate::clock::now_unix())?),
            None => None,
        },
        last: match last {
            Some(n) => match crate::bytes::parse_u64(&n) {
                Some(n) if n > 0 => Some(n),
                _ => bail!(Usage, "--last takes a number of cycles above 0, not '{}'", n),
            },
            None => None,
        },
        run,
    };
    if !data.is_dir() {
        bail!(NotFound, "data directory {} does not exist; pass --data DIR or set LKJAGENT_DATA", data.display());
    }
    let page = render(data, &period, crate::clock::now_unix())?;
    if out == "-" {
        let stdout = io::stdout();
        let mut w = stdout.lock();
        w.write_all(page.as_bytes()).and_then(|()| w.flush()).map_err(super::util::write_error)?;
    } else {
        write_page(Path::new(&out), page.as_bytes())?;
        eprintln!("lkjagent: report written to {} ({} bytes)", out, page.len());
    }
    Ok(super::EXIT_OK)
}

/// `--since`: Unix seconds, an RFC 3339 UTC date or time, or an age (`90m`, `12h`, `7d`) back
/// from `now`.
pub fn parse_since(text: &str, now: u64) -> Result<u64> {
    let t = text.trim();
    if let Some(n) = crate::bytes::parse_u64(t) {
        return Ok(n);
    }
    let age = |unit: u64| {
        t.get(..t.len().saturating_sub(1)).and_then(crate::bytes::parse_u64).and_then(|n| n.checked_mul(unit))
    };
    let secs = match t.as_bytes().last() {
        Some(b's') => age(1),
        Some(b'm') => age(60),
        Some(b'h') => age(3_600),
        Some(b'd') => age(86_400),
        _ => None,
    };
    if let Some(s) = secs {
        return Ok(now.saturating_sub(s));
    }
    if let Some(u) = crate::clock::parse_utc(t) {
        return Ok(u);
    }
    bail!(Usage, "--since takes Unix seconds, a UTC date or time (2026-11-26, 2026-11-26T08:00:00Z) or an age (90m, 12h, 7d), not '{}'", text)
}

/// Writes the page to `path` through a new temporary file beside it and a rename, so a reader
/// never sees half a page.
fn write_page(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Some(name) = path.file_name() else { bail!(Usage, "--out {} names no file", path.display()) };
    let tmp = dir.join(format!(".{}.tmp", name.to_string_lossy()));
    let written = crate::memory::nofollow::create_temp(&tmp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, path)) {
        let _ = std::fs::remove_file(&tmp);
        bail!(Io, "cannot write {}: {}", path.display(), e);
    }
    crate::memory::atomic::sync_dir(&dir)
}

/// The page for data directory `data`, over `period`, at time `now`.
pub fn render(data: &Path, period: &Period, now: u64) -> Result<String> {
    let files = audit_files(data);
    let mut scanner = Scanner::new();
    // The cycles of the period, to fix the bins before the pass that fills them. With no
    // filter the lines' count is enough (an upper bound: damaged lines are rare, and only make
    // the last bin short); otherwise a first pass reads them.
    let (expected, skip) = if period.since.is_none() && period.run.is_none() && period.last.is_none() {
        (scan::count_lines(&files)?, 0)
    } else {
        let mut in_period = 0u64;
        scanner.scan(&files, &mut |l| in_period += u64::from(period.takes(l)))?;
        let expected = period.last.map_or(in_period, |n| n.min(in_period));
        (expected, in_period - expected)
    };
    let mut summary = Summary::new(expected);
    let mut seen = 0u64;
    let counts = scanner.scan(&files, &mut |l| {
        if period.takes(l) {
            if seen >= skip {
                summary.add(l);
            }
            seen += 1;
        }
    })?;
    summary.finish();
    sources::add_replies(data, &mut summary.problems);
    let (from, to) = match (summary.cycles, period.since) {
        (0, Some(t)) => (t, now),
        (0, None) => (1, 0), // no cycle: no entry is new
        (_, since) => (since.unwrap_or(summary.first_time).min(summary.first_time), summary.last_time),
    };
    let memory = match read_memory(data)? {
        MemoryRead::Missing => None,
        MemoryRead::Found(v) => Some(v),
    };
    let config = sources::read_config(data);
    let rule = sources::ProductRule::new(memory.as_deref(), config.log_prefixes.clone());
    let store = sources::read_store(data, from, to, &summary.bins, &rule)?;
    let report = Report {
        data: data.to_path_buf(),
        period: period.clone(),
        now,
        outside: counts.records.saturating_sub(summary.cycles),
        files,
        counts,
        summary,
        config,
        product_tags: rule.tags().map(str::to_string),
        memory,
        store,
    };
    let mut page = Page::new(REPORT_MAX_BYTES, "limits::REPORT_MAX_BYTES");
    report.write(&mut page);
    page.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_forms() {
        let now = 1_800_000_000;
        assert_eq!(parse_since("1700000000", now).unwrap(), 1_700_000_000);
        assert_eq!(parse_since("90m", now).unwrap(), now - 5_400);
        assert_eq!(parse_since("2d", now).unwrap(), now - 172_800);
        assert_eq!(parse_since("2024-02-29", now).unwrap(), 1_709_164_800);
        assert_eq!(parse_since("2026-12-31T23:59:59Z", now).unwrap(), 1_798_761_599);
        assert_eq!(parse_since("2026-12-31T23:59", now).unwrap(), 1_798_761_540);
        for bad in [
            "yesterday",
            "2026-02-30",
            "2026-13-01",
            "12x",
            "",
            "2026-01-01T25:00",
            "99999999999999999999d",
            "999999999999999-01-01",
        ] {
            assert_eq!(parse_since(bad, now).unwrap_err().code(), crate::error::Code::Usage, "{bad}");
        }
    }
}
