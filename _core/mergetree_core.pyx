# The merge core: the six-state loser tree, its fixed-width path, a binary heap
# over the same comparators, emit, and the resumable MergeCore that drives them.
# The Python layer (src/mergetree) feeds batches through the Arrow C Data
# Interface and assembles batches from the buffers this module gathers; it
# never sees a pointer.
#
# The module's other parts live in files of their own, one concept each:
#   mergetree_comparators.pxd       the typed comparators (inline; the join's too)
#   mergetree_gather.pxi            output assembly from the input batches
#   mergetree_group_reductions.pxi  vectorized group reductions for the merge engines
#   mergetree_merge_join.pxi        the sorted merge join
#   mergetree_run_cutting.pxi       cutting runs at the same key for parallel merges
# The .pxi files are included at the end: one extension module (mergetree._core),
# one set of Python names.
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy, memset

cimport numpy as cnp
import numpy as np

from mergetree_arrow_abi cimport ArrowArray, ArrowSchema
from mergetree_arrow_columns cimport (
    ArrowColumn, LAYOUT_BINARY, LAYOUT_BITS, LAYOUT_LARGE_BINARY, array_of,
    check_struct, export_capsules, import_column, schema_of)
from mergetree_comparators cimport (
    SIGN_BIT, binary_value, bit_is_set, column_prefix, compare_rows, compare_rows_skip,
    fixed_prefix, fixed_t)
from mergetree_key_columns cimport (
    ColumnView, KEY_BINARY, KEY_BOOL, KEY_DECIMAL128, KEY_FIXED_BINARY,
    KEY_FLOAT32, KEY_FLOAT64, KEY_INT8, KEY_INT16, KEY_INT32, KEY_INT64,
    KEY_LARGE_BINARY, KEY_UINT8, KEY_UINT16, KEY_UINT32, KEY_UINT64)
from mergetree_loser_tree cimport (
    EMIT_ALL, EMIT_FIRST, EMIT_LAST, LOSER_POPPED, LOSER_WITH_NEW_KEY,
    LOSER_WITH_SAME_KEY, NODE_EMPTY_TAG, mt_levels, mt_node_less,
    Leaf, MergeState, STEP_BAD_STATE, STEP_DONE, mt_build_climb, mt_climb, mt_node,
    STEP_NEED_BATCH, STEP_OUTPUT_FULL, STEP_RETRACTION, STEP_STRETCH, STEP_UNSORTED,
    WINNER_POPPED, WINNER_WITH_NEW_KEY, WINNER_WITH_SAME_KEY)

cnp.import_array()

# Row kinds, as in Paimon: +I, -U, +U, -D.
cdef enum:
    ROW_KIND_INSERT = 0
    ROW_KIND_UPDATE_BEFORE = 1
    ROW_KIND_UPDATE_AFTER = 2
    ROW_KIND_DELETE = 3


# ---------------------------------------------------------------------------
# Key order of two leaves: the comparators (mergetree_comparators.pxd) on the
# leaves' cached images, counted.
# ---------------------------------------------------------------------------

cdef inline void load_key(Leaf* leaf, int64_t skip) noexcept nogil:
    leaf.prefix = column_prefix(&leaf.keys[0], leaf.row, &leaf.exact, skip)
    if leaf.seq_values != NULL:
        leaf.seq = leaf.seq_values[leaf.row]


cdef inline int compare_keys(MergeState* m, const Leaf* a, const Leaf* b) noexcept nogil:
    """Key order of two live leaves: <0, 0, >0."""
    m.key_comparisons += 1
    if a.prefix != b.prefix:
        return -1 if a.prefix < b.prefix else 1
    if a.exact and b.exact:
        if m.nkeys == 1:
            return 0
        return compare_rows(m.nkeys, 1, a.keys, a.row, b.keys, b.row)
    return compare_rows_skip(m.nkeys, m.skip, a.keys, a.row, b.keys, b.row)


cdef inline bint is_older(MergeState* m, int32_t a, int32_t b) noexcept nogil:
    """Is leaf a's row an older version than leaf b's?  Ties go to the run order."""
    m.sequence_comparisons += 1
    cdef int64_t sa = m.leaves[a].seq
    cdef int64_t sb = m.leaves[b].seq
    if sa != sb:
        return sa < sb
    return a < b


cdef inline int compare_new_keys(MergeState* m, const Leaf* climber, const Leaf* parked) noexcept nogil:
    """Like compare_keys, but an exhausted run is +infinity; two exhausted runs: the climber wins."""
    if climber.exhausted:
        return 1 if not parked.exhausted else -1
    if parked.exhausted:
        return -1
    return compare_keys(m, climber, parked)


# ---------------------------------------------------------------------------
# Leaf advancement and order checking.
# ---------------------------------------------------------------------------

cdef inline int advance_leaf(MergeState* m, int32_t w) noexcept nogil:
    """Move leaf w to its next row.  0: done; 1: needs the next batch; -1: run out of order."""
    cdef Leaf* leaf = &m.leaves[w]
    cdef uint64_t old_prefix = leaf.prefix
    cdef int32_t old_exact = leaf.exact
    cdef int r
    if leaf.row + 1 >= leaf.nrows:
        return 1
    leaf.row += 1
    leaf.pos += 1
    leaf.state = WINNER_WITH_NEW_KEY
    leaf.first_same_key = -1
    load_key(leaf, m.skip)
    if m.check_order:
        if leaf.prefix != old_prefix:
            r = -1 if old_prefix < leaf.prefix else 1
        elif old_exact and leaf.exact and m.nkeys == 1:
            r = 0
        else:
            r = compare_rows_skip(m.nkeys, m.skip, leaf.keys, leaf.row - 1, leaf.keys, leaf.row)
        if r >= 0:
            m.error_run = w
            m.error_pos = leaf.pos
            return -1
    return 0


# ---------------------------------------------------------------------------
# The six-state loser tree.
# ---------------------------------------------------------------------------

# The climber's state decides which transitions can happen, so each climber
# state gets its own loop: the same transitions as one generic state machine,
# but with fewer branches and separate branch-predictor histories.

cdef inline int climb_new_key(MergeState* m, int32_t w, int32_t node) noexcept nogil:
    """Carry leaf w (WINNER_WITH_NEW_KEY: just advanced, or exhausted) up to the
    root.  Returns 0, or -1 on an impossible state."""
    cdef int32_t* tree = m.tree
    cdef Leaf* leaves = m.leaves
    cdef Leaf* W
    cdef Leaf* L
    cdef int32_t lid
    cdef int c
    while node > 0:
        lid = tree[node]
        if lid < 0:  # building the tree: park here
            tree[node] = w
            leaves[w].state = LOSER_WITH_NEW_KEY
            return 0
        L = &leaves[lid]
        if L.state == LOSER_WITH_NEW_KEY:
            W = &leaves[w]
            c = compare_new_keys(m, W, L)
            if c > 0:
                L.state = WINNER_WITH_NEW_KEY
                W.state = LOSER_WITH_NEW_KEY
                tree[node] = w
                w = lid
            elif c == 0:
                if is_older(m, w, lid):
                    L.state = LOSER_WITH_SAME_KEY
                    if W.first_same_key < 0:
                        W.first_same_key = node
                else:
                    W.state = LOSER_WITH_SAME_KEY
                    L.state = WINNER_WITH_NEW_KEY
                    if L.first_same_key < 0:
                        L.first_same_key = node
                    tree[node] = w
                    w = lid
        elif L.state == LOSER_POPPED:
            # the parked leaf still has to advance: it goes up first
            L.state = WINNER_POPPED
            L.first_same_key = -1
            leaves[w].state = LOSER_WITH_NEW_KEY
            tree[node] = w
            return climb_popped(m, lid, node >> 1)
        else:
            return -1  # a new key never meets an unpopped loser of the previous key
        node >>= 1
    tree[0] = w
    return 0


