"""The package at its edges, as a user of semhash or datasketch meets them: bad rows in
memory, odd settings, labels in any format, an open index handed around, two threads adding
to one collection. Each failure names the row, column or keyword, and is an `Exception`."""

import csv
import json
import threading
from pathlib import Path

import pytest

import neardup

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "bibdedupe-sample.jsonl"


def sample_records():
    with open(SAMPLE) as f:
        return [json.loads(line) for line in f]


def pair_ids(result):
    pairs = result.pairs
    if hasattr(pairs, "to_dict"):
        pairs = pairs.to_dict("records")
    return sorted((p["id_a"], p["id_b"]) for p in pairs)


def words(n, seed):
    """`n` words of a text that no other seed's text shares many of."""
    return " ".join(f"w{seed}x{i}" for i in range(n))


def test_labels_in_a_file_score_data_held_in_memory(tmp_path):
    pd = pytest.importorskip("pandas")
    from_file = neardup.dedup(SAMPLE, method="minhash", quiet=True)
    in_memory = neardup.dedup(pd.DataFrame(sample_records()), method="minhash", quiet=True)
    scores = from_file.evaluate()
    assert in_memory.evaluate(truth=SAMPLE) == scores
    assert in_memory.evaluate(truth=str(SAMPLE), truth_id="core_id") == scores


def test_labels_in_csv_and_parquet_files_score_runs_of_them(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    records = sample_records()
    expected = neardup.dedup(SAMPLE, method="minhash", quiet=True).evaluate()
    as_csv = tmp_path / "s.csv"
    with open(as_csv, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(records[0]))
        writer.writeheader()
        for r in records:
            writer.writerow({**r, "labelled_duplicates": json.dumps(r["labelled_duplicates"])})
    as_parquet = tmp_path / "s.parquet"
    pd.DataFrame(records).to_parquet(as_parquet)
    for path in [as_csv, as_parquet]:
        assert neardup.dedup(path, method="minhash", quiet=True).evaluate() == expected, path


def test_rows_that_are_no_record_are_named_or_skipped():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {
            "id": ["a", None, "c", "d"],
            "text": [words(30, 1), words(30, 2), words(30, 1), "x" * 500],
        }
    )
    with pytest.raises(ValueError, match=r"row 1: column 'id' holds no id") as e:
        neardup.dedup(frame, method="minhash", quiet=True)
    assert "skip_invalid=True" in str(e.value) and "records.jsonl" not in str(e.value)
    with pytest.raises(ValueError, match=r"row 2, column 'text': the text is 500 bytes") as e:
        neardup.dedup(frame.drop(index=1), method="minhash", max_doc_bytes=400, quiet=True)
    message = str(e.value)
    assert "max_doc_bytes=" in message and "--" not in message and "scratch" not in message

    result = neardup.dedup(frame, method="minhash", skip_invalid=True, max_doc_bytes=400,
                           quiet=True)
    assert result.summary["skipped"] == 2
    assert any("row 1" in p for p in result.summary["skipped_first"])
    assert pair_ids(result) == [("a", "c")]
    # Skipped rows are in no group and not kept; the others keep their own rows.
    assert list(result.unique["id"]) == ["a"]
    assert list(result.annotated["neardup_keep"]) == [True, False, False, False]
    duplicate_of = result.annotated["neardup_duplicate_of"]
    assert [d if isinstance(d, str) else None for d in duplicate_of] == [None, None, "a", None]
    with pytest.raises(ValueError, match="max_doc_bytes=0"):
        neardup.dedup(frame, max_doc_bytes=0)
    with pytest.raises(TypeError, match="skip_invalid='yes'"):
        neardup.dedup(frame, skip_invalid="yes")


def test_text_that_is_not_unicode_and_bytes_are_read_by_row():
    texts = [words(30, 1), words(30, 1), words(30, 2)]
    broken = texts[:2] + ["bad \udc80 text"]
    with pytest.raises(ValueError, match=r"row 2: column 'text': text that is not valid Unicode"):
        neardup.dedup(broken, method="minhash", quiet=True)
    skipped = neardup.dedup(broken, method="minhash", skip_invalid=True, quiet=True)
    assert skipped.summary["skipped"] == 1 and pair_ids(skipped) == [("0", "1")]
    # Bytes are UTF-8 text, not their printed form.
    as_bytes = [{"id": str(i), "text": t.encode()} for i, t in enumerate(texts)]
    assert pair_ids(neardup.dedup(as_bytes, method="minhash", quiet=True)) == [("0", "1")]
    with pytest.raises(ValueError, match=r"row 1: column 'text': bytes that are not UTF-8"):
        neardup.dedup([{"id": "0", "text": b"ok"}, {"id": "1", "text": b"\xff"}], quiet=True)


