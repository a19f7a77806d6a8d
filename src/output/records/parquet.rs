//! Parquet: the input's rows copied with their schema, every Arrow type as it was, in batches
//! of rows (memory per batch). The annotated copy adds three columns: `neardup_group`
//! (unsigned, null for a record in no group), `neardup_keep` (boolean) and
//! `neardup_duplicate_of` (string, null when kept).

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{ArrowRowGroupWriterFactory, compute_leaves};
use parquet::file::writer::SerializedFileWriter;

use super::{DUPLICATE_OF_COLUMN, Destination, Fate, GROUP_COLUMN, KEEP_COLUMN, RecordsWriter};
use crate::error::{Error, Location, Result};
use crate::io::parquet::batches;
use crate::io::{Corpus, Input, ReadOptions};

/// [`RecordsWriter`] for Parquet: the input's rows copied in slices, with their schema.
pub struct ParquetRows;

impl RecordsWriter for ParquetRows {
    fn write<'a>(
        &self,
        inputs: &[Input],
        _: &ReadOptions,
        corpus: &Corpus,
        fate: &(dyn Fn(u32) -> Fate<'a> + Sync),
        unique: Destination<'_>,
        annotated: Option<Destination<'_>>,
    ) -> Result<usize> {
        // A row's position among all rows read is a document's ordinal, if it is one.
        let ordinals = &corpus.ordinals;
        let fate_of_row = |row: u64| {
            ordinals
                .binary_search(&row)
                .ok()
                .map(|doc| fate(doc as u32))
        };
        let (rows, kept) = export(inputs, fate_of_row, unique.out, annotated.map(|a| a.out))?;
        if ordinals.last().is_some_and(|&last| last >= rows) {
            return Err(crate::io::inputs_shortened(inputs));
        }
        Ok(kept)
    }
}

/// Copies the rows of `inputs` (Parquet files sharing one schema): those `fate` keeps into
/// `unique`, and every row read as a document, annotated, into `annotated`. `fate` gets a
/// row's position among all rows read; returns the rows read and the rows kept.
pub fn export<'a, U: Write + Send, A: Write + Send>(
    inputs: &[Input],
    fate: impl Fn(u64) -> Option<Fate<'a>>,
    unique: U,
    annotated: Option<A>,
) -> Result<(u64, usize)> {
    let mut unique = Writer::new(unique);
    let mut annotated = annotated.map(Writer::new);
    // The first input's schema, the annotated copy's (made once, if one is written), and
    // that input.
    let mut first_schema: Option<(SchemaRef, Option<SchemaRef>, &Input)> = None;
    let mut ordinal = 0u64;
    let mut kept = 0;
    for input in inputs {
        let path = &input.path;
        let mut reader = batches(path)?;
        let schema = reader.schema().clone();
        match &first_schema {
            None => {
                let annotated_schema = annotated
                    .is_some()
                    .then(|| annotated_schema(&schema, path))
                    .transpose()?;
                first_schema = Some((schema.clone(), annotated_schema, input));
            }
            Some((first, _, first_input)) if first.fields() != schema.fields() => {
                return Err(Error::input(
                    Location::file(path),
                    None,
                    format!(
                        "its columns differ from those of {}, and one Parquet file has one schema",
                        first_input.path.display()
                    ),
                    "give inputs with the same columns, or pass --out-format jsonl",
                ));
            }
            Some(_) => {}
        }
        let (schema, annotated_schema, _) = first_schema.as_ref().expect("set above");
        // A row with a cell that is not UTF-8 is no document: its fate is none.
        while let Some(batch) = reader.next_batch() {
            let batch = batch?.rows;
            let fates: Vec<Option<Fate>> = (0..batch.num_rows() as u64)
                .map(|row| fate(ordinal + row))
                .collect();
            let keep: BooleanArray = fates
                .iter()
                .map(|f| Some(f.is_some_and(|f| f.kept)))
                .collect();
            kept += keep.true_count();
            unique.write(schema, &filter(&batch, &keep, path)?, path)?;
            if let (Some(annotated), Some(annotated_schema)) = (&mut annotated, annotated_schema) {
                let read: BooleanArray = fates.iter().map(|f| Some(f.is_some())).collect();
                let fates: Vec<Fate> = fates.into_iter().flatten().collect();
                let mut columns = filter(&batch, &read, path)?.columns().to_vec();
                columns.extend(annotation(&fates));
                let rows = RecordBatch::try_new(annotated_schema.clone(), columns)
                    .map_err(|e| Error::io(path, std::io::Error::other(e)))?;
                annotated.write(annotated_schema, &rows, path)?;
            }
            ordinal += batch.num_rows() as u64;
        }
    }
    let path = inputs.first().map_or(Path::new("-"), |i| i.path.as_path());
    let (schema, annotated_schema) = first_schema
        .map(|(schema, annotated, _)| (schema, annotated))
        .unzip();
    let annotated_schema = annotated_schema.flatten();
    unique.finish(schema, path)?;
    if let Some(annotated) = annotated {
        annotated.finish(annotated_schema, path)?;
    }
    Ok((ordinal, kept))
}

