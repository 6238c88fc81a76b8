//! The agent: configuration, prompts, the state machine, paging and the loop.
//!
//! - [`check`]: reading typed settings with every problem collected (start-up only).
//! - [`settings`]: the `agent` section of `config.json`.
//! - [`segments`]: the optional kjxlkj `agent-prompt.json`.
//! - [`inbox`]: messages queued by `lkjagent send`.
//! - [`audit`]: the size-capped per-cycle audit log.

pub mod actions;
pub mod audit;
pub mod check;
pub mod config;
pub mod constrain;
pub mod engine;
pub mod exchange;
pub mod inbox;
pub mod lock;
pub mod logs;
pub mod model;
pub mod prompts;
pub mod segments;
pub mod settings;
