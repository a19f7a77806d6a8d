//! `neardup dedup --part` and `neardup merge`: MinHash and two-stage in stages over machines
//! write the files of one run.

use crate::common::*;

const RUN_FILES: [&str; 5] = [
    "pairs.jsonl",
    "candidates.parquet",
    "groups.jsonl",
    "unique.jsonl",
    "annotated.jsonl",
];

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// Asserts that the run in `dir` wrote the files of the one run in `whole`, byte for byte, and
/// its summary but for the timings, the run's id and its folder.
fn assert_files_of_one_run(dir: &Path, whole: &Path, context: &str) {
    let read = |dir: &Path, file: &str| std::fs::read(dir.join(file)).unwrap();
    for file in RUN_FILES {
        assert!(
            read(dir, file) == read(whole, file),
            "{file} of {} {context}",
            dir.display()
        );
    }
    let (mut ours, mut theirs) = (summary(dir), summary(whole));
    for summary in [&mut ours, &mut theirs] {
        for key in ["run", "files", "seconds", "write_seconds"] {
            summary.as_object_mut().unwrap().remove(key);
        }
        summary["settings"]["output"]["dir"] = serde_json::Value::Null;
    }
    assert_eq!(ours, theirs, "{} {context}", dir.display());
}

#[test]
fn minhash_signed_banded_confirmed_and_joined_in_parts_writes_the_files_of_one_run() {
    let data = shared_data();
    let tmp = tempfile::tempdir().unwrap();
    let at = |name: &str| tmp.path().join(name);
    let whole = at("whole");
    ok(&[
        "dedup",
        s(&data),
        "--method",
        "minhash",
        "--out",
        s(&whole),
        "-q",
    ]);
    let signed: Vec<PathBuf> = (1..=3).map(|i| at(&format!("signed{i}"))).collect();
    for (i, dir) in signed.iter().enumerate() {
        let part = format!("{}/3", i + 1);
        ok(&[
            "dedup",
            s(&data),
            "--method",
            "minhash",
            "--part",
            &part,
            "--out",
            s(dir),
            "-q",
        ]);
    }
    // Each stage after signing: every part's folders of the stage before, and `--part`.
    let stage = |name: &str, from: &[PathBuf]| -> Vec<PathBuf> {
        (1..=3)
            .map(|j| {
                let dir = at(&format!("{name}{j}"));
                let part = format!("{j}/3");
                let mut args: Vec<&str> = vec!["merge"];
                args.extend(from.iter().map(|d| s(d)));
                ok(&[&args[..], &["--part", &part, "--out", s(&dir), "-q"]].concat());
                dir
            })
            .collect()
    };
    let banded = stage("banded", &signed);
    let confirmed = stage("confirmed", &banded);
    let joined = at("joined");
    let mut args: Vec<&str> = vec!["merge"];
    args.extend(confirmed.iter().rev().map(|d| s(d)));
    ok(&[&args[..], &["--out", s(&joined), "-q"]].concat());
    // On one machine: the stages left run one part at a time.
    let from_signed = at("from-signed");
    let from_banded = at("from-banded");
    for (out, from) in [(&from_signed, &signed), (&from_banded, &banded)] {
        let mut args: Vec<&str> = vec!["merge"];
        args.extend(from.iter().map(|d| s(d)));
        ok(&[&args[..], &["--out", s(out), "-q"]].concat());
    }

    for dir in [&joined, &from_signed, &from_banded] {
        assert_files_of_one_run(dir, &whole, "");
    }
    let pairs = summary(&whole)["pairs"].as_u64().unwrap();
    assert!(pairs > 1000, "{pairs}");
    // Each part banded and confirmed a share of the candidates, not all of them.
    let shares: Vec<u64> = [&banded, &confirmed]
        .into_iter()
        .flatten()
        .map(|d| summary(d)["candidates"].as_u64().unwrap())
        .collect();
    let all = summary(&whole)["candidates"].as_u64().unwrap();
    assert!(
        shares.iter().all(|&n| n > 0 && n < all),
        "{shares:?} of {all}"
    );

    // What does not make one run is refused, naming why.
    let refused = at("refused");
    let out = s(&refused);
    let err = rejected(&["merge", s(&signed[0]), s(&signed[1]), "--out", out]);
    assert!(err.contains("part 3/3 missing"), "{err}");
    let err = rejected(&[
        "merge",
        s(&signed[0]),
        s(&signed[1]),
        s(&signed[1]),
        "--out",
        out,
    ]);
    assert!(err.contains("given twice"), "{err}");
    let err = rejected(&[
        "merge",
        s(&signed[0]),
        s(&signed[1]),
        s(&confirmed[2]),
        "--out",
        out,
    ]);
    assert!(err.contains("give the folders of one stage"), "{err}");
    let mut args: Vec<&str> = vec!["merge"];
    args.extend(signed.iter().map(|d| s(d)));
    let err = rejected(&[&args[..], &["--part", "1/4", "--out", out]].concat());
    assert!(err.contains("signed in 3 parts"), "{err}");
    let mut args: Vec<&str> = vec!["merge"];
    args.extend(confirmed.iter().map(|d| s(d)));
    let err = rejected(&[&args[..], &["--part", "1/3", "--out", out]].concat());
    assert!(err.contains("without --part"), "{err}");
    let other = at("other");
    ok(&[
        "dedup",
        s(&data),
        "--method",
        "minhash",
        "--threshold",
        "0.6",
        "--part",
        "3/3",
        "--out",
        s(&other),
        "-q",
    ]);
    let err = rejected(&[
        "merge",
        s(&signed[0]),
        s(&signed[1]),
        s(&other),
        "--out",
        out,
    ]);
    assert!(err.contains("parts of different runs"), "{err}");

    // A key file changed after the stage wrote it is refused.
    let keys = signed[1].join("keys-2.bin");
    let mut bytes = std::fs::read(&keys).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&keys, bytes).unwrap();
    let mut args: Vec<&str> = vec!["merge"];
    args.extend(signed.iter().map(|d| s(d)));
    let err = rejected(&[&args[..], &["--part", "2/3", "--out", out]].concat());
    assert!(
        err.contains("keys-2.bin") && err.contains("changed after the run"),
        "{err}"
    );

    // The whole tree moved (storage mounted elsewhere): each stage finds the signed parts
    // relative to itself.
    let moved = at("moved");
    std::fs::create_dir(&moved).unwrap();
    for dir in signed.iter().chain(&banded).chain(&confirmed) {
        std::fs::rename(dir, moved.join(dir.file_name().unwrap())).unwrap();
    }
    let joined_moved = at("joined-moved");
    let mut args: Vec<&str> = vec!["merge"];
    let moved_confirmed: Vec<PathBuf> = confirmed
        .iter()
        .map(|d| moved.join(d.file_name().unwrap()))
        .collect();
    args.extend(moved_confirmed.iter().map(|d| s(d)));
    ok(&[&args[..], &["--out", s(&joined_moved), "-q"]].concat());
    let groups = |dir: &Path| std::fs::read(dir.join("groups.jsonl")).unwrap();
    assert!(groups(&joined_moved) == groups(&whole));
    // A signed part taken away is named.
    std::fs::rename(moved.join("signed2"), at("elsewhere")).unwrap();
    let err = rejected(&[&args[..], &["--out", out]].concat());
    assert!(
        err.contains("signed2") && err.contains("not there"),
        "{err}"
    );
    // A confirmed part's candidates changed after it wrote them are refused.
    std::fs::rename(at("elsewhere"), moved.join("signed2")).unwrap();
    let scored = moved_confirmed[0].join("scored.bin");
    let mut bytes = std::fs::read(&scored).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&scored, bytes).unwrap();
    let err = rejected(&[&args[..], &["--out", out]].concat());
    assert!(
        err.contains("scored.bin") && err.contains("changed after the run"),
        "{err}"
    );
}

