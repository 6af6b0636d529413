# Space-filling curve keys from per-column rank ids: the sort keys of a
# clustered layout (`Table.optimize(order=..., strategy="zorder"|"hilbert")`).
#
# Input is a C-contiguous (n_rows, n_cols) uint32 array of ranks, every rank
# below 2**bits, with n_cols * bits <= 64; output is one uint64 key per row.
# The Python layer (src/mergetree/table/curves.py) turns column values into
# ranks (sampled quantile boundaries: raw value bits cluster skewed and narrow
# columns badly) and scales them to `bits`; this module only computes keys.
#
# - Z-order: bit interleaving, most significant bits first; within each group of
#   n_cols bits, column 0's bit is the most significant.
# - Hilbert: John Skilling, "Programming the Hilbert curve", AIP Conf. Proc. 707
#   (2004): AxesToTranspose turns the point into the "transposed" Hilbert index,
#   which interleaved exactly as above is the index.  One column: the rank.
from libc.stdint cimport int64_t, uint32_t, uint64_t

cimport numpy as cnp
import numpy as np

cnp.import_array()

MAX_COLUMNS = 8   # the widest key: 8 columns x 8 bits
MAX_BITS = 32     # ranks are uint32

cdef enum:
    N_TABLES = 9  # spread tables for 1..8 columns (index 0 unused)

# SPREAD[n][v]: the 8 bits of the byte v placed n bits apart (bit j at j * n).
cdef uint64_t SPREAD[N_TABLES][256]


cdef void fill_spread_tables() noexcept nogil:
    cdef int n, v, j
    cdef uint64_t out
    for n in range(1, N_TABLES):
        for v in range(256):
            out = 0
            for j in range(8):
                if (v >> j) & 1:
                    out |= (<uint64_t>1) << (j * n)
            SPREAD[n][v] = out


fill_spread_tables()


# ---------------------------------------------------------------------------
# Kernels (no GIL).  Callers guarantee 1 <= n <= 8, 1 <= bits <= 32,
# n * bits <= 64 and every coordinate < 2**bits, so no shift below reaches 64.
# ---------------------------------------------------------------------------

cdef inline uint64_t spread_bits(uint32_t x, const uint64_t* table, int n, int bits) noexcept nogil:
    """The low `bits` bits of x, bit j moved to bit j * n."""
    cdef uint64_t out = table[x & 0xFF]
    if bits > 8:    # then n <= 7: shifts up to 56
        out |= table[(x >> 8) & 0xFF] << (8 * n)
    if bits > 16:   # then n <= 3: shifts up to 48
        out |= table[(x >> 16) & 0xFF] << (16 * n)
    if bits > 24:   # then n <= 2: shifts up to 48
        out |= table[(x >> 24) & 0xFF] << (24 * n)
    return out


cdef inline uint64_t interleave(const uint32_t* point, int n, int bits) noexcept nogil:
    """Bit interleaving: bit j of column c lands at j * n + (n - 1 - c)."""
    cdef const uint64_t* table = SPREAD[n]
    cdef uint64_t key = 0
    cdef int c
    for c in range(n):
        key |= spread_bits(point[c], table, n, bits) << (n - 1 - c)
    return key


cdef inline void axes_to_transpose(uint32_t* x, int n, int bits) noexcept nogil:
    """Skilling's AxesToTranspose, in place: the point's coordinates become the
    transposed Hilbert index (bit j of the index's group j is x[0]'s, ...)."""
    cdef uint32_t m = (<uint32_t>1) << (bits - 1)
    cdef uint32_t q = m
    cdef uint32_t p, t, ones, xi
    cdef uint32_t x0 = x[0]  # x[0] changes at every step: kept in a register
    cdef int i
    # inverse undo, branch-free: where bit q of x[i] is set, invert the low bits
    # of x[0]; else exchange the low bits of x[0] and x[i] (for i = 0: nothing)
    while q > 1:
        p = q - 1
        x0 ^= p & (0 - <uint32_t>((x0 & q) != 0))
        for i in range(1, n):
            xi = x[i]
            ones = 0 - <uint32_t>((xi & q) != 0)
            x0 ^= p & ones                          # invert
            t = (x0 ^ xi) & p & ~ones               # exchange
            x0 ^= t
            x[i] = xi ^ t
        q >>= 1
    x[0] = x0
    # Gray encode
    for i in range(1, n):
        x[i] ^= x[i - 1]
    t = 0
    q = m
    while q > 1:
        t ^= (q - 1) & (0 - <uint32_t>((x[n - 1] & q) != 0))
        q >>= 1
    for i in range(n):
        x[i] ^= t


