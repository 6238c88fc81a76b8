//! Helpers the `lkjagent` subcommands share: opening the store without changing it
//! ([`open_store_read_only`]), the data directory's lock ([`lock_data_dir`]), output onto an
//! `io::Write` ([`say`], [`write_all`], [`write_error`]), bounded reading of a named input
//! ([`read_limited`]) and time formatting ([`Time`]).

use crate::error::Result;
use crate::memory::log::{self as storelog, Record};
use crate::memory::store::view::tail::InPlace;
use crate::memory::store::{Store, LOG_NAME};
use core::fmt;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

// -------------------------------------------------------------------------------------------
// Opening the store without changing it
// -------------------------------------------------------------------------------------------

/// What [`open_store_read_only`] found.
pub enum StoreRead {
    /// No `store.log` yet (the agent creates it).
    Absent,
    /// The file there is not a store log this program can read (the reason says why); it was
    /// not opened. `damaged` when it is not a store log at all (the agent would keep it aside
    /// and start an empty store); otherwise a state the agent sets right on its own.
    NotOpened { why: String, damaged: bool },
    /// The store, opened read-only.
    Open(Box<Store>),
}

/// Opens the store for the commands that only look, while an agent may be running beside them.
///
/// Only the holder of `lkjagent.lock` repairs, truncates, compacts or moves a file. So this
/// opens the log with [`Store::open_read_only`]: nothing is written, and an incomplete last
/// record is a record the agent has not finished writing yet, ignored rather than cut off.
/// A compaction's temporary file is the writer's and is ignored too: the reader reads the live
/// log, which a compaction replaces in one rename. Before opening, the first line is checked to
/// be this format's header, so a foreign file is reported as damaged rather than as an error.
pub fn open_store_read_only(data: &Path) -> Result<StoreRead> {
    open_store_read_only_with(data, false)
}

/// [`open_store_read_only`]; with `whole_log`, every record of the log is read and checked
/// and the checkpoint is not used (for `check`).
pub fn open_store_read_only_with(data: &Path, whole_log: bool) -> Result<StoreRead> {
    let path = data.join(LOG_NAME);
    if crate::memory::nofollow::is_link(&path) {
        let why = "it is a symbolic link; the agent refuses to write through it: replace it by a plain file".into();
        return Ok(StoreRead::NotOpened { why, damaged: true });
    }
    let meta = match fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(StoreRead::Absent),
        Err(e) => bail!(Io, "cannot look at {}: {}", path.display(), e),
    };
    if !meta.is_file() {
        return Ok(StoreRead::NotOpened { why: "it is not a regular file".into(), damaged: true });
    }
    if meta.len() == 0 {
        let why = "it is empty; the agent writes its header at its next start".into();
        return Ok(StoreRead::NotOpened { why, damaged: false });
    }
    let f = File::open(&path).map_err(|e| err!(Io, "cannot open {}: {}", path.display(), e))?;
    // The header: the first line.
    let mut head = [0u8; 256];
    let n = read_at_most(&f, &mut head, 0).map_err(|e| err!(Io, "cannot read {}: {}", path.display(), e))?;
    let head = crate::bytes::take(&head, n);
    let header_ok = head.iter().position(|&b| b == b'\n').and_then(|end| head.get(..end)).is_some_and(|line| {
        matches!(storelog::decode(line), Ok(Record::Header { version, .. })
                if (storelog::FORMAT_VERSION_OLDEST..=storelog::FORMAT_VERSION).contains(&version))
    });
    if !header_ok {
        let why = format!(
            "its first line is not a {} version {} to {} header; the agent keeps it aside and starts a new store at its next start",
            storelog::FORMAT_NAME,
            storelog::FORMAT_VERSION_OLDEST,
            storelog::FORMAT_VERSION
        );
        return Ok(StoreRead::NotOpened { why, damaged: true });
    }
    drop(f);
    let capacity = store_capacity(data);
    let store = if whole_log {
        Store::open_read_only_whole_log(data, capacity)?
    } else {
        Store::open_read_only_with_capacity(data, capacity)?
    };
    Ok(StoreRead::Open(Box::new(store)))
}

/// The store's checkpoint opened for reading in place ([`InPlace`]: `status`, `memory
/// query`, `memory show` and `memory stats` read only what they ask about), when it covers
/// `store.log`, or its first bytes with the records after it laid over it (an agent running
/// between two checkpoints, or killed); `None` otherwise, and the caller opens the store whole
/// with [`open_store_read_only`] (which also says what is wrong with a log it cannot read).
pub fn open_store_view(data: &Path) -> Option<InPlace> {
    if crate::memory::nofollow::is_link(&data.join(LOG_NAME)) {
        return None;
    }
    InPlace::open(data, store_capacity(data)).ok().flatten()
}

