//! Fixed-capacity containers: nothing here grows after construction.
//!
//! - [`ArrayString`]: UTF-8 text with inline capacity `N` bytes.
//! - [`ArrayVec`]: a list of up to `N` `Copy` items, inline.
//! - [`FixedBuf`]: a byte buffer on the heap, reserved once (for large buffers: prompts,
//!   responses), that refuses to grow past its capacity.
//! - [`SliceWriter`]: a `fmt::Write` sink into a caller's `&mut [u8]`.
//!
//! When full, each returns a `CAPACITY_EXCEEDED` error and leaves its contents as they were
//! before the refused write: nothing is ever cut silently. The `fmt::Write` impls report a full
//! buffer as `fmt::Error` (that trait cannot carry more); callers that format use the
//! `write_fmt`-style helpers (`ArrayString::format`, `FixedBuf::format`) to get a proper error.
//!
//! Safe Rust only: `ArrayVec` needs `T: Copy + Default` to initialise its slots, and
//! `ArrayString::as_str` re-validates UTF-8 (a fast, bounded check) rather than assume it.

use crate::error::Result;
use core::fmt;

/// UTF-8 text with an inline capacity of `N` bytes.
#[derive(Clone, Copy)]
pub struct ArrayString<const N: usize> {
    buf: [u8; N],
    len: usize,
}

/// The text of an [`ArrayString`]'s first `len` bytes: compiled once, not once for each `N`.
#[inline(never)]
fn text_of(buf: &[u8], len: usize) -> &str {
    crate::bytes::utf8_prefix(crate::bytes::take(buf, len))
}
impl<const N: usize> ArrayString<N> {
    /// An empty string.
    pub const fn new() -> Self {
        ArrayString { buf: [0; N], len: 0 }
    }

    /// A copy of `s`, or `CAPACITY_EXCEEDED` if it is longer than `N` bytes.
    pub fn try_from_str(s: &str) -> Result<Self> {
        let mut a = Self::new();
        a.push_str(s)?;
        Ok(a)
    }

    /// Capacity in bytes.
    pub const fn capacity(&self) -> usize {
        N
    }

    /// Length in bytes.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether the string is empty.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes still free.
    pub const fn remaining(&self) -> usize {
        N - self.len
    }

    /// The text. Only whole `&str`s (or whole chars) are ever copied in, and cuts happen only
    /// at character boundaries, so the valid prefix is all of it.
    #[inline(never)]
    pub fn as_str(&self) -> &str {
        text_of(&self.buf, self.len)
    }

    /// The text as bytes (`len` never passes `N`).
    pub fn as_bytes(&self) -> &[u8] {
        crate::bytes::take(&self.buf, self.len)
    }

    /// Its bytes and length as one [`Fill`]: the writes below are compiled once for every `N`.
    #[inline]
    fn fill(&mut self) -> Fill<'_> {
        Fill { buf: &mut self.buf, len: &mut self.len }
    }

    /// Appends `s`, or fails with `CAPACITY_EXCEEDED` and leaves the string unchanged.
    #[inline]
    pub fn push_str(&mut self, s: &str) -> Result<()> {
        self.fill().push_str(s)
    }

    /// Appends one character.
    #[inline]
    pub fn push(&mut self, c: char) -> Result<()> {
        let mut tmp = [0u8; 4];
        self.fill().push_str(c.encode_utf8(&mut tmp))
    }

    /// Appends formatted text, or fails with `CAPACITY_EXCEEDED` and leaves the string as it
    /// was before the call.
    #[inline]
    pub fn format(&mut self, args: fmt::Arguments<'_>) -> Result<()> {
        self.fill().format(args)
    }

    /// Empties the string.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Shortens the string to at most `len` bytes, moving back to a character boundary.
    #[inline]
    pub fn truncate(&mut self, len: usize) {
        self.fill().truncate(len)
    }

    /// Makes room for `marker` at the end (cutting at a character boundary) and appends it, so
    /// a shortened text says it was shortened. Used for error messages only.
    pub fn clip_with_marker(&mut self, marker: &str) {
        if marker.len() > N {
            return;
        }
        if self.remaining() < marker.len() {
            self.truncate(N - marker.len());
        }
        let _ = self.push_str(marker);
    }
}

