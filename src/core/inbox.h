/* The MPSC inbox every model uses for work arriving from other threads: a
 * lock-free LIFO stack of tasks linked through next_, pushed by any thread
 * with one CAS and emptied by its one consumer with one exchange, which
 * reverses it back into arrival order. */
#ifndef WEFT_SRC_CORE_INBOX_H
#define WEFT_SRC_CORE_INBOX_H

#include <stdatomic.h>
#include <stdbool.h>

#include "core/internal.h"

typedef struct weft__inbox {
	_Atomic(weft_task *) head;
} weft__inbox;

/* Any thread. Sequentially consistent, so a consumer that announces it is
 * going to sleep and then checks the inbox (seq_cst too) cannot miss it
 * while the pusher misses the announcement. */
static inline void weft__inbox_push(weft__inbox *in, weft_task *t)
{
	weft_task *head = atomic_load_explicit(&in->head, memory_order_relaxed);
	do
		t->next_ = head;
	while (!atomic_compare_exchange_weak_explicit(&in->head, &head, t, memory_order_seq_cst,
	                                              memory_order_relaxed));
}

/* A cheap look (no read-modify-write on the shared line). */
static inline bool weft__inbox_empty(weft__inbox *in)
{
	return atomic_load_explicit(&in->head, memory_order_relaxed) == NULL;
}

/* The consumer: everything pushed so far, oldest first, linked through
 * next_ (NULL-terminated), or NULL. */
static inline weft_task *weft__inbox_take(weft__inbox *in)
{
	if (weft__inbox_empty(in))
		return NULL;
	weft_task *stack = atomic_exchange_explicit(&in->head, NULL, memory_order_acquire);
	weft_task *in_order = NULL;
	while (stack) {
		weft_task *next = stack->next_;
		stack->next_ = in_order;
		in_order = stack;
		stack = next;
	}
	return in_order;
}

#endif
