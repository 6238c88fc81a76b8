//! `lkjagent json FILE [--pretty]`: validate and print a JSON document.

use super::args::Args;
use crate::error::Result;

/// Runs the subcommand.
pub fn run(args: Args) -> Result<i32> {
    args.finish("json")?;
    bail!(Usage, "'lkjagent json' is not built yet")
}
