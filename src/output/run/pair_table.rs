//! `candidates.parquet`: a run's scored candidates as a Parquet table, about a tenth of their
//! JSON lines.
//!
//! One row a pair, in the order of `candidates.jsonl`, with its columns: `id_a` and `id_b`
//! (strings), then the scores under their names, in the order of their names as the JSON lines
//! have them: `cosine` (32-bit float, for methods that embed) and the method's score (64-bit
//! float). Every column is compressed with zstd.
//!
//! The ids are each row group's dictionary: the ids its rows use, once each and sorted, and
//! each row's index into them. Neardup encodes those two columns itself
//! ([`crate::output::dictionary_chunk`]): it knows each id's place among the sorted ids, so no
//! row's id is hashed, which was most of Arrow's writing time (9.5 of 14 s for 36 million
//! candidates). Arrow's writer encodes the scores, and the four columns of a row group are
//! encoded side by side.
//!
//! A row group holds [`ROW_GROUP_ROWS`] rows whatever the caller's slices, so that the bytes
//! depend on the rows alone: a run and the merge of its parts write the same file.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Float32Array, Float64Array, StringArray};
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::arrow_writer::{
    ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory, compute_leaves,
};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;
use rayon::prelude::*;

use super::pair_lines::{PairLine, PairSink, SortedIds, cosine_as_read};
use super::{PairRecord, RunFile, RunWriter};
use crate::error::{Error, Location, Result};
use crate::output::dictionary_chunk::{PageRows, dictionary_chunk};

/// Rows in a row group: each id column stores the ids its rows use once a group, and its rows
/// are held (20 bytes each) until the group is written.
const ROW_GROUP_ROWS: usize = 1 << 22;
/// Rows gathered from the caller on every core at a time.
const GATHER_ROWS: usize = 1 << 16;
/// The zstd level of every page (Arrow's writer's own default).
const ZSTD_LEVEL: i32 = 1;

/// A Parquet table of scored pairs being written ([`PairSink`]).
pub struct PairTable<'a> {
    writer: SerializedFileWriter<RunFile>,
    columns: ArrowRowGroupWriterFactory,
    schema: Arc<Schema>,
    ids: SortedIds<'a>,
    rows: Rows,
    /// Rows a row group holds: [`ROW_GROUP_ROWS`], fewer in tests.
    row_group_rows: usize,
    row_groups: usize,
    /// Each id's index in the dictionary of the row group being written, by its place
    /// (`u32::MAX` where the group does not use it).
    slot: Vec<u32>,
    path: std::path::PathBuf,
}

/// The rows of the row group being gathered, a column each.
#[derive(Default)]
struct Rows {
    a: Vec<u32>,
    b: Vec<u32>,
    score: Vec<f64>,
    cosine: Option<Vec<f32>>,
}

