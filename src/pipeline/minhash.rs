//! The MinHash method: signatures, LSH banding, confirmation.

use std::time::Instant;

use rayon::prelude::*;

use super::{Confirm, Found, MinHashConfig, Pair, ReadOptions, StageTimes, sketch};
use crate::error::Result;
use crate::io::Input;
use crate::sketch::{MinHasher, candidate_pairs};

pub(super) fn run(inputs: &[Input], read: &ReadOptions, config: &MinHashConfig) -> Result<Found> {
    let shingler = config.shingling.shingler();
    let hasher = MinHasher::new(config.num_perm, config.seed);
    let mut times = StageTimes::default();

    let clock = Instant::now();
    let (corpus, signatures) = sketch(inputs, read, &shingler, &hasher)?;
    times.sketch = clock.elapsed().as_secs_f64();
    tracing::info!(
        documents = corpus.ids.len(),
        seconds = times.sketch,
        "sketched"
    );

    let clock = Instant::now();
    let params = config.lsh_params();
    let candidates = candidate_pairs(&signatures, params);
    times.candidates = clock.elapsed().as_secs_f64();
    tracing::info!(
        bands = params.bands,
        rows = params.rows,
        candidates = candidates.len(),
        "banded"
    );

    let clock = Instant::now();
    let scored: Vec<Pair> = candidates
        .par_iter()
        .map(|&(a, b)| Pair {
            a,
            b,
            score: signatures.similarity(a as usize, b as usize),
            cosine: None,
        })
        .collect();
    let pairs: Vec<Pair> = scored
        .iter()
        .filter(|p| match config.confirm {
            Confirm::Estimate => p.score >= config.threshold,
            Confirm::Band => true,
        })
        .copied()
        .collect();
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
