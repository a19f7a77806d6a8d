//! The MinHash method: signatures, LSH banding, confirmation.

use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::{Found, Pair, StageTimes};
use crate::error::Result;
use crate::group::Linkage;
use crate::io::{Corpus, Input, ReadOptions, read_corpus};
use crate::sketch::{
    ConfirmRule, MinHashParams, MinHasher, Signatures, Sketch, SketchFacts, candidate_pairs,
};
use crate::text::{Shingler, ShinglingSpec, UNIGRAMS};

/// Settings of the MinHash method.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MinHashConfig {
    /// Shingles.
    #[serde(flatten)]
    pub shingling: ShinglingSpec,
    /// Signature length, seed, banding.
    #[serde(flatten)]
    pub minhash: MinHashParams,
    /// Threshold and how candidates are confirmed.
    #[serde(flatten)]
    pub rule: ConfirmRule,
    /// How pairs become groups [default: single].
    #[serde(default)]
    pub linkage: Linkage,
}

impl MinHashConfig {
    /// Checks every part.
    pub fn validate(&self) -> Result<()> {
        self.shingling.validate()?;
        self.minhash.validate()?;
        self.rule.validate()
    }
}

pub(super) fn run(inputs: &[Input], read: &ReadOptions, config: &MinHashConfig) -> Result<Found> {
    let shingler = config.shingling.shingler(UNIGRAMS)?;
    let hasher = config.minhash.hasher();
    let mut times = StageTimes::default();

    let clock = Instant::now();
    let (corpus, signatures, sketches) = sketch(inputs, read, &shingler, &hasher)?;
    times.sketch = clock.elapsed().as_secs_f64();
    tracing::info!(
        documents = corpus.ids.len(),
        seconds = times.sketch,
        "sketched"
    );

    let clock = Instant::now();
    let banding = config.minhash.banding(&config.rule);
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
            let (evidence, verdict) = config.rule.decide(
                sketches.get(&signatures, x),
                sketches.get(&signatures, y),
                banding,
            );
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

/// Reads every input and signs every document with `hasher`, keeping the facts the evidence
/// rule needs.
fn sketch(
    inputs: &[Input],
    options: &ReadOptions,
    shingler: &Shingler,
    hasher: &MinHasher,
) -> Result<(Corpus, Signatures, SketchFacts)> {
    let mut signatures = Signatures::new(hasher.num_perm());
    let mut sketches = SketchFacts::default();
    let corpus = read_corpus(
        inputs,
        options,
        |record| Sketch::of(record, shingler, hasher).0,
        |sketch| {
            signatures.push(&sketch.signature, sketch.shingles == 0);
            sketches.push(sketch.shingles, sketch.facts);
        },
    )?;
    Ok((corpus, signatures, sketches))
}
