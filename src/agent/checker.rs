//! Reading typed settings out of a JSON document with every problem collected, not just the
//! first: a user fixing `config.json` sees all of its mistakes at once, each with its key path
//! (`agent.think_log.max_entries: expected an integer from 1 to 999, found "four"`), and a key
//! no setting reads is one of them, with the known key it is closest to (`llm.endpiont: unknown
//! key; did you mean llm.endpoint?`).
//!
//! A section is described by one table of [`Key`]s (its name, what its value must be, where a
//! valid value goes) and read by one routine, [`Checker::read`]: the keys a section knows and
//! the keys it reads are the same list, so a key cannot be read but rejected as unknown, and
//! the code is one small loop rather than a call per key.
//!
//! Start-up code only: it allocates freely (problem texts, owned strings), which the
//! steady-state cycle never does.

use crate::json::{Kind, Value};
use core::fmt::{self, Display};

/// Longest value a [`Key::choice`] takes, in bytes (the names are all shorter).
const CHOICE_MAX_BYTES: usize = 16;

/// What a configuration section fills: settings named by a small enum (`Slot`), so that a
/// table says where each value goes with one byte, and one match puts it there. (A setter
/// function per key reads as well but costs a function, a pointer and its relocation each.)
pub trait Target: Sized + 'static {
    /// Names of the settings a table's keys fill.
    type Slot: Copy;

    /// Puts a valid `value` into `slot`; `false` if the setting does not take it (a name a
    /// choice does not know; or a value of another kind, which the tables' tests rule out).
    fn set(&mut self, slot: Self::Slot, value: Got<'_>) -> bool;
}

/// One key of a configuration section: its name, what its value must be, and where a valid
/// value goes. A missing or invalid value leaves the target as it was: the target starts out
/// holding the defaults.
pub struct Key<T: Target> {
    name: &'static str,
    rule: Rule<T>,
}

