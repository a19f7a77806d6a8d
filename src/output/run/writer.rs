//! Writing a run's folder ([`RunWriter`]): locked from the run's start, each file written
//! atomically with its digest ([`RunFile`]), the summary last, and files of earlier runs that
//! this one did not write removed.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;
use xxhash_rust::xxh3::Xxh3;

use super::records::{
    CandidatesFormat, EVAL, FileDigest, Groups, Pairs, RecordFile, RunSummary, SUMMARY,
};
use crate::error::{Error, Result};
use crate::io::FolderLock;
use crate::output::AtomicFile;
use crate::output::records::OutputFormat;

/// Held while a run writes into the folder.
const LOCK: &str = ".neardup.lock";

/// Every file a run may leave; a new run replaces or removes each.
fn run_files() -> impl Iterator<Item = &'static str> {
    [Pairs::NAME, Groups::NAME, SUMMARY, EVAL]
        .into_iter()
        .chain(CandidatesFormat::all().iter().filter_map(|f| f.file()))
        .chain(
            OutputFormat::ALL
                .into_iter()
                .flat_map(|f| [f.unique_file(), f.annotated_file()]),
        )
}

/// Records serialised together by [`RunWriter::write_lines_in_parallel`].
const PARALLEL_BLOCK: usize = 1 << 14;

/// Writes a run's files into its output folder.
pub struct RunWriter {
    dir: PathBuf,
    run: String,
    files: BTreeMap<String, FileDigest>,
    /// Held until the summary is written.
    _lock: FolderLock,
}

impl RunWriter {
    /// Starts writing a run into the folder `lock` holds ([`RunWriter::lock`]): removes
    /// temporary files of killed runs and the previous run's summary, so that until this run's
    /// summary is written the folder reads as incomplete.
    pub fn begin(lock: FolderLock) -> Result<Self> {
        let dir = lock.dir();
        remove_stale_temporaries(dir)?;
        remove_if_present(&dir.join(SUMMARY))?;
        Ok(RunWriter {
            dir: dir.to_owned(),
            run: new_run_id(),
            files: BTreeMap::new(),
            _lock: lock,
        })
    }

    /// Locks `dir` (created if missing) for a run, from its start: a second run into the
    /// folder is refused before it does any work, naming the first. A folder that holds files
    /// and is no run's (no summary, no lock) is refused too: its files would be overwritten.
    pub fn lock(dir: &Path) -> Result<FolderLock> {
        if let Ok(entries) = std::fs::read_dir(dir) {
            let names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            if !names.is_empty() && !names.iter().any(|n| n == SUMMARY || n == LOCK) {
                let mut shown: Vec<&str> = names.iter().map(String::as_str).take(3).collect();
                shown.sort_unstable();
                return Err(Error::Usage(format!(
                    "--out {} holds files neardup did not write ({}{}); give a new or empty \
                     folder, or the folder of an earlier run",
                    dir.display(),
                    shown.join(", "),
                    if names.len() > 3 { ", ..." } else { "" }
                )));
            }
        }
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        FolderLock::take(dir, LOCK, "give another --out")
    }

    /// Starts writing one of the run's files.
    pub fn create(&self, name: &str) -> Result<RunFile> {
        Ok(RunFile {
            name: name.to_owned(),
            file: AtomicFile::create(&self.dir.join(name))?,
            hasher: Xxh3::new(),
            bytes: 0,
        })
    }

    /// Writes the file `name` with `write`, then puts it in place (the twin of
    /// [`RunFolder::read_with`]).
    pub fn write_with(
        &mut self,
        name: &str,
        write: impl FnOnce(&mut RunFile) -> std::io::Result<()>,
    ) -> Result<()> {
        let mut file = self.create(name)?;
        write(&mut file).map_err(|e| Error::io(file.target(), e))?;
        self.commit(file)
    }

    /// Puts a file in place and records its digest.
    pub fn commit(&mut self, file: RunFile) -> Result<()> {
        let digest = FileDigest {
            bytes: file.bytes,
            xxh3: file.hasher.digest(),
        };
        file.file.commit()?;
        self.files.insert(file.name, digest);
        Ok(())
    }

    /// Writes `records`, each serialising as an `F::Record`, to the file `F`.
    pub fn write_lines<F: RecordFile, T: Serialize>(
        &mut self,
        records: impl IntoIterator<Item = T>,
    ) -> Result<()> {
        let mut file = self.create(F::NAME)?;
        for record in records {
            file.write_record(&record)?;
        }
        self.commit(file)
    }

    /// Writes `count` records to the file `F`, the `i`th made by `record(i)`: the same file
    /// as [`RunWriter::write_lines`], made on every core ([`RunFile::write_lines_in_parallel`]).
    pub fn write_lines_in_parallel<F: RecordFile, T: Serialize>(
        &mut self,
        count: usize,
        record: impl Fn(usize) -> T + Sync,
    ) -> Result<()> {
        let mut file = self.create(F::NAME)?;
        file.write_lines_in_parallel(count, record)?;
        self.commit(file)
    }

