# Parquet split-block Bloom filter (SBBF) probes, as the Parquet format defines
# them (BloomFilter.md): the bitset is an array of 256-bit blocks, each eight
# little-endian uint32 words.  A value's 64-bit xxh64 hash (seed 0, over the
# value's PLAIN encoding) picks the block from its high 32 bits and one bit in
# each word from its low 32 bits times that word's salt.  The value may be in
# the column chunk only if all eight bits are set.
#
# Hashing a few query values happens in Python with the `xxhash` package; the
# footer, the filter headers and the value encodings are read in
# src/mergetree/table/indexes/bloom.py.  `xxh64_binary` hashes every value of a
# string/binary Arrow array (XXH64, seed 0), for the Bloom filters of Paimon's
# file index (src/mergetree/codec/file_index.py), which hash each value's bytes.
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int32_t, int64_t

from mergetree_arrow_columns cimport (
    LAYOUT_BINARY,
    LAYOUT_LARGE_BINARY,
    ArrowColumn,
    array_of,
    export_capsules,
    import_column,
    schema_of,
)

cimport numpy as cnp
import numpy as np

cnp.import_array()

cdef extern from *:
    """
    #include <stdint.h>
    static const uint32_t MT_SBBF_SALT[8] = {
        0x47b6137bU, 0x44974d91U, 0x8824ad5bU, 0xa2b7289dU,
        0x705495c7U, 0x2df1424bU, 0x9efc4947U, 0x5c6bfb31U};
    #define MT_SBBF_BLOCK_BYTES 32
    #define MT_SBBF_MAX_BLOCKS 0xFFFFFFFFULL
    """
    const uint32_t* SALT "MT_SBBF_SALT"
    const int64_t BLOCK_BYTES "MT_SBBF_BLOCK_BYTES"
    const uint64_t MAX_BLOCKS "MT_SBBF_MAX_BLOCKS"

BYTES_PER_BLOCK = 32


cdef inline uint32_t load_le32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0]) | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline bint block_check(const uint8_t* bitset, uint64_t num_blocks, uint64_t h) noexcept nogil:
    """True when all eight bits of `h` are set in its block."""
    # the block from the high 32 bits: ((h >> 32) * num_blocks) >> 32, which fits
    # in 64 bits because both factors are below 2**32
    cdef const uint8_t* block = bitset + (((h >> 32) * num_blocks) >> 32) * BLOCK_BYTES
    cdef uint32_t key = <uint32_t>h
    cdef uint32_t mask
    cdef int i
    for i in range(8):
        mask = (<uint32_t>1) << ((key * SALT[i]) >> 27)
        if (load_le32(block + 4 * i) & mask) == 0:
            return False
    return True


cdef void check_all(const uint8_t* bitset, uint64_t num_blocks, const uint64_t* hashes, int64_t n,
                    uint8_t* out) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        out[i] = block_check(bitset, num_blocks, hashes[i])


