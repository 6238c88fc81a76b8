#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! The steady-state memory path allocates nothing: once the store, the working set, the
//! memory file saver and a result buffer exist, a cycle's worth of operations (store a value,
//! load one, query, search text, count and flush accesses, change the working set, save
//! `memory.json` atomically) makes zero heap allocations.

#[path = "support/alloc_counter.rs"]
mod alloc_counter;

#[path = "support/temp.rs"]
mod temp;

#[global_allocator]
static GLOBAL: alloc_counter::ThreadCountingAlloc = alloc_counter::ThreadCountingAlloc;

use lkjagent::memory::file::{MemoryFile, Saver};
use lkjagent::memory::key::normalize;
use lkjagent::memory::query::{Archived, Query, Results, Sort};
use lkjagent::memory::store::Store;

#[test]
fn a_cycle_allocates_nothing() {
    // Counts this thread only: the test harness's own thread may allocate meanwhile (a
    // blocking channel receive does), which once made this test fail on a busy machine.
    alloc_counter::count_this_thread(true);
    let dir = temp::temp_dir("store-alloc");
    let mut store = Store::open_with_capacity(&dir, 1024).unwrap();
    let mut memory = MemoryFile::new();
    let mut saver = Saver::new(&dir);
    let mut results = Results::new();
    let keys: Vec<_> = (0..32).map(|i| normalize(&format!("notes,topic{},k{}", i % 8, i)).unwrap()).collect();
    let values: Vec<String> = (0..64).map(|i| format!("value {} é→ \"q\"\n{}", i, "x".repeat(i * 7))).collect();
    let query = Query {
        required: Some(normalize("notes").unwrap()),
        excluded: Some(normalize("topic3").unwrap()),
        sort: Sort::Relevance,
        ..Query::default()
    };

    let cycle = |n: usize, store: &mut Store, memory: &mut MemoryFile, saver: &mut Saver, results: &mut Results| {
        let now = 1_700_000_000 + n as u64;
        let key = &keys[n % keys.len()];
        store.put(key, &values[n % values.len()], now).unwrap();
        let _ = store.load(&keys[(n + 3) % keys.len()], now).unwrap();
        store.query(&query, results);
        store.search_text("VALUE 1", Archived::Exclude, 10, results).unwrap();
        store.flush_access().unwrap();
        memory.working.add(key, &values[n % values.len()], now).unwrap();
        if n % 3 == 1 {
            memory.working.remove(&keys[(n + 5) % keys.len()]);
        }
        memory.iteration += 1;
        memory.agent.set("last_action", "storage_save").unwrap();
        saver.save(memory).unwrap();
    };
    // Warm up: every key exists, buffers have reached their working size.
    for n in 0..64 {
        cycle(n, &mut store, &mut memory, &mut saver, &mut results);
    }
    let before = alloc_counter::thread_allocations();
    for n in 64..128 {
        cycle(n, &mut store, &mut memory, &mut saver, &mut results);
    }
    let allocs = alloc_counter::thread_allocations() - before;
    assert_eq!(allocs, 0, "{} allocations in 64 cycles", allocs);
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ranked_recall_and_its_upkeep_allocate_nothing_once_open() {
    alloc_counter::count_this_thread(true);
    let dir = temp::temp_dir("recall-alloc");
    let mut store = Store::open_with_capacity(&dir, 1024).unwrap();
    let mut ranked = lkjagent::memory::store::recall::Ranked::new();
    let words = ["apple", "pear", "plum", "fig", "kiwi", "Crème", "brûlée", "lime"];
    let keys: Vec<_> = (0..32).map(|i| normalize(&format!("notes,topic{},k{}", i % 8, i)).unwrap()).collect();
    let values: Vec<String> = (0..64)
        .map(|i| (0..5 + i % 20).map(|j| words[(i * 7 + j * 3) % words.len()]).collect::<Vec<_>>().join(" "))
        .collect();
    let queries = ["apple pear", "fig kiwi lime", "creme brulee topic3", "notes"];
    let cycle = |n: usize, store: &mut Store, ranked: &mut lkjagent::memory::store::recall::Ranked| {
        let now = 1_700_000_000 + n as u64;
        store.put(&keys[n % keys.len()], &values[n % values.len()], now).unwrap();
        store.rank(queries[n % queries.len()], 10, ranked).unwrap();
        store.rank_where(queries[(n + 1) % queries.len()], 5, Archived::Include, Some(&keys[0]), ranked).unwrap();
        if n.is_multiple_of(5) && n >= keys.len() {
            store.set_archived(&keys[(n + 1) % keys.len()], n.is_multiple_of(10), now).unwrap();
        }
        store.flush_access().unwrap();
    };
    // The first query opens the index (its tables are reserved then, once).
    for n in 0..64 {
        cycle(n, &mut store, &mut ranked);
    }
    let before = alloc_counter::thread_allocations();
    for n in 64..192 {
        cycle(n, &mut store, &mut ranked);
    }
    let allocs = alloc_counter::thread_allocations() - before;
    assert_eq!(allocs, 0, "{} allocations in 128 cycles of saves and ranked queries", allocs);
    assert!(!ranked.is_empty());
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The capacity policy's clean-ups allocate nothing: with a store of 256 kept under its
/// threshold by a batch to the cold store every ~26 saves, every save that does not also
/// compact the log (a rewrite that names its files anew) makes zero heap allocations, the
/// clean-up batches included.
#[test]
fn a_cleanup_allocates_nothing() {
    use lkjagent::memory::store::cleanup::{Policy, Use};
    alloc_counter::count_this_thread(true);
    let dir = temp::temp_dir("store-alloc-cleanup");
    let mut store = Store::open_with_capacity(&dir, 256).unwrap();
    store.set_policy(Some(Policy::default()));
    let keys: Vec<_> = (0..3000).map(|i| normalize(&format!("fact,n{}", i)).unwrap()).collect();
    let (mut measured, mut batches, mut compactions) = (0, 0, 0);
    for (i, key) in keys.iter().enumerate() {
        let before_bytes = store.log_bytes();
        let before = alloc_counter::thread_allocations();
        store.put(key, "a fact of some length, the same for every entry", 1_700_000_000 + i as u64).unwrap();
        store.note_use(key, Use::Saved);
        store.flush_access().unwrap();
        let allocs = alloc_counter::thread_allocations() - before;
        let moved = store.take_moved();
        let compacted = store.log_bytes() < before_bytes;
        compactions += usize::from(compacted);
        // Past the first clean-up (which opens the cold store once).
        if i < 300 || compacted {
            continue;
        }
        measured += 1;
        batches += moved.batches;
        assert_eq!(allocs, 0, "save {} allocated (a clean-up batch: {})", i, moved.batches > 0);
    }
    assert!(batches > 50 && measured > 2000, "{} batches in {} saves measured", batches, measured);
    let _ = compactions;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A due checkpoint allocates nothing once the store has taken one: the cycle that writes
/// `store.ckpt`'s body and hands it to be finished and synced beside the cycle, and the cycle
/// that puts it in place, make zero heap allocations (the first checkpoint reserves what
/// finishing one uses, once).
#[test]
fn a_due_checkpoint_allocates_nothing_once_one_was_taken() {
    alloc_counter::count_this_thread(true);
    let dir = temp::temp_dir("store-alloc-checkpoint");
    let mut store = Store::open_with_capacity(&dir, 8192).unwrap();
    // New entries only (no garbage, so no compaction): 2 KiB each, a checkpoint every ~2,000.
    let keys: Vec<_> = (0..8000).map(|i| normalize(&format!("notes,topic{},k{}", i % 64, i)).unwrap()).collect();
    let value = "v".repeat(2000);
    let (mut due, mut measured, mut worst) = (0, 0, 0u64);
    for (i, key) in keys.iter().enumerate() {
        let syncing = store.checkpoint_syncing();
        let before = alloc_counter::thread_allocations();
        store.put(key, &value, 1_700_000_000 + i as u64).unwrap();
        store.flush_access().unwrap();
        let allocs = alloc_counter::thread_allocations() - before;
        let started = !syncing && store.checkpoint_syncing();
        let landed = syncing && !store.checkpoint_syncing();
        due += usize::from(started);
        // Past the first checkpoint and its landing.
        if due >= 2 && (started || landed) {
            measured += 1;
            worst = worst.max(allocs);
        }
        if landed || syncing {
            // Give the finishing thread time, so that checkpoints land between saves.
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
    assert!(due >= 3 && measured >= 3, "{} checkpoints, {} of their cycles measured", due, measured);
    assert_eq!(worst, 0, "a due checkpoint's cycle allocated {} times", worst);
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}
