//! The tolerant, bounded tag parser: one forward pass over the input, building a [`TagTree`].
//!
//! It reads what models actually write, not just well-formed XML, and never fails:
//!
//! - elements, end tags, self-closing tags; attributes are read and ignored, except `type` and
//!   `key` (quoted with `"` or `'`, or bare), which are kept decoded;
//! - comments `<!-- -->`, CDATA `<![CDATA[ ]]>` (its content is text, not decoded),
//!   declarations `<!DOCTYPE ...>` and processing instructions `<?xml ...?>` (skipped);
//! - entities as in `syntax.rs`;
//! - a `<` that does not start markup is text: `a < b`, `x<3`, `<<`, and a would-be tag that
//!   meets another `<` before its `>` (`if a<b and c<d`) all stay text;
//! - an end tag closes the nearest open element of that name (ASCII case-insensitive); open
//!   elements inside it are closed with it (recorded as implicitly closed); an end tag that
//!   matches no open element is ignored (recorded);
//! - input that ends inside a tag drops the partial tag; elements still open at the end are
//!   closed there and marked cut ([`Node::is_cut`](super::Node::is_cut)), both recorded in
//!   the [`ParseReport`];
//! - text elements ([`ParseOptions::text_elements`]) read their content as text up to their
//!   own end tag.
//!
//! Every search goes through [`crate::bytes`] (a word at a time), and is bounded by where its
//! result can matter: a text element's CDATA sections are looked for only inside it, an end tag
//! is compared with the open elements by a hash of its name, after a count per hash bucket has
//! ruled most names out; a run of `<` is stepped over at once, since only its last `<` can open
//! markup. The figures on 1 MiB inputs, hostile ones included, are in `docs/measurements.md`
//! (`make bench`, area `tag`).
//!
//! Bounds: the node and text capacities of the tree (parsing stops, the report says where) and
//! [`TAG_MAX_DEPTH`] (deeper start tags are dropped, their text kept). Every scan moves forward;
//! a scan for a closing delimiter never passes a `<` it could not consume (start tags, end
//! tags), or what it passes is consumed (comments, CDATA, a text element's content), or it
//! fails at most once per text element name (failures are remembered), so the parse is linear
//! in the input. No recursion.

use super::syntax::{decode_into, is_name_start, is_space, name_len};
use super::tree::{
    Limit, ParseOptions, ParseReport, Rec, Span, TagTree, F_CLOSED, F_CUT, F_ELEMENT, F_KEY_ATTR, F_TYPE_ATTR, NONE,
};
use crate::bytes;
use crate::limits::{TAG_MAX_DEPTH, TAG_MAX_TEXT_ELEMENTS};

/// Most text-element names a parse distinguishes (for remembering failed searches); names past
/// this are parsed as ordinary elements, so the memo covers every text element.
const MAX_TEXT_ELEMENTS: usize = TAG_MAX_TEXT_ELEMENTS;
// A search notes the text elements it met in the bits of a `u32`.
const _: () = assert!(MAX_TEXT_ELEMENTS <= 32);

/// What starts a CDATA section.
const CDATA: &[u8] = b"<![CDATA[";

/// A parse was stopped by a capacity.
struct Stop;

/// What was found at a `<`.
enum Markup {
    /// Not markup: the `<` is text.
    Text,
    /// The input ended inside markup.
    Truncated,
    /// Markup ending at the given offset (exclusive), already handled.
    Done(usize),
}

/// Bytes the parser's searches examined on this thread (tests only): from where a search
/// starts to the end of what it found, or to the end of the input when it found nothing. A
/// parse is linear when this stays within a small multiple of the input's length.
#[cfg(test)]
pub(crate) mod examined {
    use std::cell::Cell;
    thread_local! {
        static BYTES: Cell<usize> = const { Cell::new(0) };
    }
    pub(crate) fn add(n: usize) {
        BYTES.with(|c| c.set(c.get().saturating_add(n)));
    }
    /// The count so far, set back to 0.
    pub(crate) fn take() -> usize {
        BYTES.with(|c| c.replace(0))
    }
}

/// Counts the bytes a search examined (tests only, see [`examined`]).
#[inline(always)]
fn examined(hay_len: usize, from: usize, found_end: Option<usize>) {
    #[cfg(test)]
    examined::add(found_end.unwrap_or(hay_len).saturating_sub(from));
    #[cfg(not(test))]
    let _ = (hay_len, from, found_end);
}

