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
/// The most scores (a block's, `64 x n`) a thread keeps for its next block: 4 MB.
const KEPT_SCORES: usize = 1 << 20;

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
                .map(|s| (s.signature.to_vec(), s.shingles, s.facts.to_facts()));
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
pub fn scan<K: Key>(
    vectors: &[f32],
    keys: &[K],
    width: usize,
    queries: &[&[f32]],
    k: usize,
) -> Vec<Vec<(f32, K)>> {
    best_by_blocks(
        keys,
        queries,
        k,
        |_| f32::NEG_INFINITY,
        |block, scores| {
            SCAN_ROWS.with_borrow_mut(|rows| {
                // A short block is padded to a whole one: gemm takes another path for fewer rows,
                // which rounds differently, and a query's cosines must not depend on how many
                // queries came with it. The rows past the block's keep what an earlier block left
                // there: each row's cosines are its own, and theirs are not read.
                rows.resize(QUERY_BLOCK * width, 0.0);
                for (query, row) in block.iter().zip(rows.chunks_exact_mut(width)) {
                    row.copy_from_slice(query);
                }
                crate::matrix::dot_products(scores, rows, vectors, width);
            })
        },
    )
}

/// Each of `queries`' `k` best of the points `keys` that score at least its `floor`, as
/// `(score, key)`, best first; of equal scores the lower key first. A floor is what a query
/// has already found elsewhere (its `k`th best so far): a point below it would be dropped when
/// the two are merged. The queries are scored a block of up to [`QUERY_BLOCK`] at a time, on
/// every core, by `score(block, scores)`: a row of `keys.len()` scores a query, in `scores`,
/// which holds rows for a whole block.
pub fn best_by_blocks<Q: Sync, K: Key>(
    keys: &[K],
    queries: &[Q],
    k: usize,
    floor: impl Fn(usize) -> f32 + Sync,
    score: impl Fn(&[Q], &mut [f32]) + Sync,
) -> Vec<Vec<(f32, K)>> {
    if keys.is_empty() || k == 0 {
        return vec![Vec::new(); queries.len()];
    }
    let n = keys.len();
    queries
        .par_chunks(QUERY_BLOCK)
        .enumerate()
        .flat_map_iter(|(at, block)| {
            SCAN_SCORES.with_borrow_mut(|scores| {
                scores.resize(QUERY_BLOCK * n, 0.0);
                score(block, scores);
                let found: Vec<_> = (scores.chunks_exact(n))
                    .take(block.len())
                    .enumerate()
                    .map(|(i, row)| best(row, keys, k, floor(at * QUERY_BLOCK + i)))
                    .collect();
                // The scores of a scan over many points are not held by the thread after it.
                if scores.len() > KEPT_SCORES {
                    *scores = Vec::new();
                }
                found
            })
        })
        .collect()
}

