//! Filling `store.vec`: asking the embeddings endpoint for the vectors of entries that have
//! none current, a bounded number per cycle, and backing off while it fails.

use super::*;

impl Vectors {
    /// Whether the endpoint may be asked now (not waiting out a failure).
    pub(super) fn may_ask(&mut self) -> bool {
        !matches!(self.retry_at, Some(t) if Instant::now() < t)
    }

    /// Notes an endpoint failure: the first one warns; the wait doubles.
    pub(super) fn failed(&mut self, e: crate::error::Error) {
        if !self.warned {
            e.context(format_args!(
                "recall by meaning is off for now, search uses words only; the endpoint is tried again in {} s",
                self.backoff.as_secs()
            ))
            .print_warning();
            self.warned = true;
            self.warnings += 1;
        }
        let now = Instant::now();
        self.retry_at = Some(now.checked_add(self.backoff).unwrap_or(now));
        self.backoff = self.backoff.saturating_mul(2).min(Duration::from_secs(EMBED_BACKOFF_MAX_SECS));
    }

    pub(super) fn answered(&mut self) {
        self.retry_at = None;
        self.warned = false;
        self.backoff = Duration::from_secs(EMBED_BACKOFF_BASE_SECS);
    }

    pub(super) fn fill(&mut self, store: &mut Store, max: usize, should_stop: &dyn Fn() -> bool) -> Result<Filled> {
        let mut done = Filled::default();
        if self.read_only {
            bail!(
                PersistFailed,
                "{}: vectors are filled by the agent (or `memory embed`), not by a reader",
                self.path.display()
            );
        }
        self.follow(store)?;
        let next = store.slots.next_id();
        if next == 0 || max == 0 || !self.may_ask() {
            return Ok(done);
        }
        let mut looked = 0usize;
        let scan = EMBED_SCAN_PER_CYCLE.min(next);
        while looked < scan && done.embedded < max {
            self.batch_ids.clear();
            let batch_start = self.cursor;
            let want = (max - done.embedded).min(self.embedder.batch()).min(EMBED_BATCH_MAX);
            while looked < scan && self.batch_ids.len() < want {
                let id = (self.cursor % next) as EntryId;
                self.cursor = (self.cursor + 1) % next;
                looked += 1;
                let Some(s) = store.slots.get(id) else { continue };
                if self.held.get(id as usize).copied() != Some(stamp(s.created, s.ver)) {
                    self.batch_ids.push(id);
                }
            }
            if self.batch_ids.is_empty() {
                break;
            }
            match self.embed_batch(store, should_stop) {
                Ok(n) => {
                    self.answered();
                    done.embedded += n;
                }
                Err(e) if is_endpoint_failure(&e) => {
                    self.failed(e);
                    done.missing += self.batch_ids.len();
                    // The entries are looked at again on the next fill.
                    self.cursor = batch_start;
                    return Ok(done);
                }
                Err(e) => return Err(e),
            }
        }
        self.compact_if_due(store)?;
        Ok(done)
    }

    /// Embeds the entries of `batch_ids` and appends their records (one write, one sync).
    pub(super) fn embed_batch(&mut self, store: &mut Store, should_stop: &dyn Fn() -> bool) -> Result<usize> {
        self.batch_text.clear();
        self.batch_ends.clear();
        let mut ids_ok = 0usize;
        for i in 0..self.batch_ids.len() {
            let Some(&id) = self.batch_ids.get(i) else { break };
            let Some(key) = store.key(id) else { continue };
            self.batch_text.push_str(key.as_str());
            self.batch_text.push_str(": ");
            let value = store.value(id)?;
            self.batch_text.push_str(head(value, EMBED_TEXT_MAX_BYTES));
            self.batch_ends.push(self.batch_text.len());
            if let Some(slot) = self.batch_ids.get_mut(ids_ok) {
                *slot = id;
            }
            ids_ok += 1;
        }
        self.batch_ids.truncate(ids_ok);
        let mut texts: [&str; EMBED_BATCH_MAX] = [""; EMBED_BATCH_MAX];
        let mut from = 0usize;
        for (t, &end) in texts.iter_mut().zip(self.batch_ends.iter()) {
            *t = self.batch_text.get(from..end).unwrap_or("");
            from = end;
        }
        let n = ids_ok;
        let texts = texts.get(..n).unwrap_or(&[]);
        let dim = self.dim;
        self.embedder.embed(TextKind::Document, texts, &mut self.floats, should_stop)?;
        // The records, then one positioned write at the end of the file and a sync.
        let rl = self.rec_len;
        if self.owner.len() + n > self.max_records {
            self.compact(store)?;
            if self.owner.len() + n > self.max_records {
                bail!(CapacityExceeded, "{}: no room for {} more records", self.path.display(), n);
            }
        }
        for (i, &id) in self.batch_ids.iter().enumerate() {
            let Some(s) = store.slots.get(id) else { continue };
            let Some(key) = store.key(id) else { continue };
            let v = self.floats.get(i * dim..(i + 1) * dim).unwrap_or(&[]);
            let scale = quantize(v, &mut self.qbuf);
            if let Some(rec) = self.out.get_mut(i * rl..(i + 1) * rl) {
                encode(rec, key_hash(&key), stamp(s.created, s.ver), scale, &self.qbuf);
            }
        }
        let Some(file) = self.file.as_ref() else { bail!(Internal, "{} is not open", self.path.display()) };
        let at = HEADER_BYTES + self.records * rl as u64;
        let bytes = self.out.get(..n * rl).unwrap_or(&[]);
        file.write_all_at(bytes, at)
            .and_then(|_| file.sync_data())
            .map_err(|e| err!(PersistFailed, "appending to {} failed: {}", self.path.display(), e))?;
        for (i, &id) in self.batch_ids.iter().enumerate() {
            let st = self.out.get(i * rl..(i + 1) * rl).map_or(0, |r| le_u32(r, 8));
            if let Some(h) = self.held.get_mut(id as usize) {
                if *h == 0 {
                    self.current += 1;
                }
                *h = st;
            }
            self.owner.push(id);
        }
        self.records += n as u64;
        self.embedded += n as u64;
        Ok(n)
    }
}
