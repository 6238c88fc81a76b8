//! Memory keys: one normalisation for every layer (working set, store, queries, migration).
//!
//! A key is a set of tags. [`normalize`] turns what a model or a user wrote into the canonical
//! form (docs/design.md §5):
//!
//! 1. split on `,`;
//! 2. trim each part (Unicode white space);
//! 3. lowercase ASCII letters (other letters are kept as written: case folding beyond ASCII
//!    depends on locale tables this program does not carry, and a key must mean the same thing
//!    on every host);
//! 4. turn each inner run of white space into one `_`;
//! 5. drop empty parts, sort byte-wise, remove duplicates.
//!
//! At most [`KEY_MAX_TAGS`] distinct tags of at most [`TAG_MAX_BYTES`] bytes each (measured
//! after normalisation). An empty result, too many tags or a too-long tag is `KEY_INVALID` with
//! a message naming the tag and the limit. Unlike the C original, nothing falls back to the raw
//! text: a key either normalises or is refused.
//!
//! Keys are opaque: `.` and `[` are ordinary characters, never paths (the C original nested
//! objects on `.`). Keys never become file names.
//!
//! [`Key`] holds the canonical comma-joined text inline (no heap); `Display` prints it.

use crate::error::Result;
use crate::fixed::{ArrayString, ArrayVec};
use crate::limits::{KEY_MAX_BYTES, KEY_MAX_TAGS, TAG_MAX_BYTES};
use core::fmt;

/// One normalised tag, inline.
pub type Tag = ArrayString<TAG_MAX_BYTES>;

/// A normalised key: a sorted set of 1..=[`KEY_MAX_TAGS`] distinct tags, kept as the canonical
/// comma-joined text. Construct it with [`normalize`] (or [`Key::from_tags`]); every `Key`
/// value is canonical, so equality of keys is equality of their text.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    text: ArrayString<KEY_MAX_BYTES>,
}

impl Key {
    /// The canonical text, e.g. `dictionary,terms`.
    pub fn as_str(&self) -> &str {
        self.text.as_str()
    }

    /// The tags, in canonical (sorted) order.
    pub fn tags(&self) -> impl Iterator<Item = &str> + '_ {
        self.text.as_str().split(',')
    }

    /// Number of tags (1..=[`KEY_MAX_TAGS`]).
    pub fn tag_count(&self) -> usize {
        self.tags().count()
    }

    /// Whether `tag` (already normalised) is one of this key's tags.
    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags().any(|t| t == tag)
    }

    /// Builds a key from tags that may be unsorted, repeated or not yet normalised: each is
    /// normalised as one part (commas inside a tag split it, as they would in text).
    pub fn from_tags<'a>(tags: impl IntoIterator<Item = &'a str>) -> Result<Key> {
        let mut set = TagSet::new();
        for t in tags {
            for part in t.split(',') {
                set.add_part(part)?;
            }
        }
        set.finish()
    }

    /// This key with `other`'s tags added (`KEY_INVALID` if that makes more than
    /// [`KEY_MAX_TAGS`]).
    pub fn union(&self, other: &Key) -> Result<Key> {
        Key::from_tags(self.tags().chain(other.tags()))
    }

    /// This key without `other`'s tags (`KEY_INVALID` if none would be left).
    pub fn difference(&self, other: &Key) -> Result<Key> {
        Key::from_tags(self.tags().filter(|t| !other.has_tag(t)))
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({:?})", self.as_str())
    }
}

/// Normalises `text` into a [`Key`] (see the module documentation for the rules).
pub fn normalize(text: &str) -> Result<Key> {
    let mut set = TagSet::new();
    for part in text.split(',') {
        set.add_part(part)?;
    }
    set.finish()
}

/// Normalises `text` like [`normalize`] but accepts an empty result (an absent filter in a
/// query): `Ok(None)` when no tag survives.
pub fn normalize_optional(text: &str) -> Result<Option<Key>> {
    let mut set = TagSet::new();
    for part in text.split(',') {
        set.add_part(part)?;
    }
    if set.tags.is_empty() {
        return Ok(None);
    }
    set.finish().map(Some)
}

/// Tags being collected: distinct, unsorted until `finish`.
struct TagSet {
    tags: ArrayVec<Tag, KEY_MAX_TAGS>,
}

impl TagSet {
    fn new() -> TagSet {
        TagSet { tags: ArrayVec::new() }
    }

