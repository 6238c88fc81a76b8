//! The optional exchange log, and the recorded replies `lkjagent replay` runs again.
//!
//! With `run --exchange-log`, each run writes `logs/exchange-<run>/`:
//! - `opened_at`: the clock when the run loaded its memory (entries with no times get it);
//! - `start/`: copies of `config.json`, `agent-prompt.json`, `memory.json` and the store log as
//!   they were when the run started;
//! - `exchange.jsonl`: one JSON line per cycle: `time` (the cycle's clock), `cycle`, `state`,
//!   `inbox` (a request taken that cycle, if any), `prompt` (the exact text sent, the last one
//!   when a context overflow made the agent page out and ask again: `overflow_retried`), and
//!   what came back: `content`, `reasoning`, `finish_reason`, `usage`, `unsure` (an outline's
//!   items the model wrote unsurely, one a line, read from the reply's log-probabilities), or
//!   `error` and `message`.
//!
//! The reply fields use the names of the `replay` provider's script, so the file doubles as a
//! script. [`Recorded`] reads it back for `lkjagent replay`: the same replies, the same clock
//! and the same inbox requests, cycle by cycle, so a replay from the `start/` copies reproduces
//! `memory.json` byte for byte. The prompt is recorded for people (and compared on replay); the
//! SHA-256 of every prompt is also in the audit log.
//!
//! The run's directory is created new by the run, and every file in it exclusively, so none is
//! ever written through a symbolic link planted at its name.

use crate::error::{Code, Result};
use crate::fixed::FixedBuf;
use crate::json::{Document, Typed, Value, Writer};
use crate::limits::{EXCHANGE_LINE_MAX_BYTES, EXCHANGE_LINE_MAX_NODES};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// The file, beside `start/`, holding the clock (Unix seconds) at which the run opened its
/// memory: loading stamps entries that carry no times with it, and replay must do the same.
pub const OPENED_AT_FILE: &str = "opened_at";

/// The opening clock of a recorded run, if it was recorded.
pub fn opened_at(exchange_dir: &Path) -> Option<u64> {
    crate::bytes::parse_u64(std::fs::read_to_string(exchange_dir.join(OPENED_AT_FILE)).ok()?.trim())
}

/// One cycle's exchange, borrowed from the agent's buffers.
pub struct ExchangeRecord<'a> {
    pub time: u64,
    pub cycle: u64,
    pub state: &'a str,
    pub inbox: Option<&'a str>,
    pub prompt: &'a str,
    /// The reply's text when there is no `error` (`None`: a reply without text).
    pub content: Option<&'a str>,
    pub reasoning: Option<&'a str>,
    pub finish_reason: Option<&'a str>,
    pub usage: Option<(u64, u64)>,
    /// An outline's items the model wrote unsurely, one a line (`None`: none).
    pub unsure: Option<&'a str>,
    pub error: Option<(Code, &'a str)>,
    /// The server first answered `CONTEXT_OVERFLOW`; the agent paged out and asked again.
    pub overflow_retried: bool,
}

/// The exchange log of one run.
pub struct ExchangeLog {
    file: File,
    line: FixedBuf,
    dir: PathBuf,
}

impl ExchangeLog {
    /// Starts the exchange log of run `run` in data directory `data`, copying the starting
    /// `memory.json` and store log.
    pub fn start(data: &Path, run: &str, opened_at: u64) -> Result<ExchangeLog> {
        let dir = super::audit::logs_dir(data)?.join(format!("exchange-{}", run));
        let start = dir.join("start");
        // The run's own directory, new (an existing one, or a link at its name, is refused), so
        // nothing can wait in it; each file in it is created exclusively, never through a link.
        for d in [&dir, &start] {
            std::fs::create_dir(d).map_err(|e| err!(Io, "cannot create {}: {}", d.display(), e))?;
        }
        let create = |path: &Path| {
            File::options()
                .append(true)
                .create_new(true)
                .open(path)
                .map_err(|e| err!(Io, "cannot create {}: {}", path.display(), e))
        };
        let clock = dir.join(OPENED_AT_FILE);
        create(&clock)?
            .write_all(format!("{}\n", opened_at).as_bytes())
            .map_err(|e| err!(Io, "cannot write {}: {}", clock.display(), e))?;
        for name in [
            crate::memory::file::MEMORY_FILE,
            crate::memory::store::LOG_NAME,
            super::config::FILE_NAME,
            super::segments::FILE_NAME,
        ] {
            let from = data.join(name);
            let mut source = match File::open(&from) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => bail!(Io, "cannot copy {} for the exchange log: {}", from.display(), e),
            };
            std::io::copy(&mut source, &mut create(&start.join(name))?)
                .map_err(|e| err!(Io, "cannot copy {} for the exchange log: {}", from.display(), e))?;
        }
        let file = create(&dir.join("exchange.jsonl"))?;
        Ok(ExchangeLog {
            file,
            line: FixedBuf::with_capacity("exchange line (limits::EXCHANGE_LINE_MAX_BYTES)", EXCHANGE_LINE_MAX_BYTES),
            dir,
        })
    }

    /// The run's exchange directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends one cycle.
    pub fn append(&mut self, r: &ExchangeRecord<'_>) -> Result<()> {
        self.line.clear();
        write_record(&mut self.line, r)?;
        self.line.push_str("\n")?;
        self.file
            .write_all(self.line.as_slice())
            .and_then(|()| self.file.sync_data())
            .map_err(|e| err!(PersistFailed, "cannot append to the exchange log in {}: {}", self.dir.display(), e))
    }
}

