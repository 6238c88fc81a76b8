#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! `lkjagent status`, `memory`, `send` and `check` as a user runs them: the real binary, a real
//! data directory chosen with `--data` or `LKJAGENT_DATA`, stdin and exit codes.
//!
//! The subcommands' behaviour is tested in depth through their `exec` functions in
//! `cli_memory.rs`, `cli_status.rs` and `cli_check.rs`; these check the wiring end to end.

#[path = "support/cli.rs"]
mod cli;
#[path = "support/temp.rs"]
mod temp;

use cli::lkjagent;
use std::process::Output;
use temp::TempDir;

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]

fn send_status_and_memory_through_the_binary() {
    let d = TempDir::shipped_data("cli-commands-a");
    let data = d.0.to_str().unwrap();
    let o = lkjagent(["--data", data, "send", "hello", "agent"]).output();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(stdout(&o).starts_with("queued (11 bytes)"));
    // LKJAGENT_DATA instead of --data.
    let o = lkjagent(["status"]).env("LKJAGENT_DATA", &d.0).output();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(stdout(&o).contains("inbox       1 message waiting"), "{}", stdout(&o));
    let o = lkjagent(["--data", data, "memory", "import", "-"])
        .stdin(br#"{"storage":{"fruit,apple":"An apple."}}"#)
        .output();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let o = lkjagent(["--data", data, "memory", "query", "--tags", "apple"]).output();
    assert!(stdout(&o).starts_with("apple,fruit  v1  created "), "{}", stdout(&o));
    let o = lkjagent(["--data", data, "memory", "show", "no,such"]).output();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("\"code\":\"NOT_FOUND\""));
    let o = lkjagent(["--data", data, "memory", "query", "--sort", "best"]).output();
    assert_eq!(o.status.code(), Some(2));
}

#[test]

fn check_exit_codes_through_the_binary() {
    let d = TempDir::shipped_data("cli-commands-b");
    let data = d.0.to_str().unwrap();
    let o = lkjagent(["--data", data, "check", "--no-network"]).output();
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    std::fs::write(d.0.join("config.json"), r#"{"llm":{"endpoint":"http://127.0.0.1:1/v1","model":""}}"#).unwrap();
    let o = lkjagent(["--data", data, "check", "--no-network"]).output();
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stdout(&o).contains("FAIL config.json: llm.model:"), "{}", stdout(&o));
    std::fs::write(d.0.join("memory.json"), "[]").unwrap();
    std::fs::copy(format!("{}/data/config.json", env!("CARGO_MANIFEST_DIR")), d.0.join("config.json")).unwrap();
    let o = lkjagent(["--data", data, "check", "--no-network"]).output();
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
}

#[test]

fn every_command_has_help() {
    for cmd in ["status", "memory", "send", "check"] {
        let o = lkjagent([cmd, "--help"]).output();
        assert_eq!(o.status.code(), Some(0), "{cmd}");
        assert!(stdout(&o).contains(&format!("usage: lkjagent [--data DIR] {cmd}")), "{cmd}: {}", stdout(&o));
    }
}

/// One damaged store record is one finding: `check` names it once on stderr (with its byte
/// offset) and counts it once on its store.log line, wherever the record is in the log. (Issue
/// 15 reported six copies of one warning; this pins the one-copy behaviour.)
#[test]
fn check_reports_a_damaged_record_once() {
    let d = TempDir::shipped_data("cli-commands-damaged");
    let data = d.0.to_str().unwrap();
    let doc = br#"{"storage": {"fruit,apple": "A red fruit.", "fruit,pear": "A green fruit.", "veg,leek": "A long vegetable.", "nut,walnut": "Hard shell."}}"#;
    let o = lkjagent(["--data", data, "memory", "import", "-"]).stdin(doc).output();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let log = d.0.join("store.log");
    let good = std::fs::read(&log).unwrap();
    let starts: Vec<usize> =
        std::iter::once(0).chain(good.iter().enumerate().filter(|(_, &b)| b == b'\n').map(|(i, _)| i + 1)).collect();
    // Every record but the header and the last (a damaged last record reads as an unfinished
    // tail); one byte flipped inside its JSON.
    for w in starts.windows(2).skip(1).take(starts.len().saturating_sub(4)) {
        let (at, end) = (w[0], w[1]);
        let mut bytes = good.clone();
        bytes[at + (end - at) / 2] ^= 0x01;
        std::fs::write(&log, &bytes).unwrap();
        let o = lkjagent(["--data", data, "check", "--no-network"]).output();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
        let named: Vec<&str> = err.lines().filter(|l| l.contains("damaged record")).collect();
        assert_eq!(named.len(), 1, "record at byte {at}:\n{err}");
        assert!(named[0].contains(&format!("at byte {at}:")), "{}", named[0]);
        let mut lines: Vec<&str> = err.lines().collect();
        lines.sort_unstable();
        lines.dedup();
        assert_eq!(lines.len(), err.lines().count(), "a warning printed twice:\n{err}");
        assert_eq!(out.matches("store.log").count(), 1, "{out}");
        assert!(out.contains("FAIL store.log: ") && out.contains(" 1 damaged records"), "{out}");
    }
    std::fs::write(&log, &good).unwrap();
}
