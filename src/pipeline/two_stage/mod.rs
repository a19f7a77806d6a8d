//! The two-stage method: embed every document, put the vectors in a cosine index, take each
//! document's `k` nearest neighbours as candidates, and let the MinHash classifier confirm
//! them. The vector index proposes candidates without comparing all pairs and without the
//! banding loss of LSH (a pair at Jaccard 0.75 is a candidate whenever it is among a document's
//! `k` nearest, not 1 time in 5 as with the default bands); the MinHash stage decides, so what
//! is merely on the same topic stays out.
//!
//! One file a stage, in the order a run goes through them:
//! - [`load`](mod@load): read, sign, embed, upsert, spill the query vectors;
//! - the cells each document is searched within, learned over the spilled vectors
//!   ([`Cells`], as many as `cells` or [`cells_for`] the corpus), unless the run walks the
//!   graph or scans the store;
//! - [`search`]: each query's nearest neighbours become candidate pairs, while the sketches
//!   wait on disk ([`set_aside`]);
//! - [`confirm`]: the classifier judges each candidate on the two sketches.
//!
//! Beside them: [`title_only`] (the store a title is searched in), [`part`] (a split run's
//! slice, and the shared index it searches), [`staged`] (a run in stages: parts that sign and
//! embed their share of the input, and the join that searches them), [`by_cell`] (the search of
//! a run in stages split by the cells' owners), [`by_share`] (its candidates found and confirmed
//! by the parts that embedded their documents) and [`against`](mod@against) (a new batch
//! searched together with a kept collection).

mod against;
mod by_cell;
mod by_share;
mod load;
mod nearest;
mod set_aside;
mod shared_index;
mod staged;
mod title_only;
mod vectors_once;
mod verdicts;

pub use against::{add_to_collection, check_not_removed};
pub(super) use by_cell::{
    join as join_searched, join_cells, learn as learn_cells_once, search_part as search_cells_part,
};
pub(super) use by_share::confirm_part as confirm_searched_part;
pub(super) use nearest::distinct_pairs;
pub(super) use staged::join as join_embedded;
pub use staged::{Embedded, embed_part};
pub(super) use verdicts::confirm_candidates;
use verdicts::{CONFIRM_BATCH, Confirmed, Verdicts};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use self::against::CollectionSide;
use self::load::{Loaded, Upsert, load};
use self::nearest::{Proposed, Within};
use self::set_aside::{CandidatesAside, SketchesAside};
use self::shared_index::{open_collection, open_shared};
use self::title_only::TitleOnlyStore;
use super::dedup::Found;
use super::{Part, ScoredCandidates};
use crate::confirm::{Confirmer, SketchFacts, proposed_pairs};
use crate::error::{Error, Result};
use crate::group::Linkage;
use crate::index::{DocumentIndex, IndexSettings};
use crate::io::{ByteRange, Input, ReadOptions, ScratchDir, SkipReport};
use crate::output::run::StageTimes;
use crate::progress;
use crate::search::{Cells, QueryFile, QueryReader, cells_for};
use crate::sketch::Signatures;

/// Settings of the two-stage method.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TwoStageConfig {
    /// Embedder, vector store and MinHash confirmation: what an index records.
    #[serde(flatten)]
    pub settings: IndexSettings,
    /// Nearest neighbours per document taken as candidates.
    pub top_k: usize,
    /// Search every document's true top-k by a full scan of the store instead of the cells:
    /// the same candidates on every run and engine (up to which of several identical vectors
    /// tied at the k-th place is kept), one query at a time.
    pub exact_search: bool,
    /// K-means cells each document is searched within (`Some(0)`: none, the whole index is
    /// searched through its graph; `None`: as many as [`cells_for`] the corpus, where neither
    /// `exact_search` nor `part` asks for a search of the whole index).
    pub cells: Option<usize>,
    /// The nearest cells each document is searched in.
    pub cell_probes: usize,
    /// How pairs become groups.
    pub linkage: Linkage,
    /// Keep the vector index in this folder, for `neardup query` later; a temporary one
    /// otherwise. With `part`, the index `neardup index` built, which the parts share.
    #[serde(rename = "index")]
    pub index_dir: Option<PathBuf>,
    /// Split the run (`I/N`; `None`: run whole). With `index`: search and confirm only this
    /// slice of the documents in the shared index, and write its candidates for `neardup
    /// merge`. Without: sign and embed this share of the input for `neardup merge` to search
    /// ([`staged`]).
    pub part: Option<Part>,
    /// Check the documents, a new batch, against the collection kept in this index folder too
    /// ([`against`](mod@against)).
    #[serde(default)]
    pub against: Option<PathBuf>,
    /// With `against`: add the batch's records that are kept to the collection afterwards.
    #[serde(default)]
    pub add: bool,
}

