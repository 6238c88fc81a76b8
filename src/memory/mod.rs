//! What the agent knows: the working set shown in the prompt and the persistent tagged store.
//!
//! - [`key`]: the one key normalisation for every layer, and the [`key::Key`] type.
//! - [`hash`]: FNV-1a 64 (content de-duplication) and CRC-32 (log record framing).
//! - [`atomic`]: crash-safe whole-file writes that keep the previous version.
//! - [`working`]: the working set, fixed capacity, in insertion order, with LRU candidates.

pub mod atomic;
pub mod hash;
pub mod key;
pub mod working;
