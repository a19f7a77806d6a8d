//! Vector index levers: `cargo bench --bench index`.
//!
//! The two-stage pipeline's first stage on generated documents (`neardup gen --seed 1`, count
//! from `NEARDUP_BENCH_DOCS`, default 100000): every document's static vector goes into a fresh
//! embedded Qdrant shard, the graph is built, and every query vector (each document's, and its
//! title's where it has an abstract) is searched for its top 21 (the pipeline's top-20 and the
//! document itself), as `dedup` does. Each row is one [`GraphSettings`]; the first is the
//! default, the baseline of the ratios. Build time covers upserting and building every
//! segment's graph.
//!
//! Candidate recall: on a fixed sample of 1,000 queries, the share of the exact top 21 (a full
//! scan) that the graph returned; a hit tied with the exact 21st counts.

use std::collections::HashSet;
use std::time::Instant;

use neardup::embed::{Embedder, StaticEmbedder, models};
use neardup::store::{EdgeStore, GraphSettings, OpenMode, SearchOptions, StoredPoint, VectorStore};
use neardup::synth::Generator;

/// Neighbours per query, as `dedup` asks for them (top-20 and the document itself).
const K: usize = 21;
/// Queries whose exact top-k is computed.
const SAMPLE: usize = 1000;
/// Points per upsert and queries per search call, as the pipeline sends them.
const BATCH: usize = 8192;

fn main() {
    let docs: usize = std::env::var("NEARDUP_BENCH_DOCS").map_or(100_000, |s| {
        s.parse().expect("NEARDUP_BENCH_DOCS: a number")
    });
    let embedder = StaticEmbedder::open(
        &models::ensure_static(&models::default_root()).expect("static model"),
    )
    .expect("static model");
    let generated = Generator::new(docs, 1);
    let (mut texts, mut titles) = (Vec::new(), Vec::new());
    for i in 0..generated.len() {
        let doc = generated.doc(i);
        if !doc.processed_abstract.is_empty() {
            titles.push(doc.processed_title.clone());
        }
        texts.push(format!(
            "{} {}",
            doc.processed_title, doc.processed_abstract
        ));
    }
    let embed = |texts: &[String]| -> Vec<Vec<f32>> {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        refs.chunks(BATCH)
            .flat_map(|batch| embedder.embed(batch).expect("embed"))
            .collect()
    };
    let points = embed(&texts);
    let queries: Vec<Vec<f32>> = points.iter().cloned().chain(embed(&titles)).collect();
    let sample: Vec<usize> = (0..SAMPLE).map(|i| i * queries.len() / SAMPLE).collect();
    println!(
        "{docs} generated documents, {} query vectors of {} dimensions, top {K}, recall on \
         {SAMPLE} sampled queries",
        queries.len(),
        embedder.dimensions()
    );

    // Measured and dropped: ef 64 lost recall (61% against 69%) and saved a tenth of the
    // search.
    let rows = [
        GraphSettings::default(),
        GraphSettings {
            ef: 512,
            ..GraphSettings::default()
        },
        GraphSettings {
            m: 32,
            ef_construct: 200,
            ..GraphSettings::default()
        },
        GraphSettings {
            int8_oversampling: Some(2.0),
            ..GraphSettings::default()
        },
        GraphSettings {
            ef: 512,
            int8_oversampling: Some(2.0),
            ..GraphSettings::default()
        },
        GraphSettings {
            segment_points: 25_000,
            ..GraphSettings::default()
        },
    ];
    println!(
        "{:<4} {:<6} {:>4} {:<6} {:>8} {:>8} {:>9} {:>8} {:>9} {:>8}",
        "m",
        "ef_con",
        "ef",
        "int8",
        "segment",
        "load s",
        "search s",
        "total s",
        "vs first",
        "recall"
    );
    let mut exact: Option<Vec<Vec<(u64, f32)>>> = None;
    let mut baseline = None;
    for settings in rows {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = EdgeStore::open_with(
            dir.path(),
            embedder.dimensions(),
            OpenMode::Create,
            settings,
        )
        .expect("edge store");
        let clock = Instant::now();
        for (start, batch) in (0..points.len()).step_by(BATCH).zip(points.chunks(BATCH)) {
            let keys: Vec<String> = (start..start + batch.len())
                .map(|d| d.to_string())
                .collect();
            let stored: Vec<StoredPoint<'_>> = batch
                .iter()
                .zip(&keys)
                .enumerate()
                .map(|(i, (vector, id))| StoredPoint {
                    key: (start + i) as u64,
                    id,
                    vector,
                    sketch: None,
                })
                .collect();
            store.upsert(&stored).expect("upsert");
        }
        store.build_index().expect("build");
        let build = clock.elapsed().as_secs_f64();

        let clock = Instant::now();
        let mut found = Vec::with_capacity(queries.len());
        for batch in queries.chunks(BATCH) {
            let refs: Vec<&[f32]> = batch.iter().map(Vec::as_slice).collect();
            found.extend(store.search(&refs, options(false)).expect("search"));
        }
        let search = clock.elapsed().as_secs_f64();

        let exact = exact.get_or_insert_with(|| {
            let refs: Vec<&[f32]> = sample.iter().map(|&q| queries[q].as_slice()).collect();
            let clock = Instant::now();
            let hits = store.search(&refs, options(true)).expect("exact search");
            println!(
                "exact top {K} by full scan: {:.1} s for {SAMPLE} queries ({:.0} s for all)",
                clock.elapsed().as_secs_f64(),
                clock.elapsed().as_secs_f64() * queries.len() as f64 / SAMPLE as f64
            );
            hits.into_iter()
                .map(|h| h.into_iter().map(|n| (n.key, n.cosine)).collect())
                .collect()
        });
        let recall = recall(exact, sample.iter().map(|&q| &found[q]));
        let total = build + search;
        let baseline = *baseline.get_or_insert(total);
        println!(
            "{:<4} {:<6} {:>4} {:<6} {:>8} {:>8.1} {:>9.1} {:>8.1} {:>8.2}x {:>7.2}%",
            settings.m,
            settings.ef_construct,
            settings.ef,
            settings
                .int8_oversampling
                .map_or("-".into(), |o| format!("x{o}")),
            settings.segment_points,
            build,
            search,
            total,
            baseline / total,
            100.0 * recall
        );
    }
}

fn options(exact: bool) -> SearchOptions {
    SearchOptions {
        k: K,
        with_payload: false,
        exact,
    }
}

/// The share of the exact neighbours found; a found neighbour as close as the exact k-th
/// counts, since which of several tied points a search keeps is arbitrary.
fn recall<'a>(
    exact: &[Vec<(u64, f32)>],
    found: impl Iterator<Item = &'a Vec<neardup::store::Neighbour>>,
) -> f64 {
    let (mut hit, mut total) = (0usize, 0usize);
    for (truth, found) in exact.iter().zip(found) {
        let keys: HashSet<u64> = truth.iter().map(|&(key, _)| key).collect();
        let last = truth
            .last()
            .map_or(f32::NEG_INFINITY, |&(_, cosine)| cosine);
        hit += found
            .iter()
            .filter(|n| keys.contains(&n.key) || n.cosine >= last - 1e-6)
            .count()
            .min(truth.len());
        total += truth.len();
    }
    hit as f64 / total.max(1) as f64
}
