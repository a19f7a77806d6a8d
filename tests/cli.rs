//! End-to-end tests of the `neardup` binary on real and generated files.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rand::SeedableRng;
use rand::seq::SliceRandom;

/// The real labelled data shared with the project (bib-dedupe, CORE layout).
fn shared_data() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/bibdedupe-core.jsonl");
    assert!(
        path.is_file(),
        "{} is missing: the tests need the shared data folder beside the checkout",
        path.display()
    );
    path
}

fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/bibdedupe-sample.jsonl")
}

fn neardup(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(args)
        .output()
        .expect("run neardup")
}

fn ok(args: &[&str]) -> Output {
    let out = neardup(args);
    assert!(
        out.status.success(),
        "neardup {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn eval_json(truth: &Path, pred: &Path) -> serde_json::Value {
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

#[test]
fn minhash_on_real_data_matches_the_reference_measured_outside() {
    let dir = tempfile::tempdir().unwrap();
    let data = shared_data();
    ok(&[
        "dedup",
        s(&data),
        "--method",
        "minhash",
        "--out",
        s(dir.path()),
        "--quiet",
    ]);
    let metrics = eval_json(&data, dir.path());
    let accuracy = metrics["accuracy"].as_f64().unwrap();
    let macro_f1 = metrics["macro_f1"].as_f64().unwrap();
    // Reference: datasketch-style MinHash LSH, word 1-grams, 128 permutations, threshold 0.7.
    assert!((accuracy - 0.92).abs() <= 0.01, "accuracy {accuracy}");
    assert!((macro_f1 - 0.91).abs() <= 0.01, "macro-F1 {macro_f1}");
    for key in ["dup", "non_dup"] {
        for field in ["precision", "recall", "f1", "tp", "fp", "tn", "fn"] {
            assert!(metrics[key][field].is_number(), "{key}.{field}");
        }
    }
    assert!(metrics["by_cat"]["near_dup"]["accuracy"].is_number());
    assert!(metrics["by_num_duplicates"]["1"]["correct"].is_number());
    assert!(metrics["mean_precision"].is_number() && metrics["mean_recall"].is_number());
}

#[test]
fn shuffled_input_gives_identical_groups_and_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let data = shared_data();
    let text = std::fs::read_to_string(&data).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(11));
    let shuffled = dir.path().join("shuffled.jsonl");
    std::fs::write(&shuffled, lines.join("\n") + "\n").unwrap();

    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    ok(&[
        "dedup",
        "--method",
        "minhash",
        s(&data),
        "--out",
        s(&a),
        "-q",
    ]);
    ok(&[
        "dedup",
        "--method",
        "minhash",
        s(&shuffled),
        "--out",
        s(&b),
        "-q",
    ]);
    for file in ["groups.jsonl", "pairs.jsonl"] {
        let x = std::fs::read(a.join(file)).unwrap();
        let y = std::fs::read(b.join(file)).unwrap();
        assert!(!x.is_empty());
        assert!(x == y, "{file} differs between input orders");
    }
    let unique = |d: &Path| -> BTreeSet<String> {
        std::fs::read_to_string(d.join("unique.jsonl"))
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(unique(&a), unique(&b));
}

#[test]
fn unique_records_are_copied_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    ok(&[
        "dedup",
        "--method",
        "minhash",
        s(&sample()),
        "--out",
        s(dir.path()),
        "-q",
    ]);
    let input: BTreeSet<String> = std::fs::read_to_string(sample())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let unique = std::fs::read_to_string(dir.path().join("unique.jsonl")).unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap())
            .unwrap();
    let n = |k: &str| summary[k].as_u64().unwrap() as usize;
    assert_eq!(
        unique.lines().count(),
        n("documents") - n("documents_in_groups") + n("groups")
    );
    for line in unique.lines() {
        assert!(input.contains(line), "not an input line: {line}");
    }
    // Every group's representative is kept, its other members are not.
    let groups = std::fs::read_to_string(dir.path().join("groups.jsonl")).unwrap();
    let kept: BTreeSet<String> = unique
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["core_id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    for g in groups.lines() {
        let g: serde_json::Value = serde_json::from_str(g).unwrap();
        let rep = g["representative"].as_str().unwrap();
        for m in g["members"].as_array().unwrap() {
            assert_eq!(kept.contains(m.as_str().unwrap()), m == rep);
        }
    }
}

