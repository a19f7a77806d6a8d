//! Input records written back out: the records a run keeps (`unique.*`) and an annotated copy
//! of the input (`annotated.*`) in which every record carries its group, whether it is kept and
//! which record it duplicates, so that the results join back to the data.
//!
//! Records go out in the input's own format where they can: a JSONL line as read (an annotated
//! line gains three keys at the end of its object), a CSV or TSV row under its header (three
//! more columns), a Parquet row with its schema. Folders and zips of text files come out as
//! JSONL (`id`, `text`). Each format is one file here, behind [`RecordsWriter`], which copies
//! the inputs with every record's fate: the line formats record by record through a
//! [`RecordSink`] each, Parquet in slices of rows with their schema.
//!
//! Records skipped as invalid (`--skip-invalid`) are in neither file; `summary.json` counts them.

mod csv;
#[cfg(feature = "parquet")]
mod dictionary;
mod jsonl;
#[cfg(feature = "parquet")]
pub mod parquet;
mod sink;

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::io::{Corpus, Dialect, FieldSpec, Input, InputFormat, ReadOptions};

pub use self::csv::CsvSink;
pub use self::jsonl::JsonlSink;
pub use self::sink::{
    ANNOTATION_COLUMNS, DUPLICATE_OF_COLUMN, Destination, Fate, GROUP_COLUMN, KEEP_COLUMN,
    RecordSink, RecordsWriter,
};

/// The formats records are written in.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    /// One JSON object a line.
    Jsonl,
    /// Comma-separated values under the input's header (CSV or TSV inputs).
    Csv,
    /// Tab-separated values under the input's header (CSV or TSV inputs).
    Tsv,
    /// Apache Parquet with the input's schema (Parquet inputs).
    Parquet,
}

impl OutputFormat {
    /// Every format.
    pub const ALL: [OutputFormat; 4] = [
        OutputFormat::Jsonl,
        OutputFormat::Csv,
        OutputFormat::Tsv,
        OutputFormat::Parquet,
    ];

    /// The inputs' own format: theirs when they share one, JSONL otherwise (and for folders
    /// and zips of text files).
    pub fn of_inputs(inputs: &[Input]) -> OutputFormat {
        let mut formats = inputs.iter().map(|i| OutputFormat::written_as(i.format));
        let first = formats.next().unwrap_or(OutputFormat::Jsonl);
        if formats.all(|f| f == first) {
            first
        } else {
            OutputFormat::Jsonl
        }
    }

    /// Refuses a format the inputs cannot be written in: CSV and TSV take their columns from a
    /// CSV or TSV input's header, Parquet its schema from a Parquet input.
    pub fn check(self, inputs: &[Input]) -> Result<()> {
        let (fits, needs): (fn(OutputFormat) -> bool, &str) = match self {
            OutputFormat::Jsonl => return Ok(()),
            OutputFormat::Csv | OutputFormat::Tsv => (
                |f| matches!(f, OutputFormat::Csv | OutputFormat::Tsv),
                "CSV or TSV inputs (the columns come from their header)",
            ),
            OutputFormat::Parquet => (
                |f| f == OutputFormat::Parquet,
                "Parquet inputs (the schema comes from them)",
            ),
        };
        let misfit = inputs
            .iter()
            .find(|i| !fits(OutputFormat::written_as(i.format)));
        if let Some(input) = misfit {
            return Err(Error::Usage(format!(
                "--out-format {} needs {needs}, and {} is {}; use --out-format jsonl",
                self.name(),
                input.path.display(),
                input.format
            )));
        }
        // Rows under one header: inputs with other columns are refused now, not once the
        // whole job is done and the copies are being written.
        if matches!(self, OutputFormat::Csv | OutputFormat::Tsv) && inputs.len() > 1 {
            let first = &inputs[0];
            let written = first.header()?.unwrap_or_default();
            for input in &inputs[1..] {
                let header = input.header()?.unwrap_or_default();
                if header != written {
                    return Err(self::csv::other_columns(
                        &input.path,
                        &header,
                        &first.path,
                        &written,
                    ));
                }
            }
        }
        Ok(())
    }

