//! The exact set methods: `jaccard` (pairs at or above the threshold) and `resemblance`
//! (pairs above it), both through the prefix-filtered join.

use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::Pair;
use super::dedup::Found;
use crate::error::Result;
use crate::group::Linkage;
use crate::io::{Input, ReadOptions, read_corpus};
use crate::output::run::StageTimes;
use crate::similarity::SetJoin;
use crate::text::{ShinglingSpec, UNIGRAMS};

/// Settings of the `jaccard` method.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JaccardConfig {
    /// Shingles (word sets by default).
    #[serde(flatten)]
    pub shingling: ShinglingSpec,
    /// Jaccard similarity a pair must reach.
    pub threshold: f64,
    /// How pairs become groups.
    pub linkage: Linkage,
}

impl JaccardConfig {
    /// Checks the shingling.
    pub fn validate(&self) -> Result<()> {
        self.shingling.validate()
    }
}

/// Settings of the `resemblance` method: Text::DeDuper's measure and defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResemblanceConfig {
    /// Shingles (word 5-grams unless told).
    #[serde(flatten)]
    pub shingling: ShinglingSpec,
    /// Resemblance a pair must exceed.
    pub threshold: f64,
    /// How pairs become groups.
    pub linkage: Linkage,
}

impl ResemblanceConfig {
    /// Checks the shingling.
    pub fn validate(&self) -> Result<()> {
        self.shingling.validate()
    }
}

/// Finds the pairs whose exact similarity reaches `threshold` (or exceeds it, when
/// `strictly_above`: resemblance), with the prefix-filtered join.
pub(super) fn run(
    inputs: &[Input],
    read: &ReadOptions,
    shingling: &ShinglingSpec,
    threshold: f64,
    strictly_above: bool,
) -> Result<Found> {
    let default_ngram = if strictly_above {
        crate::similarity::RESEMBLANCE_NGRAM
    } else {
        UNIGRAMS
    };
    let shingler = shingling.shingler(default_ngram)?;
    let mut times = StageTimes::default();

    let clock = Instant::now();
    let mut sets = Vec::new();
    let corpus = read_corpus(
        inputs,
        read,
        |record| shingler.shingle_set(&record.text),
        |set| sets.push(set),
    )?;
    times.sketch = clock.elapsed().as_secs_f64();

    let clock = Instant::now();
    let join = SetJoin::new(&sets);
    drop(sets);
    // A join threshold of 0 would pair everything; resemblance "above 0" means sharing one
    // shingle, which the smallest positive threshold finds.
    let floor = threshold.max(f64::MIN_POSITIVE);
    let found = join.pairs(floor);
    times.candidates = clock.elapsed().as_secs_f64();

    let clock = Instant::now();
    let candidates = found.len();
    let pairs: Vec<Pair> = found
        .into_iter()
        .filter(|&(_, _, score)| !strictly_above || score > threshold)
        .map(|(a, b, score)| Pair {
            a,
            b,
            score,
            cosine: None,
        })
        .collect();
    times.confirm = clock.elapsed().as_secs_f64();

    Ok(Found {
        corpus,
        candidates,
        scored_candidates: None,
        pairs,
        similarity: Arc::new(move |x, y| join.similarity(x as usize, y as usize)),
        probes: None,
        cells: None,
        collection: 0,
        model: None,
        times,
    })
}
