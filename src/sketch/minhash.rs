//! MinHash signatures.
//!
//! For a set of shingle hashes and a random permutation `π` of the hash space,
//! `Pr[min π(A) = min π(B)] = |A ∩ B| / |A ∪ B|`: the fraction of agreeing minima over many
//! permutations estimates the Jaccard similarity of two sets.
//!
//! The permutations are Dietzfelbinger's multiply-add-shift family on 32-bit keys,
//! `π(x) = ⌊(a·x + b) mod 2^64 / 2^32⌋` with random 64-bit `a, b`: strongly universal (pairwise
//! independent), the same guarantee as the textbook `(a·h + b) mod p` family, but with only
//! 64-bit arithmetic, so the 128 permutations of a token run as vector instructions (AVX-512
//! or AVX2 when the CPU has it, chosen at run time; plain code otherwise, same results: see
//! [`kernel`](mod@kernel)). Each shingle's 64-bit hash is folded to the 32-bit key (a key
//! collision costs 2^-32 per pair of shingles).
//! `a, b` come from a seeded ChaCha8 stream, whose output is fixed by its specification: the
//! same seed gives the same signatures on every platform.
//!
//! [`Hashing::OnePermutation`] is the cheaper alternative (Li, Owen and Zhang 2012; optimal
//! densification, Shrivastava 2017): one seeded hash per shingle, whose high bits pick one of
//! `num_perm` bins and whose low bits compete for that bin's minimum. A bin no shingle fell
//! into copies the first filled bin of its own fixed, seeded probe sequence, so that two sets
//! fill their empty bins alike and a slot still agrees with probability equal to the Jaccard
//! similarity. One hash a shingle instead of `num_perm`.

use std::io::{self, Read, Write};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use self::kernel::Permutations;
use crate::io::{read_count, read_words_into, write_count, write_words};

mod kernel;

/// How a signature's slots are drawn from a shingle set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hashing {
    /// Each slot is the minimum under its own permutation: `num_perm` hashes a shingle.
    #[default]
    Permutations,
    /// One permutation cut into `num_perm` bins, empty bins filled by optimal densification:
    /// one hash a shingle.
    OnePermutation,
}

/// Murmur3's 64-bit finaliser: every input bit reaches every output bit.
#[inline]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// The bin, of `bins`, that the high half of a mixed hash picks (multiply-shift, no division).
#[inline]
fn bin_of(x: u64, bins: usize) -> usize {
    (((x >> 32) * bins as u64) >> 32) as usize
}

/// The value a slot keeps when a document has no shingles at all.
pub const EMPTY_SLOT: u32 = u32::MAX;

/// A seeded family of permutations that turns shingle sets into signatures.
#[derive(Clone, Debug)]
pub struct MinHasher {
    permutations: Permutations,
    seed: u64,
    hashing: Hashing,
}

impl MinHasher {
    /// `num_perm` slots drawn from `seed` the way `hashing` says.
    pub fn with_hashing(num_perm: usize, seed: u64, hashing: Hashing) -> Self {
        MinHasher {
            hashing,
            ..MinHasher::new(num_perm, seed)
        }
    }

    /// `num_perm` permutations drawn from `seed`.
    pub fn new(num_perm: usize, seed: u64) -> Self {
        assert!(num_perm > 0, "a MinHash needs at least one permutation");
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut a = Vec::with_capacity(num_perm);
        let mut b = Vec::with_capacity(num_perm);
        for _ in 0..num_perm {
            a.push(rng.next_u64());
            b.push(rng.next_u64());
        }
        MinHasher {
            permutations: Permutations::new(a, b),
            seed,
            hashing: Hashing::Permutations,
        }
    }

    /// How many permutations (signature slots) this uses.
    pub fn num_perm(&self) -> usize {
        self.permutations.len()
    }

