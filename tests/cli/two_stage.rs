//! The two-stage method: `dedup` with embeddings, `index` and `query`.

use std::collections::HashSet;

use crate::common::*;

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
    let data = sample();
    let mut accuracies = Vec::new();
    let mut exact_pairs = Vec::new();
    for store in stores("two-stage") {
        eprintln!("store flags: {store:?}");
        let out = tempfile::tempdir().unwrap();
        let two_stage = out.path();
        let mut flags: Vec<&str> = store.iter().map(String::as_str).collect();
        // Through the engine's graph, not the cells a corpus this small is searched in.
        flags.extend(["--cells", "0"]);
        dedup_with_glove(&data, &vectors, two_stage, &flags);
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
        // The vector index proposes the pairs the LSH bands would and more (no banding
        // loss), so recall holds; on this sample the extra pairs above 0.7 are mostly
        // unlabelled, which costs about 0.012 in accuracy.
        let a = eval_json(&sample(), &minhash);
        let b = eval_json(&sample(), two_stage);
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
        accuracies.push(accuracy(&b));

        // A full scan finds the true top-k: the same pairs on every engine and every run.
        flags.push("--exact-search");
        dedup_with_glove(&data, &vectors, two_stage, &flags);
        exact_pairs.push(pair_ids(two_stage));
        dedup_with_glove(&data, &vectors, two_stage, &flags);
        assert_eq!(pair_ids(two_stage), exact_pairs[exact_pairs.len() - 1]);
    }
    // Every engine answers alike: within 0.002 through their graphs, exactly by a full scan.
    assert!(
        accuracies
            .iter()
            .all(|x| (x - accuracies[0]).abs() <= 0.002),
        "{accuracies:?}"
    );
    assert!(exact_pairs.iter().all(|p| p == &exact_pairs[0]));
    assert!(exact_pairs[0].len() > 100, "{}", exact_pairs[0].len());
}

/// Unless told, a corpus this small is searched in one cell, every document against every
/// other: the exact search's pairs, without MinHash's.
#[test]
fn the_default_search_of_a_small_corpus_finds_what_the_exact_search_finds() {
    let dir = tempfile::tempdir().unwrap();
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&sample(), &vectors);
    let run = |name: &str, flags: &[&str]| {
        let out = dir.path().join(name);
        dedup_with_glove(&sample(), &vectors, &out, flags);
        pair_ids(&out)
    };
    let exact = run("exact", &["--exact-search"]);
    assert!(exact.len() > 100, "{}", exact.len());
    assert_eq!(run("default", &[]), exact);
    let summary = |name: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(dir.path().join(name).join("summary.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    assert_eq!(
        summary("default")["cells"],
        1,
        "the summary says how it searched"
    );
    assert!(summary("exact").get("cells").is_none());
    // One cell told: MinHash's pairs join.
    let told = run("told", &["--cells", "1"]);
    assert!(exact.iter().all(|p| told.contains(p)));
}

#[test]
fn cells_probed_all_find_what_the_exact_search_finds_and_fewer_probes_still_find_most() {
    let dir = tempfile::tempdir().unwrap();
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&sample(), &vectors);
    let data = sample();
    let run = |name: &str, flags: &[&str]| {
        let out = dir.path().join(name);
        dedup_with_glove(&data, &vectors, &out, flags);
        out
    };
    let exact = pair_ids(&run("exact", &["--exact-search"]));
    let minhash = dir.path().join("minhash");
    ok(&[
        "dedup",
        s(&data),
        "--method",
        "minhash",
        "--out",
        s(&minhash),
        "-q",
    ]);
    let banded = pair_ids(&minhash);
    // Every cell probed: each document's (and title's) exact top k over all documents, and
    // the pairs the MinHash bands propose.
    let all = pair_ids(&run("all", &["--cells", "12", "--cell-probes", "12"]));
    let missed: Vec<_> = exact.iter().filter(|p| !all.contains(p)).collect();
    assert!(
        missed.is_empty(),
        "the exact search's {missed:?} are missing"
    );
    let added: Vec<_> = all.iter().filter(|p| !exact.contains(p)).collect();
    assert!(
        added.iter().all(|p| banded.contains(p)),
        "pairs neither search confirms: {added:?}"
    );
    let some = pair_ids(&run("some", &["--cells", "12", "--cell-probes", "2"]));
    let kept = some.iter().filter(|p| exact.contains(p)).count();
    assert!(
        kept as f64 >= 0.9 * exact.len() as f64,
        "{kept} of {} exact pairs",
        exact.len()
    );
    let summary = std::fs::read_to_string(dir.path().join("some/summary.json")).unwrap();
    assert!(summary.contains("\"cells\": 12"), "{summary}");
}

#[test]
fn the_minhash_bands_propose_the_near_copies_a_short_top_k_leaves_out() {
    // A record, an exact copy and a copy with one word changed: with one neighbour a
    // document, the search pairs the changed copy with one of the other two only. Within
    // cells, however many, the bands add the pair it leaves out (decision 0039).
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("copies.jsonl");
    let words = "robot assisted gait training improves walking speed and balance after \
                 stroke in a randomised controlled trial of adults living at home with \
                 physiotherapy twice a week for twelve weeks";
    let changed = words.replace("twelve", "eleven");
    let record = |id: &str, text: &str| {
        serde_json::json!({"core_id": id, "processed_title": "gait training", "processed_abstract": text})
            .to_string()
    };
    let lines = [
        record("a", words),
        record("b", words),
        record("c", &changed),
    ];
    std::fs::write(&data, lines.join("\n") + "\n").unwrap();
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&data, &vectors);
    let pairs = |name: &str, search: &[&str]| {
        let out = dir.path().join(name);
        dedup_with_glove_top(&data, &vectors, &out, "1", search);
        pair_ids(&out).len()
    };
    assert_eq!(pairs("exact", &["--exact-search"]), 2);
    assert_eq!(
        pairs("cells", &["--cells", "1"]),
        3,
        "the bands add the third pair"
    );
    assert_eq!(
        pairs("chosen", &[]),
        3,
        "the search chosen for three documents, one cell, takes the bands' pairs too"
    );
}

