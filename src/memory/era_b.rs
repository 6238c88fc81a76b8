//! Export and import in the era-B shape, for users and their tools (`lkjagent memory export`,
//! `memory import`):
//!
//! ```json
//! {
//!   "state": "thinking",
//!   "iteration": 12,
//!   "working_memory": { "task": "..." },
//!   "storage": { "dictionary,terms": "a word list", "notes,rust": "..." },
//!   "archived": [ "notes,rust" ],
//!   "store_meta": { "notes,rust": { "version": 2, "created": 1767225600, "accessed": 1767225700, "hits": 3 } },
//!   "links": [ [ "dictionary,terms", "notes,rust" ] ],
//!   "cold": [ { "tags": "old,note", "value": "...", "version": 1, "created": 1767000000,
//!               "accessed": 1767000000, "hits": 0, "archived": false } ]
//! }
//! ```
//!
//! `storage` maps each entry's canonical key text to its value, as the C program's
//! `memory.json` did, so scripts written for era B read an export unchanged. The rest are
//! additions era-B tools ignore, so that an export/import round trip is faithful: `archived`
//! lists the keys of archived entries; `store_meta` each entry's version, creation and last
//! use times and access count; `links` the related pairs; `cold` the cold store's current
//! entries (each key once, see `store::cold`) with all their fields.
//!
//! Import is checked as a whole before anything is written ([`Import::check`]): every key must
//! normalise and every `storage` value must fit the store, else nothing is imported. Then
//! ([`Import::apply`]) the `working_memory` entries go into the given memory file (in RAM; the
//! caller saves it), the store's capacity is checked, every `storage` entry is stored (an
//! imported value replaces the store's: importing is the user's explicit act) and the listed
//! keys are archived; entries new to the store take their fields from `store_meta`, the `links`
//! between entries the store holds are made, and the `cold` entries go to the cold store (one
//! group, synced, written before the live batch) unless the store holds their key (live, or
//! cold with the same creation time and version). Values that are numbers, booleans, `null` or nested JSON are taken as
//! their text, as when migrating an era-B `memory.json`. `state` and `iteration` are not
//! imported: the agent's state machine owns them. Importing the same document twice changes
//! nothing the second time.

use crate::bytes::str_prefix;
use crate::error::Result;
use crate::json::{Document, Kind, Value, Writer};
use crate::limits::{EXCHANGE_FILE_MAX_BYTES, EXCHANGE_FILE_MAX_NODES, STORE_VALUE_MAX_BYTES};
use crate::memory::file::{value_text, MemoryFile, Overflow};
use crate::memory::key::{normalize, Key};
use crate::memory::log::PutHead;
use crate::memory::store::{Change, Store};
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
    /// Entries of `pending` written under `storage` (those the store does not hold).
    pub pending: usize,
    /// Entries of the cold store written under `cold`.
    pub cold: usize,
}

