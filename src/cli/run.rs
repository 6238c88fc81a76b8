//! `lkjagent run`, `demo` and `replay`: the agent loop, with one status line per cycle.
//!
//! - `run`: against the configured server. A server that is down is reported once per failed
//!   cycle with the reason and the next retry; retries back off (1 s doubling to 60 s) and the
//!   loop recovers by itself when the server comes back. Failed cycles do not count toward
//!   `agent.iterate.max_iterations`.
//! - `demo`: the same loop on the shipped replay script `data/demo.jsonl`, in a fresh copy of
//!   the data directory (`<data>/demo-run/`), so the user's own memory is never touched.
//! - `replay`: runs a recorded exchange log (`logs/exchange-<run>/`) again from its start
//!   snapshot, into a new directory, and says whether `memory.json` came out byte for byte.
//!
//! SIGINT/SIGTERM: the first lets the current cycle finish (a wait for the model is abandoned;
//! nothing half-applied is ever persisted), persists, and exits 0; the second exits at once,
//! which is safe because every write is atomic.

use super::args::Args;
use crate::agent::config::{self, Config};
use crate::agent::engine::{Agent, CycleReport, Model};
use crate::agent::exchange::Recorded;
use crate::agent::run::{End, Observer};
use crate::error::Result;
use crate::llm::{self, ProviderKind};
use crate::signal;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Writes one line of the loop's output to stdout. A stdout that is gone (`lkjagent run |
/// head -3` once `head` has its lines) is said once on stderr and stops the loop as a first
/// signal does, after the cycle is persisted: a print would panic, and abort mid-run.
macro_rules! show {
    ($($arg:tt)*) => {
        show_line(format_args!($($arg)*), "\n")
    };
}

/// [`show!`] without the line's end (a terminal's `\r` and erase).
macro_rules! show_raw {
    ($($arg:tt)*) => {
        show_line(format_args!($($arg)*), "")
    };
}

/// See [`show!`].
fn show_line(args: core::fmt::Arguments<'_>, end: &str) {
    use std::sync::atomic::{AtomicBool, Ordering};
    static GONE: AtomicBool = AtomicBool::new(false);
    if GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    let written = out.write_fmt(args).and_then(|()| out.write_all(end.as_bytes())).and_then(|()| out.flush());
    if let Err(e) = written {
        GONE.store(true, Ordering::Relaxed);
        let msg = "lkjagent: cannot write to stdout; stopping after this cycle, with memory persisted";
        let _ = writeln!(std::io::stderr(), "{msg} ({e})");
        signal::request_stop();
    }
}

const RUN_HELP: &str = "\
usage: lkjagent [--data DIR] run [--max-iterations N] [--exchange-log]

Runs the agent loop against the LLM server in DIR/config.json (llm.endpoint), printing one
status line per cycle. Stops after agent.iterate.max_iterations cycles (-1: never), or on
SIGINT/SIGTERM (the cycle finishes, memory is persisted, exit 0; a second signal exits at once).

  --max-iterations N   override agent.iterate.max_iterations (-1 runs forever)
  --exchange-log       record every prompt and reply in DIR/logs/exchange-<run>/ for 'replay'
";

/// Tokens of working memory the demo allows before paging (its paging limit is the prompt's
/// fixed part plus this): more than the demo's ordinary cycles use, less than they use once the
/// script's long note is in working memory.
const DEMO_WORKING_MEMORY_TOKENS: u64 = 480;

/// The start-up probe's connect timeout, in milliseconds.
const PROBE_CONNECT_TIMEOUT_MS: u64 = 3_000;

/// The start-up probe's read timeout, in milliseconds.
const PROBE_READ_TIMEOUT_MS: u64 = 10_000;

const DEMO_HELP: &str = "\
usage: lkjagent [--data DIR] demo

Runs the real agent loop on the shipped script DIR/demo.jsonl instead of a server: every state
and action, paging, and a malformed reply with its feedback. It works in a fresh copy,
DIR/demo-run/, so your own memory is not touched.
";

const REPLAY_HELP: &str = "\
usage: lkjagent [--data DIR] replay EXCHANGE_DIR [--into DIR2]

Runs a run recorded with 'run --exchange-log' again, from the state it started in, with the
same replies and clock, into DIR2 (default: EXCHANGE_DIR/replayed). Prints whether the final
memory.json is byte for byte the one the recorded run left, when that file is given with
--expect FILE.
";

