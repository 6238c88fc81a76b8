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

/// A pattern of the subset the generator writes (`^...$`; classes, groups, `?`, `{m,n}`,
/// `\`-escaped and plain literal characters) as a GBNF grammar.
fn pattern_grammar(p: &str) -> Grammar {
    let body = p.strip_prefix('^').unwrap().strip_suffix('$').unwrap();
    let lit = |c: char| match c {
        '"' => "\"\\\"\"".to_string(),
        '\\' => "\"\\\\\"".to_string(),
        '\n' => "\"\\n\"".to_string(),
        c => format!("\"{c}\""),
    };
    let mut g = String::from("root ::= ");
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '[' => {
                g.push_str(" [");
                for c in chars.by_ref() {
                    match c {
                        ']' => break,
                        '\n' => g.push_str("\\n"),
                        c => g.push(c),
                    }
                }
                g.push(']');
            }
            '{' => {
                g.push('{');
                for c in chars.by_ref() {
                    g.push(c);
                    if c == '}' {
                        break;
                    }
                }
            }
            '(' => g.push_str(" ( "),
            ')' => g.push_str(" )"),
            '?' | '*' | '+' => g.push(c),
            '\\' => {
                g.push(' ');
                g.push_str(&lit(chars.next().unwrap()));
            }
            c => {
                g.push(' ');
                g.push_str(&lit(c));
            }
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
        grammar::schema::write(&lang, true, &mut buf).unwrap();
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

/// What a loopback model says about a subject it is asked to write a unit about.
fn sentence_about(head: &str) -> String {
    // Each opens with its subject, as the grammar and the schema have a unit about one open.
    match head {
        "Water regularly" => "Water regularly and deeply, twice a week.",
        "Soak the roots" => "Soak the roots es una forma de regar que se usa en el huerto de la casa.",
        "Use mulch" => "Use mulch of straw around the stems to keep the soil moist.",
        "Stake the plants" => "Stake the plants with a tall stick for each stem as it grows.",
        "Prune the suckers" => "Prune the suckers that grow between stem and branch.",
        _ => {
            return format!(
                "{} as a gardener nearby does it in your climate.",
                head.rsplit(" – ").next().unwrap_or(head)
            )
        }
    }
    .to_string()
}

/// The GBNF literal that follows `marker` in `g`, unescaped (`\x0A`, `\"`, `\\`).
fn literal_after(g: &str, marker: &str) -> String {
    let at = g.find(marker).unwrap_or_else(|| panic!("{marker} in\n{g}")) + marker.len();
    let rest = g[at..].strip_prefix(" \"").unwrap_or_else(|| panic!("a literal after {marker}\n{g}"));
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return out,
            '\\' => match chars.next().unwrap() {
                'x' => {
                    let hex: String = chars.by_ref().take(2).collect();
                    out.push(char::from_u32(u32::from_str_radix(&hex, 16).unwrap()).unwrap());
                }
                c => out.push(c),
            },
            c => out.push(c),
        }
    }
    panic!("an unclosed literal after {marker}\n{g}")
}