impl<'a> PairTable<'a> {
    /// Starts the table in `file`, for pairs of `ids` scored by `score_name`, with a cosine
    /// each where `with_cosines`.
    pub fn create(
        file: RunFile,
        ids: SortedIds<'a>,
        score_name: &str,
        with_cosines: bool,
    ) -> Result<Self> {
        let path = file.target().to_owned();
        let mut fields = vec![
            Field::new("id_a", DataType::Utf8, false),
            Field::new("id_b", DataType::Utf8, false),
        ];
        let score = Field::new(score_name, DataType::Float64, false);
        let cosine = Field::new("cosine", DataType::Float32, false);
        match (with_cosines, "cosine" < score_name) {
            (false, _) => fields.push(score),
            (true, true) => fields.extend([cosine, score]),
            (true, false) => fields.extend([score, cosine]),
        }
        let schema = Arc::new(Schema::new(fields));
        let cosine_column = ColumnPath::from("cosine");
        let properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(
                ZstdLevel::try_new(ZSTD_LEVEL).expect("a zstd level"),
            ))
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
            // Cosines rarely repeat: their bytes split into streams compress better.
            .set_column_dictionary_enabled(cosine_column.clone(), false)
            .set_column_encoding(cosine_column, Encoding::BYTE_STREAM_SPLIT)
            .build();
        let (writer, columns) = ArrowWriter::try_new(file, schema.clone(), Some(properties))
            .and_then(|w| w.into_serialized_writer())
            .map_err(|e| failed(&path, e))?;
        Ok(PairTable {
            writer,
            columns,
            schema,
            ids,
            rows: Rows {
                cosine: with_cosines.then(Vec::new),
                ..Rows::default()
            },
            row_group_rows: ROW_GROUP_ROWS,
            row_groups: 0,
            slot: vec![u32::MAX; ids.len()],
            path,
        })
    }

    /// Writes the rows gathered as a row group.
    fn write_row_group(&mut self) -> Result<()> {
        if self.rows.a.is_empty() {
            return Ok(());
        }
        let mut rows = std::mem::take(&mut self.rows);
        self.rows.cosine = rows.cosine.as_ref().map(|_| Vec::new());
        // The score columns move into their arrays; the ids stay to be looked up.
        let mut score: Option<ArrayRef> = Some(Arc::new(Float64Array::from(std::mem::take(
            &mut rows.score,
        ))));
        let mut cosine: Option<ArrayRef> =
            (rows.cosine.take()).map(|cosines| Arc::new(Float32Array::from(cosines)) as ArrayRef);
        let leaves = self.writer.schema_descr().columns().to_vec();
        let encoders = (self.columns)
            .create_column_writers(self.row_groups)
            .map_err(|e| failed(&self.path, e))?;
        let ids = self.ids;
        let (dictionaries, [a, b]) = (
            [
                Dictionary::of(&rows.a, &mut self.slot),
                Dictionary::of(&rows.b, &mut self.slot),
            ],
            [&rows.a, &rows.b],
        );
        let jobs: Vec<Column> = (self.schema.fields().iter())
            .zip(leaves)
            .zip(encoders)
            .map(|((field, leaf), encoder)| match field.name().as_str() {
                "id_a" => Column::Ids(leaf, &dictionaries[0], a),
                "id_b" => Column::Ids(leaf, &dictionaries[1], b),
                "cosine" => Column::Floats(field.clone(), encoder, cosine.take().expect("once")),
                _ => Column::Floats(field.clone(), encoder, score.take().expect("once")),
            })
            .collect();
        let chunks: Vec<Chunk> = jobs
            .into_par_iter()
            .map(|job| job.encode(ids))
            .collect::<parquet::errors::Result<_>>()
            .map_err(|e| failed(&self.path, e))?;
        let mut group = self
            .writer
            .next_row_group()
            .map_err(|e| failed(&self.path, e))?;
        for chunk in chunks {
            match chunk {
                Chunk::Ids(bytes, close) => group.append_column(&bytes, close),
                Chunk::Arrow(chunk) => chunk.append_to_row_group(&mut group),
            }
            .map_err(|e| failed(&self.path, e))?;
        }
        group.close().map_err(|e| failed(&self.path, e))?;
        self.row_groups += 1;
        Ok(())
    }
}

/// The ids a row group's column uses, by their places in sorted order, and each row's index
/// into them.
struct Dictionary {
    places: Vec<u32>,
    indices: Vec<u32>,
}

impl Dictionary {
    /// The dictionary of the rows whose ids are at `places`; `slot` is every place's
    /// `u32::MAX`, and is again when this returns.
    fn of(places: &[u32], slot: &mut [u32]) -> Dictionary {
        let mut used: Vec<u32> = Vec::new();
        for &place in places {
            if slot[place as usize] == u32::MAX {
                slot[place as usize] = 0;
                used.push(place);
            }
        }
        used.par_sort_unstable();
        for (index, &place) in used.iter().enumerate() {
            slot[place as usize] = index as u32;
        }
        let indices = places.iter().map(|&p| slot[p as usize]).collect();
        for &place in &used {
            slot[place as usize] = u32::MAX;
        }
        Dictionary {
            places: used,
            indices,
        }
    }
}

/// A column of a row group to encode.
enum Column<'r> {
    /// An id column: its leaf, its dictionary and its rows' places.
    Ids(
        parquet::schema::types::ColumnDescPtr,
        &'r Dictionary,
        &'r [u32],
    ),
    /// A score column, by Arrow's writer.
    Floats(Arc<Field>, ArrowColumnWriter, ArrayRef),
}

/// A column of a row group, encoded.
enum Chunk {
    Ids(Bytes, ColumnCloseResult),
    Arrow(ArrowColumnChunk),
}

