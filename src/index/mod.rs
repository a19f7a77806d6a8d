//! Searchable stores of documents' sketches.
//!
//! - [`ResemblanceStore`]: exact n-gram resemblance through an inverted index, with
//!   `add_doc` / `find_similar` / `clean`, persisted to a folder;
//! - [`DocumentIndex`]: the two-stage index (embeddings in a vector store, MinHash signatures
//!   as payload), persisted in a folder with a manifest of its settings;
//! - [`SimHashIndex`]: SimHash fingerprints searched by Hamming distance, exactly through
//!   permuted block tables or approximately by probing the likeliest bit flips.

mod documents;
mod resemblance;
mod simhash;

pub use documents::{DocumentIndex, IndexSettings, MANIFEST, Manifest, Match};
pub use resemblance::{ResemblanceSettings, ResemblanceStore};
pub use simhash::{SimHashIndex, simhashes};
