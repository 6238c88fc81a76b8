//! End-to-end tests of the agent against a scripted OpenAI-compatible server on loopback
//! (`support/loopback.rs`): the state machine, every action, paging (by size and by a
//! context-overflow 400), malformed replies, a server that is down and comes back, SIGTERM in
//! the middle of a request, replay of a recorded run, and the inbox.
//!
//! Two ways in: the agent in-process (`Agent::open` + `cycle`, so a test can look at the report
//! and `memory.json` after every cycle), and the real `lkjagent` binary as a child process (for
//! the loop, the status lines, signals and exit codes). Each data directory is a temp copy of
//! the shipped `data/` with a config tuned for tests: the scripted server's endpoint, short
//! timeouts and tiny back-offs. Every wait is bounded.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "support/loopback.rs"]
mod loopback;

#[path = "support/cli.rs"]
mod cli;
#[path = "support/temp.rs"]
mod temp;
use cli::lkjagent;
use lkjagent::agent::config;
use lkjagent::agent::engine::{Agent, CycleReport, Model};
use lkjagent::json::Document;
use lkjagent::llm;
use loopback::{content, free_port, llm_script, Server, Step, LLAMA_CPP_OVERFLOW};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Output};
use std::time::{Duration, Instant};
use temp::{set, shipped, test_config, TempDir};

// ----- replies -------------------------------------------------------------------------------

fn think(next: &str, log: &str) -> Step {
    content(&format!("<agent>\n  <next_state>{}</next_state>\n  <think_log>{}</think_log>\n</agent>", next, log))
}

fn evaluate(log: &str) -> Step {
    content(&format!("<agent><next_state>thinking</next_state><evaluation_log>{}</evaluation_log></agent>", log))
}

fn action(kind: &str, tags: &str, value: Option<&str>) -> Step {
    let value = value.map(|v| format!("<value>{}</value>", v)).unwrap_or_default();
    content(&format!("<agent><action><type>{}</type><tags>{}</tags>{}</action></agent>", kind, tags, value))
}

const MALFORMED: &str = "Sure! I will save banana to the dictionary now, it is a long yellow fruit.";

// ----- data directories ----------------------------------------------------------------------

/// The shipped config pointed at `endpoint`, with test timeouts and back-offs; `tweak` edits
/// the text further.
fn write_config(dir: &Path, endpoint: &str, tweak: impl FnOnce(&mut String)) {
    let mut c = test_config(endpoint);
    // Scripted replies drive the free (unconstrained) path here, one request per cycle; the
    // constrained path, its probe and its fallbacks are tested in tests/constrained.rs.
    set(&mut c, "\"constrain\": \"auto\"", "\"constrain\": \"off\"");
    tweak(&mut c);
    std::fs::write(dir.join("config.json"), c).unwrap();
}

/// A data directory with the test config and the shipped memory.json.
fn data_dir(tag: &str, endpoint: &str) -> TempDir {
    let d = TempDir::new(tag);
    write_config(d.path(), endpoint, |_| {});
    std::fs::write(d.path().join("memory.json"), shipped("memory.json")).unwrap();
    d
}

/// A memory.json in `state` with the task and `extra` working-memory entries.
fn write_memory(dir: &Path, state: &str, extra: &[(&str, &str)]) {
    let mut m = format!(
        "{{\"state\": \"{}\", \"iteration\": 0, \"working_memory\": {{\"task\": \"Build a small dictionary.\"",
        state
    );
    for (k, v) in extra {
        m.push_str(&format!(", \"{}\": \"{}\"", k, v));
    }
    m.push_str("}}");
    std::fs::write(dir.join("memory.json"), m).unwrap();
}

// ----- memory.json as the tests see it -------------------------------------------------------

#[derive(Debug, PartialEq, Eq)]
struct Mem {
    state: String,
    iteration: u64,
    wm: Vec<(String, String)>,
}

impl Mem {
    fn get(&self, key: &str) -> Option<&str> {
        self.wm.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

fn read_memory(dir: &Path) -> Mem {
    let bytes = std::fs::read(dir.join("memory.json")).unwrap();
    let mut doc = Document::with_capacity(4096, 1 << 20);
    doc.parse(&bytes).unwrap_or_else(|e| panic!("memory.json does not parse: {:?}", e));
    let root = doc.root();
    Mem {
        state: root.get("state").and_then(|v| v.as_str()).unwrap().to_string(),
        iteration: root.get("iteration").and_then(|v| v.as_u64()).unwrap(),
        wm: root
            .get("working_memory")
            .unwrap()
            .members()
            .map(|(k, v)| (k.to_string(), v.as_str().unwrap().to_string()))
            .collect(),
    }
}

fn store_log(dir: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(dir.join("store.log")).unwrap_or_default()).into_owned()
}

// ----- the agent in-process ------------------------------------------------------------------

fn open_agent(dir: &Path) -> Agent {
    let config = config::load(dir).unwrap();
    let client = llm::Client::new(&config.llm).unwrap();
    Agent::open(dir, config, Model::Client(Box::new(client)), false).unwrap()
}

fn cycle(agent: &mut Agent) -> CycleReport {
    let r = agent.cycle(&mut |_| {}, &|| false).unwrap();
    assert!(r.error.is_none(), "cycle {} failed: {:?}", r.cycle, r.error);
    r
}

fn only_action(r: &CycleReport) -> (&'static str, bool) {
    assert_eq!(r.actions.len(), 1, "cycle {}: one action expected, got {:?}", r.cycle, r.actions);
    let a = r.actions.iter().next().unwrap();
    (a.kind, a.ok)
}

/// The newest entry of a rotating log (highest slot number).
fn newest_log(m: &Mem, prefix: &str) -> String {
    m.wm.iter().filter(|(k, _)| k.starts_with(prefix)).max_by(|a, b| a.0.cmp(&b.0)).unwrap().1.clone()
}

// ----- the binary ----------------------------------------------------------------------------

/// A finished child's exit status, stdout and stderr (which must be UTF-8).
fn finished(o: Output) -> (ExitStatus, String, String) {
    (o.status, String::from_utf8(o.stdout).unwrap(), String::from_utf8(o.stderr).unwrap())
}

// ----- the tests -----------------------------------------------------------------------------

/// thinking -> commanding -> evaluating -> thinking, with memory.json checked after each cycle.
#[test]
fn states_follow_the_cycle_in_order() {
    let script = vec![
        think("commanding", "Start with apple."),
        action("storage_save", "dictionary, fruit, apple", Some("apple: the round fruit of the apple tree.")),
        evaluate("apple is saved."),
        think("commanding", "Next, banana."),
    ];
    let server = Server::llm(script, evaluate("script used up"));
    let d = data_dir("states", &server.endpoint());
    let mut agent = open_agent(d.path());

    let r = cycle(&mut agent);
    assert_eq!((r.state.as_str(), r.next_state.as_str()), ("thinking", "commanding"));
    assert!(r.actions.is_empty() && !r.invalid_reply);
    let m = read_memory(d.path());
    assert_eq!((m.state.as_str(), m.iteration), ("commanding", 1));
    assert_eq!(newest_log(&m, "think_log_"), "Start with apple.");

    let r = cycle(&mut agent);
    assert_eq!((r.state.as_str(), r.next_state.as_str()), ("commanding", "evaluating"));
    assert_eq!(only_action(&r), ("storage_save", true));
    let m = read_memory(d.path());
    assert_eq!((m.state.as_str(), m.iteration), ("evaluating", 2));
    assert!(newest_log(&m, "command_log_").contains("storage_save"), "{:?}", m);
    assert!(store_log(d.path()).contains("apple: the round fruit of the apple tree."));

    let r = cycle(&mut agent);
    assert_eq!((r.state.as_str(), r.next_state.as_str()), ("evaluating", "thinking"));
    let m = read_memory(d.path());
    assert_eq!((m.state.as_str(), m.iteration), ("thinking", 3));
    assert_eq!(newest_log(&m, "evaluation_log_"), "apple is saved.");

    let r = cycle(&mut agent);
    assert_eq!((r.state.as_str(), r.next_state.as_str()), ("thinking", "commanding"));
    assert_eq!(read_memory(d.path()).iteration, 4);

    // Each prompt named the state the cycle started in, and the iteration.
    let prompts = server.prompts();
    assert_eq!(prompts.len(), 4);
    for (p, (state, it)) in prompts.iter().zip([("thinking", 1), ("commanding", 2), ("evaluating", 3), ("thinking", 4)])
    {
        assert!(p.contains(&format!("<current_state>{}</current_state>", state)), "{}", p);
        assert!(p.contains(&format!("<iteration>{}</iteration>", it)), "{}", p);
    }
    // The working memory the model sees carries the logs of earlier cycles.
    assert!(prompts[3].contains("apple is saved."));
}

/// The binary's status lines, and the start-up probe of `GET /v1/models`.
#[test]
fn run_prints_one_status_line_per_cycle() {
    let script = vec![
        think("commanding", "Start with apple."),
        action("storage_save", "dictionary,fruit,apple", Some("apple: a fruit.")),
        evaluate("apple is saved."),
    ];
    let server = Server::llm(script, evaluate("script used up"));
    let d = data_dir("status", &server.endpoint());
    let child = lkjagent(["run", "--max-iterations", "3"]).data(d.path()).spawn();
    let (status, out, err) = finished(child.wait_within(Duration::from_secs(20)));
    assert!(status.success(), "exit {:?}\n{}\n{}", status, out, err);
    assert!(server.models_requests() >= 1, "no GET /v1/models probe");
    assert!(out.contains("reachable"), "{}", out);
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("cycle ")).collect();
    assert_eq!(lines.len(), 3, "{}", out);
    assert!(lines[0].starts_with("cycle    1 thinking   -> commanding no action |"), "{}", lines[0]);
    assert!(lines[1].starts_with("cycle    2 commanding -> evaluating storage_save ok |"), "{}", lines[1]);
    assert!(lines[2].starts_with("cycle    3 evaluating -> thinking   no action |"), "{}", lines[2]);
    // Tokens: the estimate, and the server's own count.
    assert!(lines[0].contains(" tok (server 500+40)"), "{}", lines[0]);
    assert!(lines[1].contains("| store 1"), "{}", lines[1]);
    assert!(out.contains("3 cycle(s) done; state thinking, iteration 3"), "{}", out);
    assert_eq!(read_memory(d.path()).iteration, 3);
}

