"""Golden tests of the planning stages (``tests/fixtures/stages/*.json``): for each case, a bound
predicate, the files' row-group statistics, and the row groups each stage keeps.

The snapshot metadata here is built in memory from the fixture (what ``SnapshotMetadata`` would
read from the files' footers); the stages are zskip's own, run by zskip's pipeline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from zskip.curves import ClusteringSpec, ColumnMapping, RankMapping, order_key_u64
from zskip.expr import And, Between, Compare, Expr, In, IsNull, Not, Opaque, Or
from zskip.expr.arrow import matching_rows
from zskip.fileindex.build import build_file_indexes
from zskip.fileindex.definition import IndexDefinition
from zskip.fileindex.manifest import IndexManifest
from zskip.iceberg.scan_types import Field, IcebergScan, JoinKeys
from zskip.planning.cache import CACHE
from zskip.planning.curve import RecordedKeyRanges
from zskip.planning.footers import ColumnStats, Footer, read_footer
from zskip.planning.index_reading import read_indexes_ahead, worth_reading
from zskip.planning.joins import JoinFilter
from zskip.planning.minmax_arrays import StatsColumn
from zskip.planning.pipeline import run_stages
from zskip.planning.plan import OPEN_FILE_COST_PROPERTY, Candidates, PlanInputs, Stage
from zskip.planning.stages import curve_range, iceberg_files, indexes, join_keys, read_ranges, row_group_minmax
from zskip.storage import LOCAL, FileAccess

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stages"


@dataclass
class MemoryMetadata:
    """The footers of a snapshot's files, given rather than read (only what these stages ask for)."""

    footers: dict[str, Footer]
    manifest_path: str | None = None
    storage: FileAccess = LOCAL  # local files: the fixtures' Puffin files sit in a temporary folder
    cache: dict[tuple[str, int], StatsColumn] = field(default_factory=dict)

    def footer(self, path: str) -> Footer:
        return self.footers[path]

    def row_groups(self, path: str) -> int:
        return self.footers[path].row_groups

    def prefetch_footers(self, paths: list[str]) -> None:
        pass

    def read_copies_ahead(self, paths: list[str]) -> None:
        pass

    def stats_column(self, path: str, field_id: int) -> StatsColumn:
        key = (path, field_id)
        if key not in self.cache:
            self.cache[key] = StatsColumn.of(list(self.footers[path].column(field_id)))
        return self.cache[key]

    def stats_columns(self, paths: list[str], field_ids: list[int]) -> dict[int, StatsColumn]:
        return {i: self.stats_over(paths, i) for i in field_ids}

    def stats_over(self, paths: list[str], field_id: int) -> StatsColumn:
        return StatsColumn.concat([self.stats_column(p, field_id) for p in paths])

    def manifest(self) -> IndexManifest | None:
        return None

    def store(self) -> None:
        return None


def _value(value: Any) -> Any:
    return float("nan") if value == "nan" else value


def footer(groups: list[dict[str, list[Any] | None]]) -> Footer:
    stats = []
    for group in groups:
        by_id = {}
        for field_id, found in group.items():
            if found is not None:
                low, high, nulls, values = found
                by_id[int(field_id)] = ColumnStats(_value(low), _value(high), values > 0, nulls, values)
        stats.append(by_id)
    ranges = tuple((4 + 1000 * g, 1000) for g in range(len(groups)))  # 1 KB each: gaps always join
    return Footer(tuple(10 for _ in groups), ranges, tuple(stats))


def predicate(node: list[Any]) -> Expr:
    """The fixtures' small bound-predicate notation: ``["=", field_id, value]``, ``["and", ...]``, ..."""
    op, *rest = node
    if op in ("and", "or"):
        return (And if op == "and" else Or)(tuple(predicate(child) for child in rest))
    if op == "not":
        return Not(predicate(rest[0]))
    if op == "is_null":
        return IsNull(rest[0])
    if op == "in":
        return In(rest[0], tuple(rest[1]))
    if op == "opaque":
        return Opaque(rest[0])
    if op == "between":
        return Between(rest[0], rest[1], rest[2])
    return Compare(rest[0], op, rest[1])


