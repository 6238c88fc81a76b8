#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
//! The repository stands on its own: every relative link and file reference in `README.md` and
//! `docs/*.md` resolves to a file inside it (and a link's `#anchor` to a heading of that page),
//! and no comment, doc or manifest cites a document that is not in it (the sources the design
//! was first distilled from, kept outside) or a `docs/` page that does not exist.

use std::path::{Component, Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `README.md` and every page under `docs/`.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// Lines outside fenced code blocks, with their numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((i + 1, line));
        }
    }
    out
}

/// The targets of `[text](target)` links on a line.
fn link_targets(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let Some(end) = after.find(')') else { break };
        out.push(after[..end].trim());
        rest = &after[end..];
    }
    out
}

/// The text between backticks on a line.
fn code_spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// GitHub's anchor for a heading: lowercase, spaces to `-`, punctuation but `-` and `_` dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(page: &str) -> Vec<String> {
    prose_lines(page)
        .into_iter()
        .filter(|(_, l)| l.starts_with('#'))
        .map(|(_, l)| slug(l.trim_start_matches('#')))
        .collect()
}

/// `path` with `.` and `..` taken out lexically, or `None` when `..` climbs above the start.
fn normalise(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(p) => out.push(p),
            _ => return None,
        }
    }
    Some(out)
}

/// Where a reference to `target` from the page at `from` leads, inside the repository.
fn inside(from: &Path, target: &str) -> Result<PathBuf, String> {
    let dir = from.parent().unwrap().strip_prefix(root()).unwrap();
    let rel = normalise(&dir.join(target)).ok_or("leads outside the repository")?;
    let full = root().join(&rel);
    if !full.exists() {
        return Err(format!("{} does not exist", rel.display()));
    }
    Ok(full)
}

