#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! `make fuzz`: the parsers that read what comes from outside (model replies, JSON, HTTP
//! responses, the store log, `memory.json`, `config.json`) on random, generated and mutated
//! inputs, each for `FUZZ_SECONDS` (default 60 under `make fuzz`). Std only: a seeded xorshift
//! generator, a handful of mutations, and seeds from the repository's reply corpus
//! (`tests/replies`), `data/`, and the public JSON corpora under `LKJAGENT_CORPUS` (default
//! `../shared/corpus`) when present.
//!
//! Every input is checked for: no panic; the invariants each parser promises (offsets within
//! the input, problems and instructions within their caps, the documented error code for
//! invalid input, the same verdict and error however JSON is sliced, a reply read the same by a
//! fresh reader); and time, against `FUZZ_MAX_MS` per input (default 2000: a hang detector, not
//! a benchmark).
//!
//! Each target runs in a child process (this program again, `FUZZ_CHILD=<target>`), so that an
//! abort or a stack overflow is reported too, and so that the warnings parsers print on stderr
//! (ignored config keys, dropped log tails) do not flood the output: the last lines of a
//! failed child's stderr are shown. Every input is derived from the seed, the target and its
//! iteration number, so a failure prints the line that replays exactly that input:
//! `FUZZ_SEED=<seed> FUZZ_TARGETS=<target> FUZZ_ITER=<n> cargo test --release --test fuzz`.
//!
//! Environment: `FUZZ_SECONDS` (per target; unset, as under plain `cargo test`, a short smoke
//! run of `FUZZ_SMOKE_ITERS`, default 300, inputs per target), `FUZZ_TARGETS` (comma-separated,
//! default all: json, tag, reply, http, store_log, memory_json, config), `FUZZ_SEED` (default:
//! from the clock; fixed for a smoke run), `FUZZ_ITER`, `FUZZ_MAX_MS`.

#[path = "support/json_slices.rs"]
mod json_slices;
#[path = "support/reply_checks.rs"]
mod reply_checks;
#[path = "support/temp.rs"]
mod temp;

use json_slices::{byte_offset, validate_sliced};
use lkjagent::error::{Code, Error};
use lkjagent::fixed::FixedBuf;
use lkjagent::json::{Document, Writer};
use lkjagent::limits::{TAG_MAX_NODES, TAG_TEXT_BYTES};
use lkjagent::memory::log::{self as store_log, PutHead};
use lkjagent::reply::read::TEXT_ELEMENTS;
use lkjagent::reply::Reader;
use lkjagent::tag::{ParseOptions, TagTree};
use reply_checks::{check_reading, check_tree, PIECES};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use temp::temp_dir;

const TARGETS: &[&str] = &["json", "tag", "reply", "http", "store_log", "memory_json", "config"];

// ---- randomness ----

/// xorshift64*: small, fast, and the same on every machine.
#[path = "support/rng.rs"]
mod rng;
use rng::RngStar as Rng;

