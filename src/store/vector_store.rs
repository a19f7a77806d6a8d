//! What a vector store is ([`VectorStore`]): the points it holds, the neighbours and pages it
//! answers with, and the settings of its graph and quantization, which every engine shares.

use crate::confirm::{Facts, SketchRef};
use crate::error::Result;

/// A document as stored: its key, id, vector and what the confirm stage needs of it.
#[derive(Clone, Copy, Debug)]
pub struct StoredPoint<'a> {
    /// [`point_key`] of the id.
    pub key: u64,
    /// The document id.
    pub id: &'a str,
    /// Unit vector.
    pub vector: &'a [f32],
    /// MinHash signature, shingle count and facts: what lets a search confirm its hits. A
    /// throwaway index whose searcher keeps every sketch itself stores none.
    pub sketch: Option<SketchRef<'a>>,
    /// The vector of the document's title alone, where it has more than a title and the index
    /// keeps it: a later batch's title-only copy is compared with it.
    pub title: Option<&'a [f32]>,
}

impl<'a> StoredPoint<'a> {
    /// The point of document `id`, keyed by [`point_key`] of the id.
    pub fn new(id: &'a str, vector: &'a [f32], sketch: Option<SketchRef<'a>>) -> Self {
        StoredPoint {
            key: point_key(id),
            id,
            vector,
            sketch,
            title: None,
        }
    }

    /// The same point, with the vector of its title alone.
    pub fn with_title(self, title: Option<&'a [f32]>) -> Self {
        StoredPoint { title, ..self }
    }
}

/// A search hit: the point's key and cosine, with its payload when asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct Neighbour {
    /// [`point_key`] of the document id.
    pub key: u64,
    /// Cosine similarity to the query.
    pub cosine: f32,
    /// Id and signature, when the search asked for payload.
    pub payload: Option<Payload>,
}

/// What a point carries besides its vector.
#[derive(Clone, Debug, PartialEq)]
pub struct Payload {
    /// The document id.
    pub id: String,
    /// Its MinHash signature.
    pub signature: Vec<u32>,
    /// Number of distinct shingles behind the signature.
    pub shingles: u32,
    /// The exact facts the evidence rule weighs.
    pub facts: Facts,
    /// The vector of its title alone, where it was stored with one.
    pub title: Option<Vec<f32>>,
}

impl Payload {
    /// What the confirm stage weighs of this document.
    pub fn sketch(&self) -> SketchRef<'_> {
        SketchRef {
            signature: &self.signature,
            shingles: self.shingles,
            facts: self.facts.as_ref(),
        }
    }
}

/// How a search runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchOptions {
    /// Neighbours per query.
    pub k: usize,
    /// Whether hits carry their payload.
    pub with_payload: bool,
    /// Compare with every point instead of walking the HNSW graph: the true top-k, the same on
    /// every run and engine, at the cost of a full scan per query.
    pub exact: bool,
}

/// How an HNSW graph is built and searched: the levers of speed against recall, measured by
/// `cargo bench --bench index` (docs/benchmarks.md, "Vector index levers"). The server store builds and
/// searches with the defaults too, so that both engines give the same answers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GraphSettings {
    /// Links per point.
    pub m: usize,
    /// Candidates kept while building.
    pub ef_construct: usize,
    /// Candidates kept while searching (at least `k`). Qdrant's default let repeated runs on
    /// bib-dedupe differ by 0.005 in accuracy as the approximate top-k changed; 128 keeps them
    /// within 0.001.
    pub ef: usize,
    /// With `Some`, the graph is built and walked on compressed vectors, and the best
    /// `oversampling * k` found are rescored with the full vectors.
    pub quantization: Option<Quantized>,
    /// Whether each graph node stores its neighbours' compressed vectors beside its links
    /// (needs `quantization`), so that a search step reads one block instead of one vector
    /// per neighbour.
    pub inline_vectors: bool,
    /// Points per segment of the embedded store, each with its own graph. Upserts go to one
    /// appendable segment, and building its graph copies it: a million 384-dimensional
    /// vectors in one segment took 2.6 GB more while its graph was built. So a segment's graph
    /// is built as soon as it holds this many points, and later points go to a new segment;
    /// the copy is never larger than one segment. A search visits every segment's graph.
    pub segment_points: usize,
    /// A segment whose vectors take less than this many KB is searched by a full scan (and
    /// the embedded store builds it no graph): exact answers where they are cheap. 20,000 KB holds 20,000 vectors of 256
    /// dimensions; at Qdrant's default (10,000) bib-dedupe's 13,722 documents went through the
    /// embedded store's graph while a server scanned them, and the engines' macro-F1 differed
    /// by 0.0023.
    pub full_scan_kb: usize,
}

impl Default for GraphSettings {
    fn default() -> Self {
        GraphSettings {
            m: 16,
            ef_construct: 100,
            ef: 128,
            quantization: None,
            inline_vectors: false,
            segment_points: 250_000,
            full_scan_kb: 20_000,
        }
    }
}

