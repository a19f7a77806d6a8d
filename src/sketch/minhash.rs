//! MinHash signatures.
//!
//! For a set of 64-bit shingle hashes `S` and a random permutation `π` of the hash space,
//! `Pr[min π(A) = min π(B)] = |A ∩ B| / |A ∪ B|`: the fraction of agreeing minima over many
//! permutations estimates the Jaccard similarity of two sets. The permutations are the universal
//! family `π(h) = (a·h + b) mod (2^61 − 1)` with `a, b` drawn from a seeded ChaCha8 stream,
//! whose output is fixed by its specification: the same seed gives the same signatures on every
//! platform. Each minimum keeps its low 32 bits (as datasketch does), halving memory at a
//! collision rate of 2^-32 per slot.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The Mersenne prime 2^61 − 1, the modulus of the permutation family.
const MERSENNE_61: u64 = (1 << 61) - 1;

/// `x mod (2^61 − 1)` for any `x < 2^122`.
#[inline]
fn mod_mersenne(x: u128) -> u64 {
    let folded = (x as u64 & MERSENNE_61) + (x >> 61) as u64;
    let folded = (folded & MERSENNE_61) + (folded >> 61);
    if folded >= MERSENNE_61 {
        folded - MERSENNE_61
    } else {
        folded
    }
}

/// The value a slot keeps when a document has no shingles at all.
pub const EMPTY_SLOT: u32 = u32::MAX;

/// A seeded family of permutations that turns shingle sets into signatures.
#[derive(Clone, Debug)]
pub struct MinHasher {
    a: Vec<u64>,
    b: Vec<u64>,
    seed: u64,
}

impl MinHasher {
    /// `num_perm` permutations drawn from `seed`.
    pub fn new(num_perm: usize, seed: u64) -> Self {
        assert!(num_perm > 0, "a MinHash needs at least one permutation");
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut a = Vec::with_capacity(num_perm);
        let mut b = Vec::with_capacity(num_perm);
        for _ in 0..num_perm {
            a.push(1 + rng.next_u64() % (MERSENNE_61 - 1));
            b.push(rng.next_u64() % MERSENNE_61);
        }
        MinHasher { a, b, seed }
    }

    /// How many permutations (signature slots) this uses.
    pub fn num_perm(&self) -> usize {
        self.a.len()
    }

    /// The seed the permutations were drawn from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Writes the signature of the set `shingles` into `out` (`num_perm` slots). Repeated
    /// hashes are harmless. An empty set gives [`EMPTY_SLOT`] everywhere.
    pub fn sign_into(&self, shingles: &[u64], out: &mut [u32]) {
        assert_eq!(out.len(), self.num_perm(), "signature length");
        out.fill(EMPTY_SLOT);
        for &h in shingles {
            let h = u128::from(mod_mersenne(u128::from(h)));
            for ((slot, &a), &b) in out.iter_mut().zip(&self.a).zip(&self.b) {
                let v = mod_mersenne(u128::from(a) * h + u128::from(b)) as u32;
                *slot = (*slot).min(v);
            }
        }
    }

    /// The signature of `shingles` as a new vector.
    pub fn sign(&self, shingles: &[u64]) -> Vec<u32> {
        let mut out = vec![0; self.num_perm()];
        self.sign_into(shingles, &mut out);
        out
    }
}

/// The estimated Jaccard similarity of two signatures: the fraction of equal slots.
pub fn jaccard_estimate(a: &[u32], b: &[u32]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let equal = a.iter().zip(b).filter(|(x, y)| x == y).count();
    equal as f64 / a.len() as f64
}

/// The signatures of a whole corpus, one row of `num_perm` slots per document, in one
/// contiguous allocation (512 bytes a document at 128 permutations).
#[derive(Clone, Debug, Default)]
pub struct Signatures {
    num_perm: usize,
    slots: Vec<u32>,
    empty: Vec<bool>,
}

