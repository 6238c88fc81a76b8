#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Recall by meaning against a loopback embeddings server with deterministic vectors: each
//! text's vector is its bag of words hashed into [`DIM`] dimensions (so texts sharing words are
//! near, others orthogonal-ish), computed here from the request the client sent.
//!
//! What is checked: requests are batched (at most `batch` texts each); retries are bounded;
//! a failing endpoint drops search to words with one warning, and recovery after the backoff;
//! the fused order is the sum of standard scores of `fuse`, computed here from the two
//! rankings; vectors follow value changes (re-embedded when stale) and store compaction (not re-embedded); the vectors
//! file survives a torn tail and a child process killed mid-write.

#[path = "support/loopback.rs"]
mod loopback;
#[path = "support/temp.rs"]
mod temp;

use lkjagent::llm::embed::{meaning, EmbedSettings};
use lkjagent::memory::key::{normalize, Key};
use lkjagent::memory::query::Archived;
use lkjagent::memory::store::recall::Ranked;
use lkjagent::memory::store::vectors::{By, Meaning, HEADER_BYTES, RECORD_OVERHEAD, VECTORS_NAME};
use lkjagent::memory::store::Store;
use loopback::{json_ok, response, Action, Seen, Server};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const DIM: usize = 32;

fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The test's embedding of a text: +1 or -1 at a hashed dimension per word (tags and value),
/// unnormalized (the client normalizes).
fn vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; DIM];
    for w in text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()) {
        let h = fnv(&w.to_ascii_lowercase());
        v[(h % DIM as u64) as usize] += if h >> 63 == 0 { 1.0 } else { -1.0 };
    }
    if v.iter().all(|x| *x == 0.0) {
        v[0] = 1e-3;
    }
    v
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let d: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    d / (na * nb).max(1e-12)
}

/// The inputs of an embeddings request, read with the crate's JSON reader.
fn inputs(seen: &Seen) -> Vec<String> {
    let mut doc = lkjagent::json::Document::with_capacity(4096, 1 << 20);
    doc.parse(&seen.body).unwrap();
    doc.root().get("input").unwrap().items().map(|v| v.as_str().unwrap().to_string()).collect()
}

