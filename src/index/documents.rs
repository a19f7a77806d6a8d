//! The two-stage document index: every document's embedding in a vector store, with its id and
//! MinHash signature as payload, plus a manifest of the settings it was built with.
//!
//! Searching it is the two-stage method for one document: the vector store proposes the `k`
//! nearest neighbours by cosine, and the MinHash classifier confirms which are duplicates. The
//! manifest (`neardup-index.json`) records the embedder, store and MinHash settings, so a later
//! process (`neardup query`, `neardup serve`) embeds and signs exactly as the builder did.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

use serde::{Deserialize, Serialize};

use crate::confirm::{ConfirmSettings, Confirmer, Evidence, Rule, Sketch, SketchRef, Verdict};
use crate::embed::{self, Centre, Embedder, EmbedderSpec, ModelIdentity};
use crate::error::{Error, Location, Result};
use crate::io::Record;
use crate::io::write_json_pretty;
use crate::settings::MethodName;
use crate::settings::{SettingError, read_among};
use crate::store::{
    self, Fetched, GraphSettings, Neighbour, OpenMode, SearchOptions, StoreSpec, StoredPoint,
    VectorStore, point_key,
};

use super::journal::{self, Entry, Journal};

/// The manifest's file name inside an index folder.
pub const MANIFEST: &str = "neardup-index.json";
/// Where the embedded engine keeps its data inside an index folder.
const EDGE_DIR: &str = "edge";
/// Version 2 records the settings through the same types a pipeline file uses; version 5
/// stores signatures as base64 strings; version 6 may record a corpus centre; version 7 records
/// the digest of the settings that shaped its sketches; version 8 the digest of what shaped its
/// vectors.
const FORMAT: u64 = 8;
/// The oldest format this version opens: format 4 differs only in its points' signatures,
/// which are read either way, formats 4 and 5 have no centre, and formats before 7 no sketch
/// digest, formats before 8 no vector digest. Its manifest says 8 from the first write on, so that an older neardup refuses the
/// index instead of failing on a new point.
const OLDEST_FORMAT: u64 = 4;

/// Points [`DocumentIndex::open`] fetches back to check the store.
const STORE_CHECK_POINTS: usize = 8;
/// How far from 1 a stored vector's length may be: the engines keep unit vectors in `f32`.
const UNIT_TOLERANCE: f32 = 1e-3;

/// How an index embeds, stores and confirms: the two-stage settings that outlive a run, as a
/// pipeline file, the flags and the manifest give them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexSettings {
    /// The embedder.
    #[serde(flatten)]
    pub embedder: EmbedderSpec,
    /// Which engine holds the vectors.
    #[serde(flatten)]
    pub store: StoreSpec,
    /// Shingles, signatures and the rule that confirms a candidate.
    #[serde(flatten)]
    pub confirm: ConfirmSettings,
    /// Neighbours below this cosine are not candidates.
    pub min_cosine: f32,
    /// Centre every vector on the mean of the first documents embedded (see [`Centre`]) before
    /// it is stored or searched, and build the graph on int8 codes
    /// ([`GraphSettings::for_vectors`]).
    pub centre: bool,
}

impl Default for IndexSettings {
    fn default() -> Self {
        IndexSettings {
            embedder: EmbedderSpec::default(),
            store: StoreSpec::default(),
            confirm: ConfirmSettings::default(),
            min_cosine: crate::search::DEFAULT_MIN_COSINE,
            centre: embed::CENTRE_BY_DEFAULT,
        }
    }
}

impl IndexSettings {
    /// Checks every part (each value's range is checked where the settings are read).
    pub fn validate(&self) -> Result<()> {
        self.embedder.validate()?;
        self.store.validate()?;
        self.confirm.validate()
    }

    /// What signs records and confirms candidates under these settings.
    pub fn confirmer(&self) -> Result<Confirmer> {
        Confirmer::new(&self.confirm, self.min_cosine)
    }

    /// The same settings for an index that lives one run (see [`StoreSpec::for_one_run`]).
    pub fn for_one_run(&self) -> IndexSettings {
        IndexSettings {
            store: self.store.for_one_run(),
            ..self.clone()
        }
    }

    /// The same settings with nothing left to a default, a file or the current folder: what
    /// the manifest records.
    pub fn resolved(&self) -> Result<IndexSettings> {
        self.validate()?;
        Ok(IndexSettings {
            embedder: self.embedder.resolved()?,
            store: self.store.resolved(),
            confirm: self.confirm.resolved()?,
            ..self.clone()
        })
    }
}

