//! Whole-corpus similarity under one measure, for threshold grouping of modest collections
//! (the WebSty workflow: similarity matrix, threshold, groups, representative).

use std::collections::HashMap;

use rayon::prelude::*;

use super::{SetJoin, cosine_counts, word_counts};
use crate::sketch::{LshParams, MinHasher, Signatures, candidate_pairs};
use crate::text::Shingler;

/// A similarity measure between documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Measure {
    /// Cosine of word-count vectors.
    Cosine,
    /// Exact Jaccard of word sets.
    Jaccard,
    /// MinHash estimate of the word-set Jaccard (128 permutations).
    Minhash,
}

/// Documents prepared for one measure: every similar pair, and any single score.
pub struct Scorer {
    kind: Scored,
}

enum Scored {
    Cosine(Vec<HashMap<String, u32>>),
    Jaccard(SetJoin),
    Minhash(Signatures),
}

impl Scorer {
    /// Prepares `texts` for `measure`.
    pub fn new(measure: Measure, texts: &[String]) -> Self {
        let shingler = Shingler::word_unigrams();
        let kind = match measure {
            Measure::Cosine => Scored::Cosine(texts.par_iter().map(|t| word_counts(t)).collect()),
            Measure::Jaccard => {
                let sets: Vec<Vec<u64>> =
                    texts.par_iter().map(|t| shingler.shingle_set(t)).collect();
                Scored::Jaccard(SetJoin::new(&sets))
            }
            Measure::Minhash => {
                let hasher = MinHasher::new(128, 1);
                let mut signatures = Signatures::new(128);
                for t in texts {
                    let set = shingler.shingle_set(t);
                    signatures.push(&hasher.sign(&set), set.is_empty());
                }
                Scored::Minhash(signatures)
            }
        };
        Scorer { kind }
    }

    /// The similarity of documents `x` and `y`.
    pub fn score(&self, x: usize, y: usize) -> f64 {
        match &self.kind {
            Scored::Cosine(vectors) => cosine_counts(&vectors[x], &vectors[y]),
            Scored::Jaccard(join) => join.similarity(x, y),
            Scored::Minhash(signatures) => signatures.similarity(x, y),
        }
    }

    /// Every pair `(x, y, score)`, `x < y`, with score ≥ `threshold` (for MinHash, among the
    /// LSH candidates, as its estimate is approximate anyway).
    pub fn pairs(&self, threshold: f64) -> Vec<(u32, u32, f64)> {
        match &self.kind {
            Scored::Jaccard(join) => join.pairs(threshold.max(f64::MIN_POSITIVE)),
            Scored::Minhash(signatures) => candidate_pairs(
                signatures,
                LshParams::optimal(threshold, signatures.num_perm()),
            )
            .into_par_iter()
            .filter_map(|(a, b)| {
                let s = signatures.similarity(a as usize, b as usize);
                (s >= threshold).then_some((a, b, s))
            })
            .collect(),
            Scored::Cosine(vectors) => {
                // Only documents sharing a word can have a positive cosine: accumulate the
                // candidates through an inverted index of words.
                let mut postings: HashMap<&str, Vec<u32>> = HashMap::new();
                for (doc, v) in vectors.iter().enumerate() {
                    for word in v.keys() {
                        postings.entry(word).or_default().push(doc as u32);
                    }
                }
                let mut pairs: Vec<(u32, u32, f64)> = (0..vectors.len())
                    .into_par_iter()
                    .flat_map_iter(|x| {
                        let mut candidates: Vec<u32> = vectors[x]
                            .keys()
                            .flat_map(|w| postings[w.as_str()].iter().copied())
                            .filter(|&y| y as usize > x)
                            .collect();
                        candidates.sort_unstable();
                        candidates.dedup();
                        candidates.into_iter().filter_map(move |y| {
                            let s = cosine_counts(&vectors[x], &vectors[y as usize]);
                            (s >= threshold).then_some((x as u32, y, s))
                        })
                    })
                    .collect();
                pairs.sort_by_key(|p| (p.0, p.1));
                pairs
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_measure_finds_the_near_copy() {
        let texts: Vec<String> = [
            "the cat sat on the mat near the door",
            "The cat sat on the mat, near the door!",
            "stock markets fell sharply on monday morning",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for measure in [Measure::Cosine, Measure::Jaccard, Measure::Minhash] {
            let scorer = Scorer::new(measure, &texts);
            let pairs = scorer.pairs(0.7);
            assert_eq!(pairs.len(), 1, "{measure:?}: {pairs:?}");
            assert_eq!((pairs[0].0, pairs[0].1), (0, 1));
            assert!((scorer.score(0, 1) - 1.0).abs() < 1e-9, "{measure:?}");
            assert!(scorer.score(0, 2) < 0.3, "{measure:?}");
        }
    }
}
