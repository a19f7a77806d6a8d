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

use super::{Found, Pair};
use crate::error::{Error, Result};
use crate::group::Linkage;
use crate::index::{DocumentIndex, IndexSettings};
use crate::io::{Corpus, Input, ReadOptions, ScratchDir, SkipReport, read_corpus};
use crate::progress;
use crate::results::StageTimes;
use crate::sketch::{Signatures, SketchFacts, SketchRef};
use crate::store::point_key;

/// Neighbours per document the two-stage method considers by default.
pub const DEFAULT_TOP_K: usize = 20;

/// The most neighbours a document may ask for: each costs a search slot and a confirmation,
/// and past a few dozen they are unrelated documents.
pub const MAX_TOP_K: usize = 1000;

/// Settings of the two-stage method.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TwoStageConfig {
    /// Embedder, vector store and MinHash confirmation: what an index records.
    #[serde(flatten)]
    pub settings: IndexSettings,
    /// Nearest neighbours per document taken as candidates [default: 20].
    #[serde(default = "default_top_k")]
    pub top_k: usize,
    /// How pairs become groups [default: single].
    #[serde(default)]
    pub linkage: Linkage,
    /// Keep the vector index in this folder, for `neardup query` later; a temporary one
    /// otherwise.
    #[serde(default, rename = "index")]
    pub index_dir: Option<PathBuf>,
}

fn default_top_k() -> usize {
    DEFAULT_TOP_K
}

impl TwoStageConfig {
    /// Checks the index settings and the number of neighbours.
    pub fn validate(&self) -> Result<()> {
        self.settings.validate()?;
        check_top_k(self.top_k)
    }
}

/// Checks a number of neighbours asked for (here, by `query` and by `serve`).
pub fn check_top_k(top_k: usize) -> Result<()> {
    if (1..=MAX_TOP_K).contains(&top_k) {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "`top_k` must be between 1 and {MAX_TOP_K}, not {top_k}"
        )))
    }
}

/// Documents embedded at a time while reading (bounded text in memory).
const EMBED_BATCH: usize = 8192;
/// Points per upsert, and queries per search call.
const STORE_BATCH: usize = 2048;

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
    let loaded = load(inputs, read, settings, dir, models)?;
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
    vectors: Vec<Vec<f32>>,
    /// The title's own vector, for documents with a title and more: a copy of the record that
    /// has the title only lies near this, not near the whole record.
    title_vectors: Vec<(u32, Vec<f32>)>,
    doc_of_key: HashMap<u64, u32>,
    index: DocumentIndex,
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
    let Loaded {
        corpus,
        signatures,
        sketches,
        vectors,
        title_vectors,
        doc_of_key,
        index,
        mut times,
    } = load(inputs, read, &config.settings, &dir, models)?;
    let n = corpus.ids.len();

    let clock = Instant::now();
    let queries: Vec<(u32, &[f32])> = (0..n as u32)
        .zip(vectors.iter().map(Vec::as_slice))
        .chain(title_vectors.iter().map(|(doc, v)| (*doc, v.as_slice())))
        .collect();
    let bar = progress::items(queries.len() as u64, "searching");
    let mut neighbours: Vec<(u32, u32, f32)> = Vec::new();
    for batch in queries.chunks(STORE_BATCH) {
        let vectors: Vec<&[f32]> = batch.iter().map(|q| q.1).collect();
        let hits = index.store().search(&vectors, config.top_k + 1, false)?;
        for (&(doc, _), hits) in batch.iter().zip(hits) {
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
    // Each pair is usually found from both ends (and by a title): keep it once, with its
    // highest cosine.
    neighbours.par_sort_unstable_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)).then(y.2.total_cmp(&x.2)));
    neighbours.dedup_by(|x, y| (x.0, x.1) == (y.0, y.1));
    times.search = clock.elapsed().as_secs_f64();
    times.candidates = times.upsert + times.index + times.search;

    let clock = Instant::now();
    let verdicts: Vec<(Pair, bool)> = neighbours
        .par_iter()
        .map(|&(a, b, cosine)| {
            let (x, y) = (a as usize, b as usize);
            let (evidence, verdict) = index.confirm(
                sketches.get(&signatures, x),
                sketches.get(&signatures, y),
                cosine,
            );
            (
                Pair {
                    a,
                    b,
                    score: evidence.jaccard,
                    cosine: Some(cosine),
                },
                verdict.duplicate,
            )
        })
        .collect();
    let pairs = verdicts.iter().filter(|v| v.1).map(|v| v.0).collect();
    let scored = verdicts.into_iter().map(|v| v.0).collect();
    times.confirm = clock.elapsed().as_secs_f64();
    if config.index_dir.is_none() {
        index.store().discard()?;
    }
    // Close the store before its temporary folder goes.
    drop(index);

    Ok(Found {
        corpus,
        candidates: neighbours.len(),
        scored_candidates: Some(scored),
        pairs,
        similarity: Box::new(move |x, y| signatures.similarity(x as usize, y as usize)),
        probes: None,
        times,
    })
}

