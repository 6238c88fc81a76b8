//! The store's log format: one record per line, each line framed by its own checksum.
//!
//! ```text
//! 3f0a9c12 {"op":"header","format":"lkjagent-store","version":2,"store":"5be1a0c47d2e9f31"}
//! 5d0e7f1a {"op":"put","id":0,"ver":1,"created":1700000000,"accessed":1700000000,"hits":0,"archived":false,"tags":["dictionary","terms"],"value":"a word list"}
//! 0b6a3c55 {"op":"touch","id":0,"accessed":1700000100,"hits":3}
//! 9e1f2a7b {"op":"link","a":0,"b":4}
//! 77c0d2e9 {"op":"unlink","a":0,"b":4}
//! 2f4b8a61 {"op":"del","id":0}
//! 6a1d33b0 {"op":"batch","entries":65536}
//! 1e7f0c42 {"op":"batch_end"}
//! ```
//!
//! Why this shape:
//!
//! - **Readable and greppable.** The part after the checksum is one JSON object a user can read,
//!   `grep` and pipe through `cut -c10- | jq`. JSON escapes every control character, so a record
//!   never contains a raw newline and the newline alone delimits records.
//! - **Framed.** The first 8 characters are the CRC-32 (lower-case hex) of the JSON bytes. A
//!   record cut short by a crash has no newline or a wrong checksum; one overwritten by a torn
//!   page has a wrong checksum. No length prefix is needed: the newline is unambiguous, and the
//!   checksum covers every byte of the record between prefix and newline.
//! - **One fixed field order.** The writer always emits fields in the order above, so the reader
//!   is a short cursor that checks each expected literal in turn, not a general JSON parser:
//!   simple to audit, bounded, and independent of any document arena. Hand-edited lines that
//!   change the order fail the checksum anyway. The full JSON parser is used for `memory.json`
//!   and for import files, which people do edit.
//! - **Ids are creation order.** `id` is the entry's slot in the in-RAM index and its creation
//!   sequence number: ids are handed out in increasing order, and compaction renumbers them
//!   densely in the same order (rewriting every record that names one), so "newest" never
//!   depends on the clock.
//! - **Identified.** The header names the log with a random `store` id, new at every
//!   compaction; a checkpoint of the index names the log it was taken of (see
//!   `store::checkpoint`).
//! - **Batches.** An import writes `batch` (with its size), its records, then `batch_end`, and
//!   syncs once. A batch cut short by a crash is a clean prefix of it, and the next open says
//!   how much of it is there.
//!
//! Version 1 logs (no `store` id; ids were reused slots, not creation order) are read; the
//! agent rewrites them as version 2 when it opens them.
//!
//! `put` carries the whole entry (tags, value and metadata): replaying the log from the top
//! rebuilds the index; the last `put` for an id wins, a later `del` removes it. `touch` records
//! carry only access statistics, so reading an entry does not rewrite its value.

use crate::error::Result;
use crate::fixed::{ArrayVec, FixedBuf};
use crate::json::escape::write_json_str;
use crate::limits::{KEY_MAX_TAGS, STORE_RECORD_MAX_BYTES};
use crate::memory::hash::crc32;
use crate::memory::key::Tag;
use core::fmt::Write as _;
use std::fs::File;
use std::os::unix::fs::FileExt;

/// The log's format name, in its header record.
pub const FORMAT_NAME: &str = "lkjagent-store";
/// The cold store's format name, in its header record (see `store::cold`).
pub const COLD_FORMAT_NAME: &str = "lkjagent-cold";
/// The log format version this code writes.
pub const FORMAT_VERSION: u64 = 2;
/// The oldest log format version this code reads.
pub const FORMAT_VERSION_OLDEST: u64 = 1;
/// Bytes before the JSON: 8 hex digits and a space.
pub const PREFIX_BYTES: usize = 9;

/// An entry as a `put` record carries it (the value stays encoded until asked for).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PutHead {
    /// Persistent entry id (index slot).
    pub id: u32,
    /// Version, 1 on creation, +1 on every change of value or tags.
    pub ver: u32,
    /// Creation time, Unix seconds.
    pub created: u64,
    /// Last access, Unix seconds.
    pub accessed: u64,
    /// Access count.
    pub hits: u64,
    /// Out of default query results.
    pub archived: bool,
}

