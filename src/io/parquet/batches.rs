//! A Parquet file's rows in batches sized for its rows, so that memory stays per batch: a
//! batch holds as many rows as fit [`BATCH_BYTES`] by the file's own row group sizes, one row
//! at the least.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::serialized_reader::SerializedFileReader;

use super::byte_column::{ByteColumn, is_not_utf8};
use crate::error::{Error, Location, Result};

/// Rows decoded at a time, at most.
const MAX_BATCH_ROWS: usize = 16_384;
/// Bytes of decoded rows a batch aims at.
const BATCH_BYTES: u64 = 16 << 20;

/// The rows of a Parquet file in batches sized for its rows ([`batches`]).
///
/// Arrow's Parquet reader checks that string cells are UTF-8 a page at a time, and one bad
/// cell fails the whole file. Where that happens, the reader goes on from the row it stopped
/// at reading the string columns itself ([`ByteColumn`]): each cell is checked on its own,
/// and a row with one that is not UTF-8 is named ([`Batch::invalid`]) rather than the file.
pub struct Batches {
    path: PathBuf,
    /// The file's schema.
    schema: SchemaRef,
    /// Rows handed out so far.
    done: u64,
    /// How rows are read now.
    reading: Reading,
}

/// How a file's rows are read.
enum Reading {
    /// By Arrow's reader, whole.
    Whole(ParquetRecordBatchReader),
    /// Its string columns cell by cell, its other columns by Arrow's reader (where there are
    /// any), from row `from`.
    ByCell {
        cells: Vec<(usize, ByteColumn)>,
        others: Option<(Vec<usize>, ParquetRecordBatchReader)>,
        /// Rows in the file.
        rows: u64,
        batch: usize,
    },
}

/// A batch of rows.
pub struct Batch {
    /// The rows, in the file's schema; a cell that is not UTF-8 is null here.
    pub rows: RecordBatch,
    /// The rows (from 0, within the batch) with a string cell that is not UTF-8: the column
    /// and what is wrong, the first for each row.
    pub invalid: Vec<(usize, String, String)>,
}

/// A reader of the file at `path` in batches sized for its rows.
pub fn batches(path: &Path) -> Result<Batches> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    // The reader panics on some damaged files (a negative column length in the footer).
    let (reader, schema) = crate::foreign::catch(|| {
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
        let schema = builder.schema().clone();
        let rows = batch_rows(builder.metadata());
        Ok((builder.with_batch_size(rows).build()?, schema))
    })
    .map_err(|cause| unreadable(path, cause))?
    .map_err(|e: parquet::errors::ParquetError| unreadable(path, e.to_string()))?;
    Ok(Batches {
        path: path.to_owned(),
        schema,
        done: 0,
        reading: Reading::Whole(reader),
    })
}

impl Batches {
    /// The file's schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The next batch; a panic of the reader on a damaged page is an error too.
    pub fn next_batch(&mut self) -> Option<Result<Batch>> {
        let path = self.path.clone();
        let batch = match &mut self.reading {
            Reading::Whole(reader) => match crate::foreign::catch(|| reader.next()) {
                Ok(None) => return None,
                Ok(Some(Ok(rows))) => Ok(Batch {
                    rows,
                    invalid: Vec::new(),
                }),
                Ok(Some(Err(e))) if is_not_utf8(&e.to_string()) => {
                    tracing::info!(
                        file = %path.display(),
                        row = self.done + 1,
                        "a string cell is not UTF-8: reading the string columns cell by cell"
                    );
                    match self.read_by_cell() {
                        Ok(()) => return self.next_batch(),
                        Err(e) => Err(e),
                    }
                }
                Ok(Some(Err(e))) => Err(unreadable(&path, e.to_string())),
                Err(cause) => Err(unreadable(&path, cause)),
            },
            Reading::ByCell { .. } => match self.next_by_cell() {
                Ok(None) => return None,
                Ok(Some(batch)) => Ok(batch),
                Err(e) => Err(e),
            },
        };
        if let Ok(batch) = &batch {
            self.done += batch.rows.num_rows() as u64;
        }
        Some(batch)
    }

