//! `neardup explain`: why two records were, or were not, matched.

use std::path::Path;

use clap::Args;

use super::settings::MethodFlags;
use crate::error::{Error, Result};
use crate::index::{
    Explanation, IndexSettings, Side, explain_indexed, explain_records, find_two, minhash_settings,
    uncentre,
};
use crate::io::Record;
use crate::pipeline::{MinHashConfig, TwoStageConfig};

/// Show every piece of evidence the confirm stage weighs for two records (Jaccard exact and
/// estimated, containment both ways, title similarity, differing numbers, cosine), the rule
/// that decided, and a word diff.
#[derive(Debug, Args)]
#[command(
    mut_arg("part", |a| a.hide(true)),
    mut_arg("against", |a| a.hide(true)),
    mut_arg("add", |a| a.hide(true)),
    after_help = "Examples:\n  \
    neardup explain data/bibdedupe-sample.jsonl ID_A ID_B\n  \
    neardup explain --index idx/ ID_A ID_B\n  \
    neardup explain --text 'phase ii trial of x' --text 'phase iii trial of x' --method minhash")]
pub struct ExplainArgs {
    /// An input file followed by two ids in it; or, with --index, the two ids alone.
    args: Vec<String>,
    /// Two texts to compare instead of records (give --text twice).
    #[arg(long = "text", conflicts_with = "args")]
    texts: Vec<String>,
    /// Whose settings decide: two-stage (with the cosine of the embeddings) or minhash.
    #[arg(long, value_enum, default_value_t = ExplainMethod::TwoStage)]
    method: ExplainMethod,
    #[command(flatten)]
    input: crate::pipeline::InputSpec,
    #[command(flatten)]
    flags: MethodFlags,
    /// Print the evidence as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ExplainMethod {
    /// The two-stage settings: cosine, then the MinHash evidence.
    TwoStage,
    /// The MinHash evidence alone.
    Minhash,
}

pub fn run(args: ExplainArgs, models: &Path) -> Result<()> {
    args.flags.refuse_dedup_only("explain")?;
    // Whether the run's centring was left out, to say so once the answer is there.
    let mut uncentred = false;
    let explanation = match (args.flags.index_dir(), args.texts.len()) {
        (Some(dir), 0) => {
            let [a, b] = args.args.as_slice() else {
                return Err(Error::Usage("give two ids of the index".into()));
            };
            explain_indexed(&dir, [a, b], models)?
        }
        (Some(_), _) => {
            return Err(Error::Usage(
                "give two ids with --index, or two texts without it".into(),
            ));
        }
        (None, 2) => {
            let records = [
                Record::plain("text 1".into(), args.texts[0].clone()),
                Record::plain("text 2".into(), args.texts[1].clone()),
            ];
            let (settings, embeds, dropped) = settings(&args)?;
            uncentred = dropped;
            explain_records(&settings, embeds, records, models)?
        }
        (None, 0) => {
            let [path, a, b] = args.args.as_slice() else {
                return Err(Error::Usage(
                    "give an input file and two ids in it (or --index DIR and two ids, or --text twice)"
                        .into(),
                ));
            };
            // Settings are checked before the input is read: a refusal should not wait for it.
            let (settings, embeds, dropped) = settings(&args)?;
            let (inputs, read) = args.input.open(&[path.into()])?;
            let records = find_two(&inputs, &read, [a, b])?;
            uncentred = dropped;
            explain_records(&settings, embeds, records, models)?
        }
        (None, n) => {
            return Err(Error::Usage(format!(
                "give --text exactly twice, not {n} times"
            )));
        }
    };
    if uncentred {
        eprintln!(
            "note: the cosine is of the two vectors as made; a run centres them on its corpus \
             (explain two documents of a kept index with --index DIR for its cosine)"
        );
    }
    if args.json {
        let json = serde_json::to_string_pretty(&explanation).expect("serialisable");
        outln!("{json}");
    } else {
        out!("{}", render(&explanation));
    }
    Ok(())
}

