"""Print requirements declared in pyproject.toml, separated by spaces, for `pip install $(...)`
in the Makefile, so that it installs exactly what the project declares (and nothing twice):

    python scripts/requirements.py build            # [build-system] requires
    python scripts/requirements.py test,spark,...   # [project] dependencies + those extras
    python scripts/requirements.py --only paimon-fixtures   # just that extra (its own environment)

No quoting happens, so no requirement may contain a space.
"""
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pip vendors the same parser
    from pip._vendor import tomli as tomllib

pyproject = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
if sys.argv[1:] == ["build"]:
    requires = pyproject["build-system"]["requires"]
else:
    only = sys.argv[1:2] == ["--only"]
    extras = pyproject["project"]["optional-dependencies"]
    wanted = [e for arg in sys.argv[1 + only:] for e in arg.split(",") if e]
    unknown = [e for e in wanted if e not in extras]
    if unknown:
        sys.exit(f"unknown extras {unknown}; pyproject.toml declares {sorted(extras)}")
    requires = ([] if only else list(pyproject["project"]["dependencies"])) + [r for e in wanted for r in extras[e]]
if any(" " in r for r in requires):
    sys.exit(f"a requirement contains a space: {requires}")
print(" ".join(dict.fromkeys(requires)))
