/* The few services every layer may use without knowing the runtime:
 * cache-line alignment of shared fields, warn_unused_result, and allocation
 * through the configured weft_allocator (alloc.c). core/internal.h includes
 * it; lower layers (obs/) include it alone. */
#ifndef WEFT_SRC_CORE_ALLOC_H
#define WEFT_SRC_CORE_ALLOC_H

#include <stdalign.h>
#include <stddef.h>

#define WEFT__CACHE_LINE 64
/* Starts a field on its own cache line, so that fields written by different
 * threads do not share one. */
#define WEFT__ALIGNED    alignas(WEFT__CACHE_LINE)

#define WEFT__WARN_UNUSED __attribute__((warn_unused_result))

/* Allocation through the configured weft_allocator, counted so tests can
 * prove that destroy releases everything. Blocks are zeroed and aligned to
 * a cache line. */
WEFT__WARN_UNUSED void *weft__alloc(size_t size);
/* The same without zeroing: for buffers the caller overwrites at once (a
 * sort's second copy of the array, hundreds of MB that memset would touch
 * for nothing). */
WEFT__WARN_UNUSED void *weft__alloc_uninit(size_t size);
void weft__free(void *p, size_t size);

#endif
