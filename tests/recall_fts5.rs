#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Recall against SQLite FTS5 (`tools/fts5_check.py`, Python's sqlite3): the tokenizer on
//! every Latin code point, and the ranking on generated entries (Zipf-distributed words, 20 to
//! 60 per value) for random 2- and 3-word OR queries: the top 10 must come in FTS5's order
//! (ties may swap) in at least 99% of queries; and the same over a store the soak turned over
//! (live and cold entries ranked together, against one FTS5 table of all of them).
//!
//! Sizes: `LKJ_FTS5_ENTRIES` (default 4,096) and `LKJ_FTS5_QUERIES` (default 100);
//! `LKJ_FTS5_SOAK_CYCLES` (default 3,000) and `LKJ_FTS5_SOAK_QUERIES` (default 100);
//! `make recall-fts5` runs 65,536 and 500, 200,000 and 300. Without python3 or without FTS5
//! in its sqlite3, the tests print a note and pass without checking.

#[path = "support/recall_corpus.rs"]
mod recall_corpus;
#[path = "support/rng.rs"]
mod rng;
#[path = "support/temp.rs"]
mod temp;

use lkjagent::memory::store::recall::Ranked;
use lkjagent::memory::store::tokenize::{Token, Tokens};
use lkjagent::memory::store::Store;
use std::path::{Path, PathBuf};
use std::process::Command;

fn tool() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/fts5_check.py")
}

/// Whether python3 with FTS5 is here; prints why not.
fn have_fts5() -> bool {
    match Command::new("python3").arg(tool()).arg("probe").status() {
        Ok(s) if s.success() => true,
        Ok(_) => {
            eprintln!("note: python3's sqlite3 has no FTS5; the FTS5 comparison is skipped");
            false
        }
        Err(e) => {
            eprintln!("note: python3 is not available ({}); the FTS5 comparison is skipped", e);
            false
        }
    }
}

fn run_tool(args: &[&Path]) -> String {
    let out = Command::new("python3").arg(tool()).args(args).output().unwrap();
    assert!(out.status.success(), "fts5_check.py failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn our_tokens(text: &str) -> String {
    let mut t = Tokens::new(text);
    let mut tok = Token::default();
    let mut out = Vec::new();
    while t.next_into(&mut tok) {
        out.push(tok.as_bytes().iter().map(|b| format!("{:02x}", b)).collect::<String>());
    }
    out.join(" ")
}

#[test]
fn tokenizer_matches_fts5_on_latin_greek_and_combining_marks() {
    if !have_fts5() {
        return;
    }
    let dir = temp::TempDir::new("fts5-tokens");
    let mut lines = Vec::new();
    // The ranges the tokenizer claims to follow exactly (src/memory/store/recall/tokenize.rs);
    // Greek without its unassigned code points (token characters for FTS5, which std
    // cannot tell from separators).
    let ranges = [0x80u32..0x250, 0x300..0x370, 0x370..0x400, 0x1E00..0x1F00];
    let unassigned = [0x378, 0x379, 0x380, 0x381, 0x382, 0x383, 0x38B, 0x38D, 0x3A2];
    for u in ranges.into_iter().flatten().filter(|u| !unassigned.contains(u)) {
        let Some(c) = char::from_u32(u) else { continue };
        // Alone, between letters, and after a letter (a mark that continues a word).
        lines.push(format!("{} x{}y é{}", c, c, c));
    }
    lines.push("Crème BRÛLÉE naïve Ångström façade ŁÓDŹ Straße snake_case it's x-ray 42abc".into());
    lines.push("caf\u{65}\u{301} \u{301}abc ab\u{305}cd ΣΟΦΟΣ σοφος µ ϐ".into());
    let path = dir.0.join("texts");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let theirs = run_tool(&[Path::new("tokens"), &path]);
    let mut diffs = Vec::new();
    for (line, want) in lines.iter().zip(theirs.lines()) {
        let got = our_tokens(line);
        if got != want {
            diffs.push(format!("{:?}: ours {} fts5 {}", line, got, want));
        }
    }
    assert_eq!(theirs.lines().count(), lines.len());
    assert!(diffs.is_empty(), "{} lines differ:\n{}", diffs.len(), diffs.join("\n"));
}

/// Whether our top list equals FTS5's, ties in score allowed to swap.
fn same_order(ours: &[(u32, f64)], theirs: &[(u32, f64)]) -> bool {
    if ours.len() != theirs.len() {
        return false;
    }
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-300);
    for (i, (o, t)) in ours.iter().zip(theirs).enumerate() {
        if !close(o.1, t.1) {
            return false;
        }
        if o.0 != t.0 {
            let tied = |l: &[(u32, f64)]| {
                (i > 0 && close(l[i - 1].1, l[i].1)) || (i + 1 < l.len() && close(l[i + 1].1, l[i].1))
            };
            if !tied(ours) && !tied(theirs) {
                return false;
            }
        }
    }
    true
}

