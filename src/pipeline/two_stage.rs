//! The two-stage method: embed every document, put the vectors in a cosine index, take each
//! document's `k` nearest neighbours as candidates, and let the MinHash classifier confirm
//! them. The vector index proposes candidates without comparing all pairs and without the
//! banding loss of LSH (a pair at Jaccard 0.75 is a candidate whenever it is among a document's
//! `k` nearest, not 1 time in 5 as with the default bands); the
//! MinHash stage decides, so what is merely on the same topic stays out.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::parts::Part;
use super::queries::{Query, QueryFile};
use super::title_only::TitleOnlyStore;
use super::{Found, MethodName, Pair};
use crate::confirm::Confirmer;
use crate::confirm::{Sketch, SketchFacts, SketchRef};
use crate::error::{Error, Result};
use crate::group::Linkage;
use crate::index::{DocumentIndex, IndexSettings};
use crate::io::{Corpus, Input, ReadOptions, ScratchDir, SkipReport, read_corpus};
use crate::progress;
use crate::results::StageTimes;
use crate::settings::Scope;
use crate::sketch::Signatures;
use crate::store::{SearchOptions, point_key};

/// The most neighbours a document may ask for: each costs a search slot and a confirmation,
/// and past a few dozen they are unrelated documents.
pub const MAX_TOP_K: usize = 1000;

/// Settings of the two-stage method.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TwoStageConfig {
    /// Embedder, vector store and MinHash confirmation: what an index records.
    #[serde(flatten)]
    pub settings: IndexSettings,
    /// Nearest neighbours per document taken as candidates.
    pub top_k: usize,
    /// Search every document's true top-k by a full scan instead of the HNSW graph: slower,
    /// but the same candidates on every run and engine (up to which of several identical
    /// vectors tied at the k-th place is kept).
    pub exact_search: bool,
    /// How pairs become groups.
    pub linkage: Linkage,
    /// Keep the vector index in this folder, for `neardup query` later; a temporary one
    /// otherwise. With `part`, the index `neardup index` built, which the parts share.
    #[serde(rename = "index")]
    pub index_dir: Option<PathBuf>,
    /// Search and confirm only this slice of the documents (`I/N`), in the shared index, and
    /// write its candidates for `neardup merge` (`None`: all documents).
    pub part: Option<Part>,
}

impl TwoStageConfig {
    /// Checks the index settings, and that a part has its shared index.
    pub fn validate(&self) -> Result<()> {
        self.settings.validate()?;
        if self.part.is_some() && self.index_dir.is_none() {
            return Err(Error::Usage(
                "`part` needs `index`: the parts search one shared index, built first with \
                 `neardup index INPUT --index DIR`"
                    .into(),
            ));
        }
        Ok(())
    }
}

impl Default for TwoStageConfig {
    fn default() -> Self {
        crate::settings::default_of(MethodName::TwoStage)
    }
}

/// Documents embedded, upserted and spilled at a time while reading (bounded memory).
const EMBED_BATCH: usize = 8192;
/// Queries per search call.
const SEARCH_BATCH: usize = 2048;

/// What `neardup index` reports.
pub struct BuiltIndex {
    /// Documents indexed.
    pub documents: usize,
    /// Records skipped under `--skip-invalid`.
    pub skipped: SkipReport,
    /// Where the time went (sketch, embed, upsert, index).
    pub times: StageTimes,
}

/// Builds a persistent index of `inputs` in `dir`, with models under `models`.
pub fn build_index(
    inputs: &[Input],
    read: &ReadOptions,
    settings: &IndexSettings,
    dir: &Path,
    models: &Path,
) -> Result<BuiltIndex> {
    let mut index = DocumentIndex::create(dir, settings, models)?;
    let loaded = load(
        inputs,
        read,
        &mut index,
        None,
        None,
        Upsert::WithSketches,
        None,
    )?;
    Ok(BuiltIndex {
        documents: loaded.corpus.ids.len(),
        skipped: loaded.corpus.skipped,
        times: loaded.times,
    })
}

/// A corpus read, embedded, signed and indexed.
struct Loaded {
    corpus: Corpus,
    signatures: Signatures,
    /// Shingle counts and facts per document.
    sketches: SketchFacts,
    doc_of_key: HashMap<u64, u32>,
    times: StageTimes,
}