impl Signatures {
    /// An empty matrix for signatures of `num_perm` slots.
    pub fn new(num_perm: usize) -> Self {
        Signatures {
            num_perm,
            slots: Vec::new(),
            empty: Vec::new(),
        }
    }

    /// Appends one document's signature; `empty` marks a document with no shingles, which
    /// matches nothing.
    pub fn push(&mut self, signature: &[u32], empty: bool) {
        assert_eq!(signature.len(), self.num_perm, "signature length");
        self.slots.extend_from_slice(signature);
        self.empty.push(empty);
    }

    /// The number of documents.
    pub fn len(&self) -> usize {
        self.empty.len()
    }

    /// Whether there are no documents.
    pub fn is_empty(&self) -> bool {
        self.empty.is_empty()
    }

    /// Slots per signature.
    pub fn num_perm(&self) -> usize {
        self.num_perm
    }

    /// The signature of document `doc`.
    pub fn row(&self, doc: usize) -> &[u32] {
        &self.slots[doc * self.num_perm..(doc + 1) * self.num_perm]
    }

    /// Whether document `doc` had no shingles.
    pub fn is_empty_doc(&self, doc: usize) -> bool {
        self.empty[doc]
    }

    /// The estimated Jaccard similarity of two documents; 0 if either is empty.
    pub fn similarity(&self, x: usize, y: usize) -> f64 {
        if self.empty[x] || self.empty[y] {
            return 0.0;
        }
        jaccard_estimate(self.row(x), self.row(y))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::Shingler;

    #[test]
    fn mersenne_reduction_matches_plain_modulo() {
        let p = u128::from(MERSENNE_61);
        for x in [
            0u128,
            1,
            p - 1,
            p,
            p + 1,
            2 * p,
            (p - 1) * (p - 1) + p - 1,
            u64::MAX as u128,
        ] {
            assert_eq!(u128::from(mod_mersenne(x)), x % p, "x = {x}");
        }
    }

    #[test]
    fn same_seed_same_signature_other_seed_other_signature() {
        let s = Shingler::word_unigrams().shingle_set("the quick brown fox");
        assert_eq!(
            MinHasher::new(128, 1).sign(&s),
            MinHasher::new(128, 1).sign(&s)
        );
        assert_ne!(
            MinHasher::new(128, 1).sign(&s),
            MinHasher::new(128, 2).sign(&s)
        );
    }

    #[test]
    fn signatures_are_pinned_across_platforms_and_versions() {
        // If this changes, every stored index and published number changes: only on purpose.
        let hasher = MinHasher::new(4, 42);
        let s = Shingler::word_unigrams().shingle_set("near duplicate detection");
        assert_eq!(hasher.sign(&s), PINNED);
    }
    const PINNED: [u32; 4] = [643661635, 1013783583, 844189436, 1063137727];

    #[test]
    fn estimate_tracks_true_jaccard() {
        let shingler = Shingler::word_unigrams();
        let a: Vec<String> = (0..200).map(|i| format!("w{i}")).collect();
        let b: Vec<String> = (50..250).map(|i| format!("w{i}")).collect();
        // |A ∩ B| = 150, |A ∪ B| = 250: J = 0.6.
        let hasher = MinHasher::new(512, 7);
        let sa = hasher.sign(&shingler.shingle_set(&a.join(" ")));
        let sb = hasher.sign(&shingler.shingle_set(&b.join(" ")));
        let est = jaccard_estimate(&sa, &sb);
        assert!((est - 0.6).abs() < 0.07, "estimate {est}");
    }

    #[test]
    fn empty_documents_match_nothing() {
        let hasher = MinHasher::new(8, 1);
        let mut sigs = Signatures::new(8);
        sigs.push(&hasher.sign(&[]), true);
        sigs.push(&hasher.sign(&[]), true);
        assert_eq!(sigs.similarity(0, 1), 0.0);
    }
}
