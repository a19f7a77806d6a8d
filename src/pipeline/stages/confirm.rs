//! Stage 3, confirm: the candidates routed to one part judged, its own share of sketches held
//! and the others read a block at a time.

use rayon::prelude::*;

use super::{Routed, Scored, Share, SignedParts};
use crate::confirm::Confirmer;
use crate::error::{Error, Result};
use crate::pipeline::{MinHashConfig, Part};

impl Share {
    /// The row of document `doc`, which this share holds.
    fn row(&self, doc: u32) -> Result<usize> {
        match self.docs.contains(&doc) {
            true => Ok((doc - self.docs.start) as usize),
            false => Err(not_routed_from(doc)),
        }
    }
}

/// The error of a candidate whose document `doc` is not in the share it was routed from.
fn not_routed_from(doc: u32) -> Error {
    Error::Usage(format!(
        "document {doc} is not in the signed part it was routed from: give the signed folders \
         of one run, each as it was written"
    ))
}

/// A candidate routed to the part that judges it.
pub(in crate::pipeline) trait ToJudge: Copy + PartialEq + Send + Sync {
    fn routed(&self) -> Routed;
    /// The cosine of its documents' vectors, which the classifier takes where a run has them.
    fn cosine(&self) -> Option<f32>;
}

/// A MinHash candidate.
impl ToJudge for Routed {
    fn routed(&self) -> Routed {
        *self
    }

    fn cosine(&self) -> Option<f32> {
        None
    }
}

/// A two-stage candidate, with its cosine.
impl ToJudge for (Routed, f32) {
    fn routed(&self) -> Routed {
        self.0
    }

    fn cosine(&self) -> Option<f32> {
        Some(self.1)
    }
}

/// Judges the candidates `routed` to `part` (each from every part that proposed it): with part
/// `part`'s sketches held, the other shares are read a block at a time for the candidates
/// whose other document they signed. The candidates come back sorted by their documents.
pub(in crate::pipeline) fn confirm<C: ToJudge>(
    signed: &SignedParts,
    part: Part,
    mut routed: Vec<C>,
    config: &MinHashConfig,
) -> Result<Vec<Scored>> {
    let confirmer = Confirmer::new(&config.confirm, -1.0)?;
    let own = Share::read(signed, part.number)?;
    // By the share of the other document, then by that document, so that each block of its
    // share judges a run of candidates.
    let other_of = |c: &C| match c.routed() {
        (a, b, _) if own.docs.contains(&a) => b,
        (a, _, _) => a,
    };
    routed.par_sort_unstable_by_key(|c| {
        let (a, b, of_other) = c.routed();
        (of_other, other_of(c), a, b)
    });
    routed.dedup();
    let mut scored = Vec::with_capacity(routed.len());
    for from_share in routed.chunk_by(|x, y| x.routed().2 == y.routed().2) {
        let mut judge = |block: &[C], theirs: &Share| -> Result<()> {
            scored.extend(judge_block(&confirmer, &own, block, theirs)?);
            Ok(())
        };
        match from_share[0].routed().2 {
            number if number == part.number => judge(from_share, &own)?,
            number => {
                let mut rest = from_share;
                let mut failed = Ok(());
                Share::visit(signed, number, |theirs| {
                    let here = rest.partition_point(|r| theirs.docs.contains(&other_of(r)));
                    let (block, after) = rest.split_at(here);
                    rest = after;
                    if failed.is_ok() && !block.is_empty() {
                        failed = judge(block, &theirs);
                    }
                })?;
                failed?;
                if let Some(r) = rest.first() {
                    return Err(not_routed_from(other_of(r)));
                }
            }
        }
    }
    // By their documents: the join merges the parts' lists as they come.
    scored.par_sort_unstable_by_key(|s| (s.a, s.b));
    tracing::info!(part = %part, candidates = scored.len(), "confirmed");
    Ok(scored)
}

/// Judges `block`, candidates that each have one document in `own` and the other in
/// `theirs` (or both in `own`, where `theirs` is `own`).
fn judge_block<C: ToJudge>(
    confirmer: &Confirmer,
    own: &Share,
    block: &[C],
    theirs: &Share,
) -> Result<Vec<Scored>> {
    // For each candidate: whether `own` holds its first document, and the rows of both.
    let rows: Vec<(bool, usize, usize)> = block
        .par_iter()
        .map(|c| match c.routed() {
            (a, b, _) if own.docs.contains(&a) => Ok((true, own.row(a)?, theirs.row(b)?)),
            (a, b, _) => Ok((false, theirs.row(a)?, own.row(b)?)),
        })
        .collect::<Result<_>>()?;
    let (scores, standings) = confirmer.judge_each(rows.len(), |i| {
        let (first_own, x, y) = rows[i];
        let (of_a, of_b) = match first_own {
            true => (own, theirs),
            false => (theirs, own),
        };
        (
            of_a.sketches.get(&of_a.signatures, x),
            of_b.sketches.get(&of_b.signatures, y),
            block[i].cosine(),
        )
    });
    Ok(block
        .iter()
        .zip(scores.into_iter().zip(standings))
        .map(|(c, (score, standing))| {
            let (a, b, _) = c.routed();
            Scored {
                a,
                b,
                score,
                duplicate: standing.at(score, confirmer.threshold()).duplicate,
                cosine: c.cosine(),
            }
        })
        .collect())
}
