#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! `lkjagent status` and `lkjagent send` on real data directories: a fresh one, one after some
//! cycles (memory.json, the audit log written by the agent's own writer with a torn last line,
//! the store, the inbox), `--json`, and that status changes no file.

#[path = "support/temp.rs"]
mod temp;

use lkjagent::agent::audit::{ActionRecord, AuditLog, CycleRecord};
use lkjagent::cli::args::Args;
use lkjagent::error::Code;
use lkjagent::json::Document;
use lkjagent::memory::key::normalize;
use lkjagent::memory::store::Store;
use std::io::Write;
use std::path::Path;
use temp::{snapshot, TempDir};

fn args(v: &[&str]) -> Args {
    Args::new(v.iter().map(|s| s.to_string()).collect())
}

fn status(dir: &Path, a: &[&str]) -> (Result<i32, Code>, String) {
    let mut out = Vec::new();
    let res = lkjagent::cli::status::exec(args(a), dir, &mut out);
    (res.map_err(|e| e.code()), String::from_utf8(out).unwrap())
}

fn send(dir: &Path, a: &[&str], stdin: &str) -> (Result<i32, Code>, String) {
    let mut out = Vec::new();
    let res = lkjagent::cli::send::exec(args(a), dir, &mut stdin.as_bytes(), &mut out);
    (res.map_err(|e| e.code()), String::from_utf8(out).unwrap())
}

/// A data directory as a few cycles leave it.
fn after_some_cycles() -> TempDir {
    let d = TempDir::new("cli-status");
    std::fs::write(
        d.0.join("memory.json"),
        r#"{"state":"evaluating","iteration":12,
            "working_memory":{"task":"Build a dictionary","think_log_001":"fruit first"},
            "agent":{"last_cycle":"1763807310","last_error":"LLM_UNAVAILABLE: cannot connect to 127.0.0.1:1234"}}"#,
    )
    .unwrap();
    let mut s = Store::open(&d.0).unwrap();
    s.put(&normalize("fruit,apple").unwrap(), "An apple.", 1).unwrap();
    s.put(&normalize("fruit,pear").unwrap(), "A pear.", 2).unwrap();
    let mut log = AuditLog::open(&d.0).unwrap();
    let digest = [0u8; 32];
    let actions = [ActionRecord { kind: "storage_save", key: "fruit,pear", ok: true, result: "saved" }];
    for (cycle, state, next, acts) in
        [(11, "thinking", "commanding", &[][..]), (12, "commanding", "evaluating", &actions[..])]
    {
        log.append(&CycleRecord {
            time: 1_763_807_300 + cycle,
            run_id: "r1",
            cycle,
            state,
            next_state: next,
            prompt_sha256: &digest,
            prompt_bytes: 100,
            prompt_tokens_est: 34,
            reply_bytes: 50,
            latency_ms: 1234,
            usage: None,
            cached_tokens: None,
            valid: true,
            finish: "stop",
            constrain: "off",
            seed: None,
            actions: acts,
            problems: &[],
            error: None,
            cleanup: (0, false),
        })
        .unwrap();
    }
    // A line cut short by a crash.
    let mut f = std::fs::OpenOptions::new().append(true).open(log.path()).unwrap();
    f.write_all(b"{\"time\":1763807399,\"run\":\"r1\",\"cycle\":13,\"sta").unwrap();
    d
}

#[test]
fn a_fresh_data_directory_is_reported_and_left_alone() {
    let d = TempDir::new("cli-status");
    let (res, out) = status(&d.0, &[]);
    assert_eq!(res, Ok(0));
    assert!(out.contains("fresh data directory"), "{out}");
    assert!(out.contains("last cycle  none yet") && out.contains("inbox       empty"), "{out}");
    let (res, json) = status(&d.0, &["--json"]);
    assert_eq!(res, Ok(0));
    let mut doc = Document::with_capacity(256, 8192);
    doc.parse(json.as_bytes()).unwrap();
    assert_eq!(doc.root().get("fresh").and_then(|v| v.as_bool()), Some(true));
    assert_eq!(doc.root().get("state").and_then(|v| v.as_str()), Some("thinking"));
    assert!(doc.root().get("last_cycle").unwrap().is_null());
    assert!(snapshot(&d.0).is_empty(), "status must create no file");

    let missing = d.0.join("nope");
    assert_eq!(status(&missing, &[]).0, Err(Code::NotFound));
}

