//! [`ExactScan`]: an exact cosine search of a set small enough to scan, in memory, by matrix
//! products.
//!
//! The engines search one query at a time (qdrant-edge has no batch search), so a scan of `n`
//! points for `q` queries reads every point `q` times, at about 44 ns a point on 256
//! dimensions. Here the queries of a batch share each pass: their cosines with every point are
//! one matrix product (`gemm`), and each query's top `k` is picked from its row. The run's
//! title queries search the title-only records this way (the two-stage method).

use rayon::prelude::*;

use crate::store::{Neighbour, point_key, unit_cosine};

/// Queries whose cosines one thread computes at a time: a block's scores (`64 x n`) stay
/// within a core's cache for the sets this scans.
const QUERY_BLOCK: usize = 64;

/// Unit vectors with their document ids, searched exactly by cosine.
pub struct ExactScan {
    width: usize,
    ids: Vec<String>,
    keys: Vec<u64>,
    /// The vectors, row-major, `width` apart.
    vectors: Vec<f32>,
}

impl ExactScan {
    /// An empty set of `width`-dimensional vectors.
    pub fn new(width: usize) -> Self {
        ExactScan {
            width,
            ids: Vec::new(),
            keys: Vec::new(),
            vectors: Vec::new(),
        }
    }

    /// Adds document `id` with its unit `vector`.
    pub fn add(&mut self, id: &str, vector: &[f32]) {
        assert_eq!(vector.len(), self.width, "a vector of the scan's width");
        self.ids.push(id.to_owned());
        self.keys.push(point_key(id));
        self.vectors.extend_from_slice(vector);
    }

    /// How many points it holds.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The bytes its vectors take, as a store's full-scan size counts them.
    pub fn vector_bytes(&self) -> usize {
        self.vectors.len() * size_of::<f32>()
    }

    /// Every point: its id and vector, in the order added.
    pub fn points(&self) -> impl Iterator<Item = (&str, &[f32])> {
        self.ids
            .iter()
            .map(String::as_str)
            .zip(self.vectors.chunks_exact(self.width))
    }

    /// The `k` points of highest cosine to each query, best first; of equal cosines the lower
    /// key first, so that the answer does not depend on the order the points came in.
    pub fn search(&self, queries: &[&[f32]], k: usize) -> Vec<Vec<Neighbour>> {
        scan(&self.vectors, &self.keys, self.width, queries, k)
            .into_iter()
            .map(|hits| {
                hits.into_iter()
                    .map(|(cosine, key)| Neighbour {
                        key,
                        cosine,
                        payload: None,
                    })
                    .collect()
            })
            .collect()
    }
}