/// The first `needle` in `hay[from..end]`, as an offset into `hay`.
#[inline]
fn find(hay: &[u8], from: usize, end: usize, needle: &[u8]) -> Option<usize> {
    let found = bytes::find(hay.get(from..end)?, needle).map(|r| from + r);
    examined(end, from, found.map(|f| f + needle.len()));
    found
}

/// The first `b` in `hay[from..]`, as an offset into `hay`.
#[inline]
fn find_byte(hay: &[u8], from: usize, b: u8) -> Option<usize> {
    let found = bytes::find_byte(hay.get(from..)?, b).map(|r| from + r);
    examined(hay.len(), from, found.map(|f| f + 1));
    found
}

/// The first `a` or `b` in `hay[from..]`, as an offset into `hay`.
#[inline]
fn find_either(hay: &[u8], from: usize, a: u8, b: u8) -> Option<usize> {
    let found = bytes::find_either(hay.get(from..)?, a, b).map(|r| from + r);
    examined(hay.len(), from, found.map(|f| f + 1));
    found
}

/// A hash of an element name up to ASCII case (FNV-1a of the lowercased bytes), so that an end
/// tag is compared with the open elements by a number first.
#[inline]
fn name_hash(name: &[u8]) -> u32 {
    name.iter().fold(0x811c_9dc5u32, |h, &c| (h ^ u32::from(c.to_ascii_lowercase())).wrapping_mul(0x0100_0193))
}

/// The bucket of [`Parser::buckets`] a name hash counts in.
#[inline]
fn bucket(h: u32) -> usize {
    (h >> 24) as usize
}

struct Parser<'a, 'o> {
    tree: &'a mut TagTree,
    src: &'a str,
    b: &'a [u8],
    opts: &'a ParseOptions<'o>,
    /// The innermost open element.
    cur: u32,
    /// Open elements, outermost first: `open[..depth]`, each its node id and [`name_hash`].
    open: [(u32, u32); TAG_MAX_DEPTH],
    depth: usize,
    /// How many open elements' name hashes fall in each [`bucket`]: an end tag whose bucket is
    /// empty matches no open element, and is known so without a walk.
    buckets: [u8; 256],
    /// Start tags dropped for depth whose end tags are still to come.
    skipped_open: u32,
    /// Per text element: no end tag for it exists at or after this offset.
    no_close_from: [usize; MAX_TEXT_ELEMENTS],
}

impl TagTree {
    /// Parses `input` into this tree, replacing what it held. Never fails: what had to be
    /// recovered, and any capacity reached, is in the returned report (also [`TagTree::report`]).
    pub fn parse(&mut self, input: &str, opts: &ParseOptions<'_>) -> &ParseReport {
        self.reset();
        let mut p = Parser {
            src: input,
            b: input.as_bytes(),
            opts,
            cur: 0,
            open: [(0, 0); TAG_MAX_DEPTH],
            depth: 0,
            buckets: [0; 256],
            skipped_open: 0,
            no_close_from: [usize::MAX; MAX_TEXT_ELEMENTS],
            tree: self,
        };
        let _ = p.run();
        p.finish();
        &self.report
    }
}

impl Parser<'_, '_> {
    fn run(&mut self) -> Result<(), Stop> {
        let len = self.b.len();
        let mut pos = 0;
        let mut text_from = 0;
        while let Some(lt) = find_byte(self.b, pos, b'<') {
            // In a run of `<` only the last can open markup (`<` starts none), so the run is
            // stepped over at once, not searched `<` by `<`.
            let lt = lt + bytes::run_of(bytes::skip(self.b, lt + 1), b'<');
            match self.markup(lt, text_from)? {
                Markup::Text => pos = lt + 1,
                Markup::Truncated => {
                    // A tag cut by the end of the input: keep the text before it, drop it.
                    self.text(text_from, lt, true)?;
                    self.tree.report.truncated_at.get_or_insert(lt as u32);
                    return Ok(());
                }
                Markup::Done(end) => {
                    pos = end;
                    text_from = end;
                }
            }
        }
        self.text(text_from, len, true)
    }

