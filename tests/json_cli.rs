#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! `lkjagent json` as a user runs it: the real binary, real files in a temp dir, stdin.

#[path = "support/cli.rs"]
mod cli;
#[path = "support/temp.rs"]
mod temp;

use cli::lkjagent;
use lkjagent::json::{Document, Writer};
use std::path::PathBuf;
use std::process::Output;
use temp::TempDir;

/// Writes `name` in `dir`; its path, as an argument.
fn file(dir: &TempDir, name: &str, content: &[u8]) -> String {
    dir.write(name, content).to_str().unwrap().to_string()
}

fn text(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap()
}

/// The one stderr line, checked to be a JSON object with the given code.
fn error_line(out: &Output, code: &str) -> String {
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{}", err);
    let mut d = Document::with_capacity(64, 4096);
    d.parse(err.trim_end().as_bytes()).unwrap();
    assert_eq!(d.root().get("code").and_then(|v| v.as_str()), Some(code), "{}", err);
    d.root().get("message").and_then(|v| v.as_str()).unwrap().to_string()
}

const DOC: &str =
    r#" {"name": "lkj", "list": [1, -2.50e3, true, null, {}, [], ""], "nested": {"é": "\u00e9\n\ud83d\ude00"}} "#;

#[test]
fn prints_compact_and_pretty() {
    let dir = TempDir::new("json-cli");
    let f = file(&dir, "doc.json", DOC.as_bytes());
    let out = lkjagent(["json", &f]).output();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "{\"name\":\"lkj\",\"list\":[1,-2.50e3,true,null,{},[],\"\"],\"nested\":{\"é\":\"é\\n😀\"}}\n"
    );
    assert!(out.stderr.is_empty());

    let out = lkjagent(["json", "--pretty", &f]).output();
    assert_eq!(out.status.code(), Some(0));
    let want = "{\n  \"name\": \"lkj\",\n  \"list\": [\n    1,\n    -2.50e3,\n    true,\n    null,\n    {},\n    [],\n    \"\"\n  ],\n  \"nested\": {\n    \"é\": \"é\\n😀\"\n  }\n}\n";
    assert_eq!(text(&out.stdout), want);
}

#[test]
fn reads_stdin() {
    let out = lkjagent(["json", "-"]).stdin(b"[1, 2]").output();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "[1,2]\n");
}

/// A path that names a stream (here the child's own stdin, a pipe) is read once, not twice.
#[test]
fn reads_a_stream_path_once() {
    let out = lkjagent(["json", "/dev/stdin"]).stdin(b"{\"a\": [true]}").output();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "{\"a\":[true]}\n");
}

#[test]
fn invalid_file_prints_nothing_and_the_error_with_offset() {
    let dir = TempDir::new("json-cli");
    let f = file(&dir, "bad.json", b"{\"a\": [1, 2,]\n}");
    let out = lkjagent(["json", &f]).output();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let msg = error_line(&out, "JSON_INVALID");
    assert!(msg.contains("bad.json"), "{}", msg);
    assert!(msg.contains("at byte 12 (line 1, column 13): expected a value after ','"), "{}", msg);
}

/// Nothing reaches stdout unless the whole input is valid, whatever the input is: a file,
/// stdin, or a path that names a pipe. (`["` used to be printed before the error for an
/// encoded surrogate, so `lkjagent json in.json --pretty > out.json` left a half file.)
#[test]
fn invalid_input_prints_nothing_from_a_file_stdin_or_a_pipe() {
    let dir = TempDir::new("json-cli");
    for bad in [&b"[\"\xed\xa0\x80\"]"[..], b"{\"a\": [1, 2, {\"b\": null}", b"[1, 2] 3", b"[\"ok\", \"\x80\"]"] {
        let f = file(&dir, "in.json", bad);
        for pretty in [false, true] {
            let p: &[&str] = if pretty { &["--pretty"] } else { &[] };
            for (path, stdin) in [(f.as_str(), None), ("-", Some(bad)), ("/dev/stdin", Some(bad))] {
                let mut args = vec!["json", path];
                args.extend_from_slice(p);
                let mut run = lkjagent(&args);
                if let Some(input) = stdin {
                    run = run.stdin(input);
                }
                let out = run.output();
                let what = format!("{:?} {} {:?}", String::from_utf8_lossy(bad), path, p);
                assert_eq!(out.status.code(), Some(1), "{}", what);
                assert!(out.stdout.is_empty(), "{}: printed {:?}", what, text(&out.stdout));
                error_line(&out, "JSON_INVALID");
            }
        }
    }
}

