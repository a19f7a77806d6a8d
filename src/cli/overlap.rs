//! `neardup overlap`: the pairwise overlap matrix of a group's documents.

use std::path::PathBuf;

use clap::Args;

use crate::error::{Error, Result};
use crate::similarity::overlap;

/// Print the pairwise overlap matrix of documents (row i, column j: the share of i's words that
/// j also has) and each document's mean overlap; the highest mean is the most representative.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  neardup overlap group/*.txt")]
pub struct OverlapArgs {
    /// The documents (two or more).
    #[arg(required = true, num_args = 2..)]
    files: Vec<PathBuf>,
}

pub fn run(args: OverlapArgs) -> Result<()> {
    let texts = args
        .files
        .iter()
        .map(|f| super::read_text_arg(f, super::COMPARED_TEXT_BYTES, None))
        .collect::<Result<Vec<_>>>()?;
    if args.files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
        return Err(Error::Usage(
            "only one document can come from standard input".into(),
        ));
    }
    let n = texts.len();
    let names: Vec<String> = args.files.iter().map(|f| f.display().to_string()).collect();
    let width = names.iter().map(String::len).max().unwrap_or(0).max(4);
    out!("{:w$}", "", w = width + 4);
    for j in 0..n {
        out!(" {:>7}", format!("[{}]", j + 1));
    }
    outln!(" {:>7}", "mean");
    let mut best = (f64::MIN, 0);
    for i in 0..n {
        out!(
            "{:width$}",
            format!("[{}] {}", i + 1, names[i]),
            width = width + 4
        );
        let mut sum = 0.0;
        for j in 0..n {
            let o = overlap(&texts[i], &texts[j]);
            if i != j {
                sum += o;
            }
            out!(" {o:>7.3}");
        }
        let mean = sum / (n - 1) as f64;
        outln!(" {mean:>7.3}");
        if mean > best.0 {
            best = (mean, i);
        }
    }
    outln!(
        "\nmost representative: {} (mean overlap {:.3})",
        names[best.1],
        best.0
    );
    Ok(())
}
