/* Policy random: each time, any ready task is equally likely to run next.
 * The draws come from a PRNG seeded by WEFT_SEED (cfg.seed), so with the
 * same seed and the same posts the order is the same: under the fibers
 * model, where one worker runs everything, a concurrency bug found once can
 * be replayed (the statistics print the seed).
 *
 * Each push draws a random key into seq_, and the queue is a pairing heap
 * on that key: the smallest key among the queued tasks is uniformly random,
 * whatever the push order. */
#include "core/internal.h"
#include "policy/pairing.h"

/* splitmix64: small state, good spread even for nearby seeds. */
static uint64_t draw(weft__readyq *q)
{
	uint64_t z = (q->rng += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static bool before(const weft_task *a, const weft_task *b)
{
	return a->seq_ < b->seq_;
}

static void random_push(weft__readyq *q, weft_task *t)
{
	t->seq_ = draw(q);
	weft__pairing_insert(&q->root, t, before);
}

static weft_task *random_pop(weft__readyq *q)
{
	return weft__pairing_pop(&q->root, before);
}

static void random_unpop(weft__readyq *q, weft_task *t)
{
	weft__pairing_insert(&q->root, t, before); /* keeps its key: back where it was */
}

const weft__policy_ops weft__policy_random = {
        .name = "random",
        .push = random_push,
        .pop = random_pop,
        .unpop = random_unpop,
        .ordered = false,
};
