//! The product's view in the prompt: the task as written, then the heads of its entries (or,
//! for a running unit, the sentence the newest ended with, or the oldest began with), and the first subjects an outline
//! goes on from. Rendering allocates nothing.

use super::entry::{first_sentence, head, is_sentence, last_sentence, shown_line, split_entry, subject_of};
use super::judge::Words;
use super::{Product, BARREN_MAX, DOUBT_TAG, OUTLINE_FIRST_SCAN};
use crate::error::Result;
use crate::fixed::{ArrayString, ArrayVec, FixedBuf};
use crate::limits::{PRODUCT_ENTRY_MAX_BYTES, PRODUCT_VIEW_MAX_BYTES, PRODUCT_VIEW_MAX_ENTRIES};
use crate::memory::key::normalize;
use crate::memory::query::{EntryId, Query, Sort};
use crate::memory::store::Store;

impl Product {
    /// Writes the view into `out`: `<product>`, the task as written, the heads of the product's
    /// entries (oldest of them first, one a line), `</product>`; nothing without a task. The
    /// entries take at most `max_bytes` (never more than [`PRODUCT_VIEW_MAX_BYTES`]); when
    /// they no longer fit, the view starts again from the newest that fill half of it.
    /// `task` is the task's text as working memory holds it.
    pub fn render(&mut self, task: &str, store: &mut Store, out: &mut FixedBuf, max_bytes: usize) -> Result<()> {
        self.seen.clear();
        self.shown = 0;
        self.ending = Words::default();
        self.beginning = Words::default();
        self.heading_bytes = 0;
        self.first.clear();
        if !self.active() {
            return Ok(());
        }
        let at = out.len();
        out.push_str("<product>\n")?;
        out.push_str(task.trim())?;
        out.push_str("\n")?;
        self.heading_bytes = out.len() - at;
        let max_bytes = max_bytes.min(PRODUCT_VIEW_MAX_BYTES);
        let mut ids: ArrayVec<EntryId, PRODUCT_VIEW_MAX_ENTRIES> = ArrayVec::new();
        if !self.view_ids(store, &mut ids, PRODUCT_VIEW_MAX_ENTRIES, max_bytes) {
            self.view_from = 0;
            ids.clear();
            self.view_ids(store, &mut ids, PRODUCT_VIEW_MAX_ENTRIES / 2, max_bytes / 2);
            self.view_from = match ids.as_slice().last() {
                Some(&id) => id,
                None => self.newest.ids().next().map_or(0, |id| id.saturating_add(1)),
            };
        }
        // After a unit about a subject that saved none, the next is asked with the task alone:
        // the days of a plan wrote the heads in view again ("Day 3 – Nara: Tokyo and Osaka.",
        // six times in a row; docs/measurements.md, "Days that name the other days").
        let heads = !self.task.running && (self.subject.is_empty() || self.unsaved == 0);
        for &id in ids.as_slice().iter().rev() {
            let Ok(v) = store.value(id) else { continue };
            if heads {
                out.push_str(shown_line(v))?;
                out.push_str("\n")?;
            }
            let _ = self.seen.push(self.seen_of(v));
            self.shown += 1;
        }
        if self.task.running {
            self.render_running(store, ids.as_slice().first().copied(), out)?;
        }
        // Only an outline goes on from first subjects; no outline plans a running unit.
        if self.subject.is_empty() && !self.task.running {
            self.read_first(store);
        }
        self.write_prefix();
        out.push_str("</product>\n")
    }

    /// A running unit's view: the sentence its newest ended with, which the model goes on
    /// from. A model shown a whole unit wrote it again, and one shown the whole story wrote its
    /// first again. After an ask that saved none (the model wrote that sentence again), the
    /// sentence the product's oldest unit began with, alone: it holds the text's people and
    /// place, which the task alone lost (a new keeper of the lighthouse every few paragraphs),
    /// and shown beside the ending it was copied (docs/measurements.md, "Units read straight
    /// through", "The story's beginning after a unit refused"). After [`BARREN_MAX`] such asks,
    /// the task alone.
    fn render_running(&mut self, store: &mut Store, newest: Option<EntryId>, out: &mut FixedBuf) -> Result<()> {
        let Some(newest) = newest else { return Ok(()) };
        if self.barren >= BARREN_MAX {
            return Ok(());
        }
        let lang = self.task.lang;
        if self.barren > 0 {
            let Some(v) = self.oldest_unit(store).and_then(|id| store.value(id).ok()) else { return Ok(()) };
            let (h, _, text) = split_entry(v);
            let first = crate::bytes::str_prefix(first_sentence(text), PRODUCT_ENTRY_MAX_BYTES);
            out.push_str(h.trim())?;
            out.push_str(lang.begins)?;
            out.push_str(first)?;
            self.beginning = Words::of(first);
        } else {
            let Ok(v) = store.value(newest) else { return Ok(()) };
            let (h, _, text) = split_entry(v);
            let last = last_sentence(text);
            out.push_str(h.trim())?;
            out.push_str(lang.ends)?;
            out.push_str(last)?;
            self.ending = Words::of(last);
        }
        out.push_str("\n")
    }

