//! `lkjagent json FILE [--pretty]`: validate and print a JSON document; a JSON checker and
//! formatter for air-gapped machines with no `jq` or Python.
//!
//! The file is read in [`JSON_CLI_CHUNK_BYTES`] slices and fed to the streaming parser, whose
//! events go straight to a [`Writer`] on a buffered stdout, so a document of any size is
//! formatted in bounded memory (no arena: the document is never held whole).
//!
//! A regular file is read twice: once to validate, once to print. So an invalid file prints
//! nothing on stdout, only the error line on stderr (exit 1). Standard input (`-`) and other
//! streams (a pipe such as `<(cmd)` or `/dev/stdin`) cannot be read twice; they are printed as
//! they are read, and if they turn out invalid the output so far stays on stdout, cut short,
//! and the error line and exit status say so.

use super::args::Args;
use crate::error::{Error, Result};
use crate::json::{Handler, Parser, Validate, Writer};
use crate::limits::{JSON_CLI_CHUNK_BYTES, JSON_CLI_OUTPUT_BYTES};
use core::fmt;
use std::io::{self, Read, Write};

const HELP: &str = "\
lkjagent json: validate and print a JSON document (RFC 8259)

usage: lkjagent json FILE [--pretty]
       lkjagent json - [--pretty]      (read standard input)

Prints the document compact (no whitespace), or with --pretty indented by two spaces, and
exits 0. Invalid JSON prints one error line on stderr with the byte offset, line and column,
and what was expected there, and exits 1. Documents of any size are handled in bounded memory.

options:
  --pretty      indent the output
  --help, -h    this help
";

/// Runs the subcommand.
pub fn run(mut args: Args) -> Result<i32> {
    if args.help() {
        print!("{}", HELP);
        return Ok(super::EXIT_OK);
    }
    let pretty = args.flag("--pretty");
    let path = args.positional();
    args.finish("json")?;
    let Some(path) = path else {
        bail!(Usage, "'lkjagent json' needs a FILE (or '-' for stdin); see 'lkjagent json --help'");
    };
    let mut chunk = vec![0u8; JSON_CLI_CHUNK_BYTES];
    let res = if path == "-" {
        format(&mut io::stdin().lock(), &mut chunk, pretty)
    } else if std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
        two_pass(&path, &mut chunk, pretty)
    } else {
        open(&path).and_then(|mut f| format(&mut f, &mut chunk, pretty))
    };
    res.map_err(|e| e.context(format_args!("{}", if path == "-" { "<stdin>" } else { &path })))?;
    Ok(super::EXIT_OK)
}

/// Validates the file, then prints it: nothing reaches stdout for an invalid file.
fn two_pass(path: &str, chunk: &mut [u8], pretty: bool) -> Result<()> {
    let mut parser = Parser::new();
    feed_all(&mut open(path)?, chunk, &mut parser, &mut Validate)?;
    format(&mut open(path)?, chunk, pretty)
}

fn open(path: &str) -> Result<std::fs::File> {
    std::fs::File::open(path).map_err(|e| err!(Io, "cannot open '{}': {}", path, e))
}

/// Feeds everything `input` holds to `parser`, one chunk at a time, then ends the document.
fn feed_all<H: Handler + ?Sized>(input: &mut dyn Read, chunk: &mut [u8], parser: &mut Parser, h: &mut H) -> Result<()> {
    loop {
        let n = match input.read(chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => bail!(Io, "cannot read the input: {}", e),
        };
        parser.feed(chunk.get(..n).unwrap_or(&[]), h)?;
    }
    parser.finish(h)
}

/// Parses `input` and prints it, compact or pretty, followed by a newline.
fn format(input: &mut dyn Read, chunk: &mut [u8], pretty: bool) -> Result<()> {
    let stdout = io::stdout();
    let mut sink = IoSink { out: io::BufWriter::with_capacity(JSON_CLI_OUTPUT_BYTES, stdout.lock()), error: None };
    let res = {
        let mut w = if pretty { Writer::pretty(&mut sink) } else { Writer::compact(&mut sink) };
        let mut parser = Parser::new();
        feed_all(input, chunk, &mut parser, &mut w)
    };
    let res = res.and_then(|()| sink.out.write_all(b"\n").map_err(write_error));
    // Whatever was printed is flushed, even before an error.
    let flushed = sink.out.flush().map_err(write_error);
    match sink.error.take() {
        // The writer reports a failed write as a full buffer; the I/O error says what happened.
        Some(e) => Err(write_error(e)),
        None => res.and(flushed),
    }
}

fn write_error(e: io::Error) -> Error {
    err!(Io, "cannot write to stdout: {}", e)
}

/// A `fmt::Write` onto an `io::Write` that keeps the I/O error (`fmt::Error` cannot carry it).
struct IoSink<W: Write> {
    out: W,
    error: Option<io::Error>,
}

impl<W: Write> fmt::Write for IoSink<W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.out.write_all(s.as_bytes()).map_err(|e| {
            self.error = Some(e);
            fmt::Error
        })
    }
}