impl TwoStageConfig {
    /// The cells a run over `documents` documents searches within: as many as asked, else as
    /// many as the corpus's size gives ([`cells_for`]).
    pub(super) fn cells_of(&self, documents: usize) -> usize {
        match self.cells {
            Some(count) if count > 0 => count,
            _ => cells_for(documents),
        }
    }

    /// Checks the index settings, and that a part can be searched as it is split.
    pub fn validate(&self) -> Result<()> {
        self.settings.validate()?;
        let in_stages = self.part.is_some() && self.index_dir.is_none();
        if in_stages && (self.exact_search || self.cells == Some(0)) {
            return Err(Error::Usage(
                "a `part` without `index` signs and embeds its share, and the merge searches \
                 every share within cells: drop `exact_search` and `cells` 0, or build a shared \
                 index first with `neardup index INPUT --index DIR` and give each part `index`"
                    .into(),
            ));
        }
        if self.cells.is_some_and(|n| n > 0) && self.exact_search {
            return Err(Error::Usage(
                "`cells` compares each document with a few cells and `exact_search` with every \
                 document: give one of them"
                    .into(),
            ));
        }
        if self.cells.is_some_and(|n| n > 0) && self.part.is_some() && self.index_dir.is_some() {
            return Err(Error::Usage(
                "`cells` is learned over a whole run; a `part` searches the shared index as it \
                 was built: drop `cells`"
                    .into(),
            ));
        }
        if self.add && self.against.is_none() {
            return Err(Error::Usage(
                "`add` adds a batch's new records to the collection given by `against`: give \
                 `against` too"
                    .into(),
            ));
        }
        if self.against.is_some() && (self.part.is_some() || self.index_dir.is_some()) {
            return Err(Error::Usage(
                "`against` checks a new batch against a kept index; `index` and `part` build or \
                 split one: give `against` alone"
                    .into(),
            ));
        }
        Ok(())
    }
}

