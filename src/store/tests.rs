//! One suite for every engine: the in-memory store always, the embedded engine with the `edge`
//! feature, a Qdrant server when `QDRANT_URL` is set (and the `qdrant` feature is built). Each
//! `check_*` is the suite's part for any engine; a new engine's tests, in its own file, call
//! them on it.

use super::payload::*;
use super::*;
use crate::confirm::{Facts, SketchRef};

/// Graph search for `k` neighbours, with or without payload.
fn nearest(k: usize, with_payload: bool) -> SearchOptions {
    SearchOptions {
        k,
        with_payload,
        exact: false,
    }
}

fn unit(v: &[f32]) -> Vec<f32> {
    let mut v = v.to_vec();
    crate::embed::normalize(&mut v);
    v
}

/// Exercises `store`, which must be empty and hold 4-dimensional vectors.
pub(super) fn check_engine(store: &dyn VectorStore) {
    let vectors = [
        unit(&[1.0, 0.0, 0.0, 0.0]),
        unit(&[0.9, 0.1, 0.0, 0.0]),
        unit(&[0.0, 1.0, 0.0, 0.0]),
        unit(&[0.0, 0.0, 1.0, 1.0]),
    ];
    let ids = ["a", "b", "c", "d"];
    let signatures: Vec<Vec<u32>> = (0..4).map(|i| vec![i, i + 1, 7]).collect();
    let facts: Vec<Facts> = ["a title of four", "another title", "c", "d"]
        .iter()
        .map(|title| Facts::of(Some(title), "body 2"))
        .collect();
    let points: Vec<StoredPoint<'_>> = (0..4)
        .map(|i| {
            let sketch = SketchRef {
                signature: &signatures[i],
                shingles: 3,
                facts: facts[i].as_ref(),
            };
            // "c" keeps its title's vector.
            let title = (i == 2).then_some(&vectors[0][..]);
            StoredPoint::new(ids[i], &vectors[i], Some(sketch)).with_title(title)
        })
        .collect();
    store.upsert(&points).unwrap();
    assert_eq!(store.len().unwrap(), 4);

    let hits = store
        .search(&[&vectors[0], &vectors[3]], nearest(2, true))
        .unwrap();
    let top: Vec<&str> = hits[0]
        .iter()
        .map(|h| h.payload.as_ref().unwrap().id.as_str())
        .collect();
    assert_eq!(top, ["a", "b"]);
    assert!((hits[0][0].cosine - 1.0).abs() < 1e-5);
    assert!((hits[0][1].cosine - crate::embed::cosine(&vectors[0], &vectors[1])).abs() < 1e-5);
    assert_eq!(hits[1][0].key, point_key("d"));
    assert_eq!(
        hits[1][0].payload.as_ref().unwrap().signature,
        signatures[3]
    );

    let fetched = store.fetch(&[point_key("c"), point_key("nope")]).unwrap();
    let c = fetched[0].as_ref().unwrap();
    assert_eq!(
        (c.payload.id.as_str(), &c.payload.signature),
        ("c", &signatures[2])
    );
    assert_eq!(c.payload.facts, facts[2], "the facts come back as stored");
    assert_eq!(
        c.payload.title.as_deref(),
        Some(&vectors[0][..]),
        "the title's vector comes back bit for bit"
    );
    let (page, _) = store.scroll(None, 10).unwrap();
    for (_, point) in page {
        let titled = point.payload.id == "c";
        assert_eq!(
            point.payload.title.is_some(),
            titled,
            "{}",
            point.payload.id
        );
    }
    assert!(crate::embed::cosine(&c.vector, &vectors[2]) > 0.99999);
    assert!(fetched[1].is_none());

    store.delete(&[point_key("a")]).unwrap();
    assert_eq!(store.len().unwrap(), 3);
    let hits = store.search(&[&vectors[0]], nearest(1, false)).unwrap();
    assert_eq!(hits[0][0].key, point_key("b"));
    assert!(hits[0][0].payload.is_none());
    store.flush().unwrap();
}

#[test]
fn memory_store_searches_fetches_and_deletes() {
    check_engine(&MemoryStore::new(4));
    let store = MemoryStore::new(16);
    check_search_of_many_points(&store);
    assert!(!store.build_index().unwrap(), "it builds no graph");
    let Err(err) = store.upsert(&[StoredPoint::new("wide", &[1.0; 17], None)]) else {
        panic!("a vector of another size must be refused")
    };
    assert!(err.to_string().contains("17 dimensions"), "{err}");
}

