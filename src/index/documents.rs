//! The two-stage document index: every document's embedding in a vector store, with its id and
//! MinHash signature as payload, plus a manifest of the settings it was built with.
//!
//! Searching it is the two-stage method for one document: the vector store proposes the `k`
//! nearest neighbours by cosine, and the MinHash classifier confirms which are duplicates. The
//! manifest (`neardup-index.json`) records the embedder, store and MinHash settings, so a later
//! process (`neardup query`, `neardup serve`) embeds and signs exactly as the builder did.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::embed::{self, Embedder, EmbedderKind, EmbedderOptions};
use crate::error::{Error, Result};
use crate::io::write_json_pretty;
use crate::pipeline::{Confirm, MinHashConfig, Shingling};
use crate::sketch::{EMPTY_SLOT, LshParams, MinHasher, jaccard_estimate, share_band};
use crate::store::{
    self, Neighbour, ServerOptions, StoreKind, StoredPoint, VectorStore, point_key,
};
use crate::text::{ShingleKind, Shingler, Stoplist};

/// The manifest's file name inside an index folder.
pub const MANIFEST: &str = "neardup-index.json";
/// Where the embedded engine keeps its data inside an index folder.
const EDGE_DIR: &str = "edge";
const FORMAT: u32 = 1;

/// How an index embeds, stores and confirms.
#[derive(Clone, Debug)]
pub struct IndexSettings {
    /// The embedder.
    pub embedder: EmbedderOptions,
    /// Which engine holds the vectors.
    pub store: StoreKind,
    /// The server, for [`StoreKind::Qdrant`].
    pub server: Option<ServerOptions>,
    /// The MinHash classifier that confirms candidates (its shingles, signature length,
    /// threshold, rule and banding; its linkage is the pipeline's business).
    pub minhash: MinHashConfig,
    /// Neighbours below this cosine are not candidates.
    pub min_cosine: f32,
    /// A document with fewer distinct shingles is never confirmed as a duplicate: two records
    /// titled just "editorial" share every word and say nothing about each other.
    pub min_shingles: u32,
}

/// What the manifest records: everything needed to embed and sign like the builder did.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    format: u32,
    embedder: EmbedderKind,
    /// The embedder's own description (model folder or file).
    pub embedder_source: String,
    dimensions: usize,
    max_tokens: usize,
    model_dir: Option<PathBuf>,
    glove: Option<PathBuf>,
    store: StoreKind,
    qdrant_url: Option<String>,
    collection: Option<String>,
    word_ngram: Option<usize>,
    char_ngram: Option<usize>,
    stopwords: Vec<String>,
    num_perm: usize,
    seed: u64,
    threshold: f64,
    confirm: Confirm,
    bands: usize,
    rows: usize,
    min_cosine: f32,
    min_shingles: u32,
    /// Documents indexed.
    pub documents: usize,
}

/// A confirmed or rejected neighbour of a query.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Match {
    /// The neighbour's document id.
    pub id: String,
    /// Cosine of the embeddings.
    pub cosine: f32,
    /// Jaccard estimate of the MinHash signatures.
    pub jaccard_estimate: f64,
    /// Whether the MinHash classifier confirms it as a duplicate.
    pub duplicate: bool,
}

/// An open two-stage index.
pub struct DocumentIndex {
    dir: PathBuf,
    manifest: Manifest,
    embedder: Box<dyn Embedder>,
    store: Box<dyn VectorStore>,
    shingler: Shingler,
    hasher: MinHasher,
    lsh: LshParams,
}

impl DocumentIndex {
    /// Creates an index in `dir` (which must not hold one), loading the embedder.
    pub fn create(dir: &Path, settings: &IndexSettings) -> Result<Self> {
        if dir.join(MANIFEST).exists() {
            return Err(Error::Usage(format!(
                "{} already holds a neardup index; give a new folder, or delete this one first",
                dir.display()
            )));
        }
        let embedder = embed::load(&settings.embedder)?;
        let minhash = &settings.minhash;
        let lsh = minhash.lsh_params();
        let (word_ngram, char_ngram) = match minhash.shingling.kind {
            ShingleKind::Words(n) => (Some(n), None),
            ShingleKind::Chars(n) => (None, Some(n)),
        };
        let manifest = Manifest {
            format: FORMAT,
            embedder: settings.embedder.kind,
            embedder_source: embedder.describe(),
            dimensions: embedder.dimensions(),
            max_tokens: settings.embedder.max_tokens,
            model_dir: settings.embedder.model_dir.clone(),
            glove: settings.embedder.glove.clone(),
            store: settings.store,
            qdrant_url: settings.server.as_ref().map(|s| s.url.clone()),
            collection: settings.server.as_ref().map(|s| s.collection.clone()),
            word_ngram,
            char_ngram,
            stopwords: minhash.shingling.stoplist.words(),
            num_perm: minhash.num_perm,
            seed: minhash.seed,
            threshold: minhash.threshold,
            confirm: minhash.confirm,
            bands: lsh.bands,
            rows: lsh.rows,
            min_cosine: settings.min_cosine,
            min_shingles: settings.min_shingles,
            documents: 0,
        };
        let store = store::open(
            settings.store,
            &dir.join(EDGE_DIR),
            manifest.dimensions,
            settings.server.as_ref(),
        )?;
        Self::assemble(dir, manifest, embedder, store, minhash.shingling.clone())
    }

