//! Between loading and search: k-means cells over the documents' vectors, so that each
//! document is searched only among the documents of its nearest few cells.
//!
//! Walking a graph one query per document is most of a run at a million documents, and the
//! graph's build grows faster than the corpus. Near-duplicates sit close together, so a
//! document's duplicates lie in the cells nearest to it: the systems that deduplicate by
//! embeddings at scale (SemDeDup, NeMo Curator) cut the vectors into k-means clusters and
//! compare exactly inside each. Here each document is compared with every document of its
//! `probes` nearest cells, and the documents that share a nearest cell are compared together,
//! as one matrix product against the documents of all the cells they probe
//! ([`crate::store::scan`]): the work per document grows with the cells' size, not with the
//! corpus, and the answer within those cells is exact.
//!
//! The vectors are the ones the store holds (read back from the spilled queries). Qdrant's own
//! filtered search can do the same one query at a time, through a payload index on the cell:
//! on 100,000 generated documents it took 186 ns a point scanned and 59 us a query on top,
//! 15.6 s for 475 points a query, where one matrix product per cell takes a fraction of that.
//!
//! The cells are learned by spherical k-means (unit centroids, cosine assignment) on an evenly
//! spaced sample of the vectors: a few Lloyd iterations, each one matrix product. This is
//! written here rather than taken from a crate: the clustering crates in Rust (linfa) bring
//! ndarray and their own BLAS for what is a loop around the matrix product this crate already
//! has ([`crate::matrix`]).

use rayon::prelude::*;

use super::queries::QueryReader;
use crate::error::Result;
use crate::progress;
use crate::store::{place, scan};

/// Lloyd iterations: the cells only need to keep near vectors together, not to converge.
const ITERATIONS: usize = 6;
/// Sampled vectors per cell the centroids are learned from.
const SAMPLE_PER_CELL: usize = 32;
/// Query vectors read back at a time.
const BLOCK: usize = 1024;
/// Cells searched before their answers are merged.
const MERGE_CELLS: usize = 64;

/// The documents' vectors cut into cells.
pub(super) struct Cells {
    width: usize,
    /// Every document's vector, row-major by document number.
    vectors: Vec<f32>,
    /// Each document's `probes` nearest cells, nearest first.
    nearest: Vec<u32>,
    /// The cells' unit centroids, row-major.
    centroids: Vec<f32>,
    probes: usize,
    /// The documents whose nearest cell each cell is, ascending.
    members: Vec<Vec<u32>>,
}

impl Cells {
    /// Learns `count` cells from the vectors of the `documents` in `queries` (titles are not
    /// documents) and finds each document's `probes` nearest. Leaves `queries` rewound.
    pub(super) fn learn(
        queries: &mut QueryReader,
        documents: usize,
        count: usize,
        probes: usize,
    ) -> Result<Cells> {
        let width = queries.dimensions();
        let mut vectors = vec![0f32; documents * width];
        while let Some((batch, flat)) = queries.next_batch(BLOCK)? {
            for (query, vector) in batch.iter().zip(flat.chunks_exact(width)) {
                if !query.title {
                    let start = query.doc as usize * width;
                    vectors[start..start + width].copy_from_slice(vector);
                }
            }
        }
        queries.rewind()?;

        let count = count.clamp(1, documents.max(1));
        let probes = probes.min(count);
        let stride = (documents / (count * SAMPLE_PER_CELL)).max(1);
        let sample: Vec<f32> = vectors
            .chunks_exact(width)
            .step_by(stride)
            .flatten()
            .copied()
            .collect();
        let centroids = centroids(&sample, width, count);
        let nearest: Vec<u32> = nearest_cells(&vectors, &centroids, width, probes)
            .into_iter()
            .flatten()
            .collect();
        let mut members = vec![Vec::new(); count];
        for (doc, cells) in nearest.chunks_exact(probes).enumerate() {
            members[cells[0] as usize].push(doc as u32);
        }
        let sizes: Vec<usize> = members.iter().map(Vec::len).collect();
        tracing::info!(
            cells = count,
            probes,
            sample = sample.len() / width,
            largest = sizes.iter().max().copied().unwrap_or(0),
            empty = sizes.iter().filter(|&&s| s == 0).count(),
            "cells learned"
        );
        Ok(Cells {
            width,
            vectors,
            nearest,
            centroids,
            probes,
            members,
        })
    }