/// Texts read and not yet embedded: whole texts, and the titles of documents that have more.
#[derive(Default)]
struct Pending {
    texts: Vec<String>,
    titles: Vec<(u32, String)>,
}

fn load(
    inputs: &[Input],
    read: &ReadOptions,
    settings: &IndexSettings,
    dir: &Path,
    models: &Path,
) -> Result<Loaded> {
    let mut index = DocumentIndex::create(dir, settings, models)?;
    let mut times = StageTimes::default();

    let clock = Instant::now();
    let mut signatures = Signatures::new(settings.minhash.num_perm);
    let mut sketches = SketchFacts::default();
    let mut vectors: Vec<Vec<f32>> = Vec::new();
    let mut title_vectors: Vec<(u32, Vec<f32>)> = Vec::new();
    let mut pending = Pending::default();
    let mut failure: Option<Error> = None;
    let mut embed_seconds = 0.0;
    let embedder = index.embedder();
    let mut embed_pending = |pending: &mut Pending,
                             vectors: &mut Vec<Vec<f32>>,
                             title_vectors: &mut Vec<(u32, Vec<f32>)>| {
        let started = Instant::now();
        let texts: Vec<&str> = pending
            .texts
            .iter()
            .chain(pending.titles.iter().map(|t| &t.1))
            .map(String::as_str)
            .collect();
        match embedder.embed(&texts) {
            Ok(mut batch) => {
                let titles = batch.split_off(pending.texts.len());
                vectors.extend(batch);
                title_vectors.extend(pending.titles.iter().map(|t| t.0).zip(titles));
            }
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
        pending.texts.clear();
        pending.titles.clear();
        embed_seconds += started.elapsed().as_secs_f64();
    };
    let corpus = read_corpus(
        inputs,
        read,
        |record| {
            let title = record
                .title()
                .filter(|_| !record.body().is_empty())
                .map(str::to_owned);
            (index.sign(record), record.text.clone(), title)
        },
        |(sketch, text, title)| {
            let doc = signatures.len() as u32;
            signatures.push(&sketch.signature, sketch.shingles == 0);
            sketches.push(sketch.shingles, sketch.facts);
            pending.texts.push(text);
            if let Some(title) = title {
                pending.titles.push((doc, title));
            }
            if pending.texts.len() == EMBED_BATCH {
                embed_pending(&mut pending, &mut vectors, &mut title_vectors);
            }
        },
    )?;
    embed_pending(&mut pending, &mut vectors, &mut title_vectors);
    if let Some(e) = failure {
        return Err(e);
    }
    times.embed = embed_seconds;
    times.sketch = clock.elapsed().as_secs_f64() - embed_seconds;
    tracing::info!(documents = corpus.ids.len(), titles = title_vectors.len(), embedder = %index.embedder().describe(), "embedded and signed");

    let n = corpus.ids.len();
    let mut doc_of_key: HashMap<u64, u32> = HashMap::with_capacity(n);
    for (doc, id) in corpus.ids.iter().enumerate() {
        if let Some(other) = doc_of_key.insert(point_key(id), doc as u32) {
            return Err(Error::IdCollision {
                first: corpus.ids[other as usize].clone(),
                second: id.clone(),
            });
        }
    }

    let clock = Instant::now();
    let bar = progress::items(n as u64, "indexing");
    for start in (0..n).step_by(STORE_BATCH) {
        let end = (start + STORE_BATCH).min(n);
        let ids: Vec<&str> = corpus.ids[start..end].iter().map(String::as_str).collect();
        let batch: Vec<SketchRef<'_>> =
            (start..end).map(|d| sketches.get(&signatures, d)).collect();
        index.add(&ids, &vectors[start..end], &batch)?;
        bar.inc((end - start) as u64);
    }
    bar.finish_and_clear();
    times.upsert = clock.elapsed().as_secs_f64();

    let clock = Instant::now();
    let graph = index.finish()?;
    times.index = clock.elapsed().as_secs_f64();
    tracing::info!(
        documents = n,
        hnsw = graph,
        seconds = times.index,
        "index ready"
    );
    Ok(Loaded {
        corpus,
        signatures,
        sketches,
        vectors,
        title_vectors,
        doc_of_key,
        index,
        times,
    })
}
