"""File selection and grouping for optimize: pure decisions over file metadata."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from zskip.layout.groups import DataFileInfo, batches, plan_groups, select_files

MB = 1 << 20


def files(*sizes_mb: float, partition: str = "") -> list[DataFileInfo]:
    return [DataFileInfo(f"f{partition}{i}", partition, int(s * MB), int(s * 1000)) for i, s in enumerate(sizes_mb)]


def test_groups_never_mix_partitions_and_respect_the_group_size() -> None:
    infos = files(40, 40, 40, partition="a") + files(10, partition="b")
    groups = plan_groups(infos, target_file_size_bytes=32 * MB, max_group_size_bytes=100 * MB)
    assert [(g.partition_key, len(g.files)) for g in groups] == [("a", 2), ("a", 1), ("b", 1)]
    assert [g.output_files for g in groups] == [3, 1, 1]  # 80 MB / 32 MB = 2.5 rounds to 3; 10 MB still one


@given(st.lists(st.floats(0.1, 500), min_size=1, max_size=60), st.integers(1, 12))
def test_batches_keep_order_and_cover_every_group(sizes: list[float], commits: int) -> None:
    groups = plan_groups(files(*sizes), target_file_size_bytes=64 * MB, max_group_size_bytes=256 * MB)
    split = batches(groups, max_commits=commits)
    assert [g for batch in split for g in batch] == groups
    assert 1 <= len(split) <= commits and all(split)


def test_incremental_selection() -> None:
    old, new = files(100, 100, 100), [DataFileInfo("new", "", 10 * MB, 10)]
    generations = {f.path: 0 for f in old}
    assert select_files(old, generations, mode="incremental").files == ()
    picked = select_files(old + new, generations, mode="incremental")
    assert [f.path for f in picked.files] == ["new"] and not picked.full
    many_new = [DataFileInfo(f"n{i}", "", 100 * MB, 1) for i in range(3)]
    assert select_files(old + many_new, generations, mode="incremental").full  # half the bytes unclustered
    aged = {f.path: i for i, f in enumerate(files(*[10] * 9))}
    assert select_files(files(*[10] * 9) + new, aged, mode="incremental").full  # nine generations
    assert select_files(old, None, mode="incremental").full
    assert select_files(old, generations, mode="full").full
