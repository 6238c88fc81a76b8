#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! The checkpoint read in place (`memory::store::view`, what `status`, `memory query` and
//! `memory search` open) answers exactly as the store opened whole: on random stores (puts,
//! overwrites, deletes, archives, retags, accesses, compactions), for random tag queries of
//! every shape and order and random ranked searches. It declines when the checkpoint does not
//! cover the log exactly (an agent writing), and the commands then answer the same from the
//! whole store; a damaged part of the file is never served; a checkpoint of the older format
//! is ignored with a warning and written again, nothing lost. Real files in temp dirs, and
//! the real binary as a child process.

#[path = "support/temp.rs"]
mod temp;

use lkjagent::memory::key::{normalize, Key};
use lkjagent::memory::query::{Archived, Query, Results, Sort};
use lkjagent::memory::store::checkpoint::CHECKPOINT_NAME;
use lkjagent::memory::store::cold::recall::ColdRecall;
use lkjagent::memory::store::recall::Ranked;
use lkjagent::memory::store::view::StoreView;
use lkjagent::memory::store::Store;
use std::path::Path;
use std::process::Command;
use temp::{snapshot, TempDir};

const CAP: usize = 4096;
const TAGS: [&str; 24] = [
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu", "xi",
    "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi", "omega",
];
const WORDS: [&str; 16] = [
    "river", "stone", "apple", "cloud", "forest", "engine", "paper", "silver", "garden", "window", "rain", "salt",
    "orbit", "violin", "harbor", "lantern",
];

#[path = "support/rng.rs"]
mod rng;
use rng::Rng;

/// Tags drawn with a skew (low indexes more often), so some lists are long and some short.
fn tags(rng: &mut Rng, n: usize) -> Key {
    let mut v: Vec<&str> = Vec::new();
    while v.len() < n {
        let t = TAGS[rng.skewed(TAGS.len())];
        if !v.contains(&t) {
            v.push(t);
        }
    }
    normalize(&v.join(",")).unwrap()
}

fn value(rng: &mut Rng) -> String {
    let n = 3 + rng.below(8);
    (0..n).map(|_| WORDS[rng.skewed(WORDS.len())]).collect::<Vec<_>>().join(" ")
}

/// A random store of about `n` changes in `dir`, closed (checkpoint and store.fts written).
fn random_store(dir: &Path, seed: u64, n: usize) {
    let mut rng = Rng(seed);
    // The commands read the capacity here, as the agent does.
    std::fs::write(dir.join("config.json"), format!("{{\"memory\": {{\"store_capacity\": {}}}}}\n", CAP)).unwrap();
    let mut s = Store::open_with_capacity(dir, CAP).unwrap();
    let mut keys: Vec<Key> = Vec::new();
    let mut now = 1_700_000_000u64;
    for i in 0..n {
        now += 1 + rng.below(3600) as u64;
        match rng.below(20) {
            0..=10 => {
                let n = 1 + rng.below(4);
                let k = tags(&mut rng, n);
                if s.put(&k, &value(&mut rng), now).is_ok() && !keys.contains(&k) {
                    keys.push(k);
                }
            }
            11..=12 if !keys.is_empty() => {
                let k = keys[rng.below(keys.len())];
                s.put(&k, &value(&mut rng), now).unwrap();
            }
            13 if !keys.is_empty() => {
                let k = keys.swap_remove(rng.below(keys.len()));
                s.delete(&k).unwrap();
            }
            14..=15 if !keys.is_empty() => {
                let k = keys[rng.below(keys.len())];
                s.set_archived(&k, rng.below(2) == 0, now).unwrap();
            }
            16 if !keys.is_empty() => {
                let i = rng.below(keys.len());
                let n = 1 + rng.below(3);
                let new = tags(&mut rng, n);
                if !keys.contains(&new) && s.retag(&keys[i], &new, now).is_ok() {
                    keys[i] = new;
                }
            }
            17..=18 if !keys.is_empty() => {
                for _ in 0..3 {
                    let k = keys[rng.below(keys.len())];
                    let _ = s.load(&k, now).unwrap();
                }
                s.flush_access().unwrap();
            }
            19 if i % 7 == 0 => {
                s.compact().unwrap();
            }
            _ => {}
        }
    }
    // The full-text index built, so that close writes store.fts beside the checkpoint.
    let mut ranked = Ranked::new();
    s.rank("river", 5, &mut ranked).unwrap();
    s.close().unwrap();
}

