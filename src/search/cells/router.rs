//! The cells' centroids, and how a vector finds its nearest cells.
//!
//! A few hundred cells are found by comparing a vector with every centroid. Past that, the
//! comparisons with every centroid would grow with the corpus (the cells are kept about the
//! same size, so their number grows with it) and cost more than the search within the cells:
//! the cells are then grouped under coarse cells, about the square root of their number, and a
//! vector is compared with the coarse centroids and then with the cells of its nearest few
//! coarse cells, as in a two-level inverted file. Vectors near a coarse boundary look on both
//! sides of it.

use std::io::{self, Read, Write};

use rayon::prelude::*;

use super::{Codes, Ranked, probing};
use crate::io::{read_count, read_list, write_count, write_list};
use crate::store::scan;

/// Lloyd iterations: the cells only need to keep near vectors together, not to converge.
const ITERATIONS: usize = 6;
/// At most this many cells are found by comparing with every centroid; past it, through
/// coarse cells.
pub(super) const FLAT_CELLS: usize = 1024;
/// The coarse cells whose cells a vector is compared with.
const COARSE_PROBES: usize = 3;
/// Sampled vectors decoded from their codes at a time.
const DECODE_BLOCK: usize = 1 << 16;

/// Centroids of cells, grouped under coarse ones where they are many.
pub(super) struct Router {
    width: usize,
    /// The coarse cells' unit centroids, row-major; empty where the cells are few (one coarse
    /// cell holds them all).
    coarse: Vec<f32>,
    /// The cells under coarse cell `c` are `bounds[c]..bounds[c + 1]`.
    bounds: Vec<usize>,
    /// The cells' unit centroids, row-major, those of one coarse cell together.
    centroids: Vec<f32>,
}

impl Router {
    /// About `count` cells learned by spherical k-means from the `rows` of `vectors` (the
    /// sample): all at once up to [`FLAT_CELLS`]; else first the coarse cells, then each coarse
    /// cell's share of the cells from its share of the sample. The sample is held as codes and
    /// decoded a block at a time: as `f32` it would take four times the memory (3 GB at ten
    /// million documents).
    pub(super) fn learn(vectors: &Codes, rows: &[usize], count: usize) -> Router {
        let width = vectors.width();
        if count <= FLAT_CELLS {
            return Router {
                width,
                coarse: Vec::new(),
                bounds: vec![0, count],
                centroids: centroids(vectors, rows, count),
            };
        }
        let coarse_count = (count as f64).sqrt().ceil() as usize;
        let coarse = centroids(vectors, rows, coarse_count);
        let mut groups: Vec<Vec<usize>> = vec![Vec::new(); coarse_count];
        for_each_nearest(vectors, rows, &coarse, |row, _, cell| {
            groups[cell as usize].push(row);
        });
        let fine: Vec<Vec<f32>> = groups
            .par_iter()
            .zip(coarse.par_chunks_exact(width))
            .map(|(group, centroid)| {
                if group.is_empty() {
                    // A coarse cell no sampled vector chose keeps one cell, its own centroid.
                    return centroid.to_vec();
                }
                let members = group.len();
                let share = (count as f64 * members as f64 / rows.len() as f64).round() as usize;
                centroids(vectors, group, share.clamp(1, members))
            })
            .collect();
        let mut bounds = vec![0];
        for cells in &fine {
            bounds.push(bounds.last().unwrap() + cells.len() / width);
        }
        Router {
            width,
            coarse,
            bounds,
            centroids: fine.concat(),
        }
    }

    /// The width of the vectors routed.
    pub(super) fn width(&self) -> usize {
        self.width
    }

    /// Writes what [`Router::read_from`] reads.
    pub(super) fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        write_count(w, self.width)?;
        let bounds: Vec<u32> = self.bounds.iter().map(|&b| b as u32).collect();
        write_list(w, &bounds)?;
        for floats in [&self.coarse, &self.centroids] {
            let bits: Vec<u32> = floats.iter().map(|x| x.to_bits()).collect();
            write_list(w, &bits)?;
        }
        Ok(())
    }

    /// Reads what [`Router::write_to`] wrote.
    pub(super) fn read_from(r: &mut impl Read) -> io::Result<Router> {
        let width = read_count(r)?;
        let bounds: Vec<usize> = read_list(r)?.into_iter().map(|b| b as usize).collect();
        let mut floats = || -> io::Result<Vec<f32>> {
            Ok(read_list(r)?.into_iter().map(f32::from_bits).collect())
        };
        let (coarse, centroids) = (floats()?, floats()?);
        let coarse_cells = bounds.len().saturating_sub(1);
        let fits = width > 0
            && coarse_cells > 0
            && bounds[0] == 0
            && bounds.is_sorted()
            && centroids.len() == bounds[coarse_cells] * width
            && (coarse.is_empty() && coarse_cells == 1 || coarse.len() == coarse_cells * width);
        if !fits {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "its cells' centroids do not fit together",
            ));
        }
        Ok(Router {
            width,
            coarse,
            bounds,
            centroids,
        })
    }

    /// The number of cells.
    pub(super) fn cells(&self) -> usize {
        self.centroids.len() / self.width
    }

    /// The number of coarse cells (one where the cells are few).
    pub(super) fn coarse_cells(&self) -> usize {
        self.bounds.len() - 1
    }

    /// Each of `rows`' `probes` nearest cells, nearest first (of equally near ones, the lower
    /// cell); among the cells of its nearest coarse cells where there are coarse cells.
    pub(super) fn nearest(&self, rows: &[&[f32]], probes: usize) -> Vec<Vec<u32>> {
        let width = self.width;
        if self.coarse.is_empty() {
            return nearest_of_all(rows, &self.centroids, width, probes);
        }
        let coarse_cells: Vec<u32> = (0..self.coarse_cells() as u32).collect();
        let routed = scan(&self.coarse, &coarse_cells, width, rows, COARSE_PROBES);
        let probing = probing(
            self.coarse_cells(),
            routed
                .into_iter()
                .map(|coarse| coarse.into_iter().map(|(_, cell)| cell)),
        );
        // A coarse cell at a time, its cells compared with the rows routed to it in one
        // matrix product.
        let found: Vec<Vec<Vec<(f32, u32)>>> = probing
            .par_iter()
            .enumerate()
            .map(|(coarse, routed)| {
                let cells = self.bounds[coarse]..self.bounds[coarse + 1];
                let keys: Vec<u32> = cells.clone().map(|cell| cell as u32).collect();
                let queries: Vec<&[f32]> = routed.iter().map(|&row| rows[row as usize]).collect();
                let centroids = &self.centroids[cells.start * width..cells.end * width];
                scan(centroids, &keys, width, &queries, probes)
            })
            .collect();
        let mut best = Ranked::new(rows.len(), probes);
        for (routed, found) in probing.iter().zip(found) {
            for (&row, cells) in routed.iter().zip(found) {
                best.offer(row, cells);
            }
        }
        best.lists()
            .map(|cells| cells.iter().map(|&(_, cell)| cell).collect())
            .collect()
    }
}