fn answer(seen: &Seen) -> Vec<u8> {
    let data: Vec<String> = inputs(seen)
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let nums: Vec<String> = vector(t).iter().map(|x| format!("{}", x)).collect();
            format!(r#"{{"object":"embedding","index":{},"embedding":[{}]}}"#, i, nums.join(","))
        })
        .collect();
    json_ok(&format!(r#"{{"object":"list","data":[{}],"model":"hash"}}"#, data.join(",")))
}

/// A server that embeds while `up`, and answers 503 otherwise.
fn server(up: Arc<AtomicBool>) -> Server {
    Server::start(move |_, seen| {
        if seen.path != "/v1/embeddings" {
            return Action::Reply(response("404 Not Found", &[], "{}"));
        }
        if up.load(Ordering::SeqCst) {
            Action::Reply(answer(seen))
        } else {
            Action::Reply(response(
                "503 Service Unavailable",
                &["Content-Type: application/json"],
                r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#,
            ))
        }
    })
}

fn settings(srv: &Server, batch: usize) -> EmbedSettings {
    EmbedSettings {
        endpoint: srv.url("/v1/embeddings"),
        model: "hash".into(),
        dimension: DIM,
        batch,
        max_retries: 2,
        read_timeout: Duration::from_secs(10),
        ..EmbedSettings::default()
    }
}

fn key(s: &str) -> Key {
    normalize(s).unwrap()
}

const NOUNS: [&str; 16] = [
    "apple", "river", "engine", "violin", "harbour", "glacier", "pepper", "lantern", "falcon", "meadow", "copper",
    "saddle", "thunder", "orchid", "pebble", "quartz",
];

/// `n` entries `e<i>,note` whose values mix a few nouns.
fn fill_store(store: &mut Store, n: usize) {
    for i in 0..n {
        let value = format!(
            "{} {} {} {}",
            NOUNS[i % 16],
            NOUNS[(i * 7 + 3) % 16],
            NOUNS[(i * 5 + 1) % 16],
            if i % 3 == 0 { NOUNS[(i / 3) % 16] } else { "plain" }
        );
        store.put(&key(&format!("e{},note", i)), &value, 1).unwrap();
    }
}

fn keys(store: &Store, r: &Ranked) -> Vec<String> {
    r.hits().iter().map(|h| store.key(h.id).unwrap().as_str().to_string()).collect()
}

fn no_stop() -> bool {
    false
}

#[test]
fn requests_are_batched_and_every_entry_gets_a_vector() {
    let up = Arc::new(AtomicBool::new(true));
    let srv = server(up);
    let dir = temp::TempDir::new("embed-batch");
    let mut store = Store::open_with_capacity(dir.path(), 1024).unwrap();
    fill_store(&mut store, 40);
    let mut m = meaning(&store, &settings(&srv, 16), true).unwrap();
    // A bounded fill: 20 now, in batches of 16 and 4.
    let f = m.fill(&mut store, 20, &no_stop).unwrap();
    assert_eq!(f.embedded, 20);
    let sizes: Vec<usize> = srv.seen().iter().map(|s| inputs(s).len()).collect();
    assert_eq!(sizes, vec![16, 4]);
    let f = m.fill(&mut store, 100, &no_stop).unwrap();
    assert_eq!(f.embedded, 20);
    let sizes: Vec<usize> = srv.seen().iter().map(|s| inputs(s).len()).collect();
    assert_eq!(sizes, vec![16, 4, 16, 4]);
    assert_eq!(m.stats().current, 40);
    // Nothing left: no request.
    assert_eq!(m.fill(&mut store, 100, &no_stop).unwrap().embedded, 0);
    assert_eq!(srv.seen().len(), 4);
    // Documents are sent as "key: value", with the model named.
    let first = &srv.seen()[0];
    assert!(first.body_str().contains(r#""model":"hash""#), "{}", first.body_str());
    assert!(inputs(first)[0].starts_with("e0,note: "), "{:?}", inputs(first));
    // The file: a header and one record per vector.
    let len = std::fs::metadata(dir.path().join(VECTORS_NAME)).unwrap().len();
    assert_eq!(len, HEADER_BYTES + 40 * (RECORD_OVERHEAD + DIM) as u64);
    // A reader (another process's view) sees the same vectors.
    let r = meaning(&store, &settings(&srv, 16), false).unwrap();
    assert_eq!(r.stats().current, 40);
}

#[test]
fn retries_are_bounded_and_a_failing_endpoint_warns_once_then_recovers() {
    let up = Arc::new(AtomicBool::new(false));
    let srv = server(up.clone());
    let dir = temp::TempDir::new("embed-fail");
    let mut store = Store::open_with_capacity(dir.path(), 1024).unwrap();
    fill_store(&mut store, 30);
    let mut m = meaning(&store, &settings(&srv, 8), true).unwrap();
    let f = m.fill(&mut store, 30, &no_stop).unwrap();
    assert_eq!(f.embedded, 0);
    assert!(f.missing > 0);
    // max_retries 2: three attempts, then the fill gives up for this cycle.
    assert_eq!(srv.seen().len(), 3);
    assert!(m.stats().backing_off);
    // During the backoff: no request at all, search is by words.
    let mut words = Ranked::new();
    store.rank_by(None, By::Words, "apple river", 10, Archived::Exclude, None, &mut words).unwrap();
    for _ in 0..3 {
        assert_eq!(m.fill(&mut store, 30, &no_stop).unwrap().embedded, 0);
        let mut both = Ranked::new();
        store.rank_by(Some(&mut m), By::Both, "apple river", 10, Archived::Exclude, None, &mut both).unwrap();
        assert_eq!(keys(&store, &both), keys(&store, &words));
    }
    assert_eq!(srv.seen().len(), 3);
    // After the backoff it is tried again, still failing: still one warning for the outage.
    m.end_backoff();
    assert_eq!(m.fill(&mut store, 30, &no_stop).unwrap().embedded, 0);
    assert_eq!(srv.seen().len(), 6);
    // With no vector yet, a search asks nothing and ranks by words.
    let mut both = Ranked::new();
    store.rank_by(Some(&mut m), By::Both, "apple river", 10, Archived::Exclude, None, &mut both).unwrap();
    assert_eq!(keys(&store, &both), keys(&store, &words));
    assert_eq!(srv.seen().len(), 6);
    assert_eq!(m.stats().warnings, 1);
    // Back up: the next try after the backoff fills and fuses.
    up.store(true, Ordering::SeqCst);
    m.end_backoff();
    assert_eq!(m.fill(&mut store, 30, &no_stop).unwrap().embedded, 30);
    assert!(!m.stats().backing_off);
    let mut near = Ranked::new();
    store.rank_by(Some(&mut m), By::Meaning, "apple river", 10, Archived::Exclude, None, &mut near).unwrap();
    assert_eq!(near.len(), 10);
    // A new outage warns again, once.
    up.store(false, Ordering::SeqCst);
    store.rank_by(Some(&mut m), By::Both, "thunder orchid", 10, Archived::Exclude, None, &mut both).unwrap();
    assert_eq!(m.stats().warnings, 2);
}

#[test]
fn fusion_sums_the_standard_scores_of_both_rankings() {
    let srv = server(Arc::new(AtomicBool::new(true)));
    let dir = temp::TempDir::new("embed-fuse");
    let mut store = Store::open_with_capacity(dir.path(), 1024).unwrap();
    fill_store(&mut store, 300);
    let mut m = meaning(&store, &settings(&srv, 16), true).unwrap();
    while m.fill(&mut store, 64, &no_stop).unwrap().embedded > 0 {}
    assert_eq!(m.stats().current, 300);
    for q in ["apple river", "violin harbour glacier", "copper plain", "thunder", "pebble quartz saddle orchid"] {
        let mut w = Ranked::new();
        let mut v = Ranked::new();
        let mut both = Ranked::new();
        store.rank_by(Some(&mut m), By::Words, q, 100, Archived::Exclude, None, &mut w).unwrap();
        store.rank_by(Some(&mut m), By::Meaning, q, 100, Archived::Exclude, None, &mut v).unwrap();
        store.rank_by(Some(&mut m), By::Both, q, 10, Archived::Exclude, None, &mut both).unwrap();
        // The vector ranking is the cosine order of the test's own vectors (int8 may swap
        // near-ties).
        let qv = vector(q);
        let cos: Vec<f64> = v
            .hits()
            .iter()
            .map(|h| {
                let k = store.key(h.id).unwrap();
                let text = format!("{}: {}", k.as_str(), store.value(h.id).unwrap());
                cosine(&qv, &vector(&text))
            })
            .collect();
        for pair in cos.windows(2) {
            assert!(pair[0] >= pair[1] - 0.02, "{q}: cosines out of order {cos:?}");
        }
        for (h, c) in v.hits().iter().zip(&cos) {
            assert!((h.score - c).abs() < 0.03, "{q}: score {} for cosine {}", h.score, c);
        }
        // The fusion computed here (the rule of `fuse`): over a pool of as many entries as the
        // longer list, each list's scores as standard scores, an entry missing from a list at
        // the list's floor (words: 0 when the word list is the shorter, else its last score;
        // meaning: its last score); the word part through (z + √(z² + 4)) / 2; ties by entry id.
        let n = w.len().max(v.len());
        let standard = |list: &Ranked, floor: f64| {
            let mut all: Vec<f64> = list.hits().iter().map(|h| h.score).collect();
            all.resize(n.max(list.len()), floor);
            let mean = all.iter().sum::<f64>() / all.len() as f64;
            let sd = (all.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / all.len() as f64).sqrt();
            let by_id: std::collections::BTreeMap<u32, f64> = list.hits().iter().map(|h| (h.id, h.score)).collect();
            move |id: u32| if sd > 0.0 { (by_id.get(&id).copied().unwrap_or(floor) - mean) / sd } else { 0.0 }
        };
        let last = |list: &Ranked| list.hits().last().map_or(0.0, |h| h.score);
        let zw = standard(&w, if w.len() < v.len() { 0.0 } else { last(&w) });
        let zv = standard(&v, last(&v));
        let mut fused: std::collections::BTreeMap<u32, f64> = Default::default();
        for h in w.hits().iter().chain(v.hits()) {
            let z = zw(h.id);
            fused.insert(h.id, (z + (z * z + 4.0).sqrt()) / 2.0 + zv(h.id));
        }
        let mut want: Vec<(u32, f64)> = fused.into_iter().collect();
        want.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap().then(a.0.cmp(&b.0)));
        want.truncate(10);
        let got: Vec<(u32, f64)> = both.hits().iter().map(|h| (h.id, h.score)).collect();
        assert_eq!(got.len(), want.len(), "{q}");
        for (g, x) in got.iter().zip(&want) {
            assert_eq!(g.0, x.0, "{q}: {got:?}\n{want:?}");
            assert!((g.1 - x.1).abs() < 1e-9, "{q}: {got:?}\n{want:?}");
        }
    }
    // Tags filter the vector side too.
    let mut both = Ranked::new();
    let tag = key("e7");
    store.rank_by(Some(&mut m), By::Both, "apple", 10, Archived::Exclude, Some(&tag), &mut both).unwrap();
    assert!(keys(&store, &both).iter().all(|k| k.split(',').any(|t| t == "e7")));
}

#[test]
fn a_changed_value_is_embedded_again_and_compaction_keeps_the_vectors() {
    let srv = server(Arc::new(AtomicBool::new(true)));
    let dir = temp::TempDir::new("embed-stale");
    let mut store = Store::open_with_capacity(dir.path(), 1024).unwrap();
    fill_store(&mut store, 50);
    let mut m = meaning(&store, &settings(&srv, 16), true).unwrap();
    assert_eq!(m.fill(&mut store, 100, &no_stop).unwrap().embedded, 50);
    let mut near = Ranked::new();
    let find = |store: &mut Store, m: &mut Meaning, q: &str, near: &mut Ranked| {
        store.rank_by(Some(m), By::Meaning, q, 1, Archived::Exclude, None, near).unwrap();
        keys(store, near).first().cloned()
    };
    // A new value for e5: its old vector no longer counts, the new one is made at the next fill.
    store.put(&key("e5,note"), "zeppelin zeppelin zeppelin", 2).unwrap();
    store.delete(&key("e6,note")).unwrap();
    assert_ne!(find(&mut store, &mut m, "zeppelin", &mut near).as_deref(), Some("e5,note"));
    let before = srv.seen().len();
    assert_eq!(m.fill(&mut store, 100, &no_stop).unwrap().embedded, 1);
    assert_eq!(inputs(&srv.seen()[before]), vec!["e5,note: zeppelin zeppelin zeppelin".to_string()]);
    assert_eq!(find(&mut store, &mut m, "zeppelin", &mut near).as_deref(), Some("e5,note"));
    // Store compaction renumbers ids: the vectors follow by key, nothing is embedded again.
    store.compact().unwrap();
    assert_eq!(m.fill(&mut store, 100, &no_stop).unwrap().embedded, 0);
    assert_eq!(find(&mut store, &mut m, "zeppelin", &mut near).as_deref(), Some("e5,note"));
    assert_eq!(m.stats().current, 49);
    // The vectors file's own compaction drops the dead records (e5's old vector, e6's).
    let rl = (RECORD_OVERHEAD + DIM) as u64;
    let path = dir.path().join(VECTORS_NAME);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), HEADER_BYTES + 51 * rl);
    m.compact(&store).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), HEADER_BYTES + 49 * rl);
    assert_eq!(find(&mut store, &mut m, "zeppelin", &mut near).as_deref(), Some("e5,note"));
    // Another model (dimension) starts the file again.
    drop(m);
    let mut other = settings(&srv, 16);
    other.model = "another".into();
    let m2 = meaning(&store, &other, true).unwrap();
    assert_eq!(m2.stats().current, 0);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), HEADER_BYTES);
}