/// `memory.store_capacity` from the data directory's `config.json`, or the default when the
/// file or the setting is absent or unreadable (the run itself reports a bad config; a command
/// that only looks at the store still works).
pub fn store_capacity(data: &Path) -> usize {
    use crate::limits::{CONFIG_FILE_MAX_BYTES, STORE_DEFAULT_ENTRIES, STORE_MAX_ENTRIES, STORE_MIN_ENTRIES};
    let Ok(bytes) = read_limited_file(&data.join(crate::agent::config::FILE_NAME), CONFIG_FILE_MAX_BYTES) else {
        return STORE_DEFAULT_ENTRIES;
    };
    let mut doc = crate::json::Document::with_capacity(bytes.len() / 2 + 64, bytes.len() + 64);
    if doc.parse(&bytes).is_err() {
        return STORE_DEFAULT_ENTRIES;
    }
    let n = doc.root().get("memory").and_then(|m| m.get("store_capacity")).and_then(|v| v.as_i64());
    match n {
        Some(n) if n >= STORE_MIN_ENTRIES as i64 && n <= STORE_MAX_ENTRIES as i64 => n as usize,
        _ => STORE_DEFAULT_ENTRIES,
    }
}

/// The whole of a regular file of at most `max` bytes.
fn read_limited_file(path: &Path, max: usize) -> io::Result<Vec<u8>> {
    let f = File::open(path)?;
    let mut bytes = Vec::new();
    f.take(max as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > max {
        return Err(io::Error::other("too large"));
    }
    Ok(bytes)
}

/// Reads up to `buf.len()` bytes at `offset` (fewer at the end of the file).
fn read_at_most(f: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        let Some(rest) = buf.get_mut(got..) else { break };
        match f.read_at(rest, offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

// -------------------------------------------------------------------------------------------
// The data directory's lock
// -------------------------------------------------------------------------------------------

/// Takes the data directory's write lock (`agent::lock`, shared with `run`, `demo` and
/// `replay`), after checking the directory exists.
pub fn lock_data_dir(data: &Path) -> Result<crate::agent::lock::DataLock> {
    if !data.is_dir() {
        bail!(NotFound, "data directory {} does not exist", data.display());
    }
    crate::agent::lock::DataLock::acquire(data)
}

// -------------------------------------------------------------------------------------------
// Shared helpers
// -------------------------------------------------------------------------------------------

/// Unix seconds as RFC 3339 UTC; `-` for 0 (never set).
pub struct Time(pub u64);

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            return f.pad("-");
        }
        let mut s: crate::fixed::ArrayString<32> = crate::fixed::ArrayString::new();
        if s.format(format_args!("{}", crate::clock::Utc::from_unix(self.0))).is_err() {
            return f.pad("?");
        }
        f.pad(s.as_str())
    }
}

/// Writes one formatted line (out of line: the commands call it in 77 places).
#[inline(never)]
pub fn say(out: &mut dyn Write, args: fmt::Arguments<'_>) -> Result<()> {
    out.write_fmt(args).and_then(|()| out.write_all(b"\n")).map_err(write_error)
}

/// Writes text as it is.
#[inline(never)]
pub fn write_all(out: &mut dyn Write, text: &str) -> Result<()> {
    out.write_all(text.as_bytes()).map_err(write_error)
}

/// The error for a failed write to the output.
pub fn write_error(e: io::Error) -> crate::error::Error {
    err!(Io, "cannot write the output: {}", e)
}

/// Reads a whole input named on the command line (a file, or `-` for `input`), up to `max`
/// bytes; more is `CAPACITY_EXCEEDED`.
pub fn read_limited(name: &str, input: &mut dyn Read, max: usize) -> Result<Vec<u8>> {
    let mut data = Vec::new();
    let limit = max as u64 + 1;
    let res = if name == "-" {
        input.take(limit).read_to_end(&mut data)
    } else {
        match File::open(name) {
            Ok(f) => f.take(limit).read_to_end(&mut data),
            Err(e) if e.kind() == io::ErrorKind::NotFound => bail!(NotFound, "{} does not exist", name),
            Err(e) => bail!(Io, "cannot open {}: {}", name, e),
        }
    };
    res.map_err(|e| err!(Io, "cannot read {}: {}", display_name(name), e))?;
    if data.len() > max {
        bail!(CapacityExceeded, "{} is larger than {} bytes", display_name(name), max);
    }
    Ok(data)
}

/// How a named input is called in messages: `<stdin>` for `-`.
pub fn display_name(name: &str) -> &str {
    if name == "-" {
        "<stdin>"
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_shows_dash_for_never() {
        assert_eq!(format!("{}", Time(0)), "-");
        assert_eq!(format!("{}", Time(1_709_164_800)), "2024-02-29T00:00:00Z");
        assert_eq!(format!("[{:<21}]", Time(0)), "[-                    ]");
    }
}
