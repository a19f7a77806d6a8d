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

use super::{Confirm, Method, MinHashConfig, ReadOptions, SetConfig, Shingling, SimHashConfig};
use crate::error::{Error, Location, Result};
use crate::eval::Predicted;
use crate::group::Linkage;
use crate::io::{FieldSpec, Input, InputFormat};
use crate::sketch::LshParams;
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
}

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
        misplaced("num_perm", self.num_perm.is_some(), &[Minhash])?;
        misplaced("seed", self.seed.is_some(), &[Minhash])?;
        misplaced("confirm", self.confirm.is_some(), &[Minhash])?;
        misplaced("bands", self.bands.is_some(), &[Minhash])?;
        misplaced("rows", self.rows.is_some(), &[Minhash])?;
        let banding = match (self.bands, self.rows) {
            (Some(bands), Some(rows)) => Some(LshParams { bands, rows }),
            (None, None) => None,
            _ => return Err(Error::Usage("give `bands` and `rows` together".into())),
        };
        misplaced(
            "threshold",
            self.threshold.is_some(),
            &[Minhash, Jaccard, Resemblance],
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
        let method = match self.name {
            Minhash => Method::MinHash(MinHashConfig {
                shingling,
                num_perm: self.num_perm.unwrap_or(minhash_defaults.num_perm),
                seed: self.seed.unwrap_or(minhash_defaults.seed),
                threshold: self.threshold.unwrap_or(minhash_defaults.threshold),
                confirm: self.confirm.unwrap_or(minhash_defaults.confirm),
                banding,
                linkage,
            }),
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
        };
        method.validate()?;
        Ok(method)
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
