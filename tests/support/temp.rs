//! Temporary directories for tests, one helper for every test file: unique per process and
//! call, under the system temp dir. [`TempDir`] removes itself on drop; [`temp_dir`] leaves the
//! removal to the test (which removes it when it passed, so a failure's files stay to look at).
//!
//! Include with `#[path = "support/temp.rs"] mod temp;`.
// Included by many test crates, each of which uses only some of it: without this, every crate
// would warn about the parts it does not call.
#![allow(dead_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::collections::BTreeMap;
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

    /// A data directory holding the shipped `config.json` and `memory.json`.
    pub fn shipped_data(tag: &str) -> TempDir {
        let d = TempDir::new(tag);
        for name in ["config.json", "memory.json"] {
            d.write(name, shipped(name));
        }
        d
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes the file `name` in this directory; its path.
    pub fn write(&self, name: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, content).unwrap();
        p
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

/// Every file under `dir` with its bytes, to tell whether a command changed any.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// The text of a shipped file in `data/` (`config.json`, `memory.json`, ...): as git holds it
/// (its index, so a staged change counts) when the checkout is a git one, else the file. `make
/// run` runs the agent in `data/`, so its `memory.json` is the user's memory after a first run
/// (a run without a server records its error there), and a user points `config.json` at their
/// own server: neither is what the tests start from.
pub fn shipped(name: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let git = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["show", &format!(":data/{name}")])
        .stderr(std::process::Stdio::null())
        .output();
    match git {
        Ok(out) if out.status.success() => String::from_utf8(out.stdout).unwrap(),
        _ => std::fs::read_to_string(root.join("data").join(name)).unwrap(),
    }
}

/// Replaces `from` by `to` in `text`, which must hold `from` exactly once.
pub fn set(text: &mut String, from: &str, to: &str) {
    assert_eq!(text.matches(from).count(), 1, "config text should hold '{}' once", from);
    *text = text.replace(from, to);
}

/// The shipped config pointed at `endpoint` (a loopback server), with short timeouts, one
/// retry and tiny back-offs, so that a test's failures come fast.
pub fn test_config(endpoint: &str) -> String {
    let mut c = shipped("config.json");
    set(&mut c, "\"http://127.0.0.1:1234/v1/chat/completions\"", &format!("\"{}\"", endpoint));
    set(&mut c, "\"connect_timeout_ms\": 10000", "\"connect_timeout_ms\": 500");
    set(&mut c, "\"read_timeout_ms\": 600000", "\"read_timeout_ms\": 20000");
    set(&mut c, "\"max_retries\": 3", "\"max_retries\": 1");
    set(&mut c, "\"base_delay_ms\": 100", "\"base_delay_ms\": 10");
    set(&mut c, "\"max_delay_ms\": 5000", "\"max_delay_ms\": 20");
    set(&mut c, "\"invalid_reply_backoff_ms\": 5000", "\"invalid_reply_backoff_ms\": 300");
    c
}
