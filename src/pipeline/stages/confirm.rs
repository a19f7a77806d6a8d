//! Stage 3, confirm: the candidates routed to one part judged, a share of sketches at a time.

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
            false => Err(Error::Usage(format!(
                "document {doc} is not in the signed part it was routed from: give the signed \
                 folders of one run, each as it was written"
            ))),
        }
    }
}

/// Judges the candidates `routed` to `part` (each from every banded part that proposed it):
/// with part `part`'s sketches held, the other shares are read one at a time for the
/// candidates whose other document they signed.
pub(super) fn confirm(
    signed: &SignedParts,
    part: Part,
    mut routed: Vec<Routed>,
    config: &MinHashConfig,
) -> Result<Vec<Scored>> {
    let share_of = |number: u32| Share::read(signed, number);
    let confirmer = Confirmer::new(&config.confirm, -1.0)?;
    // By the share of the other document, then as one run orders candidates.
    routed.par_sort_unstable_by_key(|&(a, b, of_b)| (of_b, a, b));
    routed.dedup();
    let own = share_of(part.number)?;
    let mut scored = Vec::with_capacity(routed.len());
    for block in routed.chunk_by(|x, y| x.2 == y.2) {
        let other;
        let theirs = match block[0].2 {
            number if number == part.number => &own,
            number => {
                other = share_of(number)?;
                &other
            }
        };
        // For each candidate: whether part `part` holds its first document, and the rows
        // of both.
        let rows: Vec<(bool, usize, usize)> = block
            .par_iter()
            .map(|&(a, b, _)| match own.docs.contains(&a) {
                true => Ok((true, own.row(a)?, theirs.row(b)?)),
                false => Ok((false, theirs.row(a)?, own.row(b)?)),
            })
            .collect::<Result<_>>()?;
        let (scores, duplicate) = confirmer.judge_each(rows.len(), |i| {
            let (first_own, x, y) = rows[i];
            let (of_a, of_b) = match first_own {
                true => (&own, theirs),
                false => (theirs, &own),
            };
            (
                of_a.sketches.get(&of_a.signatures, x),
                of_b.sketches.get(&of_b.signatures, y),
                None,
            )
        });
        scored.extend(
            block
                .iter()
                .zip(scores.into_iter().zip(duplicate))
                .map(|(&(a, b, _), (score, duplicate))| (a, b, score, duplicate)),
        );
    }
    tracing::info!(part = %part, candidates = scored.len(), "confirmed");
    Ok(scored)
}