/// One decoded record. `value` of a `Put` is still JSON-escaped (the body between the quotes);
/// decode it with [`decode_str`].
// `Put` carries its tags inline (no heap); records live briefly on the stack, one at a time.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Record<'a> {
    /// The first record of every log.
    Header {
        /// Format version.
        version: u64,
        /// The log's identity (0 in a version 1 log).
        store: u64,
    },
    /// An entry's whole state.
    Put {
        /// The fixed fields.
        head: PutHead,
        /// The tags, decoded, in key order.
        tags: ArrayVec<Tag, KEY_MAX_TAGS>,
        /// The value, still escaped.
        value_escaped: &'a str,
    },
    /// An entry's access statistics.
    Touch {
        /// Entry id.
        id: u32,
        /// Last access.
        accessed: u64,
        /// Access count.
        hits: u64,
    },
    /// Two entries became related.
    Link {
        /// One entry.
        a: u32,
        /// The other.
        b: u32,
    },
    /// Two entries stopped being related.
    Unlink {
        /// One entry.
        a: u32,
        /// The other.
        b: u32,
    },
    /// In the cold store: two entries were related when one of them moved there (by their
    /// keys, which outlive the live store's ids), so that a restore links them again.
    ColdLink {
        /// One entry's tags.
        a: ArrayVec<Tag, KEY_MAX_TAGS>,
        /// The other's.
        b: ArrayVec<Tag, KEY_MAX_TAGS>,
    },
    /// An entry was deleted.
    Del {
        /// Entry id.
        id: u32,
    },
    /// A batch of records begins (an import); synced once at its end.
    Batch {
        /// Entries the batch will write.
        entries: u64,
    },
    /// The batch is complete.
    BatchEnd,
    /// A clean-up batch begins: `entries` `del` records follow, then `batch_end`. Unlike an
    /// import's batch it counts only whole: replay applies its deletions at its `batch_end`,
    /// and one cut short by a crash is dropped (see `store::cleanup`).
    Cleanup {
        /// Entries the batch removes.
        entries: u64,
    },
    /// The first record of a cold store (`store.cold`, see `store::cold`), never of a log.
    ColdHeader {
        /// Format version.
        version: u64,
    },
}

/// Appends one framed record to `out`: the checksum placeholder, the JSON from `body`, the
/// checksum patched in, and the newline. On error `out` is left as it was.
// `dyn`: one body for every kind of record, each of which was a copy of the framing; and the
// `encode_*` below out of line, or each caller gets a copy of its record's formatting. This one
// too: inlined, it was a copy of the framing in each of them.
#[inline(never)]
pub fn encode(out: &mut FixedBuf, body: &mut dyn FnMut(&mut FixedBuf) -> core::fmt::Result) -> Result<()> {
    let start = out.len();
    let res = (|| {
        out.push_str("00000000 ")?;
        if body(out).is_err() {
            bail!(CapacityExceeded, "a store log record does not fit in STORE_RECORD_MAX_BYTES");
        }
        // The record's JSON: after the placeholder just pushed.
        let crc = crc32(crate::bytes::skip(out.as_slice(), start + PREFIX_BYTES));
        let mut hex = [0u8; 8];
        for (i, h) in hex.iter_mut().enumerate() {
            let nibble = (crc >> (28 - 4 * i)) & 0xf;
            *h = b"0123456789abcdef".get(nibble as usize).copied().unwrap_or(b'0');
        }
        if let Some(dst) = out.as_mut_slice().get_mut(start..start + 8) {
            dst.copy_from_slice(&hex);
        }
        out.push_str("\n")
    })();
    if res.is_err() {
        out.truncate(start);
    }
    res
}

/// Appends the header record of a log whose identity is `store`.
#[inline(never)]
pub fn encode_header(out: &mut FixedBuf, store: u64) -> Result<()> {
    encode(out, &mut |o| {
        write!(
            o,
            "{{\"op\":\"header\",\"format\":\"{}\",\"version\":{},\"store\":\"{:016x}\"}}",
            FORMAT_NAME, FORMAT_VERSION, store
        )
    })
}

/// Appends a `batch` record announcing `entries` records.
#[inline(never)]
pub fn encode_batch(out: &mut FixedBuf, entries: u64) -> Result<()> {
    encode(out, &mut |o| write!(o, "{{\"op\":\"batch\",\"entries\":{}}}", entries))
}

/// Appends a `cleanup` record announcing `entries` deletions.
#[inline(never)]
pub fn encode_cleanup(out: &mut FixedBuf, entries: u64) -> Result<()> {
    encode(out, &mut |o| write!(o, "{{\"op\":\"cleanup\",\"entries\":{}}}", entries))
}

/// The cold store's format this code writes into a new or rewritten `store.cold`: 2, its
/// entries in the short record ([`encode_cold_put`]). A file of format 1 (each entry the log's
/// `put` record) is read as it is and appended to in format 1, until a rewrite (`memory
/// compact`, `restore`, a `delete` of a cold key) writes it whole in format 2: a file is one
/// format.
pub const COLD_FORMAT_VERSION: u64 = 2;

/// Appends the header record of a cold store of format [`COLD_FORMAT_VERSION`].
#[inline(never)]
pub fn encode_cold_header(out: &mut FixedBuf) -> Result<()> {
    encode_cold_header_of(out, COLD_FORMAT_VERSION)
}

/// Appends the header record of a cold store of format `version` (1 or 2).
#[inline(never)]
pub fn encode_cold_header_of(out: &mut FixedBuf, version: u64) -> Result<()> {
    encode(out, &mut |o| write!(o, "{{\"op\":\"cold\",\"format\":\"{}\",\"version\":{}}}", COLD_FORMAT_NAME, version))
}

