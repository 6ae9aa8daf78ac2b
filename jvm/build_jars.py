"""Build zskip's jars (one per Spark line) with Maven and put them where the Python package finds them.

    python jvm/build_jars.py            # mvn package (with the JUnit tests), then copy into src/zskip/jars/
    python jvm/build_jars.py --skip-tests

``make jars`` and the package build (``pip install .``, a wheel) run this; a wheel carries the jars, so
whoever installs one needs no Maven and no JDK.  Only the standard library: it runs before anything
is installed.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

JVM = Path(__file__).resolve().parent
TARGET = JVM.parent / "src" / "zskip" / "jars"
MODULES = {"spark-3.5": "zskip-spark-3.5_2.12.jar", "spark-4.1": "zskip-spark-4.1_2.13.jar"}


def build(target: Path = TARGET, *, tests: bool = True) -> list[Path]:
    """Build both jars and copy them into ``target``; the paths copied."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SystemExit(
            "building zskip's jars needs Maven (mvn) and a JDK 17: install them (apt-get install maven "
            "openjdk-17-jdk-headless), or install zskip from a built wheel"
        )
    command = [mvn, "-B", "-q", "-f", str(JVM / "pom.xml"), "package"]
    if not tests:
        command.append("-DskipTests")
    print("building zskip's jars:", " ".join(command[1:]), file=sys.stderr)
    done = subprocess.run(command)
    if done.returncode != 0:
        raise SystemExit(f"Maven could not build zskip's jars (exit code {done.returncode}); see its output above")
    target.mkdir(parents=True, exist_ok=True)
    copied = []
    for module, name in MODULES.items():
        built = JVM / module / "target" / name
        shutil.copyfile(built, target / name)
        copied.append(target / name)
    return copied


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip-tests", action="store_true", help="do not run the JUnit tests")
    parser.add_argument("--target", type=Path, default=TARGET, help="where to put the jars (default: src/zskip/jars)")
    options = parser.parse_args()
    for path in build(options.target, tests=not options.skip_tests):
        print(path)


if __name__ == "__main__":
    main()