impl Rng {
    fn word(&mut self, from: &[&'static str]) -> &'static str {
        from[self.below(from.len())]
    }
}

/// The generator of one input: a function of the seed, the target and the iteration only.
fn input_rng(seed: u64, target: &str, iter: u64) -> Rng {
    let t = target.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    Rng::mixed(seed ^ t ^ iter.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

// ---- mutation ----

/// Applies 1 to 8 mutations to `v`: bit flips, byte sets, dictionary tokens, deletions,
/// duplications, splices from other seeds, truncation, random bytes. Keeps it under `max` bytes.
fn mutate(rng: &mut Rng, v: &mut Vec<u8>, seeds: &[Vec<u8>], dict: &[&[u8]], max: usize) {
    for _ in 0..1 + rng.below(8) {
        let len = v.len();
        match rng.below(9) {
            0 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                v[i] = rng.next() as u8;
            }
            2 | 3 => {
                let at = rng.below(len + 1);
                let tok = *rng.pick(dict);
                v.splice(at..at, tok.iter().copied());
            }
            4 if len > 0 => {
                let a = rng.below(len);
                let n = 1 + rng.below((len - a).min(64));
                v.drain(a..a + n);
            }
            5 if len > 0 => {
                let a = rng.below(len);
                let n = 1 + rng.below((len - a).min(256));
                let piece = v[a..a + n].to_vec();
                let at = rng.below(len + 1);
                v.splice(at..at, piece);
            }
            6 if !seeds.is_empty() => {
                let other = rng.pick(seeds);
                if !other.is_empty() {
                    let a = rng.below(other.len());
                    let n = 1 + rng.below((other.len() - a).min(512));
                    let at = rng.below(len + 1);
                    v.splice(at..at, other[a..a + n].iter().copied());
                }
            }
            7 if len > 0 && rng.chance(3) => v.truncate(rng.below(len)),
            _ => {
                let at = rng.below(len + 1);
                let n = 1 + rng.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                v.splice(at..at, bytes);
            }
        }
    }
    v.truncate(max);
}

/// One input: random bytes, a generated one, or a mutated seed (or mutated generated input).
fn make_input(rng: &mut Rng, seeds: &[Vec<u8>], dict: &[&[u8]], generate: &dyn Fn(&mut Rng) -> Vec<u8>) -> Vec<u8> {
    const MAX: usize = 64 * 1024;
    match rng.below(8) {
        0 => (0..rng.below(512)).map(|_| rng.next() as u8).collect(),
        1 | 2 => generate(rng),
        3 => {
            let mut v = generate(rng);
            mutate(rng, &mut v, seeds, dict, MAX);
            v
        }
        _ => {
            let mut v = if seeds.is_empty() { generate(rng) } else { rng.pick(seeds).clone() };
            mutate(rng, &mut v, seeds, dict, MAX);
            v
        }
    }
}

// ---- seeds and generators ----

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn corpus_dir() -> PathBuf {
    std::env::var_os("LKJAGENT_CORPUS").map(Into::into).unwrap_or_else(|| manifest().join("../shared/corpus"))
}

/// Every file under `dir` (recursively) whose name ends with one of `exts`, at most `max` bytes.
fn files(dir: &Path, exts: &[&str], max: usize, out: &mut Vec<Vec<u8>>) {
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            files(&p, exts, max, out);
        } else if exts.iter().any(|e| p.to_string_lossy().ends_with(e)) {
            if let Ok(b) = std::fs::read(&p) {
                if b.len() <= max {
                    out.push(b);
                }
            }
        }
    }
}

const JSON_DICT: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b",",
    b"\"",
    b"\\",
    b"\\u",
    b"\\ud83d",
    b"\\udc00",
    b"\\n",
    b"0",
    b"-",
    b"1e999",
    b"0.5",
    b"true",
    b"false",
    b"null",
    b" ",
    b"\n",
    b"\xff",
    b"\xc3",
    b"\xe0\x80",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xef\xbb\xbf",
    "é".as_bytes(),
    "😀".as_bytes(),
    b"\"a\":",
    b"[[[[[[[[",
    b"]]]]]]]]",
    b"\x00",
];

/// A random JSON document, valid, up to depth 6.
fn gen_json(rng: &mut Rng) -> Vec<u8> {
    fn value(rng: &mut Rng, depth: usize, out: &mut String) {
        let k = if depth >= 6 { rng.below(4) } else { rng.below(6) };
        match k {
            0 => out.push_str(rng.word(&["null", "true", "false"])),
            1 => out.push_str(rng.word(&["0", "-1", "3.25", "1e10", "-0.0e-5", "123456789012345678901234567890"])),
            2 | 3 => string(rng, out),
            4 => {
                out.push('[');
                for i in 0..rng.below(5) {
                    if i > 0 {
                        out.push(',');
                    }
                    value(rng, depth + 1, out);
                }
                out.push(']');
            }
            _ => {
                out.push('{');
                for i in 0..rng.below(5) {
                    if i > 0 {
                        out.push(',');
                    }
                    string(rng, out);
                    out.push(':');
                    value(rng, depth + 1, out);
                }
                out.push('}');
            }
        }
    }
    fn string(rng: &mut Rng, out: &mut String) {
        out.push('"');
        for _ in 0..rng.below(12) {
            out.push_str(rng.word(&[
                "a",
                "key",
                " ",
                "é",
                "日本",
                "😀",
                "\\n",
                "\\\"",
                "\\\\",
                "\\u00e9",
                "\\ud83d\\ude00",
                "<",
            ]));
        }
        out.push('"');
    }
    let mut s = String::new();
    if rng.chance(4) {
        s.push_str("  ");
    }
    value(rng, 0, &mut s);
    s.into_bytes()
}

