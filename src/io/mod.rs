//! Reading corpora, and the files a run keeps beside them (scratch folders, locks, free
//! space).
//!
//! Input is read in two steps so that the expensive one runs in parallel: a serial reader
//! frames the input into [`RawRecord`]s (a JSONL line, a CSV row, a text file) and
//! [`RawRecord::parse`] then extracts the id and text, on any thread. A record that cannot be
//! parsed yields an [`InputError`] naming file, line and field; I/O failures are fatal.
//!
//! Formats, each a file behind [`Format`] and listed once in [`FORMATS`], chosen by
//! [`InputFormat::detect`] or explicitly:
//! - JSONL (CORE 2020 layout by default: id `core_id`, text `processed_title` + `processed_abstract`),
//! - CSV / TSV with a header row (the same field names),
//! - a folder or a `.zip` of text files, id = the path inside it,
//! - Parquet (cargo feature `parquet`, on by default), read in slices of rows.
//!
//! Large temporary work goes in a [`ScratchDir`], removed even when the run is interrupted.
//! What a run writes is `crate::output`'s.

mod binary;
mod corpus;
mod csv_input;
mod files;
mod floats;
mod format;
mod jsonl;
mod lines;
mod lock;
pub(crate) mod parquet;
mod range;
mod scratch;
mod seal;
pub mod space;
mod text_lines;

pub use binary::{
    read_count, read_floats, read_list, read_words_into, write_count, write_floats, write_list,
    write_words,
};
pub use corpus::{
    Corpus, DEFAULT_MAX_DOC_BYTES, ReadOptions, SkipReport, for_each_chunk, for_each_document,
    inputs_shortened, read_corpus, read_corpus_in, record_limit,
};
pub use csv_input::Dialect;
pub use floats::Floats;
pub use format::{FORMATS, Format, InputFormat};
pub use lines::for_each_line;
pub use lock::FolderLock;
pub use range::ByteRange;
pub use scratch::{
    ScratchDir, remove_on_interrupt as remove_scratch_on_interrupt, report_interrupted,
};
pub use seal::{SealWriter, check_seal};

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

/// The id field of the CORE Deduplication Dataset 2020 layout, read unless told.
pub const DEFAULT_ID_FIELD: &str = "core_id";
/// Its text fields, joined with a space.
pub const DEFAULT_TEXT_FIELDS: [&str; 2] = ["processed_title", "processed_abstract"];

