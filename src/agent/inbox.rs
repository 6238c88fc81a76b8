//! The inbox: messages queued by `lkjagent send`, picked up at the start of the next cycle as
//! the working memory's `user_request`.
//!
//! Files in the data directory:
//! - `inbox`: JSON lines `{"time": <unix seconds>, "text": "..."}`, appended by `send` (append,
//!   then fsync, so a message that `send` acknowledged survives a crash);
//! - `inbox.lock`: taken (exclusive, `File::lock`) by `send` while it appends and by the agent
//!   while it moves the inbox aside, so a message is never written to a file being taken;
//! - `inbox.taken`: the inbox the agent is working on. It is renamed (atomic) from `inbox`,
//!   read, put into working memory, and removed only after `memory.json` has been persisted; a
//!   crash in between finds it again at the next start, so no message is lost (at worst one is
//!   delivered twice).
//!
//! A line that is not a message (a torn last line: a crash in the middle of `send`'s append,
//! before it acknowledged; or a hand-edited file) is never dropped and never jams the inbox: it
//! is moved to `inbox.bad-<unix seconds>` beside it (appended and fsynced before `inbox.taken`
//! is rewritten without it), one warning names that file, and the good lines are taken in the
//! same cycle. A taken file with no message left is removed and the waiting inbox taken at once.
//!
//! None of these files is ever opened through a symbolic link, for reading or writing (a link
//! at one of these names is an `IO` error that names it; see `memory::nofollow`), and the
//! rewritten `inbox.taken` is made in a new temporary file, never a link's target.

use crate::error::Result;
use crate::fixed::FixedBuf;
use crate::json::{Document, Writer};
use crate::limits::{INBOX_MAX_BYTES, REQUEST_MAX_BYTES};
use crate::memory::atomic::sync_dir;
use crate::memory::nofollow;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The inbox's paths (computed once) and its reading buffers (reserved once).
pub struct Inbox {
    dir: PathBuf,
    inbox: PathBuf,
    lock: PathBuf,
    taken: PathBuf,
    taken_tmp: PathBuf,
    raw: FixedBuf,
    doc: Document,
}

impl Inbox {
    /// The inbox of the data directory `dir`.
    pub fn new(dir: &Path) -> Inbox {
        Inbox {
            dir: dir.to_path_buf(),
            inbox: dir.join("inbox"),
            lock: dir.join("inbox.lock"),
            taken: dir.join("inbox.taken"),
            taken_tmp: dir.join(".inbox.taken.tmp"),
            raw: FixedBuf::with_capacity("inbox buffer (limits::INBOX_MAX_BYTES)", INBOX_MAX_BYTES),
            doc: Document::with_capacity(16, REQUEST_MAX_BYTES + 64),
        }
    }

    /// Moves waiting messages aside (or finds the ones a crash left aside) and writes their
    /// texts, separated by blank lines, into `out`. Returns whether there were any. Lines that
    /// are not messages are set aside (see the module documentation). Call [`Inbox::done`] once
    /// the request has been persisted.
    pub fn take(&mut self, out: &mut FixedBuf) -> Result<bool> {
        out.clear();
        // Two rounds at most: a taken file a crash left behind that holds no message (set aside
        // and removed in the first), then the inbox waiting behind it.
        for _ in 0..2 {
            if !exists(&self.taken)? {
                if !exists(&self.inbox)? {
                    return Ok(false);
                }
                let lock = lock_file(&self.lock)?;
                let renamed = std::fs::rename(&self.inbox, &self.taken);
                drop(lock);
                if let Err(e) = renamed {
                    bail!(Io, "cannot take the inbox {}: {}", self.inbox.display(), e);
                }
            }
            self.read_taken()?;
            let mut bad = 0usize;
            for line in self.raw.as_slice().split(|&b| b == b'\n') {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let Some(text) = message(&mut self.doc, line) else {
                    bad += 1;
                    continue;
                };
                if !out.is_empty() {
                    out.push_str("\n\n")?;
                }
                // `out` holds INBOX_MAX_BYTES in the agent, as much as the file can: this fits.
                out.push_str(text)
                    .map_err(|e| e.context(format_args!("the inbox's messages do not fit the request buffer")))?;
            }
            if bad > 0 {
                self.set_aside(bad, !out.is_empty())?;
            }
            if !out.is_empty() {
                return Ok(true);
            }
            if bad == 0 {
                // Blank lines only: nothing to keep.
                self.done()?;
            }
        }
        Ok(false)
    }

