//! The kernels of [`super::cpu::CpuBert`], on plain row-major slices, each on the calling
//! thread (the encoder spreads groups of sequences over threads, not single operations):
//! - [`attention`]: bias, scores, softmax and the weighted sum of values, one sequence and head
//!   at a time, over the sequence's own tokens only (no padding, no mask);
//! - [`bias_activation`]: the intermediate layer's bias and activation, in place;
//! - [`add_norm`]: bias, residual and LayerNorm, in place.
//!
//! `exp` and `erf` are branch-free polynomials, so that the compiler vectorises the loops that
//! call them (libm's scalar `erff` was a tenth of the encoder's time), and every row kernel runs
//! through [`vectorised`], eight lanes wide where the CPU has AVX2.

use crate::matrix::{Strided, product};

/// The feed-forward activation, as named in a BERT config (`hidden_act`).
#[derive(Clone, Copy, Debug)]
pub(super) enum Activation {
    /// `x * Φ(x)` with the exact normal CDF (`gelu`, all-MiniLM-L6-v2's).
    Gelu,
    /// GELU's tanh approximation (`gelu_approximate`).
    GeluTanh,
    Relu,
}

/// LayerNorm's learned scale and shift.
pub(super) struct Norm {
    pub gamma: Vec<f32>,
    pub beta: Vec<f32>,
    pub eps: f32,
}

impl Norm {
    /// [`Norm::apply`] on every `width`-wide row.
    pub fn apply_rows(&self, rows: &mut [f32]) {
        vectorised(
            #[inline(always)]
            || {
                for row in rows.chunks_exact_mut(self.gamma.len()) {
                    self.apply(row);
                }
            },
        );
    }

    /// Normalises `row` to mean 0 and variance 1, then scales and shifts it.
    #[inline(always)]
    fn apply(&self, row: &mut [f32]) {
        let width = row.len() as f32;
        let mean = fold_lanes(row, 0.0, |sum, x| sum + x).iter().sum::<f32>() / width;
        let squares = fold_lanes(row, 0.0, |sum, x| sum + (x - mean) * (x - mean));
        let variance = squares.iter().sum::<f32>() / width;
        let inverse = 1.0 / (variance + self.eps).sqrt();
        for ((x, gamma), beta) in row.iter_mut().zip(&self.gamma).zip(&self.beta) {
            *x = (*x - mean) * inverse * gamma + beta;
        }
    }
}

/// Self-attention over `(tokens, 3 * hidden)` rows of query, key and value projections (queries
/// already scaled by `1 / sqrt(head width)`), for sequences of `lengths` tokens laid end to
/// end. Adds the projections' `bias` in place, then writes the `(tokens, hidden)` context,
/// heads side by side; `scores` is scratch room for one sequence's `length x length` scores.
pub(super) fn attention(
    projections: &mut [f32],
    bias: &[f32],
    lengths: &[usize],
    heads: usize,
    context: &mut [f32],
    scores: &mut [f32],
) {
    let width = bias.len();
    let hidden = width / 3;
    let head = hidden / heads;
    assert!(
        projections.len() == 3 * context.len()
            && context.len().is_multiple_of(hidden)
            && head * heads == hidden,
        "attention: the projections do not split into the sequences and heads"
    );
    add_bias(projections, bias);
    let (mut input, mut output) = (&*projections, context);
    for &length in lengths {
        let (this_input, rest_input) = input.split_at(length * width);
        let (this_output, rest_output) = output.split_at_mut(length * hidden);
        (input, output) = (rest_input, rest_output);
        let scores = &mut scores[..length * length];
        for h in 0..heads {
            let query = this_input[h * head..].as_ptr();
            let key = this_input[hidden + h * head..].as_ptr();
            let value = this_input[2 * hidden + h * head..].as_ptr();
            // SAFETY: every matrix lies inside its slice: `length` rows of stride `width` from
            // a head's first column in `this_input`, `length` rows of `length` in `scores`, and
            // `length` rows of stride `hidden` from the head's first column in `this_output`.
            unsafe {
                // scores = Q Kᵀ: the key matrix read transposed through its strides.
                product(
                    (length, length, head),
                    (scores.as_mut_ptr(), length),
                    Strided::rows(query, width),
                    Strided::transposed(key, width),
                );
            }
            vectorised(
                #[inline(always)]
                || {
                    for row in scores.chunks_exact_mut(length) {
                        softmax(row);
                    }
                },
            );
            // SAFETY: as above.
            unsafe {
                product(
                    (length, head, length),
                    (this_output[h * head..].as_mut_ptr(), hidden),
                    Strided::rows(scores.as_ptr(), length),
                    Strided::rows(value, width),
                );
            }
        }
    }
}