    /// Each document's `k` nearest other documents among those of the cells it probes, as
    /// pairs `(a, b, cosine)` with `a < b` (a pair found from both ends is there twice).
    ///
    /// Cell by cell, the documents that probe it are compared with its documents in one
    /// matrix product, and each document keeps its best `k + 1` (itself among them) over its
    /// cells. Cells are taken a few hundred at a time, so that only their answers wait to be
    /// merged.
    pub(super) fn neighbours(&self, k: usize) -> Vec<(u32, u32, f32)> {
        let documents = self.vectors.len() / self.width;
        let mut probing: Vec<Vec<u32>> = vec![Vec::new(); self.members.len()];
        for (doc, cells) in self.nearest.chunks_exact(self.probes).enumerate() {
            for &cell in cells {
                probing[cell as usize].push(doc as u32);
            }
        }
        let kept = k + 1;
        // Each document's best (cosine, document), ranked by `place`; a place not yet filled
        // scores minus infinity.
        let mut best = vec![(f32::NEG_INFINITY, u32::MAX); documents * kept];
        let bar = progress::items(self.members.len() as u64, "searching cells");
        let cells: Vec<usize> = (0..self.members.len()).collect();
        for cells in cells.chunks(MERGE_CELLS) {
            let found: Vec<_> = cells
                .par_iter()
                .map(|&cell| {
                    let (docs, members) = (&probing[cell], &self.members[cell]);
                    let mut pool = Vec::with_capacity(members.len() * self.width);
                    for &doc in members {
                        pool.extend_from_slice(self.vector(doc));
                    }
                    let keys: Vec<u64> = members.iter().map(|&d| u64::from(d)).collect();
                    let queries: Vec<&[f32]> = docs.iter().map(|&d| self.vector(d)).collect();
                    (
                        docs.as_slice(),
                        scan(&pool, &keys, self.width, &queries, kept),
                    )
                })
                .collect();
            for (docs, hits) in found {
                for (&doc, hits) in docs.iter().zip(hits) {
                    let slots = &mut best[doc as usize * kept..(doc as usize + 1) * kept];
                    for (cosine, other) in hits {
                        place(slots, (cosine, other as u32));
                    }
                }
            }
            bar.inc(cells.len() as u64);
        }
        bar.finish_and_clear();
        best.chunks_exact(kept)
            .enumerate()
            .flat_map(|(doc, slots)| {
                let doc = doc as u32;
                slots
                    .iter()
                    .filter(move |&&(cosine, other)| cosine > f32::NEG_INFINITY && other != doc)
                    .map(move |&(cosine, other)| (doc.min(other), doc.max(other), cosine))
            })
            .collect()
    }

    /// The members of each cell that `keep` holds (by document number).
    pub(super) fn members_among(&self, keep: &[bool]) -> Vec<Vec<u32>> {
        self.members
            .iter()
            .map(|docs| docs.iter().copied().filter(|&d| keep[d as usize]).collect())
            .collect()
    }

    /// Each of `queries`' `k` nearest documents among `members` (a subset of each cell's, from
    /// [`Cells::members_among`]) of the `probes` cells nearest to it, as `(cosine, document)`,
    /// best first. A title is searched so among the title-only records: its copies lie near
    /// it, so in the cells nearest to it, where a graph over every title-only record of a
    /// large corpus is walked one title at a time.
    pub(super) fn nearest_among(
        &self,
        queries: &[&[f32]],
        members: &[Vec<u32>],
        k: usize,
    ) -> Vec<Vec<(f32, u32)>> {
        let cells: Vec<u64> = (0..members.len() as u64).collect();
        let probed = scan(&self.centroids, &cells, self.width, queries, self.probes);
        queries
            .par_iter()
            .zip(probed)
            .map(|(query, probed)| {
                let mut best = Vec::new();
                for (_, cell) in probed {
                    for &doc in &members[cell as usize] {
                        best.push((crate::embed::cosine(query, self.vector(doc)), doc));
                    }
                }
                best.sort_unstable_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
                best.truncate(k);
                best
            })
            .collect()
    }

