//! The candidates MinHash proposes: documents that share a band of their signatures and,
//! under the evidence rule, documents whose titles have the same words (the copies bands miss
//! because one body is cut short or missing). The minhash method judges these; the two-stage
//! method's cells add them to each document's nearest neighbours.

use rayon::prelude::*;
use xxhash_rust::xxh3::xxh3_64;

use super::rule::MIN_TITLE_WORDS;
use super::{Confirm, ConfirmSettings, Facts, SketchFacts};
use crate::sketch::{Signatures, candidate_pairs};

/// The pairs `(a, b)`, `a < b`, that MinHash proposes: those that share a band of their
/// signatures and, under the evidence rule, those whose titles have the same words.
pub fn proposed_pairs(
    signatures: &Signatures,
    sketches: &SketchFacts,
    settings: &ConfirmSettings,
) -> Vec<(u32, u32)> {
    let mut candidates = candidate_pairs(signatures, settings.banding());
    // The plain rules stay the design card's MinHash LSH: only bands propose.
    if settings.rule.confirm == Confirm::Evidence {
        candidates.extend(same_title_pairs(sketches, signatures.len()));
        candidates.par_sort_unstable();
        candidates.dedup();
    }
    candidates
}

/// More records than this under one title are a common title, not copies of one record.
const SAME_TITLE_LIMIT: usize = 50;

/// Pairs of documents whose titles (notes removed, at least [`MIN_TITLE_WORDS`] words) have
/// the same words: the copies LSH misses because one body is truncated or missing, so their
/// whole-text Jaccard is low; the rule then weighs them like any candidate.
fn same_title_pairs(sketches: &SketchFacts, documents: usize) -> Vec<(u32, u32)> {
    // Sorted by a hash of the title's words: one integer comparison instead of a slice's.
    let mut titled: Vec<(u64, u32)> = (0..documents)
        .filter_map(|doc| Some((title_key(sketches.facts(doc))?, doc as u32)))
        .collect();
    titled.sort_unstable();
    let mut pairs = Vec::new();
    for block in titled.chunk_by(|x, y| x.0 == y.0) {
        title_block_pairs(block, |&(_, doc)| doc, &mut pairs);
    }
    pairs
}

/// The key under which a document's title proposes it: a hash of its words, where the title
/// has at least `MIN_TITLE_WORDS` (4).
pub fn title_key(facts: &Facts) -> Option<u64> {
    let title = facts.title.as_deref()?;
    let bytes: Vec<u8> = title.iter().flat_map(|w| w.to_le_bytes()).collect();
    (title.len() >= MIN_TITLE_WORDS).then(|| xxh3_64(&bytes))
}

/// Appends the pairs of the documents under one title key to `pairs`: every pair, unless the
/// title is common (more than `SAME_TITLE_LIMIT`, 50, records). `block` is sorted by document
/// (`doc` reads it from an entry).
pub fn title_block_pairs<T>(block: &[T], doc: impl Fn(&T) -> u32, pairs: &mut Vec<(u32, u32)>) {
    if block.len() > SAME_TITLE_LIMIT {
        return;
    }
    for (i, x) in block.iter().enumerate() {
        let x = doc(x);
        pairs.extend(block[i + 1..].iter().map(|y| (x, doc(y))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confirm::Facts;

    #[test]
    fn records_under_one_title_are_proposed_unless_the_title_is_short_or_common() {
        let mut sketches = SketchFacts::default();
        let titles = [
            "robot gait training after stroke",
            "Robot gait training after stroke [erratum]",
            "editorial notes",
            "editorial notes",
            "a survey of hospital pharmacy",
            "robot gait training after stroke",
        ];
        for title in titles {
            sketches.push(4, Facts::of(Some(title), "a body"));
        }
        let mut pairs = same_title_pairs(&sketches, titles.len());
        pairs.sort_unstable();
        assert_eq!(
            pairs,
            [(0, 1), (0, 5), (1, 5)],
            "notes and case do not count"
        );
        let common: Vec<Facts> = (0..=SAME_TITLE_LIMIT)
            .map(|_| Facts::of(Some("annual report of the society"), ""))
            .collect();
        let mut sketches = SketchFacts::default();
        for facts in common {
            sketches.push(4, facts);
        }
        assert!(same_title_pairs(&sketches, SAME_TITLE_LIMIT + 1).is_empty());
    }
}
