//! neardup finds duplicate and near-duplicate documents in collections from a few hundred texts
//! to millions.
//!
//! The crate is organised by concept:
//! - [`text`]: words, stoplists and shingles;
//! - [`sketch`]: MinHash signatures, LSH banding, SimHash fingerprints;
//! - [`confirm`]: the evidence on a candidate pair and the rule that confirms it;
//! - [`embed`]: document embeddings (static token vectors, MiniLM through candle, GloVe);
//! - [`store`]: cosine vector stores (Qdrant embedded or a Qdrant server);
//! - [`similarity`]: exact measures (Jaccard, overlap, cosine) and the exact Jaccard join;
//! - [`index`]: searchable stores (n-gram resemblance, SimHash Hamming index);
//! - [`diff`]: word diffs of two documents with overlap ratios;
//! - [`group`]: confirmed pairs into duplicate groups with a representative each, and which
//!   member is kept;
//! - [`io`]: reading corpora (JSONL, CSV, folders and zips of text files) and writing results
//!   atomically;
//! - `matrix`: dense matrix products (the encoder's layers, the exact scan's cosines);
//! - `prefetch`: asking for memory ahead of scattered reads (confirming, writing candidates);
//! - [`pipeline`]: the deduplication methods end to end;
//! - [`export`]: input records written back out (kept records, an annotated copy) in the
//!   input's format;
//! - [`results`]: a run's output folder as one unit: its records, written and read back checked;
//! - [`serve`]: the index behind a JSON HTTP API;
//! - [`settings`]: typed settings from files, flags and manifests, with errors naming the key,
//!   and the declaration of every method setting;
//! - [`eval`]: scoring a run against labelled duplicates (the CORE 2020 metrics);
//! - [`synth`]: synthetic labelled corpora for tests and benchmarks;
//! - [`cli`]: the `neardup` command line, a thin layer over the above.

// Input errors carry their location and hint by value: they are rare, and boxing them would
// only move the cost to every construction site.
#![allow(clippy::result_large_err)]

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
pub mod store;
pub mod synth;
pub mod text;

pub use error::{Error, Result};