impl Default for FieldSpec {
    /// The CORE Deduplication Dataset 2020 layout.
    fn default() -> Self {
        FieldSpec {
            id: DEFAULT_ID_FIELD.into(),
            text: DEFAULT_TEXT_FIELDS.map(String::from).to_vec(),
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

    /// [`Record::from_fields`] of fields it takes: a lone field becomes the text as it is,
    /// and each of several is let go of once it is copied into the text.
    pub fn from_owned_fields(id: String, parts: Vec<String>) -> Record {
        let title_len = (parts.len() > 1).then(|| parts[0].len());
        let text = match <[String; 1]>::try_from(parts) {
            Ok([text]) => text,
            Err(parts) => {
                let length = parts.iter().map(String::len).sum::<usize>() + parts.len();
                let mut text = String::with_capacity(length.saturating_sub(1));
                for (i, part) in parts.into_iter().enumerate() {
                    if i > 0 {
                        text.push(' ');
                    }
                    text.push_str(&part);
                }
                text
            }
        };
        Record {
            id,
            text,
            title_len,
        }
    }

    /// The title, where the input has one apart from the rest: a title field that is empty
    /// (or blank) is none, so that a record of a text alone (a sentence, a post) is weighed as
    /// one, not as a record whose title shares no word with any other's.
    pub fn title(&self) -> Option<&str> {
        self.title_len
            .map(|len| &self.text[..len])
            .filter(|title| !title.trim().is_empty())
    }

    /// The title, where the record has more than a title: what is embedded on its own, for
    /// the records that are its title and nothing else.
    pub fn title_apart(&self) -> Option<&str> {
        self.title().filter(|_| !self.body().is_empty())
    }

    /// The text after the title (all of it where there is no title).
    pub fn body(&self) -> &str {
        match self.title_len {
            Some(len) => self.text[len..].trim_start_matches(' '),
            None => &self.text,
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
    #[cfg(feature = "parquet")]
    Parsed(Result<Record, InputError>, parquet::SharedLine),
    Invalid(InputError),
    /// Let go of once read ([`RawRecord::parse_and_release`]).
    Released,
}

impl RawRecord {
    /// Extracts id and text. Never panics: every problem is an [`InputError`] that names the
    /// location and field.
    pub fn parse(&self, fields: &FieldSpec) -> Result<Record, InputError> {
        match &self.body {
            Body::Json(line) => jsonl::parse(line, fields, &self.location),
            Body::Csv(columns, row) => columns.parse(row, &self.location),
            Body::File { id, bytes } => files::parse(id, bytes, &self.location),
            #[cfg(feature = "parquet")]
            Body::Parsed(record, _) => record.clone(),
            Body::Invalid(e) => Err(e.clone()),
            Body::Released => Err(released(&self.location)),
        }
    }

    /// [`RawRecord::parse`], letting go of the record's bytes: a long record is then held
    /// once, as its text, while it is sketched, and (a JSON line) at most twice while it is
    /// parsed. Its fingerprint is to be taken before.
    pub fn parse_and_release(&mut self, fields: &FieldSpec) -> Result<Record, InputError> {
        match std::mem::replace(&mut self.body, Body::Released) {
            Body::Json(line) => jsonl::parse_owned(line, fields, &self.location),
            #[cfg(feature = "parquet")]
            Body::Parsed(record, _) => record,
            body => {
                self.body = body;
                let record = self.parse(fields);
                self.body = Body::Released;
                record
            }
        }
    }

    /// About how many bytes the record holds in memory.
    fn memory(&self) -> u64 {
        match &self.body {
            Body::Json(line) => line.len() as u64,
            Body::Csv(_, row) => row.as_slice().len() as u64,
            Body::File { bytes, .. } => bytes.len() as u64,
            #[cfg(feature = "parquet")]
            Body::Parsed(_, json) => 2 * json.bytes().len() as u64,
            Body::Invalid(_) | Body::Released => 0,
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
            #[cfg(feature = "parquet")]
            Body::Parsed(_, json) => field(json.bytes()),
            Body::Invalid(e) => field(e.to_string().as_bytes()),
            Body::Released => {}
        }
        hasher.digest()
    }

    /// A CSV or TSV record's header and row, as read.
    pub fn csv_row(&self) -> Option<(&[String], &csv::ByteRecord)> {
        match &self.body {
            Body::Csv(columns, row) => Some((columns.headers(), row)),
            _ => None,
        }
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
            #[cfg(feature = "parquet")]
            Body::Parsed(record, json) => record
                .as_ref()
                .map(|_| Cow::Borrowed(json.bytes()))
                .map_err(Clone::clone),
            Body::Invalid(e) => Err(e.clone()),
            Body::Released => Err(released(&self.location)),
        }
    }
}

/// The error for a record read after [`RawRecord::release`]: a bug of the reader's, named
/// rather than panicked on.
fn released(location: &Location) -> InputError {
    InputError {
        location: location.clone(),
        field: None,
        problem: "the record was read already and let go of".into(),
        hint: "report this: a reader asked for a record twice".into(),
    }
}

/// Whether `path` is a pipe, socket or device rather than a file or folder: it can be read
/// only once.
fn is_stream(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| {
        let t = m.file_type();
        t.is_fifo() || t.is_char_device() || t.is_socket()
    })
}

/// The bad record for one that runs past `limit` bytes, where reading stopped.
fn too_long(location: Location, limit: u64) -> InputError {
    InputError {
        location,
        field: None,
        problem: format!(
            "the record runs past {limit} bytes (--max-doc-bytes and room for its other \
             fields); it was not read further"
        ),
        hint: "raise --max-doc-bytes (`max_doc_bytes` in a pipeline's [input]), or pass \
               --skip-invalid to skip such records"
            .into(),
    }
}

/// Appends `bytes` to `record` unless that takes it past `limit`; returns whether it did. The
/// buffer grows by doubling, but never past `limit`: a record near the limit costs the limit,
/// not twice it.
fn push_capped(record: &mut Vec<u8>, bytes: &[u8], limit: u64) -> bool {
    let needed = record.len() as u64 + bytes.len() as u64;
    if needed > limit {
        return false;
    }
    if needed > record.capacity() as u64 {
        let grown = needed.max(2 * record.capacity() as u64).min(limit);
        record.reserve_exact(grown as usize - record.len());
    }
    record.extend_from_slice(bytes);
    true
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
    /// Where standard input or a pipe was copied to, kept while the input lives.
    _spool: Option<Arc<Spool>>,
}

/// A scratch folder holding a copy of a stream.
struct Spool(ScratchDir);

impl std::fmt::Debug for Spool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Spool({})", self.0.path().display())
    }
}

impl Input {
    /// An input whose format is `format`, or detected from the path. `-` is standard input;
    /// it, and any other stream (a pipe, `/dev/stdin`), is copied to a scratch file first, since
    /// a run reads its inputs twice (once to find duplicates, once to write what it keeps).
    pub fn new(path: impl Into<PathBuf>, format: Option<InputFormat>) -> Result<Self> {
        let path = path.into();
        if path.as_os_str() == "-" || is_stream(&path) {
            return Self::spooled(&path, format);
        }
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
        Ok(Input {
            path,
            format,
            _spool: None,
        })
    }

