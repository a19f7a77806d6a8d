//! Parquet through arrow-rs, read in batches of rows so that memory stays per batch, not per
//! file: a batch holds as many rows as fit [`BATCH_BYTES`] by the file's own row group sizes,
//! one row at the least. A record's "line" is its 1-based row number. Every column is read,
//! whatever its Arrow type, since the record is copied out whole (as JSON for `unique.jsonl`,
//! as the same columns for `unique.parquet`).

use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::{BooleanArray, RecordBatch};
use arrow_schema::{DataType, Schema};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::file::metadata::ParquetMetaData;

use super::{Body, FieldSpec, RawRecord, RawRecords, Record};
use crate::error::{Error, InputError, Location, Result};

/// Rows decoded at a time, at most.
const MAX_BATCH_ROWS: usize = 16_384;
/// Bytes of decoded rows a batch aims at.
const BATCH_BYTES: u64 = 16 << 20;

/// A reader of the file at `path` in batches sized for its rows, and the file's schema.
pub fn batches(path: &Path) -> Result<(ParquetRecordBatchReader, std::sync::Arc<Schema>)> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    // The reader panics on some damaged files (a negative column length in the footer).
    crate::foreign::catch(|| {
        let builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
        let schema = builder.schema().clone();
        let rows = batch_rows(builder.metadata());
        Ok((builder.with_batch_size(rows).build()?, schema))
    })
    .map_err(|cause| unreadable(path, cause))?
    .map_err(|e: parquet::errors::ParquetError| unreadable(path, e.to_string()))
}

/// The next batch of `reader`, reading the file at `path`; a panic of the reader on a damaged
/// page is an error too.
pub fn next_batch(
    reader: &mut ParquetRecordBatchReader,
    path: &Path,
) -> Option<Result<RecordBatch>> {
    match crate::foreign::catch(|| reader.next()) {
        Ok(None) => None,
        Ok(Some(batch)) => Some(batch.map_err(|e| unreadable(path, e.to_string()))),
        Err(cause) => Some(Err(unreadable(path, cause))),
    }
}

/// Rows a batch takes: [`BATCH_BYTES`] over the largest mean row of any row group.
fn batch_rows(metadata: &ParquetMetaData) -> usize {
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
fn unreadable(path: &Path, problem: String) -> Error {
    Error::input(
        Location::file(path),
        None,
        format!("not a readable Parquet file: {problem}"),
        "check that the file is complete Parquet",
    )
}

pub(super) fn open(path: &Path, fields: &FieldSpec, max_record_bytes: u64) -> Result<RawRecords> {
    let (batches, schema) = batches(path)?;
    let columns: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    for (name, is_id) in
        std::iter::once((&fields.id, true)).chain(fields.text.iter().map(|t| (t, false)))
    {
        let Ok(column) = schema.field_with_name(name) else {
            return Err(Error::input(
                Location::file(path),
                Some(name),
                format!("no such column; the file has: {}", columns.join(", ")),
                "choose the columns with --id-field and --text-field",
            ));
        };
        check_type(path, name, column.data_type(), is_id)?;
    }
    Ok(Box::new(Rows {
        path: path.to_owned(),
        fields: fields.clone(),
        batches,
        max_record_bytes,
        next_row: 0,
        buffered: VecDeque::new(),
    }))
}

/// Text columns must hold strings and the id column strings or integers: anything else (bytes,
/// lists, structs) would reach the documents as its printed form, `[98, 99]` or `["a"]`.
fn check_type(path: &Path, name: &str, dtype: &DataType, is_id: bool) -> Result<()> {
    use DataType as T;
    let text = |t: &DataType| matches!(t, T::Utf8 | T::LargeUtf8 | T::Utf8View | T::Null);
    let fits = match dtype {
        t if text(t) => true,
        T::Dictionary(_, values) => text(values),
        T::Int8 | T::Int16 | T::Int32 | T::Int64 | T::UInt8 | T::UInt16 | T::UInt32 | T::UInt64 => {
            is_id
        }
        _ => false,
    };
    if fits {
        return Ok(());
    }
    let (wanted, hint) = if is_id {
        (
            "strings or integers",
            "choose another column with --id-field",
        )
    } else {
        (
            "strings",
            "write the column as UTF-8 strings (join lists first), or choose others with --text-field",
        )
    };
    Err(Error::input(
        Location::file(path),
        Some(name),
        format!("the column holds {dtype}, not {wanted}"),
        hint,
    ))
}

struct Rows {
    path: PathBuf,
    fields: FieldSpec,
    batches: ParquetRecordBatchReader,
    max_record_bytes: u64,
    /// Rows read before the buffered ones.
    next_row: u64,
    buffered: VecDeque<RawRecord>,
}

impl Rows {
    /// Decodes the next batch into records: each row as a JSON object of every column. A row
    /// whose text and byte cells alone pass the limit is a bad record without being copied.
    fn read_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let sizes = byte_cells(batch);
        let fits: BooleanArray = sizes
            .iter()
            .map(|&bytes| Some(bytes <= self.max_record_bytes))
            .collect();
        let fitting = arrow_select::filter::filter_record_batch(batch, &fits)
            .map_err(|e| unreadable(&self.path, e.to_string()))?;
        let mut lines = Vec::new();
        // Nulls written out: a JSON copy of a row keeps every column, as the row has them.
        let mut writer = arrow_json::WriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, arrow_json::writer::LineDelimited>(&mut lines);
        writer
            .write(&fitting)
            .and_then(|()| writer.finish())
            .map_err(|e| unreadable(&self.path, format!("a row cannot be read as JSON: {e}")))?;
        drop(writer);
        let mut lines = lines.split(|&b| b == b'\n').filter(|l| !l.is_empty());
        for bytes in sizes {
            self.next_row += 1;
            let location = Location::line(&self.path, self.next_row);
            let line = match bytes <= self.max_record_bytes {
                true => lines.next(),
                false => None,
            };
            let body = match line {
                Some(line) if line.len() as u64 <= self.max_record_bytes => {
                    let object: serde_json::Map<String, serde_json::Value> =
                        serde_json::from_slice(line).map_err(|e| {
                            unreadable(&self.path, format!("row {}: {e}", self.next_row))
                        })?;
                    Body::Parsed(record_of(&object, &self.fields, &location), line.to_vec())
                }
                _ => Body::Invalid(super::too_long(location.clone(), self.max_record_bytes)),
            };
            self.buffered.push_back(RawRecord {
                location,
                input_bytes: line.map_or(bytes, |l| l.len() as u64),
                body,
            });
        }
        Ok(())
    }
}

