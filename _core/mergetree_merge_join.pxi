# Sorted merge join of two key sequences, each ascending (equal keys allowed:
# a group of equal keys on both sides gives their cross product, as in SQL;
# a key with a null never matches).  Returns index buffers; -1 marks the
# missing side of an outer row.  The Python layer assembles the joined columns
# with `take`.
#
# Included into mergetree_core.pyx (one extension module, mergetree._core);
# key columns are checked and viewed by the merge's fill_view, compared by
# mergetree_comparators.pxd.
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport calloc, free, realloc
from libc.string cimport memcpy

from mergetree_arrow_abi cimport ArrowArray, ArrowSchema
from mergetree_arrow_columns cimport array_of, check_struct, export_capsules, schema_of
from mergetree_comparators cimport compare_rows, is_null
from mergetree_key_columns cimport ColumnView, KEY_FIXED_BINARY, KEY_INT8


JOIN_INNER = 0
JOIN_LEFT = 1
JOIN_FULL = 2


cdef struct IndexPairs:
    int64_t* left
    int64_t* right
    int64_t n
    int64_t capacity


cdef int reserve_pairs(IndexPairs* out, int64_t extra) except -1 nogil:
    """Room for `extra` more pairs (doubling, so appends stay amortized O(1))."""
    cdef int64_t capacity
    cdef int64_t* grown
    if out.n + extra <= out.capacity:
        return 0
    capacity = max(out.capacity * 2, out.n + extra, 1024)
    grown = <int64_t*>realloc(out.left, capacity * sizeof(int64_t))
    if grown == NULL:
        with gil:
            raise MemoryError()
    out.left = grown
    grown = <int64_t*>realloc(out.right, capacity * sizeof(int64_t))
    if grown == NULL:
        with gil:
            raise MemoryError()
    out.right = grown
    out.capacity = capacity
    return 0


cdef inline int append_pair(IndexPairs* out, int64_t left, int64_t right) except -1 nogil:
    if out.n == out.capacity:
        reserve_pairs(out, 1)
    out.left[out.n] = left
    out.right[out.n] = right
    out.n += 1
    return 0


cdef inline bint any_null(int32_t nkeys, const ColumnView* views, int64_t row) noexcept nogil:
    cdef int32_t c
    for c in range(nkeys):
        if is_null(&views[c], row):
            return True
    return False


cdef inline int64_t group_end(int32_t nkeys, const ColumnView* views, int64_t row, int64_t length) noexcept nogil:
    """The first row after `row` whose key differs from its key."""
    cdef int64_t end = row + 1
    while end < length and compare_rows(nkeys, 0, views, row, views, end) == 0:
        end += 1
    return end


cdef int join_pairs(IndexPairs* out, int32_t nkeys, const ColumnView* lv, int64_t nl, const ColumnView* rv,
                    int64_t nr, bint keep_left, bint keep_right) except -1 nogil:
    cdef int64_t i = 0, j = 0, i_end, j_end, a, b
    cdef int r
    while i < nl and j < nr:
        r = compare_rows(nkeys, 0, lv, i, rv, j)
        if r < 0:
            if keep_left:
                append_pair(out, i, -1)
            i += 1
        elif r > 0:
            if keep_right:
                append_pair(out, -1, j)
            j += 1
        else:
            i_end = group_end(nkeys, lv, i, nl)
            j_end = group_end(nkeys, rv, j, nr)
            if any_null(nkeys, lv, i):  # null keys never match: both groups stay unmatched
                if keep_left:
                    for a in range(i, i_end):
                        append_pair(out, a, -1)
                if keep_right:
                    for b in range(j, j_end):
                        append_pair(out, -1, b)
            else:
                reserve_pairs(out, (i_end - i) * (j_end - j))
                for a in range(i, i_end):
                    for b in range(j, j_end):
                        out.left[out.n] = a
                        out.right[out.n] = b
                        out.n += 1
            i, j = i_end, j_end
    while i < nl and keep_left:
        append_pair(out, i, -1)
        i += 1
    while j < nr and keep_right:
        append_pair(out, -1, j)
        j += 1
    return 0


def merge_join(object left_batch, object right_batch, key_classes, key_widths, int how):
    """(left_indices, right_indices) of the joined rows, in key order.  Each side
    is an object with `__arrow_c_array__` exporting a record batch of the key
    columns, ascending (unsorted input gives a wrong join, never a crash)."""
    cdef const ArrowSchema* left_schema
    cdef const ArrowSchema* right_schema
    cdef const ArrowArray* left
    cdef const ArrowArray* right
    cdef int32_t nkeys = len(key_classes)
    cdef int32_t c
    cdef ColumnView* views
    cdef IndexPairs pairs
    if how not in (JOIN_INNER, JOIN_LEFT, JOIN_FULL):
        raise ValueError(f"unknown join kind {how}")
    cdef bint keep_left = how != JOIN_INNER   # unmatched left rows stay
    cdef bint keep_right = how == JOIN_FULL   # unmatched right rows stay
    if nkeys < 1 or len(key_widths) != nkeys:
        raise ValueError("a join needs one key class and width per key column")
    for c in range(nkeys):
        if key_classes[c] < KEY_INT8 or key_classes[c] > KEY_FIXED_BINARY:
            raise ValueError(f"unknown key class {key_classes[c]}")
    left_capsules = export_capsules(left_batch)  # held until the function returns
    right_capsules = export_capsules(right_batch)
    left_schema, left = schema_of(left_capsules), array_of(left_capsules)
    right_schema, right = schema_of(right_capsules), array_of(right_capsules)
    check_struct(left_schema, left, nkeys)
    check_struct(right_schema, right, nkeys)
    views = <ColumnView*>calloc(2 * max(nkeys, 1), sizeof(ColumnView))
    if views == NULL:
        raise MemoryError()
    pairs.left = NULL
    pairs.right = NULL
    pairs.n = 0
    pairs.capacity = 0
    try:
        for c in range(nkeys):
            fill_view(&views[c], key_classes[c], key_widths[c], left_schema.children[c], left,
                      left.children[c])
            fill_view(&views[nkeys + c], key_classes[c], key_widths[c], right_schema.children[c], right,
                      right.children[c])
        # unique keys need at most nl + nr pairs: one allocation in the common case
        reserve_pairs(&pairs, left.length + right.length)
        with nogil:
            join_pairs(&pairs, nkeys, views, left.length, &views[nkeys], right.length, keep_left, keep_right)
        li = np.empty(pairs.n, dtype=np.int64)
        ri = np.empty(pairs.n, dtype=np.int64)
        if pairs.n:
            memcpy(cnp.PyArray_DATA(li), pairs.left, pairs.n * sizeof(int64_t))
            memcpy(cnp.PyArray_DATA(ri), pairs.right, pairs.n * sizeof(int64_t))
        return li, ri
    finally:
        free(views)
        free(pairs.left)
        free(pairs.right)