#[cfg(feature = "edge")]
#[test]
fn edge_store_searches_fetches_deletes_and_persists() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = EdgeStore::open(dir.path(), 4, OpenMode::Create).unwrap();
        check_engine(&store);
    }
    let reopened = EdgeStore::open(dir.path(), 4, OpenMode::Create).unwrap();
    assert_eq!(
        reopened.len().unwrap(),
        3,
        "what was flushed survives a reopen"
    );
    let q = unit(&[0.0, 1.0, 0.0, 0.0]);
    assert_eq!(
        reopened.search(&[&q], nearest(1, false)).unwrap()[0][0].key,
        point_key("c")
    );
    let Err(err) = EdgeStore::open(dir.path(), 4, OpenMode::Create) else {
        panic!("a store open elsewhere must be refused")
    };
    assert!(err.to_string().contains("in use"), "{err}");
    drop(reopened);
    let Err(err) = EdgeStore::open(dir.path(), 8, OpenMode::Create) else {
        panic!("a store of another size must be refused")
    };
    assert!(err.to_string().contains("4 dimensions"), "{err}");
    let Err(err) = EdgeStore::open(&dir.path().join("gone"), 4, OpenMode::Existing) else {
        panic!("a store that must exist is not made anew")
    };
    assert!(
        err.to_string().contains("is damaged") && err.to_string().contains("missing"),
        "{err}"
    );
}

/// `count` ids (`doc0`, `doc1`, ...) and random unit vectors of `dimensions`, from `seed`.
pub(crate) fn random_points(
    count: usize,
    dimensions: usize,
    seed: u64,
) -> (Vec<String>, Vec<Vec<f32>>) {
    use rand::{RngExt, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let vectors = (0..count)
        .map(|_| {
            let raw: Vec<f32> = (0..dimensions).map(|_| rng.random::<f32>() - 0.5).collect();
            unit(&raw)
        })
        .collect();
    ((0..count).map(|i| format!("doc{i}")).collect(), vectors)
}

/// Loads 3,000 random 16-dimensional points into `store` (empty, 16 dimensions) and checks
/// that search finds each point itself before and after [`VectorStore::build_index`] (a graph,
/// where the engine builds one).
pub(super) fn check_search_of_many_points(store: &dyn VectorStore) {
    let (ids, vectors) = random_points(3000, 16, 3);
    let signature = [0u32; 2];
    let facts = Facts::default();
    let points: Vec<StoredPoint<'_>> = ids
        .iter()
        .zip(&vectors)
        .map(|(id, v)| {
            let sketch = SketchRef {
                signature: &signature,
                shingles: 2,
                facts: facts.as_ref(),
            };
            StoredPoint::new(id, v, Some(sketch))
        })
        .collect();
    store.upsert(&points).unwrap();
    let queries: Vec<&[f32]> = vectors.iter().take(50).map(Vec::as_slice).collect();
    let before = store.search(&queries, nearest(1, false)).unwrap();
    store.build_index().unwrap();
    let after = store.search(&queries, nearest(1, false)).unwrap();
    let exact = SearchOptions {
        exact: true,
        ..nearest(10, false)
    };
    let scanned = store.search(&queries, exact).unwrap();
    for (i, ((b, a), e)) in before.iter().zip(&after).zip(&scanned).enumerate() {
        assert_eq!(b[0].key, point_key(&ids[i]), "a vector is its own nearest");
        assert_eq!(a[0].key, b[0].key);
        assert_eq!(e[0].key, b[0].key);
        // The true top 10, best first: each the next nearest by cosine.
        let cosines: Vec<f32> = e.iter().map(|h| h.cosine).collect();
        assert_eq!(cosines.len(), 10);
        assert!(cosines.windows(2).all(|w| w[0] >= w[1]), "{cosines:?}");
        let mut truth: Vec<f32> = vectors
            .iter()
            .map(|v| crate::embed::cosine(v, queries[i]))
            .collect();
        truth.sort_by(|x, y| y.total_cmp(x));
        for (got, want) in cosines.iter().zip(&truth) {
            assert!(
                (got - want).abs() < 1e-4,
                "{cosines:?} against {:?}",
                &truth[..10]
            );
        }
    }
    check_scroll(store, &ids, &vectors);
}

/// Scrolling `store` (which holds just the points `ids` with `vectors`) in pages gives back
/// every point once, by key, as stored.
pub(super) fn check_scroll(store: &dyn VectorStore, ids: &[String], vectors: &[Vec<f32>]) {
    let mut seen = Vec::new();
    let mut from = None;
    loop {
        let (page, next) = store.scroll(from, 701).unwrap();
        assert!(page.len() <= 701);
        seen.extend(page);
        match next {
            Some(key) => from = Some(key),
            None => break,
        }
    }
    let keys: Vec<u64> = seen.iter().map(|(key, _)| *key).collect();
    let mut expected: Vec<u64> = ids.iter().map(|id| point_key(id)).collect();
    expected.sort_unstable();
    assert_eq!(keys, expected, "every point once, by key");
    let at: std::collections::HashMap<u64, usize> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (point_key(id), i))
        .collect();
    for (key, point) in &seen {
        let i = at[key];
        assert_eq!(point.payload.id, ids[i]);
        assert!(crate::embed::cosine(&point.vector, &vectors[i]) > 0.99999);
    }
}