/// `count` unit centroids learned by spherical k-means from the `rows` of `vectors`, started
/// from evenly spaced ones.
fn centroids(vectors: &Codes, rows: &[usize], count: usize) -> Vec<f32> {
    let width = vectors.width();
    let step = (rows.len() / count).max(1);
    let starts: Vec<usize> = (0..count).map(|c| rows[(c * step) % rows.len()]).collect();
    let mut centroids = vectors.decoded(&starts);
    for _ in 0..ITERATIONS {
        let mut sums = vec![0f32; count * width];
        for_each_nearest(vectors, rows, &centroids, |_, vector, cell| {
            let sum = &mut sums[cell as usize * width..(cell as usize + 1) * width];
            sum.iter_mut().zip(vector).for_each(|(s, x)| *s += x);
        });
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

/// Hands `visit` each of the `rows` of `vectors`, in order: its number, its vector (decoded a
/// block at a time) and the nearest of `centroids` to it.
fn for_each_nearest(
    vectors: &Codes,
    rows: &[usize],
    centroids: &[f32],
    mut visit: impl FnMut(usize, &[f32], u32),
) {
    let width = vectors.width();
    for block in rows.chunks(DECODE_BLOCK) {
        let decoded = vectors.decoded(block);
        let vectors: Vec<&[f32]> = decoded.chunks_exact(width).collect();
        let nearest = nearest_of_all(&vectors, centroids, width, 1);
        for ((&row, vector), cells) in block.iter().zip(&vectors).zip(nearest) {
            visit(row, vector, cells[0]);
        }
    }
}

/// For each of `rows`, its `probes` nearest of all `centroids`, nearest first (of equally
/// near ones, the lower cell).
fn nearest_of_all(
    rows: &[&[f32]],
    centroids: &[f32],
    width: usize,
    probes: usize,
) -> Vec<Vec<u32>> {
    let cells: Vec<u32> = (0..(centroids.len() / width) as u32).collect();
    scan(centroids, &cells, width, rows, probes)
        .into_iter()
        .map(|nearest| nearest.into_iter().map(|(_, cell)| cell).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::cells::tests::{random_vectors, unit};

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
        let codes = Codes::of(&sample, 3);
        let router = Router::learn(&codes, &(0..codes.len()).collect::<Vec<_>>(), 3);
        assert_eq!((router.cells(), router.coarse_cells()), (3, 1));
        let rows: Vec<&[f32]> = sample.chunks_exact(3).collect();
        let cells = router.nearest(&rows, 2);
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

    #[test]
    fn many_cells_are_found_through_coarse_ones_as_a_search_of_every_cell_finds_them() {
        // 1,500 tight clusters of 8 vectors: more cells than are searched all at once.
        let (clusters, width, count) = (1500, 16, 1500);
        let centres = random_vectors(clusters, width, 21);
        let noise = random_vectors(clusters * 8, width, 22);
        let sample: Vec<f32> = noise
            .iter()
            .enumerate()
            .flat_map(|(i, noise)| {
                let centre = &centres[i / 8];
                unit(
                    &centre
                        .iter()
                        .zip(noise)
                        .map(|(c, n)| c + 0.05 * n)
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        let codes = Codes::of(&sample, width);
        let router = Router::learn(&codes, &(0..codes.len()).collect::<Vec<_>>(), count);
        assert!(count > FLAT_CELLS);
        assert_eq!(router.coarse_cells(), 39);
        assert!(
            (1400..=1600).contains(&router.cells()),
            "about {count} cells: {}",
            router.cells()
        );
        let rows: Vec<&[f32]> = sample.chunks_exact(width).collect();
        let routed = router.nearest(&rows, 3);
        let every = nearest_of_all(&rows, &router.centroids, width, 3);
        let cosine = |row: &[f32], cell: u32| {
            let at = cell as usize * width;
            crate::embed::cosine(row, &router.centroids[at..at + width])
        };
        let mut same = 0;
        for ((row, routed), every) in rows.iter().zip(&routed).zip(&every) {
            assert_eq!(routed.len(), 3);
            // Nearest first, each cell once.
            assert!(
                routed
                    .windows(2)
                    .all(|w| cosine(row, w[0]) + 1e-5 >= cosine(row, w[1]) && w[0] != w[1])
            );
            same += usize::from(routed[0] == every[0]);
        }
        assert!(
            same * 100 >= rows.len() * 99,
            "{same} of {} agree",
            rows.len()
        );
    }
}