/// Writes the store (if there is one) and, if given, the memory file's state, iteration and
/// working memory to `out` as pretty JSON in the era-B shape, ending with a newline. `pending`
/// are entries on their way to the store (the `working_memory` entries that do not fit the
/// working set, which the agent stores at its next start): they are written under `storage`
/// unless the store holds their key already. Values are read from the log one at a time:
/// memory use does not grow with the store.
pub fn export(
    mut store: Option<&mut Store>,
    memory: Option<&MemoryFile>,
    pending: Overflow<'_>,
    out: &mut dyn fmt::Write,
) -> Result<ExportReport> {
    let mut report = ExportReport::default();
    let mut w = Writer::pretty(out);
    w.begin_object()?;
    if let Some(m) = memory {
        m.write_head(&mut w)?;
        report.working = m.working.len();
    }
    w.key("storage")?;
    w.begin_object()?;
    if let Some(store) = store.as_deref_mut() {
        // Walk the ids the store has by number (it cannot be borrowed by an iterator while
        // values are read): below `id_limit`, never the capacity, which a store that turns over
        // passes (ids of moved entries come back only at a compaction).
        for id in 0..store.id_limit() {
            let Some(k) = store.key(id) else { continue };
            w.key(k.as_str())?;
            w.string(store.value(id)?)?;
            report.entries += 1;
        }
    }
    pending.for_each(|k, text| {
        if store.as_deref().is_some_and(|s| s.find(k).is_some()) {
            return Ok(());
        }
        w.key(k.as_str())?;
        w.string(text)?;
        report.pending += 1;
        Ok(())
    })?;
    w.end_object()?;
    w.key("archived")?;
    w.begin_array()?;
    if let Some(store) = store.as_deref() {
        for id in store.ids() {
            if let Some(info) = store.info(id).filter(|i| i.archived) {
                w.string(info.key.as_str())?;
                report.archived += 1;
            }
        }
    }
    w.end_array()?;
    if let Some(store) = store.as_deref() {
        w.key("store_meta")?;
        w.begin_object()?;
        for id in store.ids() {
            let Some(info) = store.info(id) else { continue };
            w.key(info.key.as_str())?;
            w.begin_object()?;
            for (name, n) in [
                ("version", u64::from(info.version)),
                ("created", info.created),
                ("accessed", info.accessed),
                ("hits", info.hits),
            ] {
                w.key(name)?;
                w.u64(n)?;
            }
            w.end_object()?;
        }
        w.end_object()?;
        w.key("links")?;
        w.begin_array()?;
        for &(a, b) in store.link_pairs() {
            let (Some(ka), Some(kb)) = (store.key(a), store.key(b)) else { continue };
            w.begin_array()?;
            w.string(ka.as_str())?;
            w.string(kb.as_str())?;
            w.end_array()?;
        }
        w.end_array()?;
    }
    // The cold store (`store.cold`): what clean-ups took out of the store, as a list of its
    // current entries (each key once, its newest value; none whose key is live).
    if let Some(store) = store.as_deref() {
        w.key("cold")?;
        w.begin_array()?;
        let mut value = String::new();
        crate::memory::store::cold::scan_current(store.dir(), &|k| store.find(k).is_some(), &mut |e| {
            value.clear();
            crate::memory::log::decode_str(e.value_escaped, &mut value)?;
            w.begin_object()?;
            w.key("tags")?;
            w.string(e.key.as_str())?;
            w.key("value")?;
            w.string(&value)?;
            for (name, n) in [
                ("version", u64::from(e.head.ver)),
                ("created", e.head.created),
                ("accessed", e.head.accessed),
                ("hits", e.head.hits),
            ] {
                w.key(name)?;
                w.u64(n)?;
            }
            w.key("archived")?;
            w.bool(e.head.archived)?;
            w.end_object()?;
            report.cold += 1;
            Ok(true)
        })?;
        w.end_array()?;
    }
    w.end_object()?;
    w.finish()?;
    out.write_str("\n").map_err(|_| err!(Io, "cannot write the export"))?;
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
    fn write_char(&mut self, c: char) -> core::fmt::Result {
        crate::bytes::write_char(self, c)
    }

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

/// How many entries an import added, replaced, or found as they were.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Keys that were not there.
    pub added: usize,
    /// Keys that were there with another value.
    pub replaced: usize,
    /// Keys that were there with the same value.
    pub unchanged: usize,
}

/// What an import did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// `working_memory` entries, against the memory file.
    pub working: Counts,
    /// `storage` entries, against the store.
    pub stored: Counts,
    /// Listed keys found in the store, now archived.
    pub archived: usize,
    /// `cold` entries written to the cold store (`added`) or found there or live (`unchanged`).
    pub cold: Counts,
    /// `links` made.
    pub links: usize,
}

/// The sections of an import document (each absent or `null` as `None`).
struct Sections<'a> {
    working: Option<Value<'a>>,
    storage: Option<Value<'a>>,
    archived: Option<Value<'a>>,
    meta: Option<Value<'a>>,
    links: Option<Value<'a>>,
    cold: Option<Value<'a>>,
}

