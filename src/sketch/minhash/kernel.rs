//! The hot loop of the whole method: every shingle folded into the running minimum of every
//! permutation's slot.
//!
//! Slot `i` keeps the least `⌊(a_i·x + b_i) mod 2^64 / 2^32⌋` over the shingles' 32-bit keys
//! `x`. A vector unit multiplies 64-bit lanes slowly or not at all (AVX2 has no such
//! instruction, and compiled from plain code the fold emulates one with three multiplies and
//! the shuffles that go with them). Since `x` has 32 bits, with `a = a_hi·2^32 + a_lo`,
//!
//! ```text
//! a·x + b ≡ (a_lo·x + b) + (a_hi·x mod 2^32)·2^32   (mod 2^64)
//! ```
//!
//! so a slot's value is the high half of `a_lo·x + b` (one 32×32→64-bit multiply and a 64-bit
//! add) plus the low half of `a_hi·x` (one 32-bit multiply), modulo 2^32: the same bits as the
//! plain code, in two multiplies. The permutations are laid out for this sixteen slots at a
//! time ([`Chunk`]): the even slots' 64-bit halves apart from the odd slots', so that the high
//! halves of the two land, by one blend, in slot order. A chunk's minima stay in registers
//! while every shingle passes, and are stored once.
//!
//! The kernel is chosen at run time: AVX-512 (one chunk to a register), AVX2 (half a chunk),
//! or the plain loop, which also takes the slots past the last whole chunk.

/// Slots a [`Chunk`] lays out: one AVX-512 register of 32-bit minima.
const CHUNK_SLOTS: usize = 16;

/// Sixteen slots' permutations, split for vector lanes.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Chunk {
    /// The low 32 bits of the even slots' `a` (in 64-bit lanes), then of the odd slots'.
    a_low: [[u64; 8]; 2],
    /// The even slots' `b`, then the odd slots'.
    b: [[u64; 8]; 2],
    /// The high 32 bits of each slot's `a`, in slot order.
    a_high: [u32; CHUNK_SLOTS],
}

/// A seeded family of multiply-add-shift permutations, ready for the kernels.
#[derive(Clone, Debug)]
pub(super) struct Permutations {
    /// Each slot's multiplier.
    pub a: Vec<u64>,
    /// Each slot's addend.
    pub b: Vec<u64>,
    /// The whole chunks of `a` and `b`; the slots after them go through the plain loop.
    chunks: Vec<Chunk>,
}

impl Permutations {
    pub fn new(a: Vec<u64>, b: Vec<u64>) -> Self {
        assert_eq!(a.len(), b.len(), "a multiplier and an addend a slot");
        let chunks = (a.chunks_exact(CHUNK_SLOTS).zip(b.chunks_exact(CHUNK_SLOTS)))
            .map(|(a, b)| {
                let mut chunk = Chunk {
                    a_low: [[0; 8]; 2],
                    b: [[0; 8]; 2],
                    a_high: [0; CHUNK_SLOTS],
                };
                for slot in 0..CHUNK_SLOTS {
                    let (parity, lane) = (slot % 2, slot / 2);
                    chunk.a_low[parity][lane] = a[slot] & 0xffff_ffff;
                    chunk.b[parity][lane] = b[slot];
                    chunk.a_high[slot] = (a[slot] >> 32) as u32;
                }
                chunk
            })
            .collect();
        Permutations { a, b, chunks }
    }

    /// How many slots.
    pub fn len(&self) -> usize {
        self.a.len()
    }

    /// Folds the keys of `shingles` into the minima `out`, one a slot: the whole chunks by the
    /// fastest vector kernel this CPU has, the slots after them in plain code.
    pub fn fold(&self, shingles: &[u64], out: &mut [u32]) {
        assert_eq!(out.len(), self.len(), "a minimum a slot");
        let whole = match vector_kernels().find_map(|(_, kernel)| kernel) {
            Some(kernel) => {
                let whole = self.chunks.len() * CHUNK_SLOTS;
                kernel(&self.chunks, shingles, &mut out[..whole]);
                whole
            }
            None => 0,
        };
        self.fold_plain(whole, shingles, out);
    }

