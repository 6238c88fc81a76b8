//! A small GBNF toolkit for tests: parse a grammar in llama.cpp's format, decide whether a string
//! is in its language, draw random strings from it, and measure its nesting of bounded
//! repetitions. std only.
//!
//! The parser follows llama.cpp's `llama_grammar_parser` (src/llama-grammar.cpp) closely, so a
//! grammar accepted here is one llama.cpp accepts: rule names are `[a-zA-Z0-9-]+` (no `_`); a
//! rule ends at the end of its line unless the line ends in `|` or a parenthesis is open (a
//! continuation line that merely starts with whitespace is an error there, so here too);
//! repetitions are `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}` (llama.cpp has no `{,n}`: write
//! `{0,n}`); a repetition whose count times the rules it repeats reaches
//! [`MAX_REPETITION_THRESHOLD`] is refused exactly as llama.cpp refuses it; `root` must exist,
//! every referenced rule must be defined, and left recursion is refused. Stricter than llama.cpp,
//! because each is almost surely a generator bug: a rule defined twice (llama.cpp keeps the
//! last), an empty class `[]`, a reversed range `[z-a]`, a maximum over 2000 (llama.cpp silently
//! drops the bound), `m > n` in `{m,n}`, an escape naming no Unicode scalar value. Tokens
//! (`<...>`, `!<...>`) are not supported. Every error says `gbnf: at byte N: reason`.
//!
//! Include with `#[path = "support/gbnf.rs"] mod gbnf;`.
// constrained.rs uses only part of it (gbnf_support.rs all of it): the rest would warn there.
#![allow(dead_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::collections::{HashMap, HashSet};

/// llama.cpp's `MAX_REPETITION_THRESHOLD`.
pub const MAX_REPETITION_THRESHOLD: u64 = 2000;

/// A small deterministic random source for samplers (splitmix64 from `seed`).
pub fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}
/// Rule-reference depth past which [`Grammar::sample`] takes the quickest way out.
const SAMPLE_DEPTH: usize = 64;
/// Output length (bytes) past which [`Grammar::sample`] also takes the quickest way out, so a
/// recursive grammar cannot grow a sample without bound before the depth limit.
const SAMPLE_BUDGET: usize = 8192;
/// Extra characters for negated classes and `.`, after printable ASCII.
const POOL_EXTRA: [char; 6] = ['é', 'ü', '中', '😀', '\n', '\t'];

#[derive(Clone, Debug)]
enum Node {
    Lit(String),
    Class { negated: bool, ranges: Vec<(char, char)> },
    Any,
    Ref(usize),
    Seq(Vec<usize>),
    Alt(Vec<usize>),
    Rep { child: usize, min: u32, max: Option<u32> },
}

/// A parsed GBNF grammar. Nodes live in one arena; a node's children always have smaller ids.
#[derive(Clone, Debug, Default)]
pub struct Grammar {
    nodes: Vec<Node>,
    names: Vec<String>,
    bodies: Vec<usize>,
    order: Vec<usize>,
    root: usize,
    /// Per node: fewest nested rule references a derivation needs (u32::MAX: none finishes).
    height: Vec<u32>,
    /// Per node: can it match the empty string; which bytes can start a non-empty match.
    nullable: Vec<bool>,
    first: Vec<[u64; 4]>,
    /// Per node: a literal node every match of it starts with, if one is known.
    prefix: Vec<Option<usize>>,
}

fn err<T>(at: usize, msg: impl std::fmt::Display) -> Result<T, String> {
    Err(format!("gbnf: at byte {at}: {msg}"))
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

fn in_class(ranges: &[(char, char)], c: char) -> bool {
    ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi)
}

/// The first byte of `c` in UTF-8 (monotone in `c`).
fn lead(c: char) -> u8 {
    c.encode_utf8(&mut [0; 4]).as_bytes()[0]
}

/// The byte set `lo..=hi`, and a union of two sets.
fn bytes(lo: u8, hi: u8) -> [u64; 4] {
    let mut set = [0u64; 4];
    (lo..=hi).for_each(|b| set[usize::from(b >> 6)] |= 1 << (b & 63));
    set
}
fn or(a: [u64; 4], b: [u64; 4]) -> [u64; 4] {
    [a[0] | b[0], a[1] | b[1], a[2] | b[2], a[3] | b[3]]
}

