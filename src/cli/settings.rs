//! The method flags of `neardup dedup`, `neardup index` and `neardup serve`.
//!
//! The flags are collected as given (an unset flag is absent, not a default) and read through
//! [`Method::from_settings`], the same function that reads a pipeline file's `[method]` table.
//! So a flag means what the key of the same name means in a file, takes the same default, and a
//! flag that does not apply to the method is refused with the same message. Each flag is named
//! after its key (`--num-perm` is `num_perm`); a test checks that every key has its flag.

use std::path::PathBuf;
use std::sync::LazyLock;

use clap::Args;
use regex::Regex;
use serde::Serialize;
use serde_json::Value;

use crate::confirm::{Confirm, NumberGuard};
use crate::embed::EmbedderKind;
use crate::error::{Error, Result};
use crate::group::Linkage;
use crate::pipeline::{Method, MethodConfig, MethodName};
use crate::settings::SettingError;
use crate::sketch::Hashing;
use crate::store::StoreKind;

/// Every method setting as a flag; each method takes the ones that apply to it.
#[derive(Debug, Default, Args, Serialize)]
pub struct MethodFlags {
    /// Word n-gram size of the shingles [default: 1; 5 for resemblance].
    #[arg(long, help_heading = "Shingles")]
    ngram: Option<usize>,
    /// Use character n-grams of this size instead of word n-grams.
    #[arg(long, conflicts_with = "ngram", help_heading = "Shingles")]
    char_ngram: Option<usize>,
    /// Stoplist file: one word a line (# comments allowed).
    #[arg(long, help_heading = "Shingles", value_parser = super::RecordedPath)]
    stoplist: Option<PathBuf>,
    /// Stop words given inline, comma-separated.
    #[arg(long, value_delimiter = ',', help_heading = "Shingles")]
    stopwords: Vec<String>,
    /// Similarity threshold [default: 0.7; 0.8 for minhash and two-stage, whose evidence rule
    /// also matches titles; 0.2 for resemblance, which must exceed it].
    #[arg(long, allow_negative_numbers = true, help_heading = "Matching", value_parser = super::finite::<f64>)]
    threshold: Option<f64>,
    /// How pairs become groups: single (connected), complete (all pairs similar), star (all
    /// similar to the representative) [default: single].
    #[arg(long, value_enum, help_heading = "Matching")]
    linkage: Option<Linkage>,
    /// MinHash: number of permutations [default: 128].
    #[arg(long, help_heading = "MinHash")]
    num_perm: Option<usize>,
    /// MinHash: seed of the permutations [default: 1].
    #[arg(long, help_heading = "MinHash")]
    seed: Option<u64>,
    /// MinHash: how the slots are drawn: permutations (one a slot), one-permutation (one hash a
    /// word, cut into bins; cheaper, and as accurate on bib-dedupe) [default: permutations].
    #[arg(long, value_enum, help_heading = "MinHash")]
    hashing: Option<Hashing>,
    /// MinHash: LSH bands, with --rows [default: chosen for the threshold and rule, 20 x 6
    /// with the evidence rule].
    #[arg(long, requires = "rows", help_heading = "MinHash")]
    bands: Option<usize>,
    /// MinHash: slots per LSH band, with --bands.
    #[arg(long, requires = "bands", help_heading = "MinHash")]
    rows: Option<usize>,
    /// MinHash: how candidates are confirmed: evidence (whole-text Jaccard, titles, numbers,
    /// short texts), estimate (the Jaccard estimate alone), band [default: evidence].
    #[arg(long, value_enum, help_heading = "MinHash")]
    confirm: Option<Confirm>,
    /// MinHash, evidence rule: never confirm a text with fewer distinct words: a title such as
    /// "editorial" matches every other "editorial" [default: 4].
    #[arg(long, help_heading = "MinHash")]
    min_shingles: Option<u32>,
    /// MinHash, evidence rule: title Jaccard (notes removed) that makes a title-only copy of a
    /// record a duplicate [default: 0.8].
    #[arg(long, help_heading = "MinHash", value_parser = super::finite::<f64>)]
    title_threshold: Option<f64>,
    /// MinHash, evidence rule: share of the smaller text's words found in the larger that makes
    /// two records with an abstract duplicates (a truncated abstract, a glued prefix, added
    /// boilerplate); 0 turns the rule off [default: 0.7].
    #[arg(long, help_heading = "MinHash", value_parser = super::finite::<f64>)]
    containment: Option<f64>,
    /// MinHash, evidence rule: which numbers must agree: title (the titles' where both have
    /// one, else the whole texts'), text (every number), off [default: title].
    #[arg(long, value_enum, help_heading = "MinHash")]
    number_guard: Option<NumberGuard>,
    /// SimHash: largest Hamming distance of a duplicate [default: 3].
    #[arg(long, help_heading = "SimHash")]
    max_distance: Option<u32>,
    /// SimHash: probe this many likeliest bit-flip sets per document instead of the exact search.
    #[arg(long, help_heading = "SimHash")]
    probes: Option<usize>,
    /// Two-stage: embedder [default: static].
    #[arg(long, value_enum, help_heading = "Two-stage")]
    embedder: Option<EmbedderKind>,
    /// Two-stage: use the model files in this folder instead of fetching (minilm:
    /// config.json, tokenizer.json, model.safetensors; static: a folder made by `neardup
    /// models fetch static`).
    #[arg(long, help_heading = "Two-stage", value_parser = super::RecordedPath)]
    model_dir: Option<PathBuf>,
    /// Two-stage: GloVe text file, for --embedder glove.
    #[arg(long, help_heading = "Two-stage", value_parser = super::RecordedPath)]
    glove: Option<PathBuf>,
    /// Two-stage: MiniLM's longest input in tokens [default: 128].
    #[arg(long, help_heading = "Two-stage")]
    max_tokens: Option<usize>,
    /// Two-stage: nearest neighbours per document taken as candidates [default: 20].
    #[arg(long, help_heading = "Two-stage")]
    top_k: Option<usize>,
    /// Two-stage: find each document's true top-k by a full scan instead of the HNSW graph:
    /// slower, but the same candidates on every run and engine (up to which of several
    /// identical vectors tied at the k-th place is kept).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", help_heading = "Two-stage")]
    exact_search: Option<bool>,
    /// Two-stage: neighbours below this cosine are not candidates [default: 0.5].
    #[arg(long, allow_negative_numbers = true, help_heading = "Two-stage", value_parser = super::finite::<f32>)]
    min_cosine: Option<f32>,
    /// Two-stage: centre every vector on the mean of the first 8,192 documents' vectors before
    /// it is stored or searched: unrelated documents then point apart, which the HNSW graph
    /// needs, and the graph is built and walked on int8 codes, rescored with the full vectors
    /// (a kept index needs at least 1,000 documents to learn the centre from) [default: false].
    #[arg(long, num_args = 0..=1, default_missing_value = "true", help_heading = "Two-stage")]
    centre: Option<bool>,
    /// Two-stage: vector store [default: edge, or qdrant with --qdrant-url].
    #[arg(long, value_enum, help_heading = "Two-stage")]
    store: Option<StoreKind>,
    /// Two-stage: Qdrant server gRPC address, e.g. http://localhost:6334.
    #[arg(long, help_heading = "Two-stage")]
    qdrant_url: Option<String>,
    /// Two-stage: collection on the Qdrant server [default: neardup].
    #[arg(long, help_heading = "Two-stage")]
    collection: Option<String>,
    /// Two-stage: shards of a new server collection, spread over a cluster's nodes [default: 1].
    #[arg(long, help_heading = "Two-stage")]
    shards: Option<u32>,
    /// Two-stage: copies of each shard on a cluster [default: 1].
    #[arg(long, help_heading = "Two-stage")]
    replicas: Option<u32>,
    /// Two-stage: keep the vector index in this folder, for `neardup query` later; with
    /// --part, the shared index `neardup index` built.
    #[arg(long, help_heading = "Two-stage", value_parser = super::RecordedPath)]
    index: Option<PathBuf>,
    /// Two-stage: search and confirm only part I of N of the documents (e.g. 2/4) in the
    /// shared --index, and write its candidates for `neardup merge`.
    #[arg(long, value_name = "I/N", help_heading = "Two-stage")]
    part: Option<String>,
}

