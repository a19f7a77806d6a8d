//! Between loading and search: k-means cells over the documents' vectors, so that each
//! document is searched only among the documents of its nearest few cells.
//!
//! Walking a graph one query per document is most of a run at a million documents, and the
//! graph's build grows faster than the corpus. Near-duplicates sit close together, so a
//! document's duplicates lie in the cells nearest to it: the systems that deduplicate by
//! embeddings at scale (SemDeDup, NeMo Curator) cut the vectors into k-means clusters and
//! compare exactly inside each. Here each document is compared with every document of its
//! `probes` nearest cells, and the documents that share a nearest cell are compared together,
//! as one product against the documents of all the cells they probe: the work per document
//! grows with the cells' size, not with the corpus, and the answer within those cells is
//! exact.
//!
//! The cells hold the documents' vectors (read back from the spilled queries) as int8 codes
//! ([`super::codes`]): they learn, place and compare on the codes, so a cosine within the cells
//! is an exact sum of integers. Qdrant's own filtered search can do the same one query at a
//! time, through a payload index on the cell, at many times the cost of one product per cell
//! (docs/decisions/0004).
//!
//! The cells are learned by spherical k-means (unit centroids, cosine assignment) on an evenly
//! spaced sample of the vectors: a few Lloyd iterations, each one matrix product. This is
//! written here rather than taken from a crate: the clustering crates in Rust (linfa) bring
//! ndarray and their own BLAS for what is a loop around the matrix product this crate already
//! has ([`crate::matrix`]).

mod many_copies;
mod owned;
mod router;

use many_copies::SoughtCopies;
pub(crate) use many_copies::{CopyHashes, is_paired_copy};
pub(crate) use owned::{NearestLists, OwnedCells};

use std::io::{self, Read, Write};

use rayon::prelude::*;

use self::router::Router;
use super::codes::{Code, Codes, cosine};
use super::queries::QueryReader;
use crate::error::Result;
use crate::io::{read_count, read_list, write_count, write_list};
use crate::progress;
use crate::store::{best_by_blocks, place, ranked};

/// Sampled vectors per cell the centroids are learned from.
const SAMPLE_PER_CELL: usize = 32;
/// Documents whose nearest cells are found at a time.
const ROUTE_BLOCK: usize = 1 << 16;
/// In [`Cells::nearest`], a place no cell fills (a document may find fewer cells than it
/// probes through coarse cells that hold few).
pub(crate) const NO_CELL: u32 = u32::MAX;
/// Cells searched before their answers are merged.
const MERGE_CELLS: usize = 64;
/// A vector that more documents than this hold (copies of one text: boilerplate, a record
/// harvested again and again) is searched for once, by its first document; each other copy is
/// paired with that one. Searched each, a cell of 100,000 copies compares every copy with
/// every other: 10^10 cosines, and 20 pairs a copy among themselves.
pub const MANY_COPIES: usize = 100;

/// The documents' vectors cut into cells.
pub(crate) struct Cells {
    /// Every document's vector as codes, by document number: those of `vectors`, then those
    /// of `after` (a collection's, after a batch's). The documents of `vectors` search for
    /// their neighbours; those of `after` are searched among only.
    vectors: Codes,
    after: Codes,
    /// The cells' centroids and each document's nearest cells.
    placement: CellPlacement,
    /// The documents whose nearest cell each cell is, ascending; copies left out.
    members: Vec<Vec<u32>>,
}

/// Where documents lie among cells, without their vectors: what a collection keeps beside its
/// snapshot, so that a later batch neither learns its cells nor places its documents again.
pub struct CellPlacement {
    /// The cells' centroids, and how a vector finds its nearest.
    router: Router,
    probes: usize,
    /// Each document's `probes` nearest cells, nearest first, [`NO_CELL`] after the last
    /// found.
    nearest: Vec<u32>,
    /// The documents whose vector more than [`MANY_COPIES`] hold, each with the first of them
    /// (`(copy, first)`, ascending): neither searched nor searched for.
    copies: Vec<(u32, u32)>,
}

/// The documents the cells are learned from: evenly spaced, [`SAMPLE_PER_CELL`] a cell.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CellSample {
    /// The cells learned: as many as asked, at least one and at most one a document.
    cells: usize,
    /// Every `stride`th document is sampled, from the first.
    stride: usize,
}

impl CellSample {
    /// The sample that learns `count` cells from `documents` documents.
    pub(crate) fn of(documents: usize, count: usize) -> CellSample {
        let cells = count.clamp(1, documents.max(1));
        CellSample {
            cells,
            stride: (documents / (cells * SAMPLE_PER_CELL)).max(1),
        }
    }

    /// Whether document `doc` is in the sample.
    pub(crate) fn holds(&self, doc: usize) -> bool {
        doc.is_multiple_of(self.stride)
    }

    /// The document that is the `nth` of the sample (from 0).
    fn nth(&self, nth: usize) -> usize {
        nth * self.stride
    }
}

impl CellPlacement {
    /// Learns `count` cells from `vectors` (each document's, by document number) and finds
    /// each document's `probes` nearest.
    pub(crate) fn learn(vectors: &Codes, count: usize, probes: usize) -> CellPlacement {
        let sample = CellSample::of(vectors.len(), count);
        let rows: Vec<usize> = (0..vectors.len())
            .filter(|&doc| sample.holds(doc))
            .collect();
        let mut hashes = CopyHashes::default();
        hashes.push(vectors);
        let mut placing = Placing::learn(vectors, &rows, sample, probes, hashes);
        placing.place(vectors);
        placing.finish()
    }