def kept(candidates: Candidates) -> dict[str, list[int] | None]:
    return {path: None if groups is None else list(groups) for path, groups in sorted(candidates.files.items())}


def cases(name: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    data = json.loads((FIXTURES / f"{name}.json").read_text())
    return [(data, case) for case in data["cases"]]


@pytest.mark.parametrize(
    ("data", "case"),
    cases("row_group_minmax"),
    ids=lambda c: json.dumps(c.get("predicate")) if "predicate" in c else "",
)
def test_row_group_minmax_and_read_ranges(data: dict[str, Any], case: dict[str, Any]) -> None:
    paths = tuple(sorted(data["files"]))
    metadata = MemoryMetadata({p: footer(data["files"][p]) for p in paths})
    scan = IcebergScan(
        0, "lake.db.t", "/t", 1, {}, frozenset(), Opaque("-"), {}, paths, (30,) * len(paths), (3000,) * len(paths)
    )
    floats = frozenset(int(i) for i in data["floats"])
    fields = {i: Field(f"c{i}", i, "double" if i in floats else "long") for i in (1, 2, 3)}
    inputs = PlanInputs(scan, predicate(case["predicate"]), metadata, fields=fields, floats=floats)  # type: ignore[arg-type]
    stages = (Stage("iceberg", iceberg_files, False, False), Stage("row groups", row_group_minmax, False, True))
    after_minmax, _ = run_stages(stages, inputs)
    assert kept(after_minmax) == case["row_group_minmax"]
    joined, _ = run_stages((*stages, Stage("read ranges", read_ranges, False, True)), inputs)
    assert kept(joined) == case["read_ranges"]


@dataclass
class IndexedMetadata(MemoryMetadata):
    """Footers plus a real index manifest over real Puffin files (built by zskip's own index builder)."""

    index_manifest: IndexManifest | None = None

    def manifest(self) -> IndexManifest | None:  # type: ignore[override]
        return self.index_manifest


def write_parquet(path: Path, groups: list[dict[str, list[Any]]]) -> None:
    schema = pa.schema(
        [
            pa.field("a", pa.int64(), metadata={b"PARQUET:field_id": b"1"}),
            pa.field("s", pa.string(), metadata={b"PARQUET:field_id": b"2"}),
        ]
    )
    with pq.ParquetWriter(path, schema) as writer:
        for group in groups:
            writer.write_table(pa.table(group, schema=schema))


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], IndexedMetadata, tuple[str, ...]]:
    data = json.loads((FIXTURES / "indexes.json").read_text())
    folder = tmp_path_factory.mktemp("indexed")
    definitions = [IndexDefinition(f"c{i}", kind, {}, i) for i, kind in data["indexes"]]
    entries = []
    paths = []
    for name, groups in sorted(data["files"].items()):
        path = folder / f"{name}.parquet"
        write_parquet(path, groups)
        paths.append(str(path))
        entries += build_file_indexes(str(path), definitions, str(folder / f"{name}.puffin")).entries
    manifest = IndexManifest(tuple(definitions), IndexManifest.empty().with_entries(entries).entries)
    footers = {p: read_footer(p) for p in paths}
    metadata = IndexedMetadata(footers, manifest_path=str(folder / "manifest"), index_manifest=manifest)
    return data, metadata, tuple(paths)