/// The bytes of each row's text and binary cells: what makes a row long, counted without
/// copying it.
fn byte_cells(batch: &RecordBatch) -> Vec<u64> {
    use arrow_array::cast::AsArray;
    let mut sizes = vec![0u64; batch.num_rows()];
    for column in batch.columns() {
        let add = |sizes: &mut Vec<u64>, length: &dyn Fn(usize) -> usize| {
            for (row, size) in sizes.iter_mut().enumerate() {
                *size += length(row) as u64;
            }
        };
        match column.data_type() {
            DataType::Utf8 => add(&mut sizes, &|i| {
                column.as_string::<i32>().value_length(i) as usize
            }),
            DataType::LargeUtf8 => add(&mut sizes, &|i| {
                column.as_string::<i64>().value_length(i) as usize
            }),
            DataType::Utf8View => add(&mut sizes, &|i| column.as_string_view().value(i).len()),
            DataType::Binary => add(&mut sizes, &|i| {
                column.as_binary::<i32>().value_length(i) as usize
            }),
            DataType::LargeBinary => add(&mut sizes, &|i| {
                column.as_binary::<i64>().value_length(i) as usize
            }),
            DataType::BinaryView => add(&mut sizes, &|i| column.as_binary_view().value(i).len()),
            _ => {}
        }
    }
    sizes
}

impl Iterator for Rows {
    type Item = Result<RawRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.buffered.is_empty() {
            let batch = match next_batch(&mut self.batches, &self.path)? {
                Ok(batch) => batch,
                Err(e) => return Some(Err(e)),
            };
            if let Err(e) = self.read_batch(&batch) {
                return Some(Err(e));
            }
        }
        self.buffered.pop_front().map(Ok)
    }
}

