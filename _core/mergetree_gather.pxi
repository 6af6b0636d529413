# Output assembly: gather the output rows straight from the input batches
# (no concatenation of the inputs, no index translation).  `take_output` says
# which (run, position) each output row is; `resolve_sources` turns that into
# (piece, row) over the run slices Python still holds; `gather_column` copies
# one column's values.  Flat layouts only; Python takes the rest with pyarrow.
#
# Included into mergetree_core.pyx (one extension module, mergetree._core);
# reads Arrow through mergetree_arrow_columns.pxd.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy, memset

from mergetree_arrow_abi cimport ArrowArray, ArrowSchema
from mergetree_arrow_columns cimport (
    ArrowColumn, LAYOUT_BINARY, LAYOUT_BITS, LAYOUT_FIXED, LAYOUT_LARGE_BINARY, array_of,
    export_capsules, format_layout, import_column, schema_of)
from mergetree_comparators cimport bit_is_set


def resolve_sources(const int32_t[::1] out_run, const int64_t[::1] out_pos,
                    const int64_t[::1] piece_start, const int64_t[::1] piece_rows,
                    const int64_t[::1] run_pieces):
    """For every output row, the piece holding it and its row in that piece.

    Run r's pieces are `run_pieces[r]` to `run_pieces[r + 1]` (exclusive), in
    position order; piece p holds positions [piece_start[p], piece_start[p] +
    piece_rows[p]).  A run's positions rise through the output, so one cursor
    per run finds every piece."""
    cdef Py_ssize_t n = out_run.shape[0], i
    cdef Py_ssize_t k = run_pieces.shape[0] - 1
    cdef Py_ssize_t n_pieces = piece_start.shape[0]
    cdef int64_t pos, p, end, bad = -1
    cdef int32_t r
    if out_pos.shape[0] != n or piece_rows.shape[0] != n_pieces or k < 0:
        raise ValueError("resolve_sources: mismatched array lengths")
    for i in range(k + 1):
        if run_pieces[i] < 0 or run_pieces[i] > n_pieces or (i and run_pieces[i] < run_pieces[i - 1]):
            raise ValueError("resolve_sources: run_pieces must rise within the pieces")
    cursor_arr = np.asarray(run_pieces[:k], dtype=np.int64).copy() if k else np.empty(0, np.int64)
    src_piece = np.empty(n, dtype=np.int32)
    src_row = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] cursor = cursor_arr
    cdef int32_t[::1] sp = src_piece
    cdef int64_t[::1] sr = src_row
    with nogil:
        for i in range(n):
            r = out_run[i]
            if r < 0 or r >= k:
                bad = i
                break
            p = cursor[r]
            end = run_pieces[r + 1]
            pos = out_pos[i]
            while p < end and pos >= piece_start[p] + piece_rows[p]:
                p += 1
            if p >= end or pos < piece_start[p]:
                bad = i
                break
            cursor[r] = p
            sp[i] = <int32_t>p
            sr[i] = pos - piece_start[p]
    if bad >= 0:
        raise ValueError(f"output row {bad} (run {out_run[bad]}, position {out_pos[bad]}) is in no piece")
    return src_piece, src_row


cdef struct PieceColumn:
    const uint8_t* validity
    const uint8_t* values
    const uint8_t* data
    const uint8_t* data_end   # binary: end of the piece's last value (readable up to here)
    int64_t offset
    int64_t length


ctypedef fused word_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t


cdef inline void gather_words(const PieceColumn* cols, const int32_t[::1] src_piece,
                              const int64_t[::1] src_row, word_t* out) noexcept nogil:
    cdef Py_ssize_t i
    cdef int32_t p
    for i in range(src_piece.shape[0]):
        p = src_piece[i]
        out[i] = (<const word_t*>cols[p].values)[cols[p].offset + src_row[i]]


