//! Declarative pipelines: everything a run needs (inputs, fields, method and its settings,
//! output, optional scoring) in one TOML file, so a run can be repeated and reviewed.
//!
//! `neardup dedup` builds the same [`PipelineSpec`] from its flags, so a file and the command
//! line can never disagree on what a setting means. Relative paths are taken from the current
//! folder. Unknown keys are errors, so a typo cannot silently fall back to a default.
//!
//! ```toml
//! [input]
//! paths = ["data/bibdedupe-sample.jsonl"]
//! id_field = "core_id"
//! text_fields = ["processed_title", "processed_abstract"]
//!
//! [method]
//! name = "minhash"
//! threshold = 0.7
//!
//! [output]
//! dir = "out/minhash"
//!
//! [eval]
//! truth = "data/bibdedupe-sample.jsonl"
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{
    Confirm, Method, MinHashConfig, ReadOptions, SetConfig, Shingling, SimHashConfig,
    TwoStageConfig,
};
use crate::embed::{EmbedderKind, EmbedderOptions};
use crate::error::{Error, Location, Result};
use crate::eval::Predicted;
use crate::group::Linkage;
use crate::index::IndexSettings;
use crate::io::{FieldSpec, Input, InputFormat};
use crate::sketch::LshParams;
use crate::store::{ServerOptions, StoreKind};
use crate::text::{ShingleKind, Stoplist};

/// A whole run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineSpec {
    /// What to read.
    pub input: InputSpec,
    /// How to find duplicates.
    pub method: MethodSpec,
    /// Where results go.
    pub output: OutputSpec,
    /// Optional scoring against labelled duplicates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval: Option<EvalSpec>,
}

/// Inputs and their fields.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    /// Files or folders.
    pub paths: Vec<PathBuf>,
    /// Format, when the file names do not tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<InputFormat>,
    /// Field holding the id.
    #[serde(default = "default_id_field")]
    pub id_field: String,
    /// Fields joined into the text.
    #[serde(default = "default_text_fields")]
    pub text_fields: Vec<String>,
    /// Skip bad records instead of stopping.
    #[serde(default)]
    pub skip_invalid: bool,
}

impl InputSpec {
    /// The inputs, checked to exist.
    pub fn inputs(&self) -> Result<Vec<Input>> {
        if self.paths.is_empty() {
            return Err(Error::Usage("no input paths are given".into()));
        }
        self.paths
            .iter()
            .map(|p| Input::new(p, self.format))
            .collect()
    }

    /// How records are read.
    pub fn read_options(&self) -> ReadOptions {
        ReadOptions {
            fields: FieldSpec {
                id: self.id_field.clone(),
                text: self.text_fields.clone(),
            },
            skip_invalid: self.skip_invalid,
        }
    }
}

fn default_id_field() -> String {
    FieldSpec::default().id
}

fn default_text_fields() -> Vec<String> {
    FieldSpec::default().text
}

/// The methods a pipeline can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum MethodName {
    /// MinHash signatures + LSH (approximate Jaccard, fast at any size).
    Minhash,
    /// Exact Jaccard of shingle sets.
    Jaccard,
    /// Exact n-gram resemblance (Text::DeDuper: word 5-grams, above 0.2).
    Resemblance,
    /// SimHash fingerprints within a Hamming distance.
    Simhash,
    /// Embeddings in a vector index propose top-k candidates; MinHash confirms them.
    TwoStage,
}

/// The method and its settings, as written in a pipeline file or given on the command line.
/// Unset settings take the method's defaults; a setting that does not apply to the method is
/// an error rather than silently ignored.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MethodSpec {
    /// Which method.
    pub name: MethodName,
    /// Word n-gram size (default 1; 5 for resemblance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ngram: Option<usize>,
    /// Character n-gram size, instead of words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub char_ngram: Option<usize>,
    /// Stoplist file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stoplist: Option<PathBuf>,
    /// Inline stop words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopwords: Vec<String>,
    /// Similarity threshold (default 0.7; 0.2 for resemblance). Not for simhash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// MinHash permutations (default 128).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_perm: Option<usize>,
    /// MinHash permutation seed (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// MinHash: LSH bands (with `rows`; default: chosen for the threshold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bands: Option<usize>,
    /// MinHash: slots per LSH band (with `bands`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<usize>,
    /// MinHash confirmation rule (default estimate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<Confirm>,
    /// SimHash: largest Hamming distance of a duplicate (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_distance: Option<u32>,
    /// SimHash: probe this many likeliest flip sets per document instead of the exact search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<usize>,
    /// How pairs become groups (default single).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linkage: Option<Linkage>,
    /// Two-stage: the embedder (default static).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedder: Option<EmbedderKind>,
    /// Two-stage: folder where models are fetched to (default `models`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<PathBuf>,
    /// Two-stage: use the model in this folder instead of fetching one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_dir: Option<PathBuf>,
    /// Two-stage: GloVe text file (embedder glove).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glove: Option<PathBuf>,
    /// Two-stage: longest MiniLM input in tokens (default 128).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<usize>,
    /// Two-stage: neighbours per document taken as candidates (default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<usize>,
    /// Two-stage: neighbours below this cosine are not candidates (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cosine: Option<f32>,
    /// Two-stage: documents with fewer distinct shingles are never confirmed (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_shingles: Option<u32>,
    /// Two-stage: vector store (default edge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreKind>,
    /// Two-stage: Qdrant server gRPC address (store qdrant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qdrant_url: Option<String>,
    /// Two-stage: collection name on the server (default neardup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collection: Option<String>,
    /// Two-stage: shards of a new server collection (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<u32>,
    /// Two-stage: copies of each shard (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u32>,
    /// Two-stage: keep the index in this folder (for `neardup query`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<PathBuf>,
}