/// A loopback model that follows the agent's grammar: the probe gets its word, an outline ask
/// the next of `lists` (subjects one a line, numbered on from the ask's prefix; the last list
/// again once they run out), a unit ask [`sentence_about`] its head. Every reply is checked
/// against the grammar sent.
fn grammar_follower(lists: &'static [&'static str]) -> Server {
    let count = std::sync::Arc::new(AtomicUsize::new(0));
    Server::start(move |_, seen| {
        if !seen.is_chat() {
            return Do::Reply(json_ok(r#"{"data":[{"id":"m"}]}"#));
        }
        let Some(g) = field(seen, "grammar") else { return Do::Reply(json_ok(&chat_body("no grammar"))) };
        let grammar = Grammar::parse(&g).unwrap_or_else(|e| panic!("the agent sent a malformed grammar: {e}\n{g}"));
        if g.contains("lkjok") {
            return Do::Reply(json_ok(&chat_body("lkjok")));
        }
        // A product ask's grammar is its value alone (`root ::= value`): an outline's list
        // or a unit's text after its head, which the agent wraps in the action it asked for.
        assert!(g.starts_with("# lkjagent reply grammar (generated each cycle)\nroot ::= value\n"), "{g}");
        let value = follow(&literal_after(&g, "value ::="), g.contains("\nitems ::= "), &count, lists);
        assert!(grammar.matches(&value), "the reply is not in the grammar sent\n{value}\n{g}");
        Do::Reply(json_ok(&chat_body(&value)))
    })
}

/// The value a following model writes after `start`, the fixed start of a product ask's value:
/// for an outline, the next of `lists` (the `count`-th; the last again once they run out),
/// numbered on from the start's number; for a unit, [`sentence_about`] its head.
fn follow(start: &str, outline: bool, count: &AtomicUsize, lists: &[&str]) -> String {
    if outline {
        let first: usize = start.trim_end().rsplit('\n').next().unwrap().trim_end_matches('.').parse().unwrap();
        let n = count.fetch_add(1, Ordering::Relaxed).min(lists.len() - 1);
        let items: Vec<String> = lists[n]
            .split('\n')
            .enumerate()
            .map(|(i, s)| if i == 0 { s.to_string() } else { format!("{}. {s}", first + i) })
            .collect();
        format!("{start}{}\n", items.join("\n"))
    } else {
        // The start is the head and `": "`, and the opening after it where the unit has one.
        let head = start.split(": ").next().unwrap_or(start);
        format!("{head}: {}", sentence_about(head))
    }
}

/// The literal start of a schema's `pattern` (`^` and the characters up to its first class of
/// more than one character or group), unescaped: `[.]` is `.`, `\[` is `[`.
fn pattern_literal(p: &str) -> String {
    let mut out = String::new();
    let mut rest = p.strip_prefix('^').unwrap();
    loop {
        let mut chars = rest.chars();
        match (chars.next(), chars.next(), chars.next()) {
            (Some('['), Some(c), Some(']')) => out.push(c),
            (Some('\\'), Some(c), _) => {
                out.push(c);
                rest = &rest[1 + c.len_utf8()..];
                continue;
            }
            (Some(c), _, _) if !"[(".contains(c) => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
                continue;
            }
            _ => return out,
        }
        rest = &rest[2 + out.chars().last().unwrap().len_utf8()..];
    }
}

/// Outlines a loopback model writes: the second names one subject stored already.
const TIP_LISTS: &[&str] = &["Water regularly\nUse mulch", "Water regularly\nStake the plants\nPrune the suckers"];

const TIP_TASK: &str = "Write practical tips for growing tomatoes at home, one tip per entry.";

/// The agent asks a model that follows its grammar for an outline, then for one unit per
/// subject, each filed under the product's tags and its subject's; a subject named again is
/// not asked about again.
#[test]
fn the_agent_outlines_then_writes_one_unit_per_subject() {
    let server = grammar_follower(TIP_LISTS);
    tips_outlined_then_written(&server, "units", "auto");
    // Every prompt shows the task as written, and ends with the ask. An outline's head is the
    // base alone (the states' goals are no use to a list the grammar frames whole); a unit's
    // keeps them.
    let chats = server.chats();
    for s in &chats[1..] {
        let b = s.body_str();
        assert!(b.contains(&format!("<product>\\n{TIP_TASK}\\n")), "{b}");
        let outline = b.contains("\\nitems ::= ");
        assert!(b.contains("<purpose>") && b.contains("<states>") != outline, "{b}");
    }
    let last = chats.last().unwrap().body_str();
    assert!(last.contains("Stake the plants\\n</product>\\nWrite the tip about Prune the suckers.\\n"), "{last}");
    // The second outline went on from the first two subjects stored.
    let outline = chats[4].body_str();
    assert!(
        outline.contains(r"Tips for growing tomatoes at home:\\x0A1. Water regularly\\x0A2. Use mulch\\x0A3. "),
        "{outline}"
    );
}

/// A server that constrains by JSON Schema is asked a product ask's value alone, a string at
/// the schema's root (`pattern` its fixed start and the model's part); its reply, a JSON
/// string, is wrapped in the action asked for and filed as under a grammar.
#[test]
fn a_server_that_follows_the_schema_is_asked_for_the_value_alone() {
    let count = std::sync::Arc::new(AtomicUsize::new(0));
    let server = Server::start(move |_, seen| {
        if !seen.is_chat() {
            return Do::Reply(json_ok(r#"{"data":[{"id":"m"}]}"#));
        }
        assert_eq!(field(seen, "response_format.type").as_deref(), Some("json_schema"), "{}", seen.body_str());
        let Some(p) = field(seen, "response_format.json_schema.schema.pattern") else {
            panic!("a product ask's schema is its value's string: {}", seen.body_str());
        };
        let start = pattern_literal(&p);
        let value = follow(&start, start.ends_with(". "), &count, TIP_LISTS);
        assert!(pattern_grammar(&p).matches(&value), "the reply is not in the pattern sent\n{value}\n{p}");
        Do::Reply(json_ok(&chat_body(&json_string(&value))))
    });
    let reports = tips_outlined_then_written(&server, "schema-units", "json_schema");
    assert!(reports.iter().all(|r| r.constrain == "json_schema"), "{reports:?}");
}

/// Runs six cycles of [`TIP_TASK`] against `server`, a model that follows the constraint with
/// [`TIP_LISTS`], with `llm.constrain` set to `constrain`: an outline, two units, an outline,
/// two units, each unit filed under the product's tags and its subject's (a subject named
/// again is not asked about again). The cycles' reports.
fn tips_outlined_then_written(
    server: &Server,
    label: &str,
    constrain: &str,
) -> Vec<lkjagent::agent::engine::CycleReport> {
    let d = shipped_dir(label, &server.url("/v1/chat/completions"), constrain);
    d.write("memory.json", format!(r#"{{"state":"thinking","iteration":0,"working_memory":{{"task":"{TIP_TASK}"}}}}"#));
    let mut a = agent(&d);
    let reports = cycles(&mut a, 6);
    for r in &reports {
        assert!(r.error.is_none() && !r.invalid_reply, "cycle {}: {:?}", r.cycle, r);
    }
    let kinds: Vec<&str> = reports.iter().map(|r| r.actions.as_slice().first().map_or("", |a| a.kind)).collect();
    assert_eq!(
        kinds,
        ["working_memory_add", "storage_save", "storage_save", "working_memory_add", "storage_save", "storage_save"]
    );
    drop(a);
    let mut store = Store::open(&d.0).unwrap();
    for (tag, head) in [
        ("water_regularly", "Water regularly"),
        ("use_mulch", "Use mulch"),
        ("stake_the_plants", "Stake the plants"),
        ("prune_the_suckers", "Prune the suckers"),
    ] {
        let key = normalize(&format!("tips,tomatoes,{tag}")).unwrap();
        let id = store.find(&key).unwrap_or_else(|| panic!("{key} is not stored"));
        assert_eq!(store.value(id).unwrap(), format!("{head}: {}", sentence_about(head)));
    }
    reports
}

/// A task that asks for a count of units is done once the product holds them: the cycle asks
/// the model nothing more, and says so.
#[test]
fn a_task_that_counts_its_units_is_done_once_they_are_written() {
    const TASK: &str = "Write 3 practical tips for growing tomatoes at home, one tip per entry.";
    let server = grammar_follower(TIP_LISTS);
    let d = shipped_dir("done", &server.url("/v1/chat/completions"), "auto");
    d.write("memory.json", format!(r#"{{"state":"thinking","iteration":0,"working_memory":{{"task":"{TASK}"}}}}"#));
    let mut a = agent(&d);
    let reports = cycles(&mut a, 9);
    let done_at = reports.iter().position(|r| r.task_done).expect("the task is done within 9 cycles");
    let saves =
        reports[..done_at].iter().filter(|r| r.actions.as_slice().iter().any(|x| x.kind == "storage_save")).count();
    assert_eq!(saves, 3, "{reports:?}");
    assert!(reports[done_at..].iter().all(|r| r.task_done && r.actions.is_empty() && r.error.is_none()));
    assert_eq!(a.task_done(), Some((3, "tips")));
    let asked = server.chats().len();
    cycles(&mut a, 2);
    assert_eq!(server.chats().len(), asked, "a done task asks the model nothing");
}

/// A product's first outline is asked three times (`FIRST_OUTLINE_SAMPLES`), with its tokens'
/// log-probabilities, and the list the model wrote the most surely is the plan (its subjects planned, its sentences saved as
/// units); a later one, which goes on from the units stored, once. A reply of
/// hundreds of tokens, each with its bytes and its top alternative, is read whole; a server
/// that sends no log-probabilities is asked once.
#[test]
fn an_outline_is_the_surest_of_its_samples() {
    let outlines = std::sync::Arc::new(AtomicUsize::new(0));
    let n = outlines.clone();
    let server = outline_server(move |g, seen| {
        assert!(g.contains("\nitems ::= "), "only outlines are asked here");
        assert!(seen.body_str().contains("\"logprobs\":true"), "{}", seen.body_str());
        let prefix = literal_after(g, "value ::=");
        // The first and third samples are run-together words written unsurely, the second
        // real subjects written surely.
        let (items, logprob) = if n.fetch_add(1, Ordering::Relaxed) != 1 {
            ("Asibet ofmat\n2. Arelatetm iau\n", -4.0)
        } else {
            (SURE_ITEMS, -0.5)
        };
        let value = format!("{prefix}{items}");
        let content = format!("<agent>\n<action><type>working_memory_add</type><tags>plan</tags><value>{value}</value></action>\n</agent>");
        let from = content.find("<value>").unwrap() + "<value>".len();
        let to = content.find("</value>").unwrap();
        assert!(logprob < -1.0 || content.len() * 14 > 4096, "more JSON values than the old arena held");
        scored_reply(&content, |i| if (from..to).contains(&i) { logprob } else { -1.0 })
    });
    let d = shipped_dir("surer", &server.url("/v1/chat/completions"), "auto");
    d.write("memory.json", format!(r#"{{"state":"thinking","iteration":0,"working_memory":{{"task":"{TIP_TASK}"}}}}"#));
    let mut a = agent(&d);
    let r = a.cycle(&mut |_| {}, &|| false).unwrap();
    assert!(r.error.is_none() && !r.invalid_reply, "{r:?}");
    assert_eq!(outlines.load(Ordering::Relaxed), 3, "a first outline is asked three times");
    let plan = a.memory.working.get(&normalize("plan").unwrap()).unwrap().to_string();
    assert_eq!(plan, "Use mulch\nStake the plants");
    let ids: Vec<_> = a.store.ids().collect();
    let saved: Vec<String> = ids.iter().filter_map(|&id| a.store.value(id).ok().map(str::to_string)).collect();
    assert_eq!(saved.len(), 2, "{saved:?}");
    assert!(SURE_ITEMS.contains(saved[0].as_str()) && SURE_ITEMS.contains(saved[1].as_str()), "{saved:?}");
    // A later outline goes on from the units stored: it is asked once.
    assert!(a.memory.working.remove(&normalize("plan").unwrap()));
    let r = a.cycle(&mut |_| {}, &|| false).unwrap();
    assert!(r.error.is_none() && !r.invalid_reply, "{r:?}");
    assert_eq!(outlines.load(Ordering::Relaxed), 4, "a later outline is asked once");
    // A server without log-probabilities is asked once (the grammar follower sends none).
    let follower = grammar_follower(TIP_LISTS);
    let d = shipped_dir("surer-none", &follower.url("/v1/chat/completions"), "auto");
    d.write("memory.json", format!(r#"{{"state":"thinking","iteration":0,"working_memory":{{"task":"{TIP_TASK}"}}}}"#));
    let mut a = agent(&d);
    cycles(&mut a, 1);
    assert_eq!(follower.chats().len(), 2, "the probe and one outline");
}

/// A sample of the first outline that says one thing again and again is written surely,
/// because the model copies itself (a probe's heart facts: "The human heart is a wonder of
/// science and engineering." three times); it is not the plan when another sample yields more
/// than twice as many items that differ by the product's own rules.
#[test]
fn an_outline_sample_that_says_one_thing_again_is_not_taken_however_sure() {
    const SAME: &str = "The soil of a tomato plant is a wonder of science and engineering.\n\
        2. The soil of a tomato plant is a wonder of science and engineering, truly.\n\
        3. The soil of a tomato plant is a wonder of science and engineering and art.\n";
    const DISTINCT: &str = "Spread a thick layer of straw around the stems to keep the soil moist.\n\
        2. Water the plants deeply at the base early in the morning, never at night.\n\
        3. Tie each stem loosely to a wooden stake as the plant grows taller.\n\
        4. Pinch off the small shoots that grow between the main stem and the branches.\n";
    let outlines = std::sync::Arc::new(AtomicUsize::new(0));
    let n = outlines.clone();
    let server = outline_server(move |g, _| {
        let prefix = literal_after(g, "value ::=");
        // The first sample says one thing three times, most surely; the second says four
        // things less surely; the third is run-together words, unsurely.
        let (items, logprob) = match n.fetch_add(1, Ordering::Relaxed) {
            0 => (SAME, -0.2),
            1 => (DISTINCT, -1.5),
            _ => ("Asibet ofmat\n2. Arelatetm iau\n", -4.0),
        };
        let content = format!(
            "<agent>\n<action><type>working_memory_add</type><tags>plan</tags><value>{prefix}{items}</value></action>\n</agent>"
        );
        let from = content.find("<value>").unwrap() + "<value>".len();
        let to = content.find("</value>").unwrap();
        scored_reply(&content, |i| if (from..to).contains(&i) { logprob } else { -1.0 })
    });
    let d = shipped_dir("yield", &server.url("/v1/chat/completions"), "auto");
    d.write("memory.json", format!(r#"{{"state":"thinking","iteration":0,"working_memory":{{"task":"{TIP_TASK}"}}}}"#));
    let mut a = agent(&d);
    let r = a.cycle(&mut |_| {}, &|| false).unwrap();
    assert!(r.error.is_none() && !r.invalid_reply, "{r:?}");
    assert_eq!(outlines.load(Ordering::Relaxed), 3, "a first outline is asked three times");
    let ids: Vec<_> = a.store.ids().collect();
    let saved: Vec<String> = ids.iter().filter_map(|&id| a.store.value(id).ok().map(str::to_string)).collect();
    assert!(!saved.is_empty() && saved.iter().all(|v| DISTINCT.contains(v.as_str())), "{saved:?}");
}

/// An outline's item with a token the model gave less than one chance in 8,000 (a word it ran
/// into, under the grammar), or a number it guessed (a digit under one chance in three), is neither saved
/// nor planned; one whose number the model was sure of is. The exchange log records which
/// items were unsure, so a replay of the run, which has no log-probabilities, stores the same.
#[test]
fn an_outline_item_the_model_wrote_unsurely_is_left_out_and_a_replay_agrees() {
    const JUNK: &str = "Saturn has urns around the plants so that the tomatoes grow.";
    const GUESSED: &str = "Give each plant 27 litres of water a day in the summer.";
    let server = outline_server(move |g, _| {
        let prefix = literal_after(g, "value ::=");
        let items = format!(
            "Spread a thick layer of straw around the stems to keep the soil moist.\n2. {JUNK}\n\
             3. Water the plants deeply at the base early in the morning.\n4. {GUESSED}\n\
             5. Pinch out the side shoots that grow 2 cm below the first flowers.\n"
        );
        // The value alone, as the grammar asks: the agent reads its tokens' offsets in it.
        let content = format!("{prefix}{items}");
        // All likely but one token inside the second item ("urns") and a digit of the
        // fourth's number ("7", one chance in four).
        let unlikely = content.find("urns").unwrap() + 1;
        let guessed = content.find("27").unwrap() + 1;
        scored_reply(&content, |i| match i {
            _ if i == unlikely => -12.0,
            _ if i == guessed => -1.4,
            _ => -0.5,
        })
    });
    let d = shipped_dir("unsure", &server.url("/v1/chat/completions"), "auto");
    d.write("memory.json", format!(r#"{{"state":"thinking","iteration":0,"working_memory":{{"task":"{TIP_TASK}"}}}}"#));
    let cfg = config::load(&d.0).unwrap();
    let client = llm::Client::new(&cfg.llm).unwrap();
    let mut a = Agent::open(&d.0, cfg, Model::Client(Box::new(client)), true).unwrap();
    let r = a.cycle(&mut |_| {}, &|| false).unwrap();
    assert!(r.error.is_none() && !r.invalid_reply, "{r:?}");
    let ids: Vec<_> = a.store.ids().collect();
    let saved: Vec<String> = ids.iter().filter_map(|&id| a.store.value(id).ok().map(str::to_string)).collect();
    assert_eq!(saved.len(), 3, "{saved:?}");
    assert!(saved.iter().all(|v| v != JUNK && v != GUESSED), "{saved:?}");
    assert!(saved.iter().any(|v| v.contains("2 cm below")), "{saved:?}");
    drop(a);
    let logs: Vec<_> = std::fs::read_dir(d.0.join("logs")).unwrap().map(|e| e.unwrap().path()).collect();
    let exchange = logs.iter().find(|p| p.file_name().unwrap().to_string_lossy().starts_with("exchange-")).unwrap();
    let lines = std::fs::read_to_string(exchange.join("exchange.jsonl")).unwrap();
    assert!(lines.contains(&format!(r#""unsure":"{JUNK}\n{GUESSED}\n""#)), "{lines}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lkjagent"))
        .arg("--data")
        .arg(&d.0)
        .arg("replay")
        .arg(exchange)
        .arg("--expect")
        .arg(d.0.join("memory.json"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("identical to"), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
}

/// `llm.logprobs`: every outline asks for log-probabilities by default; `first_outline` asks
/// them of the first outline's three samples only; `off` of none, and the first outline is
/// asked once. Each outline here is units in one sentence, new ones each time (an outline
/// whose units are all repeats is barren, and the one after it starts over from nothing), so
/// every cycle asks for one.
#[test]
fn llm_logprobs_says_which_outlines_ask_for_log_probabilities() {
    const UNITS: [&str; 8] = [
        "Spread a thick layer of straw around the stems to keep the soil moist.\n3. Water the plants deeply at the base early in the morning.",
        "Tie each stem loosely to a tall stake as soon as the first flowers open.\n3. Pinch out the side shoots that grow between the stem and a leaf.",
        "Feed the plants with a liquid tomato fertilizer once the first fruits set.\n3. Pick the lowest leaves off when they turn yellow or touch the ground.",
        "Grow basil beside the tomatoes to keep whiteflies away from the leaves.\n3. Give every plant a deep pot with holes for the water to drain.",
        "Turn the pots on the windowsill every week so the stems grow straight.\n3. Harvest the fruits when they are red and still a little firm.",
        "Plant the seedlings deeper than they grew so they root along the stem.\n3. Keep a gap of two feet between plants so the air moves freely.",
        "Cover young plants with a fleece on cold nights in early spring.\n3. Rotate the bed each year so soil diseases do not build up.",
        "Shake the flowering trusses gently on still days to help them set fruit.\n3. Remove any leaf with brown spots and throw it away, not on the compost.",
    ];
    let runs = [
        (None, [true, true, true, true, true]),
        (Some("first_outline"), [true, true, true, false, false]),
        (Some("off"), [false, false, false, false, false]),
    ];
    for (setting, requests) in runs {
        let calls = std::sync::Arc::new(AtomicUsize::new(0));
        let server = outline_server(move |g, _| {
            let prefix = literal_after(g, "value ::=");
            let units = UNITS[calls.fetch_add(1, Ordering::Relaxed) % UNITS.len()];
            let content = format!(
                "<agent>\n<action><type>working_memory_add</type><tags>plan</tags><value>{prefix}\
                 {units}\n</value></action>\n</agent>"
            );
            scored_reply(&content, |_| -0.5)
        });
        let d = shipped_dir("logprobs-setting", &server.url("/v1/chat/completions"), "grammar");
        if let Some(v) = setting {
            let cfg = std::fs::read_to_string(d.0.join("config.json")).unwrap();
            let cfg = cfg
                .replace("\"constrain\": \"grammar\"", &format!("\"constrain\": \"grammar\", \"logprobs\": \"{v}\""));
            d.write("config.json", cfg);
        }
        d.write(
            "memory.json",
            format!(r#"{{"state":"thinking","iteration":0,"working_memory":{{"task":"{TIP_TASK}"}}}}"#),
        );
        let cfg = config::load(&d.0).unwrap();
        let client = llm::Client::new(&cfg.llm).unwrap();
        let mut a = Agent::open(&d.0, cfg, Model::Client(Box::new(client)), true).unwrap();
        for _ in 0..3 {
            let r = a.cycle(&mut |_| {}, &|| false).unwrap();
            assert!(r.error.is_none() && !r.invalid_reply, "{setting:?}: {r:?}");
        }
        let outlines: Vec<bool> = server
            .chats()
            .iter()
            .filter(|c| field(c, "grammar").is_some_and(|g| g.contains("items ::=")))
            .map(|c| c.body_str().contains("\"logprobs\":true"))
            .collect();
        // Three samples of the first outline (one when off), then one a cycle.
        let expect: Vec<bool> = if setting == Some("off") { requests[..3].to_vec() } else { requests.to_vec() };
        assert_eq!(outlines, expect, "{setting:?}");
    }
}

/// The surer outline's items: two subjects, then two units in one sentence.
const SURE_ITEMS: &str = "Use mulch\n2. Stake the plants\n\
    3. Spread a thick layer of straw around the stems to keep the soil moist and cool in summer.\n\
    4. Water the plants deeply at the base early in the morning, never on the leaves at night.\n";

/// A server that lists a model, answers the start-up probe, and answers every other chat
/// request with the body `reply` gives for its grammar.
fn outline_server(reply: impl Fn(&str, &Seen) -> String + Send + Sync + 'static) -> Server {
    Server::start(move |_, seen| {
        if !seen.is_chat() {
            return Do::Reply(json_ok(r#"{"data":[{"id":"m"}]}"#));
        }
        let g = field(seen, "grammar").unwrap_or_default();
        if g.contains("lkjok") {
            return Do::Reply(json_ok(&chat_body("lkjok")));
        }
        Do::Reply(json_ok(&reply(&g, seen)))
    })
}

/// A chat reply of `content` with its tokens' log-probabilities, one token a byte (the byte at
/// `i` scored `logprob(i)`), each with its bytes and its top alternative, as llama-cpp-python
/// sends them: about 14 JSON values a token.
fn scored_reply(content: &str, logprob: impl Fn(usize) -> f64) -> String {
    let token = |i: usize| {
        let (t, b, lp) = (json_string(&content[i..i + 1]), content.as_bytes()[i], logprob(i));
        let one = format!(r#""token":{t},"logprob":{lp},"bytes":[{b}]"#);
        format!(r#"{{{one},"top_logprobs":[{{{one}}}]}}"#)
    };
    let tokens: Vec<String> = (0..content.len()).map(token).collect();
    format!(
        r#"{{"choices":[{{"index":0,"message":{{"role":"assistant","content":{}}},"finish_reason":"stop","logprobs":{{"content":[{}]}}}}]}}"#,
        json_string(content),
        tokens.join(",")
    )
}

/// A JSON string literal of `s` (quotes, backslashes and control characters escaped).
fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Every prompt shows the task as written, whatever its words, language or length, and stays
/// within its budget.
#[test]
fn every_prompt_shows_any_task_whole_within_its_budget() {
    let long = "Write short notes about rivers and the towns along them. ".repeat(72);
    assert!(long.len() >= 4000);
    let tasks = [
        "Erstelle ein Glossar der Astronomie-Begriffe: ein Eintrag pro Begriff, mit einer Definition in einem Satz.",
        "日本の一週間の旅行を計画してください。一日一項目。",
        long.trim(),
    ];
    for task in tasks {
        let server = grammar_follower(TIP_LISTS);
        let d = shipped_dir("any-task", &server.url("/v1/chat/completions"), "auto");
        let memory = format!(r#"{{"state":"thinking","iteration":0,"working_memory":{{"task":"{task}"}}}}"#);
        d.write("memory.json", memory);
        let mut a = agent(&d);
        for r in cycles(&mut a, 3) {
            assert!(r.error.is_none() && !r.invalid_reply, "{task}: cycle {}: {:?}", r.cycle, r);
            assert!(r.tokens_est < 8192 - 3072, "{task}: {r:?}");
            assert!(String::from_utf8_lossy(a.last_prompt()).contains(&format!("<product>\n{task}\n")), "{task}");
        }
    }
}

/// The first subject's unit is kept apart as doubtful (another language); a restart does not
/// ask about it again, and a changed task starts a new product while the old one stays.
#[test]
fn a_restart_keeps_what_was_asked_and_a_changed_task_starts_a_new_product() {
    const LISTS: &[&str] = &["Soak the roots\nUse mulch"];
    let server = grammar_follower(LISTS);
    let d = shipped_dir("restart", &server.url("/v1/chat/completions"), "auto");
    d.write("memory.json", format!(r#"{{"state":"thinking","iteration":0,"working_memory":{{"task":"{TIP_TASK}"}}}}"#));
    let mut a = agent(&d);
    for r in cycles(&mut a, 2) {
        assert!(r.error.is_none() && !r.invalid_reply, "cycle {}: {:?}", r.cycle, r);
    }
    drop(a);
    let mut a = agent(&d);
    let r = cycles(&mut a, 1);
    assert!(r[0].error.is_none(), "{r:?}");
    drop(a);
    let chats = server.chats();
    let last = chats.last().unwrap().body_str();
    assert!(last.contains("Write the tip about Use mulch."), "asked again after a restart: {last}");
    let store = Store::open(&d.0).unwrap();
    assert!(store.find(&normalize("doubt,soak_the_roots,tips,tomatoes").unwrap()).is_some());
    assert!(store.find(&normalize("tips,tomatoes,use_mulch").unwrap()).is_some());
    drop(store);
    // A changed task: the old plan goes, the first ask is an outline, its units its own.
    let memory = std::fs::read_to_string(d.0.join("memory.json")).unwrap();
    let other = "Write practical tips for keeping bees, one tip per entry.";
    d.write("memory.json", memory.replace(TIP_TASK, other));
    let mut a = agent(&d);
    let r = cycles(&mut a, 2);
    assert_eq!(r[0].actions.as_slice().first().map(|a| a.kind), Some("working_memory_add"), "{r:?}");
    drop(a);
    let store = Store::open(&d.0).unwrap();
    assert!(store.find(&normalize("tips,tomatoes,use_mulch").unwrap()).is_some(), "the old product stays");
    let new = lkjagent::agent::product::task::Task::read(other).key.unwrap();
    assert_ne!(new.as_str(), "tips,tomatoes");
    let own = new.union(&normalize("doubt,soak_the_roots").unwrap()).unwrap();
    assert!(store.find(&own).is_some(), "the new product's own: {own}");
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

/// An outline is sent with a presence penalty: a small model listing repeats itself and runs
/// through the letters of a word. A unit is not: there the words of the prompt are the ones to
/// use.
#[test]
fn an_outline_is_asked_with_a_presence_penalty_and_a_unit_is_not() {
    let server = grammar_follower(TIP_LISTS);
    assert_eq!(penalized(TIP_TASK, &server, 4), [true, false, false, true]);
}

/// A model that returns the same reply forever: the loop goes on, cycle after cycle, and
/// nothing it says twice is stored twice.
#[test]
fn a_model_that_says_the_same_forever_does_not_stall_the_loop() {
    let reply = "<agent>\n<action><type>storage_save</type><tags>tips,tomatoes</tags><value>Water regularly: Give the plants deep water twice a week.</value></action>\n</agent>";
    let server = Server::start(move |_, seen| {
        if !seen.is_chat() {
            return Do::Reply(json_ok(r#"{"data":[{"id":"m"}]}"#));
        }
        Do::Reply(json_ok(&chat_body(reply)))
    });
    let d = shipped_dir("same", &server.url("/v1/chat/completions"), "off");
    d.write("memory.json", format!(r#"{{"state":"thinking","iteration":0,"working_memory":{{"task":"{TIP_TASK}"}}}}"#));
    let mut a = agent(&d);
    let reports = cycles(&mut a, 12);
    assert_eq!(reports.len(), 12);
    let ok: usize = reports.iter().map(|r| r.actions.iter().filter(|a| a.ok).count()).sum();
    assert_eq!(ok, 1, "saved once, refused after: {reports:?}");
    assert!(reports.iter().all(|r| r.error.is_none()), "{reports:?}");
    drop(a);
    let store = Store::open(&d.0).unwrap();
    assert_eq!(store.len(), 1);
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
    for (i, r) in reports.iter().enumerate() {
        // The second cycle's schema of the value alone is refused: that try fails, and the
        // cycle is tried again.
        assert_eq!(r.error.is_some(), i == 1, "cycle {}: {:?}", r.cycle, r.error);
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
    // step down) of the product ask's value alone is refused, in the json_schema form and then
    // in the json_object one, and the cycle fails; cycle 3: the whole reply's schema is refused
    // the same way and sent again without it; from then on, no constraint.
    assert_eq!(kinds, ["grammar", "plain", "schema", "schema", "schema", "schema", "plain", "plain"], "{kinds:?}");
    for (i, root) in [(2, "string"), (3, "string"), (4, "object"), (5, "object")] {
        let b = chats[i].body_str();
        assert!(b.contains(&format!(r#""schema":{{"type":"{root}""#)), "request {i}: {b}");
    }
    assert_eq!(reports[0].constrain, "json_schema");
    assert_eq!(reports[1].constrain, "json_schema");
    assert_eq!(reports[3].constrain, "off");
}

/// A server that answers 500 to a schema as `response_format` `json_schema` (llama-cpp-python)
/// but takes it as `json_object` with a `schema` gets it so, and the run stays constrained.
#[test]
fn a_server_that_takes_a_schema_only_as_json_object_gets_it_so() {
    let server = Server::start(|_, seen| {
        if !seen.is_chat() {
            return Do::Reply(json_ok(r#"{"data":[{"id":"m"}]}"#));
        }
        let b = seen.body_str();
        if b.contains(r#""type":"json_schema""#) {
            return Do::Reply(response("500 Internal Server Error", &["Content-Type: application/json"], "{}"));
        }
        Do::Reply(json_ok(&chat_body(FREE_REPLY)))
    });
    let d = shipped_dir("json-object", &server.url("/v1/chat/completions"), "json_schema");
    let mut a = agent(&d);
    let reports = cycles(&mut a, 3);
    for r in &reports {
        assert!(r.error.is_none(), "cycle {}: {:?}", r.cycle, r.error);
        assert_eq!(r.constrain, "json_schema");
    }
    let forms: Vec<&str> = server
        .chats()
        .iter()
        .map(|s| {
            let b = s.body_str();
            if b.contains(r#""type":"json_schema""#) {
                "json_schema"
            } else if b.contains(r#""response_format":{"type":"json_object","schema":{"#) {
                "json_object"
            } else {
                "plain"
            }
        })
        .collect();
    // The 500 is retried once by the client (a 5xx may pass), then the json_object form.
    assert_eq!(forms, ["json_schema", "json_schema", "json_object", "json_object", "json_object"], "{forms:?}");
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
/// The product's asks, sampled from both the grammar and the schema, read back as the
/// agent reads them: an outline is a numbered list of subjects after its prefix, which the
/// product then plans from; a unit is a save of the asked head and its text, filed under the
/// product's tags and one of its own; every save is new to the store.
#[test]
fn product_asks_sampled_from_the_grammar_and_the_schema_read_and_file_as_asked() {
    let (outlines, units, _) = sample_product_asks("Build a glossary of cooking terms.", ["cooking", "glossary"]);
    assert!(outlines >= 20, "outlines sampled: {outlines}");
    assert!(units >= 20, "units sampled and saved: {units}");
}

/// The same walk for a task whose units are about subjects, not names: every unit's text, from
/// the grammar and from the schema, opens with its subject and goes on from it.
#[test]
fn a_unit_about_a_subject_opens_with_it_in_the_grammar_and_the_schema() {
    let task = "Write practical tips for growing tomatoes at home, one tip per entry.";
    let (outlines, _, opened) = sample_product_asks(task, ["tips", "tomatoes"]);
    assert!(outlines >= 20, "outlines sampled: {outlines}");
    assert!(opened >= 20, "units sampled: {opened}");
}

/// Walks of [`product_asks_sampled_from_the_grammar_and_the_schema_read_and_file_as_asked`] on
/// `task`, whose product's tags are `tags`: the outlines read, the units saved as new, and the
/// units asked with an opening (each checked to open with it).
fn sample_product_asks(task: &str, ptags: [&str; 2]) -> (usize, usize, usize) {
    use lkjagent::agent::product::{Product, Verdict};
    let d = shipped_dir("novelty", "http://127.0.0.1:9/v1/chat/completions", "auto");
    let cfg = config::load(&d.0).unwrap();
    let shape = cfg.prompts.shape("evaluating");
    assert!(shape.actions.contains(ActionKind::StorageSave), "the shipped evaluating state saves");
    let mut reader = Reader::new();
    let (mut outlines, mut units, mut opened) = (0, 0, 0);
    let product_tags = ptags.join(",");
    // Drawn uniformly, a word of an outline is in capitals half the time (an item with one
    // longer than an acronym is planned never) and a number often, and a text drawn so is
    // often doubted (a word of another language, a question alone): so many seeds.
    for seed in 0..256u64 {
        let mut live = Live::new(seed);
        live.working.add(&normalize("task").unwrap(), task, 1).unwrap();
        let mut r = rng(seed ^ 0x5EED);
        let mut product = Product::new();
        let mut c = Constrainer::new(&cfg.llm, seed);
        for step in 0..40 {
            let mode = if step % 2 == 0 { Mode::Grammar } else { Mode::JsonSchema };
            product.refresh(&live.working, Some(&live.store));
            let mut view = FixedBuf::with_capacity("view", 8192);
            product.render(task, &mut live.store, &mut view, 4096).unwrap();
            assert_eq!(product.key().map(|k| k.as_str()), Some(product_tags.as_str()));
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
            // The grammar and the schema are the value alone; the agent wraps it in the action
            // it asked for.
            let (kind, tags) = match product.ask() {
                ProductAsk::Outline { key, .. } => ("working_memory_add", key),
                _ => ("storage_save", product_tags.as_str()),
            };
            let reply = if mode == Mode::Grammar {
                let g = Grammar::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
                assert!(g.max_repetition_product() < 2000);
                let value = g.sample(&mut r);
                format!(
                    "<agent>\n<action><type>{kind}</type><tags>{tags}</tags><value>{value}</value></action>\n</agent>"
                )
            } else {
                let mut doc = Document::with_capacity(4096, 1 << 16);
                doc.parse(text.as_bytes()).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
                assert_eq!(doc.root().get("type").and_then(|t| t.as_str()), Some("string"), "{text}");
                let mut value = String::new();
                sample_schema(doc.root(), &mut r, &mut Writer::compact(&mut value));
                format!(r#"{{"action":{{"type":"{kind}","tags":"{tags}","value":{value}}}}}"#)
            };
            let it = reader.read(reply.as_bytes(), 1);
            assert!(!it.has_errors(), "seed {seed} step {step}: {:?}\n{reply}", it.problems());
            let actions: Vec<_> = it.actions().collect();
            assert_eq!(actions.len(), 1, "{reply}");
            let a = actions[0];
            let value = a.value.unwrap_or("");
            match product.ask() {
                ProductAsk::Outline { key, prefix, first, .. } => {
                    assert_eq!((a.kind, a.tags), (ActionKind::WorkingMemoryAdd, key), "{reply}");
                    let list = value.strip_prefix(prefix).unwrap_or_else(|| panic!("{prefix:?}: {reply}"));
                    let items: Vec<&str> = list.trim_end_matches('\n').split('\n').collect();
                    assert!(items.len() >= 2, "{reply}");
                    for (i, item) in items.iter().enumerate().skip(1) {
                        assert!(item.starts_with(&format!("{}. ", first as usize + i)), "{reply}");
                    }
                    assert!(!list.contains(':'), "{reply}");
                    let r = actions::apply(&a, &mut live.working, &mut live.store, &mut live.scratch, 2).unwrap();
                    assert!(r.ok, "{}", r.message.as_str());
                    outlines += 1;
                }
                ProductAsk::Unit { head, opening, .. } => {
                    assert_eq!(a.kind, ActionKind::StorageSave, "{reply}");
                    let pkey = normalize(a.tags).unwrap();
                    assert_eq!(pkey.as_str(), product_tags, "{reply}");
                    assert!(value.starts_with(&format!("{head}: ")), "{head}: {reply}");
                    if !opening.is_empty() {
                        assert!(value.starts_with(&format!("{head}: {opening} ")), "{opening}: {reply}");
                        opened += 1;
                    }
                    let key = product.file(&pkey, value).unwrap_or_else(|why| panic!("{why}: {reply}")).unwrap();
                    assert!(key.has_tag(ptags[0]) && key.has_tag(ptags[1]) && key.tag_count() == 3, "{key}");
                    assert!(live.store.find(&key).is_none(), "seed {seed} step {step}: {key} is stored\n{reply}");
                    if product.judge(&key, value) == Verdict::New {
                        let filed = lkjagent::reply::Action { tags: key.as_str(), ..a };
                        let r =
                            actions::apply(&filed, &mut live.working, &mut live.store, &mut live.scratch, 2).unwrap();
                        assert!(r.ok, "{}: {}", key, r.message.as_str());
                        product.saved(value);
                        units += 1;
                    }
                }
                ProductAsk::Entry => panic!("a state that saves is asked for an outline or a unit"),
            }
            let mut scratch = FixedBuf::with_capacity("plan", 4096);
            product.settle(&mut live.working, &mut scratch, 2, "").unwrap();
        }
    }
    (outlines, units, opened)
}

/// An outline's subjects: a few words each, not a number first, no `:` or `,`, two to ten of
/// them numbered in order after the prefix.
/// An outline's reply, the value alone: `given` (its heading and first item), then `items`
/// numbered on from 2.
fn outline_reply(given: &str, items: &[&str]) -> String {
    let mut v = String::from(given);
    for (i, item) in items.iter().enumerate() {
        v.push_str(&format!("{}. {item}\n", i + 2));
    }
    v
}

#[test]
fn an_outline_lists_subjects_or_units_in_one_sentence_numbered_in_order() {
    let ask =
        ProductAsk::Outline { key: "plan", prefix: "Tips:\n1. Water regularly\n2. ", first: 2, words: 20, latin: true };
    let (g, text) = product_grammar(&[], ask);
    let list = |items: &[&str]| outline_reply("Tips:\n1. Water regularly\n", items);
    for ok in [
        &["Use mulch", "Prune the suckers"][..],
        &["ls", "cd"],
        &["Black hole", "Red giant star", "Don't overwater"],
        &["Trip to Nara", "Kyoto"],
        &["Use a cage", "Kyoto"],
        &["Mulch around the plants, then water them deeply.", "Use mulch"],
        &["One two three four", "Prune"],
        &["NASA and ESA probes", "CELESTIAL bodies"],
        &["Jupiter has 95 known moons.", "Water them 2 times a week"],
        &["Éclairs are choux pastries", "Responsibilities"],
    ] {
        assert!(g.matches(&list(ok)), "{ok:?}\n{text}");
    }
    for no in [
        &["Use mulch"][..],
        &["20 days of rain", "Use mulch"],
        &["Use mulch: always", "Prune"],
        &["Use mulch. Then water", "Prune"],
        &["Use mulch,, compost", "Prune"],
        &["will'tdrytomatmfc", "Prune"],
        &["Smallyardormajigg", "Prune"],
        &["Day 3 in Nara", "Prune"],
        &["Prune", "Use 2 stakes"],
        &["Use mulch", "Tip 12345 of many"],
        &["×coccolite material", "Prune"],
        &["Astrophotographically", "Prune"],
        // A number ends no item: there it is the list's own numbering run into the item
        // ("Use LED light bulbs to reduce electricity usage 2.").
        &["Use LED bulbs to save power 2.", "Prune"],
        &["Prune", "Use solar panels on your roof 5"],
    ] {
        assert!(!g.matches(&list(no)), "{no:?}\n{text}");
    }
    let many: Vec<String> = (0..9).map(|i| format!("Tip{}", (b'a' + i as u8) as char)).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert!(g.matches(&list(&many)), "nine new subjects");
    let ten: Vec<&str> = many.iter().copied().chain(["Tipz"]).collect();
    assert!(g.matches(&list(&ten)), "ten new subjects");
    let eleven: Vec<&str> = ten.iter().copied().chain(["Tipy"]).collect();
    assert!(!g.matches(&list(&eleven)), "eleven new subjects");
    let words = |n: usize| vec!["word"; n].join(" ");
    assert!(g.matches(&list(&[&words(20), "Prune"])), "an item of twenty words");
    assert!(!g.matches(&list(&[&words(21), "Prune"])), "an item of twenty-one words");
    // Names (a glossary's terms) are a few words each.
    let ask = ProductAsk::Outline { key: "plan", prefix: "Terms:\n1. Nebula\n2. ", first: 2, words: 4, latin: true };
    let (g, text) = product_grammar(&[], ask);
    let terms = |items: &[&str]| outline_reply("Terms:\n1. Nebula\n", items);
    assert!(g.matches(&terms(&["Black hole", "Red giant star"])), "{text}");
    assert!(!g.matches(&terms(&["A black hole is dense", "Red giant star"])), "{text}");
    assert!(!g.matches(&terms(&["Stars, celestial bodies", "Red giant star"])), "{text}");
}

/// A unit's text: one to three sentences of words, each of three words at least; words end
/// after `'` as Latin-script languages end them; a task in another script writes its own.
#[test]
fn a_unit_is_one_to_three_sentences_of_words_after_its_head() {
    let (g, text) = product_grammar(&[], ProductAsk::Unit { head: "Day 3 – Kyoto", opening: "", latin: true });
    let reply = |t: &str| format!("Day 3 – Kyoto: {t}");
    let max = lkjagent::limits::GRAMMAR_ENTRY_MAX_WORDS as usize;
    let words = |n: usize| {
        let mut s = String::from("Visit");
        for _ in 1..n {
            s.push_str(" temples");
        }
        s + "."
    };
    for ok in [
        "Visit the old temples of the city.",
        "Visit the temples. Walk through the bamboo forest! Eat at a market.",
        "A cook's thickener, made in a pan.",
        "Prenez l'eau du puits et buvez.",
        "It is a big city. In Kyoto, visit the temples.",
        "Es una ciudad muy grande.",
        "Die Größe des Schwarzen Lochs ist enorm.",
        "Éclairs are pastries of choux dough.",
        "À Kyoto, il faut voir les temples.",
        "I saw a temple.",
        "I'm planning a trip, and I'll see it.",
        &words(3),
        &words(max),
    ] {
        assert!(g.matches(&reply(ok)), "{ok}\n{text}");
    }
    for no in [
        "Visit it.",
        "Visit the temples",
        "10 temples to visit.",
        &words(max + 1),
        "One two three. Four five six. Seven eight nine. Ten eleven twelve.",
        "a chef who'sbroughtinhimmck there.",
        "Visit the temples.\nWalk.",
        "xtra-addition of tomatoes to a garden.",
        "Visit the temples. walk through the forest.",
        "×coccolite is a material of high carbon.",
        "Visit the temples ÷ the forest.",
        // A lone accented capital is no word ("Â 100 percent", a base model's).
        "Use organic fertilizers. Â 100 percent organic fertilizers.",
        "Visit the temples at Â dawn.",
        "I'mplanning a trip to Kyoto.",
    ] {
        assert!(!g.matches(&reply(no)), "{no}\n{text}");
    }
    let (g, text) = product_grammar(&[], ProductAsk::Unit { head: "ブラックホール", opening: "", latin: false });
    let ok = "ブラックホール: 重力が非常に強い天体です。";
    assert!(g.matches(ok), "{text}");
}

/// A unit about a subject opens with it: its first sentence goes on from the subject with a
/// word (not a comma), as long as any sentence; a script without spaces goes on from it too.
#[test]
fn a_unit_opens_with_its_subject_and_goes_on_from_it() {
    let ask = ProductAsk::Unit { head: "Day 3 – Osaka", opening: "Osaka", latin: true };
    let (g, text) = product_grammar(&[], ask);
    let reply = |t: &str| format!("Day 3 – Osaka: {t}");
    let max = lkjagent::limits::GRAMMAR_ENTRY_MAX_WORDS as usize;
    let words = |n: usize| format!("Osaka{}.", " has".repeat(n - 1));
    for ok in [
        "Osaka is a city known for its food.",
        "Osaka is big. Eat ramen at a market! Walk by the castle.",
        "Osaka Castle stands in a park, with a moat.",
        &words(3),
        &words(max),
    ] {
        assert!(g.matches(&reply(ok)), "{ok}\n{text}");
    }
    for no in [
        "Tokyo and Kyoto, two cities.",
        "Osaka, Japan, 2022.",
        "Osaka is.",
        "Osaka.",
        "Osakan food is good.",
        "Osaka is big. Eat ramen. Walk by it. Sleep well.",
        &words(max + 1),
    ] {
        assert!(!g.matches(&reply(no)), "{no}\n{text}");
    }
    let ask = ProductAsk::Unit { head: "Water them regularly", opening: "Water them regularly", latin: true };
    let (g, text) = product_grammar(&[], ask);
    assert!(g.matches("Water them regularly: Water them regularly to keep the soil moist."), "{text}");
    assert!(!g.matches("Water them regularly: Water them regularly."), "{text}");
    assert!(!g.matches("Water them regularly: Keep the soil moist."), "{text}");
    let (g, text) = product_grammar(&[], ProductAsk::Unit { head: "3日目 – 京都", opening: "京都", latin: false });
    assert!(g.matches("3日目 – 京都: 京都は古い寺の町です。"), "{text}");
    assert!(!g.matches("3日目 – 京都: 東京は大きい町です。"), "{text}");
}

/// A product ask that is the whole reply is asked for as its value alone (the agent wraps it in
/// the action); one beside which the model writes more (a next state) keeps the whole reply in
/// the grammar.
#[test]
fn a_product_ask_alone_is_asked_for_its_value_and_one_with_more_in_its_envelope() {
    let ask = ProductAsk::Outline { key: "plan", prefix: "Tips:\n1. ", first: 1, words: 20, latin: true };
    let (g, text) = product_grammar(&[], ask);
    assert!(text.starts_with("# lkjagent reply grammar (generated each cycle)\nroot ::= value\n"), "{text}");
    assert!(g.matches("Tips:\n1. Water regularly\n2. Use mulch\n"), "{text}");
    assert!(!g.matches("<agent>\n<action><type>working_memory_add</type><tags>plan</tags><value>Tips:\n1. Water regularly\n2. Use mulch\n</value></action>\n</agent>"), "{text}");
    let states = vec!["evaluating".to_string()];
    let shape =
        Shape { next_state: true, next_mask: 0, log: None, actions: ActionSet::NONE.with(ActionKind::StorageSave) };
    let lang = grammar::Language {
        product: Some(grammar::ProductSave { tags: "cooking,glossary", taken: &[], ask }),
        ..plain_language(&states, shape)
    };
    assert!(lang.bare_ask().is_none());
    let mut buf = FixedBuf::with_capacity("test grammar", lkjagent::limits::GRAMMAR_MAX_BYTES);
    grammar::gbnf::write(&lang, &mut buf).unwrap();
    let text = buf.as_str().unwrap().to_string();
    let g = Grammar::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(g.matches("<agent>\n<next_state>evaluating</next_state>\n<action><type>working_memory_add</type><tags>plan</tags><value>Tips:\n1. Water regularly\n2. Use mulch\n</value></action>\n</agent>"), "{text}");
}

/// The grammar (or with `schema`, the JSON Schema) of a product ask (`ask`) alone, in a
/// cooking glossary whose taken names are `taken`.
fn product_text(taken: &[&str], ask: ProductAsk<'_>, schema: bool) -> String {
    let states = vec!["evaluating".to_string()];
    let shape =
        Shape { next_state: false, next_mask: 0, log: None, actions: ActionSet::NONE.with(ActionKind::StorageSave) };
    let lang = grammar::Language {
        product: Some(grammar::ProductSave { tags: "cooking,glossary", taken, ask }),
        ..plain_language(&states, shape)
    };
    let mut buf = FixedBuf::with_capacity("test grammar", lkjagent::limits::GRAMMAR_MAX_BYTES);
    match schema {
        true => grammar::schema::write(&lang, true, &mut buf).unwrap(),
        false => grammar::gbnf::write(&lang, &mut buf).unwrap(),
    }
    buf.as_str().unwrap().to_string()
}

/// The grammar of a product ask (`ask`) in a cooking glossary whose taken names are `taken`.
fn product_grammar(taken: &[&str], ask: ProductAsk<'_>) -> (Grammar, String) {
    let text = product_text(taken, ask, false);
    (Grammar::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}")), text)
}

/// The pattern of a product ask's value alone in the JSON Schema, read by the independent GBNF
/// reader (after a mechanical translation).
fn product_pattern(ask: ProductAsk<'_>) -> (Grammar, String) {
    let schema = product_text(&[], ask, true);
    let mut doc = Document::with_capacity(64, 1 << 16);
    doc.parse(schema.as_bytes()).unwrap();
    let pattern = doc.root().get("pattern").and_then(|p| p.as_str()).unwrap().to_string();
    (pattern_grammar(&pattern), pattern)
}

/// A unit in the JSON Schema is what the grammar asks for: one to three sentences, each a
/// bounded run that opens with a letter and ends with `.`, `!` or `?`, the first going on from
/// the subject. Bounded by characters alone (360), SmolLM2-135M ran one thought into a
/// repetition to the bound ("I'm going to Tokyo." fifteen times; "2023. 2023. ...").
#[test]
fn a_unit_in_the_schema_is_one_to_three_sentences() {
    let (g, pattern) = product_pattern(ProductAsk::Unit { head: "Day 3 – Osaka", opening: "Osaka", latin: true });
    let reply = |t: &str| format!("Day 3 – Osaka: {t}");
    for ok in [
        "Osaka is a city known for its food.",
        "Osaka is big. Eat ramen at a market! Walk by the castle?",
        "Osaka Castle stands in a park, with a moat.",
    ] {
        assert!(g.matches(&reply(ok)), "{ok}\n{pattern}");
    }
    let long = format!("Osaka is {}.", "Japan, ".repeat(40));
    for no in [
        "Osaka is big. Eat ramen. Walk by the castle. See the bay.",
        "Osaka is big. 2023. 2023.",
        "Osaka is big. It is.",
        "Osaka is a city",
        "Kyoto is a city.",
        long.as_str(),
    ] {
        assert!(!g.matches(&reply(no)), "{no}\n{pattern}");
    }
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

/// A key `storage_search` found in the cold store is in the grammar's load list the next
/// cycle (the newest stored keys, which the list held alone, are all live), and the load
/// the grammar then allows brings it into working memory; the search's live keys are listed
/// too, and a key neither found nor stored is still outside the grammar.
#[test]
fn a_cold_key_a_search_found_is_loadable_under_the_grammar() {
    use lkjagent::memory::store::cold::cleanup::Filter;
    use lkjagent::memory::store::Cleanup;
    let d = shipped_dir("cold-load", "http://127.0.0.1:9/v1/chat/completions", "grammar");
    let cfg = config::load(&d.0).unwrap();
    let data = TempDir::new("cold-load-data");
    let mut store = Store::open_with_capacity(&data.0, 64).unwrap();
    let k = |s: &str| normalize(s).unwrap();
    store.put(&k("fruit,quince"), "A quince is a hard golden fruit for jelly.", 1).unwrap();
    store.put(&k("fruit,apricot"), "An apricot is a golden fruit for jam.", 50).unwrap();
    for i in 0..40 {
        store.put(&k(&format!("tools,tool{i}")), "A tool for the workshop.", 50).unwrap();
    }
    let moved = store.cleanup_where(&Filter { accessed_before: Some(10), max_hits: None }, Cleanup::Cold).unwrap();
    assert_eq!(moved, 1);
    let mut working = WorkingSet::new();
    let mut scratch = ActionScratch::new();
    let mut reader = Reader::new();
    let search = "<agent><action><type>storage_search</type><query>golden jelly</query></action></agent>";
    let it = reader.read(search.as_bytes(), 1);
    let a = it.actions().next().unwrap();
    let r = actions::apply(&a, &mut working, &mut store, &mut scratch, 2).unwrap();
    assert!(r.ok, "{}", r.message.as_str());
    assert!(working.get(&k("search_results")).unwrap().contains("fruit,quince (cold):"));

    let states: Vec<String> = ["thinking", "commanding"].map(String::from).to_vec();
    let shape = Shape { next_state: true, next_mask: 0, log: Some(LogField::Think), actions: ActionSet::ALL };
    let mut c = Constrainer::new(&cfg.llm, 7);
    c.prepare(Some(Mode::Grammar), shape, &states, 1, &working, Some(&store), &PINNED_KEYS, &[], None).unwrap();
    let text = c.text().to_string();
    let g = Grammar::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let load = |key: &str| {
        format!(
            "<agent>\n<think_log>Read it.</think_log>\n<next_state>commanding</next_state>\n\
             <action><type>storage_load</type><tags>{key}</tags></action>\n</agent>"
        )
    };
    assert!(g.matches(&load("fruit,quince")), "the cold hit is loadable\n{text}");
    assert!(g.matches(&load("apricot,fruit")), "the live hit is loadable\n{text}");
    assert!(g.matches(&load("tool39,tools")), "the newest stored keys are still listed\n{text}");
    assert!(!g.matches(&load("fruit,medlar")), "a key neither found nor stored is not\n{text}");
    // The JSON Schema lists the same keys.
    c.prepare(Some(Mode::JsonSchema), shape, &states, 1, &working, Some(&store), &PINNED_KEYS, &[], None).unwrap();
    assert!(c.text().contains("\"fruit,quince\""), "{}", c.text());

    // The load the grammar allows, carried out: the cold entry's text in working memory.
    let reply = load("fruit,quince");
    let it = reader.read(reply.as_bytes(), 1);
    let a = it.actions().next().unwrap();
    let r = actions::apply(&a, &mut working, &mut store, &mut scratch, 3).unwrap();
    assert!(r.ok, "{}", r.message.as_str());
    assert_eq!(working.get(&k("fruit,quince")).unwrap(), "A quince is a hard golden fruit for jelly.");
}

/// The kinds a grammar offers are the ones the feedback's example and the reader's messages
/// list (`reply::instruction::CANONICAL_KINDS`): a kind offered is a kind the model is told of.
#[test]
fn offered_actions_are_the_canonical_kinds() {
    let mut offered: Vec<&str> = grammar::OFFERED_ACTIONS.iter().map(|k| k.as_str()).collect();
    let mut listed: Vec<&str> = lkjagent::reply::instruction::CANONICAL_KINDS.split(", ").collect();
    offered.sort_unstable();
    listed.sort_unstable();
    assert_eq!(offered, listed);
}
