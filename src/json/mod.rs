//! JSON (RFC 8259), hand-written: a streaming event parser, a fixed-capacity document arena on
//! top of it, path look-up, and a serializer (compact and pretty).
//!
//! - [`event`]: the resumable event parser ([`Parser`], [`Event`], [`Handler`]); no allocation,
//!   no recursion, any input slicing. `lkjagent json` uses it directly.
//! - [`number`]: the number grammar, shared by the parser and the writer.
//! - [`document`]: [`Document`], the arena (nodes plus decoded text) the parser fills.
//! - `node`: the arena's node, span and value kind, shared by the document and its values.
//! - [`value`]: [`Value`], a read-only view of one value, with accessors and path look-up.
//! - [`write`](mod@write): [`Writer`], the streaming serializer into any `fmt::Write`.
//! - [`escape`]: string escaping (the crate-level [`crate::escape`], which sits below the
//!   error type; re-exported here where JSON writers look for it).
//!
//! The rules, each argued in its module: strict RFC 8259 (no BOM, comments, trailing commas);
//! nesting up to [`JSON_MAX_DEPTH`](crate::limits::JSON_MAX_DEPTH); numbers kept as their
//! text; object members kept in order with duplicates, [`Value::get`] returning the **last**;
//! every error carries the byte offset (and line:column) and what was expected; a full arena
//! or buffer is `CAPACITY_EXCEEDED`, never a panic or a silent cut.
//!
//! ```
//! use lkjagent::json::{Document, Kind, Writer};
//!
//! let mut doc = Document::with_capacity(64, 1024); // reserved once, reused by every parse
//! doc.parse(br#"{"choices":[{"message":{"content":"hi"}}],"n":3,"n":4}"#).unwrap();
//! let root = doc.root();
//! assert_eq!(root.path("choices.[0].message.content").and_then(|v| v.as_str()), Some("hi"));
//! assert_eq!(root.get("n").and_then(|v| v.as_i64()), Some(4)); // the last duplicate
//! assert_eq!(root.get("choices").map(|v| v.kind()), Some(Kind::Array));
//!
//! let mut out = String::new();
//! let mut w = Writer::compact(&mut out);
//! w.begin_object().unwrap();
//! w.key("model").unwrap();
//! w.string("qwen").unwrap();
//! w.key("first").unwrap();
//! w.value(root.path("choices.[0]").unwrap()).unwrap();
//! w.end_object().unwrap();
//! assert_eq!(out, r#"{"model":"qwen","first":{"message":{"content":"hi"}}}"#);
//!
//! let e = doc.parse(b"[1, 2,]").unwrap_err();
//! assert_eq!(e.message(), "invalid JSON at byte 6 (line 1, column 7): expected a value after ',', found ']'");
//! ```

pub mod document;
pub use crate::escape;
pub mod event;
mod node;
pub mod number;
pub mod value;
pub mod write;

pub use document::Document;
pub use event::{Event, Handler, Parser, Validate};
pub use value::{Kind, Typed, Value};
pub use write::Writer;
