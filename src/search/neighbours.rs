//! [`NeighbourSearch`]: the one question every way of searching answers, the nearest
//! documents of each query vector, so that a caller asks it the same way of a vector store's
//! graph, a full scan, or the cells.

use std::collections::HashMap;

use super::Cells;
use crate::error::{Error, Result};
use crate::store::{SearchOptions, VectorStore};

/// A set of documents searched by cosine.
pub trait NeighbourSearch {
    /// The `k` nearest documents of each query among the set, as `(cosine, document)`, best
    /// first.
    fn nearest(&self, queries: &[&[f32]], k: usize) -> Result<Vec<Vec<(f32, u32)>>>;
}

/// The documents of a vector store, through its graph or, with `exact`, a full scan.
pub struct InStore<'a> {
    /// The store.
    pub store: &'a dyn VectorStore,
    /// The document each of the store's point keys holds.
    pub documents: &'a HashMap<u64, u32>,
    /// Whether every point is compared with each query, instead of walking the graph.
    pub exact: bool,
}

impl NeighbourSearch for InStore<'_> {
    fn nearest(&self, queries: &[&[f32]], k: usize) -> Result<Vec<Vec<(f32, u32)>>> {
        let options = SearchOptions {
            k,
            with_payload: false,
            exact: self.exact,
        };
        self.store
            .search(queries, options)?
            .into_iter()
            .map(|hits| {
                hits.into_iter()
                    .map(|hit| match self.documents.get(&hit.key) {
                        Some(&doc) => Ok((hit.cosine, doc)),
                        None => Err(Error::store(format!(
                            "the index returned an unknown point {}",
                            hit.key
                        ))),
                    })
                    .collect()
            })
            .collect()
    }
}

/// Some of the documents of the cells, each query searched among those of its nearest cells
/// ([`Cells::nearest_among`]).
pub(crate) struct InCells<'a> {
    cells: &'a Cells,
    /// The documents searched, by cell.
    members: Vec<Vec<u32>>,
}

impl<'a> InCells<'a> {
    /// The documents of `cells` that `searched` holds (by document number).
    pub(crate) fn among(cells: &'a Cells, searched: &[bool]) -> Self {
        InCells {
            cells,
            members: cells.members_among(searched),
        }
    }
}

impl NeighbourSearch for InCells<'_> {
    fn nearest(&self, queries: &[&[f32]], k: usize) -> Result<Vec<Vec<(f32, u32)>>> {
        Ok(self.cells.nearest_among(queries, &self.members, k))
    }
}
