//! The SimHash method: fingerprints within a Hamming distance.

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::Pair;
use super::dedup::Found;
use crate::error::Result;
use crate::group::Linkage;
use crate::io::{Input, ReadOptions, read_corpus};
use crate::output::run::StageTimes;
use crate::sketch::{SimHash, SimHashIndex, hamming};
use crate::text::{ShinglingSpec, UNIGRAMS};

/// Settings of the SimHash method.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimHashConfig {
    /// Features (distinct shingles, each of weight 1).
    #[serde(flatten)]
    pub shingling: ShinglingSpec,
    /// Largest Hamming distance of a duplicate.
    pub max_distance: u32,
    /// Probe this many likeliest bit-flip sets per document instead of the exact search.
    pub probes: Option<NonZeroUsize>,
    /// How pairs become groups.
    pub linkage: Linkage,
}

impl SimHashConfig {
    /// Checks the shingling.
    pub fn validate(&self) -> Result<()> {
        self.shingling.validate()
    }
}

/// How far a bit's vote is assumed to move under an edit, relative to its spread over the
/// corpus (the seed notebook's `alpha`: about a tenth of the words added or removed).
const EDIT_ALPHA: f64 = 0.1;

pub(super) fn run(inputs: &[Input], read: &ReadOptions, config: &SimHashConfig) -> Result<Found> {
    let shingler = config.shingling.shingler(UNIGRAMS)?;
    let mut times = StageTimes::default();

    let clock = Instant::now();
    let (mut fingerprints, mut empty, mut votes) = (Vec::new(), Vec::new(), Vec::new());
    let corpus = read_corpus(
        inputs,
        read,
        |record| {
            // Distinct shingles, each of weight 1: with term-frequency weights the most common
            // words decide most bits of every document, and unrelated documents collide (on
            // 20,000 generated documents: 1,287,665 pairs within distance 3, against 6,138
            // with distinct features).
            let features = shingler.shingle_set(&record.text);
            (SimHash::of(&features), features.is_empty())
        },
        |(hash, is_empty)| {
            fingerprints.push(hash.fingerprint);
            empty.push(is_empty);
            if config.probes.is_some() {
                votes.push(hash.votes);
            }
        },
    )?;
    times.sketch = clock.elapsed().as_secs_f64();

    let clock = Instant::now();
    let index = SimHashIndex::new(fingerprints.clone(), empty, config.max_distance);
    let (found, probes) = match config.probes {
        Some(max) => {
            let (pairs, probes) = index.probe_pairs(&votes, EDIT_ALPHA, max.get());
            (pairs, Some(probes))
        }
        None => (index.pairs(), None),
    };
    times.candidates = clock.elapsed().as_secs_f64();
    if let Some(p) = probes {
        tracing::info!(
            probes = p,
            per_document = p as f64 / corpus.ids.len().max(1) as f64,
            "probed"
        );
    }

    let similarity = |d: u32| 1.0 - f64::from(d) / 64.0;
    let candidates = found.len();
    let pairs: Vec<Pair> = found
        .into_iter()
        .map(|(a, b, d)| Pair {
            a,
            b,
            score: similarity(d),
            cosine: None,
        })
        .collect();

    Ok(Found {
        corpus,
        candidates,
        scored_candidates: None,
        pairs,
        similarity: Arc::new(move |x, y| {
            similarity(hamming(fingerprints[x as usize], fingerprints[y as usize]))
        }),
        probes,
        cells: None,
        collection: 0,
        model: None,
        times,
    })
}
