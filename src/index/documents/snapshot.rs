//! A copy of what an index's store holds, kept beside it in one plain file: every document's
//! id, vector and sketch, and the title vectors of those with more than a title.
//!
//! Reading a whole store point by point (a scroll) took a minute at a million documents, most
//! of a run that checks a batch against the collection (`dedup --against`); the same read from
//! a plain file takes seconds. The copy is written as the index is built ([`SnapshotSpool`]:
//! the vectors spilled as they are stored) or after such a read, and any write to the index
//! removes it first, so that a copy present is the store's as it is. A copy whose count
//! is not the manifest's (the store's at its last flush) is not read; it is read and written
//! through [`Collection`], which leaves the store closed. The vectors, most of the file, are
//! mapped rather than read ([`Floats`]).
//!
//! In the file, after a magic line: the counts, the sketches, the ids, and (from a multiple of
//! 4 bytes) the vectors, each document's row among the title vectors, the title vectors and the
//! signatures; last, the seal ([`crate::io::SealWriter`]), checked before any of it is read, so
//! that a damaged copy is refused by name rather than read as other vectors and sketches.
//!
//! Beside it, `cells.bin` keeps the k-means cells a batch's search learned over those documents
//! and where each document lies among them ([`CellPlacement`]), so that the next batch neither
//! learns nor places them again; it goes with the snapshot.

use std::io::{BufReader, Read, Seek, Write};
use std::path::{Path, PathBuf};

use super::{DocumentIndex, Manifest};
use crate::confirm::{SketchFacts, SketchRef};
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::io::{
    Floats, FolderLock, SealWriter, check_seal, read_count, write_count, write_floats,
};
use crate::output::AtomicFile;
use crate::search::CellPlacement;
use crate::sketch::Signatures;
use crate::spill::Spill;

/// The copy's file in an index folder.
pub const SNAPSHOT: &str = "snapshot.bin";
/// What the file starts with.
const MAGIC: &[u8] = b"neardup snapshot 5\n";
/// What earlier versions' files started with: read as no snapshot, and written again.
const EARLIER_MAGICS: [&[u8]; 4] = [
    b"neardup snapshot 1\n",
    b"neardup snapshot 2\n",
    b"neardup snapshot 3\n",
    b"neardup snapshot 4\n",
];
/// A document's row among the title vectors where it has none.
const NO_TITLE: u32 = u32::MAX;
/// The file of the cells learned over the snapshot's documents.
pub const CELLS: &str = "cells.bin";
/// What the cells' file starts with.
const CELLS_MAGIC: &[u8] = b"neardup cells 2\n";
/// What an earlier version's cells file started with (it had no seal): read as no cells.
const EARLIER_CELLS_MAGIC: &[u8] = b"neardup cells 1\n";

/// Every document of an index: its id, vector (as stored: centred where the index centres)
/// and sketch, in one order.
pub struct Snapshot {
    pub ids: Vec<String>,
    /// The vectors, row-major, `width` each: mapped from the file where read from one.
    pub vectors: Floats,
    pub width: usize,
    pub signatures: Signatures,
    pub sketches: SketchFacts,
    /// The vectors of the titles of the documents stored with one.
    pub titles: TitleVectors,
}

/// The vectors of the titles of an index's documents, where they have more than a title.
pub struct TitleVectors {
    /// The vectors, row-major, `width` each: mapped from the file where read from one.
    vectors: Floats,
    width: usize,
    /// Each document's row in `vectors`, or [`NO_TITLE`].
    rows: Vec<u32>,
}

impl TitleVectors {
    /// The vector of document `doc`'s title, where it was stored with one.
    pub fn get(&self, doc: usize) -> Option<&[f32]> {
        let row = self.rows[doc];
        (row != NO_TITLE).then(|| &self.vectors[row as usize * self.width..][..self.width])
    }

    /// How many documents have one.
    pub fn len(&self) -> usize {
        self.vectors.len() / self.width.max(1)
    }

    /// Whether no document has one.
    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }
}

