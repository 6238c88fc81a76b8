#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Constrained decoding: the reply language the agent generates agrees with the reply reader,
//! and the agent sends it the way each server takes it.
//!
//! - **Grammar ⇒ reader.** Replies sampled at random from the generated GBNF grammar (with an
//!   independent GBNF reader and sampler, `support/gbnf.rs`) and from the generated JSON Schema
//!   (a sampler for the schema subset the generator writes), for every state of the shipped
//!   config and for random shapes and live states, all read with no error-class problem, name
//!   only allowed states, and every action in them succeeds against the working memory and
//!   store the grammar was generated from (but a free-key save of a key already stored, which
//!   is refused as a repeat) (a random walk: each sample is applied, the next
//!   grammar is generated from the state it left). Every grammar stays under llama.cpp's
//!   repetition limit.
//! - **Reader ⇐ grammar.** Invalid replies (a missing key, a state that does not exist, a tag
//!   that is not one, markup in text, an unclosed element) are rejected by the grammar.
//! - **Servers** (loopback): one that follows the grammar it is sent (it samples its reply from
//!   the request's own grammar), one that refuses the field with 400, one that ignores it, one
//!   that drops the connection on a grammar.

#[path = "support/gbnf.rs"]
mod gbnf;
#[path = "support/loopback.rs"]
mod loopback;

#[path = "support/temp.rs"]
mod temp;
use gbnf::{rng, Grammar};
use lkjagent::agent::actions::{self, ActionScratch};
use lkjagent::agent::config::{self, Config};
use lkjagent::agent::constrain::Constrainer;
use lkjagent::agent::engine::{Agent, Model, PINNED_KEYS};
use lkjagent::fixed::FixedBuf;
use lkjagent::grammar::{self, ActionSet, Bounds, LogField, Mode, ProductAsk, Shape};
use lkjagent::json::{Document, Kind, Value, Writer};
use lkjagent::llm;
use lkjagent::memory::key::normalize;
use lkjagent::memory::store::Store;
use lkjagent::memory::working::WorkingSet;
use lkjagent::reply::{ActionKind, Instruction, Reader};
use loopback::{json_ok, response, Action as Do, Seen, Server};
use std::sync::atomic::{AtomicUsize, Ordering};
use temp::{shipped, TempDir};

fn shipped_dir(tag: &str, endpoint: &str, constrain: &str) -> TempDir {
    let d = TempDir::new(tag);
    let cfg = shipped("config.json")
        .replace("http://127.0.0.1:1234/v1/chat/completions", endpoint)
        .replace("\"constrain\": \"auto\"", &format!("\"constrain\": \"{}\"", constrain))
        .replace("\"max_retries\": 3", "\"max_retries\": 1")
        .replace("\"base_delay_ms\": 100", "\"base_delay_ms\": 10")
        .replace("\"connect_timeout_ms\": 10000", "\"connect_timeout_ms\": 500")
        .replace("\"read_timeout_ms\": 600000", "\"read_timeout_ms\": 20000");
    d.write("config.json", cfg);
    d.write("memory.json", shipped("memory.json"));
    d
}

// ---------------------------------------------------------------------------------------------
// A sampler for the JSON Schema subset the generator writes
// ---------------------------------------------------------------------------------------------

/// Writes a random instance of `schema` (object, anyOf, array, enum, bounded string, and the
/// tag `pattern`, sampled through the GBNF sampler after a mechanical translation).
fn sample_schema(schema: Value<'_>, r: &mut dyn FnMut() -> u64, w: &mut Writer<'_, String>) {
    if let Some(any) = schema.get("anyOf") {
        let n = any.len();
        return sample_schema(any.at((r() % n as u64) as usize).unwrap(), r, w);
    }
    if let Some(e) = schema.get("enum") {
        let n = e.len();
        return w.string(e.at((r() % n as u64) as usize).unwrap().as_str().unwrap()).unwrap();
    }
    match schema.get("type").and_then(|t| t.as_str()).unwrap() {
        "object" => {
            w.begin_object().unwrap();
            let props = schema.get("properties").unwrap();
            // Members in the schema's order: all of them are required (strict mode).
            for (k, v) in props.members() {
                w.key(k).unwrap();
                sample_schema(v, r, w);
            }
            w.end_object().unwrap();
        }
        "array" => {
            let min = schema.get("minItems").and_then(|v| v.as_u64()).unwrap();
            let max = schema.get("maxItems").and_then(|v| v.as_u64()).unwrap();
            w.begin_array().unwrap();
            for _ in 0..min + r() % (max - min + 1) {
                sample_schema(schema.get("items").unwrap(), r, w);
            }
            w.end_array().unwrap();
        }
        "string" => {
            if let Some(p) = schema.get("pattern").and_then(|p| p.as_str()) {
                let g = pattern_grammar(p);
                return w.string(&g.sample(r)).unwrap();
            }
            let min = schema.get("minLength").and_then(|v| v.as_u64()).unwrap_or(0);
            let max = schema.get("maxLength").and_then(|v| v.as_u64()).unwrap();
            // Any characters at all: JSON escapes them, the reader must take them as text.
            const POOL: &[&str] = &["a", "Z", " ", "<", "&", "\"", "\\", "é", "中", "😀", "\n", "lt;", "</value>"];
            let len = min + r() % (max - min + 1);
            let mut s = String::new();
            let mut chars = 0;
            while chars < len {
                let piece = POOL[(r() % POOL.len() as u64) as usize];
                if chars + piece.chars().count() as u64 > len {
                    break;
                }
                chars += piece.chars().count() as u64;
                s.push_str(piece);
            }
            if s.trim().is_empty() {
                s = "x".into();
            }
            w.string(&s).unwrap();
        }
        other => panic!("the sampler does not know type {other}"),
    }
}

/// The tag pattern `^[a-z][a-z0-9_]{0,t}(,[a-z][a-z0-9_]{0,t}){0,n}$` as a GBNF grammar.
fn pattern_grammar(p: &str) -> Grammar {
    let body = p.strip_prefix('^').unwrap().strip_suffix('$').unwrap();
    let mut g = String::from("root ::= ");
    let (mut in_class, mut in_braces) = (false, false);
    for c in body.chars() {
        match c {
            '[' => {
                in_class = true;
                g.push_str(" [");
            }
            ']' => {
                in_class = false;
                g.push(']');
            }
            '{' => {
                in_braces = true;
                g.push('{');
            }
            '}' => {
                in_braces = false;
                g.push('}');
            }
            ',' if !in_class && !in_braces => g.push_str(" \",\" "),
            '(' => g.push_str(" ( "),
            ')' => g.push_str(" )"),
            c => g.push(c),
        }
    }
    g.push('\n');
    Grammar::parse(&g).unwrap_or_else(|e| panic!("{e}: {g}"))
}

// ---------------------------------------------------------------------------------------------
// Grammar ⇒ reader: every sampled reply is read and executes
// ---------------------------------------------------------------------------------------------

struct Live {
    _dir: TempDir,
    working: WorkingSet,
    store: Store,
    scratch: ActionScratch,
}

