#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! `lkjagent report` on real data directories: the demo run's page holds each section with the
//! counts this test takes from the audit log itself; texts from a model, a config and a file
//! come out escaped; damaged and foreign audit lines are counted and shown; a 100,000-cycle
//! audit log renders within the size cap with binned charts; and the report changes no file.

#[path = "support/audit_gen.rs"]
mod audit_gen;
#[path = "support/cli.rs"]
mod cli;
#[path = "support/temp.rs"]
mod temp;

use cli::lkjagent;
use lkjagent::agent::audit::{ActionRecord, AuditLog, CycleRecord};
use lkjagent::cli::report::{render, Period};
use lkjagent::json::Document;
use lkjagent::limits::{REPORT_CHART_MAX_POINTS, REPORT_MAX_BYTES, REPORT_STRIP_MAX_MARKS};
use lkjagent::memory::key::normalize;
use lkjagent::memory::store::Store;
use std::collections::BTreeMap;
use std::path::Path;
use temp::{shipped, snapshot, TempDir};

/// What the test reads from an audit log on its own, line by line.
#[derive(Default, Debug)]
struct Counted {
    cycles: u64,
    runs: Vec<String>,
    /// worked, valid without action, action failed, refused repeat, invalid reply, failed.
    outcomes: [u64; 6],
    /// type -> (count, worked)
    actions: BTreeMap<String, (u64, u64)>,
    /// problem or error code -> count
    codes: BTreeMap<String, u64>,
    first_sha: String,
    last_sha: String,
    paging: u64,
}

fn count_audit(path: &Path) -> Counted {
    let text = std::fs::read_to_string(path).unwrap();
    let mut c = Counted::default();
    let mut doc = Document::with_capacity(4096, 1 << 20);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        doc.parse(line.as_bytes()).unwrap();
        let root = doc.root();
        c.cycles += 1;
        let run = root.get("run").unwrap().as_str().unwrap().to_string();
        if c.runs.last() != Some(&run) {
            c.runs.push(run);
        }
        let sha = root.get("prompt_sha256").unwrap().as_str().unwrap().to_string();
        if c.first_sha.is_empty() {
            c.first_sha = sha.clone();
        }
        c.last_sha = sha;
        if root.get("state").unwrap().as_str() == Some("paging") {
            c.paging += 1;
        }
        let error = root.get("error").unwrap().as_str().map(str::to_string);
        let valid = root.get("valid").unwrap().as_bool().unwrap();
        let mut any = false;
        let (mut failed, mut refused) = (false, false);
        for a in root.get("actions").unwrap().items() {
            any = true;
            let ok = a.get("ok").unwrap().as_bool().unwrap();
            let e = c.actions.entry(a.get("type").unwrap().as_str().unwrap().to_string()).or_default();
            e.0 += 1;
            e.1 += u64::from(ok);
            if !ok {
                if a.get("result").unwrap().as_str().unwrap().starts_with("refused: identical") {
                    refused = true;
                } else {
                    failed = true;
                }
            }
        }
        for p in root.get("problems").unwrap().items() {
            *c.codes.entry(p.as_str().unwrap().to_string()).or_default() += 1;
        }
        if let Some(e) = &error {
            *c.codes.entry(e.clone()).or_default() += 1;
        }
        let outcome = if error.is_some() {
            5
        } else if !valid {
            4
        } else if !any {
            1
        } else if failed {
            2
        } else if refused {
            3
        } else {
            0
        };
        c.outcomes[outcome] += 1;
    }
    c
}

/// The page without the line-break hints it puts in keys and the labels of its table cells,
/// so texts and rows can be looked for whole.
fn plain(html: &str) -> String {
    let mut out = html.replace("<wbr>", "");
    while let Some(at) = out.find(" data-label=\"") {
        let end = out[at + 13..].find('"').unwrap() + at + 14;
        out.replace_range(at..end, "");
    }
    out
}

