//! `lkjagent memory search`: store entries ranked by the words of a text (and by meaning, where
//! embeddings are on), or found by a substring, or in the cold store; and its output.

use super::args::Args;
use super::memory_options::{archived_option, limit_option, store_for_reading};
use super::util::{open_store_read_only, say, store_capacity, write_all, StoreRead, Time};
use crate::error::Result;
use crate::json::Writer;
use crate::memory::key::Key;
use crate::memory::store::answer::{self, Answer, How, SearchAsk, SearchHit, Sources};
use crate::memory::store::vectors::{By, Meaning};
use crate::memory::store::{Store, LOG_NAME};
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
    if cold && (json || substring) {
        bail!(Usage, "--cold takes neither --json nor --substring");
    }
    let how = match (cold, substring) {
        (true, _) => How::Cold,
        (false, true) => How::Substring,
        (false, false) => How::Ranked(by),
    };
    // Which index answers is the store's choice; how to open it, and what a missing store
    // prints, is this command's.
    let mut src = Opener { data, json, cold, out: &mut *out };
    let ask = SearchAsk { text: &text, limit, archived, how };
    let answer = answer::search(data, store_capacity(data), &ask, &mut src)?;
    let Some(answer) = answer else {
        if json {
            write_all(out, "[]\n")?;
        } else if cold {
            say(out, format_args!("no entries of the cold store match"))?;
        }
        return Ok(super::EXIT_OK);
    };
    match how {
        How::Cold => print_cold(&answer, out)?,
        How::Substring if !json => {
            print_listed(&answer, out)?;
            if answer.truncated {
                say(out, format_args!("(the search stopped at its byte budget, limits::STORE_SEARCH_MAX_BYTES)"))?;
            }
        }
        _ => print_ranked(&answer.hits, json, out)?,
    }
    Ok(super::EXIT_OK)
}

/// The command's ways to the store for [`answer::search`].
struct Opener<'a> {
    data: &'a Path,
    json: bool,
    cold: bool,
    out: &'a mut dyn Write,
}

impl Sources for Opener<'_> {
    fn open(&mut self) -> Result<Option<Box<Store>>> {
        if self.json || self.cold {
            // JSON output is the array alone, and the cold store is read without a live
            // store: no store is an empty one.
            return match open_store_read_only(self.data)? {
                StoreRead::Open(s) => Ok(Some(s)),
                StoreRead::Absent => Ok(None),
                StoreRead::NotOpened { .. } if self.cold => Ok(None),
                StoreRead::NotOpened { why, .. } => {
                    bail!(Io, "{}: not read: {}", self.data.join(LOG_NAME).display(), why)
                }
            };
        }
        store_for_reading(self.data, self.out)
    }

    fn words_only(&mut self, by: By) -> bool {
        by == By::Words || (by != By::Meaning && super::memory_embed::load(self.data).is_ok_and(|s| s.is_none()))
    }

    fn meaning(&mut self, store: &Store, by: By) -> Result<Option<Meaning>> {
        super::memory_embed::for_search(self.data, store, by)
    }
}

/// `--substring`'s hits, newest first, as `memory query` lists entries.
fn print_listed(answer: &Answer, out: &mut dyn Write) -> Result<()> {
    if answer.hits.is_empty() {
        return say(out, format_args!("no entries match"));
    }
    for h in &answer.hits {
        let i = &h.info;
        say(
            out,
            format_args!(
                "{}  v{}  created {}  hits {}{}",
                i.key,
                i.version,
                Time(i.created),
                i.hits,
                if i.archived { "  archived" } else { "" }
            ),
        )?;
    }
    Ok(())
}

/// `--cold`'s hits, in the cold store's order.
fn print_cold(answer: &Answer, out: &mut dyn Write) -> Result<()> {
    for h in &answer.hits {
        let i = &h.info;
        say(out, format_args!("{}  cold  v{}  created {}  hits {}", i.key, i.version, Time(i.created), i.hits))?;
    }
    if answer.hits.is_empty() {
        say(out, format_args!("no entries of the cold store match"))?;
    } else if answer.more > 0 {
        say(out, format_args!("... {} more in the cold store (raise --limit)", answer.more))?;
    }
    Ok(())
}

/// The ranked hits of `memory search`, best first: a line each, or the JSON array. Each
/// says where it lives: a cold entry is marked `cold` (`"where": "cold"`).
fn print_ranked(hits: &[SearchHit], json: bool, out: &mut dyn Write) -> Result<()> {
    if json {
        return print_json_hits(hits.iter().map(|h| (h.info.key, h.score, h.cold)), out);
    }
    if hits.is_empty() {
        say(out, format_args!("no entries match"))?;
    }
    for h in hits {
        let info = &h.info;
        say(
            out,
            format_args!(
                "{}  score {}  v{}  created {}  hits {}{}{}",
                info.key,
                Score(h.score.unwrap_or(0.0)),
                info.version,
                Time(info.created),
                info.hits,
                if info.archived { "  archived" } else { "" },
                if h.cold { "  cold" } else { "" }
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

/// `[{"key": ..., "score": ..., "where": "live" | "cold"}, ...]` for `memory search --json`.
fn print_json_hits(hits: impl Iterator<Item = (Key, Option<f64>, bool)>, out: &mut dyn Write) -> Result<()> {
    let mut text = String::new();
    {
        let mut w = Writer::pretty(&mut text as &mut dyn core::fmt::Write);
        w.begin_array()?;
        for (key, score, cold) in hits {
            w.begin_object()?;
            w.key("key")?;
            w.string(key.as_str())?;
            w.key("score")?;
            match score {
                Some(x) => w.f64(x)?,
                None => w.null()?,
            }
            w.key("where")?;
            w.string(if cold { "cold" } else { "live" })?;
            w.end_object()?;
        }
        w.end_array()?;
        w.finish()?;
    }
    text.push('\n');
    write_all(out, &text)
}
