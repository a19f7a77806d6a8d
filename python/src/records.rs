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

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
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
/// The field of that file holding the column a `field:NAME:max|min` keep policy names.
pub(crate) const KEEP_FIELD: &str = "keep";
/// Rows written between two looks at whether the caller asked to stop.
const CANCEL_EVERY: usize = 4096;

/// Records written to a scratch file, waiting for the one run or index build that reads them.
#[pyclass(frozen, module = "neardup._neardup")]
pub(crate) struct Records {
    written: Mutex<Option<(InputSpec, Written)>>,
    /// Whether they carry the column a keep policy reads.
    keep: bool,
}

/// Records handed over, as written: the scratch folder, which must outlive every reading of
/// its file, and what the caller handed over.
pub(crate) struct Written {
    _scratch: ScratchDir,
    pub(crate) handed: Handed,
}

/// What the caller handed over, to speak of it in the caller's terms: the scratch file's
/// lines are the caller's rows (from 0), its fields the caller's columns, and a row that could
/// not be written as a record says why.
pub(crate) struct Handed {
    /// The scratch file.
    path: PathBuf,
    /// The column of ids, where the caller named one.
    id: Option<String>,
    /// The text columns.
    texts: Vec<String>,
    /// The column the keep policy reads, where it names one.
    keep: Option<String>,
    /// The rows that are no record, and why.
    problems: BTreeMap<usize, String>,
}

impl Handed {
    /// `message`, a library message, with the scratch file's places and fields named as the
    /// caller knows them: `row 3, column 'abstract'` for `.../records.jsonl:4: field
    /// `text1``.
    pub(crate) fn message(&self, message: &str) -> String {
        let prefix = format!("{}:", self.path.display());
        let Some(rest) = message.strip_prefix(&prefix) else {
            return message.to_owned();
        };
        let (line, rest) = rest.split_once(": ").unwrap_or(("", rest));
        let Ok(line) = line.parse::<usize>() else {
            return format!("the records handed over: {rest}");
        };
        let row = line.saturating_sub(1);
        if let Some(problem) = self.problems.get(&row) {
            return format!(
                "row {row}: {problem} (fix the row, or pass skip_invalid=True to skip such rows)"
            );
        }
        let named = |name: &str| format!("'{name}'");
        let mut rest = rest.to_owned();
        let joined = text_fields(self.texts.len()).join(" + ");
        let columns: Vec<String> = self.texts.iter().map(|t| named(t)).collect();
        let mut fields = vec![(format!("field `{joined}`: "), columns.join(" + "))];
        for (field, name) in text_fields(self.texts.len()).iter().zip(&self.texts) {
            fields.push((format!("field `{field}`: "), named(name)));
        }
        let id = self.id.as_deref().map_or_else(|| "id".to_owned(), named);
        fields.push((format!("field `{ID_FIELD}`: "), id));
        if let Some(keep) = &self.keep {
            fields.push((format!("field `{KEEP_FIELD}`: "), named(keep)));
        }
        for (field, column) in fields {
            if let Some(after) = rest.strip_prefix(&field) {
                rest = format!("column {column}: {after}");
                break;
            }
        }
        format!("row {row}, {rest}")
    }
}

impl Records {
    fn new(handed: Handed, scratch: ScratchDir) -> Records {
        let keep = handed.keep.is_some();
        let input = InputSpec {
            paths: vec![handed.path.clone()],
            format: Some(InputFormat::JSONL),
            id_field: ID_FIELD.into(),
            text_fields: text_fields(handed.texts.len()),
            skip_invalid: false,
            max_doc_bytes: neardup::io::DEFAULT_MAX_DOC_BYTES,
        };
        let written = Written {
            _scratch: scratch,
            handed,
        };
        Records {
            written: Mutex::new(Some((input, written))),
            keep,
        }
    }

    /// The input to read, and the records as written; once.
    pub(crate) fn take(&self) -> PyResult<(InputSpec, Written)> {
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        written.take().ok_or_else(|| {
            PyValueError::new_err("these records were read by a run already: hand them over again")
        })
    }

    /// Whether the records carry the column a keep policy reads ([`KEEP_FIELD`]).
    pub(crate) fn carry_keep(&self) -> bool {
        self.keep
    }
}

