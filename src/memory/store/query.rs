//! Tag queries over the posting lists.
//!
//! With required tags, the rarest one's list drives: each of its entries is checked against the
//! other required tags, the excluded and optional ones (one 16-byte tag set each) and the
//! filters. With optional tags only, their lists are merged. With no tags at all, every entry
//! is a candidate (the only case whose cost grows with the store). Lists are in id order, which
//! is creation order, so "newest first" (and "oldest first") walks the lists in result order
//! and stops as soon as the results are full: the count of matches is then exact when list
//! lengths give it (one required tag, no other filter, or no tag at all), and otherwise a lower
//! bound, with [`Results::truncated`] set. Orders by access count or relevance read every
//! candidate. Allocates nothing.
//!
//! The same code answers over the tables in RAM and over the checkpoint read in place by a
//! read-only command ([`super::view`]): it reads them through [`Tables`], so both answer
//! alike by construction. It is compiled once, for every kind of tables, behind `dyn`.

use super::slots::{Slots, TagSet};
use super::tags::Tags;
use super::Store;
use crate::limits::KEY_MAX_TAGS;
use crate::memory::key::Key;
use crate::memory::query::{relevance_ppm, Archived, EntryId, Hit, Query, Results, Sort};

/// What a tag query reads of the store.
pub(super) trait Tables {
    /// The id of tag `name`, if some entry carries it.
    fn tag(&self, name: &str) -> Option<u16>;
    /// Live entries carrying tag `t`, and the archived ones among them.
    fn tag_counts(&self, t: u16) -> (u32, u32);
    /// The posting list of tag `t` (ids in increasing order).
    fn list(&self, t: u16) -> &[u32];
    /// Live entries, and the archived ones among them.
    fn counts(&self) -> (usize, usize);
    /// One past the highest id that may be live.
    fn id_end(&self) -> EntryId;
    /// Whether `id` is live.
    fn is_live(&self, id: EntryId) -> bool;
    /// The tag ids of `id`, padded with zeros.
    fn tagset(&self, id: EntryId) -> TagSet;
    /// Archived flag, creation time and access count of live entry `id`.
    fn fields(&self, id: EntryId) -> Option<(bool, u32, u32)>;
}

/// The tables in RAM.
pub(super) struct Ram<'a> {
    pub(super) slots: &'a Slots,
    pub(super) tags: &'a Tags,
}

impl Tables for Ram<'_> {
    fn tag(&self, name: &str) -> Option<u16> {
        self.tags.find(name)
    }
    fn tag_counts(&self, t: u16) -> (u32, u32) {
        (self.tags.count(t), self.tags.archived_count(t))
    }
    fn list(&self, t: u16) -> &[u32] {
        self.tags.list(t)
    }
    fn counts(&self) -> (usize, usize) {
        (self.slots.live(), self.slots.archived_count())
    }
    fn id_end(&self) -> EntryId {
        self.slots.next_id() as EntryId
    }
    fn is_live(&self, id: EntryId) -> bool {
        self.slots.is_live(id)
    }
    fn tagset(&self, id: EntryId) -> TagSet {
        self.slots.tagset(id)
    }
    fn fields(&self, id: EntryId) -> Option<(bool, u32, u32)> {
        self.slots.get(id).map(|s| (s.archived, s.created, s.hits))
    }
}

/// Known tag ids of a key's tags (unknown ones left out), and whether every tag was known.
pub(super) fn resolve<'o>(t: &dyn Tables, key: Option<&Key>, out: &'o mut [u16; KEY_MAX_TAGS]) -> (&'o [u16], bool) {
    let mut n = 0;
    let mut all = true;
    for t in key.into_iter().flat_map(|k| k.tags()).map(|name| t.tag(name)) {
        match t {
            Some(id) => {
                if let Some(slot) = out.get_mut(n) {
                    *slot = id;
                    n += 1;
                }
            }
            None => all = false,
        }
    }
    (crate::bytes::take(out, n), all)
}

/// What a candidate is checked against.
struct Filter<'a> {
    req: &'a [u16],
    opt: &'a [u16],
    exc: &'a [u16],
    rel: &'a [u16],
    n_query: usize,
    q: &'a Query,
}

