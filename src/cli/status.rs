//! `lkjagent status [--json]`: where the agent stands, read from its files without changing
//! them: state and iteration, working-memory use against its budget, the store's size, the last
//! cycle (from `memory.json` and the last line of `logs/audit.jsonl`), the last error, and the
//! messages waiting in the inbox.
//!
//! Every part is optional: a fresh data directory (no `memory.json`, no store, no cycle yet)
//! is a normal answer, not an error. It can run while the agent runs: `memory.json` is only ever
//! replaced whole (atomic rename), the store is opened only when that writes nothing (see
//! `cli::util::open_store_read_only`), and a torn last audit line is skipped.

use super::args::Args;
use super::memory::{read_memory, MemoryRead};
use super::util::{open_store_read_only, open_store_view, say, write_all, StoreRead, Time};
use crate::error::Result;
use crate::json::{Document, Kind, Typed, Value, Writer};
use crate::limits::{AUDIT_LINE_MAX_BYTES, INBOX_MAX_BYTES, WORKING_TEXT_MAX_BYTES};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

const HELP: &str = "\
lkjagent status: where the agent stands

usage: lkjagent [--data DIR] status [--json]

Shows the state and iteration, working-memory use against its budget, the store's size, the
last cycle (time, cycle, state -> next state, latency, actions), the last error, and the
messages waiting in the inbox. Changes nothing; safe to run while the agent runs. A fresh data
directory (nothing run yet) is reported as such.

options:
  --json        one JSON object instead of text
  --help, -h    this help

exit codes: 0 success, 1 the data directory or a file could not be read, 2 usage error
";

/// Runs `lkjagent status` on the process's stdout.
pub fn run(args: Args, data: &Path) -> Result<i32> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let code = exec(args, data, &mut out)?;
    out.flush().map_err(super::util::write_error)?;
    Ok(code)
}

/// Runs `lkjagent status` with the given output.
pub fn exec(mut args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    if args.help() {
        write_all(out, HELP)?;
        return Ok(super::EXIT_OK);
    }
    let json = args.flag("--json");
    args.finish("status")?;
    if !data.is_dir() {
        bail!(NotFound, "data directory {} does not exist; pass --data DIR or set LKJAGENT_DATA", data.display());
    }
    let s = Status::read(data)?;
    if json {
        let mut text = String::new();
        s.write_json(data, &mut text)?;
        text.push('\n');
        write_all(out, &text)?;
    } else {
        s.write_text(data, out)?;
    }
    Ok(super::EXIT_OK)
}

/// The store part of the status.
enum StorePart {
    Absent,
    NotRead(String),
    Open { entries: usize, log_bytes: u64 },
}

/// The last audit line, as far as status shows it.
#[derive(Default)]
struct LastCycle {
    time: u64,
    cycle: u64,
    state: String,
    next_state: String,
    latency_ms: u64,
    /// `(type, key, ok)` of each action.
    actions: Vec<(String, String, bool)>,
    error: Option<String>,
}

/// Everything status reports.
struct Status {
    memory: Option<Box<super::memory::MemoryView>>,
    store: StorePart,
    last_cycle_time: Option<u64>,
    audit: Option<LastCycle>,
    inbox: usize,
    /// The cold store: distinct keys and bytes (`None`: there is none yet).
    cold: Option<(u64, u64)>,
}

impl Status {
    fn read(data: &Path) -> Result<Status> {
        let memory = match read_memory(data)? {
            MemoryRead::Missing => None,
            MemoryRead::Found(v) => Some(v),
        };
        // The checkpoint's header says it when it covers the log, with the log's tail laid
        // over it when it has one; else the store, opened whole.
        let store = match open_store_view(data) {
            Some(mut v) => {
                v.say_warning();
                StorePart::Open { entries: v.len(), log_bytes: v.log_bytes() }
            }
            None => match open_store_read_only(data)? {
                StoreRead::Absent => StorePart::Absent,
                StoreRead::NotOpened { why, .. } => StorePart::NotRead(why),
                StoreRead::Open(s) => StorePart::Open { entries: s.len(), log_bytes: s.log_bytes() },
            },
        };
        let last_cycle_time = memory
            .as_ref()
            .and_then(|m| m.file.agent.get("last_cycle"))
            .and_then(|t| crate::bytes::parse_u64(t.trim()));
        let logs = data.join("logs");
        let audit = match last_audit_line(&logs.join("audit.jsonl"))? {
            Some(c) => Some(c),
            None => last_audit_line(&logs.join("audit.jsonl.1"))?,
        };
        let inbox = count_messages(&data.join("inbox"))? + count_messages(&data.join("inbox.taken"))?;
        // Each key once (its copies are one entry): from store.cold.keys and the groups after
        // it when it is usable, else read in two passes, nothing kept but a hash per key. A
        // key both live and cold (saved again after it went cold) counts here too.
        let cold = match data.join(crate::memory::store::cold::COLD_NAME).exists() {
            false => None,
            true => {
                let st = match crate::memory::store::cold::keys::current(data, None)? {
                    Some(st) => st,
                    None => crate::memory::store::cold::scan_current(data, &|_| false, &mut |_| Ok(true))?,
                };
                Some((st.current, st.bytes))
            }
        };
        Ok(Status { memory, store, last_cycle_time, audit, inbox, cold })
    }

