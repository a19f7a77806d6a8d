//! A copy of what an index's store holds, kept beside it in one plain file: every document's
//! id, vector and sketch.
//!
//! Reading a whole store point by point (a scroll) took a minute at a million documents, most
//! of a run that checks a batch against the collection (`dedup --against`); the same read from
//! a plain file takes seconds. The copy is written after such a read, and any write to the
//! index removes it first, so that a copy present is the store's as it is. A copy whose count
//! is not the store's is not read.

use std::io::{BufReader, Read, Write};
use std::path::PathBuf;

use super::DocumentIndex;
use crate::confirm::{SketchFacts, SketchRef};
use crate::error::{Error, Result};
use crate::output::AtomicFile;
use crate::sketch::Signatures;

/// The copy's file in an index folder.
pub const SNAPSHOT: &str = "snapshot.bin";
/// What the file starts with.
const MAGIC: &[u8] = b"neardup snapshot 1\n";
/// Bytes of vectors read at a time.
const READ_BLOCK: usize = 1 << 20;

/// Every document of an index: its id, vector (as stored: centred where the index centres)
/// and sketch, in one order.
pub struct Snapshot {
    pub ids: Vec<String>,
    /// The vectors, row-major, `width` each.
    pub vectors: Vec<f32>,
    pub width: usize,
    pub signatures: Signatures,
    pub sketches: SketchFacts,
}

impl Snapshot {
    /// None yet, of vectors `width` wide and signatures of `num_perm` slots.
    pub fn empty(width: usize, num_perm: usize) -> Snapshot {
        Snapshot {
            ids: Vec::new(),
            vectors: Vec::new(),
            width,
            signatures: Signatures::new(num_perm),
            sketches: SketchFacts::default(),
        }
    }

    /// Appends a document.
    pub fn push(&mut self, id: &str, vector: &[f32], sketch: SketchRef<'_>) {
        self.ids.push(id.to_owned());
        self.vectors.extend_from_slice(vector);
        self.sketches.push_sketch(&mut self.signatures, sketch);
    }
}

impl DocumentIndex {
    fn snapshot_path(&self) -> PathBuf {
        self.dir.join(SNAPSHOT)
    }

    /// The copy of the store, where there is one of as many documents as the store holds.
    pub fn read_snapshot(&self) -> Result<Option<Snapshot>> {
        let path = self.snapshot_path();
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(&path, e)),
        };
        let bytes = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        let snapshot = read(&mut BufReader::with_capacity(1 << 20, file), bytes).map_err(|e| {
            Error::Damaged {
                path: path.clone(),
                problem: format!("it cannot be read ({e}); delete it, and it is made again"),
            }
        })?;
        let stored = self.store.len()?;
        let fits = snapshot.ids.len() == stored && snapshot.width == self.manifest.dimensions;
        Ok(fits.then_some(snapshot))
    }

    /// Writes `snapshot` as the copy of the store (whole, or not at all).
    pub fn write_snapshot(&self, snapshot: &Snapshot) -> Result<()> {
        let path = self.snapshot_path();
        let mut file = AtomicFile::create(&path)?;
        write(&mut file, snapshot).map_err(|e| Error::io(&path, e))?;
        file.commit()
    }

    /// Removes the copy of the store: done before every write to it.
    pub(super) fn forget_snapshot(&self) -> Result<()> {
        let path = self.snapshot_path();
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(&path, e)),
            _ => Ok(()),
        }
    }
}

fn write(w: &mut impl Write, snapshot: &Snapshot) -> std::io::Result<()> {
    w.write_all(MAGIC)?;
    w.write_all(&(snapshot.ids.len() as u64).to_le_bytes())?;
    w.write_all(&(snapshot.width as u32).to_le_bytes())?;
    for id in &snapshot.ids {
        w.write_all(&(id.len() as u32).to_le_bytes())?;
        w.write_all(id.as_bytes())?;
    }
    for x in &snapshot.vectors {
        w.write_all(&x.to_le_bytes())?;
    }
    snapshot.signatures.write_to(w)?;
    snapshot.sketches.write_to(w)?;
    Ok(())
}

/// Reads a snapshot of `bytes` bytes.
fn read(r: &mut impl Read, bytes: u64) -> std::io::Result<Snapshot> {
    let invalid = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    let mut magic = vec![0u8; MAGIC.len()];
    r.read_exact(&mut magic)?;
    if magic != MAGIC {
        return Err(invalid("not a neardup snapshot"));
    }
    let mut word = [0u8; 8];
    r.read_exact(&mut word)?;
    let documents = u64::from_le_bytes(word) as usize;
    let mut half = [0u8; 4];
    r.read_exact(&mut half)?;
    let width = u32::from_le_bytes(half) as usize;
    // What the counts claim must fit in the file before anything is made that large.
    let claimed = (documents as u128) * (width as u128 * 4 + 4);
    if claimed > u128::from(bytes) {
        return Err(invalid("it is shorter than its counts say"));
    }
    let mut ids = Vec::with_capacity(documents.min(1 << 24));
    for _ in 0..documents {
        r.read_exact(&mut half)?;
        let mut id = vec![0u8; u32::from_le_bytes(half) as usize];
        r.read_exact(&mut id)?;
        ids.push(String::from_utf8(id).map_err(|_| invalid("an id is not UTF-8"))?);
    }
    // A block at a time: the bytes of every vector at once would double the peak.
    let mut vectors = Vec::with_capacity(documents * width);
    let mut block = vec![0u8; READ_BLOCK];
    let mut left = documents * width * 4;
    while left > 0 {
        let bytes = &mut block[..left.min(READ_BLOCK)];
        r.read_exact(bytes)?;
        vectors.extend(
            bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
        left -= bytes.len();
    }
    let signatures = Signatures::read_from(r)?;
    let sketches = SketchFacts::read_from(r)?;
    if signatures.len() != documents || sketches.len() != documents {
        return Err(invalid("its sketches are not one a document"));
    }
    Ok(Snapshot {
        ids,
        vectors,
        width,
        signatures,
        sketches,
    })
}
