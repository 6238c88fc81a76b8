//! Every capacity of the program, in one place.
//!
//! lkjagent runs with bounded memory (docs/design.md §2): each buffer, count and depth below is
//! reserved once (inline in a type, or on the heap at start-up) and never grows. Running out of
//! any of them is a `CAPACITY_EXCEEDED` error that names the constant, never a panic and never
//! a silent cut. Each constant says what it bounds and what it costs in memory, so the total
//! footprint can be read off this file.
//!
//! Sections are grouped by the layer that owns them, bottom (errors, JSON) to top (the agent).

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Bytes of message text an [`crate::error::Error`] carries. Longer messages are cut at a
/// character boundary and end in `...` so the cut is visible.
pub const ERROR_MESSAGE_BYTES: usize = 240;

/// Error messages that can be alive at once without allocating: an error's message waits in one
/// of these static slots until the error is dropped (the error itself is 16 bytes, so a `Result<()>`
/// comes back in registers). The agent holds at most a few at a time; start-up reports that collect
/// many problems spill the rest to the heap. Cost: about 256 bytes each of static memory
/// (16 KiB), touched only as used.
pub const ERROR_MESSAGE_SLOTS: usize = 64;

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

/// Most bytes `lkjagent json` prints. The formatted document is held in a buffer of this size
/// and printed only once the whole input is known valid (so an invalid input prints nothing);
/// a document whose output would be larger is a `CAPACITY_EXCEEDED` error and prints nothing.
/// Compact output is at most the input's size plus a newline, so this is also the largest
/// input compact formatting accepts; pretty output adds indentation. Cost: this much address
/// space, reserved once for the `json` subcommand; memory is used only as output is written
/// (the pages of an untouched reservation are never faulted in).
pub const JSON_CLI_MAX_OUTPUT_BYTES: usize = 64 * 1024 * 1024;

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

/// Largest model reply the reply reader reads, in bytes. A longer reply is rejected as a whole
/// (the reader's `REPLY_TOO_LARGE` problem; callers reading it from a file or socket may refuse
/// it earlier with `CAPACITY_EXCEEDED`). Cost: none by itself; bounds the buffers below.
pub const REPLY_MAX_BYTES: usize = 1 << 20;

/// Extra room of the reply reader's working copy for bytes that are not UTF-8: each invalid
/// sequence (1 to 3 bytes) becomes U+FFFD (3 bytes), so a reply near the size limit with more
/// than about 32 K of them no longer fits and is rejected as too large. Cost: this many bytes,
/// reserved once.
pub const REPLY_LOSSY_SLACK_BYTES: usize = 64 * 1024;

/// Bytes of the reply reader's working copy (the reply with `<think>` blocks removed and
/// invalid UTF-8 replaced). Cost: this many bytes, reserved once.
pub const REPLY_WORK_BYTES: usize = REPLY_MAX_BYTES + REPLY_LOSSY_SLACK_BYTES;

/// Most nodes (elements and text runs) of a parsed reply. A realistic reply has under 100;
/// past this, parsing stops and the reply gets a `TOO_MANY_TAGS` problem. Cost: 48 bytes each
/// (384 KiB), reserved once.
pub const TAG_MAX_NODES: usize = 8 * 1024;

/// Bytes of names and decoded text of a parsed reply, plus text the interpreter derives from
/// it (era-A blocks joined into one log entry). Decoding never lengthens text, so a reply that
/// fits [`REPLY_WORK_BYTES`] fits here. Cost: this many bytes, reserved once.
pub const TAG_TEXT_BYTES: usize = REPLY_WORK_BYTES + 16 * 1024;

/// Deepest element nesting the tag parser builds (and the renderer writes). Deeper start tags
/// are dropped (their text kept) with a `TOO_DEEP` problem. Walks are loops over parent links,
/// never recursion, so this bounds work per end tag, not stack use. Cost: none by itself.
pub const TAG_MAX_DEPTH: usize = 64;

/// Most JSON nodes of a reply in the JSON dialect (`{"next_state": ..., "action": {...}}`);
/// a larger JSON reply is read as text. Cost: 24 bytes each, plus [`REPLY_MAX_BYTES`] of decoded
/// text, reserved once by the reader.
pub const REPLY_JSON_MAX_NODES: usize = 4096;

/// Most instructions one reply yields (actions, next state, logs). Past this, the rest are
/// dropped with a `TOO_MANY_INSTRUCTIONS` problem. Cost: 72 bytes each (4.5 KiB), inline in the
/// reader.
pub const REPLY_MAX_INSTRUCTIONS: usize = 64;

/// Most problems recorded for one reply; further ones are counted, not kept. Cost: about 180
/// bytes each (2.9 KiB), inline in the reader.
pub const REPLY_MAX_PROBLEMS: usize = 16;

/// Bytes of the detail text of one problem (what was found, what was expected); longer text
/// is cut visibly. Cost: this many bytes per problem slot.
pub const REPLY_PROBLEM_DETAIL_BYTES: usize = 160;

/// Actions taken from one reply when the caller does not say otherwise (docs/design.md §5: "up to
/// a configured number per cycle, default 1").
pub const REPLY_DEFAULT_MAX_ACTIONS: usize = 1;

/// Regions of a reply the reader removes or rewrites (`<think>` blocks, invalid UTF-8 runs)
/// that it remembers to map offsets back to the original reply. Past this, offsets after the
/// last remembered region are approximate (never past the end of the reply). Cost: 8 bytes
/// each (2 KiB), inline in the reader.
pub const REPLY_MAX_OFFSET_SEGMENTS: usize = 256;

/// Items joined from a list-shaped field (`<tags><tag>a</tag>...</tags>`) or parts of an
/// era-A block (`<thinking>` children) joined into one log entry; more is a `FIELD_NOT_TEXT`
/// problem. Cost: 8 to 16 bytes each on the stack while reading.
pub const REPLY_MAX_LIST_ITEMS: usize = 32;

