# The one way our Cython code reads Arrow: an object's `__arrow_c_array__`
# capsules (the Arrow PyCapsule protocol over the C Data Interface), checked
# here, once per batch, before any loop trusts a pointer.  Shared by the merge
# core and the bucket hash; inline functions, compiled into each module.
#
# What is checked: the format string (one of the flat layouts below, no
# dictionary), buffer counts, non-null buffers where rows need them, lengths
# and offsets that are non-negative and do not overflow, a validity bitmap when
# nulls are announced, and binary offsets that start at or above 0 and never
# decrease.  What the C Data Interface cannot tell -- how many bytes a buffer
# really holds -- the Python layer checks with pyarrow's `Array.validate()`
# before it exports (see mergetree's arrow input checks); a direct caller of
# these modules vouches for its producer's buffer sizes.
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from libc.stdint cimport INT64_MAX, int32_t, int64_t, uint8_t

from mergetree_arrow_abi cimport ArrowArray, ArrowSchema

# Physical layouts of flat Arrow arrays.
cdef enum ColumnLayout:
    LAYOUT_FIXED = 0         # validity + `width`-byte values
    LAYOUT_BITS = 1          # validity + bit-packed values (bool)
    LAYOUT_BINARY = 2        # validity + int32 offsets + data
    LAYOUT_LARGE_BINARY = 3  # validity + int64 offsets + data


# One validated column.  `offset` is the logical row offset into every buffer
# (the parent's plus the array's own); `values` is the values, bits or offsets
# buffer as exported (not shifted).
cdef struct ArrowColumn:
    int32_t layout
    int32_t width
    int64_t offset
    int64_t length
    const uint8_t* validity  # NULL when the column has no nulls
    const uint8_t* values
    const uint8_t* data      # binary data; NULL only when every value is empty


cdef inline tuple format_layout(bytes fmt):
    """(layout, value width in bytes) of a flat Arrow format string."""
    cdef int64_t width
    if fmt == b"b":
        return LAYOUT_BITS, 0
    if fmt in (b"c", b"C"):
        return LAYOUT_FIXED, 1
    if fmt in (b"s", b"S", b"e"):
        return LAYOUT_FIXED, 2
    if fmt in (b"i", b"I", b"f", b"tdD", b"tts", b"ttm", b"tiM"):
        return LAYOUT_FIXED, 4
    if fmt in (b"l", b"L", b"g", b"tdm", b"ttu", b"ttn", b"tiD") or fmt[:2] in (b"ts", b"tD"):
        return LAYOUT_FIXED, 8
    if fmt in (b"u", b"z"):
        return LAYOUT_BINARY, 0
    if fmt in (b"U", b"Z"):
        return LAYOUT_LARGE_BINARY, 0
    if fmt[:2] == b"w:":
        try:
            width = int(fmt[2:])
        except ValueError:
            width = -1
        if width < 0 or width > 0x7fffffff:
            raise ValueError(f"malformed fixed-size binary format {fmt!r}")
        return LAYOUT_FIXED, width
    if fmt[:2] == b"d:":
        parts = fmt[2:].split(b",")
        bits = int(parts[2]) if len(parts) == 3 and parts[2].isdigit() else (128 if len(parts) == 2 else -1)
        if bits not in (32, 64, 128, 256):
            raise ValueError(f"malformed decimal format {fmt!r}")
        return LAYOUT_FIXED, bits // 8
    raise ValueError(f"Arrow format {fmt!r} is not a flat layout the core reads "
                     f"(nested, view and dictionary types are normalized before export)")


ctypedef fused offset_t:
    int32_t
    int64_t


cdef inline int64_t first_decrease(const offset_t* offsets, int64_t rows) noexcept nogil:
    """The first row whose end offset is below its start, or -1."""
    cdef int64_t i
    for i in range(rows):
        if offsets[i + 1] < offsets[i]:
            return i
    return -1


