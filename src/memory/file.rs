//! `memory.json`: the agent's state, iteration, working set and small agent map, in the era-B
//! readable shape, written atomically every cycle.
//!
//! ```json
//! {
//!   "state": "thinking",
//!   "iteration": 12,
//!   "working_memory": { "task": "Create a dictionary", "think_log_001": "..." },
//!   "working_memory_meta": { "task": { "created": 1700000000, "updated": 1700000300, "hits": 2 } },
//!   "agent": { "last_action": "storage_save dictionary,terms" }
//! }
//! ```
//!
//! `working_memory` stays a flat map of text, as in era B, so the file reads the same to
//! people and tools that knew the C program; the metadata sits beside it rather than inside
//! it. `agent` belongs to the agent layer ([`AgentMeta`]) and is kept verbatim.
//!
//! # Saving
//!
//! [`Saver`] holds a reserved output buffer and an [`AtomicFile`]: each save serializes into
//! the buffer and writes it atomically (temp file, fsync, rename, fsync of the directory),
//! keeping the previous good file as `memory.json.prev`. No allocation per save.
//!
//! # Loading
//!
//! [`load`] reads `memory.json`; if it is missing the state is fresh. If it cannot be used (not
//! JSON, not an object, a field of the wrong type) it is **moved aside** as
//! `memory.json.corrupt-<time>` (never overwritten, never deleted) with a warning, and
//! `memory.json.prev` is tried the same way, then a fresh state. An I/O error other than
//! "not found" is returned as is (a transient error must not cost the user their file), and so
//! is a file larger than [`MEMORY_FILE_MAX_BYTES`]. Either name being a symbolic link is an
//! `IO` error naming it, before anything is read: saving replaces the file by renaming, which
//! would silently cut the link.
//!
//! Era-B files are read too: a value that is a number or boolean (the C writer dropped the
//! quotes of "42" and "true") becomes its text, a nested object (`search_results`) becomes its
//! compact JSON text, `null` becomes empty text. An era-B `storage` map (also `"storage":
//! null`) is migrated into the store: each entry is stored unless the store already holds that
//! key (same value: nothing to do; other value: the store's newer value is kept, with a
//! warning). That makes the migration idempotent: a crash half-way simply migrates again on
//! the next start, losing and duplicating nothing. Once done, `memory.json` is saved without
//! `storage` (the era-B original stays as `memory.json.prev`).
//!
//! The decoding itself is [`decode_bytes`]: pure (no I/O, no store), it reports every problem,
//! the entries that did not fit and the era-B `storage` it found; [`load`] then acts on that
//! report. The read-only commands (`status`, `check`, `memory list`) use the same function, so
//! they judge a file exactly as the agent will.
//!
//! A `working_memory` larger than the working set (an era-B file grew without bound) is not
//! refused: the entries that do not fit are stored in the store under the same keys, in one
//! batch (one sync), with a warning each for the first [`MEMORY_FILE_REPORT_MAX`] and one that
//! counts the rest, and the file is saved without them. They are never collected: decoding
//! keeps only their positions in the file ([`DecodeReport::overflow`]) and [`Overflow`] reads
//! them again from the parsed document, so a file's cost is bounded by its document whatever
//! its shape (see `limits::MEMORY_FILE_REPORT_MAX`). More of them than the store has room for
//! (`memory.store_capacity`), or one too big for the store as well (more than
//! `STORE_VALUE_MAX_BYTES`), is an error, and the file and the store are left untouched.

use crate::bytes::str_prefix;
use crate::error::{Error, Result};
use crate::fixed::{ArrayString, FixedBuf};
use crate::json::{Document, Kind, Typed, Value, Writer};
use crate::limits::{
    AGENT_META_KEY_MAX_BYTES, AGENT_META_MAX_ENTRIES, AGENT_META_VALUE_MAX_BYTES, MEMORY_FILE_MAX_BYTES,
    MEMORY_FILE_MAX_NODES, MEMORY_FILE_REPORT_MAX, MEMORY_STATE_MAX_BYTES,
};
use crate::memory::atomic::AtomicFile;
use crate::memory::key::{normalize, Key};
use crate::memory::store::{corrupt_name, Store};
use crate::memory::working::{WorkingMeta, WorkingSet};
use std::fs;
use std::io::Read;
use std::path::Path;

/// The file name inside the data directory.
pub const MEMORY_FILE: &str = "memory.json";

/// The state a fresh memory starts in.
pub const INITIAL_STATE: &str = crate::states::THINKING;

/// The agent layer's own small string map (last action, invalid-reply streak, pending
/// feedback, ...), persisted verbatim in `memory.json` under `agent`. Fixed capacity:
/// [`AGENT_META_MAX_ENTRIES`] entries of keys up to [`AGENT_META_KEY_MAX_BYTES`] and values up
/// to [`AGENT_META_VALUE_MAX_BYTES`] bytes, reserved once; kept in insertion order.
pub struct AgentMeta {
    items: Vec<(ArrayString<AGENT_META_KEY_MAX_BYTES>, ArrayString<AGENT_META_VALUE_MAX_BYTES>)>,
}

