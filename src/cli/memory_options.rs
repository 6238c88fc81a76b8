//! The options and output the `memory` subcommands share: tags, `--limit`, `--archived`, the
//! store opened for reading, and the lines of a query's hits.

use super::args::Args;
use super::util::{open_store_read_only, say, StoreRead, Time};
use crate::error::{Code, Result};
use crate::limits::STORE_QUERY_MAX_RESULTS;
use crate::memory::key::{normalize_optional, Key};
use crate::memory::query::{Archived, EntryId, Results};
use crate::memory::store::{EntryInfo, Store, LOG_NAME};
use std::io::Write;
use std::path::Path;

/// The metadata of entries `ids` (the live ones).
pub(super) fn infos_of(store: &Store, ids: impl Iterator<Item = EntryId>) -> Vec<EntryInfo> {
    ids.filter_map(|id| store.info(id)).collect()
}

pub(super) fn tags_option(args: &mut Args, name: &str) -> Result<Option<Key>> {
    match args.value(name)? {
        None => Ok(None),
        Some(v) => normalize_optional(&v).map_err(|e| e.with_code(Code::Usage).context(format_args!("{}", name))),
    }
}

pub(super) fn limit_option(args: &mut Args) -> Result<usize> {
    match args.value("--limit")? {
        None => Ok(50),
        Some(v) => match crate::bytes::parse_usize(&v) {
            Some(n) if (1..=STORE_QUERY_MAX_RESULTS).contains(&n) => Ok(n),
            _ => bail!(Usage, "--limit '{}' is not a number from 1 to {}", v, STORE_QUERY_MAX_RESULTS),
        },
    }
}

pub(super) fn archived_option(args: &mut Args) -> Result<Archived> {
    match args.value("--archived")?.as_deref() {
        None => Ok(Archived::Exclude),
        Some("include") => Ok(Archived::Include),
        Some("only") => Ok(Archived::Only),
        Some(other) => bail!(Usage, "--archived '{}' is not one of include, only", other),
    }
}

/// The store for a reading subcommand; `None` (after saying so) when there is none yet.
pub(super) fn store_for_reading(data: &Path, out: &mut dyn Write) -> Result<Option<Box<Store>>> {
    match open_store_read_only(data)? {
        StoreRead::Open(s) => Ok(Some(s)),
        StoreRead::Absent => {
            say(out, format_args!("no store yet in {}", data.display()))?;
            Ok(None)
        }
        StoreRead::NotOpened { why, .. } => bail!(Io, "{}: not read: {}", data.join(LOG_NAME).display(), why),
    }
}

/// The hits of a query (their metadata in `infos`, in result order) and how many more match.
pub(super) fn print_hits(infos: &[EntryInfo], results: &Results, out: &mut dyn Write) -> Result<()> {
    if results.is_empty() {
        say(out, format_args!("no entries match"))?;
        return Ok(());
    }
    for info in infos {
        say(
            out,
            format_args!(
                "{}  v{}  created {}  hits {}{}",
                info.key,
                info.version,
                Time(info.created),
                info.hits,
                if info.archived { "  archived" } else { "" }
            ),
        )?;
    }
    if results.matched() > results.len() {
        say(out, format_args!("... {} more (raise --limit)", results.matched() - results.len()))?;
    } else if results.truncated() {
        say(out, format_args!("... more may match (raise --limit)"))?;
    }
    Ok(())
}
