//! What a hostile user met: inputs that would have been read wrong, outputs that would have
//! been lost, flags that would have asked for unbounded memory. Each answered with the right
//! result or an error that names the place and what to do.

use crate::common::*;

/// Runs `neardup ARGS` with standard output sent to `stdout`.
fn with_stdout(args: &[&str], stdout: std::fs::File) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(args)
        .stdout(stdout)
        .output()
        .expect("run neardup")
}

#[test]
fn a_csv_quote_that_never_closes_is_an_error_naming_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("in.csv");
    std::fs::write(
        &csv,
        "id,text\n1,\"alpha beta gamma delta epsilon\n2,alpha beta gamma delta epsilon\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let args = minhash_id_text(&[&csv], &out, &["-q"]);
    let message = rejected(&args);
    assert!(message.contains("in.csv:2"), "{message}");
    assert!(message.contains("never closed"), "{message}");
    // Closed, the same rows are two records; a quote doubled inside one is a quote.
    std::fs::write(
        &csv,
        "id,text\n1,\"alpha \"\"beta\"\" gamma delta epsilon\"\n2,alpha beta gamma delta epsilon",
    )
    .unwrap();
    let said = String::from_utf8(ok(&args[..args.len() - 1]).stdout).unwrap();
    assert!(said.starts_with("2 documents"), "{said}");
}

#[test]
fn tsv_has_no_quoting_and_comes_back_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let tsv = dir.path().join("in.tsv");
    let rows = [
        "id\ttext\tnote",
        "a\t\"quoted\" words of a record about rivers\t\"x\"",
        "b\t\"quoted\" words of a record about rivers\t\"y",
        "c\tsomething else entirely, with a comma\t'z'",
    ];
    std::fs::write(&tsv, rows.join("\n") + "\n").unwrap();
    let out = dir.path().join("out");
    ok(&minhash_id_text(&[&tsv], &out, &["-q"]));
    let unique = std::fs::read_to_string(out.join("unique.tsv")).unwrap();
    assert_eq!(
        unique.lines().collect::<Vec<_>>(),
        [rows[0], rows[1], rows[3]]
    );
    let annotated = std::fs::read_to_string(out.join("annotated.tsv")).unwrap();
    assert_eq!(
        annotated.lines().nth(2),
        Some(format!("{}\t0\tfalse\ta", rows[2]).as_str())
    );
    // An annotated copy deduplicated again would get its annotation columns twice.
    let annotated = out.join("annotated.tsv");
    let message = rejected(&minhash_id_text(
        &[&annotated],
        &dir.path().join("again"),
        &[],
    ));

    assert!(
        message.contains("neardup_group") && message.contains("annotated copy"),
        "{message}"
    );
    // A CSV cell with a tab cannot become TSV: refused, not written broken.
    let csv = dir.path().join("in.csv");
    std::fs::write(&csv, "id,text\na,\"one\ttwo three four five\"\n").unwrap();
    let message = rejected(&minhash_id_text(
        &[&csv],
        &dir.path().join("out2"),
        &["--out-format", "tsv", "-q"],
    ));
    assert!(
        message.contains("in.csv:2") && message.contains("TSV cannot hold"),
        "{message}"
    );
}

#[test]
fn csv_inputs_with_other_columns_are_refused_before_the_work() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.csv");
    let two = dir.path().join("two.csv");
    std::fs::write(&one, "id,text\na,alpha beta gamma delta\n").unwrap();
    std::fs::write(&two, "id,text,year\nb,alpha beta gamma delta,2001\n").unwrap();
    let message = rejected(&minhash_id_text(
        &[&one, &two],
        &dir.path().join("out"),
        &["-q"],
    ));
    assert!(
        message.contains("two.csv") && message.contains("one header"),
        "{message}"
    );
    assert!(
        !dir.path().join("out/pairs.jsonl").exists(),
        "no work was done"
    );
}

#[test]
fn keep_by_a_field_prefers_numbers_over_other_values() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("in.csv");
    let text = "a record about rivers and the towns along them";
    std::fs::write(
        &csv,
        format!("id,text,year\nx,{text},2001\ny,{text},n/a\nz,{text},2019\n"),
    )
    .unwrap();
    for (order, kept) in [("max", "z"), ("min", "x")] {
        let out = dir.path().join(order);
        let run = ok(&minhash_id_text(
            &[&csv],
            &out,
            &["--keep", &format!("field:year:{order}")],
        ));
        let groups = std::fs::read_to_string(out.join("groups.jsonl")).unwrap();
        assert!(
            groups.contains(&format!("\"kept\":\"{kept}\"")),
            "{order}: {groups}"
        );
        let said = String::from_utf8_lossy(&run.stderr);
        assert!(
            said.contains("1 values of \"year\" are not numbers"),
            "{said}"
        );
    }
}

