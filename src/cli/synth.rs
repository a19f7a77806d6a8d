//! `neardup gen`: a synthetic labelled corpus in the CORE layout.

use std::path::PathBuf;

use clap::Args;

use crate::error::{Error, Result};
use crate::synth::{DEFAULT_ABSTRACT_WORDS, Generator};

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
    /// Mean words in an abstract (uniform over 3/7 to 11/7 of it). CORE's full records,
    /// about 3 KB each, have some 250.
    #[arg(long, default_value_t = DEFAULT_ABSTRACT_WORDS)]
    abstract_words: usize,
    /// Output JSONL file.
    #[arg(long)]
    out: PathBuf,
}

/// The most documents `gen` writes: its plan keeps 12 bytes a document in memory (1.2 GB
/// here), and the corpus itself runs to some 100 GB at the default length.
const MAX_DOCS: usize = 100_000_000;
/// The longest mean abstract `gen` writes, in words (a long full text).
const MAX_ABSTRACT_WORDS: usize = 100_000;

pub fn run(args: GenArgs) -> Result<()> {
    if args.docs == 0 || args.docs > MAX_DOCS {
        return Err(Error::Usage(format!(
            "--docs {} is outside 1 to {MAX_DOCS}: gen plans every document in memory first",
            args.docs
        )));
    }
    if args.abstract_words == 0 || args.abstract_words > MAX_ABSTRACT_WORDS {
        return Err(Error::Usage(format!(
            "--abstract-words {} is outside 1 to {MAX_ABSTRACT_WORDS}",
            args.abstract_words
        )));
    }
    let generator = Generator::new(args.docs, args.seed).with_abstract_words(args.abstract_words);
    generator.write(&args.out)?;
    // With the corpus on standard output, the count goes beside it.
    outln!(to super::report_stream(Some(&args.out)); "{} documents -> {}", generator.len(), args.out.display());
    Ok(())
}
