//! `lkjagent grammar [--state S] [--format gbnf|json-schema] [--list-states]`: print the reply
//! grammar (or JSON Schema) the agent would send now for a state, built from the data
//! directory's configuration and live memory exactly as a cycle builds it, so users can read
//! it and reuse it with other tools. It only looks: nothing is written.

use super::args::Args;
use super::util::{open_store_read_only, say, write_all, write_error, StoreRead};
use crate::agent::config;
use crate::agent::constrain::Constrainer;
use crate::agent::engine::PINNED_KEYS;
use crate::agent::product::Product;
use crate::error::Result;
use crate::grammar::Mode;
use crate::json::Document;
use crate::limits::{MEMORY_FILE_MAX_BYTES, MEMORY_FILE_MAX_NODES};
use crate::memory::file::{decode_bytes, MemoryFile, MEMORY_FILE};
use std::io::Write as _;
use std::path::Path;

const HELP: &str = "\
lkjagent grammar: print the reply grammar the agent would send now

usage: lkjagent [--data DIR] grammar [--state STATE] [--format gbnf|json-schema]
       lkjagent [--data DIR] grammar --list-states

Built from config.json (the state's prompt: which states it may name, its log, its actions;
llm.max_tokens and llm.thinks bound every length) and the live memory (the working-memory keys
a working_memory_remove may name, the newest stored keys a storage_load may name), as a cycle
builds it. GBNF is what llama.cpp, llama-cpp-python and vLLM are sent; the JSON Schema is what
Ollama, LM Studio and OpenAI are sent, for replies in the JSON dialect.

options:
  --state STATE     the state (default: the current one in memory.json)
  --format F        gbnf (default) or json-schema
  --list-states     print the configured states, one per line
  --help, -h        this help

exit codes: 0 printed, 1 a file could not be read, 2 usage or configuration error
";

/// Runs the subcommand.
pub fn run(mut args: Args, data: &Path) -> Result<i32> {
    if args.help() {
        print!("{}", HELP);
        return Ok(super::EXIT_OK);
    }
    let state = args.value("--state")?;
    let format = args.value("--format")?;
    let list = args.flag("--list-states");
    args.finish("grammar")?;
    let mode = match format.as_deref() {
        None | Some("gbnf") => Mode::Grammar,
        Some("json-schema") | Some("json_schema") => Mode::JsonSchema,
        Some(other) => bail!(Usage, "--format is gbnf or json-schema, not '{}'", other),
    };
    let cfg = config::load(data)?;
    if list {
        let mut out = std::io::stdout().lock();
        for s in &cfg.agent.states {
            say(&mut out, format_args!("{}", s))?;
        }
        out.flush().map_err(write_error)?;
        return Ok(super::EXIT_OK);
    }
    let memory = read_memory(data)?;
    let state = state.unwrap_or_else(|| memory.state.as_str().to_string());
    if !cfg.agent.is_state(&state) {
        bail!(Usage, "'{}' is not a configured state (one of: {})", state, cfg.agent.states.join(", "));
    }
    let mut store = match open_store_read_only(data)? {
        StoreRead::Open(s) => Some(s),
        _ => None,
    };
    let mut c = Constrainer::new(&cfg.llm, 0);
    let mut product = Product::new();
    if let Some(saved) = memory.agent.get(crate::agent::product::STATE_META_KEY) {
        product.restore(saved);
    }
    product.refresh(&memory.working, store.as_deref());
    // The view is rendered (and thrown away) for what the ask takes from it: the subjects an
    // outline continues from.
    if let Some(s) = store.as_deref_mut() {
        let task = crate::memory::key::normalize(crate::agent::product::TASK_KEY)
            .ok()
            .and_then(|k| memory.working.get(&k))
            .unwrap_or("");
        let mut view = crate::fixed::FixedBuf::with_capacity("product view", crate::limits::PROMPT_MAX_BYTES);
        product.render(task, s, &mut view, crate::limits::PRODUCT_VIEW_MAX_BYTES)?;
    }
    c.prepare(
        Some(mode),
        cfg.prompts.shape(&state),
        &cfg.agent.states,
        cfg.agent.max_actions_per_cycle,
        &memory.working,
        store.as_deref(),
        &PINNED_KEYS,
        &cfg.agent.log_prefixes(),
        Some(&product).filter(|_| state != crate::states::PAGING),
    )?;
    // Written, not printed: a reader that closed the pipe early is an error, not a panic.
    let mut out = std::io::stdout().lock();
    write_all(&mut out, c.text())?;
    if mode == Mode::JsonSchema {
        write_all(&mut out, "\n")?;
    }
    out.flush().map_err(write_error)?;
    Ok(super::EXIT_OK)
}

/// `memory.json` as the agent would read it (a fresh memory when there is none).
fn read_memory(data: &Path) -> Result<MemoryFile> {
    let path = data.join(MEMORY_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) if b.len() <= MEMORY_FILE_MAX_BYTES => b,
        Ok(_) => bail!(CapacityExceeded, "{} is larger than MEMORY_FILE_MAX_BYTES", path.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(MemoryFile::new()),
        Err(e) => bail!(Io, "cannot read {}: {}", path.display(), e),
    };
    let mut doc = Document::with_capacity(MEMORY_FILE_MAX_NODES, MEMORY_FILE_MAX_BYTES);
    let (m, report) = decode_bytes(&mut doc, &bytes, 0);
    if let Some(e) = report.problems.into_iter().next() {
        return Err(e.context(format_args!("{}", path.display())));
    }
    Ok(m)
}