/// Appends an entry's record of a cold store of format `version`: 1, the log's `put` record
/// ([`encode_put`]); 2, the short one, without the fields that are always the same there (the
/// op, the live store's id, which means nothing in the cold store) and with one-letter names:
/// `{"p":[ver,created,accessed,hits],"t":[tags],"x":"value"}`, `,1` after the hits for an
/// archived entry. Read by [`decode_cold`] as a `put` of id 0.
#[inline(never)]
pub fn encode_cold_put<'t>(
    out: &mut FixedBuf,
    version: u64,
    head: &PutHead,
    mut tags: impl Iterator<Item = &'t str>,
    value: &str,
) -> Result<()> {
    if version < 2 {
        return encode_put(out, head, tags, value);
    }
    encode(out, &mut |o| {
        write!(o, "{{\"p\":[{},{},{},{}", head.ver, head.created, head.accessed, head.hits)?;
        o.write_str(if head.archived { ",1],\"t\":" } else { "],\"t\":" })?;
        write_tags(o, &mut tags)?;
        o.write_str(",\"x\":")?;
        write_json_str(o, value)?;
        o.write_str("}")
    })
}

/// Appends a `batch_end` record.
#[inline(never)]
pub fn encode_batch_end(out: &mut FixedBuf) -> Result<()> {
    encode(out, &mut |o| o.write_str("{\"op\":\"batch_end\"}"))
}

/// Appends a `put` record.
#[inline(never)]
pub fn encode_put<'t>(
    out: &mut FixedBuf,
    head: &PutHead,
    mut tags: impl Iterator<Item = &'t str>,
    value: &str,
) -> Result<()> {
    encode(out, &mut |o| {
        write!(
            o,
            "{{\"op\":\"put\",\"id\":{},\"ver\":{},\"created\":{},\"accessed\":{},\"hits\":{},\"archived\":{},\"tags\":",
            head.id, head.ver, head.created, head.accessed, head.hits, head.archived
        )?;
        write_tags(o, &mut tags)?;
        o.write_str(",\"value\":")?;
        write_json_str(o, value)?;
        o.write_str("}")
    })
}

/// Appends a `touch` record.
#[inline(never)]
pub fn encode_touch(out: &mut FixedBuf, id: u32, accessed: u64, hits: u64) -> Result<()> {
    encode(out, &mut |o| write!(o, "{{\"op\":\"touch\",\"id\":{},\"accessed\":{},\"hits\":{}}}", id, accessed, hits))
}

/// Appends a `link` (or, with `linked == false`, an `unlink`) record.
#[inline(never)]
pub fn encode_link(out: &mut FixedBuf, a: u32, b: u32, linked: bool) -> Result<()> {
    let op = if linked { "link" } else { "unlink" };
    encode(out, &mut |o| write!(o, "{{\"op\":\"{}\",\"a\":{},\"b\":{}}}", op, a, b))
}

/// Appends a `cold_link` record (the cold store's): the entries with tags `a` and `b` are
/// related.
#[inline(never)]
pub fn encode_cold_link<'t>(
    out: &mut FixedBuf,
    mut a: impl Iterator<Item = &'t str>,
    mut b: impl Iterator<Item = &'t str>,
) -> Result<()> {
    encode(out, &mut |o| {
        o.write_str("{\"op\":\"cold_link\",\"a\":")?;
        write_tags(o, &mut a)?;
        o.write_str(",\"b\":")?;
        write_tags(o, &mut b)?;
        o.write_str("}")
    })
}

/// `["t1","t2"]`.
fn write_tags<'t>(o: &mut dyn core::fmt::Write, tags: impl Iterator<Item = &'t str>) -> core::fmt::Result {
    o.write_str("[")?;
    for (i, t) in tags.enumerate() {
        if i > 0 {
            o.write_str(",")?;
        }
        write_json_str(o, t)?;
    }
    o.write_str("]")
}

/// Appends a `del` record.
#[inline(never)]
pub fn encode_del(out: &mut FixedBuf, id: u32) -> Result<()> {
    encode(out, &mut |o| write!(o, "{{\"op\":\"del\",\"id\":{}}}", id))
}

/// Checks the frame of one line (without its newline) and decodes it. Errors say what was
/// wrong; the caller adds the file offset.
pub fn decode(line: &[u8]) -> Result<Record<'_>> {
    decode_json(frame(line)?)
}