impl GraphSettings {
    /// The graph for vectors centred on their corpus (`centred`, `--centre`) or as the
    /// embedder made them.
    ///
    /// Centred vectors point every way, and int8 codes keep what tells them apart: the graph
    /// is built and walked on one byte a component, and the best `2 x k` found are rescored
    /// with the full vectors. On 100,000 generated documents that searched at 1.65x the speed
    /// of the full centred vectors and found 0.4 points fewer of the exact neighbours (`cargo
    /// bench --bench index`); a whole `dedup --centre` of them ran 1.65-2.06x faster at the
    /// same accuracy (docs/benchmarks.md, "Vector index levers"). Vectors as made all lean one way, and int8 spends its levels on
    /// that shared part (it found 4% of the exact neighbours), so they keep the full vectors.
    pub fn for_vectors(centred: bool) -> GraphSettings {
        GraphSettings {
            quantization: centred.then_some(Quantized {
                scheme: Quantization::Int8,
                oversampling: 2.0,
            }),
            ..GraphSettings::default()
        }
    }
}

/// Compressed vectors for the graph, and how many candidates to rescore.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quantized {
    /// How each vector is compressed.
    pub scheme: Quantization,
    /// Candidates rescored with the full vectors, as a multiple of `k`.
    pub oversampling: f32,
}

/// Qdrant's vector compressions, measured by `cargo bench --bench index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantization {
    /// One byte a component, scaled to the range of the stored values.
    Int8,
    /// TurboQuant: a random rotation, then 4 bits a component.
    Turbo4,
    /// TurboQuant at 2 bits a component.
    Turbo2,
    /// Binary quantization at 2 bits a component, queries at 8 bits.
    Binary2,
    /// Binary quantization at 1 bit a component (the sign), queries at 8 bits.
    Binary1,
}

impl Quantization {
    /// Every compression: the store tests build a graph on each.
    pub const ALL: [Quantization; 5] = [
        Quantization::Int8,
        Quantization::Turbo4,
        Quantization::Turbo2,
        Quantization::Binary2,
        Quantization::Binary1,
    ];
}

impl std::fmt::Display for Quantization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Quantization::Int8 => "int8",
            Quantization::Turbo4 => "tq4",
            Quantization::Turbo2 => "tq2",
            Quantization::Binary2 => "bq2",
            Quantization::Binary1 => "bq1",
        })
    }
}

/// A stored document fetched by key: payload and vector.
#[derive(Clone, Debug, PartialEq)]
pub struct Fetched {
    /// Id and signature.
    pub payload: Payload,
    /// The stored vector.
    pub vector: Vec<f32>,
}

/// Stored points with their keys, and the key the next page of them starts at.
pub type Page = (Vec<(u64, Fetched)>, Option<u64>);

/// A cosine vector index.
pub trait VectorStore: Send + Sync {
    /// What and where this store is, for logs.
    fn describe(&self) -> String;

    /// Adds or replaces points.
    fn upsert(&self, points: &[StoredPoint<'_>]) -> Result<()>;

    /// Prepares fast search after bulk loading (an HNSW graph); a no-op where the engine does
    /// it by itself. Returns whether an index was built.
    fn build_index(&self) -> Result<bool>;

    /// The `options.k` nearest points to each query, best first.
    fn search(&self, queries: &[&[f32]], options: SearchOptions) -> Result<Vec<Vec<Neighbour>>>;

    /// The points with these keys, in order; `None` where a key is not stored.
    fn fetch(&self, keys: &[u64]) -> Result<Vec<Option<Fetched>>>;

    /// A page of the stored points, by key: up to `limit` of them from the key `from` on (the
    /// first page: `None`), and the key the next page starts at (`None` after the last).
    fn scroll(&self, from: Option<u64>, limit: usize) -> Result<Page>;

    /// Removes points; missing keys are ignored.
    fn delete(&self, keys: &[u64]) -> Result<()>;

    /// Number of points stored.
    fn len(&self) -> Result<usize>;

    /// Whether nothing is stored.
    fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Makes every acknowledged write durable.
    fn flush(&self) -> Result<()>;

    /// Deletes what a throwaway index leaves outside its folder (a server collection); an
    /// embedded store's files go with the folder.
    fn discard(&self) -> Result<()> {
        Ok(())
    }
}

/// Settings of a server store.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// gRPC address, e.g. `http://localhost:6334`.
    pub url: String,
    /// Collection name.
    pub collection: String,
    /// Shards the collection is split into (spread over a cluster's nodes).
    pub shards: u32,
    /// Copies of each shard.
    pub replicas: u32,
}

/// The key of document `id`: its XXH3-64 hash (a Qdrant point id).
pub fn point_key(id: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(id.as_bytes())
}

/// Whether [`super::open`] may make a new store or must find one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// Create the store (with the given dimensions) if there is none.
    Create,
    /// The store must exist: it is part of an index that was built before.
    Existing,
}

/// An engine's score as a cosine: within [-1, 1]. Float rounding makes the score of a
/// vector against itself 1.0000002 at times, which readers of a run rightly refuse.
pub(crate) fn unit_cosine(score: f32) -> f32 {
    score.clamp(-1.0, 1.0)
}
