//! The agent: configuration, prompts, the state machine, paging and the cycle.
//!
//! - [`config`]: `config.json` read once into typed settings; [`checker`]: the reader that
//!   collects every problem with its key path; [`settings`]: the `agent` section;
//!   [`prompts`]: the prompt texts rendered once; [`segments`]: the optional kjxlkj
//!   `agent-prompt.json`; [`embed_config`]: `memory.embeddings` (recall by meaning).
//! - [`engine`]: the [`engine::Agent`] and its cycle, one pipeline (prompt and budget, the
//!   reply carried out); [`model`]: where replies come from, chosen once.
//! - [`actions`]: the memory actions against the working set and the store; [`logs`]: the
//!   rotating logs inside working memory; [`constrain`]: which constraint the server honours
//!   and the reply language of this cycle; [`product`]: the task's product so far, the names a
//!   new entry may not take, and the ask.
//! - [`run`]: the run loop (pacing, back-off, stop requests), shown through an observer.
//! - [`inbox`]: messages queued by `lkjagent send`; [`lock`]: one writer per data directory.
//! - [`audit`]: the size-capped per-cycle audit log; [`exchange`]: the optional exchange log
//!   and the recorded replies `lkjagent replay` runs again.

pub mod actions;
pub mod audit;
pub mod checker;
pub mod config;
pub mod constrain;
pub mod embed_config;
pub mod engine;
pub mod exchange;
pub mod inbox;
pub mod lock;
pub mod logs;
pub mod model;
pub mod product;
pub mod prompts;
pub mod run;
pub mod segments;
pub mod settings;