fn sort_dedup(v: &mut Vec<usize>) {
    v.sort_unstable();
    v.dedup();
}

#[derive(Default)]
struct Parser<'a> {
    src: &'a str,
    pos: usize,
    nodes: Vec<Node>,
    ids: HashMap<String, usize>,
    names: Vec<String>,
    bodies: Vec<Option<usize>>,
    /// Where each rule was first mentioned (defined or referenced).
    mentioned: Vec<usize>,
    /// Where each rule was defined.
    defined: Vec<usize>,
    order: Vec<usize>,
    /// Rules llama.cpp synthesises (groups, repetition helpers), for its repetition check.
    generated: u64,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.src.as_bytes().get(self.pos).copied()
    }
    fn ahead(&self, k: usize) -> Option<u8> {
        self.src.as_bytes().get(self.pos + k).copied()
    }
    fn push(&mut self, n: Node) -> usize {
        self.nodes.push(n);
        self.nodes.len() - 1
    }
    fn symbols(&self) -> u64 {
        self.names.len() as u64 + self.generated
    }

    fn space(&mut self, newline_ok: bool) {
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' => self.pos += 1,
                b'\r' | b'\n' if newline_ok => self.pos += 1,
                b'#' => {
                    while !matches!(self.peek(), None | Some(b'\r' | b'\n')) {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn symbol(&mut self, at: usize) -> Result<usize, String> {
        let start = self.pos;
        while self.peek().is_some_and(is_word) {
            self.pos += 1;
        }
        if self.pos == start {
            return err(start, "expecting a rule name ([a-zA-Z0-9-]+)");
        }
        let name = &self.src[start..self.pos];
        if let Some(&id) = self.ids.get(name) {
            return Ok(id);
        }
        self.ids.insert(name.to_string(), self.names.len());
        self.names.push(name.to_string());
        self.bodies.push(None);
        self.mentioned.push(at);
        self.defined.push(at);
        Ok(self.names.len() - 1)
    }

    fn int(&mut self) -> Result<u64, String> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        if self.pos == start {
            return err(start, "expecting an integer (llama.cpp has no `{,n}`: write `{0,n}`)");
        }
        self.src[start..self.pos].parse().or_else(|_| err(start, "integer too large"))
    }

    /// One character of a literal or class, escapes decoded.
    fn char(&mut self) -> Result<char, String> {
        let start = self.pos;
        let Some(c) = self.src[start..].chars().next() else { return err(start, "unexpected end of input") };
        if c != '\\' {
            self.pos += c.len_utf8();
            return Ok(c);
        }
        self.pos += 2;
        let digits = match self.src.as_bytes().get(start + 1).copied() {
            Some(b'x') => 2,
            Some(b'u') => 4,
            Some(b'U') => 8,
            Some(b't') => return Ok('\t'),
            Some(b'r') => return Ok('\r'),
            Some(b'n') => return Ok('\n'),
            Some(e @ (b'\\' | b'"' | b'[' | b']' | b'-')) => return Ok(char::from(e)),
            None => return err(start, "unexpected end of input"),
            Some(_) => return err(start, "unknown escape"),
        };
        let hex = self.src.as_bytes().get(self.pos..self.pos + digits);
        if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
            return err(start, format!("expecting {digits} hex digits"));
        }
        let value = u32::from_str_radix(&self.src[self.pos..self.pos + digits], 16).unwrap_or(u32::MAX);
        self.pos += digits;
        char::from_u32(value).map_or_else(|| err(start, format!("U+{value:X} is not a Unicode scalar value")), Ok)
    }

    fn rule(&mut self) -> Result<(), String> {
        let start = self.pos;
        let id = self.symbol(start)?;
        self.space(false);
        if !self.src.as_bytes()[self.pos..].starts_with(b"::=") {
            return err(self.pos, "expecting `::=`");
        }
        if self.bodies[id].is_some() {
            return err(start, format!("rule `{}` is defined twice", self.names[id]));
        }
        self.pos += 3;
        self.space(true);
        let body = self.alternates(false)?;
        self.bodies[id] = Some(body);
        self.defined[id] = start;
        self.order.push(id);
        match self.peek() {
            None => {}
            Some(b'\n') => self.pos += 1,
            Some(b'\r') => self.pos += if self.ahead(1) == Some(b'\n') { 2 } else { 1 },
            Some(_) => return err(self.pos, "expecting newline or end (continue a rule after `|` or in `( )`)"),
        }
        self.space(true);
        Ok(())
    }

    fn alternates(&mut self, nested: bool) -> Result<usize, String> {
        let mut alts = vec![self.sequence(nested)?];
        while self.peek() == Some(b'|') {
            self.pos += 1;
            self.space(true);
            alts.push(self.sequence(nested)?);
        }
        Ok(if alts.len() == 1 { alts[0] } else { self.push(Node::Alt(alts)) })
    }

    fn sequence(&mut self, nested: bool) -> Result<usize, String> {
        let mut items = Vec::new();
        let mut n_prev: u64 = 1; // llama.cpp's "rules already repeated" for the last item
        let mut repeatable = false; // llama.cpp: the last item emitted at least one element
        while let Some(c) = self.peek() {
            let start = self.pos;
            match c {
                b'"' => {
                    self.pos += 1;
                    let mut s = String::new();
                    while self.peek() != Some(b'"') {
                        if self.peek().is_none() {
                            return err(start, "unterminated literal");
                        }
                        s.push(self.char()?);
                    }
                    self.pos += 1;
                    (n_prev, repeatable) = (1, !s.is_empty());
                    items.push(self.push(Node::Lit(s)));
                }
                b'[' => {
                    self.pos += 1;
                    let negated = self.peek() == Some(b'^');
                    self.pos += usize::from(negated);
                    let mut ranges = Vec::new();
                    while self.peek() != Some(b']') {
                        if self.peek().is_none() {
                            return err(start, "unterminated character class");
                        }
                        let lo = self.char()?;
                        let mut hi = lo;
                        if self.peek() == Some(b'-') && self.ahead(1) != Some(b']') {
                            self.pos += 1;
                            hi = self.char()?;
                            if hi < lo {
                                return err(start, format!("reversed range {lo:?}-{hi:?} in character class"));
                            }
                        }
                        ranges.push((lo, hi));
                    }
                    self.pos += 1;
                    if ranges.is_empty() {
                        return err(start, "empty character class");
                    }
                    (n_prev, repeatable) = (1, true);
                    items.push(self.push(Node::Class { negated, ranges }));
                }
                b'(' => {
                    self.pos += 1;
                    self.space(true);
                    let before = self.symbols();
                    self.generated += 1;
                    let inner = self.alternates(true)?;
                    if self.peek() != Some(b')') {
                        return err(self.pos, format!("expecting `)` (group opened at byte {start})"));
                    }
                    self.pos += 1;
                    (n_prev, repeatable) = ((self.symbols() - before).max(1), true);
                    items.push(inner);
                }
                b'.' => {
                    self.pos += 1;
                    (n_prev, repeatable) = (1, true);
                    items.push(self.push(Node::Any));
                }
                b'*' | b'+' | b'?' | b'{' => {
                    self.pos += 1;
                    let (min, max) = match c {
                        b'*' => (0, None),
                        b'+' => (1, None),
                        b'?' => (0, Some(1)),
                        _ => self.braces(nested)?,
                    };
                    n_prev = self.limits(start, n_prev, min, max, repeatable)?;
                    repeatable = max != Some(0) || min > 0;
                    let child = items.pop().unwrap_or(0);
                    let (min, max) = (min as u32, max.map(|m| m as u32));
                    items.push(self.push(Node::Rep { child, min, max }));
                }
                b'<' | b'!' => return err(start, "tokens (`<...>`, `!<...>`) are not supported"),
                c if is_word(c) => {
                    let id = self.symbol(start)?;
                    (n_prev, repeatable) = (1, true);
                    items.push(self.push(Node::Ref(id)));
                }
                _ => break,
            }
            self.space(nested);
        }
        Ok(self.push(Node::Seq(items)))
    }

    /// `{m}`, `{m,}`, `{m,n}` after the `{`.
    fn braces(&mut self, nested: bool) -> Result<(u64, Option<u64>), String> {
        self.space(nested);
        let min = self.int()?;
        self.space(nested);
        let max = match self.peek() {
            Some(b'}') => Some(min),
            Some(b',') => {
                self.pos += 1;
                self.space(nested);
                let max = if self.peek().is_some_and(|c| c.is_ascii_digit()) { Some(self.int()?) } else { None };
                self.space(nested);
                if self.peek() != Some(b'}') {
                    return err(self.pos, "expecting `}`");
                }
                max
            }
            _ => return err(self.pos, "expecting `,` or `}`"),
        };
        self.pos += 1;
        Ok((min, max))
    }

    /// llama.cpp's checks on a repetition; returns its new "rules already repeated".
    fn limits(&mut self, at: usize, prev: u64, min: u64, max: Option<u64>, ok: bool) -> Result<u64, String> {
        let limit = MAX_REPETITION_THRESHOLD;
        if !ok {
            return err(at, "expecting an item before the repetition operator");
        }
        if min > limit || max.is_some_and(|m| m > limit) {
            return err(at, "number of repetitions exceeds sane defaults (llama.cpp: at most 2000)");
        }
        if max.is_some_and(|m| m < min) {
            return err(at, "repetition maximum below its minimum");
        }
        let total = match max {
            Some(m) if m > 0 => m,
            _ => min.max(1),
        };
        if prev.saturating_mul(total) >= limit {
            return err(at, format!("llama.cpp refuses this: {prev} rule(s) repeated x {total} reaches {limit}"));
        }
        self.generated += max.map_or(1, |m| m - min);
        Ok(prev * total)
    }
}

