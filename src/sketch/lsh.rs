//! Locality-sensitive hashing over MinHash signatures (banding).
//!
//! A signature of `b·r` slots is cut into `b` bands of `r` rows. Two documents become
//! candidates when any band is identical, which happens with probability
//! `1 − (1 − s^r)^b` for Jaccard similarity `s`: an S-curve whose steepest point sits near the
//! threshold when `(b, r)` are chosen well. [`LshParams::optimal`] picks them as datasketch
//! does: the pair that minimises the (equally weighted) area of false positives below the
//! threshold plus false negatives above it.

use rayon::prelude::*;
use xxhash_rust::xxh3::xxh3_64;

use super::minhash::Signatures;

/// The banding of a signature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LshParams {
    /// Number of bands.
    pub bands: usize,
    /// Slots per band.
    pub rows: usize,
}

impl LshParams {
    /// The `(bands, rows)` with `bands·rows ≤ num_perm` that minimises
    /// `∫₀ᵗ P(s) ds + ∫ₜ¹ (1 − P(s)) ds` for the collision probability `P` above (datasketch's
    /// choice).
    pub fn optimal(threshold: f64, num_perm: usize) -> Self {
        Self::weighted_optimal(threshold, num_perm, 0.5)
    }

    /// The same with missed pairs weighted `false_negative_weight` and extra candidates the
    /// rest: `(1 − w)·∫₀ᵗ P(s) ds + w·∫ₜ¹ (1 − P(s)) ds`.
    pub fn weighted_optimal(threshold: f64, num_perm: usize, false_negative_weight: f64) -> Self {
        assert!(
            (0.0..=1.0).contains(&threshold),
            "threshold must lie in [0, 1]"
        );
        let mut best = (f64::INFINITY, LshParams { bands: 1, rows: 1 });
        for bands in 1..=num_perm {
            for rows in 1..=num_perm / bands {
                let collide = |s: f64| 1.0 - (1.0 - s.powi(rows as i32)).powi(bands as i32);
                let false_pos = integrate(collide, 0.0, threshold);
                let false_neg = integrate(|s| 1.0 - collide(s), threshold, 1.0);
                let error =
                    (1.0 - false_negative_weight) * false_pos + false_negative_weight * false_neg;
                if error < best.0 {
                    best = (error, LshParams { bands, rows });
                }
            }
        }
        best.1
    }

    /// The probability that two documents of Jaccard similarity `s` share a band.
    pub fn collision_probability(&self, s: f64) -> f64 {
        1.0 - (1.0 - s.powi(self.rows as i32)).powi(self.bands as i32)
    }
}

/// Composite Simpson's rule on 256 intervals: the integrands are smooth polynomials, for
/// which this is exact to far below the differences between neighbouring `(b, r)` choices.
fn integrate(f: impl Fn(f64) -> f64, lo: f64, hi: f64) -> f64 {
    const STEPS: usize = 256;
    let h = (hi - lo) / STEPS as f64;
    let mut sum = f(lo) + f(hi);
    for i in 1..STEPS {
        let weight = if i % 2 == 1 { 4.0 } else { 2.0 };
        sum += weight * f(lo + i as f64 * h);
    }
    sum * h / 3.0
}

/// A band bucket of more documents than this is proposed as a star: its first document
/// paired with each other one, not every pair. So many documents sharing a band are one
/// cluster of near-copies (boilerplate, mirrors, a record harvested again and again), whose
/// pairs grow with its square: 15,000 copies make 112 million. Joined through one member,
/// they still make one group; the pairs cost grows with the documents.
pub const PAIRWISE_BUCKET: usize = 100;

/// The pairs `(x, y)`, `x < y`, of documents that share at least one band, sorted and without
/// repeats: every such pair, but in a bucket of more than [`PAIRWISE_BUCKET`] documents only
/// those of its first document. Documents without shingles take part in no pair.
///
/// Each band is handled by sorting `(band hash, doc)` keys, so memory is linear in the corpus
/// plus the pairs found, and bands run in parallel.
pub fn candidate_pairs(signatures: &Signatures, params: LshParams) -> Vec<(u32, u32)> {
    assert!(
        params.bands * params.rows <= signatures.num_perm(),
        "banding needs {} slots, signatures have {}",
        params.bands * params.rows,
        signatures.num_perm()
    );
    let docs: Vec<u32> = (0..signatures.len() as u32)
        .filter(|&d| !signatures.is_empty_doc(d as usize))
        .collect();
    let mut pairs: Vec<(u32, u32)> = (0..params.bands)
        .into_par_iter()
        .flat_map_iter(|band| {
            let range = band * params.rows..(band + 1) * params.rows;
            let mut keys: Vec<(u64, u32)> = docs
                .iter()
                .map(|&d| {
                    let slots = &signatures.row(d as usize)[range.clone()];
                    (words_hash(slots), d)
                })
                .collect();
            keys.sort_unstable();
            let mut band_pairs = Vec::new();
            for bucket in keys.chunk_by(|x, y| x.0 == y.0) {
                bucket_pairs(bucket, |&(_, doc)| doc, &mut band_pairs);
            }
            band_pairs
        })
        .collect();
    pairs.par_sort_unstable();
    pairs.dedup();
    pairs
}