#[cfg(feature = "edge")]
#[test]
fn edge_search_after_building_the_graph_finds_the_same_nearest() {
    let dir = tempfile::tempdir().unwrap();
    check_search_of_many_points(&EdgeStore::open(dir.path(), 16, OpenMode::Create).unwrap());
}

/// Graph settings on `scheme` with rescoring, for 2,000 points of 64 dimensions: a graph is
/// built at any size.
fn compressed(scheme: Quantization, inline_vectors: bool) -> GraphSettings {
    GraphSettings {
        quantization: Some(Quantized {
            scheme,
            oversampling: 4.0,
        }),
        inline_vectors,
        // Small enough that these 500 KB of vectors get a graph.
        full_scan_kb: 1,
        ..GraphSettings::default()
    }
}

/// Loads 2,000 random 64-dimensional points into `store` (empty, built on compressed vectors),
/// builds its graph and checks the answers come with the full vectors' cosines: the best
/// `oversampling * k` found on compressed vectors are rescored, so each point finds itself
/// and every hit's cosine is its true one.
pub(super) fn check_rescored_graph(store: &dyn VectorStore, what: &str) {
    let (ids, vectors) = random_points(2000, 64, 5);
    let vector_of: std::collections::HashMap<u64, &Vec<f32>> =
        ids.iter().map(|id| point_key(id)).zip(&vectors).collect();
    let points: Vec<StoredPoint<'_>> = ids
        .iter()
        .zip(&vectors)
        .map(|(id, vector)| StoredPoint::new(id, vector, None))
        .collect();
    store.upsert(&points).unwrap();
    assert!(store.build_index().unwrap(), "{what}: a graph is built");
    let queries: Vec<&[f32]> = vectors.iter().take(50).map(Vec::as_slice).collect();
    for (i, hits) in store
        .search(&queries, nearest(5, false))
        .unwrap()
        .iter()
        .enumerate()
    {
        assert_eq!(hits.len(), 5, "{what}");
        assert_eq!(
            hits[0].key,
            point_key(&ids[i]),
            "{what}: a point finds itself"
        );
        for hit in hits {
            let truth = crate::embed::cosine(vector_of[&hit.key], queries[i]);
            assert!(
                (hit.cosine - truth).abs() < 1e-4,
                "{what}: cosine {} where the vectors give {truth}",
                hit.cosine
            );
        }
    }
}

#[cfg(feature = "edge")]
#[test]
fn edge_graph_on_compressed_vectors_rescores_with_the_full_vectors() {
    let settings = Quantization::ALL
        .iter()
        .map(|&scheme| (scheme, false))
        .chain([(Quantization::Int8, true)]);
    for (scheme, inline_vectors) in settings {
        let dir = tempfile::tempdir().unwrap();
        let graph = compressed(scheme, inline_vectors);
        let store = EdgeStore::open_with(dir.path(), 64, OpenMode::Create, graph).unwrap();
        check_rescored_graph(&store, &format!("{scheme} inline {inline_vectors}"));
    }
}

