"""mergetree's asv suite (``asv.conf.json``'s ``benchmark_dir``).

Its inputs come from the repository's ``benchmarks`` package (``benchmarks/data.py``,
``benchmarks/queries.py``), so asv and ``mergetree bench`` time the same generated data.  asv puts
only this directory's parent (``asv_bench/``) on the import path of its benchmark processes, so the
repository root is added here, before any suite module imports ``benchmarks``.  (This directory is
not called ``benchmarks``, asv's default: asv would import it under that name and hide the root
package.)
"""
import os
import sys

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)