/// Nothing in the page can run or fetch anything.
fn assert_inert(html: &str) {
    let lower = html.to_ascii_lowercase();
    for bad in
        ["<script", "href=", "src=", "url(", "@import", "<link", "<img", "<iframe", "<object", "<embed", "javascript:"]
    {
        assert!(!lower.contains(bad), "the page holds {bad}");
    }
    for handler in ["onload=", "onerror=", "onclick=", "onmouseover="] {
        assert!(!lower.contains(handler), "the page holds {handler}");
    }
    assert_eq!(html.matches("<svg").count(), html.matches("</svg>").count(), "every drawing is closed once");
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    // Nothing may run or be fetched, and only the page's own style applies: the policy names its
    // SHA-256 (a browser drops a style whose hash differs, so the hash is checked here).
    let style = html.split("<style>").nth(1).and_then(|s| s.split("</style>").next()).expect("a style block");
    let digest = lkjagent::sha256::Sha256::digest(style.as_bytes());
    let b64 = {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for c in digest.chunks(3) {
            let n = c.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
            for i in 0..4 {
                out.push(if i <= c.len() { A[(n >> (18 - 6 * i)) as usize & 63] as char } else { '=' });
            }
        }
        out
    };
    assert!(
        html.contains(&format!("content=\"default-src 'none'; style-src 'sha256-{b64}'\"")),
        "the page forbids scripts and fetches, and names its style's hash"
    );
    assert!(!lower.contains("unsafe-"), "no unsafe CSP source");
}

#[test]
fn the_demo_report_holds_each_section_with_the_audit_logs_counts() {
    let d = TempDir::new("report-demo");
    for f in ["config.json", "memory.json", "demo.jsonl"] {
        d.write(f, shipped(f));
    }
    assert!(lkjagent(["demo"]).data(d.path()).status().success());
    let run_dir = d.path().join("demo-run");
    let c = count_audit(&run_dir.join("logs/audit.jsonl"));
    assert!(c.cycles >= 20 && c.outcomes[0] > 0 && c.outcomes[4] > 0, "the demo covers outcomes: {c:?}");
    let store = Store::open_read_only(&run_dir).unwrap();
    let entries = store.len();
    let keys: Vec<String> = store.ids().filter_map(|id| store.info(id)).map(|i| i.key.as_str().to_string()).collect();
    drop(store);

    let before = snapshot(&run_dir);
    let page_path = d.path().join("page.html");
    let out = lkjagent(["report", "--out"]).arg(&page_path).data(&run_dir).output();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(snapshot(&run_dir), before, "report changed the data directory");
    let html = std::fs::read_to_string(&page_path).unwrap();
    assert_inert(&html);
    let page = plain(&html);

    // The task, as written, first thing under the title: before the facts and every section.
    let memory: String = std::fs::read_to_string(run_dir.join("memory.json")).unwrap();
    let mut doc = Document::with_capacity(4096, 1 << 20);
    doc.parse(memory.as_bytes()).unwrap();
    let task =
        doc.root().get("working_memory").and_then(|w| w.get("task")).and_then(|t| t.as_str()).unwrap().to_string();
    let task_html = format!("<p class=\"task\">{}</p>", {
        let mut e = String::new();
        lkjagent::html::escape_into(&mut e, &task);
        e
    });
    let at = page.find(&task_html).expect("the task is shown as written");
    assert!(at < page.find("<dl class=\"facts\">").unwrap() && at < page.find("<section id=\"cycles\">").unwrap());
    // The product (entries with one of the task's tags, shown in the table's title) apart from
    // the agent's own logs (the shipped config's prefixes) and notes, each with its count.
    let product = page.find("<div id=\"product\">").expect("the product's table");
    let notes = page.find("<div id=\"own\">").expect("the logs' and notes' table");
    let tags = page[product..].split("(tags <code>").nth(1).and_then(|t| t.split("</code>").next()).unwrap();
    let log =
        |k: &str| k == "task" || ["think_log_", "evaluation_log_", "command_log_"].iter().any(|p| k.starts_with(p));
    let own = |k: &str| log(k) || !k.split(',').any(|t| tags.split(',').any(|p| p == t));
    let own_n = keys.iter().filter(|k| own(k)).count();
    assert!(keys.iter().any(|k| log(k)) && own_n < keys.len(), "the demo stores both kinds: {keys:?} ({tags})");
    let (n, o) = (keys.len() - own_n, own_n);
    assert!(
        page.contains(&format!(
            "The task's product (tags <code>{tags}</code>): {n} entries, {n} new in the period</h3>"
        )),
        "product count {n} {keys:?}"
    );
    assert!(
        page.contains(&format!("The agent's own logs and notes: {o} entries, {o} new in the period</h3>")),
        "own count"
    );
    let (product_part, own_part) = (&page[product..notes], &page[notes..]);
    for k in &keys {
        let cell = format!("<td class=\"mono\">{k}</td>");
        if own(k) {
            assert!(!product_part.contains(&cell), "{k} is not the product");
        } else {
            assert!(
                !own_part[..own_part.find("</table>").unwrap_or(own_part.len())].contains(&cell),
                "{k} is the product"
            );
        }
    }
    // Header.
    assert!(page.contains(&format!("<dt>cycles</dt><dd>{}</dd>", c.cycles)), "cycles");
    assert!(page.contains(&format!("<dt>runs</dt><dd>{}</dd>", c.runs.len())), "runs");
    assert!(page.contains(&format!("{} now (0 archived), {} new in the period", entries, entries)), "store entries");
    assert!(page.contains("<dt>model</dt><dd>qwen/qwen3-8b (openai)</dd>"));
    assert!(page.contains("<dt>last error</dt><dd>none in the period</dd>"));
    // The cycle strip: one mark per cycle, and the outcome counts in its legend.
    assert!(page.contains("<section id=\"cycles\">"));
    assert_eq!(page.matches("<g><title>cycle ").count() as u64, c.cycles, "one mark per cycle");
    let labels =
        ["action worked", "valid, no action", "action failed", "refused repeat", "invalid reply", "request failed"];
    for (label, n) in labels.iter().zip(c.outcomes) {
        assert!(page.contains(&format!("{label} {n}</span>")), "legend: {label} {n}");
    }
    // Charts: four, each a drawing, with paging shaded on the working-memory one.
    assert_eq!(page.matches("<figure class=\"chart\">").count(), 4);
    assert_eq!(page.matches("<svg class=\"plot\"").count(), 4);
    assert!(c.paging > 0 && page.contains(&format!("paging ({} cycles)", c.paging)));
    assert!(page.contains("<rect class=\"mark\""));
    assert!(page.contains("paging limit 3,000") && page.contains("hard limit 4,500"));
    // Tables.
    for (kind, (n, ok)) in &c.actions {
        let row = format!("<td class=\"mono\">{kind}</td><td class=\"n\">{n}</td><td class=\"n\">{ok}</td>");
        assert!(page.contains(&row), "actions row {row}");
    }
    for (code, n) in &c.codes {
        let row = format!("<td class=\"mono\">{code}</td><td class=\"n\">{n}</td><td class=\"v\">cycle ");
        assert!(page.contains(&row), "problems row {row}");
    }
    for key in ["apple,dictionary,fruit", "banana,dictionary,fruit"] {
        assert!(page.contains(&format!("<td class=\"mono\">{key}</td>")), "newest entry {key}");
    }
    assert!(page.contains("<td class=\"mono\">dictionary</td><td class=\"n\">2</td>"), "top tag");
    let run = &c.runs[0];
    assert!(page.contains(&format!("<td class=\"mono\">{run}</td>")), "runs row");
    assert!(page.contains(&format!("{} (1 to {})", c.cycles, c.cycles)), "runs row cycles");
    // The audit block.
    let audit = &page[page.find("<section id=\"audit\"").unwrap()..];
    assert!(audit.contains(&format!("<dt>run ids</dt><dd class=\"mono\">{run}</dd>")));
    assert!(audit.contains(&c.first_sha) && audit.contains(&c.last_sha));
    assert!(audit.contains(&format!("{} cycles;", c.cycles)));
    let actions: u64 = c.actions.values().map(|v| v.0).sum();
    let worked: u64 = c.actions.values().map(|v| v.1).sum();
    assert!(audit.contains(&format!("{actions} actions, {worked} worked")));
    assert!(audit.contains("<dt>damaged lines</dt><dd>0"));
    assert!(audit.contains("<dt>parser version</dt><dd>lkjagent "));

    // `-` writes to stdout, the same page but for the time it was written.
    let out = lkjagent(["report", "--out", "-", "--last", "5"]).data(&run_dir).output();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("<dt>cycles</dt><dd>5</dd>") && text.contains("last 5 cycles"));
}

