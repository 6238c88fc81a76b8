//! Every capacity of the program, in one place.
//!
//! lkjagent runs with bounded memory (DESIGN.md §2): each buffer, count and depth below is
//! reserved once (inline in a type, or on the heap at start-up) and never grows. Running out of
//! any of them is a `CAPACITY_EXCEEDED` error that names the constant, never a panic and never
//! a silent cut. Each constant says what it bounds and what it costs in memory, so the total
//! footprint can be read off this file.
//!
//! Sections are grouped by the layer that owns them, bottom (errors, JSON) to top (the agent).

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Bytes of message text an [`crate::error::Error`] carries inline. Longer messages are cut at a
/// character boundary and end in `...` so the cut is visible. Cost: this many bytes per live
/// error value (errors are returned by value, never allocated).
pub const ERROR_MESSAGE_BYTES: usize = 240;

// ---------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------

/// Deepest nesting of arrays and objects the JSON parser accepts. Nesting is tracked in a
/// fixed bit stack, not by recursion, so no input can overflow the call stack. Cost: one bit per
/// level in the streaming parser (a 64-byte array for 512 levels).
pub const JSON_MAX_DEPTH: usize = 512;

/// Slice size in which `lkjagent json` reads its input and feeds the streaming parser. Any
/// size works (tokens cut by a slice boundary continue in the next); this one balances read
/// calls against memory. Cost: this many bytes, once, for the `json` subcommand.
pub const JSON_CLI_CHUNK_BYTES: usize = 64 * 1024;

/// Output buffer of `lkjagent json` in front of stdout. Cost: this many bytes, once.
pub const JSON_CLI_OUTPUT_BYTES: usize = 64 * 1024;

/// Arena size of one parsed JSON node ([`crate::json::Document`]): kind, key span, text span or
/// child count, subtree end. A document's footprint is `JSON_NODE_BYTES * max_nodes +
/// max_text_bytes`, reserved once by `Document::with_capacity`.
pub const JSON_NODE_BYTES: usize = 24;

/// Default node capacity for the agent's small documents (`config.json`, `agent-prompt.json`,
/// one LLM response): values of any kind, containers included. Cost: 24 bytes each, 96 KiB.
pub const JSON_SMALL_DOC_NODES: usize = 4 * 1024;

/// Default text capacity for the agent's small documents: decoded keys, strings and number
/// text together. Cost: this many bytes, 256 KiB (an LLM reply is bounded by
/// `REPLY_MAX_BYTES` separately).
pub const JSON_SMALL_DOC_TEXT_BYTES: usize = 256 * 1024;

// ---------------------------------------------------------------------------------------------
// Tagged reply format (the model's replies and the prompt's tag rendering)
// ---------------------------------------------------------------------------------------------

/// Largest model reply the tag parser reads, in bytes. A longer reply is rejected as a whole
/// with `CAPACITY_EXCEEDED`. Cost: none by itself; bounds the tag arena below.
pub const REPLY_MAX_BYTES: usize = 1 << 20;

// ---------------------------------------------------------------------------------------------
// HTTP and the LLM providers
// ---------------------------------------------------------------------------------------------

/// Largest HTTP response head (status line plus headers) accepted, in bytes. Cost: this many
/// bytes in the client's receive buffer, reserved once.
pub const HTTP_MAX_HEAD_BYTES: usize = 16 * 1024;

// ---------------------------------------------------------------------------------------------
// Memory: the working set and the tagged store
// ---------------------------------------------------------------------------------------------

/// Most tags in one store key (the tagged-memory design's `MAX_TAGS_PER_ENTRY`).
pub const KEY_MAX_TAGS: usize = 8;

/// Longest single tag, in bytes (the design's `MAX_TAG_LENGTH`).
pub const TAG_MAX_BYTES: usize = 64;

// ---------------------------------------------------------------------------------------------
// The agent
// ---------------------------------------------------------------------------------------------

/// Largest prompt the agent builds, in bytes. Cost: reserved once at start-up.
pub const PROMPT_MAX_BYTES: usize = 256 * 1024;

/// Most actions carried out from one reply (`agent.max_actions_per_cycle` may lower it).
pub const ACTIONS_PER_CYCLE_MAX: usize = 8;

/// Most slots of one rotating log (3-digit keys: `think_log_001` .. `think_log_999`).
pub const LOG_MAX_ENTRIES: usize = 999;

/// Most states under `agent.state` (besides `base`).
pub const STATES_MAX: usize = 16;

/// Longest state name, in bytes.
pub const STATE_NAME_MAX_BYTES: usize = 32;

/// Largest `agent-prompt.json` read, in bytes (start-up only).
pub const SEGMENTS_FILE_MAX_BYTES: usize = 256 * 1024;

/// Most segments in `agent-prompt.json`.
pub const SEGMENTS_MAX: usize = 256;

/// Largest user request (`lkjagent send`), in bytes.
pub const REQUEST_MAX_BYTES: usize = 8 * 1024;

/// Largest inbox file; `send` refuses to grow it further until the agent takes the messages.
/// Cost: a buffer of this size reserved once.
pub const INBOX_MAX_BYTES: usize = 64 * 1024;

/// Size at which `logs/audit.jsonl` is rotated to `audit.jsonl.1`; the audit log never takes
/// more than twice this on disk.
pub const AUDIT_LOG_MAX_BYTES: usize = 4 * 1024 * 1024;

/// Longest audit line, in bytes. Cost: a buffer of this size reserved once.
pub const AUDIT_LINE_MAX_BYTES: usize = 16 * 1024;
