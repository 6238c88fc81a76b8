//! Reading the audit log for `lkjagent report`: its files oldest first (`audit.jsonl.1`, then
//! `audit.jsonl`), as a stream of lines, each one parsed into a borrowed [`Line`] or counted as
//! damaged; and the [`Period`] a report covers.
//!
//! Tolerant by design: a member the reader does not know is ignored, and only `time`, `run` and
//! `cycle` are required (the short line the agent writes when a cycle's line would not fit has
//! little more); every other member may be missing or `null`. A line that is not JSON, not an
//! object, longer than [`AUDIT_LINE_MAX_BYTES`], or without those three is damaged or foreign:
//! counted, its first occurrence named, never fatal. A last line without its newline is one the
//! agent is still writing (or a crash cut): counted apart, not read. Nothing is written.

use crate::error::Result;
use crate::json::{Document, Kind, Value};
use crate::limits::AUDIT_LINE_MAX_BYTES;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// JSON nodes of one audit line (its actions and problems are few; a line with more is damaged).
const LINE_MAX_NODES: usize = 1024;

/// One cycle's audit line, borrowed from the parsed document.
pub struct Line<'a> {
    pub time: u64,
    pub run: &'a str,
    pub cycle: u64,
    pub state: &'a str,
    pub next_state: &'a str,
    pub prompt_sha256: &'a str,
    pub prompt_tokens_est: Option<u64>,
    pub latency_ms: Option<u64>,
    /// `(prompt_tokens, completion_tokens)` as the server reported them.
    pub usage: Option<(u64, u64)>,
    pub cached_tokens: Option<u64>,
    /// Missing: taken as valid when the line names no problem.
    pub valid: bool,
    pub constrain: &'a str,
    pub error: Option<&'a str>,
    actions: Option<Value<'a>>,
    problems: Option<Value<'a>>,
}

/// One action of a line.
pub struct Action<'a> {
    pub kind: &'a str,
    pub key: &'a str,
    pub ok: bool,
    pub result: &'a str,
}

impl<'a> Line<'a> {
    /// Reads a parsed line; `None` when it is not an audit record.
    fn read(root: Value<'a>) -> Option<Line<'a>> {
        if root.kind() != Kind::Object {
            return None;
        }
        let text = |k: &str| root.get(k).and_then(|v| v.as_str());
        let num = |k: &str| root.get(k).and_then(|v| v.as_u64());
        let (time, run, cycle) = (num("time")?, text("run")?, num("cycle")?);
        let usage = root.get("usage").and_then(|u| {
            Some((u.get("prompt_tokens")?.as_u64()?, u.get("completion_tokens").and_then(|c| c.as_u64()).unwrap_or(0)))
        });
        let problems = root.get("problems").filter(|p| p.kind() == Kind::Array);
        let valid = match root.get("valid").and_then(|v| v.as_bool()) {
            Some(v) => v,
            None => problems.is_none_or(|p| p.is_empty()),
        };
        Some(Line {
            time,
            run,
            cycle,
            state: text("state").unwrap_or(""),
            next_state: text("next_state").unwrap_or(""),
            prompt_sha256: text("prompt_sha256").unwrap_or(""),
            prompt_tokens_est: num("prompt_tokens_est"),
            latency_ms: num("latency_ms"),
            usage,
            cached_tokens: num("cached_tokens"),
            valid,
            constrain: text("constrain").unwrap_or(""),
            error: text("error"),
            actions: root.get("actions").filter(|a| a.kind() == Kind::Array),
            problems,
        })
    }

    /// The line's actions (an action without a text `type` is passed over).
    pub fn actions(&self) -> impl Iterator<Item = Action<'a>> + 'a {
        self.actions.into_iter().flat_map(|a| a.items()).filter_map(|a| {
            Some(Action {
                kind: a.get("type")?.as_str()?,
                key: a.get("key").and_then(|v| v.as_str()).unwrap_or(""),
                ok: a.get("ok").and_then(|v| v.as_bool()).unwrap_or(false),
                result: a.get("result").and_then(|v| v.as_str()).unwrap_or(""),
            })
        })
    }

    /// The reply problems the line names (stable codes).
    pub fn problems(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.problems.into_iter().flat_map(|p| p.items()).filter_map(|p| p.as_str())
    }
}

/// Which cycles the report covers.
#[derive(Clone, Debug, Default)]
pub struct Period {
    /// Cycles at or after this Unix time.
    pub since: Option<u64>,
    /// The last this many cycles.
    pub last: Option<u64>,
    /// Only this run.
    pub run: Option<String>,
}

impl Period {
    /// Whether line `l` is in the period (`last` aside: it needs the count first).
    pub fn takes(&self, l: &Line<'_>) -> bool {
        self.since.is_none_or(|t| l.time >= t) && self.run.as_deref().is_none_or(|r| r == l.run)
    }
}

/// What a scan counted besides the lines it handed on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Lines read as audit records.
    pub records: u64,
    /// Damaged or foreign lines.
    pub damaged: u64,
    /// The first damaged line: file name, line number, why.
    pub first_damaged: Option<String>,
    /// A last line without its newline (being written, or cut by a crash).
    pub unfinished: u64,
    /// Bytes read.
    pub bytes: u64,
}

/// The audit log's files that exist in data directory `data`, oldest first.
pub fn audit_files(data: &Path) -> Vec<PathBuf> {
    let logs = data.join("logs");
    [logs.join("audit.jsonl.1"), logs.join("audit.jsonl")].into_iter().filter(|p| p.is_file()).collect()
}

