//! Appending to the log: the one place that writes `store.log` between compactions.
//!
//! A record is written at the end of the log and `fdatasync`ed before the caller changes the
//! index and returns: an `Ok` means the change survives a `kill -9` or a power cut. Inside a
//! batch ([`LogFile::begin_batch`]) records are written as they come and synced once, at the
//! end of the batch. If a write or a sync fails (ENOSPC, EIO, ...), the log is cut back to its
//! length before the failed write (best effort), the error is `PERSIST_FAILED`, and the file
//! refuses further writes until it is reopened: after a failed `fsync` the kernel may have
//! dropped the dirty pages, so retrying it and trusting the answer would be a lie.

use crate::error::Result;
use crate::memory::nofollow;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The open log: its handle, its length as far as this process knows, and the write rules.
pub struct LogFile {
    pub(super) path: PathBuf,
    pub(super) file: File,
    /// Bytes of the log that hold whole records (what was replayed plus what was appended).
    pub(super) len: u64,
    poisoned: bool,
    read_only: bool,
    /// Within a batch: records written since the last sync.
    unsynced: bool,
    batch: bool,
    #[cfg(test)]
    pub(super) fail_next_write: bool,
}

impl LogFile {
    /// Opens (creating if absent) the log at `path` for reading and appending; never through a
    /// symbolic link (`IO`, naming it: see [`crate::memory::nofollow`]).
    pub fn open(path: &Path) -> Result<LogFile> {
        let file = nofollow::open(path, OpenOptions::new().read(true).write(true).create(true).truncate(false))?
            .map_err(|e| err!(Io, "opening {} failed: {}", path.display(), e))?;
        Ok(LogFile::with(path, file, false))
    }

    /// A writable log over an open file (tests: `/dev/full` stands for a full disk).
    #[cfg(test)]
    pub(super) fn over(path: &Path, file: File) -> LogFile {
        LogFile::with(path, file, false)
    }

    /// Opens the log at `path` for reading only; a missing log is `NOT_FOUND`.
    pub fn open_read_only(path: &Path) -> Result<LogFile> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                bail!(NotFound, "no store at {} (it is created by the first run)", path.display())
            }
            Err(e) => bail!(Io, "opening {} failed: {}", path.display(), e),
        };
        Ok(LogFile::with(path, file, true))
    }

    fn with(path: &Path, file: File, read_only: bool) -> LogFile {
        LogFile {
            path: path.to_path_buf(),
            file,
            len: 0,
            poisoned: false,
            read_only,
            unsynced: false,
            batch: false,
            #[cfg(test)]
            fail_next_write: false,
        }
    }

    /// Reopens the same path (after a compaction renamed a new log over it, or to clear a
    /// refusal after a failed write); the caller replays it.
    pub fn reopen(&mut self) -> Result<()> {
        let fresh = if self.read_only { LogFile::open_read_only(&self.path)? } else { LogFile::open(&self.path)? };
        self.file = fresh.file;
        self.poisoned = false;
        self.unsynced = false;
        self.batch = false;
        self.len = 0;
        Ok(())
    }

    /// Whether this handle never writes.
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// Refuses further writes until [`LogFile::reopen`] (a half-rebuilt index must not be
    /// written through).
    pub fn poison(&mut self) {
        self.poisoned = true;
    }

    /// `PERSIST_FAILED` unless this handle may write now.
    pub fn check_writable(&self) -> Result<()> {
        if self.read_only {
            bail!(PersistFailed, "{} was opened read-only", self.path.display());
        }
        if self.poisoned {
            bail!(
                PersistFailed,
                "{}: an earlier write failed; the store refuses writes until it is reopened",
                self.path.display()
            );
        }
        Ok(())
    }

    /// Size of the file on disk.
    pub fn file_len(&self) -> Result<u64> {
        Ok(self
            .file
            .metadata()
            .map_err(|e| err!(Io, "reading the size of {} failed: {}", self.path.display(), e))?
            .len())
    }

    /// Reads `buf.len()` bytes at `at`.
    pub fn read_at(&self, buf: &mut [u8], at: u64) -> Result<()> {
        self.file.read_exact_at(buf, at).map_err(|e| {
            err!(Io, "reading {} bytes at byte {} of {} failed: {}", buf.len(), at, self.path.display(), e)
        })
    }

    /// Reads up to `buf.len()` bytes at `at`; returns how many (fewer only at the end).
    pub fn read_some_at(&self, buf: &mut [u8], at: u64) -> Result<usize> {
        let mut got = 0;
        while got < buf.len() {
            let Some(rest) = buf.get_mut(got..) else { break };
            match self.file.read_at(rest, at + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => bail!(Io, "reading {} at byte {} failed: {}", self.path.display(), at + got as u64, e),
            }
        }
        Ok(got)
    }

    /// Appends `bytes` (whole records) at the end of the log and syncs them (or, inside a
    /// batch, leaves the sync to the batch's end); returns the offset they start at.
    pub fn append(&mut self, bytes: &[u8]) -> Result<u64> {
        self.check_writable()?;
        let at = self.len;
        // The index keeps offsets in 40 bits: a log past 1 TiB is refused, never wrapped.
        if at + bytes.len() as u64 > super::slots::MAX_OFFSET {
            bail!(
                CapacityExceeded,
                "{} would pass 1 TiB, the most the store's index can address; compact it (lkjagent memory compact)",
                self.path.display()
            );
        }
        #[cfg(test)]
        let injected = core::mem::take(&mut self.fail_next_write);
        #[cfg(not(test))]
        let injected = false;
        let res = if injected {
            Err(std::io::Error::other("injected EIO"))
        } else if self.batch {
            self.file.write_all_at(bytes, at)
        } else {
            self.file.write_all_at(bytes, at).and_then(|_| self.file.sync_data())
        };
        match res {
            Ok(()) => {
                self.len += bytes.len() as u64;
                self.unsynced = self.batch;
                Ok(at)
            }
            Err(e) => {
                // Inside a batch the records before this one are written but not synced: the
                // file is cut back to this record only, and the batch fails as a whole.
                let _ = self.file.set_len(at);
                self.poisoned = true;
                bail!(
                    PersistFailed,
                    "appending {} bytes to {} failed ({}); the change was not made",
                    bytes.len(),
                    self.path.display(),
                    e
                )
            }
        }
    }

    /// Starts a batch: appends are not synced one by one.
    pub fn begin_batch(&mut self) {
        self.batch = true;
    }

    /// Ends a batch with one sync of everything it wrote.
    pub fn end_batch(&mut self) -> Result<()> {
        self.batch = false;
        if !self.unsynced {
            return Ok(());
        }
        self.unsynced = false;
        self.check_writable()?;
        if let Err(e) = self.file.sync_data() {
            self.poisoned = true;
            bail!(PersistFailed, "syncing {} at the end of a batch failed ({})", self.path.display(), e);
        }
        Ok(())
    }

    /// Whether a batch is open.
    pub fn in_batch(&self) -> bool {
        self.batch
    }

    /// Cuts the file to `len` bytes and syncs (dropping a torn tail on open).
    pub fn truncate(&mut self, len: u64) -> Result<()> {
        self.check_writable()?;
        self.file
            .set_len(len)
            .and_then(|_| self.file.sync_all())
            .map_err(|e| err!(PersistFailed, "truncating the torn tail of {} failed: {}", self.path.display(), e))?;
        self.len = len;
        Ok(())
    }
}
