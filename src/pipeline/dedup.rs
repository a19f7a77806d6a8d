//! One run from corpus to groups: find the pairs, group them, add to a kept collection.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::method::Method;
use super::pairs::{Pair, ScoredCandidates};
use super::{Part, two_stage};
use crate::confirm::Rule;
use crate::embed::ModelIdentity;
use crate::error::Result;
use crate::group::{Group, KeepPolicy, linked_groups};
use crate::index::Collection;
use crate::io::{Corpus, FolderLock, Input, ReadOptions};
use crate::output::run::StageTimes;

/// The outcome of a deduplication run, before it is written.
pub struct Dedup {
    /// The documents read.
    pub corpus: Corpus,
    /// Number of candidate pairs considered.
    pub candidates: usize,
    /// Every candidate with its score, where the method scores more pairs than it confirms
    /// (MinHash: all LSH collisions), for threshold sweeps.
    pub scored_candidates: Option<ScoredCandidates>,
    /// Confirmed pairs.
    pub pairs: Vec<Pair>,
    /// What a pair's score is.
    pub score_name: &'static str,
    /// The score a pair had to reach.
    pub threshold: f64,
    /// Duplicate groups.
    pub groups: Vec<Group>,
    /// Probes spent by SimHash's probing search, if used.
    pub probes: Option<usize>,
    /// The k-means cells two-stage searched within, if it did.
    pub cells: Option<usize>,
    /// Where the time went.
    pub times: StageTimes,
    /// The slice of a split run this was, if one: its pairs and candidates are written, and
    /// the groups wait for `neardup merge`.
    pub part: Option<Part>,
    /// How many of the corpus's last ids are documents of the collection a batch was checked
    /// against (`against`), which no input holds: they have no record.
    pub collection: usize,
    /// The model the vectors came from, where the method embedded (two-stage).
    pub model: Option<ModelIdentity>,
    /// The similarity groups choose representatives by, where it was kept to group again
    /// ([`dedup_to_rethreshold`]).
    pub(super) similarity: Option<Similarity>,
}

impl Dedup {
    /// How many documents the inputs gave (the ids before the collection's).
    pub fn records(&self) -> usize {
        self.corpus.ids.len() - self.collection
    }

    /// The rule that confirmed each pair, in the order of [`Dedup::pairs`], where the run
    /// judged its candidates itself (MinHash and two-stage, not a merge of parts).
    pub fn pair_rules(&self) -> Option<Vec<Rule>> {
        let (_, rules) = self
            .scored_candidates
            .as_ref()?
            .held()?
            .confirmed_at(self.threshold)?;
        (rules.len() == self.pairs.len()).then_some(rules)
    }
}

/// What a method found: its confirmed pairs, and the similarity the shared grouping step
/// chooses representatives by (owning whatever sketches it needs).
pub(super) struct Found {
    pub(super) corpus: Corpus,
    pub(super) candidates: usize,
    pub(super) scored_candidates: Option<ScoredCandidates>,
    pub(super) pairs: Vec<Pair>,
    pub(super) similarity: Similarity,
    pub(super) probes: Option<usize>,
    pub(super) cells: Option<usize>,
    /// See [`Dedup::collection`].
    pub(super) collection: usize,
    /// See [`Dedup::model`].
    pub(super) model: Option<ModelIdentity>,
    pub(super) times: StageTimes,
}

/// The similarity of two documents that a group's representative is chosen by (owning the
/// sketches it needs).
pub(super) type Similarity = Arc<dyn Fn(u32, u32) -> f64 + Send + Sync>;

/// Runs `method` over `inputs`; models (for two-stage) are looked up under `models`.
pub(super) fn dedup(
    inputs: &[Input],
    read: &ReadOptions,
    method: &Method,
    models: &Path,
) -> Result<Dedup> {
    find_and_group(inputs, read, method, models, false)
}

/// [`dedup`], keeping what [`rethreshold`](super::rethreshold()) needs to group the pairs again: the similarity
/// groups are scored by, and so the signatures it reads (half a kilobyte a document under the
/// default 128 permutations), for as long as the run is held.
pub(super) fn dedup_to_rethreshold(
    inputs: &[Input],
    read: &ReadOptions,
    method: &Method,
    models: &Path,
) -> Result<Dedup> {
    find_and_group(inputs, read, method, models, true)
}

/// A run of `method`, grouped ([`group`]'s `keep_similarity`).
fn find_and_group(
    inputs: &[Input],
    read: &ReadOptions,
    method: &Method,
    models: &Path,
    keep_similarity: bool,
) -> Result<Dedup> {
    method.validate()?;
    let found = method.find(inputs, read, models)?;
    Ok(group(found, method, keep_similarity))
}

/// The lock on the collection a run of `method` adds its records to, where it asks to
/// (`against` with `add`; see [`Collection::lock_for_adding`]): taken before the run reads the
/// collection, and held until [`add_where_asked`] is done.
pub(super) fn lock_collection_to_add(method: &Method) -> Result<Option<FolderLock>> {
    match method {
        Method::TwoStage(config) if config.add => config
            .against
            .as_deref()
            .map(Collection::lock_for_adding)
            .transpose(),
        _ => Ok(None),
    }
}

/// Adds the records a run of `method` kept to the collection it was checked against, where it
/// asks to (`against` with `add`): how many were added, and to which index.
pub(super) fn add_where_asked<'m>(
    method: &'m Method,
    inputs: &[Input],
    read: &ReadOptions,
    dedup: &Dedup,
    keep: &KeepPolicy,
    models: &Path,
) -> Result<Option<(usize, &'m Path)>> {
    let Method::TwoStage(config) = method else {
        return Ok(None);
    };
    let (Some(collection), true) = (&config.against, config.add) else {
        return Ok(None);
    };
    let added = two_stage::add_to_collection(inputs, read, dedup, keep, collection, models);
    two_stage::check_not_removed(collection)?;
    Ok(Some((added?, collection)))
}

/// Groups what a method found: the step every method, and a merge of parts, shares. With
/// `keep_similarity`, the run keeps the similarity it grouped by, to group again.
pub(super) fn group(mut found: Found, method: &Method, keep_similarity: bool) -> Dedup {
    let clock = Instant::now();
    let part = method.part();
    let edges: Vec<(u32, u32)> = found.pairs.iter().map(|p| (p.a, p.b)).collect();
    // A part's pairs are a slice of the run's: its groups are the merge's to find.
    let groups = match part {
        Some(_) => Vec::new(),
        None => linked_groups(
            &found.corpus.ids,
            &edges,
            method.linkage(),
            &*found.similarity,
        ),
    };
    found.times.group = clock.elapsed().as_secs_f64();
    Dedup {
        corpus: found.corpus,
        candidates: found.candidates,
        scored_candidates: found.scored_candidates,
        pairs: found.pairs,
        score_name: method.score_name(),
        threshold: method.threshold(),
        groups,
        probes: found.probes,
        cells: found.cells,
        times: found.times,
        part,
        collection: found.collection,
        model: found.model,
        similarity: keep_similarity.then_some(found.similarity),
    }
}
