#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! `lkjagent check` on real data directories: the shipped configuration, broken config, prompt
//! segments, memory and store files (reported, never changed), and the endpoint's health
//! against a real loopback server answering `/v1/models`, and against a closed port.

#[path = "support/loopback.rs"]
mod loopback;
#[path = "support/temp.rs"]
mod temp;

use lkjagent::cli::args::Args;
use lkjagent::error::Code;
use lkjagent::memory::key::normalize;
use lkjagent::memory::store::Store;
use loopback::{free_port, json_ok, response, Server};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use temp::{shipped, TempDir};

/// A data directory with the shipped config.json (its endpoint replaced by `endpoint`) and
/// memory.json.
fn shipped_dir(endpoint: &str) -> TempDir {
    let d = TempDir::shipped_data("cli-check");
    d.write("config.json", shipped("config.json").replace("http://127.0.0.1:1234/v1/chat/completions", endpoint));
    d
}

fn check(dir: &Path, a: &[&str]) -> (Result<i32, Code>, String) {
    let mut out = Vec::new();
    let args = Args::new(a.iter().map(|s| s.to_string()).collect());
    let res = lkjagent::cli::check::exec(args, dir, &mut out);
    (res.map_err(|e| e.code()), String::from_utf8(out).unwrap())
}

fn line<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find(|l| l.get(5..).is_some_and(|r| r.starts_with(name)))
        .unwrap_or_else(|| panic!("no {name} line in:\n{out}"))
}

fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect()
}

fn models(names: &[&str]) -> String {
    let items: Vec<String> = names.iter().map(|n| format!("{{\"id\":\"{n}\",\"object\":\"model\"}}")).collect();
    format!("{{\"object\":\"list\",\"data\":[{}]}}", items.join(","))
}

#[test]
fn shipped_data_passes_without_network() {
    let d = shipped_dir("http://127.0.0.1:1234/v1/chat/completions");
    let before = snapshot(&d.0);
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(0), "{out}");
    assert!(
        line(&out, "config.json").starts_with("ok   config.json: provider openai, model \"qwen/qwen3-8b\", 4 states")
    );
    assert_eq!(line(&out, "agent-prompt.json"), "ok   agent-prompt.json: none (optional)");
    assert!(line(&out, "memory.json")
        .starts_with("ok   memory.json: state thinking, iteration 0, 1 working-memory entries"));
    assert_eq!(line(&out, "store.log"), "ok   store.log: none yet (the agent creates it)");
    assert_eq!(line(&out, "endpoint"), "skip endpoint: not contacted (--no-network)");
    assert_eq!(snapshot(&d.0), before, "check must change no file");
}

#[test]
fn a_text_completion_endpoint_is_named_and_its_model_list_found_beside_it() {
    let server = Server::always(json_ok(&models(&["qwen/qwen3-8b"])));
    let d = shipped_dir(&server.url("/v1/completions"));
    let (res, out) = check(&d.0, &[]);
    assert_eq!(res, Ok(0), "{out}");
    assert!(
        line(&out, "config.json")
            .ends_with("; a text-completion endpoint: the prompt goes as one document, with no chat template"),
        "{out}"
    );
    assert!(line(&out, "endpoint").contains("listed (1 models at /v1/models)"), "{out}");
    // Ollama's /api/generate is the native API whatever the provider says.
    let d = shipped_dir("http://127.0.0.1:11434/api/generate");
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(0), "{out}");
    assert!(line(&out, "config.json").starts_with("ok   config.json: provider ollama, "), "{out}");
}