/// The number of lines of `files`, counted without parsing them: at least the number of
/// records a scan will find (for the bins when every record is in the period).
pub fn count_lines(files: &[PathBuf]) -> Result<u64> {
    let mut lines = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    for path in files {
        let mut f = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => bail!(Io, "cannot open {}: {}", path.display(), e),
        };
        loop {
            let n = match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => bail!(Io, "cannot read {}: {}", path.display(), e),
            };
            lines += crate::bytes::take(&buf, n).iter().filter(|&&b| b == b'\n').count() as u64;
        }
    }
    Ok(lines)
}

/// Reads the audit files with one reused document and line buffer.
pub struct Scanner {
    doc: Document,
    line: Vec<u8>,
}

impl Scanner {
    /// A scanner with its buffers reserved (about 100 KiB).
    pub fn new() -> Scanner {
        Scanner {
            doc: Document::with_capacity(LINE_MAX_NODES, AUDIT_LINE_MAX_BYTES),
            line: Vec::with_capacity(AUDIT_LINE_MAX_BYTES + 1),
        }
    }

    /// Hands each audit record of `files` to `each`, in order, and counts the rest.
    pub fn scan(&mut self, files: &[PathBuf], each: &mut dyn FnMut(&Line<'_>)) -> Result<Counts> {
        let mut counts = Counts::default();
        for path in files {
            let f = match File::open(path) {
                Ok(f) => f,
                // Rotated away between the listing and now: its lines are in the other file.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => bail!(Io, "cannot open {}: {}", path.display(), e),
            };
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let mut reader = BufReader::with_capacity(64 * 1024, f);
            let mut line_no = 0u64;
            loop {
                self.line.clear();
                let n = (&mut reader)
                    .take(AUDIT_LINE_MAX_BYTES as u64 + 1)
                    .read_until(b'\n', &mut self.line)
                    .map_err(|e| err!(Io, "cannot read {}: {}", path.display(), e))?;
                if n == 0 {
                    break;
                }
                counts.bytes += n as u64;
                line_no += 1;
                let whole = self.line.last() == Some(&b'\n');
                if !whole && self.line.len() <= AUDIT_LINE_MAX_BYTES {
                    counts.unfinished += 1;
                    break;
                }
                let why = if !whole {
                    counts.bytes +=
                        skip_line(&mut reader).map_err(|e| err!(Io, "cannot read {}: {}", path.display(), e))?;
                    Some("longer than AUDIT_LINE_MAX_BYTES")
                } else if self.line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                } else if self.doc.parse(&self.line).is_err() {
                    Some("not JSON")
                } else if let Some(rec) = Line::read(self.doc.root()) {
                    counts.records += 1;
                    each(&rec);
                    None
                } else {
                    Some("not an audit record (needs time, run and cycle)")
                };
                if let Some(why) = why {
                    counts.damaged += 1;
                    if counts.first_damaged.is_none() {
                        counts.first_damaged = Some(format!("{} line {}: {}", name, line_no, why));
                    }
                }
            }
        }
        Ok(counts)
    }
}

impl Default for Scanner {
    fn default() -> Self {
        Scanner::new()
    }
}

/// Reads past the rest of a line; the bytes skipped.
fn skip_line(r: &mut impl BufRead) -> io::Result<u64> {
    let mut skipped = 0u64;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(skipped);
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                r.consume(i + 1);
                return Ok(skipped + i as u64 + 1);
            }
            None => {
                let n = buf.len();
                r.consume(n);
                skipped += n as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_damaged_foreign_long_and_unfinished_lines() {
        let dir = crate::testing::temp_dir("report-scan");
        std::fs::create_dir_all(dir.join("logs")).unwrap();
        let good = r#"{"time":5,"run":"r","cycle":1,"state":"thinking","valid":true,"actions":[{"type":"storage_save","key":"a","ok":true,"result":"saved"},{"key":"x"}],"problems":["NO_TAGS"],"new_field":{"x":[1]}}"#;
        let short = r#"{"time":6,"run":"r","cycle":2,"error":"CAPACITY_EXCEEDED","note":"audit line too long"}"#;
        let long = format!("{{\"time\":7,\"run\":\"r\",\"cycle\":3,\"x\":\"{}\"}}", "a".repeat(AUDIT_LINE_MAX_BYTES));
        let text = format!("{good}\nnot json\n[1]\n\n{{\"time\":1}}\n{long}\n{short}\n{{\"time\":8,");
        std::fs::write(dir.join("logs/audit.jsonl"), text).unwrap();
        std::fs::write(dir.join("logs/audit.jsonl.1"), format!("{good}\n")).unwrap();
        let files = audit_files(&dir);
        assert_eq!(files.len(), 2);
        assert_eq!(count_lines(&files).unwrap(), 8, "every line ended by a newline");
        let mut seen = Vec::new();
        let counts = Scanner::new()
            .scan(&files, &mut |l| {
                let acts: Vec<_> = l.actions().map(|a| (a.kind.to_string(), a.ok)).collect();
                let probs: Vec<_> = l.problems().map(str::to_string).collect();
                seen.push((l.cycle, l.state.to_string(), l.error.map(str::to_string), acts, probs, l.valid));
            })
            .unwrap();
        assert_eq!(counts.records, 3);
        assert_eq!(counts.damaged, 4, "{counts:?}");
        assert_eq!(counts.unfinished, 1);
        assert_eq!(counts.first_damaged.as_deref(), Some("audit.jsonl line 2: not JSON"));
        let first = (
            1,
            "thinking".to_string(),
            None,
            vec![("storage_save".to_string(), true)],
            vec!["NO_TAGS".to_string()],
            true,
        );
        assert_eq!(seen[0], first);
        assert_eq!(seen[1], first);
        assert_eq!(seen[2], (2, String::new(), Some("CAPACITY_EXCEEDED".to_string()), vec![], vec![], true));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
