"""Type stubs for Paimon's bucket-hash kernel (`_core/mergetree_bucket.pyx`): `paimon_hashes`
lays each row of a bucket key out as Java's BinaryRowWriter does and hashes it; every column is
any object with `__arrow_c_array__`, its export checked before the loop reads it.
"""
from typing import Any

import numpy as np
import numpy.typing as npt

SLOT_FIXED: int
SLOT_BOOL: int
SLOT_BINARY: int
SLOT_LARGE_BINARY: int
SLOT_DECIMAL_COMPACT: int
SLOT_DECIMAL: int
SLOT_TIMESTAMP: int

def paimon_hashes(columns: list[tuple[int, Any, Any]], max_row_bytes: int) -> npt.NDArray[np.int32]: ...