/// Tag-like pieces the fuzzer adds to the property tests' [`PIECES`]: more end tags, the
/// paging and query elements, escaped markup, channel markers and a JSON reply.
const MORE_PIECES: &[&str] = &[
    "storage_search",
    "</VALUE >",
    "</thinking>",
    "</paging>",
    "</move_to_disk>",
    "<retrieve_from_disk>",
    "</key>",
    "&gt;",
    "&lt;action&gt;",
    "&lt;/action&gt;",
    "&#x41;",
    "<|channel|>final<|message|>",
    "<|end|>",
    "<query>",
    "</query>",
    "<think_log>",
    "</think_log>",
    "{\"next_state\":\"thinking\"}",
];

/// Every tag-like piece the generator and the mutations draw from.
fn tag_pieces() -> &'static [&'static str] {
    static PIECES_ALL: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    PIECES_ALL.get_or_init(|| PIECES.iter().chain(MORE_PIECES).copied().collect())
}

fn gen_tags(rng: &mut Rng) -> Vec<u8> {
    let n = rng.below(120);
    (0..n).map(|_| *rng.pick(tag_pieces())).collect::<String>().into_bytes()
}

const HTTP_DICT: &[&[u8]] = &[
    b"\r\n",
    b"\n",
    b"\r\n\r\n",
    b"HTTP/1.1 ",
    b"HTTP/1.0 ",
    b"200 OK",
    b"Content-Length: ",
    b"Transfer-Encoding: chunked",
    b"Connection: close",
    b"Retry-After: ",
    b"Content-Type: ",
    b"999999999999999999999",
    b"-1",
    b" ",
    b"\t",
    b":",
    b";",
    b"ff",
    b"0",
    b"\x00",
    b"\xff",
];

fn gen_http_head(rng: &mut Rng) -> Vec<u8> {
    let mut s = format!(
        "HTTP/1.{} {} {}\r\n",
        rng.below(2),
        rng.pick(&["200", "204", "304", "404", "500", "99", "1000"]),
        "OK"
    );
    for _ in 0..rng.below(6) {
        let h = match rng.below(6) {
            0 => format!("Content-Length: {}", rng.pick(&["0", "12", "18446744073709551616", "1,1", " 7 "])),
            1 => "Transfer-Encoding: chunked".to_string(),
            2 => "Connection: close".to_string(),
            3 => format!("Retry-After: {}", rng.pick(&["5", "Wed, 21 Oct 2015 07:28:00 GMT", "-3"])),
            4 => "Content-Type: application/json; charset=utf-8".to_string(),
            _ => "X-Other: value".to_string(),
        };
        s.push_str(&h);
        s.push_str(if rng.chance(5) { "\n" } else { "\r\n" });
    }
    s.push_str("\r\n");
    s.into_bytes()
}

/// Valid store log lines of every kind.
fn store_log_lines() -> Vec<Vec<u8>> {
    let mut out = FixedBuf::with_capacity("fuzz log", 1 << 16);
    store_log::encode_header(&mut out, 0x1234_5678).unwrap();
    let head = PutHead { id: 3, ver: 2, created: 10, accessed: 11, hits: 4, archived: false };
    store_log::encode_put(&mut out, &head, ["alpha", "notes"].into_iter(), "a \"value\"\n é 😀").unwrap();
    let head = PutHead { id: 0, ver: 1, created: 1, accessed: 1, hits: 0, archived: true };
    store_log::encode_put(&mut out, &head, ["beta"].into_iter(), "").unwrap();
    store_log::encode_touch(&mut out, 3, 12, 5).unwrap();
    store_log::encode_link(&mut out, 3, 0, true).unwrap();
    store_log::encode_link(&mut out, 3, 0, false).unwrap();
    store_log::encode_del(&mut out, 0).unwrap();
    store_log::encode_batch(&mut out, 2).unwrap();
    store_log::encode_batch_end(&mut out).unwrap();
    let text = out.as_str().unwrap().to_string();
    text.lines().map(|l| l.as_bytes().to_vec()).collect()
}