/// What a [`Key`]'s value must be, and where it goes.
pub enum Rule<T: Target> {
    /// An integer in `min..=max` (a quoted one too; see [`Checker::integer`]).
    Integer { min: i64, max: i64, to: T::Slot },
    /// A boolean (see [`Checker::boolean`] for the spellings taken).
    Bool(T::Slot),
    /// A string of at most `max` bytes, as written.
    Text { max: usize, to: T::Slot },
    /// One of these names (the list the problem message gives), surrounding spaces ignored.
    Choice(&'static [&'static str], T::Slot),
    /// A value with a shape of its own (string or array, number or null, an object), read by
    /// this function from the section at its path, present or not, in table order.
    Read(fn(&mut Checker, Option<Value<'_>>, &str, &mut T)),
    /// Read by the section's own code (a section read in a step of its own, an older name read
    /// with its successor); listed so that it is known.
    Elsewhere,
    /// Accepted from older configurations and read by nothing.
    Ignored,
}

/// A valid value, on its way to [`Target::set`].
#[derive(Clone, Copy, Debug)]
pub enum Got<'a> {
    Integer(i64),
    Bool(bool),
    /// A string (a choice's name trimmed, any other as written).
    Text(&'a str),
}

impl<T: Target> Key<T> {
    /// An integer in `min..=max`, into `to`.
    pub const fn integer(name: &'static str, min: i64, max: i64, to: T::Slot) -> Key<T> {
        Key { name, rule: Rule::Integer { min, max, to } }
    }

    /// A boolean, into `to`.
    pub const fn boolean(name: &'static str, to: T::Slot) -> Key<T> {
        Key { name, rule: Rule::Bool(to) }
    }

    /// A string of at most `max` bytes, into `to`.
    pub const fn text(name: &'static str, max: usize, to: T::Slot) -> Key<T> {
        Key { name, rule: Rule::Text { max, to } }
    }

    /// One of `names`, into `to`.
    pub const fn choice(name: &'static str, names: &'static [&'static str], to: T::Slot) -> Key<T> {
        Key { name, rule: Rule::Choice(names, to) }
    }

    /// A value read by `read` (see [`Rule::Read`]).
    pub const fn read(name: &'static str, read: fn(&mut Checker, Option<Value<'_>>, &str, &mut T)) -> Key<T> {
        Key { name, rule: Rule::Read(read) }
    }

    /// A key the section's own code reads (see [`Rule::Elsewhere`]).
    pub const fn elsewhere(name: &'static str) -> Key<T> {
        Key { name, rule: Rule::Elsewhere }
    }

    /// A key accepted from older configurations and read by nothing.
    pub const fn ignored(name: &'static str) -> Key<T> {
        Key { name, rule: Rule::Ignored }
    }

    /// The member's name in its object.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// What its value must be, and where it goes.
    pub fn rule(&self) -> &Rule<T> {
        &self.rule
    }
}

/// The names of a table's keys, in table order.
pub fn names<T: Target>(keys: &[Key<T>]) -> Vec<&'static str> {
    keys.iter().map(|k| k.name).collect()
}

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
    pub fn problem(&mut self, path: &str, message: impl Display) {
        self.problem_dyn(path, &message);
    }

    /// Records a problem at `path.key` (`key` at the root).
    pub fn problem_at(&mut self, path: &str, key: &str, message: impl Display) {
        self.problem_at_dyn(path, key, &message);
    }

    // The two above once, not once per message type and call site (there are 60 of them).
    #[inline(never)]
    fn problem_dyn(&mut self, path: &str, message: &dyn Display) {
        self.push(format_args!("{}: {}", path, message));
    }

    #[inline(never)]
    fn problem_at_dyn(&mut self, path: &str, key: &str, message: &dyn Display) {
        self.push(format_args!("{}: {}", At(path, key), message));
    }

    /// The one place a problem's text is built (out of line: there are many call sites).
    #[inline(never)]
    fn push(&mut self, problem: fmt::Arguments<'_>) {
        self.problems.push(problem.to_string());
    }

    /// The problems, in the order found.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Keys present in the file that no setting reads, as key paths.
    pub fn unknown_keys(&self) -> &[String] {
        &self.unknown
    }

    /// Reads the object `section` (at `path`, absent if `None`) by its table into `into`: a
    /// member the table does not name is a problem ([`Checker::reject_unknown`]), then each key
    /// is read in table order (so its problems come in that order) and a valid value is set.
    pub fn read<T: Target>(&mut self, section: Option<Value<'_>>, path: &str, keys: &[Key<T>], into: &mut T) {
        self.reject_unknown(section, path, &names(keys));
        for key in keys {
            let name = key.name;
            let (got, to) = match key.rule {
                Rule::Integer { min, max, to } => (self.integer(section, path, name, min, max).map(Got::Integer), to),
                Rule::Bool(to) => (self.boolean(section, path, name).map(Got::Bool), to),
                Rule::Text { max, to } => (self.string(section, path, name, max).map(Got::Text), to),
                Rule::Choice(names, to) => {
                    if let Some(raw) = self.string(section, path, name, CHOICE_MAX_BYTES) {
                        if !into.set(to, Got::Text(raw.trim())) {
                            self.not_one_of(path, name, raw, names);
                        }
                    }
                    continue;
                }
                Rule::Read(read) => {
                    read(self, section, path, into);
                    continue;
                }
                Rule::Elsewhere | Rule::Ignored => continue,
            };
            if let Some(got) = got {
                into.set(to, got);
            }
        }
    }

    /// The problem of a [`Key::choice`] value that is none of its names.
    #[inline(never)]
    fn not_one_of(&mut self, path: &str, key: &str, value: &str, names: &[&str]) {
        self.problem_at(path, key, format_args!("'{}' is not one of {}", value, names.join(", ")));
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
            match nearest(k, known) {
                Some(meant) => self.problem_at(path, k, format_args!("unknown key; did you mean {}?", At(path, meant))),
                None => {
                    self.problem_at(path, k, format_args!("unknown key; the keys known here are {}", known.join(", ")))
                }
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
    #[inline(never)]
    pub fn object<'a>(&mut self, parent: Option<Value<'a>>, path: &str, key: &str) -> Option<Value<'a>> {
        let v = member(parent, key)?;
        if v.kind() == Kind::Object {
            Some(v)
        } else {
            self.problem_at(path, key, format_args!("expected an object, found {}", describe(v)));
            None
        }
    }

    /// A boolean: `true`/`false`, a number (non-zero is true) or the strings `"true"`/`"false"`
    /// (the C original's config accepted all three). `None` if absent, or invalid (a problem).
    #[inline(never)]
    pub fn boolean(&mut self, parent: Option<Value<'_>>, path: &str, key: &str) -> Option<bool> {
        let v = member(parent, key)?;
        if let Some(b) = v.as_bool() {
            return Some(b);
        }
        if let Some(n) = v.as_f64() {
            return Some(n != 0.0);
        }
        match v.as_str().map(str::trim) {
            Some("true") | Some("1") => Some(true),
            Some("false") | Some("0") => Some(false),
            _ => {
                self.problem_at(path, key, format_args!("expected true or false, found {}", describe(v)));
                None
            }
        }
    }

    /// An integer in `min..=max`. `None` if absent, or invalid (a problem).
    #[inline(never)]
    pub fn integer(&mut self, parent: Option<Value<'_>>, path: &str, key: &str, min: i64, max: i64) -> Option<i64> {
        let v = member(parent, key)?;
        // Era-B configs sometimes quote numbers ("max_entries": "4"); accept that too.
        let n = v.as_i64().or_else(|| v.as_str().and_then(|s| crate::bytes::parse_i64(s.trim())));
        match n {
            Some(n) if (min..=max).contains(&n) => Some(n),
            _ => {
                self.problem_at(
                    path,
                    key,
                    format_args!("expected an integer from {} to {}, found {}", min, max, describe(v)),
                );
                None
            }
        }
    }

    /// A finite number in `min..=max`. `None` if absent, or invalid (a problem).
    #[inline(never)]
    pub fn number(&mut self, parent: Option<Value<'_>>, path: &str, key: &str, min: f64, max: f64) -> Option<f64> {
        let v = member(parent, key)?;
        let n = v.as_f64().or_else(|| v.as_str().and_then(|s| s.trim().parse::<f64>().ok()));
        match n {
            Some(n) if n.is_finite() && n >= min && n <= max => Some(n),
            _ => {
                self.problem_at(
                    path,
                    key,
                    format_args!("expected a number from {} to {}, found {}", min, max, describe(v)),
                );
                None
            }
        }
    }

    /// A string; `None` if absent. A problem if present but not a string, or longer than `max`
    /// bytes.
    #[inline(never)]
    pub fn string<'a>(&mut self, parent: Option<Value<'a>>, path: &str, key: &str, max: usize) -> Option<&'a str> {
        let v = member(parent, key)?;
        match v.as_str() {
            Some(s) if s.len() <= max => Some(s),
            Some(s) => {
                self.problem_at(path, key, format_args!("is {} bytes long; at most {} are allowed", s.len(), max));
                None
            }
            None => {
                self.problem_at(path, key, format_args!("expected a string, found {}", describe(v)));
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
    let (a, b) = (folded(a), folded(b));
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

/// The characters of `s`, ASCII letters in lower case (names compare case-insensitively).
#[inline(never)]
fn folded(s: &str) -> Vec<char> {
    s.chars().map(|c| c.to_ascii_lowercase()).collect()
}

/// The member `key` of `parent`, if both are there (one copy of the lookup for every reader).
#[inline(never)]
pub fn member<'a>(parent: Option<Value<'a>>, key: &str) -> Option<Value<'a>> {
    parent?.get(key)
}

