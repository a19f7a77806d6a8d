//! A signed part's share of the run: the sketches of its documents, read whole or a block at a
//! time.

use super::sketches::{SKETCHES, visit_sketch_blocks};
use super::stage::SignedParts;
use crate::confirm::SketchFacts;
use crate::error::{Error, Result};
use crate::sketch::Signatures;

/// The sketches a signed part wrote: a row for each of its documents, in order.
pub(in crate::pipeline) struct Share {
    /// The run's numbers of its documents.
    pub docs: std::ops::Range<u32>,
    pub signatures: Signatures,
    pub sketches: SketchFacts,
}

impl Share {
    /// The sketches of part `number`.
    pub fn read(signed: &SignedParts, number: u32) -> Result<Share> {
        let num_perm = signed.folder(number).config.confirm.minhash.num_perm;
        let mut signatures = Signatures::new(num_perm);
        let mut sketches = SketchFacts::default();
        Share::visit(signed, number, |block| {
            signatures.extend(&block.signatures);
            sketches.extend(block.sketches);
        })?;
        Ok(Share {
            docs: signed.docs_of(number),
            signatures,
            sketches,
        })
    }

    /// Reads the sketches of part `number` a block at a time, handing `visit` each block as a
    /// share of its own: what a reader needing only some rows holds at once.
    pub(in crate::pipeline) fn visit(
        signed: &SignedParts,
        number: u32,
        mut visit: impl FnMut(Share),
    ) -> Result<()> {
        let folder = signed.folder(number);
        let num_perm = folder.config.confirm.minhash.num_perm;
        let docs = signed.docs_of(number);
        let mut first = docs.start;
        folder.folder.read_with(SKETCHES, |r| {
            visit_sketch_blocks(r, num_perm, |signatures, sketches| {
                let end = first.saturating_add(signatures.len() as u32);
                let block = Share {
                    docs: first..end,
                    signatures,
                    sketches,
                };
                visit(block);
                first = end;
            })
        })?;
        if first != docs.end {
            return Err(Error::Usage(format!(
                "{} holds {} sketches, and its summary counts {} documents: sign the part again",
                folder.dir.display(),
                first - docs.start,
                docs.len()
            )));
        }
        Ok(())
    }
}
