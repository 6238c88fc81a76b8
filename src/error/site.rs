//! Where an error was raised: a file and a line in 8 bytes, with no pointer.
//!
//! There is one static [`Site`] per `err!`, `bail!` and `site!`, about 750 in the program. A
//! pointer to the file's name in each would be a relocation the loader applies at start-up, 24
//! bytes of table each in the dynamic binary beside the 24-byte static (29 KB in all,
//! docs/measurements.md, "Paying back"). So a site names its file by where the name lies in one
//! string of every source file's name, [`NAMES`], which the build script writes
//! (`build.rs`, from the files under `src/`), and finds it at compile time.

use core::cmp::Ordering;

include!(concat!(env!("OUT_DIR"), "/source_files.rs"));

/// A file name that is not in [`NAMES`] (code outside `src/`, such as an integration test that
/// raises an error, or a build that renamed its paths) reads as this.
const UNKNOWN: &str = "?";

/// Where an error was raised: one static per call site, made by the [`site!`](crate::site)
/// macro (which [`err!`](crate::err) uses).
pub struct Site {
    /// The file's name: `NAMES[at..at + len]`; `len == 0` when it is not there.
    at: u16,
    len: u16,
    line: u32,
}

impl Site {
    /// A site; use the [`site!`](crate::site) macro, which fills in `file!()` and `line!()`.
    pub const fn new(file: &str, line: u32) -> Site {
        let (at, len) = find(file.as_bytes());
        Site { at, len, line }
    }

    /// The source file, as `file!()` gave it.
    pub fn file(&self) -> &'static str {
        let at = usize::from(self.at);
        match NAMES.get(at..at + usize::from(self.len)) {
            Some(name) if self.len > 0 => name,
            _ => UNKNOWN,
        }
    }

    /// The source line.
    pub fn line(&self) -> u32 {
        self.line
    }
}

/// The span of `file` in [`NAMES`], by binary search of [`SPANS`] (sorted by name); `(0, 0)`
/// when it is not there.
const fn find(file: &[u8]) -> (u16, u16) {
    let (mut lo, mut hi) = (0, SPANS.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let Some(&(at, len)) = span(mid) else { break };
        match compare(name(at, len), file) {
            Ordering::Less => lo = mid + 1,
            Ordering::Greater => hi = mid,
            Ordering::Equal => return (at, len),
        }
    }
    (0, 0)
}

/// `SPANS[i]` in a const fn (where `get` is not yet usable).
const fn span(i: usize) -> Option<&'static (u16, u16)> {
    match SPANS.split_at_checked(i) {
        Some((_, rest)) => rest.first(),
        None => None,
    }
}

/// The bytes of `NAMES[at..at + len]` (empty when out of range, which the build script's
/// spans never are).
const fn name(at: u16, len: u16) -> &'static [u8] {
    match NAMES.as_bytes().split_at_checked(at as usize) {
        Some((_, rest)) => match rest.split_at_checked(len as usize) {
            Some((name, _)) => name,
            None => &[],
        },
        None => &[],
    }
}

/// Byte order of two names, as `<[u8]>::cmp` (which is not a const fn).
const fn compare(mut a: &[u8], mut b: &[u8]) -> Ordering {
    loop {
        match (a.split_first(), b.split_first()) {
            (Some((x, ra)), Some((y, rb))) => {
                if *x != *y {
                    return if *x < *y { Ordering::Less } else { Ordering::Greater };
                }
                a = ra;
                b = rb;
            }
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_file_is_found_and_others_are_not() {
        for &(at, len) in SPANS {
            let name = core::str::from_utf8(super::name(at, len)).unwrap();
            let site = Site::new(name, 7);
            assert_eq!(site.file(), name);
            assert_eq!(site.line(), 7);
        }
        assert_eq!(Site::new(file!(), 1).file(), "src/error/site.rs");
        assert_eq!(Site::new("tests/no_such_file.rs", 3).file(), "?");
        assert_eq!(Site::new("", 3).file(), "?");
        assert_eq!(Site::new("src/zzz.rs", 3).file(), "?");
        assert_eq!(Site::new("src/a.rs", 3).file(), "?");
    }

    #[test]
    fn names_are_sorted_so_the_search_is_sound() {
        let names: Vec<&[u8]> = SPANS.iter().map(|&(at, len)| super::name(at, len)).collect();
        assert!(names.len() > 100);
        assert!(names.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn a_site_is_small_and_holds_no_pointer() {
        assert_eq!(core::mem::size_of::<Site>(), 8);
    }
}
