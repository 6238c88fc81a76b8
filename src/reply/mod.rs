//! The reply protocol: from a model's reply to the list of instructions the agent carries out,
//! the problems found, and the feedback for the model (docs/design.md §5).
//!
//! - [`clean`]: what is removed before parsing (`<think>` blocks, harmony analysis channels,
//!   invalid UTF-8).
//! - [`read`]: the [`Reader`] and its [`Interpretation`] (every accepted dialect, one list).
//! - [`json_reply`]: the JSON dialect a JSON Schema constrains a server to, read as the tags it
//!   stands for.
//! - [`instruction`]: [`Instruction`], [`Action`], [`ActionKind`].
//! - [`problem`]: [`Problem`] and the stable [`ProblemCode`]s.
//! - [`feedback`]: the message for the model after a reply it must correct.
//! - [`report`]: an interpretation as JSON (`parse-reply`, the audit log).
//!
//! ```
//! let mut reader = lkjagent::reply::Reader::new(); // reserved once
//! let it = reader.read(b"<agent><next_state>commanding</next_state></agent>", 1);
//! assert_eq!(it.next_state(), Some("commanding"));
//! ```

pub mod clean;
pub mod feedback;
pub mod instruction;
pub mod json_reply;
pub mod problem;
pub mod read;
pub mod report;

pub use clean::CleanReport;
pub use feedback::{write_example, write_feedback};
pub use instruction::{Action, ActionKind, Form, Instruction};
pub use problem::{Problem, ProblemCode, Severity};
pub use read::{Dialect, Interpretation, Reader};
