//! Vectors as int8 codes: the form in which the cells hold and compare the documents' vectors.
//!
//! A unit vector of 384 `f32`s takes 1,536 bytes, and held for every document, the vectors are
//! most of a run's memory (1.5 GB at a million documents). A code keeps each component as one
//! signed byte instead: the vector is scaled so that its largest component is ±127, and
//! rounded. The cosine of two documents is then the integer dot product of their codes over
//! the product of the codes' lengths.
//!
//! - A quarter of the memory, and of the memory a search reads.
//! - The dot products are sums of integers: exact in any order, so a cosine is the same
//!   whichever instructions compute it and however the work is split (over threads, or over
//!   the parts of a run on several machines).
//! - The rounding moves a cosine by a few thousandths at most; decision 0017 has what it did
//!   to accuracy.

use std::io::{self, Read, Write};

use rayon::prelude::*;

use crate::io::{read_count, read_floats, write_count, write_floats};

/// The largest code: a component of the largest magnitude becomes ±127.
const LARGEST: f32 = 127.0;

/// Vectors as codes, row-major, each with its inverse length.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Codes {
    width: usize,
    codes: Vec<i8>,
    inverse_lengths: Vec<f32>,
}

/// One vector's codes and inverse length.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Code<'a> {
    pub codes: &'a [i8],
    pub inverse_length: f32,
}

impl Codes {
    /// No vectors, `width` wide.
    pub(crate) fn new(width: usize) -> Codes {
        Codes {
            width,
            ..Codes::default()
        }
    }

    /// `rows` vectors of zeros (cosine 0 with every vector), to be set by [`Codes::set_code`].
    pub(crate) fn zeroed(width: usize, rows: usize) -> Codes {
        Codes {
            width,
            codes: vec![0; rows * width],
            inverse_lengths: vec![0.0; rows],
        }
    }

    /// The codes of the row-major `width`-wide `vectors`.
    pub(crate) fn of(vectors: &[f32], width: usize) -> Codes {
        let rows: Vec<&[f32]> = vectors.chunks_exact(width.max(1)).collect();
        Codes::of_rows(&rows, width)
    }

    /// The codes of `rows`, each `width` wide.
    pub(crate) fn of_rows(rows: &[&[f32]], width: usize) -> Codes {
        let mut codes = Codes::zeroed(width, rows.len());
        (codes.codes.par_chunks_mut(width.max(1)))
            .zip(codes.inverse_lengths.par_iter_mut())
            .zip(rows)
            .for_each(|((codes, inverse_length), vector)| {
                *inverse_length = encode(vector, codes);
            });
        codes
    }

    /// Sets row `row` to `code`.
    pub(crate) fn set_code(&mut self, row: usize, code: Code<'_>) {
        self.codes[row * self.width..(row + 1) * self.width].copy_from_slice(code.codes);
        self.inverse_lengths[row] = code.inverse_length;
    }

    /// Adds `code`, as it is, after the others.
    pub(crate) fn push_code(&mut self, code: Code<'_>) {
        self.codes.extend_from_slice(code.codes);
        self.inverse_lengths.push(code.inverse_length);
    }

    pub(crate) fn width(&self) -> usize {
        self.width
    }

    /// How many vectors.
    pub(crate) fn len(&self) -> usize {
        self.inverse_lengths.len()
    }

    /// Row `row`.
    pub(crate) fn row(&self, row: usize) -> Code<'_> {
        Code {
            codes: &self.codes[row * self.width..(row + 1) * self.width],
            inverse_length: self.inverse_lengths[row],
        }
    }

    /// The rows `rows` as unit `f32` vectors (zeros for a vector of zeros), row-major.
    pub(crate) fn decoded(&self, rows: &[usize]) -> Vec<f32> {
        let mut vectors = Vec::new();
        self.decode_onto(rows, &mut vectors);
        vectors
    }

    /// [`Codes::decoded`], appended to `vectors`.
    pub(crate) fn decode_onto(&self, rows: &[usize], vectors: &mut Vec<f32>) {
        let start = vectors.len();
        vectors.resize(start + rows.len() * self.width, 0.0);
        (vectors[start..].par_chunks_mut(self.width.max(1)))
            .zip(rows)
            .for_each(|(vector, &row)| {
                let code = self.row(row);
                for (x, &c) in vector.iter_mut().zip(code.codes) {
                    *x = f32::from(c) * code.inverse_length;
                }
            });
    }

    /// The bytes of row `row`'s codes: equal for equal codes (and so equal lengths).
    pub(crate) fn bytes(&self, row: usize) -> &[u8] {
        bytemuck::cast_slice(self.row(row).codes)
    }

    /// Writes what [`Codes::read_from`] reads.
    pub(crate) fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        write_count(w, self.width)?;
        write_count(w, self.len())?;
        w.write_all(bytemuck::cast_slice(&self.codes))?;
        write_floats(w, &self.inverse_lengths)
    }

    /// Reads what [`Codes::write_to`] wrote.
    pub(crate) fn read_from(r: &mut impl Read) -> io::Result<Codes> {
        let width = read_count(r)?;
        let rows = read_count(r)?;
        let bytes = rows.checked_mul(width).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidData, "more codes than memory holds")
        })?;
        let mut codes = vec![0i8; bytes];
        r.read_exact(bytemuck::cast_slice_mut(&mut codes))?;
        let inverse_lengths = read_floats(r, rows)?;
        Ok(Codes {
            width,
            codes,
            inverse_lengths,
        })
    }
}

