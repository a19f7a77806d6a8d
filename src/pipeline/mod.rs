//! Deduplication end to end: read, sketch, find candidate pairs, confirm, group, write.
//!
//! A [`Method`] turns a corpus into confirmed [`Pair`]s with a score; everything after that
//! (groups under a [`Linkage`], representatives, the output files) is shared by all methods:
//! - `minhash`: MinHash signatures, LSH banding tuned to the threshold, candidates confirmed by
//!   the Jaccard estimate ([`Confirm::Estimate`](crate::confirm::Confirm::Estimate)) or the band collision alone
//!   ([`Confirm::Band`](crate::confirm::Confirm::Band), datasketch's `MinHashLSH.query`);
//! - `jaccard`: exact Jaccard of the shingle sets, candidates from a prefix-filtered inverted
//!   index (never all pairs);
//! - `resemblance`: the same exact join over word 5-grams, keeping pairs whose resemblance
//!   exceeds the threshold (Text::DeDuper's measure and defaults);
//! - `simhash`: 64-bit SimHash fingerprints within a Hamming distance, found exactly through
//!   block tables or by probing the likeliest bit flips;
//! - `two-stage` (the default): document embeddings in a Qdrant cosine index propose each
//!   document's top-k neighbours, and the MinHash classifier confirms them.

mod exact;
mod labels;
mod merge;
mod minhash;
mod output;
mod part;
mod rethreshold;
mod simhash;
mod spec;
mod stages;
mod train;
mod two_stage;

pub use exact::{JaccardConfig, ResemblanceConfig};
pub use labels::{Labelling, PairLabels};
pub use merge::{Merged, merge};
pub use merge::{advance, check_out, learn_cells};
pub use minhash::MinHashConfig;
pub use output::{Fates, kept_members, run_summary, write_results};
pub use part::Part;
pub use rethreshold::rethreshold;
pub use simhash::SimHashConfig;
pub use spec::{EvalSpec, InputSpec, OutputSpec, PipelineSpec};
pub use stages::{Signed, sign_part};
pub use train::{Candidates, LabelledPairs, TrainingData, train};
pub use two_stage::{BuiltIndex, Embedded, TwoStageConfig, build_index, embed_part};

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::confirm::{Rule, Standing};
use crate::embed::ModelIdentity;
use crate::error::Result;
use crate::group::{Group, KeepPolicy, Linkage, linked_groups};
use crate::index::Collection;
use crate::io::{Corpus, FolderLock, Input, ReadOptions};
use crate::output::run::StageTimes;
use crate::settings::{MethodName, SettingError};

/// One method's settings as their own type ([`Method::config`]).
pub trait MethodConfig: serde::de::DeserializeOwned + Serialize {
    /// The method these settings are for.
    const NAME: MethodName;

    /// Checks the settings, naming the one that is off.
    fn validate(&self) -> Result<()>;
}

macro_rules! method_configs {
    ($($config:ty => $name:ident),* $(,)?) => {
        $(impl MethodConfig for $config {
            const NAME: MethodName = MethodName::$name;

            fn validate(&self) -> Result<()> {
                <$config>::validate(self)
            }
        })*
    };
}

method_configs!(
    MinHashConfig => Minhash,
    JaccardConfig => Jaccard,
    ResemblanceConfig => Resemblance,
    SimHashConfig => Simhash,
    TwoStageConfig => TwoStage,
);

/// A deduplication method with its settings. Each method's settings are one type, in the
/// method's own file, with the checks that involve several settings (each setting's default
/// and range are declared in [`crate::settings::SETTINGS`]); pipeline files, command-line flags,
/// `summary.json` and index manifests all go through these types.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case")]
pub enum Method {
    /// MinHash + LSH.
    #[serde(rename = "minhash")]
    MinHash(MinHashConfig),
    /// Exact Jaccard.
    Jaccard(JaccardConfig),
    /// Exact n-gram resemblance.
    Resemblance(ResemblanceConfig),
    /// SimHash + Hamming distance.
    #[serde(rename = "simhash")]
    SimHash(SimHashConfig),
    /// Embeddings + vector index top-k, confirmed by MinHash.
    TwoStage(Box<TwoStageConfig>),
}

