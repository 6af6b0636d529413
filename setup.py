"""Builds the Cython core.  Compiler directives are set here, once, for every module."""
import os

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

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

extra_compile_args = ["-O3"]
if os.environ.get("MERGETREE_NATIVE"):  # local benchmarking only; wheels stay portable
    extra_compile_args.append("-march=native")


def cython_extension(module: str, source: str) -> Extension:
    return Extension(
        module,
        [source],
        include_dirs=[np.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=extra_compile_args,
    )


extensions = [
    cython_extension("mergetree._core", "_core/mergetree_core.pyx"),      # the merge
    cython_extension("mergetree._bucket", "_core/mergetree_bucket.pyx"),  # Spark bucket hashes
    cython_extension("mergetree._curves", "_core/mergetree_curves.pyx"),  # Z-order and Hilbert keys
    cython_extension("mergetree._bloom", "_core/mergetree_bloom.pyx"),    # Parquet Bloom filter probes
]

setup(
    ext_modules=cythonize(
        extensions,
        include_path=["_core"],
        compiler_directives=COMPILER_DIRECTIVES,
        build_dir="build/cython-checked" if CHECKED else None,
    ),
)