impl MethodFlags {
    /// The flags given, as setting keys and values.
    fn given(&self) -> serde_json::Map<String, Value> {
        let Ok(Value::Object(mut given)) = serde_json::to_value(self) else {
            unreachable!("flags serialise to a JSON object")
        };
        given.retain(|_, value| !value.is_null() && value != &Value::Array(Vec::new()));
        given
    }

    /// The folder given with `--index`.
    pub fn index_dir(&self) -> Option<PathBuf> {
        self.index.clone()
    }

    /// Refuses `--part` in a command that does not split (`index`, `serve`).
    pub fn refuse_part(&self, command: &str) -> Result<()> {
        match &self.part {
            Some(_) => Err(Error::Usage(format!(
                "--part splits `neardup dedup` over machines; `neardup {command}` takes no part"
            ))),
            None => Ok(()),
        }
    }

    /// The setting keys of the flags given (`num_perm` for `--num-perm`).
    pub fn given_keys(&self) -> Vec<String> {
        self.given().into_iter().map(|(key, _)| key).collect()
    }

    /// The method `name` with the flags given, read like a pipeline file's `[method]` table.
    pub fn method(&self, name: MethodName) -> Result<Method> {
        Method::from_settings(name, self.given()).map_err(as_flag_error)
    }

    /// The settings of the one method a command runs (`index`, `serve`: two-stage), from the
    /// flags given.
    pub fn config<T: MethodConfig>(&self) -> Result<T> {
        Method::config(self.given()).map_err(as_flag_error)
    }
}

