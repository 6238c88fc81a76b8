//! A merge's words, one at a time: each word of base and delta in byte order, its postings
//! counted and written in blocks, its skip table and dictionary entry. A word whose postings
//! outlast a step stays in hand ([`super::InHand`]) and the next step goes on with it.

use super::*;

impl Progress {
    /// The words of base and delta in byte order, each with its current postings in
    /// blocks and its skip table, and its dictionary entry; `true` once all are written. A
    /// word whose postings outlast the step is left in hand, between two of its blocks, and
    /// the next step goes on with it.
    pub(super) fn words(
        &mut self,
        base: &mut DiskIndex,
        delta: &FullText,
        sc: &mut WriteScratch,
        (out, dout): (&mut Out<'_>, &mut Out<'_>),
        (term_buf, skip_buf): (&mut Vec<u8>, &mut Vec<u8>),
        deadline: Option<Instant>,
    ) -> Result<bool> {
        loop {
            if self.hand.is_none() {
                let mut word = [0u8; 256];
                let dword = sc.sorted.get(self.di).map(|&t| delta.term_text(t));
                let bw = self.bnext.map(|(len, _)| self.bword.get(..len).unwrap_or(&[]));
                let (src, len) = match (bw, dword) {
                    (None, None) => return Ok(true),
                    (Some(b), d) if d.is_none_or(|d| b < d) => {
                        let len = b.len();
                        word.get_mut(..len).unwrap_or(&mut []).copy_from_slice(b);
                        (Source { base: self.bnext.map(|x| x.1), term: None }, len)
                    }
                    (Some(b), Some(d)) if b == d => {
                        let len = b.len();
                        word.get_mut(..len).unwrap_or(&mut []).copy_from_slice(b);
                        (Source { base: self.bnext.map(|x| x.1), term: sc.sorted.get(self.di).copied() }, len)
                    }
                    (_, Some(d)) => {
                        let len = d.len();
                        word.get_mut(..len).unwrap_or(&mut []).copy_from_slice(d);
                        (Source { base: None, term: sc.sorted.get(self.di).copied() }, len)
                    }
                    (Some(_), None) => return Ok(true),
                };
                if src.base.is_some() {
                    self.bnext = base.next_word(&mut self.cursor, &mut self.bword)?;
                }
                if src.term.is_some() {
                    self.di += 1;
                }
                self.hand = Some(self.begin(base, (term_buf, skip_buf), (word, len, src))?);
            }
            if !self.word(base, delta, sc, (out, dout), (term_buf, skip_buf), deadline)? {
                return Ok(false);
            }
            if over(deadline) {
                return Ok(false);
            }
        }
    }

    /// A word taken in hand: its blocks a clean base keeps as they are (no document taken
    /// out: renumbering changes nothing; all of them when the delta adds nothing, else all
    /// but a last one not full, encoded again with the delta's postings), and where its
    /// walk starts.
    fn begin(
        &self,
        base: &mut DiskIndex,
        (term_buf, skip_buf): (&mut Vec<u8>, &mut Vec<u8>),
        (word, len, src): ([u8; 256], usize, Source),
    ) -> Result<InHand> {
        skip_buf.clear();
        let copied = match src.base.filter(|_| self.clean) {
            Some(b) => Some(base.full_blocks(&b, src.term.is_none(), skip_buf)?),
            None => None,
        };
        let c = copied.unwrap_or_default();
        let (mean, from) = match (copied, src.base) {
            (Some(_), Some(b)) => (b.mean, c.last.map_or(0, |l| l + 1)),
            _ => (self.mean, 0),
        };
        let skip_copied = skip_buf.len();
        let enc = Enc::after(term_buf, skip_buf, &c, mean, 0);
        enc.buf.clear();
        Ok(InHand {
            word,
            len,
            src,
            copied,
            mean,
            from,
            skip_copied,
            next: Resume::from(from),
            enc: enc.at(),
            counted: None,
        })
    }

