//! Reading typed settings out of a JSON document with every problem collected, not just the
//! first: a user fixing `config.json` sees all of its mistakes at once, each with its key path
//! (`agent.think_log.max_entries: expected an integer from 1 to 999, found "four"`).
//!
//! Start-up code only: it allocates freely (problem texts, owned strings), which the
//! steady-state cycle never does.

use crate::json::{Kind, Value};

/// The problems found so far, and the keys that were read (to warn about unknown ones).
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

    /// Records every member of the object `v` (at `path`) whose name is not in `known`.
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
