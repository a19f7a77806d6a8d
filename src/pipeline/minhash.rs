//! The MinHash method: signatures, LSH banding, confirmation.

use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::dedup::Found;
use super::{Part, ScoredCandidates, ScoredPairs};
use crate::confirm::{ConfirmSettings, Confirmer, SignOnce, SketchFacts, proposed_pairs};
use crate::error::Result;
use crate::group::Linkage;
use crate::io::{Corpus, Input, ReadOptions, read_corpus};
use crate::output::run::StageTimes;
use crate::sketch::Signatures;

/// Settings of the MinHash method.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MinHashConfig {
    /// Shingles, signatures and the rule that confirms a candidate.
    #[serde(flatten)]
    pub confirm: ConfirmSettings,
    /// How pairs become groups.
    pub linkage: Linkage,
    /// Sign only this part of the documents (`I/N`), for `neardup merge` (`None`: run whole;
    /// see `pipeline/split/minhash/`).
    pub part: Option<Part>,
}

impl MinHashConfig {
    /// Checks every part.
    pub fn validate(&self) -> Result<()> {
        if self.confirm.rule.is_learned() {
            return Err(crate::error::Error::Setting {
                key: "match",
                message: "meaning weighs the embeddings' cosine, which the minhash method has \
                          none of: use it with --method two-stage"
                    .into(),
            });
        }
        self.confirm.validate()
    }
}

pub(super) fn run(inputs: &[Input], read: &ReadOptions, config: &MinHashConfig) -> Result<Found> {
    if let Some(part) = config.part {
        return Err(crate::error::Error::Usage(format!(
            "part {part} of a split MinHash run signs its share and writes it to its folder: \
             run it through `neardup dedup --part` (see `neardup merge --help`)"
        )));
    }
    // No embeddings here, so no cosine floor.
    let confirmer = Confirmer::new(&config.confirm, -1.0)?;
    let mut times = StageTimes::default();

    let clock = Instant::now();
    let (corpus, signatures, sketches) = sketch(inputs, read, &confirmer)?;
    times.sketch = clock.elapsed().as_secs_f64();
    tracing::info!(
        documents = corpus.ids.len(),
        seconds = times.sketch,
        "sketched"
    );

    let clock = Instant::now();
    let banding = confirmer.banding();
    let candidates = proposed_pairs(&signatures, &sketches, &config.confirm);
    times.candidates = clock.elapsed().as_secs_f64();
    tracing::info!(
        bands = banding.bands,
        rows = banding.rows,
        candidates = candidates.len(),
        "banded"
    );

    if crate::cancel::requested() {
        return Err(crate::error::Error::Interrupted);
    }
    let clock = Instant::now();
    let (scores, standings) = confirmer.judge_all(&signatures, &sketches, candidates.len(), |i| {
        let (a, b) = candidates[i];
        (a, b, None)
    });
    let scored = ScoredPairs::without_cosines(candidates, scores).judged(standings);
    let (pairs, _) = scored
        .confirmed_at(confirmer.threshold())
        .expect("judged candidates have standings");
    times.confirm = clock.elapsed().as_secs_f64();
    tracing::info!(pairs = pairs.len(), "confirmed");

    Ok(Found {
        corpus,
        candidates: scored.len(),
        scored_candidates: Some(ScoredCandidates::Held(Arc::new(scored))),
        pairs,
        similarity: Arc::new(move |x, y| signatures.similarity(x as usize, y as usize)),
        probes: None,
        cells: None,
        collection: 0,
        model: None,
        times,
    })
}

/// Reads every input and signs every document, keeping the facts the evidence rule needs; an
/// exact copy of an earlier text takes that one's sketch ([`SignOnce`]).
pub(super) fn sketch(
    inputs: &[Input],
    options: &ReadOptions,
    confirmer: &Confirmer,
) -> Result<(Corpus, Signatures, SketchFacts)> {
    let mut signatures = Signatures::new(confirmer.num_perm());
    let mut sketches = SketchFacts::default();
    let once = SignOnce::new(confirmer);
    let corpus = read_corpus(
        inputs,
        options,
        |record| once.sign(record),
        |signing| {
            once.keep(signing, &mut signatures, &mut sketches);
        },
    )?;
    tracing::info!(
        copies = once.copies(),
        "exact copies took their first's sketch"
    );
    Ok((corpus, signatures, sketches))
}
