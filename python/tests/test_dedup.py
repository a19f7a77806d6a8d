"""neardup.dedup as users call it: every input type, results in the input's own type, the
command line's findings and files, errors as Python exceptions, the interpreter left free."""

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import neardup

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "bibdedupe-sample.jsonl"
CORE = ROOT.parent / "shared" / "data" / "bibdedupe-core.jsonl"
# The command line the tests built (`cargo test` runs first in .ci/run).
CLI = ROOT / "target" / "debug" / "neardup"
# The annotated copy's columns, as the command line names them (src/output/records/mod.rs).
ANNOTATION_COLUMNS = ["neardup_group", "neardup_keep", "neardup_duplicate_of"]


def sample_records():
    with open(SAMPLE) as f:
        return [json.loads(line) for line in f]


def pair_ids(result):
    pairs = result.pairs
    for rows in ("to_dicts", "to_pylist"):  # polars, pyarrow
        if hasattr(pairs, rows):
            pairs = getattr(pairs, rows)()
    if hasattr(pairs, "to_dict"):  # pandas
        pairs = pairs.to_dict("records")
    return sorted((p["id_a"], p["id_b"]) for p in pairs)


@pytest.fixture(scope="module")
def from_file():
    return neardup.dedup(SAMPLE, method="minhash", quiet=True)


def test_a_file_finds_what_the_command_line_finds(tmp_path, from_file):
    if not CLI.exists():
        pytest.skip(f"{CLI} is not built: run `cargo test` or `cargo build` first")
    out = tmp_path / "cli"
    subprocess.run(
        [CLI, "dedup", SAMPLE, "--method", "minhash", "--out", out, "-q"], check=True
    )
    written = tmp_path / "py"
    summary = from_file.write(written)
    assert summary["pairs"] == from_file.summary["pairs"] > 0
    for name in ["pairs.jsonl", "candidates.parquet", "groups.jsonl", "unique.jsonl",
                 "annotated.jsonl"]:
        assert (written / name).read_bytes() == (out / name).read_bytes(), name
    # Left out as the command line's --no-annotate and --candidates none leave them out.
    lean = tmp_path / "lean"
    from_file.write(lean, annotate=False, candidates=None)
    assert sorted(p.name for p in lean.iterdir() if p.suffix in (".jsonl", ".parquet")) == [
        "groups.jsonl", "pairs.jsonl", "unique.jsonl"]
    assert (lean / "pairs.jsonl").read_bytes() == (out / "pairs.jsonl").read_bytes()
    # Candidates as JSON lines, as --candidates jsonl writes them.
    lines = tmp_path / "lines"
    subprocess.run([CLI, "dedup", SAMPLE, "--method", "minhash", "--out", lines, "-q",
                    "--candidates", "jsonl"], check=True)
    from_file.write(tmp_path / "py-lines", candidates="jsonl")
    name = "candidates.jsonl"
    assert (tmp_path / "py-lines" / name).read_bytes() == (lines / name).read_bytes()
    with pytest.raises(ValueError, match="candidates=.csv.: give"):
        from_file.write(tmp_path / "bad", candidates="csv")


def test_every_input_type_gives_the_same_pairs(from_file):
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    pa = pytest.importorskip("pyarrow")
    expected = pair_ids(from_file)
    assert len(expected) == from_file.summary["pairs"] > 100
    records = sample_records()
    frame = pd.DataFrame(records)
    table = pa.Table.from_pylist(records)
    inputs = {
        "path as str": str(SAMPLE),
        "list of paths": [SAMPLE],
        "dicts": records,
        "pandas": frame,
        "polars": pl.DataFrame(records),
        "arrow table": table,
        "arrow batch": table.combine_chunks().to_batches()[0],
        "arrow reader": pa.RecordBatchReader.from_batches(table.schema, table.to_batches()),
    }
    for name, data in inputs.items():
        result = neardup.dedup(data, method="minhash", quiet=True)
        assert pair_ids(result) == expected, name
        assert result.summary["groups"] == from_file.summary["groups"], name