const LOG_DICT: &[&[u8]] = &[
    b"\"op\":",
    b"\"put\"",
    b"\"del\"",
    b"\"id\":",
    b"4294967295",
    b"18446744073709551615",
    b"-1",
    b"\"tags\":[",
    b"]",
    b"\"value\":\"",
    b"\\u0000",
    b"\\",
    b"\"",
    b",",
    b"}",
    b"\n",
    b"00000000 ",
    b"\xff",
];

// ---- the targets ----

/// Makes an input of a target's kind.
type Generate = Box<dyn Fn(&mut Rng) -> Vec<u8>>;
/// Checks one input: `Err` says which promise it broke.
type Check = Box<dyn FnMut(&[u8], &mut Rng) -> Result<(), String>>;

/// What one target needs: seeds, a dictionary, a generator, and the check of one input.
struct Target {
    seeds: Vec<Vec<u8>>,
    dict: &'static [&'static [u8]],
    generate: Generate,
    check: Check,
}

impl Target {
    /// A target whose inputs are JSON: generated documents, mutated with [`JSON_DICT`].
    fn json(seeds: Vec<Vec<u8>>, check: impl FnMut(&[u8], &mut Rng) -> Result<(), String> + 'static) -> Target {
        Target { seeds, dict: JSON_DICT, generate: Box::new(gen_json), check: Box::new(check) }
    }

    /// A target whose inputs are model replies: the reply corpus and generated tag soup,
    /// mutated with the tag pieces.
    fn replies(check: impl FnMut(&[u8], &mut Rng) -> Result<(), String> + 'static) -> Target {
        Target { seeds: reply_seeds(), dict: tag_dict(), generate: Box::new(gen_tags), check: Box::new(check) }
    }
}

/// A document with room for any input the fuzzer makes (64 KiB at most).
fn document() -> Document {
    Document::with_capacity(1 << 15, 1 << 20)
}

fn expect_code(e: &Error, codes: &[Code], what: &str) -> Result<(), String> {
    if codes.contains(&e.code()) {
        Ok(())
    } else {
        Err(format!("{what}: unexpected error code {:?}: {}", e.code(), e.message()))
    }
}

/// An error's code and message (not where in the source it was raised, which may differ).
fn shown(e: Error) -> String {
    format!("{:?}: {}", e.code(), e.message())
}

fn json_target() -> Target {
    let mut seeds = Vec::new();
    files(&corpus_dir().join("json"), &[".json"], 256 * 1024, &mut seeds);
    files(&manifest().join("data"), &[".json"], 256 * 1024, &mut seeds);
    let mut doc = document();
    let mut again = document();
    Target::json(seeds, move |input, rng| {
        let whole = doc.parse(input);
        match &whole {
            Err(e) => {
                expect_code(e, &[Code::JsonInvalid, Code::CapacityExceeded], "Document::parse")?;
                if e.code() == Code::JsonInvalid {
                    let at = byte_offset(&e.message()).ok_or_else(|| format!("no offset in: {}", e.message()))?;
                    if at > input.len() {
                        return Err(format!("offset {at} past the input ({} bytes): {}", input.len(), e.message()));
                    }
                }
            }
            Ok(()) => {
                // What was read writes back as JSON that reads the same.
                let mut out = String::new();
                Writer::compact(&mut out).value(doc.root()).map_err(|e| e.to_string())?;
                again.parse(out.as_bytes()).map_err(|e| format!("re-reading the written JSON: {e}"))?;
                if doc.root() != again.root() {
                    return Err(format!("written and read again, the document differs: {out}"));
                }
            }
        }
        // The streaming parser: the same verdict and message, however the input is sliced.
        let one = validate_sliced(input, &[]).map_err(shown);
        let cuts: Vec<usize> = (0..rng.below(6)).map(|_| rng.next() as usize).collect();
        let sliced = validate_sliced(input, &cuts).map_err(shown);
        if one != sliced {
            return Err(format!("slicing at {cuts:?} changed the result: {one:?} / {sliced:?}"));
        }
        if whole.is_ok() && one.is_err() {
            return Err(format!("Document accepts what Parser rejects: {one:?}"));
        }
        Ok(())
    })
}

