//! Throughput benchmark: `cargo bench --bench throughput`.
//!
//! Measures, on a generated CORE-layout corpus, in one run:
//! 1. signatures per second of neardup's `MinHasher` against the `datasketch-minhash-lsh` crate's
//!    `MinHash` on the same word sets (the baseline, reported as a ratio, since absolute times
//!    drift on shared machines);
//! 2. words per second of neardup's tokeniser on ASCII text against a `\w+` regex that
//!    lower-cases each match (the baseline), over the same texts;
//! 3. end-to-end documents per second of `dedup --method minhash` (read, tokenise, sign, band,
//!    confirm, group, write) at each corpus size.
//!
//! Sizes come from `NEARDUP_BENCH_DOCS` (comma-separated, default `10000,100000`).

use std::time::Instant;

use neardup::output::run::RunWriter;
use neardup::pipeline::{InputSpec, Method, OutputSpec, PipelineSpec, Ran, Run};
use neardup::settings::MethodName;
use neardup::sketch::MinHasher;
use neardup::synth::Generator;
use neardup::text::{Shingler, for_each_word, words};

fn main() {
    let sizes: Vec<usize> = std::env::var("NEARDUP_BENCH_DOCS")
        .unwrap_or_else(|_| "10000,100000".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .expect("NEARDUP_BENCH_DOCS: comma-separated numbers")
        })
        .collect();
    let dir = tempfile::tempdir().expect("temp dir");

    let corpus = Generator::new(5_000, 1);
    signature_rates(&corpus);
    word_rates(&corpus);

    println!(
        "\nend to end, dedup --method minhash (128 permutations, threshold 0.7, word 1-grams):"
    );
    println!(
        "{:>10} {:>10} {:>12} {:>9} {:>9} {:>9}",
        "documents", "seconds", "docs/s", "sketch s", "lsh s", "write s"
    );
    for &docs in &sizes {
        let path = dir.path().join(format!("gen-{docs}.jsonl"));
        Generator::new(docs, 1).write(&path).expect("write corpus");
        let out = dir.path().join(format!("out-{docs}"));
        let spec = PipelineSpec {
            input: InputSpec::new(vec![path]),
            method: Method::defaults(MethodName::Minhash),
            output: OutputSpec::new(out.clone()),
            eval: None,
        };
        let clock = Instant::now();
        let run = Run::new(spec, dir.path()).expect("run");
        let Ran::Whole(finished) = run.execute(RunWriter::lock(&out).unwrap()).expect("dedup")
        else {
            unreachable!("a run of no part runs whole")
        };
        let summary = finished.summary;
        let seconds = clock.elapsed().as_secs_f64();
        println!(
            "{:>10} {:>10.2} {:>12.0} {:>9.2} {:>9.2} {:>9.2}",
            docs,
            seconds,
            docs as f64 / seconds,
            summary.seconds.sketch,
            summary.seconds.candidates + summary.seconds.confirm + summary.seconds.group,
            summary.write_seconds
        );
    }
}

/// Each generated document's title and abstract, as a run reads them.
fn texts_of(corpus: &Generator) -> Vec<String> {
    (0..corpus.len())
        .map(|i| {
            let d = corpus.doc(i);
            format!("{} {}", d.processed_title, d.processed_abstract)
        })
        .collect()
}

/// Splits the same texts into lower-cased words with both tokenisers, single-threaded, a few
/// times over, and prints the rates.
fn word_rates(corpus: &Generator) {
    let texts = texts_of(corpus);
    let bytes: usize = texts.iter().map(String::len).sum();
    let rounds = 20;
    let (mut ours_words, mut baseline_words) = (0usize, 0usize);
    let clock = Instant::now();
    for _ in 0..rounds {
        for text in &texts {
            for_each_word(text, |w| ours_words += std::hint::black_box(w).len());
        }
    }
    let ours = clock.elapsed().as_secs_f64();
    let regex = regex::Regex::new(r"\w+").expect("valid regex");
    let clock = Instant::now();
    for _ in 0..rounds {
        for text in &texts {
            for word in regex.find_iter(text) {
                baseline_words += std::hint::black_box(word.as_str().to_lowercase()).len();
            }
        }
    }
    let baseline = clock.elapsed().as_secs_f64();
    assert_eq!(ours_words, baseline_words, "the two tokenisers disagree");
    let mb = (bytes * rounds) as f64 / 1e6;
    println!(
        "words, one thread, {} texts of {} bytes:",
        texts.len(),
        bytes / texts.len()
    );
    println!("  neardup for_each_word (ASCII) {:>9.0} MB/s", mb / ours);
    println!(
        "  regex \\w+, lower-cased       {:>9.0} MB/s  (baseline)",
        mb / baseline
    );
    println!("  ratio                        {:>10.1}x", baseline / ours);
}

/// Signs the same word sets with both implementations, single-threaded, and prints the rates.
fn signature_rates(corpus: &Generator) {
    let texts = texts_of(corpus);
    let shingler = Shingler::word_unigrams();
    let sets: Vec<Vec<u64>> = texts.iter().map(|t| shingler.shingle_set(t)).collect();
    let tokens: usize = sets.iter().map(Vec::len).sum();

    let hasher = MinHasher::new(128, 1);
    let mut out = vec![0u32; 128];
    let clock = Instant::now();
    let mut checksum = 0u64;
    for set in &sets {
        hasher.sign_into(set, &mut out);
        checksum = checksum.wrapping_add(u64::from(out[0]));
    }
    let ours = clock.elapsed().as_secs_f64();

    let word_sets: Vec<Vec<String>> = texts
        .iter()
        .map(|t| {
            let mut w = words(t);
            w.sort();
            w.dedup();
            w
        })
        .collect();
    let clock = Instant::now();
    for set in &word_sets {
        let mut m = <datasketch_minhash_lsh::MinHash>::new(128, Some(1));
        for w in set {
            m.update(w);
        }
        std::hint::black_box(&m);
    }
    let baseline = clock.elapsed().as_secs_f64();
    std::hint::black_box(checksum);

    let n = sets.len() as f64;
    println!(
        "signatures, 128 permutations, one thread, {} documents, {:.0} distinct words each:",
        sets.len(),
        tokens as f64 / n
    );
    println!(
        "  neardup MinHasher            {:>10.0} signatures/s  ({:.1} ns per word-permutation)",
        n / ours,
        ours * 1e9 / (tokens as f64 * 128.0)
    );
    println!(
        "  datasketch-minhash-lsh 0.0.1 {:>10.0} signatures/s  (baseline)",
        n / baseline
    );
    println!("  ratio                        {:>10.1}x", baseline / ours);
}
