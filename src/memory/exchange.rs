//! Export and import in the era-B shape, for users and their tools (`lkjagent memory export`,
//! `memory import`):
//!
//! ```json
//! {
//!   "state": "thinking",
//!   "working_memory": { "task": "..." },
//!   "storage": { "dictionary,terms": "a word list", "notes,rust": "..." },
//!   "archived": [ "notes,rust" ]
//! }
//! ```
//!
//! `storage` maps each entry's canonical key text to its value, as the C program's
//! `memory.json` did, so scripts written for era B read an export unchanged. `archived` (an
//! addition era-B tools ignore) lists the keys of archived entries so an export/import round
//! trip keeps the flag. Versions, times, access counts and links are store-internal and are
//! not exported.
//!
//! Import stores every `storage` entry (an imported value replaces the store's: importing is
//! the user's explicit act), adds `working_memory` entries to the given memory file, and
//! archives the listed keys. Values that are numbers, booleans, `null` or nested JSON are
//! taken as their text, as when migrating an era-B `memory.json`. `state` is not imported:
//! the agent's state machine owns it.

use crate::error::Result;
use crate::json::{Document, Kind, Writer};
use crate::limits::{EXCHANGE_FILE_MAX_BYTES, EXCHANGE_FILE_MAX_NODES};
use crate::memory::file::{value_text, MemoryFile};
use crate::memory::key::{self, normalize};
use crate::memory::store::{Outcome, Store};
use core::fmt;

/// What an export wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportReport {
    /// Store entries written.
    pub entries: usize,
    /// Of which archived.
    pub archived: usize,
    /// Working-memory entries written.
    pub working: usize,
}

/// Writes the store (and, if given, the memory file's state and working memory) to `out` as
/// pretty JSON in the era-B shape. Values are read from the log one at a time: memory use does
/// not grow with the store.
pub fn export(store: &mut Store, memory: Option<&MemoryFile>, out: &mut dyn fmt::Write) -> Result<ExportReport> {
    let mut report = ExportReport::default();
    let mut w = Writer::pretty(out);
    w.begin_object()?;
    if let Some(m) = memory {
        w.key("state")?;
        w.string(m.state.as_str())?;
        w.key("working_memory")?;
        w.begin_object()?;
        for (k, text, _) in m.working.iter() {
            w.key(k.as_str())?;
            w.string(text)?;
            report.working += 1;
        }
        w.end_object()?;
    }
    w.key("storage")?;
    w.begin_object()?;
    // Walk ids by number (the store cannot be borrowed by an iterator while values are read).
    for id in 0..store.capacity() as u32 {
        let Some(k) = store.key(id) else { continue };
        w.key(k.as_str())?;
        w.string(store.value(id)?)?;
        report.entries += 1;
    }
    w.end_object()?;
    w.key("archived")?;
    w.begin_array()?;
    for id in store.ids() {
        if let Some(info) = store.info(id).filter(|i| i.archived) {
            w.string(info.key.as_str())?;
            report.archived += 1;
        }
    }
    w.end_array()?;
    w.end_object()?;
    w.finish()?;
    Ok(report)
}

/// A `fmt::Write` over an `io::Write` (a file, stdout), so [`export`] can stream to it. The
/// first I/O error is kept (`fmt::Error` carries none) and returned by [`IoText::finish`].
pub struct IoText<W: std::io::Write> {
    out: W,
    error: Option<std::io::Error>,
}

impl<W: std::io::Write> IoText<W> {
    /// Wraps `out` (wrap a file in a `BufWriter` first).
    pub fn new(out: W) -> IoText<W> {
        IoText { out, error: None }
    }

    /// Flushes and returns the writer, or the first I/O error as `IO`.
    pub fn finish(mut self) -> Result<W> {
        if let Some(e) = self.error.take() {
            bail!(Io, "writing the export failed: {}", e);
        }
        self.out.flush().map_err(|e| err!(Io, "writing the export failed: {}", e))?;
        Ok(self.out)
    }
}

impl<W: std::io::Write> fmt::Write for IoText<W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.error.is_some() {
            return Err(fmt::Error);
        }
        self.out.write_all(s.as_bytes()).map_err(|e| {
            self.error = Some(e);
            fmt::Error
        })
    }
}

/// What an import did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Entries created or changed in the store.
    pub stored: usize,
    /// Entries the store already held with the same value.
    pub unchanged: usize,
    /// Entries archived.
    pub archived: usize,
    /// Working-memory entries added.
    pub working: usize,
    /// Entries left out with a warning (a key that does not normalise).
    pub skipped: usize,
}