@pytest.mark.parametrize("number", range(len(json.loads((FIXTURES / "indexes.json").read_text())["cases"])))
def test_the_index_stage(indexed: tuple[dict[str, Any], IndexedMetadata, tuple[str, ...]], number: int) -> None:
    data, metadata, paths = indexed
    case = data["cases"][number]
    scan = IcebergScan(
        0, "lake.db.t", "/t", 1, {}, frozenset(), Opaque("-"), {}, paths, (4,) * len(paths), (1,) * len(paths)
    )
    # every file's indexes read, whatever min/max expect (these cases hold what the indexes answer)
    inputs = PlanInputs(scan, predicate(case["predicate"]), metadata, range_rows=0)  # type: ignore[arg-type]
    stages = (Stage("iceberg", iceberg_files, False, False), Stage("indexes", indexes, True, True))
    final, _ = run_stages(stages, inputs)
    names = {path: Path(path).stem for path in paths}
    assert {names[p]: g for p, g in kept(final).items()} == case["indexes"], case["predicate"]


# ---- whether a range's bitmaps are worth reading ----------------------------------------------------


@pytest.fixture(scope="module")
def costly(tmp_path_factory: pytest.TempPathFactory) -> tuple[IndexedMetadata, str]:
    """One file: a row group of 20,000 values from 0 to 29,999, then three of 50 rows each spread from
    0 to 999,999 with long texts beside them; a bitmap on ``a`` (far larger than ``a`` in the small
    row groups, far smaller than ``s`` there)."""
    folder = tmp_path_factory.mktemp("costly")
    rng = np.random.default_rng(7)
    dense = rng.permutation(30_000)[:20_000].tolist()
    groups = [{"a": dense, "s": ["x"] * len(dense)}]
    for _ in range(3):
        spread = [0, 999_999, *rng.integers(0, 1_000_000, 48).tolist()]  # bounds: 0 and 999,999
        groups.append({"a": spread, "s": [rng.bytes(2_000).hex() for _ in range(50)]})
    path = folder / "f.parquet"
    write_parquet(path, groups)
    definitions = [IndexDefinition("a", "bitmap", {}, 1)]
    entries = build_file_indexes(str(path), definitions, str(folder / "f.puffin")).entries
    manifest = IndexManifest(tuple(definitions), IndexManifest.empty().with_entries(entries).entries)
    metadata = IndexedMetadata(
        {str(path): read_footer(str(path))}, manifest_path=str(folder / "m"), index_manifest=manifest
    )
    return metadata, str(path)


def worth(
    metadata: IndexedMetadata, path: str, expr: Expr, *, read: tuple[int, ...] | None, open_cost: int | None = None
) -> list[str]:
    properties = {} if open_cost is None else {OPEN_FILE_COST_PROPERTY: str(open_cost)}
    scan = IcebergScan(
        0, "lake.db.t", "/t", 1, properties, frozenset(), Opaque("-"), {}, (path,), (20_150,), (1,), read_fields=read
    )
    inputs = PlanInputs(scan, expr, metadata)  # type: ignore[arg-type]
    return worth_reading(inputs, Candidates.of({path: None}), metadata.index_manifest)  # type: ignore[arg-type]


def test_a_range_bitmap_is_read_only_where_it_costs_less_than_what_it_could_rule_out(
    costly: tuple[IndexedMetadata, str],
) -> None:
    metadata, path = costly
    CACHE.clear()
    blob = sum(r.length for r in metadata.index_manifest.entries_by_file[path])  # type: ignore[union-attr]
    footer = metadata.footer(path)
    small_a = footer.bytes_of([1])[1:].sum()  # type: ignore[index]
    small_s = footer.bytes_of([2])[1:].sum()  # type: ignore[index]
    assert small_a < blob < small_s  # what the cases below rest on
    # a < 50: the dense row group surely holds matches (min/max expect 33), the small ones may not;
    # the file stays whatever the bitmap says, so only the small row groups are at stake
    narrow = Compare(1, "<", 50)
    assert worth(metadata, path, narrow, read=(1,)) == []  # reading a costs less than its bitmap
    assert worth(metadata, path, narrow, read=(1, 2)) == [path]  # a query reading the texts too
    assert worth(metadata, path, narrow, read=None) == [path]  # not known: the row groups whole
    # a band only the small row groups can hold: the bitmap may rule the whole file out, which saves
    # opening it (Iceberg's open-file cost, unless the table sets it lower)
    band = Between(1, 500_000, 500_010)
    assert worth(metadata, path, band, read=(1,)) == [path]
    assert worth(metadata, path, band, read=(1,), open_cost=0) == []
    # once the bitmap is read it costs nothing: every query after that uses it
    scan = IcebergScan(0, "lake.db.t", "/t", 1, {}, frozenset(), Opaque("-"), {}, (path,), (20_150,), (1,))
    read_indexes_ahead(PlanInputs(scan, narrow, metadata, range_rows=0), Candidates.of({path: None}))  # type: ignore[arg-type]
    assert worth(metadata, path, narrow, read=(1,)) == [path]
    CACHE.clear()


