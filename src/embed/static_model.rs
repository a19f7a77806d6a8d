//! Static token vectors, model2vec-style: every vocabulary token is run once through MiniLM and
//! its pooled output kept; a document vector is then the IDF-weighted mean of its tokens'
//! vectors, minus the mean document vector, normalised. No transformer runs at embedding time.
//!
//! Why the weighting and centring: plain means of token vectors all point roughly the same way
//! (cosines of unrelated abstracts of 0.96-0.99), which leaves no room for a threshold. Weighting
//! by IDF lets the rare, telling tokens steer, and subtracting the common direction spreads
//! unrelated documents apart.

use std::cell::RefCell;
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use safetensors::{Dtype, SafeTensors, tensor::TensorView};
use thread_local::ThreadLocal;
use tokenizers::Tokenizer;

use super::{Embedder, MiniLm, load_tokenizer, normalize};
use crate::error::{Error, Result};
use crate::output::AtomicFile;
use crate::progress;

/// The file holding the token vectors, weights and mean in a static model folder.
pub const STATIC_FILE: &str = "static.safetensors";

/// Tokens per forward pass while deriving (each a three-token sequence).
const DERIVE_BATCH: usize = 512;
/// Bytes of text tokenized at a time when embedding (a long text is read in pieces).
const PIECE_BYTES: usize = 64 << 10;
/// Words each thread remembers the token ids of. Words follow Zipf's law, so a table this size
/// answers nearly every lookup; when it is full, new words are tokenized without being kept.
const CACHED_WORDS: usize = 1 << 18;
/// Longer words (rare, and often unique: URLs, DOIs, formulas) are tokenized every time.
const CACHED_WORD_BYTES: usize = 40;

/// A static embedder loaded from a folder with `static.safetensors` and `tokenizer.json`.
pub struct StaticEmbedder {
    tokenizer: Tokenizer,
    /// Row-major `[vocabulary, dimensions]`.
    vectors: Vec<f32>,
    /// Per-token weight (IDF).
    weights: Vec<f32>,
    /// Subtracted from every weighted mean.
    pub(super) mean: Vec<f32>,
    dimensions: usize,
    source: String,
    identity: super::ModelIdentity,
    /// Word -> token ids, one table per thread so that lookups take no lock; `None` tokenizes
    /// every word (the reference the cache is checked against).
    words: Option<ThreadLocal<RefCell<WordIds>>>,
}

/// Token ids of whitespace-separated words, as the tokenizer gives them.
type WordIds = FxHashMap<Box<str>, Box<[u32]>>;

impl StaticEmbedder {
    /// Opens the static model in `dir`.
    pub fn open(dir: &Path) -> Result<Self> {
        let path = dir.join(STATIC_FILE);
        let bytes = std::fs::read(&path).map_err(|e| {
            Error::model(
                format!("cannot read {}: {e}", path.display()),
                "run `neardup models fetch static`, or give --model-dir a folder made by it",
            )
        })?;
        let damaged = |what: String| {
            Error::model(
                format!("{}: {what}", path.display()),
                "delete the folder and run `neardup models fetch static` again",
            )
        };
        let tensors = SafeTensors::deserialize(&bytes).map_err(|e| damaged(e.to_string()))?;
        let read = |name: &str| -> Result<(Vec<usize>, Vec<f32>)> {
            let view = tensors
                .tensor(name)
                .map_err(|e| damaged(format!("tensor `{name}`: {e}")))?;
            if view.dtype() != Dtype::F32 {
                return Err(damaged(format!("tensor `{name}` is not f32")));
            }
            let values = view
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            Ok((view.shape().to_vec(), values))
        };
        let (shape, vectors) = read("vectors")?;
        let (_, weights) = read("weights")?;
        let (_, mean) = read("mean")?;
        let [vocabulary, dimensions] = shape[..] else {
            return Err(damaged("`vectors` is not a matrix".into()));
        };
        if weights.len() != vocabulary || mean.len() != dimensions {
            return Err(damaged("`weights` or `mean` does not fit `vectors`".into()));
        }
        let tokenizer = load_tokenizer(dir, None)?;
        if tokenizer.get_vocab_size(true) > vocabulary {
            return Err(damaged(format!(
                "tokenizer.json has {} tokens, the vectors {vocabulary}",
                tokenizer.get_vocab_size(true)
            )));
        }
        Ok(StaticEmbedder {
            tokenizer,
            vectors,
            weights,
            mean,
            dimensions,
            source: dir.display().to_string(),
            identity: super::ModelIdentity::of(&dir.join(STATIC_FILE), dir)?,
            words: Some(ThreadLocal::new()),
        })
    }

