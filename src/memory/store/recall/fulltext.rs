//! The full-text index's delta: for every word (term), the documents that hold it and how
//! often, in fixed tables reserved once (`TEXT_DELTA_*` in `limits.rs`); the documents are
//! those of entries created or changed since `store.fts` (the base, see [`super`])
//! was written, and each term also counts the base documents holding it that are no longer
//! current (`base_dead`).
//!
//! A *document* is one indexed version of an entry's text (its tags joined by `,`, a space,
//! its value; see [`super::tokenize`]). Documents get numbers (`docno`) from a counter, so
//! every term's postings are appended in increasing docno order and stay sorted without
//! moving anything: a change of an entry makes a new document and kills the old one
//! ([`FullText::start_remove`] and what follows it update the statistics at once; its postings
//! become garbage that ranking skips). When a table would not hold the next change the
//! owner merges the delta into a new base and empties it, which drops the garbage.
//!
//! Statistics are exact for the live documents, as FTS5 keeps them: the number of documents,
//! their total tokens, and for each term the number of documents holding it (`df`).
//!
//! Postings: each term has a chain of blocks of [`BLOCK_POSTINGS`] `(docno, tf)` pairs in a
//! shared pool. The dictionary is an open-addressing hash table over the term text, kept in
//! an arena. Terms whose `df` falls to 0 stay until the next merge.

use crate::error::Result;
use crate::memory::hash::fnv1a64;
use crate::memory::query::EntryId;

/// Postings per block.
pub const BLOCK_POSTINGS: usize = 8;

/// "None" for block, document and entry links.
pub const NONE: u32 = u32::MAX;

/// A block of postings of one term.
#[derive(Clone, Copy)]
pub struct Block {
    /// Document numbers, increasing.
    pub doc: [u32; BLOCK_POSTINGS],
    /// Occurrences of the term in each (saturating).
    pub tf: [u16; BLOCK_POSTINGS],
    /// The next block of the term, or [`NONE`].
    pub next: u32,
    /// Postings in use.
    pub n: u32,
}

impl Default for Block {
    fn default() -> Self {
        Block { doc: [0; BLOCK_POSTINGS], tf: [0; BLOCK_POSTINGS], next: NONE, n: 0 }
    }
}

/// A term of the dictionary.
#[derive(Clone, Copy, Default)]
pub struct Term {
    text_at: u32,
    text_len: u32,
    /// Live documents holding the term.
    pub df: u32,
    /// First block, or [`NONE`].
    pub head: u32,
    tail: u32,
    /// The last document a posting was added for, plus one (0: none).
    last_doc: u32,
    /// The removal pass that last counted this term (see `remove_doc`).
    mark: u32,
    /// Documents of the base segment (`store.fts`, searched in place) holding this term
    /// that are no longer current: the base's `df` minus this is the live one.
    pub base_dead: u32,
}

/// What one live document is.
#[derive(Clone, Copy, Default)]
pub struct Doc {
    /// The entry, or [`NONE`] once the document is dead.
    pub entry: u32,
    /// The entry it indexes, kept after its death (a merge under way writes the documents
    /// that were current when it started). Costs nothing: it fills the struct's padding.
    pub indexed: u32,
    /// Tokens in the document.
    pub tokens: u32,
    /// Where the `put` record it indexes starts in the log.
    pub offset: u64,
    /// That record's length.
    pub rec_len: u32,
}

/// Sizes of the index's tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// Distinct terms.
    pub terms: usize,
    /// Bytes of term text.
    pub text: usize,
    /// Posting blocks.
    pub blocks: usize,
    /// Document numbers (live and dead) before a rebuild is needed.
    pub docs: usize,
    /// Entry ids.
    pub entries: usize,
}

impl Sizes {
    /// The sizes of the delta for a store of `room` ids: fixed tables (`TEXT_DELTA_*` in
    /// `limits.rs`), whatever the capacity, plus one entry link per id.
    pub fn delta(room: usize) -> Sizes {
        use crate::limits::{TEXT_DELTA_BLOCKS, TEXT_DELTA_DOCS, TEXT_DELTA_TERMS, TEXT_DELTA_TERM_BYTES};
        Sizes {
            terms: TEXT_DELTA_TERMS,
            text: TEXT_DELTA_TERM_BYTES,
            blocks: TEXT_DELTA_BLOCKS,
            docs: TEXT_DELTA_DOCS,
            entries: room,
        }
    }

