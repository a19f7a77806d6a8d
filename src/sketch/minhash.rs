//! MinHash signatures.
//!
//! For a set of shingle hashes and a random permutation `π` of the hash space,
//! `Pr[min π(A) = min π(B)] = |A ∩ B| / |A ∪ B|`: the fraction of agreeing minima over many
//! permutations estimates the Jaccard similarity of two sets.
//!
//! The permutations are Dietzfelbinger's multiply-add-shift family on 32-bit keys,
//! `π(x) = ⌊(a·x + b) mod 2^64 / 2^32⌋` with random 64-bit `a, b`: strongly universal (pairwise
//! independent), the same guarantee as the textbook `(a·h + b) mod p` family, but with only
//! 64-bit arithmetic, so the 128 permutations of a token run as vector instructions (AVX2 when
//! the CPU has it, chosen at run time; plain code otherwise, same results). Each shingle's
//! 64-bit hash is folded to the 32-bit key (a key collision costs 2^-32 per pair of shingles).
//! `a, b` come from a seeded ChaCha8 stream, whose output is fixed by its specification: the
//! same seed gives the same signatures on every platform.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The 32-bit key of a 64-bit shingle hash.
#[inline]
fn key(hash: u64) -> u64 {
    (hash ^ (hash >> 32)) & 0xffff_ffff
}

/// Folds each shingle into the running minima: the hot loop of the whole method, written so
/// that the compiler turns the inner loop into vector instructions.
#[inline(always)]
fn fold_minima(a: &[u64], b: &[u64], shingles: &[u64], out: &mut [u32]) {
    for &h in shingles {
        let x = key(h);
        for ((slot, &a), &b) in out.iter_mut().zip(a).zip(b) {
            let v = (a.wrapping_mul(x).wrapping_add(b) >> 32) as u32;
            *slot = (*slot).min(v);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn fold_minima_avx2(a: &[u64], b: &[u64], shingles: &[u64], out: &mut [u32]) {
    fold_minima(a, b, shingles, out);
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
            a.push(rng.next_u64());
            b.push(rng.next_u64());
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
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has just been checked to support AVX2.
            unsafe { fold_minima_avx2(&self.a, &self.b, shingles, out) };
            return;
        }
        fold_minima(&self.a, &self.b, shingles, out);
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
    fn vector_and_plain_kernels_agree() {
        let hasher = MinHasher::new(128, 3);
        let shingles: Vec<u64> = (0..500u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        let mut plain = vec![EMPTY_SLOT; 128];
        fold_minima(&hasher.a, &hasher.b, &shingles, &mut plain);
        assert_eq!(hasher.sign(&shingles), plain);
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
    const PINNED: [u32; 4] = [1359227510, 1201060281, 563120185, 1022939478];

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