#[test]
fn a_signed_part_reads_its_share_and_the_join_refuses_what_parts_cannot_see() {
    let tmp = tempfile::tempdir().unwrap();
    let at = |name: &str| tmp.path().join(name);
    let line = |id: &str, i: usize| {
        format!("{{\"id\":\"{id}\",\"text\":\"record number {i} about lakes rivers and hills\"}}\n")
    };
    // Forty records; the last repeats the first's id, so the two halves each hold it once.
    let mut lines: Vec<String> = (0..40).map(|i| line(&format!("r{i:02}"), i)).collect();
    lines[39] = line("r00", 39);
    let corpus = at("corpus.jsonl");
    std::fs::write(&corpus, lines.concat()).unwrap();
    let sign = |corpus: &Path, part: &str, out: &Path, extra: &[&str]| {
        let mut args = minhash_id_text(&[corpus], out, &["--part", part, "-q"]);
        args.extend(extra);
        neardup(&args)
    };
    let signed = [at("signed1"), at("signed2")];
    for (i, dir) in signed.iter().enumerate() {
        let signing = sign(&corpus, &format!("{}/2", i + 1), dir, &[]);
        assert!(signing.status.success(), "{signing:?}");
    }
    // Each part signed about half, the records that start in its half of the bytes.
    let documents = signed
        .each_ref()
        .map(|dir| summary(dir)["documents"].as_u64().unwrap());
    assert!(
        documents.iter().sum::<u64>() == 40 && documents.iter().all(|&n| (17..=23).contains(&n)),
        "{documents:?}"
    );
    let out = at("joined");
    let err = rejected(&["merge", s(&signed[0]), s(&signed[1]), "--out", s(&out)]);
    assert!(
        err.contains("duplicate id \"r00\"") && err.contains("corpus.jsonl:1"),
        "{err}"
    );
    // Under --skip-invalid one run would skip the repeat, which the parts signed: refused.
    let skipping = [at("skipping1"), at("skipping2")];
    for (i, dir) in skipping.iter().enumerate() {
        let signing = sign(&corpus, &format!("{}/2", i + 1), dir, &["--skip-invalid"]);
        assert!(signing.status.success(), "{signing:?}");
    }
    let err = rejected(&["merge", s(&skipping[0]), s(&skipping[1]), "--out", s(&out)]);
    assert!(
        err.contains("signed 40 documents") && err.contains("repeated in two parts"),
        "{err}"
    );

    // An input edited after signing (an id changed, the length kept) is refused.
    lines[39] = line("r99", 39);
    std::fs::write(&corpus, lines.concat()).unwrap();
    for (i, dir) in signed.iter().enumerate() {
        assert!(
            sign(&corpus, &format!("{}/2", i + 1), dir, &[])
                .status
                .success()
        );
    }
    lines[30] = line("r98", 30);
    std::fs::write(&corpus, lines.concat()).unwrap();
    let err = rejected(&["merge", s(&signed[0]), s(&signed[1]), "--out", s(&out)]);
    assert!(
        err.contains("signed2") && err.contains("changed since signing"),
        "{err}"
    );
    // A record's text rewritten in place, its id and length kept: refused too, by the part
    // that read it.
    lines[30] = line("r30", 30);
    let rewritten = line("r03", 3).replace("lakes rivers", "caves forest");
    assert_eq!(rewritten.len(), lines[3].len());
    let original = std::mem::replace(&mut lines[3], rewritten);
    std::fs::write(&corpus, lines.concat()).unwrap();
    let err = rejected(&["merge", s(&signed[0]), s(&signed[1]), "--out", s(&out)]);
    assert!(
        err.contains("signed1") && err.contains("edited") && err.contains("changed since signing"),
        "{err}"
    );
    lines[3] = original;
    std::fs::write(&corpus, lines.concat()).unwrap();

    // A bad record in the second half is named by the byte its line starts at: the part
    // does not count the lines before its share.
    lines[30] = "{\"id\": \"r30\", \"text\": oops}\n".into();
    std::fs::write(&corpus, lines.concat()).unwrap();
    let byte: usize = lines[..30].iter().map(String::len).sum();
    let signing = sign(&corpus, "2/2", &at("bad"), &[]);
    let err = String::from_utf8_lossy(&signing.stderr);
    assert!(
        !signing.status.success() && err.contains(&format!("(the line at byte {byte})")),
        "{err}"
    );
}