impl Live {
    fn new(seed: u64) -> Live {
        let dir = TempDir::new("live");
        let mut store = Store::open_with_capacity(&dir.0, 4096).unwrap();
        let mut working = WorkingSet::new();
        let mut r = rng(seed);
        working.add(&normalize("task").unwrap(), "Build a glossary of cooking terms.", 1).unwrap();
        for i in 0..r() % 6 {
            working.add(&normalize(&format!("note_{i},draft")).unwrap(), "a note", 1).unwrap();
        }
        for i in 0..r() % 8 {
            store.put(&normalize(&format!("glossary,term_{i}")).unwrap(), "a stored definition", 1).unwrap();
        }
        Live { _dir: dir, working, store, scratch: ActionScratch::new() }
    }
}

/// Reads `reply` and carries out its actions against `live`; panics with the reason when the
/// reply has an error-class problem, names a state outside `allowed`, or an action fails.
fn read_and_apply(reader: &mut Reader, reply: &str, max_actions: usize, allowed: &[&str], live: &mut Live, what: &str) {
    let it = reader.read(reply.as_bytes(), max_actions);
    assert!(!it.has_errors() && !it.is_empty(), "{what}: reply not taken: {:?}\n{reply}", it.problems());
    for ins in it.instructions() {
        match ins {
            Instruction::NextState(s) => assert!(allowed.contains(&s), "{what}: state {s:?} not allowed\n{reply}"),
            Instruction::Action(a) => {
                // A save adds: one of a key already stored is refused (the free-key grammars
                // cannot exclude stored keys in every order of their tags; product saves do).
                let stored = normalize(a.tags).ok().is_some_and(|k| live.store.find(&k).is_some());
                let r = actions::apply(&a, &mut live.working, &mut live.store, &mut live.scratch, 2).unwrap();
                if a.kind == ActionKind::StorageSave && stored {
                    assert!(!r.ok && r.message.starts_with("refused: a repeat"), "{what}: {}", r.message.as_str());
                    continue;
                }
                assert!(
                    r.ok,
                    "{what}: action {} {:?} failed: {}\n{reply}",
                    a.kind.as_str(),
                    a.tags,
                    r.message.as_str()
                );
            }
            _ => {}
        }
    }
}

/// A random walk of `steps` cycles in `state` of `cfg`: each generates the grammar and the
/// schema from the live state, samples one reply from each, reads and applies them.
fn walk(cfg: &Config, state: &str, seed: u64, steps: usize) {
    let mut live = Live::new(seed);
    let mut r = rng(seed ^ 0xABCD);
    let mut reader = Reader::new();
    let mut settings = cfg.llm.clone();
    settings.thinks = seed.is_multiple_of(3);
    let mut c = Constrainer::new(&settings, seed);
    let max_actions = 1 + (seed % 3) as usize;
    let shape = cfg.prompts.shape(state);
    for step in 0..steps {
        for mode in [Mode::Grammar, Mode::JsonSchema] {
            c.prepare(
                Some(mode),
                shape,
                &cfg.agent.states,
                max_actions,
                &live.working,
                Some(&live.store),
                &PINNED_KEYS,
                &cfg.agent.log_prefixes(),
                None,
            )
            .unwrap();
            let text = c.text().to_string();
            let lang_states: Vec<&str> = {
                let lang = plain_language(&cfg.agent.states, shape);
                lang.next_states().map(|s| cfg.agent.states.iter().find(|x| *x == s).unwrap().as_str()).collect()
            };
            let reply = match mode {
                Mode::Grammar => {
                    let g = Grammar::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
                    assert!(g.max_repetition_product() < 2000, "{}\n{text}", g.max_repetition_product());
                    g.sample(&mut r)
                }
                _ => {
                    let mut doc = Document::with_capacity(4096, 1 << 16);
                    doc.parse(text.as_bytes()).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
                    assert_eq!(doc.root().kind(), Kind::Object);
                    let mut out = String::new();
                    sample_schema(doc.root(), &mut r, &mut Writer::compact(&mut out));
                    out
                }
            };
            let what = format!("state {state}, seed {seed}, step {step}, {}", mode.name());
            read_and_apply(&mut reader, &reply, max_actions, &lang_states, &mut live, &what);
            // The agent tells the constrainer what it did; do the same.
            let it = reader.last();
            if let Some(a) = it.actions().last() {
                c.note_action(a.kind, normalize(a.tags).map(|k| k.as_str().to_string()).unwrap_or_default().as_str());
            }
        }
    }
}

#[test]
fn replies_sampled_from_the_shipped_grammars_are_read_and_executed() {
    let d = shipped_dir("shipped", "http://127.0.0.1:9/v1/chat/completions", "auto");
    let cfg = config::load(&d.0).unwrap();
    for state in cfg.agent.states.clone() {
        for seed in 0..12 {
            walk(&cfg, &state, seed * 7919 + 1, 40);
        }
    }
}

#[test]
fn replies_sampled_from_random_shapes_are_read_and_executed() {
    let mut r = rng(42);
    let states: Vec<String> = ["thinking", "commanding", "evaluating", "paging", "planning"].map(String::from).to_vec();
    let mut reader = Reader::new();
    let mut buf = FixedBuf::with_capacity("test grammar", lkjagent::limits::GRAMMAR_MAX_BYTES);
    for case in 0..300u64 {
        // One live state for the grammar's samples and an identical one for the schema's.
        let mut live = Live::new(case);
        let mut live_json = Live::new(case);
        let shape = Shape {
            next_state: r().is_multiple_of(2),
            next_mask: (r() % 32) as u16,
            log: match r() % 3 {
                0 => None,
                1 => Some(LogField::Think),
                _ => Some(LogField::Evaluation),
            },
            actions: grammar::OFFERED_ACTIONS
                .iter()
                .filter(|_| r().is_multiple_of(2))
                .fold(ActionSet::NONE, |s, &k| s.with(k)),
        };
        let bounds = Bounds {
            think_chars: if r().is_multiple_of(4) { 1 + (r() % 300) as u32 } else { 0 },
            log_chars: 1 + (r() % 500) as u32,
            value_chars: 1 + (r() % 3000) as u32,
            tag_chars: 1 + (r() % 80) as u32,
            tags_per_key: 1 + (r() % 10) as u32,
            max_actions: 1 + (r() % 4) as u32,
            keys_per_list: (r() % 40) as u32,
        };
        let wm: Vec<String> = live.working.iter().map(|(k, _, _)| k.as_str().to_string()).collect();
        let wm_refs: Vec<&str> = wm.iter().map(String::as_str).collect();
        let wm_slice: &[&str] = &wm_refs;
        let stored: Vec<String> =
            live.store.ids().filter_map(|id| live.store.key(id)).map(|k| k.as_str().to_string()).collect();
        let st_refs: Vec<&str> = stored.iter().map(String::as_str).collect();
        let st_slice: &[&str] = &st_refs;
        let mut tags: Vec<String> = stored.iter().flat_map(|k| k.split(',').map(str::to_string)).collect();
        tags.sort();
        tags.dedup();
        let tag_refs: Vec<&str> = tags.iter().map(String::as_str).collect();
        let tag_slice: &[&str] = &tag_refs;
        let lang = grammar::Language {
            states: &states,
            shape,
            bounds,
            working_keys: &wm_slice,
            stored_keys: &st_slice,
            search_tags: &tag_slice,
            pinned: &PINNED_KEYS,
            managed: &[],
            recent: &[],
            in_working: &grammar::NoKeys,
            product: None,
        };
        let allowed: Vec<&str> = lang.next_states().collect();
        let max_actions = bounds.clamped().max_actions as usize;
        grammar::gbnf::write(&lang, &mut buf).unwrap();
        let text = buf.as_str().unwrap().to_string();
        let g = Grammar::parse(&text).unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        assert!(g.max_repetition_product() < 2000, "case {case}: {}\n{text}", g.max_repetition_product());
        grammar::schema::write(&lang, &mut buf).unwrap();
        let schema = buf.as_str().unwrap().to_string();
        let mut doc = Document::with_capacity(4096, 1 << 16);
        doc.parse(schema.as_bytes()).unwrap();
        for k in 0..4 {
            let reply = g.sample(&mut r);
            read_and_apply(&mut reader, &reply, max_actions, &allowed, &mut live, &format!("case {case}.{k} gbnf"));
            let mut json = String::new();
            sample_schema(doc.root(), &mut r, &mut Writer::compact(&mut json));
            read_and_apply(&mut reader, &json, max_actions, &allowed, &mut live_json, &format!("case {case}.{k} json"));
            // Applying may have removed a key the grammar lists: start the next case afresh.
            if shape.actions.contains(ActionKind::WorkingMemoryRemove) {
                break;
            }
        }
    }
}

