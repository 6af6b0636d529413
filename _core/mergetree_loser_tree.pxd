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

# How a finished key group is written to the output index buffers.
cdef enum EmitMode:
    EMIT_ALL = 0    # every member, plus group boundaries
    EMIT_LAST = 1   # the newest member only (deduplicate)
    EMIT_FIRST = 2  # the oldest member only (first-row)

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
    int32_t k
    int32_t nkeys
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
    # counters
    int64_t rows_in
    int64_t key_comparisons
    int64_t sequence_comparisons