#[test]
fn a_broken_line_stops_the_run_and_skip_invalid_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(sample()).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[4] = r#"{"core_id": "stroke/broken", "processed_title": "#.into();
    let broken = dir.path().join("broken.jsonl");
    std::fs::write(&broken, lines.join("\n")).unwrap();

    let out_dir = dir.path().join("out");
    let out = neardup(&[
        "dedup",
        "--method",
        "minhash",
        s(&broken),
        "--out",
        s(&out_dir),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("broken.jsonl:5:"), "{stderr}");
    assert!(stderr.contains("--skip-invalid"), "{stderr}");
    assert!(
        !out_dir.join("groups.jsonl").exists(),
        "no output after a failed run"
    );

    let out = ok(&[
        "dedup",
        "--method",
        "minhash",
        s(&broken),
        "--out",
        s(&out_dir),
        "--skip-invalid",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("skipped 1 invalid record"), "{stderr}");
    assert!(stderr.contains("broken.jsonl:5:"), "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["skipped"], 1);
    assert_eq!(
        summary["documents"].as_u64().unwrap() as usize,
        lines.len() - 1
    );
}

/// Runs `neardup ARGS` expecting bad input (exit code 2) and returns what it said.
fn rejected(args: &[&str]) -> String {
    let out = neardup(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    stderr
}

#[test]
fn wrong_types_duplicate_ids_and_bad_settings_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.jsonl");
    let out_dir = dir.path().join("out");
    let dedup = [
        "dedup",
        "--method",
        "minhash",
        s(&path),
        "--out",
        s(&out_dir),
    ];
    let first = "{\"core_id\":\"1\",\"processed_title\":\"a\",\"processed_abstract\":\"\"}";

    std::fs::write(&path, format!("{first}\n{{\"core_id\":\"2\",\"processed_title\":[\"b\"],\"processed_abstract\":\"\"}}\n")).unwrap();
    let stderr = rejected(&dedup);
    assert!(
        stderr.contains("in.jsonl:2: field `processed_title`: expected a string, found an array"),
        "{stderr}"
    );

    std::fs::write(
        &path,
        format!(
            "{first}\n{{\"core_id\":\"1\",\"processed_title\":\"b\",\"processed_abstract\":\"\"}}\n"
        ),
    )
    .unwrap();
    let stderr = rejected(&dedup);
    assert!(
        stderr.contains("in.jsonl:2: field `core_id`: duplicate id \"1\", first seen at"),
        "{stderr}"
    );
    assert!(stderr.contains("in.jsonl:1"), "{stderr}");

    let stderr = rejected(&[&dedup[..], &["--threshold", "1.5"]].concat());
    assert!(
        stderr.contains("--threshold must lie in (0, 1], not 1.5"),
        "{stderr}"
    );
    assert!(
        rejected(&[
            "dedup",
            "--method",
            "minhash",
            "no/such/file.jsonl",
            "--out",
            s(&out_dir)
        ])
        .contains("no/such/file.jsonl")
    );
}

#[test]
fn empty_texts_match_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.jsonl");
    std::fs::write(
        &path,
        "{\"core_id\":\"1\",\"processed_title\":\"\",\"processed_abstract\":\"\"}\n\
         {\"core_id\":\"2\",\"processed_title\":\"\",\"processed_abstract\":null}\n\
         {\"core_id\":\"3\",\"processed_title\":\"same words here\",\"processed_abstract\":\"\"}\n\
         {\"core_id\":\"4\",\"processed_title\":\"Same words, here!\",\"processed_abstract\":\"\"}\n",
    )
    .unwrap();
    for (method, score) in [
        ("minhash", "jaccard_estimate"),
        ("jaccard", "jaccard"),
        ("resemblance", "resemblance"),
        ("simhash", "simhash_similarity"),
    ] {
        let out = dir.path().join(method);
        ok(&[
            "dedup",
            s(&path),
            "--method",
            method,
            "--out",
            s(&out),
            "-q",
        ]);
        let pairs = std::fs::read_to_string(out.join("pairs.jsonl")).unwrap();
        assert_eq!(
            pairs,
            format!("{{\"id_a\":\"3\",\"id_b\":\"4\",\"{score}\":1.0}}\n"),
            "{method}"
        );
    }
}

#[test]
fn csv_and_text_folder_inputs_deduplicate() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("docs.csv");
    std::fs::write(
        &csv,
        "id,title,body\n\
         a,Zażółć gęślą jaźń,\"Ćma, łoś i żółw idą razem przez las\"\n\
         b,ZAŻÓŁĆ GĘŚLĄ JAŹŃ,ćma łoś i żółw idą razem przez las\n\
         c,Something else,entirely different words in this one\n",
    )
    .unwrap();
    let out = dir.path().join("csv-out");
    ok(&[
        "dedup",
        "--method",
        "minhash",
        s(&csv),
        "--id-field",
        "id",
        "--text-field",
        "title",
        "--text-field",
        "body",
        "--out",
        s(&out),
        "-q",
    ]);
    let groups = std::fs::read_to_string(out.join("groups.jsonl")).unwrap();
    assert_eq!(groups.lines().count(), 1);
    assert!(groups.contains("\"members\":[\"a\",\"b\"]"), "{groups}");
    let unique = std::fs::read_to_string(out.join("unique.jsonl")).unwrap();
    assert_eq!(unique.lines().count(), 2);
    assert!(unique.contains("\"id\":\"c\""), "{unique}");

    let folder = dir.path().join("texts");
    std::fs::create_dir_all(folder.join("2024")).unwrap();
    std::fs::write(
        folder.join("one.txt"),
        "The referendum result was announced on Friday morning in London.",
    )
    .unwrap();
    std::fs::write(
        folder.join("2024/copy.txt"),
        "the referendum result was announced on friday morning in london",
    )
    .unwrap();
    std::fs::write(
        folder.join("other.txt"),
        "Football results from the weekend league matches.",
    )
    .unwrap();
    let out = dir.path().join("folder-out");
    ok(&[
        "dedup",
        "--method",
        "minhash",
        s(&folder),
        "--out",
        s(&out),
        "-q",
    ]);
    let groups = std::fs::read_to_string(out.join("groups.jsonl")).unwrap();
    assert!(
        groups.contains("\"members\":[\"2024/copy.txt\",\"one.txt\"]"),
        "{groups}"
    );
}

