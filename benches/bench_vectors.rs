//! Figures for recall by meaning (`memory::store::vectors`) at 65,536 and 1,048,576 entries
//! (`LKJAGENT_BENCH_VECTORS_SIZES`, comma-separated, overrides) of 384 dimensions: a store of
//! `n` short entries and a `store.vec` of one random int8 vector each, written here in the
//! file's format (no embeddings server: the endpoint is never asked).
//!
//! - `vectors_<n>_open`: opening recall by meaning (the scan that matches records to entries),
//!   as `memory search` and the agent pay once;
//! - `vectors_<n>_query_mean` (p50, p99): the 10 nearest of a random query vector, the whole
//!   file scanned in `VECTORS_READ_BYTES` reads (the file in the page cache); allocations per
//!   query (must be 0);
//! - `vectors_<n>_file_mib`, `vectors_<n>_ram_mib` (reserved by the tables and buffers),
//!   `vectors_<n>_rss_growth_mib` (resident memory added by opening and querying: the file is
//!   never loaded).

use crate::{allocations, percentile, report};
use lkjagent::llm::embed::{meaning, EmbedSettings};
use lkjagent::memory::key::normalize;
use lkjagent::memory::query::Archived;
use lkjagent::memory::store::recall::Ranked;
use lkjagent::memory::store::vectors::{encode, header, key_hash, quantize, stamp, RECORD_OVERHEAD, VECTORS_NAME};
use lkjagent::memory::store::Store;
use std::io::Write;
use std::time::{Duration, Instant};

const DIM: usize = 384;
const QUERIES: usize = 50;

use crate::rng::Rng;

impl Rng {
    fn vector(&mut self, out: &mut [f32]) {
        for x in out.iter_mut() {
            *x = (self.next() % 20_001) as f32 / 10_000.0 - 1.0;
        }
    }
}

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

pub fn run() {
    let sizes = std::env::var("LKJAGENT_BENCH_VECTORS_SIZES").unwrap_or_else(|_| "65536,1048576".into());
    for n in sizes.split(',').filter_map(|s| s.trim().parse::<usize>().ok()) {
        at(n);
    }
}

fn at(n: usize) {
    let dir = std::env::temp_dir().join(format!("lkj-bench-vectors-{}-{}", std::process::id(), n));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let p = |name: &str| format!("vectors_{}_{}", n, name);
    let settings = EmbedSettings {
        endpoint: "http://127.0.0.1:9/v1/embeddings".into(),
        model: "bench".into(),
        dimension: DIM,
        ..EmbedSettings::default()
    };
    // The store: n entries, one batch.
    {
        let mut store = Store::open_with_capacity(&dir, n).unwrap();
        store.begin_batch(n as u64).unwrap();
        for i in 0..n {
            store.put(&normalize(&format!("a{},b{}", i % 1024, i / 1024)).unwrap(), "a short value", 1).unwrap();
        }
        store.end_batch().unwrap();
        // The vectors file, in the file's own format.
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(dir.join(VECTORS_NAME)).unwrap());
        f.write_all(&header(settings.identity(), DIM)).unwrap();
        let (mut v, mut q, mut rec) = (vec![0f32; DIM], vec![0i8; DIM], vec![0u8; RECORD_OVERHEAD + DIM]);
        for id in store.ids().collect::<Vec<_>>() {
            let info = store.info(id).unwrap();
            rng.vector(&mut v);
            let scale = quantize(&v, &mut q);
            encode(&mut rec, key_hash(&info.key), stamp(info.created as u32, info.version), scale, &q);
            f.write_all(&rec).unwrap();
        }
        f.flush().unwrap();
        store.close().unwrap();
    }
    let file_bytes = std::fs::metadata(dir.join(VECTORS_NAME)).unwrap().len();
    let store = Store::open_read_only_with_capacity(&dir, n).unwrap();
    let rss0 = rss_kib();
    let t = Instant::now();
    let mut m = meaning(&store, &settings, false).unwrap();
    report(&p("open"), t.elapsed().as_secs_f64() * 1e3, "ms");
    assert_eq!(m.stats().current, n);
    let mut rng = Rng(7);
    let mut v = vec![0f32; DIM];
    let mut out = Ranked::new();
    let mut times: Vec<Duration> = Vec::with_capacity(QUERIES);
    let mut allocs = 0u64;
    for _ in 0..QUERIES {
        rng.vector(&mut v);
        let a0 = allocations();
        let t = Instant::now();
        m.nearest_to(&store, &v, 10, Archived::Exclude, &mut out).unwrap();
        times.push(t.elapsed());
        allocs += allocations() - a0;
        assert_eq!(out.len(), 10);
    }
    let mean = times.iter().sum::<Duration>() / QUERIES as u32;
    report(&p("query_mean"), mean.as_secs_f64() * 1e3, "ms");
    report(&p("query_p50"), percentile(&mut times, 50.0).as_secs_f64() * 1e3, "ms");
    report(&p("query_p99"), percentile(&mut times, 99.0).as_secs_f64() * 1e3, "ms");
    report(&p("query_allocations"), allocs as f64 / QUERIES as f64, "per query");
    report(&p("file_mib"), file_bytes as f64 / (1 << 20) as f64, "MiB");
    report(&p("ram_mib"), m.ram_bytes() as f64 / (1 << 20) as f64, "MiB");
    report(&p("rss_growth_mib"), rss_kib().saturating_sub(rss0) as f64 / 1024.0, "MiB");
    drop(m);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}
