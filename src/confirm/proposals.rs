//! The candidates MinHash proposes: documents that share a band of their signatures and,
//! under the evidence rule, documents whose titles have the same words (the copies bands miss
//! because one body is cut short or missing). The minhash method judges these; the two-stage
//! method's cells add them to each document's nearest neighbours.

use rayon::prelude::*;

use super::rule::MIN_TITLE_WORDS;
use super::{Confirm, ConfirmSettings, FactsRef, SketchFacts};
use crate::sketch::{Signatures, candidate_pairs, candidate_pairs_between, same_keys, words_hash};

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

/// The pairs [`proposed_pairs`] finds over `held` followed by `new` that join a document of
/// each, as `(held document, new document)` numbered on their own side, sorted and without
/// repeats; no pair within either side is made (a batch checked against a collection).
pub fn proposed_pairs_between(
    held: (&Signatures, &SketchFacts),
    new: (&Signatures, &SketchFacts),
    settings: &ConfirmSettings,
) -> Vec<(u32, u32)> {
    let mut candidates = candidate_pairs_between(held.0, new.0, settings.banding());
    if settings.rule.confirm == Confirm::Evidence {
        let titled = |(signatures, sketches): (&Signatures, &SketchFacts)| -> Vec<(u64, u32)> {
            let mut keyed: Vec<(u64, u32)> = (0..signatures.len())
                .filter_map(|doc| Some((title_key(sketches.facts(doc))?, doc as u32)))
                .collect();
            keyed.sort_unstable();
            keyed
        };
        let new_titled = titled(new);
        let mut held_titled = titled(held);
        held_titled.retain(|(key, _)| new_titled.binary_search_by_key(key, |&(k, _)| k).is_ok());
        same_keys(&held_titled, &new_titled, |held_block, new_block| {
            if held_block.len() + new_block.len() <= SAME_TITLE_LIMIT {
                for &(_, x) in held_block {
                    candidates.extend(new_block.iter().map(|&(_, y)| (x, y)));
                }
            }
        });
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
pub fn title_key(facts: FactsRef<'_>) -> Option<u64> {
    let title = facts.title?;
    (title.len() >= MIN_TITLE_WORDS).then(|| words_hash(title))
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

    /// Between a collection and a batch: the pairs a run over both proposes that cross, by
    /// band or by title (a common title on one side only still counts in all).
    #[test]
    fn pairs_between_two_sets_are_the_crossing_pairs_of_both() {
        let settings = ConfirmSettings::default();
        let hasher = crate::sketch::MinHasher::new(128, 1);
        let shingler = crate::text::Shingler::word_unigrams();
        let side = |titles: &[(&str, &str, usize)]| {
            let (mut signatures, mut sketches) = (Signatures::new(128), SketchFacts::default());
            for &(title, words, copies) in titles {
                for copy in 0..copies {
                    let body = format!("{title} {words} number {copy}");
                    let set = shingler.shingle_set(&body);
                    signatures.push(&hasher.sign(&set), set.is_empty());
                    sketches.push(set.len() as u32, Facts::of(Some(title), &body).as_ref());
                }
            }
            (signatures, sketches)
        };
        let body = "body of the record";
        let held = side(&[
            ("robot gait training after stroke", body, 2),
            ("annual report of the society", body, 30),
            ("a survey of hospital pharmacy", body, 1),
        ]);
        // The pharmacy survey shares only its title: bands do not propose it.
        let other = "with a text of other words entirely, long enough to differ from it";
        let new = side(&[
            ("robot gait training after stroke", body, 1),
            ("annual report of the society", body, 30),
            ("medieval trade routes of the baltic", body, 2),
            ("a survey of hospital pharmacy", other, 1),
        ]);
        let (mut signatures, mut sketches) = (held.0.clone(), held.1.clone());
        signatures.extend(&new.0);
        sketches.extend(new.1.clone());
        let offset = held.0.len() as u32;
        let expected: Vec<(u32, u32)> = proposed_pairs(&signatures, &sketches, &settings)
            .into_iter()
            .filter(|&(x, y)| x < offset && y >= offset)
            .map(|(x, y)| (x, y - offset))
            .collect();
        assert!(expected.contains(&(0, 0)), "{expected:?}");
        assert!(expected.contains(&(32, 33)), "{expected:?}");
        let banded = crate::sketch::candidate_pairs(&signatures, settings.banding());
        assert!(!banded.contains(&(32, offset + 33)), "{banded:?}");
        let between = proposed_pairs_between((&held.0, &held.1), (&new.0, &new.1), &settings);
        assert_eq!(between, expected);
    }

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
            sketches.push(4, Facts::of(Some(title), "a body").as_ref());
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
            sketches.push(4, facts.as_ref());
        }
        assert!(same_title_pairs(&sketches, SAME_TITLE_LIMIT + 1).is_empty());
    }
}
