//! Parquet through polars, read in slices of rows so that memory stays per slice, not per file.
//! A record's "line" is its 1-based row number.

use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};

use polars::prelude::*;

use super::{Body, FieldSpec, RawRecord, RawRecords, Record};
use crate::error::{Error, InputError, Location, Result};

/// Rows decoded at a time.
const SLICE: usize = 16_384;

pub(super) fn open(path: &Path, fields: &FieldSpec) -> Result<RawRecords> {
    let unreadable = |e: PolarsError| {
        Error::input(
            Location::file(path),
            None,
            format!("not a readable Parquet file: {e}"),
            "check that the file is complete Parquet",
        )
    };
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = ParquetReader::new(file);
    let (rows, schema) = crate::foreign::catch(|| Ok((reader.num_rows()?, reader.schema()?)))
        .map_err(|cause| cannot_read(path, cause))?
        .map_err(unreadable)?;
    let columns: Vec<String> = schema.iter_names().map(|n| n.to_string()).collect();
    for (name, is_id) in
        std::iter::once((&fields.id, true)).chain(fields.text.iter().map(|t| (t, false)))
    {
        let Some(column) = schema.get(name.as_str()) else {
            return Err(Error::input(
                Location::file(path),
                Some(name),
                format!("no such column; the file has: {}", columns.join(", ")),
                "choose the columns with --id-field and --text-field",
            ));
        };
        check_type(path, name, column.dtype(), is_id)?;
    }
    // Every column is read, to be copied out with the record: one polars cannot read is named
    // now, not met as a failure half-way through.
    if let Some(column) = schema.iter_values().find(|c| !readable(c.dtype())) {
        return Err(Error::input(
            Location::file(path),
            Some(column.name.as_str()),
            format!(
                "the column holds {:?}, which polars, the Parquet reader of this build, cannot \
                 read",
                column.dtype()
            ),
            "every column is copied to the outputs, so every column is read: drop this one, or \
             convert the file to JSONL",
        ));
    }
    Ok(Box::new(Rows {
        path: path.to_owned(),
        fields: fields.clone(),
        rows,
        next_row: 0,
        buffered: VecDeque::new(),
    }))
}

/// Whether polars, built with the features this crate asks for, reads a column of `dtype`
/// (it does not read dates, times, decimals, 8- and 16-bit integers, half floats, structs
/// or maps: it fails on them, or panics).
fn readable(dtype: &ArrowDataType) -> bool {
    use ArrowDataType as T;
    match dtype {
        T::Null
        | T::Boolean
        | T::Int32
        | T::Int64
        | T::UInt32
        | T::UInt64
        | T::Float32
        | T::Float64
        | T::Utf8
        | T::LargeUtf8
        | T::Utf8View
        | T::Binary
        | T::LargeBinary
        | T::BinaryView => true,
        T::List(item) | T::LargeList(item) | T::FixedSizeList(item, _) => readable(item.dtype()),
        T::Dictionary(_, values, _) => readable(values),
        _ => false,
    }
}

/// The error for a file polars stopped on (it panics on column types it was not built for).
pub fn cannot_read(path: &Path, cause: String) -> Error {
    Error::input(
        Location::file(path),
        None,
        format!("polars, which reads Parquet here, cannot read this file: {cause}"),
        "a column of a type it cannot read (a decimal, a map, a list of structs) cannot pass \
         through yet: drop it, or convert the file to JSONL",
    )
}

/// Text columns must hold strings and the id column strings or integers: anything else (bytes,
/// lists, structs) would reach the documents as its printed form, `b"caf\xe9"` or `["a"]`.
fn check_type(path: &Path, name: &str, dtype: &ArrowDataType, is_id: bool) -> Result<()> {
    use ArrowDataType as T;
    let fits = match dtype {
        T::Utf8 | T::LargeUtf8 | T::Utf8View | T::Null => true,
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
        format!("the column holds {dtype:?}, not {wanted}"),
        hint,
    ))
}

struct Rows {
    path: PathBuf,
    fields: FieldSpec,
    rows: usize,
    next_row: usize,
    buffered: VecDeque<RawRecord>,
}

