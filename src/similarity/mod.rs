//! Exact similarity measures between two texts, for the classic methods and for people who want
//! one number for one pair.
//!
//! - [`jaccard`]: `|A ∩ B| / |A ∪ B|` of the two word sets;
//! - [`overlap`]: the share of one side's words that the other side also has (asymmetric, as in
//!   the WebSty tutorial's document comparison);
//! - [`cosine`]: cosine of the word-count vectors.
//!
//! Words are those of [`crate::text::words`]: Unicode `\w+`, lower-cased.

mod measure;
mod pairwise;
mod prefix_join;

pub use measure::{Measure, Scorer};
pub use pairwise::{
    cosine, cosine_counts, jaccard, overlap, set_jaccard, shared_count, word_counts,
};
pub use prefix_join::{SetIndex, SetJoin, similar_pairs};

/// The exact Jaccard a pair reaches to be a duplicate, unless told (the design card's 0.7).
pub const JACCARD_THRESHOLD: f64 = 0.7;
/// Text::DeDuper's resemblance: word n-grams of this size...
pub const RESEMBLANCE_NGRAM: std::num::NonZeroUsize = std::num::NonZeroUsize::new(5).unwrap();
/// ... whose resemblance must exceed this.
pub const RESEMBLANCE_THRESHOLD: f64 = 0.2;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The seed-002 blog's six sample texts.
    pub(crate) const SEED_SAMPLE: [&str; 6] = [
        "a b c d e f g h i j",
        "a b c d e f g h i 1",
        "a b c d e f g h 1 2",
        "0 1 2 3 4 5 6 7 8 9",
        "0 1 2 3 4 5 6 7 8 x",
        "x y z",
    ];

    /// The seed-002 sample and its printed pairwise scores (two decimals).
    #[test]
    fn seed_pairwise_scores_are_reproduced() {
        let texts = SEED_SAMPLE;
        let expected = [
            (0, 1, 0.82),
            (0, 2, 0.67),
            (0, 3, 0.00),
            (0, 4, 0.00),
            (0, 5, 0.00),
            (1, 2, 0.82),
            (1, 3, 0.05),
            (1, 4, 0.05),
            (1, 5, 0.00),
            (2, 3, 0.11),
            (2, 4, 0.11),
            (2, 5, 0.00),
            (3, 4, 0.82),
            (3, 5, 0.00),
            (4, 5, 0.08),
        ];
        for (i, j, score) in expected {
            let got = jaccard(texts[i], texts[j]);
            assert_eq!(
                format!("{got:.2}"),
                format!("{score:.2}"),
                "texts {} and {}",
                i + 1,
                j + 1
            );
        }
    }

    #[test]
    fn shared_count_is_the_size_of_the_intersection() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..500 {
            let mut set = |n: usize| -> Vec<u32> {
                let set: std::collections::BTreeSet<u32> =
                    (0..n).map(|_| rng.random_range(0..64)).collect();
                set.into_iter().collect()
            };
            let (a, b) = (set(40), set(25));
            let both = a.iter().filter(|x| b.binary_search(x).is_ok()).count();
            assert_eq!(shared_count(&a, &b), both, "{a:?} {b:?}");
            assert_eq!(shared_count(&b, &a), both);
        }
        assert_eq!(shared_count::<u32>(&[], &[1, 2]), 0);
    }

    #[test]
    fn polish_case_folding_counts_as_the_same_word() {
        assert_eq!(jaccard("Łódź", "łódź"), 1.0);
        assert_eq!(jaccard("Zażółć gęślą jaźń", "zażółć gęślą"), 2.0 / 3.0);
    }
}
