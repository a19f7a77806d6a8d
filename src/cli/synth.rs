//! `neardup gen`: a synthetic labelled corpus in the CORE layout.

use std::path::PathBuf;

use clap::Args;

use crate::error::Result;
use crate::synth::Generator;

/// Generate a deterministic labelled corpus (CORE 2020 layout and duplicate distribution).
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  neardup gen --docs 100000 --seed 1 --out gen-100k.jsonl")]
pub struct GenArgs {
    /// Number of documents.
    #[arg(long)]
    docs: usize,
    /// Seed: the same seed gives the same corpus everywhere.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output JSONL file.
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: GenArgs) -> Result<()> {
    let generator = Generator::new(args.docs, args.seed);
    generator.write(&args.out)?;
    println!("{} documents -> {}", generator.len(), args.out.display());
    Ok(())
}
