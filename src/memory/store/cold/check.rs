//! What `lkjagent check` says of the cold store's text index (`store.cold.fts`): read whole,
//! every byte checked against its CRC and every structure decoded as for `store.fts`, and
//! whether it was taken of what `store.cold` holds now (all of it, or a part the file still
//! starts with: the groups after it are read into the delta when it is next used).

use super::recall::{room_for_bytes, COLD_RECALL_NAME, TAIL_BYTES};
use super::COLD_NAME;
use crate::memory::hash::crc32;
use crate::memory::store::recall::disk::DiskIndex;
use crate::memory::store::recall::file::{verify_file, Header, RecallFile, HEADER_BYTES};
use crate::memory::store::Store;
use std::fs::File;
use std::os::unix::fs::FileExt;

impl Store {
    /// What `lkjagent check` reports about `store.cold.fts` (reads it whole; changes
    /// nothing): [`RecallFile::Usable`] with `covered` and `log_len` the bytes of
    /// `store.cold` it covers and has; `Stale` when it was taken of another state of
    /// `store.cold` (rebuilt at its next use), or is of another format.
    pub fn cold_recall_file_check(&mut self) -> RecallFile {
        let path = self.dir.join(COLD_RECALL_NAME);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return RecallFile::Missing,
            Err(e) => return RecallFile::Damaged(err!(Io, "opening {} failed: {}", path.display(), e)),
        };
        let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
        let mut raw = [0u8; HEADER_BYTES];
        if let Err(e) = file.read_exact_at(&mut raw, 0) {
            return RecallFile::Damaged(err!(Io, "{}: reading its header failed: {}", path.display(), e));
        }
        let h = match Header::parse(&raw) {
            Ok(h) => h,
            Err(e) if Header::other_format(&raw) => {
                return RecallFile::Stale(e.context(format_args!("{}", path.display())))
            }
            Err(e) => return RecallFile::Damaged(e.context(format_args!("{}", path.display()))),
        };
        let cold_path = self.dir.join(COLD_NAME);
        let cold = match File::open(&cold_path) {
            Ok(f) => f,
            Err(e) => {
                return RecallFile::Stale(err!(
                    Io,
                    "{} cannot be read ({}), so the index of it is of no use",
                    cold_path.display(),
                    e
                ))
            }
        };
        let len = cold.metadata().map(|m| m.len()).unwrap_or(0);
        // Taken of what store.cold starts with: its length, and the CRC of the 4 KiB before it.
        let start = h.covered.saturating_sub(TAIL_BYTES);
        let mut tail = vec![0u8; (h.covered.min(len) - start.min(len)) as usize];
        let taken = h.covered <= len && cold.read_exact_at(&mut tail, start).is_ok() && crc32(&tail) == h.tail;
        if !taken {
            return RecallFile::Stale(err!(
                Io,
                "{} was taken of another state of {} (it covers {} bytes, of {} now)",
                path.display(),
                COLD_NAME,
                h.covered,
                len
            ));
        }
        let room = room_for_bytes(len);
        if h.docs as usize > room {
            return RecallFile::Damaged(err!(
                Io,
                "{} lists {} documents, more than {} holds",
                path.display(),
                h.docs,
                COLD_NAME
            ));
        }
        let mut buf = core::mem::take(&mut self.rbuf);
        let res = verify_file(&file, &h, &mut buf);
        self.rbuf = buf;
        match res.and_then(|_| DiskIndex::check_file(file, h, room)) {
            Ok(()) => RecallFile::Usable { docs: h.docs, bytes, covered: h.covered, log_len: len },
            Err(e) => RecallFile::Damaged(e.context(format_args!("{}", path.display()))),
        }
    }
}
