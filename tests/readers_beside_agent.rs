#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Read-only commands beside a running agent never lose what the agent stored.
//!
//! A real `lkjagent run` child (replay provider, no delay between cycles) saves one fact per
//! cycle, overwriting a rotating set of keys, while other real processes run every command that
//! only looks (`status`, `check --no-network`, `memory list/query/search/stats/export`, `report`) in a
//! loop. An in-flight append looks like a torn tail to a reader for a few microseconds; a
//! reader that "repaired" it cut the agent's log (facts lost, keys back to an older value, zero
//! runs where the agent's next write landed past the cut). Afterwards every fact the agent
//! acknowledged (all of them: the run ends cleanly) must be in the store with its last value,
//! and the log must hold no byte the agent did not write.

#[path = "support/cli.rs"]
mod cli;
#[path = "support/temp.rs"]
mod temp;
use cli::lkjagent;
use lkjagent::memory::key::normalize;
use lkjagent::memory::store::Store;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use temp::temp_dir;

/// Cycles the agent runs: each saves one fact.
const CYCLES: usize = 2000;
/// Distinct keys the facts rotate over, so most keys are overwritten many times.
const KEYS: usize = 40;

fn fact_key(i: usize) -> String {
    format!("fact,k{}", i % KEYS)
}

/// Values span several pages, so an append is visible half-written for a while (the file's size
/// grows page by page during one `write`): the window in which a reader sees a torn tail.
fn fact_value(i: usize) -> String {
    format!(
        "value {} of key {}, written at cycle {}: {}",
        i / KEYS,
        i % KEYS,
        i,
        "lorem ipsum ".repeat(1200).trim_end()
    )
}

/// A data directory whose agent saves `CYCLES` facts through the replay provider.
fn data_dir() -> PathBuf {
    let d = temp_dir("readers-beside-agent");
    let config = temp::shipped("config.json")
        .replace(r#""provider": "openai","#, r#""provider": "replay", "replay_path": "script.jsonl","#)
        .replace(r#""max_iterations": 5"#, &format!(r#""max_iterations": {}"#, CYCLES));
    assert!(config.contains("replay_path") && config.contains(&CYCLES.to_string()), "config edits did not apply");
    std::fs::write(d.join("config.json"), config).unwrap();
    std::fs::write(d.join("memory.json"), temp::shipped("memory.json")).unwrap();
    let mut script = String::new();
    for i in 0..CYCLES {
        // A save adds a key; the later values of a key are explicit updates.
        let reply = format!(
            "<agent><action><type>{}</type><tags>{}</tags><value>{}</value></action></agent>",
            if i < KEYS { "storage_save" } else { "record_update" },
            fact_key(i),
            fact_value(i)
        );
        script.push_str(&format!("{{\"content\": \"{}\"}}\n", reply));
    }
    std::fs::write(d.join("script.jsonl"), script).unwrap();
    d
}

#[test]
fn read_only_commands_beside_a_running_agent_lose_nothing() {
    let d = data_dir();
    let agent = lkjagent(["run"]).data(&d).spawn();
    let done = Arc::new(AtomicBool::new(false));
    let runs = Arc::new(AtomicUsize::new(0));
    let report_failed = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = [
        vec!["status"],
        vec!["memory", "export"],
        vec!["memory", "list"],
        vec!["memory", "stats"],
        vec!["check", "--no-network"],
        vec!["memory", "query", "fact"],
        vec!["memory", "search", "value"],
        vec!["report", "--out", "-"],
    ]
    .into_iter()
    .map(|cmd| {
        let (d, done, runs, report_failed) = (d.clone(), done.clone(), runs.clone(), report_failed.clone());
        std::thread::spawn(move || {
            let started = Instant::now();
            while !done.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(120) {
                let args: Vec<&str> = cmd.to_vec();
                let ok = lkjagent(&args).data(&d).status().success();
                // The report reads the audit log as it grows: it must never fail on it.
                if cmd[0] == "report" && !ok {
                    report_failed.fetch_add(1, Ordering::Relaxed);
                }
                runs.fetch_add(1, Ordering::Relaxed);
            }
        })
    })
    .collect();
    let status = agent.wait_within(Duration::from_secs(180)).status;
    done.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    assert!(status.success(), "agent exit: {:?}", status);
    assert!(runs.load(Ordering::Relaxed) >= 20, "the readers ran only {} times", runs.load(Ordering::Relaxed));
    assert_eq!(report_failed.load(Ordering::Relaxed), 0, "report failed beside the running agent");

    let log = std::fs::read(d.join("store.log")).unwrap();
    assert!(!log.contains(&0u8), "store.log holds zero bytes: a reader cut it and the agent wrote past the cut");
    let mut store = Store::open_read_only(&d).unwrap();
    assert_eq!(store.stats().corrupt_records, 0);
    for k in 0..KEYS {
        let last = (0..CYCLES).filter(|i| i % KEYS == k).max().unwrap();
        let key = normalize(&fact_key(last)).unwrap();
        let id = store.find(&key).unwrap_or_else(|| panic!("fact {} is lost", fact_key(last)));
        let found = store.value(id).unwrap().to_string();
        assert!(
            found == fact_value(last),
            "fact {} went back to an older value: {:.60} ({} bytes, {:?} expected, ends {:?})",
            fact_key(last),
            found,
            found.len(),
            fact_value(last).len(),
            &found[found.len() - 20..]
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A compaction's temporary file belongs to the writer: every command that only looks reads
/// the live log beside it, leaves it in place and succeeds (they used to remove it, or refuse
/// with "compaction is under way", which made the agent's rename fail).
#[test]
fn read_only_commands_leave_a_compaction_file_alone() {
    let d = temp_dir("readers-compaction");
    std::fs::write(d.join("memory.json"), temp::shipped("memory.json")).unwrap();
    std::fs::write(d.join("config.json"), temp::shipped("config.json")).unwrap();
    {
        let mut s = Store::open(&d).unwrap();
        s.put(&normalize("fruit,apple").unwrap(), "An apple.", 1).unwrap();
    }
    let compact = d.join(".store.log.compact");
    std::fs::write(&compact, b"half a compaction").unwrap();
    for args in [
        &["status"][..],
        &["memory", "list"],
        &["memory", "export"],
        &["check", "--no-network"],
        &["report", "--out", "-"],
    ] {
        let out = lkjagent(args).data(&d).output();
        assert!(out.status.success(), "{:?}: {:?}", args, out.status);
        assert_eq!(std::fs::read(&compact).unwrap(), b"half a compaction", "{:?} touched the writer's file", args);
    }
    let out = lkjagent(["memory", "export"]).data(&d).output();
    assert!(String::from_utf8_lossy(&out.stdout).contains("An apple."));
    let _ = std::fs::remove_dir_all(&d);
}