impl Store {
    /// Runs `q`, leaving the best results in `out` (cleared first). Allocates nothing.
    pub fn query(&self, q: &Query, out: &mut Results) {
        run(&Ram { slots: &self.slots, tags: &self.tags }, q, out);
    }
}

/// The tag that drives a query with required tags `req`: the rarest (the first of them when
/// several are as rare).
pub(super) fn driver(t: &dyn Tables, req: &[u16]) -> Option<u16> {
    req.iter().copied().min_by_key(|&id| t.tag_counts(id).0)
}

/// The tags whose id lists [`run`] reads for `q` over `t`, into `want`; how many. A reader that
/// loads the lists of a query's tags on demand (a store read in place) loads these first: the
/// driver of the required tags when every one is known, else the optional ones.
pub(super) fn lists_read(t: &dyn Tables, q: &Query, want: &mut [u16; KEY_MAX_TAGS]) -> usize {
    let mut req_ids = [0u16; KEY_MAX_TAGS];
    let (req, all_known) = resolve(t, q.required.as_ref(), &mut req_ids);
    if !all_known {
        return 0;
    }
    if let Some(d) = driver(t, req) {
        want[0] = d;
        return 1;
    }
    let mut opt_ids = [0u16; KEY_MAX_TAGS];
    let (opt, _) = resolve(t, q.optional.as_ref(), &mut opt_ids);
    let mut n = 0;
    for (w, &id) in want.iter_mut().zip(opt) {
        *w = id;
        n += 1;
    }
    n
}

/// Runs `q` over `t`, leaving the best results in `out` (cleared first). Allocates nothing.
pub(super) fn run(this: &dyn Tables, q: &Query, out: &mut Results) {
    out.clear();
    let limit = out.limit(q.max_results);
    let mut req_ids = [0u16; KEY_MAX_TAGS];
    let (req, all_known) = resolve(this, q.required.as_ref(), &mut req_ids);
    if !all_known {
        return; // nobody carries an unknown tag
    }
    let mut opt_ids = [0u16; KEY_MAX_TAGS];
    let (opt, _) = resolve(this, q.optional.as_ref(), &mut opt_ids);
    if q.optional.is_some() && opt.is_empty() {
        return; // nobody carries any of them
    }
    let mut exc_ids = [0u16; KEY_MAX_TAGS];
    let (exc, _) = resolve(this, q.excluded.as_ref(), &mut exc_ids);
    // Relevance compares the entry's tags with required ∪ optional (as a set).
    let n_query = q.required.map_or(0, |k| k.tag_count())
        + q.optional.map_or(0, |o| o.tags().filter(|t| !q.required.is_some_and(|r| r.has_tag(t))).count());
    let mut rel = [0u16; 2 * KEY_MAX_TAGS];
    let mut nrel = 0;
    for &t in req.iter().chain(opt.iter()) {
        if !rel.contains(&t) {
            if let Some(slot) = rel.get_mut(nrel) {
                *slot = t;
                nrel += 1;
            }
        }
    }
    let f = Filter { req, opt, exc, rel: crate::bytes::take(&rel, nrel), n_query, q };
    let plain = q.created == (0, u64::MAX) && q.hits == (0, u64::MAX);
    let newest_first = q.sort != Sort::Oldest;
    let ordered = matches!(q.sort, Sort::Newest | Sort::Oldest);
    if let Some(driver) = driver(this, req) {
        let list = this.list(driver);
        // One tag and nothing else: the count is known, the walk can stop when full.
        let known = (req.len() == 1 && opt.is_empty() && exc.is_empty() && plain).then(|| {
            let (all, archived) = this.tag_counts(driver);
            let (all, archived) = (all as usize, archived as usize);
            match q.archived {
                Archived::Include => all,
                Archived::Exclude => all - archived.min(all),
                Archived::Only => archived,
            }
        });
        let (mut up, mut down) = (list.iter().copied(), list.iter().rev().copied());
        let ids: &mut dyn Iterator<Item = EntryId> = if newest_first { &mut down } else { &mut up };
        let stopped = walk(this, ids, &f, out, limit, ordered);
        match known {
            Some(n) => out.set_matched(n),
            None if stopped => out.set_truncated(),
            None => {}
        }
    } else if !opt.is_empty() {
        if merge(this, opt, newest_first, &f, out, limit, ordered) {
            out.set_truncated();
        }
    } else {
        let known = (exc.is_empty() && plain).then(|| {
            let (all, archived) = this.counts();
            match q.archived {
                Archived::Include => all,
                Archived::Exclude => all - archived,
                Archived::Only => archived,
            }
        });
        let live = |id: &EntryId| this.is_live(*id);
        let end = this.id_end();
        let (mut up, mut down) = ((0..end).filter(live), (0..end).rev().filter(live));
        let ids: &mut dyn Iterator<Item = EntryId> = if newest_first { &mut down } else { &mut up };
        let stopped = walk(this, ids, &f, out, limit, ordered);
        match known {
            Some(n) => out.set_matched(n),
            None if stopped => out.set_truncated(),
            None => {}
        }
    }
}

