//! Temporary directories for tests, one helper for every test file: unique per process and
//! call, under the system temp dir. [`TempDir`] removes itself on drop; [`temp_dir`] leaves the
//! removal to the test (which removes it when it passed, so a failure's files stay to look at).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A fresh, empty directory `lkj-<tag>-<pid>-<n>`.
pub fn temp_dir(tag: &str) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let p = std::env::temp_dir().join(format!("lkj-{}-{}-{}", tag, std::process::id(), n));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        TempDir(temp_dir(tag))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// A fresh subdirectory.
    pub fn sub(&self, name: &str) -> PathBuf {
        let p = self.0.join(name);
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        p
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The text of a shipped file in `data/` (`config.json`, `memory.json`, ...).
pub fn shipped(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("data").join(name)).unwrap()
}

/// Replaces `from` by `to` in `text`, which must hold `from` exactly once.
pub fn set(text: &mut String, from: &str, to: &str) {
    assert_eq!(text.matches(from).count(), 1, "config text should hold '{}' once", from);
    *text = text.replace(from, to);
}
