//! `neardup groups`: threshold groups with a representative each, and optionally each group's
//! similarity matrix (the WebSty workflow). Holds the texts in memory: meant for collections
//! that a person will read through, up to some hundred thousand documents.

use std::path::PathBuf;

use clap::Args;

use crate::error::Result;
use crate::group::{Linkage, linked_groups};
use crate::io::read_corpus;
use crate::output::run::GroupRecord;
use crate::settings::MethodName;
use crate::similarity::{Measure, Scorer};

/// Group documents whose similarity reaches a threshold and print each group with its
/// representative (the member with the highest mean similarity to the others).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  neardup groups brexit/ --similarity cosine --threshold 0.7 --matrix\n  \
    neardup groups data/bibdedupe-sample.jsonl --similarity jaccard --threshold 0.8 --linkage complete"
)]
pub struct GroupsArgs {
    /// Input files or folders.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    input: crate::pipeline::InputSpec,
    /// How similarity is measured.
    #[arg(long, value_enum, default_value_t = Measure::Cosine)]
    similarity: Measure,
    /// Similarity at or above which two documents belong together.
    #[arg(long, default_value_t = crate::group::GROUPING_THRESHOLD, allow_negative_numbers = true, value_parser = super::finite::<f64>)]
    threshold: f64,
    /// How pairs become groups.
    #[arg(long, value_enum, default_value_t = Linkage::default())]
    linkage: Linkage,
    /// Print each group's pairwise similarity matrix.
    #[arg(long)]
    matrix: bool,
    /// One JSON object a group instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: GroupsArgs) -> Result<()> {
    // A similarity threshold, read as the `jaccard` method reads its own.
    crate::settings::check(MethodName::Jaccard, "threshold", args.threshold)?;
    let (inputs, read) = args.input.open(&args.inputs)?;
    let mut texts = Vec::new();
    let corpus = read_corpus(&inputs, &read, |r| r.text.clone(), |t| texts.push(t))?;
    let scorer = Scorer::new(args.similarity, &texts);
    drop(texts);
    let edges: Vec<(u32, u32)> = scorer
        .pairs(args.threshold)
        .iter()
        .map(|p| (p.0, p.1))
        .collect();
    let groups = linked_groups(&corpus.ids, &edges, args.linkage, |x, y| {
        scorer.score(x as usize, y as usize)
    });
    let ids = &corpus.ids;
    for (n, g) in groups.iter().enumerate() {
        let matrix: Vec<Vec<f64>> = g
            .members
            .iter()
            .map(|&x| {
                g.members
                    .iter()
                    .map(|&y| {
                        if x == y {
                            1.0
                        } else {
                            scorer.score(x as usize, y as usize)
                        }
                    })
                    .collect()
            })
            .collect();
        if args.json {
            let record = GroupRecord {
                group: n,
                representative: ids[g.representative as usize].clone(),
                representative_similarity: g.representative_similarity,
                kept: String::new(),
                size: g.members.len(),
                members: g.members.iter().map(|&m| ids[m as usize].clone()).collect(),
                matrix: args.matrix.then(|| matrix.clone()),
            };
            let line = serde_json::to_string(&record).expect("a group serialises");
            outln!("{line}");
            continue;
        }
        outln!(
            "group {}: {} documents, representative {} (mean similarity {:.3})",
            n + 1,
            g.members.len(),
            ids[g.representative as usize],
            g.representative_similarity
        );
        for &m in &g.members {
            let mark = if m == g.representative { "*" } else { " " };
            let to_rep = if m == g.representative {
                String::new()
            } else {
                format!("{:.3}", scorer.score(m as usize, g.representative as usize))
            };
            outln!("  {mark} {:<40} {to_rep}", ids[m as usize]);
        }
        if args.matrix {
            out!("    {:>6}", "");
            for j in 0..g.members.len() {
                out!(" {:>6}", format!("[{}]", j + 1));
            }
            outln!();
            for (i, row) in matrix.iter().enumerate() {
                out!("    {:>6}", format!("[{}]", i + 1));
                for v in row {
                    out!(" {v:>6.3}");
                }
                outln!();
            }
        }
        outln!();
    }
    if !args.json {
        let grouped: usize = groups.iter().map(|g| g.members.len()).sum();
        outln!(
            "{} documents, {} groups ({} documents), {} on their own",
            ids.len(),
            groups.len(),
            grouped,
            ids.len() - grouped
        );
    }
    super::report_skipped(&corpus.skipped);
    Ok(())
}