#[test]
fn top_10_in_fts5_order_for_random_or_queries() {
    if !have_fts5() {
        return;
    }
    let n = env_usize("LKJ_FTS5_ENTRIES", 4096);
    let nq = env_usize("LKJ_FTS5_QUERIES", 100);
    let dir = temp::TempDir::new("fts5-rank");
    let corpus = dir.0.join("corpus.tsv");
    let qpath = dir.0.join("queries.txt");
    let (mut store, qs) = recall_corpus::build(&dir.0.join("data"), n, nq, &corpus, &qpath);
    let theirs = run_tool(&[Path::new("rank"), &corpus, &qpath, Path::new("10")]);
    let theirs: Vec<Vec<(u32, f64)>> = theirs
        .lines()
        .map(|l| {
            l.split_whitespace()
                .map(|h| {
                    let (id, score) = h.split_once(':').unwrap();
                    (id.parse().unwrap(), score.parse().unwrap())
                })
                .collect()
        })
        .collect();
    assert_eq!(theirs.len(), qs.len());
    // The writer's index (store.fts in place and the delta in RAM), then a read-only store
    // searching the file it wrote at close.
    let pct = agreement(&mut store, &qs, &theirs);
    let st = store.recall_stats();
    println!(
        "recall-fts5: {} entries, {} queries, top 10 in FTS5's order: {:.1}% (writer: {} documents in the delta, {} merges)",
        n,
        qs.len(),
        pct,
        st.delta_docs,
        st.merges
    );
    assert!(pct >= 99.0, "only {:.1}% of queries ranked as FTS5 ranks them", pct);
    store.close().unwrap();
    let mut reader = Store::open_read_only_with_capacity(&dir.0.join("data"), n).unwrap();
    let pct = agreement(&mut reader, &qs, &theirs);
    assert!(reader.recall_stats().in_place);
    println!(
        "recall-fts5: {} entries, {} queries, top 10 in FTS5's order: {:.1}% (store.fts in place)",
        n,
        qs.len(),
        pct
    );
    assert!(pct >= 99.0, "only {:.1}% of queries ranked as FTS5 ranks them (in place)", pct);
}

/// Percent of queries whose top 10 comes in FTS5's order.
fn agreement(store: &mut Store, qs: &[String], theirs: &[Vec<(u32, f64)>]) -> f64 {
    let mut out = Ranked::new();
    let mut same = 0;
    let mut shown = 0;
    for (q, want) in qs.iter().zip(theirs) {
        store.rank(q, 10, &mut out).unwrap();
        let ours: Vec<(u32, f64)> = out.hits().iter().map(|h| (h.id, h.score)).collect();
        if same_order(&ours, want) {
            same += 1;
        } else if shown < 5 {
            shown += 1;
            eprintln!("differs: {:?}\n  ours {:?}\n  fts5 {:?}", q, ours, want);
        }
    }
    100.0 * same as f64 / qs.len() as f64
}

