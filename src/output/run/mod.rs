//! A run's output folder, as one unit.
//!
//! A run writes these files, each atomically (see [`AtomicFile`]):
//! - files of records, one JSON object a line, each with its format ([`RecordFile`]):
//!   [`Pairs`] (`pairs.jsonl`, the confirmed pairs) and [`Groups`] (`groups.jsonl`);
//! - every scored candidate, where the method scores more than it confirms, in the format
//!   [`CandidatesFormat`] names: `candidates.parquet` ([`pair_table`]) or [`Candidates`]
//!   (`candidates.jsonl`), laid out as the pairs;
//! - `unique.*`: the input records kept (one per group, chosen by the keep policy, and every
//!   document in no group), in input order, in the input's format (see [`crate::output::records`]);
//! - `annotated.*`: every document's record with its group, whether it is kept and which record
//!   it duplicates;
//! - `summary.json`, written last ([`RunSummary`]): the run's id, settings and counts, and the
//!   length and digest of every other file.
//!
//! Files are renamed into place one at a time, so a run that is killed, or whose rename fails,
//! could leave files of two runs side by side. The summary makes that visible: a run first
//! removes the old one, and readers ([`RunFolder`]) check each file they read against the
//! summary's digest and refuse a mix. A lock keeps two runs out of one folder, and temporary
//! files that a killed run left behind are removed when the next one starts.

mod folder;
mod pair_files;
mod pair_lines;
#[cfg(feature = "parquet")]
mod pair_table;
mod records;
mod run_pairs;
mod writer;

pub use folder::{CheckedFile, CheckedReader, RunFolder};
pub use pair_files::create_pairs;
pub use pair_lines::{PairLine, PairSink, SortedIds, cosine_as_read};
pub use records::{
    CANDIDATES_TABLE, Candidates, CandidatesFormat, EVAL, FileDigest, GroupRecord, Groups,
    IdsDigest, PairRecord, Pairs, RecordFile, RecordsDigest, RunSummary, SUMMARY, StageTimes,
};
pub use run_pairs::RunPairs;
pub use writer::{RunFile, RunWriter};
