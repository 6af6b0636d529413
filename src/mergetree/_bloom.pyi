"""Type stubs for the Parquet split-block Bloom filter probes and the XXH64 of string/binary
arrays (`_core/mergetree_bloom.pyx`).

`bitset` is the bytes of one filter after its BloomFilterHeader (any C-contiguous bytes-like
object: bytes, bytearray, memoryview, uint8 array), a positive multiple of 32 bytes;
`hashes` is a 1-D uint64 numpy array of xxh64 hashes (seed 0) of the values' PLAIN encodings.
"""
import numpy as np
import numpy.typing as npt
from typing_extensions import Buffer

BYTES_PER_BLOCK: int

def might_contain(bitset: Buffer, hashes: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]: ...
def xxh64_binary(arr: object) -> npt.NDArray[np.uint64]: ...
