//! Figures for ranked recall (see bench.rs for the shared helpers), beside SQLite FTS5
//! measured the same way (in process, through Python's sqlite3, `tools/fts5_check.py bench`)
//! on the same generated entries (`tests/support/recall_corpus.rs`: Zipf words, 20 to 60 per
//! value, keys of two tags) at 65,536 and 1,048,576 entries (`LKJAGENT_BENCH_RECALL_SIZES`,
//! comma-separated, overrides):
//!
//! - `recall_<n>_query_mean`: mean latency of 500 random 2- and 3-word OR queries, top 10;
//!   p50 and p99 too; allocations per query (must be 0);
//! - `recall_<n>_common3`: the query of the three most common words;
//! - `recall_<n>_build`: building the index from the log (what the first search after an
//!   open without `store.fts` pays), and `recall_<n>_open_file`: opening it from `store.fts`
//!   (what the agent pays);
//! - `recall_<n>_in_place_*`: a read-only store searching `store.fts` in place (what
//!   `memory search` does): the first query (opening the file included), the mean of the 500
//!   queries, the three most common words, the RAM it holds;
//! - `recall_<n>_file_percent_of_text`: `store.fts` against the indexed text's bytes, and the
//!   writer's index RAM (`ram_reserved`: the delta's fixed tables, the merge's buffers, the
//!   base's 12 bytes per document);
//! - `recall_<n>_merge`: writing the delta (the 2,000 saves below) into a new `store.fts`, as
//!   each checkpoint does; the queries above run over the base and that delta;
//! - `recall_<n>_upkeep_p50`: what the index adds to one save, without the sync: the p50 of
//!   puts (overwrites of random entries, inside a batch so none is synced) with the index
//!   open, minus the p50 with it closed;
//! - `sqlite_fts5_<n>_*`: the same from SQLite (mean query, three most common words, the
//!   index's bytes (`t_data`) and the whole database's, build time).

#[path = "../tests/support/recall_corpus.rs"]
pub(crate) mod recall_corpus;

use crate::{allocations, percentile, report, skipped};
use lkjagent::memory::key::normalize;
use lkjagent::memory::store::recall::Ranked;
use recall_corpus::{Rng, Zipf};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const QUERIES: usize = 500;
const UPKEEP_SAVES: usize = 2_000;

pub fn run() {
    let sizes = std::env::var("LKJAGENT_BENCH_RECALL_SIZES").unwrap_or_else(|_| "65536,1048576".into());
    for n in sizes.split(',').filter_map(|s| s.trim().parse::<usize>().ok()) {
        at(n);
    }
}

