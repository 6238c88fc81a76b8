//! Figures for the tag area (see bench.rs for the shared helpers): tag parse and full reply
//! read throughput on a realistic mix (the reply corpus plus long Qwen3-style replies with
//! reasoning blocks), allocations per parse, interpreter throughput, and render throughput.

use lkjagent::reply::read::TEXT_ELEMENTS;
use lkjagent::reply::Reader;
use lkjagent::tag::{render_pairs, ParseOptions, Style, TagTree};
use std::hint::black_box;
use std::time::Duration;

/// The mix: every corpus reply, plus generated long replies as Qwen3 8B writes them (a few KiB
/// of reasoning, then an `<agent>` block with a long value).
fn mix() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/replies");
    let mut out: Vec<Vec<u8>> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "txt"))
            .filter_map(|p| std::fs::read(p).ok())
            .collect(),
        Err(_) => Vec::new(),
    };
    for n in 0..16 {
        let mut r = String::from("<think>\n");
        for i in 0..(20 + n * 5) {
            r.push_str(&format!(
                "Step {i}: the working memory lists terms; the user wants definitions. Should I use <action> with storage_save? Probably, after checking x < y.\n"
            ));
        }
        r.push_str("</think>\n\n<agent>\n  <next_state>evaluating</next_state>\n  <think_log>Saving the next definition.</think_log>\n  <action>\n    <type>storage_save</type>\n    <tags>dictionary,terms,entry_");
        r.push_str(&n.to_string());
        r.push_str("</tags>\n    <value>");
        for _ in 0..(10 + n * 4) {
            r.push_str(
                "A definition sentence with an entity &amp; a comparison a &lt; b, and plain words to fill the line.\n",
            );
        }
        r.push_str("</value>\n  </action>\n</agent>\n");
        out.push(r.into_bytes());
    }
    out
}

/// Prints this area's figures.
pub fn run() {
    let replies = mix();
    let total: usize = replies.iter().map(Vec::len).sum();
    let texts: Vec<String> = replies.iter().map(|r| String::from_utf8_lossy(r).into_owned()).collect();
    let budget = Duration::from_millis(700);

    // The tag parser alone.
    let mut tree = TagTree::with_capacity(lkjagent::limits::TAG_MAX_NODES, lkjagent::limits::TAG_TEXT_BYTES);
    let opts = ParseOptions { text_elements: TEXT_ELEMENTS };
    let t = super::best_time(budget, 5, || {
        for s in &texts {
            black_box(tree.parse(black_box(s), &opts));
        }
    });
    super::report("tag_parse_reply_mix", super::mb_per_s(total, t), "MB/s");

    let before = super::allocations();
    let rounds = 10;
    for _ in 0..rounds {
        for s in &texts {
            black_box(tree.parse(black_box(s), &opts));
        }
    }
    let allocs = super::allocations() - before;
    super::report("tag_parse_allocs_per_parse", allocs as f64 / (rounds * texts.len()) as f64, "allocs");

    // The whole reader: clean, parse, interpret.
    let mut reader = Reader::new();
    let t = super::best_time(budget, 5, || {
        for r in &replies {
            black_box(reader.read(black_box(r), 1).len());
        }
    });
    super::report("tag_read_reply_mix", super::mb_per_s(total, t), "MB/s");
    super::report("tag_read_replies_per_s", replies.len() as f64 / t.as_secs_f64().max(1e-12), "replies/s");
    let before = super::allocations();
    for _ in 0..rounds {
        for r in &replies {
            black_box(reader.read(black_box(r), 1).len());
        }
    }
    let allocs = super::allocations() - before;
    super::report("tag_read_allocs_per_reply", allocs as f64 / (rounds * replies.len()) as f64, "allocs");

    // A 1 MiB reply (reasoning plus a long value).
    let mut big = String::from("<think>");
    while big.len() < 400 * 1024 {
        big.push_str("Considering <tags> and <value> choices for the entry, again and again.\n");
    }
    big.push_str("</think><agent><action><type>storage_save</type><tags>big</tags><value>");
    while big.len() < (1 << 20) - 64 {
        big.push_str("Long value text &amp; more text with a < b in it.\n");
    }
    big.push_str("</value></action></agent>");
    let t = super::best_time(budget, 3, || {
        black_box(reader.read(black_box(big.as_bytes()), 1).len());
    });
    super::report("tag_read_1mib_reply", super::mb_per_s(big.len(), t), "MB/s");

    // Rendering working memory as tags.
    let pairs: Vec<(String, String)> = (0..200)
        .map(|i| {
            (
                format!("dictionary,terms,entry_{i}"),
                format!("Definition {i}: text with <angle> & ampersand, and more words."),
            )
        })
        .collect();
    let mut out = lkjagent::fixed::FixedBuf::with_capacity("bench prompt", 1 << 20);
    let t = super::best_time(budget, 5, || {
        out.clear();
        let _ = render_pairs(&mut out, pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())), Style::Lines);
    });
    super::report("tag_render_working_memory", super::mb_per_s(out.len(), t), "MB/s");
}
