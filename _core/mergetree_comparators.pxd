# The comparators shared by the merge (loser tree, heap, fixed-width path) and
# the merge join and run cutting: typed, over the key-column views of
# mergetree_key_columns.pxd.  Inline functions in a .pxd, so every module that
# cimports them compiles its own copy and the C compiler inlines them into its
# hot loops (a call into another extension module could not be inlined).
#
# Every key column gets an order-preserving 64-bit image of its value (the
# "prefix"); most comparisons end on one integer compare.  Full comparisons are
# needed only when prefixes tie and the prefix is not the whole key (strings,
# decimals, composite keys, nulls).
from libc.stdint cimport (int8_t, int16_t, int32_t, int64_t, uint8_t,
                          uint16_t, uint32_t, uint64_t)
from libc.string cimport memcmp, memcpy, memset

from mergetree_key_columns cimport (
    ColumnView, KEY_BINARY, KEY_BOOL, KEY_DECIMAL128, KEY_FIXED_BINARY,
    KEY_FLOAT32, KEY_FLOAT64, KEY_INT8, KEY_INT16, KEY_INT32, KEY_INT64,
    KEY_LARGE_BINARY, KEY_UINT8, KEY_UINT16, KEY_UINT32, KEY_UINT64)

cdef extern from *:
    """
    #include <stdint.h>
    #include <stdlib.h>
    #include <string.h>
    static inline uint64_t mt_load_be64(const uint8_t* p) {
        uint64_t v; memcpy(&v, p, 8);
    #if defined(__GNUC__) || defined(__clang__)
        return __builtin_bswap64(v);
    #elif defined(_MSC_VER)
        return _byteswap_uint64(v);  /* MSVC's own (stdlib.h): it does not see the shifts as one */
    #else
        return ((v & 0xFFull) << 56) | ((v & 0xFF00ull) << 40) | ((v & 0xFF0000ull) << 24)
             | ((v & 0xFF000000ull) << 8) | ((v >> 8) & 0xFF000000ull) | ((v >> 24) & 0xFF0000ull)
             | ((v >> 40) & 0xFF00ull) | (v >> 56);
    #endif
    }
    static inline uint64_t mt_double_bits(double d) { uint64_t v; memcpy(&v, &d, 8); return v; }
    #define MT_SIGN_BIT 0x8000000000000000ULL
    """
    uint64_t mt_load_be64(const uint8_t* p) noexcept nogil
    uint64_t mt_double_bits(double d) noexcept nogil
    const uint64_t SIGN_BIT "MT_SIGN_BIT"

# The fixed-width key types: one specialization of each comparator per type.
ctypedef fused fixed_t:
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t
    float
    double


cdef inline bint bit_is_set(const uint8_t* bitmap, int64_t i) noexcept nogil:
    return (bitmap[i >> 3] >> (i & 7)) & 1


cdef inline bint is_null(const ColumnView* c, int64_t row) noexcept nogil:
    return c.validity != NULL and not bit_is_set(c.validity, c.bit_offset + row)


cdef inline uint64_t fixed_prefix(fixed_t value) noexcept nogil:
    cdef double d
    cdef uint64_t bits
    if fixed_t is float or fixed_t is double:
        d = value
        if d != d:
            return 0xFFF8000000000000ULL  # every NaN sorts last, above +inf
        bits = mt_double_bits(d)
        # Negative floats: flip all bits; positive: flip the sign bit.  This
        # puts -0.0 before 0.0 and keeps the IEEE order everywhere else.
        if bits & SIGN_BIT:
            return ~bits
        return bits | SIGN_BIT
    elif fixed_t is int8_t or fixed_t is int16_t or fixed_t is int32_t or fixed_t is int64_t:
        return (<uint64_t>(<int64_t>value)) ^ SIGN_BIT
    else:
        return <uint64_t>value


cdef inline int compare_fixed(fixed_t a, fixed_t b) noexcept nogil:
    cdef uint64_t pa, pb
    if fixed_t is float or fixed_t is double:
        pa = fixed_prefix(a)
        pb = fixed_prefix(b)
        return (pa > pb) - (pa < pb)
    else:
        return (a > b) - (a < b)


