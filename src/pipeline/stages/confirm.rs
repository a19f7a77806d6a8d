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

/// Judges the candidates `routed` to `part` (each from every banded part that proposed it):
/// with part `part`'s sketches held, the other shares are read a block at a time for the
/// candidates whose other document they signed. The candidates come back sorted by their
/// documents.
pub(super) fn confirm(
    signed: &SignedParts,
    part: Part,
    mut routed: Vec<Routed>,
    config: &MinHashConfig,
) -> Result<Vec<Scored>> {
    let confirmer = Confirmer::new(&config.confirm, -1.0)?;
    let own = Share::read(signed, part.number)?;
    // By the share of the other document, then by that document, so that each block of its
    // share judges a run of candidates.
    let other_of = |&(a, b, _): &Routed| match own.docs.contains(&a) {
        true => b,
        false => a,
    };
    routed.par_sort_unstable_by_key(|r| (r.2, other_of(r), r.0, r.1));
    routed.dedup();
    let mut scored = Vec::with_capacity(routed.len());
    for from_share in routed.chunk_by(|x, y| x.2 == y.2) {
        let mut judge = |block: &[Routed], theirs: &Share| -> Result<()> {
            scored.extend(judge_block(&confirmer, &own, block, theirs)?);
            Ok(())
        };
        match from_share[0].2 {
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
    scored.par_sort_unstable_by_key(|s| (s.0, s.1));
    tracing::info!(part = %part, candidates = scored.len(), "confirmed");
    Ok(scored)
}

/// Judges `block`, candidates that each have one document in `own` and the other in
/// `theirs` (or both in `own`, where `theirs` is `own`).
fn judge_block(
    confirmer: &Confirmer,
    own: &Share,
    block: &[Routed],
    theirs: &Share,
) -> Result<Vec<Scored>> {
    // For each candidate: whether `own` holds its first document, and the rows of both.
    let rows: Vec<(bool, usize, usize)> = block
        .par_iter()
        .map(|&(a, b, _)| match own.docs.contains(&a) {
            true => Ok((true, own.row(a)?, theirs.row(b)?)),
            false => Ok((false, theirs.row(a)?, own.row(b)?)),
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
            None,
        )
    });
    Ok(block
        .iter()
        .zip(scores.into_iter().zip(standings))
        .map(|(&(a, b, _), (score, standing))| {
            let duplicate = standing.at(score, confirmer.threshold()).duplicate;
            (a, b, score, duplicate)
        })
        .collect())
}