#[test]
fn records_that_share_a_title_share_what_their_title_finds() {
    // Two records under one title with different abstracts, and a third that is that title
    // alone: the title is searched once, and both records meet the title-only one.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("titles.jsonl");
    let record = |id: &str, abstract_: &str| {
        serde_json::json!({"core_id": id, "processed_title": "robot gait training after stroke",
                           "processed_abstract": abstract_})
        .to_string()
    };
    let lines = [
        record(
            "a",
            "a randomised trial of adults living at home with weekly physiotherapy",
        ),
        record(
            "b",
            "outcomes measured by walking speed balance and falls over twelve weeks",
        ),
        record("c", ""),
    ];
    std::fs::write(&data, lines.join("\n") + "\n").unwrap();
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&data, &vectors);
    let out = dir.path().join("out");
    let flags = ["--exact-search", "--candidates", "jsonl"];
    dedup_with_glove_top(&data, &vectors, &out, "1", &flags);
    let candidates = std::fs::read_to_string(out.join("candidates.jsonl")).unwrap();
    for pair in [r#""id_a":"a","id_b":"c""#, r#""id_a":"b","id_b":"c""#] {
        assert!(
            candidates.contains(pair),
            "{pair} missing from {candidates}"
        );
    }
}

#[test]
fn copies_of_a_record_that_many_hold_leave_their_title_to_the_first() {
    // 150 copies of one record, then that title alone: the copies are paired with the first,
    // and only the first with what the title finds; the title-only record still joins them.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("copies.jsonl");
    let title = "robot gait training after stroke";
    let record = |id: String, abstract_: &str| {
        serde_json::json!({"core_id": id, "processed_title": title, "processed_abstract": abstract_})
            .to_string()
    };
    let body = "a randomised trial of adults living at home with weekly physiotherapy";
    let mut lines: Vec<String> = (0..150)
        .map(|i| record(format!("copy{i:03}"), body))
        .collect();
    lines.push(record("title".into(), ""));
    std::fs::write(&data, lines.join("\n") + "\n").unwrap();
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&data, &vectors);
    let out = dir.path().join("out");
    let flags = ["--cells", "1", "--candidates", "jsonl"];
    dedup_with_glove_top(&data, &vectors, &out, "1", &flags);
    let candidates = std::fs::read_to_string(out.join("candidates.jsonl")).unwrap();
    let with_title: Vec<&str> = (candidates.lines())
        .filter(|line| line.contains(r#""id_b":"title""#))
        .collect();
    assert_eq!(with_title.len(), 1, "{with_title:?}");
    assert!(
        with_title[0].contains(r#""id_a":"copy000""#),
        "{with_title:?}"
    );
    let groups = std::fs::read_to_string(out.join("groups.jsonl")).unwrap();
    let group: serde_json::Value = serde_json::from_str(groups.trim()).unwrap();
    assert_eq!(group["size"], 151, "{groups}");
}

#[test]
fn with_cells_a_title_only_copy_minhash_proposes_is_scored_by_the_title_not_the_whole_record() {
    // A record with a long abstract, two copies of its title alone and one with a note: the
    // note's copy is third to the title (whose query takes two title-only hits at `--top-k 1`)
    // and far from the whole record's vector, yet MinHash proposes it under the same title,
    // and the title rule confirms it.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("titles.jsonl");
    let title = "robot gait training after stroke";
    let abstract_ = "a randomised trial of adults living at home with weekly physiotherapy \
        outcomes measured by walking speed balance and falls over twelve weeks in four \
        hospitals where patients who walked within two days of admission went home sooner \
        and more of them could dress wash and cook alone three months later without more \
        falls or other adverse events in either group";
    let record = |id: &str, title: &str, abstract_: &str| {
        serde_json::json!({"core_id": id, "processed_title": title, "processed_abstract": abstract_})
            .to_string()
    };
    let lines = [
        record("record", title, abstract_),
        record("title", title, ""),
        record("again", title, ""),
        record("noted", &format!("{title} [erratum]"), ""),
    ];
    std::fs::write(&data, lines.join("\n") + "\n").unwrap();
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&data, &vectors);
    let out = dir.path().join("out");
    let flags = ["--cells", "1", "--candidates", "jsonl"];
    dedup_with_glove_top(&data, &vectors, &out, "1", &flags);
    let pairs = pair_ids(&out);
    let noted = ("noted".to_owned(), "record".to_owned());
    let candidates = std::fs::read_to_string(out.join("candidates.jsonl")).unwrap();
    assert!(pairs.contains(&noted), "{pairs:?} {candidates}");
}

/// `neardup dedup DATA` with the GloVe `vectors`, 10 neighbours a document and `flags`, into
/// `out`.
fn dedup_with_glove(data: &Path, vectors: &Path, out: &Path, flags: &[&str]) {
    dedup_with_glove_top(data, vectors, out, "10", flags);
}

/// [`dedup_with_glove`] with `top_k` neighbours a document.
fn dedup_with_glove_top(data: &Path, vectors: &Path, out: &Path, top_k: &str, flags: &[&str]) {
    let mut args = vec![
        "dedup",
        s(data),
        "--embedder",
        "glove",
        "--glove",
        s(vectors),
        "--top-k",
        top_k,
        "--out",
        s(out),
        "-q",
    ];
    args.extend(flags);
    ok(&args);
}

/// The id pairs of the run in `run`, in file order.
fn pair_ids(run: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(run.join("pairs.jsonl"))
        .unwrap()
        .lines()
        .map(|line| {
            let pair: serde_json::Value = serde_json::from_str(line).unwrap();
            let id = |key: &str| pair[key].as_str().unwrap().to_owned();
            (id("id_a"), id("id_b"))
        })
        .collect()
}

#[test]
fn an_index_answers_queries_by_id_and_text_from_a_new_process() {
    let dir = tempfile::tempdir().unwrap();
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&sample(), &vectors);
    for store in stores("index") {
        eprintln!("store flags: {store:?}");
        let folder = tempfile::tempdir().unwrap();
        answer_queries(&folder.path().join("idx"), &vectors, &store);
    }
    let stderr = rejected(&["query", "--index", s(dir.path()), "--id", "x"]);
    assert!(stderr.contains("not a neardup index"), "{stderr}");
}