#[test]
fn status_after_some_cycles() {
    let d = after_some_cycles();
    send(&d.0, &["first", "message"], "").0.unwrap();
    send(&d.0, &["second"], "").0.unwrap();
    std::fs::write(d.0.join("inbox.taken"), "{\"time\":1,\"text\":\"being taken\"}\n").unwrap();
    let before = snapshot(&d.0);

    let (res, out) = status(&d.0, &[]);
    assert_eq!(res, Ok(0));
    assert!(out.contains("state       evaluating (iteration 12)"), "{out}");
    assert!(out.contains("memory      2 entries, 29 of 131072 bytes"), "{out}");
    assert!(out.contains("store       2 entries, "), "{out}");
    // The torn third audit line is skipped; the last whole one is shown.
    assert!(
        out.contains(
            "last cycle  12 at 2025-11-22T10:28:32Z: commanding -> evaluating, 1234 ms, storage_save fruit,pear ok"
        ),
        "{out}"
    );
    assert!(out.contains("last error  LLM_UNAVAILABLE: cannot connect"), "{out}");
    assert!(out.contains("inbox       3 messages waiting"), "{out}");

    let (res, json) = status(&d.0, &["--json"]);
    assert_eq!(res, Ok(0));
    let mut doc = Document::with_capacity(512, 16 * 1024);
    doc.parse(json.as_bytes()).unwrap();
    let r = doc.root();
    assert_eq!(r.get("fresh").and_then(|v| v.as_bool()), Some(false));
    assert_eq!(r.get("iteration").and_then(|v| v.as_u64()), Some(12));
    assert_eq!(r.path("working_memory.entries").and_then(|v| v.as_u64()), Some(2));
    assert_eq!(r.path("working_memory.budget_bytes").and_then(|v| v.as_u64()), Some(131_072));
    assert_eq!(r.path("store.entries").and_then(|v| v.as_u64()), Some(2));
    assert_eq!(r.path("last_cycle.cycle").and_then(|v| v.as_u64()), Some(12));
    assert_eq!(r.path("last_cycle.time").and_then(|v| v.as_str()), Some("2025-11-22T10:28:32Z"));
    assert_eq!(r.path("last_cycle.actions.[0].type").and_then(|v| v.as_str()), Some("storage_save"));
    assert_eq!(r.path("inbox_pending").and_then(|v| v.as_u64()), Some(3));
    assert!(r.get("last_error").and_then(|v| v.as_str()).unwrap().starts_with("LLM_UNAVAILABLE"));

    assert_eq!(snapshot(&d.0), before, "status must change no file");
}

/// The cold store's lines of `status` and `memory stats` (`memory stats` opens the store in
/// place, from the checkpoint).
fn cold_lines(dir: &Path) -> (String, String) {
    let (res, st) = status(dir, &[]);
    assert_eq!(res, Ok(0), "{st}");
    let mut out = Vec::new();
    let res = lkjagent::cli::memory::exec(args(&["stats"]), dir, &mut "".as_bytes(), &mut out);
    let stats = String::from_utf8(out).unwrap();
    assert_eq!(res.map_err(|e| e.code()), Ok(0), "{stats}");
    let pick = |text: &str| text.lines().filter(|l| l.starts_with("cold store")).collect::<Vec<_>>().join("\n");
    (pick(&st), pick(&stats))
}