/// Problems listed in the feedback note for the model (errors first). Cost: none; it bounds
/// the prompt tokens spent on feedback.
pub const REPLY_FEEDBACK_MAX_PROBLEMS: usize = 3;

/// Text elements one parse distinguishes (`ParseOptions::text_elements`); names past this are
/// parsed as ordinary elements. Cost: 8 bytes each on the stack while parsing.
pub const TAG_MAX_TEXT_ELEMENTS: usize = 16;

// ---------------------------------------------------------------------------------------------
// HTTP and the LLM providers
// ---------------------------------------------------------------------------------------------

/// Largest HTTP response head (status line plus headers) accepted, in bytes. Cost: this many
/// bytes in the client's receive buffer, reserved once.
pub const HTTP_MAX_HEAD_BYTES: usize = 16 * 1024;

/// Most header fields in one response head (interim `1xx` heads count separately). Headers are
/// read in place, never stored, so this costs nothing; it bounds the work a hostile head causes.
pub const HTTP_MAX_HEADERS: usize = 100;

/// Largest response body accepted, in bytes, after chunked decoding. Checked before buffering:
/// a `Content-Length` or chunk size that would pass it is refused at once with
/// `RESPONSE_TOO_LARGE`. A reply is at most [`REPLY_MAX_BYTES`] of text, which JSON escaping and
/// a side reasoning field can both inflate, hence the margin. Cost: this many bytes for the
/// client's body buffer, reserved once (the same bound applies to a streamed body).
pub const HTTP_MAX_BODY_BYTES: usize = 4 << 20;

/// Size of the client's receive buffer: raw bytes from the socket before decoding. It must
/// hold a whole response head, so it is at least [`HTTP_MAX_HEAD_BYTES`]. Cost: this many
/// bytes, reserved once.
pub const HTTP_RECV_BUFFER_BYTES: usize = 64 * 1024;

/// Largest request head the client writes (request line and headers, bearer token included).
/// Cost: this many bytes, reserved once.
pub const HTTP_MAX_REQUEST_HEAD_BYTES: usize = 4 * 1024;

/// Longest endpoint URL accepted in the settings, in bytes. Cost: about three times this,
/// inline in the parsed URL (host, path and Host header).
pub const HTTP_MAX_URL_BYTES: usize = 512;

/// The most of `/etc/hosts` and `/etc/resolv.conf` the static binary's resolver reads
/// (`http::resolve`). Cost: up to this many bytes of heap while a host name is looked up.
pub const RESOLVE_FILE_MAX_BYTES: u64 = 1 << 20;

/// Longest bearer token read from the environment variable the settings name. Cost: this
/// many bytes, inline in the client.
pub const HTTP_MAX_TOKEN_BYTES: usize = 1024;

/// Longest `Retry-After` the client honours, in seconds; a longer one is cut to this so a
/// confused server cannot park the agent for hours. Cost: none.
pub const HTTP_RETRY_AFTER_MAX_SECS: u64 = 60;

/// How often a blocked socket read or a backoff sleep wakes to ask whether the run should
/// stop (SIGTERM), in milliseconds. The per-read timeout is counted across these wake-ups.
/// Cost: none (a few idle wake-ups per second while waiting for a model).
pub const HTTP_STOP_POLL_MS: u64 = 200;

/// Largest request body the LLM client builds (the JSON of model, messages and options). The
/// prompt ([`PROMPT_MAX_BYTES`]) is JSON-escaped into it, which at worst grows it six times
/// for control characters; ordinary text grows a few percent. Cost: this many bytes, reserved
/// once.
pub const LLM_MAX_REQUEST_BYTES: usize = 1 << 20;

/// Bytes of decoded reply text (content) a completion holds. Cost: reserved once.
pub const LLM_MAX_CONTENT_BYTES: usize = REPLY_MAX_BYTES;

/// Bytes of an outline's items the model wrote unsurely, one a line (`LastReply::unsure` in
/// `agent::model`): at most the outline's value, which its grammar bounds to a few KiB. Cost:
/// reserved once.
pub const REPLY_UNSURE_MAX_BYTES: usize = 8 * 1024;

/// Bytes of reasoning text ("thinking") a completion keeps for the log; longer reasoning is
/// cut at a character boundary (it is only logged, never parsed). Cost: reserved once.
pub const LLM_MAX_REASONING_BYTES: usize = 1 << 20;

/// Nodes of the JSON arena that parses a reply body (one whole non-streamed reply, one
/// streamed event, or a model list). A reply with its tokens' log-probabilities (an outline's,
/// see `llm::reply::TokenLogprobs`) takes about 20 nodes a token, so this covers a reply of the
/// shipped `llm.max_tokens` (3,072) with them; 4,096 nodes failed an outline of 400 tokens.
/// Cost: one arena node each (24 bytes: 1.5 MiB), reserved once, touched only as far as a reply
/// fills it, plus the arena's text part, sized [`HTTP_MAX_BODY_BYTES`] because decoded strings
/// are never longer than the body they come from.
///
/// Total for this section, reserved once by an LLM client: body 4 MiB + reply arena about
/// 5.5 MiB + request 1 MiB + content 1 MiB + reasoning 1 MiB + stream line and event 0.5 MiB +
/// receive buffer 64 KiB + request head 4 KiB, about 13.1 MiB of address space. Pages are
/// touched only as far as replies fill them: `make bench` reports the resident size.
pub const LLM_MAX_JSON_NODES: usize = 64 * 1024;

/// Longest single streamed event (one SSE event or one NDJSON line), in bytes. Cost: this
/// many bytes, reserved once.
pub const LLM_MAX_EVENT_BYTES: usize = 256 * 1024;

/// Longest line of a replay script, in bytes. Cost: this many bytes, reserved once when the
/// `replay` provider is used.
pub const LLM_MAX_REPLAY_LINE_BYTES: usize = 2 << 20;

// ---------------------------------------------------------------------------------------------
// Memory: the working set and the tagged store
// ---------------------------------------------------------------------------------------------

