//! all-MiniLM-L6-v2 through candle: BERT forward pass, mean pooling over the attention mask,
//! L2 normalisation (what sentence-transformers does for this model).

use std::path::{Path, PathBuf};

use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::Config;
use tokenizers::Tokenizer;

use super::bert::Encoder;
use super::{Embedder, candle_error, load_tokenizer};
use crate::error::{Error, Result};

/// The MiniLM sentence model, ready to embed.
pub struct MiniLm {
    encoder: Encoder,
    tokenizer: Tokenizer,
    batch: usize,
    weights: PathBuf,
    dimensions: usize,
    identity: super::ModelIdentity,
    /// Bytes of a text's start that hold its first `max_tokens` tokens (see [`BYTES_PER_TOKEN`]).
    text_bytes: usize,
}

/// A bound on the bytes a token takes in text: WordPiece tokens of prose average 4 to 6 bytes,
/// so the first `32 * max_tokens` bytes hold every token the model reads, and the tokenizer
/// never sees the rest of a long document.
const BYTES_PER_TOKEN: usize = 32;

impl MiniLm {
    /// Loads `config.json`, `tokenizer.json` and `model.safetensors` from `dir`; texts are
    /// truncated to `max_tokens` and embedded `batch` at a time.
    pub fn open(dir: &Path, max_tokens: usize, batch: usize) -> Result<Self> {
        if max_tokens < 2 || batch == 0 {
            return Err(Error::Usage(
                "--max-tokens must be at least 2 and --batch at least 1".into(),
            ));
        }
        let config_path = dir.join("config.json");
        let config: Config = std::fs::read(&config_path)
            .map_err(|e| missing(&config_path, e))
            .and_then(|bytes| {
                serde_json::from_slice(&bytes).map_err(|e| {
                    Error::model(
                        format!("{}: not a BERT config: {e}", config_path.display()),
                        "give --model-dir the folder of a BERT sentence model",
                    )
                })
            })?;
        check_pooling(dir)?;
        let weights = dir.join("model.safetensors");
        if !weights.is_file() {
            return Err(missing(
                &weights,
                std::io::Error::from(std::io::ErrorKind::NotFound),
            ));
        }
        let device = device()?;
        // SAFETY: the weights file is memory-mapped read-only; neardup never writes to it
        // while a model is loaded.
        let vars = unsafe { VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, &device) }
            .map_err(|e| candle_error(&weights, e))?;
        let encoder = Encoder::load(vars, &config).map_err(|e| candle_error(&weights, e))?;
        let max_tokens = max_tokens.min(config.max_position_embeddings);
        let identity = super::ModelIdentity::of(&weights, dir)?;
        Ok(MiniLm {
            encoder,
            tokenizer: load_tokenizer(dir, Some(max_tokens))?,
            batch,
            weights,
            dimensions: config.hidden_size,
            identity,
            text_bytes: max_tokens * BYTES_PER_TOKEN,
        })
    }

    /// The tokenizer (truncating to the model's length, no padding).
    pub(crate) fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// Mean-pooled, normalised outputs for sequences of token ids (no padding).
    pub(crate) fn pooled(&self, sequences: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        self.encoder
            .pooled(sequences)
            .map_err(|e| candle_error(&self.weights, e))
    }
}

impl Embedder for MiniLm {
    fn describe(&self) -> String {
        format!("minilm {}", self.weights.display())
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn identity(&self) -> &super::ModelIdentity {
        &self.identity
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        // Texts of similar lengths in a batch: on a GPU, batches are padded to their longest.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut vectors = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(self.batch) {
            let batch: Vec<&str> = chunk
                .iter()
                .map(|&i| {
                    super::pieces(texts[i], self.text_bytes)
                        .next()
                        .unwrap_or("")
                })
                .collect();
            let encodings = self.tokenizer.encode_batch(batch, true).map_err(|e| {
                Error::model(
                    format!("tokenizing failed: {e}"),
                    "check the tokenizer.json",
                )
            })?;
            let sequences: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
            for (&i, vector) in chunk.iter().zip(self.pooled(&sequences)?) {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }
}

/// Refuses a sentence-transformers folder whose pooling (`1_Pooling/config.json`) is not the
/// mean of the token states, the one pooling this encoder does: a model trained to be read by
/// its first token (bge) would give vectors it was not trained for.
fn check_pooling(dir: &Path) -> Result<()> {
    let path = dir.join("1_Pooling").join("config.json");
    let Ok(bytes) = std::fs::read(&path) else {
        return Ok(());
    };
    let config: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(&bytes)
        .map_err(|e| {
            Error::model(
                format!("{}: not a pooling config: {e}", path.display()),
                "give --model-dir a sentence-transformers folder, or remove the file",
            )
        })?;
    let on = |field: &str| config.get(field).and_then(serde_json::Value::as_bool) == Some(true);
    let other = [
        "pooling_mode_cls_token",
        "pooling_mode_max_tokens",
        "pooling_mode_lasttoken",
    ]
    .into_iter()
    .chain([
        "pooling_mode_weightedmean_tokens",
        "pooling_mode_mean_sqrt_len_tokens",
    ])
    .find(|field| on(field));
    match (on("pooling_mode_mean_tokens"), other) {
        (true, None) => Ok(()),
        (_, Some(field)) => Err(Error::model(
            format!("{}: {field} is true", path.display()),
            "neardup pools by the mean of the token states only: give a model pooled so \
             (all-MiniLM-L6-v2, or another BERT sentence model pooled by the mean)",
        )),
        (false, None) => Err(Error::model(
            format!("{}: pooling_mode_mean_tokens is not true", path.display()),
            "neardup pools by the mean of the token states only: give a model pooled so",
        )),
    }
}

fn missing(path: &Path, e: std::io::Error) -> Error {
    Error::model(
        format!("cannot read {}: {e}", path.display()),
        "run `neardup models fetch minilm`, or give --model-dir a folder with config.json, \
         tokenizer.json and model.safetensors",
    )
}

/// The GPU when built with `cuda` and one is present, the CPU otherwise.
fn device() -> Result<Device> {
    #[cfg(feature = "cuda")]
    {
        Device::cuda_if_available(0)
            .map_err(|e| Error::model(e.to_string(), "check the CUDA setup"))
    }
    #[cfg(not(feature = "cuda"))]
    {
        Ok(Device::Cpu)
    }
}
