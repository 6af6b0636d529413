# Splitting runs for a parallel merge: binary searches with the merge's own
# comparators, so every run is cut at the same key.
#
# Included into mergetree_core.pyx (one extension module, mergetree._core);
# key columns are checked and viewed by the merge's fill_view.
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport calloc, free

from mergetree_arrow_abi cimport ArrowArray, ArrowSchema
from mergetree_arrow_columns cimport array_of, check_struct, export_capsules, schema_of
from mergetree_comparators cimport compare_rows
from mergetree_key_columns cimport ColumnView, KEY_FIXED_BINARY, KEY_INT8


cdef ColumnView* key_views(object batch, key_classes, key_widths, list held, int64_t* rows) except NULL:
    """Checked views of a record batch of key columns (the caller frees them)."""
    cdef int32_t nkeys = len(key_classes), c
    cdef const ArrowSchema* schema
    cdef const ArrowArray* arr
    cdef ColumnView* views
    if nkeys < 1 or len(key_widths) != nkeys:
        raise ValueError("one key class and width per key column")
    for c in range(nkeys):
        if key_classes[c] < KEY_INT8 or key_classes[c] > KEY_FIXED_BINARY:
            raise ValueError(f"unknown key class {key_classes[c]}")
    capsules = export_capsules(batch)
    held.append(capsules)
    schema, arr = schema_of(capsules), array_of(capsules)
    check_struct(schema, arr, nkeys)
    views = <ColumnView*>calloc(nkeys, sizeof(ColumnView))
    if views == NULL:
        raise MemoryError()
    try:
        for c in range(nkeys):
            fill_view(&views[c], key_classes[c], key_widths[c], schema.children[c], arr, arr.children[c])
    except BaseException:
        free(views)
        raise
    rows[0] = arr.length
    return views


def lower_bounds(object keys_batch, object probes_batch, key_classes, key_widths):
    """For every probe row, the first row of `keys_batch` (ascending) whose key is not
    below the probe's.  Both are record batches of the key columns."""
    cdef list held = []
    cdef int64_t n, m, i, lo, hi, mid
    cdef int32_t nkeys = len(key_classes)
    cdef ColumnView* keys = key_views(keys_batch, key_classes, key_widths, held, &n)
    cdef ColumnView* probes = NULL
    try:
        probes = key_views(probes_batch, key_classes, key_widths, held, &m)
        out = np.empty(m, dtype=np.int64)
        out_v = <int64_t*>cnp.PyArray_DATA(out)
        with nogil:
            for i in range(m):
                lo, hi = 0, n
                while lo < hi:
                    mid = lo + (hi - lo) // 2
                    if compare_rows(nkeys, 0, keys, mid, probes, i) < 0:
                        lo = mid + 1
                    else:
                        hi = mid
                out_v[i] = lo
        return out
    finally:
        free(keys)
        free(probes)


def first_unordered(object keys_batch, const int64_t[::1] rows, key_classes, key_widths):
    """The first of `rows` (each in 1 .. length-1) where the key is not above the
    previous row's, or -1: the seams a split puts between a run's pieces."""
    cdef list held = []
    cdef int64_t n, i, p, bad = -1
    cdef int32_t nkeys = len(key_classes)
    cdef ColumnView* keys = key_views(keys_batch, key_classes, key_widths, held, &n)
    try:
        for i in range(rows.shape[0]):
            if rows[i] < 1 or rows[i] >= n:
                raise ValueError(f"row {rows[i]} is not a seam of a {n}-row run")
        with nogil:
            for i in range(rows.shape[0]):
                p = rows[i]
                if compare_rows(nkeys, 0, keys, p - 1, keys, p) >= 0:
                    bad = p
                    break
        return bad
    finally:
        free(keys)
