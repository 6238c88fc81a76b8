//! What the agent knows: the working set shown in the prompt and the persistent tagged store.
//!
//! - [`key`]: the one key normalisation for every layer, and the [`key::Key`] type.
//! - [`hash`]: FNV-1a 64 (content de-duplication) and CRC-32 (log record framing).
//! - [`atomic`]: crash-safe whole-file writes that keep the previous version.
//! - [`nofollow`]: the agent's own files, opened or created without following a symbolic link.
//! - [`working`]: the working set, fixed capacity, in insertion order, with LRU candidates.
//! - [`log`]: the store's on-disk record format (checksummed JSON lines).
//! - [`query`]: entry ids, query filters, orders and the reusable result list.
//! - [`store`]: the persistent tagged store (append-only log, index with posting lists,
//!   checkpoint, compaction), in rooms of its own.
//! - [`era_b`]: export and import in the era-B shape `{state, working_memory, storage}`.
//! - [`file`](mod@file): `memory.json` (state, iteration, working set, agent map), era-B migration.

pub mod atomic;
pub mod era_b;
pub mod file;
pub mod hash;
pub mod key;
pub mod log;
pub mod nofollow;
pub mod query;
pub mod store;
pub mod working;