    /// [`Permutations::fold`] in plain code, for the slots from `first` on.
    fn fold_plain(&self, first: usize, shingles: &[u64], out: &mut [u32]) {
        let (a, b) = (&self.a[first..], &self.b[first..]);
        for &h in shingles {
            let x = key(h);
            for ((slot, &a), &b) in out[first..].iter_mut().zip(a).zip(b) {
                let v = (a.wrapping_mul(x).wrapping_add(b) >> 32) as u32;
                *slot = (*slot).min(v);
            }
        }
    }
}

/// The 32-bit key of a 64-bit shingle hash.
#[inline]
fn key(hash: u64) -> u64 {
    (hash ^ (hash >> 32)) & 0xffff_ffff
}

/// A fold of shingles into the minima of whole chunks.
type ChunkFold = fn(&[Chunk], &[u64], &mut [u32]);

/// The vector kernels, fastest first, by the instruction set each needs: `None` where this CPU
/// lacks it.
fn vector_kernels() -> impl Iterator<Item = (&'static str, Option<ChunkFold>)> {
    #[cfg(target_arch = "x86_64")]
    let kernels: [(&str, Option<ChunkFold>); 2] = [
        (
            "avx512f",
            // SAFETY: given out only where the CPU has been checked to support AVX-512F.
            std::is_x86_feature_detected!("avx512f")
                .then_some(|c, s, o| unsafe { fold_avx512(c, s, o) }),
        ),
        (
            "avx2",
            // SAFETY: given out only where the CPU has been checked to support AVX2.
            std::is_x86_feature_detected!("avx2")
                .then_some(|c, s, o| unsafe { fold_avx2(c, s, o) }),
        ),
    ];
    #[cfg(not(target_arch = "x86_64"))]
    let kernels: [(&str, Option<ChunkFold>); 0] = [];
    kernels.into_iter()
}

/// The fold over whole chunks, one chunk to a register.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn fold_avx512(chunks: &[Chunk], shingles: &[u64], out: &mut [u32]) {
    use std::arch::x86_64::*;
    for (chunk, out) in chunks.iter().zip(out.chunks_exact_mut(CHUNK_SLOTS)) {
        // SAFETY: each array read or written holds 64 bytes, one register.
        let load = |lanes: &[u64; 8]| unsafe { _mm512_loadu_si512(lanes.as_ptr().cast()) };
        let (a_even, a_odd) = (load(&chunk.a_low[0]), load(&chunk.a_low[1]));
        let (b_even, b_odd) = (load(&chunk.b[0]), load(&chunk.b[1]));
        let a_high = unsafe { _mm512_loadu_si512(chunk.a_high.as_ptr().cast()) };
        let mut minima = unsafe { _mm512_loadu_si512(out.as_ptr().cast()) };
        for &h in shingles {
            let x = key(h);
            let (x64, x32) = (_mm512_set1_epi64(x as i64), _mm512_set1_epi32(x as i32));
            let even = _mm512_add_epi64(_mm512_mul_epu32(a_even, x64), b_even);
            let odd = _mm512_add_epi64(_mm512_mul_epu32(a_odd, x64), b_odd);
            // The even slots' high halves moved down to their 32-bit lanes, the odd slots'
            // where they are.
            let high = _mm512_mask_blend_epi32(0xaaaa, _mm512_srli_epi64::<32>(even), odd);
            let value = _mm512_add_epi32(high, _mm512_mullo_epi32(a_high, x32));
            minima = _mm512_min_epu32(minima, value);
        }
        unsafe { _mm512_storeu_si512(out.as_mut_ptr().cast(), minima) };
    }
}