    /// The word in hand: its postings counted (kept in the term buffer if they fit), its
    /// entry and copied blocks written, its postings written (from the buffer, or walked
    /// again), its skip table and dictionary entry. Each walk stops at the end of a block
    /// once `deadline` has passed (`false`: the word stays in hand).
    fn word(
        &mut self,
        base: &mut DiskIndex,
        delta: &FullText,
        sc: &mut WriteScratch,
        (out, dout): (&mut Out<'_>, &mut Out<'_>),
        (term_buf, skip_buf): (&mut Vec<u8>, &mut Vec<u8>),
        deadline: Option<Instant>,
    ) -> Result<bool> {
        let Some(mut h) = self.hand.take() else { return Ok(true) };
        let c = h.copied.unwrap_or_default();
        let counted = match h.counted {
            Some(counted) => counted,
            None => {
                // Count: postings, bytes, blocks (kept in the term buffer if they fit).
                let mut enc = Enc::resume(term_buf, skip_buf, &h.enc);
                let walked = &mut self.walked;
                let stop = each_posting(base, delta, sc, h.src, h.next, |nd, tf, l| {
                    *walked += 1;
                    enc.push(nd, tf, l, None)?;
                    Ok(enc.bn == 0 && over(deadline))
                })?;
                if let Some(next) = stop {
                    (h.next, h.enc) = (next, enc.at());
                    self.hand = Some(h);
                    return Ok(false);
                }
                enc.close(None, false)?;
                let Enc { n, bytes, blocks, prev, fits, most, .. } = enc;
                if n == 0 {
                    return Ok(true);
                }
                // The body: the word, its postings, its skip table.
                let w = h.word.get(..h.len).unwrap_or(&[]);
                let postings_at = HEADER_BYTES as u64 + out.len + 1 + h.len as u64 + 12;
                out.bytes(&[h.len as u8])?;
                out.bytes(w)?;
                out.bytes(&n.to_le_bytes())?;
                out.bytes(&blocks.to_le_bytes())?;
                out.bytes(&bytes.to_le_bytes())?;
                let mut word_crc = 0u32;
                if let (Some(b), Some(_)) = (h.src.base, h.copied) {
                    // The copied blocks; all the word's bytes read, to check them against its CRC.
                    let (mut at, mut left, mut check) = (b.at, u64::from(b.bytes), 0u32);
                    let mut keep = u64::from(c.bytes);
                    while left > 0 {
                        let k = left.min(sc.input.len() as u64) as usize;
                        let chunk = sc.input.get_mut(..k).unwrap_or(&mut []);
                        base.read_at(chunk, at)?;
                        check = crc32_continue(check, chunk);
                        let take = chunk.get(..(keep.min(k as u64)) as usize).unwrap_or(&[]);
                        out.bytes(take)?;
                        word_crc = crc32_continue(word_crc, take);
                        keep -= take.len() as u64;
                        at += k as u64;
                        left -= k as u64;
                    }
                    if check != b.crc {
                        bail!(Io, "store.fts is damaged (the postings of a word do not check out)");
                    }
                }
                let counted = Counted { n, bytes, blocks, last: prev.unwrap_or(0), most, postings_at };
                if fits {
                    out.bytes(term_buf)?;
                    word_crc = crc32_continue(word_crc, term_buf);
                    return self.word_end(sc, dout, (out, skip_buf), &h, counted, word_crc).map(|_| true);
                }
                // Walked again, to be written.
                skip_buf.truncate(h.skip_copied);
                let enc = Enc::after(term_buf, skip_buf, &c, h.mean, word_crc);
                enc.buf.clear();
                (h.next, h.enc, h.counted) = (Resume::from(h.from), enc.at(), Some(counted));
                counted
            }
        };
        let mut enc = Enc::resume(term_buf, skip_buf, &h.enc);
        let walked = &mut self.walked;
        let stop = each_posting(base, delta, sc, h.src, h.next, |nd, tf, l| {
            *walked += 1;
            enc.push(nd, tf, l, Some(&mut *out))?;
            Ok(enc.bn == 0 && over(deadline))
        })?;
        if let Some(next) = stop {
            (h.next, h.enc) = (next, enc.at());
            self.hand = Some(h);
            return Ok(false);
        }
        enc.close(Some(out), false)?;
        if (enc.n, enc.bytes, enc.blocks) != (counted.n, counted.bytes, counted.blocks) {
            bail!(Internal, "a word's postings changed between their count and their writing");
        }
        let word_crc = enc.crc;
        self.word_end(sc, dout, (out, skip_buf), &h, counted, word_crc).map(|_| true)
    }

    /// A word's skip table after its postings, and its dictionary entry.
    fn word_end(
        &mut self,
        sc: &mut WriteScratch,
        dout: &mut Out<'_>,
        (out, skip_buf): (&mut Out<'_>, &mut Vec<u8>),
        h: &InHand,
        counted: Counted,
        word_crc: u32,
    ) -> Result<()> {
        let Counted { n, bytes, blocks, last, most, postings_at } = counted;
        if blocks > 1 {
            for group in skip_buf.chunks(SKIP_GROUP * SKIP_ENTRY) {
                out.bytes(group)?;
                out.bytes(&crc32(group).to_le_bytes())?;
            }
        }
        // The dictionary, in pages of DICT_PAGE words.
        if (self.terms as usize).is_multiple_of(DICT_PAGE) {
            if self.terms > 0 {
                push_page(&mut sc.pages, self.page_crc)?;
            }
            push_page(&mut sc.pages, dout.len as u32)?;
            self.page_crc = 0;
        }
        let w = h.word.get(..h.len).unwrap_or(&[]);
        let len = h.len;
        let mut tail = [0u8; ENTRY_TAIL];
        let mut t = Put { buf: &mut tail, at: 0 };
        t.u32(n);
        t.u64(postings_at);
        t.u32(bytes);
        t.u32(word_crc);
        t.u32(last);
        t.u32(blocks);
        t.bytes(&most.to_le_bytes());
        t.u32(h.mean);
        dout.bytes(&[len as u8])?;
        dout.bytes(w)?;
        dout.bytes(&tail)?;
        self.page_crc = crc32_continue(crc32_continue(crc32_continue(self.page_crc, &[len as u8]), w), &tail);
        self.terms += 1;
        Ok(())
    }
}
