"""Builds the Cython core.  Compiler directives are set here, once, for every module."""
import os

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

COMPILER_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "cdivision": True,
    "initializedcheck": False,
    "nonecheck": False,
    "embedsignature": True,
    # not declared free-threading compatible: a MergeCore is a mutable state
    # machine meant for one thread at a time (the GIL serializes its methods)
}
# A checked build for the fuzz tests (`make fuzz-checked`): bounds checks everywhere, and
# its C sources kept apart so the normal build never picks them up.
CHECKED = bool(os.environ.get("MERGETREE_BOUNDSCHECK"))
if CHECKED:
    COMPILER_DIRECTIVES.update(boundscheck=True, wraparound=True, initializedcheck=True)

NATIVE = bool(os.environ.get("MERGETREE_NATIVE"))  # local benchmarking only; wheels stay portable


def compile_args(compiler_type: str) -> list[str]:
    """Optimization flags in the compiler's own dialect: MSVC rejects gcc's, and gcc/clang
    (Linux, macOS, MinGW) take the same ones."""
    if compiler_type == "msvc":
        return ["/O2"]  # MSVC has no -march=native; /arch defaults to a portable SSE2 baseline
    return ["-O3", "-march=native"] if NATIVE else ["-O3"]


class BuildExtPerCompiler(build_ext):
    """Picks the flags once the compiler is known: only here does setuptools say which it is."""

    def finalize_options(self) -> None:
        # the four modules compile side by side (a first `make demo` waits for the largest
        # alone); set here, as pip's editable build re-creates the command without setup()'s options
        if not self.parallel:
            self.parallel = os.cpu_count() or 1
        super().finalize_options()

    def build_extensions(self) -> None:
        flags = compile_args(self.compiler.compiler_type)
        for ext in self.extensions:
            ext.extra_compile_args = flags
        super().build_extensions()


def cython_extension(module: str, source: str) -> Extension:
    return Extension(
        module,
        [source],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )


extensions = [
    cython_extension("mergetree._core", "_core/mergetree_core.pyx"),      # the merge
    cython_extension("mergetree._bucket", "_core/mergetree_bucket.pyx"),  # Paimon bucket hashes
    cython_extension("mergetree._curves", "_core/mergetree_curves.pyx"),  # Z-order and Hilbert keys
    cython_extension("mergetree._bloom", "_core/mergetree_bloom.pyx"),    # Parquet Bloom filter probes
]

setup(
    cmdclass={"build_ext": BuildExtPerCompiler},
    ext_modules=cythonize(
        extensions,
        include_path=["_core"],
        compiler_directives=COMPILER_DIRECTIVES,
        build_dir="build/cython-checked" if CHECKED else None,
    ),
)