/// Indexes the sample in `index` (with `store`'s flags) and checks the answers of `query`.
fn answer_queries(index: &Path, vectors: &Path, store: &[String]) {
    let data = sample();
    let glove = ["--embedder", "glove", "--glove", s(vectors)];
    let mut args = vec!["index", s(&data), "--index", s(index), "-q"];
    args.extend(glove);
    args.extend(store.iter().map(String::as_str));
    ok(&args);

    // special_cases/id_0000001 and _0000002 are the same paper with a different title colon.
    let out = ok(&[
        "query",
        "--index",
        s(index),
        "--id",
        "special_cases/id_0000001",
        "--json",
    ]);
    let matches: Vec<serde_json::Value> = json_lines(&out);
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

    let text = first_sample_text();
    let out = ok(&["query", "--index", s(index), "--text", &text, "--json"]);
    let found: Vec<serde_json::Value> = json_lines(&out);
    // Its duplicate _0000002 ties with it at cosine 1, so either may come first.
    let own = found
        .iter()
        .take(2)
        .find(|m| m["id"] == "special_cases/id_0000001")
        .unwrap_or_else(|| panic!("{found:?}"));
    assert!(own["cosine"].as_f64().unwrap() > 0.999 && own["jaccard_estimate"] == 1.0);

    let stderr = rejected(&["query", "--index", s(index), "--id", "no-such-id"]);
    assert!(stderr.contains("no document \"no-such-id\""), "{stderr}");
    let mut again = vec!["index", s(&data), "--index", s(index)];
    again.extend(glove);
    assert!(rejected(&again).contains("already holds a neardup index"));
}

#[test]
fn a_centred_index_spreads_leaning_vectors_and_centres_its_queries_too() {
    let dir = tempfile::tempdir().unwrap();
    let vectors = dir.path().join("words.txt");
    word_vectors_around(&sample(), &vectors, 1.0);
    let text = first_sample_text();
    // The manifest, the query's cosine with the record itself, and its lowest cosine among the
    // 20 nearest.
    let build_and_ask = |centre: bool| {
        let index = dir.path().join(if centre { "centred" } else { "as-made" });
        let extra: &[&str] = if centre { &[] } else { &["--no-centre"] };
        index_sample_with_glove(&index, &vectors, extra);
        let manifest: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(index.join("neardup-index.json")).unwrap(),
        )
        .unwrap();
        let out = ok(&[
            "query",
            "--index",
            s(&index),
            "--text",
            &text,
            "--all",
            "--json",
        ]);
        let found: Vec<serde_json::Value> = json_lines(&out);
        let cosine = |m: &serde_json::Value| m["cosine"].as_f64().unwrap();
        let own = found
            .iter()
            .find(|m| m["id"] == "special_cases/id_0000001")
            .map(cosine);
        let lowest = found.iter().map(cosine).fold(f64::INFINITY, f64::min);
        assert_eq!(found.len(), 20, "{found:?}");
        (manifest, own, lowest)
    };

    // The graph of centred vectors is built on int8 codes; vectors as made keep full ones.
    let quantization = |index: &str| {
        let config = dir.path().join(index).join("edge/edge_config.json");
        let config: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(config).unwrap()).unwrap();
        config["vectors"][""]["quantization_config"].clone()
    };

    let (manifest, own, lowest) = build_and_ask(false);
    assert!(manifest.get("centred_on").is_none(), "{manifest}");
    assert!(quantization("as-made").is_null());
    assert!(own.unwrap() > 0.999);
    assert!(lowest > 0.9, "every vector leans the same way: {lowest}");

    let (manifest, own, centred_lowest) = build_and_ask(true);
    assert_eq!(manifest["format"], 8);
    assert_eq!(manifest["centre"], true);
    assert_eq!(manifest["centred_on"].as_array().map(Vec::len), Some(64));
    // The query is centred as the stored vectors were, so it still meets itself at 1.
    assert!(own.unwrap() > 0.999, "{own:?}");
    assert!(
        centred_lowest < lowest - 0.2,
        "centred neighbours spread out: {centred_lowest} against {lowest}"
    );
    assert_eq!(quantization("centred")["scalar"]["type"], "int8");
}

