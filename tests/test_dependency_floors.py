"""Every declared dependency floor holds: the lowest versions pyproject.toml allows for the core
and for each runtime extra are installed into a fresh virtual environment beside a wheel of the
project, where the README's engines example, a table round trip (also on S3) and a local Spark
write and read run (tests/floors_smoke.py).

A requirement without a floor fails here: a floor nobody installs is a guess.  Needs the network
(or pip's cache) and about a minute and a half, Spark's start included; MERGETREE_SKIP_FLOORS=1
(or MERGETREE_SKIP_FRESH_ENVS=1) skips the runs that install anything."""
from __future__ import annotations

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

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pip vendors the same parser
    from pip._vendor import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
# extras that are not mergetree at run time: its development tools, the benchmark's peers, and
# the separate Paimon environments (pinned on purpose); every other extra is checked
NOT_RUNTIME = ("test", "lint", "bench", "paimon-fixtures", "paimon-java-fixtures")
SKIP_INSTALLS = pytest.mark.skipif(
    "1" in (os.environ.get("MERGETREE_SKIP_FLOORS"), os.environ.get("MERGETREE_SKIP_FRESH_ENVS")),
    reason="MERGETREE_SKIP_FLOORS=1: no fresh environment of the dependency floors (offline)")


def _declared() -> tuple[list[str], dict[str, list[str]]]:
    if not PYPROJECT.exists():
        pytest.skip("pyproject.toml is not beside the tests (the installed-wheel check)")
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    return list(project["dependencies"]), dict(project["optional-dependencies"])


def _floor(text: str) -> tuple[Requirement, Version]:
    """The requirement and its one `>=` version; AssertionError when it has none."""
    req = Requirement(text)
    floors = [Version(s.version) for s in req.specifier if s.operator == ">="]
    assert len(floors) == 1, f"{text!r} declares no floor (>=X): its lowest version is never installed or tested"
    return req, floors[0]


def runtime_floors() -> dict[str, tuple[str, Version]]:
    """name -> (what to install, its floor) over the core's dependencies and the runtime extras,
    markers evaluated for this interpreter; a name floored in several places takes the highest
    (the lowest version the metadata lets all of them install together)."""
    core, extras = _declared()
    out: dict[str, tuple[str, Version]] = {}
    for text in core + [r for name, reqs in extras.items() if name not in NOT_RUNTIME for r in reqs]:
        req, floor = _floor(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(req.name)
        spelled = req.name + (f"[{','.join(sorted(req.extras))}]" if req.extras else "")
        if name not in out or floor > out[name][1]:
            out[name] = (spelled, floor)
        elif req.extras and "[" not in out[name][0]:
            out[name] = (spelled, out[name][1])
    return out


def test_every_runtime_requirement_declares_a_floor_and_the_benchmark_the_same_ones():
    core, extras = _declared()
    runtime = [r for name, reqs in extras.items() if name not in NOT_RUNTIME for r in reqs]
    for text in core + runtime:
        _floor(text)  # fails naming a requirement without one
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
    """The Python of a fresh virtual environment with every runtime floor and a wheel of the
    project (built once, from a copy of the sources, so the checkout gets no build files)."""
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
    venv = base / "venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)], check=True,
                   timeout=300)
    python = venv / "bin" / "python"
    pins = [f"{spelled}=={floor}" for spelled, floor in floors.values()]
    # the wheel's own requirements are the floors' names: with the pins they resolve to the floors
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
