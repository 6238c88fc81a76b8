#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! `lkjagent parse-reply` as a real child process: output is JSON the crate's own parser
//! reads, exit codes say whether an instruction was found, stdin works, errors are usage or I/O.

#[path = "support/cli.rs"]
mod cli;
#[path = "support/temp.rs"]
mod temp;

use cli::lkjagent;
use lkjagent::json::Document;

fn temp_file(content: &[u8]) -> std::path::PathBuf {
    let p = temp::temp_dir("reply-cli").join("reply.txt");
    std::fs::write(&p, content).unwrap();
    p
}

fn remove(p: &std::path::Path) {
    std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
}

#[test]
fn valid_reply_prints_instructions_and_exits_0() {
    let p = temp_file(b"<think>use <action></think><agent><next_state>evaluating</next_state><action type=\"storage_save\"><tags>a,b</tags><value>x &amp; y</value></action></agent>");
    let out = lkjagent(["parse-reply", p.to_str().unwrap()]).output();
    remove(&p);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let mut doc = Document::with_capacity(1000, 10_000);
    doc.parse(&out.stdout).unwrap();
    let root = doc.root();
    assert_eq!(root.path("instructions.[0].text").unwrap().as_str(), Some("evaluating"));
    assert_eq!(root.path("instructions.[1].type").unwrap().as_str(), Some("storage_save"));
    assert_eq!(root.path("instructions.[1].value").unwrap().as_str(), Some("x & y"));
    assert_eq!(root.path("cleaning.think_blocks").unwrap().as_u64(), Some(1));
    assert_eq!(root.get("problems").unwrap().len(), 0);
}

#[test]
fn invalid_reply_from_stdin_exits_1_with_feedback() {
    let out = lkjagent(["parse-reply", "-", "--state", "commanding", "--max-actions", "2"])
        .stdin(b"Sure, I saved it!")
        .output();
    assert_eq!(out.status.code(), Some(1));
    let mut doc = Document::with_capacity(1000, 10_000);
    doc.parse(&out.stdout).unwrap();
    let root = doc.root();
    assert_eq!(root.path("problems.[0].code").unwrap().as_str(), Some("NO_TAGS"));
    assert_eq!(root.get("max_actions").unwrap().as_u64(), Some(2));
    assert!(root.get("feedback").unwrap().as_str().unwrap().contains("<type>storage_save</type>"));
}

#[test]
fn usage_and_io_errors() {
    let out = lkjagent(["parse-reply"]).output();
    assert_eq!(out.status.code(), Some(2));
    let out = lkjagent(["parse-reply", "x", "--max-actions", "zero"]).output();
    assert_eq!(out.status.code(), Some(2));
    let out = lkjagent(["parse-reply", "/nonexistent/lkjagent/reply.txt"]).output();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"code\":\"IO\""));
    let out = lkjagent(["parse-reply", "--help"]).output();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--max-actions"));
}

/// A reader that has gone before the output comes (`lkjagent parse-reply FILE | head -c 1`
/// once `head` has its byte) is an I/O error and exit 1, not a panic and an abort (134).
#[test]
fn output_to_a_closed_pipe_is_an_io_error() {
    let p = temp_file(b"<agent><next_state>evaluating</next_state></agent>");
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lkjagent"))
        .args(["parse-reply", p.to_str().unwrap()])
        .env_remove("LKJAGENT_DATA")
        .stdin(std::process::Stdio::null())
        .stdout(writer)
        .output()
        .unwrap();
    remove(&p);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", stderr);
    assert!(stderr.contains("\"code\":\"IO\"") && stderr.contains("cannot write the output"), "{}", stderr);
    assert!(!stderr.contains("panicked"), "{}", stderr);
}
