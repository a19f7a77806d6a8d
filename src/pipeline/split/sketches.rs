//! A signed part's sketches file (`sketches.bin`): its documents' signatures and facts in
//! blocks, so that a reader holds one block at a time. MinHash's signed parts and two-stage's
//! embedded parts write it alike.

use std::io::{Read, Write};

use crate::confirm::SketchFacts;
use crate::io::{read_count, write_count};
use crate::sketch::Signatures;

/// The sketches of a signed part's documents.
pub(in crate::pipeline) const SKETCHES: &str = "sketches.bin";

/// Documents a block of `sketches.bin` holds.
pub(in crate::pipeline) const BLOCK_DOCUMENTS: usize = 16_384;

/// Writes one block of a sketches file: a count of documents, then their rows.
pub(in crate::pipeline) fn write_sketch_block(
    w: &mut impl Write,
    signatures: &Signatures,
    facts: &SketchFacts,
) -> std::io::Result<()> {
    write_count(w, signatures.len())?;
    signatures.write_to(w)?;
    facts.write_to(w)
}

/// Writes a whole sketches file at once: `signatures` and `facts` in blocks of
/// [`BLOCK_DOCUMENTS`], as a signer writes them, so that a reader holds a block; and the end.
pub(in crate::pipeline) fn write_sketches(
    w: &mut impl Write,
    signatures: &Signatures,
    facts: &SketchFacts,
) -> std::io::Result<()> {
    for start in (0..signatures.len()).step_by(BLOCK_DOCUMENTS) {
        let mut block = (
            Signatures::new(signatures.num_perm()),
            SketchFacts::default(),
        );
        for doc in start..signatures.len().min(start + BLOCK_DOCUMENTS) {
            block
                .1
                .push_sketch(&mut block.0, facts.get(signatures, doc));
        }
        write_sketch_block(w, &block.0, &block.1)?;
    }
    write_count(w, 0)
}

/// Reads the blocks of a sketches file one at a time, handing each to `visit`: what a reader
/// that keeps a few rows holds at once.
pub(in crate::pipeline) fn visit_sketch_blocks(
    r: &mut impl Read,
    num_perm: usize,
    mut visit: impl FnMut(Signatures, SketchFacts),
) -> std::io::Result<()> {
    loop {
        let count = read_count(r)?;
        if count == 0 {
            return Ok(());
        }
        let block = Signatures::read_from(r)?;
        let facts = SketchFacts::read_from(r)?;
        if block.len() != count || facts.len() != count || block.num_perm() != num_perm {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "a block of sketches holds other than the documents it counts",
            ));
        }
        visit(block, facts);
    }
}