cdef inline int climb_popped(MergeState* m, int32_t w, int32_t node) noexcept nogil:
    """Carry popped leaf w (WINNER_POPPED) up during the next round; it goes
    first because its run must advance.  It passes everything but an unpopped
    loser with the same key, which would take over the climb (the seeds' rule;
    groups are popped by jumping, so by then no such loser remains, and if one
    did the root would not be WINNER_POPPED and tree_step reports a bad state)."""
    cdef int32_t* tree = m.tree
    cdef Leaf* leaves = m.leaves
    cdef int32_t lid, ls
    while node > 0:
        lid = tree[node]
        if lid < 0:
            return -1  # empty slots exist only while the tree is built
        ls = leaves[lid].state
        if ls == LOSER_WITH_SAME_KEY:
            leaves[lid].state = WINNER_WITH_SAME_KEY
            leaves[w].state = LOSER_POPPED
            tree[node] = w
            return climb_same_key(m, lid, node >> 1)
        if ls != LOSER_WITH_NEW_KEY and ls != LOSER_POPPED:
            return -1
        node >>= 1
    tree[0] = w
    return 0


cdef inline int climb_same_key(MergeState* m, int32_t w, int32_t node) noexcept nogil:
    """Carry leaf w (WINNER_WITH_SAME_KEY: the key of the group being popped) up;
    only other unpopped members of the group are compared, by sequence alone."""
    cdef int32_t* tree = m.tree
    cdef Leaf* leaves = m.leaves
    cdef Leaf* L
    cdef int32_t lid, ls
    while node > 0:
        lid = tree[node]
        if lid < 0:
            return -1  # empty slots exist only while the tree is built
        L = &leaves[lid]
        ls = L.state
        if ls == LOSER_WITH_SAME_KEY:
            if is_older(m, lid, w):
                L.state = WINNER_WITH_SAME_KEY
                leaves[w].state = LOSER_WITH_SAME_KEY
                if L.first_same_key < 0:
                    L.first_same_key = node
                tree[node] = w
                w = lid
            elif leaves[w].first_same_key < 0:
                leaves[w].first_same_key = node
        elif ls != LOSER_WITH_NEW_KEY and ls != LOSER_POPPED:
            return -1
        node >>= 1
    tree[0] = w
    return 0


cdef int build_tree(MergeState* m) noexcept nogil:
    cdef int32_t i
    for i in range(m.k):
        m.tree[i] = -1
        m.leaves[i].state = WINNER_WITH_NEW_KEY
        m.leaves[i].first_same_key = -1
    if m.k == 1:
        m.tree[0] = 0
        return 0
    for i in range(m.k - 1, -1, -1):
        if climb_new_key(m, i, (i + m.k) >> 1) < 0:
            return -1
    return 0


# ---------------------------------------------------------------------------
# The binary heap (algorithm "heap"), over the same comparators.
# ---------------------------------------------------------------------------

cdef inline bint heap_less(MergeState* m, int32_t a, int32_t b) noexcept nogil:
    cdef int c = compare_keys(m, &m.leaves[a], &m.leaves[b])
    if c != 0:
        return c < 0
    return is_older(m, a, b)


cdef void heap_sift_up(MergeState* m, int32_t i) noexcept nogil:
    cdef int32_t* h = m.heap
    cdef int32_t item = h[i]
    cdef int32_t parent
    while i > 0:
        parent = (i - 1) >> 1
        if not heap_less(m, item, h[parent]):
            break
        h[i] = h[parent]
        i = parent
    h[i] = item


cdef void heap_sift_down(MergeState* m, int32_t i) noexcept nogil:
    cdef int32_t* h = m.heap
    cdef int32_t n = m.heap_size
    cdef int32_t item = h[i]
    cdef int32_t child
    while True:
        child = 2 * i + 1
        if child >= n:
            break
        if child + 1 < n and heap_less(m, h[child + 1], h[child]):
            child += 1
        if not heap_less(m, h[child], item):
            break
        h[i] = h[child]
        i = child
    h[i] = item


cdef inline void heap_push(MergeState* m, int32_t w) noexcept nogil:
    m.heap[m.heap_size] = w
    m.heap_size += 1
    heap_sift_up(m, m.heap_size - 1)


cdef inline int32_t heap_pop(MergeState* m) noexcept nogil:
    cdef int32_t top = m.heap[0]
    m.heap_size -= 1
    if m.heap_size > 0:
        m.heap[0] = m.heap[m.heap_size]
        heap_sift_down(m, 0)
    return top


# ---------------------------------------------------------------------------
# Output: every popped row becomes (run, position in run); groups are handed
# to the engine whole, and EMIT_LAST / EMIT_FIRST reduce them on the spot.
# ---------------------------------------------------------------------------

cdef inline bint row_is_retraction(const Leaf* leaf) noexcept nogil:
    cdef int8_t kind
    if leaf.kind_values == NULL:
        return False
    kind = leaf.kind_values[leaf.row]
    return kind == ROW_KIND_UPDATE_BEFORE or kind == ROW_KIND_DELETE


cdef inline int emit_member(MergeState* m, int32_t w, int64_t group_start) noexcept nogil:
    """Record leaf w's row as the next (older-to-newer) member of the current group."""
    cdef Leaf* leaf = &m.leaves[w]
    cdef int64_t slot
    m.rows_in += 1
    if m.emit_mode == EMIT_ALL:
        slot = m.n_out
        m.n_out += 1
    elif m.emit_mode == EMIT_LAST:
        slot = group_start
        m.n_out = group_start + 1
    else:  # EMIT_FIRST
        if m.first_row_rejects_retractions and row_is_retraction(leaf):
            m.error_run = w
            m.error_pos = leaf.pos
            return -1
        if m.n_out > group_start:
            return 0
        slot = group_start
        m.n_out = group_start + 1
    m.out_run[slot] = w
    m.out_pos[slot] = leaf.pos
    return 0


cdef inline void finish_group(MergeState* m, int32_t last_leaf, int64_t group_start) noexcept nogil:
    if m.emit_mode == EMIT_ALL:
        m.group_ends[m.n_groups] = m.n_out
        m.n_groups += 1
    elif m.emit_mode == EMIT_LAST and not m.keep_deletes and row_is_retraction(&m.leaves[last_leaf]):
        m.n_out = group_start  # the newest version is a retraction: the key is gone
    else:
        m.n_groups += 1


