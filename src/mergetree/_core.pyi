"""Type stubs for the Cython core (`_core/mergetree_core.pyx`)."""
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

OUTPUT_FULL: int
NEED_BATCH: int
DONE: int
UNSORTED: int
RETRACTION: int
BAD_STATE: int
STRETCH: int
STRETCH_MIN_ROWS: int
STRETCH_MIN_STREAK: int
MODE_ALL: int
MODE_LAST: int
MODE_FIRST: int
KEY_CLASSES: dict[str, int]
MAX_CAPACITY: int

def key_format_accepted(key_class: int, fmt: bytes, width: int) -> bool: ...

class MergeCore:
    def __init__(
        self,
        k: int,
        key_classes: Sequence[int],
        key_widths: Sequence[int],
        has_seq: bool,
        has_kind: bool,
        algorithm: str,
        emit_mode: int,
        keep_deletes: bool,
        check_order: bool,
        first_row_rejects_retractions: bool,
        out_capacity: int,
        group_capacity: int,
    ) -> None: ...
    def install_batch(self, run: int, batch: Any) -> bool: ...  # batch: has __arrow_c_array__
    def finish_run(self, run: int) -> None: ...
    def step(self) -> int: ...
    @property
    def stretch(self) -> tuple[int, int, int]: ...
    @property
    def rows_stretched(self) -> int: ...
    def take_output(
        self,
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64], npt.NDArray[np.int64] | None,
               npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
    @property
    def fixed_path(self) -> bool: ...
    @property
    def shared_prefix(self) -> int: ...
    @property
    def pending_rows(self) -> int: ...
    @property
    def need_run(self) -> int: ...
    @property
    def error_run(self) -> int: ...
    @property
    def error_pos(self) -> int: ...
    @property
    def counters(self) -> tuple[int, int, int]: ...

def resolve_sources(
    out_run: npt.NDArray[np.int32], out_pos: npt.NDArray[np.int64], piece_start: npt.NDArray[np.int64],
    piece_rows: npt.NDArray[np.int64], run_pieces: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]: ...
def gather_column(
    pieces: list[Any], src_piece: npt.NDArray[np.int32], src_row: npt.NDArray[np.int64],
    allocate: Callable[[int], Any],
) -> tuple[Any, int, Any, Any] | None: ...
def last_valid_per_group(
    group_ends: npt.NDArray[np.int64], valid: npt.NDArray[np.uint8], kinds: npt.NDArray[np.int8],
    reset_on_delete: bool,
) -> npt.NDArray[np.int64]: ...
def live_groups_after_delete(
    group_ends: npt.NDArray[np.int64], kinds: npt.NDArray[np.int8]
) -> npt.NDArray[np.bool_]: ...
def fold_sum_product(
    group_ends: npt.NDArray[np.int64], values: npt.NDArray[Any], valid: npt.NDArray[np.uint8],
    kinds: npt.NDArray[np.int8], product: bool,
) -> tuple[npt.NDArray[Any], npt.NDArray[np.bool_]]: ...

JOIN_INNER: int
JOIN_LEFT: int
JOIN_FULL: int

def merge_join(
    left_batch: Any, right_batch: Any, key_classes: Sequence[int], key_widths: Sequence[int], how: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
def lower_bounds(keys_batch: Any, probes_batch: Any, key_classes: Sequence[int],
                 key_widths: Sequence[int]) -> npt.NDArray[np.int64]: ...
def first_unordered(keys_batch: Any, rows: npt.NDArray[np.int64], key_classes: Sequence[int],
                    key_widths: Sequence[int]) -> int: ...