pub(super) fn run(
    inputs: &[Input],
    read: &ReadOptions,
    config: &TwoStageConfig,
    models: &Path,
) -> Result<Found> {
    let scratch;
    let dir = match &config.index_dir {
        Some(dir) => dir.clone(),
        None => {
            scratch = ScratchDir::new()?;
            scratch.path().to_owned()
        }
    };
    let (mut index, upsert) = match (config.part, &config.index_dir) {
        (Some(_), _) => (
            open_shared(&dir, &config.settings, models)?,
            Upsert::Nothing,
        ),
        (None, Some(_)) => (
            DocumentIndex::create(&dir, &config.settings, models)?,
            Upsert::WithSketches,
        ),
        (None, None) => (
            DocumentIndex::create(&dir, &config.settings, models)?,
            Upsert::VectorsOnly,
        ),
    };
    let mut queries = QueryFile::create(&dir, index.embedder().dimensions())?;
    // Parts share the index folder.
    let part_scratch;
    let title_only_dir = match config.part {
        Some(_) => {
            part_scratch = ScratchDir::new()?;
            part_scratch.path()
        }
        None => &dir,
    };
    let mut title_only = TitleOnlyStore::beside(&index, title_only_dir, config.part);
    let Loaded {
        corpus,
        signatures,
        sketches,
        doc_of_key,
        mut times,
    } = load(
        inputs,
        read,
        &mut index,
        Some(&mut queries),
        Some(&mut title_only),
        upsert,
        config.part,
    )?;
    let mut queries = queries.into_reader()?;

    let clock = Instant::now();
    let bar = progress::items(queries.len() as u64, "searching");
    let mut neighbours: Vec<(u32, u32, f32)> = Vec::new();
    let search = SearchOptions {
        k: config.top_k + 1,
        with_payload: false,
        exact: config.exact_search,
    };
    while let Some((batch, flat)) = queries.next_batch(SEARCH_BATCH)? {
        let vectors = flat.chunks_exact(index.embedder().dimensions());
        let (titles, documents): (Vec<_>, Vec<_>) = batch
            .iter()
            .zip(vectors)
            .partition(|(query, _)| query.title);
        let mut hits = index.store().search(&vectors_of(&documents), search)?;
        hits.extend(title_only.search(&vectors_of(&titles), search)?);
        let docs = documents.iter().chain(&titles).map(|(query, _)| query.doc);
        for (doc, hits) in docs.zip(hits) {
            for hit in hits {
                let other = *doc_of_key.get(&hit.key).ok_or_else(|| {
                    Error::store(format!("the index returned an unknown point {}", hit.key))
                })?;
                if other != doc {
                    neighbours.push((doc.min(other), doc.max(other), hit.cosine));
                }
            }
        }
        bar.inc(batch.len() as u64);
    }
    bar.finish_and_clear();
    drop(queries);
    let neighbours = distinct_pairs(neighbours);
    let candidates = neighbours.len();
    times.search = clock.elapsed().as_secs_f64();
    times.candidates = times.upsert + times.index + times.search;
    title_only.discard()?;
    if config.index_dir.is_none() {
        index.store().discard()?;
    }
    // The vectors are searched: close the store (before its temporary folder goes) and give
    // its memory back before the candidates are judged.
    let confirmer = index.into_confirmer();

    let clock = Instant::now();
    let confirmed = confirm_candidates(&confirmer, &signatures, &sketches, neighbours);
    times.confirm = clock.elapsed().as_secs_f64();

    Ok(Found {
        corpus,
        candidates,
        scored_candidates: Some(confirmed.scored),
        pairs: confirmed.pairs,
        similarity: Box::new(move |x, y| signatures.similarity(x as usize, y as usize)),
        probes: None,
        times,
    })
}

/// The vectors of queries paired with them.
fn vectors_of<'v>(queries: &[(&Query, &'v [f32])]) -> Vec<&'v [f32]> {
    queries.iter().map(|(_, vector)| *vector).collect()
}

/// Candidate pairs `(a, b, cosine)`, `a < b`, each kept once with its highest cosine: a pair
/// is usually found from both ends, and by a title, and, in a split run, by two parts.
pub(super) fn distinct_pairs(mut pairs: Vec<(u32, u32, f32)>) -> Vec<(u32, u32, f32)> {
    pairs.par_sort_unstable_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)).then(y.2.total_cmp(&x.2)));
    pairs.dedup_by(|x, y| (x.0, x.1) == (y.0, y.1));
    pairs
}

