//! A run's output folder is one unit: readers refuse files of another run, a changed file, a
//! run that did not finish, or a record that no run writes.

use crate::common::*;

fn eval_refused(truth: &Path, pred: &Path) -> String {
    rejected(&["eval", "--truth", s(truth), "--pred", s(pred)])
}

#[test]
fn files_of_two_runs_side_by_side_are_refused() {
    let data = sample();
    let dir = dedup_minhash(&data, &[]);
    let first_pairs = std::fs::read(dir.path().join("pairs.jsonl")).unwrap();
    // A second run with another threshold, then the first run's pairs put back, as a run
    // stopped between two renames would leave them.
    let out = s(dir.path());
    ok(&[
        "dedup",
        s(&data),
        "--method",
        "minhash",
        "--threshold",
        "0.9",
        "--out",
        out,
        "-q",
    ]);
    ok(&["eval", "--truth", s(&data), "--pred", out]);
    std::fs::write(dir.path().join("pairs.jsonl"), first_pairs).unwrap();
    let err = rejected(&[
        "eval",
        "--truth",
        s(&data),
        "--pred",
        out,
        "--predicted",
        "pairs",
    ]);
    assert!(
        err.contains("pairs.jsonl: not the file of run")
            && err.contains("run `neardup dedup` again"),
        "{err}"
    );
}

#[test]
fn a_run_that_did_not_finish_is_named_as_such() {
    let data = sample();
    let dir = dedup_minhash(&data, &[]);
    std::fs::remove_file(dir.path().join("summary.json")).unwrap();
    let err = eval_refused(&data, dir.path());
    assert!(
        err.contains("summary.json: not found (the run that wrote this folder did not finish"),
        "{err}"
    );

    let empty = tempfile::tempdir().unwrap();
    let err = eval_refused(&data, empty.path());
    assert!(
        err.contains("give the output folder of `neardup dedup`"),
        "{err}"
    );
}

#[test]
fn records_are_checked_even_when_the_digest_is_made_to_match() {
    let data = sample();
    let dir = dedup_minhash(&data, &[]);
    let summary_path = dir.path().join("summary.json");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary_path).unwrap()).unwrap();
    // Each damaged file, with the digest in the summary updated to match it.
    let cases = [
        (
            "pairs.jsonl",
            "{\"id_a\":\"9\",\"id_b\":\"1\",\"jaccard_estimate\":0.8}\n",
            "field `id_b`: must sort after `id_a`",
        ),
        (
            "pairs.jsonl",
            "{\"id_a\":\"1\",\"id_b\":\"2\",\"jaccard_estimate\":3.5}\n",
            "field `score`: `jaccard_estimate` is 3.5",
        ),
        ("pairs.jsonl", "{\"id_a\":\"1\"}\n", "missing field `id_b`"),
        (
            "groups.jsonl",
            "{\"group\":0,\"representative\":\"x\",\"representative_similarity\":1,\"size\":2,\"members\":[\"1\",\"2\"]}\n",
            "field `representative`: \"x\" is not a member",
        ),
        (
            "groups.jsonl",
            "{\"group\":0,\"representative\":\"1\",\"representative_similarity\":1,\"size\":5,\"members\":[\"1\",\"2\"]}\n",
            "field `size`: 5 but 2 members",
        ),
    ];
    for (file, content, expected) in cases {
        let mut changed = summary.clone();
        changed["files"][file] = serde_json::json!({
            "bytes": content.len(),
            "xxh3": format!("{:016x}", xxhash_rust::xxh3::xxh3_64(content.as_bytes())),
        });
        std::fs::write(dir.path().join(file), content).unwrap();
        std::fs::write(&summary_path, changed.to_string()).unwrap();
        let mode = if file == "pairs.jsonl" {
            "pairs"
        } else {
            "groups"
        };
        let err = rejected(&[
            "eval",
            "--truth",
            s(&data),
            "--pred",
            s(dir.path()),
            "--predicted",
            mode,
        ]);
        assert!(
            err.contains(&format!("{file}:1: ")) && err.contains(expected),
            "{file} {content}: {err}"
        );
    }
}

#[test]
fn a_new_run_sweeps_temporary_files_of_killed_runs_and_stale_files() {
    let data = sample();
    let dir = dedup_minhash(&data, &[]);
    let stale_temp = dir.path().join(".pairs.jsonl.Ab12Cd.tmp");
    std::fs::write(&stale_temp, "half a file").unwrap();
    let user_file = dir.path().join("notes.txt");
    std::fs::write(&user_file, "mine").unwrap();
    assert!(dir.path().join("candidates.parquet").is_file());
    // Jaccard writes no candidates: the MinHash run's would mislead a sweep.
    ok(&[
        "dedup",
        s(&data),
        "--method",
        "jaccard",
        "--out",
        s(dir.path()),
        "-q",
    ]);
    assert!(!stale_temp.exists());
    assert!(!dir.path().join("candidates.parquet").exists());
    assert!(
        user_file.exists(),
        "files that are not the run's are left alone"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap())
            .unwrap();
    let files: Vec<&String> = summary["files"].as_object().unwrap().keys().collect();
    assert_eq!(
        files,
        [
            "annotated.jsonl",
            "groups.jsonl",
            "pairs.jsonl",
            "unique.jsonl"
        ]
    );
    assert!(!summary["run"].as_str().unwrap().is_empty());
}