/// The caller's names for what it hands over: its id column (`None`: a row's number, or
/// ids given as a list), its text columns, and the column its keep policy reads.
type Names = (Option<String>, Vec<String>, Option<String>);

#[pymethods]
impl Records {
    /// Records from columns: `ids`, the text `columns` (joined with a space; the first is the
    /// title where there are several; `None` is an empty field) and the `keep` column, where
    /// the keep policy reads one (its values as text). `problems` names the rows that are no
    /// record, and why: each is written so that the run refuses it, or skips it under
    /// `skip_invalid`, naming the row.
    #[staticmethod]
    #[pyo3(signature = (ids, columns, keep, problems, names))]
    fn from_columns(
        py: Python<'_>,
        ids: Vec<Option<String>>,
        columns: Vec<Vec<Option<String>>>,
        keep: Option<Vec<Option<String>>>,
        problems: BTreeMap<usize, String>,
        names: Names,
    ) -> PyResult<Records> {
        if let Some(column) = columns.iter().chain(&keep).find(|c| c.len() != ids.len()) {
            return Err(PyValueError::new_err(format!(
                "{} ids and a column of {}: give one value for each record",
                ids.len(),
                column.len()
            )));
        }
        let (id, texts, keep_name) = names;
        let (scratch, path, problems) = detached(py, || {
            write_records(texts.len(), id.as_deref(), problems, |out| {
                for (row, id) in ids.iter().enumerate() {
                    let texts = columns.iter().map(|c| c[row].as_deref().unwrap_or(""));
                    let kept = keep.as_ref().and_then(|k| k[row].as_deref());
                    out.record(id.as_deref(), texts, kept)?;
                }
                Ok(())
            })
        })?;
        let handed = Handed {
            path,
            id,
            texts,
            keep: keep_name,
            problems,
        };
        Ok(Records::new(handed, scratch))
    }

    /// Records from the Arrow stream in `stream` (the capsule `__arrow_c_stream__` gives),
    /// the id in column `id` (a row's number where `None`), the text in `texts` and, where
    /// the keep policy reads one, its column `keep`. `None` where a column is of a type read
    /// only through Python (its values are then turned into text as Python prints them): the
    /// stream is left unread but for its schema.
    #[staticmethod]
    #[pyo3(signature = (stream, id, texts, keep = None))]
    fn from_arrow(
        py: Python<'_>,
        stream: &Bound<'_, PyCapsule>,
        id: Option<String>,
        texts: Vec<String>,
        keep: Option<String>,
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
        let Some(columns) = Columns::find(&schema, id.as_deref(), &texts, keep.as_deref())? else {
            return Ok(None);
        };
        let (scratch, path, problems) = detached(py, || {
            write_records(texts.len(), id.as_deref(), BTreeMap::new(), |out| {
                columns.write_all(reader, out)
            })
        })?;
        let handed = Handed {
            path,
            id,
            texts,
            keep,
            problems,
        };
        Ok(Some(Records::new(handed, scratch)))
    }
}

/// The text fields of the scratch file, one a text column.
fn text_fields(columns: usize) -> Vec<String> {
    (0..columns).map(|i| format!("text{i}")).collect()
}

/// Writes into a new scratch folder the records `write` gives a [`RecordWriter`], their ids
/// from the column `id_column` (where the caller named one), `problems` naming rows that are
/// no record; returns the folder, the file and every row found to be no record, by `write`
/// too.
fn write_records(
    text_columns: usize,
    id_column: Option<&str>,
    problems: BTreeMap<usize, String>,
    write: impl FnOnce(&mut RecordWriter) -> neardup::Result<()>,
) -> neardup::Result<(ScratchDir, PathBuf, BTreeMap<usize, String>)> {
    let scratch = ScratchDir::new()?;
    let path = scratch.path().join(RECORDS);
    let file = std::fs::File::create(&path).map_err(|e| Error::io(&path, e))?;
    let mut out = RecordWriter {
        path: &path,
        out: BufWriter::with_capacity(1 << 20, file),
        fields: text_fields(text_columns),
        no_id: match id_column {
            Some(name) => format!("column '{name}' holds no id; every record needs one"),
            None => "it holds no id; every record needs one".into(),
        },
        rows: 0,
        problems,
    };
    write(&mut out)?;
    out.out.flush().map_err(|e| Error::io(&path, e))?;
    let problems = out.problems;
    Ok((scratch, path, problems))
}

