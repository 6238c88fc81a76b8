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
    /// The key prefixes of the agent's own logs (`agent.think_log.key_prefix`, ...): entries
    /// under them are the agent's, not the task's product.
    pub log_prefixes: Vec<String>,
}

/// The log prefixes of a config that could not be read: the defaults.
const DEFAULT_LOG_PREFIXES: [&str; 3] = ["think_log_", "evaluation_log_", "command_log_"];

/// Working-memory keys the agent keeps for itself (the task, the user's request): paged out to
/// the store, they are its notes, not the product.
const OWN_KEYS: [&str; 2] = ["task", "user_request"];

/// Whether the entry under `key` (its tags, comma-joined) is the agent's own log or note
/// rather than the task's product: a tag starts with a log's key prefix (or is that prefix's
/// name, `think_log`), or the key is one the agent keeps for itself.
pub fn is_agents_own(key: &str, log_prefixes: &[String]) -> bool {
    if OWN_KEYS.contains(&key) {
        return true;
    }
    key.split(',').any(|tag| {
        log_prefixes.iter().any(|p| !p.is_empty() && (tag.starts_with(p.as_str()) || tag == p.trim_end_matches('_')))
    })
}

pub fn read_config(data: &Path) -> ConfigPart {
    use crate::agent::config;
    let defaults = || ConfigPart {
        log_prefixes: DEFAULT_LOG_PREFIXES.iter().map(|p| p.to_string()).collect(),
        ..ConfigPart::default()
    };
    let Ok(bytes) = config::read_bounded(&data.join(config::FILE_NAME), crate::limits::CONFIG_FILE_MAX_BYTES) else {
        return defaults();
    };
    let Ok((c, problems)) = config::parse(&bytes, data) else {
        return ConfigPart { found: true, problems: 1, ..defaults() };
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
        log_prefixes: [&c.agent.think_log, &c.agent.evaluation_log, &c.agent.command_log]
            .iter()
            .map(|l| l.key_prefix.clone())
            .collect(),
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
    /// The task's product: its entries now, and the newest of the period.
    pub product: Entries,
    /// The rest (the agent's own logs and notes): entries now, and the newest of the period.
    pub own: Entries,
    /// The most used tags, most first: `(tag, entries)`.
    pub tags: Vec<(String, u64)>,
    pub tags_total: usize,
    /// For each chart bin, the live entries created by its last cycle's time.
    pub per_bin: Vec<Option<Point>>,
}

/// One kind of entries: how many the store holds, how many the period made, and the newest of
/// the period as `(key, created, first words)`, newest first.
#[derive(Default)]
pub struct Entries {
    pub now: usize,
    pub in_period: usize,
    pub newest: Vec<(String, u64, String)>,
}

/// Which entries are the task's product: those that are not the agent's own logs or notes
/// ([`is_agents_own`]) and carry one of the product's tags, as the agent derives them from the
/// task ([`crate::agent::product::Product`]: "a small dictionary of everyday things" gives
/// `dictionary,everyday`, and `apple,dictionary,fruit` is of it); for a task it derives none
/// from, every entry that is not the agent's own.
pub struct ProductRule {
    product: crate::agent::product::Product,
    log_prefixes: Vec<String>,
}

impl ProductRule {
    pub fn new(memory: Option<&crate::cli::memory::MemoryView>, log_prefixes: Vec<String>) -> ProductRule {
        let mut product = crate::agent::product::Product::new();
        if let Some(m) = memory {
            product.refresh(&m.file.working, None);
        }
        ProductRule { product, log_prefixes }
    }

    /// The product's tags (`cooking,glossary`), when the task gives some.
    pub fn tags(&self) -> Option<&str> {
        self.product.key().map(|k| k.as_str())
    }

    /// Whether the entry under `key` is the product's.
    pub fn owns(&self, key: &str) -> bool {
        if is_agents_own(key, &self.log_prefixes) {
            return false;
        }
        match self.product.key() {
            Some(p) => p.tags().any(|t| key.split(',').any(|k| k == t)),
            None => true,
        }
    }
}

/// Reads the store: entries created from `from` to `to` are the period's; `bins` are the
/// charts' bins, for the entries-over-time line; `rule` tells the product's entries from the
/// rest.
pub fn read_store(data: &Path, from: u64, to: u64, bins: &[summary::Bin], rule: &ProductRule) -> Result<StorePart> {
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
        let kind = if rule.owns(info.key.as_str()) { &mut part.product } else { &mut part.own };
        kind.now += 1;
        if info.created >= from && info.created <= to {
            part.new_in_period += 1;
            kind.in_period += 1;
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
    // Ids are in creation order: the newest of the period are the last ones in it. Each kind
    // stops at its rows, and the walk when both have theirs.
    let in_period = |info: &EntryInfo| info.created >= from && info.created <= to;
    let mut newest: Vec<(bool, EntryInfo)> = Vec::new();
    let (mut product, mut own) = (0, 0);
    for info in store.ids().rev().filter_map(|id| store.info(id)).filter(in_period) {
        if product >= REPORT_TABLE_ROWS && own >= REPORT_TABLE_ROWS {
            break;
        }
        let is_own = !rule.owns(info.key.as_str());
        let n = if is_own { &mut own } else { &mut product };
        if *n < REPORT_TABLE_ROWS {
            *n += 1;
            newest.push((is_own, info));
        }
    }
    for (is_own, info) in newest {
        let value = match store.value(info.id) {
            Ok(v) => clip(v, REPORT_CELL_CHARS),
            Err(e) => format!("(value not read: {})", e.message()),
        };
        let kind = if is_own { &mut part.own } else { &mut part.product };
        kind.newest.push((info.key.as_str().to_string(), info.created, value));
    }
    part.status = "ok".into();
    Ok(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_and_notes_are_the_agents_own_and_the_rest_is_the_product() {
        let prefixes: Vec<String> = DEFAULT_LOG_PREFIXES.iter().map(|p| p.to_string()).collect();
        for own in ["think_log_004", "command_log_010", "evaluation_log_007", "task", "user_request", "a,think_log"] {
            assert!(is_agents_own(own, &prefixes), "{own}");
        }
        for product in ["apple,dictionary,fruit", "cooking,glossary", "tasks", "think,logs", "a,task"] {
            assert!(!is_agents_own(product, &prefixes), "{product}");
        }
        // A configured prefix is read, not assumed.
        let custom = vec!["notes_".to_string()];
        assert!(is_agents_own("notes_001", &custom) && !is_agents_own("think_log_001", &custom));
    }

    #[test]
    fn endpoints_lose_credentials_and_queries() {
        assert_eq!(endpoint_shown("http://127.0.0.1:1234/v1"), "http://127.0.0.1:1234/v1");
        assert_eq!(endpoint_shown("https://user:secret@host/v1?key=abc"), "https://host/v1");
        assert_eq!(endpoint_shown("host:80"), "host:80");
    }
}
