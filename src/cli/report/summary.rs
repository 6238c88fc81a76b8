//! What `lkjagent report` shows of the audit log, gathered in one pass over the period's lines
//! in bounded memory: totals, the outcome of each cycle ([`Outcome`]) for the cycle strip,
//! binned series for the charts ([`Series`]), tallies of actions, problems, states and
//! constraint modes ([`Tallies`]), and the runs.
//!
//! The number of cycles in the period is known before this pass (a first pass counts them), so
//! the bins are fixed from the start: `ceil(cycles / REPORT_CHART_MAX_POINTS)` consecutive
//! cycles per chart point, `ceil(cycles / REPORT_STRIP_MAX_MARKS)` per strip mark. A point keeps
//! the minimum, median and maximum of its cycles, so a spike in a long run still shows.

use super::scan::Line;
use crate::limits::{
    REPORT_BIN_SAMPLE_MAX, REPORT_CELL_CHARS, REPORT_CHART_MAX_POINTS, REPORT_MAX_KINDS, REPORT_STRIP_MAX_MARKS,
    REPORT_TABLE_ROWS,
};
use std::collections::VecDeque;

/// How a cycle ended, as the strip colours it. The order is the stacking order of a mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A valid reply whose actions all worked.
    Worked = 0,
    /// A valid reply without an action.
    NoAction = 1,
    /// An action failed.
    ActionFailed = 2,
    /// An action identical to the previous cycle's, refused.
    Refused = 3,
    /// The reply held no usable instruction.
    Invalid = 4,
    /// The cycle failed (the request, or what followed it): it carries an error code.
    Failed = 5,
}

/// The outcomes in order: CSS class and label.
pub const OUTCOMES: [(Outcome, &str, &str); 6] = [
    (Outcome::Worked, "o0", "action worked"),
    (Outcome::NoAction, "o1", "valid, no action"),
    (Outcome::ActionFailed, "o2", "action failed"),
    (Outcome::Refused, "o3", "refused repeat"),
    (Outcome::Invalid, "o4", "invalid reply"),
    (Outcome::Failed, "o5", "request failed"),
];

/// The start of the result the agent logs for a refused repeat (`agent::actions`).
const REFUSED_PREFIX: &str = "refused: identical";

/// The outcome of one cycle.
pub fn outcome(l: &Line<'_>) -> Outcome {
    if l.error.is_some() {
        return Outcome::Failed;
    }
    if !l.valid {
        return Outcome::Invalid;
    }
    let mut any = false;
    let mut refused = false;
    let mut failed = false;
    for a in l.actions() {
        any = true;
        if !a.ok {
            if a.result.starts_with(REFUSED_PREFIX) {
                refused = true;
            } else {
                failed = true;
            }
        }
    }
    match (any, failed, refused) {
        (false, _, _) => Outcome::NoAction,
        (true, true, _) => Outcome::ActionFailed,
        (true, false, true) => Outcome::Refused,
        (true, false, false) => Outcome::Worked,
    }
}

/// The states the strip tells apart (CSS class, name); the last is every other name.
pub const STATES: [(&str, &str); 5] =
    [("s0", "thinking"), ("s1", "commanding"), ("s2", "evaluating"), ("s3", "paging"), ("s4", "other")];

fn state_index(state: &str) -> usize {
    match state {
        "thinking" => 0,
        "commanding" | "executing" => 1,
        "evaluating" => 2,
        "paging" => 3,
        _ => 4,
    }
}

/// One chart point: the minimum, median and maximum of its cycles' values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    pub min: u64,
    pub med: u64,
    pub max: u64,
}

/// A binned series: one point per bin, `None` for a bin where no cycle had a value.
#[derive(Debug)]
pub struct Series {
    pub points: Vec<Option<Point>>,
    sample: Vec<u64>,
    /// Every `stride`-th value of a bin goes into its sample.
    stride: u64,
    seen: u64,
    min: u64,
    max: u64,
}