/// The body of [`ArrayString`]'s writes over its bytes (`buf.len()` is the capacity) and its
/// length, so that it is compiled once, not once for each capacity in use.
struct Fill<'a> {
    buf: &'a mut [u8],
    len: &'a mut usize,
}

impl Fill<'_> {
    fn push_str(&mut self, s: &str) -> Result<()> {
        let end = *self.len + s.len();
        match self.buf.get_mut(*self.len..end) {
            Some(dst) => {
                dst.copy_from_slice(s.as_bytes());
                *self.len = end;
                Ok(())
            }
            None => Err(crate::err!(
                CapacityExceeded,
                "text of {} bytes does not fit: {} of {} bytes used",
                s.len(),
                *self.len,
                self.buf.len()
            )),
        }
    }

    fn format(&mut self, args: fmt::Arguments<'_>) -> Result<()> {
        let before = *self.len;
        if fmt::Write::write_fmt(self, args).is_err() {
            *self.len = before;
            return Err(crate::err!(CapacityExceeded, "formatted text does not fit in {} bytes", self.buf.len()));
        }
        Ok(())
    }

    fn truncate(&mut self, len: usize) {
        if len >= *self.len {
            return;
        }
        let text = crate::bytes::utf8_prefix(crate::bytes::take(self.buf, *self.len));
        *self.len = crate::bytes::str_prefix(text, len).len();
    }
}

impl fmt::Write for Fill<'_> {
    fn write_char(&mut self, c: char) -> core::fmt::Result {
        crate::bytes::write_char(self, c)
    }

    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_str(s).map_err(|_| fmt::Error)
    }
}

impl<const N: usize> Default for ArrayString<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> fmt::Write for ArrayString<N> {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        fmt::Write::write_str(&mut self.fill(), s)
    }

    #[inline]
    fn write_char(&mut self, c: char) -> fmt::Result {
        fmt::Write::write_char(&mut self.fill(), c)
    }

    #[inline]
    fn write_fmt(&mut self, args: fmt::Arguments<'_>) -> fmt::Result {
        fmt::Write::write_fmt(&mut self.fill(), args)
    }
}

impl<const N: usize> core::ops::Deref for ArrayString<N> {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl<const N: usize> PartialEq for ArrayString<N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl<const N: usize> Eq for ArrayString<N> {}

impl<const N: usize> PartialEq<str> for ArrayString<N> {
    fn eq(&self, other: &str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl<const N: usize> PartialEq<&str> for ArrayString<N> {
    fn eq(&self, other: &&str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl<const N: usize> PartialOrd for ArrayString<N> {
    fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<const N: usize> Ord for ArrayString<N> {
    fn cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl<const N: usize> core::hash::Hash for ArrayString<N> {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state)
    }
}

impl<const N: usize> fmt::Display for ArrayString<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<const N: usize> fmt::Debug for ArrayString<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// The error of a full [`ArrayVec`], made out of line: the `push` of each list type keeps only
/// the store.
#[cold]
#[inline(never)]
fn list_full(item: &'static str, capacity: usize) -> crate::error::Error {
    crate::err!(CapacityExceeded, "list of {} is full ({} items)", item, capacity)
}

/// A list of up to `N` items stored inline. Items are `Copy + Default` so every slot can be
/// initialised in safe Rust.
#[derive(Clone, Copy)]
pub struct ArrayVec<T: Copy + Default, const N: usize> {
    items: [T; N],
    len: usize,
}

impl<T: Copy + Default, const N: usize> ArrayVec<T, N> {
    /// An empty list.
    pub fn new() -> Self {
        ArrayVec { items: [T::default(); N], len: 0 }
    }

    /// Capacity in items.
    pub const fn capacity(&self) -> usize {
        N
    }

    /// Number of items.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether the list is empty.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether no item can be added.
    pub const fn is_full(&self) -> bool {
        self.len == N
    }

    /// Appends an item, or fails with `CAPACITY_EXCEEDED` and leaves the list unchanged.
    pub fn push(&mut self, item: T) -> Result<()> {
        match self.items.get_mut(self.len) {
            Some(slot) => {
                *slot = item;
                self.len += 1;
                Ok(())
            }
            None => Err(list_full(core::any::type_name::<T>(), N)),
        }
    }

    /// Inserts an item at `index` (at most `len`), shifting later items up.
    pub fn insert(&mut self, index: usize, item: T) -> Result<()> {
        if index > self.len {
            return Err(crate::err!(CapacityExceeded, "insert at {} past the end ({})", index, self.len));
        }
        self.push(item)?;
        if let Some(tail) = self.items.get_mut(index..self.len) {
            tail.rotate_right(1);
        }
        Ok(())
    }

    /// Removes and returns the last item.
    pub fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        self.items.get(self.len).copied()
    }

    /// Removes the item at `index`, shifting later items down; `None` if out of range.
    pub fn remove(&mut self, index: usize) -> Option<T> {
        let item = *self.items.get(index)?;
        if index >= self.len {
            return None;
        }
        if let Some(tail) = self.items.get_mut(index..self.len) {
            tail.rotate_left(1);
        }
        self.len -= 1;
        Some(item)
    }

    /// Keeps only the items for which `keep` returns true, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let mut w = 0;
        for r in 0..self.len {
            let Some(item) = self.items.get(r).copied() else { break };
            if keep(&item) {
                if let Some(slot) = self.items.get_mut(w) {
                    *slot = item;
                }
                w += 1;
            }
        }
        self.len = w;
    }

    /// Removes every item.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Shortens the list to at most `len` items.
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// The items (`len` never passes `N`).
    pub fn as_slice(&self) -> &[T] {
        crate::bytes::take(&self.items, self.len)
    }

    /// The items, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        let len = self.len;
        self.items.get_mut(..len).unwrap_or(&mut [])
    }

    /// Iterates over the items.
    pub fn iter(&self) -> core::slice::Iter<'_, T> {
        self.as_slice().iter()
    }

