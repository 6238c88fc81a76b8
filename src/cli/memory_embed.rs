//! Recall by meaning in the `memory` commands: `memory search --by words|meaning|both`, and
//! `memory embed`, which fills every missing or stale vector now (the agent fills
//! `EMBED_FILL_PER_CYCLE` per cycle) and rewrites the vectors file without its dead records.
//!
//! `memory search` is a reader: it opens `store.vec` read-only, embeds the query (one request)
//! and ranks; it embeds no entries. An endpoint that does not answer makes it search by words,
//! with one warning. `memory embed` is a writer: it takes the data directory's lock, like
//! `import` and `compact`.

use super::args::Args;
use super::util::{lock_data_dir, say};
use crate::agent::checker::Checker;
use crate::agent::embed_config;
use crate::error::{Code, Result};
use crate::json::Document;
use crate::limits::CONFIG_FILE_MAX_BYTES;
use crate::llm::embed::{meaning, EmbedSettings};
use crate::memory::store::vectors::{By, Meaning};
use crate::memory::store::{Store, LOG_NAME};
use std::io::Write;
use std::path::Path;

/// `memory.embeddings` of `dir/config.json` alone: `Ok(None)` when there is no config file or
/// no such object. Problems in it are `CONFIG_INVALID`; the rest of the file is not checked
/// (that is `lkjagent check`'s job).
pub fn load(dir: &Path) -> Result<Option<EmbedSettings>> {
    let path = dir.join(crate::agent::config::FILE_NAME);
    let bytes = match std::fs::metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        _ => crate::agent::config::read_bounded(&path, CONFIG_FILE_MAX_BYTES)?,
    };
    let mut doc = Document::with_capacity(bytes.len() / 2 + 64, bytes.len() + 64);
    doc.parse(&bytes).map_err(|e| e.with_code(Code::ConfigJsonInvalid).context(format_args!("{}", path.display())))?;
    let mut c = Checker::new();
    let s = embed_config::read(&mut c, doc.root().get("memory"), "memory");
    if let Some(p) = c.problems().first() {
        bail!(ConfigInvalid, "{}: {}", path.display(), p);
    }
    Ok(s)
}

/// `--by words|meaning|both`: the default is `both` (words alone when no embeddings are
/// configured).
pub fn by_option(args: &mut Args) -> Result<By> {
    match args.value("--by")? {
        None => Ok(By::Both),
        Some(v) => By::from_name(v.trim()).ok_or_else(|| err!(Usage, "--by takes words, meaning or both, not '{}'", v)),
    }
}

/// Recall by meaning for a reader of `store`, when `memory.embeddings` is configured and `by`
/// asks for it. `--by meaning` without embeddings is a usage error.
pub fn for_search(data: &Path, store: &Store, by: By) -> Result<Option<Meaning>> {
    if by == By::Words {
        return Ok(None);
    }
    match load(data)? {
        Some(settings) => match meaning(store, &settings, false) {
            Ok(m) => Ok(Some(m)),
            Err(e) if e.code() == Code::ConfigInvalid => Err(e),
            // store.vec is a cache: unreadable, it only leaves the words.
            Err(e) => {
                e.context(format_args!("searching by words only")).print_warning();
                Ok(None)
            }
        },
        None if by == By::Meaning => {
            bail!(Usage, "--by meaning needs memory.embeddings in {}", data.join("config.json").display())
        }
        None => Ok(None),
    }
}

/// `lkjagent memory embed [--limit N]`.
pub fn embed(mut args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    let limit = match args.value("--limit")? {
        None => usize::MAX,
        Some(v) => crate::bytes::parse_usize(&v).ok_or_else(|| err!(Usage, "--limit takes a number, not '{}'", v))?,
    };
    args.finish("memory embed")?;
    let Some(settings) = load(data)? else {
        bail!(Usage, "no memory.embeddings in {}: recall by meaning is off", data.join("config.json").display());
    };
    let _lock = lock_data_dir(data)?;
    if !data.join(LOG_NAME).exists() {
        say(out, format_args!("no store yet in {}; nothing to embed", data.display()))?;
        return Ok(super::EXIT_OK);
    }
    let mut store = Store::open_with_capacity(data, super::util::store_capacity(data))?;
    let mut m = meaning(&store, &settings, true)?;
    let mut total = 0usize;
    let mut idle = 0usize;
    let stop = crate::signal::stop_requested;
    while total < limit && !stop() {
        let f = m.fill(&mut store, (limit - total).min(crate::limits::EMBED_FILL_PER_CYCLE), &stop)?;
        total += f.embedded;
        if f.missing > 0 {
            bail!(LlmUnavailable, "the embeddings endpoint failed after {} vectors (see the warning above)", total);
        }
        if m.stats().current >= store.len() {
            break;
        }
        // A fill looks at EMBED_SCAN_PER_CYCLE ids: after a whole round without work, done.
        idle = if f.embedded == 0 { idle + 1 } else { 0 };
        if idle * crate::limits::EMBED_SCAN_PER_CYCLE > store.capacity() * 2 + 64 {
            break;
        }
    }
    m.compact(&store)?;
    let st = m.stats();
    say(
        out,
        format_args!(
            "{}: {} vectors embedded now, {} of {} entries have a current vector ({} requests)",
            m.path().display(),
            total,
            st.current,
            store.len(),
            st.requests
        ),
    )?;
    Ok(super::EXIT_OK)
}
