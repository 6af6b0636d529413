# Parquet split-block Bloom filter (SBBF) probes, as the Parquet format defines
# them (BloomFilter.md): the bitset is an array of 256-bit blocks, each eight
# little-endian uint32 words.  A value's 64-bit xxh64 hash (seed 0, over the
# value's PLAIN encoding) picks the block from its high 32 bits and one bit in
# each word from its low 32 bits times that word's salt.  The value may be in
# the column chunk only if all eight bits are set.
#
# Hashing (a few query values) happens in Python with the `xxhash` package;
# the footer, the filter headers and the value encodings are read in
# src/mergetree/table/indexes/bloom.py.  This module only probes bits.
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t

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