thread_local! {
    /// A thread's query rows and scores in [`scan`] and [`best_by_blocks`], kept from one
    /// block to the next: a cell searched with a few queries costs its product, not fresh
    /// pages for a whole block's.
    static SCAN_ROWS: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
    static SCAN_SCORES: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The `k` best points of one query's `scores` that reach `floor`, best first.
fn best<K: Key>(scores: &[f32], keys: &[K], k: usize, floor: f32) -> Vec<(f32, K)> {
    let k = k.min(keys.len());
    if k == 0 {
        return Vec::new();
    }
    // Points gather in a buffer of twice `k`; when it is full its best `k` stay, and the
    // `k`th's score becomes the floor a later point must reach, so that most points are turned
    // away by one comparison instead of each being ranked among the best held. Each is held
    // as one number that sorts in their rank order.
    let mut held: Vec<K::Ranked> = Vec::with_capacity(2 * k);
    let mut floor = floor;
    for (&score, &key) in scores.iter().zip(keys) {
        if score < floor {
            continue;
        }
        if held.len() == 2 * k {
            keep_best(&mut held, k);
            floor = K::unrank(held[k - 1]).0;
            if score < floor {
                continue;
            }
        }
        held.push(K::rank(score, key));
    }
    keep_best(&mut held, k);
    held.sort_unstable();
    held.into_iter()
        .map(|ranked| {
            let (score, key) = K::unrank(ranked);
            (unit_cosine(score), key)
        })
        .collect()
}

/// Keeps the best `k` of `held` (the `k`th best last, the rest in no order).
fn keep_best<R: Ord>(held: &mut Vec<R>, k: usize) {
    if held.len() > k {
        held.select_nth_unstable(k - 1);
        held.truncate(k);
    }
}

/// A point's key, as [`best`] holds it: beside its score, in one number that sorts in the
/// points' rank order ([`ranked`]), lower for a better rank.
pub trait Key: Copy + Send + Sync {
    /// The score and key as one number.
    type Ranked: Ord + Copy;
    fn rank(score: f32, key: Self) -> Self::Ranked;
    fn unrank(ranked: Self::Ranked) -> (f32, Self);
}

/// A store's point keys.
impl Key for u64 {
    type Ranked = u128;
    fn rank(score: f32, key: u64) -> u128 {
        (u128::from(descending(score)) << 64) | u128::from(key)
    }
    fn unrank(ranked: u128) -> (f32, u64) {
        (score_of((ranked >> 64) as u32), ranked as u64)
    }
}

/// Document numbers: ranked in half the width, which selects faster.
impl Key for u32 {
    type Ranked = u64;
    fn rank(score: f32, key: u32) -> u64 {
        (u64::from(descending(score)) << 32) | u64::from(key)
    }
    fn unrank(ranked: u64) -> (f32, u32) {
        (score_of((ranked >> 32) as u32), ranked as u32)
    }
}

/// The score's place in `f32::total_cmp`'s order, turned around: lower for a higher score.
fn descending(score: f32) -> u32 {
    let bits = score.to_bits();
    let ascending = if bits >> 31 == 1 {
        !bits
    } else {
        bits | 1 << 31
    };
    !ascending
}

/// The score whose [`descending`] place is `place`.
fn score_of(place: u32) -> f32 {
    let ascending = !place;
    let bits = if ascending >> 31 == 1 {
        ascending & !(1 << 31)
    } else {
        !ascending
    };
    f32::from_bits(bits)
}

/// The order of ranked points: a higher score first, of equal ones the lower key.
pub fn ranked<K: Ord>(a: &(f32, K), b: &(f32, K)) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

/// Places `candidate` (a score and a key) among the ranked `held`, best first (a higher score,
/// or the same and a lower key), dropping the last; one that ranks below them all is left out.
/// Places not yet filled hold a score of minus infinity.
pub fn place<K: Ord + Copy>(held: &mut [(f32, K)], candidate: (f32, K)) {
    let before = |a: &(f32, K), b: &(f32, K)| ranked(a, b).is_lt();
    // Most candidates lose to the last held at once, by a plain comparison of scores.
    match held.last() {
        Some(last) if candidate.0 < last.0 => return,
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

    /// The best `k` by a full sort, best first: what [`best`] and [`place`] must keep.
    fn sorted_best(scores: &[f32], keys: &[u64], k: usize) -> Vec<(f32, u64)> {
        let mut all: Vec<(f32, u64)> = scores.iter().copied().zip(keys.iter().copied()).collect();
        all.sort_by(ranked);
        all.truncate(k);
        all
    }

    /// Many tied scores (few distinct values, -0.0 beside 0.0), keys in no order: the best
    /// kept by the buffer (for both kinds of key, and under a floor: those that reach it) and by
    /// placing one at a time are those of a full sort, in its order.
    #[test]
    fn the_best_kept_are_those_of_a_full_sort_ties_ranked_by_key() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for round in 0..400 {
            let n = rng.random_range(1..300usize);
            let k = rng.random_range(1..40usize);
            let levels = [0.0f32, -0.0, 0.25, 0.5, -0.5, 1.0];
            let scores: Vec<f32> = (0..n)
                .map(|_| match round % 2 {
                    0 => levels[rng.random_range(0..levels.len())],
                    _ => rng.random::<f32>() - 0.5,
                })
                .collect();
            let mut keys: Vec<u64> = (0..n as u64).map(|key| key * 7919 % 1_000_003).collect();
            keys.reverse();
            let expected = sorted_best(&scores, &keys, k);
            let bits = |v: &[(f32, u64)]| {
                v.iter()
                    .map(|&(s, key)| (s.to_bits(), key))
                    .collect::<Vec<_>>()
            };
            let cosines: Vec<(f32, u64)> = (expected.iter())
                .map(|&(score, key)| (unit_cosine(score), key))
                .collect();
            assert_eq!(
                bits(&best(&scores, &keys, k, f32::NEG_INFINITY)),
                bits(&cosines),
                "round {round}: {n} scores, k {k}"
            );
            // Document numbers, ranked in half the width, keep the same.
            let numbers: Vec<u32> = keys.iter().map(|&key| key as u32).collect();
            let widened: Vec<(f32, u64)> = (best(&scores, &numbers, k, f32::NEG_INFINITY))
                .into_iter()
                .map(|(score, key)| (score, u64::from(key)))
                .collect();
            assert_eq!(bits(&widened), bits(&cosines), "round {round}: as u32");
            // Under a floor (one of the best's scores): those of the best that reach it.
            let floor = expected[(round / 2) % expected.len()].0;
            let reaching: Vec<(f32, u64)> = (expected.iter())
                .filter(|&&(score, _)| score >= floor)
                .map(|&(score, key)| (unit_cosine(score), key))
                .collect();
            let found = best(&scores, &keys, k, floor);
            assert_eq!(
                bits(&found),
                bits(&reaching),
                "round {round}: floor {floor}"
            );
            let mut placed = vec![(f32::NEG_INFINITY, u64::MAX); k.min(n)];
            for (&score, &key) in scores.iter().zip(&keys) {
                place(&mut placed, (score, key));
            }
            assert_eq!(bits(&placed), bits(&expected), "round {round}: placed");
        }
        // Asked for none, or over no points, it keeps none.
        let none = f32::NEG_INFINITY;
        assert!(best(&[0.5, 0.25], &[1u64, 2], 0, none).is_empty());
        assert!(best::<u32>(&[], &[], 3, none).is_empty());
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