/// Most tags in one store key (the tagged-memory design's `MAX_TAGS_PER_ENTRY`).
pub const KEY_MAX_TAGS: usize = 8;

/// Longest single tag, in bytes (the design's `MAX_TAG_LENGTH`).
pub const TAG_MAX_BYTES: usize = 64;

/// Longest normalised key text: all tags at full length joined by commas. Cost: a
/// [`crate::memory::key::Key`] holds this many bytes inline (plus a length).
pub const KEY_MAX_BYTES: usize = KEY_MAX_TAGS * TAG_MAX_BYTES + (KEY_MAX_TAGS - 1);

/// Most entries in the working set (what the prompt shows). Cost: one entry header of about
/// 560 bytes (inline key plus times and counters) each, reserved on the heap at start-up.
pub const WORKING_MAX_ENTRIES: usize = 256;

/// Total bytes of text in the working set, all entries together. It is shown in the prompt,
/// so it stays well under `PROMPT_MAX_BYTES`. Cost: one arena of this size, reserved once.
pub const WORKING_TEXT_MAX_BYTES: usize = 128 * 1024;

/// Most entries in `memory.json`'s `agent` map (the agent layer's own small state). Cost:
/// `AGENT_META_KEY_MAX_BYTES + AGENT_META_VALUE_MAX_BYTES` bytes each, reserved once.
pub const AGENT_META_MAX_ENTRIES: usize = 16;

/// Longest key in the `agent` map, in bytes.
pub const AGENT_META_KEY_MAX_BYTES: usize = 64;

/// Longest value in the `agent` map, in bytes (room for a rejected-reply feedback text).
pub const AGENT_META_VALUE_MAX_BYTES: usize = 4096;

/// Longest `state` name kept in `memory.json`, in bytes. Cost: inline in the memory file.
pub const MEMORY_STATE_MAX_BYTES: usize = 64;

/// Largest `memory.json` read, in bytes. Cost: the file buffer and the parsed document's string
/// arena, each this size, only while loading.
pub const MEMORY_FILE_MAX_BYTES: usize = 4 * 1024 * 1024;

/// Most JSON nodes in a `memory.json` being read (an era-B file with a large `storage` map
/// needs one node per key and per value). Cost: one document node each, only while loading.
pub const MEMORY_FILE_MAX_NODES: usize = 256 * 1024;

/// Most problems, left-out entries and per-entry warnings about one `memory.json` that are
/// reported one by one (by the agent's start-up, `status`, `check` and `memory list`); past it,
/// one more line gives the count of the rest. The `working_memory` entries that do not fit the
/// working set are not collected at all: a load keeps only their positions in the file (4 bytes
/// each, so at most 4 × [`MEMORY_FILE_MAX_NODES`] = 1 MiB) and reads them again from the parsed
/// document. So reading a `memory.json` of any shape costs at most the file buffer, the
/// document (`JSON_NODE_BYTES` × nodes + text) and that 1 MiB, about 15 MiB of address space
/// at the caps, of which only what the file fills is touched: `status` and `check` peak at
/// about 11 MiB resident on a 2 MB file of 130,000 entries (`tests/memory_json_bounded.rs`
/// holds them to 16 MiB). Cost: an error value (about 260 bytes) per line kept.
pub const MEMORY_FILE_REPORT_MAX: usize = 16;

/// Largest era-B export file `memory import` reads, in bytes. Cost: the file buffer and the
/// document's string arena, each this size, only during an import.
pub const EXCHANGE_FILE_MAX_BYTES: usize = 64 * 1024 * 1024;

/// Most JSON nodes in an import file. Cost: one document node each, only during an import.
pub const EXCHANGE_FILE_MAX_NODES: usize = 2 * 1024 * 1024;

/// Entries the tagged store has room for unless `memory.store_capacity` in `config.json` says
/// otherwise. Every table of the store is sized once, at open, from the capacity.
pub const STORE_DEFAULT_ENTRIES: usize = 65_536;

/// The largest `memory.store_capacity`. Cost per entry of capacity, reserved once at open and
/// allocated zeroed, so only the part in use is backed by RAM:
/// - the entry table, 40 bytes (log place and flags 8, created, accessed, hits and version 4
///   each, 8 tag ids 16), for the capacity plus 1/64 more ids of room (the ids of deleted
///   entries come back at compaction);
/// - the key table, 6 bytes (1.5 slots of 4 bytes);
/// - the posting lists: 4 bytes for every tag an entry carries, plus an eighth of slack (the
///   arena reserves room for 8 tags per entry, touched only as lists grow).
///
/// So about 47 bytes per entry of capacity plus 4.5 per tag carried: measured (`make bench`)
/// 73.8 MiB peak for a full 1,048,576-entry store with 4.5 tags per entry, process included.
pub const STORE_MAX_ENTRIES: usize = 1_048_576;

/// The smallest `memory.store_capacity`.
pub const STORE_MIN_ENTRIES: usize = 1;

/// Most distinct tags in use across the store at once, for a capacity of `entries`: half the
/// capacity, at least 8,192, at most 65,534 (tags are 16-bit ids). Cost per tag: about 40
/// bytes of tables and [`STORE_TAG_ARENA_BYTES_PER_TAG`] of text, allocated zeroed.
pub const fn store_max_tags(entries: usize) -> usize {
    let half = entries / 2;
    if half < 8_192 {
        8_192
    } else if half > 65_534 {
        65_534
    } else {
        half
    }
}

/// Bytes of tag text the tag table holds per distinct tag it has room for (tags average far
/// less than [`TAG_MAX_BYTES`]; the text is compacted when it fills with dead tags).
pub const STORE_TAG_ARENA_BYTES_PER_TAG: usize = 24;

/// Most links between related entries. Cost: 8 bytes each, reserved once.
pub const STORE_MAX_LINKS: usize = 16_384;

/// Largest value of one store entry, in bytes.
pub const STORE_VALUE_MAX_BYTES: usize = 64 * 1024;

