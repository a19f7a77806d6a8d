//! Sketches: compact summaries of a document's shingle set that estimate similarity.
//!
//! [`MinHasher`] turns shingle sets into MinHash signatures whose slot agreement estimates
//! Jaccard similarity; [`lsh`] bands those signatures so that only likely-similar pairs are ever
//! compared, which keeps deduplication near-linear in the corpus size; [`MinHashParams`] holds
//! their settings. What confirms a candidate pair is [`crate::confirm`]'s. [`SimHash`] is the
//! other classic: one
//! 64-bit fingerprint whose Hamming distance tracks dissimilarity, searched by [`SimHashIndex`].

pub mod lsh;
mod minhash;
mod params;
mod simhash;
mod simhash_index;

pub use lsh::{
    LshParams, band_keys, bucket_pairs, candidate_pairs, candidate_pairs_between, same_keys,
    share_band, words_hash,
};
pub use minhash::{EMPTY_SLOT, Hashing, MinHasher, Signatures, jaccard_estimate};
pub use params::{MAX_NUM_PERM, MinHashParams};
pub use simhash::{SimHash, hamming};
pub use simhash_index::{DEFAULT_MAX_DISTANCE, SimHashIndex, simhashes};