fn reply_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    files(&manifest().join("tests/replies"), &[".txt"], 1 << 20, &mut seeds);
    seeds
}

fn tag_dict() -> &'static [&'static [u8]] {
    static DICT: std::sync::OnceLock<Vec<&'static [u8]>> = std::sync::OnceLock::new();
    DICT.get_or_init(|| tag_pieces().iter().map(|p| p.as_bytes()).chain([&b"\xff"[..], b"\xe2\x82"]).collect())
}

fn tag_target() -> Target {
    let mut tree = TagTree::with_capacity(TAG_MAX_NODES, TAG_TEXT_BYTES);
    Target::replies(move |input, _| {
        let text = String::from_utf8_lossy(input);
        tree.parse(&text, &ParseOptions { text_elements: TEXT_ELEMENTS });
        check_tree(&tree, text.len(), TAG_MAX_NODES)
    })
}

/// A reading, for comparing readers.
fn describe(r: &mut Reader, input: &[u8], max: usize) -> String {
    let it = r.read(input, max);
    let mut s = format!("{:?} {} {}\n", it.dialect(), it.actions_found(), it.problems_dropped());
    for (i, o) in it.instructions().zip(it.offsets()) {
        s.push_str(&format!("{i:?} @{o}\n"));
    }
    for p in it.problems() {
        s.push_str(&format!("{} {:?} {}\n", p.code.as_str(), p.offset, p.detail.as_str()));
    }
    s
}

fn reply_target() -> Target {
    let mut reader = Reader::new();
    let mut fresh: Option<Reader> = None;
    let mut n = 0u64;
    Target::replies(move |input, rng| {
        let max = 1 + rng.below(3);
        check_reading(&reader.read(input, max), input, max)?;
        // Nothing carries over from one read to the next: a fresh reader reads the same.
        n += 1;
        if n % 16 == 1 {
            let a = describe(&mut reader, input, max);
            let b = describe(fresh.get_or_insert_with(Reader::new), input, max);
            if a != b {
                return Err(format!("a used reader and a fresh one differ:\n{a}---\n{b}"));
            }
        }
        Ok(())
    })
}

fn http_target() -> Target {
    Target {
        seeds: (0..64).map(|i| gen_http_head(&mut Rng::mixed(i))).collect(),
        dict: HTTP_DICT,
        generate: Box::new(gen_http_head),
        check: Box::new(|input, rng| {
            use lkjagent::http::response::{head_end, parse_chunk_size, parse_head};
            match head_end(input) {
                Some(end) if end > input.len() => return Err(format!("head end {end} past the input")),
                Some(end) => {
                    if let Err(e) = parse_head(&input[..end], rng.chance(4)) {
                        expect_code(&e, &[Code::HttpProtocol], "parse_head")?;
                    }
                }
                None => {
                    if let Err(e) = parse_head(input, false) {
                        expect_code(&e, &[Code::HttpProtocol], "parse_head")?;
                    }
                }
            }
            for line in input.split(|&b| b == b'\n').take(4) {
                if let Err(e) = parse_chunk_size(line) {
                    expect_code(&e, &[Code::HttpProtocol], "parse_chunk_size")?;
                }
            }
            Ok(())
        }),
    }
}

fn store_log_target() -> Target {
    let lines = store_log_lines();
    let whole: Vec<u8> = lines.iter().flat_map(|l| l.iter().copied().chain([b'\n'])).collect();
    let mut seeds = lines.clone();
    seeds.push(whole);
    let mut n = 0u64;
    Target {
        seeds,
        dict: LOG_DICT,
        generate: Box::new(move |rng| rng.pick(&lines).clone()),
        check: Box::new(move |input, _| {
            // Each line alone, as the replay reads it.
            for line in input.split(|&b| b == b'\n') {
                if let Err(e) = store_log::decode(line) {
                    expect_code(&e, &[Code::JsonInvalid, Code::CapacityExceeded], "log decode")?;
                }
            }
            // Now and then the whole input as a store's log: it opens or fails cleanly.
            n += 1;
            if n % 32 == 1 {
                let dir = temp_dir("fuzz-store");
                std::fs::write(dir.join(lkjagent::memory::store::LOG_NAME), input).unwrap();
                let opened = lkjagent::memory::store::Store::open_with_capacity(&dir, 64).map(|s| s.ids().count());
                let _ = std::fs::remove_dir_all(&dir);
                drop(opened);
            }
            Ok(())
        }),
    }
}

