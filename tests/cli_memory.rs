#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! `lkjagent memory <sub>` on real data directories: list, show, query (AND/OR/NOT, orders,
//! limits, archived), search, stats, export/import round trips, compact, the lock against a
//! second writer, and that the reading subcommands change no file.

#[path = "support/temp.rs"]
mod temp;

use lkjagent::cli::args::Args;
use lkjagent::cli::memory::exec;
use lkjagent::cli::util::lock_data_dir;
use lkjagent::error::Code;
use lkjagent::json::Document;
use lkjagent::memory::key::normalize;
use lkjagent::memory::store::Store;
use std::path::Path;
use temp::{snapshot, TempDir};

/// Runs `lkjagent memory ARGS` on `dir`; the exit code (or the error's code) and stdout.
fn memory(dir: &Path, args: &[&str], stdin: &str) -> (Result<i32, Code>, String) {
    let args = Args::new(args.iter().map(|s| s.to_string()).collect());
    let mut out = Vec::new();
    let res = exec(args, dir, &mut stdin.as_bytes(), &mut out);
    (res.map_err(|e| e.code()), String::from_utf8(out).unwrap())
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let (res, out) = memory(dir, args, "");
    assert_eq!(res, Ok(0), "memory {:?} failed; output:\n{}", args, out);
    out
}

const MEMORY_JSON: &str = r#"{
  "state": "evaluating",
  "iteration": 7,
  "working_memory": {"task": "Build a dictionary", "think_log_001": "start with fruit"},
  "working_memory_meta": {"task": {"created": 1700000000, "updated": 1700000100, "hits": 3}},
  "agent": {"last_cycle": "1700000200"}
}"#;

/// A data directory with `memory.json` and a store of five entries created at known times.
fn populated() -> TempDir {
    let d = TempDir::new("cli-memory");
    d.write("memory.json", MEMORY_JSON);
    let mut s = Store::open(&d.0).unwrap();
    s.put(&normalize("fruit,apple").unwrap(), "An apple is a round fruit.", 1_000).unwrap();
    s.put(&normalize("fruit,pear").unwrap(), "A pear is a sweet fruit.", 2_000).unwrap();
    s.put(&normalize("vegetable,carrot").unwrap(), "A carrot is an orange root.", 3_000).unwrap();
    s.put(&normalize("fruit,tomato,vegetable").unwrap(), "Botanically a fruit.", 4_000).unwrap();
    s.put(&normalize("fruit,old").unwrap(), "An archived note about FRUIT.", 500).unwrap();
    s.set_archived(&normalize("fruit,old").unwrap(), true, 600).unwrap();
    for _ in 0..3 {
        s.load(&normalize("fruit,pear").unwrap(), 5_000).unwrap();
    }
    s.flush_access().unwrap();
    d
}

/// The keys of query/search output lines, in order.
fn keys(out: &str) -> Vec<String> {
    out.lines().filter(|l| l.contains("  v")).map(|l| l.split("  ").next().unwrap().to_string()).collect()
}

