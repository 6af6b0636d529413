"""Every declared dependency floor holds: the lowest versions pyproject.toml allows for the core
and for each runtime extra are installed into a virtual environment of their own (`make test`'s
.venv-floors, or a fresh one) beside a wheel of the project, where the README's engines example,
a table round trip (also on S3) and a local Spark write and read run (tests/floors_smoke.py).

A requirement without a floor fails here: a floor nobody installs is a guess.  Needs the network
(or pip's cache) and about a minute and a half, Spark's start included; MERGETREE_SKIP_FLOORS=1
(or MERGETREE_SKIP_FRESH_ENVS=1) skips the runs that install anything."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
# what the Makefile installs the floors from (and, while the main environment installs, into
# FLOORS_VENV): one reading of the floors for both
_REQUIREMENTS = ROOT / "scripts" / "requirements.py"
FLOORS_VENV = ROOT / ".venv-floors"
SKIP_INSTALLS = pytest.mark.skipif(
    "1" in (os.environ.get("MERGETREE_SKIP_FLOORS"), os.environ.get("MERGETREE_SKIP_FRESH_ENVS")),
    reason="MERGETREE_SKIP_FLOORS=1: no fresh environment of the dependency floors (offline)")


def _requirements():
    if not PYPROJECT.exists() or not _REQUIREMENTS.exists():
        pytest.skip("pyproject.toml is not beside the tests (the installed-wheel check)")
    spec = importlib.util.spec_from_file_location("mergetree_requirements", _REQUIREMENTS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _floor(text: str) -> tuple[Requirement, Version]:
    """The requirement and its one `>=` version; AssertionError when it has none."""
    try:
        return _requirements().floor_of(text)
    except ValueError as exc:
        raise AssertionError(str(exc)) from None


def runtime_floors() -> dict[str, tuple[str, Version]]:
    return _requirements().runtime_floors()


def test_every_runtime_requirement_declares_a_floor_and_the_benchmark_the_same_ones():
    requirements = _requirements()
    core, extras = requirements.declared()
    runtime = [r for name, reqs in extras.items() if name not in requirements.NOT_RUNTIME for r in reqs]
    for text in core + runtime:
        _floor(text)  # fails naming a requirement without one
    with pytest.raises(AssertionError, match="no floor"):
        _floor("rich<14")
    floors = runtime_floors()
    assert {"numpy", "pyarrow", "polars", "duckdb", "datafusion", "pyspark", "matplotlib"} <= set(floors)
    # the benchmark installs the engines too: a floor there that differs is one nobody tested
    for text in extras["bench"]:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        if name in floors:
            assert _floor(text)[1] == floors[name][1], (text, floors[name])


def _clean_env() -> dict[str, str]:
    """This process's environment without what would let the checkout or its .venv in."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV") and not k.startswith("PYSPARK_")}


@pytest.fixture(scope="module")
def floor_env(tmp_path_factory) -> Path:
    """The Python of a virtual environment with every runtime floor and a wheel of the project
    (built once, from a copy of the sources, so the checkout gets no build files).  The
    environment is `make test`'s .venv-floors when it has one (installed beside the main
    environment, at the same time), else a fresh one here."""
    floors = runtime_floors()
    base = tmp_path_factory.mktemp("floors")
    source = base / "source"
    for name in ("src", "_core"):
        shutil.copytree(ROOT / name, source / name,
                        ignore=shutil.ignore_patterns("*.so", "__pycache__", "*.egg-info", "*.html"))
    for name in ("setup.py", "pyproject.toml", "README.md", "MANIFEST.in"):
        shutil.copy2(ROOT / name, source / name)
    wheels = base / "wheels"
    # the core is compiled by this interpreter's Cython, setuptools and numpy (the build requirements)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps",
                            "-w", str(wheels), str(source)], capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = wheels.glob("mergetree-*.whl")
    venv = FLOORS_VENV if (FLOORS_VENV / ".deps-installed").exists() else base / "venv"
    if venv != FLOORS_VENV:
        subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)], check=True,
                       timeout=300)
    python = venv / "bin" / "python"
    pins = [f"{spelled}=={floor}" for spelled, floor in floors.values()]
    # the wheel's own requirements are the floors' names: with the pins they resolve to the floors
    # (in .venv-floors, already there: only the wheel is installed, again)
    installed = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                "--force-reinstall", "--no-deps", str(wheel)], capture_output=True, text=True,
                               timeout=600, env=_clean_env())
    assert installed.returncode == 0, f"installing {wheel.name} failed:\n{installed.stderr[-3000:]}"
    installed = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                                str(wheel), *pins], capture_output=True, text=True, timeout=1800, env=_clean_env())
    assert installed.returncode == 0, f"installing the floors {pins} failed:\n{installed.stderr[-3000:]}"
    return python


