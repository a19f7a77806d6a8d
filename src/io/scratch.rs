//! Scratch folders: temporary folders for work that can be large (a two-stage run's vector
//! index is about 6 KB a document, 635 MB at 100k; a model being fetched), which must not
//! outlive the run.
//!
//! A [`ScratchDir`] is removed when dropped, when the process gets Ctrl-C or SIGTERM (where the
//! program asked for that with [`remove_on_interrupt`]: the command line does, a host such as
//! the Python interpreter keeps its own signals), and, if the process was killed outright, by
//! the next neardup that makes one: each holds a lock on a file inside it while it lives, so a
//! folder whose lock can be taken has no owner left.
//!
//! On a signal the work is first asked to stop ([`crate::cancel`]) and drops its folders as it
//! unwinds. Removing them from the signal's thread instead races the work: a thread still
//! writing an index makes its folders again, parents included, after they are gone. Work that
//! does not stop within [`STOP_GRACE`], or a second signal, gets the old way: the live folders
//! are removed and the process exits at once.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, SystemTime};

use crate::error::{Error, Result};

/// Names of scratch folders start with this, in the system's temporary folder.
const PREFIX: &str = "neardup-scratch-";
/// Held by the folder's owner while it lives.
const OWNER_LOCK: &str = ".owner.lock";
/// A folder without its lock file this old was left by a process killed while making it.
const UNLOCKED_GRACE: Duration = Duration::from_secs(600);

/// How long interrupted work has to stop by itself before its folders are removed under it.
const STOP_GRACE: Duration = Duration::from_secs(3);
/// What an interrupted command line says, once, whichever way it stops.
const INTERRUPTED: &str = "interrupted: temporary files removed";

/// Folders to remove if the process is interrupted.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static HANDLER: Once = Once::new();
/// Whether the program asked for [`remove_on_interrupt`].
static ON_INTERRUPT: AtomicBool = AtomicBool::new(false);
/// Whether a signal came: a second one removes the folders at once.
static SIGNALLED: AtomicBool = AtomicBool::new(false);
/// Whether [`INTERRUPTED`] was said.
static REPORTED: AtomicBool = AtomicBool::new(false);

/// Asks that Ctrl-C and SIGTERM remove the live scratch folders and end the process (exit code
/// 130), from the first scratch folder made on: what a command-line program wants, and what a
/// library loaded into another program must not do on its own.
pub fn remove_on_interrupt() {
    ON_INTERRUPT.store(true, Ordering::Relaxed);
}

/// A temporary folder removed on drop, on Ctrl-C / SIGTERM (see [`remove_on_interrupt`]), or
/// by the next run if this process was killed.
pub struct ScratchDir {
    dir: tempfile::TempDir,
    _owner: File,
}

impl ScratchDir {
    /// Makes a scratch folder in the system's temporary folder, after removing those that
    /// killed runs left behind.
    pub fn new() -> Result<Self> {
        Self::new_in(&std::env::temp_dir())
    }

