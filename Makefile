# Every target sets itself up: a virtual environment in .venv with the dependencies pyproject.toml
# declares (read by scripts/requirements.py), and an in-place build of the core.  Each target
# installs what it runs and no more: the core's build requirements and runtime dependencies first,
# then `make demo` the demo's extra only, `make test` and `make lint` every extra the tests use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
EXTRAS := test,spark,bench,lint,report,demo,iceberg
BASE_STAMP := $(VENV)/.base-installed
DEMO_STAMP := $(VENV)/.demo-installed
SPARK_DEMO_STAMP := $(VENV)/.spark-demo-installed
STAMP := $(VENV)/.deps-installed
# the in-place build is redone only when the core's sources or the build files change
CORE_STAMP := $(VENV)/.core-built
CORE_SOURCES := $(wildcard _core/*.pyx _core/*.pxd _core/*.pxi) setup.py pyproject.toml

PAIMON_VENV := .venv-paimon
PAIMON_STAMP := $(PAIMON_VENV)/.deps-installed
PAIMON_JAVA_VENV := .venv-paimon-java
PAIMON_JAVA_STAMP := $(PAIMON_JAVA_VENV)/.deps-installed
FLOORS_VENV := .venv-floors
FLOORS_STAMP := $(FLOORS_VENV)/.deps-installed

.PHONY: demo demo-spark demo-env test test-envs lint bench build venv paimon-env floors-env wheel clean asv fuzz-checked

# set -f: no globbing of [extras]
$(BASE_STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	set -f; $(PY) -m pip install -q $$($(PY) scripts/requirements.py build) $$($(PY) scripts/requirements.py)
	touch $(BASE_STAMP)

$(DEMO_STAMP): $(BASE_STAMP)
	set -f; $(PY) -m pip install -q $$($(PY) scripts/requirements.py --only demo)
	touch $(DEMO_STAMP)

$(SPARK_DEMO_STAMP): $(BASE_STAMP)
	set -f; $(PY) -m pip install -q $$($(PY) scripts/requirements.py --only spark)
	touch $(SPARK_DEMO_STAMP)

$(STAMP): $(BASE_STAMP)
	set -f; $(PY) -m pip install -q $$($(PY) scripts/requirements.py --only $(EXTRAS))
	touch $(STAMP)

# what `make demo` installs, alone (tests/test_demo_setup.py runs it into a fresh environment)
demo-env: $(DEMO_STAMP)

venv: $(STAMP)

# pypaimon in an environment of its own (its pins clash with ours): the tests and the Paimon
# benchmark write real Paimon tables with it and read them back with it
$(PAIMON_STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(PAIMON_VENV)
	$(PAIMON_VENV)/bin/python -m pip install -q --upgrade pip
	set -f; $(PAIMON_VENV)/bin/python -m pip install -q $$($(PYTHON) scripts/requirements.py --only paimon-fixtures)
	touch $(PAIMON_STAMP)

# Apache Paimon's Java code (pypaimon 0.2.0's bundled jar, over py4j) in another: the tests check
# mergetree's tables against Java's reader, writer, compaction, expiry and orphan cleaning
$(PAIMON_JAVA_STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(PAIMON_JAVA_VENV)
	$(PAIMON_JAVA_VENV)/bin/python -m pip install -q --upgrade pip
	set -f; $(PAIMON_JAVA_VENV)/bin/python -m pip install -q $$($(PYTHON) scripts/requirements.py --only paimon-java-fixtures)
	touch $(PAIMON_JAVA_STAMP)

paimon-env: $(PAIMON_STAMP) $(PAIMON_JAVA_STAMP)

# the lowest version of every runtime requirement (tests/test_dependency_floors.py installs a wheel
# of the project into it and runs the README's examples there)
$(FLOORS_STAMP): pyproject.toml Makefile scripts/requirements.py
	rm -rf $(FLOORS_VENV)
	$(PYTHON) -m venv $(FLOORS_VENV)
	set -f; $(FLOORS_VENV)/bin/python -m pip install -q --disable-pip-version-check $$($(PYTHON) scripts/requirements.py --floors)
	touch $(FLOORS_STAMP)

floors-env: $(FLOORS_STAMP)

# every environment `make test` uses, installed side by side (each install mostly waits on one core
# or on the network: two at a time take little longer than one)
test-envs:
	$(MAKE) -j2 $(STAMP) $(PAIMON_STAMP) $(PAIMON_JAVA_STAMP) $(FLOORS_STAMP)

$(CORE_STAMP): $(BASE_STAMP) $(CORE_SOURCES)
	$(PY) -m pip install -q --no-build-isolation --no-deps -e .
	touch $(CORE_STAMP)

build: $(CORE_STAMP)

demo: $(DEMO_STAMP) build
	$(PY) -m mergetree demo

demo-spark: $(SPARK_DEMO_STAMP) build
	$(PY) -m mergetree demo-spark

# two workers (pytest-xdist): CI and most laptops have two cores or more, and each worker starts
# its own local Spark, so more workers would cost memory rather than time.  Nothing is installed
# on the system: without a Chromium the report's browser tests skip (`bash .ci/run` installs one)
test: test-envs
	$(MAKE) build
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  command -v google-chrome >/dev/null 2>&1 || \
	  echo "note: no Chromium here: the report's browser tests skip (bash .ci/run installs it)"
	$(PY) -m pytest -q -n 2 tests

# ruff (lint + import order) and mypy on the Python layer, cython-lint on the core
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks examples asv_bench scripts
	$(VENV)/bin/mypy
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/cython-lint _core

bench: $(STAMP) build paimon-env
	$(PY) -m mergetree bench

asv: $(STAMP) build
	cd asv_bench && ../$(PY) -m asv machine --yes >/dev/null
	cd asv_bench && ../$(PY) -m asv run --python=same --quick --show-stderr --set-commit-hash=$$(git rev-parse HEAD)
	cd asv_bench && ../$(PY) -m asv publish

# The malformed-Arrow fuzzer against a build of the core with Cython's bounds checks on.
fuzz-checked: $(STAMP)
	rm -rf build/checked build/cython-checked
	MERGETREE_BOUNDSCHECK=1 $(PY) setup.py -q build_ext --build-lib build/checked/lib --build-temp build/checked/tmp
	mkdir -p build/checked/pkg && cp -r src/mergetree build/checked/pkg/
	rm -f build/checked/pkg/mergetree/*.so && cp build/checked/lib/mergetree/*.so build/checked/pkg/mergetree/
	PYTHONPATH=build/checked/pkg $(PY) -c "import mergetree._core as c; print('checked core:', c.__file__)"
	PYTHONPATH=build/checked/pkg $(PY) tests/fuzz_malformed_arrow.py $${FUZZ_EXAMPLES:-3000} 7 2>/dev/null

wheel: $(STAMP)
	$(PY) -m pip wheel --no-build-isolation --no-deps -w dist .

clean:
	rm -rf build dist wheelhouse *.egg-info src/*.egg-info _core/*.c src/mergetree/*.so $(CORE_STAMP)