fn write_record(out: &mut FixedBuf, r: &ExchangeRecord<'_>) -> Result<()> {
    let mut w = Writer::compact(out as &mut dyn core::fmt::Write);
    w.begin_object()?;
    w.key("time")?;
    w.u64(r.time)?;
    w.key("cycle")?;
    w.u64(r.cycle)?;
    w.key("state")?;
    w.string(r.state)?;
    if let Some(i) = r.inbox {
        w.key("inbox")?;
        w.string(i)?;
    }
    w.key("prompt")?;
    w.string(r.prompt)?;
    if r.overflow_retried {
        w.key("overflow_retried")?;
        w.bool(true)?;
    }
    if let Some((code, message)) = r.error {
        w.key("error")?;
        w.string(code.as_str())?;
        w.key("message")?;
        w.string(message)?;
    } else {
        // Every reply line has a "content" (the replay script needs one): none is empty text.
        w.key("content")?;
        match r.content {
            Some(text) => w.string(text)?,
            None => w.string("")?,
        }
        if let Some(x) = r.reasoning {
            w.key("reasoning")?;
            w.string(x)?;
        }
        if let Some(f) = r.finish_reason {
            w.key("finish_reason")?;
            w.string(f)?;
        }
        if let Some(usage) = r.usage {
            w.key("usage")?;
            super::audit::write_usage(&mut w, usage)?;
        }
        if let Some(u) = r.unsure {
            w.key("unsure")?;
            w.string(u)?;
        }
    }
    w.end_object()
}

/// One recorded cycle, as [`Recorded::next_cycle`] gives it.
pub struct Replayed<'a> {
    pub time: u64,
    /// The cycle's number (0 when the line does not say).
    pub cycle: u64,
    /// The first request of the cycle overflowed the context (see [`ExchangeRecord`]).
    pub overflow_retried: bool,
    pub inbox: Option<&'a str>,
    pub prompt: Option<&'a str>,
    /// The reply, or the recorded error.
    pub reply: core::result::Result<RecordedReply<'a>, crate::error::Error>,
}

/// A recorded reply.
pub struct RecordedReply<'a> {
    pub content: &'a str,
    pub reasoning: Option<&'a str>,
    pub finish_reason: &'a str,
    pub usage: Option<(u64, u64)>,
    /// An outline's items the model wrote unsurely, one a line, when the run recorded any.
    pub unsure: Option<&'a str>,
}

/// Reads an exchange log back, a line at a time, in bounded memory.
pub struct Recorded {
    reader: BufReader<File>,
    line: Vec<u8>,
    doc: Document,
    path: PathBuf,
    line_no: u64,
}

impl Recorded {
    /// Opens `exchange.jsonl`.
    pub fn open(path: &Path) -> Result<Recorded> {
        let f = File::open(path).map_err(|e| err!(NotFound, "cannot open exchange log {}: {}", path.display(), e))?;
        Ok(Recorded {
            reader: BufReader::new(f),
            line: Vec::with_capacity(EXCHANGE_LINE_MAX_BYTES),
            doc: Document::with_capacity(EXCHANGE_LINE_MAX_NODES, EXCHANGE_LINE_MAX_BYTES),
            path: path.to_path_buf(),
            line_no: 0,
        })
    }