/// What the manifest records: everything needed to embed and sign like the builder did.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Manifest {
    format: u64,
    /// The embedder's own description (model and where it was loaded from).
    pub embedder_source: String,
    /// The model the vectors were made with; opening with another is refused.
    pub model: ModelIdentity,
    /// Length of every vector.
    pub dimensions: usize,
    /// Documents in the store when it was last flushed (built, or closed after writes).
    pub documents: usize,
    /// [`ConfirmSettings::sketch_digest`] of the settings the stored sketches were made with;
    /// absent before format 7.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sketch_digest: Option<String>,
    /// The mean every vector was centred on, with `centre` set and enough documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub centred_on: Option<Vec<f32>>,
    /// [`Manifest::vector_digest`] as written; absent before format 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    vector_digest: Option<String>,
    /// The settings, resolved.
    #[serde(flatten)]
    pub settings: IndexSettings,
}

impl Manifest {
    /// SHA-256 of everything that shapes a stored vector: the embedder, its model's identity,
    /// the dimensions and the centre. A query vector made under other values would not be
    /// comparable with the stored ones, and every search would quietly miss.
    fn vector_digest(&self) -> String {
        use sha2::{Digest, Sha256};
        let shaping = serde_json::json!({
            "embedder": self.settings.embedder.embedder,
            "max_tokens": self.settings.embedder.max_tokens,
            "model": self.model,
            "dimensions": self.dimensions,
            "centre": self.settings.centre,
            "centred_on": self.centred_on,
        });
        format!("{:x}", Sha256::digest(shaping.to_string().as_bytes()))
    }

    /// The same manifest with its vector digest computed.
    fn with_vector_digest(self) -> Manifest {
        Manifest {
            vector_digest: Some(self.vector_digest()),
            ..self
        }
    }

    /// Reads and checks the manifest of the index in `dir`.
    fn read(dir: &Path) -> Result<Manifest> {
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
        let bad = |key: Option<&str>, problem: String| {
            Error::input(
                Location::file(&path),
                key,
                problem,
                "the manifest was changed or damaged: rebuild the index with `neardup index`",
            )
        };
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(None, e.to_string()))?;
        let map = value
            .as_object()
            .ok_or_else(|| bad(None, "not a JSON object".into()))?;
        match map.get("format").and_then(|f| f.as_u64()) {
            Some(OLDEST_FORMAT..=FORMAT) => {}
            format => {
                return Err(Error::Usage(format!(
                    "{} has index format {}, this neardup reads formats {OLDEST_FORMAT} to {FORMAT}: rebuild the index with `neardup index`",
                    path.display(),
                    format.map_or("unknown".into(), |f| f.to_string()),
                )));
            }
        }
        // A manifest written before a setting existed takes its declared default.
        let manifest: Manifest = read_among(MethodName::TwoStage, map)
            .map_err(|SettingError { key, message }| bad(key.as_deref(), message))?;
        manifest
            .settings
            .validate()
            .map_err(|e| bad(None, e.to_string()))?;
        let digest = manifest.settings.confirm.sketch_digest();
        match &manifest.sketch_digest {
            Some(recorded) if *recorded != digest => {
                return Err(bad(
                    None,
                    "the settings that shape signatures (`ngram`, `char_ngram`, `stopwords`, \
                     `num_perm`, `seed`, `hashing`) are not those its documents were signed \
                     with: they were changed after the build"
                        .into(),
                ));
            }
            None if manifest.format >= 7 => {
                return Err(bad(Some("sketch_digest"), "missing".into()));
            }
            _ => {}
        }
        if let Some(centre) = &manifest.centred_on {
            let problem = if centre.len() != manifest.dimensions {
                Some(format!(
                    "`centred_on` holds {} numbers, and the vectors have {} dimensions",
                    centre.len(),
                    manifest.dimensions
                ))
            } else if !centre.iter().all(|x| x.is_finite()) {
                Some("`centred_on` holds a number that is not finite".to_owned())
            } else {
                None
            };
            if let Some(problem) = problem {
                return Err(bad(Some("centred_on"), problem));
            }
        }
        match &manifest.vector_digest {
            Some(recorded) if *recorded != manifest.vector_digest() => {
                return Err(bad(
                    None,
                    "what shapes its vectors (`embedder`, `max_tokens`, `model`, `dimensions`, \
                     `centre`, `centred_on`) is not what its documents were embedded with: it \
                     was changed after the build"
                        .into(),
                ));
            }
            None if manifest.format >= 8 => {
                return Err(bad(Some("vector_digest"), "missing".into()));
            }
            _ => {}
        }
        Ok(manifest)
    }
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
    /// The rule that decided.
    pub rule: Rule,
}

