//! `lkjagent memory export`, `import` and `compact`: the store and working memory to and from
//! one era-B JSON document (see `memory::era_b`), and the log rewritten with only live records.

use super::args::Args;
use super::memory_file::{read_memory, MemoryRead};
use super::util::{display_name, lock_data_dir, open_store_read_only, read_limited, say, StoreRead};
use crate::error::Result;
use crate::limits::EXCHANGE_FILE_MAX_BYTES;
use crate::memory::era_b::{self, Import, IoText};
use crate::memory::file::{self as memfile, MemoryFile};
use crate::memory::store::{Store, LOG_NAME};
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

pub(super) fn export(mut args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    let target = args.positional().unwrap_or_else(|| "-".to_string());
    args.finish("memory export")?;
    let view = match read_memory(data)? {
        MemoryRead::Missing => None,
        MemoryRead::Found(v) => match v.problems.first() {
            Some(p) => bail!(JsonInvalid, "{} is unusable ({}); fix it or move it aside first", v.path.display(), p),
            None => Some(v),
        },
    };
    let fresh = MemoryFile::new();
    let file = view.as_ref().map_or(&fresh, |v| &v.file);
    let overflow = view.as_ref().map_or(memfile::Overflow::none(), |v| v.overflow());
    let mut store = match open_store_read_only(data)? {
        StoreRead::Open(s) => Some(s),
        StoreRead::Absent => None,
        StoreRead::NotOpened { why, .. } => bail!(Io, "{}: not read: {}", data.join(LOG_NAME).display(), why),
    };
    // Working-memory entries that do not fit the working set go into `storage`, where the
    // agent puts them (unless the store already holds their key).
    if target == "-" {
        let mut text = IoText::new(&mut *out);
        let res = era_b::export(store.as_deref_mut(), Some(file), overflow, &mut text);
        return text.finish().and(res).map(|_| super::EXIT_OK);
    }
    // A file: written beside its final name, synced, then renamed over it, so an interrupted
    // export never leaves half a document under the name.
    let path = PathBuf::from(&target);
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("export.json");
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = dir.join(format!(".{}.tmp-{}", name, std::process::id()));
    let res = (|| -> Result<era_b::ExportReport> {
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| err!(Io, "cannot create {}: {}", tmp.display(), e))?;
        let mut text = IoText::new(io::BufWriter::new(&f));
        let res = era_b::export(store.as_deref_mut(), Some(file), overflow, &mut text);
        let report = text.finish().map_err(|e| e.context(format_args!("{}", tmp.display()))).and(res)?;
        f.sync_all().map_err(|e| err!(Io, "cannot sync {}: {}", tmp.display(), e))?;
        fs::rename(&tmp, &path)
            .map_err(|e| err!(Io, "cannot rename {} to {}: {}", tmp.display(), path.display(), e))?;
        Ok(report)
    })();
    if res.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    let report = res?;
    let _ = writeln!(
        io::stderr(),
        "exported {} working-memory entries and {} store entries to {}",
        report.working,
        report.entries,
        path.display()
    );
    Ok(super::EXIT_OK)
}

pub(super) fn import(mut args: Args, data: &Path, input: &mut dyn Read, out: &mut dyn Write) -> Result<i32> {
    let source = args.positional();
    args.finish("memory import")?;
    let Some(source) = source else {
        bail!(Usage, "'lkjagent memory import' needs a FILE (or '-' for stdin); see 'lkjagent memory --help'")
    };
    // Check everything before writing anything (before even taking the lock).
    let doc = read_limited(&source, input, EXCHANGE_FILE_MAX_BYTES)
        .and_then(|bytes| Import::check(&bytes))
        .map_err(|e| e.context(format_args!("{}", display_name(&source))))?;

    let _lock = lock_data_dir(data)?;
    // The agent's own start-up path: it repairs a torn store tail and migrates era-B storage,
    // as a run would. An unusable memory.json is not moved aside here: the user decides.
    if let MemoryRead::Found(v) = read_memory(data)? {
        if let Some(p) = v.problems.first() {
            bail!(JsonInvalid, "{} is unusable ({}); fix it or move it aside first", v.path.display(), p);
        }
    }
    let now = crate::clock::now_unix();
    let mut store = Store::open_with_capacity(data, super::util::store_capacity(data))?;
    let (mut memory, _) = memfile::load(data, &mut store, now)?;
    // Store first (each put is durable on return), memory.json last (one atomic rename): a
    // crash in between leaves some entries imported, and importing again completes the job.
    let r = doc.apply(&mut store, &mut memory, now)?;
    if r.working.added + r.working.replaced > 0 {
        memfile::save(data, &memory)?;
    }
    store.close_with_indexes()?;
    let (wm, st) = (r.working, r.stored);
    let mut line = format!(
        "working memory: {} added, {} replaced, {} unchanged; store: {} added, {} replaced, {} unchanged",
        wm.added, wm.replaced, wm.unchanged, st.added, st.replaced, st.unchanged
    );
    // The additions of this program's exports, said when the document has them.
    if r.cold.added + r.cold.unchanged > 0 {
        line.push_str(&format!("; cold store: {} added, {} there already", r.cold.added, r.cold.unchanged));
    }
    if r.links > 0 {
        line.push_str(&format!("; {} links made", r.links));
    }
    say(out, format_args!("{}", line))?;
    Ok(super::EXIT_OK)
}

pub(super) fn compact(args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    args.finish("memory compact")?;
    let _lock = lock_data_dir(data)?;
    if !data.join(LOG_NAME).exists() {
        say(out, format_args!("no store yet in {}; nothing to compact", data.display()))?;
        return Ok(super::EXIT_OK);
    }
    let mut store = Store::open_with_capacity(data, super::util::store_capacity(data))?;
    let (before, after) = store.compact()?;
    let entries = store.len();
    let (cold_before, cold_after) = store.compact_cold()?;
    let cold = store.cold_entries().unwrap_or(0);
    store.close_with_indexes()?;
    say(out, format_args!("store.log: {} bytes -> {} bytes ({} entries)", before, after, entries))?;
    if cold_before > 0 {
        say(out, format_args!("store.cold: {} bytes -> {} bytes ({} entries)", cold_before, cold_after, cold))?;
    }
    Ok(super::EXIT_OK)
}