/// A data directory with one cycle, whose every text is hostile.
#[test]
fn texts_from_a_model_a_config_and_a_file_are_escaped() {
    let d = TempDir::new("report-escape");
    let hostile = "<script>alert(\"x\")</script></svg>'\"&";
    let mut config = shipped("config.json");
    temp::set(&mut config, "\"qwen/qwen3-8b\"", "\"<script>m('x')</script></svg>\"");
    d.write("config.json", config);
    d.write(
        "memory.json",
        "{\"state\":\"thinking\",\"iteration\":0,\"working_memory\":{\"task\":\"<script>t()</script></p></section>\\n& 'list'\"}}",
    );
    let mut s = Store::open(d.path()).unwrap();
    s.put(&normalize("fruit,apple").unwrap(), hostile, 1_790_000_000).unwrap();
    drop(s);
    let mut log = AuditLog::open(d.path()).unwrap();
    let actions = [ActionRecord { kind: "storage_save", key: "</svg>", ok: false, result: hostile }];
    for (run_id, cycle) in [("r1", 1), ("r\"2</svg>", 2)] {
        log.append(&CycleRecord {
            time: 1_790_000_000 + cycle,
            run_id,
            cycle,
            state: "<b>state</b>",
            next_state: "evaluating",
            prompt_sha256: &[7; 32],
            prompt_bytes: 10,
            prompt_tokens_est: 3,
            reply_bytes: 5,
            latency_ms: 12,
            usage: Some((3, 4)),
            cached_tokens: Some(1),
            valid: false,
            finish: "stop",
            constrain: "<i>grammar</i>",
            seed: None,
            actions: &actions,
            problems: &["<script>NO_TAGS</script>"],
            error: None,
            cleanup: (0, false),
        })
        .unwrap();
    }
    drop(log);
    // The run's exchange log holds the reply behind the problem.
    std::fs::create_dir_all(d.path().join("logs/exchange-r1")).unwrap();
    d.write(
        "logs/exchange-r1/exchange.jsonl",
        "{\"time\":1790000000,\"cycle\":1,\"state\":\"thinking\",\"prompt\":\"p\",\"content\":\"<agent></svg><script>x()</script>\",\"finish_reason\":\"stop\"}\n",
    );
    let html = render(d.path(), &Period::default(), 1_790_000_100).unwrap();
    assert_inert(&html);
    let page = plain(&html);
    // The only tags are the page's own.
    assert!(!page.contains("<b>") && !page.contains("<i>"));
    assert_eq!(page.matches("</svg>").count(), page.matches("<svg").count());
    for shown in [
        "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;/svg&gt;&#39;&quot;&amp;", // the stored value, the action's result
        "&lt;script&gt;m(&#39;x&#39;)&lt;/script&gt;&lt;/svg&gt;", // the model's name from config.json
        "r&quot;2&lt;/svg&gt;",                                    // a run id
        "the reply: &lt;agent&gt;&lt;/svg&gt;&lt;script&gt;x()&lt;/script&gt;", // the exchange log
        "&lt;script&gt;NO_TAGS&lt;/script&gt;",                    // a problem code
        "&lt;i&gt;grammar&lt;/i&gt;",                              // the constraint
        "<p class=\"task\">&lt;script&gt;t()&lt;/script&gt;&lt;/p&gt;&lt;/section&gt;\n&amp; &#39;list&#39;</p>", // the task
    ] {
        assert!(page.contains(shown), "{shown} not shown escaped");
    }
}