#[test]
fn parts_of_unlike_settings_are_refused_by_the_setting_and_no_part_is_written_over() {
    let tmp = tempfile::tempdir().unwrap();
    let at = |name: &str| tmp.path().join(name);
    let corpus = at("corpus.jsonl");
    let lines: String = (0..40)
        .map(|i| {
            format!("{{\"id\":\"r{i:02}\",\"text\":\"record {i} about lakes rivers and hills\"}}\n")
        })
        .collect();
    std::fs::write(&corpus, lines).unwrap();
    let sign = |part: &str, out: &Path, extra: &[&str]| {
        let mut args = minhash_id_text(&[&corpus], out, &["--part", part, "-q"]);
        args.extend(extra);
        ok(&args);
    };
    let (one, two) = (at("signed1"), at("signed2"));
    sign("1/2", &one, &[]);
    let out = at("joined");
    // Each setting that changes an output, given to one part and not the other.
    for (extra, setting, values) in [
        (
            &["--keep", "longest"][..],
            "output.keep",
            ["\"representative\"", "\"longest\""],
        ),
        (&["--no-annotate"], "output.annotate", ["true", "false"]),
        (
            &["--candidates", "jsonl"],
            "output.candidates",
            ["\"parquet\"", "\"jsonl\""],
        ),
        (&["--num-perm", "64"], "method.num_perm", ["128", "64"]),
    ] {
        sign("2/2", &two, extra);
        let err = rejected(&["merge", s(&one), s(&two), "--out", s(&out)]);
        let said = format!(
            "`{setting}` is {} in the first and {} in the second",
            values[0], values[1]
        );
        assert!(
            err.contains("parts of different runs") && err.contains(&said),
            "{said}: {err}"
        );
    }
    sign("2/2", &two, &[]);

    // The join's folder may not be a part, nor a signed part that a later stage names.
    let before = std::fs::read(one.join("summary.json")).unwrap();
    let err = rejected(&["merge", s(&one), s(&two), "--out", s(&one)]);
    assert!(err.contains("a folder this merge reads"), "{err}");
    let banded = [at("banded1"), at("banded2")];
    for (i, dir) in banded.iter().enumerate() {
        let part = format!("{}/2", i + 1);
        ok(&[
            "merge",
            s(&one),
            s(&two),
            "--part",
            &part,
            "--out",
            s(dir),
            "-q",
        ]);
    }
    let err = rejected(&[
        "merge",
        s(&banded[0]),
        s(&banded[1]),
        "--part",
        "1/2",
        "--out",
        s(&two),
    ]);
    assert!(err.contains("a folder this merge reads"), "{err}");
    assert_eq!(std::fs::read(one.join("summary.json")).unwrap(), before);
    ok(&[
        "merge",
        s(&banded[0]),
        s(&banded[1]),
        "--out",
        s(&out),
        "-q",
    ]);
    assert_eq!(summary(&out)["documents"], 40);
}

