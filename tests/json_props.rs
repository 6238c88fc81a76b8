#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! Property tests of the JSON layer: serialize-then-parse is the identity on generated
//! documents (non-ASCII, escapes, empty containers, duplicate keys, nesting), compact and pretty
//! agree, slicing the input never changes the result, and no byte string makes the parser
//! panic. Case counts are modest so the suite stays fast.

use lkjagent::json::{Document, Kind, Parser, Validate, Value, Writer};
use proptest::prelude::*;

/// An owned JSON tree, the model the arena is checked against.
#[derive(Clone, Debug, PartialEq)]
enum J {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

/// Numbers from the RFC 8259 grammar, kept as text.
fn number() -> impl Strategy<Value = String> {
    "-?(0|[1-9][0-9]{0,12})(\\.[0-9]{1,6})?([eE][+-]?[0-9]{1,3})?"
}

/// Strings: any Unicode scalar values (controls, quotes, backslashes, astral planes included).
fn text() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), "[a-z\"\\\\/\\n\\t\\u{0}-\\u{1f}é日😀]{0,12}"]
}

fn tree() -> impl Strategy<Value = J> {
    let leaf = prop_oneof![
        Just(J::Null),
        any::<bool>().prop_map(J::Bool),
        number().prop_map(J::Num),
        text().prop_map(J::Str),
    ];
    leaf.prop_recursive(8, 96, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(J::Arr),
            // Keys from a small set too, so duplicates occur.
            prop::collection::vec((prop_oneof![text(), "[ab]"], inner), 0..6).prop_map(J::Obj),
        ]
    })
}

/// Writes the model with the Writer's building calls, the same calls the agent makes
/// (recursion here is bounded by the generator's depth of 8).
fn write(j: &J, w: &mut Writer<'_, String>) {
    match j {
        J::Null => w.null().unwrap(),
        J::Bool(b) => w.bool(*b).unwrap(),
        J::Num(n) => w.number_text(n).unwrap(),
        J::Str(s) => w.string(s).unwrap(),
        J::Arr(items) => {
            w.begin_array().unwrap();
            for i in items {
                write(i, w);
            }
            w.end_array().unwrap();
        }
        J::Obj(members) => {
            w.begin_object().unwrap();
            for (k, v) in members {
                w.key(k).unwrap();
                write(v, w);
            }
            w.end_object().unwrap();
        }
    }
}

fn serialize(j: &J, pretty: bool) -> String {
    let mut s = String::new();
    let mut w = if pretty { Writer::pretty(&mut s) } else { Writer::compact(&mut s) };
    write(j, &mut w);
    w.finish().unwrap();
    s
}

/// Reads a parsed value back into the model.
fn model(v: Value<'_>) -> J {
    match v.kind() {
        Kind::Null => J::Null,
        Kind::Bool => J::Bool(v.as_bool().unwrap()),
        Kind::Number => J::Num(v.number_text().unwrap().to_string()),
        Kind::String => J::Str(v.as_str().unwrap().to_string()),
        Kind::Array => J::Arr(v.items().map(model).collect()),
        Kind::Object => J::Obj(v.members().map(|(k, v)| (k.to_string(), model(v))).collect()),
    }
}

fn doc() -> Document {
    Document::with_capacity(1 << 14, 1 << 20)
}

/// Parses `input` fed in slices cut at `cuts` (positions, any order) and re-serializes it
/// compact through the event path.
fn reformat_sliced(input: &[u8], cuts: &[usize]) -> Result<String, String> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    points.push(0);
    points.push(input.len());
    points.sort_unstable();
    let mut out = String::new();
    let mut w = Writer::compact(&mut out);
    let mut p = Parser::new();
    for pair in points.windows(2) {
        p.feed(&input[pair[0]..pair[1]], &mut w).map_err(|e| e.to_string())?;
    }
    p.finish(&mut w).map_err(|e| e.to_string())?;
    Ok(out)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn serialize_then_parse_is_the_identity(j in tree()) {
        let mut d = doc();
        for pretty in [false, true] {
            let text = serialize(&j, pretty);
            d.parse(text.as_bytes()).unwrap();
            prop_assert_eq!(model(d.root()), j.clone());
        }
    }

    #[test]
    fn compact_and_pretty_agree_and_reserialize_identically(j in tree()) {
        let compact = serialize(&j, false);
        let pretty = serialize(&j, true);
        let (mut a, mut b) = (doc(), doc());
        a.parse(compact.as_bytes()).unwrap();
        b.parse(pretty.as_bytes()).unwrap();
        prop_assert!(a.root() == b.root());
        // Document -> Writer::value reproduces the compact text byte for byte.
        let mut again = String::new();
        Writer::compact(&mut again).value(b.root()).unwrap();
        prop_assert_eq!(&again, &compact);
        let mut again_pretty = String::new();
        Writer::pretty(&mut again_pretty).value(a.root()).unwrap();
        prop_assert_eq!(&again_pretty, &pretty);
    }

    #[test]
    fn slicing_never_changes_the_result(j in tree(), cuts in prop::collection::vec(any::<usize>(), 0..8)) {
        let pretty = serialize(&j, true);
        prop_assert_eq!(reformat_sliced(pretty.as_bytes(), &cuts), Ok(serialize(&j, false)));
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_verdicts_agree(bytes in prop::collection::vec(any::<u8>(), 0..256),
                                                      cuts in prop::collection::vec(any::<usize>(), 0..4)) {
        let mut d = doc();
        let whole = d.parse(&bytes).is_ok();
        prop_assert_eq!(reformat_sliced(&bytes, &cuts).is_ok(), whole);
    }

    #[test]
    fn mutated_documents_never_panic_and_verdicts_agree(j in tree(), at in any::<usize>(), byte in any::<u8>(),
                                                        cuts in prop::collection::vec(any::<usize>(), 0..4)) {
        let mut bytes = serialize(&j, false).into_bytes();
        let i = at % bytes.len();
        bytes[i] = byte;
        let mut d = doc();
        let whole = d.parse(&bytes);
        let sliced = reformat_sliced(&bytes, &cuts);
        prop_assert_eq!(sliced.is_ok(), whole.is_ok());
        if let Err(e) = whole {
            // Every rejection says where.
            prop_assert!(e.message().contains("at byte"), "{}", e);
        }
        let mut p = Parser::new();
        let _ = p.feed(&bytes, &mut Validate);
    }
}