    /// This embedder without its word cache: every word goes through the tokenizer. The
    /// vectors are the same; benchmarks and tests compare against it.
    pub fn without_word_cache(mut self) -> Self {
        self.words = None;
        self
    }

    /// A streaming mean: the text is tokenized a piece at a time, so that a long document costs
    /// memory for one piece's tokens, not for all of them.
    fn embed_one(&self, text: &str, vector: &mut Vec<f32>) -> Result<()> {
        let mut sum = WeightedSum::new(&self.vectors, &self.weights, self.dimensions);
        self.each_token_run(text, |ids| sum.add(ids))?;
        sum.mean_into(Some(&self.mean), vector);
        Ok(())
    }

    /// Calls `f` with the token ids of `text`, in order, a run at a time: the ids the
    /// tokenizer gives the whole text. With the cache, a run is one whitespace-separated word:
    /// BERT's normalizer and pre-tokenizer never look across whitespace, so a text's ids are
    /// its words' ids end to end, and most words were seen before.
    pub(super) fn each_token_run(&self, text: &str, mut f: impl FnMut(&[u32])) -> Result<()> {
        let Some(words) = &self.words else {
            for piece in super::pieces(text, PIECE_BYTES) {
                f(&token_ids(&self.tokenizer, piece)?);
            }
            return Ok(());
        };
        let mut cache = words.get_or_default().borrow_mut();
        for piece in super::pieces(text, PIECE_BYTES) {
            for word in piece.split(char::is_whitespace).filter(|w| !w.is_empty()) {
                if let Some(ids) = cache.get(word) {
                    f(ids);
                    continue;
                }
                let ids = token_ids(&self.tokenizer, word)?;
                f(&ids);
                if word.len() <= CACHED_WORD_BYTES && cache.len() < CACHED_WORDS {
                    cache.insert(word.into(), ids.into());
                }
            }
        }
        Ok(())
    }
}

impl Embedder for StaticEmbedder {
    fn describe(&self) -> String {
        format!("static {}", self.source)
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn identity(&self) -> &super::ModelIdentity {
        &self.identity
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut vectors = Vec::new();
        self.embed_into(texts, &mut vectors)?;
        Ok(vectors)
    }

    fn embed_into(&self, texts: &[&str], out: &mut Vec<Vec<f32>>) -> Result<()> {
        out.resize_with(texts.len(), Vec::new);
        (texts.par_iter().zip(out.par_iter_mut()))
            .try_for_each(|(text, vector)| self.embed_one(text, vector))
    }
}

fn token_ids(tokenizer: &Tokenizer, text: &str) -> Result<Vec<u32>> {
    let encoding = tokenizer
        .encode(text, false)
        .map_err(|e| Error::model(format!("tokenizing failed: {e}"), "check tokenizer.json"))?;
    Ok(encoding.get_ids().to_vec())
}

/// A running IDF-weighted sum of token vectors, for the mean of a text read in pieces. Tokens
/// are added in `f32` into a block that is folded into an `f64` total every [`BLOCK_TOKENS`]
/// tokens: a long document sums hundreds of thousands of vectors, and `f32` rounding over all
/// of them would be amplified by the centring that follows. A block's tokens wait until it is
/// full (or the text ends) and are then added together ([`add_rows`]).
struct WeightedSum<'m> {
    /// Row-major `[vocabulary, dimensions]`, and each token's weight.
    vectors: &'m [f32],
    weights: &'m [f32],
    sum: Vec<f64>,
    block: Vec<f32>,
    /// The block's tokens, not added yet.
    pending: Vec<u32>,
    total: f64,
}