def test_a_datasets_dataset_gives_the_same_pairs(from_file):
    datasets = pytest.importorskip("datasets")
    dataset = datasets.Dataset.from_list(sample_records())
    result = neardup.dedup(dataset, method="minhash", quiet=True)
    assert pair_ids(result) == pair_ids(from_file)
    assert len(result.unique) == from_file.summary["unique"]
    assert type(result.unique) is type(dataset)


def test_tables_hand_their_text_columns_over_through_arrow_without_python_lists(from_file):
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    pa = pytest.importorskip("pyarrow")
    datasets = pytest.importorskip("datasets")
    records = sample_records()
    table = pa.Table.from_pylist(records)
    tables = {
        "pandas": pd.DataFrame(records),
        "polars (string_view)": pl.DataFrame(records),
        "arrow, 7 chunks": pa.Table.from_batches(table.to_batches(max_chunksize=500)),
        "arrow, large_string": table.cast(
            pa.schema([f.with_type(pa.large_string()) if f.type == pa.string() else f
                       for f in table.schema])
        ),
        # Rows taken through an indices mapping, as `select` and `shuffle` leave a dataset.
        "datasets, reordered": datasets.Dataset.from_list(records).select(
            range(len(records) - 1, -1, -1)
        ),
    }
    for name, data in tables.items():
        handed = neardup._Records.of(data, None, None)
        assert handed.arrow is not None, name
        assert neardup._neardup.Records.from_arrow(
            handed.arrow().__arrow_c_stream__(), handed.id_name, handed.text_names
        ) is not None, name
        result = neardup.dedup(data, method="minhash", quiet=True)
        assert pair_ids(result) == pair_ids(from_file), name
        assert result.summary["groups"] == from_file.summary["groups"], name
    assert result.ids == [r["core_id"] for r in reversed(records)]

    # Handed over through Arrow, the ids and texts never become Python lists.
    handed = neardup._Records.of(table, None, None)
    assert handed.handed_over() is not None
    assert handed._ids is None and handed._columns is None

    # Ids numbered across chunks; a missing id named by its row across chunks.
    texts = [r["processed_abstract"] or "" for r in records]
    chunked = pa.Table.from_batches(pa.table({"text": texts}).to_batches(max_chunksize=1000))
    result = neardup.dedup(chunked, method="minhash", quiet=True)
    assert result.ids == [str(i) for i in range(len(texts))]
    assert pair_ids(result) == pair_ids(neardup.dedup(texts, method="minhash", quiet=True))
    ids = pa.chunked_array([["a", "b"], ["c", None]])
    with pytest.raises(ValueError, match="row 3: column 'id' holds no id"):
        neardup.dedup(pa.table({"id": ids, "text": ["x y", "x y", "z", "w"]}), quiet=True)

    # A column of another type goes through Python, printed as Python prints it.
    numbers = pa.table({"id": [1.0, 2.0, 3.0], "text": [1.5, 1.5, 2.5]})
    handed = neardup._Records.of(numbers, None, None)
    assert neardup._neardup.Records.from_arrow(
        handed.arrow().__arrow_c_stream__(), handed.id_name, handed.text_names
    ) is None
    result = neardup.dedup(numbers, method="jaccard", quiet=True, threshold=0.5)
    assert result.ids == ["1", "2", "3"]