#[test]
fn generated_corpus_runs_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("gen.jsonl");
    ok(&["gen", "--docs", "5000", "--seed", "3", "--out", s(&corpus)]);
    let again = dir.path().join("gen2.jsonl");
    ok(&["gen", "--docs", "5000", "--seed", "3", "--out", s(&again)]);
    assert!(
        std::fs::read(&corpus).unwrap() == std::fs::read(&again).unwrap(),
        "gen is deterministic"
    );
    let out = dir.path().join("out");
    ok(&[
        "dedup",
        "--method",
        "minhash",
        s(&corpus),
        "--out",
        s(&out),
        "-q",
    ]);
    let metrics = eval_json(&corpus, &out);
    let accuracy = metrics["accuracy"].as_f64().unwrap();
    assert!(accuracy > 0.9, "accuracy {accuracy} on generated data");
    assert_eq!(metrics["documents"], 5000);
}

#[test]
fn classic_methods_score_on_real_data() {
    let dir = tempfile::tempdir().unwrap();
    let data = sample();
    for (method, extra, min_accuracy) in [
        ("jaccard", vec!["--threshold", "0.7"], 0.9),
        (
            "jaccard",
            vec!["--threshold", "0.7", "--linkage", "complete"],
            0.9,
        ),
        ("resemblance", vec![], 0.85),
        ("simhash", vec![], 0.85),
        ("simhash", vec!["--probes", "200"], 0.85),
    ] {
        let out = dir.path().join(format!("{method}-{}", extra.len()));
        let mut args = vec![
            "dedup",
            s(&data),
            "--method",
            method,
            "--out",
            s(&out),
            "-q",
        ];
        args.extend(extra.iter());
        ok(&args);
        let metrics = eval_json(&data, &out);
        let accuracy = metrics["accuracy"].as_f64().unwrap();
        assert!(
            accuracy >= min_accuracy,
            "{method} {extra:?}: accuracy {accuracy}"
        );
    }
}

