/* Policy mlfq: a multi-level feedback queue after OSTEP chapter 8, as seed
 * 004 asks for it.
 *
 *  - levels 0 .. levels-1 (WEFT_MLFQ_LEVELS), 0 on top; the top non-empty
 *    level runs first, round robin within a level;
 *  - a new task starts at the level of its priority (clamped to the
 *    levels), so priority 0 is the top;
 *  - every quantum charged to a task (fibers.c charges the running fiber at
 *    each tick of its quantum clock, whether or not it yielded in between:
 *    OSTEP's rule 4, an allotment of one quantum per level, so yielding just
 *    before the tick does not game the scheduler) moves it down one level;
 *  - every WEFT_MLFQ_BOOST_US the model calls boost: all tasks go back to
 *    the top, so nothing starves (rule 5).
 *
 * Boost is O(levels): the queued lists are spliced onto level 0 and the
 * epoch advances; every task, queued then or not, notices that its epoch_
 * is old the next time it is popped, pushed or charged and starts over at
 * the top. weft__task_request_level (seed 004's worker_setschedprio)
 * takes effect at the task's next push. */
#include "core/internal.h"
#include "policy/buckets.h"

static unsigned clamp_level(const weft__readyq *q, int64_t level)
{
	if (level < 0)
		return 0;
	return level >= (int64_t)q->levels ? q->levels - 1 : (unsigned)level;
}

/* Brings t->level_ up to date with the boosts. */
static void refresh(weft__readyq *q, weft_task *t)
{
	if (t->epoch_ == 0) /* new: its priority says where it starts */
		t->level_ = (uint16_t)clamp_level(q, t->priority_);
	else if (t->epoch_ != q->epoch)
		t->level_ = 0; /* boosted since its level was set */
	t->epoch_ = q->epoch;
}

/* ... and with a requested level. */
static void settle(weft__readyq *q, weft_task *t)
{
	refresh(q, t);
	int32_t request = atomic_exchange_explicit((_Atomic int32_t *)&t->level_request_, 0,
	                                           memory_order_relaxed);
	if (request)
		t->level_ = (uint16_t)clamp_level(q, request - 1);
}

static void mlfq_push(weft__readyq *q, weft_task *t)
{
	settle(q, t);
	weft__bucket_push(q, t->level_, t);
}

static weft_task *mlfq_pop(weft__readyq *q)
{
	weft_task *t = weft__bucket_pop_lowest(q);
	refresh(q, t); /* a boost may have moved it to the top meanwhile */
	return t;
}

static void mlfq_unpop(weft__readyq *q, weft_task *t)
{
	weft__bucket_push_front(q, t->level_, t);
}

static bool mlfq_more_urgent(const weft__readyq *q, const weft_task *a, const weft_task *b)
{
	(void)q;
	return a->level_ < b->level_;
}

static void mlfq_charge(weft__readyq *q, weft_task *t)
{
	settle(q, t);
	if (t->quanta_ < UINT32_MAX)
		t->quanta_++;
	if (t->level_ + 1u < q->levels)
		t->level_++;
}

static void mlfq_boost(weft__readyq *q)
{
	for (unsigned b = 1; b < q->levels; b++) {
		if (!q->bucket_head[b])
			continue;
		if (q->bucket_tail[0])
			q->bucket_tail[0]->next_ = q->bucket_head[b];
		else
			q->bucket_head[0] = q->bucket_head[b];
		q->bucket_tail[0] = q->bucket_tail[b];
		q->bucket_head[b] = q->bucket_tail[b] = NULL;
	}
	if (q->bucket_head[0])
		q->nonempty = 1;
	q->epoch = (uint16_t)(q->epoch + 1 ? q->epoch + 1 : 1);
}

const weft__policy_ops weft__policy_mlfq = {
        .name = "mlfq",
        .push = mlfq_push,
        .pop = mlfq_pop,
        .unpop = mlfq_unpop,
        .ordered = true,
        .more_urgent = mlfq_more_urgent,
        .charge = mlfq_charge,
        .boost = mlfq_boost,
};
