"""Fuzz the C entry points with malformed Arrow arrays (run as a script, in its own process,
by tests/test_malformed_arrow.py and `make fuzz-checked`): random offsets, lengths, array
offsets, validity buffers, null counts, dictionary indices and types, built with
`pa.Array.from_buffers` (which checks only buffer sizes) and handed to `mergetree.merge`,
Paimon's bucket hash (its kernel directly, and `codec.buckets` on what pyarrow calls valid),
the file index's string hash, the sorted join, the core's `MergeCore` directly (bypassing the Python
checks) and the group reductions.  Every call must end in a clean exception or a correct
result; a crash kills this process, and the parent test sees the signal and the last input
printed to stderr.

    python tests/fuzz_malformed_arrow.py [EXAMPLES] [SEED]
"""
from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
import xxhash
from hypothesis import HealthCheck, assume, given, seed, settings
from hypothesis import strategies as st

import mergetree
from mergetree import _bucket, _core, join_sorted
from mergetree.codec.buckets import buckets_of
from mergetree.codec.file_index import value_hashes
from mergetree.codec.types import paimon_type, parse_type
from mergetree.merge.arrow_input import check_array, structural_type
from mergetree.merge.runs import plan_key_column

CLEAN = (mergetree.MergeTreeError, ValueError, TypeError, IndexError, OverflowError, pa.ArrowException)

FLAT_TYPES = [pa.int8(), pa.int32(), pa.int64(), pa.uint16(), pa.float32(), pa.float64(), pa.bool_(),
              pa.date32(), pa.date64(), pa.timestamp("ns"), pa.decimal128(10, 2), pa.decimal128(30, 3),
              pa.binary(3)]
OFFSET_TYPES = [pa.string(), pa.binary(), pa.large_string(), pa.large_binary()]


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@st.composite
def validity(draw, length: int, offset: int):
    if draw(st.booleans()):
        return None
    size = (length + offset + 7) // 8 + draw(st.integers(0, 2))
    return pa.py_buffer(draw(st.binary(min_size=size, max_size=size)))


@st.composite
def malformed_arrays(draw):
    """A pyarrow Array that from_buffers accepted (it checks buffer sizes only), often
    structurally broken."""
    try:
        return draw(_arrays())
    except pa.ArrowInvalid:
        assume(False)


@st.composite
def _arrays(draw):
    length = draw(st.integers(0, 12))
    offset = draw(st.integers(0, 3))
    null_count = draw(st.sampled_from([-1, 0, 1, length]))
    kind = draw(st.sampled_from(["flat", "offsets", "dictionary", "list"]))
    if kind == "flat":
        dtype = draw(st.sampled_from(FLAT_TYPES))
        width = 1 if pa.types.is_boolean(dtype) else dtype.bit_width // 8
        size = (length + offset + 7) // 8 if pa.types.is_boolean(dtype) else (length + offset) * width
        data = pa.py_buffer(draw(st.binary(min_size=size, max_size=size + 8)))
        buffers = [draw(validity(length, offset)), data]
    elif kind == "offsets":
        dtype = draw(st.sampled_from(OFFSET_TYPES))
        large = dtype in (pa.large_string(), pa.large_binary())
        n = length + offset + 1
        raw = draw(st.lists(st.integers(-5, 40), min_size=n, max_size=n))
        if draw(st.booleans()):
            raw = sorted(raw)  # sometimes valid offsets, sometimes not
        offsets = np.array(raw, dtype=np.int64 if large else np.int32)
        data = draw(st.binary(min_size=0, max_size=48))
        buffers = [draw(validity(length, offset)), pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)]
    elif kind == "dictionary":
        values = pa.array(draw(st.lists(st.text(max_size=3), min_size=0, max_size=4)), pa.string())
        indices = np.array(draw(st.lists(st.integers(-3, 6), min_size=length + offset, max_size=length + offset)),
                           dtype=np.int32)
        idx = pa.Array.from_buffers(pa.int32(), length, [draw(validity(length, offset)),
                                                         pa.py_buffer(indices.tobytes())], null_count, offset)
        return pa.DictionaryArray.from_buffers(pa.dictionary(pa.int32(), pa.string()), length,
                                               idx.buffers(), values, null_count, offset)
    else:
        dtype = pa.list_(pa.int64())
        n = length + offset + 1
        offsets = np.array(draw(st.lists(st.integers(-2, 8), min_size=n, max_size=n)), dtype=np.int32)
        child = pa.array(draw(st.lists(st.integers(-5, 5), min_size=0, max_size=8)), pa.int64())
        return pa.Array.from_buffers(dtype, length, [draw(validity(length, offset)),
                                                     pa.py_buffer(offsets.tobytes())], null_count, offset,
                                     children=[child])
    return pa.Array.from_buffers(dtype, length, buffers, null_count, offset)