    /// Goes on from row [`Batches::done`] reading the string columns cell by cell.
    fn read_by_cell(&mut self) -> Result<()> {
        let path = &self.path;
        let failed = |e: parquet::errors::ParquetError| unreadable(path, e.to_string());
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(failed)?;
        let rows = builder.metadata().file_metadata().num_rows().max(0) as u64;
        let batch = batch_rows(builder.metadata());
        let descriptor = builder.parquet_schema().clone();
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let file = Arc::new(SerializedFileReader::new(file).map_err(failed)?);
        let (mut cells, mut others) = (Vec::new(), Vec::new());
        for (place, field) in self.schema.fields().iter().enumerate() {
            match ByteColumn::of(&file, &descriptor, field) {
                Some(mut column) => {
                    // The reader panics on some damaged pages.
                    let skipped = crate::foreign::catch(|| column.skip(self.done as usize));
                    skipped
                        .map_err(|cause| unreadable(path, cause))?
                        .map_err(failed)?;
                    cells.push((place, column));
                }
                None => others.push(place),
            }
        }
        let others = match others.is_empty() {
            true => None,
            false => {
                let skipped = RowSelection::from(vec![
                    RowSelector::skip(self.done as usize),
                    RowSelector::select((rows - self.done) as usize),
                ]);
                let reader = builder
                    .with_projection(ProjectionMask::roots(&descriptor, others.clone()))
                    .with_row_selection(skipped)
                    .with_batch_size(batch)
                    .build()
                    .map_err(failed)?;
                Some((others, reader))
            }
        };
        self.reading = Reading::ByCell {
            cells,
            others,
            rows,
            batch,
        };
        Ok(())
    }

    /// The next batch read cell by cell.
    fn next_by_cell(&mut self) -> Result<Option<Batch>> {
        let Reading::ByCell {
            cells,
            others,
            rows,
            batch,
        } = &mut self.reading
        else {
            unreachable!("read by cell")
        };
        let path = &self.path;
        let failed = |e: String| unreadable(path, e);
        let read = match others {
            Some((_, reader)) => match crate::foreign::catch(|| reader.next()).map_err(failed)? {
                None => return Ok(None),
                Some(read) => Some(read.map_err(|e| failed(e.to_string()))?),
            },
            None if self.done >= *rows => return Ok(None),
            None => None,
        };
        let count = read
            .as_ref()
            .map_or((*rows - self.done).min(*batch as u64) as usize, |r| {
                r.num_rows()
            });
        let mut columns: Vec<Option<ArrayRef>> = vec![None; self.schema.fields().len()];
        if let (Some((places, _)), Some(read)) = (others, &read) {
            for (&place, column) in places.iter().zip(read.columns()) {
                columns[place] = Some(column.clone());
            }
        }
        let mut invalid: Vec<(usize, String, String)> = Vec::new();
        for (place, column) in cells.iter_mut() {
            let field = self.schema.field(*place);
            let values = crate::foreign::catch(|| column.read(count))
                .map_err(failed)?
                .map_err(|e| failed(e.to_string()))?;
            let texts: Vec<Option<&str>> = (values.iter().enumerate())
                .map(|(row, value)| {
                    let bytes = value.as_ref()?;
                    match std::str::from_utf8(bytes) {
                        Ok(text) => Some(text),
                        Err(e) => {
                            if !invalid.iter().any(|(r, ..)| *r == row) {
                                let problem = format!(
                                    "not valid UTF-8 (byte {} of the cell)",
                                    e.valid_up_to() + 1
                                );
                                invalid.push((row, field.name().clone(), problem));
                            }
                            None
                        }
                    }
                })
                .collect();
            let texts: ArrayRef = Arc::new(arrow_array::StringArray::from(texts));
            let cast = arrow_cast::cast(&texts, field.data_type());
            columns[*place] = Some(cast.map_err(|e| failed(e.to_string()))?);
        }
        invalid.sort_unstable_by_key(|(row, ..)| *row);
        let columns: Vec<ArrayRef> = columns
            .into_iter()
            .map(|c| c.expect("every column read"))
            .collect();
        let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(count));
        let rows = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)
            .map_err(|e| failed(e.to_string()))?;
        Ok(Some(Batch { rows, invalid }))
    }
}

/// Rows a batch takes: [`BATCH_BYTES`] over the largest mean row of any row group.
pub(super) fn batch_rows(metadata: &ParquetMetaData) -> usize {
    let widest = metadata
        .row_groups()
        .iter()
        .filter(|group| group.num_rows() > 0)
        .map(|group| group.total_byte_size().max(0) as u64 / group.num_rows() as u64)
        .max()
        .unwrap_or(0)
        .max(1);
    ((BATCH_BYTES / widest) as usize).clamp(1, MAX_BATCH_ROWS)
}

/// The error for a file that cannot be read as Parquet.
pub(super) fn unreadable(path: &Path, problem: String) -> Error {
    Error::input(
        Location::file(path),
        None,
        format!("not a readable Parquet file: {problem}"),
        "check that the file is complete Parquet",
    )
}