# ---- the curve stage and the join-keys stage ---------------------------------------------------------

NAMES = {1: "a", 2: "b"}


def named(node: list[Any]) -> list[Any]:
    """A fixture predicate with its field ids written as the columns' names (what rows are checked by)."""
    op, *rest = node
    if op in ("and", "or", "not"):
        return [op, *(named(child) for child in rest)]
    return [op, NAMES.get(rest[0], f"c{rest[0]}"), *rest[1:]]


@dataclass
class ClusteredMetadata(MemoryMetadata):
    """Footers plus a clustering store's spec and recorded key ranges (computed here from the rows)."""

    spec: ClusteringSpec | None = None
    ranges: RecordedKeyRanges | None = None

    def store(self) -> Any:  # type: ignore[override]
        return SimpleNamespace(spec=self.spec)

    def curve_ranges(self) -> RecordedKeyRanges:
        assert self.ranges is not None
        return self.ranges


def _clustered(data: dict[str, Any], curve: str) -> tuple[ClusteredMetadata, dict[str, list[pa.Table]]]:
    tables = {
        name: [pa.table({c: pa.array(group[c], pa.int64()) for c in ("a", "b")}) for group in groups]
        for name, groups in sorted(data["files"].items())
    }
    everything = pa.concat_tables([t for groups in tables.values() for t in groups])
    columns = tuple(
        ColumnMapping(c, RankMapping.fit(order_key_u64(everything[c]), 5), field_id=i, iceberg_type="long")
        for i, c in NAMES.items()
    )
    spec = ClusteringSpec(curve=curve, bits=5, columns=columns)
    rows: dict[str, list[Any]] = {"file_path": [], "row_group": [], "min_key": [], "max_key": []}
    footers = {}
    for name, groups in tables.items():
        keys = [spec.keys(t) for t in groups]
        for number, k in [(-1, np.concatenate(keys)), *enumerate(keys)]:
            rows["file_path"].append(name)
            rows["row_group"].append(number)
            rows["min_key"].append(int(k.min()))
            rows["max_key"].append(int(k.max()))
        footers[name] = footer(
            [{str(i): [min(t[c].to_pylist()), max(t[c].to_pylist()), 0, 4] for i, c in NAMES.items()} for t in groups]
        )
    ranges = RecordedKeyRanges.of(pa.table(rows, schema=RANGES_SCHEMA))
    return ClusteredMetadata(footers, spec=spec, ranges=ranges), tables


RANGES_SCHEMA = pa.schema(
    [("file_path", pa.string()), ("row_group", pa.int32()), ("min_key", pa.uint64()), ("max_key", pa.uint64())]
)


def _truth(tables: dict[str, list[pa.Table]], node: list[Any]) -> dict[str, set[int]]:
    """Per file, the row groups holding a row the predicate is true of."""
    expr = predicate(named(node))
    return {name: {g for g, t in enumerate(groups) if matching_rows(t, expr).any()} for name, groups in tables.items()}


