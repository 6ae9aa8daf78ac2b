"""The documentation site keeps up with the code: a short README, every public name and every
``spark.zskip.*`` setting in the reference, and every example either run or saying why not."""

from __future__ import annotations

import re

import zskip
from tests.docs.examples import DOCS, EXAMPLE_PAGES, examples

ROOT = DOCS.parent


def test_the_readme_is_short() -> None:
    assert len((ROOT / "README.md").read_text().split("\n")) <= 200


def test_every_public_name_is_in_the_reference() -> None:
    reference = (DOCS / "reference" / "python-api.md").read_text() + (DOCS / "reference" / "errors.md").read_text()
    documented = set(re.findall(r"^::: ([\w.]+)", reference, re.M))
    missing = [
        name
        for name in zskip.__all__
        if name != "__version__"
        and not any(d == f"zskip.{name}" or d.endswith(f".{name}") for d in documented)
        and not (name.endswith("Error") and "::: zskip.errors" in reference)
    ]
    assert not missing, f"add them to docs/reference/python-api.md: {missing}"


def test_every_setting_zskip_reads_is_in_the_settings_reference() -> None:
    pattern = re.compile(r"spark\.zskip\.[A-Za-z][A-Za-z.]*[A-Za-z]")
    sources = [*(ROOT / "src").rglob("*.py"), *(ROOT / "jvm").rglob("*.java")]
    used = {m for path in sources for m in pattern.findall(path.read_text())}
    documented = set(pattern.findall((DOCS / "reference" / "settings.md").read_text()))
    assert used, "found no setting: the pattern is wrong"
    assert used <= documented, f"add them to docs/reference/settings.md: {sorted(used - documented)}"


def test_every_example_page_is_in_the_site_and_every_block_runs_or_says_why_not() -> None:
    site = (ROOT / "mkdocs.yml").read_text()
    pages = {
        p.relative_to(DOCS).as_posix() for folder in ("getting-started", "how-to") for p in (DOCS / folder).glob("*.md")
    }
    assert pages == set(EXAMPLE_PAGES), "tests/docs/examples.py lists the pages whose examples run"
    run = 0
    for page in EXAMPLE_PAGES:
        assert page in site
        for example in examples(page):
            if example.not_run is not None:
                assert len(example.not_run) > 10, example  # a reason a reader can act on
            else:
                compile(example.code, f"{page}:{example.line}", "exec")
                run += 1
    assert run >= 6
