//! Folder locks: one neardup process at a time writes an output folder or opens an embedded
//! store. The lock is an advisory lock on a file in the folder, released by the OS when the
//! process ends however it ends; the file also names its holder, so that the process refused
//! can say which run it waits for.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A held lock; released when dropped.
#[derive(Debug)]
pub struct FolderLock {
    dir: PathBuf,
    _file: File,
}

impl FolderLock {
    /// Takes the lock file `name` in `dir` (which must exist), writing this process into it.
    /// Held by another process: [`Error::Busy`] naming that process, with `hint` for what
    /// else to do.
    pub fn take(dir: &Path, name: &str, hint: &'static str) -> Result<FolderLock> {
        let path = dir.join(name);
        // Not truncated before it is held: the file names the holder.
        let mut file = File::options()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(Error::Busy {
                    path: dir.to_owned(),
                    ours: holder.starts_with(&this_process()),
                    holder: (!holder.is_empty()).then(|| holder.to_owned()),
                    hint,
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&path, e)),
        }
        let holder = format!(
            "{}{}",
            this_process(),
            std::env::args_os()
                .map(|a| a.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        );
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(holder.as_bytes()))
            .map_err(|e| Error::io(&path, e))?;
        Ok(FolderLock {
            dir: dir.to_owned(),
            _file: file,
        })
    }

    /// [`FolderLock::take`], waiting while another process (or another thread of this one)
    /// holds the lock: `waiting` is told the holder once, then the lock is tried again every
    /// 100 ms (`WAIT_POLL`) until it is free or the caller asks to stop ([`crate::cancel`]).
    pub fn wait(
        dir: &Path,
        name: &str,
        hint: &'static str,
        waiting: impl FnOnce(&str),
    ) -> Result<FolderLock> {
        let mut waiting = Some(waiting);
        loop {
            match FolderLock::take(dir, name, hint) {
                Err(Error::Busy { holder, .. }) => {
                    if let Some(waiting) = waiting.take() {
                        waiting(holder.as_deref().unwrap_or("another neardup process"));
                    }
                    if crate::cancel::requested() {
                        return Err(Error::Interrupted);
                    }
                    std::thread::sleep(WAIT_POLL);
                }
                taken => return taken,
            }
        }
    }

    /// The folder locked.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// How often [`FolderLock::wait`] tries a held lock again.
const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// How a lock file names this process: its holder line starts so.
fn this_process() -> String {
    format!("pid {}: ", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_taker_is_refused_and_told_who_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let held = FolderLock::take(dir.path(), "x.lock", "wait").unwrap();
        // A second open file description: locks conflict within one process too.
        let err = FolderLock::take(dir.path(), "x.lock", "give another --out").unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("in use elsewhere in this process (pid ")
                && message.contains(&std::process::id().to_string())
                && message.ends_with("give another --out"),
            "{message}"
        );
        drop(held);
        FolderLock::take(dir.path(), "x.lock", "wait").unwrap();
    }

    #[test]
    fn a_waiting_taker_gets_the_lock_once_its_holder_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let held = FolderLock::take(dir.path(), "x.lock", "wait").unwrap();
        let (told, heard) = std::sync::mpsc::channel();
        let path = dir.path().to_owned();
        let waiter = std::thread::spawn(move || {
            FolderLock::wait(&path, "x.lock", "wait", |holder| {
                told.send(holder.to_owned()).unwrap()
            })
        });
        let holder = heard.recv().unwrap();
        assert!(holder.starts_with(&this_process()), "{holder}");
        assert!(!waiter.is_finished(), "it waits while the lock is held");
        drop(held);
        let taken = waiter.join().unwrap().unwrap();
        assert_eq!(taken.dir(), dir.path());
        assert!(FolderLock::take(dir.path(), "x.lock", "wait").is_err());
    }
}
