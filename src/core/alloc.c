/* Everything weft allocates goes through here: the user's weft_allocator
 * when one is set, malloc otherwise. A live count lets tests prove that
 * destroy released everything, and a test allocator can fail the n-th call. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/testing.h"

static weft_allocator allocator; /* alloc_fn NULL: malloc/free */
static _Atomic long live_allocations;
_Atomic int weft__live_runtimes;

int weft_set_allocator(const weft_allocator *a)
{
	if (a && (!a->alloc_fn || !a->free_fn))
		return WEFT_EINVAL;
	if (atomic_load(&weft__live_runtimes) > 0 || atomic_load(&live_allocations) > 0)
		return WEFT_EBUSY;
	if (a)
		allocator = *a;
	else
		allocator = (weft_allocator){0};
	return 0;
}

/* Blocks are aligned to a cache line, because weft's shared structures put
 * fields on lines of their own (WEFT__ALIGNED) and neither malloc nor a
 * user allocator promises more than 16 bytes. The pointer the allocator
 * returned is kept just below the aligned block. */
#define ALIGN    WEFT__CACHE_LINE
#define OVERHEAD (ALIGN + sizeof(void *))

static void *alloc_block(size_t size, bool zero)
{
	if (size > SIZE_MAX - OVERHEAD)
		return NULL;
	size_t raw_size = size + OVERHEAD;
	void *raw =
	        allocator.alloc_fn ? allocator.alloc_fn(raw_size, allocator.ctx) : malloc(raw_size);
	if (!raw)
		return NULL;
	uintptr_t p = ((uintptr_t)raw + sizeof(void *) + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1);
	void *block = (void *)p;
	((void **)block)[-1] = raw;
	if (zero)
		memset(block, 0, size);
	atomic_fetch_add_explicit(&live_allocations, 1, memory_order_relaxed);
	return block;
}

void *weft__alloc(size_t size)
{
	return alloc_block(size, true);
}

void *weft__alloc_uninit(size_t size)
{
	return alloc_block(size, false);
}

void weft__free(void *p, size_t size)
{
	if (!p)
		return;
	void *raw = ((void **)p)[-1];
	atomic_fetch_sub_explicit(&live_allocations, 1, memory_order_relaxed);
	if (allocator.free_fn)
		allocator.free_fn(raw, size + OVERHEAD, allocator.ctx);
	else
		free(raw);
}

long weft__live_allocations(void)
{
	return atomic_load(&live_allocations);
}
