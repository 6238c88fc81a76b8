//! The capacity soak (issue 23): the agent, driven by the `replay` provider, saves a new fact
//! every cycle into a store of capacity 1,024 with the clean-up on, for 200,000 cycles
//! (`LKJAGENT_SOAK_CYCLES` changes the count), in a data directory on tmpfs (`/dev/shm`) when
//! there is one, else under the system temp dir (`LKJAGENT_SOAK_DIR` names another place, a
//! real disk say, where every cycle's fsyncs count). Figures:
//!
//! - `soak_cycles`: cycles run; the agent must never stop (a cycle error or a failed save ends
//!   the soak early and says so).
//! - `soak_rss_first/last`: the highest VmRSS seen (polled every 500 cycles) in the first and in
//!   the last 10,000 cycles, and `soak_rss_ratio` (last / first; the target is within 10 %).
//! - `soak_overhead_p50_first/last`: the cycle's overhead (everything but the model's reply)
//!   in the first and in the last 10,000 cycles, and `soak_overhead_ratio`.
//! - `soak_live_max`: the most live entries seen (at most the capacity); `soak_cold`: entries
//!   in the cold store at the end; `soak_cleanups`: clean-up batches; `soak_missing`: saves
//!   acknowledged but found in neither store (target 0).
//! - `soak_overhead_longest_last`, `soak_overhead_over_100ms_last`: the longest cycle overhead
//!   of the last 10,000 cycles and how many passed 100 ms: with a cold store of about 190,000
//!   entries, the cycle's upkeep (clean-up, checkpoints, the live text index's merges in
//!   steps, log compactions) and its save. The soak's agent never searches, so its cold text
//!   index is never built and no cold merge runs here; the writer's figures below run them.
//! - `soak_close`: the agent's close (`close_store`): its agent never searched, so the close
//!   builds the cold text index from `store.cold` and writes `store.cold.fts` (before session
//!   24 it wrote none and the next first search built it).
//! - After the soak, the store opened as the agent opens it (issue 39):
//!   `soak_writer_first_search_built`, its first ranked search (`store.cold.fts` as the close
//!   left it; the key of each cold id noted at the open); then 2,000 cycles of the soak's kind on the store itself (save, use,
//!   `flush_access`), `soak_writer_cycles_longest` the longest; then the merge of the cold
//!   index's delta into a new file in steps as the cycle's upkeep runs them (25 ms of work and
//!   a sync each): `soak_writer_cold_merge_steps`, `_step_p50`, `_step_longest`; then, closed
//!   with its indexes and opened again, `soak_writer_first_search`, the first ranked search
//!   with `store.cold.fts` there (read and checked, the keys of `store.cold` noted). Each
//!   `_on_cpu` figure is the same pause's own time on a CPU (`/proc/thread-self/schedstat`;
//!   for the cycles and steps, the largest), apart from waiting for one on a loaded machine.
//! - `soak_allocations_per_cycle_last`: heap allocations per cycle over the last 10,000, and
//!   `soak_cycles_allocating_last`: how many of those cycles allocated at all (the ones that
//!   compact the log; clean-up batches allocate nothing, `tests/store_alloc.rs`).

use lkjagent::agent::config;
use lkjagent::agent::engine::{Agent, Model};
use lkjagent::llm::{self, ProviderKind};
use lkjagent::memory::store::cold;
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

const CAPACITY: usize = 1024;
const WINDOW: usize = 10_000;
const RSS_EVERY: usize = 500;

/// The key of cycle `i`'s save: `fact,n<i>`, a new tag every cycle; with
/// `LKJAGENT_SOAK_NEW_TAGS` = N (2 to 8), N new tags each (`n<i>x0` .. `n<i>x<N-1>`), so that
/// the tag table fills before the entries do (capacity 1,024 holds 8,192 tags; at N = 8 its
/// threshold comes at 922 entries).
fn key(i: usize) -> String {
    let n = std::env::var("LKJAGENT_SOAK_NEW_TAGS").ok().and_then(|v| v.parse::<usize>().ok()).unwrap_or(1);
    if n <= 1 {
        return format!("fact,n{}", i);
    }
    (0..n.min(8)).map(|t| format!("n{}x{}", i, t)).collect::<Vec<_>>().join(",")
}

/// What the store does after the soak, as its writer (see the module documentation).
struct Writer {
    built: Duration,
    longest_cycle: Duration,
    longest_cycle_cpu: Duration,
    steps: Vec<Duration>,
    step_p50: Duration,
    step_longest: Duration,
    step_longest_cpu: Duration,
    from_file: Duration,
    from_file_cpu: Duration,
}

/// This thread's time on a CPU so far (`/proc/thread-self/schedstat`, its first field, in
/// nanoseconds; zero where there is none): a pause's own work, apart from the time it waited
/// for a CPU on a loaded machine.
fn on_cpu() -> Duration {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    Duration::from_nanos(s.split_whitespace().next().and_then(|x| x.parse().ok()).unwrap_or(0))
}

