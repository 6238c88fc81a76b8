//! Whole-process figures of the read-only commands (issue 21), beside SQLite run the same way
//! (see bench.rs for the shared helpers): at 65,536 and 1,048,576 entries
//! (`LKJAGENT_BENCH_COMMANDS_SIZES`, comma-separated, overrides), the wall time (median of
//! `RUNS` runs, page cache warm) and the peak RSS (`/usr/bin/time -f %M`; skipped without it)
//! of `lkjagent status`, `memory stats`, `memory query` with one tag and with 3 AND + 1 NOT,
//! and `memory search` with two words; `commands_<n>_start` is the process start alone
//! (`lkjagent --help`), and each `_net` figure is the wall time less that.
//!
//! `sqlite_commands_<n>_*`: the same questions asked of an equivalent SQLite database (a tag
//! table and a one-column FTS5 table; `tools/commands_sqlite.py`) by whole `python3 -c`
//! processes, when python3 has sqlite3 with FTS5 (otherwise a printed note says why not).
//!
//! The store: keys of 1 to 8 tags drawn by Zipf from 2,000 (as bench_store.rs), values of 20
//! to 60 words drawn by Zipf from 20,000 (as bench_recall.rs); its log written directly, then
//! opened once by the writer (replay, checkpoint), its full-text index built and written, and
//! closed, so that every command finds the checkpoint and `store.fts` up to date. The binary
//! is `LKJAGENT_BIN`, else `make static`'s, else `target/release/lkjagent`. Figures only:
//! nothing here is asserted on time.

use crate::bench_recall::recall_corpus;
use crate::bench_store::{zipf_tag, Rng, Zipf};
use crate::{report, skipped};
use lkjagent::fixed::FixedBuf;
use lkjagent::limits::STORE_RECORD_MAX_BYTES;
use lkjagent::memory::key::Key;
use lkjagent::memory::log::{self, PutHead};
use lkjagent::memory::store::{Store, LOG_NAME};
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs per figure (the median is reported).
const RUNS: usize = 7;

pub fn run() {
    let Some(bin) = binary() else {
        return skipped("commands", "no lkjagent binary: run `make static` or `cargo build --release` first");
    };
    eprintln!("commands: timing {}", bin.display());
    let sizes = std::env::var("LKJAGENT_BENCH_COMMANDS_SIZES").unwrap_or_else(|_| "65536,1048576".into());
    for n in sizes.split(',').filter_map(|s| s.trim().parse::<usize>().ok()) {
        at(&bin, n);
    }
}

