//! Links between related entries: unordered pairs of entry ids, at most
//! [`STORE_MAX_LINKS`], reserved once. A link dies with either of its entries.

use crate::error::Result;
use crate::limits::STORE_MAX_LINKS;
use crate::memory::query::EntryId;

/// The link table.
pub struct Links {
    pairs: Vec<(EntryId, EntryId)>,
}

impl Default for Links {
    fn default() -> Self {
        Links::new()
    }
}

impl Links {
    /// An empty table with room for [`STORE_MAX_LINKS`] links.
    pub fn new() -> Links {
        Links { pairs: Vec::with_capacity(STORE_MAX_LINKS) }
    }

    /// Bytes of RAM reserved.
    pub fn ram_bytes(&self) -> usize {
        self.pairs.capacity() * core::mem::size_of::<(EntryId, EntryId)>()
    }

    /// Number of links.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Forgets every link.
    pub fn clear(&mut self) {
        self.pairs.clear();
    }

    /// The links, each with its smaller id first.
    pub fn pairs(&self) -> &[(EntryId, EntryId)] {
        &self.pairs
    }

    /// Whether `a` and `b` are linked.
    pub fn contains(&self, a: EntryId, b: EntryId) -> bool {
        self.pairs.contains(&(a.min(b), a.max(b)))
    }

    /// Adds a link (the caller checked both ends and that it is new). `CAPACITY_EXCEEDED`
    /// when the table is full.
    pub fn add(&mut self, a: EntryId, b: EntryId) -> Result<()> {
        if self.pairs.len() >= STORE_MAX_LINKS {
            bail!(CapacityExceeded, "the store holds {} links already (STORE_MAX_LINKS)", STORE_MAX_LINKS);
        }
        self.pairs.push((a.min(b), a.max(b)));
        Ok(())
    }

    /// Removes a link; returns whether it was there.
    pub fn remove(&mut self, a: EntryId, b: EntryId) -> bool {
        let pair = (a.min(b), a.max(b));
        match self.pairs.iter().position(|&p| p == pair) {
            Some(i) => {
                self.pairs.remove(i);
                true
            }
            None => false,
        }
    }

    /// Removes every link of `id`; returns how many.
    pub fn remove_entry(&mut self, id: EntryId) -> usize {
        let before = self.pairs.len();
        self.pairs.retain(|&(a, b)| a != id && b != id);
        before - self.pairs.len()
    }

    /// The other ends of `id`'s links, in link order.
    pub fn of(&self, id: EntryId) -> impl Iterator<Item = EntryId> + '_ {
        self.pairs.iter().filter_map(move |&(a, b)| {
            if a == id {
                Some(b)
            } else if b == id {
                Some(a)
            } else {
                None
            }
        })
    }
}
