#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Property test of `memory.json`: whatever the working set and the agent map hold (non-ASCII
//! text, empty values, quotes, backslashes, newlines, control characters, keys of several tags
//! joined by commas), saving and loading gives it back exactly, metadata and order included.

#[path = "support/temp.rs"]
mod temp;

use lkjagent::memory::file::{load, MemoryFile, Saver, Source};
use lkjagent::memory::key::normalize;
use lkjagent::memory::store::Store;
use proptest::prelude::*;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), "\\PC{0,40}", "[\"\\\\\n\r\t\u{0}\u{1}\u{1f}\u{7f}é→😀 ,.]{0,24}",]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn save_then_load_is_exact(
        entries in prop::collection::vec(("[a-zA-Z0-9 é日.,\\[\\]\"_-]{1,30}", text(), 0u64..1_000_000, 0u64..50), 0..24),
        agent in prop::collection::vec(("[a-z_]{1,16}", text()), 0..8),
        state in "[a-z]{1,12}",
        iteration in any::<u64>(),
    ) {
        let dir = temp::temp_dir("memory-props");

        let mut m = MemoryFile::new();
        m.set_state(&state).unwrap();
        m.iteration = iteration;
        for (k, t, now, hits) in &entries {
            let Ok(key) = normalize(k) else { continue };
            m.working.add(&key, t, *now).unwrap();
            for _ in 0..*hits % 3 {
                m.working.touch(&key, now + 1);
            }
        }
        for (k, v) in &agent {
            m.agent.set(k, v).unwrap();
        }
        let mut saver = Saver::new(&dir);
        saver.save(&m).unwrap();
        let mut store = Store::open_with_capacity(&dir, 4).unwrap();
        let (got, report) = load(&dir, &mut store, 0).unwrap();
        prop_assert_eq!(report.source, Source::Main);
        prop_assert_eq!(got.state.as_str(), m.state.as_str());
        prop_assert_eq!(got.iteration, m.iteration);
        let a: Vec<_> = m.working.iter().map(|(k, t, meta)| (k.to_string(), t.to_string(), meta)).collect();
        let b: Vec<_> = got.working.iter().map(|(k, t, meta)| (k.to_string(), t.to_string(), meta)).collect();
        prop_assert_eq!(a, b);
        let a: Vec<_> = m.agent.iter().collect();
        let b: Vec<_> = got.agent.iter().collect();
        prop_assert_eq!(a, b);
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