def test_unique_and_annotated_come_back_in_the_input_type(from_file):
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    pa = pytest.importorskip("pyarrow")
    records = sample_records()
    kept = {g["kept"] for g in from_file.groups}
    in_groups = {m for g in from_file.groups for m in g["members"]}
    expected_ids = [
        r["core_id"] for r in records if r["core_id"] not in in_groups or r["core_id"] in kept
    ]
    unique_count = from_file.summary["unique"]
    assert len(expected_ids) == unique_count

    frame = pd.DataFrame(records).set_index("core_id", drop=False)
    result = neardup.dedup(frame, method="minhash", quiet=True)
    unique = result.unique
    assert isinstance(unique, pd.DataFrame)
    assert list(unique["core_id"]) == expected_ids
    assert list(unique.index) == expected_ids, "rows keep their index"
    assert list(unique.columns) == list(frame.columns), "every column comes back"
    annotated = result.annotated
    assert list(annotated.columns[-3:]) == ANNOTATION_COLUMNS
    assert annotated["neardup_keep"].sum() == unique_count
    first = result.groups.iloc[0]
    member = annotated.loc[first["members"][1]]
    assert member["neardup_group"] == 0
    assert member["neardup_duplicate_of"] == first["kept"]

    polars_frame = pl.DataFrame(records)
    result = neardup.dedup(polars_frame, method="minhash", quiet=True)
    assert isinstance(result.unique, pl.DataFrame)
    assert result.unique["core_id"].to_list() == expected_ids
    assert result.annotated.columns[-3:] == ANNOTATION_COLUMNS
    assert isinstance(result.pairs, pl.DataFrame)

    table = pa.Table.from_pylist(records)
    result = neardup.dedup(table, method="minhash", quiet=True)
    assert isinstance(result.unique, pa.Table)
    assert result.unique.column("core_id").to_pylist() == expected_ids
    assert result.annotated.schema.names[-3:] == ANNOTATION_COLUMNS

    result = neardup.dedup(records, method="minhash", quiet=True)
    assert [r["core_id"] for r in result.unique] == expected_ids
    assert result.unique[0] is records[0], "the records themselves, not copies"


def test_a_list_of_texts_with_and_without_ids():
    texts = [
        "the quick brown fox jumps over the lazy dog near the river bank today",
        "the quick brown fox jumps over the lazy dog near the river bank today!",
        "an entirely different sentence about reading records in a library catalogue",
    ]
    result = neardup.dedup(texts, method="minhash", quiet=True, threshold=0.5)
    assert pair_ids(result) == [("0", "1")]
    assert result.unique == [texts[0], texts[2]]
    result = neardup.dedup(texts, id=["a", "b", "c"], method="minhash", quiet=True, threshold=0.5)
    assert pair_ids(result) == [("a", "b")]
    assert [r["id"] for r in result.annotated] == ["a", "b", "c"]
    assert [r["neardup_duplicate_of"] for r in result.annotated] == [None, "a", None]


def test_the_default_method_is_the_command_lines():
    result = neardup.dedup(SAMPLE, quiet=True)
    assert result.summary["method"]["name"] == "two-stage"
    # The README's figure for the sample: 528 pairs.
    assert result.summary["pairs"] == 528


