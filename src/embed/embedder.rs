//! What an embedder is ([`Embedder`], [`ModelIdentity`]) and what every model shares: unit
//! vectors and their cosine, a long text read a piece at a time, the tokenizer, candle's errors.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
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
    pub(super) fn of(weights: &Path, named: &Path) -> Result<Self> {
        Ok(ModelIdentity {
            name: named.file_name().map_or_else(
                || named.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            sha256: file_sha256(weights)?,
        })
    }
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
pub(super) fn pieces(text: &str, size: usize) -> impl Iterator<Item = &str> {
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
pub(super) fn load_tokenizer(dir: &Path, max_tokens: Option<usize>) -> Result<Tokenizer> {
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
pub(super) fn candle_error(path: &Path, e: candle_core::Error) -> Error {
    Error::model(
        format!("{}: {e}", path.display()),
        "the model files may be damaged: delete the folder and run `neardup models fetch`",
    )
}

/// The sha256 of `path` in hex. Hashing a model file takes a moment (a GloVe file can be
/// gigabytes), so the digest is kept beside the file in `.NAME.sha256` with the file's length
/// and modification time, and reused while they are unchanged.
pub fn file_sha256(path: &Path) -> Result<String> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let stamp = format!("{} {modified}", meta.len());
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let cache = path.with_file_name(format!(".{name}.sha256"));
    if let Ok(text) = std::fs::read_to_string(&cache)
        && let Some((cached_stamp, digest)) = text.trim().rsplit_once(' ')
        && cached_stamp == stamp
    {
        return Ok(digest.to_owned());
    }
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(|e| Error::io(path, e))?;
    let digest = format!("{:x}", hasher.finalize());
    // A read-only models folder only costs the hashing next time.
    let keep = || -> Result<()> {
        let mut file = crate::output::AtomicFile::create(&cache)?;
        writeln!(file, "{stamp} {digest}").map_err(|e| Error::io(&cache, e))?;
        file.commit()
    };
    if let Err(e) = keep() {
        tracing::debug!(%e, "cannot keep the model file's digest");
    }
    Ok(digest)
}

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