/// `path.key`, or `key` at the root, as text.
struct At<'a>(&'a str, &'a str);

impl Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str(self.1)
        } else {
            write!(f, "{}.{}", self.0, self.1)
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
            let head = crate::bytes::str_prefix(s, 40);
            let ellipsis = if head.len() < s.len() { "..." } else { "" };
            format!("\"{}{}\"", head, ellipsis)
        }
        Kind::Array => "an array".into(),
        Kind::Object => "an object".into(),
    }
}

/// What every table's tests check of it: no key listed twice, and each key's setting takes a
/// value of the key's kind (a choice: each of its names, and not a made-up one), which the
/// compiler cannot see since a [`Rule`] names the setting, not its type. Returns each fault.
#[cfg(test)]
pub(crate) fn table_faults<T: Target>(keys: &[Key<T>], target: &mut T) -> Vec<String> {
    let mut faults = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        if keys[..i].iter().any(|k| k.name == key.name) {
            faults.push(format!("{}: listed twice", key.name));
        }
        let taken: Vec<bool> = match key.rule {
            Rule::Integer { min, max, to } => {
                vec![target.set(to, Got::Integer(min)), target.set(to, Got::Integer(max))]
            }
            Rule::Bool(to) => vec![target.set(to, Got::Bool(true)), target.set(to, Got::Bool(false))],
            Rule::Text { to, .. } => vec![target.set(to, Got::Text("x"))],
            Rule::Choice(names, to) => {
                let mut taken: Vec<bool> = names.iter().map(|n| target.set(to, Got::Text(n))).collect();
                taken.push(!target.set(to, Got::Text("no such name")));
                taken
            }
            Rule::Read(_) | Rule::Elsewhere | Rule::Ignored => vec![],
        };
        if taken.contains(&false) {
            faults.push(format!("{}: its setting does not take a value of its kind", key.name));
        }
    }
    faults
}

/// The names of a table's keys that other code reads ([`Rule::Elsewhere`]), for the tests that
/// show each one is read.
#[cfg(test)]
pub(crate) fn read_elsewhere<T: Target>(keys: &[Key<T>]) -> Vec<&'static str> {
    keys.iter().filter(|k| matches!(k.rule, Rule::Elsewhere)).map(|k| k.name).collect()
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