    /// Reads `inbox.taken` into `raw`.
    fn read_taken(&mut self) -> Result<()> {
        self.raw.clear();
        let file = nofollow::open(&self.taken, OpenOptions::new().read(true))?
            .map_err(|e| err!(Io, "cannot open {}: {}", self.taken.display(), e))?;
        let mut reader = file.take(INBOX_MAX_BYTES as u64);
        loop {
            let got = self.raw.fill_with(64 * 1024, |spare| reader.read(spare));
            match got {
                Ok(Ok(0)) => break,
                Ok(Ok(_)) => {}
                Ok(Err(e)) => bail!(Io, "cannot read {}: {}", self.taken.display(), e),
                Err(_) => break, // full: INBOX_MAX_BYTES read; `send` refuses to grow past it
            }
        }
        Ok(())
    }

    /// Moves the `bad` lines of `raw` that are not messages out of `inbox.taken`: appends them
    /// to `inbox.bad-<unix seconds>` (fsynced, the directory too), then rewrites `inbox.taken`
    /// with the good lines only (temp file, fsync, rename, fsync the directory), or removes it
    /// if `any_good` is false. A crash in between finds the bad lines in `inbox.taken` again and
    /// sets them aside again: a line may end up in a `.bad-` file twice, never nowhere. Prints
    /// one warning that names the file.
    fn set_aside(&mut self, bad: usize, any_good: bool) -> Result<()> {
        let bad_path = self.dir.join(format!("inbox.bad-{}", crate::clock::now_unix()));
        let fail = |e: std::io::Error| {
            err!(PersistFailed, "cannot set bad inbox lines aside in {}: {}", bad_path.display(), e)
        };
        let mut f = nofollow::open(&bad_path, OpenOptions::new().create(true).append(true))?.map_err(fail)?;
        for line in self.raw.as_slice().split(|&b| b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) || message(&mut self.doc, line).is_some() {
                continue;
            }
            f.write_all(line).map_err(fail)?;
            f.write_all(b"\n").map_err(fail)?;
        }
        f.sync_all().map_err(fail)?;
        drop(f);
        sync_dir(&self.dir)?;
        if any_good {
            let tmp = &self.taken_tmp;
            let written = (|| -> std::io::Result<()> {
                let mut t = nofollow::create_temp(tmp)?;
                for line in self.raw.as_slice().split(|&b| b == b'\n') {
                    if !line.iter().all(u8::is_ascii_whitespace) && message(&mut self.doc, line).is_some() {
                        t.write_all(line)?;
                        t.write_all(b"\n")?;
                    }
                }
                t.sync_all()?;
                std::fs::rename(tmp, &self.taken)
            })();
            if let Err(e) = written {
                let _ = std::fs::remove_file(tmp);
                bail!(PersistFailed, "cannot rewrite {} without its bad lines: {}", self.taken.display(), e);
            }
        } else {
            self.done()?;
        }
        sync_dir(&self.dir)?;
        err!(
            JsonInvalid,
            "{} line(s) of inbox.taken that are not messages (a torn `send`?) were moved to {}; \
             read them there and send again what was meant",
            bad,
            bad_path.display()
        )
        .print_warning();
        Ok(())
    }

    /// Removes the taken inbox, once its request has been persisted in `memory.json`.
    pub fn done(&mut self) -> Result<()> {
        match std::fs::remove_file(&self.taken) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(err!(Io, "cannot remove {}: {}", self.taken.display(), e)),
        }
    }
}