/// The output is held until the input is known valid, so it is bounded
/// (limits::JSON_CLI_MAX_OUTPUT_BYTES): a document whose output would pass it is a clear
/// error, and nothing is printed. Here 70,000 numbers 500 levels deep: 140 KB in, about 70 MB
/// pretty.
#[test]
fn output_past_its_limit_is_an_error_and_prints_nothing() {
    let mut doc = "[".repeat(500);
    doc.push_str(&vec!["0"; 70_000].join(","));
    doc.push_str(&"]".repeat(500));
    let out = lkjagent(["json", "-", "--pretty"]).stdin(doc.as_bytes()).output();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "printed {} bytes", out.stdout.len());
    let msg = error_line(&out, "CAPACITY_EXCEEDED");
    assert!(msg.contains("JSON_CLI_MAX_OUTPUT_BYTES") && msg.contains("<stdin>"), "{}", msg);
    // Compact, the same document is small and printed whole.
    let out = lkjagent(["json", "-"]).stdin(doc.as_bytes()).output();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("{}\n", doc));
}

#[test]
fn invalid_stdin_is_exit_1() {
    let out = lkjagent(["json", "-"]).stdin(b"[\"\\uD800\"]").output();
    assert_eq!(out.status.code(), Some(1));
    let msg = error_line(&out, "JSON_INVALID");
    assert!(msg.contains("<stdin>") && msg.contains("at byte 8"), "{}", msg);
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let out = lkjagent(["json", "-"]).stdin(vec![b'['; 100_000]).output();
    assert_eq!(out.status.code(), Some(1));
    let msg = error_line(&out, "CAPACITY_EXCEEDED");
    assert!(msg.contains("JSON_MAX_DEPTH") && msg.contains("at byte 512"), "{}", msg);
}

#[test]
fn usage_and_io_errors() {
    let out = lkjagent(["json"]).output();
    assert_eq!(out.status.code(), Some(2));
    error_line(&out, "USAGE");
    let out = lkjagent(["json", "a.json", "b.json"]).output();
    assert_eq!(out.status.code(), Some(2));
    error_line(&out, "USAGE");
    let out = lkjagent(["json", "/nonexistent/lkjagent/x.json"]).output();
    assert_eq!(out.status.code(), Some(1));
    error_line(&out, "IO");
    let out = lkjagent(["json", "--help"]).output();
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("usage: lkjagent json FILE [--pretty]"));
}

/// A document with far more values than any arena the agent uses, formatted through the
/// binary: the output re-parses to the same document.
#[test]
fn formats_a_document_larger_than_the_agents_arenas() {
    let mut big = String::from("[");
    for i in 0..60_000 {
        if i > 0 {
            big.push(',');
        }
        big.push_str(&format!("{{\"id\":{},\"name\":\"n\\u00e9{}\",\"tags\":[true,null,{}.5e-3]}}", i, i, i));
    }
    big.push(']');
    let dir = TempDir::new("json-cli");
    let f = file(&dir, "big.json", big.as_bytes());
    let out = lkjagent(["json", &f]).output();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let printed = text(&out.stdout).trim_end();
    let mut want_doc = Document::with_capacity(1 << 20, 1 << 24);
    want_doc.parse(big.as_bytes()).unwrap();
    let mut want = String::new();
    Writer::compact(&mut want).value(want_doc.root()).unwrap();
    assert_eq!(printed, want);

    let out = lkjagent(["json", "--pretty", &f]).output();
    assert_eq!(out.status.code(), Some(0));
    let mut got_doc = Document::with_capacity(1 << 20, 1 << 24);
    got_doc.parse(&out.stdout).unwrap();
    assert_eq!(got_doc.root(), want_doc.root());
}

/// The 2.2 MB canada.json of the benchmark corpus, when present.
#[test]
fn formats_canada_json_when_the_corpus_is_present() {
    let corpus: PathBuf =
        std::env::var_os("LKJAGENT_CORPUS").map(Into::into).unwrap_or_else(|| "../shared/corpus".into());
    let path = corpus.join("json/nativejson/data/canada.json");
    let Ok(bytes) = std::fs::read(&path) else {
        println!("corpus not found at {}, skipped", path.display());
        return;
    };
    let out = lkjagent(["json", path.to_str().unwrap()]).output();
    assert_eq!(out.status.code(), Some(0));
    let mut a = Document::with_capacity(1 << 20, 1 << 23);
    a.parse(&bytes).unwrap();
    let mut b = Document::with_capacity(1 << 20, 1 << 23);
    b.parse(&out.stdout).unwrap();
    assert_eq!(a.root(), b.root());
    assert!(a.node_count() > 100_000);
}