    /// Finds the nearest cells of more documents, `vectors` numbered after those placed (their
    /// copies, if any, are searched each).
    pub(crate) fn place(&mut self, vectors: &Codes) {
        let nearest = self.route(vectors);
        self.nearest.extend(nearest);
    }

    /// The `probes` nearest cells of each of `vectors`, nearest first, [`NO_CELL`] after the
    /// last found: as documents are placed, and titles routed to be searched. A vector's cells
    /// do not depend on the vectors routed with it.
    pub(crate) fn route(&self, vectors: &Codes) -> Vec<u32> {
        let width = self.router.width();
        let all: Vec<usize> = (0..vectors.len()).collect();
        let mut nearest = Vec::with_capacity(vectors.len() * self.probes);
        for block in all.chunks(ROUTE_BLOCK) {
            let decoded = vectors.decoded(block);
            let rows: Vec<&[f32]> = decoded.chunks_exact(width).collect();
            for cells in self.router.nearest(&rows, self.probes) {
                nearest.extend(
                    cells
                        .iter()
                        .copied()
                        .chain(std::iter::repeat(NO_CELL))
                        .take(self.probes),
                );
            }
        }
        nearest
    }

    /// This placement with the documents of `vectors` placed before its own, which are then
    /// numbered after them.
    pub(crate) fn preceded_by(self, vectors: &Codes) -> CellPlacement {
        let mut placement = CellPlacement {
            router: self.router,
            probes: self.probes,
            nearest: Vec::with_capacity(self.nearest.len() + vectors.len() * self.probes),
            copies: Vec::new(),
        };
        placement.place(vectors);
        let shift = placement.documents() as u32;
        placement.nearest.extend_from_slice(&self.nearest);
        placement.copies = (self.copies.into_iter())
            .map(|(copy, first)| (copy + shift, first + shift))
            .collect();
        placement
    }

    /// How many documents are placed.
    pub fn documents(&self) -> usize {
        self.nearest.len() / self.probes
    }

    /// How many cells there are.
    pub fn cells(&self) -> usize {
        self.router.cells()
    }

    /// How many dimensions the vectors placed have.
    pub(crate) fn width(&self) -> usize {
        self.router.width()
    }

    /// How many cells each document probes.
    pub fn probes(&self) -> usize {
        self.probes
    }

    /// The documents whose nearest cell each cell is, ascending, for the cells `held` says
    /// (the others left empty); copies left out.
    pub(crate) fn members(&self, held: impl Fn(usize) -> bool) -> Vec<Vec<u32>> {
        let mut members = vec![Vec::new(); self.router.cells()];
        let mut copy = self.copies.iter().map(|&(copy, _)| copy).peekable();
        for (doc, cells) in self.nearest.chunks_exact(self.probes).enumerate() {
            if copy.next_if_eq(&(doc as u32)).is_none() && held(cells[0] as usize) {
                members[cells[0] as usize].push(doc as u32);
            }
        }
        members
    }

    /// The documents whose vector many hold, each with the first of them: `(copy, first)`,
    /// ascending.
    pub(crate) fn copies(&self) -> &[(u32, u32)] {
        &self.copies
    }

    /// Whether document `doc` is a copy of a vector that many hold, searched by its first.
    fn is_copy(&self, doc: u32) -> bool {
        is_paired_copy(&self.copies, doc)
    }

    /// The cells document `doc` probes, nearest first; none for a copy that many hold.
    fn probed(&self, doc: u32) -> impl Iterator<Item = u32> + '_ {
        let cells = &self.nearest[doc as usize * self.probes..][..self.probes];
        let searched = !self.is_copy(doc);
        cells
            .iter()
            .copied()
            .filter(move |&cell| searched && cell != NO_CELL)
    }

    /// Writes what [`CellPlacement::read_from`] reads.
    pub fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        self.router.write_to(w)?;
        write_count(w, self.probes)?;
        write_list(w, &self.nearest)?;
        let copies: Vec<u32> = self.copies.iter().flat_map(|&(c, f)| [c, f]).collect();
        write_list(w, &copies)
    }

    /// Reads what [`CellPlacement::write_to`] wrote.
    pub fn read_from(r: &mut impl Read) -> io::Result<CellPlacement> {
        let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_owned());
        let router = Router::read_from(r)?;
        let probes = read_count(r)?;
        let nearest = read_list(r)?;
        let copies = read_list(r)?;
        let cells = router.cells() as u32;
        if probes == 0
            || nearest.len() % probes != 0
            || nearest.iter().any(|&c| c >= cells && c != NO_CELL)
            || copies.len() % 2 != 0
        {
            return Err(invalid("its cells do not fit together"));
        }
        let placed = (nearest.len() / probes) as u32;
        let copies: Vec<(u32, u32)> = copies.chunks_exact(2).map(|p| (p[0], p[1])).collect();
        if copies.iter().any(|&(c, f)| c >= placed || f >= c) {
            return Err(invalid("its copies are not among its documents"));
        }
        Ok(CellPlacement {
            router,
            probes,
            nearest,
            copies,
        })
    }
}

impl Cells {
    /// Learns `count` cells from the vectors of the `documents` in `queries` (titles are not
    /// documents) and finds each document's `probes` nearest. Leaves `queries` rewound.
    pub(crate) fn learn(
        queries: &mut QueryReader,
        documents: usize,
        count: usize,
        probes: usize,
    ) -> Result<Cells> {
        let vectors = queries.document_codes(documents)?;
        Ok(Cells::of(vectors, count, probes))
    }

