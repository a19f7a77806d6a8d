//! Exact Jaccard joins with prefix filtering: every pair of sets whose Jaccard similarity
//! reaches a threshold, without comparing all pairs.
//!
//! Tokens are ranked rarest first. If `J(x, y) ≥ t` then `|x ∩ y| ≥ ⌈t·|x|⌉`, so `x` and `y`
//! must share one of the first `|x| − ⌈t·|x|⌉ + 1` tokens of `x` (its prefix). Only the prefixes
//! are indexed, and those hold the rarest tokens, so posting lists stay short; every candidate
//! is then verified exactly. The answer is the same as comparing all pairs.
//!
//! - [`SetJoin`] joins a collection of sets with itself (the exact Jaccard method);
//! - [`SetIndex`] indexes one collection and is probed by the sets of another (a record's title
//!   against the titles of the records that are a title and nothing else). A probe's tokens
//!   that no indexed set holds rank before all others: they fill its prefix and match nothing,
//!   which is right, since they lower its similarity to every indexed set.

use std::hash::Hash;

use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;

/// Sets of tokens re-coded by rarity, ready for [`SetJoin::pairs`].
pub struct SetJoin {
    sets: Vec<Vec<u32>>,
}

impl SetJoin {
    /// Prepares `sets` (each a set of hashed shingles; order and repeats do not matter).
    pub fn new(sets: &[Vec<u64>]) -> Self {
        let rank = rank_by_rarity(sets.iter().map(Vec::as_slice));
        let sets = sets.par_iter().map(|set| ranked(&rank, set).0).collect();
        SetJoin { sets }
    }

    /// Exact Jaccard similarity of sets `x` and `y` (0 if either is empty).
    pub fn similarity(&self, x: usize, y: usize) -> f64 {
        jaccard_of(&self.sets[x], self.sets[x].len(), &self.sets[y])
    }

