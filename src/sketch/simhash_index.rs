//! Finding SimHash fingerprints within Hamming distance `k`.
//!
//! Exact search (Manku et al.): cut the 64 bits into `k + 1` blocks. Two fingerprints that
//! differ in at most `k` bits agree on at least one whole block (pigeonhole), so one table per
//! block, keyed by that block's bits, finds every candidate; a popcount verifies each.
//!
//! Probing search (as in the seed notebook on 135k pages): a document's bits with small vote
//! margins are the likeliest to flip under an edit. Assuming each bit's vote moves by a normal
//! amount with standard deviation `alpha · σ_i` (σ_i the spread of that bit's votes over the
//! corpus), bit `i` flips with probability `p_i = Φ(−|v_i| / (alpha · σ_i))`. Flip sets of up to
//! `k` bits are tried in decreasing probability, each one exact-match lookup; the number of
//! probes spent is reported.

use std::collections::{BinaryHeap, HashMap};

use super::{SimHash, hamming};

/// The largest Hamming distance of a duplicate, unless told: 3 of 64 bits, Manku et al.'s
/// choice for web pages.
pub const DEFAULT_MAX_DISTANCE: u32 = 3;

/// Fingerprints of a corpus, indexed for Hamming-distance search.
pub struct SimHashIndex {
    max_distance: u32,
    fingerprints: Vec<u64>,
    /// Documents without features, which match nothing.
    empty: Vec<bool>,
    /// `(shift, mask)` of each block.
    blocks: Vec<(u32, u64)>,
}

impl SimHashIndex {
    /// Indexes `fingerprints` for distance up to `max_distance` (at most 63).
    pub fn new(fingerprints: Vec<u64>, empty: Vec<bool>, max_distance: u32) -> Self {
        assert!(max_distance < 64, "max distance must be below 64");
        let parts = max_distance + 1;
        let blocks = (0..parts)
            .map(|b| {
                let start = 64 * b / parts;
                let end = 64 * (b + 1) / parts;
                let width = end - start;
                let mask = if width == 64 {
                    u64::MAX
                } else {
                    (1u64 << width) - 1
                };
                (start, mask)
            })
            .collect();
        SimHashIndex {
            max_distance,
            fingerprints,
            empty,
            blocks,
        }
    }

    /// Every pair `(x, y, distance)`, `x < y`, within the distance, sorted; exact.
    pub fn pairs(&self) -> Vec<(u32, u32, u32)> {
        let mut pairs = Vec::new();
        for &(shift, mask) in &self.blocks {
            let mut keys: Vec<(u64, u32)> = (0..self.fingerprints.len() as u32)
                .filter(|&d| !self.empty[d as usize])
                .map(|d| ((self.fingerprints[d as usize] >> shift) & mask, d))
                .collect();
            keys.sort_unstable();
            for bucket in keys.chunk_by(|a, b| a.0 == b.0) {
                for (i, &(_, x)) in bucket.iter().enumerate() {
                    for &(_, y) in &bucket[i + 1..] {
                        let d =
                            hamming(self.fingerprints[x as usize], self.fingerprints[y as usize]);
                        if d <= self.max_distance {
                            pairs.push((x.min(y), x.max(y), d));
                        }
                    }
                }
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        pairs
    }

    /// Every pair found by probing up to `max_probes` flip sets per document (the fingerprint
    /// itself is the first probe), and the total number of probes spent.
    pub fn probe_pairs(
        &self,
        votes: &[[i32; 64]],
        alpha: f64,
        max_probes: usize,
    ) -> (Vec<(u32, u32, u32)>, usize) {
        let mut exact: HashMap<u64, Vec<u32>> = HashMap::new();
        for (d, &fp) in self.fingerprints.iter().enumerate() {
            if !self.empty[d] {
                exact.entry(fp).or_default().push(d as u32);
            }
        }
        let spread = vote_spread(votes);
        let mut pairs = Vec::new();
        let mut probes = 0;
        for (x, &fp) in self.fingerprints.iter().enumerate() {
            if self.empty[x] {
                continue;
            }
            let flips = FlipSets::new(&votes[x], &spread, alpha, self.max_distance as usize);
            for flip in flips.take(max_probes) {
                probes += 1;
                if let Some(docs) = exact.get(&(fp ^ flip)) {
                    for &y in docs {
                        if y as usize != x {
                            pairs.push(((x as u32).min(y), (x as u32).max(y), flip.count_ones()));
                        }
                    }
                }
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        (pairs, probes)
    }
}

/// The standard deviation of each bit's votes over the corpus (at least 1).
fn vote_spread(votes: &[[i32; 64]]) -> [f64; 64] {
    let n = votes.len().max(1) as f64;
    let mut spread = [1.0; 64];
    for (i, s) in spread.iter_mut().enumerate() {
        let mean = votes.iter().map(|v| f64::from(v[i])).sum::<f64>() / n;
        let var = votes
            .iter()
            .map(|v| (f64::from(v[i]) - mean).powi(2))
            .sum::<f64>()
            / n;
        *s = var.sqrt().max(1.0);
    }
    spread
}

/// XOR masks of up to `k` bits, most probable first; the empty mask comes first.
struct FlipSets {
    /// Bit masks by decreasing flip probability.
    bits: Vec<u64>,
    /// Odds `p / (1 − p)` of each, same order.
    odds: Vec<f64>,
    max_bits: usize,
    heap: BinaryHeap<Candidate>,
    started: bool,
}

#[derive(PartialEq)]
struct Candidate {
    score: f64,
    positions: Vec<usize>,
}

impl Eq for Candidate {}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.positions.cmp(&self.positions))
    }
}

impl FlipSets {
    fn new(votes: &[i32; 64], spread: &[f64; 64], alpha: f64, max_bits: usize) -> Self {
        let mut by_probability: Vec<(f64, usize)> = (0..64)
            .map(|i| {
                let z = -f64::from(votes[i].abs()) / (alpha * spread[i]);
                let p = (0.5 * libm::erfc(-z / std::f64::consts::SQRT_2)).clamp(1e-12, 0.5);
                (p, i)
            })
            .collect();
        by_probability.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let bits = by_probability
            .iter()
            .map(|&(_, i)| 1u64 << (63 - i))
            .collect();
        let odds: Vec<f64> = by_probability.iter().map(|&(p, _)| p / (1.0 - p)).collect();
        let mut heap = BinaryHeap::new();
        if max_bits > 0 {
            heap.push(Candidate {
                score: odds[0],
                positions: vec![0],
            });
        }
        FlipSets {
            bits,
            odds,
            max_bits,
            heap,
            started: false,
        }
    }
}

impl Iterator for FlipSets {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if !self.started {
            self.started = true;
            return Some(0);
        }
        let best = self.heap.pop()?;
        let last = *best.positions.last().expect("non-empty");
        if last + 1 < self.bits.len() {
            let mut shifted = best.positions.clone();
            *shifted.last_mut().expect("non-empty") = last + 1;
            self.heap.push(Candidate {
                score: best.score / self.odds[last] * self.odds[last + 1],
                positions: shifted,
            });
            if best.positions.len() < self.max_bits {
                let mut grown = best.positions.clone();
                grown.push(last + 1);
                self.heap.push(Candidate {
                    score: best.score * self.odds[last + 1],
                    positions: grown,
                });
            }
        }
        Some(best.positions.iter().fold(0, |m, &p| m | self.bits[p]))
    }
}

