//! A BERT encoder for the CPU. Sequences are packed end to end (one row per real token, so no
//! work goes to padding) and cut into groups of whole sequences. Each rayon task runs every
//! layer over one group on its own thread: single-threaded matmuls (the `gemm` crate) between
//! neardup's fused [`kernels`]. No thread waits for another between layers, the group's
//! intermediate rows stay in cache, and its buffers serve every layer.

use candle_core::{Result, Tensor, bail};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{Config, HiddenAct, PositionEmbeddingType};
use rayon::prelude::*;

use super::kernels::{self, Activation, Norm};

/// Most tokens in one group: enough rows that a matmul's packing of its weights is a small part
/// of its cost, few enough that the group's 1,536-wide intermediate rows (6 MB) stay in cache.
const GROUP_TOKENS: usize = 1024;

/// BERT's weights, laid out for [`CpuBert::forward`].
pub(crate) struct CpuBert {
    words: Vec<f32>,
    positions: Vec<f32>,
    /// Token type 0's embedding: neardup embeds single texts.
    token_type: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    hidden: usize,
    heads: usize,
    activation: Activation,
}

struct Layer {
    /// Query, key and value projections side by side: `(hidden, 3 * hidden)`. The query's
    /// columns and bias are scaled by `1 / sqrt(head width)` here, once, instead of every score.
    projections: Dense,
    attention_output: Dense,
    attention_norm: Norm,
    intermediate: Dense,
    output: Dense,
    output_norm: Norm,
}

/// A dense layer: the weight transposed to `(inputs, outputs)`, row-major, so that the matmul
/// reads it row by row, and the bias, which the kernel after the matmul adds.
struct Dense {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

impl Dense {
    fn outputs(&self) -> usize {
        self.bias.len()
    }

    /// `output = input · weight`, without the bias.
    fn apply(&self, input: &[f32], output: &mut [f32]) {
        crate::matrix::matmul(output, input, &self.weight, self.outputs());
    }
}

/// One group's working rows, reused by every layer.
struct Buffers {
    projections: Vec<f32>,
    context: Vec<f32>,
    attended: Vec<f32>,
    inner: Vec<f32>,
    scores: Vec<f32>,
}

impl CpuBert {
    /// Reads the weights of a Hugging Face BERT checkpoint (with or without a `bert.` prefix).
    pub(crate) fn load(vars: VarBuilder, config: &Config) -> Result<Self> {
        if config.position_embedding_type != PositionEmbeddingType::Absolute {
            bail!("only absolute position embeddings are supported");
        }
        let vars = if vars.contains_tensor("bert.embeddings.word_embeddings.weight") {
            vars.pp("bert")
        } else {
            vars
        };
        let hidden = config.hidden_size;
        let eps = config.layer_norm_eps as f32;
        let embeddings = vars.pp("embeddings");
        let table = |name: &str, rows: usize| -> Result<Vec<f32>> {
            embeddings
                .get((rows, hidden), name)?
                .flatten_all()?
                .to_vec1()
        };
        let token_type = table("token_type_embeddings.weight", config.type_vocab_size)?;
        let layers = (0..config.num_hidden_layers)
            .map(|i| Layer::load(vars.pp(format!("encoder.layer.{i}")), config))
            .collect::<Result<_>>()?;
        Ok(CpuBert {
            words: table("word_embeddings.weight", config.vocab_size)?,
            positions: table("position_embeddings.weight", config.max_position_embeddings)?,
            token_type: token_type[..hidden].to_vec(),
            embedding_norm: norm(embeddings.pp("LayerNorm"), hidden, eps)?,
            layers,
            hidden,
            heads: config.num_attention_heads,
            activation: match config.hidden_act {
                HiddenAct::Gelu => Activation::Gelu,
                HiddenAct::GeluApproximate => Activation::GeluTanh,
                HiddenAct::Relu => Activation::Relu,
            },
        })
    }

    /// Width of a token's state.
    pub(crate) fn hidden(&self) -> usize {
        self.hidden
    }

    /// The last layer's output for each sequence of token ids: one `hidden`-wide row per
    /// token, all sequences' rows end to end.
    pub(crate) fn forward(&self, sequences: &[&[u32]]) -> Result<Vec<f32>> {
        self.check(sequences)?;
        let tokens: usize = sequences.iter().map(|s| s.len()).sum();
        let mut states = vec![0.0; tokens * self.hidden];
        // At least one group a thread where the sequences allow it.
        let target = tokens
            .div_ceil(rayon::current_num_threads())
            .clamp(1, GROUP_TOKENS);
        let mut groups = Vec::new();
        let (mut sequences, mut rows) = (sequences, states.as_mut_slice());
        while !sequences.is_empty() {
            let (mut count, mut length) = (0, 0);
            while count < sequences.len()
                && (count == 0 || length + sequences[count].len() <= target)
            {
                length += sequences[count].len();
                count += 1;
            }
            let (group, rest) = sequences.split_at(count);
            let (group_rows, rest_rows) = rows.split_at_mut(length * self.hidden);
            groups.push((group, group_rows));
            (sequences, rows) = (rest, rest_rows);
        }
        groups
            .into_par_iter()
            .for_each(|(group, rows)| self.encode(group, rows));
        Ok(states)
    }