    /// Every pair `(x, y, J)`, `x < y`, with `J ≥ threshold`, sorted. Empty sets take part in
    /// no pair. `threshold` must be in `(0, 1]`.
    pub fn pairs(&self, threshold: f64) -> Vec<(u32, u32, f64)> {
        let prefixes = &Prefixes::of(&self.sets, threshold);
        let mut pairs: Vec<(u32, u32, f64)> = (0..self.sets.len())
            .into_par_iter()
            .flat_map_iter(|x| {
                let set = &self.sets[x];
                let candidates = prefixes.candidates(set, 0, |y| y as usize > x);
                candidates.into_iter().filter_map(move |y| {
                    let j = prefixes.verified(set, set.len(), &self.sets[y as usize])?;
                    Some((x as u32, y, j))
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

/// Sets indexed by their prefixes at one threshold, for other sets to find the ones they reach
/// it with ([`SetIndex::similar`]).
pub struct SetIndex<T> {
    rank: HashMap<T, u32>,
    sets: Vec<Vec<u32>>,
    prefixes: Prefixes,
}

impl<T: Hash + Eq + Copy + Send + Sync> SetIndex<T> {
    /// Indexes `sets` (order and repeats within a set do not matter) at `threshold`, which
    /// must be in `(0, 1]`. A set's number is its place in `sets`.
    pub fn new<'s>(sets: impl IntoIterator<Item = &'s [T]>, threshold: f64) -> Self
    where
        T: 's,
    {
        let sets: Vec<&[T]> = sets.into_iter().collect();
        let rank = rank_by_rarity(sets.iter().copied());
        let sets: Vec<Vec<u32>> = sets.par_iter().map(|set| ranked(&rank, set).0).collect();
        let prefixes = Prefixes::of(&sets, threshold);
        SetIndex {
            rank,
            sets,
            prefixes,
        }
    }

    /// How many distinct tokens indexed set `at` holds.
    pub fn size(&self, at: u32) -> usize {
        self.sets[at as usize].len()
    }

    /// The indexed sets whose Jaccard similarity with `set` (distinct tokens, in any order)
    /// reaches the threshold: their numbers, ascending, with the similarity.
    pub fn similar(&self, set: &[T]) -> Vec<(u32, f64)> {
        let (known, unknown) = ranked(&self.rank, set);
        let size = known.len() + unknown;
        let candidates = self.prefixes.candidates(&known, unknown, |_| true);
        (candidates.into_iter())
            .filter_map(|y| {
                let j = self
                    .prefixes
                    .verified(&known, size, &self.sets[y as usize])?;
                Some((y, j))
            })
            .collect()
    }
}

/// Each token's rank among those of `sets`, rarest first (ties by first appearance).
fn rank_by_rarity<'s, T: Hash + Eq + Copy + 's>(
    sets: impl Iterator<Item = &'s [T]>,
) -> HashMap<T, u32> {
    let mut frequency: HashMap<T, (u32, u32)> = HashMap::default();
    let mut seen = 0u32;
    for set in sets {
        for &token in set {
            let entry = frequency.entry(token).or_insert_with(|| {
                seen += 1;
                (0, seen)
            });
            entry.0 += 1;
        }
    }
    let mut by_rarity: Vec<(u32, u32, T)> = frequency
        .into_iter()
        .map(|(token, (count, first))| (count, first, token))
        .collect();
    by_rarity.sort_unstable_by_key(|&(count, first, _)| (count, first));
    (by_rarity.into_iter().enumerate())
        .map(|(rank, (_, _, token))| (token, rank as u32))
        .collect()
}

/// `set`'s tokens that `rank` knows, as ranks, ascending and distinct; and how many it does
/// not know (its repeats among them counted again).
fn ranked<T: Hash + Eq>(rank: &HashMap<T, u32>, set: &[T]) -> (Vec<u32>, usize) {
    let mut known: Vec<u32> = set
        .iter()
        .filter_map(|token| rank.get(token).copied())
        .collect();
    let unknown = set.len() - known.len();
    known.sort_unstable();
    known.dedup();
    (known, unknown)
}

/// The sets of a join indexed by the tokens of their prefixes at one threshold.
struct Prefixes {
    threshold: f64,
    /// For each rank, the sets whose prefix holds it, by size.
    postings: Vec<Vec<Posting>>,
}

/// A set in a posting list: its number, how many tokens it has, and where the token lies in it.
#[derive(Clone, Copy)]
struct Posting {
    size: u32,
    number: u32,
    position: u32,
}

impl Prefixes {
    /// Indexes `sets` (ranks, ascending) at `threshold`, which must be in `(0, 1]`.
    fn of(sets: &[Vec<u32>], threshold: f64) -> Prefixes {
        assert!(
            threshold > 0.0 && threshold <= 1.0,
            "join threshold must be in (0, 1]"
        );
        let mut prefixes = Prefixes {
            threshold,
            postings: Vec::new(),
        };
        for (number, set) in sets.iter().enumerate() {
            for (position, &token) in set[..prefixes.prefix_len(set.len())].iter().enumerate() {
                let at = token as usize;
                if prefixes.postings.len() <= at {
                    prefixes.postings.resize_with(at + 1, Vec::new);
                }
                prefixes.postings[at].push(Posting {
                    size: set.len() as u32,
                    number: number as u32,
                    position: position as u32,
                });
            }
        }
        for list in &mut prefixes.postings {
            list.sort_by_key(|posting| posting.size);
        }
        prefixes
    }

    /// How many of a set of `size` tokens' first tokens another set reaching the threshold
    /// must share one of.
    fn prefix_len(&self, size: usize) -> usize {
        // A small tolerance keeps ⌈t·n⌉ exact when t·n is an integer in decimal.
        let needed = ((self.threshold * size as f64) - 1e-9).ceil().max(1.0) as usize;
        (size + 1 - needed.min(size)).min(size)
    }

    /// The indexed sets, ascending, of those `wanted` says, that may reach the threshold with
    /// a set whose known tokens are `known` (ranks, ascending) and which has `unknown` tokens
    /// ranked before them: those of a size it allows that share a token of its prefix, where
    /// the tokens after the first they share leave room for the overlap the threshold needs.
    /// (A set sharing a later prefix token too is found at the first, where that room is
    /// counted exactly.)
    fn candidates(&self, known: &[u32], unknown: usize, wanted: impl Fn(u32) -> bool) -> Vec<u32> {
        let size = known.len() + unknown;
        let prefix = self.prefix_len(size).saturating_sub(unknown);
        let t = self.threshold;
        // |y| between t·|x| and |x| / t; and |x ∩ y| at least t·(|x| + |y|) / (1 + t).
        let smallest = ((t * size as f64) - 1e-9).ceil() as u32;
        let largest = ((size as f64 / t) + 1e-9).floor() as u32;
        let overlap = |other: u32| (t * (size as f64 + f64::from(other)) / (1.0 + t) - 1e-9).ceil();
        let mut candidates = Vec::new();
        for (at, &token) in (unknown..).zip(&known[..prefix.min(known.len())]) {
            let Some(list) = self.postings.get(token as usize) else {
                continue;
            };
            let from = list.partition_point(|posting| posting.size < smallest);
            for posting in list[from..].iter().take_while(|p| p.size <= largest) {
                let room = 1 + (size - at - 1).min((posting.size - posting.position - 1) as usize);
                if room as f64 >= overlap(posting.size) && wanted(posting.number) {
                    candidates.push(posting.number);
                }
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        candidates
    }

    /// The Jaccard similarity of a set of `size` tokens whose known ones are `known` and the
    /// indexed `other`, where it reaches the threshold.
    fn verified(&self, known: &[u32], size: usize, other: &[u32]) -> Option<f64> {
        let j = jaccard_of(known, size, other);
        (j >= self.threshold - 1e-12).then_some(j)
    }
}

/// The Jaccard similarity of a set of `size` tokens whose known ones are `known` and `other`
/// (0 if either is empty).
fn jaccard_of(known: &[u32], size: usize, other: &[u32]) -> f64 {
    if size == 0 || other.is_empty() {
        return 0.0;
    }
    let shared = super::shared_count(known, other);
    shared as f64 / (size + other.len() - shared) as f64
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
    fn an_index_finds_exactly_the_sets_a_probe_reaches() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut set = |tokens: u32| -> Vec<u32> {
            let set: std::collections::BTreeSet<u32> = (0..rng.random_range(0..12))
                .map(|_| rng.random_range(0..tokens))
                .collect();
            set.into_iter().collect()
        };
        let mut indexed: Vec<Vec<u32>> = (0..200).map(|_| set(40)).collect();
        // Probes draw from more tokens than the index knows, and some copy an indexed set with
        // a token changed.
        let mut probes: Vec<Vec<u32>> = (0..200).map(|_| set(50)).collect();
        for (i, set) in indexed.iter().take(60).enumerate() {
            let mut copy = set.clone();
            if let Some(last) = copy.last_mut() {
                *last = 45 + (i as u32 % 5);
            }
            probes.push(copy);
        }
        indexed.push(Vec::new());
        for t in [0.3, 0.6, 0.8, 1.0] {
            let index = SetIndex::new(indexed.iter().map(Vec::as_slice), t);
            for probe in &probes {
                let brute: Vec<u32> = (0..indexed.len() as u32)
                    .filter(|&y| {
                        let other = &indexed[y as usize];
                        !probe.is_empty()
                            && !other.is_empty()
                            && crate::similarity::set_jaccard(probe, other) >= t - 1e-12
                    })
                    .collect();
                let found: Vec<u32> = index.similar(probe).iter().map(|&(y, _)| y).collect();
                assert_eq!(found, brute, "threshold {t}, probe {probe:?}");
            }
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
