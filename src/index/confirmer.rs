//! The MinHash half of a two-stage index: signing records and judging candidate pairs, without
//! the embedder or the vector store.

use crate::error::Result;
use crate::io::Record;
use crate::sketch::{Evidence, LshParams, MinHasher, Sketch, SketchRef, Verdict};
use crate::text::{Shingler, UNIGRAMS};

use super::IndexSettings;

/// Signs records and confirms candidates exactly as an index with these settings does. The
/// index holds one; `neardup merge` builds one to confirm the candidates that parts searched
/// on other machines.
pub struct Confirmer {
    settings: IndexSettings,
    shingler: Shingler,
    hasher: MinHasher,
    banding: LshParams,
}

impl Confirmer {
    /// The confirmer of `settings` (shingling, MinHash and rule; the embedder is not loaded).
    pub fn new(settings: &IndexSettings) -> Result<Self> {
        Ok(Confirmer {
            shingler: settings.shingling.shingler(UNIGRAMS)?,
            hasher: settings.minhash.hasher(),
            banding: settings.minhash.banding(&settings.rule),
            settings: settings.clone(),
        })
    }

    /// What the confirm stage needs of a record: its MinHash signature, distinct shingle
    /// count and facts.
    pub fn sign(&self, record: &Record) -> Sketch {
        Sketch::of(record, &self.shingler, &self.hasher).0
    }

    /// The verdict on a candidate (two documents' sketches and the cosine of their
    /// embeddings), with the evidence it rests on. A neighbour below `min_cosine` is no
    /// candidate at all.
    pub fn confirm(&self, a: SketchRef<'_>, b: SketchRef<'_>, cosine: f32) -> (Evidence, Verdict) {
        self.settings.confirm(a, b, cosine, self.banding)
    }
}