/// Every action, each checked in memory.json and the store log.
#[test]
fn every_action_does_what_it_says() {
    let script = vec![
        action("working_memory_add", "Draft, Notes", Some("first draft of the fruit section")),
        action("working_memory_remove", "notes,draft", None),
        action("storage_save", "dictionary,fruit,apple", Some("apple: the round fruit of the apple tree.")),
        action("storage_save", "dictionary,fruit,banana", Some("banana: a long yellow fruit.")),
        action("storage_load", "apple, fruit, dictionary", None),
        action("storage_search", "fruit,dictionary", None),
        content(
            "<agent><action><type>record_update</type><tags>dictionary,fruit,apple</tags>\
             <value>apple: stale edit.</value><base_version>7</base_version></action></agent>",
        ),
        content(
            "<agent><action><type>record_update</type><tags>dictionary,fruit,apple</tags>\
             <value>apple: a crisp fruit.</value><base_version>1</base_version></action></agent>",
        ),
        action("working_memory_add", "scratch,pad", Some("pad text to move to disk")),
        action("move_to_disk", "scratch,pad", None),
        action("archive_old", "dictionary,fruit,banana", None),
        action("storage_search", "dictionary,fruit", None),
        action("storage_search", "dictionary,fruit", None),
    ];
    let server = Server::llm(script, evaluate("script used up"));
    let d = data_dir("actions", &server.endpoint());
    let mut agent = open_agent(d.path());

    // working_memory_add: keys are normalised.
    let r = cycle(&mut agent);
    assert_eq!(only_action(&r), ("working_memory_add", true));
    assert_eq!(r.next_state.as_str(), "evaluating");
    assert_eq!(read_memory(d.path()).get("draft,notes"), Some("first draft of the fruit section"));

    // working_memory_remove really removes (the key and its text).
    let r = cycle(&mut agent);
    assert_eq!(only_action(&r), ("working_memory_remove", true));
    let m = read_memory(d.path());
    assert_eq!(m.get("draft,notes"), None);
    assert!(!m.wm.iter().any(|(_, v)| v.contains("first draft")), "{:?}", m);

    // storage_save, twice.
    let r = cycle(&mut agent);
    assert_eq!(only_action(&r), ("storage_save", true));
    assert!(store_log(d.path()).contains("apple: the round fruit of the apple tree."));
    let r = cycle(&mut agent);
    assert_eq!(only_action(&r), ("storage_save", true));
    assert_eq!(r.store_entries, 2);

    // storage_load copies the entry into working memory under its normalised key.
    let r = cycle(&mut agent);
    assert_eq!(only_action(&r), ("storage_load", true));
    assert_eq!(read_memory(d.path()).get("apple,dictionary,fruit"), Some("apple: the round fruit of the apple tree."));

    // storage_search writes the matching keys to search_results.
    let r = cycle(&mut agent);
    assert_eq!(only_action(&r), ("storage_search", true));
    let results = read_memory(d.path()).get("search_results").unwrap().to_string();
    assert!(results.contains("apple,dictionary,fruit") && results.contains("banana,dictionary,fruit"), "{}", results);

    // record_update with a stale base version fails, says so, and changes nothing.
    let r = cycle(&mut agent);
    assert_eq!(only_action(&r), ("record_update", false));
    assert_eq!(r.next_state.as_str(), "thinking", "a reply whose only action failed goes to thinking");
    let m = read_memory(d.path());
    assert!(newest_log(&m, "command_log_").contains("VERSION_CONFLICT"), "{:?}", m);
    assert!(!store_log(d.path()).contains("apple: stale edit."));
    // ... and with the right one it succeeds.
    let r = cycle(&mut agent);
    assert_eq!(only_action(&r), ("record_update", true));
    assert!(newest_log(&read_memory(d.path()), "command_log_").contains("version 2"));
    assert!(store_log(d.path()).contains("apple: a crisp fruit."));

    // move_to_disk: out of working memory, into the store.
    cycle(&mut agent);
    assert_eq!(read_memory(d.path()).get("pad,scratch"), Some("pad text to move to disk"));
    let r = cycle(&mut agent);
    assert_eq!(only_action(&r), ("move_to_disk", true));
    assert_eq!(read_memory(d.path()).get("pad,scratch"), None);
    assert!(store_log(d.path()).contains("pad text to move to disk"));
    assert_eq!(r.store_entries, 3);

    // archive: kept on disk, out of default search.
    let r = cycle(&mut agent);
    assert_eq!(only_action(&r), ("archive_old", true));
    let r = cycle(&mut agent);
    assert_eq!(only_action(&r), ("storage_search", true));
    let results = read_memory(d.path()).get("search_results").unwrap().to_string();
    assert!(results.contains("apple,dictionary,fruit"), "{}", results);
    assert!(!results.contains("banana"), "an archived entry showed in search: {}", results);
    assert!(store_log(d.path()).contains("banana: a long yellow fruit."));

    // The same action twice in a row is refused, and the model is told.
    let r = cycle(&mut agent);
    assert_eq!(only_action(&r), ("storage_search", false));
    assert!(newest_log(&read_memory(d.path()), "command_log_").contains("refused"));
}

/// A long note passes paging_limit: the next prompt is in `paging`; the model does not page,
/// so the agent moves entries to the store itself. Nothing is lost.
#[test]
fn paging_by_size_and_the_agent_pages_when_the_model_does_not() {
    let long: String = (0..60)
        .map(|i| format!("fact {:02}: apples keep for months when cool. ", i))
        .collect::<String>()
        .trim_end()
        .to_string();
    assert!(long.len() > 2400);
    let script = vec![
        think("commanding", "Write a long note."),
        action("working_memory_add", "long,note", Some(&long)),
        // In `paging`, the model ignores the request to page.
        think("thinking", "I would rather keep everything."),
        think("commanding", "Back to work."),
    ];
    let server = Server::llm(script, evaluate("script used up"));
    let d = data_dir("paging", &server.endpoint());
    let mut agent = open_agent(d.path());

    let r = cycle(&mut agent);
    // The limit sits just above this prompt, well below it plus the note (~800 tokens).
    agent.config.agent.paging_limit.enable = true;
    agent.config.agent.paging_limit.max_tokens = r.tokens_est + 300;
    let limit = agent.config.agent.paging_limit.max_tokens;

    let r = cycle(&mut agent);
    assert_eq!(only_action(&r), ("working_memory_add", true));
    assert_eq!(read_memory(d.path()).get("long,note"), Some(long.as_str()));
    let before = read_memory(d.path());

    let r = cycle(&mut agent);
    assert_eq!(r.state.as_str(), "paging", "the estimate passed paging_limit");
    assert!(r.tokens_est > limit);
    assert!(r.paged_out >= 1, "the agent should have paged out itself: {:?}", r);
    let prompts = server.prompts();
    assert!(prompts[2].contains("<current_state>paging</current_state>"), "{}", prompts[2]);
    assert!(prompts[2].contains(&long));

    let after = read_memory(d.path());
    assert_eq!(after.get("long,note"), None, "the long note should have left memory.json");
    assert!(store_log(d.path()).contains(&long), "the long note should be in store.log");
    // Nothing lost: every entry that left working memory is in the store with its text.
    for (k, v) in &before.wm {
        if after.get(k).is_none() {
            let key = lkjagent::memory::key::normalize(k).unwrap();
            assert_eq!(agent.store.load(&key, 0).unwrap(), Some(v.as_str()), "{} lost", k);
        }
    }
    assert!(after.get("task").is_some(), "task is pinned");

    // The next prompt is under the limit and no longer in paging.
    let r = cycle(&mut agent);
    assert_ne!(r.state.as_str(), "paging");
    assert!(r.tokens_est <= limit, "{} > {}", r.tokens_est, limit);
    assert!(!server.prompts()[3].contains(&long));
}

