//! JSON (RFC 8259), hand-written: a streaming event parser, a fixed-capacity document arena on
//! top of it, path look-up, and a serializer (compact and pretty).
//!
//! - [`event`]: the resumable event parser ([`Parser`], [`Event`], [`Handler`]); no allocation,
//!   no recursion, any input slicing.
//! - [`number`]: the number grammar, shared by the parser and the writer.
//! - [`document`]: [`Document`], the arena (nodes plus decoded string bytes) filled by the parser.
//! - [`value`]: [`Value`], a read-only view of one node, with accessors and path look-up.
//! - [`write`]: [`Writer`], the streaming serializer (compact or pretty) into any `fmt::Write`.
//! - [`escape`]: string escaping, shared by the writer and the error printer.

pub mod document;
pub mod escape;
pub mod event;
pub mod number;
pub mod value;
pub mod write;

pub use document::Document;
pub use event::{Event, Handler, Parser, Validate};
pub use value::{Kind, Value};
pub use write::Writer;