    /// The next recorded cycle, or `None` at the end (a torn last line counts as the end).
    pub fn next_cycle(&mut self) -> Result<Option<Replayed<'_>>> {
        loop {
            self.line.clear();
            let n = (&mut self.reader)
                .take(EXCHANGE_LINE_MAX_BYTES as u64 + 1)
                .read_until(b'\n', &mut self.line)
                .map_err(|e| err!(Io, "cannot read {}: {}", self.path.display(), e))?;
            if n == 0 {
                return Ok(None);
            }
            self.line_no += 1;
            if self.line.len() > EXCHANGE_LINE_MAX_BYTES {
                bail!(
                    CapacityExceeded,
                    "{} line {} is longer than {} bytes",
                    self.path.display(),
                    self.line_no,
                    EXCHANGE_LINE_MAX_BYTES
                );
            }
            if self.line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if !self.line.ends_with(b"\n") {
                // A crash while appending: the cycle never completed.
                return Ok(None);
            }
            self.doc
                .parse(&self.line)
                .map_err(|e| e.context(format_args!("{} line {}", self.path.display(), self.line_no)))?;
            break;
        }
        let root = self.doc.root();
        let (path, line_no) = (&self.path, self.line_no);
        let text = |key: &str| text_member_at(root, key, path, line_no);
        let time = root.get("time").and_then(|v| v.as_u64()).unwrap_or(0);
        let inbox = text("inbox")?;
        let prompt = text("prompt")?;
        let reply = match text("error")? {
            Some(code) => {
                let code = Code::from_name(code).unwrap_or(Code::LlmError);
                // A hand-written error line may leave its message out.
                let message = text("message")?.unwrap_or("recorded failure");
                Err(crate::error::Error::new(code, crate::site!(), format_args!("{}", message)))
            }
            None => Ok(RecordedReply {
                // Written on every reply line: one without it was not written by a run.
                content: text("content")?.ok_or_else(|| {
                    err!(JsonInvalid, "{} line {} has neither \"content\" nor \"error\"", path.display(), line_no)
                })?,
                reasoning: text("reasoning")?,
                finish_reason: text("finish_reason")?.unwrap_or("stop"),
                unsure: text("unsure")?,
                usage: root.get("usage").map(|u| {
                    (
                        u.get("prompt_tokens").and_then(|v| v.as_u64()).unwrap_or(0),
                        u.get("completion_tokens").and_then(|v| v.as_u64()).unwrap_or(0),
                    )
                }),
            }),
        };
        let overflow_retried = root.get("overflow_retried").and_then(|v| v.as_bool()).unwrap_or(false);
        let cycle = root.get("cycle").and_then(|v| v.as_u64()).unwrap_or(0);
        Ok(Some(Replayed { time, cycle, overflow_retried, inbox, prompt, reply }))
    }
}

/// [`text_member`], its error naming the file and the line (one function: a replayed line
/// reads six members).
#[inline(never)]
fn text_member_at<'d>(root: Value<'d>, key: &str, path: &Path, line_no: u64) -> Result<Option<&'d str>> {
    text_member(root, key).map_err(|e| e.context(format_args!("{} line {}", path.display(), line_no)))
}

/// The text member `key` of a recorded line: `None` when it is absent or null, an error when it
/// is anything but a string (a number where text belongs would otherwise replay as no text).
fn text_member<'d>(root: Value<'d>, key: &str) -> Result<Option<&'d str>> {
    let Some(v) = root.get(key) else { return Ok(None) };
    match v.typed() {
        Typed::Null => Ok(None),
        Typed::String(s) => Ok(Some(s)),
        _ => bail!(JsonInvalid, "\"{}\" is a JSON {}, not a string", key, v.kind().name()),
    }
}

use std::io::Read as _;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Reads `lines` as an exchange log: each cycle's reply (or recorded error), then the error
    /// that stopped the reading, if any.
    fn read(lines: &str) -> Vec<core::result::Result<String, Error>> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("lkj-exchange-{}-{}.jsonl", std::process::id(), n));
        std::fs::write(&path, lines).unwrap();
        let mut rec = Recorded::open(&path).unwrap();
        let mut out = Vec::new();
        loop {
            match rec.next_cycle() {
                Ok(Some(c)) => out.push(Ok(match c.reply {
                    Ok(r) => format!("{:?} {:?} {}", c.inbox, c.prompt, r.content),
                    Err(e) => format!("{}: {}", e.code(), e.message()),
                })),
                Ok(None) => break,
                Err(e) => {
                    out.push(Err(e));
                    break;
                }
            }
        }
        std::fs::remove_file(&path).unwrap();
        out
    }

    #[test]
    fn recorded_lines_read_back() {
        let got = read(concat!(
            "{\"time\":1,\"prompt\":\"p\",\"content\":\"c\"}\n",
            "{\"time\":2,\"inbox\":null,\"error\":\"LLM_TIMEOUT\",\"message\":\"slow\"}\n",
            "{\"time\":3,\"error\":\"LLM_TIMEOUT\"}\n",
        ));
        let got: Vec<String> = got.into_iter().map(Result::unwrap).collect();
        assert_eq!(got, ["None Some(\"p\") c", "LLM_TIMEOUT: slow", "LLM_TIMEOUT: recorded failure"]);
    }

    #[test]
    fn a_text_member_of_another_type_or_a_reply_without_content_is_an_error() {
        for (line, says) in [
            ("{\"time\":1,\"content\":42}", "\"content\" is a JSON number, not a string"),
            ("{\"time\":1,\"inbox\":[\"x\"],\"content\":\"c\"}", "\"inbox\" is a JSON array"),
            ("{\"time\":1,\"error\":\"IO\",\"message\":{}}", "\"message\" is a JSON object"),
            ("{\"time\":1,\"prompt\":\"p\"}", "has neither \"content\" nor \"error\""),
        ] {
            let got = read(&format!("{line}\n"));
            let e = got.last().unwrap().as_ref().unwrap_err();
            assert_eq!(e.code(), Code::JsonInvalid, "{line}");
            assert!(e.message().contains(says) && e.message().contains("line 1"), "{line}: {e}");
        }
    }
}