cdef inline bint output_full(MergeState* m) noexcept nogil:
    # a group adds at most k members, so a group never overflows the buffers
    return m.n_out >= m.out_capacity - m.k or m.n_groups >= m.group_capacity


# ---------------------------------------------------------------------------
# Stretches.  Where runs do not interleave (time-ordered keys: each new run lies
# above the older ones), the winner's run keeps winning; once it has won
# `streak_min` single-member rounds in a row, the merge looks for the rows of its
# current batch that lie below the smallest head of every other run (galloping,
# then a binary search).  Each of those is a key group of one and the next output
# row, so at least `stretch_min` of them leave as one slice of the batch
# (STEP_STRETCH) without tree work; the engines' rules for groups of one apply to
# them in the Python layer.  A search that finds too few rows is not repeated
# until the run has won those rows the ordinary way.
# ---------------------------------------------------------------------------

cdef inline void count_win(MergeState* m, int32_t w, bint single) noexcept nogil:
    """Count a round's win toward the winner's streak (single: the group had one member)."""
    if not single:
        m.streak = 0
    elif w == m.streak_run:
        m.streak += 1
    else:
        m.streak_run = w
        m.streak = 1


cdef inline int64_t rows_below(MergeState* m, const Leaf* leaf, int32_t bound) noexcept nogil:
    """How many rows of `leaf`'s batch from its current row on have keys below leaf
    `bound`'s current key (-1: no bound, every row): galloping, then a binary search."""
    cdef int64_t start = leaf.row, n = leaf.nrows, lo = leaf.row, hi = leaf.nrows, step = 1, probe, mid
    cdef const Leaf* b
    if bound < 0:
        return n - start
    b = &m.leaves[bound]
    while True:  # gallop: the stretch is usually short when it is not the whole batch
        probe = start + step - 1
        if probe >= n:
            break
        m.key_comparisons += 1
        if compare_rows_skip(m.nkeys, m.skip, leaf.keys, probe, b.keys, b.row) >= 0:
            hi = probe
            break
        lo = probe + 1
        step <<= 1
    while lo < hi:
        mid = lo + ((hi - lo) >> 1)
        m.key_comparisons += 1
        if compare_rows_skip(m.nkeys, m.skip, leaf.keys, mid, b.keys, b.row) < 0:
            lo = mid + 1
        else:
            hi = mid
    return lo - start


cdef inline int64_t first_unsorted(MergeState* m, const Leaf* leaf, int64_t length) noexcept nogil:
    """The first of the `length` rows from leaf's current row on whose key is not above the
    key before it, or -1 (the search trusted the order: the check keeps the output honest)."""
    cdef int64_t r
    for r in range(leaf.row + 1, leaf.row + length):
        if compare_rows_skip(m.nkeys, m.skip, leaf.keys, r - 1, leaf.keys, r) >= 0:
            return r
    return -1


cdef inline int try_stretch(MergeState* m, int32_t w, int32_t bound) noexcept nogil:
    """Leaf w is the winner and its row a group of one; `bound` is the leaf holding the
    smallest head of the other runs (-1: none).  Hand out the stretch from w's row on if
    it is long enough: STEP_STRETCH (the leaf then stands on the stretch's last row, as
    if it had been emitted), STEP_UNSORTED, or 0 to go on the ordinary way."""
    cdef Leaf* leaf = &m.leaves[w]
    cdef int64_t length, bad
    length = rows_below(m, leaf, bound)
    if length < m.stretch_min:
        m.streak = m.streak_min - length  # those rows win the ordinary way first
        return 0
    if m.check_order:
        bad = first_unsorted(m, leaf, length)
        if bad >= 0:
            m.error_run = w
            m.error_pos = leaf.pos + (bad - leaf.row)
            return STEP_UNSORTED
    m.stretch_run = w
    m.stretch_pos = leaf.pos
    m.stretch_len = length
    leaf.row += length - 1
    leaf.pos += length - 1
    load_key(leaf, m.skip)  # the order check of the next row compares with the stretch's last
    m.rows_in += length
    m.rows_stretched += length
    m.streak = m.streak_min  # the run's next batch may go whole too
    return STEP_STRETCH


cdef inline int32_t tree_runner_up(MergeState* m, int32_t w) noexcept nogil:
    """The live leaf with the smallest key among the losers parked on w's path (the
    runner-up lost to w in one of the matches w won), or -1 when none is live."""
    cdef int32_t node = (w + m.k) >> 1, lid, best = -1
    while node > 0:
        lid = m.tree[node]
        if lid >= 0 and not m.leaves[lid].exhausted:
            if best < 0 or compare_keys(m, &m.leaves[lid], &m.leaves[best]) < 0:
                best = lid
        node >>= 1
    return best


cdef int tree_step(MergeState* m) noexcept nogil:
    cdef int32_t w, j, other
    cdef Leaf* leaf
    cdef int r
    cdef bint single
    cdef int64_t group_start
    if m.resume_run >= 0:  # Python supplied a batch (or the end) for the popped root
        w = m.resume_run
        m.resume_run = -1
        if climb_new_key(m, w, (w + m.k) >> 1) < 0:
            return STEP_BAD_STATE
    while True:
        w = m.tree[0]
        leaf = &m.leaves[w]
        if leaf.state == WINNER_POPPED:
            # start of the next round: advance every leaf popped in the last group
            r = advance_leaf(m, w)
            if r == 1:
                m.need_run = w
                return STEP_NEED_BATCH
            if r < 0:
                return STEP_UNSORTED
            if climb_new_key(m, w, (w + m.k) >> 1) < 0:
                return STEP_BAD_STATE
            continue
        if leaf.state != WINNER_WITH_NEW_KEY:
            return STEP_BAD_STATE
        if leaf.exhausted:
            return STEP_DONE
        if output_full(m):
            return STEP_OUTPUT_FULL
        if leaf.first_same_key < 0 and w == m.streak_run and m.streak >= m.streak_min:
            r = try_stretch(m, w, tree_runner_up(m, w))
            if r != 0:
                leaf.state = WINNER_POPPED  # the next round advances past the stretch
                return r
        # pop the whole key group, oldest to newest, before any run advances
        group_start = m.n_out
        single = True
        while True:
            if emit_member(m, w, group_start) < 0:
                return STEP_RETRACTION
            leaf.state = WINNER_POPPED
            j = leaf.first_same_key
            if j < 0:
                break
            single = False
            # hand over directly to the next leaf with the same key
            other = m.tree[j]
            m.tree[j] = w
            leaf.state = LOSER_POPPED
            m.leaves[other].state = WINNER_WITH_SAME_KEY
            if climb_same_key(m, other, j >> 1) < 0:
                return STEP_BAD_STATE
            w = m.tree[0]
            leaf = &m.leaves[w]
            if leaf.state != WINNER_WITH_SAME_KEY:
                return STEP_BAD_STATE
        finish_group(m, w, group_start)
        count_win(m, w, single)


