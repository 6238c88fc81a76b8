#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! The reply corpus: `tests/replies/NNN-name.txt` is a model reply as a server returned it
//! (bytes, not necessarily UTF-8); `NNN-name.expect` beside it is what the agent must take
//! from it. Every mismatch is reported (file, expected and actual lines) before the test fails.
//!
//! The `.expect` format, one item per line, in this order:
//!
//! ```text
//! # a comment (ignored)
//! max_actions: 3                       (optional input: actions allowed; default 1)
//! dialect: canonical envelope          (dialect summary, then `envelope` if inside <agent>)
//! next_state: "commanding"             (each instruction, in order; texts as Rust string literals)
//! think_log: "..."
//! evaluation_log: "..."
//! state_delete: "..."
//! action: storage_save tags="a,b" value="..." query="..." base_version="..." metadata="..." form=canonical
//! problem: UNKNOWN_ACTION              (each problem code, in order)
//! ```
//!
//! `LKJAGENT_BLESS=1 cargo test --test reply_corpus` rewrites the `.expect` files from the
//! current behaviour (keeping comments and `max_actions`); review the diff before committing.

#[path = "support/rng.rs"]
mod rng;

use lkjagent::reply::{Instruction, Interpretation, Reader};
use std::fmt::Write;
use std::path::PathBuf;

fn describe(it: &Interpretation<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let d = it.dialect();
    out.push(format!("dialect: {}{}", d.as_str(), if d.envelope { " envelope" } else { "" }));
    for i in it.instructions() {
        match i {
            Instruction::NextState(s) => out.push(format!("next_state: {:?}", s)),
            Instruction::ThinkLog(s) => out.push(format!("think_log: {:?}", s)),
            Instruction::EvaluationLog(s) => out.push(format!("evaluation_log: {:?}", s)),
            Instruction::StateDelete(s) => out.push(format!("state_delete: {:?}", s)),
            Instruction::Action(a) => {
                let mut l = format!("action: {} tags={:?}", a.kind.as_str(), a.tags);
                for (name, v) in
                    [("value", a.value), ("query", a.query), ("base_version", a.base_version), ("metadata", a.metadata)]
                {
                    if let Some(v) = v {
                        write!(l, " {}={:?}", name, v).unwrap();
                    }
                }
                write!(l, " form={}", a.form.as_str()).unwrap();
                out.push(l);
            }
        }
    }
    for p in it.problems() {
        out.push(format!("problem: {}", p.code.as_str()));
    }
    out
}

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("replies")
}

#[test]
fn corpus() {
    let bless = std::env::var_os("LKJAGENT_BLESS").is_some();
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    assert!(files.len() >= 60, "the corpus should hold at least 60 replies, found {}", files.len());
    let mut reader = Reader::new();
    let mut failures = Vec::new();
    for file in &files {
        let reply = std::fs::read(file).unwrap();
        let expect_path = file.with_extension("expect");
        let expect_text = std::fs::read_to_string(&expect_path).unwrap_or_default();
        let mut header = Vec::new();
        let mut max_actions = 1;
        let mut expected = Vec::new();
        for line in expect_text.lines() {
            if line.starts_with('#') || line.trim().is_empty() {
                header.push(line.to_string());
            } else if let Some(n) = line.strip_prefix("max_actions:") {
                max_actions = n.trim().parse().unwrap();
                header.push(line.to_string());
            } else {
                expected.push(line.to_string());
            }
        }
        let it = reader.read(&reply, max_actions);
        let actual = describe(&it);
        if bless {
            let mut text = header.join("\n");
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&actual.join("\n"));
            text.push('\n');
            std::fs::write(&expect_path, text).unwrap();
            continue;
        }
        if actual != expected {
            let mut msg = format!("{}:\n", file.file_name().unwrap().to_string_lossy());
            for l in &expected {
                if !actual.contains(l) {
                    writeln!(msg, "  - {}", l).unwrap();
                }
            }
            for l in &actual {
                if !expected.contains(l) {
                    writeln!(msg, "  + {}", l).unwrap();
                }
            }
            if expected.iter().all(|l| actual.contains(l)) && actual.iter().all(|l| expected.contains(l)) {
                writeln!(msg, "  (same lines, different order)").unwrap();
            }
            failures.push(msg);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} replies differ (- expected, + actual):\n{}",
        failures.len(),
        files.len(),
        failures.concat()
    );
}

/// A 1 MiB reply: a long reasoning block, a long value, prose; generated here rather than
/// committed.
#[test]
fn one_mebibyte_reply() {
    let mut reply = String::from("<think>\n");
    while reply.len() < 600 * 1024 {
        reply.push_str("Let me consider the <action> options again; maybe storage_save with <tags>x</tags>.\n");
    }
    reply.push_str("</think>\n\n<agent>\n<next_state>evaluating</next_state>\n<action><type>storage_save</type><tags>big,entry</tags><value>");
    let body_start = reply.len();
    while reply.len() < (1 << 20) - 200 {
        reply.push_str("A long line of notes about terms &amp; definitions, with x < y and <b>markup</b>.\n");
    }
    let body = reply[body_start..].replace("&amp;", "&");
    reply.push_str("</value></action>\n</agent>\nDone.");
    assert!(reply.len() <= 1 << 20, "{}", reply.len());
    let mut r = Reader::new();
    let it = r.read(reply.as_bytes(), 1);
    assert!(it.problems().is_empty(), "{:?}", it.problems());
    assert_eq!(it.next_state(), Some("evaluating"));
    let a = it.actions().next().unwrap();
    assert_eq!(a.tags, "big,entry");
    let v = a.value.unwrap();
    assert!(v.starts_with("A long line of notes about terms & definitions, with x < y and <b>markup</b>."));
    assert_eq!(v, body.trim());
    assert_eq!(it.clean_report().think_blocks, 1);

    // One byte more than the limit: refused whole, with a precise problem.
    let mut big = reply.into_bytes();
    big.resize((1 << 20) + 1, b' ');
    let it = r.read(&big, 1);
    assert!(it.is_empty());
    assert_eq!(it.problems()[0].code.as_str(), "REPLY_TOO_LARGE");
}

/// Pseudo-random bytes (a fixed xorshift seed), alone and around a valid reply.
#[test]
fn binary_bytes() {
    let mut x = rng::Rng(0x9E37_79B9_7F4A_7C15);
    let mut junk = vec![0u8; 64 * 1024];
    for b in junk.iter_mut() {
        *b = x.next() as u8;
    }
    let mut r = Reader::new();
    let it = r.read(&junk, 1);
    assert!(it.is_empty());
    assert!(it.problems().iter().any(|p| p.code.as_str() == "INVALID_UTF8"));
    let mut mixed = junk[..4096].to_vec();
    mixed.extend_from_slice(b"\n<agent><next_state>thinking</next_state><think_log>ok</think_log></agent>\n");
    mixed.extend_from_slice(&junk[4096..8192]);
    let it = r.read(&mixed, 1);
    assert_eq!(it.next_state(), Some("thinking"));
    assert_eq!(it.think_log(), Some("ok"));
}
