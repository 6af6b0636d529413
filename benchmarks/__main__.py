"""``python -m benchmarks``: the same as ``mergetree bench`` (every option is ``benchmarks/bench.py``'s)."""
import sys

from .bench import main

sys.exit(main())