    /// Reads into `firsts` the product's first `max` units, not doubted ones, in `sort`'s
    /// order; `false` without a product.
    fn read_units(&mut self, store: &mut Store, max: usize, sort: Sort) -> bool {
        let Some(key) = self.task.key else { return false };
        let q = Query {
            required: Some(key),
            excluded: normalize(DOUBT_TAG).ok(),
            max_results: max,
            sort,
            ..Query::default()
        };
        store.query(&q, &mut self.firsts);
        true
    }

    /// The product's oldest unit, not a doubted one.
    fn oldest_unit(&mut self, store: &mut Store) -> Option<EntryId> {
        self.read_units(store, 1, Sort::Oldest).then(|| self.firsts.ids().next()).flatten()
    }

    /// The subjects the next outline goes on from: those of the product's oldest entries, or
    /// for units a reader numbers (a story's paragraphs, a trip's days) its newest, in order,
    /// past the first `first_skip` of them (so a model that answers one prompt the
    /// same way is given another), none after every [`BARREN_MAX`] barren outlines in a row.
    /// An outline that went on from a story's first two paragraphs wrote another third
    /// paragraph each time, and the story never moved on (docs/measurements.md, "An outline of
    /// units read in order").
    fn read_first(&mut self, store: &mut Store) {
        self.newest_number = 0;
        if self.barren > 0 && self.barren.is_multiple_of(BARREN_MAX) {
            return;
        }
        let numbered = self.task.numbered;
        if !self.read_units(store, OUTLINE_FIRST_SCAN, if numbered { Sort::Newest } else { Sort::Oldest }) {
            return;
        }
        // Past the last of them, round again from the first.
        let read = self.firsts.ids().count();
        let skip = if read == 0 { 0 } else { self.first_skip as usize % read };
        for id in self.firsts.ids().skip(skip) {
            if self.first.is_full() {
                break;
            }
            let Ok(v) = store.value(id) else { continue };
            // A unit's subject, or all of a unit in one sentence; not a head without a text.
            let s = subject_of(head(v));
            if !s.is_empty() && (s.len() < v.len() || is_sentence(s)) {
                if let Ok(s) = ArrayString::try_from_str(s) {
                    let _ = self.first.push(s);
                }
            }
        }
        if numbered && !self.first.is_empty() {
            self.first.as_mut_slice().reverse();
            self.newest_number = u32::try_from(self.written).unwrap_or(u32::MAX);
        }
    }

    /// Writes the outline's prefix: the units' heading, the first subjects numbered, one a
    /// line, and the next number (`Tips:\n1. Water regularly\n2. Use mulch\n3. `).
    pub(super) fn write_prefix(&mut self) {
        self.prefix.clear();
        let units = self.task.phrase.as_str();
        let mut chars = units.chars();
        if let Some(c) = chars.next() {
            for u in c.to_uppercase() {
                let _ = self.prefix.push(u);
            }
            let _ = self.prefix.format(format_args!("{}:\n", chars.as_str()));
        }
        let given = self.first.len() as u32;
        // Numbered as the product numbers them: the newest given is the newest unit.
        let from = match self.newest_number.checked_sub(given) {
            Some(before) if given > 0 => before.saturating_add(1),
            _ => 1,
        };
        for (i, s) in (from..).zip(self.first.iter()) {
            let _ = self.prefix.format(format_args!("{}. {}\n", i, s));
        }
        self.first_number = if given == 0 { 1 } else { from.saturating_add(given) };
        let _ = self.prefix.format(format_args!("{}. ", self.first_number));
    }

    /// Pushes to `ids` the newest product entries, newest first, back to the view's first, at
    /// most `max` in `max_bytes`; `false` when they do not all fit.
    fn view_ids(
        &self,
        store: &mut Store,
        ids: &mut ArrayVec<EntryId, PRODUCT_VIEW_MAX_ENTRIES>,
        max: usize,
        max_bytes: usize,
    ) -> bool {
        let mut bytes = 0;
        for id in self.newest.ids() {
            if id < self.view_from {
                break;
            }
            let len = match store.value(id) {
                Ok(v) => shown_line(v).len() + 1,
                Err(_) => continue,
            };
            if ids.len() >= max || bytes + len > max_bytes {
                return false;
            }
            bytes += len;
            let _ = ids.push(id);
        }
        true
    }
}
