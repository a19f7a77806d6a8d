//! The two-stage document index: every document's embedding in a vector store, with its id and
//! MinHash signature as payload, plus a manifest of the settings it was built with.
//!
//! Searching it is the two-stage method for one document: the vector store proposes the `k`
//! nearest neighbours by cosine, and the MinHash classifier confirms which are duplicates. The
//! manifest (`neardup-index.json`) records the embedder, store and MinHash settings, so a later
//! process (`neardup query`, `neardup serve`) embeds and signs exactly as the builder did.

mod lookups;
mod manifest;
mod settings;
mod snapshot;
mod writes;

pub use manifest::{MANIFEST, Manifest};
pub use settings::IndexSettings;
pub use snapshot::{
    CELLS, Collection, SNAPSHOT, Snapshot, SnapshotSpool, StoredCells, TitleVectors,
};

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde::Serialize;

use self::manifest::FORMAT;
use crate::confirm::{Confirmer, Rule, Sketch, SketchRef};
use crate::embed::{self, Centre, Embedder};
use crate::error::{Error, Result};
use crate::io::Record;
use crate::output::write_json_pretty;
use crate::store::{self, GraphSettings, OpenMode, SearchOptions, StoredPoint, VectorStore};

use super::journal::Journal;

/// Where the embedded engine keeps its data inside an index folder.
const EDGE_DIR: &str = "edge";
/// Points [`DocumentIndex::open`] fetches back to check the store.
const STORE_CHECK_POINTS: usize = 8;
/// How far from 1 a stored vector's length may be: the engines keep unit vectors in `f32`.
const UNIT_TOLERANCE: f32 = 1e-3;

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
    /// The rule that decided.
    pub rule: Rule,
}

/// A document ready to be added: see [`DocumentIndex::prepare`].
pub struct NewDocument {
    text: String,
    title_len: Option<usize>,
    vector: Vec<f32>,
    /// Its title's vector, where it has more than a title.
    title: Option<Vec<f32>>,
    sketch: Sketch,
    found: Vec<Match>,
}

impl NewDocument {
    /// Its vector, as it will be stored.
    pub fn vector(&self) -> &[f32] {
        &self.vector
    }

    /// Its title's vector, where it has more than a title.
    pub fn title(&self) -> Option<&[f32]> {
        self.title.as_deref()
    }

    /// Its sketch.
    pub fn sketch(&self) -> SketchRef<'_> {
        self.sketch.as_ref()
    }

    /// It as stored under `id`.
    pub fn point<'a>(&'a self, id: &'a str) -> StoredPoint<'a> {
        StoredPoint::new(id, &self.vector, Some(self.sketch())).with_title(self.title())
    }
}

/// An open two-stage index.
pub struct DocumentIndex {
    dir: PathBuf,
    manifest: Manifest,
    embedder: Box<dyn Embedder>,
    store: Box<dyn VectorStore>,
    confirmer: Confirmer,
    /// Single writes since the store's last flush, once there has been one (see
    /// [`Journal`]).
    journal: Mutex<Option<Journal>>,
    /// Whether the manifest on disk says [`FORMAT`]; an older one is rewritten before the
    /// first write.
    manifest_current: Mutex<bool>,
    /// What vectors are centred on: set from the manifest, or by [`DocumentIndex::learn_centre`]
    /// while the index is built; never set for an index without `centre`.
    centre: OnceLock<Centre>,
}

impl DocumentIndex {
    /// Creates an index in `dir` (which must not hold one), loading the embedder with models
    /// under `models_root`.
    pub fn create(dir: &Path, settings: &IndexSettings, models_root: &Path) -> Result<Self> {
        if dir.join(MANIFEST).exists() {
            return Err(Error::Usage(format!(
                "{} already holds a neardup index; give a new folder, or delete this one first",
                dir.display()
            )));
        }
        if dir.join(EDGE_DIR).exists() {
            // Another build may still be filling it: then say whose.
            #[cfg(feature = "edge")]
            store::EdgeStore::check_free(&dir.join(EDGE_DIR))?;
            // Its points (and how its graph is built) are those of another run.
            return Err(Error::Usage(format!(
                "{} holds the vector store of an index whose build did not finish (it has no \
                 {MANIFEST}); delete the folder, or give a new one",
                dir.display()
            )));
        }
        let settings = settings.resolved()?;
        let embedder = embed::load(&settings.embedder, models_root)?;
        // The manifest goes here whichever store holds the vectors.
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let store = store::open(
            &settings.store,
            &dir.join(EDGE_DIR),
            embedder.dimensions(),
            OpenMode::Create,
            GraphSettings::for_vectors(settings.centre),
        )?;
        let manifest = Manifest {
            format: FORMAT,
            embedder_source: embedder.describe(),
            model: embedder.identity().clone(),
            dimensions: embedder.dimensions(),
            documents: 0,
            sketch_digest: Some(settings.confirm.sketch_digest()),
            centred_on: None,
            vector_digest: None,
            confirm_model_sha256: (settings.confirm.confirm_model.as_deref())
                .map(crate::embed::file_sha256)
                .transpose()?,
            settings,
        }
        .with_vector_digest();
        Self::assemble(dir, manifest, embedder, store)
    }