/// The fold over whole chunks, half a chunk to a register.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn fold_avx2(chunks: &[Chunk], shingles: &[u64], out: &mut [u32]) {
    use std::arch::x86_64::*;
    for (chunk, out) in chunks.iter().zip(out.chunks_exact_mut(CHUNK_SLOTS)) {
        // SAFETY: each slice read or written holds 32 bytes, one register.
        let load = |lanes: &[u64]| unsafe { _mm256_loadu_si256(lanes.as_ptr().cast()) };
        let half = |lanes: &[[u64; 8]; 2], half: usize| {
            let range = half * 4..half * 4 + 4;
            (load(&lanes[0][range.clone()]), load(&lanes[1][range]))
        };
        let a_low = [half(&chunk.a_low, 0), half(&chunk.a_low, 1)];
        let b = [half(&chunk.b, 0), half(&chunk.b, 1)];
        let a_high: [__m256i; 2] = std::array::from_fn(|h| unsafe {
            _mm256_loadu_si256(chunk.a_high[h * 8..].as_ptr().cast())
        });
        let mut minima: [__m256i; 2] =
            std::array::from_fn(|h| unsafe { _mm256_loadu_si256(out[h * 8..].as_ptr().cast()) });
        for &h in shingles {
            let x = key(h);
            let (x64, x32) = (_mm256_set1_epi64x(x as i64), _mm256_set1_epi32(x as i32));
            for half in 0..2 {
                let ((a_even, a_odd), (b_even, b_odd)) = (a_low[half], b[half]);
                let even = _mm256_add_epi64(_mm256_mul_epu32(a_even, x64), b_even);
                let odd = _mm256_add_epi64(_mm256_mul_epu32(a_odd, x64), b_odd);
                let high = _mm256_blend_epi32::<0xaa>(_mm256_srli_epi64::<32>(even), odd);
                let value = _mm256_add_epi32(high, _mm256_mullo_epi32(a_high[half], x32));
                minima[half] = _mm256_min_epu32(minima[half], value);
            }
        }
        for (half, minima) in minima.iter().enumerate() {
            unsafe { _mm256_storeu_si256(out[half * 8..].as_mut_ptr().cast(), *minima) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Every kernel the CPU has gives the plain loop's minima, bit for bit, for any number of
    /// slots (whole chunks, a tail, only a tail) and shingles (none, one, many, with
    /// multipliers whose halves are all ones or zeros).
    #[test]
    fn every_kernel_gives_the_plain_minima() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for slots in [1, 7, 16, 17, 31, 64, 128, 130] {
            let mut a: Vec<u64> = (0..slots).map(|_| rng.next_u64()).collect();
            let b: Vec<u64> = (0..slots).map(|_| rng.next_u64()).collect();
            a[0] = u64::MAX;
            if slots > 2 {
                a[1] = 0xffff_ffff;
                a[2] = 0xffff_ffff_0000_0000;
            }
            let permutations = Permutations::new(a, b);
            for shingles in [0, 1, 2, 300] {
                let mut set: Vec<u64> = (0..shingles).map(|_| rng.next_u64()).collect();
                if shingles > 1 {
                    set[0] = u64::MAX;
                    set[1] = 0;
                }
                let mut plain = vec![u32::MAX; slots];
                permutations.fold_plain(0, &set, &mut plain);
                let mut chosen = vec![u32::MAX; slots];
                permutations.fold(&set, &mut chosen);
                assert_eq!(chosen, plain, "{slots} slots, {shingles} shingles");
                let whole = permutations.chunks.len() * CHUNK_SLOTS;
                for (set_name, kernel) in vector_kernels() {
                    let Some(kernel) = kernel else {
                        eprintln!("this CPU has no {set_name}: its kernel is not checked");
                        continue;
                    };
                    let mut minima = vec![u32::MAX; slots];
                    kernel(&permutations.chunks, &set, &mut minima[..whole]);
                    permutations.fold_plain(whole, &set, &mut minima);
                    assert_eq!(
                        minima, plain,
                        "{set_name}: {slots} slots, {shingles} shingles"
                    );
                }
            }
        }
    }
}
