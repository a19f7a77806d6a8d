"""Writes the Parquet files the tests read: one column of each Arrow type beside an id and a
text column, as pyarrow writes them (`python3 make.py`, pyarrow from PyPI)."""
import datetime
import decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).parent
ROWS = 6
TEXT = ["a record about rivers and the towns along them"] * 3 + [
    "something else entirely different words here now"
] * 2 + ["third kind of text with its own words"]
COLUMNS = {
    "d32": pa.array([datetime.date(2020, 1, i + 1) for i in range(ROWS)], pa.date32()),
    "ts": pa.array([datetime.datetime(2020, 1, 1, i) for i in range(ROWS)], pa.timestamp("us", tz="UTC")),
    "t64": pa.array([datetime.time(i, 0) for i in range(ROWS)], pa.time64("us")),
    "dur": pa.array([datetime.timedelta(seconds=i) for i in range(ROWS)], pa.duration("ms")),
    "f16": pa.array(np.array([1.5] * ROWS, dtype=np.float16), pa.float16()),
    "st": pa.array([{"a": i, "b": "x"} for i in range(ROWS)], pa.struct([("a", pa.int32()), ("b", pa.string())])),
    "dec": pa.array([decimal.Decimal("1.25")] * ROWS, pa.decimal128(10, 2)),
    "mp": pa.array([[("k", i)] for i in range(ROWS)], pa.map_(pa.string(), pa.int64())),
    "ls": pa.array([[{"a": i}] for i in range(ROWS)], pa.list_(pa.struct([("a", pa.int64())]))),
    "i8": pa.array(list(range(ROWS)), pa.int8()),
    "dict": pa.array(["x", "y"] * 3).dictionary_encode(),
    "nul": pa.array([None] * ROWS, pa.null()),
}
for name, column in COLUMNS.items():
    table = pa.table({
        "id": pa.array([f"r{i}" for i in range(ROWS)], pa.string()),
        "text": pa.array(TEXT, pa.large_string()),
        name: column,
    })
    pq.write_table(table, HERE / f"{name}.parquet")
