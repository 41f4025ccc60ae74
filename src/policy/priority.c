/* Policy priority: smallest priority first, post order among equals.
 *
 * Applications use a handful of small priorities (the seed posts 1; most
 * programs use a few levels), so priorities 0 .. WEFT__BUCKETS-1 each get a
 * FIFO list, and a bitmap of non-empty lists finds the smallest in one
 * instruction: push and pop are O(1) and touch two or three cache lines.
 * Any other priority (negative, or large) goes to an intrusive pairing heap
 * keyed by (priority, seq). Heap keys are all below or all above the bucket
 * range, so comparing the heap root's priority with the lowest bucket is
 * enough to pick exactly.
 *
 * Both structures link through the task itself (next_, child_), so posts
 * never allocate and capacity can be unbounded. A binary heap over an array
 * was rejected: it must be sized in advance or reallocated on post. A pure
 * pairing heap was measured: popping from a million queued tasks walked a
 * million-long child list and cost about 1 us per task. The seed's heap got
 * sift-up wrong and did not keep FIFO among equal priorities; here the order
 * is total and exact. */
#include "core/internal.h"
#include "policy/buckets.h"
#include "policy/pairing.h"

static bool before(const weft_task *a, const weft_task *b)
{
	return a->priority_ < b->priority_ || (a->priority_ == b->priority_ && a->seq_ < b->seq_);
}

static bool in_buckets(int64_t priority)
{
	return priority >= 0 && priority < WEFT__BUCKETS;
}

static void priority_push(weft__readyq *q, weft_task *t)
{
	if (in_buckets(t->priority_))
		weft__bucket_push(q, (unsigned)t->priority_, t);
	else
		weft__pairing_insert(&q->root, t, before);
}

static weft_task *priority_pop(weft__readyq *q)
{
	if (q->nonempty && !(q->root && q->root->priority_ < 0))
		return weft__bucket_pop_lowest(q);
	return weft__pairing_pop(&q->root, before);
}

static void priority_unpop(weft__readyq *q, weft_task *t)
{
	if (in_buckets(t->priority_))
		weft__bucket_push_front(q, (unsigned)t->priority_, t);
	else
		weft__pairing_insert(&q->root, t, before);
}

static bool priority_more_urgent(const weft__readyq *q, const weft_task *a, const weft_task *b)
{
	(void)q;
	return a->priority_ < b->priority_;
}

const weft__policy_ops weft__policy_priority = {
        .name = "priority",
        .push = priority_push,
        .pop = priority_pop,
        .unpop = priority_unpop,
        .ordered = true,
        .more_urgent = priority_more_urgent,
};
