"""neardup from Python: find duplicate and near-duplicate records in the data you hold.

    import neardup

    result = neardup.dedup(df, text="abstract", id="doc_id", method="minhash")
    result.unique      # df's rows kept: one per group, and every row in no group
    result.annotated   # df with each row's group, whether it is kept, and what it duplicates
    result.pairs       # the duplicate pairs and their scores
    result.groups      # the groups, each with its representative and the member kept
    result.evaluate()  # accuracy and macro-F1 against labelled duplicates (CORE 2020)

    index = neardup.Index.build("idx/", df)       # a collection kept on disk (`neardup index`)
    index.deduplicate(new_df)                      # each new record's duplicates in it
    index.add(new_df)                              # the same, adding the records as they go
    neardup.dedup(new_df, against="idx/", add=True)  # a whole run over new_df, and against idx/

`data` is a path (a `str` or `pathlib.Path`, or a list of `Path`s) to JSONL, CSV, TSV,
Parquet, a .txt of one document a line, a folder or a .zip of text files; a list of strings or of dicts; a pandas or polars
DataFrame; a pyarrow Table, RecordBatch or RecordBatchReader; or a Hugging Face
`datasets.Dataset`. Results come back in the input's own type. The run is the command line's
own (`neardup dedup`), in this process: the same methods, settings (keyword arguments, named
as in a pipeline file), results and error messages, raised as `ValueError` or `OSError`.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import threading
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _neardup

__version__: str = _neardup.__version__
__all__ = ["dedup", "train", "Result", "Index"]

# The CORE Deduplication Dataset 2020 layout, read unless told otherwise (as the command line).
CORE_ID = "core_id"
CORE_TEXT = ["processed_title", "processed_abstract"]
CORE_LABELS, CORE_CAT = "labelled_duplicates", "cat"

GROUP_COLUMN, KEEP_COLUMN, DUPLICATE_OF_COLUMN = _neardup.ANNOTATION_COLUMNS

Text = Union[str, Sequence[str], None]


def dedup(
    data: Any,
    text: Text = None,
    id: Union[str, Sequence[Any], None] = None,
    method: str = "two-stage",
    *,
    keep: str = "representative",
    skip_invalid: bool = False,
    max_doc_bytes: Optional[int] = None,
    quiet: bool = False,
    **settings: Any,
) -> "Result":
    """Finds the duplicate groups in `data`.

    text: the field or column holding each record's text, or several (joined with a space,
        the first taken as the title). Default: the CORE layout's title and abstract where
        the data has them, else `text`.
    id: the field or column holding each record's id (default: `core_id` where present,
        else `id`, else the record's position). For a list of strings, a list of ids.
    method: "two-stage" (embeddings, then MinHash), "minhash", "jaccard", "resemblance" or
        "simhash".
    keep: which member of a group is kept: "representative", "first", "longest", or
        "field:NAME:max" / "field:NAME:min" (the largest or smallest value of a field or
        column, e.g. "field:year:max").
    skip_invalid: skip bad records (a row without an id, a text over `max_doc_bytes`, text
        that is not Unicode; counted in the summary) instead of stopping at the first.
    max_doc_bytes: the longest text read, in bytes (default 16 MiB); a longer one is a bad
        record.
    quiet: no progress bars.
    settings: the method's settings, named as in a pipeline file (threshold=0.8, top_k=20).
        Two-stage also takes `against=`, an index folder (`neardup index`, `Index.build`) or
        an open `Index`: the records are checked against its collection too, as `neardup
        dedup NEW --against PATH` does. Pairs and groups then name its records (with no
        position), `unique` holds the records it lacks, and with `add=True` those are added
        to it. An open `Index` is closed for the run and opened again after it.
    """
    _check_reading(skip_invalid, max_doc_bytes)
    against = settings.get("against")
    settings_json = _settings_json(settings)
    records = _Records.of(data, text, id, keep)
    with _lent(against), _Progress(quiet):
        if records.paths is not None:
            text_fields, id_field = _file_fields(text, id)
            run = _neardup.dedup_files(
                records.paths,
                method,
                settings_json,
                id_field,
                text_fields,
                keep,
                skip_invalid,
                max_doc_bytes,
                quiet,
            )
        else:
            run = _neardup.dedup_records(
                records.handed_over(), method, settings_json, keep, skip_invalid, max_doc_bytes,
                quiet,
            )
    return Result(run, records)


def train(
    truth: Union[str, os.PathLike, Sequence[Union[str, os.PathLike]]],
    out: Union[str, os.PathLike],
    text: Text = None,
    id: Optional[str] = None,
    *,
    prior: Optional[Union[str, os.PathLike]] = None,
    quiet: bool = False,
    **settings: Any,
) -> Dict[str, Any]:
    """Fits the learned confirm rule to labelled duplicates, as `neardup train` does, and
    writes the model file to `out`; returns the model (its weights, and what it was fitted on).

        neardup.train("labelled.jsonl", "model.json")
        neardup.dedup(df, match="meaning", confirm_model="model.json")

    truth: a labelled file in the CORE layout (`core_id`, `labelled_duplicates` and the text
        fields), or a list of them: each is searched as two-stage searches, and every
        candidate pair is labelled by whether the labels join its two records.
    text, id: the fields holding each record's text and id (the CORE layout's by default).
    prior: a model file to start from, or "shipped" (the model fitted on paraphrase sets): the
        labels move it as far as they are evidence against it. None: fitted from nothing.
    settings: two-stage settings that find the candidates (embedder=, top_k=, ...), named as
        in a pipeline file.
    """
    truths = [truth] if isinstance(truth, (str, os.PathLike)) else list(truth)
    text_fields, id_field = _file_fields(text, id)
    with _Progress(quiet):
        model = _neardup.train(
            [os.fspath(t) for t in truths], os.fspath(out), _settings_json(settings), id_field,
            text_fields, None if prior is None else os.fspath(prior), quiet,
        )
    return json.loads(model)


def _check_reading(skip_invalid: Any, max_doc_bytes: Any) -> None:
    """Refuses reading options of the wrong type, naming the keyword."""
    if not isinstance(skip_invalid, bool):
        raise TypeError(f"skip_invalid={skip_invalid!r}: give True or False")
    if max_doc_bytes is not None and (
        not isinstance(max_doc_bytes, int) or isinstance(max_doc_bytes, bool) or max_doc_bytes < 1
    ):
        raise ValueError(f"max_doc_bytes={max_doc_bytes!r}: give a number of bytes, at least 1")


class _lent:
    """While a run reads the collection of an open `Index` given as `against=`: the index
    closed (its writes flushed, its store free for the run to read and add to), and opened
    again after. Anything else given is left as it is."""

    def __init__(self, against: Any):
        self._index = against if isinstance(against, Index) else None

    def __enter__(self) -> None:
        if self._index is not None:
            self._index._index  # refuses a closed index, naming it
            self._index.close()

    def __exit__(self, *exc: Any) -> None:
        if self._index is not None:
            self._index._opened_index = _neardup.Index(self._index.path)


class _Progress:
    """The library's progress bars drawn by tqdm (`tqdm.auto`: a widget in a notebook) while a
    call works, where no terminal shows the library's own (it draws on a terminal at file
    descriptor 2). Without tqdm, or with `quiet`, nothing is drawn."""

    POLL_SECONDS = 0.2

    def __init__(self, quiet: bool):
        self._bars = None if quiet or os.isatty(2) else _tqdm()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._draw, daemon=True)

    def __enter__(self) -> "_Progress":
        if self._bars is not None:
            _neardup.watch_progress(True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bars is not None:
            self._stop.set()
            self._thread.join()
            _neardup.watch_progress(False)

    def _draw(self) -> None:
        bar, shown = None, None
        while not self._stop.wait(self.POLL_SECONDS):
            state = _neardup.progress()
            if state is None:
                continue
            message, position, length = state
            if message != shown:
                if bar is not None:
                    bar.close()
                bar = self._bars(total=length, desc=message, unit_scale=True, leave=False)
                shown = message
            bar.update(position - bar.n)
        if bar is not None:
            bar.close()


def _tqdm() -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


def _settings_json(settings: Dict[str, Any]) -> str:
    """Keyword settings as the JSON object a pipeline file's table is: paths (and an open
    `Index`, by its folder) as strings. A number that is not finite is refused by name."""
    plain = {}
    for key, value in settings.items():
        if isinstance(value, Index):
            value = value.path
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{key}={value!r}: give a finite number")
        plain[key] = value
    try:
        return json.dumps(plain)
    except TypeError as e:
        raise TypeError(f"settings: {e} (give numbers, strings, booleans or paths)") from None


def _file_fields(text: Text, id: Any):
    """The text fields and id field of records read from files: the CORE layout's unless
    told."""
    if id is not None and not isinstance(id, str):
        raise ValueError("id= names the field of a file's records that holds the id")
    texts = [text] if isinstance(text, str) else list(text or CORE_TEXT)
    return texts, id or CORE_ID


class Index:
    """A collection kept on disk, to check new records against: the two-stage index that
    `neardup index` builds and `neardup query` and `neardup serve` read. Each lookup returns
    the nearest indexed documents with the confirm stage's verdict; writes are journalled and
    flushed before a call returns, so a crash loses nothing a call has returned from.

        index = neardup.Index.build("idx/", df)   # or neardup.Index("idx/") to open one
        index.query("a new abstract ...")         # its duplicates in the index
        index.deduplicate(new_df)                 # each new record's duplicates, as a table
        index.add(new_df)                         # the same, adding each record as it goes
        index.remove(["id1", "id2"])
        index.close()                             # or use it in a `with` block
    """

    def __init__(self, path: Union[str, os.PathLike]):
        self._opened_index = _neardup.Index(os.fspath(path))
        self.path = os.fspath(path)

    @classmethod
    def _opened(cls, index: Any, path: Union[str, os.PathLike]) -> "Index":
        opened = cls.__new__(cls)
        opened._opened_index = index
        opened.path = os.fspath(path)
        return opened

    @property
    def _index(self) -> Any:
        if self._opened_index is None:
            raise ValueError(f"the index {self.path!r} is closed: open it again with Index(path)")
        return self._opened_index

    @classmethod
    def build(
        cls,
        path: Union[str, os.PathLike],
        data: Any,
        text: Text = None,
        id: Union[str, Sequence[Any], None] = None,
        *,
        skip_invalid: bool = False,
        max_doc_bytes: Optional[int] = None,
        quiet: bool = False,
        **settings: Any,
    ) -> "Index":
        """Builds an index of `data` in the folder `path` (which must not hold one) and opens
        it. `data`, `text`, `id`, `skip_invalid` and `max_doc_bytes` are read as `dedup`
        reads them; `settings` are the two-stage method's (as `neardup index` takes them)."""
        _check_reading(skip_invalid, max_doc_bytes)
        settings_json = _settings_json(settings)
        records = _Records.of(data, text, id)
        with _Progress(quiet):
            if records.paths is not None:
                text_fields, id_field = _file_fields(text, id)
                index = _neardup.index_files(
                    os.fspath(path), records.paths, settings_json, id_field, text_fields,
                    skip_invalid, max_doc_bytes, quiet,
                )
            else:
                index = _neardup.index_records(
                    os.fspath(path), records.handed_over(), settings_json, skip_invalid,
                    max_doc_bytes, quiet,
                )
        return cls._opened(index, path)

    def query(
        self, text: Optional[str] = None, *, id: Any = None, k: int = _neardup.DEFAULT_TOP_K,
        all: bool = False,
    ) -> List[Dict[str, Any]]:
        """The duplicates of a new `text`, or of the indexed document `id`, among the `k`
        nearest indexed documents: dicts of `id`, `cosine`, `jaccard_estimate`, `duplicate`
        and the deciding `rule`. `all=True` lists the neighbours that are not duplicates too."""
        if text is None and id is None:
            raise ValueError("give the text to look up, or id= of an indexed document")
        if text is not None and id is not None:
            raise ValueError("give a text or id=, not both")
        found = (
            self._index.query_text(text, k) if id is None else self._index.query_id(str(id), k)
        )
        return [m for m in json.loads(found) if all or m["duplicate"]]

    def deduplicate(
        self, data: Any, text: Text = None, id: Any = None, *, k: int = _neardup.DEFAULT_TOP_K,
        add: bool = False, skip_invalid: bool = False, max_doc_bytes: Optional[int] = None,
    ) -> Any:
        """Checks each record of `data` (any type `dedup` takes, files included) against the
        index: one row for each record and indexed duplicate, with `id` (the record's),
        `duplicate_of` (the indexed document's), `cosine`, `jaccard_estimate` and the deciding
        `rule`, as a table of the input's type (a list of dicts for files). A record with no
        duplicate has no row. With `add=True` each record is added after its lookup, so a
        record also meets the batch's earlier ones; the batch counts only whole. Each record
        is looked up by its text fields joined; for a large batch from files,
        `dedup(path, against=index)` is the faster way (it runs the batch as a whole).
        `skip_invalid` and `max_doc_bytes` are as `dedup`'s."""
        _check_reading(skip_invalid, max_doc_bytes)
        records = _Records.of(data, text, id)
        if records.paths is not None:
            text_fields, id_field = _file_fields(text, id)
            ids, found = self._index.deduplicate_files(
                records.paths, id_field, text_fields, skip_invalid, max_doc_bytes, k, add
            )
        else:
            limit = _neardup.DEFAULT_MAX_DOC_BYTES if max_doc_bytes is None else max_doc_bytes
            texts = [" ".join(t for t in parts if t) for parts in zip(*records.columns)]
            for row, t in enumerate(texts):
                if len(t) > limit // 4 and len(t.encode("utf-8")) > limit:
                    records.problems.setdefault(
                        row,
                        f"the text is {len(t.encode('utf-8'))} bytes, over max_doc_bytes="
                        f"{limit}",
                    )
            rows = records.must_be_whole(skip_invalid)
            ids = [records.ids[row] for row in rows]
            found = self._index.deduplicate(ids, [texts[row] for row in rows], k, add)
        rows = [
            (new, m) for new, matches in zip(ids, json.loads(found)) for m in matches
            if m["duplicate"] and m["id"] != new
        ]
        return _table_of(
            records.kind,
            {
                "id": [new for new, _ in rows],
                "duplicate_of": [m["id"] for _, m in rows],
                "cosine": [m["cosine"] for _, m in rows],
                "jaccard_estimate": [m["jaccard_estimate"] for _, m in rows],
                "rule": [m["rule"] for _, m in rows],
            },
        )

    def add(
        self, data: Any, text: Text = None, id: Any = None, *, k: int = _neardup.DEFAULT_TOP_K,
        skip_invalid: bool = False, max_doc_bytes: Optional[int] = None,
    ) -> Any:
        """Adds the records of `data` (any type `dedup` takes), each after looking it up:
        returns what `deduplicate` returns. A record whose id is indexed already replaces it."""
        return self.deduplicate(
            data, text, id, k=k, add=True, skip_invalid=skip_invalid, max_doc_bytes=max_doc_bytes
        )

    def remove(self, ids: Union[str, Sequence[Any]]) -> int:
        """Removes the documents `ids` (one id or several); returns how many were there."""
        ids = [ids] if isinstance(ids, str) else [str(i) for i in ids]
        return sum(self._index.remove(ids))

    def __contains__(self, id: Any) -> bool:
        return self._index.contains(str(id))

    def close(self) -> None:
        """Flushes every write into the store and closes the index (again: nothing)."""
        if self._opened_index is not None:
            self._opened_index.close()
            self._opened_index = None

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<neardup.Index {self.path!r}>"