impl Snapshot {
    /// None yet, of vectors `width` wide and signatures of `num_perm` slots.
    pub fn empty(width: usize, num_perm: usize) -> Snapshot {
        Snapshot {
            ids: Vec::new(),
            vectors: Floats::default(),
            width,
            signatures: Signatures::new(num_perm),
            sketches: SketchFacts::default(),
            titles: TitleVectors {
                vectors: Floats::default(),
                width,
                rows: Vec::new(),
            },
        }
    }

    /// A digest of the ids, in order: what cells kept beside the snapshot are checked by.
    pub fn ids_digest(&self) -> u64 {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        for id in &self.ids {
            hasher.update(&(id.len() as u64).to_le_bytes());
            hasher.update(id.as_bytes());
        }
        hasher.digest()
    }

    /// Appends a document, with its title's vector where it was stored with one.
    pub fn push(&mut self, id: &str, vector: &[f32], sketch: SketchRef<'_>, title: Option<&[f32]>) {
        self.ids.push(id.to_owned());
        self.vectors.to_mut().extend_from_slice(vector);
        self.sketches.push_sketch(&mut self.signatures, sketch);
        let titles = &mut self.titles;
        let row = match title {
            Some(title) => {
                titles.vectors.to_mut().extend_from_slice(title);
                (titles.len() - 1) as u32
            }
            None => NO_TITLE,
        };
        titles.rows.push(row);
    }
}

/// Cells learned over an index's documents, kept beside its snapshot.
pub struct StoredCells {
    /// How many cells were asked for.
    pub count: usize,
    /// How many documents the collection held when they were learned.
    pub learned_on: usize,
    /// [`Snapshot::ids_digest`] of the documents they place: cells are read only beside the
    /// snapshot they were made for.
    pub of_ids: u64,
    /// Where each document lies (those added since, placed as they came).
    pub placement: CellPlacement,
}

/// The snapshot's and cells' files of an index folder.
struct Files<'a> {
    dir: &'a Path,
}