fn writer(d: &Path, cycles: usize) -> lkjagent::error::Result<Writer> {
    use lkjagent::memory::store::cleanup::{Policy, Use};
    use lkjagent::memory::store::{recall::Ranked, Store};
    use std::time::Instant;
    let mut w = Store::open_with_capacity(d, CAPACITY)?;
    w.set_policy(Some(Policy::default()));
    let mut ranked = Ranked::new();
    let t = Instant::now();
    w.rank("fact", 10, &mut ranked)?;
    let built = t.elapsed();
    let (mut longest_cycle, mut longest_cycle_cpu) = (Duration::ZERO, Duration::ZERO);
    for i in cycles..cycles + 2000 {
        let key = lkjagent::memory::key::normalize(&key(i))?;
        let value = format!("fact number {}: a line of text long enough to look like a saved fact", i);
        let (t, cpu) = (Instant::now(), on_cpu());
        w.put(&key, &value, 1_700_000_000 + i as u64)?;
        w.note_use(&key, Use::Saved);
        w.flush_access()?;
        longest_cycle = longest_cycle.max(t.elapsed());
        longest_cycle_cpu = longest_cycle_cpu.max(on_cpu().saturating_sub(cpu));
    }
    w.recall_flush_in_steps()?;
    let mut steps = Vec::new();
    let mut step_longest_cpu = Duration::ZERO;
    while w.recall_merging() {
        let (t, cpu) = (Instant::now(), on_cpu());
        w.recall_merge_step(t + Duration::from_millis(lkjagent::limits::TEXT_MERGE_STEP_MILLIS))?;
        steps.push(t.elapsed());
        step_longest_cpu = step_longest_cpu.max(on_cpu().saturating_sub(cpu));
    }
    let step_longest = steps.iter().max().copied().unwrap_or_default();
    let step_p50 = super::percentile(&mut steps.clone(), 50.0);
    w.close_with_indexes()?;
    let mut w = Store::open_with_capacity(d, CAPACITY)?;
    let (t, cpu) = (Instant::now(), on_cpu());
    w.rank("fact", 10, &mut ranked)?;
    let (from_file, from_file_cpu) = (t.elapsed(), on_cpu().saturating_sub(cpu));
    Ok(Writer {
        built,
        longest_cycle,
        longest_cycle_cpu,
        steps,
        step_p50,
        step_longest,
        step_longest_cpu,
        from_file,
        from_file_cpu,
    })
}

