//! Every method setting, declared once.
//!
//! A setting is a key (`num_perm`) that a pipeline file's `[method]` table, a command-line flag
//! (`--num-perm`), an index's manifest and `summary.json` all use. Its value, default and range
//! belong to its method's settings type (`src/pipeline/`); what is declared here is what the
//! rest needs to know about it: its help, how a flag reads it, and where it applies (a setting
//! that shapes an index, one that says where things are on this machine, one that may be given
//! when serving). The command line builds its flags from [`SETTINGS`], and the split run and
//! `serve` check scopes with [`keys_in`].

use crate::confirm::{Confirm, NumberGuard};
use crate::embed::EmbedderKind;
use crate::group::Linkage;
use crate::sketch::Hashing;
use crate::store::StoreKind;

/// Where a setting applies beyond the run that gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Shapes a kept index: recorded in its manifest, and a part of a split run must give the
    /// index's value.
    Index,
    /// Says where things are on this machine (model files, the server): may differ between
    /// the machines of a split run.
    Local,
    /// May be given when serving an existing index (the others are its manifest's).
    Serving,
}

/// How a setting's value is read from the command line.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// A whole number (`usize`).
    Count,
    /// A whole number that fits 32 bits.
    Count32,
    /// A whole number that fits 64 bits.
    Count64,
    /// A finite number, possibly negative.
    Number,
    /// A finite number kept in 32 bits (cosines).
    Number32,
    /// A path neardup records (UTF-8 only).
    Path,
    /// Free text.
    Text,
    /// A comma-separated list of words.
    Words,
    /// `--flag` (true) or `--flag=false`.
    Switch,
    /// One of the names a type offers (`clap::ValueEnum`); the same names its settings take.
    Choice(fn() -> Vec<clap::builder::PossibleValue>),
}

/// One method setting, declared once: its key (the flag is `--key` with dashes), what it
/// means, how its value is read, and where it applies. The flag, its help (with the defaults
/// each method takes, read from the methods themselves) and the scope lists other commands
/// check come from here; the value's default and range are its method's settings type's
/// ([`crate::pipeline::Method::from_settings`]), as for a pipeline file's `[method]` table.
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    /// The key, in pipeline files, manifests and `summary.json`.
    pub key: &'static str,
    /// The group its flag is listed under in `--help`.
    pub heading: &'static str,
    /// What it means.
    pub help: &'static str,
    /// How its value is read.
    pub kind: Kind,
    /// Where it applies beyond the run.
    pub scopes: &'static [Scope],
    /// The default in words, where no one value says it (computed, or null until resolved).
    pub default: Option<&'static str>,
}

fn choices<T: clap::ValueEnum>() -> Vec<clap::builder::PossibleValue> {
    T::value_variants()
        .iter()
        .filter_map(|v| v.to_possible_value())
        .collect()
}

const fn setting(
    key: &'static str,
    heading: &'static str,
    help: &'static str,
    kind: Kind,
) -> Setting {
    Setting {
        key,
        heading,
        help,
        kind,
        scopes: &[Scope::Index],
        default: None,
    }
}

impl Setting {
    const fn scopes(mut self, scopes: &'static [Scope]) -> Self {
        self.scopes = scopes;
        self
    }

    const fn default(mut self, default: &'static str) -> Self {
        self.default = Some(default);
        self
    }
}

const SHINGLES: &str = "Shingles";
const MATCHING: &str = "Matching";
const MINHASH: &str = "MinHash";
const SIMHASH: &str = "SimHash";
const TWO_STAGE: &str = "Two-stage";

