//! Reading typed settings out of a JSON document with every problem collected, not just the
//! first: a user fixing `config.json` sees all of its mistakes at once, each with its key path
//! (`agent.think_log.max_entries: expected an integer from 1 to 999, found "four"`), and a key
//! no setting reads is one of them, with the known key it is closest to (`llm.endpiont: unknown
//! key; did you mean llm.endpoint?`).
//!
//! Start-up code only: it allocates freely (problem texts, owned strings), which the
//! steady-state cycle never does.

use crate::json::{Kind, Value};

/// The problems found so far, and the unknown keys noted (for files whose contract only warns
/// about them: `agent-prompt.json`).
#[derive(Default)]
pub struct Checker {
    problems: Vec<String>,
    unknown: Vec<String>,
}

impl Checker {
    /// A checker with no problems.
    pub fn new() -> Checker {
        Checker::default()
    }

    /// Records a problem at `path`.
    pub fn problem(&mut self, path: &str, message: impl core::fmt::Display) {
        self.problems.push(format!("{}: {}", path, message));
    }

    /// The problems, in the order found.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Keys present in the file that no setting reads, as key paths.
    pub fn unknown_keys(&self) -> &[String] {
        &self.unknown
    }

    /// Makes every member of the object `v` (at `path`) whose name is not in `known` a problem:
    /// a typo must not leave the agent running on a default the user did not choose. The
    /// message names the closest known key when one is close enough to be the one meant (see
    /// [`nearest`]), else lists the keys that are known there.
    pub fn reject_unknown(&mut self, v: Option<Value<'_>>, path: &str, known: &[&str]) {
        let Some(v) = v else { return };
        for (k, _) in v.members() {
            if known.contains(&k) {
                continue;
            }
            let at = join(path, k);
            match nearest(k, known) {
                Some(meant) => self.problem(&at, format_args!("unknown key; did you mean {}?", join(path, meant))),
                None => self.problem(&at, format_args!("unknown key; the keys known here are {}", known.join(", "))),
            }
        }
    }

    /// Records every member of the object `v` (at `path`) whose name is not in `known`, for a
    /// warning (see [`Checker::unknown_keys`]); `config.json` uses [`Checker::reject_unknown`].
    pub fn note_unknown(&mut self, v: Option<Value<'_>>, path: &str, known: &[&str]) {
        let Some(v) = v else { return };
        for (k, _) in v.members() {
            if !known.contains(&k) {
                self.unknown.push(join(path, k));
            }
        }
    }

    /// The object at `key` of `parent`, if present; a problem if present but not an object.
    pub fn object<'a>(&mut self, parent: Option<Value<'a>>, path: &str, key: &str) -> Option<Value<'a>> {
        let v = parent?.get(key)?;
        if v.kind() == Kind::Object {
            Some(v)
        } else {
            self.problem(&join(path, key), format_args!("expected an object, found {}", describe(v)));
            None
        }
    }

    /// A boolean: `true`/`false`, a number (non-zero is true) or the strings `"true"`/`"false"`
    /// (the C original's config accepted all three).
    pub fn boolean(&mut self, parent: Option<Value<'_>>, path: &str, key: &str, default: bool) -> bool {
        let Some(v) = parent.and_then(|p| p.get(key)) else { return default };
        if let Some(b) = v.as_bool() {
            return b;
        }
        if let Some(n) = v.as_f64() {
            return n != 0.0;
        }
        match v.as_str().map(str::trim) {
            Some("true") | Some("1") => true,
            Some("false") | Some("0") => false,
            _ => {
                self.problem(&join(path, key), format_args!("expected true or false, found {}", describe(v)));
                default
            }
        }
    }

    /// An integer in `min..=max`.
    pub fn integer(
        &mut self,
        parent: Option<Value<'_>>,
        path: &str,
        key: &str,
        default: i64,
        min: i64,
        max: i64,
    ) -> i64 {
        let Some(v) = parent.and_then(|p| p.get(key)) else { return default };
        // Era-B configs sometimes quote numbers ("max_entries": "4"); accept that too.
        let n = v.as_i64().or_else(|| v.as_str().and_then(|s| s.trim().parse::<i64>().ok()));
        match n {
            Some(n) if (min..=max).contains(&n) => n,
            _ => {
                self.problem(
                    &join(path, key),
                    format_args!("expected an integer from {} to {}, found {}", min, max, describe(v)),
                );
                default
            }
        }
    }

    /// A finite number in `min..=max`.
    pub fn number(
        &mut self,
        parent: Option<Value<'_>>,
        path: &str,
        key: &str,
        default: f64,
        min: f64,
        max: f64,
    ) -> f64 {
        let Some(v) = parent.and_then(|p| p.get(key)) else { return default };
        let n = v.as_f64().or_else(|| v.as_str().and_then(|s| s.trim().parse::<f64>().ok()));
        match n {
            Some(n) if n.is_finite() && n >= min && n <= max => n,
            _ => {
                self.problem(
                    &join(path, key),
                    format_args!("expected a number from {} to {}, found {}", min, max, describe(v)),
                );
                default
            }
        }
    }

    /// A string; `None` if absent. A problem if present but not a string, or longer than `max`
    /// bytes.
    pub fn string(&mut self, parent: Option<Value<'_>>, path: &str, key: &str, max: usize) -> Option<String> {
        let v = parent?.get(key)?;
        match v.as_str() {
            Some(s) if s.len() <= max => Some(s.to_string()),
            Some(s) => {
                self.problem(&join(path, key), format_args!("is {} bytes long; at most {} are allowed", s.len(), max));
                None
            }
            None => {
                self.problem(&join(path, key), format_args!("expected a string, found {}", describe(v)));
                None
            }
        }
    }
}