/// Neighbours per document the two-stage method considers by default.
pub const DEFAULT_TOP_K: usize = 20;
/// Fewest distinct shingles a document needs to be confirmed as a duplicate, by default:
/// measured on bib-dedupe, nearly all false pairs at Jaccard 0.7 are title-only records such as
/// "editorial", and two words of evidence are not enough.
pub const DEFAULT_MIN_SHINGLES: u32 = 3;
/// Cosine below which a neighbour is not a candidate, by default.
pub const DEFAULT_MIN_COSINE: f32 = 0.5;

impl MethodSpec {
    /// A spec naming `name` with every setting at its default.
    pub fn defaults(name: MethodName) -> Self {
        MethodSpec {
            name,
            ngram: None,
            char_ngram: None,
            stoplist: None,
            stopwords: Vec::new(),
            threshold: None,
            num_perm: None,
            bands: None,
            rows: None,
            seed: None,
            confirm: None,
            max_distance: None,
            probes: None,
            linkage: None,
            embedder: None,
            models: None,
            model_dir: None,
            glove: None,
            max_tokens: None,
            top_k: None,
            min_cosine: None,
            min_shingles: None,
            store: None,
            qdrant_url: None,
            collection: None,
            shards: None,
            replicas: None,
            index: None,
        }
    }

    /// The checked method (reads the stoplist file, if any).
    pub fn method(&self) -> Result<Method> {
        let misplaced = |setting: &str, given: bool, applies: &[MethodName]| -> Result<()> {
            if given && !applies.contains(&self.name) {
                return Err(Error::Usage(format!(
                    "`{setting}` does not apply to method {:?}",
                    self.name
                )));
            }
            Ok(())
        };
        use MethodName::*;
        for (setting, given) in [
            ("num_perm", self.num_perm.is_some()),
            ("seed", self.seed.is_some()),
            ("confirm", self.confirm.is_some()),
            ("bands", self.bands.is_some()),
            ("rows", self.rows.is_some()),
        ] {
            misplaced(setting, given, &[Minhash, TwoStage])?;
        }
        for (setting, given) in [
            ("embedder", self.embedder.is_some()),
            ("models", self.models.is_some()),
            ("model_dir", self.model_dir.is_some()),
            ("glove", self.glove.is_some()),
            ("max_tokens", self.max_tokens.is_some()),
            ("top_k", self.top_k.is_some()),
            ("min_cosine", self.min_cosine.is_some()),
            ("min_shingles", self.min_shingles.is_some()),
            ("store", self.store.is_some()),
            ("qdrant_url", self.qdrant_url.is_some()),
            ("collection", self.collection.is_some()),
            ("shards", self.shards.is_some()),
            ("replicas", self.replicas.is_some()),
            ("index", self.index.is_some()),
        ] {
            misplaced(setting, given, &[TwoStage])?;
        }
        let banding = match (self.bands, self.rows) {
            (Some(bands), Some(rows)) => Some(LshParams { bands, rows }),
            (None, None) => None,
            _ => return Err(Error::Usage("give `bands` and `rows` together".into())),
        };
        misplaced(
            "threshold",
            self.threshold.is_some(),
            &[Minhash, Jaccard, Resemblance, TwoStage],
        )?;
        misplaced("max_distance", self.max_distance.is_some(), &[Simhash])?;
        misplaced("probes", self.probes.is_some(), &[Simhash])?;
        if self.ngram.is_some() && self.char_ngram.is_some() {
            return Err(Error::Usage(
                "give either `ngram` or `char_ngram`, not both".into(),
            ));
        }

        let mut stoplist = Stoplist::from_words(&self.stopwords);
        if let Some(path) = &self.stoplist {
            stoplist.extend(Stoplist::from_file(path)?);
        }
        let default_ngram = if self.name == Resemblance { 5 } else { 1 };
        let kind = match self.char_ngram {
            Some(n) => ShingleKind::Chars(n),
            None => ShingleKind::Words(self.ngram.unwrap_or(default_ngram)),
        };
        let shingling = Shingling { kind, stoplist };
        let linkage = self.linkage.unwrap_or_default();
        let minhash_defaults = MinHashConfig::default();
        let minhash = |shingling| MinHashConfig {
            shingling,
            num_perm: self.num_perm.unwrap_or(minhash_defaults.num_perm),
            seed: self.seed.unwrap_or(minhash_defaults.seed),
            threshold: self.threshold.unwrap_or(minhash_defaults.threshold),
            confirm: self.confirm.unwrap_or(minhash_defaults.confirm),
            banding,
            linkage,
        };
        let method = match self.name {
            Minhash => Method::MinHash(minhash(shingling)),
            Jaccard => Method::Jaccard(SetConfig {
                shingling,
                threshold: self.threshold.unwrap_or(0.7),
                linkage,
            }),
            Resemblance => Method::Resemblance(SetConfig {
                shingling,
                threshold: self.threshold.unwrap_or(0.2),
                linkage,
            }),
            Simhash => Method::SimHash(SimHashConfig {
                shingling,
                max_distance: self.max_distance.unwrap_or(3),
                probes: self.probes,
                linkage,
            }),
            TwoStage => Method::TwoStage(self.two_stage(minhash(shingling))),
        };
        method.validate()?;
        Ok(method)
    }
}