class _Records:
    """The caller's data, as the extension reads it: paths, or an id column and text columns
    (and the column a `field:NAME:max|min` keep policy reads); with what is needed to hand
    rows back in the caller's type. A row that cannot be a record (no id, a text that is not
    Unicode) is a problem, named by row and column: the run refuses it, or skips it under
    `skip_invalid`."""

    def __init__(self, kind, data, paths=None, ids=None, columns=None, names=(), column=None):
        self.kind = kind
        self.data = data
        self.paths = paths
        self._ids = ids
        self._columns = columns
        # The table's column names, and `column(name)`: a column's values as a list.
        self.names = list(names)
        self.column = column
        # For a table: the columns read (`id_name`, `text_names`, `keep_name`), and `arrow()`,
        # an object exporting them as an Arrow stream (`__arrow_c_stream__`), if it can.
        self.id_name = None
        self.text_names = []
        self.keep_name = None
        self.arrow = None
        self._rows = len(ids) if ids is not None else 0
        # Rows that are no record, and why.
        self.problems: Dict[int, str] = {}
        # Records (dicts) without one of the keys read: (key, rows).
        self.missing_keys: Dict[str, List[int]] = {}

    @property
    def ids(self) -> List[Optional[str]]:
        """Each record's id, as text (`None` for a row without one: a problem)."""
        if self._ids is None:
            if self.id_name is None:
                self._ids = [str(i) for i in range(len(self))]
            else:
                self._ids = self._values(self.id_name, _id_text, "holds no id")
        return self._ids

    @property
    def columns(self) -> List[List[Optional[str]]]:
        """The text columns, each a list of texts (`None` where empty)."""
        if self._columns is None:
            self._columns = [self._values(c, _text_of, None) for c in self.text_names]
        return self._columns

    def _values(self, name: str, as_text: Any, when_none: Optional[str]) -> List[Optional[str]]:
        """Column `name` as text by `as_text`; a value it refuses, or a missing value where
        `when_none` says it is a problem, makes its row one."""
        values: List[Optional[str]] = []
        for row, value in enumerate(self.column(name)):
            try:
                text = as_text(value)
            except _NotText as e:
                self.problems.setdefault(row, f"column {name!r}: {e}")
                text = None
            if text is None and when_none is not None:
                self.problems.setdefault(row, f"column {name!r} {when_none}; every record needs one")
            values.append(text)
        for row in self.missing_keys.get(name, []):
            self.problems.setdefault(
                row, f"the record has no key {name!r} (give None for an empty value)"
            )
        return values

    def keep_column(self) -> Optional[List[Optional[str]]]:
        """The values a `field:NAME:max|min` keep policy compares, as text."""
        if self.keep_name is None:
            return None
        return [_keep_text(v) for v in self.column(self.keep_name)]

    def __len__(self) -> int:
        return self._rows

    def handed_over(self) -> Any:
        """The records written for the extension to read: straight from the Arrow columns
        where the table exports them in types the extension reads, else through lists."""
        if self.arrow is not None and not self.missing_keys:
            try:
                stream = self.arrow().__arrow_c_stream__()
            except Exception:
                # A column Arrow cannot hold as one type (pandas objects of mixed types): the
                # values go through Python instead.
                stream = None
            if stream is not None:
                records = _neardup.Records.from_arrow(
                    stream, self.id_name, self.text_names, self.keep_name
                )
                if records is not None:
                    return records
        ids, columns, keep = self.ids, self.columns, self.keep_column()
        names = (self.id_name, self.text_names or ["text"], self.keep_name)
        return _neardup.Records.from_columns(ids, columns, keep, self.problems, names)

    def must_be_whole(self, skip_invalid: bool) -> List[int]:
        """The rows that are records, for a lookup that reads rows itself: every row, or
        with `skip_invalid` those without a problem; a problem row otherwise is an error."""
        self.ids, self.columns  # finds the problems
        if self.problems and not skip_invalid:
            row, problem = min(self.problems.items())
            raise ValueError(
                f"row {row}: {problem} (fix the row, or pass skip_invalid=True to skip such rows)"
            )
        return [row for row in range(len(self)) if row not in self.problems]

    @staticmethod
    def of(data: Any, text: Text, id: Any, keep: str = "representative") -> "_Records":
        if isinstance(data, (str, os.PathLike)):
            return _Records("paths", data, paths=[os.fspath(data)])
        module = type(data).__module__.split(".")[0]
        name = type(data).__name__
        of_table = lambda *table: _Records.from_columns(*table, text=text, id=id, keep=keep)
        if module == "pandas" and name == "DataFrame":
            column = lambda c: data[c].tolist()
            arrow = lambda cols: data[cols]
            return of_table("pandas", data, data.columns, len(data), column, arrow)
        if module == "polars" and name == "DataFrame":
            column = lambda c: data[c].to_list()
            arrow = lambda cols: data.select(cols)
            return of_table("polars", data, data.columns, data.height, column, arrow)
        if module == "pyarrow":
            if name == "RecordBatchReader":
                data = data.read_all()
                name = "Table"
            if name == "RecordBatch":
                import pyarrow as pa

                data = pa.Table.from_batches([data])
                name = "Table"
            if name == "Table":
                column = lambda c: data.column(c).to_pylist()
                arrow = lambda cols: data.select(cols)
                names = data.schema.names
                return of_table("arrow", data, names, data.num_rows, column, arrow)
        if module == "datasets" and name == "Dataset":
            column = lambda c: list(data[c])
            arrow = lambda cols: data.select_columns(cols).with_format("arrow")[:]
            names = data.column_names
            return of_table("datasets", data, names, data.num_rows, column, arrow)
        if isinstance(data, (list, tuple)):
            if data and all(isinstance(r, os.PathLike) for r in data):
                return _Records("paths", data, paths=[os.fspath(r) for r in data])
            if all(isinstance(r, str) for r in data):
                if _keep_field(keep) is not None:
                    raise ValueError(
                        f"keep={keep!r}: a list of strings has no fields; give records (dicts) "
                        "or a table to keep by a field"
                    )
                ids = _ids_given(id, len(data))
                records = _Records("strings", list(data), ids=ids)
                records.text_names = ["text"]
                records.column = lambda c: data
                return records
            if all(isinstance(r, dict) for r in data):
                names: Dict[str, None] = {}
                for record in data:
                    names.update(dict.fromkeys(record))
                column = lambda c: [r.get(c) for r in data]
                records = of_table("dicts", list(data), names, len(data), column)
                for key in {records.id_name, *records.text_names} - {None}:
                    rows = [row for row, r in enumerate(data) if key not in r]
                    if rows:
                        records.missing_keys[key] = rows
                return records
            raise TypeError(
                "a list to deduplicate holds strings (texts or paths) or dicts (records); "
                f"this one holds {sorted({type(r).__name__ for r in data})}"
            )
        raise TypeError(
            f"cannot deduplicate a {type(data).__module__}.{name}: give a path, a list of "
            "strings or dicts, a pandas or polars DataFrame, a pyarrow Table or "
            "RecordBatchReader, or a datasets.Dataset"
        )

    @staticmethod
    def from_columns(
        kind, data, names, rows, column, arrow=None, *, text, id, keep
    ) -> "_Records":
        """Records of a table with columns `names` and `rows` rows; `column(name)` gives a
        column's values as a list, and `arrow(names)` the table of those columns alone, as
        an object exporting an Arrow stream (where the table's library can)."""
        records = _Records(kind, data, names=names, column=column)
        records.text_names = _text_names(records.names, text)
        records.id_name = _id_name(records.names, id)
        records.keep_name = _keep_field(keep)
        if records.keep_name is not None and records.keep_name not in records.names:
            raise ValueError(
                f"keep={keep!r}: the data has no column {records.keep_name!r} (it has "
                f"{records.names})"
            )
        records._rows = rows
        wanted = [
            c
            for c in dict.fromkeys([records.id_name, *records.text_names, records.keep_name])
            if c is not None
        ]
        if arrow is not None and all(isinstance(c, str) for c in wanted):
            records.arrow = lambda: arrow(wanted)
        return records