/// The rows of `batch` where `mask` is true: the batch itself where it is true throughout
/// (a copy of a long record is memory it need not take).
fn filter(batch: &RecordBatch, mask: &BooleanArray, path: &Path) -> Result<RecordBatch> {
    if mask.true_count() == batch.num_rows() {
        return Ok(batch.clone());
    }
    arrow_select::filter::filter_record_batch(batch, mask)
        .map_err(|e| Error::io(path, std::io::Error::other(e)))
}

/// The input's schema with the three annotation columns after its own.
fn annotated_schema(schema: &SchemaRef, path: &Path) -> Result<SchemaRef> {
    super::sink::check_not_annotated(
        schema.fields().iter().map(|f| f.name().as_str()),
        Location::file(path),
    )?;
    let mut fields: Vec<Arc<Field>> = schema.fields().iter().cloned().collect();
    fields.extend([
        Arc::new(Field::new(GROUP_COLUMN, DataType::UInt64, true)),
        Arc::new(Field::new(KEEP_COLUMN, DataType::Boolean, false)),
        Arc::new(Field::new(DUPLICATE_OF_COLUMN, DataType::Utf8, true)),
    ]);
    Ok(Arc::new(Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    )))
}

/// The three annotation columns of `fates`.
fn annotation(fates: &[Fate]) -> [ArrayRef; 3] {
    [
        Arc::new(
            fates
                .iter()
                .map(|f| f.group.map(|g| g as u64))
                .collect::<UInt64Array>(),
        ),
        Arc::new(fates.iter().map(|f| Some(f.kept)).collect::<BooleanArray>()),
        Arc::new(
            fates
                .iter()
                .map(|f| f.duplicate_of)
                .collect::<StringArray>(),
        ),
    ]
}

/// Bytes of rows a row group gathers at most before it is written: the writer holds a row
/// group in memory until then, and a million rows of abstracts are gigabytes.
const ROW_GROUP_BYTES: usize = 128 << 20;
/// Rows a row group holds at most (Arrow's writer's default).
const ROW_GROUP_ROWS: usize = 1024 * 1024;

/// A Parquet file being written: it starts with the first batch. Rows are gathered into row
/// groups, and each column is encoded by Arrow's writer, but a dictionary of strings, which is
/// written with the dictionary it was read with ([`super::dictionary`]).
struct Writer<W: Write + Send> {
    out: Option<W>,
    file: Option<OpenFile<W>>,
    /// The rows of the row group being gathered, and their bytes in memory.
    gathered: Vec<RecordBatch>,
    gathered_bytes: usize,
}

/// A Parquet file open for row groups.
struct OpenFile<W: Write + Send> {
    writer: SerializedFileWriter<W>,
    columns: ArrowRowGroupWriterFactory,
    schema: SchemaRef,
    row_groups: usize,
}