    /// Makes a scratch folder in `root` (which must exist), after removing those that killed
    /// runs left there.
    pub fn new_in(root: &Path) -> Result<Self> {
        sweep(root);
        if ON_INTERRUPT.load(Ordering::Relaxed) {
            install_handler();
        }
        let dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .tempdir_in(root)
            .map_err(|e| Error::io(root, e))?;
        let lock_path = dir.path().join(OWNER_LOCK);
        let owner = File::create(&lock_path).map_err(|e| Error::io(&lock_path, e))?;
        owner.lock().map_err(|e| Error::io(&lock_path, e))?;
        live().push(dir.path().to_owned());
        Ok(ScratchDir { dir, _owner: owner })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Keeps the folder's content as `target` (on the same file system), replacing a folder
    /// there: how a folder that must appear whole (a model) is made.
    pub fn persist(self, target: &Path) -> Result<()> {
        let lock = self.path().join(OWNER_LOCK);
        std::fs::remove_file(&lock).map_err(|e| Error::io(&lock, e))?;
        if target.exists() {
            std::fs::remove_dir_all(target).map_err(|e| Error::io(target, e))?;
        }
        std::fs::rename(self.path(), target).map_err(|e| Error::io(target, e))
        // Dropping `self` now finds nothing to remove.
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        live().retain(|p| p != self.dir.path());
        // `TempDir` removes the folder after this.
    }
}

fn live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    // A panic while the list was held leaves it usable: it is only a list of paths.
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Says that the run was interrupted and its temporary files are gone: once, from whichever of
/// the unwound work (the command line, on [`Error::Interrupted`]) and the signal's fallback
/// ends the process first.
pub fn report_interrupted() {
    if !REPORTED.swap(true, Ordering::Relaxed) {
        eprintln!("{INTERRUPTED}");
    }
}

/// On Ctrl-C or SIGTERM: ask the work to stop, and give it [`STOP_GRACE`] before removing the
/// live folders and exiting as interrupted (130); a second signal does that at once.
fn install_handler() {
    HANDLER.call_once(|| {
        let installed = ctrlc::set_handler(|| {
            if SIGNALLED.swap(true, Ordering::Relaxed) {
                remove_live_and_exit();
            }
            crate::cancel::request();
            // The handler's own thread must stay free for a second signal.
            std::thread::spawn(|| {
                std::thread::sleep(STOP_GRACE);
                tracing::warn!("the work did not stop in time: removing its temporary files");
                remove_live_and_exit();
            });
        });
        if let Err(e) = installed {
            tracing::warn!(error = %e, "cannot clean temporary files on Ctrl-C");
        }
    });
}

/// Removes the live folders and exits as interrupted, holding the list so that no new folder
/// joins it meanwhile.
fn remove_live_and_exit() -> ! {
    let live = live();
    for dir in live.iter() {
        let _ = std::fs::remove_dir_all(dir);
    }
    report_interrupted();
    std::process::exit(130);
}

/// Removes scratch folders under `root` whose owner is gone.
fn sweep(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let ours = entry.file_name().to_string_lossy().starts_with(PREFIX);
        if ours && is_abandoned(&path) {
            tracing::info!(dir = %path.display(), "removing the temporary index of a killed run");
            if let Err(e) = std::fs::remove_dir_all(&path) {
                tracing::warn!(dir = %path.display(), error = %e, "cannot remove it");
            }
        }
    }
}

/// Whether no process owns the scratch folder at `path`.
fn is_abandoned(path: &Path) -> bool {
    match File::open(path.join(OWNER_LOCK)) {
        // The lock is released when its owner exits, however it exits.
        Ok(lock) => lock.try_lock().is_ok(),
        // Made but not yet locked: only abandoned once it is old.
        Err(_) => std::fs::metadata(path)
            .and_then(|m| m.modified())
            .is_ok_and(|made| {
                SystemTime::now()
                    .duration_since(made)
                    .is_ok_and(|age| age > UNLOCKED_GRACE)
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_swept_once_its_owner_is_gone_and_not_before() {
        let root = tempfile::tempdir().unwrap();
        let owned = root.path().join(format!("{PREFIX}owned"));
        let abandoned = root.path().join(format!("{PREFIX}abandoned"));
        let fresh = root.path().join(format!("{PREFIX}fresh"));
        let other = root.path().join("someone-elses");
        for dir in [&owned, &abandoned, &fresh, &other] {
            std::fs::create_dir(dir).unwrap();
        }
        let owner = File::create(owned.join(OWNER_LOCK)).unwrap();
        owner.lock().unwrap();
        // A lock file no one holds: its owner exited.
        File::create(abandoned.join(OWNER_LOCK)).unwrap();
        // `fresh` has no lock file yet, but is too new to be judged.
        sweep(root.path());
        assert!(owned.exists() && fresh.exists() && other.exists());
        assert!(!abandoned.exists());
        drop(owner);
        sweep(root.path());
        assert!(!owned.exists());
    }

    #[test]
    fn a_persisted_folder_appears_whole_without_its_lock() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("model");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("old"), b"x").unwrap();
        let scratch = ScratchDir::new_in(root.path()).unwrap();
        std::fs::write(scratch.path().join("weights"), b"w").unwrap();
        scratch.persist(&target).unwrap();
        let names: Vec<String> = std::fs::read_dir(&target)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["weights"]);
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_scratch_folder_is_gone_after_drop() {
        let scratch = ScratchDir::new().unwrap();
        let path = scratch.path().to_owned();
        std::fs::write(path.join("data"), b"x").unwrap();
        assert!(live().contains(&path));
        drop(scratch);
        assert!(!path.exists());
        assert!(!live().contains(&path));
    }
}
