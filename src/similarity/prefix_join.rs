//! Exact all-pairs Jaccard join with prefix filtering: every pair of sets whose Jaccard
//! similarity reaches a threshold, without comparing all pairs.
//!
//! Tokens are ranked rarest first. If `J(x, y) ≥ t` then `|x ∩ y| ≥ ⌈t·|x|⌉`, so `x` and `y`
//! must share one of the first `|x| − ⌈t·|x|⌉ + 1` tokens of `x` (its prefix). Only the prefixes
//! are indexed, and those hold the rarest tokens, so posting lists stay short; every candidate
//! is then verified exactly. The answer is the same as comparing all pairs.

use std::collections::HashMap;

use rayon::prelude::*;

/// Sets of tokens re-coded by rarity, ready for [`SetJoin::pairs`].
pub struct SetJoin {
    sets: Vec<Vec<u32>>,
}

impl SetJoin {
    /// Prepares `sets` (each a set of hashed shingles; order and repeats do not matter).
    pub fn new(sets: &[Vec<u64>]) -> Self {
        let mut frequency: HashMap<u64, u32> = HashMap::new();
        for set in sets {
            let mut set = set.clone();
            set.sort_unstable();
            set.dedup();
            for token in set {
                *frequency.entry(token).or_insert(0) += 1;
            }
        }
        let mut by_rarity: Vec<(u32, u64)> = frequency.iter().map(|(&t, &f)| (f, t)).collect();
        by_rarity.sort_unstable();
        let rank: HashMap<u64, u32> = by_rarity
            .iter()
            .enumerate()
            .map(|(r, &(_, t))| (t, r as u32))
            .collect();
        let sets = sets
            .par_iter()
            .map(|set| {
                let mut ranked: Vec<u32> = set.iter().map(|t| rank[t]).collect();
                ranked.sort_unstable();
                ranked.dedup();
                ranked
            })
            .collect();
        SetJoin { sets }
    }

    /// Exact Jaccard similarity of sets `x` and `y` (0 if either is empty).
    pub fn similarity(&self, x: usize, y: usize) -> f64 {
        let (a, b) = (&self.sets[x], &self.sets[y]);
        if a.is_empty() || b.is_empty() {
            return 0.0;
        }
        let shared = super::shared_count(a, b);
        shared as f64 / (a.len() + b.len() - shared) as f64
    }

    /// Every pair `(x, y, J)`, `x < y`, with `J ≥ threshold`, sorted. Empty sets take part in
    /// no pair. `threshold` must be in `(0, 1]`.
    pub fn pairs(&self, threshold: f64) -> Vec<(u32, u32, f64)> {
        assert!(
            threshold > 0.0 && threshold <= 1.0,
            "join threshold must be in (0, 1]"
        );
        let prefix_len = |n: usize| {
            // A small tolerance keeps ⌈t·n⌉ exact when t·n is an integer in decimal.
            let needed = ((threshold * n as f64) - 1e-9).ceil().max(1.0) as usize;
            n + 1 - needed.min(n)
        };
        let mut postings: HashMap<u32, Vec<u32>> = HashMap::new();
        for (doc, set) in self.sets.iter().enumerate() {
            for &token in &set[..prefix_len(set.len()).min(set.len())] {
                postings.entry(token).or_default().push(doc as u32);
            }
        }
        let mut pairs: Vec<(u32, u32, f64)> = (0..self.sets.len())
            .into_par_iter()
            .flat_map_iter(|x| {
                let set = &self.sets[x];
                let mut candidates: Vec<u32> = set[..prefix_len(set.len()).min(set.len())]
                    .iter()
                    .flat_map(|t| postings[t].iter().copied())
                    .filter(|&y| y as usize > x)
                    .collect();
                candidates.sort_unstable();
                candidates.dedup();
                candidates.into_iter().filter_map(move |y| {
                    let other = &self.sets[y as usize];
                    let (small, large) = (set.len().min(other.len()), set.len().max(other.len()));
                    if (small as f64) < threshold * large as f64 - 1e-9 {
                        return None;
                    }
                    let j = self.similarity(x, y as usize);
                    (j >= threshold - 1e-12).then_some((x as u32, y, j))
                })
            })
            .collect();
        pairs.par_sort_unstable_by(|p, q| (p.0, p.1).cmp(&(q.0, q.1)));
        pairs
    }
}

/// Convenience: the pairs of `sets` with Jaccard ≥ `threshold`.
pub fn similar_pairs(sets: &[Vec<u64>], threshold: f64) -> Vec<(u32, u32, f64)> {
    SetJoin::new(sets).pairs(threshold)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    fn brute_force(sets: &[Vec<u64>], t: f64) -> Vec<(u32, u32)> {
        let join = SetJoin::new(sets);
        let mut out = Vec::new();
        for x in 0..sets.len() {
            for y in x + 1..sets.len() {
                if join.similarity(x, y) >= t - 1e-12 {
                    out.push((x as u32, y as u32));
                }
            }
        }
        out
    }

    #[test]
    fn prefix_filter_finds_exactly_the_brute_force_pairs() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let mut sets: Vec<Vec<u64>> = (0..300)
            .map(|_| {
                (0..rng.random_range(0..20))
                    .map(|_| rng.random_range(0..60u64))
                    .collect()
            })
            .collect();
        // Plant near copies so that high thresholds have answers too.
        for i in 0..50 {
            let mut copy = sets[i].clone();
            copy.pop();
            sets.push(copy);
        }
        for t in [0.2, 0.5, 0.7, 0.8, 0.9, 1.0] {
            let fast: Vec<(u32, u32)> =
                similar_pairs(&sets, t).iter().map(|p| (p.0, p.1)).collect();
            assert_eq!(fast, brute_force(&sets, t), "threshold {t}");
        }
    }

    #[test]
    fn boundary_similarity_counts() {
        // J = 4/5 = 0.8 exactly.
        let sets = vec![vec![1, 2, 3, 4, 5], vec![1, 2, 3, 4]];
        assert_eq!(similar_pairs(&sets, 0.8).len(), 1);
        assert_eq!(similar_pairs(&sets, 0.81).len(), 0);
        assert!(similar_pairs(&[vec![], vec![]], 0.5).is_empty());
    }
}
