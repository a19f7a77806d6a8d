//! Every method setting, declared once.
//!
//! A setting is a key (`num_perm`) that a pipeline file's `[method]` table, a command-line flag
//! (`--num-perm`), an index's manifest and `summary.json` all use. Its declaration here is the
//! only place that says which methods take it, the values it accepts, how a flag reads it, its
//! help, and where it applies beyond the run (a setting that shapes an index, one that says
//! where things are on this machine, one that may be given when serving). Its default belongs
//! to the type that holds the setting (`MinHashParams::default()`, `search::DEFAULT_TOP_K`):
//! each declaration reads it from there, pointing down the layers. Reading a method's settings
//! fills in those defaults and checks the ranges before the types see them (`Method::from_settings`
//! in `pipeline`), and the types check what involves several settings at once (`bands` x
//! `rows` within `num_perm`). The command line builds its flags from [`SETTINGS`], docs/methods.md
//! its table, and the split run and `serve` check scopes with [`keys_in`].

use std::fmt;

use serde_json::Value;

use serde_json::json;

use super::MethodName;
use crate::confirm::{Confirm, ConfirmRule, LEARNED_THRESHOLD, Match, NumberGuard};
use crate::embed::{CENTRE_BY_DEFAULT, EmbedderKind, EmbedderSpec, MAX_TOKENS_LIMIT};
use crate::group::Linkage;
use crate::search::{DEFAULT_CELL_PROBES, DEFAULT_MIN_COSINE, DEFAULT_TOP_K, MAX_TOP_K};
use crate::similarity::{JACCARD_THRESHOLD, RESEMBLANCE_THRESHOLD};
use crate::sketch::{DEFAULT_MAX_DISTANCE, Hashing, MAX_NUM_PERM, MinHashParams};
use crate::store::{StoreKind, StoreSpec};
use crate::text::ShinglingSpec;

/// Where a setting applies beyond the run that gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Shapes a kept index: recorded in its manifest, and a part of a split run must give the
    /// index's value.
    Index,
    /// Says where things are on this machine (model files, the server): may differ between
    /// the machines of a split run.
    Local,
    /// May be given when serving an existing index (the others are its manifest's).
    Serving,
}

/// How a setting's value is read from the command line.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// A whole number (`usize`).
    Count,
    /// A whole number that fits 32 bits.
    Count32,
    /// A whole number that fits 64 bits.
    Count64,
    /// A finite number, possibly negative.
    Number,
    /// A finite number kept in 32 bits (cosines).
    Number32,
    /// A path neardup records (UTF-8 only).
    Path,
    /// Free text.
    Text,
    /// A comma-separated list of words.
    Words,
    /// `--flag` (true) or `--flag=false`.
    Switch,
    /// One of the names a type offers (`clap::ValueEnum`); the same names its settings take.
    Choice(fn() -> Vec<clap::builder::PossibleValue>),
}

/// The numbers a setting accepts: an interval, each end open or closed, or unbounded above.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    low: f64,
    low_open: bool,
    high: f64,
    high_open: bool,
}

impl Range {
    /// Every value its kind reads.
    pub const ANY: Range = Range::closed(f64::NEG_INFINITY, f64::INFINITY);
    /// A share: (0, 1].
    pub const SHARE: Range = Range::closed(0.0, 1.0).open_below();

    /// `[low, high]`.
    pub const fn closed(low: f64, high: f64) -> Range {
        Range {
            low,
            low_open: false,
            high,
            high_open: false,
        }
    }

    /// `low` and above.
    pub const fn at_least(low: f64) -> Range {
        Range::closed(low, f64::INFINITY)
    }

    /// The same range without its lower end.
    pub const fn open_below(mut self) -> Range {
        self.low_open = true;
        self
    }

    /// The same range without its upper end.
    pub const fn open_above(mut self) -> Range {
        self.high_open = true;
        self
    }

    /// Whether `value` lies in the range.
    pub fn contains(&self, value: f64) -> bool {
        let above = if self.low_open {
            value > self.low
        } else {
            value >= self.low
        };
        let below = if self.high_open {
            value < self.high
        } else {
            value <= self.high
        };
        above && below
    }
}

