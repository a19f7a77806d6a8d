//! `neardup dedup`: find duplicates, write pairs, groups and the unique records.

use std::path::{Path, PathBuf};

use clap::Args;

use crate::error::Result;
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
    #[arg(required = true, value_parser = crate::settings::RecordedPath)]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    output: OutputSpec,
    /// Deduplication method.
    #[arg(long, value_enum, default_value_t = MethodName::TwoStage)]
    method: MethodName,
    #[command(flatten)]
    input: crate::pipeline::InputSpec,
    #[command(flatten)]
    settings: super::settings::MethodFlags,
}

impl DedupArgs {
    fn into_spec(self) -> Result<PipelineSpec> {
        Ok(PipelineSpec {
            method: self.settings.method(self.method)?,
            input: self.input.over(&self.inputs),
            output: self.output,
            eval: None,
        })
    }
}

pub fn run(args: DedupArgs, models: &Path) -> Result<()> {
    super::run::execute(args.into_spec()?, models)
}
