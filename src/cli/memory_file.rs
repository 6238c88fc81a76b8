//! Reading `memory.json` without changing it, for `memory`, `status`, `check` and `report`: the
//! agent's own decoder, every problem collected, nothing moved aside or migrated.

use crate::error::{Code, Result};
use crate::json::Document;
use crate::limits::{MEMORY_FILE_MAX_BYTES, MEMORY_FILE_MAX_NODES, MEMORY_FILE_REPORT_MAX, STORE_VALUE_MAX_BYTES};
use crate::memory::file::{self as memfile, MemoryFile, MEMORY_FILE};
use std::path::Path;
use std::path::PathBuf;

/// `memory.json` as read by [`read_memory`].
pub struct MemoryView {
    /// The file that was read (`memory.json`, or `memory.json.prev` when the first is missing).
    pub path: PathBuf,
    /// What could be read (a fresh memory where the file could not be).
    pub file: MemoryFile,
    /// Why the agent cannot use the file as it is (it moves a malformed file aside at its next
    /// start; it refuses one with an entry that fits neither working memory nor the store).
    pub problems: Vec<String>,
    /// Things the agent handles on its own: entries it leaves out, era-B storage it migrates,
    /// working-memory entries it moves to the store because they do not fit.
    pub notes: Vec<String>,
    /// The parsed file, from which [`MemoryView::overflow`] reads the `working_memory` entries
    /// that do not fit the working set (an era-B file that grew without bound; the agent
    /// stores them in the store at its next start): they are never collected.
    doc: Document,
    /// Their positions (see `memory::file::DecodeReport::overflow`).
    overflow_at: Vec<u32>,
}

impl MemoryView {
    /// A view of a file that was not decoded (`problems` say why).
    fn unread(path: PathBuf, why: String) -> MemoryView {
        MemoryView {
            path,
            file: MemoryFile::new(),
            problems: vec![why],
            notes: Vec::new(),
            doc: Document::with_capacity(0, 0),
            overflow_at: Vec::new(),
        }
    }

    /// The `working_memory` entries that do not fit the working set, read from the file.
    pub fn overflow(&self) -> memfile::Overflow<'_> {
        memfile::Overflow::new(&self.doc, &self.overflow_at)
    }
}

/// What [`read_memory`] found.
pub enum MemoryRead {
    /// Neither `memory.json` nor `memory.json.prev` exists: the agent starts fresh.
    Missing,
    /// A file was read (see its problems).
    Found(Box<MemoryView>),
}

/// Reads `memory.json` (or, when it is missing, `memory.json.prev`, which the agent would
/// use) and checks its shape with the agent's own decoder ([`memfile::decode_bytes`]),
/// collecting every problem; never writes. An I/O error other than "not found" is returned.
pub fn read_memory(data: &Path) -> Result<MemoryRead> {
    let main = data.join(MEMORY_FILE);
    let prev = crate::memory::atomic::prev_path(data, MEMORY_FILE);
    for path in [main, prev] {
        if crate::memory::nofollow::is_link(&path) {
            // The agent refuses it (it would cut the link when it saves); not read here either.
            let why = crate::memory::nofollow::link_refused(&path).message().to_string();
            return Ok(MemoryRead::Found(Box::new(MemoryView::unread(path, why))));
        }
        let view = match memfile::read_bounded(&path) {
            Ok(None) => continue,
            Ok(Some(bytes)) => view_of(path, &bytes, super::util::store_capacity(data)),
            Err(e) if e.code() == Code::CapacityExceeded => {
                let why = format!("larger than {} bytes (limits::MEMORY_FILE_MAX_BYTES)", MEMORY_FILE_MAX_BYTES);
                MemoryView::unread(path, why)
            }
            Err(e) => return Err(e),
        };
        return Ok(MemoryRead::Found(Box::new(view)));
    }
    Ok(MemoryRead::Missing)
}

/// Decodes the file's bytes and says what the agent would make of them, in a bounded number
/// of lines (`limits::MEMORY_FILE_REPORT_MAX`). `store_capacity` is `memory.store_capacity`.
fn view_of(path: PathBuf, bytes: &[u8], store_capacity: usize) -> MemoryView {
    // Sized by the input rather than at the agent's MEMORY_FILE_MAX_* (one read, one file).
    let mut doc = Document::with_capacity((bytes.len() / 2 + 64).min(MEMORY_FILE_MAX_NODES), bytes.len() + 64);
    let (file, report) = memfile::decode_bytes(&mut doc, bytes, 0);
    let mut problems: Vec<String> = report.problems.iter().map(|e| e.message().to_string()).collect();
    let mut notes: Vec<String> = report.left_out.iter().map(|e| e.message().to_string()).collect();
    if report.left_out_count > report.left_out.len() {
        notes.push(format!(
            "{} working_memory entries are left out in all (keys that do not normalise)",
            report.left_out_count
        ));
    }
    let overflow = memfile::Overflow::new(&doc, &report.overflow);
    let (mut too_big, mut first) = (0usize, None);
    let _ = overflow.for_each(|key, text| {
        if text.len() > STORE_VALUE_MAX_BYTES {
            too_big += 1;
            if too_big <= MEMORY_FILE_REPORT_MAX {
                problems.push(format!(
                    "working_memory \"{}\" ({} bytes) fits neither the working set nor the store \
                     (limits::STORE_VALUE_MAX_BYTES); shorten it",
                    key,
                    text.len()
                ));
            }
        } else if first.is_none() {
            first = Some(key.to_string());
        }
        Ok(())
    });
    if too_big > MEMORY_FILE_REPORT_MAX {
        problems.push(format!("{} working_memory entries in all are too big for the store", too_big));
    }
    let fitting = overflow.len() - too_big;
    if fitting > store_capacity {
        problems.push(format!(
            "{} working_memory entries do not fit the working set, more than the store holds \
             (memory.store_capacity {}); the agent refuses the file",
            fitting, store_capacity
        ));
    } else if fitting == 1 {
        notes.push(format!(
            "working_memory \"{}\" does not fit the working set; the agent moves it to the store at its next start",
            first.unwrap_or_default()
        ));
    } else if fitting > 1 {
        notes.push(format!(
            "{} working_memory entries, from \"{}\" on, do not fit the working set; the agent moves them to the \
             store at its next start",
            fitting,
            first.unwrap_or_default()
        ));
    }
    if report.storage > 0 {
        notes.push(format!(
            "{} era-B \"storage\" entries, moved into the store at the agent's next start",
            report.storage
        ));
    }
    let overflow_at = report.overflow;
    MemoryView { path, file, problems, notes, doc, overflow_at }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_view_collects_every_problem() {
        let v = view_of(
            PathBuf::from("memory.json"),
            br#"{"state":3,"iteration":-1,"working_memory":{"ok":"x"," , ":"gone"},"agent":[],"storage":{"a":"b"}}"#,
            16,
        );
        let p = v.problems.join("\n");
        assert!(p.contains("\"state\" is not a string"), "{p}");
        assert!(p.contains("\"iteration\""), "{p}");
        assert!(p.contains("\"agent\" is not an object"), "{p}");
        assert_eq!(v.problems.len(), 3);
        assert_eq!(v.notes.len(), 2, "{:?}", v.notes);
        assert_eq!(v.file.working.len(), 1);
    }
}