/// The server answers llama.cpp's context-overflow 400: the agent pages out and asks once more
/// with a smaller prompt.
#[test]
fn context_overflow_pages_out_and_retries_once() {
    let server = Server::llm(
        vec![Step::Http("400 Bad Request", LLAMA_CPP_OVERFLOW.to_string()), think("commanding", "Smaller now.")],
        evaluate("script used up"),
    );
    let d = data_dir("overflow", &server.endpoint());
    let notes: Vec<(String, String)> = (0..6)
        .map(|i| {
            (format!("note_{}", i), format!("note {} about fruit: {}", i, "pears ripen off the tree. ".repeat(12)))
        })
        .collect();
    let extra: Vec<(&str, &str)> = notes.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    write_memory(d.path(), "thinking", &extra);
    let mut agent = open_agent(d.path());

    let r = cycle(&mut agent);
    assert!(r.overflow_retried, "{:?}", r);
    assert!(r.paged_out >= 1, "{:?}", r);
    assert_eq!(r.next_state.as_str(), "commanding", "the retried request's reply was used");
    let chats = server.chats();
    assert_eq!(chats.len(), 2, "exactly one retry");
    assert!(
        chats[1].body.len() < chats[0].body.len(),
        "the retry should be smaller: {} vs {}",
        chats[1].body.len(),
        chats[0].body.len()
    );
    // What left the prompt is in the store, not lost.
    let m = read_memory(d.path());
    let gone: Vec<&(String, String)> = notes.iter().filter(|(k, _)| m.get(k).is_none()).collect();
    assert!(!gone.is_empty());
    let log = store_log(d.path());
    for (k, v) in gone {
        assert!(log.contains(v.as_str()), "{} was paged out but is not in store.log", k);
    }
}

/// Malformed replies: feedback in the next prompt; after invalid_reply_limit in a row a pause
/// and `thinking`.
#[test]
fn malformed_replies_get_feedback_and_a_back_off() {
    let server = Server::llm(vec![], content(MALFORMED));
    let d = data_dir("malformed", &server.endpoint());
    write_memory(d.path(), "evaluating", &[]);
    let mut agent = open_agent(d.path());
    let limit = agent.config.agent.invalid_reply_limit;
    assert_eq!(limit, 3);

    for i in 1..=limit {
        let r = cycle(&mut agent);
        assert!(r.invalid_reply, "{:?}", r);
        assert!(r.problems >= 1);
        let m = read_memory(d.path());
        if i < limit {
            assert_eq!(r.pause, Duration::ZERO);
            assert_eq!(m.state, "evaluating", "the state stays until the limit");
        } else {
            assert_eq!(r.pause, Duration::from_millis(300), "invalid_reply_backoff_ms");
            assert_eq!(m.state, "thinking", "back to thinking after the limit");
        }
    }
    let prompts = server.prompts();
    assert!(!prompts[0].contains("<feedback>"));
    for p in &prompts[1..] {
        let fb = p.split("<feedback>").nth(1).unwrap_or_else(|| panic!("no feedback in {}", p));
        // Says what was wrong, and shows the canonical form.
        assert!(fb.contains("<agent>"), "{}", fb);
        assert!(fb.len() > 40, "{}", fb);
    }
    // A good reply clears the feedback.
    drop(agent);
}

/// The binary under a server that never stops sending malformed replies: bounded request rate.
#[test]
fn malformed_replies_never_loop_tightly() {
    let server = Server::llm(vec![], content(MALFORMED));
    let d = TempDir::new("tight");
    write_config(d.path(), &server.endpoint(), |c| {
        set(c, "\"invalid_reply_backoff_ms\": 300", "\"invalid_reply_backoff_ms\": 500");
    });
    write_memory(d.path(), "evaluating", &[]);
    let child = lkjagent(["run", "--max-iterations", "-1"]).data(d.path()).spawn();
    // The window starts at the third invalid reply, which starts a 500 ms pause: then 3
    // replies, a pause, 3 more: at most 6 in 1200 ms (a tight loop would make thousands).
    assert!(server.wait_for_chats(3, Duration::from_secs(10)), "the first three requests never came");
    let first = server.chat_count();
    let window = Duration::from_millis(1200);
    std::thread::sleep(window);
    let seen = server.chat_count() - first;
    child.sigterm();
    let (status, out, err) = finished(child.wait_within(Duration::from_secs(10)));
    assert!(status.success(), "exit {:?}\n{}\n{}", status, out, err);
    assert!(seen >= 1, "the agent stopped asking after its pause:\n{}", out);
    assert!(seen <= 9, "{} requests in {:?}: a tight loop\n{}", seen, window, out);
    assert!(out.contains("invalid reply"), "{}", out);
    assert_eq!(read_memory(d.path()).state, "thinking");
}

/// The server is down when the run starts: a clear message, retries, and recovery once it is up.
#[test]
fn server_down_at_start_then_recovers() {
    let port = free_port();
    let d = data_dir("down", &format!("http://127.0.0.1:{}/v1/chat/completions", port));
    let mut child = lkjagent(["run", "--max-iterations", "2"]).data(d.path()).spawn();
    // Down for two failed cycles (1 s, then 2 s of back-off), seen in the audit log.
    let audit = d.path().join("logs").join("audit.jsonl");
    let end = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&audit).map_or(0, |a| a.lines().count()) < 2 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(child.is_running(), "lkjagent gave up while the server was down");
    let server = Server::start_on(
        ("127.0.0.1", port),
        llm_script(
            vec![think("commanding", "Up again."), action("storage_save", "a,b", Some("x"))],
            evaluate("used up"),
        ),
    )
    .unwrap();
    let (status, out, err) = finished(child.wait_within(Duration::from_secs(20)));
    assert!(status.success(), "exit {:?}\n{}\n{}", status, out, err);
    assert!(out.contains("is not answering"), "{}", out);
    assert!(out.contains("keep retrying"), "{}", out);
    assert!(out.contains("retrying in 1 s"), "a failed cycle says when it retries:\n{}", out);
    assert!(out.contains("retrying in 2 s"), "the back-off doubles:\n{}", out);
    assert!(out.contains("LLM_UNAVAILABLE"), "{}", out);
    assert!(out.contains("2 cycle(s) done"), "{}", out);
    assert_eq!(server.chat_count(), 2);
    let m = read_memory(d.path());
    assert_eq!((m.state.as_str(), m.iteration), ("evaluating", 2));
}

/// A reply the client cannot hold (a body of more JSON values than it reads) fails its cycle,
/// which is retried after the back-off: the run goes on. Only a prompt over the budget ends a
/// run, since waiting does not change that.
#[test]
fn a_reply_over_a_reading_capacity_fails_its_cycle_and_the_run_goes_on() {
    let values = "0,".repeat(lkjagent::limits::LLM_MAX_JSON_NODES);
    let body = format!(
        r#"{{"choices":[{{"index":0,"message":{{"role":"assistant","content":"x"}},"finish_reason":"stop"}}],"padding":[{values}0]}}"#
    );
    let server = Server::llm(vec![Step::Http("200 OK", body), think("commanding", "Go on.")], evaluate("done"));
    let d = data_dir("reply-capacity", &server.endpoint());
    let child = lkjagent(["run", "--max-iterations", "2"]).data(d.path()).spawn();
    let (status, out, err) = finished(child.wait_within(Duration::from_secs(20)));
    assert!(status.success(), "exit {:?}\n{}\n{}", status, out, err);
    assert!(out.contains("CAPACITY_EXCEEDED"), "the failed cycle says why:\n{}", out);
    assert!(out.contains("retrying in 1 s"), "{}", out);
    assert!(out.contains("2 cycle(s) done"), "{}", out);
    assert_eq!(server.chat_count(), 3, "the failed request, then one a cycle");
    let m = read_memory(d.path());
    assert_eq!((m.state.as_str(), m.iteration), ("thinking", 2));
}