impl<W: Write + Send> Writer<W> {
    fn new(out: W) -> Self {
        Writer {
            out: Some(out),
            file: None,
            gathered: Vec::new(),
            gathered_bytes: 0,
        }
    }

    fn write(&mut self, schema: &SchemaRef, batch: &RecordBatch, path: &Path) -> Result<()> {
        let failed = |e: parquet::errors::ParquetError| Error::io(path, std::io::Error::other(e));
        if let Some(out) = self.out.take() {
            let arrow = ArrowWriter::try_new(out, schema.clone(), None).map_err(failed)?;
            let (writer, columns) = arrow.into_serialized_writer().map_err(failed)?;
            self.file = Some(OpenFile {
                writer,
                columns,
                schema: schema.clone(),
                row_groups: 0,
            });
        }
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.gathered.push(batch.clone());
        self.gathered_bytes += batch.get_array_memory_size();
        let rows: usize = self.gathered.iter().map(RecordBatch::num_rows).sum();
        if self.gathered_bytes > ROW_GROUP_BYTES || rows >= ROW_GROUP_ROWS {
            self.write_row_group().map_err(failed)?;
        }
        Ok(())
    }

    /// Writes the rows gathered as a row group.
    fn write_row_group(&mut self) -> parquet::errors::Result<()> {
        let gathered = std::mem::take(&mut self.gathered);
        self.gathered_bytes = 0;
        let Some(file) = &mut self.file else {
            return Ok(());
        };
        if gathered.is_empty() {
            return Ok(());
        }
        let leaves = file.writer.schema_descr().columns().to_vec();
        let mut encoders = file
            .columns
            .create_column_writers(file.row_groups)?
            .into_iter();
        let mut row_group = file.writer.next_row_group()?;
        let mut leaf = 0;
        for (place, field) in file.schema.fields().iter().enumerate() {
            let arrays: Vec<ArrayRef> = gathered.iter().map(|b| b.column(place).clone()).collect();
            if super::dictionary::is_dictionary_of_strings(field.data_type()) {
                // Arrow's encoder for this column is not used.
                encoders.next();
                let (bytes, close) =
                    super::dictionary::column_chunk(leaves[leaf].clone(), &arrays)?;
                row_group.append_column(&bytes, close)?;
                leaf += 1;
                continue;
            }
            let count = compute_leaves(field, &arrays[0])?.len();
            let mut own: Vec<_> = encoders.by_ref().take(count).collect();
            for array in &arrays {
                for (encoder, column) in own.iter_mut().zip(compute_leaves(field, array)?) {
                    encoder.write(&column)?;
                }
            }
            for encoder in own {
                encoder.close()?.append_to_row_group(&mut row_group)?;
            }
            leaf += count;
        }
        row_group.close()?;
        file.row_groups += 1;
        Ok(())
    }

