//! The last stage: each candidate pair is judged by the MinHash classifier on the two
//! documents' sketches (the cosine only breaks ties and floors the candidates).

use rayon::prelude::*;

use crate::confirm::{Confirmer, SketchFacts};
use crate::pipeline::Pair;
use crate::sketch::Signatures;

/// Candidates with their scores, and those confirmed.
pub(in crate::pipeline) struct Confirmed {
    /// Every candidate, scored, in the order given.
    pub scored: Vec<Pair>,
    /// The confirmed ones, in the same order.
    pub pairs: Vec<Pair>,
}

/// Candidates judged at a time; each batch's memory goes back before the next.
const CONFIRM_BATCH: usize = 1 << 20;

/// Judges every candidate `(a, b, cosine)` by the documents' sketches. The candidates are
/// consumed from the back, a batch at a time, so that their memory shrinks as the scored
/// pairs (twice their size) grow: at a million documents they are tens of millions.
pub(in crate::pipeline) fn confirm_candidates(
    confirmer: &Confirmer,
    signatures: &Signatures,
    sketches: &SketchFacts,
    mut candidates: Vec<(u32, u32, f32)>,
) -> Confirmed {
    let mut scored = Vec::with_capacity(candidates.len());
    let mut duplicate = Vec::with_capacity(candidates.len());
    while !candidates.is_empty() {
        let start = candidates.len().saturating_sub(CONFIRM_BATCH);
        let (batch, verdicts): (Vec<Pair>, Vec<bool>) = candidates[start..]
            .par_iter()
            .rev()
            .map(|&(a, b, cosine)| {
                let (evidence, verdict) = confirmer.confirm(
                    sketches.get(signatures, a as usize),
                    sketches.get(signatures, b as usize),
                    cosine,
                );
                let pair = Pair {
                    a,
                    b,
                    score: evidence.jaccard,
                    cosine: Some(cosine),
                };
                (pair, verdict.duplicate)
            })
            .unzip();
        scored.extend(batch);
        duplicate.extend(verdicts);
        candidates.truncate(start);
        candidates.shrink_to_fit();
    }
    scored.reverse();
    duplicate.reverse();
    let pairs = scored
        .iter()
        .zip(&duplicate)
        .filter(|&(_, &d)| d)
        .map(|(p, _)| *p)
        .collect();
    Confirmed { scored, pairs }
}
