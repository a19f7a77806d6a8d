//! Sketches: compact summaries of a document's shingle set that estimate similarity.
//!
//! [`MinHasher`] turns shingle sets into MinHash signatures whose slot agreement estimates
//! Jaccard similarity; [`lsh`] bands those signatures so that only likely-similar pairs are ever
//! compared, which keeps deduplication near-linear in the corpus size.

pub mod lsh;
mod minhash;

pub use lsh::{LshParams, candidate_pairs};
pub use minhash::{EMPTY_SLOT, MinHasher, Signatures, jaccard_estimate};