cdef int heap_step(MergeState* m) noexcept nogil:
    cdef int32_t w, top
    cdef int r
    cdef int64_t group_start
    if not m.initialized:
        for w in range(m.k):
            if not m.leaves[w].exhausted:
                heap_push(m, w)
        m.initialized = 1
    if m.resume_run >= 0:
        w = m.resume_run
        m.resume_run = -1
        if not m.leaves[w].exhausted:
            heap_push(m, w)
        m.advance_index += 1
    while True:
        while m.advance_index < m.n_popped:
            w = m.popped[m.advance_index]
            r = advance_leaf(m, w)
            if r == 1:
                m.need_run = w
                return STEP_NEED_BATCH
            if r < 0:
                return STEP_UNSORTED
            heap_push(m, w)
            m.advance_index += 1
        m.n_popped = 0
        m.advance_index = 0
        if m.heap_size == 0:
            return STEP_DONE
        if output_full(m):
            return STEP_OUTPUT_FULL
        group_start = m.n_out
        top = heap_pop(m)
        if (top == m.streak_run and m.streak >= m.streak_min
                and (m.heap_size == 0 or compare_keys(m, &m.leaves[m.heap[0]], &m.leaves[top]) != 0)):
            r = try_stretch(m, top, m.heap[0] if m.heap_size > 0 else -1)
            if r != 0:
                m.popped[0] = top  # the next round advances past the stretch
                m.n_popped = 1
                return r
        w = top
        while True:
            if emit_member(m, w, group_start) < 0:
                return STEP_RETRACTION
            m.popped[m.n_popped] = w
            m.n_popped += 1
            if m.heap_size == 0 or compare_keys(m, &m.leaves[m.heap[0]], &m.leaves[top]) != 0:
                break
            w = heap_pop(m)
        finish_group(m, w, group_start)
        count_win(m, w, m.n_popped == 1)


# ---------------------------------------------------------------------------
# The fixed-width path.  When the key is one fixed-width column, its 64-bit
# image is the whole key: comparing two keys costs what comparing two
# sequences costs, so the six states (which exist to save key comparisons)
# buy nothing.  The tree orders rows by (class, image, sequence, run) instead;
# every key group then leaves the tree consecutively, oldest first, and the
# emit modes reduce it as it passes.  Nodes carry their keys inline, so a climb
# reads one node per level and selects without branches (mt_climb).
# ---------------------------------------------------------------------------

cdef inline void fixed_row(const Leaf* leaf, int64_t row, bint has_seq, mt_node* w,
                           const fixed_t* tag) noexcept nogil:
    """Node w's key (and sequence) from a row the run has."""
    w.key = fixed_prefix((<const fixed_t*>leaf.keys[0].values)[row])
    if has_seq:
        w.seq = (<uint64_t>leaf.seq_values[row]) ^ SIGN_BIT


cdef inline void fixed_load(Leaf* leaf, int32_t run, int32_t k, mt_node* w,
                            const fixed_t* tag) noexcept nogil:
    """Fill node w from the run's current row, or mark the run's end.  Key nulls
    never get here: a batch with one moves the merge to the general path before
    it starts (nulls sort first, so later batches of a sorted run have none)."""
    if leaf.exhausted:
        w.key = 0xFFFFFFFFFFFFFFFFULL
        w.seq = 0xFFFFFFFFFFFFFFFFULL
        w.tag = <uint64_t>(k + run)
        return
    w.seq = 0
    w.tag = <uint64_t>run
    fixed_row(leaf, leaf.row, leaf.seq_values != NULL, w, tag)


cdef inline mt_node fixed_runner_up(const mt_node* nodes, int32_t node) noexcept nogil:
    """The smallest node parked on the path from tree slot `node` to the root: the
    smallest head of the other runs (the runner-up lost one of the winner's matches).
    An exhausted run's node is above every row; with no node at all (one run), the
    result is too."""
    cdef mt_node best
    best.key = 0xFFFFFFFFFFFFFFFFULL
    best.seq = 0xFFFFFFFFFFFFFFFFULL
    best.tag = NODE_EMPTY_TAG
    while node > 0:
        if mt_node_less(&nodes[node], &best):
            best = nodes[node]
        node >>= 1
    return best


cdef inline int64_t fixed_rows_below(const Leaf* leaf, int64_t start, uint64_t bound,
                                     const fixed_t* tag) noexcept nogil:
    """How many rows of the batch from `start` on have key images below `bound`
    (galloping, then a binary search)."""
    cdef const fixed_t* values = <const fixed_t*>leaf.keys[0].values
    cdef int64_t n = leaf.nrows, lo = start, hi = leaf.nrows, step = 1, probe, mid
    while True:
        probe = start + step - 1
        if probe >= n:
            break
        if fixed_prefix(values[probe]) >= bound:
            hi = probe
            break
        lo = probe + 1
        step <<= 1
    while lo < hi:
        mid = lo + ((hi - lo) >> 1)
        if fixed_prefix(values[mid]) < bound:
            lo = mid + 1
        else:
            hi = mid
    return lo - start


cdef inline int64_t fixed_first_unsorted(const Leaf* leaf, int64_t start, int64_t length,
                                         const fixed_t* tag) noexcept nogil:
    """The first row in [start, start + length) whose key is not above the row before it, or -1."""
    cdef const fixed_t* values = <const fixed_t*>leaf.keys[0].values
    cdef int64_t r, block, end = start + length, block_end
    cdef bint bad
    for block in range(start, end, 4096):
        # a block without a branch per row (the common case: it is sorted), then the row
        block_end = block + 4096 if block + 4096 < end else end
        bad = False
        if fixed_t is float or fixed_t is double:  # NaNs: only the image orders them
            for r in range(block, block_end):
                bad |= fixed_prefix(values[r]) <= fixed_prefix(values[r - 1])
        else:
            for r in range(block, block_end):
                bad |= values[r] <= values[r - 1]
        if bad:
            for r in range(block, block_end):
                if fixed_prefix(values[r]) <= fixed_prefix(values[r - 1]):
                    return r
    return -1