impl Method {
    /// The method `name` with every setting at its default.
    pub fn defaults(name: MethodName) -> Method {
        Method::from_settings(name, Map::new()).expect("every method has defaults")
    }

    /// The method `name` with `settings` (keys as in a pipeline file), checked. An error names
    /// the key at fault; a key of another method says which methods it belongs to.
    pub fn from_settings(
        name: MethodName,
        settings: Map<String, Value>,
    ) -> Result<Method, SettingError> {
        Ok(match name {
            MethodName::Minhash => Method::MinHash(Self::config(settings)?),
            MethodName::Jaccard => Method::Jaccard(Self::config(settings)?),
            MethodName::Resemblance => Method::Resemblance(Self::config(settings)?),
            MethodName::Simhash => Method::SimHash(Self::config(settings)?),
            MethodName::TwoStage => Method::TwoStage(Box::new(Self::config(settings)?)),
        })
    }

    /// The settings of the method `T` is for, from `settings`, checked as
    /// [`Method::from_settings`] checks them: for a command that runs one method only.
    pub fn config<T: MethodConfig>(settings: Map<String, Value>) -> Result<T, SettingError> {
        let config: T = crate::settings::read(T::NAME, &settings)?;
        config.validate().map_err(|e| match e {
            crate::error::Error::Setting { key, message } => SettingError {
                key: Some(key.to_owned()),
                message,
            },
            e => SettingError {
                key: None,
                message: e.to_string(),
            },
        })?;
        Ok(config)
    }

    /// The method's name as a user writes it.
    pub fn name(&self) -> MethodName {
        match self {
            Method::MinHash(_) => MethodName::Minhash,
            Method::Jaccard(_) => MethodName::Jaccard,
            Method::Resemblance(_) => MethodName::Resemblance,
            Method::SimHash(_) => MethodName::Simhash,
            Method::TwoStage(_) => MethodName::TwoStage,
        }
    }

    /// Checks the settings, naming the one that is off.
    pub fn validate(&self) -> Result<()> {
        match self {
            Method::MinHash(c) => c.validate(),
            Method::Jaccard(c) => c.validate(),
            Method::Resemblance(c) => c.validate(),
            Method::SimHash(c) => c.validate(),
            Method::TwoStage(c) => c.validate(),
        }
    }

    /// The part of a split run this method's settings name, if any.
    pub fn part(&self) -> Option<Part> {
        match self {
            Method::MinHash(c) => c.part,
            Method::TwoStage(c) => c.part,
            _ => None,
        }
    }

    /// Names `part` (a method that splits) or none.
    pub fn set_part(&mut self, part: Option<Part>) {
        match self {
            Method::MinHash(c) => c.part = part,
            Method::TwoStage(c) => c.part = part,
            _ => debug_assert!(part.is_none(), "only MinHash and two-stage split"),
        }
    }

    /// The score a pair must reach to be confirmed, on the scale of [`Method::score_name`]
    /// (SimHash: `1 − max_distance/64`; MinHash with band confirmation: its threshold).
    pub fn threshold(&self) -> f64 {
        match self {
            Method::MinHash(c) => c.confirm.rule.threshold,
            Method::Jaccard(c) => c.threshold,
            Method::Resemblance(c) => c.threshold,
            Method::SimHash(c) => 1.0 - f64::from(c.max_distance) / 64.0,
            Method::TwoStage(c) => c.settings.confirm.rule.threshold,
        }
    }