    /// Learns `count` cells from `vectors` (each document's, by document number) and finds
    /// each document's `probes` nearest.
    pub(crate) fn of(vectors: Codes, count: usize, probes: usize) -> Cells {
        let placement = CellPlacement::learn(&vectors, count, probes);
        Cells::placed(vectors, placement)
    }

    /// The cells of `vectors` (each document's, by document number) placed as `placement`
    /// says, which must hold every document.
    pub(crate) fn placed(vectors: Codes, placement: CellPlacement) -> Cells {
        let none = Codes::new(vectors.width());
        Cells::searching_among(vectors, none, placement)
    }

    /// The cells of a batch's vectors and a collection's (the batch's numbered first), placed
    /// as `placement` says, which must hold every document. Only the batch's documents search
    /// for their neighbours ([`Cells::neighbours`]), among both.
    pub(crate) fn searching_among(
        batch: Codes,
        collection: Codes,
        placement: CellPlacement,
    ) -> Cells {
        assert_eq!(
            placement.documents(),
            batch.len() + collection.len(),
            "a placement of every document"
        );
        let members = placement.members(|_| true);
        let sizes: Vec<usize> = members.iter().map(Vec::len).collect();
        tracing::info!(
            cells = placement.router.cells(),
            coarse = placement.router.coarse_cells(),
            probes = placement.probes,
            largest = sizes.iter().max().copied().unwrap_or(0),
            empty = sizes.iter().filter(|&&s| s == 0).count(),
            copies = placement.copies.len(),
            "documents placed in cells"
        );
        Cells {
            vectors: batch,
            after: collection,
            placement,
            members,
        }
    }

    /// Each searching document's `k` nearest other documents among those of the cells it
    /// probes, as pairs `(a, b, cosine)` with `a < b` (a pair found from both ends is there
    /// twice), added to `found`.
    ///
    /// Each document keeps its best `k + 1` (itself among them) over the cells it probes
    /// ([`search_cells`]). A copy of a vector that many documents hold is paired with
    /// the first of them instead ([`MANY_COPIES`]).
    pub(crate) fn neighbours(&self, k: usize, found: &mut Vec<(u32, u32, f32)>) {
        let documents = self.vectors.len() as u32;
        let probing = probing(
            self.members.len(),
            (0..documents).map(|doc| self.placement.probed(doc)),
        );
        let mut best = NearestLists::new(documents as usize, k);
        let bar = progress::items(self.members.len() as u64, "searching cells");
        search_cells(
            &probing,
            &self.members,
            |doc| self.vector(doc),
            |doc| self.vector(doc),
            &mut best.0,
            |cells| bar.inc(cells as u64),
        );
        bar.finish_and_clear();
        self.neighbours_found(best, found);
    }

    /// The pairs of each searching document's best in `best` (found by [`Cells::neighbours`],
    /// or by the parts that own the cells, [`OwnedCells`]), and of each copy of a vector that
    /// many documents hold with the first of them, added to `found` as
    /// [`Cells::neighbours`] adds them.
    pub(crate) fn neighbours_found(&self, best: NearestLists, found: &mut Vec<(u32, u32, f32)>) {
        let documents = self.vectors.len();
        found.extend(best.0.lists().enumerate().flat_map(|(doc, best)| {
            let doc = doc as u32;
            best.iter()
                .filter(move |&&(_, other)| other != doc)
                .map(move |&(cosine, other)| (doc.min(other), doc.max(other), cosine))
        }));
        let copies: Vec<(u32, u32)> = (self.placement.copies.iter())
            .filter(|&&(copy, _)| (copy as usize) < documents)
            .map(|&(copy, first)| (first, copy))
            .collect();
        self.with_cosines(&copies, found);
    }

    /// The members of each cell that `keep` holds (by document number).
    pub(crate) fn members_among(&self, keep: &[bool]) -> Vec<Vec<u32>> {
        self.members
            .iter()
            .map(|docs| docs.iter().copied().filter(|&d| keep[d as usize]).collect())
            .collect()
    }

    /// Each of `queries`' `k` nearest documents among `members` (a subset of each cell's, from
    /// [`Cells::members_among`]) of the `probes` cells nearest to it, as `(cosine, document)`,
    /// best first (of equal cosines the lower document). A title is searched so among the
    /// title-only records: its copies lie near it, so in the cells nearest to it, where a graph
    /// over every title-only record of a large corpus is walked one title at a time. Give many
    /// queries at once: each cell is one matrix product with the queries that probe it.
    pub(crate) fn nearest_among(
        &self,
        queries: &[&[f32]],
        members: &[Vec<u32>],
        k: usize,
    ) -> Vec<Vec<(f32, u32)>> {
        let codes = Codes::of_rows(queries, self.vectors.width());
        // Routed as the documents were: by their codes.
        let decoded = codes.decoded(&(0..codes.len()).collect::<Vec<_>>());
        let rows: Vec<&[f32]> = decoded.chunks_exact(self.vectors.width()).collect();
        let probing = probing(
            members.len(),
            (self.placement.router).nearest(&rows, self.placement.probes),
        );
        let mut best = Ranked::new(queries.len(), k);
        search_cells(
            &probing,
            members,
            |doc| self.vector(doc),
            |query| codes.row(query as usize),
            &mut best,
            |_| {},
        );
        best.lists().map(<[_]>::to_vec).collect()
    }

