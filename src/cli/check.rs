//! `lkjagent check [--no-network]`: validate everything the agent reads before it runs, and say
//! what is wrong and where, one line per check:
//!
//! ```text
//! ok   config.json: provider openai, model "qwen/qwen3-8b", 4 states
//! ok   agent-prompt.json: none (optional)
//! FAIL memory.json: "iteration" is not a non-negative integer
//! ok   store.log: 42 entries, 18211 bytes, no damaged records
//! FAIL endpoint: http://127.0.0.1:1234/v1/chat/completions: LLM_UNAVAILABLE: cannot connect (...); check that ...
//! ```
//!
//! `skip` marks a check that could not run (the endpoint with `--no-network`, the store while a
//! write is in progress) and is not a failure.
//!
//! Check changes nothing: `memory.json` is parsed here rather than loaded (loading moves an
//! unusable file aside), and the store is opened only when that writes nothing (see
//! `cli::memory`). Exit status: 0 when every check passed, 2 when a configuration file
//! (`config.json`, `agent-prompt.json`, the endpoint's settings) has a problem, 1 for any other
//! failure (memory, store, the server).

use super::args::Args;
use super::memory::{read_memory, MemoryRead};
use super::util::{open_store_read_only_with, say, write_all, StoreRead};
use crate::agent::config::{self, Config};
use crate::agent::segments;
use crate::error::{Code, Result};
use crate::limits::{CHECK_CONNECT_TIMEOUT_MS, CHECK_READ_TIMEOUT_MS, CONFIG_FILE_MAX_BYTES, WORKING_TEXT_MAX_BYTES};
use crate::llm::{Api, Client, ModelState, ProviderKind};
use crate::memory::store::checkpoint::CheckpointFile;
use crate::memory::store::recall_file::RecallFile;
use crate::memory::store::Store;
use std::io::{self, Write};
use std::path::Path;
use std::time::Duration;

const HELP: &str = "\
lkjagent check: validate the configuration, the prompts, the memory, the store and the
endpoint's health, one line per check

usage: lkjagent [--data DIR] check [--no-network]

checks:
  config.json        parsed and validated; every problem on its own line with its key path
  agent-prompt.json  the optional prompt segments (kjxlkj format)
  memory.json        its shape (state, iteration, working_memory, agent)
  store.log          the tagged store: entries, damaged records, a clean-up cut short
  store.cold         the cold store (what clean-ups moved out): entries, damaged records
  store.ckpt         the store's checkpoint: matches the log (read in place by status,
                     memory query and memory search), out of date, or damaged (a damaged
                     one is a failure; the agent reads the whole log and writes a new one)
  store.fts          the full-text index file: matches the log, out of date, or damaged
                     (a damaged one is a failure; the agent rebuilds it from the log)
  store.cold.fts     the cold store's text index file: matches store.cold, behind it, out of
                     date, or damaged (a failure; the agent rebuilds it from store.cold)
  store.cold.keys    the cold store's keys, which status and memory stats count from: the
                     same count as store.cold's, not used, or another count (a failure; the
                     agent writes it again)
  store.vec          the vectors of recall by meaning: header, every record's checksum, the
                     vectors current for the store's entries, and whether they are of the
                     configured model (a damaged or foreign file is a failure; the agent
                     starts it again or skips the damaged records, and embeds those entries
                     again)
  endpoint           the LLM server answers its model list and lists the configured model

Check changes nothing. Each line starts with 'ok', 'FAIL', or 'skip' (a check that could not
run, such as the endpoint with --no-network; not a failure).

options:
  --no-network  do not contact the LLM server
  --help, -h    this help

exit codes: 0 all checks passed, 1 a memory, store or server check failed,
            2 a configuration problem (config.json, agent-prompt.json, endpoint settings)
";

/// Runs `lkjagent check` on the process's stdout.
pub fn run(args: Args, data: &Path) -> Result<i32> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    exec(args, data, &mut out)
}

