//! The two-stage method: embed every document, put the vectors in a cosine index, take each
//! document's `k` nearest neighbours as candidates, and let the MinHash classifier confirm
//! them. The vector index proposes candidates without comparing all pairs and without the
//! banding loss of LSH (a pair at Jaccard 0.75 is a candidate whenever it is among a document's
//! `k` nearest, not 1 time in 5 as with the default bands); the MinHash stage decides, so what
//! is merely on the same topic stays out.
//!
//! One file a stage, in the order a run goes through them:
//! - [`load`](mod@load): read, sign, embed, upsert, spill the query vectors (each distinct
//!   text embedded once: [`vectors_once`]);
//! - the cells each document is searched within, learned over the spilled vectors
//!   ([`Cells`](crate::search::Cells), as many as `cells` or [`cells_for`](crate::search::cells_for) the corpus), unless the run walks the
//!   graph or scans the store;
//! - [`nearest`]: each query's nearest neighbours become candidate pairs, while the sketches
//!   wait on disk ([`set_aside`]);
//! - [`verdicts`]: the classifier judges each candidate on the two sketches.
//!
//! [`steps`] holds what a whole run and a split one share. Beside them: [`config`] (the
//! method's settings), [`title_only`] (the store a title is searched in), [`shared_index`]
//! (the index a part of a run over one shared index searches) and [`against`](mod@against) (a
//! new batch searched together with a kept collection). A run split over machines in stages
//! is `pipeline::split::two_stage`'s, which reuses these steps.

mod against;
mod config;
pub(in crate::pipeline) mod load;
pub(in crate::pipeline) mod nearest;
pub(in crate::pipeline) mod set_aside;
mod shared_index;
mod steps;
mod title_only;
mod vectors_once;
mod verdicts;

