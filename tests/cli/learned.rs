//! `neardup train` and the learned rule (`--match meaning`): a model fitted on labelled
//! pairs, used by `dedup` and `explain`, refused where it does not fit.

use crate::common::*;

/// The sample's records with GloVe-style vectors made from its own words.
fn glove_sample(dir: &Path) -> (PathBuf, PathBuf) {
    let data = sample();
    let vectors = dir.join("vectors.txt");
    word_vectors_around(&data, &vectors, 0.1);
    (data, vectors)
}

#[test]
fn a_model_fitted_on_labels_confirms_pairs_by_their_probability_and_explain_shows_its_weights() {
    let dir = tempfile::tempdir().unwrap();
    let (data, vectors) = glove_sample(dir.path());
    let glove = ["--embedder", "glove", "--glove", s(&vectors)];
    let model = dir.path().join("model.json");
    let pairs = dir.path().join("pairs");
    let mut train = vec![
        "train",
        "--truth",
        s(&data),
        "--save-pairs",
        s(&pairs),
        "--out",
        s(&model),
    ];
    train.extend(glove);
    let said = String::from_utf8(ok(&train).stdout).unwrap();
    assert!(
        said.contains("labelled duplicates") && said.contains("cosine"),
        "{said}"
    );
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    assert_eq!(file["embedder"], "vectors.txt", "{file}");
    assert_eq!(file["fitted_on"][0]["truth"], "bibdedupe-sample.jsonl");
    assert!(
        file["fitted_on"][0]["duplicates"].as_u64().unwrap() > 100,
        "{file}"
    );

    // The same fit from the saved pairs, without searching again.
    let again = dir.path().join("again.json");
    let saved = pairs.join("bibdedupe-sample.jsonl.pairs.json");
    ok(&["train", "--pairs", s(&saved), "--out", s(&again)]);
    assert_eq!(
        std::fs::read(&again).unwrap(),
        std::fs::read(&model).unwrap()
    );

    let out = dir.path().join("out");
    let mut dedup = vec![
        "dedup",
        s(&data),
        "--match",
        "meaning",
        "--confirm-model",
        s(&model),
    ];
    dedup.extend(glove);
    dedup.extend(["--out", s(&out), "-q"]);
    ok(&dedup);
    let pairs = std::fs::read_to_string(out.join("pairs.jsonl")).unwrap();
    let mut count = 0;
    for line in pairs.lines() {
        let pair: serde_json::Value = serde_json::from_str(line).unwrap();
        let probability = pair["probability"].as_f64().unwrap();
        assert!((0.5..=1.0).contains(&probability), "{pair}");
        count += 1;
    }
    assert!(count > 300, "{count} pairs");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["settings"]["method"]["threshold"], 0.5, "{summary}");
    assert_eq!(summary["score"], "probability");
    // Which model confirmed, not only where it was.
    use sha2::Digest;
    let digest = format!("{:x}", sha2::Sha256::digest(std::fs::read(&model).unwrap()));
    assert_eq!(summary["settings"]["confirm_model_sha256"], digest.as_str());
    let scores = eval_json(&data, &out);
    assert!(scores["macro_f1"].as_f64().unwrap() > 0.9, "{scores}");

    // A stricter probability confirms fewer pairs.
    let strict = dir.path().join("strict");
    let mut args = dedup.clone();
    let at = args.iter().position(|a| *a == s(&out)).unwrap();
    args[at] = s(&strict);
    args.extend(["--threshold", "0.99"]);
    ok(&args);
    let strict_count = std::fs::read_to_string(strict.join("pairs.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert!(strict_count < count, "{strict_count} of {count}");

    let mut explain = vec!["explain", s(&data)];
    let first: Vec<serde_json::Value> = pairs
        .lines()
        .take(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (a, b) = (
        first[0]["id_a"].as_str().unwrap(),
        first[0]["id_b"].as_str().unwrap(),
    );
    explain.extend([a, b, "--match", "meaning", "--confirm-model", s(&model)]);
    explain.extend(glove);
    let said = String::from_utf8(ok(&explain).stdout).unwrap();
    assert!(
        said.contains("learned weights")
            && said.contains("containment")
            && said.contains("probability"),
        "{said}"
    );
    explain.push("--json");
    let json: serde_json::Value = serde_json::from_slice(&ok(&explain).stdout).unwrap();
    let terms = json["learned"]["terms"].as_array().unwrap();
    let logit = json["learned"]["intercept"].as_f64().unwrap()
        + terms
            .iter()
            .map(|t| t["contribution"].as_f64().unwrap())
            .sum::<f64>();
    let probability = json["learned"]["probability"].as_f64().unwrap();
    assert!(
        (1.0 / (1.0 + (-logit).exp()) - probability).abs() < 1e-9,
        "{json}"
    );
    // An index keeps which model confirms: once the file changes, the index is refused.
    let index = dir.path().join("index");
    let mut build = vec!["index", s(&data), "--index", s(&index), "-q"];
    build.extend(["--match", "meaning", "--confirm-model", s(&model)]);
    build.extend(glove);
    ok(&build);
    let query = [
        "query",
        "--index",
        s(&index),
        "--id",
        "special_cases/id_0000001",
    ];
    ok(&query);
    let mut changed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    changed["intercept"] = (changed["intercept"].as_f64().unwrap() - 1.0).into();
    std::fs::write(&model, changed.to_string()).unwrap();
    let error = rejected(&query);
    assert!(
        error.contains("model.json") && error.contains("changed since the index was built"),
        "{error}"
    );
}

#[test]
fn a_model_is_refused_where_it_does_not_fit_and_so_are_labels_of_one_class() {
    let dir = tempfile::tempdir().unwrap();
    let (data, vectors) = glove_sample(dir.path());
    let glove = ["--embedder", "glove", "--glove", s(&vectors)];
    let out = dir.path().join("out");
    let refused = |flags: &[&str]| {
        let mut args = vec!["dedup", s(&data), "--out", s(&out)];
        args.extend(flags);
        rejected(&args)
    };
    // The shipped model weighs the static model's cosines, not these vectors'.
    let error = refused(&[&["--match", "meaning"][..], &glove].concat());
    assert!(
        error.contains("static-all-MiniLM-L6-v2") && error.contains("vectors.txt"),
        "{error}"
    );
    // The minhash method has no cosine to weigh.
    let error = refused(&["--method", "minhash", "--match", "meaning"]);
    assert!(
        error.contains("--match") && error.contains("two-stage"),
        "{error}"
    );
    // Copies are confirmed by --confirm; meaning by its model.
    let error = refused(&[&["--match", "meaning", "--confirm", "estimate"][..], &glove].concat());
    assert!(
        error.contains("--confirm") && error.contains("leave --confirm out"),
        "{error}"
    );
    // A model file without the learned rule.
    let error = refused(&["--confirm-model", "m.json"]);
    assert!(
        error.contains("--confirm-model") && error.contains("--match meaning"),
        "{error}"
    );
    // A model of another layout.
    let model = dir.path().join("model.json");
    std::fs::write(&model, r#"{"format": 7}"#).unwrap();
    let learned = ["--match", "meaning", "--confirm-model", s(&model)];
    let error = refused(&[&learned[..], &glove].concat());
    assert!(
        error.contains("model.json") && error.contains("format 7"),
        "{error}"
    );
    // Labels asked by a model of another embedder's cosines.
    let shipped = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/confirm/meaning-model.json"
    );
    let mut args = vec!["label", s(&data), "--labels", "answers.jsonl"];
    args.extend(
        [
            &["--match", "meaning", "--confirm-model", shipped][..],
            &glove,
        ]
        .concat(),
    );
    let error = rejected(&args);
    assert!(
        error.contains("--confirm-model weighs the cosines of static-all-MiniLM-L6-v2"),
        "{error}"
    );
    // Labels without a duplicate among the candidates.
    let unlabelled = dir.path().join("unlabelled.jsonl");
    let text = std::fs::read_to_string(&data).unwrap();
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
            record["labelled_duplicates"] = serde_json::json!([]);
            record.to_string()
        })
        .collect();
    std::fs::write(&unlabelled, lines.join("\n")).unwrap();
    let mut args = vec!["train", "--truth", s(&unlabelled), "--out", s(&model)];
    args.extend(glove);
    let error = rejected(&args);
    assert!(error.contains("0 of them duplicates"), "{error}");
}

