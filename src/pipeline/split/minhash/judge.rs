//! Stage 3, confirm: the candidates routed to one part judged, its own share of sketches held
//! and the others read a block at a time.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::io::{Read, Write};

use rayon::prelude::*;

use super::band::Routed;
use crate::confirm::Confirmer;
use crate::error::{Error, Result};
use crate::io::{ScratchDir, write_count};
use crate::output::run::RunWriter;
use crate::pipeline::split::share::Share;
use crate::pipeline::split::stage::SignedParts;
use crate::pipeline::{MinHashConfig, Pair, Part};
use crate::spill::{Spill, SpillReader};

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
    /// Whether candidates of this kind have a cosine.
    const WITH_COSINE: bool;
    /// Its documents.
    fn pair(&self) -> (u32, u32);
    /// The cosine of its documents' vectors, which the classifier takes where a run has them.
    fn cosine(&self) -> Option<f32>;
}

/// A MinHash candidate, as the band stage routed it.
impl ToJudge for Routed {
    const WITH_COSINE: bool = false;

    fn pair(&self) -> (u32, u32) {
        *self
    }

    fn cosine(&self) -> Option<f32> {
        None
    }
}

/// A two-stage candidate, with its cosine.
impl ToJudge for (u32, u32, f32) {
    const WITH_COSINE: bool = true;

    fn pair(&self) -> (u32, u32) {
        (self.0, self.1)
    }

    fn cosine(&self) -> Option<f32> {
        Some(self.2)
    }
}

/// Candidates a part holds judged, past which it spills them while it judges the rest.
const HELD_JUDGED: usize = 1 << 22;
/// Candidates with both documents in a part's own share judged at a time.
const JUDGED_AT_ONCE: usize = 1 << 18;

/// A part's candidates, judged: runs, each sorted by their documents, held, or spilled (a part
/// with many candidates), and merged as they are read.
pub(in crate::pipeline) struct Judged {
    count: usize,
    confirmed: usize,
    with_cosines: bool,
    runs: Vec<JudgedRun>,
    /// Where spilled runs are.
    _scratch: Option<ScratchDir>,
}

/// A run of judged candidates, sorted by their documents.
enum JudgedRun {
    Held(Vec<Scored>),
    Spilled(SpillReader, usize),
}

impl JudgedRun {
    /// `run`, held, or spilled into `scratch` where given.
    fn of(run: Vec<Scored>, scratch: Option<&ScratchDir>) -> Result<JudgedRun> {
        let Some(scratch) = scratch else {
            return Ok(JudgedRun::Held(run));
        };
        let mut spill = Spill::create(scratch.path())?;
        spill.append(|w| run.iter().try_for_each(|s| s.write_to(w)))?;
        Ok(JudgedRun::Spilled(spill.into_reader()?, run.len()))
    }
}

impl Judged {
    /// How many candidates.
    pub fn count(&self) -> usize {
        self.count
    }

    /// How many of them were confirmed.
    pub fn confirmed(&self) -> usize {
        self.confirmed
    }

    /// Whether the candidates have cosines.
    pub fn with_cosines(&self) -> bool {
        self.with_cosines
    }

    /// One part's candidates judged elsewhere, `run`, sorted by their documents.
    #[cfg(test)]
    pub(super) fn held(run: Vec<Scored>) -> Judged {
        Judged {
            count: run.len(),
            confirmed: run.iter().filter(|s| s.duplicate).count(),
            with_cosines: run.first().is_some_and(|s| s.cosine.is_some()),
            runs: vec![JudgedRun::Held(run)],
            _scratch: None,
        }
    }

    /// Hands `each` every candidate, sorted by their documents.
    pub fn each(self, each: impl FnMut(Scored)) -> Result<()> {
        Judged::merge(vec![self], each)
    }

    /// Hands `each` every candidate of `parts`, sorted by their documents: the runs of every
    /// part merged at once (the parts confirmed on one machine).
    pub fn merge(parts: Vec<Judged>, each: impl FnMut(Scored)) -> Result<()> {
        // The folders of the spilled runs stay until the merge is done.
        let mut scratch = Vec::new();
        let mut runs: Vec<Box<dyn Iterator<Item = Result<Scored>>>> = Vec::new();
        for judged in parts {
            let with_cosines = judged.with_cosines;
            scratch.push(judged._scratch);
            runs.extend(judged.runs.into_iter().map(
                |run| -> Box<dyn Iterator<Item = Result<Scored>>> {
                    match run {
                        JudgedRun::Held(run) => Box::new(run.into_iter().map(Ok)),
                        JudgedRun::Spilled(mut reader, count) => Box::new(
                            (0..count)
                                .map(move |_| reader.read(|r| Scored::read_from(r, with_cosines))),
                        ),
                    }
                },
            ));
        }
        merge_sorted(&mut runs, each)
    }
}