    /// The seed the permutations were drawn from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Writes the signature of the set `shingles` into `out` (`num_perm` slots). Repeated
    /// hashes are harmless. An empty set gives [`EMPTY_SLOT`] everywhere.
    pub fn sign_into(&self, shingles: &[u64], out: &mut [u32]) {
        assert_eq!(out.len(), self.num_perm(), "signature length");
        out.fill(EMPTY_SLOT);
        if self.hashing == Hashing::OnePermutation {
            return self.sign_one_permutation(shingles, out);
        }
        self.permutations.fold(shingles, out);
    }

    /// One hash a shingle into `out`'s bins, then optimal densification. The first
    /// permutation's `a` salts the shingle hashes and its `b` the probe sequences, so the seed
    /// still chooses everything.
    fn sign_one_permutation(&self, shingles: &[u64], out: &mut [u32]) {
        if shingles.is_empty() {
            return;
        }
        let bins = out.len();
        let mut filled = vec![false; bins];
        for &h in shingles {
            let x = mix(h ^ self.permutations.a[0]);
            let bin = bin_of(x, bins);
            out[bin] = out[bin].min(x as u32);
            filled[bin] = true;
        }
        for bin in 0..bins {
            if filled[bin] {
                continue;
            }
            // Some bin is filled, so the probe ends (after `bins / filled` tries on average).
            let mut attempt = 0u64;
            let source = loop {
                attempt += 1;
                let probe = bin_of(
                    mix(self.permutations.b[0] ^ ((bin as u64) << 32) ^ attempt),
                    bins,
                );
                if filled[probe] {
                    break probe;
                }
            };
            out[bin] = out[source];
        }
    }

    /// The signature of `shingles` as a new vector.
    pub fn sign(&self, shingles: &[u64]) -> Vec<u32> {
        let mut out = vec![0; self.num_perm()];
        self.sign_into(shingles, &mut out);
        out
    }
}

/// The estimated Jaccard similarity of two signatures: the fraction of equal slots.
pub fn jaccard_estimate(a: &[u32], b: &[u32]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let equal = a.iter().zip(b).filter(|(x, y)| x == y).count();
    equal as f64 / a.len() as f64
}

/// The signatures of a whole corpus, one row of `num_perm` slots per document (512 bytes a
/// document at 128 permutations), in blocks of [`Signatures::BLOCK_ROWS`] rows. A block is
/// reserved once at its full size, so rows are never copied as the corpus grows: one matrix
/// grown by doubling touches fresh memory of about twice its size, and first touches are
/// most of what keeping the signatures costs. An exact copy of an earlier document shares its
/// row ([`Signatures::push_copy_of`]).
#[derive(Clone, Debug, Default)]
pub struct Signatures {
    num_perm: usize,
    /// The rows, each stored once.
    blocks: Vec<Vec<u32>>,
    /// Whether each document had no shingles.
    empty: Vec<bool>,
    /// Each document's row in `blocks`, from the first document that shares another's row;
    /// `None` while each document's row is its own, in order.
    rows: Option<Vec<u32>>,
}

/// Two matrices are equal when they give every document the same row, however stored.
impl PartialEq for Signatures {
    fn eq(&self, other: &Self) -> bool {
        self.num_perm == other.num_perm
            && self.empty == other.empty
            && (0..self.len()).all(|doc| self.row(doc) == other.row(doc))
    }
}

impl Signatures {
    /// Rows a block holds: 32 MB at 128 permutations, reserved at once but touched only as
    /// rows arrive. Large blocks keep the random reads of confirming on few, large pages.
    pub const BLOCK_ROWS: usize = 1 << 16;

    /// An empty matrix for signatures of `num_perm` slots.
    pub fn new(num_perm: usize) -> Self {
        Signatures {
            num_perm,
            blocks: Vec::new(),
            empty: Vec::new(),
            rows: None,
        }
    }

    /// Appends one document's signature; `empty` marks a document with no shingles, which
    /// matches nothing.
    pub fn push(&mut self, signature: &[u32], empty: bool) {
        assert_eq!(signature.len(), self.num_perm, "signature length");
        let stored = self.rows.is_some().then(|| self.stored_rows());
        self.open_block().extend_from_slice(signature);
        self.empty.push(empty);
        if let (Some(rows), Some(stored)) = (&mut self.rows, stored) {
            rows.push(stored as u32);
        }
    }

