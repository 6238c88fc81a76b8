//! The checkpoint the cycle's upkeep takes, finished and synced beside the cycle: the cycle
//! writes the body of `store.ckpt`'s temp file (the index as it is at that instant, so the
//! file is consistent) and hands the file to a thread of its own that takes its checksums,
//! writes its header (`finish`) and syncs it; a later cycle's upkeep, once that thread is
//! done, renames the file into place and syncs the directory (a short step). The checksums
//! (a pass over the whole file, 71 MB at 1,048,576 entries) were most of a checkpoint's
//! cycle, and its sync is the part a disk can stretch to hundreds of milliseconds.
//!
//! Crash-safe as every write here: until the rename, `store.ckpt` is the old checkpoint (or
//! none) and the log after it is replayed at open; the temp file a crash leaves is removed at
//! the next open. The rename comes only after the sync succeeded, so the new checkpoint is
//! never torn. Nothing acknowledged is in the checkpoint alone: the log has it all.
//!
//! Anything else that writes or drops the checkpoint (a checkpoint now, a compaction) first
//! lets go of a sync under way (its thread ends by itself; its file is removed or replaced),
//! so that no later step renames a file that is not the one it synced.

use super::finish::{finish, Bufs, Unfinished};
use super::{remove_temp, CHECKPOINT_NAME, TEMP_NAME};
use crate::error::Result;
use crate::memory::store::Store;
use std::fs::{self, File};
use std::thread::JoinHandle;

/// Bytes of stack of the finishing thread (its buffers are the store's, lent to it).
const SYNC_THREAD_STACK_BYTES: usize = 64 << 10;

/// A checkpoint written and being finished and synced beside the cycle.
pub(in crate::memory::store) struct Syncing {
    /// The thread finishing and syncing the temp file: its result, and the buffers lent to it.
    thread: JoinHandle<(std::io::Result<()>, Bufs)>,
    /// Log length the checkpoint covers.
    covered: u64,
    /// Log length the checkpoint in place covers (what is due is counted from `covered`
    /// meanwhile, and from this again should the sync fail).
    before: u64,
}

impl Store {
    /// Hands the checkpoint's temp file, its body written and covering `covered` bytes of
    /// log, to a thread that finishes it and syncs it (the store's buffers lent to it); the
    /// next steps put it in place. Where no thread can be started, finished, synced and put in
    /// place now.
    pub(in crate::memory::store) fn checkpoint_sync_beside(
        &mut self,
        file: File,
        covered: u64,
        u: Unfinished,
    ) -> Result<()> {
        let before = self.checkpointed;
        let mine = file.try_clone();
        let mut bufs = core::mem::take(&mut self.ckpt_bufs);
        #[cfg(test)]
        let hold = self.ckpt_hold.take();
        let spawned = std::thread::Builder::new()
            .name("lkjagent-checkpoint-sync".into())
            .stack_size(SYNC_THREAD_STACK_BYTES)
            .spawn(move || {
                #[cfg(test)]
                if let Some(hold) = hold {
                    let _ = hold.recv();
                }
                (finish(&file, &u, &mut bufs, true), bufs)
            });
        match (spawned, mine) {
            (Ok(thread), _) => {
                self.checkpoint_syncing = Some(Syncing { thread, covered, before });
                self.checkpointed = covered;
                Ok(())
            }
            (Err(_), Ok(file)) => {
                // The buffers went with the closure: reserved again (a rare path).
                self.ckpt_bufs.reserve(self.slots.next_id(), self.slots.room());
                let tmp = self.dir.join(TEMP_NAME);
                if let Err(e) = finish(&file, &u, &mut self.ckpt_bufs, true) {
                    remove_temp(&self.dir);
                    bail!(PersistFailed, "writing {} failed: {}", tmp.display(), e);
                }
                self.checkpoint_in_place(covered)
            }
            (Err(e), Err(_)) => {
                remove_temp(&self.dir);
                bail!(PersistFailed, "no thread to finish the checkpoint could be started: {}", e)
            }
        }
    }

    /// A step of the cycle's upkeep: when the checkpoint's thread is done (or, with `wait`,
    /// once it is), the file is renamed into place and the directory synced. Nothing when no
    /// sync is under way.
    pub(in crate::memory::store) fn checkpoint_sync_step(&mut self, wait: bool) -> Result<()> {
        let Some(s) = self.checkpoint_syncing.take() else { return Ok(()) };
        if !wait && !s.thread.is_finished() {
            self.checkpoint_syncing = Some(s);
            return Ok(());
        }
        let tmp = self.dir.join(TEMP_NAME);
        let synced = match s.thread.join() {
            Ok((r, bufs)) => {
                self.ckpt_bufs = bufs;
                r.map_err(|e| err!(PersistFailed, "finishing or syncing {} failed: {}", tmp.display(), e))
            }
            Err(_) => Err(err!(PersistFailed, "the thread finishing {} stopped", tmp.display())),
        };
        if let Err(e) = synced {
            remove_temp(&self.dir);
            self.checkpointed = s.before;
            return Err(e);
        }
        let res = self.checkpoint_in_place(s.covered);
        if res.is_err() {
            self.checkpointed = s.before;
        }
        res
    }

    /// Lets go of a checkpoint's sync under way (before anything else writes or removes the
    /// checkpoint or its temp file): its file is never put in place.
    pub(in crate::memory::store) fn checkpoint_sync_drop(&mut self) {
        if let Some(s) = self.checkpoint_syncing.take() {
            remove_temp(&self.dir);
            self.checkpointed = s.before;
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

    /// Test hook: the thread that finishes the next due checkpoint waits, before it starts,
    /// until the sender returned sends or is dropped.
    #[cfg(test)]
    pub(crate) fn hold_checkpoint_finish(&mut self) -> std::sync::mpsc::Sender<()> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.ckpt_hold = Some(rx);
        tx
    }

    /// The synced temp file renamed over `store.ckpt`, the directory synced.
    pub(in crate::memory::store) fn checkpoint_in_place(&mut self, covered: u64) -> Result<()> {
        let tmp = self.dir.join(TEMP_NAME);
        fs::rename(&tmp, self.dir.join(CHECKPOINT_NAME)).map_err(|e| {
            remove_temp(&self.dir);
            err!(PersistFailed, "renaming {} into place failed: {}", tmp.display(), e)
        })?;
        crate::memory::atomic::sync_dir(&self.dir)?;
        self.checkpointed = covered;
        Ok(())
    }
}