/// SIGTERM while the model is still thinking: exit 0 at once, memory.json intact.
#[test]
fn sigterm_during_a_request_exits_cleanly() {
    let server = Server::llm(vec![think("commanding", "First cycle.")], Step::Silence(Duration::from_secs(30)));
    let d = data_dir("sigterm", &server.endpoint());
    let child = lkjagent(["run", "--max-iterations", "5"]).data(d.path()).spawn();
    assert!(server.wait_for_chats(2, Duration::from_secs(10)), "the second request never came");
    let before = read_memory(d.path());
    assert_eq!((before.state.as_str(), before.iteration), ("commanding", 1));
    let sent = Instant::now();
    child.sigterm();
    let o = child.wait_within(Duration::from_secs(5));
    let took = sent.elapsed();
    let (status, out, err) = finished(o);
    assert!(status.success(), "exit {:?}\n{}\n{}", status, out, err);
    assert!(took < Duration::from_secs(3), "took {:?} to stop", took);
    assert!(out.contains("stopped by signal"), "{}", out);
    assert_eq!(read_memory(d.path()), before, "memory.json changed by an interrupted cycle");
    assert_eq!(server.chat_count(), 2);
}

/// Two SIGTERMs: the second ends the process at once; memory.json is still whole.
#[test]
fn second_sigterm_exits_at_once() {
    let server = Server::llm(vec![], Step::Silence(Duration::from_secs(30)));
    let d = data_dir("sigterm2", &server.endpoint());
    let child = lkjagent(["run", "--max-iterations", "5"]).data(d.path()).spawn();
    assert!(server.wait_for_chats(1, Duration::from_secs(10)));
    child.sigterm();
    child.sigterm();
    let (status, out, err) = finished(child.wait_within(Duration::from_secs(3)));
    // 130 when the second signal won; 0 when the first had already finished the run.
    assert!(matches!(status.code(), Some(0) | Some(130)), "exit {:?}\n{}\n{}", status, out, err);
    let m = read_memory(d.path());
    assert_eq!((m.state.as_str(), m.iteration), ("thinking", 0));
}

/// A memory.json that already has `working_memory_meta`, for the replay tests.
const DICTIONARY_MEMORY: &str = r#"{"state": "thinking", "iteration": 0, "working_memory": {"task": "Dictionary."},
           "working_memory_meta": {"task": {"created": 1700000000, "updated": 1700000000, "hits": 0}}}"#;

/// The exchange log directory (`logs/exchange-<run>`) of the one recorded run in `data`.
fn exchange_log_dir(data: &Path) -> PathBuf {
    std::fs::read_dir(data.join("logs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("exchange-"))
        .expect("no exchange log directory")
}

/// The lines at which a recorded and a replayed memory.json differ, side by side.
fn differing_lines(recorded: &str, replayed: &str) -> Vec<String> {
    recorded
        .lines()
        .zip(replayed.lines())
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("recorded: {} / replayed: {}", a.trim(), b.trim()))
        .collect()
}

/// Records a run (`run --exchange-log`) from `memory_json`, waits `pause`, replays it with
/// `--expect`, and returns the replay's stdout, whether it exited 0, and the lines of
/// memory.json that differ (recorded, replayed).
fn record_then_replay(tag: &str, memory_json: &str, pause: Duration) -> (String, bool, Vec<String>) {
    let script = vec![
        think("commanding", "Start."),
        action("storage_save", "dictionary,fruit,apple", Some("apple: a fruit.")),
        evaluate("Saved."),
        content(MALFORMED),
        Step::Http("400 Bad Request", LLAMA_CPP_OVERFLOW.to_string()),
        think("commanding", "Again."),
        action("working_memory_add", "plan", Some("fruit, then vegetables")),
        evaluate("Plan written."),
    ];
    let server = Server::llm(script, evaluate("used up"));
    let d = data_dir(tag, &server.endpoint());
    std::fs::write(d.path().join("memory.json"), memory_json).unwrap();
    let child = lkjagent(["run", "--max-iterations", "7", "--exchange-log"]).data(d.path()).spawn();
    let (status, out, err) = finished(child.wait_within(Duration::from_secs(20)));
    assert!(status.success(), "exit {:?}\n{}\n{}", status, out, err);
    assert!(out.contains("context overflow"), "{}", out);
    assert!(out.contains("invalid reply"), "{}", out);
    assert_eq!(server.chat_count(), 8);
    drop(server); // the replay needs no server

    let exchange = exchange_log_dir(d.path());
    std::thread::sleep(pause);
    let expect = d.path().join("memory.json");
    let child = lkjagent(["replay"]).arg(&exchange).arg("--expect").arg(&expect).data(d.path()).spawn();
    let (status, out, err) = finished(child.wait_within(Duration::from_secs(20)));
    assert!(!out.contains("DIFFERS") || !status.success(), "a difference must fail the command");
    assert!(status.success() || out.contains("DIFFERS"), "replay failed:\n{}\n{}", out, err);
    let replayed = std::fs::read_to_string(exchange.join("replayed").join("memory.json")).unwrap();
    let recorded = std::fs::read_to_string(&expect).unwrap();
    let mut diff = differing_lines(&recorded, &replayed);
    if recorded.lines().count() != replayed.lines().count() {
        diff.push("different line counts".to_string());
    }
    assert_eq!(diff.is_empty(), recorded == replayed);
    (out, status.success(), diff)
}

/// A memory.json the agent wrote itself (with `working_memory_meta`): `replay` reproduces it
/// byte for byte, with an overflow retry, a malformed reply and every kind of cycle in the
/// recording, even when the replay runs in a later second.
#[test]
fn replay_reproduces_a_recorded_run() {
    let start = r#"{
  "state": "thinking",
  "iteration": 0,
  "working_memory": {
    "task": "Build a small dictionary.",
    "old_note": "an older note that can be paged out"
  },
  "working_memory_meta": {
    "task": { "created": 1700000000, "updated": 1700000000, "hits": 0 },
    "old_note": { "created": 1700000001, "updated": 1700000001, "hits": 0 }
  }
}"#;
    let (out, ok, diff) = record_then_replay("replay", start, Duration::from_millis(1100));
    assert!(ok && diff.is_empty(), "replay differs:\n{}\n{}", diff.join("\n"), out);
    assert!(out.contains("identical to"), "{}", out);
}

/// The shipped memory.json has no `working_memory_meta`: loading it stamps each entry with the
/// clock at `Agent::open`. `replay` must open at the recorded clock, not its own, or a replay
/// in a later second differs in `created`/`updated` of the entries never rewritten (`task`).
#[test]
fn replay_reproduces_a_run_started_from_the_shipped_memory() {
    let (out, ok, diff) = record_then_replay("replay-shipped", &shipped("memory.json"), Duration::from_millis(1100));
    assert!(ok && diff.is_empty(), "replay differs:\n{}\n{}", diff.join("\n"), out);
}

/// A message queued with `agent::inbox::send` is the `user_request` of the next prompt, once.
#[test]
fn inbox_message_becomes_the_user_request() {
    let server = Server::llm(
        vec![think("commanding", "Nothing yet."), think("commanding", "A request came in."), evaluate("ok")],
        evaluate("used up"),
    );
    let d = data_dir("inbox", &server.endpoint());
    let mut agent = open_agent(d.path());
    cycle(&mut agent);
    assert!(!server.prompts()[0].contains("user_request"));

    lkjagent::agent::inbox::send(d.path(), "Please add pear to the dictionary.", 1_700_000_000).unwrap();
    cycle(&mut agent);
    let p = &server.prompts()[1];
    let at = p.find("user_request").unwrap_or_else(|| panic!("no user_request in {}", p));
    assert!(p[at..].contains("Please add pear to the dictionary."), "{}", p);
    assert_eq!(read_memory(d.path()).get("user_request"), Some("Please add pear to the dictionary."));

    // Taken once: the next cycle does not add it again.
    cycle(&mut agent);
    assert_eq!(server.prompts()[2].matches("Please add pear").count(), 1);
    assert_eq!(read_memory(d.path()).get("user_request"), Some("Please add pear to the dictionary."));
}

