//! Figures for the store area (see bench.rs for the shared helpers), on the workload of issue
//! 11: 2,000 distinct tags with Zipf frequencies (s = 1), 1 to 8 distinct tags per entry, every
//! key distinct, values of 100 to 300 bytes of word-like text; at 65,536 and at 1,048,576
//! entries (`store_<entries>_...`):
//!
//! - query p50/p99, limit 16, newest first: one tag (drawn by Zipf, so common tags are asked
//!   most), and 3 required + 1 excluded tags (4 distinct tags drawn by Zipf); allocations per
//!   query (must be 0);
//! - text search: a needle that occurs nowhere (`strandline`: the text is made of
//!   consonant-vowel syllables, so "str" never occurs), and the first 16 of the ~300 values
//!   a rare word (`quokka`) was planted in;
//! - open: warm (page cache hot) from the checkpoint, as the writer and read-only (what `status`
//!   and `memory` pay); the checkpoint moved aside (a full replay, read-only so the open does
//!   not write a new one); and both again with the page cache dropped (writing
//!   `/proc/sys/vm/drop_caches` needs root; otherwise skipped). The first writer open after the
//!   log is built replays it all and writes the checkpoint: reported too;
//! - peak RSS (VmHWM) and RSS growth of a child process (this binary, re-executed with
//!   `LKJAGENT_BENCH_STORE_CHILD`) that only opens the store and runs the queries and
//!   searches, so building the store does not count; `Store::ram_bytes` per entry;
//! - at 65,536: durable single puts (each synced) on top of the store, a batch import
//!   (`begin_batch`/`end_batch`) of the same 65,536 entries into an empty store, bytes written
//!   per agent cycle, compaction.
//!
//! Kept from before: the `memory.json` save, and on a 1,000-entry store of 64 tags the 2 AND +
//! 1 NOT query, allocations per query, append-plus-fsync latency and bytes per cycle.
//!
//! `LKJAGENT_BENCH_STORE_KEEP=1` keeps the built Zipf stores (their paths go to stderr) and
//! skips the writes on them, so the child can be run alone under a profiler.
//!
//! The stores are built by writing their log directly with the store's own record encoder
//! (ids 0..n in creation order), then opened once (a full replay, which writes the checkpoint)
//! and closed; temp dirs are under `std::env::temp_dir()` and removed at the end. The whole
//! area takes about 30 seconds on a 2-core machine, most of it building and replaying the
//! 1,048,576-entry log (~400 MB on disk while it runs). Dropping the page cache (as root)
//! drops it for the whole machine.

use lkjagent::fixed::FixedBuf;
use lkjagent::limits::{STORE_RECORD_MAX_BYTES, STORE_SEARCH_MAX_BYTES};
use lkjagent::memory::file::{MemoryFile, Saver};
use lkjagent::memory::key::{normalize, Key};
use lkjagent::memory::log::{self, PutHead};
use lkjagent::memory::query::{Archived, Query, Results, Sort};
use lkjagent::memory::store::checkpoint::CHECKPOINT_NAME;
use lkjagent::memory::store::{Store, LOG_NAME};
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Set in the child process: `<entries>:<dir>` of a built store to open and query.
const CHILD_ENV: &str = "LKJAGENT_BENCH_STORE_CHILD";
/// Set to keep the built Zipf stores (and skip the writes on them), to profile the child on
/// them: `LKJAGENT_BENCH_STORE_CHILD=<entries>:<dir> <bench binary>`.
const KEEP_ENV: &str = "LKJAGENT_BENCH_STORE_KEEP";
/// Distinct tags of the Zipf workload.
const ZIPF_TAGS: usize = 2000;
/// The word planted in about `PLANTED` values.
const PLANT: &str = "quokka";
const PLANTED: usize = 300;
/// A needle that occurs nowhere in a Zipf store (see the module documentation).
const NO_MATCH: &str = "strandline";
/// Query result limit.
const LIMIT: usize = 16;
/// Sizes of the Zipf stores.
const SIZES: [usize; 2] = [65_536, 1_048_576];

// -------------------------------------------------------------------------------------------
// Workloads
// -------------------------------------------------------------------------------------------

pub(crate) use crate::rng::RngStar as Rng;

const CONSONANTS: &[u8] = b"bdfgklmnprstvz";
const VOWELS: &[u8] = b"aeiou";

