//! What a careless or hostile command line gets: a clear refusal (exit 2) naming the flag,
//! never a panic, a silent default or unbounded work.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use crate::common::*;

#[test]
fn thresholds_that_are_not_finite_numbers_are_refused() {
    let sample = sample();
    for (flag, value) in [
        ("--threshold", "NaN"),
        ("--threshold", "inf"),
        ("--threshold=-inf", ""),
        ("--min-cosine", "NaN"),
        ("--containment", "nan"),
    ] {
        let mut args = vec!["dedup", s(&sample), "--out", "never-written", flag];
        if !value.is_empty() {
            args.push(value);
        }
        let stderr = rejected(&args);
        assert!(
            stderr.contains("is not a finite number"),
            "{args:?}: {stderr}"
        );
    }
    assert!(!Path::new("never-written").exists());
}

#[test]
fn a_pipeline_file_with_nan_names_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = dir.path().join("p.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[input]\npaths = [{:?}]\n[method]\nname = \"minhash\"\nthreshold = nan\n[output]\ndir = {:?}\n",
            sample(),
            dir.path().join("out")
        ),
    )
    .unwrap();
    let stderr = rejected(&["run", s(&pipeline)]);
    assert!(
        stderr.contains("p.toml:5: field `threshold`: NaN is not a finite number"),
        "{stderr}"
    );
}

#[test]
fn gen_refuses_absurd_sizes_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g.jsonl");
    let stderr = rejected(&["gen", "--docs", "100000000000", "--out", s(&out)]);
    assert!(
        stderr.contains("--docs 100000000000 is outside 1 to"),
        "{stderr}"
    );
    let stderr = rejected(&[
        "gen",
        "--docs",
        "2",
        "--abstract-words",
        "18446744073709551615",
        "--out",
        s(&out),
    ]);
    assert!(stderr.contains("--abstract-words"), "{stderr}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing left behind"
    );
}

#[test]
fn paths_that_are_not_utf8_are_refused_by_flag_where_settings_record_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut bad = dir.path().as_os_str().as_bytes().to_vec();
    bad.extend_from_slice(b"/idx\xff");
    let bad = OsStr::from_bytes(&bad);
    for args in [
        vec![
            OsStr::new("index"),
            sample().as_os_str(),
            OsStr::new("--index"),
            bad,
        ],
        vec![
            OsStr::new("dedup"),
            sample().as_os_str(),
            OsStr::new("--out"),
            bad,
        ],
        vec![
            OsStr::new("dedup"),
            bad,
            OsStr::new("--out"),
            dir.path().as_os_str(),
        ],
        vec![
            OsStr::new("dedup"),
            sample().as_os_str(),
            OsStr::new("--out"),
            dir.path().as_os_str(),
            OsStr::new("--stoplist"),
            bad,
        ],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_neardup"))
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("is not valid UTF-8"), "{args:?}: {stderr}");
    }
}
