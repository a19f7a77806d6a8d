//! Free disk space, asked before writes that could not report a full disk.
//!
//! Qdrant's embedded engine writes its log and segments through memory maps. A page of a map
//! that the file system cannot back (the disk is full, the file was sparse) does not fail a
//! call: the process receives SIGBUS and dies without a word. So the stores ask here first and
//! refuse a write that would not fit, naming the folder; a `serve` then answers 507 and stays
//! up. The answer is a snapshot (another process may fill the disk a moment later), so the
//! binary also turns a SIGBUS into a message (see `main.rs`).

use std::path::Path;

use crate::error::{Error, Result};

/// Bytes an unprivileged process may still write in the file system that holds `path` (or
/// its nearest folder that exists).
pub fn available(path: &Path) -> Result<u64> {
    let existing = path
        .ancestors()
        .find(|p| p.exists())
        .unwrap_or(Path::new("."));
    free_bytes(existing).map_err(|e| Error::io(existing, e))
}

#[cfg(unix)]
fn free_bytes(path: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `name` is a NUL-terminated path and `stats` is written by the call before it is
    // read.
    let stats = unsafe {
        if libc::statvfs(name.as_ptr(), stats.as_mut_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        stats.assume_init()
    };
    Ok((stats.f_bavail as u64).saturating_mul(stats.f_frsize as u64))
}

#[cfg(not(unix))]
fn free_bytes(_: &Path) -> std::io::Result<u64> {
    Ok(u64::MAX)
}

/// Fails with [`Error::DiskFull`] unless `needed` bytes are free at `path`; `what` is the
/// write, `hint` what else the user can do than free space.
pub fn require(path: &Path, needed: u64, what: &'static str, hint: &'static str) -> Result<()> {
    let free = available(path)?;
    if free >= needed {
        return Ok(());
    }
    Err(Error::DiskFull {
        path: path.to_owned(),
        what,
        needed,
        free,
        hint,
    })
}

/// Bytes the files under `dir` take on their size but not yet on disk: holes in sparse files,
/// which the engine fills through its memory maps.
pub fn unallocated(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(|entry| entry.ok()?.metadata().ok())
        .filter(|meta| meta.is_file())
        .map(|meta| {
            #[cfg(unix)]
            let allocated = std::os::unix::fs::MetadataExt::blocks(&meta) * 512;
            #[cfg(not(unix))]
            let allocated = meta.len();
            meta.len().saturating_sub(allocated)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_not_yet_made_is_asked_of_its_file_system() {
        let dir = tempfile::tempdir().unwrap();
        let free = available(&dir.path().join("not/yet")).unwrap();
        assert!(free > 0);
        assert_eq!(free / (1 << 20), available(dir.path()).unwrap() / (1 << 20));
        let err = require(dir.path(), u64::MAX, "a test write", "give another folder");
        let message = err.unwrap_err().to_string();
        assert!(message.contains("a test write needs about"), "{message}");
        assert!(
            message.contains("free some space there, or give another folder"),
            "{message}"
        );
    }

    #[test]
    fn holes_in_sparse_files_count_as_space_still_needed() {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::File::create(dir.path().join("sparse")).unwrap();
        file.set_len(8 << 20).unwrap();
        std::fs::write(dir.path().join("written"), vec![1u8; 1 << 20]).unwrap();
        let holes = unallocated(dir.path());
        assert!(holes >= (8 << 20) - 4096 && holes <= 8 << 20, "{holes}");
    }
}
