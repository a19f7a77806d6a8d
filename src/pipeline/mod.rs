//! Deduplication end to end: read, sketch, find candidate pairs, confirm, group, write.
//!
//! A [`Method`] turns a corpus into confirmed [`Pair`]s with a score; everything after that
//! (groups under a [`Linkage`], representatives, the output files) is shared by all methods:
//! - `minhash`: MinHash signatures, LSH banding tuned to the threshold, candidates confirmed by
//!   the Jaccard estimate ([`Confirm::Estimate`]) or the band collision alone
//!   ([`Confirm::Band`], datasketch's `MinHashLSH.query`);
//! - `jaccard`: exact Jaccard of the shingle sets, candidates from a prefix-filtered inverted
//!   index (never all pairs);
//! - `resemblance`: the same exact join over word 5-grams, keeping pairs whose resemblance
//!   exceeds the threshold (Text::DeDuper's measure and defaults);
//! - `simhash`: 64-bit SimHash fingerprints within a Hamming distance, found exactly through
//!   block tables or by probing the likeliest bit flips;
//! - `two-stage` (the default): document embeddings in a Qdrant cosine index propose each
//!   document's top-k neighbours, and the MinHash classifier confirms them.

mod corpus;
mod exact;
mod minhash;
mod output;
mod simhash;
mod spec;
mod two_stage;

pub use corpus::{Corpus, ReadOptions, SkipReport, for_each_chunk, read_corpus, sketch};
pub use output::{RunSummary, write_results};
pub use spec::{
    DEFAULT_MIN_COSINE, DEFAULT_TOP_K, EvalSpec, InputSpec, MethodName, MethodSpec, OutputSpec,
    PipelineSpec,
};
pub use two_stage::{BuiltIndex, build_index};

use std::path::PathBuf;
use std::time::Instant;

use crate::error::{Error, Result};
use crate::group::{Group, Linkage, linked_groups};
use crate::index::IndexSettings;
use crate::io::Input;
use crate::sketch::LshParams;
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

/// What a shingle is and which words are ignored: shared by every method.
#[derive(Clone, Debug)]
pub struct Shingling {
    /// Word or character n-grams.
    pub kind: ShingleKind,
    /// Words removed first.
    pub stoplist: Stoplist,
}

impl Shingling {
    fn shingler(&self) -> Shingler {
        Shingler::new(self.kind, self.stoplist.clone())
    }

    fn validate(&self) -> Result<()> {
        match self.kind {
            ShingleKind::Words(0) | ShingleKind::Chars(0) => {
                Err(Error::Usage("the n-gram size must be at least 1".into()))
            }
            _ => Ok(()),
        }
    }
}

/// Settings of the MinHash method.
#[derive(Clone, Debug)]
pub struct MinHashConfig {
    /// Shingles.
    pub shingling: Shingling,
    /// Signature length.
    pub num_perm: usize,
    /// Seed of the permutations.
    pub seed: u64,
    /// Jaccard threshold for a duplicate.
    pub threshold: f64,
    /// How candidates are confirmed.
    pub confirm: Confirm,
    /// LSH banding; `None`: chosen for the threshold by datasketch's rule.
    pub banding: Option<LshParams>,
    /// How pairs become groups.
    pub linkage: Linkage,
}

impl MinHashConfig {
    /// The banding in use: the one given, or the optimum for the threshold.
    pub fn lsh_params(&self) -> LshParams {
        self.banding
            .unwrap_or_else(|| LshParams::optimal(self.threshold, self.num_perm))
    }
}

impl Default for MinHashConfig {
    /// Word 1-grams, 128 permutations, threshold 0.7, confirmed by the estimate, single linkage.
    fn default() -> Self {
        MinHashConfig {
            shingling: Shingling {
                kind: ShingleKind::Words(1),
                stoplist: Stoplist::default(),
            },
            num_perm: 128,
            seed: 1,
            threshold: 0.7,
            confirm: Confirm::Estimate,
            banding: None,
            linkage: Linkage::Single,
        }
    }
}

/// Settings of the exact set methods (`jaccard`, `resemblance`).
#[derive(Clone, Debug)]
pub struct SetConfig {
    /// Shingles.
    pub shingling: Shingling,
    /// Similarity a pair must reach (`jaccard`) or exceed (`resemblance`).
    pub threshold: f64,
    /// How pairs become groups.
    pub linkage: Linkage,
}