cdef inline const uint8_t* binary_value(const ColumnView* c, int64_t row, int64_t* length) noexcept nogil:
    cdef int64_t start, end
    if c.key_class == KEY_BINARY:
        start = (<const int32_t*>c.offsets)[row]
        end = (<const int32_t*>c.offsets)[row + 1]
    elif c.key_class == KEY_LARGE_BINARY:
        start = (<const int64_t*>c.offsets)[row]
        end = (<const int64_t*>c.offsets)[row + 1]
    else:  # fixed-size binary
        length[0] = c.width
        return c.values + row * c.width
    length[0] = end - start
    return c.values + start


cdef inline uint64_t bytes_prefix(const uint8_t* data, int64_t length) noexcept nogil:
    cdef uint8_t buf[8]
    if length >= 8:
        return mt_load_be64(data)
    memset(buf, 0, 8)
    memcpy(buf, data, <size_t>length)
    return mt_load_be64(buf)


cdef inline int compare_bytes(const uint8_t* a, int64_t la, const uint8_t* b, int64_t lb) noexcept nogil:
    cdef int64_t n = la if la < lb else lb
    cdef int r = memcmp(a, b, <size_t>n) if n > 0 else 0
    if r != 0:
        return -1 if r < 0 else 1
    return (la > lb) - (la < lb)


cdef inline uint64_t column_prefix(const ColumnView* c, int64_t row, int32_t* exact,
                                   int64_t skip=0) noexcept nogil:
    """The value's 64-bit order-preserving image; `exact` says whether it is lossless.
    Binary values are imaged from byte `skip` on: the merge's shared prefix, which
    every key of the column holds (see MergeCore.narrow_skip)."""
    cdef int32_t cls = c.key_class
    cdef const uint8_t* data
    cdef int64_t length
    if is_null(c, row):
        exact[0] = 0     # nulls sort first: 0 is the smallest image; ties go to full compare
        return 0
    exact[0] = 1
    if cls == KEY_INT64:
        return fixed_prefix((<const int64_t*>c.values)[row])
    elif cls == KEY_INT32:
        return fixed_prefix((<const int32_t*>c.values)[row])
    elif cls == KEY_BINARY or cls == KEY_LARGE_BINARY or cls == KEY_FIXED_BINARY:
        data = binary_value(c, row, &length)
        exact[0] = cls == KEY_FIXED_BINARY and c.width - skip <= 8
        return bytes_prefix(data + skip, length - skip)
    elif cls == KEY_INT8:
        return fixed_prefix((<const int8_t*>c.values)[row])
    elif cls == KEY_INT16:
        return fixed_prefix((<const int16_t*>c.values)[row])
    elif cls == KEY_UINT8:
        return fixed_prefix((<const uint8_t*>c.values)[row])
    elif cls == KEY_UINT16:
        return fixed_prefix((<const uint16_t*>c.values)[row])
    elif cls == KEY_UINT32:
        return fixed_prefix((<const uint32_t*>c.values)[row])
    elif cls == KEY_UINT64:
        return fixed_prefix((<const uint64_t*>c.values)[row])
    elif cls == KEY_FLOAT32:
        return fixed_prefix((<const float*>c.values)[row])
    elif cls == KEY_FLOAT64:
        return fixed_prefix((<const double*>c.values)[row])
    elif cls == KEY_BOOL:
        return bit_is_set(c.values, c.bit_offset + row)
    elif cls == KEY_DECIMAL128:
        # little-endian two's complement: the high word carries the sign
        exact[0] = 0
        return (<uint64_t>(<const int64_t*>(c.values + row * 16 + 8))[0]) ^ SIGN_BIT
    exact[0] = 0
    return 0


