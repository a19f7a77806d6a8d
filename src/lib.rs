//! neardup finds duplicate and near-duplicate documents in collections from a few hundred texts
//! to millions.
//!
//! The crate is organised by concept, in layers that import only downwards (docs/layout.md
//! declares them; `tests/layers.rs` checks them), from the bottom:
//! - [`error`], [`foreign`], [`progress`], `matrix` (dense matrix products), `prefetch` (memory
//!   asked for ahead of scattered reads): what everything uses;
//! - [`io`]: reading corpora (JSONL, CSV and TSV, folders and zips of text files, Parquet),
//!   scratch folders, locks, free space; [`spill`]: what waits on disk while a stage needs
//!   the memory;
//! - [`text`]: words, stoplists and shingles; [`output`]: everything a run writes (atomic files,
//!   the run folder, the input's records written back in its own format);
//! - [`sketch`]: MinHash signatures, LSH bands, SimHash fingerprints and their index;
//!   [`synth`]: synthetic labelled corpora; [`diff`]: word diffs; [`group`]: confirmed pairs
//!   into groups, and which member is kept;
//! - [`similarity`]: exact measures and the exact Jaccard join; [`eval`]: scoring a run against
//!   labelled duplicates (the CORE 2020 metrics);
//! - [`confirm`]: the evidence on a candidate pair and the rule that confirms it;
//!   [`embed`]: document embeddings (static token vectors, MiniLM through candle, GloVe);
//! - [`store`]: cosine vector stores (Qdrant embedded or a Qdrant server);
//! - [`search`]: each document's nearest neighbours (the graph, the exact scan, k-means cells);
//! - [`settings`]: the method names, the declaration of every method setting, and typed
//!   settings read from files, flags and manifests with errors naming the key;
//! - [`index`]: the two-stage document index, the n-gram resemblance store;
//! - [`pipeline`]: the deduplication methods end to end;
//! - [`serve`]: the index behind a JSON HTTP API;
//! - [`cli`]: the `neardup` command line, a thin layer over the above.

// Input errors carry their location and hint by value: they are rare, and boxing them would
// only move the cost to every construction site.
#![allow(clippy::result_large_err)]

pub mod allocator;
pub mod cancel;
pub mod cli;
pub mod confirm;
pub mod diff;
pub mod embed;
pub mod error;
pub mod eval;

pub mod foreign;
pub mod group;
pub mod index;
pub mod io;
mod matrix;
pub mod output;
pub mod pipeline;
mod prefetch;
pub mod progress;
pub mod search;
pub mod serve;
pub mod settings;
pub mod similarity;
pub mod sketch;
pub mod spill;
pub mod store;
pub mod synth;
pub mod text;

pub use error::{Error, Result};
