# Every target sets itself up: a virtual environment in .venv and an in-place build of the core.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.deps-installed

.PHONY: demo demo-spark test bench build venv wheel clean asv

$(STAMP): pyproject.toml Makefile
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "setuptools>=77" wheel "Cython>=3.1" "numpy>=1.25" "pyarrow>=19" \
		"pytest>=7" "hypothesis>=6.100" "pyspark[sql]" "pandas<3"
	-$(PY) -m pip install -q polars duckdb matplotlib
	touch $(STAMP)

venv: $(STAMP)

build: $(STAMP)
	$(PY) -m pip install -q --no-build-isolation --no-deps -e .

demo: build
	$(PY) -m mergetree demo

demo-spark: build
	$(PY) -m mergetree demo-spark

test: build
	$(PY) -m pytest -q tests

bench: build
	$(PY) -m mergetree bench

asv: build
	$(PY) -m pip install -q asv
	cd asv_bench && ../$(PY) -m asv machine --yes >/dev/null
	cd asv_bench && ../$(PY) -m asv run --python=same --quick --show-stderr --set-commit-hash=$$(git rev-parse HEAD)
	cd asv_bench && ../$(PY) -m asv publish

wheel: $(STAMP)
	$(PY) -m pip wheel --no-build-isolation --no-deps -w dist .

clean:
	rm -rf build dist wheelhouse *.egg-info src/*.egg-info _core/*.c src/mergetree/*.so
