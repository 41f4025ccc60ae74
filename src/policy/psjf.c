/* Policy psjf: preemptive shortest job first as seed 004 defines it (it
 * calls it PSJF or STCF): nobody knows a job's length, so the job that has
 * used the fewest quanta so far runs first; a job that uses up a quantum is
 * charged one and goes behind every job with fewer, and behind those with as
 * many (the tail among equals: seq_ is stamped at each push). Quanta are
 * charged by the fiber models' quantum clock (fibers.c); without it every
 * job has 0 and psjf is fifo.
 *
 * A pairing heap on (quanta_, seq_) through the task's own links. */
#include "core/internal.h"
#include "policy/pairing.h"

static bool before(const weft_task *a, const weft_task *b)
{
	return a->quanta_ < b->quanta_ || (a->quanta_ == b->quanta_ && a->seq_ < b->seq_);
}

static void psjf_push(weft__readyq *q, weft_task *t)
{
	weft__pairing_insert(&q->root, t, before);
}

static weft_task *psjf_pop(weft__readyq *q)
{
	return weft__pairing_pop(&q->root, before);
}

static bool psjf_more_urgent(const weft__readyq *q, const weft_task *a, const weft_task *b)
{
	(void)q;
	return a->quanta_ < b->quanta_;
}

static void psjf_charge(weft__readyq *q, weft_task *t)
{
	(void)q;
	if (t->quanta_ < UINT32_MAX)
		t->quanta_++;
}

const weft__policy_ops weft__policy_psjf = {
        .name = "psjf",
        .push = psjf_push,
        .pop = psjf_pop,
        .unpop = psjf_push, /* keeps its seq_: back where it was */
        .ordered = true,
        .more_urgent = psjf_more_urgent,
        .charge = psjf_charge,
};