    /// Handles the markup at `lt` (a `<`); text before it (from `text_from`) is flushed first
    /// when the `<` turns out to be markup.
    fn markup(&mut self, lt: usize, text_from: usize) -> Result<Markup, Stop> {
        let b = self.b;
        let next = b.get(lt + 1).copied();
        match next {
            Some(b'!') => {
                if b.get(lt..lt + 4) == Some(b"<!--") {
                    self.text(text_from, lt, true)?;
                    return Ok(match find(b, lt + 4, b.len(), b"-->") {
                        Some(e) => Markup::Done(e + 3),
                        None => self.cut(lt),
                    });
                }
                if b.get(lt..lt + 9) == Some(CDATA) {
                    self.text(text_from, lt, true)?;
                    return match find(b, lt + 9, b.len(), b"]]>") {
                        Some(e) => {
                            self.text(lt + 9, e, false)?;
                            Ok(Markup::Done(e + 3))
                        }
                        None => {
                            self.text(lt + 9, b.len(), false)?;
                            Ok(self.cut(lt))
                        }
                    };
                }
                if b.get(lt + 2).is_some_and(|c| c.is_ascii_alphabetic()) {
                    return self.skip_to(lt, text_from, b">");
                }
                Ok(Markup::Text)
            }
            Some(b'?') => {
                if b.get(lt + 2).is_some_and(|&c| is_name_start(c)) {
                    return self.skip_to(lt, text_from, b"?>");
                }
                Ok(Markup::Text)
            }
            Some(b'/') => self.end_tag(lt, text_from),
            Some(c) if is_name_start(c) => self.start_tag(lt, text_from),
            _ => Ok(Markup::Text),
        }
    }

    /// Skips a declaration or processing instruction up to `close`.
    fn skip_to(&mut self, lt: usize, text_from: usize, close: &[u8]) -> Result<Markup, Stop> {
        self.text(text_from, lt, true)?;
        let found = match close {
            [c] => find_byte(self.b, lt + 2, *c),
            _ => find(self.b, lt + 2, self.b.len(), close),
        };
        Ok(match found {
            Some(e) => Markup::Done(e + close.len()),
            None => self.cut(lt),
        })
    }

    /// Records that the input ended inside the markup at `lt` (text before it already
    /// flushed) and ends the parse there.
    fn cut(&mut self, lt: usize) -> Markup {
        self.tree.report.truncated_at.get_or_insert(lt as u32);
        Markup::Done(self.b.len())
    }

    fn end_tag(&mut self, lt: usize, text_from: usize) -> Result<Markup, Stop> {
        let b = self.b;
        let name_at = lt + 2;
        let n = name_len(bytes::skip(b, name_at));
        if n == 0 {
            return Ok(Markup::Text);
        }
        // Tolerate junk between the name and `>`, but not another `<`. (Most end tags have
        // none: no search for those.)
        let after = name_at + n;
        let gt = if b.get(after) == Some(&b'>') { Some(after) } else { find_either(b, after, b'>', b'<') };
        let i = match gt {
            None => return Ok(Markup::Truncated),
            Some(i) if b.get(i) == Some(&b'<') => return Ok(Markup::Text),
            Some(i) => i,
        };
        self.text(text_from, lt, true)?;
        // A name starts after `<` or `</` and ends before an ASCII byte or at the end.
        let name = bytes::ascii_cut(self.src, name_at, name_at + n);
        self.close(name, lt);
        Ok(Markup::Done(i + 1))
    }

    /// Closes the nearest open element named `name`, and every open element inside it.
    fn close(&mut self, name: &str, at: usize) {
        let h = name_hash(name.as_bytes());
        let open = bytes::take(&self.open, self.depth);
        let tree = &*self.tree;
        let matched = if self.buckets.get(bucket(h)).is_some_and(|&n| n > 0) {
            open.iter().rposition(|&(id, oh)| {
                oh == h && tree.rec(id).is_some_and(|r| tree.str_of(r.span).eq_ignore_ascii_case(name))
            })
        } else {
            None
        };
        let Some(k) = matched else {
            if self.skipped_open > 0 {
                // Most likely the end tag of a start tag dropped for depth.
                self.skipped_open -= 1;
                return;
            }
            let rep = &mut self.tree.report;
            rep.unmatched_end_tags += 1;
            rep.first_unmatched_end_tag.get_or_insert(at as u32);
            return;
        };
        // Everything opened inside it lost its end tag.
        let inner = self.depth - k - 1;
        if inner > 0 {
            self.tree.report.implicitly_closed += inner as u32;
            let outermost = open.get(k + 1).and_then(|&(id, _)| self.tree.rec(id)).map(|r| r.offset);
            if let Some(o) = outermost {
                self.tree.report.first_implicitly_closed.get_or_insert(o);
            }
        }
        if let Some(&(id, _)) = self.open.get(k) {
            if let Some(rm) = self.tree.nodes.get_mut(id as usize) {
                rm.flags |= F_CLOSED;
            }
        }
        self.pop_to(k);
    }

