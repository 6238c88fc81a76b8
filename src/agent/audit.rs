//! The audit log: one JSON line per cycle in `logs/audit.jsonl` (docs/design.md §4), size-capped.
//!
//! Each line holds the time, run id, cycle, state and next state, the prompt's SHA-256, size and
//! estimated tokens, the reply's size, the latency, the token usage the server reported (and the
//! prompt tokens it reused from its cache), whether the reply was valid, why the model stopped,
//! how the reply was constrained and with which seed, every action with its result, and the error code if the cycle failed. A user can answer "what did
//! the agent do at 3 a.m., and what did it send?" with `grep`, and tell from the digests whether
//! two cycles sent the same prompt.
//!
//! Lines are appended with one `write` each and `fdatasync`ed. When the file passes
//! [`AUDIT_LOG_MAX_BYTES`] it is renamed to `audit.jsonl.1` (replacing the older one) and a new
//! file starts, so the log never holds more than twice the cap. A crash can leave a torn last
//! line; readers skip a line that does not parse. The file is never opened through a symbolic
//! link (an `IO` error that names it; see `memory::nofollow`); rotation renames, which replaces
//! a link at `audit.jsonl.1` rather than writing through it.

use crate::error::{Code, Result};
use crate::fixed::FixedBuf;
use crate::json::Writer;
use crate::limits::{AUDIT_LINE_MAX_BYTES, AUDIT_LOG_MAX_BYTES};
use crate::memory::nofollow;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// What one action did, for the audit log and the status line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ActionRecord<'a> {
    /// The action type (`storage_save`, ...).
    pub kind: &'a str,
    /// The key it acted on (normalised tags), or empty.
    pub key: &'a str,
    /// Whether it succeeded.
    pub ok: bool,
    /// The result text as logged in `command_log`.
    pub result: &'a str,
}

/// One cycle, as the audit log records it.
#[derive(Clone, Copy, Debug)]
pub struct CycleRecord<'a> {
    pub time: u64,
    pub run_id: &'a str,
    pub cycle: u64,
    pub state: &'a str,
    pub next_state: &'a str,
    pub prompt_sha256: &'a [u8; 32],
    pub prompt_bytes: usize,
    pub prompt_tokens_est: u64,
    pub reply_bytes: usize,
    pub latency_ms: u64,
    /// `(prompt_tokens, completion_tokens)` as the server reported them.
    pub usage: Option<(u64, u64)>,
    /// Prompt tokens the server reused from its cache; `None` (written `null`): it did not say.
    pub cached_tokens: Option<u64>,
    /// The reply held a usable instruction.
    pub valid: bool,
    /// Why the model stopped (`stop`, `length`, ...).
    pub finish: &'a str,
    /// How the reply was constrained: `grammar`, `json_schema` or `off`.
    pub constrain: &'a str,
    /// The sampling seed sent (`None` for the replay provider's script and recorded runs).
    pub seed: Option<u64>,
    pub actions: &'a [ActionRecord<'a>],
    /// Problems found in the reply (stable codes of the reply protocol).
    pub problems: &'a [&'a str],
    pub error: Option<Code>,
    /// Entries a clean-up took out of the store this cycle (`memory.cleanup`), and whether they
    /// were deleted rather than moved to the cold store; written only when there were some.
    pub cleanup: (usize, bool),
}

/// `logs/` of data directory `dir`, created if needed. A link to a directory is followed. An
/// entry there that is not a directory (a symbolic link whose target is missing, a file) is an
/// `IO` error that names it and says what to do: creating the directory fails on it with a
/// bare "File exists", which names neither.
pub fn logs_dir(dir: &Path) -> Result<PathBuf> {
    let logs = dir.join("logs");
    let Err(e) = std::fs::create_dir_all(&logs) else { return Ok(logs) };
    match std::fs::symlink_metadata(&logs) {
        Ok(m) if m.file_type().is_symlink() => match (std::fs::read_link(&logs), std::fs::metadata(&logs)) {
            (Ok(target), Err(t)) if t.kind() == std::io::ErrorKind::NotFound => bail!(
                Io,
                "{} is a symbolic link to {}, which does not exist; remove the link or point it at a directory",
                logs.display(),
                target.display()
            ),
            (Ok(target), Ok(t)) if !t.is_dir() => bail!(
                Io,
                "{} is a symbolic link to {}, which is not a directory; remove the link or point it at a directory",
                logs.display(),
                target.display()
            ),
            _ => bail!(Io, "cannot create {} (a symbolic link): {}", logs.display(), e),
        },
        Ok(m) if !m.is_dir() => bail!(
            Io,
            "{} is a file, not a directory; move it away so the agent can create its logs directory there",
            logs.display()
        ),
        _ => bail!(Io, "cannot create {}: {}", logs.display(), e),
    }
}

