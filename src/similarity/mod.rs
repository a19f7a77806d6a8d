//! Exact similarity measures between two texts, for the classic methods and for people who want
//! one number for one pair.
//!
//! - [`jaccard`]: `|A ∩ B| / |A ∪ B|` of the two word sets;
//! - [`overlap`]: the share of one side's words that the other side also has (asymmetric, as in
//!   the WebSty tutorial's document comparison);
//! - [`cosine`]: cosine of the word-count vectors.
//!
//! Words are those of [`crate::text::words`]: Unicode `\w+`, lower-cased.

mod join;
mod measure;

pub use join::{SetJoin, similar_pairs};
pub use measure::{Measure, Scorer};

/// The exact Jaccard a pair reaches to be a duplicate, unless told (the design card's 0.7).
pub const JACCARD_THRESHOLD: f64 = 0.7;
/// Text::DeDuper's resemblance: word n-grams of this size...
pub const RESEMBLANCE_NGRAM: std::num::NonZeroUsize = std::num::NonZeroUsize::new(5).unwrap();
/// ... whose resemblance must exceed this.
pub const RESEMBLANCE_THRESHOLD: f64 = 0.2;

use std::collections::{HashMap, HashSet};

use crate::text::for_each_word;

fn word_set(text: &str) -> HashSet<String> {
    let mut set = HashSet::new();
    for_each_word(text, |w| {
        set.insert(w.to_owned());
    });
    set
}

/// Jaccard similarity of the word sets of two texts.
///
/// ```
/// use neardup::similarity::jaccard;
/// assert_eq!(jaccard("", ""), 1.0);              // two empty texts are the same
/// assert_eq!(jaccard("test", ""), 0.0);          // one empty: nothing shared
/// assert_eq!(jaccard("bar foo", "bar"), 0.5);    // 1 of 2 words in common
/// assert_eq!(jaccard("bar", "bar foo"), 0.5);    // order does not matter
/// assert_eq!(jaccard("Bar", "baR foo"), 0.5);    // case does not matter
/// assert_eq!(jaccard("bar,", "bar: -foo-"), 0.5); // punctuation is ignored
/// assert_eq!(jaccard("1", "2 1"), 0.5);          // numbers are words
/// assert_eq!(jaccard("bar bar", "bar"), 1.0);    // repeats do not count
/// let s = jaccard("To jest pierwsze zdanie.", "To nie jest pierwsze zdanie, tylko drugie.");
/// assert!((s - 4.0 / 7.0).abs() < 1e-12);
/// ```
pub fn jaccard(a: &str, b: &str) -> f64 {
    let (a, b) = (word_set(a), word_set(b));
    let union = a.union(&b).count();
    if union == 0 {
        return 1.0;
    }
    a.intersection(&b).count() as f64 / union as f64
}

/// How much of `a`'s vocabulary `b` shares: `|A ∩ B| / |A|` over word sets (1 when `a` has no
/// words).
///
/// ```
/// use neardup::similarity::overlap;
/// assert_eq!(overlap("a b c d", "a b"), 0.5);
/// assert_eq!(overlap("a b", "a b c d"), 1.0);
/// ```
pub fn overlap(a: &str, b: &str) -> f64 {
    let (a, b) = (word_set(a), word_set(b));
    if a.is_empty() {
        return 1.0;
    }
    a.intersection(&b).count() as f64 / a.len() as f64
}

/// The word counts of a text.
pub fn word_counts(text: &str) -> HashMap<String, u32> {
    let mut counts = HashMap::new();
    for_each_word(text, |w| *counts.entry(w.to_owned()).or_insert(0) += 1);
    counts
}

/// Cosine similarity of two word-count vectors (0 when either is empty).
pub fn cosine_counts(a: &HashMap<String, u32>, b: &HashMap<String, u32>) -> f64 {
    let norm = |v: &HashMap<String, u32>| {
        v.values()
            .map(|&c| f64::from(c).powi(2))
            .sum::<f64>()
            .sqrt()
    };
    let (na, nb) = (norm(a), norm(b));
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let dot: f64 = small
        .iter()
        .filter_map(|(w, &c)| large.get(w).map(|&d| f64::from(c) * f64::from(d)))
        .sum();
    dot / (na * nb)
}

/// Cosine similarity of the word-count vectors of two texts.
///
/// ```
/// use neardup::similarity::cosine;
/// assert!((cosine("a b", "a b") - 1.0).abs() < 1e-12);
/// assert_eq!(cosine("a", "b"), 0.0);
/// ```
pub fn cosine(a: &str, b: &str) -> f64 {
    cosine_counts(&word_counts(a), &word_counts(b))
}

/// Exact Jaccard of two sorted sets (0 when both are empty).
pub fn set_jaccard<T: Ord>(a: &[T], b: &[T]) -> f64 {
    let shared = shared_count(a, b);
    let union = a.len() + b.len() - shared;
    if union == 0 {
        0.0
    } else {
        shared as f64 / union as f64
    }
}

/// The number of elements two sorted sets share.
pub fn shared_count<T: Ord>(a: &[T], b: &[T]) -> usize {
    let (mut i, mut j, mut shared) = (0, 0, 0);
    // Without branches: which side advances is data the processor cannot predict, and the
    // confirm stage merges two 128-hash samples for every candidate.
    while i < a.len() && j < b.len() {
        let (x, y) = (&a[i], &b[j]);
        shared += usize::from(x == y);
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    shared
}

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
