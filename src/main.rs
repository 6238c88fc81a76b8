//! The `lkjagent` binary: all behaviour lives in the library (`lkjagent::cli`), so tests and
//! benchmarks run the same code.

fn main() {
    std::process::exit(lkjagent::cli::main(std::env::args_os()));
}
