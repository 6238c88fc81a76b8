//! `lkjagent parse-reply FILE`: print, as JSON, what the agent would take from a model reply.

use super::args::Args;
use crate::error::Result;

/// Runs the subcommand.
pub fn run(args: Args) -> Result<i32> {
    args.finish("parse-reply")?;
    bail!(Usage, "'lkjagent parse-reply' is not built yet")
}