fn at(n: usize) {
    let dir = std::env::temp_dir().join(format!("lkj-bench-recall-{}-{}", std::process::id(), n));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let corpus = dir.join("corpus.tsv");
    let qpath = dir.join("queries.txt");
    let data = dir.join("data");
    let (mut store, qs) = recall_corpus::build(&data, n, QUERIES, &corpus, &qpath);
    let text_bytes: u64 = std::fs::read_to_string(&corpus)
        .unwrap()
        .lines()
        .map(|l| l.split_once('\t').map_or(0, |(_, t)| t.len() as u64))
        .sum();
    let p = |name: &str| format!("recall_{}_{}", n, name);

    // Upkeep with the index closed (never opened yet).
    let zipf = Zipf::new(20_000);
    let mut rng = Rng(0x5EED);
    let closed = saves(&mut store, n, &zipf, &mut rng);

    let t = Instant::now();
    store.recall_rebuild().unwrap();
    report(&p("build"), t.elapsed().as_secs_f64() * 1e3, "ms");

    let open = saves(&mut store, n, &zipf, &mut rng);
    let upkeep = open.as_secs_f64() - closed.as_secs_f64();
    report(&p("save_p50_index_closed"), closed.as_secs_f64() * 1e6, "us");
    report(&p("save_p50_index_open"), open.as_secs_f64() * 1e6, "us");
    report(&p("upkeep_p50"), upkeep.max(0.0) * 1e6, "us");

    // Queries.
    let mut out = Ranked::new();
    for q in qs.iter().take(20) {
        store.rank(q, 10, &mut out).unwrap();
    }
    let mut times = Vec::with_capacity(qs.len());
    let a0 = allocations();
    let t = Instant::now();
    for q in &qs {
        let t1 = Instant::now();
        store.rank(q, 10, &mut out).unwrap();
        times.push(t1.elapsed());
    }
    let total = t.elapsed();
    let allocs = allocations() - a0;
    report(&p("query_mean"), total.as_secs_f64() * 1e3 / qs.len() as f64, "ms");
    report(&p("query_p50"), percentile(&mut times, 50.0).as_secs_f64() * 1e3, "ms");
    report(&p("query_p99"), percentile(&mut times, 99.0).as_secs_f64() * 1e3, "ms");
    report(&p("query_allocations"), allocs as f64 / qs.len() as f64, "per query");
    let common = format!("{} {} {}", zipf.words[0], zipf.words[1], zipf.words[2]);
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        store.rank(&common, 10, &mut out).unwrap();
        best = best.min(t.elapsed());
    }
    report(&p("common3"), best.as_secs_f64() * 1e3, "ms");
    eprintln!("recall_{}: three most common words: {}", n, common);

    // The merge of the delta (the saves above) into a new store.fts, as a checkpoint does.
    let st = store.recall_stats();
    eprintln!("recall_{}: delta of {} documents, {} merges so far", n, st.delta_docs, st.merges);
    let t = Instant::now();
    store.recall_flush().unwrap();
    report(&p("merge"), t.elapsed().as_secs_f64() * 1e3, "ms");
    let t = Instant::now();
    for q in &qs {
        store.rank(q, 10, &mut out).unwrap();
    }
    report(&p("query_mean_after_merge"), t.elapsed().as_secs_f64() * 1e3 / qs.len() as f64, "ms");

    // Sizes.
    store.checkpoint().unwrap();
    let file = std::fs::metadata(data.join("store.fts")).map(|m| m.len()).unwrap_or(0);
    report(&p("text_bytes"), text_bytes as f64 / 1e6, "MB");
    report(&p("file_bytes"), file as f64 / 1e6, "MB");
    report(&p("file_percent_of_text"), 100.0 * file as f64 / text_bytes as f64, "%");
    let st = store.recall_stats();
    report(&p("ram_reserved"), st.ram_bytes as f64 / (1 << 20) as f64, "MiB");
    drop(store);
    // A read-only store (what `memory search` opens): the file searched in place.
    let t = Instant::now();
    let mut s = lkjagent::memory::store::Store::open_read_only_with_capacity(&data, n).unwrap();
    let opened = t.elapsed();
    let t = Instant::now();
    s.rank(&qs[0], 10, &mut out).unwrap();
    report(&p("store_open_read_only"), opened.as_secs_f64() * 1e3, "ms");
    report(&p("in_place_first_query"), t.elapsed().as_secs_f64() * 1e3, "ms");
    assert!(s.recall_stats().in_place);
    let t = Instant::now();
    for q in &qs {
        s.rank(q, 10, &mut out).unwrap();
    }
    report(&p("in_place_query_mean"), t.elapsed().as_secs_f64() * 1e3 / qs.len() as f64, "ms");
    let t = Instant::now();
    s.rank(&common, 10, &mut out).unwrap();
    report(&p("in_place_common3"), t.elapsed().as_secs_f64() * 1e3, "ms");
    report(&p("in_place_ram"), s.recall_stats().ram_bytes as f64 / (1 << 20) as f64, "MiB");
    drop(s);
    // Opening the index from the file (what the agent does: every byte checked, the
    // documents read, nothing else loaded).
    let mut s = lkjagent::memory::store::Store::open_with_capacity(&data, n).unwrap();
    let t = Instant::now();
    s.recall_ready().unwrap();
    report(&p("open_file"), t.elapsed().as_secs_f64() * 1e3, "ms");
    assert!(s.recall_stats().from_file);
    drop(s);

    sqlite(n, &corpus, &qpath);
    let _ = std::fs::remove_dir_all(&dir);
}

/// p50 of `UPKEEP_SAVES` overwrites of random entries with new values, in a batch (no sync).
fn saves(store: &mut lkjagent::memory::store::Store, n: usize, zipf: &Zipf, rng: &mut Rng) -> Duration {
    let mut times = Vec::with_capacity(UPKEEP_SAVES);
    store.begin_batch(UPKEEP_SAVES as u64).unwrap();
    for _ in 0..UPKEEP_SAVES {
        let i = (rng.next() % n as u64) as usize;
        let key = normalize(&format!("topic{},item{}", i / 1024, i % 1024)).unwrap();
        let value = recall_corpus::value(zipf, rng);
        let t = Instant::now();
        store.put(&key, &value, 1_800_000_000).unwrap();
        times.push(t.elapsed());
    }
    store.end_batch().unwrap();
    percentile(&mut times, 50.0)
}

fn sqlite(n: usize, corpus: &Path, qpath: &Path) {
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/fts5_check.py");
    let out = Command::new("python3").arg(&tool).arg("bench").arg(corpus).arg(qpath).output();
    let out = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        Ok(o) => return skipped(&format!("sqlite_fts5_{}", n), &String::from_utf8_lossy(&o.stderr)),
        Err(e) => return skipped(&format!("sqlite_fts5_{}", n), &format!("python3: {}", e)),
    };
    let get = |k: &str| {
        out.lines().find_map(|l| l.strip_prefix(k).and_then(|v| v.trim().split(' ').next()?.parse::<f64>().ok()))
    };
    let p = |name: &str| format!("sqlite_fts5_{}_{}", n, name);
    if let Some(v) = get("mean_query_ms ") {
        report(&p("query_mean"), v, "ms");
    }
    if let Some(v) = get("common3_ms ") {
        report(&p("common3"), v, "ms");
    }
    if let Some(v) = get("index_bytes ") {
        report(&p("index_bytes"), v / 1e6, "MB");
    }
    if let Some(v) = get("db_bytes ") {
        report(&p("db_bytes"), v / 1e6, "MB");
    }
    if let Some(v) = get("build_s ") {
        report(&p("build"), v * 1e3, "ms");
    }
    if let Some(l) = out.lines().find(|l| l.starts_with("common3_words")) {
        eprintln!("sqlite_fts5_{}: {}", n, l);
    }
}