#[test]
fn an_index_too_small_to_learn_a_centre_from_keeps_its_vectors_as_made() {
    let dir = tempfile::tempdir().unwrap();
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&sample(), &vectors);
    let few = dir.path().join("few.jsonl");
    let sample_text = std::fs::read_to_string(sample()).unwrap();
    let lines: Vec<&str> = sample_text.lines().take(500).collect();
    std::fs::write(&few, lines.join("\n") + "\n").unwrap();
    let glove = ["--embedder", "glove", "--glove", s(&vectors), "--centre"];

    let index = dir.path().join("idx");
    let mut args = vec!["index", s(&few), "--index", s(&index), "-v"];
    args.extend(glove);
    let said = String::from_utf8_lossy(&ok(&args).stderr).into_owned();
    assert!(
        said.contains("too few documents to learn a centre from"),
        "{said}"
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(index.join("neardup-index.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["documents"], 500);
    assert!(manifest.get("centred_on").is_none(), "{manifest}");

    // A throwaway index that small is scanned: dedup says so and goes on uncentred.
    let out = dir.path().join("out");
    let mut args = vec!["dedup", s(&few), "--out", s(&out), "-v"];
    args.extend(glove);
    let stderr = String::from_utf8_lossy(&ok(&args).stderr).into_owned();
    assert!(
        stderr.contains("too few documents to learn a centre from"),
        "{stderr}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["documents"], 500);
}

/// A title query searches the title-only records alone: a corpus without one gets no candidate
/// from its titles, while a title-only copy is still found, and the run leaves no title-only
/// store behind.
#[test]
fn title_queries_search_only_the_records_that_are_a_title_alone() {
    let dir = tempfile::tempdir().unwrap();
    let generated = dir.path().join("generated.jsonl");
    ok(&[
        "gen",
        "--docs",
        "2000",
        "--seed",
        "3",
        "--out",
        s(&generated),
        "-q",
    ]);
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&generated, &vectors);
    // The records with an abstract, also with their text in one field.
    let mut titled = String::new();
    let mut first = None;
    for line in std::fs::read_to_string(&generated).unwrap().lines() {
        let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
        let field = |key: &str| record[key].as_str().unwrap_or("").to_owned();
        let (title, abstract_) = (field("processed_title"), field("processed_abstract"));
        if abstract_.is_empty() {
            continue;
        }
        first.get_or_insert((field("core_id"), title.clone()));
        record["text"] = format!("{title} {abstract_}").into();
        titled += &format!("{record}\n");
    }
    let titled_path = dir.path().join("titled.jsonl");
    std::fs::write(&titled_path, &titled).unwrap();
    let run = |input: &Path, name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut args = vec!["dedup", s(input), "--out", s(&out), "--exact-search", "-q"];
        args.extend([
            "--embedder",
            "glove",
            "--glove",
            s(&vectors),
            "--top-k",
            "3",
            "--candidates",
            "jsonl",
        ]);
        args.extend(extra);
        ok(&args);
        std::fs::read_to_string(out.join("candidates.jsonl")).unwrap()
    };
    let by_fields = run(&titled_path, "fields", &[]);
    let one_field = run(&titled_path, "one-field", &["--text-field", "text"]);
    let (by_fields, one_field) = (by_fields.lines().count(), one_field.lines().count());
    assert!(one_field > 1000, "{one_field}");
    // Copies made of the same words share a vector, and which of them a build keeps at the
    // k-th place varies, so the pairs may differ; their number may not. Title queries among
    // every document would add about one and a half times as many.
    assert!(
        by_fields.abs_diff(one_field) * 100 <= one_field,
        "the titles added candidates: {by_fields} against {one_field}"
    );

    // A copy of the first record that has its title only is proposed by that title.
    let (id, title) = first.unwrap();
    let copy = serde_json::json!({
        "core_id": "copy/title-only",
        "processed_title": title,
        "processed_abstract": "",
    });
    let with_copy = dir.path().join("with-copy.jsonl");
    std::fs::write(&with_copy, format!("{titled}{copy}\n")).unwrap();
    let index = dir.path().join("idx");
    let found = run(&with_copy, "with-copy", &["--index", s(&index)]);
    let proposed = found.lines().any(|line| {
        let pair: serde_json::Value = serde_json::from_str(line).unwrap();
        let ids = [
            pair["id_a"].as_str().unwrap(),
            pair["id_b"].as_str().unwrap(),
        ];
        ids.contains(&id.as_str()) && ids.contains(&"copy/title-only")
    });
    assert!(proposed, "{id} and its title-only copy are no candidate");
    let mut kept: Vec<String> = std::fs::read_dir(&index)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    kept.sort();
    assert_eq!(kept, ["edge", "neardup-index.json", "snapshot.bin"]);
}

/// Scratch folders of neardup under `tmp`.
fn scratch_dirs(tmp: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("neardup-scratch-")
        })
        .collect()
}

#[test]
fn the_temporary_index_is_removed_on_sigterm_and_a_killed_runs_at_the_next_start() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let data = shared_data();
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&data, &vectors);
    // What a run killed with SIGKILL leaves: a scratch folder whose lock no one holds.
    let killed = tmp.join("neardup-scratch-killed");
    std::fs::create_dir_all(killed.join("edge")).unwrap();
    std::fs::write(killed.join(".owner.lock"), "").unwrap();

    let out = dir.path().join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args([
            "dedup",
            s(&data),
            "--embedder",
            "glove",
            "--glove",
            s(&vectors),
            "--out",
            s(&out),
            "-q",
        ])
        .env("TMPDIR", &tmp)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the run's own scratch folder, then stop it as a service manager would.
    let started = std::time::Instant::now();
    while !scratch_dirs(&tmp).iter().any(|d| d != &killed) {
        assert!(
            started.elapsed().as_secs() < 60,
            "no scratch folder appeared"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        !killed.exists(),
        "the killed run's folder is swept at start"
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: kill(2) with a child's pid and a signal number has no memory effects.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    if status.success() {
        // The run finished before the signal came: nothing to test about the signal here,
        // but its folder must still be gone.
        eprintln!("the run ended before SIGTERM");
    } else {
        assert_eq!(status.code(), Some(130), "{stderr}");
        assert_eq!(
            stderr
                .matches("interrupted: temporary files removed")
                .count(),
            1,
            "said once: {stderr}"
        );
    }
    assert_eq!(scratch_dirs(&tmp), Vec::<PathBuf>::new());
}

