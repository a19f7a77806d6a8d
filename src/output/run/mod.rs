//! A run's output folder, as one unit.
//!
//! A run writes these files, each atomically (see [`AtomicFile`]):
//! - files of records, one JSON object a line, each with its format ([`RecordFile`]):
//!   [`Pairs`] (`pairs.jsonl`, the confirmed pairs) and [`Groups`] (`groups.jsonl`);
//! - every scored candidate, where the method scores more than it confirms, in the format
//!   [`CandidatesFormat`] names: `candidates.parquet` ([`pair_table`]) or [`Candidates`]
//!   (`candidates.jsonl`), laid out as the pairs;
//! - `unique.*`: the input records kept (one per group, chosen by the keep policy, and every
//!   document in no group), in input order, in the input's format (see [`crate::output::records`]);
//! - `annotated.*`: every document's record with its group, whether it is kept and which record
//!   it duplicates;
//! - `summary.json`, written last ([`RunSummary`]): the run's id, settings and counts, and the
//!   length and digest of every other file.
//!
//! Files are renamed into place one at a time, so a run that is killed, or whose rename fails,
//! could leave files of two runs side by side. The summary makes that visible: a run first
//! removes the old one, and readers ([`RunFolder`]) check each file they read against the
//! summary's digest and refuse a mix. A lock keeps two runs out of one folder, and temporary
//! files that a killed run left behind are removed when the next one starts.

mod pair_lines;
#[cfg(feature = "parquet")]
mod pair_table;
mod records;
mod run_pairs;

pub use pair_lines::{PairLine, PairSink, SortedIds, cosine_as_read};
pub use records::{
    CANDIDATES_TABLE, Candidates, CandidatesFormat, FileDigest, GroupRecord, Groups, IdsDigest,
    PairRecord, Pairs, RecordFile, RecordsDigest, RunSummary, StageTimes,
};
pub use run_pairs::RunPairs;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use serde::Serialize;
use xxhash_rust::xxh3::Xxh3;

use crate::error::{Error, Location, Result};
use crate::io::{FolderLock, for_each_line};
use crate::output::AtomicFile;
use crate::output::records::OutputFormat;

/// The run's summary, written last.
pub const SUMMARY: &str = "summary.json";
/// `neardup run`'s scores of the run, when its pipeline asks for them.
pub const EVAL: &str = "eval.json";
/// Held while a run writes into the folder.
const LOCK: &str = ".neardup.lock";

/// Every file a run may leave; a new run replaces or removes each.
fn run_files() -> impl Iterator<Item = &'static str> {
    [
        Pairs::NAME,
        Candidates::NAME,
        CANDIDATES_TABLE,
        Groups::NAME,
        SUMMARY,
        EVAL,
    ]
    .into_iter()
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

    /// Starts the file of scored pairs of `ids` named `name`, in the format its name says: a
    /// Parquet table for [`CANDIDATES_TABLE`], JSON lines for the others. The pairs are scored
    /// by `score_name`, each with a cosine where `with_cosines`.
    pub fn create_pairs<'a>(
        &self,
        name: &str,
        ids: SortedIds<'a>,
        score_name: &str,
        with_cosines: bool,
    ) -> Result<Box<dyn PairSink<'a> + 'a>> {
        let file = self.create(name)?;
        if name == CANDIDATES_TABLE {
            #[cfg(feature = "parquet")]
            return Ok(Box::new(pair_table::PairTable::create(
                file,
                ids,
                score_name,
                with_cosines,
            )?));
        }
        let _ = (ids, score_name, with_cosines);
        Ok(Box::new(file))
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

/// A run file being read, its bytes hashed as they pass ([`RunFolder::read_with`]).
pub struct CheckedReader {
    inner: BufReader<File>,
    hasher: Xxh3,
}

impl Read for CheckedReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// A run file open for reading ([`RunFolder::open_checked`]).
pub struct CheckedFile<'a> {
    folder: &'a RunFolder,
    path: PathBuf,
    expected: FileDigest,
    reader: CheckedReader,
}

