//! `neardup stream`: keep a document unless something already kept resembles it (the
//! Text::DeDuper loop), in one pass with memory for the kept n-grams only.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::error::{Error, Result};
use crate::index::{ResemblanceSettings, ResemblanceStore};
use crate::io::for_each_chunk;
use crate::output::AtomicFile;

/// Stream documents through a resemblance store: write each one unless an earlier kept
/// document resembles it, then remember it.
///
/// This is `dedup --method resemblance` (word 5-grams, above 0.2) in one pass, with memory for
/// the kept documents only. It keeps a slightly different set: a document is compared with the
/// documents kept before it, in input order, where `dedup` groups every resembling pair first
/// (and its default method is two-stage). On data/bibdedupe-sample.jsonl: `stream` keeps 948,
/// `dedup --method resemblance` 947, `dedup` 966.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  neardup stream crawl.jsonl --id-field url --text-field body --out unique.jsonl\n  \
    neardup stream today.jsonl --store store/ --out new-today.jsonl   # remembers earlier days"
)]
pub struct StreamArgs {
    /// Input files or folders.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Where the kept records go (JSONL); `-` writes them to standard output (and the
    /// summary to standard error).
    #[arg(long)]
    out: PathBuf,
    /// Also write `{"id", "similar_to", "resemblance"}` for every dropped document here.
    #[arg(long)]
    dropped: Option<PathBuf>,
    /// A store folder to start from (if it exists) and to save to at the end.
    #[arg(long)]
    store: Option<PathBuf>,
    #[command(flatten)]
    input: crate::pipeline::InputSpec,
    /// Words per n-gram.
    #[arg(long, default_value_t = crate::similarity::RESEMBLANCE_NGRAM.get())]
    ngram: usize,
    /// Resemblance above which a document counts as seen.
    #[arg(long, default_value_t = crate::similarity::RESEMBLANCE_THRESHOLD, allow_negative_numbers = true, value_parser = super::finite::<f64>)]
    threshold: f64,
    /// Stoplist file: one word a line.
    #[arg(long)]
    stoplist: Option<PathBuf>,
    /// Stop words given inline, comma-separated.
    #[arg(long, value_delimiter = ',')]
    stopwords: Vec<String>,
}

pub fn run(args: StreamArgs) -> Result<()> {
    let (inputs, read) = args.input.open(&args.inputs)?;
    let mut settings = ResemblanceSettings {
        ngram_size: args.ngram,
        threshold: args.threshold,
        stopwords: args.stopwords.clone(),
    };
    if let Some(path) = &args.stoplist {
        settings = settings.with_stoplist_file(path)?;
    }
    let mut store = match &args.store {
        Some(dir) if dir.join("store.bin").is_file() => {
            let store = ResemblanceStore::open(dir)?;
            if store.settings() != &settings {
                return Err(Error::Usage(format!(
                    "{}: the store was built with other settings ({:?}); use the same ones or another store",
                    dir.display(),
                    store.settings()
                )));
            }
            store
        }
        _ => ResemblanceStore::new(settings)?,
    };
    let to_stdout = args.out.as_os_str() == "-";
    let mut out_file = match to_stdout {
        true => None,
        false => Some(AtomicFile::create(&args.out)?),
    };
    let stdout = std::io::stdout();
    let mut out: Box<dyn Write + '_> = match &mut out_file {
        Some(file) => Box::new(file),
        None => Box::new(std::io::BufWriter::new(stdout.lock())),
    };
    let mut dropped_file = args
        .dropped
        .as_deref()
        .map(AtomicFile::create)
        .transpose()?;
    let (mut read_count, mut kept, mut dropped) = (0usize, 0usize, 0usize);
    let mut skipped = crate::io::SkipReport::default();
    for_each_chunk(&inputs, &read, "streaming", |chunk| {
        for raw in chunk {
            let record = match read.parse(&raw) {
                Ok(r) => r,
                Err(e) if read.skip_invalid => {
                    skipped.add(&e);
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            read_count += 1;
            let similar = store.find_similar(&record.text);
            if let Some((first, resemblance)) = similar.first() {
                dropped += 1;
                if let Some(file) = dropped_file.as_mut() {
                    let line = serde_json::json!({"id": record.id, "similar_to": first, "resemblance": resemblance});
                    writeln!(file, "{line}").map_err(|e| Error::io(file.target(), e))?;
                }
                continue;
            }
            if let Err(e) = store.add_doc(&record.id, &record.text) {
                let e = Error::input(
                    raw.location.clone(),
                    Some(&read.fields.id),
                    e.to_string(),
                    "ids must be unique",
                );
                if read.skip_invalid {
                    if let Error::Input(e) = &e {
                        skipped.add(e);
                    }
                    continue;
                }
                return Err(e);
            }
            kept += 1;
            let original = raw.original_json(&read.fields)?;
            out.write_all(&original)
                .and_then(|_| out.write_all(b"\n"))
                .map_err(|e| Error::io(&args.out, e))?;
        }
        Ok(())
    })?;
    out.flush().map_err(|e| Error::io(&args.out, e))?;
    drop(out);
    if let Some(file) = out_file {
        file.commit()?;
    }
    if let Some(file) = dropped_file {
        file.commit()?;
    }
    if let Some(dir) = &args.store {
        store.save(dir)?;
    }
    let summary = format!(
        "{read_count} documents read, {kept} kept, {dropped} dropped as resembling a kept one -> {}",
        match to_stdout {
            true => "standard output".into(),
            false => args.out.display().to_string(),
        }
    );
    match to_stdout {
        true => eprintln!("{summary}"),
        false => outln!("{summary}"),
    }
    super::report_skipped(&skipped);
    Ok(())
}