    /// Leaves the open elements `open[depth..]`: the innermost open one is then `open[depth - 1]`.
    fn pop_to(&mut self, depth: usize) {
        while self.depth > depth {
            self.depth -= 1;
            if let Some(&(_, h)) = self.open.get(self.depth) {
                if let Some(n) = self.buckets.get_mut(bucket(h)) {
                    *n = n.saturating_sub(1);
                }
            }
        }
        self.cur = match self.depth.checked_sub(1) {
            Some(top) => self.open.get(top).map_or(0, |&(id, _)| id),
            None => 0,
        };
    }

    fn start_tag(&mut self, lt: usize, text_from: usize) -> Result<Markup, Stop> {
        let b = self.b;
        let name_at = lt + 1;
        let n = name_len(bytes::skip(b, name_at));
        let mut i = name_at + n;
        let mut type_attr: Option<(usize, usize)> = None;
        let mut key_attr: Option<(usize, usize)> = None;
        let self_closing;
        // Attributes: `name`, `name=value`, `name="value"`, `name='value'`, in any amount.
        loop {
            match b.get(i) {
                None => return Ok(Markup::Truncated),
                Some(b'<') => return Ok(Markup::Text),
                Some(b'>') => {
                    self_closing = false;
                    break;
                }
                Some(b'/') if b.get(i + 1) == Some(&b'>') => {
                    self_closing = true;
                    i += 1;
                    break;
                }
                Some(&c) if is_space(c) || c == b'/' => i += 1,
                Some(_) => {
                    let an = i;
                    let rest = bytes::skip(b, an);
                    let an_len = rest
                        .iter()
                        .position(|&c| is_space(c) || matches!(c, b'=' | b'>' | b'<' | b'/'))
                        .unwrap_or(rest.len());
                    let attr_name = bytes::take(rest, an_len);
                    i = an + an_len;
                    if an == i {
                        // A stray `=`: skip it.
                        i += 1;
                        continue;
                    }
                    while b.get(i).is_some_and(|&c| is_space(c)) {
                        i += 1;
                    }
                    if b.get(i) != Some(&b'=') {
                        continue;
                    }
                    i += 1;
                    while b.get(i).is_some_and(|&c| is_space(c)) {
                        i += 1;
                    }
                    let value = match b.get(i) {
                        None => return Ok(Markup::Truncated),
                        Some(&q @ (b'"' | b'\'')) => {
                            let vs = i + 1;
                            let j = match find_either(b, vs, q, b'<') {
                                None => return Ok(Markup::Truncated),
                                Some(j) if b.get(j) == Some(&b'<') => return Ok(Markup::Text),
                                Some(j) => j,
                            };
                            i = j + 1;
                            (vs, j)
                        }
                        Some(_) => {
                            let vs = i;
                            while b.get(i).is_some_and(|&c| !is_space(c) && !matches!(c, b'>' | b'<')) {
                                i += 1;
                            }
                            (vs, i)
                        }
                    };
                    if attr_name.eq_ignore_ascii_case(b"type") {
                        type_attr = Some(value);
                    } else if attr_name.eq_ignore_ascii_case(b"key") {
                        key_attr = Some(value);
                    }
                }
            }
        }
        let end = i + 1;
        self.text(text_from, lt, true)?;
        // As in `end_tag`: the name's ends are at ASCII bytes.
        let name = bytes::ascii_cut(self.src, name_at, name_at + n);
        let opened = self.open(name, lt, type_attr, key_attr, self_closing)?;
        if opened && !self_closing {
            if let Some(idx) = self.text_element_index(name.as_bytes()) {
                if let Some(done) = self.text_element(idx, name, end)? {
                    return Ok(Markup::Done(done));
                }
            }
        }
        Ok(Markup::Done(end))
    }

    /// Creates an element under the current one. Returns false if it was dropped for depth.
    fn open(
        &mut self,
        name: &str,
        at: usize,
        type_attr: Option<(usize, usize)>,
        key_attr: Option<(usize, usize)>,
        self_closing: bool,
    ) -> Result<bool, Stop> {
        if self.depth >= TAG_MAX_DEPTH {
            self.tree.report.limit.get_or_insert((Limit::Depth, at as u32));
            if !self_closing {
                self.skipped_open += 1;
            }
            return Ok(false);
        }
        let span = self.push_raw(name, at)?;
        let mut rec = Rec {
            flags: F_ELEMENT | if self_closing { F_CLOSED } else { 0 },
            parent: self.cur,
            next: NONE,
            first: NONE,
            last: NONE,
            span,
            offset: at as u32,
            ..Rec::default()
        };
        if let Some((s, e)) = type_attr {
            rec.type_attr = self.push_decoded(s, e, at)?;
            rec.flags |= F_TYPE_ATTR;
        }
        if let Some((s, e)) = key_attr {
            rec.key_attr = self.push_decoded(s, e, at)?;
            rec.flags |= F_KEY_ATTR;
        }
        let id = self.link(rec, at)?;
        if !self_closing {
            let h = name_hash(name.as_bytes());
            if let Some(slot) = self.open.get_mut(self.depth) {
                *slot = (id, h);
            }
            if let Some(n) = self.buckets.get_mut(bucket(h)) {
                *n = n.saturating_add(1);
            }
            self.cur = id;
            self.depth += 1;
        }
        Ok(true)
    }