#[test]
fn the_endpoint_lists_the_model_or_not() {
    let server = Server::always(json_ok(&models(&["qwen/qwen3-8b", "other"])));
    let d = shipped_dir(&server.url("/v1/chat/completions"));
    let (res, out) = check(&d.0, &[]);
    assert_eq!(res, Ok(0), "{out}");
    assert!(line(&out, "endpoint").starts_with("ok   endpoint: "), "{out}");
    assert!(
        line(&out, "endpoint").contains("reachable, model \"qwen/qwen3-8b\" listed (2 models at /v1/models)"),
        "{out}"
    );
    assert_eq!(server.seen()[0].path, "/v1/models");

    let server = Server::always(json_ok(&models(&["llama3"])));
    let d = shipped_dir(&server.url("/v1/chat/completions"));
    let (res, out) = check(&d.0, &[]);
    assert_eq!(res, Ok(1), "{out}");
    assert!(line(&out, "endpoint").starts_with("FAIL endpoint: "), "{out}");
    assert!(line(&out, "endpoint").contains("model \"qwen/qwen3-8b\" is not among the 1 models it lists"), "{out}");

    let server = Server::always(response("503 Service Unavailable", &[], "{\"error\":\"Loading model\"}"));
    let d = shipped_dir(&server.url("/v1/chat/completions"));
    let (res, out) = check(&d.0, &[]);
    assert_eq!(res, Ok(0), "{out}");
    assert!(line(&out, "endpoint").contains("loading a model"), "{out}");
}

#[test]
fn a_closed_port_fails_fast_with_a_hint() {
    let port = free_port();
    let d = shipped_dir(&format!("http://127.0.0.1:{port}/v1/chat/completions"));
    let started = Instant::now();
    let (res, out) = check(&d.0, &[]);
    assert_eq!(res, Ok(1), "{out}");
    let l = line(&out, "endpoint");
    assert!(l.starts_with("FAIL endpoint: ") && l.contains("LLM_UNAVAILABLE"), "{out}");
    assert!(
        l.contains("check that LM Studio (or your server) is running and that the port in llm.endpoint is right"),
        "{out}"
    );
    // No retries with backoff: one refused connection answers at once.
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[test]
fn config_problems_are_listed_with_key_paths_and_exit_2() {
    let d = shipped_dir("http://127.0.0.1:1234/v1/chat/completions");
    d.write(
        "config.json",
        r#"{"llm":{"endpoint":"http://127.0.0.1:1234/v1","model":"","temperature":"hot"},
            "agent":{"think_log":{"max_entries":"four"}}}"#,
    );
    let (res, out) = check(&d.0, &[]);
    assert_eq!(res, Ok(2), "{out}");
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL config.json: ")).collect();
    assert!(fails.len() >= 3, "{out}");
    for path in ["llm.model:", "llm.temperature:", "agent.think_log.max_entries:"] {
        assert!(fails.iter().any(|l| l.contains(path)), "{path} missing in:\n{out}");
    }
    assert_eq!(line(&out, "endpoint"), "skip endpoint: not contacted: config.json has problems");
    // The other checks still run.
    assert!(line(&out, "memory.json").starts_with("ok   "), "{out}");

    d.write("config.json", "{\"llm\": }");
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(2));
    assert!(line(&out, "config.json").starts_with("FAIL config.json: CONFIG_JSON_INVALID"), "{out}");

    std::fs::remove_file(d.0.join("config.json")).unwrap();
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(2));
    assert!(line(&out, "config.json").contains("does not exist"), "{out}");

    let (res, out) = check(&d.0.join("missing"), &[]);
    assert_eq!(res, Ok(2));
    assert!(out.starts_with("FAIL data: "), "{out}");
}

#[test]
fn prompt_segments_are_validated() {
    let d = shipped_dir("http://127.0.0.1:1234/v1/chat/completions");
    d.write(
        "agent-prompt.json",
        r#"{"agent_name":"kjxlkj-agent","segments":[{"condition":"default","prompt":"Be brief."},
            {"condition":"thinking","prompt":"Plan."}]}"#,
    );
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(0), "{out}");
    assert_eq!(
        line(&out, "agent-prompt.json"),
        "ok   agent-prompt.json: valid, with default segments, segments for 1 states"
    );
    d.write("agent-prompt.json", r#"{"agent_name":"kjxlkj-agent","segments":[{"condition":"dreaming","prompt":"x"}]}"#);
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(2), "{out}");
    assert!(line(&out, "agent-prompt.json").starts_with("FAIL agent-prompt.json: PROMPT_SCHEMA_INVALID"), "{out}");
    assert!(line(&out, "config.json").starts_with("skip "), "{out}");
}

