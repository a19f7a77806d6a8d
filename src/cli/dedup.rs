//! `neardup dedup`: find duplicates, write pairs, groups and the unique records.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::error::Result;
use crate::io::{FieldSpec, InputFormat};
use crate::pipeline::{Confirm, InputSpec, MethodSpec, MinHashSpec, OutputSpec, PipelineSpec};

/// Deduplication methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Method {
    /// MinHash signatures, LSH banding, confirmation by Jaccard estimate.
    Minhash,
}

/// Find duplicate groups and write pairs.jsonl, groups.jsonl, unique.jsonl and summary.json.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    neardup dedup data/bibdedupe-sample.jsonl --out out/\n  \
    neardup dedup docs.csv --id-field id --text-field title --text-field body --out out/\n  \
    neardup dedup articles/ --ngram 3 --stoplist stop.txt --threshold 0.5 --out out/")]
pub struct DedupArgs {
    /// Input files or folders (JSONL, CSV, TSV, a folder or .zip of text files).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Output folder (created if missing).
    #[arg(long)]
    out: PathBuf,
    /// Deduplication method.
    #[arg(long, value_enum, default_value_t = Method::Minhash)]
    method: Method,
    /// Input format, if the file names do not tell.
    #[arg(long, value_enum)]
    format: Option<InputFormat>,
    /// Field (or column) holding the document id.
    #[arg(long, default_value = "core_id")]
    id_field: String,
    /// Field(s) joined with a space to make the text [default: processed_title processed_abstract].
    #[arg(long = "text-field")]
    text_fields: Vec<String>,
    /// Skip bad records (reporting how many and where) instead of stopping at the first.
    #[arg(long)]
    skip_invalid: bool,
    /// Word n-gram size of the shingles.
    #[arg(long, default_value_t = 1)]
    ngram: usize,
    /// Use character n-grams of this size instead of word n-grams.
    #[arg(long)]
    char_ngram: Option<usize>,
    /// Stoplist file: one word a line (# comments allowed).
    #[arg(long)]
    stoplist: Option<PathBuf>,
    /// Stop words given inline, comma-separated.
    #[arg(long, value_delimiter = ',')]
    stopwords: Vec<String>,
    /// Number of MinHash permutations.
    #[arg(long, default_value_t = 128)]
    num_perm: usize,
    /// Seed of the permutations.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Jaccard similarity at or above which two documents are duplicates.
    #[arg(long, default_value_t = 0.7)]
    threshold: f64,
    /// How LSH candidates are confirmed.
    #[arg(long, value_enum, default_value_t = Confirm::Estimate)]
    confirm: Confirm,
}

impl DedupArgs {
    fn into_spec(self) -> PipelineSpec {
        let method = match self.method {
            Method::Minhash => MethodSpec::Minhash(MinHashSpec {
                ngram: self.ngram,
                char_ngram: self.char_ngram,
                stoplist: self.stoplist,
                stopwords: self.stopwords,
                num_perm: self.num_perm,
                seed: self.seed,
                threshold: self.threshold,
                confirm: self.confirm,
            }),
        };
        PipelineSpec {
            input: InputSpec {
                paths: self.inputs,
                format: self.format,
                id_field: self.id_field,
                text_fields: if self.text_fields.is_empty() {
                    FieldSpec::default().text
                } else {
                    self.text_fields
                },
                skip_invalid: self.skip_invalid,
            },
            method,
            output: OutputSpec { dir: self.out },
            eval: None,
        }
    }
}

pub fn run(args: DedupArgs) -> Result<()> {
    super::run::execute(&args.into_spec())
}
