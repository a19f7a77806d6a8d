//! Vector stores: where document vectors live and are searched by cosine, behind one small,
//! synchronous [`VectorStore`] trait over this crate's own types.
//!
//! Three implement it:
//! - [`MemoryStore`]: the vectors in memory, searched exactly by matrix products; for sets
//!   small enough to scan, and the engine the shared suite always runs on.
//! - [`EdgeStore`] (feature `edge`, the default): Qdrant's embedded engine, in-process,
//!   persisted in a folder. It has no background optimiser: until [`VectorStore::build_index`]
//!   runs, search is exact (brute force); afterwards it goes through an HNSW graph.
//! - `ServerStore` (feature `qdrant`): a Qdrant server or cluster over gRPC, for collections
//!   one machine cannot hold.
//!
//! Points are keyed by a 64-bit hash of the document id ([`point_key`]) and carry the id, the
//! document's MinHash signature and its shingle count as payload, so that a searcher needs
//! nothing else to confirm a candidate; and, for a record with more than a title, its title's
//! vector, which a later batch's title-only copies are compared with.

#[cfg(feature = "edge")]
mod edge;
mod memory;
// How a point's payload is written and read: only the engines (and their tests) store one.
#[cfg(any(feature = "edge", feature = "qdrant", test))]
mod payload;
#[cfg(feature = "qdrant")]
mod server;
mod vector_store;

#[cfg(feature = "edge")]
pub use edge::EdgeStore;
pub use memory::{Key, MemoryStore, best_by_blocks, place, ranked, scan};

#[cfg(feature = "qdrant")]
pub use server::ServerStore;
pub(crate) use vector_store::unit_cosine;
pub use vector_store::{
    Fetched, GraphSettings, Neighbour, OpenMode, Page, Payload, Quantization, Quantized,
    SearchOptions, ServerOptions, StoredPoint, VectorStore, point_key,
};

use std::num::NonZeroU32;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Which engine holds the vectors.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum StoreKind {
    /// Qdrant's embedded engine, in this process (no server).
    Edge,
    /// A Qdrant server or cluster (`--qdrant-url`).
    Qdrant,
}

/// Where the vectors live, as a pipeline file, the flags and an index manifest give it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreSpec {
    /// Vector store (`None`: edge, or qdrant with `qdrant_url`).
    pub store: Option<StoreKind>,
    /// Qdrant server gRPC address, e.g. http://localhost:6334.
    pub qdrant_url: Option<String>,
    /// Collection on the Qdrant server.
    pub collection: String,
    /// Shards of a new server collection, spread over a cluster's nodes.
    pub shards: NonZeroU32,
    /// Copies of each shard on a cluster.
    pub replicas: NonZeroU32,
}

impl Default for StoreSpec {
    /// The engine chosen from the other settings, one shard, one copy.
    fn default() -> Self {
        StoreSpec {
            store: None,
            qdrant_url: None,
            collection: "neardup".into(),
            shards: NonZeroU32::MIN,
            replicas: NonZeroU32::MIN,
        }
    }
}

impl StoreSpec {
    /// The engine: the one named, else a server when an address is given.
    pub fn kind(&self) -> StoreKind {
        self.store.unwrap_or(match self.qdrant_url {
            Some(_) => StoreKind::Qdrant,
            None => StoreKind::Edge,
        })
    }

    /// Checks that a server store has an address and a usable collection name.
    pub fn validate(&self) -> Result<()> {
        if self.kind() == StoreKind::Qdrant {
            self.required_server()?;
        }
        if self.collection.is_empty() || self.collection.len() > 255 {
            return Err(Error::Usage(
                "`collection` must be 1 to 255 characters".into(),
            ));
        }
        Ok(())
    }

    /// The same settings with the engine named (what an index records).
    pub fn resolved(&self) -> StoreSpec {
        StoreSpec {
            store: Some(self.kind()),
            ..self.clone()
        }
    }

    /// The same store under a collection of this process's own, for an index that lives one
    /// run and is deleted after it: on a server, such a run must never take over (and then
    /// delete) a collection it did not create, such as the empty one a `serve` waits on.
    pub fn for_one_run(&self) -> StoreSpec {
        static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        // Room for the suffix within the 255 characters a collection name may have.
        let base: String = self.collection.chars().take(200).collect();
        StoreSpec {
            collection: format!("{base}-run-{}-{nanos:x}-{run}", std::process::id()),
            ..self.clone()
        }
    }

    /// The server to reach; an error without an address.
    pub fn required_server(&self) -> Result<ServerOptions> {
        let url = self.qdrant_url.clone().ok_or_else(|| {
            Error::Usage("`store` qdrant needs `qdrant_url` (e.g. http://localhost:6334)".into())
        })?;
        Ok(ServerOptions {
            url,
            collection: self.collection.clone(),
            shards: self.shards.get(),
            replicas: self.replicas.get(),
        })
    }
}

/// Opens (or, with [`OpenMode::Create`], creates for `dimensions`) the store `spec` names: an
/// edge store in `dir`, or a server collection. A new store builds its graph with `graph`;
/// every store is searched with it.
pub fn open(
    spec: &StoreSpec,
    dir: &Path,
    dimensions: usize,
    mode: OpenMode,
    graph: GraphSettings,
) -> Result<Box<dyn VectorStore>> {
    match spec.kind() {
        StoreKind::Edge => open_edge(dir, dimensions, mode, graph),
        StoreKind::Qdrant => open_server(spec, dimensions, mode, graph),
    }
}

#[cfg(feature = "edge")]
fn open_edge(
    dir: &Path,
    dimensions: usize,
    mode: OpenMode,
    graph: GraphSettings,
) -> Result<Box<dyn VectorStore>> {
    Ok(Box::new(EdgeStore::open_with(
        dir, dimensions, mode, graph,
    )?))
}

#[cfg(not(feature = "edge"))]
fn open_edge(_: &Path, _: usize, _: OpenMode, _: GraphSettings) -> Result<Box<dyn VectorStore>> {
    Err(Error::Usage(
        "this neardup was built without the `edge` feature; rebuild with it or use --store qdrant"
            .into(),
    ))
}

#[cfg(feature = "qdrant")]
fn open_server(
    spec: &StoreSpec,
    dimensions: usize,
    mode: OpenMode,
    graph: GraphSettings,
) -> Result<Box<dyn VectorStore>> {
    spec.validate()?;
    Ok(Box::new(ServerStore::open_with(
        &spec.required_server()?,
        dimensions,
        mode,
        graph,
    )?))
}

#[cfg(not(feature = "qdrant"))]
fn open_server(
    _: &StoreSpec,
    _: usize,
    _: OpenMode,
    _: GraphSettings,
) -> Result<Box<dyn VectorStore>> {
    Err(Error::Usage(
        "this neardup was built without the `qdrant` feature; rebuild with \
         `cargo build --release --features qdrant` to use a Qdrant server"
            .into(),
    ))
}

#[cfg(test)]
pub(crate) mod tests;