#[test]
fn memory_and_store_damage_is_reported_and_left_in_place() {
    let d = shipped_dir("http://127.0.0.1:1234/v1/chat/completions");
    d.write("memory.json", "{\"state\": \"thinking\", \"iteration\": ");
    {
        let mut s = Store::open(&d.0).unwrap();
        s.put(&normalize("a").unwrap(), "first", 1).unwrap();
        s.put(&normalize("b").unwrap(), "second", 2).unwrap();
    }
    // Damage the middle record (not the tail): a flipped byte breaks its checksum.
    let log = d.0.join("store.log");
    let mut bytes = std::fs::read(&log).unwrap();
    let second_line = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    let at = second_line + 40;
    let original = bytes[at];
    bytes[at] = if bytes[at] == b'x' { b'y' } else { b'x' };
    std::fs::write(&log, &bytes).unwrap();
    let before = snapshot(&d.0);

    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(1), "{out}");
    assert!(line(&out, "memory.json").starts_with("FAIL memory.json: "), "{out}");
    assert!(line(&out, "memory.json").contains("not valid JSON"), "{out}");
    assert!(line(&out, "store.log").starts_with("FAIL store.log: 1 entries, "), "{out}");
    assert!(line(&out, "store.log").contains("1 damaged records"), "{out}");
    assert_eq!(snapshot(&d.0), before, "check must not move or repair anything");

    // A torn tail (a crash, or a write in progress) is read up to the tail, left in place, and
    // not a failure.
    bytes[at] = original;
    let mut torn = bytes.clone();
    torn.extend_from_slice(b"0badc0de {\"op\":\"del\"");
    std::fs::write(&log, &torn).unwrap();
    d.write("memory.json", "{}");
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(0), "{out}");
    assert!(line(&out, "store.log").starts_with("ok   store.log: 2 entries "), "{out}");
    assert!(line(&out, "store.log").contains("20 bytes at the end are not a whole record yet"), "{out}");
    assert_eq!(std::fs::read(&log).unwrap(), torn);

    // A whole last record that is damaged (its newline is there, its checksum is wrong) is the
    // same torn tail to the agent, and said as what it is.
    let mut damaged = bytes.clone();
    let last = damaged.len() - 5;
    damaged[last] = if damaged[last] == b'x' { b'y' } else { b'x' };
    std::fs::write(&log, &damaged).unwrap();
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(0), "{out}");
    assert!(line(&out, "store.log").contains("bytes hold a damaged record"), "{out}");
    assert!(!line(&out, "store.log").contains("not a whole record yet"), "{out}");
    assert_eq!(std::fs::read(&log).unwrap(), damaged);

    // Not a store log at all.
    std::fs::write(&log, "hello\n").unwrap();
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(1), "{out}");
    assert!(line(&out, "store.log").starts_with("FAIL store.log: its first line is not"), "{out}");
    assert_eq!(std::fs::read(&log).unwrap(), b"hello\n");
}

#[test]
fn damage_inside_what_the_checkpoint_covers_is_found() {
    let d = shipped_dir("http://127.0.0.1:1234/v1/chat/completions");
    let mut s = Store::open(&d.0).unwrap();
    for i in 0..50 {
        s.put(&normalize(&format!("entry,e{i}")).unwrap(), &format!("value number {i}"), 1).unwrap();
    }
    // A clean stop: the checkpoint covers the whole log.
    s.close().unwrap();
    assert!(d.0.join("store.ckpt").exists());
    let log = d.0.join("store.log");
    let mut bytes = std::fs::read(&log).unwrap();
    let at = bytes.windows(15).position(|w| w == b"value number 10").unwrap();
    bytes[at] = b'V';
    std::fs::write(&log, &bytes).unwrap();
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(1), "{out}");
    assert!(line(&out, "store.log").starts_with("FAIL store.log: 49 entries, "), "{out}");
    assert!(line(&out, "store.log").contains("1 damaged records"), "{out}");
}