/// `neardup ARGS`, answering `answers` on standard input.
fn answering(args: &[&str], answers: &str) -> String {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answers.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The pairs a `neardup label` session asked about, in order.
fn asked(said: &str) -> Vec<(String, String)> {
    let ids: Vec<String> = said
        .lines()
        .filter(|l| l.starts_with("A ") || l.starts_with("B "))
        .map(|l| l[2..].split(':').next().unwrap().to_owned())
        .collect();
    ids.chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect()
}

#[test]
fn a_labelling_session_keeps_every_answer_goes_on_where_it_stopped_and_trains_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let (data, vectors) = glove_sample(dir.path());
    let glove = ["--embedder", "glove", "--glove", s(&vectors)];
    let labels = dir.path().join("answers.jsonl");
    let model = dir.path().join("model.json");
    let mut args = vec![
        "label",
        s(&data),
        "--labels",
        s(&labels),
        "--out",
        s(&model),
    ];
    args.extend(glove);
    // Answers, a skip, an answer that is no answer (asked again), then the input ends while
    // a sixth pair waits.
    let said = answering(&args, "y\nn\ns\nmaybe\ny\nn\n");
    let first = asked(&said);
    assert_eq!(first.len(), 6, "{said}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&labels)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let answered: Vec<bool> = lines
        .iter()
        .map(|l| l["duplicate"].as_bool().unwrap())
        .collect();
    assert_eq!(answered, [true, false, true, false], "{said}");
    assert_eq!(lines[2]["id_a"].as_str().unwrap(), first[3].0);
    assert!(said.contains("wrote") && model.is_file(), "{said}");
    // A second session asks about none of the pairs answered.
    let said = answering(&args, "q\n");
    let next = asked(&said);
    assert_eq!(next.len(), 1, "{said}");
    assert!(said.contains("4 labelled"), "{said}");
    for line in &lines {
        let pair = (
            line["id_a"].as_str().unwrap(),
            line["id_b"].as_str().unwrap(),
        );
        assert_ne!((next[0].0.as_str(), next[0].1.as_str()), pair);
    }
    // The answers train a model as `label --out` did.
    let trained = dir.path().join("trained.json");
    let mut train = vec![
        "train",
        "--labels",
        s(&labels),
        "--corpus",
        s(&data),
        "--out",
        s(&trained),
    ];
    train.extend(glove);
    ok(&train);
    assert_eq!(
        std::fs::read(&trained).unwrap(),
        std::fs::read(&model).unwrap()
    );
    // Answers of one kind move a model given to start from, and the session writes it.
    let (one_kind, moved) = (dir.path().join("no.jsonl"), dir.path().join("moved.json"));
    let mut from_model = vec![
        "label",
        s(&data),
        "--labels",
        s(&one_kind),
        "--out",
        s(&moved),
    ];
    from_model.extend(["--match", "meaning", "--confirm-model", s(&trained)]);
    from_model.extend(glove);
    let said = answering(&from_model, "n\nq\n");
    assert!(
        said.contains("1 pairs labelled") && said.contains("wrote"),
        "{said}"
    );
    assert_ne!(
        std::fs::read(&moved).unwrap(),
        std::fs::read(&trained).unwrap()
    );
    // Conflicting labels, unknown ids and pairs the search never brings together are refused
    // by line.
    let first_line = std::fs::read_to_string(&labels)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let flipped = first_line.replace("true", "false");
    for (extra, expected) in [
        (flipped.as_str(), "lines 1 and 5"),
        (
            r#"{"id_a": "nobody", "id_b": "x", "duplicate": true}"#,
            "answers.jsonl:5: id \"nobody\"",
        ),
        ("not json", "answers.jsonl:5: not a label"),
    ] {
        let bad = dir.path().join("answers.jsonl");
        std::fs::write(
            &bad,
            format!(
                "{}\n{extra}\n",
                std::fs::read_to_string(&labels).unwrap().trim_end()
            ),
        )
        .unwrap();
        let error = rejected(&train);
        assert!(error.contains(expected), "{expected}: {error}");
        std::fs::write(
            &bad,
            lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
        )
        .unwrap();
    }
}