    /// Opens the index in `dir`, with models looked up under `models_root`. A server index
    /// reconnects to the collection it was built with, at `qdrant_url` when given (the server
    /// may have moved) or at the recorded address.
    pub fn open(dir: &Path, models_root: &Path, qdrant_url: Option<&str>) -> Result<Self> {
        let mut manifest = Manifest::read(dir)?;
        if let Some(url) = qdrant_url {
            manifest.settings.store.qdrant_url = Some(url.to_owned());
        }
        let embedder = embed::load(&manifest.settings.embedder, models_root)?;
        check_model(dir, &manifest, embedder.as_ref())?;
        let store = store::open(
            &manifest.settings.store,
            &dir.join(EDGE_DIR),
            manifest.dimensions,
            OpenMode::Existing,
            GraphSettings::for_vectors(manifest.settings.centre),
        )?;
        let index = Self::assemble(dir, manifest, embedder, store)?;
        let redone = index.redo_journal()?;
        index.check_store(redone)?;
        Ok(index)
    }

    /// Checks what opening can check of the store, so that a damaged one is refused instead
    /// of answering as if it held nothing: its point count against the manifest's (unless a
    /// journal was just redone, which changes it: the manifest then learns the new count), and
    /// a few points found by a search, each of which must fetch back with a unit vector and
    /// a sketch this index can weigh.
    fn check_store(&self, redone: bool) -> Result<()> {
        let damaged = |problem: String| Error::Damaged {
            path: self.dir.clone(),
            problem,
            fix: None,
        };
        let stored = self.store.len()?;
        if redone {
            self.write_manifest(stored)?;
        } else if stored != self.manifest.documents {
            return Err(damaged(format!(
                "its vector store holds {stored} documents, the manifest says {}",
                self.manifest.documents
            )));
        }
        if stored == 0 {
            return Ok(());
        }
        // A store that says it is damaged already names its folder and the fix.
        let unreadable = |e: Error| match e {
            Error::Damaged { .. } => e,
            e => damaged(format!("its vector store cannot be read: {e}")),
        };
        let mut probe = vec![0.0; self.manifest.dimensions];
        probe[0] = 1.0;
        let search = SearchOptions {
            k: stored.min(STORE_CHECK_POINTS),
            with_payload: true,
            exact: false,
        };
        let hits = self
            .store
            .search(&[&probe], search)
            .map_err(unreadable)?
            .remove(0);
        if hits.is_empty() {
            return Err(damaged(format!(
                "a search of its {stored} documents finds none"
            )));
        }
        let keys: Vec<u64> = hits.iter().map(|hit| hit.key).collect();
        let fetched = self.store.fetch(&keys).map_err(unreadable)?;
        for (hit, point) in hits.iter().zip(fetched) {
            let point = point.ok_or_else(|| {
                damaged(format!(
                    "point {:x} is found by a search and cannot be fetched",
                    hit.key
                ))
            })?;
            let norm = point.vector.iter().map(|x| x * x).sum::<f32>().sqrt();
            if !((1.0 - UNIT_TOLERANCE)..=(1.0 + UNIT_TOLERANCE)).contains(&norm) {
                return Err(damaged(format!(
                    "document {:?} has a vector of norm {norm}, where every stored vector is a \
                     unit vector",
                    point.payload.id
                )));
            }
            self.check_signature(&point.payload)?;
        }
        Ok(())
    }