impl fmt::Display for Range {
    /// `lie in (0, 1]`, or `be at least 1` where nothing bounds it above.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.high == f64::INFINITY {
            let sign = if self.low_open { "above" } else { "at least" };
            return write!(f, "be {sign} {}", self.low);
        }
        let open = if self.low_open { '(' } else { '[' };
        let close = if self.high_open { ')' } else { ']' };
        write!(f, "lie in {open}{}, {}{close}", self.low, self.high)
    }
}

/// Where one method takes another default or range than the others.
#[derive(Clone, Copy, Debug)]
pub struct Override {
    method: MethodName,
    default: fn() -> Value,
    range: Range,
}

/// One method setting, declared once: its key (the flag is `--key` with dashes), the methods
/// that take it, its default and range, what it means, how its value is read, and where it
/// applies. Everything else about a setting is derived from this.
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    /// The key, in pipeline files, manifests and `summary.json`.
    pub key: &'static str,
    /// The methods that take it.
    pub methods: &'static [MethodName],
    /// The default, as JSON (`null`: unset, or resolved when the run starts), read from the
    /// type that holds the setting, which owns it.
    pub default: fn() -> Value,
    /// The values it accepts (numbers only; a name or a path is checked by its type).
    pub range: Range,
    /// Methods that take another default or range.
    pub overrides: &'static [Override],
    /// The group its flag is listed under in `--help`.
    pub heading: &'static str,
    /// What it means.
    pub help: &'static str,
    /// How its value is read.
    pub kind: Kind,
    /// Where it applies beyond the run.
    pub scopes: &'static [Scope],
    /// The default in words, where a run resolves it (a default of `null` that means more
    /// than "unset").
    pub default_note: Option<&'static str>,
}

fn choices<T: clap::ValueEnum>() -> Vec<clap::builder::PossibleValue> {
    T::value_variants()
        .iter()
        .filter_map(|v| v.to_possible_value())
        .collect()
}

const fn setting(
    key: &'static str,
    methods: &'static [MethodName],
    default: fn() -> Value,
    heading: &'static str,
    kind: Kind,
    help: &'static str,
) -> Setting {
    Setting {
        key,
        methods,
        default,
        range: Range::ANY,
        overrides: &[],
        heading,
        help,
        kind,
        scopes: &[Scope::Index],
        default_note: None,
    }
}

impl Setting {
    const fn range(mut self, range: Range) -> Self {
        self.range = range;
        self
    }

    const fn overrides(mut self, overrides: &'static [Override]) -> Self {
        self.overrides = overrides;
        self
    }

    const fn scopes(mut self, scopes: &'static [Scope]) -> Self {
        self.scopes = scopes;
        self
    }

    const fn default_note(mut self, note: &'static str) -> Self {
        self.default_note = Some(note);
        self
    }

    /// Whether `method` takes this setting.
    pub fn applies_to(&self, method: MethodName) -> bool {
        self.methods.contains(&method)
    }

    fn overridden(&self, method: MethodName) -> Option<&Override> {
        self.overrides.iter().find(|o| o.method == method)
    }

    /// The default `method` takes, as JSON.
    pub fn default_for(&self, method: MethodName) -> Value {
        self.overridden(method).map_or(self.default, |o| o.default)()
    }

