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
//! Model files are fetched by name ([`models`]) and never committed.

mod glove;
mod minilm;
pub mod models;
mod static_model;

pub use glove::GloveEmbedder;
pub use minilm::MiniLm;
pub use static_model::{StaticEmbedder, derive_static};

use std::path::{Path, PathBuf};

use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use crate::error::{Error, Result};

/// Turns texts into unit vectors of a fixed length.
pub trait Embedder: Send + Sync {
    /// What this embedder is, for logs and index manifests (e.g. `static all-MiniLM-L6-v2`).
    fn describe(&self) -> String;

    /// Length of every vector.
    fn dimensions(&self) -> usize;

    /// One unit vector per text, in order. An empty text gets a fixed unit vector, so that it
    /// can still be stored and searched (its MinHash confirmation will not pass).
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
}

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

/// Where an embedder's files are and how it runs.
#[derive(Clone, Debug)]
pub struct EmbedderOptions {
    /// Which embedder.
    pub kind: EmbedderKind,
    /// Folder that holds fetched models (`models/` by default).
    pub models_root: PathBuf,
    /// Use the model files in this folder instead of fetching (`minilm`, `static`).
    pub model_dir: Option<PathBuf>,
    /// GloVe text file (`glove`).
    pub glove: Option<PathBuf>,
    /// Longest input in tokens (`minilm`); longer texts are truncated.
    pub max_tokens: usize,
    /// Texts per forward pass (`minilm`).
    pub batch: usize,
}

impl Default for EmbedderOptions {
    fn default() -> Self {
        EmbedderOptions {
            kind: EmbedderKind::Static,
            models_root: PathBuf::from("models"),
            model_dir: None,
            glove: None,
            max_tokens: 128,
            batch: 64,
        }
    }
}

/// Loads the embedder `options` describe, fetching (and for `static`, deriving) its model on
/// first use.
pub fn load(options: &EmbedderOptions) -> Result<Box<dyn Embedder>> {
    Ok(match options.kind {
        EmbedderKind::Static => {
            let dir = match &options.model_dir {
                Some(dir) => dir.clone(),
                None => models::ensure_static(&options.models_root)?,
            };
            Box::new(StaticEmbedder::open(&dir)?)
        }
        EmbedderKind::Minilm => {
            let dir = match &options.model_dir {
                Some(dir) => dir.clone(),
                None => models::ensure_minilm(&options.models_root)?,
            };
            Box::new(MiniLm::open(&dir, options.max_tokens, options.batch)?)
        }
        EmbedderKind::Glove => {
            let path = options.glove.as_ref().ok_or_else(|| {
                Error::Usage(
                    "--embedder glove needs --glove FILE (a GloVe text file such as glove.6B.300d.txt)"
                        .into(),
                )
            })?;
            Box::new(GloveEmbedder::open(path)?)
        }
    })
}

/// Scales `v` to unit length; a zero vector becomes the first axis, so that every document
/// has a direction (cosine is undefined at zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter_mut().for_each(|x| *x /= norm);
    } else {
        v.iter_mut().for_each(|x| *x = 0.0);
        if let Some(first) = v.first_mut() {
            *first = 1.0;
        }
    }
}

/// Cosine of two unit vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Loads `tokenizer.json` from `dir`. The file shipped with MiniLM hard-codes truncation and
/// padding to 128, so both are set here: truncation to `max_tokens` (none when `None`) and
/// padding to the longest text of each batch.
fn load_tokenizer(dir: &Path, max_tokens: Option<usize>) -> Result<Tokenizer> {
    let path = dir.join("tokenizer.json");
    let mut tokenizer = Tokenizer::from_file(&path).map_err(|e| {
        Error::model(
            format!("cannot load {}: {e}", path.display()),
            "run `neardup models fetch minilm`, or give --model-dir a folder with tokenizer.json",
        )
    })?;
    let truncation = max_tokens.map(|max_length| TruncationParams {
        max_length,
        ..TruncationParams::default()
    });
    tokenizer
        .with_truncation(truncation)
        .map_err(|e| Error::model(format!("{}: {e}", path.display()), "check --max-tokens"))?;
    tokenizer.with_padding(Some(PaddingParams {
        strategy: PaddingStrategy::BatchLongest,
        ..PaddingParams::default()
    }));
    Ok(tokenizer)
}

/// A model-loading or inference failure from candle, with the file it concerns.
fn candle_error(path: &Path, e: candle_core::Error) -> Error {
    Error::model(
        format!("{}: {e}", path.display()),
        "the model files may be damaged: delete the folder and run `neardup models fetch`",
    )
}

#[cfg(test)]
pub(crate) mod tests;
