//! `neardup jaccard`: the word-set Jaccard similarity of two texts.

use std::path::PathBuf;

use clap::Args;

use crate::error::Result;
use crate::similarity::jaccard;

/// Print the Jaccard similarity of the word sets of two files (or `-` for standard input).
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  neardup jaccard a.txt b.txt\n  \
    echo 'To nie jest pierwsze zdanie, tylko drugie.' | neardup jaccard - a.txt\n  \
    neardup jaccard --text 'bar foo' 'bar'            # 0.5")]
pub struct JaccardArgs {
    /// First file, or `-`.
    a: String,
    /// Second file, or `-`.
    b: String,
    /// Take the two arguments as the texts themselves, not file names.
    #[arg(long)]
    text: bool,
}

pub fn run(args: JaccardArgs) -> Result<()> {
    let (a, b) = if args.text {
        (args.a, args.b)
    } else {
        if args.a == "-" && args.b == "-" {
            return Err(crate::error::Error::Usage(
                "only one of the two texts can come from standard input".into(),
            ));
        }
        (
            super::read_text_arg(&PathBuf::from(&args.a), super::COMPARED_TEXT_BYTES, None)?,
            super::read_text_arg(&PathBuf::from(&args.b), super::COMPARED_TEXT_BYTES, None)?,
        )
    };
    outln!("{}", jaccard(&a, &b));
    Ok(())
}