/// The key of `known` that `key` is most likely a misspelling of: the one at the smallest edit
/// distance (letters inserted, deleted, changed or swapped with a neighbour; case ignored),
/// when that distance is at most a third of the longer name (`endpiont` -> `endpoint`, `agnet`
/// -> `agent`, `max_iteration` -> `max_iterations`; `zzz` is close to nothing).
pub fn nearest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    let mut best: Option<(usize, &'k str)> = None;
    for &candidate in known {
        let longer = key.chars().count().max(candidate.chars().count());
        let limit = longer / 3;
        let Some(d) = edit_distance(key, candidate, limit) else { continue };
        if best.is_none_or(|(b, _)| d < b) {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, k)| k)
}

/// The optimal-string-alignment distance between `a` and `b` (case-insensitive), if it is at
/// most `limit`.
fn edit_distance(a: &str, b: &str, limit: usize) -> Option<usize> {
    let a: Vec<char> = a.chars().map(|c| c.to_ascii_lowercase()).collect();
    let b: Vec<char> = b.chars().map(|c| c.to_ascii_lowercase()).collect();
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    // Three rows of the distance table: two rows back (for swaps), the last, the current.
    let width = b.len() + 1;
    let mut before: Vec<usize> = vec![0; width];
    let mut last: Vec<usize> = (0..width).collect();
    let mut row: Vec<usize> = vec![0; width];
    for (i, &ca) in a.iter().enumerate() {
        if let Some(first) = row.first_mut() {
            *first = i + 1;
        }
        let mut row_min = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let del = last.get(j + 1).map_or(usize::MAX, |d| d + 1);
            let ins = row.get(j).map_or(usize::MAX, |d| d + 1);
            let sub = last.get(j).map_or(usize::MAX, |d| d + cost);
            let mut d = del.min(ins).min(sub);
            let swapped = i > 0 && j > 0 && a.get(i - 1) == Some(&cb) && b.get(j - 1) == Some(&ca);
            if swapped {
                d = d.min(before.get(j - 1).map_or(usize::MAX, |x| x + 1));
            }
            if let Some(cell) = row.get_mut(j + 1) {
                *cell = d;
            }
            row_min = row_min.min(d);
        }
        if row_min > limit {
            return None;
        }
        core::mem::swap(&mut before, &mut last);
        core::mem::swap(&mut last, &mut row);
    }
    last.get(b.len()).copied().filter(|&d| d <= limit)
}

/// `path.key`, or `key` at the root.
pub fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{}.{}", path, key)
    }
}

/// A short description of a value for messages: `"four"`, `an object`, `null`.
pub fn describe(v: Value<'_>) -> String {
    match v.kind() {
        Kind::Null => "null".into(),
        Kind::Bool => format!("{}", v.as_bool().unwrap_or(false)),
        Kind::Number => v.number_text().unwrap_or("a number").to_string(),
        Kind::String => {
            let s = v.as_str().unwrap_or("");
            let mut cut = s.len().min(40);
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            let ellipsis = if cut < s.len() { "..." } else { "" };
            format!("\"{}{}\"", s.get(..cut).unwrap_or(""), ellipsis)
        }
        Kind::Array => "an array".into(),
        Kind::Object => "an object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_the_key_meant() {
        let llm = ["provider", "endpoint", "model", "temperature", "max_tokens", "stream", "stop", "extra"];
        assert_eq!(nearest("endpiont", &llm), Some("endpoint"));
        assert_eq!(nearest("Endpoint", &llm), Some("endpoint"));
        assert_eq!(nearest("modle", &llm), Some("model"));
        assert_eq!(nearest("max_token", &llm), Some("max_tokens"));
        assert_eq!(nearest("steam", &llm), Some("stream"));
        assert_eq!(nearest("temprature", &llm), Some("temperature"));
        assert_eq!(nearest("agnet", &["version", "llm", "agent", "memory"]), Some("agent"));
        assert_eq!(nearest("max_iteration", &["enable", "max_iterations", "delay_ms"]), Some("max_iterations"));
        for far in ["zzz_quux", "x", "", "temp", "wibble", "endpointendpoint"] {
            assert_eq!(nearest(far, &llm), None, "{far}");
        }
        assert_eq!(edit_distance("ab", "ba", 2), Some(1));
        assert_eq!(edit_distance("kitten", "sitting", 3), Some(3));
        assert_eq!(edit_distance("kitten", "sitting", 2), None);
        assert_eq!(edit_distance("ééa", "éé", 1), Some(1));
    }

    #[test]
    fn unknown_keys_are_problems_with_their_path() {
        let mut doc = crate::json::Document::with_capacity(64, 1024);
        doc.parse(br#"{"endpiont": 1, "model": 2, "zzz": 3}"#).unwrap();
        let mut c = Checker::new();
        c.reject_unknown(Some(doc.root()), "llm", &["endpoint", "model"]);
        assert_eq!(
            c.problems(),
            [
                "llm.endpiont: unknown key; did you mean llm.endpoint?",
                "llm.zzz: unknown key; the keys known here are endpoint, model"
            ]
        );
        assert!(c.unknown_keys().is_empty());
    }
}
