//! Reading a run's folder ([`RunFolder`]): its summary, and each file checked against the
//! length and digest the summary names, by length before reading and by digest after.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::Xxh3;

use super::records::{
    CANDIDATES_TABLE, Candidates, FileDigest, PairRecord, Pairs, RecordFile, RunSummary, SUMMARY,
};
use super::run_pairs::{Gathering, RunPairs};
use crate::error::{Error, Location, Result};
use crate::io::for_each_line;

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
        let mut pairs = Gathering::default();
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
        return super::pair_table::each_pair(&path, visit);
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
