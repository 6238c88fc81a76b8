//! The longest pause the store's upkeep puts into a cycle (issue 39: no cycle over 100 ms at
//! 1,048,576 entries), at 65,536 entries, and at 1,048,576 when `LKJAGENT_BENCH_UPKEEP_1M=1`
//! (building that store and its index takes minutes; `LKJAGENT_BENCH_UPKEEP_SIZES`,
//! comma-separated, names the sizes instead).
//!
//! The store is the recall corpus (`tests/support/recall_corpus.rs`), its text index built
//! and written to `store.fts`, as the agent finds it after a clean stop. Then cycles as the
//! agent runs them: one save (an overwrite of a random entry with a new value, synced), then
//! `flush_access` (the cycle's upkeep: the checkpoint when 4 MiB of log are due, the text
//! index's merge or its next step). Cycles run until two checkpoints have passed and every
//! merge they started has finished.
//!
//! - `upkeep_<n>_longest_pause`: the longest `flush_access` of those cycles (the pause);
//! - `upkeep_<n>_longest_save`: the longest save (the index's upkeep of one change, and an
//!   early merge should the delta fill);
//! - `upkeep_<n>_longest_checkpoint_cycle`: the longest of the cycles that wrote `store.ckpt`
//!   (and, before the merge ran in steps, the whole merge); since its sync runs beside the
//!   cycle, the longer of `_longest_checkpoint_write_cycle` (the cycle that writes its temp
//!   file and starts the merge) and `_longest_checkpoint_in_place_cycle` (the later step that
//!   renames the synced file into place), and `_longest_checkpoint_write_cycle_on_cpu` that
//!   cycle's own time on a CPU;
//! - `upkeep_<n>_checkpoint_cycle_checked_bytes`: bytes of `store.ckpt` whose checksums the
//!   checkpoint's cycle took itself (the rest are taken beside the cycle, with its sync);
//! - `upkeep_<n>_longest_merge_step_cycle`: the longest of the cycles that ran a step of a
//!   merge of the text index and no checkpoint (the last step opens the new file and brings
//!   the changes since into the delta);
//! - `upkeep_<n>_merge_step_cycles_over_100ms`, `_p50`, `_p99`: how those are spread, beside
//!   `upkeep_<n>_save_cycles_over_100ms`, the saves (one append and its fsync) that took as
//!   long: the disk's own stalls, which a step's sync meets as a save's does;
//! - `upkeep_<n>_longest_pause_on_cpu`, `_longest_merge_step_cycle_on_cpu`,
//!   `_merge_step_cycles_over_100ms_on_cpu`, `_merge_step_cycle_p99_on_cpu`: the same pauses'
//!   own time on a CPU (`/proc/thread-self/schedstat`), apart from waiting for one on a loaded
//!   machine (a niced bench beside other work) or for the disk;
//! - `upkeep_<n>_pause_p50`: the median `flush_access`;
//! - `upkeep_<n>_checkpoints`, `upkeep_<n>_merges`, `upkeep_<n>_cycles`: what the cycles did;
//! - `upkeep_<n>_merge_cycles`: cycles that ran a step of a merge (0 when merges stop a
//!   cycle whole);
//! - `upkeep_<n>_step_postings_most`: the most postings one step walked (a word's counted and
//!   written each count): what a step's length follows inside a long word;
//! - `upkeep_<n>_checkpoint_file`: writing `store.ckpt` alone (best of 3, the text index
//!   current), the part of a checkpoint's cycle that is not the text index's.

use crate::bench_recall::recall_corpus;
use crate::{percentile, report};
use lkjagent::memory::key::normalize;
use recall_corpus::{Rng, Zipf};
use std::time::{Duration, Instant};

/// Most cycles a size runs (a bound, should checkpoints not come).
const MAX_CYCLES: usize = 200_000;

pub fn run() {
    let default = if std::env::var_os("LKJAGENT_BENCH_UPKEEP_1M").is_some() { "65536,1048576" } else { "65536" };
    let sizes = std::env::var("LKJAGENT_BENCH_UPKEEP_SIZES").unwrap_or_else(|_| default.into());
    for n in sizes.split(',').filter_map(|s| s.trim().parse::<usize>().ok()) {
        at(n);
    }
}