#[test]
fn damaged_and_foreign_audit_lines_are_counted_and_shown() {
    let d = TempDir::new("report-damaged");
    std::fs::create_dir_all(d.path().join("logs")).unwrap();
    let good = |c: u64| {
        format!(
            "{{\"time\":{},\"run\":\"r1\",\"cycle\":{c},\"state\":\"thinking\",\"valid\":true,\"actions\":[],\"error\":null}}\n",
            1_790_000_000 + c
        )
    };
    let text = [good(1), "{\"time\": 5, \"cyc\n".into(), good(2), "[\"a foreign line\"]\n".into(), good(3)].concat();
    d.write("logs/audit.jsonl", text);
    let html = render(d.path(), &Period::default(), 1_790_000_100).unwrap();
    assert!(html.contains("<dt>cycles</dt><dd>3</dd>"));
    assert!(html.contains("<dt>damaged audit lines</dt><dd>2 (first: audit.jsonl line 2: not JSON)</dd>"), "header");
    assert!(html.contains("<dt>damaged lines</dt><dd>2 (first: audit.jsonl line 2: not JSON)"), "audit block");

    // A record whose texts are as long as a line allows: shown clipped, the page stays small.
    let long = "x".repeat(2_000);
    let line = format!(
        "{{\"time\":1790000009,\"run\":\"{long}\",\"cycle\":9,\"state\":\"{long}\",\"prompt_sha256\":\"{long}\",\"actions\":[{{\"type\":\"{long}\",\"ok\":false,\"result\":\"{long}\"}}],\"problems\":[\"{long}\"],\"error\":\"{long}\"}}\n"
    );
    assert!(line.len() < lkjagent::limits::AUDIT_LINE_MAX_BYTES);
    let mut f = std::fs::OpenOptions::new().append(true).open(d.path().join("logs/audit.jsonl")).unwrap();
    std::io::Write::write_all(&mut f, line.as_bytes()).unwrap();
    let html = render(d.path(), &Period::default(), 1_790_000_100).unwrap();
    assert!(html.contains("<dt>cycles</dt><dd>4</dd>"));
    assert!(!html.contains(&"x".repeat(lkjagent::limits::REPORT_CELL_CHARS + 1)), "a text is shown whole");
    assert!(html.contains(&format!("{}…", "x".repeat(lkjagent::limits::REPORT_CELL_CHARS))));
    assert!(html.len() < 64 * 1024, "{} bytes", html.len());
}

