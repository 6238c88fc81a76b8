//! The page of `lkjagent report`: its style, its sections in order (header, cycles, charts,
//! tables, audit) and their tables, written into a [`Page`] from what the other rooms gathered.
//! Every text goes through the page's escaping; every tag here is a literal.

use super::chart::{self, Limit, Line as ChartLine, ShortTime, Thousands};
use super::scan::{Counts, Period};
use super::sources::{ConfigPart, StorePart};
use super::summary::{self, Summary};
use crate::cli::util::Time;
use crate::html::Page;
use std::path::PathBuf;

/// Everything the page shows.
pub struct Report {
    pub data: PathBuf,
    pub period: Period,
    pub now: u64,
    pub files: Vec<PathBuf>,
    pub counts: Counts,
    /// Records before the period (`--last`) or outside it.
    pub outside: u64,
    pub summary: Summary,
    pub config: ConfigPart,
    pub memory: Option<Box<crate::cli::memory::MemoryView>>,
    pub store: StorePart,
    /// The product's tags, when the task gives some.
    pub product_tags: Option<String>,
}

const STYLE: &str = "\
:root{--fg:#1d232a;--mute:#5b6570;--line:#d6dbe0;--bg:#fff;--band:#f4f6f8;\
--o0:#2e9d57;--o1:#9db4c8;--o2:#e08a1e;--o3:#8e5cc4;--o4:#d8425a;--o5:#7a1020;\
--c0:#2b6cb0;--c1:#2e9d57;--c2:#d97706;--c3:#7c3aed}\
*{box-sizing:border-box}\
body{margin:0 auto;max-width:72rem;padding:1rem;font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--fg);background:var(--bg)}\
h1{font-size:1.5rem;margin:.2rem 0 .6rem}h2{font-size:1.15rem;margin:1.6rem 0 .5rem;border-bottom:1px solid var(--line);padding-bottom:.2rem}\
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.88em;overflow-wrap:anywhere}\
.facts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,17rem),1fr));gap:.4rem .9rem;margin:0}\
.facts div{background:var(--band);border-radius:6px;padding:.4rem .6rem;min-width:0}\
.facts dt{font-size:.78rem;color:var(--mute);text-transform:uppercase;letter-spacing:.04em}\
.facts dd{margin:0;overflow-wrap:anywhere}\
.warn{color:#a01c2c}\
#task h2{margin-top:.4rem}p.task{white-space:pre-wrap;overflow-wrap:anywhere;font-size:1.05rem;margin:0 0 .8rem;padding:.5rem .7rem;border-left:4px solid var(--c0);background:var(--band)}\
figure{margin:0 0 1rem}figcaption{font-weight:600;margin-bottom:.3rem}.unit{font-weight:400;color:var(--mute)}\
svg{display:block;width:100%}svg.strip{height:3.2rem}svg.plot{height:11rem;border:1px solid var(--line);border-radius:4px}\
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,30rem),1fr));gap:1rem 1.5rem}\
.axis{display:flex;justify-content:space-between;gap:1rem;font-size:.78rem;color:var(--mute)}\
.legend{font-size:.85rem;margin:.3rem 0 0}.note{color:var(--mute);font-size:.8rem}\
.key{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;vertical-align:-.1rem;margin:0 .25rem 0 .4rem}\
.frame{fill:none}.grid{stroke:var(--line);stroke-width:1;vector-effect:non-scaling-stroke}\
.median{fill:none;stroke:currentColor;stroke-width:2;vector-effect:non-scaling-stroke;stroke-linejoin:round}\
.band{fill:currentColor;fill-opacity:.18;stroke:none}\
.mark{fill:#f3c96b;fill-opacity:.35}span.mark{background:#f3c96b}\
.lim0,.lim1,.lim2{stroke-width:1.5;stroke-dasharray:6 4;vector-effect:non-scaling-stroke}\
.lim0{stroke:#d97706}.lim1{stroke:#c81e1e}.lim2{stroke:#6b7280}\
span.lim0{background:#d97706}span.lim1{background:#c81e1e}span.lim2{background:#6b7280}\
g.c0,span.c0{color:var(--c0)}g.c1,span.c1{color:var(--c1)}g.c2,span.c2{color:var(--c2)}g.c3,span.c3{color:var(--c3)}\
span.c0,span.c1,span.c2,span.c3{background:currentColor}\
.o0{fill:var(--o0)}.o1{fill:var(--o1)}.o2{fill:var(--o2)}.o3{fill:var(--o3)}.o4{fill:var(--o4)}.o5{fill:var(--o5)}\
span.o0{background:var(--o0)}span.o1{background:var(--o1)}span.o2{background:var(--o2)}span.o3{background:var(--o3)}span.o4{background:var(--o4)}span.o5{background:var(--o5)}\
.s0{fill:#94a3b8}.s1{fill:#2b6cb0}.s2{fill:#0d9488}.s3{fill:#f3b63b}.s4{fill:#6b7280}\
span.s0{background:#94a3b8}span.s1{background:#2b6cb0}span.s2{background:#0d9488}span.s3{background:#f3b63b}span.s4{background:#6b7280}\
.tables{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,30rem),1fr));gap:0 1.5rem}\
.scroll{overflow-x:auto}.wide{grid-column:1/-1}td.mono{overflow-wrap:break-word}\
table{border-collapse:collapse;width:100%;font-size:.88rem}\
th,td{text-align:left;padding:.25rem .45rem;border-bottom:1px solid var(--line);vertical-align:top}\
th{font-weight:600;background:var(--band)}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
td.v{overflow-wrap:anywhere;min-width:10rem}td.t{font-variant-numeric:tabular-nums;min-width:6.5rem}.item{white-space:nowrap}\
.audit dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem .8rem;margin:0}.audit dt{color:var(--mute)}.audit dd{margin:0;min-width:0}\
footer{margin-top:2rem;font-size:.8rem;color:var(--mute)}\
@media (max-width:40rem){body{padding:.6rem;font-size:14px}\
table.stack,table.stack tbody,table.stack tr,table.stack td{display:block;width:100%}table.stack tr:first-child{display:none}\
table.stack tr{border-bottom:1px solid var(--line);padding:.3rem 0}\
table.stack td{border:0;padding:.05rem .2rem .05rem 6.6rem;text-align:left;min-width:0;position:relative}\
table.stack td::before{content:attr(data-label);position:absolute;left:.2rem;top:.2rem;color:var(--mute);font-size:.8rem}.audit dl{grid-template-columns:1fr}.audit dd{margin-bottom:.4rem}svg.plot{height:9rem}}\
@media print{body{max-width:none;font-size:11px}.scroll{overflow:visible}section,figure,tr{break-inside:avoid}\
svg.plot{height:8rem}*{-webkit-print-color-adjust:exact;print-color-adjust:exact}}\
";

