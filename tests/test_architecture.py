"""The house's shape, checked: `import mergetree` pulls no benchmark, demo, Spark or CLI code;
the package's imports form no cycle and point only downward through the layers
errors -> merge, storage -> codec (Paimon's format) -> table -> spark, organize, paimon, engines
-> cli; no module reaches into another's underscore names.  The benchmarks beside it (`benchmarks/`): no cycle either,
one harness per module, the dispatcher (`benchmarks/bench.py`, run by `mergetree bench` and
`python -m benchmarks`) the only module that imports a harness, the harnesses and the asv
suite sharing only the helper modules, and the package importing none of it (the CLI names
the dispatcher as a string, imported when `mergetree bench` runs)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import mergetree

PACKAGE = Path(mergetree.__file__).resolve().parent
# Lower layers never import higher ones; the package root only re-exports.
COMPILED = ("_core", "_bucket", "_curves", "_bloom")
LAYERS = {"errors": 0, **dict.fromkeys(COMPILED, 0), "merge": 1, "storage": 1, "codec": 2, "table": 3, "spark": 4,
          "organize": 4, "paimon": 4, "iceberg": 4, "engines": 4, "polars": 4, "duckdb": 4, "datafusion": 4, "cli": 5}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(name: str, path: Path, known: set[str]) -> list[tuple[str, ast.AST]]:
    """(imported mergetree module, node) for every import in the file, at any depth."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, node) for a in node.names if a.name.startswith("mergetree")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("mergetree"):
                continue
            out.append((target, node))
            for alias in node.names:  # `from . import filters` imports a module
                if f"{target}.{alias.name}" in known:
                    out.append((f"{target}.{alias.name}", node))
    return out


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        for target, _ in imports_of(name, path, known):
            if target in known and target != name and not name.startswith(target + "."):
                edges[name].add(target)  # a package's own parents are always imported first
    return edges


