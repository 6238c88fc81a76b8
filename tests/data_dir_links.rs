//! Nothing is written outside the data directory through a symbolic link planted inside it.
//!
//! Real `lkjagent` child processes (the replay provider, so no server is needed) on real data
//! directories where one of the agent's own names is a link to a file beside the data
//! directory, or to a name there that does not exist yet:
//!
//! - a temporary name (`.memory.json.tmp`, ...) is created exclusively: a link found there is
//!   removed (the link, not its target) and a new file made in its place;
//! - a file the agent writes in place (`store.log`, `logs/audit.jsonl`, `lkjagent.lock`, the
//!   inbox files) or replaces by renaming (`memory.json`) is never opened through a link: the
//!   command stops with an error that names the link;
//! - the exchange log's files are created in a directory the run creates itself.
//!
//! In every case the link's target is left byte for byte as it was, and no file appears where
//! a dangling link pointed. Links to directories (the data directory itself, `logs`) are still
//! followed on purpose: that is how a user puts them on another disk.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

#[path = "support/cli.rs"]
mod cli;
#[path = "support/temp.rs"]
mod temp;
use cli::{lkjagent, text};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A temp directory holding `data/` (the data directory) and `outside/` (what links point
/// at), removed on drop.
struct Setup {
    root: PathBuf,
}

const PRECIOUS: &str = "precious: not the agent's to write\n";

impl Setup {
    fn new(tag: &str) -> Setup {
        let root = temp::temp_dir(&format!("links-{}", tag));
        std::fs::create_dir_all(root.join("data")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        let s = Setup { root };
        let config = temp::shipped("config.json");
        let from = "\"provider\": \"openai\"";
        assert_eq!(config.matches(from).count(), 1);
        let config = config.replace(from, "\"provider\": \"replay\", \"replay_path\": \"demo.jsonl\"");
        std::fs::write(s.data().join("config.json"), config).unwrap();
        std::fs::write(s.data().join("demo.jsonl"), temp::shipped("demo.jsonl")).unwrap();
        std::fs::write(s.data().join("memory.json"), temp::shipped("memory.json")).unwrap();
        s
    }

    fn data(&self) -> PathBuf {
        self.root.join("data")
    }

    /// A file outside the data directory holding [`PRECIOUS`].
    fn victim(&self, name: &str) -> PathBuf {
        let p = self.root.join("outside").join(name);
        std::fs::write(&p, PRECIOUS).unwrap();
        p
    }

    /// A name outside the data directory where nothing is.
    fn nowhere(&self, name: &str) -> PathBuf {
        self.root.join("outside").join(name)
    }

    /// Plants a link at `name` (relative to the data directory) pointing at `to`.
    fn plant(&self, name: &str, to: &Path) -> PathBuf {
        let at = self.data().join(name);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        symlink(to, &at).unwrap();
        at
    }

    fn run_one_cycle(&self) -> Output {
        lkjagent(["run", "--max-iterations", "1"]).data(self.data()).output()
    }

    /// Names in `outside/` (the victims, and anything a link made appear there).
    fn outside_names(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.root.join("outside"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).map(|m| m.file_type().is_symlink()).unwrap_or(false)
}

/// A link at a temporary name, to a file or to nowhere, is removed and replaced by the
/// agent's own new file: the memory is saved, the target is untouched, nothing appears where a
/// dangling link pointed.
#[test]
fn a_link_at_a_temporary_name_is_replaced_never_followed() {
    let mut failed = Vec::new();
    for temp in [".memory.json.tmp", ".memory.json.prev.tmp", ".store.ckpt.tmp", ".store.fts.tmp", ".store.log.compact"]
    {
        for dangling in [false, true] {
            let s = Setup::new("temp");
            let to = if dangling { s.nowhere("created") } else { s.victim("victim") };
            let link = s.plant(temp, &to);
            let o = s.run_one_cycle();
            let case = format!("{} -> {}", temp, to.display());
            let memory = s.data().join("memory.json");
            let saved = std::fs::read_to_string(&memory).unwrap_or_default();
            if o.status.code() != Some(0) {
                failed.push(format!("{}: exit {:?}: {}", case, o.status.code(), text(&o)));
            } else if dangling && !s.outside_names().is_empty() {
                failed.push(format!("{}: a file appeared outside: {:?}", case, s.outside_names()));
            } else if !dangling && std::fs::read_to_string(&to).unwrap() != PRECIOUS {
                failed.push(format!("{}: the target was written", case));
            } else if is_link(&memory) || !saved.contains("\"iteration\": 1") {
                failed.push(format!("{}: memory.json is a link or was not saved: {}", case, saved));
            } else if is_link(&link) {
                failed.push(format!("{}: the link was left in place", case));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The agent's own files that it writes in place, or replaces, are never opened through a
/// link: the run stops before its first cycle with an error naming the link, and the link's
/// target (or the place a dangling link points to) is left as it was.
#[test]
fn the_agents_own_names_as_links_are_refused_naming_the_link() {
    let mut failed = Vec::new();
    for name in ["memory.json", "store.log", "lkjagent.lock", "logs/audit.jsonl"] {
        for dangling in [false, true] {
            let s = Setup::new("own");
            if name == "memory.json" {
                std::fs::remove_file(s.data().join(name)).unwrap();
            }
            let to = if dangling { s.nowhere("created") } else { s.victim("victim") };
            let link = s.plant(name, &to);
            let o = s.run_one_cycle();
            if let Err(why) = refused(&s, &o, &link, &to, dangling) {
                failed.push(format!("{} -> {}: {}", name, to.display(), why));
            } else if !is_link(&s.data().join("logs/audit.jsonl")) && s.data().join("logs/audit.jsonl").is_file() {
                failed.push(format!("{}: a cycle ran", name));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Whether the command `o` was refused with an error naming `link`, leaving `to` as it was.
fn refused(s: &Setup, o: &Output, link: &Path, to: &Path, dangling: bool) -> Result<(), String> {
    let mut why = Vec::new();
    if dangling && !s.outside_names().is_empty() {
        why.push(format!("a file appeared outside: {:?}", s.outside_names()));
    }
    if !dangling && std::fs::read_to_string(to).unwrap() != PRECIOUS {
        why.push("the target was written".to_string());
    }
    if !is_link(link) {
        why.push("the link was moved or replaced; it is the user's to fix".to_string());
    }
    let out = text(o);
    let says = format!("{} is a symbolic link", link.display());
    if o.status.code() != Some(1) || !out.contains(&says) {
        why.push(format!("want exit 1 and '{}', got {:?}:\n{}", says, o.status.code(), out));
    }
    if why.is_empty() {
        Ok(())
    } else {
        Err(why.join("; "))
    }
}

/// `lkjagent send` never appends to, or locks, a file outside the data directory.
#[test]
fn send_refuses_an_inbox_or_inbox_lock_that_is_a_link() {
    let mut failed = Vec::new();
    for name in ["inbox", "inbox.lock"] {
        for dangling in [false, true] {
            let s = Setup::new("send");
            let to = if dangling { s.nowhere("created") } else { s.victim("victim") };
            let link = s.plant(name, &to);
            let o = lkjagent(["send", "hello"]).data(s.data()).output();
            if let Err(why) = refused(&s, &o, &link, &to, dangling) {
                failed.push(format!("{} -> {}: {}", name, to.display(), why));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// The exchange log of a run lives in a directory that run creates: files found under that
/// name (a link planted at `exchange.jsonl`, `opened_at` or a start copy) are never written
/// through. (In process: the run id is random, so a child's directory cannot be planted in.)
#[test]
fn the_exchange_log_is_never_written_through_a_link() {
    let mut failed = Vec::new();
    for name in ["exchange.jsonl", "opened_at", "start/memory.json"] {
        let s = Setup::new("exchange");
        let to = s.victim("victim");
        let link = s.plant(&format!("logs/exchange-run1/{}", name), &to);
        let dir = s.data().join("logs/exchange-run1");
        match lkjagent::agent::exchange::ExchangeLog::start(&s.data(), "run1", 7) {
            Ok(_) => failed.push(format!("{}: the exchange log was opened", name)),
            Err(e) if !e.message().contains(&dir.display().to_string()) => {
                failed.push(format!("{}: {}", name, e.message()))
            }
            Err(_) => {}
        }
        if std::fs::read_to_string(&to).unwrap() != PRECIOUS {
            failed.push(format!("{}: the target was written", name));
        }
        assert!(is_link(&link));
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    // A fresh run makes its own directory and files.
    let s = Setup::new("exchange-fresh");
    let mut log = lkjagent::agent::exchange::ExchangeLog::start(&s.data(), "run2", 7).unwrap();
    assert!(log.dir().join("start/memory.json").is_file());
    assert_eq!(std::fs::read_to_string(log.dir().join("opened_at")).unwrap(), "7\n");
    let r = lkjagent::agent::exchange::ExchangeRecord {
        time: 8,
        cycle: 1,
        state: "thinking",
        inbox: None,
        prompt: "p",
        content: Some("c"),
        reasoning: None,
        finish_reason: Some("stop"),
        usage: None,
        unsure: None,
        error: None,
        overflow_retried: false,
    };
    log.append(&r).unwrap();
    assert!(std::fs::read_to_string(log.dir().join("exchange.jsonl")).unwrap().contains("\"prompt\":\"p\""));
}

/// A link to a directory at `logs` is still followed (the logs may live on another disk), and
/// the data directory itself may be a link.
#[test]
fn links_to_directories_are_still_followed() {
    let s = Setup::new("dirs");
    let elsewhere = s.root.join("elsewhere-logs");
    std::fs::create_dir(&elsewhere).unwrap();
    s.plant("logs", &elsewhere);
    let o = s.run_one_cycle();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(elsewhere.join("audit.jsonl").is_file());

    let linked = s.root.join("linked-data");
    symlink(s.data(), &linked).unwrap();
    let o = lkjagent(["run", "--max-iterations", "1"]).data(&linked).output();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(std::fs::read_to_string(s.data().join("memory.json")).unwrap().contains("\"iteration\": 2"));
}