// ----- edges ---------------------------------------------------------------------------------

/// A server that answers every request with a context overflow: one retry, then the cycle
/// fails with CONTEXT_OVERFLOW; no third request, nothing lost.
#[test]
fn context_overflow_twice_fails_the_cycle_after_one_retry() {
    let server = Server::llm(vec![], Step::Http("400 Bad Request", LLAMA_CPP_OVERFLOW.to_string()));
    let d = data_dir("overflow2", &server.endpoint());
    write_memory(d.path(), "thinking", &[("note_a", "first note about pears"), ("note_b", "second note about plums")]);
    let mut agent = open_agent(d.path());
    let r = agent.cycle(&mut |_| {}, &|| false).unwrap();
    assert_eq!(r.error.as_ref().map(|e| e.code().as_str()), Some("CONTEXT_OVERFLOW"), "{:?}", r);
    assert!(r.overflow_retried);
    assert_eq!(server.chat_count(), 2, "one retry, no more");
    let m = read_memory(d.path());
    assert_eq!(m.iteration, 0, "a failed cycle is not an iteration");
    let log = store_log(d.path());
    for (k, v) in [("note_a", "first note about pears"), ("note_b", "second note about plums")] {
        assert!(m.get(k) == Some(v) || log.contains(v), "{} lost", k);
    }
}

/// Working memory far above hard_limit at start: the agent pages out before the first request,
/// so the first prompt is within the paging target.
#[test]
fn oversized_memory_is_paged_before_the_first_request() {
    let server = Server::llm(vec![think("commanding", "Lighter now.")], evaluate("used up"));
    let d = data_dir("oversized", &server.endpoint());
    let notes: Vec<(String, String)> = (0..20)
        .map(|i| (format!("note_{:02}", i), format!("note {}: {}", i, "plums are stone fruit. ".repeat(45))))
        .collect();
    let extra: Vec<(&str, &str)> = notes.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    write_memory(d.path(), "thinking", &extra);
    let mut agent = open_agent(d.path());
    let hard = agent.config.agent.hard_limit.max_tokens;
    let paging = agent.config.agent.paging_limit.max_tokens;
    let total: usize = notes.iter().map(|(_, v)| v.len()).sum();
    assert!(agent.estimate(total) > hard, "the test needs memory above hard_limit");

    let r = cycle(&mut agent);
    assert!(r.paged_out >= 1, "{:?}", r);
    assert!(r.tokens_est <= paging, "prompt estimate {} above paging_limit {}", r.tokens_est, paging);
    let prompt = &server.prompts()[0];
    assert!(agent.estimate(prompt.len()) <= paging);
    // Nothing lost: every note is in working memory or in the store.
    let m = read_memory(d.path());
    let log = store_log(d.path());
    for (k, v) in &notes {
        assert!(m.get(k) == Some(v.as_str()) || log.contains(v.as_str()), "{} lost", k);
    }
    assert!(m.get("task").is_some());
}

/// `next_state` must be a configured state: `base` and unknown names go to `thinking`, said in
/// command_log; `executing` is an alias of `commanding`.
#[test]
fn next_state_is_validated() {
    let server = Server::llm(
        vec![think("base", "Try base."), think("dancing", "Try a made-up state."), think("executing", "Alias.")],
        evaluate("used up"),
    );
    let d = data_dir("nextstate", &server.endpoint());
    let mut agent = open_agent(d.path());
    let r = cycle(&mut agent);
    assert_eq!(r.next_state.as_str(), "thinking", "base is not a state");
    assert!(newest_log(&read_memory(d.path()), "command_log_").contains("not a state"));
    let r = cycle(&mut agent);
    assert_eq!(r.next_state.as_str(), "thinking");
    assert!(newest_log(&read_memory(d.path()), "command_log_").contains("dancing"));
    let r = cycle(&mut agent);
    assert_eq!(r.next_state.as_str(), "commanding", "executing is commanding");
}

/// A reasoning model that spends the reply on reasoning: the feedback says so.
#[test]
fn reasoning_only_reply_is_fed_back() {
    let server = Server::llm(
        vec![Step::ReasoningOnly("Let me think about apples for a long time...".into()), think("commanding", "ok")],
        evaluate("used up"),
    );
    let d = data_dir("reasoning", &server.endpoint());
    let mut agent = open_agent(d.path());
    let r = cycle(&mut agent);
    assert!(r.invalid_reply);
    let r = cycle(&mut agent);
    assert!(!r.invalid_reply);
    let p = &server.prompts()[1];
    let fb = p.split("<feedback>").nth(1).unwrap_or_else(|| panic!("no feedback: {}", p));
    assert!(fb.contains("reasoning"), "{}", fb);
    // The reasoning itself never reaches working memory.
    assert!(!std::fs::read_to_string(d.path().join("memory.json")).unwrap().contains("apples for a long time"));
    // A good reply clears the feedback.
    let _ = cycle(&mut agent);
    assert!(!server.prompts()[2].contains("<feedback>"));
}

