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

use crate::error::Result;
use crate::io::ScratchDir;
use crate::spill::SpillRows;

/// A document's row in the spill file where it has none.
const NO_ROW: u32 = u32::MAX;

/// Where a pending document's vector comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum VectorSource {
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
            reused: 0,
            _scratch: scratch,
        })
    }

    /// Where the vector of document `doc` comes from, whose text is `first`'s where it is a
    /// copy; `pending` are the documents of the batch so far, in reading order.
    pub fn source(&mut self, first: Option<u32>, pending: &[u32]) -> VectorSource {
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

    /// Keeps the final vector of `doc`, whose text was embedded.
    pub fn keep(&mut self, doc: u32, vector: &[f32]) -> Result<()> {
        let row = self.rows.push(vector)?;
        let doc = doc as usize;
        if self.row_of_doc.len() <= doc {
            self.row_of_doc.resize(doc + 1, NO_ROW);
        }
        self.row_of_doc[doc] = row;
        Ok(())
    }

    /// The vector kept in `row`, into `vector`.
    pub fn read(&mut self, row: u32, vector: &mut Vec<f32>) -> Result<()> {
        self.rows.read(row, vector)
    }

    /// Documents that took an earlier text's vector.
    pub fn reused(&self) -> usize {
        self.reused
    }
}