def might_contain(const uint8_t[::1] bitset not None, hashes):
    """For each xxh64 hash in `hashes` (a 1-D uint64 numpy array), whether the split-block
    Bloom filter with this bitset (bytes-like, a positive multiple of 32 bytes: the bytes
    after the filter's BloomFilterHeader) may contain the value it came from.  Returns a new
    bool array; False means the value is certainly absent."""
    cdef int64_t nbytes = bitset.shape[0]
    if nbytes <= 0 or nbytes % BLOCK_BYTES != 0:
        raise ValueError(f"a split-block Bloom filter bitset is a positive multiple of 32 bytes, "
                         f"not {nbytes} bytes")
    cdef uint64_t num_blocks = <uint64_t>(nbytes // BLOCK_BYTES)
    if num_blocks > MAX_BLOCKS:
        raise ValueError(f"a bitset of {nbytes} bytes has more than 2**32 - 1 blocks")
    if not isinstance(hashes, np.ndarray):
        raise TypeError(f"hashes must be a numpy uint64 array, not {type(hashes).__name__}")
    if hashes.dtype != np.uint64 or hashes.ndim != 1:
        raise TypeError(f"hashes must be a 1-D uint64 array, not {hashes.ndim}-D {hashes.dtype}")
    cdef const uint64_t[::1] h = np.ascontiguousarray(hashes)
    cdef int64_t n = h.shape[0]
    out = np.zeros(n, dtype=np.bool_)
    cdef uint8_t[::1] o = out.view(np.uint8)
    if n == 0:
        return out
    with nogil:
        check_all(&bitset[0], num_blocks, &h[0], n, &o[0])
    return out


# ---------------------------------------------------------------------------
# XXH64 (seed 0) of every value of a string/binary array, as the reference
# implementation computes it (xxhash.h): stripes of 32 bytes through four
# accumulators, then 8-, 4- and 1-byte tails, then the avalanche.
# ---------------------------------------------------------------------------

cdef extern from *:
    """
    #define MT_XXH_P1 0x9E3779B185EBCA87ULL
    #define MT_XXH_P2 0xC2B2AE3D27D4EB4FULL
    #define MT_XXH_P3 0x165667B19E3779F9ULL
    #define MT_XXH_P4 0x85EBCA77C2B2AE63ULL
    #define MT_XXH_P5 0x27D4EB2F165667C5ULL
    """
    const uint64_t P1 "MT_XXH_P1"
    const uint64_t P2 "MT_XXH_P2"
    const uint64_t P3 "MT_XXH_P3"
    const uint64_t P4 "MT_XXH_P4"
    const uint64_t P5 "MT_XXH_P5"


cdef inline uint64_t rotl64(uint64_t x, int r) noexcept nogil:
    return (x << r) | (x >> (64 - r))


cdef inline uint64_t load_le64(const uint8_t* p) noexcept nogil:
    return (<uint64_t>load_le32(p)) | ((<uint64_t>load_le32(p + 4)) << 32)


cdef inline uint64_t xxh_round(uint64_t acc, uint64_t value) noexcept nogil:
    acc = acc + value * P2
    return rotl64(acc, 31) * P1


cdef inline uint64_t xxh_merge(uint64_t acc, uint64_t value) noexcept nogil:
    acc = acc ^ xxh_round(0, value)
    return acc * P1 + P4


cdef uint64_t xxh64(const uint8_t* p, int64_t length) noexcept nogil:
    cdef const uint8_t* end = p + length
    cdef uint64_t h, v1, v2, v3, v4
    if length >= 32:
        v1 = P1 + P2
        v2 = P2
        v3 = 0
        v4 = 0 - P1
        while p + 32 <= end:
            v1 = xxh_round(v1, load_le64(p))
            v2 = xxh_round(v2, load_le64(p + 8))
            v3 = xxh_round(v3, load_le64(p + 16))
            v4 = xxh_round(v4, load_le64(p + 24))
            p += 32
        h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18)
        h = xxh_merge(h, v1)
        h = xxh_merge(h, v2)
        h = xxh_merge(h, v3)
        h = xxh_merge(h, v4)
    else:
        h = P5
    h += <uint64_t>length
    while p + 8 <= end:
        h ^= xxh_round(0, load_le64(p))
        h = rotl64(h, 27) * P1 + P4
        p += 8
    if p + 4 <= end:
        h ^= (<uint64_t>load_le32(p)) * P1
        h = rotl64(h, 23) * P2 + P3
        p += 4
    while p < end:
        h ^= (<uint64_t>p[0]) * P5
        h = rotl64(h, 11) * P1
        p += 1
    h ^= h >> 33
    h *= P2
    h ^= h >> 29
    h *= P3
    h ^= h >> 32
    return h


cdef void hash_binaries32(const int32_t* offsets, const uint8_t* data, int64_t offset, int64_t n,
                          uint64_t* out) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        out[i] = xxh64(data + offsets[offset + i], offsets[offset + i + 1] - offsets[offset + i])


cdef void hash_binaries64(const int64_t* offsets, const uint8_t* data, int64_t offset, int64_t n,
                          uint64_t* out) noexcept nogil:
    cdef int64_t i
    for i in range(n):
        out[i] = xxh64(data + offsets[offset + i], offsets[offset + i + 1] - offsets[offset + i])


def xxh64_binary(arr):
    """XXH64 (seed 0) of each value's bytes of a string or binary array (32- or 64-bit
    offsets; anything with `__arrow_c_array__`), as a new uint64 array.  The array must hold
    no nulls (their hash means nothing; drop them first).  Its layout and offsets are checked
    here; that the data buffer holds the last offset's bytes the C Data Interface cannot tell:
    the caller validates the array first (`Array.validate(full=True)`)."""
    cdef tuple capsules = export_capsules(arr)
    array = array_of(capsules)
    if array.length < 0:
        raise ValueError("negative array length")
    cdef ArrowColumn col
    import_column(schema_of(capsules), array, 0, array.length, &col)
    if col.layout != LAYOUT_BINARY and col.layout != LAYOUT_LARGE_BINARY:
        raise ValueError("xxh64_binary hashes string or binary arrays")
    if col.validity != NULL:
        raise ValueError("xxh64_binary takes an array without nulls")
    out = np.zeros(col.length, dtype=np.uint64)
    cdef uint64_t[::1] o = out
    if col.length == 0:
        return out
    with nogil:
        if col.layout == LAYOUT_BINARY:
            hash_binaries32(<const int32_t*>col.values, col.data, col.offset, col.length, &o[0])
        else:
            hash_binaries64(<const int64_t*>col.values, col.data, col.offset, col.length, &o[0])
    return out