#[test]
fn two_stage_signed_and_embedded_in_parts_writes_the_files_of_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let at = |name: &str| tmp.path().join(name);
    // Enough documents to centre on (1,000), in parts of fewer than one run's first batch,
    // whose mean they must centre on; vectors that lean one way, so that the centre matters.
    let data = at("corpus.jsonl");
    ok(&[
        "gen",
        "--docs",
        "2500",
        "--seed",
        "5",
        "--out",
        s(&data),
        "-q",
    ]);
    // 150 copies of a record across the first two parts' boundary, and its title alone: the
    // copies are paired with their first, which alone meets what the title finds.
    let text = std::fs::read_to_string(&data).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut record: serde_json::Value = serde_json::from_str(&lines[10]).unwrap();
    record["labelled_duplicates"] = serde_json::json!([]);
    let copies = (0..150).map(|i| {
        record["core_id"] = format!("copy{i:03}").into();
        record.to_string()
    });
    let copies: Vec<String> = copies.collect();
    lines.splice(lines.len() / 3 - 75..lines.len() / 3 - 75, copies);
    record["core_id"] = "title-alone".into();
    record["processed_abstract"] = "".into();
    record["original_abstract"] = "".into();
    lines.push(record.to_string());
    std::fs::write(&data, lines.join("\n") + "\n").unwrap();
    let vectors = at("words.txt");
    word_vectors_around(&data, &vectors, 0.3);
    // Many cells and one (the default here); and in one cell the learned rule (fitted on these
    // vectors), whose pairs' scores are probabilities, where groups form by the Jaccard
    // estimate.
    let model = at("model.json");
    let glove = ["--embedder", "glove", "--glove", s(&vectors)];
    let train = ["train", "--truth", s(&data), "--out", s(&model), "-q"];
    ok(&[&train[..], &glove[..]].concat());
    let meaning = ["--match", "meaning", "--confirm-model", s(&model)];
    let runs = [
        ("2", &["--cells", "12"][..]),
        ("0", &[]),
        ("meaning", &meaning[..]),
    ];
    for (label, cells) in runs {
        let mut settings = vec!["--embedder", "glove", "--glove", s(&vectors), "-q"];
        settings.extend(cells);
        let whole = at(&format!("whole{label}"));
        ok(&[&["dedup", s(&data), "--out", s(&whole)][..], &settings[..]].concat());
        for count in [1, 3] {
            let parts: Vec<PathBuf> = (1..=count)
                .map(|i| at(&format!("embedded{label}-{i}of{count}")))
                .collect();
            for (i, dir) in parts.iter().enumerate() {
                let part = format!("{}/{count}", i + 1);
                let args = ["dedup", s(&data), "--part", &part, "--out", s(dir)];
                ok(&[&args[..], &settings[..]].concat());
                assert!(!dir.join("pairs.jsonl").exists());
            }
            let joined = at(&format!("joined{label}-{count}"));
            let mut args: Vec<&str> = vec!["merge"];
            args.extend(parts.iter().rev().map(|d| s(d)));
            ok(&[&args[..], &["--out", s(&joined), "-q"]].concat());
            // The cells learned once, and the documents searched by the parts that own the
            // cells (as many as the embedded parts, and one more), or in the join.
            let learned = at(&format!("cells{label}-{count}"));
            ok(&[&args[..], &["--learn-cells", "--out", s(&learned), "-q"]].concat());
            let searched: Vec<PathBuf> = (1..=count + 1)
                .map(|j| {
                    let dir = at(&format!("searched{label}-{count}-{j}"));
                    let part = format!("{j}/{}", count + 1);
                    ok(&[
                        "merge",
                        s(&learned),
                        "--part",
                        &part,
                        "--out",
                        s(&dir),
                        "-q",
                    ]);
                    dir
                })
                .collect();
            let by_cell = at(&format!("by-cell{label}-{count}"));
            let mut join: Vec<&str> = vec!["merge"];
            join.extend(searched.iter().map(|d| s(d)));
            ok(&[&join[..], &["--out", s(&by_cell), "-q"]].concat());
            let in_join = at(&format!("in-join{label}-{count}"));
            ok(&["merge", s(&learned), "--out", s(&in_join), "-q"]);
            // The candidates found and judged by the parts that embedded their documents.
            let confirmed: Vec<PathBuf> = (1..=count)
                .map(|i| {
                    let dir = at(&format!("confirmed{label}-{count}-{i}"));
                    let part = format!("{i}/{count}");
                    let args = ["--part", &part, "--out", s(&dir), "-q"];
                    ok(&[&join[..], &args[..]].concat());
                    dir
                })
                .collect();
            let by_share = at(&format!("by-share{label}-{count}"));
            let mut join: Vec<&str> = vec!["merge"];
            join.extend(confirmed.iter().map(|d| s(d)));
            ok(&[&join[..], &["--out", s(&by_share), "-q"]].concat());
            for dir in [&joined, &by_cell, &in_join, &by_share] {
                let context = format!("{count} parts, cells {cells:?}");
                assert_files_of_one_run(dir, &whole, &context);
            }
        }
        let found = summary(&whole);
        assert!(found["pairs"].as_u64().unwrap() > 100, "{found}");
    }

    // What a split two-stage run cannot do is refused, naming why.
    let refused = at("refused");
    let out = s(&refused);
    let glove = ["--embedder", "glove", "--glove", s(&vectors)];
    let err = rejected(
        &[
            &[
                "dedup",
                s(&data),
                "--part",
                "1/2",
                "--exact-search",
                "--out",
                out,
            ][..],
            &glove,
        ]
        .concat(),
    );
    assert!(err.contains("searches every share within cells"), "{err}");
    let parts: Vec<PathBuf> = (1..=3).map(|i| at(&format!("embedded0-{i}of3"))).collect();
    let err = rejected(&["merge", s(&parts[0]), s(&parts[2]), "--out", out]);
    assert!(err.contains("part 2/3 missing"), "{err}");
    let mut args: Vec<&str> = vec!["merge"];
    args.extend(parts.iter().map(|d| s(d)));
    let err = rejected(&[&args[..], &["--part", "1/3", "--out", out]].concat());
    assert!(err.contains("learn their cells once"), "{err}");
    // Searched parts with one missing, or of cells learned twice, are refused; so are cells
    // given beside other folders.
    let searched = |j: usize| at(&format!("searched0-3-{j}"));
    let (first, second, fourth) = (searched(1), searched(2), searched(4));
    let err = rejected(&["merge", s(&first), s(&second), s(&fourth), "--out", out]);
    assert!(err.contains("part 3/4 missing"), "{err}");
    // A share's candidates are confirmed by as many parts as embedded it (3), not searched (4).
    let every: Vec<PathBuf> = (1..=4).map(searched).collect();
    let mut confirm: Vec<&str> = vec!["merge"];
    confirm.extend(every.iter().map(|d| s(d)));
    let err = rejected(&[&confirm[..], &["--part", "1/4", "--out", out]].concat());
    assert!(err.contains("embedded in 3 parts"), "{err}");
    let learned_again = at("cells-again");
    ok(&[
        &args[..],
        &["--learn-cells", "--out", s(&learned_again), "-q"],
    ]
    .concat());
    let (first, second) = (at("searched-first"), at("searched-second"));
    ok(&[
        "merge",
        s(&at("cells0-3")),
        "--part",
        "1/2",
        "--out",
        s(&first),
        "-q",
    ]);
    ok(&[
        "merge",
        s(&learned_again),
        "--part",
        "2/2",
        "--out",
        s(&second),
        "-q",
    ]);
    let err = rejected(&["merge", s(&first), s(&second), "--out", out]);
    assert!(err.contains("searched other cells"), "{err}");
    let err = rejected(&["merge", s(&learned_again), s(&parts[0]), "--out", out]);
    assert!(err.contains("one folder of learned cells"), "{err}");
    // Searched parts moved away from their cells name the cells they lost.
    std::fs::create_dir(at("moved-searched")).unwrap();
    let moved: Vec<PathBuf> = (1..=2)
        .map(|j| at(&format!("moved-searched/searched{j}")))
        .collect();
    for (from, to) in [&first, &second].into_iter().zip(&moved) {
        std::fs::rename(from, to).unwrap();
    }
    let err = rejected(&["merge", s(&moved[0]), s(&moved[1]), "--out", out]);
    assert!(err.contains("which is not there"), "{err}");
    let signed = at("signed");
    let minhash = ["dedup", s(&data), "--method", "minhash", "--part", "2/3"];
    ok(&[&minhash[..], &["--out", s(&signed), "-q"]].concat());
    let err = rejected(&[
        "merge",
        s(&parts[0]),
        s(&signed),
        s(&parts[2]),
        "--out",
        out,
    ]);
    assert!(err.contains("give the folders of one stage"), "{err}");
    // Cells learned from parts that were embedded again since are refused.
    let again = [
        "dedup",
        s(&data),
        "--part",
        "2/3",
        "--out",
        s(&parts[1]),
        "-q",
    ];
    ok(&[&again[..], &glove[..]].concat());
    let err = rejected(&["merge", s(&at("cells0-3")), "--part", "1/2", "--out", out]);
    assert!(err.contains("embedded again since"), "{err}");
    // Codes changed after the part wrote them are refused.
    let queries = parts[1].join("queries.bin");
    let mut bytes = std::fs::read(&queries).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&queries, bytes).unwrap();
    let err = rejected(&[&args[..], &["--out", out]].concat());
    assert!(
        err.contains("queries.bin") && err.contains("changed after the run"),
        "{err}"
    );

    // Within cells a record's title-only copies go by their titles' words, which the learned
    // cells keep. Cells without them are refused by the parts that confirm by them, naming
    // the file.
    let words = "title-only-words.bin";
    assert!(at("cells0-3").join(words).exists());
    std::fs::remove_file(at("cells2-3").join(words)).unwrap();
    let searched: Vec<PathBuf> = (1..=4).map(|j| at(&format!("searched2-3-{j}"))).collect();
    let mut confirm: Vec<&str> = vec!["merge"];
    confirm.extend(searched.iter().map(|d| s(d)));
    let err = rejected(&[&confirm[..], &["--part", "1/3", "--out", out]].concat());
    assert!(
        err.contains(words) && err.contains("learn the cells again"),
        "{err}"
    );

    // The join of the confirmed parts reads their folders and the embedded parts' sketches
    // alone, as `merge --help` tells a user short of disk.
    for j in 1..=4 {
        std::fs::remove_dir_all(at(&format!("searched2-3-{j}"))).unwrap();
    }
    for i in 1..=3 {
        let embedded = at(&format!("embedded2-{i}of3"));
        for entry in std::fs::read_dir(&embedded).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            if name == "queries.bin" || name.starts_with("keys-") {
                std::fs::remove_file(path).unwrap();
            }
        }
    }
    let lean = at("lean");
    let mut join: Vec<&str> = vec!["merge"];
    let confirmed: Vec<PathBuf> = (1..=3).map(|i| at(&format!("confirmed2-3-{i}"))).collect();
    join.extend(confirmed.iter().map(|d| s(d)));
    ok(&[&join[..], &["--out", s(&lean), "-q"]].concat());
    assert_files_of_one_run(&lean, &at("whole2"), "without the searched parts");
}