/// Largest log record (one line): a value where every byte needs a 6-byte escape, all tags at
/// full length escaped likewise, and the fixed fields. Cost: the store's read buffer, its
/// write buffer and its decoded-value buffer are each about this size, reserved once at open.
pub const STORE_RECORD_MAX_BYTES: usize = 6 * STORE_VALUE_MAX_BYTES + KEY_MAX_TAGS * (6 * TAG_MAX_BYTES + 3) + 256;

/// Most results one query, text search or related-entries listing returns. Cost: 8 bytes per
/// result in the caller's result buffer.
pub const STORE_QUERY_MAX_RESULTS: usize = 1024;

/// Most value bytes one text search reads from the log before it stops (and says so). Cost:
/// none in memory; bounds the time of a search over a large store.
pub const STORE_SEARCH_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Most entries one clean-up batch moves out of the live store (to the cold store, or deleted):
/// the agent's batches are a tenth of the capacity, and `memory cleanup` runs as many batches
/// as it needs. Each batch is one append and one sync per file, all or nothing. Cost: 12
/// bytes each for the selection of candidates, reserved once by the writer (48 KiB), and 4
/// bytes each while a log is replayed.
pub const STORE_CLEANUP_BATCH_MAX: usize = 4096;

/// Keys of entries saved or loaded in the last `memory.cleanup.keep_cycles` cycles that the
/// store remembers, so that a clean-up never takes them; past it, the oldest are forgotten (and
/// may be moved like any other). Cost: about `KEY_MAX_BYTES` + 8 bytes each, reserved once
/// (about 33 KiB).
pub const STORE_CLEANUP_RECENT_KEYS: usize = 64;

/// `memory.cleanup.threshold` unless set: the fill, in percent of `memory.store_capacity`, at
/// which the agent makes room.
pub const CLEANUP_DEFAULT_THRESHOLD_PERCENT: u64 = 90;

/// How far below the threshold, in percent of the capacity, one clean-up brings the live
/// store (at least one entry when it is full), so that room is made in batches, not once a save.
pub const CLEANUP_MARGIN_PERCENT: u64 = 10;

/// Most distinct keys a command reads from the cold store (`store.cold`, which has no index
/// and no capacity) when it shows each key once, with its newest value (`memory search --cold`,
/// `stats`, `export`, `check`): the scan notes where each key's newest copy is. Cost: about 16
/// bytes per distinct key while the command runs (64 MiB at the most); the agent's cycle never
/// scans the cold store. About 20 years of one new entry a minute.
pub const STORE_COLD_SCAN_MAX_KEYS: usize = 4 * 1_048_576;

/// Most bytes of `store.cold` after what `store.cold.keys` covers that `status` and `memory
/// stats` read to count the cold store from that file (`cold::keys`: the groups a running
/// agent's clean-ups appended since it last wrote it); past it they scan all of `store.cold`
/// as before. Cost: 8 bytes per copy read (a copy's record is 80 bytes at least: 800 KiB at
/// the most) beside the log reader's buffer.
pub const STORE_COLD_KEYS_TAIL_MAX_BYTES: u64 = 8 << 20;

/// Most bytes of `store.cold` after what `store.cold.keys` covers that the writer's
/// checkpoint after a compaction of the log reads to bring that file up to date (about 6 ms
/// a MiB; the file itself is copied too, 8 bytes per cold key); past it only a clean stop
/// does.
pub const STORE_COLD_KEYS_STEP_BYTES: u64 = 1 << 20;

/// Most cold entries whose key hashes the writer notes as it opens the cold store (its walk
/// of `store.cold` for a torn tail), kept until the cold text index is first opened, so that
/// opening it reads no record of `store.cold` again (`cold::recall`). Cost: 8 bytes per cold
/// entry (8 MiB at the most) while kept; a larger cold store notes none and that opening
/// reads `store.cold` as before.
pub const STORE_COLD_OPEN_KEYS_MAX: usize = 1_048_576;

/// Most clean-up batches one save runs to make room in the store's bounded tables (the tag
/// table, the link table) when they reach `memory.cleanup.threshold` of their size: entries
/// that share tags free none when they leave, so a batch may free fewer than it moved. Bounds
/// the pause; a save that still finds no room fails with the table's own message (and paging
/// then puts its page in the cold store). Costs nothing in RAM (the batches reuse the buffers
/// of [`STORE_CLEANUP_BATCH_MAX`]).
pub const CLEANUP_TABLE_BATCHES_MAX: usize = 8;

/// `memory.cleanup.keep_cycles` unless set: an entry saved or loaded in this many last cycles
/// is never taken by a clean-up.
pub const CLEANUP_DEFAULT_KEEP_CYCLES: u64 = 3;

/// The largest `memory.cleanup.keep_cycles`.
pub const CLEANUP_KEEP_CYCLES_MAX: u64 = 10_000;

/// With `memory.cleanup.max_age_days` set, the agent looks for entries unused that long at
/// most once per this many seconds (one pass over the entry table). Cost: none in memory.
pub const CLEANUP_AGE_CHECK_SECONDS: u64 = 3600;

/// Entries whose access statistics a cycle may change and the store still lists by id, so that
/// writing them costs what was touched; past it, the flush scans the entry table once. Cost: 4
/// bytes each, reserved once.
pub const STORE_DIRTY_LIST_MAX: usize = 1024;

/// The store writes a checkpoint of its index (`store.ckpt`) once this many bytes were
/// appended to the log since the last one (and at compaction and a clean stop), so an open
/// replays at most about this much log. Cost: none in memory; one sequential write of about
/// 62 bytes per entry each time (44 of the index, 4 per tag an entry carries for the posting
/// lists a read-only command reads in place, and the column blocks' CRCs).
pub const STORE_CHECKPOINT_EVERY_BYTES: u64 = 4 * 1024 * 1024;

/// The unit in which a read-only command reads the checkpoint's entry table in place
/// (`memory::store::view`): each column of `store.ckpt` is cut into blocks of this many bytes,
/// each with its CRC-32 in the file, and a command reads and checks only the blocks of the
/// entries it looks at. Cost: one cached block per column (6 KiB) while such a command runs;
/// on disk, 4 bytes per block (about 0.16 bytes per entry).
pub const STORE_CHECKPOINT_BLOCK_BYTES: usize = 1024;