cdef int fixed_step(MergeState* m, const fixed_t* tag) noexcept nogil:
    # the hot state lives in locals (registers) and is written back on the way out
    cdef mt_node* nodes = m.nodes
    cdef Leaf* leaves = m.leaves
    cdef int32_t* out_run = m.out_run
    cdef int64_t* out_pos = m.out_pos
    cdef int64_t* group_ends = m.group_ends
    cdef int64_t n_out = m.n_out
    cdef int64_t n_groups = m.n_groups
    cdef int64_t rows_in = m.rows_in
    cdef bint group_open = m.group_open
    cdef bint last_dead = m.last_dead
    cdef uint64_t last_key = m.last_key
    cdef int32_t k = m.k
    cdef int32_t mode = m.emit_mode
    cdef int64_t limit = m.out_capacity - m.k
    cdef int64_t group_capacity = m.group_capacity
    cdef bint count_groups = m.emit_mode == EMIT_ALL   # only EMIT_ALL records group ends
    cdef bint drop_retractions = not m.keep_deletes
    cdef bint check_order = m.check_order
    cdef mt_node w
    cdef Leaf* leaf
    cdef int32_t run
    cdef int64_t slot, row
    cdef int64_t levels = 0, members = 0, climbs = 0
    cdef bint has_seq = m.has_seq
    cdef uint64_t old_key
    cdef bint new_key, exhausted
    cdef int result
    cdef int32_t streak_run = m.streak_run
    cdef int64_t streak = m.streak, streak_min = m.streak_min, stretch_min = m.stretch_min, length, bad
    cdef mt_node bound
    if not m.initialized:
        for run in range(1, k):
            nodes[run].tag = NODE_EMPTY_TAG
        for run in range(k - 1, -1, -1):
            fixed_load(&leaves[run], run, k, &w, tag)
            mt_build_climb(nodes, w, (run + k) >> 1)
        m.initialized = 1
    elif m.resume_run >= 0:  # Python supplied a batch (or the end) for the last winner's run
        run = m.resume_run
        m.resume_run = -1
        fixed_load(&leaves[run], run, k, &w, tag)
        mt_climb(nodes, w, (run + k) >> 1)
        levels += mt_levels((run + k) >> 1)
    elif m.stretch_resume:  # the last stretch's run moves past it and climbs
        m.stretch_resume = 0
        run = <int32_t>nodes[0].tag
        leaf = &leaves[run]
        if leaf.row + 1 >= leaf.nrows:
            m.need_run = run
            return STEP_NEED_BATCH
        old_key = fixed_prefix((<const fixed_t*>leaf.keys[0].values)[leaf.row])
        leaf.row += 1
        leaf.pos += 1
        w.seq = 0  # without a sequence column every row's is 0: ties go to the run order
        w.tag = <uint64_t>run
        fixed_row(leaf, leaf.row, has_seq, &w, tag)
        if check_order and w.key <= old_key:
            m.error_run = run
            m.error_pos = leaf.pos
            return STEP_UNSORTED
        mt_climb(nodes, w, (run + k) >> 1)
        levels += mt_levels((run + k) >> 1)
    while True:
        w = nodes[0]
        run = <int32_t>w.tag
        exhausted = w.tag >= <uint64_t>k
        new_key = (not group_open) | (w.key != last_key)
        # a new key completes the previous group: stop here if the input is over
        # or the buffers are full (so a group is never split)
        # (the end of the input shares the largest key image, so it is tested apart)
        if exhausted | (new_key & ((n_out - last_dead >= limit)
                                   | (count_groups & (n_groups + group_open >= group_capacity)))):
            if mode == EMIT_ALL and group_open:
                group_ends[n_groups] = n_out
                n_groups += 1
            n_out -= last_dead
            last_dead = 0
            group_open = 0
            result = STEP_DONE if exhausted else STEP_OUTPUT_FULL
            break
        leaf = &leaves[run]
        row = leaf.row
        if new_key & (run == streak_run) & (streak >= streak_min):
            # a run that keeps winning alone may hold a stretch below every other run
            bound = fixed_runner_up(nodes, (run + k) >> 1)
            length = (leaf.nrows - row if bound.tag >= <uint64_t>k
                      else fixed_rows_below(leaf, row, bound.key, tag))
            if length < stretch_min:
                streak = streak_min - length  # those rows win the ordinary way first
            else:
                if check_order:
                    bad = fixed_first_unsorted(leaf, row + 1, length - 1, tag)
                    if bad >= 0:
                        m.error_run = run
                        m.error_pos = leaf.pos + (bad - row)
                        result = STEP_UNSORTED
                        break
                # the last group is complete: the stretch's keys are new and above it
                if mode == EMIT_ALL and group_open:
                    group_ends[n_groups] = n_out
                    n_groups += 1
                n_out -= last_dead
                last_dead = 0
                group_open = 0
                m.stretch_run = run
                m.stretch_pos = leaf.pos
                m.stretch_len = length
                m.stretch_resume = 1
                m.rows_stretched += length
                leaf.row = row + length - 1
                leaf.pos += length - 1
                rows_in += length
                streak = streak_min  # the run's next batch may go whole too
                result = STEP_STRETCH
                break
        rows_in += 1
        members += not new_key
        if mode == EMIT_LAST:
            # a newer member overwrites its group's slot; a new key takes the next
            # slot, or the previous group's if that one ended on a dropped retraction
            slot = n_out - 1 + new_key - (new_key & last_dead)
            out_run[slot] = run
            out_pos[slot] = leaf.pos
            n_out = slot + 1
            last_dead = drop_retractions & row_is_retraction(leaf)
        elif mode == EMIT_FIRST:
            if m.first_row_rejects_retractions and row_is_retraction(leaf):
                m.error_run = run
                m.error_pos = leaf.pos
                result = STEP_RETRACTION
                break
            out_run[n_out] = run   # later members land in the unused slot after the group
            out_pos[n_out] = leaf.pos
            n_out += new_key
        else:  # EMIT_ALL
            group_ends[n_groups] = n_out   # kept only when a group really ended here
            n_groups += new_key & group_open
            out_run[n_out] = run
            out_pos[n_out] = leaf.pos
            n_out += 1
        group_open = 1
        last_key = w.key
        if run == streak_run:
            streak += 1
        else:
            streak_run = run
            streak = 1
        if row + 1 >= leaf.nrows:
            m.need_run = run
            result = STEP_NEED_BATCH
            break
        leaf.row = row + 1
        leaf.pos += 1
        old_key = w.key
        fixed_row(leaf, row + 1, has_seq, &w, tag)   # the run has this row: no end-of-run test
        if check_order and w.key <= old_key:
            m.error_run = run
            m.error_pos = leaf.pos
            result = STEP_UNSORTED
            break
        mt_climb(nodes, w, (run + k) >> 1)
        climbs += 1
    m.n_out = n_out
    m.n_groups = n_groups
    m.rows_in = rows_in
    m.streak_run = streak_run
    m.streak = streak
    m.group_open = group_open
    m.last_dead = last_dead
    m.last_key = last_key
    # one comparison per level of every climb; a key group's later members are the
    # rows whose order a sequence (or run) comparison decided
    # every run's leaf sits at the same depth when k is a power of two; otherwise
    # the hot-path climbs are counted at the deeper level (an upper bound)
    m.key_comparisons += levels + climbs * mt_levels(k - 1)
    m.sequence_comparisons += members
    return result


cdef int64_t common_prefix(const uint8_t* a, int64_t la, const uint8_t* b, int64_t lb) noexcept nogil:
    """How many leading bytes a and b share."""
    cdef int64_t n = la if la < lb else lb, i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


cdef int64_t first_null(const ColumnView* c) noexcept nogil:
    cdef int64_t row
    for row in range(c.length):
        if not bit_is_set(c.validity, c.bit_offset + row):
            return row
    return -1


cdef bint fixed_width_class(int32_t key_class) noexcept nogil:
    return KEY_INT8 <= key_class <= KEY_FLOAT64


