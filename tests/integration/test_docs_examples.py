"""Every code example of the getting-started and how-to pages runs as it stands (tests/docs/examples.py
finds them): each page's blocks in order, in one namespace per page, the pages in the order they build
on each other, on the suite's Spark session with zskip on."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import pytest

import zskip
from tests.docs.examples import EXAMPLE_PAGES, examples
from tests.integration.switches import zskip_on

pytestmark = pytest.mark.integration


def test_every_example_runs_in_page_order(spark: Any) -> None:
    ran = []
    with zskip_on(spark):
        for page in EXAMPLE_PAGES:
            namespace: dict[str, Any] = {"spark": spark, "zskip": zskip}
            for example in examples(page):
                if example.not_run is not None:
                    continue
                shown = io.StringIO()
                try:
                    with contextlib.redirect_stdout(shown):
                        exec(compile(example.code, f"docs/{page}:{example.line}", "exec"), namespace)
                except Exception as exc:
                    raise AssertionError(f"the example at docs/{page}:{example.line} failed: {exc}") from exc
                ran.append(f"{page}:{example.line}")
    assert len(ran) >= 6, ran