/// Judges the candidates `routed` to `part` (each from every part that proposed it): with part
/// `part`'s sketches held, the other shares are read a block at a time for the candidates
/// whose other document they signed. Each share's candidates make a run of the result.
pub(in crate::pipeline) fn confirm<C: ToJudge>(
    signed: &SignedParts,
    part: Part,
    mut routed: Vec<C>,
    config: &MinHashConfig,
) -> Result<Judged> {
    let confirmer = Confirmer::new(&config.confirm, -1.0)?;
    let own = Share::read(signed, part.number)?;
    // By the share of the other document, then by that document, so that each block of its
    // share judges a run of candidates.
    let other_of = |c: &C| match c.pair() {
        (a, b) if own.docs.contains(&a) => b,
        (a, _) => a,
    };
    let share_of = |c: &C| signed.signer_of(other_of(c));
    routed.par_sort_unstable_by_key(|c| (share_of(c), other_of(c), c.pair()));
    routed.dedup();
    let scratch = match routed.len() > HELD_JUDGED {
        true => Some(ScratchDir::new()?),
        false => None,
    };
    let mut judged = Judged {
        count: routed.len(),
        confirmed: 0,
        with_cosines: C::WITH_COSINE,
        runs: Vec::new(),
        _scratch: None,
    };
    for from_share in routed.chunk_by(|x, y| share_of(x) == share_of(y)) {
        let mut run = Vec::with_capacity(from_share.len());
        let mut judge = |block: &[C], theirs: &Share| -> Result<()> {
            judge_block(&confirmer, &own, block, theirs, &mut run)
        };
        match share_of(&from_share[0]) {
            // A block at a time, as another share's come: what judging one holds beside it.
            number if number == part.number => {
                for block in from_share.chunks(JUDGED_AT_ONCE) {
                    judge(block, &own)?;
                }
            }
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
        // By their documents: the runs are merged as they are read, and so are the parts'.
        run.par_sort_unstable_by_key(|s| (s.a, s.b));
        judged.confirmed += run.iter().filter(|s| s.duplicate).count();
        judged.runs.push(JudgedRun::of(run, scratch.as_ref())?);
    }
    judged._scratch = scratch;
    tracing::info!(part = %part, candidates = judged.count, "confirmed");
    Ok(judged)
}

/// Judges `block`, candidates that each have one document in `own` and the other in
/// `theirs` (or both in `own`, where `theirs` is `own`), into `judged`.
fn judge_block<C: ToJudge>(
    confirmer: &Confirmer,
    own: &Share,
    block: &[C],
    theirs: &Share,
    judged: &mut Vec<Scored>,
) -> Result<()> {
    // For each candidate: whether `own` holds its first document, and the rows of both.
    let rows: Vec<(bool, usize, usize)> = block
        .par_iter()
        .map(|c| match c.pair() {
            (a, b) if own.docs.contains(&a) => Ok((true, own.row(a)?, theirs.row(b)?)),
            (a, b) => Ok((false, theirs.row(a)?, own.row(b)?)),
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
    judged.extend(block.iter().zip(scores.into_iter().zip(standings)).map(
        |(c, (score, standing))| {
            let (a, b) = c.pair();
            Scored {
                a,
                b,
                score,
                duplicate: standing.at(score, confirmer.threshold()).duplicate,
                cosine: c.cosine(),
            }
        },
    ));
    Ok(())
}

/// A confirmed part's candidates, scored.
pub(super) const SCORED: &str = "scored.bin";
/// A candidate as a confirmed part holds it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(in crate::pipeline) struct Scored {
    pub a: u32,
    pub b: u32,
    /// Its Jaccard estimate.
    pub score: f64,
    /// Whether it was confirmed.
    pub duplicate: bool,
    /// The cosine of its documents' vectors, in a two-stage run.
    pub cosine: Option<f32>,
}

impl Scored {
    /// Words a candidate takes in [`SCORED`]: its pair ([`Pair::write_to`]: documents,
    /// score, and in a two-stage run its cosine), then whether it was confirmed.
    pub(super) fn words_each(cosine: bool) -> usize {
        (Pair::bytes(cosine) + 4) / 4
    }

    /// The candidate as a pair of the run.
    pub(super) fn pair(&self) -> Pair {
        Pair {
            a: self.a,
            b: self.b,
            score: self.score,
            cosine: self.cosine,
        }
    }

    /// Writes the candidate's [`Scored::words_each`] words.
    fn write_to(&self, w: &mut impl Write) -> std::io::Result<()> {
        self.pair().write_to(w, self.cosine.is_some())?;
        w.write_all(&u32::from(self.duplicate).to_le_bytes())
    }

    /// Reads a candidate that [`Scored::write_to`] wrote, with a cosine or without.
    pub(super) fn read_from(r: &mut impl Read, cosine: bool) -> std::io::Result<Scored> {
        let pair = Pair::read_from(r, cosine)?;
        let mut duplicate = [0u8; 4];
        r.read_exact(&mut duplicate)?;
        Ok(Scored {
            a: pair.a,
            b: pair.b,
            score: pair.score,
            duplicate: u32::from_le_bytes(duplicate) != 0,
            cosine: pair.cosine,
        })
    }
}

/// Merges lists of candidates, each sorted by its documents, handing `each` one run's
/// candidates in order. A MinHash part confirms its own candidates, shared with no other; a
/// two-stage candidate may be found by the parts of both its documents, and is kept once,
/// with its highest cosine, as one run keeps it (the classifier judged it the same way in
/// both, from the same sketches and, where the cosines are equal, the same cosine).
pub(super) fn merge_sorted<L: Iterator<Item = Result<Scored>>>(
    lists: &mut [L],
    mut each: impl FnMut(Scored),
) -> Result<()> {
    // Each list's next candidate, and the lists ordered by it.
    let mut heads: Vec<Option<Scored>> = vec![None; lists.len()];
    let mut order = BinaryHeap::new();
    for (list, items) in lists.iter_mut().enumerate() {
        if let Some(first) = items.next().transpose()? {
            order.push(Reverse((first.a, first.b, list)));
            heads[list] = Some(first);
        }
    }
    // The last candidate, handed on once the next is another.
    let mut last: Option<Scored> = None;
    while let Some(Reverse((a, b, list))) = order.pop() {
        let next = heads[list].take().expect("a listed head");
        if let Some(after) = lists[list].next().transpose()? {
            order.push(Reverse((after.a, after.b, list)));
            heads[list] = Some(after);
        }
        let Some(held) = last else {
            last = Some(next);
            continue;
        };
        match ((held.a, held.b).cmp(&(a, b)), held.cosine, next.cosine) {
            (Ordering::Less, ..) => each(last.replace(next).expect("held")),
            (Ordering::Equal, Some(kept), Some(found)) => {
                if found > kept {
                    last = Some(next);
                }
            }
            _ => {
                return Err(Error::Usage(format!(
                    "the confirmed parts hold candidate ({a}, {b}) twice or out of order: \
                     confirm the parts again with this version of neardup"
                )));
            }
        }
    }
    if let Some(held) = last {
        each(held);
    }
    Ok(())
}

/// Writes a confirmed part's candidates, `judged`, into the folder `run` writes, in order;
/// returns how many there are, and how many were confirmed.
pub(in crate::pipeline) fn write_scored(
    run: &mut RunWriter,
    judged: Judged,
) -> Result<(usize, usize)> {
    let (count, confirmed) = (judged.count(), judged.confirmed());
    let mut file = run.create(SCORED)?;
    let words = count * Scored::words_each(judged.with_cosines());
    write_count(&mut file, words).map_err(|e| Error::io(file.target(), e))?;
    let mut failed = None;
    judged.each(|candidate| {
        if failed.is_none() {
            failed = candidate.write_to(&mut file).err();
        }
    })?;
    if let Some(e) = failed {
        return Err(Error::io(file.target(), e));
    }
    run.commit(file)?;
    Ok((count, confirmed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judged_runs_held_or_spilled_are_read_back_merged_by_their_documents() {
        let scored = |a, b, cosine| Scored {
            a,
            b,
            score: 0.5,
            duplicate: a == 0,
            cosine,
        };
        for with_cosines in [false, true] {
            let cosine = with_cosines.then_some(0.75);
            let runs = [
                vec![scored(0, 5, cosine), scored(2, 3, cosine)],
                vec![scored(0, 7, cosine), scored(4, 6, cosine)],
            ];
            let scratch = ScratchDir::new().unwrap();
            for spilled in [None, Some(&scratch)] {
                let judged = Judged {
                    count: 4,
                    confirmed: 2,
                    with_cosines,
                    runs: (runs.iter())
                        .map(|run| JudgedRun::of(run.clone(), spilled).unwrap())
                        .collect(),
                    _scratch: None,
                };
                let mut sorted = Vec::new();
                judged.each(|candidate| sorted.push(candidate)).unwrap();
                let order: Vec<(u32, u32)> = sorted.iter().map(|s| (s.a, s.b)).collect();
                let context = format!("spilled: {}", spilled.is_some());
                assert_eq!(order, [(0, 5), (0, 7), (2, 3), (4, 6)], "{context}");
                assert!(sorted.iter().all(|s| s.cosine == cosine && s.score == 0.5));
                assert_eq!(sorted.iter().filter(|s| s.duplicate).count(), 2);
            }
        }
    }
}