    /// Bytes of RAM these tables reserve.
    pub fn ram_bytes(&self) -> usize {
        self.terms * (core::mem::size_of::<Term>() + 2 * 4)
            + self.text
            + self.blocks * core::mem::size_of::<Block>()
            + self.docs * core::mem::size_of::<Doc>()
            + self.entries * 4
    }
}

/// The index. See the module documentation.
pub struct FullText {
    sizes: Sizes,
    /// Hash table: 0 empty, else term id + 1. A power of two, at least twice the terms.
    slots: Vec<u32>,
    terms: Vec<Term>,
    text: Vec<u8>,
    blocks: Vec<Block>,
    docs: Vec<Doc>,
    /// Entry id to its live document, or [`NONE`].
    entry_doc: Vec<u32>,
    live_docs: u64,
    total_tokens: u64,
    pass: u32,
}

impl FullText {
    /// An index with no tables yet (nothing reserved until [`FullText::reserve`]).
    pub fn unreserved() -> FullText {
        FullText {
            sizes: Sizes { terms: 0, text: 0, blocks: 0, docs: 0, entries: 0 },
            slots: Vec::new(),
            terms: Vec::new(),
            text: Vec::new(),
            blocks: Vec::new(),
            docs: Vec::new(),
            entry_doc: Vec::new(),
            live_docs: 0,
            total_tokens: 0,
            pass: 0,
        }
    }

    /// Reserves the tables for `sizes` (once; later calls with the same sizes only clear).
    pub fn reserve(&mut self, sizes: Sizes) {
        if self.sizes != sizes {
            let slots = (sizes.terms * 2).next_power_of_two();
            self.slots = vec![0; slots];
            self.terms = Vec::with_capacity(sizes.terms);
            self.text = Vec::with_capacity(sizes.text);
            self.blocks = Vec::with_capacity(sizes.blocks);
            self.docs = Vec::with_capacity(sizes.docs);
            self.entry_doc = vec![NONE; sizes.entries];
            self.sizes = sizes;
        } else {
            self.clear();
        }
    }

    /// Whether the tables are reserved.
    pub fn is_reserved(&self) -> bool {
        self.sizes.entries > 0
    }

    /// Empties the index (keeping its tables).
    /// Only what was written is cleared (so tables never used are never touched, and stay
    /// unbacked by RAM).
    pub fn clear(&mut self) {
        if !self.terms.is_empty() {
            self.slots.iter_mut().for_each(|s| *s = 0);
        }
        for doc in self.docs.iter().filter(|d| d.entry != NONE) {
            if let Some(e) = self.entry_doc.get_mut(doc.entry as usize) {
                *e = NONE;
            }
        }
        self.terms.clear();
        self.text.clear();
        self.blocks.clear();
        self.docs.clear();
        self.live_docs = 0;
        self.total_tokens = 0;
        self.pass = 0;
    }

    /// Bytes of RAM reserved.
    pub fn ram_bytes(&self) -> usize {
        self.sizes.ram_bytes()
    }

    /// Live documents.
    pub fn live_docs(&self) -> u64 {
        self.live_docs
    }

    /// Tokens in all live documents.
    pub fn total_tokens(&self) -> u64 {
        self.total_tokens
    }

    /// Distinct terms (including ones no live document holds any more).
    pub fn term_count(&self) -> usize {
        self.terms.len()
    }

    /// Document numbers handed out (live and dead).
    pub fn doc_count(&self) -> usize {
        self.docs.len()
    }

    /// Posting blocks in use.
    pub fn block_count(&self) -> usize {
        self.blocks.len()
    }

    /// Whether `docs` new documents and base kills of at most `tokens` words in all, of at
    /// most `text` bytes of word text in all, surely fit (a docno each, a block and a term
    /// for each word, the text of each).
    pub fn has_room(&self, docs: usize, tokens: usize, text: usize) -> bool {
        self.docs.len() + docs <= self.sizes.docs
            && self.blocks.len() + tokens <= self.sizes.blocks
            && self.terms.len() + tokens <= self.sizes.terms
            && self.text.len() + text <= self.sizes.text
    }