/// The pairs [`candidate_pairs`] finds over `held` followed by `new` (numbered after `held`'s)
/// that join a document of each, as `(held document, new document)` numbered in their own
/// signatures, sorted and without repeats. A new batch against a collection: the collection's
/// band keys are hashed and looked up among the batch's, not sorted with them, and no pair
/// within the collection is made. A bucket of more than [`PAIRWISE_BUCKET`] documents in all
/// gives its first (a held document, where it has one) with each new one.
pub fn candidate_pairs_between(
    held: &Signatures,
    new: &Signatures,
    params: LshParams,
) -> Vec<(u32, u32)> {
    assert_eq!(held.num_perm(), new.num_perm(), "signatures of one width");
    let present = |signatures: &Signatures| -> Vec<u32> {
        (0..signatures.len() as u32)
            .filter(|&d| !signatures.is_empty_doc(d as usize))
            .collect()
    };
    let (held_docs, new_docs) = (present(held), present(new));
    let mut pairs: Vec<(u32, u32)> = (0..params.bands)
        .into_par_iter()
        .flat_map_iter(|band| {
            let range = band * params.rows..(band + 1) * params.rows;
            let key = |signatures: &Signatures, d: u32| {
                words_hash(&signatures.row(d as usize)[range.clone()])
            };
            let mut new_keys: Vec<(u64, u32)> =
                new_docs.iter().map(|&d| (key(new, d), d)).collect();
            new_keys.sort_unstable();
            let wanted: rustc_hash::FxHashSet<u64> = new_keys.iter().map(|&(key, _)| key).collect();
            let mut held_keys: Vec<(u64, u32)> = held_docs
                .iter()
                .map(|&d| (key(held, d), d))
                .filter(|(key, _)| wanted.contains(key))
                .collect();
            held_keys.sort_unstable();
            let mut band_pairs = Vec::new();
            same_keys(&held_keys, &new_keys, |held_bucket, new_bucket| {
                let firsts = match held_bucket.len() + new_bucket.len() > PAIRWISE_BUCKET {
                    true => &held_bucket[..1],
                    false => held_bucket,
                };
                for &(_, x) in firsts {
                    band_pairs.extend(new_bucket.iter().map(|&(_, y)| (x, y)));
                }
            });
            band_pairs
        })
        .collect();
    pairs.par_sort_unstable();
    pairs.dedup();
    pairs
}

/// Calls `meet` with the entries of each key that both `held` and `new` (each sorted by key)
/// hold: its held entries, then its new ones.
pub fn same_keys<T: Copy>(
    held: &[(u64, T)],
    new: &[(u64, T)],
    mut meet: impl FnMut(&[(u64, T)], &[(u64, T)]),
) {
    let mut held_blocks = held.chunk_by(|x, y| x.0 == y.0).peekable();
    for new_block in new.chunk_by(|x, y| x.0 == y.0) {
        let key = new_block[0].0;
        while held_blocks.next_if(|block| block[0].0 < key).is_some() {}
        if let Some(held_block) = held_blocks.next_if(|block| block[0].0 == key) {
            meet(held_block, new_block);
        }
    }
}

/// Appends the pairs one band bucket proposes to `pairs`: every pair of its documents, or,
/// past [`PAIRWISE_BUCKET`] documents, its first document with each other one. `bucket` is
/// sorted by document (`doc` reads it from an entry), so each pair is `(x, y)`, `x < y`.
pub fn bucket_pairs<T>(bucket: &[T], doc: impl Fn(&T) -> u32, pairs: &mut Vec<(u32, u32)>) {
    let firsts = match bucket.len() > PAIRWISE_BUCKET {
        true => &bucket[..1],
        false => bucket,
    };
    for (i, x) in firsts.iter().enumerate() {
        let x = doc(x);
        pairs.extend(bucket[i + 1..].iter().map(|y| (x, doc(y))));
    }
}

/// The key of each band of a signature, in band order: two documents share a band when
/// their keys at one place are equal (what [`candidate_pairs`] sorts by, band by band).
pub fn band_keys(signature: &[u32], params: LshParams) -> impl Iterator<Item = u64> + '_ {
    (0..params.bands)
        .map(move |band| words_hash(&signature[band * params.rows..(band + 1) * params.rows]))
}

/// Whether two signatures agree on every slot of at least one band: whether datasketch's
/// `MinHashLSH` would return one when queried with the other.
pub fn share_band(a: &[u32], b: &[u32], params: LshParams) -> bool {
    (0..params.bands).any(|band| {
        let range = band * params.rows..(band + 1) * params.rows;
        a[range.clone()] == b[range]
    })
}