def test_a_record_without_its_text_key_is_named_as_a_file_record_would_be():
    records = [{"id": "a", "text": words(20, 1)}, {"id": "b"}, {"id": "c", "text": None}]
    with pytest.raises(ValueError, match=r"row 1: the record has no key 'text'"):
        neardup.dedup(records, method="minhash", quiet=True)
    result = neardup.dedup(records, method="minhash", skip_invalid=True, quiet=True)
    assert result.summary["skipped"] == 1 and result.summary["documents"] == 2


def test_settings_that_are_no_number_are_named():
    for value in [float("nan"), float("inf")]:
        with pytest.raises(ValueError, match=rf"threshold={value!r}: give a finite number"):
            neardup.dedup(["a b c d"], threshold=value)
    with pytest.raises(TypeError, match="settings:"):
        neardup.dedup(["a b c d"], threshold=object())


def test_keep_by_a_column_of_data_held_in_memory():
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    text = words(30, 1)
    frame = pd.DataFrame({"id": ["a", "b", "c"], "text": [text, text, text], "n": [3, 9, 1]})
    for data in [frame, pa.Table.from_pandas(frame), frame.to_dict("records")]:
        for keep, kept in [("field:n:max", "b"), ("field:n:min", "c")]:
            unique = neardup.dedup(data, method="minhash", keep=keep, quiet=True).unique
            ids = unique["id"] if hasattr(unique, "columns") else [r["id"] for r in unique]
            if hasattr(ids, "to_pylist"):
                ids = ids.to_pylist()
            assert list(ids) == [kept], (type(data), keep)
    with pytest.raises(ValueError, match=r"keep='field:year:max': the data has no column 'year'"):
        neardup.dedup(frame, keep="field:year:max")
    with pytest.raises(ValueError, match="a list of strings has no fields"):
        neardup.dedup([text, text], keep="field:n:max")


def test_an_open_index_is_taken_where_its_folder_is(tmp_path):
    pd = pytest.importorskip("pandas")
    records = sample_records()
    collection, new = records[::2], records[1::2]
    index = neardup.Index.build(tmp_path / "idx", pd.DataFrame(collection), quiet=True)
    by_path = neardup.dedup(pd.DataFrame(new), against=tmp_path / "idx", quiet=True)
    by_index = neardup.dedup(pd.DataFrame(new), against=index, quiet=True)
    assert pair_ids(by_index) == pair_ids(by_path) and len(pair_ids(by_path)) > 20
    # Positions of the collection's records are missing, as whole numbers.
    assert str(by_index.pairs["a"].dtype) == "Int64"
    added = neardup.dedup(pd.DataFrame(new), against=index, add=True, quiet=True)
    assert added.summary["added"] > 0
    # The index is open again after the run, with the records added.
    kept = set(added.unique["core_id"])
    assert all(i in index for i in kept)
    index.close()
    with pytest.raises(ValueError, match="is closed"):
        neardup.dedup(pd.DataFrame(new), against=index, quiet=True)


def test_an_index_open_twice_in_one_process_says_so(tmp_path):
    index = neardup.Index.build(tmp_path / "idx", sample_records()[:50], quiet=True)
    with pytest.raises(OSError, match="in use elsewhere in this process"):
        neardup.Index(tmp_path / "idx")
    with pytest.raises(ValueError, match="give the text to look up, or id="):
        index.query()
    with pytest.raises(ValueError, match="not both"):
        index.query("a text", id="x")
    index.close()


def test_an_index_whose_folder_is_deleted_fails_as_an_exception(tmp_path, capfd):
    import shutil

    index = neardup.Index.build(tmp_path / "idx", sample_records()[:200], quiet=True)
    index.add([{"id": "new", "text": words(40, 3)}], text="text", id="id")
    shutil.rmtree(tmp_path / "idx")
    try:
        index.add([{"id": "newer", "text": words(40, 4)}], text="text", id="id")
        index.close()
    except Exception as e:  # noqa: BLE001: what matters is that it is one
        assert "panicked" not in str(e) and "failed unexpectedly" not in str(e), e
    assert "panicked" not in capfd.readouterr().err


def test_two_threads_adding_to_one_collection_never_both_add_a_record(tmp_path):
    records = sample_records()
    neardup.Index.build(tmp_path / "idx", records[:300], quiet=True).close()
    shared = [{"id": f"both-{i}", "text": words(40, 100 + i)} for i in range(20)]
    batches = [
        [{**r, "id": f"{name}-{r['id']}"} for r in shared]
        + [{"id": f"{name}-{i}", "text": words(40, seed * 1000 + i)} for i in range(30)]
        for seed, name in [(7, "one"), (8, "two")]
    ]
    results = [None, None]

    def add(slot):
        results[slot] = neardup.dedup(
            batches[slot], text="text", id="id", against=tmp_path / "idx", add=True, quiet=True
        )

    threads = [threading.Thread(target=add, args=(slot,)) for slot in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    added = sorted(r.summary["added"] for r in results)
    # The first adds its 50; the second finds the 20 shared texts in the collection.
    assert added == [30, 50], added
    with neardup.Index(tmp_path / "idx") as index:
        for i in range(20):
            assert (f"one-both-{i}" in index) != (f"two-both-{i}" in index), i
