//! String columns read cell by cell, where Arrow's reader refused a page for one cell that is
//! not UTF-8: each cell's bytes as written, so a bad one names its row, not the file.

use std::fs::File;
use std::sync::Arc;

use arrow_schema::{DataType, Field};
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::ByteArrayType;
use parquet::file::serialized_reader::SerializedFileReader;
use parquet::schema::types::SchemaDescriptor;

/// A top-level string column of a Parquet file read cell by cell, across its row groups,
/// each cell's bytes as written.
pub(super) struct ByteColumn {
    file: Arc<SerializedFileReader<File>>,
    /// The column's place among the file's leaf columns.
    leaf: usize,
    /// The next row group to open.
    next_group: usize,
    reader: Option<ColumnReaderImpl<ByteArrayType>>,
    /// Whether the column may hold nulls (its cells have definition levels).
    nullable: bool,
}

impl ByteColumn {
    /// The column of `field` in `file`, if it is a top-level string column.
    pub(super) fn of(
        file: &Arc<SerializedFileReader<File>>,
        descriptor: &SchemaDescriptor,
        field: &Field,
    ) -> Option<ByteColumn> {
        let text = |kind: &DataType| {
            matches!(
                kind,
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            )
        };
        let is_text = match field.data_type() {
            DataType::Dictionary(_, values) => text(values),
            kind => text(kind),
        };
        if !is_text {
            return None;
        }
        let leaf = (0..descriptor.num_columns()).find(|&leaf| {
            let column = descriptor.column(leaf);
            column.path().parts() == [field.name().as_str()]
                && column.physical_type() == parquet::basic::Type::BYTE_ARRAY
                && column.max_rep_level() == 0
        })?;
        Some(ByteColumn {
            file: file.clone(),
            leaf,
            next_group: 0,
            reader: None,
            nullable: descriptor.column(leaf).max_def_level() > 0,
        })
    }

    /// Passes over the next `count` cells, a few thousand at a time.
    pub(super) fn skip(&mut self, mut count: usize) -> parquet::errors::Result<()> {
        while count > 0 {
            let read = self.read(count.min(4096))?.len();
            if read == 0 {
                break;
            }
            count -= read;
        }
        Ok(())
    }

    /// The next `count` cells (fewer at the end of the file): each one's bytes, `None` where
    /// null.
    pub(super) fn read(&mut self, count: usize) -> parquet::errors::Result<Vec<Option<Vec<u8>>>> {
        use parquet::file::reader::FileReader;
        let mut cells = Vec::with_capacity(count);
        let (mut levels, mut values) = (Vec::new(), Vec::new());
        while cells.len() < count {
            let reader = match &mut self.reader {
                Some(reader) => reader,
                None => {
                    if self.next_group >= self.file.num_row_groups() {
                        break;
                    }
                    let group = self.file.get_row_group(self.next_group)?;
                    self.next_group += 1;
                    match group.get_column_reader(self.leaf)? {
                        ColumnReader::ByteArrayColumnReader(reader) => self.reader.insert(reader),
                        _ => unreachable!("a BYTE_ARRAY column has a byte array reader"),
                    }
                }
            };
            levels.clear();
            values.clear();
            let wanted = count - cells.len();
            let levels_of = self.nullable.then_some(&mut levels);
            let (records, ..) = reader.read_records(wanted, levels_of, None, &mut values)?;
            if records == 0 {
                self.reader = None;
                continue;
            }
            let mut values = values.drain(..);
            for row in 0..records {
                let present = !self.nullable || levels.get(row).is_some_and(|&level| level > 0);
                let cell = present.then(|| values.next().map(|v| v.data().to_vec()));
                cells.push(cell.flatten());
            }
        }
        Ok(cells)
    }
}

/// Whether a reader's error says a string cell is not UTF-8.
pub(super) fn is_not_utf8(error: &str) -> bool {
    let error = error.to_ascii_lowercase();
    error.contains("utf-8") || error.contains("utf8")
}
