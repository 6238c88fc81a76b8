#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! The store's upkeep commands on real data directories: `memory cleanup` (to the cold store,
//! `--delete`, `--dry-run` byte-identical), `query`'s time and hits filters, `retag`, `delete`,
//! `archive`/`unarchive`, `restore`, `link`/`related`, `show`/`search --cold`/`export` over the
//! cold store, and the lock against a running agent.

#[path = "support/cold_format.rs"]
mod cold_format;
#[path = "support/temp.rs"]
mod temp;

use lkjagent::cli::args::Args;
use lkjagent::cli::memory::exec;
use lkjagent::cli::util::lock_data_dir;
use lkjagent::error::Code;
use lkjagent::memory::key::normalize;
use lkjagent::memory::store::Store;
use std::path::Path;
use temp::{snapshot, TempDir};

fn memory(dir: &Path, args: &[&str]) -> (Result<i32, Code>, String) {
    let args = Args::new(args.iter().map(|s| s.to_string()).collect());
    let mut out = Vec::new();
    let res = exec(args, dir, &mut "".as_bytes(), &mut out);
    (res.map_err(|e| e.code()), String::from_utf8(out).unwrap())
}

/// `lkjagent check --no-network` on `dir`, in this process: its report.
///
/// Not the binary: this file's tests run commands in process, in parallel threads, and a child
/// forked while another test's thread holds its directory's `lkjagent.lock` shares that open file
/// (and its lock) until it execs, which closes it (`O_CLOEXEC`) only then; under load the thread's
/// next command found its own directory locked ("another lkjagent ... is using"). So no test
/// here starts a process.
fn check(dir: &Path) -> String {
    let mut out = Vec::new();
    lkjagent::cli::check::exec(Args::new(vec!["--no-network".to_string()]), dir, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let (res, out) = memory(dir, args);
    assert_eq!(res, Ok(0), "memory {:?} failed; output:\n{}", args, out);
    out
}

fn keys(out: &str) -> Vec<String> {
    out.lines().filter(|l| l.contains("  v")).map(|l| l.split("  ").next().unwrap().to_string()).collect()
}

const DAY: u64 = 86_400;

/// A store of five entries: two last used 60 days ago (one loaded twice), three recent.
fn populated() -> TempDir {
    let now = lkjagent::clock::now_unix();
    let d = TempDir::new("cli-upkeep");
    d.write("memory.json", r#"{"state":"thinking","iteration":1,"working_memory":{}}"#);
    let mut s = Store::open(&d.0).unwrap();
    let k = |s: &str| normalize(s).unwrap();
    s.put(&k("old,unused"), "an old note nobody read", now - 60 * DAY).unwrap();
    s.put(&k("old,read"), "an old note read twice", now - 60 * DAY).unwrap();
    s.load(&k("old,read"), now - 59 * DAY).unwrap();
    s.load(&k("old,read"), now - 59 * DAY).unwrap();
    s.put(&k("a,new"), "a fresh zebra note", now - DAY).unwrap();
    s.put(&k("b,new"), "another fresh note", now - 3600).unwrap();
    s.put(&k("c,new"), "the newest note", now).unwrap();
    s.flush_access().unwrap();
    s.close().unwrap();
    d
}

#[test]
fn cleanup_moves_to_the_cold_store_where_show_search_export_and_restore_find_it() {
    let d = populated();
    // --dry-run changes nothing, byte for byte.
    let before = snapshot(&d.0);
    let out = ok(&d.0, &["cleanup", "--older-than", "30d", "--dry-run"]);
    assert!(out.contains("dry run: 2 entries would be moved to the cold store"), "{out}");
    assert!(out.starts_with("old,unused  hits 0"), "least used first: {out}");
    assert_eq!(snapshot(&d.0), before);

    assert_eq!(ok(&d.0, &["cleanup", "--older-than", "30d"]), "2 entries moved to the cold store\n");
    assert!(d.0.join("store.cold").exists());
    assert_eq!(keys(&ok(&d.0, &["query", "--sort", "oldest"])), ["a,new", "b,new", "c,new"]);
    // Still found.
    assert_eq!(ok(&d.0, &["show", "old,unused"]), "an old note nobody read\n");
    let found = ok(&d.0, &["search", "--cold", "old note"]);
    assert!(found.contains("old,unused  cold") && found.contains("old,read  cold"), "{found}");
    assert!(ok(&d.0, &["search", "--cold", "zebra"]).contains("no entries of the cold store match"));
    // One ranked search over live and cold, each hit saying where it lives; the cold store's
    // text index written by the clean-up's close, so a reader finds it.
    assert!(d.0.join("store.cold.fts").exists());
    let ranked = ok(&d.0, &["search", "note"]);
    let lines: Vec<&str> = ranked.lines().collect();
    assert_eq!(lines.len(), 5, "{ranked}");
    assert_eq!(lines.iter().filter(|l| l.ends_with("  cold")).count(), 2, "{ranked}");
    assert!(lines.iter().any(|l| l.starts_with("old,unused  score") && l.ends_with("  cold")), "{ranked}");
    assert!(lines.iter().any(|l| l.starts_with("c,new  score") && !l.ends_with("  cold")), "{ranked}");
    let json = ok(&d.0, &["search", "--json", "nobody"]);
    let flat = json.split_whitespace().collect::<String>();
    assert!(flat.starts_with(r#"[{"key":"old,unused","score":"#) && flat.ends_with(r#""where":"cold"}]"#), "{json}");
    let export = ok(&d.0, &["export"]);
    assert!(export.contains("\"cold\": [") && export.contains("an old note read twice"), "{export}");
    let stats = ok(&d.0, &["stats"]);
    assert!(stats.contains("cold store       2 entries"), "{stats}");

    // Restore: back in the live store with its statistics, gone from the cold store.
    assert_eq!(ok(&d.0, &["restore", "read,old"]), "restored old,read from the cold store\n");
    let q = ok(&d.0, &["query", "--tags", "old"]);
    assert!(q.contains("old,read  v2") && q.contains("hits 2"), "{q}");
    assert!(!ok(&d.0, &["search", "--cold", "twice"]).contains("old,read"));
    assert_eq!(memory(&d.0, &["restore", "read,old"]).0, Err(Code::NotFound));
    // Nothing matches any more: nothing moves.
    assert_eq!(ok(&d.0, &["cleanup", "--older-than", "90d"]), "0 entries moved to the cold store\n");
    // --delete deletes (hits at most 0 and older than 30 days: none; at most 2: old,read).
    assert_eq!(ok(&d.0, &["cleanup", "--older-than", "30d", "--max-hits", "2", "--delete"]), "1 entries deleted\n");
    assert_eq!(memory(&d.0, &["show", "old,read"]).0, Err(Code::NotFound));
    // A clean-up without a filter is refused.
    assert_eq!(memory(&d.0, &["cleanup"]).0, Err(Code::Usage));
    assert_eq!(memory(&d.0, &["cleanup", "--older-than", "soon"]).0, Err(Code::Usage));
}

#[test]
fn query_filters_by_creation_time_and_hits() {
    let d = populated();
    assert_eq!(keys(&ok(&d.0, &["query", "--created-after", "7d", "--sort", "oldest"])), ["a,new", "b,new", "c,new"]);
    assert_eq!(keys(&ok(&d.0, &["query", "--created-before", "30d", "--sort", "oldest"])), ["old,unused", "old,read"]);
    assert_eq!(keys(&ok(&d.0, &["query", "--min-hits", "1"])), ["old,read"]);
    assert_eq!(keys(&ok(&d.0, &["query", "--max-hits", "0", "--tags", "old"])), ["old,unused"]);
    assert_eq!(keys(&ok(&d.0, &["query", "--created-after", "2000-01-01", "--tags", "c,new"])), ["c,new"]);
    assert!(ok(&d.0, &["query", "--created-before", "2000-01-01"]).contains("no entries match"));
    assert_eq!(memory(&d.0, &["query", "--min-hits", "many"]).0, Err(Code::Usage));
}

#[test]
fn retag_delete_archive_link_and_related() {
    let d = populated();
    assert_eq!(ok(&d.0, &["retag", "a,new", "--add", "zebra,animal", "--remove", "new"]), "a,new -> a,animal,zebra\n");
    assert_eq!(ok(&d.0, &["show", "a,animal,zebra"]), "a fresh zebra note\n");
    assert_eq!(memory(&d.0, &["retag", "b,new", "--remove", "b,new"]).0, Err(Code::KeyInvalid), "no tag left");
    assert_eq!(memory(&d.0, &["retag", "b,new"]).0, Err(Code::Usage));

    // delete: --yes, or a prompt on a terminal (the test's stdin is not one).
    assert_eq!(memory(&d.0, &["delete", "b,new"]).0, Err(Code::Usage));
    assert_eq!(ok(&d.0, &["delete", "b,new", "--yes"]), "deleted b,new\n");
    assert_eq!(memory(&d.0, &["delete", "b,new", "--yes"]).0, Err(Code::NotFound));

    assert_eq!(ok(&d.0, &["archive", "c,new"]), "archived c,new\n");
    assert!(!keys(&ok(&d.0, &["query"])).contains(&"c,new".to_string()));
    assert_eq!(keys(&ok(&d.0, &["query", "--archived", "only"])), ["c,new"]);
    assert_eq!(ok(&d.0, &["unarchive", "c,new"]), "unarchived c,new\n");
    assert!(keys(&ok(&d.0, &["query"])).contains(&"c,new".to_string()));

    assert_eq!(ok(&d.0, &["link", "c,new", "old,read"]), "linked c,new and old,read\n");
    assert_eq!(ok(&d.0, &["link", "c,new", "old,unused"]), "linked c,new and old,unused\n");
    assert_eq!(ok(&d.0, &["related", "c,new"]), "old,read\nold,unused\n");
    assert_eq!(ok(&d.0, &["related", "old,read"]), "c,new\n");
    assert!(ok(&d.0, &["related", "a,animal,zebra"]).contains("no entries are related"));
    assert_eq!(memory(&d.0, &["link", "c,new", "missing"]).0, Err(Code::NotFound));
    // related reads only.
    let before = snapshot(&d.0);
    ok(&d.0, &["related", "c,new"]);
    assert_eq!(snapshot(&d.0), before);
}

#[test]
fn the_changes_refuse_while_the_agent_holds_the_lock() {
    let d = populated();
    let lock = lock_data_dir(&d.0).unwrap();
    for args in [
        &["cleanup", "--older-than", "30d"][..],
        &["retag", "a,new", "--add", "x"],
        &["delete", "a,new", "--yes"],
        &["archive", "a,new"],
        &["unarchive", "a,new"],
        &["restore", "a,new"],
        &["link", "a,new", "b,new"],
    ] {
        assert_eq!(memory(&d.0, args).0, Err(Code::Io), "{:?} must refuse", args);
    }
    // Reading and a dry run do not need the lock.
    ok(&d.0, &["cleanup", "--older-than", "30d", "--dry-run"]);
    ok(&d.0, &["related", "a,new"]);
    drop(lock);
    ok(&d.0, &["archive", "a,new"]);
}

/// `check` reports a clean-up cut short (in store.log and in store.cold) and changes nothing;
/// the next writer rolls it back, and `check` is clean again.
#[test]
fn check_reports_an_interrupted_cleanup() {
    let d = populated();
    d.write("config.json", temp::shipped("config.json"));
    let log_before = std::fs::read(d.0.join("store.log")).unwrap();
    ok(&d.0, &["cleanup", "--older-than", "30d"]);
    let log_after = std::fs::read(d.0.join("store.log")).unwrap();
    let cold = std::fs::read(d.0.join("store.cold")).unwrap();
    // Cut the log's clean-up batch before its end, and the cold group too.
    std::fs::write(d.0.join("store.log"), &log_after[..log_after.len() - 5]).unwrap();
    std::fs::write(d.0.join("store.cold"), &cold[..cold.len() - 5]).unwrap();
    let before = snapshot(&d.0);
    let text = check(&d.0);
    assert!(text.contains("clean-up that was cut short"), "{text}");
    assert!(text.contains("store.cold") && text.contains("a clean-up not finished"), "{text}");
    assert_eq!(snapshot(&d.0), before, "check changes nothing");
    // The writer rolls both back: every entry is live again.
    let s = Store::open(&d.0).unwrap();
    assert_eq!(s.len(), 5);
    drop(s);
    assert_eq!(std::fs::read(d.0.join("store.log")).unwrap(), log_before);
    let text = check(&d.0);
    assert!(!text.contains("cut short") && text.contains("ok   store.cold"), "{text}");
}

/// Lines of `store.cold` that are entries' records in format 1 and in format 2.
fn cold_records(dir: &Path) -> (usize, usize) {
    let text = std::fs::read_to_string(dir.join("store.cold")).unwrap();
    (
        text.lines().filter(|l| l[9..].starts_with(r#"{"op":"put""#)).count(),
        text.lines().filter(|l| l[9..].starts_with(r#"{"p":["#)).count(),
    )
}

#[test]
fn a_cold_store_of_format_1_is_read_appended_to_and_compacted_into_format_2() {
    let d = populated();
    assert_eq!(ok(&d.0, &["cleanup", "--older-than", "30d"]), "2 entries moved to the cold store\n");
    // New files are of format 2.
    assert_eq!(cold_records(&d.0), (0, 2));
    assert!(std::fs::read_to_string(d.0.join("store.cold")).unwrap().contains(r#"{"p":[1,"#));
    let answers = |d: &Path| {
        (
            ok(d, &["show", "old,unused"]),
            ok(d, &["show", "old,read"]),
            ok(d, &["search", "--cold", "old note"]),
            ok(d, &["search", "note", "--json"]),
            ok(d, &["stats"])
                .lines()
                .find(|l| l.starts_with("cold store"))
                .unwrap()
                .split(',')
                .next()
                .unwrap()
                .to_string(),
            ok(d, &["export"]),
        )
    };
    let want = answers(&d.0);
    assert!(want.2.contains("old,unused  cold") && want.3.contains("old,unused"), "{want:?}");
    // An older program's file: the same answers, check content.
    cold_format::to_format_1(&d.0);
    assert_eq!(cold_records(&d.0), (2, 0));
    assert_eq!(answers(&d.0), want);
    assert!(check(&d.0).contains("ok   store.cold: 2 entries"), "{}", check(&d.0));
    // Appended to in its own format: a file is one format.
    assert_eq!(ok(&d.0, &["cleanup", "--older-than", "12h"]), "1 entries moved to the cold store\n");
    assert_eq!(cold_records(&d.0), (3, 0));
    assert!(ok(&d.0, &["show", "a,new"]).contains("zebra"));
    let mid = answers(&d.0);
    assert!(mid.2.contains("old,unused  cold") && mid.5.contains(r#""tags": "a,new""#), "{mid:?}");
    assert!(mid.3.contains(r#""key": "a,new","#) && mid.4.starts_with("cold store       3 entries"), "{mid:?}");
    // Compacted: rewritten in format 2 although every copy is current, the same answers.
    let before = std::fs::metadata(d.0.join("store.cold")).unwrap().len();
    ok(&d.0, &["compact"]);
    assert_eq!(cold_records(&d.0), (0, 3));
    assert!(std::fs::metadata(d.0.join("store.cold")).unwrap().len() < before);
    assert_eq!(answers(&d.0), mid);
    assert!(check(&d.0).contains("ok   store.cold: 3 entries"), "{}", check(&d.0));
}