fn memory_json_target() -> Target {
    let mut seeds = Vec::new();
    files(&manifest().join("data"), &["memory.json"], 1 << 20, &mut seeds);
    seeds.push(
        br#"{"state":"thinking","iteration":3,"working_memory":{"task":"x","a,b":"y"},"agent":{"think_log_001":"t"},"storage":{"k":"v"}}"#
            .to_vec(),
    );
    let mut doc = document();
    let mut check_doc = document();
    Target::json(seeds, move |input, _| {
        let (_m, report) = lkjagent::memory::file::decode_bytes(&mut doc, input, 1_700_000_000);
        if check_doc.parse(input).is_err() && report.problems.is_empty() {
            return Err("invalid JSON decoded without a problem".into());
        }
        Ok(())
    })
}

fn config_target() -> Target {
    let mut seeds = Vec::new();
    files(&manifest().join("data"), &["config.json"], 1 << 20, &mut seeds);
    let dir = temp_dir("fuzz-config");
    let mut check_doc = document();
    Target::json(seeds, move |input, _| {
        let valid = check_doc.parse(input).is_ok();
        match lkjagent::agent::config::parse(input, &dir) {
            Ok(_) if !valid => Err("invalid JSON accepted as a configuration".into()),
            Err(e) if !valid => expect_code(&e, &[Code::ConfigJsonInvalid], "config parse"),
            Err(e) => expect_code(
                &e,
                &[Code::ConfigInvalid, Code::PromptJsonInvalid, Code::PromptSchemaInvalid, Code::Io],
                "config parse",
            ),
            Ok(_) => Ok(()),
        }
    })
}

fn target(name: &str) -> Target {
    match name {
        "json" => json_target(),
        "tag" => tag_target(),
        "reply" => reply_target(),
        "http" => http_target(),
        "store_log" => store_log_target(),
        "memory_json" => memory_json_target(),
        "config" => config_target(),
        other => panic!("unknown fuzz target {other:?}; known: {}", TARGETS.join(", ")),
    }
}

// ---- running ----

fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

/// The panic message of the last panic on this thread (the hook stores it instead of printing).
fn last_panic() -> &'static std::sync::Mutex<String> {
    static LAST: std::sync::OnceLock<std::sync::Mutex<String>> = std::sync::OnceLock::new();
    LAST.get_or_init(Default::default)
}

/// Runs one target in this process: inputs until the time (or the iteration count) is up.
/// Returns whether every input passed.
fn run_child(name: &str) -> bool {
    let seed = env_u64("FUZZ_SEED").unwrap_or(0);
    let seconds = env_u64("FUZZ_SECONDS");
    let smoke_iters = env_u64("FUZZ_SMOKE_ITERS").unwrap_or(300);
    let only = env_u64("FUZZ_ITER");
    let max_ms = env_u64("FUZZ_MAX_MS").unwrap_or(2000);
    std::panic::set_hook(Box::new(|info| {
        *last_panic().lock().unwrap() = info.to_string();
    }));
    let mut t = target(name);
    let start = Instant::now();
    let budget = seconds.map(Duration::from_secs);
    let (mut iters, mut failures) = (0u64, 0u64);
    let (mut slowest, mut slowest_len, mut slowest_iter) = (Duration::ZERO, 0usize, 0u64);
    let mut iter = only.unwrap_or(0);
    loop {
        let done = match (only, budget) {
            (Some(o), _) => iter > o,
            (None, Some(b)) => start.elapsed() >= b,
            (None, None) => iters >= smoke_iters,
        };
        if done {
            break;
        }
        let mut rng = input_rng(seed, name, iter);
        let input = make_input(&mut rng, &t.seeds, t.dict, &*t.generate);
        if only.is_some() {
            println!("fuzz {name}: input {iter} ({} bytes): {:?}", input.len(), String::from_utf8_lossy(&input));
        }
        let began = Instant::now();
        let check = &mut t.check;
        let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&input, &mut rng)));
        let took = began.elapsed();
        let failure = match res {
            Ok(Ok(())) if took.as_millis() as u64 > max_ms => {
                Some(format!("took {} ms (FUZZ_MAX_MS is {max_ms})", took.as_millis()))
            }
            Ok(Ok(())) => None,
            Ok(Err(why)) => Some(why),
            Err(_) => Some(format!("panic: {}", last_panic().lock().unwrap())),
        };
        if took > slowest {
            (slowest, slowest_len, slowest_iter) = (took, input.len(), iter);
        }
        if let Some(why) = failure {
            failures += 1;
            let dir = std::env::temp_dir().join("lkjagent-fuzz-failures");
            let _ = std::fs::create_dir_all(&dir);
            let file = dir.join(format!("{name}-{seed:#x}-{iter}.bin"));
            let _ = std::fs::write(&file, &input);
            println!("fuzz {name}: FAILED on input {iter} ({} bytes, saved to {}): {why}", input.len(), file.display());
            println!(
                "fuzz {name}:   replay: FUZZ_SEED={seed:#x} FUZZ_TARGETS={name} FUZZ_ITER={iter} cargo test --release --test fuzz"
            );
            if failures >= 5 {
                println!("fuzz {name}: stopping after 5 failures");
                break;
            }
        }
        iters += 1;
        iter += 1;
    }
    println!(
        "fuzz {name}: {iters} inputs ({} seeds) in {:.1} s, {failures} failed; slowest {:.2} ms ({slowest_len} bytes, input {slowest_iter})",
        t.seeds.len(),
        start.elapsed().as_secs_f64(),
        slowest.as_secs_f64() * 1e3,
    );
    failures == 0
}