    /// The item at `index`, if any.
    pub fn get(&self, index: usize) -> Option<&T> {
        self.as_slice().get(index)
    }
}

impl<T: Copy + Default, const N: usize> Default for ArrayVec<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy + Default + fmt::Debug, const N: usize> fmt::Debug for ArrayVec<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl<T: Copy + Default + PartialEq, const N: usize> PartialEq for ArrayVec<T, N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<'a, T: Copy + Default, const N: usize> IntoIterator for &'a ArrayVec<T, N> {
    type Item = &'a T;
    type IntoIter = core::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// A heap byte buffer reserved once with a fixed capacity. Appends past the capacity fail with
/// `CAPACITY_EXCEEDED` naming the buffer; the buffer never reallocates.
pub struct FixedBuf {
    data: Vec<u8>,
    cap: usize,
    name: &'static str,
}

impl FixedBuf {
    /// Reserves `cap` bytes. `name` says what the buffer is for (and which constant in
    /// `limits.rs` sets it), so a full buffer gives an actionable message.
    pub fn with_capacity(name: &'static str, cap: usize) -> FixedBuf {
        FixedBuf { data: Vec::with_capacity(cap), cap, name }
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Bytes used.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Bytes still free.
    pub fn remaining(&self) -> usize {
        self.cap - self.data.len()
    }

    /// The contents.
    pub fn as_slice(&self) -> &[u8] {
        &self.data
    }

    /// The contents, mutable (length cannot change through this).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.data
    }

    /// The contents as text, if they are UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        core::str::from_utf8(&self.data).ok()
    }

    /// The contents of a buffer kept as text (written with `push_str` and `format`, cut only at
    /// character boundaries). Bytes that are not UTF-8 there mean a cut went through a
    /// character, a bug: that is an `INTERNAL` error naming the buffer and the byte, never text that
    /// silently reads as empty.
    pub fn text(&self) -> Result<&str> {
        core::str::from_utf8(&self.data).map_err(|e| {
            crate::err!(
                Internal,
                "{} holds bytes that are not UTF-8 at byte {} of {} (text cut inside a character; a bug)",
                self.name,
                e.valid_up_to(),
                self.data.len()
            )
        })
    }

    /// Empties the buffer, keeping its reservation.
    pub fn clear(&mut self) {
        self.data.clear();
    }

    /// Shortens the buffer to at most `len` bytes.
    pub fn truncate(&mut self, len: usize) {
        self.data.truncate(len);
    }

    /// Appends bytes, or fails with `CAPACITY_EXCEEDED` and leaves the buffer unchanged.
    // Not inlined: its 50 callers each had a copy of the check and of `Vec`'s growth path
    // (docs/measurements.md, "Fifth house session"); the text writers use `append_inline`.
    pub fn extend_from_slice(&mut self, bytes: &[u8]) -> Result<()> {
        self.append_inline(bytes)
    }