cdef int fixed_dispatch(MergeState* m, int32_t cls) noexcept nogil:
    if cls == KEY_INT64:
        return fixed_step(m, <const int64_t*>NULL)
    elif cls == KEY_INT32:
        return fixed_step(m, <const int32_t*>NULL)
    elif cls == KEY_INT16:
        return fixed_step(m, <const int16_t*>NULL)
    elif cls == KEY_INT8:
        return fixed_step(m, <const int8_t*>NULL)
    elif cls == KEY_UINT64:
        return fixed_step(m, <const uint64_t*>NULL)
    elif cls == KEY_UINT32:
        return fixed_step(m, <const uint32_t*>NULL)
    elif cls == KEY_UINT16:
        return fixed_step(m, <const uint16_t*>NULL)
    elif cls == KEY_UINT8:
        return fixed_step(m, <const uint8_t*>NULL)
    elif cls == KEY_FLOAT64:
        return fixed_step(m, <const double*>NULL)
    elif cls == KEY_FLOAT32:
        return fixed_step(m, <const float*>NULL)
    return STEP_BAD_STATE


# ---------------------------------------------------------------------------
# The Python-facing merge object.
# ---------------------------------------------------------------------------

# The Arrow formats whose buffers each key class reads (dates, times, timestamps and
# durations share the layout of the integer of their width).
_KEY_FORMATS = {
    KEY_INT8: (b"c",), KEY_INT16: (b"s",), KEY_INT32: (b"i", b"tdD", b"tts", b"ttm"),
    KEY_INT64: (b"l", b"tdm", b"ttu", b"ttn", b"tDs", b"tDm", b"tDu", b"tDn"),
    KEY_UINT8: (b"C",), KEY_UINT16: (b"S",), KEY_UINT32: (b"I",), KEY_UINT64: (b"L",),
    KEY_FLOAT32: (b"f",), KEY_FLOAT64: (b"g",), KEY_BOOL: (b"b",),
    KEY_BINARY: (b"u", b"z"), KEY_LARGE_BINARY: (b"U", b"Z"),
}


def key_format_accepted(int key_class, bytes fmt, int width):
    """Does an exported column of Arrow format `fmt` have the layout of `key_class`?"""
    if key_class == KEY_INT64 and fmt[:3] in (b"tss", b"tsm", b"tsu", b"tsn"):
        return True  # timestamps: "tsu:<zone>"
    if key_class == KEY_DECIMAL128:
        return fmt[:2] == b"d:" and (fmt.count(b",") == 1 or fmt.endswith(b",128"))
    if key_class == KEY_FIXED_BINARY:
        return fmt == b"w:" + str(width).encode()
    return fmt in _KEY_FORMATS.get(key_class, ())


cdef int fill_view(ColumnView* view, int32_t key_class, int32_t width, const ArrowSchema* schema,
                   const ArrowArray* parent, const ArrowArray* arr) except -1:
    """Check one exported key column against its key class and point `view` at it."""
    cdef ArrowColumn col
    import_column(schema, arr, parent.offset, parent.length, &col)
    if not key_format_accepted(key_class, <bytes>schema.format, width):
        raise ValueError(f"key column {(<bytes>schema.name).decode('utf-8', 'replace') if schema.name else ''!r} "
                         f"was exported as Arrow format {(<bytes>schema.format)!r}, which does not match "
                         f"the key class {key_class} the merge was built for")
    view.key_class = key_class
    view.width = width
    view.bit_offset = col.offset
    view.length = col.length
    view.validity = col.validity
    view.offsets = NULL
    if col.layout == LAYOUT_BINARY:
        view.offsets = (<const int32_t*>col.values) + col.offset
        view.values = col.data
    elif col.layout == LAYOUT_LARGE_BINARY:
        view.offsets = (<const int64_t*>col.values) + col.offset
        view.values = col.data
    elif col.layout == LAYOUT_BITS:
        view.values = col.values
    else:
        view.values = col.values + col.offset * col.width
    return 0


cdef const void* fixed_values(const ArrowSchema* schema, const ArrowArray* parent, const ArrowArray* arr,
                              bytes fmt, str role) except NULL:
    """The values of the int64 sequence or int8 kind column, checked, shifted to row 0."""
    cdef ArrowColumn col
    import_column(schema, arr, parent.offset, parent.length, &col)
    if <bytes>schema.format != fmt:
        raise ValueError(f"the {role} column was exported as Arrow format {(<bytes>schema.format)!r}, "
                         f"not {fmt!r}")
    return <const void*>(col.values + col.offset * col.width)


# Rows per output buffer at most (the Python layer's batch_size is bounded the same way).
MAX_CAPACITY = 1 << 31
# Stretches (see try_stretch): handed out whole from this many rows (below, a trip through
# Python costs more than the tree work it saves), looked for after this many lone wins.
STRETCH_MIN_ROWS = 256
STRETCH_MIN_STREAK = 2