#[test]
fn the_full_text_index_file_is_checked_and_damage_reported() {
    let d = shipped_dir("http://127.0.0.1:1234/v1/chat/completions");
    // No store: no index line either.
    let (_, out) = check(&d.0, &["--no-network"]);
    assert!(!out.contains("store.fts"), "{out}");
    {
        let mut s = Store::open(&d.0).unwrap();
        s.put(&normalize("fruit,apple").unwrap(), "An apple is a round fruit.", 1).unwrap();
        s.put(&normalize("fruit,pear").unwrap(), "A pear.", 2).unwrap();
        let (_, out) = check(&d.0, &["--no-network"]);
        assert!(line(&out, "store.fts").starts_with("ok   store.fts: none yet"), "{out}");
        // The index is built by a search and written with the checkpoint.
        let mut ranked = lkjagent::memory::store::recall::Ranked::new();
        s.rank("apple", 5, &mut ranked).unwrap();
        s.close().unwrap();
    }
    let (res, out) = check(&d.0, &["--no-network"]);
    assert!(line(&out, "store.fts").starts_with("ok   store.fts: 2 entries indexed, "), "{out}");
    assert!(line(&out, "store.fts").contains("matches store.log"), "{out}");
    assert_eq!(res, Ok(0), "{out}");
    // A flipped byte: a failure, reported, and left in place.
    let path = d.0.join("store.fts");
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let before = snapshot(&d.0);
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(1), "{out}");
    assert!(line(&out, "store.fts").starts_with("FAIL store.fts: damaged: "), "{out}");
    assert!(line(&out, "store.fts").contains("nothing stored is lost"), "{out}");
    assert_eq!(snapshot(&d.0), before, "check must not move or repair anything");
}

#[test]
fn the_cold_stores_text_index_file_is_checked_current_behind_and_damaged() {
    use lkjagent::memory::store::cold::cleanup::Filter;
    use lkjagent::memory::store::Cleanup;
    let d = shipped_dir("http://127.0.0.1:1234/v1/chat/completions");
    {
        let mut s = Store::open(&d.0).unwrap();
        for i in 0..20u64 {
            s.put(&normalize(&format!("note,n{i}")).unwrap(), &format!("cold note number {i}"), 100 + i).unwrap();
        }
        let (_, out) = check(&d.0, &["--no-network"]);
        assert!(!out.contains("store.cold.fts: ") || out.contains("store.cold.fts: none yet"), "{out}");
        // Ten entries to the cold store; its index is built by a search, written at the close.
        s.cleanup_where(&Filter { accessed_before: Some(110), max_hits: None }, Cleanup::Cold).unwrap();
        let mut ranked = lkjagent::memory::store::recall::Ranked::new();
        s.rank("cold note", 5, &mut ranked).unwrap();
        s.close().unwrap();
    }
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(0), "{out}");
    assert!(line(&out, "store.cold.fts").starts_with("ok   store.cold.fts: 10 cold entries indexed, "), "{out}");
    assert!(line(&out, "store.cold.fts").contains("matches store.cold"), "{out}");
    // Another clean-up appends to store.cold: the file is behind it, which is fine.
    {
        let mut s = Store::open(&d.0).unwrap();
        s.cleanup_where(&Filter { accessed_before: Some(115), max_hits: None }, Cleanup::Cold).unwrap();
        drop(s);
    }
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(0), "{out}");
    assert!(line(&out, "store.cold.fts").starts_with("ok   store.cold.fts: behind store.cold: "), "{out}");
    // The keys' file counts as store.cold does, with the group after it read too.
    assert!(line(&out, "store.cold.keys").starts_with("ok   store.cold.keys: 15 keys, the same count"), "{out}");
    // The keys' file: a hash changed is not used; a count of its own, a failure.
    let keys = d.0.join("store.cold.keys");
    let good = std::fs::read(&keys).unwrap();
    let mut bytes = good.clone();
    bytes[70] ^= 0x01;
    std::fs::write(&keys, &bytes).unwrap();
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(0), "{out}");
    assert!(line(&out, "store.cold.keys").starts_with("ok   store.cold.keys: not used: "), "{out}");
    std::fs::write(&keys, &good).unwrap();
    // A flipped byte: a failure, reported, and left in place.
    let path = d.0.join("store.cold.fts");
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let before = snapshot(&d.0);
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(1), "{out}");
    assert!(line(&out, "store.cold.fts").starts_with("FAIL store.cold.fts: damaged: "), "{out}");
    assert_eq!(snapshot(&d.0), before, "check must not move or repair anything");
}