    /// Writes the summary, naming this run and its files, and removes files of earlier runs
    /// that this one did not write. The run is complete when this returns.
    pub fn finish(self, mut summary: RunSummary) -> Result<RunSummary> {
        for name in run_files() {
            if name != SUMMARY && !self.files.contains_key(name) {
                remove_if_present(&self.dir.join(name))?;
            }
        }
        summary.run = self.run.clone();
        summary.files = self.files.clone();
        crate::output::write_json_pretty(&self.dir.join(SUMMARY), &summary)?;
        Ok(summary)
    }
}

/// One file of a run being written: the bytes go to an [`AtomicFile`] and into its digest.
pub struct RunFile {
    name: String,
    file: AtomicFile,
    hasher: Xxh3,
    bytes: u64,
}

impl RunFile {
    /// Appends `count` records, the `i`th made by `record(i)`, made and serialised a block at
    /// a time on every core (tens of millions of candidates are most of a large run's
    /// writing), and the blocks written in order.
    pub fn write_lines_in_parallel<T: Serialize>(
        &mut self,
        count: usize,
        record: impl Fn(usize) -> T + Sync,
    ) -> Result<()> {
        let target = self.target().to_owned();
        let starts: Vec<usize> = (0..count).step_by(PARALLEL_BLOCK).collect();
        // A few blocks a thread at a time: only their bytes wait to be written. Each round
        // refills the last round's buffers: made anew, they grew by doubling on the workers
        // and were freed here, memory the allocator gives back and must touch fresh.
        let mut blocks: Vec<Vec<u8>> = Vec::new();
        for starts in starts.chunks(4 * rayon::current_num_threads()) {
            if crate::cancel::requested() {
                return Err(Error::Interrupted);
            }
            blocks.resize_with(starts.len(), Vec::new);
            (starts.par_iter().zip(blocks.par_iter_mut())).try_for_each(|(&start, bytes)| {
                bytes.clear();
                (start..(start + PARALLEL_BLOCK).min(count))
                    .try_for_each(|i| json_line(bytes, &record(i), &target))
            })?;
            for block in &blocks {
                self.write_all(block).map_err(|e| Error::io(&target, e))?;
            }
        }
        Ok(())
    }

    /// Writes one JSON record and its newline.
    pub fn write_record(&mut self, record: &impl Serialize) -> Result<()> {
        let mut line = Vec::new();
        json_line(&mut line, record, self.file.target())?;
        self.write_all(&line)
            .map_err(|e| Error::io(self.file.target(), e))
    }

    /// Where the file will appear.
    pub fn target(&self) -> &Path {
        self.file.target()
    }
}

impl Write for RunFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// Appends `record` as one JSON line to `bytes`, bound for the file `target`.
fn json_line(bytes: &mut Vec<u8>, record: &impl Serialize, target: &Path) -> Result<()> {
    serde_json::to_writer(&mut *bytes, record)
        .map_err(|e| Error::io(target, std::io::Error::other(e)))?;
    bytes.push(b'\n');
    Ok(())
}

/// Removes `.NAME.*.tmp` files that [`AtomicFile`] leaves when a run is killed.
fn remove_stale_temporaries(dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let ours = run_files()
            .any(|file| name.starts_with(&format!(".{file}.")) && name.ends_with(".tmp"));
        if ours {
            tracing::info!(file = %name, "removing a temporary file of an interrupted run");
            remove_if_present(&entry.path())?;
        }
    }
    Ok(())
}

fn remove_if_present(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(path, e)),
        _ => Ok(()),
    }
}

/// A run id: the start time (Unix seconds, hex) and a random part, e.g. `6940a1b3-3f9a2c1e`.
fn new_run_id() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{seconds:x}-{:08x}", rand::random::<u32>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::run::Candidates;

    #[test]
    fn lines_written_in_parallel_are_the_lines_written_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut run = RunWriter::begin(RunWriter::lock(dir.path()).unwrap()).unwrap();
        // Blocks of both sizes: whole ones and a short last one.
        let count = 2 * PARALLEL_BLOCK + 123;
        let record = |i: usize| serde_json::json!({"i": i, "half": i as f64 / 2.0});
        run.write_lines::<Pairs, _>((0..count).map(record)).unwrap();
        run.write_lines_in_parallel::<Candidates, _>(count, record)
            .unwrap();
        let pairs = std::fs::read(dir.path().join(Pairs::NAME)).unwrap();
        assert_eq!(
            pairs,
            std::fs::read(dir.path().join(Candidates::NAME)).unwrap()
        );
        assert_eq!(pairs.iter().filter(|&&b| b == b'\n').count(), count);
        assert_eq!(
            run.files[Pairs::NAME].xxh3,
            run.files[Candidates::NAME].xxh3
        );
    }
}
