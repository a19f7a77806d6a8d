//! `neardup eval --report` and `neardup sweep`.

use crate::common::*;

/// Runs `neardup sweep` on the run in `run` over `[from, to, step]`; returns what it printed
/// and the points of its JSON.
fn sweep(
    truth: &Path,
    run: &Path,
    [from, to, step]: [&str; 3],
) -> (String, Vec<serde_json::Value>) {
    let json = run.join("sweep.json");
    let out = ok(&[
        "sweep",
        "--truth",
        s(truth),
        "--pred",
        s(run),
        "--from",
        from,
        "--to",
        to,
        "--step",
        step,
        "--json",
        s(&json),
    ]);
    let sweep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let points = sweep["points"].as_array().unwrap().clone();
    (String::from_utf8_lossy(&out.stdout).into_owned(), points)
}

/// Runs `neardup eval --report` on the run in `run` and returns the page.
fn report(truth: &Path, run: &Path) -> String {
    let page = run.join("report.html");
    ok(&[
        "eval",
        "--truth",
        s(truth),
        "--pred",
        s(run),
        "--report",
        s(&page),
    ]);
    std::fs::read_to_string(&page).unwrap()
}

#[test]
fn report_is_one_self_contained_page_with_tables_plots_and_errors() {
    let data = sample();
    let dir = dedup_minhash(&data, &[]);
    let html = report(&data, dir.path());
    for needle in [
        "<h2>Scores</h2>",
        "Per <code>cat</code>",
        "Per number of labelled duplicates",
        "Similarity of confirmed pairs",
        "against the threshold",
        "run threshold 0.80",
        "False pairs",
        "Missed pairs",
        "<svg",
        "<ins>",
    ] {
        assert!(html.contains(needle), "the report lacks {needle:?}");
    }
    assert_eq!(
        html.matches("<svg").count(),
        2,
        "a histogram and one curve per score"
    );
    // Self-contained: nothing is fetched (SVG namespaces are names, not fetches).
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http") && !html.contains("<script")
    );
}

#[test]
fn sweep_rescores_stored_pairs_and_names_the_best_threshold() {
    let data = sample();
    // The plain rule: its verdict is the stored score against the threshold, so a sweep can
    // replay it (the evidence rule also weighs titles and numbers, which no sweep replays).
    let flags = ["--confirm", "estimate", "--threshold", "0.7"];
    let dir = dedup_minhash(&data, &flags);
    assert!(dir.path().join("candidates.parquet").is_file());
    let (text, points) = sweep(&data, dir.path(), ["0.5", "1.0", "0.1"]);
    // The candidates as JSON lines sweep the same.
    let lines = dedup_minhash(&data, &[&flags[..], &["--candidates", "jsonl"]].concat());
    assert!(!lines.path().join("candidates.parquet").exists());
    assert_eq!(sweep(&data, lines.path(), ["0.5", "1.0", "0.1"]).1, points);
    assert!(
        text.contains("best jaccard_estimate threshold by macro-F1"),
        "{text}"
    );
    assert_eq!(points.len(), 6);
    // At the run's own threshold the sweep agrees with eval.
    let at_run = points
        .iter()
        .find(|p| (p["threshold"].as_f64().unwrap() - 0.7).abs() < 1e-9)
        .unwrap();
    let metrics = eval_json(&data, dir.path());
    assert!(
        (at_run["macro_f1"].as_f64().unwrap() - metrics["macro_f1"].as_f64().unwrap()).abs()
            < 1e-12
    );
    // Fewer pairs as the threshold rises.
    let counts: Vec<u64> = points
        .iter()
        .map(|p| p["pairs"].as_u64().unwrap())
        .collect();
    assert!(counts.windows(2).all(|w| w[0] >= w[1]), "{counts:?}");
}

#[test]
fn a_run_without_its_candidates_writes_the_rest_the_same_and_its_sweep_says_so() {
    let data = sample();
    let flags = ["--confirm", "estimate", "--threshold", "0.7"];
    let whole = dedup_minhash(&data, &flags);
    let without = dedup_minhash(&data, &[&flags[..], &["--candidates", "none"]].concat());
    for file in ["candidates.jsonl", "candidates.parquet"] {
        assert!(!without.path().join(file).exists(), "{file}");
    }
    for file in [
        "pairs.jsonl",
        "groups.jsonl",
        "unique.jsonl",
        "annotated.jsonl",
    ] {
        assert_eq!(
            std::fs::read(whole.path().join(file)).unwrap(),
            std::fs::read(without.path().join(file)).unwrap(),
            "{file}"
        );
    }
    // Below the run's threshold the sweep sees fewer pairs, and says why.
    let (text, points) = sweep(&data, without.path(), ["0.5", "1.0", "0.1"]);
    assert!(text.contains("--candidates none"), "{text}");
    let (_, whole_points) = sweep(&data, whole.path(), ["0.5", "1.0", "0.1"]);
    let pairs = |points: &[serde_json::Value]| points[0]["pairs"].as_u64().unwrap();
    assert!(pairs(&points) < pairs(&whole_points), "{points:?}");
}