    /// Appends a document whose signature is document `of`'s (an exact copy of its text),
    /// sharing its row instead of storing it again.
    pub fn push_copy_of(&mut self, of: usize) {
        let row = self.row_of(of);
        let documents = self.len();
        let rows = self
            .rows
            .get_or_insert_with(|| (0..documents as u32).collect());
        rows.push(row as u32);
        self.empty.push(self.empty[of]);
    }

    /// Rows stored in the blocks: every block but the last is full.
    fn stored_rows(&self) -> usize {
        self.blocks.last().map_or(0, |last| {
            (self.blocks.len() - 1) * Self::BLOCK_ROWS + last.len() / self.num_perm.max(1)
        })
    }

    /// Where document `doc`'s row is stored.
    fn row_of(&self, doc: usize) -> usize {
        match &self.rows {
            Some(rows) => rows[doc] as usize,
            None => doc,
        }
    }

    /// The block the next row goes into, a new one when the last is full.
    fn open_block(&mut self) -> &mut Vec<u32> {
        let block_slots = Self::BLOCK_ROWS * self.num_perm;
        if self.blocks.last().is_none_or(|b| b.len() == block_slots) {
            self.blocks.push(Vec::with_capacity(block_slots));
        }
        self.blocks.last_mut().expect("a block was just opened")
    }

    /// Appends every row of `other`.
    pub fn extend(&mut self, other: &Signatures) {
        assert_eq!(other.num_perm, self.num_perm, "signature length");
        for doc in 0..other.len() {
            self.push(other.row(doc), other.empty[doc]);
        }
    }

    /// The number of documents.
    pub fn len(&self) -> usize {
        self.empty.len()
    }

    /// Whether there are no documents.
    pub fn is_empty(&self) -> bool {
        self.empty.is_empty()
    }

    /// Slots per signature.
    pub fn num_perm(&self) -> usize {
        self.num_perm
    }

    /// The signature of document `doc`.
    pub fn row(&self, doc: usize) -> &[u32] {
        let row = self.row_of(doc);
        let start = (row % Self::BLOCK_ROWS) * self.num_perm;
        &self.blocks[row / Self::BLOCK_ROWS][start..start + self.num_perm]
    }

    /// Whether document `doc` had no shingles.
    pub fn is_empty_doc(&self, doc: usize) -> bool {
        self.empty[doc]
    }

    /// The estimated Jaccard similarity of two documents; 0 if either is empty.
    pub fn similarity(&self, x: usize, y: usize) -> f64 {
        if self.empty[x] || self.empty[y] {
            return 0.0;
        }
        jaccard_estimate(self.row(x), self.row(y))
    }