/// The scratch file's writer: one JSON object a record, its id then its text fields (and the
/// keep policy's field); a row that is no record as a line that is no JSON, which the run
/// refuses, or skips under `skip_invalid`, by its line.
struct RecordWriter<'a> {
    path: &'a Path,
    out: BufWriter<std::fs::File>,
    fields: Vec<String>,
    /// What a row without an id is.
    no_id: String,
    rows: usize,
    problems: BTreeMap<usize, String>,
}

impl RecordWriter<'_> {
    /// Writes the next row: a record of `id` and `texts` (and `keep`), or, where `id` is
    /// `None` or the row was named a problem, a line the run refuses.
    fn record<'t>(
        &mut self,
        id: Option<&str>,
        texts: impl Iterator<Item = &'t str>,
        keep: Option<&str>,
    ) -> neardup::Result<()> {
        if self.rows.is_multiple_of(CANCEL_EVERY) && neardup::cancel::requested() {
            return Err(Error::Interrupted);
        }
        let row = self.rows;
        self.rows += 1;
        let path = self.path;
        let out = &mut self.out;
        let io = |e| Error::io(path, e);
        let Some(id) = id.filter(|_| !self.problems.contains_key(&row)) else {
            let no_id = &self.no_id;
            self.problems.entry(row).or_insert_with(|| no_id.clone());
            return out.write_all(b"no record\n").map_err(io);
        };
        write!(out, "{{\"{ID_FIELD}\":").map_err(io)?;
        serde_json::to_writer(&mut *out, id).map_err(|e| io(e.into()))?;
        for (field, text) in self.fields.iter().zip(texts) {
            write!(out, ",\"{field}\":").map_err(io)?;
            serde_json::to_writer(&mut *out, text).map_err(|e| io(e.into()))?;
        }
        if let Some(keep) = keep {
            write!(out, ",\"{KEEP_FIELD}\":").map_err(io)?;
            serde_json::to_writer(&mut *out, keep).map_err(|e| io(e.into()))?;
        }
        out.write_all(b"}\n").map_err(io)
    }
}

/// Where a record's id, texts and keep field are in each batch of an Arrow stream.
struct Columns {
    /// The id column's place and name (`None`: a row's number is its id).
    id: Option<(usize, String)>,
    texts: Vec<usize>,
    /// The keep policy's column's place.
    keep: Option<usize>,
}

impl Columns {
    /// The columns of `schema` named `id`, `texts` and `keep`, if each is of a type read
    /// here: text (`string`, `large_string`, `string_view`, or a dictionary of one) for all,
    /// integers too for the id, and anything Arrow writes as text for the keep field. A
    /// column missing is an error (the package checked the names already).
    fn find(
        schema: &Schema,
        id: Option<&str>,
        texts: &[String],
        keep: Option<&str>,
    ) -> PyResult<Option<Columns>> {
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
        let keep = match keep {
            Some(name) => {
                let place = place(name)?;
                let kind = schema.field(place).data_type();
                if !arrow_cast::can_cast_types(kind, &DataType::LargeUtf8) {
                    return Ok(None);
                }
                Some(place)
            }
            None => None,
        };
        Ok(Some(Columns {
            id,
            texts: text_places,
            keep,
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
    /// the row after its last. A row without an id is written as no record.
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
        let keep = match self.keep {
            Some(place) => Some(Strings::of(batch.column(place))?),
            None => None,
        };
        let mut id_text = String::new();
        for offset in 0..batch.num_rows() {
            let id = match &ids {
                Some(ids) => ids.at(offset),
                None => {
                    id_text.clear();
                    write!(id_text, "{}", first + offset).expect("a String takes any text");
                    Some(id_text.as_str())
                }
            };
            let texts = texts.iter().map(|t| t.at(offset).unwrap_or(""));
            out.record(id, texts, keep.as_ref().and_then(|k| k.at(offset)))?;
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
