//! The hand-off between the store and the thread that finishes its due checkpoints (`sync`):
//! one job slot, one result slot and a flag for each side that has left, under one mutex, with
//! one condition variable both sides wait on. It is all that thread needs (one job worked on,
//! one waiting; a result waits until the store takes it) at a fraction of the code std's
//! `mpsc` channels linked (14.5 KB, docs/measurements.md "The bytes the merges brought back").
//! Made once with the thread; nothing in it allocates afterwards.
//!
//! A lock poisoned by a thread that panicked while holding it (nothing here can) is taken as
//! it is: each slot is only ever whole or empty. A side that leaves says so (the store when it
//! drops its end, the thread on its way out even when it unwinds), so that the other never
//! waits for it.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// What both sides share.
pub(super) struct Handoff<J, D> {
    slots: Mutex<Slots<J, D>>,
    cond: Condvar,
}

struct Slots<J, D> {
    job: Option<J>,
    done: Option<D>,
    store_gone: bool,
    worker_gone: bool,
}

/// What the store finds in the result slot.
pub(super) enum Got<D> {
    Done(D),
    /// Nothing yet; the worker is still there.
    Empty,
    /// Nothing, and the worker has left.
    Gone,
}

/// The worker's guard: on its way out (returned or unwound) it says it has left.
pub(super) struct WorkerEnd<'a, J, D>(&'a Handoff<J, D>);

impl<J, D> Drop for WorkerEnd<'_, J, D> {
    fn drop(&mut self) {
        self.0.lock().worker_gone = true;
        self.0.cond.notify_all();
    }
}

impl<J, D> Handoff<J, D> {
    pub(super) fn new() -> Handoff<J, D> {
        Handoff {
            slots: Mutex::new(Slots { job: None, done: None, store_gone: false, worker_gone: false }),
            cond: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Slots<J, D>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, g: MutexGuard<'a, Slots<J, D>>) -> MutexGuard<'a, Slots<J, D>> {
        self.cond.wait(g).unwrap_or_else(PoisonError::into_inner)
    }

    // The store's side.

    /// Puts `job` in the job slot; back with `false` when the slot is taken, `true` when the
    /// worker has left.
    pub(super) fn offer(&self, job: J) -> Result<(), (J, bool)> {
        let mut g = self.lock();
        if g.worker_gone {
            return Err((job, true));
        }
        if g.job.is_some() {
            return Err((job, false));
        }
        g.job = Some(job);
        drop(g);
        self.cond.notify_all();
        Ok(())
    }

    /// Takes the result in the slot, if any; with `wait`, waits for one unless the worker has
    /// left.
    pub(super) fn take(&self, wait: bool) -> Got<D> {
        let mut g = self.lock();
        loop {
            if let Some(d) = g.done.take() {
                drop(g);
                self.cond.notify_all();
                return Got::Done(d);
            }
            if g.worker_gone {
                return Got::Gone;
            }
            if !wait {
                return Got::Empty;
            }
            g = self.wait(g);
        }
    }

    /// The store lets go: the worker ends after the job it works on, and a job not yet taken
    /// is dropped (its file is never put in place by anyone).
    pub(super) fn leave(&self) {
        let mut g = self.lock();
        g.store_gone = true;
        let job = g.job.take();
        drop(g);
        self.cond.notify_all();
        drop(job);
    }

    // The worker's side.

    /// The guard the worker holds while it runs.
    pub(super) fn worker_end(&self) -> WorkerEnd<'_, J, D> {
        WorkerEnd(self)
    }

    /// The next job, once there is one; `None` once the store has let go.
    pub(super) fn next_job(&self) -> Option<J> {
        let mut g = self.lock();
        loop {
            if g.store_gone {
                return None;
            }
            if let Some(j) = g.job.take() {
                return Some(j);
            }
            g = self.wait(g);
        }
    }

    /// Puts a result in the result slot once it is free; `false` (the result dropped) once the
    /// store has let go.
    pub(super) fn put_done(&self, d: D) -> bool {
        let mut g = self.lock();
        loop {
            if g.store_gone {
                return false;
            }
            if g.done.is_none() {
                g.done = Some(d);
                drop(g);
                self.cond.notify_all();
                return true;
            }
            g = self.wait(g);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Got, Handoff};
    use std::sync::Arc;

    /// Jobs and results pass in order through one slot each way; a second job waits in the
    /// slot while the first is worked on, a third is refused.
    #[test]
    fn one_slot_each_way() {
        let h: Arc<Handoff<u32, u32>> = Arc::new(Handoff::new());
        assert!(matches!(h.take(false), Got::Empty));
        h.offer(1).unwrap();
        assert_eq!(h.offer(2).unwrap_err(), (2, false));
        assert_eq!(h.next_job(), Some(1));
        h.offer(2).unwrap();
        assert_eq!(h.offer(3).unwrap_err(), (3, false));
        assert!(h.put_done(10));
        let w = Arc::clone(&h);
        let t = std::thread::spawn(move || {
            let _end = w.worker_end();
            while let Some(j) = w.next_job() {
                if !w.put_done(j * 10) {
                    return;
                }
            }
        });
        assert!(matches!(h.take(true), Got::Done(10)));
        assert!(matches!(h.take(true), Got::Done(20)));
        h.offer(3).unwrap();
        assert!(matches!(h.take(true), Got::Done(30)));
        h.leave();
        t.join().unwrap();
        assert!(matches!(h.take(true), Got::Gone));
        assert_eq!(h.offer(4).unwrap_err(), (4, true));
    }

    /// A worker that unwinds says it has left: the store waiting for its result does not wait
    /// forever. A lock poisoned by it is taken as it is.
    #[test]
    fn a_worker_that_panics_has_left() {
        let h: Arc<Handoff<u32, u32>> = Arc::new(Handoff::new());
        h.offer(1).unwrap();
        let w = Arc::clone(&h);
        let t = std::thread::spawn(move || {
            let _end = w.worker_end();
            let _j = w.next_job();
            let _g = w.slots.lock();
            panic!("the worker fails while holding the lock");
        });
        assert!(matches!(h.take(true), Got::Gone));
        assert!(t.join().is_err());
        assert!(h.slots.is_poisoned());
        assert_eq!(h.offer(2).unwrap_err(), (2, true));
    }
}