fn random_query(rng: &mut Rng) -> Query {
    let some = |rng: &mut Rng, max: usize| {
        let n = 1 + rng.below(max);
        (rng.below(3) == 0).then(|| tags(rng, n))
    };
    let mut q = Query {
        required: some(rng, 3),
        optional: some(rng, 3),
        excluded: some(rng, 2),
        sort: [Sort::Newest, Sort::Oldest, Sort::MostAccessed, Sort::Relevance][rng.below(4)],
        archived: [Archived::Exclude, Archived::Include, Archived::Only][rng.below(3)],
        max_results: 1 + rng.below(40),
        ..Query::default()
    };
    if rng.below(5) == 0 {
        q.created = (1_700_000_000 + rng.below(200_000) as u64, 1_700_000_000 + rng.below(2_000_000) as u64);
    }
    if rng.below(5) == 0 {
        q.hits = (rng.below(2) as u64, rng.below(4) as u64);
    }
    if rng.below(6) == 0 {
        // A tag no entry carries.
        q.excluded = Some(normalize("nosuchtag").unwrap());
    }
    if rng.below(8) == 0 {
        q.required = Some(normalize("alpha,nosuchtag").unwrap());
    }
    q
}

/// Every answer of `view` equals the whole store's, for `queries` random queries and
/// searches.
fn compare(dir: &Path, seed: u64, queries: usize) {
    let mut store = Store::open_read_only_with_capacity(dir, CAP).unwrap();
    let st = store.stats();
    assert!(st.from_checkpoint && st.replayed_bytes == 0, "seed {seed}: the checkpoint covers the log");
    let mut view = StoreView::open(dir, CAP).unwrap().expect("the checkpoint covers the log: a view");
    assert_eq!(view.len(), store.len(), "seed {seed}");
    assert_eq!(view.log_bytes(), store.log_bytes(), "seed {seed}");
    let mut rng = Rng(seed ^ 0x9e37_79b9_7f4a_7c15);
    let (mut a, mut b) = (Results::with_capacity(64), Results::with_capacity(64));
    let (mut answered, mut ranked) = (0, 0);
    for i in 0..queries {
        let q = random_query(&mut rng);
        store.query(&q, &mut a);
        view.query(&q, &mut b).unwrap();
        let what = format!("seed {seed} query {i}: {q:?}");
        assert_eq!(a.hits(), b.hits(), "{what}");
        assert_eq!((a.matched(), a.truncated()), (b.matched(), b.truncated()), "{what}");
        answered += usize::from(!a.is_empty());
        for id in a.ids() {
            assert_eq!(view.info(id).unwrap(), store.info(id), "{what}: entry {id}");
            assert_eq!(view.key(id).unwrap(), store.key(id), "{what}: entry {id}");
        }
    }
    let (mut ra, mut rb) = (Ranked::new(), Ranked::new());
    for i in 0..queries / 4 {
        let words: Vec<&str> = (0..1 + rng.below(3)).map(|_| WORDS[rng.below(WORDS.len())]).collect();
        let text = if rng.below(6) == 0 { format!("{} zzunknown", words.join(" ")) } else { words.join(" ") };
        let archived = [Archived::Exclude, Archived::Include, Archived::Only][rng.below(3)];
        let limit = 1 + rng.below(30);
        store.rank_where(&text, limit, archived, None, &mut ra).unwrap();
        assert!(
            view.rank(&text, limit, archived, &mut ColdRecall::new(), &mut rb).unwrap(),
            "seed {seed}: store.fts covers the log"
        );
        let what = format!("seed {seed} search {i}: {text:?} {archived:?} {limit}");
        let ids = |r: &Ranked| r.hits().iter().map(|h| (h.id, h.score.to_bits())).collect::<Vec<_>>();
        assert_eq!(ids(&ra), ids(&rb), "{what}");
        ranked += usize::from(!ra.is_empty());
    }
    // The comparisons are of answers, not mostly of empty ones.
    assert!(answered > queries / 5 && ranked > queries / 16, "seed {seed}: {answered} answered, {ranked} ranked");
    // `memory show`: every entry's value by its key, and none for keys it does not hold.
    let ids: Vec<u32> = store.ids().collect();
    let mut text = String::new();
    for &id in ids.iter().step_by(3) {
        let key = store.key(id).unwrap();
        assert!(view.value_of(&key, &mut text).unwrap(), "seed {seed}: {key}");
        assert_eq!(text, store.value(id).unwrap(), "seed {seed}: {key}");
    }
    for k in ["zzunknown", "alpha,zzunknown"] {
        let key = lkjagent::memory::key::normalize(k).unwrap();
        assert!(!view.value_of(&key, &mut text).unwrap(), "seed {seed}: {k}");
    }
    // Ids past the table, dead ids: nothing, as the store says.
    for id in [0, 1, 7, 4095, 4096, 70_000, u32::MAX] {
        assert_eq!(view.info(id).unwrap(), store.info(id), "seed {seed}: entry {id}");
    }
}