/// How bad the worst finding so far is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Worst {
    Ok,
    Failure,
    Config,
}

/// The report being written.
struct Report<'a> {
    out: &'a mut dyn Write,
    worst: Worst,
}

// Out of line: each is called from many places, and a copy in each cost more than the call.
impl Report<'_> {
    #[inline(never)]
    fn ok(&mut self, name: &str, what: core::fmt::Arguments<'_>) -> Result<()> {
        self.line("ok  ", name, what)
    }

    #[inline(never)]
    fn skip(&mut self, name: &str, what: core::fmt::Arguments<'_>) -> Result<()> {
        self.line("skip", name, what)
    }

    #[inline(never)]
    fn fail(&mut self, name: &str, class: Worst, what: core::fmt::Arguments<'_>) -> Result<()> {
        self.worst = self.worst.max(class);
        self.line("FAIL", name, what)
    }

    fn line(&mut self, verdict: &str, name: &str, what: core::fmt::Arguments<'_>) -> Result<()> {
        say(self.out, format_args!("{} {}: {}", verdict, name, what))
    }

    fn note(&mut self, what: core::fmt::Arguments<'_>) -> Result<()> {
        say(self.out, format_args!("     note: {}", what))
    }
}

/// Runs `lkjagent check` with the given output; returns the exit code (0, 1 or 2).
pub fn exec(mut args: Args, data: &Path, out: &mut dyn Write) -> Result<i32> {
    if args.help() {
        write_all(out, HELP)?;
        return Ok(super::EXIT_OK);
    }
    let no_network = args.flag("--no-network");
    args.finish("check")?;
    let mut r = Report { out, worst: Worst::Ok };
    if !data.is_dir() {
        r.fail(
            "data",
            Worst::Config,
            format_args!("{} is not a directory; pass --data DIR or set LKJAGENT_DATA", data.display()),
        )?;
        return Ok(super::EXIT_USAGE);
    }
    let config = check_config(data, &mut r)?;
    check_memory(data, config.as_ref(), &mut r)?;
    check_store(data, config.as_ref(), &mut r)?;
    match &config {
        _ if no_network => r.skip("endpoint", format_args!("not contacted (--no-network)"))?,
        None => r.skip("endpoint", format_args!("not contacted: config.json has problems"))?,
        Some(c) => check_endpoint(c, &mut r)?,
    }
    Ok(match r.worst {
        Worst::Ok => super::EXIT_OK,
        Worst::Failure => super::EXIT_FAILURE,
        Worst::Config => super::EXIT_USAGE,
    })
}

/// `config.json` and `agent-prompt.json`; the config when both are usable.
fn check_config(data: &Path, r: &mut Report<'_>) -> Result<Option<Config>> {
    let path = data.join(config::FILE_NAME);
    let bytes = match config::read_bounded(&path, CONFIG_FILE_MAX_BYTES) {
        Ok(b) => b,
        Err(e) => {
            r.fail("config.json", Worst::Config, format_args!("{}", e.message()))?;
            r.skip("agent-prompt.json", format_args!("not checked: it needs the states of config.json"))?;
            return Ok(None);
        }
    };
    let (config, problems) = match config::parse(&bytes, data) {
        Ok(parsed) => parsed,
        Err(e) if is_segment_error(e.code()) => {
            // The config is read up to the prompt segments, then the segments' error ends it.
            r.skip(
                "config.json",
                format_args!("checked only up to the prompt segments; fix agent-prompt.json and check again"),
            )?;
            r.fail("agent-prompt.json", Worst::Config, format_args!("{}: {}", e.code(), e.message()))?;
            return Ok(None);
        }
        Err(e) => {
            r.fail("config.json", Worst::Config, format_args!("{}: {}", e.code(), e.message()))?;
            r.skip("agent-prompt.json", format_args!("not checked: it needs the states of config.json"))?;
            return Ok(None);
        }
    };
    if !problems.is_empty() {
        for p in &problems {
            r.fail("config.json", Worst::Config, format_args!("{}", p))?;
        }
    } else {
        let api = match config.llm.api() {
            Api::Completion => "; a text-completion endpoint: the prompt goes as one document, with no chat template",
            Api::Chat => "",
        };
        r.ok(
            "config.json",
            format_args!(
                "provider {}, model \"{}\", {} states ({}){}",
                config.llm.protocol().name(),
                config.llm.model,
                config.agent.states.len(),
                config.agent.states.join(", "),
                api
            ),
        )?;
    }
    match segments::load(data, &config.agent.states) {
        Ok(None) => r.ok("agent-prompt.json", format_args!("none (optional)"))?,
        Ok(Some(s)) => {
            let defaults = if s.default.is_empty() { "no" } else { "with" };
            r.ok(
                "agent-prompt.json",
                format_args!("valid, {} default segments, segments for {} states", defaults, s.by_state.len()),
            )?
        }
        Err(e) => r.fail("agent-prompt.json", Worst::Config, format_args!("{}: {}", e.code(), e.message()))?,
    }
    Ok(if problems.is_empty() { Some(config) } else { None })
}

