//! Parquet: the input's rows copied with their schema, in slices of rows (memory per slice).
//! The annotated copy adds three columns: `neardup_group` (unsigned, null for a record in no
//! group), `neardup_keep` (boolean) and `neardup_duplicate_of` (string, null when kept).

use std::fs::File;
use std::io::Write;

use polars::prelude::*;

use super::{DUPLICATE_OF_COLUMN, Fate, GROUP_COLUMN, KEEP_COLUMN};
use crate::error::{Error, Location, Result};
use crate::io::Input;

/// Rows copied at a time.
const SLICE: usize = 16_384;

/// Copies the rows of `inputs` (Parquet files sharing one schema): those `fate` keeps into
/// `unique`, and every row read as a document, annotated, into `annotated`. `fate` gets a
/// row's position among all rows read; returns the rows read and the rows kept.
pub fn export<'a, U: Write, A: Write>(
    inputs: &[Input],
    fate: impl Fn(u64) -> Option<Fate<'a>>,
    unique: U,
    annotated: Option<A>,
) -> Result<(u64, usize)> {
    let mut unique = Writer::new(unique);
    let mut annotated = annotated.map(Writer::new);
    let mut first_schema: Option<(SchemaRef, &Input)> = None;
    let mut ordinal = 0u64;
    let mut kept = 0;
    for input in inputs {
        let path = &input.path;
        let unreadable = |e: PolarsError| {
            Error::input(
                Location::file(path),
                None,
                format!("not a readable Parquet file: {e}"),
                "check that the file is complete Parquet",
            )
        };
        let open = || File::open(path).map_err(|e| Error::io(path, e));
        let stopped = |cause| crate::io::parquet_cannot_read(path, cause);
        let mut reader = ParquetReader::new(open()?);
        let rows = crate::foreign::catch(|| reader.num_rows())
            .map_err(stopped)?
            .map_err(unreadable)?;
        let mut next = 0;
        while next < rows {
            let reader = ParquetReader::new(open()?).with_slice(Some((next, SLICE)));
            let frame = crate::foreign::catch(|| reader.finish())
                .map_err(stopped)?
                .map_err(unreadable)?;
            match &first_schema {
                None => first_schema = Some((frame.schema().clone(), input)),
                Some((schema, first)) if schema != frame.schema() => {
                    return Err(Error::input(
                        Location::file(path),
                        None,
                        format!(
                            "its columns differ from those of {}, and one Parquet file has one schema",
                            first.path.display()
                        ),
                        "give inputs with the same columns, or pass --out-format jsonl",
                    ));
                }
                Some(_) => {}
            }
            let fates: Vec<Option<Fate>> = (0..frame.height() as u64)
                .map(|row| fate(ordinal + row))
                .collect();
            let keep: Vec<bool> = fates.iter().map(|f| f.is_some_and(|f| f.kept)).collect();
            kept += keep.iter().filter(|&&k| k).count();
            let polars = |e: PolarsError| Error::io(path, std::io::Error::other(e));
            let mask = BooleanChunked::new("keep".into(), &keep);
            unique.write(&frame.filter(&mask).map_err(polars)?, path)?;
            if let Some(annotated) = &mut annotated {
                let documents: Vec<bool> = fates.iter().map(Option::is_some).collect();
                let read = BooleanChunked::new("read".into(), &documents);
                let fates: Vec<Fate> = fates.into_iter().flatten().collect();
                let columns = [
                    Series::new(
                        GROUP_COLUMN.into(),
                        fates
                            .iter()
                            .map(|f| f.group.map(|g| g as u64))
                            .collect::<Vec<_>>(),
                    )
                    .into_column(),
                    Series::new(
                        KEEP_COLUMN.into(),
                        fates.iter().map(|f| f.kept).collect::<Vec<_>>(),
                    )
                    .into_column(),
                    Series::new(
                        DUPLICATE_OF_COLUMN.into(),
                        fates
                            .iter()
                            .map(|f| f.duplicate_of.map(str::to_owned))
                            .collect::<Vec<_>>(),
                    )
                    .into_column(),
                ];
                let frame = frame.filter(&read).map_err(polars)?;
                let frame = frame.hstack(&columns).map_err(|e| {
                    Error::input(
                        Location::file(path),
                        Some(GROUP_COLUMN),
                        format!("cannot add the annotation: {e}"),
                        "deduplicate the original input, or rename its neardup_* columns",
                    )
                })?;
                annotated.write(&frame, path)?;
            }
            next += frame.height().max(1);
            ordinal += frame.height() as u64;
        }
    }
    unique.finish(inputs)?;
    if let Some(annotated) = annotated {
        annotated.finish(inputs)?;
    }
    Ok((ordinal, kept))
}