    fn fresh(&self) -> bool {
        self.memory.is_none() && matches!(self.store, StorePart::Absent) && self.audit.is_none()
    }

    fn last_error(&self) -> Option<&str> {
        self.memory.as_ref().and_then(|m| m.file.agent.get("last_error")).filter(|e| !e.is_empty())
    }

    fn write_text(&self, data: &Path, out: &mut dyn Write) -> Result<()> {
        say(out, format_args!("data        {}", data.display()))?;
        if self.fresh() {
            say(out, format_args!("fresh data directory: no memory.json, no store, no cycle yet"))?;
            say(out, format_args!("            'lkjagent run' starts the agent (state thinking, iteration 0)"))?;
        }
        match &self.memory {
            None if !self.fresh() => say(out, format_args!("memory      no memory.json: the agent starts fresh"))?,
            None => {}
            Some(m) => {
                let f = &m.file;
                say(out, format_args!("state       {} (iteration {})", f.state.as_str(), f.iteration))?;
                say(
                    out,
                    format_args!(
                        "memory      {} entries, {} of {} bytes ({})",
                        f.working.len(),
                        f.working.text_bytes(),
                        WORKING_TEXT_MAX_BYTES,
                        m.path.display()
                    ),
                )?;
                for p in &m.problems {
                    say(out, format_args!("  problem   {} (the agent cannot use the file as it is)", p))?;
                }
                for n in &m.notes {
                    say(out, format_args!("  note      {}", n))?;
                }
            }
        }
        match &self.store {
            StorePart::Absent => say(out, format_args!("store       none yet"))?,
            StorePart::NotRead(why) => say(out, format_args!("store       not read: {}", why))?,
            StorePart::Open { entries, log_bytes } => {
                say(out, format_args!("store       {} entries, {} bytes of log", entries, log_bytes))?
            }
        }
        if let Some((keys, bytes)) = self.cold {
            say(out, format_args!("cold store  {} keys, {} bytes", keys, bytes))?;
        }
        match (&self.audit, self.last_cycle_time) {
            (Some(c), _) => {
                let mut actions = String::new();
                for (i, (kind, key, ok)) in c.actions.iter().enumerate() {
                    if i > 0 {
                        actions.push_str(", ");
                    }
                    actions.push_str(kind);
                    if !key.is_empty() {
                        actions.push(' ');
                        actions.push_str(key);
                    }
                    actions.push_str(if *ok { " ok" } else { " failed" });
                }
                if actions.is_empty() {
                    actions.push_str("no action");
                }
                say(
                    out,
                    format_args!(
                        "last cycle  {} at {}: {} -> {}, {} ms, {}{}",
                        c.cycle,
                        Time(c.time),
                        c.state,
                        c.next_state,
                        c.latency_ms,
                        actions,
                        ErrorSuffix(c.error.as_deref())
                    ),
                )?;
            }
            (None, Some(t)) => say(out, format_args!("last cycle  at {} (no audit log)", Time(t)))?,
            (None, None) => say(out, format_args!("last cycle  none yet"))?,
        }
        if let Some(e) = self.last_error() {
            say(out, format_args!("last error  {}", e))?;
        }
        match self.inbox {
            0 => say(out, format_args!("inbox       empty"))?,
            1 => say(out, format_args!("inbox       1 message waiting"))?,
            n => say(out, format_args!("inbox       {} messages waiting", n))?,
        }
        Ok(())
    }