fn is_segment_error(code: Code) -> bool {
    matches!(code, Code::PromptJsonInvalid | Code::PromptSchemaInvalid | Code::PromptSegmentEmpty)
}

fn check_memory(data: &Path, config: Option<&Config>, r: &mut Report<'_>) -> Result<()> {
    let view = match read_memory(data) {
        Ok(MemoryRead::Missing) => return r.ok("memory.json", format_args!("none yet (the agent starts fresh)")),
        Ok(MemoryRead::Found(v)) => v,
        Err(e) => return r.fail("memory.json", Worst::Failure, format_args!("{}", e.message())),
    };
    let from_prev = view.path.file_name().is_some_and(|n| n != crate::memory::file::MEMORY_FILE);
    if !view.problems.is_empty() {
        for p in &view.problems {
            r.fail("memory.json", Worst::Failure, format_args!("{}: {}", view.path.display(), p))?;
        }
        r.note(format_args!(
            "the agent cannot use this file as it is: it keeps a malformed file aside \
             (memory.json.corrupt-<time>) and starts from the previous version or fresh; it refuses \
             to start on one that is a link or whose entries fit nowhere, leaving it as it is"
        ))?;
        return Ok(());
    }
    let f = &view.file;
    r.ok(
        "memory.json",
        format_args!(
            "state {}, iteration {}, {} working-memory entries, {} of {} bytes{}",
            f.state.as_str(),
            f.iteration,
            f.working.len(),
            f.working.text_bytes(),
            WORKING_TEXT_MAX_BYTES,
            if from_prev { " (memory.json is missing; read memory.json.prev, which the agent would use)" } else { "" }
        ),
    )?;
    if let Some(c) = config {
        if !c.agent.is_state(f.state.as_str()) {
            r.note(format_args!(
                "state \"{}\" is not configured; the agent starts in \"{}\"",
                f.state.as_str(),
                c.agent.start_state
            ))?;
        }
    }
    for n in &view.notes {
        r.note(format_args!("{}", n))?;
    }
    Ok(())
}