def test_errors_are_python_exceptions_with_the_command_lines_messages(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.jsonl"):
        neardup.dedup(tmp_path / "missing.jsonl", method="minhash")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"core_id": "a", "processed_title": "x", "processed_abstract": "y"}\n{oops\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2"):
        neardup.dedup(bad, method="minhash")
    with pytest.raises(ValueError, match="threshold"):
        neardup.dedup(SAMPLE, method="minhash", threshold=7)
    with pytest.raises(ValueError, match="top_k"):
        neardup.dedup(SAMPLE, method="minhash", top_k=5)
    with pytest.raises(ValueError, match="no method is called"):
        neardup.dedup(SAMPLE, method="fuzzy")
    with pytest.raises(ValueError, match="text='body'"):
        neardup.dedup([{"id": "1", "title": "x"}], text="body")
    with pytest.raises(ValueError, match="which column holds the text"):
        neardup.dedup([{"id": "1", "title": "x"}])
    with pytest.raises(TypeError, match="cannot deduplicate"):
        neardup.dedup(42)
    with pytest.raises(ValueError, match="names the field of a file's records"):
        neardup.dedup(SAMPLE, id=["a"], method="minhash")
    with pytest.raises(ValueError, match="one id for each text"):
        neardup.dedup(["a", "b"], id=["1"])


def test_a_long_run_leaves_the_interpreter_free():
    data = CORE if CORE.exists() else SAMPLE
    done = []
    worker = threading.Thread(
        target=lambda: done.append(neardup.dedup(data, method="minhash", quiet=True))
    )
    ticks = 0
    started = time.perf_counter()
    worker.start()
    while worker.is_alive():
        time.sleep(0.001)
        ticks += 1
    elapsed = time.perf_counter() - started
    assert done, "the run finished"
    # Had the run held the interpreter, this thread would have woken once or twice.
    assert ticks > min(50, elapsed * 100), (ticks, elapsed)


def test_explain_gives_the_command_lines_evidence_and_verdict(from_file):
    pair = from_file.pairs[0]
    explained = from_file.explain(pair["id_a"], pair["id_b"])
    assert explained["verdict"]["duplicate"] is True
    assert explained["evidence"]["jaccard"] == pytest.approx(pair["jaccard_estimate"])
    assert explained["a"]["id"] == pair["id_a"] and explained["rule_means"]
    assert isinstance(explained["diff"], str)
    unmatched = from_file.explain(from_file.ids[0], from_file.ids[-1])
    assert unmatched["verdict"]["duplicate"] is False
    with pytest.raises(ValueError, match='no record "nobody"'):
        from_file.explain("nobody", pair["id_b"])
    if not CLI.exists():
        pytest.skip(f"{CLI} is not built: run `cargo test` or `cargo build` first")
    printed = subprocess.run(
        [CLI, "explain", "--method", "minhash", "--json", SAMPLE, pair["id_a"], pair["id_b"]],
        check=True, capture_output=True, text=True,
    ).stdout
    del explained["diff"]  # printed as text, not in the JSON
    assert json.loads(printed) == explained


def test_rethreshold_decides_the_candidates_again_as_a_run_at_that_threshold(tmp_path):
    # The banding fixed, so that every threshold proposes the same candidates.
    fixed = dict(method="minhash", bands=32, rows=4, quiet=True)
    first = neardup.dedup(SAMPLE, threshold=0.8, **fixed)
    rules = {p["rule"] for p in first.pairs}
    assert rules and rules <= {"jaccard", "containment", "title"}
    counts = []
    for threshold in (0.6, 0.9, 0.8):
        again = first.rethreshold(threshold)
        fresh = neardup.dedup(SAMPLE, threshold=threshold, **fixed)
        assert again.pairs == fresh.pairs
        assert again.groups == fresh.groups
        # The files a run at that threshold writes, byte for byte.
        again.write(tmp_path / f"again-{threshold}")
        fresh.write(tmp_path / f"fresh-{threshold}")
        for name in ["pairs.jsonl", "candidates.parquet", "groups.jsonl", "unique.jsonl",
                     "annotated.jsonl"]:
            written = (tmp_path / f"again-{threshold}" / name).read_bytes()
            assert written == (tmp_path / f"fresh-{threshold}" / name).read_bytes(), name
        assert again.summary["threshold"] == threshold == again.summary["method"]["threshold"]
        assert again.summary["candidates"] == first.summary["candidates"]
        counts.append(len(again.pairs))
    assert counts[0] > counts[2] > counts[1]
    # explain weighs a pair at the threshold of the result asked.
    lower = first.rethreshold(0.6)
    gained = [p for p in lower.pairs if p["rule"] == "jaccard" and p["jaccard_estimate"] < 0.8]
    assert gained
    pair = gained[0]
    assert lower.explain(pair["id_a"], pair["id_b"])["verdict"]["duplicate"] is True
    assert first.explain(pair["id_a"], pair["id_b"])["verdict"]["duplicate"] is False
    # The exact methods raise their threshold and refuse to lower it.
    exact = neardup.dedup(SAMPLE, method="jaccard", threshold=0.6, quiet=True)
    raised = exact.rethreshold(0.8)
    assert raised.pairs == neardup.dedup(SAMPLE, method="jaccard", threshold=0.8, quiet=True).pairs
    assert {p["rule"] for p in raised.pairs} == {"jaccard"}
    with pytest.raises(ValueError, match="run it again at 0.5"):
        exact.rethreshold(0.5)
    with pytest.raises(ValueError, match="from 0 to 1"):
        first.rethreshold(1.5)


def test_evaluate_scores_as_the_command_line_from_any_labels(tmp_path, from_file):
    scores = from_file.evaluate()
    assert 0.9 < scores["accuracy"] <= 1 and scores["macro_f1"] > 0.9
    by_pairs = from_file.evaluate(predicted="pairs")
    assert by_pairs["documents"] == scores["documents"] == len(from_file.ids)
    if not CLI.exists():
        pytest.skip(f"{CLI} is not built: run `cargo test` or `cargo build` first")
    out = tmp_path / "cli"
    subprocess.run(
        [CLI, "dedup", SAMPLE, "--method", "minhash", "--out", out, "-q"], check=True
    )
    for predicted, expected in [("groups", scores), ("pairs", by_pairs)]:
        subprocess.run(
            [CLI, "eval", "--truth", SAMPLE, "--pred", out, "--predicted", predicted,
             "--json", tmp_path / "eval.json"],
            check=True, capture_output=True,
        )
        assert json.loads((tmp_path / "eval.json").read_text()) == expected, predicted
    # The same labels held in Python: a DataFrame's own columns, or a dict of id to duplicates.
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(sample_records())
    assert neardup.dedup(frame, method="minhash", quiet=True).evaluate() == scores
    labels = {r["core_id"]: r["labelled_duplicates"] for r in sample_records()}
    texts = [r["processed_title"] + " " + r["processed_abstract"] for r in sample_records()]
    of_texts = neardup.dedup(texts, id=list(labels), method="minhash", quiet=True)
    assert of_texts.evaluate(labels)["documents"] == len(labels)
    del labels[next(iter(labels))]
    with pytest.raises(ValueError, match="have no labels in truth"):
        of_texts.evaluate(labels)
    with pytest.raises(ValueError, match="no 'labelled_duplicates' column"):
        of_texts.evaluate()
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"core_id": "x", "labelled_duplicates": []}) + "\n")
    with pytest.raises(ValueError, match="read other documents than the 1 labelled here"):
        from_file.evaluate(other)
    with pytest.raises(ValueError, match="predicted"):
        from_file.evaluate(predicted="both")