    /// The pairs `(a, b)` with the cosine of their vectors.
    pub(super) fn with_cosines(&self, pairs: &[(u32, u32)]) -> Vec<(u32, u32, f32)> {
        pairs
            .par_iter()
            .map(|&(a, b)| (a, b, crate::embed::cosine(self.vector(a), self.vector(b))))
            .collect()
    }

    /// The cosine of `vector` and document `doc`'s.
    pub(super) fn cosine_to(&self, vector: &[f32], doc: u32) -> f32 {
        crate::embed::cosine(vector, self.vector(doc))
    }

    fn vector(&self, doc: u32) -> &[f32] {
        let start = doc as usize * self.width;
        &self.vectors[start..start + self.width]
    }
}

/// `count` unit centroids learned from the row-major unit vectors `sample` by spherical
/// k-means, started from evenly spaced sample vectors.
fn centroids(sample: &[f32], width: usize, count: usize) -> Vec<f32> {
    let rows = sample.len() / width;
    let step = (rows / count).max(1);
    let mut centroids: Vec<f32> = (0..count)
        .flat_map(|c| {
            let row = (c * step) % rows.max(1);
            sample[row * width..(row + 1) * width].iter().copied()
        })
        .collect();
    for _ in 0..ITERATIONS {
        let assigned: Vec<u32> = nearest_cells(sample, &centroids, width, 1)
            .into_iter()
            .map(|cells| cells[0])
            .collect();
        let mut sums = vec![0f32; count * width];
        for (vector, &cell) in sample.chunks_exact(width).zip(&assigned) {
            let sum = &mut sums[cell as usize * width..(cell as usize + 1) * width];
            sum.iter_mut().zip(vector).for_each(|(s, x)| *s += x);
        }
        for (centroid, sum) in centroids
            .chunks_exact_mut(width)
            .zip(sums.chunks_exact(width))
        {
            let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
            // A cell no vector chose keeps its centroid: it may win vectors later.
            if norm > 0.0 {
                centroid
                    .iter_mut()
                    .zip(sum)
                    .for_each(|(c, s)| *c = s / norm);
            }
        }
    }
    centroids
}

