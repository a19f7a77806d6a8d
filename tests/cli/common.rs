//! What every CLI test needs: the binary, the data, temporary runs.

pub use std::collections::BTreeSet;
pub use std::path::{Path, PathBuf};
pub use std::process::{Command, Output};

pub use rand::SeedableRng;
pub use rand::seq::SliceRandom;

#[path = "../support/server.rs"]
mod server;
pub use server::listening_url;
#[path = "../support/stores.rs"]
mod stores;
pub use stores::stores;

/// The real labelled data shared with the project (bib-dedupe, CORE layout).
pub fn shared_data() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/bibdedupe-core.jsonl");
    assert!(
        path.is_file(),
        "{} is missing: the tests need the shared data folder beside the checkout",
        path.display()
    );
    path
}

pub fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/bibdedupe-sample.jsonl")
}

pub fn neardup(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(args)
        .output()
        .expect("run neardup")
}

pub fn ok(args: &[&str]) -> Output {
    let out = neardup(args);
    assert!(
        out.status.success(),
        "neardup {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The JSON values of a run's standard output, one a line (`--json` output).
pub fn json_lines(out: &Output) -> Vec<serde_json::Value> {
    std::str::from_utf8(&out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn eval_json(truth: &Path, pred: &Path) -> serde_json::Value {
    let json = pred.join("eval.json");
    ok(&[
        "eval",
        "--truth",
        s(truth),
        "--pred",
        s(pred),
        "--json",
        s(&json),
    ]);
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

/// Runs `neardup ARGS` expecting bad input (exit code 2) and returns what it said.
pub fn rejected(args: &[&str]) -> String {
    let out = neardup(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    stderr
}

/// A GloVe-format file with a random 64-dimensional vector for every word of `corpus`, each
/// drawn from a generator seeded by the word: averaging them is a random projection of the
/// bag of words, so cosine follows word overlap. Enough to drive the two-stage pipeline end
/// to end without a downloaded model.
pub fn random_word_vectors(corpus: &Path, out: &Path) {
    word_vectors_around(corpus, out, 0.0);
}

/// As [`random_word_vectors`], with `offset` added to every component: every document vector
/// then leans the same way, as a real embedder's do.
pub fn word_vectors_around(corpus: &Path, out: &Path, offset: f32) {
    use rand::RngExt;
    let text = std::fs::read_to_string(corpus).unwrap();
    let mut words = BTreeSet::new();
    for line in text.lines() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        for field in ["processed_title", "processed_abstract"] {
            let value = record[field].as_str().unwrap_or_default().to_lowercase();
            words.extend(
                value
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .filter(|w| !w.is_empty())
                    .map(str::to_owned),
            );
        }
    }
    let mut file = String::new();
    for word in words {
        let mut rng =
            rand_chacha::ChaCha8Rng::seed_from_u64(xxhash_rust::xxh3::xxh3_64(word.as_bytes()));
        file.push_str(&word);
        for _ in 0..64 {
            file.push_str(&format!(" {:.4}", rng.random::<f32>() * 2.0 - 1.0 + offset));
        }
        file.push('\n');
    }
    std::fs::write(out, file).unwrap();
}

/// The first sample record's text as the pipeline joins it: processed title and abstract.
pub fn first_sample_text() -> String {
    let first = std::fs::read_to_string(sample()).unwrap();
    let record: serde_json::Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    format!(
        "{} {}",
        record["processed_title"].as_str().unwrap(),
        record["processed_abstract"].as_str().unwrap()
    )
}

/// Runs `neardup index` on the sample into `index` with the GloVe file `vectors`, plus
/// `extra` flags.
pub fn index_sample_with_glove(index: &Path, vectors: &Path, extra: &[&str]) {
    let data = sample();
    let mut args = vec![
        "index",
        s(&data),
        "--index",
        s(index),
        "--embedder",
        "glove",
        "--glove",
        s(vectors),
        "-q",
    ];
    args.extend(extra);
    ok(&args);
}

/// The arguments of `neardup dedup INPUTS --method minhash` over the columns `id` and `text`,
/// into `out`, then `extra` (`-q` among them to run quietly).
pub fn minhash_id_text<'a>(inputs: &[&'a Path], out: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["dedup"];
    args.extend(inputs.iter().map(|input| s(input)));
    args.extend([
        "--method",
        "minhash",
        "--id-field",
        "id",
        "--text-field",
        "text",
    ]);
    args.extend(["--out", s(out)]);
    args.extend(extra);
    args
}

/// Runs `neardup dedup INPUT --method minhash` (plus `extra`) quietly into a new temporary
/// folder, which it returns.
pub fn dedup_minhash(input: &Path, extra: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "dedup",
        s(input),
        "--method",
        "minhash",
        "--out",
        s(dir.path()),
        "-q",
    ];
    ok(&[&args[..], extra].concat());
    dir
}