/// The settings that decide, as `dedup` would take them from the same flags, whether the
/// method embeds, and whether it would have centred the vectors: two records carry no corpus
/// centre, so they are compared as made.
fn settings(args: &ExplainArgs) -> Result<(IndexSettings, bool, bool)> {
    let (mut settings, embeds) = match args.method {
        ExplainMethod::TwoStage => (args.flags.config::<TwoStageConfig>()?.settings, true),
        ExplainMethod::Minhash => (
            minhash_settings(args.flags.config::<MinHashConfig>()?.confirm),
            false,
        ),
    };
    let uncentred = embeds && uncentre(&mut settings);
    Ok((settings, embeds, uncentred))
}

/// Which figures the verdict rested on, and whether each is exact or estimated: an estimate
/// may sit on the other side of a threshold than the exact figure above it.
fn render(e: &Explanation) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for (name, side) in [("A", &e.a), ("B", &e.b)] {
        let title = side
            .title_words
            .map_or("no separate title".to_owned(), |n| {
                format!("title {n} words")
            });
        let _ = writeln!(
            out,
            "{name}  {}: {} distinct words, {title}, {}",
            side.id,
            side.words,
            if side.has_abstract {
                "with abstract"
            } else {
                "no abstract"
            }
        );
    }
    let _ = writeln!(out, "\nevidence");
    if let Some(j) = e.jaccard_exact {
        let _ = writeln!(out, "  jaccard, exact            {j:.3}");
    }
    let ev = &e.evidence;
    let _ = writeln!(out, "  jaccard, estimated        {:.3}", ev.jaccard);
    if let Some((a, b)) = e.containment_exact {
        let _ = writeln!(
            out,
            "  containment, exact        A in B {a:.3}, B in A {b:.3}"
        );
    }
    let _ = writeln!(
        out,
        "  containment, {}     {:.3} (the smaller in the larger; {})",
        if ev.containment_sampled {
            "sampled "
        } else {
            "estimated"
        },
        ev.containment,
        if ev.containment_sampled {
            "from the bottom-k word samples"
        } else {
            "from the signatures"
        }
    );
    match ev.title_jaccard {
        Some(t) => {
            let _ = writeln!(
                out,
                "  title jaccard             {t:.3} (notes removed; shorter title {} words)",
                ev.title_words
            );
        }
        None => {
            let _ = writeln!(
                out,
                "  title jaccard             - (a side has no separate title)"
            );
        }
    }
    let own = |s: &Side| {
        if s.own_numbers.is_empty() {
            "-".to_owned()
        } else {
            s.own_numbers.join(" ")
        }
    };
    let _ = writeln!(
        out,
        "  numbers differ            {} (only in A: {}; only in B: {}); in the titles: {}",
        if ev.numbers_differ { "yes" } else { "no" },
        own(&e.a),
        own(&e.b),
        match ev.title_numbers_differ {
            Some(true) => "yes",
            Some(false) => "no",
            None => "-",
        }
    );
    if let Some(c) = e.cosine {
        let _ = writeln!(out, "  cosine                    {c:.3}");
    }
    let _ = writeln!(
        out,
        "  smaller text              {} distinct words",
        ev.smaller
    );
    let _ = writeln!(
        out,
        "\nverdict: {} (rule `{}`: {})",
        if e.verdict.duplicate {
            "duplicate"
        } else {
            "not a duplicate"
        },
        e.verdict.rule.name(),
        e.rule_means
    );
    let _ = writeln!(
        out,
        "  decided on {}",
        e.verdict.rule.grounds(&e.evidence, e.jaccard_exact)
    );
    if let Some(weighing) = &e.learned {
        let _ = writeln!(
            out,
            "\nlearned weights (log-odds; 0 is an average candidate of the fitted pairs)\n  \
             {:<18} {:>8} {:>12}",
            "feature", "value", "adds"
        );
        let _ = writeln!(
            out,
            "  {:<18} {:>8} {:>+12.3}",
            "(intercept)", "", weighing.intercept
        );
        for term in &weighing.terms {
            let _ = writeln!(
                out,
                "  {:<18} {:>8.3} {:>+12.3}",
                term.feature, term.value, term.contribution
            );
        }
        let _ = writeln!(out, "  probability {:.3}", weighing.probability);
    }
    if let Some(d) = &e.diff {
        let _ = writeln!(out, "\ndiff ([-only in A-] {{+only in B+}})\n{d}");
    }
    out
}