/// Tokens summed in `f32` before the block is folded into the `f64` total.
const BLOCK_TOKENS: usize = 256;

impl<'m> WeightedSum<'m> {
    fn new(vectors: &'m [f32], weights: &'m [f32], dimensions: usize) -> Self {
        WeightedSum {
            vectors,
            weights,
            sum: vec![0.0; dimensions],
            block: vec![0.0; dimensions],
            pending: Vec::with_capacity(BLOCK_TOKENS),
            total: 0.0,
        }
    }

    /// Adds the vectors of tokens `ids`, each by its weight.
    fn add(&mut self, ids: &[u32]) {
        let mut rest = ids;
        while !rest.is_empty() {
            let room = BLOCK_TOKENS - self.pending.len();
            let (now, later) = rest.split_at(rest.len().min(room));
            // The weights of each run of tokens are summed apart, then added to the total.
            let weight = (now.iter()).fold(0.0, |t, &id| t + f64::from(self.weights[id as usize]));
            self.total += weight;
            self.pending.extend_from_slice(now);
            if self.pending.len() == BLOCK_TOKENS {
                self.fold();
            }
            rest = later;
        }
    }

    /// Adds the block's tokens and moves the block into the `f64` total.
    fn fold(&mut self) {
        add_rows(&mut self.block, self.vectors, self.weights, &self.pending);
        self.pending.clear();
        for (s, b) in self.sum.iter_mut().zip(&mut self.block) {
            *s += f64::from(*b);
            *b = 0.0;
        }
    }

    /// The weighted mean, less `centre` if given, normalised, written over `mean`.
    fn mean_into(mut self, centre: Option<&[f32]>, mean: &mut Vec<f32>) {
        self.fold();
        mean.clear();
        mean.extend(
            (self.sum.iter()).map(|&s| if self.total > 0.0 { s / self.total } else { 0.0 } as f32),
        );
        if self.total > 0.0
            && let Some(centre) = centre
        {
            mean.iter_mut().zip(centre).for_each(|(m, c)| *m -= c);
        }
        normalize(mean);
    }
}

/// Dimensions summed at a time in [`add_rows`] with AVX2: their sums stay in eight of its
/// sixteen registers while every token's row passes.
const ROW_CHUNK: usize = 64;
/// The same with AVX-512, which has 32 registers, each twice as wide: eight of them.
const WIDE_ROW_CHUNK: usize = 128;

/// Adds the rows of `vectors` for tokens `ids` into `block`, each times its weight. A token's
/// products are added in token order, a multiply and then an add (no fused multiply-add), so
/// the sums are the same however wide the vector instructions: compiled for AVX-512 or AVX2
/// where the CPU has it, plain otherwise.
pub(super) fn add_rows(block: &mut [f32], vectors: &[f32], weights: &[f32], ids: &[u32]) {
    let add = row_kernels().find_map(|(_, kernel)| kernel);
    add.expect("plain code runs anywhere")(block, vectors, weights, ids)
}

/// A way of adding rows: [`add_rows`] or one of the kernels it chooses from.
pub(super) type AddRows = fn(&mut [f32], &[f32], &[f32], &[u32]);