fn push_syllable(out: &mut String, i: usize) {
    out.push(CONSONANTS[i % CONSONANTS.len()] as char);
    out.push(VOWELS[(i / CONSONANTS.len()) % VOWELS.len()] as char);
}

/// The name of the tag of Zipf rank `i` (0 is the most frequent): three syllables, distinct
/// for every `i` below 70².
pub(crate) fn zipf_tag(i: usize) -> String {
    let mut s = String::with_capacity(6);
    push_syllable(&mut s, i % 70);
    push_syllable(&mut s, i / 70);
    push_syllable(&mut s, (i * 37 + 11) % 70);
    s
}

/// Zipf (s = 1) over `ZIPF_TAGS` ranks.
pub(crate) struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    pub(crate) fn new() -> Zipf {
        let weights: Vec<f64> = (1..=ZIPF_TAGS).map(|r| 1.0 / r as f64).collect();
        let total: f64 = weights.iter().sum();
        let mut acc = 0.0;
        let cdf = weights
            .iter()
            .map(|w| {
                acc += w / total;
                acc
            })
            .collect();
        Zipf { cdf }
    }

    fn sample(&self, rng: &mut Rng) -> usize {
        let u = rng.unit();
        self.cdf.partition_point(|&c| c < u).min(ZIPF_TAGS - 1)
    }

    /// `k` distinct ranks.
    pub(crate) fn distinct(&self, rng: &mut Rng, k: usize) -> Vec<usize> {
        let mut ranks = Vec::with_capacity(k);
        while ranks.len() < k {
            let r = self.sample(rng);
            if !ranks.contains(&r) {
                ranks.push(r);
            }
        }
        ranks
    }
}

/// The entries of a Zipf store, in creation order: distinct keys of 1 to 8 tags, values of
/// 100 to 300 bytes of syllable words, `PLANT` in `PLANTED` of them spread evenly over the
/// first `planned` entries.
struct Workload {
    rng: Rng,
    zipf: Zipf,
    names: Vec<String>,
    words: Vec<String>,
    seen: HashSet<u64>,
    stride: usize,
    made: usize,
}

impl Workload {
    fn new(seed: u64, planned: usize) -> Workload {
        let mut rng = Rng(seed);
        let words = (0..4096)
            .map(|_| {
                let mut w = String::new();
                for _ in 0..1 + rng.below(4) {
                    push_syllable(&mut w, rng.below(70));
                }
                w
            })
            .collect();
        Workload {
            rng,
            zipf: Zipf::new(),
            names: (0..ZIPF_TAGS).map(zipf_tag).collect(),
            words,
            seen: HashSet::with_capacity(planned + planned / 4),
            stride: (planned / PLANTED).max(1),
            made: 0,
        }
    }

    /// The next entry's key; its value is written into `value`.
    fn next(&mut self, value: &mut String) -> Key {
        let key = loop {
            let k = 1 + self.rng.below(8);
            let mut ranks = self.zipf.distinct(&mut self.rng, k);
            ranks.sort_unstable();
            let mut h = 0xcbf2_9ce4_8422_2325u64;
            for &r in &ranks {
                h = (h ^ r as u64).wrapping_mul(0x0000_0100_0000_01b3);
            }
            h = (h ^ k as u64).wrapping_mul(0x0000_0100_0000_01b3);
            if self.seen.insert(h) {
                break Key::from_tags(ranks.iter().map(|&r| self.names[r].as_str())).unwrap();
            }
        };
        value.clear();
        let len = 100 + self.rng.below(201);
        let plant = self.made % self.stride == self.stride / 2 && self.made / self.stride < PLANTED;
        let mut n = 0;
        while value.len() < len {
            if n > 0 {
                value.push(' ');
            }
            if plant && n == 3 {
                value.push_str(PLANT);
            } else {
                let w = self.rng.below(self.words.len());
                value.push_str(&self.words[w]);
            }
            n += 1;
        }
        // The planted word ends well before 100 bytes, so this never cuts it.
        value.truncate(len);
        self.made += 1;
        key
    }
}