/// `lkjagent run`.
pub fn run(mut args: Args, data: &Path) -> Result<i32> {
    if args.help() {
        show_raw!("{}", RUN_HELP);
        return Ok(0);
    }
    let max = args.value("--max-iterations")?;
    let exchange = args.flag("--exchange-log");
    args.finish("run")?;
    let mut config = config::load(data)?;
    if let Some(m) = max {
        config.agent.max_iterations = match crate::bytes::parse_i64(m.trim()) {
            Some(n) if n == -1 || n >= 1 => n,
            _ => bail!(Usage, "--max-iterations takes -1 or a count >= 1, not '{}'", m),
        };
    }
    let client = llm::Client::new(&config.llm)?;
    signal::install();
    if config.llm.provider != ProviderKind::Replay {
        probe(&config);
    }
    let model = Model::Client(Box::new(client));
    let agent = Agent::open(data, config, model, exchange)?;
    if let Some(dir) = agent.exchange_dir() {
        show!("recording the exchange in {}", dir.display());
    }
    drive(agent)
}

/// `lkjagent demo`.
pub fn demo(mut args: Args, data: &Path) -> Result<i32> {
    if args.help() {
        show_raw!("{}", DEMO_HELP);
        return Ok(0);
    }
    args.finish("demo")?;
    let script = data.join("demo.jsonl");
    if !script.is_file() {
        bail!(NotFound, "the demo script {} is missing; it ships in the repository's data/", script.display());
    }
    let run_dir = data.join("demo-run");
    fresh_dir(&run_dir, "demo")?;
    for name in ["config.json", "memory.json", "agent-prompt.json"] {
        let from = data.join(name);
        if from.is_file() {
            std::fs::copy(&from, run_dir.join(name)).map_err(|e| err!(Io, "cannot copy {}: {}", from.display(), e))?;
        }
    }
    let mut config = config::load(&run_dir)?;
    config.llm.provider = ProviderKind::Replay;
    config.llm.replay_path = Some(script);
    config.agent.max_iterations = -1;
    config.agent.invalid_reply_backoff_ms = config.agent.invalid_reply_backoff_ms.min(500);
    // The demo's memory is small: lower the limits so paging by size shows within a few
    // cycles (the scripted long note passes it).
    let head = (config.prompts.head().len() as f64 / crate::agent::engine::BYTES_PER_TOKEN).ceil() as u64;
    config.agent.paging_limit.enable = true;
    config.agent.paging_limit.max_tokens = head + DEMO_WORKING_MEMORY_TOKENS;
    config.agent.hard_limit.enable = true;
    config.agent.hard_limit.max_tokens = config.agent.hard_limit.max_tokens.max(head + 4 * DEMO_WORKING_MEMORY_TOKENS);
    let client = llm::Client::new(&config.llm)?;
    signal::install();
    show!("demo: replaying {} in {}", data.join("demo.jsonl").display(), run_dir.display());
    let agent = Agent::open(&run_dir, config, Model::Client(Box::new(client)), false)?;
    let code = drive(agent)?;
    show!(
        "demo: done. Look at {}/memory.json, {}/store.log and {}/logs/audit.jsonl",
        run_dir.display(),
        run_dir.display(),
        run_dir.display()
    );
    Ok(code)
}