    /// Whether document `doc` is a copy of a vector that more than [`MANY_COPIES`] documents
    /// hold, paired with the first of them rather than searched; `None` where no vector is
    /// held so often.
    pub(crate) fn paired_copy(&self) -> Option<impl Fn(u32) -> bool + '_> {
        let copies = &self.placement;
        (!copies.copies.is_empty()).then_some(move |doc| copies.is_copy(doc))
    }

    /// How many queries to give [`Cells::nearest_among`] at once: enough that each cell's
    /// product holds about a block of the scan's 64 rows (a product of fewer is padded to
    /// them), from 16,384 up to 65,536 (100 MB of vectors at 384 dimensions).
    pub(crate) fn queries_at_once(&self) -> usize {
        (self.members.len() * 64 / self.placement.probes).clamp(1 << 14, 1 << 16)
    }

    /// The pairs `(a, b)` with the cosine of their vectors, added to `found`.
    pub(crate) fn with_cosines(&self, pairs: &[(u32, u32)], found: &mut Vec<(u32, u32, f32)>) {
        found.par_extend(
            pairs
                .par_iter()
                .map(|&(a, b)| (a, b, cosine(self.vector(a), self.vector(b)))),
        );
    }

    /// The cosine of `vector` and document `doc`'s, as the codes give it.
    pub(crate) fn cosine_to(&self, vector: &[f32], doc: u32) -> f32 {
        cosine(
            Codes::of(vector, self.vectors.width()).row(0),
            self.vector(doc),
        )
    }

    fn vector(&self, doc: u32) -> Code<'_> {
        let doc = doc as usize;
        match doc.checked_sub(self.vectors.len()) {
            None => self.vectors.row(doc),
            Some(doc) => self.after.row(doc),
        }
    }
}

/// Searches each cell: the queries of `probing[cell]` (numbers that `query` turns into codes)
/// are compared with the documents of `members[cell]` (whose codes `member` gives) in one
/// product, and each query's best there, as `(cosine, document)`, are offered to its places in
/// `best`. Cells are searched a few dozen at a time on every core, so that only their answers
/// wait to be merged; `searched` hears how many cells each such round searched. A query takes
/// from a cell only what reaches its last place from the cells searched before: what it then
/// holds is its best over all its cells, whatever the cells searched before.
fn search_cells<'m, 'q>(
    probing: &[Vec<u32>],
    members: &[Vec<u32>],
    member: impl Fn(u32) -> Code<'m> + Sync,
    query: impl Fn(u32) -> Code<'q> + Sync,
    best: &mut Ranked,
    mut searched: impl FnMut(usize),
) {
    let k = best.k;
    let cells: Vec<usize> = (0..members.len()).collect();
    for cells in cells.chunks(MERGE_CELLS) {
        // Stopped on request, the search ends short: its caller looks, and reports.
        if crate::cancel::requested() {
            return;
        }
        let held = &*best;
        let found: Vec<_> = cells
            .par_iter()
            .map(|&cell| {
                let (queries, members) = (&probing[cell], &members[cell]);
                if queries.is_empty() || members.is_empty() {
                    return (queries.as_slice(), Vec::new());
                }
                let mut pool = Codes::new(member(members[0]).codes.len());
                for &doc in members {
                    pool.push_code(member(doc));
                }
                let codes: Vec<Code> = queries.iter().map(|&q| query(q)).collect();
                let floor = |at: usize| held.last_place(queries[at]);
                let hits = best_by_blocks(members, &codes, k, floor, |block, scores| {
                    super::codes::cosines(block, &pool, scores)
                });
                (queries.as_slice(), hits)
            })
            .collect();
        for (queries, hits) in found {
            for (&query, hits) in queries.iter().zip(hits) {
                best.offer(query, hits);
            }
        }
        searched(cells.len());
    }
}

/// Each query's best `k` of the hits offered to it, `(cosine, key)`, ranked by [`place`]: a
/// higher cosine first, of equal ones the lower key.
struct Ranked {
    queries: usize,
    k: usize,
    /// `k` places a query; a place not yet filled scores minus infinity.
    places: Vec<(f32, u32)>,
}

impl Ranked {
    fn new(queries: usize, k: usize) -> Self {
        Ranked {
            queries,
            k,
            places: vec![(f32::NEG_INFINITY, u32::MAX); queries * k],
        }
    }

    /// Offers query `query` the hits `(cosine, key)` of one more search, highest cosine first.
    fn offer(&mut self, query: u32, hits: Vec<(f32, u32)>) {
        let places = &mut self.places[query as usize * self.k..][..self.k];
        // The first hits offered fill the empty places as they come, sorted again only where
        // clamping to 1 made cosines equal in another order of keys.
        if places
            .first()
            .is_some_and(|first| first.0 == f32::NEG_INFINITY)
            && hits.len() <= places.len()
        {
            for (place, (cosine, key)) in places.iter_mut().zip(&hits) {
                *place = (*cosine, *key);
            }
            places[..hits.len()].sort_unstable_by(ranked);
            return;
        }
        for (cosine, key) in hits {
            // Below the last place held, this hit and those after it place nowhere.
            if places.last().is_some_and(|last| cosine < last.0) {
                break;
            }
            place(places, (cosine, key));
        }
    }

    /// The cosine of query `query`'s last place: minus infinity while a place is empty.
    fn last_place(&self, query: u32) -> f32 {
        match self.k {
            0 => f32::INFINITY,
            k => self.places[(query as usize + 1) * k - 1].0,
        }
    }

    /// Each query's best, best first: fewer than `k` where fewer were offered.
    fn lists(&self) -> impl Iterator<Item = &[(f32, u32)]> {
        (0..self.queries).map(|query| self.list(query))
    }

    /// Query `query`'s best, best first.
    fn list(&self, query: usize) -> &[(f32, u32)] {
        let places = &self.places[query * self.k..(query + 1) * self.k];
        let filled = places.partition_point(|&(cosine, _)| cosine > f32::NEG_INFINITY);
        &places[..filled]
    }
}