def test_import_mergetree_pulls_no_benchmark_demo_spark_or_cli_code():
    code = ("import sys, mergetree; bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('benchmarks', 'examples', 'pyspark', 'polars', 'duckdb', 'datafusion', 'rich') or "
            "m.startswith(('mergetree.spark', 'mergetree.cli', 'mergetree.engines'))); print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
    assert callable(mergetree.merge) and mergetree.Table.create  # the documented names work


def test_the_command_line_starts_without_pandas_or_pyarrow_dataset():
    """pyarrow.dataset imports pandas: together 0.3 s of every `mergetree` command's start, so
    the modules that use them import them when first used."""
    code = ("import sys, mergetree.cli; print(sorted(m for m in sys.modules if m.split('.')[0] == 'pandas' "
            "or m == 'pyarrow.dataset'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def assert_no_cycle(edges: dict[str, set[str]]) -> None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                cycle = stack[stack.index(n):] + [n]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if n not in state:
                visit(n)
        stack.pop()
        state[m] = 2
    for m in sorted(edges):
        if m not in state:
            visit(m)


def test_the_package_has_no_import_cycle():
    assert_no_cycle(graph())


def layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.get(parts[1]) if len(parts) > 1 else None


def test_imports_point_only_downward():
    wrong = []
    for name, targets in graph().items():
        own = layer(name)
        for target in targets:
            theirs = layer(target)
            if own is not None and theirs is not None and theirs > own:
                wrong.append(f"{name} imports {target}")
    assert not wrong, wrong


# the standard library's public functions whose names start with an underscore
PUBLIC_UNDERSCORE = {"os._exit"}


def test_no_module_reaches_into_another_modules_private_names():
    mods = modules()
    wrong = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        for target, node in imports_of(name, path, set(mods)):
            assert isinstance(node, (ast.Import, ast.ImportFrom))
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and f"{target}.{alias.name}" not in mods and alias.name not in COMPILED:
                    wrong.append(f"{name}: from {target} import {alias.name}")
        for node in ast.walk(tree):  # obj._private where obj is not self/cls (a module or another object)
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and isinstance(node.value, ast.Name) and node.value.id not in ("self", "cls", "_core", "_bucket",
                                                                                    "_metadata")
                    and f"{node.value.id}.{node.attr}" not in PUBLIC_UNDERSCORE):
                wrong.append(f"{name}:{node.lineno}: {node.value.id}.{node.attr}")
    assert not wrong, wrong


# what reading, merging, planning a read, compacting and computing changes take: the engine's
# (`mergetree.table`), which `mergetree.paimon` may only call through its entry points
ENGINE_INTERNALS = ("mergetree._core", "mergetree.merge.", "mergetree.table.files", "mergetree.table.read",
                    "mergetree.table.changes", "mergetree.table.compaction.dv", "mergetree.table.paimon.files",
                    "mergetree.table.paimon.writer")
FILE_FORMATS = ("pyarrow.parquet", "pyarrow.orc", "pyarrow.dataset")


def test_one_engine_no_read_compaction_or_change_code_under_paimon():
    """`mergetree.paimon` is Paimon's front door, not a second engine: it reads no data file,
    merges nothing, plans no read and computes no change itself — it calls `Table` and the
    engine's write and compaction entry points, which run every table of either format."""
    mods = modules()
    wrong = []
    for name, path in mods.items():
        if not name.startswith("mergetree.paimon"):
            continue
        for target, _ in imports_of(name, path, set(mods)):
            if target.startswith(ENGINE_INTERNALS):
                wrong.append(f"{name} imports {target}")
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            wrong += [f"{name} imports {n}" for n in names if n.startswith(FILE_FORMATS)]
    assert not wrong, wrong
    assert {n for n in mods if n.startswith("mergetree.paimon.")} <= {
        "mergetree.paimon.handle", "mergetree.paimon.info", "mergetree.paimon.write"}


def test_every_public_module_declares_all():
    missing = []
    for name, path in modules().items():
        if any(part.startswith("_") for part in name.split(".")[1:]) or name.endswith("__main__"):
            continue
        if "__all__" not in path.read_text():
            missing.append(name)
    assert not missing, missing


# ---------------------------------------------------------------- the benchmarks beside the package

ROOT = Path(__file__).resolve().parent.parent  # the checkout beside these tests (not the installed package's)
BENCHMARKS = ROOT / "benchmarks"
# the wheel check runs these tests against an installed wheel, without the checkout's benchmarks
beside_the_benchmarks = pytest.mark.skipif(not (BENCHMARKS / "bench.py").is_file(),
                                           reason="the benchmarks are not beside the tests")
ASV_SUITE = ROOT / "asv_bench" / "asv_benchmarks"
DISPATCHER = "benchmarks.bench"
MAIN = "benchmarks.__main__"


def benchmark_modules() -> dict[str, Path]:
    return {"benchmarks." + p.stem: p for p in sorted(BENCHMARKS.glob("*.py")) if p.stem != "__init__"}


def is_harness(module: str) -> bool:
    """A harness: one workload against its peers (`benchmarks/bench_<workload>.py`)."""
    return module.startswith("benchmarks.bench_")


def benchmark_imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The `benchmarks.*` modules a file imports, at any depth (`from . import x`, `from .x import y`,
    `from benchmarks import x`, `import benchmarks.x`)."""
    package = "benchmarks" if name.startswith("benchmarks.") else ""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom):
            target = (".".join([package] + ([node.module] if node.module else [])) if node.level
                      else node.module or "")
            if target in known:
                out.add(target)
            out |= {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known}
    return out


def benchmark_graph() -> dict[str, set[str]]:
    mods = benchmark_modules()
    return {name: benchmark_imports(name, path, set(mods)) - {name} for name, path in mods.items()}


@beside_the_benchmarks
def test_the_benchmarks_are_the_dispatcher_harnesses_and_helpers():
    mods = benchmark_modules()
    assert DISPATCHER in mods and MAIN in mods
    harnesses = [m for m in mods if is_harness(m)]
    assert {"benchmarks.bench_merge", "benchmarks.bench_table", "benchmarks.bench_layout"} <= set(harnesses)
    # `python -m benchmarks` is `mergetree bench`: __main__ runs the dispatcher and nothing else
    assert benchmark_graph()[MAIN] == {DISPATCHER}


def test_the_benchmarks_have_no_import_cycle():
    assert_no_cycle(benchmark_graph())


def test_only_the_dispatcher_imports_a_harness():
    wrong = [f"{name} imports {target}" for name, targets in benchmark_graph().items() for target in sorted(targets)
             if is_harness(target) and name != DISPATCHER]
    assert not wrong, wrong


@beside_the_benchmarks
def test_the_asv_suite_takes_only_shared_helpers_from_the_benchmarks():
    known = set(benchmark_modules())
    wrong = []
    for path in sorted(ASV_SUITE.glob("*.py")):
        for target in sorted(benchmark_imports("asv_benchmarks." + path.stem, path, known)):
            if is_harness(target) or target in (DISPATCHER, MAIN):
                wrong.append(f"asv_bench/asv_benchmarks/{path.name} imports {target}")
    assert not wrong, wrong
    # asv imports its suite under the benchmark_dir's own name: were it `benchmarks`, it would hide ours
    assert '"benchmark_dir": "asv_benchmarks"' in (ROOT / "asv_bench" / "asv.conf.json").read_text()


@beside_the_benchmarks
def test_the_package_imports_no_benchmark_and_the_cli_names_the_dispatcher():
    wrong = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            wrong += [f"{name} imports {n}" for n in names if n.split(".")[0] in ("benchmarks", "examples")]
    assert not wrong, wrong
    from mergetree.cli import app

    forwarded = {command: module for command, module, _ in app.FORWARDED}
    assert forwarded["bench"] == DISPATCHER
    tree = ast.parse(benchmark_modules()[DISPATCHER].read_text())
    assert any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body)
