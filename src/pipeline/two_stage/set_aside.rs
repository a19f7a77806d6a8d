//! What waits on disk while a stage needs the memory.
//!
//! The confirm stage needs every document's signature and facts (1.2 GB at a million
//! documents), and the search needs every document's vector (1 GB in cells) and the
//! candidates it finds (tens of millions): held at once, they were most of a run's peak
//! memory. Between the two stages nothing reads the sketches, so they wait in a spill file
//! ([`SketchesAside`]); while the sketches are read, the candidates wait in another
//! ([`CandidatesAside`]) and come back a batch at a time. Each is written once and read back
//! in a second or two at a million documents.

use std::io::{Read, Write};
use std::path::Path;

use crate::confirm::SketchFacts;
use crate::error::Result;
use crate::sketch::Signatures;
use crate::spill::{Spill, SpillReader};

/// Bytes a candidate `(a, b, cosine)` takes in its file.
const CANDIDATE_BYTES: usize = 12;
/// Candidates read back at a time.
const READ_CANDIDATES: usize = (1 << 20) / CANDIDATE_BYTES;

/// Sketches waiting in a file for the confirm stage.
pub(in crate::pipeline) struct SketchesAside(SpillReader);

impl SketchesAside {
    /// Writes `signatures` and `sketches` to an unnamed file in `dir` and gives their memory
    /// back.
    pub(in crate::pipeline) fn write(
        dir: &Path,
        signatures: Signatures,
        sketches: SketchFacts,
    ) -> Result<Self> {
        Spill::of(dir, |w| {
            signatures.write_to(w)?;
            drop(signatures);
            sketches.write_to(w)
        })
        .map(SketchesAside)
    }

    /// The signatures and sketches, read back.
    pub(in crate::pipeline) fn read_back(mut self) -> Result<(Signatures, SketchFacts)> {
        self.0.rewind()?;
        self.0
            .read(|r| Ok((Signatures::read_from(r)?, SketchFacts::read_from(r)?)))
    }
}

/// Candidate pairs `(a, b, cosine)` waiting in a file while the sketches are read back.
pub(in crate::pipeline) struct CandidatesAside {
    file: SpillReader,
    len: usize,
}

impl CandidatesAside {
    /// Writes `candidates` to an unnamed file in `dir` and gives their memory back.
    pub(in crate::pipeline) fn write(dir: &Path, candidates: Vec<(u32, u32, f32)>) -> Result<Self> {
        let len = candidates.len();
        let file = Spill::of(dir, |w| {
            for &(a, b, cosine) in &candidates {
                w.write_all(&a.to_le_bytes())?;
                w.write_all(&b.to_le_bytes())?;
                w.write_all(&cosine.to_le_bytes())?;
            }
            Ok(())
        })?;
        Ok(CandidatesAside { file, len })
    }

    /// How many candidates wait.
    pub(in crate::pipeline) fn len(&self) -> usize {
        self.len
    }

    /// Hands the candidates to `each`, in order, `batch` at a time.
    pub(in crate::pipeline) fn for_each_batch(
        &mut self,
        batch: usize,
        mut each: impl FnMut(&[(u32, u32, f32)]),
    ) -> Result<()> {
        let len = self.len;
        self.file.rewind()?;
        self.file.read(|r| {
            let mut read = 0;
            let mut candidates = Vec::with_capacity(batch.min(len));
            while read < len {
                let n = batch.min(len - read);
                read_candidates(r, n, &mut candidates)?;
                each(&candidates);
                candidates.clear();
                read += n;
            }
            Ok(())
        })
    }

    /// All the candidates, read back.
    pub(in crate::pipeline) fn read_back(mut self) -> Result<Vec<(u32, u32, f32)>> {
        let len = self.len;
        self.file.rewind()?;
        self.file.read(|r| {
            let mut candidates = Vec::with_capacity(len);
            read_candidates(r, len, &mut candidates)?;
            Ok(candidates)
        })
    }
}

/// Appends `n` candidates read from `r` to `into`.
fn read_candidates(
    r: &mut impl Read,
    n: usize,
    into: &mut Vec<(u32, u32, f32)>,
) -> std::io::Result<()> {
    let word = |b: &[u8]| [b[0], b[1], b[2], b[3]];
    let mut bytes = vec![0u8; READ_CANDIDATES * CANDIDATE_BYTES];
    let mut left = n;
    while left > 0 {
        let take = left.min(bytes.len() / CANDIDATE_BYTES);
        let bytes = &mut bytes[..take * CANDIDATE_BYTES];
        r.read_exact(bytes)?;
        into.extend(bytes.chunks_exact(CANDIDATE_BYTES).map(|c| {
            (
                u32::from_le_bytes(word(&c[0..4])),
                u32::from_le_bytes(word(&c[4..8])),
                f32::from_le_bytes(word(&c[8..12])),
            )
        }));
        left -= take;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confirm::Facts;

    #[test]
    fn sketches_set_aside_come_back_as_they_were_and_leave_no_file() {
        let mut signatures = Signatures::new(3);
        signatures.push(&[1, 2, 3], false);
        signatures.push(&[u32::MAX, 0, 7], true);
        let mut sketches = SketchFacts::default();
        sketches.push(
            9,
            Facts {
                title: Some(vec![5, 6]),
                numbers: vec![2009],
                title_numbers: vec![],
                body: true,
                sample: vec![1, 4, 9],
            }
            .as_ref(),
        );
        // A title with no words is not the same as no title.
        sketches.push(
            0,
            Facts {
                title: Some(vec![]),
                ..Facts::default()
            }
            .as_ref(),
        );
        let dir = tempfile::tempdir().unwrap();
        let aside = SketchesAside::write(dir.path(), signatures.clone(), sketches.clone()).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let (signatures_back, sketches_back) = aside.read_back().unwrap();
        assert_eq!(signatures_back, signatures);
        assert_eq!(sketches_back, sketches);
        assert_ne!(sketches_back.facts(1).title, None);
    }

    #[test]
    fn candidates_set_aside_come_back_in_order_in_batches_and_whole() {
        // More than one read buffer holds.
        let candidates: Vec<(u32, u32, f32)> = (0..200_000u32)
            .map(|i| (i, i * 7 + 1, i as f32 / 1000.0 - 0.25))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let mut aside = CandidatesAside::write(dir.path(), candidates.clone()).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut batches = Vec::new();
        let mut seen = Vec::new();
        aside
            .for_each_batch(90_000, |batch| {
                batches.push(batch.len());
                seen.extend_from_slice(batch);
            })
            .unwrap();
        assert_eq!(batches, [90_000, 90_000, 20_000]);
        assert_eq!(seen, candidates);
        assert_eq!(aside.read_back().unwrap(), candidates);
    }
}
