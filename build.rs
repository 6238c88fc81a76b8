//! The build script: two things the binary's size asks for that no profile key or
//! `.cargo/config.toml` can give (docs/measurements.md, "Paying back").
//!
//! 1. The names of the source files, for `src/error/site.rs`: an error's site names its file by
//!    where the name lies in one string, so that the 750 sites hold no pointer for the loader to
//!    relocate. Written to `$OUT_DIR/source_files.rs`: every `.rs` file under `src/`, by the path
//!    `file!()` gives it, sorted.
//! 2. A release build on Linux links the binary without unwind tables (`.eh_frame`, 102 KB, and
//!    its index `.eh_frame_hdr`, 16 KB: 6.6% of the stripped binary). The release profile aborts
//!    on panic, so nothing unwinds; the tables served only the addresses a panic prints under
//!    `RUST_BACKTRACE=full` (the stripped binary has no symbols to name them). A panic still
//!    prints its message and source location and aborts. Every function has a table although
//!    nothing unwinds because std's line tables, merged in by LTO, make LLVM describe each frame
//!    for a debugger, and std's own unwinding functions put those descriptions in `.eh_frame`
//!    (`-C force-unwind-tables=no` changes nothing). The language-specific tables the unwinder
//!    would read beside them (`.gcc_except_table`, 6.5 KB, the cleanups of std's code, built to
//!    unwind) go too: only `.eh_frame` points at them. Test and dev builds keep their tables:
//!    their harness unwinds.

use std::env;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A linker script that adds one rule to the linker's default layout: drop `.eh_frame` and the
/// tables only it points at.
/// GNU ld and lld both read it (`INSERT` keeps their default script).
const DROP_UNWIND_TABLES: &str =
    "SECTIONS { /DISCARD/ : { *(.eh_frame) *(.gcc_except_table .gcc_except_table.*) } } INSERT AFTER .text;\n";

fn main() -> ExitCode {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src");
    let (Some(out), Some(root)) = (env::var_os("OUT_DIR"), env::var_os("CARGO_MANIFEST_DIR")) else {
        eprintln!("build.rs: OUT_DIR and CARGO_MANIFEST_DIR must be set (run through cargo)");
        return ExitCode::FAILURE;
    };
    let (out, root) = (PathBuf::from(out), PathBuf::from(root));
    if let Err(e) = write_source_files(&root, &out.join("source_files.rs")) {
        eprintln!("build.rs: writing the source file names: {e}");
        return ExitCode::FAILURE;
    }
    let linux = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    if linux && release {
        let script = out.join("drop-unwind-tables.ld");
        if fs::write(&script, DROP_UNWIND_TABLES).is_ok() {
            println!("cargo:rustc-link-arg-bin=lkjagent=-Wl,-T,{}", script.display());
            println!("cargo:rustc-link-arg-bin=lkjagent=-Wl,--no-eh-frame-hdr");
        } else {
            // Without the script the binary is linked as usual, with its tables.
            println!("cargo:warning=could not write {}; the binary keeps its unwind tables", script.display());
        }
    }
    ExitCode::SUCCESS
}

/// Writes `NAMES` (the names joined, no separator) and `SPANS` (each name's start and length
/// in it, sorted by name) for `src/error/site.rs`.
fn write_source_files(root: &Path, to: &Path) -> io::Result<()> {
    let mut names = Vec::new();
    collect(root, Path::new("src"), &mut names)?;
    names.sort();
    names.dedup();
    let mut joined = String::new();
    let mut spans = String::new();
    for name in &names {
        let (at, len) = (u16::try_from(joined.len()), u16::try_from(name.len()));
        let (Ok(at), Ok(len)) = (at, len) else {
            return Err(io::Error::other("the source file names pass 64 KiB; widen Site's span"));
        };
        spans.push_str(&format!("({at}, {len}), "));
        joined.push_str(name);
    }
    let text = format!(
        "/// Every source file's name under `src/`, joined (written by `build.rs`).\n\
         const NAMES: &str = {joined:?};\n\
         /// Where each name lies in [`NAMES`], sorted by name.\n\
         const SPANS: &[(u16, u16)] = &[{spans}];\n"
    );
    // Rewritten only when it changes, so that an unchanged list does not rebuild the crate.
    if fs::read_to_string(to).is_ok_and(|old| old == text) {
        return Ok(());
    }
    fs::write(to, text)
}

/// Adds the `.rs` files under `root/dir` to `names`, as `dir/.../name.rs` with `/`.
fn collect(root: &Path, dir: &Path, names: &mut Vec<String>) -> io::Result<()> {
    for entry in fs::read_dir(root.join(dir))? {
        let entry = entry?;
        let path = dir.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            collect(root, &path, names)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            let parts: Vec<String> = path.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            names.push(parts.join("/"));
        }
    }
    Ok(())
}