/// The audit log file and its line buffer (reserved once).
pub struct AuditLog {
    path: PathBuf,
    old: PathBuf,
    file: Option<File>,
    size: u64,
    cap: u64,
    line: FixedBuf,
}

impl AuditLog {
    /// Opens (creating `logs/` if needed) the audit log of data directory `dir`.
    pub fn open(dir: &Path) -> Result<AuditLog> {
        AuditLog::open_capped(dir, AUDIT_LOG_MAX_BYTES as u64)
    }

    /// Opens the audit log with another size cap (tests use a small one).
    pub fn open_capped(dir: &Path, cap: u64) -> Result<AuditLog> {
        let logs = logs_dir(dir)?;
        let path = logs.join("audit.jsonl");
        let mut log = AuditLog {
            old: logs.join("audit.jsonl.1"),
            path,
            file: None,
            size: 0,
            cap,
            line: FixedBuf::with_capacity("audit line (limits::AUDIT_LINE_MAX_BYTES)", AUDIT_LINE_MAX_BYTES),
        };
        log.reopen()?;
        Ok(log)
    }

    fn reopen(&mut self) -> Result<()> {
        // Never through a link (the `logs` directory itself may be one, on purpose).
        let f = nofollow::open(&self.path, OpenOptions::new().create(true).append(true))?
            .map_err(|e| err!(PersistFailed, "cannot open {}: {}", self.path.display(), e))?;
        self.size = f.metadata().map(|m| m.len()).unwrap_or(0);
        self.file = Some(f);
        Ok(())
    }

