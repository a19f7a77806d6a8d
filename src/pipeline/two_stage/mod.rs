//! The two-stage method: embed every document, put the vectors in a cosine index, take each
//! document's `k` nearest neighbours as candidates, and let the MinHash classifier confirm
//! them. The vector index proposes candidates without comparing all pairs and without the
//! banding loss of LSH (a pair at Jaccard 0.75 is a candidate whenever it is among a document's
//! `k` nearest, not 1 time in 5 as with the default bands); the MinHash stage decides, so what
//! is merely on the same topic stays out.
//!
//! One file a stage, in the order a run goes through them:
//! - [`load`]: read, sign, embed, upsert, spill the query vectors;
//! - [`cells`]: with `cells` set, k-means cells that each document is searched within;
//! - [`search`]: each query's nearest neighbours become candidate pairs, while the sketches
//!   wait on disk ([`set_aside`]);
//! - [`confirm`]: the classifier judges each candidate on the two sketches.
//!
//! Beside them: [`queries`] (the spilled query vectors), [`title_only`] (the store a title is
//! searched in) and [`part`] (a split run's slice, and the shared index it searches).

mod confirm;
mod load;
mod part;
mod search;
mod set_aside;
mod title_only;

pub(super) use confirm::confirm_candidates;
use confirm::{CONFIRM_BATCH, Verdicts};
pub use part::Part;
pub(super) use search::distinct_pairs;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use self::load::{Loaded, Upsert, load};
use self::part::open_shared;
use self::search::Proposed;
use self::set_aside::{CandidatesAside, SketchesAside};
use self::title_only::TitleOnlyStore;
use super::Found;
use crate::confirm::proposed_pairs;
use crate::error::{Error, Result};
use crate::group::Linkage;
use crate::index::{DocumentIndex, IndexSettings};
use crate::io::{Input, ReadOptions, ScratchDir, SkipReport};
use crate::output::run::StageTimes;
use crate::progress;
use crate::search::Cells;
use crate::search::QueryFile;

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
    /// K-means cells each document is searched within (0: none, the whole index is searched
    /// through its graph).
    pub cells: usize,
    /// The nearest cells each document is searched in.
    pub cell_probes: usize,
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
        if self.cells > 0 && self.exact_search {
            return Err(Error::Usage(
                "`cells` compares each document with a few cells and `exact_search` with every \
                 document: give one of them"
                    .into(),
            ));
        }
        if self.cells > 0 && self.part.is_some() {
            return Err(Error::Usage(
                "`cells` is learned over a whole run; a `part` searches the shared index as it \
                 was built: drop `cells`"
                    .into(),
            ));
        }
        Ok(())
    }
}

impl Default for TwoStageConfig {
    /// The index's defaults, searched through the graph.
    fn default() -> Self {
        TwoStageConfig {
            settings: IndexSettings::default(),
            top_k: crate::search::DEFAULT_TOP_K,
            exact_search: false,
            cells: 0,
            cell_probes: crate::search::DEFAULT_CELL_PROBES,
            linkage: Linkage::default(),
            index_dir: None,
            part: None,
        }
    }
}

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

/// Runs the stages over `inputs`: the pairs found and confirmed.
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
    // Cells replace the graph walk of a whole run (never of a part, nor of the exact search).
    let use_cells = config.cells > 0;
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
            DocumentIndex::create(&dir, &config.settings.for_one_run(), models)?,
            if use_cells {
                Upsert::Unread
            } else {
                Upsert::VectorsOnly
            },
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
        title_copies,
        mut times,
    } = load(
        inputs,
        read,
        &mut index,
        Some(&mut queries),
        // Within cells, the titles are searched among the cells' own title-only members.
        (!use_cells).then_some(&mut title_only),
        upsert,
        config.part,
    )?;
    let mut queries = queries.into_reader()?;

    let documents = corpus.ids.len();
    let use_cells = use_cells && documents > 0;
    let clock = Instant::now();
    // Cells may part two near-copies whose vectors sit near a boundary: what MinHash proposes,
    // cheap beside the search, joins the candidates. It is read off the sketches before they
    // go aside.
    let proposed = use_cells.then(|| {
        let proposed = Proposed {
            pairs: proposed_pairs(&signatures, &sketches, &config.settings.confirm),
            title_only: (0..documents)
                .map(|doc| {
                    let facts = sketches.facts(doc);
                    facts.title.is_some() && !facts.body
                })
                .collect(),
        };
        tracing::info!(
            pairs = proposed.pairs.len(),
            seconds = clock.elapsed().as_secs_f64(),
            "MinHash proposed its pairs"
        );
        proposed
    });
    let aside_clock = Instant::now();
    let sketches_aside = SketchesAside::write(&dir, signatures, sketches)?;
    tracing::debug!(
        seconds = aside_clock.elapsed().as_secs_f64(),
        "sketches set aside for the search"
    );
    let mut search_seconds = clock.elapsed().as_secs_f64();

    let cells = if use_cells {
        let clock = Instant::now();
        let _spinner = progress::spinner("learning the cells");
        let cells = Cells::learn(&mut queries, documents, config.cells, config.cell_probes)?;
        times.index += clock.elapsed().as_secs_f64();
        Some(cells)
    } else {
        None
    };

    let clock = Instant::now();
    let neighbours = search::candidates(
        &index,
        &title_only,
        queries,
        &doc_of_key,
        &title_copies,
        cells.as_ref().zip(proposed),
        config,
    )?;
    drop((cells, doc_of_key, title_copies));
    let candidates = neighbours.len();
    search_seconds += clock.elapsed().as_secs_f64();
    times.search = search_seconds;
    times.candidates = times.upsert + times.index + times.search;
    title_only.discard()?;
    if config.index_dir.is_none() {
        index.store().discard()?;
    }
    // The vectors are searched: close the store (before its temporary folder goes) and give
    // its memory back before the candidates are judged.
    let confirmer = index.into_confirmer();

    // The candidates wait on disk while the sketches come back, and are judged as they are
    // read: the two are never held at once.
    let clock = Instant::now();
    let mut candidates_aside = CandidatesAside::write(&dir, neighbours)?;
    let (signatures, sketches) = sketches_aside.read_back()?;
    tracing::debug!(
        seconds = clock.elapsed().as_secs_f64(),
        "candidates set aside, sketches read back"
    );
    let mut verdicts = Verdicts::default();
    candidates_aside.for_each_batch(CONFIRM_BATCH, |batch| {
        verdicts.judge(&confirmer, &signatures, &sketches, batch)
    })?;
    drop(sketches);
    let confirmed = verdicts.confirmed(candidates_aside.read_back()?);
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