impl Default for TwoStageConfig {
    /// The index's defaults, searched within as many cells as the corpus asks for.
    fn default() -> Self {
        TwoStageConfig {
            settings: IndexSettings::default(),
            top_k: crate::search::DEFAULT_TOP_K,
            exact_search: false,
            cells: None,
            cell_probes: crate::search::DEFAULT_CELL_PROBES,
            linkage: Linkage::default(),
            index_dir: None,
            part: None,
            against: None,
            add: false,
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
    let propose = proposes(config, count);
    let mut proposed =
        use_cells.then(|| minhash_proposals(&signatures, &sketches, config, propose));
    if let (Some(collection), Some(proposed)) = (&collection, proposed.as_mut()) {
        // Even in one cell: the collection's records have no title queries to find the batch's
        // title-only copies of them, and these proposals, scored at their titles, stand in.
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
        (Some(cells), Some(proposed)) => Within::Cells(cells, proposed, None),
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

/// The index a run searches, and what loading puts in it: a part opens the shared index and
/// adds nothing; a kept index holds vectors and sketches; a throwaway one vectors only, or
/// nothing where the cells search the spilled vectors instead.
fn open_index(
    dir: &Path,
    config: &TwoStageConfig,
    models: &Path,
    use_cells: bool,
) -> Result<(DocumentIndex, Upsert)> {
    Ok(match (config.part, &config.index_dir) {
        (Some(_), _) => (open_shared(dir, &config.settings, models)?, Upsert::Nothing),
        (None, Some(_)) => (
            DocumentIndex::create(dir, &config.settings, models)?,
            Upsert::WithSketches,
        ),
        (None, None) => (
            DocumentIndex::create(dir, &config.settings.for_one_run(), models)?,
            if use_cells {
                Upsert::Unread
            } else {
                Upsert::VectorsOnly
            },
        ),
    })
}

/// Whether MinHash's pairs join a search within `count` cells: one cell compares every
/// document with every other, so no boundary parts two near-copies (unless cells were asked
/// for).
pub(super) fn proposes(config: &TwoStageConfig, count: usize) -> bool {
    config.cells.is_some() || count > 1
}

/// What MinHash proposes (where `propose`), read off the sketches before they go aside: cells
/// may part two near-copies whose vectors sit near a boundary, and these pairs, cheap beside
/// the search, join the candidates.
fn minhash_proposals(
    signatures: &Signatures,
    sketches: &SketchFacts,
    config: &TwoStageConfig,
    propose: bool,
) -> Proposed {
    let clock = Instant::now();
    let documents = signatures.len();
    let proposed = Proposed {
        pairs: match propose {
            true => proposed_pairs(signatures, sketches, &config.settings.confirm),
            false => Vec::new(),
        },
        title_only: (0..documents)
            .map(|doc| sketches.facts(doc).title_only())
            .collect(),
        held_titles: None,
    };
    tracing::info!(
        pairs = proposed.pairs.len(),
        seconds = clock.elapsed().as_secs_f64(),
        "MinHash proposed its pairs"
    );
    proposed
}

/// Learns `count` k-means cells over the spilled vectors (counted as index time).
fn learn_cells(
    queries: &mut QueryReader,
    documents: usize,
    count: usize,
    config: &TwoStageConfig,
    times: &mut StageTimes,
) -> Result<Cells> {
    let clock = Instant::now();
    let _spinner = progress::spinner("learning the cells");
    let cells = Cells::learn(queries, documents, count, config.cell_probes)?;
    times.index += clock.elapsed().as_secs_f64();
    Ok(cells)
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

/// Judges the candidates: they wait on disk while the sketches come back, and are judged as
/// they are read, so that the two are never held at once; `join` appends the sketches of the
/// documents that came from elsewhere (a collection's) to those read back. Returns the
/// verdicts and the signatures (which score the groups).
fn confirm_aside(
    dir: &Path,
    confirmer: &Confirmer,
    neighbours: Vec<(u32, u32, f32)>,
    sketches_aside: SketchesAside,
    join: impl FnOnce(&mut Signatures, &mut SketchFacts),
) -> Result<(Confirmed, Signatures)> {
    let clock = Instant::now();
    let mut candidates_aside = CandidatesAside::write(dir, neighbours)?;
    let (mut signatures, mut sketches) = sketches_aside.read_back()?;
    join(&mut signatures, &mut sketches);
    tracing::debug!(
        seconds = clock.elapsed().as_secs_f64(),
        "candidates set aside, sketches read back"
    );
    let mut verdicts = Verdicts::with_capacity(candidates_aside.len());
    candidates_aside.for_each_batch(CONFIRM_BATCH, |batch| {
        // Stopped on request, the rest is passed over, and the stage reports it below.
        if !crate::cancel::requested() {
            verdicts.judge(confirmer, &signatures, &sketches, batch)
        }
    })?;
    if crate::cancel::requested() {
        return Err(Error::Interrupted);
    }
    drop(sketches);
    Ok((
        verdicts.confirmed(candidates_aside.read_back()?, confirmer.threshold()),
        signatures,
    ))
}
