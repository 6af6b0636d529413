# Declarations of the merge tree.  Declarations only; the code is in mergetree_core.pyx.
from libc.stdint cimport int8_t, int32_t, int64_t, uint64_t
from mergetree_key_columns cimport ColumnView

# The six node states of the loser tree (see docs/ALGORITHM.md).
cdef enum NodeState:
    WINNER_WITH_NEW_KEY = 0
    WINNER_WITH_SAME_KEY = 1
    WINNER_POPPED = 2
    LOSER_WITH_NEW_KEY = 3
    LOSER_WITH_SAME_KEY = 4
    LOSER_POPPED = 5

# Why the merge loop returned to Python.
cdef enum StepResult:
    STEP_OUTPUT_FULL = 0   # the output buffers are full: assemble a batch
    STEP_NEED_BATCH = 1    # run `need_run` has consumed its batch: supply the next
    STEP_DONE = 2          # every run is exhausted
    STEP_UNSORTED = 3      # run `error_run` is out of order at `error_pos`
    STEP_RETRACTION = 4    # first-row engine met a retraction row
    STEP_BAD_STATE = 5     # an impossible node state (a bug): never silently continue
    # run `stretch_run`'s rows [stretch_pos, +stretch_len) come next, whole: every one is
    # below the head of every other run (the Python layer hands out the slice)
    STEP_STRETCH = 6

# How a finished key group is written to the output index buffers.
cdef enum EmitMode:
    EMIT_ALL = 0    # every member, plus group boundaries
    EMIT_LAST = 1   # the newest member only (deduplicate)
    EMIT_FIRST = 2  # the oldest member only (first-row)

# The fixed-width path (see docs/ALGORITHM.md §10): when the whole key is one
# fixed-width column without nulls, its 64-bit image is the key, and the tree
# keeps each node's (image, sequence, run) inline.  A C struct, so the climb
# can swap whole nodes without branches.
cdef extern from *:
    """
    #include <stdint.h>
    #if defined(_MSC_VER) && !defined(__clang__)
    #include <intrin.h>
    #endif
    typedef struct {
        uint64_t key;   /* order-preserving image of the key value */
        uint64_t seq;   /* sequence with the sign bit flipped: unsigned order = signed order */
        uint64_t tag;   /* the run; k + run once the run is exhausted */
    } mt_node;
    #define MT_EMPTY_TAG (~0ULL)  /* a slot not filled yet, while the tree is built */
    /* (key, sequence, tag) order.  An exhausted run is (max, max, k + run): above every
       row, even one whose key and sequence are both the largest values. */
    static inline int mt_node_less(const mt_node* a, const mt_node* b) {
    #if defined(__SIZEOF_INT128__)
        unsigned __int128 x = ((unsigned __int128)a->key << 64) | a->seq;
        unsigned __int128 y = ((unsigned __int128)b->key << 64) | b->seq;
        return (x < y) | ((x == y) & (a->tag < b->tag));
    #else
        return (a->key < b->key) | ((a->key == b->key) &
               ((a->seq < b->seq) | ((a->seq == b->seq) & (a->tag < b->tag))));
    #endif
    }
    /* Carry `w` from tree slot `node` to the root: at every level the smaller of the
       climber and the parked node climbs on and the larger parks.  The swap is done
       with a mask, not a branch: which one wins is as random as the keys. */
    static inline void mt_climb(mt_node* nodes, mt_node w, int32_t node) {
        while (node > 0) {
            mt_node* p = &nodes[node];
            uint64_t m = (uint64_t)0 - (uint64_t)mt_node_less(p, &w);
            uint64_t dk = (p->key ^ w.key) & m, ds = (p->seq ^ w.seq) & m, dt = (p->tag ^ w.tag) & m;
            p->key ^= dk; p->seq ^= ds; p->tag ^= dt;
            w.key ^= dk; w.seq ^= ds; w.tag ^= dt;
            node >>= 1;
        }
        nodes[0] = w;
    }
    /* How many levels a climb from tree slot `node` passes. */
    static inline int64_t mt_levels(int32_t node) {
    #if defined(__GNUC__) || defined(__clang__)
        return node > 0 ? 32 - __builtin_clz((unsigned)node) : 0;
    #elif defined(_MSC_VER)
        unsigned long top;  /* index of the highest set bit */
        if (node <= 0) return 0;
        _BitScanReverse(&top, (unsigned long)node);
        return (int64_t)top + 1;
    #else
        int64_t n = 0;
        while (node > 0) { node >>= 1; n++; }
        return n;
    #endif
    }
    /* The same while the tree is built: the first climber to reach an empty slot parks there. */
    static inline void mt_build_climb(mt_node* nodes, mt_node w, int32_t node) {
        while (node > 0) {
            mt_node p = nodes[node];
            if (p.tag == MT_EMPTY_TAG) { nodes[node] = w; return; }
            if (mt_node_less(&p, &w)) { nodes[node] = w; w = p; }
            node >>= 1;
        }
        nodes[0] = w;
    }
    """
    ctypedef struct mt_node:
        uint64_t key
        uint64_t seq
        uint64_t tag
    const uint64_t NODE_EMPTY_TAG "MT_EMPTY_TAG"
    bint mt_node_less(const mt_node* a, const mt_node* b) noexcept nogil
    void mt_climb(mt_node* nodes, mt_node w, int32_t node) noexcept nogil
    void mt_build_climb(mt_node* nodes, mt_node w, int32_t node) noexcept nogil
    int64_t mt_levels(int32_t node) noexcept nogil