/// `store.vec` as the agent writes it: the header for `model` (`dim` numbers, no prefix)
/// and one record per `(key, created, version)`.
fn write_vectors(dir: &Path, model: &str, dim: usize, entries: &[(&str, u32, u32)]) -> Vec<u8> {
    use lkjagent::memory::hash::{fnv1a64, fnv1a64_continue};
    use lkjagent::memory::store::vectors::{encode, header, key_hash, stamp, RECORD_OVERHEAD};
    let identity = fnv1a64_continue(fnv1a64_continue(fnv1a64(model.as_bytes()), &(dim as u64).to_le_bytes()), b"");
    let mut bytes = header(identity, dim).to_vec();
    for (i, &(key, created, ver)) in entries.iter().enumerate() {
        let mut rec = vec![0u8; RECORD_OVERHEAD + dim];
        let q: Vec<i8> = (0..dim).map(|j| ((i * 7 + j * 3) % 200) as i8 - 100).collect();
        encode(&mut rec, key_hash(&normalize(key).unwrap()), stamp(created, ver), 0.01, &q);
        bytes.extend_from_slice(&rec);
    }
    std::fs::write(dir.join("store.vec"), &bytes).unwrap();
    bytes
}

#[test]
fn the_vectors_file_is_checked_and_damage_reported() {
    let d = shipped_dir("http://127.0.0.1:1234/v1/chat/completions");
    {
        let mut s = Store::open(&d.0).unwrap();
        s.put(&normalize("fruit,apple").unwrap(), "An apple is a round fruit.", 100).unwrap();
        s.put(&normalize("fruit,pear").unwrap(), "A pear.", 200).unwrap();
        s.put(&normalize("fruit,pear").unwrap(), "A pear, changed.", 300).unwrap();
        s.close().unwrap();
    }
    // No file, no embeddings configured.
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(0), "{out}");
    assert!(line(&out, "store.vec").starts_with("ok   store.vec: none (recall by meaning is off"), "{out}");
    // Embeddings configured: the file is of that model, one vector current, one of an old value.
    let config = shipped("config.json").replace(
        "\"store_capacity\": 65536",
        "\"store_capacity\": 65536, \"embeddings\": {\"endpoint\": \"http://127.0.0.1:9/v1/embeddings\", \"model\": \"hash\", \"dimension\": 8}",
    );
    d.write("config.json", &config);
    let (res, out) = check(&d.0, &["--no-network"]);
    assert!(line(&out, "store.vec").starts_with("ok   store.vec: none yet (the agent embeds"), "{out}");
    assert_eq!(res, Ok(0), "{out}");
    let good = write_vectors(&d.0, "hash", 8, &[("fruit,apple", 100, 1), ("fruit,pear", 200, 1)]);
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(0), "{out}");
    assert_eq!(
        line(&out, "store.vec"),
        format!("ok   store.vec: 2 records, 1 of them current for the 2 entries, 8 dimensions, {} bytes", good.len())
    );
    // Of another model: said, not a failure (the agent starts it again).
    write_vectors(&d.0, "other", 8, &[("fruit,apple", 100, 1)]);
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(0), "{out}");
    assert!(line(&out, "store.vec").contains("of another model, dimension or document prefix"), "{out}");
    // A torn tail (a record cut short): reported with what happens next, not a failure.
    let mut torn = good.clone();
    torn.extend_from_slice(&good[32..32 + 11]);
    std::fs::write(d.0.join("store.vec"), &torn).unwrap();
    let before = snapshot(&d.0);
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(0), "{out}");
    assert!(line(&out, "store.vec").starts_with("ok   store.vec: 2 records"), "{out}");
    assert!(out.contains("note: IO: the last 11 bytes of store.vec are not a whole record"), "{out}");
    assert!(out.contains("the agent drops them at its next start and embeds those entries again"), "{out}");
    assert_eq!(snapshot(&d.0), before, "check must not repair anything");
    // A damaged record before a good one: a failure, with what the agent does about it.
    let mut damaged = good.clone();
    damaged[32 + 20] ^= 0x40;
    std::fs::write(d.0.join("store.vec"), &damaged).unwrap();
    let before = snapshot(&d.0);
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(1), "{out}");
    let l = line(&out, "store.vec");
    assert!(l.starts_with("FAIL store.vec: IO: 1 damaged records (checksum) before the end, skipped"), "{out}");
    assert!(
        l.contains("'lkjagent memory embed' rewrites store.vec without them; 1 records, 0 of them current"),
        "{out}"
    );
    assert_eq!(snapshot(&d.0), before, "check must not repair anything");
    // A damaged header, and a file that is no vectors file at all: failures.
    let mut bad_header = good.clone();
    bad_header[10] ^= 0x01;
    std::fs::write(d.0.join("store.vec"), &bad_header).unwrap();
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(1), "{out}");
    assert!(line(&out, "store.vec").starts_with("FAIL store.vec: IO: the header of "), "{out}");
    assert!(line(&out, "store.vec").contains("is damaged (checksum); nothing stored is lost: the agent starts the file again and embeds every entry again"), "{out}");
    d.write("store.vec", "{\"not\": \"vectors\"}\n");
    let before = snapshot(&d.0);
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(1), "{out}");
    assert!(line(&out, "store.vec").starts_with("FAIL store.vec: IO: "), "{out}");
    assert!(line(&out, "store.vec").contains("is not a vectors file (no LKJVEC01 header)"), "{out}");
    assert_eq!(snapshot(&d.0), before, "check must not move anything");
}

