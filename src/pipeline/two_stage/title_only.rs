//! The title-only store: the vectors of the records that are no more than a title, which the
//! title queries of a two-stage run search.
//!
//! A record with an abstract is also searched by the vector of its title alone, so that a
//! copy of it that has only the title is proposed: the whole record's vector, abstract
//! included, is far from a title's. A title query is made for those copies, so it searches
//! them only, in a store of their own, instead of every document:
//! - its top `k` are then title-only records, the copies it is made to find, not records with
//!   abstracts that happen to lie near a title (which their own queries find anyway);
//! - while their vectors fit the full-scan size
//!   ([`GraphSettings::full_scan_kb`](crate::store::GraphSettings)), they are held in memory
//!   and searched exactly, a batch of queries at a time ([`MemoryStore`]), where the whole
//!   index goes through a graph;
//! - more of them go into a vector store of the index's engine, with a graph of its own;
//! - a corpus with no title-only record needs no title query at all.
//!
//! A run searching within cells (`cells`) builds no such store: it compares each title with
//! the title-only records of its nearest cells
//! ([`InCells`](crate::search::InCells)).
//!
//! That store lives for one run: in a folder of the run's index folder (or, for a part of a
//! split run, of a scratch folder) on the embedded engine, in a collection named after the
//! index's with [`SUFFIX`] (and the part) on a server, discarded when the search is done. A
//! part embeds only its slice, so it copies the title-only vectors from the shared index
//! ([`TitleOnlyStore::copy_from`]): every part, and a run in one piece, searches the same
//! title-only records.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::index::DocumentIndex;
use crate::pipeline::Part;
use crate::store::{
    self, GraphSettings, MemoryStore, OpenMode, StoreSpec, StoredPoint, VectorStore,
};

/// Added to the index's folder name (embedded engine) or collection name (server).
pub const SUFFIX: &str = "-title-only";

/// Points fetched from the shared index at a time.
const COPY_BATCH: usize = 1024;

/// The title-only records of a run.
pub struct TitleOnlyStore {
    spec: StoreSpec,
    dir: PathBuf,
    dimensions: usize,
    graph: GraphSettings,
    held: Held,
}

/// Where the title-only records are.
enum Held {
    /// In memory, while their vectors fit the full-scan size.
    Memory(MemoryStore),
    /// In a store of the index's engine, with a graph.
    Engine(Box<dyn VectorStore>),
}

impl Held {
    fn store(&self) -> &dyn VectorStore {
        match self {
            Held::Memory(store) => store,
            Held::Engine(store) => store.as_ref(),
        }
    }
}

impl TitleOnlyStore {
    /// A store for `part` (or the whole run) of `index`, built and searched as it is, on the
    /// embedded engine in a folder of `dir`.
    pub fn beside(index: &DocumentIndex, dir: &Path, part: Option<Part>) -> Self {
        let settings = &index.manifest().settings;
        let dimensions = index.embedder().dimensions();
        let mut spec = settings.store.clone();
        spec.collection.push_str(SUFFIX);
        if let Some(part) = part {
            // Parts run at once against one server.
            spec.collection += &format!("-part-{}-of-{}", part.number, part.count);
        }
        TitleOnlyStore {
            spec,
            dir: dir.join(format!("edge{SUFFIX}")),
            dimensions,
            graph: GraphSettings::for_vectors(settings.centre),
            held: Held::Memory(MemoryStore::new(dimensions)),
        }
    }

    /// Adds title-only records with their vectors (as the index stores them).
    pub fn add(&mut self, ids: &[&str], vectors: &[&[f32]]) -> Result<()> {
        if let Held::Memory(memory) = &self.held {
            let adding: usize = vectors.iter().map(|v| size_of_val(*v)).sum();
            if memory.vector_bytes() + adding > self.graph.full_scan_kb * 1024 {
                self.move_to_engine()?;
            }
        }
        let points: Vec<StoredPoint<'_>> = ids
            .iter()
            .zip(vectors)
            .map(|(id, vector)| StoredPoint::new(id, vector, None))
            .collect();
        self.held.store().upsert(&points)
    }

