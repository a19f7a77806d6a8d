//! The title-only store: the vectors of the records that are no more than a title, which the
//! title queries of a two-stage run search.
//!
//! A record with an abstract is also searched by the vector of its title alone, so that a
//! copy of it that has only the title is proposed: the whole record's vector, abstract
//! included, is far from a title's. A title query is made for those copies, so it searches
//! them only, in a store of their own, instead of every document:
//! - its top `k` are then title-only records, the copies it is made to find, not records with
//!   abstracts that happen to lie near a title (which their own queries find anyway);
//! - while that store is under the full-scan size
//!   ([`GraphSettings::full_scan_kb`](crate::store::GraphSettings)), its search is exact, where
//!   the whole index goes through a graph; a larger one gets a graph of its own;
//! - a corpus with no title-only record needs no title query at all.
//!
//! The store lives for one run: in a folder of the run's index folder (or, for a part of a
//! split run, of a scratch folder) on the embedded engine, in a collection named after the
//! index's with [`SUFFIX`] (and the part) on a server, discarded when the search is done. A
//! part embeds only its slice, so it copies the title-only vectors from the shared index
//! ([`TitleOnlyStore::copy_from`]): every part, and a run in one piece, searches the same
//! title-only records.

use std::path::{Path, PathBuf};

use super::parts::Part;
use crate::error::{Error, Result};
use crate::index::DocumentIndex;
use crate::store::{
    self, GraphSettings, Neighbour, OpenMode, SearchOptions, StoreSpec, StoredPoint, VectorStore,
    point_key,
};

/// Added to the index's folder name (embedded engine) or collection name (server).
pub const SUFFIX: &str = "-title-only";

/// Points fetched from the shared index at a time.
const COPY_BATCH: usize = 1024;

/// The title-only records of a run, opened at the first one.
pub struct TitleOnlyStore {
    spec: StoreSpec,
    dir: PathBuf,
    dimensions: usize,
    graph: GraphSettings,
    store: Option<Box<dyn VectorStore>>,
}

impl TitleOnlyStore {
    /// A store for `part` (or the whole run) of `index`, built and searched as it is, on the
    /// embedded engine in a folder of `dir`.
    pub fn beside(index: &DocumentIndex, dir: &Path, part: Option<Part>) -> Self {
        let settings = &index.manifest().settings;
        let mut spec = settings.store.clone();
        spec.collection.push_str(SUFFIX);
        if let Some(part) = part {
            // Parts run at once against one server.
            spec.collection += &format!("-part-{}-of-{}", part.number, part.count);
        }
        TitleOnlyStore {
            spec,
            dir: dir.join(format!("edge{SUFFIX}")),
            dimensions: index.embedder().dimensions(),
            graph: GraphSettings::for_vectors(settings.centre),
            store: None,
        }
    }

    /// Adds title-only records with their vectors (as the index stores them).
    pub fn add(&mut self, ids: &[&str], vectors: &[&[f32]]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let store = match &mut self.store {
            Some(store) => store,
            None => self.store.insert(store::open(
                &self.spec,
                &self.dir,
                self.dimensions,
                OpenMode::Create,
                self.graph,
            )?),
        };
        let points: Vec<StoredPoint<'_>> = ids
            .iter()
            .zip(vectors)
            .map(|(id, vector)| StoredPoint {
                key: point_key(id),
                id,
                vector,
                sketch: None,
            })
            .collect();
        store.upsert(&points)
    }

    /// Adds the title-only records `keys` of `index` with the vectors it holds.
    pub fn copy_from(&mut self, index: &DocumentIndex, keys: &[u64]) -> Result<()> {
        for keys in keys.chunks(COPY_BATCH) {
            let fetched = index.store().fetch(keys)?;
            let fetched: Vec<_> = keys
                .iter()
                .zip(fetched)
                .map(|(key, point)| {
                    point.ok_or_else(|| {
                        Error::store(format!(
                            "the shared index lacks the document of point {key}"
                        ))
                    })
                })
                .collect::<Result<_>>()?;
            let ids: Vec<&str> = fetched.iter().map(|f| f.payload.id.as_str()).collect();
            let vectors: Vec<&[f32]> = fetched.iter().map(|f| f.vector.as_slice()).collect();
            self.add(&ids, &vectors)?;
        }
        Ok(())
    }

    /// Builds the search graph, where the store is large enough to want one.
    pub fn finish(&self) -> Result<()> {
        if let Some(store) = &self.store {
            store.build_index()?;
        }
        Ok(())
    }

    /// The title-only records nearest each query (none when there are none).
    pub fn search(
        &self,
        queries: &[&[f32]],
        options: SearchOptions,
    ) -> Result<Vec<Vec<Neighbour>>> {
        match &self.store {
            Some(store) => store.search(queries, options),
            None => Ok(vec![Vec::new(); queries.len()]),
        }
    }

    /// Deletes the store: its folder, or its server collection.
    pub fn discard(mut self) -> Result<()> {
        if let Some(store) = self.store.take() {
            store.discard()?;
            drop(store);
            if self.dir.exists() {
                std::fs::remove_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
            }
        }
        Ok(())
    }
}