/// The whole number `name` of `v`, `default` when it is absent (one function for the entry's
/// four numbers).
#[inline(never)]
fn whole_field(v: Option<Value<'_>>, name: &str, default: u64) -> Result<u64> {
    match v.and_then(|v| v.get(name)) {
        None => Ok(default),
        Some(n) => n.as_u64().ok_or_else(|| err!(JsonInvalid, "\"{}\" is not a whole number >= 0", name)),
    }
}

/// The fields of an exported entry (`store_meta`'s, or a `cold` item's), those missing from
/// `now`; `JSON_INVALID` when one is not a number of its range.
fn head_of(v: Option<Value<'_>>, now: u64, archived: bool) -> Result<PutHead> {
    let field = |name: &str, default: u64| whole_field(v, name, default);
    let version = u32::try_from(field("version", 1)?.max(1))
        .map_err(|_| err!(JsonInvalid, "\"version\" is larger than {}", u32::MAX))?;
    let archived = match v.and_then(|v| v.get("archived")) {
        None => archived,
        Some(b) => b.as_bool().ok_or_else(|| err!(JsonInvalid, "\"archived\" is not true or false"))?,
    };
    let created = field("created", now)?;
    Ok(PutHead {
        id: 0,
        ver: version,
        created,
        accessed: field("accessed", created)?,
        hits: field("hits", 0)?,
        archived,
    })
}

/// The top-level keys an import knows; others are ignored with a warning. `working_memory_meta`
/// and `agent` (a `memory.json` imported as it is) are known and ignored.
const KNOWN_KEYS: [&str; 10] = [
    "state",
    "iteration",
    "working_memory",
    "working_memory_meta",
    "agent",
    "storage",
    "archived",
    "store_meta",
    "links",
    "cold",
];

/// An import document, parsed and checked as a whole; nothing is written until
/// [`Import::apply`]. See the module documentation.
pub struct Import {
    doc: Document,
}

