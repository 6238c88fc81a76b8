//! Crash-safe whole-file writes: after a `kill -9` or a power cut at any instant, the file holds
//! either its previous content or the new one, never a mix (docs/design.md §2, "Nothing lost").
//!
//! [`write_file`] does, in order:
//!
//! 1. write the bytes to `.<name>.tmp` in the same directory (same file system, so the rename
//!    below is atomic) and `fsync` it. The temp file is always a new file: whatever a crash (or
//!    anyone) left at that name, a symbolic link included, is removed first and the file is
//!    created exclusively, so the bytes never land in a link's target
//!    ([`crate::memory::nofollow::create_temp`]);
//! 2. keep the current file as `<name>.prev`: hard-link it to `.<name>.prev.tmp` and rename that
//!    over `<name>.prev` (a link, not a copy: no bytes written, and `<name>` never disappears);
//! 3. rename the temp file over `<name>`;
//! 4. `fsync` the directory, so the renames themselves are durable.
//!
//! Any failure before step 3 leaves `<name>` untouched and removes the temp file; it is reported
//! as `PERSIST_FAILED` (ENOSPC, EIO, a read-only file system, ...). A failed `fsync` is never
//! retried and trusted: the data it covered may already be lost from the page cache, so the
//! whole write is reported failed and the caller keeps its in-memory state to try again later
//! with a fresh temp file.
//!
//! The agent uses this for `memory.json` and its other small files; the store's log has its own
//! append discipline (`memory::log`).

use crate::error::Result;
use crate::memory::nofollow::create_temp;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Suffix of the previous good version kept beside each file written here.
pub const PREV_SUFFIX: &str = ".prev";

/// Writes `bytes` to `dir/name` atomically and durably, keeping the previous version as
/// `dir/name.prev`. See the module documentation. Errors are `PERSIST_FAILED` naming the file
/// and the step that failed. (Builds the paths on each call; a caller that writes the same file
/// every cycle keeps an [`AtomicFile`] instead, which builds them once.)
pub fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    AtomicFile::new(dir, name).write(bytes)
}

/// One file written atomically again and again: its four paths are built once, so a write
/// allocates nothing.
#[derive(Clone, Debug)]
pub struct AtomicFile {
    dir: PathBuf,
    target: PathBuf,
    tmp: PathBuf,
    prev: PathBuf,
    prev_tmp: PathBuf,
}

impl AtomicFile {
    /// The file `dir/name`.
    pub fn new(dir: &Path, name: &str) -> AtomicFile {
        AtomicFile {
            dir: dir.to_path_buf(),
            target: dir.join(name),
            tmp: dir.join(format!(".{}.tmp", name)),
            prev: prev_path(dir, name),
            prev_tmp: dir.join(format!(".{}{}.tmp", name, PREV_SUFFIX)),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.target
    }

    /// The previous version's path.
    pub fn prev_path(&self) -> &Path {
        &self.prev
    }

    /// Replaces the file's content with `bytes` (see the module documentation).
    pub fn write(&self, bytes: &[u8]) -> Result<()> {
        if let Err(e) = write_synced(&self.tmp, bytes) {
            let _ = fs::remove_file(&self.tmp);
            return Err(e);
        }
        if self.target.exists() {
            if let Err(e) = keep_previous(&self.target, &self.prev_tmp, &self.prev) {
                let _ = fs::remove_file(&self.tmp);
                return Err(e);
            }
        }
        if let Err(e) = fs::rename(&self.tmp, &self.target) {
            let _ = fs::remove_file(&self.tmp);
            bail!(
                PersistFailed,
                "renaming the new {} into place failed ({}); the old file is intact",
                self.target.display(),
                e
            );
        }
        sync_dir(&self.dir)
    }
}

/// The path of the previous version of `dir/name`.
pub fn prev_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{}{}", name, PREV_SUFFIX))
}

/// `fsync`s a directory, making renames and creations inside it durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    let d = File::open(dir)
        .map_err(|e| err!(PersistFailed, "opening directory {} to sync it failed: {}", dir.display(), e))?;
    d.sync_all().map_err(|e| err!(PersistFailed, "syncing directory {} failed: {}", dir.display(), e))
}