fn binary() -> Option<PathBuf> {
    if let Some(b) = std::env::var_os("LKJAGENT_BIN") {
        return Some(b.into());
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let host = Command::new("rustc").arg("-vV").output().ok().and_then(|o| {
        String::from_utf8_lossy(&o.stdout).lines().find_map(|l| l.strip_prefix("host: ").map(str::to_string))
    });
    let mut candidates = Vec::new();
    if let Some(h) = host {
        candidates.push(root.join("target/static").join(h).join("release/lkjagent"));
    }
    candidates.push(root.join("target/release/lkjagent"));
    candidates.into_iter().find(|p| p.is_file())
}

/// The questions asked, the same of lkjagent and of SQLite.
struct Questions {
    one: String,
    and_not: [String; 4],
    words: String,
}

fn at(bin: &Path, n: usize) {
    let dir = std::env::var_os("LKJAGENT_BENCH_COMMANDS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("lkj-bench-commands-{}", std::process::id())))
        .join(n.to_string());
    let data = dir.join("data");
    let rows = dir.join("rows.tsv");
    let t = Instant::now();
    let q = if data.join(LOG_NAME).exists() && rows.exists() {
        questions() // built by an earlier run that kept it (LKJAGENT_BENCH_COMMANDS_DIR)
    } else {
        // The rows are the same every time, so a kept SQLite database stays valid.
        let _ = std::fs::remove_dir_all(&data);
        std::fs::create_dir_all(&data).unwrap();
        build(&data, &rows, n)
    };
    eprintln!("commands_{}: store ready in {:.1} s ({})", n, t.elapsed().as_secs_f64(), dir.display());
    let p = |name: &str| format!("commands_{}_{}", n, name);
    let d = data.to_str().unwrap();
    let start = measure(bin, &["--help"]);
    report(&p("start"), ms(start.0), "ms");
    let three = and3(&q);
    let cases: [(&str, Vec<&str>); 5] = [
        ("status", vec!["--data", d, "status"]),
        ("stats", vec!["--data", d, "memory", "stats"]),
        ("query_1tag", vec!["--data", d, "memory", "query", "--tags", &q.one]),
        ("query_3and1not", vec!["--data", d, "memory", "query", "--tags", &three, "--not", &q.and_not[3]]),
        ("search", vec!["--data", d, "memory", "search", &q.words]),
    ];
    for (name, args) in &cases {
        let (wall, rss) = measure(bin, args);
        report(&p(&format!("{}_wall", name)), ms(wall), "ms");
        report(&p(&format!("{}_net", name)), ms(wall.saturating_sub(start.0)), "ms");
        match rss {
            Some(kib) => report(&p(&format!("{}_peak_rss", name)), kib as f64 / 1024.0, "MiB"),
            None => skipped(&p(&format!("{}_peak_rss", name)), "no /usr/bin/time"),
        }
    }
    sqlite(n, &dir, &rows, &q);
    if std::env::var_os("LKJAGENT_BENCH_COMMANDS_DIR").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn and3(q: &Questions) -> String {
    format!("{},{},{}", q.and_not[0], q.and_not[1], q.and_not[2])
}

/// Fixed questions: a tag of Zipf rank 5 alone; ranks 2, 7 and 30 with rank 1 excluded; two
/// words of ranks 50 and 700.
fn questions() -> Questions {
    let words = recall_corpus::Zipf::new(20_000);
    Questions {
        one: zipf_tag(5),
        and_not: [zipf_tag(2), zipf_tag(7), zipf_tag(30), zipf_tag(1)],
        words: format!("{} {}", words.words[50], words.words[700]),
    }
}

/// Writes the store of `n` entries into `data` and the same rows into `rows`.
fn build(data: &Path, rows: &Path, n: usize) -> Questions {
    std::fs::write(data.join("config.json"), format!("{{\"memory\": {{\"store_capacity\": {}}}}}\n", n.max(65_536)))
        .unwrap();
    let tags = Zipf::new();
    let words = recall_corpus::Zipf::new(20_000);
    let mut rng = Rng(0x00c0_ffee_0000_0001 ^ n as u64);
    let mut wrng = recall_corpus::Rng(0x2545_F491_4F6C_DD1D);
    let mut seen = HashSet::with_capacity(n + n / 4);
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(data.join(LOG_NAME)).unwrap());
    let mut tsv = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(rows).unwrap());
    let mut buf = FixedBuf::with_capacity("bench", STORE_RECORD_MAX_BYTES);
    log::encode_header(&mut buf, 0x5eed_c0de_0000_0001 | ((n as u64) << 20)).unwrap();
    for id in 0..n as u32 {
        let key = loop {
            let k = 1 + rng.below(8);
            let mut ranks = tags.distinct(&mut rng, k);
            ranks.sort_unstable();
            if seen.insert(ranks.clone()) {
                let names: Vec<String> = ranks.iter().map(|&r| zipf_tag(r)).collect();
                break Key::from_tags(names.iter().map(String::as_str)).unwrap();
            }
        };
        let value = recall_corpus::value(&words, &mut wrng);
        let created = 1_700_000_000 + u64::from(id);
        let hits = rng.below(10) as u64;
        let head = PutHead { id, ver: 1, created, accessed: created, hits, archived: false };
        log::encode_put(&mut buf, &head, key.tags(), &value).unwrap();
        if buf.len() > STORE_RECORD_MAX_BYTES / 2 {
            out.write_all(buf.as_slice()).unwrap();
            buf.clear();
        }
        writeln!(tsv, "{}\t{}\t{}\t{}\t{}", id, key.as_str(), created, hits, value).unwrap();
    }
    out.write_all(buf.as_slice()).unwrap();
    out.flush().unwrap();
    tsv.flush().unwrap();
    drop(out);
    // The writer's first open replays the log and writes the checkpoint; the index is built
    // and its file written at close.
    let mut store = Store::open_with_capacity(data, n.max(65_536)).unwrap();
    store.recall_rebuild().unwrap();
    store.checkpoint().unwrap();
    store.close().unwrap();
    questions()
}

/// Median wall time of `RUNS` runs of `bin args`, and the peak RSS of one more under
/// `/usr/bin/time` (KiB).
fn measure(bin: &Path, args: &[&str]) -> (Duration, Option<u64>) {
    let mut cmd = Command::new(bin);
    cmd.args(args);
    timed(cmd, || {
        let mut c = Command::new(bin);
        c.args(args);
        c
    })
}

fn timed(mut cmd: Command, again: impl Fn() -> Command) -> (Duration, Option<u64>) {
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    // One run first, so the files are in the page cache.
    let ok = cmd.status().map(|s| s.success()).unwrap_or(false);
    if !ok {
        eprintln!("commands: {:?} failed", cmd);
    }
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let t = Instant::now();
        let _ = cmd.status();
        times.push(t.elapsed());
    }
    let wall = crate::percentile(&mut times, 50.0);
    (wall, peak_rss(again()))
}

