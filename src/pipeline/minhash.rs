//! The MinHash method: signatures, LSH banding, confirmation.

use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use super::{Found, ScoredPairs, StageTimes};
use crate::confirm::{Confirm, ConfirmSettings, Confirmer, SketchFacts};
use crate::error::Result;
use crate::group::Linkage;
use crate::io::{Corpus, Input, ReadOptions, read_corpus};
use crate::sketch::{Signatures, candidate_pairs};

/// Settings of the MinHash method.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MinHashConfig {
    /// Shingles, signatures and the rule that confirms a candidate.
    #[serde(flatten)]
    pub confirm: ConfirmSettings,
    /// How pairs become groups.
    pub linkage: Linkage,
}

impl MinHashConfig {
    /// Checks every part.
    pub fn validate(&self) -> Result<()> {
        self.confirm.validate()
    }
}

pub(super) fn run(inputs: &[Input], read: &ReadOptions, config: &MinHashConfig) -> Result<Found> {
    // No embeddings here, so no cosine floor.
    let confirmer = Confirmer::new(&config.confirm, -1.0)?;
    let mut times = StageTimes::default();

    let clock = Instant::now();
    let (corpus, signatures, sketches) = sketch(inputs, read, &confirmer)?;
    times.sketch = clock.elapsed().as_secs_f64();
    tracing::info!(
        documents = corpus.ids.len(),
        seconds = times.sketch,
        "sketched"
    );

    let clock = Instant::now();
    let banding = confirmer.banding();
    let candidates = proposed_pairs(&signatures, &sketches, &config.confirm);
    times.candidates = clock.elapsed().as_secs_f64();
    tracing::info!(
        bands = banding.bands,
        rows = banding.rows,
        candidates = candidates.len(),
        "banded"
    );

    let clock = Instant::now();
    let (scores, duplicate): (Vec<f64>, Vec<bool>) = candidates
        .par_iter()
        .enumerate()
        .map(|(i, &(a, b))| {
            sketches.prefetch_ahead(&signatures, i, |j| candidates.get(j).copied());
            let (x, y) = (a as usize, b as usize);
            confirmer.judge(sketches.get(&signatures, x), sketches.get(&signatures, y))
        })
        .unzip();
    let scored = ScoredPairs::without_cosines(&candidates, scores);
    let pairs = scored.selected(&duplicate);
    times.confirm = clock.elapsed().as_secs_f64();
    tracing::info!(pairs = pairs.len(), "confirmed");

    Ok(Found {
        corpus,
        candidates: candidates.len(),
        scored_candidates: Some(scored),
        pairs,
        similarity: Box::new(move |x, y| signatures.similarity(x as usize, y as usize)),
        probes: None,
        times,
    })
}

/// The pairs `(a, b)`, `a < b`, that MinHash proposes: those that share a band of their
/// signatures and, under the evidence rule, those whose titles have the same words.
pub(super) fn proposed_pairs(
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

/// Titles need this many distinct words (notes removed) to propose their records.
const SAME_TITLE_WORDS: usize = 4;
/// More records than this under one title are a common title, not copies of one record.
const SAME_TITLE_LIMIT: usize = 50;

/// Pairs of documents whose titles (notes removed, at least [`SAME_TITLE_WORDS`] words) have
/// the same words: the copies LSH misses because one body is truncated or missing, so their
/// whole-text Jaccard is low; the rule then weighs them like any candidate.
fn same_title_pairs(sketches: &SketchFacts, documents: usize) -> Vec<(u32, u32)> {
    // Sorted by a hash of the title's words: one integer comparison instead of a slice's.
    let mut titled: Vec<(u64, u32)> = (0..documents)
        .filter_map(|doc| {
            let title = sketches.facts(doc).title.as_deref()?;
            let bytes: Vec<u8> = title.iter().flat_map(|w| w.to_le_bytes()).collect();
            (title.len() >= SAME_TITLE_WORDS).then(|| (xxh3_64(&bytes), doc as u32))
        })
        .collect();
    titled.sort_unstable();
    let mut pairs = Vec::new();
    for block in titled.chunk_by(|x, y| x.0 == y.0) {
        if block.len() > SAME_TITLE_LIMIT {
            continue;
        }
        for (i, &(_, x)) in block.iter().enumerate() {
            pairs.extend(block[i + 1..].iter().map(|&(_, y)| (x, y)));
        }
    }
    pairs
}

/// Reads every input and signs every document, keeping the facts the evidence rule needs.
fn sketch(
    inputs: &[Input],
    options: &ReadOptions,
    confirmer: &Confirmer,
) -> Result<(Corpus, Signatures, SketchFacts)> {
    let mut signatures = Signatures::new(confirmer.num_perm());
    let mut sketches = SketchFacts::default();
    let corpus = read_corpus(
        inputs,
        options,
        |record| confirmer.sign(record),
        |sketch| {
            signatures.push(&sketch.signature, sketch.shingles == 0);
            sketches.push(sketch.shingles, sketch.facts);
        },
    )?;
    Ok((corpus, signatures, sketches))
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