    /// Refuses token ids outside the vocabulary and sequences longer than the positions.
    fn check(&self, sequences: &[&[u32]]) -> Result<()> {
        let (vocabulary, positions) = (
            self.words.len() / self.hidden,
            self.positions.len() / self.hidden,
        );
        if let Some(&id) = sequences
            .iter()
            .flat_map(|s| s.iter())
            .find(|&&id| id as usize >= vocabulary)
        {
            bail!("token id {id} is outside the vocabulary of {vocabulary}");
        }
        if let Some(long) = sequences.iter().find(|s| s.len() > positions) {
            bail!(
                "a sequence of {} tokens is longer than the model's {positions} positions",
                long.len()
            );
        }
        Ok(())
    }

    /// Every layer over one group of sequences, on the calling thread; `rows` receives one
    /// state per token.
    fn encode(&self, sequences: &[&[u32]], rows: &mut [f32]) {
        let hidden = self.hidden;
        let tokens = sequences
            .iter()
            .flat_map(|ids| ids.iter().enumerate().map(|(p, &id)| (id as usize, p)));
        for (row, (id, position)) in rows.chunks_exact_mut(hidden).zip(tokens) {
            let word = &self.words[id * hidden..(id + 1) * hidden];
            let place = &self.positions[position * hidden..(position + 1) * hidden];
            for (((x, w), p), t) in row.iter_mut().zip(word).zip(place).zip(&self.token_type) {
                *x = w + p + t;
            }
        }
        self.embedding_norm.apply_rows(rows);

        let lengths: Vec<usize> = sequences.iter().map(|s| s.len()).collect();
        let count = rows.len() / hidden;
        let inner = self.layers.first().map_or(0, |l| l.intermediate.outputs());
        let longest = lengths.iter().max().copied().unwrap_or(0);
        let mut buffers = Buffers {
            projections: vec![0.0; count * 3 * hidden],
            context: vec![0.0; count * hidden],
            attended: vec![0.0; count * hidden],
            inner: vec![0.0; count * inner],
            scores: vec![0.0; longest * longest],
        };
        for layer in &self.layers {
            layer.forward(rows, &lengths, &mut buffers, self);
        }
    }
}

impl Layer {
    fn load(vars: VarBuilder, config: &Config) -> Result<Self> {
        let (hidden, inner) = (config.hidden_size, config.intermediate_size);
        let eps = config.layer_norm_eps as f32;
        let attention = vars.pp("attention");
        let [query, key, value] = ["query", "key", "value"]
            .map(|name| linear(attention.pp("self").pp(name), hidden, hidden));
        let (query, key, value) = (query?, key?, value?);
        let scale = 1.0 / ((hidden / config.num_attention_heads) as f64).sqrt();
        let weight = Tensor::cat(&[(query.0 * scale)?, key.0, value.0], 0)?;
        let bias = Tensor::cat(&[(query.1 * scale)?, key.1, value.1], 0)?;
        Ok(Layer {
            projections: dense((weight, bias))?,
            attention_output: dense(linear(attention.pp("output.dense"), hidden, hidden)?)?,
            attention_norm: norm(attention.pp("output.LayerNorm"), hidden, eps)?,
            intermediate: dense(linear(vars.pp("intermediate.dense"), hidden, inner)?)?,
            output: dense(linear(vars.pp("output.dense"), inner, hidden)?)?,
            output_norm: norm(vars.pp("output.LayerNorm"), hidden, eps)?,
        })
    }

    /// One encoder block over a group's `states`, in place.
    fn forward(
        &self,
        states: &mut [f32],
        lengths: &[usize],
        buffers: &mut Buffers,
        model: &CpuBert,
    ) {
        self.projections.apply(states, &mut buffers.projections);
        kernels::attention(
            &mut buffers.projections,
            &self.projections.bias,
            lengths,
            model.heads,
            &mut buffers.context,
            &mut buffers.scores,
        );
        self.attention_output
            .apply(&buffers.context, &mut buffers.attended);
        kernels::add_norm(
            &mut buffers.attended,
            &self.attention_output.bias,
            states,
            &self.attention_norm,
        );
        self.intermediate
            .apply(&buffers.attended, &mut buffers.inner);
        kernels::bias_activation(
            &mut buffers.inner,
            &self.intermediate.bias,
            model.activation,
        );
        self.output.apply(&buffers.inner, states);
        kernels::add_norm(
            states,
            &self.output.bias,
            &buffers.attended,
            &self.output_norm,
        );
    }
}

/// A `Linear` checkpoint entry: `weight` as `(outputs, inputs)` and `bias`.
fn linear(vars: VarBuilder, inputs: usize, outputs: usize) -> Result<(Tensor, Tensor)> {
    Ok((
        vars.get((outputs, inputs), "weight")?,
        vars.get(outputs, "bias")?,
    ))
}

/// A [`Dense`] from a `(outputs, inputs)` weight and its bias.
fn dense((weight, bias): (Tensor, Tensor)) -> Result<Dense> {
    Ok(Dense {
        weight: weight.t()?.contiguous()?.flatten_all()?.to_vec1()?,
        bias: bias.to_vec1()?,
    })
}

fn norm(vars: VarBuilder, width: usize, eps: f32) -> Result<Norm> {
    Ok(Norm {
        gamma: vars.get(width, "weight")?.to_vec1()?,
        beta: vars.get(width, "bias")?.to_vec1()?,
        eps,
    })
}
