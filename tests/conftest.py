"""Shared fixtures: one Spark session per test run, created only when an integration test asks."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.integration.jobs import GC_OPTIONS

# Shared 2-core machines time out wall-clock deadlines at random; correctness is what we test.
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", deadline=None, max_examples=2000, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("ZSKIP_HYPOTHESIS_PROFILE", "default"))

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("warehouse")


@pytest.fixture(scope="session")
def spark(warehouse: Path) -> Iterator[object]:
    import zskip

    session = zskip.session(
        warehouse=warehouse,
        master="local[2]",
        # Spark's own plans unless a test turns zskip on (tests/integration/switches.py): most tests
        # compare zskip against plain Spark, which zskip.session() would otherwise prune too
        conf={
            "spark.sql.shuffle.partitions": "4",
            "spark.default.parallelism": "2",
            "spark.zskip.enabled": "false",
            "spark.driver.extraJavaOptions": GC_OPTIONS,  # see tests/integration/jobs.py
        },
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[object]:
    """A throwaway PostgreSQL server (tests/integration/postgres.py), started on first use."""
    from tests.integration.postgres import missing, postgres_server

    reason = missing()
    if reason:
        pytest.skip(reason)
    with postgres_server() as server:
        yield server


# The test files taking the longest (measured: pytest --durations), run first: `make test` hands whole
# files to its workers in collection order, so a long file collected last keeps one worker busy while
# the other has nothing left to do.
LONGEST_FIRST = (
    "test_extension",
    "test_object_storage",
    "test_maintain",
    "test_ssb",
    "test_enable",
    "test_advise",
    "test_clustered_writes",
    "test_planning",
    "test_jdbc_catalog",
    "test_star_correctness",
    "test_read_correctness",
    "test_plan_regression",
    "test_advise_stars",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))  # stable: the rest keep their order
