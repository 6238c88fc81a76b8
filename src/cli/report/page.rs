//! The page of `lkjagent report`: its head, and its sections in order (header, cycles, charts,
//! tables, audit), written into a [`Page`] from what the other rooms gathered. The stylesheet
//! is `style`'s, the task and the tables are `tables`'. Every text goes through the page's
//! escaping; every tag here is a literal.

use super::chart::{self, Limit, Line as ChartLine, Thousands};
use super::scan::{Counts, Period};
use super::sources::{ConfigPart, StorePart};
use super::style::{style_digest, STYLE};
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

/// The text, or `-` for an empty one.
pub(super) fn or_dash(s: &str) -> &str {
    if s.is_empty() {
        "-"
    } else {
        s
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
    use super::*;

    #[test]
    fn spans() {
        assert_eq!(Span(0).to_string(), "0s");
        assert_eq!(Span(3_725).to_string(), "1h 2m");
        assert_eq!(Span(90_000).to_string(), "1d 1h");
    }
}
