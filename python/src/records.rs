//! Records handed over in memory, written to a scratch JSON Lines file that a run then reads
//! as it reads any input (twice: once to sign, once to write).
//!
//! They come in two ways:
//! - **columns of Python strings** ([`Records::from_columns`]): lists and dicts, and any table
//!   whose columns are not plain text (a float id, a text column of numbers);
//! - **an Arrow stream** ([`Records::from_arrow`]): pyarrow tables, polars and pandas
//!   DataFrames and `datasets` all export their columns through the Arrow C stream interface
//!   (`__arrow_c_stream__`). The id and text columns are read where they lie in the caller's
//!   memory and go straight to the file: no text becomes a Python object on the way (at a
//!   million records of 1.7 KB, that was two copies of 1.7 GB).

use std::ffi::CStr;
use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Mutex;

use arrow_array::cast::AsArray;
use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, Schema};
use neardup::Error;
use neardup::io::{InputFormat, ScratchDir};
use neardup::pipeline::InputSpec;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods};

use crate::detached;

/// The file records handed over in memory are written to.
const RECORDS: &str = "records.jsonl";
/// The id field of that file.
const ID_FIELD: &str = "id";
/// Rows written between two looks at whether the caller asked to stop.
const CANCEL_EVERY: usize = 4096;

/// Records written to a scratch file, waiting for the one run or index build that reads them.
#[pyclass(frozen, module = "neardup._neardup")]
pub(crate) struct Records {
    written: Mutex<Option<(InputSpec, ScratchDir)>>,
}

impl Records {
    fn new(text_columns: usize, scratch: ScratchDir) -> Records {
        let input = InputSpec {
            paths: vec![scratch.path().join(RECORDS)],
            format: Some(InputFormat::Jsonl),
            id_field: ID_FIELD.into(),
            text_fields: text_fields(text_columns),
            skip_invalid: false,
            max_doc_bytes: neardup::io::DEFAULT_MAX_DOC_BYTES,
        };
        Records {
            written: Mutex::new(Some((input, scratch))),
        }
    }

    /// The input to read and the scratch folder that must outlive the reading; once.
    pub(crate) fn take(&self) -> PyResult<(InputSpec, ScratchDir)> {
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        written.take().ok_or_else(|| {
            PyValueError::new_err("these records were read by a run already: hand them over again")
        })
    }
}

#[pymethods]
impl Records {
    /// Records from columns: `ids`, and the text `columns` (joined with a space; the first is
    /// the title where there are several; `None` is an empty field).
    #[staticmethod]
    fn from_columns(
        py: Python<'_>,
        ids: Vec<String>,
        columns: Vec<Vec<Option<String>>>,
    ) -> PyResult<Records> {
        if let Some(column) = columns.iter().find(|c| c.len() != ids.len()) {
            return Err(PyValueError::new_err(format!(
                "{} ids and a text column of {}: give one text for each record",
                ids.len(),
                column.len()
            )));
        }
        let scratch = detached(py, || {
            write_records(columns.len(), |out| {
                for (row, id) in ids.iter().enumerate() {
                    let texts = columns.iter().map(|c| c[row].as_deref().unwrap_or(""));
                    out.record(id, texts)?;
                }
                Ok(())
            })
        })?;
        Ok(Records::new(columns.len(), scratch))
    }

    /// Records from the Arrow stream in `stream` (the capsule `__arrow_c_stream__` gives),
    /// the id in column `id` (a row's number where `None`) and the text in `texts`. `None`
    /// where a column is of a type read only through Python (its values are then turned into
    /// text as Python prints them): the stream is left unread but for its schema.
    #[staticmethod]
    fn from_arrow(
        py: Python<'_>,
        stream: &Bound<'_, PyCapsule>,
        id: Option<String>,
        texts: Vec<String>,
    ) -> PyResult<Option<Records>> {
        const NAME: &CStr = c"arrow_array_stream";
        let pointer = stream.pointer_checked(Some(NAME))?;
        // SAFETY: the capsule is named as the Arrow C stream interface names the capsule of a
        // stream, so it points to an `FFI_ArrowArrayStream`; `from_raw` moves the stream out
        // and leaves a released one, which the capsule's destructor then passes over.
        let reader = unsafe {
            RecordBatchStreamReader::from_raw(pointer.as_ptr().cast::<FFI_ArrowArrayStream>())
        }
        .map_err(|e| PyValueError::new_err(format!("reading the Arrow stream: {e}")))?;
        let schema = reader.schema();
        let Some(columns) = Columns::find(&schema, id.as_deref(), &texts)? else {
            return Ok(None);
        };
        let scratch = detached(py, || {
            write_records(texts.len(), |out| columns.write_all(reader, out))
        })?;
        Ok(Some(Records::new(texts.len(), scratch)))
    }
}

/// The text fields of the scratch file, one a text column.
fn text_fields(columns: usize) -> Vec<String> {
    (0..columns).map(|i| format!("text{i}")).collect()
}

/// Writes into a new scratch folder the records `write` gives a [`RecordWriter`].
fn write_records(
    text_columns: usize,
    write: impl FnOnce(&mut RecordWriter) -> neardup::Result<()>,
) -> neardup::Result<ScratchDir> {
    let scratch = ScratchDir::new()?;
    let path = scratch.path().join(RECORDS);
    let file = std::fs::File::create(&path).map_err(|e| Error::io(&path, e))?;
    let mut out = RecordWriter {
        path: &path,
        out: BufWriter::with_capacity(1 << 20, file),
        fields: text_fields(text_columns),
        rows: 0,
    };
    write(&mut out)?;
    out.out.flush().map_err(|e| Error::io(&path, e))?;
    Ok(scratch)
}