/// Prints the soak's figures.
pub fn run() {
    let cycles: usize = std::env::var("LKJAGENT_SOAK_CYCLES").ok().and_then(|v| v.parse().ok()).unwrap_or(200_000);
    let base = match std::env::var_os("LKJAGENT_SOAK_DIR") {
        Some(d) => PathBuf::from(d),
        None if Path::new("/dev/shm").is_dir() => PathBuf::from("/dev/shm"),
        None => std::env::temp_dir(),
    };
    let d = base.join(format!("lkjagent-bench-soak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    if let Err(e) = prepare(&d, cycles) {
        super::skipped("soak", &format!("cannot prepare {}: {}", d.display(), e));
        return;
    }
    let res = soak(&d, cycles);
    let _ = std::fs::remove_dir_all(&d);
    if let Err(why) = res {
        super::skipped("soak", &why);
    }
}

fn prepare(d: &Path, cycles: usize) -> std::io::Result<()> {
    std::fs::create_dir_all(d)?;
    let config = std::fs::read_to_string("data/config.json")?
        .replace("\"provider\": \"openai\"", "\"provider\": \"replay\", \"replay_path\": \"script.jsonl\"")
        .replace("\"store_capacity\": 65536", &format!("\"store_capacity\": {}", CAPACITY));
    std::fs::write(d.join("config.json"), config)?;
    std::fs::write(d.join("memory.json"), r#"{"state":"thinking","iteration":0,"working_memory":{}}"#)?;
    let mut script = std::io::BufWriter::new(std::fs::File::create(d.join("script.jsonl"))?);
    for i in 0..cycles {
        writeln!(
            script,
            "{{\"content\": \"<agent><next_state>commanding</next_state><action><type>storage_save</type><tags>{}</tags><value>fact number {}: a line of text long enough to look like a saved fact</value></action></agent>\"}}",
            key(i),
            i
        )?;
    }
    script.flush()
}

fn vm_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn soak(d: &Path, cycles: usize) -> Result<(), String> {
    let mut config = config::load(d).map_err(|e| e.to_string())?;
    config.llm.provider = ProviderKind::Replay;
    config.llm.replay_path = Some(d.join("script.jsonl"));
    let client = llm::Client::new(&config.llm).map_err(|e| e.to_string())?;
    let mut agent = Agent::open(d, config, Model::Client(Box::new(client)), false).map_err(|e| e.to_string())?;
    let window = WINDOW.min(cycles / 2).max(1);
    let mut first = Vec::with_capacity(window);
    let mut last = Vec::with_capacity(window);
    let (mut rss_first, mut rss_last) = (0u64, 0u64);
    let (mut live_max, mut cleanups) = (0usize, 0usize);
    let mut allocs_at_last = 0;
    // Cycles of the last window that allocated at all (a compaction of the log, which names
    // its files anew and reads the new log back, is the one part of a cycle that does).
    let mut allocating = 0usize;
    let started = std::time::Instant::now();
    for i in 0..cycles {
        if i + window == cycles {
            allocs_at_last = super::allocations();
        }
        let before = super::allocations();
        let r = agent.cycle(&mut |_| {}, &|| false).map_err(|e| format!("cycle {} stopped the agent: {}", i + 1, e))?;
        if i + window >= cycles && super::allocations() > before {
            allocating += 1;
        }
        if let Some(e) = &r.error {
            return Err(format!("cycle {} failed: {}", i + 1, e));
        }
        if r.finished || r.actions.iter().next().is_none_or(|a| !a.ok) {
            return Err(format!("cycle {}: the save did not succeed ({:?})", i + 1, r.actions.iter().next()));
        }
        live_max = live_max.max(r.store_entries);
        cleanups += r.cleanup.batches;
        let sample = (i % RSS_EVERY == 0).then(vm_rss_kib);
        if i < window {
            first.push(r.overhead);
            rss_first = rss_first.max(sample.unwrap_or(0));
        }
        if i + window >= cycles {
            last.push(r.overhead);
            rss_last = rss_last.max(sample.unwrap_or(0));
        }
    }
    let allocs = super::allocations() - allocs_at_last;
    let elapsed = started.elapsed();
    let t = std::time::Instant::now();
    agent.close_store().map_err(|e| e.to_string())?;
    let closed = t.elapsed();
    drop(agent);
    // Nothing acknowledged is missing: each key in the live store or the cold store.
    let mut found: HashSet<String> = HashSet::new();
    let store = lkjagent::memory::store::Store::open_read_only_with_capacity(d, CAPACITY).map_err(|e| e.to_string())?;
    let live = store.len();
    for id in store.ids() {
        if let Some(k) = store.key(id) {
            found.insert(k.as_str().to_string());
        }
    }
    let cold_stats = cold::scan(d, &mut |e| {
        found.insert(e.key.as_str().to_string());
        Ok(true)
    })
    .map_err(|e| e.to_string())?;
    let missing = (0..cycles)
        .filter(|&i| {
            let k = lkjagent::memory::key::normalize(&key(i)).map(|k| k.as_str().to_string()).unwrap_or_default();
            !found.contains(&k)
        })
        .count();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let longest_last = last.iter().max().copied().unwrap_or_default();
    let over_100_last = last.iter().filter(|&&d| d > Duration::from_millis(100)).count();
    drop(store);
    let w = writer(d, cycles).map_err(|e| format!("after the soak: {}", e))?;
    let p_first = us(super::percentile(&mut first, 50.0));
    let p_last = us(super::percentile(&mut last, 50.0));
    super::report("soak_cycles", cycles as f64, "cycles");
    super::report("soak_seconds", elapsed.as_secs_f64(), "s");
    super::report("soak_rss_first", rss_first as f64 / 1024.0, "MiB");
    super::report("soak_rss_last", rss_last as f64 / 1024.0, "MiB");
    super::report("soak_rss_ratio", rss_last as f64 / rss_first.max(1) as f64, "x");
    super::report("soak_overhead_p50_first", p_first, "us");
    super::report("soak_overhead_p50_last", p_last, "us");
    super::report("soak_overhead_ratio", p_last / p_first.max(1e-9), "x");
    super::report("soak_overhead_longest_last", us(longest_last) / 1e3, "ms");
    super::report("soak_overhead_over_100ms_last", over_100_last as f64, "cycles");
    super::report("soak_close", us(closed) / 1e3, "ms");
    super::report("soak_writer_first_search_built", us(w.built) / 1e3, "ms");
    super::report("soak_writer_cycles_longest", us(w.longest_cycle) / 1e3, "ms");
    super::report("soak_writer_cycles_longest_on_cpu", us(w.longest_cycle_cpu) / 1e3, "ms");
    super::report("soak_writer_cold_merge_steps", w.steps.len() as f64, "steps");
    super::report("soak_writer_cold_merge_step_p50", us(w.step_p50) / 1e3, "ms");
    super::report("soak_writer_cold_merge_step_longest", us(w.step_longest) / 1e3, "ms");
    super::report("soak_writer_cold_merge_step_longest_on_cpu", us(w.step_longest_cpu) / 1e3, "ms");
    super::report("soak_writer_first_search", us(w.from_file) / 1e3, "ms");
    super::report("soak_writer_first_search_on_cpu", us(w.from_file_cpu) / 1e3, "ms");
    super::report("soak_live_max", live_max as f64, "entries");
    super::report("soak_live_end", live as f64, "entries");
    super::report("soak_cold", cold_stats.entries as f64, "entries");
    super::report("soak_cold_bytes", cold_stats.bytes as f64, "bytes");
    super::report("soak_cleanups", cleanups as f64, "batches");
    super::report("soak_missing", missing as f64, "entries");
    super::report("soak_allocations_per_cycle_last", allocs as f64 / window as f64, "allocs/cycle");
    super::report("soak_cycles_allocating_last", allocating as f64, "cycles");
    Ok(())
}
