#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! The house rules of the source tree, checked from the files themselves:
//!
//! - the top-level modules form layers (the table below, from the bottom up), and a module
//!   imports only from lower layers or from inside its own top-level module;
//! - no import circle between files, at any depth.
//!
//! Imports are read from `crate::`, `super::` and `self::` paths outside comments and outside
//! test modules; each path is resolved to the file of the longest module prefix it names. A
//! new circle or an upward import fails this test with the files involved.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level modules from the bottom up; a module may use those of lower layers only.
const LAYERS: &[&[&str]] = &[
    &["limits", "escape", "bytes", "sort", "states", "testing"],
    &["error"],
    &["fixed"],
    &["sha256", "clock", "signal"],
    &["json", "http", "html"],
    &["tag", "memory"],
    &["reply"],
    &["grammar"],
    &["llm"],
    &["agent"],
    &["cli"],
];

fn layer_of(top: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&top))
}

/// Module path (`memory::store::tags`) of each source file.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "rs") || p.file_name().is_some_and(|n| n == "tests.rs") {
                continue;
            }
            let rel = p.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into_owned()).collect();
            if parts.last().is_some_and(|l| l == "mod") {
                parts.pop();
            }
            let name = parts.join("::");
            if name == "lib" || name == "main" {
                continue;
            }
            out.insert(name, std::fs::read_to_string(&p).unwrap());
        }
    }
    out
}

/// The source without line comments and without its test module.
fn code(text: &str) -> String {
    let body = match text.find("#[cfg(test)]\nmod ") {
        Some(i) => &text[..i],
        None => text,
    };
    body.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// Every `prefix::a::b::c` path in `code`, as its segments.
fn paths(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(i) = code[from..].find(prefix) {
        let at = from + i;
        from = at + prefix.len();
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_' || bytes[at - 1] == b':') {
            continue; // part of a longer name, or `super::super::` handled below
        }
        let mut segs = Vec::new();
        let mut rest = &code[from..];
        let mut supers = 0;
        while prefix == "super::" && rest.starts_with("super::") {
            supers += 1;
            rest = &rest["super::".len()..];
        }
        loop {
            let n = rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
            if n == 0 {
                break;
            }
            segs.push(rest[..n].to_string());
            rest = &rest[n..];
            if !rest.starts_with("::") {
                break;
            }
            rest = &rest[2..];
        }
        let mut v = vec![supers.to_string()];
        v.extend(segs);
        out.push(v);
    }
    out
}

/// The module file a path under `base` (a module path, "" for the crate root) names.
fn resolve(mods: &BTreeMap<String, String>, base: &str, segs: &[String]) -> Option<String> {
    for k in (0..=segs.len()).rev() {
        let mut parts: Vec<&str> = if base.is_empty() { Vec::new() } else { base.split("::").collect() };
        parts.extend(segs[..k].iter().map(|s| s.as_str()));
        let name = parts.join("::");
        if mods.contains_key(&name) {
            return Some(name);
        }
    }
    None
}

fn parent(m: &str, up: usize) -> String {
    let mut parts: Vec<&str> = m.split("::").collect();
    for _ in 0..up {
        parts.pop();
    }
    parts.join("::")
}

fn edges(mods: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, text) in mods {
        let c = code(text);
        let mut to = BTreeSet::new();
        for p in paths(&c, "crate::") {
            to.extend(resolve(mods, "", &p[1..]));
        }
        // `super::` from a file is its parent module; each further `super::` one more level up.
        for p in paths(&c, "super::") {
            let up = 1 + p[0].parse::<usize>().unwrap();
            to.extend(resolve(mods, &parent(m, up), &p[1..]));
        }
        for p in paths(&c, "self::") {
            to.extend(resolve(mods, m, &p[1..]));
        }
        to.remove(m);
        // A parent's own file (mod.rs) is where a child's `super::` often lands for shared
        // items; that edge is real and counted.
        g.insert(m.clone(), to);
    }
    g
}

