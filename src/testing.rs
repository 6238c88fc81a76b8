//! What the unit tests share (compiled for tests only): a fresh temporary directory per call,
//! and the seeded generator ([`rng`]).
//! The integration tests have their own in `tests/support/temp.rs`.

use std::path::PathBuf;

/// The seeded generator the unit tests, the integration tests and the benches share.
#[path = "../tests/support/rng.rs"]
pub mod rng;
use std::sync::atomic::{AtomicU32, Ordering};

/// A new, empty directory under the system's temporary directory, named after `tag`, this
/// process and a counter, so tests running side by side never share one. Creating it is left
/// to fail loudly in the test that then uses it.
pub fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("lkj-{}-{}-{}", tag, std::process::id(), n));
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::create_dir_all(&d);
    d
}
