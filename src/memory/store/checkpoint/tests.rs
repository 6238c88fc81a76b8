//! Tests of the checkpoint's writing. The whole file is compiled for tests only (`#[cfg(test)]
//! mod tests;` in `mod.rs`), and says so itself too.
#![cfg(test)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use super::CHECKPOINT_NAME;
use crate::memory::key::{normalize, Key};
use crate::memory::store::Store;
use crate::testing::temp_dir;
use std::fs;

fn k(s: &str) -> Key {
    normalize(s).unwrap()
}

/// A store with what every section of the file holds: many tags (one freed, so its list is
/// empty), archived and deleted entries, links, access statistics.
fn filled(s: &mut Store) {
    for i in 0..3000u64 {
        let key = format!("topic{},item{},t{}", i / 50, i % 50, i % 7);
        s.put(&k(&key), &format!("value {i} of the checkpoint test"), 100 + i).unwrap();
    }
    s.put(&k("lonely,tag"), "freed below", 5000).unwrap();
    s.delete(&k("lonely,tag")).unwrap();
    for i in (0..3000u64).step_by(11) {
        let key = format!("topic{},item{},t{}", i / 50, i % 50, i % 7);
        s.set_archived(&k(&key), true, 6000).unwrap();
    }
    for i in (0..3000u64).step_by(13) {
        let key = format!("topic{},item{},t{}", i / 50, i % 50, i % 7);
        s.delete(&k(&key)).unwrap();
    }
    let a = s.find(&k("topic1,item1,t2")).unwrap();
    let b = s.find(&k("topic2,item3,t5")).unwrap();
    s.link(a, b).unwrap();
    s.load(&k("topic3,item4,t1"), 7000).unwrap();
    s.flush_access_only().unwrap();
}

/// A due checkpoint's cycle copies the index into the file and checksums none of it: the
/// column blocks', the posting lists', the sections' and the body's CRCs and the header are
/// taken beside the cycle, with the file's sync. The file put in place is byte for byte the
/// one a checkpoint taken at once writes of the same index.
#[test]
fn a_due_checkpoint_checksums_its_file_beside_the_cycle() {
    let d = temp_dir("ckpt-beside");
    let mut s = Store::open_with_capacity(&d, 4096).unwrap();
    filled(&mut s);
    s.checkpoint_in_steps().unwrap();
    assert!(s.checkpoint_syncing(), "the due checkpoint's file is finished beside the cycle");
    assert_eq!(s.checkpoint_checked_here(), 0, "the cycle checksummed the file's bytes itself");
    s.checkpoint_sync_step(true).unwrap();
    assert!(!s.checkpoint_syncing());
    same_as_at_once_and_reopened(s, &d, "the file finished beside the cycle");
}

/// Checkpoints let go of while the worker still finishes them (a checkpoint taken at once
/// meanwhile) are never put in place: the next due one waits in the worker's queue behind the
/// one it works on, one more while the queue is full is finished in its own cycle, and once
/// the worker goes on every result comes back (by its number), the last due checkpoint put in
/// place byte for byte as one taken at once. The store reopens from it.
#[test]
fn checkpoints_let_go_of_while_the_worker_finishes_them() {
    let d = temp_dir("ckpt-let-go");
    let mut s = Store::open_with_capacity(&d, 4096).unwrap();
    filled(&mut s);
    let (release, taken) = s.hold_checkpoint_finish();
    s.checkpoint_in_steps().unwrap();
    taken.recv().unwrap();
    assert!(s.checkpoint_syncing(), "the first due checkpoint was not handed to the worker");
    // Let go of: a checkpoint at once replaces it.
    s.checkpoint().unwrap();
    assert!(!s.checkpoint_syncing());
    s.put(&k("second,due"), "after the first let go of", 8000).unwrap();
    s.checkpoint_in_steps().unwrap();
    assert!(s.checkpoint_syncing(), "the second due checkpoint was not queued behind the held one");
    s.checkpoint_sync_step(false).unwrap();
    assert!(s.checkpoint_syncing(), "the queued checkpoint was put in place while the worker was held");
    s.checkpoint().unwrap();
    s.put(&k("third,due"), "the worker's queue is full", 8001).unwrap();
    s.checkpoint_in_steps().unwrap();
    assert!(!s.checkpoint_syncing(), "with the queue full, the checkpoint is finished in its cycle");
    let file_len = fs::metadata(d.join(CHECKPOINT_NAME)).unwrap().len();
    assert_eq!(s.checkpoint_checked_here(), file_len, "the cycle checksummed the whole file itself");
    drop(release);
    s.put(&k("fourth,due"), "the worker goes on", 8002).unwrap();
    s.checkpoint_in_steps().unwrap();
    s.checkpoint_sync_step(true).unwrap();
    assert!(!s.checkpoint_syncing());
    same_as_at_once_and_reopened(s, &d, "the last due checkpoint");
}

/// The checkpoint file in place in `d` (one finished beside the cycle) is byte for byte the one
/// `s` writes at once, and the store reopens from it holding what `s` holds; `d` is removed.
fn same_as_at_once_and_reopened(mut s: Store, d: &std::path::Path, what: &str) {
    let beside = fs::read(d.join(CHECKPOINT_NAME)).unwrap();
    s.checkpoint().unwrap();
    let at_once = fs::read(d.join(CHECKPOINT_NAME)).unwrap();
    assert_eq!(beside.len(), at_once.len(), "{what}");
    assert!(beside == at_once, "{what} differs from one written at once");
    // And it is read back whole: the reopened store holds what this one holds.
    let live = s.stats().entries;
    drop(s);
    let s = Store::open_with_capacity(d, 4096).unwrap();
    assert_eq!(s.stats().entries, live);
    assert!(s.stats().from_checkpoint);
    drop(s);
    let _ = fs::remove_dir_all(d);
}