/// 5xx answers are retried a bounded number of times (llm.retry.max_retries), then the cycle
/// fails with a clear code and the next one works.
#[test]
fn server_errors_are_retried_boundedly() {
    let busy = Step::Http("503 Service Unavailable", r#"{"error":{"message":"loading model"}}"#.to_string());
    let server = Server::llm(vec![busy.clone(), busy, think("commanding", "ok")], evaluate("used up"));
    let d = data_dir("busy", &server.endpoint());
    let mut agent = open_agent(d.path());
    let r = agent.cycle(&mut |_| {}, &|| false).unwrap();
    let code = r.error.as_ref().map(|e| e.code().as_str());
    assert!(matches!(code, Some("LLM_UNAVAILABLE") | Some("LLM_ERROR")), "{:?}", r.error);
    assert_eq!(server.chat_count(), 2, "max_retries 1: two attempts");
    assert_eq!(read_memory(d.path()).iteration, 0);
    let r = cycle(&mut agent);
    assert_eq!(r.next_state.as_str(), "commanding");
    assert_eq!(read_memory(d.path()).iteration, 1);
}

/// A model that never answers within read_timeout_ms: LLM_TIMEOUT, bounded.
#[test]
fn a_silent_server_times_out() {
    let server = Server::llm(vec![], Step::Silence(Duration::from_secs(5)));
    let d = TempDir::new("timeout");
    write_config(d.path(), &server.endpoint(), |c| set(c, "\"read_timeout_ms\": 20000", "\"read_timeout_ms\": 300"));
    write_memory(d.path(), "thinking", &[]);
    let mut agent = open_agent(d.path());
    let t = Instant::now();
    let r = agent.cycle(&mut |_| {}, &|| false).unwrap();
    assert_eq!(r.error.as_ref().map(|e| e.code().as_str()), Some("LLM_TIMEOUT"), "{:?}", r.error);
    assert!(t.elapsed() < Duration::from_secs(4), "took {:?}", t.elapsed());
    assert!(server.chat_count() <= 2);
}

/// In `paging`, a model that answers with something unusable has not paged either: the
/// agent pages out itself rather than keep the oversized prompt for another cycle.
#[test]
fn paging_with_an_invalid_reply_still_pages() {
    let long: String = "plums keep for weeks when cool. ".repeat(80).trim_end().to_string();
    let server = Server::llm(
        vec![think("commanding", "Write a long note."), action("working_memory_add", "long,note", Some(&long))],
        content(MALFORMED),
    );
    let d = data_dir("paging-invalid", &server.endpoint());
    let mut agent = open_agent(d.path());
    let r = cycle(&mut agent);
    agent.config.agent.paging_limit.max_tokens = r.tokens_est + 300;
    cycle(&mut agent);
    let r = cycle(&mut agent);
    assert_eq!(r.state.as_str(), "paging");
    assert!(r.invalid_reply);
    assert!(r.paged_out >= 1, "the model did not page and the agent did not either: {:?}", r);
    assert!(store_log(d.path()).contains(&long));
}

/// The first SIGTERM abandons the wait for the model; the interrupted cycle leaves memory.json
/// as the last completed cycle wrote it but for the time of the last cycle (`agent.last_cycle`):
/// state, iteration, working memory and its metadata are byte for byte the same, and a stop the
/// user asked for is not recorded as an error.
#[test]
fn sigterm_leaves_memory_json_unchanged_but_for_the_cycle_time() {
    let server = Server::llm(vec![think("commanding", "First cycle.")], Step::Silence(Duration::from_secs(30)));
    let d = data_dir("sigterm-bytes", &server.endpoint());
    let child = lkjagent(["run", "--max-iterations", "5"]).data(d.path()).spawn();
    assert!(server.wait_for_chats(2, Duration::from_secs(10)), "the second request never came");
    let before = std::fs::read_to_string(d.path().join("memory.json")).unwrap();
    child.sigterm();
    let status = child.wait_within(Duration::from_secs(5)).status;
    assert!(status.success());
    let after = std::fs::read_to_string(d.path().join("memory.json")).unwrap();
    let lines = |t: &str| -> Vec<String> {
        t.lines().filter(|l| !l.contains("\"last_cycle\"")).map(|l| l.trim_end_matches(',').to_string()).collect()
    };
    assert_eq!(lines(&before), lines(&after), "memory.json changed beyond last_cycle");
    assert!(!after.contains("INTERRUPTED") && !after.contains("last_error"), "a stop is not an error: {}", after);
}

/// The inbox is taken even when the server is down: the request is kept in working memory
/// and shown once the server answers.
#[test]
fn inbox_survives_a_failed_cycle() {
    let server = Server::llm(
        vec![Step::Http("503 Service Unavailable", "{}".into()), Step::Http("503 Service Unavailable", "{}".into())],
        think("commanding", "Got it."),
    );
    let d = data_dir("inbox-down", &server.endpoint());
    let mut agent = open_agent(d.path());
    lkjagent::agent::inbox::send(d.path(), "Add cherry.", 1_700_000_000).unwrap();
    let r = agent.cycle(&mut |_| {}, &|| false).unwrap();
    assert!(r.error.is_some());
    assert_eq!(read_memory(d.path()).get("user_request"), Some("Add cherry."), "the request is persisted");
    cycle(&mut agent);
    let prompts = server.prompts();
    assert!(prompts.last().unwrap().contains("Add cherry."));
    assert_eq!(prompts.last().unwrap().matches("Add cherry.").count(), 1);
}

/// `llm.system_prompt: true`: the prompt head (base and state prompts) goes as a system message,
/// the rest as the user's.
#[test]
fn system_prompt_splits_the_base_prompt() {
    let server = Server::llm(vec![think("commanding", "ok")], evaluate("used up"));
    let d = TempDir::new("system");
    write_config(d.path(), &server.endpoint(), |c| set(c, "\"system_prompt\": false", "\"system_prompt\": true"));
    write_memory(d.path(), "thinking", &[]);
    let mut agent = open_agent(d.path());
    cycle(&mut agent);
    let body = server.chats()[0].body_str().to_string();
    let mut doc = Document::with_capacity(1024, 1 << 20);
    doc.parse(body.as_bytes()).unwrap();
    let msgs = doc.root().get("messages").unwrap();
    assert_eq!(msgs.len(), 2, "{}", body);
    assert_eq!(msgs.at(0).unwrap().get("role").unwrap().as_str(), Some("system"));
    assert_eq!(msgs.at(1).unwrap().get("role").unwrap().as_str(), Some("user"));
    let system = msgs.at(0).unwrap().get("content").unwrap().as_str().unwrap();
    let user = msgs.at(1).unwrap().get("content").unwrap().as_str().unwrap();
    assert!(system.contains("<purpose>") && !system.contains("<working_memory>"), "{}", system);
    // Working memory first, then the product view (it grows at its end), then the ask.
    assert!(user.starts_with("<working_memory>\n") && user.contains("</working_memory>\n<product>\n"), "{}", user);
    assert!(doc.root().get("model").unwrap().as_str() == Some("qwen/qwen3-8b"));
}

/// One action per cycle by default: a reply with two runs the first and says the rest was
/// dropped.
#[test]
fn extra_actions_past_the_limit_are_not_run() {
    let server = Server::llm(
        vec![content(
            "<agent><action><type>storage_save</type><tags>a,one</tags><value>first</value></action>\
             <action><type>storage_save</type><tags>b,two</tags><value>second</value></action></agent>",
        )],
        evaluate("used up"),
    );
    let d = data_dir("two-actions", &server.endpoint());
    let mut agent = open_agent(d.path());
    let r = cycle(&mut agent);
    assert_eq!(only_action(&r), ("storage_save", true));
    assert_eq!(r.store_entries, 1);
    assert!(store_log(d.path()).contains("first") && !store_log(d.path()).contains("second"));
}

/// `llm.stream: true`: the reply arrives as Server-Sent Events, progress is reported piece by
/// piece, and the cycle is the same as unstreamed.
#[test]
fn streamed_replies_drive_the_same_cycle() {
    let server = Server::llm(
        vec![
            think("commanding", "Streamed thinking, with an entity &amp; a non-ASCII word: café."),
            action("storage_save", "dictionary,fruit,fig", Some("fig: a soft sweet fruit.")),
        ],
        evaluate("used up"),
    );
    let d = TempDir::new("stream");
    write_config(d.path(), &server.endpoint(), |c| set(c, "\"stream\": false", "\"stream\": true"));
    write_memory(d.path(), "thinking", &[]);
    let mut agent = open_agent(d.path());
    let mut pieces = 0u64;
    let r = agent.cycle(&mut |n| pieces = n, &|| false).unwrap();
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(pieces >= 4, "progress saw {} pieces", pieces);
    assert_eq!(r.next_state.as_str(), "commanding");
    assert_eq!(r.usage, Some((500, 40)));
    assert!(newest_log(&read_memory(d.path()), "think_log_").contains("café"));
    assert!(server.chats()[0].body_str().contains("\"stream\":true"));
    let r = cycle(&mut agent);
    assert_eq!(only_action(&r), ("storage_save", true));
    assert!(store_log(d.path()).contains("fig: a soft sweet fruit."));
}

/// A recorded run with an inbox message in the middle replays byte for byte: the recording
/// carries the request, and the replay does not read the (now empty) inbox.
#[test]
fn replay_carries_the_inbox() {
    let server = Server::llm(
        vec![
            think("commanding", "Start."),
            think("commanding", "A request."),
            action("storage_save", "pear", Some("pear: a fruit.")),
        ],
        evaluate("used up"),
    );
    let d = data_dir("replay-inbox", &server.endpoint());
    std::fs::write(d.path().join("memory.json"), DICTIONARY_MEMORY).unwrap();
    let config = config::load(d.path()).unwrap();
    let client = llm::Client::new(&config.llm).unwrap();
    let mut agent = Agent::open(d.path(), config, Model::Client(Box::new(client)), true).unwrap();
    let exchange = agent.exchange_dir().unwrap().to_path_buf();
    cycle(&mut agent);
    lkjagent::agent::inbox::send(d.path(), "Please add pear.", 1_700_000_000).unwrap();
    cycle(&mut agent);
    cycle(&mut agent);
    drop(agent);
    assert!(server.prompts()[1].contains("Please add pear."));
    drop(server);
    std::thread::sleep(Duration::from_millis(1100));
    let expect = d.path().join("memory.json");
    let child = lkjagent(["replay"]).arg(&exchange).arg("--expect").arg(&expect).data(d.path()).spawn();
    let (status, out, err) = finished(child.wait_within(Duration::from_secs(20)));
    assert!(status.success(), "exit {:?}\n{}\n{}", status, out, err);
    assert!(out.contains("identical to"), "{}", out);
    let replayed = read_memory(&exchange.join("replayed"));
    assert_eq!(replayed.get("user_request"), Some("Please add pear."));
}

/// `lkjagent send` while `lkjagent run` is running: the message is the next cycle's
/// user_request; `status` answers meanwhile; a second `run` is refused.
#[test]
fn send_to_a_running_agent() {
    let server = Server::llm(
        vec![think("commanding", "Waiting for work."), think("commanding", "Got the request.")],
        evaluate("used up"),
    );
    let d = TempDir::new("send");
    write_config(d.path(), &server.endpoint(), |c| set(c, "\"delay_ms\": 0", "\"delay_ms\": 800"));
    write_memory(d.path(), "thinking", &[]);
    let child = lkjagent(["run", "--max-iterations", "2"]).data(d.path()).spawn();
    assert!(server.wait_for_chats(1, Duration::from_secs(10)));
    let sent = lkjagent(["send", "Please add quince."]).data(d.path()).output();
    assert!(sent.status.success(), "send: {:?}\n{}", sent.status, String::from_utf8_lossy(&sent.stderr));
    let status = lkjagent(["status"]).data(d.path()).output();
    assert!(status.status.success(), "status: {}", String::from_utf8_lossy(&status.stderr));
    // One agent per data directory: a second run is refused at once.
    let second = lkjagent(["run", "--max-iterations", "1"]).data(d.path()).output();
    assert_eq!(second.status.code(), Some(1), "a second agent: {:?}", second);
    let (s, out, err) = finished(child.wait_within(Duration::from_secs(20)));
    assert!(s.success(), "exit {:?}\n{}\n{}", s, out, err);
    let prompts = server.prompts();
    assert_eq!(prompts.len(), 2);
    assert!(!prompts[0].contains("quince"));
    assert!(prompts[1].contains("Please add quince."), "{}", prompts[1]);
}

/// A line of `inbox.taken` that is not a message (a torn `send`, then a crash) used to jam the
/// inbox for good: a warning every cycle, no message taken again. It is set aside in
/// `inbox.bad-<unix seconds>` with one warning naming that file, and the waiting message is the
/// first cycle's user_request.
#[test]
fn a_bad_inbox_line_is_set_aside_and_the_inbox_works_on() {
    let server = Server::llm(
        vec![think("commanding", "Got the request."), think("commanding", "Working on it.")],
        evaluate("used up"),
    );
    let d = TempDir::new("inbox-bad");
    write_config(d.path(), &server.endpoint(), |_| {});
    write_memory(d.path(), "thinking", &[]);
    let torn = "{\"time\":1,\"text\":\"half a mess";
    std::fs::write(d.path().join("inbox.taken"), format!("{}\n", torn)).unwrap();
    let sent = lkjagent(["send", "Please add quince."]).data(d.path()).output();
    assert!(sent.status.success(), "send: {}", String::from_utf8_lossy(&sent.stderr));

    let o = lkjagent(["run", "--max-iterations", "2"]).data(d.path()).output();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "run: {:?}\n{}", o.status, err);
    let prompts = server.prompts();
    assert_eq!(prompts.len(), 2, "{}", err);
    assert!(prompts[0].contains("Please add quince."), "not taken in the first cycle: {}", prompts[0]);
    assert_eq!(prompts[1].matches("Please add quince.").count(), 1);

    // Set aside where the user finds it, byte for byte, with one warning that names the file.
    let bad: Vec<PathBuf> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("inbox.bad-"))
        .collect();
    assert_eq!(bad.len(), 1, "one inbox.bad-<seconds> file expected: {:?}\n{}", bad, err);
    assert_eq!(std::fs::read_to_string(&bad[0]).unwrap(), format!("{}\n", torn));
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("inbox")).collect();
    assert_eq!(warnings.len(), 1, "one warning about the inbox expected:\n{}", err);
    let name = bad[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(warnings[0].contains("\"warning\"") && warnings[0].contains(&name), "{}", warnings[0]);
    assert!(!d.path().join("inbox.taken").exists() && !d.path().join("inbox").exists());
}

