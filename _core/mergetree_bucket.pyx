# Bucket hashes, bit for bit, over Arrow buffers.  Spark's: Murmur3 x86_32 as
# Spark's `hash(...)` / `bucketBy` apply it (the `fold_*` functions below).
# Paimon's: the same Murmur3 over each row's BinaryRow bytes (`paimon_hashes`,
# at the end of this file).  Every `fold_*` function folds one column
# into a running int32 hash array in place (nulls leave it unchanged), so a key
# of several columns is: start at 42 everywhere, fold each column in order,
# then `pmod` to bucket ids.  The Python layer (src/mergetree/buckets.py) maps
# Arrow types onto these kernels and normalizes values first (timestamps to
# microseconds, dictionary decoding, ...); this module only reads buffers.
#
# Arrays are read through the Arrow PyCapsule protocol (`__arrow_c_array__`),
# checked by the same code as the merge core's input (mergetree_arrow_columns);
# we never link against libarrow.
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
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
    static inline uint32_t mt_float_bits(float f) { uint32_t v; memcpy(&v, &f, 4); return v; }
    static inline uint64_t mt_double_bits(double d) { uint64_t v; memcpy(&v, &d, 8); return v; }
    #define MT_MURMUR_C1 0xcc9e2d51U
    #define MT_MURMUR_C2 0x1b873593U
    #define MT_MURMUR_N 0xe6546b64U
    #define MT_FMIX_C1 0x85ebca6bU
    #define MT_FMIX_C2 0xc2b2ae35U
    #define MT_NAN_BITS_32 0x7fc00000U               /* Java's Float.floatToIntBits(NaN) */
    #define MT_NAN_BITS_64 0x7ff8000000000000ULL     /* Java's Double.doubleToLongBits(NaN) */
    """
    uint32_t mt_float_bits(float f) noexcept nogil
    uint64_t mt_double_bits(double d) noexcept nogil
    const uint32_t C1 "MT_MURMUR_C1"
    const uint32_t C2 "MT_MURMUR_C2"
    const uint32_t N "MT_MURMUR_N"
    const uint32_t F1 "MT_FMIX_C1"
    const uint32_t F2 "MT_FMIX_C2"
    const uint32_t CANONICAL_NAN_32 "MT_NAN_BITS_32"
    const uint64_t CANONICAL_NAN_64 "MT_NAN_BITS_64"

SEED = 42


# ---------------------------------------------------------------------------
# Murmur3 x86_32 steps.  All arithmetic is uint32 with wraparound; Spark reads
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


cdef inline uint32_t hash_int(uint32_t value, uint32_t seed) noexcept nogil:
    """Spark's hashInt: int, byte, short, bool (1/0), date (days), float bits."""
    return fmix(mix_h1(seed, mix_k1(value)), 4)


cdef inline uint32_t hash_long(uint64_t value, uint32_t seed) noexcept nogil:
    """Spark's hashLong: low word, then high word, then fmix with length 8."""
    cdef uint32_t h1 = mix_h1(seed, mix_k1(<uint32_t>value))
    h1 = mix_h1(h1, mix_k1(<uint32_t>(value >> 32)))
    return fmix(h1, 8)


cdef inline uint32_t load_le32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0]) | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline uint32_t hash_bytes(const uint8_t* data, int64_t length, uint32_t seed) noexcept nogil:
    """Spark's hashUnsafeBytes: whole little-endian words, then every tail byte
    on its own, sign-extended to an int, then fmix with the byte length."""
    cdef int64_t aligned = length - (length & 3)
    cdef int64_t i
    cdef uint32_t h1 = seed
    for i in range(0, aligned, 4):
        h1 = mix_h1(h1, mix_k1(load_le32(data + i)))
    for i in range(aligned, length):
        h1 = mix_h1(h1, mix_k1(<uint32_t>(<int32_t>(<int8_t>data[i]))))
    return fmix(h1, <uint32_t>length)


