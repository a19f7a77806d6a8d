//! `neardup dedup`: find duplicates, write pairs, groups and the unique records.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::error::Result;
use crate::group::KeepPolicy;
use crate::output::records::OutputFormat;
use crate::pipeline::{OutputSpec, PipelineSpec};
use crate::settings::MethodName;

/// Find duplicate groups; write pairs.jsonl, groups.jsonl, the records kept (unique.*), the
/// input annotated with each record's group (annotated.*) and summary.json.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    neardup dedup data/bibdedupe-sample.jsonl --out out/\n  \
    neardup dedup corpus.jsonl --embedder minilm --top-k 10 --index idx/ --out out/\n  \
    neardup dedup corpus.jsonl --method minhash --out out/\n  \
    neardup dedup docs.csv --id-field id --text-field title --text-field body --out out/\n  \
    neardup dedup records.jsonl --keep field:year:max --out out/\n  \
    neardup dedup articles/ --ngram 3 --stoplist stop.txt --threshold 0.5 --out out/\n  \
    neardup dedup corpus.jsonl --method jaccard --threshold 0.8 --linkage complete --out out/\n  \
    neardup dedup pages/ --method simhash --max-distance 3 --out out/")]
pub struct DedupArgs {
    /// Input files or folders (JSONL, CSV, TSV, a folder or .zip of text files).
    #[arg(required = true, value_parser = super::RecordedPath)]
    inputs: Vec<PathBuf>,
    /// Output folder (created if missing).
    #[arg(long, value_parser = super::RecordedPath)]
    out: PathBuf,
    /// Deduplication method.
    #[arg(long, value_enum, default_value_t = MethodName::TwoStage)]
    method: MethodName,
    /// Format of unique.* and annotated.*: jsonl, csv or tsv (CSV/TSV inputs), parquet
    /// (Parquet inputs) [default: the inputs' own; JSONL for folders, zips and mixed inputs].
    #[arg(long, value_enum, help_heading = "Output")]
    out_format: Option<OutputFormat>,
    /// Which member of each group unique.* keeps: representative (the most similar to the
    /// others), first (read first), longest (longest text), field:NAME:max or field:NAME:min
    /// (largest or smallest value of a field, e.g. field:year:max).
    #[arg(long, default_value = "representative", help_heading = "Output")]
    keep: KeepPolicy,
    /// Do not write annotated.*, the copy of the input with each record's group and fate.
    #[arg(long, help_heading = "Output")]
    no_annotate: bool,
    #[command(flatten)]
    input: super::InputArgs,
    #[command(flatten)]
    settings: super::settings::MethodFlags,
}

impl DedupArgs {
    fn into_spec(self) -> Result<PipelineSpec> {
        Ok(PipelineSpec {
            method: self.settings.method(self.method)?,
            input: self.input.spec(self.inputs),
            output: OutputSpec {
                format: self.out_format,
                keep: self.keep,
                annotate: !self.no_annotate,
                ..OutputSpec::new(self.out)
            },
            eval: None,
        })
    }
}

pub fn run(args: DedupArgs, models: &Path) -> Result<()> {
    super::run::execute(&args.into_spec()?, models)
}