# One leaf per run: the run's current row and its cached sort key.
cdef struct Leaf:
    uint64_t prefix        # order-preserving 8-byte image of the first key column
    int64_t seq            # sequence number (0 when the merge has no sequence column)
    int64_t row            # row in the current batch
    int64_t nrows          # rows in the current batch
    int64_t pos            # position of `row` counted over the whole run
    int32_t state          # a NodeState
    int32_t first_same_key  # lowest tree node where this leaf beat an equal key, or -1
    int32_t exact          # the prefix is the whole key (so equal prefixes mean equal keys)
    int32_t exhausted      # the run has no more rows
    int32_t has_batch      # a batch is installed
    int32_t pad
    ColumnView* keys       # key columns of the current batch
    const int64_t* seq_values
    const int8_t* kind_values

# The whole merge state; owned by the MergeCore extension type.
cdef struct MergeState:
    Leaf* leaves
    int32_t* tree          # tree[0] = winner leaf; tree[1..k-1] = loser leaf per node; -1 = empty
    int32_t* heap          # binary heap of leaf ids (algorithm "heap")
    int32_t* popped        # leaves popped in the current group (heap)
    mt_node* nodes         # fixed-width path: nodes[0] = winner, nodes[1..k-1] = losers
    int32_t has_seq        # the runs carry a sequence column
    int32_t use_fixed      # the fixed-width path runs (one fixed-width key column, loser tree)
    int32_t group_open     # fixed-width path: the last emitted key's group may continue
    int32_t last_dead      # fixed-width path, EMIT_LAST: the last emitted row is a retraction to drop
    uint64_t last_key      # fixed-width path: image of the last emitted key
    int32_t k
    int32_t nkeys
    int64_t skip           # leading bytes of the first key column shared by every key (binary keys)
    int32_t use_heap
    int32_t heap_size
    int32_t n_popped
    int32_t advance_index  # next popped leaf to advance (heap)
    int32_t emit_mode
    int32_t keep_deletes
    int32_t check_order
    int32_t first_row_rejects_retractions
    int32_t initialized
    int32_t resume_run     # run whose batch Python just supplied, or -1
    int32_t need_run
    int32_t error_run
    int64_t error_pos
    # output index buffers
    int32_t* out_run
    int64_t* out_pos
    int64_t n_out
    int64_t out_capacity
    int64_t* group_ends
    int64_t n_groups
    int64_t group_capacity
    # stretches: a run's rows below every other run's head leave without tree work
    int32_t stretch_run     # STEP_STRETCH: the run, else -1
    int64_t stretch_pos     # its first position (counted over the run)
    int64_t stretch_len
    int64_t stretch_min     # rows a stretch needs to be handed out whole
    int32_t streak_min      # single-member wins in a row by one run before a stretch is looked for
    int32_t streak_run      # the run that won the last rounds alone
    int64_t streak          # how many rounds in a row; below 0: rows known to be too few to try
    int32_t stretch_resume  # the last stretch's run still has to advance past it (no new search)
    # counters
    int64_t rows_in
    int64_t rows_stretched
    int64_t key_comparisons
    int64_t sequence_comparisons