    /// This method with `threshold` as [`Method::threshold`] gives it (SimHash: the largest
    /// Hamming distance whose similarity reaches it).
    pub fn with_threshold(&self, threshold: f64) -> Method {
        let mut method = self.clone();
        match &mut method {
            Method::MinHash(c) => c.confirm.rule.threshold = threshold,
            Method::Jaccard(c) => c.threshold = threshold,
            Method::Resemblance(c) => c.threshold = threshold,
            Method::SimHash(c) => c.max_distance = ((1.0 - threshold) * 64.0 + 1e-9).floor() as u32,
            Method::TwoStage(c) => c.settings.confirm.rule.threshold = threshold,
        }
        method
    }

    /// How pairs become groups.
    pub fn linkage(&self) -> Linkage {
        match self {
            Method::MinHash(c) => c.linkage,
            Method::Jaccard(c) => c.linkage,
            Method::Resemblance(c) => c.linkage,
            Method::SimHash(c) => c.linkage,
            Method::TwoStage(c) => c.linkage,
        }
    }

    /// The name of the score written for each pair.
    pub fn score_name(&self) -> &'static str {
        match self {
            Method::TwoStage(c) if c.settings.confirm.rule.is_learned() => "probability",
            Method::MinHash(_) | Method::TwoStage(_) => "jaccard_estimate",
            Method::Jaccard(_) => "jaccard",
            Method::Resemblance(_) => "resemblance",
            Method::SimHash(_) => "simhash_similarity",
        }
    }

    fn find(&self, inputs: &[Input], read: &ReadOptions, models: &Path) -> Result<Found> {
        match self {
            Method::MinHash(c) => minhash::run(inputs, read, c),
            Method::Jaccard(c) => exact::run(inputs, read, &c.shingling, c.threshold, false),
            Method::Resemblance(c) => exact::run(inputs, read, &c.shingling, c.threshold, true),
            Method::SimHash(c) => simhash::run(inputs, read, c),
            Method::TwoStage(c) => two_stage::run(inputs, read, c, models),
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

impl Pair {
    /// Bytes [`Pair::write_to`] writes: the documents, the score, and where the pairs have
    /// one, the cosine.
    pub(crate) fn bytes(with_cosine: bool) -> usize {
        16 + 4 * usize::from(with_cosine)
    }

    /// Writes the pair as fixed-width little-endian bytes, its cosine where `with_cosine`
    /// (every pair of a run has one, or none does): what a spill or a stage's file holds.
    pub(crate) fn write_to(
        &self,
        w: &mut impl std::io::Write,
        with_cosine: bool,
    ) -> std::io::Result<()> {
        let mut bytes = [0u8; 20];
        bytes[0..4].copy_from_slice(&self.a.to_le_bytes());
        bytes[4..8].copy_from_slice(&self.b.to_le_bytes());
        bytes[8..16].copy_from_slice(&self.score.to_le_bytes());
        bytes[16..20].copy_from_slice(&self.cosine.unwrap_or(0.0).to_le_bytes());
        w.write_all(&bytes[..Pair::bytes(with_cosine)])
    }

    /// Reads a pair that [`Pair::write_to`] wrote.
    pub(crate) fn read_from(
        r: &mut impl std::io::Read,
        with_cosine: bool,
    ) -> std::io::Result<Pair> {
        let mut bytes = [0u8; 20];
        r.read_exact(&mut bytes[..Pair::bytes(with_cosine)])?;
        let word = |at: usize| bytes[at..at + 4].try_into().expect("four bytes");
        Ok(Pair {
            a: u32::from_le_bytes(word(0)),
            b: u32::from_le_bytes(word(4)),
            score: f64::from_le_bytes(bytes[8..16].try_into().expect("eight bytes")),
            cosine: with_cosine.then(|| f32::from_le_bytes(word(16))),
        })
    }
}

/// Every candidate a method scored, in the order it judged them: the pairs, `(a, b, cosine)`
/// or `(a, b)` for a method with no cosine, and each one's score, in two columns. A two-stage
/// run at a million documents scores tens of millions of candidates, and a MinHash join of ten
/// million documents seventy million; so held they take 12 to 20 bytes each, not a [`Pair`]'s
/// 24, and the search's own list of candidates is kept as it came.
#[derive(Clone, Debug, PartialEq)]
pub struct ScoredPairs {
    pairs: CandidatePairs,
    scores: Scores,
    /// Each candidate's verdict at any threshold, where the run judged them itself (none for
    /// a merge of parts, which kept only their verdicts).
    standings: Vec<Standing>,
}

/// Scores in 4 bytes each while every one is a 32-bit float exactly (a MinHash estimate is a
/// count over a power of two), else in 8.
#[derive(Clone, Debug, PartialEq)]
enum Scores {
    Narrow(Vec<f32>),
    Wide(Vec<f64>),
}

impl Scores {
    /// Room for `count` scores, held narrow until one is not a 32-bit float exactly.
    fn with_capacity(count: usize) -> Scores {
        Scores::Narrow(Vec::with_capacity(count))
    }

    fn of(scores: Vec<f64>) -> Scores {
        match scores.iter().all(|&x| Scores::fits(x)) {
            true => Scores::Narrow(scores.into_iter().map(|x| x as f32).collect()),
            false => Scores::Wide(scores),
        }
    }

    /// Whether `x` is a 32-bit float exactly.
    fn fits(x: f64) -> bool {
        f64::from(x as f32).to_bits() == x.to_bits()
    }

    fn push(&mut self, x: f64) {
        match self {
            Scores::Narrow(narrow) if Scores::fits(x) => narrow.push(x as f32),
            Scores::Narrow(narrow) => {
                let mut wide: Vec<f64> = Vec::with_capacity(narrow.capacity());
                wide.extend(narrow.iter().map(|&x| f64::from(x)));
                wide.push(x);
                *self = Scores::Wide(wide);
            }
            Scores::Wide(wide) => wide.push(x),
        }
    }

    fn get(&self, i: usize) -> f64 {
        match self {
            Scores::Narrow(narrow) => f64::from(narrow[i]),
            Scores::Wide(wide) => wide[i],
        }
    }

    fn len(&self) -> usize {
        match self {
            Scores::Narrow(narrow) => narrow.len(),
            Scores::Wide(wide) => wide.len(),
        }
    }

    fn prefetch(&self, i: usize) {
        match self {
            Scores::Narrow(narrow) => crate::prefetch::prefetch(&narrow[i]),
            Scores::Wide(wide) => crate::prefetch::prefetch(&wide[i]),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum CandidatePairs {
    WithCosines(Vec<(u32, u32, f32)>),
    Plain(Vec<(u32, u32)>),
}

/// Where a run's scored candidates are: held, or in the sorted files of the parts that scored
/// them, read again each time they are needed. A split run's join holds no list of them: a
/// MinHash join of ten million documents has seventy million, a two-stage one hundreds.
#[derive(Clone)]
pub enum ScoredCandidates {
    Held(Arc<ScoredPairs>),
    InFiles(Arc<dyn CandidateFiles>),
}

/// Scored candidates in files, each read again in full every time it is asked.
pub trait CandidateFiles: Send + Sync {
    /// How many candidates the files hold.
    fn count(&self) -> usize;
    /// Whether the candidates have cosines (all of them, or none).
    fn with_cosines(&self) -> bool;
    /// Hands `each` every candidate, in the run's order.
    fn for_each(&self, each: &mut dyn FnMut(Pair)) -> Result<()>;
}

impl ScoredCandidates {
    /// How many candidates there are.
    pub fn count(&self) -> usize {
        match self {
            ScoredCandidates::Held(scored) => scored.len(),
            ScoredCandidates::InFiles(files) => files.count(),
        }
    }

    /// The candidates, where they are held.
    pub fn held(&self) -> Option<&ScoredPairs> {
        match self {
            ScoredCandidates::Held(scored) => Some(scored),
            ScoredCandidates::InFiles(_) => None,
        }
    }
}

impl Default for ScoredPairs {
    fn default() -> Self {
        ScoredPairs::with_capacity(0)
    }
}

impl ScoredPairs {
    /// Candidates `(a, b, cosine)` and their `scores`, in the same order.
    pub fn with_cosines(pairs: Vec<(u32, u32, f32)>, scores: Vec<f64>) -> Self {
        ScoredPairs::with_cosines_scored(pairs, Scores::of(scores))
    }

    /// [`ScoredPairs::with_cosines`], the scores held as they were gathered.
    fn with_cosines_scored(pairs: Vec<(u32, u32, f32)>, scores: Scores) -> Self {
        assert_eq!(pairs.len(), scores.len(), "a score for each candidate");
        ScoredPairs {
            pairs: CandidatePairs::WithCosines(pairs),
            scores,
            standings: Vec::new(),
        }
    }

    /// Candidates `(a, b)` and their `scores`, in the same order, of a method with no cosine.
    pub fn without_cosines(pairs: Vec<(u32, u32)>, scores: Vec<f64>) -> Self {
        assert_eq!(pairs.len(), scores.len(), "a score for each candidate");
        ScoredPairs {
            pairs: CandidatePairs::Plain(pairs),
            scores: Scores::of(scores),
            standings: Vec::new(),
        }
    }

    /// Room for `count` candidates of a method with no cosine, added by [`ScoredPairs::push`].
    pub fn with_capacity(count: usize) -> Self {
        ScoredPairs {
            pairs: CandidatePairs::Plain(Vec::with_capacity(count)),
            scores: Scores::with_capacity(count),
            standings: Vec::new(),
        }
    }

    /// These candidates with each one's standing, in the same order: what
    /// [`ScoredPairs::confirmed_at`] decides them by.
    pub fn judged(self, standings: Vec<Standing>) -> Self {
        assert_eq!(standings.len(), self.len(), "a standing for each candidate");
        ScoredPairs { standings, ..self }
    }

    /// The candidates confirmed where the Jaccard threshold is `threshold`, in order, each
    /// with the rule that confirmed it; `None` where the candidates' standings are not known
    /// (a merge of parts keeps their verdicts only).
    pub fn confirmed_at(&self, threshold: f64) -> Option<(Vec<Pair>, Vec<Rule>)> {
        if self.standings.len() != self.len() {
            return None;
        }
        let mut confirmed = (Vec::new(), Vec::new());
        for (i, standing) in self.standings.iter().enumerate() {
            let verdict = standing.at(self.scores.get(i), threshold);
            if verdict.duplicate {
                confirmed.0.push(self.get(i));
                confirmed.1.push(verdict.rule);
            }
        }
        Some(confirmed)
    }

    /// Adds candidate `(a, b)` of a method with no cosine, and its score.
    pub fn push(&mut self, a: u32, b: u32, score: f64) {
        let CandidatePairs::Plain(pairs) = &mut self.pairs else {
            panic!("a candidate without its cosine among candidates with theirs");
        };
        pairs.push((a, b));
        self.scores.push(score);
    }

    /// Where candidate `(a, b)` is, in candidates sorted by their documents.
    pub fn find(&self, a: u32, b: u32) -> Option<usize> {
        match &self.pairs {
            CandidatePairs::WithCosines(pairs) => {
                pairs.binary_search_by_key(&(a, b), |p| (p.0, p.1))
            }
            CandidatePairs::Plain(pairs) => pairs.binary_search(&(a, b)),
        }
        .ok()
    }

    /// How many candidates there are.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.scores.len() == 0
    }

    /// The candidates whose place in `selected` is true (the confirmed ones), in order.
    pub fn selected(&self, selected: &[bool]) -> Vec<Pair> {
        assert_eq!(selected.len(), self.len(), "a verdict for each candidate");
        (0..self.len())
            .filter(|&i| selected[i])
            .map(|i| self.get(i))
            .collect()
    }

    /// Starts loading the `i`th candidate ([`crate::prefetch`]).
    pub(crate) fn prefetch(&self, i: usize) {
        match &self.pairs {
            CandidatePairs::WithCosines(pairs) => crate::prefetch::prefetch(&pairs[i]),
            CandidatePairs::Plain(pairs) => crate::prefetch::prefetch(&pairs[i]),
        }
        self.scores.prefetch(i);
    }

    /// The `i`th candidate, scored.
    pub fn get(&self, i: usize) -> Pair {
        let ((a, b), cosine) = match &self.pairs {
            CandidatePairs::WithCosines(pairs) => ((pairs[i].0, pairs[i].1), Some(pairs[i].2)),
            CandidatePairs::Plain(pairs) => (pairs[i], None),
        };
        Pair {
            a,
            b,
            score: self.scores.get(i),
            cosine,
        }
    }
}

/// The outcome of a deduplication run, before it is written.
pub struct Dedup {
    /// The documents read.
    pub corpus: Corpus,
    /// Number of candidate pairs considered.
    pub candidates: usize,
    /// Every candidate with its score, where the method scores more pairs than it confirms
    /// (MinHash: all LSH collisions), for threshold sweeps.
    pub scored_candidates: Option<ScoredCandidates>,
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
    /// The k-means cells two-stage searched within, if it did.
    pub cells: Option<usize>,
    /// Where the time went.
    pub times: StageTimes,
    /// The slice of a split run this was, if one: its pairs and candidates are written, and
    /// the groups wait for `neardup merge`.
    pub part: Option<Part>,
    /// How many of the corpus's last ids are documents of the collection a batch was checked
    /// against (`against`), which no input holds: they have no record.
    pub collection: usize,
    /// The model the vectors came from, where the method embedded (two-stage).
    pub model: Option<ModelIdentity>,
    /// The similarity groups choose representatives by, where it was kept to group again
    /// ([`dedup_to_rethreshold`]).
    similarity: Option<Similarity>,
}

impl Dedup {
    /// How many documents the inputs gave (the ids before the collection's).
    pub fn records(&self) -> usize {
        self.corpus.ids.len() - self.collection
    }

    /// The rule that confirmed each pair, in the order of [`Dedup::pairs`], where the run
    /// judged its candidates itself (MinHash and two-stage, not a merge of parts).
    pub fn pair_rules(&self) -> Option<Vec<Rule>> {
        let (_, rules) = self
            .scored_candidates
            .as_ref()?
            .held()?
            .confirmed_at(self.threshold)?;
        (rules.len() == self.pairs.len()).then_some(rules)
    }
}

/// What a method found: its confirmed pairs, and the similarity the shared grouping step
/// chooses representatives by (owning whatever sketches it needs).
struct Found {
    corpus: Corpus,
    candidates: usize,
    scored_candidates: Option<ScoredCandidates>,
    pairs: Vec<Pair>,
    similarity: Similarity,
    probes: Option<usize>,
    cells: Option<usize>,
    /// See [`Dedup::collection`].
    collection: usize,
    /// See [`Dedup::model`].
    model: Option<ModelIdentity>,
    times: StageTimes,
}

/// The similarity of two documents that a group's representative is chosen by (owning the
/// sketches it needs).
type Similarity = Arc<dyn Fn(u32, u32) -> f64 + Send + Sync>;

/// Runs `method` over `inputs`; models (for two-stage) are looked up under `models`.
pub fn dedup(
    inputs: &[Input],
    read: &ReadOptions,
    method: &Method,
    models: &Path,
) -> Result<Dedup> {
    find_and_group(inputs, read, method, models, false)
}

/// [`dedup`], keeping what [`rethreshold`] needs to group the pairs again: the similarity
/// groups are scored by, and so the signatures it reads (half a kilobyte a document under the
/// default 128 permutations), for as long as the run is held.
pub fn dedup_to_rethreshold(
    inputs: &[Input],
    read: &ReadOptions,
    method: &Method,
    models: &Path,
) -> Result<Dedup> {
    find_and_group(inputs, read, method, models, true)
}

/// A run of `method`, grouped ([`group`]'s `keep_similarity`).
fn find_and_group(
    inputs: &[Input],
    read: &ReadOptions,
    method: &Method,
    models: &Path,
    keep_similarity: bool,
) -> Result<Dedup> {
    method.validate()?;
    let found = method.find(inputs, read, models)?;
    Ok(group(found, method, keep_similarity))
}

/// The lock on the collection a run of `method` adds its records to, where it asks to
/// (`against` with `add`; see [`Collection::lock_for_adding`]): taken before the run reads the
/// collection, and held until [`add_where_asked`] is done.
pub fn lock_collection_to_add(method: &Method) -> Result<Option<FolderLock>> {
    match method {
        Method::TwoStage(config) if config.add => config
            .against
            .as_deref()
            .map(Collection::lock_for_adding)
            .transpose(),
        _ => Ok(None),
    }
}

/// Adds the records a run of `method` kept to the collection it was checked against, where it
/// asks to (`against` with `add`): how many were added, and to which index.
pub fn add_where_asked<'m>(
    method: &'m Method,
    inputs: &[Input],
    read: &ReadOptions,
    dedup: &Dedup,
    keep: &KeepPolicy,
    models: &Path,
) -> Result<Option<(usize, &'m Path)>> {
    let Method::TwoStage(config) = method else {
        return Ok(None);
    };
    let (Some(collection), true) = (&config.against, config.add) else {
        return Ok(None);
    };
    let added = two_stage::add_to_collection(inputs, read, dedup, keep, collection, models);
    two_stage::check_not_removed(collection)?;
    Ok(Some((added?, collection)))
}

/// Groups what a method found: the step every method, and a merge of parts, shares. With
/// `keep_similarity`, the run keeps the similarity it grouped by, to group again.
fn group(mut found: Found, method: &Method, keep_similarity: bool) -> Dedup {
    let clock = Instant::now();
    let part = method.part();
    let edges: Vec<(u32, u32)> = found.pairs.iter().map(|p| (p.a, p.b)).collect();
    // A part's pairs are a slice of the run's: its groups are the merge's to find.
    let groups = match part {
        Some(_) => Vec::new(),
        None => linked_groups(
            &found.corpus.ids,
            &edges,
            method.linkage(),
            &*found.similarity,
        ),
    };
    found.times.group = clock.elapsed().as_secs_f64();
    Dedup {
        corpus: found.corpus,
        candidates: found.candidates,
        scored_candidates: found.scored_candidates,
        pairs: found.pairs,
        score_name: method.score_name(),
        threshold: method.threshold(),
        groups,
        probes: found.probes,
        cells: found.cells,
        times: found.times,
        part,
        collection: found.collection,
        model: found.model,
        similarity: keep_similarity.then_some(found.similarity),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_come_back_bit_for_bit_whether_held_in_four_bytes_or_eight() {
        let bits = |pairs: &ScoredPairs| -> Vec<u64> {
            (0..pairs.len())
                .map(|i| pairs.get(i).score.to_bits())
                .collect()
        };
        let exact = vec![0.5, 0.25, 97.0 / 128.0, 0.0, -0.0];
        let narrow = ScoredPairs::without_cosines(vec![(0, 1); 5], exact.clone());
        assert!(matches!(narrow.scores, Scores::Narrow(_)));
        assert_eq!(
            bits(&narrow),
            exact.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        let third = 1.0 / 3.0;
        let wide = ScoredPairs::with_cosines(vec![(0, 1, 0.5); 2], vec![0.5, third]);
        assert!(matches!(wide.scores, Scores::Wide(_)));
        assert_eq!(wide.get(1).score.to_bits(), third.to_bits());
        // A score past 32 bits widens what was pushed before it.
        let mut pushed = ScoredPairs::with_capacity(3);
        pushed.push(0, 1, 0.75);
        pushed.push(0, 2, third);
        pushed.push(1, 2, 0.125);
        assert!(matches!(pushed.scores, Scores::Wide(_)));
        assert_eq!(bits(&pushed), [0.75f64, third, 0.125].map(f64::to_bits));
        assert_eq!(pushed.find(0, 2), Some(1));
    }
}