cdef void gather_fixed(const PieceColumn* cols, Py_ssize_t n_pieces, const int32_t[::1] src_piece,
                       const int64_t[::1] src_row, int32_t width, uint8_t* out) noexcept nogil:
    """Copy `width`-byte values; one typed loop per common width, no branch per value."""
    cdef Py_ssize_t i
    cdef int32_t p
    if width == 8:
        gather_words(cols, src_piece, src_row, <uint64_t*>out)
    elif width == 4:
        gather_words(cols, src_piece, src_row, <uint32_t*>out)
    elif width == 2:
        gather_words(cols, src_piece, src_row, <uint16_t*>out)
    elif width == 1:
        gather_words(cols, src_piece, src_row, <uint8_t*>out)
    else:
        for i in range(src_piece.shape[0]):
            p = src_piece[i]
            memcpy(out + i * width, cols[p].values + (cols[p].offset + src_row[i]) * width, <size_t>width)


cdef int64_t gather_validity(const PieceColumn* cols, const int32_t[::1] src_piece,
                             const int64_t[::1] src_row, uint8_t* out_valid) noexcept nogil:
    """Set the validity bit of every output row whose source is valid (out_valid starts
    zeroed); returns the null count."""
    cdef Py_ssize_t i, n = src_piece.shape[0]
    cdef int64_t nulls = 0
    cdef int32_t p
    for i in range(n):
        p = src_piece[i]
        if cols[p].validity == NULL or bit_is_set(cols[p].validity, cols[p].offset + src_row[i]):
            out_valid[i >> 3] |= <uint8_t>(1 << (i & 7))
        else:
            nulls += 1
    return nulls


cdef uint8_t* allocated(object allocate, Py_ssize_t nbytes, list keep, bint zeroed) except NULL:
    """A writable buffer of at least nbytes (at least 1) from `allocate`, kept in `keep`."""
    cdef signed char[::1] view   # an Arrow buffer exports bytes as format 'b'
    buf = allocate(max(nbytes, 1))
    view = buf
    if view.shape[0] < nbytes:
        raise ValueError(f"the allocator returned {view.shape[0]} bytes, {nbytes} asked")
    keep.append(buf)
    if zeroed:
        memset(&view[0], 0, view.shape[0])
    return <uint8_t*>&view[0]


