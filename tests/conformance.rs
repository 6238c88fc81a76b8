#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! `make conformance`: the public JSON corpora (JSONTestSuite, nativejson-benchmark), read from
//! `LKJAGENT_CORPUS` (default `../shared/corpus`). A missing corpus is reported and skipped, so
//! a fresh clone without `../shared` still passes `make test`.
//!
//! Prints exactly two figures and exits non-zero unless all required ones are met:
//!
//! ```text
//! jsontestsuite: y_accepted A/95 n_rejected B/188 i_accepted C/35 crashes D
//! nativejson: pass P/3 fail F/31 roundtrip R/27
//! ```
//!
//! Required: every `y_` file accepted, every `n_` file rejected, no crash or hang (the `i_`
//! files may go either way; the count is informational); every jsonchecker `pass` file
//! accepted, every `fail` file rejected except the two named `*_EXCLUDE` (a top-level string,
//! which RFC 8259 allows, and 20 levels of nesting, which is within `JSON_MAX_DEPTH`); every
//! `roundtrip` file re-serialized (compact) byte-identical to its contents.
//!
//! Each file is parsed on its own thread with a deadline: a panic or a parse that does not
//! finish in time counts as a crash instead of stopping the run. Each file is also fed to the
//! streaming parser in small slices; a verdict that differs from the whole-input parse is a
//! failure (it would mean a token cut by a slice boundary is read differently).

use lkjagent::json::{Document, Parser, Validate, Writer};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// Longest time one file may take (the largest is a few hundred KB; it takes milliseconds).
const DEADLINE: Duration = Duration::from_secs(20);
/// Arena for the corpus: far more than any file needs.
const NODES: usize = 1 << 20;
const TEXT: usize = 1 << 24;
/// Largest file read (the corpus's largest test file is ~0.2 MB).
const MAX_FILE: u64 = 16 << 20;

/// What one file gave.
struct Outcome {
    /// Whole-input parse accepted the file.
    accepted: bool,
    /// The streaming parser fed in small slices agreed.
    chunked_agrees: bool,
    /// Compact re-serialization of an accepted document.
    compact: Option<String>,
    /// The error, for reporting.
    error: String,
}

fn check(bytes: Vec<u8>) -> Outcome {
    let mut doc = Document::with_capacity(NODES, TEXT);
    let res = doc.parse(&bytes);
    let accepted = res.is_ok();
    let error = res.err().map(|e| e.to_string()).unwrap_or_default();
    let compact = accepted.then(|| {
        let mut s = String::new();
        let mut w = Writer::compact(&mut s);
        w.value(doc.root()).unwrap();
        w.finish().unwrap();
        s
    });
    // Slices of 1 byte for small files (every token crosses a boundary), 7 otherwise.
    let step = if bytes.len() <= 4096 { 1 } else { 7 };
    let mut p = Parser::new();
    let mut ok = true;
    for chunk in bytes.chunks(step) {
        if p.feed(chunk, &mut Validate).is_err() {
            ok = false;
            break;
        }
    }
    ok = ok && p.finish(&mut Validate).is_ok();
    Outcome { accepted, chunked_agrees: ok == accepted, compact, error }
}