def _holds_truth(kept_groups: dict[str, list[int] | None], truth: dict[str, set[int]]) -> bool:
    return all(
        not groups or (name in kept_groups and (kept_groups[name] is None or groups <= set(kept_groups[name] or ())))
        for name, groups in truth.items()
    )


@pytest.mark.parametrize(("data", "case"), cases("curve_range"), ids=lambda c: json.dumps(c.get("predicate", "")))
def test_the_curve_stage(data: dict[str, Any], case: dict[str, Any]) -> None:
    metadata, tables = _clustered(data, case["curve"])
    paths = tuple(tables)
    scan = IcebergScan(
        0, "lake.db.t", "/t", 1, {}, frozenset(), Opaque("-"), {}, paths, (4,) * len(paths), (1,) * len(paths)
    )
    fields = {i: Field(c, i, "long") for i, c in NAMES.items()}
    inputs = PlanInputs(scan, predicate(case["predicate"]), metadata, fields=fields)  # type: ignore[arg-type]
    stages = (Stage("iceberg", iceberg_files, False, False), Stage("curve", curve_range, True, False))
    final, _ = run_stages(stages, inputs)
    assert _holds_truth(kept(final), _truth(tables, case["predicate"])), "the stage dropped a matching row group"
    assert kept(final) == case["curve_range"]


@dataclass
class GivenKeys:
    """The keys each join's dimension side yields, given by the fixture (what a Spark job would find)."""

    keys: dict[str, pa.Array | None]

    def all(self, joins: Any) -> list[JoinFilter]:
        return [JoinFilter(j, self.keys[j.dimension]) for j in joins]

    def all_cached(self, joins: Any) -> bool:
        return True


@pytest.mark.parametrize(("data", "case"), cases("join_keys"), ids=lambda c: json.dumps(c.get("keys", "")))
def test_the_join_keys_stage(data: dict[str, Any], case: dict[str, Any]) -> None:
    tables = {
        name: [pa.table({"a": pa.array(group, pa.int64())}) for group in groups]
        for name, groups in sorted(data["files"].items())
    }
    footers = {
        name: footer([{"1": [min(g), max(g), 0, len(g)]} for g in groups])
        for name, groups in sorted(data["files"].items())
    }
    metadata = MemoryMetadata(footers)
    paths = tuple(tables)
    scan = IcebergScan(
        0, "lake.db.t", "/t", 1, {}, frozenset(), Opaque("-"), {}, paths, (4,) * len(paths), (1,) * len(paths)
    )
    joins = tuple(
        JoinKeys(n, 0, "a", Field("a", 1, "long"), dimension, None, "k", "", dimension)
        for n, dimension in enumerate(sorted(case["keys"]))
    )
    given = GivenKeys({d: None if k is None else pa.array(k, pa.int64()) for d, k in case["keys"].items()})
    inputs = PlanInputs(scan, Opaque("-"), metadata, joins=joins, join_filter=given)  # type: ignore[arg-type]
    stages = (Stage("iceberg", iceberg_files, False, False), Stage("join keys", join_keys, True, True))
    final, _ = run_stages(stages, inputs)
    # every row group holding a row the joins keep (its key among every dimension's keys) stays
    key_sets = [pa.array(k, pa.int64()) for k in case["keys"].values() if k is not None]
    holding = {
        name: {g for g, t in enumerate(groups) if _joined(t["a"], key_sets).any()} for name, groups in tables.items()
    }
    assert _holds_truth(kept(final), holding), "the stage dropped a row group holding a joined row"
    assert kept(final) == case["join_keys"]


def _joined(column: pa.ChunkedArray, key_sets: list[pa.Array]) -> np.ndarray:
    found = np.ones(len(column), dtype=bool)
    for keys in key_sets:
        found &= pc.is_in(column, keys).to_numpy(zero_copy_only=False)
    return found
