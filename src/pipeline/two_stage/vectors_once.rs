//! Each distinct text embedded once.
//!
//! An exact copy of a text read before (the same text and title, as [`SignOnce`] tells them
//! apart) takes that text's vector instead of being embedded again: from its own batch where
//! the first is pending there, else from a spill file that holds the final (centred) vector of
//! every text embedded so far, one row each. A corpus of one abstract a million times embeds
//! one text, and a generated corpus (19% exact copies) a fifth fewer.
//!
//! The vectors are those embedding each copy gives wherever an embedder's vector of a text
//! does not depend on the other texts of its batch (the static model, GloVe): the outputs are
//! byte-equal to embedding every copy. MiniLM's vector of a text may differ in its last bits
//! with the other texts of its batch; there a copy now has its first's vector exactly.
//!
//! [`SignOnce`]: crate::confirm::SignOnce

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crate::error::Result;
use crate::index::DocumentIndex;
use crate::io::ScratchDir;
use crate::spill::SpillRows;

/// A document's row in the spill file where it has none.
const NO_ROW: u32 = u32::MAX;

/// Where a pending document's vector comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum VectorSource {
    /// Its text is embedded with the batch.
    Embedded,
    /// The pending document at this place in the batch holds its text: its vector is that one's.
    Pending(usize),
    /// An earlier batch embedded its text: the spill file's row.
    Spilled(u32),
}

/// The vectors of the texts embedded so far, for their later copies.
pub(super) struct VectorsOnce {
    rows: SpillRows,
    /// Each document's row in `rows`, or [`NO_ROW`].
    row_of_doc: Vec<u32>,
    /// Where each pending document's vector comes from.
    sources: Vec<VectorSource>,
    reused: usize,
    _scratch: ScratchDir,
}

impl VectorsOnce {
    /// An empty set of vectors of `width` floats, spilled to a scratch folder.
    pub fn new(width: usize) -> Result<Self> {
        let scratch = ScratchDir::new()?;
        Ok(VectorsOnce {
            rows: SpillRows::create(scratch.path(), width)?,
            row_of_doc: Vec::new(),
            sources: Vec::new(),
            reused: 0,
            _scratch: scratch,
        })
    }

    /// Notes where the next pending document's vector comes from, whose text is `first`'s
    /// where it is a copy; `pending` are the documents of the batch so far, in reading order.
    /// Whether its text is to be embedded.
    pub fn note(&mut self, first: Option<u32>, pending: &[u32]) -> bool {
        let source = self.source(first, pending);
        self.sources.push(source);
        source == VectorSource::Embedded
    }

    fn source(&mut self, first: Option<u32>, pending: &[u32]) -> VectorSource {
        let Some(first) = first else {
            return VectorSource::Embedded;
        };
        let source = match pending.binary_search(&first) {
            Ok(at) => VectorSource::Pending(at),
            Err(_) => match self.row_of_doc.get(first as usize) {
                Some(&row) if row != NO_ROW => VectorSource::Spilled(row),
                // Its first was not embedded here (another part's document).
                _ => return VectorSource::Embedded,
            },
        };
        self.reused += 1;
        source
    }

    /// The vectors of the pending documents `docs` (their texts `texts`, empty where noted
    /// not to embed), then of `titles`, embedded with `index`'s embedder into `buffer` and
    /// centred: each distinct text embedded once. Keeps every text's vector for later copies.
    pub fn embed_batch(
        &mut self,
        index: &DocumentIndex,
        docs: &[u32],
        texts: &[String],
        titles: &[(u32, String)],
        mut buffer: Vec<Vec<f32>>,
    ) -> Result<Vec<Vec<f32>>> {
        let embedded = (self.sources.iter().zip(texts))
            .filter(|(source, _)| **source == VectorSource::Embedded)
            .map(|(_, text)| text);
        let texts_embedded: Vec<&str> = embedded
            .chain(titles.iter().map(|t| &t.1))
            .map(String::as_str)
            .collect();
        index.embedder().embed_into(&texts_embedded, &mut buffer)?;
        // Each document's vector as embedding its own text gives it; a copy an earlier batch
        // embedded waits for its row, which holds the vector centred already.
        let mut made = buffer.into_iter();
        let mut vectors: Vec<Vec<f32>> = Vec::with_capacity(texts.len() + titles.len());
        for source in &self.sources {
            let vector = match *source {
                VectorSource::Embedded => made.next().expect("a vector for each text"),
                VectorSource::Pending(at) => vectors[at].clone(),
                VectorSource::Spilled(_) => Vec::new(),
            };
            vectors.push(vector);
        }
        vectors.extend(made);
        let spilled = |source: &VectorSource| matches!(source, VectorSource::Spilled(_));
        // A batch after the first: its centre is learned already, or never will be.
        if !self.sources.iter().any(spilled) {
            index.learn_centre(&vectors[..texts.len()]);
        }
        let mut fresh: Vec<&mut Vec<f32>> = Vec::new();
        let mut kept: Vec<(&mut Vec<f32>, u32)> = Vec::new();
        for (at, vector) in vectors.iter_mut().enumerate() {
            match self.sources.get(at) {
                Some(VectorSource::Spilled(row)) => kept.push((vector, *row)),
                _ => fresh.push(vector),
            }
        }
        index.centre_all(fresh);
        // A row many copies of the batch share is read once.
        let mut read: HashMap<u32, usize> = HashMap::new();
        for at in 0..kept.len() {
            let row = kept[at].1;
            match read.entry(row) {
                Entry::Occupied(first) => *kept[at].0 = kept[*first.get()].0.clone(),
                Entry::Vacant(slot) => {
                    slot.insert(at);
                    self.rows.read(row, kept[at].0)?;
                }
            }
        }
        for at in 0..docs.len() {
            if self.sources[at] == VectorSource::Embedded {
                self.keep(docs[at], &vectors[at])?;
            }
        }
        Ok(vectors)
    }

    /// Forgets the pending documents' sources: their batch is done.
    pub fn clear_batch(&mut self) {
        self.sources.clear();
    }

    /// Keeps the final vector of `doc`, whose text was embedded.
    fn keep(&mut self, doc: u32, vector: &[f32]) -> Result<()> {
        let row = self.rows.push(vector)?;
        let doc = doc as usize;
        if self.row_of_doc.len() <= doc {
            self.row_of_doc.resize(doc + 1, NO_ROW);
        }
        self.row_of_doc[doc] = row;
        Ok(())
    }

    /// Documents that took an earlier text's vector.
    pub fn reused(&self) -> usize {
        self.reused
    }
}
