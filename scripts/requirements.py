"""Print requirements declared in pyproject.toml, separated by spaces, for `pip install $(...)`
in the Makefile, so that it installs exactly what the project declares (and nothing twice):

    python scripts/requirements.py build            # [build-system] requires
    python scripts/requirements.py test,spark,...   # [project] dependencies + those extras
    python scripts/requirements.py --only paimon-fixtures   # just that extra (its own environment)
    python scripts/requirements.py --floors         # name==floor of every runtime requirement

No quoting happens, so no requirement may contain a space.  `runtime_floors` is also what
tests/test_dependency_floors.py checks and installs.
"""
from __future__ import annotations

import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pip vendors the same parser
    from pip._vendor import tomli as tomllib
try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version
except ModuleNotFoundError:  # a bare interpreter: pip vendors packaging too
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.utils import canonicalize_name
    from pip._vendor.packaging.version import Version

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
# extras that are not mergetree at run time: its development tools, the benchmark's peers, and
# the separate Paimon environments (pinned on purpose); every other extra's floors are installed
NOT_RUNTIME = ("test", "lint", "bench", "paimon-fixtures", "paimon-java-fixtures")


def declared() -> tuple[list[str], dict[str, list[str]]]:
    """The [project] dependencies and the optional ones, by extra."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    return list(project["dependencies"]), dict(project["optional-dependencies"])


def floor_of(text: str) -> tuple[Requirement, Version]:
    """The requirement and its one `>=` version; ValueError when it has none."""
    req = Requirement(text)
    floors = [Version(s.version) for s in req.specifier if s.operator == ">="]
    if len(floors) != 1:
        raise ValueError(f"{text!r} declares no floor (>=X): its lowest version is never installed or tested")
    return req, floors[0]


def runtime_floors() -> dict[str, tuple[str, Version]]:
    """name -> (what to install, its floor) over the core's dependencies and the runtime extras,
    markers evaluated for this interpreter; a name floored in several places takes the highest
    (the lowest version the metadata lets all of them install together)."""
    core, extras = declared()
    out: dict[str, tuple[str, Version]] = {}
    for text in core + [r for name, reqs in extras.items() if name not in NOT_RUNTIME for r in reqs]:
        req, floor = floor_of(text)
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(req.name)
        spelled = req.name + (f"[{','.join(sorted(req.extras))}]" if req.extras else "")
        if name not in out or floor > out[name][1]:
            out[name] = (spelled, floor)
        elif req.extras and "[" not in out[name][0]:
            out[name] = (spelled, out[name][1])
    return out


def main(argv: list[str]) -> str:
    pyproject = tomllib.loads(PYPROJECT.read_text())
    if argv == ["build"]:
        requires = pyproject["build-system"]["requires"]
    elif argv == ["--floors"]:
        requires = [f"{spelled}=={floor}" for spelled, floor in runtime_floors().values()]
    else:
        only = argv[:1] == ["--only"]
        extras = pyproject["project"]["optional-dependencies"]
        wanted = [e for arg in argv[only:] for e in arg.split(",") if e]
        unknown = [e for e in wanted if e not in extras]
        if unknown:
            sys.exit(f"unknown extras {unknown}; pyproject.toml declares {sorted(extras)}")
        requires = ([] if only else list(pyproject["project"]["dependencies"])) + [r for e in wanted for r in extras[e]]
    if any(" " in r for r in requires):
        sys.exit(f"a requirement contains a space: {requires}")
    return " ".join(dict.fromkeys(requires))


if __name__ == "__main__":
    print(main(sys.argv[1:]))
