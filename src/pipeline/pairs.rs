//! Pairs as a run holds them: the confirmed ones with their scores, and the candidates.

use std::sync::Arc;

use crate::confirm::{Rule, Standing};
use crate::error::Result;

/// A confirmed duplicate pair (document indices, `a < b`) and its score in `[0, 1]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    /// First document.
    pub a: u32,
    /// Second document.
    pub b: u32,
    /// The method's similarity (see [`Method::score_name`](super::Method::score_name)).
    pub score: f64,
    /// Cosine of the two documents' embeddings, where the method has them (two-stage).
    pub cosine: Option<f32>,
}

impl Pair {
    /// Bytes [`Pair::write_to`] writes: the documents, the score, and where the pairs have
    /// one, the cosine.
    pub(crate) fn bytes(with_cosine: bool) -> usize {
        16 + 4 * usize::from(with_cosine)
    }

    /// Writes the pair as fixed-width little-endian bytes, its cosine where `with_cosine`
    /// (every pair of a run has one, or none does): what a spill or a stage's file holds.
    pub(crate) fn write_to(
        &self,
        w: &mut impl std::io::Write,
        with_cosine: bool,
    ) -> std::io::Result<()> {
        let mut bytes = [0u8; 20];
        bytes[0..4].copy_from_slice(&self.a.to_le_bytes());
        bytes[4..8].copy_from_slice(&self.b.to_le_bytes());
        bytes[8..16].copy_from_slice(&self.score.to_le_bytes());
        bytes[16..20].copy_from_slice(&self.cosine.unwrap_or(0.0).to_le_bytes());
        w.write_all(&bytes[..Pair::bytes(with_cosine)])
    }

    /// Reads a pair that [`Pair::write_to`] wrote.
    pub(crate) fn read_from(
        r: &mut impl std::io::Read,
        with_cosine: bool,
    ) -> std::io::Result<Pair> {
        let mut bytes = [0u8; 20];
        r.read_exact(&mut bytes[..Pair::bytes(with_cosine)])?;
        let word = |at: usize| bytes[at..at + 4].try_into().expect("four bytes");
        Ok(Pair {
            a: u32::from_le_bytes(word(0)),
            b: u32::from_le_bytes(word(4)),
            score: f64::from_le_bytes(bytes[8..16].try_into().expect("eight bytes")),
            cosine: with_cosine.then(|| f32::from_le_bytes(word(16))),
        })
    }
}

/// Every candidate a method scored, in the order it judged them: the pairs, `(a, b, cosine)`
/// or `(a, b)` for a method with no cosine, and each one's score, in two columns. A two-stage
/// run at a million documents scores tens of millions of candidates, and a MinHash join of ten
/// million documents seventy million; so held they take 12 to 20 bytes each, not a [`Pair`]'s
/// 24, and the search's own list of candidates is kept as it came.
#[derive(Clone, Debug, PartialEq)]
pub struct ScoredPairs {
    pairs: CandidatePairs,
    scores: Scores,
    /// Each candidate's verdict at any threshold, where the run judged them itself (none for
    /// a merge of parts, which kept only their verdicts).
    standings: Vec<Standing>,
}

/// Scores in 4 bytes each while every one is a 32-bit float exactly (a MinHash estimate is a
/// count over a power of two), else in 8.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Scores {
    Narrow(Vec<f32>),
    Wide(Vec<f64>),
}

impl Scores {
    /// Room for `count` scores, held narrow until one is not a 32-bit float exactly.
    pub(super) fn with_capacity(count: usize) -> Scores {
        Scores::Narrow(Vec::with_capacity(count))
    }

    fn of(scores: Vec<f64>) -> Scores {
        match scores.iter().all(|&x| Scores::fits(x)) {
            true => Scores::Narrow(scores.into_iter().map(|x| x as f32).collect()),
            false => Scores::Wide(scores),
        }
    }

    /// Whether `x` is a 32-bit float exactly.
    fn fits(x: f64) -> bool {
        f64::from(x as f32).to_bits() == x.to_bits()
    }

    pub(super) fn push(&mut self, x: f64) {
        match self {
            Scores::Narrow(narrow) if Scores::fits(x) => narrow.push(x as f32),
            Scores::Narrow(narrow) => {
                let mut wide: Vec<f64> = Vec::with_capacity(narrow.capacity());
                wide.extend(narrow.iter().map(|&x| f64::from(x)));
                wide.push(x);
                *self = Scores::Wide(wide);
            }
            Scores::Wide(wide) => wide.push(x),
        }
    }