#[test]
fn a_torn_tail_is_dropped_by_the_writer_and_ignored_by_readers() {
    let srv = server(Arc::new(AtomicBool::new(true)));
    let dir = temp::TempDir::new("embed-torn");
    let mut store = Store::open_with_capacity(dir.path(), 1024).unwrap();
    fill_store(&mut store, 20);
    let mut m = meaning(&store, &settings(&srv, 16), true).unwrap();
    assert_eq!(m.fill(&mut store, 100, &no_stop).unwrap().embedded, 20);
    drop(m);
    let path = dir.path().join(VECTORS_NAME);
    let rl = (RECORD_OVERHEAD + DIM) as u64;
    let full = HEADER_BYTES + 20 * rl;
    // Cut the last record in half: a write a crash cut short.
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(full - rl / 2).unwrap();
    drop(f);
    let r = meaning(&store, &settings(&srv, 16), false).unwrap();
    assert_eq!(r.stats().current, 19);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), full - rl / 2, "a reader writes nothing");
    let mut m = meaning(&store, &settings(&srv, 16), true).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), HEADER_BYTES + 19 * rl);
    assert_eq!(m.stats().current, 19);
    assert_eq!(m.fill(&mut store, 100, &no_stop).unwrap().embedded, 1);
    // A whole last record with a bad checksum is a torn tail too; a bad record before good
    // ones is skipped (its entry embedded again).
    drop(m);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 5;
    bytes[last] ^= 0xFF;
    let mid = (HEADER_BYTES + 3 * rl + 20) as usize;
    bytes[mid] ^= 0xFF;
    std::fs::write(&path, &bytes).unwrap();
    let mut m = meaning(&store, &settings(&srv, 16), true).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), HEADER_BYTES + 19 * rl);
    assert_eq!(m.stats().current, 18);
    assert_eq!(m.fill(&mut store, 100, &no_stop).unwrap().embedded, 2);
    assert_eq!(m.stats().current, 20);
}

