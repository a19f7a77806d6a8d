//! `neardup dedup`: find duplicates, write pairs, groups and the unique records.

use std::path::PathBuf;

use clap::Args;

use crate::error::Result;
use crate::group::Linkage;
use crate::pipeline::{Confirm, MethodName, MethodSpec, OutputSpec, PipelineSpec};

/// Find duplicate groups and write pairs.jsonl, groups.jsonl, unique.jsonl and summary.json.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    neardup dedup data/bibdedupe-sample.jsonl --out out/\n  \
    neardup dedup corpus.jsonl --embedder minilm --top-k 10 --index idx/ --out out/\n  \
    neardup dedup corpus.jsonl --method minhash --out out/\n  \
    neardup dedup docs.csv --id-field id --text-field title --text-field body --out out/\n  \
    neardup dedup articles/ --ngram 3 --stoplist stop.txt --threshold 0.5 --out out/\n  \
    neardup dedup corpus.jsonl --method jaccard --threshold 0.8 --linkage complete --out out/\n  \
    neardup dedup pages/ --method simhash --max-distance 3 --out out/")]
pub struct DedupArgs {
    /// Input files or folders (JSONL, CSV, TSV, a folder or .zip of text files).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Output folder (created if missing).
    #[arg(long)]
    out: PathBuf,
    /// Deduplication method.
    #[arg(long, value_enum, default_value_t = MethodName::TwoStage)]
    method: MethodName,
    #[command(flatten)]
    input: super::InputArgs,
    /// Word n-gram size of the shingles [default: 1; 5 for resemblance].
    #[arg(long)]
    ngram: Option<usize>,
    /// Use character n-grams of this size instead of word n-grams.
    #[arg(long, conflicts_with = "ngram")]
    char_ngram: Option<usize>,
    /// Stoplist file: one word a line (# comments allowed).
    #[arg(long)]
    stoplist: Option<PathBuf>,
    /// Stop words given inline, comma-separated.
    #[arg(long, value_delimiter = ',')]
    stopwords: Vec<String>,
    /// Similarity threshold [default: 0.7; 0.2 for resemblance, which must exceed it].
    #[arg(long)]
    threshold: Option<f64>,
    /// MinHash: number of permutations [default: 128].
    #[arg(long)]
    num_perm: Option<usize>,
    /// MinHash: seed of the permutations [default: 1].
    #[arg(long)]
    seed: Option<u64>,
    /// MinHash: LSH bands, with --rows [default: chosen for the threshold, 9 x 13 at 0.7].
    #[arg(long, requires = "rows")]
    bands: Option<usize>,
    /// MinHash: slots per LSH band, with --bands.
    #[arg(long, requires = "bands")]
    rows: Option<usize>,
    /// MinHash: how LSH candidates are confirmed [default: estimate].
    #[arg(long, value_enum)]
    confirm: Option<Confirm>,
    /// SimHash: largest Hamming distance of a duplicate [default: 3].
    #[arg(long)]
    max_distance: Option<u32>,
    /// SimHash: probe this many likeliest bit-flip sets per document instead of the exact search.
    #[arg(long)]
    probes: Option<usize>,
    /// How pairs become groups: single (connected), complete (all pairs similar), star (all
    /// similar to the representative) [default: single].
    #[arg(long, value_enum)]
    linkage: Option<Linkage>,
    /// Two-stage: keep the vector index in this folder, for `neardup query` later.
    #[arg(long)]
    index: Option<PathBuf>,
    #[command(flatten)]
    two_stage: super::two_stage::TwoStageArgs,
}

impl DedupArgs {
    fn into_spec(self) -> PipelineSpec {
        let mut method = MethodSpec {
            ngram: self.ngram,
            char_ngram: self.char_ngram,
            stoplist: self.stoplist,
            stopwords: self.stopwords,
            threshold: self.threshold,
            num_perm: self.num_perm,
            bands: self.bands,
            rows: self.rows,
            seed: self.seed,
            confirm: self.confirm,
            max_distance: self.max_distance,
            probes: self.probes,
            linkage: self.linkage,
            index: self.index,
            ..MethodSpec::defaults(self.method)
        };
        // Flags of the two-stage method are refused by the others only when given.
        self.two_stage.apply(&mut method);
        PipelineSpec {
            input: self.input.spec(self.inputs),
            method,
            output: OutputSpec { dir: self.out },
            eval: None,
        }
    }
}

pub fn run(args: DedupArgs) -> Result<()> {
    super::run::execute(&args.into_spec())
}
