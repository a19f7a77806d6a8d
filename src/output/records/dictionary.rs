//! Dictionary columns of strings, written to Parquet with the dictionary they were read with.
//!
//! A Parquet column of categories (a pandas `Categorical`, an Arrow dictionary) keeps its values
//! once, in a dictionary page, and each row an index into it. Arrow's writer builds that page
//! anew from the values the rows written use, in the order they first use them: the unique
//! records of a file of categories `[a, b, c]` that kept no `b` came back with categories
//! `[a, c]`, or one value a row where the rows read back one at a time. A reader of the output
//! (pandas) then sees other categories than the input's.
//!
//! So such a column's chunk is encoded here: the dictionary page holds every value of the
//! dictionaries read, in their order (the dictionaries of several row groups joined, each
//! value once), and the data pages each row's index into it, bit-packed, after its definition
//! level. The chunk is spliced into the row group Arrow's writer writes the other columns of.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use bytes::Bytes;
use parquet::basic::{Compression, Encoding};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

/// Rows a data page holds at most (Arrow's writer's own limit).
const PAGE_ROWS: usize = 20_000;

/// Whether a column of `kind` is written here: a dictionary of strings.
pub(super) fn is_dictionary_of_strings(kind: &DataType) -> bool {
    matches!(kind, DataType::Dictionary(_, values)
        if matches!(**values, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View))
}

/// The column chunk of the dictionary arrays `arrays` (one a batch, of a column that
/// [`is_dictionary_of_strings`]), for the Parquet column `column`: its bytes, and what a row
/// group writer appends it with.
pub(super) fn column_chunk(
    column: ColumnDescPtr,
    arrays: &[ArrayRef],
) -> Result<(Bytes, ColumnCloseResult)> {
    let (values, rows) = joined(arrays);
    let nullable = column.max_def_level() > 0;
    let mut out = TrackedWrite::new(Vec::new());
    let mut pages = SerializedPageWriter::new(&mut out);
    let mut plain = Vec::new();
    for value in &values {
        plain.extend((value.len() as u32).to_le_bytes());
        plain.extend_from_slice(value);
    }
    let dictionary = pages.write_page(CompressedPage::new(
        Page::DictionaryPage {
            num_values: values.len() as u32,
            buf: Bytes::from(plain),
            encoding: Encoding::PLAIN,
            is_sorted: false,
        },
        0,
    ))?;
    let width = bits_for(values.len().saturating_sub(1));
    let mut first_data = None;
    for page in rows.chunks(PAGE_ROWS) {
        let mut body = Vec::new();
        if nullable {
            let levels: Vec<u32> = page.iter().map(|row| u32::from(row.is_some())).collect();
            let levels = bit_packed(&levels, 1);
            body.extend((levels.len() as u32).to_le_bytes());
            body.extend(levels);
        }
        let indices: Vec<u32> = page.iter().flatten().copied().collect();
        body.push(width as u8);
        body.extend(bit_packed(&indices, width));
        let length = body.len();
        let written = pages.write_page(CompressedPage::new(
            Page::DataPage {
                buf: Bytes::from(body),
                num_values: page.len() as u32,
                encoding: Encoding::RLE_DICTIONARY,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE,
                statistics: None,
            },
            length,
        ))?;
        first_data.get_or_insert(written.offset);
    }
    pages.close()?;
    let bytes = out.bytes_written();
    let metadata = ColumnChunkMetaData::builder(column)
        .set_compression(Compression::UNCOMPRESSED)
        .set_encodings(vec![
            Encoding::PLAIN,
            Encoding::RLE,
            Encoding::RLE_DICTIONARY,
        ])
        .set_num_values(rows.len() as i64)
        .set_total_compressed_size(bytes as i64)
        // Uncompressed: the pages' sizes, headers included, are the bytes written.
        .set_total_uncompressed_size(bytes as i64)
        .set_dictionary_page_offset(Some(dictionary.offset as i64))
        .set_data_page_offset(first_data.unwrap_or(dictionary.offset + bytes as u64) as i64)
        .build()?;
    let close = ColumnCloseResult {
        bytes_written: bytes as u64,
        rows_written: rows.len() as u64,
        metadata,
        bloom_filter: None,
        column_index: None,
        offset_index: None,
    };
    let buffer = out
        .into_inner()
        .map_err(|e| ParquetError::General(e.to_string()))?;
    Ok((Bytes::from(buffer), close))
}

