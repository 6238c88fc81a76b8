#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! The store log is untrusted input: whatever bytes a damaged disk or a careless edit leaves in
//! it, opening the store never panics. It either opens (dropping or skipping what does not
//! check out, every entry it reports readable) or fails with a clean error; and a crash-style
//! damage (a cut at any byte) always opens with exactly the records before the cut.

#[path = "support/temp.rs"]
mod temp;
use lkjagent::memory::key::normalize;
use lkjagent::memory::store::{Store, LOG_NAME};
use proptest::prelude::*;
use temp::temp_dir;

/// A small valid log: puts, an overwrite, a delete, a link, an archive, touches.
fn valid_log(dir: &std::path::Path) -> Vec<u8> {
    let mut s = Store::open_with_capacity(dir, 16).unwrap();
    let a = s.put(&normalize("alpha,notes").unwrap(), "first \"value\"\n é", 1).unwrap().id;
    let b = s.put(&normalize("beta").unwrap(), "", 2).unwrap().id;
    s.put(&normalize("alpha,notes").unwrap(), "second", 3).unwrap();
    s.put(&normalize("gamma").unwrap(), "third", 4).unwrap();
    s.link(a, b).unwrap();
    s.delete(&normalize("gamma").unwrap()).unwrap();
    s.set_archived(&normalize("beta").unwrap(), true, 5).unwrap();
    s.load(&normalize("alpha,notes").unwrap(), 6).unwrap();
    s.flush_access().unwrap();
    drop(s);
    std::fs::read(dir.join(LOG_NAME)).unwrap()
}

fn open_and_check(dir: &std::path::Path) -> Option<usize> {
    match Store::open_with_capacity(dir, 16) {
        Ok(mut s) => {
            let ids: Vec<u32> = s.ids().collect();
            for id in &ids {
                let key = s.key(*id).unwrap();
                assert_eq!(s.find(&key), Some(*id));
                s.value(*id).unwrap();
            }
            Some(ids.len())
        }
        Err(_) => None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    #[test]
    fn any_damage_opens_or_fails_cleanly(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        insert in prop::collection::vec(any::<u8>(), 0..64),
        at in any::<prop::sample::Index>(),
    ) {
        let dir = temp_dir("damage");
        let mut bytes = valid_log(&dir);
        for (i, b) in &edits {
            let i = i.index(bytes.len());
            bytes[i] = *b;
        }
        let at = at.index(bytes.len() + 1);
        bytes.splice(at..at, insert.iter().copied());
        std::fs::write(dir.join(LOG_NAME), &bytes).unwrap();
        let _ = open_and_check(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_cut_at_any_byte_keeps_the_records_before_it(cut in any::<prop::sample::Index>()) {
        let dir = temp_dir("cut");
        let bytes = valid_log(&dir);
        let cut = cut.index(bytes.len() + 1);
        std::fs::write(dir.join(LOG_NAME), &bytes[..cut]).unwrap();
        let n = open_and_check(&dir);
        prop_assert!(n.is_some(), "a cut log must open");
        let kept = std::fs::read(dir.join(LOG_NAME)).unwrap();
        let header = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
        // Every log starts whole (it is created atomically); a cut header is not a store log:
        // it is kept aside and a fresh log (a header alone, with a new store id) started.
        if cut < header {
            prop_assert_eq!(kept.len(), header);
            let fresh = lkjagent::memory::log::decode(&kept[..header - 1]);
            prop_assert!(matches!(fresh, Ok(lkjagent::memory::log::Record::Header { .. })), "{:?}", fresh);
            prop_assert_eq!(n, Some(0));
        } else {
            prop_assert_eq!(&bytes[..header], &kept[..header]);
            // The file now ends at the last record boundary at or before the cut.
            prop_assert!(kept.len() <= cut && kept.ends_with(b"\n"));
            prop_assert!(cut - kept.len() < 200, "dropped more than the cut record");
            prop_assert_eq!(&bytes[..kept.len()], &kept[..]);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
