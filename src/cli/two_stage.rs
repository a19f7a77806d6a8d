//! Flags of the two-stage method, shared by `neardup dedup` and `neardup index`.

use std::path::PathBuf;

use clap::Args;

use crate::embed::EmbedderKind;
use crate::pipeline::{MethodName, MethodSpec};
use crate::store::StoreKind;

/// Embedder, vector store and candidate settings.
#[derive(Debug, Args)]
#[command(next_help_heading = "Two-stage (embeddings + vector index)")]
pub struct TwoStageArgs {
    /// Embedder [default: static].
    #[arg(long, value_enum)]
    embedder: Option<EmbedderKind>,
    /// Folder models are fetched to and read from.
    #[arg(long, env = "NEARDUP_MODELS", default_value = "models")]
    models: PathBuf,
    /// Use the model files in this folder instead of fetching (minilm: config.json,
    /// tokenizer.json, model.safetensors; static: a folder made by `neardup models fetch static`).
    #[arg(long)]
    model_dir: Option<PathBuf>,
    /// GloVe text file, for --embedder glove.
    #[arg(long)]
    glove: Option<PathBuf>,
    /// MiniLM: longest input in tokens [default: 128].
    #[arg(long)]
    max_tokens: Option<usize>,
    /// Nearest neighbours per document taken as candidates [default: 20].
    #[arg(long)]
    top_k: Option<usize>,
    /// Neighbours below this cosine are not candidates [default: 0.5].
    #[arg(long, allow_negative_numbers = true)]
    min_cosine: Option<f32>,
    /// Never confirm a document with fewer distinct shingles (words) than this: a title such
    /// as "editorial" matches every other "editorial" [default: 3].
    #[arg(long)]
    min_shingles: Option<u32>,
    /// Vector store [default: edge, or qdrant with --qdrant-url].
    #[arg(long, value_enum)]
    store: Option<StoreKind>,
    /// Qdrant server gRPC address, e.g. http://localhost:6334.
    #[arg(long)]
    qdrant_url: Option<String>,
    /// Collection on the Qdrant server [default: neardup].
    #[arg(long)]
    collection: Option<String>,
    /// Shards of a new server collection (spread over a cluster's nodes) [default: 1].
    #[arg(long)]
    shards: Option<u32>,
    /// Copies of each shard on a cluster [default: 1].
    #[arg(long)]
    replicas: Option<u32>,
}

impl TwoStageArgs {
    /// Writes the given settings into `spec` (left unset, they take the method's defaults).
    /// The models folder is an ambient setting (it may come from `NEARDUP_MODELS`), so it is
    /// passed on only to the method that uses it rather than refused by the others.
    pub fn apply(self, spec: &mut MethodSpec) {
        let defaulted = self.models == std::path::Path::new("models");
        spec.embedder = self.embedder;
        spec.models = (!defaulted && spec.name == MethodName::TwoStage).then_some(self.models);
        spec.model_dir = self.model_dir;
        spec.glove = self.glove;
        spec.max_tokens = self.max_tokens;
        spec.top_k = self.top_k;
        spec.min_cosine = self.min_cosine;
        spec.min_shingles = self.min_shingles;
        spec.store = self.store;
        spec.qdrant_url = self.qdrant_url;
        spec.collection = self.collection;
        spec.shards = self.shards;
        spec.replicas = self.replicas;
    }
}
