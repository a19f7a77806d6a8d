//! Document embeddings: text in, a unit vector out, such that near-duplicates lie close in
//! cosine. They feed the first stage of the two-stage pipeline, where a vector index proposes
//! each document's nearest neighbours as candidates.
//!
//! Three embedders sit behind one [`Embedder`] trait:
//! - `static` (the CPU default): one vector per tokenizer token, derived once from
//!   all-MiniLM-L6-v2 and saved under `models/`; a document is the IDF-weighted mean of its
//!   tokens' vectors, centred. Thousands of documents a second on two cores.
//! - `minilm`: the full all-MiniLM-L6-v2 sentence model run through candle (mean pooling over the
//!   attention mask, L2-normalised), on the CPU or, with the `cuda` feature, a GPU.
//! - `glove`: averaged word vectors from a GloVe text file, the CORE notebook's embedding.
//!
//! Model files are fetched by name ([`models`]) and never committed. An index may also centre
//! every vector on its corpus's mean ([`Centre`]).

mod bert;
mod centre;
mod embedder;
mod glove;
mod minilm;
pub mod models;
mod static_model;

pub use centre::{Centre, MIN_CENTRE_DOCUMENTS};
pub use embedder::{Embedder, ModelIdentity, cosine, file_sha256, normalize};
use embedder::{candle_error, load_tokenizer, pieces};
pub use glove::GloveEmbedder;
pub use minilm::MiniLm;
pub use static_model::{StaticEmbedder, derive_static};

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Which embedder to use.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum EmbedderKind {
    /// Static token vectors derived from all-MiniLM-L6-v2 (fast; the default).
    Static,
    /// The all-MiniLM-L6-v2 sentence model through candle.
    Minilm,
    /// Averaged GloVe word vectors (`--glove FILE`).
    Glove,
}

/// The longest MiniLM input: BERT's position table has 512 rows.
pub const MAX_TOKENS_LIMIT: usize = 512;

/// Texts per MiniLM forward pass.
const MINILM_BATCH: usize = 64;

/// The embedder and its settings, as a pipeline file, the flags and an index manifest give
/// them. Where fetched models live is not among them: that belongs to the machine (see
/// [`models::default_root`]), not to a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedderSpec {
    /// Embedder.
    pub embedder: EmbedderKind,
    /// Use the model files in this folder instead of fetching (minilm: config.json,
    /// tokenizer.json, model.safetensors; static: a folder made by `neardup models fetch static`).
    pub model_dir: Option<PathBuf>,
    /// GloVe text file, for embedder glove.
    pub glove: Option<PathBuf>,
    /// MiniLM: longest input in tokens.
    pub max_tokens: usize,
}

impl Default for EmbedderSpec {
    /// The static vectors, fetched; MiniLM's input cut at its training length.
    fn default() -> Self {
        EmbedderSpec {
            embedder: EmbedderKind::Static,
            model_dir: None,
            glove: None,
            max_tokens: 128,
        }
    }
}

/// Whether vectors are centred on the corpus mean unless told (see [`Centre`]).
pub const CENTRE_BY_DEFAULT: bool = true;

impl EmbedderSpec {
    /// Checks that GloVe has its file.
    pub fn validate(&self) -> Result<()> {
        if self.embedder == EmbedderKind::Glove && self.glove.is_none() {
            return Err(Error::Usage(
                "embedder glove needs `glove` FILE (a GloVe text file such as glove.6B.300d.txt)"
                    .into(),
            ));
        }
        Ok(())
    }

    /// The same settings with file paths made absolute, so that an index built here can be
    /// opened from another folder.
    pub fn resolved(&self) -> Result<EmbedderSpec> {
        let absolute = |path: &Option<PathBuf>| -> Result<Option<PathBuf>> {
            path.as_deref()
                .map(|p| std::path::absolute(p).map_err(|e| Error::io(p, e)))
                .transpose()
        };
        Ok(EmbedderSpec {
            model_dir: absolute(&self.model_dir)?,
            glove: absolute(&self.glove)?,
            ..self.clone()
        })
    }
}

/// Loads the embedder `spec` describes, fetching (and for `static`, deriving) its model under
/// `models_root` on first use.
pub fn load(spec: &EmbedderSpec, models_root: &Path) -> Result<Box<dyn Embedder>> {
    spec.validate()?;
    Ok(match spec.embedder {
        EmbedderKind::Static => {
            let dir = match &spec.model_dir {
                Some(dir) => dir.clone(),
                None => models::ensure_static(models_root)?,
            };
            Box::new(StaticEmbedder::open(&dir)?)
        }
        EmbedderKind::Minilm => {
            let dir = match &spec.model_dir {
                Some(dir) => dir.clone(),
                None => models::ensure_minilm(models_root)?,
            };
            Box::new(MiniLm::open(&dir, spec.max_tokens, MINILM_BATCH)?)
        }
        EmbedderKind::Glove => {
            let path = spec
                .glove
                .as_ref()
                .ok_or_else(|| Error::Usage("embedder glove needs `glove` FILE".into()))?;
            Box::new(GloveEmbedder::open(path)?)
        }
    })
}

#[cfg(test)]
pub(crate) mod tests;