impl Grammar {
    /// Parses GBNF text (see the module documentation for the accepted subset). Never panics;
    /// malformed text gives `Err("gbnf: at byte N: reason")`.
    pub fn parse(text: &str) -> Result<Grammar, String> {
        let mut p = Parser { src: text, ..Parser::default() };
        p.space(true);
        while p.pos < text.len() {
            p.rule()?;
        }
        let mut bodies = Vec::with_capacity(p.bodies.len());
        for (id, body) in p.bodies.iter().enumerate() {
            match body {
                Some(b) => bodies.push(*b),
                None => return err(p.mentioned[id], format!("undefined rule `{}`", p.names[id])),
            }
        }
        let Some(&root) = p.ids.get("root") else { return err(text.len(), "no `root` rule") };
        let mut g = Grammar { nodes: p.nodes, names: p.names, bodies, order: p.order, root, ..Grammar::default() };
        g.nullable = g.fixpoint(false, |_, n, v, rule_v| match n {
            Node::Lit(s) => s.is_empty(),
            Node::Class { .. } | Node::Any => false,
            Node::Ref(r) => rule_v[*r],
            Node::Seq(items) => items.iter().all(|&i| v[i]),
            Node::Alt(alts) => alts.iter().any(|&i| v[i]),
            Node::Rep { child, min, .. } => *min == 0 || v[*child],
        });
        if let Some(r) = g.left_recursive() {
            return err(p.defined[r], format!("left recursion through rule `{}`", g.names[r]));
        }
        g.height = g.fixpoint(u32::MAX, |_, n, h, rule_h| match n {
            Node::Lit(_) | Node::Class { .. } | Node::Any => 0,
            Node::Ref(r) => rule_h[*r].saturating_add(1),
            Node::Seq(v) => v.iter().map(|&i| h[i]).max().unwrap_or(0),
            Node::Alt(v) => v.iter().map(|&i| h[i]).min().unwrap_or(0),
            Node::Rep { min: 0, .. } => 0,
            Node::Rep { child, .. } => h[*child],
        });
        let nullable = g.nullable.clone();
        g.first = g.fixpoint([0; 4], |_, n, f, rule_f| match n {
            Node::Lit(s) => s.bytes().next().map_or([0; 4], |b| bytes(b, b)),
            Node::Class { negated: false, ranges } => {
                ranges.iter().fold([0; 4], |acc, &(lo, hi)| or(acc, bytes(lead(lo), lead(hi))))
            }
            Node::Class { negated: true, .. } | Node::Any => [u64::MAX; 4],
            Node::Ref(r) => rule_f[*r],
            Node::Seq(items) => {
                let end = items.iter().position(|&i| !nullable[i]).map_or(items.len(), |k| k + 1);
                items[..end].iter().fold([0; 4], |acc, &i| or(acc, f[i]))
            }
            Node::Alt(alts) => alts.iter().fold([0; 4], |acc, &i| or(acc, f[i])),
            Node::Rep { max: Some(0), .. } => [0; 4],
            Node::Rep { child, .. } => f[*child],
        });
        g.prefix = g.fixpoint(None, |i, n, v, rule_v| match n {
            Node::Lit(s) if !s.is_empty() => Some(i),
            Node::Ref(r) => rule_v[*r],
            Node::Seq(items) => items.first().and_then(|&f| v[f]),
            _ => None,
        });
        Ok(g)
    }