/// The values of the dictionaries of `arrays`, each once, in the order of the first dictionary
/// and then each next one's new values; and each row's index into them (`None` where null).
fn joined(arrays: &[ArrayRef]) -> (Vec<&[u8]>, Vec<Option<u32>>) {
    let mut values: Vec<&[u8]> = Vec::new();
    let mut place: HashMap<&[u8], u32> = HashMap::new();
    let mut rows = Vec::new();
    for array in arrays {
        let dictionary = array.as_any_dictionary();
        let own = strings(dictionary.values());
        let index: Vec<Option<u32>> = own
            .iter()
            .map(|value| {
                value.map(|value| {
                    *place.entry(value).or_insert_with(|| {
                        values.push(value);
                        (values.len() - 1) as u32
                    })
                })
            })
            .collect();
        let keys = dictionary.normalized_keys();
        rows.extend((0..array.len()).map(|row| match array.is_valid(row) {
            true => index[keys[row]],
            false => None,
        }));
    }
    (values, rows)
}

/// Each value of a string array, as bytes (`None` where null).
fn strings(array: &ArrayRef) -> Vec<Option<&[u8]>> {
    match array.data_type() {
        DataType::Utf8 => each_string(array.as_string::<i32>()),
        DataType::LargeUtf8 => each_string(array.as_string::<i64>()),
        DataType::Utf8View => each_string(array.as_string_view()),
        other => unreachable!("a dictionary of strings has string values, not {other}"),
    }
}

/// [`strings`] of one kind of string array.
fn each_string<'a>(
    array: impl arrow_array::ArrayAccessor<Item = &'a str>,
) -> Vec<Option<&'a [u8]>> {
    (0..array.len())
        .map(|row| array.is_valid(row).then(|| array.value(row).as_bytes()))
        .collect()
}

/// The bits an index up to `largest` takes.
fn bits_for(largest: usize) -> u32 {
    usize::BITS - largest.leading_zeros()
}

/// `values` in Parquet's hybrid encoding as one bit-packed run of `width` bits a value: the
/// run's header (groups of 8, as a ULEB128, shifted left with its low bit set), then the values
/// packed least significant bit first, the last group padded with zeros.
fn bit_packed(values: &[u32], width: u32) -> Vec<u8> {
    let groups = values.len().div_ceil(8);
    let mut out = Vec::with_capacity(5 + groups * width as usize);
    let mut header = ((groups as u64) << 1) | 1;
    loop {
        let byte = (header & 0x7f) as u8;
        header >>= 7;
        if header == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    }
    let (mut bits, mut held) = (0u64, 0u32);
    let padded = values.iter().copied().chain(std::iter::repeat(0));
    for value in padded.take(groups * 8) {
        bits |= u64::from(value) << held;
        held += width;
        while held >= 8 {
            out.push(bits as u8);
            bits >>= 8;
            held -= 8;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_bit_packed_least_significant_bit_first() {
        // Eight values of 3 bits: 0..8 packed into three bytes.
        let packed = bit_packed(&[0, 1, 2, 3, 4, 5, 6, 7], 3);
        assert_eq!(packed, [0b11, 0b1000_1000, 0b1100_0110, 0b1111_1010]);
        // Nine values make two groups, the second padded; width 0 takes no bytes.
        assert_eq!(bit_packed(&[1; 9], 1), [0b101, 0xff, 0x01]);
        assert_eq!(bit_packed(&[0; 20], 0), [0b111]);
        assert_eq!(bits_for(0), 0);
        assert_eq!(bits_for(1), 1);
        assert_eq!(bits_for(2), 2);
        assert_eq!(bits_for(255), 8);
    }
}
