//! Searchable stores of documents.
//!
//! - [`ResemblanceStore`]: exact n-gram resemblance through an inverted index, with
//!   `add_doc` / `find_similar` / `clean`, persisted to a folder;
//! - [`DocumentIndex`]: the two-stage index (embeddings in a vector store, MinHash signatures
//!   as payload), persisted in a folder with a manifest of its settings, and with a journal
//!   that makes single writes durable without a store flush each;
//! - [`explain_records`]: why two documents were, or were not, matched.

mod documents;
mod explain;
mod journal;
mod resemblance;

pub use documents::{
    CELLS, Collection, DocumentIndex, IndexSettings, MANIFEST, Manifest, Match, NewDocument,
    SNAPSHOT, Snapshot, SnapshotSpool, StoredCells, TitleVectors,
};
pub use explain::{
    Explanation, Side, explain_indexed, explain_records, find_two, minhash_settings, uncentre,
};
pub use resemblance::{ResemblanceSettings, ResemblanceStore};
