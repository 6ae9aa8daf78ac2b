"""What every kind of index says about itself: how it is built, stored, evaluated, advised and offered.

A kind is one object; ``zskip.fileindex.kinds`` lists them.  Everything above the file formats asks
the kind and never compares a kind's name, so a new kind is one module beside ``bloom`` and
``bitmap`` plus its line in the registry.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pyarrow as pa

from zskip.errors import InvalidOptionError
from zskip.expr import And, Expr, Leaf, Not, Or
from zskip.expr.nodes import LEAVES
from zskip.fileindex.answers import Answer

__all__ = ["IndexKind", "JointProbe", "KindOption"]


@dataclass(frozen=True)
class KindOption:
    """A number an index of some kind takes, within ``(low, high)``, exclusive."""

    name: str
    default: float
    low: float
    high: float
    help: str  # one line: what the number means (the CLI's and the error messages' words)

    def checked(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidOptionError(
                f"{self.name} ({self.help}) must be a number such as {self.default}, not {value!r}"
            )
        if not self.low < float(value) < self.high:
            raise InvalidOptionError(f"{self.name} ({self.help}) must be in ({self.low:g}, {self.high:g}), got {value}")
        return float(value)


class JointProbe(ABC):
    """One column's file-level indexes of every data file, probed for all files at once."""

    @abstractmethod
    def ruled_out(self, leaf: Leaf, files: Sequence[str]) -> set[str]:
        """Those of ``files`` that cannot hold a row where ``leaf`` is TRUE."""