/// `bias` added to every row, in place.
fn add_bias(rows: &mut [f32], bias: &[f32]) {
    vectorised(
        #[inline(always)]
        || {
            for row in rows.chunks_exact_mut(bias.len()) {
                add_in_place(row, bias);
            }
        },
    );
}

/// `x <- x + b` element by element.
#[inline(always)]
fn add_in_place(row: &mut [f32], bias: &[f32]) {
    for (x, b) in row.iter_mut().zip(bias) {
        *x += b;
    }
}

/// `x <- activation(x + bias)`, row by row, in place.
pub(super) fn bias_activation(rows: &mut [f32], bias: &[f32], activation: Activation) {
    vectorised(
        #[inline(always)]
        || {
            for row in rows.chunks_exact_mut(bias.len()) {
                add_in_place(row, bias);
                match activation {
                    Activation::Gelu => map_in_place(row, gelu),
                    Activation::GeluTanh => map_in_place(row, gelu_tanh),
                    Activation::Relu => map_in_place(row, |x| x.max(0.0)),
                }
            }
        },
    );
}

/// `x <- LayerNorm(x + bias + residual)`, row by row, in place on `x`.
pub(super) fn add_norm(rows: &mut [f32], bias: &[f32], residual: &[f32], norm: &Norm) {
    assert_eq!(
        rows.len(),
        residual.len(),
        "add_norm: the residual has another shape"
    );
    let width = bias.len();
    vectorised(
        #[inline(always)]
        || {
            for (row, residual) in rows
                .chunks_exact_mut(width)
                .zip(residual.chunks_exact(width))
            {
                for ((x, r), b) in row.iter_mut().zip(residual).zip(bias) {
                    *x += r + b;
                }
                norm.apply(row);
            }
        },
    );
}

/// Runs `kernel` compiled for AVX2 where the CPU has it (its loops then take eight lanes at a
/// time), as compiled for the baseline CPU otherwise. No fused multiply-add either way, so the
/// results are the same. The closure must be `#[inline(always)]`: compiled on its own, it
/// would not take on AVX2.
#[inline(always)]
fn vectorised<R>(kernel: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has just been checked to support AVX2.
        return unsafe { with_avx2(kernel) };
    }
    kernel()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn with_avx2<R>(kernel: impl FnOnce() -> R) -> R {
    kernel()
}

/// Lanes of the hand-split reductions: floating-point sums are not reassociated by the
/// compiler, so a plain `sum()` or `fold` runs one element at a time.
const LANES: usize = 8;

/// `row` folded into [`LANES`] partial results, element `i` into lane `i % LANES`.
#[inline(always)]
fn fold_lanes(row: &[f32], init: f32, op: impl Fn(f32, f32) -> f32) -> [f32; LANES] {
    let mut lanes = [init; LANES];
    let (chunks, tail) = row.as_chunks::<LANES>();
    for chunk in chunks {
        for (lane, &x) in lanes.iter_mut().zip(chunk) {
            *lane = op(*lane, x);
        }
    }
    for (lane, &x) in lanes.iter_mut().zip(tail) {
        *lane = op(*lane, x);
    }
    lanes
}

