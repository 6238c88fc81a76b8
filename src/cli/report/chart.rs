//! The report's drawings, as inline SVG: the cycle strip ([`strip`]) and the line charts
//! ([`chart`]), each with its labels and legend in HTML around it (the drawing stretches to the
//! page's width; text in it would be squashed on a phone).
//!
//! A chart point is a bin of consecutive cycles ([`super::summary`]): its median is the line,
//! and where bins hold more than one cycle a light band spans their minimum to maximum.
//! Limits are dashed horizontal lines; marked bins (paging) are shaded columns.

use super::summary::{Bin, Point, Summary, OUTCOMES, STATES};
use crate::html::Page;

/// The drawing's coordinate box (stretched to the page).
const W: f64 = 1000.0;
const H: f64 = 200.0;

/// One line of a chart.
pub struct Line<'a> {
    pub points: &'a [Option<Point>],
    /// CSS class of its colour (`c0`..`c3`).
    pub class: &'static str,
    pub label: &'a str,
}

/// A horizontal limit drawn across a chart.
pub struct Limit<'a> {
    pub value: u64,
    pub class: &'static str,
    pub label: &'a str,
}

/// Bins shaded on a chart: the share of each bin's cycles to shade (0 to 1), and the legend's
/// name for them.
pub struct Marks<'a> {
    pub share: &'a dyn Fn(&Bin) -> f64,
    pub label: &'a str,
}