/// Candidates with their scores, and those confirmed.
pub(super) struct Confirmed {
    /// Every candidate, scored, in the order given.
    pub scored: Vec<Pair>,
    /// The confirmed ones, in the same order.
    pub pairs: Vec<Pair>,
}

/// Candidates judged at a time; each batch's memory goes back before the next.
const CONFIRM_BATCH: usize = 1 << 20;

/// Judges every candidate `(a, b, cosine)` by the documents' sketches. The candidates are
/// consumed from the back, a batch at a time, so that their memory shrinks as the scored
/// pairs (twice their size) grow: at a million documents they are tens of millions.
pub(super) fn confirm_candidates(
    confirmer: &Confirmer,
    signatures: &Signatures,
    sketches: &SketchFacts,
    mut candidates: Vec<(u32, u32, f32)>,
) -> Confirmed {
    let mut scored = Vec::with_capacity(candidates.len());
    let mut duplicate = Vec::with_capacity(candidates.len());
    while !candidates.is_empty() {
        let start = candidates.len().saturating_sub(CONFIRM_BATCH);
        let (batch, verdicts): (Vec<Pair>, Vec<bool>) = candidates[start..]
            .par_iter()
            .rev()
            .map(|&(a, b, cosine)| {
                let (evidence, verdict) = confirmer.confirm(
                    sketches.get(signatures, a as usize),
                    sketches.get(signatures, b as usize),
                    cosine,
                );
                let pair = Pair {
                    a,
                    b,
                    score: evidence.jaccard,
                    cosine: Some(cosine),
                };
                (pair, verdict.duplicate)
            })
            .unzip();
        scored.extend(batch);
        duplicate.extend(verdicts);
        candidates.truncate(start);
        candidates.shrink_to_fit();
    }
    scored.reverse();
    duplicate.reverse();
    let pairs = scored
        .iter()
        .zip(&duplicate)
        .filter(|&(_, &d)| d)
        .map(|(p, _)| *p)
        .collect();
    Confirmed { scored, pairs }
}

/// Opens the index that the parts of a split run share, and checks that it was built with
/// the settings this part was given (an embedder, shingling or rule of its own would make its
/// candidates unlike the other parts').
fn open_shared(dir: &Path, settings: &IndexSettings, models: &Path) -> Result<DocumentIndex> {
    let index = DocumentIndex::open(dir, models, settings.store.qdrant_url.as_deref())?;
    // Where the model files and the server are may differ between machines (the model itself
    // is checked by its digest when the index opens), and how the existing collection is laid
    // out is the index's to say.
    let as_map = |s: &IndexSettings| match serde_json::to_value(s) {
        Ok(serde_json::Value::Object(map)) => map,
        _ => unreachable!("settings serialise to a JSON object"),
    };
    let wanted = as_map(&settings.resolved()?);
    let built = as_map(&index.manifest().settings);
    // The banding follows from the threshold and rule: name those first.
    let derived = |key: &str| matches!(key, "bands" | "rows");
    let mut keys: Vec<&String> = wanted
        .keys()
        .filter(|k| !crate::settings::keys_in(Scope::Local).any(|local| local == k.as_str()))
        .collect();
    keys.sort_by_key(|k| derived(k));
    for key in keys {
        let value = &wanted[key];
        let theirs = built.get(key).unwrap_or(&serde_json::Value::Null);
        if theirs != value {
            return Err(Error::Usage(format!(
                "the index in {} was built with `{key}` {theirs}, and this part asks for {value}: \
                 give every part the settings the index was built with (see {})",
                dir.display(),
                dir.join(crate::index::MANIFEST).display()
            )));
        }
    }
    Ok(index)
}

/// What the sketching side hands the loader for each document.
struct Sketched {
    id: String,
    sketch: Sketch,
    text: String,
    /// The title, where the record has more than a title.
    title: Option<String>,
    /// Whether the record is a title and nothing else.
    title_only: bool,
}