fn at(n: usize) {
    let dir = std::env::temp_dir().join(format!("lkj-bench-upkeep-{}-{}", std::process::id(), n));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let data = dir.join("data");
    let t = Instant::now();
    let (mut store, _) = recall_corpus::build(&data, n, 1, &dir.join("corpus.tsv"), &dir.join("queries.txt"));
    store.recall_rebuild().unwrap();
    store.recall_flush().unwrap();
    store.checkpoint().unwrap();
    eprintln!("upkeep_{}: store and index built in {:.1} s", n, t.elapsed().as_secs_f64());
    let p = |name: &str| format!("upkeep_{}_{}", n, name);

    let zipf = Zipf::new(20_000);
    let mut rng = Rng(0xC1C1E);
    let merges0 = store.recall_stats().merges;
    let ckpt = data.join("store.ckpt");
    let stamp = || std::fs::metadata(&ckpt).and_then(|m| m.modified()).ok();
    let mut last = stamp();
    let (mut checkpoints, mut merge_cycles, mut cycles) = (0usize, 0usize, 0usize);
    let mut pauses = Vec::new();
    let (mut longest_step, mut longest_checkpoint) = (Duration::ZERO, Duration::ZERO);
    let (mut longest_write, mut longest_in_place) = (Duration::ZERO, Duration::ZERO);
    let (mut longest_write_cpu, mut checked_here) = (Duration::ZERO, 0u64);
    let mut steps = Vec::new();
    let (mut steps_cpu, mut longest_cpu) = (Vec::new(), Duration::ZERO);
    let mut saves = Vec::new();
    while cycles < MAX_CYCLES {
        let i = (rng.next() % n as u64) as usize;
        let key = normalize(&format!("topic{},item{}", i / 1024, i % 1024)).unwrap();
        let value = recall_corpus::value(&zipf, &mut rng);
        let t = Instant::now();
        store.put(&key, &value, 1_800_000_000).unwrap();
        saves.push(t.elapsed());
        let merging = store.recall_merging();
        let syncing = store.checkpoint_syncing();
        let (t, cpu) = (Instant::now(), on_cpu());
        store.flush_access().unwrap();
        let pause = t.elapsed();
        let pause_cpu = on_cpu().saturating_sub(cpu);
        longest_cpu = longest_cpu.max(pause_cpu);
        pauses.push(pause);
        cycles += 1;
        if merging || store.recall_merging() {
            merge_cycles += 1;
        }
        let now = stamp();
        let started = !syncing && store.checkpoint_syncing();
        if started {
            // The cycle that wrote store.ckpt's temp file (synced beside the cycles).
            longest_write = longest_write.max(pause);
            longest_write_cpu = longest_write_cpu.max(pause_cpu);
            longest_checkpoint = longest_checkpoint.max(pause);
            checked_here = checked_here.max(store.checkpoint_checked_here());
        }
        if now != last {
            last = now;
            checkpoints += 1;
            longest_checkpoint = longest_checkpoint.max(pause);
            if syncing {
                // The step that put the synced file in place.
                longest_in_place = longest_in_place.max(pause);
            }
        } else if merging {
            longest_step = longest_step.max(pause);
            steps.push(pause);
            steps_cpu.push(pause_cpu);
        }
        if checkpoints >= 2 && !store.recall_merging() && !store.checkpoint_syncing() {
            break;
        }
    }
    let longest = pauses.iter().max().copied().unwrap_or_default();
    let longest_save = saves.iter().max().copied().unwrap_or_default();
    report(&p("longest_pause"), ms(longest), "ms");
    report(&p("longest_save"), ms(longest_save), "ms");
    report(&p("longest_checkpoint_cycle"), ms(longest_checkpoint), "ms");
    report(&p("longest_checkpoint_write_cycle"), ms(longest_write), "ms");
    report(&p("longest_checkpoint_in_place_cycle"), ms(longest_in_place), "ms");
    report(&p("longest_checkpoint_write_cycle_on_cpu"), ms(longest_write_cpu), "ms");
    report(&p("checkpoint_cycle_checked_bytes"), checked_here as f64, "B");
    report(&p("longest_merge_step_cycle"), ms(longest_step), "ms");
    let over = steps.iter().filter(|&&d| d > Duration::from_millis(100)).count();
    report(&p("merge_step_cycles_over_100ms"), over as f64, "");
    report(&p("merge_step_cycle_p50"), ms(percentile(&mut steps, 50.0)), "ms");
    report(&p("merge_step_cycle_p99"), ms(percentile(&mut steps, 99.0)), "ms");
    // The same on a CPU: a step's own work, apart from its waits for a CPU and the disk.
    let over_cpu = steps_cpu.iter().filter(|&&d| d > Duration::from_millis(100)).count();
    report(&p("longest_pause_on_cpu"), ms(longest_cpu), "ms");
    report(&p("longest_merge_step_cycle_on_cpu"), ms(steps_cpu.iter().max().copied().unwrap_or_default()), "ms");
    report(&p("merge_step_cycles_over_100ms_on_cpu"), over_cpu as f64, "");
    report(&p("merge_step_cycle_p99_on_cpu"), ms(percentile(&mut steps_cpu, 99.0)), "ms");
    // The disk's own stalls, for scale: a save is one append and its fsync.
    let slow_saves = saves.iter().filter(|&&d| d > Duration::from_millis(100)).count();
    report(&p("save_cycles_over_100ms"), slow_saves as f64, "");
    report(&p("pause_p50"), ms(percentile(&mut pauses, 50.0)), "ms");
    report(&p("save_p50"), ms(percentile(&mut saves, 50.0)), "ms");
    report(&p("checkpoints"), checkpoints as f64, "");
    report(&p("merges"), (store.recall_stats().merges - merges0) as f64, "");
    report(&p("merge_cycles"), merge_cycles as f64, "");
    report(&p("step_postings_most"), store.recall_stats().step_postings_most as f64, "");
    report(&p("cycles"), cycles as f64, "");
    // The checkpoint file alone (the text index current, nothing to merge): the part of a
    // checkpoint's cycle that is not the text index's.
    store.recall_flush().unwrap();
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        store.checkpoint().unwrap();
        best = best.min(t.elapsed());
    }
    report(&p("checkpoint_file"), ms(best), "ms");
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

/// This thread's time on a CPU so far (`/proc/thread-self/schedstat`, its first field, in
/// nanoseconds, as exact as the scheduler's tick; zero where there is none).
fn on_cpu() -> Duration {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    Duration::from_nanos(s.split_whitespace().next().and_then(|x| x.parse().ok()).unwrap_or(0))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