/// `lkjagent replay`.
pub fn replay(mut args: Args, _data: &Path) -> Result<i32> {
    if args.help() {
        show_raw!("{}", REPLAY_HELP);
        return Ok(0);
    }
    let into = args.value("--into")?;
    let expect = args.value("--expect")?;
    let Some(src) = args.positional() else {
        bail!(Usage, "replay needs the exchange directory (DIR/logs/exchange-<run>); see 'lkjagent replay --help'");
    };
    args.finish("replay")?;
    let src = PathBuf::from(src);
    let log = src.join("exchange.jsonl");
    let start = src.join("start");
    if !log.is_file() || !start.is_dir() {
        bail!(NotFound, "{} holds no exchange.jsonl and start/; record one with 'run --exchange-log'", src.display());
    }
    let target = into.map(PathBuf::from).unwrap_or_else(|| src.join("replayed"));
    fresh_dir(&target, "replay")?;
    for entry in std::fs::read_dir(&start).map_err(|e| err!(Io, "cannot list {}: {}", start.display(), e))? {
        let entry = entry.map_err(|e| err!(Io, "cannot list {}: {}", start.display(), e))?;
        let to = target.join(entry.file_name());
        std::fs::copy(entry.path(), &to).map_err(|e| err!(Io, "cannot copy to {}: {}", to.display(), e))?;
    }
    let mut config = config::load(&target)?;
    // The recorded log decides how many cycles there are.
    config.agent.max_iterations = -1;
    config.agent.invalid_reply_backoff_ms = 0;
    config.agent.delay_ms = 0;
    let recorded = Recorded::open(&log)?;
    signal::install();
    let opened = crate::agent::exchange::opened_at(&src).unwrap_or_else(crate::clock::now_unix);
    let agent = Agent::open_at(&target, config, Model::Recorded(Box::new(recorded)), false, opened)?;
    let code = drive(agent)?;
    let produced = target.join(crate::memory::file::MEMORY_FILE);
    show!("replay: memory.json is {}", produced.display());
    if let Some(expect) = expect {
        let a = std::fs::read(&produced).map_err(|e| err!(Io, "cannot read {}: {}", produced.display(), e))?;
        let b = std::fs::read(&expect).map_err(|e| err!(Io, "cannot read {}: {}", expect, e))?;
        if a == b {
            show!("replay: identical to {} ({} bytes)", expect, a.len());
        } else {
            show!("replay: DIFFERS from {} ({} vs {} bytes)", expect, a.len(), b.len());
            return Ok(1);
        }
    }
    Ok(code)
}

/// Makes `dir` an empty directory this command owns: created if missing; if it exists it must
/// carry the marker file of an earlier run of the same command (so nothing else is deleted).
fn fresh_dir(dir: &Path, what: &str) -> Result<()> {
    let marker = dir.join(".lkjagent-scratch");
    if dir.exists() {
        if !marker.is_file() {
            bail!(Usage, "{} exists and was not made by 'lkjagent {}'; choose another directory", dir.display(), what);
        }
        std::fs::remove_dir_all(dir).map_err(|e| err!(Io, "cannot clear {}: {}", dir.display(), e))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| err!(Io, "cannot create {}: {}", dir.display(), e))?;
    std::fs::write(&marker, format!("made by 'lkjagent {}'; safe to delete\n", what))
        .map_err(|e| err!(Io, "cannot write {}: {}", marker.display(), e))
}

/// Asks the server whether it is there, and says so; never fatal (the loop retries). The probe
/// uses its own client with short timeouts and no retries, so a server that accepts and hangs
/// delays the first cycle by seconds, not by the chat's read timeout.
fn probe(config: &Config) {
    let mut settings = config.llm.clone();
    settings.connect_timeout = settings.connect_timeout.min(Duration::from_millis(PROBE_CONNECT_TIMEOUT_MS));
    settings.read_timeout = settings.read_timeout.min(Duration::from_millis(PROBE_READ_TIMEOUT_MS));
    settings.retry.max_retries = 0;
    let mut client = match llm::Client::new(&settings) {
        Ok(c) => c,
        Err(e) => {
            show!("llm: cannot probe {}: {}", config.llm.endpoint, e);
            return;
        }
    };
    match client.health(&signal::stop_requested) {
        Ok(h) => {
            let what = match h.model {
                llm::ModelState::Listed => "reachable, model listed",
                llm::ModelState::NotListed => "reachable, but the model is NOT listed (check llm.model)",
                llm::ModelState::Loading => "reachable, model loading",
                llm::ModelState::Ready => "reachable, ready",
            };
            show!("llm: {} ({}): {}", config.llm.endpoint, config.llm.model, what);
        }
        Err(e) => {
            show!("llm: {} is not answering: {}: {}", config.llm.endpoint, e.code(), e.message());
            show!("llm: the agent will keep retrying; is the server running and the port right?");
        }
    }
}

/// The loop shared by `run`, `demo` and `replay` (the agent's run loop, shown on stdout).
fn drive(mut agent: Agent) -> Result<i32> {
    let mut shown = Shown { streaming: agent.config.llm.stream, tty: std::io::stdout().is_terminal() };
    match crate::agent::run::run(&mut agent, &signal::stop_requested, &mut shown)? {
        End::CannotFit(e) => {
            e.print();
            Ok(1)
        }
        _ => Ok(0),
    }
}

/// The command line's view of the run loop: a start line, a status line per cycle, progress
/// of a streamed reply on a terminal, and an end line.
struct Shown {
    streaming: bool,
    tty: bool,
}