def _smoke(python: Path, tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> dict:
    """Run floors_smoke.py (copied away from tests/, whose modules must not shadow anything) and
    return its report, after checking that it ran the installed floors and wheel."""
    floors = runtime_floors()
    script = tmp_path / "floors_smoke.py"
    shutil.copy2(Path(__file__).with_name("floors_smoke.py"), script)
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run([str(python), str(script), str(ROOT / "README.md"), str(work), *args,
                           *[f"--dist={n}" for n in floors]],
                          cwd=work, capture_output=True, text=True, timeout=900, env={**_clean_env(), **(env or {})})
    assert done.returncode == 0, f"the smoke run on the floors failed:\n{done.stderr[-4000:]}"
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert {n: Version(v) for n, v in report["versions"].items()} == {n: f for n, (_, f) in floors.items()}
    assert Path(report["mergetree"]).is_relative_to(python.parent.parent), report["mergetree"]
    return report


@SKIP_INSTALLS
def test_the_floors_run_the_readme_engines_example_and_a_round_trip(floor_env, tmp_path, request):
    env = {}
    try:  # a table on S3 too (obstore), when moto's server can run here
        server = request.getfixturevalue("s3_server")
        env["MERGETREE_FLOORS_S3"] = json.dumps({"uri": f"s3://lake/floors-{os.getpid()}-{tmp_path.name}",
                                                 "storage_options": server.options()})
    except pytest.skip.Exception:
        pass
    report = _smoke(floor_env, tmp_path, env=env)

    engines = report["engines"]
    assert engines["documented"] == ["[(2, 25), (3, 30)]", "[(25,)]", "[{'s': 55}]"]
    assert engines["printed"] == engines["documented"]

    # ids 0..99 (amount 1), then 90..109 (amount 2: ten upserts), then 0, 1, 2 deleted
    ids = range(3, 110)
    amount = {i: 2 if i >= 90 else 1 for i in ids}
    rt = report["round_trip"]
    assert rt["rows"] == 107 and rt["amount_sum"] == sum(amount.values())
    assert rt["point"] == [{"id": 95, "amount": 2}]
    assert rt["site_s3"] == sum(1 for i in ids if i % 7 == 3)
    assert rt["first_snapshot_rows"] == 100
    assert rt["after_compact"] == [107, [{"id": 95, "day": "2024-05-03", "site": "s4", "amount": 2},
                                         {"id": 105, "day": "2024-05-01", "site": "s0", "amount": 2}]]
    assert rt["polars"] == [[i, 2] for i in range(105, 110)] and rt["polars_head"] == 5
    day2 = [i for i in ids if i % 3 == 1]
    assert rt["duckdb"] == [[len(day2), sum(amount[i] for i in day2)]]
    assert rt["datafusion"] == [{"site": f"s{s}", "n": sum(1 for i in range(90, 110) if i % 7 == s)} for s in range(7)]
    assert rt["extracted"] == 1 and rt["imported"] == 2 and rt["advice_levers"] >= 1
    assert rt["pngs"] == ["columns.png", "levers.png", "scanned.png"]
    assert rt["cli"][:2] == [0, True], rt["cli"]
    assert report["iceberg"] == {"rows": 40, "march": [i for i in range(40) if i % 3 == 2], "files": [1, 3],
                                 "advised": 2}
    if "MERGETREE_FLOORS_S3" in env:
        assert report["s3"] == {"rows": [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "c"}],
                                "point": [{"id": 2, "v": "B"}]}


@SKIP_INSTALLS
def test_the_pyspark_floor_writes_and_reads_through_the_data_source(floor_env, tmp_path):
    if shutil.which("java") is None:
        pytest.skip("no java on PATH: a local Spark needs a JVM")
    report = _smoke(floor_env, tmp_path, "--spark-only")
    assert report["spark"] == {"rows": [[1, "a"], [2, "B"], [3, "c"]], "filtered": [[2, "B"]]}