    /// Reads the content of text element `name` (index `idx` in the options) starting at
    /// `from` as text, up to its end tag. Returns where parsing resumes, or `None` when there
    /// is no end tag (the content is then parsed as markup).
    ///
    /// One scan finds the end tag (skipping CDATA sections); a second, only when the first met
    /// a CDATA section, splits the content between the two, never past the end tag. Both cover
    /// the content once, and parsing resumes after it.
    fn text_element(&mut self, idx: usize, name: &str, from: usize) -> Result<Option<usize>, Stop> {
        let b = self.b;
        let known_absent = self.no_close_from.get(idx).is_some_and(|&f| from >= f);
        if known_absent {
            return Ok(None);
        }
        // Find `</name` + spaces + `>`, skipping CDATA sections. The end tags of the other text
        // elements met on the way are noted (`seen`, a bit each): when the search fails having
        // looked at every `<` to the end (no CDATA section skipped: what a section hides from
        // this search, the parse may read as markup, if the `<![CDATA[` is inside a comment,
        // say), those not met have no end tag from here on either, and their searches need not
        // be made. Otherwise only this element's failure is remembered.
        let mut i = from;
        let mut first_cdata = None;
        let mut seen = 0u32;
        let (content_end, resume) = loop {
            let Some(lt) = find_byte(b, i, b'<') else {
                self.no_close_after(if first_cdata.is_none() { seen } else { !(1 << idx) }, from);
                return Ok(None);
            };
            // Only the last `<` of a run can open an end tag or a section.
            let lt = lt + bytes::run_of(bytes::skip(b, lt + 1), b'<');
            match b.get(lt + 1) {
                Some(b'/') => {
                    let ns = lt + 2;
                    let after_slash = bytes::skip(b, ns);
                    let n = name_len(after_slash);
                    let mut j = ns + n;
                    while b.get(j).is_some_and(|&c| is_space(c)) {
                        j += 1;
                    }
                    if n > 0 && b.get(j) == Some(&b'>') {
                        let end_name = bytes::take(after_slash, n);
                        if end_name.eq_ignore_ascii_case(name.as_bytes()) {
                            break (lt, j + 1);
                        }
                        if let Some(k) = self.text_element_index(end_name) {
                            seen |= 1 << k;
                        }
                    }
                }
                Some(b'!') if b.get(lt..lt + 9) == Some(CDATA) => {
                    first_cdata.get_or_insert(lt);
                    match find(b, lt + 9, b.len(), b"]]>") {
                        Some(e) => {
                            i = e + 3;
                            continue;
                        }
                        None => {
                            self.no_close_after(!(1 << idx), from);
                            return Ok(None);
                        }
                    }
                }
                _ => {}
            }
            i = lt + 1;
        };
        // The content: text with entities, and CDATA sections as they are.
        let mut i = from;
        let mut next_cdata = first_cdata;
        while let Some(cs) = next_cdata {
            self.text(i, cs, true)?;
            // The first scan skipped this section to its `]]>`, before the end tag.
            let ce = find(b, cs + 9, content_end, b"]]>").unwrap_or(content_end);
            self.text(cs + 9, ce, false)?;
            i = (ce + 3).min(content_end);
            next_cdata = find(b, i, content_end, CDATA);
        }
        self.text(i, content_end, true)?;
        if let Some(r) = self.tree.nodes.get_mut(self.cur as usize) {
            r.flags |= F_CLOSED;
        }
        self.pop_to(self.depth.saturating_sub(1));
        Ok(Some(resume))
    }

    /// Remembers that no text element outside `seen` (a bit per index) has an end tag at or
    /// after `from`.
    fn no_close_after(&mut self, seen: u32, from: usize) {
        for (k, f) in self.no_close_from.iter_mut().enumerate() {
            if seen & (1 << k) == 0 {
                *f = (*f).min(from);
            }
        }
    }