impl Column<'_> {
    fn encode(self, ids: SortedIds) -> parquet::errors::Result<Chunk> {
        match self {
            Column::Ids(leaf, dictionary, rows) => {
                let values: Vec<&[u8]> = (dictionary.places.iter())
                    .map(|&place| ids.get(place).as_bytes())
                    .collect();
                let page = |range: std::ops::Range<usize>| PageRows {
                    levels: None,
                    indices: dictionary.indices[range].to_vec(),
                };
                let (bytes, close) =
                    dictionary_chunk(leaf, &values, rows.len(), page, Some(ZSTD_LEVEL))?;
                Ok(Chunk::Ids(bytes, close))
            }
            Column::Floats(field, mut encoder, values) => {
                for leaf in compute_leaves(&field, &values)? {
                    encoder.write(&leaf)?;
                }
                Ok(Chunk::Arrow(encoder.close()?))
            }
        }
    }
}

impl<'a> PairSink<'a> for PairTable<'a> {
    fn append(
        &mut self,
        count: usize,
        pair: &(dyn Fn(usize) -> PairLine<'a> + Sync),
    ) -> Result<()> {
        let mut start = 0;
        while start < count {
            if crate::cancel::requested() {
                return Err(Error::Interrupted);
            }
            let room = self.row_group_rows - self.rows.a.len();
            let end = count.min(start + room.min(GATHER_ROWS));
            let gathered: Vec<(u32, u32, f64, Option<f32>)> = (start..end)
                .into_par_iter()
                .map(|i| {
                    let p = pair(i);
                    (p.places.0, p.places.1, p.score, p.cosine)
                })
                .collect();
            for (a, b, score, cosine) in gathered {
                self.rows.a.push(a);
                self.rows.b.push(b);
                self.rows.score.push(score);
                if let Some(cosines) = &mut self.rows.cosine {
                    cosines.push(cosine.unwrap_or(f32::NAN));
                }
            }
            if self.rows.a.len() == self.row_group_rows {
                self.write_row_group()?;
            }
            start = end;
        }
        Ok(())
    }

    fn commit(mut self: Box<Self>, run: &mut RunWriter) -> Result<()> {
        self.write_row_group()?;
        let path = self.path.clone();
        let file = self.writer.into_inner().map_err(|e| failed(&path, e))?;
        run.commit(file)
    }
}

/// Hands every row of the table at `path` to `visit` as the record its JSON line reads as.
/// The caller has checked the file against the run's summary.
pub fn each_pair(path: &Path, mut visit: impl FnMut(PairRecord) -> Result<()>) -> Result<()> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .and_then(|b| b.with_batch_size(GATHER_ROWS).build())
        .map_err(|e| unreadable(path, e))?;
    let mut row = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| unreadable(path, e))?;
        let ids = |name: &str| {
            (batch.column_by_name(name))
                .and_then(|c| c.as_any().downcast_ref::<StringArray>())
                .ok_or_else(|| unreadable(path, format!("no string column `{name}`")))
        };
        let (a, b) = (ids("id_a")?, ids("id_b")?);
        let scores: Vec<(&str, Box<dyn Fn(usize) -> f64 + '_>)> = (batch.schema_ref().fields())
            .iter()
            .zip(batch.columns())
            .filter(|(field, _)| !field.name().starts_with("id_"))
            .map(|(field, column)| Ok((field.name().as_str(), score_column(path, field, column)?)))
            .collect::<Result<_>>()?;
        for i in 0..batch.num_rows() {
            row += 1;
            let record = PairRecord {
                a: a.value(i).to_owned(),
                b: b.value(i).to_owned(),
                scores: scores.iter().map(|(n, s)| (n.to_string(), s(i))).collect(),
            };
            if let Some((field, message)) = record.problem() {
                return Err(Error::input(
                    Location::line(path, row),
                    Some(field),
                    message,
                    "run `neardup dedup` again",
                ));
            }
            visit(record)?;
        }
    }
    Ok(())
}

/// The values of a score column as its JSON lines read: a 32-bit cosine as the `f64` of its
/// shortest form ([`cosine_as_read`]).
fn score_column<'c>(
    path: &Path,
    field: &Field,
    column: &'c ArrayRef,
) -> Result<Box<dyn Fn(usize) -> f64 + 'c>> {
    if let Some(wide) = column.as_any().downcast_ref::<Float64Array>() {
        return Ok(Box::new(|i| wide.value(i)));
    }
    if let Some(narrow) = column.as_any().downcast_ref::<Float32Array>() {
        return Ok(Box::new(|i| cosine_as_read(narrow.value(i))));
    }
    Err(unreadable(
        path,
        format!(
            "column `{}` is {}, not a score",
            field.name(),
            field.data_type()
        ),
    ))
}

fn failed(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::io(path, std::io::Error::other(e.to_string()))
}

