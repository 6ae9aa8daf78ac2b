"""The code examples of the documentation site: every ``python`` block of the getting-started and
how-to pages, in page order, and the reason given for each block that is shown but not run."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
# the pages whose examples must run, in the order they build on each other: the tour makes the table
# the how-to guides use
EXAMPLE_PAGES = (
    "getting-started/local.md",
    "getting-started/catalogs.md",
    "getting-started/cluster.md",
    "how-to/choose-a-layout.md",
    "how-to/star-schemas.md",
    "how-to/indexes.md",
    "how-to/keep-laid-out.md",
    "how-to/every-query.md",
    "how-to/every-client.md",
    "how-to/troubleshoot.md",
)
NOT_RUN = re.compile(r"<!--\s*not run[^:]*:\s*(?P<reason>.+?)\s*-->")


@dataclass(frozen=True)
class Example:
    page: str
    line: int  # of the opening fence, 1-based
    code: str
    not_run: str | None  # the reason the page gives for showing it without running it


def examples(page: str) -> list[Example]:
    """The ``python`` blocks of ``page`` (relative to docs/)."""
    lines = (DOCS / page).read_text().split("\n")
    found: list[Example] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i
            i += 1
            body = []
            while lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            above = lines[start - 1] if start > 0 else ""
            marked = NOT_RUN.search(above)
            found.append(Example(page, start + 1, "\n".join(body) + "\n", marked["reason"] if marked else None))
        i += 1
    return found