def test_an_index_checks_new_records_against_a_collection_across_processes(tmp_path):
    pd = pytest.importorskip("pandas")
    records = sample_records()
    # Every other record kept, the rest new: the sample's duplicates sit side by side.
    collection, batch = pd.DataFrame(records[::2]), pd.DataFrame(records[1::2])
    kept = set(collection["core_id"])
    with neardup.Index.build(tmp_path / "idx", collection, quiet=True) as index:
        found = index.deduplicate(batch)
        assert list(found.columns) == ["id", "duplicate_of", "cosine", "jaccard_estimate", "rule"]
        assert set(found["id"]) <= set(batch["core_id"]) and set(found["duplicate_of"]) <= kept
        # Most labelled duplicates across the two halves are found.
        labelled = {
            (r["core_id"], d) for r in records[1::2] for d in r["labelled_duplicates"]
            if d in kept
        }
        found_pairs = set(zip(found["id"], found["duplicate_of"]))
        assert len(labelled) > 20 and len(labelled & found_pairs) / len(labelled) > 0.8
        # Looked up a batch at a time, each record finds what it finds asked alone.
        for r in records[1::2][:40]:
            text = " ".join(t for t in (r["processed_title"], r["processed_abstract"]) if t)
            alone = {m["id"] for m in index.query(text)}
            assert alone == {d for n, d in found_pairs if n == r["core_id"]}, r["core_id"]
        # A file of the same records finds the same, read as dedup reads files.
        batch_file = tmp_path / "batch.jsonl"
        batch_file.write_text("".join(json.dumps(r) + "\n" for r in records[1::2]))
        of_file = index.deduplicate(batch_file)
        assert sorted((m["id"], m["duplicate_of"]) for m in of_file) == sorted(found_pairs)
        # Added one by one, the batch also meets its own earlier records.
        added = index.add(batch)
        added_pairs = set(zip(added["id"], added["duplicate_of"]))
        assert len(found_pairs & added_pairs) > 0.9 * len(found_pairs)
        assert any(d not in kept for d in added["duplicate_of"])
        first = batch.iloc[0]
        assert first["core_id"] in index
        text = first["processed_title"] + " " + first["processed_abstract"]
        asked = index.query(text, all=True)
        assert asked[0]["id"] == first["core_id"] and asked[0]["duplicate"]
    # The command line reads what Python wrote, and answers the same.
    cli_built = CLI.exists()
    if cli_built:
        printed = subprocess.run(
            [CLI, "query", "--index", tmp_path / "idx", "--text", text, "--all", "--json"],
            check=True, capture_output=True, text=True,
        ).stdout
        assert [json.loads(line) for line in printed.splitlines()] == asked
    # So does another Python process, which removes a record for this one to see gone.
    script = (
        "import json, sys, neardup; index = neardup.Index(sys.argv[1]); "
        "print(json.dumps([sys.argv[2] in index, index.remove([sys.argv[2], 'nobody'])]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, tmp_path / "idx", first["core_id"]],
        check=True, capture_output=True, text=True,
    ).stdout
    assert json.loads(out) == [True, 1]
    reopened = neardup.Index(tmp_path / "idx")
    assert first["core_id"] not in reopened
    assert reopened.query(id=batch.iloc[1]["core_id"], all=True)
    with pytest.raises(ValueError, match="not both"):
        reopened.query("text", id="x")
    reopened.close()
    with pytest.raises(ValueError, match="is closed"):
        reopened.query("anything")
    if not cli_built:
        pytest.skip(f"{CLI} is not built: the command line's answer was not compared")


