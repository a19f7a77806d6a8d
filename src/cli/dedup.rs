//! `neardup dedup`: find duplicates, write pairs, groups and the unique records.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::error::Result;
use crate::io::{FieldSpec, Input, InputFormat};
use crate::pipeline::{self, Confirm, MinHashConfig, ReadOptions};
use crate::text::{ShingleKind, Stoplist};

/// Deduplication methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Method {
    /// MinHash signatures, LSH banding, confirmation by Jaccard estimate.
    Minhash,
}

/// Find duplicate groups and write pairs.jsonl, groups.jsonl, unique.jsonl and summary.json.
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  neardup dedup data/bibdedupe-sample.jsonl --out out/\n  \
                        neardup dedup docs.csv --id-field id --text-field title --text-field body --out out/"
)]
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
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    minhash: MinHashArgs,
}

/// Where ids and text come from.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// Input format, if the file name does not tell.
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
}

impl InputArgs {
    fn fields(&self) -> FieldSpec {
        let default = FieldSpec::default();
        FieldSpec {
            id: self.id_field.clone(),
            text: if self.text_fields.is_empty() {
                default.text
            } else {
                self.text_fields.clone()
            },
        }
    }
}

/// MinHash settings.
#[derive(Debug, Args)]
pub struct MinHashArgs {
    /// Word n-gram size of the shingles.
    #[arg(long, default_value_t = 1)]
    ngram: usize,
    /// Use character n-grams of this size instead of word n-grams.
    #[arg(long, conflicts_with = "ngram")]
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

impl MinHashArgs {
    fn config(&self) -> Result<MinHashConfig> {
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

pub fn run(args: DedupArgs) -> Result<()> {
    let inputs = args
        .inputs
        .iter()
        .map(|p| Input::new(p, args.input.format))
        .collect::<Result<Vec<_>>>()?;
    let read = ReadOptions {
        fields: args.input.fields(),
        skip_invalid: args.input.skip_invalid,
    };
    let config = args.minhash.config()?;
    let dedup = match args.method {
        Method::Minhash => pipeline::minhash_dedup(&inputs, &read, &config)?,
    };
    let settings = serde_json::json!({
        "method": "minhash",
        "inputs": args.inputs,
        "id_field": read.fields.id,
        "text_fields": read.fields.text,
        "shingles": config.shingle.to_string(),
        "stopwords": config.stoplist.len(),
        "num_perm": config.num_perm,
        "seed": config.seed,
        "threshold": config.threshold,
        "confirm": config.confirm,
    });
    let summary = pipeline::write_results(&args.out, &inputs, &read, &dedup, settings)?;
    let total: f64 = [
        summary.seconds.sketch,
        summary.seconds.candidates,
        summary.seconds.confirm,
        summary.seconds.group,
        summary.write_seconds,
    ]
    .iter()
    .sum();
    println!(
        "{} documents, {} duplicate pairs, {} groups ({} documents), {} unique records kept -> {} ({:.2} s, {:.0} docs/s)",
        summary.documents,
        summary.pairs,
        summary.groups,
        summary.documents_in_groups,
        summary.unique,
        args.out.display(),
        total,
        summary.documents as f64 / total.max(1e-9),
    );
    if summary.skipped > 0 {
        eprintln!("skipped {} invalid records; the first:", summary.skipped);
        for problem in &summary.skipped_first {
            eprintln!("  {problem}");
        }
    }
    Ok(())
}