    /// [`extend_from_slice`](Self::extend_from_slice), inlined into the writers that append a
    /// few bytes at a time through `fmt::Write` (formatted text, the `json` command's output).
    #[inline]
    pub(crate) fn append_inline(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.len() > self.remaining() {
            return Err(self.full(bytes.len()));
        }
        self.data.extend_from_slice(bytes);
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn full(&self, more: usize) -> crate::error::Error {
        crate::err!(
            CapacityExceeded,
            "{} is full: {} more bytes do not fit in {} ({} used)",
            self.name,
            more,
            self.cap,
            self.data.len()
        )
    }

    /// Appends text.
    #[inline]
    pub fn push_str(&mut self, s: &str) -> Result<()> {
        self.extend_from_slice(s.as_bytes())
    }

    /// Appends formatted text, or fails with `CAPACITY_EXCEEDED` and leaves the buffer as it
    /// was before the call.
    pub fn format(&mut self, args: fmt::Arguments<'_>) -> Result<()> {
        let before = self.data.len();
        if fmt::Write::write_fmt(self, args).is_err() {
            self.data.truncate(before);
            return Err(crate::err!(
                CapacityExceeded,
                "{} is full: formatted text does not fit in {} bytes",
                self.name,
                self.cap
            ));
        }
        Ok(())
    }

    /// Gives a spare region of at most `max` bytes to `fill` (e.g. a socket read), then keeps
    /// the number of bytes it reports. Fails with `CAPACITY_EXCEEDED` when the buffer is full.
    /// The region is zeroed before the call; no uninitialised memory is exposed.
    pub fn fill_with<E>(
        &mut self,
        max: usize,
        fill: impl FnOnce(&mut [u8]) -> core::result::Result<usize, E>,
    ) -> core::result::Result<core::result::Result<usize, E>, crate::error::Error> {
        let room = self.remaining().min(max);
        if room == 0 {
            return Err(crate::err!(CapacityExceeded, "{} is full ({} bytes)", self.name, self.cap));
        }
        let start = self.data.len();
        self.data.resize(start + room, 0);
        let res = match self.data.get_mut(start..) {
            Some(spare) => fill(spare),
            None => Ok(0),
        };
        let kept = match &res {
            Ok(n) => (*n).min(room),
            Err(_) => 0,
        };
        self.data.truncate(start + kept);
        Ok(res)
    }

    /// Removes the first `n` bytes, moving the rest to the front.
    pub fn consume_front(&mut self, n: usize) {
        let n = n.min(self.data.len());
        self.data.drain(..n);
    }
}

impl fmt::Write for FixedBuf {
    fn write_char(&mut self, c: char) -> core::fmt::Result {
        crate::bytes::write_char(self, c)
    }

    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.append_inline(s.as_bytes()).map_err(|_| fmt::Error)
    }
}

impl fmt::Debug for FixedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FixedBuf({}: {}/{} bytes)", self.name, self.data.len(), self.cap)
    }
}

/// A `fmt::Write` sink into a caller's byte slice. On overflow it writes nothing of the
/// refused piece, returns `fmt::Error`, and remembers it (`overflowed`).
pub struct SliceWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
    overflowed: bool,
}