/// Reads and checks one file on its own thread; `None` is a crash or a hang.
fn guarded(path: &Path) -> Option<(Vec<u8>, Outcome)> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path).unwrap().take(MAX_FILE).read_to_end(&mut bytes).unwrap();
    let (tx, rx) = mpsc::channel();
    let input = bytes.clone();
    let handle = std::thread::Builder::new()
        .name(path.display().to_string())
        .spawn(move || {
            let _ = tx.send(check(input));
        })
        .unwrap();
    match rx.recv_timeout(DEADLINE) {
        Ok(outcome) => {
            let _ = handle.join();
            Some((bytes, outcome))
        }
        // A panic drops the sender (Disconnected); a hang times out. The hung thread, if any,
        // is left behind: the process exits with failure at the end anyway.
        Err(_) => None,
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {}", dir.display(), e))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

fn name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// What went wrong over the whole run: the problems to print, and how many files crashed.
#[derive(Default)]
struct Tally {
    problems: Vec<String>,
    crashes: usize,
}

impl Tally {
    /// Checks one file ([`guarded`]); a crash or a hang is counted and noted, and gives `None`.
    fn run(&mut self, path: &Path, file: &str) -> Option<(Vec<u8>, Outcome)> {
        let got = guarded(path);
        if got.is_none() {
            self.crashes += 1;
            self.problems.push(format!("{}: crashed or hung", file));
        }
        got
    }

    /// Notes a file whose slice-by-slice parse disagreed with the whole-input parse.
    fn slices_agree(&mut self, file: &str, out: &Outcome) {
        if !out.chunked_agrees {
            self.problems.push(format!("{}: slice-by-slice parse disagrees with whole-input parse", file));
        }
    }

    /// A file that must be accepted: 1 when it was, else 0 and the error noted.
    fn accepted(&mut self, file: &str, out: &Outcome) -> usize {
        if !out.accepted {
            self.problems.push(format!("{}: rejected: {}", file, out.error));
        }
        usize::from(out.accepted)
    }

    /// A file that must be rejected: 1 when it was, else 0 and noted.
    fn rejected(&mut self, file: &str, out: &Outcome) -> usize {
        if out.accepted {
            self.problems.push(format!("{}: accepted", file));
        }
        usize::from(!out.accepted)
    }
}

fn main() {
    let corpus: PathBuf =
        std::env::var_os("LKJAGENT_CORPUS").map(Into::into).unwrap_or_else(|| "../shared/corpus".into());
    let json = corpus.join("json");
    if !json.is_dir() {
        println!("conformance: corpus not found at {}, skipped", json.display());
        return;
    }
    let mut tally = Tally::default();

    // JSONTestSuite
    let (mut y, mut n, mut i) = (0, 0, 0);
    let (mut y_total, mut n_total, mut i_total) = (0, 0, 0);
    for path in files(&json.join("jsontestsuite/test_parsing")) {
        let file = name(&path);
        let Some((_, out)) = tally.run(&path, &file) else { continue };
        tally.slices_agree(&file, &out);
        match file.get(..2) {
            Some("y_") => {
                y_total += 1;
                y += tally.accepted(&file, &out);
            }
            Some("n_") => {
                n_total += 1;
                n += tally.rejected(&file, &out);
            }
            Some("i_") => {
                i_total += 1;
                i += usize::from(out.accepted);
            }
            _ => {}
        }
    }
    println!(
        "jsontestsuite: y_accepted {}/{} n_rejected {}/{} i_accepted {}/{} crashes {}",
        y, y_total, n, n_total, i, i_total, tally.crashes
    );

    // nativejson-benchmark: jsonchecker and roundtrip
    let data = json.join("nativejson/data");
    let (mut pass, mut pass_total, mut fail, mut fail_total) = (0, 0, 0, 0);
    for path in files(&data.join("jsonchecker")) {
        let file = name(&path);
        let Some((_, out)) = tally.run(&path, &file) else { continue };
        tally.slices_agree(&file, &out);
        if file.contains("EXCLUDE") {
            continue;
        }
        if file.starts_with("pass") {
            pass_total += 1;
            pass += tally.accepted(&file, &out);
        } else if file.starts_with("fail") {
            fail_total += 1;
            fail += tally.rejected(&file, &out);
        }
    }
    let (mut rt, mut rt_total) = (0, 0);
    for path in files(&data.join("roundtrip")) {
        let file = name(&path);
        rt_total += 1;
        let Some((bytes, out)) = tally.run(&path, &file) else { continue };
        let want = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        match out.compact {
            Some(s) if s.as_bytes() == want => rt += 1,
            Some(s) => tally.problems.push(format!("{}: re-serialized as {:?}", file, s)),
            None => tally.problems.push(format!("{}: rejected: {}", file, out.error)),
        }
    }
    println!("nativejson: pass {}/{} fail {}/{} roundtrip {}/{}", pass, pass_total, fail, fail_total, rt, rt_total);

    for p in &tally.problems {
        println!("conformance: {}", p);
    }
    let required = y == 95
        && y_total == 95
        && n == 188
        && n_total == 188
        && tally.crashes == 0
        && pass == 3
        && pass_total == 3
        && fail == 31
        && fail_total == 31
        && rt == 27
        && rt_total == 27
        && tally.problems.is_empty();
    if !required {
        println!("conformance: FAILED");
        std::process::exit(1);
    }
}
