//! The file of scored pairs a name asks for: `candidates.parquet` a Parquet table
//! ([`super::pair_table`]), any other JSON lines ([`super::pair_lines`]).

use super::pair_lines::{PairSink, SortedIds};
use super::records::CANDIDATES_TABLE;
use super::writer::RunWriter;
use crate::error::Result;

/// Starts the file of scored pairs of `ids` named `name` in the run `run`, in the format its name says: a
/// Parquet table for [`CANDIDATES_TABLE`], JSON lines for the others. The pairs are scored
/// by `score_name`, each with a cosine where `with_cosines`.
pub fn create_pairs<'a>(
    run: &RunWriter,
    name: &str,
    ids: SortedIds<'a>,
    score_name: &str,
    with_cosines: bool,
) -> Result<Box<dyn PairSink<'a> + 'a>> {
    let file = run.create(name)?;
    if name == CANDIDATES_TABLE {
        #[cfg(feature = "parquet")]
        return Ok(Box::new(super::pair_table::PairTable::create(
            file,
            ids,
            score_name,
            with_cosines,
        )?));
    }
    let _ = (ids, score_name, with_cosines);
    Ok(Box::new(file))
}
