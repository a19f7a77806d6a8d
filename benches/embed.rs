//! Static embedder benchmark: `cargo bench --bench embed`.
//!
//! Documents per second of the static embedder with its word cache against the same embedder
//! tokenizing every word (the baseline, measured in the same run), on the texts the two-stage
//! pipeline embeds: each document's processed title and abstract, and the title alone where
//! there is an abstract. Two corpora, since document length matters:
//! - generated documents (`neardup gen --seed 1`, ~250-word abstracts), count from
//!   `NEARDUP_BENCH_DOCS` (default 100000);
//! - bib-dedupe's 13,722 real records (`../shared/data`, mostly short titles), when present.
//!
//! The static model comes from the models folder (`neardup models fetch static`).

use std::path::Path;
use std::time::Instant;

use neardup::embed::{Embedder, StaticEmbedder, models};
use neardup::synth::Generator;

/// Texts per `embed` call, as the pipeline sends them.
const BATCH: usize = 8192;

fn main() {
    let docs: usize = std::env::var("NEARDUP_BENCH_DOCS").map_or(100_000, |s| {
        s.parse().expect("NEARDUP_BENCH_DOCS: a number")
    });
    let dir = models::ensure_static(&models::default_root()).expect("static model");
    println!(
        "static embedder {}, 2 passes each, best of the two:",
        dir.display()
    );
    println!(
        "{:<34} {:>9} {:>10} {:>13} {:>13} {:>7}",
        "corpus", "documents", "texts", "tokenizer d/s", "cached d/s", "ratio"
    );

    let generated = Generator::new(docs, 1);
    let pairs: Vec<(String, String)> = (0..generated.len())
        .map(|i| {
            let doc = generated.doc(i);
            (doc.processed_title, doc.processed_abstract)
        })
        .collect();
    compare(&dir, "generated (gen --seed 1)", &pairs);

    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/bibdedupe-core.jsonl");
    if let Ok(text) = std::fs::read_to_string(&shared) {
        let field = |record: &serde_json::Value, name: &str| {
            record[name].as_str().unwrap_or_default().to_owned()
        };
        let pairs: Vec<(String, String)> = text
            .lines()
            .map(|line| {
                let record: serde_json::Value = serde_json::from_str(line).expect("JSON line");
                (
                    field(&record, "processed_title"),
                    field(&record, "processed_abstract"),
                )
            })
            .collect();
        compare(&dir, "bib-dedupe (real, mostly titles)", &pairs);
    } else {
        println!("bib-dedupe: {} not found, skipped", shared.display());
    }
}

/// Embeds the pipeline's texts of `pairs` (title, abstract) with and without the word cache,
/// checks that the vectors agree, and prints one row.
fn compare(dir: &Path, label: &str, pairs: &[(String, String)]) {
    let mut texts: Vec<String> = pairs
        .iter()
        .map(|(title, body)| format!("{title} {body}").trim().to_owned())
        .collect();
    texts.extend(
        pairs
            .iter()
            .filter(|(_, body)| !body.is_empty())
            .map(|(title, _)| title.clone()),
    );
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let plain = StaticEmbedder::open(dir)
        .expect("static model")
        .without_word_cache();
    let cached = StaticEmbedder::open(dir).expect("static model");
    let (plain_seconds, plain_vectors) = best_of_two(&plain, &refs);
    let (cached_seconds, cached_vectors) = best_of_two(&cached, &refs);
    assert!(
        plain_vectors == cached_vectors,
        "the cache changed the vectors"
    );
    let rate = |seconds: f64| pairs.len() as f64 / seconds;
    println!(
        "{:<34} {:>9} {:>10} {:>13.0} {:>13.0} {:>6.1}x",
        label,
        pairs.len(),
        texts.len(),
        rate(plain_seconds),
        rate(cached_seconds),
        plain_seconds / cached_seconds
    );
}

/// The faster of two passes over `texts` in pipeline-sized batches, and the vectors.
fn best_of_two(embedder: &StaticEmbedder, texts: &[&str]) -> (f64, Vec<Vec<f32>>) {
    let mut best = f64::INFINITY;
    let mut vectors = Vec::new();
    for _ in 0..2 {
        let clock = Instant::now();
        vectors = texts
            .chunks(BATCH)
            .flat_map(|batch| embedder.embed(batch).expect("embed"))
            .collect();
        best = best.min(clock.elapsed().as_secs_f64());
    }
    (best, vectors)
}
