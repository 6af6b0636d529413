"""The house's shape, checked: `import mergetree` pulls no benchmark, demo, Spark or CLI code;
the package's imports form no cycle and point only downward through the layers
errors -> merge -> table -> spark, organize, paimon -> cli; no module reaches
into another's underscore names."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import mergetree

PACKAGE = Path(mergetree.__file__).resolve().parent
# Lower layers never import higher ones; the package root only re-exports.
COMPILED = ("_core", "_bucket", "_curves", "_bloom")
LAYERS = {"errors": 0, **dict.fromkeys(COMPILED, 0), "merge": 1, "table": 2, "spark": 3, "organize": 3, "paimon": 3,
          "cli": 4}


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
            "('benchmarks', 'examples', 'pyspark', 'polars', 'duckdb', 'rich') or m.startswith(('mergetree.spark', "
            "'mergetree.cli'))); print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
    assert callable(mergetree.merge) and mergetree.Table.create  # the documented names work


def test_the_package_has_no_import_cycle():
    edges = graph()
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
                                                                                    "_metadata")):
                wrong.append(f"{name}:{node.lineno}: {node.value.id}.{node.attr}")
    assert not wrong, wrong


def test_every_public_module_declares_all():
    missing = []
    for name, path in modules().items():
        if any(part.startswith("_") for part in name.split(".")[1:]) or name.endswith("__main__"):
            continue
        if "__all__" not in path.read_text():
            missing.append(name)
    assert not missing, missing