/// The child of the kill test: embeds until killed, changing values so that there is always
/// more to embed.
#[test]
#[ignore]
fn embed_child() {
    let Some(dir) = std::env::var_os("LKJ_EMBED_DIR") else { return };
    let url = std::env::var("LKJ_EMBED_URL").unwrap();
    let mut store = Store::open_with_capacity(Path::new(&dir), 1024).unwrap();
    let s =
        EmbedSettings { endpoint: url, model: "hash".into(), dimension: DIM, batch: 16, ..EmbedSettings::default() };
    let mut m = meaning(&store, &s, true).unwrap();
    let out = std::io::stdout();
    let mut out = out.lock();
    writeln!(out, "ready").unwrap();
    out.flush().unwrap();
    for round in 0u64.. {
        let n = (round % 40) as usize;
        store.put(&key(&format!("e{},note", n)), &format!("{} round{}", NOUNS[n % 16], round), 1).unwrap();
        m.fill(&mut store, 64, &no_stop).unwrap();
    }
}

#[test]
fn vectors_survive_a_child_killed_mid_write() {
    let srv = server(Arc::new(AtomicBool::new(true)));
    let dir = temp::temp_dir("embed-kill");
    let exe = std::env::current_exe().unwrap();
    let rl = (RECORD_OVERHEAD + DIM) as u64;
    let requests = AtomicUsize::new(0);
    for round in 0..30u64 {
        let mut child = Command::new(&exe)
            .args(["--exact", "embed_child", "--nocapture", "--ignored", "--test-threads=1"])
            .env("LKJ_EMBED_DIR", &dir)
            .env("LKJ_EMBED_URL", srv.url("/v1/embeddings"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Wait for the child to be embedding, then kill it at a varying moment.
        let mut line = [0u8; 6];
        child.stdout.as_mut().unwrap().read_exact(&mut line).unwrap();
        let seen = srv.seen().len();
        while srv.seen().len() < seen + 1 + (round as usize % 4) {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_micros(round * 97 % 2000));
        child.kill().unwrap();
        child.wait().unwrap();
        requests.store(srv.seen().len(), Ordering::SeqCst);
        // The writer's open: whole, checked records only; everything live gets a vector.
        let mut store = Store::open_with_capacity(&dir, 1024).unwrap();
        let s = settings(&srv, 16);
        let mut m = meaning(&store, &s, true).unwrap();
        let len = std::fs::metadata(dir.join(VECTORS_NAME)).unwrap().len();
        assert_eq!((len - HEADER_BYTES) % rl, 0, "round {round}: a torn tail stayed");
        assert!(m.stats().damaged <= 1, "round {round}: {:?}", m.stats());
        while m.fill(&mut store, 64, &no_stop).unwrap().embedded > 0 {}
        assert_eq!(m.stats().current, store.len(), "round {round}");
        // Each entry's nearest by its own value is itself.
        for id in store.ids().collect::<Vec<_>>().into_iter().take(5) {
            let k = store.key(id).unwrap();
            let q = format!("{}: {}", k.as_str(), store.value(id).unwrap());
            let mut near = Ranked::new();
            store.rank_by(Some(&mut m), By::Meaning, &q, 1, Archived::Exclude, None, &mut near).unwrap();
            assert!(near.hits()[0].score > 0.98, "round {round}: {:?}", near.hits()[0].score);
        }
        store.close().unwrap();
    }
    assert!(requests.load(Ordering::SeqCst) >= 30);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn lkj(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_lkjagent")).arg("--data").arg(dir).args(args).output().unwrap()
}

#[test]
fn memory_embed_and_search_by_meaning_through_the_binary() {
    let up = Arc::new(AtomicBool::new(true));
    let srv = server(up.clone());
    let dir = temp::TempDir::new("embed-cli");
    let config = format!(
        r#"{{"llm": {{"endpoint": "http://127.0.0.1:9/v1/chat/completions", "model": "m"}},
            "memory": {{"embeddings": {{"endpoint": "{}", "model": "hash", "dimension": {}}}}}}}"#,
        srv.url("/v1/embeddings"),
        DIM
    );
    dir.write("config.json", &config);
    let storage: Vec<String> =
        (0..30).map(|i| format!(r#""e{},note": "{} {}""#, i, NOUNS[i % 16], NOUNS[(i * 7 + 3) % 16])).collect();
    let doc = dir.write("import.json", format!(r#"{{"storage": {{{}}}}}"#, storage.join(",")));
    let out = lkj(dir.path(), &["memory", "import", doc.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Before any vector: words alone, and no request.
    let out = lkj(dir.path(), &["memory", "search", "--json", "apple"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(srv.seen().is_empty());
    let out = lkj(dir.path(), &["memory", "embed"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("30 vectors embedded now, 30 of 30 entries"), "{text}");
    // By meaning: the entry holding exactly these words comes first.
    let out =
        lkj(dir.path(), &["memory", "search", "--json", "--limit", "3", "--by", "meaning", "e5 note glacier pepper"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.find("\"e5,note\"").is_some_and(|i| i < 40), "{text}");
    let out = lkj(dir.path(), &["memory", "search", "--by", "both", "harbour meadow"]);
    assert!(out.status.success() && out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    // The endpoint down: words only, one warning, exit 0.
    up.store(false, Ordering::SeqCst);
    let out = lkj(dir.path(), &["memory", "search", "--json", "harbour meadow"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(err.matches("search uses words only").count(), 1, "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"key\""));
    // store.vec unusable (here a directory): a search still answers, by words.
    up.store(true, Ordering::SeqCst);
    std::fs::remove_file(dir.path().join(VECTORS_NAME)).unwrap();
    std::fs::create_dir(dir.path().join(VECTORS_NAME)).unwrap();
    let out = lkj(dir.path(), &["memory", "search", "--json", "harbour meadow"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"key\""));
    let out = lkj(dir.path(), &["memory", "embed"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir(dir.path().join(VECTORS_NAME)).unwrap();
    // A bad --by is a usage error; --by meaning without embeddings too.
    assert_eq!(lkj(dir.path(), &["memory", "search", "--by", "vibes", "x"]).status.code(), Some(2));
    dir.write("config.json", r#"{"llm": {"endpoint": "http://127.0.0.1:9/v1/chat/completions", "model": "m"}}"#);
    assert_eq!(lkj(dir.path(), &["memory", "search", "--by", "meaning", "x"]).status.code(), Some(2));
    assert_eq!(lkj(dir.path(), &["memory", "embed"]).status.code(), Some(2));
}
