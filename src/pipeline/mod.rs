//! Deduplication end to end: read, sketch, find candidate pairs, confirm, group, write.
//!
//! A [`Method`] turns a corpus into confirmed [`Pair`]s with a score; everything after that
//! (groups under a [`Linkage`](crate::group::Linkage), representatives, the output files) is shared by all methods:
//! - `minhash`: MinHash signatures, LSH banding tuned to the threshold, candidates confirmed by
//!   the Jaccard estimate ([`Confirm::Estimate`](crate::confirm::Confirm::Estimate)) or the band collision alone
//!   ([`Confirm::Band`](crate::confirm::Confirm::Band), datasketch's `MinHashLSH.query`);
//! - `jaccard`: exact Jaccard of the shingle sets, candidates from a prefix-filtered inverted
//!   index (never all pairs);
//! - `resemblance`: the same exact join over word 5-grams, keeping pairs whose resemblance
//!   exceeds the threshold (Text::DeDuper's measure and defaults);
//! - `simhash`: 64-bit SimHash fingerprints within a Hamming distance, found exactly through
//!   block tables or by probing the likeliest bit flips;
//! - `two-stage` (the default): document embeddings in a Qdrant cosine index propose each
//!   document's top-k neighbours, and the MinHash classifier confirms them.

mod dedup;
mod exact;
mod labels;
mod method;
mod minhash;
mod pairs;
mod provenance;
mod rethreshold;
mod run;
mod simhash;
mod spec;
mod split;
mod train;
mod two_stage;
mod write;

pub use dedup::Dedup;
pub use exact::{JaccardConfig, ResemblanceConfig};
pub use labels::{Labelling, PairLabels};
pub use method::{Method, MethodConfig};
pub use minhash::MinHashConfig;
pub use pairs::{CandidateFiles, Pair, ScoredCandidates, ScoredPairs};
use rethreshold::rethreshold;
pub use run::{Finished, Held, Ran, Run};
pub use simhash::SimHashConfig;
pub use spec::{EvalSpec, InputSpec, OutputSpec, PipelineSpec};
pub use split::{Merged, Part, PartWritten, advance, check_out, learn_cells, merge};
use split::{embed_part, sign_part};
pub use train::{Candidates, LabelledPairs, TrainingData, train};
pub use two_stage::{BuiltIndex, TwoStageConfig, build_index};
pub use write::{Fates, run_summary};