/// A `logs` entry that is not a usable directory is named, with what to do: a dangling
/// symbolic link used to be refused as "cannot create .../exchange-<run>/start: File exists"
/// (or ".../logs: File exists" without the exchange log). A link to a directory is used.
#[test]
fn a_logs_entry_that_is_no_directory_is_named_with_what_to_do() {
    let d = TempDir::new("logs-link");
    write_config(d.path(), "http://127.0.0.1:9/v1/chat/completions", |c| {
        set(c, "\"provider\": \"openai\"", "\"provider\": \"replay\", \"replay_path\": \"demo.jsonl\"")
    });
    std::fs::write(d.path().join("demo.jsonl"), shipped("demo.jsonl")).unwrap();
    std::fs::write(d.path().join("memory.json"), shipped("memory.json")).unwrap();
    let logs = d.path().join("logs");
    let target = d.path().join("elsewhere");
    std::os::unix::fs::symlink(&target, &logs).unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--max-iterations", "1"];
        args.extend_from_slice(extra);
        let o = lkjagent(&args).data(d.path()).output();
        (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    for extra in [&[][..], &["--exchange-log"][..]] {
        let (code, err) = run(extra);
        assert_eq!(code, Some(1), "{:?}: {}", extra, err);
        let says = format!("{} is a symbolic link to {}, which does not exist", logs.display(), target.display());
        assert!(err.contains(&says), "{:?}: want '{}' in\n{}", extra, says, err);
        assert!(err.contains("remove the link or point it at a directory"), "{:?}: {}", extra, err);
        assert!(!err.contains("File exists"), "{:?}: {}", extra, err);
    }

    // A plain file there is named too.
    std::fs::remove_file(&logs).unwrap();
    std::fs::write(&logs, "not a directory").unwrap();
    let (code, err) = run(&["--exchange-log"]);
    assert_eq!(code, Some(1), "{}", err);
    assert!(err.contains(&format!("{} is a file, not a directory", logs.display())), "{}", err);
    assert!(err.contains("move it away"), "{}", err);

    // A link to a directory is used as the logs directory.
    std::fs::remove_file(&logs).unwrap();
    std::os::unix::fs::symlink(&target, &logs).unwrap();
    std::fs::create_dir(&target).unwrap();
    let (code, err) = run(&["--exchange-log"]);
    assert_eq!(code, Some(0), "{}", err);
    assert!(target.join("audit.jsonl").is_file(), "{}", err);
    let exchanges = std::fs::read_dir(&target)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with("exchange-"));
    assert_eq!(exchanges.count(), 1);
}

/// The audit log: one JSON line per cycle whose prompt SHA-256 and size are those of the
/// prompt the server received, with the actions and their results, and the error of a failed
/// cycle.
#[test]
fn audit_log_matches_what_was_sent() {
    let server = Server::llm(
        vec![
            think("commanding", "Start."),
            action("storage_save", "dictionary,fruit,kiwi", Some("kiwi: a fuzzy fruit.")),
            Step::Http("503 Service Unavailable", "{}".into()),
            Step::Http("503 Service Unavailable", "{}".into()),
            evaluate("Saved."),
        ],
        evaluate("used up"),
    );
    let d = data_dir("audit", &server.endpoint());
    let mut agent = open_agent(d.path());
    cycle(&mut agent);
    cycle(&mut agent);
    let failed = agent.cycle(&mut |_| {}, &|| false).unwrap();
    assert!(failed.error.is_some());
    cycle(&mut agent);
    let run_id = agent.run_id().to_string();
    drop(agent);

    let audit = std::fs::read_to_string(d.path().join("logs").join("audit.jsonl")).unwrap();
    let lines: Vec<&str> = audit.lines().collect();
    assert_eq!(lines.len(), 4, "{}", audit);
    // The prompts of cycles 1, 2, 3 (the last of its two attempts) and 4.
    let prompts = server.prompts();
    assert_eq!(prompts.len(), 5);
    let sent = [&prompts[0], &prompts[1], &prompts[3], &prompts[4]];
    // A failed cycle is not an iteration: the cycle after it has the same number.
    let cycles = [1u64, 2, 3, 3];
    for (i, (line, prompt)) in lines.iter().zip(sent).enumerate() {
        let mut doc = Document::with_capacity(512, 64 * 1024);
        doc.parse(line.as_bytes()).unwrap_or_else(|e| panic!("audit line {} is not JSON: {:?}", i + 1, e));
        let root = doc.root();
        let hex: String =
            lkjagent::sha256::Sha256::digest(prompt.as_bytes()).iter().map(|b| format!("{:02x}", b)).collect();
        assert_eq!(root.get("prompt_sha256").and_then(|v| v.as_str()), Some(hex.as_str()), "line {}", i + 1);
        assert_eq!(root.get("prompt_bytes").and_then(|v| v.as_u64()), Some(prompt.len() as u64));
        assert_eq!(root.get("run").and_then(|v| v.as_str()), Some(run_id.as_str()));
        assert_eq!(root.get("cycle").and_then(|v| v.as_u64()), Some(cycles[i]), "line {}", i + 1);
    }
    assert!(lines[1].contains("\"storage_save\"") && lines[1].contains("kiwi"), "{}", lines[1]);
    assert!(lines[2].contains("LLM_"), "the failed cycle's error code: {}", lines[2]);
}

