//! Everything a run writes, and how.
//!
//! - Files are written atomically ([`AtomicFile`]): under a temporary name beside the target,
//!   sent to disk as they grow (`writeback.rs`: at the disk's pace, not the page cache's) and
//!   renamed into place only when complete, so that a reader sees the old file or the whole
//!   new one. `-` is standard output.
//! - A run's folder is one unit ([`run`]): its files (pairs, candidates, groups, the summary)
//!   as typed records, written and read back checked.
//! - The input's records go back out in the user's own format ([`records`]): the records kept
//!   (`unique.*`) and an annotated copy (`annotated.*`), one file per format behind one trait.

mod atomic;
#[cfg(feature = "parquet")]
mod dictionary_chunk;
pub mod records;
pub mod run;
mod writeback;

pub use atomic::{AtomicFile, STDOUT, write_json_lines, write_json_pretty};