/// Writes the log of `n` Zipf entries (ids 0..n) and returns the time it took.
fn write_zipf_log(dir: &Path, n: usize, w: &mut Workload) -> Duration {
    let t = Instant::now();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(dir.join(LOG_NAME)).unwrap());
    let mut buf = FixedBuf::with_capacity("bench", STORE_RECORD_MAX_BYTES);
    log::encode_header(&mut buf, 0x5eed_0000_0000_0001 | ((n as u64) << 20)).unwrap();
    let mut value = String::with_capacity(512);
    for id in 0..n as u32 {
        let key = w.next(&mut value);
        let head = PutHead {
            id,
            ver: 1,
            created: 1_700_000_000 + u64::from(id),
            accessed: 1_700_000_000 + u64::from(id),
            hits: w.rng.below(10) as u64,
            archived: false,
        };
        log::encode_put(&mut buf, &head, key.tags(), &value).unwrap();
        if buf.len() > STORE_RECORD_MAX_BYTES / 2 {
            out.write_all(buf.as_slice()).unwrap();
            buf.clear();
        }
    }
    out.write_all(buf.as_slice()).unwrap();
    out.flush().unwrap();
    out.get_ref().sync_all().unwrap();
    t.elapsed()
}

const UNIFORM_TAGS: usize = 64;

fn uniform_tag(i: usize) -> String {
    format!("topic{:02}", i)
}

/// The 1,000-entry store of before: 3 to 5 tags each out of 64, distinct tag sets, values of
/// ~200 bytes.
fn write_uniform_log(dir: &Path, n: usize, seed: u64) {
    let mut rng = Rng(seed);
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join(LOG_NAME)).unwrap());
    let mut buf = FixedBuf::with_capacity("bench", STORE_RECORD_MAX_BYTES);
    log::encode_header(&mut buf, 0x5eed_0000_0000_0002).unwrap();
    let mut seen = HashSet::new();
    let mut id = 0u32;
    while (id as usize) < n {
        let k = 3 + rng.below(3);
        let names: Vec<String> = (0..k).map(|_| uniform_tag(rng.below(UNIFORM_TAGS))).collect();
        let key = Key::from_tags(names.iter().map(|s| s.as_str())).unwrap();
        if !seen.insert(key) {
            continue;
        }
        let head = PutHead {
            id,
            ver: 1,
            created: 1_700_000_000 + u64::from(id),
            accessed: 1_700_000_000,
            hits: rng.below(10) as u64,
            archived: false,
        };
        let value = format!("entry {} {}", id, "lorem ipsum dolor sit amet ".repeat(7));
        log::encode_put(&mut buf, &head, key.tags(), &value).unwrap();
        if buf.len() > STORE_RECORD_MAX_BYTES / 2 {
            out.write_all(buf.as_slice()).unwrap();
            buf.clear();
        }
        id += 1;
    }
    out.write_all(buf.as_slice()).unwrap();
    out.flush().unwrap();
    out.get_ref().sync_all().unwrap();
}

// -------------------------------------------------------------------------------------------
// Helpers
// -------------------------------------------------------------------------------------------

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lkj-bench-store-{}-{}", tag, std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(bytes: f64) -> f64 {
    bytes / (1024.0 * 1024.0)
}

/// A field of /proc/self/status in KiB (VmRSS, VmHWM).
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn median(samples: &mut [Duration]) -> Duration {
    super::percentile(samples, 50.0)
}

/// Drops the page cache (clean pages only; the store's files are synced). `Err` says why not.
fn drop_page_cache() -> Result<(), String> {
    std::fs::write("/proc/sys/vm/drop_caches", "1\n").map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => "needs root".to_string(),
        _ => format!("writing /proc/sys/vm/drop_caches: {}", e),
    })
}

/// Figures the child printed, by name.
struct Figures(Vec<(String, f64)>);

impl Figures {
    fn get(&self, name: &str) -> Option<f64> {
        self.0.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }
}

// -------------------------------------------------------------------------------------------
// Queries and searches (run in the child for the Zipf stores)
// -------------------------------------------------------------------------------------------

