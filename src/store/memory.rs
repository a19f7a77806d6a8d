//! [`MemoryStore`]: a vector store held in memory and searched exactly, by matrix products.
//!
//! The engines search one query at a time (qdrant-edge has no batch search), so a scan of `n`
//! points for `q` queries reads every point `q` times, at about 44 ns a point on 256
//! dimensions. Here the queries of a batch share each pass: their cosines with every point are
//! one matrix product (`gemm`), and each query's top `k` is picked from its row ([`scan`]).
//!
//! It is the store for sets small enough to scan (a run's title-only records), and the engine
//! the shared store suite always runs on. It builds no graph and keeps nothing on disk.

use std::collections::HashMap;
use std::sync::RwLock;

use rayon::prelude::*;

use super::{
    Fetched, Neighbour, Page, Payload, SearchOptions, StoredPoint, VectorStore, unit_cosine,
};
use crate::confirm::Facts;
use crate::error::{Error, Result};

/// Queries whose cosines one thread computes at a time: a block's scores (`64 x n`) stay
/// within a core's cache for the sets this scans.
const QUERY_BLOCK: usize = 64;

/// Unit vectors with their documents' ids and sketches, in memory, searched exactly by cosine.
pub struct MemoryStore {
    width: usize,
    points: RwLock<Points>,
}

/// The points of a [`MemoryStore`], each at one position of every list.
#[derive(Default)]
struct Points {
    keys: Vec<u64>,
    /// The vectors, row-major, `width` apart.
    vectors: Vec<f32>,
    ids: Vec<String>,
    /// Signature, shingle count and facts, where the point was stored with them, and the
    /// title's vector where it was stored with one.
    sketches: Vec<Option<(Vec<u32>, u32, Facts)>>,
    titles: Vec<Option<Vec<f32>>>,
    /// Where each key is.
    position: HashMap<u64, usize>,
}

impl Points {
    fn payload(&self, at: usize) -> Result<Payload> {
        let (signature, shingles, facts) = self.sketches[at].clone().ok_or_else(|| {
            Error::store(format!(
                "point {:?} was stored without its sketch",
                self.ids[at]
            ))
        })?;
        Ok(Payload {
            id: self.ids[at].clone(),
            signature,
            shingles,
            facts,
            title: self.titles[at].clone(),
        })
    }
}

impl MemoryStore {
    /// An empty store of `width`-dimensional vectors.
    pub fn new(width: usize) -> Self {
        MemoryStore {
            width,
            points: RwLock::new(Points::default()),
        }
    }

    /// The bytes its vectors take, as a store's full-scan size counts them.
    pub fn vector_bytes(&self) -> usize {
        self.read().vectors.len() * size_of::<f32>()
    }

