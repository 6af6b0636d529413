# Declarations of the key-column views the comparators read.  Declarations only.
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint64_t

# Physical comparator classes.  The Python layer maps every supported Arrow
# type onto one of these (dates and timestamps are plain integers, etc.).
cdef enum KeyClass:
    KEY_INT8 = 0
    KEY_INT16 = 1
    KEY_INT32 = 2
    KEY_INT64 = 3
    KEY_UINT8 = 4
    KEY_UINT16 = 5
    KEY_UINT32 = 6
    KEY_UINT64 = 7
    KEY_FLOAT32 = 8
    KEY_FLOAT64 = 9
    KEY_BOOL = 10
    KEY_DECIMAL128 = 11
    KEY_BINARY = 12        # string / binary: int32 offsets
    KEY_LARGE_BINARY = 13  # large_string / large_binary: int64 offsets
    KEY_FIXED_BINARY = 14

# A read-only view of one Arrow column of one batch.  Pointers of
# byte-aligned buffers are pre-shifted by the array offset; bitmaps keep
# `bit_offset` because they cannot be shifted by whole bytes.
cdef struct ColumnView:
    int32_t key_class
    int32_t width           # bytes per value (fixed-width classes)
    int64_t bit_offset      # array offset, for the validity and bool bitmaps
    int64_t length
    const uint8_t* validity  # NULL when the column has no nulls
    const uint8_t* values   # fixed-width values, bool bitmap, or binary data
    const void* offsets     # int32_t* or int64_t* for binary classes
