//! `neardup gen`: a synthetic labelled corpus in the CORE layout.

use std::path::PathBuf;

use clap::Args;

use crate::error::Result;
use crate::synth::Generator;

/// Generate a deterministic labelled corpus (CORE 2020 layout and duplicate distribution).
///
/// Besides copies with dropped, inserted and swapped words, repository prefixes and
/// truncation, it makes the partial duplicates of bibliographic data: 15% of the edited
/// copies of a record with an abstract keep the title only, 10% of edited copies get an erratum
/// or volume note after the title, and 3% of the records without duplicates are the next phase
/// or part of another record (one number changed: labelled not a duplicate).
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