impl Series {
    fn new(bin_width: u64) -> Series {
        let stride = bin_width.div_ceil(REPORT_BIN_SAMPLE_MAX as u64).max(1);
        let keep = bin_width.div_ceil(stride).min(REPORT_BIN_SAMPLE_MAX as u64) as usize;
        Series {
            points: Vec::with_capacity(REPORT_CHART_MAX_POINTS),
            sample: Vec::with_capacity(keep),
            stride,
            seen: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    fn push(&mut self, v: Option<u64>) {
        let Some(v) = v else { return };
        if self.seen.is_multiple_of(self.stride) && self.sample.len() < REPORT_BIN_SAMPLE_MAX {
            self.sample.push(v);
        }
        self.seen += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    fn close(&mut self) {
        let point = if self.seen == 0 {
            None
        } else {
            crate::sort::sort(&mut self.sample);
            let n = self.sample.len();
            let med = match (self.sample.get(n.saturating_sub(1) / 2), self.sample.get(n / 2)) {
                (Some(a), Some(b)) => a / 2 + b / 2 + (a % 2 + b % 2) / 2,
                _ => self.min,
            };
            Some(Point { min: self.min, med, max: self.max })
        };
        self.points.push(point);
        self.sample.clear();
        self.seen = 0;
        self.min = u64::MAX;
        self.max = 0;
    }

    /// The largest value of the series (0 when empty).
    pub fn peak(&self) -> u64 {
        self.points.iter().flatten().map(|p| p.max).max().unwrap_or(0)
    }
}

/// What a chart point stands for.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bin {
    pub first_cycle: u64,
    pub last_cycle: u64,
    pub first_time: u64,
    pub last_time: u64,
    pub cycles: u64,
    /// Cycles of the bin that ran in the `paging` state.
    pub paging: u64,
}

/// One mark of the cycle strip.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mark {
    pub outcomes: [u32; 6],
    pub states: [u32; 5],
    pub first_cycle: u64,
    pub last_cycle: u64,
    pub cycles: u32,
}

impl Mark {
    /// The state most of the mark's cycles were in.
    pub fn state(&self) -> usize {
        let mut best = 0;
        for (i, n) in self.states.iter().enumerate() {
            if *n > self.states.get(best).copied().unwrap_or(0) {
                best = i;
            }
        }
        best
    }
}

/// A counted name (an action type, a problem code, a state), with its successes and one
/// example.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub name: String,
    pub n: u64,
    pub ok: u64,
    pub example: String,
    /// Run and cycle of the example.
    pub at: (String, u64),
}

/// Tallies of at most [`REPORT_MAX_KINDS`] names; further names go into `other`.
#[derive(Debug, Default)]
pub struct Tallies {
    pub rows: Vec<Tally>,
    pub other: Tally,
}

impl Tallies {
    fn add(&mut self, name: &str, ok: bool, at: (&str, u64), example: &dyn Fn() -> String) {
        // A name from a foreign line can be long: it is kept (and told apart) clipped.
        let clipped;
        let name = if name.len() > REPORT_CELL_CHARS {
            clipped = clip(name, REPORT_CELL_CHARS);
            clipped.as_str()
        } else {
            name
        };
        let row = match self.rows.iter().position(|t| t.name == name) {
            Some(i) => self.rows.get_mut(i),
            None if self.rows.len() < REPORT_MAX_KINDS => {
                self.rows.push(Tally { name: name.to_string(), ..Tally::default() });
                self.rows.last_mut()
            }
            None => None,
        };
        let row = match row {
            Some(r) => r,
            None => {
                if self.other.name.is_empty() {
                    self.other.name = "other".to_string();
                }
                &mut self.other
            }
        };
        row.n += 1;
        row.ok += u64::from(ok);
        if !ok && row.example.is_empty() {
            row.example = example();
            row.at = (clip(at.0, REPORT_CELL_CHARS), at.1);
        }
    }

    /// The rows, most counted first (ties by name), `other` last when it counted anything.
    pub fn sorted(&self) -> Vec<&Tally> {
        // At most REPORT_MAX_KINDS rows: an insertion, not a generic sort's code.
        let mut rows: Vec<&Tally> = Vec::with_capacity(self.rows.len() + 1);
        for t in &self.rows {
            let at = rows.iter().position(|r| t.n > r.n || t.n == r.n && t.name < r.name).unwrap_or(rows.len());
            rows.insert(at, t);
        }
        if self.other.n > 0 {
            rows.push(&self.other);
        }
        rows
    }
}