def test_a_batch_checked_against_a_collection_finds_what_the_command_line_finds(tmp_path):
    pd = pytest.importorskip("pandas")
    records = sample_records()
    # Every other record kept, the rest new: the sample's duplicates sit side by side.
    collection, new = records[::2], records[1::2]
    kept = {r["core_id"] for r in collection}
    new_file = tmp_path / "new.jsonl"
    new_file.write_text("".join(json.dumps(r) + "\n" for r in new))
    neardup.Index.build(tmp_path / "idx", pd.DataFrame(collection), quiet=True).close()

    result = neardup.dedup(pd.DataFrame(new), against=tmp_path / "idx", quiet=True)
    summary = result.summary
    assert summary["documents"] == len(new) and summary["collection_reached"] > 0
    pairs = result.pairs
    batch_ids = {r["core_id"] for r in new}
    crossing = [
        (a, b) for a, b in zip(pairs["id_a"], pairs["id_b"]) if (a in kept) != (b in kept)
    ]
    assert len(crossing) > 20
    assert all(a in batch_ids or b in batch_ids for a, b in zip(pairs["id_a"], pairs["id_b"]))
    # A collection record has no position among the records given.
    assert pairs["a"].isna().sum() + pairs["b"].isna().sum() == len(crossing)
    # A duplicate of the collection is not kept, and names the record kept in its place.
    unique = set(result.unique["core_id"])
    annotated = result.annotated.set_index("core_id")
    for a, b in crossing:
        duplicate = a if a in batch_ids else b
        assert duplicate not in unique
        assert annotated.loc[duplicate, "neardup_keep"] == False  # noqa: E712
    assert summary["unique"] == len(unique)
    assert len(result.annotated) == len(new)
    # The same run from the command line pairs the same records.
    if CLI.exists():
        out = tmp_path / "cli"
        subprocess.run(
            [CLI, "dedup", new_file, "--against", tmp_path / "idx", "--out", out, "-q"],
            check=True,
        )
        with open(out / "pairs.jsonl") as f:
            printed = sorted((p["id_a"], p["id_b"]) for p in map(json.loads, f))
        assert printed == pair_ids(result)

    with pytest.raises(ValueError, match="give `against` too"):
        neardup.dedup(new, add=True, quiet=True)
    added = neardup.dedup(new_file, against=tmp_path / "idx", add=True, quiet=True)
    assert added.summary["added"] == len(unique)
    with neardup.Index(tmp_path / "idx") as index:
        assert all(i in index for i in unique)
        assert not any(r["core_id"] in index for r in new if r["core_id"] not in unique)
    if not CLI.exists():
        pytest.skip(f"{CLI} is not built: the command line's answer was not compared")


def test_ctrl_c_stops_a_run_and_the_interpreter_goes_on():
    # A run long enough to be interrupted (tens of seconds in a debug build), then another.
    script = """
import os, signal, threading, time, neardup
texts = [f"record {i} " + " ".join(f"w{(i * 7 + j * 13) % 5000}" for j in range(80))
         for i in range(300000)]
threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
start = time.monotonic()
try:
    neardup.dedup(texts, method="minhash")
    print("finished", time.monotonic() - start)
except KeyboardInterrupt:
    print("interrupted", time.monotonic() - start)
print(neardup.dedup(["one two three four", "one two three four"], quiet=True).summary["pairs"])
"""
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True, timeout=300
    ).stdout.split()
    assert out[0] == "interrupted", out
    assert float(out[1]) < 6.0, out
    assert out[2] == "1", out


