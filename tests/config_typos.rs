//! A typo in `config.json` stops the agent (issue 10 "Configuration typos"): an unknown key is
//! a configuration problem, exit 2, naming the key path and, when one is close, the known key
//! the user probably meant; `lkjagent check` reports the same. `llm.extra` (passed to the
//! server as it is) and the prompt trees (text the user writes) stay free-form.
//!
//! Real `lkjagent` child processes on real data directories; `run` uses the replay provider, so
//! a run that wrongly goes ahead ends by itself instead of waiting for a server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "support/cli.rs"]
mod cli;
#[path = "support/temp.rs"]
mod temp;
use cli::lkjagent;
use std::path::Path;
use std::time::Duration;
use temp::{set, shipped, TempDir};

/// A data directory: the shipped config on the replay provider (one scripted reply), edited by
/// `tweak`, and the shipped memory.
fn data_dir(tweak: impl FnOnce(&mut String)) -> TempDir {
    let d = TempDir::new("config-typos");
    let mut c = shipped("config.json");
    set(&mut c, "\"provider\": \"openai\"", "\"provider\": \"replay\", \"replay_path\": \"script.jsonl\"");
    tweak(&mut c);
    d.write("config.json", c);
    d.write("memory.json", shipped("memory.json"));
    d.write(
        "script.jsonl",
        "{\"content\": \"<agent><next_state>commanding</next_state><think_log>go</think_log></agent>\"}\n",
    );
    d
}

/// `lkjagent --data DIR args`, bounded (a run that wrongly goes ahead must not hang the suite):
/// exit code (-1 for a signal), stdout, stderr.
fn lkjagent_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let o = lkjagent(args).data(dir).output_within(Duration::from_secs(30));
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (o.status.code().unwrap_or(-1), text(&o.stdout), text(&o.stderr))
}

/// `run` and `check` both refuse the config with exit 2 and say `expected` (on stderr for
/// `run`, on stdout for `check`).
fn refused(tweak: impl FnOnce(&mut String), expected: &[&str]) {
    let d = data_dir(tweak);
    let (code, out, err) = lkjagent_in(&d.0, &["run", "--max-iterations", "1"]);
    assert_eq!(code, 2, "run should refuse the config\nstdout:\n{}\nstderr:\n{}", out, err);
    for e in expected {
        assert!(err.contains(e), "run: '{}' missing in stderr:\n{}", e, err);
    }
    assert!(!err.contains("ignored"), "{}", err);
    let memory_before = shipped("memory.json");
    assert_eq!(std::fs::read_to_string(d.0.join("memory.json")).unwrap(), memory_before, "the run went ahead");
    let (code, out, err) = lkjagent_in(&d.0, &["check", "--no-network"]);
    assert_eq!(code, 2, "check should fail the config\nstdout:\n{}\nstderr:\n{}", out, err);
    for e in expected {
        assert!(
            out.lines().any(|l| l.starts_with("FAIL config.json") && l.contains(e)),
            "check: '{}' missing:\n{}",
            e,
            out
        );
    }
}

#[test]
fn a_misspelt_llm_key_is_refused_with_the_key_meant() {
    refused(
        |c| {
            set(
                c,
                "\"model\": \"qwen/qwen3-8b\",",
                "\"model\": \"qwen/qwen3-8b\", \"endpiont\": \"http://10.0.0.9:8080/v1\",",
            )
        },
        &["llm.endpiont: unknown key; did you mean llm.endpoint?"],
    );
}

#[test]
fn a_misspelt_nested_key_is_refused() {
    refused(
        |c| set(c, "\"max_iterations\": 5,", "\"max_iteration\": 2,"),
        &["agent.iterate.max_iteration: unknown key; did you mean agent.iterate.max_iterations?"],
    );
    refused(
        |c| set(c, "\"max_retries\": 3,", "\"max_retires\": 0,"),
        &["llm.retry.max_retires: unknown key; did you mean llm.retry.max_retries?"],
    );
    refused(
        |c| set(c, "\"key_prefix\": \"think_log_\"", "\"key_prefix\": \"think_log_\", \"Enable\": false"),
        &["agent.think_log.Enable: unknown key; did you mean agent.think_log.enable?"],
    );
    // A state's entry holds its prompt tree and nothing else (the tree itself is free text).
    refused(
        |c| set(c, "\"thinking\": {\n        \"prompt\": {", "\"thinking\": {\n        \"promt\": {"),
        &["agent.state.thinking.promt: unknown key; did you mean agent.state.thinking.prompt?"],
    );
}

#[test]
fn a_misspelt_top_level_key_is_refused() {
    refused(
        |c| set(c, "\"memory\": {", "\"agnet\": {\"iterate\": {\"max_iterations\": 1}},\n  \"memory\": {"),
        &["agnet: unknown key; did you mean agent?"],
    );
    refused(
        |c| set(c, "\"store_capacity\": 65536", "\"store_capacty\": 1024"),
        &["memory.store_capacty: unknown key; did you mean memory.store_capacity?"],
    );
}

#[test]
fn every_unknown_key_is_named_and_a_far_one_gets_no_guess() {
    let d = data_dir(|c| {
        set(c, "\"stream\": false,", "\"stream\": false, \"zzz_quux\": 1,");
        set(c, "\"paging_limit\": {", "\"paging_limit\": {\"max_tokenz\": 10, ");
        set(c, "\"memory\": {", "\"wibble\": true,\n  \"memory\": {");
    });
    let (code, out, _) = lkjagent_in(&d.0, &["check", "--no-network"]);
    assert_eq!(code, 2, "{}", out);
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL config.json")).collect();
    assert_eq!(fails.len(), 3, "{}", out);
    let far = fails.iter().find(|l| l.contains("llm.zzz_quux: unknown key")).unwrap_or_else(|| panic!("{}", out));
    assert!(!far.contains("did you mean"), "{}", far);
    assert!(
        fails
            .iter()
            .any(|l| l
                .contains("agent.paging_limit.max_tokenz: unknown key; did you mean agent.paging_limit.max_tokens?")),
        "{}",
        out
    );
    assert!(fails.iter().any(|l| l.contains("wibble: unknown key")), "{}", out);
}

/// What is not a typo: the raw request fields of `llm.extra`, the text of the prompt trees
/// (their keys are the prompt's words), and the shipped config itself.
#[test]
fn free_form_parts_stay_free() {
    let d = data_dir(|c| {
        set(
            c,
            "\"extra\": {}",
            "\"extra\": {\"top_p\": 0.9, \"reasoning_effortt\": \"low\", \"chat_template_kwargs\": {\"x\": 1}}",
        );
        set(
            c,
            "\"goal\": \"Check the last entry, then add the next one the task needs.\",",
            "\"goal\": \"Check the last entry, then add the next one the task needs.\", \"my_own_hint\": {\"anything\": \"goes\"},",
        );
    });
    let (code, out, err) = lkjagent_in(&d.0, &["check", "--no-network"]);
    assert_eq!(code, 0, "stdout:\n{}\nstderr:\n{}", out, err);
    let (code, out, err) = lkjagent_in(&d.0, &["run", "--max-iterations", "1"]);
    assert_eq!(code, 0, "stdout:\n{}\nstderr:\n{}", out, err);
    assert!(!err.contains("unknown"), "{}", err);
}
