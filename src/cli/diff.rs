//! `neardup diff`: what two documents share and where they differ.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::diff::{Tokens, diff};
use crate::error::Result;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Color {
    /// Colour when standard output is a terminal and NO_COLOR is not set.
    Auto,
    Always,
    Never,
}

/// Show a word diff of two documents (in both / replaced / only on one side) and each side's
/// overlap ratio (shared tokens / tokens on that side).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  neardup diff a.txt b.txt\n  neardup diff a.txt b.txt --tokens lines --color never"
)]
pub struct DiffArgs {
    /// First document, or `-` for standard input.
    a: PathBuf,
    /// Second document, or `-`.
    b: PathBuf,
    /// What to compare.
    #[arg(long, value_enum, default_value_t = Tokens::Words)]
    tokens: Tokens,
    /// When to colour: red only in A, green only in B, yellow replaced. Without colour,
    /// `[-only in A-]` and `{+only in B+}`.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    color: Color,
}

pub fn run(args: DiffArgs) -> Result<()> {
    let a = super::read_text_arg(&args.a, super::COMPARED_TEXT_BYTES, None)?;
    let b = super::read_text_arg(&args.b, super::COMPARED_TEXT_BYTES, None)?;
    let d = diff(&a, &b, args.tokens);
    let color = match args.color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => super::colour_on(&std::io::stdout()),
    };
    outln!("{}", d.render(color).trim_end());
    outln!();
    outln!(
        "overlap {}: {:.3} of its tokens are shared",
        args.a.display(),
        d.overlap_a
    );
    outln!(
        "overlap {}: {:.3} of its tokens are shared",
        args.b.display(),
        d.overlap_b
    );
    Ok(())
}
