"""The field ids zskip can rule anything out by, in table properties beside the files they come from.

zskip's rule in the JVM hands a scan to the Python planner only when the planner could skip more than
Iceberg does: when the scan's filters name a column zskip clustered or indexed (or a filtered dimension
is joined to it).  Which columns those are is in the clustering store and the index manifest, files the
rule does not read; so each commit that points the table at a new store or manifest also records their
field ids in a property, and the rule decides the first plan of a table state alone:

    zskip.clustering.field-ids = 1,4@<the store file it describes>
    zskip.index.field-ids = 7@<the index manifest it describes>  (indexes answering conditions)
    zskip.index.sums-field-ids = 9@<the index manifest it describes>  (sums indexes)
    zskip.clustering.value-ordered-field-ids = 1,4@<the store file it describes>
    zskip.clustering.curve = hilbert@<the store file it describes>

The third names the clustered columns whose curve coordinate follows the column's own order (every
mapping but a dimension's): a filter bounding one such column on one side only (``day >= ...``), or on
any side along the Hilbert curve, and no indexed one, is one the curve can rule out no more of than
Iceberg's min/max (see ``zskip.planning.stages.curve_range``), so the rule decides its first plan alone
too.

A property that names another file than the one the table points at (written by a zskip that did not
know it, then left behind) says nothing, and the rule asks the planner, as without it.
"""

from __future__ import annotations

from collections.abc import Iterable

from zskip import settings
from zskip.curves.dimension import DimensionMapping
from zskip.curves.spec import ClusteringSpec

__all__ = [
    "CLUSTERED_FIELDS_PROPERTY",
    "CURVE_PROPERTY",
    "INDEXED_FIELDS_PROPERTY",
    "SUMMED_FIELDS_PROPERTY",
    "VALUE_ORDERED_FIELDS_PROPERTY",
    "clustering_fields",
    "fields_value",
]

CLUSTERED_FIELDS_PROPERTY = settings.CLUSTERED_FIELDS.key
INDEXED_FIELDS_PROPERTY = settings.INDEXED_FIELDS.key
SUMMED_FIELDS_PROPERTY = settings.SUMMED_FIELDS.key
VALUE_ORDERED_FIELDS_PROPERTY = settings.VALUE_ORDERED_FIELDS.key
CURVE_PROPERTY = settings.CURVE.key


def fields_value(field_ids: Iterable[int | None], path: str) -> str | None:
    """The property value naming ``field_ids`` as those of the file ``path``; ``None`` when some id is
    unknown (a column named only by name), which leaves the decision to the planner."""
    ids = list(field_ids)
    known = sorted({i for i in ids if i is not None})
    if len(known) < len(set(ids)):
        return None
    return f"{','.join(map(str, known))}@{path}"


def clustering_fields(spec: ClusteringSpec, path: str) -> dict[str, str]:
    """The properties naming the clustered columns of ``spec`` (stored in the file ``path``), those of
    them whose coordinate follows the column's order, and its curve; none when a column is known only by
    name."""
    clustered = fields_value(spec.field_ids, path)
    ordered = fields_value([c.field_id for c in spec.columns if not isinstance(c.mapping, DimensionMapping)], path)
    if clustered is None or ordered is None:
        return {}
    return {
        CLUSTERED_FIELDS_PROPERTY: clustered,
        VALUE_ORDERED_FIELDS_PROPERTY: ordered,
        CURVE_PROPERTY: f"{spec.curve}@{path}",
    }
