//! Text search: the log read backwards in large blocks and scanned for the needle with the
//! shared byte search ([`crate::bytes`]), without decoding records that do not contain it.
//!
//! A hit in the raw bytes is only a candidate: the record around it must be the live `put` of
//! its entry (older versions and other records are garbage here), and its value, decoded, must
//! contain the needle (a needle can match escaped text, such as `n` in `\n`, that the value
//! does not hold). Results come most recently written first, and the scan stops when the
//! results are full.

use super::{EntryId, Store};
use crate::bytes::{find_byte, rfind_byte, rfind_ignore_ascii_case};
use crate::error::Result;
use crate::limits::STORE_SEARCH_MAX_BYTES;
use crate::memory::log::{self, Record, PREFIX_BYTES};
use crate::memory::query::{Archived, Hit, Results};

/// The entry id a record line names, if it is a `put` (read from its fixed prefix).
fn put_id(line: &[u8]) -> Option<EntryId> {
    const HEAD: &[u8] = b"{\"op\":\"put\",\"id\":";
    let rest = line.get(PREFIX_BYTES..)?.strip_prefix(HEAD)?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let text = core::str::from_utf8(rest.get(..digits)?).ok()?;
    text.parse().ok()
}

impl Store {
    /// Text search over values: entries whose value contains `needle` (ASCII case-insensitive),
    /// most recently written first, at most `max_results`. Reads at most
    /// [`STORE_SEARCH_MAX_BYTES`] of log per call; `out.truncated()` says the search stopped
    /// before the oldest record (results full, or the budget spent). An empty needle matches
    /// nothing.
    pub fn search_text(
        &mut self,
        needle: &str,
        archived: Archived,
        max_results: usize,
        out: &mut Results,
    ) -> Result<()> {
        out.clear();
        let needle = needle.as_bytes();
        if needle.is_empty() {
            return Ok(());
        }
        let limit = out.limit(max_results);
        let block = self.rbuf.capacity().max(crate::limits::STORE_RECORD_MAX_BYTES + 1);
        let mut buf = core::mem::take(&mut self.rbuf);
        let res = self.scan(needle, archived, limit, block, &mut buf, out);
        self.rbuf = buf;
        res
    }

    fn scan(
        &mut self,
        needle: &[u8],
        archived: Archived,
        limit: usize,
        block: usize,
        buf: &mut Vec<u8>,
        out: &mut Results,
    ) -> Result<()> {
        let floor = self.header_bytes;
        let mut end = self.log.len;
        let mut read = 0u64;
        while end > floor {
            if read >= STORE_SEARCH_MAX_BYTES {
                out.set_truncated();
                return Ok(());
            }
            let start = end.saturating_sub(block as u64).max(floor);
            let n = (end - start) as usize;
            buf.clear();
            buf.resize(n, 0);
            self.log.read_at(buf, start)?;
            read += n as u64;
            // Records start after a newline; the partial one at the front is read with the
            // next (earlier) block.
            let lo = if start == floor { 0 } else { find_byte(buf, b'\n').map_or(n, |i| i + 1) };
            if lo >= n {
                bail!(Io, "{}: a record longer than {} bytes before byte {}", self.log.path.display(), block, end);
            }
            let mut hi = n;
            while let Some(p) = buf.get(lo..hi).and_then(|w| rfind_ignore_ascii_case(w, needle)) {
                let p = lo + p;
                let rec_start = buf.get(lo..p).and_then(|w| rfind_byte(w, b'\n')).map_or(lo, |i| lo + i + 1);
                let rec_end = buf.get(p..hi).and_then(|w| find_byte(w, b'\n')).map_or(hi, |i| p + i);
                hi = rec_start;
                // `lo <= rec_start <= p <= rec_end <= hi <= n`.
                let line = crate::bytes::range(buf, rec_start, rec_end);
                let Some(id) = put_id(line) else { continue };
                let Some(s) = self.slots.get(id) else { continue };
                if s.offset != start + rec_start as u64 || !archived.admits(s.archived) {
                    continue; // an older version, or filtered out
                }
                let Ok(Record::Put { value_escaped, .. }) = log::decode(line) else { continue };
                self.vbuf.clear();
                log::decode_str(value_escaped, &mut self.vbuf)?;
                if !crate::bytes::contains_ignore_ascii_case(self.vbuf.as_bytes(), needle) {
                    continue;
                }
                let hit = Hit { id, relevance_ppm: 0, created: u64::from(s.created), hits: u64::from(s.hits) };
                if !out.push(hit, limit) {
                    out.set_matched(out.len());
                    out.set_truncated();
                    return Ok(());
                }
            }
            end = start + lo as u64;
        }
        Ok(())
    }
}