#[test]
fn four_parts_of_a_split_run_merge_into_the_files_of_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let vectors = dir.path().join("words.txt");
    random_word_vectors(&sample(), &vectors);
    let data = sample();
    for store in stores("parts") {
        eprintln!("store flags: {store:?}");
        let work = tempfile::tempdir().unwrap();
        let at = |name: &str| work.path().join(name);
        let mut settings = vec!["--embedder", "glove", "--glove", s(&vectors), "-q"];
        settings.extend(store.iter().map(String::as_str));
        let index = at("idx");
        ok(&[&["index", s(&data), "--index", s(&index)], &settings[..]].concat());

        // Four parts and one part over the same shared index give the same files, whether
        // they search its graph or scan it. (Two builds of an index may break ties between
        // identical vectors at the k-th place differently, so an ordinary run, which builds
        // an index of its own, is compared on its groups.)
        for exact in [false, true] {
            let mut flags = settings.clone();
            if exact {
                flags.push("--exact-search");
            }
            let run_part = |part: &str, out: &Path| {
                let args = ["dedup", s(&data), "--index", s(&index), "--part", part];
                ok(&[&args[..], &["--out", s(out)], &flags[..]].concat());
            };
            let parts: Vec<PathBuf> = (1..=4).map(|i| at(&format!("part{i}-{exact}"))).collect();
            for (i, part) in parts.iter().enumerate() {
                run_part(&format!("{}/4", i + 1), part);
            }
            let merged = at(&format!("merged-{exact}"));
            let mut args = vec!["merge"];
            args.extend(parts.iter().map(|p| s(p)));
            ok(&[&args[..], &["--out", s(&merged), "-q"]].concat());

            let one = at(&format!("one-part-{exact}"));
            run_part("1/1", &one);
            let whole = at(&format!("whole-{exact}"));
            ok(&["merge", s(&one), "--out", s(&whole), "-q"]);
            let read = |run: &Path, file: &str| std::fs::read(run.join(file)).unwrap();
            for file in [
                "pairs.jsonl",
                "candidates.parquet",
                "groups.jsonl",
                "unique.jsonl",
            ] {
                assert!(
                    read(&merged, file) == read(&whole, file),
                    "{file} differs (exact: {exact})"
                );
            }
            if exact {
                // Its own index: on a server, a collection of its own.
                let own: Vec<String> = store
                    .iter()
                    .map(|flag| match flag.starts_with("parts-") {
                        true => format!("{flag}-ordinary"),
                        false => flag.clone(),
                    })
                    .collect();
                let ordinary = at("ordinary");
                let mut args = vec!["dedup", s(&data), "--out", s(&ordinary), "--exact-search"];
                args.extend(["--embedder", "glove", "--glove", s(&vectors), "-q"]);
                args.extend(own.iter().map(String::as_str));
                ok(&args);
                for file in ["groups.jsonl", "unique.jsonl"] {
                    assert!(
                        read(&merged, file) == read(&ordinary, file),
                        "{file} differs"
                    );
                }
            }
            assert!(pair_ids(&merged).len() > 100, "{}", pair_ids(&merged).len());
            // Each part wrote only its slice's candidates, and no groups.
            let part_pairs = pair_ids(&parts[0]);
            assert!(!part_pairs.is_empty() && part_pairs.len() < pair_ids(&merged).len());
            assert!(!parts[0].join("groups.jsonl").exists());

            let stderr = rejected(&[&args[..3], &["--out", s(&at("x"))]].concat());
            assert!(stderr.contains("part 3/4, 4/4 missing"), "{stderr}");
            let stderr = rejected(&["merge", s(&parts[0]), s(&whole), "--out", s(&at("x"))]);
            assert!(
                stderr.contains("is not the output of `neardup dedup --part"),
                "{stderr}"
            );
        }
        let stderr = rejected(
            &[
                &["dedup", s(&data), "--index", s(&index), "--part", "1/2"][..],
                &["--threshold", "0.6", "--out", s(&at("x"))],
                &settings[..],
            ]
            .concat(),
        );
        assert!(stderr.contains("built with `threshold` 0.8"), "{stderr}");
    }
    let stderr = rejected(&["dedup", s(&data), "--part", "3/2", "--out", s(dir.path())]);
    assert!(stderr.contains("--part must be I/N"), "{stderr}");
}