    /// The index of text element `name` in the options (ASCII case-insensitive), if it is one.
    fn text_element_index(&self, name: &[u8]) -> Option<usize> {
        let mut known = self.opts.text_elements.iter().take(MAX_TEXT_ELEMENTS);
        known.position(|t| t.len() == name.len() && t.as_bytes().eq_ignore_ascii_case(name))
    }

    /// Adds the text `src[from..to]` to the current element (decoding entities if `decode`),
    /// merged with a text node just before it. Whitespace-only text that would start a new node
    /// is dropped (it is layout between tags).
    fn text(&mut self, from: usize, to: usize, decode: bool) -> Result<(), Stop> {
        if from >= to {
            return Ok(());
        }
        // Text runs between markup: every end is a `<`, just past a `>` (or the `[`/`]]>` of a
        // CDATA section), or an end of the input.
        let raw = bytes::ascii_cut(self.src, from, to);
        let cur = self.tree.rec(self.cur).copied().unwrap_or_default();
        let last = self.tree.rec(cur.last).copied();
        let merge = match last {
            Some(l) => l.flags & F_ELEMENT == 0 && l.span.end() == self.tree.text.len(),
            None => false,
        };
        if !merge && raw.bytes().all(is_space) {
            return Ok(());
        }
        if raw.len() > self.tree.text_room() {
            self.tree.report.limit.get_or_insert((Limit::Text, from as u32));
            return Err(Stop);
        }
        let start = self.tree.text.len();
        if decode {
            decode_into(&mut self.tree.text, raw);
        } else {
            self.tree.text.push_str(raw);
        }
        let added = (self.tree.text.len() - start) as u32;
        if merge {
            if let Some(l) = self.tree.nodes.get_mut(cur.last as usize) {
                l.span.len += added;
            }
            return Ok(());
        }
        let rec = Rec {
            flags: 0,
            parent: self.cur,
            next: NONE,
            first: NONE,
            last: NONE,
            span: Span { start: start as u32, len: added },
            offset: from as u32,
            ..Rec::default()
        };
        self.link(rec, from).map(|_| ())
    }

    /// Appends a node as the last child of its parent.
    #[inline]
    fn link(&mut self, rec: Rec, at: usize) -> Result<u32, Stop> {
        if self.tree.nodes.len() >= self.tree.max_nodes() {
            self.tree.report.limit.get_or_insert((Limit::Nodes, at as u32));
            return Err(Stop);
        }
        let id = self.tree.nodes.len() as u32;
        let parent = rec.parent;
        self.tree.nodes.push(rec);
        let prev_last = match self.tree.nodes.get_mut(parent as usize) {
            Some(p) => {
                let prev = p.last;
                if p.first == NONE {
                    p.first = id;
                }
                p.last = id;
                prev
            }
            None => NONE,
        };
        if let Some(pl) = self.tree.nodes.get_mut(prev_last as usize) {
            pl.next = id;
        }
        Ok(id)
    }

    fn push_raw(&mut self, s: &str, at: usize) -> Result<Span, Stop> {
        match self.tree.push_text(s) {
            Some(span) => Ok(span),
            None => {
                self.tree.report.limit.get_or_insert((Limit::Text, at as u32));
                Err(Stop)
            }
        }
    }

    fn push_decoded(&mut self, s: usize, e: usize, at: usize) -> Result<Span, Stop> {
        // An attribute value: after a quote, `=` or a space, up to a quote, a space, `>`, `<` or
        // the end of the input.
        let raw = bytes::ascii_cut(self.src, s, e);
        if raw.len() > self.tree.text_room() {
            self.tree.report.limit.get_or_insert((Limit::Text, at as u32));
            return Err(Stop);
        }
        let start = self.tree.text.len();
        decode_into(&mut self.tree.text, raw);
        Ok(Span { start: start as u32, len: (self.tree.text.len() - start) as u32 })
    }