#[test]
fn the_checkpoint_is_checked_and_damage_reported() {
    let d = shipped_dir("http://127.0.0.1:1234/v1/chat/completions");
    {
        let mut s = Store::open(&d.0).unwrap();
        s.put(&normalize("fruit,apple").unwrap(), "An apple is a round fruit.", 100).unwrap();
        s.put(&normalize("fruit,pear").unwrap(), "A pear.", 200).unwrap();
        let (res, out) = check(&d.0, &["--no-network"]);
        assert_eq!(res, Ok(0), "{out}");
        assert!(line(&out, "store.ckpt").starts_with("ok   store.ckpt: none yet"), "{out}");
        s.close().unwrap();
    }
    let log = std::fs::metadata(d.0.join("store.log")).unwrap().len();
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(0), "{out}");
    let l = line(&out, "store.ckpt");
    assert!(
        l.contains(&format!("matches the log ({log} bytes): status, memory query and memory search read it in place")),
        "{out}"
    );
    // The log grows after it (an agent writing): out of date, not a failure.
    {
        let mut s = Store::open(&d.0).unwrap();
        s.put(&normalize("fruit,plum").unwrap(), "A plum.", 300).unwrap();
    }
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(0), "{out}");
    assert!(line(&out, "store.ckpt").contains(&format!("covers {log} of the ")), "{out}");
    Store::open(&d.0).unwrap().close().unwrap();
    // An older format: out of date, not a failure.
    let path = d.0.join("store.ckpt");
    let good = std::fs::read(&path).unwrap();
    let mut old = good.clone();
    old[8..12].copy_from_slice(&2u32.to_le_bytes());
    std::fs::write(&path, &old).unwrap();
    let (res, out) = check(&d.0, &["--no-network"]);
    assert_eq!(res, Ok(0), "{out}");
    assert!(
        line(&out, "store.ckpt").starts_with("ok   store.ckpt: out of date (of format 2 (this program writes 3))"),
        "{out}"
    );
    // A flipped byte in the part the read-only commands read (the end: the block checksums),
    // and in the middle: failures, reported, left in place.
    for at in [good.len() - 2, good.len() / 2] {
        let mut bad = good.clone();
        bad[at] ^= 0x10;
        std::fs::write(&path, &bad).unwrap();
        let before = snapshot(&d.0);
        let (res, out) = check(&d.0, &["--no-network"]);
        assert_eq!(res, Ok(1), "{out}");
        let l = line(&out, "store.ckpt");
        assert!(l.starts_with("FAIL store.ckpt: IO: damaged: "), "{out}");
        assert!(l.contains("nothing stored is lost: the next start reads the whole log and writes a new one"), "{out}");
        assert_eq!(snapshot(&d.0), before, "check must not move or repair anything");
    }
}
