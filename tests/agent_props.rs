//! Whole agent cycles on arbitrary model replies: random bytes, tag soup, and half-valid replies
//! built from the protocol's own pieces. Whatever the model writes, a cycle never fails (only a
//! persist fault may), never panics, always ends in a configured state, keeps memory.json
//! loadable, and never loses what the store had acknowledged.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "support/temp.rs"]
mod temp;

use lkjagent::agent::config;
use lkjagent::agent::engine::{Agent, Model};
use proptest::prelude::*;

/// Pieces models really write, to be glued together in random order.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("<agent>".to_string()),
        Just("</agent>".to_string()),
        Just("<think>".to_string()),
        Just("</think>".to_string()),
        Just("```xml\n".to_string()),
        Just("```".to_string()),
        prop::sample::select(vec!["thinking", "commanding", "evaluating", "paging", "base", "nowhere"])
            .prop_map(|s| format!("<next_state>{}</next_state>", s)),
        "[a-z ,]{0,40}".prop_map(|t| format!("<think_log>{}</think_log>", t)),
        "[a-z ,]{0,40}".prop_map(|t| format!("<evaluation_log>{}</evaluation_log>", t)),
        (
            prop::sample::select(vec![
                "working_memory_add",
                "working_memory_remove",
                "storage_save",
                "storage_load",
                "storage_search",
                "move_to_disk",
                "archive_old",
                "record_update",
                "bogus",
            ]),
            "[a-zA-Z, _]{0,30}",
            "[ -~]{0,60}",
        )
            .prop_map(|(t, tags, v)| format!(
                "<action><type>{}</type><tags>{}</tags><value>{}</value></action>",
                t,
                tags,
                v.replace('<', "&lt;").replace('&', "&amp;")
            )),
        "[ -~]{0,30}",
        Just("&amp;&lt;&#x41;&bogus;".to_string()),
        Just("<![CDATA[x<y]]>".to_string()),
    ]
}

fn reply() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::collection::vec(piece(), 0..10).prop_map(|v| v.concat()),
        1 => prop::collection::vec(any::<u8>(), 0..200).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn any_reply_leaves_the_agent_consistent(replies in prop::collection::vec(reply(), 1..8)) {
        let d = temp::temp_dir("agent-props");
        let shipped = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/data/config.json")).unwrap();
        let script = d.join("script.jsonl");
        let mut lines = String::new();
        for r in &replies {
            lines.push_str(&format!("{{\"content\": {}}}\n", json_string(r)));
        }
        std::fs::write(&script, lines).unwrap();
        let text = shipped
            .replace("\"provider\": \"openai\"", &format!("\"provider\": \"replay\", \"replay_path\": {:?}", script))
            .replace("\"invalid_reply_backoff_ms\": 5000", "\"invalid_reply_backoff_ms\": 0");
        std::fs::write(d.join("config.json"), text).unwrap();
        std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/data/memory.json"), d.join("memory.json")).unwrap();
        let cfg = config::load(&d).unwrap();
        let states = cfg.agent.states.clone();
        let client = lkjagent::llm::Client::new(&cfg.llm).unwrap();
        let mut agent = Agent::open(&d, cfg, Model::Client(Box::new(client)), false).unwrap();
        let mut stored = 0usize;
        for _ in 0..replies.len() {
            let r = agent.cycle(&mut |_| {}, &|| false).unwrap();
            prop_assert!(r.error.is_none(), "{:?}", r.error);
            prop_assert!(states.iter().any(|s| s == r.next_state.as_str()), "state {}", r.next_state.as_str());
            // No action deletes from the store (archiving keeps entries): it never shrinks.
            prop_assert!(agent.store.len() >= stored, "store went from {} to {}", stored, agent.store.len());
            stored = agent.store.len();
        }
        let entries = agent.store.len();
        drop(agent);
        // memory.json and the store load again, with the same store contents.
        let mut store = lkjagent::memory::store::Store::open(&d).unwrap();
        prop_assert_eq!(store.len(), entries);
        let (m, _) = lkjagent::memory::file::load(&d, &mut store, 0).unwrap();
        prop_assert!(states.iter().any(|s| s == m.state.as_str()));
        let _ = std::fs::remove_dir_all(&d);
    }
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::new();
    lkjagent::json::escape::write_json_str(&mut out, s).unwrap();
    out
}
