//! Which postings a merge writes for one word: its base postings (renumbered, those of
//! documents not written left out) then its delta postings, each with its document's length.

use crate::error::Result;
use crate::memory::store::recall::disk::{DiskIndex, DiskWalk};
use crate::memory::store::recall::fulltext::{FullText, NONE};
use crate::memory::store::recall::rank::{QueryWord, RamWalk, Walk};

use super::WriteScratch;

/// Where one word's postings come from: the base (its place there) and the delta (its term).
#[derive(Clone, Copy)]
pub(super) struct Source {
    pub(super) base: Option<QueryWord>,
    pub(super) term: Option<u32>,
}

/// Where a word's walk goes on: its base postings from document `base` on (`None`: those
/// are done), then its delta postings from document `delta` on.
#[derive(Clone, Copy)]
pub(super) struct Resume {
    pub(super) base: Option<u32>,
    pub(super) delta: u32,
}

impl Resume {
    /// The walk from the base's document `from` on, then all the delta's.
    pub(super) fn from(from: u32) -> Resume {
        Resume { base: Some(from), delta: 0 }
    }
}

/// Walks the postings of `src` from `at` of the documents the job writes, renumbered, in
/// order: `f(new docno, tf, tokens of the document)`, which says whether to stop after that
/// posting. Returns where the walk goes on when `f` stopped it (`None`: walked to its end).
/// The postings it walks do not change between two walks of a job: the base's file is not
/// written while a job runs, and the delta's postings of the documents it numbered only grow.
pub(super) fn each_posting(
    base: &mut DiskIndex,
    delta: &FullText,
    sc: &WriteScratch,
    src: Source,
    at: Resume,
    mut f: impl FnMut(u32, u32, u32) -> Result<bool>,
) -> Result<Option<Resume>> {
    if let (Some(w), Some(from)) = (src.base, at.base) {
        let mut parts = base.walk_parts();
        let (Some(file), Some(buf), Some(dec)) = (parts.file, parts.bufs.next(), parts.decoded.next()) else {
            bail!(Internal, "store.fts is not open")
        };
        let mut walk = DiskWalk::starting_at(file, buf, dec, &w, from)?;
        while walk.doc() != NONE {
            let d = walk.doc();
            let nd = sc.base_new.get(d as usize).copied().unwrap_or(NONE);
            if nd != NONE {
                let len = parts.docs.tokens_kept(d)?.unwrap_or(0);
                if f(nd, walk.tf(), len)? {
                    return Ok(Some(Resume { base: Some(d.saturating_add(1)), delta: 0 }));
                }
            }
            walk.advance()?;
        }
    }
    if let Some(t) = src.term {
        let mut walk = RamWalk::new(delta, t);
        walk.seek(at.delta)?;
        while walk.doc() != NONE {
            let d = walk.doc();
            // Documents the delta gained after the job started are past `delta_new`.
            let nd = sc.delta_new.get(d as usize).copied().unwrap_or(NONE);
            if nd != NONE {
                let len = delta.doc(d).map_or(0, |x| x.tokens);
                if f(nd, walk.tf(), len)? {
                    return Ok(Some(Resume { base: None, delta: d.saturating_add(1) }));
                }
            }
            walk.advance()?;
        }
    }
    Ok(None)
}