/// For each row of `vectors`, its `probes` nearest centroids, nearest first (of equally near
/// ones, the lower cell).
fn nearest_cells(vectors: &[f32], centroids: &[f32], width: usize, probes: usize) -> Vec<Vec<u32>> {
    let cells: Vec<u64> = (0..(centroids.len() / width) as u64).collect();
    let rows: Vec<&[f32]> = vectors.chunks_exact(width).collect();
    scan(centroids, &cells, width, &rows, probes)
        .into_iter()
        .map(|nearest| nearest.into_iter().map(|(_, cell)| cell as u32).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / norm).collect()
    }

    #[test]
    fn vectors_near_one_another_share_a_cell_and_each_row_gets_its_nearest_first() {
        // Three tight clusters on the axes of a 3-dimensional space.
        let mut sample = Vec::new();
        for axis in 0..3 {
            for i in 0..20 {
                let mut v = [0.05 * (i % 3) as f32; 3];
                v[axis] = 1.0;
                sample.extend(unit(&v));
            }
        }
        let centroids = centroids(&sample, 3, 3);
        let cells = nearest_cells(&sample, &centroids, 3, 2);
        for axis in 0..3 {
            let first = cells[axis * 20][0];
            assert!(
                cells[axis * 20..(axis + 1) * 20]
                    .iter()
                    .all(|c| c[0] == first),
                "a cluster in one cell: {cells:?}"
            );
            assert!(cells[axis * 20].len() == 2 && cells[axis * 20][1] != first);
        }
        let distinct: std::collections::HashSet<u32> = cells.iter().map(|c| c[0]).collect();
        assert_eq!(distinct.len(), 3, "three clusters, three cells");
    }

    /// Random unit vectors of `width`, from `seed`.
    fn random_vectors(count: usize, width: usize, seed: u64) -> Vec<Vec<f32>> {
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

    #[test]
    fn each_document_gets_its_exact_top_k_within_the_cells_it_probes() {
        let (documents, width, k) = (3000, 16, 5);
        let vectors = random_vectors(documents, width, 7);
        let dir = tempfile::tempdir().unwrap();
        let mut file = super::super::queries::QueryFile::create(dir.path(), width).unwrap();
        for (doc, vector) in vectors.iter().enumerate() {
            let query = super::super::queries::Query {
                doc: doc as u32,
                title: false,
            };
            file.append(query, vector).unwrap();
            // A title query in between is not a document.
            let title = super::super::queries::Query {
                doc: doc as u32,
                title: true,
            };
            file.append(title, &vectors[(doc + 1) % documents]).unwrap();
        }
        let mut queries = file.into_reader().unwrap();
        let cells = Cells::learn(&mut queries, documents, 40, 3).unwrap();
        assert_eq!(cells.members.iter().map(Vec::len).sum::<usize>(), documents);

        let found = cells.neighbours(k);
        let mut by_doc: Vec<Vec<(u32, f32)>> = vec![Vec::new(); documents];
        for &(a, b, cosine) in &found {
            assert!(a < b);
            by_doc[a as usize].push((b, cosine));
            by_doc[b as usize].push((a, cosine));
        }
        let dot = crate::embed::cosine;
        for doc in 0..documents as u32 {
            let probed = &cells.nearest[doc as usize * 3..doc as usize * 3 + 3];
            let mut expected: Vec<(f32, u32)> = probed
                .iter()
                .flat_map(|&c| &cells.members[c as usize])
                .filter(|&&other| other != doc)
                .map(|&other| (dot(&vectors[doc as usize], &vectors[other as usize]), other))
                .collect();
            expected.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
            // Its own top k are among its pairs (others may have found it too).
            for &(cosine, other) in expected.iter().take(k) {
                let held = by_doc[doc as usize].iter().find(|p| p.0 == other);
                let (_, held) = held.unwrap_or_else(|| panic!("{doc} lacks {other}"));
                assert!(
                    (held - cosine).abs() < 1e-4,
                    "{doc}-{other}: {held} against {cosine}"
                );
            }
        }
    }

    #[test]
    fn a_title_probing_every_cell_finds_the_exact_top_k_among_the_members_kept() {
        let (documents, width, cells_count, k) = (600, 8, 6, 4);
        let vectors = random_vectors(documents, width, 11);
        let dir = tempfile::tempdir().unwrap();
        let mut file = super::super::queries::QueryFile::create(dir.path(), width).unwrap();
        for (doc, vector) in vectors.iter().enumerate() {
            let query = super::super::queries::Query {
                doc: doc as u32,
                title: false,
            };
            file.append(query, vector).unwrap();
        }
        let mut queries = file.into_reader().unwrap();
        let cells = Cells::learn(&mut queries, documents, cells_count, cells_count).unwrap();
        let kept: Vec<bool> = (0..documents).map(|d| d % 3 == 0).collect();
        let members = cells.members_among(&kept);
        assert_eq!(
            members.iter().map(Vec::len).sum::<usize>(),
            documents.div_ceil(3)
        );
        let titles = random_vectors(20, width, 12);
        let titles: Vec<&[f32]> = titles.iter().map(Vec::as_slice).collect();
        for (title, found) in titles.iter().zip(cells.nearest_among(&titles, &members, k)) {
            let mut expected: Vec<(f32, u32)> = (0..documents as u32)
                .filter(|&d| kept[d as usize])
                .map(|d| (crate::embed::cosine(title, &vectors[d as usize]), d))
                .collect();
            expected.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
            let ids = |v: &[(f32, u32)]| v.iter().map(|p| p.1).collect::<Vec<_>>();
            assert_eq!(ids(&found), ids(&expected[..k]));
        }
    }
}