    fn get(&self, i: usize) -> f64 {
        match self {
            Scores::Narrow(narrow) => f64::from(narrow[i]),
            Scores::Wide(wide) => wide[i],
        }
    }

    fn len(&self) -> usize {
        match self {
            Scores::Narrow(narrow) => narrow.len(),
            Scores::Wide(wide) => wide.len(),
        }
    }

    fn prefetch(&self, i: usize) {
        match self {
            Scores::Narrow(narrow) => crate::prefetch::prefetch(&narrow[i]),
            Scores::Wide(wide) => crate::prefetch::prefetch(&wide[i]),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum CandidatePairs {
    WithCosines(Vec<(u32, u32, f32)>),
    Plain(Vec<(u32, u32)>),
}

/// Where a run's scored candidates are: held, or in the sorted files of the parts that scored
/// them, read again each time they are needed. A split run's join holds no list of them: a
/// MinHash join of ten million documents has seventy million, a two-stage one hundreds.
#[derive(Clone)]
pub enum ScoredCandidates {
    Held(Arc<ScoredPairs>),
    InFiles(Arc<dyn CandidateFiles>),
}

/// Scored candidates in files, each read again in full every time it is asked.
pub trait CandidateFiles: Send + Sync {
    /// How many candidates the files hold.
    fn count(&self) -> usize;
    /// Whether the candidates have cosines (all of them, or none).
    fn with_cosines(&self) -> bool;
    /// Hands `each` every candidate, in the run's order.
    fn for_each(&self, each: &mut dyn FnMut(Pair)) -> Result<()>;
}

impl ScoredCandidates {
    /// How many candidates there are.
    pub fn count(&self) -> usize {
        match self {
            ScoredCandidates::Held(scored) => scored.len(),
            ScoredCandidates::InFiles(files) => files.count(),
        }
    }

    /// The candidates, where they are held.
    pub fn held(&self) -> Option<&ScoredPairs> {
        match self {
            ScoredCandidates::Held(scored) => Some(scored),
            ScoredCandidates::InFiles(_) => None,
        }
    }
}

impl Default for ScoredPairs {
    fn default() -> Self {
        ScoredPairs::with_capacity(0)
    }
}

impl ScoredPairs {
    /// Candidates `(a, b, cosine)` and their `scores`, in the same order.
    pub fn with_cosines(pairs: Vec<(u32, u32, f32)>, scores: Vec<f64>) -> Self {
        ScoredPairs::with_cosines_scored(pairs, Scores::of(scores))
    }

    /// [`ScoredPairs::with_cosines`], the scores held as they were gathered.
    pub(super) fn with_cosines_scored(pairs: Vec<(u32, u32, f32)>, scores: Scores) -> Self {
        assert_eq!(pairs.len(), scores.len(), "a score for each candidate");
        ScoredPairs {
            pairs: CandidatePairs::WithCosines(pairs),
            scores,
            standings: Vec::new(),
        }
    }

    /// Candidates `(a, b)` and their `scores`, in the same order, of a method with no cosine.
    pub fn without_cosines(pairs: Vec<(u32, u32)>, scores: Vec<f64>) -> Self {
        assert_eq!(pairs.len(), scores.len(), "a score for each candidate");
        ScoredPairs {
            pairs: CandidatePairs::Plain(pairs),
            scores: Scores::of(scores),
            standings: Vec::new(),
        }
    }

    /// Room for `count` candidates of a method with no cosine, added by [`ScoredPairs::push`].
    pub fn with_capacity(count: usize) -> Self {
        ScoredPairs {
            pairs: CandidatePairs::Plain(Vec::with_capacity(count)),
            scores: Scores::with_capacity(count),
            standings: Vec::new(),
        }
    }

    /// These candidates with each one's standing, in the same order: what
    /// [`ScoredPairs::confirmed_at`] decides them by.
    pub fn judged(self, standings: Vec<Standing>) -> Self {
        assert_eq!(standings.len(), self.len(), "a standing for each candidate");
        ScoredPairs { standings, ..self }
    }

    /// The candidates confirmed where the Jaccard threshold is `threshold`, in order, each
    /// with the rule that confirmed it; `None` where the candidates' standings are not known
    /// (a merge of parts keeps their verdicts only).
    pub fn confirmed_at(&self, threshold: f64) -> Option<(Vec<Pair>, Vec<Rule>)> {
        if self.standings.len() != self.len() {
            return None;
        }
        let mut confirmed = (Vec::new(), Vec::new());
        for (i, standing) in self.standings.iter().enumerate() {
            let verdict = standing.at(self.scores.get(i), threshold);
            if verdict.duplicate {
                confirmed.0.push(self.get(i));
                confirmed.1.push(verdict.rule);
            }
        }
        Some(confirmed)
    }

    /// Adds candidate `(a, b)` of a method with no cosine, and its score.
    pub fn push(&mut self, a: u32, b: u32, score: f64) {
        let CandidatePairs::Plain(pairs) = &mut self.pairs else {
            panic!("a candidate without its cosine among candidates with theirs");
        };
        pairs.push((a, b));
        self.scores.push(score);
    }

    /// Where candidate `(a, b)` is, in candidates sorted by their documents.
    pub fn find(&self, a: u32, b: u32) -> Option<usize> {
        match &self.pairs {
            CandidatePairs::WithCosines(pairs) => {
                pairs.binary_search_by_key(&(a, b), |p| (p.0, p.1))
            }
            CandidatePairs::Plain(pairs) => pairs.binary_search(&(a, b)),
        }
        .ok()
    }

    /// How many candidates there are.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether the candidates carry cosines (all of them, or none).
    pub fn has_cosines(&self) -> bool {
        matches!(self.pairs, CandidatePairs::WithCosines(_))
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.scores.len() == 0
    }

    /// The candidates whose place in `selected` is true (the confirmed ones), in order.
    pub fn selected(&self, selected: &[bool]) -> Vec<Pair> {
        assert_eq!(selected.len(), self.len(), "a verdict for each candidate");
        (0..self.len())
            .filter(|&i| selected[i])
            .map(|i| self.get(i))
            .collect()
    }

    /// Starts loading the `i`th candidate ([`crate::prefetch`]).
    pub(crate) fn prefetch(&self, i: usize) {
        match &self.pairs {
            CandidatePairs::WithCosines(pairs) => crate::prefetch::prefetch(&pairs[i]),
            CandidatePairs::Plain(pairs) => crate::prefetch::prefetch(&pairs[i]),
        }
        self.scores.prefetch(i);
    }

    /// The `i`th candidate, scored.
    pub fn get(&self, i: usize) -> Pair {
        let ((a, b), cosine) = match &self.pairs {
            CandidatePairs::WithCosines(pairs) => ((pairs[i].0, pairs[i].1), Some(pairs[i].2)),
            CandidatePairs::Plain(pairs) => (pairs[i], None),
        };
        Pair {
            a,
            b,
            score: self.scores.get(i),
            cosine,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_come_back_bit_for_bit_whether_held_in_four_bytes_or_eight() {
        let bits = |pairs: &ScoredPairs| -> Vec<u64> {
            (0..pairs.len())
                .map(|i| pairs.get(i).score.to_bits())
                .collect()
        };
        let exact = vec![0.5, 0.25, 97.0 / 128.0, 0.0, -0.0];
        let narrow = ScoredPairs::without_cosines(vec![(0, 1); 5], exact.clone());
        assert!(matches!(narrow.scores, Scores::Narrow(_)));
        assert_eq!(
            bits(&narrow),
            exact.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        let third = 1.0 / 3.0;
        let wide = ScoredPairs::with_cosines(vec![(0, 1, 0.5); 2], vec![0.5, third]);
        assert!(matches!(wide.scores, Scores::Wide(_)));
        assert_eq!(wide.get(1).score.to_bits(), third.to_bits());
        // A score past 32 bits widens what was pushed before it.
        let mut pushed = ScoredPairs::with_capacity(3);
        pushed.push(0, 1, 0.75);
        pushed.push(0, 2, third);
        pushed.push(1, 2, 0.125);
        assert!(matches!(pushed.scores, Scores::Wide(_)));
        assert_eq!(bits(&pushed), [0.75f64, third, 0.125].map(f64::to_bits));
        assert_eq!(pushed.find(0, 2), Some(1));
    }
}