#[test]
fn list_shows_working_memory_entries() {
    let d = populated();
    let out = ok(&d.0, &["list"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("KEY"), "{out}");
    assert!(lines[1].starts_with("task") && lines[1].contains(" 18 ") && lines[1].contains("2023-11-14T22:15:00Z"));
    assert!(lines[1].trim_end().ends_with('3'), "{out}");
    assert!(lines[2].starts_with("think_log_001") && lines[2].contains(" - "), "{out}");
    assert!(lines[3].starts_with("2 entries, 34 of "), "{out}");

    let fresh = TempDir::new("cli-memory");
    assert!(ok(&fresh.0, &["list"]).contains("working memory is empty"));
}

#[test]
fn show_looks_in_working_memory_then_the_store() {
    let d = populated();
    assert_eq!(ok(&d.0, &["show", "task"]), "Build a dictionary\n");
    // Keys are normalised: order, case and spaces do not matter.
    assert_eq!(ok(&d.0, &["show", "Apple , FRUIT"]), "An apple is a round fruit.\n");
    let (res, _) = memory(&d.0, &["show", "fruit,banana"], "");
    assert_eq!(res, Err(Code::NotFound));
    let (res, _) = memory(&d.0, &["show", " , "], "");
    assert_eq!(res, Err(Code::KeyInvalid));
    let (res, _) = memory(&d.0, &["show"], "");
    assert_eq!(res, Err(Code::Usage));
}

#[test]
fn query_combines_and_or_not_with_orders_and_limits() {
    let d = populated();
    // AND: both tags. Default order: newest first; archived left out.
    assert_eq!(keys(&ok(&d.0, &["query", "--tags", "fruit"])), ["fruit,tomato,vegetable", "fruit,pear", "apple,fruit"]);
    assert_eq!(keys(&ok(&d.0, &["query", "--tags", "fruit,vegetable"])), ["fruit,tomato,vegetable"]);
    // OR and NOT.
    assert_eq!(keys(&ok(&d.0, &["query", "--any", "apple,carrot"])), ["carrot,vegetable", "apple,fruit"]);
    assert_eq!(keys(&ok(&d.0, &["query", "--tags", "fruit", "--not", "vegetable"])), ["fruit,pear", "apple,fruit"]);
    // Orders.
    assert_eq!(
        keys(&ok(&d.0, &["query", "--tags", "fruit", "--sort", "oldest"])),
        ["apple,fruit", "fruit,pear", "fruit,tomato,vegetable"]
    );
    assert_eq!(keys(&ok(&d.0, &["query", "--tags", "fruit", "--sort", "hits"]))[0], "fruit,pear");
    assert_eq!(keys(&ok(&d.0, &["query", "--tags", "fruit", "--any", "pear", "--sort", "relevance"]))[0], "fruit,pear");
    // Limit: the rest is counted.
    let out = ok(&d.0, &["query", "--tags", "fruit", "--limit", "1"]);
    assert_eq!(keys(&out), ["fruit,tomato,vegetable"]);
    assert!(out.contains("... 2 more"), "{out}");
    // Archived entries on request.
    assert_eq!(keys(&ok(&d.0, &["query", "--tags", "fruit", "--archived", "only"])), ["fruit,old"]);
    assert_eq!(keys(&ok(&d.0, &["query", "--tags", "fruit", "--archived", "include"])).len(), 4);
    // Each line: key, version, created, hits.
    let line = ok(&d.0, &["query", "--tags", "pear"]);
    assert_eq!(line.trim_end(), "fruit,pear  v1  created 1970-01-01T00:33:20Z  hits 3");
    assert!(ok(&d.0, &["query", "--tags", "nothing"]).contains("no entries match"));
    // Bad options are usage errors.
    for bad in [
        &["query", "--sort", "best"][..],
        &["query", "--limit", "0"],
        &["query", "--archived", "yes"],
        &["query", "--tags"],
    ] {
        assert_eq!(memory(&d.0, bad, "").0, Err(Code::Usage), "{bad:?}");
    }
}

#[test]
fn search_substring_finds_text_in_values() {
    let d = populated();
    // Most recently written first.
    let sub = |args: &[&str]| keys(&ok(&d.0, &[&["search", "--substring"][..], args].concat()));
    assert_eq!(sub(&["FRUIT"]), ["fruit,tomato,vegetable", "fruit,pear", "apple,fruit"]);
    assert_eq!(sub(&["fruit", "--archived", "only"]), ["fruit,old"]);
    assert_eq!(sub(&["root"]), ["carrot,vegetable"]);
    assert_eq!(sub(&["fruit", "--limit", "2"]).len(), 2);
    assert!(ok(&d.0, &["search", "--substring", "zebra"]).contains("no entries match"));
    assert_eq!(memory(&d.0, &["search"], "").0, Err(Code::Usage));
    let json = ok(&d.0, &["search", "--substring", "--json", "carrot"]);
    assert_eq!(
        json.split_whitespace().collect::<String>(),
        r#"[{"key":"carrot,vegetable","score":null,"where":"live"}]"#
    );
}

#[test]
fn search_ranks_by_words_of_tags_and_values() {
    let d = populated();
    // The entry holding both words first; words of tags count ("vegetable" is only in tags).
    assert_eq!(keys(&ok(&d.0, &["search", "round apple"]))[0], "apple,fruit");
    // Equal counts: the shorter text (6 words against 7) first, as BM25 has it.
    assert_eq!(keys(&ok(&d.0, &["search", "Vegetable"])), ["fruit,tomato,vegetable", "carrot,vegetable"]);
    // Whole words only: "root" is a word of the carrot's value, "roo" is none.
    assert_eq!(keys(&ok(&d.0, &["search", "root"])), ["carrot,vegetable"]);
    assert!(ok(&d.0, &["search", "roo"]).contains("no entries match"));
    assert_eq!(keys(&ok(&d.0, &["search", "fruit", "--archived", "only"])), ["fruit,old"]);
    assert_eq!(keys(&ok(&d.0, &["search", "fruit", "--limit", "2"])).len(), 2);
    let line = ok(&d.0, &["search", "carrot"]);
    assert!(line.starts_with("carrot,vegetable  score "), "{line}");
    // --json: key and score, best first.
    let json = ok(&d.0, &["search", "--json", "sweet pear fruit"]);
    let text = json.split_whitespace().collect::<String>();
    assert!(text.starts_with(r#"[{"key":"fruit,pear","score":"#), "{json}");
    let scores: Vec<f64> =
        text.split(r#""score":"#).skip(1).map(|p| p.split(['}', ',']).next().unwrap().parse().unwrap()).collect();
    assert_eq!(scores.len(), 3, "{json}");
    assert!(scores.windows(2).all(|w| w[0] >= w[1]) && scores[2] > 0.0, "{json}");
    let fresh = TempDir::new("cli-memory");
    assert_eq!(ok(&fresh.0, &["search", "--json", "x"]), "[]\n");
}

#[test]
fn stats_in_text_and_json() {
    let d = populated();
    let out = ok(&d.0, &["stats"]);
    assert!(out.contains("entries          5 (1 archived) of 65536"), "{out}");
    assert!(out.contains("most accessed    fruit,pear"), "{out}");
    assert!(out.contains("damaged records  0"), "{out}");
    let json = ok(&d.0, &["stats", "--json"]);
    let mut doc = Document::with_capacity(256, 4096);
    doc.parse(json.as_bytes()).unwrap();
    let root = doc.root();
    assert_eq!(root.get("entries").and_then(|v| v.as_u64()), Some(5));
    assert_eq!(root.get("archived").and_then(|v| v.as_u64()), Some(1));
    assert_eq!(root.get("total_hits").and_then(|v| v.as_u64()), Some(3));
    assert_eq!(root.get("most_accessed").and_then(|v| v.as_str()), Some("fruit,pear"));

    let fresh = TempDir::new("cli-memory");
    assert!(ok(&fresh.0, &["stats"]).contains("no store yet"));
}

/// `memory stats` reads the checkpoint in place when it covers the log, and says the same as
/// the store opened whole (the checkpoint moved aside).
#[test]
fn stats_in_place_equal_the_whole_store() {
    let d = populated();
    let mut s = Store::open(&d.0).unwrap();
    let (a, b) =
        (s.find(&normalize("fruit,apple").unwrap()).unwrap(), s.find(&normalize("fruit,pear").unwrap()).unwrap());
    s.link(a, b).unwrap();
    s.put(&normalize("fruit,apple").unwrap(), "An apple, again.", 6_000).unwrap();
    s.close().unwrap();
    let text = ok(&d.0, &["stats"]);
    assert!(text.contains("the checkpoint read in place, 0 bytes of log read"), "{text}");
    assert!(text.contains("entries          5 (1 archived) of 65536"), "{text}");
    let in_place = ok(&d.0, &["stats", "--json"]);
    std::fs::rename(d.0.join("store.ckpt"), d.0.join("store.ckpt.aside")).unwrap();
    let whole_text = ok(&d.0, &["stats"]);
    assert!(whole_text.contains("from the whole log"), "{whole_text}");
    let whole = ok(&d.0, &["stats", "--json"]);
    let fields = |json: &str| -> Vec<String> {
        json.lines().filter(|l| !l.contains("ram_bytes") && !l.contains("replayed_bytes")).map(String::from).collect()
    };
    assert_eq!(fields(&in_place), fields(&whole));
    assert!(in_place.contains("\"links\": 1") && in_place.contains("\"garbage_bytes\": "), "{in_place}");
}

/// Beside a running agent (records after the checkpoint), `show`, `query` and `stats` read the
/// checkpoint in place with the log's tail laid over it, and print what the whole store
/// prints (issue 39).
#[test]
fn reading_subcommands_with_a_tail_read_in_place_as_the_whole_store() {
    let d = populated();
    Store::open(&d.0).unwrap().close().unwrap();
    let mut s = Store::open(&d.0).unwrap();
    s.put(&normalize("fruit,kiwi").unwrap(), "A kiwi is a fuzzy fruit.", 7_000).unwrap();
    s.put(&normalize("fruit,apple").unwrap(), "An apple, replaced.", 7_001).unwrap();
    s.delete(&normalize("vegetable,carrot").unwrap()).unwrap();
    drop(s);
    let text = ok(&d.0, &["stats"]);
    assert!(text.contains("the checkpoint read in place, ") && !text.contains(", 0 bytes of log read"), "{text}");
    let asks: [&[&str]; 6] = [
        &["show", "fruit,kiwi"],
        &["show", "fruit,apple"],
        &["query", "--tags", "fruit"],
        &["query", "--any", "vegetable,fruit", "--sort", "hits", "--archived", "include"],
        &["stats", "--json"],
        &["search", "fruit"],
    ];
    let in_place: Vec<String> = asks.iter().map(|a| ok(&d.0, a)).collect();
    assert!(in_place[0].contains("fuzzy") && !in_place[2].contains("carrot"), "{in_place:?}");
    std::fs::rename(d.0.join("store.ckpt"), d.0.join("store.ckpt.aside")).unwrap();
    let fields = |out: &str| -> Vec<String> {
        out.lines().filter(|l| !l.contains("ram_bytes") && !l.contains("replayed_bytes")).map(String::from).collect()
    };
    for (a, got) in asks.iter().zip(&in_place) {
        assert_eq!(fields(got), fields(&ok(&d.0, a)), "{a:?}");
    }
    let (res, _) = memory(&d.0, &["show", "vegetable,carrot"], "");
    assert_eq!(res, Err(Code::NotFound));
    std::fs::rename(d.0.join("store.ckpt.aside"), d.0.join("store.ckpt")).unwrap();
    let (res, _) = memory(&d.0, &["show", "vegetable,carrot"], "");
    assert_eq!(res, Err(Code::NotFound));
}

#[test]
fn reading_subcommands_change_no_file() {
    let d = populated();
    let before = snapshot(&d.0);
    for args in [
        &["list"][..],
        &["show", "task"],
        &["show", "fruit,apple"],
        &["query", "--tags", "fruit"],
        &["search", "fruit"],
        &["stats"],
        &["export"],
    ] {
        ok(&d.0, args);
    }
    assert_eq!(snapshot(&d.0), before);
    // A fresh directory stays empty: no store.log, no memory.json appear.
    let fresh = TempDir::new("cli-memory");
    for args in [&["list"][..], &["query", "--tags", "a"], &["stats"], &["export"]] {
        ok(&fresh.0, args);
    }
    assert!(snapshot(&fresh.0).is_empty());
}

#[test]
fn a_torn_store_tail_is_read_around_not_cut() {
    let d = populated();
    let whole = ok(&d.0, &["query", "--tags", "fruit"]);
    let log = d.0.join("store.log");
    let mut bytes = std::fs::read(&log).unwrap();
    bytes.extend_from_slice(b"0badc0de {\"op\":\"put\",\"id\":9,");
    std::fs::write(&log, &bytes).unwrap();
    // The unfinished record is one the agent may be writing now: the whole ones are read.
    assert_eq!(ok(&d.0, &["query", "--tags", "fruit"]), whole);
    assert_eq!(std::fs::read(&log).unwrap(), bytes, "the torn tail must stay for the agent to handle");
    // Working memory is still readable.
    assert_eq!(ok(&d.0, &["show", "task"]), "Build a dictionary\n");
}

#[test]
fn export_then_import_round_trips() {
    let src = populated();
    let doc = ok(&src.0, &["export"]);
    let mut parsed = Document::with_capacity(1024, 64 * 1024);
    parsed.parse(doc.as_bytes()).unwrap();
    let root = parsed.root();
    assert_eq!(root.get("state").and_then(|v| v.as_str()), Some("evaluating"));
    assert_eq!(root.path("working_memory.task").and_then(|v| v.as_str()), Some("Build a dictionary"));
    assert_eq!(root.get("storage").map(|v| v.len()), Some(5), "archived entries are exported too");
    assert_eq!(root.path("storage.apple,fruit").and_then(|v| v.as_str()), Some("An apple is a round fruit."));

    // To a file, then into a fresh directory (from the file and from stdin).
    let file = src.0.join("backup.json");
    ok(&src.0, &["export", file.to_str().unwrap()]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), doc);
    let dst = TempDir::new("cli-memory");
    let out = ok(&dst.0, &["import", file.to_str().unwrap()]);
    assert_eq!(
        out.trim_end(),
        "working memory: 2 added, 0 replaced, 0 unchanged; store: 5 added, 0 replaced, 0 unchanged"
    );
    // The same document again changes nothing.
    let (res, out) = memory(&dst.0, &["import", "-"], &doc);
    assert_eq!(res, Ok(0));
    assert!(out.contains("0 added, 0 replaced, 2 unchanged; store: 0 added, 0 replaced, 5 unchanged"), "{out}");
    assert_eq!(ok(&dst.0, &["show", "fruit,pear"]), "A pear is a sweet fruit.\n");
    assert_eq!(ok(&dst.0, &["show", "think_log_001"]), "start with fruit\n");
    // State and iteration stay those of the destination (fresh here).
    let again = ok(&dst.0, &["export"]);
    let mut p2 = Document::with_capacity(1024, 64 * 1024);
    p2.parse(again.as_bytes()).unwrap();
    assert_eq!(p2.root().get("state").and_then(|v| v.as_str()), Some("thinking"));
    assert_eq!(p2.root().get("storage").map(|v| v.len()), Some(5));
}

#[test]
fn import_merges_era_b_values_and_checks_before_writing() {
    let d = populated();
    let era_b = r#"{"state":"thinking","working_memory":{"task":"A new task","n":42},
        "storage":{"fruit, Apple":"An apple, revised.","deep":{"x":[1,"y"]},"flag":true}}"#;
    let (res, out) = memory(&d.0, &["import", "-"], era_b);
    assert_eq!(res, Ok(0), "{out}");
    assert!(
        out.contains("working memory: 1 added, 1 replaced, 0 unchanged; store: 2 added, 1 replaced, 0 unchanged"),
        "{out}"
    );
    assert_eq!(ok(&d.0, &["show", "task"]), "A new task\n");
    assert_eq!(ok(&d.0, &["show", "n"]), "42\n");
    assert_eq!(ok(&d.0, &["show", "deep"]), "{\"x\":[1,\"y\"]}\n");
    assert_eq!(ok(&d.0, &["show", "apple,fruit"]), "An apple, revised.\n");
    assert!(ok(&d.0, &["query", "--tags", "apple"]).contains("apple,fruit  v2"));
    // memory.json kept its state and iteration, and stays valid for the agent.
    let mem = std::fs::read_to_string(d.0.join("memory.json")).unwrap();
    assert!(mem.contains("\"state\": \"evaluating\"") && mem.contains("\"iteration\": 7"), "{mem}");

    // A bad key anywhere: nothing is written.
    let before = snapshot(&d.0);
    let (res, _) = memory(&d.0, &["import", "-"], r#"{"working_memory":{"ok":"x"},"storage":{" , ":"no key"}}"#);
    assert_eq!(res, Err(Code::KeyInvalid));
    let (res, _) = memory(&d.0, &["import", "-"], r#"{"storage":[1]}"#);
    assert_eq!(res, Err(Code::JsonInvalid));
    let (res, _) = memory(&d.0, &["import", "-"], "{\"storage\":");
    assert_eq!(res, Err(Code::JsonInvalid));
    let (res, _) = memory(&d.0, &["import", d.0.join("missing.json").to_str().unwrap()], "");
    assert_eq!(res, Err(Code::NotFound));
    assert_eq!(snapshot(&d.0), before);
}

#[test]
fn writers_refuse_while_the_data_directory_is_locked() {
    let d = populated();
    let lock = lock_data_dir(&d.0).unwrap();
    let (res, _) = memory(&d.0, &["import", "-"], r#"{"working_memory":{"x":"y"}}"#);
    assert_eq!(res, Err(Code::Io));
    assert_eq!(memory(&d.0, &["compact"], "").0, Err(Code::Io));
    // Readers do not need the lock.
    ok(&d.0, &["list"]);
    drop(lock);
    let (res, out) = memory(&d.0, &["import", "-"], r#"{"working_memory":{"x":"y"}}"#);
    assert_eq!(res, Ok(0), "{out}");
    assert_eq!(ok(&d.0, &["show", "x"]), "y\n");
}

#[test]
fn compact_reports_bytes_before_and_after() {
    let d = populated();
    {
        let mut s = Store::open(&d.0).unwrap();
        for i in 0..20 {
            s.put(&normalize("fruit,apple").unwrap(), &format!("revision {i} {}", "x".repeat(200)), 9_000).unwrap();
        }
    }
    let out = ok(&d.0, &["compact"]);
    let nums: Vec<u64> = out.split(|c: char| !c.is_ascii_digit()).filter_map(|w| w.parse().ok()).collect();
    assert!(out.starts_with("store.log: ") && out.contains("(5 entries)"), "{out}");
    assert!(nums[0] > nums[1], "{out}");
    assert_eq!(std::fs::metadata(d.0.join("store.log")).unwrap().len(), nums[1]);
    assert!(ok(&d.0, &["show", "fruit,apple"]).starts_with("revision 19 "));
    let fresh = TempDir::new("cli-memory");
    assert!(ok(&fresh.0, &["compact"]).contains("nothing to compact"));
    assert!(!fresh.0.join("store.log").exists());
}

#[test]
fn help_and_usage() {
    let d = TempDir::new("cli-memory");
    assert!(ok(&d.0, &["--help"]).contains("usage: lkjagent [--data DIR] memory"));
    assert_eq!(memory(&d.0, &[], "").0, Err(Code::Usage));
    assert_eq!(memory(&d.0, &["frobnicate"], "").0, Err(Code::Usage));
    assert_eq!(memory(&d.0, &["list", "extra"], "").0, Err(Code::Usage));
}

#[test]
fn working_memory_beyond_the_working_set_is_shown_and_exported_as_storage() {
    let d = TempDir::new("cli-memory");
    let v = |c: &str| c.repeat(50_000);
    d.write("memory.json", format!(r#"{{"working_memory":{{"a":"{}","b":"{}","c":"{}"}}}}"#, v("x"), v("y"), v("z")));
    let before = snapshot(&d.0);
    let out = ok(&d.0, &["list"]);
    assert!(
        out.lines()
            .any(|l| l.starts_with("c  ") && l.contains("50000  (does not fit; the agent moves it to the store)")),
        "{out}"
    );
    assert_eq!(ok(&d.0, &["show", "c"]).len(), 50_001);
    let doc = ok(&d.0, &["export"]);
    let mut parsed = Document::with_capacity(1024, 256 * 1024);
    parsed.parse(doc.as_bytes()).unwrap();
    assert_eq!(parsed.root().get("working_memory").map(|v| v.len()), Some(2));
    assert_eq!(parsed.root().path("storage.c").and_then(|v| v.as_str()).map(str::len), Some(50_000));
    assert_eq!(snapshot(&d.0), before);
}
