/* Chooses the ready-queue discipline named by the configuration. */
#include <string.h>

#include "core/internal.h"

static const weft__policy_ops *const policies[] = {
        [WEFT_POLICY_PRIORITY] = &weft__policy_priority,
        [WEFT_POLICY_FIFO] = &weft__policy_fifo,
        [WEFT_POLICY_RANDOM] = &weft__policy_random,
};
_Static_assert(sizeof(policies) / sizeof(policies[0]) == WEFT_POLICY_COUNT_,
               "one ops table per policy");

void weft__readyq_init(weft__readyq *q, weft_policy policy, uint64_t seed)
{
	memset(q, 0, sizeof(*q));
	q->ops = policies[policy];
	q->rng = seed;
}