/// [`decode`] for a line of the cold store: also its format 2 entry record
/// ([`encode_cold_put`]), read as a `put` of id 0.
pub fn decode_cold(line: &[u8]) -> Result<Record<'_>> {
    let json = frame(line)?;
    if !json.starts_with("{\"p\":[") {
        return decode_json(json);
    }
    let mut c = Cursor { s: json, pos: 0 };
    c.lit("{\"p\":[")?;
    let ver = u32::try_from(c.number()?).map_err(|_| err!(JsonInvalid, "a version out of range"))?;
    let created = c.field(",")?;
    let accessed = c.field(",")?;
    let hits = c.field(",")?;
    let archived = c.eat(",1");
    c.lit("],\"t\":")?;
    let tags = c.tags()?;
    c.lit(",\"x\":\"")?;
    let value_escaped = c.string_body()?;
    c.lit("}")?;
    if c.pos != json.len() {
        bail!(JsonInvalid, "unexpected text after the record at byte {}", c.pos + PREFIX_BYTES);
    }
    Ok(Record::Put { head: PutHead { id: 0, ver, created, accessed, hits, archived }, tags, value_escaped })
}

/// The JSON of one line (without its newline) once its checksum prefix is checked.
fn frame(line: &[u8]) -> Result<&str> {
    let (Some(hex), Some(b' '), Some(json)) = (line.get(..8), line.get(8), line.get(PREFIX_BYTES..)) else {
        bail!(JsonInvalid, "record shorter than its checksum prefix");
    };
    let mut want = 0u32;
    for &h in hex {
        let d = match h {
            b'0'..=b'9' => h - b'0',
            b'a'..=b'f' => h - b'a' + 10,
            _ => bail!(JsonInvalid, "checksum prefix is not 8 lower-case hex digits"),
        };
        want = (want << 4) | u32::from(d);
    }
    let got = crc32(json);
    if got != want {
        bail!(JsonInvalid, "checksum mismatch (record says {:08x}, content has {:08x})", want, got);
    }
    let Ok(json) = core::str::from_utf8(json) else {
        bail!(JsonInvalid, "record is not UTF-8");
    };
    Ok(json)
}

/// Decodes the JSON of one record (its frame checked).
fn decode_json(json: &str) -> Result<Record<'_>> {
    let mut c = Cursor { s: json, pos: 0 };
    c.lit("{\"op\":\"")?;
    let op = c.until_quote()?;
    let rec = match op {
        "header" => {
            c.lit(",\"format\":\"")?;
            if c.until_quote()? != FORMAT_NAME {
                bail!(JsonInvalid, "not a {} log", FORMAT_NAME);
            }
            c.lit(",\"version\":")?;
            let version = c.number()?;
            let store = if version >= 2 {
                c.lit(",\"store\":\"")?;
                let hex = c.until_quote()?;
                if hex.len() != 16 {
                    bail!(JsonInvalid, "the header's store id is not 16 hex digits");
                }
                u64::from_str_radix(hex, 16).map_err(|_| err!(JsonInvalid, "the header's store id is not hex"))?
            } else {
                0
            };
            Record::Header { version, store }
        }
        "put" => {
            let id = c.field_u32(",\"id\":")?;
            let ver = c.field_u32(",\"ver\":")?;
            let created = c.field(",\"created\":")?;
            let accessed = c.field(",\"accessed\":")?;
            let hits = c.field(",\"hits\":")?;
            c.lit(",\"archived\":")?;
            let archived = c.boolean()?;
            c.lit(",\"tags\":")?;
            let tags = c.tags()?;
            c.lit(",\"value\":\"")?;
            let value_escaped = c.string_body()?;
            Record::Put { head: PutHead { id, ver, created, accessed, hits, archived }, tags, value_escaped }
        }
        "touch" => {
            let id = c.field_u32(",\"id\":")?;
            let accessed = c.field(",\"accessed\":")?;
            let hits = c.field(",\"hits\":")?;
            Record::Touch { id, accessed, hits }
        }
        "link" | "unlink" => {
            let a = c.field_u32(",\"a\":")?;
            let b = c.field_u32(",\"b\":")?;
            if op == "link" {
                Record::Link { a, b }
            } else {
                Record::Unlink { a, b }
            }
        }
        "del" => Record::Del { id: c.field_u32(",\"id\":")? },
        "cold_link" => {
            c.lit(",\"a\":")?;
            let a = c.tags()?;
            c.lit(",\"b\":")?;
            Record::ColdLink { a, b: c.tags()? }
        }
        "batch" => Record::Batch { entries: c.field(",\"entries\":")? },
        "batch_end" => Record::BatchEnd,
        "cleanup" => Record::Cleanup { entries: c.field(",\"entries\":")? },
        "cold" => {
            c.lit(",\"format\":\"")?;
            if c.until_quote()? != COLD_FORMAT_NAME {
                bail!(JsonInvalid, "not a {} file", COLD_FORMAT_NAME);
            }
            Record::ColdHeader { version: c.field(",\"version\":")? }
        }
        _ => bail!(JsonInvalid, "unknown record op \"{}\"", crate::bytes::str_prefix(op, 32)),
    };
    c.lit("}")?;
    if c.pos != json.len() {
        bail!(JsonInvalid, "unexpected text after the record at byte {}", c.pos + PREFIX_BYTES);
    }
    Ok(rec)
}

