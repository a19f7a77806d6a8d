//! Stage 1, sign: a part's share of the documents signed, and their keys routed.

use std::io::Read;
use std::time::Instant;

use crate::confirm::{Confirm, Confirmer, FactsRef, Sketch, SketchFacts, title_key};
use crate::error::{Error, Result};
use crate::io::{ByteRange, FolderLock, Input, read_corpus_in, read_list, write_count, write_list};
use crate::output::run::{IdsDigest, RecordsDigest, RunFile, RunWriter, StageTimes};
use crate::pipeline::split::sketches::{BLOCK_DOCUMENTS, SKETCHES, write_sketch_block};
use crate::pipeline::split::stage::{PartWritten, Stage, StageFolder, stage_summary};
use crate::pipeline::{Method, Part, Run};
use crate::sketch::{LshParams, Signatures, band_keys};

/// Stage 1: signs the documents of the part `run`'s MinHash settings name (those that start
/// in its [`ByteRange`] of the input), and writes their sketches and their keys, routed to
/// the parts that own them, into the folder `lock` holds.
pub(in crate::pipeline) fn sign_part(run: &Run, lock: FolderLock) -> Result<PartWritten> {
    let spec = run.spec();
    let Method::MinHash(config) = &spec.method else {
        unreachable!("only MinHash signs in stages")
    };
    let part = config.part.expect("a part to sign");
    let (inputs, read) = (run.inputs(), run.read());
    let confirmer = Confirmer::new(&config.confirm, -1.0)?;
    let banding = confirmer.banding();
    let titles = config.confirm.rule.confirm == Confirm::Evidence;
    let total = inputs.iter().map(Input::size).sum();
    let range = ByteRange::share(part.number, part.count, total);
    let clock = Instant::now();
    let mut run = RunWriter::begin(lock)?;
    let mut files = SignedFiles::create(&run, part, confirmer.num_perm())?;
    let mut doc = 0u32;
    // Documents are numbered within the part; the stages after add the parts before.
    let corpus = read_corpus_in(
        inputs,
        read,
        range,
        |record| confirmer.sign(record),
        |sketch| {
            let signed = (
                &sketch.signature[..],
                sketch.shingles,
                sketch.facts.as_ref(),
            );
            route_keys(signed, banding, titles, |band, key| {
                files.keys.key(part, band, key, doc);
            });
            files.sketch(sketch);
            doc += 1;
        },
    )?;
    files.finish(&mut run)?;
    let times = StageTimes {
        sketch: clock.elapsed().as_secs_f64(),
        ..StageTimes::default()
    };
    tracing::info!(part = %part, documents = corpus.ids.len(), from_byte = range.start, "signed");
    let mut summary = stage_summary(spec, Stage::Signed, None, corpus.ids.len(), (0, 0), times);
    summary.ids_digest = Some(IdsDigest::of(corpus.ids.iter().map(String::as_str)));
    summary.records_digest = Some(RecordsDigest::of(&corpus.fingerprints));
    Ok(PartWritten {
        summary: run.finish(summary)?,
        skipped: corpus.skipped,
    })
}

/// Words a block of a keys file holds (4 MB).
const BLOCK_WORDS: usize = 1 << 20;

/// A signed part's files, written a block at a time as documents are signed, so that a signer
/// holds a block of each, not its share (a share of ten million documents in eight parts is
/// 1.6 GB of sketches and keys). `sketches.bin` is blocks of a document count and its rows,
/// ended by a count of 0 ([`visit_sketch_blocks`](crate::pipeline::split::sketches::visit_sketch_blocks)); the keys are [`KeyFiles`].
struct SignedFiles {
    /// Documents a block holds.
    block: usize,
    sketches: RunFile,
    signatures: Signatures,
    facts: SketchFacts,
    keys: KeyFiles,
    /// The first write of sketches that failed: the rest are not tried.
    failed: Option<Error>,
}

impl SignedFiles {
    fn create(run: &RunWriter, part: Part, num_perm: usize) -> Result<SignedFiles> {
        Ok(SignedFiles {
            block: BLOCK_DOCUMENTS,
            sketches: run.create(SKETCHES)?,
            signatures: Signatures::new(num_perm),
            facts: SketchFacts::default(),
            keys: KeyFiles::create(run, part)?,
            failed: None,
        })
    }