    /// Writes the matrix in the form [`Signatures::read_from`] reads: set aside on disk while
    /// a run needs the memory (512 MB at a million documents). The slots are one list, as
    /// one contiguous matrix wrote them.
    pub fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        write_count(w, self.num_perm)?;
        write_count(w, self.len() * self.num_perm)?;
        match &self.rows {
            None => {
                for block in &self.blocks {
                    write_words(w, block)?;
                }
            }
            // Each document's row written out, copies too, as one matrix of them reads.
            Some(_) => {
                for doc in 0..self.len() {
                    write_words(w, self.row(doc))?;
                }
            }
        }
        let empty: Vec<u8> = self.empty.iter().map(|&e| u8::from(e)).collect();
        w.write_all(&empty)
    }

    /// Reads a matrix [`Signatures::write_to`] wrote, a block at a time.
    pub fn read_from(r: &mut impl Read) -> io::Result<Self> {
        let num_perm = read_count(r)?;
        let slots = read_count(r)?;
        if num_perm == 0 || slots % num_perm != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "signature slots are not whole rows",
            ));
        }
        let rows = slots / num_perm;
        let mut signatures = Signatures::new(num_perm);
        for start in (0..rows).step_by(Self::BLOCK_ROWS) {
            let block_rows = Self::BLOCK_ROWS.min(rows - start);
            let mut block = Vec::with_capacity(Self::BLOCK_ROWS * num_perm);
            read_words_into(r, block_rows * num_perm, &mut block)?;
            signatures.blocks.push(block);
        }
        let mut empty = vec![0u8; rows];
        r.read_exact(&mut empty)?;
        signatures.empty = empty.into_iter().map(|e| e != 0).collect();
        Ok(signatures)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::Shingler;

    #[test]
    fn same_seed_same_signature_other_seed_other_signature() {
        let s = Shingler::word_unigrams().shingle_set("the quick brown fox");
        assert_eq!(
            MinHasher::new(128, 1).sign(&s),
            MinHasher::new(128, 1).sign(&s)
        );
        assert_ne!(
            MinHasher::new(128, 1).sign(&s),
            MinHasher::new(128, 2).sign(&s)
        );
    }

    #[test]
    fn signatures_are_pinned_across_platforms_and_versions() {
        // If this changes, every stored index and published number changes: only on purpose.
        let hasher = MinHasher::new(4, 42);
        let s = Shingler::word_unigrams().shingle_set("near duplicate detection");
        assert_eq!(hasher.sign(&s), PINNED);
    }
    const PINNED: [u32; 4] = [1359227510, 1201060281, 563120185, 1022939478];

    #[test]
    fn rows_past_a_block_read_back_and_set_aside_as_one_matrix() {
        let rows = Signatures::BLOCK_ROWS + 3;
        let row = |doc: usize| [doc as u32, !(doc as u32)];
        let mut signatures = Signatures::new(2);
        for doc in 0..rows {
            signatures.push(&row(doc), doc % 7 == 0);
        }
        for doc in [
            0,
            Signatures::BLOCK_ROWS - 1,
            Signatures::BLOCK_ROWS,
            rows - 1,
        ] {
            assert_eq!(signatures.row(doc), row(doc));
            assert_eq!(signatures.is_empty_doc(doc), doc % 7 == 0);
        }
        // On disk the blocks are one list of slots, as a contiguous matrix wrote them.
        let mut bytes = Vec::new();
        signatures.write_to(&mut bytes).unwrap();
        let mut expected = Vec::new();
        write_count(&mut expected, 2).unwrap();
        let slots: Vec<u32> = (0..rows).flat_map(row).collect();
        crate::io::write_list(&mut expected, &slots).unwrap();
        expected.extend((0..rows).map(|doc| u8::from(doc % 7 == 0)));
        assert_eq!(bytes, expected);
        let read = Signatures::read_from(&mut bytes.as_slice()).unwrap();
        assert_eq!(read, signatures);
        let mut extended = Signatures::new(2);
        extended.extend(&read);
        assert_eq!(extended, signatures);
    }

    #[test]
    fn estimate_tracks_true_jaccard() {
        let shingler = Shingler::word_unigrams();
        let a: Vec<String> = (0..200).map(|i| format!("w{i}")).collect();
        let b: Vec<String> = (50..250).map(|i| format!("w{i}")).collect();
        // |A ∩ B| = 150, |A ∪ B| = 250: J = 0.6.
        let hasher = MinHasher::new(512, 7);
        let sa = hasher.sign(&shingler.shingle_set(&a.join(" ")));
        let sb = hasher.sign(&shingler.shingle_set(&b.join(" ")));
        let est = jaccard_estimate(&sa, &sb);
        assert!((est - 0.6).abs() < 0.07, "estimate {est}");
    }

    #[test]
    fn one_permutation_fills_every_slot_and_tracks_true_jaccard() {
        let shingler = Shingler::word_unigrams();
        let hasher = MinHasher::with_hashing(512, 7, Hashing::OnePermutation);
        let one_word = hasher.sign(&shingler.shingle_set("word"));
        assert!(
            one_word
                .iter()
                .all(|&slot| slot == one_word[0] && slot != EMPTY_SLOT)
        );
        assert!(hasher.sign(&[]).iter().all(|&slot| slot == EMPTY_SLOT));

        let a: Vec<String> = (0..200).map(|i| format!("w{i}")).collect();
        let b: Vec<String> = (50..250).map(|i| format!("w{i}")).collect();
        let sa = hasher.sign(&shingler.shingle_set(&a.join(" ")));
        let sb = hasher.sign(&shingler.shingle_set(&b.join(" ")));
        let est = jaccard_estimate(&sa, &sb);
        assert!((est - 0.6).abs() < 0.07, "estimate {est}");
        assert_ne!(
            sa,
            MinHasher::with_hashing(512, 8, Hashing::OnePermutation)
                .sign(&shingler.shingle_set(&a.join(" "))),
            "the seed changes the signature"
        );
    }

    #[test]
    fn one_permutation_signatures_are_pinned() {
        let hasher = MinHasher::with_hashing(8, 42, Hashing::OnePermutation);
        let s = Shingler::word_unigrams().shingle_set("near duplicate detection");
        assert_eq!(hasher.sign(&s), PINNED_ONE_PERMUTATION);
    }
    const PINNED_ONE_PERMUTATION: [u32; 8] = [
        1427207554, 1427207554, 1624751305, 1624751305, 1427207554, 4080999658, 4080999658,
        1624751305,
    ];

    /// On bib-dedupe's labelled pairs (real titles and abstracts, from one word to hundreds),
    /// one permutation estimates the Jaccard similarity as well as 128 permutations do.
    #[test]
    fn one_permutation_is_as_accurate_as_permutations_on_real_pairs() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/data/bibdedupe-core.jsonl");
        let text = std::fs::read_to_string(&path).expect("the shared data beside the checkout");
        let shingler = Shingler::word_unigrams();
        let mut sets = std::collections::HashMap::new();
        let mut labelled = Vec::new();
        for line in text.lines() {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            let field = |key: &str| record[key].as_str().unwrap_or_default().to_owned();
            let id = field("core_id");
            let joined = format!(
                "{} {}",
                field("processed_title"),
                field("processed_abstract")
            );
            for other in record["labelled_duplicates"].as_array().unwrap() {
                let other = other.as_str().unwrap().to_owned();
                if id < other {
                    labelled.push((id.clone(), other));
                }
            }
            sets.insert(id, shingler.shingle_set(&joined));
        }
        assert!(labelled.len() > 2000, "{} labelled pairs", labelled.len());
        let schemes = [Hashing::Permutations, Hashing::OnePermutation]
            .map(|hashing| MinHasher::with_hashing(128, 1, hashing));
        let mut error = [0.0; 2];
        let mut same_side = [0usize; 2];
        for (a, b) in &labelled {
            let (a, b) = (&sets[a], &sets[b]);
            let exact = crate::similarity::set_jaccard(a, b);
            for (i, hasher) in schemes.iter().enumerate() {
                let estimate = jaccard_estimate(&hasher.sign(a), &hasher.sign(b));
                error[i] += (estimate - exact).abs() / labelled.len() as f64;
                same_side[i] += usize::from((estimate >= 0.7) == (exact >= 0.7));
            }
        }
        eprintln!(
            "{} pairs: mean absolute error {:.4} (permutations) / {:.4} (one permutation); \
             same side of 0.7: {} / {}",
            labelled.len(),
            error[0],
            error[1],
            same_side[0],
            same_side[1]
        );
        assert!(error[1] < 0.03, "one permutation's error {}", error[1]);
        assert!(error[1] <= error[0] * 1.1, "errors {error:?}");
        assert!(
            same_side[1] + labelled.len() / 200 >= same_side[0],
            "{same_side:?}"
        );
    }

    #[test]
    fn empty_documents_match_nothing() {
        let hasher = MinHasher::new(8, 1);
        let mut sigs = Signatures::new(8);
        sigs.push(&hasher.sign(&[]), true);
        sigs.push(&hasher.sign(&[]), true);
        assert_eq!(sigs.similarity(0, 1), 0.0);
    }
}
