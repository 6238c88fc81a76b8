//! The generated corpus of the recall checks (tests/recall_fts5.rs, benches/bench_recall.rs):
//! entries whose values are 20 to 60 words drawn by Zipf (s = 1) from a 20,000-word
//! vocabulary (some written with capitals or diacritics), keys of two tags, the same rows as
//! "rowid<TAB>text" for tools/fts5_check.py, and random 2- and 3-word queries from the same
//! distribution. Deterministic.
//!
//! Include with `#[path = "support/recall_corpus.rs"] mod recall_corpus;`, and `support/rng.rs` as
//! `mod rng` beside it.
#![allow(dead_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use lkjagent::memory::key::normalize;
use lkjagent::memory::store::Store;
use std::fmt::Write as _;
use std::path::Path;

/// A deterministic generator (xorshift).
// The crate that includes this file includes `support/rng.rs` as `rng` at its root too.
pub use crate::rng::Rng;

/// Words by rank, drawn with probability ∝ 1 / rank (Zipf, s = 1).
pub struct Zipf {
    pub words: Vec<String>,
    cdf: Vec<f64>,
}

impl Zipf {
    pub fn new(vocab: usize) -> Zipf {
        const SYL: [&str; 16] =
            ["ka", "to", "mi", "ra", "ne", "su", "lo", "pi", "de", "gu", "ba", "fe", "zo", "chi", "wa", "yu"];
        let mut words = Vec::with_capacity(vocab);
        for r in 0..vocab {
            let mut w = String::new();
            let mut x = r + 16;
            while x > 0 {
                w.push_str(SYL[x % 16]);
                x /= 16;
            }
            // Some words written with capitals or diacritics: the same word to both sides.
            if r % 13 == 5 {
                w = w.to_uppercase();
            } else if r % 17 == 3 {
                w = w.replacen('e', "é", 1).replacen('a', "à", 1);
            }
            words.push(w);
        }
        let mut cdf = Vec::with_capacity(vocab);
        let mut sum = 0.0;
        for r in 0..vocab {
            sum += 1.0 / (r + 1) as f64;
            cdf.push(sum);
        }
        for c in &mut cdf {
            *c /= sum;
        }
        Zipf { words, cdf }
    }

    pub fn word(&self, rng: &mut Rng) -> &str {
        let u = rng.unit();
        let i = self.cdf.partition_point(|&c| c < u).min(self.words.len() - 1);
        &self.words[i]
    }
}

/// A value: 20 to 60 words, some separated by commas.
pub fn value(zipf: &Zipf, rng: &mut Rng) -> String {
    let words = 20 + (rng.next() % 41) as usize;
    let mut value = String::new();
    for j in 0..words {
        if j > 0 {
            value.push(if j % 9 == 0 { ',' } else { ' ' });
        }
        value.push_str(zipf.word(rng));
    }
    value
}

/// Builds `n` entries in a store at `dir` and the same rows in `corpus`; returns the queries
/// written to `qpath`.
pub fn build(dir: &Path, n: usize, queries: usize, corpus: &Path, qpath: &Path) -> (Store, Vec<String>) {
    let zipf = Zipf::new(20_000);
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    std::fs::create_dir_all(dir).unwrap();
    let mut store = Store::open_with_capacity(dir, n).unwrap();
    let mut rows = String::new();
    store.begin_batch(n as u64).unwrap();
    for i in 0..n {
        let value = value(&zipf, &mut rng);
        let key = normalize(&format!("topic{},item{}", i / 1024, i % 1024)).unwrap();
        let put = store.put(&key, &value, 1_700_000_000).unwrap();
        writeln!(rows, "{}\t{} {}", put.id, key.as_str(), value).unwrap();
    }
    store.end_batch().unwrap();
    std::fs::write(corpus, rows).unwrap();
    let mut qs = Vec::new();
    for _ in 0..queries {
        let k = 2 + (rng.next() % 2) as usize;
        let q: Vec<&str> = (0..k).map(|_| zipf.word(&mut rng)).collect();
        qs.push(q.join(" "));
    }
    std::fs::write(qpath, qs.join("\n") + "\n").unwrap();
    (store, qs)
}
