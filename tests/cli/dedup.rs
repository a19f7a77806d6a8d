//! `neardup dedup` and `neardup run`: inputs, methods, settings, outputs.

use crate::common::*;

#[test]
fn minhash_on_real_data_matches_the_reference_measured_outside() {
    let data = shared_data();
    // The design card's rule, as the reference was measured.
    let dir = dedup_minhash(&data, &["--confirm", "estimate", "--threshold", "0.7"]);
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
fn the_evidence_rule_beats_the_plain_jaccard_rule_on_real_data() {
    let data = shared_data();
    let plain = eval_json(
        &data,
        dedup_minhash(&data, &["--confirm", "estimate", "--threshold", "0.7"]).path(),
    );
    let evidence = eval_json(&data, dedup_minhash(&data, &[]).path());
    for key in ["accuracy", "macro_f1"] {
        let (before, after) = (
            plain[key].as_f64().unwrap(),
            evidence[key].as_f64().unwrap(),
        );
        assert!(after > before + 0.015, "{key}: {before} -> {after}");
    }
    assert!(
        evidence["dup"]["precision"].as_f64().unwrap()
            > plain["dup"]["precision"].as_f64().unwrap()
    );
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
    let dir = dedup_minhash(&sample(), &[]);
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
        stderr.contains("--threshold: must lie in (0, 1], not 1.5"),
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
fn an_output_path_that_is_a_file_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("taken");
    std::fs::write(&file, "not a folder").unwrap();
    let stderr = rejected(&[
        "dedup",
        s(&sample()),
        "--method",
        "minhash",
        "--out",
        s(&file),
    ]);
    assert!(stderr.contains("is a file, not a folder"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a folder");
}

#[test]
fn empty_texts_match_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.jsonl");
    std::fs::write(
        &path,
        "{\"core_id\":\"1\",\"processed_title\":\"\",\"processed_abstract\":\"\"}\n\
         {\"core_id\":\"2\",\"processed_title\":\"\",\"processed_abstract\":null}\n\
         {\"core_id\":\"3\",\"processed_title\":\"the same words here\",\"processed_abstract\":\"\"}\n\
         {\"core_id\":\"4\",\"processed_title\":\"The same words, here!\",\"processed_abstract\":\"\"}\n",
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
    // MinHash over the CSV's title and body, with `extra` flags.
    let csv_args = |extra: &[&str], out: &std::path::Path| -> Vec<String> {
        let fixed = ["dedup", "--method", "minhash", s(&csv), "--id-field", "id"];
        let fields = [
            "--text-field",
            "title",
            "--text-field",
            "body",
            "-q",
            "--out",
            s(out),
        ];
        fixed
            .iter()
            .chain(&fields)
            .chain(extra)
            .map(|a| a.to_string())
            .collect()
    };
    fn strs(args: &[String]) -> Vec<&str> {
        args.iter().map(String::as_str).collect()
    }
    let out = dir.path().join("csv-out");
    ok(&strs(&csv_args(&[], &out)));
    let groups = std::fs::read_to_string(out.join("groups.jsonl")).unwrap();
    assert_eq!(groups.lines().count(), 1);
    assert!(groups.contains("\"members\":[\"a\",\"b\"]"), "{groups}");
    // The records go back out as CSV, rows as read, and the annotated copy joins back by id.
    let input = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = input.lines().collect();
    let unique = std::fs::read_to_string(out.join("unique.csv")).unwrap();
    assert_eq!(
        unique.lines().collect::<Vec<_>>(),
        [rows[0], rows[1], rows[3]]
    );
    let annotated = std::fs::read_to_string(out.join("annotated.csv")).unwrap();
    assert_eq!(
        annotated.lines().collect::<Vec<_>>(),
        [
            format!(
                "{},neardup_group,neardup_keep,neardup_duplicate_of",
                rows[0]
            ),
            format!("{},0,true,", rows[1]),
            format!("{},0,false,a", rows[2]),
            format!("{},,true,", rows[3]),
        ]
    );
    assert!(!out.join("unique.jsonl").exists());

    // Another keep policy keeps another member, and says so in groups.jsonl and the summary.
    let kept_b = dir.path().join("csv-keep");
    let args = csv_args(
        &["--keep", "field:id:max", "--out-format", "jsonl"],
        &kept_b,
    );
    ok(&strs(&args));
    let unique = std::fs::read_to_string(kept_b.join("unique.jsonl")).unwrap();
    assert_eq!(unique.lines().count(), 2);
    assert!(
        unique.contains("\"id\":\"b\"") && unique.contains("\"id\":\"c\""),
        "{unique}"
    );
    let groups = std::fs::read_to_string(kept_b.join("groups.jsonl")).unwrap();
    assert!(groups.contains("\"kept\":\"b\""), "{groups}");
    let summary = std::fs::read_to_string(kept_b.join("summary.json")).unwrap();
    assert!(summary.contains("\"keep\": \"field:id:max\""), "{summary}");
    let args = csv_args(&["--keep", "field:year:max"], &dir.path().join("no-year"));
    let err = rejected(&strs(&args));
    assert!(
        err.contains("no record in a duplicate group has a field \"year\""),
        "{err}"
    );

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
fn a_text_file_of_one_document_a_line_deduplicates_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("sentences.txt");
    std::fs::write(
        &lines,
        "The referendum result was announced on Friday morning in London.\n\n\
         Football results from the weekend league matches.\n\
         the referendum result was announced on friday morning in london\n",
    )
    .unwrap();
    let out = dir.path().join("lines-out");
    ok(&[
        "dedup",
        "--method",
        "minhash",
        s(&lines),
        "--out",
        s(&out),
        "-q",
    ]);
    let groups = std::fs::read_to_string(out.join("groups.jsonl")).unwrap();
    assert!(groups.contains("\"members\":[\"1\",\"4\"]"), "{groups}");
    let unique = std::fs::read_to_string(out.join("unique.jsonl")).unwrap();
    let kept: Vec<serde_json::Value> = unique
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(kept.len(), 2, "{unique}");
    assert_eq!(kept[1]["id"], "3");
    assert_eq!(
        kept[1]["text"],
        "Football results from the weekend league matches."
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
    let (input, out) = (sample(), dir.path().to_owned());
    for (method, flag, expected) in [
        (
            "jaccard",
            "--num-perm",
            "--num-perm: does not apply to method jaccard",
        ),
        (
            "minhash",
            "--top-k",
            "--top-k: does not apply to method minhash",
        ),
    ] {
        let args = [
            "dedup",
            s(&input),
            "--method",
            method,
            flag,
            "5",
            "--out",
            s(&out),
        ];
        let stderr = rejected(&args);
        assert!(stderr.contains(expected), "{stderr}");
    }
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
}

#[test]
fn explain_rescues_a_truncated_version_and_says_which_figures_are_estimates() {
    let full = "we studied early mobilisation after stroke in a randomised trial of two hundred \
        patients across four hospitals and found that walking within two days shortened the \
        stay and improved independence at three months without more falls or adverse events";
    let cut: String = full
        .split_whitespace()
        .take(14)
        .collect::<Vec<_>>()
        .join(" ");
    let out = ok(&[
        "explain", "--text", full, "--text", &cut, "--method", "minhash", "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["verdict"]["rule"], "containment", "{json}");
    assert_eq!(json["verdict"]["duplicate"], true);
    assert_eq!(json["evidence"]["containment_sampled"], true, "{json}");
    assert_eq!(json["evidence"]["containment"].as_f64(), Some(1.0));
    assert!(json["jaccard_exact"].as_f64().unwrap() < 0.8, "{json}");
    let text = String::from_utf8_lossy(
        &ok(&[
            "explain", "--text", full, "--text", &cut, "--method", "minhash",
        ])
        .stdout,
    )
    .into_owned();
    assert!(text.contains("containment, sampled"), "{text}");
    assert!(
        text.contains("decided on the containment 1.000 from the word samples"),
        "{text}"
    );
    // The rule can be turned off, and the verdict follows.
    let off = ok(&[
        "explain",
        "--text",
        full,
        "--text",
        &cut,
        "--method",
        "minhash",
        "--json",
        "--containment",
        "0",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&off.stdout).unwrap();
    assert_eq!(json["verdict"]["rule"], "below", "{json}");
}

#[test]
fn explain_names_the_rule_for_a_rescued_and_a_refused_pair() {
    let data = shared_data();
    let rescued = ok(&[
        "explain",
        s(&data),
        "stroke/id_0000271",
        "stroke/id_0000272",
        "--method",
        "minhash",
    ]);
    let text = String::from_utf8_lossy(&rescued.stdout);
    assert!(text.contains("verdict: duplicate (rule `title`"), "{text}");
    assert!(text.contains("only in B: 2010 202 4 943"), "{text}");
    assert!(text.contains("{+individuals.[erratum"), "{text}");
    let refused = ok(&[
        "explain",
        "--text",
        "randomized phase ii trial of ok-432 in malignant pleural effusion",
        "--text",
        "randomized phase iii trial of ok-432 in malignant pleural effusion",
        "--method",
        "minhash",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&refused.stdout).unwrap();
    assert_eq!(json["verdict"]["rule"], "numbers", "{json}");
    assert_eq!(json["verdict"]["duplicate"], false);
    assert!(json["jaccard_exact"].as_f64().unwrap() > 0.8);
    let missing = rejected(&["explain", s(&data), "stroke/id_0000271", "nope"]);
    assert!(missing.contains("no record \"nope\""), "{missing}");
    // Two records carry no corpus centre: the cosine is of the vectors as made, and says so.
    let as_made = ok(&[
        "explain", "--text", "a b c d", "--text", "a b c e", "--centre",
    ]);
    let note = String::from_utf8_lossy(&as_made.stderr);
    assert!(note.contains("vectors as made"), "{note}");
    let quiet = ok(&[
        "explain",
        "--text",
        "a b c d",
        "--text",
        "a b c e",
        "--no-centre",
    ]);
    assert!(quiet.stderr.is_empty(), "{quiet:?}");
    assert_eq!(as_made.stdout, quiet.stdout, "the same cosine either way");
}

#[test]
fn standard_input_and_output_serve_where_a_pipe_is_natural() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let piped = |args: &[&str], input: &[u8]| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_neardup"))
            .args(args)
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let bytes = std::fs::read(sample()).unwrap();
    let from_file = dir.path().join("file");
    let from_stdin = dir.path().join("stdin");
    ok(&[
        "dedup",
        s(&sample()),
        "--method",
        "minhash",
        "--out",
        s(&from_file),
        "-q",
    ]);
    piped(
        &[
            "dedup",
            "-",
            "--method",
            "minhash",
            "--out",
            s(&from_stdin),
            "-q",
        ],
        &bytes,
    );
    for file in ["unique.jsonl", "groups.jsonl", "annotated.jsonl"] {
        assert_eq!(
            std::fs::read(from_file.join(file)).unwrap(),
            std::fs::read(from_stdin.join(file)).unwrap(),
            "{file}"
        );
    }

    let out = piped(&["stream", "-", "--out", "-", "-q"], &bytes);
    let kept = String::from_utf8(out.stdout).unwrap();
    let said = String::from_utf8(out.stderr).unwrap();
    let count = kept.lines().count();
    assert!(
        count > 900 && said.contains(&format!("{count} kept")),
        "{said}"
    );
    assert!(said.contains("-> standard output"), "{said}");
    assert!(!dir.path().join("-").exists(), "no file named -");
}

#[test]
fn logs_are_plain_text_off_a_terminal_or_json_lines_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let run = |format: &str, out: &str| {
        let out = ok(&[
            "dedup",
            s(&sample()),
            "--method",
            "minhash",
            "--out",
            s(&dir.path().join(out)),
            "-v",
            "--log-format",
            format,
        ]);
        String::from_utf8(out.stderr).unwrap()
    };
    let text = run("text", "text");
    assert!(text.contains("INFO") && !text.contains('\u{1b}'), "{text}");
    let json = run("json", "json");
    let lines: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(!lines.is_empty());
    assert!(
        lines
            .iter()
            .all(|l| l["level"].is_string() && l["fields"].is_object()),
        "{json}"
    );
}

#[test]
fn exact_copies_of_titles_without_spaces_are_paired_by_both_methods() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("unspaced.jsonl");
    // Titles alone, as a catalogue holds them: each twice, beside unrelated ones of its script.
    let titles = [
        (
            "th",
            "การศึกษาผลของการออกกำลังกายต่อสุขภาพของผู้สูงอายุในชนบทภาคเหนือของประเทศไทย",
        ),
        (
            "th-other",
            "รายงานสถานการณ์น้ำท่วมและการช่วยเหลือผู้ประสบภัยในจังหวัดชายฝั่งทะเลตะวันออก",
        ),
        (
            "ja",
            "地方に住む高齢者の運動習慣が健康状態に与える影響についての十年間の追跡調査",
        ),
        (
            "ja-other",
            "東京湾岸地域における集中豪雨の予測手法とその精度の検証に関する報告",
        ),
        ("zh", "农村老年人体育锻炼对健康状况影响的十年追踪研究"),
        (
            "zh-other",
            "沿海城市暴雨洪涝灾害风险评估方法及其应用研究报告",
        ),
    ];
    let mut lines = String::new();
    for (id, title) in titles {
        for copy in ["a", "b"]
            .iter()
            .take(if id.ends_with("other") { 1 } else { 2 })
        {
            lines.push_str(&format!(
                "{}\n",
                serde_json::json!({"core_id": format!("{id}-{copy}"), "processed_title": title, "processed_abstract": ""})
            ));
        }
    }
    std::fs::write(&corpus, lines).unwrap();
    for method in ["minhash", "two-stage"] {
        let out = dir.path().join(method);
        ok(&[
            "dedup",
            s(&corpus),
            "--method",
            method,
            "--out",
            s(&out),
            "-q",
        ]);
        let pairs: Vec<(String, String)> = std::fs::read_to_string(out.join("pairs.jsonl"))
            .unwrap()
            .lines()
            .map(|line| {
                let pair: serde_json::Value = serde_json::from_str(line).unwrap();
                (
                    pair["id_a"].as_str().unwrap().into(),
                    pair["id_b"].as_str().unwrap().into(),
                )
            })
            .collect();
        let expected: Vec<(String, String)> = ["ja", "th", "zh"]
            .iter()
            .map(|id| (format!("{id}-a"), format!("{id}-b")))
            .collect();
        assert_eq!(pairs, expected, "{method}");
    }
}

#[test]
fn an_empty_title_field_is_no_title() {
    // A text and a longer one that holds most of its words: the containment rule's pair, which
    // the titles may refuse only where both records have one.
    let short = "the committee approved the new budget for public schools after a long debate";
    let long = "after a long debate the city committee approved the new budget for public schools \
                and libraries on tuesday";
    let dir = tempfile::tempdir().unwrap();
    let run = |titles: [&str; 2]| {
        let corpus = dir.path().join("texts.jsonl");
        let lines: String = [short, long]
            .iter()
            .zip(titles)
            .enumerate()
            .map(|(i, (text, title))| {
                serde_json::json!({"core_id": format!("t{i}"), "processed_title": title, "processed_abstract": text})
                    .to_string()
                    + "\n"
            })
            .collect();
        std::fs::write(&corpus, lines).unwrap();
        let out = dir.path().join("out");
        ok(&[
            "dedup",
            s(&corpus),
            "--method",
            "minhash",
            "--out",
            s(&out),
            "-q",
        ]);
        std::fs::read_to_string(out.join("pairs.jsonl"))
            .unwrap()
            .lines()
            .count()
    };
    assert_eq!(
        run(["", " "]),
        1,
        "empty and blank titles are none: the texts decide"
    );
    assert_eq!(
        run(["school budget vote", "library opening hours"]),
        0,
        "titles that share no word refuse the pair"
    );
}
