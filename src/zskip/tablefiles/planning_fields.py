"""The field ids zskip can rule anything out by, in table properties beside the files they come from.

zskip's rule in the JVM hands a scan to the Python planner only when the planner could skip more than
Iceberg does: when the scan's filters name a column zskip clustered or indexed (or a filtered dimension
is joined to it).  Which columns those are is in the clustering store and the index manifest, files the
rule does not read; so each commit that points the table at a new store or manifest also records their
field ids in a property, and the rule decides the first plan of a table state alone:

    zskip.clustering.field-ids = 1,4@<the store file it describes>
    zskip.index.field-ids = 7@<the index manifest it describes>

A property that names another file than the one the table points at (written by a zskip that did not
know it, then left behind) says nothing, and the rule asks the planner, as without it.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["CLUSTERED_FIELDS_PROPERTY", "INDEXED_FIELDS_PROPERTY", "fields_value"]

CLUSTERED_FIELDS_PROPERTY = "zskip.clustering.field-ids"
INDEXED_FIELDS_PROPERTY = "zskip.index.field-ids"


def fields_value(field_ids: Iterable[int | None], path: str) -> str | None:
    """The property value naming ``field_ids`` as those of the file ``path``; ``None`` when some id is
    unknown (a column named only by name), which leaves the decision to the planner."""
    ids = list(field_ids)
    known = sorted({i for i in ids if i is not None})
    if len(known) < len(set(ids)):
        return None
    return f"{','.join(map(str, known))}@{path}"