#[test]
fn settings_of_another_method_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = rejected(&[
        "dedup",
        s(&sample()),
        "--method",
        "jaccard",
        "--num-perm",
        "64",
        "--out",
        s(dir.path()),
    ]);
    assert!(
        stderr.contains("--num-perm: does not apply to method jaccard"),
        "{stderr}"
    );
}

#[test]
fn jaccard_command_reproduces_the_seed() {
    let out = ok(&[
        "jaccard",
        "--text",
        "To jest pierwsze zdanie.",
        "To nie jest pierwsze zdanie, tylko drugie.",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "0.5714285714285714"
    );
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.txt");
    std::fs::write(&a, "bar bar").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(["jaccard", "-", s(&a)])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(b"Bar")?;
            child.wait_with_output()
        })
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1");
}

#[test]
fn diff_overlap_and_groups_show_what_people_read() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(
        docs.join("a.txt"),
        "Referendum w sprawie Brexitu odbędzie się w czwartek",
    )
    .unwrap();
    std::fs::write(
        docs.join("b.txt"),
        "Referendum w sprawie Brexitu odbędzie się w piątek",
    )
    .unwrap();
    std::fs::write(docs.join("c.txt"), "Zażółć gęślą jaźń").unwrap();

    let out = ok(&[
        "diff",
        s(&docs.join("a.txt")),
        s(&docs.join("b.txt")),
        "--color",
        "never",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[-czwartek-]{+piątek+}"), "{text}");
    assert!(text.contains("0.875"), "7 of 8 words shared: {text}");
    let out = ok(&[
        "diff",
        s(&docs.join("a.txt")),
        s(&docs.join("b.txt")),
        "--color",
        "always",
    ]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("\u{1b}["));

    let out = ok(&[
        "overlap",
        s(&docs.join("a.txt")),
        s(&docs.join("b.txt")),
        s(&docs.join("c.txt")),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    // a and b share 6 of their 7 distinct words, c nothing: a (first of the tie) represents.
    assert!(text.contains("a.txt (mean overlap 0.429)"), "{text}");

    // Longer articles, one word apart (Jaccard 0.9), so that MinHash's LSH banding (tuned to
    // 0.7, steep around 0.8-0.9) reliably proposes the pair.
    let news = dir.path().join("news");
    std::fs::create_dir(&news).unwrap();
    let article = "Premier zapowiedział że referendum w sprawie Brexitu odbędzie się w czwartek \
                   a wyniki zostaną ogłoszone w piątek rano przez komisję wyborczą w Londynie";
    std::fs::write(news.join("a.txt"), article).unwrap();
    std::fs::write(
        news.join("b.txt"),
        article.replace("Londynie", "Westminsterze"),
    )
    .unwrap();
    std::fs::write(news.join("c.txt"), "Zażółć gęślą jaźń").unwrap();
    for similarity in ["cosine", "jaccard", "minhash"] {
        let out = ok(&[
            "groups",
            s(&news),
            "--similarity",
            similarity,
            "--threshold",
            "0.7",
            "--matrix",
            "--json",
        ]);
        let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 1, "{similarity}");
        assert_eq!(
            lines[0]["members"],
            serde_json::json!(["a.txt", "b.txt"]),
            "{similarity}"
        );
        assert_eq!(lines[0]["matrix"][0][0], 1.0);
    }
}

#[test]
fn stream_keeps_first_copies_and_remembers_across_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("unique.jsonl");
    let store = dir.path().join("store");
    let dropped = dir.path().join("dropped.jsonl");
    let run = ok(&[
        "stream",
        s(&sample()),
        "--out",
        s(&out),
        "--store",
        s(&store),
        "--dropped",
        s(&dropped),
    ]);
    let summary = String::from_utf8_lossy(&run.stdout);
    let kept = std::fs::read_to_string(&out).unwrap().lines().count();
    let gone = std::fs::read_to_string(&dropped).unwrap().lines().count();
    assert_eq!(kept + gone, 1304, "{summary}");
    assert!(gone > 200 && kept > 800, "{summary}");
    // The same documents again: all resemble what the store kept.
    let again = dir.path().join("again.jsonl");
    ok(&[
        "stream",
        s(&sample()),
        "--out",
        s(&again),
        "--store",
        s(&store),
    ]);
    assert_eq!(std::fs::read_to_string(&again).unwrap(), "");
    // Other settings than the store's are refused.
    let out = neardup(&[
        "stream",
        s(&sample()),
        "--out",
        s(&again),
        "--store",
        s(&store),
        "--ngram",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn report_is_one_self_contained_page_with_tables_plots_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let data = sample();
    ok(&[
        "dedup",
        "--method",
        "minhash",
        s(&data),
        "--out",
        s(dir.path()),
        "-q",
    ]);
    let report = dir.path().join("report.html");
    ok(&[
        "eval",
        "--truth",
        s(&data),
        "--pred",
        s(dir.path()),
        "--report",
        s(&report),
    ]);
    let html = std::fs::read_to_string(&report).unwrap();
    for needle in [
        "<h2>Scores</h2>",
        "Per <code>cat</code>",
        "Per number of labelled duplicates",
        "Similarity of confirmed pairs",
        "against the threshold",
        "run threshold 0.70",
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
    let dir = tempfile::tempdir().unwrap();
    let data = sample();
    ok(&[
        "dedup",
        "--method",
        "minhash",
        s(&data),
        "--out",
        s(dir.path()),
        "-q",
    ]);
    assert!(dir.path().join("candidates.jsonl").is_file());
    let json = dir.path().join("sweep.json");
    let out = ok(&[
        "sweep",
        "--truth",
        s(&data),
        "--pred",
        s(dir.path()),
        "--from",
        "0.5",
        "--to",
        "1.0",
        "--step",
        "0.1",
        "--json",
        s(&json),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("best jaccard_estimate threshold by macro-F1"),
        "{text}"
    );
    let sweep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let points = sweep["points"].as_array().unwrap();
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
fn every_command_has_help_with_an_example_and_completions_exist() {
    for command in [
        "dedup",
        "eval",
        "run",
        "gen",
        "stream",
        "groups",
        "jaccard",
        "diff",
        "overlap",
        "sweep",
        "completions",
        "index",
        "query",
        "models",
        "serve",
    ] {
        let out = ok(&[command, "--help"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Example"),
            "`neardup {command} --help` has no example"
        );
    }
    let out = ok(&["--help"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Exit codes: 0 success, 1 failure"));
    for shell in ["bash", "zsh", "fish"] {
        let out = ok(&["completions", shell]);
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(
            script.contains("dedup") && script.contains("threshold"),
            "{shell}"
        );
    }
    let out = neardup(&["dedup"]);
    assert_eq!(out.status.code(), Some(2), "bad usage exits 2");
}

#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_the_run_quietly() {
    use std::io::Read;
    // Far more output than a pipe buffers, so the writes after the hang-up fail.
    let data = shared_data();
    let mut child = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(["groups", s(&data), "--similarity", "jaccard", "--matrix"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read one byte, then hang up, as `| head -c 1` does.
    let mut stdout = child.stdout.take().unwrap();
    let mut byte = [0u8; 1];
    stdout.read_exact(&mut byte).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A GloVe-format file with a random 64-dimensional vector for every word of `corpus`, each
/// drawn from a generator seeded by the word: averaging them is a random projection of the
/// bag of words, so cosine follows word overlap. Enough to drive the two-stage pipeline end
/// to end without a downloaded model.
fn random_word_vectors(corpus: &Path, out: &Path) {
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
            file.push_str(&format!(" {:.4}", rng.random::<f32>() * 2.0 - 1.0));
        }
        file.push('\n');
    }
    std::fs::write(out, file).unwrap();
}

#[test]
fn two_stage_finds_what_minhash_finds_on_the_sample() {
    let dir = tempfile::tempdir().unwrap();
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&sample(), &vectors);
    let minhash = dir.path().join("minhash");
    ok(&[
        "dedup",
        s(&sample()),
        "--method",
        "minhash",
        "--out",
        s(&minhash),
        "-q",
    ]);
    let two_stage = dir.path().join("two-stage");
    ok(&[
        "dedup",
        s(&sample()),
        "--embedder",
        "glove",
        "--glove",
        s(&vectors),
        "--top-k",
        "10",
        "--out",
        s(&two_stage),
        "-q",
    ]);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(two_stage.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(
        summary["settings"]["method"]["name"], "two-stage",
        "{summary}"
    );
    for stage in ["embed", "upsert", "search"] {
        assert!(
            summary["seconds"][stage].as_f64().is_some(),
            "{stage}: {summary}"
        );
    }
    // The vector index proposes the pairs the LSH bands would and more (no banding loss), so
    // recall holds; on this sample the extra pairs above 0.7 are mostly unlabelled, which costs
    // about 0.012 in accuracy (on the full bib-dedupe file two-stage comes out ahead).
    let a = eval_json(&sample(), &minhash);
    let b = eval_json(&sample(), &two_stage);
    let recall = |m: &serde_json::Value| m["dup"]["recall"].as_f64().unwrap();
    let accuracy = |m: &serde_json::Value| m["accuracy"].as_f64().unwrap();
    assert!(
        recall(&b) >= recall(&a) - 0.005,
        "recall {} vs minhash {}",
        recall(&b),
        recall(&a)
    );
    assert!(
        accuracy(&b) >= accuracy(&a) - 0.02,
        "accuracy {} vs minhash {}",
        accuracy(&b),
        accuracy(&a)
    );
}

#[test]
fn an_index_answers_queries_by_id_and_text_from_a_new_process() {
    let dir = tempfile::tempdir().unwrap();
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&sample(), &vectors);
    let index = dir.path().join("idx");
    let data = sample();
    let glove = ["--embedder", "glove", "--glove", s(&vectors)];
    let mut args = vec!["index", s(&data), "--index", s(&index), "-q"];
    args.extend(glove);
    ok(&args);

    // special_cases/id_0000001 and _0000002 are the same paper with a different title colon.
    let out = ok(&[
        "query",
        "--index",
        s(&index),
        "--id",
        "special_cases/id_0000001",
        "--json",
    ]);
    let matches: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        matches
            .iter()
            .any(|m| m["id"] == "special_cases/id_0000002" && m["duplicate"] == true),
        "{matches:?}"
    );
    assert!(
        matches
            .iter()
            .all(|m| m["id"] != "special_cases/id_0000001"),
        "not itself"
    );

    let record: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(sample())
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let text = format!(
        "{} {}",
        record["processed_title"].as_str().unwrap(),
        record["processed_abstract"].as_str().unwrap()
    );
    let out = ok(&["query", "--index", s(&index), "--text", &text, "--json"]);
    let found: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Its duplicate _0000002 ties with it at cosine 1, so either may come first.
    let own = found
        .iter()
        .take(2)
        .find(|m| m["id"] == "special_cases/id_0000001")
        .unwrap_or_else(|| panic!("{found:?}"));
    assert!(own["cosine"].as_f64().unwrap() > 0.999 && own["jaccard_estimate"] == 1.0);

    let stderr = rejected(&["query", "--index", s(&index), "--id", "no-such-id"]);
    assert!(stderr.contains("no document \"no-such-id\""), "{stderr}");
    let mut again = vec!["index", s(&data), "--index", s(&index)];
    again.extend(glove);
    assert!(rejected(&again).contains("already holds a neardup index"));
    let stderr = rejected(&["query", "--index", s(dir.path()), "--id", "x"]);
    assert!(stderr.contains("not a neardup index"), "{stderr}");
}

#[test]
fn a_models_folder_from_the_environment_does_not_bother_other_methods() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args([
            "dedup",
            s(&sample()),
            "--method",
            "minhash",
            "--out",
            s(dir.path()),
            "-q",
        ])
        .env("NEARDUP_MODELS", dir.path().join("models"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = rejected(&[
        "dedup",
        s(&sample()),
        "--method",
        "minhash",
        "--top-k",
        "5",
        "--out",
        s(dir.path()),
    ]);
    assert!(
        stderr.contains("--top-k: does not apply to method minhash"),
        "{stderr}"
    );
}
