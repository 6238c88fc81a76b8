//! The checkpoint the cycle's upkeep takes, finished and synced beside the cycle: the cycle
//! writes the body of `store.ckpt`'s temp file (the index as it is at that instant, so the
//! file is consistent) and hands the file to a worker thread of the store's that takes its
//! checksums, writes its header (`finish`) and syncs it; a later cycle's upkeep, once the
//! worker is done with it, renames the file into place and syncs the directory (a short
//! step). The checksums (a pass over the whole file, 71 MB at 1,048,576 entries) were most of
//! a checkpoint's cycle, and its sync is the part a disk can stretch to hundreds of
//! milliseconds.
//!
//! The worker is started at the first due checkpoint and lives as long as the store (it ends
//! after the job it works on when the store drops its end; a job it has not taken is dropped).
//! Jobs and results go through a one-slot hand-off made with it (`handoff`), each job carrying
//! the store's buffers and its result bringing them back, so that a due checkpoint after the
//! first allocates nothing. Where no worker can be started, or a job already waits for it,
//! the checkpoint is finished, synced and put in place in the cycle.
//!
//! Crash-safe as every write here: until the rename, `store.ckpt` is the old checkpoint (or
//! none) and the log after it is replayed at open; the temp file a crash leaves is removed at
//! the next open. The rename comes only after the sync succeeded, so the new checkpoint is
//! never torn. Nothing acknowledged is in the checkpoint alone: the log has it all.
//!
//! Anything else that writes or drops the checkpoint (a checkpoint now, a compaction) first
//! lets go of a job under way (the worker still finishes its file, already removed; its
//! result is known by its number and only its buffers are kept), so that no later step
//! renames a file that is not the one it synced.

use super::finish::{finish, Bufs, Unfinished};
use super::handoff::{Got, Handoff};
use crate::error::Result;
use crate::memory::store::Store;
use std::fs::{self, File};
#[cfg(test)]
use std::sync::mpsc::Receiver;
use std::sync::Arc;

/// Bytes of stack of the worker thread (its buffers are the store's, lent to it).
const SYNC_THREAD_STACK_BYTES: usize = 64 << 10;

/// A checkpoint's file handed to the worker.
struct Job {
    /// Its number, which its result carries back.
    seq: u64,
    file: File,
    unfinished: Unfinished,
    bufs: Bufs,
    /// Test hook: the worker says it took the job, then waits before it finishes the file.
    #[cfg(test)]
    hold: Option<Hold>,
}

/// Test hook (`Store::hold_checkpoint_finish`): the worker sends on `taken` when it has taken
/// the job, then waits for a message on `release` (or its sender dropped).
#[cfg(test)]
pub(in crate::memory::store) struct Hold {
    taken: std::sync::mpsc::Sender<()>,
    release: Receiver<()>,
}

/// What the worker did with a job: its number, the outcome, the buffers it was lent.
struct Done {
    seq: u64,
    res: std::io::Result<()>,
    bufs: Bufs,
}

/// The store's end of the worker thread that finishes and syncs due checkpoints: the job slot
/// holds one job beside the one the worker works on (a checkpoint let go of is still being
/// finished while the next one waits); past it, a checkpoint is finished in the cycle.
pub(in crate::memory::store) struct Worker {
    handoff: Arc<Handoff<Job, Done>>,
    /// The next job's number.
    next: u64,
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.handoff.leave();
    }
}

/// A checkpoint written and being finished and synced beside the cycle.
pub(in crate::memory::store) struct Syncing {
    /// The job's number.
    seq: u64,
    /// Log length the checkpoint covers.
    covered: u64,
    /// Log length the checkpoint in place covers (what is due is counted from `covered`
    /// meanwhile, and from this again should the sync fail).
    before: u64,
}

/// The worker's loop: each job finished and synced, its result handed back, until the store
/// drops its end.
fn work(handoff: Arc<Handoff<Job, Done>>) {
    let _end = handoff.worker_end();
    while let Some(mut job) = handoff.next_job() {
        #[cfg(test)]
        if let Some(hold) = job.hold.take() {
            let _ = hold.taken.send(());
            let _ = hold.release.recv();
        }
        let res = finish(&job.file, &job.unfinished, &mut job.bufs, true);
        drop(job.file);
        if !handoff.put_done(Done { seq: job.seq, res, bufs: job.bufs }) {
            return;
        }
    }
}

impl Store {
    /// The worker, started now if there is none (`None` where no thread can be started).
    fn checkpoint_worker(&mut self) -> Option<&mut Worker> {
        if self.checkpoint_worker.is_none() {
            let handoff = Arc::new(Handoff::new());
            let theirs = Arc::clone(&handoff);
            let spawned = std::thread::Builder::new()
                .name("lkjagent-checkpoint-sync".into())
                .stack_size(SYNC_THREAD_STACK_BYTES)
                .spawn(move || work(theirs));
            if spawned.is_ok() {
                self.checkpoint_worker = Some(Worker { handoff, next: 0 });
            }
        }
        self.checkpoint_worker.as_mut()
    }

    /// Keeps `bufs` when they hold more room than the store's own (a result's buffers).
    fn keep_bufs(&mut self, bufs: Bufs) {
        if bufs.ram_bytes() > self.ckpt_bufs.ram_bytes() {
            self.ckpt_bufs = bufs;
        }
    }

