"""Types of the extension module: the library's runs (see python/src/lib.rs)."""

from os import PathLike
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

__version__: str
ANNOTATION_COLUMNS: List[str]

class Run:
    """A finished run: what the method found, documents by number (their order read)."""

    @property
    def ids(self) -> List[str]: ...
    @property
    def rows(self) -> List[int]: ...
    @property
    def pairs(self) -> List[Tuple[int, int, float]]: ...
    @property
    def pair_rules(self) -> Optional[List[str]]: ...
    def rethreshold(self, threshold: float) -> "Run": ...
    @property
    def score_name(self) -> str: ...
    @property
    def groups(self) -> List[Tuple[List[int], int, int, float]]: ...
    def fates(self) -> Tuple[List[Optional[int]], List[bool], List[Optional[str]]]: ...
    def explain(self, a: str, b: str) -> str: ...
    def evaluate(
        self, truth: Union[str, PathLike], predicted: str, id_field: Optional[str] = None
    ) -> str: ...
    def summary(self) -> str: ...
    def write(
        self, out: Union[str, PathLike], annotate: bool = True, candidates: bool = True
    ) -> str: ...

def dedup_files(
    paths: Sequence[Union[str, PathLike]],
    method: str,
    settings: str,
    id_field: str,
    text_fields: Sequence[str],
    keep: str,
    skip_invalid: bool,
    max_doc_bytes: Optional[int],
    quiet: bool,
) -> Run: ...
class Records:
    """Records handed over in memory, written for one run or index build to read."""

    @staticmethod
    def from_columns(
        ids: Sequence[Optional[str]],
        columns: Sequence[Sequence[Optional[str]]],
        keep: Optional[Sequence[Optional[str]]],
        problems: Dict[int, str],
        names: Tuple[Optional[str], Sequence[str], Optional[str]],
    ) -> Records: ...
    @staticmethod
    def from_arrow(
        stream: Any, id: Optional[str], texts: Sequence[str], keep: Optional[str] = None
    ) -> Optional[Records]: ...

def dedup_records(
    records: Records,
    method: str,
    settings: str,
    keep: str,
    skip_invalid: bool,
    max_doc_bytes: Optional[int],
    quiet: bool,
) -> Run: ...
def train(
    truths: Sequence[Union[str, PathLike]],
    out: Union[str, PathLike],
    settings: str,
    id_field: str,
    text_fields: Sequence[str],
    quiet: bool,
) -> str: ...

DEFAULT_TOP_K: int
DEFAULT_MAX_DOC_BYTES: int

def watch_progress(on: bool) -> None: ...
def progress() -> Optional[Tuple[str, int, Optional[int]]]: ...

class Index:
    """An open two-stage index; lookups and batches answer with matches as JSON."""

    def __init__(self, path: Union[str, PathLike]) -> None: ...
    def query_text(self, text: str, k: int) -> str: ...
    def query_id(self, id: str, k: int) -> str: ...
    def deduplicate(self, ids: Sequence[str], texts: Sequence[str], k: int, add: bool) -> str: ...
    def deduplicate_files(
        self,
        paths: Sequence[Union[str, PathLike]],
        id_field: str,
        text_fields: Sequence[str],
        skip_invalid: bool,
        max_doc_bytes: Optional[int],
        k: int,
        add: bool,
    ) -> Tuple[List[str], str]: ...
    def remove(self, ids: Sequence[str]) -> List[bool]: ...
    def contains(self, id: str) -> bool: ...
    def close(self) -> None: ...

def index_files(
    path: Union[str, PathLike],
    paths: Sequence[Union[str, PathLike]],
    settings: str,
    id_field: str,
    text_fields: Sequence[str],
    skip_invalid: bool,
    max_doc_bytes: Optional[int],
    quiet: bool,
) -> Index: ...
def index_records(
    path: Union[str, PathLike],
    records: Records,
    settings: str,
    skip_invalid: bool,
    max_doc_bytes: Optional[int],
    quiet: bool,
) -> Index: ...
