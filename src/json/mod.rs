//! JSON (RFC 8259), hand-written: a streaming event parser, a fixed-capacity document arena on
//! top of it, path look-up, and a serializer (compact and pretty).

pub mod escape;