/// What the loader writes into the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Upsert {
    /// Vectors, ids and sketches: an index kept to answer queries by itself later.
    WithSketches,
    /// Vectors and ids: a throwaway index, searched by a caller that holds the sketches.
    VectorsOnly,
    /// Nothing: the shared index of a split run already holds every document.
    Nothing,
}

/// The corpus as it streams in: sketches kept (compact), texts embedded a batch at a time,
/// and each batch upserted at once and its vectors spilled for the search stage, so no stage
/// holds every vector.
struct Loader<'a> {
    index: &'a DocumentIndex,
    queries: Option<&'a mut QueryFile>,
    /// Where the title-only documents also go, for the title queries.
    title_only: Option<&'a mut TitleOnlyStore>,
    upsert: Upsert,
    /// The documents to embed (a part's slice); all where `None`.
    slice: Option<Part>,
    signatures: Signatures,
    sketches: SketchFacts,
    doc_of_key: HashMap<u64, u32>,
    /// Documents read and not yet embedded.
    docs: Vec<u32>,
    ids: Vec<String>,
    texts: Vec<String>,
    /// Which of `texts` are a title and nothing else.
    title_only_texts: Vec<bool>,
    /// In a part, the keys of every title-only document, whichever part embeds it.
    title_only_keys: Vec<u64>,
    titles: Vec<(u32, String)>,
    embed_seconds: f64,
    upsert_seconds: f64,
    failure: Option<Error>,
    /// A point key met twice: the earlier document and the later id.
    collision: Option<(u32, String)>,
}

impl<'a> Loader<'a> {
    fn new(
        index: &'a DocumentIndex,
        queries: Option<&'a mut QueryFile>,
        title_only: Option<&'a mut TitleOnlyStore>,
        upsert: Upsert,
        slice: Option<Part>,
    ) -> Self {
        Loader {
            index,
            queries,
            title_only,
            upsert,
            slice,
            signatures: Signatures::new(index.manifest().settings.confirm.minhash.num_perm),
            sketches: SketchFacts::default(),
            doc_of_key: HashMap::new(),
            docs: Vec::new(),
            ids: Vec::new(),
            texts: Vec::new(),
            title_only_texts: Vec::new(),
            title_only_keys: Vec::new(),
            titles: Vec::new(),
            embed_seconds: 0.0,
            upsert_seconds: 0.0,
            failure: None,
            collision: None,
        }
    }

    fn keep(&mut self, item: Sketched) {
        if self.failure.is_some() || self.collision.is_some() {
            return;
        }
        let doc = self.signatures.len() as u32;
        let key = point_key(&item.id);
        if let Some(other) = self.doc_of_key.insert(key, doc) {
            self.collision = Some((other, item.id));
            return;
        }
        let sketch = item.sketch;
        self.signatures
            .push(&sketch.signature, sketch.shingles == 0);
        self.sketches.push(sketch.shingles, sketch.facts);
        if self.slice.is_some() && item.title_only {
            self.title_only_keys.push(key);
        }
        if self.slice.is_some_and(|part| !part.holds(doc)) {
            return;
        }
        self.docs.push(doc);
        self.ids.push(item.id);
        self.texts.push(item.text);
        self.title_only_texts.push(item.title_only);
        if let Some(title) = item.title {
            self.titles.push((doc, title));
        }
        if self.texts.len() == EMBED_BATCH {
            self.flush();
        }
    }

    /// Embeds, stores and spills what is pending.
    fn flush(&mut self) {
        if !self.texts.is_empty()
            && self.failure.is_none()
            && let Err(e) = self.embed_and_store()
        {
            self.failure = Some(e);
        }
        self.docs.clear();
        self.ids.clear();
        self.texts.clear();
        self.title_only_texts.clear();
        self.titles.clear();
    }