fn check_store(data: &Path, config: Option<&Config>, r: &mut Report<'_>) -> Result<()> {
    match open_store_read_only_with(data, true) {
        Ok(StoreRead::Absent) => r.ok("store.log", format_args!("none yet (the agent creates it)")),
        Ok(StoreRead::NotOpened { why, damaged: false }) => r.skip("store.log", format_args!("not read now: {}", why)),
        Ok(StoreRead::NotOpened { why, damaged: true }) => r.fail("store.log", Worst::Failure, format_args!("{}", why)),
        Err(e) => r.fail("store.log", Worst::Failure, format_args!("{}: {}", e.code(), e.message())),
        Ok(StoreRead::Open(mut store)) => {
            let st = store.stats();
            let res = if st.corrupt_records > 0 {
                r.fail(
                    "store.log",
                    Worst::Failure,
                    format_args!(
                        "{} entries, {} bytes, {} damaged records skipped (warnings above say where); \
                         'lkjagent memory compact' rewrites the log without them",
                        st.entries, st.log_bytes, st.corrupt_records
                    ),
                )
            } else if st.cut_cleanup {
                r.ok(
                    "store.log",
                    format_args!(
                        "{} entries ({} archived) of {}, {} bytes, no damaged records; the last {} bytes are a \
                         clean-up that was cut short (by a crash, or being written now): none of it counts, and the \
                         agent rolls it back at its next start (its entries stay in the store)",
                        st.entries, st.archived, st.capacity, st.log_bytes, st.unfinished_tail_bytes
                    ),
                )
            } else if st.damaged_tail {
                r.ok(
                    "store.log",
                    format_args!(
                        "{} entries ({} archived) of {}, {} bytes, no damaged records before the end; the last {} \
                         bytes hold a damaged record (cut short by a crash, or damaged on disk: the agent drops \
                         such a tail at its next start)",
                        st.entries, st.archived, st.capacity, st.log_bytes, st.unfinished_tail_bytes
                    ),
                )
            } else if st.unfinished_tail_bytes > 0 {
                r.ok(
                    "store.log",
                    format_args!(
                        "{} entries ({} archived) of {}, {} bytes, no damaged records; {} bytes at the end are not \
                         a whole record yet (a write in progress, or cut short by a crash: the agent drops such a \
                         tail at its next start)",
                        st.entries, st.archived, st.capacity, st.log_bytes, st.unfinished_tail_bytes
                    ),
                )
            } else {
                r.ok(
                    "store.log",
                    format_args!(
                        "{} entries ({} archived) of {}, {} bytes, no damaged records",
                        st.entries, st.archived, st.capacity, st.log_bytes
                    ),
                )
            };
            res.and_then(|_| check_checkpoint(&store, r))
                .and_then(|_| check_recall_file(&mut store, r))
                .and_then(|_| check_vectors(&store, config, r))
                .and_then(|_| check_cold(data, r))
                .and_then(|_| check_cold_recall_file(&mut store, r))
        }
    }
}

/// The cold store: its groups whole, no damaged record (a damaged one is a failure: an entry
/// clean-up moved there may be in it).
fn check_cold(data: &Path, r: &mut Report<'_>) -> Result<()> {
    const NAME: &str = "store.cold";
    if !data.join(crate::memory::store::cold::COLD_NAME).exists() {
        return r.ok(NAME, format_args!("none yet (the first clean-up creates it)"));
    }
    // Each key once: copies of one key (saved again after it went cold, or moved twice after a
    // crash) are one entry.
    let scanned = crate::memory::store::cold::scan_current(data, &|_| false, &mut |_| Ok(true));
    match &scanned {
        Err(e) => r.fail(NAME, Worst::Failure, format_args!("{}: {}", e.code(), e.message())),
        Ok(st) if st.damaged > 0 => r.fail(
            NAME,
            Worst::Failure,
            format_args!("{} entries, {} bytes, {} damaged records skipped (warnings above say where)", st.current, st.bytes, st.damaged),
        ),
        Ok(st) if st.unfinished_tail > 0 => r.ok(
            NAME,
            format_args!(
                "{} entries, {} bytes, no damaged records; the last {} bytes are a clean-up not finished (by a \
                 crash, or being written now): its entries are still in store.log, and the agent drops it at its next start",
                st.current, st.bytes, st.unfinished_tail
            ),
        ),
        Ok(st) => r.ok(NAME, format_args!("{} entries, {} bytes, no damaged records", st.current, st.bytes)),
    }?;
    match scanned {
        Ok(st) => check_cold_keys(data, &st, r),
        Err(_) => Ok(()),
    }
}

