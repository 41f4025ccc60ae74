/* Pairing heap of timers (see timers.h). */
#include <limits.h>

#include "io/timers.h"

static bool before(const weft__timer *a, const weft__timer *b)
{
	return a->deadline < b->deadline || (a->deadline == b->deadline && a->seq < b->seq);
}

/* Links two root nodes; returns the new root. */
static weft__timer *meld(weft__timer *a, weft__timer *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (before(b, a)) {
		weft__timer *t = a;
		a = b;
		b = t;
	}
	b->next = a->child;
	if (a->child)
		a->child->prev = b;
	b->prev = a;
	a->child = b;
	a->next = a->prev = NULL;
	return a;
}

/* Two-pass pairing of a sibling list into one heap. */
static weft__timer *merge_pairs(weft__timer *first)
{
	weft__timer *stack = NULL;
	while (first) {
		weft__timer *a = first, *b = first->next;
		first = b ? b->next : NULL;
		a->next = a->prev = NULL;
		if (b)
			b->next = b->prev = NULL;
		weft__timer *m = meld(a, b);
		m->next = stack;
		stack = m;
	}
	weft__timer *heap = NULL;
	while (stack) {
		weft__timer *next = stack->next;
		stack->next = NULL;
		heap = meld(heap, stack);
		stack = next;
	}
	return heap;
}

void weft__timers_init(weft__timers *h)
{
	h->root = NULL;
	h->len = 0;
	h->next_seq = 0;
}

void weft__timers_add(weft__timers *h, weft__timer *t, int64_t deadline)
{
	t->deadline = deadline;
	t->seq = h->next_seq++;
	t->child = t->next = t->prev = NULL;
	t->armed = true;
	h->root = meld(h->root, t);
	h->len++;
}

void weft__timers_remove(weft__timers *h, weft__timer *t)
{
	if (!t->armed)
		return;
	t->armed = false;
	h->len--;
	if (t == h->root) {
		h->root = merge_pairs(t->child);
		return;
	}
	/* Unlink t from its sibling list, then meld its children back. */
	if (t->prev->child == t)
		t->prev->child = t->next;
	else
		t->prev->next = t->next;
	if (t->next)
		t->next->prev = t->prev;
	t->next = t->prev = NULL;
	weft__timer *sub = merge_pairs(t->child);
	t->child = NULL;
	h->root = meld(h->root, sub);
}

int64_t weft__timers_next(const weft__timers *h)
{
	return h->root ? h->root->deadline : INT64_MAX;
}

weft__timer *weft__timers_pop_expired(weft__timers *h, int64_t now)
{
	weft__timer *t = h->root;
	if (!t || t->deadline > now)
		return NULL;
	h->root = merge_pairs(t->child);
	t->child = NULL;
	t->armed = false;
	h->len--;
	return t;
}
