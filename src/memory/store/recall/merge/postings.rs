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

/// Walks the postings of `src` (the base's from its document `from` on) of the documents
/// the job writes, renumbered, in order: `f(new docno, tf, tokens of the document)`.
pub(super) fn each_posting(
    base: &mut DiskIndex,
    delta: &FullText,
    sc: &WriteScratch,
    src: Source,
    from: u32,
    mut f: impl FnMut(u32, u32, u32) -> Result<()>,
) -> Result<()> {
    if let Some(w) = src.base {
        let mut parts = base.walk_parts();
        let (Some(file), Some(buf), Some(dec)) = (parts.file, parts.bufs.next(), parts.decoded.next()) else {
            bail!(Internal, "store.fts is not open")
        };
        let mut walk = DiskWalk::starting_at(file, buf, dec, &w, from)?;
        while walk.doc() != NONE {
            let nd = sc.base_new.get(walk.doc() as usize).copied().unwrap_or(NONE);
            if nd != NONE {
                let len = parts.docs.tokens_kept(walk.doc())?.unwrap_or(0);
                f(nd, walk.tf(), len)?;
            }
            walk.advance()?;
        }
    }
    if let Some(t) = src.term {
        let mut walk = RamWalk::new(delta, t);
        while walk.doc() != NONE {
            // Documents the delta gained after the job started are past `delta_new`.
            let nd = sc.delta_new.get(walk.doc() as usize).copied().unwrap_or(NONE);
            if nd != NONE {
                let len = delta.doc(walk.doc()).map_or(0, |x| x.tokens);
                f(nd, walk.tf(), len)?;
            }
            walk.advance()?;
        }
    }
    Ok(())
}
