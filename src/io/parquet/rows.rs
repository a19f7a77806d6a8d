//! A Parquet file's rows as records: a record's "line" is its 1-based row number. Every
//! column is read, whatever its Arrow type, since the record is copied out whole (as JSON for
//! `unique.jsonl`, as the same columns for `unique.parquet`).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::DataType;

use super::batches::{Batch, Batches, batches, unreadable};
use crate::error::{Error, InputError, Location, Result};
use crate::io::{Body, FieldSpec, RawRecord, RawRecords, Record};

pub(super) fn open(path: &Path, fields: &FieldSpec, max_record_bytes: u64) -> Result<RawRecords> {
    let batches = batches(path)?;
    let schema = batches.schema().clone();
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
    batches: Batches,
    max_record_bytes: u64,
    /// Rows read before the buffered ones.
    next_row: u64,
    buffered: VecDeque<RawRecord>,
}

impl Rows {
    /// Decodes the next batch into records: each row as a JSON object of every column. A row
    /// whose text and byte cells alone pass the limit is a bad record without being copied,
    /// and so is a row with a string cell that is not UTF-8.
    fn read_batch(&mut self, batch: &Batch) -> Result<()> {
        let (invalid, batch) = (&batch.invalid, &batch.rows);
        let mut invalid = invalid.iter().peekable();
        let sizes = byte_cells(batch);
        let fits: BooleanArray = sizes
            .iter()
            .map(|&bytes| Some(bytes <= self.max_record_bytes))
            .collect();
        // A copy of the batch only where some row is left out.
        let fitting = match fits.true_count() == batch.num_rows() {
            true => batch.clone(),
            false => arrow_select::filter::filter_record_batch(batch, &fits)
                .map_err(|e| unreadable(&self.path, e.to_string()))?,
        };
        let columns = Fields::of(&fitting, &self.fields).map_err(|e| unreadable(&self.path, e))?;
        // Room for the rows' JSON taken once: grown by doubling, a long row's line was copied
        // on every growth.
        let cells: u64 = (sizes.iter().filter(|&&b| b <= self.max_record_bytes)).sum();
        let mut lines = Vec::with_capacity(cells as usize + cells as usize / 8 + 1024);
        // Nulls written out: a JSON copy of a row keeps every column, as the row has them.
        let mut writer = arrow_json::WriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, arrow_json::writer::LineDelimited>(&mut lines);
        writer
            .write(&fitting)
            .and_then(|()| writer.finish())
            .map_err(|e| unreadable(&self.path, format!("a row cannot be read as JSON: {e}")))?;
        drop(writer);
        drop(fitting);
        // The rows' JSON, held once for the batch: each row's record refers to its line.
        let lines = Arc::new(lines);
        let mut starts = line_ranges(&lines).into_iter();
        let mut fitting_row = 0;
        for (row, bytes) in sizes.into_iter().enumerate() {
            self.next_row += 1;
            let location = Location::line(&self.path, self.next_row);
            let line = match bytes <= self.max_record_bytes {
                true => starts.next().map(|range| (fitting_row, range)),
                false => None,
            };
            fitting_row += usize::from(line.is_some());
            if let Some((_, column, problem)) = invalid.next_if(|(at, ..)| *at == row) {
                self.buffered.push_back(RawRecord {
                    body: Body::Invalid(InputError {
                        location: location.clone(),
                        field: Some(column.clone()),
                        problem: problem.clone(),
                        hint: "write the cell as UTF-8, or pass --skip-invalid to skip such rows"
                            .into(),
                    }),
                    location,
                    input_bytes: bytes,
                });
                continue;
            }
            let (body, input_bytes) = match line {
                Some((at, range)) if range.len() as u64 <= self.max_record_bytes => {
                    let length = range.len() as u64;
                    let record = columns.record(at, &self.fields, &location);
                    let line = SharedLine {
                        lines: lines.clone(),
                        range,
                    };
                    (Body::Parsed(record, line), length)
                }
                _ => (
                    Body::Invalid(crate::io::too_long(location.clone(), self.max_record_bytes)),
                    bytes,
                ),
            };
            self.buffered.push_back(RawRecord {
                location,
                input_bytes,
                body,
            });
        }
        Ok(())
    }
}

/// Where each line of `lines` (JSON Lines, every line ending in a newline) lies.
fn line_ranges(lines: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', lines) {
        if end > start {
            ranges.push(start..end);
        }
        start = end + 1;
    }
    ranges
}

/// A row's JSON line among those of its batch, which its batch's rows share.
#[derive(Debug)]
pub(in crate::io) struct SharedLine {
    lines: Arc<Vec<u8>>,
    range: std::ops::Range<usize>,
}

impl SharedLine {
    /// The line's bytes.
    pub(in crate::io) fn bytes(&self) -> &[u8] {
        &self.lines[self.range.clone()]
    }
}

/// The id and text columns of a batch, as text: string columns as they are, the others (an
/// integer id, a dictionary of strings) cast to strings.
struct Fields {
    id: ArrayRef,
    texts: Vec<ArrayRef>,
}

impl Fields {
    /// The id and text columns `fields` names of `batch` (their types were checked as the
    /// file was opened).
    fn of(batch: &RecordBatch, fields: &FieldSpec) -> std::result::Result<Fields, String> {
        let text = |name: &str| -> std::result::Result<ArrayRef, String> {
            let column = batch
                .column_by_name(name)
                .ok_or_else(|| format!("no column {name:?}"))?;
            match column.data_type() {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Ok(column.clone()),
                _ => arrow_cast::cast(column, &DataType::LargeUtf8).map_err(|e| e.to_string()),
            }
        };
        Ok(Fields {
            id: text(&fields.id)?,
            texts: (fields.text.iter())
                .map(|name| text(name))
                .collect::<std::result::Result<_, _>>()?,
        })
    }

