//! The `lkjagent` binary as a child process, one helper for every test that runs it:
//! `lkjagent(args)` builds the command line (`.data(dir)` puts `--data DIR` first); `.output()`
//! runs it to the end, `.output_within(limit)` kills it and fails the test past `limit`,
//! `.status()` runs it with its output thrown away, and `.spawn()` starts it for a test that
//! signals it or runs other commands beside it.
//!
//! Stdin is `/dev/null` unless `.stdin(bytes)` gives it, so no test reads the terminal. Stdout
//! and stderr are piped and read while the child runs (but for `.status()`), so a chatty child
//! never blocks on a full pipe. `LKJAGENT_DATA` is removed from the child's environment (a test
//! sets it with `.env`), so the developer's own data directory never leaks into a test.
//!
//! Include with `#[path = "support/cli.rs"] mod cli;`.
// Included by many test crates, each of which uses only some of it: without this, every crate
// would warn about the parts it does not call.
#![allow(dead_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The binary cargo built for this test crate.
const BIN: &str = env!("CARGO_BIN_EXE_lkjagent");

/// A command line for the binary; see the module documentation.
pub struct Lkjagent {
    under: Vec<String>,
    data: Option<PathBuf>,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    stdin: Option<Vec<u8>>,
}

/// `lkjagent ARGS`.
pub fn lkjagent<I, S>(args: I) -> Lkjagent
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Lkjagent {
        under: Vec::new(),
        data: None,
        args: args.into_iter().map(|a| a.as_ref().to_os_string()).collect(),
        env: Vec::new(),
        stdin: None,
    }
}

impl Lkjagent {
    /// `--data DIR` before the arguments.
    pub fn data(mut self, dir: impl AsRef<Path>) -> Lkjagent {
        self.data = Some(dir.as_ref().to_path_buf());
        self
    }

    /// One more argument after the others (a path, say).
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Lkjagent {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    /// An environment variable for the child.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Lkjagent {
        self.env.push((key.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// What the child reads on stdin (a pipe, closed after these bytes).
    pub fn stdin(mut self, bytes: impl AsRef<[u8]>) -> Lkjagent {
        self.stdin = Some(bytes.as_ref().to_vec());
        self
    }

    /// Runs the binary under another program that takes a command line after its own
    /// arguments (`strace -o FILE`, `/usr/bin/time -v -o FILE`).
    pub fn under(mut self, wrapper: &[&str]) -> Lkjagent {
        self.under = wrapper.iter().map(|w| w.to_string()).collect();
        self
    }

    /// The command line as a failure message shows it.
    fn shown(&self) -> String {
        let data = self.data.iter().flat_map(|d| [OsStr::new("--data"), d.as_os_str()]);
        let words: Vec<String> =
            data.chain(self.args.iter().map(|a| a.as_os_str())).map(|w| w.to_string_lossy().into_owned()).collect();
        format!("lkjagent {:?}", words)
    }

    /// Starts the child.
    pub fn spawn(&self) -> Running {
        self.start(true)
    }

    /// Runs the child to its end with its output thrown away (a command run only for what it
    /// does to the data directory): its exit status.
    pub fn status(&self) -> ExitStatus {
        self.start(false).wait().status
    }

    /// Starts the child; its stdout and stderr are read (`keep_output`) or go to `/dev/null`.
    fn start(&self, keep_output: bool) -> Running {
        let mut cmd = match self.under.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(BIN);
                c
            }
            None => Command::new(BIN),
        };
        if let Some(d) = &self.data {
            cmd.arg("--data").arg(d);
        }
        cmd.args(&self.args).env_remove("LKJAGENT_DATA");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.stdin(if self.stdin.is_some() { Stdio::piped() } else { Stdio::null() });
        let output = || if keep_output { Stdio::piped() } else { Stdio::null() };
        let mut child =
            cmd.stdout(output()).stderr(output()).spawn().unwrap_or_else(|e| panic!("{}: {}", self.shown(), e));
        // Fed from a thread: the child may write more than a pipe holds before it reads all.
        let feeder = child.stdin.take().zip(self.stdin.clone()).map(|(mut pipe, input)| {
            std::thread::spawn(move || {
                let _ = pipe.write_all(&input);
            })
        });
        let stdout = child.stdout.take().map(drain);
        let stderr = child.stderr.take().map(drain);
        Running { child, shown: self.shown(), feeder, stdout, stderr, waited: false }
    }

    /// Runs the child to its end: its exit status, stdout and stderr.
    pub fn output(&self) -> Output {
        self.spawn().wait()
    }

    /// Like [`Lkjagent::output`], but a child still running after `limit` is killed and the
    /// test fails.
    pub fn output_within(&self, limit: Duration) -> Output {
        self.spawn().wait_within(limit)
    }
}

/// Reads a pipe to its end on a thread.
fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

/// A started child; killed on drop unless it was waited for (a failed test leaves no agent
/// running).
pub struct Running {
    child: Child,
    shown: String,
    feeder: Option<JoinHandle<()>>,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    waited: bool,
}

impl Running {
    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Whether the child has not exited yet.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Sends the child SIGTERM (through `kill`: std has no signals).
    pub fn sigterm(&self) {
        let s = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status().unwrap();
        assert!(s.success(), "kill -TERM failed");
    }

    /// Waits for the child's end: its exit status, stdout and stderr.
    pub fn wait(mut self) -> Output {
        let status = self.child.wait().unwrap();
        self.finish(status)
    }

    /// Like [`Running::wait`], but past `limit` the child is killed and the test fails.
    pub fn wait_within(mut self, limit: Duration) -> Output {
        let end = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return self.finish(status);
            }
            if Instant::now() > end {
                panic!("{} did not exit within {:?}", self.shown, limit);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn finish(&mut self, status: ExitStatus) -> Output {
        self.waited = true;
        if let Some(f) = self.feeder.take() {
            f.join().unwrap();
        }
        let stdout = self.stdout.take().map(|h| h.join().unwrap()).unwrap_or_default();
        let stderr = self.stderr.take().map(|h| h.join().unwrap()).unwrap_or_default();
        Output { status, stdout, stderr }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.waited {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Stdout then stderr, as text (invalid UTF-8 shown as U+FFFD).
pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}