/// Imports an era-B document (see the module documentation). `bytes` is at most
/// [`EXCHANGE_FILE_MAX_BYTES`]. The document is checked as a whole before anything is stored.
pub fn import(bytes: &[u8], store: &mut Store, memory: Option<&mut MemoryFile>, now: u64) -> Result<ImportReport> {
    if bytes.len() > EXCHANGE_FILE_MAX_BYTES {
        bail!(
            CapacityExceeded,
            "the import file is {} bytes, more than {} (EXCHANGE_FILE_MAX_BYTES); split it",
            bytes.len(),
            EXCHANGE_FILE_MAX_BYTES
        );
    }
    // Sized by the input: a JSON value takes at least one byte, its text at most the input.
    let mut doc = Document::with_capacity(EXCHANGE_FILE_MAX_NODES.min(bytes.len() + 1), bytes.len() + 1);
    doc.parse(bytes)?;
    let root = doc.root();
    if root.kind() != Kind::Object {
        bail!(JsonInvalid, "the import file's top level is not an object");
    }
    let storage = match root.get("storage") {
        Some(v) if v.kind() == Kind::Object => Some(v),
        Some(v) if v.is_null() => None,
        None => None,
        Some(_) => bail!(JsonInvalid, "\"storage\" is not an object"),
    };
    let working = match root.get("working_memory") {
        Some(v) if v.kind() == Kind::Object => Some(v),
        Some(v) if v.is_null() => None,
        None => None,
        Some(_) => bail!(JsonInvalid, "\"working_memory\" is not an object"),
    };
    let archived = match root.get("archived") {
        Some(v) if v.kind() == Kind::Array => Some(v),
        Some(v) if v.is_null() => None,
        None => None,
        Some(_) => bail!(JsonInvalid, "\"archived\" is not an array"),
    };
    let mut report = ImportReport::default();
    let mut text = String::new();
    for (k, v) in storage.iter().flat_map(|s| s.members()) {
        let key = match normalize(k) {
            Ok(key) => key,
            Err(e) => {
                e.context(format_args!("storage entry \"{}\" not imported", key::prefix(k, 64))).print_warning();
                report.skipped += 1;
                continue;
            }
        };
        value_text(v, &mut text)?;
        match store.put(&key, &text, now)?.outcome {
            Outcome::Unchanged => report.unchanged += 1,
            Outcome::Created | Outcome::Updated => report.stored += 1,
        }
    }
    if let Some(m) = memory {
        for (k, v) in working.iter().flat_map(|s| s.members()) {
            let key = match normalize(k) {
                Ok(key) => key,
                Err(e) => {
                    e.context(format_args!("working_memory entry \"{}\" not imported", key::prefix(k, 64)))
                        .print_warning();
                    report.skipped += 1;
                    continue;
                }
            };
            value_text(v, &mut text)?;
            m.working.add(&key, &text, now)?;
            report.working += 1;
        }
    }
    for item in archived.iter().flat_map(|a| a.items()) {
        let Some(key) = item.as_str().and_then(|s| normalize(s).ok()) else { continue };
        if store.find(&key).is_some() {
            store.set_archived(&key, true, now)?;
            report.archived += 1;
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::key::normalize;

    #[test]
    fn export_then_import_round_trips() {
        let d = std::env::temp_dir().join(format!("lkj-exchange-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("a")).unwrap();
        std::fs::create_dir_all(d.join("b")).unwrap();
        let mut s = Store::open_with_capacity(&d.join("a"), 16).unwrap();
        s.put(&normalize("dictionary,terms").unwrap(), "words → \"list\"\n", 1).unwrap();
        s.put(&normalize("notes").unwrap(), "", 2).unwrap();
        s.set_archived(&normalize("notes").unwrap(), true, 3).unwrap();
        let mut m = MemoryFile::new();
        m.working.add(&normalize("task").unwrap(), "do it", 4).unwrap();
        let mut out = String::new();
        let r = export(&mut s, Some(&m), &mut out).unwrap();
        assert_eq!((r.entries, r.archived, r.working), (2, 1, 1));
        assert!(out.contains("\"dictionary,terms\": \"words → \\\"list\\\"\\n\""), "{}", out);

        let mut s2 = Store::open_with_capacity(&d.join("b"), 16).unwrap();
        let mut m2 = MemoryFile::new();
        let r = import(out.as_bytes(), &mut s2, Some(&mut m2), 9).unwrap();
        assert_eq!((r.stored, r.unchanged, r.archived, r.working, r.skipped), (2, 0, 1, 1, 0));
        assert_eq!(s2.load(&normalize("terms,dictionary").unwrap(), 10).unwrap(), Some("words → \"list\"\n"));
        assert!(s2.info(s2.find(&normalize("notes").unwrap()).unwrap()).unwrap().archived);
        assert_eq!(m2.working.get(&normalize("task").unwrap()), Some("do it"));
        // Streaming to an io::Write gives the same text.
        let mut io = IoText::new(Vec::new());
        export(&mut s, Some(&m), &mut io).unwrap();
        assert_eq!(io.finish().unwrap(), out.as_bytes());
        // Importing the same again changes nothing.
        let r = import(out.as_bytes(), &mut s2, None, 11).unwrap();
        assert_eq!((r.stored, r.unchanged), (0, 2));
        // Shape errors are refused before anything is stored.
        let e = import(br#"{"storage": []}"#, &mut s2, None, 12).unwrap_err();
        assert_eq!(e.code(), crate::error::Code::JsonInvalid);
        let e = import(b"{\"storage\": {", &mut s2, None, 12).unwrap_err();
        assert_eq!(e.code(), crate::error::Code::JsonInvalid);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