/// Fingerprints and votes of feature sets, for tests and callers without a corpus reader.
pub fn simhashes(feature_sets: &[Vec<u64>]) -> Vec<SimHash> {
    feature_sets.iter().map(|f| SimHash::of(f)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn block_search_equals_brute_force() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut fps: Vec<u64> = (0..400).map(|_| rng.random()).collect();
        for i in 0..200 {
            let mut f = fps[i];
            for _ in 0..rng.random_range(0..6) {
                f ^= 1 << rng.random_range(0..64);
            }
            fps.push(f);
        }
        for k in [0, 1, 3, 5] {
            let index = SimHashIndex::new(fps.clone(), vec![false; fps.len()], k);
            let mut brute = Vec::new();
            for x in 0..fps.len() {
                for y in x + 1..fps.len() {
                    let d = hamming(fps[x], fps[y]);
                    if d <= k {
                        brute.push((x as u32, y as u32, d));
                    }
                }
            }
            assert_eq!(index.pairs(), brute, "k = {k}");
        }
    }

    #[test]
    fn flip_sets_come_in_decreasing_probability_without_repeats() {
        let mut votes = [50i32; 64];
        votes[10] = 1;
        votes[20] = -2;
        let spread = [10.0; 64];
        let masks: Vec<u64> = FlipSets::new(&votes, &spread, 0.1, 3).take(200).collect();
        assert_eq!(masks[0], 0);
        assert_eq!(masks[1], 1 << (63 - 10), "the weakest bit flips first");
        assert_eq!(masks[2], 1 << (63 - 20));
        assert_eq!(masks[3], (1 << (63 - 10)) | (1 << (63 - 20)));
        let unique: std::collections::HashSet<u64> = masks.iter().copied().collect();
        assert_eq!(unique.len(), masks.len());
        assert!(masks.iter().all(|m| m.count_ones() <= 3));
    }

    #[test]
    fn probing_with_all_flip_sets_is_exact() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let sets: Vec<Vec<u64>> = (0..60)
            .map(|_| (0..30).map(|_| rng.random()).collect())
            .collect();
        let mut sets = sets;
        for i in 0..30 {
            let mut s = sets[i].clone();
            s[0] = rng.random();
            sets.push(s);
        }
        let hashes = simhashes(&sets);
        let fps: Vec<u64> = hashes.iter().map(|h| h.fingerprint).collect();
        let votes: Vec<[i32; 64]> = hashes.iter().map(|h| h.votes).collect();
        let index = SimHashIndex::new(fps, vec![false; sets.len()], 2);
        // 1 + 64 + C(64, 2) flip sets cover every mask of at most two bits.
        let (probed, probes) = index.probe_pairs(&votes, 0.1, 1 + 64 + 2016);
        assert_eq!(probed, index.pairs());
        assert_eq!(probes, sets.len() * (1 + 64 + 2016));
        let (few, _) = index.probe_pairs(&votes, 0.1, 8);
        assert!(few.len() <= probed.len());
    }
}