/// Bytes a read-only command reads at once when it reads a section of the checkpoint in
/// place (tag names, the tag directory, a posting list, the column blocks' CRCs). Cost: this
/// much, reserved once per command; what a section holds is bounded by the capacity (a posting
/// list holds at most `memory.store_capacity` ids, 4 MiB at [`STORE_MAX_ENTRIES`]).
pub const STORE_VIEW_READ_BYTES: usize = 64 * 1024;

/// Most bytes of log after the checkpoint that a read-only command (`status`, `memory
/// search`, `query`, `show`, `stats`) lays over the checkpoint read in place
/// (`store::view::tail`: an agent running between two checkpoints, or killed before the
/// next); with more, it opens the store whole, as it did before. Twice the checkpoint's
/// interval ([`STORE_CHECKPOINT_EVERY_BYTES`]), so that a command beside a running agent reads
/// in place all the time: the agent checkpoints at the first flush past the interval. Cost:
/// the tail is read once, in pieces of the log's read chunk; what its records change is
/// kept per entry they touch, at most [`STORE_VIEW_TAIL_MAX_ENTRIES`] of them.
pub const STORE_VIEW_TAIL_MAX_BYTES: u64 = 2 * STORE_CHECKPOINT_EVERY_BYTES;

/// Most entries the log's tail after the checkpoint may change (put, remove, touch) for a
/// read-only command to lay it over the checkpoint in place (`store::view::tail`); with more,
/// it opens the store whole. Cost: its change with its id (at most 64 bytes) and, for an
/// entry put, its key as 16 bytes of tag ids with its id, each in a hash table of a control
/// byte a slot, grown by doubling: at most 65,536 slots of each, about 5 MiB; plus the text
/// of the tags the tail adds (within the store's tag arena).
pub const STORE_VIEW_TAIL_MAX_ENTRIES: usize = 32_768;

/// Compaction runs when garbage (superseded records) passes this percentage of the log ...
pub const STORE_COMPACT_GARBAGE_PERCENT: u64 = 50;

/// ... and the log holds at least this many bytes of garbage (small logs are left alone).
pub const STORE_COMPACT_MIN_GARBAGE_BYTES: u64 = 1024 * 1024;

// ---------------------------------------------------------------------------------------------
// Recall: the store's full-text index (`memory::store::fulltext`, `rank`)
// ---------------------------------------------------------------------------------------------

/// Longest word the full-text index keeps, in bytes: a longer word is indexed and queried by
/// its first this-many bytes (cut at a character boundary). Cost: one word buffer of this size
/// per tokenizer in use (on the stack), and at most this much text per distinct word.
pub const TEXT_TOKEN_MAX_BYTES: usize = 64;

/// Most distinct words `store.fts` may list per entry of store capacity (at least
/// [`TEXT_MIN_TERMS`]): a file claiming more is taken as damaged, before anything is reserved
/// for it. Cost: bounds the dictionary's page table read into RAM (8 bytes per 64 words) and
/// the merge's page list (4 bytes per 32 words).
pub const TEXT_TERMS_PER_ENTRY: usize = 2;

/// The fewest distinct words `store.fts` may list, whatever the capacity.
pub const TEXT_MIN_TERMS: usize = 65_536;

/// Documents the full-text index's delta holds: the entries created or changed since
/// `store.fts` (the base, searched in place) was written. The delta is merged into a new
/// `store.fts` at each checkpoint, and earlier when one of its tables (this one,
/// [`TEXT_DELTA_BLOCKS`], [`TEXT_DELTA_TERMS`], [`TEXT_DELTA_TERM_BYTES`]) would not hold the
/// next change; a rebuild from the log fills and merges it over and over. Cost: 24 bytes each,
/// reserved once when the index is first used, whatever the store's capacity.
pub const TEXT_DELTA_DOCS: usize = 65_536;

/// Posting blocks (8 postings, 56 bytes each) of the delta: about 45 entries' words per
/// 1,000 blocks with the blocks that terms leave part-filled. Cost: 56 bytes each (21 MiB),
/// reserved once and backed by RAM only as filled.
pub const TEXT_DELTA_BLOCKS: usize = 393_216;

/// Distinct words the delta holds: those of its documents and those of the base documents
/// no longer current (whose counts it corrects). Cost: 40 bytes each (the term and two hash
/// slots), reserved once.
pub const TEXT_DELTA_TERMS: usize = 262_144;

/// Bytes of word text the delta holds for its words (words average far less than
/// [`TEXT_TOKEN_MAX_BYTES`]). Cost: this many bytes, reserved once.
pub const TEXT_DELTA_TERM_BYTES: usize = 3 << 20;

// The delta always holds the largest change: an entry's old and new texts (value and tags),
// each of at most one word per two bytes, their words' text at most 1.5 times the bytes they
// come from (folding).
const _: () = assert!(TEXT_DELTA_BLOCKS >= STORE_VALUE_MAX_BYTES + KEY_MAX_TAGS * TAG_MAX_BYTES);
const _: () = assert!(TEXT_DELTA_TERMS >= 2 * (STORE_VALUE_MAX_BYTES + KEY_MAX_TAGS * TAG_MAX_BYTES));
const _: () = assert!(TEXT_DELTA_TERM_BYTES >= 3 * (STORE_VALUE_MAX_BYTES + KEY_MAX_TAGS * TAG_MAX_BYTES));
const _: () = assert!(TEXT_DELTA_DOCS >= 1);

/// Bytes the merge of the delta into `store.fts` reads or writes at a time, for each of its
/// streams (the old file's documents and postings, the new file and its dictionary). Cost: 4
/// times this, reserved with the index.
pub const TEXT_MERGE_BUFFER_BYTES: usize = 256 * 1024;

