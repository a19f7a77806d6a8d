//! Reading corpora and writing results.
//!
//! Input is read in two steps so that the expensive one runs in parallel: a serial reader
//! frames the input into [`RawRecord`]s (a JSONL line, a CSV row, a text file) and
//! [`RawRecord::parse`] then extracts the id and text, on any thread. A record that cannot be
//! parsed yields an [`InputError`] naming file, line and field; I/O failures are fatal.
//!
//! Formats, chosen by [`InputFormat::detect`] or explicitly:
//! - JSONL (CORE 2020 layout by default: id `core_id`, text `processed_title` + `processed_abstract`),
//! - CSV / TSV with a header row (the same field names),
//! - a folder or a `.zip` of text files, id = the path inside it,
//! - Parquet (cargo feature `parquet`, on by default), read in slices of rows.
//!
//! Results are written through [`AtomicFile`]: a temporary file beside the target, renamed into
//! place only when complete. Large temporary work goes in a [`ScratchDir`], removed even when
//! the run is interrupted.

mod corpus;
mod csv_input;
mod files;
mod jsonl;
mod lines;
mod output;
#[cfg(feature = "parquet")]
mod parquet;
mod scratch;

pub use corpus::{
    Corpus, DEFAULT_MAX_DOC_BYTES, ReadOptions, SkipReport, for_each_chunk, read_corpus,
};
pub use lines::for_each_line;
pub use output::{AtomicFile, write_json_lines, write_json_pretty};
pub use scratch::ScratchDir;

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use xxhash_rust::xxh3::Xxh3;

use crate::error::{Error, InputError, Location, Result};

/// Which record fields hold the id and the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldSpec {
    /// The field holding the document id (a string, or an integer).
    pub id: String,
    /// Fields joined with a single space to make the document text.
    pub text: Vec<String>,
}

impl Default for FieldSpec {
    /// The CORE Deduplication Dataset 2020 layout.
    fn default() -> Self {
        FieldSpec {
            id: "core_id".into(),
            text: vec!["processed_title".into(), "processed_abstract".into()],
        }
    }
}

/// A parsed document.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Its id, unique in the corpus.
    pub id: String,
    /// Its text (possibly empty: an empty document matches nothing): the text fields joined
    /// with single spaces.
    pub text: String,
    /// Where several text fields were read, the length of the first (the title) at the start
    /// of `text`: the confirm stage compares titles on their own.
    pub title_len: Option<usize>,
}

impl Record {
    /// A record of plain text, with no separate title.
    pub fn plain(id: String, text: String) -> Record {
        Record {
            id,
            text,
            title_len: None,
        }
    }

    /// A record whose text fields are `parts` (the first is the title, where there are
    /// several).
    pub fn from_fields(id: String, parts: &[&str]) -> Record {
        Record {
            id,
            text: parts.join(" "),
            title_len: (parts.len() > 1).then(|| parts[0].len()),
        }
    }

    /// The title, where the input has one apart from the rest.
    pub fn title(&self) -> Option<&str> {
        self.title_len.map(|len| &self.text[..len])
    }

    /// The text after the title (all of it where there is no title).
    pub fn body(&self) -> &str {
        match self.title_len {
            Some(len) => self.text[len..].trim_start_matches(' '),
            None => &self.text,
        }
    }
}

/// The formats neardup reads.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum InputFormat {
    /// One JSON object a line.
    Jsonl,
    /// Comma-separated values with a header row.
    Csv,
    /// Tab-separated values with a header row.
    Tsv,
    /// A folder of text files (searched recursively).
    Folder,
    /// A .zip archive of text files.
    Zip,
    /// Apache Parquet (needs the `parquet` cargo feature, on by default).
    Parquet,
}

impl InputFormat {
    /// The format implied by a path: a folder, or the file's extension.
    pub fn detect(path: &Path) -> Result<Self> {
        if path.is_dir() {
            return Ok(InputFormat::Folder);
        }
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("jsonl" | "ndjson" | "json") => Ok(InputFormat::Jsonl),
            Some("csv") => Ok(InputFormat::Csv),
            Some("tsv" | "tab") => Ok(InputFormat::Tsv),
            Some("zip") => Ok(InputFormat::Zip),
            Some("parquet" | "pq") => Ok(InputFormat::Parquet),
            _ => Err(Error::input(
                Location::file(path),
                None,
                "cannot tell the input format from the file name",
                "name it .jsonl, .csv, .tsv, .parquet or .zip, give a folder, or pass --format",
            )),
        }
    }
}

/// One framed but not yet parsed record.
#[derive(Debug)]
pub struct RawRecord {
    /// Where it was read.
    pub location: Location,
    /// How many bytes of the input it covered (for progress).
    pub input_bytes: u64,
    body: Body,
}