/// One run in the period.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Run {
    pub id: String,
    pub start: u64,
    pub end: u64,
    pub cycles: u64,
    pub first_cycle: u64,
    pub last_cycle: u64,
    /// Cycles that carried an error code.
    pub errors: u64,
    /// The error code of the run's last cycle, if it had one.
    pub last_error: Option<String>,
}

/// The error code of the period's last failed cycle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LastError {
    pub code: String,
    pub cycle: u64,
    pub time: u64,
    pub run: String,
}

/// Everything the report shows of the audit log in its period.
pub struct Summary {
    /// Cycles expected (the first pass's count) and seen.
    expected: u64,
    pub cycles: u64,
    pub first_time: u64,
    pub last_time: u64,
    pub outcomes: [u64; 6],
    pub first_sha: String,
    pub last_sha: String,
    /// The newest [`REPORT_TABLE_ROWS`] runs, oldest first; `runs_total` counts them all.
    pub runs: VecDeque<Run>,
    pub runs_total: u64,
    /// The current run's id, whole (at most an audit line's length), to tell the next apart.
    run: String,
    pub strip: Vec<Mark>,
    pub strip_width: u64,
    pub bins: Vec<Bin>,
    pub bin_width: u64,
    pub latency: Series,
    /// Prompt tokens sent (the server's count, else the agent's estimate).
    pub sent: Series,
    pub cached: Series,
    pub generated: Series,
    /// The agent's estimate of the prompt's tokens (working memory and all).
    pub prompt_est: Series,
    pub actions: Tallies,
    pub problems: Tallies,
    pub states: Tallies,
    pub constrain: Tallies,
    pub last_error: Option<LastError>,
    pub paging_cycles: u64,
    /// Cycles whose usage the server reported / whose cached tokens it reported.
    pub usage_reported: u64,
    pub cached_reported: u64,
}

impl Summary {
    /// A summary for a period of `expected` cycles.
    pub fn new(expected: u64) -> Summary {
        let bin_width = expected.div_ceil(REPORT_CHART_MAX_POINTS as u64).max(1);
        let strip_width = expected.div_ceil(REPORT_STRIP_MAX_MARKS as u64).max(1);
        Summary {
            expected,
            cycles: 0,
            first_time: 0,
            last_time: 0,
            outcomes: [0; 6],
            first_sha: String::new(),
            last_sha: String::new(),
            runs: VecDeque::new(),
            runs_total: 0,
            run: String::new(),
            strip: Vec::with_capacity(REPORT_STRIP_MAX_MARKS),
            strip_width,
            bins: Vec::with_capacity(REPORT_CHART_MAX_POINTS),
            bin_width,
            latency: Series::new(bin_width),
            sent: Series::new(bin_width),
            cached: Series::new(bin_width),
            generated: Series::new(bin_width),
            prompt_est: Series::new(bin_width),
            actions: Tallies::default(),
            problems: Tallies::default(),
            states: Tallies::default(),
            constrain: Tallies::default(),
            last_error: None,
            paging_cycles: 0,
            usage_reported: 0,
            cached_reported: 0,
        }
    }

    /// Adds the period's next cycle. A cycle past the expected count (the log grew between the
    /// passes) is left for the next report.
    pub fn add(&mut self, l: &Line<'_>) {
        if self.cycles >= self.expected {
            return;
        }
        let idx = self.cycles;
        self.cycles += 1;
        if idx == 0 {
            self.first_time = l.time;
        }
        self.last_time = l.time;
        if !l.prompt_sha256.is_empty() {
            // Texts kept from a line are clipped: a foreign line may hold anything.
            if l.prompt_sha256.len() > REPORT_CELL_CHARS {
                self.last_sha = clip(l.prompt_sha256, REPORT_CELL_CHARS);
            } else {
                l.prompt_sha256.clone_into(&mut self.last_sha);
            }
            if self.first_sha.is_empty() {
                self.first_sha.clone_from(&self.last_sha);
            }
        }
        let outcome = outcome(l);
        if let Some(n) = self.outcomes.get_mut(outcome as usize) {
            *n += 1;
        }
        self.add_run(l);
        self.add_mark(idx, l, outcome);
        self.add_point(idx, l);
        let example = || example_of(l, "");
        let at = (l.run, l.cycle);
        for a in l.actions() {
            self.actions.add(a.kind, a.ok, at, &|| example_of(l, a.result));
        }
        for p in l.problems() {
            self.problems.add(p, false, at, &example);
        }
        if let Some(code) = l.error {
            self.problems.add(code, false, at, &example);
            self.last_error = Some(LastError {
                code: clip(code, REPORT_CELL_CHARS),
                cycle: l.cycle,
                time: l.time,
                run: clip(l.run, REPORT_CELL_CHARS),
            });
        }
        if !l.state.is_empty() {
            self.states.add(l.state, true, at, &String::new);
        }
        if !l.constrain.is_empty() {
            self.constrain.add(l.constrain, true, at, &String::new);
        }
        if l.state == "paging" {
            self.paging_cycles += 1;
        }
        self.usage_reported += u64::from(l.usage.is_some());
        self.cached_reported += u64::from(l.cached_tokens.is_some());
    }