    fn write_json(&self, data: &Path, text: &mut String) -> Result<()> {
        let mut w = Writer::pretty(text as &mut dyn core::fmt::Write);
        w.begin_object()?;
        w.key("data")?;
        w.string(&data.display().to_string())?;
        w.key("fresh")?;
        w.bool(self.fresh())?;
        let fresh = crate::memory::file::MemoryFile::new();
        let f = self.memory.as_ref().map_or(&fresh, |m| &m.file);
        w.key("state")?;
        w.string(f.state.as_str())?;
        w.key("iteration")?;
        w.u64(f.iteration)?;
        w.key("working_memory")?;
        w.begin_object()?;
        w.key("file")?;
        match &self.memory {
            Some(m) => w.string(&m.path.display().to_string())?,
            None => w.null()?,
        }
        w.key("entries")?;
        w.u64(f.working.len() as u64)?;
        w.key("bytes")?;
        w.u64(f.working.text_bytes() as u64)?;
        w.key("budget_bytes")?;
        w.u64(WORKING_TEXT_MAX_BYTES as u64)?;
        w.key("problems")?;
        w.begin_array()?;
        for p in self.memory.iter().flat_map(|m| m.problems.iter()) {
            w.string(p)?;
        }
        w.end_array()?;
        w.key("notes")?;
        w.begin_array()?;
        for n in self.memory.iter().flat_map(|m| m.notes.iter()) {
            w.string(n)?;
        }
        w.end_array()?;
        w.end_object()?;
        w.key("store")?;
        w.begin_object()?;
        match &self.store {
            StorePart::Absent => {
                w.key("status")?;
                w.string("absent")?;
            }
            StorePart::NotRead(why) => {
                w.key("status")?;
                w.string("not_read")?;
                w.key("reason")?;
                w.string(why)?;
            }
            StorePart::Open { entries, log_bytes } => {
                w.key("status")?;
                w.string("ok")?;
                w.key("entries")?;
                w.u64(*entries as u64)?;
                w.key("log_bytes")?;
                w.u64(*log_bytes)?;
            }
        }
        if let Some((keys, bytes)) = self.cold {
            w.key("cold_keys")?;
            w.u64(keys)?;
            w.key("cold_bytes")?;
            w.u64(bytes)?;
        }
        w.end_object()?;
        w.key("last_cycle")?;
        match (&self.audit, self.last_cycle_time) {
            (Some(c), _) => {
                w.begin_object()?;
                w.key("time")?;
                w.string(&Time(c.time).to_string())?;
                w.key("cycle")?;
                w.u64(c.cycle)?;
                w.key("state")?;
                w.string(&c.state)?;
                w.key("next_state")?;
                w.string(&c.next_state)?;
                w.key("latency_ms")?;
                w.u64(c.latency_ms)?;
                w.key("actions")?;
                w.begin_array()?;
                for (kind, key, ok) in &c.actions {
                    w.begin_object()?;
                    w.key("type")?;
                    w.string(kind)?;
                    w.key("key")?;
                    w.string(key)?;
                    w.key("ok")?;
                    w.bool(*ok)?;
                    w.end_object()?;
                }
                w.end_array()?;
                w.key("error")?;
                match &c.error {
                    Some(e) => w.string(e)?,
                    None => w.null()?,
                }
                w.end_object()?;
            }
            (None, Some(t)) => {
                w.begin_object()?;
                w.key("time")?;
                w.string(&Time(t).to_string())?;
                w.end_object()?;
            }
            (None, None) => w.null()?,
        }
        w.key("last_error")?;
        match self.last_error() {
            Some(e) => w.string(e)?,
            None => w.null()?,
        }
        w.key("inbox_pending")?;
        w.u64(self.inbox as u64)?;
        w.end_object()?;
        w.finish()
    }
}

/// `, error CODE` after the last cycle's summary when it ended in an error; nothing otherwise.
struct ErrorSuffix<'a>(Option<&'a str>);

impl core::fmt::Display for ErrorSuffix<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some(code) => write!(f, ", error {}", code),
            None => Ok(()),
        }
    }
}