    /// The next document's sketch.
    fn sketch(&mut self, sketch: Sketch) {
        self.facts
            .push_sketch(&mut self.signatures, sketch.as_ref());
        if self.signatures.len() >= self.block && self.failed.is_none() {
            self.failed = self.write_sketches().err();
        }
    }

    /// Writes the sketches held as a block, and lets them go.
    fn write_sketches(&mut self) -> Result<()> {
        let file = &mut self.sketches;
        write_sketch_block(file, &self.signatures, &self.facts)
            .map_err(|e| Error::io(file.target(), e))?;
        self.signatures = Signatures::new(self.signatures.num_perm());
        self.facts = SketchFacts::default();
        Ok(())
    }

    /// Writes what is held and the ends of the files, and puts them in place.
    fn finish(mut self, run: &mut RunWriter) -> Result<()> {
        if let Some(failed) = self.failed.take() {
            return Err(failed);
        }
        if !self.signatures.is_empty() {
            self.write_sketches()?;
        }
        write_count(&mut self.sketches, 0).map_err(|e| Error::io(self.sketches.target(), e))?;
        run.commit(self.sketches)?;
        self.keys.finish(run)
    }
}

/// A signed part's keys, each in the file of the part it hashes to (`keys-J.bin`): lists of
/// words (band, key as two words, document), ended by an empty one ([`read_word_blocks`]).
pub(in crate::pipeline) struct KeyFiles {
    /// Words a block holds.
    block: usize,
    /// Per part the keys go to: its file and the words not yet written.
    files: Vec<(RunFile, Vec<u32>)>,
    /// The first write that failed: the rest are not tried.
    failed: Option<Error>,
}

impl KeyFiles {
    pub(in crate::pipeline) fn create(run: &RunWriter, part: Part) -> Result<KeyFiles> {
        Ok(KeyFiles {
            block: BLOCK_WORDS,
            files: part
                .all()
                .map(|to| Ok((run.create(&keys_file(to))?, Vec::new())))
                .collect::<Result<_>>()?,
            failed: None,
        })
    }

