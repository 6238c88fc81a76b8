//! The agent's own files, opened without following a symbolic link.
//!
//! A name the agent writes in its data directory must never lead outside it: a link planted at
//! `.memory.json.tmp`, `logs/audit.jsonl` or `inbox` would otherwise make the agent overwrite,
//! append to, create or lock the link's target. Three rules, one per way a file is written:
//!
//! - **Written in place** (`store.log`, `logs/audit.jsonl`, `lkjagent.lock`, the inbox files):
//!   opened by [`open`] with `O_NOFOLLOW`, so the kernel itself refuses a link as the last
//!   component of the path, in the same system call that opens it: nothing can swap a link in
//!   between a check and the open. A refused link is an `IO` error that names it.
//! - **Temporary files** (`.memory.json.tmp`, ...): made by [`create_temp`], which removes
//!   whatever is at the name (`remove_file` removes a link, never its target) and creates the
//!   file exclusively (`O_CREAT | O_EXCL`, which fails on any existing name, a dangling link
//!   included, and never follows one).
//! - **Replaced by renaming** (`memory.json`): a rename replaces the name itself, never a link's
//!   target, so nothing outside is written; but it would silently cut a link the user made, so
//!   the agent refuses such a link at start-up ([`refuse_link`]).
//!
//! Links among the directories above a name are followed on purpose: a user may put the whole
//! data directory, or its `logs` directory, on another disk that way.
//!
//! std has no `O_NOFOLLOW`, and the crate calls no C library outside `signal.rs`, so the flag's
//! value is taken from the Linux uapi headers of each architecture and passed through
//! [`std::os::unix::fs::OpenOptionsExt::custom_flags`]: `asm-generic/fcntl.h` (`00400000`) for
//! x86_64, x86 and riscv64, `arch/arm64` and `arch/arm` `asm/fcntl.h` (`0100000`) for aarch64
//! and arm. On any other target the flag is 0 and [`open`] falls back to checks: the name must
//! not be a link before the open, and afterwards must still be the very file opened (same device
//! and inode). That refuses any link that stays in place, but not one swapped in and out again
//! between the checks and the open: best effort where the kernel's own check is not available.

use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// `O_NOFOLLOW` of the target (see the module documentation); 0 where it is not known.
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "x86", target_arch = "riscv64")))]
const O_NOFOLLOW: i32 = 0o0400000;
#[cfg(all(target_os = "linux", any(target_arch = "aarch64", target_arch = "arm")))]
const O_NOFOLLOW: i32 = 0o0100000;
#[cfg(not(all(
    target_os = "linux",
    any(
        target_arch = "x86_64",
        target_arch = "x86",
        target_arch = "riscv64",
        target_arch = "aarch64",
        target_arch = "arm"
    )
)))]
const O_NOFOLLOW: i32 = 0;

/// Whether `path` itself (not what it points to) is a symbolic link.
pub fn is_link(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// The error for one of the agent's own names that is a symbolic link.
pub fn link_refused(path: &Path) -> Error {
    err!(
        Io,
        "{} is a symbolic link; lkjagent never writes its own files through a link: replace it by a plain file \
         (a linked data directory or logs/ is fine)",
        path.display()
    )
}

/// `Err` naming `path` when it is a symbolic link (for names the agent replaces by renaming,
/// checked before it starts; see the module documentation).
pub fn refuse_link(path: &Path) -> Result<()> {
    if is_link(path) {
        return Err(link_refused(path));
    }
    Ok(())
}

/// Opens `path` with `options`, never through a symbolic link. The outer error is the refusal
/// of a link (naming it); the inner result is the open itself, for the caller to describe.
pub fn open(path: &Path, options: &mut OpenOptions) -> Result<std::io::Result<File>> {
    if O_NOFOLLOW == 0 && is_link(path) {
        return Err(link_refused(path));
    }
    let opened = options.custom_flags(O_NOFOLLOW).open(path);
    match opened {
        // ELOOP from O_NOFOLLOW (or EEXIST from O_EXCL): say what it is.
        Err(_) if is_link(path) => Err(link_refused(path)),
        Ok(f) if O_NOFOLLOW == 0 && !same_file(&f, path) => Err(link_refused(path)),
        other => Ok(other),
    }
}

/// Whether the name `path` is still the file `f` (not a link, same device and inode).
fn same_file(f: &File, path: &Path) -> bool {
    match (f.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => !b.file_type().is_symlink() && a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Creates the temporary file `path` for writing: whatever is there (a stale temp file from a
/// crash, or a link) is removed first, then the file is created exclusively, so it is always a
/// new file of this process and never a link's target.
pub fn create_temp(path: &Path) -> std::io::Result<File> {
    // Nothing there, or something `remove_file` cannot remove (a directory): creating the
    // file below fails on the latter and says so.
    let _ = std::fs::remove_file(path);
    OpenOptions::new().write(true).create_new(true).open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    use crate::testing::temp_dir;

    #[test]
    fn a_link_is_refused_by_the_kernel_and_named() {
        let d = temp_dir("open");
        let target = d.join("target");
        std::fs::write(&target, "keep").unwrap();
        let link = d.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let dangling = d.join("dangling");
        std::os::unix::fs::symlink(d.join("nothing"), &dangling).unwrap();
        for p in [&link, &dangling] {
            let e = open(p, OpenOptions::new().create(true).append(true)).unwrap_err();
            assert_eq!(e.code(), crate::error::Code::Io);
            assert!(e.message().starts_with(&format!("{} is a symbolic link", p.display())), "{}", e.message());
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(!d.join("nothing").exists());
        // On the targets with a known flag, the refusal is the kernel's (ELOOP), not a check.
        if O_NOFOLLOW != 0 {
            let raw = OpenOptions::new().append(true).custom_flags(O_NOFOLLOW).open(&link).unwrap_err();
            assert_eq!(raw.raw_os_error(), Some(40), "ELOOP expected: {}", raw);
        }
        // A plain file opens, and is created when missing.
        let mut f = open(&d.join("plain"), OpenOptions::new().create(true).append(true)).unwrap().unwrap();
        f.write_all(b"x").unwrap();
        assert_eq!(std::fs::read_to_string(d.join("plain")).unwrap(), "x");
        assert!(open(&d.join("missing"), OpenOptions::new().read(true)).unwrap().is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_temp_file_replaces_a_link_without_following_it() {
        let d = temp_dir("temp");
        let target = d.join("target");
        std::fs::write(&target, "keep").unwrap();
        let tmp = d.join(".x.tmp");
        std::os::unix::fs::symlink(&target, &tmp).unwrap();
        let mut f = create_temp(&tmp).unwrap();
        f.write_all(b"new").unwrap();
        assert!(!is_link(&tmp));
        assert_eq!(std::fs::read_to_string(&tmp).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