impl Import {
    /// Parses `bytes` (at most [`EXCHANGE_FILE_MAX_BYTES`]) and checks every key and every
    /// `storage` value's size. Writes nothing.
    pub fn check(bytes: &[u8]) -> Result<Import> {
        if bytes.len() > EXCHANGE_FILE_MAX_BYTES {
            bail!(
                CapacityExceeded,
                "the import document is {} bytes, more than {} (EXCHANGE_FILE_MAX_BYTES); split it",
                bytes.len(),
                EXCHANGE_FILE_MAX_BYTES
            );
        }
        // Sized by the input: every value but the top-level one takes at least two bytes (its
        // own, and the `[`, `,` or `:` before it), its text at most the input.
        let nodes = EXCHANGE_FILE_MAX_NODES.min(bytes.len() / 2 + 1);
        let mut doc = Document::with_capacity(nodes, bytes.len() + 1);
        doc.parse(bytes)?;
        let import = Import { doc };
        let root = import.doc.root();
        if root.kind() != Kind::Object {
            bail!(
                JsonInvalid,
                "the import document's top level is {}, not an object {{state, working_memory, storage}}",
                root.kind().name()
            );
        }
        for (k, _) in root.members().filter(|(k, _)| !KNOWN_KEYS.contains(k)) {
            err!(JsonInvalid, "unknown key \"{}\" of the import document ignored", str_prefix(k, 64)).print_warning();
        }
        let Sections { working, storage, archived, meta, links, cold } = import.sections()?;
        for (k, v) in meta.iter().flat_map(|o| o.members()) {
            normalize(k).map_err(|e| e.context(format_args!("store_meta key \"{}\"", str_prefix(k, 64))))?;
            head_of(Some(v), 0, false).map_err(|e| e.context(format_args!("store_meta \"{}\"", str_prefix(k, 64))))?;
        }
        for pair in links.iter().flat_map(|a| a.items()) {
            let keys: Vec<&str> = pair.items().filter_map(|v| v.as_str()).collect();
            if keys.len() != 2 || pair.len() != 2 {
                bail!(JsonInvalid, "a \"links\" item is not a pair of keys [\"a,b\", \"c\"]");
            }
            for k in keys {
                normalize(k).map_err(|e| e.context(format_args!("links key \"{}\"", str_prefix(k, 64))))?;
            }
        }
        for item in cold.iter().flat_map(|a| a.items()) {
            let (Some(tags), Some(value)) =
                (item.get("tags").and_then(|v| v.as_str()), item.get("value").and_then(|v| v.as_str()))
            else {
                bail!(JsonInvalid, "a \"cold\" item has no \"tags\" or \"value\" string");
            };
            let key = normalize(tags).map_err(|e| e.context(format_args!("cold key \"{}\"", str_prefix(tags, 64))))?;
            head_of(Some(item), 0, false).map_err(|e| e.context(format_args!("cold \"{}\"", key)))?;
            if value.len() > STORE_VALUE_MAX_BYTES {
                bail!(
                    CapacityExceeded,
                    "cold \"{}\" is {} bytes; the store holds values up to {} (limits::STORE_VALUE_MAX_BYTES)",
                    key,
                    value.len(),
                    STORE_VALUE_MAX_BYTES
                );
            }
        }
        for (k, _) in working.iter().flat_map(|o| o.members()) {
            normalize(k).map_err(|e| e.context(format_args!("working_memory key \"{}\"", str_prefix(k, 64))))?;
        }
        let mut text = String::new();
        for (k, v) in storage.iter().flat_map(|o| o.members()) {
            let key = normalize(k).map_err(|e| e.context(format_args!("storage key \"{}\"", str_prefix(k, 64))))?;
            value_text(v, &mut text)?;
            if text.len() > STORE_VALUE_MAX_BYTES {
                bail!(
                    CapacityExceeded,
                    "storage \"{}\" is {} bytes; the store holds values up to {} (limits::STORE_VALUE_MAX_BYTES)",
                    key,
                    text.len(),
                    STORE_VALUE_MAX_BYTES
                );
            }
        }
        for item in archived.iter().flat_map(|a| a.items()) {
            let Some(k) = item.as_str() else { bail!(JsonInvalid, "an \"archived\" item is not a string") };
            normalize(k).map_err(|e| e.context(format_args!("archived key \"{}\"", str_prefix(k, 64))))?;
        }
        Ok(import)
    }

