# Group reductions for the merge engines.  Inputs are in member order (oldest
# to newest within each group); `group_ends[g]` is one past group g's last member.
#
# Included into mergetree_core.pyx (one extension module, mergetree._core);
# the row kinds (ROW_KIND_*) are the merge's.
from libc.stdint cimport int8_t, int64_t, uint8_t, uint64_t

# The value types a sum or product folds.
ctypedef fused fold_t:
    int64_t
    double


cdef int check_groups(const int64_t[::1] group_ends, Py_ssize_t members, const int8_t[::1] kinds,
                      bint kinds_optional) except -1:
    """Group ends must rise from 0 to at most `members`; kinds hold one per member
    (or none at all where that is allowed)."""
    cdef Py_ssize_t g, n = group_ends.shape[0]
    cdef int64_t prev = 0
    cdef Py_ssize_t bad = -1
    if kinds.shape[0] != members and not (kinds_optional and kinds.shape[0] == 0):
        raise ValueError(f"kinds has {kinds.shape[0]} entries for {members} members")
    with nogil:
        for g in range(n):
            if group_ends[g] < prev or group_ends[g] > members:
                bad = g
                break
            prev = group_ends[g]
    if bad >= 0:
        raise ValueError(f"group_ends[{bad}] = {group_ends[bad]} is out of order or beyond the "
                         f"{members} members")
    return 0


def last_valid_per_group(const int64_t[::1] group_ends, const uint8_t[::1] valid,
                         const int8_t[::1] kinds, bint reset_on_delete):
    """For each group the member index of the newest valid value, or -1.

    Retraction rows (-U, -D) never supply a value.  With `reset_on_delete` a
    -D row forgets everything older (partial-update's remove-record-on-delete);
    otherwise a retraction carrying a value clears the result
    (last_non_null_value's retraction).  `kinds` may be empty (no kind column)."""
    cdef Py_ssize_t g, i, start = 0, best
    cdef Py_ssize_t n_groups = group_ends.shape[0]
    cdef bint has_kinds = kinds.shape[0] > 0
    cdef int8_t kind
    check_groups(group_ends, valid.shape[0], kinds, True)
    out = np.empty(n_groups, dtype=np.int64)
    cdef int64_t[::1] out_v = out
    with nogil:
        for g in range(n_groups):
            best = -1
            for i in range(start, group_ends[g]):
                kind = kinds[i] if has_kinds else 0
                if kind == ROW_KIND_UPDATE_BEFORE or kind == ROW_KIND_DELETE:
                    if reset_on_delete:
                        if kind == ROW_KIND_DELETE:
                            best = -1
                    elif valid[i]:
                        best = -1
                elif valid[i]:
                    best = i
            out_v[g] = best
            start = group_ends[g]
    return out


def live_groups_after_delete(const int64_t[::1] group_ends, const int8_t[::1] kinds):
    """For partial-update: does any +I/+U row follow the group's last -D?"""
    cdef Py_ssize_t g, i, start = 0
    cdef Py_ssize_t n_groups = group_ends.shape[0]
    cdef bint live
    check_groups(group_ends, kinds.shape[0], kinds, False)
    out = np.empty(n_groups, dtype=np.bool_)
    cdef cnp.npy_bool[::1] out_v = out
    with nogil:
        for g in range(n_groups):
            live = False
            for i in range(start, group_ends[g]):
                if kinds[i] == ROW_KIND_DELETE:
                    live = False
                elif kinds[i] != ROW_KIND_UPDATE_BEFORE:
                    live = True
            out_v[g] = live
            start = group_ends[g]
    return out


def fold_sum_product(const int64_t[::1] group_ends, const fold_t[::1] values,
                     const uint8_t[::1] valid, const int8_t[::1] kinds, bint product):
    """Sequential sum or product per group with retraction (a retraction row
    subtracts / divides), as Paimon's aggregators do.  Integer arithmetic wraps.
    Returns (result, result_valid)."""
    cdef Py_ssize_t g, i, start = 0
    cdef Py_ssize_t n_groups = group_ends.shape[0]
    cdef bint has_kinds = kinds.shape[0] > 0
    cdef bint retract, have
    cdef fold_t acc, v
    if values.shape[0] != valid.shape[0]:
        raise ValueError(f"values has {values.shape[0]} entries, valid {valid.shape[0]}")
    check_groups(group_ends, valid.shape[0], kinds, True)
    if fold_t is double:
        out = np.empty(n_groups, dtype=np.float64)
    else:
        out = np.empty(n_groups, dtype=np.int64)
    out_valid = np.empty(n_groups, dtype=np.bool_)
    cdef fold_t[::1] out_v = out
    cdef cnp.npy_bool[::1] ok_v = out_valid
    cdef bint divide_by_zero = False
    with nogil:
        for g in range(n_groups):
            have = False
            acc = 0
            for i in range(start, group_ends[g]):
                if not valid[i]:
                    continue
                v = values[i]
                retract = has_kinds and (kinds[i] == ROW_KIND_UPDATE_BEFORE or kinds[i] == ROW_KIND_DELETE)
                if not have:
                    if product:
                        acc = 1
                    have = True
                if product:
                    if retract:
                        if fold_t is double:
                            acc = acc / v
                        else:
                            if v == 0:
                                divide_by_zero = True
                                break
                            if v == -1:  # INT64_MIN // -1 would trap; wrap like Java
                                acc = <int64_t>(0 - <uint64_t>acc)
                            else:
                                acc = acc // v  # truncating division (cdivision), as in Java
                    else:
                        if fold_t is double:
                            acc = acc * v
                        else:
                            acc = <int64_t>(<uint64_t>acc * <uint64_t>v)
                else:
                    if fold_t is double:
                        acc = acc - v if retract else acc + v
                    else:
                        if retract:
                            acc = <int64_t>(<uint64_t>acc - <uint64_t>v)
                        else:
                            acc = <int64_t>(<uint64_t>acc + <uint64_t>v)
            if divide_by_zero:
                break
            out_v[g] = acc
            ok_v[g] = have
            start = group_ends[g]
    if divide_by_zero:
        raise ZeroDivisionError("product retraction divides by zero")
    return out, out_valid
