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

use super::{Confirm, MinHashConfig, ReadOptions};
use crate::error::{Error, Location, Result};
use crate::eval::Predicted;
use crate::io::{FieldSpec, Input, InputFormat};
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

fn default_id_field() -> String {
    FieldSpec::default().id
}

fn default_text_fields() -> Vec<String> {
    FieldSpec::default().text
}

/// The method and its settings.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case", deny_unknown_fields)]
pub enum MethodSpec {
    /// MinHash + LSH.
    Minhash(MinHashSpec),
}

/// MinHash settings as written in a pipeline file; defaults as in [`MinHashConfig`].
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MinHashSpec {
    /// Word n-gram size.
    #[serde(default = "one")]
    pub ngram: usize,
    /// Character n-gram size, instead of words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub char_ngram: Option<usize>,
    /// Stoplist file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stoplist: Option<PathBuf>,
    /// Inline stop words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopwords: Vec<String>,
    /// Permutations.
    #[serde(default = "default_num_perm")]
    pub num_perm: usize,
    /// Permutation seed.
    #[serde(default = "one_u64")]
    pub seed: u64,
    /// Jaccard threshold.
    #[serde(default = "default_threshold")]
    pub threshold: f64,
    /// Confirmation rule.
    #[serde(default = "default_confirm")]
    pub confirm: Confirm,
}

fn one() -> usize {
    1
}
fn one_u64() -> u64 {
    1
}
fn default_num_perm() -> usize {
    MinHashConfig::default().num_perm
}
fn default_threshold() -> f64 {
    MinHashConfig::default().threshold
}
fn default_confirm() -> Confirm {
    MinHashConfig::default().confirm
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

    /// The inputs, checked to exist.
    pub fn inputs(&self) -> Result<Vec<Input>> {
        if self.input.paths.is_empty() {
            return Err(Error::Usage("the pipeline names no input paths".into()));
        }
        self.input
            .paths
            .iter()
            .map(|p| Input::new(p, self.input.format))
            .collect()
    }

    /// How records are read.
    pub fn read_options(&self) -> ReadOptions {
        ReadOptions {
            fields: FieldSpec {
                id: self.input.id_field.clone(),
                text: self.input.text_fields.clone(),
            },
            skip_invalid: self.input.skip_invalid,
        }
    }
}

impl MinHashSpec {
    /// The checked configuration (reads the stoplist file, if any).
    pub fn config(&self) -> Result<MinHashConfig> {
        let mut stoplist = Stoplist::from_words(&self.stopwords);
        if let Some(path) = &self.stoplist {
            stoplist.extend(Stoplist::from_file(path)?);
        }
        let shingle = match self.char_ngram {
            Some(n) => ShingleKind::Chars(n),
            None => ShingleKind::Words(self.ngram),
        };
        let config = MinHashConfig {
            shingle,
            stoplist,
            num_perm: self.num_perm,
            seed: self.seed,
            threshold: self.threshold,
            confirm: self.confirm,
        };
        config.validate()?;
        Ok(config)
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
    fn defaults_fill_in_and_typos_are_named_with_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(&path, "[input]\npaths = [\"x.jsonl\"]\n[method]\nname = \"minhash\"\n[output]\ndir = \"out\"\n").unwrap();
        let spec = PipelineSpec::load(&path).unwrap();
        let MethodSpec::Minhash(m) = &spec.method;
        let config = m.config().unwrap();
        assert_eq!((config.num_perm, config.threshold), (128, 0.7));
        assert_eq!(spec.read_options().fields, FieldSpec::default());

        std::fs::write(&path, "[input]\npaths = [\"x.jsonl\"]\n[method]\nname = \"minhash\"\nthreshhold = 0.8\n[output]\ndir = \"out\"\n").unwrap();
        let err = PipelineSpec::load(&path).unwrap_err().to_string();
        // The line is that of the `[method]` table holding the typo.
        assert!(
            err.contains("p.toml:3") && err.contains("unknown field `threshhold`"),
            "{err}"
        );
    }
}