/// Queues `text` for the agent in data directory `dir` (`lkjagent send`). Returns once the
/// message is on disk (appended and fsynced).
pub fn send(dir: &Path, text: &str, now_unix: u64) -> Result<()> {
    let text = text.trim();
    if text.is_empty() {
        bail!(Usage, "the message is empty");
    }
    if text.len() > REQUEST_MAX_BYTES {
        bail!(
            CapacityExceeded,
            "the message is {} bytes; at most {} fit (limits::REQUEST_MAX_BYTES)",
            text.len(),
            REQUEST_MAX_BYTES
        );
    }
    if !dir.is_dir() {
        bail!(NotFound, "data directory {} does not exist", dir.display());
    }
    let mut line = String::with_capacity(text.len() + 64);
    {
        let mut w = Writer::compact(&mut line as &mut dyn core::fmt::Write);
        w.begin_object()?;
        w.key("time")?;
        w.u64(now_unix)?;
        w.key("text")?;
        w.string(text)?;
        w.end_object()?;
    }
    line.push('\n');
    let lock = lock_file(&dir.join("inbox.lock"))?;
    let path = dir.join("inbox");
    let size = match std::fs::metadata(&path) {
        Ok(m) => m.len(),
        Err(_) => 0,
    };
    if size + line.len() as u64 > INBOX_MAX_BYTES as u64 {
        bail!(
            CapacityExceeded,
            "the inbox holds {} bytes already; run the agent to take the waiting messages (limits::INBOX_MAX_BYTES)",
            size
        );
    }
    let mut f = nofollow::open(&path, OpenOptions::new().create(true).append(true))?
        .map_err(|e| err!(PersistFailed, "cannot open {}: {}", path.display(), e))?;
    f.write_all(line.as_bytes()).map_err(|e| err!(PersistFailed, "cannot append to {}: {}", path.display(), e))?;
    f.sync_all().map_err(|e| err!(PersistFailed, "cannot fsync {}: {}", path.display(), e))?;
    if size == 0 {
        // A new file: make its directory entry durable too.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    drop(lock);
    Ok(())
}

/// The text of an inbox line that is a message (`{"text": "..."}` with some text), trimmed.
fn message<'d>(doc: &'d mut Document, line: &[u8]) -> Option<&'d str> {
    doc.parse(line).ok()?;
    let text = doc.root().get("text")?.as_str()?.trim();
    (!text.is_empty()).then_some(text)
}

fn exists(path: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(err!(Io, "cannot look at {}: {}", path.display(), e)),
    }
}