    /// Its default in words, as help and docs give it: the note where a run resolves it, else
    /// the methods' defaults (`0.8 for minhash, two-stage; 0.7 for jaccard`, or one value where
    /// they agree); `None` where every method leaves it unset.
    pub fn default_in_words(&self) -> Option<String> {
        if let Some(note) = self.default_note {
            return Some(note.to_owned());
        }
        let mut by_value: Vec<(String, Vec<&str>)> = Vec::new();
        for &method in self.methods {
            let value = match self.default_for(method) {
                Value::Null => continue,
                Value::Array(a) if a.is_empty() => continue,
                Value::String(s) => s,
                other => other.to_string(),
            };
            match by_value.iter_mut().find(|(v, _)| *v == value) {
                Some((_, names)) => names.push(method.as_str()),
                None => by_value.push((value, vec![method.as_str()])),
            }
        }
        match by_value.as_slice() {
            [] => None,
            [(value, _)] => Some(value.clone()),
            _ => Some(
                by_value
                    .iter()
                    .map(|(value, names)| format!("{value} for {}", names.join(", ")))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
        }
    }

    /// The values `method` accepts.
    pub fn range_for(&self, method: MethodName) -> Range {
        self.overridden(method).map_or(self.range, |o| o.range)
    }

    /// Checks `value` against the range `method` accepts; the message follows the key:
    /// "must lie in (0, 1], not 1.5". A value that is not a number is left to its type.
    pub fn check(&self, method: MethodName, value: &Value) -> Result<(), String> {
        let range = self.range_for(method);
        match value.as_f64() {
            Some(number) if !range.contains(number) => Err(format!("must {range}, not {value}")),
            _ => Ok(()),
        }
    }
}

const SHINGLES: &str = "Shingles";
const MATCHING: &str = "Matching";
const MINHASH: &str = "MinHash";
const SIMHASH: &str = "SimHash";
const TWO_STAGE: &str = "Two-stage";

use MethodName::{Jaccard, Minhash, Resemblance, Simhash, TwoStage};

const EVERY_METHOD: &[MethodName] = &[Minhash, Jaccard, Resemblance, Simhash, TwoStage];
const THRESHOLDED: &[MethodName] = &[Minhash, Jaccard, Resemblance, TwoStage];
const SIGNED: &[MethodName] = &[Minhash, TwoStage];

/// Every method setting. Adding a setting is a line here and a field in the settings type of
/// each method that takes it; a test checks that the two agree.
pub const SETTINGS: &[Setting] = &[
    setting("ngram", EVERY_METHOD, || json!(ShinglingSpec::default().ngram), SHINGLES, Kind::Count, "Word n-gram size of the shingles")
        .range(Range::at_least(1.0))
        .default_note("1; 5 for resemblance"),
    setting("char_ngram", EVERY_METHOD, || json!(ShinglingSpec::default().char_ngram), SHINGLES, Kind::Count, "Use character n-grams of this size instead of word n-grams")
        .range(Range::at_least(1.0)),
    setting("stoplist", EVERY_METHOD, || json!(ShinglingSpec::default().stoplist), SHINGLES, Kind::Path, "Stoplist file: one word a line (# comments allowed)"),
    setting("stopwords", EVERY_METHOD, || json!(ShinglingSpec::default().stopwords), SHINGLES, Kind::Words, "Stop words given inline, comma-separated"),
    setting("match", SIGNED, || json!(ConfirmRule::default().matching), MATCHING, Kind::Choice(choices::<Match>), "What counts as a duplicate: copies (one text, give or take edits, truncation or a missing abstract; --confirm chooses the rule), meaning (two-stage: one meaning in other words; a fitted model weighs the cosine with the copies' evidence, and --threshold is a probability, 0.5 unless given)"),
    setting("threshold", THRESHOLDED, || json!(ConfirmRule::default().threshold), MATCHING, Kind::Number, "Similarity threshold (minhash and two-stage: their evidence rule also matches titles; resemblance must exceed it)")
        .range(Range::SHARE)
        .overrides(&[
            Override { method: Jaccard, default: || json!(JACCARD_THRESHOLD), range: Range::SHARE },
            Override { method: Resemblance, default: || json!(RESEMBLANCE_THRESHOLD), range: Range::closed(0.0, 1.0).open_above() },
        ]),
    setting("linkage", EVERY_METHOD, || json!(Linkage::default()), MATCHING, Kind::Choice(choices::<Linkage>), "How pairs become groups: single (connected), complete (all pairs similar), star (all similar to the representative)"),
    setting("num_perm", SIGNED, || json!(MinHashParams::default().num_perm), MINHASH, Kind::Count, "MinHash: number of permutations")
        .range(Range::closed(1.0, MAX_NUM_PERM as f64)),
    setting("seed", SIGNED, || json!(MinHashParams::default().seed), MINHASH, Kind::Count64, "MinHash: seed of the permutations"),
    setting("hashing", SIGNED, || json!(MinHashParams::default().hashing), MINHASH, Kind::Choice(choices::<Hashing>), "MinHash: how the slots are drawn: permutations (one a slot), one-permutation (one hash a word, cut into bins; cheaper, and as accurate on bib-dedupe)"),
    setting("bands", SIGNED, || json!(MinHashParams::default().bands), MINHASH, Kind::Count, "MinHash: LSH bands, with --rows")
        .range(Range::at_least(1.0))
        .default_note("chosen for the threshold and rule, 20 x 6 with the evidence rule"),
    setting("rows", SIGNED, || json!(MinHashParams::default().rows), MINHASH, Kind::Count, "MinHash: slots per LSH band, with --bands")
        .range(Range::at_least(1.0))
        .default_note("see --bands"),
    setting("confirm", SIGNED, || json!(ConfirmRule::default().confirm), MINHASH, Kind::Choice(choices::<Confirm>), "MinHash: how copies are confirmed: evidence (whole-text Jaccard, titles, numbers, short texts), estimate (the Jaccard estimate alone), band"),
    setting("confirm_model", SIGNED, || Value::Null, MINHASH, Kind::Path, "Two-stage, --match meaning: the model file `neardup train` or `neardup label` wrote")
        .default_note("the model fitted on the paraphrase domains"),
    setting("min_shingles", SIGNED, || json!(ConfirmRule::default().min_shingles), MINHASH, Kind::Count32, "MinHash, evidence rule: never confirm a text with fewer distinct words: a title such as \"editorial\" matches every other \"editorial\""),
    setting("title_threshold", SIGNED, || json!(ConfirmRule::default().title_threshold), MINHASH, Kind::Number, "MinHash, evidence rule: title Jaccard (notes removed) that makes a title-only copy of a record a duplicate")
        .range(Range::SHARE),
    setting("containment", SIGNED, || json!(ConfirmRule::default().containment), MINHASH, Kind::Number, "MinHash, evidence rule: share of the smaller text's words found in the larger that makes two records with an abstract duplicates (a truncated abstract, a glued prefix, added boilerplate); 0 turns the rule off")
        .range(Range::closed(0.0, 1.0)),
    setting("number_guard", SIGNED, || json!(ConfirmRule::default().number_guard), MINHASH, Kind::Choice(choices::<NumberGuard>), "MinHash, evidence rule: which numbers must agree: title (the titles' where both have one, else the whole texts'), text (every number), off"),
    setting("max_distance", &[Simhash], || json!(DEFAULT_MAX_DISTANCE), SIMHASH, Kind::Count32, "SimHash: largest Hamming distance of a duplicate")
        .range(Range::closed(0.0, 63.0)),
    setting("probes", &[Simhash], || Value::Null, SIMHASH, Kind::Count, "SimHash: probe this many likeliest bit-flip sets per document instead of the exact search")
        .range(Range::at_least(1.0)),
    setting("embedder", &[TwoStage], || json!(EmbedderSpec::default().embedder), TWO_STAGE, Kind::Choice(choices::<EmbedderKind>), "Two-stage: embedder"),
    setting("model_dir", &[TwoStage], || json!(EmbedderSpec::default().model_dir), TWO_STAGE, Kind::Path, "Two-stage: use the model files in this folder instead of fetching (minilm: config.json, tokenizer.json, model.safetensors; static: a folder made by `neardup models fetch static`)")
        .scopes(&[Scope::Local]),
    setting("glove", &[TwoStage], || json!(EmbedderSpec::default().glove), TWO_STAGE, Kind::Path, "Two-stage: GloVe text file, for --embedder glove")
        .scopes(&[Scope::Local]),
    setting("max_tokens", &[TwoStage], || json!(EmbedderSpec::default().max_tokens), TWO_STAGE, Kind::Count, "Two-stage: MiniLM's longest input in tokens")
        .range(Range::closed(1.0, MAX_TOKENS_LIMIT as f64)),
    setting("top_k", &[TwoStage], || json!(DEFAULT_TOP_K), TWO_STAGE, Kind::Count, "Two-stage: nearest neighbours per document taken as candidates")
        .range(Range::closed(1.0, MAX_TOP_K as f64))
        .scopes(&[Scope::Index, Scope::Serving]),
    setting("exact_search", &[TwoStage], || json!(false), TWO_STAGE, Kind::Switch, "Two-stage: find each document's true top-k by a full scan of the vector store instead of the cells: the same candidates on every run and engine (up to which of several identical vectors tied at the k-th place is kept), one query at a time (a corpus of up to 20,000 documents is searched so by default, in memory and faster)"),
    setting("cells", &[TwoStage], || Value::Null, TWO_STAGE, Kind::Count, "Two-stage: cut the documents' vectors into this many k-means cells and compare each document exactly with the documents of its nearest --cell-probes cells; the pairs MinHash proposes (shared bands, same titles) join the candidates. Past 1,024 cells a document finds its nearest through about the square root as many coarse cells. 0: walk the vector index's HNSW graph instead. Not with --exact-search or --part, which search the whole index")
        .default_note("from the corpus size: 1 (every document against every other) up to 20,000 documents, then one per 160 (625 at 100,000)"),
    setting("cell_probes", &[TwoStage], || json!(DEFAULT_CELL_PROBES), TWO_STAGE, Kind::Count, "Two-stage: the nearest cells each document is searched in")
        .range(Range::closed(1.0, 64.0)),
    setting("min_cosine", &[TwoStage], || json!(DEFAULT_MIN_COSINE), TWO_STAGE, Kind::Number32, "Two-stage: neighbours below this cosine are not candidates (chosen for centred vectors; uncentred ones lie above it)")
        .range(Range::closed(-1.0, 1.0)),
    setting("centre", &[TwoStage], || json!(CENTRE_BY_DEFAULT), TWO_STAGE, Kind::Switch, "Two-stage: centre every vector on the mean of the first 8,192 documents' vectors before it is stored or searched: unrelated documents then point apart, which the HNSW graph needs, and the graph is built and walked on int8 codes, rescored with the full vectors. Fewer than 1,000 documents give no centre: their vectors stay as made (--no-centre: always)"),
    setting("store", &[TwoStage], || json!(StoreSpec::default().store), TWO_STAGE, Kind::Choice(choices::<StoreKind>), "Two-stage: vector store")
        .scopes(&[Scope::Local])
        .default_note("edge, or qdrant with --qdrant-url"),
    setting("qdrant_url", &[TwoStage], || json!(StoreSpec::default().qdrant_url), TWO_STAGE, Kind::Text, "Two-stage: Qdrant server gRPC address, e.g. http://localhost:6334")
        .scopes(&[Scope::Local, Scope::Serving]),
    setting("collection", &[TwoStage], || json!(StoreSpec::default().collection), TWO_STAGE, Kind::Text, "Two-stage: collection on the Qdrant server")
        .scopes(&[Scope::Local]),
    setting("shards", &[TwoStage], || json!(StoreSpec::default().shards), TWO_STAGE, Kind::Count32, "Two-stage: shards of a new server collection, spread over a cluster's nodes")
        .range(Range::at_least(1.0))
        .scopes(&[Scope::Local]),
    setting("replicas", &[TwoStage], || json!(StoreSpec::default().replicas), TWO_STAGE, Kind::Count32, "Two-stage: copies of each shard on a cluster")
        .range(Range::at_least(1.0))
        .scopes(&[Scope::Local]),
    setting("index", &[TwoStage], || Value::Null, TWO_STAGE, Kind::Path, "Two-stage: keep the vector index in this folder, for `neardup query` later; with --part, the shared index `neardup index` built")
        .scopes(&[Scope::Serving]),
    setting("against", &[TwoStage], || Value::Null, TWO_STAGE, Kind::Path, "Two-stage: check the input, a new batch, against the collection in this index folder (made by `neardup index` or `dedup --index`) as well as within itself: each record is also searched among the collection's --top-k nearest, a record that matches the collection is its duplicate (its group keeps the collection's record), and unique.* holds the batch's new records. The run takes the index's settings")
        .scopes(&[]),
    setting("add", &[TwoStage], || json!(false), TWO_STAGE, Kind::Switch, "Two-stage, with --against: then add the batch's new records (those in unique.*) to the collection, as one batch that a crash undoes whole")
        .scopes(&[]),
    setting("part", &[TwoStage, Minhash], || Value::Null, TWO_STAGE, Kind::Text, "Split the run over machines: part I of N (e.g. 2/4). MinHash, and two-stage without --index: sign (and embed, for two-stage) the records that start in the Ith of N equal byte ranges of the input (reading no other), and write their sketches (band keys, query vectors); two-stage with a shared --index: search and confirm only part I of the documents in it, and write its candidates; then `neardup merge`")
        .scopes(&[]),
];

/// The setting declared under `key`.
pub fn setting_of(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == key)
}

