//! The build script: what the binary's size asks for that no profile key or `.cargo/config.toml`
//! can give to the binary alone (docs/measurements.md, "Paying back").
//!
//! A release build on Linux links the binary without unwind tables (`.eh_frame`, 102 KB, and its
//! index `.eh_frame_hdr`, 16 KB: 6.6% of the stripped binary). The release profile aborts on
//! panic, so nothing unwinds; the tables served only the addresses a panic prints under
//! `RUST_BACKTRACE=full` (the stripped binary has no symbols to name them). A panic still prints
//! its message and source location and aborts. Every function has a table although nothing
//! unwinds because std's line tables, merged in by LTO, make LLVM describe each frame for a
//! debugger, and std's own unwinding functions put those descriptions in `.eh_frame`
//! (`-C force-unwind-tables=no` changes nothing). Test and dev builds keep their tables: their
//! harness unwinds.

use std::env;
use std::fs;
use std::path::PathBuf;

/// A linker script that adds one rule to the linker's default layout: drop `.eh_frame`.
/// GNU ld and lld both read it (`INSERT` keeps their default script).
const DROP_UNWIND_TABLES: &str = "SECTIONS { /DISCARD/ : { *(.eh_frame) } } INSERT AFTER .text;\n";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let linux = env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let release = env::var("PROFILE").is_ok_and(|p| p == "release");
    let Some(out) = env::var_os("OUT_DIR").map(PathBuf::from) else {
        return;
    };
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
}