    /// Records the elements still open at the end of the input.
    fn finish(&mut self) {
        let open = bytes::take(&self.open, self.depth);
        for &(id, _) in open {
            if let Some(r) = self.tree.nodes.get_mut(id as usize) {
                r.flags |= F_CUT;
            }
        }
        if let Some(offset) = open.first().and_then(|&(id, _)| self.tree.rec(id)).map(|r| r.offset) {
            self.tree.report.unclosed_at_end = open.len() as u32;
            self.tree.report.first_unclosed_at_end = Some(offset);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tag::Node;

    /// The tree as `name[children]` / `"text"`, for comparisons.
    fn dump(n: Node<'_>, out: &mut String) {
        let mut stack = vec![(n, false)];
        while let Some((n, done)) = stack.pop() {
            if done {
                out.push(']');
                continue;
            }
            if n.is_element() {
                out.push_str(n.name());
                if let Some(t) = n.attr_type() {
                    out.push_str(&format!("(type={t})"));
                }
                if let Some(k) = n.attr_key() {
                    out.push_str(&format!("(key={k})"));
                }
                if !n.is_closed() {
                    out.push('~');
                }
                out.push('[');
                stack.push((n, true));
                let kids: Vec<_> = n.children().collect();
                for k in kids.into_iter().rev() {
                    stack.push((k, false));
                }
            } else {
                out.push_str(&format!("{:?}", n.text()));
            }
        }
    }

    fn parse_with(input: &str, text_elements: &[&str]) -> (String, ParseReport) {
        let mut t = TagTree::with_capacity(1000, 10_000);
        let opts = ParseOptions { text_elements };
        let rep = *t.parse(input, &opts);
        let mut s = String::new();
        for c in t.root().children() {
            dump(c, &mut s);
        }
        (s, rep)
    }

    fn p(input: &str) -> String {
        parse_with(input, &[]).0
    }

    #[test]
    fn elements_text_and_layout() {
        assert_eq!(p("<a>x</a>"), r#"a["x"]"#);
        assert_eq!(p("<a>\n  <b>1</b>\n  <c/>\n</a>"), r#"a[b["1"]c[]]"#);
        assert_eq!(p("prose <a> x </a> more"), r#""prose "a[" x "]" more""#);
        assert_eq!(p("<A>x</a>"), r#"A["x"]"#);
    }

    #[test]
    fn lone_less_than_is_text() {
        assert_eq!(p("<v>a < b</v>"), r#"v["a < b"]"#);
        assert_eq!(p("<v>x<3 and y>2</v>"), r#"v["x<3 and y>2"]"#);
        assert_eq!(p("<v>if a<b and c<d then</v>"), r#"v["if a<b and c<d then"]"#);
        assert_eq!(p("<v><<>></v>"), r#"v["<<>>"]"#);
        assert_eq!(p("<v>1 </ 2</v>"), r#"v["1 </ 2"]"#);
    }

    #[test]
    fn entities_cdata_comments_declarations() {
        assert_eq!(p("<v>&lt;b&gt; &amp;amp; &#x41; &nbsp; &#0;</v>"), r#"v["<b> &amp; A &nbsp; &#0;"]"#);
        assert_eq!(p("<v>a<![CDATA[<x> &amp;]]>b</v>"), r#"v["a<x> &amp;b"]"#);
        assert_eq!(p("<?xml version=\"1.0\"?><!DOCTYPE x><v>a<!-- <b> -->c</v>"), r#"v["ac"]"#);
    }

    #[test]
    fn attributes_are_tolerated_and_type_key_kept() {
        assert_eq!(
            p(r#"<action type="storage_save" id=3 x='y>z'><tags>a</tags></action>"#),
            r#"action(type=storage_save)[tags["a"]]"#
        );
        assert_eq!(p(r#"<entry key="a &quot;b&quot;"/>"#), r#"entry(key=a "b")[]"#);
        assert_eq!(p("<action type=save>x</action>"), r#"action(type=save)["x"]"#);
        assert_eq!(p("<a disabled>x</a>"), r#"a["x"]"#);
    }

    #[test]
    fn recovery_from_unclosed_and_mismatched_tags() {
        let (t, r) = parse_with("<a><b>x</a><c>y</c>", &[]);
        assert_eq!(t, r#"a[b~["x"]]c["y"]"#);
        assert_eq!(r.implicitly_closed, 1);
        let (t, r) = parse_with("<a>x</b></a>", &[]);
        assert_eq!(t, r#"a["x"]"#);
        assert_eq!(r.unmatched_end_tags, 1);
        assert_eq!(r.first_unmatched_end_tag, Some(4));
        let (t, r) = parse_with("<a><b>x", &[]);
        assert_eq!(t, r#"a~[b~["x"]]"#);
        assert_eq!((r.unclosed_at_end, r.first_unclosed_at_end), (2, Some(0)));
        let (t, r) = parse_with("<a>x</a><val", &[]);
        assert_eq!(t, r#"a["x"]"#);
        assert_eq!(r.truncated_at, Some(8));
        let (_, r) = parse_with("<a>x<!-- never", &[]);
        assert_eq!(r.truncated_at, Some(4));
    }

    #[test]
    fn text_elements_keep_tags_as_text() {
        let te = &["value"];
        assert_eq!(
            parse_with("<value>use <b>bold</b> &amp; <![CDATA[</value>]]></value>", te).0,
            r#"value["use <b>bold</b> & </value>"]"#
        );
        // Without its end tag, the content is parsed as markup.
        assert_eq!(parse_with("<a><value>x</a>", te).0, r#"a[value~["x"]]"#);
        assert_eq!(parse_with("<value></VALUE >", te).0, r#"value[]"#);
    }

    #[test]
    fn limits_are_reported() {
        let mut t = TagTree::with_capacity(4, 100);
        let r = *t.parse("<a><b><c><d>x</d></c></b></a>", &ParseOptions::default());
        assert_eq!(r.limit.map(|l| l.0), Some(Limit::Nodes));
        let mut t = TagTree::with_capacity(100, 5);
        let r = *t.parse("<a>0123456789</a>", &ParseOptions::default());
        assert_eq!(r.limit.map(|l| l.0), Some(Limit::Text));
        let deep = "<x>".repeat(TAG_MAX_DEPTH + 5) + "t" + &"</x>".repeat(TAG_MAX_DEPTH + 5);
        let mut t = TagTree::with_capacity(1000, 1000);
        let r = *t.parse(&deep, &ParseOptions::default());
        assert_eq!(r.limit.map(|l| l.0), Some(Limit::Depth));
        assert_eq!(r.unmatched_end_tags, 0);
        assert_eq!(t.root().descendants().filter(|n| n.is_element()).count(), TAG_MAX_DEPTH + 1);
    }

    /// Bytes the searches of one parse of `input` examined, per byte of input.
    fn examined_per_byte(input: &str, text_elements: &[&str]) -> f64 {
        let mut t = TagTree::with_capacity(1 << 16, 1 << 22);
        examined::take();
        t.parse(input, &ParseOptions { text_elements });
        // (Depth drops tags and goes on; the other limits would stop the parse short.)
        assert!(!matches!(t.report().limit, Some((Limit::Nodes | Limit::Text, _))), "{:?}", t.report());
        examined::take() as f64 / input.len().max(1) as f64
    }

    #[test]
    fn every_search_stays_within_a_few_passes_over_the_input() {
        let te = &["value", "think_log", "query"];
        let value = |i: usize| {
            format!("<action><type>t</type><tags>k{i}</tags><value>text {i} &amp; more words</value></action>\n")
        };
        let cases: Vec<(&str, String)> = vec![
            ("values", (0..3000).map(value).collect()),
            ("values with CDATA", (0..3000).map(|i| format!("<value>a <![CDATA[<b>{i}</b>]]> b</value>")).collect()),
            ("comments", (0..3000).map(|i| format!("<a>x<!-- note {i} -->y</a>")).collect()),
            ("declarations", (0..3000).map(|i| format!("<?pi {i}?><!DOCTYPE d{i}><a>x</a>")).collect()),
            ("less-than noise", "x < y, a<3, <<>> </ 2 ".repeat(3000)),
            ("unclosed text elements", "<value>x".repeat(3000)),
            ("end tags", (0..3000).map(|i| format!("<a>{i}</b></a junk>")).collect()),
        ];
        for (name, input) in &cases {
            let per_byte = examined_per_byte(input, te);
            assert!(per_byte <= 4.0, "{name}: {per_byte:.1} bytes examined per input byte");
        }
        // Every text element opened and never closed: one search finds that none of them is
        // closed, not one search each.
        let all = &["value", "data", "think_log", "thinking_log", "evaluation_log", "query", "metadata", "rationale"];
        let opened: String = all.iter().map(|t| format!("<{t}>")).collect();
        let cases = [("all text elements unclosed", opened.clone() + &"x<y ".repeat(20_000))];
        for (name, input) in &cases {
            let per_byte = examined_per_byte(input, all);
            assert!(per_byte <= 4.0, "{name}: {per_byte:.1} bytes examined per input byte");
        }
        // Doubling the input doubles the work, give or take.
        let (n, n2): (String, String) = ((0..2000).map(value).collect(), (0..4000).map(value).collect());
        let (a, b) = (examined_per_byte(&n, te), examined_per_byte(&n2, te));
        assert!(b <= a * 1.1, "{a:.2} then {b:.2} bytes examined per input byte");
    }

    #[test]
    fn many_unclosed_text_elements_stay_linear() {
        let input = "<value>".repeat(20_000);
        let mut t = TagTree::with_capacity(100_000, 1 << 20);
        let r = *t.parse(&input, &ParseOptions { text_elements: &["value"] });
        assert_eq!(r.limit.map(|l| l.0), Some(Limit::Depth));
    }
}
