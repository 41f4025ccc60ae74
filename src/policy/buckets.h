/* FIFO lists indexed by a small level (0 .. WEFT__BUCKETS-1) with a bitmap
 * of the non-empty ones, so the lowest non-empty level is one instruction
 * away. Shared by priority (a bucket per small priority) and mlfq (a bucket
 * per level). Links go through weft_task.next_. */
#ifndef WEFT_SRC_POLICY_BUCKETS_H
#define WEFT_SRC_POLICY_BUCKETS_H

#include "core/internal.h"

static inline void weft__bucket_push(weft__readyq *q, unsigned b, weft_task *t)
{
	t->next_ = NULL;
	if (q->bucket_tail[b])
		q->bucket_tail[b]->next_ = t;
	else
		q->bucket_head[b] = t;
	q->bucket_tail[b] = t;
	q->nonempty |= UINT64_C(1) << b;
}

static inline void weft__bucket_push_front(weft__readyq *q, unsigned b, weft_task *t)
{
	t->next_ = q->bucket_head[b];
	q->bucket_head[b] = t;
	if (!q->bucket_tail[b])
		q->bucket_tail[b] = t;
	q->nonempty |= UINT64_C(1) << b;
}

/* The head of the lowest non-empty bucket; q->nonempty must not be 0. */
static inline weft_task *weft__bucket_pop_lowest(weft__readyq *q)
{
	unsigned b = (unsigned)__builtin_ctzll(q->nonempty);
	weft_task *t = q->bucket_head[b];
	q->bucket_head[b] = t->next_;
	if (!t->next_) {
		q->bucket_tail[b] = NULL;
		q->nonempty &= ~(UINT64_C(1) << b);
	}
	return t;
}

#endif