/// The base64 of the SHA-256 of [`STYLE`], for the page's Content-Security-Policy.
fn style_digest() -> &'static str {
    static DIGEST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DIGEST.get_or_init(|| base64(&crate::sha256::Sha256::digest(STYLE.as_bytes())))
}

/// Standard base64 (RFC 4648 §4), with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (b(0) << 16) | (b(1) << 8) | b(2);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            let c = ALPHABET.get((n >> shift) as usize & 63).copied().unwrap_or(b'=');
            out.push(if i <= chunk.len() { c as char } else { '=' });
        }
    }
    out
}

impl Report {
    /// Writes the whole page.
    pub fn write(&self, p: &mut Page) {
        p.markup("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
        p.markup("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
        // Defence in depth: even a text that escaped escaping could run nothing and fetch nothing,
        // and no style but the page's own one applies (named by its SHA-256, as CSP allows).
        p.markup("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'sha256-");
        p.markup(style_digest());
        p.markup("'\">");
        p.markup("<meta name=\"referrer\" content=\"no-referrer\">");
        p.markup("<title>lkjagent report: ");
        p.text(&self.data.display().to_string());
        p.markup("</title><style>");
        p.markup(STYLE);
        p.markup("</style></head>\n<body>\n");
        self.header(p);
        self.cycles(p);
        self.charts(p);
        self.tables(p);
        self.audit(p);
        p.markup("<footer>Written by lkjagent ");
        p.text(env!("CARGO_PKG_VERSION"));
        p.fmt(format_args!(" at {}. ", Time(self.now)));
        p.markup("Read-only: nothing in the data directory was changed. This page runs no script and fetches nothing.</footer>\n</body></html>\n");
    }

    fn fact(p: &mut Page, name: &'static str, value: core::fmt::Arguments<'_>) {
        p.markup("<div><dt>");
        p.markup(name);
        p.markup("</dt><dd>");
        p.fmt(value);
        p.markup("</dd></div>");
    }

    fn header(&self, p: &mut Page) {
        let s = &self.summary;
        p.markup("<header><h1>lkjagent report</h1>");
        self.task(p);
        p.markup("<dl class=\"facts\">");
        Self::fact(p, "data directory", format_args!("{}", self.data.display()));
        let mut period = String::new();
        if let Some(n) = self.period.last {
            period.push_str(&format!("last {} cycles", Thousands(n)));
        }
        if let Some(t) = self.period.since {
            period.push_str(&format!("since {}", Time(t)));
        }
        if let Some(r) = &self.period.run {
            if !period.is_empty() {
                period.push_str(", ");
            }
            period.push_str(&format!("run {}", r));
        }
        if period.is_empty() {
            period.push_str("everything in the audit log");
        }
        Self::fact(p, "period", format_args!("{}", period));
        Self::fact(p, "cycles", format_args!("{}", Thousands(s.cycles)));
        Self::fact(p, "runs", format_args!("{}", Thousands(s.runs_total)));
        if s.cycles > 0 {
            Self::fact(
                p,
                "time span",
                format_args!(
                    "{} to {} ({})",
                    Time(s.first_time),
                    Time(s.last_time),
                    Span(s.last_time.saturating_sub(s.first_time))
                ),
            );
        } else {
            Self::fact(p, "time span", format_args!("no cycle in the period"));
        }
        let c = &self.config;
        if c.found {
            Self::fact(p, "model", format_args!("{} ({})", or_dash(&c.model), c.provider));
            Self::fact(p, "endpoint", format_args!("{}", or_dash(&c.endpoint)));
        } else {
            Self::fact(p, "model", format_args!("no readable config.json"));
        }
        let mut seen = String::new();
        for t in s.constrain.sorted() {
            if !seen.is_empty() {
                seen.push_str(", ");
            }
            seen.push_str(&format!("{} in {} cycles", t.name, Thousands(t.n)));
        }
        Self::fact(
            p,
            "constraint",
            format_args!(
                "configured {}; {}",
                or_dash(&c.constrain),
                if seen.is_empty() { "none recorded" } else { &seen }
            ),
        );
        match &self.memory {
            Some(m) => Self::fact(
                p,
                "state now",
                format_args!(
                    "{}, iteration {}, {} working-memory entries",
                    m.file.state.as_str(),
                    m.file.iteration,
                    m.file.working.len()
                ),
            ),
            None => Self::fact(p, "state now", format_args!("no memory.json: the agent starts fresh")),
        }
        let st = &self.store;
        if st.status == "ok" {
            Self::fact(
                p,
                "stored entries",
                format_args!(
                    "{} now ({} archived), {} new in the period",
                    Thousands(st.entries as u64),
                    st.archived,
                    Thousands(st.new_in_period as u64)
                ),
            );
        } else {
            Self::fact(p, "stored entries", format_args!("store {}", st.status));
        }
        let memory_error = self.memory.as_ref().and_then(|m| m.file.agent.get("last_error")).filter(|e| !e.is_empty());
        match (&s.last_error, memory_error) {
            (Some(e), _) => Self::fact(
                p,
                "last error",
                format_args!("{} at cycle {} ({}), run {}", e.code, e.cycle, Time(e.time), e.run),
            ),
            (None, Some(m)) => Self::fact(p, "last error", format_args!("none in the period; memory.json: {}", m)),
            (None, None) => Self::fact(p, "last error", format_args!("none in the period")),
        }
        if self.counts.damaged > 0 {
            p.markup("<div class=\"warn\"><dt>damaged audit lines</dt><dd>");
            p.fmt(format_args!(
                "{} (first: {})",
                Thousands(self.counts.damaged),
                self.counts.first_damaged.as_deref().unwrap_or("")
            ));
            p.markup("</dd></div>");
        }
        p.markup("</dl></header>\n");
    }

    fn cycles(&self, p: &mut Page) {
        p.markup("<section id=\"cycles\"><h2>Cycles</h2>");
        if self.summary.cycles == 0 {
            p.markup("<p>No cycle in the period");
            if self.files.is_empty() {
                p.markup(": there is no audit log yet (logs/audit.jsonl)");
            }
            p.markup(".</p></section>\n");
            return;
        }
        chart::strip(p, &self.summary);
        p.markup("</section>\n");
    }

    fn charts(&self, p: &mut Page) {
        let s = &self.summary;
        if s.cycles == 0 {
            return;
        }
        p.markup("<section id=\"charts\"><h2>Charts</h2><div class=\"charts\">");
        chart::chart(
            p,
            "Latency per cycle",
            "ms",
            &s.bins,
            &[ChartLine { points: &s.latency.points, class: "c0", label: "latency" }],
            &[],
            None,
        );
        let sent_label = if s.usage_reported == s.cycles {
            "sent (the server's count)"
        } else if s.usage_reported == 0 {
            "sent (the agent's estimate: the server reported no usage)"
        } else {
            "sent (the server's count, else the agent's estimate)"
        };
        let cached_label =
            if s.cached_reported == 0 { "from the server's cache (never reported)" } else { "from the server's cache" };
        let generated_label = if s.usage_reported == 0 { "generated (never reported)" } else { "generated" };
        chart::chart(
            p,
            "Prompt tokens: sent, cached, generated",
            "tokens",
            &s.bins,
            &[
                ChartLine { points: &s.sent.points, class: "c0", label: sent_label },
                ChartLine { points: &s.cached.points, class: "c1", label: cached_label },
                ChartLine { points: &s.generated.points, class: "c2", label: generated_label },
            ],
            &[],
            None,
        );
        let c = &self.config;
        let mut limits = Vec::new();
        if let Some(v) = c.paging_limit {
            limits.push(Limit { value: v, class: "lim0", label: "paging limit" });
        }
        if let Some(v) = c.hard_limit {
            limits.push(Limit { value: v, class: "lim1", label: "hard limit" });
        }
        if let Some(v) = c.context_window {
            limits.push(Limit { value: v, class: "lim2", label: "context window" });
        }
        // Shaded as deep as the share of the bin's cycles that paged (all of it for one cycle).
        let paging = |b: &summary::Bin| b.paging as f64 / b.cycles.max(1) as f64;
        let paging_label = format!("paging ({} cycles)", Thousands(s.paging_cycles));
        chart::chart(
            p,
            "Working memory: the prompt's size against the limits",
            "estimated tokens",
            &s.bins,
            &[ChartLine { points: &s.prompt_est.points, class: "c3", label: "prompt (estimate)" }],
            &limits,
            Some(chart::Marks { share: &paging, label: &paging_label }),
        );
        if self.store.status == "ok" {
            let label = "entries in the store now, by the time they were created";
            let line = ChartLine { points: &self.store.per_bin, class: "c1", label };
            chart::chart(p, "Store entries over time", "entries", &s.bins, &[line], &[], None);
        } else {
            p.markup("<figure class=\"chart\"><figcaption>Store entries over time</figcaption><p class=\"note\">");
            p.fmt(format_args!("No chart: store {}.", self.store.status));
            p.markup("</p></figure>");
        }
        p.markup("</div></section>\n");
    }

    /// What the agent was asked to do: working memory's `task`, as written.
    fn task(&self, p: &mut Page) {
        p.markup("<section id=\"task\"><h2>Task</h2>");
        let task = self.memory.as_ref().and_then(|m| {
            let key = crate::memory::key::normalize(TASK_KEY).ok()?;
            m.file.working.get(&key).map(str::to_string)
        });
        match task {
            Some(t) if !t.trim().is_empty() => {
                p.markup("<p class=\"task\">");
                p.text(&t);
                p.markup("</p>");
            }
            _ => p.markup("<p class=\"note\">No task in working memory (its key <code>task</code>).</p>"),
        }
        p.markup("</section>\n");
    }

    fn tables(&self, p: &mut Page) {
        let s = &self.summary;
        p.markup("<section id=\"tables\"><h2>Tables</h2><div class=\"tables\">");
        // The product apart from the agent's own logs and notes.
        entries_table(p, "product", "The task's product", self.product_tags.as_deref(), &self.store.product);
        entries_table(p, "own", "The agent's own logs and notes", None, &self.store.own);
        // Tags.
        p.markup("<div><h3>Most used tags</h3>");
        if self.store.tags.is_empty() {
            p.markup("<p>None.</p>");
        } else {
            p.markup("<table><tr><th>tag</th><th class=\"n\">entries</th></tr>");
            for (tag, n) in &self.store.tags {
                p.markup("<tr>");
                td(p, "mono", "tag");
                p.text_breakable(tag);
                next_td(p, "n", "entries");
                p.fmt(format_args!("{}", Thousands(*n)));
                p.markup("</td></tr>");
            }
            more_row(p, "2", self.store.tags_total, self.store.tags.len());
            p.markup("</table>");
        }
        p.markup("</div>");
        // Actions.
        p.markup("<div><h3>Actions by type</h3>");
        let actions = s.actions.sorted();
        if actions.is_empty() {
            p.markup("<p>None.</p>");
        } else {
            p.markup("<table class=\"stack\"><tr><th>type</th><th class=\"n\">count</th><th class=\"n\">worked</th><th class=\"n\">rate</th><th>first failure</th></tr>");
            for t in actions {
                p.markup("<tr>");
                td(p, "mono", "type");
                p.text_breakable(&t.name);
                next_td(p, "n", "count");
                p.fmt(format_args!("{}", Thousands(t.n)));
                next_td(p, "n", "worked");
                p.fmt(format_args!("{}", Thousands(t.ok)));
                next_td(p, "n", "rate");
                p.fmt(format_args!("{}", Percent(t.ok, t.n)));
                next_td(p, "v", "first failure");
                p.text(or_dash(&t.example));
                p.markup("</td></tr>");
            }
            p.markup("</table>");
        }
        p.markup("</div>");
        // Problems.
        p.markup("<div><h3>Problems by code</h3>");
        let problems = s.problems.sorted();
        if problems.is_empty() {
            p.markup("<p>None.</p>");
        } else {
            p.markup("<table class=\"stack\"><tr><th>code</th><th class=\"n\">count</th><th>first seen</th></tr>");
            for t in problems {
                p.markup("<tr>");
                td(p, "mono", "code");
                p.text_breakable(&t.name);
                next_td(p, "n", "count");
                p.fmt(format_args!("{}", Thousands(t.n)));
                next_td(p, "v", "first seen");
                p.text(&t.example);
                p.markup("</td></tr>");
            }
            p.markup("</table>");
        }
        p.markup("</div>");
        // Runs.
        p.markup("<div class=\"wide\"><h3>Runs</h3>");
        if s.runs.is_empty() {
            p.markup("<p>None.</p>");
        } else {
            p.markup("<table class=\"stack\"><tr><th>run</th><th>start</th><th>end</th><th class=\"n\">cycles</th><th class=\"n\">errors</th><th>last cycle</th></tr>");
            for r in s.runs.iter().rev() {
                p.markup("<tr>");
                td(p, "mono", "run");
                p.text(&r.id);
                next_td(p, "t", "start");
                p.fmt(format_args!("{}", ShortTime(r.start)));
                next_td(p, "t", "end");
                p.fmt(format_args!("{}", ShortTime(r.end)));
                next_td(p, "n", "cycles");
                p.fmt(format_args!("{} ({} to {})", Thousands(r.cycles), r.first_cycle, r.last_cycle));
                next_td(p, "n", "errors");
                p.fmt(format_args!("{}", Thousands(r.errors)));
                next_td(p, "", "last cycle");
                match &r.last_error {
                    Some(code) => p.element("<code>", code, "</code>"),
                    None => p.markup("ok"),
                }
                p.markup("</td></tr>");
            }
            more_row(p, "6", s.runs_total as usize, s.runs.len());
            p.markup("</table>");
        }
        p.markup("</div></div></section>\n");
    }

    fn audit(&self, p: &mut Page) {
        let s = &self.summary;
        p.markup("<section id=\"audit\" class=\"audit\"><h2>Audit</h2><dl>");
        p.markup("<dt>run ids</dt><dd class=\"mono\">");
        for (i, r) in s.runs.iter().enumerate() {
            if i > 0 {
                p.markup(", ");
            }
            p.text(&r.id);
        }
        if s.runs.is_empty() {
            p.markup("none");
        } else if (s.runs.len() as u64) < s.runs_total {
            p.fmt(format_args!(" (the newest {} of {})", s.runs.len(), s.runs_total));
        }
        p.markup("</dd><dt>first prompt SHA-256</dt><dd class=\"mono\">");
        p.text(or_dash(&s.first_sha));
        p.markup("</dd><dt>last prompt SHA-256</dt><dd class=\"mono\">");
        p.text(or_dash(&s.last_sha));
        p.markup("</dd><dt>parser version</dt><dd>");
        p.fmt(format_args!("lkjagent {} (reply parser and audit reader of this build)", env!("CARGO_PKG_VERSION")));
        p.markup("</dd><dt>loops</dt><dd>");
        p.fmt(format_args!("{} cycles", Thousands(s.cycles)));
        for ((_, _, label), n) in summary::OUTCOMES.iter().zip(s.outcomes.iter()) {
            p.fmt(format_args!("; {} {}", Thousands(*n), label));
        }
        p.markup("</dd><dt>operations</dt><dd>");
        let total: u64 = s.actions.sorted().iter().map(|t| t.n).sum();
        let ok: u64 = s.actions.sorted().iter().map(|t| t.ok).sum();
        p.fmt(format_args!("{} actions, {} worked", Thousands(total), Thousands(ok)));
        for t in s.actions.sorted() {
            p.fmt(format_args!("; {} {}", t.name, Thousands(t.n)));
        }
        p.markup("</dd><dt>states</dt><dd>");
        for (i, t) in s.states.sorted().iter().enumerate() {
            p.fmt(format_args!("{}{} {}", if i > 0 { "; " } else { "" }, t.name, Thousands(t.n)));
        }
        p.markup("</dd><dt>error codes</dt><dd>");
        let codes = s.problems.sorted();
        if codes.is_empty() {
            p.markup("none");
        }
        for (i, t) in codes.iter().enumerate() {
            p.fmt(format_args!("{}{} {}", if i > 0 { "; " } else { "" }, t.name, Thousands(t.n)));
        }
        p.markup("</dd><dt>audit log read</dt><dd>");
        if self.files.is_empty() {
            p.markup("no audit log (logs/audit.jsonl)");
        }
        for (i, f) in self.files.iter().enumerate() {
            p.fmt(format_args!("{}{}", if i > 0 { ", " } else { "" }, f.display()));
        }
        p.fmt(format_args!(
            "; {} bytes, {} records, {} outside the period",
            Thousands(self.counts.bytes),
            Thousands(self.counts.records),
            Thousands(self.outside)
        ));
        p.markup("</dd><dt>damaged lines</dt><dd>");
        p.fmt(format_args!("{}", Thousands(self.counts.damaged)));
        if let Some(first) = &self.counts.first_damaged {
            p.fmt(format_args!(" (first: {})", first));
        }
        if self.counts.unfinished > 0 {
            p.markup("; a last line still being written (not read)");
        }
        if self.config.problems > 0 {
            p.markup("</dd><dt>config.json</dt><dd class=\"warn\">");
            p.fmt(format_args!("{} problem(s); 'lkjagent check' lists them", self.config.problems));
        }
        p.markup("</dd></dl></section>\n");
    }
}

/// Opens a table cell: `<td class="class" data-label="label">` (the label heads the cell when
/// a narrow screen stacks the table's rows).
fn td(p: &mut Page, class: &'static str, label: &'static str) {
    p.markup("<td class=\"");
    p.markup(class);
    p.markup("\" data-label=\"");
    p.markup(label);
    p.markup("\">");
}

/// Closes the open cell and opens the next.
fn next_td(p: &mut Page, class: &'static str, label: &'static str) {
    p.markup("</td>");
    td(p, class, label);
}

/// A closing row saying how many rows were left out (it spans the table's `columns`).
/// The working-memory key of the task.
const TASK_KEY: &str = "task";

/// A table of the newest entries of one kind in the period, headed by its counts.
fn entries_table(p: &mut Page, id: &'static str, title: &'static str, tags: Option<&str>, e: &super::sources::Entries) {
    p.markup("<div id=\"");
    p.markup(id);
    p.markup("\"><h3>");
    p.markup(title);
    if let Some(t) = tags {
        p.markup(" (tags <code>");
        p.text(t);
        p.markup("</code>)");
    }
    p.fmt(format_args!(": {} entries, {} new in the period", Thousands(e.now as u64), Thousands(e.in_period as u64)));
    p.markup("</h3>");
    if e.newest.is_empty() {
        p.markup("<p>None in the period.</p>");
    } else {
        p.markup("<table class=\"stack\"><tr><th>key</th><th>created</th><th>value (first words)</th></tr>");
        for (key, created, value) in &e.newest {
            p.markup("<tr>");
            td(p, "mono", "key");
            p.text_breakable(key);
            next_td(p, "t", "created");
            p.fmt(format_args!("{}", ShortTime(*created)));
            next_td(p, "v", "value");
            p.text(value);
            p.markup("</td></tr>");
        }
        more_row(p, "3", e.in_period, e.newest.len());
        p.markup("</table>");
    }
    p.markup("</div>");
}

fn more_row(p: &mut Page, columns: &'static str, total: usize, shown: usize) {
    if total > shown {
        p.markup("<tr><td colspan=\"");
        p.markup(columns);
        p.markup("\" class=\"note\">");
        p.fmt(format_args!("and {} more", Thousands((total - shown) as u64)));
        p.markup("</td></tr>");
    }
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() {
        "-"
    } else {
        s
    }
}

/// `ok` of `n` as a percentage, `-` for none.
struct Percent(u64, u64);

impl core::fmt::Display for Percent {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.1 == 0 {
            return f.write_str("-");
        }
        write!(f, "{:.0}%", self.0 as f64 * 100.0 / self.1 as f64)
    }
}

/// A duration in seconds, as `3d 4h`, `2h 5m`, `4m 10s` or `12s`.
struct Span(u64);

impl core::fmt::Display for Span {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let s = self.0;
        match s {
            0..60 => write!(f, "{}s", s),
            60..3_600 => write!(f, "{}m {}s", s / 60, s % 60),
            3_600..86_400 => write!(f, "{}h {}m", s / 3_600, s % 3_600 / 60),
            _ => write!(f, "{}d {}h", s / 86_400, s % 86_400 / 3_600),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_as_rfc_4648_says() {
        // RFC 4648 §10 test vectors.
        for (plain, coded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(super::base64(plain.as_bytes()), coded);
        }
        // A SHA-256 is 44 characters with one pad.
        assert_eq!(super::style_digest().len(), 44);
        assert!(super::style_digest().ends_with('='));
    }

    use super::*;

    #[test]
    fn spans_and_percents() {
        assert_eq!(Span(0).to_string(), "0s");
        assert_eq!(Span(3_725).to_string(), "1h 2m");
        assert_eq!(Span(90_000).to_string(), "1d 1h");
        assert_eq!(Percent(1, 3).to_string(), "33%");
        assert_eq!(Percent(0, 0).to_string(), "-");
    }
}
