//! Figures for the tag area (see bench.rs for the shared helpers): tag parse and full reply
//! read throughput on a realistic mix (the reply corpus plus long Qwen3-style replies with
//! reasoning blocks), allocations per parse, interpreter throughput, and render throughput; and
//! the 1 MiB cases that show whether parsing is linear (issue 10): many `<value>` elements, a
//! `&lt;`-escaped reply with no instruction, deep nesting, end tags that match nothing under deep
//! nesting, CDATA sections, and one long plain value. For each: the tag parser alone (MB/s and
//! ms) and the whole reader (ms). The target is at most 10 ms each, and the parser at least as
//! fast as quick-xml's event reader (about 1 GB/s on the plain case on the development machine).

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

    one_mib_cases(&mut tree, &mut reader, budget);

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

/// Deterministic prose of about `len` bytes: words and punctuation, no markup, no entities.
fn prose(len: usize, seed: usize) -> String {
    const WORDS: &[&str] = &[
        "the",
        "working",
        "memory",
        "lists",
        "terms",
        "and",
        "their",
        "definitions",
        "a",
        "model",
        "stores",
        "each",
        "entry",
        "under",
        "tags",
        "so",
        "that",
        "later",
        "cycles",
        "find",
        "it",
        "again",
        "with",
        "one",
        "query",
        "vagueness",
        "admits",
        "borderline",
        "cases",
        "while",
    ];
    let mut out = String::with_capacity(len + 16);
    let mut i = seed;
    while out.len() < len {
        out.push_str(WORDS[i % WORDS.len()]);
        i = i.wrapping_mul(31).wrapping_add(7);
        out.push_str(if i.is_multiple_of(13) {
            ".\n"
        } else if i.is_multiple_of(7) {
            ", "
        } else {
            " "
        });
    }
    out
}

/// The 1 MiB inputs, each at most `REPLY_MAX_BYTES`.
fn one_mib_inputs() -> Vec<(&'static str, String)> {
    let max = lkjagent::limits::REPLY_MAX_BYTES;
    let mut out = Vec::new();

    // Well-formed, about 1,150 actions, each with a `<value>` of prose.
    let mut s = String::from("<agent>\n<next_state>thinking</next_state>\n");
    let mut i = 0;
    loop {
        let block = format!(
            "<action><type>storage_save</type><tags>entry_{i}</tags><value>{} &amp; more</value></action>\n",
            prose(820, i)
        );
        if s.len() + block.len() + 9 > max {
            break;
        }
        s.push_str(&block);
        i += 1;
    }
    s.push_str("</agent>");
    out.push(("values", s));

    // Escaped tags that decode to no instruction (an unknown action type), so the reader tries
    // the decoded reading and falls back to the reply as it was.
    let mut s = String::new();
    let mut i = 0;
    loop {
        let block = format!(
            "&lt;agent&gt;&lt;action&gt;&lt;type&gt;storage_delete&lt;/type&gt;&lt;tags&gt;k{i}&lt;/tags&gt;&lt;value&gt;{}&lt;/value&gt;&lt;/action&gt;&lt;/agent&gt;\n",
            prose(1000, i)
        );
        if s.len() + block.len() > max {
            break;
        }
        s.push_str(&block);
        i += 1;
    }
    out.push(("escaped", s));

    // Deep nesting: blocks of 60 nested elements with prose at every level.
    let mut s = String::new();
    let mut i = 0;
    'outer: loop {
        let mut block = String::new();
        for d in 0..60 {
            block.push_str(&format!("<n{d} id=\"{i}\">{}", prose(260, i + d)));
        }
        for d in (0..60).rev() {
            block.push_str(&format!("</n{d}>"));
        }
        if s.len() + block.len() > max {
            break 'outer;
        }
        s.push_str(&block);
        i += 1;
    }
    out.push(("nested", s));

    // 64 open elements, then end tags that match none of them.
    let mut s: String = (0..64).map(|d| format!("<o{d}>")).collect();
    while s.len() + 5 <= max {
        s.push_str("</zz>");
    }
    out.push(("unmatched_end_tags", s));

    // CDATA sections inside and between values.
    let mut s = String::from("<agent>");
    let mut i = 0;
    loop {
        let mut block = format!("<action><type>storage_save</type><tags>code_{i}</tags><value>");
        for k in 0..6 {
            block.push_str(&format!("{} <![CDATA[<b>{k}</b> & </value> if a<b]]>", prose(120, i + k)));
        }
        block.push_str("</value></action><![CDATA[ between <action> ]]>\n");
        if s.len() + block.len() + 8 > max {
            break;
        }
        s.push_str(&block);
        i += 1;
    }
    s.push_str("</agent>");
    out.push(("cdata", s));

    // A run of `<` (a reply of nothing else): every `<` a candidate for markup, none is.
    out.push(("lt_run", "<".repeat(max)));

    // One long plain value: the linear case.
    let head = "<agent><action><type>storage_save</type><tags>big</tags><value>";
    let tail = "</value></action></agent>";
    let s = format!("{head}{}{tail}", prose(max - head.len() - tail.len() - 16, 1));
    out.push(("plain", s));
    out
}

fn one_mib_cases(tree: &mut TagTree, reader: &mut Reader, budget: Duration) {
    let opts = ParseOptions { text_elements: TEXT_ELEMENTS };
    for (name, input) in one_mib_inputs() {
        let report = *tree.parse(&input, &opts);
        if let Some((limit, at)) = report.limit {
            println!("bench: note: tag_1mib_{name} reaches the {} limit at byte {at}", limit.as_str());
        }
        let t = super::best_time(budget, 3, || {
            black_box(tree.parse(black_box(&input), &opts));
        });
        super::report(&format!("tag_parse_1mib_{name}"), super::mb_per_s(input.len(), t), "MB/s");
        super::report(&format!("tag_parse_1mib_{name}_ms"), t.as_secs_f64() * 1e3, "ms");
        let t = super::best_time(budget, 3, || {
            black_box(reader.read(black_box(input.as_bytes()), 1).len());
        });
        super::report(&format!("tag_read_1mib_{name}_ms"), t.as_secs_f64() * 1e3, "ms");
    }
}