cdef inline uint32_t hash_big_decimal(const uint8_t* le16, uint32_t seed) noexcept nogil:
    """A decimal of precision > 18: Spark hashes BigInteger.toByteArray() of the
    unscaled value, i.e. its shortest two's-complement big-endian bytes (at
    least one byte, always room for the sign bit).  `le16` is Arrow's 16-byte
    little-endian two's complement."""
    cdef uint8_t be[16]
    cdef int n = 16
    cdef int i
    # drop high bytes that only repeat the sign of the byte below them
    while n > 1 and ((le16[n - 1] == 0x00 and (le16[n - 2] & 0x80) == 0)
                     or (le16[n - 1] == 0xFF and (le16[n - 2] & 0x80) != 0)):
        n -= 1
    for i in range(n):
        be[i] = le16[n - 1 - i]
    return hash_bytes(be, n, seed)


cdef inline bint is_valid(const uint8_t* validity, int64_t bit) noexcept nogil:
    return validity == NULL or ((validity[bit >> 3] >> (bit & 7)) & 1)


# ---------------------------------------------------------------------------
# Column loops (no GIL).  `offset` is the array's logical offset; `values`
# points at the start of the values buffer.
# ---------------------------------------------------------------------------

ctypedef fused small_int_t:
    int8_t
    int16_t
    int32_t
    uint8_t
    uint16_t

ctypedef fused long_t:
    int64_t
    uint32_t


cdef void fold_small_ints(const small_int_t* values, const uint8_t* validity, int64_t offset,
                          int64_t n, int32_t* h) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        if is_valid(validity, offset + i):
            h[i] = <int32_t>hash_int(<uint32_t>(<int32_t>values[offset + i]), <uint32_t>h[i])


cdef void fold_longs(const long_t* values, const uint8_t* validity, int64_t offset,
                     int64_t n, int32_t* h) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        if is_valid(validity, offset + i):
            h[i] = <int32_t>hash_long(<uint64_t>(<int64_t>values[offset + i]), <uint32_t>h[i])


cdef void fold_bools(const uint8_t* bits, const uint8_t* validity, int64_t offset,
                     int64_t n, int32_t* h) noexcept nogil:
    cdef int64_t i, b
    for i in range(n):
        b = offset + i
        if is_valid(validity, b):
            h[i] = <int32_t>hash_int((bits[b >> 3] >> (b & 7)) & 1, <uint32_t>h[i])


cdef void fold_floats(const float* values, const uint8_t* validity, int64_t offset,
                      int64_t n, int32_t* h) noexcept nogil:
    cdef int64_t i
    cdef float v
    cdef uint32_t bits
    for i in range(n):
        if is_valid(validity, offset + i):
            v = values[offset + i]
            if v != v:
                bits = CANONICAL_NAN_32
            elif v == 0.0:
                bits = 0  # -0.0 hashes as 0.0
            else:
                bits = mt_float_bits(v)
            h[i] = <int32_t>hash_int(bits, <uint32_t>h[i])


cdef void fold_doubles(const double* values, const uint8_t* validity, int64_t offset,
                       int64_t n, int32_t* h) noexcept nogil:
    cdef int64_t i
    cdef double v
    cdef uint64_t bits
    for i in range(n):
        if is_valid(validity, offset + i):
            v = values[offset + i]
            if v != v:
                bits = CANONICAL_NAN_64
            elif v == 0.0:
                bits = 0
            else:
                bits = mt_double_bits(v)
            h[i] = <int32_t>hash_long(bits, <uint32_t>h[i])


cdef void fold_decimals(const uint8_t* values, bint big, const uint8_t* validity, int64_t offset,
                        int64_t n, int32_t* h) noexcept nogil:
    cdef int64_t i
    cdef uint64_t low
    cdef const uint8_t* v
    for i in range(n):
        if is_valid(validity, offset + i):
            v = values + (offset + i) * 16
            if big:
                h[i] = <int32_t>hash_big_decimal(v, <uint32_t>h[i])
            else:
                # precision <= 18: the unscaled value fits the low 64 bits
                memcpy(&low, v, 8)
                h[i] = <int32_t>hash_long(low, <uint32_t>h[i])