/// `x <- f(x)` for every element. A `for` loop, not `for_each`: `for_each` goes through
/// `Iterator::fold`, which the compiler may keep out of line, and so out of [`vectorised`].
#[inline(always)]
fn map_in_place(row: &mut [f32], f: impl Fn(f32) -> f32) {
    for x in row {
        *x = f(*x);
    }
}

/// Softmax of one row of scores, in place.
#[inline(always)]
fn softmax(row: &mut [f32]) {
    // A plain comparison, not `f32::max`: scores are never NaN, and it compiles to one
    // vector instruction where `f32::max`'s NaN rule takes four.
    let larger = |a: f32, b: f32| if b > a { b } else { a };
    let max = fold_lanes(row, f32::NEG_INFINITY, larger)
        .into_iter()
        .fold(f32::NEG_INFINITY, larger);
    map_in_place(row, |x| exp(x - max));
    let sum: f32 = fold_lanes(row, 0.0, |sum, x| sum + x).iter().sum();
    let inverse = 1.0 / sum;
    map_in_place(row, |x| x * inverse);
}

/// `x * Φ(x)`, with Φ through [`erf`].
#[inline(always)]
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// GELU's tanh form, `0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³)))`.
#[inline(always)]
fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x)).tanh())
}

/// The error function to within 1.5e-7 (Abramowitz and Stegun, formula 7.1.26; f32 rounding
/// adds about 1e-7), branch-free.
#[inline(always)]
pub(super) fn erf(x: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    const A: [f32; 5] = [
        0.254_829_6,
        -0.284_496_74,
        1.421_413_8,
        -1.453_152_1,
        1.061_405_4,
    ];
    let a = x.abs();
    let t = 1.0 / (1.0 + P * a);
    let polynomial = t * (A[0] + t * (A[1] + t * (A[2] + t * (A[3] + t * A[4]))));
    (1.0 - polynomial * exp(-a * a)).copysign(x)
}

/// `e^x` to about 2 ulp for x in [-87, 88] (clamped there): `2^n · e^r` with |r| <= ln2/2
/// and e^r from its Taylor series to degree 6. Branch-free, so loops over it vectorise.
#[inline(always)]
pub(super) fn exp(x: f32) -> f32 {
    // ln 2 split in two so that n · LN2_HIGH is exact for every n used here.
    const LN2_HIGH: f32 = 0.693_359_4;
    const LN2_LOW: f32 = -2.121_944_4e-4;
    // Adding 1.5 · 2^23 rounds to the nearest integer n, and leaves n in the low bits of the
    // sum; taking it away again gives n as a float. No float-to-int conversion, which Rust
    // saturates one element at a time.
    const ROUND: f32 = 12_582_912.0;
    let x = x.clamp(-87.0, 88.0);
    let shifted = x * std::f32::consts::LOG2_E + ROUND;
    let n = shifted - ROUND;
    let r = x - n * LN2_HIGH - n * LN2_LOW;
    let series = 1.0
        + r * (1.0
            + r * (1.0 / 2.0
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    // 2^n: n + 127 in the exponent field (the shift drops the sum's other bits).
    series * f32::from_bits(shifted.to_bits().wrapping_add(127) << 23)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_and_erf_match_the_standard_functions() {
        for i in -8700..=8800 {
            let x = i as f32 / 100.0;
            let (got, want) = (exp(x), x.exp());
            assert!(
                (got - want).abs() <= 4.0 * f32::EPSILON * want,
                "exp({x}) = {got}, want {want}"
            );
        }
        for i in -600..=600 {
            let x = i as f32 / 100.0;
            let (got, want) = (erf(x), libm::erff(x));
            assert!((got - want).abs() < 3e-7, "erf({x}) = {got}, want {want}");
        }
    }
}
