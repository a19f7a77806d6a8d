//! `neardup label`: teach the learned rule your own notion of duplicate, a pair at a time.

use std::collections::HashSet;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use clap::Args;

use super::settings::MethodFlags;
use crate::confirm::LearnedModel;
use crate::diff::{Tokens, diff};
use crate::error::{Error, Result};
use crate::pipeline::{Candidates, Labelling, PairLabels, TwoStageConfig};

/// Ask, in the terminal, about the candidate pairs of a corpus that the learned rule is least
/// sure of (active learning), saving each answer to --labels as it is given, and refitting
/// after each. Stop with q (or end of input); run again to go on. Then `neardup train --labels
/// FILE --corpus CORPUS`, or --out here, writes the model.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    neardup label corpus.jsonl --labels answers.jsonl --out model.json\n  \
    neardup dedup corpus.jsonl --match meaning --confirm-model model.json --out out/")]
pub struct LabelArgs {
    /// The corpus whose pairs to label (any input format).
    #[arg(value_parser = crate::settings::RecordedPath)]
    corpus: PathBuf,
    /// The answers: read first where the file exists, each new one appended as it is given.
    #[arg(long)]
    labels: PathBuf,
    /// Write the model fitted to the answers here when the session ends.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Characters of each text shown (the rest is cut).
    #[arg(long, default_value_t = 600)]
    show: usize,
    #[command(flatten)]
    input: crate::pipeline::InputSpec,
    #[command(flatten)]
    flags: MethodFlags,
}

/// What a person may answer.
enum Reply {
    Duplicate(bool),
    Pass,
    Stop,
}

fn reply(line: &str) -> Option<Reply> {
    match line.trim().to_lowercase().as_str() {
        "y" | "yes" => Some(Reply::Duplicate(true)),
        "n" | "no" => Some(Reply::Duplicate(false)),
        "s" | "skip" => Some(Reply::Pass),
        "q" | "quit" => Some(Reply::Stop),
        _ => None,
    }
}

pub fn run(args: LabelArgs, models: &Path) -> Result<()> {
    args.flags.refuse_dedup_only("label")?;
    let config: TwoStageConfig = args.flags.config()?;
    let mut labels = PairLabels::open(&args.labels)?;
    labels.check_appendable()?;
    // Labels that do not fit the corpus are refused before anything is asked.
    let candidates = Candidates::of(&args.corpus, &args.input, &config, models, true)?;
    let prior = match config.settings.confirm.learned_model()? {
        // A model given by name must weigh this embedder's cosines.
        Some(given) if given.embedder != candidates.embedder.0 => {
            return Err(Error::Usage(format!(
                "--confirm-model weighs the cosines of {}, and the candidates were searched \
                 with {}: give the embedder it was fitted with, or leave --confirm-model out",
                given.embedder, candidates.embedder.0
            )));
        }
        Some(given) => Some(given),
        None => {
            let shipped = LearnedModel::shipped();
            let fits = shipped.embedder == candidates.embedder.0;
            if !fits {
                tracing::warn!(
                    "the shipped model weighs the cosines of {}, not of {}: the questions start \
                     from no model (by cosine) until both kinds of answer are given",
                    shipped.embedder,
                    candidates.embedder.0
                );
            }
            fits.then_some(shipped)
        }
    };
    let labelling = Labelling {
        candidates: &candidates,
        corpus: &args.corpus,
        prior: prior.as_ref(),
    };
    let mut model = labelling.model(&labels)?;
    let (count, duplicates) = labels.counts();
    outln!(
        "{}: {} candidate pairs; {count} labelled in {} ({duplicates} duplicates). Answer y \
         (duplicate), n (not), s (skip) or q (quit).",
        args.corpus.display(),
        candidates.pairs.len(),
        args.labels.display()
    );
    let mut passed = HashSet::new();
    let mut lines = std::io::stdin().lock().lines();
    while let Some((i, probability)) = labelling.least_sure(&labels, model.as_ref(), &passed) {
        let (a, b) = candidates.pairs[i];
        let (a, b) = (a as usize, b as usize);
        let (count, duplicates) = labels.counts();
        let sure = probability.map_or_else(
            || format!("cosine {:.3}", candidates.features[i][0]),
            |p| format!("probability {p:.3}"),
        );
        outln!("\n[{count} labelled, {duplicates} duplicates] {sure}");
        for (name, doc) in [("A", a), ("B", b)] {
            outln!(
                "{name} {}: {}",
                candidates.ids[doc],
                cut(&candidates.texts[doc], args.show)
            );
        }
        let changes = diff(&candidates.texts[a], &candidates.texts[b], Tokens::Words);
        outln!("diff: {}", cut(changes.render(false).trim_end(), args.show));
        let answer = loop {
            out!("duplicate? [y/n/s/q] ");
            std::io::Write::flush(&mut std::io::stdout()).map_err(super::stdout_failed)?;
            let Some(line) = lines.next() else {
                break Reply::Stop;
            };
            let line = line.map_err(|e| Error::io(Path::new("standard input"), e))?;
            if let Some(answer) = reply(&line) {
                break answer;
            }
        };
        match answer {
            Reply::Duplicate(duplicate) => {
                labels.append(&candidates.ids[a], &candidates.ids[b], duplicate)?;
                model = labelling.model(&labels)?;
            }
            Reply::Pass => {
                passed.insert(i);
            }
            Reply::Stop => break,
        }
    }
    let (count, duplicates) = labels.counts();
    outln!(
        "\n{count} pairs labelled in {} ({duplicates} duplicates)",
        args.labels.display()
    );
    match (&args.out, &model) {
        // A prior moves with answers of one kind; a fit from nothing needs both.
        (Some(out), Some(fitted)) if count > 0 => {
            fitted.save(out)?;
            outln!(
                "wrote {}: use it with --match meaning --confirm-model {}",
                out.display(),
                out.display()
            );
        }
        (Some(out), _) => outln!(
            "no model written to {}: the answers need a duplicate and a pair that is not \
             (or a model to move: --confirm-model)",
            out.display()
        ),
        (None, _) => {}
    }
    Ok(())
}

/// `text` cut to `chars` characters, marked where cut.
fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
