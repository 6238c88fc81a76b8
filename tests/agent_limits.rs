//! A paging or hard limit below the prompt's fixed part (base and state prompts) would make the
//! agent page out everything and still be over it, every cycle. `run` refuses such a config at
//! start-up, before any request, with the key path and exit code 2.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "support/cli.rs"]
mod cli;
#[path = "support/temp.rs"]
mod temp;

use cli::lkjagent;
use std::path::PathBuf;

fn data_dir(tag: &str) -> PathBuf {
    let d = temp::temp_dir(&format!("limits-{}", tag));
    std::fs::write(d.join("memory.json"), temp::shipped("memory.json")).unwrap();
    d
}

fn run_with_limit(tag: &str, key: &str, max: u64) -> (i32, String) {
    let d = data_dir(tag);
    let shipped = temp::shipped("config.json");
    // The value after the first "max_tokens" that follows the limit's key.
    let section = shipped.find(&format!("\"{}\"", key)).unwrap_or_else(|| panic!("{} not in the config", key));
    let field = "\"max_tokens\": ";
    let at = section + shipped[section..].find(field).unwrap() + field.len();
    let end = at + shipped[at..].find(|c: char| !c.is_ascii_digit()).unwrap();
    let config = format!("{}{}{}", &shipped[..at], max, &shipped[end..])
        // Nothing listens on port 9 of loopback: the start-up probe fails at once.
        .replace("http://127.0.0.1:1234/v1/chat/completions", "http://127.0.0.1:9/v1/chat/completions");
    std::fs::write(d.join("config.json"), config).unwrap();
    let out = lkjagent(["run", "--max-iterations", "1"]).data(&d).output();
    let text = cli::text(&out);
    let _ = std::fs::remove_dir_all(&d);
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn a_paging_limit_below_the_fixed_prompt_is_refused_at_start() {
    let (code, text) = run_with_limit("paging", "paging_limit", 100);
    assert_eq!(code, 2, "{}", text);
    assert!(text.contains("agent.paging_limit.max_tokens is 100"), "{}", text);
    assert!(!text.contains("cycle    1"), "no cycle may run: {}", text);
}

#[test]
fn a_hard_limit_below_the_fixed_prompt_is_refused_at_start() {
    let (code, text) = run_with_limit("hard", "hard_limit", 200);
    assert_eq!(code, 2, "{}", text);
    assert!(text.contains("agent.hard_limit.max_tokens"), "{}", text);
}

/// An agent in a fresh data directory on the shipped config, answering from `replies` (a replay
/// script), with `memory` as memory.json and a context window large enough for any prompt here.
fn replay_agent(tag: &str, replies: &[&str], memory: &str) -> (PathBuf, lkjagent::agent::engine::Agent) {
    use lkjagent::agent::config;
    use lkjagent::agent::engine::{Agent, Model};
    let d = data_dir(tag);
    let shipped = temp::shipped("config.json");
    let script = d.join("script.jsonl");
    let lines: String = replies.iter().map(|r| format!("{{\"content\": {:?}}}\n", r)).collect();
    std::fs::write(&script, lines).unwrap();
    let config_text = shipped
        .replace("\"provider\": \"openai\"", &format!("\"provider\": \"replay\", \"replay_path\": {:?}", script))
        .replace("\"context_window\": 8192", "\"context_window\": 1000000")
        .replace("\"max_tokens\": 3000", "\"max_tokens\": 900000")
        .replace("\"max_tokens\": 4500", "\"max_tokens\": 950000");
    std::fs::write(d.join("config.json"), config_text).unwrap();
    std::fs::write(d.join("memory.json"), memory).unwrap();
    let cfg = config::load(&d).unwrap();
    let client = lkjagent::llm::Client::new(&cfg.llm).unwrap();
    let agent = Agent::open(&d, cfg, Model::Client(Box::new(client)), false).unwrap();
    (d, agent)
}

/// A log line written into a working memory that is full (WORKING_MAX_ENTRIES entries) pages
/// the least recently used entry out to the store to make room; the agent goes on.
#[test]
fn a_log_line_into_a_full_working_memory_pages_out_instead_of_stopping() {
    let entries: Vec<String> =
        (0..lkjagent::limits::WORKING_MAX_ENTRIES - 1).map(|i| format!("\"note_{:03}\":\"n{}\"", i, i)).collect();
    let memory = format!(
        "{{\"state\":\"thinking\",\"iteration\":0,\"working_memory\":{{\"task\":\"t\",{}}}}}",
        entries.join(",")
    );
    let reply = "<agent><next_state>thinking</next_state><think_log>still room for this</think_log></agent>";
    let (d, mut agent) = replay_agent("full-wm", &[reply], &memory);
    let r = agent.cycle(&mut |_| {}, &|| false).unwrap();
    assert!(r.error.is_none(), "{:?}", r.error);
    let saved = std::fs::read_to_string(d.join("memory.json")).unwrap();
    assert!(saved.contains("still room for this"), "the log line is kept");
    assert!(saved.contains("\"note_001\": \"n1\""), "the other notes stay: {}", &saved[..300]);
    assert!(!saved.contains("\"note_000\": \"n0\""), "the oldest note made room");
    assert!(std::fs::read_to_string(d.join("store.log")).unwrap().contains("\"n0\""), "and is in the store");
    drop(agent);
    let _ = std::fs::remove_dir_all(&d);
}

/// A working memory whose escaped text would not fit the prompt buffer (PROMPT_MAX_BYTES:
/// `<` takes 4 bytes escaped) is paged out to the store until the prompt fits; nothing is lost
/// and the cycle runs.
#[test]
fn working_memory_too_big_for_the_prompt_buffer_is_paged_out() {
    let angle = "<".repeat(30_000);
    let memory = format!(
        "{{\"state\":\"thinking\",\"iteration\":0,\"working_memory\":{{\"task\":\"t\",\"a\":\"{0}\",\"b\":\"{0}\",\"c\":\"{0}\",\"d\":\"{0}\"}}}}",
        angle
    );
    let (d, mut agent) = replay_agent("escape", &["<agent><next_state>thinking</next_state></agent>"], &memory);
    let r = agent.cycle(&mut |_| {}, &|| false).unwrap();
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(r.paged_out >= 2, "{}", r.paged_out);
    assert!(agent.last_prompt().len() <= lkjagent::limits::PROMPT_MAX_BYTES);
    let log = std::fs::read_to_string(d.join("store.log")).unwrap();
    assert!(log.matches(&angle).count() >= r.paged_out, "paged entries are in the store");
    drop(agent);
    let _ = std::fs::remove_dir_all(&d);
}