impl Files<'_> {
    /// The snapshot, where there is one of `documents` documents `width` wide.
    fn read_snapshot(&self, documents: usize, width: usize) -> Result<Option<Snapshot>> {
        let path = self.dir.join(SNAPSHOT);
        let Some(file) = open_if_present(&path)? else {
            return Ok(None);
        };
        if earlier_version(&file, &EARLIER_MAGICS).map_err(|e| damaged(&path, e))? {
            return Ok(None);
        }
        let snapshot = read(file).map_err(|e| damaged(&path, e))?;
        Ok(Some(snapshot).filter(|s| s.ids.len() == documents && s.width == width))
    }

    /// Writes `snapshot` (whole, or not at all).
    fn write_snapshot(&self, snapshot: &Snapshot) -> Result<()> {
        write_sealed(&self.dir.join(SNAPSHOT), |w| write(w, snapshot))
    }

    /// The cells made for the snapshot of `ids` ([`Snapshot::ids_digest`]) of `documents`.
    fn read_cells(&self, documents: usize, ids: u64) -> Result<Option<StoredCells>> {
        let path = self.dir.join(CELLS);
        let Some(file) = open_if_present(&path)? else {
            return Ok(None);
        };
        if earlier_version(&file, &[EARLIER_CELLS_MAGIC]).map_err(|e| damaged(&path, e))? {
            return Ok(None);
        }
        let read = |r: &mut BufReader<std::fs::File>| -> std::io::Result<StoredCells> {
            check_seal(r.get_ref())?;
            let mut magic = vec![0u8; CELLS_MAGIC.len()];
            r.read_exact(&mut magic)?;
            if magic != CELLS_MAGIC {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "not a neardup cells file",
                ));
            }
            Ok(StoredCells {
                count: read_count(r)?,
                learned_on: read_count(r)?,
                of_ids: {
                    let mut word = [0u8; 8];
                    r.read_exact(&mut word)?;
                    u64::from_le_bytes(word)
                },
                placement: CellPlacement::read_from(r)?,
            })
        };
        let cells =
            read(&mut BufReader::with_capacity(1 << 20, file)).map_err(|e| damaged(&path, e))?;
        let fits = cells.placement.documents() == documents && cells.of_ids == ids;
        Ok(fits.then_some(cells))
    }

    /// Writes `cells`.
    fn write_cells(&self, cells: &StoredCells) -> Result<()> {
        write_sealed(&self.dir.join(CELLS), |w| {
            w.write_all(CELLS_MAGIC)?;
            write_count(w, cells.count)?;
            write_count(w, cells.learned_on)?;
            w.write_all(&cells.of_ids.to_le_bytes())?;
            cells.placement.write_to(w)
        })
    }

    /// Removes both files.
    fn forget(&self) -> Result<()> {
        for path in [self.dir.join(SNAPSHOT), self.dir.join(CELLS)] {
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(Error::io(&path, e));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// The `count` floats `spill` holds, mapped (the map outlives the file's handle).
fn map_spill(spill: Spill, count: usize) -> Result<Floats> {
    if count == 0 {
        return Ok(Floats::default());
    }
    let spill = spill.into_reader()?;
    let (file, dir) = spill.file();
    Floats::map(file, 0, count).map_err(|e| Error::io(dir, e))
}

/// The file at `path`, unless there is none.
fn open_if_present(path: &Path) -> Result<Option<std::fs::File>> {
    match std::fs::File::open(path) {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Writes the file `path` with `write` and seals it, whole or not at all.
fn write_sealed(
    path: &Path,
    write: impl FnOnce(&mut SealWriter<AtomicFile>) -> std::io::Result<()>,
) -> Result<()> {
    let mut sealed = SealWriter::new(AtomicFile::create(path)?);
    write(&mut sealed).map_err(|e| Error::io(path, e))?;
    let file = sealed.finish().map_err(|e| Error::io(path, e))?;
    file.commit()
}

/// Whether `file` starts with one of `magics`: written by an earlier version of neardup, to
/// be made again rather than read.
fn earlier_version(file: &std::fs::File, magics: &[&[u8]]) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let mut start = vec![0u8; magics.iter().map(|m| m.len()).max().unwrap_or(0)];
    let read = file.read_at(&mut start, 0)?;
    Ok(magics.iter().any(|m| start[..read].starts_with(m)))
}

fn damaged(path: &Path, e: std::io::Error) -> Error {
    Error::Damaged {
        path: path.to_owned(),
        problem: format!("it cannot be read: {e}"),
        fix: Some(
            "delete it: it is a copy of the index's store, which the next run reads instead \
             and copies again",
        ),
    }
}

impl DocumentIndex {
    fn files(&self) -> Files<'_> {
        Files { dir: &self.dir }
    }

    /// Removes the copy of the store and its cells: done before every write to it.
    pub(super) fn forget_snapshot(&self) -> Result<()> {
        self.files().forget()
    }

    /// A snapshot to fill as the index is built, its vectors spilled in the index's folder.
    pub fn snapshot_spool(&self) -> Result<SnapshotSpool> {
        Ok(SnapshotSpool {
            vectors: Spill::create(&self.dir)?,
            titles: Spill::create(&self.dir)?,
            width: self.manifest.dimensions,
            rows: Vec::new(),
            titled: 0,
        })
    }

    /// Keeps `snapshot` as the copy of the store, which it must be: written once the index is
    /// built and flushed, so that the first batch checked against it need not read the store.
    pub fn keep_snapshot(&self, snapshot: &Snapshot) -> Result<()> {
        self.files().write_snapshot(snapshot)
    }
}

/// The vectors of a snapshot, spilled as an index is built (the rest, ids and sketches, the
/// build holds anyway).
pub struct SnapshotSpool {
    vectors: Spill,
    titles: Spill,
    width: usize,
    /// Each document's row among the title vectors, or [`NO_TITLE`].
    rows: Vec<u32>,
    titled: usize,
}

impl SnapshotSpool {
    /// Appends a document's vector, and its title's where it has one.
    pub fn push(&mut self, vector: &[f32], title: Option<&[f32]>) -> Result<()> {
        self.vectors.append(|w| write_floats(w, vector))?;
        let row = match title {
            Some(title) => {
                self.titles.append(|w| write_floats(w, title))?;
                self.titled += 1;
                (self.titled - 1) as u32
            }
            None => NO_TITLE,
        };
        self.rows.push(row);
        Ok(())
    }

    /// How many documents were pushed.
    pub fn documents(&self) -> usize {
        self.rows.len()
    }

    /// The snapshot of the documents pushed, empty of ids and sketches (to be given, one a
    /// document, in the order pushed): the vectors mapped from the spills.
    pub fn into_snapshot(self, num_perm: usize) -> Result<Snapshot> {
        let (width, documents) = (self.width, self.rows.len());
        let vectors = map_spill(self.vectors, documents * width)?;
        let titles = map_spill(self.titles, self.titled * width)?;
        Ok(Snapshot {
            vectors,
            titles: TitleVectors {
                vectors: titles,
                width,
                rows: self.rows,
            },
            ..Snapshot::empty(width, num_perm)
        })
    }
}

/// An index folder to be read whole (a batch checked against it), through its snapshot: its
/// store, whose opening loads every point (4 GB and seconds at a million documents), is
/// opened only where there is no snapshot to read. Every write to an index removes its
/// snapshot before it begins, and the manifest counts the documents at every flush, so a
/// snapshot of the manifest's count is the store's.
pub struct Collection {
    dir: PathBuf,
    manifest: Manifest,
}

/// The lock a run that adds to a collection holds in its folder.
const ADDING_LOCK: &str = "neardup-adding.lock";

impl Collection {
    /// The index in `dir`, its store not opened.
    pub fn open(dir: &Path) -> Result<Collection> {
        Ok(Collection {
            dir: dir.to_owned(),
            manifest: Manifest::read(dir)?,
        })
    }

    /// Takes the lock of a run that adds its records to the collection in `dir` (`dedup
    /// --against DIR --add`), waiting while another such run holds it. The run holds it from
    /// before it reads the collection until its records are in, so that the second of two
    /// reads the collection with the first's records in it and adds none of them again. A
    /// store another process has open (`serve`, an open `Index`) refuses the run here, before
    /// its work, rather than once it is done.
    pub fn lock_for_adding(dir: &Path) -> Result<FolderLock> {
        Manifest::read(dir)?;
        let lock = FolderLock::wait(dir, ADDING_LOCK, "give another --against", |holder| {
            tracing::warn!(
                "waiting for another run to finish adding to {} ({holder})",
                dir.display()
            )
        })?;
        #[cfg(feature = "edge")]
        if dir.join(super::EDGE_DIR).exists() {
            let free = crate::store::EdgeStore::check_free(&dir.join(super::EDGE_DIR));
            free.map_err(|e| match e {
                Error::Busy {
                    path, ours, holder, ..
                } => Error::Busy {
                    path,
                    ours,
                    holder,
                    hint: "stop it, then add the batch (or check it against the collection \
                           without --add)",
                },
                e => e,
            })?;
        }
        Ok(lock)
    }

    /// Its folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What it was built with.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    fn files(&self) -> Files<'_> {
        Files { dir: &self.dir }
    }

    /// Refuses `embedder` unless it is the model the index was built with.
    pub fn check_model(&self, embedder: &dyn Embedder) -> Result<()> {
        super::check_model(&self.dir, &self.manifest, embedder)
    }

    /// Its snapshot, where there is one of every document.
    pub fn read_snapshot(&self) -> Result<Option<Snapshot>> {
        let (documents, width) = (self.manifest.documents, self.manifest.dimensions);
        self.files().read_snapshot(documents, width)
    }

    /// The cells kept beside `snapshot`, where they were made for it.
    pub fn read_cells(&self, snapshot: &Snapshot) -> Result<Option<StoredCells>> {
        self.files()
            .read_cells(snapshot.ids.len(), snapshot.ids_digest())
    }

    /// Keeps `cells` beside the snapshot.
    pub fn write_cells(&self, cells: &StoredCells) -> Result<()> {
        self.files().write_cells(cells)
    }

    /// Writes `snapshot` as the copy of the store (whole, or not at all).
    pub fn write_snapshot(&self, snapshot: &Snapshot) -> Result<()> {
        self.files().write_snapshot(snapshot)
    }
}

fn write(w: &mut impl Write, snapshot: &Snapshot) -> std::io::Result<()> {
    w.write_all(MAGIC)?;
    w.write_all(&(snapshot.ids.len() as u64).to_le_bytes())?;
    w.write_all(&(snapshot.width as u32).to_le_bytes())?;
    // The sketches first, with their length: a reader parses them on one thread while it
    // reads the rest on another.
    let mut sketches = Vec::new();
    snapshot.sketches.write_to(&mut sketches)?;
    w.write_all(&(sketches.len() as u64).to_le_bytes())?;
    w.write_all(&sketches)?;
    let mut written = MAGIC.len() + 8 + 4 + 8 + sketches.len();
    drop(sketches);
    for id in &snapshot.ids {
        w.write_all(&(id.len() as u32).to_le_bytes())?;
        w.write_all(id.as_bytes())?;
        written += 4 + id.len();
    }
    // The vectors start at a multiple of 4 bytes, where a map of the file reads them.
    w.write_all(&[0u8; 3][..padding(written)])?;
    write_floats(w, &snapshot.vectors)?;
    let titles = &snapshot.titles;
    let rows: Vec<u8> = titles.rows.iter().flat_map(|r| r.to_le_bytes()).collect();
    w.write_all(&rows)?;
    w.write_all(&(titles.len() as u64).to_le_bytes())?;
    write_floats(w, &titles.vectors)?;
    snapshot.signatures.write_to(w)
}

/// The bytes that bring `written` to a multiple of 4.
fn padding(written: usize) -> usize {
    (4 - written % 4) % 4
}

/// Reads the snapshot in `file`, its vectors mapped, once its seal is checked.
fn read(file: std::fs::File) -> std::io::Result<Snapshot> {
    let invalid = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    let bytes = check_seal(&file)?;
    let r = &mut BufReader::with_capacity(1 << 20, file);
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
    r.read_exact(&mut word)?;
    let sketch_bytes = u64::from_le_bytes(word);
    // What the counts claim must fit in the file before anything is made that large.
    let claimed = (documents as u128) * (width as u128 * 4 + 8) + u128::from(sketch_bytes);
    if claimed > u128::from(bytes) {
        return Err(invalid("it is shorter than its counts say"));
    }
    let mut sketch_file = vec![0u8; sketch_bytes as usize];
    r.read_exact(&mut sketch_file)?;
    std::thread::scope(|scope| {
        let sketches = scope.spawn(move || SketchFacts::read_from(&mut sketch_file.as_slice()));
        let mut ids = Vec::with_capacity(documents.min(1 << 24));
        for _ in 0..documents {
            r.read_exact(&mut half)?;
            let mut id = vec![0u8; u32::from_le_bytes(half) as usize];
            r.read_exact(&mut id)?;
            ids.push(String::from_utf8(id).map_err(|_| invalid("an id is not UTF-8"))?);
        }
        let offset = r.stream_position()?;
        let offset = offset + padding(offset as usize) as u64;
        let floats = documents * width;
        r.seek(std::io::SeekFrom::Start(offset + floats as u64 * 4))?;
        let mut rows = vec![0u8; documents * 4];
        r.read_exact(&mut rows)?;
        let rows: Vec<u32> = rows
            .chunks_exact(4)
            .map(|row| u32::from_le_bytes([row[0], row[1], row[2], row[3]]))
            .collect();
        r.read_exact(&mut word)?;
        let titled = u64::from_le_bytes(word);
        let titles_at = r.stream_position()?;
        if u128::from(titles_at) + u128::from(titled) * (width as u128 * 4) > u128::from(bytes) {
            return Err(invalid("it is shorter than its counts say"));
        }
        let titled = titled as usize;
        if rows
            .iter()
            .any(|&row| row != NO_TITLE && row as usize >= titled)
        {
            return Err(invalid("a title row is past the title vectors"));
        }
        r.seek(std::io::SeekFrom::Start(
            titles_at + (titled * width) as u64 * 4,
        ))?;
        let signatures = Signatures::read_from(r)?;
        let vectors = Floats::map(r.get_ref(), offset, floats)?;
        let titles = TitleVectors {
            vectors: Floats::map(r.get_ref(), titles_at, titled * width)?,
            width,
            rows,
        };
        let sketches = sketches
            .join()
            .map_err(|_| invalid("its sketches could not be read"))??;
        if signatures.len() != documents || sketches.len() != documents {
            return Err(invalid("its sketches are not one a document"));
        }
        Ok(Snapshot {
            ids,
            vectors,
            width,
            signatures,
            sketches,
            titles,
        })
    })
}