#[test]
fn a_full_standard_output_is_an_error_not_a_panic() {
    let data = sample();
    let run = dedup_minhash(&data, &[]);
    for args in [
        vec!["eval", "--truth", s(&data), "--pred", s(run.path())],
        vec!["completions", "bash"],
        vec!["jaccard", s(&data), s(&data)],
        vec!["gen", "--docs", "10", "--out", "-"],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = with_stdout(&args, full);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            stderr.contains("No space left on device"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn a_dash_is_standard_output_for_every_file_a_command_writes() {
    let data = sample();
    let run = dedup_minhash(&data, &[]);
    // Run in an empty folder, to see that no file named `-` appears.
    let dir = tempfile::tempdir().unwrap();
    let in_dir = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_neardup"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}: {stderr}");
        (String::from_utf8(out.stdout).unwrap(), stderr)
    };
    let pred = s(run.path());
    let (json, said) = in_dir(&["eval", "--truth", s(&data), "--pred", pred, "--json", "-"]);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(json["accuracy"].as_f64().unwrap() > 0.9, "{json}");
    assert!(said.contains("macro-F1"), "the table goes beside: {said}");
    // Through a pipe, /dev/stdout names no file: it is written through.
    let (corpus, _) = in_dir(&["gen", "--docs", "5", "--out", "/dev/stdout"]);
    let records = corpus.lines().filter(|l| l.starts_with('{')).count();
    assert_eq!(records, 5, "{corpus}");
    let (corpus, said) = in_dir(&["gen", "--docs", "5", "--out", "-"]);
    assert_eq!(corpus.lines().count(), 5);
    assert!(said.contains("5 documents -> -"), "{said}");
    assert!(!dir.path().join("-").exists(), "no file named -");
}

#[test]
fn a_sweep_step_that_asks_for_trillions_of_thresholds_is_refused() {
    let data = sample();
    let run = dedup_minhash(&data, &[]);
    let message = rejected(&[
        "sweep",
        "--truth",
        s(&data),
        "--pred",
        s(run.path()),
        "--from",
        "0",
        "--to",
        "1",
        "--step",
        "1e-12",
    ]);
    assert!(message.contains("at most 1001"), "{message}");
    assert!(message.contains("raise --step to 0.001"), "{message}");
}

#[test]
fn explain_compares_a_record_with_itself_and_notes_only_after_an_answer() {
    let data = sample();
    let id = "stroke/id_0000010";
    let out = ok(&["explain", s(&data), id, id, "--method", "minhash", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["jaccard_exact"], 1.0, "{json}");
    let message = rejected(&["explain", s(&data), id, "nobody"]);
    assert!(message.contains("no record \"nobody\""), "{message}");
    assert!(!message.contains("note:"), "{message}");
}

/// A child running `script` (sh) in a mount namespace of its own, where `dir` is a tmpfs of
/// `mb` MB: a small disk to fill without touching the machine's. `unshare -rm` needs no root
/// where the kernel allows user namespaces. `$NEARDUP` is the binary; the script's last
/// command should `exec` it, so that the child is neardup itself.
fn on_small_disk(dir: &Path, mb: u32, script: &str) -> Command {
    std::fs::create_dir_all(dir).unwrap();
    let mount = format!("mount -t tmpfs -o size={mb}m tmpfs {} && {script}", s(dir));
    let mut command = Command::new("unshare");
    command
        .args(["-rm", "sh", "-euc", &mount])
        .env("NEARDUP", env!("CARGO_BIN_EXE_neardup"))
        .env("DISK", dir);
    command
}

/// Output of `script` run by [`on_small_disk`], checking that the disk was made.
fn run_on_small_disk(dir: &Path, mb: u32, script: &str) -> Output {
    let out = on_small_disk(dir, mb, script)
        .output()
        .expect("unshare (util-linux)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("unshare:") && !stderr.contains("mount:"),
        "cannot make a small disk here (unshare -rm, mount -t tmpfs): {stderr}"
    );
    out
}

#[test]
fn a_full_disk_is_an_error_naming_the_folder_never_a_sigbus() {
    let dir = tempfile::tempdir().unwrap();
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&sample(), &vectors);
    let disk = dir.path().join("disk");
    let index_args = format!(
        "index {} --embedder glove --glove {} -q",
        s(&sample()),
        s(&vectors)
    );
    // An index made on a disk too small for the engine's log.
    let out = run_on_small_disk(
        &disk,
        8,
        &format!("exec \"$NEARDUP\" {index_args} --index \"$DISK/idx\""),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("disk/idx/edge: opening the vector store needs about"),
        "{stderr}"
    );
    assert!(stderr.contains("free some space there"), "{stderr}");

    // A two-stage run whose temporary folder is that small: refused, nothing left behind.
    let out = run_on_small_disk(
        &disk,
        8,
        &format!(
            "TMPDIR=\"$DISK\" \"$NEARDUP\" dedup {} --embedder glove --glove {} --out {} -q \
             || echo \"exit $?\"; ls -A \"$DISK\"",
            s(&sample()),
            s(&vectors),
            s(&dir.path().join("out"))
        ),
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(
        stdout.trim(),
        "exit 1",
        "no scratch folder left: {stdout} {stderr}"
    );
    assert!(stderr.contains("another TMPDIR"), "{stderr}");

    // A kept index on a disk filled afterwards: a query says what to free.
    let out = run_on_small_disk(
        &disk,
        120,
        &format!(
            "\"$NEARDUP\" {index_args} --index \"$DISK/idx\"; \
             free=$(df -m \"$DISK\" | awk 'END {{print $4}}'); \
             fallocate -l $((free - 15))M \"$DISK/filler\"; \
             exec \"$NEARDUP\" query --index \"$DISK/idx\" --id stroke/id_0000010"
        ),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("opening the vector store needs about"),
        "{stderr}"
    );
}

#[test]
fn a_server_whose_disk_fills_refuses_writes_with_507_and_goes_on_reading() {
    let dir = tempfile::tempdir().unwrap();
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&sample(), &vectors);
    let disk = dir.path().join("disk");
    let mut child = on_small_disk(
        &disk,
        120,
        &format!(
            "\"$NEARDUP\" index {} --index \"$DISK/idx\" --embedder glove --glove {} -q >/dev/null; \
             exec \"$NEARDUP\" serve --index \"$DISK/idx\" --addr 127.0.0.1:0",
            s(&sample()),
            s(&vectors)
        ),
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let url = listening_url(&mut child);
    // The server's disk, as the server sees it.
    let seen =
        PathBuf::from(format!("/proc/{}/root", child.id())).join(disk.strip_prefix("/").unwrap());
    let filler = seen.join("filler");
    let fill = Command::new("sh")
        .args([
            "-euc",
            // statfs of the path itself: `df` would look the mount up in this namespace.
            "free=$(( $(stat -f -c '%a * %S / 1048576' \"$1\") )); \
             fallocate -l $((free - 20))M \"$1/filler\"",
            "sh",
            s(&seen),
        ])
        .status()
        .unwrap();
    assert!(fill.success());

    let post = |path: &str, body: &str| match ureq::post(&format!("{url}{path}")).send_string(body)
    {
        Ok(response) => (response.status(), response.into_string().unwrap()),
        Err(ureq::Error::Status(code, response)) => (code, response.into_string().unwrap()),
        Err(e) => panic!("{e}"),
    };
    let text = "a brand new record about rivers and the towns along them";
    let one = format!(r#"{{"id": "new", "text": "{text}"}}"#);
    let (status, body) = post("/documents", &one);
    assert_eq!(status, 507, "{body}");
    assert!(body.contains("free some space there"), "{body}");
    let array = format!(r#"[{{"id": "a1", "text": "{text}"}}, {{"id": "a2", "text": "{text}"}}]"#);
    let (status, body) = post("/documents", &array);
    assert_eq!(status, 507, "{body}");
    assert!(body.contains("nothing of the array was added"), "{body}");
    // Reads go on.
    let (status, body) = post("/similar", &format!(r#"{{"text": "{text}"}}"#));
    assert_eq!(status, 200, "{body}");
    let got = ureq::get(&format!("{url}/documents/stroke%2Fid_0000010"))
        .call()
        .unwrap();
    assert_eq!(got.status(), 200);
    // Space freed: the same write goes through.
    std::fs::remove_file(&filler).unwrap();
    let (status, body) = post("/documents", &one);
    assert_eq!(status, 201, "{body}");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_second_index_into_a_folder_being_built_names_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&sample(), &vectors);
    // A corpus that takes the first build several seconds.
    let corpus = dir.path().join("corpus.jsonl");
    ok(&["gen", "--docs", "20000", "--out", s(&corpus)]);
    let index = dir.path().join("idx");
    let build = [
        "index",
        s(&corpus),
        "--index",
        s(&index),
        "--embedder",
        "glove",
        "--glove",
        s(&vectors),
        "-q",
    ];
    let mut first = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(build)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !index.join("edge").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = neardup(&build);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("is in use by another neardup process (pid"),
        "{stderr}"
    );
    assert!(
        first.wait().unwrap().success(),
        "the first build is not disturbed"
    );
}

#[test]
fn a_pipeline_reads_its_paths_from_its_own_folder_and_names_a_missing_one() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("pipelines");
    std::fs::create_dir(&folder).unwrap();
    std::fs::copy(sample(), dir.path().join("sample.jsonl")).unwrap();
    let pipeline = folder.join("p.toml");
    let write = |input: &str| {
        std::fs::write(
            &pipeline,
            format!(
                "[input]\npaths = [\"{input}\"]\n[method]\nname = \"minhash\"\n\
                 [output]\ndir = \"../out\"\n"
            ),
        )
        .unwrap()
    };
    write("../missing.jsonl");
    let message = rejected(&["run", s(&pipeline)]);
    assert!(message.contains("p.toml:2: field `paths`"), "{message}");
    assert!(
        message.contains("missing.jsonl does not exist"),
        "{message}"
    );
    // Run from another folder, the paths are still the file's.
    write("../sample.jsonl");
    ok(&["run", s(&pipeline)]);
    assert!(dir.path().join("out/summary.json").is_file());
}

/// The schema of the Parquet file at `path` and its rows.
#[cfg(feature = "parquet")]
fn parquet_file(path: &Path) -> (arrow_schema::SchemaRef, usize) {
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(path).unwrap(),
    )
    .unwrap();
    let rows = builder.metadata().file_metadata().num_rows() as usize;
    (builder.schema().clone(), rows)
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_columns_of_every_arrow_type_pass_through_unchanged() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/parquet");
    let dir = tempfile::tempdir().unwrap();
    let columns = [
        "d32", "ts", "t64", "dur", "f16", "st", "dec", "mp", "ls", "i8", "dict", "nul",
    ];
    for column in columns {
        let input = folder.join(format!("{column}.parquet"));
        let out = dir.path().join(column);
        ok(&minhash_id_text(&[&input], &out, &["-q"]));
        let (schema, _) = parquet_file(&input);
        let (unique, kept) = parquet_file(&out.join("unique.parquet"));
        assert_eq!(unique, schema, "{column}: the input's schema, unchanged");
        assert_eq!(kept, 3, "{column}");
        let (annotated, rows) = parquet_file(&out.join("annotated.parquet"));
        assert_eq!(annotated.fields()[..3], schema.fields()[..], "{column}");
        assert_eq!((annotated.fields().len(), rows), (6, 6), "{column}");
        let again = dir.path().join(format!("{column}-again"));
        let annotated = out.join("annotated.parquet");
        let message = rejected(&minhash_id_text(&[&annotated], &again, &[]));
        assert!(message.contains("annotated copy"), "{column}: {message}");
        // As JSON Lines, every cell has a value of its own.
        let jsonl = dir.path().join(format!("{column}-jsonl"));
        ok(&minhash_id_text(
            &[&input],
            &jsonl,
            &["--out-format", "jsonl", "-q"],
        ));
        let first = std::fs::read_to_string(jsonl.join("unique.jsonl")).unwrap();
        let record: serde_json::Value =
            serde_json::from_str(first.lines().next().unwrap()).unwrap();
        assert!(record.get(column).is_some(), "{column}: {record}");
    }
}

#[test]
fn a_sigbus_says_the_disk_is_probably_full_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&sample(), &vectors);
    let index = dir.path().join("idx");
    let mut child = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(["serve", "--index", s(&index), "--addr", "127.0.0.1:0"])
        .args(["--embedder", "glove", "--glove", s(&vectors)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    listening_url(&mut child);
    // What the kernel sends when a page of a memory-mapped file cannot be backed.
    let sent = Command::new("kill")
        .args(["-BUS", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is probably full; free some"), "{stderr}");
}