/// The `k` of the row-major `width`-wide `vectors` (keyed by `keys`) of highest cosine to each
/// query, as `(cosine, key)`, best first; of equal cosines the lower key first.
/// [`ExactScan::search`] over a set held elsewhere.
pub fn scan(
    vectors: &[f32],
    keys: &[u64],
    width: usize,
    queries: &[&[f32]],
    k: usize,
) -> Vec<Vec<(f32, u64)>> {
    if keys.is_empty() || k == 0 {
        return vec![Vec::new(); queries.len()];
    }
    let n = keys.len();
    queries
        .par_chunks(QUERY_BLOCK)
        .flat_map_iter(|block| {
            // A short block is padded to a whole one: gemm takes another path for fewer
            // rows, which rounds differently, and a query's cosines must not depend on
            // how many queries came with it.
            let mut rows = vec![0.0f32; QUERY_BLOCK * width];
            for (query, row) in block.iter().zip(rows.chunks_exact_mut(width)) {
                row.copy_from_slice(query);
            }
            let mut scores = vec![0.0f32; QUERY_BLOCK * n];
            crate::matrix::dot_products(&mut scores, &rows, vectors, width);
            scores
                .chunks_exact(n)
                .take(block.len())
                .map(|row| best(row, keys, k))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The `k` best points of one query's `scores`, best first.
fn best(scores: &[f32], keys: &[u64], k: usize) -> Vec<(f32, u64)> {
    // As many places as there are points to fill them: no empty place is left.
    let mut best = vec![(f32::NEG_INFINITY, u64::MAX); k.min(keys.len())];
    for (&score, &key) in scores.iter().zip(keys) {
        place(&mut best, (score, key));
    }
    best.into_iter()
        .map(|(score, key)| (unit_cosine(score), key))
        .collect()
}

/// Places `candidate` (a score and a key) among the ranked `held`, best first (a higher score,
/// or the same and a lower key), dropping the last; one that ranks below them all is left out.
/// Places not yet filled hold a score of minus infinity.
pub fn place<K: Ord + Copy>(held: &mut [(f32, K)], candidate: (f32, K)) {
    let before = |a: &(f32, K), b: &(f32, K)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).is_lt();
    // Most candidates lose to the last held at once; only the others are placed.
    match held.last() {
        Some(last) if before(&candidate, last) => {}
        _ => return,
    }
    let at = held.partition_point(|h| before(h, &candidate));
    held[at..].rotate_right(1);
    held[at] = candidate;
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::store::tests::random_points;

    fn scan_of(ids: &[String], vectors: &[Vec<f32>]) -> ExactScan {
        let mut scan = ExactScan::new(vectors[0].len());
        for (id, v) in ids.iter().zip(vectors) {
            scan.add(id, v);
        }
        scan
    }

    #[test]
    fn finds_the_top_k_a_brute_force_loop_finds() {
        let (ids, points) = random_points(500, 48, 1);
        let (_, queries) = random_points(150, 48, 2);
        let scan = scan_of(&ids, &points);
        let query_refs: Vec<&[f32]> = queries.iter().map(Vec::as_slice).collect();
        let found = scan.search(&query_refs, 7);
        assert_eq!(found.len(), queries.len());
        for (query, hits) in queries.iter().zip(&found) {
            let mut exact: Vec<(f32, u64)> = points
                .iter()
                .zip(&ids)
                .map(|(p, id)| (crate::embed::cosine(p, query), point_key(id)))
                .collect();
            exact.sort_by(|a, b| b.0.total_cmp(&a.0));
            let keys: Vec<u64> = hits.iter().map(|h| h.key).collect();
            let expected: Vec<u64> = exact.iter().take(7).map(|e| e.1).collect();
            assert_eq!(keys, expected);
            for (hit, (dot, _)) in hits.iter().zip(&exact) {
                assert!(
                    (hit.cosine - dot).abs() < 1e-5,
                    "{} against {dot}",
                    hit.cosine
                );
            }
        }
    }

    #[test]
    fn a_query_gets_the_same_answer_in_any_batch_and_any_point_order() {
        let (ids, points) = random_points(300, 32, 3);
        let (_, queries) = random_points(130, 32, 4);
        let query_refs: Vec<&[f32]> = queries.iter().map(Vec::as_slice).collect();
        let scan = scan_of(&ids, &points);
        let together = scan.search(&query_refs, 5);
        // The points in reverse order, each with its own id.
        let mut reversed = ExactScan::new(32);
        for (id, v) in ids.iter().zip(&points).rev() {
            reversed.add(id, v);
        }
        for (i, query) in query_refs.iter().enumerate() {
            assert_eq!(scan.search(&[query], 5)[0], together[i], "query {i} alone");
            assert_eq!(
                reversed.search(&[query], 5)[0],
                together[i],
                "query {i}, points reversed"
            );
        }
    }

    #[test]
    fn a_point_finds_itself_at_a_cosine_of_at_most_one() {
        let (ids, points) = random_points(2000, 256, 6);
        let scan = scan_of(&ids, &points);
        let queries: Vec<&[f32]> = points.iter().map(Vec::as_slice).collect();
        for (id, hits) in ids.iter().zip(scan.search(&queries, 1)) {
            assert_eq!(hits[0].key, point_key(id));
            // Rounding puts some dot products of a unit vector with itself above 1, which
            // the readers of a run refuse.
            assert!(
                (0.9999..=1.0).contains(&hits[0].cosine),
                "{}",
                hits[0].cosine
            );
        }
    }

    #[test]
    fn equal_cosines_rank_by_key_and_an_empty_scan_finds_nothing() {
        let mut scan = ExactScan::new(2);
        for id in ["c", "a", "b"] {
            scan.add(id, &[1.0, 0.0]);
        }
        let hits = scan.search(&[&[1.0, 0.0]], 2);
        let mut keys = [point_key("a"), point_key("b"), point_key("c")];
        keys.sort();
        assert_eq!(hits[0].iter().map(|h| h.key).collect::<Vec<_>>(), keys[..2]);
        assert!(ExactScan::new(2).search(&[&[1.0, 0.0]], 3)[0].is_empty());
        assert_eq!(scan.points().count(), 3);
        assert_eq!(scan.vector_bytes(), 3 * 2 * 4);
    }
}