/// Cells learned, and the documents placed among them a block at a time, in document order:
/// all of them at once in one run; in a run in stages, from the parts' codes as they are read,
/// so that no more than a block of them is held (`pipeline::split::two_stage::by_cell`).
pub(crate) struct Placing {
    placement: CellPlacement,
    copies: SoughtCopies,
}

impl Placing {
    /// Cells learned from the `rows` of `vectors`, the documents `sample` took, in order (the
    /// `n`th row is the sample's `n`th document); the documents are then placed by
    /// [`Placing::place`], every one that `hashes` hashed. A vector that more than
    /// [`MANY_COPIES`] documents hold is learned from once: a million copies of one text in a
    /// sample would have half the cells learned from one point, by a k-means over them all.
    pub(crate) fn learn(
        vectors: &Codes,
        rows: &[usize],
        sample: CellSample,
        probes: usize,
        hashes: CopyHashes,
    ) -> Placing {
        let nearest = Vec::with_capacity(hashes.0.len() * probes);
        let copies = hashes.sought();
        let distinct: Vec<usize> = (rows.iter().enumerate())
            .filter(|&(nth, _)| !copies.is_later_copy(sample.nth(nth) as u32))
            .map(|(_, &row)| row)
            .collect();
        let placement = CellPlacement {
            router: Router::learn(vectors, &distinct, sample.cells),
            probes: probes.clamp(1, sample.cells),
            nearest,
            copies: Vec::new(),
        };
        Placing { placement, copies }
    }

    /// Places the documents of `vectors`, numbered after those placed.
    pub(crate) fn place(&mut self, vectors: &Codes) {
        let first = self.placement.documents();
        self.placement.place(vectors);
        for row in 0..vectors.len() {
            self.copies.see((first + row) as u32, vectors.bytes(row));
        }
    }

    /// The cells learned, as [`CellPlacement::route`] finds them.
    pub(crate) fn placement(&self) -> &CellPlacement {
        &self.placement
    }

    /// The placement of every document, with the copies of a vector that many hold.
    pub(crate) fn finish(self) -> CellPlacement {
        assert_eq!(
            self.placement.documents(),
            self.copies.documents,
            "every document hashed is placed"
        );
        CellPlacement {
            copies: self.copies.found(),
            ..self.placement
        }
    }
}