    /// Moves the records held in memory into a store of the index's engine.
    fn move_to_engine(&mut self) -> Result<()> {
        let engine = store::open(
            &self.spec,
            &self.dir,
            self.dimensions,
            OpenMode::Create,
            self.graph,
        )?;
        if let Held::Memory(memory) = std::mem::replace(&mut self.held, Held::Engine(engine)) {
            let held = memory.into_points();
            let points: Vec<StoredPoint<'_>> = held
                .iter()
                .map(|(id, vector)| StoredPoint::new(id, vector, None))
                .collect();
            self.held.store().upsert(&points)?;
        }
        Ok(())
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

    /// Builds the search graph, where the records went into a store.
    pub fn finish(&self) -> Result<()> {
        self.held.store().build_index().map(drop)
    }

    /// The store the title-only records are in (empty when there are none).
    pub fn store(&self) -> &dyn VectorStore {
        self.held.store()
    }

    /// Deletes the store, if the records went into one: its folder, or its server collection.
    pub fn discard(self) -> Result<()> {
        if let Held::Engine(store) = self.held {
            store.discard()?;
            drop(store);
            if self.dir.exists() {
                std::fs::remove_dir_all(&self.dir).map_err(|e| Error::io(&self.dir, e))?;
            }
        }
        Ok(())
    }
}

#[cfg(all(test, feature = "edge"))]
mod tests {
    use super::*;
    use crate::store::SearchOptions;

    /// `count` distinct unit vectors of 16 dimensions.
    fn vectors(count: usize) -> Vec<Vec<f32>> {
        (0..count)
            .map(|i| {
                let mut v: Vec<f32> = (0..16).map(|j| ((i * 7 + j * 13) as f32).sin()).collect();
                crate::embed::normalize(&mut v);
                v
            })
            .collect()
    }

    fn title_only_store(dir: &Path, full_scan_kb: usize) -> TitleOnlyStore {
        TitleOnlyStore {
            spec: StoreSpec::default(),
            dir: dir.join("edge-title-only"),
            dimensions: 16,
            graph: GraphSettings {
                full_scan_kb,
                ..GraphSettings::default()
            },
            held: Held::Memory(MemoryStore::new(16)),
        }
    }

    /// Records past the scan size move into a store with a graph, and are found there as in
    /// memory; the store's folder goes with [`TitleOnlyStore::discard`].
    #[test]
    fn records_past_the_scan_size_move_into_a_store_and_are_found_alike() {
        let dir = tempfile::tempdir().unwrap();
        let vectors = vectors(600);
        let ids: Vec<String> = (0..vectors.len()).map(|i| format!("title-{i}")).collect();
        // 600 vectors of 64 bytes: 37.5 KB, over a scan size of 8 KB.
        let mut stored = title_only_store(dir.path(), 8);
        let mut scanned = title_only_store(dir.path(), 20_000);
        for (ids, vectors) in ids.chunks(100).zip(vectors.chunks(100)) {
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let vectors: Vec<&[f32]> = vectors.iter().map(Vec::as_slice).collect();
            stored.add(&ids, &vectors).unwrap();
            scanned.add(&ids, &vectors).unwrap();
        }
        assert!(matches!(stored.held, Held::Engine(_)));
        assert!(matches!(scanned.held, Held::Memory(_)));
        stored.finish().unwrap();
        let queries: Vec<&[f32]> = vectors.iter().step_by(7).map(Vec::as_slice).collect();
        let options = SearchOptions {
            k: 3,
            with_payload: false,
            exact: false,
        };
        let from_store = stored.store().search(&queries, options).unwrap();
        let from_scan = scanned.store().search(&queries, options).unwrap();
        for ((query, a), b) in (0..).step_by(7).zip(&from_store).zip(&from_scan) {
            let own = crate::store::point_key(&ids[query]);
            assert_eq!(a[0].key, own, "record {query} finds itself in the store");
            assert_eq!(b[0].key, own, "record {query} finds itself in memory");
        }
        assert!(dir.path().join("edge-title-only").exists());
        stored.discard().unwrap();
        scanned.discard().unwrap();
        assert!(!dir.path().join("edge-title-only").exists());
    }
}
