# Two commands on a fresh machine: `make demo` runs the main job, `make test` runs the tests.
# Each builds zskip's jars (jvm/, with Maven and a JDK 17, into src/zskip/jars/) and creates .venv
# (Python 3.10-3.12) with everything it needs from PyPI and the Iceberg runtime for its Spark from
# Maven (`zskip jars`, with mvn, into the local Maven repository).  `make test` also runs the JUnit
# tests, and creates .venv-spark3.5, the same with Spark 3.5, for the smoke suite.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
VENV35 ?= .venv-spark3.5
# pytest processes for the suites, each with its own Spark session (a test file runs whole in one of them)
TEST_WORKERS ?= 2
BIN35 := $(VENV35)/bin

JARS_BUILT := src/zskip/jars/.built
JVM_SOURCES := $(shell find jvm -name '*.java' -o -name pom.xml -o -name build_jars.py)

.PHONY: demo test environments jars docs docs-check smoke-spark3.5 smoke-iceberg1.11 lint typecheck unit integration bench clean

# both Spark lines' jars, with their JUnit tests, rebuilt when a Java source or POM changes
jars: $(JARS_BUILT)

$(JARS_BUILT): $(JVM_SOURCES)
	$(PYTHON) jvm/build_jars.py
	touch $@

# Each environment in two steps: its packages from PyPI (the two environments at once under make -j),
# then the Iceberg runtime from Maven (one resolution at a time: the local Maven repository is shared).
$(VENV)/.packages: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,docs]'
	touch $@

$(BIN)/.installed: $(VENV)/.packages $(JARS_BUILT)
	$(BIN)/zskip jars
	touch $@

$(VENV35)/.packages: pyproject.toml
	$(PYTHON) -m venv $(VENV35)
	$(BIN35)/pip install --quiet --upgrade pip
	$(BIN35)/pip install --quiet -e '.[dev]' 'pyspark>=3.5.2,<3.6'
	touch $@

$(BIN35)/.installed: $(VENV35)/.packages $(JARS_BUILT) | $(BIN)/.installed
	$(BIN35)/zskip jars
	touch $@

# both environments, built side by side (what `make test` needs before it runs anything)
environments:
	$(MAKE) -j2 $(BIN)/.installed $(BIN35)/.installed

demo: $(BIN)/.installed
	$(BIN)/zskip demo

# the checks side by side (each on its own is single-threaded or short; the output of each kept whole),
# then the whole suite
test: environments
	$(MAKE) -j2 --output-sync=target lint typecheck docs smoke-spark3.5 smoke-iceberg1.11
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --durations=25  # the slowest tests named: CI's time is budgeted

# the smoke suite (tests marked smoke) on Spark 3.5
smoke-spark3.5: $(BIN35)/.installed
	ZSKIP_READ_TABLES=2 $(BIN35)/pytest -n $(TEST_WORKERS) --dist loadfile -m smoke -p no:cacheprovider --durations=10

# part of the smoke suite on Spark 4.1 with Iceberg 1.11's runtime (zskip's jars are built against 1.12)
smoke-iceberg1.11: $(BIN)/.installed
	ZSKIP_ICEBERG_VERSION=1.11.0 ZSKIP_READ_TABLES=2 $(BIN)/pytest -m "smoke and iceberg_versions" -p no:cacheprovider --durations=5

# the documentation site (docs/, mkdocs.yml) into site/; --strict: a broken link, a missing page or
# reference, or a docstring that does not render fails the build
docs: $(BIN)/.installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# screenshots of the built site in headless Chromium (docs/screenshots/), to look at it as a reader does
docs-check: docs
	$(BIN)/python docs/screenshots.py site docs/screenshots

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(BIN)/.installed
	$(BIN)/mypy

unit: $(BIN)/.installed
	$(BIN)/pytest -m "not integration and not cluster"

integration: $(BIN)/.installed
	$(BIN)/pytest -m "integration or cluster"

bench: $(BIN)/.installed
	$(BIN)/python bench/curves.py
	$(BIN)/python bench/optimize.py --scale-factor 1
	$(BIN)/python bench/indexes.py --scale-factor 1
	$(BIN)/python bench/planning.py --scale-factor 1

clean:
	rm -rf $(VENV) $(VENV35) warehouse site .pytest_cache .mypy_cache .ruff_cache src/zskip/jars jvm/*/target