    /// Writes the footer; a file with no rows at all gets one with the schema (or none, with
    /// no input at all).
    fn finish(mut self, schema: Option<SchemaRef>, path: &Path) -> Result<()> {
        let failed = |e: parquet::errors::ParquetError| Error::io(path, std::io::Error::other(e));
        if self.out.is_some() {
            let schema = schema.unwrap_or_else(|| Arc::new(Schema::empty()));
            self.write(&schema, &RecordBatch::new_empty(schema.clone()), path)?;
        }
        self.write_row_group().map_err(failed)?;
        match self.file {
            Some(file) => file.writer.close().map(drop).map_err(failed),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, Int64Array, LargeStringArray};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    #[test]
    fn rows_keep_their_schema_and_the_annotation_joins_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs.parquet");
        let input = RecordBatch::try_from_iter([
            (
                "core_id",
                Arc::new(StringArray::from(vec!["a", "b", "c", "d"])) as ArrayRef,
            ),
            (
                "processed_title",
                Arc::new(LargeStringArray::from(vec![
                    "gait training",
                    "gait training",
                    "bad row",
                    "haematology",
                ])),
            ),
            (
                "year",
                Arc::new(Int64Array::from(vec![2020, 2021, 2022, 2023])),
            ),
        ])
        .unwrap();
        let mut writer =
            ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), input.schema(), None)
                .unwrap();
        writer.write(&input).unwrap();
        writer.close().unwrap();
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
            let copy = dir.path().join("copy.parquet");
            std::fs::write(&copy, bytes).unwrap();
            let reader =
                ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(copy).unwrap())
                    .unwrap()
                    .build()
                    .unwrap();
            let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
            arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap()
        };
        let unique = read(unique);
        assert_eq!(
            unique.schema(),
            input.schema(),
            "the input's schema, unchanged"
        );
        assert_eq!(
            unique.column(0).as_ref(),
            &StringArray::from(vec!["b", "d"]) as &dyn Array
        );

        let annotated = read(annotated);
        assert_eq!(
            annotated.num_rows(),
            3,
            "the skipped row is in neither file"
        );
        assert_eq!(
            annotated.column_by_name("year").unwrap().as_ref(),
            &Int64Array::from(vec![2020, 2021, 2023]) as &dyn Array
        );
        assert_eq!(
            annotated.column_by_name(GROUP_COLUMN).unwrap().as_ref(),
            &UInt64Array::from(vec![Some(0), Some(0), None]) as &dyn Array
        );
        assert_eq!(
            annotated.column_by_name(KEEP_COLUMN).unwrap().as_ref(),
            &BooleanArray::from(vec![false, true, true]) as &dyn Array
        );
        assert_eq!(
            annotated
                .column_by_name(DUPLICATE_OF_COLUMN)
                .unwrap()
                .as_ref(),
            &StringArray::from(vec![Some("b"), None, None]) as &dyn Array
        );
    }
}

/// A column of categories keeps the dictionary it was read with: every value, in its order,
/// those no kept row uses too, across row groups and with nulls.
#[cfg(test)]
mod categories {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int32Type;
    use arrow_array::{Array, DictionaryArray, Int32Array};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::file::properties::WriterProperties;

    fn categories(keys: Vec<Option<i32>>, values: &[&str]) -> ArrayRef {
        let values = Arc::new(StringArray::from(values.to_vec()));
        Arc::new(DictionaryArray::<Int32Type>::try_new(Int32Array::from(keys), values).unwrap())
    }

    #[test]
    fn a_column_of_categories_keeps_every_category_in_its_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("docs.parquet");
        let ids = Arc::new(StringArray::from(vec!["a", "b", "c", "d", "e", "f"])) as ArrayRef;
        // Six rows in two row groups of three, each with its own dictionary.
        let kinds = categories(
            vec![Some(2), Some(0), None, Some(1), Some(1), Some(0)],
            &["zeta", "alpha", "mu"],
        );
        let input = RecordBatch::try_from_iter([("core_id", ids), ("kind", kinds)]).unwrap();
        let properties = WriterProperties::builder()
            .set_max_row_group_row_count(Some(3))
            .build();
        let file = std::fs::File::create(&path).unwrap();
        let mut writer = ArrowWriter::try_new(file, input.schema(), Some(properties)).unwrap();
        writer.write(&input).unwrap();
        writer.close().unwrap();
        let inputs = [Input::new(&path, None).unwrap()];
        // Rows 1 (zeta), 2 (null) and 5 (zeta) kept: no row left uses mu or alpha.
        let fate = |row: u64| {
            Some(Fate {
                group: None,
                kept: [1, 2, 5].contains(&row),
                duplicate_of: None,
            })
        };
        let mut unique = Vec::new();
        export(&inputs, fate, &mut unique, None::<Vec<u8>>).unwrap();
        let copy = dir.path().join("unique.parquet");
        std::fs::write(&copy, unique).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(copy).unwrap())
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        assert_eq!(batches.len(), 1);
        let kind = batches[0]
            .column_by_name("kind")
            .unwrap()
            .as_any_dictionary();
        assert_eq!(
            kind.values().as_ref(),
            &StringArray::from(vec!["mu", "zeta", "alpha"]) as &dyn Array,
            "the dictionaries of both row groups as written ([mu, zeta] and [alpha, zeta]), each \
             value once, none left out"
        );
        let rows: Vec<Option<&str>> = (0..3)
            .map(|row| {
                (!kind.is_null(row)).then(|| {
                    kind.values()
                        .as_string::<i32>()
                        .value(kind.normalized_keys()[row])
                })
            })
            .collect();
        assert_eq!(rows, [Some("zeta"), None, Some("zeta")]);
    }
}