/// Every method setting. Adding a setting is a field in its method's settings type and a line
/// here; a test checks that the two agree.
pub const SETTINGS: &[Setting] = &[
    setting("ngram", SHINGLES, "Word n-gram size of the shingles", Kind::Count)
        .default("1; 5 for resemblance"),
    setting("char_ngram", SHINGLES, "Use character n-grams of this size instead of word n-grams", Kind::Count),
    setting("stoplist", SHINGLES, "Stoplist file: one word a line (# comments allowed)", Kind::Path),
    setting("stopwords", SHINGLES, "Stop words given inline, comma-separated", Kind::Words),
    setting("threshold", MATCHING, "Similarity threshold (minhash and two-stage: their evidence rule also matches titles; resemblance must exceed it)", Kind::Number),
    setting("linkage", MATCHING, "How pairs become groups: single (connected), complete (all pairs similar), star (all similar to the representative)", Kind::Choice(choices::<Linkage>)),
    setting("num_perm", MINHASH, "MinHash: number of permutations", Kind::Count),
    setting("seed", MINHASH, "MinHash: seed of the permutations", Kind::Count64),
    setting("hashing", MINHASH, "MinHash: how the slots are drawn: permutations (one a slot), one-permutation (one hash a word, cut into bins; cheaper, and as accurate on bib-dedupe)", Kind::Choice(choices::<Hashing>)),
    setting("bands", MINHASH, "MinHash: LSH bands, with --rows", Kind::Count)
        .default("chosen for the threshold and rule, 20 x 6 with the evidence rule"),
    setting("rows", MINHASH, "MinHash: slots per LSH band, with --bands", Kind::Count)
        .default("see --bands"),
    setting("confirm", MINHASH, "MinHash: how candidates are confirmed: evidence (whole-text Jaccard, titles, numbers, short texts), estimate (the Jaccard estimate alone), band", Kind::Choice(choices::<Confirm>)),
    setting("min_shingles", MINHASH, "MinHash, evidence rule: never confirm a text with fewer distinct words: a title such as \"editorial\" matches every other \"editorial\"", Kind::Count32),
    setting("title_threshold", MINHASH, "MinHash, evidence rule: title Jaccard (notes removed) that makes a title-only copy of a record a duplicate", Kind::Number),
    setting("containment", MINHASH, "MinHash, evidence rule: share of the smaller text's words found in the larger that makes two records with an abstract duplicates (a truncated abstract, a glued prefix, added boilerplate); 0 turns the rule off", Kind::Number),
    setting("number_guard", MINHASH, "MinHash, evidence rule: which numbers must agree: title (the titles' where both have one, else the whole texts'), text (every number), off", Kind::Choice(choices::<NumberGuard>)),
    setting("max_distance", SIMHASH, "SimHash: largest Hamming distance of a duplicate", Kind::Count32),
    setting("probes", SIMHASH, "SimHash: probe this many likeliest bit-flip sets per document instead of the exact search", Kind::Count),
    setting("embedder", TWO_STAGE, "Two-stage: embedder", Kind::Choice(choices::<EmbedderKind>)),
    setting("model_dir", TWO_STAGE, "Two-stage: use the model files in this folder instead of fetching (minilm: config.json, tokenizer.json, model.safetensors; static: a folder made by `neardup models fetch static`)", Kind::Path)
        .scopes(&[Scope::Local]),
    setting("glove", TWO_STAGE, "Two-stage: GloVe text file, for --embedder glove", Kind::Path)
        .scopes(&[Scope::Local]),
    setting("max_tokens", TWO_STAGE, "Two-stage: MiniLM's longest input in tokens", Kind::Count),
    setting("top_k", TWO_STAGE, "Two-stage: nearest neighbours per document taken as candidates", Kind::Count)
        .scopes(&[Scope::Index, Scope::Serving]),
    setting("exact_search", TWO_STAGE, "Two-stage: find each document's true top-k by a full scan instead of the HNSW graph: slower, but the same candidates on every run and engine (up to which of several identical vectors tied at the k-th place is kept)", Kind::Switch),
    setting("min_cosine", TWO_STAGE, "Two-stage: neighbours below this cosine are not candidates", Kind::Number32),
    setting("centre", TWO_STAGE, "Two-stage: centre every vector on the mean of the first 8,192 documents' vectors before it is stored or searched: unrelated documents then point apart, which the HNSW graph needs, and the graph is built and walked on int8 codes, rescored with the full vectors (a kept index needs at least 1,000 documents to learn the centre from)", Kind::Switch),
    setting("store", TWO_STAGE, "Two-stage: vector store", Kind::Choice(choices::<StoreKind>))
        .scopes(&[Scope::Local])
        .default("edge, or qdrant with --qdrant-url"),
    setting("qdrant_url", TWO_STAGE, "Two-stage: Qdrant server gRPC address, e.g. http://localhost:6334", Kind::Text)
        .scopes(&[Scope::Local, Scope::Serving]),
    setting("collection", TWO_STAGE, "Two-stage: collection on the Qdrant server", Kind::Text)
        .scopes(&[Scope::Local]),
    setting("shards", TWO_STAGE, "Two-stage: shards of a new server collection, spread over a cluster's nodes", Kind::Count32)
        .scopes(&[Scope::Local]),
    setting("replicas", TWO_STAGE, "Two-stage: copies of each shard on a cluster", Kind::Count32)
        .scopes(&[Scope::Local]),
    setting("index", TWO_STAGE, "Two-stage: keep the vector index in this folder, for `neardup query` later; with --part, the shared index `neardup index` built", Kind::Path)
        .scopes(&[Scope::Serving]),
    setting("part", TWO_STAGE, "Two-stage: search and confirm only part I of N of the documents (e.g. 2/4) in the shared --index, and write its candidates for `neardup merge`", Kind::Text)
        .scopes(&[]),
];

/// The keys of the settings that apply in `scope`.
pub fn keys_in(scope: Scope) -> impl Iterator<Item = &'static str> {
    SETTINGS
        .iter()
        .filter(move |s| s.scopes.contains(&scope))
        .map(|s| s.key)
}