/// Milliseconds a step of a merge of the text index works beside the agent's cycle before it
/// stops (its word or batch of pages finished, what it wrote synced): a checkpoint starts the
/// merge of the delta into a new `store.fts` and each cycle's upkeep runs one step, so no
/// cycle stops for the whole merge (2.3 s and more at 1,048,576 entries; issue 39's target is
/// no cycle's upkeep over 100 ms). Costs no memory: the job keeps its place in the buffers
/// above. Measured in docs/measurements.md (`LKJAGENT_BENCH_ONLY=upkeep`).
pub const TEXT_MERGE_STEP_MILLIS: u64 = 25;

/// Most cold ids taken out (a copy superseded, a key the live store created again) while the
/// cold store's text index is merged in steps, noted so that the merge's end takes them out of
/// the new `store.cold.fts` again: 4 bytes each (64 KiB), reserved at the first such merge. A
/// cycle takes out a few; past this many the merge is let go of (the next checkpoint starts it
/// again).
pub const TEXT_COLD_MERGE_KILLS_MAX: usize = 16_384;

/// Most distinct words a ranked query weighs; a longer query is `CAPACITY_EXCEEDED`. Cost:
/// about 64 bytes each on the stack during a query.
pub const RANK_MAX_TERMS: usize = 64;

/// Bytes of `store.fts` a ranked query reads at a time for each of its words (a quarter for
/// its skip groups, the rest for its blocks of postings). Cost: [`RANK_MAX_TERMS`] times this
/// (1 MiB) and 1 KiB per word for its decoded block (64 KiB), reserved at the first search,
/// plus, for the writer, 12 bytes per indexed entry (read in place: one page of lengths and
/// one of records, 5 KiB).
pub const RECALL_READ_BYTES: usize = 16 * 1024;

/// Most entries one ranked query returns. Cost: 16 bytes each in the caller's
/// [`crate::memory::store::recall::Ranked`], reserved once.
pub const RANK_MAX_RESULTS: usize = 1024;

// ---------------------------------------------------------------------------------------------
// Constrained decoding: the reply grammar and schema (`grammar`)
// ---------------------------------------------------------------------------------------------

/// Largest generated grammar or JSON Schema, in bytes. The fixed part is under 2 KiB; the rest
/// is two key lists of at most [`GRAMMAR_KEYS_PER_LIST`] keys of at most [`KEY_MAX_BYTES`]
/// bytes, each written at most twice as long (escapes): about 66 KiB at worst; and the names a
/// new product entry may not take, one rule of at most ~85 bytes per character of
/// [`PRODUCT_TAKEN_MAX_CHARS`]: about 100 KiB at worst. Cost: one buffer of this size, reserved
/// once by the agent (and one by `lkjagent grammar`).
pub const GRAMMAR_MAX_BYTES: usize = 192 * 1024;

/// Most keys a grammar lists by name for a `working_memory_remove`, and for a `storage_load`
/// (the newest stored ones). Keys past it are not offered that cycle (nothing is lost: the
/// model can still search and load them later).
pub const GRAMMAR_KEYS_PER_LIST: u32 = 32;

/// Longest log text (`think_log`, `evaluation_log`) a grammar allows, in characters.
pub const GRAMMAR_LOG_MAX_CHARS: u32 = 240;

/// Longest value (`working_memory_add`, `storage_save`) a grammar allows, in characters (the
/// shipped prompt asks for values of about 100 tokens).
pub const GRAMMAR_VALUE_MAX_CHARS: u32 = 400;

/// Longest tag a grammar allows, in characters (within [`TAG_MAX_BYTES`]).
pub const GRAMMAR_TAG_MAX_CHARS: u32 = 16;

/// Most tags in one key a grammar allows (within [`KEY_MAX_TAGS`]).
pub const GRAMMAR_TAGS_PER_KEY: u32 = 3;

/// Longest `<think>` block a grammar allows a reasoning model (`llm.thinks`), in characters.
pub const GRAMMAR_THINK_MAX_CHARS: u32 = 1500;

/// Longest name of a new entry of the task's product (the text before `": "` in its value, and
/// the one tag the agent adds to the product's tags), in characters. Names of stored entries at least this long are not excluded
/// by the grammar (the grammar cannot write them either).
pub const GRAMMAR_NAME_MAX_CHARS: u32 = 24;

/// Most words of a definition a product ask allows: one sentence, its clauses as long as they
/// come within these (a clause cut at a quarter of them ended most definitions mid-phrase:
/// docs/measurements.md, "The grammar's word rules"). A
/// word is at most [`GRAMMAR_WORD_MAX_CHARS`] characters, so a definition is at most about 2 KiB
/// (the assertion below keeps it within a stored value); a typical one is about 60 bytes.
pub const GRAMMAR_ENTRY_MAX_WORDS: u32 = 32;

/// Most clauses (comma-separated parts: one more than its commas) of a definition a product ask
/// allows: a small model that drifts strings names into a long comma list ("Lions, Leopards,
/// Giraffes, ...").
pub const GRAMMAR_ENTRY_MAX_CLAUSES: u32 = 4;

/// Longest word of a definition a product ask allows, in characters: a capital, 3 consonants,
/// 5 groups of up to 3 vowels with up to 4 consonants between them and after them, and a `-`
/// part of 3 consonants and 3 vowel groups with their consonants (longer than any ending after
/// a `'`; see `grammar::gbnf`).
pub const GRAMMAR_WORD_MAX_CHARS: u32 = 1 + 3 + 5 * 3 + 5 * 4 + 1 + 3 + 3 * 3 + 3 * 4;

const _: () = assert!(
    (GRAMMAR_NAME_MAX_CHARS + 2 + GRAMMAR_ENTRY_MAX_WORDS * (GRAMMAR_WORD_MAX_CHARS + 2)) as usize
        <= STORE_VALUE_MAX_BYTES / 4,
    "a definition a product ask allows fits a stored value with room to spare"
);

