//! The read-only commands other than `memory search` (`status`, `memory query`, `memory
//! show`, `memory stats`) over the checkpoint with the log's tail laid over it, against the
//! store opened whole. The whole file is compiled for tests only (`#[cfg(test)] mod tests;` in
//! `tail.rs`), and says so itself too.
#![cfg(test)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use super::{InPlace, TailView};
use crate::memory::key::{normalize, Key};
use crate::memory::query::{Archived, Query, Results, Sort};
use crate::memory::store::view::StoreView;
use crate::memory::store::{Stats, Store, LOG_NAME};
use crate::testing::rng::Rng;
use crate::testing::temp_dir;
use std::path::Path;

fn k(s: &str) -> Key {
    normalize(s).unwrap()
}

const CAP: usize = 64;

/// The queries a user asks with `memory query`: by required, optional and excluded tags,
/// in every order, with each archived filter, by creation time and by access count.
fn queries() -> Vec<Query> {
    let mut qs = Vec::new();
    let keys: [(Option<&str>, Option<&str>, Option<&str>); 9] = [
        (None, None, None),
        (Some("fact"), None, None),
        (Some("fact,t1"), None, None),
        (Some("t2"), None, Some("t3")),
        (None, Some("t1,t4"), None),
        (None, Some("new,t5"), Some("t2")),
        (Some("new"), None, None),
        (Some("fresh"), Some("t1,fresh"), None),
        (Some("gone_tag"), None, None),
    ];
    for (req, opt, exc) in keys {
        for sort in [Sort::Newest, Sort::Oldest, Sort::MostAccessed, Sort::Relevance] {
            for archived in [Archived::Exclude, Archived::Include, Archived::Only] {
                for (created, hits, max) in [((0, u64::MAX), (0, u64::MAX), 5), ((1010, 6100), (1, u64::MAX), 50)] {
                    qs.push(Query {
                        required: req.map(k),
                        optional: opt.map(k),
                        excluded: exc.map(k),
                        created,
                        hits,
                        archived,
                        sort,
                        max_results: max,
                    });
                }
            }
        }
    }
    qs
}

/// `status`, `memory query`, `memory show` and `memory stats` answered by `view` equal the
/// answers of the store opened read-only; `stats_in_place`: whether the statistics must be
/// answered in place. Returns how many queries had hits.
fn same_as_opened(d: &Path, keys: &[Key], stats_in_place: bool, what: &str) -> usize {
    let mut view = InPlace::open(d, CAP).unwrap().expect("read in place");
    assert!(matches!(view, InPlace::Tail(_)), "{}: no tail", what);
    let mut ro = Store::open_read_only_with_capacity(d, CAP).unwrap();
    assert_eq!((view.len(), view.log_bytes()), (ro.len(), ro.log_bytes()), "{}: status", what);
    let mut with_hits = 0;
    for q in queries() {
        let (mut got, mut want) = (Results::with_capacity(50), Results::with_capacity(50));
        view.query(&q, &mut got).unwrap();
        ro.query(&q, &mut want);
        let got_infos: Vec<_> = got.ids().map(|id| view.info(id).unwrap().unwrap()).collect();
        let want_infos: Vec<_> = want.ids().map(|id| ro.info(id).unwrap()).collect();
        assert_eq!(got_infos, want_infos, "{}: {:?}", what, q);
        assert_eq!((got.matched(), got.truncated()), (want.matched(), want.truncated()), "{}: {:?}", what, q);
        with_hits += usize::from(!got_infos.is_empty());
    }
    for key in keys {
        let mut text = String::new();
        let found = view.value_of(key, &mut text).unwrap();
        let want = ro.find(key).map(|id| ro.value(id).unwrap().to_string());
        assert_eq!(found.then_some(text), want, "{}: show {}", what, key);
        let id = view.find(key).unwrap();
        assert_eq!(id, ro.find(key), "{}: find {}", what, key);
        if let Some(id) = id {
            assert_eq!(view.key(id).unwrap(), ro.key(id), "{}: key of {}", what, id);
        }
    }
    match view.stats().unwrap() {
        Some(st) => {
            let want = ro.stats();
            let plain = |s: Stats| Stats { ram_bytes: 0, ..s };
            assert_eq!(format!("{:?}", plain(st)), format!("{:?}", plain(want)), "{}: stats", what);
            if let Some(id) = st.most_accessed {
                assert_eq!(view.key(id).unwrap(), ro.key(id), "{}: most accessed", what);
            }
        }
        None => assert!(!stats_in_place, "{}: stats not answered in place", what),
    }
    with_hits
}