#[test]
fn a_split_run_signed_without_candidates_joins_without_them() {
    let data = shared_data();
    let tmp = tempfile::tempdir().unwrap();
    let at = |name: &str| tmp.path().join(name);
    let whole = dedup_minhash(&data, &[]);
    let signed: Vec<PathBuf> = (1..=2).map(|i| at(&format!("signed{i}"))).collect();
    for (i, dir) in signed.iter().enumerate() {
        let part = format!("{}/2", i + 1);
        let out = s(dir);
        let args = [
            "dedup",
            s(&data),
            "--method",
            "minhash",
            "--candidates",
            "none",
        ];
        ok(&[&args[..], &["--part", &part, "--out", out, "-q"]].concat());
    }
    let joined = at("joined");
    let mut args: Vec<&str> = vec!["merge"];
    args.extend(signed.iter().map(|d| s(d)));
    ok(&[&args[..], &["--out", s(&joined), "-q"]].concat());
    for file in ["candidates.jsonl", "candidates.parquet"] {
        assert!(!joined.join(file).exists(), "{file}");
    }
    for file in RUN_FILES.iter().filter(|&&f| f != "candidates.parquet") {
        let read = |dir: &Path| std::fs::read(dir.join(file)).unwrap();
        assert!(read(&joined) == read(whole.path()), "{file}");
    }
}
