//! Atomic output files: written under a temporary name beside the target, flushed to disk, then
//! renamed over it. A reader sees the old file or the complete new one, never half of one; an
//! interrupted run leaves at most a stray temporary file, which is removed on drop.
//!
//! Only a regular file is replaced so. A symbolic link is followed (its target is replaced,
//! the link kept), and anything else the user names as output (a FIFO, a terminal,
//! `/dev/null`) is written through in place: renaming over it would replace the device with a
//! file. `-` is standard output.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use tempfile::NamedTempFile;

use super::writeback::{Writeback, WrittenBack};
use crate::error::{Error, Result};

/// The name that means standard output wherever a file is written.
pub const STDOUT: &str = "-";

/// A handle of its own on standard output.
fn standard_output() -> Result<std::fs::File> {
    use std::os::fd::AsFd;
    let fd = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| Error::io(Path::new("standard output"), e))?;
    Ok(std::fs::File::from(fd))
}

/// A file that appears under its name only when [`AtomicFile::commit`] succeeds.
pub struct AtomicFile {
    target: PathBuf,
    writer: BufWriter<Sink>,
}

/// Where the bytes go: a temporary file to rename, or the target itself.
enum Sink {
    Replace(WrittenBack<NamedTempFile>),
    Through(std::fs::File),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Replace(file) => file.write(buf),
            Sink::Through(file) => file.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Replace(file) => file.flush(),
            Sink::Through(file) => file.flush(),
        }
    }
}

impl AtomicFile {
    /// Starts writing `target` (its folder must exist).
    pub fn create(target: &Path) -> Result<Self> {
        if target == Path::new(STDOUT) {
            return Ok(AtomicFile {
                target: target.to_owned(),
                writer: BufWriter::with_capacity(1 << 20, Sink::Through(standard_output()?)),
            });
        }
        // A device or pipe is written through as named: the kernel follows `/dev/stdout` to a
        // pipe that no path names.
        if let Ok(meta) = std::fs::metadata(target)
            && !meta.is_file()
            && !meta.is_dir()
        {
            let through = std::fs::OpenOptions::new()
                .write(true)
                .open(target)
                .map_err(|e| Error::io(target, e))?;
            return Ok(AtomicFile {
                target: target.to_owned(),
                writer: BufWriter::with_capacity(1 << 20, Sink::Through(through)),
            });
        }
        let resolved = follow_links(target)?;
        let sink = match std::fs::metadata(&resolved) {
            Ok(meta) if meta.is_dir() => {
                return Err(Error::Usage(format!(
                    "{} is a folder; give a file to write",
                    target.display()
                )));
            }
            Ok(meta) if !meta.is_file() => Sink::Through(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&resolved)
                    .map_err(|e| Error::io(target, e))?,
            ),
            _ => Sink::Replace(WrittenBack::new(temporary_beside(&resolved)?)),
        };
        Ok(AtomicFile {
            target: resolved,
            writer: BufWriter::with_capacity(1 << 20, sink),
        })
    }

    /// Where the file will appear.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes, syncs and renames the file into place (or flushes what is written through).
    pub fn commit(self) -> Result<()> {
        let target = self.target;
        let sink = self
            .writer
            .into_inner()
            .map_err(|e| Error::io(&target, e.into_error()))?;
        if let Sink::Replace(temp) = sink {
            let temp = temp.into_inner();
            temp.as_file()
                .sync_all()
                .map_err(|e| Error::io(&target, e))?;
            temp.persist(&target)
                .map_err(|e| Error::io(&target, e.error))?;
        }
        Ok(())
    }
}

impl Writeback for NamedTempFile {
    fn send(&self, offset: u64, len: u64, wait: bool) -> std::io::Result<()> {
        self.as_file().send(offset, len, wait)
    }

    fn forget(&self, offset: u64, len: u64) {
        self.as_file().forget(offset, len)
    }
}

/// `path`, or where its chain of symbolic links ends (which need not exist yet).
fn follow_links(path: &Path) -> Result<PathBuf> {
    let mut path = path.to_owned();
    // As the OS does, give up on a loop.
    for _ in 0..40 {
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = std::fs::read_link(&path).map_err(|e| Error::io(&path, e))?;
                path = match path.parent() {
                    Some(parent) => parent.join(link),
                    None => link,
                };
            }
            _ => return Ok(path),
        }
    }
    Err(Error::io(
        &path,
        std::io::Error::other("too many levels of symbolic links"),
    ))
}

/// A new temporary file in `target`'s folder, to be renamed over it.
fn temporary_beside(target: &Path) -> Result<NamedTempFile> {
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    // Temporary files are private (0600) by default; a result file should get the usual
    // permissions (0666 less the umask), like any file the user creates.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    builder.tempfile_in(dir).map_err(|e| Error::io(target, e))
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.flush()
    }
}

/// Writes `items` as JSON Lines to `path`, atomically.
pub fn write_json_lines<T: Serialize>(
    path: &Path,
    items: impl IntoIterator<Item = T>,
) -> Result<()> {
    let mut file = AtomicFile::create(path)?;
    for item in items {
        serde_json::to_writer(&mut file, &item).map_err(|e| Error::io(path, e.into()))?;
        file.write_all(b"\n").map_err(|e| Error::io(path, e))?;
    }
    file.commit()
}

/// Writes `value` as pretty-printed JSON to `path`, atomically.
pub fn write_json_pretty(path: &Path, value: &impl Serialize) -> Result<()> {
    let mut file = AtomicFile::create(path)?;
    serde_json::to_writer_pretty(&mut file, value).map_err(|e| Error::io(path, e.into()))?;
    file.write_all(b"\n").map_err(|e| Error::io(path, e))?;
    file.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_appears_until_commit_and_an_abandoned_write_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.jsonl");
        std::fs::write(&target, "old\n").unwrap();
        {
            let mut f = AtomicFile::create(&target).unwrap();
            f.write_all(b"half").unwrap();
            // dropped without commit: an interrupted run
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old\n");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "temp file removed"
        );

        write_json_lines(&target, [serde_json::json!({"a": 1})]).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "{\"a\":1}\n");
    }

    #[cfg(unix)]
    #[test]
    fn a_link_keeps_its_place_and_a_fifo_or_device_is_written_through() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.jsonl");
        std::fs::write(&real, "old\n").unwrap();
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink("real.jsonl", &link).unwrap();
        write_json_lines(&link, [1]).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "1\n");

        write_json_lines(Path::new("/dev/null"), [1]).unwrap();
        assert!(!std::fs::metadata("/dev/null").unwrap().is_file());
        let err = write_json_lines(Path::new("/dev/full"), [1]).unwrap_err();
        assert!(err.to_string().contains("/dev/full"), "{err}");
        assert!(!std::fs::metadata("/dev/full").unwrap().is_file());

        let fifo = dir.path().join("fifo");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        write_json_lines(&fifo, [serde_json::json!({"a": 1})]).unwrap();
        assert_eq!(reader.join().unwrap(), "{\"a\":1}\n");
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
    }

    #[cfg(unix)]
    #[test]
    fn results_are_readable_by_others_like_any_new_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.jsonl");
        write_json_lines(&target, [1]).unwrap();
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_ne!(mode & 0o044, 0, "mode {mode:o}: not private to the owner");
    }
}