#[test]
fn invalid_replies_are_outside_the_grammar() {
    let states: Vec<String> = ["thinking", "commanding"].map(String::from).to_vec();
    let wm: &[&str] = &["task", "notes"];
    let shape = Shape { next_state: true, next_mask: 0, log: Some(LogField::Think), actions: ActionSet::ALL };
    let lang = grammar::Language { working_keys: &wm, pinned: &PINNED_KEYS, ..plain_language(&states, shape) };
    let mut buf = FixedBuf::with_capacity("test grammar", 1 << 16);
    grammar::gbnf::write(&lang, &mut buf).unwrap();
    let g = Grammar::parse(buf.as_str().unwrap()).unwrap();
    let ok = "<agent>\n<think_log>Save a term.</think_log>\n<next_state>commanding</next_state>\n\
              <action><type>working_memory_remove</type><tags>notes</tags></action>\n</agent>";
    assert!(g.matches(ok), "{}", buf.as_str().unwrap());
    let bad = [
        // a key that does not exist, and the pinned task
        ok.replace("<tags>notes</tags>", "<tags>missing</tags>"),
        ok.replace("<tags>notes</tags>", "<tags>task</tags>"),
        // a state that is not configured
        ok.replace(">commanding<", ">sleeping<"),
        // no log, or the other log
        ok.replace("<think_log>Save a term.</think_log>\n", ""),
        ok.replace("think_log", "evaluation_log"),
        // markup or a line break in text, a log starting with a digit
        ok.replace("Save a term.", "Save <b>a</b> term."),
        ok.replace("Save a term.", "Save\na term."),
        ok.replace("Save a term.", "42 terms."),
        // an unclosed element, prose after the answer, a second agent
        ok.replace("</action>", ""),
        format!("{ok} Done!"),
        format!("{ok}{ok}"),
        // a load, with nothing stored to load
        ok.replace(
            "<type>working_memory_remove</type><tags>notes</tags>",
            "<type>storage_load</type><tags>notes</tags>",
        ),
        // a tag that is not one, too many tags, a tag too long, an empty value
        ok.replace(
            "<type>working_memory_remove</type><tags>notes</tags>",
            "<type>storage_save</type><tags>Fruit</tags><value>x</value>",
        ),
        ok.replace(
            "<type>working_memory_remove</type><tags>notes</tags>",
            "<type>storage_save</type><tags>a,b,c,d</tags><value>x</value>",
        ),
        ok.replace(
            "<type>working_memory_remove</type><tags>notes</tags>",
            &format!("<type>storage_save</type><tags>{}</tags><value>x</value>", "a".repeat(40)),
        ),
        ok.replace(
            "<type>working_memory_remove</type><tags>notes</tags>",
            "<type>storage_save</type><tags>a</tags><value></value>",
        ),
        // a value past its bound
        ok.replace(
            "<type>working_memory_remove</type><tags>notes</tags>",
            &format!("<type>storage_save</type><tags>a</tags><value>{}</value>", "w".repeat(401)),
        ),
    ];
    for b in &bad {
        assert!(!g.matches(b), "the grammar accepts an invalid reply:\n{b}");
    }
    // The previous cycle's remove is not offered again.
    let lang = grammar::Language { recent: &[(ActionKind::WorkingMemoryRemove, "notes")], ..lang };
    grammar::gbnf::write(&lang, &mut buf).unwrap();
    let g = Grammar::parse(buf.as_str().unwrap()).unwrap();
    assert!(!g.matches(ok));
}

// ---------------------------------------------------------------------------------------------
// Servers
// ---------------------------------------------------------------------------------------------

/// An OpenAI-compatible answer with `content`, whose usage says 80 prompt tokens were cached.
fn chat_body(content: &str) -> String {
    let body = loopback::completion_body(content, None);
    let usage = "\"completion_tokens\":40}";
    assert!(body.contains(usage));
    body.replace(usage, "\"completion_tokens\":40,\"prompt_tokens_details\":{\"cached_tokens\":80}}")
}

/// A string member of a request body (`path` as `a.b`).
fn field(seen: &Seen, path: &str) -> Option<String> {
    let mut doc = Document::with_capacity(1 << 14, 1 << 20);
    doc.parse(&seen.body).ok()?;
    doc.root().path(path).and_then(|v| v.as_str()).map(str::to_string)
}

fn has_constraint(seen: &Seen) -> bool {
    let b = seen.body_str();
    b.contains("\"grammar\"") || b.contains("\"response_format\"")
}

/// A free reply every state takes (the unconstrained path).
const FREE_REPLY: &str = "<agent><next_state>commanding</next_state><think_log>Go on.</think_log>\
    <action><type>storage_save</type><tags>glossary,roux</tags><value>Roux: flour cooked in fat.</value></action></agent>";

fn agent(d: &TempDir) -> Agent {
    let cfg = config::load(&d.0).unwrap();
    let client = llm::Client::new(&cfg.llm).unwrap();
    Agent::open(&d.0, cfg, Model::Client(Box::new(client)), false).unwrap()
}

fn cycles(a: &mut Agent, n: usize) -> Vec<lkjagent::agent::engine::CycleReport> {
    (0..n).map(|_| a.cycle(&mut |_| {}, &|| false).unwrap()).collect()
}

