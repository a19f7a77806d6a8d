//! `neardup explain`: why two records were, or were not, matched.

use std::path::Path;

use clap::Args;
use serde::Serialize;

use super::settings::MethodFlags;
use crate::confirm::{Evidence, Verdict};
use crate::diff::{Tokens, diff};
use crate::embed;
use crate::error::{Error, Result};
use crate::index::{DocumentIndex, IndexSettings};
use crate::io::{Record, read_corpus};
use crate::pipeline::{MinHashConfig, TwoStageConfig};
use crate::similarity::{set_jaccard, shared_count};
use crate::text::{for_each_word, is_number_word};

/// Show every piece of evidence the confirm stage weighs for two records (Jaccard exact and
/// estimated, containment both ways, title similarity, differing numbers, cosine), the rule
/// that decided, and a word diff.
#[derive(Debug, Args)]
#[command(mut_arg("part", |a| a.hide(true)), after_help = "Examples:\n  \
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

/// One side of the comparison.
#[derive(Debug, Serialize)]
struct Side {
    id: String,
    /// Distinct words of the whole text.
    words: usize,
    /// Distinct words of the title, notes removed (where the input has a title).
    title_words: Option<usize>,
    has_abstract: bool,
    /// Number-like words only this side has.
    own_numbers: Vec<String>,
}

/// What `explain` reports.
#[derive(Debug, Serialize)]
struct Explanation {
    a: Side,
    b: Side,
    /// Exact Jaccard of the shingle sets, where the texts are known.
    jaccard_exact: Option<f64>,
    /// Exact share of each side's shingles found in the other, where the texts are known.
    containment_exact: Option<(f64, f64)>,
    cosine: Option<f32>,
    evidence: Evidence,
    verdict: Verdict,
    rule_means: &'static str,
    /// The word diff, where the texts are known.
    #[serde(skip)]
    diff: Option<String>,
}

pub fn run(args: ExplainArgs, models: &Path) -> Result<()> {
    // Whether the run's centring was left out, to say so once the answer is there.
    let mut uncentred = false;
    let explanation = match (args.flags.index_dir(), args.texts.len()) {
        (Some(dir), 0) => from_index(&dir, &args.args, models)?,
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
            from_records((settings, embeds), records, models)?
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
            let records = read_two(&args.input, Path::new(path), a, b)?;
            uncentred = dropped;
            from_records((settings, embeds), records, models)?
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
            IndexSettings {
                confirm: args.flags.config::<MinHashConfig>()?.confirm,
                min_cosine: -1.0,
                ..IndexSettings::default()
            },
            false,
        ),
    };
    let uncentred = embeds && settings.centre;
    // The centre is the mean of a corpus's first documents, which two records do not give.
    settings.centre &= !uncentred;
    Ok((settings, embeds, uncentred))
}

fn read_two(
    input: &crate::pipeline::InputSpec,
    path: &Path,
    a: &str,
    b: &str,
) -> Result<[Record; 2]> {
    let (inputs, read) = input.open(&[path.to_owned()])?;
    let mut found: [Option<Record>; 2] = [None, None];
    read_corpus(
        &inputs,
        &read,
        |record| (record.id == a || record.id == b).then(|| record.clone()),
        |record| {
            // The same id twice compares a record with itself.
            if let Some(record) = record {
                if record.id == b {
                    found[1] = Some(record.clone());
                }
                if record.id == a {
                    found[0] = Some(record);
                }
            }
        },
    )?;
    let [Some(first), Some(second)] = found else {
        let missing = if found[0].is_none() { a } else { b };
        return Err(Error::Usage(format!(
            "no record {missing:?} in {}; check the id (and --id-field)",
            path.display()
        )));
    };
    Ok([first, second])
}

fn from_records(
    (settings, embeds): (IndexSettings, bool),
    records: [Record; 2],
    models: &Path,
) -> Result<Explanation> {
    let confirmer = settings.confirmer()?;
    let (sketches, sets): (Vec<_>, Vec<Vec<u64>>) = records
        .iter()
        .map(|record| confirmer.sign_with_shingles(record))
        .unzip();
    let cosine = if embeds {
        let embedder = embed::load(&settings.embedder, models)?;
        let vectors = embedder.embed(&[&records[0].text, &records[1].text])?;
        Some(embed::cosine(&vectors[0], &vectors[1]))
    } else {
        None
    };
    let (evidence, verdict) = confirmer.confirm(
        sketches[0].as_ref(),
        sketches[1].as_ref(),
        cosine.unwrap_or(1.0),
    );
    let shared = shared_count(&sets[0], &sets[1]) as f64;
    let share = |set: &Vec<u64>| {
        if set.is_empty() {
            0.0
        } else {
            shared / set.len() as f64
        }
    };
    let numbers = records.each_ref().map(|r| number_words(&r.text));
    let side = |i: usize| Side {
        id: records[i].id.clone(),
        words: sets[i].len(),
        title_words: sketches[i].facts.title.as_ref().map(Vec::len),
        has_abstract: sketches[i].facts.body,
        own_numbers: numbers[i]
            .iter()
            .filter(|n| !numbers[1 - i].contains(n))
            .cloned()
            .collect(),
    };
    Ok(Explanation {
        a: side(0),
        b: side(1),
        jaccard_exact: Some(set_jaccard(&sets[0], &sets[1])),
        containment_exact: Some((share(&sets[0]), share(&sets[1]))),
        cosine,
        evidence,
        verdict,
        rule_means: verdict.rule.describe(),
        diff: Some(
            diff(&records[0].text, &records[1].text, Tokens::Words)
                .render(false)
                .trim_end()
                .to_owned(),
        ),
    })
}

fn from_index(dir: &Path, ids: &[String], models: &Path) -> Result<Explanation> {
    let [a, b] = ids else {
        return Err(Error::Usage("give two ids of the index".into()));
    };
    let index = DocumentIndex::open(dir, models, None)?;
    let docs = [index.document(a)?, index.document(b)?];
    let cosine = embed::cosine(&docs[0].vector, &docs[1].vector);
    let (evidence, verdict) =
        index.confirm(docs[0].payload.sketch(), docs[1].payload.sketch(), cosine);
    let side = |i: usize| Side {
        id: docs[i].payload.id.clone(),
        words: docs[i].payload.shingles as usize,
        title_words: docs[i].payload.facts.title.as_ref().map(Vec::len),
        has_abstract: docs[i].payload.facts.body,
        // The index keeps hashes of the numbers, not the words.
        own_numbers: Vec::new(),
    };
    Ok(Explanation {
        a: side(0),
        b: side(1),
        jaccard_exact: None,
        containment_exact: None,
        cosine: Some(cosine),
        evidence,
        verdict,
        rule_means: verdict.rule.describe(),
        diff: None,
    })
}

fn number_words(text: &str) -> Vec<String> {
    let mut numbers = Vec::new();
    for_each_word(text, |w| {
        if is_number_word(w) && !numbers.iter().any(|n| n == w) {
            numbers.push(w.to_owned());
        }
    });
    numbers
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
    if let Some(d) = &e.diff {
        let _ = writeln!(out, "\ndiff ([-only in A-] {{+only in B+}})\n{d}");
    }
    out
}
