//! Vectors that many documents hold bit for bit (copies of one text): found in two passes
//! over the codes, searched for once by their first document, each other copy paired with
//! that one.

use std::collections::HashMap;

use rayon::prelude::*;
use xxhash_rust::xxh3::xxh3_64;

use super::MANY_COPIES;
use crate::search::codes::Codes;

/// Every document's codes hashed, in document order: the first of two passes that find the
/// documents whose vector's codes more than [`MANY_COPIES`] documents hold.
#[derive(Default)]
pub(crate) struct CopyHashes(pub(super) Vec<(u64, u32)>);

impl CopyHashes {
    /// Hashes the codes of `vectors`, numbered after those hashed.
    pub(crate) fn push(&mut self, vectors: &Codes) {
        let first = self.0.len();
        let hashed = (0..vectors.len())
            .into_par_iter()
            .map(|row| (xxh3_64(vectors.bytes(row)), (first + row) as u32));
        self.0.par_extend(hashed);
    }

    /// The documents to compare: each of a hash more than [`MANY_COPIES`] share, with the
    /// first of that hash.
    pub(super) fn sought(self) -> SoughtCopies {
        let documents = self.0.len();
        let mut keyed = self.0;
        keyed.par_sort_unstable();
        let mut sought = Vec::new();
        for same_hash in keyed.chunk_by(|a, b| a.0 == b.0) {
            if same_hash.len() > MANY_COPIES {
                let first = same_hash[0].1;
                sought.extend(same_hash.iter().map(|&(_, doc)| (doc, first)));
            }
        }
        sought.sort_unstable();
        SoughtCopies {
            documents,
            sought,
            next: 0,
            firsts: HashMap::new(),
            same: Vec::new(),
        }
    }
}

/// The second pass: each sought document compared with the first of its hash.
pub(super) struct SoughtCopies {
    /// How many documents were hashed.
    pub(super) documents: usize,
    /// `(document, first of its hash)`, ascending; a first with itself.
    sought: Vec<(u32, u32)>,
    /// The next of `sought` to see.
    next: usize,
    /// The codes of each first, once seen.
    firsts: HashMap<u32, Vec<u8>>,
    /// `(copy, first)`: the documents whose codes are their first's.
    same: Vec<(u32, u32)>,
}

impl SoughtCopies {
    /// Whether `doc` shares its vector's hash with more than [`MANY_COPIES`] documents and
    /// is not the first of them.
    pub(super) fn is_later_copy(&self, doc: u32) -> bool {
        (self
            .sought
            .binary_search_by_key(&doc, |&(sought, _)| sought))
        .is_ok_and(|at| self.sought[at].1 != doc)
    }

    /// Sees document `doc`'s codes `bytes`; the documents are seen in order.
    pub(super) fn see(&mut self, doc: u32, bytes: &[u8]) {
        let Some(&(sought, first)) = self.sought.get(self.next) else {
            return;
        };
        if sought != doc {
            return;
        }
        self.next += 1;
        if first == doc {
            self.firsts.insert(first, bytes.to_vec());
        } else if self.firsts[&first] == bytes {
            // A different vector under the same hash is left to be searched.
            self.same.push((doc, first));
        }
    }

    /// The documents whose vector more than [`MANY_COPIES`] hold, each with the first of them:
    /// `(copy, first)`, ascending by copy.
    pub(super) fn found(self) -> Vec<(u32, u32)> {
        let mut held: HashMap<u32, usize> = HashMap::new();
        for &(_, first) in &self.same {
            *held.entry(first).or_default() += 1;
        }
        let mut copies = self.same;
        copies.retain(|(_, first)| held[first] >= MANY_COPIES);
        copies
    }
}

/// Whether `doc` is one of `copies` (`(copy, first)`, ascending by copy, as
/// [`CellPlacement::copies`] lists them): a copy of a vector that many hold, paired with its
/// first rather than searched.
pub(crate) fn is_paired_copy(copies: &[(u32, u32)], doc: u32) -> bool {
    copies.binary_search_by_key(&doc, |&(copy, _)| copy).is_ok()
}
