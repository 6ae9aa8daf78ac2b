"""What zskip trusts of a table's files: only those inside the table's folder of zskip's files, and no
blob's word for how large it is once decompressed."""

from __future__ import annotations

import logging
import struct

import pyarrow as pa
import pytest

from zskip.errors import CorruptIndexError
from zskip.fileindex.manifest import ENTRY_SCHEMA, IndexManifest
from zskip.fileindex.puffin import MAX_DECOMPRESSED, checked_size, decode_blob
from zskip.tablefiles.locations import inside_table, manifest_inside, path_inside

LOCATION = "s3://lake/db/t"


@pytest.mark.parametrize(
    ("path", "inside"),
    [
        ("s3://lake/db/t/zskip/indexes/index-1.puffin", True),
        ("s3a://lake/db/t/zskip/manifest-2.puffin", True),  # the same store through S3A
        ("s3://lake/db/t/zskip/../../other/zskip/index.puffin", False),  # .. resolved first
        ("s3://lake/db/t/data/00000.parquet", False),  # the table's, but not zskip's folder
        ("s3://lake/db/t2/zskip/index.puffin", False),  # a neighbour whose name starts alike
        ("s3://other-bucket/db/t/zskip/index.puffin", False),
        ("gs://lake/db/t/zskip/index.puffin", False),
        ("/db/t/zskip/index.puffin", False),
        ("", False),
    ],
)
def test_a_file_is_inside_the_table_only_under_its_zskip_folder(path: str, inside: bool) -> None:
    assert inside_table(LOCATION, path) is inside


def test_local_paths_compare_whatever_their_slashes() -> None:
    assert inside_table("file:/w/db/t", "file:///w/db/t/zskip/x.puffin")
    assert inside_table("/w/db/t", "file:/w/db/t/zskip/x.puffin")
    assert not inside_table("file:/w/db/t", "file:/w/db/tt/zskip/x.puffin")


def test_a_property_naming_a_file_outside_the_table_is_ignored_with_one_warning(caplog) -> None:
    outside = "s3://someone-else/secrets/manifest.puffin"
    with caplog.at_level(logging.WARNING, logger="zskip.tablefiles.locations"):
        assert path_inside(LOCATION, outside, "the index manifest", "lake.db.t") is None
        assert path_inside(LOCATION, outside, "the index manifest", "lake.db.t") is None
    assert len(caplog.records) == 1 and outside in caplog.records[0].getMessage()
    inside = f"{LOCATION}/zskip/manifest.puffin"
    assert path_inside(LOCATION, inside, "the index manifest", "lake.db.t") == inside
    assert path_inside(LOCATION, None, "the index manifest", "lake.db.t") is None


def _entry(puffin: str) -> dict[str, object]:
    return {
        "data_file": f"{LOCATION}/data/{puffin[-8:]}.parquet",
        "field_id": 1,
        "column": "a",
        "kind": "bloom",
        "puffin_path": puffin,
        "offset": 4,
        "length": 10,
        "codec": None,
        "checksum": None,
        "rows": 5,
        "row_group_rows": [5],
        "head": None,
        "rest_offset": None,
        "part_offsets": None,
    }


def test_a_manifest_entry_whose_index_file_lies_outside_the_table_is_dropped() -> None:
    own = f"{LOCATION}/zskip/indexes/index-own.puffin"
    foreign = "s3://lake/db/other/zskip/indexes/index-foreign.puffin"
    entries = pa.Table.from_pylist([_entry(own), _entry(foreign)], schema=ENTRY_SCHEMA)
    manifest = IndexManifest.empty().with_entries(entries)
    kept = manifest_inside(manifest, LOCATION, "lake.db.t")
    assert kept.entries["puffin_path"].to_pylist() == [own]


def _zstd_frame_declaring(size: int) -> bytes:
    """A zstd frame header saying its content is ``size`` bytes (8-byte content size, single segment),
    followed by a few bytes of nothing."""
    return b"\x28\xb5\x2f\xfd" + bytes([0xE0]) + struct.pack("<Q", size) + b"\x00" * 8


def test_a_blob_declaring_a_gibibyte_is_damaged_before_anything_is_allocated() -> None:
    with pytest.raises(CorruptIndexError, match="declares 1,073,741,824 bytes"):
        decode_blob(_zstd_frame_declaring(1 << 30), codec="zstd", checksum=None, name="blob x")


def test_a_real_blob_decompresses_within_its_bounds() -> None:
    data = b"zskip " * 10_000  # compresses about 1,000 times
    stored = pa.Codec("zstd").compress(data, asbytes=True)
    assert decode_blob(stored, codec="zstd", checksum=None, name="blob y") == data


def test_declared_sizes_are_bounded_by_the_stored_size_and_in_all() -> None:
    assert checked_size(4_096, 1, "x") == 4_096  # a page whatever the stored size
    with pytest.raises(CorruptIndexError):
        checked_size(10_000_000, 100, "x")
    with pytest.raises(CorruptIndexError):
        checked_size(MAX_DECOMPRESSED + 1, MAX_DECOMPRESSED, "x")
    with pytest.raises(CorruptIndexError):
        checked_size(-1, 10, "x")