    fn add_run(&mut self, l: &Line<'_>) {
        if self.runs.is_empty() || self.run != l.run {
            l.run.clone_into(&mut self.run);
            self.runs_total += 1;
            if self.runs.len() >= REPORT_TABLE_ROWS {
                self.runs.pop_front();
            }
            let id = clip(l.run, REPORT_CELL_CHARS);
            self.runs.push_back(Run { id, start: l.time, first_cycle: l.cycle, ..Run::default() });
        }
        if let Some(r) = self.runs.back_mut() {
            r.end = l.time;
            r.cycles += 1;
            r.last_cycle = l.cycle;
            r.errors += u64::from(l.error.is_some());
            r.last_error = l.error.map(|e| clip(e, REPORT_CELL_CHARS));
        }
    }

    fn add_mark(&mut self, idx: u64, l: &Line<'_>, outcome: Outcome) {
        if idx.is_multiple_of(self.strip_width) {
            self.strip.push(Mark { first_cycle: l.cycle, ..Mark::default() });
        }
        if let Some(m) = self.strip.last_mut() {
            m.last_cycle = l.cycle;
            m.cycles = m.cycles.saturating_add(1);
            if let Some(n) = m.outcomes.get_mut(outcome as usize) {
                *n = n.saturating_add(1);
            }
            if let Some(n) = m.states.get_mut(state_index(l.state)) {
                *n = n.saturating_add(1);
            }
        }
    }

    fn add_point(&mut self, idx: u64, l: &Line<'_>) {
        if idx.is_multiple_of(self.bin_width) {
            if idx > 0 {
                self.close_series();
            }
            self.bins.push(Bin { first_cycle: l.cycle, first_time: l.time, ..Bin::default() });
        }
        if let Some(b) = self.bins.last_mut() {
            b.last_cycle = l.cycle;
            b.last_time = l.time;
            b.cycles += 1;
            b.paging += u64::from(l.state == "paging");
        }
        self.latency.push(l.latency_ms);
        self.sent.push(l.usage.map(|u| u.0).or(l.prompt_tokens_est));
        self.cached.push(l.cached_tokens);
        self.generated.push(l.usage.map(|u| u.1));
        self.prompt_est.push(l.prompt_tokens_est);
    }

    fn close_series(&mut self) {
        for s in [&mut self.latency, &mut self.sent, &mut self.cached, &mut self.generated, &mut self.prompt_est] {
            s.close();
        }
    }

    /// Closes the last bin; call once after the last [`Summary::add`].
    pub fn finish(&mut self) {
        if self.cycles > 0 {
            self.close_series();
        }
    }
}

/// Where a tally's first failure happened, and what the agent said then.
fn example_of(l: &Line<'_>, said: &str) -> String {
    let mut s = format!("cycle {} of run {}", l.cycle, l.run);
    if !l.state.is_empty() {
        s.push_str(", ");
        s.push_str(l.state);
    }
    if !said.is_empty() {
        s.push_str(": ");
        s.push_str(said);
    }
    clip(&s, REPORT_CELL_CHARS)
}

