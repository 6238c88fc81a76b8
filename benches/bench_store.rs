//! Figures for the store area (see bench.rs for the shared helpers): query latency on 1,000
//! and 65,536 entries, append-plus-fsync latency, load time of a full store, compaction
//! throughput, RAM per entry, bytes written per cycle when one entry changes, allocations per
//! query, and the `memory.json` save.
//!
//! The full stores are built by writing their log directly with the store's own record
//! encoder (65,536 fsynced puts would measure the disk, not the store), in a temp dir that is
//! removed at the end.

use lkjagent::fixed::FixedBuf;
use lkjagent::limits::{STORE_MAX_ENTRIES, STORE_RECORD_MAX_BYTES};
use lkjagent::memory::file::{MemoryFile, Saver};
use lkjagent::memory::key::{normalize, Key};
use lkjagent::memory::log::{self, PutHead};
use lkjagent::memory::query::{Archived, Query, Results, Sort};
use lkjagent::memory::store::{Store, LOG_NAME};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const TAGS: usize = 64;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn tag(i: usize) -> String {
    format!("topic{:02}", i)
}

/// Writes a log of `n` entries (3 to 5 tags each out of `TAGS`, distinct tag sets, values of
/// ~200 bytes).
fn build_log(dir: &Path, n: usize, seed: u64) {
    let mut rng = Rng(seed);
    let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join(LOG_NAME)).unwrap());
    let mut buf = FixedBuf::with_capacity("bench", STORE_RECORD_MAX_BYTES);
    log::encode_header(&mut buf, 1).unwrap();
    let mut seen = std::collections::HashSet::new();
    let mut id = 0u32;
    while (id as usize) < n {
        let k = 3 + rng.below(3);
        let names: Vec<String> = (0..k).map(|_| tag(rng.below(TAGS))).collect();
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

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lkj-bench-store-{}-{}", tag, std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// p50/p99 of a 3-tag AND/NOT query (2 required, 1 excluded), random tags per sample.
fn query_latency(store: &Store, n: usize, samples: usize) {
    let mut rng = Rng(7);
    let mut results = Results::with_capacity(32);
    let mut times = Vec::with_capacity(samples);
    let queries: Vec<Query> = (0..256)
        .map(|_| Query {
            required: Some(normalize(&format!("{},{}", tag(rng.below(TAGS)), tag(rng.below(TAGS)))).unwrap()),
            excluded: Some(normalize(&tag(rng.below(TAGS))).unwrap()),
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
    let p50 = super::percentile(&mut times, 50.0);
    let p99 = super::percentile(&mut times, 99.0);
    super::report(&format!("store_query_and_not_{}_p50", n), us(p50), "us");
    super::report(&format!("store_query_and_not_{}_p99", n), us(p99), "us");
    super::report(&format!("store_query_and_not_{}_matches_avg", n), matched as f64 / samples as f64, "entries");
    if n == 1000 {
        super::report("store_query_allocations_per_query", allocs as f64 / samples as f64, "allocs");
    }
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

/// Prints this area's figures.
pub fn run() {
    memory_file_save();

    // Small store.
    let dir = temp_dir("small");
    build_log(&dir, 1000, 1);
    let store = Store::open_with_capacity(&dir, 4096).unwrap();
    assert_eq!(store.len(), 1000);
    query_latency(&store, 1000, 20_000);
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
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();

    // Full store.
    let dir = temp_dir("full");
    let t = Instant::now();
    build_log(&dir, STORE_MAX_ENTRIES, 2);
    let built = t.elapsed();
    let log_bytes = std::fs::metadata(dir.join(LOG_NAME)).unwrap().len();
    super::report("store_full_build_log_write", built.as_secs_f64() * 1e3, "ms");
    super::report("store_full_log_size", log_bytes as f64 / 1e6, "MB");
    let t = Instant::now();
    let mut store = Store::open(&dir).unwrap();
    let load = t.elapsed();
    assert_eq!(store.len(), STORE_MAX_ENTRIES);
    super::report("store_load_65536", load.as_secs_f64() * 1e3, "ms");
    super::report("store_load_65536_throughput", super::mb_per_s(log_bytes as usize, load), "MB/s");
    super::report("store_ram_bytes_per_entry", store.ram_bytes() as f64 / store.capacity() as f64, "bytes");
    super::report("store_ram_index_total", store.ram_bytes() as f64 / (1024.0 * 1024.0), "MiB");
    query_latency(&store, STORE_MAX_ENTRIES, 2_000);
    let mut results = Results::with_capacity(16);
    let t = Instant::now();
    store.search_text("no such text anywhere", Archived::Exclude, 16, &mut results).unwrap();
    super::report("store_search_text_65536_full_scan", t.elapsed().as_secs_f64() * 1e3, "ms");
    let bytes_full = bytes_per_cycle(&mut store);
    super::report("store_bytes_per_cycle_one_change_1000", bytes_small as f64, "bytes");
    super::report("store_bytes_per_cycle_one_change_65536", bytes_full as f64, "bytes");

    // Compaction: overwrite a quarter of the entries (garbage), then compact.
    for id in (0..STORE_MAX_ENTRIES as u32).step_by(4).take(4096) {
        let key = store.key(id).unwrap();
        store.put(&key, &format!("rewritten {} {}", id, "y".repeat(150)), 1_900_000_000).unwrap();
    }
    let before = store.log_bytes();
    let t = Instant::now();
    let (b0, b1) = store.compact().unwrap();
    let took = t.elapsed();
    assert_eq!(b0, before);
    super::report("store_compact_65536", took.as_secs_f64() * 1e3, "ms");
    super::report("store_compact_throughput", super::mb_per_s(b0 as usize, took), "MB/s");
    super::report("store_compact_bytes_after", b1 as f64 / 1e6, "MB");
    drop(store);
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