/// Pinned entries (`task`) that alone pass the budget cannot be paged out; the prompt must
/// still never pass the context window: the cycle should fail clearly rather than send it.
#[test]
fn a_task_larger_than_the_context_is_not_sent() {
    let server = Server::llm(vec![], think("commanding", "ok"));
    let d = data_dir("huge-task", &server.endpoint());
    let task = "Describe every fruit in the world in detail. ".repeat(700);
    std::fs::write(
        d.path().join("memory.json"),
        format!(r#"{{"state": "thinking", "iteration": 0, "working_memory": {{"task": "{}"}}}}"#, task.trim_end()),
    )
    .unwrap();
    let mut agent = open_agent(d.path());
    let budget = agent.budget();
    assert!(agent.estimate(task.len()) > budget);
    let r = agent.cycle(&mut |_| {}, &|| false).unwrap();
    let sent: Vec<usize> = server.prompts().iter().map(|p| p.len()).collect();
    for len in &sent {
        assert!(
            agent.estimate(*len) <= budget,
            "a prompt of ~{} tokens was sent; the budget is {} (report: {:?})",
            agent.estimate(*len),
            budget,
            r
        );
    }
    assert!(sent.is_empty(), "nothing should be sent: {:?}", sent);
    let e = r.error.as_ref().expect("the cycle should fail with a clear error");
    assert_eq!(e.code().as_str(), "CAPACITY_EXCEEDED");
    assert!(e.message().contains("budget"), "{}", e.message());
    assert_eq!(read_memory(d.path()).get("task").map(str::len), Some(task.trim_end().len()), "the task is kept");
}

/// `lkjagent demo` on the shipped data: no server, every state and action, paging, a
/// context overflow and a malformed reply, in a copy that leaves the user's memory alone.
#[test]
fn demo_walks_every_state_and_action() {
    let d = TempDir::new("demo");
    for f in ["config.json", "memory.json", "demo.jsonl"] {
        std::fs::write(d.path().join(f), shipped(f)).unwrap();
    }
    let child = lkjagent(["demo"]).data(d.path()).spawn();
    let (status, out, err) = finished(child.wait_within(Duration::from_secs(30)));
    assert!(status.success(), "exit {:?}\n{}\n{}", status, out, err);
    for state in ["thinking", "commanding", "evaluating", "paging"] {
        assert!(out.lines().any(|l| l.starts_with("cycle ") && l.contains(state)), "no {} cycle:\n{}", state, out);
    }
    for a in
        ["storage_save ok", "working_memory_add ok", "working_memory_remove ok", "storage_search ok", "storage_load ok"]
    {
        assert!(out.contains(a), "no '{}' in the demo:\n{}", a, out);
    }
    assert!(out.contains("invalid reply"), "{}", out);
    assert!(out.contains("context overflow"), "{}", out);
    assert!(out.contains("paged out"), "{}", out);
    assert!(out.contains("scripted replies are used up"), "{}", out);
    assert_eq!(
        std::fs::read_to_string(d.path().join("memory.json")).unwrap(),
        shipped("memory.json"),
        "user memory touched"
    );
    let m = read_memory(&d.path().join("demo-run"));
    assert!(m.iteration >= 20, "{:?}", m);
    // A second demo starts afresh in the same place.
    let again = lkjagent(["demo"]).data(d.path()).output();
    assert!(again.status.success());
    assert_eq!(read_memory(&d.path().join("demo-run")).iteration, m.iteration);
}

/// A stdout that is gone (`lkjagent demo | head -1` once `head` has its line) stops the loop
/// after its cycle is persisted, said once on stderr: no panic, no abort (exit 134 before).
#[test]
fn a_closed_stdout_stops_the_loop_cleanly() {
    let d = TempDir::new("demo-closed-stdout");
    for f in ["config.json", "memory.json", "demo.jsonl"] {
        std::fs::write(d.path().join(f), shipped(f)).unwrap();
    }
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lkjagent"))
        .arg("--data")
        .arg(d.path())
        .arg("demo")
        .env_remove("LKJAGENT_DATA")
        .stdin(std::process::Stdio::null())
        .stdout(writer)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{}", err);
    assert_eq!(err.matches("cannot write to stdout").count(), 1, "{}", err);
    assert!(!err.contains("panicked"), "{}", err);
    // The first line failed before the loop began: no cycle ran, and the run's memory reads.
    let m = read_memory(&d.path().join("demo-run"));
    assert!(m.iteration <= 1, "{:?}", m);
}

/// An invalid config stops `run` at start-up with exit 2 and the key path of the problem.
#[test]
fn an_invalid_config_is_exit_2_with_the_key_path() {
    let d = TempDir::new("badconfig");
    write_config(d.path(), "http://127.0.0.1:9/v1/chat/completions", |c| {
        set(c, "\"temperature\": 0.3", "\"temperature\": \"hot\"");
        set(c, "\"max_iterations\": 5", "\"max_iterations\": -7");
    });
    write_memory(d.path(), "thinking", &[]);
    let o = lkjagent(["run"]).data(d.path()).output();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}", err);
    assert!(err.contains("llm.temperature"), "{}", err);
    assert!(err.contains("agent.iterate.max_iterations"), "every problem is reported: {}", err);
}

/// A recorded run stopped by SIGTERM in the middle of a request replays byte for byte too.
#[test]
fn replay_of_a_run_stopped_by_sigterm() {
    let server = Server::llm(
        vec![
            think("commanding", "Start."),
            action("storage_save", "dictionary,fruit,lime", Some("lime: a green citrus.")),
        ],
        Step::Silence(Duration::from_secs(30)),
    );
    let d = data_dir("replay-sigterm", &server.endpoint());
    std::fs::write(d.path().join("memory.json"), DICTIONARY_MEMORY).unwrap();
    let child = lkjagent(["run", "--max-iterations", "5", "--exchange-log"]).data(d.path()).spawn();
    assert!(server.wait_for_chats(3, Duration::from_secs(10)));
    child.sigterm();
    let status = child.wait_within(Duration::from_secs(5)).status;
    assert!(status.success());
    drop(server);
    let exchange = exchange_log_dir(d.path());
    std::thread::sleep(Duration::from_millis(1100));
    let expect = d.path().join("memory.json");
    let child = lkjagent(["replay"]).arg(&exchange).arg("--expect").arg(&expect).data(d.path()).spawn();
    let (status, out, err) = finished(child.wait_within(Duration::from_secs(20)));
    let replayed = std::fs::read_to_string(exchange.join("replayed").join("memory.json")).unwrap_or_default();
    let recorded = std::fs::read_to_string(&expect).unwrap();
    let diff = differing_lines(&recorded, &replayed);
    assert!(status.success(), "exit {:?}\n{}\n{}\n{}", status, out, err, diff.join("\n"));
    assert!(out.contains("identical to"), "{}\n{}", out, diff.join("\n"));
}

/// Rotating logs (max_entries 4 for think_log): each entry takes the next number and appends;
/// a full log drops its oldest half at once, so a log never holds more than max_entries and
/// always keeps the newest. Slots left by an earlier config (here 002 and a stale 009) count
/// as the oldest and go first.
#[test]
fn logs_rotate_and_stale_slots_are_cleaned() {
    let script = (1..=6).map(|i| think("thinking", &format!("thought {}", i))).collect();
    let server = Server::llm(script, evaluate("used up"));
    let d = data_dir("logs", &server.endpoint());
    write_memory(d.path(), "thinking", &[("think_log_002", "old thought"), ("think_log_009", "stale thought")]);
    let mut agent = open_agent(d.path());
    let logs_now = |d: &Path| -> Vec<(String, String)> {
        let m = read_memory(d);
        let mut v: Vec<(String, String)> =
            m.wm.iter().filter(|(k, _)| k.starts_with("think_log_")).map(|(k, v)| (k.clone(), v.clone())).collect();
        v.sort();
        v
    };
    cycle(&mut agent);
    assert_eq!(
        logs_now(d.path()),
        vec![
            ("think_log_002".to_string(), "old thought".to_string()),
            ("think_log_009".into(), "stale thought".into()),
            ("think_log_010".into(), "thought 1".into())
        ]
    );
    for _ in 0..5 {
        cycle(&mut agent);
        assert!(logs_now(d.path()).len() <= 4, "{:?}", logs_now(d.path()));
    }
    assert_eq!(
        logs_now(d.path()),
        vec![("think_log_014".to_string(), "thought 5".to_string()), ("think_log_015".into(), "thought 6".into())]
    );
}