    /// Whether the delta holds nothing (no document, no base kill).
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty() && self.terms.is_empty()
    }

    /// Starts counting out a base document (one of `store.fts`): call
    /// [`FullText::kill_base_word`] with each of its words.
    pub fn start_base_kill(&mut self) {
        self.pass = self.pass.wrapping_add(1).max(1);
    }

    /// One word of the base document being counted out: its term (added if new) has one
    /// more dead base document, once per document.
    pub fn kill_base_word(&mut self, word: &[u8]) -> Result<()> {
        let t = self.intern(word)?;
        let pass = self.pass;
        if let Some(term) = self.terms.get_mut(t as usize) {
            if term.mark != pass {
                term.mark = pass;
                term.base_dead = term.base_dead.saturating_add(1);
            }
        }
        Ok(())
    }

    /// The live document of entry `id`.
    pub fn doc_of(&self, id: EntryId) -> Option<(u32, Doc)> {
        let d = *self.entry_doc.get(id as usize)?;
        let doc = *self.docs.get(d as usize)?;
        Some((d, doc))
    }

    /// Document `d` (live or dead).
    pub fn doc(&self, d: u32) -> Option<&Doc> {
        self.docs.get(d as usize)
    }

    /// Term `t`.
    pub fn term(&self, t: u32) -> Option<&Term> {
        self.terms.get(t as usize)
    }

    /// The text of term `t`.
    pub fn term_text(&self, t: u32) -> &[u8] {
        self.terms
            .get(t as usize)
            .and_then(|x| self.text.get(x.text_at as usize..(x.text_at + x.text_len) as usize))
            .unwrap_or(&[])
    }

    /// Block `b`.
    pub fn block(&self, b: u32) -> Option<&Block> {
        self.blocks.get(b as usize)
    }

    /// The term with this text.
    pub fn find(&self, word: &[u8]) -> Option<u32> {
        let mask = self.slots.len().checked_sub(1)?;
        let mut i = fnv1a64(word) as usize & mask;
        loop {
            let s = *self.slots.get(i)?;
            if s == 0 {
                return None;
            }
            if self.term_text(s - 1) == word {
                return Some(s - 1);
            }
            i = (i + 1) & mask;
        }
    }

    /// The term with this text, added if new.
    fn intern(&mut self, word: &[u8]) -> Result<u32> {
        let mask = self.slots.len().saturating_sub(1);
        let mut i = fnv1a64(word) as usize & mask;
        loop {
            let Some(&s) = self.slots.get(i) else { bail!(Internal, "full-text dictionary not reserved") };
            if s == 0 {
                break;
            }
            if self.term_text(s - 1) == word {
                return Ok(s - 1);
            }
            i = (i + 1) & mask;
        }
        if self.terms.len() >= self.sizes.terms || self.text.len() + word.len() > self.sizes.text {
            bail!(
                CapacityExceeded,
                "the full-text index holds {} distinct words in {} bytes, its most (TEXT_TERMS_PER_ENTRY, TEXT_TERM_BYTES_PER_TERM in limits.rs)",
                self.terms.len(),
                self.text.len()
            );
        }
        let t = self.terms.len() as u32;
        let term = Term {
            text_at: self.text.len() as u32,
            text_len: word.len() as u32,
            df: 0,
            head: NONE,
            tail: NONE,
            last_doc: 0,
            mark: 0,
            base_dead: 0,
        };
        self.text.extend_from_slice(word);
        self.terms.push(term);
        if let Some(slot) = self.slots.get_mut(i) {
            *slot = t + 1;
        }
        Ok(t)
    }

    /// Starts a new document for entry `id` (whose record is `rec_len` bytes at `offset`);
    /// add its words with [`FullText::add_word`], then [`FullText::finish_doc`]. The entry's
    /// previous document must have been removed.
    pub fn start_doc(&mut self, id: EntryId, offset: u64, rec_len: u32) -> Result<u32> {
        if self.docs.len() >= self.sizes.docs {
            bail!(
                CapacityExceeded,
                "the full-text index ran out of document numbers ({}); it must be rebuilt",
                self.sizes.docs
            );
        }
        if id as usize >= self.entry_doc.len() {
            bail!(Internal, "entry id {} beyond the full-text index's {} ids", id, self.entry_doc.len());
        }
        let d = self.docs.len() as u32;
        self.docs.push(Doc { entry: id, indexed: id, tokens: 0, offset, rec_len });
        Ok(d)
    }

    /// Adds one occurrence of `word` to document `d` (the one being built).
    pub fn add_word(&mut self, d: u32, word: &[u8]) -> Result<()> {
        let t = self.intern(word)?;
        let Some(term) = self.terms.get(t as usize).copied() else { bail!(Internal, "term {} missing", t) };
        if term.last_doc == d + 1 {
            // Another occurrence: the term's last posting is this document's.
            if let Some(b) = self.blocks.get_mut(term.tail as usize) {
                let i = (b.n as usize).saturating_sub(1);
                if let Some(tf) = b.tf.get_mut(i) {
                    *tf = tf.saturating_add(1);
                }
            }
        } else {
            self.push_posting(t, term, d)?;
        }
        if let Some(doc) = self.docs.get_mut(d as usize) {
            doc.tokens = doc.tokens.saturating_add(1);
        }
        Ok(())
    }

    fn push_posting(&mut self, t: u32, mut term: Term, d: u32) -> Result<()> {
        let tail_full = self.blocks.get(term.tail as usize).is_none_or(|b| b.n as usize >= BLOCK_POSTINGS);
        if tail_full {
            if self.blocks.len() >= self.sizes.blocks {
                bail!(
                    CapacityExceeded,
                    "the full-text index's {} posting blocks are in use (TEXT_BLOCKS_PER_ENTRY in limits.rs); it must be rebuilt",
                    self.sizes.blocks
                );
            }
            let b = self.blocks.len() as u32;
            self.blocks.push(Block::default());
            match self.blocks.get_mut(term.tail as usize) {
                Some(prev) => prev.next = b,
                None => term.head = b,
            }
            term.tail = b;
        }
        if let Some(b) = self.blocks.get_mut(term.tail as usize) {
            let i = b.n as usize;
            if let (Some(doc), Some(tf)) = (b.doc.get_mut(i), b.tf.get_mut(i)) {
                *doc = d;
                *tf = 1;
                b.n += 1;
            }
        }
        term.df += 1;
        term.last_doc = d + 1;
        if let Some(slot) = self.terms.get_mut(t as usize) {
            *slot = term;
        }
        Ok(())
    }

    /// Makes document `d` the live one of its entry and counts it.
    pub fn finish_doc(&mut self, d: u32) {
        let Some(doc) = self.docs.get(d as usize).copied() else { return };
        if let Some(e) = self.entry_doc.get_mut(doc.entry as usize) {
            *e = d;
        }
        self.live_docs += 1;
        self.total_tokens += u64::from(doc.tokens);
    }

    /// Starts removing the live document of entry `id`: returns it; call
    /// [`FullText::remove_word`] for each of its words (as they were added), then
    /// [`FullText::finish_remove`].
    pub fn start_remove(&mut self, id: EntryId) -> Option<u32> {
        let d = *self.entry_doc.get(id as usize)?;
        if d == NONE {
            return None;
        }
        self.pass = self.pass.wrapping_add(1).max(1);
        Some(d)
    }

    /// One word of the document being removed: its term loses the document from `df` once.
    pub fn remove_word(&mut self, word: &[u8]) {
        let Some(t) = self.find(word) else { return };
        let pass = self.pass;
        if let Some(term) = self.terms.get_mut(t as usize) {
            if term.mark != pass {
                term.mark = pass;
                term.df = term.df.saturating_sub(1);
            }
        }
    }

    /// Ends the removal of document `d`: it is dead, its entry has no document.
    pub fn finish_remove(&mut self, d: u32) {
        let Some(doc) = self.docs.get_mut(d as usize) else { return };
        let (entry, tokens) = (doc.entry, doc.tokens);
        doc.entry = NONE;
        if let Some(e) = self.entry_doc.get_mut(entry as usize) {
            if *e == d {
                *e = NONE;
            }
        }
        self.live_docs = self.live_docs.saturating_sub(1);
        self.total_tokens = self.total_tokens.saturating_sub(u64::from(tokens));
    }

    /// Gives entries new ids (a compaction's): `new(old)` for every live document.
    pub fn relabel(&mut self, mut new: impl FnMut(EntryId) -> EntryId) {
        for doc in self.docs.iter().filter(|d| d.entry != NONE) {
            if let Some(e) = self.entry_doc.get_mut(doc.entry as usize) {
                *e = NONE;
            }
        }
        for (d, doc) in self.docs.iter_mut().enumerate() {
            if doc.entry == NONE {
                continue;
            }
            doc.entry = new(doc.entry);
            doc.indexed = doc.entry;
            if let Some(e) = self.entry_doc.get_mut(doc.entry as usize) {
                *e = d as u32;
            }
        }
    }

    /// Entry ids with a live document, in id order.
    pub fn indexed_entries(&self) -> impl Iterator<Item = EntryId> + '_ {
        self.entry_doc.iter().enumerate().filter(|(_, &d)| d != NONE).map(|(i, _)| i as EntryId)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> FullText {
        let mut f = FullText::unreserved();
        f.reserve(Sizes { terms: 64, text: 1024, blocks: 64, docs: 16, entries: 8 });
        f
    }

    fn add(f: &mut FullText, id: EntryId, words: &[&str]) -> u32 {
        let d = f.start_doc(id, u64::from(id) * 100, 10).unwrap();
        for w in words {
            f.add_word(d, w.as_bytes()).unwrap();
        }
        f.finish_doc(d);
        d
    }

    fn postings(f: &FullText, word: &str) -> Vec<(u32, u16)> {
        let mut out = Vec::new();
        let Some(t) = f.find(word.as_bytes()) else { return out };
        let mut b = f.term(t).unwrap().head;
        while let Some(blk) = f.block(b) {
            for i in 0..blk.n as usize {
                out.push((blk.doc[i], blk.tf[i]));
            }
            b = blk.next;
        }
        out
    }

    #[test]
    fn adds_postings_in_document_order_with_term_frequencies() {
        let mut f = small();
        add(&mut f, 0, &["a", "b", "a"]);
        add(&mut f, 1, &["b", "c"]);
        assert_eq!(postings(&f, "a"), [(0, 2)]);
        assert_eq!(postings(&f, "b"), [(0, 1), (1, 1)]);
        assert_eq!(f.term(f.find(b"b").unwrap()).unwrap().df, 2);
        assert_eq!((f.live_docs(), f.total_tokens()), (2, 5));
        assert_eq!(f.find(b"zzz"), None);
    }

    #[test]
    fn chains_blocks_when_a_term_has_many_documents() {
        let mut f = small();
        for id in 0..8 {
            add(&mut f, id, &["x"]);
        }
        for id in 0..4 {
            let d = f.start_remove(id).unwrap();
            f.remove_word(b"x");
            f.finish_remove(d);
            add(&mut f, id, &["x", "x"]);
        }
        let p = postings(&f, "x");
        assert_eq!(p.len(), 12);
        assert!(p.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(f.term(f.find(b"x").unwrap()).unwrap().df, 8);
        assert_eq!(f.live_docs(), 8);
        assert_eq!(f.total_tokens(), 12);
    }

    #[test]
    fn removal_counts_each_term_once_per_document() {
        let mut f = small();
        add(&mut f, 0, &["a", "a", "b"]);
        add(&mut f, 1, &["a"]);
        let d = f.start_remove(0).unwrap();
        for w in ["a", "a", "b"] {
            f.remove_word(w.as_bytes());
        }
        f.finish_remove(d);
        assert_eq!(f.term(f.find(b"a").unwrap()).unwrap().df, 1);
        assert_eq!(f.term(f.find(b"b").unwrap()).unwrap().df, 0);
        assert_eq!((f.live_docs(), f.total_tokens()), (1, 1));
        assert_eq!(f.doc(d).unwrap().entry, NONE);
        assert!(f.doc_of(0).is_none());
        assert_eq!(f.indexed_entries().collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn full_tables_are_capacity_errors() {
        let mut f = FullText::unreserved();
        f.reserve(Sizes { terms: 2, text: 1024, blocks: 8, docs: 2, entries: 8 });
        let d = f.start_doc(0, 0, 1).unwrap();
        f.add_word(d, b"a").unwrap();
        f.add_word(d, b"b").unwrap();
        let e = f.add_word(d, b"c").unwrap_err();
        assert_eq!(e.code(), crate::error::Code::CapacityExceeded);
        f.finish_doc(d);
        f.start_doc(1, 0, 1).unwrap();
        assert_eq!(f.start_doc(2, 0, 1).unwrap_err().code(), crate::error::Code::CapacityExceeded);
    }
}