/// `store.cold.keys`: a cache of the cold store's keys (`cold::keys`), so missing or out of
/// date is fine; counts other than the scan's (`st`) are a failure that costs nothing stored.
fn check_cold_keys(data: &Path, st: &crate::memory::store::cold::ColdStats, r: &mut Report<'_>) -> Result<()> {
    use crate::memory::store::cold::keys;
    const NAME: &str = "store.cold.keys";
    if !data.join(keys::COLD_KEYS_NAME).exists() {
        return r.ok(
            NAME,
            format_args!("none yet (the agent writes it at a clean stop; status and memory stats read all of store.cold until then)"),
        );
    }
    match keys::current(data, None) {
        Err(e) => r.fail(NAME, Worst::Failure, format_args!("{}: {}", e.code(), e.message())),
        Ok(None) => r.ok(
            NAME,
            format_args!(
                "not used: damaged, of another state of store.cold, or too far behind it (status and memory stats read \
                 all of store.cold; the agent writes it again at a clean stop)"
            ),
        ),
        Ok(Some(k)) if k == *st => r.ok(
            NAME,
            format_args!("{} keys, the same count as store.cold's (status and memory stats read it)", k.current),
        ),
        Ok(Some(k)) => r.fail(
            NAME,
            Worst::Failure,
            format_args!(
                "counts {} keys ({} entries) where store.cold holds {} ({}); nothing stored is lost: remove it, and \
                 the agent writes it again at a clean stop",
                k.current, k.entries, st.current, st.entries
            ),
        ),
    }
}

/// The cold store's text index file: a cache of `store.cold`, so out of date is fine and
/// damaged is a failure that costs nothing stored (the agent rebuilds it).
fn check_cold_recall_file(store: &mut Store, r: &mut Report<'_>) -> Result<()> {
    const NAME: &str = "store.cold.fts";
    match store.cold_recall_file_check() {
        RecallFile::Missing => {
            r.ok(NAME, format_args!("none yet (the cold store's text index is built when it is first searched)"))
        }
        RecallFile::Usable { docs, bytes, covered, log_len } if covered == log_len => {
            r.ok(NAME, format_args!("{} cold entries indexed, {} bytes, matches store.cold", docs, bytes))
        }
        RecallFile::Usable { docs, covered, log_len, .. } => r.ok(
            NAME,
            format_args!(
                "behind store.cold: it indexes its first {} of {} bytes ({} entries then); searches read the {} \
                 bytes after it from store.cold, and the agent writes it again at a checkpoint or a clean stop",
                covered,
                log_len,
                docs,
                log_len.saturating_sub(covered)
            ),
        ),
        RecallFile::Stale(e) => {
            r.ok(NAME, format_args!("out of date ({}); rebuilt from store.cold when next searched", e.message()))
        }
        RecallFile::Damaged(e) => r.fail(
            NAME,
            Worst::Failure,
            format_args!(
                "damaged: {}; nothing stored is lost: the agent rebuilds the cold store's text index from store.cold",
                e.message()
            ),
        ),
    }
}