impl Default for AgentMeta {
    fn default() -> Self {
        AgentMeta::new()
    }
}

impl AgentMeta {
    /// An empty map, reserved now.
    pub fn new() -> AgentMeta {
        AgentMeta { items: Vec::with_capacity(AGENT_META_MAX_ENTRIES) }
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.items.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v.as_str())
    }

    /// Sets `key` to `value` (in place if present). `CAPACITY_EXCEEDED`, changing nothing,
    /// when the key or value is too long or the map is full.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let v = ArrayString::try_from_str(value).map_err(|_| {
            err!(
                CapacityExceeded,
                "agent memory value for \"{}\" is {} bytes, more than {} (AGENT_META_VALUE_MAX_BYTES)",
                str_prefix(key, 64),
                value.len(),
                AGENT_META_VALUE_MAX_BYTES
            )
        })?;
        if let Some(item) = self.items.iter_mut().find(|(k, _)| k.as_str() == key) {
            item.1 = v;
            return Ok(());
        }
        let k = ArrayString::try_from_str(key).map_err(|_| {
            err!(
                CapacityExceeded,
                "agent memory key \"{}...\" is longer than {} bytes (AGENT_META_KEY_MAX_BYTES)",
                str_prefix(key, 32),
                AGENT_META_KEY_MAX_BYTES
            )
        })?;
        if self.items.len() >= AGENT_META_MAX_ENTRIES {
            bail!(
                CapacityExceeded,
                "agent memory is full ({} entries, AGENT_META_MAX_ENTRIES); cannot add \"{}\"",
                AGENT_META_MAX_ENTRIES,
                key
            );
        }
        self.items.push((k, v));
        Ok(())
    }

    /// Removes `key`; returns whether it was present.
    pub fn remove(&mut self, key: &str) -> bool {
        match self.items.iter().position(|(k, _)| k.as_str() == key) {
            Some(i) => {
                self.items.remove(i);
                true
            }
            None => false,
        }
    }

    /// The entries, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.items.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.items.clear();
    }
}

/// Everything `memory.json` holds.
pub struct MemoryFile {
    /// The agent's current state name.
    pub state: ArrayString<MEMORY_STATE_MAX_BYTES>,
    /// Cycles run so far.
    pub iteration: u64,
    /// The working set (what the prompt shows).
    pub working: WorkingSet,
    /// The agent layer's own map.
    pub agent: AgentMeta,
}

impl Default for MemoryFile {
    fn default() -> Self {
        MemoryFile::new()
    }
}

impl MemoryFile {
    /// A fresh memory: state `thinking`, iteration 0, nothing in it.
    pub fn new() -> MemoryFile {
        let mut state = ArrayString::new();
        let _ = state.push_str(INITIAL_STATE);
        MemoryFile { state, iteration: 0, working: WorkingSet::new(), agent: AgentMeta::new() }
    }

    /// Sets the state name (`CAPACITY_EXCEEDED` past [`MEMORY_STATE_MAX_BYTES`]).
    pub fn set_state(&mut self, state: &str) -> Result<()> {
        self.state = ArrayString::try_from_str(state).map_err(|_| {
            err!(
                CapacityExceeded,
                "state name of {} bytes is longer than {} (MEMORY_STATE_MAX_BYTES)",
                state.len(),
                MEMORY_STATE_MAX_BYTES
            )
        })?;
        Ok(())
    }

    /// Writes the members `state`, `iteration` and `working_memory` (the era-B part, shared
    /// by this file and `memory::era_b`'s export) into an open object.
    pub(crate) fn write_head<W: core::fmt::Write + ?Sized>(&self, w: &mut Writer<'_, W>) -> Result<()> {
        w.key("state")?;
        w.string(self.state.as_str())?;
        w.key("iteration")?;
        w.u64(self.iteration)?;
        w.key("working_memory")?;
        w.begin_object()?;
        for (k, text, _) in self.working.iter() {
            w.key(k.as_str())?;
            w.string(text)?;
        }
        w.end_object()
    }

    /// Serializes the file (pretty JSON, trailing newline) into `out`.
    pub fn encode(&self, out: &mut dyn core::fmt::Write) -> Result<()> {
        let mut w = Writer::pretty(out);
        w.begin_object()?;
        self.write_head(&mut w)?;
        w.key("working_memory_meta")?;
        w.begin_object()?;
        for (k, _, m) in self.working.iter() {
            w.key(k.as_str())?;
            w.begin_object()?;
            w.key("created")?;
            w.u64(m.created)?;
            w.key("updated")?;
            w.u64(m.updated)?;
            w.key("hits")?;
            w.u64(m.hits)?;
            w.end_object()?;
        }
        w.end_object()?;
        w.key("agent")?;
        w.begin_object()?;
        for (k, v) in self.agent.iter() {
            w.key(k)?;
            w.string(v)?;
        }
        w.end_object()?;
        w.end_object()?;
        w.finish()?;
        out.write_str("\n").map_err(|_| err!(CapacityExceeded, "memory.json does not fit its buffer"))
    }
}

