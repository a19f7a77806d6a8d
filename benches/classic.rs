//! Benchmarks of the classic methods: `cargo bench --bench classic`.
//!
//! 1. SimHash at 135,000 generated documents (the seed notebook's corpus size, which took it
//!    5 h to hash and 1.5 h to search in Python): hashing rate and the exact block-table search,
//!    with a brute-force all-pairs search on a 20,000-document slice as the baseline ratio.
//! 2. The n-gram resemblance store: `add_doc` and `find_similar` per second, against a linear
//!    scan over the same stored n-gram sets as the baseline.
//!
//! `NEARDUP_BENCH_SIMHASH_DOCS` changes the SimHash corpus size.

use std::time::Instant;

use neardup::index::{ResemblanceSettings, ResemblanceStore};
use neardup::sketch::SimHashIndex;
use neardup::sketch::{SimHash, hamming};
use neardup::synth::Generator;
use neardup::text::Shingler;
use rayon::prelude::*;

fn main() {
    let docs: usize = std::env::var("NEARDUP_BENCH_SIMHASH_DOCS")
        .map(|v| v.parse().expect("a number"))
        .unwrap_or(135_000);
    simhash(docs);
    resemblance_store(20_000, 2_000);
}

fn texts(docs: usize, seed: u64) -> Vec<String> {
    let corpus = Generator::new(docs, seed);
    (0..corpus.len())
        .into_par_iter()
        .map(|i| {
            let d = corpus.doc(i);
            format!("{} {}", d.processed_title, d.processed_abstract)
        })
        .collect()
}

fn simhash(docs: usize) {
    let texts = texts(docs, 7);
    let shingler = Shingler::word_unigrams();
    let clock = Instant::now();
    let hashes: Vec<SimHash> = texts
        .par_iter()
        .map(|t| SimHash::of(&shingler.shingle_set(t)))
        .collect();
    let hashing = clock.elapsed().as_secs_f64();
    let fingerprints: Vec<u64> = hashes.iter().map(|h| h.fingerprint).collect();

    let clock = Instant::now();
    let index = SimHashIndex::new(fingerprints.clone(), vec![false; docs], 3);
    let pairs = index.pairs();
    let search = clock.elapsed().as_secs_f64();

    let slice = docs.min(20_000);
    let clock = Instant::now();
    let brute: usize = (0..slice)
        .into_par_iter()
        .map(|x| {
            (x + 1..slice)
                .filter(|&y| hamming(fingerprints[x], fingerprints[y]) <= 3)
                .count()
        })
        .sum();
    let brute_time = clock.elapsed().as_secs_f64();
    let clock = Instant::now();
    let sliced = SimHashIndex::new(fingerprints[..slice].to_vec(), vec![false; slice], 3).pairs();
    let block_time = clock.elapsed().as_secs_f64();
    assert_eq!(sliced.len(), brute, "the block search is exact");

    println!("SimHash, 64 bits, word 1-grams, Hamming distance <= 3, {docs} generated documents:");
    println!(
        "  hash (tokenise + fingerprint)  {hashing:>8.2} s  {:>10.0} docs/s",
        docs as f64 / hashing
    );
    println!(
        "  exact search, 4 block tables   {search:>8.2} s  {:>10} pairs",
        pairs.len()
    );
    println!(
        "  on {slice} documents: blocks {block_time:.3} s, brute force {brute_time:.3} s, ratio {:.0}x",
        brute_time / block_time
    );
    println!("  (the seed notebook: 5 h to hash and 1.5 h to search 135k pages in Python)");
}

fn resemblance_store(stored: usize, queries: usize) {
    let texts = texts(stored + queries, 8);
    let (kept, asked) = texts.split_at(stored);
    let mut store = ResemblanceStore::new(ResemblanceSettings::default()).expect("settings");
    let clock = Instant::now();
    for (i, t) in kept.iter().enumerate() {
        store.add_doc(&i.to_string(), t).expect("unique ids");
    }
    let adding = clock.elapsed().as_secs_f64();

    let clock = Instant::now();
    let mut found = 0;
    for t in asked {
        found += store.find_similar(t).len();
    }
    let finding = clock.elapsed().as_secs_f64();

    // Baseline: the same exact resemblance by scanning every stored n-gram set.
    let shingler = Shingler::new(neardup::text::ShingleKind::Words(5), Default::default());
    let sets: Vec<Vec<u64>> = kept.iter().map(|t| shingler.shingle_set(t)).collect();
    let clock = Instant::now();
    let mut scanned = 0;
    for t in asked {
        let q = shingler.shingle_set(t);
        scanned += sets
            .iter()
            .filter(|s| {
                let shared = s.iter().filter(|g| q.binary_search(g).is_ok()).count();
                let union = s.len() + q.len() - shared;
                union > 0 && shared as f64 / union as f64 > 0.2
            })
            .count();
    }
    let scanning = clock.elapsed().as_secs_f64();
    assert_eq!(found, scanned, "the store is exact");

    println!("\nResemblance store (word 5-grams, threshold 0.2), one thread:");
    println!(
        "  add_doc       {:>10.0} docs/s   ({stored} documents)",
        stored as f64 / adding
    );
    println!(
        "  find_similar  {:>10.0} queries/s ({queries} queries, {found} matches)",
        queries as f64 / finding
    );
    println!(
        "  linear scan   {:>10.0} queries/s (baseline), ratio {:.0}x",
        queries as f64 / scanning,
        scanning / finding
    );
}