#[test]
fn layers_are_respected_and_files_import_no_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mods = modules(&src);
    assert!(mods.len() > 50, "read {} modules", mods.len());
    let g = edges(&mods);
    let mut problems = Vec::new();
    for (from, tos) in &g {
        let top = from.split("::").next().unwrap();
        let Some(lf) = layer_of(top) else {
            problems.push(format!("{} is in no layer: add it to LAYERS in tests/layers.rs", top));
            continue;
        };
        for to in tos {
            let t = to.split("::").next().unwrap();
            if t == top {
                continue;
            }
            match layer_of(t) {
                Some(lt) if lt < lf => {}
                _ => problems.push(format!("{} imports {} from a layer that is not below its own", from, to)),
            }
        }
    }
    // Circles: any strongly connected set of more than one file.
    let names: Vec<&String> = g.keys().collect();
    for start in &names {
        // Files reachable from `start` that reach back to it.
        let reach = |from: &str| {
            let mut seen = BTreeSet::new();
            let mut todo = vec![from.to_string()];
            while let Some(n) = todo.pop() {
                for t in g.get(&n).into_iter().flatten() {
                    if seen.insert(t.clone()) {
                        todo.push(t.clone());
                    }
                }
            }
            seen
        };
        if reach(start).contains(*start) {
            let circle: Vec<&String> =
                names.iter().copied().filter(|n| reach(start).contains(*n) && reach(n).contains(*start)).collect();
            if circle.first() == Some(start) {
                problems.push(format!("import circle: {:?}", circle));
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// Every module file's own documentation (`//!`) names each of its submodules, as `` `name` ``
/// or `` [`name`] ``, so the module list is where a reader starts. Test-only modules (declared
/// under `#[cfg(test)]`) are exempt.
#[test]
fn module_docs_name_their_parts() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files: Vec<(String, String)> = modules(&src).into_iter().collect();
    files.push(("lib".to_string(), std::fs::read_to_string(src.join("lib.rs")).unwrap()));
    let mut problems = Vec::new();
    for (name, text) in &files {
        let docs: String =
            text.lines().filter_map(|l| l.trim_start().strip_prefix("//!")).collect::<Vec<_>>().join("\n");
        let mut under_cfg_test = false;
        for line in text.lines().map(str::trim) {
            if line.starts_with("#[cfg(test)]") {
                under_cfg_test = true;
                continue;
            }
            let decl = line.strip_prefix("pub ").or_else(|| line.strip_prefix("pub(crate) ")).unwrap_or(line);
            if let Some(m) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
                if !under_cfg_test && !docs.contains(&format!("`{}`", m)) {
                    problems.push(format!("src module {}: its docs do not name its part `{}`", name, m));
                }
            }
            if !line.starts_with("#[") {
                under_cfg_test = false;
            }
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// The lines of non-test code in a source file: every line but blank ones, lines that start
/// with `//` (so doc comments do not count), and test modules: a `#[cfg(test)]` line followed by
/// a `mod` line, with the module's body up to its closing brace at the same indentation
/// (rustfmt's layout), or the one line of a `mod name;`.
fn code_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let mut n = 0;
    let mut i = 0;
    while let Some(&line) = lines.get(i) {
        let t = line.trim_start();
        i += 1;
        if t.starts_with("#[cfg(test)]") {
            let next = lines.get(i).copied().unwrap_or("");
            let nt = next.trim_start();
            let decl = nt.strip_prefix("pub ").or_else(|| nt.strip_prefix("pub(crate) ")).unwrap_or(nt);
            if decl.starts_with("mod ") {
                i += 1;
                if !nt.trim_end().ends_with(';') {
                    let close = format!("{}}}", &next[..next.len() - nt.len()]);
                    while lines.get(i).is_some_and(|l| *l != close) {
                        i += 1;
                    }
                    i += 1;
                }
                continue;
            }
        }
        if !t.is_empty() && !t.starts_with("//") {
            n += 1;
        }
    }
    n
}

/// No source file holds more than 600 lines of non-test code (issue 40): a file that grows
/// past it is split by concern. A `tests.rs` is test code.
#[test]
fn no_file_over_600_lines_of_non_test_code() {
    const MAX: usize = 600;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut counts = Vec::new();
    let mut stack = vec![src];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") && p.file_name().is_some_and(|n| n != "tests.rs") {
                counts.push((code_lines(&std::fs::read_to_string(&p).unwrap()), p));
            }
        }
    }
    assert!(counts.len() > 100, "read {} files", counts.len());
    counts.sort();
    let over: Vec<String> =
        counts.iter().filter(|(n, _)| *n > MAX).map(|(n, p)| format!("{}: {} lines", p.display(), n)).collect();
    assert!(over.is_empty(), "over {} lines of non-test code:\n{}", MAX, over.join("\n"));
}

/// The count of [`code_lines`]: a test module inside a file ends the count only for its own
/// lines, and code after it still counts.
#[test]
fn code_lines_skips_test_modules_only() {
    let text = "//! doc\nfn a() {}\n\n#[cfg(test)]\npub(crate) mod probe {\n    fn x() {}\n}\n\nfn b() {\n    // why\n    c();\n}\n#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n";
    assert_eq!(code_lines(text), 4);
}
