//! Searchable stores of documents' sketches.
//!
//! - [`ResemblanceStore`]: exact n-gram resemblance through an inverted index, with
//!   `add_doc` / `find_similar` / `clean`, persisted to a folder;
//! - [`SimHashIndex`]: SimHash fingerprints searched by Hamming distance, exactly through
//!   permuted block tables or approximately by probing the likeliest bit flips.

mod resemblance;
mod simhash;

pub use resemblance::{ResemblanceSettings, ResemblanceStore};
pub use simhash::{SimHashIndex, simhashes};