    /// `working_memory`, `storage`, `store_meta` (objects), `archived`, `links` and `cold`
    /// (arrays), each absent or `null` as `None`; another type is `JSON_INVALID`.
    fn sections(&self) -> Result<Sections<'_>> {
        let root = self.doc.root();
        // A function, not a closure: compiled once, not at each of its six uses.
        #[inline(never)]
        fn section<'a>(root: Value<'a>, name: &str, kind: Kind) -> Result<Option<Value<'a>>> {
            match root.get(name) {
                None => Ok(None),
                Some(v) if v.is_null() => Ok(None),
                Some(v) if v.kind() == kind => Ok(Some(v)),
                Some(_) => bail!(JsonInvalid, "\"{}\" is not an {}", name, kind.name()),
            }
        }
        let section = |name: &str, kind: Kind| section(root, name, kind);
        Ok(Sections {
            working: section("working_memory", Kind::Object)?,
            storage: section("storage", Kind::Object)?,
            archived: section("archived", Kind::Array)?,
            meta: section("store_meta", Kind::Object)?,
            links: section("links", Kind::Array)?,
            cold: section("cold", Kind::Array)?,
        })
    }

    /// Imports the checked document: `working_memory` into `memory` (the caller saves it),
    /// then `storage` into `store` and archives the listed keys, as one batch synced once (durable
    /// when this returns `Ok`).
    /// A working set or store too small for the document is `CAPACITY_EXCEEDED` before the
    /// store is written; `memory` may then hold part of the document and should be dropped.
    pub fn apply(&self, store: &mut Store, memory: &mut MemoryFile, now: u64) -> Result<ImportReport> {
        let Sections { working, storage, archived, meta, links, cold } = self.sections()?;
        let mut report = ImportReport::default();
        let mut text = String::new();
        for (k, v) in working.iter().flat_map(|o| o.members()) {
            let key = normalize(k)?;
            value_text(v, &mut text)?;
            let counter = match memory.working.get(&key) {
                Some(old) if old == text => &mut report.working.unchanged,
                Some(_) => &mut report.working.replaced,
                None => &mut report.working.added,
            };
            *counter += 1;
            memory.working.add(&key, &text, now).map_err(|e| e.context(format_args!("working_memory \"{}\"", key)))?;
        }
        // Everything the store is asked to hold is checked before anything is written: the
        // entries, the new tags, the links, and how many records the import will write (the
        // batch announces them, so that a crash part way can say how much is in).
        let mut new_keys = 0;
        let mut changes = 0u64;
        let mut new_tags: Vec<String> = Vec::new();
        // The keys to archive (a short list, usually): one change each for an entry the store
        // holds unarchived; an entry the import creates is created archived.
        let mut to_archive: Vec<Key> = Vec::new();
        for k in archived.iter().flat_map(|a| a.items()).filter_map(|v| v.as_str()) {
            to_archive.push(normalize(k)?);
        }
        crate::sort::sort(&mut to_archive);
        to_archive.dedup();
        for key in &to_archive {
            if let Some(id) = store.find(key) {
                changes += u64::from(store.info(id).is_some_and(|i| !i.archived));
            }
        }
        let mut imported: Vec<Key> = Vec::new();
        for (k, v) in storage.iter().flat_map(|o| o.members()) {
            let key = normalize(k)?;
            imported.push(key);
            value_text(v, &mut text)?;
            match store.find(&key) {
                None => {
                    new_keys += 1;
                    changes += 1;
                    for t in key.tags().filter(|t| !store.has_tag(t)) {
                        new_tags.push(t.to_string());
                    }
                }
                Some(id) => changes += u64::from(store.value(id)? != text),
            }
        }
        crate::sort::sort(&mut imported);
        imported.dedup();
        if store.len() + new_keys > store.capacity() {
            bail!(
                CapacityExceeded,
                "the store holds {} of {} entries; {} new ones do not fit (memory.store_capacity); nothing was imported",
                store.len(),
                store.capacity(),
                new_keys
            );
        }
        crate::sort::sort(&mut new_tags);
        new_tags.dedup();
        store.check_tag_room(new_tags.len(), new_tags.iter().map(String::len).sum()).map_err(|e| {
            e.context(format_args!("the import brings {} new tags; nothing was imported", new_tags.len()))
        })?;
        // Links whose two ends the store will hold (at most one change each).
        let mut link_pairs: Vec<(Key, Key)> = Vec::new();
        for pair in links.iter().flat_map(|a| a.items()) {
            let mut keys = pair.items().filter_map(|v| v.as_str()).map(normalize);
            if let (Some(a), Some(b)) = (keys.next(), keys.next()) {
                let (a, b) = (a?, b?);
                let held = |k: &Key| store.find(k).is_some() || imported.binary_search(k).is_ok();
                if a != b && held(&a) && held(&b) {
                    link_pairs.push((a, b));
                }
            }
        }
        if store.stats().links + link_pairs.len() > crate::limits::STORE_MAX_LINKS {
            bail!(
                CapacityExceeded,
                "the store holds {} links and the import brings up to {}, more than {} (STORE_MAX_LINKS); nothing \
                 was imported",
                store.stats().links,
                link_pairs.len(),
                crate::limits::STORE_MAX_LINKS
            );
        }
        changes += link_pairs.len() as u64;
        // The cold tier first, as one group synced once: a crash before the live batch leaves
        // it there, and importing again finds it (same creation time and version) and goes on.
        // Each current cold key (by its 64-bit hash) with its creation time and version.
        let hash = |k: &Key| crate::memory::hash::fnv1a64(k.as_str().as_bytes());
        let mut found = Vec::new();
        if cold.is_some_and(|c| !c.is_empty()) {
            crate::memory::store::cold::scan_current(store.dir(), &|k| store.find(k).is_some(), &mut |e| {
                found.push((hash(&e.key), (e.head.created, e.head.ver)));
                Ok(true)
            })?;
        }
        let in_cold = LastOf::new(found);
        let mut cold_group: Vec<(Key, PutHead, String)> = Vec::new();
        for item in cold.iter().flat_map(|a| a.items()) {
            let (Some(tags), Some(value)) =
                (item.get("tags").and_then(|v| v.as_str()), item.get("value").and_then(|v| v.as_str()))
            else {
                continue;
            };
            let key = normalize(tags)?;
            let head = head_of(Some(item), now, false)?;
            let held = store.find(&key).is_some()
                || imported.binary_search(&key).is_ok()
                || in_cold.get(&hash(&key)) == Some((head.created, head.ver));
            if held {
                report.cold.unchanged += 1;
                continue;
            }
            report.cold.added += 1;
            cold_group.push((key, head, value.to_string()));
        }
        store.put_cold_group(&cold_group)?;
        drop(cold_group);
        // Each key's `store_meta` member (the last of a repeated one, as `Value::get` finds it),
        // found by hash: one `get` per entry scans the whole object, which made an import of
        // 65,536 entries take 54 s of CPU (docs/measurements.md).
        let meta_of = LastOf::new(meta.iter().flat_map(|o| o.members()).collect());
        store.begin_batch(changes)?;
        let res = (|| {
            for (k, v) in storage.iter().flat_map(|o| o.members()) {
                let key = normalize(k)?;
                value_text(v, &mut text)?;
                let archived = to_archive.binary_search(&key).is_ok();
                let head = head_of(meta_of.get(&k), now, archived)?;
                match store.put_with(&key, &text, &head)?.change {
                    Change::Created => {
                        report.stored.added += 1;
                        report.archived += usize::from(archived);
                    }
                    Change::Updated => report.stored.replaced += 1,
                    Change::Unchanged => report.stored.unchanged += 1,
                }
            }
            for key in &to_archive {
                if store.find(key).and_then(|id| store.info(id)).is_some_and(|i| !i.archived) {
                    store.set_archived(key, true, now)?;
                    report.archived += 1;
                }
            }
            for (a, b) in &link_pairs {
                let (Some(ia), Some(ib)) = (store.find(a), store.find(b)) else { continue };
                if !store.linked(ia, ib) {
                    store.link(ia, ib)?;
                    report.links += 1;
                }
            }
            Ok(())
        })();
        let synced = store.end_batch();
        res.and(synced)?;
        Ok(report)
    }
}

