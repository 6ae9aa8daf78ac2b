"""A wheel built from the repository, installed into a fresh virtual environment on a PATH without Maven
or a Java compiler: it carries zskip's jars, so its ``zskip`` command finds them and a star query with
zskip enabled runs with only the Java runtime Spark needs (and the Iceberg runtime already in the local
Maven repository).  (``zskip demo`` itself runs in test_demo.py.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
NOT_ON_PATH = {"mvn", "mvnDebug", "mvnyjp", "javac"}


def path_without_maven(folder: Path) -> str:
    """A PATH of one folder linking every command of the current PATH but Maven's and javac."""
    folder.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory) or ".venv" in directory:
            continue
        for entry in os.scandir(directory):
            target = folder / entry.name
            if entry.name not in NOT_ON_PATH and not target.exists():
                target.symlink_to(entry.path)
    return str(folder)


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1200, **kwargs)
    assert done.returncode == 0, f"{command[:3]} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def test_a_wheel_runs_its_command_and_a_star_query_without_maven(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)])
    (wheel,) = dist.glob("zskip-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert {"zskip/jars/zskip-spark-3.5_2.12.jar", "zskip/jars/zskip-spark-4.1_2.13.jar"} <= set(names)
    assert not any(n.endswith(".java") for n in names)

    venv = tmp_path / "fresh"
    run([sys.executable, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    # zskip's dependencies from this environment (a path, not a site directory: its editable zskip stays
    # out of reach), so that only the wheel is installed: installing PySpark again takes half a minute
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip()
    ours = run([sys.executable, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip()
    Path(site, "dependencies.pth").write_text(ours + "\n")
    run([python, "-m", "pip", "install", "-q", "--no-deps", str(wheel)])
    where = run([python, "-c", "import zskip, pyspark; print(zskip.__file__)"], cwd=tmp_path).stdout.strip()
    assert where.startswith(str(venv)), where  # the wheel's zskip, not the checkout's
    path = path_without_maven(tmp_path / "bin")
    assert shutil.which("mvn", path=path) is None and shutil.which("java", path=path) is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_", "PYTHON"))}
    env |= {"PATH": f"{venv / 'bin'}{os.pathsep}{path}", "SPARK_LOCAL_IP": "127.0.0.1"}

    work = tmp_path / "work"
    work.mkdir()
    jars = run([str(venv / "bin" / "zskip"), "jars"], cwd=work, env=env).stdout.split()
    assert jars[0].startswith(str(venv)) and jars[0].endswith("zskip-spark-4.1_2.13.jar"), jars
    assert "iceberg-spark-runtime-4.1" in jars[1], jars

    env["PYTHONPATH"] = str(ROOT / "tests" / "integration")  # the test's star schema, not zskip
    star = run([python, str(Path(__file__).with_name("star_job.py")), str(tmp_path / "warehouse")], cwd=work, env=env)
    found = json.loads(star.stdout.strip().splitlines()[-1])
    assert found["equal"] and found["planned"] >= 1 and found["failures"] == 0, found
    assert str(venv) in found["jar"] and found["jar"].endswith("zskip-spark-4.1_2.13.jar"), found