/// Most names a product ask for the next names allows: enough for three questions of three
/// names, one more for a name the plan drops as taken (shorter lists meant a names ask every
/// other cycle, each costing the server the product view again: docs/measurements.md, "The
/// grammar's word rules").
pub const GRAMMAR_PLAN_MAX_NAMES: u32 = 10;

/// Most sentences of a unit a product ask allows (a tip is one, a story's paragraph a few).
pub const GRAMMAR_UNIT_MAX_SENTENCES: u32 = 3;

/// Most words of one sentence of a unit written in a script without spaces between words is
/// counted in characters instead: this many characters a sentence.
pub const GRAMMAR_UNIT_SCRIPT_MAX_CHARS: u32 = 120;

/// Most words of an outline's item: a subject ("Black hole", "Kyoto") or a whole unit in one
/// sentence ("Mulch around the plants to keep the soil moist."). The model ends an item where it
/// means to; a bound of three words made it run what it meant to say on into one word ("Use the
/// rightsoil": docs/measurements.md, "Outline items").
pub const GRAMMAR_OUTLINE_ITEM_MAX_WORDS: u32 = 20;

/// Most words of an outline's item when the task's unit is a name with a text of its own (a
/// term, a command): a name, never a sentence, and without commas.
pub const GRAMMAR_OUTLINE_NAME_MAX_WORDS: u32 = 4;

/// Longest outline item in characters, in a script without spaces between words.
pub const GRAMMAR_OUTLINE_ITEM_MAX_CHARS: u32 = 120;

const _: () = assert!(
    (GRAMMAR_UNIT_MAX_SENTENCES * GRAMMAR_ENTRY_MAX_WORDS * (GRAMMAR_WORD_MAX_CHARS + 2)) as usize + 256
        <= STORE_VALUE_MAX_BYTES,
    "a unit a product ask allows fits a stored value"
);

/// llama.cpp refuses a grammar whose nested bounded repetitions multiply to this or more
/// (`MAX_REPETITION_THRESHOLD`); every bound the generator writes stays below it.
pub const GRAMMAR_MAX_REPETITION: u32 = 2000;

// ---------------------------------------------------------------------------------------------
// The agent
// ---------------------------------------------------------------------------------------------

/// Largest prompt the agent builds, in bytes. Cost: reserved once at start-up.
pub const PROMPT_MAX_BYTES: usize = 256 * 1024;

/// Most entries of the task's product shown in the prompt (the newest; full, the view starts
/// again from its newest half). A server evaluates the view again after each names ask, whose
/// prompt does not show it, so the view is kept short (docs/measurements.md, "The grammar's
/// word rules"). Cost: a few hundred bytes of ids and names, reserved once.
pub const PRODUCT_VIEW_MAX_ENTRIES: usize = 12;

/// Most bytes of the product view in the prompt (entries past it are left out, oldest first;
/// each entry's value is cut at a character boundary to [`PRODUCT_ENTRY_MAX_BYTES`]).
pub const PRODUCT_VIEW_MAX_BYTES: usize = 3 * 1024;

/// Most bytes of one entry in the product view.
pub const PRODUCT_ENTRY_MAX_BYTES: usize = 240;

/// Most names the agent remembers having asked the model about this run (each never asked
/// again). Cost: 8 bytes each, reserved once; past it the oldest is forgotten.
pub const PRODUCT_ASKED_MAX: usize = 256;

/// Most distinct words the product view's definitions offer as the next names of a glossary
/// (the rest are left for a later cycle). Cost: 72 bytes each, reserved once.
pub const PRODUCT_CANDIDATES_MAX: usize = 64;

/// Most names a new product entry may not take: the names of stored product entries (the
/// newest, read from the store's tag index; each as letters no new name starts with, and a
/// long one's first three letters too), the task's own words and the words that name nothing.
/// Cost: 65 bytes each, reserved once. Older names past it are still refused when saved (the
/// key exists).
pub const PRODUCT_TAKEN_MAX: usize = 512;

/// Most characters of all the names in the taken list together: each character is at most one
/// rule of the grammar, of at most ~100 bytes (see [`GRAMMAR_MAX_BYTES`]); a long name whose
/// first three letters are closed counts only those, as nothing beneath them is written. Names
/// past it are not excluded by the grammar (and still refused when saved).
pub const PRODUCT_TAKEN_MAX_CHARS: usize = 1024;

/// Most tags the product's key carries (derived from the task's words).
pub const PRODUCT_TAGS_MAX: usize = 2;

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

/// Largest `config.json` read, in bytes (start-up only).
pub const CONFIG_FILE_MAX_BYTES: usize = 1024 * 1024;

/// Longest line of the exchange log (the prompt and the reply of one cycle, escaped), in bytes.
/// Cost: a buffer of this size reserved once when the exchange log is on.
pub const EXCHANGE_LINE_MAX_BYTES: usize = 4 * 1024 * 1024;

/// JSON nodes of one exchange-log line when it is read back (`lkjagent replay`).
pub const EXCHANGE_LINE_MAX_NODES: usize = 256;

/// Longest result message of one action (`command_log` text), in bytes.
pub const ACTION_RESULT_MAX_BYTES: usize = 384;

/// Most keys `storage_search` lists in `search_results`.
pub const SEARCH_RESULTS_SHOWN: usize = 20;

/// Longest feedback to the model after an invalid reply, in bytes.
pub const FEEDBACK_MAX_BYTES: usize = 3 * 1024;

// ---------------------------------------------------------------------------------------------
// The command line (`lkjagent memory`, `lkjagent check`)
// ---------------------------------------------------------------------------------------------

/// How long `lkjagent check` waits for the server to accept a connection.
pub const CHECK_CONNECT_TIMEOUT_MS: u64 = 3_000;

/// How long `lkjagent check` waits for the server's answer to its health probe.
pub const CHECK_READ_TIMEOUT_MS: u64 = 10_000;

// ---------------------------------------------------------------------------------------------
// `lkjagent report`
// ---------------------------------------------------------------------------------------------

