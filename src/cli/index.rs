//! `neardup index` builds a persistent two-stage index; `neardup query` asks it for the
//! duplicates of an indexed document or of a new text.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;

use crate::error::{Error, Result};
use crate::index::{DocumentIndex, Match};
use crate::pipeline::{self, TwoStageConfig};
use crate::settings::MethodName;

/// Build a persistent vector + MinHash index of a corpus, for `neardup query`.
#[derive(Debug, Args)]
#[command(
    mut_arg("part", |a| a.hide(true)),
    mut_arg("against", |a| a.hide(true)),
    mut_arg("add", |a| a.hide(true)),
    mut_arg("index", |a| a.required(true).help("Index folder (must not hold an index yet)")),
    after_help = "Examples:\n  \
    neardup index data/bibdedupe-sample.jsonl --index idx/\n  \
    neardup query --index idx/ --id stroke/id_0000001"
)]
pub struct IndexArgs {
    /// Input files or folders.
    #[arg(required = true, value_parser = crate::settings::RecordedPath)]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    input: crate::pipeline::InputSpec,
    /// The two-stage settings (the others are refused).
    #[command(flatten)]
    settings: super::settings::MethodFlags,
}

/// List the duplicates of an indexed document or a new text.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    neardup query --index idx/ --id stroke/id_0000001\n  \
    neardup query --index idx/ --text \"effect of aspirin on stroke recurrence\" --json")]
pub struct QueryArgs {
    /// Index folder made by `neardup index` (or `dedup --index`).
    #[arg(long)]
    index: PathBuf,
    /// The id of an indexed document.
    #[arg(long, conflicts_with_all = ["text", "text_file"], required_unless_present_any = ["text", "text_file"])]
    id: Option<String>,
    /// A new text.
    #[arg(long, conflicts_with = "text_file")]
    text: Option<String>,
    /// A file (or - for stdin) holding a new text.
    #[arg(long)]
    text_file: Option<PathBuf>,
    /// Neighbours to look at.
    #[arg(long, default_value_t = TwoStageConfig::default().top_k)]
    top_k: usize,
    /// The longest text --text-file reads, in bytes; a longer one is refused before more is
    /// read.
    #[arg(long, default_value_t = crate::io::DEFAULT_MAX_DOC_BYTES)]
    max_doc_bytes: usize,
    /// Also list neighbours that are not confirmed duplicates.
    #[arg(long)]
    all: bool,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run_index(args: IndexArgs, models: &Path) -> Result<()> {
    args.settings.refuse_dedup_only("index")?;
    let config: TwoStageConfig = args.settings.config()?;
    let dir = config
        .index_dir
        .ok_or_else(|| Error::Usage("--index DIR is required".into()))?;
    let (inputs, read) = args.input.open(&args.inputs)?;
    let clock = Instant::now();
    let built = pipeline::build_index(&inputs, &read, &config.settings, &dir, models)?;
    outln!(
        "{} documents indexed in {} ({:.2} s: embed {:.2}, upsert {:.2}, index build {:.2})",
        built.documents,
        dir.display(),
        clock.elapsed().as_secs_f64(),
        built.times.embed,
        built.times.upsert,
        built.times.index
    );
    super::report_skipped(&built.skipped);
    Ok(())
}

pub fn run_query(args: QueryArgs, models: &Path) -> Result<()> {
    crate::settings::check(MethodName::TwoStage, "top_k", args.top_k)?;
    let index = DocumentIndex::open(&args.index, models, None)?;
    let matches = match (&args.id, &args.text, &args.text_file) {
        (Some(id), _, _) => index.similar_to_id(id, args.top_k)?,
        (_, Some(text), _) => index.similar_to_text(text, args.top_k)?,
        (_, _, Some(path)) => {
            let text = super::read_text_arg(path, args.max_doc_bytes, Some("--max-doc-bytes"))?;
            index.similar_to_text(&text, args.top_k)?
        }
        _ => unreachable!("clap requires one of --id, --text, --text-file"),
    };
    let shown: Vec<&Match> = matches.iter().filter(|m| args.all || m.duplicate).collect();
    if args.json {
        for m in &shown {
            outln!("{}", serde_json::to_string(m).expect("a match serialises"));
        }
        return Ok(());
    }
    if shown.is_empty() {
        outln!(
            "no duplicates among the {} nearest documents{}",
            matches.len(),
            if args.all { "" } else { " (--all lists them)" }
        );
        return Ok(());
    }
    outln!("{:<40} {:>7} {:>8}  duplicate", "id", "cosine", "jaccard");
    for m in shown {
        outln!(
            "{:<40} {:>7.4} {:>8.4}  {}",
            m.id,
            m.cosine,
            m.jaccard_estimate,
            if m.duplicate { "yes" } else { "no" }
        );
    }
    Ok(())
}