    /// Computes a per-node value bottom-up (children have smaller ids), iterating over the rules'
    /// values until they stop changing.
    fn fixpoint<T: Copy + PartialEq>(&self, init: T, f: impl Fn(usize, &Node, &[T], &[T]) -> T) -> Vec<T> {
        let mut rule_v = vec![init; self.bodies.len()];
        let mut v = vec![init; self.nodes.len()];
        loop {
            for i in 0..self.nodes.len() {
                v[i] = f(i, &self.nodes[i], &v, &rule_v);
            }
            let next: Vec<T> = self.bodies.iter().map(|&b| v[b]).collect();
            if next == rule_v {
                return v;
            }
            rule_v = next;
        }
    }

    /// A rule that can reach itself without consuming input, if any.
    fn left_recursive(&self) -> Option<usize> {
        let nullable = &self.nullable;
        fn leftmost(g: &Grammar, nullable: &[bool], n: usize, out: &mut Vec<usize>) {
            match &g.nodes[n] {
                Node::Ref(r) => out.push(*r),
                Node::Seq(items) => {
                    for &i in items {
                        leftmost(g, nullable, i, out);
                        if !nullable[i] {
                            break;
                        }
                    }
                }
                Node::Alt(alts) => alts.iter().for_each(|&i| leftmost(g, nullable, i, out)),
                Node::Rep { child, max, .. } if *max != Some(0) => leftmost(g, nullable, *child, out),
                _ => {}
            }
        }
        // Depth-first over "can start with" edges; state 1 = on the path, 2 = done.
        fn visit(g: &Grammar, nullable: &[bool], r: usize, state: &mut [u8]) -> Option<usize> {
            state[r] = 1;
            let mut first = Vec::new();
            leftmost(g, nullable, g.bodies[r], &mut first);
            for t in first {
                let found = match state[t] {
                    1 => Some(t),
                    0 => visit(g, nullable, t, state),
                    _ => None,
                };
                if found.is_some() {
                    return found;
                }
            }
            state[r] = 2;
            None
        }
        let mut state = vec![0u8; self.bodies.len()];
        (0..self.bodies.len()).find_map(|r| if state[r] == 0 { visit(self, nullable, r, &mut state) } else { None })
    }