cdef inline int compare_column(const ColumnView* a, int64_t ra, const ColumnView* b, int64_t rb) noexcept nogil:
    """Compare one key column of two rows; nulls first."""
    cdef bint na = is_null(a, ra)
    cdef bint nb = is_null(b, rb)
    cdef int32_t cls = a.key_class
    cdef const uint8_t* da
    cdef const uint8_t* db
    cdef int64_t la, lb
    cdef uint64_t ua, ub
    if na or nb:
        return (<int>nb) - (<int>na) if not (na and nb) else 0
    if cls == KEY_INT64:
        return compare_fixed((<const int64_t*>a.values)[ra], (<const int64_t*>b.values)[rb])
    elif cls == KEY_BINARY or cls == KEY_LARGE_BINARY or cls == KEY_FIXED_BINARY:
        da = binary_value(a, ra, &la)
        db = binary_value(b, rb, &lb)
        return compare_bytes(da, la, db, lb)
    elif cls == KEY_INT32:
        return compare_fixed((<const int32_t*>a.values)[ra], (<const int32_t*>b.values)[rb])
    elif cls == KEY_INT8:
        return compare_fixed((<const int8_t*>a.values)[ra], (<const int8_t*>b.values)[rb])
    elif cls == KEY_INT16:
        return compare_fixed((<const int16_t*>a.values)[ra], (<const int16_t*>b.values)[rb])
    elif cls == KEY_UINT8:
        return compare_fixed((<const uint8_t*>a.values)[ra], (<const uint8_t*>b.values)[rb])
    elif cls == KEY_UINT16:
        return compare_fixed((<const uint16_t*>a.values)[ra], (<const uint16_t*>b.values)[rb])
    elif cls == KEY_UINT32:
        return compare_fixed((<const uint32_t*>a.values)[ra], (<const uint32_t*>b.values)[rb])
    elif cls == KEY_UINT64:
        return compare_fixed((<const uint64_t*>a.values)[ra], (<const uint64_t*>b.values)[rb])
    elif cls == KEY_FLOAT32:
        return compare_fixed((<const float*>a.values)[ra], (<const float*>b.values)[rb])
    elif cls == KEY_FLOAT64:
        return compare_fixed((<const double*>a.values)[ra], (<const double*>b.values)[rb])
    elif cls == KEY_BOOL:
        return (<int>bit_is_set(a.values, a.bit_offset + ra)) - (<int>bit_is_set(b.values, b.bit_offset + rb))
    elif cls == KEY_DECIMAL128:
        da = a.values + ra * 16
        db = b.values + rb * 16
        la = (<const int64_t*>(da + 8))[0]
        lb = (<const int64_t*>(db + 8))[0]
        if la != lb:
            return -1 if la < lb else 1
        ua = (<const uint64_t*>da)[0]
        ub = (<const uint64_t*>db)[0]
        return (ua > ub) - (ua < ub)
    return 0


cdef inline int compare_rows(int32_t nkeys, int32_t first_column,
                             const ColumnView* a, int64_t ra,
                             const ColumnView* b, int64_t rb) noexcept nogil:
    cdef int32_t c
    cdef int r
    for c in range(first_column, nkeys):
        r = compare_column(&a[c], ra, &b[c], rb)
        if r != 0:
            return r
    return 0


cdef inline int compare_rows_skip(int32_t nkeys, int64_t skip, const ColumnView* a, int64_t ra,
                                  const ColumnView* b, int64_t rb) noexcept nogil:
    """compare_rows for two rows of the merge: the first column's bytes before `skip`
    are the merge's shared prefix, equal in every key, so they are not compared."""
    cdef const uint8_t* da
    cdef const uint8_t* db
    cdef int64_t la, lb
    cdef int r
    if skip == 0 or is_null(a, ra) or is_null(b, rb):
        return compare_rows(nkeys, 0, a, ra, b, rb)
    da = binary_value(a, ra, &la)
    db = binary_value(b, rb, &lb)
    r = compare_bytes(da + skip, la - skip, db + skip, lb - skip)
    if r != 0 or nkeys == 1:
        return r
    return compare_rows(nkeys, 1, a, ra, b, rb)
