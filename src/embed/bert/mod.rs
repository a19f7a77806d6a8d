//! A BERT sentence encoder: token ids in, the mean of the last layer's token states out,
//! L2-normalised (what sentence-transformers does for all-MiniLM-L6-v2).
//!
//! Two encoders run the same checkpoint:
//! - on the CPU, [`cpu::CpuBert`]: `gemm` matmuls between neardup's fused kernels, over
//!   packed sequences with no padding, one group of sequences per thread. It is what makes
//!   MiniLM faster than PyTorch on two cores;
//! - on a GPU, candle-transformers' `BertModel`, over padded batches with an attention mask.
//!
//! Both read the weights through the same `VarBuilder`, and a test holds them to the same
//! vectors.

mod cpu;
mod kernels;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};

use super::normalize;

/// A loaded BERT checkpoint, on the device it runs on.
pub(crate) enum Encoder {
    Cpu(cpu::CpuBert),
    Candle { model: BertModel, device: Device },
}

impl Encoder {
    /// The fused CPU encoder on the CPU, candle-transformers' model on any other device.
    pub(crate) fn load(vars: VarBuilder, config: &Config) -> candle_core::Result<Self> {
        if vars.device().is_cpu() {
            cpu::CpuBert::load(vars, config).map(Encoder::Cpu)
        } else {
            Self::candle(vars, config)
        }
    }

    /// candle-transformers' `BertModel` on the variables' device.
    pub(crate) fn candle(vars: VarBuilder, config: &Config) -> candle_core::Result<Self> {
        let device = vars.device().clone();
        let model = BertModel::load(vars, config)?;
        Ok(Encoder::Candle { model, device })
    }

    /// One mean-pooled unit vector per sequence of token ids (no padding).
    pub(crate) fn pooled(&self, sequences: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        let mut rows = match self {
            Encoder::Cpu(model) => {
                let states = model.forward(sequences)?;
                let width = model.hidden();
                let mut rest = states.as_slice();
                sequences
                    .iter()
                    .map(|sequence| {
                        let (mine, others) = rest.split_at(sequence.len() * width);
                        rest = others;
                        mean_of_rows(mine, width)
                    })
                    .collect()
            }
            Encoder::Candle { model, device } => padded_forward(model, device, sequences)?,
        };
        rows.iter_mut().for_each(|row| normalize(row));
        Ok(rows)
    }
}

fn mean_of_rows(rows: &[f32], width: usize) -> Vec<f32> {
    let mut mean = vec![0.0; width];
    for row in rows.chunks_exact(width) {
        mean.iter_mut().zip(row).for_each(|(m, x)| *m += x);
    }
    let count = (rows.len() / width).max(1) as f32;
    mean.iter_mut().for_each(|m| *m /= count);
    mean
}

/// `BertModel` over the sequences padded to the longest, pooled over real tokens only: padding
/// must not pull a short text towards the pad embedding.
fn padded_forward(
    model: &BertModel,
    device: &Device,
    sequences: &[&[u32]],
) -> candle_core::Result<Vec<Vec<f32>>> {
    let width = sequences.iter().map(|s| s.len()).max().unwrap_or(0);
    let (mut ids, mut mask) = (Vec::new(), Vec::new());
    for sequence in sequences {
        ids.extend(sequence.iter().copied());
        ids.resize(ids.len() + width - sequence.len(), 0);
        mask.extend((0..width).map(|i| u32::from(i < sequence.len())));
    }
    let ids = Tensor::from_vec(ids, (sequences.len(), width), device)?;
    let mask = Tensor::from_vec(mask, (sequences.len(), width), device)?;
    let hidden = model.forward(&ids, &ids.zeros_like()?, Some(&mask))?;
    let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
    let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
    summed.broadcast_div(&mask.sum(1)?)?.to_vec2::<f32>()
}

#[cfg(test)]
mod tests {
    use rand::{RngExt, SeedableRng};

    use super::*;

    /// A tiny random BERT checkpoint in a temporary folder (kept alive by the first value), its
    /// config, and a way to read its weights on the CPU.
    fn tiny_checkpoint() -> (tempfile::TempDir, Config, impl Fn() -> VarBuilder<'static>) {
        let dir = tempfile::tempdir().unwrap();
        crate::embed::tests::tiny_bert(dir.path());
        let config: Config =
            serde_json::from_slice(&std::fs::read(dir.path().join("config.json")).unwrap())
                .unwrap();
        let weights = dir.path().join("model.safetensors");
        // SAFETY: the file was written above and is not changed while the folder lives.
        let vars = move || unsafe {
            VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, &Device::Cpu).unwrap()
        };
        (dir, config, vars)
    }

    /// The fused CPU encoder against candle-transformers' `BertModel` on the same tiny random
    /// checkpoint, over sequences of many lengths in one batch (the longest fills every
    /// position): both must give the same vectors, batched or alone.
    #[test]
    fn the_cpu_encoder_gives_candle_transformers_vectors() {
        let (_dir, config, vars) = tiny_checkpoint();
        let fused = Encoder::load(vars(), &config).unwrap();
        assert!(matches!(fused, Encoder::Cpu(_)));
        let reference = Encoder::candle(vars(), &config).unwrap();

        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let sequences: Vec<Vec<u32>> = [1, 3, 64, 17, 40, 2]
            .iter()
            .map(|&length| {
                (0..length)
                    .map(|_| rng.random_range(0..config.vocab_size as u32))
                    .collect()
            })
            .collect();
        let sequences: Vec<&[u32]> = sequences.iter().map(Vec::as_slice).collect();
        let got = fused.pooled(&sequences).unwrap();
        let want = reference.pooled(&sequences).unwrap();
        for (i, (got, want)) in got.iter().zip(&want).enumerate() {
            let gap = got
                .iter()
                .zip(want)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max);
            assert!(gap < 1e-5, "sequence {i}: the vectors differ by {gap}");
            let alone = fused.pooled(&sequences[i..=i]).unwrap().remove(0);
            assert_eq!(&alone, got, "sequence {i} alone");
        }
    }

    #[test]
    fn token_ids_outside_the_vocabulary_are_an_error() {
        let (_dir, config, vars) = tiny_checkpoint();
        let encoder = Encoder::load(vars(), &config).unwrap();
        let err = encoder.pooled(&[&[2, 999, 3]]).unwrap_err().to_string();
        assert!(err.contains("token id 999"), "{err}");
    }
}
