//! Self-tests of the GBNF test toolkit (tests/support/gbnf.rs): llama.cpp's syntax and its
//! refusals, matching, sampling, and the repetition-product measure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "support/gbnf.rs"]
mod gbnf;

use gbnf::{rng, Grammar};

const AGENT: &str = r#"root ::= "<agent>" ws ( next | action ) ws "</agent>"
ws ::= [ \t\n]{0,4}
next ::= "<next_state>" ("thinking" | "commanding") "</next_state>"
action ::= "<action><type>storage_save</type><tags>" tag ("," tag){0,7} "</tags><value>" [^<&]{1,400} "</value></action>"
tag ::= [a-z0-9_]{1,32}
"#;

fn parse(text: &str) -> Grammar {
    Grammar::parse(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Parses `text`, checks the error names `at byte {at}` and contains `what`.
fn refused(text: &str, at: usize, what: &str) {
    let e = Grammar::parse(text).err().unwrap_or_else(|| panic!("accepted: {text:?}"));
    assert!(e.contains(&format!("at byte {at}:")) && e.contains(what), "{text:?} gave {e:?}");
}

/// `root ::= {body}` against each (input, expected).
fn check(body: &str, cases: &[(&str, bool)]) {
    let g = parse(&format!("root ::= {body}\n"));
    for &(input, want) in cases {
        assert_eq!(g.matches(input), want, "root ::= {body} on {input:?}");
    }
}

#[test]
fn parse_errors_name_the_offset() {
    refused("root ::= foo\n", 9, "undefined rule `foo`");
    refused(r#"root ::= "a\d""#, 11, "unknown escape");
    refused("a ::= \"x\"\n", 10, "no `root` rule");
    refused(r#"root ::= ("a""#, 13, "expecting `)` (group opened at byte 9)");
    refused(r#"root ::= "a")"#, 12, "expecting newline or end");
    refused(r#"root ::= "ab"#, 9, "unterminated literal");
    refused("root ::= [ab", 9, "unterminated character class");
    refused(r#"root ::= "a"{,3}"#, 13, "write `{0,n}`");
    refused(r#"root ::= "a"{1"#, 14, "expecting `,` or `}`");
    refused("root ::= a_b\na ::= \"\"", 10, "expecting newline or end");
    refused("root ::= \"a\"\n  \"b\"\n", 15, "expecting a rule name");
    refused("root ::= <think>", 9, "tokens");
    refused("root ::= \"a\"\nroot ::= \"b\"", 13, "defined twice");
    refused("root ::= *\"a\"", 9, "expecting an item");
    refused("root ::= \"\"?", 11, "expecting an item");
    refused("root ::= []", 9, "empty character class");
    refused("root ::= [z-a]", 9, "reversed range");
    refused(r#"root ::= "\uD800""#, 10, "not a Unicode scalar value");
    refused(r#"root ::= "\x4""#, 10, "expecting 2 hex digits");
    refused("root ::= \"a\"{3,2}", 12, "below its minimum");
    refused("root ::= \"a\" | root \"b\"\n", 0, "left recursion through rule `root`");
    refused("root ::= x\nx ::= \"a\"? y\ny ::= x \"b\"", 11, "left recursion");
    // llama.cpp's MAX_REPETITION_THRESHOLD: 1 x 2000, and a group of 1 + 100 rules x 20.
    refused("root ::= \"a\"{0,2000}", 12, "reaches 2000");
    refused("root ::= \"a\"{0,2001}", 12, "sane defaults");
    refused("root ::= (\"a\"{0,100}){0,20}", 21, "101 rule(s) repeated x 20");
    refused("root ::= \"a\"{2001,}", 12, "sane defaults");
    // llama.cpp's own tests/test-grammar-parser.cpp failures.
    refused("root ::= \"a\"{,}\"", 13, "expecting an integer");
    refused("root ::= (((((([^x]*){0,99}){0,99}){0,99}){0,99}){0,99}){0,99}", 28, "102 rule(s) repeated x 99");
    refused("root ::= \"a\"{5000}", 12, "sane defaults");
    refused("root ::= \"a\"{5000,6000}", 12, "sane defaults");
}

/// Cases from llama.cpp's tests/test-grammar-integration.cpp.
#[test]
fn llama_cpp_integration_cases() {
    let expr = r#"
        root ::= expression
        expression ::= term ws (("+"|"-") ws term)*
        term ::= factor ws (("*"|"/") ws factor)*
        factor ::= number | variable | "(" expression ")" | function-call
        number ::= [0-9]+
        variable ::= [a-zA-Z_][a-zA-Z0-9_]*
        function-call ::= variable ws "(" (expression ("," ws expression)*)? ")"
        ws ::= [ \t\n\r]?"#;
    let good = ["42", "x1+y2", "(a + b) * (c - d)", "func()", "func(x, y + 2)", "f(g(x), h(y, z))", "a*(b+c)-d/e"];
    let bad = ["+", "x + + y", "func(,)", "func(x y)", "(a + b", "x + y)", "42 +", "f(g(x), h(y, z)"];
    let cases: Vec<(&str, bool)> = good.iter().map(|s| (*s, true)).chain(bad.iter().map(|s| (*s, false))).collect();
    let g = parse(expr);
    cases.iter().for_each(|&(s, want)| assert_eq!(g.matches(s), want, "{s:?}"));
    check(
        r#"... "abc" ..."#,
        &[("aaaabcccc", true), ("🔵🟠✅abc❌🟠🔵", true), ("aaabcccc", false), ("🔵🟠abc🟠🔵", false)],
    );
    let g = parse("root ::= cons+ vowel* cons? (vowel cons)*\nvowel ::= [aeiouy]\ncons ::= [bcdfghjklmnpqrstvwxyz]");
    assert!(["yes", "no", "noyes", "crwth", "four", "bryyyy"].iter().all(|s| g.matches(s)));
    assert!(!["yess", "yesno", "forty", "catyyy"].iter().any(|s| g.matches(s)));
    check(r#"("0x" [A-F0-9]{2} " "?){3,5}"#, &[("0xFF 0x12 0xAB", true), ("0xFF 0x12", false)]);
    check("( [x]* )*", &[("", true), ("xx", true), ("y", false)]);
    for text in [
        r#"root ::= "a" | root "a""#,
        "root ::= asdf\nasdf ::= \"a\" | foo \"b\"\nfoo ::= \"c\" | empty asdf \"d\" | \"e\"\nempty ::= \"blah\" | ",
    ] {
        assert!(Grammar::parse(text).unwrap_err().contains("left recursion"), "{text}");
    }
}

#[test]
fn llama_cpp_layout_is_accepted() {
    let text =
        "# a comment\n\nroot ::= # after ::=\n  \"a\" | # alt\n  (\n \"b\"\n | \"c\" # inner\n)+ x\r\nx ::= \"\" \n";
    let g = parse(text);
    assert_eq!(g.rule_names(), ["root", "x"]);
    assert!(g.matches("a") && g.matches("b") && g.matches("bcb") && !g.matches("") && !g.matches("ab"));
    // Items need no separating space; names may hold digits, upper case, dashes.
    let g = parse("root ::= \"a\"\"b\"Ab-9[c]\nAb-9 ::= \"-\"");
    assert!(g.matches("ab-c"));
    assert!(parse("root ::= \"a\"**").matches("aaa"));
    assert!(parse("root ::= \"a\" root | \"\"").matches("aaaa"));
    assert!(Grammar::parse("root ::= \"a\"{0,1999}").is_ok());
}

#[test]
fn literal_escapes_and_raw_utf8() {
    check(
        r#""\x41\u00e9\U0001F600\t\r\n\\\"\[\]\-é中""#,
        &[("Aé😀\t\r\n\\\"[]-é中", true), ("Aé😀\t\r\n\\\"[]-é", false), ("", false)],
    );
    check(r#""" "x" """#, &[("x", true), ("", false)]);
}

#[test]
fn char_classes() {
    check("[a-cx]", &[("a", true), ("c", true), ("x", true), ("d", false), ("", false), ("ab", false)]);
    check("[^a-z\\n]", &[("A", true), ("é", true), ("😀", true), ("q", false), ("\n", false)]);
    check(r"[\]\-\\\x00-\x1F]", &[("]", true), ("-", true), ("\\", true), ("\u{1}", true), (" ", false)]);
    check("[a-]", &[("a", true), ("-", true), ("b", false)]);
    check("[-a]", &[("a", true), ("-", true)]);
    check("[[]", &[("[", true)]);
    check("[é-ü中]", &[("ö", true), ("中", true), ("e", false)]);
    check(".", &[("a", true), ("\n", true), ("😀", true), ("", false), ("ab", false)]);
}

#[test]
fn repetition_forms() {
    type Case = (&'static str, fn(usize) -> bool);
    let table: [Case; 8] = [
        ("\"a\"*", |_| true),
        ("\"a\"+", |k| k >= 1),
        ("\"a\"?", |k| k <= 1),
        ("\"a\"{3}", |k| k == 3),
        ("\"a\"{2,}", |k| k >= 2),
        ("\"a\"{2,4}", |k| (2..=4).contains(&k)),
        ("\"a\"{0,2}", |k| k <= 2),
        ("\"a\"{ 1 , 2 }", |k| (1..=2).contains(&k)),
    ];
    for (body, want) in table {
        let g = parse(&format!("root ::= {body}"));
        for k in 0..12 {
            assert_eq!(g.matches(&"a".repeat(k)), want(k), "root ::= {body} on {k} a's");
        }
        assert!(!g.matches("b") && !g.matches("aab"));
    }
    check("(\"ab\" | \"c\"){2} \"!\"", &[("abc!", true), ("cc!", true), ("c!", false), ("abcab!", false)]);
    check("(\"a\"?){2,3}", &[("", true), ("aaa", true), ("aaaa", false)]);
    check("(\"a\"{0,0})* \"b\"", &[("b", true), ("ab", false)]);
}

#[test]
fn samples_match_and_reach_both_ends() {
    let g = parse(AGENT);
    let mut r = rng(7);
    let (mut one_tag, mut eight_tags, mut next) = (false, false, false);
    for _ in 0..500 {
        let s = g.sample(&mut r);
        assert!(g.matches(&s), "sample does not match: {s:?}");
        assert!(!g.matches(&s[..s.len() - 1]), "{s:?}");
        if let Some(tags) = s.split("<tags>").nth(1).and_then(|t| t.split("</tags>").next()) {
            one_tag |= !tags.contains(',');
            eight_tags |= tags.matches(',').count() == 7;
        } else {
            next = true;
        }
    }
    assert!(one_tag && eight_tags && next);
    assert!(g.matches("<agent><next_state>thinking</next_state>\n</agent>"));
    assert!(!g.matches("<agent><next_state>sleeping</next_state></agent>"));
    let action = "<agent><action><type>storage_save</type><tags>a,b_2</tags><value>v é</value></action></agent>";
    assert!(g.matches(action));
    assert!(!g.matches(&action.replace("a,b_2", "a,B")));
    assert!(!g.matches(&action.replace("v é", "v<")));
    assert!(!g.matches(&action.replace("a,b_2", &["t"; 9].join(","))));
}

#[test]
fn samples_of_assorted_grammars_match() {
    let grammars = [
        "root ::= ( [^\"\\\\] | \"\\\\\" [nt\"] )* \"|\" .{0,3} [\\u00e0-\\u00ff]+",
        "root ::= value\nvalue ::= \"[\" ( value (\",\" value)* )? \"]\" | [0-9]{1,3} | \"x\"? \"y\"",
        "root ::= (\"a\" | \"b\"{2,3})? (\"c\"+ | [^c]){0,5}",
        "root ::= x{1,3}\nx ::= \"(\" root{0,2} \")\" | \"-\"",
    ];
    let mut r = rng(11);
    for text in grammars {
        let g = parse(text);
        for _ in 0..300 {
            let s = g.sample(&mut r);
            assert!(g.matches(&s), "{text}\nsample: {s:?}");
        }
    }
}

#[test]
fn repetition_product() {
    assert_eq!(parse(AGENT).max_repetition_product(), 400); // the value's [^<&]{1,400}
    assert_eq!(parse(&AGENT.replace("{1,400}", "+")).max_repetition_product(), 7 * 32);
    assert_eq!(parse("root ::= x{0,50}\nx ::= \"a\"{0,40}").max_repetition_product(), 2000);
    assert_eq!(parse("root ::= \"a\" x{0,8}\nx ::= [a-z]{1,32}").max_repetition_product(), 256);
    assert_eq!(parse("root ::= \"(\" root{0,3} \")\" | \"x\"{2,}").max_repetition_product(), 3);
    assert_eq!(parse("root ::= \"a\"* | \"b\"?").max_repetition_product(), 1);
}

/// Large inputs are matched (linear in the input: a slow matcher shows as a slow `make test`,
/// not as a timed assertion, which failed under load on a shared machine).
#[test]
fn large_inputs_are_matched() {
    let g = parse("root ::= item{0,400} [^<]*\nitem ::= ( [a-z]{1,32} \",\" ){0,7} \" \"");
    let word = "abcdefghijklmnopqrstuvwxyzabcdef,";
    let input = format!("{} tail", [word.repeat(7).as_str(); 42].join(" ") + " ");
    assert!(input.len() > 9_000);
    assert!(g.matches(&input));
    assert!(!g.matches(&(input.clone() + "<")));
    let g = parse("root ::= .* \"end\" [a-z]{0,5}");
    assert!(g.matches(&("x".repeat(10_000) + "endabc")));
    assert!(!g.matches(&"x".repeat(10_000)));
    let g = parse(r#"root ::= "x" root | "(" root ")" | ".""#); // recursion per character
    assert!(g.matches(&("x".repeat(20_000) + &"(".repeat(5_000) + "." + &")".repeat(5_000))));
}