    /// The record of row `row`.
    fn record(
        &self,
        row: usize,
        fields: &FieldSpec,
        location: &Location,
    ) -> Result<Record, InputError> {
        let id = match cell(&self.id, row) {
            Some(id) if !id.is_empty() => id.to_owned(),
            found => {
                return Err(InputError {
                    location: location.clone(),
                    field: Some(fields.id.clone()),
                    problem: format!(
                        "expected a non-empty string id, found {}",
                        match found {
                            Some(_) => "\"\"",
                            None => "null",
                        }
                    ),
                    hint: "fix the row, or pass --skip-invalid to skip bad records".into(),
                });
            }
        };
        let parts: Vec<&str> = (self.texts.iter())
            .map(|c| cell(c, row).unwrap_or(""))
            .collect();
        Ok(Record::from_fields(id, &parts))
    }
}

/// Row `row` of a string column (`None` where null).
fn cell(column: &ArrayRef, row: usize) -> Option<&str> {
    use arrow_array::cast::AsArray;
    if column.is_null(row) {
        return None;
    }
    Some(match column.data_type() {
        DataType::Utf8 => column.as_string::<i32>().value(row),
        DataType::Utf8View => column.as_string_view().value(row),
        _ => column.as_string::<i64>().value(row),
    })
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
            let batch = match self.batches.next_batch()? {
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

#[cfg(test)]
mod tests {
    use std::fs::File;

    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    use super::*;
    use crate::io::Input;
    use crate::io::parquet::batches::batch_rows;
    use arrow_array::{
        ArrayRef, BinaryArray, Int64Array, LargeStringArray, ListArray, StringArray,
    };
    use parquet::arrow::ArrowWriter;
    use std::sync::Arc;

    /// Every record of the Parquet file at `path`, as read with `fields`.
    fn raw_records(path: &Path, fields: &FieldSpec) -> Vec<RawRecord> {
        Input::new(path, None)
            .unwrap()
            .open(fields, u64::MAX)
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    }

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
        let raws = raw_records(&path, &fields);
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

    /// Writes rows of `id` and `text` (bytes, as a UTF8 column whatever they hold) as a
    /// Parquet file at `path`, `per_group` rows to a row group, dictionary-encoded or not.
    fn write_raw_text(path: &Path, texts: &[&[u8]], per_group: usize, dictionary: bool) {
        use parquet::data_type::{ByteArray, ByteArrayType};
        use parquet::file::properties::WriterProperties;
        use parquet::file::writer::SerializedFileWriter;
        let schema = parquet::schema::parser::parse_message_type(
            "message docs { required binary id (UTF8); optional binary text (UTF8); }",
        )
        .unwrap();
        let properties = WriterProperties::builder()
            .set_dictionary_enabled(dictionary)
            .build();
        let file = File::create(path).unwrap();
        let mut writer =
            SerializedFileWriter::new(file, Arc::new(schema), Arc::new(properties)).unwrap();
        for (group, chunk) in texts.chunks(per_group).enumerate() {
            let mut rows = writer.next_row_group().unwrap();
            let ids: Vec<ByteArray> = (0..chunk.len())
                .map(|i| ByteArray::from(format!("r{}", group * per_group + i).as_str()))
                .collect();
            let mut column = rows.next_column().unwrap().unwrap();
            column
                .typed::<ByteArrayType>()
                .write_batch(&ids, None, None)
                .unwrap();
            column.close().unwrap();
            let values: Vec<ByteArray> =
                chunk.iter().map(|t| ByteArray::from(t.to_vec())).collect();
            let levels = vec![1i16; chunk.len()];
            let mut column = rows.next_column().unwrap().unwrap();
            column
                .typed::<ByteArrayType>()
                .write_batch(&values, Some(&levels), None)
                .unwrap();
            column.close().unwrap();
            rows.close().unwrap();
        }
        writer.close().unwrap();
    }

    #[test]
    fn a_cell_that_is_not_utf8_is_a_bad_record_named_by_row_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let fields = FieldSpec {
            id: "id".into(),
            text: vec!["text".into()],
        };
        let good: Vec<Vec<u8>> = (0..40)
            .map(|i| format!("text of row {i}").into_bytes())
            .collect();
        for (bad, per_group, dictionary) in [(25, 10, true), (25, 10, false), (0, 40, true)] {
            let mut texts: Vec<&[u8]> = good.iter().map(Vec::as_slice).collect();
            texts[bad] = b"caf\xe9 au lait";
            let path = dir
                .path()
                .join(format!("bad-{bad}-{per_group}-{dictionary}.parquet"));
            write_raw_text(&path, &texts, per_group, dictionary);
            let raws = raw_records(&path, &fields);
            assert_eq!(
                raws.len(),
                40,
                "every row read, the bad one as a bad record"
            );
            for (row, raw) in raws.iter().enumerate() {
                match raw.parse(&fields) {
                    Ok(record) if row != bad => {
                        assert_eq!(
                            (record.id, record.text),
                            (format!("r{row}"), format!("text of row {row}"))
                        );
                    }
                    Err(e) if row == bad => {
                        let said = e.to_string();
                        let row = format!(
                            ":{}: field `text`: not valid UTF-8 (byte 4 of the cell)",
                            bad + 1
                        );
                        assert!(
                            said.contains(&row) && said.contains("--skip-invalid"),
                            "{said}"
                        );
                    }
                    other => panic!("row {row}: {:?}", other.map(|r| r.id)),
                }
            }
        }
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