/// The last whole line of an audit log that parses as one of its records; `None` when there is
/// no such file or line.
fn last_audit_line(path: &Path) -> Result<Option<LastCycle>> {
    let f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!(Io, "cannot open {}: {}", path.display(), e),
    };
    let len = f.metadata().map_err(|e| err!(Io, "cannot read {}: {}", path.display(), e))?.len();
    // Two lines' worth: the last whole line even when a torn one follows it.
    let window = len.min(2 * AUDIT_LINE_MAX_BYTES as u64 + 2);
    let start = len - window;
    let mut buf = vec![0u8; window as usize];
    f.read_exact_at(&mut buf, start).map_err(|e| err!(Io, "cannot read {}: {}", path.display(), e))?;
    let mut doc = Document::with_capacity(1024, AUDIT_LINE_MAX_BYTES);
    let mut lines = buf.split(|&b| b == b'\n').collect::<Vec<_>>();
    if start > 0 && !lines.is_empty() {
        lines.remove(0); // begins before the window: not whole
    }
    for line in lines.iter().rev() {
        if line.iter().all(u8::is_ascii_whitespace) || doc.parse(line).is_err() {
            continue;
        }
        let root = doc.root();
        if root.kind() != Kind::Object {
            continue;
        }
        let num = |k: &str| root.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
        // The agent writes every text member on every line: a line where one is missing or
        // not a string is not its record, and is passed over like a torn one.
        let text = |v: Option<Value<'_>>| v.and_then(|v| v.as_str()).map(str::to_string);
        let actions: Option<Vec<_>> = root
            .get("actions")
            .into_iter()
            .flat_map(|a| a.items())
            .map(|a| {
                Some((
                    text(a.get("type"))?,
                    text(a.get("key"))?,
                    a.get("ok").and_then(|v| v.as_bool()).unwrap_or(false),
                ))
            })
            .collect();
        let error = match root.get("error").map(|v| v.typed()) {
            None | Some(Typed::Null) => None,
            Some(Typed::String(code)) => Some(code.to_string()),
            Some(_) => continue,
        };
        let (Some(state), Some(next_state), Some(actions)) =
            (text(root.get("state")), text(root.get("next_state")), actions)
        else {
            continue;
        };
        return Ok(Some(LastCycle {
            time: num("time"),
            cycle: num("cycle"),
            state,
            next_state,
            latency_ms: num("latency_ms"),
            actions,
            error,
        }));
    }
    Ok(None)
}

/// Non-blank lines of an inbox file (0 if it does not exist).
fn count_messages(path: &Path) -> Result<usize> {
    let f = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => bail!(Io, "cannot open {}: {}", path.display(), e),
    };
    // `send` never lets the inbox pass INBOX_MAX_BYTES; a larger file is counted in its first part.
    let mut bytes = Vec::new();
    f.take(INBOX_MAX_BYTES as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| err!(Io, "cannot read {}: {}", path.display(), e))?;
    Ok(bytes.split(|&b| b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace)).count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_audit_line_with_a_text_member_of_another_type_is_passed_over() {
        let path = std::env::temp_dir().join(format!("lkj-status-audit-{}.jsonl", std::process::id()));
        let good = r#"{"time":1,"cycle":4,"state":"thinking","next_state":"evaluating","latency_ms":9,"actions":[{"type":"storage_save","key":"a","ok":true}],"error":null}"#;
        let lines = [
            // Each of these is not a record the agent wrote: the good line before it is shown.
            r#"{"time":2,"cycle":5,"state":7,"next_state":"thinking","actions":[],"error":null}"#,
            r#"{"time":2,"cycle":5,"state":"thinking","next_state":"thinking","actions":[{"type":3,"key":"a"}],"error":null}"#,
            r#"{"time":2,"cycle":5,"state":"thinking","next_state":"thinking","actions":[],"error":{}}"#,
            r#"{"time":2,"cycle":5,"next_state":"thinking","actions":[],"error":null}"#,
        ];
        for bad in lines {
            std::fs::write(&path, format!("{good}\n{bad}\n")).unwrap();
            let c = last_audit_line(&path).unwrap().unwrap();
            assert_eq!((c.cycle, c.state.as_str(), c.next_state.as_str()), (4, "thinking", "evaluating"), "{bad}");
            assert_eq!(c.actions, [("storage_save".to_string(), "a".to_string(), true)]);
            assert_eq!(c.error, None);
        }
        let errored =
            r#"{"time":2,"cycle":5,"state":"thinking","next_state":"thinking","actions":[],"error":"LLM_TIMEOUT"}"#;
        std::fs::write(&path, format!("{good}\n{errored}\n")).unwrap();
        let c = last_audit_line(&path).unwrap().unwrap();
        assert_eq!((c.cycle, c.error.as_deref()), (5, Some("LLM_TIMEOUT")));
        assert_eq!(ErrorSuffix(c.error.as_deref()).to_string(), ", error LLM_TIMEOUT");
        assert_eq!(ErrorSuffix(None).to_string(), "");
        std::fs::remove_file(&path).unwrap();
    }
}