#[derive(Debug)]
enum Body {
    Json(Vec<u8>),
    Csv(Arc<csv_input::Columns>, csv::ByteRecord),
    File {
        id: String,
        bytes: Vec<u8>,
    },
    /// Formats decoded in bulk (Parquet): the record and its JSON form.
    #[cfg_attr(not(feature = "parquet"), allow(dead_code))]
    Parsed(Result<Record, InputError>, Vec<u8>),
    Invalid(InputError),
}

impl RawRecord {
    /// Extracts id and text. Never panics: every problem is an [`InputError`] that names the
    /// location and field.
    pub fn parse(&self, fields: &FieldSpec) -> Result<Record, InputError> {
        match &self.body {
            Body::Json(line) => jsonl::parse(line, fields, &self.location),
            Body::Csv(columns, row) => columns.parse(row, &self.location),
            Body::File { id, bytes } => files::parse(id, bytes, &self.location),
            Body::Parsed(record, _) => record.clone(),
            Body::Invalid(e) => Err(e.clone()),
        }
    }

    /// A 64-bit hash of the record as read: the same fingerprint at a second read means the
    /// same record (but for a 2^-64 chance), found without parsing it again.
    pub fn fingerprint(&self) -> u64 {
        let mut hasher = Xxh3::new();
        let mut field = |bytes: &[u8]| {
            hasher.update(&(bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        };
        match &self.body {
            Body::Json(line) => field(line),
            Body::Csv(_, row) => row.iter().for_each(field),
            Body::File { id, bytes } => {
                field(id.as_bytes());
                field(bytes);
            }
            Body::Parsed(_, json) => field(json),
            Body::Invalid(e) => field(e.to_string().as_bytes()),
        }
        hasher.digest()
    }

    /// The record as one JSON line, for `unique.jsonl`: a JSONL line exactly as read, other
    /// formats as an object of their fields.
    pub fn original_json(&self, fields: &FieldSpec) -> Result<Cow<'_, [u8]>, InputError> {
        match &self.body {
            Body::Json(line) => Ok(Cow::Borrowed(line)),
            Body::Csv(columns, row) => columns.to_json(row, &self.location).map(Cow::Owned),
            Body::File { .. } => {
                let record = self.parse(fields)?;
                let json = serde_json::json!({ "id": record.id, "text": record.text });
                Ok(Cow::Owned(json.to_string().into_bytes()))
            }
            Body::Parsed(record, json) => record.clone().map(|_| Cow::Borrowed(json.as_slice())),
            Body::Invalid(e) => Err(e.clone()),
        }
    }
}

/// A stream of raw records; an `Err` item is a fatal I/O failure.
pub type RawRecords = Box<dyn Iterator<Item = Result<RawRecord>> + Send>;

/// One input of a run: a path and its format.
#[derive(Clone, Debug)]
pub struct Input {
    /// File or folder.
    pub path: PathBuf,
    /// How to read it.
    pub format: InputFormat,
}

impl Input {
    /// An input whose format is `format`, or detected from the path.
    pub fn new(path: impl Into<PathBuf>, format: Option<InputFormat>) -> Result<Self> {
        let path = path.into();
        if !path.exists() {
            return Err(Error::input(
                Location::file(&path),
                None,
                "no such file or folder",
                "check the path",
            ));
        }
        let format = match format {
            Some(f) => f,
            None => InputFormat::detect(&path)?,
        };
        Ok(Input { path, format })
    }

    /// Opens the input for framing.
    pub fn open(&self, fields: &FieldSpec) -> Result<RawRecords> {
        match self.format {
            InputFormat::Jsonl => jsonl::open(&self.path),
            InputFormat::Csv => csv_input::open(&self.path, b',', fields),
            InputFormat::Tsv => csv_input::open(&self.path, b'\t', fields),
            InputFormat::Folder => files::open_folder(&self.path),
            InputFormat::Zip => files::open_zip(&self.path),
            #[cfg(feature = "parquet")]
            InputFormat::Parquet => parquet::open(&self.path, fields),
            #[cfg(not(feature = "parquet"))]
            InputFormat::Parquet => Err(Error::Usage(format!(
                "{}: this neardup was built without Parquet support; rebuild with `--features parquet`",
                self.path.display()
            ))),
        }
    }

    /// The size in bytes that progress is measured against.
    pub fn size(&self) -> u64 {
        match self.format {
            InputFormat::Folder => walkdir::WalkDir::new(&self.path)
                .into_iter()
                .filter_map(|e| e.ok())
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum(),
            _ => std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0),
        }
    }
}
