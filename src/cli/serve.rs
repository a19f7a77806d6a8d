//! `neardup serve`: the index behind a JSON HTTP API.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::Args;

use crate::error::Result;
use crate::index::DocumentIndex;
use crate::serve::{ServeOptions, serve};

/// Serve an index over HTTP: add documents, look up duplicates (see GET /openapi.json).
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    neardup index corpus.jsonl --index idx/ && neardup serve --index idx/\n  \
    curl -s localhost:8080/similar -d '{\"text\": \"aspirin and stroke\"}'\n  \
    NEARDUP_TOKEN=secret neardup serve --index idx/ --addr 0.0.0.0:8080")]
pub struct ServeArgs {
    /// Index folder made by `neardup index` (an empty input makes an empty one).
    #[arg(long)]
    index: PathBuf,
    /// Address to listen on; loopback unless you say otherwise.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Every request but GET /health must carry `Authorization: Bearer TOKEN`.
    #[arg(long, env = "NEARDUP_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// With --token, let reads (/similar, duplicates, /stats, /openapi.json) through without it.
    #[arg(long, requires = "token")]
    public_reads: bool,
    /// Largest request body in bytes.
    #[arg(long, default_value_t = 10 * 1024 * 1024)]
    max_body: usize,
    /// Neighbours looked at per query.
    #[arg(long, default_value_t = crate::pipeline::DEFAULT_TOP_K)]
    top_k: usize,
    /// Qdrant server address to use instead of the one a server index was built with.
    #[arg(long)]
    qdrant_url: Option<String>,
}

pub fn run(args: ServeArgs, models: &Path) -> Result<()> {
    crate::pipeline::check_top_k(args.top_k)?;
    let index = DocumentIndex::open(&args.index, models, args.qdrant_url.as_deref())?;
    serve(
        index,
        &ServeOptions {
            addr: args.addr,
            token: args.token,
            public_reads: args.public_reads,
            max_body: args.max_body,
            top_k: args.top_k,
        },
    )
}