/// A document ready to be added: see [`DocumentIndex::prepare`].
pub struct NewDocument {
    text: String,
    vector: Vec<f32>,
    sketch: Sketch,
    found: Vec<Match>,
}

/// An open two-stage index.
pub struct DocumentIndex {
    dir: PathBuf,
    manifest: Manifest,
    embedder: Box<dyn Embedder>,
    store: Box<dyn VectorStore>,
    confirmer: Confirmer,
    /// Single writes since the store's last flush, once there has been one (see
    /// [`journal`]).
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
        if embedder.identity() != &manifest.model {
            return Err(Error::Usage(format!(
                "the index in {} was built with the model {} (sha256 {}), and the one found now is {} \
                 (sha256 {}, {}): point --models (or the index's model folder) at the model it was \
                 built with, or rebuild the index",
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
                "the index was built with {}-dimensional vectors, the embedder now makes {}; rebuild the index",
                manifest.dimensions,
                embedder.dimensions()
            )));
        }
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

    /// Redoes the writes a journal left by a process that did not end cleanly, flushes them
    /// into the store and empties the journal. Returns whether there were any.
    fn redo_journal(&self) -> Result<bool> {
        if !self.dir.join(journal::JOURNAL).exists() {
            return Ok(false);
        }
        let (mut journal, pending) = Journal::open(&self.dir)?;
        // A batch cut short was never acknowledged: its inserts are undone, not redone (the
        // store's own log may hold some of them).
        let unfinished = journal::unfinished(&pending);
        let mut undone = Vec::new();
        for entry in &pending {
            match entry {
                Entry::Insert {
                    id,
                    batch: Some(batch),
                    ..
                } if unfinished.contains(batch) => undone.push(point_key(id)),
                Entry::Insert { id, text, .. } => {
                    let (vector, sketch) = self.sketch(text)?;
                    self.add(&[id], &[vector], Some(&[sketch.as_ref()]))?;
                }
                Entry::Remove { id } => self.store.delete(&[point_key(id)])?,
                Entry::Begin { .. } | Entry::End { .. } => {}
            }
        }
        if !undone.is_empty() {
            self.store.delete(&undone)?;
            tracing::warn!(
                documents = undone.len(),
                "undid the documents of a batch a process did not finish adding"
            );
        }
        if !pending.is_empty() {
            self.store.flush()?;
            journal.clear()?;
            tracing::info!(
                writes = pending.len(),
                "redid the writes the index's journal held"
            );
        }
        *self.journal_guard() = Some(journal);
        Ok(!pending.is_empty())
    }