pub use against::{add_to_collection, check_not_removed};
pub use config::TwoStageConfig;
pub(super) use nearest::distinct_pairs;
pub(in crate::pipeline) use steps::{
    confirm_aside, learn_cells, minhash_proposals, open_index, titles_by_words,
};
pub(super) use verdicts::confirm_candidates;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use self::against::CollectionSide;
use self::load::{Loaded, Upsert, load};
use self::nearest::Within;
use self::set_aside::SketchesAside;
use self::shared_index::open_collection;
use self::title_only::TitleOnlyStore;
use super::ScoredCandidates;
use super::dedup::Found;
use crate::confirm::{Confirmer, SketchFacts};
use crate::error::{Error, Result};
use crate::index::{DocumentIndex, IndexSettings};
use crate::io::{ByteRange, Input, ReadOptions, ScratchDir, SkipReport};
use crate::output::run::StageTimes;
use crate::search::QueryFile;
use crate::sketch::Signatures;

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
        ByteRange::ALL,
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
    if let (Some(part), None) = (config.part, &config.index_dir) {
        return Err(Error::Usage(format!(
            "part {part} of a two-stage run in stages signs and embeds its share and writes it \
             to its folder: run it through `neardup dedup --part` (see `neardup merge --help`)"
        )));
    }
    let work = Workspace::new(config)?;
    let collection = config
        .against
        .as_deref()
        .map(|dir| open_collection(dir, &config.settings))
        .transpose()?;
    // Cells replace the graph walk of a whole run (never of a part, nor of the exact search);
    // a batch is always searched in the cells it shares with its collection.
    let use_cells = collection.is_some()
        || match config.cells {
            Some(count) => count > 0,
            None => !config.exact_search && config.part.is_none(),
        };
    let (mut index, upsert) = match &collection {
        Some(collection) => {
            // The batch's vectors are centred as the collection's were, or not at all.
            let centred = collection.manifest().centred_on.is_some();
            let mut settings = config.clone();
            settings.settings.centre &= centred;
            let opened = open_index(&work.dir, &settings, models, use_cells)?;
            collection.check_model(opened.0.embedder())?;
            opened.0.centre_on(collection.manifest());
            opened
        }
        None => open_index(&work.dir, config, models, use_cells)?,
    };
    let dimensions = index.embedder().dimensions();
    let mut queries = match use_cells {
        true => QueryFile::of_codes(&work.dir, dimensions)?,
        false => QueryFile::create(&work.dir, dimensions)?,
    };
    let mut title_only = TitleOnlyStore::beside(&index, &work.title_only, config.part);
    // Within cells, the titles are searched among the cells' own title-only members.
    let title_store = (!use_cells).then_some(&mut title_only);
    let loaded = load(
        inputs,
        read,
        ByteRange::ALL,
        &mut index,
        Some(&mut queries),
        title_store,
        upsert,
        config.part,
    )?;
    let Loaded {
        mut corpus,
        signatures,
        sketches,
        doc_of_key,
        title_copies,
        mut times,
    } = loaded;
    let mut queries = queries.into_reader()?;

    let documents = corpus.ids.len();
    let use_cells = use_cells && documents > 0;
    let clock = Instant::now();
    let collection = match collection {
        Some(collection) if use_cells => {
            CollectionSide::read(collection, models, &doc_of_key, config)?
        }
        _ => None,
    };
    let count = match (&collection, config.exact_search) {
        (Some(collection), _) => collection.cells(),
        (None, true) => 1,
        (None, false) => config.cells_of(documents),
    };
    let held = collection.as_ref().map(CollectionSide::sketches);
    let mut proposed = use_cells.then(|| minhash_proposals((&signatures, &sketches), held, config));
    if let (Some(collection), Some(proposed)) = (&collection, proposed.as_mut()) {
        // Between the sides too: the collection's records have no title queries to find the
        // batch's title-only copies of them, and these proposals, scored at their titles, stand in.
        let between = collection.proposed_pairs(&signatures, &sketches, config);
        proposed.pairs.extend(between);
        proposed.title_only.extend(collection.title_only());
    }
    let sketches_aside = SketchesAside::write(&work.dir, signatures, sketches)?;
    let mut search_seconds = clock.elapsed().as_secs_f64();
    let (cells, reachable) = match (use_cells, collection) {
        (true, Some(collection)) => {
            let (cells, reachable, titles) = collection.into_cells(&mut queries, documents)?;
            if let Some(proposed) = proposed.as_mut() {
                proposed.held_titles = Some(titles);
            }
            (Some(cells), Some(reachable))
        }
        (true, None) => {
            let cells = learn_cells(&mut queries, documents, count, config, &mut times)?;
            (Some(cells), None)
        }
        (false, _) => (None, None),
    };
    let clock = Instant::now();
    let within = match (&cells, proposed) {
        (Some(cells), Some(proposed)) => Within::Cells(cells, Box::new(proposed), None),
        _ => Within::Store {
            index: &index,
            title_only: &title_only,
            doc_of_key: &doc_of_key,
        },
    };
    let mut neighbours = nearest::candidates(within, queries, &title_copies, config)?;
    drop((cells, doc_of_key, title_copies));
    // A search within cells stopped on request ends short.
    if crate::cancel::requested() {
        return Err(Error::Interrupted);
    }
    let reached = reachable.map(|reachable| reachable.reached(&mut neighbours, documents));
    let collection = reached.as_ref().map_or(0, |reached| reached.ids.len());
    let candidates = neighbours.len();
    search_seconds += clock.elapsed().as_secs_f64();
    times.search = search_seconds;
    times.candidates = times.upsert + times.index + times.search;
    let model = index.embedder().identity().clone();
    let confirmer = close_stores(index, title_only, config)?;

    let clock = Instant::now();
    let join = |signatures: &mut Signatures, sketches: &mut SketchFacts| {
        if let Some(mut reached) = reached {
            corpus.ids.append(&mut reached.ids);
            reached.join(signatures, sketches);
        }
    };
    let (confirmed, signatures) =
        confirm_aside(&work.dir, &confirmer, neighbours, sketches_aside, join)?;
    times.confirm = clock.elapsed().as_secs_f64();
    Ok(Found {
        corpus,
        candidates,
        scored_candidates: Some(ScoredCandidates::Held(Arc::new(confirmed.scored))),
        pairs: confirmed.pairs,
        similarity: Arc::new(move |x, y| signatures.similarity(x as usize, y as usize)),
        probes: None,
        cells: use_cells.then_some(count),
        collection,
        model: Some(model),
        times,
    })
}

/// Where a run keeps its index and what it sets aside: the kept index's folder, or a scratch
/// folder that goes with the run; and where the title-only store lives (beside the index, or
/// in a scratch folder of its own for a part, whose index folder the parts share).
struct Workspace {
    dir: PathBuf,
    title_only: PathBuf,
    _scratch: Option<ScratchDir>,
    _part_scratch: Option<ScratchDir>,
}

impl Workspace {
    fn new(config: &TwoStageConfig) -> Result<Workspace> {
        let (dir, scratch) = match &config.index_dir {
            Some(dir) => (dir.clone(), None),
            None => {
                let scratch = ScratchDir::new()?;
                (scratch.path().to_owned(), Some(scratch))
            }
        };
        let (title_only, part_scratch) = match config.part {
            Some(_) => {
                let scratch = ScratchDir::new()?;
                (scratch.path().to_owned(), Some(scratch))
            }
            None => (dir.clone(), None),
        };
        Ok(Workspace {
            dir,
            title_only,
            _scratch: scratch,
            _part_scratch: part_scratch,
        })
    }
}

/// Closes the stores once searched, deleting what a throwaway run made outside its folder
/// (a server collection), and gives their memory back before the candidates are judged.
fn close_stores(
    index: DocumentIndex,
    title_only: TitleOnlyStore,
    config: &TwoStageConfig,
) -> Result<Confirmer> {
    title_only.discard()?;
    if config.index_dir.is_none() {
        index.store().discard()?;
    }
    Ok(index.into_confirmer())
}