impl<'a> SliceWriter<'a> {
    /// A writer at the start of `buf`.
    pub fn new(buf: &'a mut [u8]) -> SliceWriter<'a> {
        SliceWriter { buf, len: 0, overflowed: false }
    }

    /// Bytes written so far (`len` never passes the buffer).
    pub fn written(&self) -> &[u8] {
        crate::bytes::take(self.buf, self.len)
    }

    /// The text written so far (always whole `&str` pieces, so the valid prefix is all of it).
    pub fn as_str(&self) -> &str {
        crate::bytes::utf8_prefix(self.written())
    }

    /// Number of bytes written.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether a write was refused for lack of room.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Writes formatted text; `CAPACITY_EXCEEDED` if it did not fit.
    pub fn format(&mut self, args: fmt::Arguments<'_>) -> Result<()> {
        if fmt::Write::write_fmt(self, args).is_err() {
            return Err(crate::err!(CapacityExceeded, "text does not fit in a {}-byte buffer", self.buf.len()));
        }
        Ok(())
    }
}

impl fmt::Write for SliceWriter<'_> {
    fn write_char(&mut self, c: char) -> core::fmt::Result {
        crate::bytes::write_char(self, c)
    }

    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        match self.buf.get_mut(self.len..end) {
            Some(dst) => {
                dst.copy_from_slice(s.as_bytes());
                self.len = end;
                Ok(())
            }
            None => {
                self.overflowed = true;
                Err(fmt::Error)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;
    use core::fmt::Write;

    #[test]
    fn array_string_refuses_overflow_and_keeps_contents() {
        let mut s: ArrayString<8> = ArrayString::new();
        s.push_str("abcd").unwrap();
        let e = s.push_str("efghi").unwrap_err();
        assert_eq!(e.code(), Code::CapacityExceeded);
        assert_eq!(s.as_str(), "abcd");
        s.push_str("efgh").unwrap();
        assert_eq!(s.as_str(), "abcdefgh");
        assert!(s.push('x').is_err());
        assert!(write!(s, "y").is_err());
        assert_eq!(s.len(), 8);
    }

    #[test]
    fn array_string_format_is_all_or_nothing() {
        let mut s: ArrayString<10> = ArrayString::try_from_str("ab").unwrap();
        assert!(s.format(format_args!("{}-{}", 12345, 678910)).is_err());
        assert_eq!(s.as_str(), "ab");
        s.format(format_args!("{}", 42)).unwrap();
        assert_eq!(s.as_str(), "ab42");
    }

    #[test]
    fn array_string_truncates_at_char_boundary() {
        let mut s: ArrayString<16> = ArrayString::try_from_str("aé€").unwrap();
        s.truncate(4); // inside the 3-byte euro sign
        assert_eq!(s.as_str(), "aé");
        s.truncate(2); // inside é
        assert_eq!(s.as_str(), "a");
    }

    #[test]
    fn array_vec_push_insert_remove_retain() {
        let mut v: ArrayVec<u32, 4> = ArrayVec::new();
        for i in 0..4 {
            v.push(i).unwrap();
        }
        assert_eq!(v.push(9).unwrap_err().code(), Code::CapacityExceeded);
        assert_eq!(v.as_slice(), &[0, 1, 2, 3]);
        assert_eq!(v.remove(1), Some(1));
        assert_eq!(v.remove(7), None);
        v.insert(0, 7).unwrap();
        assert_eq!(v.as_slice(), &[7, 0, 2, 3]);
        assert!(v.insert(5, 1).is_err());
        v.retain(|x| *x != 0);
        assert_eq!(v.as_slice(), &[7, 2, 3]);
        assert_eq!(v.pop(), Some(3));
        v.clear();
        assert_eq!(v.pop(), None);
    }

    #[test]
    fn fixed_buf_never_grows() {
        let mut b = FixedBuf::with_capacity("test buffer", 5);
        b.push_str("abc").unwrap();
        let e = b.push_str("def").unwrap_err();
        assert!(e.message().contains("test buffer"));
        assert_eq!(b.as_slice(), b"abc");
        assert!(b.format(format_args!("{}", 123)).is_err());
        assert_eq!(b.as_slice(), b"abc");
        let got = b.fill_with(10, |spare| -> core::result::Result<usize, ()> {
            assert_eq!(spare.len(), 2);
            spare[0] = b'x';
            Ok(1)
        });
        assert_eq!(got.unwrap(), Ok(1));
        assert_eq!(b.as_slice(), b"abcx");
        b.consume_front(2);
        assert_eq!(b.as_slice(), b"cx");
        assert_eq!(b.capacity(), 5);
    }

    #[test]
    fn fixed_buf_text_reports_a_cut_character() {
        let mut b = FixedBuf::with_capacity("test buffer", 8);
        b.push_str("aé").unwrap();
        assert_eq!(b.text().unwrap(), "aé");
        b.truncate(2);
        let e = b.text().unwrap_err();
        assert_eq!(e.code(), crate::error::Code::Internal);
        assert!(e.message().contains("test buffer") && e.message().contains("at byte 1 of 2"), "{e}");
    }

    #[test]
    fn slice_writer_reports_overflow() {
        let mut raw = [0u8; 4];
        let mut w = SliceWriter::new(&mut raw);
        w.write_str("ab").unwrap();
        assert!(w.write_str("cde").is_err());
        assert!(w.overflowed());
        assert_eq!(w.as_str(), "ab");
    }
}
