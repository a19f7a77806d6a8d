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
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::Result;
use parquet::schema::types::ColumnDescPtr;

use crate::output::dictionary_chunk::{PageRows, dictionary_chunk};

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
    let page = |range: std::ops::Range<usize>| {
        let page = &rows[range];
        PageRows {
            levels: nullable.then(|| page.iter().map(|row| u32::from(row.is_some())).collect()),
            indices: page.iter().flatten().copied().collect(),
        }
    };
    dictionary_chunk(column, &values, rows.len(), page, None)
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