fn record_of(
    object: &serde_json::Map<String, serde_json::Value>,
    fields: &FieldSpec,
    location: &Location,
) -> Result<Record, InputError> {
    use serde_json::Value;
    let bad = |field: &str, problem: String| InputError {
        location: location.clone(),
        field: Some(field.to_owned()),
        problem,
        hint: "fix the row, or pass --skip-invalid to skip bad records".into(),
    };
    let null = serde_json::Value::Null;
    let id = match object.get(&fields.id).unwrap_or(&null) {
        Value::String(s) if !s.is_empty() => s.clone(),
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        other => {
            return Err(bad(
                &fields.id,
                format!("expected a non-empty string id, found {other}"),
            ));
        }
    };
    let mut parts = Vec::with_capacity(fields.text.len());
    for name in &fields.text {
        match object.get(name).unwrap_or(&null) {
            Value::String(s) => parts.push(s.as_str()),
            Value::Null => parts.push(""),
            other => return Err(bad(name, format!("expected text, found {other}"))),
        }
    }
    Ok(Record::from_fields(id, &parts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::Input;
    use arrow_array::{
        ArrayRef, BinaryArray, Int64Array, LargeStringArray, ListArray, StringArray,
    };
    use parquet::arrow::ArrowWriter;
    use std::sync::Arc;

    /// Writes `columns` as a Parquet file at `path`.
    pub(crate) fn write_parquet(path: &Path, columns: Vec<(&str, ArrayRef)>) {
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let mut writer =
            ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
    }

    #[test]
    fn parquet_rows_become_records_with_all_columns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs.parquet");
        write_parquet(
            &path,
            vec![
                ("core_id", Arc::new(StringArray::from(vec!["a", "b", "c"]))),
                (
                    "processed_title",
                    Arc::new(LargeStringArray::from(vec![
                        Some("zażółć gęślą jaźń"),
                        Some("title"),
                        None,
                    ])),
                ),
                (
                    "processed_abstract",
                    Arc::new(StringArray::from(vec!["x", "y", "z"])),
                ),
                ("year", Arc::new(Int64Array::from(vec![2020, 2021, 2022]))),
            ],
        );
        let fields = FieldSpec::default();
        let raws: Vec<RawRecord> = Input::new(&path, None)
            .unwrap()
            .open(&fields, u64::MAX)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(raws.len(), 3);
        let first = raws[0].parse(&fields).unwrap();
        assert_eq!(
            (first.id.as_str(), first.text.as_str()),
            ("a", "zażółć gęślą jaźń x")
        );
        assert_eq!(raws[2].parse(&fields).unwrap().text, " z");
        assert_eq!(raws[1].location.line, Some(2));
        let json: serde_json::Value =
            serde_json::from_slice(&raws[1].original_json(&fields).unwrap()).unwrap();
        assert_eq!(json["year"], 2021);

        let wrong = FieldSpec {
            id: "doc".into(),
            text: vec!["processed_title".into()],
        };
        let err = Input::new(&path, None)
            .unwrap()
            .open(&wrong, u64::MAX)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("field `doc`: no such column; the file has: core_id"),
            "{err}"
        );
    }

    #[test]
    fn binary_and_list_text_columns_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs.parquet");
        let lists = ListArray::from_iter_primitive::<arrow_array::types::Int64Type, _, _>(vec![
            Some(vec![Some(1)]),
            Some(vec![Some(2), Some(3)]),
        ]);
        write_parquet(
            &path,
            vec![
                ("core_id", Arc::new(Int64Array::from(vec![1, 2]))),
                (
                    "processed_title",
                    Arc::new(BinaryArray::from(vec![&b"caf\xe9"[..], b"tea"])),
                ),
                ("processed_abstract", Arc::new(lists)),
            ],
        );
        let open = |text: &str| {
            let fields = FieldSpec {
                id: "core_id".into(),
                text: vec![text.into()],
            };
            Input::new(&path, None)
                .unwrap()
                .open(&fields, u64::MAX)
                .err()
                .map(|e| e.to_string())
        };
        let err = open("processed_title").unwrap();
        assert!(
            err.contains("field `processed_title`: the column holds") && err.contains("Binary"),
            "{err}"
        );
        let err = open("processed_abstract").unwrap();
        assert!(
            err.contains("field `processed_abstract`: the column holds") && err.contains("List"),
            "{err}"
        );
        assert!(err.contains("join lists first"), "{err}");
    }

    #[test]
    fn a_batch_holds_as_many_rows_as_fit_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wide.parquet");
        let wide = "w".repeat(4 << 20);
        write_parquet(
            &path,
            vec![
                ("id", Arc::new(StringArray::from(vec!["a", "b"]))),
                (
                    "text",
                    Arc::new(StringArray::from(vec![wide.as_str(), "short"])),
                ),
            ],
        );
        let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
        // Two rows of about 2 MB on average: about 8 to a batch of 16 MB.
        let rows = batch_rows(builder.metadata());
        assert!((6..=8).contains(&rows), "{rows}");
    }
}