impl Observer for Shown {
    fn start(&mut self, agent: &Agent, max: i64) {
        show!(
            "lkjagent: run {} in {} ({} cycle{}), state {}, iteration {}",
            agent.run_id(),
            agent.dir().display(),
            if max < 0 { "unbounded".to_string() } else { max.to_string() },
            if max == 1 { "" } else { "s" },
            agent.memory.state.as_str(),
            agent.memory.iteration
        );
    }

    fn progress(&mut self, cycle: u64, pieces: u64) {
        if self.streaming && self.tty {
            let mut stdout = std::io::stdout();
            let _ = write!(stdout, "\rcycle {} receiving: {} pieces", cycle, pieces);
            let _ = stdout.flush();
        }
    }

    fn cycle(&mut self, report: &CycleReport, agent: &Agent) {
        if self.streaming && self.tty {
            show_raw!("\r\x1b[K");
        }
        print_status(report, agent);
    }

    fn retry(&mut self, wait: Duration) {
        show!("           retrying in {} s", wait.as_secs());
    }

    fn end(&mut self, agent: &Agent, done: i64, why: &End) {
        match why {
            End::SourceUsedUp => show!("lkjagent: the scripted replies are used up; stopping"),
            End::TaskDone => {
                let (n, units) = agent.task_done().unwrap_or((0, ""));
                show!(
                    "lkjagent: the task is done: its {} {} are written; stopping (change the task, or send a request with `lkjagent send`, to go on)",
                    n, units
                );
            }
            End::CannotFit(_) => return,
            End::Done | End::Stopped => {}
        }
        if signal::stop_requested() {
            show!("lkjagent: stopped by signal after persisting; memory is intact");
        }
        show!(
            "lkjagent: {} cycle(s) done; state {}, iteration {}",
            done,
            agent.memory.state.as_str(),
            agent.memory.iteration
        );
    }
}

/// One status line: cycle, states, actions and results, latency, tokens, memory use, store.
fn print_status(r: &CycleReport, agent: &Agent) {
    use core::fmt::Write as _;
    // On the stack: printing a cycle's line allocates nothing.
    let mut line: crate::fixed::ArrayString<1024> = crate::fixed::ArrayString::new();
    let _ = write!(line, "cycle {:>4} {:<10} -> {:<10}", r.cycle, r.state.as_str(), r.next_state.as_str());
    if let Some(e) = &r.error {
        let _ = write!(line, " {}: {}", e.code(), e.message());
        show!("{}", line.as_str());
        return;
    }
    if r.invalid_reply {
        let _ = write!(line, " invalid reply ({} problem(s)), feedback sent", r.problems);
    } else if r.actions.is_empty() {
        let _ = write!(line, " no action");
    } else {
        for a in r.actions.iter() {
            let _ = write!(line, " {} {}", a.kind, if a.ok { "ok" } else { "FAILED" });
        }
    }
    let _ = write!(line, " | {:.1}s | ~{} tok", r.latency.as_secs_f64(), r.tokens_est);
    if let Some((p, c)) = r.usage {
        let _ = write!(line, " (server {}+{}", p, c);
        if let Some(cached) = r.cached_tokens {
            let _ = write!(line, ", {} cached", cached);
        }
        let _ = write!(line, ")");
    }
    if r.hit_max_tokens {
        let _ = write!(line, " cut at max_tokens");
    }
    if r.constrain != "off" {
        let _ = write!(line, " | {}", r.constrain);
    }
    let _ = write!(
        line,
        " | wm {} entries {:.1}/{} KiB | store {}",
        r.wm_entries,
        r.wm_bytes as f64 / 1024.0,
        r.wm_budget / 1024,
        r.store_entries
    );
    if let Some(cold) = r.cold_entries {
        let _ = write!(line, " (+{} cold)", cold);
    }
    if r.cleanup.entries > 0 {
        let to = if r.cleanup.deleted { "deleted" } else { "moved to the cold store" };
        let _ = write!(line, " | cleanup: {} {}", r.cleanup.entries, to);
    }
    if r.overflow_retried {
        let _ = write!(line, " | context overflow: paged out {}, asked again", r.paged_out);
    } else if r.paged_out > 0 {
        let _ = write!(line, " | paged out {}", r.paged_out);
    }
    let _ = agent;
    show!("{}", line.as_str());
}