/// Offers every candidate that passes; with `stop_when_full` (the walk is in result order),
/// stops once `limit` are kept. Returns whether it stopped with candidates left unread.
fn walk(
    this: &dyn Tables,
    ids: &mut dyn Iterator<Item = EntryId>,
    f: &Filter<'_>,
    out: &mut Results,
    limit: usize,
    stop_when_full: bool,
) -> bool {
    while let Some(id) = ids.next() {
        if let Some(hit) = check(this, id, f) {
            out.offer(hit, f.q.sort, limit);
            if stop_when_full && out.len() >= limit {
                return ids.next().is_some();
            }
        }
    }
    false
}

/// Merges the optional tags' lists (each in id order) into one walk without repeats; with
/// `stop_when_full`, stops once `limit` are kept. Returns whether it stopped early.
fn merge(
    this: &dyn Tables,
    opt: &[u16],
    newest_first: bool,
    f: &Filter<'_>,
    out: &mut Results,
    limit: usize,
    stop_when_full: bool,
) -> bool {
    let mut lists: [&[u32]; KEY_MAX_TAGS] = [&[]; KEY_MAX_TAGS];
    for (slot, &t) in lists.iter_mut().zip(opt) {
        *slot = this.list(t);
    }
    // Positions: from the front (oldest first) or the back (newest first).
    let mut pos = [0usize; KEY_MAX_TAGS];
    loop {
        let mut best: Option<u32> = None;
        for (l, &p) in lists.iter().zip(pos.iter()).take(opt.len()) {
            let head = if newest_first { l.len().checked_sub(p + 1).and_then(|i| l.get(i)) } else { l.get(p) };
            if let Some(&id) = head {
                best = Some(match best {
                    Some(b) if (newest_first && b >= id) || (!newest_first && b <= id) => b,
                    _ => id,
                });
            }
        }
        let Some(id) = best else { return false };
        if stop_when_full && out.len() >= limit {
            return true;
        }
        for (l, p) in lists.iter().zip(pos.iter_mut()).take(opt.len()) {
            let head = if newest_first { l.len().checked_sub(*p + 1).and_then(|i| l.get(i)) } else { l.get(*p) };
            if head == Some(&id) {
                *p += 1;
            }
        }
        if let Some(hit) = check(this, id, f) {
            out.offer(hit, f.q.sort, limit);
        }
    }
}

/// The hit for `id` if it passes every filter.
fn check(this: &dyn Tables, id: EntryId, f: &Filter<'_>) -> Option<Hit> {
    let set = this.tagset(id);
    if !f.req.iter().all(|t| set.contains(t))
        || f.exc.iter().any(|t| set.contains(t))
        || (!f.opt.is_empty() && !f.opt.iter().any(|t| set.contains(t)))
    {
        return None;
    }
    let (archived, created, hits) = this.fields(id)?;
    if !f.q.archived.admits(archived) {
        return None;
    }
    let created = u64::from(created);
    let hits = u64::from(hits);
    let (cmin, cmax) = f.q.created;
    let (hmin, hmax) = f.q.hits;
    if created < cmin || created > cmax || hits < hmin || hits > hmax {
        return None;
    }
    let ntags = set.iter().filter(|&&t| t != 0).count();
    let shared = f.rel.iter().filter(|t| set.contains(t)).count();
    Some(Hit { id, relevance_ppm: relevance_ppm(shared, ntags, f.n_query), created, hits })
}
