# Our own copy of the Arrow C Data Interface ABI (stable since Arrow 1.0).
# Declarations only; we never link against libarrow.
from libc.stdint cimport int64_t

cdef extern from *:
    """
    #ifndef ARROW_C_DATA_INTERFACE
    #define ARROW_C_DATA_INTERFACE
    #define ARROW_FLAG_DICTIONARY_ORDERED 1
    #define ARROW_FLAG_NULLABLE 2
    #define ARROW_FLAG_MAP_KEYS_SORTED 4
    struct ArrowSchema {
      const char* format;
      const char* name;
      const char* metadata;
      int64_t flags;
      int64_t n_children;
      struct ArrowSchema** children;
      struct ArrowSchema* dictionary;
      void (*release)(struct ArrowSchema*);
      void* private_data;
    };
    struct ArrowArray {
      int64_t length;
      int64_t null_count;
      int64_t offset;
      int64_t n_buffers;
      int64_t n_children;
      const void** buffers;
      struct ArrowArray** children;
      struct ArrowArray* dictionary;
      void (*release)(struct ArrowArray*);
      void* private_data;
    };
    #endif
    """
    struct ArrowSchema:
        const char* format
        const char* name
        int64_t n_children
        ArrowSchema** children
        ArrowSchema* dictionary
        void (*release)(ArrowSchema*) noexcept nogil

    struct ArrowArray:
        int64_t length
        int64_t null_count
        int64_t offset
        int64_t n_buffers
        int64_t n_children
        const void** buffers
        ArrowArray** children
        ArrowArray* dictionary
        void (*release)(ArrowArray*) noexcept nogil
