# Apache Paimon's bucket hash, bit for bit, over Arrow buffers: Murmur3 x86_32
# over each row's BinaryRow bytes (`paimon_hashes`, below).  The Python layer
# (codec/buckets.py) maps Paimon types onto the slot kinds and normalizes values
# first (timestamps to milliseconds and nanos, dictionary decoding, ...); this
# module only reads buffers.
#
# Arrays are read through the Arrow PyCapsule protocol (`__arrow_c_array__`),
# checked by the same code as the merge core's input (mergetree_arrow_columns);
# we never link against libarrow.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

from mergetree_arrow_columns cimport (
    ArrowColumn, LAYOUT_BINARY, LAYOUT_BITS, LAYOUT_FIXED, LAYOUT_LARGE_BINARY, array_of,
    export_capsules, import_column, schema_of)

cimport numpy as cnp
import numpy as np

cnp.import_array()

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    #define MT_MURMUR_C1 0xcc9e2d51U
    #define MT_MURMUR_C2 0x1b873593U
    #define MT_MURMUR_N 0xe6546b64U
    #define MT_FMIX_C1 0x85ebca6bU
    #define MT_FMIX_C2 0xc2b2ae35U
    """
    const uint32_t C1 "MT_MURMUR_C1"
    const uint32_t C2 "MT_MURMUR_C2"
    const uint32_t N "MT_MURMUR_N"
    const uint32_t F1 "MT_FMIX_C1"
    const uint32_t F2 "MT_FMIX_C2"


# ---------------------------------------------------------------------------
# Murmur3 x86_32 steps.  All arithmetic is uint32 with wraparound; Java reads
# the result as a signed int.
# ---------------------------------------------------------------------------

cdef inline uint32_t rotl32(uint32_t x, int r) noexcept nogil:
    return (x << r) | (x >> (32 - r))


cdef inline uint32_t mix_k1(uint32_t k1) noexcept nogil:
    k1 = k1 * C1
    k1 = rotl32(k1, 15)
    return k1 * C2


cdef inline uint32_t mix_h1(uint32_t h1, uint32_t k1) noexcept nogil:
    h1 = h1 ^ k1
    h1 = rotl32(h1, 13)
    return h1 * 5 + N


cdef inline uint32_t fmix(uint32_t h1, uint32_t length) noexcept nogil:
    h1 = h1 ^ length
    h1 = h1 ^ (h1 >> 16)
    h1 = h1 * F1
    h1 = h1 ^ (h1 >> 13)
    h1 = h1 * F2
    return h1 ^ (h1 >> 16)


cdef inline uint32_t load_le32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0]) | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline bint is_valid(const uint8_t* validity, int64_t bit) noexcept nogil:
    return validity == NULL or ((validity[bit >> 3] >> (bit & 7)) & 1)


# ---------------------------------------------------------------------------
# Paimon's bucket hash: `BinaryRow.hashCode()` of the bucket-key row, i.e.
# Murmur3 x86_32 (seed 42) over the row's bytes as little-endian 4-byte words,
# then fmix with the byte length (MurmurHashUtils.hashBytesByWords).  Each row
# is laid out as Java's BinaryRowWriter lays it out, in a scratch buffer:
#   header  ((arity + 63 + 8) / 64) * 8 bytes: byte 0 the row kind (0, +I),
#           then one null bit per field (field i is bit i + 8);
#   slots   8 bytes per field, little-endian; a null field's slot is 0;
#   var     strings and binaries over 7 bytes (padded to 8), the unscaled
#           bytes of decimals of precision > 18 (16 bytes, reserved also for
#           a null), the milliseconds of timestamps of precision > 3 (8 bytes,
#           also for a null).
# A slot of an inline string holds its bytes and 0x80 | length in its top
# byte; of a var value, offset << 32 | length (a timestamp: its nanos of the
# millisecond in place of the length).  The Python layer (codec/buckets.py)
# maps Paimon types onto the slot kinds and normalizes values first.
# ---------------------------------------------------------------------------

cdef enum:
    K_FIXED = 0            # `width` bytes (1, 2, 4 or 8) of an integer, date, time or float column
    K_BOOL = 1             # a boolean column: one byte, 1 or 0
    K_BINARY = 2           # string or binary, 32-bit offsets
    K_LARGE_BINARY = 3     # string or binary, 64-bit offsets
    K_DECIMAL_COMPACT = 4  # decimal128 of precision <= 18: the unscaled long
    K_DECIMAL = 5          # decimal128 of precision > 18: BigInteger.toByteArray() in the var part
    K_TIMESTAMP = 6        # precision > 3: int64 epoch milliseconds + int32 nanos of the millisecond

SLOT_FIXED, SLOT_BOOL, SLOT_BINARY, SLOT_LARGE_BINARY = K_FIXED, K_BOOL, K_BINARY, K_LARGE_BINARY
SLOT_DECIMAL_COMPACT, SLOT_DECIMAL, SLOT_TIMESTAMP = K_DECIMAL_COMPACT, K_DECIMAL, K_TIMESTAMP


cdef struct PaimonSlot:
    int32_t kind
    int32_t width
    ArrowColumn col
    ArrowColumn nanos        # SLOT_TIMESTAMP: the int32 nanos of the millisecond


cdef inline void put_le(uint8_t* dst, uint64_t v, int n) noexcept nogil:
    cdef int i
    for i in range(n):
        dst[i] = <uint8_t>(v >> (8 * i))


cdef inline int64_t row_bytes(PaimonSlot* slots, int arity, int64_t header, int64_t row,
                              uint8_t* out, int64_t capacity) noexcept nogil:
    """Lay out row `row` at `out` (`capacity` bytes); its length, or -1 when it does
    not fit (the caller sized `out` from the data, so this means bad offsets)."""
    cdef int64_t fixed = header + 8 * arity
    cdef int64_t cursor = fixed
    cdef int64_t j, r, start, end, length, rounded, slot
    cdef int i, n
    cdef PaimonSlot* s
    cdef const uint8_t* v
    cdef uint8_t be[16]
    cdef int32_t nanos
    cdef int64_t millis
    if fixed > capacity:
        return -1
    memset(out, 0, fixed)
    for i in range(arity):
        s = &slots[i]
        slot = header + 8 * i
        r = s.col.offset + row
        if not is_valid(s.col.validity, r):
            out[(i + 8) >> 3] |= <uint8_t>(1 << ((i + 8) & 7))
            if s.kind == K_DECIMAL or s.kind == K_TIMESTAMP:
                # Java reserves the var part of a null decimal/timestamp and keeps its offset
                n = 16 if s.kind == K_DECIMAL else 8
                if cursor + n > capacity:
                    return -1
                memset(out + cursor, 0, n)
                put_le(out + slot, (<uint64_t>cursor) << 32, 8)
                cursor += n
            continue
        if s.kind == K_FIXED:
            memcpy(out + slot, s.col.values + r * s.width, s.width)
        elif s.kind == K_BOOL:
            out[slot] = (s.col.values[r >> 3] >> (r & 7)) & 1
        elif s.kind == K_BINARY or s.kind == K_LARGE_BINARY:
            if s.kind == K_BINARY:
                start = (<const int32_t*>s.col.values)[r]
                end = (<const int32_t*>s.col.values)[r + 1]
            else:
                start = (<const int64_t*>s.col.values)[r]
                end = (<const int64_t*>s.col.values)[r + 1]
            length = end - start
            if length <= 7:
                if length:
                    memcpy(out + slot, s.col.data + start, length)
                out[slot + 7] = <uint8_t>(0x80 | length)
            else:
                rounded = (length + 7) & ~(<int64_t>7)
                if cursor + rounded > capacity or cursor > 0x7fffffff:
                    return -1
                memset(out + cursor + rounded - 8, 0, 8)
                memcpy(out + cursor, s.col.data + start, length)
                put_le(out + slot, ((<uint64_t>cursor) << 32) | <uint64_t>length, 8)
                cursor += rounded
        elif s.kind == K_DECIMAL_COMPACT:
            memcpy(out + slot, s.col.values + r * 16, 8)  # the low 64 bits hold the unscaled value
        elif s.kind == K_DECIMAL:
            v = s.col.values + r * 16
            n = 16
            while n > 1 and ((v[n - 1] == 0x00 and (v[n - 2] & 0x80) == 0)
                             or (v[n - 1] == 0xFF and (v[n - 2] & 0x80) != 0)):
                n -= 1
            for j in range(n):
                be[j] = v[n - 1 - j]
            if cursor + 16 > capacity:
                return -1
            memset(out + cursor, 0, 16)
            memcpy(out + cursor, be, n)
            put_le(out + slot, ((<uint64_t>cursor) << 32) | <uint64_t>n, 8)
            cursor += 16
        else:  # K_TIMESTAMP
            if cursor + 8 > capacity:
                return -1
            millis = (<const int64_t*>s.col.values)[r]
            nanos = (<const int32_t*>s.nanos.values)[s.nanos.offset + row]
            put_le(out + cursor, <uint64_t>millis, 8)
            put_le(out + slot, ((<uint64_t>cursor) << 32) | <uint64_t><uint32_t>nanos, 8)
            cursor += 8
    return cursor


cdef inline uint32_t hash_words(const uint8_t* data, int64_t length) noexcept nogil:
    """MurmurHashUtils.hashBytesByWords: whole words only (a BinaryRow is 8-byte aligned)."""
    cdef int64_t i
    cdef uint32_t h1 = 42  # MurmurHashUtils.DEFAULT_SEED
    for i in range(0, length, 4):
        h1 = mix_h1(h1, mix_k1(load_le32(data + i)))
    return fmix(h1, <uint32_t>length)


cdef int64_t hash_rows(PaimonSlot* slots, int arity, int64_t n, uint8_t* scratch, int64_t capacity,
                       int32_t* out) noexcept nogil:
    """Every row's hash into `out`; -1, or the first row that does not fit."""
    cdef int64_t header = ((arity + 63 + 8) // 64) * 8
    cdef int64_t row, size
    for row in range(n):
        size = row_bytes(slots, arity, header, row, scratch, capacity)
        if size < 0:
            return row
        out[row] = <int32_t>hash_words(scratch, size)
    return -1


_SLOT_LAYOUTS = {SLOT_FIXED: LAYOUT_FIXED, SLOT_BOOL: LAYOUT_BITS, SLOT_BINARY: LAYOUT_BINARY,
                 SLOT_LARGE_BINARY: LAYOUT_LARGE_BINARY, SLOT_DECIMAL_COMPACT: LAYOUT_FIXED,
                 SLOT_DECIMAL: LAYOUT_FIXED, SLOT_TIMESTAMP: LAYOUT_FIXED}


def paimon_hashes(list columns, int64_t max_row_bytes):
    """Paimon's `BinaryRow.hashCode()` of each row of a bucket key, as a new int32
    array.  `columns`: one (slot kind, array, nanos array or None) per key field,
    in key order, every array of the same length (`__arrow_c_array__`, checked);
    `max_row_bytes` bounds one row's layout (the caller computes it from the data;
    a row that does not fit is an error, never a write past the buffer)."""
    cdef int arity = len(columns)
    cdef int i
    cdef int64_t n = -1, bad
    cdef PaimonSlot* slots
    cdef ArrowColumn* col
    if arity <= 0:
        raise ValueError("a bucket key has at least one field")
    if max_row_bytes <= 0 or max_row_bytes > (1 << 31):
        raise ValueError(f"max_row_bytes out of range: {max_row_bytes}")
    holders = []  # the capsules stay alive while the loop reads their buffers
    slot_buf = np.zeros(arity * sizeof(PaimonSlot), dtype=np.uint8)
    cdef uint8_t[::1] slot_view = slot_buf
    slots = <PaimonSlot*>&slot_view[0]
    for i, spec in enumerate(columns):
        kind, arr, nanos = spec
        if kind not in _SLOT_LAYOUTS:
            raise ValueError(f"unknown slot kind {kind!r}")
        capsules = export_capsules(arr)
        holders.append(capsules)
        array = array_of(capsules)
        if array.length < 0:
            raise ValueError("negative array length")
        if n < 0:
            n = array.length
        elif array.length != n:
            raise ValueError(f"bucket-key column {i} has {array.length} rows, column 0 has {n}")
        slots[i].kind = kind
        col = &slots[i].col
        import_column(schema_of(capsules), array, 0, n, col)
        if col.layout != _SLOT_LAYOUTS[kind]:
            raise ValueError(f"bucket-key column {i}: layout {col.layout} is not slot kind {kind}'s")
        if kind == SLOT_FIXED and col.width not in (1, 2, 4, 8):
            raise ValueError(f"bucket-key column {i}: {col.width}-byte values do not fit a slot")
        if kind in (SLOT_DECIMAL_COMPACT, SLOT_DECIMAL) and col.width != 16:
            raise ValueError(f"bucket-key column {i}: decimals are read as decimal128")
        if kind == SLOT_TIMESTAMP:
            if col.width != 8 or nanos is None:
                raise ValueError(f"bucket-key column {i}: a timestamp is int64 milliseconds plus int32 nanos")
            capsules = export_capsules(nanos)
            holders.append(capsules)
            array = array_of(capsules)
            import_column(schema_of(capsules), array, 0, n, &slots[i].nanos)
            if slots[i].nanos.layout != LAYOUT_FIXED or slots[i].nanos.width != 4 or array.length != n:
                raise ValueError(f"bucket-key column {i}: the nanos are one int32 per row")
            if slots[i].nanos.validity != NULL:
                raise ValueError(f"bucket-key column {i}: the nanos have no nulls (the millis carry them)")
        slots[i].width = col.width
    out = np.empty(n, dtype=np.int32)
    if n == 0:
        return out
    cdef int32_t[::1] o = out
    scratch_buf = np.empty(max_row_bytes, dtype=np.uint8)
    cdef uint8_t[::1] scratch = scratch_buf
    with nogil:
        bad = hash_rows(slots, arity, n, &scratch[0], max_row_bytes, &o[0])
    if bad >= 0:
        raise ValueError(f"row {bad} of the bucket key does not fit in {max_row_bytes} bytes")
    return out