#[test]
fn a_batch_checked_against_a_kept_collection_finds_the_pairs_a_run_over_both_finds() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let vectors = at("words.txt");
    random_word_vectors(&sample(), &vectors);
    // Every fifth record arrives later, as a new batch.
    let lines: Vec<String> = std::fs::read_to_string(sample())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let (new, old): (Vec<_>, Vec<_>) = lines.iter().enumerate().partition(|(i, _)| i % 5 == 0);
    let write = |name: &str, part: &[(usize, &String)]| {
        let text: String = part.iter().map(|(_, line)| format!("{line}\n")).collect();
        std::fs::write(at(name), text).unwrap();
    };
    let (old_file, new_file) = (at("old.jsonl"), at("new.jsonl"));
    write("old.jsonl", &old);
    write("new.jsonl", &new);
    let id_of = |line: &String| -> String {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        record["core_id"].as_str().unwrap().to_owned()
    };
    let new_ids: HashSet<String> = new.iter().map(|(_, line)| id_of(line)).collect();
    let glove = ["--embedder", "glove", "--glove", s(&vectors), "-q"];

    let index = at("idx");
    let kept = at("kept");
    let args = [
        "dedup",
        s(&old_file),
        "--index",
        s(&index),
        "--out",
        s(&kept),
    ];
    ok(&[&args[..], &glove[..]].concat());
    let whole = at("whole");
    ok(&[&["dedup", s(&sample()), "--out", s(&whole)], &glove[..]].concat());
    let batch = at("batch");
    let against = ["dedup", s(&new_file), "--against", s(&index)];
    ok(&[&against[..], &["--out", s(&batch)], &glove[..]].concat());

    // The pairs a run over both finds that touch a new record, and nothing else.
    let touching = |run: &Path| -> HashSet<(String, String)> {
        pair_ids(run)
            .into_iter()
            .filter(|(a, b)| new_ids.contains(a) || new_ids.contains(b))
            .collect()
    };
    let (expected, found) = (touching(&whole), touching(&batch));
    assert_eq!(
        found.len(),
        pair_ids(&batch).len(),
        "only pairs with a new record"
    );
    let shared = expected.intersection(&found).count();
    let with_collection = found
        .iter()
        .filter(|(a, b)| !new_ids.contains(a) || !new_ids.contains(b))
        .count();
    assert!(
        with_collection > 20,
        "{with_collection} pairs with the collection"
    );
    assert!(
        shared * 100 >= expected.len() * 95 && found.len() - shared <= expected.len() / 50,
        "{shared} of {} pairs found, {} more",
        expected.len(),
        found.len() - shared
    );

    // A record that matches the collection is not kept, and its group keeps the collection's.
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(batch.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["documents"], new.len());
    let unique: HashSet<String> = std::fs::read_to_string(batch.join("unique.jsonl"))
        .unwrap()
        .lines()
        .map(|line| id_of(&line.to_owned()))
        .collect();
    assert_eq!(summary["unique"], unique.len());
    for (a, b) in &found {
        let (new_one, old_one) = match new_ids.contains(a) {
            true => (a, b),
            false => (b, a),
        };
        if !new_ids.contains(old_one) {
            assert!(!unique.contains(new_one), "{new_one} duplicates {old_one}");
        }
    }
    let groups = std::fs::read_to_string(batch.join("groups.jsonl")).unwrap();
    for line in groups.lines() {
        let group: serde_json::Value = serde_json::from_str(line).unwrap();
        let members = group["members"].as_array().unwrap();
        if members
            .iter()
            .any(|m| !new_ids.contains(m.as_str().unwrap()))
        {
            assert!(
                !new_ids.contains(group["kept"].as_str().unwrap()),
                "{group}"
            );
        }
    }

    // Building the index wrote its snapshot, which the runs read: the same files.
    let snapshot = index.join("snapshot.bin");
    assert!(snapshot.exists());
    let again = at("again");
    ok(&[&against[..], &["--out", s(&again)], &glove[..]].concat());
    for file in ["pairs.jsonl", "groups.jsonl", "unique.jsonl"] {
        let read = |run: &Path| std::fs::read(run.join(file)).unwrap();
        assert!(read(&batch) == read(&again), "{file} differs");
    }
    let good = std::fs::read(&snapshot).unwrap();
    // Cut short, a block zeroed, bytes changed among the vectors, a tail added: each is
    // refused by name, never read as other vectors and sketches.
    let mut zeroed = good.clone();
    zeroed[good.len() / 3..good.len() / 3 + 4096].fill(0);
    let mut changed = good.clone();
    for at in (good.len() / 2..good.len() / 2 + 64).step_by(7) {
        changed[at] ^= 0x5a;
    }
    let damaged = [
        good[..good.len() / 2].to_vec(),
        zeroed,
        changed,
        [good.clone(), vec![7; 100]].concat(),
    ];
    for bytes in damaged {
        std::fs::write(&snapshot, bytes).unwrap();
        let stderr = rejected(&[&against[..], &["--out", s(&at("x"))], &glove[..]].concat());
        assert!(
            stderr.contains("snapshot.bin")
                && stderr.contains("damaged")
                && stderr.contains("delete it"),
            "{stderr}"
        );
    }
    // A snapshot an earlier version wrote is read as none, and written again from the store.
    for version in ["1", "2", "3", "4"] {
        let earlier = format!("neardup snapshot {version}\nwhat an earlier version wrote");
        std::fs::write(&snapshot, earlier).unwrap();
        let earlier = at(&format!("earlier-{version}"));
        ok(&[&against[..], &["--out", s(&earlier)], &glove[..]].concat());
        let written = std::fs::read(&snapshot).unwrap();
        assert!(written.starts_with(b"neardup snapshot 5\n"));
        assert_eq!(written.len(), good.len(), "the same documents");
        assert_eq!(pair_ids(&earlier), pair_ids(&batch));
    }

    // Within cells of the collection (and MinHash's proposals across), nearly as many.
    let in_cells = at("in-cells");
    let args = ["--cells", "4", "--out", s(&in_cells)];
    ok(&[&against[..], &args[..], &glove[..]].concat());
    let found = touching(&in_cells);
    let shared = expected.intersection(&found).count();
    assert!(
        shared * 100 >= expected.len() * 90 && found.len() - shared <= expected.len() / 50,
        "in cells: {shared} of {} pairs found, {} more",
        expected.len(),
        found.len() - shared
    );
    // The cells were kept beside the snapshot, and the next run reads them: the same files.
    let cells = index.join("cells.bin");
    let kept_cells = std::fs::read(&cells).unwrap();
    let cells_again = at("cells-again");
    ok(&[
        &against[..],
        &["--cells", "4", "--out", s(&cells_again)],
        &glove[..],
    ]
    .concat());
    for file in ["pairs.jsonl", "candidates.parquet", "groups.jsonl"] {
        let read = |run: &Path| std::fs::read(run.join(file)).unwrap();
        assert!(read(&in_cells) == read(&cells_again), "{file} differs");
    }
    std::fs::write(&cells, &kept_cells[..kept_cells.len() / 2]).unwrap();
    let refused = at("refused");
    let args = ["--cells", "4", "--out", s(&refused)];
    let stderr = rejected(&[&against[..], &args[..], &glove[..]].concat());
    assert!(
        stderr.contains("cells.bin") && stderr.contains("delete it"),
        "{stderr}"
    );
    std::fs::write(&cells, &kept_cells).unwrap();

    // With --add, the kept new records join the collection and later queries find them.
    let added = at("added");
    let out = ok(&[&against[..], &["--add", "--out", s(&added)], &glove[..]].concat());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("{} new records added", unique.len())),
        "{stdout}"
    );
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(index.join("neardup-index.json")).unwrap()).unwrap();
    assert_eq!(manifest["documents"], old.len() + unique.len());
    // The snapshot was written again with the records added: it answers as the store does.
    assert!(snapshot.exists());
    let (from_snapshot, from_store) = (at("from-snapshot"), at("from-store"));
    ok(&[&against[..], &["--out", s(&from_snapshot)], &glove[..]].concat());
    std::fs::remove_file(&snapshot).unwrap();
    ok(&[&against[..], &["--out", s(&from_store)], &glove[..]].concat());
    assert_eq!(pair_ids(&from_snapshot), pair_ids(&from_store));
    // Added again, the records replace themselves: the copy would hold them twice, and goes.
    let again_added = at("again-added");
    let args = ["--add", "--out", s(&again_added)];
    ok(&[&against[..], &args[..], &glove[..]].concat());
    assert!(!snapshot.exists(), "a write removes the snapshot");
    assert!(!cells.exists(), "and its cells");
    let one = unique.iter().next().unwrap();
    let out = ok(&[
        "query",
        "--index",
        s(&index),
        "--id",
        one,
        "--all",
        "--json",
    ]);
    assert!(!json_lines(&out).is_empty());

    // The run takes the collection's settings, and nothing that builds or splits an index.
    let stderr = rejected(
        &[
            &against[..],
            &["--out", s(&at("x")), "--num-perm", "64"],
            &glove[..],
        ]
        .concat(),
    );
    assert!(stderr.contains("was built with `num_perm` 128"), "{stderr}");
    let stderr = rejected(
        &[
            &against[..],
            &["--index", s(&at("y")), "--out", s(&at("x"))],
            &glove[..],
        ]
        .concat(),
    );
    assert!(stderr.contains("give --against alone"), "{stderr}");
    let stderr = rejected(&["dedup", s(&sample()), "--add", "--out", s(&at("x"))]);
    assert!(stderr.contains("give --against too"), "{stderr}");
}

