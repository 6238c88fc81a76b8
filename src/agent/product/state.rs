//! What the product's flow knows that survives a restart: the task it belongs to, how many
//! outlines in a row planned nothing new and how many first subjects the next passes over,
//! and the subjects asked about (as 48-bit hashes), as one line of `memory.json`'s agent map.

use super::{Product, BARREN_MAX, PLAN_KEY};
use crate::fixed::ArrayString;
use crate::memory::key::normalize;
use crate::memory::store::Store;
use crate::memory::working::WorkingSet;

impl Product {
    /// The state that survives a restart, as text for `memory.json`'s agent map: the task's
    /// hash, the barren count, the first subjects passed over and the asked subjects' hashes
    /// (`<task> <barren>/<skip> <h>,<h>,...`; a state written before the skip has none: 0).
    pub fn state(&self, out: &mut ArrayString<{ crate::limits::AGENT_META_VALUE_MAX_BYTES }>) {
        out.clear();
        let _ = out.format(format_args!("{:016x} {}/{}", self.state_task, self.barren, self.first_skip));
        for (i, h) in self.asked.iter().enumerate() {
            if out.format(format_args!("{}{:012x}", if i == 0 { " " } else { "," }, h)).is_err() {
                break;
            }
        }
    }

    /// Takes back a [`Product::state`]. A text that does not read is ignored (the product
    /// starts afresh, which loses nothing stored).
    pub fn restore(&mut self, text: &str) {
        let mut parts = text.split(' ');
        let (Some(task), Some(counts)) = (parts.next(), parts.next()) else { return };
        let (barren, skip) = counts.split_once('/').unwrap_or((counts, "0"));
        let (Ok(task), Ok(barren), Ok(skip)) =
            (u64::from_str_radix(task, 16), barren.parse::<u32>(), skip.parse::<u32>())
        else {
            return;
        };
        self.asked.clear();
        for h in parts.next().unwrap_or("").split(',').filter(|h| !h.is_empty()) {
            match u64::from_str_radix(h, 16) {
                Ok(h) if !self.asked.is_full() => {
                    let _ = self.asked.push(h & 0xffff_ffff_ffff);
                }
                _ => break,
            }
        }
        self.state_task = task;
        self.barren = barren.min(BARREN_MAX);
        self.first_skip = skip;
    }

    /// At start: takes back the state `saved` (see [`Product::state`]), and drops a plan made
    /// for another task than the one in `working` (a changed task starts a new plan; the old
    /// product stays in the store under its own tags).
    pub fn open(&mut self, working: &mut WorkingSet, saved: Option<&str>, store: &Store) {
        if let Some(s) = saved {
            self.restore(s);
        }
        let restored = self.state_task;
        self.refresh(working, Some(store));
        if restored != 0 && restored != self.task.hash {
            if let Ok(k) = normalize(PLAN_KEY) {
                working.remove(&k);
            }
            self.refresh(working, Some(store));
        }
    }
}