/// p50/p99 of `queries` (cycled) over `store`, with matches and allocations per query.
/// Runs `samples` queries, or fewer (at least 200) when `budget` runs out.
fn query_figures(store: &Store, queries: &[Query], samples: usize, budget: Duration, name: &str) {
    let mut results = Results::with_capacity(32);
    let mut times = Vec::with_capacity(samples);
    let mut matched = 0usize;
    let mut allocs = 0u64;
    let start = Instant::now();
    for i in 0..samples {
        if i >= 200 && start.elapsed() > budget {
            break;
        }
        let q = &queries[i % queries.len()];
        let a = super::allocations();
        let t = Instant::now();
        store.query(q, &mut results);
        let took = t.elapsed();
        allocs += super::allocations() - a;
        times.push(took);
        matched += results.matched();
    }
    let n = times.len();
    super::report(&format!("{}_p50", name), us(super::percentile(&mut times, 50.0)), "us");
    super::report(&format!("{}_p99", name), us(super::percentile(&mut times, 99.0)), "us");
    super::report(&format!("{}_samples", name), n as f64, "queries");
    super::report(&format!("{}_matches_avg", name), matched as f64 / n as f64, "entries");
    super::report(&format!("{}_allocations_per_query", name), allocs as f64 / n as f64, "allocs");
}

/// For 3 AND + 1 NOT queries: the length of the list that drives each (its rarest required
/// tag's, read as a one-tag query's count), p50 and average, and the query time per entry of
/// it (the queries' cost follows those lists, which grow with the store).
fn driver_figures(store: &Store, queries: &[Query], name: &str) {
    let mut results = Results::with_capacity(1);
    let mut lens = Vec::with_capacity(queries.len());
    let mut time = Duration::ZERO;
    for q in queries {
        let required = q.required.unwrap();
        let len = required
            .tags()
            .map(|t| {
                let one = Query { required: Some(normalize(t).unwrap()), max_results: 1, ..Query::default() };
                store.query(&one, &mut results);
                results.matched()
            })
            .min()
            .unwrap();
        let mut out = Results::with_capacity(LIMIT);
        let t = Instant::now();
        for _ in 0..5 {
            store.query(q, &mut out);
        }
        time += t.elapsed() / 5;
        lens.push(len);
    }
    let total: usize = lens.iter().sum();
    lens.sort_unstable();
    super::report(&format!("{}_driver_list_p50", name), lens[lens.len() / 2] as f64, "entries");
    super::report(&format!("{}_driver_list_avg", name), total as f64 / lens.len() as f64, "entries");
    super::report(&format!("{}_ns_per_driver_entry", name), time.as_secs_f64() * 1e9 / total.max(1) as f64, "ns");
}

fn one_tag_queries(zipf: &Zipf, rng: &mut Rng, n: usize) -> Vec<Query> {
    (0..n)
        .map(|_| Query {
            required: Some(normalize(&zipf_tag(zipf.sample(rng))).unwrap()),
            sort: Sort::Newest,
            max_results: LIMIT,
            ..Query::default()
        })
        .collect()
}

fn and_not_queries(zipf: &Zipf, rng: &mut Rng, n: usize) -> Vec<Query> {
    (0..n)
        .map(|_| {
            let r = zipf.distinct(rng, 4);
            Query {
                required: Some(
                    normalize(&format!("{},{},{}", zipf_tag(r[0]), zipf_tag(r[1]), zipf_tag(r[2]))).unwrap(),
                ),
                excluded: Some(normalize(&zipf_tag(r[3])).unwrap()),
                sort: Sort::Newest,
                max_results: LIMIT,
                ..Query::default()
            }
        })
        .collect()
}

