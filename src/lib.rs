//! lkjagent: an autonomous agent that runs a perpetual loop against a local LLM server, keeps a
//! tagged memory that it pages between the prompt and a persistent store, and ships as one small
//! static binary with no third-party crates.
//!
//! Modules, from the bottom up (each file starts with a note on its role):
//!
//! - [`limits`]: every capacity, with its memory cost.
//! - [`escape`]: JSON string escaping, below the error type so errors print as JSON.
//! - [`states`]: the agent's states, named once.
//! - [`error`]: the error type (stable code, source location, message).
//! - [`fixed`]: fixed-capacity string, list and buffers.
//! - [`bytes`]: byte and substring search (exact and ASCII case-insensitive), word at a time.
//! - [`sort`]: the one sort every module calls (compiled once, not per element type).
//! - [`sha256`], [`clock`]: SHA-256 (FIPS 180-4) and UTC time, for the audit log.
//! - [`signal`]: SIGINT/SIGTERM (the one module that may declare C functions).
//! - [`json`]: RFC 8259 parser, document arena, serializer.
//! - [`html`]: the HTML and inline SVG writer, with escaping in one place (for `report`).
//! - [`tag`]: the tolerant tag parser for model replies and the tag renderer for prompts.
//! - [`reply`]: the reply protocol (instructions, problems, feedback for the model).
//! - [`grammar`]: the same protocol the other way: the live state to a GBNF grammar or a JSON
//!   Schema the server constrains replies with.
//! - [`http`]: the HTTP/1.1 client.
//! - [`llm`]: the LLM providers and the health probe.
//! - [`memory`]: the working set and the crash-safe tagged store.
//! - [`agent`]: configuration, prompt, state machine, paging, the loop.
//! - [`cli`]: the `lkjagent` command line.
//!
//! For tests only, `testing` holds what the unit tests share.

#[macro_use]
pub mod error;
pub mod agent;
pub mod bytes;
pub mod cli;
pub mod clock;
pub mod escape;
pub mod fixed;
pub mod grammar;
pub mod html;
pub mod http;
pub mod json;
pub mod limits;
pub mod llm;
pub mod memory;
pub mod reply;
pub mod sha256;
pub mod signal;
pub mod sort;
pub mod states;
pub mod tag;
#[cfg(test)]
mod testing;
