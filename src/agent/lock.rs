//! One writer per data directory: `lkjagent.lock`, locked exclusively (`File::try_lock`) by
//! every command that writes `memory.json` or the store (`run`, `demo`, `replay`, `memory
//! import`, `memory compact`). A second one is refused with a clear message instead of
//! interleaving appends with the first. The lock is released by the kernel when the process
//! ends, however it ends, so a crash never leaves a stale lock behind.

use crate::error::Result;
use crate::memory::nofollow;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

/// The lock file's name in the data directory.
pub const LOCK_FILE: &str = "lkjagent.lock";

/// A held lock; dropping it releases the lock.
#[derive(Debug)]
pub struct DataLock {
    _file: File,
}

impl DataLock {
    /// Takes the lock of data directory `dir`, or fails at once if another process holds it.
    pub fn acquire(dir: &Path) -> Result<DataLock> {
        let path = dir.join(LOCK_FILE);
        // Never through a link: opening one with `create` would make its target appear.
        let file = nofollow::open(&path, OpenOptions::new().create(true).truncate(false).write(true))?
            .map_err(|e| err!(Io, "cannot open {}: {}", path.display(), e))?;
        match file.try_lock() {
            Ok(()) => Ok(DataLock { _file: file }),
            // Busy is a runtime condition (exit 1), not a usage mistake.
            Err(TryLockError::WouldBlock) => Err(err!(
                Io,
                "another lkjagent (the agent loop, or a memory import or compact) is using {} (it holds {}); \
                 stop it first",
                dir.display(),
                LOCK_FILE
            )),
            Err(TryLockError::Error(e)) => Err(err!(Io, "cannot lock {}: {}", path.display(), e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = crate::testing::temp_dir("lock");
        let first = DataLock::acquire(&dir).unwrap();
        let second = DataLock::acquire(&dir).unwrap_err();
        assert_eq!(second.code(), crate::error::Code::Io);
        assert!(second.message().contains("another lkjagent"));
        drop(first);
        DataLock::acquire(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
