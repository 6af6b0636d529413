"""Type stubs for the space-filling curve kernels (`_core/mergetree_curves.pyx`).

Both functions take `ranks`, a C-contiguous (n_rows, n_cols) uint32 array with
1 <= n_cols <= 8 and every rank < 2**bits, and `bits`, with 1 <= bits <= 32 and
n_cols * bits <= 64; they return a new uint64 array of n_rows keys and raise ValueError for
any other input.  Z-order interleaves bits from the top, column 0's bit first in each
group; Hilbert is Skilling's transpose algorithm (one column: the rank itself).
"""

import numpy as np
import numpy.typing as npt

MAX_COLUMNS: int
MAX_BITS: int

def zorder_keys(ranks: npt.NDArray[np.uint32], bits: int) -> npt.NDArray[np.uint64]: ...
def hilbert_keys(ranks: npt.NDArray[np.uint32], bits: int) -> npt.NDArray[np.uint64]: ...
