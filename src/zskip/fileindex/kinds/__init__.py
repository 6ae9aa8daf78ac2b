"""The kinds of index zskip builds, by the name the index manifest and the CLI give them.

Adding a kind: a module beside ``bloom`` and ``bitmap`` defining an ``IndexKind``, and its line in
``KINDS`` below.  Order matters where a choice is made: the advisor proposes the first kind that
answers a column's conditions, and evaluation asks exact kinds before the others.
"""

from __future__ import annotations

from types import MappingProxyType

from zskip.errors import InvalidOptionError
from zskip.fileindex.kinds.base import IndexKind, JointProbe, KindOption
from zskip.fileindex.kinds.bitmap import BITMAP
from zskip.fileindex.kinds.bloom import BLOOM
from zskip.fileindex.kinds.cube import CUBE
from zskip.fileindex.kinds.sums import SUMS

__all__ = ["FILTERING", "KINDS", "IndexKind", "JointProbe", "KindOption", "kind_named"]

KINDS: MappingProxyType[str, IndexKind] = MappingProxyType({kind.name: kind for kind in (BLOOM, BITMAP, SUMS, CUBE)})
# the kinds that answer conditions (the index stage's); the others answer aggregates only
FILTERING: tuple[str, ...] = tuple(name for name, kind in KINDS.items() if kind.answers_conditions)


def kind_named(name: object) -> IndexKind:
    """The kind called ``name``, or an error listing the kinds there are."""
    found = KINDS.get(name) if isinstance(name, str) else None
    if found is None:
        raise InvalidOptionError(f"index kind must be one of {', '.join(KINDS)}, not {name!r}")
    return found