    /// Does `input` match `root` completely? Memoised end-position sets per (node, position):
    /// polynomial time, typically O(input × grammar).
    pub fn matches(&self, input: &str) -> bool {
        let run = || {
            let mut ends = Vec::new();
            Matcher { g: self, input, memo: HashMap::new() }.ends(self.bodies[self.root], 0, &mut ends);
            ends.contains(&input.len())
        };
        if input.len() < 1024 {
            return run();
        }
        // A recursive rule recurses once per character it consumes: give long inputs a big stack.
        let big = std::thread::Builder::new().stack_size(1 << 28);
        std::thread::scope(|s| big.spawn_scoped(s, run).ok().and_then(|h| h.join().ok())).unwrap_or_else(run)
    }

    /// A random string of `root`'s language, drawn with `rng`. Unbounded repetitions take 0..=3
    /// more than their minimum; bounded ones take the minimum (20%), the maximum (20%) or a
    /// uniform count. Negated classes and `.` draw from printable ASCII, é ü 中 😀, `\n`, `\t`.
    /// Past 64 nested rule references (or 8 KB of output) each choice takes the quickest way out.
    pub fn sample(&self, rng: &mut dyn FnMut() -> u64) -> String {
        let mut out = String::new();
        self.generate(self.bodies[self.root], 0, rng, &mut out);
        out
    }