cdef void zorder_rows(const uint32_t* ranks, int64_t rows, int n, int bits, uint64_t* out) noexcept nogil:
    cdef int64_t i
    for i in range(rows):
        out[i] = interleave(ranks + i * n, n, bits)


cdef void hilbert_rows(const uint32_t* ranks, int64_t rows, int n, int bits, uint64_t* out) noexcept nogil:
    cdef int64_t i
    cdef int c
    cdef uint32_t point[8]
    if n == 1:
        for i in range(rows):
            out[i] = ranks[i]
        return
    for i in range(rows):
        for c in range(n):
            point[c] = ranks[i * n + c]
        axes_to_transpose(point, n, bits)
        out[i] = interleave(point, n, bits)


cdef int64_t first_too_large(const uint32_t* ranks, int64_t count, int bits) noexcept nogil:
    """The flat index of the first rank >= 2**bits, or -1."""
    cdef int64_t i
    if bits >= 32:
        return -1
    for i in range(count):
        if ranks[i] >> bits:
            return i
    return -1


# ---------------------------------------------------------------------------
# Python entry points: check everything, then run a kernel without the GIL.
# ---------------------------------------------------------------------------

cdef const uint32_t[:, ::1] ranks_view(object ranks, str fn):
    """`ranks` as a checked (n_rows, n_cols) view, with a clear ValueError otherwise."""
    cdef const uint32_t[:, ::1] view
    what = f"{fn}: ranks must be a C-contiguous 2-D uint32 array of shape (n_rows, n_cols)"
    if ranks is None:
        raise ValueError(f"{what}, not None")
    if isinstance(ranks, np.ndarray):
        if ranks.dtype != np.uint32:
            raise ValueError(f"{what}, not dtype {ranks.dtype}")
        if ranks.ndim != 2:
            raise ValueError(f"{what}, not a {ranks.ndim}-D array")
        if not ranks.flags.c_contiguous:
            raise ValueError(f"{what}; this one is not C-contiguous (np.ascontiguousarray makes it so)")
    try:
        view = ranks
    except (ValueError, TypeError, BufferError) as exc:
        raise ValueError(f"{what} ({type(ranks).__name__}: {exc})") from None
    return view


cdef int check_bits(object bits, int64_t n_cols, str fn) except -1:
    if isinstance(bits, (bool, np.bool_)) or not isinstance(bits, (int, np.integer)):
        raise ValueError(f"{fn}: bits must be an integer, not {bits!r}")
    if n_cols < 1 or n_cols > MAX_COLUMNS:
        raise ValueError(f"{fn}: ranks must have 1 to {MAX_COLUMNS} columns, not {n_cols}")
    limit = min(MAX_BITS, 64 // n_cols)
    if not 1 <= bits <= limit:
        raise ValueError(f"{fn}: bits must be from 1 to {limit} for {n_cols} column(s) "
                         f"(n_cols * bits <= 64, bits <= {MAX_BITS}), not {bits}")
    return 0


cdef object run(object ranks, object bits, bint hilbert, str fn):
    cdef const uint32_t[:, ::1] view = ranks_view(ranks, fn)
    cdef int64_t rows = view.shape[0]
    cdef int64_t n64 = view.shape[1]
    check_bits(bits, n64, fn)
    cdef int n = <int>n64
    cdef int b = <int>bits
    cdef int64_t bad
    out = np.empty(rows, dtype=np.uint64)
    if rows == 0:
        return out
    cdef uint64_t[::1] keys = out
    cdef const uint32_t* r = &view[0, 0]
    with nogil:
        bad = first_too_large(r, rows * n, b)
    if bad >= 0:
        raise ValueError(f"{fn}: rank {view[bad // n, bad % n]} at row {bad // n}, column {bad % n} "
                         f"does not fit {b} bits (every rank must be < {1 << b})")
    with nogil:
        if hilbert:
            hilbert_rows(r, rows, n, b, &keys[0])
        else:
            zorder_rows(r, rows, n, b, &keys[0])
    return out


def zorder_keys(ranks, bits):
    """Z-order (Morton) keys: each row's ranks bit-interleaved, most significant bits
    first, column 0's bit the most significant of each group.

    ranks: C-contiguous (n_rows, n_cols) uint32 array, 1 <= n_cols <= 8, every rank < 2**bits;
    bits: 1 <= bits <= 32 and n_cols * bits <= 64.  Returns a new uint64 array of n_rows keys.
    """
    return run(ranks, bits, False, "zorder_keys")


def hilbert_keys(ranks, bits):
    """Hilbert keys: each row's index along the Hilbert curve through the n_cols-dimensional
    cube of side 2**bits (Skilling's transpose algorithm; one column: the rank itself).

    Arguments as for `zorder_keys`.  Consecutive keys are points one unit step apart.
    """
    return run(ranks, bits, True, "hilbert_keys")