/// Saves a [`MemoryFile`] again and again without allocating: a reserved buffer and the
/// file's paths, built once.
pub struct Saver {
    buf: FixedBuf,
    file: AtomicFile,
}

impl Saver {
    /// A saver for `dir/memory.json`, reserving [`MEMORY_FILE_MAX_BYTES`] of output buffer.
    pub fn new(dir: &Path) -> Saver {
        Saver {
            buf: FixedBuf::with_capacity("memory.json buffer (MEMORY_FILE_MAX_BYTES)", MEMORY_FILE_MAX_BYTES),
            file: AtomicFile::new(dir, MEMORY_FILE),
        }
    }

    /// Serializes `m` and writes it atomically. On error the file on disk is unchanged.
    pub fn save(&mut self, m: &MemoryFile) -> Result<()> {
        self.buf.clear();
        m.encode(&mut self.buf)?;
        self.file.write(self.buf.as_slice())
    }

    /// Bytes of the last save.
    pub fn last_bytes(&self) -> usize {
        self.buf.len()
    }
}

/// Saves `m` to `dir/memory.json` (allocates a buffer: for tools and tests; the agent keeps a
/// [`Saver`]).
pub fn save(dir: &Path, m: &MemoryFile) -> Result<()> {
    let mut out = String::new();
    m.encode(&mut out)?;
    AtomicFile::new(dir, MEMORY_FILE).write(out.as_bytes())
}

/// Where a loaded memory came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// `memory.json`.
    Main,
    /// `memory.json.prev`, because `memory.json` was missing or unusable.
    Previous,
    /// Neither was there or usable: a fresh memory.
    Fresh,
}

/// What [`load`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadReport {
    /// Where the memory came from.
    pub source: Source,
    /// Files moved aside as unusable.
    pub moved_aside: usize,
    /// Era-B `storage` entries stored into the store.
    pub migrated: usize,
    /// Era-B `storage` entries the store already held.
    pub already_stored: usize,
    /// Entries left out, each with a warning (a key that does not normalise, a value too big).
    pub skipped: usize,
    /// `working_memory` entries that did not fit the working set and were stored in the store
    /// instead (under the same key), so nothing is lost.
    pub paged_out: usize,
}

/// What [`decode_bytes`] found besides the memory itself. Decoding acts on none of it: [`load`]
/// does (it moves an unusable file aside, stores the overflow, migrates `storage`), and the
/// read-only commands (`status`, `check`, `memory list`) only show it. Bounded whatever the
/// file holds (see `limits::MEMORY_FILE_REPORT_MAX`).
#[derive(Default)]
pub struct DecodeReport {
    /// Why the file cannot be used as it is, in file order (empty: it can be): the first
    /// [`MEMORY_FILE_REPORT_MAX`], then one that counts the rest. The memory returned beside it
    /// holds what could be read.
    pub problems: Vec<Error>,
    /// `working_memory` entries left out because their key does not normalise: the first
    /// [`MEMORY_FILE_REPORT_MAX`] ([`DecodeReport::left_out_count`] counts them all).
    pub left_out: Vec<Error>,
    /// How many `working_memory` entries were left out.
    pub left_out_count: usize,
    /// `working_memory` entries that did not fit the working set (an era-B file that grew
    /// without bound): their positions among `working_memory`'s members, in file order (4
    /// bytes each, never their keys or texts). [`Overflow`] reads them from the document;
    /// [`load`] stores them in the store.
    pub overflow: Vec<u32>,
    /// Entries of an era-B `storage` map (0 when it is absent, `null` or empty). [`load`]
    /// migrates them into the store.
    pub storage: usize,
    /// Problems found past the first [`MEMORY_FILE_REPORT_MAX`].
    more_problems: usize,
}

impl DecodeReport {
    fn problem(&mut self, e: Error) {
        if self.problems.len() < MEMORY_FILE_REPORT_MAX {
            self.problems.push(e);
        } else {
            self.more_problems += 1;
        }
    }
}

/// The `working_memory` entries of a decoded file that did not fit its working set, read from
/// the parsed document each time they are needed (see [`DecodeReport::overflow`]).
#[derive(Clone, Copy)]
pub struct Overflow<'a> {
    working: Option<Value<'a>>,
    at: &'a [u32],
}