    fn generate(&self, node: usize, depth: usize, rng: &mut dyn FnMut() -> u64, out: &mut String) {
        let quick = depth >= SAMPLE_DEPTH || out.len() >= SAMPLE_BUDGET;
        let below = |rng: &mut dyn FnMut() -> u64, n: u64| if n == 0 { 0 } else { rng() % n };
        match &self.nodes[node] {
            Node::Lit(s) => out.push_str(s),
            Node::Class { negated: false, ranges } => {
                let (lo, hi) = ranges[below(rng, ranges.len() as u64) as usize];
                let c = u32::from(lo) + below(rng, u64::from(hi) - u64::from(lo) + 1) as u32;
                out.push(char::from_u32(c).unwrap_or(lo));
            }
            Node::Class { negated: true, ranges } => out.extend(pool_pick(rng, |c| !in_class(ranges, c))),
            Node::Any => out.extend(pool_pick(rng, |_| true)),
            Node::Ref(r) => {
                if depth <= SAMPLE_DEPTH + self.bodies.len() {
                    self.generate(self.bodies[*r], depth + 1, rng, out);
                }
            }
            Node::Seq(items) => items.iter().for_each(|&i| self.generate(i, depth, rng, out)),
            Node::Alt(alts) => {
                let pick = if quick {
                    alts.iter().copied().min_by_key(|&a| self.height[a]).unwrap_or(alts[0])
                } else {
                    alts[below(rng, alts.len() as u64) as usize]
                };
                self.generate(pick, depth, rng, out);
            }
            Node::Rep { child, min, max } => {
                let min = u64::from(*min);
                let n = match max {
                    _ if quick => min,
                    None => min + below(rng, 4),
                    Some(max) => match below(rng, 10) {
                        0 | 1 => min,
                        2 | 3 => u64::from(*max),
                        _ => min + below(rng, u64::from(*max) - min + 1),
                    },
                };
                for _ in 0..n {
                    self.generate(*child, depth, rng, out);
                }
            }
        }
    }

    /// The largest product of repetition counts along any path of nested repetitions, following
    /// rule references (a rule already on the path is not followed again). A repetition counts
    /// as llama.cpp counts it: its maximum if bounded and positive, else its minimum, at least 1.
    /// So `x{0,8}` around a rule holding `y{1,32}` gives 256; a grammar with none gives 1.
    /// llama.cpp refuses, within one rule, products reaching [`MAX_REPETITION_THRESHOLD`].
    pub fn max_repetition_product(&self) -> u64 {
        let mut memo = vec![None; self.bodies.len()];
        let mut path = vec![false; self.bodies.len()];
        self.order.iter().map(|&r| self.rule_product(r, &mut memo, &mut path)).max().unwrap_or(1)
    }

    /// [`Grammar::max_repetition_product`] from rule `r`; `memo` per rule, `path`: rules entered.
    fn rule_product(&self, r: usize, memo: &mut [Option<u64>], path: &mut [bool]) -> u64 {
        if path[r] {
            return 1;
        }
        memo[r].unwrap_or_else(|| {
            path[r] = true;
            let v = self.product(self.bodies[r], memo, path);
            (path[r], memo[r]) = (false, Some(v));
            v
        })
    }

    fn product(&self, n: usize, memo: &mut [Option<u64>], path: &mut [bool]) -> u64 {
        match &self.nodes[n] {
            Node::Lit(_) | Node::Class { .. } | Node::Any => 1,
            Node::Ref(r) => self.rule_product(*r, memo, path),
            Node::Seq(v) | Node::Alt(v) => v.iter().map(|&i| self.product(i, memo, path)).max().unwrap_or(1),
            Node::Rep { child, min, max } => {
                let factor = max.filter(|&m| m > 0).unwrap_or((*min).max(1));
                u64::from(factor).saturating_mul(self.product(*child, memo, path))
            }
        }
    }

    /// The defined rules' names, in definition order.
    pub fn rule_names(&self) -> Vec<String> {
        self.order.iter().map(|&r| self.names[r].clone()).collect()
    }
}

/// A random character from the sampling pool that `accept` takes: a few random draws, then a
/// scan of the pool, then of code points from U+00A0; `None` if nothing found.
fn pool_pick(rng: &mut dyn FnMut() -> u64, accept: impl Fn(char) -> bool) -> Option<char> {
    let size = 95 + POOL_EXTRA.len();
    let at = |i: usize| if i < 95 { char::from(0x20 + i as u8) } else { POOL_EXTRA[i - 95] };
    let start = (rng() % size as u64) as usize;
    (0..8)
        .map(|_| at((rng() % size as u64) as usize))
        .chain((0..size).map(|i| at((start + i) % size)))
        .chain((0xA0..0x3000).filter_map(char::from_u32))
        .find(|&c| accept(c))
}

struct Matcher<'a> {
    g: &'a Grammar,
    input: &'a str,
    memo: HashMap<(usize, usize), Vec<usize>>,
}