    fn embed_and_store(&mut self) -> Result<()> {
        let started = Instant::now();
        let texts: Vec<&str> = self
            .texts
            .iter()
            .chain(self.titles.iter().map(|t| &t.1))
            .map(String::as_str)
            .collect();
        let mut vectors = self.index.embedder().embed(&texts)?;
        self.index.learn_centre(
            &vectors[..self.texts.len()],
            self.upsert == Upsert::WithSketches,
        )?;
        self.index.centre_all(&mut vectors);
        let titles = vectors.split_off(self.texts.len());
        self.embed_seconds += started.elapsed().as_secs_f64();

        let started = Instant::now();
        if self.upsert != Upsert::Nothing {
            let ids: Vec<&str> = self.ids.iter().map(String::as_str).collect();
            let sketches: Option<Vec<SketchRef<'_>>> =
                (self.upsert == Upsert::WithSketches).then(|| {
                    self.docs
                        .iter()
                        .map(|&d| self.sketches.get(&self.signatures, d as usize))
                        .collect()
                });
            self.index.add(&ids, &vectors, sketches.as_deref())?;
        }
        if let Some(title_only) = self.title_only.as_deref_mut()
            && self.slice.is_none()
        {
            let (ids, vectors): (Vec<&str>, Vec<&[f32]>) = self
                .ids
                .iter()
                .zip(&vectors)
                .zip(&self.title_only_texts)
                .filter(|(_, title_only)| **title_only)
                .map(|((id, vector), _)| (id.as_str(), vector.as_slice()))
                .unzip();
            title_only.add(&ids, &vectors)?;
        }
        self.upsert_seconds += started.elapsed().as_secs_f64();

        if let Some(queries) = self.queries.as_deref_mut() {
            for (&doc, vector) in self.docs.iter().zip(&vectors) {
                queries.append(Query { doc, title: false }, vector)?;
            }
            for (&(doc, _), vector) in self.titles.iter().zip(&titles) {
                queries.append(Query { doc, title: true }, vector)?;
            }
        }
        Ok(())
    }
}

/// Reads, signs, embeds and indexes `inputs` into `index`, spilling every query vector into
/// `queries` where the caller will search. `upsert` says what the store gets; a `slice` limits
/// embedding (and queries) to a part's documents, while every document is still signed.
fn load(
    inputs: &[Input],
    read: &ReadOptions,
    index: &mut DocumentIndex,
    queries: Option<&mut QueryFile>,
    mut title_only: Option<&mut TitleOnlyStore>,
    upsert: Upsert,
    slice: Option<Part>,
) -> Result<Loaded> {
    let mut times = StageTimes::default();
    let clock = Instant::now();
    let mut loader = Loader::new(index, queries, title_only.as_deref_mut(), upsert, slice);
    let corpus = read_corpus(
        inputs,
        read,
        |record| Sketched {
            id: record.id.clone(),
            sketch: index.sign(record),
            text: record.text.clone(),
            title: record
                .title()
                .filter(|_| !record.body().is_empty())
                .map(str::to_owned),
            title_only: record.title().is_some() && record.body().is_empty(),
        },
        |item| loader.keep(item),
    )?;
    loader.flush();
    let Loader {
        signatures,
        sketches,
        doc_of_key,
        embed_seconds,
        upsert_seconds,
        failure,
        collision,
        title_only_keys,
        ..
    } = loader;
    if let Some(e) = failure {
        return Err(e);
    }
    if let Some((first, second)) = collision {
        return Err(Error::IdCollision {
            first: corpus.ids[first as usize].clone(),
            second,
        });
    }
    times.embed = embed_seconds;
    times.upsert = upsert_seconds;
    times.sketch = clock.elapsed().as_secs_f64() - embed_seconds - upsert_seconds;
    let n = corpus.ids.len();
    tracing::info!(documents = n, embedder = %index.embedder().describe(), "embedded, signed and stored");

    if upsert == Upsert::Nothing {
        let indexed = index.manifest().documents;
        if indexed != n {
            return Err(Error::Usage(format!(
                "the shared index holds {indexed} documents and the input {n}: every part must \
                 read the input the index was built from"
            )));
        }
    } else {
        let clock = Instant::now();
        let graph = index.finish()?;
        times.index = clock.elapsed().as_secs_f64();
        tracing::info!(
            documents = n,
            hnsw = graph,
            seconds = times.index,
            "index ready"
        );
    }
    if let Some(title_only) = title_only {
        let clock = Instant::now();
        title_only.copy_from(index, &title_only_keys)?;
        times.upsert += clock.elapsed().as_secs_f64();
        let clock = Instant::now();
        title_only.finish()?;
        times.index += clock.elapsed().as_secs_f64();
    }
    Ok(Loaded {
        corpus,
        signatures,
        sketches,
        doc_of_key,
        times,
    })
}