/// At most `chars` characters of `s`, ending in `…` when cut.
pub fn clip(s: &str, chars: usize) -> String {
    match s.char_indices().nth(chars) {
        None => s.to_string(),
        Some((at, _)) => {
            let mut out = s.get(..at).unwrap_or("").trim_end().to_string();
            out.push('…');
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::report::scan::Scanner;

    fn line(cycle: u64, extra: &str) -> String {
        format!(
            "{{\"time\":{},\"run\":\"r{}\",\"cycle\":{},\"state\":\"thinking\",\"latency_ms\":{}{}}}\n",
            100 + cycle,
            cycle / 1000,
            cycle,
            cycle,
            extra
        )
    }

    fn summarise(text: &str, expected: u64) -> Summary {
        let dir = crate::testing::temp_dir("report-summary");
        std::fs::create_dir_all(dir.join("logs")).unwrap();
        std::fs::write(dir.join("logs/audit.jsonl"), text).unwrap();
        let mut s = Summary::new(expected);
        Scanner::new().scan(&super::super::scan::audit_files(&dir), &mut |l| s.add(l)).unwrap();
        s.finish();
        std::fs::remove_dir_all(&dir).unwrap();
        s
    }

    #[test]
    fn outcomes_of_cycles() {
        let text = [
            line(1, r#","valid":true,"actions":[{"type":"storage_save","ok":true,"result":"saved"}]"#),
            line(2, r#","valid":true,"actions":[]"#),
            line(3, r#","valid":true,"actions":[{"type":"storage_load","ok":false,"result":"not found"}]"#),
            line(4, r#","valid":true,"actions":[{"type":"storage_save","ok":false,"result":"refused: identical to the previous action; do something else"}]"#),
            line(5, r#","valid":false,"problems":["NO_TAGS"]"#),
            line(6, r#","valid":true,"error":"LLM_TIMEOUT""#),
        ]
        .concat();
        let s = summarise(&text, 6);
        assert_eq!(s.outcomes, [1, 1, 1, 1, 1, 1]);
        assert_eq!(s.strip.len(), 6);
        let save = s.actions.rows.iter().find(|t| t.name == "storage_save").unwrap();
        assert_eq!((save.n, save.ok), (2, 1));
        assert!(save.example.contains("cycle 4 of run r0") && save.example.contains("refused"), "{}", save.example);
        let codes: Vec<_> = s.problems.sorted().iter().map(|t| (t.name.clone(), t.n)).collect();
        assert_eq!(codes, [("LLM_TIMEOUT".to_string(), 1), ("NO_TAGS".to_string(), 1)]);
        assert_eq!(s.last_error.as_ref().map(|e| e.cycle), Some(6));
        assert_eq!(s.latency.points.len(), 6);
        assert_eq!(s.latency.points[2], Some(Point { min: 3, med: 3, max: 3 }));
    }

    #[test]
    fn a_long_period_is_binned_with_min_median_max() {
        let n = 10 * REPORT_CHART_MAX_POINTS as u64;
        let text: String = (1..=n).map(|c| line(c, "")).collect();
        let s = summarise(&text, n);
        assert_eq!(s.bin_width, 10);
        assert_eq!(s.bins.len(), REPORT_CHART_MAX_POINTS);
        assert_eq!(s.latency.points.len(), REPORT_CHART_MAX_POINTS);
        // Bin 0 holds cycles 1..=10, latency = cycle.
        assert_eq!(s.latency.points[0], Some(Point { min: 1, med: 5, max: 10 }));
        assert_eq!(s.bins[0].first_cycle, 1);
        assert_eq!(s.bins[0].last_cycle, 10);
        assert!(s.strip.len() <= REPORT_STRIP_MAX_MARKS);
        assert_eq!(s.strip.iter().map(|m| u64::from(m.cycles)).sum::<u64>(), n);
        assert_eq!(s.runs_total, 5);
        assert_eq!(s.runs.back().map(|r| r.cycles), Some(1));
        assert_eq!(s.cached.points[0], None);
    }

    #[test]
    fn tallies_keep_a_bounded_number_of_names() {
        let mut t = Tallies::default();
        for i in 0..REPORT_MAX_KINDS + 5 {
            t.add(&format!("k{i}"), false, ("r", i as u64), &|| format!("e{i}"));
        }
        assert_eq!(t.rows.len(), REPORT_MAX_KINDS);
        assert_eq!((t.other.n, t.other.example.as_str(), t.other.at.1), (5, "e64", 64));
        assert_eq!(t.sorted().last().map(|r| r.name.as_str()), Some("other"));
    }

    #[test]
    fn clip_cuts_at_characters() {
        assert_eq!(clip("héllo", 10), "héllo");
        assert_eq!(clip("héllo wörld", 6), "héllo…");
    }
}
