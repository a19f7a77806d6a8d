//! The last stage: each candidate pair is judged by the MinHash classifier on the two
//! documents' sketches (the cosine only breaks ties and floors the candidates).

use crate::confirm::{Confirmer, SketchFacts, Standing};
use crate::pipeline::pairs::Scores;
use crate::pipeline::{Pair, ScoredPairs};
use crate::sketch::Signatures;

/// Candidates with their scores, and those confirmed.
pub(in crate::pipeline) struct Confirmed {
    /// Every candidate, scored, in the order given.
    pub scored: ScoredPairs,
    /// The confirmed ones, in the same order.
    pub pairs: Vec<Pair>,
}

/// Candidates judged at a time, where they are read in batches.
pub(super) const CONFIRM_BATCH: usize = 1 << 20;

/// The scores and verdicts of the candidates judged so far, in their order: the candidates
/// themselves may wait elsewhere (on disk, at a million documents) while they are judged.
pub(super) struct Verdicts {
    scores: Scores,
    standings: Vec<Standing>,
}

impl Verdicts {
    /// Room for the verdicts on `count` candidates, taken once: lists of tens of millions
    /// grown by doubling are copied each time, into fresh memory.
    pub(super) fn with_capacity(count: usize) -> Self {
        Verdicts {
            scores: Scores::with_capacity(count),
            standings: Vec::with_capacity(count),
        }
    }

    /// Judges `candidates` `(a, b, cosine)`, after those judged before, by the documents'
    /// sketches.
    pub(super) fn judge(
        &mut self,
        confirmer: &Confirmer,
        signatures: &Signatures,
        sketches: &SketchFacts,
        candidates: &[(u32, u32, f32)],
    ) {
        let (scores, standings) =
            confirmer.judge_all(signatures, sketches, candidates.len(), |i| {
                let (a, b, cosine) = candidates[i];
                (a, b, Some(cosine))
            });
        scores.into_iter().for_each(|score| self.scores.push(score));
        self.standings.extend(standings);
    }

    /// The `candidates` judged, the same ones in the same order, with their scores, and the
    /// ones confirmed where the threshold is `threshold`.
    pub(super) fn confirmed(self, candidates: Vec<(u32, u32, f32)>, threshold: f64) -> Confirmed {
        let scored =
            ScoredPairs::with_cosines_scored(candidates, self.scores).judged(self.standings);
        let (pairs, _) = scored
            .confirmed_at(threshold)
            .expect("judged candidates have standings");
        Confirmed { pairs, scored }
    }
}

/// Judges every candidate `(a, b, cosine)` by the documents' sketches.
pub(in crate::pipeline) fn confirm_candidates(
    confirmer: &Confirmer,
    signatures: &Signatures,
    sketches: &SketchFacts,
    candidates: Vec<(u32, u32, f32)>,
) -> Confirmed {
    let mut verdicts = Verdicts::with_capacity(candidates.len());
    for batch in candidates.chunks(CONFIRM_BATCH) {
        verdicts.judge(confirmer, signatures, sketches, batch);
    }
    verdicts.confirmed(candidates, confirmer.threshold())
}
