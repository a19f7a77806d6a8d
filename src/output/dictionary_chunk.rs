//! Parquet column chunks of strings stored once in a dictionary page, with each row's index
//! into it bit-packed in the data pages: written here where the dictionary is known before the
//! rows are (the categories a Parquet input was read with; a run's ids in their sorted order),
//! so that no row's string is hashed to find its index.

use std::ops::Range;

use bytes::Bytes;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

/// Rows a data page holds at most (Arrow's writer's own limit).
pub(crate) const PAGE_ROWS: usize = 20_000;

/// The rows of one data page: their definition levels, where the column is nullable (1 for a
/// value, 0 for a null), and the dictionary index of each value.
pub(crate) struct PageRows {
    pub levels: Option<Vec<u32>>,
    pub indices: Vec<u32>,
}

/// The column chunk for `column` of `rows` rows whose strings are `values`: the rows of each
/// page of [`PAGE_ROWS`] made by `page`, every page compressed with zstd at `zstd_level` where
/// one is given. Returns the chunk's bytes, and what a row group writer appends it with.
pub(crate) fn dictionary_chunk(
    column: ColumnDescPtr,
    values: &[&[u8]],
    rows: usize,
    page: impl Fn(Range<usize>) -> PageRows,
    zstd_level: Option<i32>,
) -> Result<(Bytes, ColumnCloseResult)> {
    let compress = |body: Vec<u8>| -> Result<(Bytes, usize)> {
        let length = body.len();
        match zstd_level {
            None => Ok((Bytes::from(body), length)),
            Some(level) => zstd::bulk::compress(&body, level)
                .map(|packed| (Bytes::from(packed), length))
                .map_err(|e| ParquetError::External(Box::new(e))),
        }
    };
    let mut out = TrackedWrite::new(Vec::new());
    let mut pages = SerializedPageWriter::new(&mut out);
    let mut uncompressed = 0;
    let mut plain = Vec::new();
    for value in values {
        plain.extend((value.len() as u32).to_le_bytes());
        plain.extend_from_slice(value);
    }
    let (buf, length) = compress(plain)?;
    let dictionary = pages.write_page(CompressedPage::new(
        Page::DictionaryPage {
            num_values: values.len() as u32,
            buf,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        },
        length,
    ))?;
    uncompressed += dictionary.uncompressed_size;
    let width = bits_for(values.len().saturating_sub(1));
    let mut first_data = None;
    for start in (0..rows).step_by(PAGE_ROWS) {
        let range = start..(start + PAGE_ROWS).min(rows);
        let count = range.len();
        let PageRows { levels, indices } = page(range);
        let mut body = Vec::new();
        if let Some(levels) = levels {
            let levels = bit_packed(&levels, 1);
            body.extend((levels.len() as u32).to_le_bytes());
            body.extend(levels);
        }
        body.push(width as u8);
        body.extend(bit_packed(&indices, width));
        let (buf, length) = compress(body)?;
        let written = pages.write_page(CompressedPage::new(
            Page::DataPage {
                buf,
                num_values: count as u32,
                encoding: Encoding::RLE_DICTIONARY,
                def_level_encoding: Encoding::RLE,
                rep_level_encoding: Encoding::RLE,
                statistics: None,
            },
            length,
        ))?;
        uncompressed += written.uncompressed_size;
        first_data.get_or_insert(written.offset);
    }
    pages.close()?;
    let bytes = out.bytes_written();
    let compression = match zstd_level {
        None => Compression::UNCOMPRESSED,
        Some(level) => Compression::ZSTD(ZstdLevel::try_new(level)?),
    };
    let metadata = ColumnChunkMetaData::builder(column)
        .set_compression(compression)
        .set_encodings(vec![
            Encoding::PLAIN,
            Encoding::RLE,
            Encoding::RLE_DICTIONARY,
        ])
        .set_num_values(rows as i64)
        .set_total_compressed_size(bytes as i64)
        .set_total_uncompressed_size(uncompressed as i64)
        .set_dictionary_page_offset(Some(dictionary.offset as i64))
        .set_data_page_offset(first_data.unwrap_or(dictionary.offset + bytes as u64) as i64)
        .build()?;
    let close = ColumnCloseResult {
        bytes_written: bytes as u64,
        rows_written: rows as u64,
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