/// The hash of 32-bit words (a band's slots, a title's word hashes) as little-endian bytes,
/// read in place where the machine's own order is that.
pub fn words_hash(words: &[u32]) -> u64 {
    if cfg!(target_endian = "little") {
        return xxh3_64(bytemuck::cast_slice(words));
    }
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    xxh3_64(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sketch::MinHasher;
    use crate::text::Shingler;
    use datasketch_minhash_lsh::{LshParams as Oracle, Weights};

    #[test]
    fn banding_matches_datasketch_rule() {
        for num_perm in [16, 32, 64, 128, 256] {
            for threshold in [0.3, 0.5, 0.7, 0.8, 0.9] {
                let ours = LshParams::optimal(threshold, num_perm);
                let oracle = Oracle::find_optimal_params(threshold, num_perm, &Weights(0.5, 0.5));
                assert_eq!(
                    (ours.bands, ours.rows),
                    (oracle.b, oracle.r),
                    "threshold {threshold}, {num_perm} permutations"
                );
            }
        }
    }

    #[test]
    fn default_banding_is_steep_around_the_threshold() {
        let p = LshParams::optimal(0.7, 128);
        assert!(p.collision_probability(0.9) > 0.99);
        assert!(p.collision_probability(0.3) < 0.01);
    }

    #[test]
    fn candidates_include_near_duplicates_and_skip_unrelated_and_empty() {
        let shingler = Shingler::word_unigrams();
        let hasher = MinHasher::new(128, 1);
        let texts = [
            "deep learning for protein structure prediction from sequence data alone",
            "deep learning for protein structure prediction from sequence data",
            "a survey of medieval trade routes in the baltic sea region",
            "",
            "",
        ];
        let mut sigs = Signatures::new(128);
        for t in texts {
            let set = shingler.shingle_set(t);
            sigs.push(&hasher.sign(&set), set.is_empty());
        }
        let pairs = candidate_pairs(&sigs, LshParams::optimal(0.7, 128));
        assert_eq!(pairs, vec![(0, 1)]);
    }

    /// The pairs between a collection and a batch are those a run over both finds that join
    /// the two, buckets of many copies included.
    #[test]
    fn pairs_between_two_sets_are_those_of_both_that_cross() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let shingler = Shingler::word_unigrams();
        let hasher = MinHasher::new(128, 1);
        let words: Vec<String> = (0..40).map(|w| format!("w{w}")).collect();
        let base: Vec<Vec<&str>> = (0..30)
            .map(|_| {
                (0..12)
                    .map(|_| words[rng.random_range(0..40)].as_str())
                    .collect()
            })
            .collect();
        let sign = |sigs: &mut Signatures, text: &str| {
            let set = shingler.shingle_set(text);
            sigs.push(&hasher.sign(&set), set.is_empty());
        };
        let (mut held, mut new) = (Signatures::new(128), Signatures::new(128));
        for signatures in [&mut held, &mut new] {
            for _ in 0..150 {
                let mut text = base[rng.random_range(0..30)].clone();
                text[rng.random_range(0..12)] = words[rng.random_range(0..40)].as_str();
                sign(signatures, &text.join(" "));
            }
            // Copies enough for a star, on either side, and an empty document.
            for _ in 0..60 {
                sign(signatures, "one abstract copied many times over");
            }
            sign(signatures, "");
        }
        let params = LshParams::optimal(0.7, 128);
        let mut both = held.clone();
        both.extend(&new);
        let offset = held.len() as u32;
        let expected: Vec<(u32, u32)> = candidate_pairs(&both, params)
            .into_iter()
            .filter(|&(x, y)| x < offset && y >= offset)
            .map(|(x, y)| (x, y - offset))
            .collect();
        assert!(expected.len() > 200, "{}", expected.len());
        assert_eq!(candidate_pairs_between(&held, &new, params), expected);
    }

    /// Up to [`PAIRWISE_BUCKET`] copies give every pair; one more, a star from the first.
    #[test]
    fn a_bucket_of_many_copies_is_proposed_as_a_star() {
        let set = Shingler::word_unigrams().shingle_set("one abstract copied many times over");
        let signature = MinHasher::new(128, 1).sign(&set);
        let copies = |count: usize| {
            let mut sigs = Signatures::new(128);
            for _ in 0..count {
                sigs.push(&signature, false);
            }
            candidate_pairs(&sigs, LshParams::optimal(0.7, 128))
        };
        let n = PAIRWISE_BUCKET;
        assert_eq!(copies(n).len(), n * (n - 1) / 2);
        let star = copies(n + 1);
        let expected: Vec<(u32, u32)> = (1..=n as u32).map(|y| (0, y)).collect();
        assert_eq!(star, expected);
    }
}
