//! Parquet through arrow-rs, read in batches of rows so that memory stays per batch, not per
//! file. The format is always listed; its reader is built with the `parquet` cargo feature (on
//! by default), and without it reading a Parquet file is refused by name.

#[cfg(feature = "parquet")]
mod batches;
#[cfg(feature = "parquet")]
mod byte_column;
#[cfg(feature = "parquet")]
mod rows;

use std::path::Path;

#[cfg(feature = "parquet")]
pub use self::batches::batches;
#[cfg(feature = "parquet")]
pub(super) use self::rows::SharedLine;
use super::{FieldSpec, Format, RawRecords};
use crate::error::Result;

/// Apache Parquet, read in slices of rows.
pub(super) struct Parquet;

impl Format for Parquet {
    fn name(&self) -> &'static str {
        "parquet"
    }

    fn about(&self) -> &'static str {
        "Apache Parquet (needs the `parquet` cargo feature, on by default)"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["parquet", "pq"]
    }

    #[cfg(feature = "parquet")]
    fn open(&self, path: &Path, fields: &FieldSpec, max_record_bytes: u64) -> Result<RawRecords> {
        rows::open(path, fields, max_record_bytes)
    }

    #[cfg(not(feature = "parquet"))]
    fn open(&self, path: &Path, _: &FieldSpec, _: u64) -> Result<RawRecords> {
        Err(crate::error::Error::Usage(format!(
            "{}: this neardup was built without Parquet support; rebuild with `--features parquet`",
            path.display()
        )))
    }

    fn written_as(&self) -> &'static str {
        "parquet"
    }
}