/// A batch's record that is a title and nothing else is far from the whole vector of the
/// collection's record it copies, and near its title's: the index keeps the title vectors, so
/// the batch finds every such copy a run over both finds.
#[test]
fn a_batch_finds_its_title_only_copies_of_the_collections_records() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let all = at("all.jsonl");
    ok(&[
        "gen",
        "--docs",
        "3000",
        "--seed",
        "5",
        "--out",
        s(&all),
        "-q",
    ]);
    let vectors = at("words.txt");
    random_word_vectors(&all, &vectors);
    let glove = ["--embedder", "glove", "--glove", s(&vectors), "-q"];
    let lines: Vec<String> = std::fs::read_to_string(&all)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let (mut new_file, mut old_file) = (String::new(), String::new());
    let (mut new_ids, mut title_only) = (HashSet::new(), HashSet::new());
    for (i, line) in lines.iter().enumerate() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = record["core_id"].as_str().unwrap().to_owned();
        if record["processed_abstract"]
            .as_str()
            .unwrap_or_default()
            .is_empty()
        {
            title_only.insert(id.clone());
        }
        match i % 5 {
            0 => {
                new_ids.insert(id);
                new_file += &format!("{line}\n");
            }
            _ => old_file += &format!("{line}\n"),
        }
    }
    let (new, old) = (at("new.jsonl"), at("old.jsonl"));
    std::fs::write(&new, new_file).unwrap();
    std::fs::write(&old, old_file).unwrap();
    let index = at("idx");
    let args = ["dedup", s(&old), "--index", s(&index)];
    ok(&[&args[..], &["--out", s(&at("kept"))], &glove[..]].concat());
    ok(&[&["dedup", s(&all), "--out", s(&at("whole"))], &glove[..]].concat());
    let args = ["dedup", s(&new), "--against", s(&index)];
    ok(&[&args[..], &["--out", s(&at("batch"))], &glove[..]].concat());

    let touching = |run: &str| -> HashSet<(String, String)> {
        pair_ids(&at(run))
            .into_iter()
            .filter(|(a, b)| new_ids.contains(a) || new_ids.contains(b))
            .collect()
    };
    let (whole, batch) = (touching("whole"), touching("batch"));
    // A title-only record of the batch and a collection's record with an abstract.
    let title_copies = |pairs: &HashSet<(String, String)>| -> HashSet<(String, String)> {
        pairs
            .iter()
            .filter(|(a, b)| {
                let (new_one, old_one) = if new_ids.contains(a) { (a, b) } else { (b, a) };
                !new_ids.contains(old_one)
                    && title_only.contains(new_one)
                    && !title_only.contains(old_one)
            })
            .cloned()
            .collect()
    };
    let expected = title_copies(&whole);
    assert!(expected.len() >= 5, "{} title-only copies", expected.len());
    let missed: Vec<_> = expected.difference(&batch).collect();
    assert!(missed.is_empty(), "missed {missed:?}");
    // The run read the title vectors from the snapshot the build wrote; without it, from the
    // store, where they are kept too.
    std::fs::remove_file(index.join("snapshot.bin")).unwrap();
    ok(&[&args[..], &["--out", s(&at("from-store"))], &glove[..]].concat());
    assert_eq!(pair_ids(&at("batch")), pair_ids(&at("from-store")));
    let shared = whole.intersection(&batch).count();
    assert!(
        shared * 100 >= whole.len() * 99 && batch.len() - shared <= whole.len() / 100,
        "{shared} of {} pairs found, {} more",
        whole.len(),
        batch.len() - shared
    );
}

