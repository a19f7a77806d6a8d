//! Nearest-neighbour search: the first stage of the two-stage method. Every document's vector
//! asks for its `top_k` nearest documents by cosine; those above `min_cosine` become the
//! candidates that the confirm stage judges. Three ways answer the same question:
//! - the graph: the vector store's HNSW index ([`crate::store::VectorStore::search`]),
//!   approximate: what `query` and `serve` ask of a kept index, and a run with `cells` 0;
//! - the exact scan: every vector against every other, the true top-k (`exact_search`); the
//!   engines' own, or [`crate::store::MemoryStore`]'s by matrix products;
//! - k-means cells: the vectors cut into cells, each document compared exactly with the
//!   documents of its nearest `cell_probes` cells (`cells`). A run's default: as many cells
//!   as [`cells_for`] its size, one for a small corpus (every document against every other).
//!
//! Each answers [`NeighbourSearch`]: the nearest documents of each query vector. This module
//! also owns what the ways share: the settings' defaults and limits.

mod cells;
mod codes;
mod neighbours;
mod queries;

pub(crate) use cells::{
    CellPlacement, CellSample, Cells, CopyHashes, NO_CELL, NearestLists, OwnedCells, Placing,
    is_paired_copy,
};
pub(crate) use codes::{Code, Codes, cosine};
pub(crate) use neighbours::InCells;
pub use neighbours::{InStore, NeighbourSearch};
pub(crate) use queries::{Query, QueryFile, QueryReader};

/// Nearest neighbours a document asks for, by default.
pub const DEFAULT_TOP_K: usize = 20;
/// The most neighbours a document may ask for: each costs a search slot and a confirmation,
/// and past a few dozen they are unrelated documents.
pub const MAX_TOP_K: usize = 1000;
/// Neighbours below this cosine are not candidates: chosen for centred vectors (uncentred ones
/// lie above it).
pub const DEFAULT_MIN_COSINE: f32 = 0.25;
/// The nearest cells a document is searched in, by default.
pub const DEFAULT_CELL_PROBES: usize = 3;
/// Corpora up to this size are searched within one cell, unless told otherwise: every
/// document compared with every other, the true top-k, in a second or two.
pub const EXACT_SCAN_DOCUMENTS: usize = 20_000;
/// Documents per cell in larger corpora: with [`DEFAULT_CELL_PROBES`], a document is compared
/// with about 500 others.
pub const DOCUMENTS_PER_CELL: usize = 160;

/// The cells a corpus of `documents` is searched within, unless told: one up to
/// [`EXACT_SCAN_DOCUMENTS`], then one per [`DOCUMENTS_PER_CELL`].
pub fn cells_for(documents: usize) -> usize {
    match documents <= EXACT_SCAN_DOCUMENTS {
        true => 1,
        false => documents / DOCUMENTS_PER_CELL,
    }
}