#[test]
fn a_report_whose_low_thresholds_chain_the_whole_corpus_still_scores_every_threshold() {
    // 32 bands of 4 rows keep about 190,000 scored candidates of bib-dedupe; swept down to 0
    // they chain most of the corpus into one group, the run whose report once grew past 11 GB.
    // (A two-stage run has the same shape but takes minutes in a debug build.)
    let data = shared_data();
    let flags = ["--bands", "32", "--rows", "4", "--candidates", "jsonl"];
    let dir = dedup_minhash(&data, &flags);
    let candidates = std::fs::read_to_string(dir.path().join("candidates.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert!(candidates > 100_000, "{candidates}");
    assert!(report(&data, dir.path()).contains("against the threshold"));
    let (_, points) = sweep(&data, dir.path(), ["0", "1", "0.25"]);
    assert_eq!(points[0]["pairs"].as_u64(), Some(candidates as u64));
    // One giant group: nearly every document is wrong at 0, and far fewer near the run's own.
    let accuracy = |i: usize| points[i]["accuracy"].as_f64().unwrap();
    assert!(accuracy(0) < 0.3 && accuracy(3) > 0.9, "{points:?}");
}

#[test]
fn another_tools_groups_score_like_a_run_with_the_same_groups() {
    let data = sample();
    let dir = dedup_minhash(&data, &[]);
    let groups = dir.path().join("groups.jsonl");
    let json = dir.path().join("foreign.json");
    ok(&[
        "eval",
        "--truth",
        s(&data),
        "--pred-groups",
        s(&groups),
        "--json",
        s(&json),
    ]);
    let foreign: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(foreign, eval_json(&data, dir.path()));

    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"members\": [\"a\", \"b\"]}\n{\"members\": [\"a\"]}\n",
    )
    .unwrap();
    let message = rejected(&["eval", "--truth", s(&data), "--pred-groups", s(&bad)]);
    assert!(message.contains("bad.jsonl:2"), "{message}");
    assert!(message.contains("two members"), "{message}");
}

#[test]
fn a_run_of_other_documents_is_refused_not_scored() {
    let data = sample();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, lines: &[&str]| {
        let path = dir.path().join(name);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    };
    let text = std::fs::read_to_string(&data).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // A run over part of the labelled file: the rest would be scored as predicted unique.
    let part = write("part.jsonl", &lines[..1000]);
    let run = dedup_minhash(&part, &[]);
    let message = rejected(&["eval", "--truth", s(&data), "--pred", s(run.path())]);
    assert!(message.contains("read 1000"), "{message}");
    assert!(message.contains("1304 labelled"), "{message}");
    let message = rejected(&["sweep", "--truth", s(&data), "--pred", s(run.path())]);
    assert!(message.contains("read other documents"), "{message}");
    // A run of another corpus with as many documents as the labels.
    let other = dir.path().join("other.jsonl");
    ok(&["gen", "--docs", "1304", "--out", s(&other)]);
    let run = dedup_minhash(&other, &[]);
    let message = rejected(&["eval", "--truth", s(&data), "--pred", s(run.path())]);
    assert!(message.contains("not labelled here"), "{message}");
    // Another tool's groups naming ids the labels do not have.
    let groups = write("groups.jsonl", &[r#"{"members": ["nobody", "no one"]}"#]);
    let message = rejected(&["eval", "--truth", s(&data), "--pred-groups", s(&groups)]);
    assert!(message.contains("2 predicted ids"), "{message}");
    // A label that names no record of the file.
    let truth = write(
        "truth.jsonl",
        &[
            r#"{"core_id": "a", "labelled_duplicates": ["b"]}"#,
            r#"{"core_id": "b", "labelled_duplicates": ["a", "c"]}"#,
        ],
    );
    let message = rejected(&["eval", "--truth", s(&truth), "--pred-groups", s(&groups)]);
    assert!(message.contains("truth.jsonl:2"), "{message}");
    assert!(message.contains("\"c\" is not the id"), "{message}");
}
