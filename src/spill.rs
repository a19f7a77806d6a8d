//! Spill files: what one stage writes to disk while another needs the memory, read back
//! later.
//!
//! A two-stage run holds three such sets at a million documents: the query vectors between
//! embedding and search (1.5 GB at 384 dimensions), the sketches between loading and
//! confirming (1.2 GB), the candidates while the sketches come back (tens of millions). Each
//! goes to a [`Spill`]: an unnamed file in a folder of the run's (removed by the system when
//! closed, even on a crash), appended to through a buffer, then read from its start as often
//! as needed. Errors name the folder, as the file has no name. [`SpillRows`] is a spill of
//! fixed-width rows of floats that are read back by number while more are appended.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Bytes buffered on each side of a file.
const BUFFER: usize = 1 << 20;

/// A spill file being written.
pub struct Spill {
    writer: BufWriter<File>,
    /// The folder holding the file.
    dir: PathBuf,
}

impl Spill {
    /// An empty file in `dir`, made if missing.
    pub fn create(dir: &Path) -> Result<Self> {
        Spill::with_buffer(dir, BUFFER)
    }

    /// [`Spill::create`] with a write buffer of `bytes`, for many spill files written at once.
    pub fn with_buffer(dir: &Path, bytes: usize) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let file = tempfile::tempfile_in(dir).map_err(|e| Error::io(dir, e))?;
        Ok(Spill {
            writer: BufWriter::with_capacity(bytes, file),
            dir: dir.to_owned(),
        })
    }

    /// A file in `dir` holding what `write` writes, ready to read.
    pub fn of(
        dir: &Path,
        write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
    ) -> Result<SpillReader> {
        let mut spill = Spill::create(dir)?;
        spill.append(write)?;
        spill.into_reader()
    }

    /// Appends what `write` writes.
    pub fn append(
        &mut self,
        write: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
    ) -> Result<()> {
        write(&mut self.writer).map_err(|e| Error::io(&self.dir, e))
    }

    /// Finishes writing; the file is then read from its start.
    pub fn into_reader(self) -> Result<SpillReader> {
        let io = |e| Error::io(&self.dir, e);
        let mut file = self.writer.into_inner().map_err(|e| io(e.into_error()))?;
        file.rewind().map_err(io)?;
        Ok(SpillReader {
            reader: BufReader::with_capacity(BUFFER, file),
            dir: self.dir,
        })
    }
}

/// A spill file being read.
pub struct SpillReader {
    reader: BufReader<File>,
    dir: PathBuf,
}

impl SpillReader {
    /// Reads on from where the last read stopped, through `read`.
    pub fn read<T>(
        &mut self,
        read: impl FnOnce(&mut BufReader<File>) -> std::io::Result<T>,
    ) -> Result<T> {
        read(&mut self.reader).map_err(|e| Error::io(&self.dir, e))
    }

    /// Reads from the start of the file again.
    pub fn rewind(&mut self) -> Result<()> {
        self.reader.rewind().map_err(|e| Error::io(&self.dir, e))
    }

    /// The file, to map; and the folder that holds it, which errors name.
    pub fn file(&self) -> (&File, &Path) {
        (self.reader.get_ref(), &self.dir)
    }
}

/// Rows of `width` floats appended to a spill file and read back by number as more are
/// appended: each distinct text's vector, read again for its later copies.
pub struct SpillRows {
    spill: Spill,
    width: usize,
    rows: u32,
    /// Rows written through to the file; the rest may wait in the buffer.
    flushed: u32,
}

impl SpillRows {
    /// An empty file of rows of `width` floats in `dir`.
    pub fn create(dir: &Path, width: usize) -> Result<Self> {
        Ok(SpillRows {
            spill: Spill::create(dir)?,
            width,
            rows: 0,
            flushed: 0,
        })
    }

    /// Appends `row` (of the width given) and returns its number.
    pub fn push(&mut self, row: &[f32]) -> Result<u32> {
        debug_assert_eq!(row.len(), self.width);
        // In the machine's own byte order: only this process reads the file.
        self.spill
            .append(|w| w.write_all(bytemuck::cast_slice(row)))?;
        self.rows += 1;
        Ok(self.rows - 1)
    }

    /// Row `number` as it was pushed, into `row`.
    pub fn read(&mut self, number: u32, row: &mut Vec<f32>) -> Result<()> {
        debug_assert!(number < self.rows);
        let buffered = number >= self.flushed;
        let at = u64::from(number) * self.width as u64 * 4;
        row.clear();
        row.resize(self.width, 0.0);
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(row.as_mut_slice());
        let writer = &mut self.spill.writer;
        let mut read = || -> std::io::Result<()> {
            if buffered {
                writer.flush()?;
            }
            // The file's end is where the buffer writes next.
            let file = writer.get_mut();
            file.seek(SeekFrom::Start(at))?;
            file.read_exact(bytes)?;
            file.seek(SeekFrom::End(0)).map(drop)
        };
        read().map_err(|e| Error::io(&self.spill.dir, e))?;
        if buffered {
            self.flushed = self.rows;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    #[test]
    fn rows_read_back_by_number_as_pushed_while_more_are_pushed() {
        let dir = tempfile::tempdir().unwrap();
        let mut rows = SpillRows::create(dir.path(), 3).unwrap();
        let row = |i: u32| [i as f32, -(i as f32) / 3.0, f32::from_bits(i)];
        let mut read = Vec::new();
        for i in 0..2000u32 {
            assert_eq!(rows.push(&row(i)).unwrap(), i);
            // The newest (still buffered) and an old one, between pushes.
            for at in [i, i / 2] {
                rows.read(at, &mut read).unwrap();
                assert_eq!(read, row(at), "row {at} after {i} pushed");
            }
        }
    }

    #[test]
    fn what_is_written_reads_back_in_order_and_again_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut spill = Spill::create(&dir.path().join("made")).unwrap();
        spill.append(|w| w.write_all(b"first ")).unwrap();
        spill.append(|w| w.write_all(b"second")).unwrap();
        let mut reader = spill.into_reader().unwrap();
        let mut head = [0u8; 6];
        reader.read(|r| r.read_exact(&mut head)).unwrap();
        assert_eq!(&head, b"first ");
        let rest = reader.read(|r| {
            let mut rest = String::new();
            r.read_to_string(&mut rest).map(|_| rest)
        });
        assert_eq!(rest.unwrap(), "second");
        reader.rewind().unwrap();
        reader.read(|r| r.read_exact(&mut head)).unwrap();
        assert_eq!(&head, b"first ");
        let past_the_end = reader.read(|r| r.read_exact(&mut [0u8; 64]));
        let err = past_the_end.unwrap_err().to_string();
        assert!(err.contains("made"), "the error names the folder: {err}");
        assert_eq!(
            std::fs::read_dir(dir.path().join("made")).unwrap().count(),
            0,
            "the file has no name in the folder"
        );
        let mut whole = Spill::of(dir.path(), |w| w.write_all(b"whole")).unwrap();
        let read = whole.read(|r| {
            let mut text = String::new();
            r.read_to_string(&mut text).map(|_| text)
        });
        assert_eq!(read.unwrap(), "whole");
    }
}