impl Matcher<'_> {
    /// Appends to `out` every position where `node`, started at `pos`, can end.
    fn ends(&mut self, node: usize, pos: usize, out: &mut Vec<usize>) {
        let g = self.g;
        let byte = self.input.as_bytes().get(pos).copied();
        if !g.nullable[node] && byte.is_none_or(|b| g.first[node][usize::from(b >> 6)] >> (b & 63) & 1 == 0) {
            return; // cannot start here: skip without touching the memo
        }
        if let Some(Node::Lit(s)) = g.prefix[node].map(|l| &g.nodes[l]) {
            if !self.input.as_bytes()[pos..].starts_with(s.as_bytes()) {
                return;
            }
        }
        let next = self.input.get(pos..).and_then(|s| s.chars().next());
        match &g.nodes[node] {
            Node::Lit(s) => {
                if self.input.as_bytes()[pos..].starts_with(s.as_bytes()) {
                    out.push(pos + s.len());
                }
            }
            Node::Class { negated, ranges } => {
                if let Some(c) = next.filter(|&c| in_class(ranges, c) != *negated) {
                    out.push(pos + c.len_utf8());
                }
            }
            Node::Any => out.extend(next.map(|c| pos + c.len_utf8())),
            Node::Ref(r) => self.ends(g.bodies[*r], pos, out),
            Node::Seq(_) | Node::Alt(_) | Node::Rep { .. } => {
                let key = (node, pos);
                if let Some(v) = self.memo.get(&key) {
                    out.extend_from_slice(v);
                    return;
                }
                self.memo.insert(key, Vec::new()); // re-entry (left recursion) finds nothing
                let v = self.compute(node, pos);
                out.extend_from_slice(&v);
                self.memo.insert(key, v);
            }
        }
    }

    /// Every end of `node` started at any of `from`, sorted, without duplicates.
    fn step(&mut self, node: usize, from: &[usize]) -> Vec<usize> {
        let mut out = Vec::new();
        for &p in from {
            self.ends(node, p, &mut out);
        }
        sort_dedup(&mut out);
        out
    }

    fn compute(&mut self, node: usize, pos: usize) -> Vec<usize> {
        let g = self.g;
        match &g.nodes[node] {
            Node::Seq(items) => {
                let mut cur = vec![pos];
                for &i in items {
                    cur = self.step(i, &cur);
                    if cur.is_empty() {
                        break;
                    }
                }
                cur
            }
            Node::Alt(alts) => {
                let mut out = Vec::new();
                alts.iter().for_each(|&a| self.ends(a, pos, &mut out));
                sort_dedup(&mut out);
                out
            }
            Node::Rep { child, min, max } => self.repeat(*child, *min, *max, pos),
            _ => Vec::new(), // terminals and references never reach here
        }
    }

    fn repeat(&mut self, child: usize, min: u32, max: Option<u32>, pos: usize) -> Vec<usize> {
        if let Node::Class { negated, ranges } = &self.g.nodes[child] {
            // Fast path: a run of single characters.
            let run = self.input[pos..].char_indices().map(|(k, c)| (pos + k + c.len_utf8(), c));
            let run = run.take_while(|&(_, c)| in_class(ranges, c) != *negated).map(|(end, _)| end);
            let ends: Vec<usize> =
                std::iter::once(pos).chain(run.take(max.map_or(usize::MAX, |m| m as usize))).collect();
            return ends.get(min as usize..).map_or(Vec::new(), <[usize]>::to_vec);
        }
        let mut cur = vec![pos];
        let mut i = 0;
        while i < min {
            let next = self.step(child, &cur);
            i = if next == cur { min } else { i + 1 }; // a fixed point: more steps change nothing
            cur = next;
            if cur.is_empty() {
                return cur;
            }
        }
        let mut seen: HashSet<usize> = cur.iter().copied().collect();
        let mut all = cur.clone();
        while max.is_none_or(|m| i < m) {
            let next = self.step(child, &cur);
            i += 1;
            let fresh: Vec<usize> = next.iter().copied().filter(|p| !seen.contains(p)).collect();
            if fresh.is_empty() {
                break; // every later step stays within what is already collected
            }
            seen.extend(&fresh);
            all.extend(&fresh);
            // Unbounded: only new positions need stepping; bounded: counts matter, step them all.
            cur = if max.is_none() { fresh } else { next };
        }
        sort_dedup(&mut all);
        all
    }
}