#[test]
fn the_cold_count_from_the_cold_keys_file_is_the_scans() {
    let d = TempDir::new("cli-status-cold");
    let k = |s: &str| normalize(s).unwrap();
    let mut s = Store::open(&d.0).unwrap();
    for i in 0..40u64 {
        s.put(&k(&format!("n{i},old")), &format!("old note {i}"), 1_000 + i).unwrap();
    }
    s.put(&k("n1,new"), "a fresh note", 5_000).unwrap();
    assert_eq!(s.cleanup(2_000, lkjagent::memory::store::Cleanup::Cold, 5_000).unwrap(), 40);
    // Five keys saved again after they went cold: live and cold.
    for i in 0..5u64 {
        s.put(&k(&format!("n{i},old")), "saved again", 5_001).unwrap();
    }
    s.close().unwrap();
    let keys_file = d.0.join("store.cold.keys");
    assert!(keys_file.exists(), "a clean stop writes it");
    let with = cold_lines(&d.0);
    assert!(with.0.starts_with("cold store  40 keys, "), "{with:?}");
    assert!(with.1.starts_with("cold store       35 entries, "), "{with:?}");
    assert!(lkjagent::memory::store::cold::keys::current(&d.0, None).unwrap().is_some());
    let kept = std::fs::read(&keys_file).unwrap();
    std::fs::remove_file(&keys_file).unwrap();
    assert_eq!(cold_lines(&d.0), with, "scanned");

    // Groups appended after it (a clean-up of a writer not stopped yet): read after it.
    std::fs::write(&keys_file, &kept).unwrap();
    let mut s = Store::open(&d.0).unwrap();
    for i in 40..60u64 {
        s.put(&k(&format!("n{i},old")), &format!("old note {i}"), 1_000 + i).unwrap();
    }
    s.put(&k("n2,old"), "saved once more", 5_002).unwrap();
    assert_eq!(s.cleanup(2_000, lkjagent::memory::store::Cleanup::Cold, 5_002).unwrap(), 20);
    s.put(&k("n45,old"), "saved again", 5_003).unwrap();
    s.flush_access().unwrap();
    s.checkpoint().unwrap();
    drop(s);
    // (The checkpoint brought it up to date: as it was, as if it had not.)
    assert_ne!(std::fs::read(&keys_file).unwrap(), kept);
    std::fs::write(&keys_file, &kept).unwrap();
    assert!(lkjagent::memory::store::cold::keys::current(&d.0, None).unwrap().is_some());
    let tail = cold_lines(&d.0);
    assert!(
        tail.0.starts_with("cold store  60 keys, ") && tail.1.starts_with("cold store       54 entries, "),
        "{tail:?}"
    );
    std::fs::remove_file(&keys_file).unwrap();
    assert_eq!(cold_lines(&d.0), tail, "scanned");
}

#[test]
fn an_unusable_memory_file_is_reported_not_moved() {
    let d = TempDir::new("cli-status");
    std::fs::write(d.0.join("memory.json"), "{\"state\": 3, \"iteration\": \"x\"}").unwrap();
    let (res, out) = status(&d.0, &[]);
    assert_eq!(res, Ok(0));
    assert!(out.contains("problem   \"state\" is not a string"), "{out}");
    assert!(out.contains("problem   \"iteration\" is not a non-negative integer"), "{out}");
    assert!(d.0.join("memory.json").exists());
    assert_eq!(std::fs::read_dir(&d.0).unwrap().count(), 1);
}

#[test]
fn send_queues_words_or_stdin() {
    let d = TempDir::new("cli-status");
    let (res, out) = send(&d.0, &["hello", "agent"], "");
    assert_eq!(res, Ok(0));
    assert_eq!(out, "queued (11 bytes); the agent takes it at its next cycle\n");
    let (res, out) = send(&d.0, &["-"], "  line one\nline \"two\"\n");
    assert_eq!(res, Ok(0));
    assert!(out.starts_with("queued (19 bytes)"), "{out}");
    // The agent's own reader gets both, in order.
    let mut inbox = lkjagent::agent::inbox::Inbox::new(&d.0);
    let mut text = lkjagent::fixed::FixedBuf::with_capacity("t", 8192);
    assert!(inbox.take(&mut text).unwrap());
    assert_eq!(text.as_str().unwrap(), "hello agent\n\nline one\nline \"two\"");

    assert_eq!(send(&d.0, &[], "").0, Err(Code::Usage));
    assert_eq!(send(&d.0, &["-"], "   \n").0, Err(Code::Usage));
    assert_eq!(send(&d.0, &["-"], &"x".repeat(9000)).0, Err(Code::CapacityExceeded));
    assert_eq!(send(&d.0.join("missing"), &["hi"], "").0, Err(Code::NotFound));
    let (_, help) = send(&d.0, &["--help"], "");
    assert!(help.contains("usage: lkjagent [--data DIR] send TEXT..."));
}