/// The queries that probe each of `cells` cells, ascending, from each query's cells.
fn probing<C: IntoIterator<Item = u32>>(
    cells: usize,
    cells_of_queries: impl IntoIterator<Item = C>,
) -> Vec<Vec<u32>> {
    let mut probing = vec![Vec::new(); cells];
    for (query, probed) in cells_of_queries.into_iter().enumerate() {
        for cell in probed {
            probing[cell as usize].push(query as u32);
        }
    }
    probing
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn unit(v: &[f32]) -> Vec<f32> {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / norm).collect()
    }

    /// Random unit vectors of `width`, from `seed`.
    pub(crate) fn random_vectors(count: usize, width: usize, seed: u64) -> Vec<Vec<f32>> {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..count)
            .map(|_| {
                unit(
                    &(0..width)
                        .map(|_| rng.random::<f32>() - 0.5)
                        .collect::<Vec<_>>(),
                )
            })
            .collect()
    }

    /// `count` cells learned from the documents' `vectors` spilled as queries, each followed
    /// by a title query (the next document's vector) where `titles`.
    fn learned(vectors: &[Vec<f32>], titles: bool, count: usize, probes: usize) -> Cells {
        use super::super::queries::{Query, QueryFile};
        let dir = tempfile::tempdir().unwrap();
        let mut file = QueryFile::create(dir.path(), vectors[0].len()).unwrap();
        for (doc, vector) in vectors.iter().enumerate() {
            let doc = doc as u32;
            file.append(&[Query { doc, title: false }], &[vector])
                .unwrap();
            if titles {
                let next = &vectors[(doc as usize + 1) % vectors.len()];
                file.append(&[Query { doc, title: true }], &[next]).unwrap();
            }
        }
        let mut queries = file.into_reader().unwrap();
        Cells::learn(&mut queries, vectors.len(), count, probes).unwrap()
    }

    /// Lists of hits offered one after another keep what placing each hit would keep, in the
    /// same order, also where cosines clamped to 1 tie with their keys out of order.
    #[test]
    fn offered_hits_keep_what_placing_each_keeps() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        for round in 0..300 {
            let k = rng.random_range(1..25usize);
            let mut offered = Ranked::new(1, k);
            let mut placed = vec![(f32::NEG_INFINITY, u32::MAX); k];
            for _ in 0..rng.random_range(1..4) {
                let mut hits: Vec<(f32, u32)> = (0..rng.random_range(0..30))
                    .map(|_| {
                        let score = [1.0000002f32, 1.0000001, 1.0, 0.5][rng.random_range(0..4)];
                        (score, rng.random_range(0..1000u32))
                    })
                    .collect();
                hits.sort_by(ranked);
                hits.dedup_by_key(|hit| hit.1);
                hits.truncate(k);
                // As a scan gives them: ranked by score, then clamped.
                let hits: Vec<(f32, u32)> =
                    hits.iter().map(|&(s, key)| (s.min(1.0), key)).collect();
                for &(cosine, key) in &hits {
                    place(&mut placed, (cosine, key));
                }
                offered.offer(0, hits);
            }
            let kept: Vec<_> = placed
                .into_iter()
                .filter(|p| p.0 > f32::NEG_INFINITY)
                .collect();
            assert_eq!(
                offered.lists().next().unwrap(),
                kept.as_slice(),
                "round {round}"
            );
        }
    }

    #[test]
    fn each_document_gets_its_exact_top_k_within_the_cells_it_probes() {
        let (documents, width, k) = (3000, 16, 5);
        let vectors = random_vectors(documents, width, 7);
        // A title query in between is not a document.
        let cells = learned(&vectors, true, 40, 3);
        assert_eq!(cells.members.iter().map(Vec::len).sum::<usize>(), documents);

        let mut found = Vec::new();
        cells.neighbours(k, &mut found);
        let mut by_doc: Vec<Vec<(u32, f32)>> = vec![Vec::new(); documents];
        for &(a, b, cosine) in &found {
            assert!(a < b);
            by_doc[a as usize].push((b, cosine));
            by_doc[b as usize].push((a, cosine));
        }
        let codes = Codes::of(&vectors.concat(), width);
        let dot = |a: usize, b: usize| cosine(codes.row(a), codes.row(b));
        for doc in 0..documents as u32 {
            let probed = &cells.placement.nearest[doc as usize * 3..doc as usize * 3 + 3];
            let mut expected: Vec<(f32, u32)> = probed
                .iter()
                .flat_map(|&c| &cells.members[c as usize])
                .filter(|&&other| other != doc)
                .map(|&other| (dot(doc as usize, other as usize), other))
                .collect();
            expected.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
            // Its own top k are among its pairs (others may have found it too), with the
            // cosines of their codes, bit for bit.
            for &(cosine, other) in expected.iter().take(k) {
                let held = by_doc[doc as usize].iter().find(|p| p.0 == other);
                let (_, held) = held.unwrap_or_else(|| panic!("{doc} lacks {other}"));
                assert_eq!(held.to_bits(), cosine.to_bits(), "{doc}-{other}");
            }
        }
    }

    /// A vector held by more than [`MANY_COPIES`] documents is searched for once: each other
    /// copy is paired with the first and nothing else; as many copies as that are searched
    /// each.
    #[test]
    fn many_copies_of_one_vector_are_paired_with_the_first_not_searched() {
        let (width, k) = (16, 5);
        let mut vectors = random_vectors(500, width, 9);
        // Document 3's vector held by MANY_COPIES + 1 documents in all; document 4's by
        // MANY_COPIES.
        for _ in 0..MANY_COPIES {
            vectors.push(vectors[3].clone());
        }
        for _ in 1..MANY_COPIES {
            vectors.push(vectors[4].clone());
        }
        let cells = learned(&vectors, false, 8, 2);
        let copies: Vec<u32> = (500..500 + MANY_COPIES as u32).collect();
        assert_eq!(
            cells.placement.copies,
            copies.iter().map(|&c| (c, 3)).collect::<Vec<_>>()
        );
        let members: usize = cells.members.iter().map(Vec::len).sum();
        assert_eq!(members, vectors.len() - MANY_COPIES);
        let mut found = Vec::new();
        cells.neighbours(k, &mut found);
        for &copy in &copies {
            let pairs: Vec<_> = found
                .iter()
                .filter(|p| p.0 == copy || p.1 == copy)
                .collect();
            assert_eq!(pairs.len(), 1, "copy {copy}: {pairs:?}");
            assert_eq!((pairs[0].0, pairs[0].1), (3, copy));
            assert!((pairs[0].2 - 1.0).abs() < 1e-5);
        }
        // Fewer copies: each searched, each with its k nearest (the other copies).
        let fours = found
            .iter()
            .filter(|p| p.1 >= 500 + MANY_COPIES as u32)
            .count();
        assert!(fours >= (MANY_COPIES - 1) * k / 2, "{fours}");
    }

    /// The cells are learned from a vector that many documents hold once: copies that fill
    /// most of the sample would otherwise start most centroids on one point, where all but one
    /// of them stay, every such cell empty.
    #[test]
    fn many_copies_of_one_vector_are_learned_from_once() {
        let (width, count) = (16, 40);
        let mut vectors = random_vectors(2_000, width, 11);
        let copy = vectors[1_999].clone();
        vectors.extend(std::iter::repeat_n(copy, 3_000));
        let cells = learned(&vectors, false, count, 2);
        assert_eq!(cells.placement.copies.len(), 3_000);
        let filled = cells.members.iter().filter(|m| !m.is_empty()).count();
        assert!(
            filled >= count * 9 / 10,
            "{filled} of {count} cells hold a document"
        );
    }

    /// Cells dealt out to parts, each holding only its cells' members' codes, find what one
    /// search over every cell finds, merged in any order, however many parts: the same pairs,
    /// the same cosines, in the same order; and for titles, the same best among the title-only
    /// documents.
    #[test]
    fn the_parts_that_own_the_cells_find_what_one_search_finds() {
        let (width, k) = (16, 5);
        let mut vectors = random_vectors(3000, width, 17);
        // Copies of one vector (paired with the first, not searched) and ties at the top.
        for _ in 0..=MANY_COPIES {
            vectors.push(vectors[7].clone());
        }
        for copy in 0..3 {
            vectors[100 + copy] = vectors[99].clone();
        }
        let cells = learned(&vectors, false, 40, 3);
        let mut expected = Vec::new();
        cells.neighbours(k, &mut expected);
        let codes = Codes::of(&vectors.concat(), width);
        let docs: Vec<u32> = (0..vectors.len() as u32).collect();
        // Titles, searched among the title-only documents of the cells they are routed to.
        let title_only: Vec<bool> = (0..vectors.len()).map(|d| d % 4 == 1).collect();
        let titles = random_vectors(200, width, 18);
        let titles: Vec<&[f32]> = titles.iter().map(Vec::as_slice).collect();
        let expected_titles =
            cells.nearest_among(&titles, &cells.members_among(&title_only), k + 1);
        let title_codes = Codes::of_rows(&titles, width);
        let routed = cells.placement.route(&title_codes);
        for count in [1, 2, 3, 7, 50] {
            let mut found = NearestLists::new(vectors.len(), k);
            let mut found_titles = NearestLists::new(titles.len(), k);
            let mut held = 0;
            // Merged from the last part to the first: the order does not matter.
            for part in (0..count).rev() {
                let mut owned = OwnedCells::new(
                    &cells.placement,
                    |cell| cell % count == part,
                    width,
                    &title_only,
                );
                let members = owned.held().to_vec();
                held += members.len();
                for &doc in &members {
                    owned.hold(codes.row(doc as usize));
                }
                let searching: Vec<u32> = docs
                    .iter()
                    .copied()
                    .filter(|&d| owned.probes_here(d))
                    .collect();
                let mut of_searching = Codes::new(width);
                searching
                    .iter()
                    .for_each(|&d| of_searching.push_code(codes.row(d as usize)));
                // Searched in two blocks, as a part reads them.
                let half = searching.len() / 2;
                for (block, at) in [(&searching[..half], 0), (&searching[half..], half)] {
                    let mut block_codes = Codes::new(width);
                    (at..at + block.len())
                        .for_each(|row| block_codes.push_code(of_searching.row(row)));
                    for (&doc, hits) in block.iter().zip(owned.search(block, &block_codes, k)) {
                        found.offer(doc, hits);
                    }
                }
                let (mut here, mut here_codes, mut here_routed) =
                    (Vec::new(), Codes::new(width), Vec::new());
                for (title, cells) in routed.chunks_exact(3).enumerate() {
                    if owned.routed_here(cells) {
                        here.push(title as u32);
                        here_codes.push_code(title_codes.row(title));
                        here_routed.extend_from_slice(cells);
                    }
                }
                let hits = owned.search_titles(&here_routed, &here_codes, k);
                for (&title, hits) in here.iter().zip(hits) {
                    found_titles.offer(title, hits);
                }
            }
            assert_eq!(
                held,
                vectors.len() - (MANY_COPIES + 1),
                "every member held once"
            );
            let mut merged = Vec::new();
            cells.neighbours_found(found, &mut merged);
            assert!(merged.len() > vectors.len() * k / 2);
            let bits = |pairs: &[(u32, u32, f32)]| -> Vec<(u32, u32, u32)> {
                pairs.iter().map(|&(a, b, c)| (a, b, c.to_bits())).collect()
            };
            assert_eq!(bits(&merged), bits(&expected), "{count} parts");
            for (title, expected) in expected_titles.iter().enumerate() {
                let found = found_titles.list(title as u32);
                let bits = |hits: &[(f32, u32)]| -> Vec<(u32, u32)> {
                    hits.iter().map(|&(c, d)| (c.to_bits(), d)).collect()
                };
                assert_eq!(bits(found), bits(expected), "title {title}, {count} parts");
            }
            assert!(expected_titles.iter().all(|hits| !hits.is_empty()));
        }
    }

    /// A batch placed before a collection's cells searches among both: each batch document
    /// gets its exact top k within the cells it probes, and no collection document searches
    /// (nor are its copies of one vector paired).
    #[test]
    fn a_batch_before_a_collection_searches_among_both_and_only_the_batch_searches() {
        let (width, k, probes) = (16, 5, 3);
        let mut collection: Vec<f32> = random_vectors(2000, width, 21).concat();
        for _ in 0..=MANY_COPIES {
            collection.extend_from_within(..width);
        }
        let collection = Codes::of(&collection, width);
        let placement = CellPlacement::learn(&collection, 30, probes);
        assert!(!placement.copies.is_empty());
        let batch: Vec<f32> = random_vectors(300, width, 22).concat();
        let batch = Codes::of(&batch, width);
        let batch_docs = batch.len();
        let mut all = batch.clone();
        (0..collection.len()).for_each(|doc| all.push_code(collection.row(doc)));
        let placement = placement.preceded_by(&batch);
        let cells = Cells::searching_among(batch, collection, placement);
        let mut found = Vec::new();
        cells.neighbours(k, &mut found);
        assert!(found.iter().all(|&(a, _, _)| (a as usize) < batch_docs));
        for doc in 0..batch_docs as u32 {
            let probed = &cells.placement.nearest[doc as usize * probes..][..probes];
            let decoded = all.decoded(&[doc as usize]);
            assert_eq!(
                probed,
                cells.placement.router.nearest(&[&decoded], probes)[0]
            );
            let mut expected: Vec<(f32, u32)> = probed
                .iter()
                .flat_map(|&c| &cells.members[c as usize])
                .filter(|&&other| other != doc)
                .map(|&other| {
                    (
                        cosine(all.row(doc as usize), all.row(other as usize)),
                        other,
                    )
                })
                .collect();
            expected.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
            for &(cosine, other) in expected.iter().take(k) {
                let (a, b) = (doc.min(other), doc.max(other));
                let held = found.iter().find(|p| (p.0, p.1) == (a, b));
                let held = held.unwrap_or_else(|| panic!("{doc} lacks {other}"));
                assert_eq!(held.2.to_bits(), cosine.to_bits(), "{doc}-{other}");
            }
        }
    }

    /// Cells kept and read back search as the cells learned; documents placed later are
    /// searched among them.
    #[test]
    fn a_placement_written_and_read_back_searches_as_the_one_learned() {
        let (width, k) = (16, 5);
        // Many cells: routed through coarse ones, which the file must keep too.
        let vectors: Vec<f32> = random_vectors(3000, width, 13).concat();
        let mut vectors_with_copies = vectors.clone();
        for _ in 0..=MANY_COPIES {
            vectors_with_copies.extend_from_slice(&vectors[..width]);
        }
        let vectors_with_copies = Codes::of(&vectors_with_copies, width);
        let learned = Cells::of(vectors_with_copies.clone(), 1100, 3);
        assert!(learned.placement.router.coarse_cells() > 1);
        assert!(!learned.placement.copies.is_empty());
        let mut bytes = Vec::new();
        learned.placement.write_to(&mut bytes).unwrap();
        let read = CellPlacement::read_from(&mut bytes.as_slice()).unwrap();
        let read = Cells::placed(vectors_with_copies, read);
        let (mut before, mut after) = (Vec::new(), Vec::new());
        learned.neighbours(k, &mut before);
        read.neighbours(k, &mut after);
        assert_eq!(before, after);
        // Cut short, it is refused rather than misread.
        let cut = CellPlacement::read_from(&mut &bytes[..bytes.len() - 4]);
        assert!(cut.is_err());

        // The first 2,000 learned, the rest placed: each of those finds itself first.
        let first = Codes::of(&vectors[..2000 * width], width);
        let mut placement = CellPlacement::learn(&first, 40, 3);
        placement.place(&Codes::of(&vectors[2000 * width..], width));
        assert_eq!(placement.documents(), 3000);
        let cells = Cells::placed(Codes::of(&vectors, width), placement);
        let later: Vec<&[f32]> = vectors[2000 * width..].chunks_exact(width).collect();
        for (doc, found) in (2000u32..).zip(cells.nearest_among(&later, &cells.members, 1)) {
            assert_eq!(found[0].1, doc);
        }
    }

    #[test]
    fn cells_learned_from_a_sample_and_placed_a_block_at_a_time_are_those_learned_at_once() {
        let width = 16;
        let vectors = random_vectors(3000, width, 14);
        let mut all = vectors.concat();
        // A vector that more than MANY_COPIES hold, and one that only MANY_COPIES hold.
        for _ in 0..=MANY_COPIES {
            all.extend_from_slice(&vectors[7]);
        }
        for _ in 1..MANY_COPIES {
            all.extend_from_slice(&vectors[9]);
        }
        let codes = Codes::of(&all, width);
        let rows: Vec<usize> = (0..codes.len()).collect();
        let blocks: Vec<Codes> = (rows.chunks(700))
            .map(|rows| {
                let mut block = Codes::new(width);
                rows.iter().for_each(|&row| block.push_code(codes.row(row)));
                block
            })
            .collect();
        // Few cells, learned from every fifth document; then many, through coarse cells.
        for count in [20, 1100] {
            let at_once = CellPlacement::learn(&codes, count, 3);
            let sample = CellSample::of(codes.len(), count);
            let (mut sampled, mut hashes) = (Codes::new(width), CopyHashes::default());
            for (block, rows) in blocks.iter().zip(rows.chunks(700)) {
                for (row, &doc) in rows.iter().enumerate() {
                    if sample.holds(doc) {
                        sampled.push_code(block.row(row));
                    }
                }
                hashes.push(block);
            }
            let sampled_rows: Vec<usize> = (0..sampled.len()).collect();
            let mut placing = Placing::learn(&sampled, &sampled_rows, sample, 3, hashes);
            blocks.iter().for_each(|block| placing.place(block));
            let in_blocks = placing.finish();
            assert_eq!(in_blocks.documents(), codes.len());
            assert_eq!(in_blocks.copies.len(), MANY_COPIES + 1, "{count} cells");
            match count {
                20 => assert_eq!(sampled.len(), codes.len().div_ceil(5)),
                _ => assert!(in_blocks.router.coarse_cells() > 1),
            }
            let (mut once, mut placed) = (Vec::new(), Vec::new());
            at_once.write_to(&mut once).unwrap();
            in_blocks.write_to(&mut placed).unwrap();
            assert!(once == placed, "{count} cells placed otherwise");
        }
    }

    #[test]
    fn a_title_probing_every_cell_finds_the_exact_top_k_among_the_members_kept() {
        let (documents, width, cells_count, k) = (600, 8, 6, 4);
        let vectors = random_vectors(documents, width, 11);
        let cells = learned(&vectors, false, cells_count, cells_count);
        let kept: Vec<bool> = (0..documents).map(|d| d % 3 == 0).collect();
        let members = cells.members_among(&kept);
        assert_eq!(
            members.iter().map(Vec::len).sum::<usize>(),
            documents.div_ceil(3)
        );
        let codes = Codes::of(&vectors.concat(), width);
        let titles = random_vectors(20, width, 12);
        let titles: Vec<&[f32]> = titles.iter().map(Vec::as_slice).collect();
        for (title, found) in titles.iter().zip(cells.nearest_among(&titles, &members, k)) {
            let title = Codes::of(title, width);
            let mut expected: Vec<(f32, u32)> = (0..documents as u32)
                .filter(|&d| kept[d as usize])
                .map(|d| (cosine(title.row(0), codes.row(d as usize)), d))
                .collect();
            expected.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
            let ids = |v: &[(f32, u32)]| v.iter().map(|p| p.1).collect::<Vec<_>>();
            assert_eq!(ids(&found), ids(&expected[..k]));
        }
    }
}
