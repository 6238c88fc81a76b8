//! `lkjagent memory search`: store entries ranked by the words of a text (and by meaning, where
//! embeddings are on), or found by a substring, or in the cold store; and its output.

use super::args::Args;
use super::memory_options::{archived_option, infos_of, limit_option, print_hits, store_for_reading};
use super::util::{open_store_read_only, open_store_view, say, write_all, StoreRead, Time};
use crate::error::{Code, Result};
use crate::json::Writer;
use crate::memory::key::Key;
use crate::memory::query::Results;
use crate::memory::store::recall::Ranked;
use crate::memory::store::vectors::By;
use crate::memory::store::{EntryInfo, LOG_NAME};
use std::io::Write;
use std::path::Path;

pub(super) fn search(mut args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    let limit = limit_option(&mut args)?;
    let archived = archived_option(&mut args)?;
    let json = args.flag("--json");
    let substring = args.flag("--substring");
    let by = super::memory_embed::by_option(&mut args)?;
    let cold = args.flag("--cold");
    let text = args.positional();
    args.finish("memory search")?;
    let Some(text) = text.filter(|t| !t.is_empty()) else {
        bail!(Usage, "'lkjagent memory search' needs the TEXT to look for; see 'lkjagent memory --help'")
    };
    if cold {
        if json || substring {
            bail!(Usage, "--cold takes neither --json nor --substring");
        }
        let live = match open_store_read_only(data)? {
            StoreRead::Open(s) => Some(s),
            _ => None,
        };
        super::memory_upkeep::search_cold(data, live.as_deref(), &text, limit, out)?;
        return Ok(super::EXIT_OK);
    }
    // Ranked by words alone (no memory.embeddings, or --by words): store.fts and the
    // checkpoint read in place when both cover the log.
    let words_only = !substring
        && by != By::Meaning
        && (by == By::Words || super::memory_embed::load(data).is_ok_and(|s| s.is_none()));
    if words_only {
        if let Some(mut view) = open_store_view(data) {
            let mut ranked = Ranked::new();
            let found = view.rank(&text, limit, archived, &mut ranked).and_then(|done| match done {
                false => Ok(None),
                true => ranked
                    .hits()
                    .iter()
                    .map(|h| view.info(h.id).map(|i| i.map(|i| (i, h.score))))
                    .filter_map(Result::transpose)
                    .collect::<Result<Vec<_>>>()
                    .map(Some),
            });
            match found {
                Ok(Some(hits)) => {
                    print_ranked(&hits, json, out)?;
                    return Ok(super::EXIT_OK);
                }
                Ok(None) => {}
                Err(e) if e.code() == Code::CapacityExceeded => return Err(e),
                Err(e) => {
                    e.context(format_args!("{}: opening the store whole instead", data.display())).print_warning()
                }
            }
        }
    }
    let store = match json {
        // JSON output is the array alone: no store is an empty one.
        true => match open_store_read_only(data)? {
            StoreRead::Open(s) => Some(s),
            StoreRead::Absent => None,
            StoreRead::NotOpened { why, .. } => bail!(Io, "{}: not read: {}", data.join(LOG_NAME).display(), why),
        },
        false => store_for_reading(data, out)?,
    };
    let Some(mut store) = store else {
        if json {
            write_all(out, "[]\n")?;
        }
        return Ok(super::EXIT_OK);
    };
    if substring {
        let mut results = Results::with_capacity(limit);
        store.search_text(&text, archived, limit, &mut results)?;
        if json {
            let hits = results.ids().filter_map(|id| store.key(id)).map(|k| (k, None));
            return print_json_hits(hits, out).map(|_| super::EXIT_OK);
        }
        print_hits(&infos_of(&store, results.ids()), &results, out)?;
        if results.truncated() {
            say(out, format_args!("(the search stopped at its byte budget, limits::STORE_SEARCH_MAX_BYTES)"))?;
        }
        return Ok(super::EXIT_OK);
    }
    let mut ranked = Ranked::new();
    let mut meaning = super::memory_embed::for_search(data, &store, by)?;
    store.rank_by(meaning.as_mut(), by, &text, limit, archived, None, &mut ranked)?;
    let index = store.recall_stats();
    if index.ready && !index.from_file && !store.is_empty() {
        // Said once, on stderr: the answer is right, only slow, and the fix is one command.
        err!(
            NotFound,
            "{}: store.fts is missing or does not match store.log, so this search built the full-text index from \
             the log (slow on a large store); 'lkjagent memory compact' (or any command that changes the store, or \
             the agent's next checkpoint) writes it",
            data.display()
        )
        .print_warning();
    }
    let hits: Vec<(EntryInfo, f64)> =
        ranked.hits().iter().filter_map(|h| store.info(h.id).map(|i| (i, h.score))).collect();
    print_ranked(&hits, json, out)?;
    Ok(super::EXIT_OK)
}

/// The ranked hits of `memory search`, best first: a line each, or the JSON array.
fn print_ranked(hits: &[(EntryInfo, f64)], json: bool, out: &mut dyn Write) -> Result<()> {
    if json {
        return print_json_hits(hits.iter().map(|(i, score)| (i.key, Some(*score))), out);
    }
    if hits.is_empty() {
        say(out, format_args!("no entries match"))?;
    }
    for (info, score) in hits {
        say(
            out,
            format_args!(
                "{}  score {}  v{}  created {}  hits {}{}",
                info.key,
                Score(*score),
                info.version,
                Time(info.created),
                info.hits,
                if info.archived { "  archived" } else { "" }
            ),
        )?;
    }
    Ok(())
}

/// A BM25 score for people: four decimals, or three significant digits when smaller than
/// 0.01 (a query of words in half the entries or more scores around 1e-6).
struct Score(f64);

impl core::fmt::Display for Score {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.0.abs() >= 0.01 || self.0 == 0.0 {
            write!(f, "{:.4}", self.0)
        } else {
            write!(f, "{:.3e}", self.0)
        }
    }
}

/// `[{"key": ..., "score": ...}, ...]` for `memory search --json`.
fn print_json_hits(hits: impl Iterator<Item = (Key, Option<f64>)>, out: &mut dyn Write) -> Result<()> {
    let mut text = String::new();
    {
        let mut w = Writer::pretty(&mut text);
        w.begin_array()?;
        for (key, score) in hits {
            w.begin_object()?;
            w.key("key")?;
            w.string(key.as_str())?;
            w.key("score")?;
            match score {
                Some(x) => w.f64(x)?,
                None => w.null()?,
            }
            w.end_object()?;
        }
        w.end_array()?;
        w.finish()?;
    }
    text.push('\n');
    write_all(out, &text)
}