cdef class MergeCore:
    """Incremental k-way merge.  Python supplies each run's batches on demand
    (`install_batch` / `finish_run`) and calls `step` until it reports DONE."""

    cdef MergeState m
    cdef ColumnView* views       # 2 slots per leaf (current / previous batch) x nkeys
    cdef int32_t* view_slot
    cdef int32_t* key_classes
    cdef int32_t* key_widths
    cdef int32_t has_seq, has_kind
    cdef bint failed
    cdef bint busy               # step() runs without the GIL: no other call may touch the state
    cdef bint skip_column        # the first key column is binary: keep its shared prefix out of comparisons
    cdef bint skip_set
    cdef uint8_t* skip_ref       # a copy of the shared prefix (m.skip bytes)
    cdef list held               # per leaf and view slot: the batch its views point into

    def __cinit__(self, int k, key_classes, key_widths, bint has_seq, bint has_kind,
                  str algorithm, int emit_mode, bint keep_deletes, bint check_order,
                  bint first_row_rejects_retractions, Py_ssize_t out_capacity,
                  Py_ssize_t group_capacity):
        cdef int i
        if k < 1:
            raise ValueError("a merge needs at least one run")
        if algorithm not in ("loser-tree", "heap"):
            raise ValueError(f"unknown algorithm {algorithm!r}")
        memset(&self.m, 0, sizeof(MergeState))
        self.m.k = k
        if len(key_classes) != len(key_widths):
            raise ValueError("key_classes and key_widths differ in length")
        self.m.nkeys = len(key_classes)
        if self.m.nkeys < 1:
            raise ValueError("a merge needs at least one key column")
        if emit_mode not in (EMIT_ALL, EMIT_LAST, EMIT_FIRST):
            raise ValueError(f"unknown emit mode {emit_mode}")
        if not (1 <= out_capacity <= MAX_CAPACITY and 1 <= group_capacity <= MAX_CAPACITY):
            raise ValueError(f"output capacities must be between 1 and {MAX_CAPACITY}")
        self.m.use_heap = algorithm == "heap"
        self.m.emit_mode = emit_mode
        self.m.keep_deletes = keep_deletes
        self.m.check_order = check_order
        self.m.first_row_rejects_retractions = first_row_rejects_retractions
        self.m.resume_run = -1
        self.m.need_run = -1
        self.m.error_run = -1
        self.m.stretch_run = -1
        self.m.streak_run = -1
        self.m.stretch_min = STRETCH_MIN_ROWS
        self.m.streak_min = STRETCH_MIN_STREAK
        self.m.out_capacity = out_capacity + k
        self.m.group_capacity = group_capacity
        self.has_seq = has_seq
        self.has_kind = has_kind
        self.m.has_seq = has_seq
        self.m.leaves = <Leaf*>calloc(k, sizeof(Leaf))
        self.m.tree = <int32_t*>calloc(k, sizeof(int32_t))
        self.m.heap = <int32_t*>calloc(k, sizeof(int32_t))
        self.m.popped = <int32_t*>calloc(k, sizeof(int32_t))
        self.m.nodes = <mt_node*>calloc(k, sizeof(mt_node))
        self.views = <ColumnView*>calloc(2 * k * self.m.nkeys, sizeof(ColumnView))
        self.view_slot = <int32_t*>calloc(k, sizeof(int32_t))
        self.key_classes = <int32_t*>calloc(self.m.nkeys, sizeof(int32_t))
        self.key_widths = <int32_t*>calloc(self.m.nkeys, sizeof(int32_t))
        self.m.out_run = <int32_t*>malloc(self.m.out_capacity * sizeof(int32_t))
        self.m.out_pos = <int64_t*>malloc(self.m.out_capacity * sizeof(int64_t))
        self.m.group_ends = <int64_t*>malloc((self.m.group_capacity + 1) * sizeof(int64_t))
        if (self.m.leaves == NULL or self.m.tree == NULL or self.m.heap == NULL
                or self.m.popped == NULL or self.m.nodes == NULL or self.views == NULL or self.view_slot == NULL
                or self.key_classes == NULL or self.key_widths == NULL
                or self.m.out_run == NULL or self.m.out_pos == NULL or self.m.group_ends == NULL):
            raise MemoryError()
        self.held = [None] * (2 * k)
        for i in range(self.m.nkeys):
            if key_classes[i] < KEY_INT8 or key_classes[i] > KEY_FIXED_BINARY:
                raise ValueError(f"unknown key class {key_classes[i]}")
            if key_classes[i] == KEY_FIXED_BINARY and key_widths[i] < 0:
                raise ValueError("a fixed-size binary key needs a width >= 0")
            self.key_classes[i] = key_classes[i]
            self.key_widths[i] = key_widths[i]
        self.m.use_fixed = (not self.m.use_heap and self.m.nkeys == 1
                            and fixed_width_class(self.key_classes[0]))
        self.skip_column = self.key_classes[0] in (KEY_BINARY, KEY_LARGE_BINARY, KEY_FIXED_BINARY)
        for i in range(k):
            self.m.leaves[i].first_same_key = -1
            self.m.leaves[i].keys = &self.views[(2 * i) * self.m.nkeys]

    def __dealloc__(self):
        free(self.m.leaves)
        free(self.m.tree)
        free(self.m.heap)
        free(self.m.popped)
        free(self.m.nodes)
        free(self.views)
        free(self.view_slot)
        free(self.key_classes)
        free(self.key_widths)
        free(self.m.out_run)
        free(self.m.out_pos)
        free(self.m.group_ends)
        free(self.skip_ref)

    cdef int narrow_skip(self, const ColumnView* view, int64_t rows) except -1:
        """Fold a new batch into the merge's shared key prefix.  The batch is sorted,
        so every first-column value in it shares the prefix of its first and last;
        the merge's prefix is the part of that which also matches the prefix so far.
        When it shrinks, every leaf's cached image is recomputed (the tree's order
        stays: both images order keys the same way)."""
        cdef const uint8_t* first
        cdef const uint8_t* last
        cdef int64_t lf, ll, n = 0
        cdef int32_t r
        if rows < 1:
            return 0
        if view.validity == NULL or first_null(view) < 0:  # a null has no bytes to share
            first = binary_value(view, 0, &lf)
            last = binary_value(view, rows - 1, &ll)
            n = common_prefix(first, lf, last, ll)
            if not self.skip_set:
                self.skip_ref = <uint8_t*>malloc(n if n > 0 else 1)
                if self.skip_ref == NULL:
                    raise MemoryError()
                memcpy(self.skip_ref, first, <size_t>n)
            else:
                n = common_prefix(first, n, self.skip_ref, self.m.skip)
        if not self.skip_set:
            self.skip_set = True
            self.m.skip = n
        elif n < self.m.skip:
            self.m.skip = n
            for r in range(self.m.k):
                if self.m.leaves[r].has_batch and not self.m.leaves[r].exhausted:
                    load_key(&self.m.leaves[r], n)
        return 0

    @property
    def shared_prefix(self):
        """Bytes of the first key column skipped in comparisons (every key has them)."""
        return self.m.skip

    cdef int enter(self) except -1:
        if self.busy:
            raise RuntimeError("this MergeCore is in use by another thread")
        return 0

    def install_batch(self, int run, object batch):
        """Make a non-empty batch the run's current batch.  `batch` is any object
        with `__arrow_c_array__` exporting a record batch of the key columns,
        then the sequence and kind columns when present; every column is checked
        against the key classes before use.  The core keeps the batch (and the
        previous one) alive.  Returns False if the batch breaks the run's order."""
        cdef const ArrowSchema* schema
        cdef const ArrowArray* arr
        cdef Leaf* leaf
        cdef int32_t slot, i, child
        cdef ColumnView* views
        cdef ColumnView* old_views
        cdef int64_t old_row
        cdef const int64_t* seq_values = NULL
        cdef const int8_t* kind_values = NULL
        cdef bint had_batch
        cdef int64_t null_row
        self.enter()
        if run < 0 or run >= self.m.k:
            raise IndexError(f"run {run} out of range (the merge has {self.m.k} runs)")
        leaf = &self.m.leaves[run]
        had_batch = leaf.has_batch
        if had_batch and (self.m.need_run != run or leaf.exhausted):
            raise ValueError(f"run {run} did not ask for a batch")
        capsules = export_capsules(batch)
        schema = schema_of(capsules)
        arr = array_of(capsules)
        check_struct(schema, arr, self.m.nkeys + self.has_seq + self.has_kind)
        if arr.length < 1:
            raise ValueError("empty batches must not be installed")
        slot = 1 - self.view_slot[run] if had_batch else 0
        views = &self.views[(2 * run + slot) * self.m.nkeys]
        for i in range(self.m.nkeys):
            fill_view(&views[i], self.key_classes[i], self.key_widths[i], schema.children[i], arr,
                      arr.children[i])
        child = self.m.nkeys
        if self.has_seq:
            seq_values = <const int64_t*>fixed_values(
                schema.children[child], arr, arr.children[child], b"l", "sequence")
            child += 1
        if self.has_kind:
            kind_values = <const int8_t*>fixed_values(
                schema.children[child], arr, arr.children[child], b"c", "kind")
        if self.m.use_fixed and views[0].validity != NULL:
            null_row = first_null(&views[0])
            if null_row >= 0:
                if not self.m.initialized:
                    self.m.use_fixed = 0   # null keys: the general path (comparators know nulls)
                elif self.m.check_order:
                    # nulls sort first: after the run's first rows, a null is out of order
                    self.m.error_run = run
                    self.m.error_pos = leaf.pos + 1 + null_row
                    self.failed = True
                    return False
        if self.skip_column:
            self.narrow_skip(&views[0], arr.length)
        # everything checked: from here on the leaf changes
        old_views = leaf.keys
        old_row = leaf.row
        if self.m.check_order and had_batch:
            if compare_rows(self.m.nkeys, 0, old_views, old_row, views, 0) >= 0:
                self.m.error_run = run
                self.m.error_pos = leaf.pos + 1
                self.failed = True
                return False
        self.held[2 * run + slot] = (batch, capsules)  # the views point into it
        self.view_slot[run] = slot
        leaf.keys = views
        leaf.seq_values = seq_values
        leaf.kind_values = kind_values
        leaf.row = 0
        leaf.nrows = arr.length
        if had_batch:
            leaf.pos += 1
        leaf.has_batch = 1
        leaf.state = WINNER_WITH_NEW_KEY
        leaf.first_same_key = -1
        load_key(leaf, self.m.skip)
        if had_batch:
            self.m.resume_run = run
            self.m.need_run = -1
        return True

    def finish_run(self, int run):
        """The run has no more rows."""
        cdef Leaf* leaf
        self.enter()
        if run < 0 or run >= self.m.k:
            raise IndexError(f"run {run} out of range (the merge has {self.m.k} runs)")
        leaf = &self.m.leaves[run]
        if leaf.has_batch and (self.m.need_run != run or leaf.exhausted):
            raise ValueError(f"run {run} did not ask for a batch")
        leaf.exhausted = 1
        leaf.state = WINNER_WITH_NEW_KEY
        leaf.first_same_key = -1
        if leaf.has_batch:
            leaf.row = leaf.nrows
            leaf.pos += 1
            self.m.resume_run = run
            self.m.need_run = -1
        leaf.has_batch = 1

    def step(self):
        """Run the merge (without the GIL) until the output fills, a run needs
        its next batch, every run is exhausted, or the input is bad."""
        cdef int result
        cdef int32_t i
        cdef MergeState* m = &self.m
        self.enter()
        if self.failed:
            raise ValueError("the merge already stopped on bad input")
        for i in range(m.k):
            if not m.leaves[i].has_batch:
                raise ValueError(f"run {i} has neither a batch nor its end yet")
        self.busy = True
        with nogil:
            if m.use_heap:
                result = heap_step(m)
            elif m.use_fixed:
                result = fixed_dispatch(m, self.key_classes[0])
            else:
                if not m.initialized:
                    if build_tree(m) < 0:
                        result = STEP_BAD_STATE
                    else:
                        m.initialized = 1
                        result = tree_step(m)
                else:
                    result = tree_step(m)
        self.busy = False
        if (result != STEP_OUTPUT_FULL and result != STEP_NEED_BATCH and result != STEP_DONE
                and result != STEP_STRETCH):
            self.failed = True
        return result

    @property
    def stretch(self):
        """After STRETCH: (run, first position, rows) — the rows come next, whole and in
        order, each a key group of one; the core has moved past them."""
        return self.m.stretch_run, self.m.stretch_pos, self.m.stretch_len

    @property
    def rows_stretched(self):
        return self.m.rows_stretched

    def take_output(self):
        """Hand over the output buffers and reset them.

        Returns (out_run, out_pos, group_ends, lo, hi): output row i is the row at
        position out_pos[i] (counted over the whole run) of run out_run[i]; run r
        contributes positions [lo[r], hi[r]) at most (lo = hi = 0 when none).
        `group_ends` is None unless every member is emitted."""
        cdef int64_t n = self.m.n_out
        cdef int32_t k = self.m.k
        cdef cnp.ndarray[cnp.int64_t, ndim=1] lo = np.full(k, -1, dtype=np.int64)
        cdef cnp.ndarray[cnp.int64_t, ndim=1] hi = np.zeros(k, dtype=np.int64)
        cdef int64_t[::1] lo_v = lo
        cdef int64_t[::1] hi_v = hi
        cdef int64_t i
        cdef int32_t r
        cdef int32_t* out_run = self.m.out_run
        cdef int64_t* out_pos = self.m.out_pos
        self.enter()
        runs = np.empty(n, dtype=np.int32)
        positions = np.empty(n, dtype=np.int64)
        if n:
            memcpy(cnp.PyArray_DATA(runs), out_run, n * sizeof(int32_t))
            memcpy(cnp.PyArray_DATA(positions), out_pos, n * sizeof(int64_t))
        group_ends = None
        with nogil:
            for i in range(n):  # a run's positions only grow, so first/last bound it
                r = out_run[i]
                if lo_v[r] < 0:
                    lo_v[r] = out_pos[i]
                hi_v[r] = out_pos[i] + 1
            for r in range(k):
                if lo_v[r] < 0:
                    lo_v[r] = 0
                    hi_v[r] = 0
        if self.m.emit_mode == EMIT_ALL:
            group_ends = np.empty(self.m.n_groups, dtype=np.int64)
            if self.m.n_groups:
                memcpy(cnp.PyArray_DATA(group_ends), self.m.group_ends,
                       self.m.n_groups * sizeof(int64_t))
        self.m.n_out = 0
        self.m.n_groups = 0
        return runs, positions, group_ends, lo, hi

    @property
    def fixed_path(self):
        """Does the merge run the fixed-width path (one fixed-width key, no key nulls)?"""
        return bool(self.m.use_fixed)

    @property
    def pending_rows(self):
        return self.m.n_out

    @property
    def need_run(self):
        return self.m.need_run

    @property
    def error_run(self):
        return self.m.error_run

    @property
    def error_pos(self):
        return self.m.error_pos

    @property
    def counters(self):
        return (self.m.rows_in, self.m.key_comparisons, self.m.sequence_comparisons)