cdef inline int import_column(const ArrowSchema* schema, const ArrowArray* arr, int64_t parent_offset,
                              int64_t rows, ArrowColumn* out) except -1:
    """Check one exported array and describe it in `out`.  `rows` rows starting at
    `parent_offset` (a struct parent's offset; 0 for a lone array) are read."""
    cdef int64_t start, first, end, bad, n_buffers
    cdef int32_t layout, width
    cdef const int32_t* off32
    cdef const int64_t* off64
    if schema == NULL or arr == NULL or schema.format == NULL:
        raise ValueError("a column was exported without a schema or array")
    if arr.release == NULL:
        raise ValueError("a column's array was already released")
    if schema.dictionary != NULL or arr.dictionary != NULL:
        raise ValueError("dictionary-encoded columns must be decoded before export")
    layout, width = format_layout(<bytes>schema.format)
    out.layout = layout
    out.width = width
    if arr.length < 0 or arr.offset < 0 or arr.null_count < -1 or parent_offset < 0 or rows < 0:
        raise ValueError(f"negative length, offset or null count (length {arr.length}, "
                         f"offset {arr.offset}, null_count {arr.null_count})")
    if parent_offset > INT64_MAX - rows or parent_offset + rows > arr.length:
        raise ValueError(f"column of {arr.length} rows is shorter than its batch "
                         f"({parent_offset} + {rows} rows)")
    if arr.offset > INT64_MAX - arr.length - 1:
        raise ValueError("column offset overflows")
    n_buffers = 3 if layout == LAYOUT_BINARY or layout == LAYOUT_LARGE_BINARY else 2
    if arr.n_buffers != n_buffers or (n_buffers and arr.buffers == NULL):
        raise ValueError(f"format {(<bytes>schema.format)!r} needs {n_buffers} buffers, "
                         f"the array has {arr.n_buffers}")
    start = arr.offset + parent_offset
    out.offset = start
    out.length = rows
    out.validity = NULL
    out.values = <const uint8_t*>arr.buffers[1]
    out.data = NULL
    if arr.null_count != 0 and arr.buffers[0] != NULL:
        out.validity = <const uint8_t*>arr.buffers[0]
    elif arr.null_count > 0:
        raise ValueError(f"the array announces {arr.null_count} nulls but has no validity bitmap")
    if rows == 0:
        return 0
    if layout == LAYOUT_FIXED:
        if width and start > INT64_MAX // width - rows:
            raise ValueError("column offset overflows")
        if out.values == NULL and width:
            raise ValueError("the array has no values buffer")
        return 0
    if out.values == NULL:
        raise ValueError("the array has no values buffer")
    if layout == LAYOUT_BITS:
        return 0
    # binary: offsets must start at or above 0 and never decrease
    out.data = <const uint8_t*>arr.buffers[2]
    if layout == LAYOUT_BINARY:
        off32 = (<const int32_t*>out.values) + start
        with nogil:
            bad = first_decrease(off32, rows)
        first = off32[0]
        end = off32[rows]
    else:
        off64 = (<const int64_t*>out.values) + start
        with nogil:
            bad = first_decrease(off64, rows)
        first = off64[0]
        end = off64[rows]
    if first < 0:
        raise ValueError(f"binary offsets start at {first}, below 0")
    if bad >= 0:
        raise ValueError(f"binary offsets decrease at row {bad}")
    if out.data == NULL and end > first:
        raise ValueError("a binary array with non-empty values has no data buffer")
    return 0


cdef inline tuple export_capsules(object obj):
    """`obj.__arrow_c_array__()`, checked: (schema capsule, array capsule)."""
    export = getattr(obj, "__arrow_c_array__", None)
    if export is None:
        raise TypeError(f"expected an Arrow array or record batch (__arrow_c_array__), "
                        f"not {type(obj).__name__}")
    capsules = export()
    if (not isinstance(capsules, tuple) or len(capsules) != 2
            or not PyCapsule_IsValid(capsules[0], b"arrow_schema")
            or not PyCapsule_IsValid(capsules[1], b"arrow_array")):
        raise TypeError("__arrow_c_array__ must return an ('arrow_schema', 'arrow_array') capsule pair")
    return capsules


cdef inline const ArrowSchema* schema_of(tuple capsules):
    return <const ArrowSchema*>PyCapsule_GetPointer(capsules[0], b"arrow_schema")


cdef inline const ArrowArray* array_of(tuple capsules):
    return <const ArrowArray*>PyCapsule_GetPointer(capsules[1], b"arrow_array")


cdef inline int check_struct(const ArrowSchema* schema, const ArrowArray* arr, int64_t n_children) except -1:
    """A record batch (struct array) of `n_children` columns and no top-level nulls."""
    if schema.format == NULL or <bytes>schema.format != b"+s":
        raise ValueError("expected a record batch (struct) export")
    if arr.release == NULL:
        raise ValueError("the batch's array was already released")
    if schema.n_children != n_children or arr.n_children != n_children:
        raise ValueError(f"the batch has {arr.n_children} columns, {n_children} expected")
    if n_children and (schema.children == NULL or arr.children == NULL):
        raise ValueError("the batch has no child arrays")
    if arr.length < 0 or arr.offset < 0:
        raise ValueError("negative batch length or offset")
    if arr.offset > INT64_MAX - arr.length:
        raise ValueError("batch offset overflows")
    if arr.null_count > 0:
        raise ValueError("a record batch cannot have top-level nulls")
    return 0