#[test]
fn a_server_that_follows_the_grammar_gets_the_live_grammar_and_a_fresh_seed() {
    // The server answers from the grammar it is sent: the probe's word, or a reply sampled
    // from the agent's grammar. Without a grammar it would answer nothing useful.
    let counter = std::sync::Arc::new(AtomicUsize::new(0));
    let n = counter.clone();
    let server = Server::start(move |_, seen| {
        if !seen.is_chat() {
            return Do::Reply(json_ok(r#"{"data":[{"id":"m"}]}"#));
        }
        let Some(g) = field(seen, "grammar") else { return Do::Reply(json_ok(&chat_body("no grammar"))) };
        assert_eq!(field(seen, "structured_outputs.grammar").as_deref(), Some(g.as_str()), "vLLM's field too");
        let grammar = Grammar::parse(&g).unwrap_or_else(|e| panic!("the agent sent a malformed grammar: {e}\n{g}"));
        let mut r = rng(n.fetch_add(1, Ordering::Relaxed) as u64);
        Do::Reply(json_ok(&chat_body(&grammar.sample(&mut r))))
    });
    let d = shipped_dir("follows", &server.url("/v1/chat/completions"), "auto");
    let mut a = agent(&d);
    let reports = cycles(&mut a, 12);
    for r in &reports {
        assert!(r.error.is_none() && !r.invalid_reply, "cycle {}: {:?}", r.cycle, r);
        assert_eq!(r.constrain, "grammar");
        assert_eq!(r.cached_tokens, Some(80));
    }
    assert!(reports.iter().any(|r| !r.actions.is_empty()), "no action in 12 cycles");
    let chats: Vec<Seen> = server.chats();
    assert_eq!(chats.len(), 13, "one probe, then one request per cycle");
    assert_eq!(field(&chats[0], "grammar").as_deref(), Some("root ::= \"lkjok\"\n"));
    // Every cycle's seed differs; the grammar lists the working-memory keys it may remove.
    let seeds: std::collections::BTreeSet<String> = chats[1..]
        .iter()
        .map(|s| {
            let b = s.body_str();
            let at = b.find("\"seed\":").unwrap() + 7;
            b[at..].chars().take_while(char::is_ascii_digit).collect()
        })
        .collect();
    assert_eq!(seeds.len(), 12, "a seed per cycle");
    let audit = std::fs::read_to_string(d.0.join("logs/audit.jsonl")).unwrap();
    assert_eq!(audit.matches("\"constrain\":\"grammar\"").count(), 12);
    assert_eq!(audit.matches("\"cached_tokens\":80").count(), 12);
}

/// A definition for each name the loopback model is asked about.
fn sentence_about(name: &str) -> &'static str {
    match name {
        "Zebra" => "a horse of Africa with black and white stripes.",
        "Okapi" => "a forest animal related to the giraffe.",
        "Eland" => "a large antelope of the open savanna.",
        "Kudu" => "an antelope with long spiral horns.",
        "Hyrax" => "a small furry mammal that lives among rocks.",
        _ => "an animal.",
    }
}

/// A loopback model that follows the agent's grammar: the probe gets its word, a names ask
/// (`names_ask`, the question's words) the next of `lists` (the plan's names after `1. `, the
/// last list again once they run out), a question about names a line `Name: sentence` for each
/// name it asks about, saved under `tags`. Every reply is checked against the grammar sent.
fn grammar_follower(
    names_ask: &'static str,
    heading: &'static str,
    lists: &'static [&'static str],
    tags: &'static str,
    sentence: fn(&str) -> &'static str,
) -> Server {
    let count = std::sync::Arc::new(AtomicUsize::new(0));
    Server::start(move |_, seen| {
        if !seen.is_chat() {
            return Do::Reply(json_ok(r#"{"data":[{"id":"m"}]}"#));
        }
        let Some(g) = field(seen, "grammar") else { return Do::Reply(json_ok(&chat_body("no grammar"))) };
        let grammar = Grammar::parse(&g).unwrap_or_else(|e| panic!("the agent sent a malformed grammar: {e}\n{g}"));
        let body = seen.body_str();
        let (kind, tags, value) = if g.contains("lkjok") {
            return Do::Reply(json_ok(&chat_body("lkjok")));
        } else if body.contains(names_ask) {
            let n = count.fetch_add(1, Ordering::Relaxed).min(lists.len() - 1);
            ("working_memory_add", "plan", format!("{heading}\n1. {}\n", lists[n]))
        } else {
            let at = body.rfind("What ").expect("a question about names");
            let asked = &body[at..];
            let asked = &asked[asked.find(' ').unwrap() + 1..asked.find('?').unwrap()];
            let asked = asked.strip_prefix("are ").or_else(|| asked.strip_prefix("is ")).unwrap();
            let names: Vec<&str> = asked.split([',', ' ']).filter(|w| !w.is_empty() && *w != "and").collect();
            let lines: Vec<String> = names.iter().map(|n| format!("{n}: {}", sentence(n))).collect();
            ("storage_save", tags, lines.join("\n"))
        };
        let reply =
            format!("<agent>\n<action><type>{kind}</type><tags>{tags}</tags><value>{value}</value></action>\n</agent>");
        assert!(grammar.matches(&reply), "the reply is not in the grammar sent\n{reply}\n{g}");
        Do::Reply(json_ok(&chat_body(&reply)))
    })
}

/// The lists of African animals a loopback model names: twice from nothing (they agree on
/// Okapi, Zebra and Eland, not on Gnu), then going on from the first two names stored.
const ANIMAL_LISTS: &[&str] =
    &["Zebra\n2. Okapi\n3. Eland", "Okapi\n2. Zebra\n3. Gnu\n4. Eland", "Okapi\n2. Zebra\n3. Kudu\n4. Hyrax"];

/// The agent asks a model that follows its grammar for names (twice, for a list with no entry
/// yet), then asks about all of them in one question; each line of the answer is an entry of
/// its own, filed under its name, and the next cycle asks for names again.
#[test]
fn one_reply_defines_every_name_of_the_plan() {
    let server = grammar_follower(
        "Name five common African animals.",
        "Common African animals:",
        ANIMAL_LISTS,
        "african,animals",
        sentence_about,
    );
    let d = shipped_dir("several", &server.url("/v1/chat/completions"), "auto");
    d.write(
        "memory.json",
        r#"{"state":"thinking","iteration":0,"working_memory":{"task":"Make a list of African animals: save one animal per entry to storage, with one sentence about it."}}"#,
    );
    let mut a = agent(&d);
    let reports = cycles(&mut a, 5);
    for r in &reports {
        assert!(r.error.is_none() && !r.invalid_reply, "cycle {}: {:?}", r.cycle, r);
    }
    // Names twice, the three they agree on in one cycle, names again, their two entries.
    let saves: Vec<usize> = reports.iter().map(|r| r.actions.iter().filter(|a| a.ok).count()).collect();
    assert_eq!(saves, [1, 1, 3, 1, 2]);
    drop(a);
    let mut store = Store::open(&d.0).unwrap();
    for name in ["Zebra", "Okapi", "Eland", "Kudu", "Hyrax"] {
        let key = normalize(&format!("african,animals,{}", name.to_lowercase())).unwrap();
        let id = store.find(&key).unwrap_or_else(|| panic!("{key} is not stored"));
        assert_eq!(store.value(id).unwrap(), format!("{name}: {}", sentence_about(name)));
    }
    assert!(store.find(&normalize("african,animals,gnu").unwrap()).is_none(), "one list named Gnu");
    let audit = std::fs::read_to_string(d.0.join("logs/audit.jsonl")).unwrap();
    assert_eq!(audit.matches("{\"type\":\"storage_save\",\"key\":\"african,animals,").count(), 5, "{audit}");
}

/// Which of a run's requests after the probe carry a presence penalty, one `bool` a cycle.
fn penalized(task: &str, server: &Server, n: usize) -> Vec<bool> {
    let d = shipped_dir("penalty", &server.url("/v1/chat/completions"), "auto");
    d.write("memory.json", format!(r#"{{"state":"thinking","iteration":0,"working_memory":{{"task":"{task}"}}}}"#));
    let mut a = agent(&d);
    for r in cycles(&mut a, n) {
        assert!(r.error.is_none() && !r.invalid_reply, "cycle {}: {:?}", r.cycle, r);
    }
    let chats = server.chats();
    assert_eq!(chats.len(), n + 1, "the probe, then a request a cycle");
    assert!(!chats[0].body_str().contains("presence_penalty"), "the probe: {}", chats[0].body_str());
    chats[1..].iter().map(|s| s.body_str().contains(r#""presence_penalty":1,"#)).collect()
}

/// A names ask is sent with a presence penalty: a small model listing from nothing repeats
/// itself ("Fennel" nine times in a list of ten) and runs through the letters of a name
/// ("Fizzle, Fizzy, Fizzie"), and one that goes on from a list's first names, which its grammar
/// lets name what is stored, names the stored ones again. A question is not: there the words of
/// the prompt are the ones to use.
#[test]
fn a_list_is_asked_with_a_presence_penalty_and_a_question_is_not() {
    let cooking = grammar_follower(
        "Name five common cooking terms.",
        "Common cooking terms:",
        &["Roux\n2. Batter\n3. Gravy"],
        "cooking,glossary",
        cooking_sentence,
    );
    let task =
        "Build a small glossary of cooking terms: save one term per entry to storage, with a one-sentence definition.";
    // Names, their question, the question about the words their definitions share.
    assert_eq!(penalized(task, &cooking, 3), [true, false, false]);
    let animals = grammar_follower(
        "Name five common African animals.",
        "Common African animals:",
        ANIMAL_LISTS,
        "african,animals",
        sentence_about,
    );
    let task = "Make a list of African animals: save one animal per entry to storage, with one sentence about it.";
    // Names from nothing twice, the question about those both name, names going on from
    // Okapi and Zebra (which may name them again: the penalty weighs against it).
    assert_eq!(penalized(task, &animals, 4), [true, true, false, true]);
}

/// Definitions of cooking terms that share the words a glossary asks about next.
fn cooking_sentence(name: &str) -> &'static str {
    match name {
        "Roux" => "a paste made with flour and butter.",
        "Batter" => "a liquid made with flour and milk.",
        "Gravy" => "a sauce made with butter and milk.",
        "Butter" => "a fat made by churning cream.",
        "Milk" => "a white drink that cows give.",
        "Flour" => "a powder of ground grain.",
        _ => "a food made in a kitchen.",
    }
}

/// With no plan left, a glossary asks about the words its definitions use most. That is a
/// question like any other: the prompt shows the product and not the task (it was built as a
/// names ask: the model copied the task's words as a definition, "Meal: A small glossary of
/// cooking terms.", and the server evaluated the whole view again).
#[test]
fn a_question_about_the_words_definitions_use_shows_the_product_not_the_task() {
    let server = grammar_follower(
        "Name five common cooking terms.",
        "Common cooking terms:",
        &["Roux\n2. Batter\n3. Gravy"],
        "cooking,glossary",
        cooking_sentence,
    );
    let d = shipped_dir("words-asked", &server.url("/v1/chat/completions"), "auto");
    d.write(
        "memory.json",
        r#"{"state":"thinking","iteration":0,"working_memory":{"task":"Build a small glossary of cooking terms: save one term per entry to storage, with a one-sentence definition."}}"#,
    );
    let mut a = agent(&d);
    let reports = cycles(&mut a, 3);
    for r in &reports {
        assert!(r.error.is_none() && !r.invalid_reply, "cycle {}: {:?}", r.cycle, r);
    }
    let saves: Vec<usize> = reports.iter().map(|r| r.actions.iter().filter(|a| a.ok).count()).collect();
    assert_eq!(saves, [1, 3, 3], "names, their entries, then the three words the entries share");
    // The probe, then a request a cycle.
    let chats = server.chats();
    // Each request's prompt, up to the constraint.
    let prompts: Vec<&str> = chats[1..]
        .iter()
        .map(|s| {
            let b = s.body_str();
            &b[..b.find("\"grammar\"").unwrap_or(b.len())]
        })
        .collect();
    assert_eq!(prompts.len(), 3);
    // The names ask shows what the product is, the view's first line, and neither its names
    // nor the task: up to that line its prompt is the questions', which a server's cache keeps.
    let heading = "<product>\\nThe glossary of cooking terms:\\n";
    assert!(prompts[0].contains(&format!("{heading}</product>\\nName five common cooking terms.")), "{}", prompts[0]);
    assert!(!prompts[0].contains("<task>"), "{}", prompts[0]);
    let shared = |a: &str, b: &str| a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let through_heading = prompts[1].find(heading).unwrap() + heading.len();
    assert!(shared(prompts[0], prompts[1]) >= through_heading, "{}\n{}", prompts[0], prompts[1]);
    for (i, p) in prompts[1..].iter().enumerate() {
        assert!(p.contains("<product>") && !p.contains("<task>"), "question {}: {p}", i + 1);
    }
    assert!(
        prompts[2].contains("<product>\\nThe glossary of cooking terms:\\nRoux\\nBatter\\nGravy\\n</product>"),
        "{}",
        prompts[2]
    );
    assert!(prompts[2].contains("What are Butter, Milk and Flour?"), "{}", prompts[2]);
}

#[test]
fn a_server_that_refuses_the_field_gets_it_once_more_one_step_down_then_none() {
    let server = Server::start(|_, seen| {
        if !seen.is_chat() {
            return Do::Reply(json_ok(r#"{"data":[{"id":"m"}]}"#));
        }
        if has_constraint(seen) {
            let body = r#"{"error":{"code":400,"message":"Failed to parse grammar","type":"invalid_request_error"}}"#;
            return Do::Reply(response("400 Bad Request", &["Content-Type: application/json"], body));
        }
        Do::Reply(json_ok(&chat_body(FREE_REPLY)))
    });
    let d = shipped_dir("refuses", &server.url("/v1/chat/completions"), "grammar");
    let mut a = agent(&d);
    let reports = cycles(&mut a, 4);
    for r in &reports {
        assert!(r.error.is_none(), "cycle {}: {:?}", r.cycle, r.error);
    }
    let chats: Vec<Seen> = server.chats();
    let kinds: Vec<&str> = chats
        .iter()
        .map(|s| {
            let b = s.body_str();
            if b.contains("\"grammar\"") {
                "grammar"
            } else if b.contains("\"response_format\"") {
                "schema"
            } else {
                "plain"
            }
        })
        .collect();
    // Cycle 1: the grammar is refused, sent again without it; cycle 2: the JSON Schema (one
    // step down) is refused, sent again without it; from then on, no constraint.
    assert_eq!(kinds, ["grammar", "plain", "schema", "plain", "plain", "plain"], "{kinds:?}");
    assert_eq!(reports[0].constrain, "json_schema");
    assert_eq!(reports[3].constrain, "off");
}

#[test]
fn a_server_that_ignores_the_field_is_caught_by_the_probe() {
    let server = Server::start(|_, seen| {
        if !seen.is_chat() {
            return Do::Reply(json_ok(r#"{"data":[{"id":"m"}]}"#));
        }
        // A 200 whatever the request says: the constraint is dropped silently.
        Do::Reply(json_ok(&chat_body(FREE_REPLY)))
    });
    let d = shipped_dir("ignores", &server.url("/v1/chat/completions"), "auto");
    let mut a = agent(&d);
    let reports = cycles(&mut a, 3);
    for r in &reports {
        assert!(r.error.is_none() && !r.invalid_reply, "cycle {}: {:?}", r.cycle, r);
        assert_eq!(r.constrain, "off");
    }
    let chats: Vec<Seen> = server.chats();
    assert_eq!(chats.len(), 5, "two probes (grammar, schema), then one request per cycle");
    assert!(chats[0].body_str().contains("\"grammar\""));
    assert!(chats[1].body_str().contains("\"response_format\""));
    assert!(chats[2..].iter().all(|s| !has_constraint(s)), "no constraint once the probe found it ignored");
}

#[test]
fn a_server_that_drops_the_connection_on_a_grammar_is_sent_none() {
    let server = Server::start(|_, seen| {
        if !seen.is_chat() {
            return Do::Reply(json_ok(r#"{"data":[{"id":"m"}]}"#));
        }
        if seen.body_str().contains("\"grammar\"") {
            return Do::Close;
        }
        Do::Reply(json_ok(&chat_body(FREE_REPLY)))
    });
    // Configured: the cycle's request drops, is sent once more without, and the run goes on.
    let d = shipped_dir("drops", &server.url("/v1/chat/completions"), "grammar");
    let mut a = agent(&d);
    let reports = cycles(&mut a, 3);
    for r in &reports {
        assert!(r.error.is_none() && !r.invalid_reply, "cycle {}: {:?}", r.cycle, r);
    }
    assert_ne!(reports[2].constrain, "grammar");
    // Probed: the probe notices and the grammar is never sent in a cycle.
    let before = server.seen().len();
    let d2 = shipped_dir("drops-auto", &server.url("/v1/chat/completions"), "auto");
    let mut a2 = agent(&d2);
    let reports = cycles(&mut a2, 2);
    for r in &reports {
        assert!(r.error.is_none() && !r.invalid_reply, "cycle {}: {:?}", r.cycle, r);
        assert_ne!(r.constrain, "grammar");
    }
    let later: Vec<Seen> = server.seen().into_iter().skip(before).filter(Seen::is_chat).collect();
    let cycle_requests = &later[later.len() - 2..];
    assert!(cycle_requests.iter().all(|s| !s.body_str().contains("\"grammar\"")));
}

// ---------------------------------------------------------------------------------------------
// Novelty: a product save sampled from the grammar never names a stored entry
// ---------------------------------------------------------------------------------------------

/// Random walks with the task's product on: each cycle the product is refreshed from the live
/// state, the grammar is generated with its taken names and this cycle's ask (names for the
/// plan, or the entry of the plan's next name), and a reply sampled from it is read, filed as
/// the agent files it, and carried out; the plan is then settled as the agent settles it. No
/// name in a plan is stored, and every save must be filed under a key that is not stored yet
/// (and then succeed), carry the product's tags, and not be named by a word of the task. The store starts with entries under the product's tags whose names share prefixes
/// (a trie with inner nodes that end names, and a name as long as a name may be).
#[test]
fn product_saves_sampled_from_the_grammar_never_name_a_stored_entry() {
    use lkjagent::agent::product::Product;
    let d = shipped_dir("novelty", "http://127.0.0.1:9/v1/chat/completions", "auto");
    let cfg = config::load(&d.0).unwrap();
    let shape = cfg.prompts.shape("evaluating");
    assert!(shape.actions.contains(ActionKind::StorageSave), "the shipped evaluating state saves");
    let mut reader = Reader::new();
    let (mut saves, mut several) = (0, 0);
    for seed in 0..24u64 {
        let mut live = Live::new(seed);
        let mut r = rng(seed ^ 0x5EED);
        // Names a sampler hits often: one and two letters, prefixes of each other.
        let names = [
            "a",
            "ab",
            "abc",
            "b",
            "ba",
            "c",
            "cooking_x",
            "z9",
            "sear",
            "languagerefinery35214f98",
            "languagerefinery35214f9",
        ];
        for name in names {
            if !r().is_multiple_of(3) {
                live.store.put(&normalize(&format!("cooking,glossary,{name}")).unwrap(), "x: y", 1).unwrap();
            }
        }
        let mut product = Product::new();
        let mut c = Constrainer::new(&cfg.llm, seed);
        for step in 0..60 {
            product.refresh(&live.working, Some(&live.store));
            assert_eq!(product.key().map(|k| k.as_str()), Some("cooking,glossary"));
            for mode in [Mode::Grammar, Mode::JsonSchema] {
                c.prepare(
                    Some(mode),
                    shape,
                    &cfg.agent.states,
                    1,
                    &live.working,
                    Some(&live.store),
                    &PINNED_KEYS,
                    &cfg.agent.log_prefixes(),
                    Some(&product),
                )
                .unwrap();
                let text = c.text().to_string();
                let reply = if mode == Mode::Grammar {
                    let g = Grammar::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
                    assert!(g.max_repetition_product() < 2000);
                    g.sample(&mut r)
                } else {
                    let mut doc = Document::with_capacity(4096, 1 << 16);
                    doc.parse(text.as_bytes()).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
                    let mut out = String::new();
                    sample_schema(doc.root(), &mut r, &mut Writer::compact(&mut out));
                    out
                };
                let it = reader.read(reply.as_bytes(), 1);
                assert!(!it.has_errors(), "seed {seed} step {step}: {:?}\n{reply}", it.problems());
                let mut done = String::new();
                for a in it.actions() {
                    let value = a.value.unwrap_or("");
                    if a.kind == ActionKind::WorkingMemoryAdd {
                        // Names for the plan: none of them is stored, or a word of the task.
                        assert_eq!((mode, a.tags), (Mode::Grammar, "plan"), "{reply}");
                        // A heading, then a numbered list, one name a line, the view's names first.
                        let list = value.strip_prefix("Common cooking terms:\n").unwrap_or_else(|| panic!("{reply}"));
                        let mut names = Vec::new();
                        for (i, line) in list.lines().enumerate() {
                            let name = line.strip_prefix(&format!("{}. ", i + 1)).unwrap_or_else(|| panic!("{reply}"));
                            names.push(name);
                        }
                        assert!(names.len() >= 2, "{reply}");
                        let ProductAsk::Names { first, .. } = product.ask() else { panic!("{reply}") };
                        // Names of one word: a made-up second word set the pattern of a list.
                        assert!(names.iter().skip(first as usize - 1).all(|n| !n.contains(' ')), "{reply}");
                        for name in names.into_iter().skip(first as usize - 1) {
                            let tag: String = name.to_ascii_lowercase().replace([' ', '-'], "_");
                            let key = normalize(&format!("cooking,glossary,{tag}")).unwrap();
                            assert!(
                                live.store.find(&key).is_none(),
                                "seed {seed} step {step}: {name} is stored\n{reply}"
                            );
                            assert!(!["terms", "term", "cooking", "glossary"].contains(&tag.as_str()), "{reply}");
                        }
                        let r = actions::apply(&a, &mut live.working, &mut live.store, &mut live.scratch, 2).unwrap();
                        assert!(r.ok, "{}", r.message.as_str());
                        continue;
                    }
                    assert_eq!(a.kind, ActionKind::StorageSave, "{reply}");
                    assert_eq!(normalize(a.tags).unwrap().as_str(), "cooking,glossary", "{reply}");
                    if mode == Mode::JsonSchema {
                        // The schema has no exclusions: a taken name is refused when filed or saved.
                        let _ = product.file(&normalize(a.tags).unwrap(), value);
                        continue;
                    }
                    // The entries of the names asked about, one a line, each filed on its own
                    // (as the agent does).
                    let ProductAsk::Define(names) = product.ask() else { panic!("{reply}") };
                    done = names.to_string();
                    several += usize::from(done.contains('\n'));
                    assert_eq!(product.answers_several(&normalize(a.tags).unwrap()), done.contains('\n'));
                    assert_eq!(value.lines().count(), done.lines().count(), "{reply}");
                    for (line, name) in value.lines().zip(done.lines()) {
                        assert!(line.starts_with(&format!("{name}: ")), "{reply}");
                        let filed = product.file(&normalize(a.tags).unwrap(), line);
                        let key = filed.unwrap_or_else(|why| panic!("{why}: {reply}")).expect("a product save");
                        assert!(live.store.find(&key).is_none(), "seed {seed} step {step}: {key} is stored\n{reply}");
                        assert!(key.has_tag("cooking") && key.has_tag("glossary") && key.tag_count() == 3, "{key}");
                        // The grammar leaves no name the product refuses; a random text may still
                        // be refused for what it says (only the name's or the task's words).
                        let why = product.repeats(&key, line).unwrap_or("");
                        assert!(!why.starts_with("its name"), "{key}: {line}: {why}");
                        let filed_action = lkjagent::reply::Action { tags: key.as_str(), value: Some(line), ..a };
                        let r = actions::apply(&filed_action, &mut live.working, &mut live.store, &mut live.scratch, 2)
                            .unwrap();
                        assert!(r.ok, "{}: {}", key, r.message.as_str());
                        product.saved(line);
                        saves += 1;
                    }
                }
                for name in done.lines() {
                    product.asked(name);
                }
                if mode == Mode::Grammar {
                    let mut scratch = FixedBuf::with_capacity("plan", 4096);
                    product.settle_plan(&mut live.working, &done, &mut scratch, 2).unwrap();
                }
                product.refresh(&live.working, Some(&live.store));
            }
        }
    }
    // Random names are mostly not name-shaped (the plan drops them and asks again): some saves
    // happen all the same, every one of them new.
    assert!(saves >= 50, "replies sampled from the grammar save: {saves}");
    assert!(several >= 10, "replies that define several names: {several}");
}

/// The product grammar's name rule, read by the independent GBNF reader: no taken name (of any
/// length up to the longest a name may be, prefixes of each other, the longest possible, in any
/// case, with a space or `-` for `_`) can be written, nor one that starts with a taken name and
/// a separator; every near miss (a prefix, a longer word, another last letter) can.
#[test]
fn the_product_name_rule_excludes_exactly_the_taken_names() {
    let long = "languagerefinery35214f98"; // GRAMMAR_NAME_MAX_CHARS long
    assert_eq!(long.len(), lkjagent::limits::GRAMMAR_NAME_MAX_CHARS as usize);
    let mut taken = vec![
        "a",
        "a_",
        "ab",
        "abc",
        "b",
        "ba",
        "braise",
        "braise_",
        "braising",
        "mise_en_place",
        "mise_en_place_",
        "languagerefinery35214f9",
        long,
        "the",
        "the_",
        "z9",
        "lion*",
        "sea_l*",
        "thy*",
    ];
    taken.sort_unstable();
    let (g, text) = product_grammar(&taken, ProductAsk::Entry);
    let reply = |name: &str| {
        format!(
            "<agent>\n<action><type>storage_save</type><tags>cooking,glossary</tags><value>{name}: to brown it.</value></action>\n</agent>"
        )
    };
    let written = [
        "A",
        "AB",
        "Abc",
        "b",
        "Ba",
        "Braise",
        "BRAISING",
        "Mise en place",
        "mise-en-place",
        "Languagerefinery35214f9",
        long,
        "The",
        "Z9",
    ];
    for name in written {
        assert!(!g.matches(&reply(name)), "taken name {name} can be written\n{text}");
    }
    for name in ["The oven", "Braise and sear", "A frame", "Mise en place two"] {
        assert!(!g.matches(&reply(name)), "{name} starts with a taken word\n{text}");
    }
    // Taken as letters (`lion*`): not the name, nor any that starts with its letters.
    for name in ["Lion", "Lions", "Lioness", "Lion cub", "Sea l", "Sea lion", "Sea ls", "Thy", "Thyme"] {
        assert!(!g.matches(&reply(name)), "{name} starts with taken letters\n{text}");
    }
    for name in ["Lio", "Liomys", "Li", "Sea", "Sea bass", "Seal", "Th", "Thai", "Tha"] {
        assert!(g.matches(&reply(name)), "{name} does not start with taken letters\n{text}");
    }
    // Taken, but not as a first word: a name may start with it.
    for name in ["Ab initio", "Ba ba"] {
        assert!(g.matches(&reply(name)), "{name} starts with a word only taken as a name\n{text}");
    }
    // Not as a reader writes a name: small letters first, capitals or digits inside, signs.
    for name in ["sear", "SeAr", "Sear2", "Sous-vide", "Sear  it", "Zrzrzrzr qxzqxz", "ALMOST"] {
        assert!(!g.matches(&reply(name)), "{name} is not shaped as a name\n{text}");
    }
    let misses = [
        "Abcd",
        "Abd",
        "Ac",
        "Bb",
        "Braised",
        "Brais",
        "Mise en plac",
        "Languagerefinery35214f",
        "Z",
        "Sear",
        "C",
        "Theory",
        "Sous vide",
        "Cape buffalo",
        "TCP",
        "HTTP",
        "MP3",
    ];
    for name in misses {
        assert!(g.matches(&reply(name)), "free name {name} cannot be written\n{text}");
    }
    // Past the longest name, not a name, or not an entry: never.
    assert!(!g.matches(&reply("languagerefinery35214f999")));
    assert!(!g.matches(&reply("1st")));
    assert!(!g.matches(&reply("Sear").replace("Sear: to brown it.", "to brown it")));
    assert!(!g.matches(&reply("Sear").replace("cooking,glossary", "cooking,glossary,sear")));

    // Asked for names, the model lists names of one word: the same taken names are excluded,
    // and a second word is not written.
    let (g, text) =
        product_grammar(&taken, ProductAsk::Names { key: "plan", prefix: "Common cooking terms:\n1. ", first: 1 });
    let list = |a: &str, b: &str| {
        format!(
            "<agent>\n<action><type>working_memory_add</type><tags>plan</tags><value>Common cooking terms:\n1. {a}\n2. {b}\n</value></action>\n</agent>"
        )
    };
    for (a, b) in [("Sear", "Theory"), ("Abcd", "Mise"), ("Seal", "TCP"), ("Lio", "Sea")] {
        assert!(g.matches(&list(a, b)), "{a}, {b} cannot be listed\n{text}");
    }
    for (a, b) in
        [("Sea bass", "Sear"), ("Sear", "Cape buffalo"), ("Lion", "Sear"), ("Sear", "Braise"), ("Sear", "Thyme")]
    {
        assert!(!g.matches(&list(a, b)), "{a}, {b} can be listed\n{text}");
    }
    // A word a small model shouts is listed whole, with names taken or none: cut at four
    // capitals, it was stored as a made-up acronym ("CHOL", "DINN", "FLAV": 9 entries of a
    // cooking run); the plan keeps no capitals of more than four.
    let (none, none_text) =
        product_grammar(&[], ProductAsk::Names { key: "plan", prefix: "Common cooking terms:\n1. ", first: 1 });
    for (g, text) in [(&g, &text), (&none, &none_text)] {
        assert!(g.matches(&list("Sear", "CHOLESTEROL")), "a shouted word is cut\n{text}");
        assert!(g.matches(&list("TCP", "HTTP")), "acronyms\n{text}");
    }
    // Two names to ten, numbered in order: one list serves three questions of three names.
    let numbered = |n: usize| {
        let names: Vec<String> = (1..=n).map(|i| format!("{i}. Name{}", (b'a' + i as u8) as char)).collect();
        list("", "").replace("1. \n2. \n", &format!("{}\n", names.join("\n")))
    };
    for n in 2..=10 {
        assert!(g.matches(&numbered(n)), "{n} names cannot be listed\n{}", numbered(n));
    }
    assert!(!g.matches(&numbered(1)) && !g.matches(&numbered(11)));
    assert!(!g.matches(&numbered(3).replace("3. ", "4. ")), "a number skipped");
}

#[test]
fn a_definition_ends_a_word_after_an_apostrophe_as_english_does() {
    let (g, text) = product_grammar(&["cooking*"], ProductAsk::Define("Roux"));
    let reply = definition_reply;
    for ok in [
        "a sauce base of flour and fat.",
        "a cook's thickener, made in a pan.",
        "a thickener that's cooked, and they're fond of it.",
        "a base you'll need, and we'd use it, it isn't hard.",
        "a flour-based paste of butter.",
    ] {
        assert!(g.matches(&reply(ok)), "{ok}\n{text}");
    }
    // What a drifting small model wrote after an apostrophe (SmolLM2-135M): the rest of the
    // sentence run into one word.
    for drift in ["a cat that'sntensed.", "a chef who'sbroughtinhimmck.", "a big animal with a long neck that'sraeli."]
    {
        assert!(!g.matches(&reply(drift)), "{drift}\n{text}");
    }
}

/// Asked about several names, the reply is their entries in the order asked, one a line, each
/// a name the agent wrote and a sentence the model did.
#[test]
fn a_definition_ask_of_several_names_writes_an_entry_for_each_in_turn() {
    let (g, text) = product_grammar(&["cooking*"], ProductAsk::Define("Roux\nSear\nMise en place"));
    let reply = |value: &str| {
        format!(
            "<agent>\n<action><type>storage_save</type><tags>cooking,glossary</tags><value>{value}</value></action>\n</agent>"
        )
    };
    let ok = "Roux: a paste of flour and fat.\nSear: a way to brown meat.\nMise en place: a set of ready things.";
    assert!(g.matches(&reply(ok)), "{text}");
    for no in [
        "Roux: a paste of flour and fat.",
        "Roux: a paste of flour and fat.\nSear: a way to brown meat.",
        "Sear: a way to brown meat.\nRoux: a paste of flour and fat.\nMise en place: a set of ready things.",
        "Roux: a paste of flour and fat.\nSear: a way to brown meat.\nMise en place: a set of ready things.\n",
        "Roux: a paste of flour and fat. Sear: a way to brown meat.\nMise en place: a set of ready things.",
    ] {
        assert!(!g.matches(&reply(no)), "{no}\n{text}");
    }
}

/// The grammar of a product ask (`ask`) in a cooking glossary whose taken names are `taken`.
fn product_grammar(taken: &[&str], ask: ProductAsk<'_>) -> (Grammar, String) {
    let states = vec!["evaluating".to_string()];
    let shape =
        Shape { next_state: false, next_mask: 0, log: None, actions: ActionSet::NONE.with(ActionKind::StorageSave) };
    let lang = grammar::Language {
        product: Some(grammar::ProductSave { tags: "cooking,glossary", taken, ask }),
        ..plain_language(&states, shape)
    };
    let mut buf = FixedBuf::with_capacity("test grammar", lkjagent::limits::GRAMMAR_MAX_BYTES);
    grammar::gbnf::write(&lang, &mut buf).unwrap();
    let text = buf.as_str().unwrap().to_string();
    (Grammar::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}")), text)
}

#[test]
fn a_definition_is_one_sentence_of_any_clauses_within_its_words() {
    let (g, text) = product_grammar(&["cooking*"], ProductAsk::Define("Roux"));
    let reply = definition_reply;
    let max = lkjagent::limits::GRAMMAR_ENTRY_MAX_WORDS as usize;
    let words = |n: usize| {
        let mut s = String::from("a");
        for _ in 1..n {
            s.push_str(" paste");
        }
        s + "."
    };
    // A first clause as long as a definition's sentence is: with a clause cut at 8 words, 774 of
    // 1,168 definitions in model checks ended at the cut, most of them mid-phrase ("A large and
    // powerful primate that is found.") or with the next words run together ("ground beef
    // andcheese").
    let long = "a thick paste of flour and butter that is cooked slowly in a pan and used to make sauces and soups.";
    for ok in [long, "a base of flour, butter and milk, for sauces, soups and stews.", &words(3), &words(max)] {
        assert!(g.matches(&reply(ok)), "{ok}\n{text}");
    }
    let commas = "a base, of flour, butter, and milk, for sauces.";
    for no in ["a paste.", "a paste", &words(max + 1), commas] {
        assert!(!g.matches(&reply(no)), "{no}\n{text}");
    }
}

/// A grammar language of `states` and `shape` with no keys, no pins and no product.
fn plain_language(states: &[String], shape: Shape) -> grammar::Language<'_> {
    grammar::Language {
        states,
        shape,
        bounds: Bounds::default(),
        working_keys: &grammar::NoKeys,
        stored_keys: &grammar::NoKeys,
        search_tags: &grammar::NoKeys,
        pinned: &[],
        managed: &[],
        recent: &[],
        in_working: &grammar::NoKeys,
        product: None,
    }
}

/// The reply that saves `sentence` as the definition of "Roux" in a cooking glossary.
fn definition_reply(sentence: &str) -> String {
    format!(
        "<agent>\n<action><type>storage_save</type><tags>cooking,glossary</tags><value>Roux: {sentence}</value></action>\n</agent>"
    )
}