/// Writes `bytes` to the new temporary file `path` (see the module documentation) and syncs it.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let f = create_temp(path).map_err(|e| err!(PersistFailed, "creating {} failed: {}", path.display(), e))?;
    fill_synced(f, path, bytes)
}

fn fill_synced(mut f: File, path: &Path, bytes: &[u8]) -> Result<()> {
    f.write_all(bytes).map_err(|e| err!(PersistFailed, "writing {} failed: {}", path.display(), e))?;
    f.sync_all().map_err(|e| err!(PersistFailed, "syncing {} failed: {}", path.display(), e))
}

fn keep_previous(target: &Path, link: &Path, prev: &Path) -> Result<()> {
    let _ = fs::remove_file(link);
    if fs::hard_link(target, link).is_err() {
        // File systems without hard links: fall back to a synced copy.
        let bytes = fs::read(target).map_err(|e| {
            err!(PersistFailed, "reading {} to keep it as {} failed: {}", target.display(), prev.display(), e)
        })?;
        if let Err(e) = write_synced(link, &bytes) {
            let _ = fs::remove_file(link);
            return Err(e);
        }
    }
    fs::rename(link, prev).map_err(|e| {
        let _ = fs::remove_file(link);
        err!(PersistFailed, "keeping {} as {} failed: {}", target.display(), prev.display(), e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    use crate::testing::temp_dir;

    #[test]
    fn writes_and_keeps_previous() {
        let d = temp_dir("prev");
        write_file(&d, "m.json", b"one").unwrap();
        assert_eq!(fs::read(d.join("m.json")).unwrap(), b"one");
        assert!(!prev_path(&d, "m.json").exists());
        write_file(&d, "m.json", b"two").unwrap();
        write_file(&d, "m.json", b"three").unwrap();
        assert_eq!(fs::read(d.join("m.json")).unwrap(), b"three");
        assert_eq!(fs::read(prev_path(&d, "m.json")).unwrap(), b"two");
        // No temp files are left behind.
        let names: Vec<_> = fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "{:?}", names);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn failure_is_persist_failed_and_leaves_old_file() {
        let d = temp_dir("fail");
        write_file(&d, "m.json", b"good").unwrap();
        // A directory where the temp file should go makes creating it fail.
        fs::create_dir(d.join(".m.json.tmp")).unwrap();
        let e = write_file(&d, "m.json", b"new").unwrap_err();
        assert_eq!(e.code(), Code::PersistFailed);
        assert!(e.message().contains(".m.json.tmp"), "{}", e.message());
        assert_eq!(fs::read(d.join("m.json")).unwrap(), b"good");
        let e = write_file(&d.join("missing"), "m.json", b"x").unwrap_err();
        assert_eq!(e.code(), Code::PersistFailed);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn enospc_is_persist_failed() {
        // /dev/full answers every write with ENOSPC: it stands for a full disk. (A link to it at
        // the temp name no longer does: the link is removed, never written through.)
        let Ok(full) = fs::OpenOptions::new().write(true).open("/dev/full") else { return };
        let e = fill_synced(full, Path::new(".m.json.tmp"), b"data").unwrap_err();
        assert_eq!(e.code(), Code::PersistFailed);
        assert!(e.message().contains("writing .m.json.tmp failed"), "{}", e.message());
    }

    #[test]
    fn a_link_at_a_temp_name_is_replaced_not_followed() {
        let d = temp_dir("link");
        let outside = temp_dir("link-outside");
        fs::write(outside.join("victim"), b"keep").unwrap();
        write_file(&d, "m.json", b"one").unwrap();
        std::os::unix::fs::symlink(outside.join("victim"), d.join(".m.json.tmp")).unwrap();
        std::os::unix::fs::symlink(outside.join("created"), d.join(".m.json.prev.tmp")).unwrap();
        write_file(&d, "m.json", b"two").unwrap();
        assert_eq!(fs::read(d.join("m.json")).unwrap(), b"two");
        assert_eq!(fs::read(prev_path(&d, "m.json")).unwrap(), b"one");
        assert_eq!(fs::read(outside.join("victim")).unwrap(), b"keep");
        assert!(!outside.join("created").exists());
        assert!(!fs::symlink_metadata(d.join("m.json")).unwrap().file_type().is_symlink());
        fs::remove_dir_all(&d).unwrap();
        fs::remove_dir_all(&outside).unwrap();
    }
}
