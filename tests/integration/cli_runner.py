"""Running the ``zskip`` command line in the test process, as a user would from a shell."""

from __future__ import annotations

import pytest

from zskip.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Exit code, standard output and standard error of ``zskip ARGV``."""
    code = 0
    try:
        main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err