/// Beside a running agent (the log has records after its checkpoint) `status`, `memory
/// query`, `memory show` and `memory stats` read the checkpoint in place with the tail laid
/// over it, and answer as the store opened whole does (issue 39): puts of new keys and of new
/// tags, replaced values, deletions, archived entries, access counts, a retagged entry, a key
/// replaced twice and one replaced then deleted; a torn last record ignored as replay ignores
/// it; links changed in the tail leave the statistics to the store opened whole.
#[test]
fn the_read_only_commands_with_a_tail_after_the_checkpoint_in_place_equal_the_opened_stores() {
    let d = temp_dir("tail-commands-in-place");
    let mut rng = Rng::new(0x39_0032);
    let mut s = Store::open_with_capacity(&d, CAP).unwrap();
    let mut keys = Vec::new();
    for i in 0..50 {
        let key = k(&format!("fact,n{},t{},t{}", i, 1 + rng.below(5), 1 + rng.below(5)));
        s.put(&key, &format!("value {} of {}", i, key), 1000 + i as u64).unwrap();
        keys.push(key);
    }
    for key in &keys[..5] {
        s.set_archived(key, true, 2000).unwrap();
    }
    for (i, key) in keys[5..12].iter().enumerate() {
        let id = s.find(key).unwrap();
        for n in 0..=i {
            s.touch(id, 3000 + n as u64);
        }
    }
    s.flush_access().unwrap();
    s.put(&k("gone_tag,only"), "to be deleted", 3500).unwrap();
    keys.push(k("gone_tag,only"));
    s.close_with_indexes().unwrap();
    assert!(StoreView::open(&d, CAP).unwrap().is_some());

    // The agent's changes since its checkpoint, its writer dropped (not closed).
    let mut s = Store::open_with_capacity(&d, CAP).unwrap();
    for key in &keys[12..18] {
        s.delete(key).unwrap();
    }
    s.delete(&k("gone_tag,only")).unwrap();
    for (i, key) in keys[18..24].iter().enumerate() {
        s.put(key, &format!("replaced {}", i), 6000 + i as u64).unwrap();
    }
    for key in &keys[24..27] {
        s.set_archived(key, true, 6100).unwrap();
    }
    s.set_archived(&keys[0], false, 6101).unwrap();
    for (i, key) in keys[27..31].iter().enumerate() {
        let id = s.find(key).unwrap();
        for n in 0..=2 * i {
            s.touch(id, 6200 + n as u64);
        }
    }
    s.flush_access().unwrap();
    for i in 0..6 {
        let key = k(&format!("new,t{},fresh{}", 1 + i % 5, i));
        s.put(&key, &format!("fresh {}", i), 6300 + i as u64).unwrap();
        keys.push(key);
    }
    let retagged = s.add_tags(&keys[31], &k("t5,new"), 6400).unwrap();
    keys.push(retagged);
    s.put(&keys[32], "twice 1", 6500).unwrap();
    s.put(&keys[32], "twice 2", 6501).unwrap();
    s.put(&keys[33], "replaced, then deleted", 6502).unwrap();
    s.delete(&keys[33]).unwrap();
    let id = s.find(&keys[40]).unwrap();
    for n in 0..9 {
        s.touch(id, 6600 + n);
    }
    s.flush_access().unwrap();
    drop(s);
    assert!(StoreView::open(&d, CAP).unwrap().is_none(), "the checkpoint covers the log: no tail tested");
    let with_hits = same_as_opened(&d, &keys, true, "tail");
    assert!(with_hits > 100, "only {} queries had hits", with_hits);

    // A torn last record: half a put (a crash mid-write).
    let log_path = d.join(LOG_NAME);
    let good = std::fs::read(&log_path).unwrap();
    let mut torn = good.clone();
    torn.extend_from_slice(br#"{"op":"put","id":3,"ver":9,"tags":["fa"#);
    std::fs::write(&log_path, &torn).unwrap();
    same_as_opened(&d, &keys, true, "torn");
    std::fs::write(&log_path, &good).unwrap();

    // A tail longer than the old bound (256 KiB): its last put written again and again
    // (replay puts the same entry each time), as a long interval between checkpoints leaves it.
    let body = &good[..good.len() - 1];
    let line = good[body.iter().rposition(|&b| b == b'\n').unwrap() + 1..].to_vec();
    let mut long = good.clone();
    while long.len() < good.len() + (1 << 20) {
        long.extend_from_slice(&line);
    }
    std::fs::write(&log_path, &long).unwrap();
    same_as_opened(&d, &keys, true, "a tail of 1 MiB");

    // The bounds: the tail's bytes and the entries it changes, each exactly (read in place)
    // and one less (the store is to be opened whole).
    let ckpt = StoreView::open_covering(&d, CAP, u64::MAX).unwrap().unwrap().0.head.covered;
    let bytes = long.len() as u64 - ckpt;
    let t = TailView::open_bounded(&d, CAP, bytes, usize::MAX).unwrap().expect("a tail of exactly the bound");
    let entries = t.changed.len();
    assert!(entries > 20, "{} entries changed", entries);
    assert!(TailView::open_bounded(&d, CAP, bytes - 1, usize::MAX).unwrap().is_none());
    assert!(TailView::open_bounded(&d, CAP, bytes, entries).unwrap().is_some());
    assert!(TailView::open_bounded(&d, CAP, bytes, entries - 1).unwrap().is_none());
    std::fs::write(&log_path, &good).unwrap();

    // A key taken over by another id (replay removes the checkpoint's entry that held it):
    // settled once the tail is read. When the tail also changes that entry elsewhere, the
    // order of the two would matter: the store is opened whole.
    let put = |id: u32, key: &Key, value: &str| {
        let mut b = crate::fixed::FixedBuf::with_capacity("test record", 4096);
        let head = crate::memory::log::PutHead { id, ver: 1, created: 7000, accessed: 7000, hits: 0, archived: false };
        crate::memory::log::encode_put(&mut b, &head, key.tags(), value).unwrap();
        b.as_slice().to_vec()
    };
    let mut taken = good.clone();
    taken.extend_from_slice(&put(70, &keys[45], "taken over by id 70"));
    std::fs::write(&log_path, &taken).unwrap();
    same_as_opened(&d, &keys, true, "a key taken over");
    let ro = Store::open_read_only_with_capacity(&d, CAP).unwrap();
    assert_eq!(ro.find(&keys[45]), Some(70), "the case is not tested");
    drop(ro);
    let id46 = Store::open_read_only_with_capacity(&d, CAP).unwrap().find(&keys[46]).unwrap();
    let mut b = crate::fixed::FixedBuf::with_capacity("test record", 256);
    crate::memory::log::encode_touch(&mut b, id46, 7100, 5).unwrap();
    taken.extend_from_slice(b.as_slice());
    taken.extend_from_slice(&put(71, &keys[46], "taken over by id 71, touched before"));
    std::fs::write(&log_path, &taken).unwrap();
    assert!(InPlace::open(&d, CAP).unwrap().is_none());
    assert_eq!(Store::open_read_only_with_capacity(&d, CAP).unwrap().find(&keys[46]), Some(71));
    std::fs::write(&log_path, &good).unwrap();

    // Links changed in the tail: the statistics (their count) are the store's to give.
    let mut s = Store::open_with_capacity(&d, CAP).unwrap();
    let (a, b) = (s.find(&keys[40]).unwrap(), s.find(&keys[41]).unwrap());
    s.link(a, b).unwrap();
    drop(s);
    same_as_opened(&d, &keys, false, "a link");
    std::fs::remove_dir_all(&d).unwrap();
}

/// `memory stats` read in place equals the store opened whole when the configured capacity is
/// larger than the one the checkpoint was written at (issue 39's soak store: written at 1,024,
/// read with the default 65,536): the read-only store sizes its tables for the smaller one,
/// but the most tags it gives is the capacity's, as the view gives it.
#[test]
fn stats_in_place_equal_the_opened_stores_at_a_larger_capacity_than_written() {
    let d = temp_dir("tail-stats-capacity");
    let mut s = Store::open_with_capacity(&d, CAP).unwrap();
    for i in 0..20 {
        s.put(&k(&format!("fact,n{}", i)), "a value", 1000 + i).unwrap();
    }
    s.close_with_indexes().unwrap();
    let read_at = 65_536;
    let plain = |s: Stats| Stats { ram_bytes: 0, ..s };
    let want = plain(Store::open_read_only_with_capacity(&d, read_at).unwrap().stats());
    let got = InPlace::open(&d, read_at).unwrap().unwrap().stats().unwrap().unwrap();
    assert_eq!(plain(got), want, "exact");
    let mut s = Store::open_with_capacity(&d, CAP).unwrap();
    s.put(&k("fact,late"), "in the tail", 2000).unwrap();
    drop(s);
    let want = plain(Store::open_read_only_with_capacity(&d, read_at).unwrap().stats());
    let mut view = InPlace::open(&d, read_at).unwrap().unwrap();
    assert!(matches!(view, InPlace::Tail(_)));
    assert_eq!(plain(view.stats().unwrap().unwrap()), want, "tail");
    std::fs::remove_dir_all(&d).unwrap();
}

/// Random tails (puts of new and existing keys, deletions, archiving and back, touches,
/// retags), each laid over its checkpoint in place, answer `status`, `memory query`, `memory
/// show` and `memory stats` as the store opened whole does.
#[test]
fn random_tails_in_place_equal_the_opened_stores() {
    let mut rng = Rng::new(0x39_0033);
    let mut tested = 0;
    for round in 0..12 {
        let d = temp_dir("tail-random");
        let key_of = |rng: &mut Rng| match rng.below(3) {
            0 => k(&format!("new,t{},fresh{}", 1 + rng.below(5), rng.below(12))),
            _ => k(&format!("fact,n{},t{},t{}", rng.below(40), 1 + rng.below(5), 1 + rng.below(5))),
        };
        let mut s = Store::open_with_capacity(&d, CAP).unwrap();
        let mut keys: Vec<Key> = Vec::new();
        for i in 0..10 + rng.below(30) {
            let key = key_of(&mut rng);
            s.put(&key, &format!("first {} of round {}", i, round), 1000 + i as u64).unwrap();
            keys.push(key);
        }
        s.close_with_indexes().unwrap();
        let mut s = Store::open_with_capacity(&d, CAP).unwrap();
        for i in 0..5 + rng.below(40) {
            let now = 5000 + i as u64;
            let key = match rng.chance(3) {
                true => key_of(&mut rng),
                false => *rng.pick(&keys),
            };
            let _ = match rng.below(6) {
                0 | 1 => s.put(&key, &format!("tail {} of round {}", i, round), now).map(|_| ()),
                2 => s.delete(&key).map(|_| ()),
                3 => s.set_archived(&key, rng.chance(2), now).map(|_| ()),
                4 => match s.find(&key) {
                    Some(id) => {
                        s.touch(id, now);
                        s.flush_access().map(|_| ())
                    }
                    None => Ok(()),
                },
                _ => s.add_tags(&key, &k(&format!("t{}", 1 + rng.below(5))), now).map(|new| keys.push(new)),
            };
            keys.push(key);
        }
        drop(s);
        if StoreView::open(&d, CAP).unwrap().is_none() && InPlace::open(&d, CAP).unwrap().is_some() {
            same_as_opened(&d, &keys, true, &format!("round {}", round));
            tested += 1;
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
    assert!(tested >= 8, "only {} rounds had a tail read in place", tested);
}
