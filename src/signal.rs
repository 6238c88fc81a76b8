//! SIGINT and SIGTERM: the first asks the agent to stop at the next safe point (finish or
//! abandon the model request, persist, exit 0); the second exits at once, which is safe because
//! every persistent write is atomic (temp file, fsync, rename).
//!
//! This is the one module of the product allowed to use `unsafe`: std has no API to install a
//! signal handler, so the C library's `signal` is declared here. The handler only touches an
//! atomic and, on the second signal, calls `_exit`; both are async-signal-safe (POSIX.1-2017
//! §2.4.3), so the handler cannot deadlock on a lock the interrupted code holds.
#![allow(unsafe_code)]

use core::sync::atomic::{AtomicU32, Ordering};

/// Signal numbers (Linux and the BSDs agree on these two).
const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;

/// `SIG_ERR`, the C library's `(void (*)(int)) -1`.
const SIG_ERR: usize = usize::MAX;

/// Exit status after a second signal: 128 + SIGINT, the shell's convention for "interrupted".
const EXIT_INTERRUPTED_TWICE: i32 = 130;

/// How many stop signals have arrived.
static SIGNALS: AtomicU32 = AtomicU32::new(0);

extern "C" {
    /// `signal(2)`. glibc gives BSD semantics: the handler stays installed and interrupted
    /// system calls restart (the HTTP client wakes on its own read-timeout slices to look at
    /// [`stop_requested`]).
    fn signal(signum: i32, handler: extern "C" fn(i32)) -> usize;
    /// `_exit(2)`: ends the process without running atexit handlers or flushing stdio, which is
    /// what makes it async-signal-safe.
    fn _exit(status: i32) -> !;
}

extern "C" fn on_signal(_signum: i32) {
    let before = SIGNALS.fetch_add(1, Ordering::SeqCst);
    if before >= 1 {
        // SAFETY: `_exit` is async-signal-safe and takes no pointers; it never returns.
        unsafe { _exit(EXIT_INTERRUPTED_TWICE) }
    }
}

/// Installs the handlers for SIGINT and SIGTERM. Returns false if the C library refused.
pub fn install() -> bool {
    let mut ok = true;
    for sig in [SIGINT, SIGTERM] {
        // SAFETY: `on_signal` has the C ABI and signature `signal` expects, lives for the whole
        // program, and only performs async-signal-safe operations (an atomic add, `_exit`).
        let previous = unsafe { signal(sig, on_signal) };
        ok &= previous != SIG_ERR;
    }
    ok
}

/// Whether a stop was asked for (by a signal or by [`request_stop`]).
pub fn stop_requested() -> bool {
    SIGNALS.load(Ordering::SeqCst) > 0
}

/// Asks for a stop as a first signal would (used by tests and by the demo's end).
pub fn request_stop() {
    SIGNALS.fetch_max(1, Ordering::SeqCst);
}