/// An exclusive lock on `path` (created if needed), released when the file is dropped.
fn lock_file(path: &Path) -> Result<File> {
    let f = nofollow::open(path, OpenOptions::new().create(true).truncate(false).write(true))?
        .map_err(|e| err!(Io, "cannot open lock file {}: {}", path.display(), e))?;
    f.lock().map_err(|e| err!(Io, "cannot lock {}: {}", path.display(), e))?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::temp_dir;

    #[test]
    fn messages_survive_until_done() {
        let dir = temp_dir("a");
        let mut inbox = Inbox::new(&dir);
        let mut out = FixedBuf::with_capacity("t", REQUEST_MAX_BYTES);
        assert!(!inbox.take(&mut out).unwrap());
        send(&dir, "  first \"quoted\"\nline ", 1).unwrap();
        send(&dir, "second é", 2).unwrap();
        assert!(inbox.take(&mut out).unwrap());
        assert_eq!(out.as_str().unwrap(), "first \"quoted\"\nline\n\nsecond é");
        // Not done yet (as after a crash): the same messages come back, and new ones wait.
        send(&dir, "third", 3).unwrap();
        let mut again = Inbox::new(&dir);
        assert!(again.take(&mut out).unwrap());
        assert_eq!(out.as_str().unwrap(), "first \"quoted\"\nline\n\nsecond é");
        again.done().unwrap();
        assert!(again.take(&mut out).unwrap());
        assert_eq!(out.as_str().unwrap(), "third");
        again.done().unwrap();
        assert!(!again.take(&mut out).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn many_messages_are_taken_together() {
        let dir = temp_dir("c");
        let big = "x".repeat(REQUEST_MAX_BYTES - 10);
        for i in 0..4 {
            send(&dir, &format!("{}{}", i, big), i).unwrap();
        }
        let mut inbox = Inbox::new(&dir);
        let mut out = FixedBuf::with_capacity("request", INBOX_MAX_BYTES);
        assert!(inbox.take(&mut out).unwrap());
        let text = out.as_str().unwrap();
        assert_eq!(text.matches(&big).count(), 4);
        assert!(text.starts_with('0') && text.contains("\n\n3x"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The files named `inbox.bad-*` in `dir`, with their contents.
    fn bad_files(dir: &Path) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("inbox.bad-"))
            .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn bad_lines_are_set_aside_and_good_ones_taken() {
        let dir = temp_dir("d");
        let taken = "{\"time\":1,\"text\":\"one\"}\n{\"time\":2,\"te\n{\"time\":3}\n\n{\"time\":4,\"text\":\"two\"}\n";
        std::fs::write(dir.join("inbox.taken"), taken).unwrap();
        send(&dir, "three", 5).unwrap();
        let mut inbox = Inbox::new(&dir);
        let mut out = FixedBuf::with_capacity("t", INBOX_MAX_BYTES);
        assert!(inbox.take(&mut out).unwrap());
        assert_eq!(out.as_str().unwrap(), "one\n\ntwo");
        let bad = bad_files(&dir);
        assert_eq!(bad.len(), 1, "{:?}", bad);
        assert_eq!(bad[0].1, "{\"time\":2,\"te\n{\"time\":3}\n");
        // Moved, not copied: taking again (as after a crash before `done`) sets nothing aside twice.
        let mut again = Inbox::new(&dir);
        assert!(again.take(&mut out).unwrap());
        assert_eq!(out.as_str().unwrap(), "one\n\ntwo");
        assert_eq!(bad_files(&dir), bad);
        again.done().unwrap();
        assert!(again.take(&mut out).unwrap());
        assert_eq!(out.as_str().unwrap(), "three");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_inbox_of_bad_lines_only_does_not_jam() {
        let dir = temp_dir("e");
        std::fs::write(dir.join("inbox.taken"), "not json\n").unwrap();
        send(&dir, "waiting", 5).unwrap();
        let mut inbox = Inbox::new(&dir);
        let mut out = FixedBuf::with_capacity("t", INBOX_MAX_BYTES);
        assert!(inbox.take(&mut out).unwrap(), "the waiting message is taken in the same call");
        assert_eq!(out.as_str().unwrap(), "waiting");
        assert_eq!(bad_files(&dir).iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>(), ["not json\n"]);
        inbox.done().unwrap();
        // Bad lines only and nothing waiting: set aside, nothing taken, nothing left behind.
        std::fs::write(dir.join("inbox.taken"), "{\"text\":7}\n").unwrap();
        assert!(!inbox.take(&mut out).unwrap());
        assert!(!dir.join("inbox.taken").exists());
        let all: String = bad_files(&dir).into_iter().map(|(_, t)| t).collect();
        assert!(all.contains("not json\n") && all.contains("{\"text\":7}\n"), "{}", all);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn torn_line_is_set_aside_and_empty_message_refused() {
        let dir = temp_dir("b");
        send(&dir, "whole", 1).unwrap();
        let mut f = OpenOptions::new().append(true).open(dir.join("inbox")).unwrap();
        f.write_all(b"{\"time\":2,\"text\":\"tor").unwrap();
        let mut inbox = Inbox::new(&dir);
        let mut out = FixedBuf::with_capacity("t", REQUEST_MAX_BYTES);
        assert!(inbox.take(&mut out).unwrap());
        assert_eq!(out.as_str().unwrap(), "whole");
        assert_eq!(send(&dir, "   ", 3).unwrap_err().code(), crate::error::Code::Usage);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
