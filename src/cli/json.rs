//! `lkjagent json FILE [--pretty]`: validate and print a JSON document; a JSON checker and
//! formatter for air-gapped machines with no `jq` or Python.
//!
//! The input is read in [`JSON_CLI_CHUNK_BYTES`] slices and fed to the streaming parser, whose
//! events go to a [`Writer`] into an output buffer of at most [`JSON_CLI_MAX_OUTPUT_BYTES`]
//! (no arena: the document is never held parsed). The buffer reaches stdout only once the
//! parser has read the whole input and found it valid, so an invalid input prints nothing on
//! stdout, only the error line on stderr (exit 1), whether it is a file, standard input (`-`)
//! or another stream (a pipe such as `<(cmd)` or `/dev/stdin`). Validation and printing are
//! one pass over the same bytes: a file that changes while it is read cannot pass one and fail
//! the other. An output that would pass the limit is a `CAPACITY_EXCEEDED` error, and prints
//! nothing either.

use super::args::Args;
use crate::error::Result;
use crate::fixed::FixedBuf;
use crate::json::{Handler, Parser, Writer};
use crate::limits::{JSON_CLI_CHUNK_BYTES, JSON_CLI_MAX_OUTPUT_BYTES};
use core::fmt;
use std::io::{self, Read, Write};

const HELP: &str = "\
lkjagent json: validate and print a JSON document (RFC 8259)

usage: lkjagent json FILE [--pretty]
       lkjagent json - [--pretty]      (read standard input)

Prints the document compact (no whitespace), or with --pretty indented by two spaces, and
exits 0. Invalid JSON prints nothing on stdout and one error line on stderr with the byte
offset, line and column, and what was expected there, and exits 1. The output is held until
the whole input is known valid, so it is bounded: past 64 MiB it is an error (exit 1) and
nothing is printed.

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
    let mut out = FixedBuf::with_capacity("json output (limits::JSON_CLI_MAX_OUTPUT_BYTES)", JSON_CLI_MAX_OUTPUT_BYTES);
    let res = if path == "-" {
        format(&mut io::stdin().lock(), &mut chunk, &mut out, pretty)
    } else {
        open(&path).and_then(|mut f| format(&mut f, &mut chunk, &mut out, pretty))
    };
    res.map_err(|e| e.context(format_args!("{}", if path == "-" { "<stdin>" } else { &path })))?;
    let mut stdout = io::stdout().lock();
    stdout
        .write_all(out.as_slice())
        .and_then(|()| stdout.flush())
        .map_err(|e| err!(Io, "cannot write to stdout: {}", e))?;
    Ok(super::EXIT_OK)
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
        // `Read` promises `n <= chunk.len()`; a reader that broke it is an error, not a
        // chunk read as empty.
        let Some(read) = chunk.get(..n) else {
            bail!(Io, "the input reported {} bytes read into a buffer of {}", n, chunk.len())
        };
        parser.feed(read, h)?;
    }
    parser.finish(h)
}

/// Parses `input` and formats it into `out`, compact or pretty, followed by a newline. `out`
/// holds a valid document only if this returns `Ok`.
fn format(input: &mut dyn Read, chunk: &mut [u8], out: &mut FixedBuf, pretty: bool) -> Result<()> {
    let mut sink = Sink { out, full: false };
    let res = {
        let sink_dyn: &mut dyn fmt::Write = &mut sink;
        let mut w = if pretty { Writer::pretty(sink_dyn) } else { Writer::compact(sink_dyn) };
        let mut parser = Parser::new();
        feed_all(input, chunk, &mut parser, &mut w)
    };
    if res.is_ok() {
        let _ = fmt::Write::write_str(&mut sink, "\n"); // a refusal sets `full`
    }
    if sink.full {
        bail!(
            CapacityExceeded,
            "the formatted output passes {} MiB (limits::JSON_CLI_MAX_OUTPUT_BYTES), so nothing was printed; \
             try without --pretty, or split the document",
            JSON_CLI_MAX_OUTPUT_BYTES >> 20
        );
    }
    res
}

/// The output buffer as the writer's sink, remembering that it refused a write (the writer
/// reports any refusal as a full buffer; this says it was this one).
struct Sink<'a> {
    out: &'a mut FixedBuf,
    full: bool,
}

impl fmt::Write for Sink<'_> {
    fn write_char(&mut self, c: char) -> core::fmt::Result {
        crate::bytes::write_char(self, c)
    }

    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.out.append_inline(s.as_bytes()).map_err(|_| {
            self.full = true;
            fmt::Error
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::Validate;

    /// A reader that claims one byte more than its buffer holds.
    struct Overclaims;

    impl Read for Overclaims {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            Ok(buf.len() + 1)
        }
    }

    #[test]
    fn a_reader_that_overclaims_is_an_error_not_an_empty_chunk() {
        let mut chunk = [0u8; 8];
        let mut parser = Parser::new();
        let e = feed_all(&mut Overclaims, &mut chunk, &mut parser, &mut Validate).unwrap_err();
        assert_eq!(e.code(), crate::error::Code::Io);
        assert!(e.message().contains("9 bytes read into a buffer of 8"), "{e}");
        let mut parser = Parser::new();
        feed_all(&mut &b"[1, \"two\"]"[..], &mut chunk, &mut parser, &mut Validate).unwrap();
    }
}
