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
mod glove;
mod minilm;
pub mod models;
mod static_model;

pub use centre::{Centre, MIN_CENTRE_DOCUMENTS};
pub use glove::GloveEmbedder;
pub use minilm::MiniLm;
pub use static_model::{StaticEmbedder, derive_static};

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use tokenizers::{Tokenizer, TruncationParams};

use crate::error::{Error, Result};

/// Turns texts into unit vectors of a fixed length.
pub trait Embedder: Send + Sync {
    /// What this embedder is, for logs and index manifests (e.g. `static all-MiniLM-L6-v2`).
    fn describe(&self) -> String;

    /// Length of every vector.
    fn dimensions(&self) -> usize;

    /// Which model this is: its name and the sha256 of its weights, so that an index can tell
    /// when it is opened with other vectors than it was built with.
    fn identity(&self) -> &ModelIdentity;

    /// One unit vector per text, in order. An empty text gets a fixed unit vector, so that it
    /// can still be stored and searched (its MinHash confirmation will not pass).
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;

    /// [`Embedder::embed`] into `out`, whose lists an embedder may refill rather than make
    /// anew. For a caller embedding batch after batch: vectors made on the worker threads and
    /// freed on the caller's leave the allocator pages it gives back and must touch fresh (a
    /// third of a two-stage run's page faults at a million documents).
    fn embed_into(&self, texts: &[&str], out: &mut Vec<Vec<f32>>) -> Result<()> {
        *out = self.embed(texts)?;
        Ok(())
    }
}

/// A model's name (its folder or file name) and the sha256 of its weights file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelIdentity {
    /// E.g. `static-all-MiniLM-L6-v2`, `all-MiniLM-L6-v2`, `glove.6B.100d.txt`.
    pub name: String,
    /// sha256 of the weights (`static.safetensors`, `model.safetensors`, the GloVe file).
    pub sha256: String,
}

impl ModelIdentity {
    /// The identity of the model whose weights are `weights`, named by `named` (the file or
    /// the folder that holds it).
    fn of(weights: &Path, named: &Path) -> Result<Self> {
        Ok(ModelIdentity {
            name: named.file_name().map_or_else(
                || named.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            sha256: models::file_sha256(weights)?,
        })
    }
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

/// Splits `text` into pieces of at most about `size` bytes, each cut after a whitespace
/// character where there is one (so that a word tokenizer sees the same words as in the whole
/// text), else at a character boundary. Lets embedders read a long text a piece at a time.
fn pieces(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = rest.len().min(size.max(4));
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        if end < rest.len()
            && let Some(space) = rest[..end].rfind(char::is_whitespace)
        {
            let space_len = rest[space..].chars().next().map_or(1, char::len_utf8);
            end = space + space_len;
        }
        let (piece, after) = rest.split_at(end);
        rest = after;
        Some(piece)
    })
}

/// Loads `tokenizer.json` from `dir`. The file shipped with MiniLM hard-codes truncation and
/// padding to 128, so both are set here: truncation to `max_tokens` (none when `None`) and no
/// padding (every encoder here takes each text's real tokens only).
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
    tokenizer.with_padding(None);
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

#[cfg(test)]
mod piece_tests {
    use super::pieces;

    #[test]
    fn pieces_cover_the_text_and_cut_after_whitespace() {
        let text = "één twee drie vier vijf zes zeven acht";
        let parts: Vec<&str> = pieces(text, 10).collect();
        assert_eq!(parts.concat(), text);
        assert!(parts.iter().all(|p| p.len() <= 10), "{parts:?}");
        assert!(
            parts[..parts.len() - 1].iter().all(|p| p.ends_with(' ')),
            "{parts:?}"
        );
        // No whitespace: cut at character boundaries, never inside a character.
        let word = "ééééééééééé";
        let parts: Vec<&str> = pieces(word, 5).collect();
        assert_eq!(parts.concat(), word);
        assert!(parts.iter().all(|p| p.len() <= 5), "{parts:?}");
        assert_eq!(pieces("", 8).count(), 0);
    }
}