/// Decodes a JSON string body (the text between the quotes, escapes included) into `out`.
/// Fails on a bad escape, a lone surrogate, or when `out` is full.
pub fn decode_str(raw: &str, out: &mut dyn core::fmt::Write) -> Result<()> {
    let mut rest = raw;
    while let Some(i) = rest.find('\\') {
        let (plain, esc) = rest.split_at(i);
        out.write_str(plain).map_err(|_| full())?;
        let mut chars = esc.chars();
        chars.next(); // the backslash
        let c = match chars.next() {
            Some('"') => '"',
            Some('\\') => '\\',
            Some('/') => '/',
            Some('b') => '\u{8}',
            Some('f') => '\u{c}',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('u') => {
                let (hi, after) = hex4(chars.as_str())?;
                let (cp, after) = if (0xD800..0xDC00).contains(&hi) {
                    let (lo, after) = match after.strip_prefix("\\u") {
                        Some(t) => hex4(t)?,
                        None => bail!(JsonInvalid, "lone high surrogate \\u{:04x}", hi),
                    };
                    if !(0xDC00..0xE000).contains(&lo) {
                        bail!(JsonInvalid, "high surrogate \\u{:04x} not followed by a low one", hi);
                    }
                    (0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00), after)
                } else {
                    (hi, after)
                };
                let Some(c) = char::from_u32(cp) else {
                    bail!(JsonInvalid, "\\u{:04x} is not a character (lone surrogate)", cp);
                };
                rest = after;
                let mut tmp = [0u8; 4];
                out.write_str(c.encode_utf8(&mut tmp)).map_err(|_| full())?;
                continue;
            }
            _ => bail!(JsonInvalid, "bad escape in a string"),
        };
        let mut tmp = [0u8; 4];
        out.write_str(c.encode_utf8(&mut tmp)).map_err(|_| full())?;
        // Past the backslash and the escape's letter.
        rest = chars.as_str();
    }
    out.write_str(rest).map_err(|_| full())
}

fn full() -> crate::error::Error {
    err!(CapacityExceeded, "decoded string does not fit its buffer")
}

/// The four hex digits of a `\u` escape at the start of `s`, and what follows them.
fn hex4(s: &str) -> Result<(u32, &str)> {
    let Some((h, after)) = s.split_at_checked(4) else { bail!(JsonInvalid, "short \\u escape") };
    // Four hex digits exactly (RFC 8259 §7): `from_str_radix` alone would take a sign (`+041`).
    if !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!(JsonInvalid, "bad \\u escape \"{}\"", h);
    }
    let v = u32::from_str_radix(h, 16).map_err(|_| err!(JsonInvalid, "bad \\u escape \"{}\"", h))?;
    Ok((v, after))
}

