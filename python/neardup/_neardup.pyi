"""Types of the extension module: the library's runs (see python/src/lib.rs)."""

from os import PathLike
from typing import List, Optional, Sequence, Tuple, Union

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
    def score_name(self) -> str: ...
    @property
    def groups(self) -> List[Tuple[List[int], int, int, float]]: ...
    def fates(self) -> Tuple[List[Optional[int]], List[bool], List[Optional[str]]]: ...
    def explain(self, a: str, b: str) -> str: ...
    def evaluate(
        self, truth: Union[str, PathLike], predicted: str, id_field: Optional[str] = None
    ) -> str: ...
    def summary(self) -> str: ...
    def write(self, out: Union[str, PathLike], annotate: bool = True) -> str: ...

def dedup_files(
    paths: Sequence[Union[str, PathLike]],
    method: str,
    settings: str,
    id_field: str,
    text_fields: Sequence[str],
    keep: str,
    skip_invalid: bool,
    quiet: bool,
) -> Run: ...
def dedup_records(
    ids: Sequence[str],
    columns: Sequence[Sequence[Optional[str]]],
    method: str,
    settings: str,
    keep: str,
    quiet: bool,
) -> Run: ...