    fn assemble(
        dir: &Path,
        manifest: Manifest,
        embedder: Box<dyn Embedder>,
        store: Box<dyn VectorStore>,
    ) -> Result<Self> {
        let settings = &manifest.settings;
        if let (Some(recorded), Some(path)) = (
            &manifest.confirm_model_sha256,
            settings.confirm.confirm_model.as_deref(),
        ) {
            let now = crate::embed::file_sha256(path)?;
            if now != *recorded {
                return Err(Error::Usage(format!(
                    "{}: the learned rule's model changed since the index was built (sha256 \
                     {recorded}, now {now}): put the model it was built with back, or build the \
                     index again",
                    path.display()
                )));
            }
        }
        Ok(DocumentIndex {
            dir: dir.to_owned(),
            confirmer: settings.confirmer_for(embedder.identity())?,
            embedder,
            store,
            journal: Mutex::new(None),
            manifest_current: Mutex::new(manifest.format == FORMAT),
            centre: manifest
                .centred_on
                .clone()
                .map(Centre::from_vec)
                .map_or_else(OnceLock::new, OnceLock::from),
            manifest,
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

    /// What the confirm stage needs of a record: its MinHash signature, distinct shingle
    /// count and facts.
    pub fn sign(&self, record: &Record) -> Sketch {
        self.confirmer.sign(record)
    }

    /// What signs and confirms as this index does.
    pub fn confirmer(&self) -> &Confirmer {
        &self.confirmer
    }

    /// Sets the centre from the first `documents` embedded into a new index with `centre` set,
    /// once: later calls and an index without `centre` leave it as it is. With fewer than
    /// [`MIN_CENTRE_DOCUMENTS`](crate::embed::MIN_CENTRE_DOCUMENTS) documents there is no centre,
    /// and the vectors stay as made for good (the manifest records none): a corpus that small
    /// is searched by a full scan, where centring does not help. Its store still keeps int8
    /// codes beside the vectors ([`GraphSettings::for_vectors`]), which a graph built once
    /// `serve` has grown it past the full-scan size would walk with less recall than centred
    /// codes: such an index is better rebuilt from its documents.
    pub fn learn_centre(&self, documents: &[Vec<f32>]) {
        if !self.manifest.settings.centre || self.centre.get().is_some() {
            return;
        }
        match Centre::of(documents) {
            Some(centre) => {
                let _ = self.centre.set(centre);
            }
            // The default on a small corpus, not a fault: said, not warned.
            None => tracing::info!(
                documents = documents.len(),
                least = crate::embed::MIN_CENTRE_DOCUMENTS,
                "too few documents to learn a centre from: the vectors stay as made"
            ),
        }
    }

    /// Whether vectors are centred before they are stored or searched.
    pub fn centred(&self) -> bool {
        self.centre.get().is_some()
    }

    /// Centres vectors on the centre of the index `other` describes, where it has one, so that
    /// they compare with the vectors it stores: an index that learns none of its own (a run
    /// checked against `other`; where `other` has no centre, the run's settings turn `centre`
    /// off).
    pub fn centre_on(&self, other: &Manifest) {
        if let Some(centre) = &other.centred_on {
            let _ = self.centre.set(Centre::from_vec(centre.clone()));
        }
    }

    /// Whether a search must compare the full vectors: an index with `centre` set that had too
    /// few documents to learn one keeps int8 codes of its vectors as made, which rank them
    /// badly (uncentred, the graph's codes found 4% of the true top 21: benchmarks.md); an
    /// index that small is scanned anyway.
    pub fn search_exactly(&self) -> bool {
        self.manifest.settings.centre && self.centre.get().is_none()
    }

    /// Embeds `texts` as this index stores and searches them: centred where it has a centre.
    pub fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut vectors = self.embedder.embed(texts)?;
        self.centre_all(&mut vectors);
        Ok(vectors)
    }

    /// Centres vectors the embedder made, where the index has a centre.
    pub fn centre_all<'v>(&self, vectors: impl IntoIterator<Item = &'v mut Vec<f32>>) {
        if let Some(centre) = self.centre.get() {
            vectors.into_iter().for_each(|v| centre.apply(v));
        }
    }

    /// Adds documents: each with its vector, and with its sketch and title vector where given.
    /// A throwaway index whose searcher keeps every sketch itself stores none: the store then
    /// holds vectors and ids only, and cannot confirm a hit by itself.
    pub fn add(&self, points: &[StoredPoint<'_>]) -> Result<()> {
        self.upgrade_manifest()?;
        self.forget_snapshot()?;
        self.store.upsert(points)
    }

    /// Builds the search graph (if the engine wants one), makes everything durable and writes
    /// the manifest with the document count. Returns whether a graph was built.
    pub fn finish(&mut self) -> Result<bool> {
        let built = self.store.build_index()?;
        self.store.flush()?;
        self.manifest = self.current_manifest(self.store.len()?);
        write_json_pretty(&self.dir.join(MANIFEST), &self.manifest)?;
        Ok(built)
    }

    /// Closes the store and drops the embedder, keeping what signs and confirms as this
    /// index does.
    pub fn into_confirmer(self) -> Confirmer {
        self.confirmer
    }
}

/// Refuses `embedder` unless it is the model the index in `dir` (`manifest`) was built with.
pub(super) fn check_model(dir: &Path, manifest: &Manifest, embedder: &dyn Embedder) -> Result<()> {
    if embedder.identity() != &manifest.model {
        // One name with other bits: most likely the static model, which each machine derives.
        let derived_elsewhere = if embedder.identity().name == manifest.model.name {
            " (a static model derived on another machine has other bits: copy the models folder \
             the index was built with)"
        } else {
            ""
        };
        return Err(Error::Usage(format!(
            "the index in {} was built with the model {} (sha256 {}), and the one found now is {} \
             (sha256 {}, {}): point --models (or the index's model folder) at the model it was \
             built with{derived_elsewhere}, or rebuild the index",
            dir.display(),
            manifest.model.name,
            manifest.model.sha256,
            embedder.identity().name,
            embedder.identity().sha256,
            embedder.describe()
        )));
    }
    if embedder.dimensions() != manifest.dimensions {
        return Err(Error::Usage(format!(
            "the index was built with {}-dimensional vectors, the embedder now makes {}; rebuild \
             the index",
            manifest.dimensions,
            embedder.dimensions()
        )));
    }
    Ok(())
}
