//! Steps that the whole run and the run in stages share: opening the index a run writes into,
//! MinHash's own proposals, learning the cells, and judging candidates set aside on disk.

use std::path::Path;
use std::time::Instant;

use super::config::TwoStageConfig;
use super::load::Upsert;
use super::nearest::Proposed;
use super::set_aside::{CandidatesAside, SketchesAside};
use super::shared_index::open_shared;
use super::verdicts::{CONFIRM_BATCH, Confirmed, Verdicts};
use crate::confirm::{Confirmer, SketchFacts, TitleOnlyIndex, proposed_pairs};
use crate::error::{Error, Result};
use crate::index::DocumentIndex;
use crate::output::run::StageTimes;
use crate::progress;
use crate::search::{Cells, QueryReader};
use crate::sketch::Signatures;

/// The index a run searches, and what loading puts in it: a part opens the shared index and
/// adds nothing; a kept index holds vectors and sketches; a throwaway one vectors only, or
/// nothing where the cells search the spilled vectors instead.
pub(in crate::pipeline) fn open_index(
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

/// Whether, searching within cells, the pairs of a record and a title-only document come from
/// their titles' words ([`TitleOnlyIndex`]) instead of a search of each title among the
/// title-only documents: where the rule matches such pairs by words.
pub(in crate::pipeline) fn titles_by_words(config: &TwoStageConfig) -> bool {
    config.settings.confirm.rule.matches_title_only_by_words()
}

/// What MinHash proposes, read off the sketches before they go aside: these pairs, cheap beside
/// the search, join the candidates of a search within cells, however many. Cells part some
/// near-copies whose vectors sit near a boundary, and even in one cell a document's top k may
/// fill before a near-copy whose words MinHash sees (decision 0039). Where the rule matches a
/// title-only record by its title's words ([`titles_by_words`]), with them come the pairs
/// those words make, within the run's documents and between them and a collection's (`held`,
/// numbered after them): they stand in for the titles' search.
pub(in crate::pipeline) fn minhash_proposals(
    (signatures, sketches): (&Signatures, &SketchFacts),
    held: Option<&SketchFacts>,
    config: &TwoStageConfig,
) -> Proposed {
    let clock = Instant::now();
    let documents = signatures.len();
    let proposed = Proposed {
        pairs: proposed_pairs(signatures, sketches, &config.settings.confirm),
        title_only: (0..documents)
            .map(|doc| sketches.facts(doc).title_only())
            .collect(),
        held_titles: None,
        by_title_words: titles_by_words(config).then(|| title_copies(sketches, held, config)),
    };
    tracing::info!(
        pairs = proposed.pairs.len(),
        by_title_words = proposed.by_title_words.as_ref().map(Vec::len),
        seconds = clock.elapsed().as_secs_f64(),
        "MinHash proposed its pairs"
    );
    proposed
}

/// The pairs `(record, title-only record)` that their titles' words make ([`TitleOnlyIndex`]):
/// within `sketches`, and between them and `held` (numbered after them), not within `held`.
fn title_copies(
    sketches: &SketchFacts,
    held: Option<&SketchFacts>,
    config: &TwoStageConfig,
) -> Vec<(u32, u32)> {
    let clock = Instant::now();
    let documents = sketches.len() as u32;
    let sides = std::iter::once((sketches, 0)).chain(held.map(|held| (held, documents)));
    let index = TitleOnlyIndex::of_sketches(sides.clone(), &config.settings.confirm.rule);
    let crosses = |record: u32, other: u32| record < documents || other < documents;
    let pairs: Vec<(u32, u32)> =
        (sides.flat_map(|side| index.copies_of_records(side, config.top_k + 1, crosses))).collect();
    tracing::info!(
        pairs = pairs.len(),
        seconds = clock.elapsed().as_secs_f64(),
        "records paired with their title-only copies by the titles' words"
    );
    pairs
}

/// Learns `count` k-means cells over the spilled vectors (counted as index time).
pub(in crate::pipeline) fn learn_cells(
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

/// Judges the candidates: they wait on disk while the sketches come back, and are judged as
/// they are read, so that the two are never held at once; `join` appends the sketches of the
/// documents that came from elsewhere (a collection's) to those read back. Returns the
/// verdicts and the signatures (which score the groups).
pub(in crate::pipeline) fn confirm_aside(
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