    /// The name of the kept records' file.
    pub fn unique_file(self) -> &'static str {
        match self {
            OutputFormat::Jsonl => "unique.jsonl",
            OutputFormat::Csv => "unique.csv",
            OutputFormat::Tsv => "unique.tsv",
            OutputFormat::Parquet => "unique.parquet",
        }
    }

    /// The name of the annotated copy.
    pub fn annotated_file(self) -> &'static str {
        match self {
            OutputFormat::Jsonl => "annotated.jsonl",
            OutputFormat::Csv => "annotated.csv",
            OutputFormat::Tsv => "annotated.tsv",
            OutputFormat::Parquet => "annotated.parquet",
        }
    }

    /// The format records of the input format `format` go back out in, unless asked otherwise
    /// ([`Format::written_as`](crate::io::Format::written_as)).
    fn written_as(format: InputFormat) -> OutputFormat {
        let name = format.reader().written_as();
        OutputFormat::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .expect("every input format goes back out in an output format")
    }

    fn name(self) -> &'static str {
        match self {
            OutputFormat::Jsonl => "jsonl",
            OutputFormat::Csv => "csv",
            OutputFormat::Tsv => "tsv",
            OutputFormat::Parquet => "parquet",
        }
    }
}

/// The writer of `format`.
pub fn writer(format: OutputFormat) -> Box<dyn RecordsWriter> {
    match format {
        OutputFormat::Jsonl => Box::new(Lines(LineFormat::Jsonl)),
        OutputFormat::Csv => Box::new(Lines(LineFormat::Csv)),
        OutputFormat::Tsv => Box::new(Lines(LineFormat::Tsv)),
        #[cfg(feature = "parquet")]
        OutputFormat::Parquet => Box::new(parquet::ParquetRows),
        #[cfg(not(feature = "parquet"))]
        OutputFormat::Parquet => Box::new(NoParquet),
    }
}

/// The formats written a record at a time.
#[derive(Clone, Copy)]
enum LineFormat {
    Jsonl,
    Csv,
    Tsv,
}

/// [`RecordsWriter`] for the line formats: the records read again, and each written through
/// its format's [`RecordSink`].
struct Lines(LineFormat);

impl Lines {
    /// A sink writing into `out` (named `path` in errors); `fields` names a text file's id and
    /// text.
    fn sink<'w>(
        &self,
        out: impl Write + Send + 'w,
        path: &Path,
        fields: &FieldSpec,
    ) -> Box<dyn RecordSink + Send + 'w> {
        match self.0 {
            LineFormat::Jsonl => Box::new(JsonlSink::new(out, path, fields)),
            LineFormat::Csv => Box::new(CsvSink::new(out, Dialect::Csv, path)),
            LineFormat::Tsv => Box::new(CsvSink::new(out, Dialect::Tsv, path)),
        }
    }
}

impl RecordsWriter for Lines {
    fn write<'a>(
        &self,
        inputs: &[Input],
        read: &ReadOptions,
        corpus: &Corpus,
        fate: &(dyn Fn(u32) -> Fate<'a> + Sync),
        unique: Destination<'_>,
        annotated: Option<Destination<'_>>,
    ) -> Result<usize> {
        let mut unique = self.sink(unique.out, unique.path, &read.fields);
        let mut annotated = annotated.map(|a| self.sink(a.out, a.path, &read.fields));
        let mut written = 0;
        crate::io::for_each_document(inputs, read, corpus, "writing", |records| {
            // The two files on two cores: copying gigabytes of records is most of the
            // writing at a million documents.
            let (kept, annotating) = rayon::join(
                || -> Result<usize> {
                    let mut kept = 0;
                    for (raw, doc) in &records {
                        if fate(*doc).kept {
                            unique.write(raw, None)?;
                            kept += 1;
                        }
                    }
                    Ok(kept)
                },
                || -> Result<()> {
                    if let Some(annotated) = &mut annotated {
                        for (raw, doc) in &records {
                            annotated.write(raw, Some(&fate(*doc)))?;
                        }
                    }
                    Ok(())
                },
            );
            written += kept?;
            annotating
        })?;
        unique.finish()?;
        if let Some(annotated) = annotated {
            annotated.finish()?;
        }
        Ok(written)
    }
}

/// Parquet output in a build without it.
#[cfg(not(feature = "parquet"))]
struct NoParquet;

#[cfg(not(feature = "parquet"))]
impl RecordsWriter for NoParquet {
    fn write<'a>(
        &self,
        _: &[Input],
        _: &ReadOptions,
        _: &Corpus,
        _: &(dyn Fn(u32) -> Fate<'a> + Sync),
        _: Destination<'_>,
        _: Option<Destination<'_>>,
    ) -> Result<usize> {
        Err(Error::Usage(
            "this neardup was built without Parquet support; rebuild with `--features parquet`"
                .into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::FORMATS;

    #[test]
    fn every_input_format_goes_back_out_in_an_output_format() {
        for format in FORMATS {
            let input = InputFormat::named(format.name()).unwrap();
            let written = OutputFormat::written_as(input);
            assert_eq!(written.name(), format.written_as());
        }
        let jsonl = OutputFormat::written_as(InputFormat::JSONL);
        assert_eq!(jsonl, OutputFormat::Jsonl);
    }
}
