//! The `lkjagent` command line: one subcommand per file, dispatched from here.
//!
//! - `run`: `run`, `demo` and `replay`, the agent loop with a status line per cycle.
//! - `status`: where the agent stands, read without changing anything.
//! - `memory`: list, show, query, search, stats, export, import and compact the memory; its
//!   groups `memory_search` (search), `memory_embed` (recall by meaning: `search --by`,
//!   `memory embed`), `memory_exchange` (export, import, compact), `memory_file` (reading
//!   memory.json without changing it) and `memory_options` (the options and output they
//!   share).
//! - `memory_upkeep`: the store's upkeep under `memory` (cleanup, retag, delete, archive,
//!   unarchive, restore, link, related) and the cold store's part of show and search.
//! - `send`: queue a message for the agent's next cycle.
//! - `check`: validate config, prompts, memory, store and the endpoint before a run.
//! - `parse_reply`: what the agent would take from a model reply, as JSON.
//! - `grammar`: the reply grammar (or JSON Schema) the agent would send now.
//! - `report`: one self-contained HTML page of what the agent did.
//! - `json`: validate and print a JSON document.
//! - `args`: the strict argument reader the subcommands share.
//! - `util`: what the subcommands share besides arguments (read-only store, lock, output).
//!
//! Exit codes (documented in docs/commands.md and in `lkjagent --help`):
//! 0 success; 1 runtime failure (server unreachable, invalid input file, I/O); 2 usage or
//! configuration error.

pub mod args;
pub mod check;
pub mod grammar;
pub mod json;
pub mod memory;
pub mod memory_embed;
mod memory_exchange;
mod memory_file;
mod memory_options;
mod memory_search;
mod memory_upkeep;
pub mod parse_reply;
pub mod report;
pub mod run;
pub mod send;
pub mod status;
pub mod util;

use crate::error::Result;
use args::Args;
use std::ffi::OsString;

/// Exit code for success.
pub const EXIT_OK: i32 = 0;
/// Exit code for a runtime failure.
pub const EXIT_FAILURE: i32 = 1;
/// Exit code for a usage or configuration error.
pub const EXIT_USAGE: i32 = 2;

const HELP: &str = "\
lkjagent: an autonomous agent with a tagged, paged memory, for local LLM servers

usage: lkjagent [--data DIR] <command> [options]

commands:
  run           run the agent loop against the configured LLM server
  demo          run the agent loop on the shipped replay script (no server needed)
  status        show state, iteration, memory use, last cycle and last error
  memory        list, show, query, search, stats, export, import, compact, embed, clean up the store
  send TEXT     queue a message for the agent's next cycle
  check         validate config, prompts, memory, store and the endpoint's health
  replay        run a recorded exchange log again, deterministically
  json FILE     validate and print a JSON file ('-' for stdin)
  parse-reply FILE
                show what the agent would take from a model reply ('-' for stdin)
  grammar       print the reply grammar (or JSON Schema) the agent would send now
  report        write one self-contained HTML page of what the agent did

options:
  --data DIR    data directory (default: $LKJAGENT_DATA, else 'data')
  --help, -h    help for lkjagent or for a command

exit codes: 0 success, 1 runtime failure, 2 usage or configuration error
";

/// Runs the command line and returns the process exit code.
pub fn main(argv: impl Iterator<Item = OsString>) -> i32 {
    match dispatch(argv) {
        Ok(code) => code,
        Err(e) => {
            e.print();
            e.code().exit_code()
        }
    }
}

fn dispatch(argv: impl Iterator<Item = OsString>) -> Result<i32> {
    let mut items = Vec::new();
    for a in argv.skip(1) {
        match a.into_string() {
            Ok(s) => items.push(s),
            Err(raw) => bail!(Usage, "argument {:?} is not valid UTF-8", raw),
        }
    }
    // The command is the first argument that is neither an option nor an option's value.
    let mut command_at = None;
    let mut i = 0;
    while let Some(item) = items.get(i) {
        if item == "--data" {
            i += 2;
            continue;
        }
        if !item.starts_with('-') {
            command_at = Some(i);
            break;
        }
        i += 1;
    }
    let Some(at) = command_at else {
        let mut args = Args::new(items);
        if args.help() {
            print!("{}", HELP);
            return Ok(EXIT_OK);
        }
        args.finish("")?;
        eprint!("{}", HELP);
        return Ok(EXIT_USAGE);
    };
    // Options before the command are global (`--data DIR`); after it they belong to the
    // command. `--data` is also taken after the command, except by `send`, whose words are the
    // user's message and are never read as options.
    let rest = items.split_off(at);
    let mut global = Args::new(items);
    let data_flag = global.value("--data")?;
    global.finish("")?;
    let mut rest = rest.into_iter();
    let command = rest.next().unwrap_or_default();
    let mut args = Args::new(rest.collect());
    let data_flag = match (data_flag, command.as_str()) {
        (Some(d), _) => Some(d),
        (None, "send") => None,
        (None, _) => args.value("--data")?,
    };
    let data = data_dir(data_flag);
    match command.as_str() {
        "json" => json::run(args),
        "parse-reply" => parse_reply::run(args),
        "grammar" => grammar::run(args, &data),
        "run" => run::run(args, &data),
        "demo" => run::demo(args, &data),
        "replay" => run::replay(args, &data),
        "help" => {
            print!("{}", HELP);
            Ok(EXIT_OK)
        }
        "status" => status::run(args, &data),
        "memory" => memory::run(args, &data),
        "send" => send::run(args, &data),
        "check" => check::run(args, &data),
        "report" => report::run(args, &data),
        other => bail!(Usage, "unknown command '{}'; see 'lkjagent --help'", other),
    }
}

/// The data directory: `--data DIR`, else `$LKJAGENT_DATA`, else `data`.
pub fn data_dir(flag: Option<String>) -> std::path::PathBuf {
    match flag {
        Some(d) => d.into(),
        None => match std::env::var_os("LKJAGENT_DATA") {
            Some(d) if !d.is_empty() => d.into(),
            _ => "data".into(),
        },
    }
}

/// Reads a whole input named on the command line: a file path, or `-` for stdin, up to
/// `max` bytes (a larger input is `CAPACITY_EXCEEDED`, not a partial read).
pub fn read_input(path: &str, max: usize) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut data = Vec::new();
    let limit = max as u64 + 1;
    let res = if path == "-" {
        std::io::stdin().lock().take(limit).read_to_end(&mut data)
    } else {
        match std::fs::File::open(path) {
            Ok(f) => f.take(limit).read_to_end(&mut data),
            Err(e) => bail!(Io, "cannot open '{}': {}", path, e),
        }
    };
    if let Err(e) = res {
        bail!(Io, "cannot read '{}': {}", path, e);
    }
    if data.len() > max {
        bail!(CapacityExceeded, "'{}' is larger than {} bytes", path, max);
    }
    Ok(data)
}