/// A Parquet file being written: it starts once the first slice shows the schema.
struct Writer<W: Write> {
    out: Option<W>,
    batched: Option<Box<BatchedWriter<W>>>,
}

impl<W: Write> Writer<W> {
    fn new(out: W) -> Self {
        Writer {
            out: Some(out),
            batched: None,
        }
    }

    fn write(&mut self, frame: &DataFrame, path: &std::path::Path) -> Result<()> {
        let failed = |e: PolarsError| Error::io(path, std::io::Error::other(e));
        if let Some(out) = self.out.take() {
            let batched = ParquetWriter::new(out)
                .batched(frame.schema())
                .map_err(failed)?;
            self.batched = Some(Box::new(batched));
        }
        match &mut self.batched {
            Some(writer) => writer.write_batch(frame).map_err(failed),
            None => Ok(()),
        }
    }

    /// Writes the footer; a file with no rows at all gets an empty frame's.
    fn finish(mut self, inputs: &[Input]) -> Result<()> {
        let path = inputs
            .first()
            .map_or(std::path::Path::new("-"), |i| i.path.as_path());
        if self.out.is_some() {
            self.write(&DataFrame::empty(), path)?;
        }
        match self.batched {
            Some(writer) => writer
                .finish()
                .map(drop)
                .map_err(|e| Error::io(path, std::io::Error::other(e))),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_keep_their_schema_and_the_annotation_joins_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs.parquet");
        let mut frame = df!(
            "core_id" => ["a", "b", "c", "d"],
            "processed_title" => ["gait training", "gait training", "bad row", "haematology"],
            "year" => [2020i64, 2021, 2022, 2023],
        )
        .unwrap();
        ParquetWriter::new(File::create(&path).unwrap())
            .finish(&mut frame)
            .unwrap();
        let inputs = [Input::new(&path, None).unwrap()];
        // a and b are one group keeping b; c was skipped as invalid; d is alone.
        let fate = |row: u64| match row {
            0 => Some(Fate {
                group: Some(0),
                kept: false,
                duplicate_of: Some("b"),
            }),
            1 => Some(Fate {
                group: Some(0),
                kept: true,
                duplicate_of: None,
            }),
            3 => Some(Fate {
                group: None,
                kept: true,
                duplicate_of: None,
            }),
            _ => None,
        };
        let (mut unique, mut annotated) = (Vec::new(), Vec::new());
        let (rows, kept) = export(&inputs, fate, &mut unique, Some(&mut annotated)).unwrap();
        assert_eq!((rows, kept), (4, 2));

        let read = |bytes: Vec<u8>| {
            ParquetReader::new(std::io::Cursor::new(bytes))
                .finish()
                .unwrap()
        };
        let cells = |frame: &DataFrame, name: &str| -> Vec<AnyValue<'static>> {
            let column = frame.column(name).unwrap();
            (0..frame.height())
                .map(|i| column.get(i).unwrap().into_static())
                .collect()
        };
        let unique = read(unique);
        assert_eq!(
            unique.schema(),
            frame.schema(),
            "the input's schema, unchanged"
        );
        assert_eq!(
            cells(&unique, "core_id"),
            [
                AnyValue::from("b").into_static(),
                AnyValue::from("d").into_static()
            ]
        );

        let annotated = read(annotated);
        assert_eq!(annotated.height(), 3, "the skipped row is in neither file");
        assert_eq!(
            cells(&annotated, "year"),
            [
                AnyValue::Int64(2020),
                AnyValue::Int64(2021),
                AnyValue::Int64(2023)
            ]
        );
        assert_eq!(
            cells(&annotated, GROUP_COLUMN),
            [AnyValue::UInt64(0), AnyValue::UInt64(0), AnyValue::Null]
        );
        assert_eq!(
            cells(&annotated, KEEP_COLUMN),
            [
                AnyValue::Boolean(false),
                AnyValue::Boolean(true),
                AnyValue::Boolean(true)
            ]
        );
        let of = cells(&annotated, DUPLICATE_OF_COLUMN);
        assert_eq!(
            (of[0].get_str(), &of[1], &of[2]),
            (Some("b"), &AnyValue::Null, &AnyValue::Null)
        );
    }
}