/// A line chart of `lines` over `bins`, with `limits`, and the bins `marked` gives a share
/// above 0 shaded from the top, as deep as that share of their cycles (its label names them in
/// the legend).
pub fn chart(
    page: &mut Page,
    title: &str,
    unit: &str,
    bins: &[Bin],
    lines: &[Line<'_>],
    limits: &[Limit<'_>],
    marked: Option<Marks<'_>>,
) {
    let n = bins.len();
    let peak = lines.iter().flat_map(|l| l.points.iter().flatten()).map(|p| p.max).max().unwrap_or(0);
    let top = limits.iter().map(|l| l.value).fold(peak, u64::max).max(1);
    let y_max = top as f64 * 1.05;
    let x = |i: usize| if n <= 1 { W / 2.0 } else { i as f64 * W / (n - 1) as f64 };
    let y = |v: u64| H - v as f64 / y_max * H;
    page.markup("<figure class=\"chart\"><figcaption>");
    page.text(title);
    page.markup(" <span class=\"unit\">(");
    page.fmt(format_args!("{}, 0 to {}", unit, Thousands(top)));
    page.markup(")</span></figcaption>");
    page.svg_open("plot", W as u32, H as u32, title);
    page.rect("frame", 0.0, 0.0, W, H, None);
    if let Some(m) = &marked {
        let col = if n <= 1 { W } else { W / (n - 1) as f64 };
        for (i, b) in bins.iter().enumerate() {
            let share = (m.share)(b);
            if share > 0.0 {
                let left = (x(i) - col / 2.0).max(0.0);
                page.rect("mark", left, 0.0, col.max(2.0), H * share.clamp(0.05, 1.0), None);
            }
        }
    }
    for frac in [0.25, 0.5, 0.75] {
        let gy = H - frac * top as f64 / y_max * H;
        page.line("grid", (0.0, gy), (W, gy));
    }
    for l in limits {
        page.line(l.class, (0.0, y(l.value)), (W, y(l.value)));
    }
    for line in lines {
        let binned = bins.iter().any(|b| b.cycles > 1);
        for run in runs(line.points) {
            let (from, pts) = run;
            if binned {
                let upper = pts.iter().enumerate().map(|(j, p)| (x(from + j), y(p.max)));
                let lower = pts.iter().enumerate().rev().map(|(j, p)| (x(from + j), y(p.min)));
                page.markup("<g class=\"");
                page.markup(line.class);
                page.markup("\">");
                page.polygon("band", upper.chain(lower));
                page.markup("</g>");
            }
            page.markup("<g class=\"");
            page.markup(line.class);
            page.markup("\">");
            if pts.len() == 1 {
                let v = pts.first().map_or(0, |p| p.med);
                let cx = x(from);
                page.polyline("median", [((cx - 6.0).max(0.0), y(v)), ((cx + 6.0).min(W), y(v))].into_iter());
            } else {
                page.polyline("median", pts.iter().enumerate().map(|(j, p)| (x(from + j), y(p.med))));
            }
            page.markup("</g>");
        }
    }
    page.svg_close();
    axis(page, bins);
    page.markup("<p class=\"legend\">");
    for l in lines {
        key(page, l.class, format_args!("{}", l.label));
    }
    for l in limits {
        key(page, l.class, format_args!("{} {}", l.label, Thousands(l.value)));
    }
    if let Some(m) = &marked {
        key(page, "mark", format_args!("{}", m.label));
    }
    if bins.iter().any(|b| b.cycles > 1) {
        page.markup("<br><span class=\"note\">");
        let width = bins.first().map_or(1, |b| b.cycles);
        page.fmt(format_args!(
            "{} cycles per point: the line is their median, the band their minimum to maximum",
            width
        ));
        page.markup("</span>");
    }
    page.markup("</p></figure>\n");
}

/// One legend entry: a swatch of colour `class` and its label, kept on one line.
fn key(page: &mut Page, class: &'static str, label: core::fmt::Arguments<'_>) {
    page.markup("<span class=\"item\"><span class=\"key ");
    page.markup(class);
    page.markup("\"></span>");
    page.fmt(label);
    page.markup("</span> ");
}

/// The first and last cycle (and time) under a drawing.
fn axis(page: &mut Page, bins: &[Bin]) {
    let (Some(first), Some(last)) = (bins.first(), bins.last()) else { return };
    page.markup("<div class=\"axis\"><span>");
    page.fmt(format_args!("cycle {} · {}", first.first_cycle, ShortTime(first.first_time)));
    page.markup("</span><span>");
    page.fmt(format_args!("cycle {} · {}", last.last_cycle, ShortTime(last.last_time)));
    page.markup("</span></div>");
}

/// The runs of consecutive points that have a value: `(index of the first, the points)`.
fn runs(points: &[Option<Point>]) -> Vec<(usize, Vec<Point>)> {
    let mut out: Vec<(usize, Vec<Point>)> = Vec::new();
    let mut open = false;
    for (i, p) in points.iter().enumerate() {
        match p {
            Some(p) => {
                if !open {
                    out.push((i, Vec::new()));
                    open = true;
                }
                if let Some((_, v)) = out.last_mut() {
                    v.push(*p);
                }
            }
            None => open = false,
        }
    }
    out
}

/// The cycle strip: one mark per cycle (or per run of cycles, their outcomes stacked), coloured
/// by outcome, over a thin band coloured by state.
pub fn strip(page: &mut Page, s: &Summary) {
    let n = s.strip.len().max(1);
    let w = W / n as f64;
    let (band, gap, states) = (36.0, 2.0, 8.0);
    page.markup("<figure class=\"strip\">");
    page.svg_open(
        "strip",
        W as u32,
        (band + gap + states) as u32,
        "cycle strip: one mark per cycle, coloured by outcome",
    );
    for (i, m) in s.strip.iter().enumerate() {
        let x0 = i as f64 * w;
        page.markup("<g><title>");
        if m.cycles == 1 {
            page.fmt(format_args!("cycle {}, {}: ", m.first_cycle, STATES.get(m.state()).map_or("", |s| s.1)));
        } else {
            page.fmt(format_args!("cycles {} to {}: ", m.first_cycle, m.last_cycle));
        }
        let mut first = true;
        for ((_, _, label), count) in OUTCOMES.iter().zip(m.outcomes.iter()) {
            if *count == 0 {
                continue;
            }
            if !first {
                page.markup(", ");
            }
            first = false;
            if m.cycles == 1 {
                page.text(label);
            } else {
                page.fmt(format_args!("{} {}", count, label));
            }
        }
        page.markup("</title>");
        let mut y0 = 0.0;
        let total = f64::from(m.cycles.max(1));
        for ((_, class, _), count) in OUTCOMES.iter().zip(m.outcomes.iter()) {
            if *count == 0 {
                continue;
            }
            let h = band * f64::from(*count) / total;
            page.rect(class, x0, y0, w, h, None);
            y0 += h;
        }
        let state = STATES.get(m.state()).map_or("s4", |s| s.0);
        page.rect(state, x0, band + gap, w, states, None);
        page.markup("</g>");
    }
    page.svg_close();
    let first = s.strip.first().map(|m| Bin { first_cycle: m.first_cycle, first_time: s.first_time, ..Bin::default() });
    let last = s.strip.last().map(|m| Bin { last_cycle: m.last_cycle, last_time: s.last_time, ..Bin::default() });
    if let (Some(a), Some(b)) = (first, last) {
        axis(page, &[a, b]);
    }
    page.markup("<p class=\"legend\">");
    for ((_, class, label), count) in OUTCOMES.iter().zip(s.outcomes.iter()) {
        key(page, class, format_args!("{} {}", label, Thousands(*count)));
    }
    page.markup("<br>state: ");
    for (class, name) in STATES {
        key(page, class, format_args!("{}", name));
    }
    if s.strip_width > 1 {
        page.markup("<br><span class=\"note\">");
        page.fmt(format_args!(
            "each mark is {} consecutive cycles, their outcomes stacked; the band below is their most frequent state",
            s.strip_width
        ));
        page.markup("</span>");
    }
    page.markup("</p></figure>\n");
}

/// Unix seconds as `2026-11-26 08:00:00Z` (RFC 3339 with a space, so it can wrap in a narrow
/// column); `-` for 0.
pub struct ShortTime(pub u64);

impl core::fmt::Display for ShortTime {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.0 == 0 {
            return f.write_str("-");
        }
        let u = crate::clock::Utc::from_unix(self.0);
        write!(f, "{:04}-{:02}-{:02} {:02}:{:02}:{:02}Z", u.year, u.month, u.day, u.hour, u.minute, u.second)
    }
}

/// A count with thousands separators (`12,345`).
pub struct Thousands(pub u64);

impl core::fmt::Display for Thousands {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let digits = self.0.to_string();
        let len = digits.len();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (len - i).is_multiple_of(3) {
                f.write_str(",")?;
            }
            write!(f, "{}", c)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands() {
        assert_eq!(Thousands(0).to_string(), "0");
        assert_eq!(Thousands(999).to_string(), "999");
        assert_eq!(Thousands(1000).to_string(), "1,000");
        assert_eq!(Thousands(1234567).to_string(), "1,234,567");
    }

    #[test]
    fn gaps_split_a_line() {
        let p = Some(Point { min: 1, med: 2, max: 3 });
        let r = runs(&[p, None, p, p, None]);
        assert_eq!(r.iter().map(|(i, v)| (*i, v.len())).collect::<Vec<_>>(), [(0, 1), (2, 2)]);
    }

    #[test]
    fn a_chart_draws_its_line_limit_and_marks() {
        let bins: Vec<Bin> = (0..3)
            .map(|i| Bin {
                first_cycle: i + 1,
                last_cycle: i + 1,
                cycles: 1,
                paging: u64::from(i == 1),
                ..Bin::default()
            })
            .collect();
        let pts: Vec<Option<Point>> = (0..3).map(|v| Some(Point { min: v, med: v, max: v })).collect();
        let mut page = Page::new(1 << 20, "TEST");
        let paging = |b: &Bin| if b.paging > 0 { 1.0 } else { 0.0 };
        chart(
            &mut page,
            "t",
            "tokens",
            &bins,
            &[Line { points: &pts, class: "c0", label: "<l>" }],
            &[Limit { value: 10, class: "lim0", label: "paging limit" }],
            Some(Marks { share: &paging, label: "paging" }),
        );
        let s = page.finish().unwrap();
        assert_eq!(s.matches("class=\"mark\"").count(), 1, "{s}");
        assert_eq!(s.matches("<polyline class=\"median\"").count(), 1);
        assert!(!s.contains("class=\"band\""), "one cycle per point: no band");
        assert!(s.contains("&lt;l&gt;") && s.contains("paging limit 10") && s.contains("0 to 10"), "{s}");
    }
}