impl<'a> Overflow<'a> {
    /// None at all.
    pub fn none() -> Overflow<'static> {
        Overflow { working: None, at: &[] }
    }

    /// The entries at positions `at` (a [`DecodeReport::overflow`]) of the `working_memory` of
    /// `doc`, the document [`decode_bytes`] parsed.
    pub fn new(doc: &'a Document, at: &'a [u32]) -> Overflow<'a> {
        let working = doc.root().get("working_memory").filter(|v| v.kind() == Kind::Object);
        Overflow { working, at }
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        if self.working.is_some() {
            self.at.len()
        } else {
            0
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f` with each entry's key and text, in file order, until it fails.
    pub fn for_each(&self, mut f: impl FnMut(&Key, &str) -> Result<()>) -> Result<()> {
        self.each(&mut f)
    }

    /// [`Overflow::for_each`], compiled once for its six callers.
    fn each(&self, f: &mut dyn FnMut(&Key, &str) -> Result<()>) -> Result<()> {
        let Some(working) = self.working else { return Ok(()) };
        let mut text = String::new();
        let mut wanted = self.at.iter().copied().peekable();
        for (i, (k, val)) in working.members().enumerate() {
            let Some(&next) = wanted.peek() else { break };
            if i as u64 != u64::from(next) {
                continue;
            }
            wanted.next();
            // Positions come from decoding this document: the key normalised then.
            let Ok(key) = normalize(k) else { continue };
            value_text(val, &mut text)?;
            f(&key, &text)?;
        }
        Ok(())
    }
}

/// Decodes the bytes of a `memory.json` into `doc` and from there into a [`MemoryFile`]: no
/// I/O, no store, nothing changed anywhere. Every problem is collected rather than the first
/// one ending the read, so a reader can show them all. `now` stamps entries that carry no
/// times. `doc` is the caller's so that its capacity is reserved once per load (and so that
/// the caller can read the era-B `storage` map from it afterwards).
pub fn decode_bytes(doc: &mut Document, bytes: &[u8], now: u64) -> (MemoryFile, DecodeReport) {
    let mut m = MemoryFile::new();
    let mut report = DecodeReport::default();
    match doc.parse(bytes) {
        Ok(()) => decode(doc.root(), &mut m, now, &mut report),
        Err(e) => report.problem(e.context(format_args!("not valid JSON"))),
    }
    if report.more_problems > 0 {
        report.problems.push(err!(JsonInvalid, "and {} more problems", report.more_problems));
    }
    (m, report)
}

/// Loads `dir/memory.json` (see the module documentation). Era-B `storage` entries are
/// migrated into `store`; `now` stamps entries that carry no times.
pub fn load(dir: &Path, store: &mut Store, now: u64) -> Result<(MemoryFile, LoadReport)> {
    let mut report =
        LoadReport { source: Source::Fresh, moved_aside: 0, migrated: 0, already_stored: 0, skipped: 0, paged_out: 0 };
    let mut doc = Document::with_capacity(MEMORY_FILE_MAX_NODES, MEMORY_FILE_MAX_BYTES);
    let main = dir.join(MEMORY_FILE);
    let prev = crate::memory::atomic::prev_path(dir, MEMORY_FILE);
    // Both are replaced by renaming, which would silently cut a link the user made: refused
    // before anything is read or written (see `memory::nofollow`).
    for path in [&main, &prev] {
        crate::memory::nofollow::refuse_link(path)?;
    }
    for (path, source) in [(&main, Source::Main), (&prev, Source::Previous)] {
        let Some(bytes) = read_bounded(path)? else { continue };
        let (m, decoded) = decode_bytes(&mut doc, &bytes, now);
        if let Some(e) = decoded.problems.into_iter().next() {
            let aside = corrupt_name(dir, path.file_name().and_then(|n| n.to_str()).unwrap_or(MEMORY_FILE));
            fs::rename(path, &aside).map_err(|re| {
                err!(
                    PersistFailed,
                    "{} is unusable ({}) and moving it aside failed: {}",
                    path.display(),
                    e.message(),
                    re
                )
            })?;
            e.context(format_args!("{} is unusable; kept it as {}", path.display(), aside.display())).print_warning();
            report.moved_aside += 1;
            continue;
        }
        report.source = source;
        for e in decoded.left_out {
            e.print_warning();
        }
        report.skipped += decoded.left_out_count;
        if decoded.left_out_count > MEMORY_FILE_REPORT_MAX {
            err!(
                KeyInvalid,
                "{} working_memory entries left out in all (keys that do not normalise; the first {} named above)",
                decoded.left_out_count,
                MEMORY_FILE_REPORT_MAX
            )
            .print_warning();
        }
        let overflow = Overflow::new(&doc, &decoded.overflow);
        report.paged_out = overflow.len();
        if decoded.storage > 0 || report.paged_out > 0 {
            // One batch, synced once, however many entries an era-B file holds; memory.json is
            // rewritten only after it (a crash in between migrates the rest at the next start).
            let mut paged = 0usize;
            overflow.for_each(|k, _| {
                paged += usize::from(m.working.position(k).is_none() && store.find(k).is_none());
                Ok(())
            })?;
            // The store must have room for all of them before any is written.
            let room = store.capacity().saturating_sub(store.len());
            if paged > room {
                bail!(
                    CapacityExceeded,
                    "{}: {} working_memory entries do not fit the working set, and the store has room for {} \
                     (memory.store_capacity); raise it or trim working_memory; nothing was changed",
                    path.display(),
                    paged,
                    room
                );
            }
            let storage = doc.root().get("storage").into_iter().flat_map(|v| v.members());
            let migrated = storage.filter(|(k, _)| normalize(k).is_ok_and(|key| store.find(&key).is_none()));
            store.begin_batch((paged + migrated.count()) as u64)?;
            let res = page_out(overflow, &m, store, now).and_then(|()| match decoded.storage {
                0 => Ok(()),
                _ => migrate(doc.root().get("storage"), store, now, &mut report),
            });
            let synced = store.end_batch();
            res.and(synced)?;
            save(dir, &m)?;
        }
        return Ok((m, report));
    }
    Ok((MemoryFile::new(), report))
}

/// Reads a file of at most [`MEMORY_FILE_MAX_BYTES`]; `None` if it does not exist. A larger
/// file is `CAPACITY_EXCEEDED` (it is left as it is).
pub fn read_bounded(path: &Path) -> Result<Option<Vec<u8>>> {
    let f = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!(Io, "opening {} failed: {}", path.display(), e),
    };
    // Sized once from the file's length (no doubling past it), at most the cap and one byte.
    let size = f.metadata().map_or(0, |m| m.len()).min(MEMORY_FILE_MAX_BYTES as u64 + 1);
    let mut data = Vec::with_capacity(size as usize);
    f.take(MEMORY_FILE_MAX_BYTES as u64 + 1)
        .read_to_end(&mut data)
        .map_err(|e| err!(Io, "reading {} failed: {}", path.display(), e))?;
    if data.len() > MEMORY_FILE_MAX_BYTES {
        bail!(
            CapacityExceeded,
            "{} is larger than {} bytes (MEMORY_FILE_MAX_BYTES); it was left untouched",
            path.display(),
            MEMORY_FILE_MAX_BYTES
        );
    }
    Ok(Some(data))
}

/// Fills `m` from a parsed file, collecting into `report` what it cannot take.
fn decode(root: Value<'_>, m: &mut MemoryFile, now: u64, report: &mut DecodeReport) {
    if root.kind() != Kind::Object {
        report.problem(err!(JsonInvalid, "the top level is {}, not an object", root.kind().name()));
        return;
    }
    match root.get("state").map(|v| v.as_str()) {
        None => {}
        Some(Some(s)) => {
            if let Err(e) = m.set_state(s) {
                report.problem(e.context(format_args!("\"state\"")));
            }
        }
        Some(None) => report.problem(err!(JsonInvalid, "\"state\" is not a string")),
    }
    match root.get("iteration").map(|v| v.as_u64()) {
        None => {}
        Some(Some(n)) => m.iteration = n,
        Some(None) => report.problem(err!(JsonInvalid, "\"iteration\" is not a non-negative integer")),
    }
    match root.get("working_memory") {
        None => {}
        Some(v) if v.is_null() => {}
        Some(v) if v.kind() == Kind::Object => decode_working(v, m, now, report),
        Some(_) => report.problem(err!(JsonInvalid, "\"working_memory\" is not an object")),
    }
    if let Some(meta) = root.get("working_memory_meta").filter(|v| v.kind() == Kind::Object) {
        for (k, val) in meta.members() {
            let Ok(key) = normalize(k) else { continue };
            let field = |name: &str| val.get(name).and_then(|v| v.as_u64());
            if let (Some(created), Some(updated), Some(hits)) = (field("created"), field("updated"), field("hits")) {
                m.working.set_meta(&key, WorkingMeta { created, updated, hits });
            }
        }
    }
    match root.get("agent") {
        None => {}
        Some(v) if v.is_null() => {}
        Some(v) if v.kind() == Kind::Object => {
            for (k, val) in v.members() {
                let res = match val.as_str() {
                    Some(s) => m.agent.set(k, s).map_err(|e| e.context(format_args!("\"agent\""))),
                    None => Err(err!(JsonInvalid, "\"agent\".\"{}\" is not a string", str_prefix(k, 64))),
                };
                if let Err(e) = res {
                    report.problem(e);
                }
            }
        }
        Some(_) => report.problem(err!(JsonInvalid, "\"agent\" is not an object")),
    }
    match root.get("storage") {
        None => {}
        Some(v) if v.is_null() => {}
        Some(v) if v.kind() == Kind::Object => report.storage = v.len(),
        Some(_) => report.problem(err!(JsonInvalid, "\"storage\" is not an object")),
    }
}

/// Adds the `working_memory` entries to the working set; the ones it cannot hold go to
/// `report.overflow`, the ones whose key does not normalise to `report.left_out`.
fn decode_working(working: Value<'_>, m: &mut MemoryFile, now: u64, report: &mut DecodeReport) {
    let mut text = String::new();
    for (i, (k, val)) in working.members().enumerate() {
        let key = match normalize(k) {
            Ok(key) => key,
            Err(e) => {
                report.left_out_count += 1;
                if report.left_out.len() < MEMORY_FILE_REPORT_MAX {
                    report
                        .left_out
                        .push(e.context(format_args!("working_memory entry \"{}\" left out", str_prefix(k, 64))));
                }
                continue;
            }
        };
        let res = value_text(val, &mut text).and_then(|()| m.working.add(&key, &text, now));
        match res {
            Ok(()) => {}
            // Members of a document of at most MEMORY_FILE_MAX_NODES nodes: fits in 32 bits.
            Err(e) if e.code() == crate::error::Code::CapacityExceeded => report.overflow.push(i as u32),
            Err(e) => report.problem(e.context(format_args!("working_memory \"{}\"", key))),
        }
    }
}

/// The text an era-B value stands for: strings as they are, numbers and booleans as their
/// literal text, `null` as empty text, arrays and objects as their compact JSON.
pub(crate) fn value_text(v: Value<'_>, out: &mut String) -> Result<()> {
    out.clear();
    match v.typed() {
        Typed::String(text) | Typed::Number(text) => out.push_str(text),
        Typed::Bool(b) => out.push_str(if b { "true" } else { "false" }),
        Typed::Null => {}
        Typed::Array | Typed::Object => {
            // Through `dyn fmt::Write`, as the commands write: a `String` writer was one more
            // copy of the JSON writer's code.
            let mut w = Writer::compact(out as &mut dyn core::fmt::Write);
            w.value(v)?;
        }
    }
    Ok(())
}

/// Stores the `working_memory` entries that did not fit the working set, with a warning each
/// for the first [`MEMORY_FILE_REPORT_MAX`] and one that counts them all. Like the migration,
/// it never overwrites what the store holds (so it can run again).
fn page_out(overflow: Overflow<'_>, m: &MemoryFile, store: &mut Store, now: u64) -> Result<()> {
    let mut stored = 0usize;
    overflow.for_each(|key, text| {
        if m.working.position(key).is_some() || store.find(key).is_some() {
            return Ok(());
        }
        store.put(key, text, now).map_err(|e| {
            e.context(format_args!(
                "working_memory entry \"{}\" fits neither the working set nor the store; memory.json was left untouched",
                key
            ))
        })?;
        stored += 1;
        if stored <= MEMORY_FILE_REPORT_MAX {
            err!(
                CapacityExceeded,
                "working_memory entry \"{}\" did not fit the working set (WORKING_MAX_ENTRIES, WORKING_TEXT_MAX_BYTES); \
                 stored it in the store under the same key",
                key
            )
            .print_warning();
        }
        Ok(())
    })?;
    if stored > MEMORY_FILE_REPORT_MAX {
        err!(
            CapacityExceeded,
            "{} working_memory entries in all did not fit the working set; stored them in the store under the same \
             keys (the first {} named above)",
            stored,
            MEMORY_FILE_REPORT_MAX
        )
        .print_warning();
    }
    Ok(())
}

/// Stores the era-B `storage` entries the store does not hold yet.
fn migrate(storage: Option<Value<'_>>, store: &mut Store, now: u64, report: &mut LoadReport) -> Result<()> {
    let Some(storage) = storage else { return Ok(()) };
    let mut text = String::new();
    for (k, val) in storage.members() {
        let key = match normalize(k) {
            Ok(key) => key,
            Err(e) => {
                e.context(format_args!("storage entry \"{}\" not migrated", str_prefix(k, 64))).print_warning();
                report.skipped += 1;
                continue;
            }
        };
        value_text(val, &mut text)?;
        if let Some(id) = store.find(&key) {
            report.already_stored += 1;
            if store.value(id)? != text {
                err!(
                    VersionConflict,
                    "storage entry \"{}\" of memory.json differs from the store's; kept the store's (newer) value",
                    key
                )
                .print_warning();
            }
            continue;
        }
        match store.put(&key, &text, now) {
            Ok(_) => report.migrated += 1,
            Err(e) if e.code() == crate::error::Code::CapacityExceeded => {
                e.context(format_args!("storage entry \"{}\" not migrated", key)).print_warning();
                report.skipped += 1;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    use crate::testing::temp_dir;

    #[test]
    fn agent_meta_set_get_remove() {
        let mut a = AgentMeta::new();
        a.set("last_action", "x").unwrap();
        a.set("streak", "1").unwrap();
        a.set("last_action", "y").unwrap();
        assert_eq!(a.get("last_action"), Some("y"));
        assert_eq!(a.iter().map(|(k, _)| k).collect::<Vec<_>>(), ["last_action", "streak"]);
        assert!(a.remove("streak"));
        assert!(!a.remove("streak"));
        assert_eq!(a.set("k", &"v".repeat(AGENT_META_VALUE_MAX_BYTES + 1)).unwrap_err().code(), Code::CapacityExceeded);
        for i in 0..AGENT_META_MAX_ENTRIES - 1 {
            a.set(&format!("k{}", i), "").unwrap();
        }
        assert!(a.set("one_too_many", "").unwrap_err().message().contains("AGENT_META_MAX_ENTRIES"));
    }

    #[test]
    fn decode_bytes_reports_every_problem_and_what_did_not_fit() {
        let mut doc = Document::with_capacity(1024, 256 * 1024);
        let v = |c: &str| c.repeat(50_000);
        let era_b = format!(
            r#"{{"state":"paging","iteration":3,"working_memory":{{"a":"{}","b":"{}","c":"{}"," , ":"x"}},
            "storage":{{"k":"v","l":1}}}}"#,
            v("x"),
            v("y"),
            v("z")
        );
        let (m, r) = decode_bytes(&mut doc, era_b.as_bytes(), 5);
        assert!(r.problems.is_empty());
        assert_eq!((m.state.as_str(), m.iteration, m.working.len()), ("paging", 3, 2));
        let mut overflow = Vec::new();
        Overflow::new(&doc, &r.overflow)
            .for_each(|k, t| {
                overflow.push((k.to_string(), t.len()));
                Ok(())
            })
            .unwrap();
        assert_eq!(overflow, [("c".to_string(), 50_000)]);
        assert_eq!((r.left_out.len(), r.left_out_count, r.storage), (1, 1, 2));
        // Every problem, not only the first; what could be read is kept.
        let (m, r) = decode_bytes(&mut doc, br#"{"state":3,"iteration":"x","working_memory":{"a":"b"},"agent":[]}"#, 5);
        let p: Vec<_> = r.problems.iter().map(|e| e.message()).collect();
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].contains("\"state\" is not a string") && p[2].contains("\"agent\" is not an object"), "{p:?}");
        assert_eq!(m.working.get(&normalize("a").unwrap()), Some("b"));
        let (_, r) = decode_bytes(&mut doc, b"[1", 5);
        assert!(r.problems[0].message().starts_with("not valid JSON"), "{}", r.problems[0].message());
    }

    #[test]
    fn what_decoding_keeps_is_bounded_whatever_the_file_holds() {
        // 3,000 entries (the working set holds 256), 100 keys that do not normalise, 100 agent
        // values of the wrong type.
        let mut f = String::from("{\"working_memory\":{");
        for i in 0..3_000 {
            f.push_str(&format!("\"k{}\":\"v{}\",", i, i));
        }
        for i in 1..=100 {
            f.push_str(&format!("\"{}\":\"x\",", " ".repeat(i)));
        }
        f.push_str("\"last\":\"y\"},\"agent\":{");
        let agent: Vec<String> = (0..100).map(|i| format!("\"a{}\":{}", i, i)).collect();
        f.push_str(&agent.join(","));
        f.push_str("}}");
        let mut doc = Document::with_capacity(8_192, 256 * 1024);
        let (m, r) = decode_bytes(&mut doc, f.as_bytes(), 1);
        assert_eq!(m.working.len(), crate::limits::WORKING_MAX_ENTRIES);
        assert_eq!(r.problems.len(), MEMORY_FILE_REPORT_MAX + 1);
        assert_eq!(r.problems.last().unwrap().message(), "and 84 more problems");
        assert_eq!((r.left_out.len(), r.left_out_count), (MEMORY_FILE_REPORT_MAX, 100));
        // Positions only; the entries are read back from the document, in file order.
        let overflow = Overflow::new(&doc, &r.overflow);
        assert_eq!(overflow.len(), 3_000 - 256 + 1);
        let mut seen = Vec::new();
        overflow
            .for_each(|k, t| {
                seen.push(format!("{}={}", k, t));
                Ok(())
            })
            .unwrap();
        assert_eq!(seen.len(), overflow.len());
        assert_eq!((seen[0].as_str(), seen.last().unwrap().as_str()), ("k256=v256", "last=y"));
        assert!(Overflow::none().is_empty());
    }

    #[test]
    fn save_then_load_is_exact() {
        let d = temp_dir("exact");
        let mut store = Store::open_with_capacity(&d, 16).unwrap();
        let mut m = MemoryFile::new();
        m.set_state("evaluating").unwrap();
        m.iteration = 42;
        m.working.add(&normalize("task").unwrap(), "é→ \"quoted\"\nline\u{1}", 10).unwrap();
        m.working.add(&normalize("b,a").unwrap(), "", 11).unwrap();
        m.working.touch(&normalize("a,b").unwrap(), 12);
        m.agent.set("pending_feedback", "tag <x> was not closed\n").unwrap();
        let mut saver = Saver::new(&d);
        saver.save(&m).unwrap();
        let (l, r) = load(&d, &mut store, 99).unwrap();
        assert_eq!(r.source, Source::Main);
        assert_eq!(l.state.as_str(), "evaluating");
        assert_eq!(l.iteration, 42);
        let a: Vec<_> = m.working.iter().map(|(k, t, meta)| (k.to_string(), t.to_string(), meta)).collect();
        let b: Vec<_> = l.working.iter().map(|(k, t, meta)| (k.to_string(), t.to_string(), meta)).collect();
        assert_eq!(a, b);
        assert_eq!(l.agent.get("pending_feedback"), Some("tag <x> was not closed\n"));
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn corrupt_file_is_moved_aside_and_prev_used() {
        let d = temp_dir("corrupt");
        let mut store = Store::open_with_capacity(&d, 16).unwrap();
        let mut m = MemoryFile::new();
        m.iteration = 1;
        save(&d, &m).unwrap();
        m.iteration = 2;
        save(&d, &m).unwrap();
        fs::write(d.join(MEMORY_FILE), b"{\"state\": \"thinking\", \"iteration\": ").unwrap();
        let (l, r) = load(&d, &mut store, 0).unwrap();
        assert_eq!((r.source, r.moved_aside, l.iteration), (Source::Previous, 1, 1));
        let aside: Vec<_> = fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with("memory.json.corrupt-"))
            .collect();
        assert_eq!(aside.len(), 1);
        assert_eq!(fs::read(d.join(&aside[0])).unwrap(), b"{\"state\": \"thinking\", \"iteration\": ");
        // Both unusable: a fresh memory, both kept aside.
        fs::write(d.join(MEMORY_FILE), b"[]").unwrap();
        fs::write(d.join("memory.json.prev"), b"{\"state\": 3}").unwrap();
        let (l, r) = load(&d, &mut store, 0).unwrap();
        assert_eq!((r.source, r.moved_aside, l.iteration, l.state.as_str()), (Source::Fresh, 2, 0, "thinking"));
        // Missing: fresh, nothing moved.
        let (_, r) = load(&d, &mut store, 0).unwrap();
        assert_eq!((r.source, r.moved_aside), (Source::Fresh, 0));
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn era_b_file_is_read_and_storage_migrated_once() {
        let d = temp_dir("erab");
        let mut store = Store::open_with_capacity(&d, 16).unwrap();
        let era_b = r#"{"state":"thinking","working_memory":{"task":"Create a dictionary","Think Log 001":"hm",
            "search_results":{"a,b":"a,b,c,a,b"},"n":42,"flag":true,"gone":null},
            "storage":{"art,dictionary,history":"plain","b , A":-1.5e3,"deep":{"x":[1,"y"]},"e":null,
            "":"no key"}}"#;
        fs::write(d.join(MEMORY_FILE), era_b).unwrap();
        let (m, r) = load(&d, &mut store, 7).unwrap();
        assert_eq!((r.migrated, r.already_stored, r.skipped), (4, 0, 1));
        let wm: Vec<_> = m.working.iter().map(|(k, t, _)| (k.to_string(), t.to_string())).collect();
        assert_eq!(
            wm,
            [
                ("task".to_string(), "Create a dictionary".to_string()),
                ("think_log_001".into(), "hm".into()),
                ("search_results".into(), r#"{"a,b":"a,b,c,a,b"}"#.into()),
                ("n".into(), "42".into()),
                ("flag".into(), "true".into()),
                ("gone".into(), "".into()),
            ]
        );
        assert_eq!(store.load(&normalize("a,b").unwrap(), 8).unwrap(), Some("-1.5e3"));
        assert_eq!(store.load(&normalize("deep").unwrap(), 8).unwrap(), Some(r#"{"x":[1,"y"]}"#));
        assert_eq!(store.load(&normalize("e").unwrap(), 8).unwrap(), Some(""));
        // The file was saved without storage; the era-B original is the .prev.
        let text = fs::read_to_string(d.join(MEMORY_FILE)).unwrap();
        assert!(!text.contains("\"storage\""));
        assert_eq!(fs::read_to_string(d.join("memory.json.prev")).unwrap(), era_b);
        // Migrating again (as after a crash before that save) duplicates and loses nothing,
        // and never overwrites what the store holds now.
        store.put(&normalize("art,dictionary,history").unwrap(), "newer", 9).unwrap();
        fs::write(d.join(MEMORY_FILE), era_b).unwrap();
        let (_, r) = load(&d, &mut store, 10).unwrap();
        assert_eq!((r.migrated, r.already_stored), (0, 4));
        assert_eq!(store.len(), 4);
        assert_eq!(store.load(&normalize("art,dictionary,history").unwrap(), 11).unwrap(), Some("newer"));
        // A working memory larger than the working set: the rest goes to the store.
        let v = |c: &str| c.repeat(50_000);
        let big = format!(r#"{{"working_memory":{{"a":"{}","b":"{}","c":"{}"}}}}"#, v("x"), v("y"), v("z"));
        fs::write(d.join(MEMORY_FILE), &big).unwrap();
        let (m, r) = load(&d, &mut store, 13).unwrap();
        assert_eq!((r.source, r.paged_out, m.working.len()), (Source::Main, 1, 2));
        assert_eq!(store.load(&normalize("c").unwrap(), 14).unwrap().map(str::len), Some(50_000));
        assert!(!fs::read_to_string(d.join(MEMORY_FILE)).unwrap().contains("zzz"), "saved without it");
        // One that fits nowhere is an error, and the file stays as it is.
        let huge =
            format!(r#"{{"working_memory":{{"a":"{}","b":"{}","h":"{}"}}}}"#, v("x"), v("y"), "h".repeat(70_000));
        fs::write(d.join(MEMORY_FILE), &huge).unwrap();
        let e = load(&d, &mut store, 15).err().unwrap();
        assert_eq!(e.code(), Code::CapacityExceeded);
        assert!(e.message().contains("left untouched"), "{}", e.message());
        assert_eq!(fs::read_to_string(d.join(MEMORY_FILE)).unwrap(), huge);
        // "storage": null is accepted.
        fs::write(d.join(MEMORY_FILE), r#"{"state":"paging","working_memory":{},"storage":null}"#).unwrap();
        let (m, r) = load(&d, &mut store, 12).unwrap();
        assert_eq!((m.state.as_str(), r.migrated, r.source), ("paging", 0, Source::Main));
        fs::remove_dir_all(&d).unwrap();
    }
}