def test_ctrl_c_stops_a_call_in_another_thread_while_short_calls_come_and_go():
    # A short call that returns after Ctrl-C must not take the request from the long one.
    script = """
import os, signal, threading, time, neardup
texts = [f"record {i} " + " ".join(f"w{(i * 7 + j * 13) % 5000}" for j in range(80))
         for i in range(300000)]
outcome = []
def long_run():
    start = time.monotonic()
    try:
        neardup.dedup(texts, method="minhash", quiet=True)
        outcome.append(("finished", time.monotonic() - start))
    except KeyboardInterrupt:
        outcome.append(("interrupted", time.monotonic() - start))
worker = threading.Thread(target=long_run)
worker.start()
threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
short, stopped = 0, 0
deadline = time.monotonic() + 4
while time.monotonic() < deadline:
    try:
        neardup.dedup(["one two three four", "one two three four"], method="minhash", quiet=True)
        short += 1
    except KeyboardInterrupt:
        stopped += 1
worker.join()
print(outcome[0][0], outcome[0][1], short, stopped)
"""
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True, timeout=300
    ).stdout.split()
    assert out[0] == "interrupted", out
    assert float(out[1]) < 8.0, out
    assert int(out[2]) + int(out[3]) > 0, out


def test_progress_is_drawn_by_tqdm_where_no_terminal_shows_it_unless_quiet():
    pytest.importorskip("tqdm")
    # stderr is a pipe here, as in a notebook: the library's own bars are not drawn.
    script = """
import sys, neardup
texts = [f"record {i} " + " ".join(f"w{(i * 7 + j * 13) % 5000}" for j in range(80))
         for i in range(100000)]
neardup.dedup(texts, method="minhash", quiet=sys.argv[1] == "quiet")
"""
    def stderr(mode):
        return subprocess.run(
            [sys.executable, "-c", script, mode], check=True, capture_output=True, text=True,
            timeout=300,
        ).stderr

    drawn = stderr("bars")
    assert "sketching" in drawn and "%|" in drawn, drawn[-2000:]
    assert "%|" not in stderr("quiet")


def test_train_fits_a_model_that_dedup_reads_and_labels_of_one_class_are_refused(tmp_path):
    model_path = tmp_path / "model.json"
    model = neardup.train(SAMPLE, model_path, quiet=True)
    assert json.loads(model_path.read_text()) == model
    assert model["fitted_on"][0]["truth"] == "bibdedupe-sample.jsonl"
    assert model["fitted_on"][0]["duplicates"] > 100
    result = neardup.dedup(SAMPLE, match="meaning", confirm_model=model_path, quiet=True)
    assert result.pairs and all(p["probability"] >= 0.5 for p in result.pairs)
    assert result.evaluate()["macro_f1"] > 0.9
    unlabelled = tmp_path / "unlabelled.jsonl"
    with open(unlabelled, "w") as f:
        for record in sample_records():
            f.write(json.dumps({**record, "labelled_duplicates": []}) + "\n")
    with pytest.raises(ValueError, match="0 of them duplicates"):
        neardup.train(unlabelled, tmp_path / "none.json", quiet=True)
    # From a prior, labels of one class move it and are not refused.
    moved = neardup.train(unlabelled, tmp_path / "moved.json", prior="shipped", quiet=True)
    shipped = json.loads((ROOT / "src" / "confirm" / "meaning-model.json").read_text())
    assert moved["fitted_on"][:-1] == shipped["fitted_on"]
    assert moved["fitted_on"][-1]["truth"] == "unlabelled.jsonl"
    assert moved["intercept"] < shipped["intercept"]
    with pytest.raises(ValueError, match="nothing.json"):
        neardup.train(SAMPLE, tmp_path / "x.json", prior=tmp_path / "nothing.json", quiet=True)