/// Settings of the SimHash method.
#[derive(Clone, Debug)]
pub struct SimHashConfig {
    /// Features.
    pub shingling: Shingling,
    /// Largest Hamming distance of a duplicate.
    pub max_distance: u32,
    /// Probe at most this many flip sets per document instead of the exact block search.
    pub probes: Option<usize>,
    /// How pairs become groups.
    pub linkage: Linkage,
}

/// Settings of the two-stage method.
#[derive(Clone, Debug)]
pub struct TwoStageConfig {
    /// Embedder, vector store and MinHash confirmation.
    pub index: IndexSettings,
    /// Neighbours per document taken as candidates.
    pub top_k: usize,
    /// Keep the index in this folder (for `neardup query`); a temporary one otherwise.
    pub index_dir: Option<PathBuf>,
}

/// A deduplication method with its checked settings.
#[derive(Clone, Debug)]
pub enum Method {
    /// MinHash + LSH.
    MinHash(MinHashConfig),
    /// Exact Jaccard.
    Jaccard(SetConfig),
    /// Exact n-gram resemblance.
    Resemblance(SetConfig),
    /// SimHash + Hamming distance.
    SimHash(SimHashConfig),
    /// Embeddings + vector index top-k, confirmed by MinHash.
    TwoStage(TwoStageConfig),
}

fn check_threshold(threshold: f64) -> Result<()> {
    if threshold > 0.0 && threshold <= 1.0 {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "--threshold {threshold} is outside (0, 1]"
        )))
    }
}

fn check_minhash(num_perm: usize, banding: Option<LshParams>) -> Result<()> {
    if num_perm == 0 {
        return Err(Error::Usage("--num-perm must be at least 1".into()));
    }
    match banding {
        Some(p) if p.bands == 0 || p.rows == 0 || p.bands * p.rows > num_perm => {
            Err(Error::Usage(format!(
                "--bands {} x --rows {} must be at least 1 each and fit in --num-perm {num_perm}",
                p.bands, p.rows
            )))
        }
        _ => Ok(()),
    }
}

impl Method {
    /// Checks the settings, naming the one that is off.
    pub fn validate(&self) -> Result<()> {
        match self {
            Method::MinHash(c) => {
                c.shingling.validate()?;
                check_threshold(c.threshold)?;
                check_minhash(c.num_perm, c.banding)
            }
            Method::Jaccard(c) => {
                c.shingling.validate()?;
                check_threshold(c.threshold)
            }
            Method::Resemblance(c) => {
                c.shingling.validate()?;
                if (0.0..1.0).contains(&c.threshold) {
                    Ok(())
                } else {
                    Err(Error::Usage(format!(
                        "--threshold {} is outside [0, 1): resemblance must exceed it",
                        c.threshold
                    )))
                }
            }
            Method::SimHash(c) => {
                c.shingling.validate()?;
                if c.max_distance >= 64 {
                    return Err(Error::Usage("--max-distance must be below 64".into()));
                }
                if c.probes == Some(0) {
                    return Err(Error::Usage("--probes must be at least 1".into()));
                }
                Ok(())
            }
            Method::TwoStage(c) => {
                let i = &c.index;
                i.minhash.shingling.validate()?;
                check_threshold(i.minhash.threshold)?;
                check_minhash(i.minhash.num_perm, i.minhash.banding)?;
                if c.top_k == 0 {
                    return Err(Error::Usage("--top-k must be at least 1".into()));
                }
                if !(-1.0..=1.0).contains(&i.min_cosine) {
                    return Err(Error::Usage(format!(
                        "--min-cosine {} is outside [-1, 1]",
                        i.min_cosine
                    )));
                }
                Ok(())
            }
        }
    }

    /// The score a pair must reach to be confirmed, on the scale of [`Method::score_name`]
    /// (SimHash: `1 − max_distance/64`; MinHash with band confirmation: its threshold).
    pub fn threshold(&self) -> f64 {
        match self {
            Method::MinHash(c) => c.threshold,
            Method::Jaccard(c) | Method::Resemblance(c) => c.threshold,
            Method::SimHash(c) => 1.0 - f64::from(c.max_distance) / 64.0,
            Method::TwoStage(c) => c.index.minhash.threshold,
        }
    }

    /// How pairs become groups.
    pub fn linkage(&self) -> Linkage {
        match self {
            Method::MinHash(c) => c.linkage,
            Method::Jaccard(c) | Method::Resemblance(c) => c.linkage,
            Method::SimHash(c) => c.linkage,
            Method::TwoStage(c) => c.index.minhash.linkage,
        }
    }

