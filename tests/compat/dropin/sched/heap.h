/* The seed scheduler's heap.h (CMPE 180C project/sched), rewritten here
 * from its documented interface (seed 000 in the README's section "Where
 * weft came from: the seeds"): the priority queue's types and functions.
 * The programs do not call these; sched.h needs the type. libweft-sched.a
 * does not provide them. */
#ifndef __HEAP_H__
#define __HEAP_H__

#include <stdbool.h>

typedef struct heap_elem {
	int val;
	void *meta;
} heap_elem_t;

typedef struct heap {
	int capacity;
	int total;
	heap_elem_t *data;
} heap_t;

heap_t *heap_create(int capacity);
void heap_destroy(heap_t *hp);
bool heap_insert(heap_t *hp, int val, void *meta);
bool heap_remove(heap_t *hp, heap_elem_t *out);
bool heap_empty(heap_t *hp);
bool heap_full(heap_t *hp);
bool heap_double(heap_t *hp);
void heap_print(heap_t *hp);

#endif
