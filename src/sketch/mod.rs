//! Sketches: compact summaries of a document's shingle set that estimate similarity.
//!
//! [`MinHasher`] turns shingle sets into MinHash signatures whose slot agreement estimates
//! Jaccard similarity; [`lsh`] bands those signatures so that only likely-similar pairs are ever
//! compared, which keeps deduplication near-linear in the corpus size; [`classifier`] holds
//! their settings and the rule that confirms a candidate from the [`evidence`] of two
//! sketches. [`SimHash`] is the other classic: one
//! 64-bit fingerprint whose Hamming distance tracks dissimilarity, searched by [`SimHashIndex`].

pub mod classifier;
pub mod evidence;
pub mod lsh;
mod minhash;
mod simhash;
mod simhash_index;

pub use classifier::{Confirm, ConfirmRule, MAX_NUM_PERM, MinHashParams, check_threshold};
pub use evidence::{
    Evidence, Facts, Rule, Sketch, SketchFacts, SketchRef, Verdict, set_jaccard, shared_count,
};
pub use lsh::{LshParams, candidate_pairs, share_band};
pub use minhash::{EMPTY_SLOT, Hashing, MinHasher, Signatures, jaccard_estimate};
pub use simhash::{SimHash, hamming};
pub use simhash_index::{SimHashIndex, simhashes};