/// The scratch file's writer: one JSON object a record, its id then its text fields.
struct RecordWriter<'a> {
    path: &'a Path,
    out: BufWriter<std::fs::File>,
    fields: Vec<String>,
    rows: usize,
}

impl RecordWriter<'_> {
    fn record<'t>(
        &mut self,
        id: &str,
        texts: impl Iterator<Item = &'t str>,
    ) -> neardup::Result<()> {
        if self.rows.is_multiple_of(CANCEL_EVERY) && neardup::cancel::requested() {
            return Err(Error::Interrupted);
        }
        self.rows += 1;
        let path = self.path;
        let out = &mut self.out;
        let io = |e| Error::io(path, e);
        write!(out, "{{\"{ID_FIELD}\":").map_err(io)?;
        serde_json::to_writer(&mut *out, id).map_err(|e| io(e.into()))?;
        for (field, text) in self.fields.iter().zip(texts) {
            write!(out, ",\"{field}\":").map_err(io)?;
            serde_json::to_writer(&mut *out, text).map_err(|e| io(e.into()))?;
        }
        out.write_all(b"}\n").map_err(io)
    }
}

/// Where a record's id and texts are in each batch of an Arrow stream.
struct Columns {
    /// The id column's place and name (`None`: a row's number is its id).
    id: Option<(usize, String)>,
    texts: Vec<usize>,
}

impl Columns {
    /// The columns of `schema` named `id` and `texts`, if each is of a type read here: text
    /// (`string`, `large_string`, `string_view`, or a dictionary of one) for all, and integers
    /// too for the id. A column missing is an error (the package checked the names already).
    fn find(schema: &Schema, id: Option<&str>, texts: &[String]) -> PyResult<Option<Columns>> {
        let place = |name: &str| {
            schema.index_of(name).map_err(|_| {
                PyValueError::new_err(format!("the Arrow stream has no column {name:?}"))
            })
        };
        let mut text_places = Vec::with_capacity(texts.len());
        for name in texts {
            let place = place(name)?;
            if !is_text(schema.field(place).data_type()) {
                return Ok(None);
            }
            text_places.push(place);
        }
        let id = match id {
            Some(name) => {
                let place = place(name)?;
                let kind = schema.field(place).data_type();
                if !(is_text(kind) || kind.is_integer()) {
                    return Ok(None);
                }
                Some((place, name.to_owned()))
            }
            None => None,
        };
        Ok(Some(Columns {
            id,
            texts: text_places,
        }))
    }

    /// Writes every record of `reader`'s batches.
    fn write_all(
        &self,
        reader: RecordBatchStreamReader,
        out: &mut RecordWriter,
    ) -> neardup::Result<()> {
        let mut row = 0;
        for batch in reader {
            let batch =
                batch.map_err(|e| Error::Usage(format!("reading the Arrow stream: {e}")))?;
            row = self.write_batch(&batch, row, out)?;
        }
        Ok(())
    }

    /// Writes the records of `batch`, whose first row is row `first` of the stream; returns
    /// the row after its last.
    fn write_batch(
        &self,
        batch: &RecordBatch,
        first: usize,
        out: &mut RecordWriter,
    ) -> neardup::Result<usize> {
        let texts: Vec<Strings> = self
            .texts
            .iter()
            .map(|&place| Strings::of(batch.column(place)))
            .collect::<neardup::Result<_>>()?;
        let ids = match &self.id {
            Some((place, _)) => Some(Strings::of(batch.column(*place))?),
            None => None,
        };
        let mut id_text = String::new();
        for offset in 0..batch.num_rows() {
            let row = first + offset;
            let id = match (&ids, &self.id) {
                (Some(ids), Some((_, name))) => ids.at(offset).ok_or_else(|| {
                    Error::Usage(format!(
                        "row {row}: column '{name}' holds no id; every record needs one"
                    ))
                })?,
                _ => {
                    id_text.clear();
                    write!(id_text, "{row}").expect("a String takes any text");
                    &id_text
                }
            };
            out.record(id, texts.iter().map(|t| t.at(offset).unwrap_or("")))?;
        }
        Ok(first + batch.num_rows())
    }
}

/// Whether a column of type `kind` holds text that is read here.
fn is_text(kind: &DataType) -> bool {
    match kind {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Dictionary(_, values) => {
            matches!(
                **values,
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            )
        }
        _ => false,
    }
}

/// A column of a batch as text: the strings where they lie, or integers and dictionaries
/// turned into plain strings first.
enum Strings<'a> {
    Utf8(&'a arrow_array::StringArray),
    Large(&'a arrow_array::LargeStringArray),
    View(&'a arrow_array::StringViewArray),
    Cast(ArrayRef),
}

impl<'a> Strings<'a> {
    fn of(column: &'a ArrayRef) -> neardup::Result<Strings<'a>> {
        Ok(match column.data_type() {
            DataType::Utf8 => Strings::Utf8(column.as_string::<i32>()),
            DataType::LargeUtf8 => Strings::Large(column.as_string::<i64>()),
            DataType::Utf8View => Strings::View(column.as_string_view()),
            _ => Strings::Cast(
                arrow_cast::cast(column, &DataType::LargeUtf8)
                    .map_err(|e| Error::Usage(format!("reading the Arrow stream: {e}")))?,
            ),
        })
    }

    /// Row `row`'s text, `None` where null.
    fn at(&self, row: usize) -> Option<&str> {
        match self {
            Strings::Utf8(a) => a.is_valid(row).then(|| a.value(row)),
            Strings::Large(a) => a.is_valid(row).then(|| a.value(row)),
            Strings::View(a) => a.is_valid(row).then(|| a.value(row)),
            Strings::Cast(a) => {
                let a = a.as_string::<i64>();
                a.is_valid(row).then(|| a.value(row))
            }
        }
    }
}