/// A store turned over as the capacity soak turns it (`benches/bench_soak.rs`): capacity 1,024,
/// the clean-up on, one new entry saved and used per cycle (`fact,n<i>`, its value a generated
/// one of the corpus above so that the ranking discriminates), `LKJ_FTS5_SOAK_CYCLES` cycles
/// (default 3,000; `make recall-fts5` runs 200,000), then closed as a writing command closes
/// it. `memory search`'s one call (`store::answer::search`, read-only) must give the top 10
/// over live and cold together in FTS5's `bm25()` order over all of them (one FTS5 table of
/// the union) in at least 99% of `LKJ_FTS5_SOAK_QUERIES` queries (default 100; 300). Prints
/// the mean query time in process (store open) and per one call (opening included), the
/// live/cold split, and `store.cold`'s size against its entries' text.
#[test]
fn soak_store_ranks_live_and_cold_in_fts5_order() {
    use lkjagent::memory::key::normalize;
    use lkjagent::memory::query::Archived;
    use lkjagent::memory::store::answer::{self, How, SearchAsk, Sources};
    use lkjagent::memory::store::cleanup::{Policy, Use};
    use lkjagent::memory::store::vectors::{By, Meaning};
    use std::collections::HashMap;
    use std::fmt::Write as _;
    use std::time::{Duration, Instant};
    if !have_fts5() {
        return;
    }
    let cycles = env_usize("LKJ_FTS5_SOAK_CYCLES", 3000);
    let nq = env_usize("LKJ_FTS5_SOAK_QUERIES", 100);
    const CAPACITY: usize = 1024;
    // On tmpfs when there is one, as the soak runs.
    let base = if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    // LKJ_FTS5_SOAK_KEEP names a directory the store is kept in (and taken from, when it is
    // there already: the same cycles give the same store), to measure again without building.
    let keep = std::env::var_os("LKJ_FTS5_SOAK_KEEP").map(PathBuf::from);
    let dir = keep.clone().unwrap_or_else(|| base.join(format!("lkj-fts5-soak-{}", std::process::id())));
    let data = dir.join("data");
    let zipf = recall_corpus::Zipf::new(20_000);
    let mut rng = rng::Rng(0x2545_F491_4F6C_DD1D);
    let t0 = Instant::now();
    if keep.is_none() || !data.join("store.log").exists() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&data).unwrap();
        let mut store = Store::open_with_capacity(&data, CAPACITY).unwrap();
        store.set_policy(Some(Policy::default()));
        for i in 0..cycles {
            let key = normalize(&format!("fact,n{}", i)).unwrap();
            let value = recall_corpus::value(&zipf, &mut rng);
            store.put(&key, &value, 1_700_000_000 + i as u64).unwrap();
            store.note_use(&key, Use::Saved);
            store.flush_access().unwrap();
        }
        store.close_with_indexes().unwrap();
    } else {
        for _ in 0..cycles {
            recall_corpus::value(&zipf, &mut rng);
        }
    }
    let built = t0.elapsed();
    // The union, as rows of one FTS5 table: rowid, tags and value.
    let reader = Store::open_read_only_with_capacity(&data, CAPACITY).unwrap();
    let mut rows = String::new();
    let mut rowid: HashMap<String, u32> = HashMap::new();
    let mut text_bytes = 0u64;
    let mut r = Store::open_read_only_with_capacity(&data, CAPACITY).unwrap();
    let ids: Vec<u32> = r.ids().collect();
    for id in &ids {
        let key = r.key(*id).unwrap();
        let value = r.value(*id).unwrap().to_string();
        text_bytes += (key.as_str().len() + value.len()) as u64;
        writeln!(rows, "{}\t{} {}", rowid.len(), key.as_str(), value).unwrap();
        rowid.insert(key.as_str().to_string(), rowid.len() as u32);
    }
    let live = rowid.len();
    let mut cold_text = 0u64;
    lkjagent::memory::store::cold::scan_current(&data, &|k| reader.find(k).is_some(), &mut |e| {
        let mut v = String::new();
        lkjagent::memory::log::decode_str(e.value_escaped, &mut v)?;
        cold_text += (e.key.as_str().len() + v.len()) as u64;
        writeln!(rows, "{}\t{} {}", rowid.len(), e.key.as_str(), v).unwrap();
        rowid.insert(e.key.as_str().to_string(), rowid.len() as u32);
        Ok(true)
    })
    .unwrap();
    text_bytes += cold_text;
    let cold = rowid.len() - live;
    let corpus = dir.join("corpus.tsv");
    let qpath = dir.join("queries.txt");
    std::fs::write(&corpus, rows).unwrap();
    let qs: Vec<String> = (0..nq)
        .map(|_| {
            let k = 2 + (rng.next() % 2) as usize;
            (0..k).map(|_| zipf.word(&mut rng)).collect::<Vec<_>>().join(" ")
        })
        .collect();
    std::fs::write(&qpath, qs.join("\n") + "\n").unwrap();
    let theirs = run_tool(&[Path::new("rank"), &corpus, &qpath, Path::new("10")]);
    let theirs: Vec<Vec<(u32, f64)>> = theirs
        .lines()
        .map(|l| {
            l.split_whitespace()
                .map(|h| {
                    let (id, score) = h.split_once(':').unwrap();
                    (id.parse().unwrap(), score.parse().unwrap())
                })
                .collect()
        })
        .collect();
    assert_eq!(theirs.len(), qs.len());
    drop(r);
    drop(reader);

    /// The command's ways, for the one call: a read-only store, words alone.
    struct Open<'a>(&'a Path);
    impl Sources for Open<'_> {
        fn open(&mut self) -> lkjagent::error::Result<Option<Box<Store>>> {
            Ok(Some(Box::new(Store::open_read_only_with_capacity(self.0, CAPACITY)?)))
        }
        fn words_only(&mut self, _: By) -> bool {
            true
        }
        fn meaning(&mut self, _: &Store, _: By) -> lkjagent::error::Result<Option<Meaning>> {
            Ok(None)
        }
    }
    // Each query as `memory search` asks it: one call, opening the store each time.
    let mut same = 0;
    let mut shown = 0;
    let mut cold_hits = 0;
    let t = Instant::now();
    for (q, want) in qs.iter().zip(&theirs) {
        let ask = SearchAsk { text: q, limit: 10, archived: Archived::Exclude, how: How::Ranked(By::Words) };
        let a = answer::search(&data, CAPACITY, &ask, &mut Open(&data)).unwrap().unwrap();
        cold_hits += a.hits.iter().filter(|h| h.cold).count();
        let ours: Vec<(u32, f64)> = a.hits.iter().map(|h| (rowid[h.info.key.as_str()], h.score.unwrap())).collect();
        if same_order(&ours, want) {
            same += 1;
        } else if shown < 5 {
            shown += 1;
            eprintln!("differs: {:?}\n  ours {:?}\n  fts5 {:?}", q, ours, want);
        }
    }
    let per_call = t.elapsed().as_secs_f64() * 1e3 / qs.len() as f64;
    let pct = 100.0 * same as f64 / qs.len() as f64;
    // The store kept open (what the agent's storage_search costs).
    let mut open = Store::open_read_only_with_capacity(&data, CAPACITY).unwrap();
    let mut ranked = Ranked::new();
    open.rank(&qs[0], 10, &mut ranked).unwrap();
    let t = Instant::now();
    for q in &qs {
        open.rank(q, 10, &mut ranked).unwrap();
    }
    let in_process = t.elapsed().as_secs_f64() * 1e3 / qs.len() as f64;
    let cold_bytes = std::fs::metadata(data.join("store.cold")).map_or(0, |m| m.len());
    println!(
        "recall-fts5 soak: {} cycles (store built in {:.1} s): {} live + {} cold entries, {} queries, top 10 in \
         FTS5's order over all of them: {:.1}% ({} of the hits cold); mean query {:.3} ms per one call (store \
         opened), {:.3} ms with the store open; store.cold {} bytes for {} bytes of cold entries' text ({:.2}x; \
         all text {} bytes)",
        cycles,
        built.as_secs_f64(),
        live,
        cold,
        qs.len(),
        pct,
        cold_hits,
        per_call,
        in_process,
        cold_bytes,
        cold_text,
        cold_bytes as f64 / cold_text.max(1) as f64,
        text_bytes
    );
    assert!(cold_hits > 0, "cold entries answer too");
    assert!(pct >= 99.0, "only {:.1}% of queries ranked as FTS5 ranks them over live and cold", pct);
    drop(open);
    // Compacted (each key's newest copy only, what `memory compact` does), then searched
    // again: its text index rebuilt from the new store.cold, the same order.
    let mut w = Store::open_with_capacity(&data, CAPACITY).unwrap();
    let t = Instant::now();
    let (before, after) = w.compact_cold().unwrap();
    let compacted = t.elapsed();
    let t = Instant::now();
    w.close_with_indexes().unwrap();
    let reindexed = t.elapsed();
    let mut same = 0;
    for (q, want) in qs.iter().zip(&theirs) {
        let ask = SearchAsk { text: q, limit: 10, archived: Archived::Exclude, how: How::Ranked(By::Words) };
        let a = answer::search(&data, CAPACITY, &ask, &mut Open(&data)).unwrap().unwrap();
        let ours: Vec<(u32, f64)> = a.hits.iter().map(|h| (rowid[h.info.key.as_str()], h.score.unwrap())).collect();
        same += usize::from(same_order(&ours, want));
    }
    let pct_after = 100.0 * same as f64 / qs.len() as f64;
    println!(
        "recall-fts5 soak, after compacting the cold store ({:.2} s, its text index rebuilt and written in {:.2} s): \
         store.cold {} -> {} bytes for {} bytes of its entries' text ({:.2}x); top 10 in FTS5's order: {:.1}%",
        compacted.as_secs_f64(),
        reindexed.as_secs_f64(),
        before,
        after,
        cold_text,
        after as f64 / cold_text.max(1) as f64,
        pct_after
    );
    assert!(pct_after >= 99.0, "after the compaction only {:.1}% of queries ranked as FTS5 ranks them", pct_after);
    // The writer's costs: its first search (store.cold.fts loaded, the keys of store.cold
    // noted), then 2,000 more cycles and the merge of what they moved into a new file: in
    // steps beside the cycle (as a due checkpoint of the cycle runs it: the longest step is
    // the cycle's pause), then, after 2,000 more, in one go (as a close does).
    let mut w = Store::open_with_capacity(&data, CAPACITY).unwrap();
    w.set_policy(Some(Policy::default()));
    let t = Instant::now();
    w.rank(&qs[0], 10, &mut ranked).unwrap();
    let first = t.elapsed();
    let mut next_cycle = cycles;
    let mut more_cycles = |w: &mut Store| {
        let delta_before = w.cold_recall_stats().delta_docs;
        let merges_before = w.cold_recall_stats().merges;
        let t = Instant::now();
        let mut longest = Duration::ZERO;
        for i in next_cycle..next_cycle + 2000 {
            let key = normalize(&format!("fact,n{}", i)).unwrap();
            let value = recall_corpus::value(&zipf, &mut rng);
            let c = Instant::now();
            w.put(&key, &value, 1_700_000_000 + i as u64).unwrap();
            w.note_use(&key, Use::Saved);
            w.flush_access().unwrap();
            longest = longest.max(c.elapsed());
        }
        next_cycle += 2000;
        let merges = w.cold_recall_stats().merges - merges_before;
        (t.elapsed(), w.cold_recall_stats().delta_docs.saturating_sub(delta_before), longest, merges)
    };
    let (cycles_time, moved, longest_cycle, cycle_merges) = more_cycles(&mut w);
    let t = Instant::now();
    w.recall_flush_in_steps().unwrap();
    let started = t.elapsed();
    let merges_before_steps = w.cold_recall_stats().merges;
    let mut took = vec![started];
    while w.recall_merging() {
        let t = Instant::now();
        w.recall_merge_step(t + Duration::from_millis(lkjagent::limits::TEXT_MERGE_STEP_MILLIS)).unwrap();
        took.push(t.elapsed());
    }
    let total: Duration = took.iter().sum();
    took.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (p50, longest) = (ms(took[took.len() / 2]), ms(took[took.len() - 1]));
    let over_100 = took.iter().filter(|d| ms(**d) > 100.0).count();
    let merged_in_steps = w.cold_recall_stats().merges - merges_before_steps;
    let (_, moved_again, _, _) = more_cycles(&mut w);
    let t = Instant::now();
    w.recall_flush().unwrap();
    let merge = t.elapsed();
    println!(
        "recall-fts5 soak, the writer: first ranked search {:.0} ms (store.cold.fts loaded, store.cold's keys noted); \
         2,000 more cycles {:.0} ms, the longest {:.1} ms ({} cold merges finished in their steps; {} entries left in \
         the cold index's delta); merging what is left in steps: started in {:.1} ms, {} steps, p50 {:.1} ms, the \
         longest {:.1} ms, {} over 100 ms, {:.0} ms in all ({} merge); 2,000 more cycles ({} entries) merged in one go \
         into a file of {} entries: {:.0} ms",
        ms(first),
        ms(cycles_time),
        ms(longest_cycle),
        cycle_merges,
        moved,
        ms(started),
        took.len() - 1,
        p50,
        longest,
        over_100,
        ms(total),
        merged_in_steps,
        moved_again,
        w.cold_recall_stats().documents,
        ms(merge)
    );
    assert!(cycle_merges + merged_in_steps > 0, "no merge in steps wrote a store.cold.fts");
    drop(w);
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