/// The child: opens the built store of `n` entries in `dir`, runs the queries and searches,
/// and reports them with the process's RSS.
fn child(n: usize, dir: &Path) {
    let p = format!("store_{}", n);
    let rss0 = status_kib("VmRSS:").unwrap_or(0);
    // The queries first, so they are in RAM before the store is opened.
    let zipf = Zipf::new();
    let mut rng = Rng(0x0051_7e5e_ed00 + n as u64);
    let q1 = one_tag_queries(&zipf, &mut rng, 256);
    let q4 = and_not_queries(&zipf, &mut rng, 256);
    let rss_before = status_kib("VmRSS:").unwrap_or(0);
    let t = Instant::now();
    let mut store = Store::open_with_capacity(dir, n).unwrap();
    let open = t.elapsed();
    let rss_open = status_kib("VmRSS:").unwrap_or(0);
    assert_eq!(store.len(), n);
    super::report(&format!("{}_child_open_warm", p), ms(open), "ms");

    query_figures(&store, &q1, 20_000, Duration::from_secs(3), &format!("{}_query_1tag", p));
    query_figures(&store, &q4, 5_000, Duration::from_secs(6), &format!("{}_query_3and1not", p));
    driver_figures(&store, &q4, &format!("{}_query_3and1not", p));

    let mut results = Results::with_capacity(LIMIT);
    let mut times = Vec::new();
    let reps = if n > 100_000 { 5 } else { 15 };
    for _ in 0..reps {
        let t = Instant::now();
        store.search_text(NO_MATCH, Archived::Exclude, LIMIT, &mut results).unwrap();
        times.push(t.elapsed());
        assert!(results.is_empty());
    }
    let scanned = store.log_bytes().min(STORE_SEARCH_MAX_BYTES);
    super::report(&format!("{}_search_no_match_p50", p), ms(median(&mut times)), "ms");
    super::report(&format!("{}_search_no_match_bytes_read", p), scanned as f64 / 1e6, "MB");
    super::report(
        &format!("{}_search_no_match_whole_log", p),
        if results.truncated() { 0.0 } else { 1.0 },
        "(1 = read it all, 0 = stopped at STORE_SEARCH_MAX_BYTES)",
    );
    let mut times = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        store.search_text(PLANT, Archived::Exclude, LIMIT, &mut results).unwrap();
        times.push(t.elapsed());
        assert_eq!(results.len(), LIMIT);
    }
    super::report(&format!("{}_search_first16_of_300_p50", p), ms(median(&mut times)), "ms");

    let ram = store.ram_bytes();
    super::report(&format!("{}_ram_reserved", p), mib(ram as f64), "MiB");
    super::report(&format!("{}_ram_reserved_per_entry", p), ram as f64 / store.capacity() as f64, "bytes");
    let rss_end = status_kib("VmRSS:").unwrap_or(0);
    super::report(&format!("{}_rss_before_open", p), rss_before as f64 / 1024.0, "MiB");
    super::report(&format!("{}_rss_growth_open", p), (rss_open - rss_before) as f64 / 1024.0, "MiB");
    super::report(
        &format!("{}_rss_growth_per_entry", p),
        (rss_end.saturating_sub(rss_before)) as f64 * 1024.0 / n as f64,
        "bytes",
    );
    super::report(&format!("{}_rss_child_query_lists", p), (rss_before - rss0) as f64 / 1024.0, "MiB");
    if let Some(hwm) = status_kib("VmHWM:") {
        super::report(&format!("{}_peak_rss", p), hwm as f64 / 1024.0, "MiB");
    }
    drop(store);
}

/// Runs the child on the store in `dir`; prints its figures and returns them.
fn run_child(n: usize, dir: &Path) -> Figures {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--bench")
        .env(CHILD_ENV, format!("{}:{}", n, dir.display()))
        .env("LKJAGENT_BENCH_ONLY", "store")
        .stderr(std::process::Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "the store bench child failed: {}", out.status);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut figs = Vec::new();
    for line in text.lines() {
        println!("{}", line);
        let mut parts = line.split_whitespace();
        if let (Some("bench:"), Some(name), Some(v)) = (parts.next(), parts.next(), parts.next()) {
            if let Ok(v) = v.parse::<f64>() {
                figs.push((name.to_string(), v));
            }
        }
    }
    Figures(figs)
}

// -------------------------------------------------------------------------------------------
// The Zipf stores
// -------------------------------------------------------------------------------------------

/// Median time of `reps` opens; asserts where each started from.
fn open_times(dir: &Path, n: usize, reps: usize, read_only: bool, from_checkpoint: bool) -> Duration {
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        let store = if read_only {
            Store::open_read_only_with_capacity(dir, n).unwrap()
        } else {
            Store::open_with_capacity(dir, n).unwrap()
        };
        times.push(t.elapsed());
        assert_eq!(store.len(), n);
        assert_eq!(store.stats().from_checkpoint, from_checkpoint);
        drop(store);
    }
    median(&mut times)
}