/// The peak RSS of `cmd` run under `/usr/bin/time -f %M`, in KiB.
fn peak_rss(cmd: Command) -> Option<u64> {
    if !Path::new("/usr/bin/time").is_file() {
        return None;
    }
    let out = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("@rss %M")
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .stdout(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    text.lines().find_map(|l| l.strip_prefix("@rss ")?.trim().parse().ok())
}

fn sqlite(n: usize, dir: &Path, rows: &Path, q: &Questions) {
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/commands_sqlite.py");
    let p = |name: &str| format!("sqlite_commands_{}_{}", n, name);
    match Command::new("python3").arg(&tool).arg("probe").status() {
        Ok(s) if s.success() => {}
        Ok(_) => return skipped(&p("all"), "python3's sqlite3 has no FTS5"),
        Err(e) => return skipped(&p("all"), &format!("python3: {}", e)),
    }
    let db = dir.join("sqlite.db");
    if !db.exists() {
        let t = Instant::now();
        let ok = Command::new("python3").arg(&tool).arg("build").arg(rows).arg(&db).status().unwrap().success();
        if !ok {
            return skipped(&p("all"), "building the database failed");
        }
        eprintln!("sqlite_commands_{}: database built in {:.1} s", n, t.elapsed().as_secs_f64());
    }
    let program = |name: &str| {
        let out = Command::new("python3").arg(&tool).arg("program").arg(name).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let d = db.to_str().unwrap();
    let py = |code: String, extra: Vec<String>| {
        move || {
            let mut c = Command::new("python3");
            c.arg("-c").arg(&code).arg(d).args(&extra);
            c
        }
    };
    let start = py(program("start"), vec![]);
    let (start_wall, _) = timed(start(), start);
    report(&p("start"), ms(start_wall), "ms");
    let cases = [
        ("query_1tag", py(program("query_one"), vec![q.one.clone()])),
        ("query_3and1not", py(program("query_and_not"), q.and_not.to_vec())),
        ("search", py(program("search"), vec![q.words.clone()])),
    ];
    for (name, make) in cases {
        let (wall, rss) = timed(make(), make);
        report(&p(&format!("{}_wall", name)), ms(wall), "ms");
        report(&p(&format!("{}_net", name)), ms(wall.saturating_sub(start_wall)), "ms");
        if let Some(kib) = rss {
            report(&p(&format!("{}_peak_rss", name)), kib as f64 / 1024.0, "MiB");
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
