/* An intrusive pairing heap of tasks (links child_ and next_ in the task),
 * shared by the policies that need a heap. before(a, b) is the order; the
 * functions are inline so that a constant before is inlined too. Insert is
 * O(1); delete-min is the two-pass pairing, O(log n) amortised. */
#ifndef WEFT_SRC_POLICY_PAIRING_H
#define WEFT_SRC_POLICY_PAIRING_H

#include "core/internal.h"

typedef bool (*weft__pairing_before)(const weft_task *a, const weft_task *b);

/* Links two heaps; the larger root becomes the first child of the smaller. */
static inline weft_task *weft__pairing_meld(weft_task *a, weft_task *b, weft__pairing_before before)
{
	if (before(b, a)) {
		weft_task *tmp = a;
		a = b;
		b = tmp;
	}
	b->next_ = a->child_;
	a->child_ = b;
	return a;
}

/* Two-pass pairing of a sibling list: meld pairs left to right, stacking the
 * results (reusing next_), then meld the stack back into one heap. */
static inline weft_task *weft__pairing_merge(weft_task *first, weft__pairing_before before)
{
	weft_task *stack = NULL;
	while (first) {
		weft_task *a = first, *b = first->next_;
		if (!b) {
			a->next_ = stack;
			stack = a;
			break;
		}
		first = b->next_;
		a->next_ = NULL;
		b->next_ = NULL;
		weft_task *m = weft__pairing_meld(a, b, before);
		m->next_ = stack;
		stack = m;
	}
	weft_task *heap = NULL;
	while (stack) {
		weft_task *next = stack->next_;
		stack->next_ = NULL;
		heap = heap ? weft__pairing_meld(stack, heap, before) : stack;
		stack = next;
	}
	return heap;
}

/* Adds t (its links are reset) to the heap at *root. */
static inline void weft__pairing_insert(weft_task **root, weft_task *t, weft__pairing_before before)
{
	t->next_ = t->child_ = NULL;
	*root = *root ? weft__pairing_meld(*root, t, before) : t;
}

/* Removes and returns the minimum of a non-empty heap. */
static inline weft_task *weft__pairing_pop(weft_task **root, weft__pairing_before before)
{
	weft_task *t = *root;
	*root = weft__pairing_merge(t->child_, before);
	t->child_ = NULL;
	return t;
}

#endif