def _keep_field(keep: str) -> Optional[str]:
    """The field a `field:NAME:max|min` keep policy names (None for the other policies; a
    malformed one is the extension's to refuse)."""
    if isinstance(keep, str) and keep.startswith("field:") and keep.count(":") >= 2:
        return keep[len("field:") : keep.rindex(":")] or None
    return None


def _text_names(names: List[str], text: Text) -> List[str]:
    if text is None:
        if all(c in names for c in CORE_TEXT):
            return list(CORE_TEXT)
        if "text" in names:
            return ["text"]
        raise ValueError(
            f"which column holds the text? give text=... (one of {names}); with none given, "
            f"neardup reads {CORE_TEXT} (the CORE layout) or `text`"
        )
    wanted = [text] if isinstance(text, str) else list(text)
    for name in wanted:
        if name not in names:
            raise ValueError(f"text={name!r}: the data has no such column (it has {names})")
    return wanted


def _id_name(names: List[str], id: Any) -> Optional[str]:
    if id is None:
        return CORE_ID if CORE_ID in names else ("id" if "id" in names else None)
    if not isinstance(id, str):
        raise ValueError("id= names a column of this data; a list of ids goes with a list of texts")
    if id not in names:
        raise ValueError(f"id={id!r}: the data has no such column (it has {names})")
    return id