#[test]
fn every_link_in_the_readme_and_docs_resolves_inside_the_repository() {
    let mut bad = Vec::new();
    let mut links = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.strip_prefix(root()).unwrap().display().to_string();
        for (n, line) in prose_lines(&text) {
            for target in link_targets(line) {
                if target.starts_with("http://") || target.starts_with("https://") || target.starts_with("mailto:") {
                    continue;
                }
                links += 1;
                let (path, anchor) = match target.split_once('#') {
                    Some((p, a)) => (p, Some(a)),
                    None => (target, None),
                };
                let full = if path.is_empty() { Ok(page.clone()) } else { inside(&page, path) };
                match full {
                    Err(why) => bad.push(format!("{name}:{n}: ({target}) {why}")),
                    Ok(full) => {
                        if let Some(a) = anchor {
                            let body = std::fs::read_to_string(&full).unwrap_or_default();
                            if !anchors(&body).iter().any(|h| h == a) {
                                bad.push(format!("{name}:{n}: ({target}) no heading makes #{a}"));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(links >= 20, "only {links} links found: is the link reader broken?");
    assert!(bad.is_empty(), "links that lead nowhere:\n{}", bad.join("\n"));
}

/// Code spans that name a file or folder of the repository (`src/limits.rs`, `tools/`).
fn is_repo_path(span: &str) -> bool {
    const TOP: &[&str] = &["src/", "tests/", "benches/", "tools/", "docs/", "data/"];
    TOP.iter().any(|t| span.starts_with(t))
        && span.chars().all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c))
        && !span.contains("..")
}

/// What the agent makes at run time under `data/`, named in the docs but not shipped.
const MADE_AT_RUN_TIME: &[&str] =
    &["data/demo-run", "data/store.", "data/logs", "data/inbox", "data/exchange", "data/memory.json."];

#[test]
fn every_file_the_readme_and_docs_name_exists() {
    let mut bad = Vec::new();
    let mut named = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.strip_prefix(root()).unwrap().display().to_string();
        for (n, line) in prose_lines(&text) {
            for span in code_spans(line).into_iter().filter(|s| is_repo_path(s)) {
                if MADE_AT_RUN_TIME.iter().any(|m| span.starts_with(m)) {
                    continue;
                }
                named += 1;
                if !root().join(span).exists() {
                    bad.push(format!("{name}:{n}: `{span}` does not exist"));
                }
            }
        }
    }
    assert!(named >= 10, "only {named} file references found: is the reader broken?");
    assert!(bad.is_empty(), "files named that are not in the repository:\n{}", bad.join("\n"));
}

/// Every text file of the repository that holds comments or docs: sources, tests, benches,
/// tools, pages and the build files.
fn sources() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| ["rs", "py", "sh", "md", "toml"].iter().any(|x| e == *x)) {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    for d in ["src", "tests", "benches", "tools", "docs", ".cargo"] {
        walk(&root().join(d), &mut out);
    }
    for f in ["README.md", "Cargo.toml", "Makefile", "build.rs", "clippy.toml", "rustfmt.toml"] {
        out.push(root().join(f));
    }
    out.sort();
    out
}

/// Files whose owners have yet to drop a citation of a document outside the repository
/// (they are being rewritten on other branches). Empty once those land.
const PENDING: &[&str] = &[];

#[test]
fn no_comment_or_doc_cites_a_document_outside_the_repository() {
    // Built from pieces, so that this file does not cite them itself.
    let outside = [["spec", "/"].concat(), ["DESIGN", ".md"].concat(), ["../shared", "/spec"].concat()];
    let mut bad = Vec::new();
    for file in sources() {
        let rel = file.strip_prefix(root()).unwrap().display().to_string();
        if PENDING.contains(&rel.as_str()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        for (n, line) in text.lines().enumerate() {
            for o in &outside {
                // The folder as a path of its own, not the tail of another word.
                let hit = line
                    .match_indices(o.as_str())
                    .any(|(i, _)| i == 0 || !line.as_bytes()[i - 1].is_ascii_alphanumeric() || o.as_bytes()[0] == b'D');
                if hit {
                    bad.push(format!("{rel}:{}: cites {o}", n + 1));
                }
            }
            // A `docs/` page cited anywhere exists.
            for (i, _) in line.match_indices("docs/") {
                let tail: String =
                    line[i..].chars().take_while(|c| c.is_ascii_alphanumeric() || "_-./".contains(*c)).collect();
                let tail = tail.trim_end_matches('.');
                if tail.ends_with(".md") && !root().join(tail).exists() {
                    bad.push(format!("{rel}:{}: {tail} does not exist", n + 1));
                }
            }
        }
    }
    assert!(bad.is_empty(), "citations that lead outside the repository or nowhere:\n{}", bad.join("\n"));
}

/// The comment lines of a source file: `//` in Rust, `#` in Python, shell, Makefile and TOML.
fn comment_lines(file: &Path, text: &str) -> Vec<(usize, String)> {
    let mark = if file.extension().is_some_and(|e| e == "rs") {
        "//"
    } else if file.extension().is_some_and(|e| e == "md") {
        return Vec::new();
    } else {
        "#"
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with(mark))
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect()
}

/// The repository paths a line names from the top (`src/limits.rs`, `tests/support/`): a
/// top folder at the start of a word, then path characters, a sentence's full stop dropped.
fn repo_paths(line: &str) -> Vec<String> {
    const TOP: &[&str] = &["src/", "tests/", "benches/", "tools/", "docs/", "data/"];
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    for top in TOP {
        for (i, _) in line.match_indices(top) {
            if i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || b"_./-".contains(&bytes[i - 1])) {
                continue;
            }
            let path: String =
                line[i..].chars().take_while(|c| c.is_ascii_alphanumeric() || "_-./".contains(*c)).collect();
            out.push(path.trim_end_matches('.').to_string());
        }
    }
    out
}

/// Paths a comment names that are not this repository's: llama.cpp's own files (the GBNF
/// reader follows its parser and tests) and a file name's pattern.
const NOT_OURS: &[&str] = &["src/llama-grammar.cpp", "tests/test-grammar-", "tests/replies/NNN-"];

#[test]
fn every_file_a_comment_names_exists() {
    let mut bad = Vec::new();
    let mut named = 0;
    for file in sources() {
        let rel = file.strip_prefix(root()).unwrap().display().to_string();
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        for (n, line) in comment_lines(&file, &text) {
            for path in repo_paths(&line) {
                if NOT_OURS.iter().chain(MADE_AT_RUN_TIME).any(|m| path.starts_with(m)) {
                    continue;
                }
                named += 1;
                if !root().join(&path).exists() {
                    bad.push(format!("{rel}:{n}: {path} does not exist"));
                }
            }
        }
    }
    assert!(named >= 100, "only {named} file references in comments: is the reader broken?");
    assert!(bad.is_empty(), "files named in comments that are not in the repository:\n{}", bad.join("\n"));
}

/// The headings of a page, and the bold leads of its paragraphs and list items (`**Nothing
/// lost.**`), which a citation may name as well.
fn places(page: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (_, line) in prose_lines(page) {
        let t = line.trim_start().trim_start_matches("- ");
        if line.starts_with('#') {
            out.push(line.trim_start_matches('#').trim().to_string());
        } else if let Some(rest) = t.strip_prefix("**") {
            if let Some(end) = rest.find("**") {
                out.push(rest[..end].to_string());
            }
        }
    }
    out
}

/// A citation of a place in a page, as the code and the pages write it:
/// `docs/measurements.md, "Outline items"` or `docs/measurements.md ("Outline items")`; and
/// a section of the design, `docs/design.md §5`.
#[test]
fn every_section_a_citation_names_exists() {
    let mut bad = Vec::new();
    let mut cited = 0;
    for file in sources() {
        let rel = file.strip_prefix(root()).unwrap().display().to_string();
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        for (n, line) in text.lines().enumerate() {
            for (i, _) in line.match_indices("docs/") {
                let page: String =
                    line[i..].chars().take_while(|c| c.is_ascii_alphanumeric() || "_-./".contains(*c)).collect();
                let page = page.trim_end_matches('.');
                if !page.ends_with(".md") {
                    continue;
                }
                let Ok(body) = std::fs::read_to_string(root().join(page)) else { continue };
                let after = &line[i + page.len()..];
                if let Some(section) = after.strip_prefix(" §") {
                    cited += 1;
                    let number: String = section.chars().take_while(|c| c.is_ascii_digit()).collect();
                    if !body.lines().any(|l| l.starts_with("## ") && l[3..].starts_with(&format!("{number}."))) {
                        bad.push(format!("{rel}:{}: {page} has no §{number}", n + 1));
                    }
                }
                let quoted = after
                    .trim_start_matches(|c: char| c == ' ' || c == ',' || c == '(' || c == '§' || c.is_ascii_digit())
                    .strip_prefix('"')
                    .and_then(|q| q.split_once('"'))
                    .map(|(q, _)| q);
                if let Some(q) = quoted {
                    cited += 1;
                    let q = q.trim_end_matches(['.', ',']);
                    if !places(&body).iter().any(|p| p.to_lowercase().contains(&q.to_lowercase())) {
                        bad.push(format!("{rel}:{}: {page} has no heading or bold lead \"{q}\"", n + 1));
                    }
                }
            }
        }
    }
    assert!(cited >= 20, "only {cited} citations of a page's section: is the reader broken?");
    assert!(bad.is_empty(), "citations of sections that are not there:\n{}", bad.join("\n"));
}