/// Writes the codes of `vector` into `codes`; returns their inverse length (0 for a vector of
/// zeros, whose cosine with any other is 0).
fn encode(vector: &[f32], codes: &mut [i8]) -> f32 {
    let largest = vector.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if !(largest > 0.0 && largest.is_finite()) {
        codes.fill(0);
        return 0.0;
    }
    let scale = LARGEST / largest;
    for (code, &x) in codes.iter_mut().zip(vector) {
        // Rounded half away from zero, by truncation: `f32::round` is a call to the library
        // on processors the build cannot assume have a rounding instruction.
        let scaled = x * scale;
        *code = (scaled + 0.5f32.copysign(scaled)).clamp(-LARGEST, LARGEST) as i8;
    }
    let squares: i64 = codes.iter().map(|&c| i64::from(c) * i64::from(c)).sum();
    match squares {
        0 => 0.0,
        squares => (1.0 / (squares as f64).sqrt()) as f32,
    }
}

/// The cosine of two coded vectors: their codes' dot product over their lengths, the same
/// whichever comes first.
pub(crate) fn cosine(a: Code<'_>, b: Code<'_>) -> f32 {
    from_dot(dot(a.codes, b.codes), a.inverse_length, b.inverse_length)
}

/// A cosine from its codes' dot product and their inverse lengths. The same inputs give the
/// same bits: the dot product is exact, and so is its `f32` below 2^24 (any two codes of up to
/// 1,000 components).
fn from_dot(dot: i32, a: f32, b: f32) -> f32 {
    dot as f32 * (a * b)
}