/// The store's checkpoint: a cache of the log's index, so out of date is fine and damaged is
/// a failure that costs nothing stored (the next start reads the whole log).
fn check_checkpoint(store: &Store, r: &mut Report<'_>) -> Result<()> {
    const NAME: &str = "store.ckpt";
    match store.checkpoint_file_check() {
        CheckpointFile::Missing => {
            r.ok(NAME, format_args!("none yet (the agent writes one as the log grows and at a clean stop)"))
        }
        CheckpointFile::Usable { covered, log_bytes, bytes } if covered == log_bytes => r.ok(
            NAME,
            format_args!(
                "{} bytes, matches the log ({} bytes): status, memory query and memory search read it in place",
                bytes, log_bytes
            ),
        ),
        CheckpointFile::Usable { covered, log_bytes, bytes } => r.ok(
            NAME,
            format_args!(
                "{} bytes, covers {} of the {} bytes of the log: the next start reads the rest, and the read-only \
                 commands read the whole store until the agent writes a new one",
                bytes, covered, log_bytes
            ),
        ),
        CheckpointFile::Stale(e) => r.ok(
            NAME,
            format_args!("out of date ({}); the next start reads the whole log and writes a new one", e.message()),
        ),
        CheckpointFile::Damaged(e) => r.fail(
            NAME,
            Worst::Failure,
            format_args!(
                "{}: damaged: {}; nothing stored is lost: the next start reads the whole log and writes a new one",
                e.code(),
                e.message()
            ),
        ),
    }
}

/// The full-text index's file: a cache of the log, so out of date is fine and damaged is a
/// failure that costs nothing stored (the agent rebuilds it).
fn check_recall_file(store: &mut Store, r: &mut Report<'_>) -> Result<()> {
    const NAME: &str = "store.fts";
    match store.recall_file_check() {
        RecallFile::Missing => r.ok(NAME, format_args!("none yet (the full-text index is built when first searched)")),
        RecallFile::Usable { docs, bytes, covered, log_len } if covered == log_len => {
            r.ok(NAME, format_args!("{} entries indexed, {} bytes, matches store.log", docs, bytes))
        }
        RecallFile::Usable { docs, covered, log_len, .. } => r.ok(
            NAME,
            format_args!(
                "behind store.log: it indexes its first {} of {} bytes ({} entries then); searches read the \
                 {} bytes after it from the log, and the agent writes it again at its next checkpoint",
                covered,
                log_len,
                docs,
                log_len.saturating_sub(covered)
            ),
        ),
        RecallFile::Stale(e) => r.ok(
            NAME,
            format_args!(
                "out of date ({}); the full-text index is rebuilt from the log when next searched",
                e.message()
            ),
        ),
        RecallFile::Damaged(e) => r.fail(
            NAME,
            Worst::Failure,
            format_args!(
                "damaged: {}; nothing stored is lost: the agent rebuilds the full-text index from store.log",
                e.message()
            ),
        ),
    }
}

/// The vectors of recall by meaning (`store.vec`): a cache of what the embeddings endpoint
/// made of the store's values, so damage costs nothing stored, only new requests; a damaged
/// or foreign file is a failure all the same (the user learns why the agent embeds again).
/// `config` (when usable) says which model the vectors should be of.
fn check_vectors(store: &Store, config: Option<&Config>, r: &mut Report<'_>) -> Result<()> {
    use crate::limits::EMBED_FILL_PER_CYCLE;
    const NAME: &str = "store.vec";
    let settings = config.and_then(|c| c.embeddings.as_ref());
    let found = match crate::memory::store::vectors::check_file(store) {
        Ok(found) => found,
        Err(e) => {
            return r.fail(
                NAME,
                Worst::Failure,
                format_args!(
                    "{}: {}; nothing stored is lost: the agent starts the file again and embeds every entry again                      ({} per cycle, or all at once with 'lkjagent memory embed')",
                    e.code(),
                    e.message(),
                    EMBED_FILL_PER_CYCLE
                ),
            )
        }
    };
    let Some(v) = found else {
        return match settings {
            None => r.ok(NAME, format_args!("none (recall by meaning is off: no memory.embeddings in config.json)")),
            Some(_) => {
                r.ok(NAME, format_args!("none yet (the agent embeds the entries, {} per cycle)", EMBED_FILL_PER_CYCLE))
            }
        };
    };
    let model = match settings {
        None => " (not used: no memory.embeddings in config.json)".to_string(),
        Some(s) if s.identity() != v.identity || s.dimension != v.dimension => format!(
            "; they are of another model, dimension or document prefix than memory.embeddings: the agent starts              the file again and embeds every entry again ({} per cycle)",
            EMBED_FILL_PER_CYCLE
        ),
        Some(_) => String::new(),
    };
    let what = format!(
        "{} records, {} of them current for the {} entries, {} dimensions, {} bytes{}",
        v.records,
        v.current,
        store.len(),
        v.dimension,
        v.bytes,
        model
    );
    if v.damaged > 0 {
        return r.fail(
            NAME,
            Worst::Failure,
            format_args!(
                "{}: {} damaged records (checksum) before the end, skipped: their entries are embedded again, \
                 and 'lkjagent memory embed' rewrites store.vec without them; {}",
                Code::Io,
                v.damaged,
                what
            ),
        );
    }
    r.ok(NAME, format_args!("{}", what))?;
    if v.torn_tail_bytes > 0 {
        r.note(format_args!(
            "{}: the last {} bytes of store.vec are not a whole record (being written now, or cut short by a              crash): the agent drops them at its next start and embeds those entries again",
            Code::Io,
            v.torn_tail_bytes
        ))?;
    }
    Ok(())
}

