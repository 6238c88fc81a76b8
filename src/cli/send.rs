//! `lkjagent send TEXT...`: queue a message for the agent, which takes it at the start of its
//! next cycle as the working memory's `user_request` (see `agent::inbox`).
//!
//! The words are joined by single spaces (as a shell would have split them); `-` alone reads
//! the whole message from standard input, so multi-line text and text with shell metacharacters
//! travel unchanged. The message is on disk (appended and fsynced) before `send` says so.

use super::args::Args;
use super::util::{read_limited, say, write_all};
use crate::error::Result;
use crate::limits::REQUEST_MAX_BYTES;
use std::io::{self, Read, Write};
use std::path::Path;

const HELP: &str = "\
lkjagent send: queue a message for the agent's next cycle

usage: lkjagent [--data DIR] send TEXT...
       lkjagent [--data DIR] send -          (read the message from standard input)

The words are joined by spaces (a message whose first word starts with '-' needs the stdin
form). The agent takes waiting messages at the start of its next
cycle and puts them into working memory as user_request. The message is on disk when send
returns; at most 8192 bytes (limits::REQUEST_MAX_BYTES).

options:
  --help, -h    this help

exit codes: 0 queued, 1 the inbox could not be written, 2 usage error (no text, empty text)
";

/// Runs `lkjagent send` on the process's stdin and stdout.
pub fn run(args: Args, data: &Path) -> Result<i32> {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    exec(args, data, &mut stdin.lock(), &mut out)
}

/// Runs `lkjagent send` with the given input (for `-`) and output.
pub fn exec(mut args: Args, data: &Path, input: &mut dyn Read, out: &mut dyn Write) -> Result<i32> {
    if args.help() {
        write_all(out, HELP)?;
        return Ok(super::EXIT_OK);
    }
    let mut words: Vec<String> = Vec::new();
    while let Some(w) = args.positional() {
        words.push(w);
    }
    args.finish("send")?;
    let text = match words.as_slice() {
        [] => {
            bail!(Usage, "'lkjagent send' needs the message (or '-' to read it from stdin); see 'lkjagent send --help'")
        }
        [only] if only == "-" => {
            // Room for surrounding whitespace, which `inbox::send` trims; the size check on
            // the trimmed text is its own.
            let bytes = read_limited("-", input, REQUEST_MAX_BYTES + 4096)?;
            match String::from_utf8(bytes) {
                Ok(s) => s,
                Err(e) => bail!(Usage, "the message on stdin is not UTF-8 (byte {})", e.utf8_error().valid_up_to()),
            }
        }
        many => many.join(" "),
    };
    crate::agent::inbox::send(data, &text, crate::clock::now_unix())?;
    say(out, format_args!("queued ({} bytes); the agent takes it at its next cycle", text.trim().len()))?;
    Ok(super::EXIT_OK)
}