/// The ways [`add_rows`] chooses from, fastest first, by the instruction set each needs:
/// `None` where this CPU lacks it. Plain code comes last and runs anywhere.
pub(super) fn row_kernels() -> impl Iterator<Item = (&'static str, Option<AddRows>)> {
    #[cfg(target_arch = "x86_64")]
    let vector: [(&str, Option<AddRows>); 2] = [
        (
            "avx512f",
            // SAFETY: given out only where the CPU has been checked to support AVX-512F.
            std::is_x86_feature_detected!("avx512f")
                .then_some(|b, v, w, i| unsafe { add_rows_avx512(b, v, w, i) }),
        ),
        (
            "avx2",
            // SAFETY: given out only where the CPU has been checked to support AVX2.
            std::is_x86_feature_detected!("avx2")
                .then_some(|b, v, w, i| unsafe { add_rows_avx2(b, v, w, i) }),
        ),
    ];
    #[cfg(not(target_arch = "x86_64"))]
    let vector: [(&str, Option<AddRows>); 0] = [];
    let plain: AddRows = add_rows_plain;
    vector.into_iter().chain([("plain", Some(plain))])
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn add_rows_avx512(block: &mut [f32], vectors: &[f32], weights: &[f32], ids: &[u32]) {
    add_rows_in::<WIDE_ROW_CHUNK>(block, vectors, weights, ids)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn add_rows_avx2(block: &mut [f32], vectors: &[f32], weights: &[f32], ids: &[u32]) {
    add_rows_in::<ROW_CHUNK>(block, vectors, weights, ids)
}

fn add_rows_plain(block: &mut [f32], vectors: &[f32], weights: &[f32], ids: &[u32]) {
    add_rows_in::<ROW_CHUNK>(block, vectors, weights, ids)
}

/// [`add_rows`], `CHUNK` dimensions at a time.
#[inline(always)]
fn add_rows_in<const CHUNK: usize>(
    block: &mut [f32],
    vectors: &[f32],
    weights: &[f32],
    ids: &[u32],
) {
    let d = block.len();
    let add_row = |sums: &mut [f32], start: usize, id: u32| {
        let id = id as usize;
        let weight = weights[id];
        let row = &vectors[id * d + start..][..sums.len()];
        sums.iter_mut()
            .zip(row)
            .for_each(|(s, &x)| *s += weight * x);
    };
    let mut chunks = block.chunks_exact_mut(CHUNK);
    for (chunk, block) in chunks.by_ref().enumerate() {
        let mut sums = [0f32; CHUNK];
        sums.copy_from_slice(block);
        for &id in ids {
            add_row(&mut sums, chunk * CHUNK, id);
        }
        block.copy_from_slice(&sums);
    }
    let tail = chunks.into_remainder();
    let start = d - tail.len();
    for &id in ids {
        add_row(tail, start, id);
    }
}

/// Derives a static model from `model` into `dir`: each vocabulary token's pooled output
/// (reduced by PCA to `dimensions` when that is below the model's width), IDF weights counted
/// over `reference` texts, and the mean of the references' weighted vectors. Writes
/// `static.safetensors` and `tokenizer.json`, each atomically.
pub fn derive_static(
    model: &MiniLm,
    reference: &[String],
    dimensions: usize,
    dir: &Path,
) -> Result<()> {
    let tokenizer = model.tokenizer();
    let vocabulary = tokenizer.get_vocab_size(true);
    let special = |token: &str| {
        tokenizer.token_to_id(token).ok_or_else(|| {
            Error::model(
                format!("the tokenizer has no {token} token"),
                "derive static vectors from a BERT-style model",
            )
        })
    };
    let (cls, sep) = (special("[CLS]")?, special("[SEP]")?);

    let bar = progress::items(vocabulary as u64, "tokens");
    let mut vectors = Vec::with_capacity(vocabulary * model.dimensions());
    let all: Vec<u32> = (0..vocabulary as u32).collect();
    for chunk in all.chunks(DERIVE_BATCH) {
        let ids: Vec<[u32; 3]> = chunk.iter().map(|&t| [cls, t, sep]).collect();
        let sequences: Vec<&[u32]> = ids.iter().map(|s| s.as_slice()).collect();
        for row in model.pooled(&sequences)? {
            vectors.extend(row);
        }
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    let (vectors, dimensions) = if dimensions < model.dimensions() {
        (pca(&vectors, model.dimensions(), dimensions), dimensions)
    } else {
        (vectors, model.dimensions())
    };

    let mut plain = tokenizer.clone();
    plain
        .with_truncation(None)
        .map_err(|e| Error::model(format!("tokenizer: {e}"), "check tokenizer.json"))?;
    let documents: Vec<Vec<u32>> = reference
        .par_iter()
        .map(|text| token_ids(&plain, text))
        .collect::<Result<_>>()?;
    let weights = idf(&documents, vocabulary);
    let mut mean = vec![0f32; dimensions];
    let mut v = Vec::with_capacity(dimensions);
    for ids in &documents {
        let mut sum = WeightedSum::new(&vectors, &weights, dimensions);
        sum.add(ids);
        sum.mean_into(None, &mut v);
        mean.iter_mut().zip(&v).for_each(|(m, x)| *m += x);
    }
    mean.iter_mut()
        .for_each(|m| *m /= documents.len().max(1) as f32);

    write_static(
        dir,
        &vectors,
        &weights,
        &mean,
        vocabulary,
        dimensions,
        reference.len(),
    )?;
    let mut file = AtomicFile::create(&dir.join("tokenizer.json"))?;
    let json = tokenizer
        .to_string(false)
        .map_err(|e| Error::model(format!("tokenizer: {e}"), "check tokenizer.json"))?;
    file.write_all(json.as_bytes())
        .map_err(|e| Error::io(file.target(), e))?;
    file.commit()
}

/// Projects the rows of `vectors` (`width` wide) onto their `dimensions` principal axes, after
/// centring them. Fewer dimensions make the vector index faster to build and search; the
/// leading axes keep most of the variance, so neighbours change little.
pub(super) fn pca(vectors: &[f32], width: usize, dimensions: usize) -> Vec<f32> {
    let rows = vectors.len() / width;
    let mut mean = vec![0f64; width];
    for row in vectors.chunks_exact(width) {
        mean.iter_mut()
            .zip(row)
            .for_each(|(m, &x)| *m += f64::from(x));
    }
    mean.iter_mut().for_each(|m| *m /= rows.max(1) as f64);
    let centred = nalgebra::DMatrix::from_fn(rows, width, |r, c| {
        f64::from(vectors[r * width + c]) - mean[c]
    });
    let covariance = centred.transpose() * &centred / rows.max(1) as f64;
    let eigen = covariance.symmetric_eigen();
    let mut order: Vec<usize> = (0..width).collect();
    order.sort_by(|&a, &b| eigen.eigenvalues[b].total_cmp(&eigen.eigenvalues[a]));
    let axes =
        nalgebra::DMatrix::from_fn(width, dimensions, |r, c| eigen.eigenvectors[(r, order[c])]);
    let projected = centred * axes;
    (0..rows)
        .flat_map(|r| (0..dimensions).map(move |c| (r, c)))
        .map(|(r, c)| projected[(r, c)] as f32)
        .collect()
}

/// Smoothed inverse document frequency: `ln((n + 1) / (df + 1)) + 1`, so that a token in every
/// document still counts a little and an unseen one counts most.
pub(super) fn idf(documents: &[Vec<u32>], vocabulary: usize) -> Vec<f32> {
    let mut df = vec![0u32; vocabulary];
    for ids in documents {
        let distinct: HashSet<u32> = ids.iter().copied().collect();
        distinct.into_iter().for_each(|id| df[id as usize] += 1);
    }
    let n = documents.len() as f32;
    df.iter()
        .map(|&d| ((n + 1.0) / (d as f32 + 1.0)).ln() + 1.0)
        .collect()
}

fn write_static(
    dir: &Path,
    vectors: &[f32],
    weights: &[f32],
    mean: &[f32],
    vocabulary: usize,
    dimensions: usize,
    references: usize,
) -> Result<()> {
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let (v, w, m) = (bytes(vectors), bytes(weights), bytes(mean));
    fn view(data: &[u8], shape: Vec<usize>) -> TensorView<'_> {
        TensorView::new(Dtype::F32, shape, data).expect("shape matches the data")
    }
    let tensors = [
        ("vectors", view(&v, vec![vocabulary, dimensions])),
        ("weights", view(&w, vec![vocabulary])),
        ("mean", view(&m, vec![dimensions])),
    ];
    let metadata = std::collections::HashMap::from([(
        "reference_documents".to_string(),
        references.to_string(),
    )]);
    let serialized = safetensors::serialize(tensors, Some(metadata))
        .map_err(|e| Error::model(format!("cannot serialise static vectors: {e}"), ""))?;
    let mut file = AtomicFile::create(&dir.join(STATIC_FILE))?;
    file.write_all(&serialized)
        .map_err(|e| Error::io(file.target(), e))?;
    file.commit()
}
