//! Exact measures of one pair of texts (or of sorted sets): Jaccard, overlap, cosine of word
//! counts.

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