def _ids_given(id: Any, rows: int) -> List[str]:
    if id is None:
        return [str(i) for i in range(rows)]
    if isinstance(id, str):
        raise ValueError("id= for a list of texts is a list of ids, one for each text")
    ids = [str(v) for v in id]
    if len(ids) != rows:
        raise ValueError(f"{rows} texts and {len(ids)} ids: give one id for each text")
    return ids


class _NotText(Exception):
    """A value that cannot be read as a record's text or id, and why."""


def _as_str(value: Any) -> str:
    """A text value as `str`: bytes decoded as UTF-8, and a `str` checked to be Unicode that
    can be written (a lone surrogate, from a bad decode, cannot)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as e:
            raise _NotText(f"bytes that are not UTF-8 text (byte {e.start})") from None
    if not isinstance(value, str):
        return str(value)
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise _NotText(
                f"text that is not valid Unicode (a lone surrogate at character {e.start}; "
                "decode the source with errors='replace')"
            ) from None
    return value


def _id_text(value: Any) -> Optional[str]:
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return _as_str(value)


def _text_of(value: Any) -> Optional[str]:
    if value is None or (isinstance(value, float) and value != value):
        return None
    return _as_str(value)


def _keep_text(value: Any) -> Optional[str]:
    """A value a keep policy compares, as text (numbers read back as numbers)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, bool):
        return str(int(value))
    try:
        return _as_str(value)
    except _NotText:
        return None