def accepted(arr: pa.Array) -> bool:
    """Would pyarrow itself call this array valid (values aside)?"""
    try:
        check_array(arr, "x")
        return True
    except mergetree.MalformedArrowError:
        return False


def plain_values(column: pa.ChunkedArray | pa.Array) -> list:
    """Python values of the column's physical twin (no date or decimal range limits)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr.view(structural_type(arr.type)).to_pylist()


def check_merge(arr: pa.Array) -> None:
    n = len(arr)
    for role in ("key", "payload"):
        table = pa.table({"k": arr} if role == "key" else {"k": pa.array(range(n), pa.int64()), "v": arr})
        try:
            out = mergetree.merge([table, table.slice(0, n // 2)], "k").read_all()
        except CLEAN:
            continue
        assert n == 0 or accepted(arr), f"merge accepted a malformed {role} column"
        keys = plain_values(out.column("k"))
        assert len(keys) == len(set(map(repr, keys))) <= n, "duplicate keys out of a deduplicate merge"


def check_core_directly(arr: pa.Array) -> None:
    """Hand the array to the core without the Python layer's checks."""
    try:
        plan = plan_key_column("k", arr.type)
    except CLEAN:
        return
    if plan.normalize is not None:
        return  # the Python layer would transform it first; the core never sees this type
    core = _core.MergeCore(1, [plan.key_class], [plan.width], False, False, "loser-tree", _core.MODE_LAST,
                           False, True, False, 8, 8)
    try:
        if len(arr) == 0:
            core.finish_run(0)
        else:
            core.install_batch(0, pa.RecordBatch.from_arrays([arr], names=["k"]))
        while True:
            result = core.step()
            if result == _core.NEED_BATCH:
                core.finish_run(core.need_run)
            elif result == _core.OUTPUT_FULL:
                core.take_output()
            else:
                break
    except CLEAN:
        return


def bucket_slot(dtype: pa.DataType) -> int:
    """The kernel's slot kind for a column of `dtype` (the layout `codec.buckets` hands it)."""
    if pa.types.is_boolean(dtype):
        return _bucket.SLOT_BOOL
    if pa.types.is_string(dtype) or pa.types.is_binary(dtype):
        return _bucket.SLOT_BINARY
    if pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype):
        return _bucket.SLOT_LARGE_BINARY
    if pa.types.is_decimal(dtype):
        return _bucket.SLOT_DECIMAL_COMPACT if dtype.precision <= 18 else _bucket.SLOT_DECIMAL
    return _bucket.SLOT_FIXED  # a fixed-size binary, a dictionary or a list: refused by the kernel