impl Rows {
    fn read_slice(&mut self) -> Result<()> {
        let file = File::open(&self.path).map_err(|e| Error::io(&self.path, e))?;
        let slice = (self.next_row, SLICE);
        let frame =
            crate::foreign::catch(|| ParquetReader::new(file).with_slice(Some(slice)).finish())
                .map_err(|cause| cannot_read(&self.path, cause))?
                .map_err(|e| cannot_read(&self.path, e.to_string()))?;
        let names: Vec<String> = frame
            .get_column_names()
            .iter()
            .map(|n| n.to_string())
            .collect();
        let columns = frame.columns();
        let bytes_per_row =
            std::fs::metadata(&self.path).map_or(0, |m| m.len()) / self.rows.max(1) as u64;
        for row in 0..frame.height() {
            let location = Location::line(&self.path, (self.next_row + row + 1) as u64);
            let mut object = serde_json::Map::new();
            let mut failure = None;
            for (name, column) in names.iter().zip(columns) {
                match column.get(row) {
                    Ok(value) => {
                        object.insert(name.clone(), to_json(&value));
                    }
                    Err(e) => failure = Some(format!("column `{name}`: {e}")),
                }
            }
            let body = match failure {
                Some(problem) => Body::Invalid(InputError {
                    location: location.clone(),
                    field: None,
                    problem,
                    hint: "repair the file, or pass --skip-invalid".into(),
                }),
                None => Body::Parsed(
                    record_of(&object, &self.fields, &location),
                    serde_json::Value::Object(object).to_string().into_bytes(),
                ),
            };
            self.buffered.push_back(RawRecord {
                location,
                input_bytes: bytes_per_row,
                body,
            });
        }
        self.next_row += frame.height().max(1);
        Ok(())
    }
}

impl Iterator for Rows {
    type Item = Result<RawRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buffered.is_empty()
            && self.next_row < self.rows
            && let Err(e) = self.read_slice()
        {
            self.next_row = self.rows;
            return Some(Err(e));
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
    let id = match &object[&fields.id] {
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
        match &object[name] {
            Value::String(s) => parts.push(s.as_str()),
            Value::Null => parts.push(""),
            other => return Err(bad(name, format!("expected text, found {other}"))),
        }
    }
    Ok(Record::from_fields(id, &parts))
}

fn to_json(value: &AnyValue) -> serde_json::Value {
    use serde_json::Value;
    match value {
        AnyValue::Null => Value::Null,
        AnyValue::Boolean(b) => (*b).into(),
        AnyValue::String(s) => (*s).into(),
        AnyValue::StringOwned(s) => s.as_str().into(),
        AnyValue::UInt8(n) => (*n).into(),
        AnyValue::UInt16(n) => (*n).into(),
        AnyValue::UInt32(n) => (*n).into(),
        AnyValue::UInt64(n) => (*n).into(),
        AnyValue::Int8(n) => (*n).into(),
        AnyValue::Int16(n) => (*n).into(),
        AnyValue::Int32(n) => (*n).into(),
        AnyValue::Int64(n) => (*n).into(),
        AnyValue::Float32(x) => f64::from(*x).into(),
        AnyValue::Float64(x) => (*x).into(),
        other => other.to_string().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::Input;

    #[test]
    fn parquet_rows_become_records_with_all_columns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs.parquet");
        let mut frame = df!(
            "core_id" => ["a", "b", "c"],
            "processed_title" => [Some("zażółć gęślą jaźń"), Some("title"), None],
            "processed_abstract" => ["x", "y", "z"],
            "year" => [2020i64, 2021, 2022],
        )
        .unwrap();
        ParquetWriter::new(File::create(&path).unwrap())
            .finish(&mut frame)
            .unwrap();
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
        let titles = Series::new("processed_title".into(), [&b"caf\xe9"[..], b"tea"]);
        let abstracts = Series::new(
            "processed_abstract".into(),
            [
                Series::new("".into(), ["a", "b"]),
                Series::new("".into(), ["c"]),
            ],
        );
        let mut frame = DataFrame::new_infer_height(vec![
            Series::new("core_id".into(), [1i64, 2]).into(),
            titles.into(),
            abstracts.into(),
        ])
        .unwrap();
        ParquetWriter::new(File::create(&path).unwrap())
            .finish(&mut frame)
            .unwrap();
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
}
