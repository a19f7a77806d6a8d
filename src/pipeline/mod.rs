//! Deduplication end to end: read, sketch, find candidate pairs, confirm, group, write.
//!
//! A method turns a corpus into confirmed [`Pair`]s; everything after that (groups,
//! representatives, the three output files) is shared by all methods. The MinHash method:
//! 1. each document's shingle set is signed with a [`MinHasher`];
//! 2. LSH banding tuned to the threshold proposes candidate pairs;
//! 3. a candidate is confirmed when its signatures' Jaccard estimate reaches the threshold
//!    ([`Confirm::Estimate`], the default) or simply because it collided in a band
//!    ([`Confirm::Band`], datasketch's `MinHashLSH.query` behaviour);
//! 4. confirmed pairs become connected groups, each with a representative.

mod corpus;
mod output;
mod spec;

pub use corpus::{Corpus, ReadOptions, SkipReport, for_each_chunk, sketch};
pub use output::{RunSummary, write_results};
pub use spec::{EvalSpec, InputSpec, MethodSpec, MinHashSpec, OutputSpec, PipelineSpec};

use std::time::Instant;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::group::{Group, connected_groups};
use crate::io::Input;
use crate::sketch::{LshParams, MinHasher, candidate_pairs};
use crate::text::{ShingleKind, Shingler, Stoplist};

/// How MinHash candidates are confirmed.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Confirm {
    /// The signatures' Jaccard estimate must reach the threshold.
    Estimate,
    /// Sharing one LSH band is enough.
    Band,
}

/// Settings of the MinHash method.
#[derive(Clone, Debug)]
pub struct MinHashConfig {
    /// What a shingle is.
    pub shingle: ShingleKind,
    /// Words removed before shingling.
    pub stoplist: Stoplist,
    /// Signature length.
    pub num_perm: usize,
    /// Seed of the permutations.
    pub seed: u64,
    /// Jaccard threshold for a duplicate.
    pub threshold: f64,
    /// How candidates are confirmed.
    pub confirm: Confirm,
}

impl Default for MinHashConfig {
    /// Word 1-grams, 128 permutations, threshold 0.7, confirmed by the estimate.
    fn default() -> Self {
        MinHashConfig {
            shingle: ShingleKind::Words(1),
            stoplist: Stoplist::default(),
            num_perm: 128,
            seed: 1,
            threshold: 0.7,
            confirm: Confirm::Estimate,
        }
    }
}

impl MinHashConfig {
    /// Checks the settings, naming the one that is off.
    pub fn validate(&self) -> Result<()> {
        if !(0.0..=1.0).contains(&self.threshold) {
            return Err(Error::Usage(format!(
                "--threshold {} is outside [0, 1]",
                self.threshold
            )));
        }
        if self.num_perm == 0 {
            return Err(Error::Usage("--num-perm must be at least 1".into()));
        }
        match self.shingle {
            ShingleKind::Words(0) | ShingleKind::Chars(0) => {
                Err(Error::Usage("the n-gram size must be at least 1".into()))
            }
            _ => Ok(()),
        }
    }
}

/// A confirmed duplicate pair (document indices, `a < b`) and its Jaccard estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    /// First document.
    pub a: u32,
    /// Second document.
    pub b: u32,
    /// Estimated Jaccard similarity of their shingle sets.
    pub jaccard: f64,
}

/// Seconds spent in each stage.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct StageTimes {
    /// Reading, parsing, shingling and signing.
    pub sketch: f64,
    /// LSH banding.
    pub candidates: f64,
    /// Confirming candidates.
    pub confirm: f64,
    /// Building groups and choosing representatives.
    pub group: f64,
}

/// The outcome of a deduplication run, before it is written.
pub struct Dedup {
    /// The sketched corpus.
    pub corpus: Corpus,
    /// Number of candidate pairs considered.
    pub candidates: usize,
    /// Confirmed pairs.
    pub pairs: Vec<Pair>,
    /// Duplicate groups.
    pub groups: Vec<Group>,
    /// Where the time went.
    pub times: StageTimes,
}

/// Runs the MinHash method over `inputs`.
pub fn minhash_dedup(
    inputs: &[Input],
    read: &ReadOptions,
    config: &MinHashConfig,
) -> Result<Dedup> {
    config.validate()?;
    let shingler = Shingler::new(config.shingle, config.stoplist.clone());
    let hasher = MinHasher::new(config.num_perm, config.seed);
    let mut times = StageTimes::default();

    let clock = Instant::now();
    let corpus = sketch(inputs, read, &shingler, &hasher)?;
    times.sketch = clock.elapsed().as_secs_f64();
    tracing::info!(
        documents = corpus.ids.len(),
        seconds = times.sketch,
        "sketched"
    );

    let clock = Instant::now();
    let params = LshParams::optimal(config.threshold, config.num_perm);
    let candidates = candidate_pairs(&corpus.signatures, params);
    times.candidates = clock.elapsed().as_secs_f64();
    tracing::info!(
        bands = params.bands,
        rows = params.rows,
        candidates = candidates.len(),
        "banded"
    );

    let clock = Instant::now();
    let signatures = &corpus.signatures;
    let pairs: Vec<Pair> = candidates
        .par_iter()
        .filter_map(|&(a, b)| {
            let jaccard = signatures.similarity(a as usize, b as usize);
            let confirmed = match config.confirm {
                Confirm::Estimate => jaccard >= config.threshold,
                Confirm::Band => true,
            };
            confirmed.then_some(Pair { a, b, jaccard })
        })
        .collect();
    times.confirm = clock.elapsed().as_secs_f64();
    tracing::info!(pairs = pairs.len(), "confirmed");

    let clock = Instant::now();
    let edges: Vec<(u32, u32)> = pairs.iter().map(|p| (p.a, p.b)).collect();
    let groups = connected_groups(&corpus.ids, &edges, |x, y| {
        signatures.similarity(x as usize, y as usize)
    });
    times.group = clock.elapsed().as_secs_f64();

    Ok(Dedup {
        corpus,
        candidates: candidates.len(),
        pairs,
        groups,
        times,
    })
}