    /// Band `band`'s `key` of document `doc` (numbered in the part), in the file of the part
    /// of a split like `part` that the key hashes to.
    pub(in crate::pipeline) fn key(&mut self, part: Part, band: u32, key: u64, doc: u32) {
        let to = part.index_of(key ^ u64::from(band).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        self.words(to, [band, key as u32, (key >> 32) as u32, doc]);
    }

    /// A key's words for the part at `to` (from 0).
    fn words(&mut self, to: usize, words: [u32; 4]) {
        let (file, block) = &mut self.files[to];
        block.extend(words);
        if block.len() >= self.block && self.failed.is_none() {
            let written = write_list(file, block).map_err(|e| Error::io(file.target(), e));
            self.failed = written.err();
            block.clear();
        }
    }

    /// Writes what is held and the ends of the files, and puts them in place.
    pub(in crate::pipeline) fn finish(self, run: &mut RunWriter) -> Result<()> {
        if let Some(failed) = self.failed {
            return Err(failed);
        }
        for (mut file, block) in self.files {
            (|| {
                if !block.is_empty() {
                    write_list(&mut file, &block)?;
                }
                write_list(&mut file, &[])
            })()
            .map_err(|e| Error::io(file.target(), e))?;
            run.commit(file)?;
        }
        Ok(())
    }
}

/// Hands `route` a document's keys as `(band, key)`: one for each band of its `signature`
/// (none for a document with no shingles), and where `titles` (the evidence rule) its title's
/// under [`TITLE_BAND`].
pub(in crate::pipeline) fn route_keys(
    (signature, shingles, facts): (&[u32], u32, FactsRef<'_>),
    banding: LshParams,
    titles: bool,
    mut route: impl FnMut(u32, u64),
) {
    if shingles > 0 {
        for (band, key) in band_keys(signature, banding).enumerate() {
            route(band as u32, key);
        }
    }
    if titles && let Some(key) = title_key(facts) {
        route(TITLE_BAND, key);
    }
}

/// Reads the blocks of a keys file, as one list.
pub(super) fn read_word_blocks(r: &mut impl Read) -> std::io::Result<Vec<u32>> {
    let mut words = Vec::new();
    loop {
        let block = read_list(r)?;
        if block.is_empty() {
            return Ok(words);
        }
        words.extend(block);
    }
}

/// The band number that marks a title key among the band keys.
pub(super) const TITLE_BAND: u32 = u32::MAX;

/// The file of keys a signed part routes to `part`.
pub(super) fn keys_file(part: Part) -> String {
    format!("keys-{}.bin", part.number)
}

/// A file of keys a signed part wrote, read back checked.
pub(super) fn read_keys(folder: &StageFolder, name: &str) -> Result<Vec<u32>> {
    folder.folder.read_with(name, read_word_blocks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confirm::Facts;
    use crate::pipeline::split::sketches::{visit_sketch_blocks, write_sketches};

    #[test]
    fn files_written_in_blocks_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("signed");
        let mut run = RunWriter::begin(RunWriter::lock(&out).unwrap()).unwrap();
        let part = Part {
            number: 1,
            count: 2,
        };
        let mut files = SignedFiles::create(&run, part, 4).unwrap();
        // Blocks of 3 documents and 8 words: 10 documents make 4 blocks, the last short.
        (files.block, files.keys.block) = (3, 8);
        let mut keys = [Vec::new(), Vec::new()];
        for doc in 0..10u32 {
            let words = [doc, doc * 7, doc * 11, doc];
            files.keys.words(doc as usize % 2, words);
            keys[doc as usize % 2].extend(words);
            files.sketch(Sketch {
                signature: vec![doc, doc + 1, doc + 2, doc + 3],
                shingles: doc,
                facts: Facts::of(Some("a title"), &format!("body {doc}")),
            });
        }
        files.finish(&mut run).unwrap();
        let read = |name: &str| std::fs::read(out.join(name)).unwrap();
        let read_sketches = |bytes: &[u8]| {
            let mut all = (Signatures::new(4), SketchFacts::default(), Vec::new());
            visit_sketch_blocks(&mut &bytes[..], 4, |block, facts| {
                all.2.push(block.len());
                all.0.extend(&block);
                all.1.extend(facts);
            })
            .map(|()| all)
        };
        let (signatures, sketches, blocks) = read_sketches(&read(SKETCHES)).unwrap();
        assert_eq!(blocks, [3, 3, 3, 1]);
        assert_eq!(signatures.len(), 10);
        assert_eq!(signatures.row(7), [7, 8, 9, 10]);
        assert!(signatures.is_empty_doc(0) && !signatures.is_empty_doc(1));
        assert_eq!(sketches.shingles(9), 9);
        assert_eq!(
            sketches.facts(4),
            Facts::of(Some("a title"), "body 4").as_ref()
        );
        for (to, keys) in part.all().zip(keys) {
            assert_eq!(
                read_word_blocks(&mut &read(&keys_file(to))[..]).unwrap(),
                keys
            );
        }
        // A whole part's sketches written at once come in blocks too.
        let (mut whole, mut facts) = (Signatures::new(4), SketchFacts::default());
        for doc in 0..(2 * BLOCK_DOCUMENTS + 3) as u32 {
            whole.push(&[doc, 1, 2, 3], doc % 5 == 0);
            facts.push(
                u32::from(doc % 5 != 0),
                Facts::of(None, &format!("text {doc}")).as_ref(),
            );
        }
        let mut bytes = Vec::new();
        write_sketches(&mut bytes, &whole, &facts).unwrap();
        let (signatures, sketches, blocks) = read_sketches(&bytes).unwrap();
        assert_eq!(blocks, [BLOCK_DOCUMENTS, BLOCK_DOCUMENTS, 3]);
        assert_eq!((signatures, sketches), (whole, facts));
        // A file cut short is an error, not a share.
        let sketches = read(SKETCHES);
        let cut = read_sketches(&sketches[..sketches.len() - 8]);
        assert_eq!(cut.unwrap_err().kind(), std::io::ErrorKind::UnexpectedEof);
    }
}