/// A cursor over one record's JSON, checking the fixed field order.
struct Cursor<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// The text not yet read. `pos` only ever moves past a whole literal, a string and its
    /// closing quote, or ASCII digits, so it is a character boundary within `s`.
    fn rest(&self) -> &'a str {
        crate::bytes::ascii_cut(self.s, self.pos, self.s.len())
    }

    fn eat(&mut self, lit: &str) -> bool {
        if self.rest().starts_with(lit) {
            self.pos += lit.len();
            true
        } else {
            false
        }
    }

    fn lit(&mut self, lit: &str) -> Result<()> {
        if self.eat(lit) {
            return Ok(());
        }
        bail!(JsonInvalid, "expected {} at byte {}", lit, self.pos + PREFIX_BYTES)
    }

    /// Text up to the next `"` (no escapes allowed), consuming the quote.
    fn until_quote(&mut self) -> Result<&'a str> {
        let Some((text, _)) = self.rest().split_once('"') else {
            bail!(JsonInvalid, "unterminated string at byte {}", self.pos)
        };
        self.pos += text.len() + 1;
        Ok(text)
    }

    /// A tags array, `["t1","t2"]`, each tag decoded.
    fn tags(&mut self) -> Result<ArrayVec<Tag, KEY_MAX_TAGS>> {
        self.lit("[")?;
        let mut tags = ArrayVec::new();
        if !self.eat("]") {
            loop {
                self.lit("\"")?;
                let raw = self.string_body()?;
                let mut tag = Tag::new();
                decode_str(raw, &mut tag)
                    .map_err(|_| err!(JsonInvalid, "a tag is longer than TAG_MAX_BYTES or badly escaped"))?;
                tags.push(tag).map_err(|_| err!(JsonInvalid, "more than KEY_MAX_TAGS tags"))?;
                if self.eat("]") {
                    break;
                }
                self.lit(",")?;
            }
        }
        Ok(tags)
    }

    /// A string body up to its closing unescaped `"`, consuming the quote.
    fn string_body(&mut self) -> Result<&'a str> {
        let rest = self.rest();
        let bytes = rest.as_bytes();
        let mut i = 0;
        while let Some(&b) = bytes.get(i) {
            match b {
                b'"' => {
                    // `i` is at the quote, an ASCII byte: a character boundary.
                    self.pos += i + 1;
                    return Ok(crate::bytes::ascii_cut(rest, 0, i));
                }
                b'\\' => i += 2,
                _ => i += 1,
            }
        }
        bail!(JsonInvalid, "unterminated string at byte {}", self.pos + PREFIX_BYTES)
    }

    fn number(&mut self) -> Result<u64> {
        let rest = self.rest();
        let end = rest.bytes().position(|b| !b.is_ascii_digit()).unwrap_or(rest.len());
        // ASCII digits, so `end` is a character boundary.
        let digits = crate::bytes::ascii_cut(rest, 0, end);
        let Some(n) = crate::bytes::parse_u64(digits) else {
            bail!(JsonInvalid, "expected an unsigned integer at byte {}", self.pos + PREFIX_BYTES)
        };
        self.pos += end;
        Ok(n)
    }

    fn field(&mut self, lit: &str) -> Result<u64> {
        self.lit(lit)?;
        self.number()
    }

    fn field_u32(&mut self, lit: &str) -> Result<u32> {
        let n = self.field(lit)?;
        u32::try_from(n).map_err(|_| err!(JsonInvalid, "{} out of range for an entry id or version", n))
    }

    fn boolean(&mut self) -> Result<bool> {
        if self.eat("true") {
            Ok(true)
        } else if self.eat("false") {
            Ok(false)
        } else {
            bail!(JsonInvalid, "expected true or false at byte {}", self.pos + PREFIX_BYTES)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reading a log file line by line
// ---------------------------------------------------------------------------------------------

/// Bytes read from the log per read call while loading.
const READ_CHUNK: usize = 64 * 1024;

/// Scratch a [`LineReader`] needs: the longest record plus one read.
pub const READ_SCRATCH_BYTES: usize = STORE_RECORD_MAX_BYTES + READ_CHUNK;

pub struct Line {
    /// File offset of the line.
    pub offset: u64,
    /// Length without the newline.
    pub len: usize,
    /// Whether it ended in a newline (a line cut by the end of the file or by the length
    /// cap is not).
    pub complete: bool,
}

/// Reads a log line by line through a caller's scratch buffer (at most
/// `STORE_RECORD_MAX_BYTES + READ_CHUNK` bytes); a line longer than a record can be is
/// returned cut (and fails its checksum).
pub struct LineReader<'f> {
    file: &'f File,
    file_len: u64,
    /// File offset of scratch[0].
    base: u64,
    /// Bytes valid in scratch.
    filled: usize,
    /// Start of the current line in scratch.
    line_start: usize,
    /// Start of the next line in scratch.
    next_start: usize,
}

impl<'f> LineReader<'f> {
    /// A reader of `file_len` bytes of `file`.
    pub fn new(file: &'f File, file_len: u64) -> LineReader<'f> {
        LineReader::starting_at(file, 0, file_len)
    }

    /// A reader of `file` from byte `offset` (the start of a line) to byte `file_len`.
    pub fn starting_at(file: &'f File, offset: u64, file_len: u64) -> LineReader<'f> {
        LineReader { file, file_len, base: offset, filled: 0, line_start: 0, next_start: 0 }
    }

    /// The text of the line last returned by [`LineReader::next`], `len` bytes long, in the
    /// `scratch` that call read through. Anything else (a bug) is an `INTERNAL` error: an empty line
    /// would read as a damaged record, which replay skips or cuts off as a torn tail.
    pub fn text<'s>(&self, scratch: &'s [u8], len: usize) -> Result<&'s [u8]> {
        let end = self.line_start.saturating_add(len);
        scratch.get(self.line_start..end).ok_or_else(|| {
            err!(
                Internal,
                "a line at bytes {}..{} of the read buffer lies outside the {} bytes read (a bug)",
                self.line_start,
                end,
                scratch.len()
            )
        })
    }

    /// The next line, read through `scratch` (reserve [`READ_SCRATCH_BYTES`]); `None` at the
    /// end of the file.
    pub fn next(&mut self, scratch: &mut Vec<u8>) -> Result<Option<Line>> {
        loop {
            let Some(pending) = scratch.get(self.next_start..self.filled) else {
                bail!(
                    Internal,
                    "the read buffer holds {} bytes, not the {} this reader filled (a different buffer; a bug)",
                    scratch.len(),
                    self.filled
                );
            };
            if let Some(nl) = pending.iter().position(|&b| b == b'\n') {
                let line = Line { offset: self.base + self.next_start as u64, len: nl, complete: true };
                self.line_start = self.next_start;
                self.next_start += nl + 1;
                return Ok(Some(line));
            }
            let at_eof = self.base + self.filled as u64 >= self.file_len;
            if at_eof || pending.len() > STORE_RECORD_MAX_BYTES {
                if pending.is_empty() {
                    return Ok(None);
                }
                let line = Line { offset: self.base + self.next_start as u64, len: pending.len(), complete: false };
                self.line_start = self.next_start;
                self.next_start = self.filled;
                if !at_eof {
                    self.skip_line()?;
                }
                return Ok(Some(line));
            }
            // Move the partial line to the front and read more.
            scratch.copy_within(self.next_start..self.filled, 0);
            self.base += self.next_start as u64;
            self.filled -= self.next_start;
            self.next_start = 0;
            self.line_start = 0;
            let want = READ_CHUNK.min(self.file_len.saturating_sub(self.base + self.filled as u64) as usize);
            scratch.resize(self.filled + want, 0);
            let got = read_full(
                self.file,
                scratch.get_mut(self.filled..).unwrap_or(&mut []),
                self.base + self.filled as u64,
            )?;
            self.filled += got;
            scratch.truncate(self.filled);
            if got == 0 {
                self.file_len = self.base + self.filled as u64;
            }
        }
    }

    /// After an over-long line was returned (still in scratch, which is not touched here),
    /// finds its end in the file and sets up the next call to continue after it.
    fn skip_line(&mut self) -> Result<()> {
        let mut pos = self.base + self.filled as u64;
        let mut buf = [0u8; 4096];
        while pos < self.file_len {
            let got = read_full(self.file, &mut buf, pos)?;
            if got == 0 {
                break;
            }
            if let Some(nl) = buf.get(..got).and_then(|b| b.iter().position(|&x| x == b'\n')) {
                pos += nl as u64 + 1;
                break;
            }
            pos += got as u64;
        }
        // The next call drops scratch[..filled] (next_start == filled) and adds it to `base`,
        // landing exactly on `pos`.
        self.base = pos - self.filled as u64;
        Ok(())
    }
}

fn read_full(file: &File, buf: &mut [u8], at: u64) -> Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(buf.get_mut(n..).unwrap_or(&mut []), at + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => bail!(Io, "read failed: {}", e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(buf: &FixedBuf) -> &[u8] {
        let s = buf.as_slice();
        assert_eq!(s.last(), Some(&b'\n'));
        &s[..s.len() - 1]
    }

    #[test]
    fn put_round_trips_with_awkward_text() {
        let mut buf = FixedBuf::with_capacity("test", 4096);
        let head = PutHead { id: 7, ver: 3, created: 1, accessed: 2, hits: 9, archived: true };
        let value = "quote \" backslash \\ newline \n tab \t nul \u{0} é→😀 end";
        encode_put(&mut buf, &head, ["a\"b", "日本"].into_iter(), value).unwrap();
        let text = std::str::from_utf8(buf.as_slice()).unwrap();
        assert_eq!(text.matches('\n').count(), 1, "{}", text);
        match decode(line(&buf)).unwrap() {
            Record::Put { head: h, tags, value_escaped } => {
                assert_eq!(h, head);
                assert_eq!(tags.iter().map(|t| t.as_str()).collect::<Vec<_>>(), ["a\"b", "日本"]);
                let mut out = String::new();
                decode_str(value_escaped, &mut out).unwrap();
                assert_eq!(out, value);
            }
            r => panic!("{:?}", r),
        }
    }

    #[test]
    fn a_cold_put_round_trips_in_both_formats() {
        let value = "quote \" backslash \\ newline \n é→😀 end";
        for version in [1, 2] {
            for archived in [false, true] {
                let mut buf = FixedBuf::with_capacity("test", 4096);
                let head =
                    PutHead { id: 0, ver: 3, created: 1_700_000_000, accessed: 1_700_000_009, hits: 9, archived };
                encode_cold_put(&mut buf, version, &head, ["a\"b", "日本"].into_iter(), value).unwrap();
                match decode_cold(line(&buf)).unwrap() {
                    Record::Put { head: h, tags, value_escaped } => {
                        assert_eq!(h, head);
                        assert_eq!(tags.iter().map(|t| t.as_str()).collect::<Vec<_>>(), ["a\"b", "日本"]);
                        let mut out = String::new();
                        decode_str(value_escaped, &mut out).unwrap();
                        assert_eq!(out, value);
                    }
                    r => panic!("{:?}", r),
                }
                // The log's reader takes only the log's records.
                assert_eq!(decode(line(&buf)).is_ok(), version == 1);
            }
        }
        let mut buf = FixedBuf::with_capacity("test", 4096);
        let head = PutHead { id: 0, ver: 1, created: 1_700_000_000, accessed: 1_700_000_000, hits: 0, archived: false };
        encode_cold_put(&mut buf, 2, &head, ["fact", "n0"].into_iter(), "v").unwrap();
        let text = std::str::from_utf8(buf.as_slice()).unwrap();
        assert_eq!(&text[9..], "{\"p\":[1,1700000000,1700000000,0],\"t\":[\"fact\",\"n0\"],\"x\":\"v\"}\n");
        // Damage is damage in either.
        let mut bad = buf.as_slice().to_vec();
        bad[12] ^= 1;
        assert!(decode_cold(&bad[..bad.len() - 1]).is_err());
        for broken in [
            "{\"p\":[1,2,3],\"t\":[],\"x\":\"v\"}",
            "{\"p\":[1,2,3,4,2],\"t\":[],\"x\":\"v\"}",
            "{\"p\":[1,2,3,4],\"t\":[],\"x\":\"v\"} ",
        ] {
            let rec = format!("{:08x} {}", crc32(broken.as_bytes()), broken);
            assert!(decode_cold(rec.as_bytes()).is_err(), "{broken}");
        }
        let mut h = FixedBuf::with_capacity("test", 4096);
        encode_cold_header_of(&mut h, 1).unwrap();
        assert!(matches!(decode_cold(line(&h)).unwrap(), Record::ColdHeader { version: 1 }));
    }

    #[test]
    fn other_records_round_trip() {
        let mut buf = FixedBuf::with_capacity("test", 4096);
        encode_header(&mut buf, 0x0123_4567_89ab_cdef).unwrap();
        assert!(matches!(
            decode(line(&buf)).unwrap(),
            Record::Header { version: FORMAT_VERSION, store: 0x0123_4567_89ab_cdef }
        ));
        // A version 1 header (no store id) still reads.
        buf.clear();
        encode(&mut buf, &mut |o| o.write_str("{\"op\":\"header\",\"format\":\"lkjagent-store\",\"version\":1}"))
            .unwrap();
        assert!(matches!(decode(line(&buf)).unwrap(), Record::Header { version: 1, store: 0 }));
        buf.clear();
        encode_batch(&mut buf, 65_536).unwrap();
        encode_batch_end(&mut buf).unwrap();
        let text = buf.as_slice();
        let nl = text.iter().position(|&b| b == b'\n').unwrap();
        assert!(matches!(decode(&text[..nl]).unwrap(), Record::Batch { entries: 65_536 }));
        assert!(matches!(decode(&text[nl + 1..text.len() - 1]).unwrap(), Record::BatchEnd));
        buf.clear();
        encode_touch(&mut buf, 1, 2, 3).unwrap();
        assert!(matches!(decode(line(&buf)).unwrap(), Record::Touch { id: 1, accessed: 2, hits: 3 }));
        buf.clear();
        encode_link(&mut buf, 4, 5, false).unwrap();
        assert!(matches!(decode(line(&buf)).unwrap(), Record::Unlink { a: 4, b: 5 }));
        buf.clear();
        encode_del(&mut buf, u32::MAX).unwrap();
        assert!(matches!(decode(line(&buf)).unwrap(), Record::Del { id: u32::MAX }));
    }

    #[test]
    fn damage_is_detected() {
        let mut buf = FixedBuf::with_capacity("test", 4096);
        encode_put(&mut buf, &PutHead::default(), ["t"].into_iter(), "value").unwrap();
        let good = line(&buf).to_vec();
        // Every truncation and every single-byte change is refused.
        for cut in 0..good.len() {
            assert!(decode(&good[..cut]).is_err(), "cut at {}", cut);
        }
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x20;
            assert!(decode(&bad).is_err(), "flip at {}", i);
        }
    }

    #[test]
    fn full_buffer_leaves_it_unchanged() {
        let mut buf = FixedBuf::with_capacity("test", 40);
        buf.push_str("x").unwrap();
        assert!(encode_put(&mut buf, &PutHead::default(), ["t"].into_iter(), "value").is_err());
        assert_eq!(buf.as_slice(), b"x");
    }

    #[test]
    fn decodes_escapes_and_surrogates() {
        let mut out = String::new();
        decode_str(r#"a\u00e9\ud83d\ude00\/\b"#, &mut out).unwrap();
        assert_eq!(out, "aé😀/\u{8}");
        for bad in [r"\ud83d", r"\ud83dx", r"\udc00", r"\x", r"\u12", r"\ud83d\u0041", r"\u+041", r"\u-041", r"\u 041"]
        {
            assert!(decode_str(bad, &mut String::new()).is_err(), "{}", bad);
        }
    }

    #[test]
    fn a_line_outside_the_read_buffer_is_an_error_not_an_empty_record() {
        let path = std::env::temp_dir().join(format!("lkj-log-lines-{}", std::process::id()));
        std::fs::write(&path, b"first line\nsecond\n").unwrap();
        let file = File::open(&path).unwrap();
        let mut reader = LineReader::new(&file, 18);
        let mut scratch = Vec::with_capacity(READ_SCRATCH_BYTES);
        let line = reader.next(&mut scratch).unwrap().unwrap();
        assert_eq!(reader.text(&scratch, line.len).unwrap(), b"first line");
        // Another buffer, or a length that is not the line's: an error, never an empty line
        // (which replay would take for a damaged record).
        let e = reader.text(&scratch[..4], line.len).unwrap_err();
        assert_eq!(e.code(), crate::error::Code::Internal);
        assert!(reader.text(&scratch, 99).is_err());
        let e = reader.next(&mut Vec::new()).err().unwrap();
        assert!(e.message().contains("a different buffer"), "{e}");
        let line = reader.next(&mut scratch).unwrap().unwrap();
        assert_eq!(reader.text(&scratch, line.len).unwrap(), b"second");
        std::fs::remove_file(&path).unwrap();
    }
}