ctypedef fused offset_t:
    int32_t
    int64_t


cdef void fold_binaries(const offset_t* offsets, const uint8_t* data, const uint8_t* validity,
                        int64_t offset, int64_t n, int32_t* h) noexcept nogil:
    cdef int64_t i, start, end
    for i in range(n):
        if is_valid(validity, offset + i):
            start = offsets[offset + i]
            end = offsets[offset + i + 1]
            h[i] = <int32_t>hash_bytes(data + start, end - start, <uint32_t>h[i])


cdef void fold_fixed_binaries(const uint8_t* data, int64_t width, const uint8_t* validity,
                              int64_t offset, int64_t n, int32_t* h) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        if is_valid(validity, offset + i):
            h[i] = <int32_t>hash_bytes(data + (offset + i) * width, width, <uint32_t>h[i])


cdef void pmod_all(const int32_t* h, int32_t n, int64_t length, int32_t* out) noexcept nogil:
    cdef int64_t i
    cdef int32_t r
    for i in range(length):
        r = h[i] % n          # C truncates toward zero, as Java does
        out[i] = r + n if r < 0 else r


# ---------------------------------------------------------------------------
# Python entry points: check the buffers, then run a loop without the GIL.
# ---------------------------------------------------------------------------

cdef class _Column:
    """One exported Arrow array (`__arrow_c_array__`), checked, with its capsules
    held for the duration of a fold."""
    cdef ArrowColumn col
    cdef tuple capsules
    cdef const uint8_t* validity
    cdef const uint8_t* values
    cdef const uint8_t* data
    cdef int64_t offset
    cdef int64_t length

    def __init__(self, arr, int32_t[::1] hashes, int layout, int width):
        self.capsules = export_capsules(arr)
        array = array_of(self.capsules)
        if array.length < 0:
            raise ValueError("negative array length")
        import_column(schema_of(self.capsules), array, 0, array.length, &self.col)
        if self.col.layout != layout or (layout == LAYOUT_FIXED and self.col.width != width):
            raise ValueError(f"the array's layout ({self.col.layout}, {self.col.width} bytes) is not "
                             f"the one this fold reads ({layout}, {width} bytes)")
        if self.col.length != hashes.shape[0]:
            raise ValueError(f"array has {self.col.length} rows but the hash array has {hashes.shape[0]}")
        self.validity = self.col.validity
        self.values = self.col.values
        self.data = self.col.data
        self.offset = self.col.offset
        self.length = self.col.length


def fold_int(arr, int32_t[::1] hashes, int width, bint signed):
    """Fold an integer column hashed as Spark's int (byte, short, int; date32 days;
    uint8/uint16 widened by value) into `hashes` in place."""
    if not (width == 1 or width == 2 or (width == 4 and signed)):
        raise ValueError(f"fold_int takes 1-, 2- or signed 4-byte integers, not width {width}")
    cdef _Column b = _Column(arr, hashes, LAYOUT_FIXED, width)
    cdef int32_t* h = &hashes[0] if hashes.shape[0] else NULL
    if b.length == 0:
        return
    with nogil:
        if width == 1 and signed:
            fold_small_ints(<const int8_t*>b.values, b.validity, b.offset, b.length, h)
        elif width == 1:
            fold_small_ints(<const uint8_t*>b.values, b.validity, b.offset, b.length, h)
        elif width == 2 and signed:
            fold_small_ints(<const int16_t*>b.values, b.validity, b.offset, b.length, h)
        elif width == 2:
            fold_small_ints(<const uint16_t*>b.values, b.validity, b.offset, b.length, h)
        else:
            fold_small_ints(<const int32_t*>b.values, b.validity, b.offset, b.length, h)