/// A data directory with the shipped config and a generated audit log of `n` cycles
/// (`support/audit_gen.rs`).
fn long_run(n: u64) -> TempDir {
    let d = TempDir::new("report-long");
    d.write("config.json", shipped("config.json"));
    std::fs::create_dir_all(d.path().join("logs")).unwrap();
    d.write("logs/audit.jsonl", audit_gen::audit_log(n));
    d
}

#[test]
fn a_100000_cycle_audit_log_renders_within_the_cap_with_binned_charts() {
    let n = 100_000u64;
    let d = long_run(n);
    let html = render(d.path(), &Period::default(), 1_800_000_000).unwrap();
    assert!(html.len() <= REPORT_MAX_BYTES, "{} bytes", html.len());
    assert_inert(&html);
    assert!(html.contains("<dt>cycles</dt><dd>100,000</dd>"));
    assert!(html.contains("<dt>runs</dt><dd>6</dd>"));
    // Binned: 250 cycles a point, drawn as a median line with a min-max band; the one slow
    // cycle is not lost in its bin.
    let per_point = n.div_ceil(REPORT_CHART_MAX_POINTS as u64);
    assert!(html.contains(&format!("{per_point} cycles per point: the line is their median")));
    assert!(html.contains("class=\"band\""));
    assert!(html.contains("(ms, 0 to 999,999)"), "the maximum of a bin is kept");
    let first_line = &html[html.find("<polyline class=\"median\" points=\"").unwrap()..];
    let points = first_line[..first_line.find("\"/>").unwrap()].matches(',').count();
    assert_eq!(points, REPORT_CHART_MAX_POINTS, "one point per bin");
    // The strip: at most its marks, each a run of cycles.
    let marks = html.matches("<g><title>cycles ").count();
    assert!(marks > 0 && marks <= REPORT_STRIP_MAX_MARKS, "{marks} marks");
    assert!(html.contains(&format!("each mark is {} consecutive cycles", n.div_ceil(REPORT_STRIP_MAX_MARKS as u64))));
    assert!(plain(&html).contains("<td class=\"mono\">NO_TAGS</td><td class=\"n\">2,000</td>"));
}

#[test]
fn run_last_and_since_narrow_the_period() {
    let n = 50_000u64;
    let d = long_run(n);
    let now = 1_800_000_000;
    let one_run = render(d.path(), &Period { run: Some("run1".into()), ..Period::default() }, now).unwrap();
    assert!(one_run.contains("<dt>cycles</dt><dd>20,000</dd>") && one_run.contains("<dt>runs</dt><dd>1</dd>"));
    assert!(one_run.contains("30,000 outside the period"));
    let last = render(d.path(), &Period { last: Some(10), ..Period::default() }, now).unwrap();
    assert!(last.contains("<dt>cycles</dt><dd>10</dd>"));
    assert!(last.contains(&format!("{:064}", n)) && last.contains(&format!("{:064}", n - 9)), "first and last prompt");
    let since =
        render(d.path(), &Period { since: Some(audit_gen::START + (n - 9) * 10), ..Period::default() }, now).unwrap();
    assert!(since.contains("<dt>cycles</dt><dd>10</dd>"));
}

#[test]
fn usage_errors_and_a_fresh_directory() {
    let d = TempDir::new("report-usage");
    let out = lkjagent(["report", "--last", "0"]).data(d.path()).output();
    assert_eq!(out.status.code(), Some(2));
    let out = lkjagent(["report", "--last", "3", "--since", "1h"]).data(d.path()).output();
    assert_eq!(out.status.code(), Some(2));
    let out = lkjagent(["report", "--since", "someday"]).data(d.path()).output();
    assert_eq!(out.status.code(), Some(2));
    let out = lkjagent(["report", "--out", "-"]).data(d.path().join("missing")).output();
    assert_eq!(out.status.code(), Some(1));
    let out = lkjagent(["report", "--help"]).output();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("--since TIME"));
    // A fresh directory is a page that says so.
    let html = render(d.path(), &Period::default(), 1_800_000_000).unwrap();
    assert_inert(&html);
    assert!(html.contains("No cycle in the period: there is no audit log yet"));
    assert!(html.contains("<dt>cycles</dt><dd>0</dd>"));
}
