//! Atomic output files: written under a temporary name beside the target, flushed to disk, then
//! renamed over it. A reader sees the old file or the complete new one, never half of one; an
//! interrupted run leaves at most a stray temporary file, which is removed on drop.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use tempfile::NamedTempFile;

use crate::error::{Error, Result};

/// A file that appears under its name only when [`AtomicFile::commit`] succeeds.
pub struct AtomicFile {
    target: PathBuf,
    writer: BufWriter<NamedTempFile>,
}

impl AtomicFile {
    /// Starts writing `target` (its folder must exist).
    pub fn create(target: &Path) -> Result<Self> {
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
        let temp = builder.tempfile_in(dir).map_err(|e| Error::io(target, e))?;
        Ok(AtomicFile {
            target: target.to_owned(),
            writer: BufWriter::with_capacity(1 << 20, temp),
        })
    }

    /// Where the file will appear.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes, syncs and renames the file into place.
    pub fn commit(self) -> Result<()> {
        let target = self.target;
        let temp = self
            .writer
            .into_inner()
            .map_err(|e| Error::io(&target, e.into_error()))?;
        temp.as_file()
            .sync_all()
            .map_err(|e| Error::io(&target, e))?;
        temp.persist(&target)
            .map_err(|e| Error::io(&target, e.error))?;
        Ok(())
    }
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
    fn results_are_readable_by_others_like_any_new_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.jsonl");
        write_json_lines(&target, [1]).unwrap();
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_ne!(mode & 0o044, 0, "mode {mode:o}: not private to the owner");
    }
}