/// Random Arrow schemas (nulls, nesting) written to Parquet: every column a run does not read
/// comes back in `unique.parquet` as it was written.
#[cfg(test)]
mod random_schemas {
    use super::*;
    use crate::io::{FieldSpec, ReadOptions};
    use arrow_array::builder::StringDictionaryBuilder;
    use arrow_array::types::Int32Type;
    use arrow_array::*;
    use arrow_schema::Fields;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use proptest::prelude::*;
    use rand::{Rng, RngExt, SeedableRng};

    /// `value` where `valid` says row `i` has one.
    fn some<T>(valid: &[bool], i: usize, value: T) -> Option<T> {
        valid[i].then_some(value)
    }

    /// A column of `rows` values of a type drawn by `rng` (nested while `depth` allows), about
    /// a fifth of them null.
    fn column(rng: &mut impl Rng, rows: usize, depth: u32) -> (DataType, ArrayRef) {
        let kinds = if depth < 2 { 19 } else { 17 };
        let valid: Vec<bool> = (0..rows).map(|_| rng.random_range(0..5) > 0).collect();
        let words = ["alpha", "beta", "", "ü", "x y"];
        let array: ArrayRef = match rng.random_range(0..kinds) {
            0 => Arc::new(
                (0..rows)
                    .map(|i| some(&valid, i, i as i8))
                    .collect::<Int8Array>(),
            ),
            1 => Arc::new(
                (0..rows)
                    .map(|i| some(&valid, i, -(i as i16)))
                    .collect::<Int16Array>(),
            ),
            2 => Arc::new(
                (0..rows)
                    .map(|i| some(&valid, i, i as i64 * 7))
                    .collect::<Int64Array>(),
            ),
            3 => Arc::new(
                (0..rows)
                    .map(|i| some(&valid, i, i as u8))
                    .collect::<UInt8Array>(),
            ),
            4 => Arc::new(
                (0..rows)
                    .map(|i| some(&valid, i, i as f64 / 3.0))
                    .collect::<Float64Array>(),
            ),
            5 => Arc::new(
                (0..rows)
                    .map(|i| some(&valid, i, i % 2 == 0))
                    .collect::<BooleanArray>(),
            ),
            6 => Arc::new(
                (0..rows)
                    .map(|i| some(&valid, i, words[i % 5]))
                    .collect::<StringArray>(),
            ),
            7 => Arc::new(
                (0..rows)
                    .map(|i| some(&valid, i, words[i % 5]))
                    .collect::<LargeStringArray>(),
            ),
            8 => Arc::new(
                (0..rows)
                    .map(|i| some(&valid, i, words[i % 5]))
                    .collect::<StringViewArray>(),
            ),
            9 => Arc::new(BinaryArray::from_opt_vec(
                (0..rows)
                    .map(|i| some(&valid, i, &b"\xff\x00b"[..i % 3]))
                    .collect(),
            )),
            10 => Arc::new(
                (0..rows)
                    .map(|i| some(&valid, i, i as i32))
                    .collect::<Date32Array>(),
            ),
            11 => Arc::new(
                (0..rows)
                    .map(|i| some(&valid, i, i as i64 * 1_000_000))
                    .collect::<TimestampMicrosecondArray>()
                    .with_timezone("Europe/Paris"),
            ),
            12 => Arc::new(
                (0..rows)
                    .map(|i| some(&valid, i, i as i64 * 1000))
                    .collect::<Time64MicrosecondArray>(),
            ),
            13 => Arc::new(
                (0..rows)
                    .map(|i| some(&valid, i, i as i64))
                    .collect::<DurationMillisecondArray>(),
            ),
            14 => Arc::new(
                (0..rows)
                    .map(|i| some(&valid, i, i as i128 * 125))
                    .collect::<Decimal128Array>()
                    .with_precision_and_scale(10, 2)
                    .unwrap(),
            ),
            15 => {
                let mut dictionary = StringDictionaryBuilder::<Int32Type>::new();
                for i in 0..rows {
                    dictionary.append_option(some(&valid, i, words[i % 3]));
                }
                Arc::new(dictionary.finish())
            }
            16 => Arc::new(NullArray::new(rows)),
            17 => {
                let lengths: Vec<usize> = (0..rows).map(|_| rng.random_range(0..3)).collect();
                let (item, values) = column(rng, lengths.iter().sum(), depth + 1);
                let field = Arc::new(Field::new("item", item, true));
                Arc::new(
                    ListArray::try_new(
                        field,
                        arrow_buffer::OffsetBuffer::from_lengths(lengths),
                        values,
                        Some(valid.clone().into()),
                    )
                    .unwrap(),
                )
            }
            _ => {
                let (a, first) = column(rng, rows, depth + 1);
                let (b, second) = column(rng, rows, depth + 1);
                let fields = Fields::from(vec![Field::new("a", a, true), Field::new("b", b, true)]);
                Arc::new(
                    StructArray::try_new(fields, vec![first, second], Some(valid.into())).unwrap(),
                )
            }
        };
        (array.data_type().clone(), array)
    }