/// The cosines of each of `queries` with each of `members`, into `scores`, a row of
/// `members.len()` a query.
pub(crate) fn cosines(queries: &[Code<'_>], members: &Codes, scores: &mut [f32]) {
    let n = members.len();
    let kernel = block_kernel();
    let mut dots = vec![0; n];
    for (query, row) in queries.iter().zip(scores.chunks_exact_mut(n.max(1))) {
        kernel(query.codes, &members.codes, members.width, &mut dots);
        for ((score, &dot), &inverse_length) in
            row.iter_mut().zip(&dots).zip(&members.inverse_lengths)
        {
            *score = from_dot(dot, query.inverse_length, inverse_length);
        }
    }
}

/// The dot product of two codes.
fn dot(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum()
}

/// A kernel that writes the dot products of one query's codes with each row of a row-major
/// `width`-wide block of codes into `out`.
type BlockKernel = fn(&[i8], &[i8], usize, &mut [i32]);

/// The block kernels, fastest first; `None` where this processor lacks one. The last is
/// always there.
fn block_kernels() -> [(&'static str, Option<BlockKernel>); 3] {
    #[cfg(target_arch = "x86_64")]
    let (wide, vector): (Option<BlockKernel>, Option<BlockKernel>) = (
        (is_x86_feature_detected!("avx512bw") && is_x86_feature_detected!("avx512vnni"))
            .then_some(block_avx512 as BlockKernel),
        is_x86_feature_detected!("avx2").then_some(block_avx2 as BlockKernel),
    );
    #[cfg(not(target_arch = "x86_64"))]
    let (wide, vector) = (None, None);
    [
        ("avx512", wide),
        ("avx2", vector),
        ("plain", Some(block_plain as BlockKernel)),
    ]
}

/// The fastest block kernel this processor has.
fn block_kernel() -> BlockKernel {
    static CHOSEN: std::sync::OnceLock<BlockKernel> = std::sync::OnceLock::new();
    *CHOSEN.get_or_init(|| {
        block_kernels()
            .into_iter()
            .find_map(|(_, kernel)| kernel)
            .expect("the plain kernel is always there")
    })
}

/// [`BlockKernel`] in plain code: the compiler's own vectors.
fn block_plain(query: &[i8], block: &[i8], width: usize, out: &mut [i32]) {
    for (row, o) in block.chunks_exact(width.max(1)).zip(out) {
        *o = dot(query, row);
    }
}

/// [`BlockKernel`] by AVX-512 VNNI: 64 products of bytes summed in one instruction, four rows
/// at a time for each load of the query. The instruction multiplies unsigned bytes by signed
/// ones, so each row's codes are taken as unsigned (`c + 128`, by flipping the top bit) and
/// the query's sum, 128 times, taken off again.
#[cfg(target_arch = "x86_64")]
fn block_avx512(query: &[i8], block: &[i8], width: usize, out: &mut [i32]) {
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn run(query: &[i8], block: &[i8], width: usize, out: &mut [i32]) {
        use std::arch::x86_64::*;
        let rows = out.len();
        assert!(query.len() == width && block.len() >= rows * width);
        let (full, tail) = (width / 64, width % 64);
        // The lanes past the tail load as 0 in the query, so their products are 0.
        let tail_mask: __mmask64 = (1u64 << tail).wrapping_sub(1);
        let offset = 128 * query.iter().map(|&q| i32::from(q)).sum::<i32>();
        let top = _mm512_set1_epi8(i8::MIN);
        let (query_at, block_at) = (query.as_ptr(), block.as_ptr());
        let mut row = 0;
        while row < rows {
            let take = (rows - row).min(4);
            let mut sums = [_mm512_setzero_si512(); 4];
            // SAFETY (for the loads): each reads 64 bytes, or the masked tail, of `query` or
            // of one of its `rows` rows of `block`, checked above.
            for chunk in 0..full {
                let at = chunk * 64;
                let q = unsafe { _mm512_loadu_si512(query_at.add(at).cast()) };
                for (j, sum) in sums.iter_mut().enumerate().take(take) {
                    let codes =
                        unsafe { _mm512_loadu_si512(block_at.add((row + j) * width + at).cast()) };
                    let unsigned = _mm512_xor_si512(codes, top);
                    *sum = _mm512_dpbusd_epi32(*sum, unsigned, q);
                }
            }
            if tail > 0 {
                let at = full * 64;
                let q = unsafe { _mm512_maskz_loadu_epi8(tail_mask, query_at.add(at)) };
                for (j, sum) in sums.iter_mut().enumerate().take(take) {
                    let codes = unsafe {
                        _mm512_maskz_loadu_epi8(tail_mask, block_at.add((row + j) * width + at))
                    };
                    let unsigned = _mm512_xor_si512(codes, top);
                    *sum = _mm512_dpbusd_epi32(*sum, unsigned, q);
                }
            }
            for (j, sum) in sums.iter().enumerate().take(take) {
                out[row + j] = _mm512_reduce_add_epi32(*sum) - offset;
            }
            row += take;
        }
    }
    // SAFETY: listed only where the processor has AVX-512 BW and VNNI.
    unsafe { run(query, block, width, out) }
}

/// [`BlockKernel`] by AVX2: 32 products of bytes at a time, as pairs summed into 16 bits and
/// then into 32. The instruction multiplies unsigned bytes by signed ones, so the query's
/// magnitudes are multiplied by the row's codes carrying the query's signs; codes lie within
/// ±127, so no pair's sum (at most 2 · 127²) overflows 16 bits.
#[cfg(target_arch = "x86_64")]
fn block_avx2(query: &[i8], block: &[i8], width: usize, out: &mut [i32]) {
    #[target_feature(enable = "avx2")]
    unsafe fn run(query: &[i8], block: &[i8], width: usize, out: &mut [i32]) {
        use std::arch::x86_64::*;
        let rows = out.len();
        assert!(query.len() == width && block.len() >= rows * width);
        let full = width / 32;
        let ones = _mm256_set1_epi16(1);
        let mut row = 0;
        while row < rows {
            let take = (rows - row).min(4);
            let mut sums = [_mm256_setzero_si256(); 4];
            for chunk in 0..full {
                let at = chunk * 32;
                // SAFETY (for the loads): each reads 32 bytes of `query` or of one of its
                // `rows` rows of `block`, checked above, within the first `full * 32`.
                let q = unsafe { _mm256_loadu_si256(query.as_ptr().add(at).cast()) };
                let magnitudes = _mm256_abs_epi8(q);
                for (j, sum) in sums.iter_mut().enumerate().take(take) {
                    let codes = unsafe {
                        _mm256_loadu_si256(block.as_ptr().add((row + j) * width + at).cast())
                    };
                    let signed = _mm256_sign_epi8(codes, q);
                    let pairs = _mm256_maddubs_epi16(magnitudes, signed);
                    *sum = _mm256_add_epi32(*sum, _mm256_madd_epi16(pairs, ones));
                }
            }
            for (j, sum) in sums.iter().enumerate().take(take) {
                let mut lanes = [0i32; 8];
                // SAFETY: `lanes` holds the eight lanes stored.
                unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), *sum) };
                let start = (row + j) * width;
                let rest = dot(
                    &query[full * 32..],
                    &block[start + full * 32..start + width],
                );
                out[row + j] = lanes.iter().sum::<i32>() + rest;
            }
            row += take;
        }
    }
    // SAFETY: listed only where the processor has AVX2.
    unsafe { run(query, block, width, out) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    fn random_codes(rng: &mut rand_chacha::ChaCha8Rng, count: usize) -> Vec<i8> {
        // The extremes often, so that every lane meets them.
        (0..count)
            .map(|_| match rng.random_range(0..4) {
                0 => 127,
                1 => -127,
                _ => rng.random_range(-127..=127i8),
            })
            .collect()
    }

    /// Every block kernel this processor has gives the plain dot products, exactly: widths
    /// with and without a tail past the vector lanes, blocks of any number of rows.
    #[test]
    fn every_block_kernel_gives_the_plain_dot_products() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for width in [384, 400, 128, 100, 64, 63, 32, 31, 3, 1] {
            for rows in [0, 1, 3, 4, 5, 9] {
                let query = random_codes(&mut rng, width);
                let block = random_codes(&mut rng, rows * width);
                let plain: Vec<i32> = block
                    .chunks_exact(width)
                    .map(|row| dot(&query, row))
                    .collect();
                for (name, kernel) in block_kernels() {
                    let Some(kernel) = kernel else {
                        println!("this processor lacks the {name} kernel");
                        continue;
                    };
                    let mut out = vec![0; rows];
                    kernel(&query, &block, width, &mut out);
                    assert_eq!(out, plain, "{name}, width {width}, {rows} rows");
                }
            }
        }
    }

    /// A cosine of codes lies near the cosine of the vectors, is the same from either side,
    /// and a vector of zeros has cosine 0 with every vector.
    #[test]
    fn cosines_of_codes_lie_near_the_vectors_cosines() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
        let width = 384;
        let mut vectors: Vec<f32> = (0..50 * width).map(|_| rng.random::<f32>() - 0.5).collect();
        // Near-copies: the second of each pair a little moved from the first.
        for pair in vectors.chunks_exact_mut(2 * width) {
            let (a, b) = pair.split_at_mut(width);
            b.iter_mut()
                .zip(a.iter())
                .for_each(|(y, &x)| *y = x + 0.02 * (*y));
        }
        vectors[..width].fill(0.0);
        let codes = Codes::of(&vectors, width);
        let rows: Vec<&[f32]> = vectors.chunks_exact(width).collect();
        let mut members = Codes::new(width);
        (1..codes.len()).for_each(|row| members.push_code(codes.row(row)));
        let mut scores = vec![0.0; codes.len() * members.len()];
        let queries: Vec<Code> = (0..codes.len()).map(|row| codes.row(row)).collect();
        cosines(&queries, &members, &mut scores);
        for a in 0..codes.len() {
            for b in 1..codes.len() {
                let coded = cosine(codes.row(a), codes.row(b));
                assert_eq!(
                    coded.to_bits(),
                    cosine(codes.row(b), codes.row(a)).to_bits()
                );
                assert_eq!(coded.to_bits(), scores[a * members.len() + b - 1].to_bits());
                let exact = match a {
                    0 => 0.0,
                    _ => {
                        crate::embed::cosine(rows[a], rows[b])
                            / (crate::embed::cosine(rows[a], rows[a])
                                * crate::embed::cosine(rows[b], rows[b]))
                            .sqrt()
                    }
                };
                assert!(
                    (coded - exact).abs() < 0.01,
                    "{a}-{b}: {coded} against {exact}"
                );
            }
        }
        assert!((cosine(codes.row(7), codes.row(7)) - 1.0).abs() < 1e-6);
        // The decoded vectors are unit vectors with the codes' directions.
        let decoded = codes.decoded(&[7]);
        let length: f32 = decoded.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((length - 1.0).abs() < 1e-5, "{length}");
    }

    #[test]
    fn the_codes_of_decoded_codes_are_the_codes() {
        // What a file of codes hands a search as vectors is encoded again by it.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for width in [384, 100, 3, 1] {
            let mut vectors: Vec<f32> = (0..200 * width)
                .map(|_| (rng.random::<f32>() - 0.5) * 10f32.powi(rng.random_range(-3..3)))
                .collect();
            vectors[..width].fill(0.0);
            // Components tied at the largest magnitude, of either sign.
            vectors[width..2 * width].fill(-0.25);
            vectors[width] = 0.25;
            let codes = Codes::of(&vectors, width);
            let rows: Vec<usize> = (0..codes.len()).collect();
            assert_eq!(Codes::of(&codes.decoded(&rows), width), codes, "{width}");
        }
    }
}