    /// Appends one cycle's line.
    pub fn append(&mut self, r: &CycleRecord<'_>) -> Result<()> {
        self.line.clear();
        if let Err(e) = write_record(&mut self.line, r) {
            // A line that does not fit is replaced by a short one saying so: the cycle is still
            // on record, and the cap is never passed.
            self.line.clear();
            self.line.format(format_args!(
                "{{\"time\":{},\"run\":\"{}\",\"cycle\":{},\"error\":\"{}\",\"note\":\"audit line too long\"}}",
                r.time,
                r.run_id,
                r.cycle,
                e.code().as_str()
            ))?;
        }
        self.line.push_str("\n")?;
        if self.size > 0 && self.size + self.line.len() as u64 > self.cap {
            self.file = None;
            std::fs::rename(&self.path, &self.old)
                .map_err(|e| err!(PersistFailed, "cannot rotate {}: {}", self.path.display(), e))?;
            self.reopen()?;
        }
        let Some(f) = self.file.as_mut() else { bail!(PersistFailed, "audit log {} is not open", self.path.display()) };
        f.write_all(self.line.as_slice())
            .and_then(|()| f.sync_data())
            .map_err(|e| err!(PersistFailed, "cannot append to {}: {}", self.path.display(), e))?;
        self.size += self.line.len() as u64;
        Ok(())
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn write_record(out: &mut FixedBuf, r: &CycleRecord<'_>) -> Result<()> {
    let mut hex = [0u8; 64];
    let mut w = Writer::compact(out as &mut dyn core::fmt::Write);
    w.begin_object()?;
    w.key("time")?;
    w.u64(r.time)?;
    w.key("run")?;
    w.string(r.run_id)?;
    w.key("cycle")?;
    w.u64(r.cycle)?;
    w.key("state")?;
    w.string(r.state)?;
    w.key("next_state")?;
    w.string(r.next_state)?;
    w.key("prompt_sha256")?;
    w.string(hex_digest(r.prompt_sha256, &mut hex))?;
    w.key("prompt_bytes")?;
    w.u64(r.prompt_bytes as u64)?;
    w.key("prompt_tokens_est")?;
    w.u64(r.prompt_tokens_est)?;
    w.key("reply_bytes")?;
    w.u64(r.reply_bytes as u64)?;
    w.key("latency_ms")?;
    w.u64(r.latency_ms)?;
    w.key("usage")?;
    match r.usage {
        Some(usage) => write_usage(&mut w, usage)?,
        None => w.null()?,
    }
    w.key("cached_tokens")?;
    match r.cached_tokens {
        Some(n) => w.u64(n)?,
        None => w.null()?,
    }
    w.key("valid")?;
    w.bool(r.valid)?;
    w.key("finish")?;
    w.string(r.finish)?;
    w.key("constrain")?;
    w.string(r.constrain)?;
    w.key("seed")?;
    match r.seed {
        Some(n) => w.u64(n)?,
        None => w.null()?,
    }
    w.key("actions")?;
    w.begin_array()?;
    for a in r.actions {
        w.begin_object()?;
        w.key("type")?;
        w.string(a.kind)?;
        w.key("key")?;
        w.string(a.key)?;
        w.key("ok")?;
        w.bool(a.ok)?;
        w.key("result")?;
        w.string(a.result)?;
        w.end_object()?;
    }
    w.end_array()?;
    w.key("problems")?;
    w.begin_array()?;
    for p in r.problems {
        w.string(p)?;
    }
    w.end_array()?;
    w.key("error")?;
    match r.error {
        Some(code) => w.string(code.as_str())?,
        None => w.null()?,
    }
    if r.cleanup.0 > 0 {
        w.key("cleanup")?;
        w.begin_object()?;
        w.key("moved")?;
        w.u64(r.cleanup.0 as u64)?;
        w.key("to")?;
        w.string(if r.cleanup.1 { "deleted" } else { "cold" })?;
        w.end_object()?;
    }
    w.end_object()
}

/// Writes the token usage a server reported as `{"prompt_tokens": p, "completion_tokens": c}`
/// (the field names of the OpenAI API and of the replay script), for the audit and exchange logs.
pub fn write_usage(w: &mut Writer<'_, dyn core::fmt::Write>, (prompt, completion): (u64, u64)) -> Result<()> {
    w.begin_object()?;
    w.key("prompt_tokens")?;
    w.u64(prompt)?;
    w.key("completion_tokens")?;
    w.u64(completion)?;
    w.end_object()
}

/// Lowercase hex of a digest, into a caller's buffer.
pub fn hex_digest<'b>(digest: &[u8; 32], buf: &'b mut [u8; 64]) -> &'b str {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for (pair, b) in buf.chunks_exact_mut(2).zip(digest.iter()) {
        if let [hi, lo] = pair {
            *hi = HEX.get(usize::from(b >> 4)).copied().unwrap_or(b'0');
            *lo = HEX.get(usize::from(b & 15)).copied().unwrap_or(b'0');
        }
    }
    // Hex digits only: all of it is text.
    crate::bytes::utf8_prefix(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Document;

    #[test]
    fn lines_parse_and_the_log_rotates_at_its_cap() {
        let dir = crate::testing::temp_dir("audit");
        let cap = 4096u64;
        let mut log = AuditLog::open_capped(&dir, cap).unwrap();
        let digest = crate::sha256::Sha256::digest(b"abc");
        let actions = [ActionRecord { kind: "storage_save", key: "a,b", ok: true, result: "saved \"x\"" }];
        let rec = CycleRecord {
            time: 1,
            run_id: "r1",
            cycle: 7,
            state: "commanding",
            next_state: "evaluating",
            prompt_sha256: &digest,
            prompt_bytes: 10,
            prompt_tokens_est: 3,
            reply_bytes: 5,
            latency_ms: 12,
            usage: Some((3, 4)),
            cached_tokens: Some(2),
            valid: true,
            finish: "stop",
            constrain: "grammar",
            seed: Some(7),
            actions: &actions,
            problems: &["UNKNOWN_ACTION"],
            error: None,
            cleanup: (0, false),
        };
        log.append(&rec).unwrap();
        let text = std::fs::read_to_string(log.path()).unwrap();
        let mut doc = Document::with_capacity(64, 1024);
        doc.parse(text.trim_end().as_bytes()).unwrap();
        let root = doc.root();
        assert_eq!(root.path("cycle").and_then(|v| v.as_u64()), Some(7));
        assert_eq!(
            root.path("prompt_sha256").and_then(|v| v.as_str()),
            Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        assert_eq!(root.path("actions.[0].result").and_then(|v| v.as_str()), Some("saved \"x\""));
        assert_eq!(root.path("problems.[0]").and_then(|v| v.as_str()), Some("UNKNOWN_ACTION"));
        assert!(root.get("error").unwrap().is_null());
        let line_len = text.len() as u64;
        let per_file = cap / line_len;
        for _ in 0..per_file + 1 {
            log.append(&rec).unwrap();
        }
        let cur = std::fs::metadata(dir.join("logs/audit.jsonl")).unwrap().len();
        let old = std::fs::metadata(dir.join("logs/audit.jsonl.1")).unwrap().len();
        assert!(cur <= cap && old <= cap);
        assert!(cur > 0 && old > 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
