//! A small, strict argument reader for the subcommands: flags, options with values, and
//! positionals; anything not asked for is a usage error (exit 2), never silently ignored.

use crate::error::Result;

/// The arguments of one subcommand (after the subcommand's name).
pub struct Args {
    items: Vec<Option<String>>,
}

impl Args {
    /// Wraps the arguments.
    pub fn new(items: Vec<String>) -> Args {
        Args { items: items.into_iter().map(Some).collect() }
    }

    /// Whether `--help` or `-h` was given (consumed). Out of line: every command asks.
    #[inline(never)]
    pub fn help(&mut self) -> bool {
        self.flag("--help") | self.flag("-h")
    }

    /// Consumes the flag `name` wherever it stands; true if it was there.
    pub fn flag(&mut self, name: &str) -> bool {
        let mut found = false;
        for slot in self.items.iter_mut() {
            if slot.as_deref() == Some(name) {
                *slot = None;
                found = true;
            }
        }
        found
    }

    /// Consumes `name VALUE` or `name=VALUE`; the last one given wins.
    pub fn value(&mut self, name: &str) -> Result<Option<String>> {
        let mut out = None;
        let mut i = 0;
        while i < self.items.len() {
            let Some(item) = self.items.get(i).cloned().flatten() else {
                i += 1;
                continue;
            };
            if item == name {
                let v = self.items.get_mut(i + 1).and_then(Option::take);
                match v {
                    Some(v) => out = Some(v),
                    None => bail!(Usage, "option {} needs a value", name),
                }
                if let Some(slot) = self.items.get_mut(i) {
                    *slot = None;
                }
                i += 2;
                continue;
            }
            if let Some(v) = item.strip_prefix(name).and_then(|rest| rest.strip_prefix('=')) {
                out = Some(v.to_string());
                if let Some(slot) = self.items.get_mut(i) {
                    *slot = None;
                }
            }
            i += 1;
        }
        Ok(out)
    }

    /// Consumes and returns the next positional argument (one not starting with `--`, or `-`
    /// alone, which means stdin).
    #[inline(never)]
    pub fn positional(&mut self) -> Option<String> {
        for slot in self.items.iter_mut() {
            let is_pos = matches!(slot.as_deref(), Some(s) if s == "-" || !s.starts_with('-'));
            if is_pos {
                return slot.take();
            }
        }
        None
    }

    /// Fails with a usage error if any argument was not consumed.
    pub fn finish(&self, command: &str) -> Result<()> {
        if let Some(extra) = self.items.iter().flatten().next() {
            if command.is_empty() {
                bail!(Usage, "unexpected argument '{}' before the command; see 'lkjagent --help'", extra);
            }
            bail!(Usage, "unexpected argument '{}' for '{}'; see 'lkjagent {} --help'", extra, command, command);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Args {
        Args::new(v.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn reads_flags_values_and_positionals() {
        let mut a = args(&["file.json", "--pretty", "--data", "d", "--n=3"]);
        assert!(a.flag("--pretty"));
        assert_eq!(a.value("--data").unwrap().as_deref(), Some("d"));
        assert_eq!(a.value("--n").unwrap().as_deref(), Some("3"));
        assert_eq!(a.positional().as_deref(), Some("file.json"));
        assert!(a.finish("json").is_ok());
    }

    #[test]
    fn leftovers_and_missing_values_are_usage_errors() {
        let mut a = args(&["--data"]);
        assert_eq!(a.value("--data").unwrap_err().code(), crate::error::Code::Usage);
        let a = args(&["--bogus"]);
        assert!(a.finish("json").is_err());
        let mut a = args(&["-"]);
        assert_eq!(a.positional().as_deref(), Some("-"));
    }
}