#[test]
fn two_processes_adding_to_one_collection_never_both_add_a_record() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let text = |seed: usize| {
        (0..30)
            .map(|i| format!("w{seed}x{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let record = |id: String, seed: usize| {
        serde_json::json!({"core_id": id, "processed_title": "", "processed_abstract": text(seed)})
            .to_string()
            + "\n"
    };
    // Two batches that share 20 texts under other ids, and hold 30 of their own each.
    let batches: Vec<PathBuf> = [("one", 7), ("two", 8)]
        .iter()
        .map(|&(name, own)| {
            let shared = (0..20).map(|i| record(format!("{name}-both-{i}"), 100 + i));
            let own = (0..30).map(|i| record(format!("{name}-{i}"), own * 1000 + i));
            let path = at(&format!("{name}.jsonl"));
            std::fs::write(&path, shared.chain(own).collect::<String>()).unwrap();
            path
        })
        .collect();
    // Word vectors for every word of the sample and of both batches.
    let every = at("every.jsonl");
    let mut words = std::fs::read_to_string(sample()).unwrap();
    for batch in &batches {
        words.push_str(&std::fs::read_to_string(batch).unwrap());
    }
    std::fs::write(&every, words).unwrap();
    let vectors = at("words.txt");
    random_word_vectors(&every, &vectors);
    let index = at("idx");
    index_sample_with_glove(&index, &vectors, &[]);

    let adding: Vec<_> = batches
        .iter()
        .enumerate()
        .map(|(i, batch)| {
            std::process::Command::new(env!("CARGO_BIN_EXE_neardup"))
                .args([
                    "dedup",
                    s(batch),
                    "--against",
                    s(&index),
                    "--add",
                    "--embedder",
                    "glove",
                    "--glove",
                    s(&vectors),
                    "--out",
                    s(&at(&format!("out{i}"))),
                ])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut added: Vec<u64> = adding
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let line = stdout
                .lines()
                .find(|l| l.contains("new records added"))
                .unwrap();
            line.split_whitespace().next().unwrap().parse().unwrap()
        })
        .collect();
    added.sort_unstable();
    // The first adds its 50; the second finds the 20 shared texts in the collection.
    assert_eq!(added, [30, 50]);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(index.join("neardup-index.json")).unwrap()).unwrap();
    assert_eq!(manifest["documents"], 1304 + 80);
}

#[test]
fn each_distinct_text_is_embedded_once_and_its_copies_get_what_embedding_them_gives() {
    // 3,000 texts, each at i, i + 3,000 and i + 6,000: a third of the copies come after the
    // first batch of 8,192 documents, which embedded their text.
    let dir = tempfile::tempdir().unwrap();
    let word = |n: u64| format!("w{}", n % 700);
    let record = |id: usize, text: usize, pad: &str| {
        let mut state = text as u64 * 2_654_435_761 + 1;
        let mut words = Vec::new();
        for _ in 0..17 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            words.push(word(state >> 33));
        }
        words[0] = format!("t{text}");
        let (title, abstract_) = words.split_at(5);
        serde_json::json!({
            "core_id": format!("d{id}"),
            "processed_title": title.join(" "),
            "processed_abstract": abstract_.join(" ") + pad,
        })
        .to_string()
    };
    // The same corpus without exact copies: each copy ends in one or two spaces, which neither
    // the words embedded nor the shingles see.
    let corpus = |name: &str, pad: &str| {
        let path = dir.path().join(name);
        let lines: Vec<String> = (0..9000)
            .map(|id| record(id, id % 3000, &pad.repeat(id / 3000)))
            .collect();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        path
    };
    let copies = corpus("copies.jsonl", "");
    let distinct = corpus("distinct.jsonl", " ");
    let vectors = dir.path().join("words.txt");
    word_vectors_around(&copies, &vectors, 0.1);
    let run = |data: &Path, out: &Path| {
        let args = [
            "dedup",
            s(data),
            "--embedder",
            "glove",
            "--glove",
            s(&vectors),
        ];
        let output = ok(&[&args[..], &["--out", s(out), "-v"]].concat());
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let (once, each) = (dir.path().join("once"), dir.path().join("each"));
    // Every copy kept as one took its first's vector (a copy read at once with its first, on
    // another thread, is signed and embedded anew: `confirm/copies.rs`).
    let count = |log: &str, key: &str| -> usize {
        let at = log
            .find(&format!(" {key}="))
            .unwrap_or_else(|| panic!("{key}: {log}"));
        let digits = log[at + key.len() + 2..].split(|c: char| !c.is_ascii_digit());
        digits.take(1).collect::<String>().parse().unwrap()
    };
    let log = run(&copies, &once);
    let reused = count(&log, "vectors_reused");
    assert!(reused > 5000 && reused == count(&log, "copies"), "{log}");
    let log = run(&distinct, &each);
    assert_eq!(count(&log, "vectors_reused"), 0, "{log}");
    for file in ["pairs.jsonl", "candidates.parquet", "groups.jsonl"] {
        let read = |run: &Path| std::fs::read(run.join(file)).unwrap();
        assert!(read(&once) == read(&each), "{file} differs");
    }
    let groups = std::fs::read_to_string(once.join("groups.jsonl")).unwrap();
    assert_eq!(
        groups.lines().count(),
        3000,
        "each text's three records are one group"
    );
}
