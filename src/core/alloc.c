/* Everything weft allocates goes through here: the user's weft_allocator
 * when one is set, malloc otherwise. A live count lets tests prove that
 * destroy released everything, and a test allocator can fail the n-th call. */
#include <stdlib.h>

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

void *weft__alloc(size_t size)
{
	void *p = allocator.alloc_fn ? allocator.alloc_fn(size, allocator.ctx) : calloc(1, size);
	if (!p)
		return NULL;
	if (allocator.alloc_fn) {
		/* A user allocator need not zero; weft relies on zeroed memory. */
		unsigned char *b = p;
		for (size_t i = 0; i < size; i++)
			b[i] = 0;
	}
	atomic_fetch_add_explicit(&live_allocations, 1, memory_order_relaxed);
	return p;
}

void weft__free(void *p, size_t size)
{
	if (!p)
		return;
	atomic_fetch_sub_explicit(&live_allocations, 1, memory_order_relaxed);
	if (allocator.free_fn)
		allocator.free_fn(p, size, allocator.ctx);
	else
		free(p);
}

long weft__live_allocations(void)
{
	return atomic_load(&live_allocations);
}