impl CheckedFile<'_> {
    /// The file's bytes, hashed as they pass.
    pub fn reader(&mut self) -> &mut CheckedReader {
        &mut self.reader
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads what is left of the file and checks that it is the one the summary names.
    pub fn finish(mut self) -> Result<()> {
        std::io::copy(&mut self.reader, &mut std::io::sink())
            .map_err(|e| Error::io(&self.path, e))?;
        if self.reader.hasher.digest() != self.expected.xxh3 {
            return Err(self
                .folder
                .changed(&self.path, self.expected.bytes, self.expected));
        }
        Ok(())
    }
}

/// Appends `record` as one JSON line to `bytes`, bound for the file `target`.
fn json_line(bytes: &mut Vec<u8>, record: &impl Serialize, target: &Path) -> Result<()> {
    serde_json::to_writer(&mut *bytes, record)
        .map_err(|e| Error::io(target, std::io::Error::other(e)))?;
    bytes.push(b'\n');
    Ok(())
}

/// A complete run's folder, for reading: its summary, and its files checked against it.
#[derive(Debug)]
pub struct RunFolder {
    dir: PathBuf,
    /// The run's summary.
    pub summary: RunSummary,
}

impl RunFolder {
    /// Opens the folder of a complete run.
    pub fn open(dir: &Path) -> Result<Self> {
        let path = dir.join(SUMMARY);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let hint = if dir.join(Pairs::NAME).exists() {
                    "the run that wrote this folder did not finish: run `neardup dedup` again"
                } else {
                    "give the output folder of `neardup dedup`"
                };
                return Err(Error::input(Location::file(&path), None, "not found", hint));
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        let summary: RunSummary = serde_json::from_str(&text).map_err(|e| {
            Error::input(
                Location::line(&path, e.line() as u64),
                None,
                format!("not the summary of a neardup run: {e}"),
                "run `neardup dedup` again",
            )
        })?;
        Ok(RunFolder {
            dir: dir.to_owned(),
            summary,
        })
    }

    /// The run's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every record of the file `F`.
    pub fn read<F: RecordFile>(&self) -> Result<Vec<F::Record>> {
        let mut records = Vec::new();
        self.each::<F>(|record| {
            records.push(record);
            Ok(())
        })?;
        Ok(records)
    }

    /// Every scored pair: the candidates where the run kept them, else the confirmed pairs.
    pub fn scored_pairs(&self) -> Result<RunPairs> {
        let mut pairs = run_pairs::Gathering::default();
        self.each_scored_pair(|record| {
            pairs.push(record);
            Ok(())
        })?;
        Ok(pairs.finish())
    }

    /// Hands every scored pair to `visit`, one at a time (a split run's parts can hold tens of
    /// millions). The file is checked against the summary as it is read, and an error after
    /// the last record says when it did not match.
    pub fn each_scored_pair(&self, visit: impl FnMut(PairRecord) -> Result<()>) -> Result<()> {
        match self.candidates_file() {
            Some(CANDIDATES_TABLE) => self.each_in_table(visit),
            Some(_) => self.each::<Candidates>(visit),
            None => self.each::<Pairs>(visit),
        }
    }