fn zipf_store(n: usize, seed: u64) -> Figures {
    let p = format!("store_{}", n);
    let dir = temp_dir(&format!("zipf{}", n));
    let mut w = Workload::new(seed, n);
    let took = write_zipf_log(&dir, n, &mut w);
    let log_bytes = std::fs::metadata(dir.join(LOG_NAME)).unwrap().len();
    super::report(&format!("{}_build_log_write", p), ms(took), "ms");
    super::report(&format!("{}_log_size", p), log_bytes as f64 / 1e6, "MB");

    // The first open replays the whole log and writes the checkpoint; close() has nothing left.
    let t = Instant::now();
    let store = Store::open_with_capacity(&dir, n).unwrap();
    let first = t.elapsed();
    let st = store.stats();
    assert!(!st.from_checkpoint);
    assert_eq!(st.entries, n);
    assert_eq!(st.tags, ZIPF_TAGS);
    store.close().unwrap();
    let ckpt = dir.join(CHECKPOINT_NAME);
    let ckpt_bytes = std::fs::metadata(&ckpt).unwrap().len();
    super::report(&format!("{}_open_first_full_replay_and_checkpoint", p), ms(first), "ms");
    super::report(&format!("{}_checkpoint_size", p), ckpt_bytes as f64 / 1e6, "MB");
    super::report(&format!("{}_distinct_tags", p), st.tags as f64, "tags");

    // Warm opens.
    let big = n > 100_000;
    let reps = if big { 5 } else { 15 };
    let warm = open_times(&dir, n, reps, false, true);
    super::report(&format!("{}_open_warm", p), ms(warm), "ms");
    let warm_ro = open_times(&dir, n, reps, true, true);
    super::report(&format!("{}_open_warm_read_only", p), ms(warm_ro), "ms");
    let aside = dir.join("ckpt.aside");
    std::fs::rename(&ckpt, &aside).unwrap();
    let replay = open_times(&dir, n, if big { 2 } else { 5 }, true, false);
    super::report(&format!("{}_open_warm_full_replay", p), ms(replay), "ms");
    super::report(&format!("{}_full_replay_throughput", p), super::mb_per_s(log_bytes as usize, replay), "MB/s");
    std::fs::rename(&aside, &ckpt).unwrap();

    // Cold opens.
    match drop_page_cache() {
        Ok(()) => {
            let cold = open_times(&dir, n, 1, false, true);
            super::report(&format!("{}_open_cold", p), ms(cold), "ms");
            std::fs::rename(&ckpt, &aside).unwrap();
            drop_page_cache().unwrap();
            let cold_replay = open_times(&dir, n, 1, true, false);
            super::report(&format!("{}_open_cold_full_replay", p), ms(cold_replay), "ms");
            std::fs::rename(&aside, &ckpt).unwrap();
        }
        Err(why) => {
            super::skipped(&format!("{}_open_cold", p), &why);
            super::skipped(&format!("{}_open_cold_full_replay", p), &why);
        }
    }

    // Queries, searches and RSS, in a process of their own.
    let figs = run_child(n, &dir);

    if std::env::var_os(KEEP_ENV).is_some() {
        // Kept for profiling: `LKJAGENT_BENCH_STORE_CHILD=<n>:<dir> <this binary>`.
        eprintln!("store bench: kept {} ({} entries)", dir.display(), n);
        return figs;
    }
    if !big {
        writes_on_zipf_store(&dir, n, &mut w);
    }
    std::fs::remove_dir_all(&dir).unwrap();
    if !big {
        batch_import(n, seed);
    }
    figs
}

/// On the 65,536 store: durable single puts, bytes per agent cycle, compaction.
fn writes_on_zipf_store(dir: &Path, n: usize, w: &mut Workload) {
    let p = format!("store_{}", n);
    let mut store = Store::open_with_capacity(dir, n + 4096).unwrap();
    let mut value = String::new();
    let mut times = Vec::with_capacity(300);
    for i in 0..300u64 {
        let key = w.next(&mut value);
        let t = Instant::now();
        store.put(&key, &value, 1_800_000_000 + i).unwrap();
        times.push(t.elapsed());
    }
    super::report(&format!("{}_insert_durable_p50", p), us(super::percentile(&mut times, 50.0)), "us");
    super::report(&format!("{}_insert_durable_p99", p), us(super::percentile(&mut times, 99.0)), "us");
    super::report("store_bytes_per_cycle_one_change_65536", bytes_per_cycle(&mut store) as f64, "bytes");

    // Compaction: overwrite every fourth of the first 16,384 entries (4,096 puts in one
    // batch, garbage), then compact.
    store.begin_batch(4096).unwrap();
    for id in (0..16_384u32).step_by(4) {
        let key = store.key(id).unwrap();
        store.put(&key, &format!("rewritten {} {}", id, "y".repeat(150)), 1_900_000_000).unwrap();
    }
    store.end_batch().unwrap();
    let before = store.log_bytes();
    let t = Instant::now();
    let (b0, b1) = store.compact().unwrap();
    let took = t.elapsed();
    assert_eq!(b0, before);
    super::report("store_compact_65536", ms(took), "ms");
    super::report("store_compact_throughput", super::mb_per_s(b0 as usize, took), "MB/s");
    super::report("store_compact_bytes_after", b1 as f64 / 1e6, "MB");
    drop(store);
}

