//! What every format of the records written back is given and implements: a record's fate
//! and the annotation columns that carry it ([`Fate`]), the file it goes to ([`Destination`]),
//! a whole format's writer ([`RecordsWriter`]) and a line format's sink ([`RecordSink`]).

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::io::{Corpus, Input, RawRecord, ReadOptions};

/// The annotated copy's column (or key) holding the record's group number (as in
/// `groups.jsonl`), empty for a record in no group.
pub const GROUP_COLUMN: &str = "neardup_group";
/// The annotated copy's column: `true` when the record is in `unique.*`.
pub const KEEP_COLUMN: &str = "neardup_keep";
/// The annotated copy's column: the id of the record kept in this record's place, empty when it
/// is kept itself.
pub const DUPLICATE_OF_COLUMN: &str = "neardup_duplicate_of";
/// The three, in the order they are added.
pub const ANNOTATION_COLUMNS: [&str; 3] = [GROUP_COLUMN, KEEP_COLUMN, DUPLICATE_OF_COLUMN];

/// Refuses an input whose `columns` (read at `location`) already hold an annotation column,
/// which the annotated copy would write twice.
pub(super) fn check_not_annotated<'c>(
    columns: impl IntoIterator<Item = &'c str>,
    location: crate::error::Location,
) -> Result<()> {
    match columns.into_iter().find(|c| ANNOTATION_COLUMNS.contains(c)) {
        Some(taken) => Err(Error::input(
            location,
            Some(taken),
            "the input already has this column (is it an annotated copy?)",
            "deduplicate the original input, or rename its neardup_* columns",
        )),
        None => Ok(()),
    }
}

/// What became of one document.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fate<'a> {
    /// Its group's number, if it is in one.
    pub group: Option<usize>,
    /// Whether it is kept (in `unique.*`).
    pub kept: bool,
    /// The id of the member kept in its place, if it is not kept.
    pub duplicate_of: Option<&'a str>,
}

impl Fate<'_> {
    /// The annotation's three cells, as text (CSV).
    pub(super) fn cells(&self) -> [String; 3] {
        [
            self.group.map_or(String::new(), |g| g.to_string()),
            self.kept.to_string(),
            self.duplicate_of.unwrap_or_default().to_owned(),
        ]
    }
}

/// A file being written, with its name for errors.
pub struct Destination<'w> {
    /// Where the bytes go.
    pub out: &'w mut (dyn Write + Send),
    /// The file's name.
    pub path: &'w Path,
}

/// Copies the inputs' records, each with its fate, in one format: the records kept into
/// `unique.*`, and every document's record with its annotation into `annotated.*`.
pub trait RecordsWriter {
    /// Writes `unique` and, if given, `annotated`. `fate` gives a document's fate by its number
    /// in `corpus`; records read as no document (skipped as invalid) are in neither file.
    /// Returns how many records were kept.
    fn write<'a>(
        &self,
        inputs: &[Input],
        read: &ReadOptions,
        corpus: &Corpus,
        fate: &(dyn Fn(u32) -> Fate<'a> + Sync),
        unique: Destination<'_>,
        annotated: Option<Destination<'_>>,
    ) -> Result<usize>;
}

/// Writes records of one format into one file.
pub trait RecordSink {
    /// Writes `raw`: as read, or with its annotation when `fate` is given.
    fn write(&mut self, raw: &RawRecord, fate: Option<&Fate>) -> Result<()>;

    /// Writes what is buffered; the file is complete after this.
    fn finish(self: Box<Self>) -> Result<()>;
}