/// A setting's error as the flags' error: `--num-perm: ...`.
fn as_flag_error(SettingError { key, message }: SettingError) -> Error {
    let message = as_flags(&message);
    Error::Usage(match key {
        Some(key) => format!("{}: {message}", flag(&key)),
        None => message,
    })
}

/// The flag of a setting key: `num_perm` is `--num-perm`.
pub(super) fn flag(key: &str) -> String {
    format!("--{}", key.replace('_', "-"))
}

/// A message about settings, with each quoted key (`` `num_perm` ``) written as its flag.
fn as_flags(message: &str) -> String {
    static KEY: LazyLock<Regex> =
        LazyLock::new(|| Regex::new("`([a-z][a-z_]*)`").expect("valid regex"));
    KEY.replace_all(message, |c: &regex::Captures<'_>| flag(&c[1]))
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        flags: MethodFlags,
    }

    /// The keys of every method, from their settings at defaults.
    fn method_keys() -> std::collections::BTreeSet<String> {
        let mut keys = std::collections::BTreeSet::new();
        for &name in <MethodName as clap::ValueEnum>::value_variants() {
            let Value::Object(map) = serde_json::to_value(Method::defaults(name)).unwrap() else {
                panic!("a method serialises to an object")
            };
            keys.extend(map.into_iter().map(|(k, _)| k).filter(|k| k != "name"));
        }
        keys
    }

    #[test]
    fn every_setting_has_its_flag_and_every_flag_a_setting() {
        let flags: std::collections::BTreeSet<String> = Flags::command()
            .get_arguments()
            .map(|a| a.get_id().to_string())
            .collect();
        assert_eq!(flags, method_keys());
    }

    #[test]
    fn flags_take_the_file_defaults_and_are_refused_by_methods_they_do_not_fit() {
        let parse = |args: &[&str]| {
            Flags::try_parse_from([&["x"], args].concat())
                .unwrap()
                .flags
        };
        assert_eq!(
            parse(&[]).method(MethodName::Minhash).unwrap(),
            Method::defaults(MethodName::Minhash)
        );
        let err = parse(&["--num-perm", "64"])
            .method(MethodName::Jaccard)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--num-perm: does not apply to method jaccard (it is a setting of minhash, two-stage)"),
            "{err}"
        );
        let err = parse(&["--ngram", "0"])
            .method(MethodName::Minhash)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("--ngram: ") && err.contains("nonzero"),
            "{err}"
        );
        let Method::TwoStage(config) = parse(&["--top-k", "5", "--threshold", "0.8"])
            .method(MethodName::TwoStage)
            .unwrap()
        else {
            panic!("two-stage")
        };
        assert_eq!(
            (config.top_k, config.settings.confirm.rule.threshold),
            (5, 0.8)
        );
    }
}
