//! Issue 23's reproduction, with real processes: a store of capacity 4 and a replay script that
//! saves a new fact every cycle. Before the capacity policy, cycle 5 on failed every save, and a
//! working memory grown past the paging limit stopped the run with a CAPACITY_EXCEEDED that
//! blamed the prompts. Now every save succeeds, every acknowledged value is found by `memory
//! show` (live store or cold store), and the overflowing working memory is paged out and the run
//! goes on, with the clean-up on and with it off (pages then go straight to the cold store).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "support/cli.rs"]
mod cli;
#[path = "support/rng.rs"]
mod rng;
#[path = "support/temp.rs"]
mod temp;

use cli::lkjagent;
use std::path::Path;

/// A data directory on the shipped config with the replay provider, `memory.store_capacity`
/// 4, and `cleanup` as the `memory.cleanup` object (none: the default).
fn data_dir(tag: &str, cleanup: Option<&str>) -> std::path::PathBuf {
    let d = temp::temp_dir(&format!("cleanup-run-{}", tag));
    let mut memory = String::from("\"store_capacity\": 4");
    if let Some(c) = cleanup {
        memory.push_str(&format!(", \"cleanup\": {}", c));
    }
    let config = temp::shipped("config.json")
        .replace("\"provider\": \"openai\"", "\"provider\": \"replay\", \"replay_path\": \"script.jsonl\"")
        .replace("\"store_capacity\": 65536", &memory);
    assert!(config.contains("\"store_capacity\": 4"));
    std::fs::write(d.join("config.json"), config).unwrap();
    std::fs::write(d.join("memory.json"), r#"{"state":"thinking","iteration":0,"working_memory":{}}"#).unwrap();
    d
}

/// A replay script of `n` replies, each saving a new fact (`fact,n<i>`) from `from` on.
fn save_script(d: &Path, from: usize, n: usize) {
    let mut s = String::new();
    for i in from..from + n {
        let reply = format!(
            "<agent><next_state>commanding</next_state><action><type>storage_save</type><tags>fact,n{}</tags>\
             <value>fact number {}: the value {}</value></action></agent>",
            i,
            i,
            i * 7
        );
        s.push_str(&format!("{{\"content\": {:?}}}\n", reply));
    }
    std::fs::write(d.join("script.jsonl"), s).unwrap();
}

fn show(d: &Path, key: &str) -> (bool, String) {
    let out = lkjagent(["memory", "show", key]).data(d).output();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A memory.json whose working memory is far past the paging and hard limits: 8 notes of
/// 3,000 bytes (the shipped hard limit is 4,500 tokens, ~13,500 bytes).
fn overflowing_memory(iteration: u64) -> String {
    let notes: Vec<String> =
        (0..8).map(|i| format!("\"note_{}\": \"{}\"", i, format!("note {} says: ", i).repeat(230))).collect();
    format!("{{\"state\":\"thinking\",\"iteration\":{},\"working_memory\":{{{}}}}}", iteration, notes.join(","))
}

fn run(d: &Path, cycles: usize) -> (bool, String) {
    let out = lkjagent(["run", "--max-iterations", &cycles.to_string()]).data(d).output();
    (out.status.success(), cli::text(&out))
}

#[test]
fn capacity_four_three_hundred_saves_all_kept_and_an_overflowing_working_memory_runs_on() {
    let d = data_dir("four", None);
    save_script(&d, 0, 300);
    let (ok, text) = run(&d, 300);
    assert!(ok, "{}", text);
    let saves = text.lines().filter(|l| l.contains("storage_save ok")).count();
    assert_eq!(saves, 300, "every cycle's save succeeds:\n{}", text);
    assert!(text.contains("cleanup: 1 moved to the cold store"), "{}", text);
    let audit = std::fs::read_to_string(d.join("logs").join("audit.jsonl")).unwrap();
    let lines = audit.lines().filter(|l| l.contains("\"cleanup\":{\"moved\":1,\"to\":\"cold\"}")).count();
    assert!(lines >= 290, "each clean-up is in the audit log ({} lines)", lines);
    for i in 0..300 {
        let (found, value) = show(&d, &format!("fact,n{}", i));
        assert!(found, "fact,n{} is lost", i);
        assert_eq!(value, format!("fact number {}: the value {}", i, i * 7));
    }
    let stats = lkjagent(["memory", "stats"]).data(&d).output();
    let stats = cli::text(&stats);
    assert!(stats.contains("entries          4 (0 archived) of 4"), "{}", stats);
    assert!(stats.contains("cold store       296 entries"), "{}", stats);

    // The working memory grown past the limits: paging moves it into the full store (which
    // makes room), and the run goes on.
    std::fs::write(d.join("memory.json"), overflowing_memory(300)).unwrap();
    save_script(&d, 300, 20);
    let (ok, text) = run(&d, 20);
    assert!(ok, "{}", text);
    assert!(!text.contains("CAPACITY_EXCEEDED"), "{}", text);
    assert_eq!(text.lines().filter(|l| l.contains("storage_save ok")).count(), 20, "{}", text);
    for i in 0..8 {
        let (found, value) = show(&d, &format!("note_{}", i));
        assert!(found && value.starts_with(&format!("note {} says:", i)), "note_{} lost", i);
    }
    for i in 300..320 {
        assert!(show(&d, &format!("fact,n{}", i)).0, "fact,n{} lost", i);
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// With the clean-up off, a full store cannot take a page: the page goes to the cold store, the
/// warning names the real cause and what to set, and the run goes on with a smaller working
/// memory; saves fail with a message that says the same.
#[test]
fn with_the_cleanup_off_paging_goes_to_the_cold_store_and_says_why() {
    let d = data_dir("off", Some("{\"enable\": false}"));
    save_script(&d, 0, 6);
    let (ok, text) = run(&d, 6);
    assert!(ok, "{}", text);
    assert_eq!(text.lines().filter(|l| l.contains("storage_save ok")).count(), 4, "{}", text);
    let audit = std::fs::read_to_string(d.join("logs").join("audit.jsonl")).unwrap_or_default();
    assert!(audit.contains("memory.cleanup.enable"), "a failed save names the setting: {}", audit);

    std::fs::write(d.join("memory.json"), overflowing_memory(6)).unwrap();
    save_script(&d, 6, 3);
    let (ok, text) = run(&d, 3);
    assert!(ok, "{}", text);
    assert!(!text.contains("shorten the prompts"), "{}", text);
    assert!(text.contains("the store is full") && text.contains("memory.store_capacity"), "{}", text);
    assert!(text.contains("to the cold store instead"), "{}", text);
    for i in 0..8 {
        assert!(show(&d, &format!("note_{}", i)).0, "note_{} lost", i);
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The real agent killed with SIGKILL at random moments while it saves into a store of 4,
/// making room every cycle: after each kill every save its status line acknowledged is found
/// (live store or cold store) with its value, and the next run starts cleanly.
#[test]
fn the_agent_killed_mid_cleanup_loses_no_acknowledged_save() {
    use lkjagent::memory::store::{cold, Store};
    let d = data_dir("kill", None);
    let mut rng = rng::Rng::new(0x5EED_0023);
    let mut total = 0;
    for round in 0..8 {
        let mut s = String::new();
        for i in 0..5000 {
            let reply = format!(
                "<agent><action><type>storage_save</type><tags>r{},n{}</tags><value>round {} fact {}</value></action></agent>",
                round, i, round, i
            );
            s.push_str(&format!("{{\"content\": {:?}}}\n", reply));
        }
        std::fs::write(d.join("script.jsonl"), s).unwrap();
        let child = lkjagent(["run", "--max-iterations", "5000"]).data(&d).spawn();
        std::thread::sleep(std::time::Duration::from_millis(100 + rng.below_u64(400)));
        let _ = std::process::Command::new("kill").arg("-KILL").arg(child.id().to_string()).status();
        let out = child.wait();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let acked = text.lines().filter(|l| l.starts_with("cycle ") && l.contains("storage_save ok")).count();
        let mut found = std::collections::BTreeMap::new();
        let mut store = Store::open_read_only_with_capacity(&d, 4).unwrap();
        let ids: Vec<u32> = store.ids().collect();
        for id in ids {
            let k = store.key(id).unwrap().as_str().to_string();
            found.insert(k, store.value(id).unwrap().to_string());
        }
        cold::scan(&d, &mut |e| {
            let mut v = String::new();
            lkjagent::memory::log::decode_str(e.value_escaped, &mut v)?;
            found.entry(e.key.as_str().to_string()).or_insert(v);
            Ok(true)
        })
        .unwrap();
        for i in 0..acked {
            let key = format!("n{},r{}", i, round);
            assert_eq!(found.get(&key), Some(&format!("round {} fact {}", round, i)), "round {}: {} lost", round, key);
        }
        total += acked;
        // The next start repairs whatever the kill cut short.
        assert!(Store::open_with_capacity(&d, 4).unwrap().len() <= 4);
    }
    eprintln!("{} acknowledged saves over 8 kills, all found", total);
    assert!(total > 40, "the runs saved too little to test anything ({})", total);
    let _ = std::fs::remove_dir_all(&d);
}

/// Issue 39: an agent that never searches (this replay script only saves) still leaves
/// `store.cold.fts` current with `store.cold` when it stops, so that the next first search
/// (the agent's or `memory search`) reads it instead of building it from all of `store.cold`.
/// The second run starts from the file the first left (it covers a part of `store.cold`
/// after that run's clean-ups) and leaves it current again.
#[test]
fn an_agent_that_never_searches_leaves_the_cold_index_current_at_close() {
    use lkjagent::memory::store::recall_file::RecallFile;
    use lkjagent::memory::store::{cold, Store};
    let d = data_dir("cold-fts", None);
    let cold_entries = |d: &Path| cold::scan(d, &mut |_| Ok(true)).unwrap().entries;
    let check = |d: &Path| Store::open_read_only_with_capacity(d, 4).unwrap().cold_recall_file_check();
    for (from, n) in [(0, 40), (40, 25)] {
        save_script(&d, from, n);
        let (ok, text) = run(&d, n);
        assert!(ok, "{}", text);
        assert_eq!(text.lines().filter(|l| l.contains("storage_save ok")).count(), n, "{}", text);
        let moved = cold_entries(&d);
        assert_eq!(moved as usize, from + n - 4, "every save but the last four went cold");
        match check(&d) {
            RecallFile::Usable { docs, covered, log_len, .. } => {
                assert_eq!(covered, log_len, "store.cold.fts covers all of store.cold after the run of {}", n);
                assert_eq!(u64::from(docs), moved, "one document per cold entry");
            }
            other => panic!("after the run of {}: store.cold.fts is not usable: {:?}", n, other),
        }
        // A reader ranks the cold entries from it.
        let out = lkjagent(["memory", "search", &format!("n{}", from)]).data(&d).output();
        let text = cli::text(&out);
        let hit = text.lines().any(|l| l.starts_with(&format!("fact,n{} ", from)) && l.ends_with(" cold"));
        assert!(out.status.success() && hit, "{}", text);
    }
    let _ = std::fs::remove_dir_all(&d);
}