    fn assemble(
        dir: &Path,
        manifest: Manifest,
        embedder: Box<dyn Embedder>,
        store: Box<dyn VectorStore>,
    ) -> Result<Self> {
        let settings = &manifest.settings;
        Ok(DocumentIndex {
            dir: dir.to_owned(),
            confirmer: settings.confirmer()?,
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
    pub fn centre_all(&self, vectors: &mut [Vec<f32>]) {
        if let Some(centre) = self.centre.get() {
            vectors.iter_mut().for_each(|v| centre.apply(v));
        }
    }

    /// Adds documents with their vectors, and with their sketches where given. `None` is for
    /// a throwaway index whose searcher keeps every sketch itself: the store then holds
    /// vectors and ids only, and cannot confirm a hit by itself.
    pub fn add(
        &self,
        ids: &[&str],
        vectors: &[Vec<f32>],
        sketches: Option<&[SketchRef<'_>]>,
    ) -> Result<()> {
        let points: Vec<StoredPoint<'_>> = ids
            .iter()
            .zip(vectors)
            .enumerate()
            .map(|(i, (id, vector))| StoredPoint::new(id, vector, sketches.map(|s| s[i])))
            .collect();
        self.upgrade_manifest()?;
        self.store.upsert(&points)
    }

    /// Rewrites an older format's manifest as [`FORMAT`], once, before the first write.
    fn upgrade_manifest(&self) -> Result<()> {
        let mut current = self
            .manifest_current
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if !*current {
            self.write_manifest(self.manifest.documents)?;
            *current = true;
        }
        Ok(())
    }

    /// The manifest as this version writes it, with `documents` in the store.
    fn current_manifest(&self, documents: usize) -> Manifest {
        Manifest {
            format: FORMAT,
            documents,
            sketch_digest: Some(self.manifest.settings.confirm.sketch_digest()),
            centred_on: self.centre.get().map(|c| c.as_slice().to_vec()),
            ..self.manifest.clone()
        }
        .with_vector_digest()
    }

    /// Writes [`DocumentIndex::current_manifest`] (atomically).
    fn write_manifest(&self, documents: usize) -> Result<()> {
        write_json_pretty(&self.dir.join(MANIFEST), &self.current_manifest(documents))
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

    /// The verdict on a candidate (two documents' sketches and the cosine of their
    /// embeddings), with the evidence it rests on. A neighbour below `min_cosine` is no
    /// candidate at all.
    pub fn confirm(&self, a: SketchRef<'_>, b: SketchRef<'_>, cosine: f32) -> (Evidence, Verdict) {
        self.confirmer.confirm(a, b, cosine)
    }

    /// The `k` nearest documents to a text, each with its verdict.
    pub fn similar_to_text(&self, text: &str, k: usize) -> Result<Vec<Match>> {
        let (vector, sketch) = self.sketch(text)?;
        self.similar(&vector, sketch.as_ref(), k, None)
    }

    /// What the index keeps of a new text (one with no separate title): its vector and sketch.
    fn sketch(&self, text: &str) -> Result<(Vec<f32>, Sketch)> {
        let vector = self.embed(&[text])?.remove(0);
        let sketch = self.sign(&Record::plain(String::new(), text.to_owned()));
        Ok((vector, sketch))
    }

    /// The `k` nearest other documents to the indexed document `id`, each with its verdict.
    pub fn similar_to_id(&self, id: &str, k: usize) -> Result<Vec<Match>> {
        let fetched = self.document(id)?;
        self.similar(
            &fetched.vector,
            fetched.payload.sketch(),
            k,
            Some(point_key(id)),
        )
    }

    /// The indexed document `id`: its vector and payload.
    pub fn document(&self, id: &str) -> Result<Fetched> {
        let fetched = self.store.fetch(&[point_key(id)])?.remove(0);
        // Another id with the same key is not this document.
        let fetched = fetched.filter(|f| f.payload.id == id).ok_or_else(|| {
            Error::Usage(format!(
                "no document {id:?} in the index {} ({} documents); check the id",
                self.dir.display(),
                self.manifest.documents
            ))
        })?;
        self.check_signature(&fetched.payload)?;
        Ok(fetched)
    }

    /// Whether document `id` is indexed.
    pub fn contains(&self, id: &str) -> Result<bool> {
        let stored = self.store.fetch(&[point_key(id)])?.remove(0);
        Ok(stored.is_some_and(|s| s.payload.id == id))
    }

    /// What adding `text` takes, worked out before the write so that it needs no lock: its
    /// vector and sketch, and its `k` nearest documents with their verdicts.
    pub fn prepare(&self, text: &str, k: usize) -> Result<NewDocument> {
        let (vector, sketch) = self.sketch(text)?;
        let found = self.similar(&vector, sketch.as_ref(), k, None)?;
        Ok(NewDocument {
            text: text.to_owned(),
            vector,
            sketch,
            found,
        })
    }

    /// Adds a [`prepare`](DocumentIndex::prepare)d document as `id`; returns the neighbours
    /// found when it was prepared. The caller serialises writes, and calls
    /// [`DocumentIndex::flush`] before it says the document is stored.
    pub fn insert(&self, id: &str, new: NewDocument) -> Result<Vec<Match>> {
        self.insert_in(id, new, None)
    }

    /// Starts a batch of inserts that counts only whole: until [`DocumentIndex::end_batch`],
    /// a crash undoes what [`DocumentIndex::insert_in`] added in it when the index next opens.
    pub fn begin_batch(&self) -> Result<u64> {
        self.with_journal(Journal::begin)
    }

    /// Ends a batch: its inserts stand (undo the ones that should not, with
    /// [`DocumentIndex::remove`], first).
    pub fn end_batch(&self, batch: u64) -> Result<()> {
        self.with_journal(|journal| journal.end(batch))
    }

    /// [`DocumentIndex::insert`] as part of `batch`.
    pub fn insert_in(&self, id: &str, new: NewDocument, batch: Option<u64>) -> Result<Vec<Match>> {
        if let Some(stored) = self.store.fetch(&[point_key(id)])?.remove(0)
            && stored.payload.id != id
        {
            return Err(Error::IdCollision {
                first: stored.payload.id,
                second: id.to_owned(),
            });
        }
        self.add(&[id], &[new.vector], Some(&[new.sketch.as_ref()]))?;
        self.journal(&Entry::Insert {
            id: id.to_owned(),
            text: new.text,
            batch,
        })?;
        Ok(new.found)
    }

    /// Removes document `id`; returns whether it was there. As with
    /// [`DocumentIndex::insert`], the caller serialises writes and flushes.
    pub fn remove(&self, id: &str) -> Result<bool> {
        if !self.contains(id)? {
            return Ok(false);
        }
        self.store.delete(&[point_key(id)])?;
        self.journal(&Entry::Remove { id: id.to_owned() })?;
        Ok(true)
    }

    /// Makes every write so far durable: syncs the journal, or, when it has grown long enough,
    /// flushes the store and empties it. Must not overlap a write.
    pub fn flush(&self) -> Result<()> {
        match self.journal_guard().as_mut() {
            Some(journal) if journal.checkpoint_due() => self.checkpoint(journal),
            Some(journal) => journal.sync(),
            None => self.store.flush(),
        }
    }

    /// Flushes the store and empties the journal, so that the next open has nothing to redo.
    /// For a clean shutdown; must not overlap a write.
    pub fn close(&self) -> Result<()> {
        match self.journal_guard().as_mut() {
            Some(journal) => self.checkpoint(journal),
            None => self.store.flush(),
        }
    }

    /// Flushes the store, records its document count in the manifest (documents added or
    /// deleted one at a time change it) and empties the journal. A crash before the journal
    /// is emptied leaves it to be redone, which records the count again.
    fn checkpoint(&self, journal: &mut Journal) -> Result<()> {
        self.store.flush()?;
        self.write_manifest(self.store.len()?)?;
        if journal.batches_open() {
            // Kept, so that the next open undoes the batches' inserts the store now holds.
            return journal.sync();
        }
        journal.clear()
    }

    /// Appends a write just applied to the journal, opening it on the first.
    fn journal(&self, entry: &Entry) -> Result<()> {
        self.with_journal(|journal| journal.append(entry))
    }

    /// Runs `work` on the journal, opening it on the first write.
    fn with_journal<T>(&self, work: impl FnOnce(&mut Journal) -> Result<T>) -> Result<T> {
        let mut guard = self.journal_guard();
        let journal = match guard.as_mut() {
            Some(journal) => journal,
            // `open` found no journal to redo, so this one starts empty.
            None => guard.insert(Journal::open(&self.dir)?.0),
        };
        work(journal)
    }

    fn journal_guard(&self) -> MutexGuard<'_, Option<Journal>> {
        self.journal.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn similar(
        &self,
        vector: &[f32],
        sketch: SketchRef<'_>,
        k: usize,
        exclude: Option<u64>,
    ) -> Result<Vec<Match>> {
        let limit = k + usize::from(exclude.is_some());
        let search = SearchOptions {
            k: limit,
            with_payload: true,
            exact: self.search_exactly(),
        };
        let hits = self.store.search(&[vector], search)?.remove(0);
        hits.into_iter()
            .filter(|hit| Some(hit.key) != exclude)
            .take(k)
            .filter_map(|hit: Neighbour| Some((hit.payload?, hit.cosine)))
            .map(|(payload, cosine)| {
                self.check_signature(&payload)?;
                let (evidence, verdict) = self.confirm(sketch, payload.sketch(), cosine);
                Ok(Match {
                    id: payload.id,
                    cosine,
                    jaccard_estimate: evidence.jaccard,
                    duplicate: verdict.duplicate,
                    rule: verdict.rule,
                })
            })
            .collect()
    }

    /// A stored signature must have the length this index signs with: one written by another
    /// setting (or changed by hand) would be compared slot by slot with the wrong slots.
    fn check_signature(&self, payload: &crate::store::Payload) -> Result<()> {
        let expected = self.manifest.settings.confirm.minhash.num_perm;
        if payload.signature.len() == expected {
            return Ok(());
        }
        Err(Error::Damaged {
            path: self.dir.clone(),
            problem: format!(
                "document {:?} has a signature of {} slots, the index signs with {expected}",
                payload.id,
                payload.signature.len()
            ),
        })
    }
}