fn unreadable(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::input(
        Location::file(path),
        None,
        format!("not a table of candidates: {e}"),
        "run `neardup dedup` again",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::run::{CANDIDATES_TABLE, Candidates, RecordFile, RunFolder, RunSummary};

    /// A run's folder holding `pairs` of `ids` in the file `name`, its row groups of
    /// `row_group_rows` rows where it is a table.
    fn folder_with(
        name: &str,
        ids: SortedIds,
        pairs: &[PairLine],
        row_group_rows: usize,
    ) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let mut run = RunWriter::begin(RunWriter::lock(dir.path()).unwrap()).unwrap();
        let mut file: Box<dyn PairSink> = match name == CANDIDATES_TABLE {
            true => {
                let file = run.create(name).unwrap();
                let mut table = PairTable::create(file, ids, "jaccard_estimate", true).unwrap();
                table.row_group_rows = row_group_rows;
                Box::new(table)
            }
            false => {
                crate::output::run::create_pairs(&run, name, ids, "jaccard_estimate", true).unwrap()
            }
        };
        // In pieces that do not fall on the row groups' bounds.
        for piece in pairs.chunks(7_777) {
            file.append(piece.len(), &|i| piece[i]).unwrap();
        }
        file.commit(&mut run).unwrap();
        run.finish(RunSummary::default()).unwrap();
        dir
    }

    /// `count` pairs of `ids` (sorted), 40 a first id, with scores and cosines whose shortest
    /// forms are delicate.
    fn pairs(ids: &[String], count: usize) -> Vec<PairLine<'_>> {
        let last = ids.len() - 1;
        (0..count)
            .map(|i| {
                let a = (i / 40).min(last - 1);
                let b = (a + 1 + (i * 7919) % 4000).min(last);
                PairLine {
                    a: &ids[a],
                    b: &ids[b],
                    score_name: "jaccard_estimate",
                    score: ((i * 31) % 129) as f64 / 128.0,
                    cosine: Some(match i % 3 {
                        0 => 0.439453125,
                        1 => 0.9123,
                        _ => (i as f32 * 0.618034).fract(),
                    }),
                    places: (a as u32, b as u32),
                }
            })
            .collect()
    }

    #[test]
    fn a_table_reads_as_its_json_lines_whatever_its_row_groups_and_is_a_fraction_of_them() {
        let ids: Vec<String> = (0..5_000).map(|i| format!("doc-{i:06}")).collect();
        let by_place: Vec<u32> = (0..5_000).collect();
        let sorted = SortedIds {
            ids: &ids,
            by_place: &by_place,
        };
        let pairs = pairs(&ids, 100_000);
        let read =
            |dir: &tempfile::TempDir| RunFolder::open(dir.path()).unwrap().scored_pairs().unwrap();
        let lines = folder_with(Candidates::NAME, sorted, &pairs, 0);
        let from_lines = read(&lines);
        assert_eq!(from_lines.len(), pairs.len());
        let bytes =
            |dir: &tempfile::TempDir, name| std::fs::metadata(dir.path().join(name)).unwrap().len();
        for row_group_rows in [ROW_GROUP_ROWS, 30_000, 1] {
            if row_group_rows == 1 {
                // A row a group: every page and dictionary of one value.
                let few = &pairs[..50];
                let table = folder_with(CANDIDATES_TABLE, sorted, few, 1);
                let few_lines = folder_with(Candidates::NAME, sorted, few, 0);
                assert!(read(&table) == read(&few_lines), "a row a group");
                continue;
            }
            let table = folder_with(CANDIDATES_TABLE, sorted, &pairs, row_group_rows);
            assert!(read(&table) == from_lines, "{row_group_rows} rows a group");
            let (json, parquet) = (
                bytes(&lines, Candidates::NAME),
                bytes(&table, CANDIDATES_TABLE),
            );
            assert!(parquet * 5 < json, "{parquet} bytes against {json}");
        }
    }

    #[test]
    fn a_table_changed_after_the_run_is_refused_by_name() {
        let ids = ["a".to_string(), "b".to_string()];
        let sorted = SortedIds {
            ids: &ids,
            by_place: &[0, 1],
        };
        let dir = folder_with(CANDIDATES_TABLE, sorted, &pairs(&ids, 3), ROW_GROUP_ROWS);
        let path = dir.path().join(CANDIDATES_TABLE);
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        let err = RunFolder::open(dir.path())
            .unwrap()
            .scored_pairs()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(CANDIDATES_TABLE) && err.contains("changed after the run"),
            "{err}"
        );
    }
}