    /// Normalises one comma-free part and adds it unless it is empty or already present.
    fn add_part(&mut self, part: &str) -> Result<()> {
        let mut tag = Tag::new();
        let mut in_space = false;
        let mut too_long = false;
        for c in part.trim().chars() {
            let piece = if c.is_whitespace() {
                if in_space {
                    continue;
                }
                in_space = true;
                '_'
            } else {
                in_space = false;
                c.to_ascii_lowercase()
            };
            if tag.push(piece).is_err() {
                too_long = true;
                break;
            }
        }
        if too_long {
            let shown = crate::bytes::str_prefix(part.trim(), 24);
            bail!(
                KeyInvalid,
                "tag \"{}...\" is longer than {} bytes after normalisation (TAG_MAX_BYTES)",
                shown.escape_debug(),
                TAG_MAX_BYTES
            );
        }
        if tag.is_empty() || self.tags.iter().any(|t| *t == tag) {
            return Ok(());
        }
        if self.tags.push(tag).is_err() {
            bail!(
                KeyInvalid,
                "more than {} distinct tags (KEY_MAX_TAGS): \"{}\" is one too many",
                KEY_MAX_TAGS,
                tag.as_str().escape_debug()
            );
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Key> {
        if self.tags.is_empty() {
            bail!(KeyInvalid, "the key has no tags: give at least one non-empty tag, e.g. \"notes,rust\"");
        }
        crate::sort::sort(self.tags.as_mut_slice());
        let mut text = ArrayString::<KEY_MAX_BYTES>::new();
        for (i, t) in self.tags.iter().enumerate() {
            // Cannot fail: KEY_MAX_BYTES holds KEY_MAX_TAGS full tags and the commas.
            if i > 0 {
                text.push_str(",")?;
            }
            text.push_str(t.as_str())?;
        }
        Ok(Key { text })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;

    #[test]
    fn normalises_like_the_design_says() {
        assert_eq!(normalize(" Terms, dictionary,terms , Vagueness").unwrap().as_str(), "dictionary,terms,vagueness");
        assert_eq!(normalize("Think  Log\t001").unwrap().as_str(), "think_log_001");
        assert_eq!(normalize("a.b,[0]").unwrap().as_str(), "[0],a.b");
        assert_eq!(normalize(",,b,,a,").unwrap().as_str(), "a,b");
        assert_eq!(normalize("ÉTÉ, Straße").unwrap().as_str(), "straße,ÉtÉ");
        assert_eq!(normalize("x\u{3000}\u{3000}y").unwrap().as_str(), "x_y");
    }

    #[test]
    fn is_idempotent() {
        let k = normalize("Z, y ,x x").unwrap();
        assert_eq!(normalize(k.as_str()).unwrap(), k);
        assert_eq!(k.tags().collect::<Vec<_>>(), ["x_x", "y", "z"]);
        assert_eq!(k.tag_count(), 3);
        assert_eq!(format!("{}", k), "x_x,y,z");
    }

    #[test]
    fn refuses_empty_too_many_and_too_long() {
        let e = normalize(" , ,").unwrap_err();
        assert_eq!(e.code(), Code::KeyInvalid);
        assert!(e.message().contains("no tags"));
        let e = normalize("a,b,c,d,e,f,g,h,i").unwrap_err();
        assert_eq!(e.code(), Code::KeyInvalid);
        assert!(e.message().contains("more than 8"), "{}", e.message());
        // Duplicates do not count towards the limit.
        assert_eq!(normalize("a,b,c,d,e,f,g,h,a,A, a ").unwrap().tag_count(), 8);
        let long = "x".repeat(TAG_MAX_BYTES + 1);
        let e = normalize(&format!("ok,{}", long)).unwrap_err();
        assert_eq!(e.code(), Code::KeyInvalid);
        assert!(e.message().contains("longer than 64 bytes"), "{}", e.message());
        let exact = "é".repeat(TAG_MAX_BYTES / 2);
        assert!(normalize(&exact).is_ok());
        assert!(normalize(&format!("{}a", exact)).is_err());
        assert_eq!(normalize_optional(" ,").unwrap(), None);
    }

    #[test]
    fn full_key_fits() {
        let tags: Vec<String> = (0..KEY_MAX_TAGS).map(|i| format!("{}{}", i, "t".repeat(TAG_MAX_BYTES - 1))).collect();
        let k = normalize(&tags.join(",")).unwrap();
        assert_eq!(k.as_str().len(), KEY_MAX_BYTES);
    }

    #[test]
    fn union_and_difference() {
        let a = normalize("a,b").unwrap();
        let b = normalize("c,b").unwrap();
        assert_eq!(a.union(&b).unwrap().as_str(), "a,b,c");
        assert_eq!(a.difference(&b).unwrap().as_str(), "a");
        assert!(a.difference(&a).is_err());
        assert!(Key::from_tags(["q", "P", "p"]).unwrap().as_str() == "p,q");
    }
}