    /// Copies standard input (`-`) or the stream at `path` into a scratch file; its format is
    /// `format`, else the one its name tells, else JSONL.
    fn spooled(path: &Path, format: Option<InputFormat>) -> Result<Self> {
        let format = format
            .or_else(|| InputFormat::detect(path).ok())
            .unwrap_or(InputFormat::JSONL);
        if !format.reader().reads_a_stream() {
            return Err(Error::Usage(format!(
                "{}: a stream cannot be read as a {format}; save it to a file first",
                path.display()
            )));
        }
        let stdin = path.as_os_str() == "-";
        let scratch = ScratchDir::new()?;
        let copy = scratch.path().join(if stdin { "stdin" } else { "stream" });
        let mut file = std::fs::File::create(&copy).map_err(|e| Error::io(&copy, e))?;
        let copied = match stdin {
            true => std::io::copy(&mut std::io::stdin().lock(), &mut file),
            false => std::fs::File::open(path).and_then(|mut s| std::io::copy(&mut s, &mut file)),
        };
        copied.map_err(|e| Error::io(path, e))?;
        tracing::info!(input = %path.display(), bytes = file.metadata().map_or(0, |m| m.len()), "stream copied to a scratch file");
        Ok(Input {
            path: copy,
            format,
            _spool: Some(Arc::new(Spool(scratch))),
        })
    }

    /// The column names of an input whose format has a header row (CSV, TSV); `None` for
    /// other formats.
    pub fn header(&self) -> Result<Option<Vec<String>>> {
        self.format.reader().header(&self.path)
    }

    /// Opens the input for framing. A record (line, row, file) longer than `max_record_bytes`
    /// is read no further: it becomes a bad record (a fatal error in CSV, whose reader cannot
    /// skip the rest of a row).
    pub fn open(&self, fields: &FieldSpec, max_record_bytes: u64) -> Result<RawRecords> {
        self.open_range(fields, max_record_bytes, ByteRange::ALL)
    }

    /// [`Input::open`], for the records that start within `range` of this input's bytes
    /// (see [`ByteRange`]).
    pub fn open_range(
        &self,
        fields: &FieldSpec,
        max_record_bytes: u64,
        range: ByteRange,
    ) -> Result<RawRecords> {
        self.format
            .reader()
            .open_range(&self.path, fields, max_record_bytes, range)
    }

    /// The size in bytes that progress is measured against.
    pub fn size(&self) -> u64 {
        self.format.reader().size(&self.path)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// The records of `path` read with a limit of 100 bytes, as (line or entry, bad?).
    fn framed(path: &Path, fields: &FieldSpec) -> Vec<Result<(String, bool)>> {
        Input::new(path, None)
            .unwrap()
            .open(fields, 100)
            .unwrap()
            .map(|raw| {
                raw.map(|raw| {
                    let bad = matches!(&raw.body, Body::Invalid(e) if e.problem.contains("runs past 100 bytes"));
                    (raw.location.to_string(), bad)
                })
            })
            .collect()
    }

    #[test]
    fn a_record_over_the_limit_is_not_read_into_memory_and_the_next_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let long = "x".repeat(10_000);
        let fields = FieldSpec {
            id: "id".into(),
            text: vec!["text".into()],
        };

        let jsonl = dir.path().join("in.jsonl");
        std::fs::write(
            &jsonl,
            format!("{{\"id\":\"1\",\"text\":\"{long}\"}}\n{{\"id\":\"2\",\"text\":\"ok\"}}\n"),
        )
        .unwrap();
        let records: Vec<_> = framed(&jsonl, &fields)
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(records.len(), 2);
        assert!(
            records[0].1 && records[0].0.ends_with("in.jsonl:1"),
            "{records:?}"
        );
        assert!(!records[1].1, "{records:?}");

        let folder = dir.path().join("texts");
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(folder.join("a.txt"), &long).unwrap();
        std::fs::write(folder.join("b.txt"), "short").unwrap();
        let records: Vec<_> = framed(&folder, &fields)
            .into_iter()
            .map(|r| r.unwrap().1)
            .collect();
        assert_eq!(records, [true, false]);

        let zip_path = dir.path().join("in.zip");
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
        let options = zip::write::SimpleFileOptions::default();
        zip.start_file("a.txt", options).unwrap();
        zip.write_all(long.as_bytes()).unwrap();
        zip.start_file("b.txt", options).unwrap();
        zip.write_all(b"short").unwrap();
        zip.finish().unwrap();
        let records: Vec<_> = framed(&zip_path, &fields)
            .into_iter()
            .map(|r| r.unwrap().1)
            .collect();
        assert_eq!(records, [true, false]);

        // A CSV reader cannot skip the rest of a row: the row is a fatal error, named. (The
        // reader buffers 8 KB ahead, so the limit holds to within that.)
        let csv = dir.path().join("in.csv");
        let longer = "x".repeat(100_000);
        std::fs::write(&csv, format!("id,text\n1,short\n2,{longer}\n3,ok\n")).unwrap();
        let records = framed(&csv, &fields);
        assert!(records[0].is_ok());
        let err = records[1].as_ref().unwrap_err().to_string();
        assert!(
            err.contains("in.csv:3") && err.contains("runs past 100 bytes"),
            "{err}"
        );
    }
}