    /// Hands the checkpoint's temp file, its body written and covering `covered` bytes of
    /// log, to the worker, which finishes it and syncs it (the store's buffers lent to it);
    /// the next steps put it in place. Where there is no worker or its queue is full,
    /// finished, synced and put in place now.
    pub(in crate::memory::store) fn checkpoint_sync_beside(
        &mut self,
        file: File,
        covered: u64,
        unfinished: Unfinished,
    ) -> Result<()> {
        let before = self.checkpointed;
        let bufs = core::mem::take(&mut self.ckpt_bufs);
        #[cfg(test)]
        let hold = self.ckpt_hold.take();
        let mut job = Job {
            seq: 0,
            file,
            unfinished,
            bufs,
            #[cfg(test)]
            hold,
        };
        let sent = match self.checkpoint_worker() {
            Some(w) => {
                job.seq = w.next;
                w.next += 1;
                w.handoff.offer(job).map(|()| w.next - 1)
            }
            None => Err((job, false)),
        };
        match sent {
            Ok(seq) => {
                self.checkpoint_syncing = Some(Syncing { seq, covered, before });
                self.checkpointed = covered;
                Ok(())
            }
            Err((job, gone)) => {
                if gone {
                    self.checkpoint_worker = None;
                }
                self.ckpt_bufs = job.bufs;
                if let Err(e) = finish(&job.file, &job.unfinished, &mut self.ckpt_bufs, true) {
                    self.remove_checkpoint_temp();
                    bail!(PersistFailed, "writing {} failed: {}", self.ckpt_paths.tmp.display(), e);
                }
                self.ckpt_checked_here = job.unfinished.layout.file_len();
                self.checkpoint_in_place(covered)
            }
        }
    }

    /// A step of the cycle's upkeep: when the worker is done with the checkpoint (or, with
    /// `wait`, once it is), the file is renamed into place and the directory synced. Nothing
    /// when none is under way.
    pub(in crate::memory::store) fn checkpoint_sync_step(&mut self, wait: bool) -> Result<()> {
        let Some(s) = self.checkpoint_syncing.take() else { return Ok(()) };
        let res = loop {
            let got = match &self.checkpoint_worker {
                Some(w) => match w.handoff.take(wait) {
                    Got::Done(d) => Some(d),
                    Got::Empty => {
                        self.checkpoint_syncing = Some(s);
                        return Ok(());
                    }
                    Got::Gone => None,
                },
                None => None,
            };
            let Some(d) = got else {
                self.checkpoint_worker = None;
                break Err(err!(PersistFailed, "the thread finishing {} stopped", self.ckpt_paths.tmp.display()));
            };
            self.keep_bufs(d.bufs);
            // A result of a checkpoint let go of: only its buffers are kept.
            if d.seq == s.seq {
                break d.res.map_err(|e| {
                    err!(PersistFailed, "finishing or syncing {} failed: {}", self.ckpt_paths.tmp.display(), e)
                });
            }
        };
        if let Err(e) = res {
            self.remove_checkpoint_temp();
            self.checkpointed = s.before;
            return Err(e);
        }
        let res = self.checkpoint_in_place(s.covered);
        if res.is_err() {
            self.checkpointed = s.before;
        }
        res
    }

    /// Lets go of a checkpoint being finished beside the cycle (before anything else writes
    /// or removes the checkpoint or its temp file): its file is never put in place. Results
    /// already back are taken in (their buffers kept).
    pub(in crate::memory::store) fn checkpoint_sync_drop(&mut self) {
        if let Some(s) = self.checkpoint_syncing.take() {
            self.remove_checkpoint_temp();
            self.checkpointed = s.before;
        }
        while let Some(Got::Done(d)) = self.checkpoint_worker.as_ref().map(|w| w.handoff.take(false)) {
            self.keep_bufs(d.bufs);
        }
    }

    /// Whether a checkpoint is being finished and synced beside the cycle (its body written,
    /// not yet in place).
    pub fn checkpoint_syncing(&self) -> bool {
        self.checkpoint_syncing.is_some()
    }

    /// Bytes of the last checkpoint's file whose checksums the caller's thread took itself,
    /// while writing it (the rest were taken beside the cycle): the work a due checkpoint puts
    /// into its cycle, beside the copy of the index.
    pub fn checkpoint_checked_here(&self) -> u64 {
        self.ckpt_checked_here
    }

    /// Test hook: the worker, once it has taken the next due checkpoint (the receiver
    /// returned second gets a message then), waits before it finishes it until the sender
    /// returned first sends or is dropped.
    #[cfg(test)]
    pub(crate) fn hold_checkpoint_finish(&mut self) -> (std::sync::mpsc::Sender<()>, Receiver<()>) {
        let (release, release_rx) = std::sync::mpsc::channel();
        let (taken_tx, taken) = std::sync::mpsc::channel();
        self.ckpt_hold = Some(Hold { taken: taken_tx, release: release_rx });
        (release, taken)
    }

    /// Removes the checkpoint's temp file (a path joined once: no allocation).
    pub(in crate::memory::store) fn remove_checkpoint_temp(&self) {
        let _ = fs::remove_file(&self.ckpt_paths.tmp);
    }

    /// The synced temp file renamed over `store.ckpt`, the directory synced.
    pub(in crate::memory::store) fn checkpoint_in_place(&mut self, covered: u64) -> Result<()> {
        let p = &self.ckpt_paths;
        if let Err(e) = fs::rename(&p.tmp, &p.file) {
            self.remove_checkpoint_temp();
            bail!(PersistFailed, "renaming {} into place failed: {}", self.ckpt_paths.tmp.display(), e);
        }
        crate::memory::atomic::sync_dir(&self.dir)?;
        self.checkpointed = covered;
        Ok(())
    }
}