def fold_long(arr, int32_t[::1] hashes, int width, bint signed):
    """Fold a column hashed as Spark's long (int64; timestamps in microseconds;
    uint32 widened by value) into `hashes` in place."""
    if not ((width == 8 and signed) or (width == 4 and not signed)):
        raise ValueError(f"fold_long takes int64 or uint32, not width {width} signed={signed}")
    cdef _Column b = _Column(arr, hashes, LAYOUT_FIXED, width)
    cdef int32_t* h = &hashes[0] if hashes.shape[0] else NULL
    if b.length == 0:
        return
    with nogil:
        if width == 8:
            fold_longs(<const int64_t*>b.values, b.validity, b.offset, b.length, h)
        else:
            fold_longs(<const uint32_t*>b.values, b.validity, b.offset, b.length, h)


def fold_bool(arr, int32_t[::1] hashes):
    """Fold a boolean column (hashed as the int 1 or 0) into `hashes` in place."""
    cdef _Column b = _Column(arr, hashes, LAYOUT_BITS, 0)
    cdef int32_t* h = &hashes[0] if hashes.shape[0] else NULL
    if b.length == 0:
        return
    with nogil:
        fold_bools(b.values, b.validity, b.offset, b.length, h)


def fold_float(arr, int32_t[::1] hashes):
    """Fold a float32 column (IEEE bits as an int; -0.0 as 0.0; every NaN as Java's NaN)."""
    cdef _Column b = _Column(arr, hashes, LAYOUT_FIXED, 4)
    cdef int32_t* h = &hashes[0] if hashes.shape[0] else NULL
    if b.length == 0:
        return
    with nogil:
        fold_floats(<const float*>b.values, b.validity, b.offset, b.length, h)


def fold_double(arr, int32_t[::1] hashes):
    """Fold a float64 column (IEEE bits as a long; -0.0 as 0.0; every NaN as Java's NaN)."""
    cdef _Column b = _Column(arr, hashes, LAYOUT_FIXED, 8)
    cdef int32_t* h = &hashes[0] if hashes.shape[0] else NULL
    if b.length == 0:
        return
    with nogil:
        fold_doubles(<const double*>b.values, b.validity, b.offset, b.length, h)


def fold_decimal(arr, int32_t[::1] hashes, int precision):
    """Fold a decimal128 column: the unscaled value as a long when precision <= 18,
    else the bytes of its shortest big-endian two's complement."""
    cdef _Column b = _Column(arr, hashes, LAYOUT_FIXED, 16)
    cdef int32_t* h = &hashes[0] if hashes.shape[0] else NULL
    cdef bint big = precision > 18
    if b.length == 0:
        return
    with nogil:
        fold_decimals(b.values, big, b.validity, b.offset, b.length, h)


def fold_binary(arr, int32_t[::1] hashes, bint large):
    """Fold a string/binary column (32-bit offsets, or 64-bit when `large`) with
    Spark's tail-byte rule."""
    cdef _Column b = _Column(arr, hashes, LAYOUT_LARGE_BINARY if large else LAYOUT_BINARY, 0)
    cdef int32_t* h = &hashes[0] if hashes.shape[0] else NULL
    if b.length == 0:
        return
    with nogil:
        if large:
            fold_binaries(<const int64_t*>b.values, b.data, b.validity, b.offset, b.length, h)
        else:
            fold_binaries(<const int32_t*>b.values, b.data, b.validity, b.offset, b.length, h)


def fold_fixed_binary(arr, int32_t[::1] hashes, int64_t width):
    """Fold a fixed-size binary column (hashed like binary) into `hashes` in place."""
    cdef _Column b = _Column(arr, hashes, LAYOUT_FIXED, width)
    cdef int32_t* h = &hashes[0] if hashes.shape[0] else NULL
    if b.length == 0:
        return
    with nogil:
        fold_fixed_binaries(b.values, width, b.validity, b.offset, b.length, h)


def pmod(const int32_t[::1] hashes, int32_t num_buckets):
    """Bucket ids: pmod(hash, num_buckets) as Spark computes it, as a new int32 array."""
    if num_buckets <= 0:
        raise ValueError(f"num_buckets must be positive, not {num_buckets}")
    cdef int64_t n = hashes.shape[0]
    out = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] o = out
    if n == 0:
        return out
    with nogil:
        pmod_all(&hashes[0], num_buckets, n, &o[0])
    return out


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