impl MethodSpec {
    fn two_stage(&self, minhash: MinHashConfig) -> TwoStageConfig {
        let embedder_defaults = EmbedderOptions::default();
        let server = self.qdrant_url.as_ref().map(|url| ServerOptions {
            url: url.clone(),
            collection: self.collection.clone().unwrap_or_else(|| "neardup".into()),
            shards: self.shards.unwrap_or(1),
            replicas: self.replicas.unwrap_or(1),
        });
        TwoStageConfig {
            index: IndexSettings {
                embedder: EmbedderOptions {
                    kind: self.embedder.unwrap_or(embedder_defaults.kind),
                    models_root: self.models.clone().unwrap_or(embedder_defaults.models_root),
                    model_dir: self.model_dir.clone(),
                    glove: self.glove.clone(),
                    max_tokens: self.max_tokens.unwrap_or(embedder_defaults.max_tokens),
                    batch: embedder_defaults.batch,
                },
                store: self.store.unwrap_or(if server.is_some() {
                    StoreKind::Qdrant
                } else {
                    StoreKind::Edge
                }),
                server,
                minhash,
                min_cosine: self.min_cosine.unwrap_or(DEFAULT_MIN_COSINE),
                min_shingles: self.min_shingles.unwrap_or(DEFAULT_MIN_SHINGLES),
            },
            top_k: self.top_k.unwrap_or(DEFAULT_TOP_K),
            index_dir: self.index.clone(),
        }
    }
}

/// Where results go.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Output folder.
    pub dir: PathBuf,
}

/// Scoring after the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalSpec {
    /// Ground truth JSONL.
    pub truth: PathBuf,
    /// Which predicted set to score.
    #[serde(default = "default_predicted")]
    pub predicted: Predicted,
}

fn default_predicted() -> Predicted {
    Predicted::Groups
}

impl PipelineSpec {
    /// Reads a pipeline file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        toml::from_str(&text).map_err(|e| {
            let line = e
                .span()
                .map(|span| 1 + text[..span.start].matches('\n').count() as u64);
            let location = match line {
                Some(line) => Location::line(path, line),
                None => Location::file(path),
            };
            Error::input(
                location,
                None,
                e.message().to_owned(),
                "see pipelines/ for examples of every setting",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_pipelines_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("pipelines");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                PipelineSpec::load(&path).unwrap_or_else(|e| panic!("{e}"));
                seen += 1;
            }
        }
        assert!(seen >= 2);
    }

    #[test]
    fn settings_of_another_method_are_refused_and_defaults_differ_by_method() {
        let mut spec = MethodSpec::defaults(MethodName::Jaccard);
        spec.num_perm = Some(64);
        let err = spec.method().unwrap_err().to_string();
        assert!(err.contains("num_perm") && err.contains("Jaccard"), "{err}");
        let Method::Resemblance(r) = MethodSpec::defaults(MethodName::Resemblance)
            .method()
            .unwrap()
        else {
            panic!("resemblance")
        };
        assert_eq!(
            (r.shingling.kind, r.threshold),
            (ShingleKind::Words(5), 0.2)
        );
        let Method::SimHash(s) = MethodSpec::defaults(MethodName::Simhash).method().unwrap() else {
            panic!("simhash")
        };
        assert_eq!((s.max_distance, s.probes), (3, None));
    }

    #[test]
    fn defaults_fill_in_and_typos_are_named_with_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(&path, "[input]\npaths = [\"x.jsonl\"]\n[method]\nname = \"minhash\"\n[output]\ndir = \"out\"\n").unwrap();
        let spec = PipelineSpec::load(&path).unwrap();
        let Method::MinHash(config) = spec.method.method().unwrap() else {
            panic!("a minhash pipeline gives the minhash method")
        };
        assert_eq!((config.num_perm, config.threshold), (128, 0.7));
        assert_eq!(spec.input.read_options().fields, FieldSpec::default());

        std::fs::write(&path, "[input]\npaths = [\"x.jsonl\"]\n[method]\nname = \"minhash\"\nthreshhold = 0.8\n[output]\ndir = \"out\"\n").unwrap();
        let err = PipelineSpec::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("p.toml:5") && err.contains("unknown field `threshhold`"),
            "{err}"
        );
    }
}