    /// The file of the run's scored candidates, if it wrote one.
    pub fn candidates_file(&self) -> Option<&'static str> {
        [CANDIDATES_TABLE, Candidates::NAME]
            .into_iter()
            .find(|name| self.summary.files.contains_key(*name))
    }

    /// Hands every row of `candidates.parquet` to `visit`, once its bytes match the summary's.
    fn each_in_table(&self, visit: impl FnMut(PairRecord) -> Result<()>) -> Result<()> {
        self.read_with(CANDIDATES_TABLE, |bytes| {
            std::io::copy(bytes, &mut std::io::sink())
        })?;
        let path = self.dir.join(CANDIDATES_TABLE);
        #[cfg(feature = "parquet")]
        return pair_table::each_pair(&path, visit);
        #[cfg(not(feature = "parquet"))]
        {
            let _ = visit;
            Err(Error::input(
                Location::file(&path),
                None,
                "this neardup was built without Parquet",
                "build it with the `parquet` feature, or run again with `--candidates jsonl`",
            ))
        }
    }

    /// Hands every record of the file `F` to `visit`, checking that the file is the one the
    /// summary names (by length first, by digest at the end).
    pub fn each<F: RecordFile>(
        &self,
        mut visit: impl FnMut(F::Record) -> Result<()>,
    ) -> Result<()> {
        let (path, file, expected) = self.open_file(F::NAME)?;
        let reader = BufReader::with_capacity(1 << 20, file);
        let mut hasher = Xxh3::new();
        for_each_line(reader, &path, |number, line| {
            hasher.update(line);
            let location = Location::line(&path, number);
            let text = std::str::from_utf8(line).map_err(|e| {
                Error::input(
                    location.clone(),
                    None,
                    format!("not UTF-8: {e}"),
                    "run `neardup dedup` again",
                )
            })?;
            let record: F::Record = serde_json::from_str(text)
                .map_err(|e| Error::input(location.clone(), None, e.to_string(), ""))?;
            if let Some((field, message)) = F::problem(&record) {
                return Err(Error::input(location, Some(field), message, ""));
            }
            visit(record)
        })?;
        if hasher.digest() != expected.xxh3 {
            return Err(self.changed(&path, expected.bytes, expected));
        }
        Ok(())
    }

    /// What `read` makes of the file `name`, checked to be the file the summary names: by
    /// length before, and by digest after `read` (the rest of the file is read for it).
    pub fn read_with<T>(
        &self,
        name: &str,
        read: impl FnOnce(&mut CheckedReader) -> std::io::Result<T>,
    ) -> Result<T> {
        let mut file = self.open_checked(name)?;
        let value = read(&mut file.reader);
        let path = file.path.clone();
        // A file that does not read may be one that changed: the digest says which.
        file.finish()?;
        value.map_err(|e| Error::io(&path, e))
    }

    /// The file `name` open for reading, checked by length now and by digest at
    /// [`CheckedFile::finish`]: for a reader that keeps several files open at once.
    pub fn open_checked(&self, name: &str) -> Result<CheckedFile<'_>> {
        let (path, file, expected) = self.open_file(name)?;
        Ok(CheckedFile {
            folder: self,
            path,
            expected,
            reader: CheckedReader {
                inner: BufReader::with_capacity(1 << 20, file),
                hasher: Xxh3::new(),
            },
        })
    }

    /// Opens the file `name`, refusing one the summary does not name or whose length is not
    /// the one it names.
    fn open_file(&self, name: &str) -> Result<(PathBuf, File, FileDigest)> {
        let path = self.dir.join(name);
        let Some(expected) = self.summary.files.get(name).cloned() else {
            return Err(Error::input(
                Location::file(&path),
                None,
                format!("run {} did not write this file", self.summary.run),
                "run `neardup dedup` again",
            ));
        };
        let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
        let length = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        if length != expected.bytes {
            return Err(self.changed(&path, length, expected));
        }
        Ok((path, file, expected))
    }

    /// The error for a file at `path` of `bytes` bytes that is not the one the summary names.
    fn changed(&self, path: &Path, bytes: u64, expected: FileDigest) -> Error {
        let expected = expected.bytes;
        Error::input(
            Location::file(path),
            None,
            format!(
                "not the file of run {} that summary.json describes ({bytes} bytes, expected \
                 {expected}): it changed after the run, or a later run was stopped while writing",
                self.summary.run
            ),
            "run `neardup dedup` again",
        )
    }
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
