//! What `lkjagent report` reads besides the audit log, each leniently and without changing
//! anything: `config.json` ([`read_config`]: a config with problems still shows what it can),
//! the store ([`read_store`], opened read-only like `status`), and the replies behind the
//! problems in the exchange logs ([`add_replies`]).

use super::summary::{self, clip, Point};
use crate::cli::util::{open_store_read_only, StoreRead};
use crate::error::Result;
use crate::limits::{REPORT_CELL_CHARS, REPORT_TABLE_ROWS};
use crate::memory::store::EntryInfo;
use std::path::Path;

/// Adds to each problem's example what the model replied in that cycle (or what the server
/// answered), from the exchange log of its run where one was recorded (`run --exchange-log`).
/// A run id that is not a plain name (letters, digits, `-`, `_`) is never made into a path. An
/// exchange log that cannot be read adds nothing: the examples stay as the audit log gave them.
pub fn add_replies(data: &Path, tallies: &mut summary::Tallies) {
    let mut runs: Vec<String> = Vec::new();
    for t in tallies.rows.iter().chain(core::iter::once(&tallies.other)) {
        if t.n > 0 && !t.at.0.is_empty() && !runs.contains(&t.at.0) {
            runs.push(t.at.0.clone());
        }
    }
    for run in runs {
        let plain = run.len() <= 64 && run.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        let path = data.join("logs").join(format!("exchange-{}", run)).join("exchange.jsonl");
        if !plain || !path.is_file() {
            continue;
        }
        let Ok(mut log) = crate::agent::exchange::Recorded::open(&path) else { continue };
        let mut wanted = tallies.rows.iter().chain(core::iter::once(&tallies.other)).filter(|t| t.at.0 == run).count();
        while wanted > 0 {
            let Ok(Some(c)) = log.next_cycle() else { break };
            let said = match &c.reply {
                Ok(r) => format!("; the reply: {}", r.content),
                Err(e) => format!("; the server: {}", e.message()),
            };
            for t in tallies.rows.iter_mut().chain(core::iter::once(&mut tallies.other)) {
                if t.at.0 == run && t.at.1 == c.cycle {
                    t.example = clip(&format!("{}{}", t.example, said), 2 * REPORT_CELL_CHARS);
                    wanted = wanted.saturating_sub(1);
                }
            }
        }
    }
}

/// What the config says that the report shows.
#[derive(Default)]
pub struct ConfigPart {
    pub found: bool,
    pub problems: usize,
    pub provider: String,
    pub model: String,
    pub endpoint: String,
    pub constrain: String,
    pub paging_limit: Option<u64>,
    pub hard_limit: Option<u64>,
    pub context_window: Option<u64>,
}

pub fn read_config(data: &Path) -> ConfigPart {
    use crate::agent::config;
    let Ok(bytes) = config::read_bounded(&data.join(config::FILE_NAME), crate::limits::CONFIG_FILE_MAX_BYTES) else {
        return ConfigPart::default();
    };
    let Ok((c, problems)) = config::parse(&bytes, data) else {
        return ConfigPart { found: true, problems: 1, ..ConfigPart::default() };
    };
    let limit = |l: &crate::agent::settings::TokenLimit| l.enable.then_some(l.max_tokens);
    ConfigPart {
        found: true,
        problems: problems.len(),
        provider: c.llm.provider.name().to_string(),
        model: c.llm.model.clone(),
        endpoint: endpoint_shown(&c.llm.endpoint),
        constrain: c.llm.constrain.name().to_string(),
        paging_limit: limit(&c.agent.paging_limit),
        hard_limit: limit(&c.agent.hard_limit),
        context_window: c.llm.context_window.map(u64::from),
    }
}

/// An endpoint URL without what may hold a secret: the user information (`user:pass@`) and the
/// query.
fn endpoint_shown(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or("");
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if scheme.is_empty() {
        format!("{}{}", host, path)
    } else {
        format!("{}://{}{}", scheme, host, path)
    }
}

/// What the store shows.
#[derive(Default)]
pub struct StorePart {
    pub status: String,
    pub entries: usize,
    pub archived: usize,
    /// Entries created in the period.
    pub new_in_period: usize,
    /// The newest entries of the period: `(key, created, first words)`, newest first.
    pub newest: Vec<(String, u64, String)>,
    /// The most used tags, most first: `(tag, entries)`.
    pub tags: Vec<(String, u64)>,
    pub tags_total: usize,
    /// For each chart bin, the live entries created by its last cycle's time.
    pub per_bin: Vec<Option<Point>>,
}

/// Reads the store: entries created from `from` to `to` are the period's; `bins` are the
/// charts' bins, for the entries-over-time line.
pub fn read_store(data: &Path, from: u64, to: u64, bins: &[summary::Bin]) -> Result<StorePart> {
    let mut store = match open_store_read_only(data)? {
        StoreRead::Absent => return Ok(StorePart { status: "none yet".into(), ..StorePart::default() }),
        StoreRead::NotOpened { why, .. } => {
            return Ok(StorePart { status: format!("not read: {}", why), ..StorePart::default() })
        }
        StoreRead::Open(s) => s,
    };
    let stats = store.stats();
    let mut part = StorePart { entries: stats.entries, archived: stats.archived, ..StorePart::default() };
    // Entries over time: each entry counts from the first bin that ends at or after its
    // creation (bins are in the log's order, which is the clock's); one created after the
    // period counts in none.
    let mut from_bin = vec![0u64; bins.len()];
    for id in store.ids() {
        let Some(info) = store.info(id) else { continue };
        if info.created >= from && info.created <= to {
            part.new_in_period += 1;
        }
        if let Some(n) = from_bin.get_mut(bins.partition_point(|b| b.last_time < info.created)) {
            *n += 1;
        }
    }
    let mut total = 0;
    part.per_bin = from_bin
        .iter()
        .map(|n| {
            total += n;
            Some(Point { min: total, med: total, max: total })
        })
        .collect();
    for (tag, n) in store.tag_counts() {
        part.tags_total += 1;
        let n = u64::from(n);
        // The top rows, most used first (ties by name), kept by insertion: no sort of all tags.
        let at = part.tags.iter().position(|(t, m)| n > *m || n == *m && tag < t.as_str()).unwrap_or(part.tags.len());
        if at < REPORT_TABLE_ROWS {
            part.tags.insert(at, (tag.to_string(), n));
            part.tags.truncate(REPORT_TABLE_ROWS);
        }
    }
    // Ids are in creation order: the newest of the period are the last ones in it.
    let in_period = |info: &EntryInfo| info.created >= from && info.created <= to;
    let newest: Vec<EntryInfo> =
        store.ids().rev().filter_map(|id| store.info(id)).filter(in_period).take(REPORT_TABLE_ROWS).collect();
    for info in newest {
        let id = info.id;
        let value = match store.value(id) {
            Ok(v) => clip(v, REPORT_CELL_CHARS),
            Err(e) => format!("(value not read: {})", e.message()),
        };
        part.newest.push((info.key.as_str().to_string(), info.created, value));
    }
    part.status = "ok".into();
    Ok(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_lose_credentials_and_queries() {
        assert_eq!(endpoint_shown("http://127.0.0.1:1234/v1"), "http://127.0.0.1:1234/v1");
        assert_eq!(endpoint_shown("https://user:secret@host/v1?key=abc"), "https://host/v1");
        assert_eq!(endpoint_shown("host:80"), "host:80");
    }
}