fn check_endpoint(config: &Config, r: &mut Report<'_>) -> Result<()> {
    let mut settings = config.llm.clone();
    if settings.provider == ProviderKind::Replay {
        let script = settings.replay_path.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        return match Client::new(&settings) {
            Ok(_) => r.ok("endpoint", format_args!("replay provider; script {} is readable", script)),
            Err(e) => r.fail("endpoint", Worst::Config, format_args!("replay script {}: {}", script, e.message())),
        };
    }
    // One quick probe: no retries, short timeouts (a check answers in seconds, not minutes).
    settings.retry.max_retries = 0;
    settings.connect_timeout = settings.connect_timeout.min(Duration::from_millis(CHECK_CONNECT_TIMEOUT_MS));
    settings.read_timeout = settings.read_timeout.min(Duration::from_millis(CHECK_READ_TIMEOUT_MS));
    let endpoint = settings.endpoint.clone();
    let mut client = match Client::new(&settings) {
        Ok(c) => c,
        Err(e) => return r.fail("endpoint", Worst::Config, format_args!("{}: {}", endpoint, e.message())),
    };
    let health = match client.health(&|| false) {
        Ok(h) => h,
        Err(e) => {
            let hint = match e.code() {
                Code::LlmUnavailable => {
                    "; check that LM Studio (or your server) is running and that the port in llm.endpoint is right"
                }
                Code::LlmTimeout => {
                    "; the server did not answer in time: is it busy, or is this the right host and port?"
                }
                _ => "",
            };
            // The transport's own short hint is replaced by the longer one above.
            let said = e.message();
            let message = said.strip_suffix(": is it running?").unwrap_or(&said);
            return r.fail("endpoint", Worst::Failure, format_args!("{}: {}: {}{}", endpoint, e.code(), message, hint));
        }
    };
    let model = &settings.model;
    match health.model {
        ModelState::Listed => r.ok(
            "endpoint",
            format_args!("{} reachable, model \"{}\" listed ({} models at {})", endpoint, model, health.models_listed, health.probe.as_str()),
        ),
        ModelState::Ready => r.ok(
            "endpoint",
            format_args!("{} reachable and ready ({} answers; the server has no model list to check)", endpoint, health.probe.as_str()),
        ),
        ModelState::Loading => r.ok(
            "endpoint",
            format_args!("{} reachable, loading a model (HTTP {}); try again when it is loaded", endpoint, health.http_status),
        ),
        ModelState::NotListed => r.fail(
            "endpoint",
            Worst::Failure,
            format_args!(
                "{} reachable, but model \"{}\" is not among the {} models it lists; load or download it, or fix llm.model",
                endpoint, model, health.models_listed
            ),
        ),
    }
}