/// Every setting `method` takes, at its default, as the map a pipeline file's `[method]` table
/// would give.
pub fn defaults(method: MethodName) -> serde_json::Map<String, Value> {
    SETTINGS
        .iter()
        .filter(|s| s.applies_to(method))
        .map(|s| (s.key.to_owned(), s.default_for(method)))
        .collect()
}

/// [`defaults`] where `given` are the settings given: the learned rule's threshold is a
/// probability, whose default is its own.
pub fn defaults_given(
    method: MethodName,
    given: &serde_json::Map<String, Value>,
) -> serde_json::Map<String, Value> {
    let mut defaults = defaults(method);
    if given.get("match") == Some(&json!(Match::Meaning)) {
        defaults.insert("threshold".into(), json!(LEARNED_THRESHOLD));
    }
    defaults
}

/// The keys of the settings that apply in `scope`.
pub fn keys_in(scope: Scope) -> impl Iterator<Item = &'static str> {
    SETTINGS
        .iter()
        .filter(move |s| s.scopes.contains(&scope))
        .map(|s| s.key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Method;

    #[test]
    fn each_method_takes_exactly_the_settings_declared_for_it() {
        for &method in <MethodName as clap::ValueEnum>::value_variants() {
            let Value::Object(read) = serde_json::to_value(Method::defaults(method)).unwrap()
            else {
                panic!("a method serialises to an object")
            };
            let mut read: Vec<String> = read.into_iter().map(|(k, _)| k).collect();
            read.retain(|k| k != "name");
            read.sort();
            let mut declared: Vec<String> = defaults(method).into_iter().map(|(k, _)| k).collect();
            declared.sort();
            assert_eq!(read, declared, "{}", method.as_str());
        }
    }

    #[test]
    fn the_defaults_are_those_of_the_types_that_hold_the_settings() {
        use crate::confirm::ConfirmSettings;
        use crate::pipeline::{MinHashConfig, TwoStageConfig};
        let as_map = |value: Value| value.as_object().expect("an object").clone();
        assert_eq!(
            as_map(json!(TwoStageConfig::default())),
            defaults(MethodName::TwoStage)
        );
        let minhash = MinHashConfig {
            confirm: ConfirmSettings::default(),
            linkage: Linkage::default(),
            part: None,
        };
        assert_eq!(as_map(json!(minhash)), defaults(MethodName::Minhash));
    }

    /// The note says in words what `search::cells_for` computes.
    #[test]
    fn the_cells_default_is_described_as_computed() {
        use crate::search::{DOCUMENTS_PER_CELL, EXACT_SCAN_DOCUMENTS, cells_for};
        let note = SETTINGS
            .iter()
            .find(|s| s.key == "cells")
            .unwrap()
            .default_note;
        let note = note.expect("cells has no single default");
        let thousands = |n: usize| format!("{},{:03}", n / 1000, n % 1000);
        assert!(
            note.contains(&format!(
                "up to {} documents",
                thousands(EXACT_SCAN_DOCUMENTS)
            )),
            "{note}"
        );
        assert!(
            note.contains(&format!("one per {DOCUMENTS_PER_CELL}")),
            "{note}"
        );
        assert!(
            note.contains(&format!("{} at 100,000", cells_for(100_000))),
            "{note}"
        );
        assert_eq!(cells_for(EXACT_SCAN_DOCUMENTS), 1);
        let exact = SETTINGS.iter().find(|s| s.key == "exact_search").unwrap();
        let limit = format!("up to {} documents", thousands(EXACT_SCAN_DOCUMENTS));
        assert!(exact.help.contains(&limit), "{}", exact.help);
    }

    #[test]
    fn declared_defaults_lie_in_their_ranges_and_are_what_the_types_hold() {
        for setting in SETTINGS {
            for &method in setting.methods {
                let default = setting.default_for(method);
                assert_eq!(setting.check(method, &default), Ok(()), "{}", setting.key);
                let Value::Object(held) = serde_json::to_value(Method::defaults(method)).unwrap()
                else {
                    panic!("a method serialises to an object")
                };
                assert_eq!(
                    held[setting.key],
                    default,
                    "{} of {}",
                    setting.key,
                    method.as_str()
                );
            }
        }
        let threshold = setting_of("threshold").unwrap();
        assert_eq!(threshold.default_for(MethodName::Resemblance), 0.2);
        assert!(
            threshold
                .check(MethodName::Resemblance, &0.0.into())
                .is_ok()
        );
        assert_eq!(
            threshold.check(MethodName::Jaccard, &0.0.into()),
            Err("must lie in (0, 1], not 0.0".into())
        );
        assert_eq!(
            threshold.check(MethodName::Resemblance, &1.into()),
            Err("must lie in [0, 1), not 1".into())
        );
        assert_eq!(
            setting_of("shards")
                .unwrap()
                .check(MethodName::TwoStage, &0.into()),
            Err("must be at least 1, not 0".into())
        );
    }

    #[test]
    fn a_value_out_of_range_is_refused_by_key_wherever_it_is_read() {
        let given = |key: &str, value: Value| serde_json::Map::from_iter([(key.to_owned(), value)]);
        let err = Method::from_settings(MethodName::Simhash, given("max_distance", 64.into()))
            .unwrap_err();
        assert_eq!(err.key.as_deref(), Some("max_distance"));
        assert_eq!(err.message, "must lie in [0, 63], not 64");
        let err = Method::from_settings(MethodName::Minhash, given("top_k", 5.into())).unwrap_err();
        assert_eq!(
            err.message,
            "does not apply to method minhash (it is a setting of two-stage)"
        );
        let err =
            Method::from_settings(MethodName::Jaccard, given("colour", 5.into())).unwrap_err();
        assert_eq!(err.message, "no method has this setting");
        let mut both = given("cells", 5.into());
        both.insert("exact_search".into(), true.into());
        let err = Method::from_settings(MethodName::TwoStage, both).unwrap_err();
        assert!(err.message.contains("give one of them"), "{err}");
    }

    /// Every setting as a Markdown table (docs/methods.md holds it): the key, the methods that
    /// take it, its default, the values it accepts and what it means.
    pub fn markdown_table() -> String {
        let mut table = String::from(
            "| key (flag) | methods | default | accepts | meaning |\n|---|---|---|---|---|\n",
        );
        for setting in SETTINGS {
            let methods: Vec<&str> = setting.methods.iter().map(|m| m.as_str()).collect();
            let ranges: Vec<String> = setting
                .methods
                .iter()
                .map(|&m| setting.range_for(m))
                .filter(|r| *r != Range::ANY)
                .map(|r| {
                    let words = r.to_string();
                    words
                        .trim_start_matches("lie in ")
                        .trim_start_matches("be ")
                        .to_owned()
                })
                .fold(Vec::new(), |mut seen, r| {
                    if !seen.contains(&r) {
                        seen.push(r);
                    }
                    seen
                });
            table.push_str(&format!(
                "| `{}` (`--{}`) | {} | {} | {} | {} |\n",
                setting.key,
                setting.key.replace('_', "-"),
                methods.join(", "),
                setting.default_in_words().unwrap_or_else(|| "unset".into()),
                ranges.join("; "),
                setting.help.replace('|', "\\|"),
            ));
        }
        table
    }

    /// The settings table in docs/methods.md, between its markers, is the registry's as it
    /// is now. `NEARDUP_UPDATE_DOCS=1 cargo test --lib settings_table` rewrites it.
    #[test]
    fn the_settings_table_in_the_docs_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/methods.md");
        let doc = std::fs::read_to_string(&path).unwrap();
        let (start, end) = (
            "<!-- settings table: start -->\n",
            "<!-- settings table: end -->",
        );
        let from = doc.find(start).expect("the table's start marker") + start.len();
        let to = doc.find(end).expect("the table's end marker");
        let table = markdown_table();
        if std::env::var_os("NEARDUP_UPDATE_DOCS").is_some() {
            std::fs::write(&path, format!("{}{table}{}", &doc[..from], &doc[to..])).unwrap();
            return;
        }
        assert!(
            doc[from..to] == table,
            "docs/methods.md's settings table is stale: NEARDUP_UPDATE_DOCS=1 cargo test --lib \
             settings_table rewrites it"
        );
    }
}
