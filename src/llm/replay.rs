//! The `replay` provider: replies read in order from a JSON Lines file, for demos and tests.
//!
//! Each non-blank line is one JSON object, either a reply:
//!
//! ```text
//! {"content": "<act>...</act>", "reasoning": "...", "finish_reason": "stop", "usage": {"prompt_tokens": 1, "completion_tokens": 2}}
//! ```
//!
//! (only `content` is required; `finish_reason` defaults to `"stop"`, `reasoning` and `usage`
//! to none), or a scripted failure, returned as that error:
//!
//! ```text
//! {"error": "CONTEXT_OVERFLOW", "message": "request (9000 tokens) exceeds the available context size"}
//! ```
//!
//! where `error` is any stable error code (`LLM_TIMEOUT`, `LLM_UNAVAILABLE`, `LLM_ERROR`, ...).
//! The content goes through the same `<think>` handling as a server's. When every line has been
//! used, `Replay::next` fails with `NOT_FOUND` ("replay script exhausted"), on which the agent
//! ends the run. The file is read a line at a time into a fixed buffer, so a script may be
//! longer than memory would allow whole.

use super::reply::{Accumulator, FinishReason, Usage};
use crate::error::{Code, Error, Result};
use crate::fixed::FixedBuf;
use crate::json::{Document, Kind};
use crate::limits::LLM_MAX_REPLAY_LINE_BYTES;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// A replay script being read.
pub(crate) struct Replay {
    path: PathBuf,
    reader: BufReader<File>,
    line: FixedBuf,
    line_no: u64,
    used: u64,
}

impl core::fmt::Debug for Replay {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Replay({}: line {}, {} replies used)", self.path.display(), self.line_no, self.used)
    }
}

impl Replay {
    /// Opens the script; `CONFIG_INVALID` if it cannot be opened.
    pub(crate) fn open(path: &Path) -> Result<Replay> {
        let file = File::open(path)
            .map_err(|e| err!(ConfigInvalid, "cannot open the replay script {}: {}", path.display(), e))?;
        Ok(Replay {
            path: path.to_path_buf(),
            reader: BufReader::new(file),
            line: FixedBuf::with_capacity("replay line (LLM_MAX_REPLAY_LINE_BYTES)", LLM_MAX_REPLAY_LINE_BYTES),
            line_no: 0,
            used: 0,
        })
    }

    /// Reads the next line into `self.line`; `false` at the end of the file.
    fn read_line(&mut self) -> Result<bool> {
        self.line.clear();
        let mut any = false;
        loop {
            let buf = self
                .reader
                .fill_buf()
                .map_err(|e| err!(Io, "reading the replay script {}: {}", self.path.display(), e))?;
            if buf.is_empty() {
                if any {
                    self.line_no += 1;
                }
                return Ok(any);
            }
            any = true;
            // The line's bytes in this buffer, and how many to consume (its newline too).
            let (piece, take, end) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (crate::bytes::take(buf, i), i + 1, true),
                None => (buf, buf.len(), false),
            };
            if self.line.extend_from_slice(piece).is_err() {
                bail!(
                    CapacityExceeded,
                    "line {} of the replay script {} is longer than {} bytes (LLM_MAX_REPLAY_LINE_BYTES)",
                    self.line_no + 1,
                    self.path.display(),
                    LLM_MAX_REPLAY_LINE_BYTES
                );
            }
            self.reader.consume(take);
            if end {
                self.line_no += 1;
                return Ok(true);
            }
        }
    }

    /// The next scripted reply into `acc`, or the next scripted failure.
    pub(crate) fn next(&mut self, doc: &mut Document, acc: &mut Accumulator) -> Result<()> {
        loop {
            if !self.read_line()? {
                bail!(
                    NotFound,
                    "replay script exhausted: all {} replies of {} were used",
                    self.used,
                    self.path.display()
                );
            }
            if !self.line.as_slice().trim_ascii().is_empty() {
                break;
            }
        }
        self.used += 1;
        let (path, line_no) = (&self.path, self.line_no);
        let at = |e: Error| e.context(format_args!("replay script {} line {}", path.display(), line_no));
        doc.parse(self.line.as_slice()).map_err(at)?;
        let root = doc.root();
        if root.kind() != Kind::Object {
            return Err(at(err!(JsonInvalid, "each line must be a JSON object, found {}", root.kind().name())));
        }
        if let Some(name) = root.get("error").and_then(|v| v.as_str()) {
            let Some(code) = Code::from_name(name) else {
                return Err(at(err!(JsonInvalid, "\"error\" names no known error code: {:?}", name)));
            };
            let message = root.get("message").and_then(|m| m.as_str()).unwrap_or("scripted failure");
            return Err(Error::new(code, crate::site!(), format_args!("{}", message)));
        }
        let Some(content) = root.get("content").and_then(|c| c.as_str()) else {
            return Err(at(err!(JsonInvalid, "a reply line needs a string \"content\" (or an \"error\")")));
        };
        acc.push_content(content).map_err(at)?;
        if let Some(r) = root.get("reasoning").and_then(|r| r.as_str()) {
            acc.push_reasoning(r);
        }
        acc.finish =
            root.get("finish_reason").and_then(|f| f.as_str()).map_or(FinishReason::Stop, FinishReason::from_name);
        if let Some(u) = root.get("usage").filter(|u| u.kind() == Kind::Object) {
            let n = |k: &str| u.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
            let (p, c) = (n("prompt_tokens"), n("completion_tokens"));
            let total = u.get("total_tokens").and_then(|v| v.as_u64()).unwrap_or(p.saturating_add(c));
            acc.usage =
                Some(Usage { prompt_tokens: p, completion_tokens: c, total_tokens: total, cached_tokens: None });
        }
        acc.pieces = 1;
        Ok(())
    }
}