def gather_column(list pieces, const int32_t[::1] src_piece, const int64_t[::1] src_row, object allocate):
    """One column's output buffers: (validity or None, null count, values, data or None).

    `pieces` are arrays (`__arrow_c_array__`) of one flat type, each checked on
    import; `allocate(nbytes)` returns a writable buffer (an Arrow memory pool's
    reuses its pages, where fresh numpy arrays would fault them in every time).
    Returns None for a layout this function does not copy (Python then takes the
    column with pyarrow), or when string offsets would overflow int32."""
    cdef Py_ssize_t n = src_piece.shape[0], n_pieces = len(pieces), i
    cdef PieceColumn* cols
    cdef ArrowColumn col
    cdef const ArrowSchema* schema
    cdef const ArrowArray* arr
    cdef int32_t layout = -1, width = 0, p
    cdef int64_t row, start, end, total = 0, null_count = 0, bad = -1
    cdef bint any_validity = False, large
    cdef bytes fmt0 = None
    cdef uint8_t* out_valid = NULL
    cdef uint8_t* out_values
    cdef uint8_t* out_data = NULL
    cdef int32_t* off32
    cdef int64_t* off64
    cdef uint8_t* dst
    cdef const uint8_t* src
    cdef int64_t length
    if src_row.shape[0] != n:
        raise ValueError("gather_column: src_piece and src_row differ in length")
    if n_pieces == 0:
        return None
    held = []
    cols = <PieceColumn*>calloc(n_pieces, sizeof(PieceColumn))
    if cols == NULL:
        raise MemoryError()
    try:
        for i in range(n_pieces):
            capsules = export_capsules(pieces[i])
            held.append(capsules)
            schema, arr = schema_of(capsules), array_of(capsules)
            if schema.format == NULL:
                raise ValueError("a column was exported without a format")
            if schema.dictionary != NULL or arr.dictionary != NULL:
                return None   # dictionary-encoded: pyarrow's take
            if fmt0 is None:
                fmt0 = <bytes>schema.format
                try:
                    layout, width = format_layout(fmt0)
                except ValueError:
                    return None   # nested, dictionary, view...: pyarrow's take
            elif <bytes>schema.format != fmt0:
                raise ValueError(f"piece {i} has Arrow format {(<bytes>schema.format)!r}, piece 0 {fmt0!r}")
            import_column(schema, arr, 0, arr.length, &col)
            cols[i].validity = col.validity
            cols[i].values = col.values
            cols[i].data = col.data
            cols[i].offset = col.offset
            cols[i].length = col.length
            cols[i].data_end = NULL
            if col.layout == LAYOUT_BINARY and col.data != NULL:
                cols[i].data_end = col.data + (<const int32_t*>col.values)[col.offset + col.length]
            elif col.layout == LAYOUT_LARGE_BINARY and col.data != NULL:
                cols[i].data_end = col.data + (<const int64_t*>col.values)[col.offset + col.length]
            any_validity = any_validity or col.validity != NULL
        with nogil:   # every (piece, row) must exist before anything is read
            for i in range(n):
                p = src_piece[i]
                if p < 0 or p >= n_pieces or src_row[i] < 0 or src_row[i] >= cols[p].length:
                    bad = i
                    break
        if bad >= 0:
            raise ValueError(f"gather_column: output row {bad} points outside its piece")
        out = []
        validity = None
        if any_validity:
            out_valid = allocated(allocate, (n + 7) // 8, out, True)
            validity = out[len(out) - 1]   # (no wraparound in the core)
        if layout == LAYOUT_FIXED or layout == LAYOUT_BITS:
            out_values = allocated(allocate, n * width if layout == LAYOUT_FIXED else (n + 7) // 8, out,
                                   layout == LAYOUT_BITS)
            values = out[len(out) - 1]   # (no wraparound in the core)
            with nogil:
                if layout == LAYOUT_FIXED:
                    gather_fixed(cols, n_pieces, src_piece, src_row, width, out_values)
                else:
                    for i in range(n):
                        p = src_piece[i]
                        if bit_is_set(cols[p].values, cols[p].offset + src_row[i]):
                            out_values[i >> 3] |= <uint8_t>(1 << (i & 7))
                if any_validity:
                    null_count = gather_validity(cols, src_piece, src_row, out_valid)
            return validity, null_count, values, None
        # binary: lengths first, then the bytes
        large = layout == LAYOUT_LARGE_BINARY
        off64 = <int64_t*>allocated(allocate, (n + 1) * (8 if large else 4), out, False)
        off32 = <int32_t*>off64
        offsets = out[len(out) - 1]   # (no wraparound in the core)
        with nogil:
            for i in range(n):
                p = src_piece[i]
                row = cols[p].offset + src_row[i]
                if large:
                    start = (<const int64_t*>cols[p].values)[row]
                    end = (<const int64_t*>cols[p].values)[row + 1]
                    off64[i] = total
                else:
                    start = (<const int32_t*>cols[p].values)[row]
                    end = (<const int32_t*>cols[p].values)[row + 1]
                    off32[i] = <int32_t>total
                total += end - start
                if not large and total > 0x7fffffff:
                    bad = i
                    break
        if bad >= 0:
            return None   # the output needs large offsets: pyarrow's take reports it
        if large:
            off64[n] = total
        else:
            off32[n] = <int32_t>total
        # 16 bytes of slack: short values are copied as two 8-byte words (no memcpy call)
        out_data = allocated(allocate, total + 16, out, False)
        data = out[len(out) - 1]   # (no wraparound in the core)
        with nogil:
            for i in range(n):
                p = src_piece[i]
                row = cols[p].offset + src_row[i]
                if large:
                    start = (<const int64_t*>cols[p].values)[row]
                    dst = out_data + off64[i]
                    length = off64[i + 1] - off64[i]
                else:
                    start = (<const int32_t*>cols[p].values)[row]
                    dst = out_data + off32[i]
                    length = off32[i + 1] - off32[i]
                if length == 0:
                    continue
                src = cols[p].data + start
                if length <= 16 and src + 16 <= cols[p].data_end:
                    memcpy(dst, src, 8)
                    memcpy(dst + 8, src + 8, 8)
                else:
                    memcpy(dst, src, <size_t>length)
            if any_validity:
                null_count = gather_validity(cols, src_piece, src_row, out_valid)
        return validity, null_count, offsets, data
    finally:
        free(cols)