    proptest! {
        #[test]
        fn unread_columns_of_any_type_pass_through(seed in any::<u64>(), rows in 1usize..40) {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut columns: Vec<(String, ArrayRef)> = vec![
                ("id".into(), Arc::new((0..rows).map(|i| Some(format!("r{i}"))).collect::<StringArray>())),
                ("text".into(), Arc::new((0..rows).map(|i| Some(format!("words of row {}", i % 4))).collect::<StringArray>())),
            ];
            for c in 0..rng.random_range(1..4) {
                columns.push((format!("c{c}"), column(&mut rng, rows, 0).1));
            }
            let input = RecordBatch::try_from_iter_with_nullable(
                columns.into_iter().map(|(name, array)| (name, array, true)),
            )
            .unwrap();
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("in.parquet");
            let mut writer = ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), input.schema(), None).unwrap();
            writer.write(&input).unwrap();
            writer.close().unwrap();

            // Every row reads as a record.
            let inputs = [Input::new(&path, None).unwrap()];
            let read = ReadOptions {
                fields: FieldSpec { id: "id".into(), text: vec!["text".into()] },
                skip_invalid: false,
                max_doc_bytes: crate::io::DEFAULT_MAX_DOC_BYTES,
            };
            let records: Vec<_> = inputs[0].open(&read.fields, read.max_record_bytes()).unwrap().collect();
            prop_assert_eq!(records.len(), rows);
            for raw in &records {
                let raw = raw.as_ref().unwrap();
                prop_assert!(raw.parse(&read.fields).is_ok(), "{:?}", raw.location);
            }

            // Every other row kept: the same rows, the same schema.
            let fate = |row: u64| Some(Fate { group: None, kept: row % 2 == 0, duplicate_of: None });
            let mut unique = Vec::new();
            export(&inputs, fate, &mut unique, None::<Vec<u8>>).unwrap();
            let copy = dir.path().join("unique.parquet");
            std::fs::write(&copy, unique).unwrap();
            let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&copy).unwrap()).unwrap();
            prop_assert_eq!(reader.schema(), &input.schema());
            let batches: Vec<RecordBatch> = reader.build().unwrap().map(|b| b.unwrap()).collect();
            let kept = arrow_select::concat::concat_batches(&input.schema(), &batches).unwrap();
            let mask: BooleanArray = (0..rows).map(|i| Some(i % 2 == 0)).collect();
            prop_assert_eq!(kept, arrow_select::filter::filter_record_batch(&input, &mask).unwrap());
        }
    }
}