class IndexKind(ABC):
    """One kind of index: its name in the index manifest and on the CLI, its Puffin blob type, its options.

    ``exact``: whether it says which rows make a condition TRUE (and so also answers NOT), not only
    which row groups might hold one.
    """

    name: ClassVar[str]
    blob_type: ClassVar[str]
    exact: ClassVar[bool]
    summary: ClassVar[str]  # one line for the CLI's help: what it is and what it answers
    options: ClassVar[tuple[KindOption, ...]] = ()
    # the Arrow type a column missing from a data file (added to the table since) is indexed as, all NULL
    absent_type: ClassVar[pa.DataType] = pa.null()
    # False: a kind answering no condition, only aggregates (sums): the index stage never reads it
    answers_conditions: ClassVar[bool] = True
    # True: an index of this kind keeps partial aggregates of other columns (its measures, a cube's)
    takes_measures: ClassVar[bool] = False

    def refuses(self, spark_type: str) -> str | None:
        """Why a column of Spark type ``spark_type`` (``int``, ``decimal(9,2)``, ...) cannot have this
        kind of index, in one line (``None``: it can)."""
        return None

    def refuses_measure(self, spark_type: str) -> str | None:
        """Why a column of Spark type ``spark_type`` cannot be a measure of this kind of index, in one line."""
        return f"a {self.name} index takes no measures"

    def checked_options(self, options: Mapping[str, Any]) -> dict[str, float]:
        """``options`` as this kind takes them, or an error saying which it takes."""
        allowed = {option.name: option for option in self.options}
        unknown = set(options) - set(allowed)
        if unknown:
            takes = ", ".join(sorted(allowed)) or "no options"
            raise InvalidOptionError(f"a {self.name} index takes {takes}, not {', '.join(sorted(unknown))}")
        return {name: allowed[name].checked(value) for name, value in options.items() if value is not None}

    def option(self, options: Mapping[str, Any], name: str) -> float:
        """The value of option ``name``: as given, else its default."""
        (wanted,) = [o for o in self.options if o.name == name]
        return float(options.get(name, wanted.default))

    # building (on executors, one data file at a time)

    @abstractmethod
    def build(self, row_groups: Sequence[pa.ChunkedArray], options: Mapping[str, Any]) -> bytes:
        """The blob of one data file's column, given its values row group by row group."""

    def build_with_measures(
        self,
        row_groups: Sequence[pa.ChunkedArray],
        measures: Sequence[tuple[int, Sequence[pa.ChunkedArray]]],
        options: Mapping[str, Any],
    ) -> bytes:
        """The blob of one data file's column and its ``measures`` (field id, values row group by row
        group) for a kind that ``takes_measures``."""
        raise NotImplementedError(f"{self.name} indexes take no measures")

    @abstractmethod
    def load(self, data: bytes) -> Any:
        """A blob as this kind's index object (what ``answer`` reads)."""

    # Reading a blob's head alone: a kind whose blob starts with a part that answers some conditions
    # by itself (a bitmap's dictionary) says how long it is; Puffin then stores the blob uncompressed,
    # the kind compressing the rest itself.  A head loads with ``load``; its index raises
    # ``zskip.fileindex.bitmap_blocks.SlicesNotRead`` where it needs the rest, given later to ``with_rest``.
    compressed_whole: ClassVar[bool] = True

    def head_length(self, blob: bytes) -> int | None:
        """Bytes at the start of ``blob`` that load alone (``None``: the blob loads only whole)."""
        return None

    def with_rest(self, index: Any, rest: bytes) -> Any:
        """``index``, loaded from its head, completed with the bytes after the head."""
        return index

    def parts_for(self, index: Any, values: Sequence[Any] | pa.Array) -> dict[int, tuple[int, int]]:
        """The parts of the rest that ``index``, loaded from its head, needs to tell which rows hold
        ``values`` (literals, or a join's key set), and has not read: ``{part: (bytes after the head
        where it starts, its length)}`` (none: the head answers, or only the whole rest does)."""
        return {}

    def with_parts(self, index: Any, parts: Mapping[int, bytes]) -> Any:
        """``index``, loaded from its head, with the ``parts`` of its rest (``parts_for``) read."""
        return index

    def parts_span(self, index: Any) -> int:
        """How many bytes at the start of the rest hold its parts, when ``index`` (loaded from its head)
        already has the parts it was asked for read: the rest after them completes it, any other part
        read when a condition looks in it (``with_rest_after_parts``).  0: only the whole rest does."""
        return 0

    def with_rest_after_parts(self, index: Any, rest: bytes, part: Callable[[int, int, int], bytes]) -> Any:
        """``index``, loaded from its head with some parts, completed with the bytes of the rest after
        its parts (``parts_span``); ``part(number, bytes after the head where it starts, length)``
        reads any other part it needs."""
        raise NotImplementedError(f"{self.name} indexes have no parts")

    # merging index files: a merged file may store a blob in another form that loads the same (a
    # bitmap's dictionary in blocks), and keeps a copy of the parts of every data file's blob of a
    # column side by side, ordered by a key, so that the parts one probe needs lie close together

    def merged_form(self, blob: bytes) -> bytes:
        """``blob`` (whole, checked) as a merged index file stores it."""
        return blob

    def stored_parts(self, blob: bytes) -> list[tuple[int, bytes]]:
        """Each part of ``blob``'s rest (numbered as ``parts_for`` numbers them) as stored, with the key
        that orders it among the parts of other data files' blobs of the same column (none: the
        blob has no parts)."""
        return []

    # evaluating (at planning time)

    @abstractmethod
    def answers_leaf(self, leaf: Leaf) -> bool:
        """Whether this kind can answer ``leaf``, known from the condition alone."""

    @abstractmethod
    def answer(self, index: Any, leaf: Leaf, row_group_count: int) -> Answer | None:
        """What ``index`` says about ``leaf`` (None: nothing, e.g. a literal the column's type cannot hold)."""

    def answer_keys(self, index: Any, keys: pa.Array, row_group_count: int) -> Answer | None:
        """Where the column is one of ``keys`` (a join's distinct keys: whole numbers as ``int64``, or values
        of the column's own type), or None."""
        return None

    # whether ``joint_probe`` can give a probe: building one reads every file's index of the column,
    # which only pays for small indexes (bloom filters), never for bitmaps
    has_joint_probe: ClassVar[bool] = False

    def joint_probe(self, by_file: Mapping[str, Any]) -> JointProbe | None:
        """All files' indexes of one column as one probe (None: this kind has none)."""
        return None

    def answers(self, expr: Expr) -> bool:
        """Whether this kind answers every condition of ``expr`` (NOT only when exact)."""
        return _answers(expr, self)

    # advising

    @abstractmethod
    def forecast_bytes(self, rows: int, distinct: float, row_groups: int) -> int:
        """About how many bytes this kind's indexes take for a column of ``rows`` rows, ``distinct`` values."""

    def __repr__(self) -> str:
        return f"<index kind {self.name}>"


@functools.singledispatch
def _answers(expr: Expr, kind: IndexKind) -> bool:
    return isinstance(expr, LEAVES) and kind.answers_leaf(expr)  # TRUE, FALSE, opaque: no index answers


@_answers.register(And)
@_answers.register(Or)
def _(expr: And | Or, kind: IndexKind) -> bool:
    return all(_answers(child, kind) for child in expr.children)


@_answers.register
def _(expr: Not, kind: IndexKind) -> bool:
    return kind.exact and _answers(expr.child, kind)