#[cfg(feature = "qdrant")]
#[test]
#[ignore = "needs a Qdrant server: QDRANT_URL=$(bash eval/qdrant/run.sh single), as .ci/run does"]
fn server_store_passes_the_same_suite() {
    let url = std::env::var("QDRANT_URL")
        .expect("QDRANT_URL names the server to test against (e.g. http://localhost:6334)");
    let options = ServerOptions {
        url,
        collection: format!("neardup-test-{}", std::process::id()),
        shards: 1,
        replicas: 1,
    };
    let store = ServerStore::open(&options, 4, OpenMode::Create).unwrap();
    check_engine(&store);
    let Err(err) = ServerStore::open(&options, 4, OpenMode::Create) else {
        panic!("a new index must not mix with the points of another")
    };
    assert!(err.to_string().contains("already holds 3 points"), "{err}");
    let reopened = ServerStore::open(&options, 4, OpenMode::Existing).unwrap();
    assert_eq!(reopened.len().unwrap(), 3);
    store.drop_collection().unwrap();
    let Err(err) = ServerStore::open(&options, 4, OpenMode::Existing) else {
        panic!("an index whose collection is gone must be refused")
    };
    assert!(err.to_string().contains("has no collection"), "{err}");

    let graph = ServerOptions {
        collection: format!("{}-graph", options.collection),
        ..options
    };
    let store = ServerStore::open(&graph, 16, OpenMode::Create).unwrap();
    check_search_of_many_points(&store);
    store.drop_collection().unwrap();

    let int8 = ServerOptions {
        collection: format!("{}-int8", graph.collection),
        ..graph
    };
    let settings = compressed(Quantization::Int8, false);
    let store = ServerStore::open_with(&int8, 64, OpenMode::Create, settings).unwrap();
    check_rescored_graph(&store, "server int8");
    store.drop_collection().unwrap();
}

#[test]
fn signatures_are_stored_as_base64_and_format_4_lists_still_read() {
    let signature = [0, 1, 7, u32::MAX, 0x0102_0304];
    let stored = encode_signature(&signature);
    assert_eq!(
        stored, "AAAAAAEAAAAHAAAA/////wQDAgE=",
        "little-endian words, base64"
    );
    let value = serde_json::Value::from(stored);
    assert_eq!(decode_signature(&value).unwrap(), signature);
    let list = serde_json::json!([0, 1, 7, u32::MAX, 0x0102_0304]);
    assert_eq!(decode_signature(&list).unwrap(), signature);

    // A payload as format 4 wrote it reads as the same document.
    let map = serde_json::json!({
        "id": "a", "signature": list, "shingles": 5, "facts": Facts::default(),
    });
    let payload = parse_payload(map.as_object().unwrap()).unwrap();
    assert_eq!(
        (payload.id.as_str(), payload.signature.as_slice()),
        ("a", &signature[..])
    );

    for bad in [
        serde_json::json!("AAAAAAE="), // 5 bytes: not whole words
        serde_json::json!("not base64!"),
        serde_json::json!([1, -2]),
        serde_json::json!([1u64 << 32]),
        serde_json::json!(7),
    ] {
        assert_eq!(decode_signature(&bad), None, "{bad}");
    }
    let map = serde_json::json!({"id": "a", "signature": "AAAAAAE=", "shingles": 5, "facts": Facts::default(),
    });
    let error = parse_payload(map.as_object().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("point \"a\": `signature` is neither base64"),
        "{error}"
    );
    let map = serde_json::json!({"id": "a", "signature": list, "shingles": 5,
        "facts": Facts::default(), "title_vector": "AAAAAAE="});
    let error = parse_payload(map.as_object().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("point \"a\": `title_vector` is not base64 of 32-bit floats"),
        "{error}"
    );
}

#[test]
fn a_store_for_one_run_is_a_collection_of_its_own() {
    let spec = StoreSpec {
        collection: "neardup".into(),
        ..StoreSpec::default()
    };
    let (first, second) = (spec.for_one_run(), spec.for_one_run());
    assert!(
        first.collection.starts_with("neardup-run-"),
        "{}",
        first.collection
    );
    assert_ne!(first.collection, spec.collection);
    assert_ne!(first.collection, second.collection, "two runs at once");
    let long = StoreSpec {
        collection: "c".repeat(255),
        ..spec
    };
    assert!(long.for_one_run().validate().is_ok());
}
