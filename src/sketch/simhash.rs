//! SimHash (Charikar): a 64-bit fingerprint whose Hamming distance tracks how different two
//! documents' weighted feature sets are.
//!
//! Every feature (a hashed shingle; a repeated one votes again, so callers choose the weighting
//! by passing a set or a multiset) votes +1 on the bits set in its hash and −1 on the others; bit `i` of the fingerprint is set
//! when the sum `v[i]` is positive. `|v[i]|` is how firmly the bit is decided: small margins are
//! the bits an edit is most likely to flip, which [`super::SimHashIndex`]'s probing
//! search uses.

/// A fingerprint and the per-bit vote margins it was decided by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimHash {
    /// The 64-bit fingerprint.
    pub fingerprint: u64,
    /// `v[i]` for each bit, most significant first (bit 63 at index 0).
    pub votes: [i32; 64],
}

impl SimHash {
    /// The SimHash of a multiset of feature hashes. No features: fingerprint 0.
    pub fn of(features: &[u64]) -> Self {
        let mut votes = [0i32; 64];
        for &h in features {
            for (i, vote) in votes.iter_mut().enumerate() {
                if h >> (63 - i) & 1 == 1 {
                    *vote += 1;
                } else {
                    *vote -= 1;
                }
            }
        }
        let fingerprint = votes
            .iter()
            .fold(0u64, |acc, &v| (acc << 1) | u64::from(v > 0));
        SimHash { fingerprint, votes }
    }
}

/// Number of differing bits.
pub fn hamming(a: u64, b: u64) -> u32 {
    (a ^ b).count_ones()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::Shingler;

    fn fp(text: &str) -> u64 {
        let mut f = Vec::new();
        Shingler::word_unigrams().hash_shingles(text, &mut f);
        SimHash::of(&f).fingerprint
    }

    #[test]
    fn near_texts_are_close_and_unrelated_ones_far() {
        let base = "the committee approved the annual budget after a long debate on regional \
                    transport funding and the future of rural rail lines in the north";
        let edited = "the committee approved the annual budget after a long debate on regional \
                      transport funding and the future of rural rail lines in the far north";
        let other = "a recipe for sourdough bread needs flour water salt and patience above all";
        assert!(
            hamming(fp(base), fp(edited)) <= 6,
            "{}",
            hamming(fp(base), fp(edited))
        );
        assert!(hamming(fp(base), fp(other)) > 12);
        assert_eq!(fp(base), fp(&base.to_uppercase()));
    }

    #[test]
    fn votes_decide_the_bits() {
        let s = SimHash::of(&[u64::MAX, u64::MAX, 0]);
        assert_eq!(s.fingerprint, u64::MAX);
        assert!(s.votes.iter().all(|&v| v == 1));
        assert_eq!(SimHash::of(&[]).fingerprint, 0);
    }
}