#[test]
fn in_place_answers_equal_the_whole_stores_on_random_stores() {
    for seed in 1..=6u64 {
        let t = TempDir::new("view-random");
        random_store(t.path(), seed * 7919, 150 + 150 * seed as usize);
        compare(t.path(), seed, 400);
    }
}

/// `lkjagent --data DIR ARGS...`: (exit code, stdout, stderr).
fn lkjagent(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lkjagent")).arg("--data").arg(dir).args(args).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

const COMMANDS: [&[&str]; 7] = [
    &["status"],
    &["memory", "query", "--tags", "alpha"],
    &["memory", "query", "--tags", "alpha,beta", "--not", "gamma", "--archived", "include"],
    &["memory", "query", "--any", "delta,eta", "--sort", "hits", "--limit", "9"],
    &["memory", "search", "river stone"],
    &["memory", "search", "apple cloud", "--json", "--archived", "include"],
    &["memory", "show", "alpha"],
];

/// The commands' outputs on `dir`.
fn outputs(dir: &Path) -> Vec<(i32, String)> {
    COMMANDS.iter().map(|a| lkjagent(dir, a)).map(|(c, o, _)| (c, o)).collect()
}

#[test]
fn the_commands_answer_the_same_whether_the_checkpoint_covers_the_log_or_not() {
    let t = TempDir::new("view-cli");
    random_store(t.path(), 42, 300);
    let ckpt = std::fs::read(t.path().join(CHECKPOINT_NAME)).unwrap();
    let before = snapshot(t.path());
    let in_place = outputs(t.path());
    assert_eq!(snapshot(t.path()), before, "the read-only commands write nothing");
    assert!(in_place.iter().all(|(c, _)| *c == 0), "{in_place:?}");
    assert!(in_place[1].1.lines().count() > 1, "{in_place:?}");
    // The same log without the checkpoint: the store opened whole, the log replayed.
    std::fs::remove_file(t.path().join(CHECKPOINT_NAME)).unwrap();
    assert!(StoreView::open(t.path(), CAP).unwrap().is_none());
    assert_eq!(outputs(t.path()), in_place);
    std::fs::write(t.path().join(CHECKPOINT_NAME), &ckpt).unwrap();
    // An agent appends after the checkpoint: the view declines, the answers follow the log.
    {
        let mut s = Store::open_with_capacity(t.path(), CAP).unwrap();
        s.put(&normalize("alpha,newest").unwrap(), "river river stone", 1_800_000_000).unwrap();
        // Dropped without close: no new checkpoint, as when an agent is still running.
    }
    assert!(StoreView::open(t.path(), CAP).unwrap().is_none(), "the log grew since the checkpoint");
    let before = snapshot(t.path());
    let grown = outputs(t.path());
    assert_eq!(snapshot(t.path()), before, "the read-only commands write nothing");
    assert!(grown[1].1.starts_with("alpha,newest  v1"), "{:?}", grown[1]);
    // A writer's clean stop writes a checkpoint again: in place, the same answers.
    Store::open_with_capacity(t.path(), CAP).unwrap().close().unwrap();
    assert!(StoreView::open(t.path(), CAP).unwrap().is_some());
    assert_eq!(outputs(t.path()), grown);
}

#[test]
fn a_damaged_byte_is_never_served() {
    let t = TempDir::new("view-damage");
    random_store(t.path(), 77, 400);
    let want = outputs(t.path());
    let path = t.path().join(CHECKPOINT_NAME);
    let good = std::fs::read(&path).unwrap();
    let mut rng = Rng(77);
    let mut positions: Vec<usize> = (0..good.len()).step_by(good.len() / 40 + 1).collect();
    positions.extend((0..12).map(|_| good.len() - 1 - rng.below(good.len() / 3)));
    for at in positions {
        let mut bad = good.clone();
        bad[at] ^= 1 << rng.below(8);
        std::fs::write(&path, &bad).unwrap();
        // In process: any answer the view gives is the right one; else it is an IO error.
        if let Some(mut view) = StoreView::open(t.path(), CAP).unwrap() {
            let whole = Store::open_read_only_with_capacity(t.path(), CAP).unwrap();
            let mut q = Query { required: Some(normalize("alpha").unwrap()), ..Query::default() };
            q.archived = Archived::Include;
            let (mut a, mut b) = (Results::with_capacity(64), Results::with_capacity(64));
            whole.query(&q, &mut a);
            match view.query(&q, &mut b) {
                Ok(()) => assert_eq!(a.hits(), b.hits(), "byte {at}"),
                Err(e) => assert_eq!(e.code(), lkjagent::error::Code::Io, "byte {at}: {e:?}"),
            }
        }
        // The commands: the same answers, whatever the damage (a warning says what was wrong).
        for (i, (code, out)) in outputs(t.path()).into_iter().enumerate() {
            assert_eq!((code, &out), (want[i].0, &want[i].1), "byte {at}: {:?}", COMMANDS[i]);
        }
    }
}

#[test]
fn a_checkpoint_of_the_older_format_is_ignored_with_a_warning_and_written_again() {
    let t = TempDir::new("view-old");
    random_store(t.path(), 5, 300);
    let want = outputs(t.path());
    let path = t.path().join(CHECKPOINT_NAME);
    // The format field set to 2, the header's CRC made right again: an older program's file.
    let mut old = std::fs::read(&path).unwrap();
    old[8..12].copy_from_slice(&2u32.to_le_bytes());
    let crc = lkjagent::memory::hash::crc32(&old[..156]);
    old[156..160].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &old).unwrap();
    assert!(StoreView::open(t.path(), CAP).unwrap().is_none());
    let (code, out, err) = lkjagent(t.path(), &["memory", "query", "--tags", "alpha"]);
    assert_eq!((code, &out), (want[1].0, &want[1].1));
    assert!(err.contains("checkpoint format 2 (this program reads 3)"), "{err}");
    assert!(err.contains("reading the whole log"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), old, "a reader writes nothing");
    // The writer reads the whole log, loses nothing, and writes the checkpoint in this format.
    let s = Store::open_with_capacity(t.path(), CAP).unwrap();
    assert!(!s.stats().from_checkpoint);
    s.close().unwrap();
    let new = std::fs::read(&path).unwrap();
    assert_eq!(u32::from_le_bytes(new[8..12].try_into().unwrap()), 3);
    assert!(StoreView::open(t.path(), CAP).unwrap().is_some());
    assert_eq!(outputs(t.path()), want);
}