/// The same `n` entries put into an empty store in one batch (what `memory import` does).
fn batch_import(n: usize, seed: u64) {
    let dir = temp_dir("import");
    let mut w = Workload::new(seed, n);
    let mut store = Store::open_with_capacity(&dir, n).unwrap();
    let mut value = String::new();
    let mut in_store = Duration::ZERO;
    let t = Instant::now();
    store.begin_batch(n as u64).unwrap();
    in_store += t.elapsed();
    for i in 0..n as u64 {
        let key = w.next(&mut value);
        let t = Instant::now();
        store.put(&key, &value, 1_700_000_000 + i).unwrap();
        in_store += t.elapsed();
    }
    let t = Instant::now();
    store.end_batch().unwrap();
    let end = t.elapsed();
    in_store += end;
    assert_eq!(store.len(), n);
    let log_bytes = store.log_bytes();
    drop(store);
    super::report(&format!("store_{}_batch_import", n), ms(in_store), "ms");
    super::report(&format!("store_{}_batch_import_throughput", n), n as f64 / in_store.as_secs_f64(), "entries/s");
    super::report(&format!("store_{}_batch_import_end_batch", n), ms(end), "ms");
    super::report(&format!("store_{}_batch_import_mb_per_s", n), super::mb_per_s(log_bytes as usize, in_store), "MB/s");
    std::fs::remove_dir_all(&dir).unwrap();
}

// -------------------------------------------------------------------------------------------
// Kept from before
// -------------------------------------------------------------------------------------------

/// p50/p99 of the 1,000-entry 2 AND + 1 NOT query (64 uniform tags), and allocations.
fn uniform_query_latency(store: &Store, n: usize, samples: usize) {
    let mut rng = Rng(7);
    let mut results = Results::with_capacity(32);
    let mut times = Vec::with_capacity(samples);
    let queries: Vec<Query> = (0..256)
        .map(|_| Query {
            required: Some(
                normalize(&format!(
                    "{},{}",
                    uniform_tag(rng.below(UNIFORM_TAGS)),
                    uniform_tag(rng.below(UNIFORM_TAGS))
                ))
                .unwrap(),
            ),
            excluded: Some(normalize(&uniform_tag(rng.below(UNIFORM_TAGS))).unwrap()),
            sort: Sort::Newest,
            max_results: 20,
            ..Query::default()
        })
        .collect();
    let mut matched = 0usize;
    let allocs_before = super::allocations();
    for i in 0..samples {
        let q = &queries[i % queries.len()];
        let t = Instant::now();
        store.query(q, &mut results);
        times.push(t.elapsed());
        matched += results.matched();
    }
    let allocs = super::allocations() - allocs_before;
    super::report(&format!("store_query_and_not_{}_p50", n), us(super::percentile(&mut times, 50.0)), "us");
    super::report(&format!("store_query_and_not_{}_p99", n), us(super::percentile(&mut times, 99.0)), "us");
    super::report(&format!("store_query_and_not_{}_matches_avg", n), matched as f64 / samples as f64, "entries");
    super::report("store_query_allocations_per_query", allocs as f64 / samples as f64, "allocs");
}