class Result:
    """What `dedup` found, in the terms of the data it was given."""

    def __init__(self, run: Any, records: _Records):
        self._run = run
        self._records = records
        self._fates = None

    @property
    def summary(self) -> Dict[str, Any]:
        """Counts, the method's settings and the seconds of each stage."""
        return json.loads(self._run.summary())

    @property
    def ids(self) -> List[str]:
        """Each record's id, in the order read."""
        return self._run.ids

    @property
    def pairs(self) -> Any:
        """The confirmed duplicate pairs: `id_a`, `id_b` (the lower id first, as in
        pairs.jsonl), their score (named as in pairs.jsonl), the rule that confirmed the pair
        (`rule`: `jaccard`, `containment` or `title`; for a method that confirms by its score
        alone, the method's measure) and the records' positions `a` and `b` (None for a record
        of the collection checked against)."""
        ids, rows = self._run.ids, self._run.rows
        found = [(a, b, s) if ids[a] <= ids[b] else (b, a, s) for a, b, s in self._run.pairs]
        rules = self._run.pair_rules
        if rules is None:
            rules = [self._run.score_name] * len(found)

        def row(doc: int) -> Optional[int]:
            return rows[doc] if doc < len(rows) else None

        return self._table(
            {
                "id_a": [ids[a] for a, _, _ in found],
                "id_b": [ids[b] for _, b, _ in found],
                self._run.score_name: [s for _, _, s in found],
                "rule": rules,
                "a": [row(a) for a, _, _ in found],
                "b": [row(b) for _, b, _ in found],
            }
        )

    def rethreshold(self, threshold: float) -> "Result":
        """This result at another threshold, as a new result: each candidate pair the run
        judged is decided again (the run's Jaccard estimates and rules are kept; nothing is
        signed or embedded again) and the pairs grouped again, in a fraction of the run's time.

        Raising the threshold gives the pairs a run at it confirms among these candidates.
        Lowering it decides these candidates only: a run at the lower threshold may propose
        more (MinHash's bands are chosen for the threshold). `jaccard`, `resemblance` and
        `simhash` keep only the pairs that reached their threshold, so they can raise it and
        not lower it. The summary's settings name the new threshold."""
        return Result(self._run.rethreshold(float(threshold)), self._records)

    @property
    def groups(self) -> Any:
        """The groups: `group`, `size`, `members` (ids), `representative` (the member most
        similar to the others), `representative_similarity`, `kept` (the member kept)."""
        ids = self._run.ids
        groups = self._run.groups
        return self._table(
            {
                "group": list(range(len(groups))),
                "size": [len(g[0]) for g in groups],
                "members": [[ids[m] for m in g[0]] for g in groups],
                "representative": [ids[g[1]] for g in groups],
                "representative_similarity": [g[3] for g in groups],
                "kept": [ids[g[2]] for g in groups],
            }
        )

    @property
    def unique(self) -> Any:
        """The records kept, in the input's type and order: one per group, and every record
        in no group."""
        self._needs_data("unique")
        return self._select(self._kept_rows())

    @property
    def annotated(self) -> Any:
        """The input with three columns added: each record's group (None for none), whether
        it is kept, and the id of the record kept in its place."""
        self._needs_data("annotated")
        group, kept, duplicate_of = self._fates_by_row()
        return self._with_columns(
            {GROUP_COLUMN: group, KEEP_COLUMN: kept, DUPLICATE_OF_COLUMN: duplicate_of}
        )

    def explain(self, a: Any, b: Any) -> Dict[str, Any]:
        """Why the records with ids `a` and `b` were, or were not, matched: each side's words,
        title and numbers, the exact and estimated figures the rule weighs, the verdict
        (`verdict["duplicate"]`, `verdict["rule"]`), what the rule means, and a word diff.
        As `neardup explain`."""
        return json.loads(self._run.explain(str(a), str(b)))

    def evaluate(
        self, truth: Any = None, *, predicted: str = "groups", truth_id: Optional[str] = None
    ) -> Dict[str, Any]:
        """The CORE 2020 metrics of this result against labelled duplicates, as `neardup eval
        --json` gives them: accuracy and macro-F1 over the labelled documents, and the same by
        `cat` label and by number of duplicates.

        `truth` is a file in the CORE layout (`core_id`, `labelled_duplicates`, `cat`): JSON
        Lines, Parquet, or CSV/TSV with the duplicates as a JSON list; or a dict from each id
        to its duplicates' ids. `truth_id` names the file's id field: by default the one the
        run read ids from, where it read files, else `core_id`. By default the labels are the
        input's own: a CORE-layout file, or data with a `labelled_duplicates` column (and
        `cat`, if it has one). Every document the run read must be labelled, in the same order.
        `predicted`: a document's predicted duplicates are the rest of its group (`"groups"`)
        or its confirmed pair partners (`"pairs"`)."""
        cats = None
        if truth is None:
            if self._records.paths is not None:
                if len(self._records.paths) != 1:
                    raise ValueError("give truth=: the run read more than one file")
                truth = self._records.paths[0]
            elif CORE_LABELS in self._records.names:
                column, names = self._records.column, self._records.names
                truth = dict(zip(self._records.ids, column(CORE_LABELS)))
                if CORE_CAT in names:
                    cats = dict(zip(self._records.ids, column(CORE_CAT)))
            else:
                raise ValueError(
                    f"the data has no {CORE_LABELS!r} column: give truth= (a CORE-layout JSON "
                    "Lines file, or a dict from each id to its duplicates' ids)"
                )
        if isinstance(truth, (str, os.PathLike)):
            if truth_id is None and self._records.paths is None:
                truth_id = CORE_ID
            return json.loads(self._run.evaluate(os.fspath(truth), predicted, truth_id))
        if not isinstance(truth, dict):
            raise TypeError(
                "truth is a path to CORE-layout JSON Lines or a dict from id to duplicate ids; "
                f"got a {type(truth).__name__}"
            )
        truth = {str(k): v for k, v in truth.items()}
        ids = self._run.ids
        missing = [i for i in ids if i not in truth]
        if missing:
            raise ValueError(
                f"{len(missing)} of the {len(ids)} documents have no labels in truth (the "
                f"first: {missing[0]!r}); label every document, with [] for none"
            )
        with tempfile.TemporaryDirectory(prefix="neardup-truth-") as folder:
            path = os.path.join(folder, "truth.jsonl")
            with open(path, "w", encoding="utf-8") as out:
                for i in ids:
                    record = {"id": i, CORE_LABELS: [str(d) for d in truth[i] or []]}
                    if cats is not None and cats[i] is not None:
                        record[CORE_CAT] = cats[i]
                    out.write(json.dumps(record) + "\n")
            return json.loads(self._run.evaluate(path, predicted, "id"))

    def write(
        self,
        out: Union[str, os.PathLike],
        annotate: bool = True,
        candidates: Optional[str] = "parquet",
    ) -> Dict[str, Any]:
        """Writes the command line's files into the folder `out` (pairs, candidates, groups,
        unique and annotated records in the input's format, summary.json); returns the
        summary. For data read from files. `annotate=False` leaves out the annotated copy, as
        `--no-annotate`; `candidates` is the format of every scored candidate, as
        `--candidates`: "parquet" (candidates.parquet), "jsonl" (candidates.jsonl) or None."""
        if self._records.paths is None:
            raise ValueError(
                "write() copies records out of the input files; for data held in Python, "
                "save result.unique in its own way (to_parquet, to_json, ...)"
            )
        # True and False, as before there was a choice of format.
        if candidates is None or candidates is False:
            candidates = "none"
        elif candidates is True:
            candidates = "parquet"
        return json.loads(self._run.write(os.fspath(out), annotate, candidates))

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"<neardup.Result: {s['documents']} documents, {s['pairs']} duplicate pairs, "
            f"{s['groups']} groups, {s['unique']} kept>"
        )

    # How results go back into the input's type.

    def _needs_data(self, what: str) -> None:
        if self._records.paths is not None:
            raise ValueError(
                f"{what} holds records of data given in Python; for files, write() copies "
                "them out in the input's format"
            )

    def _fates_by_row(self):
        """Each row's group, whether it is kept, and what it duplicates: a row skipped as
        invalid is in no group and not kept."""
        if self._fates is None:
            group, kept, duplicate_of = self._run.fates()
            rows = len(self._records)
            if len(kept) != rows:
                fates = ([None] * rows, [False] * rows, [None] * rows)
                for doc, row in enumerate(self._run.rows[: len(kept)]):
                    fates[0][row], fates[1][row] = group[doc], kept[doc]
                    fates[2][row] = duplicate_of[doc]
                group, kept, duplicate_of = fates
            self._fates = (group, kept, duplicate_of)
        return self._fates

    def _kept_rows(self) -> List[int]:
        _, kept, _ = self._fates_by_row()
        return [row for row, k in enumerate(kept) if k]

    def _select(self, rows: List[int]) -> Any:
        data, kind = self._records.data, self._records.kind
        if kind == "pandas":
            return data.iloc[rows]
        if kind == "polars":
            return data[rows]
        if kind == "arrow":
            return data.take(rows)
        if kind == "datasets":
            return data.select(rows)
        return [data[r] for r in rows]

    def _with_columns(self, columns: Dict[str, list]) -> Any:
        data, kind = self._records.data, self._records.kind
        if kind == "pandas":
            return data.assign(**{k: _pandas_column(k, v) for k, v in columns.items()})
        if kind == "polars":
            import polars as pl

            return data.with_columns([pl.Series(k, v) for k, v in columns.items()])
        if kind == "arrow":
            for name, values in columns.items():
                data = data.append_column(name, _arrow_array(values))
            return data
        if kind == "datasets":
            for name, values in columns.items():
                data = data.add_column(name, values)
            return data
        if kind == "strings":
            return [
                {"id": i, "text": t, **{k: v[row] for k, v in columns.items()}}
                for row, (i, t) in enumerate(zip(self._records.ids, data))
            ]
        return [{**r, **{k: v[row] for k, v in columns.items()}} for row, r in enumerate(data)]

    def _table(self, columns: Dict[str, list]) -> Any:
        return _table_of(self._records.kind, columns)


def _table_of(kind: str, columns: Dict[str, list]) -> Any:
    """A table of `columns` in the type data of `kind` came in: DataFrames for DataFrames,
    Tables for Arrow, else a list of dicts."""
    if kind == "pandas":
        import pandas as pd

        return pd.DataFrame({k: _pandas_column(k, v) for k, v in columns.items()})
    if kind == "polars":
        import polars as pl

        return pl.DataFrame(columns)
    if kind == "arrow":
        import pyarrow as pa

        return pa.table(columns)
    names = list(columns)
    return [dict(zip(names, values)) for values in zip(*columns.values())]


def _pandas_column(name: str, values: list) -> Any:
    import pandas as pd

    if name in _WHOLE_NUMBERS:
        return pd.array(values, dtype="Int64")
    return values


# Columns of whole numbers that may be missing: pandas holds them as nullable integers, not
# as floats with NaN.
_WHOLE_NUMBERS = {GROUP_COLUMN, "a", "b"}


def _arrow_array(values: list) -> Any:
    import pyarrow as pa

    return pa.array(values)