    /// Every point's id and vector, in the order added (a deletion moves the last point into
    /// the place it frees).
    pub fn into_points(self) -> Vec<(String, Vec<f32>)> {
        let points = self
            .points
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let vectors = points.vectors.chunks_exact(self.width).map(<[f32]>::to_vec);
        points.ids.into_iter().zip(vectors).collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Points> {
        // A panic while holding the lock leaves the lists whole: each write changes them
        // together before the next can start.
        self.points
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Points> {
        self.points
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl VectorStore for MemoryStore {
    fn describe(&self) -> String {
        format!("in memory ({} dimensions)", self.width)
    }

    fn upsert(&self, points: &[StoredPoint<'_>]) -> Result<()> {
        if let Some(point) = points.iter().find(|p| p.vector.len() != self.width) {
            return Err(Error::store(format!(
                "point {:?} has {} dimensions; the store holds {}",
                point.id,
                point.vector.len(),
                self.width
            )));
        }
        let mut held = self.write();
        for point in points {
            let sketch = point
                .sketch
                .map(|s| (s.signature.to_vec(), s.shingles, s.facts.clone()));
            match held.position.get(&point.key) {
                Some(&at) => {
                    held.vectors[at * self.width..(at + 1) * self.width]
                        .copy_from_slice(point.vector);
                    held.ids[at] = point.id.to_owned();
                    held.sketches[at] = sketch;
                    held.titles[at] = point.title.map(<[f32]>::to_vec);
                }
                None => {
                    let at = held.keys.len();
                    held.position.insert(point.key, at);
                    held.keys.push(point.key);
                    held.vectors.extend_from_slice(point.vector);
                    held.ids.push(point.id.to_owned());
                    held.sketches.push(sketch);
                    held.titles.push(point.title.map(<[f32]>::to_vec));
                }
            }
        }
        Ok(())
    }

    fn build_index(&self) -> Result<bool> {
        Ok(false)
    }

    /// Always exact: the true top `k`, of equal cosines the lower key first, so that the
    /// answer depends neither on the order the points came in nor on the batch.
    fn search(&self, queries: &[&[f32]], options: SearchOptions) -> Result<Vec<Vec<Neighbour>>> {
        let held = self.read();
        scan(&held.vectors, &held.keys, self.width, queries, options.k)
            .into_iter()
            .map(|hits| {
                hits.into_iter()
                    .map(|(cosine, key)| {
                        let payload = match options.with_payload {
                            true => Some(held.payload(held.position[&key])?),
                            false => None,
                        };
                        Ok(Neighbour {
                            key,
                            cosine,
                            payload,
                        })
                    })
                    .collect()
            })
            .collect()
    }

    fn fetch(&self, keys: &[u64]) -> Result<Vec<Option<Fetched>>> {
        let held = self.read();
        keys.iter()
            .map(|key| {
                let Some(&at) = held.position.get(key) else {
                    return Ok(None);
                };
                Ok(Some(Fetched {
                    payload: held.payload(at)?,
                    vector: held.vectors[at * self.width..(at + 1) * self.width].to_vec(),
                }))
            })
            .collect()
    }

    fn scroll(&self, from: Option<u64>, limit: usize) -> Result<Page> {
        let held = self.read();
        let mut keys: Vec<u64> = held
            .keys
            .iter()
            .copied()
            .filter(|&key| from.is_none_or(|from| key >= from))
            .collect();
        let next = match keys.len() > limit {
            true => Some(*keys.select_nth_unstable(limit).1),
            false => None,
        };
        keys.truncate(limit);
        keys.sort_unstable();
        let points = keys
            .into_iter()
            .map(|key| {
                let at = held.position[&key];
                let vector = held.vectors[at * self.width..(at + 1) * self.width].to_vec();
                Ok((
                    key,
                    Fetched {
                        payload: held.payload(at)?,
                        vector,
                    },
                ))
            })
            .collect::<Result<_>>()?;
        Ok((points, next))
    }

    fn delete(&self, keys: &[u64]) -> Result<()> {
        let mut held = self.write();
        for key in keys {
            let Some(at) = held.position.remove(key) else {
                continue;
            };
            let last = held.keys.len() - 1;
            held.keys.swap_remove(at);
            held.ids.swap_remove(at);
            held.sketches.swap_remove(at);
            held.titles.swap_remove(at);
            if at != last {
                let (width, moved) = (self.width, held.keys[at]);
                held.vectors
                    .copy_within(last * width..(last + 1) * width, at * width);
                held.position.insert(moved, at);
            }
            held.vectors.truncate(last * self.width);
        }
        Ok(())
    }

    fn len(&self) -> Result<usize> {
        Ok(self.read().keys.len())
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }
}

/// The `k` of the row-major `width`-wide `vectors` (keyed by `keys`) of highest cosine to each
/// query, as `(cosine, key)`, best first; of equal cosines the lower key first.
/// [`MemoryStore`]'s search, over a set held elsewhere.
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

    use crate::store::point_key;

    fn scan_of(ids: &[String], vectors: &[Vec<f32>]) -> MemoryStore {
        let store = MemoryStore::new(vectors[0].len());
        add(
            &store,
            ids.iter()
                .map(String::as_str)
                .zip(vectors.iter().map(Vec::as_slice)),
        );
        store
    }

    fn add<'a>(store: &MemoryStore, points: impl Iterator<Item = (&'a str, &'a [f32])>) {
        let points: Vec<StoredPoint<'_>> = points
            .map(|(id, vector)| StoredPoint::new(id, vector, None))
            .collect();
        store.upsert(&points).unwrap();
    }

    /// The `k` nearest of each query, without payloads.
    fn search(store: &MemoryStore, queries: &[&[f32]], k: usize) -> Vec<Vec<Neighbour>> {
        let options = SearchOptions {
            k,
            with_payload: false,
            exact: false,
        };
        store.search(queries, options).unwrap()
    }

    #[test]
    fn finds_the_top_k_a_brute_force_loop_finds() {
        let (ids, points) = random_points(500, 48, 1);
        let (_, queries) = random_points(150, 48, 2);
        let scan = scan_of(&ids, &points);
        let query_refs: Vec<&[f32]> = queries.iter().map(Vec::as_slice).collect();
        let found = search(&scan, &query_refs, 7);
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
        let together = search(&scan, &query_refs, 5);
        // The points in reverse order, each with its own id.
        let reversed = MemoryStore::new(32);
        add(
            &reversed,
            ids.iter()
                .map(String::as_str)
                .zip(points.iter().map(Vec::as_slice))
                .rev(),
        );
        for (i, query) in query_refs.iter().enumerate() {
            assert_eq!(
                search(&scan, &[query], 5)[0],
                together[i],
                "query {i} alone"
            );
            assert_eq!(
                search(&reversed, &[query], 5)[0],
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
        for (id, hits) in ids.iter().zip(search(&scan, &queries, 1)) {
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
    fn equal_cosines_rank_by_key_and_an_empty_store_finds_nothing() {
        let store = MemoryStore::new(2);
        add(
            &store,
            ["c", "a", "b"].into_iter().map(|id| (id, &[1.0, 0.0][..])),
        );
        let hits = search(&store, &[&[1.0, 0.0]], 2);
        let mut keys = [point_key("a"), point_key("b"), point_key("c")];
        keys.sort();
        assert_eq!(hits[0].iter().map(|h| h.key).collect::<Vec<_>>(), keys[..2]);
        assert!(search(&MemoryStore::new(2), &[&[1.0, 0.0]], 3)[0].is_empty());
        assert_eq!(store.vector_bytes(), 3 * 2 * 4);
        let ids: Vec<String> = store.into_points().into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, ["c", "a", "b"]);
    }

    /// A deletion moves the last point into the freed place; every other point keeps its
    /// vector and is found as before.
    #[test]
    fn a_deletion_keeps_every_other_point_whole() {
        let (ids, points) = random_points(50, 8, 9);
        let store = scan_of(&ids, &points);
        let gone: Vec<u64> = ids.iter().step_by(3).map(|id| point_key(id)).collect();
        store.delete(&gone).unwrap();
        store.delete(&gone).unwrap();
        assert_eq!(store.len().unwrap(), 50 - gone.len());
        let queries: Vec<&[f32]> = points.iter().map(Vec::as_slice).collect();
        for (i, (id, hits)) in ids.iter().zip(search(&store, &queries, 1)).enumerate() {
            match i % 3 {
                0 => assert_ne!(hits[0].key, point_key(id), "{id} was deleted"),
                _ => assert_eq!(hits[0].key, point_key(id), "{id} finds itself"),
            }
        }
        let mut left = store.into_points();
        left.sort_by(|a, b| a.0.cmp(&b.0));
        for (id, vector) in left {
            let at = ids.iter().position(|x| *x == id).unwrap();
            assert_eq!(vector, points[at], "{id} keeps its vector");
        }
    }
}