    /// Opens the index in `dir`, with models looked up under `models_root`. A server index
    /// reconnects to the collection it was built with, at `qdrant_url` when given (the server
    /// may have moved) or at the recorded address.
    pub fn open(dir: &Path, models_root: &Path, qdrant_url: Option<&str>) -> Result<Self> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::Usage(format!(
                    "{} is not a neardup index (no {MANIFEST}); build one with `neardup index INPUT --index {}`",
                    dir.display(),
                    dir.display()
                ))
            } else {
                Error::io(&path, e)
            }
        })?;
        let manifest: Manifest = serde_json::from_str(&text).map_err(|e| {
            Error::input(
                crate::error::Location::file(&path),
                None,
                e.to_string(),
                "the manifest is damaged; rebuild the index",
            )
        })?;
        if manifest.format != FORMAT {
            return Err(Error::Usage(format!(
                "{} has index format {}, this neardup reads {FORMAT}; rebuild the index",
                path.display(),
                manifest.format
            )));
        }
        let embedder = embed::load(&EmbedderOptions {
            kind: manifest.embedder,
            models_root: models_root.to_owned(),
            model_dir: manifest.model_dir.clone(),
            glove: manifest.glove.clone(),
            max_tokens: manifest.max_tokens,
            ..EmbedderOptions::default()
        })?;
        if embedder.dimensions() != manifest.dimensions {
            return Err(Error::Usage(format!(
                "the index was built with {}-dimensional vectors, the embedder now makes {}; rebuild the index",
                manifest.dimensions,
                embedder.dimensions()
            )));
        }
        let server = qdrant_url
            .map(str::to_owned)
            .or_else(|| manifest.qdrant_url.clone())
            .map(|url| ServerOptions {
                url,
                collection: manifest.collection.clone().unwrap_or_default(),
                shards: 1,
                replicas: 1,
            });
        let store = store::open(
            manifest.store,
            &dir.join(EDGE_DIR),
            manifest.dimensions,
            server.as_ref(),
        )?;
        let kind = match (manifest.word_ngram, manifest.char_ngram) {
            (_, Some(n)) => ShingleKind::Chars(n),
            (n, None) => ShingleKind::Words(n.unwrap_or(1)),
        };
        let shingling = Shingling {
            kind,
            stoplist: Stoplist::from_words(&manifest.stopwords),
        };
        Self::assemble(dir, manifest, embedder, store, shingling)
    }

    fn assemble(
        dir: &Path,
        manifest: Manifest,
        embedder: Box<dyn Embedder>,
        store: Box<dyn VectorStore>,
        shingling: Shingling,
    ) -> Result<Self> {
        Ok(DocumentIndex {
            dir: dir.to_owned(),
            hasher: MinHasher::new(manifest.num_perm, manifest.seed),
            lsh: LshParams {
                bands: manifest.bands,
                rows: manifest.rows,
            },
            shingler: Shingler::new(shingling.kind, shingling.stoplist),
            manifest,
            embedder,
            store,
        })
    }

    /// The settings it was built with.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The embedder.
    pub fn embedder(&self) -> &dyn Embedder {
        self.embedder.as_ref()
    }

    /// The vector store.
    pub fn store(&self) -> &dyn VectorStore {
        self.store.as_ref()
    }

    /// The MinHash signature of `text` and its number of distinct shingles.
    pub fn sign(&self, text: &str) -> (Vec<u32>, u32) {
        let shingles = self.shingler.shingle_set(text);
        (self.hasher.sign(&shingles), shingles.len() as u32)
    }

    /// Adds documents with their vectors, signatures and shingle counts.
    pub fn add(
        &self,
        ids: &[&str],
        vectors: &[Vec<f32>],
        signatures: &[&[u32]],
        shingles: &[u32],
    ) -> Result<()> {
        let points: Vec<StoredPoint<'_>> = ids
            .iter()
            .zip(vectors)
            .zip(signatures)
            .zip(shingles)
            .map(|(((id, vector), signature), &shingles)| StoredPoint {
                key: point_key(id),
                id,
                vector,
                signature,
                shingles,
            })
            .collect();
        self.store.upsert(&points)
    }

    /// Builds the search graph (if the engine wants one), makes everything durable and writes
    /// the manifest with the document count. Returns whether a graph was built.
    pub fn finish(&mut self) -> Result<bool> {
        let built = self.store.build_index()?;
        self.store.flush()?;
        self.manifest.documents = self.store.len()?;
        write_json_pretty(&self.dir.join(MANIFEST), &self.manifest)?;
        Ok(built)
    }

    /// Whether the MinHash classifier takes a candidate (two documents' signatures and shingle
    /// counts, and their cosine) as a duplicate, and its Jaccard estimate.
    pub fn confirm(&self, a: (&[u32], u32), b: (&[u32], u32), cosine: f32) -> (f64, bool) {
        let jaccard = if is_empty_signature(a.0) || is_empty_signature(b.0) {
            0.0
        } else {
            jaccard_estimate(a.0, b.0)
        };
        let candidate = cosine >= self.manifest.min_cosine
            && jaccard > 0.0
            && a.1.min(b.1) >= self.manifest.min_shingles;
        let duplicate = candidate
            && match self.manifest.confirm {
                Confirm::Estimate => jaccard >= self.manifest.threshold,
                Confirm::Band => share_band(a.0, b.0, self.lsh),
            };
        (jaccard, duplicate)
    }

    /// The `k` nearest documents to a text, each with its verdict.
    pub fn similar_to_text(&self, text: &str, k: usize) -> Result<Vec<Match>> {
        let (vector, signature, shingles) = self.sketch(text)?;
        self.similar(&vector, (&signature, shingles), k, None)
    }

    /// What the index keeps of a text: its vector, signature and shingle count.
    fn sketch(&self, text: &str) -> Result<(Vec<f32>, Vec<u32>, u32)> {
        let vector = self.embedder.embed(&[text])?.remove(0);
        let (signature, shingles) = self.sign(text);
        Ok((vector, signature, shingles))
    }

    /// The `k` nearest other documents to the indexed document `id`, each with its verdict.
    pub fn similar_to_id(&self, id: &str, k: usize) -> Result<Vec<Match>> {
        let key = point_key(id);
        let fetched = self.store.fetch(&[key])?.remove(0).ok_or_else(|| {
            Error::Usage(format!(
                "no document {id:?} in the index {} ({} documents); check the id",
                self.dir.display(),
                self.manifest.documents
            ))
        })?;
        let own = (&fetched.payload.signature[..], fetched.payload.shingles);
        self.similar(&fetched.vector, own, k, Some(key))
    }

    /// Whether document `id` is indexed.
    pub fn contains(&self, id: &str) -> Result<bool> {
        Ok(self.store.fetch(&[point_key(id)])?[0].is_some())
    }

    /// Adds one document and makes it durable; returns its `k` nearest documents (found before
    /// it was added) with their verdicts. The caller serialises writes.
    pub fn insert(&self, id: &str, text: &str, k: usize) -> Result<Vec<Match>> {
        let (vector, signature, shingles) = self.sketch(text)?;
        let found = self.similar(&vector, (&signature, shingles), k, None)?;
        self.add(&[id], &[vector], &[&signature], &[shingles])?;
        self.store.flush()?;
        Ok(found)
    }

    /// Removes document `id` durably; returns whether it was there. The caller serialises
    /// writes.
    pub fn remove(&self, id: &str) -> Result<bool> {
        if !self.contains(id)? {
            return Ok(false);
        }
        self.store.delete(&[point_key(id)])?;
        self.store.flush()?;
        Ok(true)
    }

    fn similar(
        &self,
        vector: &[f32],
        signature: (&[u32], u32),
        k: usize,
        exclude: Option<u64>,
    ) -> Result<Vec<Match>> {
        let limit = k + usize::from(exclude.is_some());
        let hits = self.store.search(&[vector], limit, true)?.remove(0);
        Ok(hits
            .into_iter()
            .filter(|hit| Some(hit.key) != exclude)
            .take(k)
            .filter_map(|hit: Neighbour| {
                let payload = hit.payload?;
                let other = (&payload.signature[..], payload.shingles);
                let (jaccard, duplicate) = self.confirm(signature, other, hit.cosine);
                Some(Match {
                    id: payload.id,
                    cosine: hit.cosine,
                    jaccard_estimate: jaccard,
                    duplicate,
                })
            })
            .collect())
    }
}

fn is_empty_signature(signature: &[u32]) -> bool {
    signature.iter().all(|&slot| slot == EMPTY_SLOT)
}