/// Largest HTML page `lkjagent report` writes, in bytes; a page that would pass it is
/// `CAPACITY_EXCEEDED` (narrow the period), never cut. The page's size is bounded by the counts
/// below, whatever the length of the run or of the texts in its files: about 600 KiB at most. Cost: the page is held
/// in memory before it is written, up to this size.
pub const REPORT_MAX_BYTES: usize = 2 * 1024 * 1024;

/// Most points of a chart of the report. A period with more cycles is binned: each point is the
/// minimum, median and maximum of a run of consecutive cycles, so a long run is summarised, not
/// cut. Cost: 3 × 8 bytes per point and series (a few KiB).
pub const REPORT_CHART_MAX_POINTS: usize = 400;

/// Most marks of the report's cycle strip; beyond it one mark stands for several consecutive
/// cycles and shows their outcomes stacked. Cost: about 40 bytes per mark.
pub const REPORT_STRIP_MAX_MARKS: usize = 600;

/// Values of one series kept to take a bin's median. A bin of more cycles takes the median of
/// every k-th one (evenly spaced); its minimum and maximum stay exact. Cost: 8 bytes each per
/// series (5 series: 320 KiB).
pub const REPORT_BIN_SAMPLE_MAX: usize = 8 * 1024;

/// Rows of each table of the report (newest entries, tags, runs, run ids); the rest are counted
/// in a closing row.
pub const REPORT_TABLE_ROWS: usize = 20;

/// Distinct action types, problem codes and states the report tells apart; further ones (only a
/// foreign or damaged audit log has them) are counted together as `other`. Cost: a short string
/// and a few counters each.
pub const REPORT_MAX_KINDS: usize = 64;

/// Characters of a value or an example shown in a table cell of the report; longer texts end in
/// `…`.
pub const REPORT_CELL_CHARS: usize = 160;

// ---------------------------------------------------------------------------------------------
// Recall by meaning: embeddings and the vectors file (`memory::store::vectors`, `llm::embed`)
// ---------------------------------------------------------------------------------------------

/// Largest embedding dimension `memory.embeddings.dimension` may name (all-MiniLM-L6-v2: 384,
/// nomic-embed-text: 768, bge-m3: 1024, text-embedding-3-large: 3072). Cost: one record of the
/// vectors file is 32 bytes plus one byte per dimension.
pub const EMBED_MAX_DIMENSION: usize = 4096;

/// Texts sent in one embeddings request (a batch), and so the most vectors one answer holds.
/// Cost: the request body and the parsed answer, see [`EMBED_MAX_REQUEST_BYTES`] and
/// [`EMBED_MAX_RESPONSE_BYTES`].
pub const EMBED_BATCH_MAX: usize = 16;

/// Bytes of one text sent to be embedded: a longer value is embedded by its first this many
/// bytes (cut at a character boundary; embedding models read at most a few hundred tokens:
/// all-MiniLM-L6-v2 stops at 256 word pieces). This is a documented cut of what is *sent*,
/// never of what is stored. Cost: part of [`EMBED_MAX_REQUEST_BYTES`].
pub const EMBED_TEXT_MAX_BYTES: usize = 2048;

/// Largest embeddings request body: a batch of texts at most [`EMBED_TEXT_MAX_BYTES`] each,
/// escaped (up to 6 bytes per byte for control characters), plus prefixes and the model name.
/// Reserved once, when embeddings are configured.
pub const EMBED_MAX_REQUEST_BYTES: usize = EMBED_BATCH_MAX * (EMBED_TEXT_MAX_BYTES * 6 + 1024) + 4096;

/// Largest embeddings response body: a batch of vectors of [`EMBED_MAX_DIMENSION`] numbers of
/// up to 24 characters each, plus the envelope. Reserved once (about 1.5 MiB), when
/// embeddings are configured; a larger answer is `RESPONSE_TOO_LARGE`.
pub const EMBED_MAX_RESPONSE_BYTES: usize = EMBED_BATCH_MAX * EMBED_MAX_DIMENSION * 24 + 65_536;

/// Entries embedded per agent cycle at most (missing or stale vectors are filled this many at
/// a time, in batches of [`EMBED_BATCH_MAX`]), so a cycle's cost stays bounded after an
/// import of thousands of entries or a change of model.
pub const EMBED_FILL_PER_CYCLE: usize = 32;

/// Entry ids a fill looks at per call to find the ones without a current vector (a bounded
/// walk that resumes where it stopped, so a cycle costs the same at 1,048,576 entries).
pub const EMBED_SCAN_PER_CYCLE: usize = 65_536;

/// After the embeddings endpoint failed, the first wait before it is tried again; doubled
/// after each further failure up to [`EMBED_BACKOFF_MAX_SECS`]. Search uses words only
/// meanwhile.
pub const EMBED_BACKOFF_BASE_SECS: u64 = 30;

/// Longest wait between tries of a failing embeddings endpoint.
pub const EMBED_BACKOFF_MAX_SECS: u64 = 1800;

/// Bytes of the vectors file one read takes during a vector search or a load (positioned reads
/// of whole records, so a search over 1,048,576 vectors never holds more than this). Small
/// enough that a piece is still in the CPU's cache when its dot products read it (the copy
/// out of the page cache is most of a search's time; 256 KiB measured a little faster than
/// 1 MiB and 64 KiB). Cost: one buffer, reserved when embeddings are configured.
pub const VECTORS_READ_BYTES: usize = 256 * 1024;

/// The vectors file is rewritten without its dead records (superseded, or of entries no
/// longer live) when they pass this percentage of its records (and
/// [`VECTORS_COMPACT_MIN_DEAD`]).
pub const VECTORS_COMPACT_DEAD_PERCENT: usize = 50;

/// Dead records below which the vectors file is never rewritten.
pub const VECTORS_COMPACT_MIN_DEAD: usize = 1024;

/// Candidates a vector search keeps before fusion: the best this many by cosine. Cost: 16
/// bytes each in a list reserved once.
pub const VECTORS_MAX_RESULTS: usize = RANK_MAX_RESULTS;