def check_bucket_hash(arr: pa.Array) -> None:
    """Paimon's bucket hash: the compiled kernel takes any array without crashing (the C ABI
    has no buffer sizes, so the Python layer's checks come first in every caller, as for the
    core); on an array pyarrow calls valid, `buckets_of` places each row as it places the same
    values in fresh buffers."""
    try:
        _bucket.paimon_hashes([(bucket_slot(arr.type), arr, None)], 8 + 8 + 64)
    except CLEAN:
        pass
    if len(arr) and not accepted(arr):
        return
    try:
        types = [parse_type(paimon_type(arr.type))]
        buckets = buckets_of([arr], types, 7)
    except CLEAN:
        return
    assert buckets.dtype == np.int32 and len(buckets) == len(arr)
    assert ((buckets >= 0) & (buckets < 7)).all()
    rebuilt = arr.take(pa.array(np.arange(len(arr), dtype=np.int64)))  # fresh buffers, offset 0
    assert np.array_equal(buckets, buckets_of([rebuilt], types, 7)), "the bucket of a value depends on its buffers"


def check_file_index_hash(arr: pa.Array) -> None:
    """The Bloom-filter hashes of Paimon's file index (XXH64 of each value in the core)."""
    if arr.type not in OFFSET_TYPES:
        return
    t = parse_type("STRING" if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type) else "BYTES")
    try:
        hashes = value_hashes(arr, t)
    except CLEAN:
        return
    assert len(arr) == 0 or accepted(arr), "the file-index hash accepted a malformed column"
    distinct = {v.encode() if isinstance(v, str) else v for v in arr.to_pylist() if v is not None}
    assert sorted(hashes.view(np.uint64).tolist()) == sorted(xxhash.xxh64_intdigest(v) for v in distinct)


def check_join(arr: pa.Array) -> None:
    try:
        join_sorted(pa.table({"k": arr}), pa.table({"k": arr}), "k")
    except CLEAN:
        return


@st.composite
def group_inputs(draw):
    members = draw(st.integers(0, 10))
    ends = draw(st.lists(st.integers(-3, 14), max_size=6))
    if draw(st.booleans()):
        ends = sorted(ends)
    kinds = draw(st.lists(st.integers(0, 3), min_size=0, max_size=12))
    valid = draw(st.lists(st.integers(0, 1), min_size=members, max_size=members))
    return np.array(ends, np.int64), np.array(valid, np.uint8), np.array(kinds, np.int8)


def check_reductions(ends: np.ndarray, valid: np.ndarray, kinds: np.ndarray) -> None:
    try:
        out = _core.last_valid_per_group(ends, valid, kinds, False)
    except CLEAN:
        pass
    else:  # compare with a plain model
        start = 0
        for g, end in enumerate(ends):
            best = -1
            for i in range(start, end):
                kind = kinds[i] if len(kinds) else 0
                if kind in (1, 3):
                    best = -1 if valid[i] else best
                elif valid[i]:
                    best = i
            assert out[g] == best
            start = end
    for call in (lambda: _core.live_groups_after_delete(ends, kinds),
                 lambda: _core.fold_sum_product(ends, valid.astype(np.int64), valid, kinds, False),
                 lambda: _core.fold_sum_product(ends, valid.astype(np.float64), valid, kinds, True)):
        try:
            call()
        except (*CLEAN, ZeroDivisionError):
            pass


def main() -> None:
    examples = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    seed_value = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    common = settings(max_examples=examples, database=None, deadline=None,
                      suppress_health_check=list(HealthCheck))

    @seed(seed_value)
    @common
    @given(malformed_arrays())
    def arrays(arr: pa.Array) -> None:
        log(f"array: {arr.type} len={len(arr)} offset={arr.offset} buffers="
            f"{[None if b is None else b.to_pybytes()[:64] for b in arr.buffers()]}")
        check_merge(arr)
        check_core_directly(arr)
        check_bucket_hash(arr)
        check_file_index_hash(arr)
        check_join(arr)

    @seed(seed_value)
    @common
    @given(group_inputs())
    def reductions(inputs) -> None:
        log(f"groups: {[x.tolist() for x in inputs]}")
        check_reductions(*inputs)

    arrays()
    reductions()
    print(f"ok: {examples} malformed arrays and {examples} group inputs, no crash", flush=True)


if __name__ == "__main__":
    main()
