//! `lkjagent parse-reply FILE|- [--max-actions N] [--state STATE]`: print, as JSON, what the
//! agent would take from a model reply: its instructions and the problems found, so users
//! tuning prompts for their model see exactly why a reply was (not) understood.

use super::args::Args;
use crate::error::Result;
use crate::json::Writer;
use crate::limits::{REPLY_DEFAULT_MAX_ACTIONS, REPLY_MAX_BYTES};
use crate::reply::{report, write_feedback, Reader};

const HELP: &str = "\
lkjagent parse-reply: show what the agent would take from a model reply

usage: lkjagent parse-reply FILE [--max-actions N] [--state STATE]
       lkjagent parse-reply - ...        (read standard input)

FILE holds the model's message content as the server returned it (<think> blocks, code
fences, prose and all). Prints one JSON object: the dialect recognised, the instructions in
order (next_state, think_log, evaluation_log, state_delete, action with type, tags, value...),
and the problems found, each with a stable code, its severity, the byte offset in FILE, and
what was found versus expected. Offsets count bytes of FILE from 0.

options:
  --max-actions N   actions taken from one reply (default 1, as the agent's default)
  --state STATE     also print the feedback the model would get in STATE (thinking,
                    commanding, evaluating, paging)
  --help, -h        this help

exit codes: 0 at least one instruction was found, 1 none (or FILE unreadable), 2 usage
";

/// Runs the subcommand.
pub fn run(mut args: Args) -> Result<i32> {
    if args.help() {
        print!("{}", HELP);
        return Ok(super::EXIT_OK);
    }
    let max_actions = match args.value("--max-actions")? {
        Some(v) => match crate::bytes::parse_usize(&v) {
            Some(n) if n >= 1 => n,
            _ => bail!(Usage, "--max-actions needs a whole number of at least 1, not '{}'", v),
        },
        None => REPLY_DEFAULT_MAX_ACTIONS,
    };
    let state = args.value("--state")?;
    let path = args.positional();
    args.finish("parse-reply")?;
    let Some(path) = path else {
        bail!(Usage, "'lkjagent parse-reply' needs a FILE (or '-' for stdin); see 'lkjagent parse-reply --help'");
    };
    // One byte more than the reader accepts, so an oversized reply is reported by the reader
    // (REPLY_TOO_LARGE, as the agent would see it) rather than refused here.
    let data = match super::read_input(&path, REPLY_MAX_BYTES + 1) {
        Ok(d) => d,
        Err(e) if e.code() == crate::error::Code::CapacityExceeded => {
            bail!(
                CapacityExceeded,
                "'{}' is larger than {} bytes, the most a reply may be (REPLY_MAX_BYTES)",
                path,
                REPLY_MAX_BYTES
            )
        }
        Err(e) => return Err(e),
    };
    let mut reader = Reader::new();
    let it = reader.read(&data, max_actions);
    let mut out = String::new();
    let mut w = Writer::pretty(&mut out as &mut dyn core::fmt::Write);
    w.begin_object()?;
    report::write_members(&mut w, &it, max_actions)?;
    if let Some(state) = state {
        let mut feedback = String::new();
        write_feedback(&mut feedback, &it, &state).map_err(|_| err!(CapacityExceeded, "feedback text did not fit"))?;
        w.key("state")?;
        w.string(&state)?;
        w.key("feedback")?;
        w.string(&feedback)?;
    }
    w.end_object()?;
    // Written, not printed: a reader that closed the pipe early is an error, not a panic.
    let mut stdout = std::io::stdout().lock();
    super::util::say(&mut stdout, format_args!("{}", out))?;
    std::io::Write::flush(&mut stdout).map_err(super::util::write_error)?;
    Ok(if it.is_empty() { super::EXIT_FAILURE } else { super::EXIT_OK })
}
