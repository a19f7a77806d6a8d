//! `neardup serve`: the index behind a JSON HTTP API.

use std::net::SocketAddr;
use std::path::Path;

use clap::Args;

use crate::error::{Error, Result};
use crate::index::DocumentIndex;
use crate::pipeline::TwoStageConfig;
use crate::serve::{ServeOptions, listen, serve};
use crate::settings::Scope;

/// Serve an index over HTTP: add documents, look up duplicates (see GET /openapi.json).
#[derive(Debug, Args)]
#[command(
    mut_arg("part", |a| a.hide(true)),
    mut_arg("against", |a| a.hide(true)),
    mut_arg("add", |a| a.hide(true)),
    mut_arg("index", |a| a.required(true).help(
        "Index folder: served if it holds an index, else a new empty index is made there with \
         the two-stage settings given")),
    after_help = "Examples:\n  \
    neardup index corpus.jsonl --index idx/ && neardup serve --index idx/\n  \
    neardup serve --index new-idx/ --embedder minilm\n  \
    curl -s localhost:8080/similar -d '{\"text\": \"aspirin and stroke\"}'\n  \
    NEARDUP_TOKEN=secret neardup serve --index idx/ --addr 0.0.0.0:8080"
)]
pub struct ServeArgs {
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
    #[arg(long, default_value_t = 4 << 20)]
    max_body: usize,
    /// Longest document or query text in bytes (413 above).
    #[arg(long, default_value_t = 1 << 20)]
    max_text_bytes: usize,
    /// Requests that embed and search at once; more get 503 with Retry-After [default: twice
    /// the cores].
    #[arg(long)]
    max_concurrent: Option<usize>,
    /// The index's settings: the two-stage flags make a new index; of an existing one,
    /// --top-k and --qdrant-url (the server may have moved) may be given.
    #[command(flatten)]
    settings: super::settings::MethodFlags,
}

pub fn run(args: ServeArgs, models: &Path) -> Result<()> {
    args.settings.refuse_dedup_only("serve")?;
    let mut config: TwoStageConfig = args.settings.config()?;
    let dir = config
        .index_dir
        .ok_or_else(|| Error::Usage("--index DIR is required".into()))?;
    let empty = holds_nothing(&dir)?;
    let listener = listen(args.addr)?;
    let index = if empty {
        // Served writes come one at a time; none is a corpus to learn a centre from.
        config.settings.centre = false;
        let mut index = DocumentIndex::create(&dir, &config.settings, models)?;
        index.finish()?;
        eprintln!(
            "made an empty index in {}, its vectors as made (an index built by `neardup index` \
             from 1,000 documents or more is centred on them)",
            dir.display()
        );
        index
    } else {
        let fixed: Vec<String> = args
            .settings
            .given_keys()
            .into_iter()
            // Settings an existing index may be served with; the others are its manifest's.
            .filter(|key| !crate::settings::keys_in(Scope::Serving).any(|k| k == key))
            .map(|key| super::settings::flag(&key))
            .collect();
        if !fixed.is_empty() {
            return Err(Error::Usage(format!(
                "{}: settings of a new index, and {} holds one (its settings are in its manifest); \
                 drop them, or give a new folder",
                fixed.join(", "),
                dir.display()
            )));
        }
        let url = config.settings.store.qdrant_url.as_deref();
        DocumentIndex::open(&dir, models, url)?
    };
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    serve(
        index,
        listener,
        &ServeOptions {
            addr: args.addr,
            token: args.token,
            public_reads: args.public_reads,
            max_body: args.max_body,
            max_text_bytes: args.max_text_bytes,
            max_concurrent: args.max_concurrent.unwrap_or(2 * cores),
            top_k: config.top_k,
        },
    )
}

/// Whether `dir` is missing or an empty folder (a new index goes there, as a database creates
/// its data folder); a folder with files that is not an index is refused when opened.
fn holds_nothing(dir: &Path) -> Result<bool> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => Ok(entries.next().is_none()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(Error::io(dir, e)),
    }
}
