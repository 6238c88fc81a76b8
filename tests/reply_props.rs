#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Property tests of the tag parser and the reply reader: no input makes them panic or break
//! their bounds, and what the renderer writes the parser reads back to the same tree.

#[path = "support/reply_checks.rs"]
mod reply_checks;

use lkjagent::reply::Reader;
use lkjagent::tag::{render_tree, Node, ParseOptions, Shape, Source, Style, TagTree};
use proptest::prelude::*;
use reply_checks::{check_reading, check_tree, PIECES};

fn tagish() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..80).prop_map(|v| v.concat())
}

fn check_bounds(reader: &mut Reader, input: &[u8], max_actions: usize) {
    let it = reader.read(input, max_actions);
    if let Err(e) = check_reading(&it, input, max_actions) {
        panic!("{}: {:?}", e, String::from_utf8_lossy(input));
    }
}

/// Found by `make fuzz`: a `<paging>` block whose directives' names are in mixed case is one
/// action, as in lower case (the check once compared element names by case and failed here).
#[test]
fn a_paging_block_in_mixed_case_is_one_action() {
    let input = b"<paging>\n<move_to_diSk>draft_notes</move_to_disk>\n<archIve_old>old_\xe2lan</archive_old>\n\
        <rationale>Working memory is near the limit.</rationale>\n</cord_search>\n  <ids>meeting,no</action>paging>";
    let mut r = Reader::new();
    let it = r.read(input, 1);
    assert_eq!(it.actions().count(), 2);
    assert_eq!(it.actions_found(), 1);
    check_bounds(&mut r, input, 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(input in prop::collection::vec(any::<u8>(), 0..2048), max in 1usize..4) {
        let mut r = Reader::new();
        check_bounds(&mut r, &input, max);
    }

    #[test]
    fn tag_like_text_never_panics(input in tagish(), max in 1usize..4) {
        let mut r = Reader::new();
        check_bounds(&mut r, input.as_bytes(), max);
        let mut t = TagTree::with_capacity(64, 4096);
        t.parse(&input, &ParseOptions { text_elements: &["value", "think_log"] });
        // Within its 64 nodes, and the walk visits every node exactly once.
        check_tree(&t, input.len(), 64).map_err(|e| TestCaseError::fail(format!("{}: {:?}", e, input)))?;
    }
}

/// A generated tree: text leaves, maps with arbitrary keys, lists.
#[derive(Clone, Debug)]
enum T {
    Text(String),
    Map(Vec<(String, T)>),
    List(Vec<T>),
}

impl<'a> Source<'a> for &'a T {
    fn shape(&self) -> Shape<'a> {
        match self {
            T::Text(s) => Shape::Text(s),
            T::Map(_) => Shape::Map,
            T::List(_) => Shape::List,
        }
    }
    fn child(&self, i: usize) -> Option<(&'a str, Self)> {
        match self {
            T::Map(m) => m.get(i).map(|(k, v)| (k.as_str(), v)),
            T::List(l) => l.get(i).map(|v| ("item", v)),
            T::Text(_) => None,
        }
    }
}

/// What a tree reads back as: texts trimmed, lists as maps of `item`, empty containers as "".
#[derive(Debug, PartialEq)]
enum N {
    Text(String),
    Map(Vec<(String, N)>),
}

fn normal(t: &T) -> N {
    match t {
        T::Text(s) => N::Text(s.trim().to_string()),
        T::Map(m) if m.is_empty() => N::Text(String::new()),
        T::List(l) if l.is_empty() => N::Text(String::new()),
        T::Map(m) => N::Map(m.iter().map(|(k, v)| (k.clone(), normal(v))).collect()),
        T::List(l) => N::Map(l.iter().map(|v| ("item".to_string(), normal(v))).collect()),
    }
}

fn read_back(n: Node<'_>) -> N {
    match n.text_content() {
        Some(t) => N::Text(t.to_string()),
        None => N::Map(n.elements().map(|c| (c.key().to_string(), read_back(c))).collect()),
    }
}

fn tree() -> impl Strategy<Value = T> {
    let key = prop_oneof![
        "[a-z_][a-z0-9_,.]{0,12}",
        any::<String>().prop_map(|s| s.chars().take(12).collect::<String>()),
        Just(String::new()),
        Just("2024,plans".to_string()),
        Just("a \"quoted\" key".to_string()),
    ];
    let leaf = any::<String>().prop_map(T::Text);
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec((key.clone(), inner.clone()), 0..6).prop_map(T::Map),
            prop::collection::vec(inner, 0..4).prop_map(T::List),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn render_then_parse_is_identity(members in prop::collection::vec(("[a-z_][a-z0-9_,]{0,8}|.{0,6}", tree()), 0..6), lines in any::<bool>()) {
        let root = T::Map(members);
        let mut out = String::new();
        let style = if lines { Style::Lines } else { Style::Compact };
        render_tree(&mut out, &root, None, style).unwrap();
        let mut t = TagTree::with_capacity(100_000, 1 << 20);
        let report = *t.parse(&out, &ParseOptions::default());
        prop_assert!(report.is_clean(), "{:?} for {:?}", report, out);
        let got = N::Map(t.root().elements().map(|c| (c.key().to_string(), read_back(c))).collect());
        let want = match normal(&root) {
            N::Text(_) => N::Map(Vec::new()),
            m => m,
        };
        prop_assert_eq!(got, want, "rendered: {:?}", out);
    }
}

const PROSE: &[&str] = &[
    "",
    "Sure! Here is my answer:\n",
    "I'll save the definition now.\n\n",
    "**Next step:** save it.\n",
    "Following the required format:\n```xml\n",
];

fn escaped(s: &str) -> String {
    let mut out = String::new();
    lkjagent::tag::syntax::write_text(&mut out, s).unwrap();
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Reasoning, prose and fences around a canonical reply never change what is taken from it.
    #[test]
    fn noise_around_a_canonical_reply_changes_nothing(
        state in "[a-z_]{1,12}",
        tags in "[a-z]{1,8}(,[a-z ]{1,8}){0,3}",
        value in any::<String>().prop_filter("non-empty", |v| !v.trim().is_empty()),
        reasoning in tagish().prop_filter("no end of reasoning", |r| !r.to_ascii_lowercase().contains("</think>")),
        prefix in prop::sample::select(PROSE),
        orphan in any::<bool>(),
        suffix in prop::sample::select(&["", "\n```", "\nLet me know if you need more.", "\n\nDone."][..]),
    ) {
        let answer = format!(
            "<agent>\n  <next_state>{}</next_state>\n  <action>\n    <type>storage_save</type>\n    <tags>{}</tags>\n    <value>{}</value>\n  </action>\n</agent>",
            state, tags, escaped(&value)
        );
        let reply = if orphan {
            format!("{}</think>\n{}{}{}", reasoning, prefix, answer, suffix)
        } else {
            format!("<think>{}</think>\n{}{}{}", reasoning, prefix, answer, suffix)
        };
        let mut r = Reader::new();
        let it = r.read(reply.as_bytes(), 1);
        prop_assert!(!it.has_errors(), "{:?}\n{}", it.problems(), reply);
        prop_assert_eq!(it.next_state(), Some(state.as_str()));
        let a = it.actions().next().unwrap();
        prop_assert_eq!(a.tags, tags.trim());
        prop_assert_eq!(a.value, Some(value.trim()));
    }
}