    /// The name of the score written for each pair.
    pub fn score_name(&self) -> &'static str {
        match self {
            Method::MinHash(_) | Method::TwoStage(_) => "jaccard_estimate",
            Method::Jaccard(_) => "jaccard",
            Method::Resemblance(_) => "resemblance",
            Method::SimHash(_) => "simhash_similarity",
        }
    }
}

/// A confirmed duplicate pair (document indices, `a < b`) and its score in `[0, 1]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    /// First document.
    pub a: u32,
    /// Second document.
    pub b: u32,
    /// The method's similarity (see [`Method::score_name`]).
    pub score: f64,
    /// Cosine of the two documents' embeddings, where the method has them (two-stage).
    pub cosine: Option<f32>,
}

/// Seconds spent in each stage.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct StageTimes {
    /// Reading, parsing, shingling and sketching.
    pub sketch: f64,
    /// Embedding (two-stage).
    #[serde(skip_serializing_if = "is_zero")]
    pub embed: f64,
    /// Adding vectors to the store (two-stage).
    #[serde(skip_serializing_if = "is_zero")]
    pub upsert: f64,
    /// Building the store's search graph (two-stage).
    #[serde(skip_serializing_if = "is_zero")]
    pub index: f64,
    /// Searching every document's neighbours (two-stage).
    #[serde(skip_serializing_if = "is_zero")]
    pub search: f64,
    /// Finding candidate pairs.
    pub candidates: f64,
    /// Confirming candidates.
    pub confirm: f64,
    /// Building groups and choosing representatives.
    pub group: f64,
}

fn is_zero(seconds: &f64) -> bool {
    *seconds == 0.0
}

/// The outcome of a deduplication run, before it is written.
pub struct Dedup {
    /// The documents read.
    pub corpus: Corpus,
    /// Number of candidate pairs considered.
    pub candidates: usize,
    /// Every candidate with its score, where the method scores more pairs than it confirms
    /// (MinHash: all LSH collisions), for threshold sweeps.
    pub scored_candidates: Option<Vec<Pair>>,
    /// Confirmed pairs.
    pub pairs: Vec<Pair>,
    /// What a pair's score is.
    pub score_name: &'static str,
    /// The score a pair had to reach.
    pub threshold: f64,
    /// Duplicate groups.
    pub groups: Vec<Group>,
    /// Probes spent by SimHash's probing search, if used.
    pub probes: Option<usize>,
    /// Where the time went.
    pub times: StageTimes,
}

/// What a method found: its confirmed pairs, and the similarity the shared grouping step
/// chooses representatives by (owning whatever sketches it needs).
struct Found {
    corpus: Corpus,
    candidates: usize,
    scored_candidates: Option<Vec<Pair>>,
    pairs: Vec<Pair>,
    similarity: Box<dyn Fn(u32, u32) -> f64 + Sync>,
    probes: Option<usize>,
    times: StageTimes,
}

/// Runs `method` over `inputs`.
pub fn dedup(inputs: &[Input], read: &ReadOptions, method: &Method) -> Result<Dedup> {
    method.validate()?;
    let mut found = match method {
        Method::MinHash(c) => minhash::run(inputs, read, c)?,
        Method::Jaccard(c) => exact::run(inputs, read, c, false)?,
        Method::Resemblance(c) => exact::run(inputs, read, c, true)?,
        Method::SimHash(c) => simhash::run(inputs, read, c)?,
        Method::TwoStage(c) => two_stage::run(inputs, read, c)?,
    };
    let clock = Instant::now();
    let edges: Vec<(u32, u32)> = found.pairs.iter().map(|p| (p.a, p.b)).collect();
    let groups = linked_groups(
        &found.corpus.ids,
        &edges,
        method.linkage(),
        &found.similarity,
    );
    found.times.group = clock.elapsed().as_secs_f64();
    Ok(Dedup {
        corpus: found.corpus,
        candidates: found.candidates,
        scored_candidates: found.scored_candidates,
        pairs: found.pairs,
        score_name: method.score_name(),
        threshold: method.threshold(),
        groups,
        probes: found.probes,
        times: found.times,
    })
}

/// Runs the MinHash method (shorthand for [`dedup`] with [`Method::MinHash`]).
pub fn minhash_dedup(
    inputs: &[Input],
    read: &ReadOptions,
    config: &MinHashConfig,
) -> Result<Dedup> {
    dedup(inputs, read, &Method::MinHash(config.clone()))
}
