//! The report page's task and tables: the task as written, the product's entries apart from
//! the agent's own logs and notes, the most used tags, actions by type, problems by code and
//! the runs. Each table stacks its rows on a narrow screen, every cell labelled.

use super::chart::{ShortTime, Thousands};
use super::page::{or_dash, Report};
use super::sources::Entries;
use crate::html::Page;

impl Report {
    /// What the agent was asked to do: working memory's `task`, as written.
    pub(super) fn task(&self, p: &mut Page) {
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

    pub(super) fn tables(&self, p: &mut Page) {
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

/// The working-memory key of the task.
const TASK_KEY: &str = "task";

/// A table of the newest entries of one kind in the period, headed by its counts.
fn entries_table(p: &mut Page, id: &'static str, title: &'static str, tags: Option<&str>, e: &Entries) {
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

/// A closing row saying how many rows were left out (it spans the table's `columns`).
fn more_row(p: &mut Page, columns: &'static str, total: usize, shown: usize) {
    if total > shown {
        p.markup("<tr><td colspan=\"");
        p.markup(columns);
        p.markup("\" class=\"note\">");
        p.fmt(format_args!("and {} more", Thousands((total - shown) as u64)));
        p.markup("</td></tr>");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percents() {
        assert_eq!(Percent(1, 3).to_string(), "33%");
        assert_eq!(Percent(0, 0).to_string(), "-");
    }
}