/// A map made once and then only read, as a list sorted by key: of a key given twice, the
/// later value is the one found, as a `HashMap`'s `insert` keeps it. A `HashMap` compiled its
/// table code again for each key type, about 2 KB each (docs/measurements.md, "Fifth house
/// session").
struct LastOf<K, V>(Vec<(K, usize, V)>);

impl<K: Ord + Copy, V: Copy> LastOf<K, V> {
    fn new(items: Vec<(K, V)>) -> Self {
        let mut list: Vec<(K, usize, V)> = items.into_iter().enumerate().map(|(i, (k, v))| (k, i, v)).collect();
        crate::sort::sort_by_key(&mut list, |e| (e.0, e.1));
        LastOf(list)
    }

    /// The value given last for `k`.
    fn get(&self, k: &K) -> Option<V> {
        let after = self.0.partition_point(|e| e.0 <= *k);
        self.0.get(after.checked_sub(1)?).filter(|e| e.0 == *k).map(|e| e.2)
    }
}

/// Checks and imports an era-B document in one step (see [`Import`]).
pub fn import(bytes: &[u8], store: &mut Store, memory: &mut MemoryFile, now: u64) -> Result<ImportReport> {
    Import::check(bytes)?.apply(store, memory, now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::key::normalize;

    #[test]
    fn last_of_finds_the_value_given_last_for_a_key() {
        let m = LastOf::new(vec![("b", 1), ("a", 2), ("b", 3), ("c", 4), ("b", 5), ("a", 6)]);
        assert_eq!(m.get(&"a"), Some(6));
        assert_eq!(m.get(&"b"), Some(5));
        assert_eq!(m.get(&"c"), Some(4));
        assert_eq!(m.get(&""), None);
        assert_eq!(m.get(&"bb"), None);
        assert_eq!(m.get(&"d"), None);
        assert_eq!(LastOf::<u64, u8>::new(Vec::new()).get(&0), None);
    }

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
        let r = export(Some(&mut s), Some(&m), Overflow::none(), &mut out).unwrap();
        assert_eq!((r.entries, r.archived, r.working), (2, 1, 1));
        assert!(out.contains("\"dictionary,terms\": \"words → \\\"list\\\"\\n\""), "{}", out);

        let mut s2 = Store::open_with_capacity(&d.join("b"), 16).unwrap();
        let mut m2 = MemoryFile::new();
        let r = import(out.as_bytes(), &mut s2, &mut m2, 9).unwrap();
        assert_eq!((r.stored.added + r.stored.replaced, r.stored.unchanged, r.archived, r.working.added), (2, 0, 1, 1));
        assert_eq!(s2.load(&normalize("terms,dictionary").unwrap(), 10).unwrap(), Some("words → \"list\"\n"));
        assert!(s2.info(s2.find(&normalize("notes").unwrap()).unwrap()).unwrap().archived);
        assert_eq!(m2.working.get(&normalize("task").unwrap()), Some("do it"));
        // Streaming to an io::Write gives the same text.
        let mut io = IoText::new(Vec::new());
        export(Some(&mut s), Some(&m), Overflow::none(), &mut io).unwrap();
        assert_eq!(io.finish().unwrap(), out.as_bytes());
        // Importing the same again changes nothing.
        let r = import(out.as_bytes(), &mut s2, &mut MemoryFile::new(), 11).unwrap();
        assert_eq!((r.stored.added + r.stored.replaced, r.stored.unchanged), (0, 2));
        // Shape errors are refused before anything is stored.
        let e = import(br#"{"storage": []}"#, &mut s2, &mut MemoryFile::new(), 12).unwrap_err();
        assert_eq!(e.code(), crate::error::Code::JsonInvalid);
        let e = import(b"{\"storage\": {", &mut s2, &mut MemoryFile::new(), 12).unwrap_err();
        assert_eq!(e.code(), crate::error::Code::JsonInvalid);
        // A key that does not normalise, or a value too big for the store, anywhere: nothing is
        // imported, not even the entries before it.
        let bad = format!(r#"{{"storage": {{"fresh": "x", "big": "{}"}}}}"#, "v".repeat(STORE_VALUE_MAX_BYTES + 1));
        let e = import(bad.as_bytes(), &mut s2, &mut MemoryFile::new(), 12).unwrap_err();
        assert_eq!(e.code(), crate::error::Code::CapacityExceeded);
        let e = import(br#"{"storage": {"fresh": "x", " , ": "y"}}"#, &mut s2, &mut MemoryFile::new(), 12).unwrap_err();
        assert_eq!(e.code(), crate::error::Code::KeyInvalid);
        assert_eq!((s2.len(), s2.find(&normalize("fresh").unwrap())), (2, None));
        // The document is sized by the input, tightly: the densest texts still parse (and a
        // top level that is not an object is then refused for what it is).
        for dense in ["1", "[1]", "[1,1,1]", "[[[[]]]]", "[[],[],[]]"] {
            let e = Import::check(dense.as_bytes()).err().unwrap();
            assert!(e.message().contains("not an object"), "{dense}: {}", e.message());
        }
        assert!(Import::check(br#"{"archived":[],"storage":{"a":{"b":[1,{}]}}}"#).is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