# Names for the Python layer (cpdef enums of a shared .pxd are not exported).
OUTPUT_FULL = STEP_OUTPUT_FULL
NEED_BATCH = STEP_NEED_BATCH
DONE = STEP_DONE
UNSORTED = STEP_UNSORTED
RETRACTION = STEP_RETRACTION
BAD_STATE = STEP_BAD_STATE
STRETCH = STEP_STRETCH
MODE_ALL = EMIT_ALL
MODE_LAST = EMIT_LAST
MODE_FIRST = EMIT_FIRST
KEY_CLASSES = {
    "int8": KEY_INT8, "int16": KEY_INT16, "int32": KEY_INT32, "int64": KEY_INT64,
    "uint8": KEY_UINT8, "uint16": KEY_UINT16, "uint32": KEY_UINT32, "uint64": KEY_UINT64,
    "float32": KEY_FLOAT32, "float64": KEY_FLOAT64, "bool": KEY_BOOL,
    "decimal128": KEY_DECIMAL128, "binary": KEY_BINARY, "large_binary": KEY_LARGE_BINARY,
    "fixed_binary": KEY_FIXED_BINARY,
}


# The rest of the module (see the top of this file).
include "mergetree_gather.pxi"
include "mergetree_group_reductions.pxi"
include "mergetree_merge_join.pxi"
include "mergetree_run_cutting.pxi"