/// Runs `name` in a child process; shows the tail of its stderr if it fails.
fn run_parent(name: &str, seed: u64) -> bool {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .env("FUZZ_CHILD", name)
        .env("FUZZ_SEED", format!("{seed:#x}"))
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut tail: VecDeque<String> = VecDeque::new();
        let mut lines = 0u64;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            lines += 1;
            if tail.len() == 20 {
                tail.pop_front();
            }
            tail.push_back(line);
        }
        (tail, lines)
    });
    let status = child.wait().unwrap();
    let (tail, lines) = reader.join().unwrap();
    if status.success() {
        return true;
    }
    println!("fuzz {name}: the child process ended with {status}; the last of its {lines} stderr lines:");
    for l in tail {
        println!("    {l}");
    }
    println!("fuzz {name}:   replay the run: FUZZ_SEED={seed:#x} FUZZ_TARGETS={name} (and the same FUZZ_SECONDS)");
    false
}

fn main() {
    if let Ok(name) = std::env::var("FUZZ_CHILD") {
        std::process::exit(if run_child(&name) { 0 } else { 1 });
    }
    // A smoke run (plain `cargo test`) is the same every time; a timed run takes a new seed.
    let timed = env_u64("FUZZ_SECONDS").is_some();
    let seed = env_u64("FUZZ_SEED").unwrap_or_else(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        if timed {
            t.as_nanos() as u64 ^ u64::from(std::process::id())
        } else {
            0x5eed
        }
    });
    let wanted = std::env::var("FUZZ_TARGETS").unwrap_or_default();
    let targets: Vec<&str> = if wanted.trim().is_empty() {
        TARGETS.to_vec()
    } else {
        wanted.split(',').map(str::trim).filter(|t| !t.is_empty()).collect()
    };
    if let Some(bad) = targets.iter().find(|t| !TARGETS.contains(t)) {
        println!("fuzz: unknown target {bad:?}; known: {}", TARGETS.join(", "));
        std::process::exit(2);
    }
    let per = match env_u64("FUZZ_SECONDS") {
        Some(s) => format!("{s} s each"),
        None => "a smoke run each (FUZZ_SECONDS unset)".to_string(),
    };
    println!("fuzz: seed {seed:#x}, targets {} ({per}); corpus {}", targets.join(","), corpus_dir().display());
    let failed: Vec<&str> = targets.iter().copied().filter(|t| !run_parent(t, seed)).collect();
    if !failed.is_empty() {
        println!("fuzz: FAILED: {} (seed {seed:#x})", failed.join(", "));
        std::process::exit(1);
    }
    println!("fuzz: ok (seed {seed:#x})");
}
