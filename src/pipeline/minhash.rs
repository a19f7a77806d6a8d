//! The MinHash method: signatures, LSH banding, confirmation.

use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::{Found, Pair, StageTimes};
use crate::confirm::{ConfirmSettings, Confirmer, SketchFacts};
use crate::error::Result;
use crate::group::Linkage;
use crate::io::{Corpus, Input, ReadOptions, read_corpus};
use crate::sketch::{Signatures, candidate_pairs};

/// Settings of the MinHash method.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MinHashConfig {
    /// Shingles, signatures and the rule that confirms a candidate.
    #[serde(flatten)]
    pub confirm: ConfirmSettings,
    /// How pairs become groups [default: single].
    #[serde(default)]
    pub linkage: Linkage,
}

impl MinHashConfig {
    /// Checks every part.
    pub fn validate(&self) -> Result<()> {
        self.confirm.validate()
    }
}

pub(super) fn run(inputs: &[Input], read: &ReadOptions, config: &MinHashConfig) -> Result<Found> {
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
    let candidates = candidate_pairs(&signatures, banding);
    times.candidates = clock.elapsed().as_secs_f64();
    tracing::info!(
        bands = banding.bands,
        rows = banding.rows,
        candidates = candidates.len(),
        "banded"
    );

    let clock = Instant::now();
    let verdicts: Vec<(Pair, bool)> = candidates
        .par_iter()
        .map(|&(a, b)| {
            let (x, y) = (a as usize, b as usize);
            let (evidence, verdict) =
                confirmer.decide(sketches.get(&signatures, x), sketches.get(&signatures, y));
            let pair = Pair {
                a,
                b,
                score: evidence.jaccard,
                cosine: None,
            };
            (pair, verdict.duplicate)
        })
        .collect();
    let pairs: Vec<Pair> = verdicts.iter().filter(|v| v.1).map(|v| v.0).collect();
    let scored = verdicts.into_iter().map(|v| v.0).collect();
    times.confirm = clock.elapsed().as_secs_f64();
    tracing::info!(pairs = pairs.len(), "confirmed");

    Ok(Found {
        corpus,
        candidates: candidates.len(),
        scored_candidates: Some(scored),
        pairs,
        similarity: Box::new(move |x, y| signatures.similarity(x as usize, y as usize)),
        probes: None,
        times,
    })
}

/// Reads every input and signs every document, keeping the facts the evidence rule needs.
fn sketch(
    inputs: &[Input],
    options: &ReadOptions,
    confirmer: &Confirmer,
) -> Result<(Corpus, Signatures, SketchFacts)> {
    let mut signatures = Signatures::new(confirmer.num_perm());
    let mut sketches = SketchFacts::default();
    let corpus = read_corpus(
        inputs,
        options,
        |record| confirmer.sign(record),
        |sketch| {
            signatures.push(&sketch.signature, sketch.shingles == 0);
            sketches.push(sketch.shingles, sketch.facts);
        },
    )?;
    Ok((corpus, signatures, sketches))
}
