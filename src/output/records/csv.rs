//! CSV and TSV: each row under the input's header, with the `csv` crate. The annotated copy
//! adds three columns after the input's.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{ANNOTATION_COLUMNS, Fate, RecordSink};
use crate::error::{Error, Location, Result};
use crate::io::{Dialect, RawRecord};

/// The error for an input at `path` whose columns `header` are not those of the input
/// `first` (`written`): one CSV or TSV file has one header.
pub fn other_columns(path: &Path, header: &[String], first: &Path, written: &[String]) -> Error {
    Error::input(
        Location::file(path),
        None,
        format!(
            "its columns ({}) are not those of {} ({}), and one CSV has one header",
            header.join(", "),
            first.display(),
            written.join(", ")
        ),
        "give inputs with the same columns, or pass --out-format jsonl",
    )
}

/// Writes rows of CSV or TSV inputs.
pub struct CsvSink<W: Write> {
    out: csv::Writer<W>,
    dialect: Dialect,
    path: PathBuf,
    /// The header written, and the input it came from: every input must share it.
    header: Option<(Vec<String>, PathBuf)>,
}

impl<W: Write> CsvSink<W> {
    /// A sink writing rows of `dialect` into `out`, named `path` in errors. TSV is written
    /// as read, without quotes.
    pub fn new(out: W, dialect: Dialect, path: &Path) -> Self {
        let quotes = match dialect {
            Dialect::Csv => csv::QuoteStyle::Necessary,
            Dialect::Tsv => csv::QuoteStyle::Never,
        };
        CsvSink {
            out: csv::WriterBuilder::new()
                .delimiter(dialect.delimiter())
                .quote_style(quotes)
                .flexible(true)
                .from_writer(out),
            dialect,
            path: path.to_owned(),
            header: None,
        }
    }

    fn failed(&self, e: csv::Error) -> Error {
        Error::io(&self.path, std::io::Error::other(e))
    }

    /// Writes the header before the first row, and refuses a row under another header.
    fn check_header(&mut self, raw: &RawRecord, header: &[String], annotated: bool) -> Result<()> {
        match &self.header {
            Some((written, first)) if written != header => {
                Err(other_columns(&raw.location.path, header, first, written))
            }
            Some(_) => Ok(()),
            None => {
                if annotated {
                    super::sink::check_not_annotated(
                        header.iter().map(String::as_str),
                        Location::line(&raw.location.path, 1),
                    )?;
                }
                let extra = if annotated {
                    &ANNOTATION_COLUMNS[..]
                } else {
                    &[]
                };
                self.out
                    .write_record(
                        header
                            .iter()
                            .map(String::as_str)
                            .chain(extra.iter().copied()),
                    )
                    .map_err(|e| self.failed(e))?;
                self.header = Some((header.to_vec(), raw.location.path.clone()));
                Ok(())
            }
        }
    }
}

impl<W: Write> RecordSink for CsvSink<W> {
    fn write(&mut self, raw: &RawRecord, fate: Option<&Fate>) -> Result<()> {
        let Some((header, row)) = raw.csv_row() else {
            return Err(Error::Usage(format!(
                "{}: only CSV and TSV records can be written as CSV; pass --out-format jsonl",
                raw.location
            )));
        };
        self.check_header(raw, header, fate.is_some())?;
        if self.dialect == Dialect::Tsv
            && let Some(column) = row
                .iter()
                .position(|cell| cell.iter().any(|b| matches!(b, b'\t' | b'\n' | b'\r')))
        {
            return Err(Error::input(
                raw.location.clone(),
                header.get(column).map(String::as_str),
                "the cell holds a tab or a line break, which TSV cannot hold",
                "pass --out-format csv (or jsonl)",
            ));
        }
        let written = match fate {
            None => self.out.write_byte_record(row),
            Some(fate) => {
                let cells = fate.cells();
                self.out
                    .write_record(row.iter().chain(cells.iter().map(|c| c.as_bytes())))
            }
        };
        written.map_err(|e| self.failed(e))
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        self.out.flush().map_err(|e| Error::io(&self.path, e))
    }
}
