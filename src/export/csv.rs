//! CSV and TSV: each row under the input's header, with the `csv` crate. The annotated copy
//! adds three columns after the input's.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::{ANNOTATION_COLUMNS, Fate, RecordSink};
use crate::error::{Error, Location, Result};
use crate::io::RawRecord;

/// Writes rows of CSV or TSV inputs.
pub struct CsvSink<W: Write> {
    out: csv::Writer<W>,
    path: PathBuf,
    /// The header written, and the input it came from: every input must share it.
    header: Option<(Vec<String>, PathBuf)>,
}

impl<W: Write> CsvSink<W> {
    /// A sink writing rows separated by `delimiter` into `out`, named `path` in errors.
    pub fn new(out: W, delimiter: u8, path: &Path) -> Self {
        CsvSink {
            out: csv::WriterBuilder::new()
                .delimiter(delimiter)
                .flexible(true)
                .from_writer(out),
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
            Some((written, first)) if written != header => Err(Error::input(
                Location::file(&raw.location.path),
                None,
                format!(
                    "its columns ({}) are not those of {} ({}), and one CSV has one header",
                    header.join(", "),
                    first.display(),
                    written.join(", ")
                ),
                "give inputs with the same columns, or pass --out-format jsonl",
            )),
            Some(_) => Ok(()),
            None => {
                if annotated
                    && let Some(taken) = ANNOTATION_COLUMNS
                        .iter()
                        .find(|c| header.iter().any(|h| h == *c))
                {
                    return Err(Error::input(
                        Location::line(&raw.location.path, 1),
                        Some(taken),
                        "the input already has this column (is it an annotated copy?)",
                        "deduplicate the original input, or rename its neardup_* columns",
                    ));
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