/// `memory.json` save latency (serialize + atomic write with fsyncs) for a working set of
/// 64 entries of 1 KB, and its size.
fn memory_file_save() {
    let dir = temp_dir("memfile");
    let mut m = MemoryFile::new();
    for i in 0..64 {
        let key = normalize(&format!("note,n{}", i)).unwrap();
        m.working.add(&key, &"memory text é→ ".repeat(64), 1_700_000_000).unwrap();
    }
    m.agent.set("last_action", "storage_save dictionary,terms").unwrap();
    let mut saver = Saver::new(&dir);
    let mut times = Vec::with_capacity(100);
    // Warm up: the first saves create the file and its .prev.
    saver.save(&m).unwrap();
    saver.save(&m).unwrap();
    let allocs_before = super::allocations();
    for i in 0..100 {
        m.iteration = i;
        let t = Instant::now();
        saver.save(&m).unwrap();
        times.push(t.elapsed());
    }
    let allocs = super::allocations() - allocs_before;
    super::report("memory_file_save_64x1k_p50", us(super::percentile(&mut times, 50.0)), "us");
    super::report("memory_file_save_64x1k_p99", us(super::percentile(&mut times, 99.0)), "us");
    super::report("memory_file_save_bytes", saver.last_bytes() as f64, "bytes");
    super::report("memory_file_save_allocations_per_save", allocs as f64 / 100.0, "allocs");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Log bytes one agent cycle writes when one entry changes: one put, one read counted and
/// flushed.
fn bytes_per_cycle(store: &mut Store) -> u64 {
    let id = store.ids().nth(store.len() / 2).unwrap();
    let key = store.key(id).unwrap();
    let before = store.log_bytes();
    store.put(&key, &format!("changed {}", "z".repeat(200)), 1_850_000_000).unwrap();
    store.load(&key, 1_850_000_001).unwrap();
    store.flush_access().unwrap();
    store.log_bytes() - before
}

/// The 1,000-entry stores: the uniform one of before, and a Zipf one for 3 AND + 1 NOT.
fn small_stores() {
    let dir = temp_dir("small");
    write_uniform_log(&dir, 1000, 1);
    let store = Store::open_with_capacity(&dir, 4096).unwrap();
    assert_eq!(store.len(), 1000);
    uniform_query_latency(&store, 1000, 20_000);
    drop(store);

    // Append + fsync, and bytes per cycle, on the small store.
    let mut store = Store::open_with_capacity(&dir, 4096).unwrap();
    let bytes_small = bytes_per_cycle(&mut store);
    let mut times = Vec::new();
    let key = normalize("bench,append").unwrap();
    for i in 0..300u64 {
        let value = format!("value {} {}", i, "x".repeat(200));
        let t = Instant::now();
        store.put(&key, &value, 1_800_000_000 + i).unwrap();
        times.push(t.elapsed());
    }
    super::report("store_append_fsync_p50", us(super::percentile(&mut times, 50.0)), "us");
    super::report("store_append_fsync_p99", us(super::percentile(&mut times, 99.0)), "us");
    super::report("store_bytes_per_cycle_one_change_1000", bytes_small as f64, "bytes");
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();

    let dir = temp_dir("small-zipf");
    let mut w = Workload::new(11, 1000);
    write_zipf_log(&dir, 1000, &mut w);
    let store = Store::open_with_capacity(&dir, 1000).unwrap();
    let mut rng = Rng(13);
    let q4 = and_not_queries(&w.zipf, &mut rng, 1024);
    query_figures(&store, &q4, 20_000, Duration::from_secs(2), "store_1000_query_3and1not");
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Prints this area's figures (or, in the child, those of one store).
pub fn run() {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        let (n, dir) = spec.split_once(':').unwrap();
        child(n.parse().unwrap(), Path::new(dir));
        std::process::exit(0);
    }
    let start = Instant::now();
    memory_file_save();
    small_stores();
    let figs: Vec<Figures> = SIZES.iter().enumerate().map(|(i, &n)| zipf_store(n, 0x2b1d_5eed + i as u64)).collect();
    // How query cost grows from the smaller store to the larger.
    let (a, b) = (SIZES[0], SIZES[1]);
    for kind in ["1tag", "3and1not"] {
        let name = |n: usize| format!("store_{}_query_{}_p50", n, kind);
        if let (Some(x), Some(y)) = (figs[0].get(&name(a)), figs[1].get(&name(b))) {
            super::report(&format!("store_query_{}_p50_ratio_{}_to_{}", kind, b, a), y / x.max(1e-9), "x");
        }
    }
    super::report("store_area_wall_time", start.elapsed().as_secs_f64(), "s");
}
